"""Jacobians from one recorded forward pass.

``GradientTape.jacobian`` sends a batch of cotangents (rows of the identity, with a leading
batch axis) through the recorded ops in one backward sweep. Rules declared with
``batch_rule=False`` cannot take that extra axis: only those entries run row by row inside
the otherwise vectorised sweep. ``batch_jacobian`` uses the independence of the examples
along the first axis, so it needs one sweep row per output element of one example.
``experimental_use_pfor=False`` computes every row with its own sweep (TensorFlow's
``while_loop`` path). ``parallel_iterations`` bounds how many rows one sweep carries.
"""
from __future__ import annotations

import functools
from math import prod as _prod
import warnings

import numpy as np

from . import nest
from .registry import Op
from .tape import _unconnected_mode, _reachable, backward
from .tensor import Tensor

__all__ = ["tape_jacobian", "tape_batch_jacobian", "batched_entries"]

# Elements of cotangent a vectorised sweep carries by default (rows x largest of the
# target and the sources); ``parallel_iterations`` overrides the row count.
_DEFAULT_BUDGET = 1 << 24


def _check_tape(tape, use_pfor, what):
    if not tape._live:
        raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                           "of gradients (or jacobians)")
    if not use_pfor and not tape._persistent:
        raise RuntimeError("GradientTape must be created with persistent=True to compute the "
                           f"{what} with eager execution enabled and with "
                           "experimental_use_pfor set to False.")


def _check_parallel_iterations(value, what):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"GradientTape.{what}: parallel_iterations must be a positive integer "
                         f"or None, got {value!r}")
    return int(value)


# --- entries whose rule cannot take a batch axis ------------------------------------------

_LOOP_OPS: dict = {}


def _row_loop_op(op: Op) -> Op:
    """A stand-in for ``op`` whose rule accepts one leading batch axis by looping over it."""
    proxy = _LOOP_OPS.get(id(op))
    if proxy is not None and proxy[0] is op:
        return proxy[1]
    rule = op.vjp
    multi = op.multi

    def vjp(ops, needs, g, ans, *inputs, **attrs):
        n = int((g[0] if multi else g).shape[0])
        rows = []
        for i in range(n):
            gi = tuple([x[i] for x in g]) if multi else g[i]
            rows.append(rule(ops, needs, gi, ans, *inputs, **attrs) if attrs else
                        rule(ops, needs, gi, ans, *inputs))
        if not rows:
            return (None,) * len(inputs)
        out = []
        for k in range(len(rows[0])):
            col = [r[k] for r in rows]
            present = [c for c in col if c is not None]
            if not present:
                out.append(None)
                continue
            like = present[0]
            col = [ops.zeros_like(like) if c is None else c for c in col]
            out.append(ops.stack(*col, axis=-(like.ndim + 1)))
        return tuple(out)

    vjp.__name__ = f"{op.name}_row_loop_vjp"
    proxy = Op(op.name, op.forward, vjp, jvp=op.jvp, save_inputs=op.save_inputs,
               save_output=op.save_output, broadcasts=op.broadcasts, multi=op.multi,
               nondiff=op.nondiff, batch_rule=True)
    _LOOP_OPS[id(op)] = (op, proxy)
    return proxy


