"""Learning-rate schedules: values over the first steps vs closed forms written
here, warm-up around other schedules, jumps with step(epoch), state-dict resume."""
import math

import pytest

from framework.optimizer import lr


def _values(scheduler, n):
    """The rate at positions 0 .. n-1, stepping once after each read."""
    out = []
    for _ in range(n):
        out.append(scheduler())
        scheduler.step()
    return out


def _close(actual, expected):
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert math.isclose(a, e, rel_tol=1e-12, abs_tol=1e-15), f"position {i}: {a} != {e}"


def test_piecewise_decay():
    expected = [1.0] * 3 + [0.5] * 4 + [0.1] * 3
    _close(_values(lr.PiecewiseDecay(boundaries=[3, 7], values=[1.0, 0.5, 0.1]), 10), expected)


def test_cosine_annealing_decay_goes_down_and_back_up():
    base, eta_min, t_max = 0.1, 0.01, 5
    expected = [eta_min + (base - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2 for e in range(12)]
    values = _values(lr.CosineAnnealingDecay(base, T_max=t_max, eta_min=eta_min), 12)
    _close(values, expected)
    assert values[0] == base and math.isclose(values[5], eta_min) and math.isclose(values[10], base)


def test_exponential_step_and_multistep_decay():
    _close(_values(lr.ExponentialDecay(0.5, gamma=0.9), 6), [0.5 * 0.9 ** e for e in range(6)])
    _close(_values(lr.StepDecay(0.5, step_size=3, gamma=0.5), 8),
           [0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125])
    _close(_values(lr.MultiStepDecay(1.0, milestones=[2, 5], gamma=0.1), 7),
           [1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01])


def test_polynomial_decay_with_and_without_cycle():
    base, end, steps, power = 1.0, 0.1, 4, 2.0
    plain = [(base - end) * (1 - min(e, steps) / steps) ** power + end for e in range(7)]
    _close(_values(lr.PolynomialDecay(base, steps, end_lr=end, power=power), 7), plain)
    cycles = [1, 1, 1, 1, 1, 2, 2, 2, 2, 3]  # ceil(e / steps), at least 1
    cyclic = [(base - end) * (1 - e / (steps * c)) ** power + end for e, c in enumerate(cycles)]
    _close(_values(lr.PolynomialDecay(base, steps, end_lr=end, power=power, cycle=True), 10), cyclic)


def test_noam_decay():
    d_model, warmup = 16, 3
    expected = [0.0] + [2.0 * d_model ** -0.5 * min(e ** -0.5, e * warmup ** -1.5) for e in range(1, 8)]
    _close(_values(lr.NoamDecay(d_model, warmup, learning_rate=2.0), 8), expected)


def test_linear_warmup_to_a_constant():
    expected = [0.0, 0.025, 0.05, 0.075, 0.1, 0.1, 0.1]
    _close(_values(lr.LinearWarmup(0.1, warmup_steps=4, start_lr=0.0, end_lr=0.1), 7), expected)


def test_linear_warmup_around_piecewise_decay():
    inner = lr.PiecewiseDecay(boundaries=[2, 4], values=[0.1, 0.01, 0.001])
    warm = lr.LinearWarmup(inner, warmup_steps=3, start_lr=0.01, end_lr=0.1)
    ramp = [0.01 + (0.1 - 0.01) * e / 3 for e in range(3)]
    # after warm-up the inner schedule starts at its own position 0
    _close(_values(warm, 9), ramp + [0.1, 0.1, 0.01, 0.01, 0.001, 0.001])
    assert inner.last_epoch == 6


def test_linear_warmup_around_cosine_annealing():
    base, t_max, warmup = 0.2, 6, 2
    warm = lr.LinearWarmup(lr.CosineAnnealingDecay(base, T_max=t_max), warmup_steps=warmup,
                           start_lr=0.0, end_lr=base)
    expected = [0.0, 0.1] + [base * (1 + math.cos(math.pi * e / t_max)) / 2 for e in range(7)]
    _close(_values(warm, 9), expected)


def test_step_with_epoch_jumps_to_the_closed_form():
    schedule = lr.CosineAnnealingDecay(1.0, T_max=10)
    schedule.step(7)
    assert schedule.last_epoch == 7
    assert math.isclose(schedule(), (1 + math.cos(math.pi * 0.7)) / 2)
    assert schedule.get_lr() == schedule()


@pytest.mark.parametrize("make", [
    lambda: lr.ExponentialDecay(0.5, gamma=0.8),
    lambda: lr.LinearWarmup(lr.CosineAnnealingDecay(0.2, T_max=7), warmup_steps=3, start_lr=0.0, end_lr=0.2),
    lambda: lr.LinearWarmup(lr.PiecewiseDecay([2], [0.1, 0.01]), warmup_steps=2, start_lr=0.0, end_lr=0.1),
], ids=["exponential", "warmup_cosine", "warmup_piecewise"])
def test_state_dict_resume_continues_exactly(make):
    reference = make()
    full = _values(reference, 10)
    first = make()
    head = _values(first, 4)
    state = first.state_dict()
    resumed = make()
    resumed.set_state_dict(state)
    assert head + _values(resumed, 6) == full


def test_state_dict_is_plain_and_missing_keys_are_named():
    warm = lr.LinearWarmup(lr.ExponentialDecay(0.1, 0.5), warmup_steps=2, start_lr=0.0, end_lr=0.1)
    assert warm.state_dict() == {"last_epoch": 0, "last_lr": 0.0,
                                 "learning_rate": {"last_epoch": 0, "last_lr": 0.1}}
    with pytest.raises(ValueError, match="last_lr"):
        lr.ExponentialDecay(0.1, 0.5).set_state_dict({"last_epoch": 3})
    with pytest.raises(ValueError, match="learning_rate"):
        warm.set_state_dict({"last_epoch": 3, "last_lr": 0.1})


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="len\\(values\\) == len\\(boundaries\\) \\+ 1"):
        lr.PiecewiseDecay([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="boundaries"):
        lr.PiecewiseDecay([3, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="T_max"):
        lr.CosineAnnealingDecay(0.1, T_max=0)
    with pytest.raises(TypeError, match="learning_rate"):
        lr.ExponentialDecay("0.1", gamma=0.9)
    with pytest.raises(ValueError, match="milestones"):
        lr.MultiStepDecay(0.1, milestones=[5, 5])
