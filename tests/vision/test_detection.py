"""Detection data (VOC and COCO readers, the generators, box transforms), the SSD model, the task and its
outputs, on tiny images and a tiny model."""
import json
import os

import numpy
import pytest

import framework
import framework.nn.functional as F
from vision.data.box_transforms import DetectionResize, RandomExpand, RandomFlipBoxes, RandomIoUCrop
from vision.data.detection import COCODetection, DetectionDataError, VOCDetection
from vision.data.detection_heldout import render_heldout_image
from vision.data.detection_shapes import DETECTION_SHAPES, make_detection_shapes, render_detection_image
from vision.models.common import set_batch_norms_mode
from vision.models.ssd import SSDMobileNetV1
from vision.tasks.detection import ObjectDetection
from zoo.inputs import format_result

SMALL = dict(num_classes=6, scale=0.25, image_size=64, source_blocks=[5, 11, 13], extra_channels=[64, 64])


@pytest.fixture(scope="module")
def voc(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("voc"))
    make_detection_shapes(root, num_train=4, num_val=2, num_test=2, seed=3)
    return root


def test_the_generator_draws_the_six_classes_in_the_stated_ranges():
    seen, sizes = set(), []
    for i in range(30):
        rgb, boxes, labels = render_detection_image(numpy.random.default_rng((5, i)))
        h, w = rgb.shape[:2]
        assert 240 <= h <= 480 and 240 <= w <= 480 and 1 <= len(labels) <= 8
        assert (boxes[:, :2] >= 0).all() and (boxes[:, 2] < w).all() and (boxes[:, 3] < h).all()
        sizes += list(numpy.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]))
        seen |= set(labels.tolist())
    assert seen == set(range(6)) and len(DETECTION_SHAPES) == 6
    assert 15.5 <= min(sizes) and max(sizes) <= 160.5


def test_the_heldout_renderer_gives_boxes_inside_its_images():
    rgb, boxes, labels = render_heldout_image(numpy.random.default_rng(0))
    assert rgb.dtype == numpy.uint8 and len(boxes) == len(labels) >= 1
    assert (boxes[:, 2] <= rgb.shape[1]).all() and (boxes[:, 3] <= rgb.shape[0]).all()


def test_voc_reader_reads_back_what_was_written(voc):
    data = VOCDetection(voc, split="train", class_names=list(DETECTION_SHAPES))
    assert len(data) == 4
    sample = data[0]
    rng = numpy.random.default_rng((3, 0))
    rgb, boxes, labels = render_detection_image(rng)
    assert sample["img"].shape == rgb.shape
    numpy.testing.assert_allclose(sample["boxes"], boxes, atol=0.051)       # written with one decimal
    numpy.testing.assert_array_equal(sample["labels"], labels)
    assert not sample["difficult"].any()


def test_voc_reader_names_an_unknown_class(voc):
    with pytest.raises(DetectionDataError, match="not in class_names"):
        VOCDetection(voc, split="val", class_names=["circle"])


def test_coco_reader_converts_xywh_and_keeps_crowds_as_difficult(tmp_path, voc):
    image = os.path.join(voc, "JPEGImages", "000000.jpg")
    spec = {"images": [{"id": 7, "file_name": "000000.jpg"}],
            "categories": [{"id": 3, "name": "ring"}, {"id": 1, "name": "circle"}],
            "annotations": [{"id": 1, "image_id": 7, "category_id": 3, "bbox": [10, 20, 30, 40]},
                            {"id": 2, "image_id": 7, "category_id": 1, "bbox": [0, 0, 5, 5], "iscrowd": 1}]}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(spec))
    data = COCODetection(str(path), os.path.dirname(image))
    assert data.class_names == ["circle", "ring"]
    sample = data[0]
    numpy.testing.assert_array_equal(sample["boxes"], [[10, 20, 40, 60], [0, 0, 5, 5]])
    numpy.testing.assert_array_equal(sample["labels"], [1, 0])
    numpy.testing.assert_array_equal(sample["difficult"], [False, True])


def test_split_all_reads_every_annotation_of_a_voc_folder(voc):
    data = VOCDetection(voc, split="all", class_names=list(DETECTION_SHAPES))
    assert len(data) == 8                                            # train 4, val 2, test 2


@pytest.mark.parametrize("annotation, said", [
    ({"image_id": 7, "bbox": [1, 2, 3, 4]}, r"annotations\[0\] needs category_id"),
    ({"image_id": 7, "category_id": 3, "bbox": [1, 2]}, r"annotations\[0\] needs .* a bbox of four numbers"),
    ({"image_id": 7, "category_id": 3, "bbox": "wide"}, r"annotations\[0\] needs"),
    ({"image_id": 7, "category_id": 9, "bbox": [1, 2, 3, 4]}, r"annotations\[0\]: category 9 is not in"),
])
def test_a_malformed_coco_annotation_is_one_error_naming_it(tmp_path, annotation, said):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps({"images": [{"id": 7, "file_name": "a.jpg"}], "categories": [{"id": 3, "name": "ring"}],
                                "annotations": [annotation]}))
    with pytest.raises(DetectionDataError, match=said):
        COCODetection(str(path))


def test_coco_images_are_beside_the_json_unless_image_dir_says(tmp_path):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}], "categories": [{"id": 1, "name": "x"}],
                                "annotations": []}))
    assert COCODetection(str(path)).records[0][0] == str(tmp_path / "a.jpg")
    assert COCODetection(str(path), "elsewhere").records[0][0] == os.path.join("elsewhere", "a.jpg")


def _sample():
    img = numpy.zeros((100, 200, 3), dtype=numpy.uint8)
    return {"img": img, "boxes": numpy.float32([[10, 20, 50, 60], [120, 30, 190, 90]]),
            "labels": numpy.array([1, 4]), "difficult": numpy.array([False, True])}


