"""The installed ``oar`` console script, run the way people script it: exit status, stdout, stderr, stdin.

Every call is a real process of the ``oar`` entry point that ``pip install``
puts beside the interpreter; nothing here calls the command's code in-process.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from zoo.catalog import card

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "configs", "_test", "tiny.yaml")
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")


def oar(*args, stdin=None, env=None, cwd=None):
    """``oar args…`` as a process: ``(exit status, stdout, stderr)``."""
    assert OAR, "the oar console script is not installed (pip install -e .)"
    result = subprocess.run([OAR, *args], input=stdin, capture_output=True, text=True, timeout=300,
                            cwd=cwd or ROOT, env={**os.environ, **(env or {})})
    return result.returncode, result.stdout, result.stderr


def assert_one_error_line(code, stderr, expected_code, *fragments):
    """The failure is ``expected_code`` with one ``oar…: error: …`` line on stderr holding every fragment."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == expected_code, stderr
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    assert ": error: " in lines[0], stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_help_version_and_usage_errors():
    code, out, _ = oar("--help")
    assert code == 0
    for command in ("list", "show", "run", "train", "eval", "infer", "reproduce", "bench"):
        assert any(line.split()[:1] == [command] and len(line.split()) > 1 for line in out.splitlines()), command
    code, out, _ = oar("--version")
    assert code == 0 and out.startswith("oar ") and out.split()[1][0].isdigit()
    assert oar()[0] == 2
    code, _, err = oar("frobnicate")
    assert code == 2 and "invalid choice: 'frobnicate'" in err
    code, _, err = oar("run", "lac_pku")
    assert code == 2 and "one of the arguments --input_text" in err


def test_list_fits_100_columns_and_has_wide_and_json_forms():
    code, out, err = oar("list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["name", "task", "metrics"] and max(len(line) for line in lines) <= 100
    names = [line.split()[0] for line in lines[1:]]
    assert {"lac", "lac_pku", "senta_bilstm", "simnet_cnn_pointwise", "tsm_synth"} <= set(names)
    code, out, _ = oar("list", "--json")
    cards = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [c["name"] for c in cards] == names and all("task" in c for c in cards)
    code, out, _ = oar("list", "--wide")
    assert code == 0 and out.splitlines()[0].split() == ["name", "task", "metrics", "source"]


def test_run_help_lists_the_models_by_task():
    code, out, _ = oar("run", "-h")
    assert code == 0
    sentiment = next(line for line in out.splitlines() if line.strip().startswith("sentiment:"))
    assert "senta_bilstm" in sentiment and "senta_bow" in sentiment


def test_show_prints_a_card_and_names_an_unknown_model():
    code, out, _ = oar("show", "lac_pku")
    assert code == 0 and "name: lac_pku" in out and "sha256" in out
    assert json.loads(oar("show", "lac_pku", "--json")[1]) == card("lac_pku").to_mapping()
    code, _, err = oar("show", "lac_pkuu")
    assert_one_error_line(code, err, 1, "unknown model 'lac_pkuu'", "did you mean lac_pku")


def test_run_succeeds_with_status_0_and_results_only_on_stdout():
    code, out, err = oar("run", "lac_pku", "--input_text", "中国人民银行在北京召开会议。")
    assert code == 0, err
    assert out == "中国/ns 人民/n 银行/n 在/p 北京/ns 召开/v 会议/n 。/w\n"
    assert "Traceback" not in err


def test_stdin_keeps_one_output_line_per_input_line_blank_lines_included():
    lines = ["今天是个好日子", "", "中国人民银行在北京召开会议。", "   ", "好"]
    code, out, err = oar("run", "lac_pku", "--input_file", "-", stdin="\n".join(lines) + "\n")
    assert code == 0, err
    outputs = out.split("\n")[:-1]
    assert len(outputs) == len(lines)
    assert outputs[0] == "今天/t 是/v 个/q 好日子/n" and outputs[1] == "" and outputs[3] == ""
    assert outputs[2] == "中国/ns 人民/n 银行/n 在/p 北京/ns 召开/v 会议/n 。/w"
    code, out, _ = oar("run", "lac_pku", "--input_file", "-", "--json", stdin="\n".join(lines))
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["input"] for r in records] == lines
    assert records[0]["words"] == ["今天", "是", "个", "好日子"] and "words" not in records[1]


