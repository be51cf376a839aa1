"""Numba, set up once for the compiled CPU kernels: cache folder, compile options, BLAS and activations.

Importing this module imports Numba (0.2-0.5 s), so only the kernel modules
import it, on first use. Before the import it sets ``NUMBA_CACHE_DIR`` to
``$OAR_HOME/numba/<blas>`` when that folder can be written and is private:
made owner-only (``0o700``), and it, the ``numba`` folder and every file in
them this user's and writable by no one else (:mod:`framework.private`), since
Numba's cache is pickles and reading one runs what it names. Else the kernels
compile in memory, with one warning (Numba's own ``cache=True`` also fails where
no cache folder is writable). A damaged entry is compiled again
(:mod:`.numba_cache`) and the ``workqueue`` threading layer (the ``omp``
one spin-waits on a busy machine; no kernel uses ``prange`` today).

Compile options (:func:`kernel`): ``nogil`` (a kernel can run beside another
thread), ``error_model="numpy"`` (no zero-division branch on each division,
which blocks vectorisation), and ``fastmath`` for the recurrent kernels. pip's
Numba has no SVML, so ``math.tanh``/``exp`` are scalar library calls: the
float32 :func:`tanh` and :func:`sigmoid` are a rational function (Eigen's
``generic_fast_tanh_float``; at most a few float32 ulp from the true value),
which vectorises; float64 keeps ``math.tanh`` (gradient checks need it exact).

:func:`gemm` is a matrix product inside a kernel: for four or more rows it
calls the GEMM provider's ``cblas_?gemm`` when one is active
(:mod:`framework.kernels.providers`: MKL, 64-bit sizes), else the BLAS that NumPy
itself loaded (OpenBLAS's, found through the process's loaded libraries), declared
to LLVM by name, so the cached code links to it again in a new process; the
cache folder is named after that library, so a change of provider compiles again.
With fewer rows, or no BLAS found, a loop over the rows (state in registers,
vectorised over columns).
"""
import ctypes
import glob
import hashlib
import math
import os
import sys
import tempfile
import warnings

import numpy

from ...fetch import oar_home
from ...private import private_folder
from .. import providers

__all__ = ["kernel", "CACHE_DIR", "BLAS", "gemm", "tanh", "sigmoid", "FASTMATH_SAFE", "one_blas_thread",
           "uint64"]

_COMPILE_NOTICE = "oar: compiling the CPU kernels (once per machine{where}; `oar warmup` does it ahead)"


def _find_blas():
    """(path, symbol prefix, 64-bit ints) of a loaded CBLAS with ``?gemm``, or None."""
    paths = []
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "blas" in line.lower() and ".so" in line})
    except OSError:
        pass
    paths += glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs", "*openblas*"))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix, wide in (("scipy_cblas_", "64_", True), ("cblas_", "64_", True),
                                     ("scipy_cblas_", "", False), ("cblas_", "", False)):
            names = [f"{prefix}{kind}gemm{suffix}" for kind in "sd"]
            if all(hasattr(lib, name) for name in names):
                return path, [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in names], wide
    return None


def _local_threads_setter(path):
    """OpenBLAS's per-thread ``openblas_set_num_threads_local`` (0.3.27+) in the library at ``path``, or None."""
    try:
        fn = ctypes.CDLL(path).openblas_set_num_threads_local
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
    return fn


def one_blas_thread(fn):
    """``fn()`` with the BLAS GEMMs it makes from the calling thread on one thread (restored after), where the
    BLAS can be told per thread; else just ``fn()``. For work already spread over the cores (one recurrent
    direction a thread): a BLAS that also threads each GEMM oversubscribes the cores (measured 4x slower)."""
    if _SET_LOCAL is None:
        return fn()
    previous = _SET_LOCAL(1)
    try:
        return fn()
    finally:
        _SET_LOCAL(previous)


def _usable(folder):
    """Why the kernel cache cannot live in ``folder`` (made owner-only, with the folder above it, when missing),
    or None when Numba may read and write it: see :func:`framework.private.private_folder`."""
    problem = private_folder(folder, levels=2)
    if problem is None:
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
                pass
        except OSError as err:
            problem = f"{folder} cannot be written ({err.strerror or err})"
    return problem


_PROVIDER = providers.kernel_blas()
if _PROVIDER is not None:
    BLAS, _SET_LOCAL = _PROVIDER[:3], _PROVIDER[3]
else:
    BLAS = _find_blas()
    _SET_LOCAL = None if BLAS is None else _local_threads_setter(BLAS[0])
