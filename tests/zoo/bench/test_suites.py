"""The `oar bench` suites without tests of their own run end to end at their quick sizes and report
positive times (no timing is asserted)."""
import importlib

import pytest

from framework import timing
from zoo import bench


@pytest.mark.parametrize("name", ["framework", "senta", "kernels"])
def test_quick_suite_reports_positive_times(name):
    result = importlib.import_module(bench.SUITES[name]).run_all(quick=True)
    numbers = []

    def collect(value):
        if isinstance(value, dict):
            for key, item in value.items():
                timed = key.endswith(("_s", "_ms", "gflops", "gbs")) and isinstance(item, (int, float))
                if timed and key != "warmup_s":   # warming up kernels already loaded here can take no time
                    numbers.append(item)
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(result)
    assert numbers and all(n > 0 for n in numbers)


def test_timers_count_the_runs_they_time():
    calls = []
    walls, cpus = timing.run_times(lambda: calls.append(1), repeat=4, warmup=2, before_each=lambda: calls.append(0))
    assert calls == [1, 1, 0, 1, 0, 1, 0, 1, 0, 1] and len(walls) == len(cpus) == 4
    assert timing.best_time(lambda: None, repeat=3) >= 0
    assert timing.median_time(lambda: None, repeat=3) >= 0
    wall, cpu = timing.best_times(lambda: sum(range(1000)), repeat=2)
    assert wall > 0 and cpu >= 0
