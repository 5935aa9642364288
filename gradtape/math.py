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
from .misc_extra import approx_max_k, approx_min_k  # noqa: F401
from .ops.scatter import (unsorted_segment_sum, unsorted_segment_mean,  # noqa: F401
                          unsorted_segment_sqrt_n, unsorted_segment_max, unsorted_segment_min,
                          segment_sum, segment_mean, segment_max, segment_min,
                          unsorted_segment_prod, segment_prod)
from .ops.extra import (lgamma, digamma, polygamma, erfinv, erfcinv, ndtri,  # noqa: F401
                        bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, asinh, acosh, atanh, atan2,
                        xdivy, xlog1py, multiply_no_nan, reciprocal_no_nan, rint, nextafter,
                        lbeta, igamma, igammac, zeta, betainc, truncatediv, truncatemod,
                        scalar_mul, bincount, confusion_matrix, cumulative_logsumexp, polyval,
                        is_non_decreasing, is_strictly_increasing, invert_permutation,
                        zero_fraction)
from .ops.nn import softmax, log_softmax, softsign, l2_normalize, in_top_k  # noqa: F401
from . import special  # noqa: F401 (tf.math.special)
from .special import sobol_sample  # noqa: F401


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The elementwise sum of a list or tuple of tensors of one shape and dtype, as the
    deprecated ``tf.math.accumulate_n`` (``add_n``; one input is returned as it is).
    ``shape`` and ``tensor_dtype``, when given, are checked against the inputs."""
    from .dtypes import as_dtype
    from .tensor import Tensor, convert_to_tensor

    def _input_error():
        return ValueError("accumulate_n: inputs must be a list of at least one Tensor with the "
                          "same dtype and shape")
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise _input_error()
    ts = [t if isinstance(t, Tensor) else convert_to_tensor(t) for t in inputs]
    if not all(t.dtype == ts[0].dtype for t in ts):
        raise _input_error()
    want = None if shape is None else tuple(None if d is None else int(d) for d in shape)
    for t in ts:
        got = tuple(t.shape)
        if want is None:
            want = got
        elif len(want) != len(got) or any(w is not None and w != d for w, d in zip(want, got)):
            raise ValueError(f"accumulate_n: shapes {list(want)} and {list(got)} are not "
                             "compatible")
    if tensor_dtype is not None and as_dtype(tensor_dtype) != ts[0].dtype:
        raise TypeError(f"accumulate_n: the `tensor_dtype` argument is "
                        f"{as_dtype(tensor_dtype).name}, but the inputs are "
                        f"{ts[0].dtype.name}. These must be equal.")
    if len(ts) == 1:
        return ts[0]
    return add_n(ts)
