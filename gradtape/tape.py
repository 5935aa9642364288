"""GradientTape: recording, watching, the backward sweep and nesting.

The tape knows no op: it stores what :func:`gradtape.registry.apply` hands it and, going
backwards, calls each op's rule through a namespace of primitives looked up by name.
"""
from __future__ import annotations

import contextlib
import enum
import logging
import warnings

import numpy as np

from . import nest
from .backend import base as _devbase
from .registry import STATE, _slow_path, _tls, diff_ops, raw_ops, thread_state
from .tensor import Tensor, Variable, _new_tensor, _snapshot, _speedups

__all__ = ["GradientTape", "UnconnectedGradients", "record", "backward"]

_log = logging.getLogger("gradtape")


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


def _unconnected_mode(value) -> bool:
    """True for ZERO, False for NONE; anything else is a ValueError."""
    if isinstance(value, UnconnectedGradients):
        return value is UnconnectedGradients.ZERO
    if isinstance(value, str) and value.lower() in ("none", "zero"):
        return value.lower() == "zero"
    raise ValueError(f"Unknown value for unconnected_gradients: {value!r}; use "
                     "gt.UnconnectedGradients.NONE or gt.UnconnectedGradients.ZERO")


# --- recording ---------------------------------------------------------------------------
# An entry is a tuple:
#   (op, attrs, input ids, saved inputs | None, input shapes | None, output ids,
#    saved outputs | None, device, saved input values | None)
# Saved inputs are tensors (Variables replaced by a snapshot of the value read), used when
# the sweep itself is recorded; saved values are the raw arrays (and scalars) for the fast
# sweep on raw arrays.

def record_unary(op, x, out, attrs, v):
    """Record a one-input, one-output op (dispatch's fast path: one tape, a plain tensor);
    anything else goes through :func:`record` by way of the full dispatch path."""
    try:
        st = _tls.state
    except AttributeError:
        return
    tapes = st.tapes
    if st.accumulators or STATE.check_numerics or len(tapes) != 1 or op.nondiff or \
            op.multi or type(x) is not Tensor:
        return _slow_path(op, (x,), out, attrs, (v,))
    tracked = tapes[0]._tracked
    i0 = x._id
    if i0 in tracked and out._value.dtype.kind != "f":
        if out._value.dtype.kind == "c":
            record(tapes, op, (x,), out, attrs, (v,))
        return
    if i0 in tracked:
        tracked.add(out._id)
        save = op.save_inputs
        tapes[0]._entries.append((op, attrs, (i0,), (x,) if save else None, None, (out._id,),
                                  (out,) if op.save_output else None, out._device,
                                  (v,) if save else None))


def record_binary(op, x, y, out, attrs, xv, yv):
    """Record a two-input, one-output op (dispatch's fast path: one tape, a plain tensor first
    and a plain tensor or a Python number second); anything else goes through :func:`record`."""
    try:
        st = _tls.state
    except AttributeError:
        return
    tapes = st.tapes
    if st.accumulators or STATE.check_numerics or len(tapes) != 1 or op.nondiff or \
            op.multi or type(x) is not Tensor or (type(y) is not Tensor and isinstance(y, Tensor)):
        return _slow_path(op, (x, y), out, attrs, (xv, yv))
    tracked = tapes[0]._tracked
    i0 = x._id
    i1 = y._id if type(y) is Tensor else 0
    if (i0 in tracked or i1 in tracked) and out._value.dtype.kind != "f":
        if out._value.dtype.kind == "c":
            record(tapes, op, (x, y), out, attrs, (xv, yv))
        return
    if i0 in tracked or i1 in tracked:
        tracked.add(out._id)
        save = op.save_inputs
        shapes = None if save or not op.broadcasts else (xv.shape, yv.shape if i1 else None)
        tapes[0]._entries.append((op, attrs, (i0, i1), (x, y) if save else None, shapes,
                                  (out._id,), (out,) if op.save_output else None, out._device,
                                  (xv, yv) if save else None))


