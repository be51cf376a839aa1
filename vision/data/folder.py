"""Image files and image-folder datasets (``root/class_name/*.jpg|png``).

Decoding uses OpenCV (``cv2.imdecode``). Every image becomes 8-bit RGB
(H, W, 3): grayscale is replicated to three channels, an alpha channel is
dropped (as PIL's ``convert("RGB")``), 16-bit images are scaled to 8 bits.
A file that cannot be decoded is an error naming the file.
"""
import os

import numpy

from framework.io import Dataset
from framework.registry import DATASETS

from .transforms import Compose, require_cv2
from framework.config import ConfigError
from framework.engine.task import InputTypeError
from framework.errors import MissingFileError, UserError

__all__ = ["IMAGE_EXTENSIONS", "decode_image", "read_image", "image_input", "scan_image_folder", "ImageFolder",
           "ImageDataError"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


class ImageDataError(UserError, ValueError):
    """An image cannot be decoded, or a folder holds no usable images; the message names the path."""


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def decode_image(data, name="<bytes>"):
    """Encoded image bytes -> uint8 RGB array (H, W, 3); ``name`` appears in errors."""
    cv2 = require_cv2()
    if data.startswith(_PNG_SIGNATURE) and b"IEND" not in data[-64:]:    # libpng would print its own line first
        raise ImageDataError(f"cannot decode image {name} ({len(data)} bytes): a PNG file that ends before its "
                             f"IEND chunk (truncated?)")
    buffer = numpy.frombuffer(data, dtype=numpy.uint8)
    image = cv2.imdecode(buffer, cv2.IMREAD_COLOR) if buffer.size else None
    if image is None:
        raise ImageDataError(f"cannot decode image {name} ({buffer.size} bytes): not a readable image file")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def read_image(path):
    """The image file at ``path`` as uint8 RGB (H, W, 3) (see the module docstring for conversions)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise ImageDataError(f"cannot read image {path}: {err.strerror}") from None
    return decode_image(data, path)


def image_input(item, position):
    """One image a user gave a task, as an (H, W, 3) uint8 RGB array: a path, encoded bytes or such an array;
    anything else is an InputTypeError naming input ``position``."""
    if isinstance(item, (str, os.PathLike)):
        return read_image(item)
    if isinstance(item, bytes):
        return decode_image(item, f"input {position}")
    array = numpy.asarray(item)
    if array.ndim != 3 or array.shape[-1] != 3 or array.dtype != numpy.uint8:
        raise InputTypeError(f"an image input must be an image path, encoded image bytes or a uint8 RGB "
                             f"array (H, W, 3), got {array.dtype} of shape {array.shape}", index=position)
    return array


def scan_image_folder(root, extensions=IMAGE_EXTENSIONS, classes=None):
    """``(class_names, [(path, label), …])`` for ``root/class_name/*``, sorted by class then file name.

    ``classes`` fixes the class list and its order (e.g. the training set's for
    an evaluation folder); a class folder missing from ``root`` is then an error,
    as is a folder outside the list. Files with other extensions are ignored.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise MissingFileError(f"image folder not found: {root}")
    found = sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    if classes is None:
        classes = found
    else:
        classes = [str(c) for c in classes]
        missing, extra = sorted(set(classes) - set(found)), sorted(set(found) - set(classes))
        if missing or extra:
            raise ImageDataError(f"{root}: class folders do not match the class list: missing {missing}, "
                                 f"not in the list {extra}")
    if not classes:
        raise ImageDataError(f"{root} has no class folders (expected root/class_name/image files)")
    extensions = tuple(e.lower() for e in extensions)
    samples = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        files = sorted(f for f in os.listdir(folder) if f.lower().endswith(extensions) and not f.startswith("."))
        samples += [(os.path.join(folder, f), label) for f in files]
    if not samples:
        raise ImageDataError(f"{root}: no images with extensions {', '.join(extensions)} in its class folders "
                             f"{classes}")
    return list(classes), samples


def _read_names(path):
    """The class names in the file ``path``, one per non-empty line (list of str)."""
    try:
        with open(path, encoding="utf-8") as f:
            names = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        raise MissingFileError(f"class-names file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ImageDataError(f"cannot read the class-names file {path}: {err}") from None
    if not names:
        raise ImageDataError(f"{path}: no class names")
    return names


@DATASETS.register()
class ImageFolder(Dataset):
    """Images in ``root/class_name/*`` with class ids in sorted folder-name order.

    Args:
        root: the folder of class folders.
        transforms: a list of transforms or ``{type: …}`` dicts (see
            ``vision.data.transforms``), applied to ``{"img": (H, W, 3) uint8 RGB}``.
        split: "all", or "train" / "eval" to divide ``root`` itself: within each
            class (files sorted by name) file i goes to eval when
            ``i % eval_every == 0``, else to train.
        eval_every: see ``split``.
        classes: fix the class list (default: the sorted folder names): a list, or a file of names, one
            per line (a run's ``class_names.txt``).
        extensions: file name endings counted as images.

    Sample: ``{"img": whatever the transforms return (e.g. (3, H, W) float32),
    "label": int64 class id}``. ``class_names`` lists the classes by id; ``num_labels`` /
    ``labels_source`` give their number and origin (checked against ``model.num_classes``).
    A test folder of yours (``oar eval --test_file F``) is read whole (``split="all"``) with the run's
    class names.
    """

    SPLITS = ("all", "train", "eval")
    TEST_FILE = {"file_keys": ("root",), "whole": {"split": "all"}, "from_run": {"classes": "task.class_names"}}

    def __init__(self, root: str, transforms: list = None, split: str = "all", eval_every: int = 10,
                 classes: list = None, extensions: list = IMAGE_EXTENSIONS):
        if split not in self.SPLITS:
            raise ConfigError(f"ImageFolder: split must be 'all', 'train' or 'eval', got {split!r}")
        if eval_every < 2:
            raise ConfigError(f"ImageFolder: eval_every must be at least 2, got {eval_every}")
        self.root = os.fspath(root)
        if isinstance(classes, (str, os.PathLike)):
            classes = _read_names(classes)
        self.class_names, samples = scan_image_folder(self.root, extensions, classes)
        self.num_labels = len(self.class_names)
        self.labels_source = f"the class folders of {self.root}" if classes is None else \
            f"its classes: {', '.join(self.class_names[:10])}{', …' if len(self.class_names) > 10 else ''}"
        if split != "all":
            position = {}
            kept = []
            for path, label in samples:
                i = position[label] = position.get(label, -1) + 1
                if (i % eval_every == 0) == (split == "eval"):
                    kept.append((path, label))
            samples = kept
            if not samples:
                raise ImageDataError(f"{self.root}: the {split!r} split (eval_every={eval_every}) has no images")
        self.samples = samples
        self.transforms = Compose(transforms)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        sample = self.transforms({"img": read_image(path)})
        sample["label"] = numpy.int64(label)
        return sample
