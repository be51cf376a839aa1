"""Helpers shared by the video tasks: ``predict(paths, top_k=None)`` and readable top-k results.

- :func:`video_paths`: the check of what a user passes to ``predict`` (``top_k`` and ``RankedPrediction``, the
  ``predict(paths, top_k=None)`` of both video tasks, are the framework's: :mod:`framework.engine.task`).
- :func:`topk_result`: one ``{"topk": [[name, prob], …]}`` dict, best first.
- :func:`resolve_label_groups`, :func:`grouped_topk_result`: the same per group of classes (e.g. the motions and the
  shapes of a multi-label set), ``{"topk": […], "<group>_topk": […], …}``.

The time-reversal pair scores are in :mod:`video.metrics`.
"""
import numbers
import os

import numpy

from framework.config import ConfigError
from framework.errors import InputError

__all__ = ["video_paths", "topk_result", "resolve_label_groups",
           "grouped_topk_result"]


def video_paths(inputs, who):
    """The inputs of a video task's ``predict`` as path strings; an input that is not a path (str or
    os.PathLike) raises InputError naming its position. Whether the file can be read is the decoder's to say."""
    paths = []
    for i, path in enumerate(inputs):
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"{who}: input {i} must be a video path, got {type(path).__name__}")
        paths.append(os.fspath(path))
    return paths


def topk_result(probs, class_names=None, top_k=None):
    """``{"topk": [[name, prob], …]}`` for one video: the ``top_k`` best classes (all when None), best first.

    ``probs``: (K,) class probabilities; ``class_names``: K names (ids when None).
    Ties go to the lower class id.
    """
    probs = numpy.asarray(probs, dtype=numpy.float64).reshape(-1)
    if class_names is not None and len(class_names) != len(probs):
        raise ValueError(f"topk_result: {len(class_names)} class names for {len(probs)} scores")
    count = len(probs) if top_k is None else max(1, min(int(top_k), len(probs)))
    order = numpy.argsort(-probs, kind="stable")[:count]
    return {"topk": [[class_names[c] if class_names is not None else int(c), float(probs[c])] for c in order]}


def resolve_label_groups(groups, class_names, who):
    """The task option ``label_groups`` checked against the class names: ``{group: [class ids]}`` in the
    option's order.

    ``groups`` maps a group name to its classes, each a class name or id, e.g. ``{motion: [move_left, …],
    shape: [12, 13, …]}``; None or empty gives no groups. A name that is not a class, an id out of range, a
    class listed twice in a group, an empty group or a group name that is not a plain word raises
    :class:`~framework.config.ConfigError`.
    """
    if not groups:
        return {}
    if not isinstance(groups, dict):
        raise ConfigError(f"{who}: label_groups must map group names to lists of classes, got {groups!r}")
    if class_names is None:
        raise ConfigError(f"{who}: label_groups needs class_names")
    resolved = {}
    for group, members in groups.items():
        if not isinstance(group, str) or not group.isidentifier():
            raise ConfigError(f"{who}: label_groups: a group name must be a plain word (letters, digits, _), "
                              f"got {group!r}")
        if not isinstance(members, (list, tuple)) or not members:
            raise ConfigError(f"{who}: label_groups.{group} must be a non-empty list of class names or ids, "
                              f"got {members!r}")
        ids = []
        for member in members:
            if isinstance(member, str) and member in class_names:
                ids.append(class_names.index(member))
            elif isinstance(member, numbers.Integral) and not isinstance(member, bool) \
                    and 0 <= member < len(class_names):
                ids.append(int(member))
            else:
                raise ConfigError(f"{who}: label_groups.{group}: {member!r} is neither a class name nor a class id "
                                  f"in [0, {len(class_names)})")
        if len(set(ids)) != len(ids):
            raise ConfigError(f"{who}: label_groups.{group} lists a class twice: {members}")
        resolved[group] = ids
    return resolved


def grouped_topk_result(probs, class_names, top_k=None, groups=None):
    """``{"topk": [...], "<group>_topk": [...], ...}`` for one video: :func:`topk_result` over all classes,
    then over each group's classes alone (``groups``: ``{group: [class ids]}`` from :func:`resolve_label_groups`).

    ``top_k`` applies to every list (a group lists at most its own classes). Probabilities are the model's,
    not renormalised within a group.
    """
    probs = numpy.asarray(probs, dtype=numpy.float64).reshape(-1)
    result = topk_result(probs, class_names, top_k)
    for group, ids in (groups or {}).items():
        names = list(ids) if class_names is None else [class_names[i] for i in ids]
        result[f"{group}_topk"] = topk_result(probs[ids], names, top_k)["topk"]
    return result

