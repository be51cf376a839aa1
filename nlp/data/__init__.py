"""NLP data: pinned sources, corpora, vocabularies, tokenisers and collate functions."""
