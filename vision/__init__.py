"""Vision on the framework: ResNet and MobileNet backbones (torchvision-compatible weights),
image transforms and folders, image classification, and a finetune API.

Importing ``vision`` registers its models, datasets, transforms, metrics and tasks.
"""
from . import models, data, metrics, detection_metrics, tasks
from .finetune import finetune, finetune_config

__all__ = ["models", "data", "metrics", "detection_metrics", "tasks", "finetune", "finetune_config"]
