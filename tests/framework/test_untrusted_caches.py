"""The caches under ``$OAR_HOME`` are data: a garbled traced program is dropped and traced again with one warning
(never a crash, a huge allocation or an input blamed for the cache), the Numba kernel cache lives in an owner-only
folder that is refused when anyone else could have written it (so a planted pickle never runs), and an unreadable
kernel cache entry is compiled again."""
import json
import os
import pickle
import shutil
import subprocess
import sys

import numpy
import pytest

from framework.jit.attributes import MAX_ELEMENTS, check_attributes
from framework.jit.template import Size, SizeExpr, TemplateError
from framework.private import private_folder, untrusted_reason

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OAR = shutil.which("oar")
SENTENCE = "这部电影很好看\n"


def run(command, home, env=None):
    """``command`` (a list) in a subprocess with ``OAR_HOME=home``: (exit status, stdout, stderr)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("OAR_")}
    full.update(OAR_HOME=str(home), **(env or {}))
    result = subprocess.run(command, capture_output=True, text=True, env=full, cwd=ROOT, timeout=300)
    return result.returncode, result.stdout, result.stderr


# ---- the trace cache through `oar run` ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def traced_home(tmp_path_factory):
    """An OAR_HOME whose program cache holds senta_bow's program, and the answer for SENTENCE."""
    home = tmp_path_factory.mktemp("home")
    (home / "one.txt").write_text(SENTENCE, encoding="utf-8")
    code, out, err = run([OAR, "run", "senta_bow", "--input_file", str(home / "one.txt")], home)
    assert code == 0, err
    return home, out


def _garble(home, change):
    """``change(graph)`` on the cached program.json (one entry) of a copy of ``home``; returns the copy."""
    (entry,) = [e for e in (home / "programs").iterdir() if e.is_dir()]
    graph = json.loads((entry / "program.json").read_text())
    change(graph)
    (entry / "program.json").write_text(json.dumps(graph))
    return entry


def _node(graph, op):
    return next(node for node in graph["nodes"] if node["op"].endswith("." + op))


@pytest.mark.parametrize("case", ["missing attribute", "huge size", "bad fixed size", "garbage value",
                                  "wrong but well-formed shape"])
def test_a_garbled_cached_program_is_traced_again_with_one_warning(traced_home, tmp_path, case):
    source, answer = traced_home
    home = tmp_path / "home"
    shutil.copytree(source, home)
    change = {
        "missing attribute": lambda g: _node(g, "SequenceMask").update(attrs={"dict": {}}),
        "huge size": lambda g: _node(g, "Reshape").update(attrs={"dict": {"shape": {"tuple": [1000000, 1000000]}}}),
        "bad fixed size": lambda g: g["inputs"][0].update(shape=["batch", 7]),
        "garbage value": lambda g: _node(g, "Sum").update(attrs={"dict": {"axes": "all", "keepdim": 3}}),
        "wrong but well-formed shape": lambda g: _node(g, "Reshape").update(
            attrs={"dict": {"shape": {"tuple": [3, 5, 7]}}}),
    }[case]
    entry = _garble(home, change)
    code, out, err = run([OAR, "run", "senta_bow", "--input_file", str(home / "one.txt")], home)
    assert code == 0 and out == answer, err
    warnings = [line for line in err.splitlines() if line.startswith("oar: warning: cached program")]
    assert len(warnings) == 1 and str(entry) in warnings[0] and "tracing it again" in warnings[0], err
    assert "Traceback" not in err
    code, out, err = run([OAR, "run", "senta_bow", "--input_file", str(home / "one.txt")], home)
    assert code == 0 and out == answer and "cached program" not in err       # the entry was written afresh


# ---- the attribute declarations ----------------------------------------------------------------------------------

FULL = "framework.ops.common.Full"


def test_attributes_are_checked_against_their_op():
    batch = Size(SizeExpr(0, [(1, ("batch",))]))
    check_attributes(FULL, {"shape": (batch, 5), "value": 0.0, "dtype": numpy.dtype("float32")}, {"batch"})
    bad = [({"value": 0.0, "dtype": numpy.dtype("float32")}, "attribute 'shape' is missing"),
           ({"shape": (1000000, 1000000), "value": 0.0, "dtype": numpy.dtype("float32")},
            f"of at most {MAX_ELEMENTS:,} elements"),
           ({"shape": (batch, 5), "value": 0.0, "dtype": numpy.dtype("float32")}, None),
           ({"shape": (2, 5), "value": "x", "dtype": numpy.dtype("float32")}, "attribute 'value' must be a number"),
           ({"shape": (2, 5), "value": 0.0, "dtype": numpy.dtype("float32"), "forward": 1},
            "unknown attribute 'forward'")]
    for attrs, message in bad:
        with pytest.raises(TemplateError, match=message or "must be"):
            check_attributes(FULL, attrs, set() if message is None else {"batch"})   # None: an unknown symbol
    with pytest.raises(TemplateError, match="must be a finite number"):
        check_attributes("framework.ops.temporal.TemporalShift", {"num_segments": 4, "shift_ratio": float("nan")})
    with pytest.raises(TemplateError, match="not declared"):
        check_attributes("framework.ops.nothing.Here", {})


