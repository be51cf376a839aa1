"""Vision tasks (registered in ``framework.registry.TASKS``)."""
from .image_classification import ImageClassification

__all__ = ["ImageClassification"]
