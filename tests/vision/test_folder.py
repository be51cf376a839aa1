"""Decoding image files (colour order, grayscale, alpha, 16-bit) and image-folder datasets, with their errors."""
import os

import numpy
import pytest

from framework.io import DataLoader, DataLoaderError
from vision.data import ImageDataError, ImageFolder, decode_image, read_image, require_cv2

cv2 = require_cv2()
RGB = (200, 30, 90)


def _write(path, image):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    assert cv2.imwrite(str(path), image)
    return str(path)


def _bgr(height=6, width=5, rgb=RGB):
    return numpy.full((height, width, 3), rgb[::-1], dtype=numpy.uint8)


def test_colour_png_is_rgb(tmp_path):
    image = read_image(_write(tmp_path / "a.png", _bgr()))
    assert image.shape == (6, 5, 3) and image.dtype == numpy.uint8
    assert tuple(image[0, 0]) == RGB


def test_grayscale_alpha_and_16_bit_are_converted(tmp_path):
    gray = read_image(_write(tmp_path / "g.png", numpy.full((4, 4), 77, numpy.uint8)))
    assert gray.shape == (4, 4, 3) and (gray == 77).all()
    bgra = numpy.concatenate([_bgr(4, 4), numpy.full((4, 4, 1), 10, numpy.uint8)], axis=2)
    rgba = read_image(_write(tmp_path / "rgba.png", bgra))
    assert rgba.shape == (4, 4, 3) and tuple(rgba[1, 1]) == RGB  # alpha dropped, colour kept
    deep = read_image(_write(tmp_path / "deep.png", numpy.full((4, 4, 3), 256 * 200, numpy.uint16)))
    assert deep.dtype == numpy.uint8 and (deep == 200).all()


def test_jpeg_is_close_to_its_source(tmp_path):
    image = read_image(_write(tmp_path / "a.jpg", _bgr(16, 16)))
    assert numpy.abs(image.astype(int) - numpy.array(RGB)).max() <= 3


def test_undecodable_files_are_named(tmp_path):
    with pytest.raises(ImageDataError, match="cannot decode image broken.png"):
        decode_image(b"\x89PNG garbage", "broken.png")
    with pytest.raises(ImageDataError, match="cannot read image .*missing.png"):
        read_image(str(tmp_path / "missing.png"))


def _folder(root, counts):
    for name, count in counts.items():
        for i in range(count):
            _write(os.path.join(root, name, f"{i:03d}.png"), _bgr(rgb=(i, 0, 0)))
    return str(root)


def test_image_folder_labels_and_samples(tmp_path):
    root = _folder(tmp_path / "data", {"dog": 2, "cat": 3})
    (tmp_path / "data" / "cat" / "notes.txt").write_text("not an image")
    dataset = ImageFolder(root, transforms=[{"type": "Normalize", "mean": [0, 0, 0], "std": [1, 1, 1]},
                                            {"type": "ToCHW"}])
    assert dataset.class_names == ["cat", "dog"] and len(dataset) == 5
    sample = dataset[3]
    assert sample["label"] == 1 and sample["label"].dtype == numpy.int64
    assert sample["img"].shape == (3, 6, 5) and sample["img"][0, 0, 0] == 0.0
    assert dataset[2]["img"][0, 0, 0] == 2.0  # cat/002.png, red channel first


def test_split_rule_divides_each_class(tmp_path):
    root = _folder(tmp_path / "data", {"a": 12, "b": 3})
    eval_set = ImageFolder(root, split="eval", eval_every=10)
    train_set = ImageFolder(root, split="train", eval_every=10)
    assert [os.path.basename(p) for p, _ in eval_set.samples] == ["000.png", "010.png", "000.png"]
    assert len(train_set) == 12 and not {p for p, _ in train_set.samples} & {p for p, _ in eval_set.samples}


def test_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="image folder not found"):
        ImageFolder(str(tmp_path / "none"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ImageDataError, match="no class folders"):
        ImageFolder(str(tmp_path / "empty"))
    (tmp_path / "empty" / "cats").mkdir()
    with pytest.raises(ImageDataError, match="no images with extensions .jpg"):
        ImageFolder(str(tmp_path / "empty"))
    root = _folder(tmp_path / "data", {"a": 1, "b": 1})
    with pytest.raises(ImageDataError, match=r"missing \['c'\], not in the list \['b'\]"):
        ImageFolder(root, classes=["a", "c"])


def test_a_broken_file_in_a_loader_names_the_file(tmp_path):
    root = _folder(tmp_path / "data", {"a": 2})
    with open(os.path.join(root, "a", "001.png"), "wb") as f:
        f.write(b"truncated")
    loader = DataLoader(ImageFolder(root), batch_size=2, num_workers=2)
    with pytest.raises(DataLoaderError, match="001.png"):
        list(loader)


def test_a_class_names_file_fixes_the_classes_and_their_count(tmp_path):
    root = _folder(tmp_path / "data", {"a": 2, "b": 1})
    names = tmp_path / "class_names.txt"
    names.write_text("b\na\n", encoding="utf-8")
    dataset = ImageFolder(root, classes=str(names))
    assert dataset.class_names == ["b", "a"] and [label for _, label in dataset.samples] == [0, 1, 1]
    assert dataset.num_labels == 2 and dataset.labels_source == "its classes: b, a"
    assert ImageFolder(root).labels_source == f"the class folders of {root}"
    with pytest.raises(FileNotFoundError, match="class-names file not found"):
        ImageFolder(root, classes=str(tmp_path / "none.txt"))