def test_batching_by_length_keeps_input_order_and_values(tmp_path):
    texts = ["这家酒店的服务太差了", "好", "房间干净，早餐也很好吃，下次还会再来住的", "很差", "一般般吧"] * 7
    path = tmp_path / "reviews.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    code, batched, err = oar("run", "senta_bilstm", "--input_file", str(path), "--batch_size", "4", "--json")
    assert code == 0, err
    code, single, _ = oar("run", "senta_bilstm", "--input_text", *texts[:5], "--batch_size", "1", "--json")
    batched_records = [json.loads(line) for line in batched.splitlines()]
    single_records = [json.loads(line) for line in single.splitlines()]
    assert [r["input"] for r in batched_records] == texts
    for b, s in zip(batched_records[:5], single_records):
        assert b["label"] == s["label"] and b["score"] == pytest.approx(s["score"], abs=1e-5)
    assert batched_records[0]["label"] == "negative" and batched_records[2]["label"] == "positive"


def test_output_file_gets_the_results_and_stdout_stays_empty(tmp_path):
    target = tmp_path / "tags.txt"
    code, out, err = oar("run", "lac_pku", "--input_text", "今天是个好日子", "好", "--output", str(target))
    assert code == 0 and out == "", err
    assert target.read_text(encoding="utf-8").splitlines()[0] == "今天/t 是/v 个/q 好日子/n"


