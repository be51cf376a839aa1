"""The errors of ONNX export and of reading ONNX models (importable without the onnx package)."""
import contextlib
import importlib

from ..errors import FileFormatError, UserError

__all__ = ["ExportError", "UnsupportedOpError", "MissingExportDependency", "OnnxModelError", "require",
           "reading_model"]


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


class OnnxModelError(FileFormatError):
    """An ONNX model (or its sidecar) that ONNX Runtime or onnx cannot read or run: truncated, garbage, another
    layout; the message names the file."""


def _library_errors():
    """What ONNX Runtime, onnx and protobuf raise about a model (those installed): ONNX Runtime's own
    exception classes, protobuf's decode errors, onnx's checker and shape-inference errors."""
    found = [RuntimeError]
    with contextlib.suppress(ImportError):
        from onnxruntime.capi import onnxruntime_pybind11_state as state
        found += [v for v in vars(state).values() if isinstance(v, type) and issubclass(v, Exception)]
    with contextlib.suppress(ImportError):
        from google.protobuf.message import Error as ProtobufError
        found.append(ProtobufError)
    with contextlib.suppress(ImportError, AttributeError):
        import onnx
        found += [onnx.checker.ValidationError, onnx.shape_inference.InferenceError]
    return tuple(found)


def _reason(err):
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    text = text.rsplit(" : ", 1)[-1]                      # ONNX Runtime's "[ONNXRuntimeError] : 7 : NAME : text"
    if "protobuf" in text.lower() or "parse" in text.lower() or "wire format" in text.lower():
        text += " (truncated, or not an ONNX model)"
    return text[:300]


@contextlib.contextmanager
def reading_model(path, action="load"):
    """Inside the block, an error ONNX Runtime, onnx or protobuf raise about the model at ``path`` becomes one
    :class:`OnnxModelError` naming the file (``action``: what was being done, e.g. ``"load"``, ``"run"``)."""
    try:
        yield
    except OnnxModelError:
        raise
    except _library_errors() as err:
        raise OnnxModelError(f"cannot {action} the ONNX model {path}: {_reason(err)}") from None
