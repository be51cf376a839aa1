"""Optimizers: the first steps vs closed forms written here (float64), weight
decay, parameter groups, clipping inside step, skipped parameters, untouched
gradients, bit-identical resume from a state dict, bad input, and GPU parity."""
import math

import numpy
import pytest

import framework
from framework import backend
from framework.optimizer import (SGD, Adagrad, Adam, AdamW, ClipGradByGlobalNorm, ClipGradByValue, L1Decay,
                                 L2Decay, Momentum, RMSProp, lr)

P0 = numpy.array([0.5, -1.0, 2.0])
GRADS = [numpy.array([0.2, -0.4, 1.0]), numpy.array([-0.3, 0.1, 0.5]), numpy.array([0.6, 0.2, -0.7])]
G1, G2, G3 = GRADS


def _param(values=P0, name=None, device=None):
    p = framework.to_tensor(numpy.array(values, dtype=numpy.float64), device=device, requires_grad=True)
    p.name = name
    return p


def _trajectory(opt, params, grads_per_step, scheduler=None):
    """Set each param's grad, step, and record every param's value after each step."""
    values = []
    for grads in grads_per_step:
        for p, g in zip(params, grads):
            p.grad = None if g is None else framework.to_tensor(g, device=p.device)
        opt.step()
        if scheduler is not None:
            scheduler.step()
        values.append([p.numpy().copy() for p in params])
    return values


def _single(opt_class, **kwargs):
    """The trajectory of P0 under GRADS for ``opt_class(parameters=[p], **kwargs)``."""
    p = _param()
    return [v[0] for v in _trajectory(opt_class(parameters=[p], **kwargs), [p], [[g] for g in GRADS])]


def _assert_steps(actual, expected):
    assert len(actual) == len(expected)
    for t, (a, e) in enumerate(zip(actual, expected), start=1):
        numpy.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-15, err_msg=f"after step {t}")


def _adam_steps(p0, grads, lr_, beta1, beta2, eps, decay=0.0):
    """Adam (Paddle's epsilon placement) in closed form: moments as explicit weighted sums."""
    out, p = [], p0
    for t in range(1, len(grads) + 1):
        m = (1 - beta1) * sum(beta1 ** (t - k) * grads[k - 1] for k in range(1, t + 1))
        v = (1 - beta2) * sum(beta2 ** (t - k) * grads[k - 1] ** 2 for k in range(1, t + 1))
        c = math.sqrt(1 - beta2 ** t)
        p = p - lr_ * decay * p - lr_ * c / (1 - beta1 ** t) * m / (numpy.sqrt(v) + eps * c)
        out.append(p)
    return out


# ---- each optimizer's first three updates ----------------------------------
def test_sgd():
    _assert_steps(_single(SGD, learning_rate=0.1),
                  [P0 - 0.1 * G1, P0 - 0.1 * (G1 + G2), P0 - 0.1 * (G1 + G2 + G3)])


def test_momentum():
    mu, rate = 0.9, 0.1
    v1, v2, v3 = G1, mu * G1 + G2, mu * mu * G1 + mu * G2 + G3
    _assert_steps(_single(Momentum, learning_rate=rate, momentum=mu),
                  [P0 - rate * v1, P0 - rate * (v1 + v2), P0 - rate * (v1 + v2 + v3)])


def test_momentum_nesterov():
    mu, rate = 0.9, 0.1
    v1, v2, v3 = G1, mu * G1 + G2, mu * mu * G1 + mu * G2 + G3
    d1, d2, d3 = G1 + mu * v1, G2 + mu * v2, G3 + mu * v3
    _assert_steps(_single(Momentum, learning_rate=rate, momentum=mu, use_nesterov=True),
                  [P0 - rate * d1, P0 - rate * (d1 + d2), P0 - rate * (d1 + d2 + d3)])


@pytest.mark.parametrize("eps", [1e-8, 0.1])
def test_adam(eps):
    expected = _adam_steps(P0, GRADS, 0.01, 0.9, 0.999, eps)
    _assert_steps(_single(Adam, learning_rate=0.01, epsilon=eps), expected)


