"""Numeric debugging: stop at the first op that makes a NaN or an infinity."""
from __future__ import annotations

from .registry import STATE

__all__ = ["enable_check_numerics", "disable_check_numerics", "check_numerics", "NumericsError"]


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


def _finite_report(device, v):
    """None when every element of device array ``v`` is finite, else "NaN" or "inf".

    The check runs on the device; only its boolean result crosses to the host (one counted
    synchronisation, which checking numerics implies)."""
    xp = device.xp
    flags = xp.stack([xp.all(xp.isfinite(v)), xp.any(xp.isnan(v))])
    ok, has_nan = (bool(f) for f in device.to_host(flags))
    if ok:
        return None
    return "NaN" if has_nan else "inf"


def check_op_output(op, args, result):
    from .tensor import Tensor
    outs = result if isinstance(result, tuple) else (result,)
    for o in outs:
        v = o._value
        if v.dtype.kind != "f":
            continue
        bad = _finite_report(o._device, v)
        if bad:
            shapes = ", ".join(f"{a.dtype.name}{list(a._value.shape)}" if isinstance(a, Tensor)
                               else repr(a) for a in args)
            raise NumericsError(f"check_numerics: op '{op.name}' produced {bad} "
                                f"(inputs: {shapes}; output shape {tuple(v.shape)})")


def check_gradient_output(op, in_grads, args, device):
    """Raise NumericsError if the gradient rule of ``op`` returned NaN or inf (called by the
    backward sweep while checks are on). ``args`` are the op's saved inputs (or Nones)."""
    from .tensor import Tensor
    for k, gi in enumerate(in_grads):
        if gi is None:
            continue
        v = gi._value if isinstance(gi, Tensor) else gi
        dtype = getattr(v, "dtype", None)
        if dtype is None or dtype.kind != "f":
            continue
        dev = gi._device if isinstance(gi, Tensor) else device
        bad = _finite_report(dev, v)
        if not bad:
            continue
        shapes = ", ".join(_describe_input(a) for a in args) if args else "not saved"
        raise NumericsError(f"check_numerics: the gradient rule of op '{op.name}' produced "
                            f"{bad} in the backward pass, in the gradient for input {k} "
                            f"(inputs: {shapes}; gradient shape {tuple(v.shape)})")


def _describe_input(a):
    from .tensor import Tensor
    if isinstance(a, Tensor):
        return f"{a.dtype.name}{list(a._value.shape)}"
    if a is None:
        return "not saved"
    shape = getattr(a, "shape", None)
    if shape is not None and hasattr(a, "dtype"):
        return f"{a.dtype}{list(shape)}"
    return repr(a)


def check_numerics(tensor, message, name=None):
    """Raise if ``tensor`` has NaN or inf; else return it."""
    bad = _finite_report(tensor._device, tensor._value)
    if bad:
        raise NumericsError(f"check_numerics: {message} (tensor has {bad})")
    return tensor
