"""framework.memory: importing oar keeps freed arrays in glibc's heap (no page faults for the next step's arrays
of the same size), unless the process sets glibc's malloc itself. Each case runs in a fresh process, reading
glibc's own accounting (``mallinfo2``)."""
import ctypes
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="needs glibc 2.33 or later")

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


def _accounting(**env):
    """glibc's bytes mapped on their own while a 64 MiB array lives, and free bytes kept in the heap after it is
    freed, in a fresh process that imported oar."""
    base = {key: value for key, value in os.environ.items() if not key.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env={**base, **env}, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_freed_arrays_stay_in_the_heap():
    result = _accounting()
    assert result["mapped"] < 64 << 20                       # served from the heap, not a fresh mapping
    assert result["free_in_heap"] >= 64 << 20               # kept for the next allocation, not given back


def test_the_process_own_malloc_settings_win():
    result = _accounting(MALLOC_TRIM_THRESHOLD_="131072")
    assert result["mapped"] >= 64 << 20                      # glibc's defaults: mapped on its own
