"""GRU recursion over time-major runs of one or more directions, forward and backward (BPTT).

Conventions (PaddlePaddle's ``gru`` op). ``x`` is (S, T, N, 3D): S independent
runs (the directions of one bidirectional layer, each with its own weights),
the projected input with the bias already added, columns ``[u | r | c]``
(update, reset, candidate). The recurrent weight of run s is given as its two
blocks of the flat (D, 3D) buffer, ``w_ur[s]`` (D, 2D) and ``w_c[s]`` (D, D).
Per step, with h_prev the state carried in:

    [u | r] = sigmoid(x[s, t, :, :2D] + h_prev @ w_ur[s])
    c       = tanh(x[s, t, :, 2D:] + (r * h_prev) @ w_c[s])
    h       = h_prev + u * (c - h_prev)        origin_mode False: (1-u) h_prev + u c
    h       = c + u * (h_prev - c)             origin_mode True:  u h_prev + (1-u) c

**Active rows.** The rows are sorted by decreasing length and ``active[t]``
(a host list of int, non-increasing) says how many rows are still running at
step t: step t computes rows ``[:active[t]]`` only, of every run at once, so
padding costs nothing. Rows past ``active[t]`` are never read or written at
step t; their states stay as initialised (zeros) and their gradients zero.

Each step does two batched GEMMs (all S runs in one ``matmul``) and fused
elementwise gate math: a NumPy function working in place on ``out=`` buffers,
or a CuPy ``ElementwiseKernel`` with the same signature (:func:`_steps`). The
sigmoid is ``0.5 * tanh(z / 2) + 0.5``; the halving is folded into the inputs
(``x[..., :2D]`` and ``w_ur`` are scaled by 0.5 once per call, which is exact in
binary floating point). The backward pass computes every factor that does not
depend on the incoming gradient for all steps at once, before its time loop.
"""
import functools
import types

import numpy

from .. import backend

__all__ = ["gru_forward", "gru_backward"]


def gru_forward(x, active, w_ur, w_c, h0, origin_mode=False):
    """Run the recursion.

    Shapes: x (S, T, N, 3D) (overwritten: its ``[u | r]`` columns are halved),
    active: list of T non-increasing ints, w_ur (S, D, 2D), w_c (S, D, D), h0 (S, N, D).
    Returns (states, gates, reset_h): states (S, T+1, N, D) with states[:, 0] = h0 and
    states[:, t+1] the state after step t (0 for rows not active at step t);
    gates (S, T, N, 3D), the activated [u | r | c]; reset_h (S, T, N, D), r * h_prev;
    all kept for :func:`gru_backward`.
    """
    xp = backend.get_array_module(x)
    steps = _steps(xp)
    runs, num_steps, n, width = x.shape
    d = width // 3
    x[..., :2 * d] *= 0.5
    w_ur_half = w_ur * 0.5
    states = xp.zeros((runs, num_steps + 1, n, d), dtype=x.dtype)
    states[:, 0] = h0
    gates = xp.zeros_like(x)
    reset_h = xp.zeros((runs, num_steps, n, d), dtype=x.dtype)
    a_ur = xp.empty((runs, n, 2 * d), dtype=x.dtype)
    a_c = xp.empty((runs, n, d), dtype=x.dtype)
    for t, m in enumerate(active):
        if m == 0:
            break
        h_prev, g = states[:, t, :m], gates[:, t, :m]
        steps.matmul(h_prev, w_ur_half, a_ur[:, :m])
        steps.update_reset(x[:, t, :m, :2 * d], a_ur[:, :m], h_prev, g[..., :2 * d], reset_h[:, t, :m])
        steps.matmul(reset_h[:, t, :m], w_c, a_c[:, :m])
        steps.candidate_state(x[:, t, :m, 2 * d:], a_c[:, :m], g[..., :d], h_prev, origin_mode,
                              g[..., 2 * d:], states[:, t + 1, :m])
    return states, gates, reset_h


