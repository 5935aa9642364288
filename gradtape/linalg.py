"""``gt.linalg``: matrix products, norms, inverses, solves, determinants, Cholesky."""
from __future__ import annotations

from .clip import global_norm  # noqa: F401
from .ops.linalg import matmul, matvec, tensordot, einsum  # noqa: F401
from .ops.linalg import (inv, solve, det, slogdet, logdet, cholesky, diag_part,  # noqa: F401
                         trace, band_part)
from .ops.reduce import norm  # noqa: F401
from .ops.shape import eye  # noqa: F401
from .ops.shape import transpose as _transpose


def matrix_transpose(a, name=None, conjugate=False):
    """Swap the last two axes."""
    n = a.ndim
    return _transpose(a, list(range(n - 2)) + [n - 1, n - 2])
