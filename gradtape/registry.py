"""The op table and dispatch: one :class:`Op` per primitive, forward and rules side by side.

An op's ``forward(xp, *values, **attrs)`` runs on raw device arrays through the device's
array namespace ``xp``. Its reverse rule ``vjp(ops, needs, g, ans, *inputs, **attrs)`` returns
one gradient per input (``None`` for none) and is written against an ``ops`` namespace: on
raw arrays (:class:`RawOps`) when nothing records the backward sweep, on tensors
(:class:`DiffOps`) when an outer tape does, so the same rule gives higher derivatives.
``needs[i]`` says whether input ``i`` wants a gradient; rules may skip the others.
"""
from __future__ import annotations

import functools
import threading

from .backend import DeviceError
from .tensor import Tensor

__all__ = ["Op", "defop", "REGISTRY", "apply", "apply1", "apply2", "STATE", "DiffOps",
           "raw_ops", "diff_ops", "InvalidArgumentError"]

REGISTRY: dict[str, "Op"] = {}


class InvalidArgumentError(ValueError):
    """An op was given arguments it cannot work with (shapes, dtypes, values)."""


class Op:
    __slots__ = ("name", "forward", "vjp", "jvp", "save_inputs", "save_output", "broadcasts",
                 "multi", "nondiff", "batch_rule", "complex_rule", "_complex_view",
                 "conjugate_of")

    def __init__(self, name, forward, vjp=None, *, jvp=None, save_inputs=True, save_output=True,
                 broadcasts=False, multi=False, nondiff=False, batch_rule=True,
                 complex_rule=False):
        self.name = name
        self.forward = forward
        self.vjp = vjp
        self.jvp = jvp
        self.save_inputs = save_inputs
        self.save_output = save_output
        self.broadcasts = broadcasts
        self.multi = multi
        self.nondiff = nondiff
        # True when the rule also works on a cotangent with an extra leading batch axis
        # (used by the vectorised Jacobian).
        self.batch_rule = batch_rule
        # True when the rule itself follows TensorFlow's convention for complex values (ops
        # between real and complex: real, imag, abs, angle, complex, cast ...); the others are
        # holomorphic or linear and go through complex_view on complex values.
        self.complex_rule = complex_rule
        self._complex_view = self if complex_rule else None
        self.conjugate_of = None    # on a complex view: the op whose rule it conjugates

    @property
    def complex_view(self) -> "Op":
        """The op as recorded when it produces a complex value. A rule written for real
        values computes ``g * f'(z)``; TensorFlow's gradient of a holomorphic ``f`` is
        ``g * conj(f'(z))`` (for a real loss: ``dL/dx + i dL/dy``), which is
        ``conj(rule(conj(g)))``, so the view wraps the rule in two conjugations."""
        view = self._complex_view
        if view is None:
            view = self._complex_view = _conjugated(self)
        return view

    def __repr__(self):
        return f"Op({self.name!r})"


def _conjugated(op: Op) -> Op:
    """``op`` with its rule conjugated on both sides (not registered: the same name)."""
    vjp = op.vjp

    def conj_vjp(ops, needs, g, ans, *args, **attrs):
        conj = ops.conj
        grads = vjp(ops, needs, _map(conj, g), ans, *args, **attrs)
        return tuple([None if gi is None else conj(gi) for gi in grads])
    view = Op(op.name, op.forward, None if vjp is None else conj_vjp, jvp=op.jvp,
              save_inputs=op.save_inputs, save_output=op.save_output, broadcasts=op.broadcasts,
              multi=op.multi, nondiff=op.nondiff, batch_rule=op.batch_rule, complex_rule=True)
    view.conjugate_of = op
    return view


def _map(fn, g):
    return tuple([fn(x) for x in g]) if type(g) is tuple else fn(g)


def defop(name, forward, vjp=None, **options) -> Op:
    """Register a primitive. ``nondiff=True`` declares it not differentiable (never recorded)."""
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is registered twice")
    op = Op(name, forward, vjp, **options)
    REGISTRY[name] = op
    return op


class _State:
    """Process-wide switch: >0 when any thread has a recording tape, an accumulator, or
    numeric checks on. Ops test it once; the per-thread lists say what to do."""

    __slots__ = ("active", "check_numerics")

    def __init__(self):
        self.active = 0
        self.check_numerics = False


STATE = _State()
_tls = threading.local()


def thread_state():
    try:
        return _tls.state
    except AttributeError:
        st = _tls.state = _ThreadState()
        return st


class _ThreadState:
    __slots__ = ("tapes", "accumulators")

    def __init__(self):
        self.tapes = []          # recording tapes, outermost first
        self.accumulators = []   # active forward accumulators, outermost first


def _describe(args):
    parts = []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(f"{a.dtype.name}{list(a._value.shape)}")
        else:
            parts.append(type(a).__name__)
    return ", ".join(parts)


def op_error(op, args, exc):
    """The error to raise for ``exc`` from ``op``'s forward: named after the op, with shapes."""
    msg = str(exc)
    if isinstance(exc, DeviceError) or msg.startswith(op.name + ":") or \
            isinstance(exc, (LookupError, RuntimeError)) and not isinstance(exc, IndexError):
        return exc
    if isinstance(exc, IndexError):
        return IndexError(f"{op.name}: {msg} (inputs: {_describe(args)})")
    if isinstance(exc, TypeError):
        return TypeError(f"{op.name}: {msg} (inputs: {_describe(args)})")
    if "broadcast" in msg or "shape" in msg or "align" in msg:
        shapes = " and ".join(str(tuple(a._value.shape)) for a in args if isinstance(a, Tensor))
        return InvalidArgumentError(f"{op.name}: shapes {shapes} are incompatible ({msg})")
    return InvalidArgumentError(f"{op.name}: {msg} (inputs: {_describe(args)})")


