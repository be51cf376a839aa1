"""Compiled GRU and LSTM recursions, forward and backward (BPTT), one direction ("run") or one part of its rows
per kernel call.

Same math and conventions as :mod:`framework.kernels.gru` and
:mod:`framework.kernels.lstm` (Paddle's ``gru`` / ``lstm`` ops: GRU columns
``[u | r | c]`` with the flat-buffer recurrent weight and ``origin_mode``, LSTM
columns ``[candidate | input | forget | output]``), but each run is one call
that walks every step with the state kept in a small buffer, its gate math
fused into one pass per row:

- The forward kernels read the projected input **batch-major**, x (N, T, G*D),
  at position t of row n (or lengths[n]-1-t for a reverse run: the reverse
  direction runs inside each sequence's own length) and write the hidden states
  straight into their columns of the layer's output (N, T, S*D), 0 elsewhere: no
  gathers in or out. Rows are visited in ``order`` (by decreasing length), so
  the rows still running at step t are the first ``active[t]`` of the state
  buffer, and the recurrent product is one :func:`~.compiler.gemm` over them
  (BLAS from 4 rows, a register loop below, e.g. batch 1).
- With ``save`` they also write what backward needs, time-major in row order,
  exactly the arrays the NumPy kernels save (so either backward can follow
  either forward): GRU states (T+1, S, N, D), activated [u | r] (T, S, N, 2D),
  candidates and r * h_prev (T, S, N, D); LSTM hidden and cells (T+1, S, N, D),
  activated gates (T, S, N, 4D) and tanh(c) (T, S, N, D).
- The backward kernels run BPTT from the last step down with the gate
  gradients fused per row and one or two GEMMs per step. They read the
  output's gradient batch-major at each row's own positions and write the
  input's gradient batch-major (0 past each length), summing the bias
  gradient in float64 as they go; the gate gradients also go time-major in
  row order, for the weight gradients: GEMMs over all steps at once, done by
  the callers.
- Rows never interact, so a run's rows can be cut into parts
  (:func:`row_parts`), each a call on its own thread walking all its steps
  (:func:`each_part`), when there are more threads than runs.

All arrays are C-contiguous; float32 or float64 (each compiled once per dtype).
"""
import numpy

from ..providers import matmul
from .compiler import gemm, kernel, one_blas_thread, sigmoid, tanh

__all__ = ["gru_forward_run", "gru_backward_run", "lstm_forward_run", "lstm_backward_run", "zero_past_lengths",
           "MIN_PART_ROWS"]

#: a run's rows are cut into parts over the threads only down to this many rows a part
MIN_PART_ROWS = 8


@kernel()
def zero_past_lengths(a, lengths, order, first, stop, col, width):
    """a[n, lengths[n]:, col:col+width] = 0 for the rows n = order[first:stop] of a batch-major (N, T, F)."""
    for r in range(first, stop):
        n = order[r]
        for p in range(lengths[n], a.shape[1]):
            row = a[n, p, col:col + width]
            for j in range(width):
                row[j] = 0


