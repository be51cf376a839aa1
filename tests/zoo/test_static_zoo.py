"""The zoo runs its models through traced programs: outputs equal the eager model's, bit for bit, for every
shipped model on inputs of several sizes; `oar export` writes a directory that `oar run DIR` and
`zoo.load(DIR)` serve, and `--runtime onnxruntime` gives the same results."""
import os
import shutil

import pytest

import zoo
from video.data.synthetic import make_synthetic_set
from zoo.catalog import cards

from .test_cli import oar

TEXTS = ["今天是个好日子", "这家酒店的服务太差了，再也不来了", "好", "中国人民银行在北京召开会议。百度是一家高科技公司。"]
PAIRS = [["今天天气很好", "今天天气很好啊"], ["我想买手机", "哪里卖苹果"], ["好", "不好吧我觉得是这样的"]]
SHIPPED = [name for name, entry in cards().items() if entry.kind != "official"]
IMAGES = [os.path.join(os.path.dirname(__file__), "..", "..", "examples", "detection", "JPEGImages", f"0000{i}.jpg")
          for i in (16, 17, 18)]


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    root = tmp_path_factory.mktemp("clips")
    make_synthetic_set(str(root), 3, seed=5, workers=1)
    return [str(root / "videos" / f"{i:06d}.mp4") for i in range(3)]


@pytest.mark.parametrize("name", SHIPPED)
def test_static_predictions_equal_eager_ones_at_several_sizes(name, clips):
    static, eager = zoo.load(name), zoo.load(name, static=False)
    inputs = {"matching": PAIRS, "video": clips, "detection": IMAGES}.get(static.card.task, TEXTS)
    for chosen in (inputs, inputs[:1], inputs[1:]):
        assert static.predict(chosen) == eager.predict(chosen)
    assert len(static.model.programs) == 1 and not static.model.fallbacks


def test_an_export_directory_runs_without_the_catalog(tmp_path):
    code, _, err = oar("export", "senta_cnn", "--output", str(tmp_path / "senta"))
    assert code == 0, err
    assert {"manifest.json", "config.yaml", "program", "weights.npz", "vocab.txt"} <= set(os.listdir(tmp_path / "senta"))
    moved = shutil.move(str(tmp_path / "senta"), str(tmp_path / "elsewhere"))    # nothing points back
    text = ["这家酒店的服务太差了", "房间干净，早餐也很好吃"]
    code, from_dir, err = oar("run", moved, "--input_text", *text, cwd=str(tmp_path))
    assert code == 0, err
    assert from_dir == oar("run", "senta_cnn", "--input_text", *text)[1]
    task = zoo.load(moved)
    assert task.predict(text) == zoo.load("senta_cnn").predict(text) and len(task.model.programs) == 1
    code, _, err = oar("export", "senta_cnn", "--output", str(tmp_path))     # a directory with other files
    assert code == 2 and "is not an export directory" in err


def test_onnx_export_and_the_onnxruntime_runtime_give_the_same_results(tmp_path):
    pytest.importorskip("onnxruntime")
    code, _, err = oar("export", "lac_pku", "--output", str(tmp_path / "lac"), "--format", "onnx")
    assert code == 0, err
    assert os.path.isfile(tmp_path / "lac" / "model.onnx")
    text = ["中国人民银行在北京召开会议。", "今天是个好日子"]
    env = {"OAR_HOME": str(tmp_path / "home")}
    code, through_ort, err = oar("run", "lac_pku", "--runtime", "onnxruntime", "--input_text", *text, env=env)
    assert code == 0, err
    assert through_ort == oar("run", "lac_pku", "--input_text", *text)[1]
    assert os.listdir(tmp_path / "home" / "onnx")                               # exported once, kept
    code, _, err = oar("run", "lac_pku", "--eager", "--runtime", "onnxruntime", "--input_text", "好")
    assert code == 2 and "--eager" in err
