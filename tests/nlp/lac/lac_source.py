"""Test helper: import modules of the official LAC package's own source (pure-Python files only) as oracles.

``lac_module("segment")`` fetches ``LAC/segment.py`` (and the modules it
imports) from the pinned ``LAC==2.1.2`` distribution into the cache and imports
it under the package name ``lac_reference``, without running ``LAC/__init__.py``
(which needs paddle).
"""
import importlib
import os
import sys
import types

from framework.fetch import fetch
from nlp.data.sources import LAC

_FILES = ["LAC/segment.py", "LAC/prefix_tree.py", "LAC/custom.py", "LAC/_compat.py"]
_PACKAGE = "lac_reference"


def lac_module(name):
    """The module ``LAC/<name>.py`` of the official package (``segment``, ``custom``, ``prefix_tree``)."""
    folder = os.path.join(fetch(LAC, _FILES), "LAC")
    if _PACKAGE not in sys.modules:
        package = types.ModuleType(_PACKAGE)
        package.__path__ = [folder]
        sys.modules[_PACKAGE] = package
    return importlib.import_module(f"{_PACKAGE}.{name}")