@kernel()
def gru_forward_run(x, bias, lengths, order, active, first, stop, w_ur, w_c, h0, reverse, origin_mode, hidden, col,
                    last, save, states, ur_out, c_out, rh_out, s):
    """Rows [first, stop) of the row order of one GRU run. x (N, T, 3D) projected input, bias (3D,) (bias_hh),
    lengths/order (N,) int64, active (T,) int64, w_ur (D, 2D), w_c (D, D), h0 (N, D) batch order; writes those
    rows of hidden[:, :, col:col+D] (N, T, W) and last (N, D) (batch order), and with ``save`` of run ``s`` of
    states/ur_out/c_out/rh_out (row order)."""
    n_rows, d = stop - first, w_c.shape[0]
    h = numpy.empty((n_rows, d), dtype=x.dtype)
    for i in range(n_rows):
        h[i] = h0[order[first + i]]
    a = numpy.empty((n_rows, 2 * d), dtype=x.dtype)
    rh = numpy.empty((n_rows, d), dtype=x.dtype)
    ac = numpy.empty((n_rows, d), dtype=x.dtype)
    bias_c = bias[2 * d:]
    for t in range(active.shape[0]):
        m = min(active[t], stop) - first                    # this part's rows still running
        if m <= 0:
            break
        gemm(m, h, w_ur, False, 0, a)                      # a[:m] = h_prev @ W_ur
        for i in range(m):
            n = order[first + i]
            p = lengths[n] - 1 - t if reverse else t
            xr, ai, hi, rhi = x[n, p], a[i], h[i], rh[i]
            r = ai[d:]
            for j in range(2 * d):
                ai[j] = sigmoid(xr[j] + bias[j] + ai[j])           # [u | r]
            for j in range(d):
                rhi[j] = r[j] * hi[j]
        gemm(m, rh, w_c, False, 0, ac)                     # ac[:m] = (r * h_prev) @ W_c
        for i in range(m):
            n = order[first + i]
            p = lengths[n] - 1 - t if reverse else t
            xc, ai, hi, aci = x[n, p, 2 * d:], a[i], h[i], ac[i]
            for j in range(d):
                aci[j] = tanh(xc[j] + bias_c[j] + aci[j])            # candidate
            if origin_mode:
                for j in range(d):
                    hi[j] = aci[j] + ai[j] * (hi[j] - aci[j])
            else:
                for j in range(d):
                    hi[j] = hi[j] + ai[j] * (aci[j] - hi[j])
            out = hidden[n, p, col:col + d]
            for j in range(d):
                out[j] = hi[j]
            if save:
                r = first + i
                saved_h, saved_c, saved_rh, saved_ur = states[t + 1, s, r], c_out[t, s, r], rh_out[t, s, r], \
                    ur_out[t, s, r]
                for j in range(d):
                    saved_h[j] = hi[j]
                    saved_c[j] = aci[j]
                    saved_rh[j] = rh[i, j]
                for j in range(2 * d):
                    saved_ur[j] = ai[j]
    for i in range(n_rows):
        last[order[first + i]] = h[i]
    zero_past_lengths(hidden, lengths, order, first, stop, col, d)       # the output is 0 past each length


