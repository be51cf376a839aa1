"""The GEMM provider (framework.kernels.providers, MKL from its wheel) against NumPy, the reference.

Products on small versions of the step shapes (C-ordered, transposed and
row-strided views, stacks) within 1e-5 relative in float32; float64 gradient
checks of conv2d, linear and the LSTM/GRU recurrences through the provider;
the provider off under ``OAR_KERNELS=numpy`` and without its library (NumPy's
results bit for bit); ``OAR_GEMM_PROVIDER`` (auto takes it on an Intel CPU
only); a bad ``OAR_NUM_THREADS`` is one SettingError; and
``oar bench providers --quick`` through the installed command. Tests that need
the wheel skip where it is not installed.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy
import pytest

import framework
from framework import threadpool
from framework.kernels import cpu, providers
from framework.nn import functional as F
from framework.settings import SettingError
from framework.testing import gradcheck

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
installed = pytest.mark.skipif(providers.find_library() is None, reason="the mkl wheel is not installed")


@pytest.fixture
def fresh(monkeypatch):
    """The provider looked for again in this test (and forgotten after it), with ``OAR_KERNELS`` unset, asked for on
    any CPU (``OAR_GEMM_PROVIDER=mkl``), oar on one thread and every product, however small, sent to it."""
    monkeypatch.setattr(providers, "_state", {})
    monkeypatch.setenv(providers.PROVIDER_ENV, "mkl")
    monkeypatch.setattr(threadpool, "_threads", 1)
    monkeypatch.setattr(providers, "MIN_MULTIPLY_ADDS", 1)
    monkeypatch.delenv(cpu.KERNELS_ENV, raising=False)


def _operands(rng, m, k, n, layout):
    """a (m, k), b (k, n) float32 as ``layout`` says: 'plain', 'transposed' (both transposed views) or 'strided'
    (every other row of a larger array)."""
    a = rng.standard_normal((m, k), dtype=numpy.float32)
    b = rng.standard_normal((k, n), dtype=numpy.float32)
    if layout == "transposed":
        return numpy.ascontiguousarray(a.T).T, numpy.ascontiguousarray(b.T).T
    if layout == "strided":
        return numpy.repeat(a, 2, axis=0)[::2], numpy.repeat(b, 2, axis=0)[::2]
    return a, b


STEP_SHAPES = {  # small versions of oar bench providers' families: (m, k, n)
    "step_b1": (1, 32, 128), "step_b16": (16, 32, 96), "step_grad": (16, 128, 32),
    "projection": (200, 16, 128), "weight_grad": (32, 200, 128), "conv_forward": (16, 27, 300),
}


@installed
@pytest.mark.parametrize("layout", ["plain", "transposed", "strided"])
@pytest.mark.parametrize("shape", list(STEP_SHAPES))
def test_float32_products_match_numpy(fresh, shape, layout):
    assert providers.active() is not None
    a, b = _operands(numpy.random.default_rng(0), *STEP_SHAPES[shape], layout)
    expected = numpy.matmul(a, b)
    got = providers.matmul(a, b)
    assert got.shape == expected.shape and got.dtype == numpy.float32
    assert numpy.abs(got - expected).max() <= 1e-5 * numpy.abs(expected).max()


@installed
def test_stacks_and_out(fresh):
    rng = numpy.random.default_rng(1)
    a, b = rng.standard_normal((3, 8, 5)), rng.standard_normal((5, 7))
    stacked = rng.standard_normal((3, 5, 7))
    numpy.testing.assert_allclose(providers.matmul(a, b), numpy.matmul(a, b), rtol=1e-12)
    numpy.testing.assert_allclose(providers.matmul(a[0], stacked), numpy.matmul(a[0], stacked), rtol=1e-12)
    out = numpy.empty((3, 8, 7))
    assert providers.matmul(a, stacked, out=out) is out
    numpy.testing.assert_allclose(out, numpy.matmul(a, stacked), rtol=1e-12)


@installed
def test_gradchecks_through_the_provider(fresh):
    """conv2d (im2col, pointwise and its backward GEMMs), linear and matmul, float64, on the provider."""
    assert providers.active() is not None
    rng = numpy.random.default_rng(2)
    x, w, bias = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    gradcheck(lambda a, b, c: F.conv2d(a, b, c, stride=2, padding=1), [x, w, bias], max_elements=60)
    gradcheck(lambda a, b: F.conv2d(a, b), [rng.standard_normal((1, 3, 5, 5)), rng.standard_normal((4, 3, 1, 1))],
              max_elements=60)
    gradcheck(lambda a, b, c: F.linear(a, b, c), [rng.standard_normal((2, 5, 6)), rng.standard_normal((6, 4)),
                                                  rng.standard_normal(4)])
    gradcheck(lambda a, b: framework.matmul(a, b, transpose_y=True),
              [rng.standard_normal((3, 4, 6)), rng.standard_normal((5, 6))])


RECURRENCE_ON_THE_PROVIDER = """
import os, numpy
from framework.kernels.cpu import compiler
from framework.nn import functional as F
from framework.testing import gradcheck
assert os.path.basename(compiler.BLAS[0]).startswith("libmkl_rt"), compiler.BLAS
assert compiler.one_blas_thread(lambda: 7) == 7                  # the provider's per-thread thread count
rng = numpy.random.default_rng(3)
lengths = numpy.array([4, 0, 1, 3, 4, 2])                        # batch 6: above the kernels' BLAS threshold
for fn, gates in ((F.dynamic_gru, 3), (F.dynamic_lstm, 4)):
    x, weight = rng.uniform(-1, 1, (6, 4, gates * 4)), rng.uniform(-0.5, 0.5, (4, gates * 4))
    gradcheck(lambda a, b: fn(a, lengths, b)[0], [x, weight], max_elements=40)
