"""``zoo.lac.LAC``, the drop-in for LAC 2.1.2's ``from LAC import LAC``: LAC's return types and official values
(data/lac_compat_official.jsonl, lines of the official samples), user dictionaries with and without ``sep`` equal
to what LAC 2.1.2 returns (data/lac_compat_golden.json, written by data/lac_compat_golden.py in the reference
environment), LAC's training-file rules, and a short ``train`` whose directory ``LAC(model_path=…)`` and the
installed ``oar run`` load. Tests that need the official model skip when it can be neither fetched nor found in
the cache; the seg and rank modes skip while their zoo cards are missing."""
import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy
import pytest

from framework.fetch import FetchError
from nlp.lac.official_train import TrainingFileError, TrainingFileWarning, chunk_scores, read_training_file
from zoo import catalog
from zoo.lac import LAC, LACError, MODES

DATA = os.path.join(os.path.dirname(__file__), "data")
OAR = shutil.which("oar", path=os.path.dirname(sys.executable)) or shutil.which("oar")
TRAIN_LINES = ["百度/ORG 是/v 一家/m 高科技/n 公司/n",
               "春天/SEASON 的/u 花开/n 秋天/TIME 的/u 风/n",
               "我/r 爱/v 北京/LOC 天安门/LOC"]


def _official(mode):
    with open(os.path.join(DATA, "lac_compat_official.jsonl"), encoding="utf-8") as f:
        return [row for row in map(json.loads, f) if row["mode"] == mode]


@pytest.fixture(scope="module")
def golden():
    with open(os.path.join(DATA, "lac_compat_golden.json"), encoding="utf-8") as f:
        return json.load(f)


def _lac(mode="lac", **options):
    """``LAC(mode=mode)``, or a skip when the official model can be neither fetched nor found in the cache."""
    if MODES[mode] not in catalog.cards():
        pytest.skip(f"the zoo has no {MODES[mode]!r} card yet")
    try:
        return LAC(mode=mode, **options)
    except FetchError as err:
        pytest.skip(f"the official LAC model cannot be fetched here and is not cached ({str(err).split('. ')[0]})")


@pytest.fixture(scope="module")
def lac():
    return _lac()


def _assert_lac_types(result, parts):
    assert type(result) is list and len(result) == parts
    for part in result:
        assert type(part) is list


def test_run_str_and_list_give_lac_types_and_official_values(lac):
    rows = _official("lac")
    texts = [row["text"] for row in rows]
    batch = lac.run(texts)
    assert type(batch) is list and len(batch) == len(rows)
    for row, result in zip(rows, batch):
        _assert_lac_types(result, 2)
        assert result == [row["words"], row["tags"]]
        assert lac.run(row["text"]) == result
    assert lac.run(tuple(texts)) == batch
    assert lac.run([]) == []


def test_run_matches_lac_on_texts_and_empty_strings(lac, golden):
    assert lac.run(golden["texts"]) == golden["run_list"]
    assert lac.run(golden["texts"][1]) == golden["run_str"]
    assert lac.run("") == golden["run_empty_str"] == [[], []]
    texts = ["", golden["texts"][0], ""]
    assert lac.run(texts) == [[[], []], golden["run_list"][0], [[], []]]
    assert texts == ["", golden["texts"][0], ""]                   # the caller's list is left as it is


@pytest.mark.parametrize("name", ["whitespace", "comma"])
def test_load_customization_matches_lac(tmp_path, golden, name):
    entry = golden["dictionaries"][name]
    path = tmp_path / "custom.txt"
    path.write_text("\n".join(entry["lines"]) + "\n", encoding="utf-8")
    lac = _lac()
    lac.load_customization(str(path), sep=entry["sep"])
    assert lac.run(golden["texts"]) == entry["run"]
    lac.load_customization(str(tmp_path / "custom.txt"), sep="|" if entry["sep"] is None else None)
    assert lac.run(golden["texts"]) != entry["run"]                # a new dictionary replaces the old one


def test_add_word_rewrites_the_output():
    lac = _lac()
    lac.add_word("落阳/SUNSET")
    words, tags = lac.run("春天的花开秋天的风以及冬天的落阳")
    assert (words[-1], tags[-1]) == ("落阳", "SUNSET")


