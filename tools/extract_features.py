"""Extract per-frame features of every video in a list file (the YouTube-8M-style feature dataset).

``python tools/extract_features.py --list motion_train.txt --out features/ --model resnet18
[--model_args '{"base_channels": 16}'] [--weights W.npz [--weights_prefix backbone.]] [--num_frames 16] [--size 112]``

Runs the image backbone ``--model`` (a registered model built with
``num_classes=0``, so its output is the pooled feature) over ``--num_frames``
evenly spread frames of each video and writes ``OUT/rgb/<name>.npy`` (frames,
dim) plus ``OUT/<list file name>`` (``name labels`` lines). Videos already
extracted are skipped, so rerunning resumes an interrupted run. See
:mod:`video.data.features`.

``--modality flow [--flow_args '{"bound": 1.0}']`` writes the flow descriptors of the
same frames instead (``OUT/flow/<name>.npy``, (frames, 46); no backbone, see
:mod:`video.data.flow_features`); ``--modality rgb flow`` writes both modalities of the
feature models, decoding each video once.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framework  # noqa: E402
import vision.models  # noqa: E402,F401  (registers the backbones)
from framework.registry import MODELS  # noqa: E402
from video.data.datasets import read_class_names, read_list_file  # noqa: E402
from video.data.features import FeatureExtractor, extract_modalities, feature_transforms  # noqa: E402
from video.data.flow_features import FlowFeatureExtractor, flow_features_from_config  # noqa: E402
from vision.models.weights import load_pretrained, read_weights  # noqa: E402
from zoo.cli import run_tool  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", required=True, help="list file: 'path label' or 'path l1,l2,...' lines")
    parser.add_argument("--root", help="folder of the list's relative paths (default: the list file's folder)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--class_names", help="class-names file, when labels are written as names")
    parser.add_argument("--model", default="resnet18", help="registered backbone (default resnet18)")
    parser.add_argument("--model_args", type=json.loads, default={},
                        help='more arguments of the backbone as JSON, e.g. \'{"base_channels": 16}\'')
    parser.add_argument("--weights", help="weights file or training checkpoint for the backbone")
    parser.add_argument("--weights_prefix", default="", help="use only weights under this prefix (e.g. backbone.)")
    parser.add_argument("--num_frames", type=int, default=16, help="frames per video, spread evenly; 0 = all")
    parser.add_argument("--size", type=int, default=224, help="crop size (short side resized to size * 8/7)")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--modality", nargs="+", default=["rgb"],
                        help="feature folder names (default rgb): flow makes flow descriptors, any other name the "
                             "backbone's features; several (e.g. rgb flow) decode each video once")
    parser.add_argument("--flow_args", type=json.loads, default={},
                        help='flow descriptor settings as JSON (with --modality flow), e.g. \'{"bound": 1.0, '
                             '"bins": 8, "min_speed": 0.3, "method": "dis"}\'')
    parser.add_argument("--on_error", choices=["skip", "raise"], default="skip")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    args = parser.parse_args(argv)

    framework.set_device(args.device)
    names = read_class_names(args.class_names) if args.class_names else None
    entries = read_list_file(args.list, multi_label=True, class_names=names)
    root = args.root or os.path.dirname(os.path.abspath(args.list))
    backbone = None if set(args.modality) <= {"flow"} else _backbone(parser, args)
    extractors = {modality: FlowFeatureExtractor(args.size, settings=flow_features_from_config(args.flow_args))
                  if modality == "flow" else backbone for modality in args.modality}
    result = extract_modalities(entries, root, args.out, extractors, num_frames=args.num_frames or None,
                                list_name=os.path.basename(args.list), on_error=args.on_error, progress="videos")
    print(json.dumps(result))


def _backbone(parser, args):
    """The :class:`FeatureExtractor` of ``--model`` with ``--model_args`` and ``--weights``."""
    if not isinstance(args.model_args, dict):
        parser.error(f"--model_args must be a JSON object, got {args.model_args!r}")
    model = MODELS.build({**args.model_args, "type": args.model, "num_classes": 0}, where="--model/--model_args")
    if args.weights:
        state = read_weights(args.weights)
        if args.weights_prefix:
            state = {k[len(args.weights_prefix):]: v for k, v in state.items() if k.startswith(args.weights_prefix)}
            if not state:
                parser.error(f"no weights in {args.weights} start with {args.weights_prefix!r}")
        load_pretrained(model, state, skip_head=True)
    if args.device == "gpu":
        model.to("gpu")
    return FeatureExtractor(model, feature_transforms(args.size), args.batch_size)


if __name__ == "__main__":
    sys.exit(run_tool(main))