def _matmul_batched_rule(rule):
    """matmul's rule for a cotangent with one leading batch axis and 2-D operands, with the
    batch folded into the matrix rows: one large product instead of a stack of small ones.
    Any other case goes to the op's own rule."""

    def vjp(ops, needs, g, ans, a, b, transpose_a=False, transpose_b=False):
        if a is None or b is None or a.ndim != 2 or b.ndim != 2 or g.ndim != 3:
            return rule(ops, needs, g, ans, a, b, transpose_a=transpose_a,
                        transpose_b=transpose_b)
        n, m, k = (int(d) for d in g.shape)
        ga = gb = None
        if needs[0]:
            # d(op(a))[i] = g[i] @ op(b)^T for every row i: (n*m, k) @ op(b)^T.
            g2 = ops.reshape(g, shape=(n * m, k), in_shape=(n, m, k))
            da = ops.matmul(g2, b, transpose_b=not transpose_b)
            p = int(da.shape[-1])
            da = ops.reshape(da, shape=(n, m, p), in_shape=(n * m, p))
            ga = ops.transpose(da, perm=(0, 2, 1)) if transpose_a else da
        if needs[1] and k == 1 and not transpose_b:
            # matrix-vector products: row i of the result is g[i]^T @ op(a), one (n, m) @
            # op(a) product with no copies.
            g2 = ops.reshape(g, shape=(n, m), in_shape=(n, m, 1))
            db = ops.matmul(g2, a, transpose_b=transpose_a)
            p = int(db.shape[-1])
            gb = ops.reshape(db, shape=(n, p, 1), in_shape=(n, p))
        elif needs[1]:
            # d(op(b))[i] = op(a)^T @ g[i]: op(a)^T @ [g[0] | g[1] | ...] as (m, n*k).
            g3 = ops.reshape(ops.transpose(g, perm=(1, 0, 2)), shape=(m, n * k),
                             in_shape=(m, n, k))
            db = ops.matmul(a, g3, transpose_a=not transpose_a)
            p = int(db.shape[0])
            db = ops.transpose(ops.reshape(db, shape=(p, n, k), in_shape=(p, n * k)),
                               perm=(1, 0, 2))
            gb = ops.transpose(db, perm=(0, 2, 1)) if transpose_b else db
        return ga, gb

    vjp.__name__ = "matmul_batched_vjp"
    return vjp


def _broadcast_batched_rule(rule):
    """broadcast_to's rule with leading batch axes: sum back to ``batch + x.shape``."""

    def vjp(ops, needs, g, ans, x, shape):
        nb = g.ndim - len(shape)
        if nb <= 0 or x is None:
            return rule(ops, needs, g, ans, x, shape=shape)
        return (ops.sum_to_batched(g, shape=tuple(x.shape), batch_ndim=nb),)

    vjp.__name__ = "broadcast_to_batched_vjp"
    return vjp


def _sum_to_batched_rule(rule):
    """sum_to's rule with leading batch axes: broadcast back to ``batch + x.shape``."""

    def vjp(ops, needs, g, ans, x, shape):
        nb = g.ndim - len(shape)
        if nb <= 0 or x is None:
            return rule(ops, needs, g, ans, x, shape=shape)
        return (_unsum(ops, g, nb, tuple(shape), tuple(x.shape)),)

    vjp.__name__ = "sum_to_batched_vjp"
    return vjp


def _sum_to_batched_batched_rule(rule):
    """sum_to_batched's rule with extra leading batch axes in front of its own."""

    def vjp(ops, needs, g, ans, x, shape, batch_ndim):
        extra = g.ndim - batch_ndim - len(shape)
        if extra <= 0 or x is None:
            return rule(ops, needs, g, ans, x, shape=shape, batch_ndim=batch_ndim)
        return (_unsum(ops, g, extra + batch_ndim, tuple(shape),
                       tuple(x.shape)[batch_ndim:]),)

    vjp.__name__ = "sum_to_batched_batched_vjp"
    return vjp


def _unsum(ops, g, nb, shape, full):
    """Broadcast ``g`` (``nb`` leading axes, then ``shape``) to ``lead + full``: the
    transpose of summing ``full`` down to ``shape``."""
    lead = tuple(int(d) for d in g.shape[:nb])
    kept = lead + (1,) * (len(full) - len(shape)) + shape
    gk = ops.reshape(g, shape=kept, in_shape=tuple(int(d) for d in g.shape))
    return ops.broadcast_to(gk, shape=lead + full)


# Rules specialised for a cotangent with one leading batch axis, by primitive name; they
# take precedence over the op's own rule and over the row loop.
_BATCHED_RULES = {"matmul": _matmul_batched_rule, "broadcast_to": _broadcast_batched_rule,
                  "sum_to": _sum_to_batched_rule,
                  "sum_to_batched": _sum_to_batched_batched_rule}
_BATCHED_OPS: dict = {}


