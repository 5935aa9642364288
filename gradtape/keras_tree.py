"""``keras.tree``: Keras 3's utilities for nested structures (``gt.keras.tree``).

Keras' rules, which differ from ``tf.nest``'s in places: lists, tuples, named tuples and
dicts are nodes; a plain ``dict`` (and a ``defaultdict``) is walked in sorted key order, an
``OrderedDict`` in its own order; everything else, ``None`` included, is a leaf (``None`` is
an empty node for ``map_structure(..., none_is_leaf=False)``). Structures given together must
match node for node: a list does not match a tuple, a dict matches any mapping with the same
keys. A rebuilt dict keeps the key order of the structure it was rebuilt from.
"""
from __future__ import annotations

import collections

__all__ = ["MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten",
           "flatten_with_path", "is_nested", "lists_to_tuples", "map_shape_structure",
           "map_structure", "map_structure_up_to", "pack_sequence_as", "traverse"]


class MAP_TO_NONE:  # noqa: N801 (Keras' name)
    """Returned by a :func:`traverse` function to put ``None`` in place of a subtree."""


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _keys(d):
    if isinstance(d, collections.OrderedDict):
        return list(d)
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _node(x, none_is_leaf=True):
    """``(keys, children)`` of a node, ``None`` for a leaf."""
    if isinstance(x, (list, tuple)):
        return list(range(len(x))), list(x)
    if isinstance(x, dict):
        keys = _keys(x)
        return keys, [x[k] for k in keys]
    if x is None and not none_is_leaf:
        return [], []
    return None


def _rebuild(like, keys, children):
    """A node of ``like``'s type holding ``children`` (listed in ``keys`` order)."""
    if isinstance(like, list):
        return type(like)(children) if type(like) is not list else list(children)
    if _is_namedtuple(like):
        return type(like)(*children)
    if isinstance(like, tuple):
        return tuple(children)
    if like is None:
        return None
    by_key = dict(zip(keys, children))
    items = [(k, by_key[k]) for k in like]  # the original key order
    if isinstance(like, collections.defaultdict):
        return type(like)(like.default_factory, items)
    if type(like) is dict:
        return dict(items)
    try:
        return type(like)(items)
    except TypeError:
        return dict(items)


def _match(first, other):
    """Check that ``other`` is a node like ``first``; its children in ``first``'s key order."""
    if isinstance(first, dict):
        if not isinstance(other, dict):
            raise ValueError(f"Expected an instance of dict, got {other!r}.")
        fk, ok = _keys(first), list(other)
        if set(fk) != set(ok):
            missing = [k for k in fk if k not in other]
            extra = [k for k in ok if k not in first]
            raise ValueError(
                f"dictionary key mismatch; expected key(s): {sorted(fk, key=repr)}, got key(s): "
                f"{sorted(ok, key=repr)}, missing key(s): {missing}, extra key(s): {extra}; "
                f"dict: {other!r}.")
        return [other[k] for k in fk]
    kind = type(first)
    if _is_namedtuple(first):
        ok = type(other) is kind
    elif isinstance(first, list):
        ok = isinstance(other, list)
    elif first is None:
        ok = other is None
    else:
        ok = isinstance(other, tuple) and not _is_namedtuple(other)
    if not ok:
        raise ValueError(f"Expected an instance of {kind.__name__}, got {other!r}.")
    if first is None:
        return []
    if len(other) != len(first):
        raise ValueError(f"{kind.__name__} arity mismatch; expected: {len(first)}, got: "
                         f"{len(other)}; {kind.__name__}: {other!r}.")
    return list(other)


def _walk(x, path, out, is_leaf=None, none_is_leaf=True):
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return
    node = _node(x, none_is_leaf)
    if node is None:
        out.append((path, x))
        return
    for k, c in zip(*node):
        _walk(c, path + (k,), out, is_leaf, none_is_leaf)


def is_nested(structure):
    """Whether ``structure`` is a list, tuple, named tuple or dict (not a leaf)."""
    return _node(structure) is not None


def flatten(structure):
    """The leaves of ``structure``, dicts in sorted key order; a leaf gives ``[leaf]``."""
    out = []
    _walk(structure, (), out)
    return [leaf for _, leaf in out]


