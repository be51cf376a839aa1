"""framework.threadpool: the chunked NumPy work gives the unchunked results, bit for bit, for any thread count.

Each op that spreads its non-GEMM work over the threads (convolution columns and their adjoint, batch norm,
ReLU, pooling, elementwise math, the optimizers' updates, the recurrent kernels) runs here with chunks forced
small, at 1 to 4 threads, and must give exactly the 1-thread arrays: every chunk computes its own elements in
the same order. The one reduction split along a reduced axis would only agree within rounding; none of the ops
here does that (batch norm's per-channel sums are split over channels).
"""
import os
import subprocess
import sys
import textwrap

import numpy
import pytest

import framework
import framework.nn.functional as F
from framework import nn, threadpool
from framework.optimizer import Adam, Momentum

THREADS = (1, 2, 3, 4)


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 64 elements, so that every test array is split; the thread count is restored afterwards."""
    monkeypatch.setattr(threadpool, "MIN_CHUNK_ELEMENTS", 64)
    before = threadpool.num_threads()
    yield
    threadpool.set_num_threads(before)


def _at_each_thread_count(fn):
    """fn() -> list of arrays, once per thread count; asserts every run equals the 1-thread one exactly."""
    results = []
    for count in THREADS:
        threadpool.set_num_threads(count)
        results.append([numpy.asarray(a) for a in fn()])
    for count, arrays in zip(THREADS[1:], results[1:]):
        for k, (got, want) in enumerate(zip(arrays, results[0])):
            assert got.dtype == want.dtype and numpy.array_equal(got, want), \
                f"array {k} differs with {count} threads (max diff {numpy.abs(got - want).max()})"


def test_chunk_bounds_cover_the_range_once():
    for length, per, threads in ((10, 1 << 20, 3), (7, 1, 4), (1, 1 << 30, 4), (100, 1 << 16, 2)):
        bounds = threadpool.chunk_bounds(length, per, threads)
        assert bounds[0][0] == 0 and bounds[-1][1] == length
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:])) and len(bounds) <= threads
    assert threadpool.chunk_bounds(1000, 1, 4) == [(0, 1000)]             # too small to split


def test_run_chunks_raises_a_chunks_error_after_all_finish(small_chunks):
    threadpool.set_num_threads(3)
    seen = []

    def work(lo, hi):
        seen.append((lo, hi))
        if lo > 0:
            raise KeyError(f"chunk {lo}")
    with pytest.raises(KeyError, match="chunk"):
        threadpool.run_chunks(work, 300, 64)
    assert sorted(seen) == [(0, 100), (100, 200), (200, 300)]


def test_a_call_made_inside_a_chunk_runs_in_that_thread(small_chunks):
    threadpool.set_num_threads(2)
    inner = []

    def outer(lo, hi):
        threadpool.run_chunks(lambda a, b: inner.append((lo, a, b)), 10, 1000)
    threadpool.run_chunks(outer, 200, 64)
    assert sorted(inner) == [(0, 0, 10), (100, 0, 10)]


def test_a_bad_thread_count_is_refused():
    with pytest.raises(ValueError, match="positive"):
        threadpool.set_num_threads(0)
    script = "import framework.threadpool as p; p.num_threads()"
    result = subprocess.run([sys.executable, "-c", script], env={**os.environ, "OAR_NUM_THREADS": "two"},
                            capture_output=True, text=True)
    assert result.returncode != 0 and "OAR_NUM_THREADS must be a positive integer, got 'two'" in result.stderr


def test_elementwise_copy_and_fill_equal_numpy(small_chunks):
    rng = numpy.random.default_rng(0)
    a, b = rng.standard_normal((6, 5, 7)).astype("float32"), rng.standard_normal((5, 1)).astype("float32")
    strided = rng.standard_normal((7, 6, 5)).astype("float32").transpose(1, 2, 0)

    def run():
        into = numpy.empty((6, 5, 7), dtype="float64")
        return [threadpool.elementwise(numpy.add, a, b), threadpool.elementwise(numpy.multiply, a, numpy.float32(3)),
                threadpool.elementwise(numpy.maximum, strided, a), threadpool.copyto(into, strided),
                threadpool.fill(numpy.empty((9, 4)), 2.5)]
    _at_each_thread_count(run)
    got = run()
    for array, want in zip(got, (a + b, a * 3, numpy.maximum(strided, a), strided.astype("float64"),
                                 numpy.full((9, 4), 2.5))):
        assert numpy.array_equal(array, want)


def _conv_net():
    framework.seed(0)
    return nn.Sequential(nn.Conv2D(3, 8, 3, padding=1, stride=2), nn.BatchNorm2D(8), nn.ReLU(),
                         nn.MaxPool2D(3, stride=2, padding=1), nn.Conv2D(8, 8, 1), nn.BatchNorm2D(8), nn.ReLU(),
                         nn.Conv2D(8, 4, 3, padding=1, groups=2), nn.AvgPool2D(2))


def test_conv_batch_norm_relu_and_pooling_are_thread_count_invariant(small_chunks):
    rng = numpy.random.default_rng(1)
    x = rng.standard_normal((4, 3, 20, 20))

    def run():
        net = _conv_net().to("cpu")
        net.train()
        for p in net.parameters():
            p.data = p.data.astype("float64")
        for name, buffer in net.named_buffers():
            buffer.data = buffer.data.astype("float64")
        inputs = framework.to_tensor(x, requires_grad=True)
        out = net(inputs)
        (out * out).sum().backward()
        return [out.numpy(), inputs.grad.numpy()] + [p.grad.numpy() for p in net.parameters()]
    _at_each_thread_count(run)


def test_elementwise_math_is_thread_count_invariant(small_chunks):
    rng = numpy.random.default_rng(2)
    a, b = rng.standard_normal((8, 30)), rng.standard_normal((1, 30))

    def run():
        x, y = framework.to_tensor(a, requires_grad=True), framework.to_tensor(b, requires_grad=True)
        out = F.relu(x * y + x - y)
        out.sum().backward()
        return [out.numpy(), x.grad.numpy(), y.grad.numpy()]
    _at_each_thread_count(run)


@pytest.mark.parametrize("optimizer", [Adam, Momentum])
def test_optimizer_updates_are_thread_count_invariant(small_chunks, monkeypatch, optimizer):
    rng = numpy.random.default_rng(3)
    start, grads = rng.standard_normal((40, 50)), [rng.standard_normal((40, 50)) for _ in range(3)]

    def run():
        param = framework.to_tensor(start.copy(), requires_grad=True)
        opt = optimizer(learning_rate=0.1, parameters=[param])
        for g in grads:
            param.grad = framework.to_tensor(g)
            opt.step()
        return [param.numpy()]
    _at_each_thread_count(run)


def test_recurrent_layers_are_thread_count_invariant(small_chunks):
    rng = numpy.random.default_rng(4)
    x = rng.standard_normal((5, 7, 6))
    lengths = numpy.array([7, 3, 0, 5, 7])

    def run():
        framework.seed(0)
        arrays = []
        for cls in (nn.LSTM, nn.GRU):
            layer = cls(6, 4, num_layers=2, direction="bidirect")
            for p in layer.parameters():
                p.data = p.data.astype("float64")
            inputs = framework.to_tensor(x, requires_grad=True)
            out, _ = layer(inputs, lengths)
            (out * out).sum().backward()
            arrays += [out.numpy(), inputs.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]
        return arrays
    _at_each_thread_count(run)


TRAINING_SCRIPT = textwrap.dedent("""
    import sys
    import numpy
    import framework
    import framework.nn.functional as F
    from framework import nn
    from framework.optimizer import Momentum

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2D(3, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU(),
                                      nn.MaxPool2D(2), nn.Conv2D(16, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU())
            self.lstm = nn.LSTM(16 * 8, 24, direction="bidirect")
            self.out = nn.Linear(48, 5)

        def forward(self, x):
            h = self.conv(x)                                       # (N, 16, 8, 8)
            seq = h.transpose([0, 3, 1, 2]).reshape([h.shape[0], 8, -1])   # (N, 8 columns, 16 * 8)
            hidden, _ = self.lstm(seq)
            return self.out(hidden.mean(axis=1))

    framework.seed(0)
    rng = numpy.random.default_rng(0)
    x = framework.to_tensor(rng.standard_normal((16, 3, 16, 16)).astype("float32"))
    y = framework.to_tensor(rng.integers(0, 5, 16))
    net = Net()
    opt = Momentum(learning_rate=0.05, momentum=0.9, parameters=net.parameters())
    for _ in range(4):
        F.cross_entropy(net(x), y).backward()
        opt.step()
        opt.clear_grad()
    numpy.savez(sys.argv[1], **{k: v.numpy() for k, v in net.state_dict().items()})
""")


def test_training_with_one_and_two_threads_gives_the_same_weights(tmp_path):
    """Real processes with OAR_NUM_THREADS (and BLAS) at 1 and 2: after four steps the weights agree within
    float32 rounding (BLAS may order a GEMM's sums differently with more threads)."""
    script = tmp_path / "train.py"
    script.write_text(TRAINING_SCRIPT)
    weights = {}
    for count in (1, 2):
        env = {**os.environ, "OAR_NUM_THREADS": str(count), "OMP_NUM_THREADS": str(count),
               "OPENBLAS_NUM_THREADS": str(count)}
        out = tmp_path / f"weights{count}.npz"
        subprocess.run([sys.executable, str(script), str(out)], env=env, check=True, timeout=300)
        weights[count] = dict(numpy.load(out))
    assert weights[1].keys() == weights[2].keys()
    for name, value in weights[1].items():
        numpy.testing.assert_allclose(weights[2][name], value, rtol=1e-4, atol=1e-5, err_msg=name)


class _ChunkedWork:
    """A dataset whose items are made by chunked work on the pool."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        out = numpy.empty(4096, numpy.float32)
        threadpool.copyto(out, numpy.full(4096, index, numpy.float32))
        return out


def test_a_forked_worker_makes_its_own_pool(small_chunks):
    """The parent's pool threads do not exist after fork: a process worker's chunked work must not wait on them."""
    from framework.io import DataLoader
    threadpool.set_num_threads(2)
    threadpool.copyto(numpy.empty(4096, numpy.float32), 1.0)          # the parent's pool now exists
    loader = DataLoader(_ChunkedWork(), batch_size=2, num_workers=1, worker_type="process", start_method="fork",
                        timeout=60)
    batches = [numpy.asarray(batch) for batch in loader]
    assert [b[:, 0].tolist() for b in batches] == [[0, 1], [2, 3]]