def test_rmsprop_plain_and_centered():
    rate, rho, eps, mu = 0.01, 0.9, 1e-6, 0.5
    ms1 = (1 - rho) * G1 ** 2
    ms2 = rho * ms1 + (1 - rho) * G2 ** 2
    ms3 = rho * ms2 + (1 - rho) * G3 ** 2
    mg1 = (1 - rho) * G1
    mg2 = rho * mg1 + (1 - rho) * G2
    mg3 = rho * mg2 + (1 - rho) * G3
    for centered in (False, True):
        s1, s2, s3 = (rate * g / numpy.sqrt(ms - (mg * mg if centered else 0) + eps)
                      for g, ms, mg in ((G1, ms1, mg1), (G2, ms2, mg2), (G3, ms3, mg3)))
        mom1 = s1
        mom2 = mu * mom1 + s2
        mom3 = mu * mom2 + s3
        _assert_steps(_single(RMSProp, learning_rate=rate, rho=rho, epsilon=eps, momentum=mu, centered=centered),
                      [P0 - mom1, P0 - mom1 - mom2, P0 - mom1 - mom2 - mom3])


def test_adagrad():
    rate, eps, init = 0.1, 1e-6, 0.1
    acc1 = init + G1 ** 2
    acc2 = acc1 + G2 ** 2
    acc3 = acc2 + G3 ** 2
    d1, d2, d3 = (rate * g / (numpy.sqrt(a) + eps) for g, a in ((G1, acc1), (G2, acc2), (G3, acc3)))
    _assert_steps(_single(Adagrad, learning_rate=rate, epsilon=eps, initial_accumulator_value=init),
                  [P0 - d1, P0 - d1 - d2, P0 - d1 - d2 - d3])


# ---- weight decay ------------------------------------------------------------
@pytest.mark.parametrize("decay", [0.5, L2Decay(0.5)], ids=["float", "L2Decay"])
def test_l2_decay_is_added_to_the_gradient(decay):
    rate, c = 0.1, 0.5
    p1 = P0 - rate * (G1 + c * P0)
    p2 = p1 - rate * (G2 + c * p1)
    p3 = p2 - rate * (G3 + c * p2)
    _assert_steps(_single(SGD, learning_rate=rate, weight_decay=decay), [p1, p2, p3])


def test_l1_decay_adds_the_sign():
    rate, c = 0.1, 0.5
    p1 = P0 - rate * (G1 + c * numpy.sign(P0))
    _assert_steps(_single(SGD, learning_rate=rate, weight_decay=L1Decay(c))[:1], [p1])


def test_adamw_decays_decoupled_and_honours_apply_decay_param_fun():
    weight, bias = _param(name="fc.weight"), _param(name="fc.bias")
    opt = AdamW(learning_rate=0.01, parameters=[weight, bias], weight_decay=0.2,
                apply_decay_param_fun=lambda name: not name.endswith("bias"))
    values = _trajectory(opt, [weight, bias], [[g, g] for g in GRADS])
    _assert_steps([v[0] for v in values], _adam_steps(P0, GRADS, 0.01, 0.9, 0.999, 1e-8, decay=0.2))
    _assert_steps([v[1] for v in values], _adam_steps(P0, GRADS, 0.01, 0.9, 0.999, 1e-8))


def test_adamw_default_coefficient_is_paddles():
    _assert_steps(_single(AdamW, learning_rate=0.01), _adam_steps(P0, GRADS, 0.01, 0.9, 0.999, 1e-8, decay=0.01))


# ---- parameter groups and learning rates ---------------------------------------
def test_groups_scale_the_base_rate_and_override_settings():
    a, b, c = _param(), _param(), _param()
    opt = SGD(learning_rate=0.2, parameters=[{"params": [a], "learning_rate": 0.1},
                                             {"params": [b], "weight_decay": 0.5},
                                             {"params": c}])
    (after,) = _trajectory(opt, [a, b, c], [[G1, G1, G1]])
    numpy.testing.assert_allclose(after[0], P0 - 0.02 * G1, rtol=1e-15)
    numpy.testing.assert_allclose(after[1], P0 - 0.2 * (G1 + 0.5 * P0), rtol=1e-15)
    numpy.testing.assert_allclose(after[2], P0 - 0.2 * G1, rtol=1e-15)
    assert [g["learning_rate"] for g in opt.param_groups] == [0.1, 1.0, 1.0]


