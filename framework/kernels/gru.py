"""GRU recursion over time-major runs of one or more directions, forward and backward (BPTT).

Conventions (PaddlePaddle's ``gru`` op). The projected input, bias already
added, comes as two time-major arrays over S independent runs (the directions
of one bidirectional layer, each with its own weights) of N rows: ``x_ur``
(T, S, N, 2D), the update and reset columns ``[u | r]``, and ``x_c`` (T, S, N,
D), the candidate columns. The recurrent weight of run s is given as its two
blocks of the flat (D, 3D) buffer, ``w_ur[s]`` (D, 2D) and ``w_c[s]`` (D, D).
Per step, with h_prev the state carried in:

    [u | r] = sigmoid(x_ur[t, s] + h_prev @ w_ur[s])
    c       = tanh(x_c[t, s] + (r * h_prev) @ w_c[s])
    h       = h_prev + u * (c - h_prev)        origin_mode False: (1-u) h_prev + u c
    h       = c + u * (h_prev - c)             origin_mode True:  u h_prev + (1-u) c

**Active rows.** The rows are sorted by decreasing length and ``active[t]``
(a host list of ints, non-increasing) says how many rows still run at step t:
step t computes rows ``[:active[t]]`` of every run, so padding costs nothing.
Rows past ``active[t]`` are never read or written at step t; their states
stay zero and their input gradients zero.

Each step is two batched GEMMs (all S runs in one ``matmul``) plus the gate
math. The NumPy version runs it in place on ``out=`` buffers, walking per-step
views of contiguous time-major arrays (few NumPy calls per step, no
allocation; the ``[u | r]`` and ``c`` blocks live in separate arrays because
ufuncs on contiguous rows are markedly faster than on column slices); the
CuPy version runs the same math as ``ElementwiseKernel``s between the same
GEMMs. The sigmoid is ``0.5 * tanh(z / 2) + 0.5``, with the halving folded into
the inputs: ``x_ur`` and ``w_ur`` are scaled by 0.5 once per call (exact in
binary floating point). The backward pass computes every factor that does not
depend on the incoming gradient for all steps at once, before its loop. On the
GPU the whole loop is one kernel launch when the state fits a block's shared
memory (:mod:`framework.kernels.recurrent_cuda`); the step loop is the fallback.
"""
import functools

import numpy

from .. import backend
from .recurrent_cuda import gru_backward_sequence, gru_forward_sequence, rows_per_block
from .runs import segments

__all__ = ["gru_forward", "gru_backward"]


def gru_forward(x_ur, x_c, active, w_ur, w_c, h0, origin_mode=False):
    """Run the recursion.

    Shapes: x_ur (T, S, N, 2D) (overwritten: halved), x_c (T, S, N, D), active: list
    of T non-increasing ints, w_ur (S, D, 2D), w_c (S, D, D), h0 (S, N, D).
    Returns (states, ur, c, reset_h): states (T+1, S, N, D) with states[0] = h0 and
    states[t+1] the state after step t (0 on rows not active at step t); ur
    (T, S, N, 2D) and c (T, S, N, D), the activated gates; reset_h (T, S, N, D),
    r * h_prev; all kept for :func:`gru_backward`.
    """
    xp = backend.get_array_module(x_c)
    num_steps, runs, n, d = x_c.shape
    x_ur *= 0.5
    states = xp.zeros((num_steps + 1, runs, n, d), dtype=x_c.dtype)
    states[0] = h0
    ur = xp.zeros(x_ur.shape, dtype=x_ur.dtype)
    c = xp.zeros(x_c.shape, dtype=x_c.dtype)
    reset_h = xp.zeros(x_c.shape, dtype=x_c.dtype)
    if xp is numpy:
        loop = _forward_numpy
    else:
        loop = gru_forward_sequence if rows_per_block("oar_gru_forward", d, x_c.itemsize) else _forward_cupy
    loop(x_ur, x_c, active, w_ur * 0.5, w_c, bool(origin_mode), states, ur, c, reset_h)
    return states, ur, c, reset_h