@kernel()
def gru_backward_run(states, ur, c, active, first, stop, w_ur, w_c, grad_hidden, col, lengths, order, reverse,
                     origin_mode, grad_ur, grad_c, grad_x, bias_sum, grad_h, s):
    """BPTT of rows [first, stop) of run ``s``: states, ur, c as saved (row order), w_ur (D, 2D), w_c (D, D); reads
    the output gradient batch-major, grad_hidden[:, :, col:col+D] (N, T, W), at each row's own positions
    (lengths/order (N,) int64, ``reverse`` as the forward); writes grad_ur (T, S, N, 2D) and grad_c (T, S, N, D)
    on those rows while active (row order, for the weight gradients), the same [u | r | c] gradients into
    grad_x (N, T, 3D) batch-major (0 past each length), adds their sum over rows and steps into bias_sum (3D,)
    float64, and turns the rows' grad_h (N, D) from dL/d(last states) into dL/dh0 (row order)."""
    d = w_c.shape[0]
    grh = numpy.empty((stop - first, d), dtype=grad_h.dtype)
    part_h = grad_h[first:stop]
    for t in range(active.shape[0] - 1, -1, -1):
        m = min(active[t], stop) - first
        if m <= 0:
            continue
        for i in range(m):
            r = first + i
            n = order[r]
            p = lengths[n] - 1 - t if reverse else t
            gh, gs, u, cc, hp = part_h[i], grad_hidden[n, p, col:col + d], ur[t, s, r], c[t, s, r], states[t, s, r]
            gu, gc = grad_ur[t, s, r], grad_c[t, s, r]
            for j in range(d):
                g = gh[j] + gs[j]
                du = u[j] * (1 - u[j])
                dc = 1 - cc[j] * cc[j]
                if origin_mode:
                    gu[j] = g * (hp[j] - cc[j]) * du
                    gc[j] = g * (1 - u[j]) * dc
                    gh[j] = g * u[j]
                else:
                    gu[j] = g * (cc[j] - hp[j]) * du
                    gc[j] = g * u[j] * dc
                    gh[j] = g * (1 - u[j])
        gemm(m, grad_c[t, s, first:stop], w_c, True, 0, grh)          # dL/d(r * h_prev)
        for i in range(m):
            r = first + i
            reset, gr, hp, gh, g = ur[t, s, r, d:], grad_ur[t, s, r, d:], states[t, s, r], part_h[i], grh[i]
            for j in range(d):
                gr[j] = g[j] * hp[j] * reset[j] * (1 - reset[j])
                gh[j] += g[j] * reset[j]
            n = order[r]
            out, g_ur, g_c = grad_x[n, lengths[n] - 1 - t if reverse else t], grad_ur[t, s, r], grad_c[t, s, r]
            out_c, bias_c = out[2 * d:], bias_sum[2 * d:]
            for j in range(2 * d):
                out[j] = g_ur[j]
                bias_sum[j] += g_ur[j]
            for j in range(d):
                out_c[j] = g_c[j]
                bias_c[j] += g_c[j]
        gemm(m, grad_ur[t, s, first:stop], w_ur, True, 1, part_h)     # += d[u | r] @ W_ur^T
    zero_past_lengths(grad_x, lengths, order, first, stop, 0, grad_x.shape[2])


@kernel()
def lstm_forward_run(x, bias, lengths, order, active, first, stop, w, h0, c0, reverse, hidden, col, last_h, last_c,
                     save, hidden_out, cells_out, gates_out, tanh_out, s):
    """Rows [first, stop) of the row order of one LSTM run. x (N, T, 4D), bias (4D,), lengths/order (N,), active
    (T,), w (D, 4D), h0/c0 (N, D) batch order; writes those rows of hidden[:, :, col:col+D] and last_h/last_c
    (N, D), and with ``save`` of run ``s`` of hidden_out/cells_out (T+1, S, N, D), gates_out (T, S, N, 4D),
    tanh_out (T, S, N, D) (row order)."""
    n_rows, d = stop - first, w.shape[0]
    h = numpy.empty((n_rows, d), dtype=x.dtype)
    cs = numpy.empty((n_rows, d), dtype=x.dtype)
    tc = numpy.empty(d, dtype=x.dtype)
    for i in range(n_rows):
        h[i] = h0[order[first + i]]
        cs[i] = c0[order[first + i]]
    a = numpy.empty((n_rows, 4 * d), dtype=x.dtype)
    bias_gates = bias[d:]
    for t in range(active.shape[0]):
        m = min(active[t], stop) - first                    # this part's rows still running
        if m <= 0:
            break
        gemm(m, h, w, False, 0, a)                         # a[:m] = h_prev @ W
        for i in range(m):
            n = order[first + i]
            p = lengths[n] - 1 - t if reverse else t
            xr, ai, hi, ci = x[n, p], a[i], h[i], cs[i]
            # One simple loop per stage over zero-based views: an index such as ai[d + j] may be negative to
            # Numba (it wraps it around), which keeps LLVM from vectorising the loop (8 ms against 1.6 ms).
            x_gates, gates = xr[d:], ai[d:]
            for j in range(d):
                ai[j] = tanh(xr[j] + bias[j] + ai[j])                       # candidate
            for j in range(3 * d):
                gates[j] = sigmoid(x_gates[j] + bias_gates[j] + gates[j])   # input, forget, output gates
            ig, fg, og = ai[d:2 * d], ai[2 * d:3 * d], ai[3 * d:]
            for j in range(d):
                cn = fg[j] * ci[j] + ig[j] * ai[j]
                ci[j] = cn
                tc[j] = tanh(cn)
            for j in range(d):
                hi[j] = og[j] * tc[j]
            out = hidden[n, p, col:col + d]
            for j in range(d):
                out[j] = hi[j]
            if save:
                r = first + i
                saved_tc, saved_h, saved_c = tanh_out[t, s, r], hidden_out[t + 1, s, r], cells_out[t + 1, s, r]
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


