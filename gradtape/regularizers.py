"""Weight regularizers (``tf.keras.regularizers``): penalties on a layer's weights that
``layer.losses`` lists and ``Model.fit`` adds to the loss.

    layer = gt.keras.layers.Dense(64, kernel_regularizer=gt.keras.regularizers.L2(1e-4))
    ...
    loss = loss_fn(y, model(x)) + gt.add_n(model.losses)   # in a hand-written loop
"""
from __future__ import annotations

from . import _config

__all__ = ["Regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer", "l1", "l2", "l1_l2",
           "orthogonal_regularizer", "get", "serialize", "deserialize", "collect_losses"]


def _factor(value, what, who):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {what} must be a number, got {value!r}") from None
    if not v >= 0:
        raise ValueError(f"{who}: {what} must be >= 0, got {value!r}")
    return v


class Regularizer(_config.Configurable):
    """Base class: ``regularizer(weight)`` returns a scalar penalty."""

    def __call__(self, x):
        return 0.0


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor(l1, "l1", type(self).__name__)
        self.l2 = _factor(l2, "l2", type(self).__name__)

    def __call__(self, x):
        from .ops.math import abs as _abs, square
        from .ops.reduce import reduce_sum
        out = None
        if self.l1:
            out = self.l1 * reduce_sum(_abs(x))
        if self.l2:
            term = self.l2 * reduce_sum(square(x))
            out = term if out is None else out + term
        if out is None:
            from .ops.core import zeros
            out = zeros((), dtype=x._value.dtype)
        return out

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|x|)`` (Keras' default factor 0.01)."""

    def __init__(self, l1=0.01):
        super().__init__(l1=l1)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(x**2)`` (Keras' default factor 0.01; no 1/2)."""

    def __init__(self, l2=0.01):
        super().__init__(l2=l2)

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Keras 3's penalty pushing the rows (``mode="rows"``) or columns (``"columns"``) of a
    2-D weight towards mutual orthogonality: with the vectors L2-normalised, ``factor * 0.5
    * sum(|off-diagonal of their Gram matrix|) / (n (n - 1) / 2)``."""

    def __init__(self, factor=0.01, mode="rows"):
        import math
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or \
                math.isinf(factor) or math.isnan(factor) or factor < 0:
            raise ValueError("Invalid value for argument factor: expected a non-negative "
                             f"float.Received: factor={factor}")
        if mode not in ("rows", "columns"):
            raise ValueError('Invalid value for argument `mode`. Expected one of {"rows", '
                             f'"columns"}}. Received: mode={mode}')
        self.factor = float(factor)
        self.mode = mode

    def __call__(self, x):
        from .keras_ops import normalize
        from .ops.shape import eye
        from .ops.linalg import matmul
        from .ops.math import abs as _abs
        from .ops.reduce import reduce_sum
        if x._value.ndim != 2:
            raise ValueError("Inputs to OrthogonalRegularizer must have rank 2. Received: "
                             f"inputs.shape={tuple(x.shape)}")
        if self.mode == "rows":
            v = normalize(x, axis=1)
            gram = matmul(v, v, transpose_b=True)
            n = x._value.shape[0]
        else:
            v = normalize(x, axis=0)
            gram = matmul(v, v, transpose_a=True)
            n = x._value.shape[1]
        off = gram * (1.0 - eye(n, dtype=x.dtype))
        pairs = n * (n - 1.0) / 2.0
        return reduce_sum(_abs(off)) * (self.factor * 0.5 / pairs)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


l1 = L1
l2 = L2
orthogonal_regularizer = OrthogonalRegularizer


def l1_l2(l1=0.01, l2=0.01):
    return L1L2(l1=l1, l2=l2)


_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": l1_l2, "L1": L1, "L2": L2, "L1L2": L1L2,
            "orthogonal_regularizer": OrthogonalRegularizer,
            "OrthogonalRegularizer": OrthogonalRegularizer}
_CLASSES = {"L1": L1, "L2": L2, "L1L2": L1L2, "OrthogonalRegularizer": OrthogonalRegularizer}


def get(identifier):
    """A regularizer from a name (``"l2"``), a config dict, a callable or None."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"unknown regularizer {identifier!r}; known: "
                             f"{', '.join(sorted(_BY_NAME))}")
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        return _config.deserialize(identifier, _CLASSES, "regularizer", list(_CLASSES),
                                   fold_case=False)
    if callable(identifier):
        return identifier
    raise TypeError(f"cannot interpret {identifier!r} as a regularizer")


def penalty(reg, x):
    """``reg(x)`` as a scalar tensor of ``x``'s dtype (a function may return a number)."""
    from .tensor import Tensor, convert_to_tensor
    value = reg(x)
    if not isinstance(value, Tensor):
        import numpy as np
        value = convert_to_tensor(np.asarray(value, dtype=x._value.dtype))
    return value


def collect_losses(module):
    """``module.losses``, in Keras' order: the terms the latest calls added (``add_loss``,
    activity regularizers), then the penalties of every regularized weight of ``module`` and
    its sub-layers (each weight once, computed now, so inside a tape they are
    differentiable), then the callables given to ``add_loss``."""
    from .layers import Module, _LOSS_SOURCES
    from .tensor import Tensor, convert_to_tensor
    if not _LOSS_SOURCES:          # no layer has ever had a penalty: skip the walk (the rule)
        return []
    out, seen = [], set()
    modules = [module] + [s for s in module.submodules if isinstance(s, Module)]
    # added during calls: each layer's terms from its latest call, unless this module has
    # been called (as the outermost layer) since then and the layer was not part of it
    since = module.__dict__.get("_top_call")
    for m in modules:
        cid = m.__dict__.get("_loss_call")
        if cid is not None and (since is None or cid >= since):
            out.extend(m.__dict__.get("_call_losses") or [])
    for m in modules:
        pairs = [(reg, getattr(m, attr, None)) for attr, reg in
                 (m.__dict__.get("_regularizers") or {}).items()]
        pairs += m.__dict__.get("_weight_regularizers") or []
        for reg, w in pairs:
            if w is None or id(w) in seen:
                continue
            seen.add(id(w))
            out.append(penalty(reg, w))
    for m in modules:
        for fn in m.__dict__.get("_loss_fns") or []:
            value = fn()
            out.append(value if isinstance(value, Tensor) else convert_to_tensor(value))
    return out


def serialize(reg):
    """A regularizer's config dict (Keras' form), or the function's name."""
    if isinstance(reg, Regularizer):
        return _config.serialize(reg)
    return getattr(reg, "__name__", repr(reg))


def deserialize(config, custom_objects=None):
    """A regularizer from its config dict (Keras' form) or name, as
    ``keras.regularizers.deserialize``."""
    if custom_objects and isinstance(config, dict) and \
            config.get("class_name") in custom_objects:
        cls = custom_objects[config["class_name"]]
        return cls.from_config(config.get("config", {})) if hasattr(cls, "from_config") \
            else cls(**config.get("config", {}))
    if isinstance(config, str) and custom_objects and config in custom_objects:
        return custom_objects[config]
    return get(config)