def gru_backward(states, ur, c, reset_h, active, w_ur, w_c, grad_states, grad_last, origin_mode=False):
    """Backpropagate through the recursion.

    Shapes: states, ur, c, reset_h from :func:`gru_forward`; active, w_ur, w_c as
    given to it; grad_states (T, S, N, D), the gradient w.r.t. states[1:] (read
    on active rows only); grad_last (S, N, D), the gradient w.r.t. each row's
    final state (the state after its last active step; h0 for a row never active).
    Returns (grad_x_ur (T, S, N, 2D), grad_x_c (T, S, N, D), both zero on inactive
    rows; grad_w_ur (S, D, 2D); grad_w_c (S, D, D); grad_h0 (S, N, D)).
    """
    xp = backend.get_array_module(c)
    num_steps, runs, n, d = c.shape
    factors = _backward_factors(xp, states, ur, c, origin_mode)
    grad_ur = xp.zeros(ur.shape, dtype=ur.dtype)
    grad_c = xp.zeros(c.shape, dtype=c.dtype)
    grad_h = grad_last.copy()                 # dL/d(state carried out of step t), for the active rows
    if xp is not numpy and rows_per_block("oar_gru_backward", d, c.itemsize):
        gru_backward_sequence(grad_states, factors, ur, active, w_ur.swapaxes(1, 2), w_c.swapaxes(1, 2), grad_ur,
                              grad_c, grad_h)
    else:
        loop = _backward_numpy if xp is numpy else _backward_cupy
        loop(grad_states, factors, ur[..., d:], active, w_ur.swapaxes(1, 2), w_c.swapaxes(1, 2), grad_ur, grad_c,
             grad_h)
    rows = num_steps * n                      # weight gradients: one GEMM per run over all steps and rows

    def run_major(a):
        return xp.ascontiguousarray(a.swapaxes(0, 1)).reshape(runs, rows, -1)     # (S, T*N, F)

    grad_w_ur = xp.matmul(run_major(states[:-1]).swapaxes(1, 2), run_major(grad_ur))
    grad_w_c = xp.matmul(run_major(reset_h).swapaxes(1, 2), run_major(grad_c))
    return grad_ur, grad_c, grad_w_ur, grad_w_c, grad_h


def _backward_factors(xp, states, ur, c, origin_mode):
    """The derivatives of each step's new state that do not depend on the incoming gradient, each (T, S, N, D).

    ``factor_u`` = dh/du * u(1-u), ``factor_c`` = dh/dc * (1-c^2), ``factor_h`` =
    dh/dh_prev along the mix, ``factor_r`` = h_prev * r(1-r) (times dL/d(r h_prev)
    it is the reset gate's pre-activation gradient).
    """
    d = c.shape[-1]
    u, r = ur[..., :d], ur[..., d:]
    h_prev = states[:-1]
    one_minus_u = 1 - u
    if origin_mode:
        factor_u, factor_c, factor_h = h_prev - c, one_minus_u, u
    else:
        factor_u, factor_c, factor_h = c - h_prev, u.copy(), one_minus_u
    factor_u *= u
    factor_u *= one_minus_u
    factor_c *= 1 - c * c
    factor_r = h_prev * r
    factor_r *= 1 - r
    return factor_u, factor_c, factor_h, factor_r


# ---- NumPy ------------------------------------------------------------------

def _forward_numpy(x_ur, x_c, active, w_ur_half, w_c, origin_mode, states, ur_all, c_all, reset_h):
    """The forward loop: per step two GEMMs and ten in-place ufunc calls over the active rows of all runs."""
    n, d = x_c.shape[2], x_c.shape[3]
    a_ur = numpy.empty(x_ur.shape[1:], dtype=x_ur.dtype)
    a_c = numpy.empty(x_c.shape[1:], dtype=x_c.dtype)
    matmul, add, subtract, multiply, tanh = numpy.matmul, numpy.add, numpy.subtract, numpy.multiply, numpy.tanh
    arrays = (states[:-1], states[1:], x_ur, x_c, ur_all, ur_all[..., :d], ur_all[..., d:], c_all, reset_h)
    for m, blocks in segments(active, n, arrays):
        ar, ac = (a_ur, a_c) if m == n else (a_ur[:, :m], a_c[:, :m])
        for h_prev, h, x_ur_t, x_c_t, ur, u, r, c, rh in zip(*blocks):
            matmul(h_prev, w_ur_half, out=ar)
            add(x_ur_t, ar, out=ur)
            tanh(ur, out=ur)
            ur *= 0.5
            ur += 0.5                                   # [u | r] = sigmoid
            multiply(r, h_prev, out=rh)
            matmul(rh, w_c, out=ac)
            add(x_c_t, ac, out=c)
            tanh(c, out=c)
            if origin_mode:
                subtract(h_prev, c, out=h)
                h *= u
                h += c
            else:
                subtract(c, h_prev, out=h)
                h *= u
                h += h_prev


def _backward_numpy(grad_states, factors, r_all, active, w_ur_t, w_c_t, grad_ur, grad_c, grad_h):
    """The BPTT loop, from the last step down: two GEMMs and eight in-place ufunc calls per step.

    On entry to step t ``grad_h`` holds dL/d(state carried out of step t) for its
    active rows; on exit dL/d(state carried in).
    """
    num_steps, runs, n, d = grad_c.shape
    matmul, multiply = numpy.matmul, numpy.multiply
    grad_reset_h = numpy.empty((runs, n, d), dtype=grad_c.dtype)
    grad_from_ur = numpy.empty((runs, n, d), dtype=grad_c.dtype)
    arrays = (grad_states, *factors, r_all, grad_ur[..., :d], grad_ur[..., d:], grad_c, grad_ur)
    for m, blocks in reversed(segments(active, n, arrays)):
        g = grad_h if m == n else grad_h[:, :m]
        grh, gur = (grad_reset_h, grad_from_ur) if m == n else (grad_reset_h[:, :m], grad_from_ur[:, :m])
        for grad_out, factor_u, factor_c, factor_h, factor_r, r, gxu, gxr, gxc, gx_ur in zip(*(b[::-1] for b in blocks)):
            g += grad_out                               # dL/dh of this step
            multiply(g, factor_u, out=gxu)
            multiply(g, factor_c, out=gxc)
            g *= factor_h
            matmul(gxc, w_c_t, out=grh)                 # dL/d(r * h_prev)
            multiply(grh, factor_r, out=gxr)
            grh *= r
            g += grh
            matmul(gx_ur, w_ur_t, out=gur)
            g += gur


