"""Whole-sequence GRU and LSTM kernels for CuPy: one launch per direction and pass.

A step-by-step loop costs a few kernel launches (GEMM, gate math) per time
step, so a short recurrent layer on a GPU is bound by launch overhead, not by
arithmetic. Here one CUDA block owns ``ROWS`` rows of the batch (and one run,
for GRU's several directions) and walks all their time steps itself: the
state lives in shared memory, each step's ``h_prev @ W`` is computed by the
block's threads (thread j owns output columns j, j + blockDim, …, and keeps
one partial sum per row in registers), and the block synchronises between
the dependent phases of a step. Rows never interact, so blocks need no
synchronisation with each other. The recurrent weight is read from global
memory (it stays in the L1/L2 caches: every block reads all of it each step).

The kernels follow the conventions and write exactly the arrays of the NumPy
loops in :mod:`framework.kernels.gru` and :mod:`framework.kernels.lstm`
(same saved activations, same gradients), so the two backends stay
interchangeable. ``ROWS`` is chosen per problem so that the shared memory of
a block stays within the default 48 KB; :func:`rows_per_block` returns 0 when
even one row does not fit, and the callers then use their step loops.
"""
import functools

import numpy

from .. import backend

__all__ = ["rows_per_block", "gru_forward_sequence", "gru_backward_sequence", "lstm_forward_sequence",
           "lstm_backward_sequence"]

THREADS = 256
SHARED_BYTES = 48 * 1024
MAX_ROWS = 8

_COMMON = r"""
#define SIGMOID(v) (T(0.5) * tanh(T(0.5) * (v)) + T(0.5))

// acc[r] = sum_k vec[r * D + k] * w[k * W + j] for the block's rows (vec in shared memory).
__device__ __forceinline__ void row_dot(const T* vec, const T* __restrict__ w, int D, int W, int j, T* acc) {
    #pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = T(0);
    for (int k = 0; k < D; ++k) {
        const T wk = w[(long long)k * W + j];
        #pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] += vec[r * D + k] * wk;
    }
}

// len[r] = steps of row row0 + r (0 past N); returns the block's most steps.
__device__ __forceinline__ int row_lengths(const int* __restrict__ lengths, int row0, int N, int* len) {
    int steps = 0;
    #pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        len[r] = row0 + r < N ? lengths[row0 + r] : 0;
        steps = max(steps, len[r]);
    }
    return steps;
}

// dst (ROWS, D) in shared memory <- rows row0 .. row0 + ROWS - 1 of src (N, D), 0 past N.
__device__ __forceinline__ void load_rows(T* dst, const T* __restrict__ src, int row0, int N, int D) {
    for (int i = threadIdx.x; i < ROWS * D; i += blockDim.x)
        dst[i] = row0 + i / D < N ? src[(long long)row0 * D + i] : T(0);
}

// rows row0 .. of dst (N, D) <- src (ROWS, D) in shared memory, rows past N skipped.
__device__ __forceinline__ void store_rows(T* __restrict__ dst, const T* src, int row0, int N, int D) {
    for (int i = threadIdx.x; i < ROWS * D; i += blockDim.x)
        if (row0 + i / D < N) dst[(long long)row0 * D + i] = src[i];
}
"""