_blas_tag = "noblas" if BLAS is None else hashlib.sha256(os.path.basename(BLAS[0]).encode()).hexdigest()[:12]
CACHE_DIR = os.path.join(oar_home(), "numba", _blas_tag)
_PROBLEM = None if "numba" in sys.modules else _usable(CACHE_DIR)
if "numba" in sys.modules:  # imported before us: our folder cannot apply any more; use what it has
    CACHE_DIR = os.environ.get("NUMBA_CACHE_DIR") or None
elif _PROBLEM is None:
    os.environ["NUMBA_CACHE_DIR"] = CACHE_DIR
else:
    warnings.warn(f"cannot write the kernel cache folder {CACHE_DIR} safely: {_PROBLEM}; compiling the CPU kernels "
                  f"in memory for this process (a cache folder must be this user's and writable by no one else)",
                  RuntimeWarning, stacklevel=2)
    CACHE_DIR = None
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numba  # noqa: E402  (after the environment above)
import llvmlite.binding as llvm  # noqa: E402
from numba import types  # noqa: E402
from numba import uint64  # noqa: E402,F401  (the kernels take Numba's names from here, never before this import)
from numba.core import event  # noqa: E402
from numba.extending import overload, register_jitable  # noqa: E402

from . import numba_cache  # noqa: E402  (imports Numba)

numba_cache.install()


class _CompileNotice(event.Listener):
    """Says once per process on stderr that kernels are being compiled (a cache hit compiles nothing)."""

    def __init__(self):
        self.said = False

    def on_start(self, ev):
        if not self.said:
            self.said = True
            where = f", cached in {CACHE_DIR}" if CACHE_DIR else ", in memory"
            print(_COMPILE_NOTICE.format(where=where), file=sys.stderr, flush=True)

    def on_end(self, ev):
        pass


event.register("numba:compile", _CompileNotice())


def _load_cpu_target_without_scipy():
    """Load Numba's CPU typing and lowering registries now, with ``scipy.linalg`` hidden when nothing imported it.

    On its first use (a compile, or a load from the cache) Numba's CPU target imports ``numba.np.arraymath``,
    which imports ``scipy.linalg`` only to learn whether ``np.dot`` inside a kernel may call a BLAS: 0.3 s of a
    fresh process's first call wherever SciPy is installed. The kernels here call the BLAS through
    :func:`gemm`, never ``np.dot``, so that answer is not needed; SciPy stays importable afterwards.
    """
    hidden = "scipy.linalg" not in sys.modules
    if hidden:
        sys.modules["scipy.linalg"] = None          # an import of it raises ImportError while hidden
    try:
        from numba.core.registry import cpu_target
        cpu_target.target_context.refresh()
    finally:
        if hidden:
            del sys.modules["scipy.linalg"]


_load_cpu_target_without_scipy()

FASTMATH_SAFE = {"nsz", "arcp", "contract", "afn", "reassoc"}   # fastmath without assuming no inf / NaN


def kernel(fastmath=True):
    """The decorator of every compiled kernel: ``njit`` with the options in the module docstring."""
    return numba.njit(cache=CACHE_DIR is not None, nogil=True, error_model="numpy", fastmath=fastmath,
                      boundscheck=False)


@kernel(fastmath=False)
def window_span(size, out, offset, stride):
    """Output indices o in [lo, hi) whose input position o * stride + offset lies in [0, size): where one kernel
    tap of a window (convolution, pooling) falls inside the image along one axis."""
    lo = 0 if offset >= 0 else (-offset + stride - 1) // stride
    hi = 0 if size - 1 - offset < 0 else (size - 1 - offset) // stride + 1
    return lo, max(lo, min(hi, out))


# ---- BLAS -------------------------------------------------------------------------------------------------------

GEMM_MIN_ROWS = 4
_CBLAS_ROW_MAJOR, _CBLAS_NO_TRANS, _CBLAS_TRANS = 101, 111, 112
if BLAS is not None:
    _int = types.int64 if BLAS[2] else types.int32
    for _name, _address in zip(("oar_cblas_sgemm", "oar_cblas_dgemm"), BLAS[1]):
        llvm.add_symbol(_name, _address)
    _sgemm = types.ExternalFunction("oar_cblas_sgemm", types.void(
        types.int32, types.int32, types.int32, _int, _int, _int, types.float32, types.voidptr, _int,
        types.voidptr, _int, types.float32, types.voidptr, _int))
    _dgemm = types.ExternalFunction("oar_cblas_dgemm", types.void(
        types.int32, types.int32, types.int32, _int, _int, _int, types.float64, types.voidptr, _int,
        types.voidptr, _int, types.float64, types.voidptr, _int))
_HAVE_BLAS = BLAS is not None


