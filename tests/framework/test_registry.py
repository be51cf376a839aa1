"""framework.registry: registration forms, duplicate and unknown names, build with key and type checks."""
import pytest

from framework import registry
from framework.config import ConfigError
from framework.registry import Registry, RegistryError


@pytest.fixture
def models():
    table = Registry("MODELS")

    @table.register
    class BiGRUCRF:
        def __init__(self, vocab_size, hidden_size=128, dropout=0.1, name="tagger"):
            self.vocab_size, self.hidden_size, self.dropout, self.name = vocab_size, hidden_size, dropout, name

    @table.register("textcnn")
    def build_textcnn(num_classes: int, **kwargs):
        return ("textcnn", num_classes, kwargs)

    return table


def test_register_forms_and_lookup(models):
    @models.register(name="bow")
    def bow():
        return "bow"

    def linear():
        return "linear"

    assert models.register(linear) is linear
    assert models.names() == ["BiGRUCRF", "bow", "linear", "textcnn"]
    assert "bow" in models and "missing" not in models and len(models) == 4
    assert models.get("bow")() == "bow"


def test_duplicate_name_is_an_error(models):
    with pytest.raises(RegistryError, match="'textcnn' is already registered"):
        models.register(lambda: None, name="textcnn")


def test_unknown_type_lists_known_types_and_close_match(models):
    with pytest.raises(RegistryError) as info:
        models.build({"type": "BiGRUCFR"}, where="exp.yaml, section 'model'")
    message = str(info.value)
    assert "unknown MODELS type 'BiGRUCFR' in exp.yaml" in message
    assert "did you mean 'BiGRUCRF'?" in message and "known types: BiGRUCRF, textcnn" in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, ConfigError)


def test_empty_registry_hints_at_imports():
    with pytest.raises(RegistryError, match="none \\(is the package that registers them imported\\?\\)"):
        Registry("METRICS").get("Accuracy")


def test_build_with_defaults_and_config_winning(models):
    model = models.build({"type": "BiGRUCRF", "vocab_size": 100, "hidden_size": 64}, hidden_size=32, dropout=0.5)
    assert (model.vocab_size, model.hidden_size, model.dropout) == (100, 64, 0.5)


def test_build_does_not_modify_the_config(models):
    cfg = {"type": "BiGRUCRF", "vocab_size": 10}
    models.build(cfg)
    assert cfg == {"type": "BiGRUCRF", "vocab_size": 10}


def test_unknown_key_names_key_type_place_and_closest(models):
    with pytest.raises(ConfigError) as info:
        models.build({"type": "BiGRUCRF", "vocab_size": 10, "hiden_size": 3}, where="exp.yaml, section 'model'")
    message = str(info.value)
    assert "unknown key 'hiden_size'" in message and "type 'BiGRUCRF'" in message and "exp.yaml" in message
    assert "did you mean 'hidden_size'?" in message


def test_kwargs_builders_take_any_key_but_annotations_are_checked(models):
    assert models.build({"type": "textcnn", "num_classes": 2, "extra": 1}) == ("textcnn", 2, {"extra": 1})
    with pytest.raises(ConfigError, match="'num_classes' .* must be an integer, got '2'"):
        models.build({"type": "textcnn", "num_classes": "2"})


def test_numeric_default_rejects_the_string_float(models):
    with pytest.raises(ConfigError, match=r"'dropout' .* got '1e-1'.*write 1\.0e-1"):
        models.build({"type": "BiGRUCRF", "vocab_size": 10, "dropout": "1e-1"})


def test_missing_type_is_a_config_error(models):
    with pytest.raises(ConfigError, match="needs|must be a mapping with a 'type' key"):
        models.build({"hidden_size": 3})


def test_module_level_registries_exist():
    for table in (registry.MODELS, registry.DATASETS, registry.METRICS, registry.TASKS, registry.TRANSFORMS,
                  registry.OPTIMIZERS, registry.SCHEDULERS):
        assert isinstance(table, Registry)
