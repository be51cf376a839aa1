"""framework.runtime, what importing oar sets for the process: freed arrays stay in glibc's heap (no page faults
for the next step's arrays of the same size) unless the process sets glibc's malloc itself, read from glibc's
own accounting (``mallinfo2``); OpenBLAS's idle workers sleep after 2^20 cycles and MKL's OpenMP threads at
once unless the process says otherwise, read back from the OpenBLAS NumPy loaded and the environment the MKL
provider loads under. Each case runs in a fresh process."""
import ctypes
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GLIBC = pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="needs glibc 2.33 or later")

_SCRIPT = """
import ctypes, json, numpy
import framework
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]
mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
array = numpy.ones(64 << 18, dtype=numpy.float32)                   # 64 MiB
mapped = mallinfo2().hblkhd
del array
print(json.dumps({"mapped": mapped, "free_in_heap": mallinfo2().fordblks}))
"""


_OPENBLAS_SCRIPT = """
import ctypes, json
import framework
from threadpoolctl import threadpool_info
paths = [info["filepath"] for info in threadpool_info() if info["internal_api"] == "openblas"]
print(json.dumps({"timeout": ctypes.CDLL(paths[0]).openblas_thread_timeout() if paths else None}))
"""


def _fresh_process(script, **env):
    """The JSON line ``script`` prints in a fresh Python process, the malloc and OpenBLAS settings of this one
    left out of its environment and ``env`` added."""
    base = {key: value for key, value in os.environ.items()
            if not key.startswith(("MALLOC_", "GLIBC_TUNABLES", "OPENBLAS_THREAD_TIMEOUT", "KMP_BLOCKTIME"))}
    done = subprocess.run([sys.executable, "-c", script], env={**base, **env}, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _accounting(**env):
    """glibc's bytes mapped on their own while a 64 MiB array lives, and free bytes kept in the heap after it is
    freed, in a fresh process that imported oar."""
    return _fresh_process(_SCRIPT, **env)


@GLIBC
def test_freed_arrays_stay_in_the_heap():
    result = _accounting()
    assert result["mapped"] < 64 << 20                       # served from the heap, not a fresh mapping
    assert result["free_in_heap"] >= 64 << 20               # kept for the next allocation, not given back


@GLIBC
def test_the_process_own_malloc_settings_win():
    result = _accounting(MALLOC_TRIM_THRESHOLD_="131072")
    assert result["mapped"] >= 64 << 20                      # glibc's defaults: mapped on its own


@pytest.mark.parametrize("env, expected", [({}, 20), ({"OPENBLAS_THREAD_TIMEOUT": "25"}, 25)],
                         ids=["oar's", "the process's own"])
def test_openblas_idle_workers_sleep_sooner(env, expected):
    pytest.importorskip("threadpoolctl")
    timeout = _fresh_process(_OPENBLAS_SCRIPT, **env)["timeout"]
    if timeout is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS")
    assert timeout == expected


@pytest.mark.parametrize("env, expected", [({}, "0"), ({"KMP_BLOCKTIME": "200"}, "200")],
                         ids=["oar's", "the process's own"])
def test_mkl_openmp_threads_sleep_at_once(env, expected):
    script = "import json, os\nimport framework\nprint(json.dumps({'blocktime': os.environ['KMP_BLOCKTIME']}))"
    assert _fresh_process(script, **env)["blocktime"] == expected