@kernel()
def lstm_backward_run(cells, gates, tanh_c, active, first, stop, w, grad_hidden, col, lengths, order, reverse,
                      grad_gates, grad_x, bias_sum, grad_h, grad_c, s):
    """BPTT of rows [first, stop) of run ``s``: cells (T+1, S, N, D), gates (T, S, N, 4D), tanh_c (T, S, N, D) as
    saved, w (D, 4D); reads the output gradient batch-major, grad_hidden[:, :, col:col+D] (N, T, W), at each
    row's own positions (lengths/order (N,) int64, ``reverse`` as the forward); writes the gate gradients into
    grad_gates (T, S, N, 4D) on those rows while active (row order, for the weight gradient) and into grad_x
    (N, T, 4D) batch-major (0 past each length), adds their sum over rows and steps into bias_sum (4D,) float64,
    and turns the rows' grad_h, grad_c (N, D) from dL/d(last states) into dL/d(h0, c0) (row order)."""
    d = w.shape[0]
    gh = numpy.empty(d, dtype=grad_h.dtype)
    part_h = grad_h[first:stop]
    for t in range(active.shape[0] - 1, -1, -1):
        m = min(active[t], stop) - first
        if m <= 0:
            continue
        for i in range(m):
            r = first + i
            n = order[r]
            p = lengths[n] - 1 - t if reverse else t
            g, gx, tc, cp = gates[t, s, r], grad_gates[t, s, r], tanh_c[t, s, r], cells[t, s, r]
            ig, fg, og = g[d:2 * d], g[2 * d:3 * d], g[3 * d:]
            gx_i, gx_f, gx_o = gx[d:2 * d], gx[2 * d:3 * d], gx[3 * d:]
            hi, ci, gs = part_h[i], grad_c[r], grad_hidden[n, p, col:col + d]
            for j in range(d):
                gh[j] = hi[j] + gs[j]
            for j in range(d):
                gx_o[j] = gh[j] * og[j] * (1 - og[j]) * tc[j]
                ci[j] += gh[j] * og[j] * (1 - tc[j] * tc[j])             # dL/dc at this step
            for j in range(d):
                gx[j] = ci[j] * ig[j] * (1 - g[j] * g[j])
                gx_i[j] = ci[j] * ig[j] * (1 - ig[j]) * g[j]
            for j in range(d):
                gx_f[j] = ci[j] * fg[j] * (1 - fg[j]) * cp[j]
                ci[j] *= fg[j]
            out = grad_x[n, p]
            for j in range(4 * d):
                out[j] = gx[j]
                bias_sum[j] += gx[j]
        gemm(m, grad_gates[t, s, first:stop], w, True, 0, part_h)          # dL/dh_prev = gates' grads @ W^T
    zero_past_lengths(grad_x, lengths, order, first, stop, 0, grad_x.shape[2])


# ---- callers ----------------------------------------------------------------------------------------------------

def row_order(lengths, num_steps):
    """(order, active): rows by decreasing length (stable) and the count of rows running at each step, int64."""
    order = numpy.argsort(-lengths, kind="stable")
    return order, active_counts(lengths, num_steps)


def active_counts(lengths, num_steps):
    """(T,) int64: how many of ``lengths`` exceed t, for t < num_steps."""
    ends = numpy.bincount(lengths, minlength=num_steps + 1)[:num_steps]
    return (len(lengths) - numpy.cumsum(ends)).astype(numpy.int64)


