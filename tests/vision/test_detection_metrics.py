"""VOC mAP against a float64 reference written as py-faster-rcnn's ``voc_eval`` (loops, one detection at a
time), and COCO mAP against pycocotools."""
import numpy
import pytest

from vision.detection_metrics import COCO_AREA_RANGES, DetectionMAP, average_precision, coco_map, voc_map

CLASSES = 3


def _scene(seed, images=12):
    """Random ground truth (some difficult) and noisy detections: per image (boxes, labels, difficult) and
    (boxes, scores, labels), pixel corners."""
    rng = numpy.random.default_rng(seed)
    truths, detections = [], []
    for _ in range(images):
        g = int(rng.integers(0, 6))
        xy = rng.uniform(0, 200, (g, 2))
        boxes = numpy.concatenate([xy, xy + rng.uniform(10, 80, (g, 2))], axis=1)
        labels = rng.integers(0, CLASSES, g)
        difficult = rng.random(g) < 0.15
        truths.append((boxes, labels, difficult))
        found = [b + rng.normal(0, 6, 4) for b in boxes if rng.random() < 0.8]
        found_labels = [lab if rng.random() < 0.9 else (lab + 1) % CLASSES for lab in labels][:len(found)]
        extra = int(rng.integers(0, 4))
        exy = rng.uniform(0, 200, (extra, 2))
        found += list(numpy.concatenate([exy, exy + rng.uniform(10, 80, (extra, 2))], axis=1))
        found_labels += list(rng.integers(0, CLASSES, extra))
        detections.append((numpy.asarray(found).reshape(-1, 4), rng.random(len(found)),
                           numpy.asarray(found_labels, dtype=int)))
    return detections, truths