def test_flip_and_expand_move_the_boxes():
    flipped = RandomFlipBoxes(p=1.0)(_sample(), rng=numpy.random.default_rng(0))
    numpy.testing.assert_array_equal(flipped["boxes"], [[150, 20, 190, 60], [10, 30, 80, 90]])
    expanded = RandomExpand(max_ratio=2.0, p=1.0)(_sample(), rng=numpy.random.default_rng(1))
    shift = expanded["boxes"] - _sample()["boxes"]
    assert (shift == shift[0]).all() and shift[0, 0] == shift[0, 2] and expanded["img"].shape[1] >= 200
    left, top = int(shift[0, 0]), int(shift[0, 1])
    assert expanded["img"][top, left].tolist() == [0, 0, 0]                  # the image sits at the offset


def test_iou_crop_keeps_labels_with_their_boxes_inside_the_crop():
    crop = RandomIoUCrop(min_ious=[0.0], trials=200)
    for seed in range(10):
        out = crop(_sample(), rng=numpy.random.default_rng(seed))
        h, w = out["img"].shape[:2]
        assert (out["boxes"] >= 0).all()
        assert (out["boxes"][:, [0, 2]] <= w).all() and (out["boxes"][:, [1, 3]] <= h).all()
        assert len(out["boxes"]) == len(out["labels"]) == len(out["difficult"]) >= 1
        assert set(zip(out["labels"].tolist(), out["difficult"].tolist())) <= {(1, False), (4, True)}


def test_detection_resize_makes_boxes_relative():
    out = DetectionResize(size=32)(_sample())
    assert out["img"].shape == (32, 32, 3)
    numpy.testing.assert_allclose(out["boxes"], [[0.05, 0.2, 0.25, 0.6], [0.6, 0.3, 0.95, 0.9]], rtol=1e-6)


def test_the_model_gives_offsets_in_training_and_decoded_boxes_in_eval():
    model = SSDMobileNetV1(**SMALL)
    x = framework.to_tensor(numpy.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype("float32"))
    assert model(x).shape == (2, model.num_priors, 4 + 7)
    model.eval()
    out = model(x)
    numpy.testing.assert_allclose(out.numpy()[..., 4:].sum(-1), 1, rtol=1e-5)
    model.train()
    set_batch_norms_mode(model, False)                 # training outputs with the running statistics
    loc = model(x)[..., :4]
    numpy.testing.assert_allclose(out.numpy()[..., :4], F.decode_boxes(loc, model.priors).numpy(), rtol=1e-5,
                                  atol=1e-6)
    assert model.state_dict().keys().isdisjoint({"priors"})


def _task():
    framework.seed(0)
    return ObjectDetection(SSDMobileNetV1(**SMALL), class_names=list(DETECTION_SHAPES), score_threshold=0.0)


def test_collate_targets_decode_back_to_the_objects():
    task = _task()
    sample = DetectionResize(size=64)(_sample())
    sample["img"] = numpy.zeros((3, 64, 64), numpy.float32)
    batch = task.collate_fn([sample])
    positive = batch["classes"][0] > 0
    assert positive.any() and set(batch["classes"][0][positive].tolist()) == {2}   # the difficult one is left out
    decoded = F.decode_boxes(framework.to_tensor(batch["loc_targets"]), task.model.priors).numpy()[0][positive]
    numpy.testing.assert_allclose(decoded, numpy.repeat(sample["boxes"][:1], positive.sum(), 0), atol=1e-5)
    numpy.testing.assert_array_equal(batch["gt_labels"][0], [1, 4])


def test_predict_returns_pixel_boxes_sorted_by_score_and_honours_top_k():
    task = _task()
    image = numpy.random.default_rng(0).integers(0, 256, (50, 80, 3), dtype=numpy.uint8)
    (result,) = task.predict([image], top_k=5)
    assert set(result) == {"boxes", "labels", "scores"} and len(result["boxes"]) == 5
    assert result["scores"] == sorted(result["scores"], reverse=True)
    assert all(0 <= b[0] <= b[2] <= 80 and 0 <= b[1] <= b[3] <= 50 for b in result["boxes"])
    assert set(result["labels"]) <= set(DETECTION_SHAPES)
    assert task.predict([image], score_threshold=1.0) == [{"boxes": [], "labels": [], "scores": []}]


def test_a_few_steps_lower_the_loss_on_one_batch():
    task = _task()
    samples = []
    for i in range(2):
        rgb, boxes, labels = render_detection_image(numpy.random.default_rng((9, i)))
        s = DetectionResize(size=64)({"img": rgb, "boxes": boxes.astype("float32"), "labels": labels,
                                      "difficult": numpy.zeros(len(labels), bool)})
        s["img"] = ((s["img"].astype("float32") - 120) / 60).transpose(2, 0, 1)
        samples.append(s)
    batch = {k: framework.to_tensor(v) for k, v in task.collate_fn(samples).items()}
    optimizer = framework.optimizer.Adam(learning_rate=0.01, parameters=task.model.parameters())
    losses = []
    for _ in range(8):
        loss = task.loss(batch)
        losses.append(float(loss.numpy()))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    assert losses[-1] < 0.7 * losses[0]


def test_oar_run_prints_one_line_per_box():
    result = {"boxes": [[1, 2.25, 30, 40], [5, 6, 7, 8]], "labels": ["star", "ring"], "scores": [0.9, 0.51234]}
    assert format_result(result) == "star 0.900 1.0,2.2,30.0,40.0\nring 0.512 5.0,6.0,7.0,8.0"
    assert format_result({"boxes": [], "labels": [], "scores": []}) == ""
