"""Image transforms: sizes and values, one draw per sample for every frame, reproducible draws."""
import sys

import numpy
import pytest

from framework.io import DataLoader, ListDataset
from framework.registry import RegistryError
from vision.data import (CenterCrop, Compose, Normalize, RandomHorizontalFlip, RandomResizedCrop, Resize, ToCHW,
                         eval_transforms, require_cv2, train_transforms)


def _image(height, width, seed=0):
    return numpy.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=numpy.uint8)


@pytest.mark.parametrize("shape, expected", [((40, 80), (20, 40)), ((80, 40), (40, 20)), ((30, 47), (20, 31))])
def test_resize_short_side(shape, expected):
    assert Resize(short_side=20)({"img": _image(*shape)})["img"].shape == expected + (3,)


def test_resize_to_a_size_and_its_argument_checks():
    assert Resize(size=[10, 12])({"img": _image(30, 30)})["img"].shape == (10, 12, 3)
    image = _image(8, 8)
    assert Resize(size=8)({"img": image})["img"] is image  # already that size: untouched
    with pytest.raises(ValueError, match="exactly one"):
        Resize(short_side=8, size=8)
    with pytest.raises(ValueError, match="interpolation"):
        Resize(short_side=8, interpolation="magic")


def test_center_crop_takes_the_middle():
    image = _image(10, 13)
    numpy.testing.assert_array_equal(CenterCrop([4, 5])({"img": image})["img"], image[3:7, 4:9])
    with pytest.raises(ValueError, match="smaller than the crop 12x12"):
        CenterCrop(12)({"img": image})


def test_random_resized_crop_falls_back_to_a_central_crop():
    crop = RandomResizedCrop(size=8, scale=(0.9, 1.0))
    # a 10x200 strip: no 3/4..4/3 crop of 90 % of the area fits, so the clamped central crop is used
    assert crop.params(10, 200, numpy.random.default_rng(0)) == (0, (200 - 13) // 2, 10, 13)
    top, left, h, w = crop.params(100, 100, numpy.random.default_rng(0))
    assert 0.9 * 10000 * 0.95 <= h * w <= 10000 and 0 <= top <= 100 - h and 0 <= left <= 100 - w
    assert crop({"img": _image(50, 60)}, rng=numpy.random.default_rng(1))["img"].shape == (8, 8, 3)


@pytest.mark.parametrize("transform", [RandomResizedCrop(size=[6, 9], scale=(0.2, 1.0)), RandomHorizontalFlip(),
                                       Compose(train_transforms(size=12))])
def test_frames_of_a_clip_share_one_draw(transform):
    frames = numpy.stack([_image(30, 40, seed=t) for t in range(4)])  # (T, H, W, C)
    clip = transform({"imgs": frames, "label": 3}, rng=numpy.random.default_rng(5))
    assert clip["label"] == 3
    for t in range(4):
        single = transform({"img": frames[t]}, rng=numpy.random.default_rng(5))["img"]
        numpy.testing.assert_array_equal(clip["imgs"][t], single)


def test_flip_and_normalise_values():
    image = _image(3, 4)
    numpy.testing.assert_array_equal(RandomHorizontalFlip(p=1.0)({"img": image})["img"], image[:, ::-1])
    assert RandomHorizontalFlip(p=0.0)({"img": image})["img"] is image
    out = Normalize(mean=[10, 20, 30], std=[2, 4, 5])({"img": image})["img"]
    assert out.dtype == numpy.float32
    numpy.testing.assert_allclose(out, (image - numpy.array([10, 20, 30])) / numpy.array([2, 4, 5]), rtol=1e-6)
    with pytest.raises(ValueError, match="3 channel statistics for images with 1 channels"):
        Normalize()({"img": image[..., :1]})


def test_to_chw_and_the_eval_pipeline():
    assert ToCHW()({"img": _image(5, 7)})["img"].shape == (3, 5, 7)
    assert ToCHW()({"imgs": numpy.stack([_image(5, 7)] * 2)})["imgs"].shape == (2, 3, 5, 7)
    out = Compose(eval_transforms(size=16, resize=20))({"img": _image(40, 60)})["img"]
    assert out.shape == (3, 16, 16) and out.dtype == numpy.float32 and out.flags["C_CONTIGUOUS"]


def test_draws_do_not_depend_on_the_workers():
    samples = [{"img": _image(24, 24, seed=i), "label": numpy.int64(i)} for i in range(12)]
    dataset = ListDataset(samples, transform=Compose(train_transforms(size=8)))

    def batches(workers):
        loader = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=workers, seed=3)
        return [b["img"] for b in loader]

    for a, b in zip(batches(0), batches(2)):
        numpy.testing.assert_array_equal(a, b)


def test_bad_samples_and_configs_are_clear_errors():
    with pytest.raises(KeyError, match="neither 'img' nor 'imgs'"):
        CenterCrop(2)({"image": _image(4, 4)})
    with pytest.raises(ValueError, match=r"'imgs'\] must be an array \(T, H, W, C\)"):
        CenterCrop(2)({"imgs": _image(4, 4)})
    with pytest.raises(RegistryError, match="CentreCrop"):
        Compose([{"type": "CentreCrop", "size": 2}])


def test_missing_opencv_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match="opencv-python-headless"):
        require_cv2()
