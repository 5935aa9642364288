"""Numeric debugging: stop at the first op that makes a NaN or an infinity."""
from __future__ import annotations

from .registry import STATE

__all__ = ["enable_check_numerics", "disable_check_numerics", "check_numerics"]


class NumericsError(FloatingPointError):
    """An op produced NaN or inf while ``enable_check_numerics`` is on."""


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Make the first op (forward or backward) that outputs NaN or inf raise NumericsError."""
    if not STATE.check_numerics:
        STATE.check_numerics = True
        STATE.active += 1


def disable_check_numerics():
    if STATE.check_numerics:
        STATE.check_numerics = False
        STATE.active -= 1


def check_op_output(op, args, result):
    from .tensor import Tensor
    outs = result if isinstance(result, tuple) else (result,)
    for o in outs:
        v = o._value
        if v.dtype.kind != "f":
            continue
        xp = o._device.xp
        if not bool(xp.all(xp.isfinite(v))):
            shapes = ", ".join(f"{a.dtype.name}{list(a._value.shape)}" if isinstance(a, Tensor)
                               else repr(a) for a in args)
            bad = "NaN" if bool(xp.any(xp.isnan(v))) else "inf"
            raise NumericsError(f"check_numerics: op '{op.name}' produced {bad} "
                                f"(inputs: {shapes}; output shape {tuple(v.shape)})")


def check_numerics(tensor, message, name=None):
    """Raise if ``tensor`` has NaN or inf; else return it."""
    xp = tensor._device.xp
    if not bool(xp.all(xp.isfinite(tensor._value))):
        raise NumericsError(f"check_numerics: {message}")
    return tensor
