"""Convert a PyTorch state dict (``.pth``) into an oar weights file for a vision model.

``python tools/convert_weights.py resnet50-0676ba61.pth resnet50.npz --model resnet50``

Needs ``torch`` (imported only here, to read the ``.pth``; the result loads with
NumPy alone). Names and shapes of oar's vision models are torchvision's, so
the conversion renames nothing: it unwraps ``{"state_dict": …}`` /
``{"model": …}`` containers, strips a ``module.`` prefix that every key
carries (DataParallel), drops BatchNorm ``num_batches_tracked`` counters, and
checks every key and shape against the target model before writing (an error
lists the keys that do not match). The number of classes is read from the
head in the file unless ``--num_classes`` is given. The output is ``.npz`` or
``.safetensors`` by its extension. Prints a JSON report.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework  # noqa: E402
import vision.models  # noqa: E402  (registers the vision models)
from framework.registry import MODELS  # noqa: E402
from vision.models.common import TORCH_BN_COUNTER  # noqa: E402
from vision.models.weights import WeightsError, load_pretrained  # noqa: E402
from zoo.cli import run_tool  # noqa: E402
from framework.errors import MissingFileError  # noqa: E402

__all__ = ["read_torch_state_dict", "convert", "main"]

_CONTAINER_KEYS = ("state_dict", "model", "model_state_dict")
_PREFIX = "module."


def read_torch_state_dict(path):
    """``{name: ndarray}`` from a PyTorch file, loaded with ``weights_only=True`` (no code runs)."""
    try:
        import torch
    except ImportError:
        raise SystemExit("error: reading .pth files needs PyTorch (pip install torch); "
                         "oar itself loads the converted file without it") from None
    if not os.path.isfile(path):
        raise MissingFileError(f"no such file: {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a pickle torch refuses, or not a torch file at all
        raise WeightsError(f"cannot read {path} as a PyTorch state dict: {err}") from None
    for key in _CONTAINER_KEYS:
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
            break
    if not isinstance(state, dict):
        raise WeightsError(f"{path} holds a {type(state).__name__}, not a state dict")
    not_tensors = [k for k, v in state.items() if not isinstance(v, torch.Tensor)]
    if not_tensors:
        raise WeightsError(f"{path}: entries {not_tensors[:8]} are not tensors; expected a flat state dict")
    return {k: v.detach().cpu().numpy() for k, v in state.items()}


def _head_size(state, head_name):
    """Number of classes of the head in ``state`` (size of its last bias), or None."""
    biases = [k for k in state if k.startswith(head_name + ".") and k.endswith("bias")]
    return int(state[biases[-1]].shape[0]) if biases else None


def convert(state, model, num_classes=None, model_args=None, source="the state dict"):
    """Check ``state`` ({name: array}) against the registered vision model ``model``.

    Returns ``(weights, report)``: the arrays to write (prefix stripped,
    counters dropped) and ``{"model", "num_classes", "converted": [names],
    "dropped": [names], "stripped_prefix"}``. Raises WeightsError listing missing, unexpected and
    mis-shaped keys, naming ``source``.
    """
    stripped = bool(state) and all(k.startswith(_PREFIX) for k in state)
    if stripped:
        state = {k[len(_PREFIX):]: v for k, v in state.items()}
    dropped = [k for k in state if k.rsplit(".", 1)[-1] == TORCH_BN_COUNTER]
    weights = {k: v for k, v in state.items() if k not in dropped}
    args = dict(model_args or {})
    target = MODELS.build({"type": model, **args})
    if num_classes is None:
        num_classes = _head_size(weights, target.head_name)
    if num_classes is not None and num_classes != target.num_classes:
        target = MODELS.build({"type": model, **args, "num_classes": num_classes})
    load_pretrained(target, weights, source=source)  # checks every key and shape; raises WeightsError
    report = {"model": model, "num_classes": target.num_classes, "converted": list(weights), "dropped": dropped,
              "stripped_prefix": _PREFIX if stripped else None}
    return weights, report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="PyTorch state dict (.pth / .pt)")
    parser.add_argument("target", help="output weights file (.npz or .safetensors)")
    parser.add_argument("--model", required=True, help="registered vision model, e.g. resnet50, mobilenet_v2")
    parser.add_argument("--num_classes", type=int, help="classes of the head (default: read from the file)")
    parser.add_argument("--model_args", default="{}", help='other constructor arguments as JSON, e.g. '
                                                           '\'{"base_channels": 32}\'')
    args = parser.parse_args(argv)
    try:
        model_args = json.loads(args.model_args)
        weights, report = convert(read_torch_state_dict(args.source), args.model, args.num_classes, model_args,
                                  source=args.source)
        framework.save(weights, args.target)
    except (WeightsError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    report["target"] = args.target
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    sys.exit(run_tool(main))
