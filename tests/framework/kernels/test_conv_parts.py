"""framework.kernels.conv: an inference convolution whose columns would pass COLUMNS_MAX_BYTES takes its batch a
part at a time, with the whole batch's results and memory bounded by the part, not the batch."""
import threading
import tracemalloc

import numpy
import pytest

import framework
import framework.nn.functional as F
from framework.kernels import conv
from framework.testing import gradcheck

CASES = [  # (x shape, w shape, conv keyword arguments)
    ((7, 4, 9, 11), (6, 4, 3, 3), {"stride": 1, "padding": 1}),
    ((5, 6, 10, 10), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2}),
    ((3, 2, 4, 6, 6), (5, 2, 3, 3, 3), {"stride": 1, "padding": 1}),
]


def _conv(x, w, b, kwargs):
    return (F.conv3d if x.ndim == 5 else F.conv2d)(x, w, b, **kwargs)


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CASES)
def test_parts_give_the_whole_batchs_output(monkeypatch, x_shape, w_shape, kwargs):
    rng = numpy.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(numpy.float32) for s in (x_shape, w_shape, w_shape[:1]))
    with framework.no_grad():
        whole = _conv(framework.Tensor(x), framework.Tensor(w), framework.Tensor(b), kwargs).numpy()
        monkeypatch.setattr(conv, "COLUMNS_MAX_BYTES", 1)                # one image per part
        parts = _conv(framework.Tensor(x), framework.Tensor(w), framework.Tensor(b), kwargs).numpy()
    numpy.testing.assert_allclose(parts, whole, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CASES[:2])
def test_input_gradient_through_a_frozen_weight_split_in_parts(monkeypatch, x_shape, w_shape, kwargs):
    """A frozen weight keeps no columns, so its forward runs in parts; the input gradient is still exact."""
    monkeypatch.setattr(conv, "COLUMNS_MAX_BYTES", 1)
    rng = numpy.random.default_rng(1)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    gradcheck(lambda xt: _conv(xt, framework.Tensor(w), None, kwargs), [x])


def test_memory_is_bounded_by_the_part_not_the_batch(monkeypatch):
    """64 images of 8 x 32 x 32 under a 3 x 3 kernel: 18.9 MB of columns at once, 4.2 MB of output."""
    monkeypatch.setattr(conv, "COLUMNS_MAX_BYTES", 1 << 20)
    rng = numpy.random.default_rng(2)
    x = framework.Tensor(rng.standard_normal((64, 8, 32, 32)).astype(numpy.float32))
    w = framework.Tensor(rng.standard_normal((16, 8, 3, 3)).astype(numpy.float32))
    whole_columns = 8 * 9 * 64 * 32 * 32 * 4
    result = {}

    def convolve():                         # in a new thread: its scratch buffers start empty
        with framework.no_grad():
            tracemalloc.start()
            result["y"] = F.conv2d(x, w, padding=1)
            result["peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    thread = threading.Thread(target=convolve)
    thread.start()
    thread.join()
    y, peak = result["y"], result["peak"]
    assert y.shape == (64, 16, 32, 32)
    assert peak < 4.2e6 + 3 * (1 << 20) < whole_columns / 2, peak


@pytest.mark.parametrize("x_shape, w_shape, kwargs", [
    ((3, 4, 9, 11), (6, 4, 3, 3), {"padding": 1}),
    ((2, 4, 8, 7), (6, 2, 4, 3), {"padding": (2, 1), "dilation": (1, 2), "groups": 2}),
    ((2, 4, 6, 5), (4, 4, 1, 1), {}),
    ((2, 2, 4, 6, 6), (5, 2, 3, 3, 3), {"padding": 1}),
])
def test_a_stride_1_input_gradient_as_one_correlation_equals_the_per_offset_one(monkeypatch, x_shape, w_shape,
                                                                                  kwargs):
    """The correlation of gy with the flipped kernel gives col2im's input gradient (float64, to rounding)."""
    rng = numpy.random.default_rng(2)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)

    def input_grad():
        tx = framework.Tensor(x, requires_grad=True)
        y = _conv(tx, framework.Tensor(w, requires_grad=True), None, kwargs)
        (y * framework.Tensor(numpy.random.default_rng(3).standard_normal(y.shape))).sum().backward()
        return tx.grad.numpy()

    taken = []
    correlation = conv._input_grad_as_correlation
    monkeypatch.setattr(conv, "_input_grad_as_correlation", lambda *a: taken.append(1) or correlation(*a))
    one = input_grad()
    assert taken
    monkeypatch.setattr(conv, "_correlation_suits", lambda *args: False)
    numpy.testing.assert_allclose(one, input_grad(), rtol=1e-10, atol=1e-12)


def test_a_frozen_weight_makes_no_gy_columns_past_the_bound(monkeypatch):
    """Through a frozen weight the forward kept no columns, so the input gradient makes none of gy's past
    COLUMNS_MAX_BYTES either: it takes the per-offset path."""
    monkeypatch.setattr(conv, "COLUMNS_MAX_BYTES", 1)
    monkeypatch.setattr(conv, "_input_grad_as_correlation", lambda *a: pytest.fail("gy's columns were made"))
    rng = numpy.random.default_rng(4)
    x = framework.Tensor(rng.standard_normal((3, 4, 9, 11)), requires_grad=True)
    F.conv2d(x, framework.Tensor(rng.standard_normal((6, 4, 3, 3))), padding=1).sum().backward()
    assert x.grad is not None
