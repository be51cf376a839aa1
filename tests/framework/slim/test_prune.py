"""Filter pruning: channel groups of a traced network, masks, real surgery (a pruned model computes what the
masked model computes), FLOPs of a plan, plans for a FLOPs target, and the errors that name a setting."""
import numpy
import pytest

from framework import jit, no_grad, to_tensor
from framework.slim import SlimError, channel_groups, costs, count
from framework.slim.plan import aligned, allowed_ratio, pruned_macs, sensitivity_plan, uniform_plan
from framework.slim.prune import apply, channel_importance, kept_channels, mask, named_tensors, resize_to

from .nets import ShiftNet, SmallResNet, randomised

X = numpy.random.default_rng(1).normal(size=(2, 3, 10, 10)).astype(numpy.float32)


def _traced(model):
    return jit.trace(model, (X,), passes=jit.EXACT_PASSES)


def _groups(model):
    return channel_groups(_traced(model), named_tensors(model))


def _out(model):
    with no_grad():
        return model(to_tensor(X)).numpy()


def test_groups_follow_the_residual_sum_and_stop_at_the_output():
    groups = {g.name: g for g in _groups(randomised(SmallResNet()))}
    assert set(groups) == {"stem", "block1.conv1", "block2.conv1", "fc"}
    residual = groups["stem"]          # the stem and both blocks' conv2 add into one stream
    assert sorted(residual.producer_layers) == ["block1.conv2", "block2.conv2", "stem"]
    assert ("fc.weight", 0) in residual.consumers and ("block1.conv1.weight", 1) in residual.consumers
    assert {"bn.running_mean", "block1.bn2.running_var"} <= {n for n, _ in residual.buffers}
    inner = groups["block1.conv1"]
    assert inner.prunable and inner.consumers == [("block1.conv2.weight", 1)]
    assert not groups["fc"].prunable and "model output" in groups["fc"].blocked


@pytest.mark.parametrize("plan", [{"stem": 0.5}, {"block1.conv1": 0.34, "block2.conv1": 0.75},
                                  {"stem": 0.25, "block1.conv1": 0.5, "block2.conv1": 0.5}])
def test_the_cut_model_gives_the_masked_models_outputs(plan):
    model = randomised(SmallResNet())
    groups = _groups(model)
    kept = kept_channels(model, groups, plan)
    mask(model, groups, kept)
    masked = _out(model)
    apply(model, groups, kept)
    numpy.testing.assert_allclose(_out(model), masked, rtol=1e-5, atol=1e-6)
    assert model.stem.out_channels == model.bn.num_features == len(kept.get("stem", range(8)))
    assert model.fc.in_features == model.stem.out_channels
    assert model.block1.conv2.weight.shape[1] == len(kept.get("block1.conv1", range(12)))


def test_the_lowest_l1_filters_go():
    model = randomised(SmallResNet())
    groups = {g.name: g for g in _groups(model)}
    w = model.block1.conv1.weight.data
    w[[2, 7, 9]] *= 1e-3                                   # the three weakest filters
    importance = channel_importance(named_tensors(model), groups["block1.conv1"])
    numpy.testing.assert_allclose(importance, numpy.abs(w).reshape(12, -1).sum(axis=1), rtol=1e-6)
    kept = kept_channels(model, list(groups.values()), {"block1.conv1": 0.25})["block1.conv1"]
    assert set(range(12)) - set(kept.tolist()) == {2, 7, 9}


def test_predicted_multiply_adds_are_the_cut_models():
    model = randomised(SmallResNet())
    program = _traced(model)
    groups = channel_groups(program, named_tensors(model))
    plan = {"stem": 0.5, "block2.conv1": 0.5}
    predicted = pruned_macs(costs(program), groups, plan)
    apply(model, groups, kept_channels(model, groups, plan))
    assert count(model, (X,))["macs"] == predicted < sum(c.macs for c in costs(program))


def test_a_pruned_state_loads_into_a_fresh_model():
    model = randomised(SmallResNet())
    groups = _groups(model)
    apply(model, groups, kept_channels(model, groups, {"stem": 0.5, "block1.conv1": 0.5}))
    fresh = resize_to(SmallResNet(), {k: v.data for k, v in named_tensors(model).items()})
    fresh.set_state_dict(model.state_dict())
    fresh.eval()
    numpy.testing.assert_array_equal(_out(fresh), _out(model))


def test_plans_meet_the_target():
    model = randomised(SmallResNet())
    program = _traced(model)
    groups, node_costs = channel_groups(program, named_tensors(model)), costs(program)
    total = sum(c.macs for c in node_costs)
    plan = uniform_plan(node_costs, groups, 0.5)
    assert len(set(plan.values())) == 1 and pruned_macs(node_costs, groups, plan) <= 0.5 * total
    slightly_less = {k: v - 0.05 for k, v in plan.items()}
    assert pruned_macs(node_costs, groups, slightly_less) > 0.5 * total
    # the insensitive inner layers take more of the cut than the sensitive residual stream
    drops = {"stem": {0.25: 0.2, 0.5: 0.5, 0.75: 0.9}, "block1.conv1": {0.25: 0.0, 0.5: 0.01, 0.75: 0.05},
             "block2.conv1": {0.25: 0.0, 0.5: 0.02, 0.75: 0.04}}
    chosen = sensitivity_plan(node_costs, groups, drops, 0.3)
    assert pruned_macs(node_costs, groups, chosen) <= 0.7 * total
    assert chosen.get("stem", 0) < min(chosen["block1.conv1"], chosen["block2.conv1"])


