"""The numbers a setting takes: one :class:`Range` per setting, checked where the setting is read.

A config value of the right type can still be impossible: a negative count, a
ratio above 1, a zero learning rate. Every section that reads numbers checks
them with :func:`check_range` against one rule per setting name:

- :data:`COMMON` holds the settings that mean the same wherever they appear in
  a section built through a registry (``model``, ``data``, ``task``,
  ``optimizer``, ``lr``, ``metrics``, transforms): sizes and counts are at
  least 1, dropout rates and momenta in [0, 1), learning rates positive …;
  :meth:`framework.registry.Registry.build` applies it to every key it passes;
- sections with settings of their own (``train``, a compression config's
  ``prune``/``quant``/``distill``) keep their own table of the same kind.

A value outside its range is one :class:`~framework.config.ConfigError` that
names the setting, the range and where it was read; ``None`` (not set) is
never checked, a list is checked item by item, and NaN or an infinity is in
no range (``.nan`` in YAML is one line naming the key, not a silent NaN run).
"""
import math
from dataclasses import dataclass

from .config import ConfigError

__all__ = ["Range", "COUNT", "NONNEGATIVE", "POSITIVE", "FRACTION", "PROBABILITY", "RATE", "COMMON", "check_range"]


@dataclass(frozen=True)
class Range:
    """The numbers between ``low`` and ``high`` (None: unbounded), each end excluded when its ``*_open``."""

    low: float = None
    high: float = None
    low_open: bool = False
    high_open: bool = False

    def admits(self, value):
        """True when the number ``value`` lies in the range (never for NaN or an infinity: no setting takes them)."""
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self):
        if self.high is None:
            if self.low_open:
                return "positive" if self.low == 0 else f"above {self.low:g}"
            return f"at least {self.low:g}"
        if self.low is None:
            return f"{'below' if self.high_open else 'at most'} {self.high:g}"
        return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"


COUNT = Range(1)                                    # sizes, counts, lengths
NONNEGATIVE = Range(0)                              # seeds, bucket counts, weights of a penalty
POSITIVE = Range(0, low_open=True)                  # learning rates, epsilons, temperatures, frame rates
FRACTION = Range(0, 1, low_open=True, high_open=True)   # a part of a whole that is neither nothing nor all
PROBABILITY = Range(0, 1)                           # how often a random transform applies
RATE = Range(0, 1, high_open=True)                  # dropout, smoothing, momenta: 1 would keep nothing

# The settings of registry-built sections, by name (the same meaning in every builder that takes them).
COMMON = {
    **dict.fromkeys(("hidden", "hidden2", "hidden_size", "emb_dim", "embedding_size", "lstm_size", "num_layers",
                     "num_segments", "num_clusters", "num_frames", "max_frames", "num_views",
                     "num_tags", "vocab_size", "filters", "window", "base_channels", "in_channels", "in_features",
                     "batch_size", "max_batch_tokens", "max_chunk_len", "clip_len", "frame_interval",
                     "seglen", "image_size", "resize", "frame_size", "short_side", "topk", "top_k", "gap_top_k",
                     "groups", "expansion", "gating_reduction", "frames_per_video", "extract_frames", "num",
                     "size", "train_copies", "max_per_query", "depth", "lexicon_max_len", "eval_every",
                     "step_size", "decay_steps", "T_max", "d_model"), COUNT),
    **dict.fromkeys(("num_classes",                # 0: a backbone without its head (pooled features)
                     "max_len",                    # 0: sentences kept whole (the People's Daily sets)
                     "seed", "buckets", "ngram_buckets", "lexicon_features", "max_skips", "weight_decay",
                     "eta_min", "end_lr", "margin", "noise", "initial_accumulator_value", "brightness",
                     "contrast", "saturation", "max_distort", "geometry_weight", "min_freq", "lexicon_min_freq",
                     "warmup_steps", "start_lr"),
                   NONNEGATIVE),
    **dict.fromkeys(("learning_rate", "epsilon", "gamma", "power", "fps", "scale", "width_mult", "init_bound",
                     "temperature"), POSITIVE),
    **dict.fromkeys(("dropout", "token_dropout", "label_smoothing", "momentum", "beta1", "beta2", "rho"), RATE),
    "p": PROBABILITY,
}


def check_range(value, rule, name, where, error=ConfigError):
    """Return ``value`` when it (each item of a list) lies in the :class:`Range` ``rule``; else raise
    ``error`` naming the setting ``name``, the range and ``where`` it was read. None and non-numbers pass
    (their type is :func:`framework.config.check_type`'s job)."""
    for index, item in enumerate(value if isinstance(value, (list, tuple)) else [value]):
        if isinstance(item, (int, float)) and not isinstance(item, bool) and not rule.admits(item):
            shown = f"{name}[{index}]" if isinstance(value, (list, tuple)) else name
            finite = "a finite number " if isinstance(item, float) and not math.isfinite(item) else ""
            raise error(f"{shown} must be {finite}{rule}, got {item!r} ({where})")
    return value
