"""framework.distributed in one process: the no-op world of one rank, grad-ready hooks, DataParallel's
bucketing against a stand-in peer, SyncBatchNorm's arithmetic over two threads, metric merging,
sharded evaluation, the launcher command. (Real multi-process runs: test_distributed_mpi.py.)"""
import threading

import numpy
import pytest

import framework
import framework.distributed as dist
import framework.nn.functional as F
from framework import nn
from framework.distributed import launcher
from framework.distributed.parallel import assign_buckets
from framework.distributed.sync_batch_norm import sync_batch_norm
from framework.engine import runner
from framework.engine.metrics import Accuracy, MeanLoss, Metric
from framework.tensor import OpError, register_backward_end_hook
from framework.testing import assert_allclose


# ---- the world of one process --------------------------------------------------
def test_single_process_world_and_noop_collectives():
    env = dist.init_parallel_env()
    assert (env.rank, env.world_size, env.backend) == (0, 1, "single")
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_local_rank() == 0
    t = framework.to_tensor(numpy.arange(3.0))
    for op in dist.REDUCE_OPS:
        assert dist.all_reduce(t, op) is t and t.tolist() == [0.0, 1.0, 2.0]
    assert dist.broadcast(t, src=0).tolist() == [0.0, 1.0, 2.0]
    gathered = dist.all_gather([], t)
    assert len(gathered) == 1 and gathered[0].tolist() == [0.0, 1.0, 2.0]
    assert dist.all_gather_object({"a": 1}) == [{"a": 1}] and dist.broadcast_object("x") == "x"
    dist.barrier()


def test_collective_argument_errors():
    with pytest.raises(dist.DistributedError, match="op must be one of"):
        dist.all_reduce(framework.to_tensor([1.0]), "mean")
    with pytest.raises(dist.DistributedError, match="src rank 1 is outside the world of 1"):
        dist.broadcast(framework.to_tensor([1.0]), src=1)
    with pytest.raises(dist.DistributedError, match="expected a Tensor or an array"):
        dist.all_reduce([1.0, 2.0])


def test_launcher_environment_and_rank_seeds(monkeypatch):
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert dist.launched_by_mpi() == 0
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert dist.launched_by_mpi() == 4
    assert dist.rank_seed(7, 0) == 7
    seeds = {dist.rank_seed(7, r) for r in range(1, 4)}
    assert len(seeds) == 3 and 7 not in seeds and dist.rank_seed(7, 2) == dist.rank_seed(7, 2)


def test_mpiexec_command(monkeypatch):
    assert dist.mpiexec_command(3, ["python", "x.py"], mpiexec="/opt/mpi/bin/mpiexec") == [
        "/opt/mpi/bin/mpiexec", "-n", "3", "python", "x.py"]
    with pytest.raises(dist.DistributedError, match="positive integer"):
        dist.mpiexec_command(0, ["python"], mpiexec="/opt/mpi/bin/mpiexec")
    monkeypatch.setattr(launcher, "find_mpiexec", lambda: None)
    with pytest.raises(dist.DistributedError, match="pip install 'oar\\[dist\\]'"):
        dist.mpiexec_command(2, ["python"])


# ---- grad-ready and backward-end hooks ----------------------------------------------
def test_grad_ready_hook_fires_once_with_the_complete_gradient():
    w = framework.to_tensor([1.0, 2.0], requires_grad=True)
    b = framework.to_tensor([0.5, 0.5], requires_grad=True)
    seen = []
    w.register_grad_ready_hook(lambda leaf: seen.append(("w", leaf.grad.tolist(), b.grad)))
    b.register_grad_ready_hook(lambda leaf: seen.append(("b", leaf.grad.tolist(), None)))
    ends = []
    handle = register_backward_end_hook(lambda: ends.append((w.grad.tolist(), b.grad.tolist())))
    loss = ((w * w).sum() + (w * 3.0).sum()) * (b * 2.0).sum()  # w used twice
    loss.backward()
    handle.remove()
    # dloss/dw = (2w + 3) * sum(2b) = (2w + 3) * 2; dloss/db = 2 * (sum(w²) + 3 sum(w)) = 2 * 14
    assert sorted(s[0] for s in seen) == ["b", "w"] and len(seen) == 2
    assert dict((s[0], s[1]) for s in seen) == {"w": [10.0, 14.0], "b": [28.0, 28.0]}
    assert ends == [([10.0, 14.0], [28.0, 28.0])]
    loss2 = (w * 1.0).sum()
    loss2.backward()
    assert len(ends) == 1 and seen[-1][:2] == ("w", [11.0, 15.0])  # accumulated total; the end hook is gone


