"""A compression config (``configs/slim/*.yaml``): which strategy, its settings, and the fine-tuning overrides.

::

    strategy: prune | quant | distill
    prune:    {mode: sensitivity | uniform, flops_target: 0.5, ratio: null, ratios: [...], max_ratio: 0.9,
               dev_split: eval, dev_samples: 120, layers: null, channel_multiple: 1}
    quant:    {activation: kl | abs_max | percentile, calibration_split: train, calibration_samples: 256,
               onnx: static | dynamic}
    distill:  {teacher: best | NAME, inputs: [ids, lengths], label: label, temperature: 4.0, alpha: 0.7,
               features: [{student: LAYER, teacher: LAYER, weight: 1.0}]}
    finetune: [train.epochs=6, ...]     # overrides of the model's config for fine-tuning / training

Unknown keys, values of the wrong type and numbers outside their setting's range
(one rule per setting, :data:`RANGES`: ratios and targets in (0, 1), sample
counts and ``channel_multiple`` at least 1, ``alpha`` in [0, 1], a positive temperature) are one error
naming the key and the file.
"""
from framework.config import SOURCE_KEY, check_keys, check_type, load_config
from framework.ranges import COUNT, FRACTION, NONNEGATIVE, POSITIVE, PROBABILITY, check_range
from framework.slim import SlimError

__all__ = ["STRATEGIES", "DEFAULTS", "RANGES", "load_settings"]

DEFAULTS = {
    "prune": {"mode": "sensitivity", "criterion": "l1_norm", "flops_target": 0.5, "ratio": None,
              "ratios": [0.2, 0.4, 0.6, 0.8], "max_ratio": 0.9, "dev_split": "eval", "dev_samples": 120,
              "layers": None, "channel_multiple": 1},
    "quant": {"activation": "kl", "calibration_split": "train", "calibration_samples": 256, "onnx": "static"},
    "distill": {"teacher": "best", "inputs": ["ids", "lengths"], "label": "label", "temperature": 4.0,
                "alpha": 0.7, "features": []},
}
STRATEGIES = tuple(DEFAULTS)
_TYPES = {"mode": str, "criterion": str, "flops_target": float, "ratio": float, "ratios": list, "max_ratio": float,
          "dev_split": str, "dev_samples": int, "layers": list, "channel_multiple": int, "activation": str, "calibration_split": str,
          "calibration_samples": int, "onnx": str, "teacher": str, "inputs": list, "label": str,
          "temperature": float, "alpha": float, "features": list}
_CHOICES = {"mode": ("sensitivity", "uniform"), "criterion": ("l1_norm",), "onnx": ("static", "dynamic")}
# The numbers each setting takes (a list setting: each of its items)
RANGES = {"flops_target": FRACTION, "ratio": FRACTION, "ratios": FRACTION, "max_ratio": FRACTION,
          "dev_samples": COUNT, "calibration_samples": COUNT, "channel_multiple": COUNT, "temperature": POSITIVE, "alpha": PROBABILITY}
_FEATURE_RANGES = {"weight": NONNEGATIVE}


def load_settings(path, overrides=()):
    """``{"strategy", <strategy>: settings with defaults, "finetune": [overrides], "path"}`` of the config
    ``path`` (``overrides``: ``key=value`` strings, as ``-o``)."""
    raw = load_config(path, list(overrides))
    raw.pop(SOURCE_KEY, None)
    check_keys(raw, ("strategy", "finetune", "description", *STRATEGIES), path)
    strategy = raw.get("strategy")
    if strategy not in STRATEGIES:
        raise SlimError(f"{path}: strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    section = raw.get(strategy) or {}
    where = f"{path}, section '{strategy}'"
    check_keys(section, DEFAULTS[strategy], where)
    for key, value in section.items():
        if value is not None:
            check_type(value, _TYPES[key], key, where)
            if key in _CHOICES and value not in _CHOICES[key]:
                raise SlimError(f"{strategy}.{key} must be one of {', '.join(_CHOICES[key])}, got {value!r} ({path})")
            if key in RANGES:
                check_range(value, RANGES[key], f"{strategy}.{key}", path, SlimError)
    for index, feature in enumerate(section.get("features") or []):
        for key, rule in _FEATURE_RANGES.items():
            if isinstance(feature, dict):
                check_range(feature.get(key), rule, f"{strategy}.features[{index}].{key}", path, SlimError)
    finetune = raw.get("finetune") or []
    if not isinstance(finetune, list) or not all(isinstance(item, str) and "=" in item for item in finetune):
        raise SlimError(f"{path}: finetune must be a list of key=value overrides, got {finetune!r}")
    return {"strategy": strategy, strategy: {**DEFAULTS[strategy], **section}, "finetune": finetune, "path": path}
