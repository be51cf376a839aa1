"""LSTM recursion over time-major runs of one or more directions, forward and backward (BPTT).

Conventions (PaddlePaddle's ``lstm`` op without peepholes). The projected input,
bias already added, comes as one time-major array ``x`` (T, S, N, 4D) over S
independent runs (the directions of one bidirectional layer, each with its own
weights) of N rows, gate columns in Paddle's order ``[candidate | input | forget
| output]``; the recurrent weight of run s is ``w[s]`` (D, 4D), same columns.
Per step, with h_prev, c_prev the states carried in:

    a       = x[t, s] + h_prev @ w[s]
    c~      = tanh(a[:, :D]);  i = sigmoid(a[:, D:2D]);  f = sigmoid(a[:, 2D:3D]);  o = sigmoid(a[:, 3D:])
    c       = f * c_prev + i * c~
    h       = o * tanh(c)

**Active rows**, as in :mod:`framework.kernels.gru`: the rows are sorted by
decreasing length and step t computes rows ``[:active[t]]`` of every run only;
other rows are never read or written at step t (their states stay zero, their
input gradients zero), so padding costs nothing.

Each step is one batched GEMM for all S runs into the step's gate buffer, then
the cell math in place. The sigmoid is ``0.5 * tanh(z / 2) + 0.5`` with the
halving folded into the input, i, f and o columns of ``x`` and ``w`` (exact in
binary floating point), so one ``tanh`` call activates all four gates; tanh(c)
is kept for the backward pass. The backward loop works in place on buffers of
one step's size, which stay in cache (precomputing the gradient-free factors
for all steps at once, as the GRU does, streams several arrays of the whole
sequence through memory and was measured slower here). On the GPU the whole loop is one kernel launch
when the state fits a block's shared memory
(:mod:`framework.kernels.recurrent_cuda`); the same step loop, on CuPy, is the
fallback.
"""
import numpy

from .. import backend
from .recurrent_cuda import lstm_backward_sequence, lstm_forward_sequence, rows_per_block
from .runs import segments

__all__ = ["lstm_forward", "lstm_backward"]


def lstm_forward(x, active, w, h0, c0):
    """Run the recursion.

    Shapes: x (T, S, N, 4D) (overwritten: its i, f, o columns halved), active: list of T
    non-increasing ints, w (S, D, 4D), h0 and c0 (S, N, D).
    Returns (hidden, cells, gates, tanh_c): hidden and cells (T+1, S, N, D) with [0]
    the initial states and [t+1] the states after step t (0 on rows not active at
    step t); gates (T, S, N, 4D), the activated [c~ | i | f | o]; tanh_c (T, S, N, D),
    tanh of the new cell; all kept for :func:`lstm_backward`.
    """
    xp = backend.get_array_module(x)
    num_steps, runs, n, width = x.shape
    d = width // 4
    hidden = xp.zeros((num_steps + 1, runs, n, d), dtype=x.dtype)
    cells = xp.zeros(hidden.shape, dtype=hidden.dtype)
    hidden[0], cells[0] = h0, c0
    gates = xp.zeros(x.shape, dtype=x.dtype)
    tanh_c = xp.zeros((num_steps, runs, n, d), dtype=x.dtype)
    if xp is not numpy and rows_per_block("oar_lstm_forward", d, x.itemsize):
        lstm_forward_sequence(x, active, w, hidden, cells, gates, tanh_c)
        return hidden, cells, gates, tanh_c
    x[..., d:] *= 0.5
    w_half = w.copy()
    w_half[..., d:] *= 0.5
    _forward_loop(xp, x, active, w_half, hidden, cells, gates, tanh_c)
    return hidden, cells, gates, tanh_c