def test_grad_ready_hooks_fire_during_backward_from_the_output_side():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    first, last = model[0].weight, model[2].weight
    when = {}
    last.register_grad_ready_hook(lambda leaf: when.setdefault("last", first.grad is None))
    handle = first.register_grad_ready_hook(lambda leaf: when.setdefault("first", leaf.grad is not None))
    model(framework.to_tensor(numpy.ones((2, 3), "float32"))).sum().backward()
    assert when == {"last": True, "first": True}
    handle.remove()
    when.clear()
    model(framework.to_tensor(numpy.ones((2, 3), "float32"))).sum().backward()
    assert when == {"last": False}


def test_grad_ready_hook_only_on_leaves():
    x = framework.to_tensor([1.0], requires_grad=True)
    with pytest.raises(OpError, match="only leaf tensors"):
        (x * 2.0).register_grad_ready_hook(lambda leaf: None)


# ---- DataParallel against a stand-in second rank --------------------------------------
class _MirrorPeer:
    """A communicator of world size 2 whose other rank holds exactly this rank's values.

    ``events`` records each collective; reductions double the buffer (the peer's copy added).
    """

    world_size, rank, local_rank, name = 2, 0, 0, "mirror"

    def __init__(self, watch=None):
        self.events, self.watch = [], watch

    def dup(self):
        return self

    def all_gather_object(self, obj):
        return [obj, obj]

    def broadcast(self, array, root=0):
        self.events.append(("broadcast", array.size))
        return array

    def all_reduce_async(self, array):
        self.events.append(("all_reduce", array.size, self.watch() if self.watch else None))
        array *= 2
        return _Finished()


class _Finished:
    def test(self):
        return True

    def wait(self):
        return None


def _mlp():
    framework.seed(3)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))


def test_assign_buckets_by_size_dtype_and_reverse_order():
    params = [framework.to_tensor(numpy.zeros(n, dtype)) for n, dtype in
              [(10, "float32"), (10, "float32"), (30, "float32"), (5, "float64"), (5, "float64")]]
    buckets = assign_buckets(params, bucket_bytes=80)
    position = {id(p): i for i, p in enumerate(params)}
    assert [[position[id(p)] for p in b] for b in buckets] == [[4, 3], [2], [1, 0]]


def test_data_parallel_reduces_buckets_in_order_during_backward():
    reference, wrapped = _mlp(), _mlp()
    first_weight = wrapped[0].weight
    peer = _MirrorPeer(watch=lambda: first_weight.grad is None)
    model = dist.DataParallel(wrapped, bucket_size_mb=1e-9, communicator=peer)  # one bucket per parameter
    assert [e[1] for e in peer.events] == [sum(p.size for p in reference.parameters())]  # one fp32 broadcast
    x = framework.to_tensor(numpy.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    model(x).sum().backward()
    reference(x).sum().backward()
    launches = [e for e in peer.events if e[0] == "all_reduce"]
    sizes = [p.size + 1 for p in reversed(list(reference.parameters()))]  # each bucket: grads + one used flag
    assert [e[1] for e in launches] == sizes
    assert launches[0][2] is True  # the output layer's bucket started while backward was still running
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert_allclose(p.grad, q.grad, rtol=1e-6, atol=1e-7, msg=name)


def test_data_parallel_unused_parameters_and_no_sync():
    class WithSpare(nn.Layer):
        def __init__(self):
            super().__init__()
            self.used, self.spare = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(x)

    peer = _MirrorPeer()
    model = dist.DataParallel(WithSpare(), communicator=peer)
    x = framework.to_tensor(numpy.ones((3, 2), "float32"))
    model(x).sum().backward()
    assert model.spare.weight.grad is None and model.spare.bias.grad is None  # no rank used it
    assert model.used.bias.grad.tolist() == [3.0, 3.0]
    launched = len(peer.events)
    with model.no_sync():
        model(x).sum().backward()
    assert len(peer.events) == launched and model.used.bias.grad.tolist() == [6.0, 6.0]


def test_data_parallel_is_the_wrapped_model_to_the_outside():
    inner = _mlp()
    peer = _MirrorPeer()
    model = dist.DataParallel(inner, communicator=peer)
    assert list(model.state_dict()) == list(inner.state_dict())
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in inner.named_parameters()]
    inner.note = "kept"
    assert model.note == "kept"  # other attributes come from the wrapped model
    model.set_state_dict({k: numpy.zeros(v.shape, "float32") for k, v in inner.state_dict().items()})
    assert float(abs(inner[0].weight.numpy()).sum()) == 0.0
    single = dist.DataParallel(inner)  # a world of one: only forwards
    x = framework.to_tensor(numpy.ones((1, 3), "float32"))
    assert_allclose(single(x), inner(x))


