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
           "Sequential", "Model", "Layer"]


def _activations():
    ns = types.SimpleNamespace(get=layers.get_activation, names=layers.activation_names)
    ns.__doc__ = "Activations by name: gt.keras.activations.get('relu')."
    return ns


activations = _activations()
