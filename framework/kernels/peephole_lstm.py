"""Peephole LSTM recursion over time-major runs, forward and backward (BPTT): PaddlePaddle's ``lstm`` op with
``use_peepholes`` (and any of its activations).

Conventions as :mod:`framework.kernels.lstm`: the projected input, the bias's
four gate columns already added, is one time-major array ``x`` (T, S, N, 4D)
over S independent runs of N rows sorted by decreasing length; step t computes
rows ``[:active[t]]`` only. Gate columns ``[candidate | input | forget |
output]``; the recurrent weight of run s is ``w[s]`` (D, 4D); ``peep[s]`` (3, D)
holds the peephole weights ``[w_ic, w_fc, w_oc]`` (the last 3D values of
Paddle's (1, 7D) bias). Per step, with h_prev and c_prev carried in::

    a  = x[t, s] + h_prev @ w[s]
    c~ = act_candidate(a_c)
    i  = act_gate(a_i + w_ic * c_prev);   f = act_gate(a_f + w_fc * c_prev)
    c  = f * c_prev + i * c~
    o  = act_gate(a_o + w_oc * c)                  (the new cell, as Paddle's kernel)
    h  = o * act_cell(c)

Activations are ``"sigmoid"``, ``"tanh"``, ``"relu"`` or ``"identity"``
(Paddle's names); each derivative is written from the activation's output.
The loops are written against ``xp``, so the same code is the NumPy reference
and the CuPy version (one GEMM and a few elementwise kernels a step). The
forward keeps the activated gates (T, S, N, 4D), the states (T+1, S, N, D)
and act_cell(c) (T, S, N, D); the compiled CPU forward
(:mod:`framework.kernels.cpu.peephole`) writes exactly these, so this
backward follows either forward.
"""
from .. import backend

__all__ = ["ACTIVATIONS", "peephole_lstm_forward", "peephole_lstm_backward"]

ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")


def _activate(xp, name, a):
    """``name`` applied to ``a`` in place; returns ``a``."""
    if name == "sigmoid":
        xp.multiply(a, 0.5, out=a)
        xp.tanh(a, out=a)
        a *= 0.5
        a += 0.5
    elif name == "tanh":
        xp.tanh(a, out=a)
    elif name == "relu":
        xp.maximum(a, 0, out=a)
    return a


def _derivative(xp, name, y):
    """d act / d input of activation ``name`` at the output ``y`` (a new array)."""
    if name == "sigmoid":
        return y * (1 - y)
    if name == "tanh":
        return 1 - y * y
    if name == "relu":
        return (y > 0).astype(y.dtype)
    return xp.ones_like(y)


def peephole_lstm_forward(x, active, w, peep, h0, c0, activations):
    """Run the recursion.

    Shapes: x (T, S, N, 4D) (not changed); active: list of T non-increasing ints; w (S, D, 4D); peep (S, 3, D);
    h0, c0 (S, N, D) in row order; activations (gate, cell, candidate) names.
    Returns (hidden, cells, gates, act_c): hidden and cells (T+1, S, N, D), [0] the initial states and [t+1]
    the states after step t (0 on rows not active at step t); gates (T, S, N, 4D), the activated
    [c~ | i | f | o]; act_c (T, S, N, D), act_cell of the new cell.
    """
    xp = backend.get_array_module(x)
    gate_act, cell_act, candidate_act = activations
    num_steps, runs, n, width = x.shape
    d = width // 4
    hidden = xp.zeros((num_steps + 1, runs, n, d), dtype=x.dtype)
    cells = xp.zeros(hidden.shape, dtype=x.dtype)
    hidden[0], cells[0] = h0, c0
    gates = xp.zeros(x.shape, dtype=x.dtype)
    act_c = xp.zeros((num_steps, runs, n, d), dtype=x.dtype)
    p_i, p_f, p_o = peep[:, 0:1], peep[:, 1:2], peep[:, 2:3]              # (S, 1, D)
    for t, m in enumerate(active):
        if m == 0:
            break
        c_prev = cells[t, :, :m]
        g = gates[t, :, :m]
        xp.matmul(hidden[t, :, :m], w, out=g)
        g += x[t, :, :m]
        _activate(xp, candidate_act, g[..., :d])
        g[..., d:2 * d] += p_i * c_prev
        g[..., 2 * d:3 * d] += p_f * c_prev
        _activate(xp, gate_act, g[..., d:3 * d])
        c = cells[t + 1, :, :m]
        xp.multiply(g[..., 2 * d:3 * d], c_prev, out=c)
        c += g[..., d:2 * d] * g[..., :d]
        g[..., 3 * d:] += p_o * c
        _activate(xp, gate_act, g[..., 3 * d:])
        ac = act_c[t, :, :m]
        ac[...] = c
        _activate(xp, cell_act, ac)
        xp.multiply(g[..., 3 * d:], ac, out=hidden[t + 1, :, :m])
    return hidden, cells, gates, act_c


