"""The model's number of outputs (``model.num_classes``, ``model.num_tags``) and the labels of the data.

A dataset that knows its label set says so with two attributes: ``num_labels`` (int, or None when it does
not know) and ``labels_source`` (a phrase naming where the labels come from, for messages: "the names in
classes.txt"). Before the first step, :func:`fill_label_count` gives a model section without its count key
the training set's number, and :func:`check_label_counts` refuses a count that differs from a dataset's,
in one line naming both numbers and both keys.
"""
from ..config import ConfigError, location, signature_keys
from ..registry import MODELS

__all__ = ["COUNT_KEYS", "count_key", "fill_label_count", "check_label_counts"]

COUNT_KEYS = ("num_classes", "num_tags")    # the model constructor keys that count its outputs, one per model


def count_key(cfg):
    """The key of ``cfg``'s model type that counts its outputs (one of :data:`COUNT_KEYS`), or None."""
    model = cfg.get("model") or {}
    keys = signature_keys(MODELS.get(model["type"], location(cfg, "model"))) if "type" in model else None
    return next((k for k in COUNT_KEYS if keys is not None and k in keys), None)


def fill_label_count(cfg, dataset):
    """``cfg`` with ``model.<count key>`` set to ``dataset.num_labels`` when the model section does not give
    it (a new dict; ``cfg`` itself when it gives it, or the dataset or the model has no count)."""
    key, labels = count_key(cfg), getattr(dataset, "num_labels", None)
    if key is None or labels is None or key in cfg["model"]:
        return cfg
    return {**cfg, "model": {**cfg["model"], key: int(labels)}}


def check_label_counts(cfg, datasets):
    """Raise ConfigError when ``model.<count key>`` differs from the ``num_labels`` of a dataset.

    ``datasets``: ``{split name ("train", "eval", "test"): dataset or None}``.
    """
    key = count_key(cfg)
    if key is None or not isinstance(cfg["model"].get(key), int):
        return
    wanted = cfg["model"][key]
    for split, dataset in datasets.items():
        labels = getattr(dataset, "num_labels", None)
        if labels is not None and labels != wanted:
            source = getattr(dataset, "labels_source", "its label set")
            fix = (f"set model.{key}: {labels}, or leave it out to take the count from the data" if split == "train"
                   else f"its labels must be the {wanted} the model has")
            raise ConfigError(f"model.{key} is {wanted} but data.{split} has {labels} labels ({source}); {fix} "
                              f"({location(cfg, 'model')})")