def gru_backward(states, gates, reset_h, active, w_ur, w_c, grad_states, grad_last, origin_mode=False):
    """Backpropagate through the recursion.

    Shapes: states, gates, reset_h from :func:`gru_forward`; active, w_ur, w_c as
    given to it; grad_states (S, T, N, D), the gradient w.r.t. states[:, 1:] (read
    on active rows only); grad_last (S, N, D), the gradient w.r.t. each row's
    final state (the state after its last active step; h0 for a row never active).
    Returns (grad_x (S, T, N, 3D), zero on inactive rows; grad_w_ur (S, D, 2D);
    grad_w_c (S, D, D); grad_h0 (S, N, D)).
    """
    xp = backend.get_array_module(gates)
    steps = _steps(xp)
    runs, num_steps, n, width = gates.shape
    d = width // 3
    factor_u, factor_c, factor_h, factor_r = _backward_factors(xp, states, gates, origin_mode)
    r = gates[..., d:2 * d]
    grad_x = xp.zeros_like(gates)
    grad_h = grad_last.copy()                 # dL/d(state carried out of step t), for the active rows
    grad_reset_h = xp.empty((runs, n, d), dtype=gates.dtype)
    grad_h_from_ur = xp.empty((runs, n, d), dtype=gates.dtype)
    w_c_t, w_ur_t = w_c.swapaxes(1, 2), w_ur.swapaxes(1, 2)
    for t in range(num_steps - 1, -1, -1):
        m = active[t]
        if m == 0:
            continue
        gx = grad_x[:, t, :m]
        steps.state_grad(grad_states[:, t, :m], factor_u[:, t, :m], factor_c[:, t, :m], factor_h[:, t, :m],
                         gx[..., :d], gx[..., 2 * d:], grad_h[:, :m])
        steps.matmul(gx[..., 2 * d:], w_c_t, grad_reset_h[:, :m])
        steps.reset_grad(grad_reset_h[:, :m], factor_r[:, t, :m], r[:, t, :m], gx[..., d:2 * d], grad_h[:, :m])
        steps.matmul(gx[..., :2 * d], w_ur_t, grad_h_from_ur[:, :m])
        grad_h[:, :m] += grad_h_from_ur[:, :m]
    rows = num_steps * n
    grad_w_ur = xp.matmul(states[:, :-1].reshape(runs, rows, d).swapaxes(1, 2),
                          grad_x[..., :2 * d].reshape(runs, rows, 2 * d))
    grad_w_c = xp.matmul(reset_h.reshape(runs, rows, d).swapaxes(1, 2), grad_x[..., 2 * d:].reshape(runs, rows, d))
    return grad_x, grad_w_ur, grad_w_c, grad_h


def _backward_factors(xp, states, gates, origin_mode):
    """The derivatives of each step's new state that do not depend on the incoming gradient, all (S, T, N, D).

    ``factor_u`` = dh/du * u(1-u), ``factor_c`` = dh/dc * (1-c^2), ``factor_h`` =
    dh/dh_prev along the mix, ``factor_r`` = h_prev * r(1-r) (times dL/d(r h_prev)
    it is the reset gate's pre-activation gradient).
    """
    d = gates.shape[-1] // 3
    u, r, c = gates[..., :d], gates[..., d:2 * d], gates[..., 2 * d:]
    h_prev = states[:, :-1]
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

def _matmul_numpy(a, b, out):
    """out = a @ b for stacks (S, m, k) @ (S, k, n), written into the view ``out``."""
    numpy.matmul(a, b, out=out)


def _update_reset_numpy(x_ur, a_ur, h_prev, ur, reset_h):
    """ur = 0.5 tanh(x_ur + a_ur) + 0.5 (= [u | r], the inputs being halved); reset_h = r * h_prev."""
    numpy.add(x_ur, a_ur, out=ur)
    numpy.tanh(ur, out=ur)
    ur *= 0.5
    ur += 0.5
    numpy.multiply(ur[..., h_prev.shape[-1]:], h_prev, out=reset_h)


