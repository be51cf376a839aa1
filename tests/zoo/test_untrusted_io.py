"""What ``oar run`` reads and writes, taken as untrusted and fallible, through the installed ``oar``: an
``--output`` that is a device, a FIFO, a link to ``/dev/stdout`` or a socket is written into or refused, never
replaced; lines end at ``\\n`` alone in every encoding; a FIFO is an input file; NumPy integers and 2-D text
arrays are inputs as good as ints and pairs; and ``--engine ray`` (a local Ray cluster in a subprocess) refuses
to write twice into one folder unless ``--overwrite``, writes the rows of ``--json`` in ``*.jsonl`` and Parquet
alike, and says a non-UTF-8 input, a file as ``--output``, a URL's password and an address of no cluster in one
line."""
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading

import numpy
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
MODEL = "senta_bow"


def oar(*args, **kwargs):
    return subprocess.run([OAR, *args], capture_output=True, text=True, timeout=300, **kwargs)


def one_line(proc, status=1):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == status and len(lines) == 1 and lines[0].startswith("oar"), proc.stderr[-2000:]
    return lines[0]


def test_outputs_that_are_not_files_are_written_into_or_refused(tmp_path):
    proc = oar("run", MODEL, "--input_text", "好", "--output", "/dev/null")
    assert proc.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    proc = oar("run", MODEL, "--input_text", "好", "差", "--output", str(fifo), "--json")
    reader.join(timeout=60)
    assert proc.returncode == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [json.loads(line)["input"] for line in got[0].splitlines()] == ["好", "差"]
    link = tmp_path / "out"
    os.symlink("/dev/stdout", link)
    proc = oar("run", MODEL, "--input_text", "好", "--output", str(link), "--json")
    assert proc.returncode == 0 and os.path.islink(link) and json.loads(proc.stdout)["input"] == "好"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s.sock"))
    try:
        line = one_line(oar("run", MODEL, "--input_text", "好", "--output", str(tmp_path / "s.sock")))
    finally:
        server.close()
    assert line == f"oar: error: --output {tmp_path / 's.sock'} is a socket; give a file, a FIFO or a character " \
                   f"device (e.g. /dev/stdout)"
    assert stat.S_ISSOCK(os.stat(tmp_path / "s.sock").st_mode)


def test_lines_end_at_newline_alone_and_a_fifo_is_an_input(tmp_path):
    path = tmp_path / "wide.txt"
    path.write_bytes("好\u2028评\n差\u2029评\r\n".encode("utf-16"))
    proc = oar("run", MODEL, "--input_file", str(path), "--encoding", "utf-16", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 2                  # (str.splitlines would split at U+2028 too)
    assert [json.loads(line)["input"] for line in proc.stdout.split("\n")[:2]] == ["好\u2028评", "差\u2029评"]
    proc = subprocess.run(["bash", "-c", f"{OAR} run {MODEL} --json --input_file <(printf '好\\n\\n差\\n')"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["input"] for line in proc.stdout.splitlines()] == ["好", "", "差"]


def test_numpy_integers_and_text_pair_arrays_are_inputs():
    import zoo
    senta = zoo.load(MODEL)
    assert senta.predict(numpy.array(["好", "差"]), batch_size=numpy.int64(1)) == senta.predict(["好", "差"])
    simnet = zoo.load("simnet_bow_pointwise")
    assert simnet.predict(numpy.array([["火车晚点了", "列车延误了"]]), batch_size=numpy.int32(8)) == \
        simnet.predict([("火车晚点了", "列车延误了")])


def test_ray_refusals_before_any_cluster(tmp_path):
    (tmp_path / "in.txt").write_text("好\n", encoding="utf-8")
    (tmp_path / "afile").write_text("")
    line = one_line(oar("run", MODEL, "--input_file", str(tmp_path / "in.txt"), "--engine", "ray", "--output",
                        str(tmp_path / "afile")))
    assert line.startswith(f"oar: error: --output {tmp_path / 'afile'} is a file;")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = one_line(oar("run", MODEL, "--input_file", str(tmp_path / "in.txt"), "--engine", "ray", "--output",
                        str(tmp_path / "out"), "--address", f"127.0.0.1:{port}"))
    assert line.startswith(f"oar: error: --address 127.0.0.1:{port}: cannot join the Ray cluster")


@pytest.fixture(scope="module")
def cluster():
    """The environment of a local 2-CPU Ray cluster held by a subprocess (``--address auto`` joins it)."""
    pytest.importorskip("ray.data")
    folder = tempfile.mkdtemp(prefix="oar-ray-", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": folder, "RAY_USAGE_STATS_ENABLED": "0"}
    script = ("import ray, sys; ray.init(num_cpus=2, include_dashboard=False, logging_level='ERROR'); "
              "print(ray.get_runtime_context().gcs_address, flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env)
    assert holder.stdout.readline().strip(), "the local Ray cluster did not start"
    yield env
    holder.stdin.close()
    holder.wait(timeout=60)
    shutil.rmtree(folder, ignore_errors=True)


def test_ray_writes_once_in_one_shape_and_says_errors_in_one_line(cluster, tmp_path):
    from zoo.ray import read_results
    source = tmp_path / "in.txt"
    source.write_text("好\n\n差\n", encoding="utf-8")
    out = tmp_path / "out"
    ray_run = ["run", MODEL, "--input_file", str(source), "--engine", "ray", "--address", "auto", "--output", str(out)]
    proc = oar(*ray_run, env=cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not [line for line in proc.stderr.splitlines() if " E " in line or "ERROR" in line or "deprecat" in line]
    names = os.listdir(out)
    assert names and all(name.endswith(".jsonl") for name in names)
    local = [json.loads(line) for line in oar("run", MODEL, "--input_file", str(source), "--json").stdout.splitlines()]
    rows = read_results(str(out))
    assert [{k: v for k, v in row.items() if k not in ("path", "position")} for row in rows] == local
    line = one_line(oar(*ray_run, env=cluster))
    assert line == f"oar: error: --output {out} already holds results; give --overwrite to replace them, or another " \
                   f"folder"
    assert sorted(os.listdir(out)) == sorted(names)
    proc = oar(*ray_run, "--overwrite", "--output_format", "parquet", env=cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(name.endswith(".parquet") for name in os.listdir(out))
    assert read_results(str(out), "parquet") == rows
    source.write_bytes(b"ok\n\xff\xfe\n")
    line = one_line(oar(*ray_run, "--overwrite", env=cluster))
    assert line == f"oar: error: {source}, line 2: byte 0xff is not valid utf-8; give the file's encoding with " \
                   f"--encoding (e.g. --encoding gbk)"
    assert all(name.endswith(".parquet") for name in os.listdir(out))          # a failed run leaves it as it was
    secret = "hunter2-zz9"
    proc = oar("run", MODEL, "--input_file", f"http://alice:{secret}@127.0.0.1:1/in.txt", "--engine", "ray",
               "--address", "auto", "--output", str(tmp_path / "other"), env=cluster)
    assert one_line(proc).startswith("oar: error: ") and secret not in proc.stderr and "alice" not in proc.stderr
