"""The zoo's one task table: what each task is, read by ``oar list``/``oar run``, :func:`zoo.Task`, serving,
export, compression and reproduce (no other zoo code branches on a task's name).

A :class:`TaskSpec` names the task's registered Task classes (``task_types``,
names in :data:`framework.registry.TASKS`), the shape of one instance
(``kind``: ``"text"``, a ``"pair"`` of texts or a ``"file"`` path), the names it
also answers to, its default model, the metrics ``oar list`` shows, and how to
make a few real example inputs (:meth:`TaskSpec.example_inputs`: what export
traces on, what a served model warms up with). Adding a task is one entry here.
"""
import dataclasses
import os
from typing import Callable, Optional

from .catalog import CatalogError

__all__ = ["TaskSpec", "TASK_TABLE", "DEFAULT_MODELS", "INSTANCE_KINDS", "task_spec", "spec_of_type", "UNLISTED_TASK_TYPES",
           "SAMPLE_TEXTS", "SAMPLE_PAIRS"]

INSTANCE_KINDS = ("text", "pair", "file")
SAMPLE_TEXTS = ["今天是个好日子，我们去北京天安门看升旗。"]
SAMPLE_PAIRS = [["今天天气很好", "今天天气很好啊"]]


def _texts(folder):
    return list(SAMPLE_TEXTS)


def _pairs(folder):
    return [list(pair) for pair in SAMPLE_PAIRS]


def _video(folder):
    """One generated, encoded video (a path)."""
    from video.data.synthetic import make_synthetic_set
    make_synthetic_set(folder, 1, seed=0, workers=1)
    return [os.path.join(folder, "videos", "000000.mp4")]


def _image(folder):
    """One PNG of random pixels, 64 x 64 (a path)."""
    import cv2
    import numpy
    path = os.path.join(folder, "example.png")
    cv2.imwrite(path, numpy.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=numpy.uint8))
    return [path]


def _detection_image(folder):
    """One generated shapes-detection image, a JPEG (a path)."""
    import cv2
    import numpy
    from vision.data.detection_shapes import render_detection_image
    rgb, _, _ = render_detection_image(numpy.random.default_rng(0))
    path = os.path.join(folder, "example.jpg")
    cv2.imwrite(path, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    return [path]


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One task of the zoo (see the module docstring)."""
    name: str
    task_types: tuple
    kind: str
    examples: Callable[[str], list]
    aliases: tuple = ()
    default: Optional[str] = None
    headline: tuple = ("acc",)

    def __post_init__(self):
        if self.kind not in INSTANCE_KINDS:
            raise ValueError(f"task {self.name!r}: kind must be one of {INSTANCE_KINDS}, got {self.kind!r}")

    def example_inputs(self, folder):
        """A small list of real raw inputs of this task (a sentence, a pair, a path to a file written into
        ``folder``), what :func:`zoo.export` traces on and what ``oar serve`` warms a model up with."""
        return self.examples(folder)


TASK_TABLE = {spec.name: spec for spec in (
    TaskSpec("lexical_analysis", ("LexicalAnalysis", "OfficialLexicalAnalysis"), "text", _texts,
             aliases=("lac", "lexical"), default="lac",
             headline=("seg_f1", "pos_f1", "entity_f1")),
    TaskSpec("sentiment", ("SentimentClassification",), "text", _texts, aliases=("senta",), default="senta_bilstm",
             headline=("acc", "macro_f1")),
    TaskSpec("matching", ("TextMatching",), "pair", _pairs, aliases=("simnet",), default="simnet_cnn_pointwise",
             headline=("acc", "auc")),
    TaskSpec("video", ("VideoRecognition", "FeatureRecognition", "FrameAttributes"), "file", _video,
             default="tsm_synth", headline=("motion_top1", "top1", "gap")),
    TaskSpec("image_classification", ("ImageClassification",), "file", _image, aliases=("image",),
             headline=("top1", "acc")),
    TaskSpec("detection", ("ObjectDetection",), "file", _detection_image, aliases=("ssd", "object_detection"),
             default="ssd_mobilenet_v1_shapes", headline=("map", "map_coco")),
)}
DEFAULT_MODELS = {name: spec.default for name, spec in TASK_TABLE.items() if spec.default}
# Registered Task classes that are deliberately not zoo tasks, with the reason (a test checks that every
# registered Task class is in the table or here).
UNLISTED_TASK_TYPES = {"VectorClassification": "the toy task of the skeleton's tests (vectors in); no zoo model"}


def task_spec(name):
    """The :class:`TaskSpec` of ``name`` (a task name or one of its aliases); an unknown one lists the known."""
    for spec in TASK_TABLE.values():
        if name == spec.name or name in spec.aliases:
            return spec
    known = ", ".join(f"{s.name} ({', '.join(s.aliases)})" if s.aliases else s.name for s in TASK_TABLE.values())
    raise CatalogError(f"unknown task {name!r} (known: {known})")


def spec_of_type(task_type):
    """The :class:`TaskSpec` whose Task classes include the registered name ``task_type`` (a config's
    ``task.type``), or None for a task the zoo has no entry for."""
    return next((spec for spec in TASK_TABLE.values() if task_type in spec.task_types), None)
