"""Weight constraints (``tf.keras.constraints``): projections the optimizer applies to a
weight after each update (``Variable(constraint=...)``, ``kernel_constraint=`` on layers).

    layer = gt.keras.layers.Dense(64, kernel_constraint=gt.keras.constraints.MaxNorm(2.0))

As Keras 3: the norms are taken over ``axis`` (``0``: each column of a Dense kernel; for a
Conv2D kernel ``[0, 1, 2]``: each filter), and ``MaxNorm``, ``UnitNorm`` and ``MinMaxNorm``
divide by ``epsilon() + norm`` (``gt.keras.backend.epsilon()``, 1e-7). ``assign`` and restoring
a checkpoint never apply a constraint; optimizers do, after every step.
"""
from __future__ import annotations

from . import _config

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "serialize", "deserialize"]

#: Keras' fuzz factor (``keras.backend.epsilon()``), read at every call.
_EPSILON = [1e-7]


def epsilon() -> float:
    return _EPSILON[0]


def _tensor(w):
    from .tensor import Tensor, convert_to_tensor
    return w if isinstance(w, Tensor) else convert_to_tensor(w)


def _norms(w, axis):
    from .ops.math import sqrt, square
    from .ops.reduce import reduce_sum
    ax = list(axis) if isinstance(axis, (list, tuple)) else axis
    return sqrt(reduce_sum(square(w), axis=ax, keepdims=True))


def _axis(axis, who):
    """``axis`` as an int or a list of ints (Keras keeps what it was given)."""
    import numpy as np
    ok = (lambda a: isinstance(a, (int, np.integer)) and not isinstance(a, bool))
    if isinstance(axis, (list, tuple)) and all(ok(a) for a in axis):
        return [int(a) for a in axis]
    if ok(axis):
        return int(axis)
    raise TypeError(f"{who}: axis must be an int or a list of ints, got {axis!r}")


class Constraint(_config.Configurable):
    """Base class: ``constraint(w)`` returns the projected weight (the base returns ``w``)."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}


class MaxNorm(Constraint):
    """Rescale the weights whose norm over ``axis`` exceeds ``max_value`` down to it:
    ``w * clip(norm, 0, max_value) / (epsilon + norm)``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = _axis(axis, "MaxNorm")

    def __call__(self, w):
        from .ops.math import clip_by_value
        w = _tensor(w)
        norms = _norms(w, self.axis)
        desired = clip_by_value(norms, 0.0, float(self.max_value))
        return w * (desired / (epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """``max(w, 0)``: the weights stay non-negative."""

    def __call__(self, w):
        from .ops.math import maximum
        w = _tensor(w)
        return maximum(w, 0.0)


class UnitNorm(Constraint):
    """``w / (epsilon + norm)``: unit norm over ``axis``."""

    def __init__(self, axis=0):
        self.axis = _axis(axis, "UnitNorm")

    def __call__(self, w):
        w = _tensor(w)
        return w / (epsilon() + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move the norm over ``axis`` into ``[min_value, max_value]`` at ``rate``:
    ``w * (rate * clip(norm, min, max) + (1 - rate) * norm) / (epsilon + norm)``."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        if min_value > max_value:
            raise ValueError(f"MinMaxNorm: min_value {min_value} is larger than max_value "
                             f"{max_value}")
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = _axis(axis, "MinMaxNorm")

    def __call__(self, w):
        from .ops.math import clip_by_value
        w = _tensor(w)
        norms = _norms(w, self.axis)
        desired = (self.rate * clip_by_value(norms, float(self.min_value),
                                             float(self.max_value))
                   + (1 - self.rate) * norms)
        return w * (desired / (epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


# Keras' lower-case aliases
max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_CLASSES = {"constraint": Constraint, "maxnorm": MaxNorm, "nonneg": NonNeg,
            "unitnorm": UnitNorm, "minmaxnorm": MinMaxNorm, "max_norm": MaxNorm,
            "non_neg": NonNeg, "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}
_KNOWN = ["MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg", "unit_norm",
          "min_max_norm"]


def _custom(name):
    from .saving import custom_object
    return custom_object(name)


def get(identifier):
    """A constraint from a name (``"max_norm"``, ``"NonNeg"``), a config dict, a Constraint,
    a callable (returned as is) or None; other names are looked up among the
    ``custom_objects`` of the model being loaded and the registered classes."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier.lower() not in _CLASSES:
            found = _custom(identifier)
            if found is not None:
                return found() if isinstance(found, type) else found
        return _config.lookup(identifier, Constraint, _CLASSES, "constraint", _KNOWN)
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"cannot interpret {identifier!r} as a constraint")


def serialize(constraint):
    """A constraint's ``{"class_name": ..., "config": ...}`` (a function: its name; None:
    None)."""
    if constraint is None:
        return None
    if isinstance(constraint, Constraint):
        return _config.serialize(constraint)
    return getattr(constraint, "__name__", repr(constraint))


def deserialize(config, custom_objects=None):
    """The constraint :func:`serialize` described."""
    if isinstance(config, str):
        if custom_objects and config in custom_objects:
            found = custom_objects[config]
            return found() if isinstance(found, type) else found
        return get(config)
    if not isinstance(config, dict):
        raise TypeError(f"constraints.deserialize: expected a config dict or a name, got "
                        f"{config!r}")
    name = config.get("class_name", "")
    if custom_objects and name in custom_objects:
        return custom_objects[name].from_config(config.get("config") or {})
    if name.lower() not in _CLASSES:
        found = _custom(name)
        if isinstance(found, type):
            return found.from_config(config.get("config") or {})
    return _config.deserialize(config, _CLASSES, "constraint", _KNOWN)
