"""Mixed precision (``gt.keras.mixed_precision``): dtype policies and autocasting, as Keras 3.

    gt.keras.mixed_precision.set_global_policy("mixed_float16")
    model = gt.keras.Sequential([gt.layers.Dense(64, activation="relu"),
                                 gt.layers.Dense(10),
                                 gt.layers.Activation("softmax", dtype="float32")])
    model.compile("adam", "sparse_categorical_crossentropy")   # wraps a LossScaleOptimizer

A :class:`DTypePolicy` names a layer's *variable* dtype (its weights) and its *compute* dtype
(its inputs, its arithmetic, its outputs): ``"float32"``, ``"float64"`` and ``"float16"`` are
one dtype for both, ``"mixed_float16"`` keeps float32 weights and computes in float16.
gradtape has no bfloat16 (NumPy and CuPy have none), so ``"mixed_bfloat16"`` and
``"bfloat16"`` are refused with that reason.

Layers get their policy from ``dtype=`` (a policy, or its name) or from the global policy
(:func:`set_global_policy`; by default the policy of ``keras.backend.floatx()``). A layer whose
compute and variable dtypes differ casts its floating inputs to the compute dtype and, while
its ``call`` runs, reads its float weights as casts to the compute dtype (Keras' autocast):

* **How.** :func:`enter` (called by ``Layer.__call__`` around ``call``) puts a cast of each
  float Variable that the layer holds (in attributes, lists, tuples, dicts, and sub-modules at
  any depth) where the Variable was, and :func:`leave` puts the Variables back, also when
  ``call`` raises. The casts are ops like any other, so a tape records them and the float32
  Variables get float32 gradients. Layer code reads ``self.kernel`` as usual and gets float16.
* **Nesting.** As Keras' ``AutocastScope``: inside a scope, a layer whose compute dtype
  differs from the scope's (``Dense(..., dtype="float32")`` in a mixed model) installs its own
  (for a float32 layer: the Variables themselves); a layer already covered by the scope of
  an enclosing call does nothing (one walk over the model per outermost call).
* **Layers Keras keeps in float32.** BatchNormalization, LayerNormalization,
  GroupNormalization (statistics in float32: float16 inputs are cast to float32, the weights
  are read as they are, the output is cast to the compute dtype) and Embedding (its table is
  gathered in float32, the output cast to the compute dtype), as Keras 3 does. A class can
  opt in or out with a ``_mixed_precision_float32`` attribute (True / False).
* **Layers that keep their input's dtype** (gradtape's ``autocast = False`` layers: Flatten,
  Dropout, Activation, Reshape ...) cast floating inputs to their compute dtype when a mixed
  policy is involved (their own, an enclosing mixed layer's, or a policy given explicitly
  where float16 meets another dtype): ``Activation("softmax", dtype="float32")`` after float16
  layers returns float32, as in Keras. Without mixed precision they keep their input's dtype,
  as before. Models and the functional API's input and operator layers never cast.
* **Cost.** Nothing at all for layers without a mixed policy outside a mixed scope: one
  attribute test and one list read per call. Weights added while ``call`` runs (rather than in
  ``build``) are not autocast in that call.
* **Threads.** The Variables are swapped on the layer object itself, so one model must not be
  called under a mixed policy from two threads at once.

``model.compile`` under ``"mixed_float16"`` wraps the optimizer in a
:class:`~gradtape.optimizers.LossScaleOptimizer` (Keras' ``auto_scale_loss``), and ``fit``
computes the losses and metrics in float32 and scales the loss.
"""
from __future__ import annotations

import re as _re
import threading
import weakref
from collections.abc import MutableMapping as _MutableMapping

import numpy as np

from . import nest as _nest
from .ops.core import cast as _cast
from .optimizers import LossScaleOptimizer

from .tensor import Tensor as _Tensor, Variable as _Variable, convert_to_tensor as _convert

__all__ = ["DTypePolicy", "Policy", "FloatDTypePolicy", "DTypePolicyMap", "serialize",
           "deserialize", "global_policy", "set_global_policy", "dtype_policy",
           "set_dtype_policy", "LossScaleOptimizer"]

