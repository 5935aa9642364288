"""Rematerialization (gradient checkpointing) for Keras layers: ``keras.remat`` and
``keras.RematScope``.

A layer made inside ``RematScope(mode)`` keeps that mode and, when called, keeps none of its
intermediate values for the backward pass: its forward runs without recording and the
gradient runs it again (:func:`gradtape.recompute_grad`, which also gives the layer's
variables their gradients). The modes are Keras': ``"full"`` (every layer), ``"activations"``
(only the ``activation`` function of layers that have one), ``"larger_than"`` (layers whose
output has more than ``output_size_threshold`` elements, from the layer's output shape, found
once per input shape) and ``"list_of_layers"`` (layers named in ``layer_names``).
"""
from __future__ import annotations

import collections
import functools
import math

from .control_flow import recompute_grad

__all__ = ["RematScope", "remat", "get_current_remat_mode"]

RematMode = collections.namedtuple("RematMode", ["mode", "output_size_threshold",
                                                 "layer_names"])

_STACK: list = []
_PROBING: list = []
_MODES = ("full", "activations", "larger_than", "list_of_layers", None)


def remat(f):
    """``f`` rematerialized: its intermediate values are recomputed for the gradient instead
    of kept (``keras.remat``; the same values and gradients as ``f``)."""
    if not callable(f):
        raise TypeError(f"remat: expected a callable, got {type(f).__name__}")
    return recompute_grad(f)


class RematScope:
    """Layers created inside are rematerialized when called, by ``mode`` (see the module's
    description); ``mode=None`` turns it off inside an enclosing scope."""

    def __init__(self, mode="full", output_size_threshold=1024, layer_names=None):
        if mode not in _MODES:
            raise ValueError(f"Invalid mode '{mode}'. Supported modes are: 'full', "
                             "'activations', 'larger_than', 'list_of_layers', or  None.")
        self.mode = mode
        self.output_size_threshold = output_size_threshold
        self.layer_names = list(layer_names or [])
        self._pushed = False

    def __enter__(self):
        _STACK.append(self)
        self._pushed = True
        return self

    def __exit__(self, *exc):
        if self._pushed:
            _STACK.remove(self)
            self._pushed = False
        return False


def get_current_remat_mode():
    """The innermost :class:`RematScope`'s settings as a ``RematMode``, or ``None``."""
    if not _STACK or _STACK[-1].mode is None:
        return None
    s = _STACK[-1]
    return RematMode(s.mode, s.output_size_threshold, s.layer_names)


def _output_size(layer, x):
    """Elements in ``layer``'s output for input ``x`` (unknown sizes count 1), once per
    input shape."""
    from . import nest
    from .tensor import Tensor
    shapes = nest.map_structure(lambda t: tuple(t.shape) if isinstance(t, Tensor) else None, x)
    key = repr(shapes)
    cache = layer.__dict__.setdefault("_remat_sizes", {})
    if key not in cache:
        _PROBING.append(layer)              # the probe's own calls are plain
        try:
            out = layer.compute_output_shape(shapes)
        finally:
            _PROBING.pop()

        def is_shape(v):
            return isinstance(v, tuple) and all(d is None or isinstance(d, int) for d in v)
        sizes = []

        def walk(v):
            if is_shape(v):
                sizes.append(math.prod(d or 1 for d in v))
            elif isinstance(v, (list, tuple)):
                for e in v:
                    walk(e)
            elif isinstance(v, dict):
                for e in v.values():
                    walk(e)
        walk(out)
        cache[key] = sum(sizes)
    return cache[key]


def layer_call(layer, x):
    """``layer.call`` as its remat mode asks (itself when the mode does not apply)."""
    mode = layer._remat_mode
    if _PROBING:
        return layer.call
    if mode.mode == "full" or (mode.mode == "list_of_layers" and
                               layer.name in mode.layer_names):
        return remat(layer.call)
    if mode.mode == "activations" and getattr(layer, "activation", None) is not None:
        @functools.wraps(layer.call)
        def call(*args, **kwargs):
            original = layer.activation
            layer.__dict__["activation"] = remat(original)
            try:
                return layer.call(*args, **kwargs)
            finally:
                layer.__dict__["activation"] = original
        return call
    if mode.mode == "larger_than" and _output_size(layer, x) > mode.output_size_threshold:
        return remat(layer.call)
    return layer.call