def _batched_op(op: Op) -> Op | None:
    if op.conjugate_of is not None:      # a complex view: the view of the batched rule
        batched = _batched_op(op.conjugate_of)
        return None if batched is None else batched.complex_view
    make = _BATCHED_RULES.get(op.name)
    if make is None or op.vjp is None or not op.save_inputs:
        return None
    cached = _BATCHED_OPS.get(id(op))
    if cached is not None and cached[0] is op:
        return cached[1]
    proxy = Op(op.name, op.forward, make(op.vjp), jvp=op.jvp, save_inputs=op.save_inputs,
               save_output=op.save_output, broadcasts=op.broadcasts, multi=op.multi,
               nondiff=op.nondiff, batch_rule=True)
    _BATCHED_OPS[id(op)] = (op, proxy)
    return proxy


def batched_entries(entries, source_ids):
    """A copy of ``entries`` ready for a sweep with one leading batch axis: each entry on a
    path from a source whose rule has ``batch_rule=False`` runs that rule row by row, and
    the ops with a specialised batched rule use it."""
    order, _ = _reachable(entries, source_ids)
    out = None
    for i in order:
        e = entries[i]
        op = e[0]
        if op.vjp is None:
            continue
        replacement = _batched_op(op)
        if replacement is None:
            if op.batch_rule:
                continue
            replacement = _row_loop_op(op)
        if out is None:
            out = list(entries)
        out[i] = (replacement,) + tuple(e[1:])
    return entries if out is None else out


# --- rows of the Jacobian -----------------------------------------------------------------

# What a rule that mishandles the extra batch axis raises; the rows are then computed one
# by one (a missing rule, LookupError, is reported as it is).
_RULE_ERRORS = (ValueError, TypeError, IndexError)


def _warn_fallback(what, exc):
    warnings.warn(f"GradientTape.{what}: the vectorised backward sweep failed "
                  f"({type(exc).__name__}: {exc}); computing the rows one by one instead. "
                  "A gradient rule that cannot take a leading batch axis should be declared "
                  "with batch_rule=False.", RuntimeWarning, stacklevel=4)