_FLOATS = ("float16", "float32", "float64")
_MIXED = {"mixed_float16": ("float16", "float32")}
_NO_BFLOAT16 = ("gradtape has no bfloat16: NumPy and CuPy have no bfloat16 type; use "
                "'mixed_float16' (float16 compute, float32 variables) instead")


def _parse_name(name):
    """``(compute dtype, variable dtype)`` names for a policy name."""
    if not isinstance(name, str):
        raise TypeError(f"'name' must be a string, such as 'mixed_float16'. Received: "
                        f"name={name!r} (of type {type(name)})")
    if name in _MIXED:
        return _MIXED[name]
    if name in ("mixed_bfloat16", "bfloat16"):
        raise ValueError(f"Cannot use the dtype policy {name!r}: {_NO_BFLOAT16}")
    if name in _FLOATS:
        return name, name
    try:
        dt = np.dtype(name)
    except TypeError:
        dt = None
    if dt is not None and dt.kind != "f":
        raise ValueError(f"Cannot use the dtype policy {name!r}: gradtape's layers compute in "
                         f"a floating type; valid policies are 'mixed_float16' and one of "
                         f"{list(_FLOATS)}")
    raise ValueError(f"Cannot convert {name!r} to a mixed precision DTypePolicy. Valid "
                     f"policies include 'mixed_float16' and the name of a float dtype such "
                     f"as 'float32' ({list(_FLOATS)}; gradtape has no bfloat16).")


