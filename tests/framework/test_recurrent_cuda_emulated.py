"""The whole-sequence GRU/LSTM CUDA kernels (framework.kernels.recurrent_cuda) checked without a GPU.

Their CUDA source is compiled as C++ with a small stand-in for the CUDA runtime: each block runs as a
set of threads (``threadIdx``) that meet at a barrier for ``__syncthreads``, blocks one after another,
shared memory filled with NaN bytes first. The kernels must then write exactly what the NumPy loops of
framework.kernels.gru / framework.kernels.lstm write, for several rows per block, partial blocks, thread
counts that do not divide the columns, ragged lengths and both GRU update rules. Skipped when no C++20
compiler is found; on a GPU the same kernels are tested against the loops by tests/test_gpu_models.py.
"""
import ctypes
import shutil
import subprocess

import numpy
import pytest

from framework.kernels import gru, lstm
from framework.kernels import recurrent_cuda

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++20 compiler")

RUNTIME = r"""
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
struct Dim { int x = 0, y = 0, z = 0; };
thread_local Dim threadIdx;
Dim blockIdx, blockDim;
std::barrier<>* block_barrier;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__
alignas(16) unsigned char shared_raw[1 << 20];
using std::max; using std::tanh;
template <typename F, typename... A>
void launch(int grid_x, int grid_y, int threads, F kernel, A... args) {
    blockDim.x = threads;
    for (int by = 0; by < grid_y; ++by) for (int bx = 0; bx < grid_x; ++bx) {
        blockIdx.x = bx; blockIdx.y = by;
        std::memset(shared_raw, 0xff, sizeof(shared_raw));
        std::barrier<> barrier(threads);
        block_barrier = &barrier;
        std::vector<std::thread> block;
        for (int t = 0; t < threads; ++t) block.emplace_back([=] { threadIdx.x = t; kernel(args...); });
        for (auto& thread : block) thread.join();
    }
}
"""

ENTRY_POINTS = r"""
#define P const T*
extern "C" void gru_forward(int gx, int gy, int th, P a, P b, P c, P d, const int* e, int S, int N, int D, int om,
                            T* f, T* g, T* h, T* i) { launch(gx, gy, th, oar_gru_forward, a, b, c, d, e, S, N, D, om, f, g, h, i); }
extern "C" void gru_backward(int gx, int gy, int th, P a, P b, P c, P d, P e, P f, P g, P h, const int* l, int S,
                             int N, int D, T* o1, T* o2, T* o3) {
    launch(gx, gy, th, oar_gru_backward, a, b, c, d, e, f, g, h, l, S, N, D, o1, o2, o3); }
extern "C" void lstm_forward(int gx, int gy, int th, P x, P w, const int* l, int S, int N, int D, T* h, T* c,
                             T* g, T* tc) { launch(gx, gy, th, oar_lstm_forward, x, w, l, S, N, D, h, c, g, tc); }
extern "C" void lstm_backward(int gx, int gy, int th, P gs, P g, P c, P tc, P wt, const int* l, int S, int N, int D,
                              T* gx_, T* gho, T* gco) {
    launch(gx, gy, th, oar_lstm_backward, gs, g, c, tc, wt, l, S, N, D, gx_, gho, gco); }
"""


