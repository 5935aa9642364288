"""``gt.keras``: the training stack under the names ``tf.keras`` uses.

    model = gt.keras.Sequential([gt.keras.layers.Dense(10)])
    opt = gt.keras.optimizers.Adam()
    loss = gt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
"""
from __future__ import annotations

import types

from . import initializers, layers, losses, metrics, optimizers
from .layers import Layer, Model, Sequential

__all__ = ["layers", "optimizers", "losses", "metrics", "initializers", "activations",
           "utils", "backend", "Sequential", "Model", "Layer"]


def _activations():
    ns = types.SimpleNamespace(get=layers.get_activation, names=layers.activation_names)
    for name in layers.activation_names():          # keras.activations.relu(x) ...
        setattr(ns, name, layers.get_activation(name))
    ns.__doc__ = ("Activations by name, as tf.keras.activations: gt.keras.activations.relu(x), "
                  "gt.keras.activations.get('relu').")
    return ns


activations = _activations()


def _to_categorical(y, num_classes=None, dtype="float32"):
    """One-hot rows for integer class ids ``y`` (a NumPy array back, as Keras' utility; a
    trailing axis of 1 is dropped)."""
    import numpy as np
    a = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
    if a.dtype.kind == "f":
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError("to_categorical: class ids must be whole numbers")
        a = a.astype(np.int64)
    elif a.dtype.kind not in "iu":
        raise TypeError(f"to_categorical: class ids must be integers, got {a.dtype}")
    shape = a.shape[:-1] if a.ndim > 1 and a.shape[-1] == 1 else a.shape
    flat = a.reshape(-1)
    if flat.size and flat.min() < 0:
        raise ValueError(f"to_categorical: class ids must be >= 0, got {int(flat.min())}")
    n = int(flat.max()) + 1 if num_classes is None and flat.size else int(num_classes or 0)
    if flat.size and int(flat.max()) >= n:
        raise ValueError(f"to_categorical: class id {int(flat.max())} does not fit "
                         f"num_classes={n}")
    out = np.zeros((flat.size, n), dtype=np.dtype(dtype))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(shape + (n,))


utils = types.SimpleNamespace(to_categorical=_to_categorical)
utils.__doc__ = "Keras' data utilities: gt.keras.utils.to_categorical(labels, num_classes)."


def _clear_session():
    """Accepted for TF scripts: gradtape keeps no graph or session state to clear."""


backend = types.SimpleNamespace(clear_session=_clear_session)
backend.__doc__ = "Keras' backend calls that scripts make: gt.keras.backend.clear_session()."
