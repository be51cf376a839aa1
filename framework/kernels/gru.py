"""GRU recursion over a time-major, left-aligned batch, forward and backward (BPTT).

Conventions (PaddlePaddle's ``gru`` op). ``x`` is (T, N, 3D): the projected
input with the bias already added, columns ``[u | r | c]`` (update, reset,
candidate). The recurrent weight is given as its two blocks of the flat
(D, 3D) buffer, ``w_ur`` (D, 2D) and ``w_c`` (D, D). Per step, with h_prev the
state carried in:

    [u | r] = sigmoid(x[t, :, :2D] + h_prev @ w_ur)
    c       = tanh(x[t, :, 2D:] + (r * h_prev) @ w_c)
    h       = h_prev + u * (c - h_prev)        origin_mode False: (1-u) h_prev + u c
    h       = c + u * (h_prev - c)             origin_mode True:  u h_prev + (1-u) c

``mask`` (T, N, 1) bool is True on valid steps; every sequence is a prefix of
the time axis (a reversed direction is reversed before it gets here). On a
step where the mask is False the state is carried unchanged, so the last state
is each sequence's own final state.

Each step does one GEMM for [u | r] and one for c into preallocated buffers;
the elementwise gate math of a step is a NumPy function or a CuPy
``ElementwiseKernel`` with the same signature (see :func:`_steps`).
"""
import functools
import types

import numpy

from .. import backend
from .activations import sigmoid_inplace

__all__ = ["gru_forward", "gru_backward"]


def gru_forward(x, mask, w_ur, w_c, h0, origin_mode=False):
    """Run the recursion.

    Shapes: x (T, N, 3D), mask (T, N, 1) bool, w_ur (D, 2D), w_c (D, D), h0 (N, D).
    Returns (states, gates, reset_h): states (T+1, N, D) with states[0] = h0 and
    states[t+1] the state after step t; gates (T, N, 3D), the activated
    [u | r | c]; reset_h (T, N, D), r * h_prev; all kept for :func:`gru_backward`.
    """
    xp = backend.get_array_module(x)
    steps = _steps(xp)
    num_steps, n, width = x.shape
    d = width // 3
    states = xp.empty((num_steps + 1, n, d), dtype=x.dtype)
    states[0] = h0
    gates = xp.empty_like(x)
    reset_h = xp.empty((num_steps, n, d), dtype=x.dtype)
    a_ur = xp.empty((n, 2 * d), dtype=x.dtype)
    a_c = xp.empty((n, d), dtype=x.dtype)
    for t in range(num_steps):
        xp.matmul(states[t], w_ur, out=a_ur)
        steps.update_reset(x[t, :, :2 * d], a_ur, states[t], gates[t, :, :2 * d], reset_h[t])
        xp.matmul(reset_h[t], w_c, out=a_c)
        steps.candidate_state(x[t, :, 2 * d:], a_c, gates[t, :, :d], states[t], mask[t], origin_mode,
                              gates[t, :, 2 * d:], states[t + 1])
    return states, gates, reset_h


def gru_backward(states, gates, reset_h, mask, w_ur, w_c, grad_states, grad_last, origin_mode=False):
    """Backpropagate through the recursion.

    Shapes: states, gates, reset_h from :func:`gru_forward`; mask, w_ur, w_c as
    given to it; grad_states (T, N, D), the gradient w.r.t. states[1:] (zero on
    invalid steps); grad_last (N, D), the gradient w.r.t. the final state states[T].
    Returns (grad_x (T, N, 3D), grad_w_ur (D, 2D), grad_w_c (D, D), grad_h0 (N, D)).
    """
    xp = backend.get_array_module(gates)
    steps = _steps(xp)
    num_steps, n, width = gates.shape
    d = width // 3
    grad_x = xp.empty_like(gates)
    grad_h = grad_last.copy()                 # gradient w.r.t. the state carried out of step t
    grad_reset_h = xp.empty((n, d), dtype=gates.dtype)
    grad_h_from_ur = xp.empty((n, d), dtype=gates.dtype)
    for t in range(num_steps - 1, -1, -1):
        steps.candidate_state_grad(grad_states[t], mask[t], gates[t, :, :d], gates[t, :, 2 * d:], states[t],
                                   origin_mode, grad_x[t, :, :d], grad_x[t, :, 2 * d:], grad_h)
        xp.matmul(grad_x[t, :, 2 * d:], w_c.T, out=grad_reset_h)
        steps.reset_grad(grad_reset_h, gates[t, :, d:2 * d], states[t], grad_x[t, :, d:2 * d], grad_h)
        xp.matmul(grad_x[t, :, :2 * d], w_ur.T, out=grad_h_from_ur)
        grad_h += grad_h_from_ur
    grad_w_ur = xp.tensordot(states[:-1], grad_x[:, :, :2 * d], axes=([0, 1], [0, 1]))
    grad_w_c = xp.tensordot(reset_h, grad_x[:, :, 2 * d:], axes=([0, 1], [0, 1]))
    return grad_x, grad_w_ur, grad_w_c, grad_h


# ---- NumPy ------------------------------------------------------------------

def _update_reset_numpy(x_ur, a_ur, h_prev, ur, reset_h):
    """ur = sigmoid(x_ur + a_ur) as [u | r]; reset_h = r * h_prev."""
    numpy.add(x_ur, a_ur, out=ur)
    sigmoid_inplace(ur)
    numpy.multiply(ur[:, h_prev.shape[1]:], h_prev, out=reset_h)


def _candidate_state_numpy(x_c, a_c, u, h_prev, m, origin_mode, c, h):
    """c = tanh(x_c + a_c); h = the GRU mix of h_prev and c where m, else h_prev."""
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
    numpy.copyto(h, h_prev, where=~m)


