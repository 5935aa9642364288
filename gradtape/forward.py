"""Forward-mode automatic differentiation: :class:`ForwardAccumulator`, as
``tf.autodiff.ForwardAccumulator``.

While an accumulator is active, every op whose inputs carry a tangent pushes a tangent to
its outputs (:func:`push_tangents`, called by :func:`gradtape.registry._slow_path`). An op
pushes tangents through its own forward rule when it has one, else through the transpose of
its reverse rule, so every differentiable op supports forward mode.

A forward rule is ``op.jvp(ops, tangents, ans, *inputs, **attrs)``: ``tangents`` has one
entry per input (``None`` for an input without a tangent, at least one is set), ``ans`` is
the output (a tuple for ``multi`` ops), ``inputs`` the op's inputs. It returns the output
tangent (one per output for ``multi`` ops, ``None`` for none). Like reverse rules it is
written with Python operators and ``ops.<primitive>`` so it runs on raw arrays when nothing
records the tangent computation and on tensors (recorded, differentiable) when an outer
tape or accumulator does. An output tangent smaller than the output (a broadcast input) is
broadcast by the engine.

Nesting follows TensorFlow: an accumulator's tangent computation is seen by the tapes and
accumulators that were already active when it was entered (outer ones), never by inner ones.
So a tape around an accumulator can differentiate tangents (reverse-over-forward), an
accumulator around a tape sees the tape's backward pass (forward-over-reverse, e.g.
Hessian-vector products), and an outer accumulator sees an inner one's tangents.
"""
from __future__ import annotations

import logging
import weakref

import numpy as np

from . import nest
from .registry import STATE, diff_ops, raw_ops, thread_state
from .tape import GradientTape, UnconnectedGradients, _unconnected_mode
from .tensor import Tensor, Variable, _snapshot

__all__ = ["ForwardAccumulator", "push_tangents"]

_log = logging.getLogger("gradtape")