def test_text_in_another_encoding_names_file_line_and_byte(tmp_path):
    path = tmp_path / "gbk.txt"
    data = "质量很好，物流也快\n这家酒店的服务太差了\n".encode("gbk")
    path.write_bytes(data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        first_bad = err.start
    code, _, err = oar("run", "senta_bilstm", "--input_file", str(path))
    assert_one_error_line(code, err, 1, str(path), "line 1", f"offset {first_bad}", "--encoding")
    code, out, err = oar("run", "senta_bilstm", "--input_file", str(path), "--encoding", "gbk")
    assert code == 0 and [line.split("\t")[0] for line in out.splitlines()] == ["positive", "negative"], err
    code, _, err = oar("run", "senta_bilstm", "--input_file", str(path), "--encoding", "klingon")
    assert_one_error_line(code, err, 1, "unknown encoding")


def test_user_mistakes_give_one_line_and_status_1_or_2(tmp_path):
    code, _, err = oar("run", "lac_pku", "--input_file", str(tmp_path / "missing.txt"))
    assert_one_error_line(code, err, 1, "input file not found", "missing.txt")
    code, _, err = oar("run", "lac_pku", "--input_file", str(tmp_path))
    assert_one_error_line(code, err, 1, "is a directory")
    code, _, err = oar("run", "tsm_synth", "--input_text", "你好")
    assert_one_error_line(code, err, 2, "tsm_synth is a video model", "--input_path")
    code, _, err = oar("run", "senta_bilstm", "--input_path", "clip.mp4")
    assert_one_error_line(code, err, 2, "senta_bilstm is a sentiment model")
    code, _, err = oar("run", "senta_bilstm", "--input_text", "好", "--top_k", "2")
    assert_one_error_line(code, err, 2, "--top_k")
    code, _, err = oar("run", "senta_bilstm", "--input_text", "好", "--batch_size", "0")
    assert_one_error_line(code, err, 1, "--batch_size")


def test_a_matching_input_that_is_not_a_pair_is_one_line():
    code, out, err = oar("run", "simnet_cnn_pointwise", "--input_text", "今天天气很好\t今天天气很好啊",
                         "今天天气很好\t我不喜欢吃苹果", "--json")
    assert code == 0, err
    assert [json.loads(line)["label"] for line in out.splitlines()] == [1, 0]
    for bad in ("只有一句", "一\t二\t三"):
        code, _, err = oar("run", "simnet_cnn_pointwise", "--input_text", "今天\t明天", bad)
        assert_one_error_line(code, err, 1, "--input_text value 2", "text_a")


def test_debug_shows_the_traceback(tmp_path):
    code, _, err = oar("run", "lac_pku", "--input_file", str(tmp_path / "missing.txt"), env={"OAR_DEBUG": "1"})
    assert code == 1 and "Traceback" in err and "InputError" in err


def test_a_closed_stdout_ends_quietly(tmp_path):
    path = tmp_path / "many.txt"
    path.write_text("今天是个好日子\n" * 3000, encoding="utf-8")
    pipeline = f"'{OAR}' run lac_pku --input_file '{path}' --batch_size 8 | head -n 1"
    result = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.stdout == "今天/t 是/v 个/q 好日子/n\n" and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_run")
    code, stdout, err = oar("train", "-c", TINY, "--output_dir", str(out), "-o", "train.epochs=4")
    assert code == 0, err
    return out, json.loads(stdout.strip().splitlines()[-1])


def test_train_eval_infer_exit_0_with_json_on_stdout(tiny_run):
    out, summary = tiny_run
    assert summary["epoch"] == 4 and summary["best"] >= 0.85
    code, stdout, err = oar("eval", "-c", TINY, "--output_dir", str(out), "--split", "test")
    assert code == 0 and json.loads(stdout)["acc"] >= 0.8, err
    code, stdout, err = oar("infer", "--output_dir", str(out), "--input_text", "0.1 0.2", "1.9 0.3", "--json")
    records = [json.loads(line) for line in stdout.splitlines()]
    assert code == 0 and [r["input"] for r in records] == ["0.1 0.2", "1.9 0.3"], err
    assert err == ""                     # the run's own config: nothing to note
    code, again, _ = oar("infer", "-c", TINY, "--output_dir", str(out), "--input", "0.1 0.2", "1.9 0.3", "--json")
    assert code == 0 and again == stdout
    code, lines, _ = oar("infer", "--output_dir", str(out), "--input_file", "-", stdin="0.1 0.2\n\n1.9 0.3\n")
    assert code == 0 and len(lines.split("\n")[:-1]) == 3 and lines.split("\n")[1] == ""


def test_tools_scripts_share_the_exit_status(tiny_run):
    out, _ = tiny_run
    tool = [sys.executable, os.path.join(ROOT, "tools", "eval.py")]
    ok = subprocess.run([*tool, "-c", TINY, "--output_dir", str(out)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "acc" in json.loads(ok.stdout)
    bad = subprocess.run([*tool, "-c", TINY, "-o", "train.batch_sise=3"], capture_output=True, text=True,
                         timeout=300)
    assert_one_error_line(bad.returncode, bad.stderr, 1, "batch_sise", "batch_size")


def test_training_mistakes_are_one_line(tmp_path):
    code, _, err = oar("train", "-c", TINY, "--output_dir", str(tmp_path / "a"), "-o", "train.batch_size=0")
    assert_one_error_line(code, err, 1, "batch_size")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = oar("train", "-c", TINY, "--output_dir", str(blocker / "run"))
    assert_one_error_line(code, err, 1, str(blocker))
    code, _, err = oar("train", "-c", str(tmp_path / "nope.yaml"))
    assert_one_error_line(code, err, 1, "nope.yaml")
    code, _, err = oar("eval", "--output_dir", str(tmp_path))
    assert_one_error_line(code, err, 2, "config.yaml")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A real encoded 64x64 mp4 made by the project's own writer."""
    from tests.video.helpers import make_video
    path = tmp_path_factory.mktemp("clips") / "clip.mp4"
    make_video(str(path), num=16, size=64)
    return path


def test_video_models_take_top_k_and_report_motion_and_shape(clip):
    code, out, err = oar("run", "tsm_synth", "--input_path", str(clip), "--top_k", "3", "--json")
    record = json.loads(out)
    assert code == 0 and record["input"] == str(clip) and len(record["topk"]) == 3, err
    probs = [p for _, p in record["topk"]]
    assert probs == sorted(probs, reverse=True) and 0 < probs[0] <= 1
    code, out, err = oar("run", "attention_lstm_synth", "--input_path", str(clip), "--top_k", "2", "--json")
    record = json.loads(out)
    assert code == 0 and len(record["motion_topk"]) == 2 and len(record["shape_topk"]) == 2, err
    assert {label for label, _ in record["shape_topk"]} <= {"circle", "square", "triangle", "star", "cross", "ring"}
    code, out, _ = oar("run", "attention_lstm_synth", "--input_path", str(clip), "--top_k", "1")
    assert code == 0 and out.startswith("motion: ") and " | shape: " in out


def test_unreadable_videos_are_one_line(tmp_path, clip):
    data = clip.read_bytes()
    cases = {"empty.mp4": b"", "truncated.mp4": data[: len(data) // 3], "text.mp4": b"not a video at all\n"}
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        code, _, err = oar("run", "tsm_synth", "--input_path", str(clip), str(path))
        assert_one_error_line(code, err, 1, str(path))
    code, _, err = oar("run", "tsm_synth", "--input_path", str(tmp_path / "absent.mp4"))
    assert_one_error_line(code, err, 1, "absent.mp4")


@pytest.mark.parametrize("config, key", [("lac_own_data", "data.train.path"), ("sentiment_own_data", "data.train.path"),
                                         ("matching_own_data", "data.train.path"), ("image_own_data", "data.train.root")])
def test_a_missing_own_data_file_is_one_line(tmp_path, config, key):
    missing = tmp_path / "missing_data"
    code, _, err = oar("train", "-c", f"configs/examples/{config}.yaml", "--output_dir", str(tmp_path / "run"),
                       "-o", f"{key}={missing}")
    assert_one_error_line(code, err, 1, "not found", str(missing))
