"""``gt.debugging``: stop at the first op that makes a NaN or an infinity, and TF's
run-time assertions (``assert_equal``, ``assert_near``, ``assert_shapes``, ``Assert`` ...).

An assertion on values reads its verdict on the host (one synchronisation, as any check of
values must); a failed one raises ``InvalidArgumentError`` naming the op, the message and
the values, as TensorFlow's eager assertions do. Checks of static facts (rank, shape, dtype)
read no value and raise ``ValueError``/``TypeError`` as TF does for them."""
from __future__ import annotations

import numpy as np

from .registry import STATE, InvalidArgumentError

__all__ = ["enable_check_numerics", "disable_check_numerics", "check_numerics", "NumericsError",
           "Assert", "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_near", "assert_negative",
           "assert_positive", "assert_non_negative", "assert_non_positive", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_shapes", "assert_type",
           "assert_integer", "assert_scalar", "assert_all_finite", "assert_proper_iterable",
           "is_numeric_tensor", "is_non_decreasing", "is_strictly_increasing",
           "assert_same_float_dtype", "set_log_device_placement", "get_log_device_placement",
           "enable_traceback_filtering", "disable_traceback_filtering",
           "is_traceback_filtering_enabled"]


class NumericsError(InvalidArgumentError, FloatingPointError):
    """An op produced NaN or inf while ``enable_check_numerics`` is on, or
    ``check_numerics`` found one (TF raises InvalidArgumentError for both)."""


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


# --- assertions ----------------------------------------------------------------------------

def _t(x, opname):
    from .tensor import Tensor, convert_to_tensor
    if isinstance(x, Tensor):
        return x
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{opname}: expected a tensor, got {type(x).__name__} ({exc})") \
            from None


def _summary(t, summarize):
    host = np.asarray(t.numpy()).ravel()
    n = 3 if summarize is None else int(summarize)
    shown = host if n < 0 or host.size <= n else host[:n]
    text = " ".join(str(v) for v in shown)
    return f"[{text}{' ...' if shown.size < host.size else ''}]"


def _fail(opname, message, parts, summarize):
    head = f"{message}\n" if message else ""
    details = "\n".join(f"{label} (shape={tuple(t.shape)}) = {_summary(t, summarize)}"
                        for label, t in parts)
    raise InvalidArgumentError(f"{head}{opname}: condition x {_WORDS[opname]} did not hold "
                               f"element-wise:\n{details}")


_WORDS = {"assert_equal": "== y", "assert_none_equal": "!= y", "assert_less": "< y",
          "assert_less_equal": "<= y", "assert_greater": "> y", "assert_greater_equal": ">= y",
          "assert_negative": "< 0", "assert_positive": "> 0", "assert_non_negative": ">= 0",
          "assert_non_positive": "<= 0", "assert_near": "~= y"}


def _compare(opname, compare):
    def check(x, y, message=None, summarize=None, name=None):
        xt, yt = _t(x, opname), _t(y, opname)
        try:
            ok = compare(xt, yt)
        except ValueError as exc:      # shapes that cannot broadcast, as TF
            raise ValueError(f"{opname}: {exc}") from None
        from .ops.reduce import reduce_all
        if not bool(reduce_all(ok).numpy()):
            _fail(opname, message, [("x", xt), ("y", yt)], summarize)
        return None
    check.__name__ = opname
    check.__doc__ = f"Raise InvalidArgumentError unless x {_WORDS[opname]} element-wise."
    return check


assert_equal = _compare("assert_equal", lambda x, y: x == y)
assert_none_equal = _compare("assert_none_equal", lambda x, y: x != y)
assert_less = _compare("assert_less", lambda x, y: x < y)
assert_less_equal = _compare("assert_less_equal", lambda x, y: x <= y)
assert_greater = _compare("assert_greater", lambda x, y: x > y)
assert_greater_equal = _compare("assert_greater_equal", lambda x, y: x >= y)


def _sign(opname, compare):
    def check(x, message=None, summarize=None, name=None):
        xt = _t(x, opname)
        from .ops.reduce import reduce_all
        if xt._value.size and not bool(reduce_all(compare(xt)).numpy()):
            _fail(opname, message, [("x", xt)], summarize)
        return None
    check.__name__ = opname
    check.__doc__ = f"Raise InvalidArgumentError unless x {_WORDS[opname]} element-wise."
    return check


