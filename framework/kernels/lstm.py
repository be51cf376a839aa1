"""LSTM recursion over a time-major, left-aligned batch, forward and backward (BPTT).

Conventions (PaddlePaddle's ``lstm`` op without peepholes). ``x`` is (T, N, 4D):
the projected input with the bias already added, gate columns in Paddle's order
``[candidate | input | forget | output]``. The recurrent weight ``w`` is
(D, 4D) with the same column order. Per step:

    a       = x[t] + h_prev @ w
    c~      = tanh(a[:, :D]);  i = sigmoid(a[:, D:2D]);  f = sigmoid(a[:, 2D:3D]);  o = sigmoid(a[:, 3D:])
    c       = f * c_prev + i * c~
    h       = o * tanh(c)

``mask`` (T, N, 1) bool is True on valid steps; every sequence is a prefix of
the time axis. On a step where the mask is False both states are carried
unchanged, so the last states are each sequence's own final states.

Each step does one GEMM into a preallocated buffer; the elementwise cell math
is a NumPy function or a CuPy ``ElementwiseKernel`` with the same signature.
On the GPU the whole loop is one kernel launch when the state fits a block's
shared memory (:mod:`framework.kernels.recurrent_cuda`); the step loop is the
fallback.
"""
import functools
import types

import numpy

from .. import backend
from .activations import sigmoid_inplace
from .recurrent_cuda import lstm_backward_sequence, lstm_forward_sequence, rows_per_block

__all__ = ["lstm_forward", "lstm_backward"]


def lstm_forward(x, mask, w, h0, c0):
    """Run the recursion.

    Shapes: x (T, N, 4D), mask (T, N, 1) bool, w (D, 4D), h0 and c0 (N, D).
    Returns (hidden, cells, gates): hidden and cells (T+1, N, D) with [0] the
    initial states and [t+1] the states after step t; gates (T, N, 4D), the
    activated [c~ | i | f | o], kept for :func:`lstm_backward`.
    """
    xp = backend.get_array_module(x)
    steps = _steps(xp)
    num_steps, n, width = x.shape
    d = width // 4
    hidden = xp.empty((num_steps + 1, n, d), dtype=x.dtype)
    cells = xp.empty_like(hidden)
    hidden[0], cells[0] = h0, c0
    gates = xp.empty_like(x)
    if xp is not numpy and rows_per_block("oar_lstm_forward", d, x.itemsize):
        lstm_forward_sequence(x, mask, w, hidden, cells, gates)
        return hidden, cells, gates
    for t in range(num_steps):
        xp.matmul(hidden[t], w, out=gates[t])
        steps.cell(x[t], gates[t], hidden[t], cells[t], mask[t], hidden[t + 1], cells[t + 1])
    return hidden, cells, gates


def lstm_backward(hidden, cells, gates, mask, w, grad_hidden, grad_last_h, grad_last_c):
    """Backpropagate through the recursion.

    Shapes: hidden, cells (T+1, N, D) and gates (T, N, 4D) from :func:`lstm_forward`;
    grad_hidden (T, N, D), the gradient w.r.t. hidden[1:] (zero on invalid
    steps); grad_last_h, grad_last_c (N, D), the gradients w.r.t. the final states.
    Returns (grad_x (T, N, 4D), grad_w (D, 4D), grad_h0 (N, D), grad_c0 (N, D)).
    """
    xp = backend.get_array_module(gates)
    steps = _steps(xp)
    grad_x = xp.empty_like(gates)
    grad_h = grad_last_h.copy()     # gradients w.r.t. the states carried out of step t
    grad_c = grad_last_c.copy()
    if xp is not numpy and rows_per_block("oar_lstm_backward", grad_h.shape[1], gates.itemsize):
        lstm_backward_sequence(grad_hidden, mask, gates, cells, w, grad_x, grad_h, grad_c)
    else:
        grad_h_from_gates = xp.empty_like(grad_h)
        for t in range(gates.shape[0] - 1, -1, -1):
            steps.cell_grad(grad_hidden[t], mask[t], gates[t], cells[t], cells[t + 1], grad_x[t], grad_h, grad_c)
            xp.matmul(grad_x[t], w.T, out=grad_h_from_gates)
            grad_h += grad_h_from_gates
    grad_w = xp.tensordot(hidden[:-1], grad_x, axes=([0, 1], [0, 1]))
    return grad_x, grad_w, grad_h, grad_c


# ---- NumPy ------------------------------------------------------------------

def _cell_numpy(x_t, gates, h_prev, c_prev, m, h, c):
    """gates (holding h_prev @ w on entry) <- activated [c~ | i | f | o]; new h, c where m, else carried."""
    d = h_prev.shape[1]
    gates += x_t
    numpy.tanh(gates[:, :d], out=gates[:, :d])
    sigmoid_inplace(gates[:, d:])
    candidate, input_gate, forget_gate, output_gate = (gates[:, k * d:(k + 1) * d] for k in range(4))
    numpy.multiply(forget_gate, c_prev, out=c)
    c += input_gate * candidate
    numpy.tanh(c, out=h)
    h *= output_gate
    numpy.copyto(c, c_prev, where=~m)
    numpy.copyto(h, h_prev, where=~m)