print("ok")
"""


@installed
@pytest.mark.skipif(not cpu.enabled(), reason="the compiled CPU kernels are off")
def test_recurrence_gradcheck_on_the_provider(tmp_path):
    """The compiled GRU and LSTM kernels call the provider's GEMM, float64 gradients by central differences (in a
    process of its own on one thread, where the kernels pick their BLAS when first compiled)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OAR_")}
    env.update(OAR_NUM_THREADS="1", OAR_GEMM_PROVIDER="mkl", OAR_HOME=os.environ.get("OAR_HOME", str(tmp_path)))
    done = subprocess.run([sys.executable, "-c", RECURRENCE_ON_THE_PROVIDER], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@installed
def test_off_on_more_threads_but_for_the_compiled_kernels(fresh, monkeypatch):
    """oar's matmul leaves the provider above MAX_THREADS threads; the compiled recurrent kernels, whose GEMMs run
    on one thread a row part, keep it."""
    monkeypatch.setattr(threadpool, "_threads", providers.MAX_THREADS + 1)
    assert providers.active() is None
    assert os.path.basename(providers.kernel_blas()[0]).startswith("libmkl_rt")


@installed
def test_small_products_stay_on_numpy(fresh, monkeypatch):
    monkeypatch.setattr(providers, "MIN_MULTIPLY_ADDS", 1 << 20)
    a, b = _operands(numpy.random.default_rng(6), 16, 128, 384, "plain")        # below MIN_MULTIPLY_ADDS
    numpy.testing.assert_array_equal(providers.matmul(a, b), numpy.matmul(a, b))


@installed
def test_off_under_oar_kernels_numpy(fresh, monkeypatch):
    monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
    assert providers.active() is None and providers.kernel_blas() is None
    a, b = _operands(numpy.random.default_rng(4), 30, 20, 10, "plain")
    numpy.testing.assert_array_equal(providers.matmul(a, b), numpy.matmul(a, b))
    monkeypatch.delenv(cpu.KERNELS_ENV)
    assert providers.active() is not None


@pytest.mark.parametrize("choice, vendor, taken", [
    (None, "GenuineIntel", True), (None, "AuthenticAMD", False), (None, None, False), ("auto", "GenuineIntel", True),
    ("mkl", "AuthenticAMD", True), ("mkl", None, True), ("numpy", "GenuineIntel", False), ("NumPy", None, False)])
def test_auto_takes_the_provider_on_an_intel_cpu_only(fresh, monkeypatch, choice, vendor, taken):
    """MKL lost to OpenBLAS on every step shape on an AMD EPYC: ``auto`` takes it where the CPU is Intel's."""
    if choice is None:
        monkeypatch.delenv(providers.PROVIDER_ENV)
    else:
        monkeypatch.setenv(providers.PROVIDER_ENV, choice)
    monkeypatch.setattr(providers, "cpu_vendor", lambda: vendor)
    assert providers.wanted() is taken
    if providers.find_library() is not None:
        assert (providers.active() is not None) is taken and (providers.kernel_blas() is not None) is taken
    monkeypatch.setenv(cpu.KERNELS_ENV, "numpy")
    assert providers.wanted() is False


def test_a_bad_provider_choice_is_one_setting_error(fresh, monkeypatch):
    monkeypatch.setenv(providers.PROVIDER_ENV, "blis")
    with pytest.raises(SettingError, match=r"^OAR_GEMM_PROVIDER must be one of auto, mkl, numpy, got 'blis'$"):
        providers.active()


def test_cpu_vendor_reads_the_cpu_table(tmp_path):
    table = tmp_path / "cpuinfo"
    table.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\n"
                     "vendor_id\t: AuthenticAMD\n", encoding="utf-8")
    assert providers.cpu_vendor(str(table)) == "AuthenticAMD"
    (tmp_path / "bare").write_text("processor\t: 0\n", encoding="utf-8")
    assert providers.cpu_vendor(str(tmp_path / "bare")) is None
    assert providers.cpu_vendor(str(tmp_path / "missing")) is None


