"""framework.config: _base_ inheritance, _delete_, overrides, key and type checks, error messages."""
import textwrap

import pytest

from framework.config import (ConfigError, apply_overrides, check_keys, check_type, dump_config, load_config,
                              location, merge, parse_overrides, signature_keys)


def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def chain(tmp_path):
    """runtime.yaml <- model.yaml <- experiments/exp.yaml (two levels of _base_)."""
    _write(tmp_path, "_base_/runtime.yaml", """
        train: {epochs: 10, batch_size: 32, eval_every: 1}
        optimizer: {type: Adam, lr: 1.0e-3, betas: [0.9, 0.999]}
        """)
    _write(tmp_path, "_base_/model.yaml", """
        _base_: runtime.yaml
        model: {type: bigru_crf, hidden: 128, layers: {num: 2, bidirectional: true}}
        train: {epochs: 20}
        """)
    return _write(tmp_path, "experiments/exp.yaml", """
        _base_: [../_base_/model.yaml]
        model: {hidden: 256}
        optimizer: {_delete_: true, type: SGD, lr: 0.1}
        metrics: [{type: Accuracy}]
        """)


def test_two_levels_of_base_merge_in_order(chain):
    cfg = load_config(chain)
    assert cfg["model"] == {"type": "bigru_crf", "hidden": 256, "layers": {"num": 2, "bidirectional": True}}
    assert cfg["train"] == {"epochs": 20, "batch_size": 32, "eval_every": 1}
    assert cfg["metrics"] == [{"type": "Accuracy"}]
    assert cfg["_source_"] == str(chain)


def test_delete_replaces_the_inherited_dict(chain):
    assert load_config(chain)["optimizer"] == {"type": "SGD", "lr": 0.1}


def test_bases_merge_in_list_order(tmp_path):
    _write(tmp_path, "a.yaml", "train: {epochs: 1, seed: 1}\n")
    _write(tmp_path, "b.yaml", "train: {epochs: 2}\n")
    path = _write(tmp_path, "c.yaml", "_base_: [a.yaml, b.yaml]\n")
    assert load_config(path)["train"] == {"epochs": 2, "seed": 1}


def test_a_resolved_config_read_without_bases_refuses_a_base(tmp_path):
    (tmp_path / "base.yaml").write_text("model: {hidden: 8}\n")
    (tmp_path / "run.yaml").write_text("_base_: base.yaml\ntask: {type: T}\n")
    (tmp_path / "plain.yaml").write_text("task: {type: T}\n")
    assert load_config(tmp_path / "run.yaml")["model"] == {"hidden": 8}
    assert load_config(tmp_path / "plain.yaml", bases=False)["task"] == {"type": "T"}
    with pytest.raises(ConfigError, match=r"run.yaml: a run's resolved config cannot name a _base_"):
        load_config(tmp_path / "run.yaml", bases=False)


def test_merge_rules_and_no_mutation():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    override = {"a": {"y": [3]}, "c": {"_delete_": True, "z": 1}}
    out = merge(base, override)
    assert out == {"a": {"x": 1, "y": [3]}, "b": 1, "c": {"z": 1}}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert override["c"] == {"_delete_": True, "z": 1}


def test_overrides_scalars_lists_and_new_nested_keys(chain):
    cfg = load_config(chain, ["train.epochs=3", "model.hidden=512", "data.sizes=[1, 2]",
                              "data.train.path=corpus.txt", "optimizer.lr=1e-4", "train.amp=true"])
    assert cfg["train"]["epochs"] == 3 and cfg["model"]["hidden"] == 512
    assert cfg["data"] == {"sizes": [1, 2], "train": {"path": "corpus.txt"}}
    assert cfg["optimizer"]["lr"] == pytest.approx(1e-4) and isinstance(cfg["optimizer"]["lr"], float)
    assert cfg["train"]["amp"] is True


def test_parse_overrides_nests_keys():
    assert parse_overrides(["a.b.c=1", "a.d=x"]) == {"a": {"b": {"c": 1}, "d": "x"}}


def test_a_json_list_override_keeps_paths_with_commas_and_colons():
    import json
    paths = ["/data/a, b/lexicon.txt", "C:\\words: all [v2].txt"]
    assert parse_overrides([f"task.lexicon_file={json.dumps(paths)}"]) == {"task": {"lexicon_file": paths}}


@pytest.mark.parametrize("bad, words", [("train.epochs", "section.key=value"), ("=3", "section.key=value"),
                                        ("a..b=1", "section.key=value"), ("a=[1, 2", "bad YAML")])
def test_bad_override_is_one_clear_error(bad, words):
    with pytest.raises(ConfigError, match=words) as info:
        parse_overrides([bad])
    assert bad in str(info.value)


