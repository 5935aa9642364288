"""``gt.keras``: the training stack under the names ``tf.keras`` uses.

    model = gt.keras.Sequential([gt.keras.layers.Dense(10)])
    opt = gt.keras.optimizers.Adam()
    loss = gt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
"""
from __future__ import annotations

import types

from . import callbacks, initializers, layers, losses, metrics, optimizers, regularizers
from .keras_graph import Input, KerasTensor
from .keras_training import Sequence
from .layers import InputLayer, Layer, Model, Sequential

__all__ = ["layers", "optimizers", "losses", "metrics", "initializers", "regularizers",
           "callbacks", "activations", "utils", "backend", "models", "saving", "Sequential",
           "Model",
           "Layer", "Input", "InputLayer", "KerasTensor"]


def _keras_relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """Keras' relu: ``x`` above ``threshold`` (else ``alpha * (x - threshold)``), capped at
    ``max_value``; with the defaults, ``gt.nn.relu``."""
    from . import nn
    from .ops.core import cast
    from .ops.math import clip_by_value, greater
    from .tensor import convert_to_tensor
    x = convert_to_tensor(x)
    if alpha == 0 and max_value is None and threshold == 0:
        return nn.relu(x)
    negative = nn.relu(threshold - x) if alpha != 0 else None
    if threshold != 0:
        x = x * cast(greater(x, threshold), x.dtype)
    else:
        x = nn.relu(x)
    if max_value is not None:
        x = clip_by_value(x, 0.0, max_value)
    if negative is not None:
        x = x - alpha * negative
    return x


def _activations():
    ns = types.SimpleNamespace(get=layers.get_activation, names=layers.activation_names)
    for name in layers.activation_names():          # keras.activations.relu(x) ...
        setattr(ns, name, layers.get_activation(name))
    ns.relu = _keras_relu
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
    n = int(num_classes) if num_classes else (int(flat.max()) + 1 if flat.size else 0)
    if flat.size and int(flat.max()) >= n:
        raise ValueError(f"to_categorical: class id {int(flat.max())} does not fit "
                         f"num_classes={n}")
    out = np.zeros((flat.size, n), dtype=np.dtype(dtype))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(shape + (n,))


def _unpack(data):
    from .keras_training import unpack_x_y_sample_weight
    return unpack_x_y_sample_weight(data)


def _pack(x, y=None, sample_weight=None):
    from .keras_training import pack_x_y_sample_weight
    return pack_x_y_sample_weight(x, y, sample_weight)


utils = types.SimpleNamespace(to_categorical=_to_categorical, Sequence=Sequence,
                              PyDataset=Sequence, unpack_x_y_sample_weight=_unpack,
                              pack_x_y_sample_weight=_pack)
utils.__doc__ = ("Keras' data utilities: gt.keras.utils.to_categorical(labels, num_classes), "
                 "Sequence, unpack_x_y_sample_weight.")

from . import saving as _saving  # noqa: E402

models = types.SimpleNamespace(Sequential=Sequential, Model=Model,
                               load_model=_saving.load_model, save_model=_saving.save_model)
models.__doc__ = ("Keras' model classes and files: gt.keras.models.Sequential, Model, "
                  "load_model, save_model.")
saving = types.SimpleNamespace(load_model=_saving.load_model, save_model=_saving.save_model,
                               register_keras_serializable=_saving.register_keras_serializable,
                               serialize_keras_object=_saving.serialize_layer,
                               deserialize_keras_object=_saving.deserialize_layer)
saving.__doc__ = "Keras' saving API: load_model, save_model, register_keras_serializable."
layers.serialize = _saving.serialize_layer
layers.deserialize = _saving.deserialize_layer


def _clear_session():
    """Accepted for TF scripts: gradtape keeps no graph or session state to clear."""


backend = types.SimpleNamespace(clear_session=_clear_session)
backend.__doc__ = "Keras' backend calls that scripts make: gt.keras.backend.clear_session()."