def record(tapes, op, args, result, attrs, vals=None):
    """Record ``op`` on each of this thread's recording tapes that tracks an input (the
    general case: several tapes, Variables, any number of inputs and outputs)."""
    if _speedups is not None and len(tapes) == 1 and type(args) is tuple and \
            _speedups.record(tapes[0], op, args, result, attrs, vals):
        return   # done in C (one tape, one output)
    entry = None
    out_ids = None
    has_var = False
    for tape in tapes:
        tracked = tape._tracked
        hit = False
        for a in args:
            if isinstance(a, Tensor):
                if a._id in tracked:
                    hit = True
                    if type(a) is Variable:
                        has_var = True
                elif type(a) is Variable:
                    has_var = True
                    if tape._watch_accessed and a.trainable and tape._watch_variable(a):
                        hit = True
        if not hit or op.nondiff:
            continue
        if entry is None:
            if op.multi:
                outs = result
                out_ids = [o._id for o in outs if o._value.dtype.kind in "fc"]
                if not out_ids:
                    return
                out_ids_all = tuple([o._id for o in outs])
                if any(o._value.dtype.kind == "c" for o in outs):
                    op = op.complex_view
            else:
                kind = result._value.dtype.kind
                if kind != "f":
                    if kind != "c":
                        return
                    op = op.complex_view
                outs = (result,)
                out_ids = out_ids_all = (result._id,)
            n = len(args)
            if n == 1:
                in_ids = (args[0]._id,)
            elif n == 2:
                a0, a1 = args
                in_ids = (a0._id if isinstance(a0, Tensor) else 0,
                          a1._id if isinstance(a1, Tensor) else 0)
            else:
                in_ids = tuple([a._id if isinstance(a, Tensor) else 0 for a in args])
            shapes = None
            if op.save_inputs:
                saved = args
                if has_var:
                    saved = tuple([_snapshot(v) if type(v) is Variable else v for v in args])
                if vals is None:
                    vals = tuple([a._value if isinstance(a, Tensor) else a for a in args])
            else:
                saved = vals = None
                if op.broadcasts:
                    shapes = tuple([a._value.shape if isinstance(a, Tensor) else None
                                    for a in args])
            entry = (op, attrs, in_ids, saved, shapes, out_ids_all,
                     outs if (op.save_output or op.multi) else None, outs[0]._device, vals)
        if len(out_ids) == 1:
            tracked.add(out_ids[0])
        else:
            tracked.update(out_ids)
        tape._entries.append(entry)


# --- the backward sweep -------------------------------------------------------------------

def _reachable(entries, source_ids):
    """Indices of entries on a path from a source, and every id reachable from one."""
    reach = set(source_ids)
    order = []
    for idx, e in enumerate(entries):
        if e is None:
            continue
        for i in e[2]:
            if i in reach:
                reach.update(e[5])
                order.append(idx)
                break
    return order, reach


def _sum_to_batched(ops, g, shape, batch):
    """Sum ``g`` (maybe with ``batch`` leading cotangent axes) down to ``batch + shape``."""
    gshape = tuple(g.shape)
    nb = len(batch)
    inner = gshape[nb:]
    if inner == tuple(shape):
        return g
    return ops.sum_to(g, shape=batch + tuple(shape)) if not nb else \
        ops.sum_to_batched(g, shape=tuple(shape), batch_ndim=nb)


def backward(entries, seeds, source_ids, *, differentiable, free=False, batch=(), reach=None):
    """Walk ``entries`` backwards from ``seeds`` ({id: cotangent}); return {id: gradient}.

    Cotangents are raw arrays, or tensors when ``differentiable``. With ``batch`` (a tuple of
    leading axis sizes) every cotangent carries those extra leading axes (vectorised
    Jacobians). ``free`` drops each entry once used (non-persistent tapes). ``reach``, when
    given, is a set known to hold every id reachable from the sources (the tape's tracked set
    when the sources include every watched tensor), which skips the pruning pass.
    """
    with np.errstate(all="ignore"):
        return _backward(entries, seeds, source_ids, differentiable, free, batch, reach)


