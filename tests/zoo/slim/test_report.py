"""The FLOPs counter on known models: ResNet-50 at 224 x 224 is 4.1 G multiply-adds and 25.6 M parameters
(the figures of the paper and torchvision), ResNet-18 1.8 G and 11.7 M, and the zoo's TSM as its frames."""
import numpy
import pytest

from framework.registry import MODELS
from framework.slim import count
from zoo.api import register_everything

register_everything()


@pytest.mark.parametrize("name, macs, params", [("resnet50", 4.09e9, 25_557_032), ("resnet18", 1.814e9, 11_689_512)])
def test_resnets_at_224(name, macs, params):
    counted = count(MODELS.build({"type": name, "num_classes": 1000}),
                    (numpy.zeros((1, 3, 224, 224), numpy.float32),))
    assert counted["params"] == params
    assert counted["macs"] == pytest.approx(macs, rel=0.01)
    convs = [row for row in counted["layers"] if row["op"] == "ConvNd"]
    assert len(convs) == (53 if name == "resnet50" else 20)
    assert counted["layers"][-1]["op"] == "Linear" and counted["layers"][-1]["macs"] == \
        (2048 if name == "resnet50" else 512) * 1000


def test_tsm_is_its_frames_times_the_backbone_plus_the_head():
    tsm = MODELS.build({"type": "TSM", "num_classes": 12, "depth": 18, "base_channels": 16, "num_segments": 6})
    clip = count(tsm, (numpy.zeros((1, 6, 3, 112, 112), numpy.float32),))
    backbone = count(MODELS.build({"type": "resnet18", "num_classes": 12, "base_channels": 16}),
                     (numpy.zeros((1, 3, 112, 112), numpy.float32),))
    head = 128 * 12
    assert clip["macs"] == 6 * (backbone["macs"] - head) + head
