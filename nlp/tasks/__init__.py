"""NLP tasks, registered in ``framework.registry.TASKS`` (LAC's is in :mod:`nlp.lac.task`)."""
