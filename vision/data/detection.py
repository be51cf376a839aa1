"""Detection datasets: a PASCAL VOC folder and a COCO JSON file.

Each sample is ``{"img": (H, W, 3) uint8 RGB, "boxes": (G, 4) float32 pixel corners (x1, y1, x2, y2),
"labels": (G,) int64 class ids, "difficult": (G,) bool}`` before the transforms (box transforms in
:mod:`vision.data.box_transforms` move the boxes with the image). Class ids follow ``class_names``.
"""
import json
import os
import xml.etree.ElementTree as ElementTree

import numpy

from framework.config import ConfigError
from framework.errors import UserError
from framework.io import Dataset
from framework.registry import DATASETS

from .folder import read_image
from .transforms import Compose

__all__ = ["VOCDetection", "COCODetection", "DetectionDataError", "read_voc_annotation", "detection_class_names"]


class DetectionDataError(UserError, ValueError):
    """An annotation file that cannot be read or names an unknown class; the message names the file."""


def detection_class_names(source):
    """Class names from a list, or from a text file (one name a line)."""
    if isinstance(source, (list, tuple)):
        names = [str(n) for n in source]
    elif isinstance(source, (str, os.PathLike)) and os.path.isfile(source):
        with open(source, encoding="utf-8") as f:
            names = [line.strip() for line in f if line.strip()]
    else:
        raise ConfigError(f"class_names must be a list of names or a file of names, got {source!r}")
    if not names or len(set(names)) != len(names):
        raise ConfigError(f"class_names must be distinct and not empty, got {names[:10]}")
    return names