class ForwardAccumulator:
    """Computes Jacobian-vector products with forward-mode autodiff.

    ``primals`` (a tensor, Variable or nested structure of them) are watched with the
    matching ``tangents``; inside the ``with`` block every op computed from a primal gets a
    tangent, read back with :meth:`jvp`::

        x = gt.constant([1.0, 2.0])
        with gt.ForwardAccumulator(x, gt.constant([1.0, 0.0])) as acc:
            y = gt.reduce_sum(x ** 3)
        acc.jvp(y)            # 3.0 = d y / d x . [1, 0]
    """

    def __init__(self, primals, tangents):
        self._tangents: dict = {}
        self._refs: dict = {}
        self._recording = False
        self._outer_tapes: tuple = ()
        flat_p = nest.flatten(primals)
        flat_t = nest.flatten(tangents)
        if _structure(primals) != _structure(tangents):
            raise ValueError(f"ForwardAccumulator: primals and tangents must have the same "
                             f"structure, got {len(flat_p)} primal(s) and {len(flat_t)} "
                             f"tangent(s) ({_describe_structure(primals)} vs "
                             f"{_describe_structure(tangents)})")
        seen = set()
        for k, (p, t) in enumerate(zip(flat_p, flat_t)):
            if not isinstance(p, Tensor):
                raise TypeError(f"ForwardAccumulator: primal {k} must be a Tensor or Variable, "
                                f"got {type(p).__name__}: {p!r}")
            if p._id in seen:
                raise ValueError(f"ForwardAccumulator: tensor {p!r} was specified as a primal "
                                 "multiple times. This may indicate an error. If it was "
                                 "intended, please sum the corresponding tangents.")
            seen.add(p._id)
            if p._value.dtype.kind not in "fc":
                _log.warning("The dtype of the watched primal must be floating (e.g. "
                             "gt.float32), got %s", p.dtype.name)
                continue
            self._set(p, check_tangent(t, p, "ForwardAccumulator", f"primal {k}"))

    # --- context ------------------------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise ValueError("ForwardAccumulator: the accumulator is already recording.")
        st = thread_state()
        self._outer_tapes = tuple(st.tapes)
        st.accumulators.append(self)
        STATE.active += 1
        self._recording = True
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            accs = thread_state().accumulators
            for i in range(len(accs) - 1, -1, -1):
                if accs[i] is self:
                    del accs[i]
                    break
            STATE.active -= 1
            self._recording = False
        return False

    def __del__(self):
        try:
            if self._recording:
                self.__exit__(None, None, None)
        except Exception:
            pass

    # --- tangents -----------------------------------------------------------------------
    def _set(self, tensor: Tensor, tangent: Tensor):
        tid = tensor._id
        tangents = self._tangents
        refs = self._refs
        tangents[tid] = tangent
        if tid not in refs:
            def drop(_ref, tid=tid, tangents=tangents, refs=refs):
                tangents.pop(tid, None)
                refs.pop(tid, None)
            refs[tid] = weakref.ref(tensor, drop)

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangent of each tensor in ``primals`` (any nested structure).

        A tensor not computed from a watched primal has no tangent: ``None``, or zeros of its
        shape and dtype with ``unconnected_gradients=gt.UnconnectedGradients.ZERO``.
        """
        zero = _unconnected_mode(unconnected_gradients)

        def fetch(t):
            if not isinstance(t, Tensor):
                raise TypeError(f"ForwardAccumulator.jvp: expected tensors, got "
                                f"{type(t).__name__}: {t!r}")
            out = self._tangents.get(t._id)
            if out is None and zero:
                dev = t._device
                with dev.activate():
                    out = Tensor(dev.xp.zeros(t._value.shape, dtype=t._value.dtype), dev)
            return out
        return nest.map_structure(fetch, primals)

    def __repr__(self):
        return f"<gt.ForwardAccumulator recording={self._recording} tangents={len(self._tangents)}>"


def check_tangent(tangent, primal: Tensor, fname: str, what: str, kind: str = "tangent") -> Tensor:
    """``tangent`` as a Tensor matching ``primal``'s shape, dtype and device, else an error
    that names ``fname`` and ``what``. Tensors must match exactly; other values (Python
    numbers, NumPy arrays) are converted to the primal's dtype and device."""
    dev = primal._device
    pv = primal._value
    if isinstance(tangent, Tensor):
        if tangent._value.dtype != pv.dtype:
            raise TypeError(f"{fname}: the {kind} for {what} has dtype {tangent.dtype.name}, "
                            f"but the primal has dtype {primal.dtype.name}")
        if tangent._device is not dev:
            raise ValueError(f"{fname}: the {kind} for {what} is on {tangent._device}, but the "
                             f"primal is on {dev}")
    else:
        if tangent is None or isinstance(tangent, (str, bytes)):
            raise TypeError(f"{fname}: the {kind} for {what} must be a tensor or array, got "
                            f"{type(tangent).__name__}: {tangent!r}")
        if dev.is_native(tangent) and not isinstance(tangent, np.ndarray):
            tangent = Tensor(tangent.astype(pv.dtype, copy=False), dev)
        else:
            tangent = _host_tangent(tangent, primal, fname, what, kind)
    if tuple(tangent._value.shape) != tuple(pv.shape):
        raise ValueError(f"{fname}: the {kind} for {what} has shape "
                         f"{tuple(tangent._value.shape)}, but the primal has shape "
                         f"{tuple(pv.shape)}")
    return tangent


def _host_tangent(tangent, primal: Tensor, fname, what, kind) -> Tensor:
    """A Python number, list or NumPy array converted to ``primal``'s dtype and device."""
    dev = primal._device
    try:
        host = np.asarray(tangent)
    except Exception as exc:
        raise TypeError(f"{fname}: the {kind} for {what} cannot be converted to a tensor "
                        f"({type(tangent).__name__}: {exc})") from None
    if host.dtype.kind not in "fiub":
        raise TypeError(f"{fname}: the {kind} for {what} must be numeric, got "
                        f"{type(tangent).__name__} of dtype {host.dtype}")
    return Tensor(dev.asarray(host, dtype=primal._value.dtype), dev)


