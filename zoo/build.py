"""The one build and the one finish of a model, whatever its card (:mod:`zoo.card`) came from.

:func:`build` turns a card into its eager task (eval mode): a ``trained`` or
``compressed`` card from its config (:func:`card_config`) and its checked
weights (:func:`checked_weights`), an ``official`` one by its loader (a key of
:data:`LOADERS`, a fixed table in this code, so that no file chooses code to
run). :func:`ready` finishes a built task the same way for every card: on the
device, through traced programs (the trace cache in ``$OAR_HOME/programs``, or
the program an export saved), or with the network on ONNX Runtime (the
export's ``model.onnx``, or one exported once into ``$OAR_HOME/onnx``).

Every file a card lists with a sha256 (weights, a vocabulary, a feature
backbone; every file of an export) is checked before it is read.
"""
import dataclasses
import os

from framework import jit
from framework.config import load_config
from framework.engine import runner
from framework.engine.run_dir import run_config
from framework.fetch import FetchError, oar_home, sha256_of

from . import exported
from .card import CardError
from .catalog import ROOT
from .registration import register_everything

__all__ = ["WeightsError", "Built", "LOADERS", "LOADER_TASKS", "RUNTIMES", "build", "ready", "card_config",
           "weighted_task", "checked_weights", "resolve_repo_files", "program_cache_dir"]

RUNTIMES = ("oar", "onnxruntime")


class WeightsError(FetchError):
    """A model's weights (or a file beside them) are missing or do not match their card's sha256."""


def program_cache_dir():
    """Where the zoo keeps traced programs across processes: ``$OAR_HOME/programs`` (:mod:`framework.jit.cache`)."""
    return os.path.join(oar_home(), "programs")


def _checked_file(card, relative, sha256):
    path = os.path.join(card.folder, relative or "")
    if not relative or not os.path.isfile(path):
        again = f"recreate it with `oar reproduce {card.name}`" if card.origin == "zoo" else "train or export it again"
        raise WeightsError(f"model {card.name!r}: file {path} is missing; {again}")
    if sha256 and sha256_of(path) != sha256:
        raise WeightsError(f"model {card.name!r}: {path} has sha256 {sha256_of(path)}, the card says {sha256}; "
                           f"refusing to load it")
    return path


def checked_weights(card):
    """The path of the card's weights file; it and every companion file the card records a sha256 for (a
    vocabulary, a feature backbone) must exist and match."""
    for name, digest in card.weights.companion_sha256.items():
        _checked_file(card, card.weights.companions.get(name), digest)
    return _checked_file(card, card.weights.path, card.weights.sha256)


def _repo_path(value):
    """``value`` made absolute when it is a relative path of an existing repository file, else unchanged."""
    if isinstance(value, str) and not os.path.isabs(value) and os.path.exists(os.path.join(ROOT, value)):
        return os.path.join(ROOT, value)
    return value


def resolve_repo_files(section):
    """Make the relative ``*_file`` paths (one path or a list) of a config section that exist under the
    repository absolute: shipped configs name shipped files relative to the repository root (e.g.
    ``task.vocab_file: zoo/weights/lac_pku.vocab.txt``), so a zoo model loads from any directory."""
    for key, value in section.items():
        if key.endswith("_file"):
            section[key] = [_repo_path(v) for v in value] if isinstance(value, list) else _repo_path(value)


def card_config(card, overrides=()):
    """The resolved config of a trained or compressed card, then ``overrides``: a zoo card's config with the
    card's overrides (a value naming a repository file made absolute); a run's or an export's
    ``config.yaml``, whose task files are the checked copies inside its folder (:func:`run_config`)."""
    if card.kind == "official":
        raise CardError(f"model {card.name!r} is built by the loader {card.loader!r}, not from a config")
    if card.origin == "zoo":
        resolved = [f"{key}={_repo_path(value)}" if value else item
                    for item in card.overrides for key, _, value in [item.partition("=")]]
        cfg = load_config(os.path.join(ROOT, card.config), resolved + list(overrides))
        resolve_repo_files(cfg.get("task") or {})
        return cfg
    return run_config(load_config(os.path.join(card.folder, card.config), list(overrides), bases=False), card.folder)


def weighted_task(cfg, weights, kind="trained"):
    """The eager task of ``cfg`` (eval mode) with ``weights`` loaded: a plain checkpoint for a ``trained``
    model, a compressed file (:func:`framework.slim.save_compressed`) for a ``compressed`` one."""
    register_everything()
    resolve_repo_files(cfg.get("task") or {})
    task = runner.build_task(cfg)
    if kind == "compressed":
        load_compressed_weights(task, weights, cfg)
    else:
        runner.load_weights(task.model, weights, task=task, cfg=cfg)
    task.model.eval()
    return task


