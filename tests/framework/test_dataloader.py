"""framework.io.DataLoader: order independent of workers, errors, shutdown, resume."""
import multiprocessing
import os
import signal
import threading
import time

import numpy
import pytest

from framework.io import worker
from framework.io import (BucketBatchSampler, DataLoader, DataLoaderError, Dataset, IterableDataset,
                          SequenceCollator, sample_rng)

WORKERS = [(0, "thread"), (1, "thread"), (3, "thread"), (1, "process"), (3, "process")]


class Numbers(Dataset):
    """Sample i: {"index": i, "x": (2,) float32, "noise": a draw from sample_rng()}; optionally fails or sleeps."""

    def __init__(self, n=23, fail_at=None, sleep=0.0, exit_at=None):
        self.n, self.fail_at, self.sleep, self.exit_at = n, fail_at, sleep, exit_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"corrupt record {i}")
        if i == self.exit_at:
            os._exit(3)
        time.sleep(self.sleep)
        return {"index": i, "x": numpy.full(2, i, dtype=numpy.float32), "noise": sample_rng().random()}


class Images(Dataset):
    """Sample i: {"image": (64, 64) float32 filled with i}; a batch of 4 is 64 KiB, sent via shared memory."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"image": numpy.full((64, 64), i, dtype=numpy.float32)}


class Sentences(Dataset):
    def __init__(self, n=40):
        self.lengths = numpy.random.default_rng(0).integers(1, 12, size=n)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        return {"tokens": list(range(int(self.lengths[i]))), "label": int(i % 2)}


class Stream(IterableDataset):
    def __init__(self, n=10, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __iter__(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise OSError("stream broke")
            yield {"index": i}

    def __len__(self):
        return self.n


def _leftover_workers():
    threads = [t for t in threading.enumerate() if t.name.startswith("DataLoader-") or "QueueFeeder" in t.name]
    return threads + multiprocessing.active_children()


def _indices(loader):
    return [b["index"].tolist() for b in loader]


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    assert _leftover_workers() == []


@pytest.mark.parametrize("num_workers, worker_type", WORKERS)
def test_order_and_batches_do_not_depend_on_workers(num_workers, worker_type):
    def two_epochs(num_workers, worker_type):
        loader = DataLoader(Numbers(), batch_size=4, shuffle=True, seed=5, num_workers=num_workers,
                            worker_type=worker_type)
        return [[b["index"].tolist() + b["noise"].tolist() for b in loader] for _ in range(2)]

    expected = two_epochs(0, "thread")
    assert two_epochs(num_workers, worker_type) == expected
    assert expected[0] != expected[1]
    assert sorted(i for b in expected[0] for i in b[:len(b) // 2]) == list(range(23))


def test_order_differs_across_seeds_and_not_shuffled_is_sequential():
    assert _indices(DataLoader(Numbers(), 4, shuffle=True, seed=1)) != _indices(DataLoader(Numbers(), 4, shuffle=True))
    assert _indices(DataLoader(Numbers(9), 4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]


def test_batches_are_numpy_and_drop_last():
    loader = DataLoader(Numbers(10), batch_size=4, drop_last=True)
    batches = list(loader)
    assert len(loader) == len(batches) == 2 and batches[0]["x"].shape == (4, 2)
    assert batches[0]["x"].dtype == numpy.float32 and batches[0]["index"].dtype == numpy.int64


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_batch_sampler_with_padding_collate(worker_type):
    data = Sentences()
    sampler = BucketBatchSampler(data.lengths, batch_size=8, bucket_size=16, seed=0)
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=SequenceCollator("tokens"), num_workers=2,
                        worker_type=worker_type)
    batches = list(loader)
    assert len(batches) == len(loader) == 5
    for batch in batches:
        assert batch["tokens"].shape[1] == batch["tokens_lengths"].max()
        numpy.testing.assert_array_equal((batch["tokens"] > 0).sum(1) + 1, batch["tokens_lengths"])


def test_large_arrays_travel_through_shared_memory_files(tmp_path):
    batch = {"image": numpy.arange(1 << 15, dtype=numpy.float32).reshape(128, 256), "label": numpy.arange(3)}
    data = worker._dumps(batch, str(tmp_path))
    assert len(data) < 1024 and len(list(tmp_path.iterdir())) == 1
    again = worker.pickle.loads(data)
    numpy.testing.assert_array_equal(again["image"], batch["image"])
    assert again["image"].flags.writeable and list(tmp_path.iterdir()) == []


def test_process_workers_send_large_batches_and_clean_up(monkeypatch):
    folders = []
    make = worker._make_shared_folder
    monkeypatch.setattr(worker, "_make_shared_folder", lambda: folders.append(make()) or folders[-1])
    expected = [b["image"] for b in DataLoader(Images(), batch_size=4)]
    got = [b["image"] for b in DataLoader(Images(), batch_size=4, num_workers=2, worker_type="process")]
    assert len(got) == len(expected) == 3 and all(numpy.array_equal(a, b) for a, b in zip(got, expected))
    assert folders and not any(f is not None and os.path.exists(f) for f in folders)


@pytest.mark.parametrize("num_workers, worker_type", WORKERS)
def test_sample_error_is_reraised_with_index(num_workers, worker_type):
    loader = DataLoader(Numbers(fail_at=13), batch_size=4, num_workers=num_workers, worker_type=worker_type)
    with pytest.raises(DataLoaderError) as info:
        list(loader)
    message = str(info.value)
    assert "sample 13 raised ValueError: corrupt record 13" in message
    assert (info.value.index, info.value.exc_type) == (13, "ValueError")


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_collate_error_names_the_samples(worker_type):
    def collate(samples):
        raise TypeError("cannot batch")

    if worker_type == "process" and multiprocessing.get_start_method(allow_none=True) not in (None, "fork"):
        pytest.skip("a local collate_fn needs the fork start method")
    loader = DataLoader(Numbers(6), batch_size=3, num_workers=2, worker_type=worker_type, collate_fn=collate)
    with pytest.raises(DataLoaderError, match=r"collate_fn on samples \[0, 1, 2\] raised TypeError: cannot batch"):
        next(iter(loader))


def test_dead_worker_process_is_reported():
    loader = DataLoader(Numbers(exit_at=5), batch_size=2, num_workers=2, worker_type="process")
    with pytest.raises(DataLoaderError, match="stopped unexpectedly \\(exit code 3\\)"):
        list(loader)


def test_timeout():
    loader = DataLoader(Numbers(4, sleep=5.0), batch_size=2, num_workers=1, worker_type="process", timeout=0.3)
    start = time.monotonic()
    with pytest.raises(DataLoaderError, match=r"timed out after 0.3 s waiting for batch 0 \(samples \[0, 1\]\)"):
        list(loader)
    assert time.monotonic() - start < 3


def test_stalled_process_workers_write_their_stacks(monkeypatch, capfd):
    """A worker that sends nothing for _STALL_S seconds (here stuck in a sleep) says where it is, once."""
    monkeypatch.setattr(worker, "_STALL_S", 0.5)
    loader = DataLoader(Numbers(2, sleep=3.0), batch_size=2, num_workers=1, worker_type="process")
    with pytest.warns(RuntimeWarning, match="no batch from the process workers for 0.5 s .*stacks follow on stderr"):
        assert _indices(loader) == [[0, 1]]
    err = capfd.readouterr().err
    assert err.count("Current thread") == 1 and "in __getitem__" in err


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_early_break_and_deleted_iterator_shut_workers_down(worker_type):
    loader = DataLoader(Numbers(200), batch_size=2, num_workers=3, worker_type=worker_type)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert _leftover_workers() == []
    iterator = iter(loader)
    next(iterator)
    assert _leftover_workers() != []
    del iterator
    assert _leftover_workers() == []


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_keyboard_interrupt_in_the_loop_shuts_workers_down(worker_type):
    loader = DataLoader(Numbers(100), batch_size=2, num_workers=2, worker_type=worker_type)
    with pytest.raises(KeyboardInterrupt):
        for _ in loader:
            raise KeyboardInterrupt


CTRL_C_SCRIPT = """
import multiprocessing, signal, sys, time
from framework.io import DataLoader, Dataset

signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal (a background job ignores SIGINT)

class Slow(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        time.sleep(10.0)
        return {"x": i}

loader = DataLoader(Slow(), batch_size=2, num_workers=2, worker_type="process")
print("ready", flush=True)
try:
    list(loader)
except KeyboardInterrupt:
    print("interrupted, workers left:", len(multiprocessing.active_children()), flush=True)
    sys.exit(130)
"""


def test_ctrl_c_while_waiting_for_workers_does_not_hang():
    """A user's Ctrl-C (SIGINT to the process) while the loader waits for busy workers: the program gets
    KeyboardInterrupt at once and no worker outlives the loader. Run in a fresh interpreter with Python's
    own SIGINT handler, whatever the test run inherited (a shell starts background jobs with SIGINT ignored)."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=root))
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        start = time.monotonic()
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130 and output.strip() == "interrupted, workers left: 0"
    assert time.monotonic() - start < 5


def test_prefetch_is_bounded():
    seen = []

    class Recorder(Numbers):
        def __getitem__(self, i):
            seen.append(i)
            return super().__getitem__(i)

    iterator = iter(DataLoader(Recorder(100), batch_size=1, num_workers=2, prefetch=2))
    next(iterator)
    time.sleep(0.2)
    assert len(seen) <= 1 + 2 * 2
    iterator.close()


@pytest.mark.parametrize("num_workers, worker_type", [(0, "thread"), (2, "thread"), (2, "process")])
def test_resume_mid_epoch_gives_the_following_batches(num_workers, worker_type):
    def loader():
        return DataLoader(Numbers(), batch_size=4, shuffle=True, seed=3, num_workers=num_workers,
                          worker_type=worker_type)

    reference = loader()
    expected = [_indices(reference) for _ in range(2)]
    first = loader()
    for consumed, _ in enumerate(first, start=1):
        if consumed == 4:
            break
    state = first.state_dict()
    assert state == {"epoch": 0, "batches": 4}
    resumed = loader()
    resumed.set_state_dict(state)
    assert _indices(resumed) == expected[0][4:]
    assert _indices(resumed) == expected[1]


def test_state_at_the_end_of_an_epoch_resumes_into_the_next():
    loader = DataLoader(Numbers(8), batch_size=4, shuffle=True)
    states = [loader.state_dict() for _ in loader]
    assert states == [{"epoch": 0, "batches": 1}, {"epoch": 0, "batches": 2}]
    assert loader.state_dict() == {"epoch": 1, "batches": 0}
    following = _indices(loader)
    resumed = DataLoader(Numbers(8), batch_size=4, shuffle=True)
    resumed.set_state_dict(states[-1])
    assert _indices(resumed) == [] and resumed.state_dict() == {"epoch": 1, "batches": 0}
    assert _indices(resumed) == following
    loader.set_epoch(5)
    assert loader.state_dict() == {"epoch": 5, "batches": 0}


@pytest.mark.parametrize("num_workers, worker_type", [(0, "thread"), (2, "process")])
def test_iterable_dataset_in_stream_order(num_workers, worker_type):
    loader = DataLoader(Stream(10), batch_size=4, num_workers=num_workers, worker_type=worker_type)
    assert _indices(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(loader) == 3
    loader.set_state_dict({"epoch": 1, "batches": 2})
    assert _indices(loader) == [[8, 9]]
    with pytest.raises(DataLoaderError, match="sample 6 raised OSError: stream broke"):
        list(DataLoader(Stream(10, fail_at=6), batch_size=4, num_workers=num_workers, worker_type=worker_type))


def test_spawn_workers_give_the_same_batches():
    loader = DataLoader(Numbers(6), batch_size=2, shuffle=True, num_workers=2, worker_type="process",
                        start_method="spawn")
    assert _indices(loader) == _indices(DataLoader(Numbers(6), batch_size=2, shuffle=True))


def test_unpicklable_collate_with_spawn_is_one_clear_error():
    loader = DataLoader(Numbers(4), batch_size=2, num_workers=1, worker_type="process", start_method="spawn",
                        collate_fn=lambda samples: samples)
    with pytest.raises(DataLoaderError, match="cannot start process workers .*spawn start method .* picklable"):
        list(loader)


@pytest.mark.parametrize("kwargs, words", [
    ({"num_workers": -1}, "num_workers"), ({"worker_type": "fiber"}, "worker_type"), ({"prefetch": 0}, "prefetch"),
    ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler replaces"), ({"batch_size": 0}, "batch_size")])
def test_bad_options(kwargs, words):
    with pytest.raises(ValueError, match=words):
        DataLoader(Numbers(4), **kwargs)


def test_iterable_dataset_cannot_shuffle():
    with pytest.raises(ValueError, match="stream order"):
        DataLoader(Stream(), shuffle=True)
