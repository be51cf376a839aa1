"""The temporal shift kernel and TSM's residual shift (values; the float64 gradient check is in the op specs)."""
import numpy
import pytest

import framework
import framework.nn.functional as F
from framework import OpError
from framework.kernels.temporal_shift import temporal_shift_backward, temporal_shift_forward
from video.models.tsm import ResNetTSM, ShiftedBasicBlock
from vision.models.resnet import BasicBlock


def test_folds_move_one_frame_each_way_with_zero_padding():
    x = numpy.arange(2 * 3 * 8, dtype=numpy.float32).reshape(6, 8, 1, 1) + 1  # 2 clips x 3 frames, 8 channels
    out = temporal_shift_forward(x, 3, 0.125).reshape(2, 3, 8)
    clips = x.reshape(2, 3, 8)
    numpy.testing.assert_array_equal(out[:, 1:, 0], clips[:, :-1, 0])  # channel 0 from the previous frame
    numpy.testing.assert_array_equal(out[:, 0, 0], 0)
    numpy.testing.assert_array_equal(out[:, :-1, 1], clips[:, 1:, 1])  # channel 1 from the next frame
    numpy.testing.assert_array_equal(out[:, -1, 1], 0)
    numpy.testing.assert_array_equal(out[:, :, 2:], clips[:, :, 2:])
    assert not numpy.any(out.reshape(6, 8)[3, :1] == clips[0, 2, 0])  # no leak across clips


def test_backward_is_the_adjoint_of_forward():
    rng = numpy.random.default_rng(0)
    x, g = rng.standard_normal((8, 16, 3, 3)), rng.standard_normal((8, 16, 3, 3))
    lhs = (temporal_shift_forward(x, 4, 0.125) * g).sum()
    rhs = (x * temporal_shift_backward(g, 4, 0.125)).sum()
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_bad_shapes_are_named():
    with pytest.raises(OpError, match="seg_num=4"):
        F.temporal_shift(framework.to_tensor(numpy.zeros((6, 8, 2, 2), "float32")), 4)
    with pytest.raises(OpError, match="shift_ratio"):
        F.temporal_shift(framework.to_tensor(numpy.zeros((4, 8, 2, 2), "float32")), 4, 0.75)


def test_resnet_tsm_shifts_at_the_start_of_every_residual_branch():
    framework.seed(0)
    net = ResNetTSM(num_segments=4, block="basic", layers=[1, 1], num_classes=0, base_channels=8).eval()
    blocks = [b for name in net.stage_names for b in getattr(net, name)]
    assert all(isinstance(b, ShiftedBasicBlock) and b.num_segments == 4 for b in blocks)
    x = framework.to_tensor(numpy.random.default_rng(1).standard_normal((4, 8, 6, 6)).astype("float32"))
    block = blocks[0]
    with framework.no_grad():
        expected = F.relu(BasicBlock.forward_residual(block, F.temporal_shift(x, 4, 0.125)) + x)
        numpy.testing.assert_allclose(block(x).numpy(), expected.numpy(), rtol=1e-6)
