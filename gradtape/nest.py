"""Nested structures (lists, tuples, namedtuples, dicts) of leaves, as ``tf.nest``."""
from __future__ import annotations


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def is_nested(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def flatten(structure) -> list:
    """Leaves in order; dicts are walked in sorted key order, as TensorFlow does."""
    if _is_flat(structure):
        return list(structure)   # the common case: a flat list or tuple of leaves
    out = []
    _flatten(structure, out)
    return out


_NESTED = (list, tuple, dict)


def _is_flat(s) -> bool:
    """A plain list or tuple (not a namedtuple) holding no nested structure."""
    t = type(s)
    if t is not list and t is not tuple:
        return False
    for v in s:   # (a plain loop: any() over a generator costs a frame per item)
        if isinstance(v, _NESTED):
            return False
    return True


def _flatten(s, out):
    if isinstance(s, dict):
        for k in _sorted_keys(s):
            _flatten(s[k], out)
    elif isinstance(s, (list, tuple)):
        for v in s:
            _flatten(v, out)
    else:
        out.append(s)


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def pack_sequence_as(structure, flat):
    """Rebuild ``structure`` with the leaves of ``flat`` (in :func:`flatten` order)."""
    if _is_flat(structure) and len(structure) == len(flat):
        return list(flat) if type(structure) is list else tuple(flat)
    it = iter(flat)
    result = _pack(structure, it)
    return result


def _pack(s, it):
    if isinstance(s, dict):
        vals = {k: _pack(s[k], it) for k in _sorted_keys(s)}
        return type(s)((k, vals[k]) for k in s) if type(s) is not dict else {k: vals[k] for k in s}
    if _is_namedtuple(s):
        return type(s)(*[_pack(v, it) for v in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_pack(v, it) for v in s)
    return next(it)


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure)])


def assert_same_structure(nest1, nest2, check_types=True) -> None:
    """Raise ``ValueError`` when the two structures differ in nesting or size, ``TypeError``
    when ``check_types`` and a sequence type differs (list against tuple), as ``tf.nest``."""
    _same(nest1, nest2, check_types, "")


def _kind(x):
    if isinstance(x, dict):
        return "dict"
    if isinstance(x, (list, tuple)):
        return "sequence"
    return None


def _seq_type(x):
    """What check_types compares: dicts (any mapping type) are alike, namedtuples by name and
    fields, lists and tuples by kind (subclasses alike)."""
    if isinstance(x, dict):
        return "dict"
    if _is_namedtuple(x):
        return ("namedtuple", type(x).__name__, tuple(x._fields))
    return "list" if isinstance(x, list) else "tuple"


def _same(a, b, check_types, path):
    ka, kb = _kind(a), _kind(b)
    where = f" at {path}" if path else ""
    if ka != kb:
        raise ValueError(f"The two structures don't have the same nested structure{where}: "
                         f"{type(a).__name__} and {type(b).__name__}")
    if ka is None:
        return
    if check_types and _seq_type(a) != _seq_type(b):
        raise TypeError(f"The two structures don't have the same sequence type{where}: "
                        f"{type(a).__name__} and {type(b).__name__}")
    if ka == "dict":
        if set(a) != set(b):
            raise ValueError(f"The two dictionaries don't have the same keys{where}: "
                             f"{sorted(map(str, a))} and {sorted(map(str, b))}")
        for k in _sorted_keys(a):
            _same(a[k], b[k], check_types, f"{path}[{k!r}]")
        return
    if len(a) != len(b):
        raise ValueError(f"The two structures don't have the same number of elements{where}: "
                         f"{len(a)} and {len(b)}")
    for i, (x, y) in enumerate(zip(a, b)):
        _same(x, y, check_types, f"{path}[{i}]")
