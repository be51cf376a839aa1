"""Vision models built through the registry check their config keys (every registered model's forward,
gradients and state-dict round trip: tests/test_registered_models.py)."""
import pytest

import vision.models  # noqa: F401  (registers the models)
from framework.config import ConfigError
from framework.registry import MODELS


def test_unknown_config_keys_are_named():
    with pytest.raises(ConfigError, match="depth"):
        MODELS.build({"type": "resnet50", "depth": 50})
    with pytest.raises(ConfigError, match="layers"):
        MODELS.build({"type": "resnet18", "layers": [1, 1, 1, 1]})  # fixed by the variant
