"""Tar shards (WebDataset layout): written, then read streaming from local files, a loopback HTTP server
(``http.server`` in a thread) and ``memory://``; split over ranks and reader threads so each sample comes once per
epoch; shuffled in a buffer; resumed at a shard boundary; a cut shard and an unreachable URL are one clear error."""
import functools
import http.server
import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading

import fsspec
import numpy
import pytest

from framework.io import DataLoader
from framework.io.remote import RemoteFileError
from framework.io.shards import ShardDataset, ShardFormatError, expand_urls, read_shard, write_shards

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
N = 103


def samples(n=N):
    return [{"x": numpy.arange(3, dtype=numpy.float32) + i, "label": i % 3, "txt": f"第{i}条", "mp4": bytes([i % 256]) * 5}
            for i in range(n)]


@pytest.fixture()
def shards(tmp_path):
    """``(folder, index)``: N samples in shards of 10 (the last one 3)."""
    folder = tmp_path / "shards"
    index = write_shards(samples(), str(folder / "train-"), max_count=10)
    return folder, index


@pytest.fixture()
def served(shards):
    """The base URL of a loopback HTTP server serving the shards."""
    folder, _ = shards
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def ids(dataset):
    return [int(s["x"][0]) for s in dataset]


def test_write_layout_and_round_trip(shards):
    folder, index = shards
    assert index["samples"] == N and [s["samples"] for s in index["shards"]] == [10] * 10 + [3]
    with tarfile.open(folder / "train-000000.tar") as tar:
        names = tar.getnames()
    assert names[:4] == ["000000.x.npy", "000000.txt", "000000.mp4", "000000.json"]
    first = next(read_shard(str(folder / "train-000000.tar"), with_keys=True))
    assert first["txt"] == "第0条" and first["mp4"] == b"\0" * 5 and first["label"] == 0
    assert first["x"].dtype == numpy.float32 and first["x"].tolist() == [0.0, 1.0, 2.0]
    assert first["__key__"] == "000000"
    again = write_shards(samples(), str(folder / "again-"), max_count=10)          # same samples, same bytes
    assert again["samples"] == N
    assert (folder / "again-000004.tar").read_bytes() == (folder / "train-000004.tar").read_bytes()


def test_brace_ranges_expand():
    assert expand_urls("s3://b/train-{000..002}.tar") == ["s3://b/train-000.tar", "s3://b/train-001.tar",
                                                         "s3://b/train-002.tar"]
    assert expand_urls(["a.tar", "b-{1..2}.tar"]) == ["a.tar", "b-1.tar", "b-2.tar"]


@pytest.mark.parametrize("where", ["local", "http", "memory"])
def test_two_ranks_by_two_workers_read_each_sample_once_per_epoch(shards, served, where):
    folder, _ = shards
    if where == "local":
        index = str(folder / "train-index.json")
    elif where == "http":
        index = f"{served}/train-index.json"
    else:
        for name in os.listdir(folder):
            with fsspec.open(f"memory://oar-shards/{name}", "wb") as f:
                f.write((folder / name).read_bytes())
        index = "memory://oar-shards/train-index.json"
    for epoch in (0, 1):
        seen = []
        for rank in (0, 1):
            dataset = ShardDataset(index=index, num_workers=2, shuffle_buffer=16, seed=7, rank=rank, world_size=2)
            dataset.set_epoch(epoch)
            got = ids(dataset)
            assert len(got) == len(dataset)
            seen += got
        assert sorted(seen) == list(range(N))
    parts = []                                                           # the workers' parts, as a torch loader would
    for rank in (0, 1):
        dataset = ShardDataset(index=index, rank=rank, world_size=2)
        for worker in (0, 1):
            parts.append(ids(dataset.iter_worker(worker, 2)))
    assert sorted(sum(parts, [])) == list(range(N)) and all(parts)


def test_order_is_fixed_by_seed_epoch_and_workers_and_shuffled(shards):
    folder, _ = shards
    index = str(folder / "train-index.json")
    plain = ids(ShardDataset(index=index, shuffle_shards=False))
    assert plain == list(range(N))
    a = ShardDataset(index=index, num_workers=2, shuffle_buffer=20, seed=1)
    first, again = ids(a), ids(ShardDataset(index=index, num_workers=2, shuffle_buffer=20, seed=1))
    assert first == again and first != plain and sorted(first) == plain
    a.set_epoch(1)
    assert ids(a) != first


