"""NLP networks, registered in ``framework.registry.MODELS``."""
from .lac import BiGRUCRF

__all__ = ["BiGRUCRF"]