def load_compressed_weights(task, weights, cfg):
    """Load the compressed weights file ``weights`` (:func:`framework.slim.save_compressed`) into ``task``'s
    model, built from ``cfg`` (pruned layers resized, int8 layers converted)."""
    from framework.slim import load_compressed
    load_compressed(task.model, weights, cfg.get("model"))


def _official_lac(card):
    """Baidu's official LAC, built from its fetched files (the ``official_lac`` loader)."""
    from nlp.lac.task import load_official_task
    return load_official_task()


def _official_lac_rank(card):
    """Baidu's official LAC with its word-importance model on top (the ``official_lac_rank`` loader)."""
    from nlp.lac.rank_task import load_rank_task
    return load_rank_task()


def _official_lac_seg(card):
    """Baidu's official LAC segmentation-only model (the ``official_lac_seg`` loader)."""
    from nlp.lac.seg import load_official_seg_task
    return load_official_seg_task()


def _paddlenlp_lac_2019(card):
    """The 2019 PaddleNLP LAC from the parameters jieba 0.42.1 ships (the ``paddlenlp_lac_2019`` loader)."""
    from nlp.lac.small import load_small_task
    return load_small_task()


# What an ``official`` card's ``loader`` may name: a fixed table, so that no file can choose code to import or run.
LOADERS = {"official_lac": _official_lac, "official_lac_rank": _official_lac_rank,
           "official_lac_seg": _official_lac_seg, "paddlenlp_lac_2019": _paddlenlp_lac_2019}
# The task each loader builds: an official card must serve that task.
LOADER_TASKS = {"official_lac": "lexical_analysis", "official_lac_rank": "lexical_analysis",
                "official_lac_seg": "lexical_analysis", "paddlenlp_lac_2019": "lexical_analysis"}


@dataclasses.dataclass
class Built:
    """A card's eager task (eval mode), with the ``cfg`` and ``weights`` path it was built from (None for an
    ``official`` card)."""
    task: object
    cfg: dict
    weights: str


def build(card, runtime="oar"):
    """The :class:`Built` task of ``card``: from its config and checked weights, or by its official loader.
    An export's files are all checked against its manifest first (those ``runtime`` needs must be listed)."""
    register_everything()
    if card.origin == "export":
        exported.check_files(card, runtime)
    if card.kind == "official":
        where = f"model {card.name!r}"
        if card.origin == "export":
            where = f"{os.path.join(card.folder, exported.MANIFEST)}: {where}"
        if card.loader not in LOADERS:
            raise CardError(f"{where}: unknown loader {card.loader!r} (the zoo's loaders: {', '.join(LOADERS)})")
        if LOADER_TASKS[card.loader] != card.task:
            raise CardError(f"{where} serves task {card.task!r}, but the loader {card.loader!r} builds "
                            f"{LOADER_TASKS[card.loader]!r}")
        task = LOADERS[card.loader](card)
        task.model.eval()
        return Built(task, None, None)
    cfg, weights = card_config(card), checked_weights(card)
    return Built(weighted_task(cfg, weights, card.kind), cfg, weights)


def ready(task, card, device="cpu", static=True, runtime="oar"):
    """Finish the built ``task`` of ``card`` for inference (module docstring): on ``device``, through traced
    programs when ``static`` (or when ``runtime`` is ``"onnxruntime"``), with ``task.card`` and
    ``task.device`` set. Returns the task."""
    if runtime not in RUNTIMES:
        raise CardError(f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
    if device and device != "cpu":
        task.model.to(device)
    task.model.eval()
    if static or runtime != "oar":
        saved = card.program is not None
        task.model = jit.to_static(task.model, dynamic_axes=task.dynamic_axes, passes=jit.INFERENCE_PASSES,
                                   cache_dir=None if saved else program_cache_dir())
        if saved:
            program = jit.load(os.path.join(card.folder, card.program), device=device)
            if runtime == "onnxruntime" and card.onnx:
                from framework import onnx
                task.model.add_program(onnx.OnnxProgram(os.path.join(card.folder, card.onnx)), program.inputs)
            else:
                task.model.add_program(program)
    task.device = device
    task.card = card
    if runtime == "onnxruntime" and not card.onnx:
        exported.use_onnxruntime(task, card)
    return task