def flatten_with_path(structure):
    """``[(path, leaf), ...]``, each path a tuple of the indices and keys leading to a leaf."""
    out = []
    _walk(structure, (), out)
    return out


def _map(func, structs, none_is_leaf, is_leaf=None):
    first = structs[0]
    node = None if is_leaf is not None and is_leaf(first) else _node(first, none_is_leaf)
    if node is None:
        if len(structs) > 1 and is_leaf is None and any(_node(s, none_is_leaf) is not None for s in structs[1:]):
            raise ValueError("Structures don't have the same nested structure.")
        return func(*structs)
    keys, children = node
    others = [_match(first, s) for s in structs[1:]]
    mapped = [_map(func, [c] + [o[i] for o in others], none_is_leaf, is_leaf)
              for i, c in enumerate(children)]
    return _rebuild(first, keys, mapped)


def map_structure(func, *structures, none_is_leaf=True):
    """``func`` applied to the matching leaves of ``structures``, in the first's structure."""
    if not structures:
        raise ValueError("Must provide at least one structure")
    return _map(func, list(structures), none_is_leaf)


def map_structure_up_to(shallow_structure, func, *structures):
    """``func`` applied to the subtrees of ``structures`` at the leaves of ``shallow_structure``."""
    if not structures:
        raise ValueError("Must provide at least one structure")
    return _map(lambda shallow, *args: func(*args), [shallow_structure] + list(structures),
                True, is_leaf=lambda s: _node(s) is None)


def assert_same_structure(a, b, check_types=None):
    """Raise ``ValueError`` unless ``a`` and ``b`` have the same nested structure (list and
    tuple differ). ``check_types`` is Keras' deprecated argument: types are always checked."""
    _map(lambda *_: None, [a, b], True)


def assert_same_paths(a, b):
    """Raise ``ValueError`` unless ``a`` and ``b`` have the same set of leaf paths."""
    a_paths = {p for p, _ in flatten_with_path(a)}
    b_paths = {p for p, _ in flatten_with_path(b)}
    if a_paths != b_paths:
        msg = "`a` and `b` don't have the same paths."
        if a_paths - b_paths:
            msg += f"\nPaths in `a` missing in `b`:\n{a_paths - b_paths}"
        if b_paths - a_paths:
            msg += f"\nPaths in `b` missing in `a`:\n{b_paths - a_paths}"
        raise ValueError(msg)


def pack_sequence_as(structure, flat_sequence):
    """``flat_sequence``'s items put back into ``structure``'s shape."""
    flat = list(flat_sequence)
    n = len(flatten(structure))
    if len(flat) < n:
        raise ValueError(f"Too few leaves for PyTreeSpec; expected: {n}, got: {len(flat)}.")
    if len(flat) > n:
        raise ValueError(f"Too many leaves for PyTreeSpec; expected: {n}.")
    it = iter(flat)
    return _map(lambda _: next(it), [structure], True)


def traverse(func, structure, top_down=True):
    """Visit every node and leaf. ``func`` returning ``None`` keeps (and, top down, descends
    into) the node; ``MAP_TO_NONE`` replaces it with ``None``; any other value replaces it
    (top down, without visiting its children). Bottom up, ``func`` sees the rebuilt node."""
    def children():
        node = _node(structure)
        if node is None:
            return structure
        keys, kids = node
        return _rebuild(structure, keys, [traverse(func, c, top_down) for c in kids])

    if top_down:
        ret = func(structure)
        if ret is None:
            return children()
    else:
        done = children()
        ret = func(done)
        if ret is None:
            return done
    return None if ret is MAP_TO_NONE else ret


def lists_to_tuples(structure):
    """``structure`` with every list (nested ones too) turned into a tuple."""
    return traverse(lambda x: tuple(x) if isinstance(x, list) else None, structure,
                    top_down=False)


def _is_shape(x):
    return isinstance(x, (list, tuple)) and all(isinstance(e, (int, type(None))) for e in x)


def map_shape_structure(func, structure):
    """``func`` applied to each shape (a list or tuple of ints and ``None``) in ``structure``."""
    return _map(func, [structure], True, is_leaf=_is_shape)
