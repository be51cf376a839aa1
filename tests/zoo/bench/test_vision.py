"""The vision benchmark (``oar bench vision``) runs (quick mode) and reports its figures; timings are never
asserted."""
from zoo.bench import vision as vision_bench


def test_quick_run_reports_images_per_second_and_a_profile():
    result = vision_bench.run_all(quick=True)
    row = result["resnet18_32"]
    assert row["oar_forward_images_per_s"] > 0 and row["oar_forward_backward_images_per_s"] > 0
    shares = result["profile"]["seconds_by_op"]
    assert "conv.forward" in shares and "conv.backward" in shares and "norm.backward" in shares