def _chunk_size(n, sizes, parallel_iterations):
    if parallel_iterations is not None:
        return max(1, min(n, parallel_iterations))
    widest = max([1] + [int(s) for s in sizes])
    return max(1, min(n, _DEFAULT_BUDGET // widest))


def _vectorised_rows(entries, target_id, seed_fn, n, ids, differentiable, chunk, dev):
    """Run ``ceil(n / chunk)`` batched sweeps; ``seed_fn(lo, hi)`` gives the raw seed block
    of rows ``lo:hi``. Returns {source id: [(lo, hi, rows or None), ...]}."""
    blocks = {sid: [] for sid in ids}
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        seed = seed_fn(lo, hi)
        seed = Tensor(seed, dev) if differentiable else seed
        grads = backward(entries, {target_id: seed}, ids, differentiable=differentiable,
                         batch=(hi - lo,))
        for sid in ids:
            blocks[sid].append((lo, hi, grads.get(sid)))
    return blocks


def _assemble(block_list, shape, dtype, dev, differentiable):
    """Stack the (lo, hi, rows) blocks of one source into one [n, *shape] array/tensor."""
    if all(b[2] is None for b in block_list):
        return None
    parts = []
    for lo, hi, rows in block_list:
        if rows is None:
            z = dev.xp.zeros((hi - lo,) + tuple(shape), dtype=dtype)
            rows = Tensor(z, dev) if differentiable else z
        parts.append(rows)
    if len(parts) == 1:
        return parts[0]
    if differentiable:
        from .ops.shape import concat
        return concat(parts, axis=0)
    return dev.xp.concatenate(parts, axis=0)


def _loop_rows(entries, target_id, seed_rows, n, ids, shapes, dtypes, dev, differentiable):
    """One unbatched sweep per row; ``seed_rows(i)`` gives the raw seed of row ``i``."""
    rows = {sid: [] for sid in ids}
    for i in range(n):
        seed = seed_rows(i)
        seed = Tensor(seed, dev) if differentiable else seed
        grads = backward(entries, {target_id: seed}, ids, differentiable=differentiable)
        for sid in ids:
            rows[sid].append(grads.get(sid))
    out = {}
    for sid in ids:
        rs = rows[sid]
        if all(r is None for r in rs):
            out[sid] = None
            continue
        filled = []
        for r in rs:
            if r is None:
                z = dev.xp.zeros(shapes[sid], dtype=dtypes[sid])
                r = Tensor(z, dev) if differentiable else z
            filled.append(r)
        if differentiable:
            from .ops.shape import stack
            out[sid] = stack(filled, axis=0)
        else:
            out[sid] = dev.xp.stack(filled, axis=0)
    return out


class _Seeds:
    """Rows ``lo:hi`` of the identity over a target's elements, shaped [rows, *target]."""

    def __init__(self, xp, n, shape, dtype):
        self.xp = xp
        self.n = n
        self.shape = tuple(shape)
        self.dtype = dtype

    def __call__(self, lo, hi):
        xp = self.xp
        if lo == 0 and hi == self.n:
            return xp.eye(self.n, dtype=self.dtype).reshape((self.n,) + self.shape)
        block = xp.zeros((hi - lo, self.n), dtype=self.dtype)
        block[xp.arange(hi - lo), xp.arange(lo, hi)] = 1
        return block.reshape((hi - lo,) + self.shape)

    def row(self, i):
        return self(i, i + 1)[0]


class _BatchSeeds:
    """For batch_jacobian: row j sets element j of every example, shaped [rows, b, *y]."""

    def __init__(self, xp, b, per, inner_shape, dtype):
        self.xp = xp
        self.b = b
        self.per = per
        self.inner = tuple(inner_shape)
        self.dtype = dtype

    def __call__(self, lo, hi):
        xp = self.xp
        block = xp.zeros((hi - lo, self.b, self.per), dtype=self.dtype)
        block[xp.arange(hi - lo), :, xp.arange(lo, hi)] = 1
        return block.reshape((hi - lo, self.b) + self.inner)

    def row(self, j):
        return self(j, j + 1)[0]


# --- GradientTape.jacobian ----------------------------------------------------------------

def _on_target_device(fn):
    """Run ``fn(tape, target, ...)`` with the target's device current when it needs a switch
    (one GPU among several): the seeds and blocks are made there."""
    @functools.wraps(fn)
    def run(tape, target, *args, **kwargs):
        dev = target._device if isinstance(target, Tensor) else None
        if dev is not None and dev.needs_switch:
            with dev.activate():
                return fn(tape, target, *args, **kwargs)
        return fn(tape, target, *args, **kwargs)
    return run


@_on_target_device
def tape_jacobian(tape, target, sources, unconnected_gradients, parallel_iterations,
                  experimental_use_pfor):
    """``target.shape + source.shape`` Jacobian for each source (see GradientTape.jacobian)."""
    zero = _unconnected_mode(unconnected_gradients)
    chunk_limit = _check_parallel_iterations(parallel_iterations, "jacobian")
    _check_tape(tape, experimental_use_pfor, "jacobian")
    if not isinstance(target, Tensor):
        raise TypeError(f"GradientTape.jacobian: target must be a single tensor, got "
                        f"{type(target).__name__}")
    flat_sources = nest.flatten(sources)
    for s in flat_sources:
        if not isinstance(s, Tensor):
            raise TypeError(f"GradientTape.jacobian: sources must be tensors, got "
                            f"{type(s).__name__}")
    tape._begin_use("jacobian")
    try:
        differentiable = tape._differentiable_now()
        dev = target._device
        tv = target._value
        tshape = tuple(tv.shape)
        n = _prod(tshape) if tshape else 1
        float_sources = [s for s in flat_sources if s._value.dtype.kind in "fc"]
        ids = list(dict.fromkeys(s._id for s in float_sources))
        shapes = {s._id: tuple(s._value.shape) for s in float_sources}
        dtypes = {s._id: s._value.dtype for s in float_sources}
        rows = {sid: None for sid in ids}
        if tv.dtype.kind in "fc" and n > 0 and ids:
            rows = None
            seeds = _Seeds(dev.xp, n, tshape, tv.dtype)
            if experimental_use_pfor and n > 1:
                chunk = _chunk_size(n, [n] + [_prod(s) for s in shapes.values()],
                                    chunk_limit)
                try:
                    entries = batched_entries(tape._entries, ids)
                    blocks = _vectorised_rows(entries, target._id, seeds, n, ids,
                                              differentiable, chunk, dev)
                    rows = {sid: _assemble(blocks[sid], shapes[sid], dtypes[sid], dev,
                                           differentiable) for sid in ids}
                except _RULE_ERRORS as exc:
                    _warn_fallback("jacobian", exc)
            if rows is None:
                rows = _loop_rows(tape._entries, target._id, seeds.row, n, ids, shapes, dtypes,
                                  dev, differentiable)
        results = []
        for s in flat_sources:
            sv = s._value
            out_shape = tshape + tuple(sv.shape)
            r = rows.get(s._id) if sv.dtype.kind in "fc" else None
            if r is None:
                empty = sv.dtype.kind in "fc" and n == 0 and tv.dtype.kind in "fc"
                results.append(Tensor(s._device.xp.zeros(out_shape, dtype=sv.dtype), s._device)
                               if (zero or empty) and sv.dtype.kind in "fc" else None)
            elif differentiable:
                from .ops.shape import reshape
                results.append(reshape(r, out_shape))
            else:
                results.append(Tensor(r.reshape(out_shape), s._device))
    finally:
        tape._finish_use()
    return nest.pack_sequence_as(sources, results)


# --- GradientTape.batch_jacobian ----------------------------------------------------------

@_on_target_device
def tape_batch_jacobian(tape, target, source, unconnected_gradients, parallel_iterations,
                        experimental_use_pfor):
    """Per-example Jacobians ``[b, y..., x...]`` (see GradientTape.batch_jacobian)."""
    _unconnected_mode(unconnected_gradients)
    chunk_limit = _check_parallel_iterations(parallel_iterations, "batch_jacobian")
    _check_tape(tape, experimental_use_pfor, "batch_jacobian")
    if not isinstance(target, Tensor) or not isinstance(source, Tensor):
        raise TypeError(f"GradientTape.batch_jacobian: target and source must be tensors, got "
                        f"{type(target).__name__} and {type(source).__name__}")
    ts, ss = tuple(target._value.shape), tuple(source._value.shape)
    for what, shp in (("target", ts), ("source", ss)):
        if len(shp) < 2:
            raise ValueError(f"GradientTape.batch_jacobian: the {what} needs rank >= 2 "
                             f"([batch, ...]), got shape {shp}")
    if ts[0] != ss[0]:
        raise ValueError(f"GradientTape.batch_jacobian: Need first dimension of target shape "
                         f"{ts} and source shape {ss} to match.")
    tape._begin_use("batch_jacobian")
    try:
        b = ts[0]
        per = _prod(ts[1:])
        differentiable = tape._differentiable_now()
        dev = target._device
        xp = dev.xp
        sid = source._id
        out_shape = (b,) + ts[1:] + ss[1:]
        rows = None
        if source._value.dtype.kind in "fc" and target._value.dtype.kind in "fc" and per > 0 \
                and b > 0:
            seeds = _BatchSeeds(xp, b, per, ts[1:], target._value.dtype)
            vectorised = False
            if experimental_use_pfor and per > 1:
                chunk = _chunk_size(per, [_prod(ts), _prod(ss)], chunk_limit)
                try:
                    entries = batched_entries(tape._entries, [sid])
                    blocks = _vectorised_rows(entries, target._id, seeds, per, [sid],
                                              differentiable, chunk, dev)
                    rows = _assemble(blocks[sid], ss, source._value.dtype, dev,
                                     differentiable)
                    vectorised = True
                except _RULE_ERRORS as exc:
                    _warn_fallback("batch_jacobian", exc)
            if not vectorised:
                rows = _loop_rows(tape._entries, target._id, seeds.row, per, [sid], {sid: ss},
                                  {sid: source._value.dtype}, dev, differentiable)[sid]
        if rows is None:
            # TensorFlow gives zeros (never None) for an unconnected source here.
            res = Tensor(xp.zeros(out_shape, dtype=target._value.dtype), dev)
        else:
            # rows: [per, b, *ss[1:]] -> [b, per, *ss[1:]] -> [b, *ts[1:], *ss[1:]]
            perm = [1, 0] + list(range(2, 1 + len(ss)))
            if differentiable:
                from .ops.shape import reshape, transpose
                res = reshape(transpose(rows, perm), out_shape)
            else:
                res = Tensor(xp.transpose(rows, perm).reshape(out_shape), dev)
    finally:
        tape._finish_use()
    return res
