"""Skip GPU-marked tests on machines without CuPy and a GPU; reset the seed per test; an offline cache."""
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


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty $OAR_HOME and an unreachable package index: anything that tries to fetch fails."""
    home = tmp_path / "home"
    monkeypatch.setenv("OAR_HOME", str(home))
    monkeypatch.setenv("OAR_PACKAGE_INDEX", "http://127.0.0.1:9/simple")
    return home
