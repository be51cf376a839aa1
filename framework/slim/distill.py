"""Knowledge distillation: a student trained on hard labels and on a teacher's softened outputs.

:func:`distillation_loss` is Hinton et al.'s loss::

    (1 - alpha) * CE(student, label) + alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T))

averaged over the batch (``T^2`` keeps the soft term's gradient on the scale of the hard
one as ``T`` grows). :class:`DistillationTask` wraps a student task so the normal
Trainer trains it: its ``loss`` runs the student and the (frozen, eval-mode)
teacher on the same batch keys and adds, when ``features`` are named, the mean
squared difference of named sublayer outputs (feature-map matching, FitNets);
everything else (prediction, metrics, assets) is the student task's.
"""
import contextlib

from ..nn import functional as F
from ..tensor import no_grad
from .errors import SlimError

__all__ = ["distillation_loss", "DistillationTask", "capture_outputs"]


def distillation_loss(student, teacher, label, temperature=4.0, alpha=0.7):
    """Scalar Tensor: the loss above for ``student`` and ``teacher`` logits (N, K) and int ``label`` (N,)."""
    if student.shape[-1] != teacher.shape[-1]:
        raise SlimError(f"distill.teacher: the teacher scores {teacher.shape[-1]} classes, the student "
                        f"{student.shape[-1]}")
    t = float(temperature)
    hard = F.cross_entropy(student, label)
    soft_teacher = F.softmax(teacher / t, axis=-1)
    kl = (soft_teacher * (F.log_softmax(teacher / t, axis=-1) - F.log_softmax(student / t, axis=-1))).sum(axis=-1)
    return hard * (1.0 - alpha) + kl.mean() * (alpha * t * t)


@contextlib.contextmanager
def capture_outputs(model, names, setting):
    """Within the context, ``{name: output}`` of the sublayers ``names`` of ``model`` at their last call; an
    unknown name is a SlimError naming ``setting`` and the closest layers."""
    layers = dict(model.named_sublayers())
    captured = {}
    for name in names:
        if name not in layers:
            close = [n for n in layers if n.split(".")[-1] == name.split(".")[-1]][:3]
            raise SlimError(f"{setting}: the model has no layer {name!r}" +
                            (f"; did you mean {', '.join(close)}?" if close else ""))

    def recording(name, forward):
        def call(*args, **kwargs):
            captured[name] = out = forward(*args, **kwargs)
            return out
        return call

    for name in names:
        layers[name].forward = recording(name, layers[name].forward)
    try:
        yield captured
    finally:
        for name in names:
            del layers[name].__dict__["forward"]


class DistillationTask:
    """A student task trained against a teacher (module docstring).

    Args:
        student: the student Task (its ``model`` is what trains).
        teacher: the teacher's model (a Layer returning logits from the same inputs).
        inputs: the batch keys passed to both models, in order (``["ids", "lengths"]``).
        label: the batch key of the hard labels.
        temperature, alpha: of :func:`distillation_loss`.
        features: ``[{"student": layer, "teacher": layer, "weight": w}]`` outputs matched by mean squared error.
    """

    def __init__(self, student, teacher, inputs, label="label", temperature=4.0, alpha=0.7, features=()):
        if float(temperature) <= 0:
            raise SlimError(f"distill.temperature must be positive, got {temperature}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise SlimError(f"distill.alpha must be in [0, 1], got {alpha}")
        self.student, self.teacher = student, teacher
        self.inputs, self.label = list(inputs), label
        self.temperature, self.alpha = float(temperature), float(alpha)
        self.features = [dict(f) for f in features]
        self.teacher.eval()

    def __getattr__(self, name):
        return getattr(self.__dict__["student"], name)

    @property
    def model(self):
        return self.student.model

    @model.setter
    def model(self, value):
        self.student.model = value

    def _args(self, batch):
        missing = [k for k in self.inputs + [self.label] if k not in batch]
        if missing:
            raise SlimError(f"distill.inputs: the batches have no key {missing[0]!r} (keys: {', '.join(batch)})")
        return [batch[k] for k in self.inputs]

    def loss(self, batch):
        """The distillation loss of a batch of Tensors (plus the feature terms)."""
        args = self._args(batch)
        student_names = [f["student"] for f in self.features]
        teacher_names = [f["teacher"] for f in self.features]
        with capture_outputs(self.student.model, student_names, "distill.features.student") as ours:
            logits = self.student.model(*args)
        with no_grad(), capture_outputs(self.teacher, teacher_names, "distill.features.teacher") as theirs:
            target = self.teacher(*args)
        loss = distillation_loss(logits, target, batch[self.label], self.temperature, self.alpha)
        for item in self.features:
            a, b = ours[item["student"]], theirs[item["teacher"]]
            if tuple(a.shape) != tuple(b.shape):
                raise SlimError(f"distill.features: {item['student']} gives {tuple(a.shape)}, the teacher's "
                                f"{item['teacher']} {tuple(b.shape)}; matched outputs need one shape")
            loss = loss + ((a - b) ** 2).mean() * float(item.get("weight", 1.0))
        return loss
