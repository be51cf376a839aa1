"""Specs for framework/ops/math.py."""
import numpy

import framework as fw
from ..opspec import OpSpec, rand, away_from

BINARY = [
    ("add", fw.add, numpy.add),
    ("subtract", fw.subtract, numpy.subtract),
    ("multiply", fw.multiply, numpy.multiply),
    ("maximum", fw.maximum, numpy.maximum),
    ("minimum", fw.minimum, numpy.minimum),
]

SPECS = []
for name, op, ref in BINARY:
    SPECS.append(OpSpec(name, op, lambda rng: [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,)) + 0.3], ref))
    SPECS.append(OpSpec(name, op, lambda rng: [rng.uniform(-1, 1, (2, 1, 3)), rng.uniform(-1, 1, (4, 1)) - 0.3], ref))

SPECS += [
    OpSpec("divide", fw.divide, lambda rng: [rng.uniform(-1, 1, (3, 4)), rng.uniform(0.5, 2, (3, 1))], numpy.divide),
    OpSpec("pow", lambda x: fw.pow(x, 3), rand(3, 4), lambda x: x ** 3),
    OpSpec("pow", lambda x: fw.pow(x, 0.5), rand(3, 4, low=0.5, high=2), numpy.sqrt),
    OpSpec("pow", fw.pow, lambda rng: [rng.uniform(0.5, 2, (3, 4)), rng.uniform(-1, 2, (4,))], numpy.power),
    OpSpec("neg", fw.neg, rand(5), numpy.negative),
    OpSpec("exp", fw.exp, rand(3, 4), numpy.exp),
    OpSpec("log", fw.log, rand(3, 4, low=0.2, high=3), numpy.log),
    OpSpec("sqrt", fw.sqrt, rand(3, 4, low=0.2, high=3), numpy.sqrt),
    OpSpec("abs", fw.abs, lambda rng: [away_from(rng.uniform(-1, 1, (3, 4)), [0])], numpy.abs),
    OpSpec("clip", lambda x: fw.clip(x, -0.5, 0.4),
           lambda rng: [away_from(rng.uniform(-1, 1, (4, 5)), [-0.5, 0.4])], lambda x: numpy.clip(x, -0.5, 0.4)),
    OpSpec("clip", lambda x: fw.clip(x, min=0.1), lambda rng: [away_from(rng.uniform(-1, 1, (6,)), [0.1])],
           lambda x: numpy.maximum(x, 0.1)),
    OpSpec("where", lambda c, x, y: fw.where(c, x, y),
           lambda rng: [rng.uniform(size=(3, 4)) > 0.5, rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,))],
           lambda c, x, y: numpy.where(c, x, y)),
    OpSpec("cast", lambda x: fw.cast(x, "float64"), rand(3), lambda x: x, out_dtype="float64"),
    OpSpec("clone", fw.clone, rand(2, 3), lambda x: x.copy()),
    OpSpec("to_device_op", lambda x: fw.to_device_op(x, "cpu"), rand(2, 3), lambda x: x),
]
for name, ref in [("equal", numpy.equal), ("not_equal", numpy.not_equal), ("less_than", numpy.less),
                  ("less_equal", numpy.less_equal), ("greater_than", numpy.greater),
                  ("greater_equal", numpy.greater_equal)]:
    SPECS.append(OpSpec(name, getattr(fw, name),
                        lambda rng: [rng.integers(0, 3, (3, 4)).astype(float), rng.integers(0, 3, (4,)).astype(float)],
                        ref, grad=False))
SPECS += [
    OpSpec("logical_not", fw.logical_not, lambda rng: [rng.uniform(size=5) > 0.5], numpy.logical_not, grad=False),
    OpSpec("isfinite", fw.isfinite, lambda rng: [numpy.array([1.0, numpy.inf, -numpy.inf, numpy.nan])],
           numpy.isfinite, grad=False),
]