def test_every_framework_op_that_a_file_can_hold_has_a_declaration():
    import framework.distributed.sync_batch_norm  # noqa: F401  (defines its op)
    import framework.slim.ops  # noqa: F401
    from framework.jit.attributes import ATTRIBUTES
    from framework.jit.files import _framework_ops
    ops = {name for name, cls in _framework_ops().items() if not cls.__name__.startswith("_")}
    unsaved = {"framework.distributed.sync_batch_norm.SyncNormalize"}      # holds a communicator: never in a file
    assert ops - unsaved == set(ATTRIBUTES)


# ---- private folders ---------------------------------------------------------------------------------------------

def test_a_private_folder_is_owner_only_and_refused_when_others_could_write(tmp_path):
    folder = tmp_path / "numba" / "tag"
    assert private_folder(str(folder), levels=2) is None
    assert os.stat(folder).st_mode & 0o777 == 0o700 and os.stat(folder.parent).st_mode & 0o777 == 0o700
    planted = folder / "x.nbi"
    planted.write_bytes(b"data")
    planted.chmod(0o664)
    assert untrusted_reason(str(folder.parent)) == f"{planted} can be written by its group or by others"
    planted.chmod(0o600)
    os.symlink(planted, folder / "link.nbi")
    assert untrusted_reason(str(folder.parent)) == f"{folder / 'link.nbi'} is a symbolic link"
    os.unlink(folder / "link.nbi")
    if os.getuid() == 0:                                    # only root can give a file to another user
        os.chown(planted, 12345, 12345)
        assert untrusted_reason(str(folder.parent)) == f"{planted} is owned by another user"


# ---- the Numba kernel cache -------------------------------------------------------------------------------------

KERNEL = '''
from framework.kernels.cpu.compiler import CACHE_DIR, kernel


@kernel()
def add_one(x):
    return x + 1
'''
CALL = "import sys; sys.path.insert(0, sys.argv[1]); import tiny_kernel; print(tiny_kernel.add_one(41.0))"


class Planted:
    """A pickle that, once unpickled, writes a marker file (what a planted cache entry could do)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def kernel_home(tmp_path):
    """(OAR_HOME, the folder of a one-kernel module, the kernel's cache files) after a first run compiled it."""
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    (code_dir / "tiny_kernel.py").write_text(KERNEL)
    home = tmp_path / "home"
    code, out, err = run([sys.executable, "-c", CALL, str(code_dir)], home)
    assert code == 0 and out.strip() == "42.0", err
    files = sorted(p for p in (home / "numba").rglob("tiny_kernel*") if p.is_file())
    assert {p.suffix for p in files} == {".nbi", ".nbc"}
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in files)
    return home, code_dir, files


@pytest.mark.parametrize("damage", ["empty index", "cut data", "garbage index"])
def test_an_unreadable_kernel_cache_entry_is_compiled_again(kernel_home, damage):
    home, code_dir, files = kernel_home
    index, data = [p for p in files if p.suffix == ".nbi"][0], [p for p in files if p.suffix == ".nbc"][0]
    {"empty index": lambda: index.write_bytes(b""), "cut data": lambda: data.write_bytes(data.read_bytes()[:40]),
     "garbage index": lambda: index.write_bytes(b"\x80\x04garbage")}[damage]()
    code, out, err = run([sys.executable, "-c", CALL, str(code_dir)], home)
    assert code == 0 and out.strip() == "42.0", err
    assert err.count("could not be read") == 1 and "compiling the kernel again" in err
    code, out, err = run([sys.executable, "-c", CALL, str(code_dir)], home)
    assert code == 0 and out.strip() == "42.0" and "could not be read" not in err        # rewritten


def test_a_pickle_planted_where_others_could_write_never_runs(kernel_home, tmp_path):
    home, code_dir, files = kernel_home
    index = [p for p in files if p.suffix == ".nbi"][0]
    marker = tmp_path / "planted-ran"
    index.write_bytes(pickle.dumps(Planted(str(marker))))
    index.chmod(0o666)
    code, out, err = run([sys.executable, "-c", CALL, str(code_dir)], home)
    assert code == 0 and out.strip() == "42.0", err
    assert not marker.exists()
    assert f"safely: {index} can be written by its group or by others; compiling the CPU kernels in memory" in err


def test_oar_warmup_recovers_from_an_emptied_kernel_cache(tmp_path):
    code, _, err = run([OAR, "warmup"], tmp_path)
    assert code == 0, err
    index = sorted((tmp_path / "numba").rglob("*.nbi"))[0]
    index.write_bytes(b"")
    code, out, err = run([OAR, "warmup"], tmp_path)
    assert code == 0 and json.loads(out.splitlines()[-1])["cache"], err
    assert err.count("could not be read") == 1 and "Traceback" not in err