def test_absent_library_keeps_numpy(fresh, monkeypatch):
    monkeypatch.setattr(providers, "find_library", lambda: None)
    assert providers.active() is None and providers.kernel_blas() is None
    assert providers.library_file("no-such-distribution", "libnothing") is None
    rng = numpy.random.default_rng(5)
    x, w = rng.standard_normal((7, 5), dtype=numpy.float32), rng.standard_normal((5, 3), dtype=numpy.float32)
    y = F.linear(framework.to_tensor(x), framework.to_tensor(w)).numpy()
    numpy.testing.assert_array_equal(y, x @ w)


@installed
def test_a_bad_thread_count_is_one_setting_error(fresh, monkeypatch):
    monkeypatch.setenv("OAR_NUM_THREADS", "two")
    monkeypatch.setattr(threadpool, "_threads", None)
    with pytest.raises(SettingError, match=r"^OAR_NUM_THREADS must be a positive integer, got 'two'$"):
        providers.active()


@installed
def test_oar_bench_providers_quick(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OAR_")}
    done = subprocess.run([shutil.which("oar"), "bench", "providers", "--quick"], capture_output=True, text=True,
                          env={**env, "OAR_HOME": str(tmp_path)}, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["benchmark"] == "providers"
    results = result["results"]
    assert results["libraries"]["numpy"]["status"] == "measured"
    assert results["libraries"]["mkl"] == {"status": "measured", "version": providers.Provider(
        providers.find_library()).version}
    for key in ("1t", "2t"):
        run, summary = results["runs"][key], results["summary"][key]
        assert run["threads"] == int(key[0])
        assert set(run["families"]["mkl"]) == {"rnn_step_b1", "rnn_step_b16", "rnn_step_b64", "rnn_projection",
                                               "rnn_weight_grad", "resnet50_forward", "resnet50_weight_grad",
                                               "resnet50_input_grad"}
        assert all(rate > 0 for rate in run["families"]["mkl"].values())
        assert summary["peak_gflops"] == max(run["peak"].values()) and summary["peak_library"] in run["peak"]
        assert set(summary["vs_numpy"]["mkl"]) == set(run["families"]["mkl"])
    assert results["direct_convolution"].startswith("not measured")
