"""`oar list`, `oar show`, `oar run` on the official LAC card, and their errors."""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _oar(*args):
    return subprocess.run([sys.executable, "-m", "zoo.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_list_and_show_name_the_cards():
    listed = _oar("list")
    assert listed.returncode == 0 and any(line.startswith("lac ") for line in listed.stdout.splitlines())
    shown = _oar("show", "lac")
    assert shown.returncode == 0 and "loader: nlp.lac.official:load_official_task" in shown.stdout


def test_run_lac_prints_word_tag_pairs_and_json():
    result = _oar("run", "lac", "--input_text", "百度是一家高科技公司")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "百度/ORG 是/v 一家/m 高科技/n 公司/n"
    as_json = json.loads(_oar("run", "lac", "--input_text", "今天是个好日子", "--json").stdout)
    assert as_json == {"words": ["今天", "是", "个", "好日子"], "tags": ["TIME", "v", "q", "n"]}


def test_unknown_model_and_missing_file_give_one_line():
    unknown = _oar("run", "lacc", "--input_text", "x")
    assert unknown.returncode == 2 and "did you mean lac" in unknown.stderr
    missing = _oar("run", "lac", "--input_file", "no_such_file.txt")
    assert missing.returncode == 2 and missing.stderr.strip() == "error: input file not found: no_such_file.txt"


def test_run_refuses_empty_inputs_and_the_wrong_kind_before_loading(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    cases = [(["senta_bilstm", "--input_text", "好", "  "], "error: --input_text: input 2 is empty"),
             (["senta_bilstm", "--input_file", str(blank)], f"error: --input_file {blank}: no inputs"),
             (["senta_bilstm", "--input_path", "clip.mp4"],
              "error: senta_bilstm is a sentiment model: give text with --input_text or --input_file, not --input_path"),
             (["tsm_synth", "--input_text", "你好"],
              "error: tsm_synth is a video model: give files with --input_path, not text")]
    for argv, message in cases:
        result = _oar("run", *argv)
        assert result.returncode == 2 and result.stderr.strip() == message, result.stderr


def test_repeated_override_flags_all_apply():
    from zoo.commands import _parser
    args = _parser("train", checkpoint=False).parse_args(
        ["-c", "x.yaml", "-o", "model.a=1", "model.b=2", "-o", "train.epochs=3"])
    assert args.override == ["model.a=1", "model.b=2", "train.epochs=3"]
