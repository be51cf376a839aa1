"""Train-step time of the feature models (``oar bench video_models``, feature part) beside PyTorch.

Each model is built at its 2019 YouTube-8M size (rgb 1024 + audio 128 features, 3862 classes) and timed
on one training step (forward, summed sigmoid cross entropy, backward, Adam update) on a batch of 32
videos of 300 frames (``quick``: 4 videos of 50 frames). When ``torch`` is importable, a PyTorch version of
the same model, with the same sizes, is timed in the same way; ``ratio`` = ours / PyTorch. Times are the
median of ``repeat`` steps after one warm-up step. Results are returned and printed as JSON, never
asserted.
"""

import numpy

import framework
import framework.nn.functional as F
from framework.registry import MODELS
from framework.timing import median_time

from .models import attention_cluster, attention_lstm, nextvlad  # noqa: F401  (register the models)

__all__ = ["MODEL_NAMES", "bench_ours", "bench_torch", "run_all"]

MODEL_NAMES = ("attention_cluster_youtube8m", "attention_lstm_youtube8m", "nextvlad_youtube8m")
DIMS, CLASSES = (1024, 128), 3862


def _batch(batch, frames, seed=0):
    rng = numpy.random.default_rng(seed)
    features = [rng.normal(size=(batch, frames, d)).astype(numpy.float32) for d in DIMS]
    labels = (rng.random((batch, CLASSES)) < 0.001).astype(numpy.float32)
    return features, numpy.full(batch, frames, dtype=numpy.int64), labels


def bench_ours(name, batch, frames, repeat):
    """Seconds per training step of our ``name`` at the given batch and frames."""
    framework.seed(0)
    model = MODELS.build({"type": name})
    model.train()
    optimizer = framework.optimizer.Adam(learning_rate=1e-4, parameters=model.parameters())
    features, lengths, labels = _batch(batch, frames)
    inputs = [framework.to_tensor(f) for f in features]
    lengths, labels = framework.to_tensor(lengths), framework.to_tensor(labels)

    def step():
        loss = F.binary_cross_entropy_with_logits(model(inputs, lengths), labels, reduction="none").sum(axis=1).mean()
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return median_time(step, repeat)


def _torch_models(torch):
    """PyTorch versions of the three models (same layers and sizes as ours)."""
    nn = torch.nn

    class ShiftingAttention(nn.Module):
        def __init__(self, dim, k):
            super().__init__()
            self.k, self.proj = k, nn.Linear(dim, k)
            self.scale, self.shift = nn.Parameter(torch.randn(k)), nn.Parameter(torch.randn(k))

        def forward(self, x):
            w = torch.softmax(self.proj(x), dim=1)                                   # (N, T, K)
            pooled = w.transpose(1, 2) @ x * self.scale[:, None] + self.shift[:, None]
            return (nn.functional.normalize(pooled, dim=-1) / self.k ** 0.5).flatten(1)

    class AttentionCluster(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.ModuleList([ShiftingAttention(d, 32) for d in DIMS])
            self.head = nn.Sequential(nn.Dropout(0.5), nn.Linear(32 * sum(DIMS), 1024), nn.Tanh(),
                                      nn.Linear(1024, 4096), nn.Tanh(), nn.Linear(4096, CLASSES))

        def forward(self, xs):
            return self.head(torch.cat([a(x) for a, x in zip(self.att, xs)], 1))

    class LSTMPool(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.fc, self.lstm = nn.Linear(dim, 512), nn.LSTM(512, 1024, batch_first=True, bidirectional=True)
            self.drop, self.att = nn.Dropout(0.5), nn.Linear(2048, 1)

        def forward(self, x):
            h = self.drop(self.lstm(torch.tanh(self.fc(x)))[0])
            return (h * torch.softmax(self.att(h), dim=1)).sum(1)

    class AttentionLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.pools = nn.ModuleList([LSTMPool(d) for d in DIMS])
            self.head = nn.Sequential(nn.Linear(4096, 8192), nn.ReLU(), nn.Linear(8192, 4096), nn.Tanh(),
                                      nn.Linear(4096, CLASSES))

        def forward(self, xs):
            return self.head(torch.cat([p(x) for p, x in zip(self.pools, xs)], 1))

    class VLAD(nn.Module):
        def __init__(self, dim, k=128, e=2, g=8):
            super().__init__()
            self.k, self.g, self.f = k, g, e * dim // g
            self.expand, self.att = nn.Linear(dim, e * dim), nn.Linear(e * dim, g)
            self.assign, self.bn1 = nn.Linear(e * dim, g * k, bias=False), nn.BatchNorm1d(g * k)
            self.centres, self.bn2 = nn.Parameter(torch.randn(k, self.f)), nn.BatchNorm1d(k * self.f)

        def forward(self, x):
            n, t, _ = x.shape
            x = self.expand(x)                                                       # (N, T, E*D)
            a = self.bn1(self.assign(x).flatten(0, 1)).view(n, t * self.g, self.k).softmax(-1)
            a = a * torch.sigmoid(self.att(x)).reshape(n, t * self.g, 1)
            vlad = a.transpose(1, 2) @ x.reshape(n, t * self.g, self.f) - a.sum(1)[..., None] * self.centres
            return self.bn2(nn.functional.normalize(vlad, dim=-1).flatten(1))

    class NeXtVLAD(nn.Module):
        def __init__(self):
            super().__init__()
            self.vlads = nn.ModuleList([VLAD(d) for d in DIMS])
            self.drop, self.hidden = nn.Dropout(0.5), nn.Linear(128 * 2 * sum(DIMS) // 8, 2048, bias=False)
            self.bn = nn.BatchNorm1d(2048)
            self.gate = nn.Sequential(nn.Linear(2048, 256, bias=False), nn.BatchNorm1d(256), nn.ReLU(),
                                      nn.Linear(256, 2048, bias=False), nn.Sigmoid())
            self.out = nn.Linear(2048, CLASSES)

        def forward(self, xs):
            h = self.bn(self.hidden(self.drop(torch.cat([v(x) for v, x in zip(self.vlads, xs)], 1))))
            return self.out(h * self.gate(h))

    return dict(zip(MODEL_NAMES, (AttentionCluster, AttentionLSTM, NeXtVLAD)))


def bench_torch(name, batch, frames, repeat):
    """Seconds per training step of the PyTorch version of ``name``, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    model = _torch_models(torch)[name]()
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    features, _, labels = _batch(batch, frames)
    inputs, labels = [torch.from_numpy(f) for f in features], torch.from_numpy(labels)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")

    def step():
        loss = loss_fn(model(inputs), labels).sum(1).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return median_time(step, repeat)


def run_all(quick=False, repeat=3):
    """One row per model: ``{"model", "batch", "frames", "ours_s", "torch_s", "ratio", "videos_per_s"}``."""
    batch, frames = (4, 50) if quick else (32, 300)
    rows = []
    for name in MODEL_NAMES:
        ours = bench_ours(name, batch, frames, repeat)
        theirs = bench_torch(name, batch, frames, repeat)
        rows.append({"model": name, "batch": batch, "frames": frames, "ours_s": round(ours, 3),
                     "torch_s": None if theirs is None else round(theirs, 3),
                     "ratio": None if theirs is None else round(ours / theirs, 2),
                     "videos_per_s": round(batch / ours, 2)})
    return {"suite": "video_feature_models", "quick": quick, "rows": rows}


if __name__ == "__main__":
    import json
    print(json.dumps(run_all(quick=True), indent=1))
