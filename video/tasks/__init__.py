"""Video tasks (registered in ``framework.registry.TASKS``): frame-model recognition, feature-model
(multi-label) recognition, and the per-frame attributes that train the feature models' image backbone."""
from .recognition import VideoRecognition
from .feature_recognition import FeatureRecognition
from .frame_attributes import FrameAttributes

__all__ = ["VideoRecognition", "FeatureRecognition", "FrameAttributes"]
