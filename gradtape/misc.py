"""TensorFlow's remaining top-level helpers: ``saturate_cast``, the broadcast-shape functions,
``parallel_stack``, ``no_gradient``, ``init_scope``/``inside_function``, ``get_logger``,
``version`` and the variable enums ``VariableAggregation``/``VariableSynchronization``."""
from __future__ import annotations

import contextlib
import enum
import logging
import platform
import types

import numpy as np

from .dtypes import as_dtype
from .tensor import Tensor, TensorShape

__all__ = ["VariableAggregation", "VariableSynchronization", "saturate_cast",
           "broadcast_static_shape", "broadcast_dynamic_shape", "parallel_stack",
           "no_gradient", "init_scope", "inside_function", "get_logger", "version"]


class VariableAggregation(enum.Enum):
    """How the updates of a variable made by several replicas combine (``aggregation=`` of
    ``gt.Variable`` and ``add_weight``); with one replica every choice updates it alike."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronised (``synchronization=``); with one replica
    there is nothing to synchronise."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


# --- saturate_cast ------------------------------------------------------------------------------

def _limits(np_dt):
    """``(min, max)`` of a real dtype as exact Python numbers."""
    if np_dt.kind == "f":
        info = np.finfo(np_dt)
        return float(info.min), float(info.max)
    info = np.iinfo(np_dt)
    return int(info.min), int(info.max)


def _bound(value, in_dt, out_limit, toward_zero_if):
    """``value`` (an exact Python number) in the input dtype, moved one step toward zero
    when the rounding pushed it past ``out_limit`` (``toward_zero_if(rounded, limit)``)."""
    b = np.asarray(value).astype(in_dt) if in_dt.kind == "f" else np.asarray(int(value), in_dt)
    b = b.reshape(())[()]
    exact = float(b) if in_dt.kind == "f" else int(b)
    if toward_zero_if(exact, out_limit):
        b = np.nextafter(b, in_dt.type(0), dtype=in_dt)
    return b


def _clamp(x, out_real):
    """``x`` (a real tensor) clipped to the values ``out_real`` holds, with bounds exact in
    ``x``'s dtype (a bound rounding past the output range moves one step inward)."""
    from .ops.math import clip_by_value
    in_dt = x._value.dtype
    in_lo, in_hi = _limits(in_dt)
    out_lo, out_hi = _limits(out_real)
    if in_dt.kind != "f" and in_lo >= out_lo and in_hi <= out_hi:
        return x                                  # every value fits
    lo = _bound(max(in_lo, out_lo), in_dt, out_lo, lambda v, lim: v < lim)
    hi = _bound(min(in_hi, out_hi), in_dt, out_hi, lambda v, lim: v > lim)
    # (a float input is always clipped: infinities become the output's extremes)
    return clip_by_value(x, lo, hi)


def _real_dtype(np_dt):
    return np.dtype(np.float32) if np_dt == np.complex64 else (
        np.dtype(np.float64) if np_dt == np.complex128 else np_dt)


def saturate_cast(value, dtype, name=None) -> Tensor:
    """``value`` cast to ``dtype`` after clipping it to the range ``dtype`` holds, so that
    nothing overflows (``saturate_cast([-300., 1.5, 300.], gt.uint8)`` is ``[0, 1, 255]``),
    as ``tf.saturate_cast``. Float inputs are always clipped (infinities become the output's
    extremes; NaN passes to the cast); a bound that the input dtype cannot hold exactly is the
    nearest value inside the range (float32 to int32 saturates at 2147483520). Differentiable
    through the clip and the cast."""
    from .ops._util import as_tensor
    from .ops.core import cast
    x = as_tensor(value, "saturate_cast")
    out = as_dtype(dtype).np
    in_dt = x._value.dtype
    for dt, what in ((in_dt, "the value's dtype"), (out, "the target dtype")):
        if dt.kind not in "iufc":
            raise TypeError(f"saturate_cast: {what} {as_dtype(dt).name} has no range to "
                            "saturate to (use gt.cast)")
    if in_dt.kind == "c":
        from .math import complex as _complex, imag, real
        if out.kind == "c":
            part = _real_dtype(out)
            if _limits(_real_dtype(in_dt)) != _limits(part):
                x = _complex(_clamp(real(x), part), _clamp(imag(x), part))
            return cast(x, out)
        x = real(x)                               # (the imaginary part is discarded)
    return cast(_clamp(x, _real_dtype(out)), out)


# --- broadcast shapes ---------------------------------------------------------------------------