def lstm_backward(hidden, cells, gates, tanh_c, active, w, grad_states, grad_last_h, grad_last_c):
    """Backpropagate through the recursion.

    Shapes: hidden, cells, gates, tanh_c from :func:`lstm_forward`; active and w as given
    to it; grad_states (T, S, N, D), the gradient w.r.t. hidden[1:] (read on active
    rows only); grad_last_h, grad_last_c (S, N, D), the gradients w.r.t. each row's
    final states (after its last active step; h0, c0 for a row never active).
    Returns (grad_x (T, S, N, 4D), zero on inactive rows; grad_w (S, D, 4D);
    grad_h0 (S, N, D); grad_c0 (S, N, D)).
    """
    xp = backend.get_array_module(gates)
    num_steps, runs, n, width = gates.shape
    grad_x = xp.zeros(gates.shape, dtype=gates.dtype)
    grad_h = grad_last_h.copy()     # dL/d(states carried out of step t), for the active rows
    grad_c = grad_last_c.copy()
    w_t = w.swapaxes(1, 2)
    if xp is not numpy and rows_per_block("oar_lstm_backward", width // 4, gates.itemsize):
        lstm_backward_sequence(grad_states, gates, cells, tanh_c, active, w_t, grad_x, grad_h, grad_c)
    else:
        _backward_loop(xp, grad_states, cells, gates, tanh_c, active, w_t, grad_x, grad_h, grad_c)
    rows = num_steps * n                      # weight gradients: one GEMM per run over all steps and rows

    def run_major(a):
        return xp.ascontiguousarray(a.swapaxes(0, 1)).reshape(runs, rows, -1)     # (S, T*N, F)

    grad_w = xp.matmul(run_major(hidden[:-1]).swapaxes(1, 2), run_major(grad_x))
    return grad_x, grad_w, grad_h, grad_c


def _forward_loop(xp, x, active, w_half, hidden, cells, gates, tanh_c):
    """The forward loop: per step one GEMM and nine in-place ufunc calls over the active rows of all runs."""
    runs, n, width = x.shape[1:]
    d = width // 4
    product = xp.empty((runs, n, d), dtype=x.dtype)
    arrays = (hidden[:-1], hidden[1:], cells[:-1], cells[1:], x, gates, tanh_c)
    for m, blocks in segments(active, n, arrays):
        i_times_candidate = product if m == n else product[:, :m]
        for h_prev, h, c_prev, c, x_t, g, tc in zip(*blocks):
            xp.matmul(h_prev, w_half, out=g)
            g += x_t
            xp.tanh(g, out=g)
            sigmoids = g[..., d:]
            sigmoids *= 0.5
            sigmoids += 0.5                                    # [c~ | i | f | o]
            xp.multiply(g[..., 2 * d:3 * d], c_prev, out=c)
            xp.multiply(g[..., d:2 * d], g[..., :d], out=i_times_candidate)
            c += i_times_candidate
            xp.tanh(c, out=tc)
            xp.multiply(g[..., 3 * d:], tc, out=h)


def _backward_loop(xp, grad_states, cells, gates, tanh_c, active, w_t, grad_x, grad_h, grad_c):
    """The BPTT loop, from the last step down: one GEMM and twenty-two in-place ufunc calls per step, on
    buffers the size of one step's state (they stay in cache).

    On entry to step t ``grad_h``/``grad_c`` hold dL/d(states carried out of step t)
    for its active rows; on exit dL/d(states carried in).
    """
    runs, n, width = gates.shape[1:]
    d = width // 4
    scratch = xp.empty((runs, n, d), dtype=gates.dtype)
    blocks = [gates[..., k * d:(k + 1) * d] for k in range(4)] + [grad_x[..., k * d:(k + 1) * d] for k in range(4)]
    arrays = (grad_states, cells[:-1], tanh_c, *blocks, grad_x)
    subtract, multiply = xp.subtract, xp.multiply
    for m, steps in reversed(segments(active, n, arrays)):
        g_h, g_c = (grad_h, grad_c) if m == n else (grad_h[:, :m], grad_c[:, :m])
        t = scratch if m == n else scratch[:, :m]
        for grad_out, c_prev, tc, cand, i, f, o, gx_cand, gx_i, gx_f, gx_o, gx in zip(*(b[::-1] for b in steps)):
            g_h += grad_out                                    # dL/dh of this step
            subtract(1, o, out=t)
            t *= o
            t *= tc
            multiply(g_h, t, out=gx_o)                         # o's pre-activation gradient
            multiply(tc, tc, out=t)
            subtract(1, t, out=t)
            t *= o
            t *= g_h
            g_c += t                                           # dL/dc of this step
            multiply(cand, cand, out=t)
            subtract(1, t, out=t)
            t *= i
            multiply(g_c, t, out=gx_cand)
            subtract(1, i, out=t)
            t *= i
            t *= cand
            multiply(g_c, t, out=gx_i)
            subtract(1, f, out=t)
            t *= f
            t *= c_prev
            multiply(g_c, t, out=gx_f)
            g_c *= f                                           # dL/dc_prev
            xp.matmul(gx, w_t, out=g_h)                        # dL/dh_prev
