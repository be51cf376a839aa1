"""The optional GEMM provider: Intel MKL's ``cblas_?gemm`` from the ``mkl`` wheel, called through its C ABI.

On oar's own shapes (``oar bench providers``, figures in ``docs/RESULTS.md``)
MKL's single-precision GEMM beats the OpenBLAS that NumPy ships on the products
a recurrent or convolutional training step is made of, so where the wheel is
installed (``pip install oar[mkl]``) the big matrix products run on it: the
convolution GEMMs (:mod:`framework.kernels.im2col`), ``Linear`` and ``matmul``
(:mod:`framework.ops.linalg`) through :func:`matmul`, and the compiled
recurrent kernels, which call :func:`kernel_blas`'s entry points by address.

Chosen automatically on an Intel CPU when ``OAR_KERNELS`` is not ``numpy`` and
the installed ``mkl`` distribution's ``libmkl_rt`` loads (found through its
file list, loaded with ctypes, once per process); otherwise everything stays on
NumPy, which is the reference. On an AMD EPYC MKL lost to NumPy's OpenBLAS on
every step shape measured (0.22-1.06x its rate on one thread, ``oar bench
providers`` in ``docs/RESULTS.md``), so ``OAR_GEMM_PROVIDER=auto`` (the
default) takes it only where ``/proc/cpuinfo`` names the vendor
``GenuineIntel``; ``mkl`` takes it on any CPU, ``numpy`` never. The compiled
recurrent kernels take it at any thread count
(:func:`kernel_blas`): their step GEMMs run on one thread a row part, where MKL
beats OpenBLAS most. oar's other GEMMs take it (:func:`active`) only when oar
runs on at most :data:`MAX_THREADS` threads: on two, with MKL's threaded GEMMs,
the Senta recurrent steps gained another 2-7 % but ResNet-50's lost 6-7 %
(1.64-1.67 against 1.53-1.57 s a step; its im2col and batch-norm passes on
oar's own threads between the GEMMs). Its ILP64 entries
(``cblas_sgemm_64``) take 64-bit sizes whatever ``MKL_INTERFACE_LAYER`` says.
Its thread count is :func:`framework.threadpool.num_threads` (``OAR_NUM_THREADS``,
checked: a bad value is one SettingError) when it loads; ``threadpool.set_num_threads``
changes it afterwards through threadpoolctl, as it does NumPy's BLAS.
"""
import ctypes
import importlib.metadata
import os
import re

import numpy

from .. import backend, threadpool
from ..settings import env_choice
from .choice import requested

__all__ = ["Provider", "library_file", "find_library", "load", "active", "kernel_blas", "matmul", "call_cblas",
           "blas_layout", "cpu_vendor", "wanted", "DISTRIBUTION", "PROVIDER_ENV", "MIN_MULTIPLY_ADDS", "MAX_THREADS"]

DISTRIBUTION = "mkl"                     # the wheel that holds the provider
PROVIDER_ENV = "OAR_GEMM_PROVIDER"       # auto (MKL on an Intel CPU), mkl (on any CPU) or numpy (never)
_VENDOR = "GenuineIntel"                 # the CPU vendor on which auto takes MKL
_LIBRARY = "libmkl_rt"                   # its single dynamic library (MKL's runtime dispatcher)
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
#: A product of fewer multiply-adds (per matrix) stays on NumPy: below it the ctypes call and MKL's dispatch cost
#: more than its kernels gain (measured: 0.34x NumPy's rate at batch 1 of a recurrent step, 0.74-1.1x at 16 rows
#: of 128 x 384, 1.07-1.34x from 16 x 128 x 512 up).
MIN_MULTIPLY_ADDS = 1 << 20
#: The provider runs only when oar runs on at most this many threads (see the module docstring).
MAX_THREADS = 1
_state = {}                              # "provider": the loaded Provider or None, once tried; "vendors": read


def library_file(distribution, stem):
    """The path of the shared library ``stem*.so*`` that the installed ``distribution`` ships, from its file
    list, or None (distribution not installed, or no such file)."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    pattern = re.compile(re.escape(stem) + r"[.\w]*\.so(\.\d+)*$")
    for entry in sorted(files, key=str):
        if pattern.fullmatch(os.path.basename(str(entry))):
            return os.path.normpath(str(entry.locate()))
    return None


def find_library():
    """The path of the provider's library (``libmkl_rt`` of the installed ``mkl`` wheel), or None."""
    return library_file(DISTRIBUTION, _LIBRARY)


