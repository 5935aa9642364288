"""``gt.math``: the elementwise functions, special functions and reductions under
TensorFlow's ``tf.math`` names (``softmax``, ``log_softmax``, ``softsign``, ``l2_normalize``
and ``in_top_k`` are ``gt.nn``'s)."""
from __future__ import annotations

from .ops.math import (add, subtract, multiply, divide, truediv, negative, abs, sign, exp, log,  # noqa: F401
                       sqrt, square, pow, maximum, minimum, tanh, sigmoid, sin, cos, tan, atan,
                       asin, acos, sinh, cosh, log1p, expm1, rsqrt, reciprocal, softplus,
                       squared_difference, erf, erfc, floor, ceil, round, floordiv, floormod,
                       mod, equal, not_equal, less, less_equal, greater, greater_equal, logical_and,
                       logical_or, logical_not, logical_xor, is_nan, is_inf, is_finite, add_n,
                       divide_no_nan, log_sigmoid, xlogy, where, real, imag, conj, angle)
from .ops.reduce import (reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod,  # noqa: F401
                         reduce_logsumexp, reduce_variance, reduce_std, reduce_any, reduce_all,
                         cumsum, cumprod, argmax, argmin, count_nonzero, reduce_euclidean_norm)
from .ops.core import cast  # noqa: F401
from .ops.sorting import top_k  # noqa: F401
from .ops.scatter import (unsorted_segment_sum, unsorted_segment_mean,  # noqa: F401
                          unsorted_segment_sqrt_n, unsorted_segment_max, unsorted_segment_min,
                          segment_sum, segment_mean, segment_max, segment_min)
from .ops.extra import (lgamma, digamma, polygamma, erfinv, erfcinv, ndtri,  # noqa: F401
                        bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, asinh, acosh, atanh, atan2,
                        xdivy, xlog1py, multiply_no_nan, reciprocal_no_nan, rint, nextafter,
                        lbeta, igamma, igammac, zeta, betainc, truncatediv, truncatemod,
                        scalar_mul, bincount, confusion_matrix, cumulative_logsumexp, polyval,
                        is_non_decreasing, is_strictly_increasing, invert_permutation,
                        zero_fraction)
from .ops.nn import softmax, log_softmax, softsign, l2_normalize, in_top_k  # noqa: F401