def _backward(entries, seeds, source_ids, differentiable, free, batch, reach=None):
    if reach is None:
        order, reach = _reachable(entries, source_ids)
    else:
        order = range(len(entries))
    grads = dict(seeds)
    keep = set(source_ids)
    owned = set()   # ids whose gradient array was allocated by an accumulation here
    nb = len(batch)
    check_numerics = STATE.check_numerics

    def general(idx, e, ops):
        """One entry, any kind: several inputs or outputs, batches, checks, tensors."""
        op, attrs, in_ids, saved, shapes, out_ids, outs, dev, vals = e
        n_in = len(in_ids)
        vjp = op.vjp
        if op.multi:
            gs = [grads.get(o) for o in out_ids]
            if all(x is None for x in gs):
                return
            g = tuple(_zeros_for(ops, outs[k], batch, differentiable) if x is None else x
                      for k, x in enumerate(gs))
            ans = outs if differentiable else tuple(o._value for o in outs)
            for o in out_ids:
                if o not in keep:
                    grads.pop(o, None)
        else:
            oid = out_ids[0]
            g = grads.get(oid)
            if g is None:
                return
            if oid not in keep:
                del grads[oid]
            ans = None if outs is None else (outs[0] if differentiable else outs[0]._value)
        if vjp is None:
            raise LookupError(f"gradient: no gradient rule is registered for op '{op.name}'; "
                              "wrap the computation in gt.stop_gradient or give it a "
                              "gt.custom_gradient")
        if n_in == 1:
            needs = _NEED1
        elif n_in == 2:
            needs = (in_ids[0] in reach, in_ids[1] in reach)
        else:
            needs = tuple([i in reach for i in in_ids])
        if saved is None:
            args = _NONE1 if n_in == 1 else (None,) * n_in
        else:
            args = saved if differentiable else vals
        in_grads = vjp(ops, needs, g, ans, *args, **attrs) if attrs else \
            vjp(ops, needs, g, ans, *args)
        if check_numerics:
            from .debugging import check_gradient_output
            check_gradient_output(op, in_grads, args, dev)
        if len(in_grads) != n_in:
            raise ValueError(f"gradient rule of op '{op.name}' returned {len(in_grads)} "
                             f"gradients for {n_in} inputs")
        check = op.broadcasts or nb
        for k, gi in enumerate(in_grads):
            if gi is None or not needs[k]:
                continue
            if check:
                shape = vals[k].shape if vals is not None else (shapes[k] if shapes else None)
                if shape is not None and (gi.shape[nb:] if nb else gi.shape) != shape:
                    shape = tuple(shape)
                    if op.broadcasts or not nb:
                        gi = _sum_to_batched(ops, gi, shape, batch)
                    if tuple(gi.shape[nb:]) != shape:
                        raise ValueError(f"gradient rule of op '{op.name}' returned shape "
                                         f"{tuple(gi.shape)} for input {k} of shape {shape}")
            iid = in_ids[k]
            prev = grads.get(iid)
            if prev is None:
                grads[iid] = gi
            elif iid in owned:
                # an array this sweep made for this id alone: accumulate in place
                prev += gi
                grads[iid] = prev   # (NumPy scalars rebind instead)
            else:
                grads[iid] = prev + gi
                if not differentiable:
                    owned.add(iid)
        if free:
            entries[idx] = None

    if differentiable:
        for idx in reversed(order):
            e = entries[idx]
            if e is not None:
                general(idx, e, diff_ops)
        return grads
    fast = not nb and not check_numerics
    # With several GPUs a device's rules run with it made current (per entry, in Python).
    switching = _devbase.SWITCHING_DEVICES and any(
        e is not None and e[7].needs_switch for e in entries)
    if fast and _speedups is not None and not switching:
        # the loop below, in C
        _speedups.sweep(entries, order, grads, keep, reach, owned, free, raw_ops,
                        _sum_to_batched, general)
        return grads
    last_dev = ops = None
    for idx in reversed(order):
        e = entries[idx]
        if e is None:
            continue
        op, attrs, in_ids, saved, shapes, out_ids, outs, dev, vals = e
        if dev is not last_dev:
            ops = raw_ops(dev)
            last_dev = dev
        n_in = len(in_ids)
        vjp = op.vjp
        if dev.needs_switch:
            with dev.activate():
                general(idx, e, ops)
            continue
        if not fast or n_in > 2 or vjp is None or op.multi:
            general(idx, e, ops)
            continue
        # The common case on raw arrays: one output, one or two inputs, no checks. It
        # repeats general()'s accumulation on purpose: a shared helper would add a call per
        # recorded op to the sweep.
        oid = out_ids[0]
        g = grads.pop(oid, None)
        if g is None:
            continue
        if oid in keep:
            grads[oid] = g
        ans = None if outs is None else outs[0]._value
        if n_in == 1:
            needs = _NEED1
            args = vals or _NONE1
        else:
            needs = (in_ids[0] in reach, in_ids[1] in reach)
            args = vals or _NONE2
        if attrs:
            in_grads = vjp(ops, needs, g, ans, *args, **attrs)
        else:
            in_grads = vjp(ops, needs, g, ans, *args)
        broadcasts = op.broadcasts
        for k in range(n_in):
            gi = in_grads[k]
            if gi is None or not needs[k]:
                continue
            if broadcasts:
                shape = vals[k].shape if vals is not None else shapes[k]
                if gi.shape != shape:
                    gi = _sum_to_batched(ops, gi, tuple(shape), batch)
            iid = in_ids[k]
            prev = grads.get(iid)
            if prev is None:
                grads[iid] = gi
            elif iid in owned:
                prev += gi
                grads[iid] = prev
            else:
                grads[iid] = prev + gi
                owned.add(iid)
        if free:
            entries[idx] = None
    return grads