@pytest.fixture(scope="module", params=[1, 2, 8], ids=lambda rows: f"rows{rows}")
def kernels(request, tmp_path_factory):
    """The kernels compiled for float64 with ``rows`` rows per block, as a ctypes library."""
    folder = tmp_path_factory.mktemp(f"rows{request.param}")
    source = folder / "kernels.cpp"
    source.write_text(RUNTIME + f"typedef double T;\n#define ROWS {request.param}\n" + recurrent_cuda._COMMON +
                      recurrent_cuda._GRU + recurrent_cuda._LSTM + ENTRY_POINTS)
    library = folder / "kernels.so"
    subprocess.run([CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o", str(library), str(source)],
                   check=True, capture_output=True)
    return request.param, ctypes.CDLL(str(library))


def _call(library, name, grid, threads, *args):
    converted = [ctypes.c_int(int(a)) if isinstance(a, (int, numpy.integer, bool)) else
                 a.ctypes.data_as(ctypes.c_void_p) for a in args]
    getattr(library, name)(ctypes.c_int(grid[0]), ctypes.c_int(grid[1]), ctypes.c_int(threads), *converted)


CASES = [  # steps, runs, rows, state size, threads per block, origin_mode
    (6, 2, 5, 3, 4, False), (5, 1, 3, 7, 3, True), (4, 2, 9, 4, 16, False)]


def _lengths(rng, steps, n):
    lengths = numpy.sort(rng.integers(0, steps + 1, size=n))[::-1].copy()
    lengths[0] = steps
    return lengths


@pytest.mark.parametrize("steps, runs, n, d, threads, origin_mode", CASES)
def test_gru_kernels_write_what_the_numpy_loops_write(kernels, steps, runs, n, d, threads, origin_mode):
    rows, library = kernels
    rng = numpy.random.default_rng(steps * 100 + n)
    lengths = _lengths(rng, steps, n)
    active = [int((lengths > t).sum()) for t in range(steps)]
    x_ur, x_c = rng.standard_normal((steps, runs, n, 2 * d)), rng.standard_normal((steps, runs, n, d))
    w_ur, w_c = rng.standard_normal((runs, d, 2 * d)) * 0.5, rng.standard_normal((runs, d, d)) * 0.5
    h0 = rng.standard_normal((runs, n, d))
    expected = gru.gru_forward(x_ur.copy(), x_c, active, w_ur, w_c, h0, origin_mode)
    states = numpy.zeros((steps + 1, runs, n, d))
    states[0] = h0
    ur, c, reset_h = numpy.zeros((steps, runs, n, 2 * d)), numpy.zeros((steps, runs, n, d)), numpy.zeros(
        (steps, runs, n, d))
    grid = (-(-n // rows), runs)
    lengths32 = lengths.astype(numpy.int32)
    _call(library, "gru_forward", grid, threads, x_ur * 0.5, x_c, w_ur * 0.5, w_c, lengths32, runs, n, d,
          origin_mode, states, ur, c, reset_h)
    for got, want in zip((states, ur, c, reset_h), expected):
        numpy.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)

    grad_states, grad_last = rng.standard_normal((steps, runs, n, d)), rng.standard_normal((runs, n, d))
    want_ur, want_c, _, _, want_h = gru.gru_backward(*expected, active, w_ur, w_c, grad_states, grad_last,
                                                     origin_mode)
    factors = [numpy.ascontiguousarray(f) for f in gru._backward_factors(numpy, expected[0], expected[1],
                                                                         expected[2], origin_mode)]
    grad_ur, grad_c, grad_h = numpy.zeros_like(ur), numpy.zeros_like(c), grad_last.copy()
    _call(library, "gru_backward", grid, threads, grad_states, *factors, expected[1],
          numpy.ascontiguousarray(w_ur.swapaxes(1, 2)), numpy.ascontiguousarray(w_c.swapaxes(1, 2)), lengths32,
          runs, n, d, grad_ur, grad_c, grad_h)
    for got, want in ((grad_ur, want_ur), (grad_c, want_c), (grad_h, want_h)):
        numpy.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("steps, runs, n, d, threads, origin_mode", CASES)
def test_lstm_kernels_write_what_the_numpy_loops_write(kernels, steps, runs, n, d, threads, origin_mode):
    rows, library = kernels
    rng = numpy.random.default_rng(steps * 10 + n)
    lengths = _lengths(rng, steps, n)
    active = [int((lengths > t).sum()) for t in range(steps)]
    x, w = rng.standard_normal((steps, runs, n, 4 * d)), rng.standard_normal((runs, d, 4 * d)) * 0.5
    h0, c0 = rng.standard_normal((runs, n, d)), rng.standard_normal((runs, n, d))
    expected = lstm.lstm_forward(x.copy(), active, w, h0, c0)
    hidden, cells = numpy.zeros((steps + 1, runs, n, d)), numpy.zeros((steps + 1, runs, n, d))
    hidden[0], cells[0] = h0, c0
    gates, tanh_c = numpy.zeros((steps, runs, n, 4 * d)), numpy.zeros((steps, runs, n, d))
    grid = (-(-n // rows), runs)
    lengths32 = lengths.astype(numpy.int32)
    _call(library, "lstm_forward", grid, threads, x, w, lengths32, runs, n, d, hidden, cells, gates, tanh_c)
    for got, want in zip((hidden, cells, gates, tanh_c), expected):
        numpy.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)

    grad_states = rng.standard_normal((steps, runs, n, d))
    last_h, last_c = rng.standard_normal((runs, n, d)), rng.standard_normal((runs, n, d))
    want_x, _, want_h, want_c = lstm.lstm_backward(*expected, active, w, grad_states, last_h, last_c)
    grad_x, grad_h, grad_c = numpy.zeros((steps, runs, n, 4 * d)), last_h.copy(), last_c.copy()
    _call(library, "lstm_backward", grid, threads, grad_states, expected[2], expected[1], expected[3],
          numpy.ascontiguousarray(w.swapaxes(1, 2)), lengths32, runs, n, d, grad_x, grad_h, grad_c)
    for got, want in ((grad_x, want_x), (grad_h, want_h), (grad_c, want_c)):
        numpy.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_rows_per_block_keeps_shared_memory_within_48_kb():
    assert recurrent_cuda.rows_per_block("oar_gru_forward", 128, 4) == 8
    assert recurrent_cuda.rows_per_block("oar_lstm_forward", 128, 8) == 8            # 6 * 8 * 128 * 8 = 48 KB
    assert recurrent_cuda.rows_per_block("oar_lstm_forward", 1024, 4) == 2
    assert recurrent_cuda.rows_per_block("oar_lstm_backward", 4096, 4) == 0          # the step loop takes over