class Provider:
    """A loaded GEMM library: ``sgemm``/``dgemm`` (ctypes functions of the CBLAS signature with 64-bit sizes),
    their ``addresses`` (for compiled code), ``set_threads(n)``, ``set_threads_local(n) -> previous`` (the
    calling thread only; 0 restores the global count), ``name``, ``version``, ``path``."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        self.name, self.path = DISTRIBUTION, path
        self.version = importlib.metadata.version(DISTRIBUTION)
        size = ctypes.c_int64
        self.sgemm, self.dgemm = lib.cblas_sgemm_64, lib.cblas_dgemm_64
        for fn, real in ((self.sgemm, ctypes.c_float), (self.dgemm, ctypes.c_double)):
            fn.argtypes = [ctypes.c_int] * 3 + [size] * 3 + [real, ctypes.c_void_p, size, ctypes.c_void_p, size,
                                                              real, ctypes.c_void_p, size]
            fn.restype = None
        self.addresses = [ctypes.cast(fn, ctypes.c_void_p).value for fn in (self.sgemm, self.dgemm)]
        self.set_threads = lib.MKL_Set_Num_Threads
        self.set_threads.argtypes, self.set_threads.restype = [ctypes.c_int], None
        self.set_threads_local = lib.MKL_Set_Num_Threads_Local
        self.set_threads_local.argtypes, self.set_threads_local.restype = [ctypes.c_int], ctypes.c_int


def load(path):
    """A :class:`Provider` for the library at ``path`` with its threads set to ``threadpool.num_threads()``, or
    None when ``path`` is None or the library does not load."""
    if path is None:
        return None
    try:
        provider = Provider(path)
    except (OSError, AttributeError):
        return None
    provider.set_threads(threadpool.num_threads())
    return provider


def active():
    """The :class:`Provider` oar's GEMMs outside the compiled kernels run on now, or None (not :func:`wanted`,
    more than :data:`MAX_THREADS` threads, or no provider installed). The settings and the thread count are
    read on every call; the library is looked for and loaded once per process."""
    if not wanted() or threadpool.num_threads() > MAX_THREADS:    # the setting checked first, on every call
        return None
    return _loaded()


def cpu_vendor(path="/proc/cpuinfo"):
    """The CPU's vendor as ``path`` names it (``vendor_id``: ``GenuineIntel``, ``AuthenticAMD`` …), or None where
    the file is missing or names none (read once per process for the default path)."""
    if path in _state.setdefault("vendors", {}):
        return _state["vendors"][path]
    vendor = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            vendor = next((line.split(":", 1)[1].strip() for line in f if line.startswith("vendor_id")), None)
    except OSError:
        pass
    _state["vendors"][path] = vendor
    return vendor


def wanted():
    """Whether the settings ask for the provider here: ``OAR_KERNELS`` is not ``numpy`` and ``OAR_GEMM_PROVIDER``
    is ``mkl``, or ``auto`` (the default) on an Intel CPU (:func:`cpu_vendor`). A bad value is one SettingError."""
    choice = env_choice(PROVIDER_ENV, ("auto", "mkl", "numpy"), "auto")
    if requested() == "numpy" or choice == "numpy":
        return False
    return choice == "mkl" or cpu_vendor() == _VENDOR


def _loaded():
    """The loaded provider, or None where none is installed (looked for and loaded once per process)."""
    if "provider" not in _state:
        _state["provider"] = load(find_library())
    return _state["provider"]


def kernel_blas():
    """(library path, [sgemm, dgemm] addresses, 64-bit sizes, per-thread thread setter) for compiled kernels
    when the provider is installed and :func:`wanted`, at any thread count; else None."""
    provider = _loaded() if wanted() else None
    if provider is None:
        return None
    return provider.path, provider.addresses, True, provider.set_threads_local


def blas_layout(x):
    """(transposed, leading dimension) with which a row-major BLAS reads the 2-D NumPy array ``x`` in place
    (a C-ordered or a transposed view, rows or columns possibly strided), or None when it cannot."""
    item = x.itemsize
    rows, cols = x.shape
    row_step, col_step = x.strides
    if not x.flags.aligned:
        return None
    if (cols == 1 or col_step == item) and (rows == 1 or (row_step % item == 0 and row_step >= cols * item)):
        return False, max(1, cols, row_step // item if rows > 1 else 1)
    if (rows == 1 or row_step == item) and (cols == 1 or (col_step % item == 0 and col_step >= rows * item)):
        return True, max(1, rows, col_step // item if cols > 1 else 1)
    return None


def call_cblas(fn, a, b, out):
    """out = a @ b through ``fn``, a ctypes CBLAS ``?gemm`` (row-major; its sizes' width set in its argtypes).

    Shapes: a (m, k), b (k, n) in place when :func:`blas_layout` reads them (else copied, as NumPy does),
    out (m, n) C-contiguous; one float dtype, the one ``fn`` takes."""
    (m, k), n = a.shape, b.shape[1]
    a, (trans_a, lda) = _readable(a)
    b, (trans_b, ldb) = _readable(b)
    fn(_ROW_MAJOR, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS, m, n, k, 1.0,
       a.ctypes.data, lda, b.ctypes.data, ldb, 0.0, out.ctypes.data, max(1, n))


def _readable(x):
    """(x or a C-contiguous copy of it, its :func:`blas_layout`)."""
    layout = blas_layout(x)
    if layout is None:
        x = numpy.ascontiguousarray(x)
        layout = blas_layout(x)
    return x, layout


def _suits(a, b, out):
    """Whether the provider can take ``matmul(a, b, out)``: NumPy float32/float64 operands of one dtype, of 2 or 3
    dimensions (3: stacks of one length), each product of at least :data:`MIN_MULTIPLY_ADDS`; ``out``, when given,
    C-contiguous, of the result's shape and dtype and apart from both operands."""
    if not (type(a) is numpy.ndarray and type(b) is numpy.ndarray and a.dtype == b.dtype
            and a.dtype in (numpy.float32, numpy.float64) and 2 <= a.ndim <= 3 and 2 <= b.ndim <= 3
            and a.shape[-1] == b.shape[-2] and a.shape[-2] * a.shape[-1] * b.shape[-1] >= MIN_MULTIPLY_ADDS):
        return False
    if a.ndim == b.ndim == 3 and a.shape[0] != b.shape[0]:
        return False
    return out is None or (type(out) is numpy.ndarray and out.shape == _result_shape(a, b) and out.dtype == a.dtype
                           and out.flags.c_contiguous and not numpy.may_share_memory(out, a)
                           and not numpy.may_share_memory(out, b))


def _result_shape(a, b):
    """The shape of ``matmul(a, b)`` for 2- or 3-dimensional operands (see :func:`matmul`)."""
    stack = (a.shape[0],) if a.ndim == 3 else (b.shape[0],) if b.ndim == 3 else ()
    return stack + (a.shape[-2], b.shape[-1])


def matmul(a, b, out=None):
    """``matmul(a, b, out=out)`` with NumPy's semantics, on the provider when it is :func:`active` and the operands
    suit it (NumPy float32/float64 arrays of one dtype, products of at least :data:`MIN_MULTIPLY_ADDS`), else on
    the operands' own array module.

    Shapes: a (m, k) or (G, m, k), b (k, n) or (G, k, n) -> (m, n), or (G, m, n) when either is a stack
    (one GEMM per matrix of the stack). Returns ``out`` when given.
    """
    provider = active() if _suits(a, b, out) else None
    if provider is None:
        return backend.get_array_module(a).matmul(a, b, out=out)
    shape = _result_shape(a, b)
    target = numpy.empty(shape, dtype=a.dtype) if out is None else out
    if len(shape) == 2:
        call_cblas(_function(provider, a), a, b, target)
        return target
    for index in range(shape[0]):
        call_cblas(_function(provider, a), a[index] if a.ndim == 3 else a, b[index] if b.ndim == 3 else b,
                   target[index])
    return target


def _function(provider, a):
    """The provider's ``?gemm`` for ``a``'s dtype."""
    return provider.sgemm if a.dtype == numpy.float32 else provider.dgemm