def test_group_overrides_a_hyperparameter():
    a, b = _param(), _param()
    opt = Momentum(learning_rate=0.1, momentum=0.9, parameters=[{"params": [a]}, {"params": [b], "momentum": 0.5}])
    values = _trajectory(opt, [a, b], [[G1, G1], [G2, G2]])
    numpy.testing.assert_allclose(values[1][0], P0 - 0.1 * (G1 + 0.9 * G1 + G2), rtol=1e-15)
    numpy.testing.assert_allclose(values[1][1], P0 - 0.1 * (G1 + 0.5 * G1 + G2), rtol=1e-15)


def test_schedule_is_read_at_every_step():
    p = _param()
    scheduler = lr.ExponentialDecay(0.1, gamma=0.5)
    opt = SGD(learning_rate=scheduler, parameters=[{"params": [p], "learning_rate": 2.0}])
    values = _trajectory(opt, [p], [[g] for g in GRADS], scheduler=scheduler)
    _assert_steps([v[0] for v in values],
                  [P0 - 0.2 * G1, P0 - 0.2 * G1 - 0.1 * G2, P0 - 0.2 * G1 - 0.1 * G2 - 0.05 * G3])
    assert opt.get_lr() == 0.1 * 0.5 ** 3


def test_get_lr_and_set_lr():
    p = _param()
    opt = SGD(learning_rate=0.1, parameters=[p])
    opt.set_lr(0.05)
    assert opt.get_lr() == 0.05
    (after,) = _trajectory(opt, [p], [[G1]])
    numpy.testing.assert_allclose(after[0], P0 - 0.05 * G1, rtol=1e-15)
    with pytest.raises(TypeError, match="CosineAnnealingDecay"):
        SGD(learning_rate=lr.CosineAnnealingDecay(0.1, 10), parameters=[p]).set_lr(0.2)


# ---- clipping, skipping, gradients left alone -------------------------------------
def test_global_norm_clipping_spans_groups_and_comes_before_decay():
    a, b = _param([1.0, 2.0]), _param([3.0])
    opt = SGD(learning_rate=0.1, grad_clip=ClipGradByGlobalNorm(1.0),
              parameters=[{"params": [a], "weight_decay": 0.5}, {"params": [b], "learning_rate": 0.5}])
    (after,) = _trajectory(opt, [a, b], [[numpy.array([3.0, 4.0]), numpy.array([12.0])]])  # global norm 13
    numpy.testing.assert_allclose(after[0], [1.0, 2.0] - 0.1 * (numpy.array([3.0, 4.0]) / 13 + 0.5 * numpy.array([1.0, 2.0])),
                                  rtol=1e-15)
    numpy.testing.assert_allclose(after[1], [3.0 - 0.05 * 12.0 / 13], rtol=1e-15)


def test_value_clipping_in_step():
    (after,) = _single(SGD, learning_rate=0.1, grad_clip=ClipGradByValue(0.3))[:1]
    numpy.testing.assert_allclose(after, P0 - 0.1 * numpy.clip(G1, -0.3, 0.3), rtol=1e-15)


def test_parameters_without_grad_or_not_trainable_are_skipped():
    rate, eps = 0.01, 1e-8
    late, frozen, live = _param(), _param(), _param()
    frozen.requires_grad = False
    opt = Adam(learning_rate=rate, parameters=[late, frozen, live])
    values = _trajectory(opt, [late, frozen, live], [[None, G1, G1], [G2, G2, G2]])
    numpy.testing.assert_array_equal(values[0][0], P0)
    numpy.testing.assert_array_equal(values[1][1], P0)
    # the late parameter's first update is Adam's first step: lr * g / (|g| + eps)
    numpy.testing.assert_allclose(values[1][0], P0 - rate * G2 / (numpy.abs(G2) + eps), rtol=1e-12)
    _assert_steps([v[2] for v in values], _adam_steps(P0, [G1, G2], rate, 0.9, 0.999, eps))