def _voc_eval_reference(detections, truths, label, threshold=0.5, use_07=False):
    """py-faster-rcnn's voc_eval in continuous coordinates: one detection at a time, ``difficult`` ignored."""
    records = {i: {"boxes": t[0][t[1] == label], "difficult": t[2][t[1] == label],
                   "det": [False] * int((t[1] == label).sum())} for i, t in enumerate(truths)}
    npos = sum(int((~r["difficult"]).sum()) for r in records.values())
    rows = [(float(s), i, b) for i, d in enumerate(detections) for b, s, lab in zip(*d) if lab == label]
    rows.sort(key=lambda r: -r[0])
    tp, fp = numpy.zeros(len(rows)), numpy.zeros(len(rows))
    for d, (_, image, bb) in enumerate(rows):
        r = records[image]
        ovmax, jmax = -numpy.inf, -1
        for j, gt in enumerate(r["boxes"]):
            iw = max(min(gt[2], bb[2]) - max(gt[0], bb[0]), 0.0)
            ih = max(min(gt[3], bb[3]) - max(gt[1], bb[1]), 0.0)
            inter = iw * ih
            uni = (bb[2] - bb[0]) * (bb[3] - bb[1]) + (gt[2] - gt[0]) * (gt[3] - gt[1]) - inter
            if inter / uni > ovmax:
                ovmax, jmax = inter / uni, j
        if ovmax > threshold or ovmax == threshold:
            if not r["difficult"][jmax]:
                if not r["det"][jmax]:
                    tp[d] = 1.0
                    r["det"][jmax] = True
                else:
                    fp[d] = 1.0
        else:
            fp[d] = 1.0
    fp, tp = numpy.cumsum(fp), numpy.cumsum(tp)
    rec = tp / float(npos)
    prec = tp / numpy.maximum(tp + fp, numpy.finfo(numpy.float64).eps)
    if use_07:
        ap = 0.0
        for t in numpy.arange(0.0, 1.1, 0.1):
            p = 0.0 if numpy.sum(rec >= t) == 0 else numpy.max(prec[rec >= t])
            ap += p / 11.0
        return ap
    mrec = numpy.concatenate(([0.0], rec, [1.0]))
    mpre = numpy.concatenate(([0.0], prec, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    i = numpy.where(mrec[1:] != mrec[:-1])[0]
    return numpy.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eleven_point", [False, True])
def test_voc_map_equals_the_float64_reference(seed, eleven_point):
    detections, truths = _scene(seed)
    ours = voc_map(detections, truths, CLASSES, eleven_point=eleven_point)
    for label in range(CLASSES):
        expected = _voc_eval_reference(detections, truths, label, use_07=eleven_point)
        assert abs(ours["ap"][label] - expected) <= 1e-9
    assert abs(ours["map"] - numpy.mean([_voc_eval_reference(detections, truths, c, use_07=eleven_point)
                                         for c in range(CLASSES)])) <= 1e-9


def test_average_precision_of_known_curves():
    # one object, found first: AP 1; found second after a false positive: 0.5 (all-point), 0.5 (11-point)
    assert average_precision(numpy.array([1.0]), numpy.array([1.0])) == 1.0
    recall, precision = numpy.array([0.0, 1.0]), numpy.array([0.0, 0.5])
    assert average_precision(recall, precision) == 0.5
    assert average_precision(recall, precision, eleven_point=True) == pytest.approx(0.5)


def test_a_detection_of_a_difficult_object_counts_neither_way():
    truths = [(numpy.array([[0, 0, 10, 10], [20, 20, 30, 30.]]), numpy.array([0, 0]), numpy.array([False, True]))]
    hit_difficult_first = [(numpy.array([[20, 20, 30, 30], [0, 0, 10, 10.]]), numpy.array([0.9, 0.8]),
                            numpy.array([0, 0]))]
    assert voc_map(hit_difficult_first, truths, 1)["map"] == 1.0


def test_coco_map_equals_pycocotools():
    coco_module = pytest.importorskip("pycocotools.coco")
    cocoeval = pytest.importorskip("pycocotools.cocoeval")
    detections, truths = _scene(3, images=15)
    truths = [(b, lab, numpy.zeros(len(lab), bool)) for b, lab, _ in truths]     # COCO has no difficult flag
    gt = {"images": [{"id": i + 1, "width": 300, "height": 300} for i in range(len(truths))],
          "categories": [{"id": c + 1, "name": str(c)} for c in range(CLASSES)], "annotations": []}
    for i, (boxes, labels, _) in enumerate(truths):
        for b, lab in zip(boxes, labels):
            w, h = b[2] - b[0], b[3] - b[1]
            gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": i + 1, "category_id": int(lab) + 1,
                                      "bbox": [b[0], b[1], w, h], "area": w * h, "iscrowd": 0})
    dets = [{"image_id": i + 1, "category_id": int(lab) + 1, "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
             "score": float(s)} for i, (boxes, scores, labels) in enumerate(detections)
            for b, s, lab in zip(boxes, scores, labels)]
    api = coco_module.COCO()
    api.dataset = gt
    api.createIndex()
    evaluation = cocoeval.COCOeval(api, api.loadRes(dets), "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    ours = coco_map(detections, truths, CLASSES, area_ranges=COCO_AREA_RANGES)
    assert ours["map"] == pytest.approx(evaluation.stats[0], abs=1e-6)
    for name, stat in zip(("small", "medium", "large"), evaluation.stats[3:6]):      # APs, APm, APl
        assert ours[f"map_{name}"] == pytest.approx(stat, abs=1e-6)
    assert ours["map50"] == pytest.approx(evaluation.stats[1], abs=1e-6)
    assert ours["map75"] == pytest.approx(evaluation.stats[2], abs=1e-6)


def test_the_metric_reads_padded_batches():
    metric = DetectionMAP(num_classes=2, coco=False)
    outputs = {"det_boxes": numpy.array([[[0, 0, .5, .5], [0, 0, 0, 0]]]), "det_scores": numpy.array([[0.9, 0]]),
               "det_labels": numpy.array([[1, -1]])}
    batch = {"gt_boxes": numpy.array([[[0, 0, .5, .5], [0, 0, 0, 0]]]), "gt_labels": numpy.array([[1, -1]]),
             "gt_difficult": numpy.zeros((1, 2), bool)}
    metric.update(outputs, batch)
    assert metric.compute() == {"map": 1.0, "map_07": 1.0}


def test_detection_map_reports_coco_sizes_that_hold_objects():
    metric = DetectionMAP(num_classes=1)
    found = numpy.array([[[0.1, 0.1, 0.13, 0.13], [0.2, 0.2, 0.4, 0.4]]], dtype=numpy.float32)   # 0.03 and 0.2 sides
    metric.update({"det_boxes": found, "det_scores": numpy.array([[0.9, 0.8]]), "det_labels": numpy.array([[0, 0]])},
                  {"gt_boxes": found, "gt_labels": numpy.array([[0, 0]]), "gt_difficult": numpy.zeros((1, 2), bool)})
    out = metric.compute()
    assert out["map_coco_small"] == out["map_coco_large"] == 1.0 and "map_coco_medium" not in out
