"""Specs for the core op library (math, reductions, linear algebra, shapes)."""
from __future__ import annotations

import numpy as np

import gradtape as gt
from . import (BROADCAST, UNARY, Spec, away_from_zero, distinct, normal, positive, unit)


def _bin(name, fn, ops=None, domain=normal, domains=None, shapes=BROADCAST, order=2, **kw):
    return Spec(name, fn, shapes, ops=ops or (name,), domain=domain, domains=domains, order=order,
                **kw)


def _un(name, fn, ops=None, domain=normal, shapes=UNARY, **kw):
    return Spec(name, fn, shapes, ops=ops or (name,), domain=domain, **kw)


def _cplx(x, y):
    """x + iy (y broadcast to x's shape when a number)."""
    if not isinstance(y, gt.Tensor):
        y = x * 0 + y
    return gt.complex(x, y)


def _ctype(x):
    return gt.complex128 if x.dtype == gt.float64 else gt.complex64


def _neq_pair(rng, shape):
    return distinct(rng, shape)


def _shifted(rng, shape):
    return distinct(rng, shape) + 0.13


def _wc(x):
    """A well-conditioned matrix from any: x + 3 I."""
    return x + 3.0 * gt.eye(x.shape[-1], dtype=x.dtype)


def _spd(x):
    """A symmetric positive definite matrix: x x^T + I."""
    return gt.matmul(x, x, transpose_b=True) + gt.eye(x.shape[-1], dtype=x.dtype)


def _eigh_out(e, v):
    """Eigenvalues and (sign-free) squared eigenvectors in one tensor."""
    return v * v * gt.expand_dims(e, -2)


def _svd_out(s, u, v):
    """Singular values and (sign-free) squared singular vectors in one tensor."""
    lead = list(s.shape[:-1])
    return gt.concat([s, gt.reshape(u * u, lead + [-1]), gt.reshape(v * v, lead + [-1])], -1)


def _eig_out(e, v):
    """Eigenvalues and (phase-free) eigenvector magnitudes, order-free: per eigenvalue,
    its real part squared plus its imaginary part times a weighted |v|^2."""
    w = gt.reshape(gt.range(1.0, v.shape[-1] + 1.0, dtype=gt.math.real(e).dtype), (-1, 1))
    mag = gt.reduce_sum(w * gt.abs(v) ** 2, axis=-2)
    return gt.reduce_sum(gt.math.real(e) ** 2 + gt.math.imag(e) * mag, axis=-1)


def _main3(d):
    """Compact tridiagonal diagonals [..., 3, M] with 3 added to the main diagonal."""
    return gt.concat([d[..., :1, :], d[..., 1:2, :] + 3.0, d[..., 2:, :]], -2)


def _pivoting3(d):
    """Compact tridiagonal diagonals with a large subdiagonal (rows swap when pivoting)."""
    return gt.concat([d[..., :1, :] + 2.0, d[..., 1:2, :], d[..., 2:, :] + 4.0], -2)


def _qr_out(q, r):
    lead = list(q.shape[:-2])
    return gt.concat([gt.reshape(q * q, lead + [-1]), gt.reshape(r * r, lead + [-1])], -1)


