"""``oar compress`` and the zoo's compressed models (the library side of :mod:`framework.slim`).

- :mod:`~zoo.slim.settings`: a compression config; :mod:`~zoo.slim.source`: the model to compress;
- :mod:`~zoo.slim.strategies`: prune, quantise, distil; :mod:`~zoo.slim.run`: one run and its report;
- :mod:`~zoo.slim.onnx_int8`: ONNX Runtime's int8 model; :mod:`~zoo.slim.measure`: size, speed, metrics;
- the command is :mod:`zoo.commands.compress`; compressed cards load through :mod:`zoo.build`.
"""