_GRU = r"""
// Forward: x_ur (T, S, N, 2D) pre-halved, x_c (T, S, N, D), w_ur (S, D, 2D) pre-halved, w_c (S, D, D),
// lengths (N,) steps of each row; states (T+1, S, N, D) holds h0 in states[0] on entry.
extern "C" __global__ void oar_gru_forward(
        const T* __restrict__ x_ur, const T* __restrict__ x_c, const T* __restrict__ w_ur,
        const T* __restrict__ w_c, const int* __restrict__ lengths, const int S, const int N, const int D,
        const int origin_mode, T* __restrict__ states, T* __restrict__ ur_all, T* __restrict__ c_all,
        T* __restrict__ reset_h) {
    extern __shared__ unsigned char shared_raw[];
    T* h = reinterpret_cast<T*>(shared_raw);         // (ROWS, D) state carried in
    T* rh = h + ROWS * D;                              // (ROWS, D) r * h_prev
    T* u_s = rh + ROWS * D;                            // (ROWS, D) update gate
    const int s = blockIdx.y, row0 = blockIdx.x * ROWS, D2 = 2 * D;
    const T* wur = w_ur + (long long)s * D * D2;
    const T* wc = w_c + (long long)s * D * D;
    int len[ROWS];
    const int steps = row_lengths(lengths, row0, N, len);
    load_rows(h, states + (long long)s * N * D, row0, N, D);
    __syncthreads();
    for (int t = 0; t < steps; ++t) {
        const long long base = ((long long)t * S + s) * N + row0;     // row index of (t, s, row0)
        for (int j = threadIdx.x; j < D2; j += blockDim.x) {
            T acc[ROWS];
            row_dot(h, wur, D, D2, j, acc);
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D2 + j;
                const T gate = T(0.5) * tanh(x_ur[at] + acc[r]) + T(0.5);
                ur_all[at] = gate;
                if (j < D) {
                    u_s[r * D + j] = gate;
                } else {
                    const T v = gate * h[r * D + j - D];
                    rh[r * D + j - D] = v;
                    reset_h[(base + r) * D + j - D] = v;
                }
            }
        }
        __syncthreads();
        for (int j = threadIdx.x; j < D; j += blockDim.x) {
            T acc[ROWS];
            row_dot(rh, wc, D, D, j, acc);
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D + j;
                const T c = tanh(x_c[at] + acc[r]);
                const T h_prev = h[r * D + j], u = u_s[r * D + j];
                const T h_new = origin_mode ? c + u * (h_prev - c) : h_prev + u * (c - h_prev);
                c_all[at] = c;
                states[at + (long long)S * N * D] = h_new;
                h[r * D + j] = h_new;        // only this thread reads h[r, j] in this phase
            }
        }
        __syncthreads();
    }
}

// Backward: grad_states and the four factors (T, S, N, D) as in the NumPy loop; ur (T, S, N, 2D) gives r at
// column D + k.
// w_ur_t (S, 2D, D) and w_c_t (S, D, D) are the transposed weights, contiguous. grad_h (S, N, D) holds the
// gradient w.r.t. each row's final state on entry and w.r.t. h0 on exit.
extern "C" __global__ void oar_gru_backward(
        const T* __restrict__ grad_states, const T* __restrict__ factor_u, const T* __restrict__ factor_c,
        const T* __restrict__ factor_h, const T* __restrict__ factor_r, const T* __restrict__ ur,
        const T* __restrict__ w_ur_t, const T* __restrict__ w_c_t, const int* __restrict__ lengths,
        const int S, const int N, const int D, T* __restrict__ grad_ur, T* __restrict__ grad_c,
        T* __restrict__ grad_h) {
    extern __shared__ unsigned char shared_raw[];
    T* g = reinterpret_cast<T*>(shared_raw);          // (ROWS, D) dL/dh carried
    T* gx_ur = g + ROWS * D;                           // (ROWS, 2D) [gxu | gxr]
    T* gxc = gx_ur + ROWS * 2 * D;                     // (ROWS, D)
    const int s = blockIdx.y, row0 = blockIdx.x * ROWS, D2 = 2 * D;
    const T* wurt = w_ur_t + (long long)s * D2 * D;
    const T* wct = w_c_t + (long long)s * D * D;
    int len[ROWS];
    const int steps = row_lengths(lengths, row0, N, len);
    load_rows(g, grad_h + (long long)s * N * D, row0, N, D);
    __syncthreads();
    for (int t = steps - 1; t >= 0; --t) {
        const long long base = ((long long)t * S + s) * N + row0;
        for (int j = threadIdx.x; j < D; j += blockDim.x) {
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D + j;
                const T gh = g[r * D + j] + grad_states[at];
                const T gxu = gh * factor_u[at], gx_c = gh * factor_c[at];
                grad_ur[(base + r) * D2 + j] = gxu;
                grad_c[at] = gx_c;
                gx_ur[r * D2 + j] = gxu;
                gxc[r * D + j] = gx_c;
                g[r * D + j] = gh * factor_h[at];
            }
        }
        __syncthreads();
        for (int k = threadIdx.x; k < D; k += blockDim.x) {
            T acc[ROWS];
            row_dot(gxc, wct, D, D, k, acc);               // dL/d(r * h_prev)
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D + k;
                const T gxr = acc[r] * factor_r[at];
                grad_ur[(base + r) * D2 + D + k] = gxr;
                gx_ur[r * D2 + D + k] = gxr;
                g[r * D + k] += acc[r] * ur[(base + r) * D2 + D + k];
            }
        }
        __syncthreads();
        for (int k = threadIdx.x; k < D; k += blockDim.x) {
            T acc[ROWS];
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = T(0);
            for (int j = 0; j < D2; ++j) {
                const T w = wurt[(long long)j * D + k];
                #pragma unroll
                for (int r = 0; r < ROWS; ++r) acc[r] += gx_ur[r * D2 + j] * w;
            }
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t < len[r]) g[r * D + k] += acc[r];
            }
        }
        __syncthreads();
    }
    store_rows(grad_h + (long long)s * N * D, g, row0, N, D);
}
"""

