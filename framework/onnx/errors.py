"""The errors of ONNX export (importable without the onnx package)."""
import importlib

from ..errors import UserError

__all__ = ["ExportError", "UnsupportedOpError", "MissingExportDependency", "require"]


class ExportError(UserError, ValueError):
    """A program that cannot be exported, or an exported model that does not match it; the message says why."""


class UnsupportedOpError(ExportError):
    """An op with no ONNX mapping (or with attributes the mapping cannot express); the message names the op
    class and the layer it was recorded in."""


class MissingExportDependency(UserError, ImportError):
    """onnx or onnxruntime is not installed; the message names the ``export`` extra."""


def require(*modules):
    """Import and return ``modules`` (names), or raise MissingExportDependency naming the extra to install."""
    found = []
    for name in modules:
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            raise MissingExportDependency(f"ONNX export and the onnxruntime runtime need the packages onnx and "
                                          f"onnxruntime ({name} is not installed): pip install \"oar[export]\"") \
                from None
    return found[0] if len(found) == 1 else tuple(found)
