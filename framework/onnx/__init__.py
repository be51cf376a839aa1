"""Export of a traced :class:`~framework.jit.Program` to ONNX, and a runtime for the exported file.

- :func:`export` (``framework.onnx.export(program_or_layer, path, example_inputs)``)
  writes an opset-17 model whose dynamic axes follow the program's size
  symbols, after checking it with the ONNX checker and against the program in
  ONNX Runtime (:mod:`framework.onnx.exporter`);
- :class:`OnnxProgram` runs an exported file, called like the program
  (:mod:`framework.onnx.runtime`);
- :data:`CONVERTERS` maps each exported op class to its converter
  (:mod:`framework.onnx.graph`).

This package imports without onnx and onnxruntime; using ``export``,
``OnnxProgram`` or ``CONVERTERS`` without them raises
:class:`MissingExportDependency`, which names the ``export`` extra.
"""
from .errors import ExportError, MissingExportDependency, OnnxModelError, UnsupportedOpError, require

__all__ = ["export", "OnnxProgram", "OnnxModelError", "CONVERTERS", "ExportReport", "ExportError", "UnsupportedOpError",
           "MissingExportDependency"]


def __getattr__(name):
    """``export``, ``ExportReport``, ``CONVERTERS`` (need onnx) and ``OnnxProgram`` (needs onnxruntime), imported
    on first use."""
    if name in ("export", "ExportReport", "CONVERTERS"):
        require("onnx")
        from . import exporter
        return getattr(exporter, name)
    if name == "OnnxProgram":
        require("onnxruntime")
        from .runtime import OnnxProgram
        return OnnxProgram
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