def test_aligned_plans_keep_multiples_of_the_block():
    """With ``multiple`` 4, the 12-channel inner groups keep 4 or 8 channels (the 8-channel stem 4 or 8), the
    target is still met, and the cut model has those widths."""
    model = randomised(SmallResNet())
    program = _traced(model)
    groups, node_costs = channel_groups(program, named_tensors(model)), costs(program)
    sizes = {g.name: g.size for g in groups}
    assert aligned(groups, {"block1.conv1": 0.45, "stem": 0.2}, 4) == {"block1.conv1": round(1 - 8 / 12, 6)}
    assert aligned(groups, {"block1.conv1": 0.99}, 4) == {"block1.conv1": round(1 - 4 / 12, 6)}
    plan = uniform_plan(node_costs, groups, 0.4, multiple=4)
    assert pruned_macs(node_costs, groups, plan) <= 0.6 * sum(c.macs for c in node_costs)
    for name, ratio in plan.items():
        assert round(sizes[name] * (1 - ratio)) % 4 == 0
    drops = {"block1.conv1": {0.25: 0.0, 0.5: 0.01, 0.75: 0.05}, "block2.conv1": {0.25: 0.0, 0.5: 0.02, 0.75: 0.04}}
    chosen = sensitivity_plan(node_costs, groups, drops, 0.2, multiple=4)
    assert all(round(sizes[name] * (1 - ratio)) % 4 == 0 for name, ratio in chosen.items())
    apply(model, groups, kept_channels(model, groups, chosen))
    assert model.block1.conv1.weight.shape[0] % 4 == 0 and model.block2.conv1.weight.shape[0] % 4 == 0


def test_allowed_ratio_interpolates_the_measured_drops():
    drops = {0.25: 0.0, 0.5: 0.02, 0.75: 0.1}
    assert allowed_ratio(drops, 0.0) == 0.25
    assert allowed_ratio(drops, 0.01) == pytest.approx(0.375)
    assert allowed_ratio(drops, 0.06) == pytest.approx(0.625)
    assert allowed_ratio(drops, 1.0) == 0.75
    assert allowed_ratio({0.5: 0.05, 0.75: 0.01}, 0.05) == 0.75   # a drop never counts as shrinking


def test_bad_settings_name_themselves():
    model = randomised(SmallResNet())
    program = _traced(model)
    groups = channel_groups(program, named_tensors(model))
    with pytest.raises(SlimError, match=r"prune.ratios: ratio 1 for 'stem' removes all 8 of its filters"):
        kept_channels(model, groups, {"stem": 1.0})
    with pytest.raises(SlimError, match=r"prune.ratios: 'nope' is not a layer.*prunable layers: stem"):
        kept_channels(model, groups, {"nope": 0.5})
    with pytest.raises(SlimError, match=r"prune.ratios: 'fc' cannot be pruned: a model output"):
        kept_channels(model, groups, {"fc": 0.5})
    with pytest.raises(SlimError, match=r"prune.flops_target: removing 99% .* cannot be met"):
        uniform_plan(costs(program), groups, 0.99)


CLIPS = numpy.random.default_rng(2).normal(size=(2, 2, 3, 8, 8)).astype(numpy.float32)


@pytest.mark.parametrize("ratio", [0.25, 0.5, 0.75])
def test_channels_a_temporal_shift_reads_are_cut_fold_by_fold(ratio):
    """The shift's input group is prunable; each fold keeps its strongest channels, as many as the shift's folds
    of the new width hold, so the cut model (whose shift moves the first folds of fewer channels) gives the
    masked model's outputs."""
    model = randomised(ShiftNet(width=16))
    groups = {g.name: g for g in channel_groups(jit.trace(model, (CLIPS,), passes=jit.EXACT_PASSES),
                                                named_tensors(model))}
    shifted = groups["conv1"]
    assert shifted.prunable and shifted.shift_ratio == 0.25
    model.conv1.weight.data[[1, 5, 13]] *= 1e-3                 # the weakest of folds [0, 4), [4, 8) and [8, 16)
    kept = kept_channels(model, list(groups.values()), {"conv1": ratio})
    keep = len(kept["conv1"])
    c1, c2 = int(keep * 0.25), int(keep * 0.5)
    assert [int(((kept["conv1"] >= a) & (kept["conv1"] < b)).sum()) for a, b in ((0, 4), (4, 8), (8, 16))] == \
        [c1, c2 - c1, keep - c2]
    assert {1, 5, 13}.isdisjoint(kept["conv1"].tolist())
    with no_grad():
        mask(model, list(groups.values()), kept)
        masked = model(to_tensor(CLIPS)).numpy()
        apply(model, list(groups.values()), kept)
        numpy.testing.assert_allclose(model(to_tensor(CLIPS)).numpy(), masked, rtol=1e-5, atol=1e-6)
    assert model.conv1.out_channels == model.conv2.weight.shape[1] == keep
