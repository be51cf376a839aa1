"""Finetune a (pretrained) backbone with a new classifier on an image folder, in one call.

In the spirit of PaddleHub's Finetune API::

    import vision
    result = vision.finetune(backbone="resnet18", weights="resnet18.npz", data_dir="my_images",
                             epochs=5, freeze_epochs=1)
    result["task"].predict_raw(["photo.jpg"])   # [{"label": ..., "score": ..., "topk": [...]}]

From the shell: ``python tools/finetune.py --backbone resnet18 --data_dir my_images
--epochs 5`` (``--help`` lists the options; prints a JSON summary).

``finetune`` writes the oar config for the folder (``finetune_config(...)``)
and trains it with the shared skeleton. Without ``weights`` and
``freeze_epochs`` it is ``framework.engine.runner.train`` on that config,
exactly what ``oar train -c <output_dir>/config.yaml`` runs (a shipped example:
``configs/examples/image_own_data.yaml``). With them, the same builders and
Trainer run with two additions a config cannot express yet (the vision
backbones take no ``pretrained`` key): the backbone's weights come from
``weights`` (any file ``vision.models.load_pretrained`` reads, e.g. converted
torchvision weights) without its classifier, the new head having one output
per class folder; and for the first ``freeze_epochs`` epochs only the head
trains (backbone parameters fixed, its BatchNorm in eval mode), then
everything trains. Either way the output folder is a run directory that
``oar infer --output_dir`` and ``oar eval --output_dir`` use as it is.
"""
import argparse
import json
import os
import tempfile

from framework import random as fw_random
from framework.config import dump_config
from framework.engine import Trainer, runner
from framework.errors import UserError

from .data.folder import ImageDataError, scan_image_folder
from .data.transforms import eval_transforms, train_transforms
from .models.weights import WeightsError, load_pretrained

__all__ = ["FinetuneError", "finetune", "finetune_config", "find_image_splits", "main"]

DEFAULT_OPTIMIZER = {"type": "Momentum", "learning_rate": 0.01, "momentum": 0.9, "weight_decay": 1.0e-4}


class FinetuneError(UserError, ValueError):
    """A finetuning setting that cannot work (e.g. more frozen epochs than epochs); the message names it."""


def find_image_splits(data_dir):
    """``(train, eval)`` dataset configs (without transforms) for ``data_dir``.

    ``data_dir/train`` (and ``data_dir/val`` or ``data_dir/eval``) in
    ``class_name/*`` layout are used when present; a ``train`` folder alone,
    or ``data_dir`` itself holding the class folders, is divided by
    ``ImageFolder``'s ``split`` rule (every 10th file of a class to eval).
    A missing ``data_dir`` is an :class:`ImageDataError` (a user mistake).
    """
    data_dir = os.fspath(data_dir)
    if not os.path.isdir(data_dir):
        what = f"{data_dir} is a file, not a folder" if os.path.exists(data_dir) else f"not found: {data_dir}"
        raise ImageDataError(f"image folder {what} (expected {data_dir}/train/<class>/*.png|jpg, "
                             f"or the class folders directly in it)")
    train_root = os.path.join(data_dir, "train")
    if not os.path.isdir(train_root):
        train_root = data_dir
    for name in ("val", "eval"):
        eval_root = os.path.join(data_dir, name)
        if train_root != data_dir and os.path.isdir(eval_root):
            return {"type": "ImageFolder", "root": train_root}, {"type": "ImageFolder", "root": eval_root}
    return ({"type": "ImageFolder", "root": train_root, "split": "train"},
            {"type": "ImageFolder", "root": train_root, "split": "eval"})