@pytest.mark.parametrize("make", [
    lambda ps: Adam(0.1, parameters=ps, weight_decay=0.1, grad_clip=ClipGradByGlobalNorm(0.5)),
    lambda ps: AdamW(0.1, parameters=ps, grad_clip=ClipGradByValue(0.1), lazy_mode=True),
    lambda ps: Momentum(0.1, parameters=ps, use_nesterov=True, weight_decay=L1Decay(0.1)),
    lambda ps: RMSProp(0.1, parameters=ps, centered=True, momentum=0.5),
    lambda ps: Adagrad(0.1, parameters=ps, weight_decay=0.2),
], ids=["adam", "adamw", "momentum", "rmsprop", "adagrad"])
def test_gradients_are_never_modified(make):
    a, b = _param(), _param()
    shared = framework.to_tensor(G1.copy())
    a.grad = b.grad = shared
    opt = make([a, b])
    opt.step()
    opt.step()
    numpy.testing.assert_array_equal(shared.numpy(), G1)
    assert not numpy.array_equal(a.numpy(), P0)


def test_clear_grad_sets_none():
    a, b = _param(), _param()
    a.grad, b.grad = framework.to_tensor(G1), framework.to_tensor(G2)
    opt = SGD(parameters=[{"params": [a]}, {"params": [b]}])
    opt.clear_grad()
    assert a.grad is None and b.grad is None


def test_lazy_mode_leaves_rows_without_gradient():
    rows = numpy.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    g1 = numpy.array([[0.0, 0.0], [0.5, 0.0], [0.0, 0.0], [0.2, -0.1]])
    g2 = numpy.array([[0.0, 0.0], [0.3, 0.2], [0.0, 0.0], [0.0, 0.0]])
    lazy, dense = _param(rows), _param(rows)
    lazy_values = _trajectory(Adam(0.1, parameters=[lazy], lazy_mode=True), [lazy], [[g1], [g2]])
    dense_values = _trajectory(Adam(0.1, parameters=[dense]), [dense], [[g1], [g2]])
    for k in (0, 2):
        numpy.testing.assert_array_equal(lazy_values[1][0][k], rows[k])
    numpy.testing.assert_array_equal(lazy_values[0][0], dense_values[0][0])
    numpy.testing.assert_array_equal(lazy_values[1][0][1], dense_values[1][0][1])
    numpy.testing.assert_array_equal(lazy_values[1][0][3], lazy_values[0][0][3])  # no grad in step 2
    assert not numpy.array_equal(dense_values[1][0][3], dense_values[0][0][3])


# ---- state dict: exact resume and mismatches ---------------------------------------
RESUMABLE = {
    "sgd": lambda ps, s: SGD(s, parameters=ps, weight_decay=0.01),
    "momentum": lambda ps, s: Momentum(s, parameters=ps, use_nesterov=True,
                                       grad_clip=ClipGradByGlobalNorm(1.0)),
    "adam": lambda ps, s: Adam(s, parameters=ps, weight_decay=L2Decay(0.01)),
    "adam_lazy": lambda ps, s: Adam(s, parameters=ps, lazy_mode=True),
    "adamw": lambda ps, s: AdamW(s, parameters=ps),
    "rmsprop": lambda ps, s: RMSProp(s, parameters=ps, centered=True, momentum=0.9),
    "adagrad": lambda ps, s: Adagrad(s, parameters=ps, initial_accumulator_value=0.1),
}


def _resume_setup(make, values):
    """Three params in two groups (one with its own rate) and a warm-up + cosine schedule."""
    params = [_param(v) for v in values]
    scheduler = lr.LinearWarmup(lr.CosineAnnealingDecay(0.05, T_max=4), warmup_steps=2, start_lr=0.0, end_lr=0.05)
    groups = [{"params": params[:2]}, {"params": params[2:], "learning_rate": 0.5}]
    return params, make(groups, scheduler), scheduler