def _structure(s):
    if isinstance(s, dict):
        return ("dict", tuple((k, _structure(s[k])) for k in nest._sorted_keys(s)))
    if isinstance(s, (list, tuple)):
        return ("seq", tuple(_structure(v) for v in s))
    return None


def _describe_structure(s):
    if isinstance(s, (list, tuple, dict)):
        return f"a {type(s).__name__} of {len(nest.flatten(s))} leaves"
    return f"a single {type(s).__name__}"


# --- pushing tangents through ops --------------------------------------------------------

def push_tangents(accumulators, op, args, result, attrs):
    """Give ``op``'s outputs their tangents in each accumulator whose inputs carry one.

    Called by dispatch for every op while an accumulator of this thread is active.
    Accumulators are served outermost first; while accumulator ``k`` computes, only the
    tapes and accumulators that were active when it was entered see the computation.
    """
    if op.nondiff:
        return
    st = thread_state()
    accs = tuple(accumulators)
    for k, acc in enumerate(accs):
        tmap = acc._tangents
        tangents = None
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                t = tmap.get(a._id)
                if t is not None:
                    if tangents is None:
                        tangents = [None] * len(args)
                    tangents[i] = t
        if tangents is None:
            continue
        outer_tapes = acc._outer_tapes
        saved_tapes, saved_accs = st.tapes, st.accumulators
        if not outer_tapes:
            st.tapes = []
        else:
            # (identity, not ==: tapes compare by identity anyway, this is just faster)
            outer = {id(o) for o in outer_tapes}
            st.tapes = [t for t in saved_tapes if id(t) in outer]
        st.accumulators = list(accs[:k])
        try:
            out_tangents = _output_tangents(op, args, result, attrs, tangents,
                                            bool(st.tapes) or bool(st.accumulators))
        finally:
            st.tapes, st.accumulators = saved_tapes, saved_accs
        if out_tangents is None:
            continue
        if op.multi:
            for o, t in zip(result, out_tangents):
                if t is not None and o._value.dtype.kind in "fc":
                    acc._set(o, t)
        elif result._value.dtype.kind in "fc":
            acc._set(result, out_tangents)


def _output_tangents(op, args, result, attrs, tangents, differentiable):
    if op.jvp is not None:
        return _rule_tangents(op, args, result, attrs, tangents, differentiable)
    return _transposed_tangents(op, args, result, attrs, tangents)


def _rule_tangents(op, args, result, attrs, tangents, differentiable):
    """Output tangents from the op's own forward rule."""
    outs = result if op.multi else (result,)
    dev = outs[0]._device
    if differentiable:
        ops = diff_ops
        ins = [_snapshot(a) if type(a) is Variable else a for a in args]
        ans = result
        ts = tangents
        out = op.jvp(ops, ts, ans, *ins, **attrs) if attrs else op.jvp(ops, ts, ans, *ins)
    else:
        ops = raw_ops(dev)
        ins = [a._value if isinstance(a, Tensor) else a for a in args]
        ans = tuple(o._value for o in outs) if op.multi else result._value
        ts = [None if t is None else t._value for t in tangents]
        with np.errstate(all="ignore"):
            if dev.needs_switch:
                with dev.activate():
                    out = op.jvp(ops, ts, ans, *ins, **attrs) if attrs else \
                        op.jvp(ops, ts, ans, *ins)
            else:
                out = op.jvp(ops, ts, ans, *ins, **attrs) if attrs else \
                    op.jvp(ops, ts, ans, *ins)
    if out is None:
        return None
    if op.multi:
        if len(out) != len(outs):
            raise ValueError(f"forward rule of op '{op.name}' returned {len(out)} tangents "
                             f"for {len(outs)} outputs")
        return [None if t is None else _fit(op, t, o, differentiable)
                for t, o in zip(out, outs)]
    return _fit(op, out, result, differentiable)