assert_negative = _sign("assert_negative", lambda x: x < 0)
assert_positive = _sign("assert_positive", lambda x: x > 0)
assert_non_negative = _sign("assert_non_negative", lambda x: x >= 0)
assert_non_positive = _sign("assert_non_positive", lambda x: x <= 0)


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """Raise unless ``|x - y| <= atol + rtol * |y|`` element-wise (TF's default tolerances:
    10 eps of the dtype for both)."""
    xt, yt = _t(x, "assert_near"), _t(y, "assert_near")
    eps = np.finfo(xt._value.dtype).eps if xt._value.dtype.kind == "f" else 0.0
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    from .ops.math import abs as _abs
    from .ops.reduce import reduce_all
    ok = reduce_all(_abs(xt - yt) <= atol + rtol * _abs(yt))
    if not bool(ok.numpy()):
        _fail("assert_near", message, [("x", xt), ("y", yt)], summarize)


def Assert(condition, data, summarize=None, name=None):     # noqa: N802 (TF's name)
    """Raise InvalidArgumentError showing ``data`` when ``condition`` (a bool scalar) is
    false."""
    c = _t(condition, "Assert")
    if c._value.dtype.kind != "b" or c._value.size != 1:
        raise ValueError(f"Assert: condition must be a boolean scalar, got "
                         f"{c.dtype.name}{tuple(c.shape)}")
    if not bool(c.numpy().reshape(())):
        from .tensor import Tensor
        shown = [_summary(d, summarize) if isinstance(d, Tensor) else str(d) for d in data]
        raise InvalidArgumentError("assertion failed: " + " ".join(shown))


def assert_rank(x, rank, message=None, name=None):
    xt = _t(x, "assert_rank")
    if xt.ndim != int(rank):
        raise ValueError(f"{message + ' ' if message else ''}assert_rank: the tensor must have "
                         f"rank {int(rank)}, it has rank {xt.ndim} (shape {tuple(xt.shape)})")


def assert_rank_at_least(x, rank, message=None, name=None):
    xt = _t(x, "assert_rank_at_least")
    if xt.ndim < int(rank):
        raise ValueError(f"{message + ' ' if message else ''}assert_rank_at_least: the tensor "
                         f"must have rank at least {int(rank)}, it has rank {xt.ndim}")


def assert_rank_in(x, ranks, message=None, name=None):
    xt = _t(x, "assert_rank_in")
    ranks = [int(r) for r in ranks]
    if xt.ndim not in ranks:
        raise ValueError(f"{message + ' ' if message else ''}assert_rank_in: the tensor must "
                         f"have a rank in {ranks}, it has rank {xt.ndim}")


def assert_scalar(tensor, message=None, name=None):
    t = _t(tensor, "assert_scalar")
    if t.ndim != 0:
        raise ValueError(f"{message + ' ' if message else ''}assert_scalar: expected a scalar, "
                         f"got shape {tuple(t.shape)}")
    return t


def assert_type(tensor, tf_type, message=None, name=None):
    from .dtypes import as_dtype
    t = _t(tensor, "assert_type")
    want = as_dtype(tf_type)
    if t.dtype != want:
        raise TypeError(f"{message + ' ' if message else ''}assert_type: the tensor's dtype "
                        f"{t.dtype.name} does not match {want.name}")


def assert_integer(x, message=None, name=None):
    t = _t(x, "assert_integer")
    if t._value.dtype.kind not in "iu":
        raise TypeError(f"{message + ' ' if message else ''}assert_integer: expected an integer "
                        f"tensor, got {t.dtype.name}")


def assert_all_finite(t, message, name=None):
    """Raise InvalidArgumentError if ``t`` holds a NaN or an infinity; else return ``t``."""
    return check_numerics(_t(t, "assert_all_finite"), message)


