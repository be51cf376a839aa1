"""``oar reproduce detection``: the generated shapes-detection set, SSD-MobileNetV1 trained on it, mAP on its
test split and on a held-out renderer's images; the RESULTS.md block.

1. the set is written as a VOC folder under ``<output_root>/detection_shapes`` (kept when it is there)
   by :func:`vision.data.detection_shapes.make_detection_shapes` with the counts of :data:`SET_SIZES`;
2. ``configs/vision/ssd_mobilenet_v1_shapes.yaml`` trains on it (:func:`zoo.reproduce.train_and_measure`, on
   the card's ``reproduce.nproc`` data-parallel processes),
   its best checkpoint is evaluated on the test split (VOC mAP@0.5 all-point and 11-point, COCO
   mAP@[.5:.95]) and exported in float16 to the card's weights;
3. the same checkpoint is evaluated on :data:`HELDOUT_IMAGES` images of the second, independently written
   renderer (:mod:`vision.data.detection_heldout`) that training never saw.

``--from_runs DIR`` evaluates ``DIR/ssd_mobilenet_v1_shapes`` of an earlier ``oar train`` instead of
training.
"""
import datetime
import os

from framework.engine import runner
from vision.data.detection_heldout import make_heldout_detection_set
from vision.data.detection_shapes import make_detection_shapes

from . import machine_description, recipe_config, train_and_measure

__all__ = ["SET_SIZES", "HELDOUT_IMAGES", "prepare_sets", "results_text", "reproduce_detection"]

SET_SIZES = {"num_train": 2000, "num_val": 100, "num_test": 300}
HELDOUT_IMAGES = 200


def prepare_sets(output_root):
    """The generated set and the held-out renderer's set under ``output_root`` (written when missing);
    returns their two folders."""
    shapes, heldout = os.path.join(output_root, "detection_shapes"), os.path.join(output_root, "detection_heldout")
    if not os.path.isfile(os.path.join(shapes, "ImageSets", "Main", "test.txt")):
        make_detection_shapes(shapes, seed=0, **SET_SIZES)
    if not os.path.isfile(os.path.join(heldout, "ImageSets", "Main", "test.txt")):
        make_heldout_detection_set(heldout, HELDOUT_IMAGES, seed=1000)
    return shapes, heldout


def results_text(entry, metrics, minutes):
    """The RESULTS.md block: the metrics table, the commands and the machine."""
    nproc = entry.reproduce.nproc if entry.reproduce else 1
    processes = f" on {nproc} data-parallel processes" if nproc > 1 else ""
    launch = f"--nproc {nproc} " if nproc > 1 else ""
    return "\n".join([
        f"### {entry.name} (`oar reproduce detection`)",
        "",
        f"SSD-MobileNetV1 (`{entry.config}`) on the generated shapes-detection set "
        f"({SET_SIZES['num_train']} training images; six classes), CPU{processes}, {machine_description()}, "
        f"{datetime.date.today().isoformat()}.",
        "",
        "| model | VOC mAP@0.5 test | 11-point | COCO mAP@[.5:.95] | VOC mAP@0.5 held-out renderer | train min |",
        "|---|---|---|---|---|---|",
        f"| {entry.name} | {metrics['map']:.4f} | {metrics['map_07']:.4f} | {metrics['map_coco']:.4f} | "
        f"{metrics['map_heldout']:.4f} | {minutes:.1f} |",
        "",
        f"`oar reproduce detection` (`python tools/make_detection_shapes.py DIR` writes the set, "
        f"`oar train {launch}-c {entry.config} -o data.train.root=DIR data.eval.root=DIR data.test.root=DIR` trains, "
        f"`oar eval -c {entry.config} --checkpoint W -o data.test.root=DIR data.test.split=test` scores the test "
        f"split; `data.test.root` alone names a test folder of yours and reads every image in it, as `--test_file`).",
    ])


def reproduce_detection(entry, options):
    """The catalog's reproduce function of ``ssd_mobilenet_v1_shapes`` (module docstring)."""
    shapes, heldout = prepare_sets(options.output_root)
    roots = tuple(f"data.{split}.root={shapes}" for split in ("train", "eval", "test"))
    from_run = os.path.join(options.from_runs, entry.name) if getattr(options, "from_runs", None) else None
    outcome = train_and_measure(entry, options, roots, from_run=from_run)
    cfg = recipe_config(entry, options, roots + (f"data.test.root={heldout}",))
    held = runner.evaluate_config(cfg, outcome["checkpoint"], split="test", device=options.device)
    metrics = {**outcome["metrics"], "map_heldout": round(float(held["map"]), 4)}
    minutes = outcome["train_minutes"] or 0.0
    return {"metrics": metrics, "weights": outcome["weights"], "results_name": entry.name,
            "results_text": results_text(entry, metrics, minutes)}