def _fit(op, t, out: Tensor, differentiable):
    """``t`` as a Tensor of ``out``'s shape and dtype (broadcasting a smaller tangent)."""
    v = out._value
    shape = tuple(v.shape)
    if differentiable:
        if not isinstance(t, Tensor):
            t = Tensor(out._device.asarray(t, dtype=v.dtype), out._device)
        if tuple(t._value.shape) != shape:
            _check_broadcast(op, t._value.shape, shape)
            t = diff_ops.broadcast_to(t, shape=shape)
        if t._value.dtype != v.dtype:
            t = diff_ops.cast(t, dtype=v.dtype, src=t._value.dtype)
        return t
    xp = out._device.xp
    if not hasattr(t, "shape") or not hasattr(t, "dtype"):
        t = xp.asarray(t, dtype=v.dtype)
    if tuple(t.shape) != shape:
        _check_broadcast(op, t.shape, shape)
        t = xp.broadcast_to(t, shape)
    if t.dtype != v.dtype:
        t = t.astype(v.dtype)
    return Tensor(t, out._device)


def _check_broadcast(op, tshape, shape):
    try:
        ok = np.broadcast_shapes(tuple(tshape), shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"forward rule of op '{op.name}' returned a tangent of shape "
                         f"{tuple(tshape)} for an output of shape {shape}")


def _transposed_tangents(op, args, result, attrs, tangents):
    """Output tangents from the transpose of the op's reverse rule.

    The reverse rule is linear in its cotangent ``g``; the forward tangent is the gradient of
    ``sum_i <vjp_i(g), tangent_i>`` with respect to ``g``, computed by running the rule under
    a tape that watches a placeholder cotangent.
    """
    if op.vjp is None:
        raise LookupError(f"forward-mode: no gradient rule is registered for op '{op.name}', "
                          "so its tangent cannot be computed; wrap the computation in "
                          "gt.stop_gradient or give it a gt.custom_gradient")
    outs = result if op.multi else (result,)
    dev = outs[0]._device
    with dev.activate():
        dummies = [Tensor(dev.xp.ones(o._value.shape, dtype=o._value.dtype), dev)
                   for o in outs]
    # With complex values the rule (TensorFlow's convention) is the adjoint of the tangent
    # map under Re<a, b>; the tape's gradient of it is that adjoint's adjoint: the map itself.
    if any(v._value.dtype.kind == "c" for v in outs) or any(
            isinstance(a, Tensor) and a._value.dtype.kind == "c" for a in args):
        op = op.complex_view
    ins = tuple(_snapshot(a) if type(a) is Variable else a for a in args)
    needs = tuple(t is not None for t in tangents)
    tape = GradientTape(watch_accessed_variables=False)
    with tape:
        tape.watch([d for d in dummies if d._value.dtype.kind in "fc"])
        g = tuple(dummies) if op.multi else dummies[0]
        in_grads = op.vjp(diff_ops, needs, g, result, *ins, **attrs) if attrs else \
            op.vjp(diff_ops, needs, g, result, *ins)
        if len(in_grads) != len(args):
            raise ValueError(f"gradient rule of op '{op.name}' returned {len(in_grads)} "
                             f"gradients for {len(args)} inputs")
        targets = []
        weights = []
        for k, gi in enumerate(in_grads):
            t = tangents[k]
            if gi is None or t is None:
                continue
            if not isinstance(gi, Tensor):
                continue
            shape = tuple(args[k]._value.shape)
            if tuple(gi._value.shape) != shape:
                gi = diff_ops.sum_to(gi, shape=shape)
            targets.append(gi)
            weights.append(t)
    if not targets:
        return None
    grads = tape.gradient(targets, dummies, output_gradients=weights)
    return grads if op.multi else grads[0]


def _registered_rules():
    """Install the explicit forward rules of the hot ops."""
    from . import forward_rules  # noqa: F401  (sets REGISTRY[name].jvp)


_registered_rules()
