"""Vision tasks (registered in ``framework.registry.TASKS``)."""
from .image_classification import ImageClassification
from .detection import ObjectDetection

__all__ = ["ImageClassification", "ObjectDetection"]