@pytest.mark.parametrize("mode,parts", [("seg", 1), ("rank", 3)])
def test_seg_and_rank_give_lac_types_and_official_values(mode, parts):
    lac = _lac(mode)
    rows = _official(mode)
    keys = ("words",) if mode == "seg" else ("words", "tags", "rank")
    expected = [row["words"] if mode == "seg" else [row[key] for key in keys] for row in rows]
    assert lac.run([row["text"] for row in rows]) == expected
    assert lac.run(rows[0]["text"]) == expected[0]
    if parts > 1:
        _assert_lac_types(expected[0], parts)


def test_unknown_mode_and_training_a_seg_model_are_one_line_errors():
    with pytest.raises(LACError, match="mode must be one of 'lac', 'seg', 'rank'"):
        LAC(mode="pos")
    lac = LAC.__new__(LAC)
    lac.mode = "seg"
    with pytest.raises(LACError, match="only mode 'lac' trains"):
        lac.train("out", "train.txt")


def test_training_file_follows_lac_reader(tmp_path, lac):
    path = tmp_path / "train.txt"
    path.write_text("百度/ORG 是/v 一家/m 高科技/n 公司/n\n\n春天/SEASON 的/u\n坏行 没有斜杠\n", encoding="utf-8")
    task = lac._trainable_task()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = read_training_file(str(path), task.tables, task.conf_files["label_dict_file"])
    assert [str(w.message) for w in caught] == [f"{path}:4: item '坏行' is not word/tag; line skipped"]
    assert len(samples) == 2
    tag_id = {name: i for i, name in enumerate(task.tables.tag_names)}
    ids, lengths = task.preprocessor.encode("百度是一家高科技公司")
    assert samples[0]["tokens"].tolist() == ids
    chars = ["ORG-B", "ORG-I", "v-B", "m-B", "m-I", "n-B", "n-I", "n-I", "n-B", "n-I"]
    firsts = numpy.cumsum(lengths) - numpy.array(lengths)
    assert samples[0]["labels"].tolist() == [tag_id[chars[i]] for i in firsts]    # an id's first character
    spring = task.preprocessor.encode("春天的")[0]
    assert samples[1]["tokens"].tolist() == spring
    assert samples[1]["labels"].tolist() == [tag_id["O"], tag_id["u-B"]]    # SEASON is not in tag.dic: O
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    with pytest.raises(TrainingFileError, match="no word/tag line"):
        read_training_file(str(empty), task.tables, task.conf_files["label_dict_file"])


def test_chunk_scores_follow_paddle_chunk_eval():
    # 5 tags: a-B a-I b-B b-I O; gold chunks (0,2,a) (3,4,b); predicted (0,1,a) (1,2,a) (3,4,b)
    precision, recall, f1 = chunk_scores([[0, 0, 4, 2]], [[0, 1, 4, 2]], 5)
    assert (precision, recall) == (1 / 3, 1 / 2)
    assert f1 == pytest.approx(0.4)
    assert chunk_scores([[1, 3]], [[1, 3]], 5) == (1.0, 1.0, 1.0)  # an -I after another type opens a chunk


def test_train_saves_a_run_directory_that_lac_and_oar_run_load(tmp_path, capsys, lac):
    train = tmp_path / "train.txt"
    train.write_text("\n".join(TRAIN_LINES) + "\n", encoding="utf-8")
    trainee = _lac()
    trainee.train(str(tmp_path / "my_lac"), str(train), test_data=str(train), iter_num=1, thread_num=1)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all(line.startswith("[test] P: ") for line in printed)
    assert sorted(os.listdir(tmp_path / "my_lac")) == ["assets.json", "config.yaml", "last.npz", "paths.json",
                                                        "q2b.dic", "small_seg.dic", "tag.dic", "word.dic"]
    text = "我爱北京天安门"
    after = trainee.run([text])
    loaded = LAC(model_path=str(tmp_path / "my_lac"))
    assert loaded.run([text]) == after
    words, tags = loaded.run(text)
    assert "".join(words) == text and len(tags) == len(words) and all(type(t) is str for t in tags)
    trained = loaded.task.model.state_dict()["crf.transition"].numpy()
    assert not numpy.array_equal(trained, lac.task.model.state_dict()["crf.transition"].numpy())
    done = subprocess.run([OAR, "run", str(tmp_path / "my_lac"), "--input_text", text], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"{w}/{t}" for w, t in zip(words, tags)]
