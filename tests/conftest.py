"""Skip GPU-marked tests on machines without CuPy and a GPU; reset the seed per test."""
import pytest

import framework


def pytest_collection_modifyitems(config, items):
    if framework.is_gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fixed_seed():
    framework.seed(0)
    yield
    framework.set_device("cpu")