class DTypePolicy:
    """A layer's dtype policy (``keras.mixed_precision.DTypePolicy``, also ``Policy``).

    ``DTypePolicy("mixed_float16")`` computes in float16 and keeps float32 variables;
    ``DTypePolicy("float32")`` (``"float16"``, ``"float64"``) uses one dtype for both;
    ``DTypePolicy()`` is the global policy's. Layers take a policy or its name as ``dtype=``.
    """

    def __init__(self, name=None):
        if name is None:
            name = dtype_policy().name
        self._compute_dtype, self._variable_dtype = _parse_name(name)
        self._name = name

    @property
    def name(self) -> str:
        """The policy's name (``"mixed_float16"``)."""
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype of a layer's inputs, computations and outputs (a name, as Keras)."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of a layer's weights (a name, as Keras)."""
        return self._variable_dtype

    @property
    def quantization_mode(self):
        """``None``: gradtape has no quantized policies."""
        return None

    def get_config(self) -> dict:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'

    def __eq__(self, other):
        if not isinstance(other, DTypePolicy):
            return False
        return self._name == other._name

    def __hash__(self):
        return hash(("DTypePolicy", self._name))


Policy = DTypePolicy


class FloatDTypePolicy(DTypePolicy):
    """Keras 3's other name of :class:`DTypePolicy` (a subclass of it, as Keras')."""


class DTypePolicyMap(DTypePolicy, _MutableMapping):
    """Layer paths mapped to :class:`DTypePolicy` (``keras.dtype_policies.DTypePolicyMap``).

    A key is a layer path (``"encoder/dense"``) or a regular expression matched against the
    whole path (``"encoder/.*"``); lookup tries the exact key first, then the patterns (more
    than one matching is a ``ValueError``), then :attr:`default_policy`. A layer given a map
    as ``dtype=`` takes the entry for its name. As a policy itself, the map is its default's.
    """

    def __init__(self, default_policy=None, policy_map=None):
        if isinstance(default_policy, DTypePolicyMap):
            raise ValueError("`default_policy` cannot be a `DTypePolicyMap`.")
        if policy_map is not None and not isinstance(policy_map, dict):
            raise TypeError("If specified, `policy_map` must be a dict. Received: "
                            f"policy_map={policy_map} of type {type(policy_map)}")
        self._default_policy_arg = default_policy
        self._default_policy = get(default_policy) if default_policy is not None else None
        self._policy_map = {}
        for key, policy in (policy_map or {}).items():
            self[key] = policy

    @property
    def default_policy(self) -> DTypePolicy:
        """The policy of paths no key matches (the global policy when none was given)."""
        return self._default_policy if self._default_policy is not None else global_policy()

    @property
    def name(self) -> str:
        return f"map_{self.default_policy.name}"

    @property
    def _name(self):
        return self.name

    @property
    def compute_dtype(self) -> str:
        return self.default_policy.compute_dtype

    @property
    def variable_dtype(self) -> str:
        return self.default_policy.variable_dtype

    @property
    def _compute_dtype(self):
        return self.default_policy.compute_dtype

    @property
    def _variable_dtype(self):
        return self.default_policy.variable_dtype

    def __getitem__(self, key):
        if key in self._policy_map:
            return self._policy_map[key]
        matches = [p for p in self._policy_map if _re.fullmatch(p, key)]
        if len(matches) > 1:
            raise ValueError(f"Path '{key}' matches multiple dtype policy specification keys: "
                             f"{matches}. Please make sure each path only matches at most one "
                             "dtype policy specification key in the DTypePolicyMap.")
        return self._policy_map[matches[0]] if matches else self.default_policy

    def __setitem__(self, key, policy):
        if key in self._policy_map:
            raise ValueError(f"{key} already exist in the DTypePolicyMap with value "
                             f"{self._policy_map[key]}. Please make sure to not use "
                             "duplicated keys.")
        try:
            policy = get(policy)
        except Exception:
            raise ValueError("Cannot interpret the assigned value by `keras.dtype_policies."
                             f"get`. Received: {policy} of type {type(policy)}") from None
        self._policy_map[key] = policy

    def __delitem__(self, key):
        return self._policy_map.pop(key)

    def __contains__(self, key):
        return key in self._policy_map

    def __iter__(self):
        return iter(self._policy_map)

    def __len__(self):
        return len(self._policy_map)

    def get_config(self) -> dict:
        default = self._default_policy_arg
        if isinstance(default, DTypePolicy):
            default = serialize(default)
        return {"default_policy": default,
                "policy_map": {k: serialize(v) for k, v in self._policy_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("default_policy"), dict):
            config["default_policy"] = deserialize(config["default_policy"])
        config["policy_map"] = {k: deserialize(v) if isinstance(v, dict) else v
                                for k, v in (config.get("policy_map") or {}).items()}
        return cls(**config)

    def __repr__(self):
        return f"<DTypePolicyMap at {hex(id(self))}>"

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__


def serialize(dtype_policy) -> dict:
    """A policy's Keras config: ``{"module": "keras", "class_name": ..., "config": ...,
    "registered_name": None}``."""
    if not isinstance(dtype_policy, DTypePolicy):
        raise TypeError(f"serialize: expected a DTypePolicy, got {dtype_policy!r}")
    return {"module": "keras", "class_name": type(dtype_policy).__name__,
            "config": dtype_policy.get_config(), "registered_name": None}


_POLICY_CLASSES = {"DTypePolicy": DTypePolicy, "Policy": DTypePolicy,
                   "FloatDTypePolicy": FloatDTypePolicy, "DTypePolicyMap": DTypePolicyMap}


def deserialize(config, custom_objects=None):
    """The policy a :func:`serialize` config (or a policy name) stands for."""
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"deserialize: cannot interpret {config!r} as a dtype policy config")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _POLICY_CLASSES.get(name)
    if cls is None:
        raise ValueError(f"deserialize: unknown dtype policy class {name!r}; known: "
                         f"{sorted(_POLICY_CLASSES)}")
    return cls.from_config(config.get("config") or {})

#: The policy set by set_global_policy (None: floatx's).
_GLOBAL = [None]


def _floatx() -> str:
    from .layers import _FLOATX
    return _FLOATX[0]


def global_policy() -> DTypePolicy:
    """The policy of layers made without ``dtype=``: the one :func:`set_global_policy` set,
    else ``DTypePolicy(keras.backend.floatx())``."""
    policy = _GLOBAL[0]
    return policy if policy is not None else DTypePolicy(_floatx())


def set_global_policy(policy) -> None:
    """Set the policy of layers made from now on without ``dtype=``: a :class:`DTypePolicy`
    or its name (``"mixed_float16"``). ``None`` goes back to ``floatx()``'s policy (as
    tf.keras 2's; Keras 3 has no reset)."""
    if policy is None:
        _GLOBAL[0] = None
        return
    if isinstance(policy, str):
        policy = DTypePolicy(policy)
    elif not isinstance(policy, DTypePolicy):
        raise ValueError("Invalid `policy` argument. Expected the string name of a policy "
                         "(such as 'mixed_float16') or a `DTypePolicy` instance. Received: "
                         f"policy={policy!r} (of type {type(policy)})")
    _GLOBAL[0] = policy