def broadcast_static_shape(shape_x, shape_y) -> TensorShape:
    """The shape two static shapes broadcast to (``None`` where unknown), as
    ``tf.broadcast_static_shape``; ValueError when they cannot broadcast."""
    sx, sy = (s if isinstance(s, TensorShape) else TensorShape(s) for s in (shape_x, shape_y))
    if sx.rank is None or sy.rank is None:
        return TensorShape(None)
    n = max(len(sx), len(sy))
    a = (1,) * (n - len(sx)) + tuple(sx)
    b = (1,) * (n - len(sy)) + tuple(sy)
    dims = []
    for da, db in zip(a, b):
        if da == 1:
            dims.append(db)
        elif db == 1:
            dims.append(da)
        elif da is None or db is None:
            dims.append(da if db is None else db)
        elif da == db:
            dims.append(da)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting. Two shapes are compatible "
                             f"if for each dimension pair they are either equal or one of them "
                             f"is 1. Received: {tuple(sx)} and {tuple(sy)}.")
    return TensorShape(dims)


def _shape_vector(s, k):
    """A 1-D shape given as a tensor, array or list: ``(host ints, dtype)``."""
    from .registry import InvalidArgumentError
    if isinstance(s, Tensor):
        arr = s.numpy()
    else:
        arr = np.asarray(s)
        if arr.size == 0 or (arr.dtype.kind == "i" and not isinstance(s, np.ndarray)):
            arr = arr.astype(np.int32)            # (a list of ints: int32, as TF)
    if arr.dtype not in (np.int32, np.int64) or arr.ndim != 1:
        raise InvalidArgumentError(f"broadcast_dynamic_shape: shape {k} must be a 1-D int32 or "
                                   f"int64 tensor, got {as_dtype(arr.dtype).name} of shape "
                                   f"{arr.shape}")
    return [int(d) for d in arr], arr.dtype


def broadcast_dynamic_shape(shape_x, shape_y) -> Tensor:
    """The shape (a 1-D int tensor) two shapes broadcast to, as
    ``tf.broadcast_dynamic_shape``: InvalidArgumentError when they cannot broadcast or their
    dtypes differ (int32 and int64)."""
    from .backend import current_device
    from .registry import InvalidArgumentError
    (a, da), (b, db) = _shape_vector(shape_x, 0), _shape_vector(shape_y, 1)
    if da != db:
        raise InvalidArgumentError(f"broadcast_dynamic_shape: shape_y was expected to be a "
                                   f"{as_dtype(da).name} tensor like shape_x but is a "
                                   f"{as_dtype(db).name} tensor")
    n = max(len(a), len(b))
    pa, pb = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and 1 not in (x, y):
            raise InvalidArgumentError(f"broadcast_dynamic_shape: incompatible shapes: "
                                       f"{a} vs. {b}")
        out.append(y if x == 1 else x)
    dev = current_device()
    return Tensor(dev.asarray(np.asarray(out, dtype=da)), dev)


def parallel_stack(values, name="parallel_stack") -> Tensor:
    """``values`` (tensors of one shape) stacked along a new first axis, as
    ``tf.parallel_stack`` computes inside a ``tf.function`` (gradtape's functions run
    eagerly, so this is ``gt.stack(values, axis=0)``)."""
    from .ops.shape import stack
    return stack(values, axis=0)


# --- gradients, scopes, logging -----------------------------------------------------------------

def no_gradient(op_type: str) -> None:
    """Declare the registered op ``op_type`` not differentiable, as ``tf.no_gradient``: its
    outputs are no longer recorded, so gradients through it are ``None`` (not an error).
    As in TF, an op that already has a gradient rule cannot be declared so (KeyError)."""
    from .registry import REGISTRY
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    op = REGISTRY.get(op_type)
    if op is None:
        raise LookupError(f"no_gradient: no op named {op_type!r} is registered (gradtape's "
                          "ops are registered with gradtape.registry.defop)")
    if op.vjp is not None:
        raise KeyError(f"Registering two gradient with name {op_type!r}! (op {op_type!r} "
                       "already has a gradient rule)")
    op.nondiff = True


@contextlib.contextmanager
def init_scope():
    """The scope TF lifts initialisation code into, as ``tf.init_scope``: eager execution
    (gradtape always executes eagerly), with this thread's gradient tapes paused (what runs
    inside is not recorded)."""
    from .keras_graph import _paused_tapes
    with _paused_tapes():
        yield


def inside_function() -> bool:
    """False: gradtape builds no graphs (``gt.function`` runs its Python function eagerly),
    as ``tf.inside_function`` outside a ``tf.function``."""
    return False


def get_logger() -> logging.Logger:
    """gradtape's logger (``logging.getLogger("gradtape")``), as ``tf.get_logger``."""
    return logging.getLogger("gradtape")


def _version_module():
    from . import __version__
    mod = types.ModuleType("gradtape.version", "gradtape's version strings, as tf.version.")
    mod.VERSION = __version__
    mod.GIT_VERSION = "unknown"              # (an installed package records no commit)
    mod.COMPILER_VERSION = platform.python_compiler()
    return mod


#: ``gt.version.VERSION`` (the package version), ``GIT_VERSION`` and ``COMPILER_VERSION``
#: (the compiler of the Python that builds gradtape's C extension), as ``tf.version``.
version = _version_module()