_LSTM = r"""
// Forward: x (T, S, N, 4D) gates [c~ | i | f | o] with the bias, w (S, D, 4D), lengths (N,) steps of each row;
// hidden, cells (T+1, S, N, D) hold h0, c0 in [0] on entry; gates (T, S, N, 4D) receives the activations and
// tanh_c (T, S, N, D) tanh of each new cell. Rows past their length are not written.
extern "C" __global__ void oar_lstm_forward(
        const T* __restrict__ x, const T* __restrict__ w, const int* __restrict__ lengths, const int S,
        const int N, const int D, T* __restrict__ hidden, T* __restrict__ cells, T* __restrict__ gates,
        T* __restrict__ tanh_c) {
    extern __shared__ unsigned char shared_raw[];
    T* h = reinterpret_cast<T*>(shared_raw);          // (ROWS, D)
    T* c = h + ROWS * D;                               // (ROWS, D)
    T* a = c + ROWS * D;                               // (ROWS, 4D) activated gates of this step
    const int s = blockIdx.y, row0 = blockIdx.x * ROWS, D4 = 4 * D;
    const T* ws = w + (long long)s * D * D4;
    int len[ROWS];
    const int steps = row_lengths(lengths, row0, N, len);
    load_rows(h, hidden + (long long)s * N * D, row0, N, D);
    load_rows(c, cells + (long long)s * N * D, row0, N, D);
    __syncthreads();
    for (int t = 0; t < steps; ++t) {
        const long long base = ((long long)t * S + s) * N + row0;     // row index of (t, s, row0)
        for (int j = threadIdx.x; j < D4; j += blockDim.x) {
            T acc[ROWS];
            row_dot(h, ws, D, D4, j, acc);
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D4 + j;
                const T v = x[at] + acc[r];
                const T act = j < D ? tanh(v) : SIGMOID(v);
                gates[at] = act;
                a[r * D4 + j] = act;
            }
        }
        __syncthreads();
        for (int j = threadIdx.x; j < D; j += blockDim.x) {
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D + j;
                const T* ar = a + r * D4;
                const T c_new = ar[2 * D + j] * c[r * D + j] + ar[D + j] * ar[j];
                const T tc = tanh(c_new);
                c[r * D + j] = c_new;
                h[r * D + j] = ar[3 * D + j] * tc;
                tanh_c[at] = tc;
                cells[at + (long long)S * N * D] = c_new;
                hidden[at + (long long)S * N * D] = h[r * D + j];
            }
        }
        __syncthreads();
    }
}

// Backward: grad_states (T, S, N, D); gates (T, S, N, 4D), cells (T+1, S, N, D) and tanh_c (T, S, N, D) from
// the forward pass; w_t (S, 4D, D) the transposed weights, contiguous. grad_h, grad_c (S, N, D) hold the
// gradients w.r.t. each row's final states on entry and w.r.t. h0, c0 on exit; grad_x (T, S, N, 4D) receives
// the pre-activation gate gradients on the rows' own steps.
extern "C" __global__ void oar_lstm_backward(
        const T* __restrict__ grad_states, const T* __restrict__ gates, const T* __restrict__ cells,
        const T* __restrict__ tanh_c, const T* __restrict__ w_t, const int* __restrict__ lengths, const int S,
        const int N, const int D, T* __restrict__ grad_x, T* __restrict__ grad_h, T* __restrict__ grad_c) {
    extern __shared__ unsigned char shared_raw[];
    T* gh = reinterpret_cast<T*>(shared_raw);         // (ROWS, D)
    T* gc = gh + ROWS * D;                             // (ROWS, D)
    T* gx = gc + ROWS * D;                             // (ROWS, 4D)
    const int s = blockIdx.y, row0 = blockIdx.x * ROWS, D4 = 4 * D;
    const T* wts = w_t + (long long)s * D4 * D;
    int len[ROWS];
    const int steps = row_lengths(lengths, row0, N, len);
    load_rows(gh, grad_h + (long long)s * N * D, row0, N, D);
    load_rows(gc, grad_c + (long long)s * N * D, row0, N, D);
    __syncthreads();
    for (int t = steps - 1; t >= 0; --t) {
        const long long base = ((long long)t * S + s) * N + row0;
        for (int j = threadIdx.x; j < D; j += blockDim.x) {
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t >= len[r]) continue;
                const long long at = (base + r) * D + j;
                const T* ga = gates + (base + r) * D4;
                const T cand = ga[j], in_g = ga[D + j], forget_g = ga[2 * D + j], out_g = ga[3 * D + j];
                const T c_prev = cells[at], tc = tanh_c[at];
                const T g_h = gh[r * D + j] + grad_states[at];
                const T g_c = gc[r * D + j] + g_h * (out_g * (T(1) - tc * tc));
                T* gxr = gx + r * D4;
                gxr[j] = g_c * (in_g * (T(1) - cand * cand));
                gxr[D + j] = g_c * ((T(1) - in_g) * in_g * cand);
                gxr[2 * D + j] = g_c * ((T(1) - forget_g) * forget_g * c_prev);
                gxr[3 * D + j] = g_h * ((T(1) - out_g) * out_g * tc);
                T* out = grad_x + (base + r) * D4;
                out[j] = gxr[j];
                out[D + j] = gxr[D + j];
                out[2 * D + j] = gxr[2 * D + j];
                out[3 * D + j] = gxr[3 * D + j];
                gc[r * D + j] = g_c * forget_g;
            }
        }
        __syncthreads();
        for (int k = threadIdx.x; k < D; k += blockDim.x) {
            T acc[ROWS];
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] = T(0);
            for (int j = 0; j < D4; ++j) {
                const T w = wts[(long long)j * D + k];
                #pragma unroll
                for (int r = 0; r < ROWS; ++r) acc[r] += gx[r * D4 + j] * w;
            }
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (t < len[r]) gh[r * D + k] = acc[r];
            }
        }
        __syncthreads();
    }
    store_rows(grad_h + (long long)s * N * D, gh, row0, N, D);
    store_rows(grad_c + (long long)s * N * D, gc, row0, N, D);
}
"""

