"""``lac_seg`` and ``lac_small`` in the zoo: the engines' outputs through the traced program, eagerly, on ONNX
Runtime, from an ONNX export and from ``oar serve``, in batches and streamed; ``oar run`` with them and with
``--user_dict`` (the installed console script: exit status, stdout, one-line errors). Skips when the official
files can be neither fetched nor found in the cache."""
import importlib.util
import json

import pytest

import zoo
from tests.nlp.lac.engine_golden import engine_rows, fetched_or_skip

from .serving.conftest import ServerProcess, httpx
from .test_cli import assert_one_error_line, oar

MODELS = ("lac_seg", "lac_small")
RUNTIMES = [{}, {"static": False}] + ([{"runtime": "onnxruntime"}] if importlib.util.find_spec("onnxruntime") else [])


@pytest.fixture(scope="module")
def rows():
    """``{model: [(text, expected)]}``: the engines' answers, without the 10,000-character line (kept fast)."""
    return {name: [(t, e) for t, e in engine_rows(name) if len(t) < 10000] for name in MODELS}


@pytest.fixture(scope="module", autouse=True)
def fetched():
    for name in MODELS:
        fetched_or_skip(f"the files of {name}", lambda: zoo.load(name, static=False))


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("options", RUNTIMES, ids=lambda o: next(iter(o.values()), "static"))
def test_every_runtime_gives_the_engines_output_in_batches_and_streamed(name, options, rows):
    task = zoo.load(name, **options)
    texts, expected = [t for t, _ in rows[name]], [e for _, e in rows[name]]
    assert task.predict(texts) == expected
    assert task.predict(texts, batch_size=1) == expected
    assert list(task.predict_iter(iter(texts), batch_size=7)) == expected


@pytest.mark.skipif(not importlib.util.find_spec("onnxruntime"), reason="needs the export extra")
@pytest.mark.parametrize("name", MODELS)
def test_onnx_export_decodes_to_the_engines_output(name, rows, tmp_path):
    code, _, err = oar("export", name, "--output", str(tmp_path / name), "--format", "onnx")
    assert code == 0, err
    task = zoo.load(str(tmp_path / name), runtime="onnxruntime")
    assert task.predict([t for t, _ in rows[name]]) == [e for _, e in rows[name]]
    interface = json.loads((tmp_path / name / "onnx_interface.json").read_text(encoding="utf-8"))
    assert interface["labels"] == task.tag_names
    assert interface["postprocess"]["words"]["rule"] == task.word_rule


def test_served_models_answer_as_the_engines(rows):
    server = ServerProcess(*MODELS)
    try:
        for name in MODELS:
            texts, expected = [t for t, _ in rows[name][:12]], [e for _, e in rows[name][:12]]
            answer = httpx.post(f"{server.url}/v1/models/{name}:predict", json={"instances": texts}, timeout=60)
            assert answer.status_code == 200 and answer.json()["predictions"] == expected
    finally:
        code, _, err = server.stop()
    assert code == 0, err


def test_oar_run_lac_seg_prints_words(rows):
    code, out, err = oar("run", "lac_seg", "--input_text", "百度是一家高科技公司", " 今天 是 好日子 ")
    assert code == 0, err
    assert out.splitlines() == ["百度 是 一家 高科技 公司", "今天 是 好日子"]
    code, out, _ = oar("run", "lac_seg", "--json", "--input_file", "-", stdin="百度是一家高科技公司\n\n")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"input": "百度是一家高科技公司", "words": ["百度", "是", "一家", "高科技", "公司"]}, {"input": ""}]


@pytest.mark.parametrize("name, plain, with_dict", [
    ("lac", "百度/ORG 是/v 一家/m 高科技/n 公司/n", "百度/ORG 是/v 一家/m 高科技公司/COMPANY"),
    ("lac_seg", "百度 是 一家 高科技 公司", "百度 是 一家 高科技公司"),
])
def test_oar_run_user_dict(tmp_path, name, plain, with_dict):
    path = tmp_path / "user.dic"
    path.write_text("高科技公司/COMPANY\n", encoding="utf-8")
    assert oar("run", name, "--input_text", "百度是一家高科技公司")[1] == plain + "\n"
    code, out, err = oar("run", name, "--input_text", "百度是一家高科技公司", "--user_dict", str(path))
    assert (code, out) == (0, with_dict + "\n"), err


def test_oar_run_user_dict_errors(tmp_path):
    good, bad = tmp_path / "user.dic", tmp_path / "bad.dic"
    good.write_text("高科技公司\n", encoding="utf-8")
    bad.write_text("高科技公司\n春天/\n", encoding="utf-8")
    assert_one_error_line(*oar("run", "lac_small", "--input_text", "x", "--user_dict", str(good))[::2], 2,
                          "--user_dict", "lac_small", "applies no user dictionary")
    assert_one_error_line(*oar("run", "senta_bow", "--input_text", "x", "--user_dict", str(good))[::2], 2,
                          "senta_bow", "--user_dict is for lexical analysis models")
    assert_one_error_line(*oar("run", "lac", "--input_text", "x", "--user_dict", str(bad))[::2], 1,
                          f"{bad}:2", "empty tag")
    assert_one_error_line(*oar("run", "lac", "--input_text", "x", "--user_dict", str(tmp_path / "no.dic"))[::2], 1,
                          "no.dic")
