"""Loss and metric curves from a ``metrics.jsonl`` log, drawn to a PNG (needs matplotlib)."""
import json

__all__ = ["plot_curves"]


def plot_curves(log_path, png_path):
    """Plot train loss and every eval metric against the step; returns ``png_path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install 'oar[plot]'") from None
    with open(log_path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        raise RuntimeError(f"{log_path} holds no evaluations to plot")
    skip = {"epoch", "step", "lr", "time", "best", "train_loss"}
    names = [k for k in records[-1] if k not in skip and isinstance(records[-1][k], (int, float))]
    steps = [r["step"] for r in records]
    fig, axes = plt.subplots(1, 1 + len(names), figsize=(4 * (1 + len(names)), 3.2), squeeze=False)
    axes[0][0].plot(steps, [r.get("train_loss") for r in records], marker="o")
    axes[0][0].set_title("train loss")
    for ax, name in zip(axes[0][1:], names):
        ax.plot(steps, [r.get(name) for r in records], marker="o")
        ax.set_title(name)
    for ax in axes[0]:
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
