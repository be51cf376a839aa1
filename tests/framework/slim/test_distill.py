"""Distillation: the loss against a NumPy reference, its float64 gradient, the task around a student, and
the errors (label sets that differ, settings out of range, a layer that is not there)."""
import numpy
import pytest

from framework import nn, no_grad, to_tensor
from framework.slim import DistillationTask, SlimError, distillation_loss
from framework.testing import gradcheck

RNG = numpy.random.default_rng(5)


def _reference(student, teacher, label, t, alpha):
    """The loss in NumPy, written out independently of the framework's ops."""
    def log_softmax(z):
        z = z - z.max(axis=1, keepdims=True)
        return z - numpy.log(numpy.exp(z).sum(axis=1, keepdims=True))
    hard = -log_softmax(student)[numpy.arange(len(label)), label].mean()
    p = numpy.exp(log_softmax(teacher / t))
    kl = (p * (log_softmax(teacher / t) - log_softmax(student / t))).sum(axis=1).mean()
    return (1 - alpha) * hard + alpha * t * t * kl


@pytest.mark.parametrize("t, alpha", [(1.0, 0.5), (4.0, 0.7), (2.5, 1.0), (3.0, 0.0)])
def test_the_loss_matches_the_reference(t, alpha):
    s, te = RNG.normal(size=(6, 4)) * 3, RNG.normal(size=(6, 4)) * 3
    label = RNG.integers(0, 4, 6)
    value = distillation_loss(to_tensor(s), to_tensor(te), to_tensor(label), t, alpha).numpy()
    assert float(value) == pytest.approx(_reference(s, te, label, t, alpha), rel=1e-10)


def test_a_student_equal_to_the_teacher_has_only_the_hard_loss_left():
    z = RNG.normal(size=(5, 3))
    label = RNG.integers(0, 3, 5)
    both = distillation_loss(to_tensor(z), to_tensor(z), to_tensor(label), 4.0, 0.6).numpy()
    hard = distillation_loss(to_tensor(z), to_tensor(z), to_tensor(label), 4.0, 0.0).numpy()
    assert float(both) == pytest.approx(0.4 * float(hard), rel=1e-12)


def test_the_gradient_checks_in_float64():
    s, te = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    label = RNG.integers(0, 5, 4)
    gradcheck(lambda a, b: distillation_loss(a, b, to_tensor(label), 3.0, 0.7), [s, te], wrt=[0])


def test_different_label_sets_are_refused():
    with pytest.raises(SlimError, match="distill.teacher: the teacher scores 3 classes, the student 2"):
        distillation_loss(to_tensor(numpy.zeros((2, 2))), to_tensor(numpy.zeros((2, 3))),
                          to_tensor(numpy.zeros(2, numpy.int64)))


class _Student:
    """The smallest task a Trainer accepts: a model and a loss."""

    def __init__(self, model):
        self.model = model
        self.collate_fn = None


def _batch():
    return {"x": to_tensor(RNG.normal(size=(8, 4)).astype(numpy.float32)),
            "label": to_tensor(RNG.integers(0, 3, 8))}


def test_the_task_trains_the_student_only_and_matches_features():
    student = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    teacher = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    task = DistillationTask(_Student(student), teacher, ["x"], temperature=2.0, alpha=0.5,
                            features=[{"student": "0", "teacher": "0", "weight": 0.5}])
    batch = _batch()
    loss = task.loss(batch)
    loss.backward()
    assert all(p.grad is not None for p in student.parameters())
    assert all(p.grad is None for p in teacher.parameters())
    with no_grad():
        logits, target = student(batch["x"]), teacher(batch["x"])
        a, b = student[0](batch["x"]).numpy(), teacher[0](batch["x"]).numpy()
    expected = distillation_loss(logits, target, batch["label"], 2.0, 0.5).numpy() + 0.5 * ((a - b) ** 2).mean()
    assert float(loss.numpy()) == pytest.approx(float(expected), rel=1e-6)
    assert task.model is student and "forward" not in student[0].__dict__     # the capture is undone


def test_bad_distillation_settings_name_themselves():
    student, teacher = nn.Linear(4, 3), nn.Linear(4, 3)
    with pytest.raises(SlimError, match="distill.temperature must be positive"):
        DistillationTask(_Student(student), teacher, ["x"], temperature=0.0)
    with pytest.raises(SlimError, match=r"distill.alpha must be in \[0, 1\]"):
        DistillationTask(_Student(student), teacher, ["x"], alpha=1.5)
    with pytest.raises(SlimError, match="distill.inputs: the batches have no key 'ids'"):
        DistillationTask(_Student(student), teacher, ["ids"]).loss(_batch())
    wrapped = nn.Sequential(nn.Linear(4, 3))
    with pytest.raises(SlimError, match="distill.features.student: the model has no layer 'body'"):
        DistillationTask(_Student(wrapped), wrapped, ["x"], features=[{"student": "body", "teacher": "0"}]).loss(
            _batch())