def row_parts(sorted_lengths, runs):
    """The row ranges [(first, stop), ...] of the row order that each of ``runs`` runs is cut into: one per thread
    left to a run (``OAR_NUM_THREADS // runs``), each of about equal steps and at least :data:`MIN_PART_ROWS`
    rows; [(0, N)] on one thread. sorted_lengths (N,): the rows' lengths in row order (decreasing)."""
    from ... import threadpool
    n = len(sorted_lengths)
    parts = min(threadpool.num_threads() // runs, n // MIN_PART_ROWS)
    if parts <= 1:
        return [(0, n)]
    steps = numpy.cumsum(sorted_lengths)
    cuts = numpy.searchsorted(steps, steps[-1] * numpy.arange(1, parts) / parts, side="right")
    bounds = sorted({0, n, *cuts.tolist()})
    return list(zip(bounds[:-1], bounds[1:]))


def each_part(fn, runs, parts):
    """fn(s, first, stop) for every run s and row range (first, stop) of ``parts``, spread over the CPU threads
    when there are several; then each thread's BLAS GEMMs run on one thread (:func:`one_blas_thread`). The
    calling thread sets that before the parts start and restores it after they all end: where the BLAS keeps
    the setting for the whole process (OpenBLAS's pthreads build does), threads that each set and restored it
    would race, and could leave every later GEMM of the process on one thread. A single part stays on the
    calling thread, its step GEMMs on every core."""
    from ... import threadpool
    items = [(s, first, stop) for s in range(runs) for first, stop in parts]
    if len(items) > 1 and threadpool.num_threads() > 1:
        one_blas_thread(lambda: threadpool.run_chunks(
            lambda start, stop: one_blas_thread(lambda: [fn(*items[k]) for k in range(start, stop)]), len(items),
            elements_per_index=threadpool.MIN_CHUNK_ELEMENTS))
    else:
        for item in items:
            fn(*item)


def written_while_active(shape, active, dtype, first=0):
    """A time-major array (T', S, N, F) for the kernels to write on the rows running at each step: uninitialised
    there, 0 elsewhere (at [first + t] the rows from active[t] on, and all of [:first]), so nothing reads garbage
    on a padded row, and a full batch costs no zero-filling pass. active (T,) int64."""
    a = numpy.empty(shape, dtype=dtype)
    a[:first] = 0
    padded = numpy.arange(shape[2]) >= numpy.asarray(active)[:, None]                 # (T, N): rows not running
    if padded.any():
        a[first:first + len(padded)].transpose(0, 2, 1, 3)[padded] = 0
    return a


def placeholder(dtype):
    """A (1, 1, 1, 1) array of ``dtype`` standing for the saved arrays a forward without ``save`` never writes."""
    return numpy.zeros((1, 1, 1, 1), dtype=dtype)


def contiguous(a):
    """``a`` as a C-contiguous, writable array (a read-only one, e.g. weights read from a file, is copied), so
    every call meets the one compiled signature per dtype."""
    a = numpy.ascontiguousarray(a)
    return a if a.flags.writeable else a.copy()


def gru_forward(xs, biases, weights, h0s, lengths, reverses, origin_mode, order, active, save):
    """S GRU runs over one padded batch.

    xs: S arrays (N, T, 3D); biases: S arrays of 3D values; weights: S (D, 3D) (flat-buffer layout); h0s: S
    (N, D) (batch order); lengths (N,) int64; reverses: S bools; order/active from :func:`row_order`.
    Returns (hidden (N, T, S*D), last (S, N, D) batch order, saved): saved is (states, ur, c, reset_h) as
    :func:`framework.kernels.gru.gru_forward` returns them (row order) when ``save``, else None.
    """
    runs = len(xs)
    n, num_steps, width = xs[0].shape
    d = width // 3
    dtype = xs[0].dtype
    hidden = numpy.empty((n, num_steps, runs * d), dtype=dtype)               # the kernels write all of it
    last = numpy.empty((runs, n, d), dtype=dtype)
    if save:
        states = written_while_active((num_steps + 1, runs, n, d), active, dtype, first=1)
        for s in range(runs):
            states[0, s] = h0s[s][order]
        ur = written_while_active((num_steps, runs, n, 2 * d), active, dtype)
        c = written_while_active((num_steps, runs, n, d), active, dtype)
        reset_h = written_while_active((num_steps, runs, n, d), active, dtype)
    else:
        states = ur = c = reset_h = placeholder(dtype)
    lengths = contiguous(numpy.asarray(lengths, dtype=numpy.int64))

    def one(s, first, stop):
        flat = contiguous(weights[s]).reshape(-1)
        gru_forward_run(contiguous(xs[s]), contiguous(biases[s]).reshape(-1), lengths, order, active, first, stop,
                        flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d),
                        contiguous(h0s[s]), bool(reverses[s]), bool(origin_mode), hidden, s * d,
                        last[s], bool(save), states, ur, c, reset_h, s)
    each_part(one, runs, row_parts(lengths[order], runs))
    return hidden, last, ((states, ur, c, reset_h) if save else None)


