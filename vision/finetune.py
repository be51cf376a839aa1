"""Finetune a (pretrained) backbone with a new classifier on an image folder, in one call.

In the spirit of PaddleHub's Finetune API::

    import vision
    result = vision.finetune(backbone="resnet18", weights="resnet18.npz", data_dir="my_images",
                             epochs=5, freeze_epochs=1)
    result["task"].predict_raw(["photo.jpg"])   # [{"label": ..., "score": ..., "topk": [...]}]

From the shell: ``python tools/finetune.py --backbone resnet18 --data_dir my_images
--epochs 5`` (``--help`` lists the options; prints a JSON summary).

``finetune`` writes the equivalent oar config (``finetune_config(...)``) and
trains it with the shared skeleton (``framework.engine.runner`` builders and
the Trainer). The backbone's weights come from ``weights`` (any file
``vision.models.load_pretrained`` reads, e.g. converted torchvision weights)
without its classifier; the new head has one output per class folder. For the
first ``freeze_epochs`` epochs only the head trains (backbone parameters fixed,
its BatchNorm in eval mode); then everything trains.
"""
import argparse
import json
import os

from framework import random as fw_random
from framework.config import dump_config
from framework.engine import Trainer, runner

from .data.folder import scan_image_folder
from .data.transforms import eval_transforms, train_transforms
from .models.weights import load_pretrained

__all__ = ["finetune", "finetune_config", "find_image_splits", "main"]

DEFAULT_OPTIMIZER = {"type": "Momentum", "learning_rate": 0.01, "momentum": 0.9, "weight_decay": 1.0e-4}


def find_image_splits(data_dir):
    """``(train, eval)`` dataset configs (without transforms) for ``data_dir``.

    ``data_dir/train`` (and ``data_dir/val`` or ``data_dir/eval``) in
    ``class_name/*`` layout are used when present; a ``train`` folder alone,
    or ``data_dir`` itself holding the class folders, is divided by
    ``ImageFolder``'s ``split`` rule (every 10th file of a class to eval).
    """
    data_dir = os.fspath(data_dir)
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"finetune: data_dir not found: {data_dir}")
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

    Classes are the train folder's class folders (sorted). Training images get
    a random resized crop (area fraction in ``crop_scale``, milder than
    ImageNet's 0.08 for small datasets) and a flip; evaluation resizes the
    short side to ``resize`` (default image_size * 256 / 224) and centre-crops.
    ``optimizer`` defaults to Momentum 0.9 at 0.01 with weight decay 1e-4; the
    rate follows a cosine decay over the epochs. ``model_args`` go to the
    backbone's constructor (e.g. ``{"base_channels": 16}``).
    """
    train_data, eval_data = find_image_splits(data_dir)
    class_names, _ = scan_image_folder(train_data["root"])
    resize = resize or int(round(image_size * 256 / 224))
    train_data["transforms"] = train_transforms(image_size, crop_scale)
    eval_data["transforms"] = eval_transforms(image_size, resize)
    eval_data["classes"] = class_names
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
        output_dir: where ``config.yaml``, ``best.npz``, ``last.npz`` and
            ``metrics.jsonl`` go (None: nothing is written).
        Others: as :func:`finetune_config`; ``device`` 'cpu' or 'gpu'.

    Returns:
        ``{"task": the trained ImageClassification task, "class_names": [...],
        "best": best eval accuracy, "history": per-epoch eval records,
        "weights": {"loaded": [...], "skipped": [...]} or None, "config": the config}``.
    """
    if not 0 <= freeze_epochs <= epochs:
        raise ValueError(f"finetune: freeze_epochs must be in [0, epochs={epochs}], got {freeze_epochs}")
    cfg = finetune_config(backbone, data_dir, epochs, batch_size, image_size, resize, crop_scale, optimizer,
                          model_args, num_workers, seed)
    if output_dir:
        dump_config(cfg, os.path.join(output_dir, "config.yaml"))
    train_cfg = runner.check_sections(cfg)
    fw_random.seed(seed)
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
    trainer.epochs = epochs
    summary = trainer.fit()
    return {"task": task, "class_names": cfg["task"]["class_names"], "best": summary["best"],
            "history": summary["history"], "weights": report, "config": cfg}


def main(argv=None):
    """``tools/finetune.py --data_dir DIR [--backbone NAME] [--weights FILE] [--epochs N] …``."""
    parser = argparse.ArgumentParser(description="Finetune a vision backbone with a new head on an image folder.")
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--backbone", default="resnet18")
    parser.add_argument("--weights", help="backbone weights (.npz/.safetensors, e.g. from tools/convert_weights.py)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--freeze_epochs", type=int, default=0)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--image_size", type=int, default=224)
    parser.add_argument("--optimizer", default="Momentum", help="Momentum (0.9, weight decay 1e-4) or Adam")
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--model_args", default="{}", help='backbone arguments as JSON, e.g. \'{"base_channels": 16}\'')
    parser.add_argument("--output_dir")
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=["cpu", "gpu"])
    args = parser.parse_args(argv)
    optimizer = (dict(DEFAULT_OPTIMIZER, learning_rate=args.learning_rate) if args.optimizer == "Momentum"
                 else {"type": args.optimizer, "learning_rate": args.learning_rate})
    result = finetune(args.backbone, args.weights, args.data_dir, args.epochs, args.freeze_epochs, args.batch_size,
                      args.image_size, optimizer=optimizer, model_args=json.loads(args.model_args),
                      output_dir=args.output_dir, num_workers=args.num_workers, seed=args.seed, device=args.device)
    history = [{k: r[k] for k in ("epoch", "train_loss", "acc") if k in r} for r in result["history"]]
    print(json.dumps({"class_names": result["class_names"], "best_acc": result["best"], "history": history}))
