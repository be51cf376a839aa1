"""vision.data.photometric: colour jitter, grey and blur, checked against direct formulas and torchvision."""
import numpy
import pytest

from framework.registry import TRANSFORMS
from vision.data import ColorJitter, GaussianBlur, RandomGrayscale

pytest.importorskip("cv2")


def clip_of(seed=0, frames=3):
    return numpy.random.default_rng(seed).integers(0, 256, size=(frames, 9, 11, 3), dtype=numpy.uint8)


def test_color_jitter_steps_match_their_definitions():
    images = clip_of()
    x = images.astype(numpy.float64)
    grey = x @ [0.299, 0.587, 0.114]
    expected = {(1.3, 1, 1, 0): 1.3 * x, (1, 0.6, 1, 0): 0.6 * x + 0.4 * grey.mean(),
                (1, 1, 0.2, 0): 0.2 * x + 0.8 * grey[..., None], (0.8, 1.5, 1, 0): 1.5 * 0.8 * x - 0.5 * 0.8 * grey.mean()}
    for params, want in expected.items():
        numpy.testing.assert_allclose(ColorJitter().apply(images, params), numpy.clip(want, 0, 255), atol=1.01)


def test_hue_turns_keep_the_luma_and_a_red_turns_green():
    images = numpy.random.default_rng(1).integers(90, 166, size=(2, 8, 8, 3), dtype=numpy.uint8)   # no clipping
    turned = ColorJitter().apply(images, (1.0, 1.0, 1.0, 0.2)).astype(float)
    luma = numpy.array([0.299, 0.587, 0.114])
    numpy.testing.assert_allclose(turned @ luma, images @ luma, atol=1.0)   # rounding only
    red = numpy.array([[[200, 40, 40]]], dtype=numpy.uint8)
    r, g, b = ColorJitter().apply(red, (1.0, 1.0, 1.0, 1 / 3))[0, 0].astype(int)
    assert g > r and g > b


def test_every_frame_of_a_clip_gets_the_same_draw():
    clip = numpy.repeat(clip_of(2, 1), 4, axis=0)
    for transform in (ColorJitter(0.4, 0.4, 0.4, 0.1), RandomGrayscale(p=1.0), GaussianBlur(p=1.0)):
        out = transform({"imgs": clip}, rng=numpy.random.default_rng(5))["imgs"]
        assert out.dtype == numpy.uint8 and out.shape == clip.shape
        assert all((frame == out[0]).all() for frame in out), transform
        assert not (out == clip).all(), transform


def test_grayscale_and_blur():
    images = clip_of(3)
    grey = RandomGrayscale(p=1.0).apply(images, True)
    assert (grey[..., 0] == grey[..., 1]).all() and (grey[..., 1] == grey[..., 2]).all()
    numpy.testing.assert_allclose(grey[..., 0], images @ numpy.array([0.299, 0.587, 0.114]), atol=0.51)
    assert RandomGrayscale(p=0.3).apply(images, False) is images
    blurred = GaussianBlur(sigma=(2.0, 2.0)).apply(images, 2.0)
    assert blurred.astype(float).std() < 0.6 * images.astype(float).std()


def test_probability_zero_changes_nothing_and_configs_build():
    clip = clip_of(4)
    for spec in ({"type": "ColorJitter", "brightness": 0.5, "p": 0.0}, {"type": "RandomGrayscale", "p": 0.0},
                 {"type": "GaussianBlur", "p": 0.0}):
        out = TRANSFORMS.build(spec, where="test")({"imgs": clip}, rng=numpy.random.default_rng(0))["imgs"]
        assert (out == clip).all()


def test_bad_arguments_are_named():
    for build, message in ((lambda: ColorJitter(hue=0.7), "hue"), (lambda: ColorJitter(p=2), "p must"),
                           (lambda: GaussianBlur(sigma=(2, 1)), "sigma"), (lambda: RandomGrayscale(p=-1), "p must")):
        with pytest.raises(ValueError, match=message):
            build()