_SHARED_WIDTH = {  # kernel -> shared memory per row, in units of D elements
    "oar_gru_forward": 3, "oar_gru_backward": 4, "oar_lstm_forward": 6, "oar_lstm_backward": 6}


def rows_per_block(kernel, d, itemsize):
    """The rows one block of ``kernel`` handles (a power of two <= 8) for state size ``d``; 0 if one row's
    shared memory exceeds 48 KB (the caller then runs its step loop)."""
    per_row = _SHARED_WIDTH[kernel] * d * itemsize
    rows = MAX_ROWS
    while rows and rows * per_row > SHARED_BYTES:
        rows //= 2
    return rows


@functools.lru_cache(maxsize=None)
def _module(dtype_name, rows):
    """The compiled kernels for element type ``dtype_name`` ('float32' or 'float64') and ``rows`` per block."""
    cupy = backend.array_module("gpu")
    ctype = {"float32": "float", "float64": "double"}[dtype_name]
    source = f"typedef {ctype} T;\n#define ROWS {rows}\n" + _COMMON + _GRU + _LSTM
    return cupy.RawModule(code=source, options=("--std=c++14",))


def _launch(kernel, dtype, d, rows_count, runs, args):
    """Run ``kernel`` over ``rows_count`` rows (and ``runs`` runs) with its shared memory."""
    rows = rows_per_block(kernel, d, dtype.itemsize)
    function = _module(dtype.name, rows).get_function(kernel)
    blocks = (-(-rows_count // rows), runs)
    function(blocks, (THREADS,), args, shared_mem=_SHARED_WIDTH[kernel] * rows * d * dtype.itemsize)


def _lengths(active, n):
    """Steps of each of the ``n`` rows (int32, on the GPU) from the per-step active row counts."""
    counts = (numpy.arange(n)[None, :] < numpy.asarray(active)[:, None]).sum(axis=0)
    return backend.array_module("gpu").asarray(counts, dtype=numpy.int32)


def gru_forward_sequence(x_ur_half, x_c, active, w_ur_half, w_c, origin_mode, states, ur_all, c_all, reset_h):
    """The GRU forward loop of :mod:`framework.kernels.gru` in one launch (arguments as its ``_forward_cupy``)."""
    cupy = backend.array_module("gpu")
    num_steps, runs, n, d = x_c.shape
    args = (cupy.ascontiguousarray(x_ur_half), cupy.ascontiguousarray(x_c), cupy.ascontiguousarray(w_ur_half),
            cupy.ascontiguousarray(w_c), _lengths(active, n), numpy.int32(runs), numpy.int32(n), numpy.int32(d),
            numpy.int32(origin_mode), states, ur_all, c_all, reset_h)
    _launch("oar_gru_forward", x_c.dtype, d, n, runs, args)


def gru_backward_sequence(grad_states, factors, ur, active, w_ur_t, w_c_t, grad_ur, grad_c, grad_h):
    """The GRU BPTT loop in one launch: ``factors`` (u, c, h, r) as in :mod:`framework.kernels.gru`,
    ``ur`` the saved gates (T, S, N, 2D), transposed weights (S, 2D, D) and (S, D, D); writes grad_ur,
    grad_c and updates grad_h (S, N, D) in place."""
    cupy = backend.array_module("gpu")
    num_steps, runs, n, d = grad_c.shape
    contiguous = [cupy.ascontiguousarray(a) for a in (grad_states, *factors, ur, w_ur_t, w_c_t)]
    args = (*contiguous, _lengths(active, n), numpy.int32(runs), numpy.int32(n), numpy.int32(d), grad_ur, grad_c, grad_h)
    _launch("oar_gru_backward", grad_c.dtype, d, n, runs, args)


def lstm_forward_sequence(x, active, w, hidden, cells, gates, tanh_c):
    """The LSTM forward loop of :mod:`framework.kernels.lstm` in one launch (x not halved; hidden/cells[0] hold
    h0/c0)."""
    cupy = backend.array_module("gpu")
    num_steps, runs, n, width = x.shape
    d = width // 4
    args = (cupy.ascontiguousarray(x), cupy.ascontiguousarray(w), _lengths(active, n), numpy.int32(runs),
            numpy.int32(n), numpy.int32(d), hidden, cells, gates, tanh_c)
    _launch("oar_lstm_forward", x.dtype, d, n, runs, args)


def lstm_backward_sequence(grad_states, gates, cells, tanh_c, active, w_t, grad_x, grad_h, grad_c):
    """The LSTM BPTT loop in one launch; grad_h, grad_c (S, N, D) are updated in place (final states -> initial)."""
    cupy = backend.array_module("gpu")
    num_steps, runs, n, width = gates.shape
    d = width // 4
    contiguous = [cupy.ascontiguousarray(a) for a in (grad_states, gates, cells, tanh_c, w_t)]
    args = (*contiguous, _lengths(active, n), numpy.int32(runs), numpy.int32(n), numpy.int32(d), grad_x, grad_h,
            grad_c)
    _launch("oar_lstm_backward", gates.dtype, d, n, runs, args)
