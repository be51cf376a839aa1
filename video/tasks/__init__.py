"""Video tasks (registered in ``framework.registry.TASKS``): frame-model recognition and feature-model
(multi-label) recognition."""
from .recognition import VideoRecognition
from .feature_recognition import FeatureRecognition

__all__ = ["VideoRecognition", "FeatureRecognition"]