_NEED1 = (True,)
_NONE1 = (None,)
_NONE2 = (None, None)


def _zeros_for(ops, out, batch, differentiable):
    """A zero cotangent for output ``out`` of a multi-output op (with ``batch`` axes)."""
    v = out._value
    if not differentiable:
        return ops.zeros(shape=tuple(batch) + tuple(v.shape), dtype=v.dtype)
    z = ops.zeros_like(out)   # on out's device, unlike zeros
    return ops.broadcast_to(z, shape=tuple(batch) + tuple(v.shape)) if batch else z


# --- the tape -----------------------------------------------------------------------------

class GradientTape:
    """Record operations for automatic differentiation, as ``tf.GradientTape``."""

    # Slots make the per-op reads of the recording state cheap (the C recorder reads them
    # by offset); __dict__ keeps the tape open to attributes of subclasses and users.
    __slots__ = ("_persistent", "_watch_accessed", "_entries", "_tracked", "_roots",
                 "_watched_vars", "_recording", "_live", "_warned_inside", "__dict__",
                 "__weakref__")

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._entries = []
        self._tracked = set()
        self._roots = set()
        self._watched_vars = []
        self._recording = False
        self._live = False          # has a tape to record into (TF: self._tape is not None)
        self._warned_inside = False

    # --- context ------------------------------------------------------------------------
    def __enter__(self):
        self._push()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop()
        return False

    def _push(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to "
                             "re-enter an already-active tape.")
        if not self._live:
            self._entries = []
            self._tracked = set()
            self._roots = set()
            self._live = True
        thread_state().tapes.append(self)
        STATE.active += 1
        self._recording = True

    def _pop(self):
        if not self._recording:
            raise ValueError("Tape is not recording.")
        tapes = thread_state().tapes
        for i in range(len(tapes) - 1, -1, -1):
            if tapes[i] is self:
                del tapes[i]
                break
        STATE.active -= 1
        self._recording = False

    # --- watching -----------------------------------------------------------------------
    def _watch_variable(self, var) -> bool:
        if var._value.dtype.kind not in "fc":
            return False
        if var._id not in self._tracked:
            self._tracked.add(var._id)
            self._roots.add(var._id)
            self._watched_vars.append(var)
        return True

    def watch(self, tensor):
        """Track a tensor, a Variable, or a nested structure of them (not while recording
        is stopped by :meth:`stop_recording`, as in TF)."""
        stopped = self.__dict__.get("_stopped", False)
        for t in nest.flatten(tensor):
            if not isinstance(t, Tensor):
                raise ValueError(f"GradientTape.watch: passed in {t!r} of type "
                                 f"{type(t).__name__}, which is not a Tensor or Variable")
            if t._value.dtype.kind not in "fc":
                _log.warning("The dtype of the watched tensor must be floating (e.g. "
                             "gt.float32), got %s", t.dtype.name)
                warnings.warn(f"GradientTape.watch: the watched tensor has dtype "
                              f"{t.dtype.name}; only floating and complex tensors get "
                              "gradients",
                              RuntimeWarning, stacklevel=2)
                continue
            if stopped:
                continue
            if not self._live:
                self._entries = []
                self._tracked = set()
                self._roots = set()
                self._live = True
            if isinstance(t, Variable):
                self._watch_variable(t)
            else:
                self._tracked.add(t._id)
                self._roots.add(t._id)

    def watched_variables(self):
        """The Variables watched so far, in the order they were created (as TensorFlow)."""
        return tuple(sorted(self._watched_vars, key=lambda v: v._id))

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording operations on this tape."""
        if not self._live:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._pop()
        self.__dict__["_stopped"] = True       # (a watch meanwhile is not recorded, as TF)
        try:
            yield
        finally:
            self.__dict__["_stopped"] = False
            self._push()

    def reset(self):
        """Drop everything recorded and watched; keep recording."""
        self._pop()
        self._live = False
        self._entries = []
        self._tracked = set()
        self._roots = set()
        self._watched_vars = []
        self._push()

    # --- gradients ----------------------------------------------------------------------
    def _begin_use(self, what):
        if not self._live:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        if self._recording:
            if not self._persistent:
                self._pop()
            elif not self._warned_inside:
                self._warned_inside = True
                _log.warning("Calling GradientTape.%s on a persistent tape inside its context "
                             "is significantly less efficient than calling it outside the "
                             "context (it causes the gradient ops to be recorded on the tape, "
                             "leading to increased CPU and memory usage). Only call "
                             "GradientTape.%s inside the context if you actually want to "
                             "trace the gradient in order to compute higher order derivatives.",
                             what, what)

    def _finish_use(self):
        if not self._persistent:
            self._entries = []
            self._tracked = set()
            self._roots = set()
            self._live = False

    @staticmethod
    def _differentiable_now():
        st = thread_state()
        return bool(st.tapes) or bool(st.accumulators)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradients of ``target`` (summed if several) with respect to ``sources``."""
        if target is None:
            raise TypeError("Argument `target` should be a list or nested structure of Tensors, "
                            "Variables or CompositeTensors to be differentiated, but received None.")
        zero = _unconnected_mode(unconnected_gradients)
        self._begin_use("gradient")
        try:
            flat_targets = nest.flatten(target)
            flat_sources = nest.flatten(sources)
            for s in flat_sources:
                if not isinstance(s, Tensor):
                    raise TypeError(f"GradientTape.gradient: sources must be Tensors or "
                                    f"Variables, got {type(s).__name__}: {s!r}")
            for t in flat_targets:
                if not isinstance(t, Tensor):
                    raise TypeError(f"GradientTape.gradient: targets must be Tensors or "
                                    f"Variables, got {type(t).__name__}: {t!r}")
            if output_gradients is not None:
                flat_og = nest.flatten(output_gradients)
                if len(flat_og) != len(flat_targets):
                    raise ValueError(f"GradientTape.gradient: {len(flat_og)} output_gradients "
                                     f"for {len(flat_targets)} targets")
            else:
                flat_og = [None] * len(flat_targets)
            differentiable = self._differentiable_now()
            seeds = {}
            for t, og in zip(flat_targets, flat_og):
                if t._value.dtype.kind not in "fc":
                    continue
                seed = _seed(t, og, differentiable)
                prev = seeds.get(t._id)
                seeds[t._id] = seed if prev is None else prev + seed
            source_ids = [s._id for s in flat_sources if s._value.dtype.kind in "fc"]
            # When the sources include every watched tensor, everything tracked is
            # reachable from them and the pruning pass can be skipped.
            reach = self._tracked if self._roots.issubset(source_ids) else None
            grads = backward(self._entries, seeds, source_ids, differentiable=differentiable,
                             free=not self._persistent, reach=reach)
            results = [_result(s, grads.get(s._id), zero, differentiable) for s in flat_sources]
        finally:
            self._finish_use()
        return nest.pack_sequence_as(sources, results)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """Full Jacobian ``target.shape + source.shape`` for each source."""
        from .jacobians import tape_jacobian
        return tape_jacobian(self, target, sources, unconnected_gradients,
                             parallel_iterations, experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians ``[b, y..., x...]`` for a batch of independent examples."""
        from .jacobians import tape_batch_jacobian
        return tape_batch_jacobian(self, target, source, unconnected_gradients,
                                   parallel_iterations, experimental_use_pfor)

    def __del__(self):
        # A tape deleted while recording (an exception inside `with`) leaves the stack clean.
        try:
            if self._recording:
                self._pop()
        except Exception:
            pass


def _seed(target: Tensor, og, differentiable):
    dev = target._device
    v = target._value
    if og is None:
        with dev.activate():
            arr = dev.xp.empty(v.shape, dtype=v.dtype)   # (np.ones: empty + fill in Python)
            arr.fill(1)
        return Tensor(arr, dev) if differentiable else arr
    if not isinstance(og, Tensor):
        og = Tensor(dev.asarray(og, dtype=v.dtype), dev)
    if tuple(og._value.shape) != tuple(v.shape):
        raise ValueError(f"GradientTape.gradient: output_gradients has shape "
                         f"{tuple(og._value.shape)}, the target has shape {tuple(v.shape)}")
    if og._value.dtype != v.dtype:
        raise TypeError(f"GradientTape.gradient: output_gradients has dtype "
                        f"{og.dtype.name}, the target has dtype {target.dtype.name}")
    if og._device is not dev:
        raise ValueError(f"GradientTape.gradient: output_gradients is on {og._device}, the "
                         f"target on {dev}")
    return og if differentiable else og._value


def _result(source: Tensor, g, zero, differentiable):
    if g is None:
        if zero:        # (an integer source too: zeros of its dtype, as TF)
            dev = source._device
            with dev.activate():
                return Tensor(dev.xp.zeros(source._value.shape, dtype=source._value.dtype), dev)
        return None
    if differentiable:
        return g
    return _new_tensor(g, source._device)


if _speedups is not None:
    _speedups.bind_tape(GradientTape)
