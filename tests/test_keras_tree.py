"""gt.keras.tree against Keras 3.15's keras.tree (the expected values below are Keras'): dict
order (sorted, OrderedDict's own), named tuples, None as a leaf or an empty node, paths,
traversal both ways, shapes as leaves, and the errors for structures that do not match."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import gradtape as gt

tree = gt.keras.tree
NT = collections.namedtuple("NT", "b a")


def _s():
    return {"b": [1, (2, None)], "a": NT(3, {"z": 4, "y": 5}),
            "c": collections.OrderedDict([("q", 6), ("p", 7)])}


def test_flatten_orders_and_paths():
    assert tree.flatten(_s()) == [3, 5, 4, 1, 2, None, 6, 7]
    assert tree.flatten_with_path(_s()) == [
        (("a", 0), 3), (("a", 1, "y"), 5), (("a", 1, "z"), 4), (("b", 0), 1),
        (("b", 1, 0), 2), (("b", 1, 1), None), (("c", "q"), 6), (("c", "p"), 7)]
    assert tree.flatten(None) == [None] and tree.flatten(1) == [1]
    assert tree.flatten([None, []]) == [None]
    assert tree.flatten({1: "a", 0: "b"}) == ["b", "a"]
    assert tree.flatten(collections.defaultdict(int, {"b": 1, "a": 2})) == [2, 1]
    assert tree.flatten_with_path(5) == [((), 5)]
    arr = tree.flatten(np.zeros(2))
    assert len(arr) == 1 and arr[0].shape == (2,)
    t = gt.constant([1.0, 2.0])
    assert tree.flatten({"x": t})[0] is t


def test_is_nested():
    assert [tree.is_nested(v) for v in (1, [], None, "ab", {}, (1,))] == \
        [False, True, False, False, True, True]


def test_map_structure_keeps_types_and_key_order():
    out = tree.map_structure(lambda x: None if x is None else x * 10, _s())
    assert list(out) == ["b", "a", "c"]
    assert out["b"] == [10, (20, None)]
    assert type(out["a"]) is NT and out["a"] == NT(30, {"z": 40, "y": 50})
    assert type(out["c"]) is collections.OrderedDict and list(out["c"].items()) == \
        [("q", 60), ("p", 70)]
    assert tree.map_structure(lambda x: 1, None) == 1
    # None is an empty node with none_is_leaf=False: func never sees it
    assert tree.map_structure(lambda x: x + 1, [1, None, (None,)], none_is_leaf=False) == \
        [2, None, (None,)]
    mixed = tree.map_structure(lambda a, b: a + b, {"a": 1, "b": 2},
                               collections.OrderedDict([("b", 3), ("a", 4)]))
    assert mixed == {"a": 5, "b": 5} and type(mixed) is dict


def test_pack_lists_to_tuples_and_shapes():
    packed = tree.pack_sequence_as(_s(), list(range(8)))
    assert packed["b"] == [3, (4, 5)] and packed["a"] == NT(0, {"z": 2, "y": 1})
    assert list(packed["c"].items()) == [("q", 6), ("p", 7)]
    assert tree.pack_sequence_as({"b": 0, "a": 0}, [1, 2]) == {"b": 2, "a": 1}
    assert tree.lists_to_tuples([[1, [2]], {"a": [3]}]) == ((1, (2,)), {"a": (3,)})
    got = tree.map_shape_structure(lambda sh: sum(x or 0 for x in sh),
                                   {"a": (1, 2), "b": [(3, None), [4]]})
    assert got == {"a": 3, "b": [3, 4]}
    assert tree.map_shape_structure(lambda s: ("shape", s), [(1, 2), 4]) == \
        [("shape", (1, 2)), ("shape", 4)]


def test_traverse():
    dbl = lambda x: x * 2 if isinstance(x, int) else None  # noqa: E731
    assert tree.traverse(dbl, [1, (2, 3)]) == [2, (4, 6)]
    assert tree.traverse(dbl, [1, (2, 3)], top_down=False) == [2, (4, 6)]
    drop = lambda x: tree.MAP_TO_NONE if isinstance(x, tuple) else None  # noqa: E731
    assert tree.traverse(drop, [1, (2, 3)]) == [1, None]
    assert tree.traverse(lambda x: 0 if isinstance(x, list) else None,
                         {"b": 1, "a": [2]}) == {"b": 1, "a": 0}
    seen = []
    tree.traverse(lambda x: seen.append(x), [1, (2,)], top_down=False)
    assert seen == [1, 2, (2,), [1, (2,)]]


def test_map_structure_up_to():
    got = tree.map_structure_up_to([1, 2], lambda a, b: (a, b), [[1, 2], 3], [[4, 5], 6])
    assert got == [([1, 2], [4, 5]), (3, 6)]
    with pytest.raises(ValueError, match="list arity mismatch; expected: 2, got: 1"):
        tree.map_structure_up_to([1, 2], lambda a: a, [1])


@pytest.mark.parametrize("call, message", [
    (lambda: tree.assert_same_structure([1, 2], [1]),
     r"list arity mismatch; expected: 2, got: 1; list: \[1\]\."),
    (lambda: tree.assert_same_structure([1, 2], (1, 2)),
     r"Expected an instance of list, got \(1, 2\)\."),
    (lambda: tree.assert_same_structure([1, [2]], [1, 2]), "Expected an instance of list, got 2"),
    (lambda: tree.assert_same_structure((1, 2), [1, 2]),
     r"Expected an instance of tuple, got \[1, 2\]"),
    (lambda: tree.assert_same_structure({"a": 1}, {"a": [1]}),
     "Structures don't have the same nested structure"),
    (lambda: tree.assert_same_paths({"a": 1}, {"b": 1}),
     r"don't have the same paths.\nPaths in `a` missing in `b`:\n\{\('a',\)\}\n"
     r"Paths in `b` missing in `a`:\n\{\('b',\)\}"),
    (lambda: tree.map_structure(lambda a, b: a, [1], [1, 2]), "expected: 1, got: 2"),
    (lambda: tree.map_structure(lambda a, b: a, {"a": 1}, {"b": 1}),
     r"dictionary key mismatch; expected key\(s\): \['a'\], got key\(s\): \['b'\], "
     r"missing key\(s\): \['a'\], extra key\(s\): \['b'\]"),
    (lambda: tree.map_structure(lambda a, b: a, 1, [1]),
     "Structures don't have the same nested structure"),
    (lambda: tree.pack_sequence_as([1, 2], [1]), "Too few leaves for PyTreeSpec; expected: 2, got: 1"),
    (lambda: tree.pack_sequence_as([1, 2], [1, 2, 3]), "Too many leaves for PyTreeSpec; expected: 2"),
    (lambda: tree.map_structure(lambda x: x), "Must provide at least one structure"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_same_structure_passes():
    assert tree.assert_same_structure([1, (2, {"a": 3})], [4, (5, {"a": None})]) is None
    assert tree.assert_same_paths({"a": 1}, {"a": 2}) is None