SPECS = [
    # --- elementwise binary (every broadcast group) ---
    _bin("add", lambda x, y: x + y),
    _bin("subtract", lambda x, y: x - y),
    _bin("multiply", lambda x, y: x * y),
    _bin("divide", lambda x, y: x / y, domains=(normal, away_from_zero)),
    _bin("pow", lambda x, y: x ** y, domains=(positive, normal)),
    _bin("maximum", gt.maximum, domains=(_neq_pair, _shifted)),
    _bin("minimum", gt.minimum, domains=(_neq_pair, _shifted)),
    _bin("squared_difference", gt.math.squared_difference),
    _bin("floormod", gt.math.floormod, domains=(positive, lambda r, s: r.uniform(2.3, 2.7, s)),
         order=1, wrt=(0,)),
    _bin("xlogy", gt.math.xlogy, domains=(normal, positive)),
    _bin("divide_no_nan", gt.math.divide_no_nan, domains=(normal, away_from_zero)),
    Spec("where", lambda x, y: gt.where(x > y, x * 2.0, y * y), BROADCAST,
         ops=("where",), domains=(_neq_pair, _shifted)),
    Spec("clip_by_value", lambda x, lo, hi: gt.clip_by_value(x, lo, hi),
         [((3, 4), (3, 4), (3, 4)), ((3, 4), (), ())], ops=("clip_by_value",),
         domains=(distinct, lambda r, s: np.full(s, -1.1), lambda r, s: np.full(s, 1.3))),
    # --- elementwise unary ---
    _un("negative", lambda x: -x),
    _un("abs", gt.abs, domain=away_from_zero),
    _un("sign", lambda x: gt.sign(x) * x, ops=("sign",), domain=away_from_zero),
    _un("exp", gt.exp),
    _un("log", gt.math.log, domain=positive),
    _un("sqrt", gt.sqrt, domain=positive),
    _un("square", gt.square),
    _un("tanh", gt.tanh),
    _un("sigmoid", gt.sigmoid),
    _un("sin", gt.sin),
    _un("cos", gt.cos),
    _un("tan", gt.math.tan, domain=unit),
    _un("atan", gt.math.atan),
    _un("asin", gt.math.asin, domain=unit),
    _un("acos", gt.math.acos, domain=unit),
    _un("sinh", gt.math.sinh),
    _un("cosh", gt.math.cosh),
    _un("log1p", gt.math.log1p, domain=positive),
    _un("expm1", gt.math.expm1),
    _un("rsqrt", gt.math.rsqrt, domain=positive),
    _un("reciprocal", gt.math.reciprocal, domain=away_from_zero),
    _un("softplus", gt.math.softplus),
    _un("log_sigmoid", gt.math.log_sigmoid),
    _un("erf", gt.math.erf),
    _un("erfc", gt.math.erfc),
    _un("identity", gt.identity),
    # linear in the float32 round trip, so a large step keeps the differences exact
    _un("cast", lambda x: gt.cast(gt.cast(x, gt.float32), x.dtype) * 3.0, eps=1e-2,
        rtol=1e-4, atol=1e-4),
    # --- reductions ---
    Spec("reduce_sum", lambda x: gt.reduce_sum(x * x, axis=1), [((3, 4),), ((2, 3, 4),)]),
    Spec("reduce_sum_all", lambda x: gt.reduce_sum(x, keepdims=True) * x, [((3, 4),)],
         ops=("reduce_sum",)),
    Spec("reduce_mean", lambda x: gt.reduce_mean(x * x, axis=[0, 2], keepdims=True),
         [((2, 3, 4),)]),
    Spec("reduce_max", lambda x: gt.reduce_max(x, axis=-1), [((3, 4),), ((5,),)],
         domain=distinct),
    Spec("reduce_min", lambda x: gt.reduce_min(x, axis=0, keepdims=True), [((3, 4),)],
         domain=distinct),
    Spec("reduce_prod", lambda x: gt.reduce_prod(x, axis=-1), [((3, 4),), ((4,),)],
         domain=away_from_zero),
    Spec("reduce_logsumexp", lambda x: gt.reduce_logsumexp(x, axis=-1), [((3, 4),), ((5,),)]),
    Spec("reduce_variance", lambda x: gt.math.reduce_variance(x, axis=0), [((4, 3),)],
         ops=("reduce_mean", "squared_difference")),
    Spec("reduce_std", lambda x: gt.math.reduce_std(x, axis=1), [((3, 4),)],
         ops=("sqrt", "reduce_mean")),
    Spec("cumsum", lambda x: gt.cumsum(x * x, axis=1), [((3, 4),)]),
    Spec("cumsum_exclusive_reverse", lambda x: gt.cumsum(x * x, axis=0, exclusive=True,
                                                         reverse=True), [((3, 4),)],
         ops=("cumsum",)),
    Spec("cumprod", lambda x: gt.math.cumprod(x, axis=1), [((2, 4),)], ops=("unstack", "stack"),
         domain=away_from_zero),
    Spec("norm", lambda x: gt.norm(x, axis=1), [((3, 4),)], domain=away_from_zero,
         ops=("sqrt", "reduce_sum", "square")),
    Spec("norm_l1_inf", lambda x: gt.norm(x, ord=1) + gt.norm(x, ord=np.inf, axis=0),
         [((3, 4),)], domain=_shifted, ops=("abs", "reduce_max")),
    # --- linear algebra ---
    Spec("matmul", gt.matmul, [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2))]),
    Spec("matmul_transposed", lambda a, b: gt.matmul(a, b, transpose_a=True, transpose_b=True),
         [((4, 3), (5, 4)), ((2, 4, 3), (2, 5, 4))], ops=("matmul",)),
    Spec("matmul_ta", lambda a, b: gt.matmul(a, b, transpose_a=True), [((4, 3), (4, 5))],
         ops=("matmul",)),
    Spec("matmul_tb", lambda a, b: gt.matmul(a, b, transpose_b=True), [((3, 4), (5, 4))],
         ops=("matmul",)),
    Spec("tensordot", lambda a, b: gt.tensordot(a, b, axes=[[1, 2], [0, 1]]),
         [((2, 3, 4), (3, 4, 5))], ops=("matmul", "reshape", "transpose")),
    Spec("einsum", lambda a, b: gt.einsum("bij,bjk->bik", a, b), [((2, 3, 4), (2, 4, 5))]),
    Spec("einsum_trace_sum", lambda a, b: gt.einsum("ii,ij->j", a, b), [((3, 3), (3, 4))],
         ops=("einsum", "eye_like")),
    Spec("einsum_ellipsis", lambda a, b: gt.einsum("...ij,j->...i", a, b),
         [((2, 3, 4), (4,))], ops=("einsum",)),
    Spec("einsum_outer_reduce", lambda a: gt.einsum("ij->", a * a), [((3, 4),)],
         ops=("einsum",)),
    # inverses, solves, determinants (well-conditioned: x + 3 I; SPD: x x^T + I)
    Spec("matrix_inverse", lambda x: gt.linalg.inv(_wc(x)) ** 2, [((3, 3),), ((2, 3, 3),)]),
    Spec("matrix_solve", lambda a, b: gt.linalg.solve(_wc(a), b) * b
         + gt.linalg.solve(_wc(a), b, adjoint=True), [((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1))]),
    Spec("matrix_determinant", gt.linalg.det, [((3, 3),), ((2, 4, 4),)]),
    Spec("log_abs_determinant", lambda x: gt.linalg.slogdet(_wc(x))[1]
         + gt.linalg.logdet(_spd(x)), [((3, 3),), ((2, 3, 3),)]),
    Spec("cholesky", lambda x: gt.linalg.cholesky(_spd(x)) ** 2, [((3, 3),), ((2, 4, 4),)]),
    Spec("trace_band_part", lambda x: gt.reduce_sum(gt.linalg.trace(x * x))
         + gt.linalg.band_part(x, 1, 0) * gt.expand_dims(gt.linalg.diag_part(x), -2),
         [((3, 3),), ((2, 4, 4),)],
         ops=("getitem", "where")),
    # diagonals, triangular solves, decompositions (eigenvectors and singular vectors enter
    # squared: their signs are the solver's; random matrices have distinct eigenvalues)
    Spec("matrix_diag", lambda d: gt.linalg.diag(d * d, k=1, padding_value=0.5),
         [((3,),), ((2, 3),)]),
    Spec("matrix_diag_part", lambda x: gt.linalg.diag_part(x * x, k=-1)
         + gt.linalg.diag_part(x, k=1)[..., :1], [((3, 4),), ((2, 4, 3),)]),
    Spec("matrix_set_diag", lambda x, d: gt.linalg.set_diag(x * x, d * d, k=1),
         [((3, 4), (3,)), ((2, 4, 3), (2, 2))]),
    Spec("tensor_diag", lambda x: gt.linalg.tensor_diag(x * x)
         + gt.linalg.tensor_diag_part(gt.reshape(gt.tile(x, [2, 2]), [2, 2, 2, 2]))[0, 0],
         [((2, 2),)], ops=("matrix_diag", "matrix_diag_part")),
    Spec("matrix_triangular_solve", lambda a, b: gt.linalg.triangular_solve(_wc(a), b) * b
         + gt.linalg.triangular_solve(_wc(a), b, lower=False, adjoint=True),
         [((3, 3), (3, 2)), ((2, 3, 3), (3, 1))]),
    Spec("cholesky_solve", lambda a, b: gt.linalg.cholesky_solve(gt.linalg.cholesky(_spd(a)), b),
         [((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1))], ops=("matrix_triangular_solve",)),
    Spec("self_adjoint_eig", lambda x: _eigh_out(*gt.linalg.eigh(x)),
         [((3, 3),), ((2, 4, 4),)]),
    Spec("svd", lambda x: _svd_out(*gt.linalg.svd(x)), [((3, 3),), ((3, 4),), ((2, 4, 3),)]),
    Spec("svd_full_matrices", lambda x: _svd_out(*gt.linalg.svd(x, full_matrices=True)),
         [((3, 4),), ((4, 3),), ((2, 3, 3),)], ops=("svd",)),
    Spec("svd_values_norm", lambda x: gt.linalg.svd(x, compute_uv=False)
         + gt.linalg.norm(x, ord=2, axis=[-2, -1], keepdims=True)[..., 0],
         [((3, 4),), ((2, 4, 3),)], ops=("svd",)),
    Spec("qr", lambda x: _qr_out(*gt.linalg.qr(x)),
         [((3, 3),), ((4, 3),), ((3, 5),), ((2, 4, 3),)]),
    Spec("linalg_lstsq", lambda a, b: gt.linalg.lstsq(a, b)
         + gt.linalg.lstsq(a, b, l2_regularizer=0.1, fast=True),
         [((4, 3), (4, 2)), ((2, 5, 3), (5, 1))]),
    Spec("linalg_lstsq_underdetermined", lambda a, b: gt.linalg.lstsq(a, b, l2_regularizer=0.1),
         [((3, 4), (3, 2))]),
    Spec("linalg_pinv", gt.linalg.pinv, [((3, 4),), ((2, 4, 3),)]),
    Spec("linalg_cross", gt.linalg.cross, [((3,), (3,)), ((2, 4, 3), (2, 4, 3))]),
    # LU (pivots fixed: x + 3 I), tridiagonal and banded solves (diagonals kept from zero),
    # the matrix square root (x / 2 + 2 I), the general eigendecomposition (order- and
    # phase-free outputs: the eigenvalues' real parts, imaginary parts times |v|^2)
    Spec("lu", lambda x, b: gt.linalg.lu(_wc(x))[0] ** 2
         + gt.linalg.lu_solve(*gt.linalg.lu(_wc(x)), b) * b[..., :1],
         [((3, 3), (3, 3)), ((2, 4, 4), (2, 4, 4))]),
    Spec("tridiagonal_solve", lambda d, b: gt.linalg.tridiagonal_solve(_main3(d), b) * b
         + gt.linalg.tridiagonal_solve(_main3(d), b, partial_pivoting=False)
         + gt.linalg.tridiagonal_solve(_pivoting3(d), b),
         [((3, 4), (4, 2)), ((2, 3, 5), (2, 5, 1))]),
    Spec("tridiagonal_matmul", lambda d, b: gt.linalg.tridiagonal_matmul(d, b) ** 2,
         [((3, 4), (4, 2)), ((2, 3, 5), (2, 5, 1))], ops=("pad", "getitem")),
    Spec("banded_triangular_solve", lambda a, b: gt.linalg.banded_triangular_solve(
        gt.concat([a[..., :1, :] + 3.0, a[..., 1:, :]], -2), b) * b
         + gt.linalg.banded_triangular_solve(gt.concat([a[..., :-1, :], a[..., -1:, :] + 3.0],
                                                       -2), b, lower=False, adjoint=True),
         [((3, 4), (4, 2)), ((2, 2, 4), (3, 1, 4, 1))]),
    Spec("matrix_square_root", lambda x: gt.linalg.sqrtm(0.5 * x + 2.0 * gt.eye(
        x.shape[-1], dtype=x.dtype)) ** 2, [((3, 3),), ((2, 3, 3),)]),
    Spec("eig", lambda x: _eig_out(*gt.linalg.eig(x)), [((3, 3),), ((2, 4, 4),)]),
    # --- shapes ---
    Spec("reshape", lambda x: gt.reshape(x, [-1, 2]) * gt.reshape(x, [-1, 2]), [((3, 4),)]),
    Spec("transpose", lambda x: gt.transpose(x, [1, 2, 0]) ** 2, [((2, 3, 4),)],
         ops=("transpose", "pow")),
    Spec("expand_squeeze", lambda x: gt.squeeze(gt.expand_dims(x, 1) * 2.0, 1), [((3, 4),)],
         ops=("reshape",)),
    Spec("concat", lambda x, y: gt.concat([x, y * y, x], axis=1), [((3, 2), (3, 4))],
         ops=("concat",)),
    Spec("stack", lambda x, y: gt.stack([x, y * x], axis=1), [((3, 4), (3, 4))]),
    Spec("unstack", lambda x: gt.unstack(x, axis=1)[1] * gt.unstack(x, axis=1)[2],
         [((3, 4),)]),
    Spec("split", lambda x: gt.split(x, [1, 3], axis=1)[1] ** 2, [((3, 4),)],
         ops=("split",)),
    Spec("tile", lambda x: gt.tile(x, [2, 3]) ** 2, [((2, 3),)]),
    Spec("broadcast_to", lambda x: gt.broadcast_to(x, [2, 3, 4]) ** 2, [((3, 1),), ((4,),)],
         ops=("broadcast_to",)),
    Spec("gather", lambda x: gt.gather(x, [2, 0, 2], axis=1) ** 2, [((3, 4),)],
         ops=("getitem", "getitem_grad")),
    Spec("gather_batch_dims", lambda x: gt.gather(x, [[1, 0], [2, 2], [0, 3]], axis=1,
                                                  batch_dims=1) ** 2, [((3, 4),)],
         ops=("getitem",)),
    # scatters and segments (repeated indices sum; the update's replaced places get nothing)
    Spec("scatter_nd", lambda u: gt.scatter_nd([[1, 0], [3, 1], [1, 0]], u, [5, 2, 3]) ** 2,
         [((3, 3),)], ops=("getitem_grad",)),
    Spec("tensor_scatter_nd_add", lambda t, u: gt.tensor_scatter_nd_sub(
        gt.tensor_scatter_nd_add(t, [[2], [0], [2]], u), [[1]], u[:1] * u[1:2]) * t,
        [((3, 4), (3, 4))], ops=("getitem_grad",)),
    Spec("tensor_scatter_nd_update", lambda t, u: gt.tensor_scatter_nd_update(
        t, [[0, 1], [2, 3], [1, 0]], u * u) * t, [((3, 4), (3,))],
         ops=("tensor_scatter_nd_update",)),
    Spec("unsorted_segment_sum", lambda x: gt.math.unsorted_segment_sum(
        x * x, [[0, 2, 0], [3, -1, 2]], 4)
        * gt.math.unsorted_segment_mean(x, [1, 1], 3)[1, 0],
         [((2, 3, 2),)], ops=("getitem_grad",)),
    Spec("unsorted_segment_sqrt_n", lambda x: gt.math.unsorted_segment_sqrt_n(
        x, [2, 0, 2, 2], 3) ** 2, [((4, 3),)], ops=("getitem_grad",)),
    Spec("unsorted_segment_max", lambda x: gt.math.unsorted_segment_max(
        x * x, [1, 0, 1, 1, -1], 2) * gt.math.unsorted_segment_min(x, [0, 0, 1, 1, 1], 2),
         [((5, 2),)], ops=("unsorted_segment_max", "unsorted_segment_min"), domain=distinct),
    Spec("segment_max", lambda x: gt.math.segment_max(x, [0, 0, 2, 3]) ** 2
         + gt.math.segment_sum(x, [0, 1, 1, 3]) * gt.math.segment_min(x, [0, 0, 0, 3]),
         [((4, 3),)], ops=("unsorted_segment_max", "where"), domain=distinct),
    Spec("unsorted_segment_prod", lambda x: gt.math.unsorted_segment_prod(
        x, [0, 2, 0, -1, 2], 3) * gt.math.unsorted_segment_prod(x[:3], [1, 1, 0], 3)[1, 0],
         [((5, 2),)], domain=away_from_zero),
    Spec("segment_prod", lambda x: gt.math.segment_prod(x, [0, 0, 2, 2, 2]) ** 2,
         [((5, 3),)], ops=("unsorted_segment_prod",), domain=away_from_zero),
    Spec("getitem_basic", lambda x: x[1:, ::-2, None] * x[0, 0], [((3, 4, 2),)],
         ops=("getitem",)),
    Spec("getitem_mask", lambda x: (x[x > 0.0]) ** 2, [((3, 4),)], ops=("getitem",),
         domain=away_from_zero),
    Spec("pad_constant", lambda x: gt.pad(x, [[1, 2], [0, 1]]) ** 2, [((3, 4),)], ops=("pad",)),
    Spec("pad_reflect", lambda x: gt.pad(x, [[1, 2], [2, 1]], mode="REFLECT") ** 2,
         [((4, 4),)], ops=("getitem",)),
    Spec("pad_symmetric", lambda x: gt.pad(x, [[1, 1], [2, 0]], mode="SYMMETRIC") ** 2,
         [((3, 4),)], ops=("getitem",)),
    Spec("reverse", lambda x: gt.reverse(x, [1]) * x, [((3, 4),)], ops=("getitem",)),
    Spec("sum_to", lambda x: gt.reduce_sum((x + gt.zeros([2, 3, 4], dtype=x.dtype)) ** 2),
         [((3, 1),)], ops=("sum_to",)),
    # complex numbers: real inputs, complex values inside, real outputs (the complex parts
    # of each op's rule, and the conjugated rules of the holomorphic ops, are all crossed)
    _bin("complex", lambda x, y: gt.math.real(_cplx(x, y) * _cplx(y, x))
         + gt.math.imag(gt.exp(_cplx(x, y))), ops=("complex", "real", "imag", "exp")),
    _bin("conj", lambda x, y: gt.math.imag(gt.math.conj(_cplx(x, y)) * gt.sin(_cplx(y, x)))
         + gt.abs(gt.math.conj(gt.tanh(_cplx(x, y)))), ops=("conj", "abs", "sin", "tanh")),
    _bin("angle", lambda x, y: gt.math.angle(_cplx(x, y) * _cplx(y, 1.5 + x * 0)),
         domain=away_from_zero, ops=("angle",), shapes=[((3, 4), (3, 4)), ((3, 1), (1, 4))]),
    _bin("complex_holomorphic", lambda x, y: gt.math.real(
        gt.sqrt(_cplx(x, y)) / _cplx(y, x) + gt.log(_cplx(x, y)) * gt.math.reciprocal(
            gt.math.cosh(_cplx(y, x))) - gt.tan(_cplx(0.3 * x, 0.2 * y)) * gt.math.sinh(
            _cplx(x, y)) + gt.math.rsqrt(_cplx(x, y)) + gt.cos(_cplx(x, y)) * gt.math.expm1(
            _cplx(y, x)) + gt.math.log1p(_cplx(x, y))),
         domain=positive, shapes=[((3, 4), (3, 4)), ((3, 1), (1, 4))],
         ops=("sqrt", "divide", "log", "reciprocal", "cosh", "tan", "sinh", "rsqrt", "cos",
              "expm1", "log1p")),
    _bin("complex_inverse_trig", lambda x, y: gt.math.real(
        gt.math.asin(_cplx(0.3 * x, y)) * gt.math.acos(_cplx(y, 0.2 * x))
        + gt.math.atan(_cplx(x, 0.5 * y)) + gt.sigmoid(_cplx(y, x))),
         domain=positive, shapes=[((3, 4), (3, 4))], ops=("asin", "acos", "atan", "sigmoid")),
    _bin("complex_linear", lambda x, y: gt.math.real(gt.reduce_sum(gt.matmul(
        _cplx(x, y), gt.transpose(_cplx(y, x))), axis=1, keepdims=True) * _cplx(x, x))
         + gt.cast(gt.cast(x, _ctype(x)) * _cplx(y, x), x.dtype),
         shapes=[((3, 4), (3, 4))], ops=("matmul", "reduce_sum", "cast")),
]

# tf.math.special (gradtape/special.py): TF's rules, to second order
_SP = gt.math.special
SPECS += [
    _un("bessel_j0", lambda x: _SP.bessel_j0(x)),
    _un("bessel_j1", lambda x: _SP.bessel_j1(x)),
    _un("bessel_y0", lambda x: _SP.bessel_y0(x), domain=positive),
    _un("bessel_y1", lambda x: _SP.bessel_y1(x), domain=positive),
    _un("bessel_k0", lambda x: _SP.bessel_k0(x), domain=positive),
    _un("bessel_k0e", lambda x: _SP.bessel_k0e(x), domain=positive),
    _un("bessel_k1", lambda x: _SP.bessel_k1(x), domain=positive),
    _un("bessel_k1e", lambda x: _SP.bessel_k1e(x), domain=positive),
    _un("dawsn", lambda x: _SP.dawsn(x * 3.0)),
    _un("expint", lambda x: _SP.expint(x * 3.0), domain=positive),
    _un("fresnel_cos", lambda x: _SP.fresnel_cos(x * 2.0)),
    _un("fresnel_sin", lambda x: _SP.fresnel_sin(x * 2.0)),
    _un("spence", lambda x: _SP.spence(x * 2.0), domain=positive),
]
