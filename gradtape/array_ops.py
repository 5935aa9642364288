"""Array functions composed from other ops (so differentiable and device-resident):
``roll``, ``meshgrid``, ``sequence_mask``, ``identity_n``, ``shape_n``; and TensorFlow's
top-level eager helpers: ``name_scope``, ``get_current_name_scope``, ``executing_eagerly``,
``get_static_value`` and the ``tf.*_initializer`` classes."""
from __future__ import annotations

import threading

import numpy as np

from .backend import device_scope
from .dtypes import as_dtype
from .ops._util import as_tensor
from .ops.core import broadcast_to, cast
from .ops.math import less
from .ops.reduce import reduce_max
from .ops.shape import concat, expand_dims, range as _range, reshape
from .tensor import Tensor

__all__ = ["roll", "meshgrid", "sequence_mask", "identity_n", "shape_n", "name_scope",
           "get_current_name_scope", "executing_eagerly", "get_static_value",
           "zeros_initializer", "ones_initializer", "constant_initializer",
           "random_normal_initializer", "random_uniform_initializer"]


def _ints(value, opname, what):
    if isinstance(value, Tensor):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise TypeError(f"{opname}: {what} must be an int or a list of ints, got {value!r}")
    return [int(v) for v in arr.reshape(-1)]


def roll(input, shift, axis, name=None) -> Tensor:  # noqa: A002
    """Elements shifted by ``shift`` along ``axis`` (ints, or lists of the same length),
    wrapping around, as ``tf.roll``."""
    x = as_tensor(input, "roll")
    shifts, axes = _ints(shift, "roll", "shift"), _ints(axis, "roll", "axis")
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shifts} and axis {axes} differ in length")
    total = {}
    for s, a in zip(shifts, axes):
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"roll: axis {a} is out of range for a tensor of rank {x.ndim}")
        a %= x.ndim
        total[a] = total.get(a, 0) + s
    for a, s in total.items():
        n = x._value.shape[a]
        if n == 0 or s % n == 0:
            continue
        k = s % n
        head = tuple(slice(None) for _ in range(a))
        x = concat([x[head + (slice(n - k, None),)], x[head + (slice(0, n - k),)]], axis=a)
    return x


def meshgrid(*args, indexing="xy", name=None):
    """Coordinate grids from 1-D tensors, ``"xy"`` (Cartesian: the first two outputs' axes
    swapped) or ``"ij"`` (matrix) indexing, as ``tf.meshgrid``."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vs = [as_tensor(a, "meshgrid") for a in args]
    if not vs:
        return []
    for v in vs:
        if v.ndim != 1:
            raise ValueError(f"meshgrid: inputs must be 1-D, got shape {tuple(v.shape)}")
    sizes = [v._value.shape[0] for v in vs]
    n = len(vs)
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vs):
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = -1
        out.append(broadcast_to(reshape(v, shape), sizes))
    return out


def sequence_mask(lengths, maxlen=None, dtype="bool", name=None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` for ``j`` below ``maxlen`` (the longest length when
    not given, read on the host), as ``tf.sequence_mask``."""
    lens = as_tensor(lengths, "sequence_mask")
    if lens._value.dtype.kind not in "iu":
        raise TypeError(f"sequence_mask: lengths must be integers, got {lens.dtype.name}")
    if maxlen is None:
        maxlen = int(reduce_max(lens).numpy()) if lens._value.size else 0
    elif isinstance(maxlen, Tensor):
        maxlen = int(maxlen.numpy())
    with device_scope(lens.device):
        steps = _range(max(int(maxlen), 0), dtype=lens.dtype)
    mask = less(steps, expand_dims(lens, -1))
    return mask if as_dtype(dtype).np == np.bool_ else cast(mask, dtype)


def identity_n(input, name=None):  # noqa: A002
    """:func:`gt.identity` of each tensor of a list (``tf.identity_n``)."""
    from .ops.core import identity
    return [identity(as_tensor(t, "identity_n")) for t in input]


def shape_n(input, out_type=np.int32, name=None):  # noqa: A002
    """The shape of each tensor of a list (``tf.shape_n``)."""
    from .ops.shape import shape
    return [shape(t, out_type=out_type) for t in input]


# --- name scopes and eager-mode queries ------------------------------------------------------

_scopes = threading.local()


def get_current_name_scope() -> str:
    """The name scope of this thread (``"outer/inner"``, ``""`` outside any), as
    ``tf.get_current_name_scope``."""
    return getattr(_scopes, "name", "").rstrip("/")


class name_scope:  # noqa: N801 (TF's name)
    """``with gt.name_scope("block") as scope:`` sets the name scope (``scope`` is
    ``"block/"``, inside an outer one ``"outer/block/"``; a name ending in ``/`` replaces the
    scope, ``""`` clears it), as TF 2's eager ``tf.name_scope``. gradtape gives ops no graph
    names, so the scope only serves code that reads it (``get_current_name_scope``)."""

    __slots__ = ("_name", "_old")

    def __init__(self, name):
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")
        self._name = name
        self._old = []

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        old = getattr(_scopes, "name", "")
        name = self._name
        if not name:
            scope = ""
        elif name[-1] == "/":
            scope = name
        else:
            scope = old + name + "/"
        self._old.append(old)
        _scopes.name = scope
        return scope

    def __exit__(self, *exc):
        _scopes.name = self._old.pop()
        return False


def executing_eagerly() -> bool:
    """True: gradtape always runs eagerly (``tf.executing_eagerly``), also inside
    ``gt.function``, whose captured steps replay what an eager call did."""
    return True