def finetune_config(backbone="resnet18", data_dir=".", epochs=5, batch_size=32, image_size=224, resize=None,
                    crop_scale=(0.25, 1.0), optimizer=None, model_args=None, num_workers=0, seed=0):
    """The oar config (a dict) that finetunes ``backbone`` on the image folder ``data_dir``.

    Classes are the train folder's class folders (sorted); both datasets are
    fixed to that list (``classes``), so an eval folder with other classes is
    an error. Training images get a random resized crop (area fraction in
    ``crop_scale``, milder than ImageNet's 0.08 for small datasets) and a flip;
    evaluation resizes the short side to ``resize`` (default image_size * 256 /
    224) and centre-crops. ``optimizer`` defaults to Momentum 0.9 at 0.01 with
    weight decay 1e-4; the rate follows a cosine decay over the epochs.
    ``model_args`` go to the backbone's constructor (e.g. ``{"base_channels": 16}``).
    """
    train_data, eval_data = find_image_splits(data_dir)
    class_names, _ = scan_image_folder(train_data["root"])
    resize = resize or int(round(image_size * 256 / 224))
    train_data["classes"] = eval_data["classes"] = class_names
    train_data["transforms"] = train_transforms(image_size, crop_scale)
    eval_data["transforms"] = eval_transforms(image_size, resize)
    return {
        "task": {"type": "ImageClassification", "class_names": class_names, "image_size": image_size,
                 "resize": resize, "topk": min(5, len(class_names))},
        "model": {"type": backbone, "num_classes": len(class_names), **(model_args or {})},
        "data": {"train": train_data, "eval": eval_data},
        "optimizer": dict(optimizer or DEFAULT_OPTIMIZER),
        "lr": {"type": "CosineAnnealingDecay", "T_max": epochs},
        "train": {"epochs": epochs, "batch_size": batch_size, "metric": "acc", "seed": seed,
                  "num_workers": num_workers},
    }


def finetune(backbone="resnet18", weights=None, data_dir=".", epochs=5, freeze_epochs=0, batch_size=32,
             image_size=224, resize=None, crop_scale=(0.25, 1.0), optimizer=None, model_args=None,
             output_dir=None, num_workers=0, seed=0, device=None, progress=True):
    """Finetune ``backbone`` on ``data_dir``; returns a dict of the results.

    Args:
        backbone: a registered vision model name ("resnet18", "resnet50", "mobilenet_v2", …).
        weights: a weights file for the backbone (its classifier is not loaded), or None
            to start from random initialisation.
        data_dir: an image folder (see :func:`find_image_splits`).
        epochs: total epochs. freeze_epochs: the first epochs train only the head.
        output_dir: the run directory: ``config.yaml``, ``best.npz``, ``last.npz`` and
            ``metrics.jsonl`` go there (None: a temporary folder, removed afterwards).
        Others: as :func:`finetune_config`; ``device`` 'cpu' or 'gpu'.

    Returns:
        ``{"task": the trained ImageClassification task (last epoch's weights), "class_names": [...],
        "best": best eval accuracy, "history": per-epoch eval records,
        "weights": {"loaded": [...], "skipped": [...]} or None, "config": the config}``.
    """
    if not 0 <= freeze_epochs <= epochs:
        raise FinetuneError(f"finetune: freeze_epochs must be in [0, epochs={epochs}], got {freeze_epochs}")
    cfg = finetune_config(backbone, data_dir, epochs, batch_size, image_size, resize, crop_scale, optimizer,
                          model_args, num_workers, seed)
    if output_dir is None:
        with tempfile.TemporaryDirectory(prefix="oar-finetune-") as folder:
            return _finetune(cfg, weights, freeze_epochs, folder, device, progress)
    return _finetune(cfg, weights, freeze_epochs, output_dir, device, progress)


