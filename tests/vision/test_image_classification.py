"""ImageClassification task and TopKAccuracy: loss, batch predictions, raw-input predictions, metric values."""
import numpy
import pytest

import framework
from framework.config import ConfigError
from framework.engine.task import to_tensors
from framework.errors import InputError
from vision.data import require_cv2
from vision.metrics import TopKAccuracy
from vision.models import resnet18
from vision.tasks import ImageClassification
from vision.tasks.image_classification import class_names_of


def _task(**kwargs):
    framework.seed(0)
    return ImageClassification(resnet18(num_classes=3, base_channels=4), class_names=["a", "b", "c"],
                               image_size=32, resize=36, **kwargs)


def test_loss_and_batch_predictions():
    task = _task()
    rng = numpy.random.default_rng(0)
    batch = to_tensors({"img": rng.standard_normal((4, 3, 32, 32)).astype("float32"),
                        "label": numpy.array([0, 1, 2, 1])})
    loss = task.loss(batch)
    assert loss.shape == () and 0.0 < loss.item() < 10.0
    task.model.eval()
    with framework.no_grad():
        outputs = task.predict_batch(batch)
    numpy.testing.assert_allclose(outputs["prob"].numpy().sum(axis=1), 1.0, rtol=1e-5)
    numpy.testing.assert_array_equal(outputs["pred"].numpy(), outputs["prob"].numpy().argmax(axis=1))


def test_raw_inputs_give_top_k_labels(tmp_path):
    cv2 = require_cv2()
    path = str(tmp_path / "x.png")
    cv2.imwrite(path, numpy.full((50, 40, 3), 128, numpy.uint8))
    task = _task(topk=2)
    with open(path, "rb") as f:
        encoded = f.read()
    results = task.predict_raw([path, numpy.zeros((20, 30, 3), numpy.uint8), encoded])
    assert len(results) == 3 and results[2] == results[0]
    for result in results:
        (best, p1), (second, p2) = result["topk"]
        assert result["label"] == best and result["score"] == p1 and p1 >= p2 and best in "abc"
    ranked = task.predict([path], top_k=3)[0]["topk"]                      # every class, best first
    assert ranked[:2] == results[0]["topk"] and len(ranked) == 3 and task.predict([path], top_k=1)[0]["topk"] == \
        results[0]["topk"][:1]
    with pytest.raises(InputError, match="top_k must be an integer >= 1"):
        task.predict([path], top_k=0)
    with pytest.raises(InputError, match=r"input 0: an image input must be .* a uint8 RGB array \(H, W, 3\), "
                                         r"got float32"):
        task.predict_raw([numpy.zeros((20, 30), numpy.float32)])


def test_class_names_must_fit_the_model():
    with pytest.raises(ConfigError, match="2 class_names for a model with 3 classes; set model.num_classes: 2"):
        ImageClassification(resnet18(num_classes=3, base_channels=4), class_names=["a", "b"])


def test_class_names_from_a_file_or_an_image_folder_go_into_the_run_directory(tmp_path):
    folder = tmp_path / "images"
    for name in ("zebra", "cat", "dog", ".cache"):
        (folder / name).mkdir(parents=True)
    listed = tmp_path / "names.txt"
    listed.write_text("tulip\n\nrose\ndaisy\n", encoding="utf-8")
    assert class_names_of(str(folder)) == ["cat", "dog", "zebra"]        # sorted, as ImageFolder numbers them
    assert class_names_of(str(listed)) == ["tulip", "rose", "daisy"]
    for source, names in ((str(folder), ["cat", "dog", "zebra"]), (str(listed), ["tulip", "rose", "daisy"])):
        task = ImageClassification(resnet18(num_classes=3, base_channels=4), class_names=source)
        run = tmp_path / f"run_{len(source)}"
        run.mkdir()
        assert task.class_names == names
        assert task.save_assets(str(run)) == {"task.class_names": str(run / "class_names.txt")}
        again = ImageClassification(resnet18(num_classes=3, base_channels=4), class_names=str(run / "class_names.txt"))
        assert again.class_names == names
    assert _task().save_assets(str(tmp_path)) == {}                        # names listed in the config: no file
    with pytest.raises(ConfigError, match="class_names file or image folder not found"):
        class_names_of(str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"class names repeat .*\['a'\]"):
        class_names_of(["a", "b", "a"])


def test_top_k_accuracy_values_and_merging():
    scores = numpy.array([[0.1, 0.5, 0.4], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5], [0.4, 0.4, 0.2]])
    labels = numpy.array([2, 0, 0, 1])  # ranks 1, 0, 2, 1 (the tie 0.4 goes to the lower class 0)
    metric = TopKAccuracy(topk=[1, 2, 5])
    metric.update({"prob": scores}, {"label": labels})
    assert metric.compute() == {"top1": 0.25, "top2": 0.75, "top5": 1.0}
    constant = TopKAccuracy(topk=[1])
    constant.update({"prob": numpy.full((3, 4), 0.25)}, {"label": numpy.array([0, 1, 3])})
    assert constant.compute() == {"top1": pytest.approx(1 / 3)}          # constant scores are not all right
    other = TopKAccuracy(topk=[1, 2, 5])
    other.update({"prob": scores[:1]}, {"label": numpy.array([1])})
    merged = TopKAccuracy(topk=[1, 2, 5])
    merged.set_state({k: metric.state()[k] + other.state()[k] for k in metric.counters})
    assert merged.compute() == {"top1": 2 / 5, "top2": 4 / 5, "top5": 1.0}
    with pytest.raises(ValueError, match="must be \\(N, classes\\) for 3 labels"):
        metric.update({"prob": scores}, {"label": labels[:3]})
