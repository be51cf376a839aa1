"""docs/ONNX.md's programs, run on real exports in a process with no oar code, agree with `oar run DIR --json`.

One small zoo model per task family is exported with the installed ``oar export NAME --format onnx``; each
family's code block of docs/ONNX.md runs with ``python -I`` from a folder outside the repository, asserts
that none of oar's packages was imported, and prints one JSON result per input, compared with what
``oar run`` prints for the same inputs (labels, words and tags equal, scores within 1e-4).
"""
import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")

from zoo.onnx_interface import INTERFACE_FILE  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OAR_PACKAGES = ("framework", "zoo", "nlp", "video", "vision")
NO_OAR = f"\nimport sys\nassert not {{m.split('.')[0] for m in sys.modules}} & {set(OAR_PACKAGES)!r}\n"

TEXTS = ["这个东西很好用，推荐购买！", "ＷＩＦＩ信号太差 Bad！", "不推荐　购买", "一般"]
LAC_TEXTS = ["今天是个好日子，我们去北京天安门看升旗。", "ＡＢＣ公司在 上海 开会", "  我爱北京天安门  "]
PAIRS = ["今天天气很好\t今天天气很好啊", "我爱你\t他恨我", "ＡＢＣ的价格\tabc多少钱"]


def _blocks():
    """``{section heading: its python code block}`` of docs/ONNX.md."""
    with open(os.path.join(ROOT, "docs", "ONNX.md"), encoding="utf-8") as f:
        sections = f.read().split("\n## ")[1:]
    return {s.split("\n", 1)[0]: re.search(r"```python\n(.*?)```", s, re.S).group(1) for s in sections}


def _run(args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx_interface")


def _export(work, name):
    out = work / name
    if not out.exists():
        _run(["oar", "export", name, "--output", str(out), "--format", "onnx"], work)
    return str(out)


def _doc(work, heading, export, inputs):
    """The results of docs/ONNX.md's block under ``heading`` on ``inputs``, run with no oar code imported."""
    code = next(block for title, block in _blocks().items() if title.startswith(heading))
    script = work / f"{heading.split()[0].lower()}.py"
    script.write_text(code + NO_OAR, encoding="utf-8")
    return _run([sys.executable, "-I", str(script), export, *inputs], work)


def _oar(work, export, option, inputs):
    results = _run(["oar", "run", export, "--json", option, *inputs], work)
    return [{k: v for k, v in r.items() if k != "input"} for r in results]


def test_interface_file_is_recorded_and_describes_the_inputs(work):
    export = _export(work, "senta_bow")
    with open(os.path.join(export, "manifest.json"), encoding="utf-8") as f:
        assert INTERFACE_FILE in json.load(f)["files"]
    with open(os.path.join(export, INTERFACE_FILE), encoding="utf-8") as f:
        spec = json.load(f)
    assert [(i["name"], i["dtype"], i["shape"]) for i in spec["inputs"]] == \
        [("ids", "int64", ["batch", "seq"]), ("lengths", "int64", ["batch"])]
    assert spec["outputs"][0]["shape"] == ["batch", 2] and spec["outputs"][0]["kind"] == "logits"
    assert spec["labels"] == ["negative", "positive"]
    text = spec["preprocess"]["text"]
    assert text["vocabulary"]["pad"] == {"token": "<pad>", "id": 0} and text["vocabulary"]["file"] == "vocab.txt"
    assert text["normalization"]["map"] == [[0x3000, 0x3000, 0x20], [0xFF01, 0xFF5E, 0x21]]
    assert text["in_model"][0]["op"] == "HashedNgrams"


def test_sentiment(work):
    export = _export(work, "senta_bow")
    ours, theirs = _doc(work, "Sentiment", export, TEXTS), _oar(work, export, "--input_text", TEXTS)
    assert [r["label"] for r in ours] == [r["label"] for r in theirs]
    assert all(abs(a["score"] - b["score"]) < 1e-4 for a, b in zip(ours, theirs))
    assert len(ours) == len(TEXTS)


@pytest.mark.parametrize("name", ["simnet_bow_pointwise", "simnet_bow_pairwise"])
def test_matching(work, name):
    export = _export(work, name)
    ours, theirs = _doc(work, "Matching", export, PAIRS), _oar(work, export, "--input_text", PAIRS)
    assert len(ours) == len(PAIRS)
    assert [r["label"] for r in ours] == [r["label"] for r in theirs]
    assert all(abs(a["score"] - b["score"]) < 1e-4 for a, b in zip(ours, theirs))


def test_lexical_analysis(work):
    export = _export(work, "lac_pku")
    ours, theirs = _doc(work, "Lexical", export, LAC_TEXTS), _oar(work, export, "--input_text", LAC_TEXTS)
    assert ours == theirs and len(ours) == len(LAC_TEXTS)
    assert ours[0]["words"][:2] == ["今天", "是"]


def test_video(work):
    from video.data.synthetic import SyntheticSpec, make_synthetic_set
    make_synthetic_set(work / "square", 1, seed=0, workers=1)
    make_synthetic_set(work / "wide", 1, seed=1, spec=SyntheticSpec(width=(160, 160), height=(128, 128)), workers=1)
    paths = [str(work / folder / "videos" / "000000.mp4") for folder in ("square", "wide")]
    export = _export(work, "tsm_synth")
    ours, theirs = _doc(work, "Video", export, paths), _oar(work, export, "--input_path", paths)
    assert len(ours) == len(paths)
    for a, b in zip(ours, theirs):
        assert [c for c, _ in a["topk"]] == [c for c, _ in b["topk"]]
        assert all(abs(p - q) < 1e-4 for (_, p), (_, q) in zip(a["topk"], b["topk"]))