def test_loader_batches_a_shard_stream(shards):
    folder, _ = shards
    loader = DataLoader(ShardDataset(index=str(folder / "train-index.json"), num_workers=2), batch_size=16,
                        collate_fn=lambda items: numpy.stack([s["x"] for s in items]))
    batches = list(loader)
    assert len(batches) == len(loader) == 7
    assert sorted(int(v) for b in batches for v in b[:, 0]) == list(range(N))


def test_resume_at_a_shard_boundary(shards):
    folder, _ = shards
    index = str(folder / "train-index.json")
    dataset = ShardDataset(index=index, shuffle_buffer=8, seed=3)
    stream = iter(dataset)
    before = [int(next(stream)["x"][0]) for _ in range(45)]
    state = dataset.state_dict()                                         # then the process "crashes"
    done = {int(os.path.basename(u).split("-")[1][:6]) for u in state["done"]}
    assert state["epoch"] == 0 and done
    resumed = ShardDataset(index=index, shuffle_buffer=8, seed=3)
    resumed.set_state_dict(state)
    after = ids(resumed)
    done_ids = {i for shard in done for i in range(shard * 10, min(shard * 10 + 10, N))}
    assert done_ids <= set(before)                                       # what it skips was all yielded
    assert set(after) == set(range(N)) - done_ids                        # and nothing else is skipped
    assert sorted(after + sorted(done_ids)) == list(range(N))


def cut(path, size):
    data = path.read_bytes()
    path.write_bytes(data[:size])


def test_truncated_shard_names_shard_and_member(shards):
    folder, _ = shards
    big = write_shards([{"x": numpy.zeros(4000)}] * 3, str(folder / "big-"), max_count=3)
    assert big["samples"] == 3
    path = folder / "big-000000.tar"
    cut(path, 512 + 20000)                                                # inside member 000000.x.npy's data
    with pytest.raises(ShardFormatError, match=r"shard .*big-000000\.tar: member 000000\.x\.npy is cut short"):
        list(read_shard(str(path)))
    path2 = folder / "train-000003.tar"
    cut(path2, 4 * 512 + 512 + 300)                                       # mid header after member 000030.mp4
    with pytest.raises(ShardFormatError, match=r"train-000003\.tar: .*cut short.* 000030\.mp4"):
        list(ShardDataset(urls=[str(path2)]))


def test_unreachable_and_missing_shards_are_one_line(shards):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RemoteFileError, match=r"^cannot reach shard index http://127\.0\.0\.1:\d+/i\.json: "):
        ShardDataset(index=f"http://127.0.0.1:{port}/i.json")
    with pytest.raises(FileNotFoundError, match="shard not found"):
        list(read_shard(str(shards[0] / "nope.tar")))
    bad = shards[0] / "garbage.tar"
    bad.write_bytes(b"not a tar at all" * 100)
    with pytest.raises(ShardFormatError, match="is not a tar file"):
        list(read_shard(str(bad)))


def test_oar_train_from_shards_over_http(tmp_path, served):
    """The README's config: the tiny task's train split written as shards and read back over HTTP."""
    folder = tmp_path / "www"
    proc = subprocess.run([sys.executable, "tools/write_shards.py", "-c", "configs/_test/tiny.yaml",
                           "--prefix", str(folder / "rings-"), "--per_shard", "128"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/rings-index.json"
        proc = subprocess.run([OAR, "train", "-c", "configs/examples/tiny_shards.yaml", "--output_dir",
                               str(tmp_path / "run"), "-o", f"data.train.index={url}", "train.epochs=2"],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert (tmp_path / "run" / "last.npz").exists()
        (folder / "rings-000001.tar").write_bytes((folder / "rings-000001.tar").read_bytes()[:3000])
        proc = subprocess.run([OAR, "train", "-c", "configs/examples/tiny_shards.yaml", "--output_dir",
                               str(tmp_path / "run2"), "-o", f"data.train.index={url}", "train.epochs=1"],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "rings-000001.tar" in lines[0] and "cut short" in lines[0], lines
    finally:
        server.shutdown()
        server.server_close()
