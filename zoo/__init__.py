"""The model zoo: catalog, task API, the `oar` command, benchmarks.

``zoo.load(name)`` returns a ready Task; ``zoo.Task(task_name, model=None)``
picks the task's default model.
"""
from .api import load, Task

__all__ = ["load", "Task"]
