"""NLP networks, registered in ``framework.registry.MODELS`` (LAC's is in :mod:`nlp.lac.model`)."""