def _candidate_state_grad_numpy(grad_out, m, u, c, h_prev, origin_mode, grad_xu, grad_xc, grad_h):
    """Pre-activation gradients of u and c; updates grad_h in place.

    On entry grad_h is dL/d(state carried out of the step), so g = grad_h + grad_out
    is dL/dh of this step; on valid steps (m) it flows into the mix, on carried
    steps straight to h_prev. On exit grad_h is the part of dL/dh_prev that
    bypasses the GEMMs.
    """
    g = grad_h + grad_out
    g_mix = g * m
    one_minus_u = 1 - u
    if origin_mode:
        numpy.multiply(g_mix, h_prev - c, out=grad_xu)
        numpy.multiply(g_mix, one_minus_u, out=grad_xc)
        numpy.multiply(g_mix, u, out=grad_h)
    else:
        numpy.multiply(g_mix, c - h_prev, out=grad_xu)
        numpy.multiply(g_mix, u, out=grad_xc)
        numpy.multiply(g_mix, one_minus_u, out=grad_h)
    grad_h += g - g_mix
    grad_xu *= u
    grad_xu *= one_minus_u
    grad_xc *= 1 - c * c


def _reset_grad_numpy(grad_reset_h, r, h_prev, grad_xr, grad_h):
    """Pre-activation gradient of r from dL/d(r * h_prev); adds its share of dL/dh_prev to grad_h."""
    numpy.multiply(grad_reset_h, h_prev, out=grad_xr)
    grad_xr *= r * (1 - r)
    grad_h += grad_reset_h * r


_NUMPY_STEPS = types.SimpleNamespace(update_reset=_update_reset_numpy,
                                     candidate_state=_candidate_state_numpy,
                                     candidate_state_grad=_candidate_state_grad_numpy,
                                     reset_grad=_reset_grad_numpy)


# ---- CuPy -------------------------------------------------------------------
# One thread per (n, j) of the (N, D) state; the [u | r | c] column blocks are
# passed as strided views, which ElementwiseKernel reads and writes in place.
# grad_h is an output that each thread reads before it writes it.

_SIGMOID = "#define SIGMOID(v) (T(0.5) * tanh(T(0.5) * (v)) + T(0.5))\n"

_UPDATE_RESET = """
    u = SIGMOID(x_u + a_u);
    r = SIGMOID(x_r + a_r);
    reset_h = r * h_prev;
"""

_CANDIDATE_STATE = """
    c = tanh(x_c + a_c);
    const T mixed = origin_mode ? c + u * (h_prev - c) : h_prev + u * (c - h_prev);
    h = m ? mixed : h_prev;
"""

_CANDIDATE_STATE_GRAD = """
    const T g = grad_h + grad_out;
    const T g_mix = m ? g : T(0);
    const T du = origin_mode ? g_mix * (h_prev - c) : g_mix * (c - h_prev);
    grad_xu = du * u * (T(1) - u);
    grad_xc = (origin_mode ? g_mix * (T(1) - u) : g_mix * u) * (T(1) - c * c);
    grad_h = (origin_mode ? g_mix * u : g_mix * (T(1) - u)) + (g - g_mix);
"""

_RESET_GRAD = """
    grad_xr = grad_reset_h * h_prev * r * (T(1) - r);
    grad_h += grad_reset_h * r;
"""


@functools.lru_cache(maxsize=None)
def _cupy_steps():
    """The four step kernels as CuPy ElementwiseKernels, wrapped to the NumPy signatures."""
    cupy = backend.array_module("gpu")
    update_reset = cupy.ElementwiseKernel(
        "T x_u, T x_r, T a_u, T a_r, T h_prev", "T u, T r, T reset_h",
        _UPDATE_RESET, "oar_gru_update_reset", preamble=_SIGMOID)
    candidate_state = cupy.ElementwiseKernel(
        "T x_c, T a_c, T u, T h_prev, bool m, bool origin_mode", "T c, T h",
        _CANDIDATE_STATE, "oar_gru_candidate_state")
    candidate_state_grad = cupy.ElementwiseKernel(
        "T grad_out, bool m, T u, T c, T h_prev, bool origin_mode", "T grad_xu, T grad_xc, T grad_h",
        _CANDIDATE_STATE_GRAD, "oar_gru_candidate_state_grad")
    reset_grad = cupy.ElementwiseKernel(
        "T grad_reset_h, T r, T h_prev", "T grad_xr, T grad_h",
        _RESET_GRAD, "oar_gru_reset_grad")

    def split(a, d):
        return a[:, :d], a[:, d:]

    def update_reset_cupy(x_ur, a_ur, h_prev, ur, reset_h):
        d = h_prev.shape[1]
        update_reset(*split(x_ur, d), *split(a_ur, d), h_prev, *split(ur, d), reset_h)

    def candidate_state_cupy(x_c, a_c, u, h_prev, m, origin_mode, c, h):
        candidate_state(x_c, a_c, u, h_prev, m, bool(origin_mode), c, h)

    def candidate_state_grad_cupy(grad_out, m, u, c, h_prev, origin_mode, grad_xu, grad_xc, grad_h):
        candidate_state_grad(grad_out, m, u, c, h_prev, bool(origin_mode), grad_xu, grad_xc, grad_h)

    return types.SimpleNamespace(update_reset=update_reset_cupy,
                                 candidate_state=candidate_state_cupy,
                                 candidate_state_grad=candidate_state_grad_cupy,
                                 reset_grad=reset_grad)


def _steps(xp):
    """The step functions for array module ``xp``."""
    return _NUMPY_STEPS if xp is numpy else _cupy_steps()