def read_voc_annotation(path, class_ids):
    """``(boxes (G, 4) float32 0-based pixel corners, labels (G,) int64, difficult (G,) bool)`` of one VOC
    XML file; VOC's 1-based ``xmin``/``ymin``/``xmax``/``ymax`` become x1 = xmin - 1 and so on."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as err:
        raise DetectionDataError(f"cannot read VOC annotation {path}: {err}") from None
    boxes, labels, difficult = [], [], []
    for obj in root.iter("object"):
        name = (obj.findtext("name") or "").strip()
        if name not in class_ids:
            raise DetectionDataError(f"{path}: object class {name!r} is not in class_names")
        box = obj.find("bndbox")
        try:
            boxes.append([float(box.findtext(k)) - 1 for k in ("xmin", "ymin", "xmax", "ymax")])
        except (AttributeError, TypeError, ValueError):
            raise DetectionDataError(f"{path}: an object of class {name!r} has no readable bndbox") from None
        labels.append(class_ids[name])
        difficult.append((obj.findtext("difficult") or "0").strip() == "1")
    return (numpy.asarray(boxes, dtype=numpy.float32).reshape(-1, 4), numpy.asarray(labels, dtype=numpy.int64),
            numpy.asarray(difficult, dtype=bool))


class _DetectionSet(Dataset):
    """Shared: the list of (image path, boxes, labels, difficult) and the transforms."""

    def __init__(self, records, transforms):
        self.records = records
        self.transforms = Compose(transforms)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        path, boxes, labels, difficult = self.records[index]
        sample = {"img": read_image(path), "boxes": boxes.copy(), "labels": labels.copy(),
                  "difficult": difficult.copy()}
        return self.transforms(sample)


def _voc_ids(root, split):
    """(the image ids of ``split`` of the VOC folder ``root``, where they were listed)."""
    if split == "all":
        folder = os.path.join(root, "Annotations")
        if not os.path.isdir(folder):
            raise DetectionDataError(f"VOCDetection: {root} is not a VOC folder (no Annotations/)")
        return sorted(n[:-4] for n in os.listdir(folder) if n.endswith(".xml")), folder
    list_file = os.path.join(root, "ImageSets", "Main", f"{split}.txt")
    if not os.path.isfile(list_file):
        raise DetectionDataError(f"VOCDetection: no image set {list_file}")
    with open(list_file, encoding="utf-8") as f:
        return [line.split()[0] for line in f if line.strip()], list_file


@DATASETS.register()
class VOCDetection(_DetectionSet):
    """A PASCAL VOC folder: ``root/JPEGImages/<id>.jpg``, ``root/Annotations/<id>.xml`` and
    ``root/ImageSets/Main/<split>.txt`` listing the ids of a split.

    Args:
        root: the folder.
        split: the image-set file's name (``train``, ``val``, ``test``, ``trainval``), or ``all``: every
            annotation in ``Annotations/`` (no image-set file needed; how ``oar eval --test_file FOLDER``
            reads a test folder of yours).
        class_names: the class names (a list or a file), in class-id order.
        transforms: the sample transforms.
        keep_difficult: keep objects marked ``difficult`` in the training targets (they are always kept,
            flagged, for evaluation, which ignores them).
    """

    SPLITS = ("train", "val", "trainval", "test", "all")
    TEST_FILE = {"file_keys": ("root",), "whole": {"split": "all"}, "from_run": {"class_names": "task.class_names"}}

    def __init__(self, root: str, split: str = "train", class_names=None, transforms: list = None,
                 keep_difficult: bool = True):
        if class_names is None:
            raise ConfigError("VOCDetection: class_names is required (a list or a file of names)")
        self.class_names = detection_class_names(class_names)
        ids = {name: i for i, name in enumerate(self.class_names)}
        names, list_file = _voc_ids(root, split)
        records = []
        for name in names:
            boxes, labels, difficult = read_voc_annotation(os.path.join(root, "Annotations", name + ".xml"), ids)
            if not keep_difficult:
                boxes, labels, difficult = boxes[~difficult], labels[~difficult], difficult[~difficult]
            records.append((os.path.join(root, "JPEGImages", name + ".jpg"), boxes, labels, difficult))
        if not records:
            raise DetectionDataError(f"VOCDetection: {list_file} lists no images")
        super().__init__(records, transforms)


def _coco_objects(annotation_file, annotations, categories, ids):
    """``{image id: [(corner box, class id, crowd), ...]}`` of COCO ``annotations``; one DetectionDataError
    naming the file and the annotation for anything malformed."""
    objects = {}
    for index, a in enumerate(annotations):
        try:
            name = categories.get(a["category_id"])
            x, y, w, h = (float(v) for v in a["bbox"])
            image = a["image_id"]
        except (KeyError, TypeError, ValueError) as err:
            raise DetectionDataError(f"{annotation_file}: annotations[{index}] needs category_id, image_id and a "
                                     f"bbox of four numbers ({err!r})") from None
        if name not in ids:
            raise DetectionDataError(f"{annotation_file}: annotations[{index}]: category {a['category_id']} is not "
                                     f"in class_names")
        objects.setdefault(image, []).append(([x, y, x + w, y + h], ids[name], bool(a.get("iscrowd"))))
    return objects


@DATASETS.register()
class COCODetection(_DetectionSet):
    """Images and boxes from a COCO JSON file (``images``, ``annotations`` with ``bbox`` [x, y, w, h] in
    pixels, ``categories``); ``iscrowd`` objects are kept as difficult (ignored by evaluation).

    Args:
        annotation_file: the JSON file.
        image_dir: the folder holding the images' ``file_name`` (None: the JSON file's folder).
        class_names: the category names to use, in class-id order (default: the file's categories
            sorted by id).
        transforms: the sample transforms.
    """

    TEST_FILE = {"file_keys": ("annotation_file",), "whole": {"image_dir": None},
                 "from_run": {"class_names": "task.class_names"}}

    def __init__(self, annotation_file: str, image_dir: str = None, class_names=None, transforms: list = None):
        try:
            with open(annotation_file, encoding="utf-8") as f:
                coco = json.load(f)
            categories = {c["id"]: c["name"] for c in coco["categories"]}
            images = coco["images"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise DetectionDataError(f"cannot read COCO annotations {annotation_file}: {err!r}") from None
        self.class_names = (detection_class_names(class_names) if class_names is not None
                            else [categories[k] for k in sorted(categories)])
        objects = _coco_objects(annotation_file, coco.get("annotations", []), categories,
                                {name: i for i, name in enumerate(self.class_names)})
        image_dir = os.path.dirname(annotation_file) if image_dir is None else image_dir
        records = []
        for index, image in enumerate(images):
            if not isinstance(image, dict) or "id" not in image or not isinstance(image.get("file_name"), str):
                raise DetectionDataError(f"{annotation_file}: images[{index}] needs an id and a file_name")
            found = objects.get(image["id"], [])
            records.append((os.path.join(image_dir, image["file_name"]),
                            numpy.asarray([o[0] for o in found], dtype=numpy.float32).reshape(-1, 4),
                            numpy.asarray([o[1] for o in found], dtype=numpy.int64),
                            numpy.asarray([o[2] for o in found], dtype=bool)))
        if not records:
            raise DetectionDataError(f"COCODetection: {annotation_file} lists no images")
        super().__init__(records, transforms)