# ---- CuPy -------------------------------------------------------------------
# The same loops; the gate math of a step is one ElementwiseKernel (one thread
# per element of the (S, m, D) active state), reading and writing the
# [u | r | c] column blocks through strided views. GEMM results are copied into
# the strided views (cupy.matmul writes contiguous arrays).

_UPDATE_RESET = """
    u = T(0.5) * tanh(x_u + a_u) + T(0.5);
    r = T(0.5) * tanh(x_r + a_r) + T(0.5);
    reset_h = r * h_prev;
"""

_CANDIDATE_STATE = """
    c = tanh(x_c + a_c);
    h = origin_mode ? c + u * (h_prev - c) : h_prev + u * (c - h_prev);
"""

_STATE_GRAD = """
    const T g = grad_h + grad_out;
    grad_xu = g * factor_u;
    grad_xc = g * factor_c;
    grad_h = g * factor_h;
"""

_RESET_GRAD = """
    grad_xr = grad_reset_h * factor_r;
    grad_h += grad_reset_h * r;
"""


@functools.lru_cache(maxsize=None)
def _cupy_kernels():
    """The four step kernels as CuPy ElementwiseKernels."""
    cupy = backend.array_module("gpu")
    return (cupy.ElementwiseKernel("T x_u, T x_r, T a_u, T a_r, T h_prev", "T u, T r, T reset_h",
                                   _UPDATE_RESET, "oar_gru_update_reset"),
            cupy.ElementwiseKernel("T x_c, T a_c, T u, T h_prev, bool origin_mode", "T c, T h",
                                   _CANDIDATE_STATE, "oar_gru_candidate_state"),
            cupy.ElementwiseKernel("T grad_out, T factor_u, T factor_c, T factor_h", "T grad_xu, T grad_xc, T grad_h",
                                   _STATE_GRAD, "oar_gru_state_grad"),
            cupy.ElementwiseKernel("T grad_reset_h, T factor_r, T r", "T grad_xr, T grad_h",
                                   _RESET_GRAD, "oar_gru_reset_grad"))


def _forward_cupy(x_ur, x_c, active, w_ur_half, w_c, origin_mode, states, ur_all, c_all, reset_h):
    """The forward loop of :func:`_forward_numpy` with CuPy kernels."""
    cupy = backend.array_module("gpu")
    update_reset, candidate_state, _, _ = _cupy_kernels()
    n, d = x_c.shape[2], x_c.shape[3]
    arrays = (states[:-1], states[1:], x_ur[..., :d], x_ur[..., d:], x_c, ur_all[..., :d], ur_all[..., d:], c_all,
              reset_h)
    for _, blocks in segments(active, n, arrays):
        for h_prev, h, x_u, x_r, x_c_t, u, r, c, rh in zip(*blocks):
            a_ur = cupy.matmul(h_prev, w_ur_half)
            update_reset(x_u, x_r, a_ur[..., :d], a_ur[..., d:], h_prev, u, r, rh)
            candidate_state(x_c_t, cupy.matmul(rh, w_c), u, h_prev, origin_mode, c, h)


def _backward_cupy(grad_states, factors, r_all, active, w_ur_t, w_c_t, grad_ur, grad_c, grad_h):
    """The BPTT loop of :func:`_backward_numpy` with CuPy kernels."""
    cupy = backend.array_module("gpu")
    _, _, state_grad, reset_grad = _cupy_kernels()
    n, d = grad_c.shape[2], grad_c.shape[3]
    arrays = (grad_states, *factors, r_all, grad_ur[..., :d], grad_ur[..., d:], grad_c, grad_ur)
    for m, blocks in reversed(segments(active, n, arrays)):
        g = grad_h if m == n else grad_h[:, :m]
        for grad_out, factor_u, factor_c, factor_h, factor_r, r, gxu, gxr, gxc, gx_ur in zip(*(b[::-1] for b in blocks)):
            state_grad(grad_out, factor_u, factor_c, factor_h, gxu, gxc, g)
            reset_grad(cupy.matmul(gxc, w_c_t), factor_r, r, gxr, g)
            g += cupy.matmul(gx_ur, w_ur_t)