dtype_policy = global_policy
set_dtype_policy = set_global_policy


def get(identifier) -> DTypePolicy:
    """A policy from a policy, its name, a NumPy / gradtape dtype, or a serialized policy
    (``{"class_name": "DTypePolicy", "config": {"name": ...}}``); ``None`` is the global
    policy."""
    if identifier is None:
        return global_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    if isinstance(identifier, dict):
        if identifier.get("class_name") in _POLICY_CLASSES:
            return deserialize(identifier)
        config = identifier.get("config", identifier)
        name = config.get("name") if isinstance(config, dict) else None
        if not isinstance(name, str):
            raise ValueError(f"Cannot interpret {identifier!r} as a dtype policy")
        return DTypePolicy(name)
    from .dtypes import np_dtype
    try:
        dt = np.dtype(np_dtype(identifier))
    except TypeError:
        raise TypeError(f"Cannot interpret {identifier!r} as a dtype policy: expected a "
                        "DTypePolicy, a policy name such as 'mixed_float16', or a float "
                        "dtype") from None
    return DTypePolicy(dt.name)


def is_mixed(policy) -> bool:
    return policy.compute_dtype != policy.variable_dtype


# --- the autocast scope ---------------------------------------------------------------------

_tls = threading.local()
#: Threads inside a scope now (while non-zero, Layer._mp_on is True).
_ACTIVE = [0]
_active_lock = threading.Lock()

# layer kinds
_PLAIN, _PRESERVE, _KEEP, _F32, _F32_ROUNDED = range(5)
_kinds: dict = {}


# gradtape.layers (which imports this module), bound on first use
_ly = None


def _bind_layers():
    global _ly
    from . import layers
    _ly = layers
    return layers


def _kind(cls) -> int:
    found = _kinds.get(cls)
    if found is not None:
        return found
    ly = _ly or _bind_layers()
    from . import layers_extra as lx
    flag = getattr(cls, "_mixed_precision_float32", None)
    if issubclass(cls, (ly.Model, ly.InputLayer, ly.TFOpLambda)):
        found = _KEEP
    elif flag is True or (flag is None and issubclass(cls, ly.BatchNormalization)):
        found = _F32_ROUNDED        # (autocast in Keras: the input is rounded to float16 first)
    elif flag is None and issubclass(cls, (ly.LayerNormalization, lx.GroupNormalization,
                                           ly.Embedding)):
        found = _F32
    elif not getattr(cls, "autocast", True):
        found = _PRESERVE
    else:
        found = _PLAIN
    _kinds[cls] = found
    return found


def in_scope() -> bool:
    """Whether a layer call under a mixed policy is running in this thread."""
    return getattr(_tls, "depth", 0) > 0


def takes_mixed_path(layer) -> bool:
    """Whether ``layer``'s call goes through this module: its policy asks for it, or a
    mixed call encloses it in this thread."""
    return bool(layer.__dict__.get("_mp_on")) or getattr(_tls, "depth", 0) > 0


def _activity(delta):
    """Count the threads inside a scope; ``Layer._mp_on`` is True while there are any."""
    ly = _ly or _bind_layers()
    with _active_lock:
        _ACTIVE[0] += delta
        ly.Layer._mp_on = _ACTIVE[0] > 0


def _state():
    try:
        return _tls.covered
    except AttributeError:
        _tls.depth = 0
        _tls.target = None
        _tls.covered = {}       # id(module) -> dtype its slots hold casts to
        _tls.origin = {}        # id(cast tensor) -> the Variable it reads
        _tls.refs = {}          # id(module) -> module (keeps the ids above valid)
        return _tls.covered


