"""Card kinds (zoo/card.py) and the one build (zoo/build.py): every card is trained, compressed or
official; each kind loads through build, and a compressed model exports and loads like a trained one."""
import json

import pytest
import yaml

import zoo
from zoo.build import LOADER_TASKS, LOADERS, build
from zoo.card import CARD_KINDS
from zoo.catalog import CatalogError, card, cards
from zoo.resolver import resolve


def test_every_card_has_one_kind_and_the_keys_of_its_kind():
    kinds = {name: entry.kind for name, entry in cards().items()}
    assert kinds["lac"] == "official" and kinds["senta_bow_distilled"] == "compressed"
    assert kinds["senta_bow"] == "trained"
    assert {name for name, kind in kinds.items() if kind == "compressed"} == \
        {name for name, entry in cards().items() if entry.compressed_from}
    assert all(card(name).loader in LOADERS for name, kind in kinds.items() if kind == "official")
    assert all(LOADER_TASKS[card(name).loader] == card(name).task for name, kind in kinds.items() if kind == "official")


@pytest.mark.parametrize("extra, message", [
    ({"config": "c.yaml", "loader": "official_lac"}, "exactly one of 'config' or 'base_config' or 'loader'"),
    ({}, "exactly one of"),
    ({"base_config": "c.yaml", "weights": {"path": "w.npz"}}, "card 'x': a compressed card needs 'compressed_from'"),
    ({"config": "c.yaml"}, "card 'x': a trained card needs 'weights'"),
    ({"loader": ["official_lac"]}, "'loader' must be str"),
])
def test_a_card_of_no_kind_or_missing_its_kind_s_keys_is_refused(tmp_path, extra, message):
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump([{"name": "x", "task": "sentiment", **extra}]))
    with pytest.raises(CatalogError, match=message):
        cards(str(path))
    assert set(CARD_KINDS) == {"trained", "compressed", "official"}


def test_build_gives_config_and_weights_for_weighted_kinds():
    entry = card("senta_bow_distilled")
    built = build(entry)
    assert entry.kind == "compressed" and built.cfg["model"]["type"] and built.weights.endswith(".npz")
    assert not built.task.model.training


def test_a_compressed_model_exports_with_its_config_and_loads_without_the_catalog(tmp_path):
    folder = str(tmp_path / "distilled")
    manifest = zoo.export("senta_bow_distilled", folder)
    assert manifest["card"]["base_config"] == "config.yaml" and manifest["card"]["weights"]
    assert manifest["card"]["compressed_from"] == card("senta_bow_distilled").compressed_from
    assert "config.yaml" in manifest["files"]
    with open(f"{folder}/manifest.json", encoding="utf-8") as f:
        assert "base_config" in json.load(f)["card"]
    assert resolve(folder).kind == "compressed" and resolve(folder).origin == "export"
    texts = ["这家店的菜很好吃", "服务太差了，再也不来", "还行吧"]
    assert zoo.load(folder).predict(texts) == zoo.load("senta_bow_distilled").predict(texts)