@register_jitable(fastmath=True, error_model="numpy")
def _gemm_loops(m, a, b, trans_b, beta, out):
    """out[:m] = beta * out[:m] + a[:m] @ (b.T if trans_b else b), by rows."""
    cols = out.shape[1]
    inner = a.shape[1]
    for i in range(m):
        if beta == 0:
            for j in range(cols):
                out[i, j] = 0
        if trans_b:
            for j in range(cols):
                acc = out[i, j]
                for k in range(inner):
                    acc += a[i, k] * b[j, k]
                out[i, j] = acc
        else:                                   # four rows of b per pass: a quarter of the loads/stores of out
            k = 0
            while k + 4 <= inner:
                x0, x1, x2, x3 = a[i, k], a[i, k + 1], a[i, k + 2], a[i, k + 3]
                for j in range(cols):
                    out[i, j] += x0 * b[k, j] + x1 * b[k + 1, j] + x2 * b[k + 2, j] + x3 * b[k + 3, j]
                k += 4
            while k < inner:
                x = a[i, k]
                for j in range(cols):
                    out[i, j] += x * b[k, j]
                k += 1


def gemm(m, a, b, trans_b, beta, out):
    """Inside a kernel: out[:m] = beta * out[:m] + a[:m] @ (b.T if trans_b else b); beta 0 or 1.

    a (>=m, K), b (K, F) (or (F, K) with trans_b), out (>=m, F): C-contiguous, same float dtype.
    """
    raise NotImplementedError("only inside compiled kernels")


@overload(gemm, jit_options={"fastmath": True, "error_model": "numpy"})
def _gemm_overload(m, a, b, trans_b, beta, out):
    if not _HAVE_BLAS:
        return lambda m, a, b, trans_b, beta, out: _gemm_loops(m, a, b, trans_b, beta, out)
    blas = _sgemm if a.dtype == types.float32 else _dgemm
    scalar = numpy.float32 if a.dtype == types.float32 else numpy.float64

    def impl(m, a, b, trans_b, beta, out):
        if m < GEMM_MIN_ROWS:
            _gemm_loops(m, a, b, trans_b, beta, out)
            return
        cols, inner = out.shape[1], a.shape[1]
        blas(_CBLAS_ROW_MAJOR, _CBLAS_NO_TRANS, _CBLAS_TRANS if trans_b else _CBLAS_NO_TRANS, m, cols, inner,
             scalar(1.0), a.ctypes.data, inner, b.ctypes.data, b.shape[1], scalar(beta), out.ctypes.data, cols)
    return impl


# ---- activations ------------------------------------------------------------------------------------------------

_f32 = numpy.float32
_CLAMP, _TINY = _f32(7.90531110763549805), _f32(0.0004)
_A1, _A3, _A5, _A7 = _f32(4.89352455891786e-03), _f32(6.37261928875436e-04), _f32(1.48572235717979e-05), \
    _f32(5.12229709037114e-08)
_A9, _A11, _A13 = _f32(-8.60467152213735e-11), _f32(2.00018790482477e-13), _f32(-2.76076847742355e-16)
_B0, _B2, _B4, _B6 = _f32(4.89352518554385e-03), _f32(2.26843463243900e-03), _f32(1.18534705686654e-04), \
    _f32(1.19825839466702e-06)
_HALF32 = _f32(0.5)


def tanh(x):
    """Inside a kernel: tanh of a float (float32: a rational function, float64: ``math.tanh``)."""
    return math.tanh(x)


def sigmoid(x):
    """Inside a kernel: the logistic function as 0.5 tanh(x/2) + 0.5 (no overflow)."""
    return 0.5 * math.tanh(0.5 * x) + 0.5


@overload(tanh, jit_options={"fastmath": True, "error_model": "numpy"})
def _tanh_overload(x):
    if x == types.float32:
        def tanh32(x):
            x = min(max(x, -_CLAMP), _CLAMP)
            x2 = x * x
            p = x2 * _A13 + _A11
            p = x2 * p + _A9
            p = x2 * p + _A7
            p = x2 * p + _A5
            p = x2 * p + _A3
            p = x2 * p + _A1
            p = x * p
            q = x2 * _B6 + _B4
            q = x2 * q + _B2
            q = x2 * q + _B0
            return x if abs(x) < _TINY else p / q
        return tanh32
    return lambda x: math.tanh(x)


@overload(sigmoid, jit_options={"fastmath": True, "error_model": "numpy"})
def _sigmoid_overload(x):
    if x == types.float32:
        return lambda x: _HALF32 * tanh(_HALF32 * x) + _HALF32
    return lambda x: 0.5 * math.tanh(0.5 * x) + 0.5
