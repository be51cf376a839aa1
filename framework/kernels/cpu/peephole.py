"""The compiled peephole LSTM forward (Paddle's ``lstm`` op with ``use_peepholes`` and its default activations:
sigmoid gates, tanh cell and candidate), one direction ("run") per kernel call.

Same math as :mod:`framework.kernels.peephole_lstm` and the same layout as the plain LSTM's compiled kernel
(:mod:`framework.kernels.cpu.recurrent`): the projected input is read batch-major at each row's own position
(reversed inside each length for a reverse run), the hidden states are written straight into their columns of
the layer's output, the recurrent product of the running rows is one :func:`~.compiler.gemm` a step, and with
``save`` the kernel writes exactly the arrays the NumPy forward keeps (so its backward follows).
"""
import numpy

from .compiler import gemm, kernel, sigmoid, tanh
from .recurrent import contiguous, each_part, placeholder, row_parts, written_while_active, zero_past_lengths

__all__ = ["peephole_lstm_forward_run", "peephole_lstm_forward"]


@kernel()
def peephole_lstm_forward_run(x, bias, peep, lengths, order, active, first, stop, w, h0, c0, reverse, hidden, col,
                              last_h, last_c, save, hidden_out, cells_out, gates_out, act_out, s):
    """Rows [first, stop) of the row order of one run. x (N, T, 4D), bias (4D,), peep (3, D), lengths/order (N,),
    active (T,), w (D, 4D), h0/c0 (N, D) batch order; writes those rows of hidden[:, :, col:col+D] and
    last_h/last_c (N, D), and with ``save`` of run ``s`` of hidden_out/cells_out (T+1, S, N, D), gates_out
    (T, S, N, 4D), act_out (T, S, N, D) (row order)."""
    n_rows, d = stop - first, w.shape[0]
    h = numpy.empty((n_rows, d), dtype=x.dtype)
    cs = numpy.empty((n_rows, d), dtype=x.dtype)
    tc = numpy.empty(d, dtype=x.dtype)
    for i in range(n_rows):
        h[i] = h0[order[first + i]]
        cs[i] = c0[order[first + i]]
    a = numpy.empty((n_rows, 4 * d), dtype=x.dtype)
    w_ic, w_fc, w_oc = peep[0], peep[1], peep[2]
    for t in range(active.shape[0]):
        m = min(active[t], stop) - first                    # this part's rows still running
        if m <= 0:
            break
        gemm(m, h, w, False, 0, a)                         # a[:m] = h_prev @ W
        for i in range(m):
            n = order[first + i]
            p = lengths[n] - 1 - t if reverse else t
            xr, ai, hi, ci = x[n, p], a[i], h[i], cs[i]
            # zero-based views, one stage a loop: see framework.kernels.cpu.recurrent
            x_i, x_f, x_o = xr[d:2 * d], xr[2 * d:3 * d], xr[3 * d:]
            b_i, b_f, b_o = bias[d:2 * d], bias[2 * d:3 * d], bias[3 * d:]
            ig, fg, og = ai[d:2 * d], ai[2 * d:3 * d], ai[3 * d:]
            for j in range(d):
                ai[j] = tanh(xr[j] + bias[j] + ai[j])                             # candidate
            for j in range(d):
                ig[j] = sigmoid(x_i[j] + b_i[j] + ig[j] + w_ic[j] * ci[j])
            for j in range(d):
                fg[j] = sigmoid(x_f[j] + b_f[j] + fg[j] + w_fc[j] * ci[j])
            for j in range(d):
                ci[j] = fg[j] * ci[j] + ig[j] * ai[j]
            for j in range(d):
                og[j] = sigmoid(x_o[j] + b_o[j] + og[j] + w_oc[j] * ci[j])
            for j in range(d):
                tc[j] = tanh(ci[j])
            for j in range(d):
                hi[j] = og[j] * tc[j]
            out = hidden[n, p, col:col + d]
            for j in range(d):
                out[j] = hi[j]
            if save:
                r = first + i
                saved_tc, saved_h, saved_c = act_out[t, s, r], hidden_out[t + 1, s, r], cells_out[t + 1, s, r]
                for j in range(d):
                    saved_tc[j] = tc[j]
                    saved_h[j] = hi[j]
                    saved_c[j] = ci[j]
                saved_gates = gates_out[t, s, r]
                for j in range(4 * d):
                    saved_gates[j] = ai[j]
    for i in range(n_rows):
        last_h[order[first + i]] = h[i]
        last_c[order[first + i]] = cs[i]
    zero_past_lengths(hidden, lengths, order, first, stop, col, d)       # the output is 0 past each length


def peephole_lstm_forward(xs, biases, weights, h0s, c0s, lengths, reverses, order, active, save):
    """S peephole LSTM runs over one padded batch.

    xs: S arrays (N, T, 4D); biases: S arrays of 7D values (Paddle's layout: 4D gate biases, then w_ic, w_fc,
    w_oc); weights: S (D, 4D); h0s, c0s: S (N, D) (batch order); lengths (N,) int64; reverses: S bools;
    order/active from :func:`~.recurrent.row_order`. Returns (hidden (N, T, S*D), last_h (S, N, D), last_c
    (S, N, D), saved): saved is (hidden, cells, gates, act_c) as
    :func:`framework.kernels.peephole_lstm.peephole_lstm_forward` returns them (row order) when ``save``, else
    None.
    """
    runs = len(xs)
    n, num_steps, width = xs[0].shape
    d = width // 4
    dtype = xs[0].dtype
    hidden = numpy.empty((n, num_steps, runs * d), dtype=dtype)               # the kernels write all of it
    last_h = numpy.empty((runs, n, d), dtype=dtype)
    last_c = numpy.empty((runs, n, d), dtype=dtype)
    if save:
        hidden_s = written_while_active((num_steps + 1, runs, n, d), active, dtype, first=1)
        cells = written_while_active((num_steps + 1, runs, n, d), active, dtype, first=1)
        for s in range(runs):
            hidden_s[0, s], cells[0, s] = h0s[s][order], c0s[s][order]
        gates = written_while_active((num_steps, runs, n, 4 * d), active, dtype)
        act_c = written_while_active((num_steps, runs, n, d), active, dtype)
    else:
        hidden_s = cells = gates = act_c = placeholder(dtype)
    lengths = contiguous(numpy.asarray(lengths, dtype=numpy.int64))

    def one(s, first, stop):
        bias = contiguous(biases[s]).reshape(-1)
        peephole_lstm_forward_run(contiguous(xs[s]), contiguous(bias[:4 * d]), contiguous(bias[4 * d:].reshape(3, d)),
                                  lengths, order, active, first, stop, contiguous(weights[s]), contiguous(h0s[s]),
                                  contiguous(c0s[s]), bool(reverses[s]), hidden, s * d, last_h[s], last_c[s],
                                  bool(save), hidden_s, cells, gates, act_c, s)
    each_part(one, runs, row_parts(lengths[order], runs))
    return hidden, last_h, last_c, ((hidden_s, cells, gates, act_c) if save else None)