def assert_proper_iterable(values):
    from .tensor import Tensor
    if isinstance(values, (Tensor, np.ndarray, str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument 'values' to be a \"proper\" iterable, got "
                        f"{type(values).__name__}")


def is_numeric_tensor(tensor) -> bool:
    from .tensor import Tensor
    return isinstance(tensor, Tensor) and tensor._value.dtype.kind in "fiuc"


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Check tensors' shapes against symbolic specs, as ``tf.debugging.assert_shapes``:

        assert_shapes([(x, ("N", "Q")), (y, ("N", "D")), (s, [])])

    A letter must be the same size wherever it appears, an int is that size, ``None``/``"."``
    any size, a leading ``"*"`` any number of leading axes. Raises ValueError naming the
    tensor and the axis."""
    items = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes = {}
    for k, (x, spec) in enumerate(items):
        t = _t(x, "assert_shapes")
        spec = [spec] if isinstance(spec, str) and len(spec) > 1 and spec != "*" else spec
        spec = list(spec) if not isinstance(spec, str) else [spec]
        shape = tuple(t.shape)
        if spec and spec[0] == "*":
            spec = spec[1:]
            if len(shape) < len(spec):
                raise ValueError(f"{message + ' ' if message else ''}assert_shapes: tensor {k} "
                                 f"of shape {shape} has fewer than {len(spec)} axes")
            shape = shape[len(shape) - len(spec):]
        elif len(shape) != len(spec):
            raise ValueError(f"{message + ' ' if message else ''}assert_shapes: tensor {k} has "
                             f"rank {len(shape)} (shape {tuple(t.shape)}), the spec {spec} "
                             f"rank {len(spec)}")
        for axis, (d, s) in enumerate(zip(shape, spec)):
            if s is None or s == ".":
                continue
            if isinstance(s, (int, np.integer)):
                if d != int(s):
                    raise ValueError(f"{message + ' ' if message else ''}assert_shapes: tensor "
                                     f"{k} has size {d} on axis {axis}, the spec says {int(s)}")
                continue
            if s in sizes and sizes[s][0] != d:
                first = sizes[s]
                raise ValueError(f"{message + ' ' if message else ''}assert_shapes: "
                                 f"dimension '{s}' is {first[0]} in tensor {first[1]} but {d} "
                                 f"in tensor {k} (axis {axis})")
            sizes.setdefault(s, (d, k))


def _item_text(item):
    try:
        name = item.name
    except (AttributeError, ValueError):
        return str(item)
    return str(name) if name is not None else str(item)


def assert_same_float_dtype(tensors=None, dtype=None):
    """The dtype shared by ``tensors`` (and ``dtype`` when given; float32 when neither says),
    as ``tf.debugging.assert_same_float_dtype``: ValueError when two differ or the dtype is
    not a floating one. ``None`` entries are skipped."""
    from .dtypes import as_dtype
    expected = None if dtype is None else as_dtype(dtype)
    first = None
    for item in tensors or ():
        if item is None:
            continue
        item_type = as_dtype(item.dtype)
        if expected is None:
            expected = item_type
            first = _item_text(item)
        elif item_type != expected:
            also = f" as {first}" if first is not None else ""
            raise ValueError(f"{_item_text(item)}, type={item_type}, must be of the same type "
                             f"({expected}){also}.")
    if expected is None:
        from .dtypes import float32
        return float32
    if not expected.is_floating:
        raise ValueError(f"Expected floating point type, got {expected}.")
    return expected


# --- TF's diagnostics switches ---------------------------------------------------------------

_SWITCHES = {"log_device_placement": False, "traceback_filtering": True}


def set_log_device_placement(enabled) -> None:
    """Record TF's switch that logs the device of every op; gradtape places each op on its
    inputs' device (``tensor.device`` tells it), so there is no placement to log."""
    _SWITCHES["log_device_placement"] = bool(enabled)


def get_log_device_placement() -> bool:
    """The setting of :func:`set_log_device_placement` (False by default)."""
    return _SWITCHES["log_device_placement"]


def enable_traceback_filtering() -> None:
    """Record TF's switch that trims its own frames from tracebacks (on by default);
    gradtape's errors name the op and values and keep the whole traceback."""
    _SWITCHES["traceback_filtering"] = True


def disable_traceback_filtering() -> None:
    """Record the filtering switch as off (see :func:`enable_traceback_filtering`)."""
    _SWITCHES["traceback_filtering"] = False


def is_traceback_filtering_enabled() -> bool:
    """The traceback-filtering switch (True by default, as TF)."""
    return _SWITCHES["traceback_filtering"]


# (the same functions as gt.math's)
from .ops.extra import is_non_decreasing, is_strictly_increasing  # noqa: E402
