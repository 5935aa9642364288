"""Specs for gradtape/ops/extra.py (special functions, tf.math binaries, slicing, scatters,
stitches) and the differentiable functions composed in control_flow.py."""
from __future__ import annotations

import numpy as np

import gradtape as gt
from . import BROADCAST, UNARY, Spec, away_from_zero, distinct, normal, positive, unit


def _un(name, fn, domain=normal, shapes=UNARY, ops=None, **kw):
    return Spec(name, fn, shapes, ops=ops or (name,), domain=domain, **kw)


def _bin(name, fn, domains, shapes=BROADCAST, ops=None, **kw):
    return Spec(name, fn, shapes, ops=ops or (name,), domains=domains, **kw)


def _probability(rng, shape):
    return rng.uniform(0.05, 0.95, shape)


def _above_one(rng, shape):
    return rng.uniform(1.2, 3.0, shape)


def _with_zeros(rng, shape):
    """Normal values, every third one exactly 0 (the ``x == 0`` branch of xdivy & co)."""
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    flat[::3] = 0.0
    return flat.reshape(shape)


def _scan_fn(x):
    return gt.scan(lambda acc, e: acc * gt.sin(e) + e * e, x, initializer=gt.ones_like(x[0]))


def _fold_fn(x, y):
    return (gt.foldl(lambda acc, e: acc * e[0] + e[1], (x, y), initializer=y[0] * 0.5)
            + gt.foldr(lambda acc, e: acc * e, x, initializer=y[0]))


