"""Write the ResNet parity fixture ``tests/vision/data/resnet_parity.npz`` with PyTorch.

``python tools/make_vision_fixture.py [--out PATH]`` (needs ``torch``; run once,
the file is checked in). Two tiny ResNets of torchvision's definition
(``zoo.bench.torch_twins``) get random weights and BatchNorm statistics:

- ``basic``: ResNet-18's layout (basic blocks [2, 2, 2, 2]) at base width 3;
- ``bottleneck``: bottleneck blocks [2, 1, 1, 1] at base width 2.

For each the file holds, under ``<model>/``: the state dict as PyTorch writes
it (``state/<name>``, with ``num_batches_tracked``), the eval-mode logits, the
train-mode logits for the same input, the gradients of
``sum(logits * grad_out)`` with respect to the input and a few parameters
(``grad/<name>``), and the running statistics after that one training-mode
forward pass (``running/<name>``). The input ``x`` (2, 3, 40, 40) and
``grad_out`` (2, 10) are shared.
"""
import argparse
import os
import sys

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from zoo.bench.torch_twins import require_torch, torch_resnet  # noqa: E402
from zoo.cli import run_tool  # noqa: E402

MODELS = {"basic": {"block": "basic", "layers": (2, 2, 2, 2), "base_channels": 3},
          "bottleneck": {"block": "bottleneck", "layers": (2, 1, 1, 1), "base_channels": 2}}
NUM_CLASSES = 10
GRAD_KEYS = ("conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer4.0.downsample.0.weight",
             "fc.weight", "fc.bias")
DEFAULT_OUT = os.path.join(ROOT, "tests", "vision", "data", "resnet_parity.npz")


def _randomise_batch_norms(model, torch):
    """Non-trivial BatchNorm scale, shift and running statistics, so eval mode is really tested."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
                module.running_mean.uniform_(-0.3, 0.3)
                module.running_var.uniform_(0.5, 2.0)


def make_fixture(out=DEFAULT_OUT, seed=0):
    """Build the models, run them and write the arrays to ``out``; returns the dict written."""
    torch = require_torch()

    torch.manual_seed(seed)
    x = torch.randn(2, 3, 40, 40)
    grad_out = torch.randn(2, NUM_CLASSES)
    arrays = {"x": x.numpy(), "grad_out": grad_out.numpy()}
    for name, spec in MODELS.items():
        model = torch_resnet(num_classes=NUM_CLASSES, **spec)
        _randomise_batch_norms(model, torch)
        for key, value in model.state_dict().items():
            arrays[f"{name}/state/{key}"] = value.numpy().copy()
        model.eval()
        with torch.no_grad():
            arrays[f"{name}/eval_logits"] = model(x).numpy()
        model.train()
        x_grad = x.clone().requires_grad_()
        logits = model(x_grad)
        logits.backward(grad_out)
        arrays[f"{name}/train_logits"] = logits.detach().numpy()
        arrays[f"{name}/grad/x"] = x_grad.grad.numpy()
        parameters = dict(model.named_parameters())
        for key in GRAD_KEYS:
            arrays[f"{name}/grad/{key}"] = parameters[key].grad.numpy()
        for key, value in model.state_dict().items():
            if key.endswith(("running_mean", "running_var")):
                arrays[f"{name}/running/{key}"] = value.numpy().copy()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    numpy.savez_compressed(out, **arrays)
    return arrays


def main(argv=None):
    """``python tools/make_vision_fixture.py [--out PATH]``: write the fixture and print its size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    make_fixture(args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    sys.exit(run_tool(main))
