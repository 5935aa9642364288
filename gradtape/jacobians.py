"""Jacobians from one recorded forward pass: vectorised over cotangents when every rule on
the path accepts a batch axis, row by row otherwise."""
from __future__ import annotations

import numpy as np

from . import nest
from .registry import REGISTRY
from .tape import _unconnected_mode, _reachable, backward
from .tensor import Tensor

__all__ = ["tape_jacobian", "tape_batch_jacobian"]


def _check_tape(tape, use_pfor, what):
    if not tape._live:
        raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                           "of gradients (or jacobians)")
    if not use_pfor and not tape._persistent:
        raise RuntimeError(f"GradientTape.{what} with experimental_use_pfor=False needs a "
                           "persistent tape (GradientTape(persistent=True))")


def _vectorisable(entries, source_ids):
    order, _ = _reachable(entries, source_ids)
    return all(entries[i][0].batch_rule for i in order)


def _rows(tape, target, sources_ids, n, differentiable, vectorise, chunk=None):
    """Gradients of each of the n flattened target elements: {source id: [n, *shape] array}."""
    dev = target._device
    xp = dev.xp
    v = target._value
    shape = tuple(v.shape)
    if vectorise:
        eye = xp.eye(n, dtype=v.dtype).reshape((n,) + shape)
        seed = Tensor(eye, dev) if differentiable else eye
        grads = backward(tape._entries, {target._id: seed}, sources_ids,
                         differentiable=differentiable, batch=(n,))
        return {sid: grads.get(sid) for sid in sources_ids}, True
    rows = {sid: [] for sid in sources_ids}
    for i in range(n):
        e = xp.zeros(n, dtype=v.dtype)
        e[i] = 1
        e = e.reshape(shape)
        seed = Tensor(e, dev) if differentiable else e
        grads = backward(tape._entries, {target._id: seed}, sources_ids,
                         differentiable=differentiable)
        for sid in sources_ids:
            rows[sid].append(grads.get(sid))
    return rows, False


def _stack_rows(rows_for_source, source, n, differentiable):
    from .ops.shape import stack
    dev = source._device
    sv = source._value
    if all(r is None for r in rows_for_source):
        return None
    filled = []
    for r in rows_for_source:
        if r is None:
            z = dev.xp.zeros(sv.shape, dtype=sv.dtype)
            r = Tensor(z, dev) if differentiable else z
        filled.append(r)
    if differentiable:
        return stack(filled, axis=0)
    return dev.xp.stack(filled, axis=0)


def tape_jacobian(tape, target, sources, unconnected_gradients, parallel_iterations,
                  experimental_use_pfor):
    zero = _unconnected_mode(unconnected_gradients)
    _check_tape(tape, experimental_use_pfor, "jacobian")
    if not isinstance(target, Tensor):
        raise TypeError(f"GradientTape.jacobian: target must be a single tensor, got "
                        f"{type(target).__name__}")
    tape._begin_use("jacobian")
    try:
        flat_sources = nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, Tensor):
                raise TypeError(f"GradientTape.jacobian: sources must be tensors, got "
                                f"{type(s).__name__}")
        differentiable = tape._differentiable_now()
        ids = [s._id for s in flat_sources if s._value.dtype.kind == "f"]
        tshape = tuple(target._value.shape)
        n = int(np.prod(tshape)) if tshape else 1
        vectorise = bool(experimental_use_pfor) and _vectorisable(tape._entries, ids) and n > 1
        results = []
        if target._value.dtype.kind != "f" or n == 0:
            rows, stacked = {sid: None for sid in ids}, True
        else:
            rows, stacked = _rows(tape, target, ids, n, differentiable, vectorise)
        for s in flat_sources:
            sv = s._value
            out_shape = tshape + tuple(sv.shape)
            r = rows.get(s._id) if sv.dtype.kind == "f" else None
            if r is not None and not stacked:
                r = _stack_rows(r, s, n, differentiable)
            if r is None:
                results.append(Tensor(s._device.xp.zeros(out_shape, dtype=sv.dtype), s._device)
                               if zero and sv.dtype.kind == "f" else None)
                continue
            if differentiable:
                from .ops.shape import reshape
                results.append(reshape(r, out_shape))
            else:
                results.append(Tensor(r.reshape(out_shape), s._device))
    finally:
        tape._finish_use()
    return nest.pack_sequence_as(sources, results)


def tape_batch_jacobian(tape, target, source, unconnected_gradients, parallel_iterations,
                        experimental_use_pfor):
    zero = _unconnected_mode(unconnected_gradients)
    _check_tape(tape, experimental_use_pfor, "batch_jacobian")
    if not isinstance(target, Tensor) or not isinstance(source, Tensor):
        raise TypeError("GradientTape.batch_jacobian: target and source must be tensors")
    ts, ss = tuple(target._value.shape), tuple(source._value.shape)
    if len(ts) < 1 or len(ss) < 1:
        raise ValueError(f"GradientTape.batch_jacobian: target and source need rank >= 1 "
                         f"(a batch axis), got shapes {ts} and {ss}")
    if ts[0] != ss[0]:
        raise ValueError(f"GradientTape.batch_jacobian: target batch size {ts[0]} and source "
                         f"batch size {ss[0]} differ")
    tape._begin_use("batch_jacobian")
    try:
        b = ts[0]
        per = int(np.prod(ts[1:])) if len(ts) > 1 else 1
        differentiable = tape._differentiable_now()
        dev = target._device
        xp = dev.xp
        sid = source._id
        out_shape = (b,) + ts[1:] + ss[1:]
        if source._value.dtype.kind != "f" or target._value.dtype.kind != "f":
            res = None
        else:
            # Examples are independent, so cotangent j (element j of every example at once)
            # gives row j of every example's Jacobian in one sweep.
            vectorise = bool(experimental_use_pfor) and _vectorisable(tape._entries, [sid]) \
                and per > 1
            v = target._value
            if vectorise:
                eye = xp.eye(per, dtype=v.dtype).reshape((per, 1) + ts[1:])
                seed = xp.broadcast_to(eye, (per,) + ts).copy()
                seed_t = Tensor(seed, dev) if differentiable else seed
                grads = backward(tape._entries, {target._id: seed_t}, [sid],
                                 differentiable=differentiable, batch=(per,))
                g = grads.get(sid)
                rows = None if g is None else g
            else:
                rows = []
                for j in range(per):
                    e = xp.zeros((b, per), dtype=v.dtype)
                    e[:, j] = 1
                    e = e.reshape(ts)
                    seed_t = Tensor(e, dev) if differentiable else e
                    grads = backward(tape._entries, {target._id: seed_t}, [sid],
                                     differentiable=differentiable)
                    rows.append(grads.get(sid))
                rows = _stack_rows(rows, source, per, differentiable)
            if rows is None:
                res = None
            else:
                # rows: [per, b, *ss[1:]] -> [b, *ts[1:], *ss[1:]]
                from .ops.shape import reshape, transpose
                nd = 1 + len(ss)
                perm = [1, 0] + list(range(2, nd))
                if differentiable:
                    res = reshape(transpose(rows, perm), out_shape)
                else:
                    res = Tensor(xp.transpose(rows, perm).reshape(out_shape), dev)
        if res is None:
            # TF gives zeros (never None) for an unconnected source here.
            res = Tensor(source._device.xp.zeros(out_shape, dtype=source._value.dtype),
                         source._device)
        _ = zero
    finally:
        tape._finish_use()
    return res


_ = REGISTRY