def test_data_parallel_takes_rank0_buffers_when_entering_eval():
    peer = _MirrorPeer()
    model = dist.DataParallel(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1D(3)), communicator=peer)
    peer.events.clear()
    model.eval()
    assert peer.events == [("broadcast", 6)] and not model._layers[1].training
    model.eval()  # already in eval mode: nothing to do
    assert len(peer.events) == 1


@pytest.mark.gpu
def test_data_parallel_buckets_on_the_gpu():
    framework.set_device("gpu")
    reference, wrapped = _mlp(), _mlp()
    model = dist.DataParallel(wrapped, bucket_size_mb=1e-9, communicator=_MirrorPeer())
    x = framework.to_tensor(numpy.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    model(x).sum().backward()
    reference(x).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.grad.device == "gpu"
        assert_allclose(p.grad, q.grad, rtol=1e-6, atol=1e-7)


@pytest.mark.gpu
def test_nccl_communicator_of_one_gpu_is_exact():
    import cupy
    from framework.distributed.comm import NCCLCommunicator, SingleProcess
    from framework.distributed.watchdog import Watchdog
    nccl = NCCLCommunicator(SingleProcess(), Watchdog(60, 0, 1))
    values = cupy.asarray(numpy.random.default_rng(0).normal(size=1000).astype("float32"))
    for op in dist.REDUCE_OPS:
        array = values.copy()
        assert nccl.all_reduce(array, op) is array
        assert bool((array == values).all()), op
    array = values.copy()
    handle = nccl.all_reduce_async(array)
    handle.wait()
    assert handle.test() and bool((array == values).all())
    assert bool((nccl.broadcast(values.copy(), 0) == values).all())
    gathered = nccl.all_gather(values)
    assert gathered.shape == (1, 1000) and bool((gathered[0] == values).all())
    host = numpy.arange(4.0)
    assert nccl.all_reduce(host).tolist() == [0.0, 1.0, 2.0, 3.0]  # NumPy arrays go through the bootstrap
    nccl.barrier()


# ---- SyncBatchNorm --------------------------------------------------------------------
class _ThreadRanks:
    """Communicators for ranks that are threads of this process (for testing collective math)."""

    def __init__(self, n):
        self.n, self.barrier, self.slots = n, threading.Barrier(n), [None] * n

    def exchange(self, rank, array):
        self.slots[rank] = array.copy()
        self.barrier.wait()
        out = numpy.stack(self.slots)
        self.barrier.wait()
        return out


class _ThreadComm:
    def __init__(self, ranks, rank):
        self.ranks, self.rank, self.world_size = ranks, rank, ranks.n

    def all_gather(self, array):
        return self.ranks.exchange(self.rank, array)

    def all_reduce(self, array, op="sum"):
        array[...] = self.ranks.exchange(self.rank, array).sum(axis=0)
        return array


def _bn_inputs():
    rng = numpy.random.default_rng(5)
    return (rng.normal(2.0, 3.0, (8, 3, 4, 4)), rng.normal(size=(8, 3, 4, 4)),
            rng.uniform(0.5, 2.0, 3), rng.normal(size=3))


def test_sync_batch_norm_over_two_ranks_equals_batch_norm_on_the_whole_batch():
    x, upstream, w0, b0 = _bn_inputs()
    weight, bias = framework.to_tensor(w0, requires_grad=True), framework.to_tensor(b0, requires_grad=True)
    mean, var = framework.to_tensor(numpy.zeros(3)), framework.to_tensor(numpy.ones(3))
    xt = framework.to_tensor(x, requires_grad=True)
    y = F.batch_norm(xt, mean, var, weight, bias, training=True, momentum=0.8)
    (y * framework.to_tensor(upstream)).sum().backward()

    ranks, results = _ThreadRanks(2), [None, None]

    def run(rank):
        part = slice(rank, None, 2)
        w, b = framework.to_tensor(w0, requires_grad=True), framework.to_tensor(b0, requires_grad=True)
        m, v = framework.to_tensor(numpy.zeros(3)), framework.to_tensor(numpy.ones(3))
        xs = framework.to_tensor(x[part], requires_grad=True)
        ys = sync_batch_norm(xs, m, v, w, b, momentum=0.8, communicator=_ThreadComm(ranks, rank))
        (ys * framework.to_tensor(upstream[part])).sum().backward()
        results[rank] = (ys.numpy(), xs.grad.numpy(), w.grad.numpy(), b.grad.numpy(), m.numpy(), v.numpy())

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for rank, (ys, gx, gw, gb, m, v) in enumerate(results):
        part = slice(rank, None, 2)
        assert_allclose(ys, y.numpy()[part], rtol=1e-10, atol=1e-10)
        assert_allclose(gx, xt.grad.numpy()[part], rtol=1e-9, atol=1e-10)
        assert_allclose(m, mean.numpy(), rtol=1e-10, atol=1e-12)
        assert_allclose(v, var.numpy(), rtol=1e-10, atol=1e-12)
    assert_allclose(results[0][2] + results[1][2], weight.grad, rtol=1e-9, atol=1e-10)
    assert_allclose(results[0][3] + results[1][3], bias.grad, rtol=1e-9, atol=1e-10)


def test_convert_sync_batchnorm_keeps_parameters_and_names():
    model = nn.Sequential(nn.Conv2D(3, 4, 3), nn.BatchNorm2D(4), nn.Sequential(nn.BatchNorm2D(4)))
    weight, running = model[1].weight, model[1].running_mean
    keys = list(model.state_dict())
    converted = dist.convert_sync_batchnorm(model)
    assert converted is model and isinstance(model[1], dist.SyncBatchNorm) and isinstance(model[2][0],
                                                                                         dist.SyncBatchNorm)
    assert model[1].weight is weight and model[1].running_mean is running and list(model.state_dict()) == keys
    assert isinstance(dist.convert_sync_batchnorm(nn.BatchNorm1D(2)), dist.SyncBatchNorm)


def test_sync_batch_norm_in_one_process_is_batch_norm():
    x = framework.to_tensor(numpy.random.default_rng(1).normal(size=(4, 2, 3)).astype("float32"))
    plain, synced = nn.BatchNorm1D(2), dist.SyncBatchNorm(2)
    assert_allclose(synced(x), plain(x))
    assert_allclose(synced.running_var, plain.running_var)
    with pytest.raises(ValueError, match="expected 2 channels"):
        synced(framework.to_tensor(numpy.zeros((4, 3, 3), "float32")))


# ---- metrics and evaluation shards --------------------------------------------------
def test_metric_states_merge_by_sum_and_concatenation():
    merged = dist.merge_states([{"n": 2, "hist": numpy.array([1, 2]), "scores": [0.1]},
                                {"n": 3, "hist": numpy.array([0, 5]), "scores": [0.7, 0.2]}])
    assert merged["n"] == 5 and merged["hist"].tolist() == [1, 7] and merged["scores"] == [0.1, 0.7, 0.2]
    accuracy, loss = Accuracy(), MeanLoss()
    accuracy.update({"pred": numpy.array([1, 0])}, {"label": numpy.array([1, 1])})
    accuracy.set_state(dist.merge_states([accuracy.state(), {"correct": 3, "total": 3}]))
    assert accuracy.compute() == {"acc": 0.8}
    assert loss.state() == {"sum": 0.0, "count": 0}


def test_metric_without_counters_is_reported():
    class Median(Metric):
        def reset(self):
            self.values = []

    with pytest.raises(NotImplementedError, match="declares no `counters`"):
        Median().state()
    with pytest.raises(dist.DistributedError, match="metric Median cannot be evaluated on several processes"):
        dist.check_reducible([Accuracy(), Median()])


def test_sharded_batch_sampler_covers_every_sample_once():
    shards = [list(dist.ShardedBatchSampler(11, 2, rank, 3)) for rank in range(3)]
    assert shards[0] == [[0, 3], [6, 9]] and shards[2] == [[2, 5], [8]]
    flat = sorted(i for shard in shards for batch in shard for i in batch)
    assert flat == list(range(11))
    assert [len(dist.ShardedBatchSampler(11, 2, rank, 3)) for rank in range(3)] == [2, 2, 2]


def test_runner_loaders_split_the_global_batch():
    train_cfg = {**runner.TRAIN_DEFAULTS, "batch_size": 8, "eval_batch_size": 5, "seed": 3}
    dataset = list(range(32))
    single = [b.tolist() for b in runner.build_loader(dataset, None, train_cfg, training=True)]
    ranks = [[b.tolist() for b in runner.build_loader(dataset, None, train_cfg, True, rank=r, world_size=2)]
             for r in range(2)]
    assert all(len(batch) == 4 for shard in ranks for batch in shard)
    for step, batch in enumerate(single):
        assert sorted(batch) == sorted(ranks[0][step] + ranks[1][step])
    evals = [[b.tolist() for b in runner.build_loader(dataset, None, train_cfg, False, rank=r, world_size=2)]
             for r in range(2)]
    assert [len(b) for b in evals[0]] == [3] * 5 + [1]
    assert sorted(i for shard in evals for batch in shard for i in batch) == dataset
