"""The shared skeleton: Task contract, Trainer, checkpoints, metrics."""
from .task import Task, to_tensors, batch_size_of
from .trainer import Trainer, TrainingError, evaluate
from .checkpoint import CheckpointError, save_checkpoint, load_checkpoint, restore_model, export_weights
from . import metrics

__all__ = ["Task", "Trainer", "TrainingError", "evaluate", "CheckpointError", "save_checkpoint",
           "load_checkpoint", "restore_model", "export_weights", "to_tensors", "batch_size_of", "metrics"]