def gru_backward(states, ur, c, reset_h, w_ur, w_c, seq, grad_hidden, grad_last, origin_mode=False):
    """BPTT of the runs of :func:`gru_forward`: states, ur, c, reset_h as it saved them (row order), w_ur (S, D, 2D),
    w_c (S, D, D), seq the forward's :class:`~framework.kernels.runs.SortedRuns` (its lengths, row order and
    directions), grad_hidden (N, T, S*D) the output's gradient (batch-major), grad_last (S, N, D) the last
    states' (row order). Returns (grad_xs: S arrays (N, T, 3D) batch-major, grad_w_ur (S, D, 2D), grad_w_c
    (S, D, D), grad_biases (S, 3D), grad_h0 (S, N, D) row order)."""
    num_steps, runs, n, d = c.shape
    active = numpy.asarray(seq.active, dtype=numpy.int64)
    grad_ur = written_while_active(ur.shape, active, ur.dtype)
    grad_c = written_while_active(c.shape, active, c.dtype)
    grad_h = numpy.array(grad_last, dtype=c.dtype, order="C")
    grad_hidden, lengths, order, parts = _batch_major_inputs(grad_hidden, seq, runs)
    grad_xs = [numpy.empty((n, num_steps, 3 * d), dtype=c.dtype) for _ in range(runs)]
    bias_sums = numpy.zeros((runs, len(parts), 3 * d))

    def one(s, first, stop):
        gru_backward_run(states, ur, c, active, first, stop, contiguous(w_ur[s]), contiguous(w_c[s]), grad_hidden,
                         s * d, lengths, order, bool(seq.reverses[s]), bool(origin_mode), grad_ur, grad_c, grad_xs[s],
                         bias_sums[s, parts.index((first, stop))], grad_h[s], s)
    each_part(one, runs, parts)
    return (grad_xs, _over_time(states[:-1], grad_ur), _over_time(reset_h, grad_c),
            bias_sums.sum(axis=1).astype(c.dtype), grad_h)


def _batch_major_inputs(grad_hidden, seq, runs):
    """What a compiled backward reads besides the saved arrays: the output gradient C-contiguous, the lengths and
    row order as int64 arrays, and the row parts (:func:`row_parts`, over every row)."""
    lengths = contiguous(numpy.asarray(seq.lengths, dtype=numpy.int64))
    order = contiguous(numpy.asarray(seq.order, dtype=numpy.int64))
    return contiguous(grad_hidden), lengths, order, row_parts(lengths[order], runs)


