"""`oar eval --output_dir RUN --test_file F` evaluates every example of a labelled file of the user's, for
every own-data example (tagging, sentiment, matching, video, images); a bad file, a split value or a label
count that does not fit is one `oar: error:` line; all through the installed console script."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
CONFIG = {name: f"configs/examples/{name}_own_data.yaml" for name in ("lac", "sentiment", "matching", "video", "image")}
QUICK = {"lac": ["model.emb_dim=8", "model.hidden=8"], "sentiment": [], "matching": [],
         "video": [], "image": ["train.batch_size=64"]}


ENV = dict(os.environ, OAR_PROGRESS="0")


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory):
    """The commands' $OAR_HOME: a folder of this module's own."""
    ENV["OAR_HOME"] = str(tmp_path_factory.mktemp("oar_home"))


def _oar(*argv):
    """The installed `oar` console script, run from the repository root (the configs name its files)."""
    return subprocess.run([OAR, *map(str, argv)], capture_output=True, text=True, cwd=ROOT, timeout=300, env=ENV)


def _metrics(*argv):
    """The one JSON line of a successful `oar eval`."""
    result = _oar("eval", *argv)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return json.loads(lines[0])


def _error(*argv):
    """The one `oar: error:` line of a command that fails on a user's mistake (exit status 1)."""
    result = _oar(*argv)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert len(lines) == 1 and lines[0].startswith("oar: error: "), result.stderr
    return lines[0][len("oar: error: "):]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One run directory per example config, trained for one epoch (a few seconds in all)."""
    folder = tmp_path_factory.mktemp("runs")
    for name, config in CONFIG.items():
        if name == "video" and not _has_video():
            continue
        result = _oar("train", "-c", config, "--output_dir", folder / name, "--quiet",
                      "-o", "train.epochs=1", *QUICK[name])
        assert result.returncode == 0, result.stderr
    return folder


def _has_video():
    try:
        import av, cv2  # noqa: F401,E401
    except ImportError:
        return False
    return True


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_a_sentiment_test_file_is_evaluated_on_every_line(runs, tmp_path):
    reviews = ["好用", "难用", "很好", "差", "不错", "坏了", "喜欢"]
    labels = [1, 0, 1, 0, 1, 0, 0]
    test = _write(tmp_path / "test.tsv", "label\ttext\n" + "".join(f"{y}\t{t}\n" for y, t in zip(labels, reviews)))
    inputs = _write(tmp_path / "texts.txt", "\n".join(reviews) + "\n")
    run = runs / "sentiment"
    predicted = _oar("infer", "--output_dir", run, "--input_file", inputs, "--json")
    assert predicted.returncode == 0, predicted.stderr
    names = [json.loads(line)["label"] for line in predicted.stdout.splitlines()]
    expected = sum((n == "positive") == bool(y) for n, y in zip(names, labels)) / len(labels)
    metrics = _metrics("--output_dir", run, "--test_file", test)
    assert metrics["acc"] == pytest.approx(expected)          # seven reviews: the i % 10 rule would keep one
    assert _metrics("--output_dir", run, "-o", f"data.test.path={test}") == metrics
    assert _metrics("-c", CONFIG["sentiment"], "--output_dir", run, "--test_file", test) == metrics


@pytest.mark.parametrize("name, make, line", [
    ("lac", lambda d: _write(d / "t.txt", "这/O 款/O 华为/BRAND\n黑色/COLOR 和/O\n手机/PRODUCT\n好/GOOD\n"),
     "{f}:4: tag 'GOOD' is not in the tag set of {run}/tags.txt (BRAND, COLOR, O, PRICE, PRODUCT)"),
    ("sentiment", lambda d: _write(d / "t.tsv", "1\t好\n0\t差\n1\t行\nmaybe\t嗯\n"),
     "{f}:4: label must be 0, 1, negative or positive, got 'maybe'"),
    ("matching", lambda d: _write(d / "t.tsv", "甲\t乙\t1\n丙\t丁\t0\n戊\t己\t2\n"),
     "{f}:3: the label (third field) must be 0 or 1, got '2'"),
    ("lac", lambda d: _write(d / "t.txt", ""), "{f}: no word/TAG sentences in the file"),
    ("sentiment", lambda d: d / "missing.tsv", "label file not found: {f}"),
])
def test_a_bad_test_file_is_one_line_naming_file_and_line(runs, tmp_path, name, make, line):
    path = make(tmp_path)
    message = _error("eval", "--output_dir", runs / name, "--test_file", path)
    assert message.startswith(line.format(f=path, run=runs / name))


def test_a_tagging_test_file_is_read_whole_with_the_runs_tag_set(runs, tmp_path):
    test = _write(tmp_path / "t.txt", "这/O 款/O 华为/BRAND 手机/PRODUCT\n黑色/COLOR 和/O 白色/COLOR\n")
    metrics = _metrics("--output_dir", runs / "lac", "--test_file", test)
    assert 0.0 <= metrics["pos_f1"] <= 1.0 and set(metrics) >= {"seg_f1", "pos_p", "pos_r"}
    assert _metrics("--output_dir", runs / "lac", "-o", f"data.test.path={test}") == metrics


def test_a_matching_test_file_is_evaluated_whole(runs):
    metrics = _metrics("--output_dir", runs / "matching", "--test_file", "examples/matching_dev.tsv")
    assert metrics == _metrics("--output_dir", runs / "matching")      # the dev file is data.eval, read whole


def test_an_image_test_folder_is_evaluated_whole(runs, tmp_path):
    folder = tmp_path / "images"
    for name in ("circle", "square", "triangle"):
        shutil.copytree(os.path.join(ROOT, "examples/images/val", name), folder / name)
    metrics = _metrics("--output_dir", runs / "image", "--test_file", folder)
    assert metrics == _metrics("--output_dir", runs / "image")         # the same 60 images as data.eval
    assert _metrics("--output_dir", runs / "image", "-o", f"data.test.root={folder}") == metrics
    (folder / "dog").mkdir()
    shutil.copy(folder / "circle" / "circle_0000.png", folder / "dog")
    assert "not in the list ['dog']" in _error("eval", "--output_dir", runs / "image", "--test_file", folder)


def test_a_video_test_list_is_read_relative_to_its_folder_with_the_runs_class_names(runs, tmp_path):
    if not _has_video():
        pytest.skip("reading videos needs the video extra")
    (tmp_path / "clips").mkdir()
    for clip in ("grow_3", "move_left_3", "rotate_clockwise_3", "grow_1"):
        shutil.copy(os.path.join(ROOT, f"examples/videos/clips/{clip}.mp4"), tmp_path / "clips")
    listed = _write(tmp_path / "test.txt", "clips/grow_3.mp4 grow\nclips/move_left_3.mp4 move_left\n"
                                           "clips/rotate_clockwise_3.mp4 rotate_clockwise\n")
    metrics = _metrics("--output_dir", runs / "video", "--test_file", listed)
    assert metrics == _metrics("--output_dir", runs / "video")          # the example's val list, moved here
    assert _metrics("--output_dir", runs / "video", "-o", f"data.test.list_file={listed}") == metrics
    bad = _write(tmp_path / "bad.txt", "clips/grow_1.mp4 grow\nclips/grow_3.mp4 jump\n")
    assert _error("eval", "--output_dir", runs / "video", "--test_file", bad) == (
        f"{bad}:2: label 'jump' is neither a class id nor a class name (grow, move_left, rotate_clockwise)")
    assert _error("eval", "--output_dir", runs / "video", "-o", f"data.test.path={listed}").endswith(
        "data.test.path names no file a dataset reads; give your labelled test file with --test_file F "
        "(or -o data.test.list_file=F)")


def test_a_run_without_a_test_section_points_at_test_file(runs):
    assert _error("eval", "--output_dir", runs / "sentiment", "--split", "test").endswith(
        "no data.test to evaluate on; give your labelled test file with --test_file F")


@pytest.mark.parametrize("name, key, value, accepted", [
    ("sentiment", "data.eval.split", "everything", "'train', 'dev', 'test', 'all', None"),
    ("lac", "data.eval.split", "val", "'train', 'dev', 'test', 'all'"),
    ("image", "data.eval.split", "test", "'all', 'train', 'eval'"),
])
def test_a_bad_split_value_is_one_line_naming_the_key_and_the_accepted_values(tmp_path, name, key, value, accepted):
    message = _error("train", "-c", CONFIG[name], "--output_dir", tmp_path, "-o", f"{key}={value}")
    assert message.startswith(f"{key} must be one of {accepted}, got {value!r}")


def test_split_all_evaluates_the_whole_file_while_training(tmp_path):
    result = _oar("train", "-c", CONFIG["sentiment"], "--output_dir", tmp_path, "--quiet",
                  "-o", "data.eval.split=all", "train.epochs=1")
    assert result.returncode == 0, result.stderr


def test_a_class_count_that_does_not_fit_the_model_is_one_line_before_the_first_step(tmp_path):
    if not _has_video():
        pytest.skip("reading videos needs the video extra")
    names = _write(tmp_path / "classes.txt", "grow\nmove_left\nrotate_clockwise\nspin\nfade\n")
    message = _error("train", "-c", CONFIG["video"], "--output_dir", tmp_path / "run",
                     "-o", f"data.train.class_names={names}")
    assert message.startswith(f"model.num_classes is 3 but data.train has 5 labels (the names in {names}); "
                              f"set model.num_classes: 5, or leave it out")
    assert not (tmp_path / "run" / "last.npz").exists()


def test_a_model_without_its_class_count_takes_it_from_the_data(tmp_path):
    import yaml
    with open(os.path.join(ROOT, CONFIG["image"]), encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    del cfg["model"]["num_classes"]
    cfg["train"].update(epochs=1, batch_size=64)
    config = tmp_path / "image.yaml"
    config.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    result = _oar("train", "-c", config, "--output_dir", tmp_path / "run", "--quiet")
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "run" / "config.yaml", encoding="utf-8") as f:
        assert yaml.safe_load(f)["model"]["num_classes"] == 3          # the three class folders
