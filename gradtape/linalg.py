"""``gt.linalg``: matrix products, norms, inverses, solves, determinants, factorisations
(Cholesky, QR, SVD, LU, symmetric and general eigendecompositions), diagonals, the matrix
exponential and square root, tridiagonal and banded solvers."""
from __future__ import annotations

from .clip import global_norm  # noqa: F401
from .ops.linalg import matmul, matvec, tensordot, einsum  # noqa: F401
from .ops.linalg import (inv, solve, det, slogdet, logdet, cholesky, diag_part,  # noqa: F401
                         trace, band_part, diag, set_diag, tensor_diag, tensor_diag_part,
                         triangular_solve, cholesky_solve, eigh, eigvalsh, svd, qr, lstsq,
                         pinv, expm, cross, lu, lu_solve, lu_matrix_inverse, lu_reconstruct,
                         matrix_rank, tridiagonal_solve, tridiagonal_matmul,
                         banded_triangular_solve, sqrtm, eig, eigvals)
from .ops.nn import l2_normalize  # noqa: F401
from .ops.reduce import norm as _norm
from .ops.shape import eye  # noqa: F401
from .ops.shape import transpose as _transpose


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Swap the last two axes (and conjugate complex values when ``conjugate``)."""
    n = a.ndim
    return _transpose(a, list(range(n - 2)) + [n - 1, n - 2], conjugate=conjugate)


def adjoint(matrix, name=None):
    """The conjugate transpose of each matrix in the last two axes (of real matrices: the
    transpose)."""
    return matrix_transpose(matrix, conjugate=True)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """Vector and matrix norms, as ``tf.linalg.norm``: ``ord`` 'euclidean', 'fro', 1, 2,
    np.inf or p > 0 for vectors; 'euclidean'/'fro', 1, 2 (the largest singular value) or
    np.inf for matrices (``axis`` a pair of axes)."""
    if ord in (2, 2.0) and not isinstance(ord, bool) and isinstance(axis, (list, tuple)) \
            and len(axis) == 2:
        return _spectral_norm(tensor, axis, bool(keepdims))
    return _norm(tensor, ord=ord, axis=axis, keepdims=keepdims)


def normalize(tensor, ord="euclidean", axis=None, name=None):
    """``(tensor / norm, norm)`` with ``norm = linalg.norm(tensor, ord, axis, keepdims=True)``
    in ``tensor``'s dtype, as ``tf.linalg.normalize`` (vector norms, or matrix norms for a
    pair of axes; ``axis=None``: one norm of all the values)."""
    from .ops._util import as_tensor
    from .ops.core import cast
    from .ops.math import abs as _abs
    x = as_tensor(tensor, "linalg.normalize")
    pair = isinstance(axis, (list, tuple)) and len(axis) == 2
    if not pair and isinstance(ord, str) and ord != "euclidean":
        raise ValueError(f"linalg.normalize: 'ord' must be a supported vector norm, got {ord}")
    mag = x
    if x._value.dtype.kind == "c":
        if pair and ord in (2, 2.0):
            raise TypeError("linalg.normalize: the spectral norm (ord=2 over a pair of axes) "
                            "of complex matrices is not supported")
        mag = _abs(x)          # every other norm is the norm of the magnitudes
    n = norm(mag, ord=ord, axis=axis, keepdims=True)
    if n.dtype != x.dtype:
        n = cast(n, x.dtype)
    return x / n, n


def _spectral_norm(tensor, axis, keepdims):
    from .ops._util import as_tensor, normalize_axis
    from .ops.reduce import reduce_max
    from .ops.shape import reshape
    x = as_tensor(tensor, "norm")
    rank = x._value.ndim
    a0 = normalize_axis(axis[0], rank, "norm")[0]
    a1 = normalize_axis(axis[1], rank, "norm")[0]
    if a0 == a1:
        raise ValueError(f"norm: 'axis' must be a pair of distinct axes, got {tuple(axis)}")
    rest = [i for i in range(rank) if i not in (a0, a1)]
    moved = x if rest + [a0, a1] == list(range(rank)) else _transpose(x, rest + [a0, a1])
    out = reduce_max(svd(moved, compute_uv=False), axis=-1)
    if keepdims:
        out = reshape(out, [1 if i in (a0, a1) else x._value.shape[i] for i in range(rank)])
    return out