def _over_time(a, b):
    """sum over steps and rows of a^T b per run: a (T, S, N, F), b (T, S, N, G) -> (S, F, G), one GEMM per run
    (the GEMM provider's when one is active)."""
    runs = a.shape[1]
    if runs == 1:
        return matmul(a.reshape(-1, a.shape[-1]).T, b.reshape(-1, b.shape[-1]))[None]
    return numpy.stack([matmul(a[:, s].reshape(-1, a.shape[-1]).T, b[:, s].reshape(-1, b.shape[-1]))
                        for s in range(runs)])


def lstm_forward(xs, biases, weights, h0s, c0s, lengths, reverses, order, active, save):
    """S LSTM runs over one padded batch.

    xs: S arrays (N, T, 4D); biases: S arrays of 4D values; weights: S (D, 4D); h0s, c0s: S (N, D) (batch
    order); lengths (N,) int64; reverses: S bools; order/active from :func:`row_order`. Returns (hidden
    (N, T, S*D), last_h (S, N, D), last_c (S, N, D), saved): saved is (hidden, cells, gates, tanh_c) as
    :func:`framework.kernels.lstm.lstm_forward` returns them (row order) when ``save``, else None.
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
        tanh_c = written_while_active((num_steps, runs, n, d), active, dtype)
    else:
        hidden_s = cells = gates = tanh_c = placeholder(dtype)
    lengths = contiguous(numpy.asarray(lengths, dtype=numpy.int64))

    def one(s, first, stop):
        lstm_forward_run(contiguous(xs[s]), contiguous(biases[s]).reshape(-1), lengths, order, active, first, stop,
                         contiguous(weights[s]), contiguous(h0s[s]), contiguous(c0s[s]), bool(reverses[s]), hidden,
                         s * d, last_h[s], last_c[s], bool(save), hidden_s, cells, gates, tanh_c, s)
    each_part(one, runs, row_parts(lengths[order], runs))
    return hidden, last_h, last_c, ((hidden_s, cells, gates, tanh_c) if save else None)


def lstm_backward(hidden, cells, gates, tanh_c, w, seq, grad_hidden, grad_last_h, grad_last_c):
    """BPTT of the runs of :func:`lstm_forward`: hidden, cells, gates, tanh_c as it saved them (row order), w
    (S, D, 4D), seq the forward's :class:`~framework.kernels.runs.SortedRuns`, grad_hidden (N, T, S*D) the
    output's gradient (batch-major), grad_last_h, grad_last_c (S, N, D) the last states' (row order). Returns
    (grad_xs: S arrays (N, T, 4D) batch-major, grad_w (S, D, 4D), grad_biases (S, 4D), grad_h0, grad_c0 (S, N, D)
    row order)."""
    num_steps, runs, n, width = gates.shape
    active = numpy.asarray(seq.active, dtype=numpy.int64)
    grad_gates = written_while_active(gates.shape, active, gates.dtype)
    grad_h = numpy.array(grad_last_h, dtype=gates.dtype, order="C")
    grad_c = numpy.array(grad_last_c, dtype=gates.dtype, order="C")
    grad_hidden, lengths, order, parts = _batch_major_inputs(grad_hidden, seq, runs)
    grad_xs = [numpy.empty((n, num_steps, width), dtype=gates.dtype) for _ in range(runs)]
    bias_sums = numpy.zeros((runs, len(parts), width))

    def one(s, first, stop):
        lstm_backward_run(cells, gates, tanh_c, active, first, stop, contiguous(w[s]), grad_hidden, s * (width // 4),
                          lengths, order, bool(seq.reverses[s]), grad_gates, grad_xs[s],
                          bias_sums[s, parts.index((first, stop))], grad_h[s], grad_c[s], s)
    each_part(one, runs, parts)
    return (grad_xs, _over_time(hidden[:-1], grad_gates), bias_sums.sum(axis=1).astype(gates.dtype), grad_h,
            grad_c)
