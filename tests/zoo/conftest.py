"""Fixtures shared by the zoo tests."""
import pytest


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty $OAR_HOME and an unreachable package index: anything that tries to fetch fails."""
    home = tmp_path / "home"
    monkeypatch.setenv("OAR_HOME", str(home))
    monkeypatch.setenv("OAR_PACKAGE_INDEX", "http://127.0.0.1:9/simple")
    return home
