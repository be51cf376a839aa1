"""Settings are checked for sign and range where they are read, one rule per setting: ``oar compress`` and
``oar train`` refuse a number outside its setting's range with one line naming the setting and the range,
before any work starts (the installed ``oar`` in a subprocess)."""
import pytest

from framework.config import ConfigError
from framework.ranges import COMMON, COUNT, FRACTION, POSITIVE, PROBABILITY, RATE, Range, check_range

from .test_cli import TINY, assert_one_error_line, oar

PRUNE = "configs/slim/tsm_synth_prune.yaml"
QUANT = "configs/slim/int8.yaml"
DISTILL = "configs/slim/senta_bow_distill.yaml"


@pytest.mark.parametrize("config, model, override, fragment", [
    (PRUNE, "tsm_synth", "prune.ratio=-0.5", "prune.ratio must be in (0, 1), got -0.5"),
    (PRUNE, "tsm_synth", "prune.ratio=1.0", "prune.ratio must be in (0, 1), got 1.0"),
    (PRUNE, "tsm_synth", "prune.flops_target=-1", "prune.flops_target must be in (0, 1), got -1"),
    (PRUNE, "tsm_synth", "prune.flops_target=0", "prune.flops_target must be in (0, 1), got 0"),
    (PRUNE, "tsm_synth", "prune.ratios=[0.2,1.5]", "prune.ratios[1] must be in (0, 1), got 1.5"),
    (PRUNE, "tsm_synth", "prune.max_ratio=2.0", "prune.max_ratio must be in (0, 1)"),
    (PRUNE, "tsm_synth", "prune.dev_samples=0", "prune.dev_samples must be at least 1, got 0"),
    (QUANT, "tsm_synth", "quant.calibration_samples=-3", "quant.calibration_samples must be at least 1, got -3"),
    (DISTILL, "senta_bow", "distill.alpha=1.5", "distill.alpha must be in [0, 1], got 1.5"),
    (DISTILL, "senta_bow", "distill.temperature=-4.0", "distill.temperature must be positive, got -4.0"),
    (DISTILL, "senta_bow", "distill.features=[{student: encoder, teacher: encoder, weight: -1.0}]",
     "distill.features[0].weight must be at least 0"),
])
def test_compress_refuses_a_setting_outside_its_range(tmp_path, config, model, override, fragment):
    code, out, err = oar("compress", "-c", config, "--model", model, "-o", override,
                         "--output_dir", str(tmp_path / "out"))
    assert_one_error_line(code, err, 1, fragment, config)
    assert out == "" and not (tmp_path / "out").exists()


@pytest.mark.parametrize("override, fragment", [
    ("model.hidden=-4", "'hidden' must be at least 1, got -4"),
    ("model.num_layers=0", "'num_layers' must be at least 1, got 0"),
    ("model.dropout=1.5", "'dropout' must be in [0, 1), got 1.5"),
    ("optimizer.learning_rate=-0.1", "'learning_rate' must be positive, got -0.1"),
    ("optimizer.beta1=1.0", "'beta1' must be in [0, 1), got 1.0"),
    ("lr.T_max=0", "'T_max' must be at least 1, got 0"),
    ("data.train.size=-5", "'size' must be at least 1, got -5"),
    ("train.epochs=0", "train.epochs must be at least 1, got 0"),
    ("train.grad_clip=-1.0", "train.grad_clip must be positive, got -1.0"),
])
def test_train_refuses_a_setting_outside_its_range(tmp_path, override, fragment):
    code, _, err = oar("train", "-c", TINY, "-o", override, "--output_dir", str(tmp_path / "run"))
    assert_one_error_line(code, err, 1, fragment, "tiny.yaml")


def test_ranges_describe_themselves_and_let_none_and_their_bounds_pass():
    assert [str(r) for r in (COUNT, POSITIVE, FRACTION, PROBABILITY, RATE, Range(high=3, high_open=True))] == \
        ["at least 1", "positive", "in (0, 1)", "in [0, 1]", "in [0, 1)", "below 3"]
    assert check_range(None, COUNT, "x", "here") is None and check_range([0.0, 1.0], PROBABILITY, "p", "here")
    with pytest.raises(ConfigError, match=r"^x\[1\] must be at least 1, got 0 \(here\)$"):
        check_range([3, 0], COUNT, "x", "here")
    assert all(isinstance(rule, Range) for rule in COMMON.values())