SPECS = [
    # --- special functions ---
    _un("lgamma", gt.math.lgamma, domain=positive),
    _un("lgamma_negative", gt.math.lgamma, ops=("lgamma",),
        domain=lambda r, s: r.uniform(-2.8, -2.2, s)),
    _un("digamma", gt.math.digamma, domain=positive, rtol=1e-4, atol=1e-5),
    _bin("polygamma", lambda x: gt.math.polygamma(gt.constant(np.full(x.shape, 2.0, x.dtype.np)),
                                                  x), (positive,), shapes=UNARY, rtol=1e-4,
         atol=1e-5),
    _un("erfinv", gt.math.erfinv, domain=unit),
    _un("ndtri", gt.math.ndtri, domain=_probability, rtol=1e-4, atol=1e-5),
    _un("erfcinv", gt.math.erfcinv, domain=lambda r, s: r.uniform(0.2, 1.8, s),
        ops=("ndtri",), rtol=1e-4, atol=1e-5),
    _un("bessel_i0e", gt.math.bessel_i0e, domain=away_from_zero),
    _un("bessel_i1e", gt.math.bessel_i1e, domain=away_from_zero),
    _un("bessel_i0", gt.math.bessel_i0),
    _un("bessel_i1", gt.math.bessel_i1, domain=away_from_zero),
    _un("lbeta", gt.math.lbeta, shapes=[((4,),), ((2, 3),)], domain=positive,
        ops=("lgamma", "reduce_sum")),
    # incomplete gamma in x (the gradient in a has no gradient, as TF's IgammaGradA, so the
    # second-order table cannot take it: tests/test_ops_more.py checks it against TF and
    # finite differences)
    _bin("igamma", gt.math.igamma, (positive, positive), wrt=(1,)),
    _bin("igammac", gt.math.igammac, (positive, positive), wrt=(1,)),
    _bin("zeta", gt.math.zeta, (_above_one, positive), wrt=(1,), rtol=1e-4, atol=1e-6),
    Spec("betainc", lambda a, b, x: gt.math.betainc(a, b, x), [((3, 4), (3, 4), (3, 4)),
                                                               ((), (), (5,))],
         domains=(positive, positive, _probability), wrt=(2,), rtol=1e-4, atol=1e-6),
    # --- inverse hyperbolic functions, atan2, the x == 0 / y == 0 binaries ---
    _un("asinh", gt.math.asinh),
    _un("acosh", gt.math.acosh, domain=_above_one),
    _un("atanh", gt.math.atanh, domain=unit),
    _bin("atan2", gt.math.atan2, (normal, away_from_zero)),
    # (at x == 0 TF's gradients are 0 where the function's is not: tested by value in
    # tests/test_ops_more.py)
    _bin("xdivy", gt.math.xdivy, (normal, away_from_zero)),
    _bin("xlog1py", gt.math.xlog1py, (normal, positive)),
    _bin("multiply_no_nan", gt.math.multiply_no_nan, (normal, _with_zeros)),
    _un("reciprocal_no_nan", gt.math.reciprocal_no_nan, domain=away_from_zero,
        ops=("divide_no_nan",)),
    Spec("cumulative_logsumexp", lambda x: gt.math.cumulative_logsumexp(x, axis=1)[:-1]
         + gt.math.cumulative_logsumexp(x, axis=0, exclusive=True, reverse=True)[:-1],
         [((3, 4),)]),
    Spec("cumulative_logsumexp_1d", lambda x: gt.math.cumulative_logsumexp(x * x),
         [((5,),)], ops=("cumulative_logsumexp",)),
    Spec("polyval", lambda c, x: gt.math.polyval([c, c * c, 2.0 * c], x),
         [((3,), (3,)), ((), (2, 3))], ops=("multiply", "add")),
    # --- slicing ---
    Spec("strided_slice", lambda x: gt.strided_slice(x, [1, 0, 2], [3, 4, 0], [1, 2, -1],
                                                     end_mask=4, new_axis_mask=0) ** 2
         + gt.strided_slice(x, [0, 1], [1, 2], ellipsis_mask=1, shrink_axis_mask=2)[1:, :1, None],
         [((3, 4, 3),)], ops=("getitem",)),
    Spec("slice", lambda x: gt.slice(x, [1, 0], [-1, 2]) * gt.slice(x, [0, 2], [2, 2]),
         [((3, 4),)], ops=("getitem",)),
    # --- scatters, partitions, stitches ---
    Spec("tensor_scatter_nd_max", lambda t, u: gt.tensor_scatter_nd_max(
        t, [[1], [2], [2], [0]], u) * gt.tensor_scatter_nd_min(t, [[3], [0], [3], [1]], u * 0.5),
         [((4, 3), (4, 3))], ops=("tensor_scatter_nd_max", "tensor_scatter_nd_min"),
         domain=distinct),
    Spec("tensor_scatter_nd_max_2d", lambda t, u: gt.tensor_scatter_nd_max(
        t, [[0, 1], [2, 2], [0, 1]], u) ** 2, [((3, 3), (3,))],
         ops=("tensor_scatter_nd_max",), domain=distinct),
    # (no repeated index: TF's gradient of an overwritten entry is not the function's;
    # tests/test_ops_more.py checks it by value)
    Spec("dynamic_stitch", lambda a, b: gt.dynamic_stitch(
        [[0, 4, 6], [[1, 5], [2, 3]]], [a, b]) ** 2, [((3, 2), (2, 2, 2))]),
    Spec("dynamic_partition", lambda x: gt.dynamic_partition(x, [[1, 0, 1], [2, 1, 0]], 3)[1]
         * gt.dynamic_partition(x, [[0, 0, 0], [1, 1, 1]], 2)[1], [((2, 3, 2),)],
         ops=("getitem",)),
    Spec("reverse_sequence", lambda x: gt.reverse_sequence(x, [2, 0, 4], seq_axis=1) * x
         + gt.reverse_sequence(x, [3, 1, 2, 3], seq_axis=0, batch_axis=1), [((3, 4),)],
         ops=("getitem",)),
    # --- scans and folds (the tape records each step) ---
    Spec("scan", _scan_fn, [((4,),), ((3, 2),)], ops=("unstack", "stack")),
    Spec("foldl_foldr", _fold_fn, [((3,), (3,)), ((3, 2), (3, 2))], ops=("unstack",)),
    Spec("recompute_grad", lambda x, y: gt.recompute_grad(
        lambda a, b: gt.tanh(a @ b) * a[:, :1])(x, y), [((2, 3), (3, 2))],
         ops=("tanh", "matmul")),
]
