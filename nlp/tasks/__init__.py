"""NLP tasks, registered in ``framework.registry.TASKS``."""
from .lexical_analysis import LexicalAnalysis

__all__ = ["LexicalAnalysis"]