def _float16_involved(layer, x) -> bool:
    return x._value.dtype != layer._compute_dtype and (
        x._value.dtype == np.float16 or layer._compute_dtype == np.float16)


def prepare_input(layer, inputs, x):
    """What ``layer``'s ``call`` gets under mixed precision, from the caller's ``inputs``
    and ``x`` (``inputs`` after the layer's own conversion)."""
    Tensor, cast = _Tensor, _cast
    kind = _kinds.get(type(layer))
    if kind is None:
        kind = _kind(type(layer))
    if kind == _KEEP:
        return x
    if not isinstance(x, Tensor):            # a structure: its floats to the compute dtype
        if kind in (_F32, _F32_ROUNDED):
            return x
        return _cast_structure(x, layer._compute_dtype)
    if x._value.dtype.kind != "f":
        return x
    if kind == _F32 or kind == _F32_ROUNDED:
        if kind == _F32 and x is not inputs:
            # (autocast off in Keras: the caller's floats, not rounded to float16 first)
            src = inputs if isinstance(inputs, Tensor) else _convert(inputs)
            if src._value.dtype.kind == "f":
                x = src
        if x._value.dtype != layer._dtype:       # computed in the weights' dtype (float32)
            x = cast(x, layer._dtype)
        return x
    if kind == _PRESERVE and x._value.dtype != layer._compute_dtype and \
            not layer.__dict__.get("_mp_no_autocast"):
        if is_mixed(layer._dtype_policy) or in_scope() or _float16_involved(layer, x):
            return cast(x, layer._compute_dtype)
    return x


def _cast_structure(structure, dtype):
    """``structure`` with its floating tensors of another dtype cast to ``dtype`` (masks
    kept)."""
    ly = _ly or _bind_layers()

    def one(t):
        if isinstance(t, _Tensor) and t._value.dtype.kind == "f" and t._value.dtype != dtype:
            out = _cast(t, dtype)
            m = ly.get_mask(t)
            if m is not None:
                ly.set_mask(out, m)
            return out
        return t
    if isinstance(structure, _Tensor):
        return one(structure)
    flat = _nest.flatten(structure)
    new = [one(t) for t in flat]
    if all(a is b for a, b in zip(flat, new)):
        return structure
    return _nest.pack_sequence_as(structure, new)


def finish_output(layer, out):
    """A float32-computing layer's (BatchNormalization ...) floating outputs cast to its
    compute dtype."""
    kind = _kinds.get(type(layer))
    if kind is None:
        kind = _kind(type(layer))
    if kind != _F32 and kind != _F32_ROUNDED:
        return out
    return _cast_structure(out, layer._compute_dtype)


def _target(layer):
    """The dtype the variables are read as in ``layer``'s call (``False``: no scope to
    enter; ``None``: the Variables themselves)."""
    depth = getattr(_tls, "depth", 0)
    kind = _kinds.get(type(layer))
    if kind is None:
        kind = _kind(type(layer))
    off = kind in (_F32, _F32_ROUNDED) or layer.__dict__.get("_mp_no_autocast") or \
        layer._compute_dtype.kind != "f"
    if depth:
        if off:
            return None
        return layer._compute_dtype
    if off or layer._compute_dtype == layer._dtype:
        return False
    return layer._compute_dtype


def enter(layer):
    """Enter ``layer``'s autocast scope (see the module's doc); returns what :func:`leave`
    needs, or None when there is nothing to do."""
    target = _target(layer)
    if target is False:
        return None
    covered = _state()
    record = (_tls.target, [], [], [])
    first = _tls.depth == 0
    if covered.get(id(layer), None) != target:
        try:
            _install(layer, target, record)
        except BaseException:
            _undo(record)           # (a cast that failed: the layer is left as it was)
            raise
    _tls.target = target
    _tls.depth += 1
    if first:
        _activity(1)
    return record


