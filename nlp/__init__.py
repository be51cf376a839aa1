"""Chinese NLP on the framework: corpora, vocabularies, LAC, sentiment and matching models and tasks."""
