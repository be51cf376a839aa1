"""Every public op: forward vs an independent reference, float64 gradient check,
GPU vs CPU parity; and a meta-test that no public op lacks a spec."""
import importlib
import pkgutil

import numpy
import pytest

import framework
from framework import backend, ops
from framework.testing import assert_allclose, gradcheck

from . import specs as spec_package


def _all_specs():
    found = []
    for info in pkgutil.iter_modules(spec_package.__path__):
        module = importlib.import_module(f"{spec_package.__name__}.{info.name}")
        for i, spec in enumerate(module.SPECS):
            spec.id = spec.id or f"{info.name}.{spec.name}[{i}]"
            found.append(spec)
    return found


SPECS = _all_specs()


def _inputs(spec, dtype, seed=0):
    rng = numpy.random.default_rng(seed)
    arrays = spec.make(rng)
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def test_every_public_op_has_a_spec():
    covered = {s.name for s in SPECS}
    missing = sorted(set(ops.__all__) - covered)
    assert not missing, f"public ops without an OpSpec: {missing}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_forward_matches_reference(spec):
    arrays = _inputs(spec, spec.dtype)
    outs = _tuple(spec.fn(*[framework.Tensor(a) for a in arrays]))
    if spec.ref is not None:
        expected = _tuple(spec.ref(*[a.astype(numpy.float64) if a.dtype.kind == "f" else a for a in arrays]))
        assert len(outs) == len(expected), f"{spec.id}: {len(outs)} outputs, reference gives {len(expected)}"
        for k, (o, e) in enumerate(zip(outs, expected)):
            if o.data.dtype.kind == "f":
                want = numpy.dtype(spec.out_dtype or spec.dtype)
                assert o.data.dtype == want, f"{spec.id}: output {k} dtype {o.data.dtype}, expected {want}"
            assert_allclose(o, numpy.asarray(e), rtol=spec.rtol, atol=spec.atol, msg=f"{spec.id} output {k}")
    if spec.check is not None:
        spec.check(outs, arrays)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.grad], ids=lambda s: s.id)
def test_gradient_float64(spec):
    arrays = _inputs(spec, numpy.float64)
    gradcheck(spec.fn, arrays, wrt=spec.wrt, eps=spec.eps, atol=spec.grad_atol, rtol=spec.grad_rtol)


@pytest.mark.gpu
@pytest.mark.parametrize("spec", [s for s in SPECS if s.ref is not None], ids=lambda s: s.id)
def test_gpu_matches_cpu(spec):
    if not backend.is_gpu_available():
        pytest.skip("no GPU")
    arrays = _inputs(spec, numpy.float64 if spec.grad else spec.dtype)
    cpu_in = [framework.to_tensor(a, device="cpu", requires_grad=a.dtype.kind == "f" and spec.grad) for a in arrays]
    gpu_in = [framework.to_tensor(a, device="gpu", requires_grad=a.dtype.kind == "f" and spec.grad) for a in arrays]
    cpu_out, gpu_out = _tuple(spec.fn(*cpu_in)), _tuple(spec.fn(*gpu_in))
    for c, g in zip(cpu_out, gpu_out):
        assert_allclose(g, c.numpy(), rtol=1e-6, atol=1e-8, msg=f"{spec.id} forward")
    if spec.grad:
        rng = numpy.random.default_rng(1)
        weights = [rng.standard_normal(c.shape) if c.data.dtype.kind == "f" else None for c in cpu_out]
        for outs, device in ((cpu_out, "cpu"), (gpu_out, "gpu")):
            total = sum((o * framework.to_tensor(w, device=device)).sum()
                        for o, w in zip(outs, weights) if w is not None)
            total.backward()
        for c, g in zip(cpu_in, gpu_in):
            if c.grad is not None:
                assert_allclose(g.grad, c.grad.numpy(), rtol=1e-6, atol=1e-8, msg=f"{spec.id} grad")