def peephole_lstm_backward(hidden, cells, gates, act_c, active, w, peep, grad_states, grad_last_h, grad_last_c,
                           activations):
    """Backpropagate through the recursion.

    Shapes: hidden, cells, gates, act_c from :func:`peephole_lstm_forward`; active, w, peep and activations as
    given to it; grad_states (T, S, N, D), the gradient w.r.t. hidden[1:] (read on active rows only);
    grad_last_h, grad_last_c (S, N, D), the gradients w.r.t. each row's final states.
    Returns (grad_x (T, S, N, 4D), zero on inactive rows; grad_w (S, D, 4D); grad_peep (S, 3, D);
    grad_h0 (S, N, D); grad_c0 (S, N, D)).
    """
    xp = backend.get_array_module(gates)
    gate_act, cell_act, candidate_act = activations
    num_steps, runs, n, width = gates.shape
    d = width // 4
    grad_x = xp.zeros(gates.shape, dtype=gates.dtype)
    grad_peep = xp.zeros(peep.shape, dtype=gates.dtype)
    grad_h = grad_last_h.copy()            # dL/d(states carried out of step t), for the active rows
    grad_c = grad_last_c.copy()
    w_t = w.swapaxes(1, 2)
    p_i, p_f, p_o = peep[:, 0:1], peep[:, 1:2], peep[:, 2:3]
    for t in range(num_steps - 1, -1, -1):
        m = active[t]
        if m == 0:
            continue
        g, gx = gates[t, :, :m], grad_x[t, :, :m]
        cand, i, f, o = g[..., :d], g[..., d:2 * d], g[..., 2 * d:3 * d], g[..., 3 * d:]
        c_prev, c, ac = cells[t, :, :m], cells[t + 1, :, :m], act_c[t, :, :m]
        g_h = grad_h[:, :m] + grad_states[t, :, :m]
        g_o = g_h * ac * _derivative(xp, gate_act, o)                         # o's pre-activation gradient
        g_c = grad_c[:, :m] + g_h * o * _derivative(xp, cell_act, ac) + g_o * p_o
        g_i = g_c * cand * _derivative(xp, gate_act, i)
        g_f = g_c * c_prev * _derivative(xp, gate_act, f)
        gx[..., :d] = g_c * i * _derivative(xp, candidate_act, cand)
        gx[..., d:2 * d] = g_i
        gx[..., 2 * d:3 * d] = g_f
        gx[..., 3 * d:] = g_o
        grad_peep[:, 0] += (g_i * c_prev).sum(axis=1)
        grad_peep[:, 1] += (g_f * c_prev).sum(axis=1)
        grad_peep[:, 2] += (g_o * c).sum(axis=1)
        grad_c[:, :m] = g_c * f + g_i * p_i + g_f * p_f                       # dL/dc_prev
        grad_h[:, :m] = xp.matmul(gx, w_t)                                    # dL/dh_prev
    rows = num_steps * n

    def run_major(a):
        return xp.ascontiguousarray(a.swapaxes(0, 1)).reshape(runs, rows, -1)     # (S, T*N, F)

    grad_w = xp.matmul(run_major(hidden[:-1]).swapaxes(1, 2), run_major(grad_x))
    return grad_x, grad_w, grad_peep, grad_h, grad_c