def get_static_value(tensor, partial=False):
    """The value of ``tensor`` as a NumPy array (read from its device), as
    ``tf.get_static_value`` in eager mode: a Variable gives None (its value can change), a
    non-tensor is returned as it is."""
    from .tensor import Variable
    if isinstance(tensor, Variable):
        return None
    if isinstance(tensor, Tensor):
        return tensor.numpy()
    return tensor


# --- tf.*_initializer ---------------------------------------------------------------------------
# TF's own initializer classes (tf.zeros_initializer ...): unlike Keras', they take any
# numeric or bool dtype (float32 by default) and the keyword arguments of a partitioned
# variable. Values are made on the current device.

def _init_dtype(dtype, who, floating=False, integer_ok=True):
    dt = np.dtype(np.float32) if dtype is None else as_dtype(dtype).np
    if floating and dt.kind != "f":
        raise ValueError(f"{who}: Argument `dtype` is expected to be floating point. "
                         f"Received: {as_dtype(dt).name}.")
    if dt.kind not in "biuf" or (not integer_ok and dt.kind in "iu"):
        raise ValueError(f"{who}: Argument `dtype` expected to be numeric or boolean. "
                         f"Received {as_dtype(dt).name}.")
    return dt


def _check_kwargs(kwargs, who):
    bad = set(kwargs) - {"partition_shape", "partition_offset"}
    if bad:
        raise TypeError(f"{who}: Keyword argument should be one of ['partition_shape', "
                        f"'partition_offset']. Received: {', '.join(sorted(bad))}")


class _TFInitializer:
    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _Filled(_TFInitializer):
    _fill = 0

    def __call__(self, shape, dtype=None, **kwargs) -> Tensor:
        from .backend import current_device
        from .ops.core import shape_tuple
        _check_kwargs(kwargs, type(self).__name__)
        dt = _init_dtype(dtype, type(self).__name__)
        dev = current_device()
        with dev.activate():
            return Tensor(dev.xp.full(shape_tuple(shape, type(self).__name__), self._fill,
                                      dtype=dt), dev)


class zeros_initializer(_Filled):  # noqa: N801 (TF's name)
    """Zeros of any numeric or bool dtype (``tf.zeros_initializer``)."""

    _fill = 0


class ones_initializer(_Filled):  # noqa: N801
    """Ones of any numeric or bool dtype (``tf.ones_initializer``)."""

    _fill = 1


class constant_initializer(_TFInitializer):  # noqa: N801
    """``value`` (a number, or a list or array with as many elements as the shape, laid out
    in row-major order) of the requested dtype, or ``value``'s own when none is given
    (``tf.constant_initializer``)."""

    def __init__(self, value=0, support_partition=False):
        if isinstance(value, Tensor):
            value = value.numpy()
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"constant_initializer: Invalid type for initial value: "
                            f"{type(value).__name__}")
        self.value = value
        self.support_partition = support_partition

    def __call__(self, shape, dtype=None, **kwargs) -> Tensor:
        from .backend import current_device
        from .ops.core import shape_tuple
        from .tensor import constant
        _check_kwargs(kwargs, "constant_initializer")
        shp = shape_tuple(shape, "constant_initializer")
        host = np.asarray(self.value)
        if dtype is None:
            # as tf.constant: Python ints are int32, floats float32
            dt = as_dtype(constant(self.value).dtype).np
        else:
            dt = _init_dtype(dtype, "constant_initializer")
        n = int(np.prod(shp, dtype=np.int64))
        if host.size not in (1, n):
            raise TypeError(f"constant_initializer: Eager execution of tf.constant with "
                            f"unsupported shape. Tensor {host} has {host.size} elements, but "
                            f"got `shape` {shp} with {n} elements).")
        dev = current_device()
        if host.size == 1:
            with dev.activate():
                return Tensor(dev.xp.full(shp, host.reshape(()).item(), dtype=dt), dev)
        return Tensor(dev.asarray(host.astype(dt).reshape(shp)), dev)

    def get_config(self):
        return {"value": self.value}


class random_normal_initializer(_TFInitializer):  # noqa: N801
    """Normal values with ``mean`` and ``stddev`` (``tf.random_normal_initializer``; TF's
    defaults 0 and 0.05); with a ``seed``, the same values at every call."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed

    def __call__(self, shape, dtype=None, **kwargs) -> Tensor:
        from .initializers import RandomNormal
        _check_kwargs(kwargs, "random_normal_initializer")
        dt = _init_dtype(dtype, "random_normal_initializer", floating=True)
        return RandomNormal(self.mean, self.stddev, self.seed)(shape, dtype=dt)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class random_uniform_initializer(_TFInitializer):  # noqa: N801
    """Uniform values in ``[minval, maxval)`` of a floating or integer dtype
    (``tf.random_uniform_initializer``; TF's defaults -0.05 and 0.05)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed

    def __call__(self, shape, dtype=None, **kwargs) -> Tensor:
        from . import random as _random
        from .initializers import RandomUniform
        _check_kwargs(kwargs, "random_uniform_initializer")
        dt = _init_dtype(dtype, "random_uniform_initializer")
        if dt.kind == "b":
            raise ValueError("random_uniform_initializer: Argument `dtype` is expected to be "
                             "floating point or integer. Received: bool.")
        if dt.kind == "f":
            return RandomUniform(self.minval, self.maxval, self.seed)(shape, dtype=dt)
        return _random.uniform(shape, minval=self.minval, maxval=self.maxval, dtype=dt,
                               seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}