def _finetune(cfg, weights, freeze_epochs, output_dir, device, progress):
    """Train ``cfg`` into ``output_dir``: ``runner.train`` as it is, or with pretrained weights / a frozen phase."""
    if not weights and not freeze_epochs:
        trainer, summary = runner.train(cfg, output_dir=output_dir, device=device, progress=progress)
        return {"task": trainer.task, "class_names": cfg["task"]["class_names"], "best": summary["best"],
                "history": summary["history"], "weights": None, "config": cfg}
    train_cfg = runner.check_sections(cfg)
    dump_config(cfg, os.path.join(output_dir, "config.yaml"))
    fw_random.seed(train_cfg["seed"])
    task = runner.build_task(cfg)
    report = load_pretrained(task.model, weights, skip_head=True) if weights else None
    if device:
        task.model.to(device)
    train_loader = runner.build_loader(runner.build_dataset(cfg, "train"), task, train_cfg, training=True)
    eval_loader = runner.build_loader(runner.build_dataset(cfg, "eval"), task, train_cfg, training=False)
    scheduler = runner.build_scheduler(cfg)
    trainer = Trainer(task, runner.build_optimizer(cfg, task.model, scheduler), train_loader, eval_loader,
                      scheduler=scheduler, epochs=freeze_epochs, metric="acc", output_dir=output_dir, device=device,
                      config=cfg, progress=progress, log_every=train_cfg["log_every"])
    if freeze_epochs:
        task.model.freeze_backbone(True)  # the optimizer skips parameters that are not trainable
        trainer.fit()
        task.model.freeze_backbone(False)
    trainer.epochs = train_cfg["epochs"]
    summary = trainer.fit()
    return {"task": task, "class_names": cfg["task"]["class_names"], "best": summary["best"],
            "history": summary["history"], "weights": report, "config": cfg}


def build_parser():
    """The options of ``tools/finetune.py``."""
    parser = argparse.ArgumentParser(prog="tools/finetune.py",
                                     description="Finetune a vision backbone with a new head on an image folder "
                                                 "(one folder per class); prints a JSON summary.")
    parser.add_argument("--data_dir", required=True, help="DIR/train/<class>/* (and DIR/val/<class>/*), or DIR/<class>/*")
    parser.add_argument("--backbone", default="resnet18")
    parser.add_argument("--weights", help="backbone weights (.npz/.safetensors, e.g. from tools/convert_weights.py)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--freeze_epochs", type=int, default=0)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--image_size", type=int, default=224)
    parser.add_argument("--optimizer", default="Momentum", help="Momentum (0.9, weight decay 1e-4) or Adam")
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--model_args", default="{}", help='backbone arguments as JSON, e.g. \'{"base_channels": 16}\'')
    parser.add_argument("--output_dir", help="the run directory (default: outputs/finetune)")
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=["cpu", "gpu"])
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv=None):
    """``tools/finetune.py --data_dir DIR [--backbone NAME] [--weights FILE] [--epochs N] …``.

    Prints ``{"class_names", "best_acc", "history", "output_dir"}`` as one JSON
    line on stdout. A user mistake (missing folder, bad weights file) raises a
    ``UserError``; an impossible option is argparse's usage error (exit 2).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        model_args = json.loads(args.model_args)
    except json.JSONDecodeError:
        model_args = None
    if not isinstance(model_args, dict):
        parser.error(f"--model_args must be a JSON object, got {args.model_args!r}")
    if not 0 <= args.freeze_epochs <= args.epochs:
        parser.error(f"--freeze_epochs must be in [0, --epochs={args.epochs}], got {args.freeze_epochs}")
    if args.weights and not os.path.isfile(args.weights):
        raise WeightsError(f"weights file not found: {args.weights} (--weights)")
    optimizer = (dict(DEFAULT_OPTIMIZER, learning_rate=args.learning_rate) if args.optimizer == "Momentum"
                 else {"type": args.optimizer, "learning_rate": args.learning_rate})
    output_dir = args.output_dir or os.path.join("outputs", "finetune")
    result = finetune(args.backbone, args.weights, args.data_dir, args.epochs, args.freeze_epochs, args.batch_size,
                      args.image_size, optimizer=optimizer, model_args=model_args, output_dir=output_dir,
                      num_workers=args.num_workers, seed=args.seed, device=args.device, progress=not args.quiet)
    history = [{k: r[k] for k in ("epoch", "train_loss", "acc") if k in r} for r in result["history"]]
    print(json.dumps({"class_names": result["class_names"], "best_acc": result["best"], "history": history,
                      "output_dir": output_dir}))
    return 0
