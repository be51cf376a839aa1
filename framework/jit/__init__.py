"""Static graphs: trace a layer once into a :class:`Program`, save it without its Python code, replay it fast.

- :func:`trace` records the ops a layer calls on example inputs (dynamic axes
  marked, graph passes run) -> :class:`Program`, called on arrays;
- :func:`save` / :func:`load` write and read a program as a directory of JSON
  (the graph) and ``.npz`` (the arrays), never pickle; loading needs no model
  class and no config;
- :func:`to_static` (also a decorator) wraps a layer so that its eval-mode
  calls run through programs traced on first use, falling back to eager where
  a layer cannot be traced.
"""
from .program import GuardError, InputSpec, Node, Program, SlotSpec, UnknownSlotError
from .trace import DEFAULT_PASSES, EXACT_PASSES, INFERENCE_PASSES, TraceError, trace
from .files import ProgramFileError, load, save
from .static import StaticLayer, to_static

__all__ = ["trace", "Program", "Node", "InputSpec", "SlotSpec", "UnknownSlotError", "GuardError", "TraceError", "DEFAULT_PASSES", "EXACT_PASSES", "INFERENCE_PASSES",
           "save", "load", "ProgramFileError", "to_static", "StaticLayer"]