def leave(record) -> None:
    """Undo :func:`enter`: the slots, the coverage and the scope's dtype as they were."""
    _undo(record)
    _tls.target = record[0]
    _tls.depth -= 1
    if _tls.depth == 0:
        _activity(-1)


def _undo(record) -> None:
    _, slots, coverage, made = record
    for container, key, old in reversed(slots):
        container[key] = old
    covered = _tls.covered
    refs = _tls.refs
    for mid, old in reversed(coverage):
        if old is _ABSENT:
            covered.pop(mid, None)
            refs.pop(mid, None)
        else:
            covered[mid] = old
    origin = _tls.origin
    for tid in made:
        origin.pop(tid, None)


_ABSENT = object()


def _install(root, target, record):
    """Put in every slot of ``root``'s tree that holds a float Variable (or a cast of one
    from an enclosing scope) what ``target`` reads it as, recording each change."""
    _Walk(root, target, record).visit(root)


class _Walk:
    """One pass of :func:`_install` over a layer's tree."""

    __slots__ = ("root", "target", "slots", "coverage", "made", "casts", "seen", "ly")

    def __init__(self, root, target, record):
        self.root, self.target = root, target
        _, self.slots, self.coverage, self.made = record
        self.casts = {}
        self.seen = set()
        self.ly = _ly or _bind_layers()

    def read_as(self, var, current):
        target = self.target
        if target is None or var._value.dtype.kind != "f" or var._value.dtype == target or \
                var._id in _NO_AUTOCAST:
            return var
        if current is not var and current._value.dtype == target:
            return current                      # a cast an enclosing scope made
        t = self.casts.get(var._id)
        if t is None:
            t = self.casts[var._id] = _cast(var, target)
            _tls.origin[id(t)] = var
            self.made.append(id(t))
        return t

    def convert(self, value):
        if isinstance(value, _Tensor):
            if isinstance(value, _Variable):
                return self.read_as(value, value)
            var = _tls.origin.get(id(value))
            return value if var is None else self.read_as(var, value)
        if isinstance(value, self.ly.Module):
            self.visit(value)
        elif isinstance(value, list):
            if id(value) not in self.seen:
                self.seen.add(id(value))
                for i, v in enumerate(value):
                    new = self.convert(v)
                    if new is not v:
                        self.slots.append((value, i, v))
                        value[i] = new
        elif isinstance(value, dict):
            if id(value) not in self.seen:
                self.seen.add(id(value))
                for k, v in list(value.items()):
                    new = self.convert(v)
                    if new is not v:
                        self.slots.append((value, k, v))
                        value[k] = new
        elif isinstance(value, tuple) and value:
            items = [self.convert(v) for v in value]
            if any(a is not b for a, b in zip(items, value)):
                return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        return value

    def visit(self, mod):
        mid = id(mod)
        if mid in self.seen:
            return
        self.seen.add(mid)
        if mod is not self.root and isinstance(mod, self.ly.Layer):
            kind = _kinds.get(type(mod))
            if kind is None:
                kind = _kind(type(mod))
            if kind == _F32 or kind == _F32_ROUNDED:
                return          # read as they are (its own call casts what it needs)
        d = mod.__dict__
        slots, convert = self.slots, self.convert
        for key, value in mod._tracked_items():
            if value is None or type(value) in _SCALARS:
                continue
            new = convert(value)
            if new is not value:
                slots.append((d, key, value))
                d[key] = new
        if d.get("built", True):       # (a layer built later is walked by its own call)
            covered = _tls.covered
            self.coverage.append((mid, covered.get(mid, _ABSENT)))
            covered[mid] = self.target
            _tls.refs[mid] = mod


_SCALARS = frozenset({int, float, str, bool, bytes})


#: ids of Variables made with ``add_weight(..., autocast=False)`` (never read as casts).
_NO_AUTOCAST: set = set()


def no_autocast(var) -> None:
    """Mark ``var`` as read as itself in mixed-precision calls (``add_weight(autocast=False)``);
    the mark goes with the Variable."""
    key = var._id
    _NO_AUTOCAST.add(key)
    weakref.finalize(var, _NO_AUTOCAST.discard, key)


