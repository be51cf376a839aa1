"""The command surface: one module per command in a lazy table (compress in it), shared flags declared
once, and the reproduce variants as real flags of ``oar reproduce`` (the console script, in processes)."""
import argparse
import subprocess
import sys

import pytest

from zoo.cli import build_parser
from zoo.commands import COMMANDS

from .test_cli import ROOT, assert_one_error_line, oar


def test_every_command_is_a_module_of_the_table_with_its_flags_and_run():
    names = [command.name for command in COMMANDS]
    assert len(names) == len(set(names)) and "compress" in names
    for command in COMMANDS:
        module = command.load()
        assert callable(module.add_arguments) and callable(module.run), command.name
        module.add_arguments(argparse.ArgumentParser())


def test_the_parser_of_one_command_imports_only_that_command():
    script = ("import sys; from zoo.cli import build_parser; build_parser('oar', ['list']); "
              "print(sorted(m for m in sys.modules if m.startswith(('zoo.commands.', 'zoo.serving', 'zoo.slim', "
              "'zoo.bench', 'zoo.reproduce'))))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert loaded.stdout.strip() == "['zoo.commands.listing']", loaded.stdout


@pytest.mark.parametrize("command", ["train", "eval", "infer", "reproduce", "compress"])
def test_shared_flags_mean_the_same_everywhere(command):
    args = {"train": ["-c", "x.yaml"], "eval": [], "infer": ["--input_text", "x"], "reproduce": ["lac"],
            "compress": ["--model", "x"]}[command]
    parsed = build_parser().parse_args([command, *args, "-o", "a=1", "b=2", "--device", "cpu"])
    assert parsed.override == ["a=1", "b=2"] and parsed.device == "cpu"


def test_compress_is_an_ordinary_command():
    code, out, err = oar("compress", "--help")
    assert code == 0 and "--model" in out and "--report" in out
    code, out, _ = oar("--help")
    assert "compress" in out


@pytest.mark.parametrize("args, fragments", [
    (["reproduce", "senta", "--from_runs", "runs"], ("--from_runs", "target video or detection, not senta")),
    (["reproduce", "video", "--from_runs", "no/such/folder"], ("--from_runs no/such/folder: no such folder",)),
    (["reproduce", "video", "--cards", "senta_bow_distilled"], ("--cards", "target slim, not video")),
])
def test_reproduce_variants_are_checked_flags(args, fragments):
    code, out, err = oar(*args)
    assert_one_error_line(code, err, 2, *fragments)
    assert out == ""


def test_reproduce_slim_cards_refuses_a_card_that_is_not_compressed(tmp_path):
    code, out, err = oar("reproduce", "slim", "--cards", "senta_bow", "--dry_run", "--output_root", str(tmp_path))
    assert_one_error_line(code, err, 2, "--cards: not compressed cards: senta_bow", "senta_bow_distilled")
    assert out == ""
