"""Every YAML under configs/ (the ``_base_`` fragments aside) resolves its ``_base_`` chain, passes the section
checks and builds its model, its task and its optimizer; every ``_base_`` fragment is used by some config.

Models are built at the config's full size (forward passes are the registered-model tests' job,
``tests/test_registered_models.py``). Tasks whose vocabulary is built from a corpus in the cache are built
without a download or not at all; ``MODEL_ONLY`` says which and why.
"""
import fnmatch
import glob
import os

import pytest
import yaml

from framework.config import load_config, merge
from framework.engine import runner
from framework.fetch import FetchError
from framework.registry import MODELS
from zoo.api import register_everything

register_everything()

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "configs"))
BASE = os.path.join(ROOT, "_base_")
ALL_YAML = sorted(glob.glob(os.path.join(ROOT, "**", "*.yaml"), recursive=True))
BASES = [p for p in ALL_YAML if p.startswith(BASE + os.sep)]
SLIM = os.path.join(ROOT, "slim")  # compression settings, not models: tests/zoo/slim/test_settings.py reads them
CONFIGS = [p for p in ALL_YAML if not p.startswith((BASE + os.sep, SLIM + os.sep))]

MODEL_ONLY = {  # config path glob (relative to configs/) -> why its task is not built here
    "nlp/senta_*_word.yaml": "the vocabulary needs the review corpus tagged by the official LAC model "
                             "(minutes, when the tagging is not cached)",
    "nlp/senta_*_spm.yaml": "the vocabulary needs a SentencePiece model trained on the review corpus "
                            "(minutes, when it is not cached)",
    "nlp/simnet_*.yaml": "the vocabulary comes from the People's Daily matching pairs: 1-2 s per config even "
                         "when cached, about a minute at first (the matching task's own tests build these "
                         "tasks with a small vocabulary)",
}
UNUSED_BASES = {  # _base_ fragment -> why no config inherits it (an entry here that a config comes to use fails)
    "_base_/datasets/synthetic_motion.yaml": "the generated motion set's data sections on their own (the video "
                                             "dataset tests build them); video_frames_synth.yaml writes its data "
                                             "sections out instead of inheriting these",
}
# Nothing is downloaded here (the package index is unreachable): the other configs that name a corpus
# (task.corpus: the Senta character configs) build their task from the cache, or the model alone when the
# corpus is not cached; any other config whose task would fetch something fails.


def _relative(path):
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def _read(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def _chain(path):
    """The files of ``path``'s ``_base_`` chain in merge order (bases depth first, then the file): [(path, data)]."""
    data = dict(_read(path))
    bases = data.pop("_base_", [])
    files = []
    for base in [bases] if isinstance(bases, str) else bases:
        files += _chain(os.path.normpath(os.path.join(os.path.dirname(path), base)))
    return files + [(os.path.normpath(path), data)]


def _leaves(tree, prefix=""):
    """``{dotted key: value}`` of every non-mapping value in ``tree``."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _get(tree, dotted):
    for part in dotted.split("."):
        tree = tree[part]
    return tree


def test_the_configs_are_found():
    assert len(CONFIGS) >= 40 and len(BASES) >= 5
    assert {_relative(p).split("/")[0] for p in CONFIGS} >= {"nlp", "vision", "video", "examples", "_test"}


def test_every_base_fragment_is_used_by_a_config():
    used = {file for config in CONFIGS for file, _ in _chain(config)}
    unused = sorted(_relative(p) for p in BASES if os.path.normpath(p) not in used)
    assert unused == sorted(UNUSED_BASES), f"_base_ fragments no config uses: {unused}"


def test_every_model_only_glob_matches_a_config():
    names = [_relative(p) for p in CONFIGS]
    assert [g for g in MODEL_ONLY if not fnmatch.filter(names, g)] == []


@pytest.mark.parametrize("path", CONFIGS, ids=_relative)
def test_config_resolves_and_builds(path, monkeypatch):
    cfg = load_config(path)
    assert "_base_" not in cfg and cfg["_source_"] == path

    # the _base_ chain: every file's keys are there, each with the value of the last file in merge order
    expected = {}
    for _, data in _chain(path):
        expected = merge(expected, data)
    # and a "${a.b}" reference holds the value at a.b
    written = _leaves(expected)
    references = {key: value[2:-1].strip() for key, value in written.items()
                  if isinstance(value, str) and value.startswith("${")}
    for key, target in references.items():
        assert _get(cfg, key) == _get(cfg, target), key
    resolved = {key: value for key, value in _leaves({k: v for k, v in cfg.items() if k != "_source_"}).items()
                if not any(key == ref or key.startswith(ref + ".") for ref in references)}
    assert resolved == {key: value for key, value in written.items() if key not in references}

    train_cfg = runner.check_sections(cfg)
    assert cfg["model"]["type"] in MODELS
    monkeypatch.setenv("OAR_PACKAGE_INDEX", "http://127.0.0.1:9/simple")   # nothing is downloaded here
    if any(fnmatch.fnmatch(_relative(path), pattern) for pattern in MODEL_ONLY):
        model = MODELS.build(cfg["model"])
    else:
        try:
            model = runner.build_task(cfg).model
        except FetchError:
            if not cfg["task"].get("corpus"):
                raise
            model = MODELS.build(cfg["model"])   # its corpus is not cached: the model alone

    assert sum(p.size for p in model.parameters()) > 0
    for key, value in cfg["model"].items():   # the model holds the config's arguments it exposes
        held = getattr(model, key, None)
        if key != "type" and isinstance(value, (bool, int, float, str)) and isinstance(held, type(value)):
            assert held == value, key
    runner.build_optimizer(cfg, model, runner.build_scheduler(cfg), train_cfg["grad_clip"])