def _cell_grad_numpy(grad_out, m, gates, c_prev, c, grad_x, grad_h, grad_c):
    """Pre-activation gate gradients grad_x (N, 4D); updates grad_h and grad_c in place.

    On entry grad_h, grad_c are dL/d(states carried out of the step), so
    grad_h + grad_out is dL/dh of this step; on valid steps (m) the gradients
    flow into the cell, on carried steps straight to the previous states. On
    exit they are the parts of dL/dh_prev, dL/dc_prev that bypass the GEMM.
    """
    d = c.shape[1]
    candidate, input_gate, forget_gate, output_gate = (gates[:, k * d:(k + 1) * d] for k in range(4))
    g_h = grad_h + grad_out
    g_h_cell = g_h * m
    g_c_cell = grad_c * m
    tanh_c = numpy.tanh(c)
    numpy.multiply(g_h_cell, tanh_c, out=grad_x[:, 3 * d:])                 # dL/do
    g_c_cell += g_h_cell * output_gate * (1 - tanh_c * tanh_c)              # total dL/dc on this step
    numpy.multiply(g_c_cell, input_gate, out=grad_x[:, :d])                  # dL/dc~
    numpy.multiply(g_c_cell, candidate, out=grad_x[:, d:2 * d])              # dL/di
    numpy.multiply(g_c_cell, c_prev, out=grad_x[:, 2 * d:3 * d])             # dL/df
    grad_x[:, :d] *= 1 - candidate * candidate
    grad_x[:, d:] *= gates[:, d:] * (1 - gates[:, d:])
    grad_c *= ~m
    grad_c += g_c_cell * forget_gate
    numpy.multiply(g_h, ~m, out=grad_h)


_NUMPY_STEPS = types.SimpleNamespace(cell=_cell_numpy, cell_grad=_cell_grad_numpy)


# ---- CuPy -------------------------------------------------------------------
# One thread per (n, j) of the (N, D) state; the four gate blocks are passed as
# strided views, which ElementwiseKernel reads and writes in place. The
# outputs a_* (holding h_prev @ w), grad_h and grad_c are read before they are written.

_SIGMOID = "#define SIGMOID(v) (T(0.5) * tanh(T(0.5) * (v)) + T(0.5))\n"

_CELL = """
    const T cand = tanh(x_c + a_c), in_g = SIGMOID(x_i + a_i), forget_g = SIGMOID(x_f + a_f),
            out_g = SIGMOID(x_o + a_o);
    a_c = cand; a_i = in_g; a_f = forget_g; a_o = out_g;
    const T c_new = forget_g * c_prev + in_g * cand;
    c = m ? c_new : c_prev;
    h = m ? out_g * tanh(c_new) : h_prev;
"""

_CELL_GRAD = """
    const T g_h = grad_h + grad_out;
    const T g_h_cell = m ? g_h : T(0);
    const T tanh_c = tanh(c);
    const T g_c_cell = (m ? grad_c : T(0)) + g_h_cell * out_g * (T(1) - tanh_c * tanh_c);
    grad_xc = g_c_cell * in_g * (T(1) - cand * cand);
    grad_xi = g_c_cell * cand * in_g * (T(1) - in_g);
    grad_xf = g_c_cell * c_prev * forget_g * (T(1) - forget_g);
    grad_xo = g_h_cell * tanh_c * out_g * (T(1) - out_g);
    grad_c = g_c_cell * forget_g + (m ? T(0) : grad_c);
    grad_h = m ? T(0) : g_h;
"""


@functools.lru_cache(maxsize=None)
def _cupy_steps():
    """The two step kernels as CuPy ElementwiseKernels, wrapped to the NumPy signatures."""
    cupy = backend.array_module("gpu")
    cell = cupy.ElementwiseKernel(
        "T x_c, T x_i, T x_f, T x_o, T h_prev, T c_prev, bool m", "T a_c, T a_i, T a_f, T a_o, T h, T c",
        _CELL, "oar_lstm_cell", preamble=_SIGMOID)
    cell_grad = cupy.ElementwiseKernel(
        "T grad_out, bool m, T cand, T in_g, T forget_g, T out_g, T c_prev, T c",
        "T grad_xc, T grad_xi, T grad_xf, T grad_xo, T grad_h, T grad_c",
        _CELL_GRAD, "oar_lstm_cell_grad")

    def blocks(a, d):
        return tuple(a[:, k * d:(k + 1) * d] for k in range(4))

    def cell_cupy(x_t, gates, h_prev, c_prev, m, h, c):
        d = h_prev.shape[1]
        cell(*blocks(x_t, d), h_prev, c_prev, m, *blocks(gates, d), h, c)

    def cell_grad_cupy(grad_out, m, gates, c_prev, c, grad_x, grad_h, grad_c):
        d = c.shape[1]
        cell_grad(grad_out, m, *blocks(gates, d), c_prev, c, *blocks(grad_x, d), grad_h, grad_c)

    return types.SimpleNamespace(cell=cell_cupy, cell_grad=cell_grad_cupy)


def _steps(xp):
    """The step functions for array module ``xp``."""
    return _NUMPY_STEPS if xp is numpy else _cupy_steps()