def _candidate_state_numpy(x_c, a_c, u, h_prev, origin_mode, c, h):
    """c = tanh(x_c + a_c); h = the GRU mix of h_prev and c."""
    numpy.add(x_c, a_c, out=c)
    numpy.tanh(c, out=c)
    if origin_mode:
        numpy.subtract(h_prev, c, out=h)
        h *= u
        h += c
    else:
        numpy.subtract(c, h_prev, out=h)
        h *= u
        h += h_prev


def _state_grad_numpy(grad_out, factor_u, factor_c, factor_h, grad_xu, grad_xc, grad_h):
    """g = grad_h + grad_out (dL/dh of the step); grad_xu = g factor_u; grad_xc = g factor_c; grad_h = g factor_h."""
    grad_h += grad_out
    numpy.multiply(grad_h, factor_u, out=grad_xu)
    numpy.multiply(grad_h, factor_c, out=grad_xc)
    grad_h *= factor_h


def _reset_grad_numpy(grad_reset_h, factor_r, r, grad_xr, grad_h):
    """grad_xr = dL/d(r h_prev) * factor_r; adds dL/d(r h_prev) * r to grad_h (overwrites grad_reset_h)."""
    numpy.multiply(grad_reset_h, factor_r, out=grad_xr)
    grad_reset_h *= r
    grad_h += grad_reset_h


_NUMPY_STEPS = types.SimpleNamespace(matmul=_matmul_numpy, update_reset=_update_reset_numpy,
                                     candidate_state=_candidate_state_numpy, state_grad=_state_grad_numpy,
                                     reset_grad=_reset_grad_numpy)


# ---- CuPy -------------------------------------------------------------------
# One thread per element of the (S, m, D) active state; the [u | r | c] column
# blocks are passed as strided views, which ElementwiseKernel reads and writes
# in place. grad_h is an output that each thread reads before it writes it.

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
def _cupy_steps():
    """The step functions on CuPy (ElementwiseKernels and matmul), with the NumPy signatures."""
    cupy = backend.array_module("gpu")
    update_reset = cupy.ElementwiseKernel(
        "T x_u, T x_r, T a_u, T a_r, T h_prev", "T u, T r, T reset_h", _UPDATE_RESET, "oar_gru_update_reset")
    candidate_state = cupy.ElementwiseKernel(
        "T x_c, T a_c, T u, T h_prev, bool origin_mode", "T c, T h", _CANDIDATE_STATE, "oar_gru_candidate_state")
    state_grad = cupy.ElementwiseKernel(
        "T grad_out, T factor_u, T factor_c, T factor_h", "T grad_xu, T grad_xc, T grad_h",
        _STATE_GRAD, "oar_gru_state_grad")
    reset_grad = cupy.ElementwiseKernel(
        "T grad_reset_h, T factor_r, T r", "T grad_xr, T grad_h", _RESET_GRAD, "oar_gru_reset_grad")

    def matmul_cupy(a, b, out):
        out[...] = cupy.matmul(a, b)          # out is a strided view; cupy.matmul writes contiguous results

    def update_reset_cupy(x_ur, a_ur, h_prev, ur, reset_h):
        d = h_prev.shape[-1]
        update_reset(x_ur[..., :d], x_ur[..., d:], a_ur[..., :d], a_ur[..., d:], h_prev, ur[..., :d], ur[..., d:],
                     reset_h)

    def candidate_state_cupy(x_c, a_c, u, h_prev, origin_mode, c, h):
        candidate_state(x_c, a_c, u, h_prev, bool(origin_mode), c, h)

    def reset_grad_cupy(grad_reset_h, factor_r, r, grad_xr, grad_h):
        reset_grad(grad_reset_h, factor_r, r, grad_xr, grad_h)

    return types.SimpleNamespace(matmul=matmul_cupy, update_reset=update_reset_cupy,
                                 candidate_state=candidate_state_cupy, state_grad=state_grad,
                                 reset_grad=reset_grad_cupy)


def _steps(xp):
    """The step functions for array module ``xp``."""
    return _NUMPY_STEPS if xp is numpy else _cupy_steps()