def mixed_devices(op, a, b):
    return DeviceError(f"{op.name}: inputs are on different devices ({a} and {b}); "
                       f"move one with tensor.to(device)")


def apply(op: Op, args, attrs=None):
    """Run ``op`` on tensors (and Python scalars), wrap the result, record if needed."""
    dev = None
    vals = []
    for a in args:
        if isinstance(a, Tensor):
            if dev is None:
                dev = a._device
            elif a._device is not dev:
                raise mixed_devices(op, dev, a._device)
            vals.append(a._value)
        else:
            vals.append(a)
    if dev is None:
        from .backend import current_device
        dev = current_device()
    try:
        if dev.needs_switch:
            with dev.activate():
                out = op.forward(dev.xp, *vals, **attrs) if attrs else op.forward(dev.xp, *vals)
        else:
            out = op.forward(dev.xp, *vals, **attrs) if attrs else op.forward(dev.xp, *vals)
    except Exception as exc:
        raise op_error(op, args, exc) from None
    if op.multi:
        result = tuple([_new_tensor(o, dev) for o in out])
    else:
        result = _new_tensor(out, dev)
    if STATE.active:
        _slow_path(op, args, result, attrs, vals)
    return result


def apply1(op: Op, x: Tensor, attrs=None):
    """:func:`apply` for one tensor input (the hot unary path)."""
    dev = x._device
    try:
        if dev.needs_switch:
            with dev.activate():
                out = op.forward(dev.xp, x._value, **attrs) if attrs else op.forward(dev.xp, x._value)
        else:
            out = op.forward(dev.xp, x._value, **attrs) if attrs else op.forward(dev.xp, x._value)
    except Exception as exc:
        raise op_error(op, (x,), exc) from None
    result = tuple([_new_tensor(o, dev) for o in out]) if op.multi else _new_tensor(out, dev)
    if STATE.active:
        _tape.record_unary(op, x, result, attrs, x._value)
    return result


def apply2(op: Op, x, y):
    """:func:`apply` for two inputs, at least one a Tensor, no attributes (binary ops)."""
    if isinstance(x, Tensor):
        dev = x._device
        xv = x._value
        if isinstance(y, Tensor):
            if y._device is not dev:
                raise mixed_devices(op, dev, y._device)
            yv = y._value
        else:
            yv = y
    else:
        dev = y._device
        xv = x
        yv = y._value
    try:
        if dev.needs_switch:
            with dev.activate():
                out = op.forward(dev.xp, xv, yv)
        else:
            out = op.forward(dev.xp, xv, yv)
    except Exception as exc:
        raise op_error(op, (x, y), exc) from None
    result = _new_tensor(out, dev)
    if STATE.active:
        _tape.record_binary(op, x, y, result, None, xv, yv)
    return result


def _slow_path(op, args, result, attrs, vals=None):
    """Record ``op`` on this thread's tapes, push tangents, check numerics (when active)."""
    if STATE.check_numerics:
        from .debugging import check_op_output
        check_op_output(op, args, result)
    try:
        st = _tls.state
    except AttributeError:
        st = thread_state()
    if st.tapes:
        _tape.record(st.tapes, op, args, result, attrs, vals)
    if st.accumulators:
        _push_tangents()(st.accumulators, op, args, result, attrs)


def _push_tangents():
    """forward.push_tangents (imported on first use: forward imports this module)."""
    global _PUSH
    if _PUSH is None:
        from .forward import push_tangents
        _PUSH = push_tangents
    return _PUSH


_PUSH = None


# --- rule namespaces ---------------------------------------------------------------------

class DiffOps:
    """Primitives on tensors: rules run through it are recorded by outer tapes."""

    def __getattr__(self, name):
        try:
            op = REGISTRY[name]
        except KeyError:
            raise AttributeError(f"no primitive named {name!r}") from None

        def call(*args, **attrs):
            return apply(op, args, attrs)
        call.__name__ = name
        setattr(self, name, call)
        return call

    raw = False


class RawOps:
    """Primitives on raw arrays of one device's namespace (no recording, no wrappers)."""

    raw = True

    def __init__(self, xp):
        self.xp = xp

    def __getattr__(self, name):
        try:
            op = REGISTRY[name]
        except KeyError:
            raise AttributeError(f"no primitive named {name!r}") from None
        # a partial (in C) rather than a closure: one Python frame less per rule call
        call = functools.partial(op.forward, self.xp)
        setattr(self, name, call)
        return call


diff_ops = DiffOps()
_raw_by_xp: dict = {}


def raw_ops(device) -> RawOps:
    xp = device.xp
    ops = _raw_by_xp.get(id(xp))
    if ops is None:
        ops = _raw_by_xp[id(xp)] = RawOps(xp)
    return ops


from . import tape as _tape  # noqa: E402  (the tape records what apply runs)
from .tensor import Variable, _new_tensor, _speedups  # noqa: E402

if _speedups is not None:
    _speedups.setup(Tensor, Variable, STATE, _tls, _ThreadState, Op, _slow_path)

    def _check_ndarray():
        import numpy as np
        samples = [np.zeros(3, dt) for dt in (np.float32, np.float64, np.int32, np.bool_)]
        samples += [np.zeros((2, 3), np.float16)[:, 1], np.ones((), np.float32)]
        frozen = np.zeros(2)
        frozen.flags.writeable = False
        samples.append(frozen)
        return _speedups.use_ndarray(np.ndarray, samples)
    _check_ndarray()