def test_override_through_a_scalar_is_an_error():
    with pytest.raises(ConfigError, match="'train.epochs' holds 3"):
        apply_overrides({"train": {"epochs": 3}}, ["train.epochs.x=1"])


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found: .*nope.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_missing_base_names_the_referencing_file(tmp_path):
    path = _write(tmp_path, "exp.yaml", "_base_: [base/missing.yaml]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "missing.yaml" in message and f"listed in _base_ of {path}" in message


def test_bad_yaml_names_file_line_and_column(tmp_path):
    path = _write(tmp_path, "bad.yaml", "model:\n  type: x\n  hidden: [1, 2\ntrain: {}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert f"bad YAML in {path}, line " in message and "column" in message
    assert len(message.splitlines()) == 1


def test_unreadable_path_is_one_clear_error(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ConfigError, match="cannot read config file .*dir.yaml"):
        load_config(tmp_path / "dir.yaml")


def test_section_that_is_not_a_mapping(tmp_path):
    with pytest.raises(ConfigError, match="exp.yaml, section 'model' must be a mapping of keys, got \\[1, 2\\]"):
        check_keys([1, 2], ["hidden"], "exp.yaml, section 'model'")


def test_top_level_must_be_a_mapping(tmp_path):
    path = _write(tmp_path, "list.yaml", "- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping of sections.*got a list"):
        load_config(path)


def test_inheritance_cycle_is_detected(tmp_path):
    _write(tmp_path, "a.yaml", "_base_: b.yaml\n")
    path = _write(tmp_path, "b.yaml", "_base_: a.yaml\n")
    with pytest.raises(ConfigError, match="cycle: b.yaml -> a.yaml -> b.yaml"):
        load_config(path)


def test_empty_file_is_an_empty_config(tmp_path):
    assert load_config(_write(tmp_path, "empty.yaml", "")) == {"_source_": str(tmp_path / "empty.yaml")}


def test_unknown_key_names_key_file_and_closest(chain):
    cfg = load_config(chain)
    cfg["model"]["hiden_size"] = 3
    with pytest.raises(ConfigError) as info:
        check_keys(cfg["model"], ["type", "hidden", "hidden_size", "layers"], location(cfg, "model"))
    message = str(info.value)
    assert "unknown key 'hiden_size'" in message and str(chain) in message and "section 'model'" in message
    assert "did you mean 'hidden_size'?" in message


def test_unknown_key_without_close_match_lists_valid_keys():
    with pytest.raises(ConfigError, match=r"unknown key 'zzz' in x\.yaml \(valid keys: a, b\)"):
        check_keys({"zzz": 1}, ["b", "a"], "x.yaml")


def test_check_type_explains_the_yaml_float_gotcha(tmp_path):
    path = _write(tmp_path, "lr.yaml", "optimizer: {lr: 1e-4}\n")
    cfg = load_config(path)
    assert cfg["optimizer"]["lr"] == "1e-4"
    with pytest.raises(ConfigError, match=r"'lr' in .*lr.yaml.* must be a number, got '1e-4'.*write 1\.0e-4"):
        check_type(cfg["optimizer"]["lr"], float, "lr", location(cfg, "optimizer"))


def test_check_type_accepts_and_rejects():
    assert check_type(3, float, "lr", "x") == 3
    assert check_type(None, (int, type(None)), "k", "x") is None
    with pytest.raises(ConfigError, match="must be an integer, got True"):
        check_type(True, int, "hidden", "x")
    with pytest.raises(ConfigError, match="must be a string, got 3"):
        check_type(3, str, "name", "x")


def test_signature_keys():
    class Model:
        def __init__(self, hidden, layers=1, *, dropout=0.0):
            pass

    def anything(**kwargs):
        pass

    assert signature_keys(Model) == ["hidden", "layers", "dropout"]
    assert signature_keys(anything) is None


def test_dump_config_round_trips(chain, tmp_path):
    cfg = load_config(chain)
    out = tmp_path / "run" / "config.yaml"
    dump_config(cfg, out)
    again = load_config(out)
    assert {k: v for k, v in again.items() if k != "_source_"} == {k: v for k, v in cfg.items() if k != "_source_"}
    assert "_source_" not in out.read_text()


def test_references_follow_overrides_and_copy_values(tmp_path):
    path = _write(tmp_path, "refs.yaml", """
        data:
          train: {path: a.tsv, sizes: [1, 2]}
          eval: {path: "${data.train.path}", sizes: "${data.train.sizes}"}
        task: {corpus: "${data.eval.path}", note: "not ${data.train.path} alone"}
        """)
    cfg = load_config(path)
    assert cfg["task"] == {"corpus": "a.tsv", "note": "not ${data.train.path} alone"}
    assert cfg["data"]["eval"]["sizes"] == [1, 2] and cfg["data"]["eval"]["sizes"] is not cfg["data"]["train"]["sizes"]
    assert load_config(path, ["data.train.path=mine.tsv"])["task"]["corpus"] == "mine.tsv"


@pytest.mark.parametrize("text, words", [
    ("task: {corpus: '${data.train.path}'}\ndata: {train: {}}\n", "'task.corpus' refers to '${data.train.path}', "
                                                                  "but the config has no 'data.train.path'"),
    ("a: {x: '${b.y}'}\nb: {y: '${a.x}'}\n", "references form a cycle: b.y -> a.x -> b.y"),
])
def test_bad_references_name_the_key(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="bad.yaml") as err:
        load_config(path)
    assert words in str(err.value)


def test_registry_takes_null_where_the_default_is_none():
    from framework.registry import Registry
    registry = Registry("THINGS")

    @registry.register()
    class Thing:
        def __init__(self, path: str = None, size: int = 3):
            self.path, self.size = path, size

    assert registry.build({"type": "Thing", "path": None}).path is None
    assert registry.build({"type": "Thing", "path": "a.npz"}).path == "a.npz"
    with pytest.raises(ConfigError, match="'path' .* must be a string or null, got 3"):
        registry.build({"type": "Thing", "path": 3})
    with pytest.raises(ConfigError, match="'size' .* must be an integer, got None"):
        registry.build({"type": "Thing", "size": None})
