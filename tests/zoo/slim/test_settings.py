"""Every compression config under configs/slim/ reads (strategy, settings with their defaults, fine-tuning
overrides); the model configs' test (tests/test_configs.py) is for configs that train a model."""
import glob
import os

import pytest

from zoo.slim.settings import DEFAULTS, load_settings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "configs", "slim", "*.yaml")))


def test_every_strategy_has_a_config():
    assert {load_settings(p)["strategy"] for p in CONFIGS} == set(DEFAULTS)


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_config_reads(path):
    settings = load_settings(path)
    strategy = settings["strategy"]
    assert set(settings[strategy]) == set(DEFAULTS[strategy])
    assert all("=" in item for item in settings["finetune"])
