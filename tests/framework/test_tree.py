"""framework.tree: one walker for nested tuples, lists, dicts and None (flatten, unflatten, map, paths, JSON form)."""
import collections

import pytest

from framework.tree import (TreeFormatError, tree_flatten, tree_from_json, tree_leaves, tree_leaves_with_path,
                            tree_map, tree_to_json, tree_unflatten)

Pair = collections.namedtuple("Pair", "left right")
TREE = {"a": (1, [2, 3]), "b": None, "c": Pair(4, {"d": 5})}


def test_flatten_lists_the_leaves_in_order_and_unflatten_rebuilds_the_structure():
    leaves, spec = tree_flatten(TREE)
    assert leaves == [1, 2, 3, 4, 5] and spec.num_leaves == 5
    rebuilt = tree_unflatten([10, 20, 30, 40, 50], spec)
    assert rebuilt == {"a": (10, [20, 30]), "b": None, "c": Pair(40, {"d": 50})}
    assert type(rebuilt["a"]) is tuple and type(rebuilt["a"][1]) is list and type(rebuilt["c"]) is Pair
    with pytest.raises(ValueError, match="5 leaves, got 2"):
        tree_unflatten([1, 2], spec)


def test_map_keeps_none_and_containers_and_is_leaf_stops_the_walk():
    assert tree_map(lambda x: x * 2, TREE) == {"a": (2, [4, 6]), "b": None, "c": Pair(8, {"d": 10})}
    assert tree_map(str, None) is None and tree_map(lambda x: x + 1, 1) == 2
    assert tree_leaves([(1, 2), [3]], is_leaf=lambda v: isinstance(v, tuple)) == [(1, 2), 3]


def test_paths_name_the_indices_and_keys_to_each_leaf():
    assert tree_leaves_with_path(TREE) == [(("a", 0), 1), (("a", 1, 0), 2), (("a", 1, 1), 3), (("c", 0), 4),
                                           (("c", 1, "d"), 5)]
    assert tree_leaves_with_path(7) == [((), 7)]


def test_the_json_form_tags_tuples_and_dicts_and_reads_back():
    tree = ({"x": 0, "y": [1, None]}, 2)
    encoded = tree_to_json(tree, "slot")
    assert encoded == {"tuple": [{"dict": {"x": {"slot": 0}, "y": [{"slot": 1}, None]}}, {"slot": 2}]}
    assert tree_from_json(encoded, "slot") == tree
    assert tree_from_json(None, "slot") is None
    assert tree_from_json(tree_to_json(Pair(1, 2), "slot"), "slot") == (1, 2)      # saved as a plain tuple


@pytest.mark.parametrize("bad", [{"slot": "x"}, {"tuple": 3}, {"slot": 1, "dict": {}}, 5, {"other": 1}])
def test_the_json_form_refuses_anything_else(bad):
    with pytest.raises(TreeFormatError):
        tree_from_json(bad, "slot", check_leaf=lambda v: isinstance(v, int))