def _resume_grads(step):
    rng = numpy.random.default_rng(step)
    return [rng.standard_normal(shape) * (rng.random(shape[:1])[:, None] > 0.3 if len(shape) == 2 else 1)
            for shape in ((4, 3), (3,), (2, 2))]


def _is_plain(obj):
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in obj.items())
    return isinstance(obj, (numpy.ndarray, int, float))


@pytest.mark.parametrize("name", sorted(RESUMABLE))
def test_state_dict_resume_is_bit_identical(name):
    rng = numpy.random.default_rng(42)
    start = [rng.standard_normal(s) for s in ((4, 3), (3,), (2, 2))]
    params, opt, scheduler = _resume_setup(RESUMABLE[name], start)
    for step in range(2):
        _trajectory(opt, params, [_resume_grads(step)], scheduler)
    saved_state = opt.state_dict()
    saved_params = [p.numpy().copy() for p in params]
    for step in range(2, 5):
        _trajectory(opt, params, [_resume_grads(step)], scheduler)
    assert _is_plain(saved_state), saved_state

    fresh, resumed, fresh_scheduler = _resume_setup(RESUMABLE[name], saved_params)
    resumed.set_state_dict(saved_state)
    assert fresh_scheduler.last_epoch == 2
    for step in range(2, 5):
        _trajectory(resumed, fresh, [_resume_grads(step)], fresh_scheduler)
    for p, q in zip(params, fresh):
        numpy.testing.assert_array_equal(q.numpy(), p.numpy())


def test_state_dict_layout():
    a, b = _param(), _param()
    opt = Adam(0.1, parameters=[{"params": [a]}, {"params": [b]}])
    _trajectory(opt, [a, b], [[G1, None]])
    state = opt.state_dict()
    assert sorted(state) == ["group_sizes", "learning_rate", "state"]
    numpy.testing.assert_array_equal(state["group_sizes"], [1, 1])
    assert state["learning_rate"] == 0.1
    assert sorted(state["state"]) == ["group0"]
    entry = state["state"]["group0"]["param0"]
    assert sorted(entry) == ["moment1", "moment2", "step"] and entry["step"] == 1
    numpy.testing.assert_allclose(entry["moment1"], 0.1 * G1, rtol=1e-15)


def test_set_state_dict_restores_a_fixed_rate():
    p = _param()
    opt = SGD(0.1, parameters=[p])
    opt.set_lr(0.02)
    other = SGD(0.1, parameters=[_param()])
    other.set_state_dict(opt.state_dict())
    assert other.get_lr() == 0.02


def test_set_state_dict_mismatches_are_named():
    a, b = _param(), _param()
    adam = Adam(0.1, parameters=[a, b])
    _trajectory(adam, [a, b], [[G1, G1]])
    state = adam.state_dict()
    with pytest.raises(ValueError, match=r"1 parameter groups of sizes \[2\].*sizes \[3\]"):
        Adam(0.1, parameters=[_param(), _param(), _param()]).set_state_dict(state)
    with pytest.raises(ValueError, match=r"param1 .*moment1 has shape \(3,\), expected \(2,\)"):
        Adam(0.1, parameters=[_param(), _param([1.0, 2.0])]).set_state_dict(state)
    momentum = Momentum(0.1, parameters=[_param(), _param()])
    with pytest.raises(ValueError, match=r"state keys \['moment1', 'moment2', 'step'\], expected \['velocity'\]"):
        momentum.set_state_dict(state)
    with pytest.raises(ValueError, match="lr_scheduler"):
        Adam(lr.StepDecay(0.1, 2), parameters=[_param(), _param()]).set_state_dict(state)
    bad = {**state, "state": {"group3": state["state"]["group0"]}}
    with pytest.raises(ValueError, match="group3"):
        Adam(0.1, parameters=[_param(), _param()]).set_state_dict(bad)
    untouched = Adam(0.1, parameters=[_param(), _param([1.0, 2.0])])
    with pytest.raises(ValueError):
        untouched.set_state_dict(state)
    assert untouched.state_dict()["state"] == {}


