"""Every shard read is checked against its index: ``tools/write_shards.py`` records each shard's sample count and
sha256, and ``oar train`` on a shard cut at a 4 KiB boundary, or changed in place, stops with one line naming
the shard instead of training a short epoch; an index that lists no shard, or a glob that matches none, is one
line too."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """``(folder, index)`` of the tiny task's training split written by the tool, 128 samples a shard."""
    folder = tmp_path_factory.mktemp("shards")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "write_shards.py"), "-c",
                           "configs/_test/tiny.yaml", "--prefix", str(folder / "rings-"), "--per_shard", "128"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder, json.loads(proc.stdout)


def train(tmp_path, data):
    """``oar train`` of the tiny task for one epoch with ``data.train`` set to ``data`` (a dict)."""
    override = "data.train=" + json.dumps({"_delete_": True, "type": "ShardDataset", **data})
    return subprocess.run([OAR, "train", "-c", "configs/_test/tiny.yaml", "--output_dir", str(tmp_path / "run"),
                           "-o", override, "train.epochs=1"], capture_output=True, text=True, cwd=ROOT, timeout=300)


def one_error_line(proc):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("oar: error: "), proc.stderr[-2000:]
    return lines[0]


def test_the_index_records_counts_and_sha256(shards):
    folder, index = shards
    assert index["samples"] == sum(s["samples"] for s in index["shards"]) and index["shards"][0]["samples"] == 128
    import hashlib
    for entry in index["shards"]:
        assert entry["sha256"] == hashlib.sha256((folder / entry["url"]).read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", ["cut", "changed"])
def test_a_cut_or_changed_shard_is_one_line_naming_it(shards, tmp_path, damage):
    folder, index = shards
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    first = copy / index["shards"][0]["url"]
    data = first.read_bytes()
    if damage == "cut":             # at a 4 KiB boundary, between members: the tar reader sees a clean end
        first.write_bytes(data[:len(data) // 2 // 4096 * 4096])
    else:                           # one byte of a member's content
        position = data.index(b"{", 512)
        first.write_bytes(data[:position + 1] + (b"X" if data[position + 1:position + 2] != b"X" else b"Y")
                          + data[position + 2:])
    line = one_error_line(train(tmp_path, {"index": str(copy / "rings-index.json"), "num_workers": 2}))
    assert f"shard {first}" in line
    assert ("its index lists 128" in line) if damage == "cut" else ("sha256" in line or "not valid" in line)


def test_no_shards_is_one_line(shards, tmp_path):
    empty = tmp_path / "empty-index.json"
    empty.write_text(json.dumps({"shards": [], "samples": 0}))
    line = one_error_line(train(tmp_path, {"index": str(empty)}))
    assert line == f"oar: error: shard index {empty} lists no shards"
    line = one_error_line(train(tmp_path, {"urls": str(tmp_path / "none-*.tar"), "length": 10}))
    assert line == f"oar: error: shards {tmp_path / 'none-*.tar'}: the pattern matches no file"