# ---- construction errors ----------------------------------------------------------
def test_bad_construction_is_named():
    p = _param()
    with pytest.raises(ValueError, match="parameters is required"):
        SGD(0.1)
    with pytest.raises(ValueError, match=r"unknown keys \['beta3'\].*beta1"):
        Adam(0.1, parameters=[{"params": [p], "beta3": 0.5}])
    with pytest.raises(ValueError, match="more than once"):
        SGD(0.1, parameters=[{"params": [p]}, {"params": [p]}])
    with pytest.raises(TypeError, match="weight_decay"):
        SGD(0.1, parameters=[p], weight_decay="l2")
    with pytest.raises(TypeError, match="learning_rate"):
        SGD("0.1", parameters=[p])
    with pytest.raises(ValueError, match="beta1"):
        Adam(0.1, beta1=1.0, parameters=[p])
    with pytest.raises(TypeError, match="grad_clip"):
        SGD(0.1, parameters=[p], grad_clip=1.0)
    with pytest.raises(TypeError, match="not a Tensor"):
        SGD(0.1, parameters=[P0])


def test_gradient_shape_mismatch_is_named():
    p = _param(name="w")
    p.grad = framework.to_tensor(numpy.ones(2))
    with pytest.raises(ValueError, match=r"\(2,\).*w of shape \(3,\)"):
        SGD(0.1, parameters=[p]).step()


# ---- end to end ---------------------------------------------------------------------
def test_adam_minimises_a_quadratic():
    x = _param([1.0, -2.0, 3.0])
    target = framework.to_tensor(numpy.array([0.5, 0.25, -1.0]))
    opt = Adam(learning_rate=0.1, parameters=[x])
    losses = []
    for _ in range(300):
        loss = ((x - target) * (x - target)).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 < losses[0]


@pytest.mark.gpu
@pytest.mark.parametrize("make", [
    lambda ps: Adam(0.01, parameters=ps, weight_decay=0.1, grad_clip=ClipGradByGlobalNorm(0.5)),
    lambda ps: AdamW(0.01, parameters=ps, lazy_mode=True),
    lambda ps: Momentum(0.1, parameters=ps, use_nesterov=True, grad_clip=ClipGradByValue(0.3)),
    lambda ps: RMSProp(0.01, parameters=ps, centered=True, momentum=0.5),
    lambda ps: Adagrad(0.1, parameters=ps, weight_decay=L1Decay(0.1)),
], ids=["adam", "adamw", "momentum", "rmsprop", "adagrad"])
def test_gpu_matches_cpu(make):
    if not backend.is_gpu_available():
        pytest.skip("needs CuPy and a GPU")
    starts = [numpy.arange(12.0).reshape(4, 3) / 10, P0]
    grads = [[numpy.where(numpy.arange(4)[:, None] % 2 == t % 2, 0.0, 0.3 * (t + 1)) * numpy.ones((4, 3)), g]
             for t, g in enumerate(GRADS)]
    cpu, gpu = [_param(s) for s in starts], [_param(s, device="gpu") for s in starts]
    cpu_opt, gpu_opt = make(cpu), make(gpu)
    cpu_values = _trajectory(cpu_opt, cpu, grads[:2])
    gpu_values = _trajectory(gpu_opt, gpu, grads[:2])
    for c, g in zip(cpu_values[-1], gpu_values[-1]):
        numpy.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-14)
    assert all(p.device == "gpu" for p in gpu)
    state = gpu_opt.state_dict()
    assert _is_plain(state)
    resumed_params = [_param(p.numpy(), device="gpu") for p in gpu]
    resumed = make(resumed_params)
    resumed.set_state_dict(cpu_opt.state_dict())
    cpu_last = _trajectory(cpu_opt, cpu, grads[2:])[-1]
    gpu_last = _trajectory(resumed, resumed_params, grads[2:])[-1]
    for c, g in zip(cpu_last, gpu_last):
        numpy.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-14)
