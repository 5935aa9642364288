"""More of TensorFlow's ops, with TF 2's names, arguments, dtypes and gradients:

* special functions (``lgamma``, ``digamma``, ``polygamma``, ``erfinv``, ``ndtri``, the
  exponentially scaled Bessel functions ...), the inverse hyperbolic functions, ``atan2``
  and the ``*_no_nan`` / ``x*y``-style binaries of ``tf.math``;
* integer-style division (``truncatediv``, ``truncatemod``);
* slicing (``slice``, ``strided_slice``), ``unique``, ``searchsorted``, ``ensure_shape``;
* scatters and partitions (``tensor_scatter_nd_max/min``, ``dynamic_partition``,
  ``dynamic_stitch``, ``reverse_sequence``, ``unravel_index``, ``histogram_fixed_width``,
  ``bincount``, ``confusion_matrix``) and ``cumulative_logsumexp``.

The special functions run SciPy's on the CPU (and on the strict test device) and
``cupyx.scipy.special``'s on a GPU. Ops whose output shape depends on values (``unique``,
``dynamic_partition``, ``dynamic_stitch``, ``bincount`` without both lengths,
``confusion_matrix`` without ``num_classes``) read those values on the host, as TensorFlow's
GPU kernels do.
"""
from __future__ import annotations

import builtins
import math as _pymath
from collections import namedtuple

import numpy as np

from ..backend import device_of
from ..backend import kernels as K
from ..dtypes import np_dtype
from ..registry import InvalidArgumentError, apply, apply1, defop
from ..tensor import Tensor, TensorShape
from ._util import as_tensor, binary, device_array, dtype_name, float_tensor, normalize_axis
from .core import cast, ones_like, zeros_like
from .math import _binary, _quiet, _unary, divide_no_nan
from .reduce import reduce_sum
from .scatter import _tensor_scatter, unsorted_segment_sum
from .shape import gather, getitem, reshape, transpose

__all__ = [
    "lgamma", "digamma", "polygamma", "erfinv", "erfcinv", "ndtri", "bessel_i0", "bessel_i0e",
    "bessel_i1", "bessel_i1e", "asinh", "acosh", "atanh", "atan2", "xdivy", "xlog1py",
    "multiply_no_nan", "reciprocal_no_nan", "rint", "nextafter", "lbeta", "igamma", "igammac",
    "zeta", "betainc", "truncatediv",
    "truncatemod", "scalar_mul", "realdiv", "slice", "strided_slice", "unique",
    "unique_with_counts", "searchsorted", "ensure_shape", "tensor_scatter_nd_max",
    "tensor_scatter_nd_min", "dynamic_partition", "dynamic_stitch", "reverse_sequence",
    "unravel_index", "histogram_fixed_width", "histogram_fixed_width_bins", "bincount",
    "confusion_matrix", "cumulative_logsumexp", "polyval", "is_non_decreasing",
    "is_strictly_increasing", "invert_permutation", "zero_fraction", "newaxis", "Unique",
    "UniqueWithCounts",
]

newaxis = None

Unique = namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _host_ints(value, opname, what):
    """``value`` (ints, a list, a host array or an integer tensor, read on the host) as a list
    of Python ints."""
    if isinstance(value, Tensor):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise TypeError(f"{opname}: {what} must be integers, got {value!r}")
    if arr.ndim > 1:
        raise ValueError(f"{opname}: {what} must be a vector, got shape {arr.shape}")
    return [int(v) for v in arr.reshape(-1)]


def _doc(fn, text):
    """Give an op function its docstring (the C-backed ones keep the C type's)."""
    try:
        fn.__doc__ = text
    except (AttributeError, TypeError):
        pass


# --- special functions ---------------------------------------------------------------------

_CUPY_SPECIAL = []


def _cupy_special():
    """``cupyx.scipy.special`` when CuPy imports, else None (then names are not checked)."""
    if not _CUPY_SPECIAL:
        try:
            import cupyx.scipy.special as mod
        except Exception:  # not installed, or a broken CUDA install
            mod = None
        _CUPY_SPECIAL.append(mod)
    return _CUPY_SPECIAL[0]


def _host_special(name):
    try:
        import scipy.special as sp
    except ImportError:  # pragma: no cover - exercised only without SciPy
        raise ImportError(f"{name}: gradtape computes this special function with SciPy on the "
                          "CPU; install it: pip install scipy (or gradtape[special])") from None
    return getattr(sp, name)


def _special(name, xp, x, *more):
    """SciPy's ``special.<name>(*more, x)`` on device arrays (``more``: leading arguments,
    arrays of ``x``'s device or Python numbers), in ``x``'s dtype."""
    dt = x.dtype
    if xp is np:
        with np.errstate(all="ignore"):
            return np.asarray(_host_special(name)(*more, x)).astype(dt, copy=False)
    dev = device_of(xp, x)
    if dev.kind == "gpu":
        import cupyx.scipy.special as sp
        return getattr(sp, name)(*more, x).astype(dt, copy=False)
    # the strict test device: NumPy storage behind CuPy's rules; only what CuPy has
    from ..backend.strict import StrictArray
    cp = _cupy_special()
    if cp is not None and not hasattr(cp, name):
        raise AttributeError(f"{name}: cupyx.scipy.special has no {name}, so this op would "
                             "fail on a GPU")
    raw = [m._a if type(m) is StrictArray else m for m in more + (x,)]
    with np.errstate(all="ignore"):
        out = np.asarray(_host_special(name)(*raw)).astype(dt, copy=False)
    return StrictArray(out, dev)


_lgamma, lgamma = _unary("lgamma", lambda xp, x: _special("gammaln", xp, x),
                         lambda ops, needs, g, ans, x: (g * ops.digamma(x),),
                         save_inputs=True, save_output=False)
_doc(lgamma, "``log |Gamma(x)|`` elementwise (``tf.math.lgamma``); +inf at 0, -1, -2 ...")
def _poles(xp, x, out, n=None):
    """TF's values at the poles 0, -1, -2 ... (Eigen's): NaN for digamma and the even
    orders of polygamma, +inf for the odd ones (SciPy gives -inf or +-inf there)."""
    pole = (x <= 0) & (x == xp.floor(x))
    nan = xp.full((), np.nan, dtype=x.dtype)
    if n is None:
        return xp.where(pole, nan, out)
    inf = xp.full((), np.inf, dtype=x.dtype)
    return xp.where(pole, xp.where(n % 2 == 1, inf, nan), out)


_digamma, digamma = _unary("digamma", lambda xp, x: _poles(xp, x, _special("digamma", xp, x)),
                           lambda ops, needs, g, ans, x: (g * ops.polygamma(1, x),),
                           save_inputs=True, save_output=False)
_doc(digamma, "``d/dx log Gamma(x)`` elementwise (``tf.math.digamma``).")


def _polygamma_fwd(xp, a, x):
    if not hasattr(a, "dtype"):                # a Python number (digamma's rule)
        a = xp.full(x.shape, a, dtype=x.dtype)
    a, x = xp.broadcast_arrays(a, x)
    return _poles(xp, x, _special("polygamma", xp, x, a), a)


def _polygamma_vjp(ops, needs, g, ans, a, x):
    # no gradient for the order, as TF
    return None, (g * ops.polygamma(a + 1, x) if needs[1] else None)


_polygamma = defop("polygamma", _polygamma_fwd, _polygamma_vjp, broadcasts=True,
                   save_output=False)


def polygamma(a, x, name=None) -> Tensor:
    """The ``a``-th derivative of the digamma function at ``x`` (``tf.math.polygamma``;
    ``a`` holds non-negative integers in ``x``'s floating dtype). Differentiable in ``x``."""
    a, x = binary("polygamma", a, x)
    ref = x if isinstance(x, Tensor) else a
    if ref._value.dtype.kind != "f":
        raise TypeError(f"polygamma: expected floating-point tensors, got {dtype_name(ref)}")
    if not isinstance(a, Tensor):
        a = Tensor(ref._device.asarray(np.asarray(a, dtype=ref._value.dtype)), ref._device)
    if not isinstance(x, Tensor):
        x = Tensor(ref._device.asarray(np.asarray(x, dtype=ref._value.dtype)), ref._device)
    return apply(_polygamma, (a, x))


_SQRT_PI_2 = _pymath.sqrt(_pymath.pi) / 2
_SQRT_2PI = _pymath.sqrt(2 * _pymath.pi)

_erfinv, erfinv = _unary("erfinv", lambda xp, x: _special("erfinv", xp, x),
                         lambda ops, needs, g, ans, x: (g * (_SQRT_PI_2 * ops.exp(ans * ans)),))
_doc(erfinv, "The inverse error function (``tf.math.erfinv``): +-inf at +-1, NaN beyond.")
_ndtri, ndtri = _unary("ndtri", lambda xp, x: _special("ndtri", xp, x),
                       lambda ops, needs, g, ans, x: (g * (_SQRT_2PI * ops.exp(ans * ans * 0.5)),))
_doc(ndtri, "The inverse of the standard normal CDF (``tf.math.ndtri``): -inf at 0, +inf "
           "at 1.")


def erfcinv(x, name=None) -> Tensor:
    """The inverse of ``erfc`` (``tf.math.erfcinv``): ``-ndtri(x / 2) / sqrt(2)``."""
    x = float_tensor(x, "erfcinv")
    return ndtri(x * 0.5) * (-_pymath.sqrt(0.5))


def _i0e_vjp(ops, needs, g, ans, x):
    return (g * (ops.bessel_i1e(x) - ops.sign(x) * ans),)


def _i1e_vjp(ops, needs, g, ans, x):
    # TF's rule: i0e(x) - y (sign(x) + 1/x), and 1/2 at x = 0
    zero = x == 0
    safe = ops.where(zero, 1, x)
    d = ops.bessel_i0e(safe) - ans * (ops.sign(safe) + 1 / safe)
    return (g * ops.where(zero, 0.5, d),)


def _i1_vjp(ops, needs, g, ans, x):
    zero = x == 0
    safe = ops.where(zero, 1, x)
    return (g * ops.where(zero, 0.5, ops.bessel_i0(safe) - ans / safe),)


_i0e, bessel_i0e = _unary("bessel_i0e", lambda xp, x: _special("i0e", xp, x), _i0e_vjp,
                          save_inputs=True, save_output=True)
_doc(bessel_i0e, "``exp(-|x|) I0(x)`` (``tf.math.bessel_i0e``).")
_i1e, bessel_i1e = _unary("bessel_i1e", lambda xp, x: _special("i1e", xp, x), _i1e_vjp,
                          save_inputs=True, save_output=True)
_doc(bessel_i1e, "``exp(-|x|) I1(x)`` (``tf.math.bessel_i1e``).")
_i0, bessel_i0 = _unary("bessel_i0", lambda xp, x: _special("i0", xp, x),
                        lambda ops, needs, g, ans, x: (g * ops.bessel_i1(x),),
                        save_inputs=True, save_output=False)
_doc(bessel_i0, "The modified Bessel function ``I0(x)`` (``tf.math.bessel_i0``).")
_i1, bessel_i1 = _unary("bessel_i1", lambda xp, x: _special("i1", xp, x), _i1_vjp,
                        save_inputs=True, save_output=True)
_doc(bessel_i1, "The modified Bessel function ``I1(x)`` (``tf.math.bessel_i1``).")

# inverse hyperbolic functions, with TF's rules (1/cosh(y), 1/sinh(y), 1/(1 - x^2))
_asinh, asinh = _unary("asinh", lambda xp, x: xp.arcsinh(x),
                       lambda ops, needs, g, ans, x: (g / ops.cosh(ans),), ufunc="arcsinh")
_acosh, acosh = _unary("acosh", lambda xp, x: xp.arccosh(x),
                       lambda ops, needs, g, ans, x: (g / ops.sinh(ans),), quiet=True)
_atanh, atanh = _unary("atanh", lambda xp, x: xp.arctanh(x),
                       lambda ops, needs, g, ans, x: (g / (1 - x * x),), save_inputs=True,
                       save_output=False, quiet=True)


def _atan2_vjp(ops, needs, g, ans, y, x):
    gi = g / (x * x + y * y)
    return (gi * x if needs[0] else None, -gi * y if needs[1] else None)


_atan2, atan2 = _binary("atan2", lambda xp, y, x: xp.arctan2(y, x), _atan2_vjp, float_only=True,
                        quiet=True)
_doc(atan2, "``atan(y / x)`` in the quadrant of ``(x, y)``, in ``(-pi, pi]`` "
           "(``tf.math.atan2``).")


def _nonzero(ops, x):
    return ops.cast(x != 0, dtype=x.dtype, src=np.dtype(bool))


def _xdivy_fwd(xp, x, y):
    with _quiet(xp):
        return xp.where(x == 0, xp.zeros((), dtype=x.dtype), x / y)


def _xdivy_vjp(ops, needs, g, ans, x, y):
    return (g * ops.xdivy(_nonzero(ops, x), y) if needs[0] else None,
            g * ops.xdivy(-x, y * y) if needs[1] else None)


_xdivy, xdivy = _binary("xdivy", _xdivy_fwd, _xdivy_vjp, float_only=True)
_doc(xdivy, "``x / y``, and 0 where ``x`` is 0 (``tf.math.xdivy``).")


def _xlog1py_fwd(xp, x, y):
    with _quiet(xp):
        return xp.where(x == 0, xp.zeros((), dtype=x.dtype), x * xp.log1p(y))


def _xlog1py_vjp(ops, needs, g, ans, x, y):
    return (g * ops.xlog1py(_nonzero(ops, x), y) if needs[0] else None,
            g * ops.xdivy(x, y + 1) if needs[1] else None)


_xlog1py, xlog1py = _binary("xlog1py", _xlog1py_fwd, _xlog1py_vjp, float_only=True)
_doc(xlog1py, "``x * log1p(y)``, and 0 where ``x`` is 0 (``tf.math.xlog1py``).")


def _mnn_fwd(xp, x, y):
    with _quiet(xp):
        return xp.where(y == 0, xp.zeros((), dtype=x.dtype), x * y)


def _mnn_vjp(ops, needs, g, ans, x, y):
    return (ops.multiply_no_nan(g, y) if needs[0] else None,
            ops.multiply_no_nan(x, g) if needs[1] else None)


_mnn, multiply_no_nan = _binary("multiply_no_nan", _mnn_fwd, _mnn_vjp, float_only=True)
_doc(multiply_no_nan, "``x * y``, and 0 where ``y`` is 0 even if ``x`` is NaN or infinite "
                     "(``tf.math.multiply_no_nan``).")


def reciprocal_no_nan(x, name=None) -> Tensor:
    """``1 / x``, and 0 where ``x`` is 0 (``tf.math.reciprocal_no_nan``)."""
    x = float_tensor(x, "reciprocal_no_nan")
    return divide_no_nan(ones_like(x), x)


_rint, rint = _unary("rint", lambda xp, x: xp.rint(x), None, nondiff=True, ufunc="rint")
_doc(rint, "The nearest integer, halves to even (``tf.math.rint``); not differentiable.")
_nextafter, nextafter = _binary("nextafter", lambda xp, x, y: xp.nextafter(x, y), None,
                                nondiff=True, float_only=True)
_doc(nextafter, "The next representable value after ``x1`` towards ``x2``.")


def lbeta(x, name=None) -> Tensor:
    """``log |Beta(x)|`` over the last axis: ``sum(lgamma(x)) - lgamma(sum(x))``
    (``tf.math.lbeta``)."""
    x = float_tensor(x, "lbeta")
    if x.ndim == 0:
        raise ValueError("lbeta: x must have at least one axis")
    return reduce_sum(lgamma(x), axis=-1) - lgamma(reduce_sum(x, axis=-1))


# --- incomplete gamma and beta, Hurwitz zeta -------------------------------------------------

def _float_operands(opname, *args):
    """``args`` as tensors of one floating dtype on one device (Python numbers take the dtype
    of the tensors among them, float32 without any), as TF's float-only n-ary ops."""
    ref = next((a for a in args if isinstance(a, Tensor)), None)
    if ref is None:
        ref = as_tensor(args[0], opname)
    if ref._value.dtype.kind != "f":
        raise TypeError(f"{opname}: expected floating-point tensors, got {dtype_name(ref)}")
    out = []
    for a in args:
        if not isinstance(a, Tensor):
            a = binary(opname, ref, a)[1]
            if not isinstance(a, Tensor):
                a = Tensor(ref._device.asarray(np.asarray(a, dtype=ref._value.dtype)),
                           ref._device)
        elif a._value.dtype != ref._value.dtype:
            raise TypeError(f"{opname}: operands have different dtypes {dtype_name(ref)} and "
                            f"{dtype_name(a)}; gradtape does not promote, use gt.cast")
        out.append(a)
    return out


def _igamma_consts(dt):
    """Cephes' machine epsilon, rescaling threshold and log of the largest value (Eigen's)."""
    if dt == np.float64:
        return 1.11022302462515654042e-16, 4.503599627370496e15, 709.78271289338397
    return 5.9604644775390625e-8, 16777216.0, 88.72283905206835


def _igamma_grad_a_fwd(xp, a, x):
    """``d igamma(a, x) / da``: Eigen's ``igamma_der_a`` (TF's ``IgammaGradA``), the power
    series of ``igamma`` for ``x <= max(1, a)`` and the continued fraction of ``igammac``
    otherwise, each differentiated term by term in ``a``. Vectorised: every element runs the
    iterations, frozen once it converges (on the CPU the loop stops when all have)."""
    a, x = xp.broadcast_arrays(a, x)
    dt = x.dtype
    machep, big, maxlog = _igamma_consts(dt)
    host = xp is np

    def full(v):
        return xp.full(x.shape, v, dtype=dt)

    with _quiet(xp):
        zero = full(0.0)
        bad = (x < 0) | (a <= 0) | xp.isnan(a) | xp.isnan(x)
        use_cf = (x > 1) & (x > a)
        safe_x = xp.where((x > 0) & ~xp.isinf(x), x, full(1.0))
        safe_a = xp.where(a > 0, a, full(1.0))
        logx = xp.log(safe_x)
        # power series: sum_n x^n / ((a+1)...(a+n)) and its a-derivative
        r, c, ans, dc, dans = safe_a, full(1.0), full(1.0), zero, zero
        act = ~use_cf & ~bad
        for i in range(2000):
            r = r + 1
            dc_new = dc * (safe_x / r) - c * safe_x / (r * r)
            c_new = c * (safe_x / r)
            ans = xp.where(act, ans + c_new, ans)
            dans = xp.where(act, dans + dc_new, dans)
            c = xp.where(act, c_new, c)
            dc = xp.where(act, dc_new, dc)
            act = act & ~(xp.abs(dc_new) <= xp.abs(dans) * machep)
            if host and i % 16 == 15 and not act.any():
                break
        lgamma1 = _special("gammaln", xp, safe_a + 1)
        logax = safe_a * logx - safe_x - lgamma1
        series = (ans * (logx - _special("digamma", xp, safe_a + 1)) + dans) * xp.exp(logax)
        series = xp.where(logax < -maxlog, zero, series)
        # continued fraction of igammac and its a-derivative
        y = 1 - safe_a
        z = safe_x + y + 1
        cc = zero
        pkm2, qkm2, pkm1, qkm1 = full(1.0), safe_x, safe_x + 1, z * safe_x
        ans = pkm1 / qkm1
        dpkm2, dqkm2, dpkm1, dqkm1 = zero, zero, zero, -safe_x
        dans = (dpkm1 - ans * dqkm1) / qkm1
        act = use_cf & ~bad & ~xp.isinf(x)
        for i in range(2000):
            cc = cc + 1
            y = y + 1
            z = z + 2
            yc = y * cc
            pk = pkm1 * z - pkm2 * yc
            qk = qkm1 * z - qkm2 * yc
            dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * cc
            dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * cc
            nz = qk != 0
            sq = xp.where(nz, qk, full(1.0))
            ans_new = xp.where(nz, pk / sq, ans)
            dans_new = xp.where(nz, (dpk - ans_new * dqk) / sq, dans)
            conv = nz & (xp.abs(dans_new - dans) <= machep)
            ans = xp.where(act, ans_new, ans)
            dans = xp.where(act, dans_new, dans)
            resc = xp.abs(pk) > big
            s = xp.where(resc, full(1.0 / big), full(1.0))
            keep = act & ~conv
            pkm2, pkm1 = xp.where(keep, pkm1 * s, pkm2), xp.where(keep, pk * s, pkm1)
            qkm2, qkm1 = xp.where(keep, qkm1 * s, qkm2), xp.where(keep, qk * s, qkm1)
            dpkm2, dpkm1 = xp.where(keep, dpkm1 * s, dpkm2), xp.where(keep, dpk * s, dpkm1)
            dqkm2, dqkm1 = xp.where(keep, dqkm1 * s, dqkm2), xp.where(keep, dqk * s, dqkm1)
            act = keep
            if host and i % 16 == 15 and not act.any():
                break
        logax = safe_a * logx - safe_x - _special("gammaln", xp, safe_a)
        ax = xp.exp(logax)
        cf = -(dans * ax + ans * ax * (logx - _special("digamma", xp, safe_a)))
        cf = xp.where((logax < -maxlog) | xp.isinf(x), zero, cf)
        out = xp.where(use_cf, cf, series)
        out = xp.where(x == 0, zero, out)
        return xp.where(bad, full(np.nan), out)


# no rule for its own gradient, as TF's IgammaGradA: a second derivative in ``a`` raises
_igamma_grad_a = defop("igamma_grad_a", _igamma_grad_a_fwd, None, broadcasts=True)


def _igamma_dx(ops, a, x):
    """``d igamma(a, x) / dx = exp(-x) x^(a-1) / Gamma(a)``, in log space (TF's rule)."""
    return ops.exp(-x + ops.xlogy(a - 1, x) - ops.lgamma(a))


def _igamma_fwd(xp, a, x):
    # TF (Eigen): 0 at x = 0 whatever a, else NaN where a <= 0 (SciPy: 1 at a = 0)
    a, x = xp.broadcast_arrays(a, x)
    out = xp.where(a <= 0, xp.full((), np.nan, dtype=x.dtype), _special("gammainc", xp, x, a))
    return xp.where(x == 0, xp.zeros((), dtype=x.dtype), out)


def _igammac_fwd(xp, a, x):
    a, x = xp.broadcast_arrays(a, x)
    return xp.where(a <= 0, xp.full((), np.nan, dtype=x.dtype), _special("gammaincc", xp, x, a))


def _igamma_vjp(ops, needs, g, ans, a, x):
    return (g * ops.igamma_grad_a(a, x) if needs[0] else None,
            g * _igamma_dx(ops, a, x) if needs[1] else None)


def _igammac_vjp(ops, needs, g, ans, a, x):
    return (-(g * ops.igamma_grad_a(a, x)) if needs[0] else None,
            -(g * _igamma_dx(ops, a, x)) if needs[1] else None)


_igamma = defop("igamma", _igamma_fwd, _igamma_vjp, broadcasts=True, save_output=False)
_igammac = defop("igammac", _igammac_fwd, _igammac_vjp, broadcasts=True, save_output=False)


def igamma(a, x, name=None) -> Tensor:
    """The regularized lower incomplete gamma function ``P(a, x)`` (``tf.math.igamma``):
    ``0`` at ``x = 0``, NaN where ``a <= 0`` or ``x < 0``. Differentiable in ``x``
    (``exp(-x) x^(a-1) / Gamma(a)``) and in ``a`` (Eigen's series / continued fraction,
    first order only: TF has no gradient of that gradient either)."""
    a, x = _float_operands("igamma", a, x)
    return apply(_igamma, (a, x))


def igammac(a, x, name=None) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``
    (``tf.math.igammac``); gradients as :func:`igamma`'s, negated."""
    a, x = _float_operands("igammac", a, x)
    return apply(_igammac, (a, x))


def _zeta_fwd(xp, x, q):
    x, q = xp.broadcast_arrays(x, q)
    out = _special("zeta", xp, q, x)
    dt = x.dtype
    inf, nan = xp.full((), np.inf, dtype=dt), xp.full((), np.nan, dtype=dt)
    with _quiet(xp):
        # Eigen's values where SciPy's differ: at q = 0, -1, -2 ... +inf for even integer x,
        # NaN otherwise; 0 at x = +inf for q > 1
        even = (x == xp.floor(x)) & (xp.fmod(x, 2) == 0)
        pole = (q <= 0) & (q == xp.floor(q)) & (x > 1)
        out = xp.where(pole, xp.where(even, inf, nan), out)
        return xp.where((x == inf) & (q > 1), xp.zeros((), dtype=dt), out)


def _zeta_vjp(ops, needs, g, ans, x, q):
    # TF: no gradient for x; d/dq = -x zeta(x + 1, q)
    return None, (g * (-x * ops.zeta(x + 1, q)) if needs[1] else None)


_zeta = defop("zeta", _zeta_fwd, _zeta_vjp, broadcasts=True, save_output=False)


def zeta(x, q, name=None) -> Tensor:
    """The Hurwitz zeta function ``sum_n (n + q)^-x`` (``tf.math.zeta``). Differentiable in
    ``q`` (``-x zeta(x + 1, q)``); ``x`` gets no gradient, as in TF."""
    x, q = _float_operands("zeta", x, q)
    return apply(_zeta, (x, q))


def _betainc_fwd(xp, a, b, x):
    a, b, x = xp.broadcast_arrays(a, b, x)
    out = _special("betainc", xp, x, a, b)
    # TF (Eigen) is NaN outside [0, 1] and where a or b is not positive (SciPy: 0/1 or NaN)
    bad = (x < 0) | (x > 1) | (a <= 0) | (b <= 0)
    return xp.where(bad, xp.full((), np.nan, dtype=x.dtype), out)


def _betainc_vjp(ops, needs, g, ans, a, b, x):
    # TF: only x; d/dx = x^(a-1) (1-x)^(b-1) / B(a, b), in log space
    if not needs[2]:
        return None, None, None
    log_beta = ops.lgamma(a) + ops.lgamma(b) - ops.lgamma(a + b)
    return None, None, g * ops.exp(ops.xlogy(a - 1, x) + ops.xlog1py(b - 1, -x) - log_beta)


_betainc = defop("betainc", _betainc_fwd, _betainc_vjp, broadcasts=True, save_output=False)


def betainc(a, b, x, name=None) -> Tensor:
    """The regularized incomplete beta function ``I_x(a, b)`` (``tf.math.betainc``). ``a``,
    ``b`` and ``x`` have one shape, or are scalars (TF broadcasts nothing else). Differentiable
    in ``x`` only, as in TF."""
    a, b, x = _float_operands("betainc", a, b, x)
    shapes = [tuple(t.shape) for t in (a, b, x)]
    full = [s for s in shapes if s != ()]
    if any(s != full[0] for s in full):
        names = [n for n, s in zip("abx", shapes) if s != ()]
        raise InvalidArgumentError(f"betainc: shapes of {names[0]} and {names[-1]} are "
                                   f"inconsistent: {list(full[0])} vs. {list(full[-1])} "
                                   "(a, b and x must have one shape or be scalars)")
    return apply(_betainc, (a, b, x))


# --- integer-style division ----------------------------------------------------------------

def _truncdiv_fwd(xp, x, y):
    if x.dtype.kind == "f":
        with _quiet(xp):
            return xp.trunc(x / y)
    q = xp.floor_divide(x, y)
    # floor division rounds towards -inf; truncation towards 0 differs by one when the
    # quotient is negative and inexact
    return q + ((q < 0) & (q * y != x)).astype(q.dtype)


def _truncmod_fwd(xp, x, y):
    with _quiet(xp):
        return xp.fmod(x, y)


_truncdiv = defop("truncatediv", _truncdiv_fwd, nondiff=True)
_truncmod = defop("truncatemod", _truncmod_fwd, nondiff=True)


def _int_divisor(opname, x, y):
    x, y = binary(opname, x, y)
    ref = x if isinstance(x, Tensor) else y
    if ref._value.dtype.kind == "b":
        raise TypeError(f"{opname}: bool tensors are not supported")
    if ref._value.dtype.kind in "iu" and ref._device.host_visible:
        yv = y._value if isinstance(y, Tensor) else np.asarray(y)
        if np.any(yv == 0):
            raise InvalidArgumentError(f"{opname}: integer division by zero")
    return x, y


def truncatediv(x, y, name=None) -> Tensor:
    """``x / y`` rounded towards zero (C's integer division; ``trunc(x / y)`` for floats),
    as ``tf.truncatediv``. Not differentiable. An integer division by zero raises on the CPU
    (a device does not check: the host would wait)."""
    x, y = _int_divisor("truncatediv", x, y)
    return apply(_truncdiv, (x, y))


def truncatemod(x, y, name=None) -> Tensor:
    """The remainder of :func:`truncatediv` (the sign of ``x``, C's ``fmod``), as
    ``tf.truncatemod``. Not differentiable (TF has no gradient for it)."""
    x, y = _int_divisor("truncatemod", x, y)
    return apply(_truncmod, (x, y))


def scalar_mul(scalar, x, name=None) -> Tensor:
    """``scalar * x`` for a 0-D ``scalar`` (``tf.scalar_mul``)."""
    from .math import multiply
    shp = tuple(scalar._value.shape) if isinstance(scalar, Tensor) else np.shape(scalar)
    if shp != ():
        raise ValueError(f"scalar_mul: The input scalar must be a 0-D value. Received shape "
                         f"{shp}.")
    return multiply(scalar, as_tensor(x, "scalar_mul") if not isinstance(x, Tensor) else x)


def realdiv(x, y, name=None) -> Tensor:
    """``x / y`` for floating-point tensors (``tf.realdiv``)."""
    from .math import divide
    x, y = binary("realdiv", x, y)
    ref = x if isinstance(x, Tensor) else y
    if ref._value.dtype.kind != "f":
        raise TypeError(f"realdiv: expected floating-point tensors, got {dtype_name(ref)}")
    return divide(x, y)


# --- slicing -------------------------------------------------------------------------------

def slice(input_, begin, size, name=None) -> Tensor:  # noqa: A001 (TF's name)
    """The block of ``input_`` starting at ``begin`` with ``size`` elements per axis (``-1``:
    everything from ``begin`` on), as ``tf.slice``. Differentiable."""
    x = as_tensor(input_, "slice")
    b = _host_ints(begin, "slice", "begin")
    s = _host_ints(size, "slice", "size")
    shape = tuple(x._value.shape)
    if len(b) != len(shape) or len(s) != len(shape):
        raise InvalidArgumentError(
            f"slice: Expected begin and size arguments to be 1-D tensors of size {len(shape)}, "
            f"but got shapes [{len(b)}] and [{len(s)}] instead.")
    key = []
    for i, (bi, si, d) in enumerate(zip(b, s, shape)):
        if not 0 <= bi <= d:
            raise InvalidArgumentError(f"slice: Expected begin[{i}] in [0, {d}], but got {bi}")
        if si == -1:
            si = d - bi
        if not 0 <= si <= d - bi:
            raise InvalidArgumentError(f"slice: Expected size[{i}] in [0, {d - bi}], but got "
                                       f"{si}")
        key.append(builtins.slice(bi, bi + si))
    return getitem(x, tuple(key))


def _bits(mask):
    mask = int(mask.numpy()) if isinstance(mask, Tensor) else int(mask)
    return mask


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None) -> Tensor:
    """``input_[begin:end:strides]`` spelled as TensorFlow's ``tf.strided_slice``: bit ``i`` of
    ``begin_mask`` / ``end_mask`` ignores ``begin[i]`` / ``end[i]`` (the whole range),
    ``ellipsis_mask`` makes entry ``i`` an ``...``, ``new_axis_mask`` a new axis of size 1,
    ``shrink_axis_mask`` takes the single index ``begin[i]`` and drops the axis.
    Differentiable."""
    x = as_tensor(input_, "strided_slice")
    b = _host_ints(begin, "strided_slice", "begin")
    e = _host_ints(end, "strided_slice", "end")
    st = [1] * len(b) if strides is None else _host_ints(strides, "strided_slice", "strides")
    if not len(b) == len(e) == len(st):
        raise InvalidArgumentError(
            f"strided_slice: Expected begin, end, and strides to be 1D equal size tensors, but "
            f"got shapes [{len(b)}], [{len(e)}], and [{len(st)}] instead.")
    bm, em, elm, nm, sm = (_bits(m) for m in (begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                              shrink_axis_mask))
    if bin(elm).count("1") > 1:
        raise InvalidArgumentError("strided_slice: Multiple ellipses in slice spec not allowed")
    shape = tuple(x._value.shape)
    # which input axis each spec entry addresses (for the shrink bounds checks)
    n_real = sum(1 for i in range(len(b)) if not (nm >> i) & 1 and not (elm >> i) & 1)
    key = []
    axis = 0
    for i in range(len(b)):
        if (elm >> i) & 1:
            key.append(Ellipsis)
            axis += len(shape) - n_real
            continue
        if (nm >> i) & 1:
            key.append(None)
            continue
        if st[i] == 0:
            raise InvalidArgumentError(f"strided_slice: strides[{i}] must be non-zero")
        if (sm >> i) & 1:
            if st[i] != 1:
                raise InvalidArgumentError("strided_slice: only stride 1 allowed on non-range "
                                           "indexing.")
            d = shape[axis] if axis < len(shape) else 0
            if not -d <= b[i] < d:
                raise InvalidArgumentError(f"strided_slice: slice index {b[i]} of dimension "
                                           f"{axis} out of bounds.")
            key.append(b[i])
        else:
            key.append(builtins.slice(None if (bm >> i) & 1 else b[i],
                                   None if (em >> i) & 1 else e[i], st[i]))
        axis += 1
    if axis > len(shape) and Ellipsis not in key:
        raise InvalidArgumentError(f"strided_slice: Index out of range using input dim "
                                   f"{len(shape)}; input has only {len(shape)} dims")
    return getitem(x, tuple(key))


# --- unique / searchsorted / ensure_shape --------------------------------------------------

def _unique_fwd(xp, x, out_idx):
    u, first, inverse, counts = xp.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True)
    # TF lists the values in the order they first occur (NumPy and CuPy sort them)
    order = xp.argsort(first, kind="stable")
    rank = xp.argsort(order, kind="stable")
    return [u[order], rank[inverse.reshape(-1)].astype(out_idx, copy=False),
            counts[order].astype(out_idx, copy=False)]


_unique = defop("unique", _unique_fwd, nondiff=True, multi=True)


def _unique_args(x, out_idx, opname):
    x = as_tensor(x, opname)
    if x._value.ndim != 1:
        raise InvalidArgumentError(f"{opname}: unique expects a 1D vector, got shape "
                                   f"{tuple(x._value.shape)}")
    dt = np_dtype(out_idx)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{opname}: out_idx must be int32 or int64, got {dt.name}")
    return apply1(_unique, x, {"out_idx": dt})


def unique(x, out_idx=np.int32, name=None) -> Unique:
    """``Unique(y, idx)``: the distinct values of the 1-D ``x`` in the order they first occur,
    and for each element of ``x`` the position of its value in ``y`` (dtype ``out_idx``), as
    ``tf.unique``. The number of values depends on the data: a device waits for it. Not
    differentiable (as in TF)."""
    y, idx, _ = _unique_args(x, out_idx, "unique")
    return Unique(y, idx)


def unique_with_counts(x, out_idx=np.int32, name=None) -> UniqueWithCounts:
    """:func:`unique` and ``count``, how often each value of ``y`` occurs in ``x``
    (``tf.unique_with_counts``)."""
    return UniqueWithCounts(*_unique_args(x, out_idx, "unique_with_counts"))


def _searchsorted_fwd(xp, seq, values, side, dtype):
    if seq.shape[0] == 1:
        out = xp.searchsorted(seq[0], values[0], side=side).reshape(values.shape)
    elif side == "left":
        out = (seq[:, None, :] < values[:, :, None]).sum(axis=-1)
    else:
        out = (seq[:, None, :] <= values[:, :, None]).sum(axis=-1)
    return out.astype(dtype, copy=False)


_searchsorted = defop("searchsorted", _searchsorted_fwd, nondiff=True)


def searchsorted(sorted_sequence, values, side="left", out_type=np.int32, name=None) -> Tensor:
    """For each of ``values``, the index into the sorted last axis of ``sorted_sequence`` that
    keeps it sorted (``side="left"``: before equal entries, ``"right"``: after them), as
    ``tf.searchsorted``. The leading axes of both (flattened) must match."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: Argument `side` must be either 'right' or 'left'. "
                         f"Received: `side` = {side!r}.")
    seq = as_tensor(sorted_sequence, "searchsorted")
    v = values if isinstance(values, Tensor) else Tensor(
        seq._device.asarray(np.asarray(values, dtype=seq._value.dtype)), seq._device)
    if v._value.dtype != seq._value.dtype:
        raise TypeError(f"searchsorted: values have dtype {dtype_name(v)}, sorted_sequence "
                        f"{dtype_name(seq)}")
    if seq.ndim == 0 or v.ndim == 0:
        raise InvalidArgumentError("searchsorted: sorted_sequence and values must have at "
                                   "least one axis")
    s2 = reshape(seq, [-1, seq._value.shape[-1]])
    v2 = reshape(v, [-1, v._value.shape[-1]])
    if s2._value.shape[0] != v2._value.shape[0]:
        raise InvalidArgumentError(f"searchsorted: Leading dim_size of both tensors must "
                                   f"match (shapes {tuple(seq._value.shape)} and "
                                   f"{tuple(v._value.shape)})")
    dt = np_dtype(out_type)
    if dt.kind != "i":
        raise TypeError(f"searchsorted: out_type must be int32 or int64, got {dt.name}")
    out = apply(_searchsorted, (s2, v2), {"side": side, "dtype": dt})
    return reshape(out, tuple(v._value.shape))


def ensure_shape(x, shape, name=None) -> Tensor:
    """``x`` (as a new tensor, gradient passing through), after checking that its shape fits
    ``shape`` (``None`` sizes match anything; ``TensorShape(None)`` any rank), as
    ``tf.ensure_shape``."""
    from .core import identity
    t = as_tensor(x, "ensure_shape")
    want = shape if isinstance(shape, TensorShape) else (
        TensorShape(None) if shape is None else TensorShape(
            [None if d is None or (isinstance(d, int) and d < 0) else d for d in
             (shape.numpy().tolist() if isinstance(shape, Tensor) else shape)]))
    have = tuple(t._value.shape)
    if want.rank is not None and (len(want) != len(have) or any(
            w is not None and w != h for w, h in zip(want, have))):
        fmt = ",".join("?" if d is None else str(d) for d in want)
        raise InvalidArgumentError(f"ensure_shape: Shape of tensor {name or 'input'} "
                                   f"[{','.join(map(str, have))}] is not compatible with "
                                   f"expected shape [{fmt}].")
    return identity(t)


# --- scatters with max / min ---------------------------------------------------------------

def _flat_ids(xp, key, shape, valid):
    """Row numbers into ``shape[:m]`` flattened (``m = len(key)``), -1 for dropped entries."""
    m = len(key)
    lin = None
    for j in range(m):
        stride = int(np.prod(shape[j + 1:m], dtype=np.int64))
        term = key[j].astype(np.int64) * stride
        lin = term if lin is None else lin + term
    if valid is not None:
        lin = xp.where(valid.reshape(lin.shape), lin, -1)
    return lin


def _scatter_extreme_fwd(is_max):
    def fwd(xp, x, u, key, valid):
        shape = tuple(x.shape)
        m = len(key)
        rows = int(np.prod(shape[:m], dtype=np.int64))
        inner = tuple(shape[m:])
        ids = _flat_ids(xp, key, shape, valid).reshape(-1)
        u2 = u.reshape((ids.shape[0],) + inner)
        seg = K.segment_extreme(xp, u2, ids, rows, is_max)
        # positions no update reaches keep x exactly (the fill is the dtype's finite extreme)
        touched = xp.zeros((rows + 1,), dtype=bool)
        touched[xp.where(ids >= 0, ids, rows)] = True
        touched = touched[:rows].reshape((rows,) + (1,) * len(inner))
        x2 = x.reshape((rows,) + inner)
        both = xp.maximum(x2, seg) if is_max else xp.minimum(x2, seg)
        return xp.where(touched, both, x2).reshape(shape)
    return fwd


def _scatter_extreme_vjp(ops, needs, g, ans, x, u, key, valid):
    # TF's rule: the gradient of each output place is shared equally by the tensor's element
    # and the updates equal to it
    dt = x.dtype
    shape = tuple(x.shape)
    x_ind = ops.cast(x == ans, dtype=dt, src=np.dtype(bool))
    y_out = ops.getitem(ans, key=key, in_shape=shape, advanced=True, valid=valid)
    y_ind = ops.cast(u == y_out, dtype=dt, src=np.dtype(bool))
    ys_ind = ops.getitem_grad(y_ind, key=key, shape=shape, advanced=True, valid=valid)
    ind = x_ind + ys_ind
    gx = g * x_ind / ind if needs[0] else None
    gu = None
    if needs[1]:
        gu = ops.getitem(g / ind, key=key, in_shape=shape, advanced=True, valid=valid) * y_ind
    return gx, gu


_scatter_max = defop("tensor_scatter_nd_max", _scatter_extreme_fwd(True), _scatter_extreme_vjp,
                     save_output=True, batch_rule=False)
_scatter_min = defop("tensor_scatter_nd_min", _scatter_extreme_fwd(False), _scatter_extreme_vjp,
                     save_output=True, batch_rule=False)


def tensor_scatter_nd_max(tensor, indices, updates, name=None) -> Tensor:
    """``tensor`` with each place at ``indices`` replaced by the maximum of its value and the
    updates there (``tf.tensor_scatter_nd_max``). Indices out of range raise on the CPU; on a
    device they are dropped. Gradient as TF's: ties share it equally."""
    t, u, key, valid, _ = _tensor_scatter("tensor_scatter_nd_max", tensor, indices, updates)
    return apply(_scatter_max, (t, u), {"key": key, "valid": valid})


def tensor_scatter_nd_min(tensor, indices, updates, name=None) -> Tensor:
    """``tensor`` with each place at ``indices`` replaced by the minimum of its value and the
    updates there (``tf.tensor_scatter_nd_min``)."""
    t, u, key, valid, _ = _tensor_scatter("tensor_scatter_nd_min", tensor, indices, updates)
    return apply(_scatter_min, (t, u), {"key": key, "valid": valid})


# --- partitions and stitches ---------------------------------------------------------------

def _host_index_array(value, opname, what):
    """An integer index array read on the host (a tensor is downloaded: one wait)."""
    arr = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise TypeError(f"{opname}: {what} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def dynamic_partition(data, partitions, num_partitions, name=None):
    """``[data[partitions == i] for i in range(num_partitions)]`` (``partitions``' shape a
    prefix of ``data``'s), as ``tf.dynamic_partition``. ``partitions`` is read on the host
    (the output sizes depend on it). Differentiable in ``data``."""
    x = as_tensor(data, "dynamic_partition")
    p = _host_index_array(partitions, "dynamic_partition", "partitions")
    n = int(num_partitions)
    if n < 1:
        raise ValueError(f"dynamic_partition: num_partitions must be at least 1, got {n}")
    dshape = tuple(x._value.shape)
    if dshape[:p.ndim] != p.shape:
        raise InvalidArgumentError(
            f"dynamic_partition: data.shape must start with partitions.shape, got data.shape "
            f"= {list(dshape)}, partitions.shape = {list(p.shape)}")
    flat = p.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    if bad.size:
        i = int(bad[0])
        raise InvalidArgumentError(f"dynamic_partition: partitions[{i}] = {int(flat[i])} is "
                                   f"not in [0, {n})")
    rows = reshape(x, (flat.size,) + dshape[p.ndim:])
    dev = x._device
    return [gather(rows, Tensor(dev.asarray(np.flatnonzero(flat == i)), dev), axis=0)
            for i in range(n)]


def _stitch_fwd(xp, *datas, src, grads, inner):
    parts = [d.reshape((-1,) + tuple(inner)) for d in datas]
    parts.append(xp.zeros((1,) + tuple(inner), dtype=datas[0].dtype))
    return xp.concatenate(parts)[src]


def _stitch_vjp(ops, needs, g, ans, *datas, src, grads, inner):
    # TF's rule: every data entry gets the gradient of the place its index names, also
    # when a later entry overwrote that place
    return tuple(ops.getitem(g, key=(idx,), in_shape=tuple(g.shape), advanced=True)
                 if needs[m] else None for m, idx in enumerate(grads))


_stitch = defop("dynamic_stitch", _stitch_fwd, _stitch_vjp, save_inputs=False,
                save_output=False, batch_rule=False)


def dynamic_stitch(indices, data, name=None) -> Tensor:
    """``merged[indices[m][i]] = data[m][i]`` (``tf.dynamic_stitch``): ``merged`` has
    ``max(indices) + 1`` rows; a later entry wins over an earlier one at the same index, and
    rows no index names are 0. ``indices`` are read on the host. The gradient of each
    ``data[m]`` is the merged gradient gathered at ``indices[m]``, as TF's."""
    if len(indices) != len(data) or not indices:
        raise ValueError(f"dynamic_stitch: needs as many data tensors as index tensors (at "
                         f"least one), got {len(indices)} and {len(data)}")
    ds = [as_tensor(d, "dynamic_stitch") for d in data]
    dev = ds[0]._device
    for d in ds[1:]:
        if d._value.dtype != ds[0]._value.dtype:
            raise TypeError(f"dynamic_stitch: data have different dtypes {dtype_name(ds[0])} "
                            f"and {dtype_name(d)}")
    idx = [_host_index_array(i, "dynamic_stitch", f"indices[{m}]")
           for m, i in enumerate(indices)]
    inner = None
    for m, (i, d) in enumerate(zip(idx, ds)):
        dshape = tuple(d._value.shape)
        if dshape[:i.ndim] != i.shape:
            raise InvalidArgumentError(f"dynamic_stitch: data[{m}].shape = {list(dshape)} "
                                       f"does not start with indices[{m}].shape = "
                                       f"{list(i.shape)}")
        rest = dshape[i.ndim:]
        if inner is None:
            inner = rest
        elif rest != inner:
            raise InvalidArgumentError(f"dynamic_stitch: data[{m}] has inner shape "
                                       f"{list(rest)}, data[0] {list(inner)}")
        if i.size and i.min() < 0:
            raise InvalidArgumentError(f"dynamic_stitch: indices[{m}] holds a negative index "
                                       f"{int(i.min())}")
    total = sum(i.size for i in idx)
    size = max((int(i.max()) + 1 for i in idx if i.size), default=0)
    src = np.full(size, total, dtype=np.int64)        # unnamed rows read the zero row
    offset = 0
    for i in idx:                                       # later entries overwrite earlier ones
        src[i.reshape(-1)] = offset + np.arange(i.size)
        offset += i.size
    attrs = {"src": dev.asarray(src), "grads": tuple(dev.asarray(i) for i in idx),
             "inner": tuple(inner)}
    return apply(_stitch, tuple(ds), attrs)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None,  # noqa: A002
                     name=None) -> Tensor:
    """For each batch entry ``b`` (along ``batch_axis``, default 0), its first
    ``seq_lengths[b]`` elements along ``seq_axis`` reversed, the rest kept
    (``tf.reverse_sequence``). Differentiable in ``input``. Lengths are checked on the CPU;
    a device clamps them to the axis (checking would make the host wait)."""
    x = as_tensor(input, "reverse_sequence")
    if seq_axis is None:
        raise TypeError("reverse_sequence: Expected int for argument 'seq_axis' not None.")
    n = x.ndim
    sa = normalize_axis(seq_axis, n, "reverse_sequence")[0]
    ba = normalize_axis(0 if batch_axis is None else batch_axis, n, "reverse_sequence")[0]
    if sa == ba:
        raise InvalidArgumentError(f"reverse_sequence: batch_dim == seq_dim == {sa}")
    dev = x._device
    lens = seq_lengths if isinstance(seq_lengths, Tensor) else Tensor(
        device_array(seq_lengths, dev), dev)
    if lens._value.dtype.kind not in "iu":
        raise TypeError(f"reverse_sequence: seq_lengths must be integers, got "
                        f"{dtype_name(lens)}")
    B, T = x._value.shape[ba], x._value.shape[sa]
    if tuple(lens._value.shape) != (B,):
        raise InvalidArgumentError(f"reverse_sequence: seq_lengths must be a vector of the "
                                   f"batch size {B}, got shape {tuple(lens._value.shape)}")
    if dev.host_visible and B:
        lv = lens._value
        if lv.min() < 0:
            i = int(np.argmax(lv < 0))
            raise InvalidArgumentError(f"reverse_sequence: seq_lens({i}) < 0")
        if lv.max() > T:
            i = int(np.argmax(lv > T))
            raise InvalidArgumentError(f"reverse_sequence: seq_lens({i}) > input.dims({sa})")
    xp = dev.xp
    with dev.activate():
        L = xp.clip(lens._value.astype(np.int64), 0, T).reshape(B, 1)
        t = xp.arange(T, dtype=np.int64).reshape(1, T)
        src = xp.where(t < L, L - 1 - t, t)
    perm = [ba, sa] + [i for i in range(n) if i not in (ba, sa)]
    moved = transpose(x, perm) if perm != list(range(n)) else x
    out = gather(moved, Tensor(src, dev), axis=1, batch_dims=1)
    if perm == list(range(n)):
        return out
    back = [0] * n
    for i, p in enumerate(perm):
        back[p] = i
    return transpose(out, back)


def unravel_index(indices, dims, name=None) -> Tensor:
    """The coordinates of flat ``indices`` (a scalar or a vector) in an array of shape
    ``dims``: shape ``[len(dims)]`` or ``[len(dims), n]``, dtype of ``indices``
    (``tf.unravel_index``). An index past the end raises on the CPU."""
    idx = as_tensor(indices, "unravel_index")
    if idx._value.dtype.kind not in "iu":
        raise TypeError(f"unravel_index: indices must be int32 or int64, got {dtype_name(idx)}")
    if idx.ndim > 1:
        raise InvalidArgumentError(f"unravel_index: The indices can only be scalar or vector, "
                                   f"got \"[{','.join(map(str, idx._value.shape))}]\"")
    d = _host_ints(dims, "unravel_index", "dims")
    total = int(np.prod(d, dtype=np.int64))
    dev = idx._device
    if dev.host_visible and idx._value.size and int(idx._value.max()) >= total:
        raise InvalidArgumentError("unravel_index: index is out of bound as with dims")
    xp = dev.xp
    v = idx._value
    coords = []
    with dev.activate():
        rest = v
        for size in reversed(d):
            # C's division and remainder (truncating), as TF's kernel: -1 gives [0, -1]
            q = xp.floor_divide(rest, size)
            q = q + ((q < 0) & (q * size != rest)).astype(q.dtype)
            coords.append(rest - q * size)
            rest = q
        out = xp.stack(coords[::-1]) if coords else xp.zeros((0,) + v.shape, dtype=v.dtype)
    return Tensor(out.astype(v.dtype, copy=False), dev)


def _hist_bins(values, value_range, nbins, opname):
    v = as_tensor(values, opname)
    if v._value.dtype.kind not in "iuf":
        raise TypeError(f"{opname}: values must be numbers, got {dtype_name(v)}")
    rng = value_range.numpy() if isinstance(value_range, Tensor) else np.asarray(value_range)
    rng = np.asarray(rng).astype(v._value.dtype)
    if rng.shape != (2,):
        raise ValueError(f"{opname}: value_range must be [low, high], got {value_range!r}")
    nb = int(nbins.numpy()) if isinstance(nbins, Tensor) else int(nbins)
    if nb <= 0:
        raise InvalidArgumentError(f"{opname}: nbins should be a positive number, but got "
                                   f"'{nb}'")
    if not rng[0] < rng[1]:
        raise InvalidArgumentError(f"{opname}: value_range should satisfy value_range[0] < "
                                   f"value_range[1], but got '[{rng[0]:g}, {rng[1]:g}]'")
    return v, rng, nb


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=np.int32, name=None):
    """The bin (``[0, nbins)``) of each value, bins of equal width over ``value_range``,
    values outside it in the first or last bin (``tf.histogram_fixed_width_bins``)."""
    v, rng, nb = _hist_bins(values, value_range, nbins, "histogram_fixed_width_bins")
    dev = v._device
    xp = dev.xp
    with dev.activate():
        x = v._value.astype(np.float32) if v._value.dtype.kind in "iu" else v._value
        dt = x.dtype.type
        scaled = (x - dt(rng[0])) / (dt(rng[1]) - dt(rng[0]))
        idx = xp.clip(xp.floor(dt(nb) * scaled), 0, nb - 1).astype(np_dtype(dtype))
    return Tensor(idx, dev)


def histogram_fixed_width(values, value_range, nbins=100, dtype=np.int32, name=None):
    """Counts of ``values`` in ``nbins`` bins of equal width over ``value_range``, values
    below the range in the first bin and above it in the last (``tf.histogram_fixed_width``;
    a value's bin is computed as TF's CPU kernel does, in float64 from its distance to the
    low end)."""
    v, rng, nb = _hist_bins(values, value_range, nbins, "histogram_fixed_width")
    dev = v._device
    xp = dev.xp
    with dev.activate():
        x = v._value.reshape(-1)
        low = x.dtype.type(rng[0])
        step = float(rng[1] - rng[0]) / nb
        dist = (xp.maximum(x, low) - low).astype(np.float64)
        idx = xp.minimum(dist / step, nb - 1).astype(np.int64)
        ones = xp.ones(idx.shape, dtype=np_dtype(dtype))
    return unsorted_segment_sum(Tensor(ones, dev), Tensor(idx, dev), nb)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=np.int32, name=None,
             axis=None, binary_output=False) -> Tensor:
    """How often each value ``0, 1, ...`` occurs in the non-negative ints ``arr`` (summing
    ``weights`` instead of ones when given, then in their dtype), as ``tf.math.bincount``:
    ``max(arr) + 1`` bins (at least ``minlength``, at most ``maxlength``; values past the
    last bin are dropped); ``axis=-1`` counts each row of a 2-D ``arr``; ``binary_output``
    gives 1 for a value present. ``arr``'s maximum is read on the host unless
    ``minlength == maxlength``. Differentiable in ``weights``."""
    a = as_tensor(arr, "bincount")
    if a._value.dtype.kind not in "iu":
        raise TypeError(f"bincount: arr must be integers, got {dtype_name(a)}")
    if axis not in (None, 0, -1):
        raise ValueError(f"bincount: Unsupported axis value {axis}. Only 0, -1 and None are "
                         "supported.")
    if axis == -1 and a.ndim != 2:
        if a.ndim == 1:
            a = reshape(a, [1, -1])
            squeeze = True
        else:
            raise ValueError(f"bincount: axis=-1 needs a 1-D or 2-D arr, got rank {a.ndim}")
    else:
        squeeze = False
    dev = a._device
    fixed = minlength is not None and maxlength is not None and int(minlength) == int(maxlength)
    if fixed:
        size = int(minlength)
        if dev.host_visible and a._value.size and a._value.min() < 0:
            raise InvalidArgumentError("bincount: Input arr must be non-negative!")
    else:
        host = a.numpy()          # the number of bins depends on the values
        if host.size and host.min() < 0:
            raise InvalidArgumentError("bincount: Input arr must be non-negative!")
        size = int(host.max()) + 1 if host.size else 0
        if minlength is not None:
            size = max(size, int(minlength))
        if maxlength is not None:
            size = min(size, int(maxlength))
    if weights is not None:
        if isinstance(weights, Tensor):
            w = weights
        else:       # TF's conversion: Python floats are float32, ints int32
            from ..backend import device_scope
            from ..tensor import convert_to_tensor
            with device_scope(dev):
                w = convert_to_tensor(weights)
        if tuple(w._value.shape) != tuple(as_tensor(arr, "bincount")._value.shape):
            raise InvalidArgumentError(f"bincount: weights of shape {tuple(w._value.shape)} "
                                       f"must match arr's {tuple(a._value.shape)}")
        if squeeze:
            w = reshape(w, [1, -1])
    else:
        with dev.activate():
            w = Tensor(dev.xp.ones(a._value.shape, dtype=np_dtype(dtype)), dev)
    xp = dev.xp
    with dev.activate():
        ids = a._value.astype(np.int64)
        ok = (ids >= 0) & (ids < size)
        if axis == -1:
            rows = a._value.shape[0]
            ids = ids + xp.arange(rows, dtype=np.int64).reshape(rows, 1) * size
            segs = rows * size
        else:
            segs = size
        ids = xp.where(ok, ids, -1)
    out = unsorted_segment_sum(w, Tensor(ids, dev), segs)
    if axis == -1:
        out = reshape(out, [a._value.shape[0], size])
        if squeeze:
            out = reshape(out, [size])
    if binary_output:
        from .math import greater
        out = cast(greater(out, 0), out.dtype)
    return out


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=np.int32,
                     name=None) -> Tensor:
    """``m[i, j]``: how many (or the summed ``weights`` of the) examples of label ``i``
    predicted as ``j`` (``tf.math.confusion_matrix``); ``num_classes`` defaults to the
    largest label or prediction + 1 (read on the host). Labels and predictions are checked
    on the CPU (and whenever ``num_classes`` is not given)."""
    lab = as_tensor(labels, "confusion_matrix")
    pred = as_tensor(predictions, "confusion_matrix")
    for t, what in ((lab, "labels"), (pred, "predictions")):
        if t._value.dtype.kind not in "iu":
            raise TypeError(f"confusion_matrix: {what} must be integers, got {dtype_name(t)}")
    if tuple(lab._value.shape) != tuple(pred._value.shape) or lab.ndim != 1:
        raise ValueError(f"confusion_matrix: labels and predictions must be vectors of one "
                         f"length, got shapes {tuple(lab._value.shape)} and "
                         f"{tuple(pred._value.shape)}")
    dev = lab._device
    check = dev.host_visible or num_classes is None
    if check:
        hl, hp = lab.numpy().astype(np.int64), pred.numpy().astype(np.int64)
        for h, what in ((hl, "labels"), (hp, "predictions")):
            if h.size and h.min() < 0:
                raise InvalidArgumentError(f"confusion_matrix: `{what}` contains negative "
                                           "values.")
    if num_classes is None:
        n = int(max(hl.max(initial=-1), hp.max(initial=-1))) + 1
    else:
        n = int(num_classes.numpy()) if isinstance(num_classes, Tensor) else int(num_classes)
        if check:
            for h, what in ((hl, "labels"), (hp, "predictions")):
                if h.size and h.max() >= n:
                    raise InvalidArgumentError(f"confusion_matrix: `{what}` out of bound")
    if weights is None:
        with dev.activate():
            w = Tensor(dev.xp.ones(lab._value.shape, dtype=np_dtype(dtype)), dev)
    else:
        w = cast(as_tensor(weights, "confusion_matrix"), dtype)
    with dev.activate():
        ids = lab._value.astype(np.int64) * n + pred._value.astype(np.int64)
        ok = (lab._value >= 0) & (lab._value < n) & (pred._value >= 0) & (pred._value < n)
        ids = dev.xp.where(ok, ids, -1)
    return reshape(unsorted_segment_sum(w, Tensor(ids, dev), n * n), [n, n])


# --- cumulative log-sum-exp ----------------------------------------------------------------

def _clse_fwd(xp, x, axis, exclusive, reverse):
    with _quiet(xp):
        if reverse:
            x = xp.flip(x, axis=axis)
        if xp is np:
            out = np.logaddexp.accumulate(x, axis=axis)
        else:   # (CuPy's ufuncs have no accumulate but for add and multiply)
            moved = xp.moveaxis(x, axis, 0)
            rows = [moved[0]]
            for i in range(1, moved.shape[0]):
                rows.append(xp.logaddexp(rows[-1], moved[i]))
            out = xp.moveaxis(xp.stack(rows), 0, axis) if rows else x
        if exclusive:
            moved = xp.moveaxis(out, axis, 0)
            first = xp.full((1,) + tuple(moved.shape[1:]), -np.inf, dtype=x.dtype)
            out = xp.moveaxis(xp.concatenate([first, moved[:-1]]), 0, axis)
        if reverse:
            out = xp.flip(out, axis=axis)
        return out


def _clse_vjp(ops, needs, g, ans, x, axis, exclusive, reverse):
    # TF's rule: the positive and the negative parts of g summed in log space,
    # exp(x_j + log sum_{i >= j} g_i exp(-y_i)). A place where g is 0 stays -inf whatever
    # y is (y = -inf there would give -inf - -inf = NaN, and NaN second derivatives)
    kw = dict(axis=axis, exclusive=exclusive, reverse=not reverse)
    pos = g > 0
    neg = g < 0
    log_pos = ops.where(pos, ops.log(ops.where(pos, g, 1)) - ans, -np.inf)
    log_neg = ops.where(neg, ops.log(ops.where(neg, -g, 1)) - ans, -np.inf)
    out_pos = ops.exp(ops.cumulative_logsumexp(log_pos, **kw) + x)
    out_neg = ops.exp(ops.cumulative_logsumexp(log_neg, **kw) + x)
    return (out_pos - out_neg,)


_clse = defop("cumulative_logsumexp", _clse_fwd, _clse_vjp, batch_rule=False)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow or underflow
    (``tf.math.cumulative_logsumexp``); ``exclusive`` starts from ``-inf``."""
    x = float_tensor(x, "cumulative_logsumexp")
    if x.ndim == 0:
        raise ValueError("cumulative_logsumexp: x must have at least one axis")
    ax = normalize_axis(axis, x.ndim, "cumulative_logsumexp")[0] - x.ndim
    return apply1(_clse, x, {"axis": ax, "exclusive": bool(exclusive), "reverse": bool(reverse)})


# --- small compositions --------------------------------------------------------------------

def polyval(coeffs, x, name=None) -> Tensor:
    """``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` by Horner's rule (``tf.math.polyval``);
    0 for no coefficients. Differentiable in both."""
    if isinstance(coeffs, Tensor) or not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"polyval: coeffs must be a list of tensors, got "
                         f"{type(coeffs).__name__}")
    x = as_tensor(x, "polyval")
    if not coeffs:
        return zeros_like(x)
    p = coeffs[0] if isinstance(coeffs[0], Tensor) else as_tensor(
        np.asarray(coeffs[0], dtype=x._value.dtype), "polyval")
    for c in coeffs[1:]:
        p = p * x + c
    return p if isinstance(p, Tensor) else as_tensor(p, "polyval")


def _monotone(x, strict, opname):
    from .math import greater, greater_equal
    from .reduce import reduce_all
    v = reshape(as_tensor(x, opname), [-1])
    n = v._value.shape[0]
    if n < 2:
        dev = v._device
        with dev.activate():
            return Tensor(dev.xp.ones((), dtype=bool), dev)
    cmp = greater if strict else greater_equal
    return reduce_all(cmp(v[1:], v[:-1]))


def is_non_decreasing(x, name=None) -> Tensor:
    """Whether the elements of ``x`` (flattened) never decrease (``tf.math.is_non_decreasing``)."""
    return _monotone(x, False, "is_non_decreasing")


def is_strictly_increasing(x, name=None) -> Tensor:
    """Whether the elements of ``x`` (flattened) increase strictly
    (``tf.math.is_strictly_increasing``)."""
    return _monotone(x, True, "is_strictly_increasing")


def _invperm_fwd(xp, x):
    out = xp.empty_like(x)
    out[x] = xp.arange(x.shape[0], dtype=x.dtype)
    return out


_invperm = defop("invert_permutation", _invperm_fwd, nondiff=True)


def invert_permutation(x, name=None) -> Tensor:
    """``y[x[i]] = i`` for a permutation ``x`` of ``0 .. n-1`` (``tf.math.invert_permutation``);
    checked on the CPU."""
    p = as_tensor(x, "invert_permutation")
    if p._value.dtype.kind not in "iu" or p.ndim != 1:
        raise InvalidArgumentError(f"invert_permutation: x must be a vector of int32 or int64, "
                                   f"got {dtype_name(p)}{list(p._value.shape)}")
    if p._device.host_visible:
        v = p._value
        n = v.shape[0]
        if v.size and (v.min() < 0 or v.max() >= n):
            bad = int(v[(v < 0) | (v >= n)][0])
            raise InvalidArgumentError(f"invert_permutation: {bad} is not between 0 and {n}")
        seen = np.bincount(v, minlength=n) if v.size else np.zeros(0, np.int64)
        if (seen > 1).any():
            raise InvalidArgumentError(f"invert_permutation: {int(np.argmax(seen > 1))} is "
                                       "duplicated in the input.")
    return apply1(_invperm, p)


def zero_fraction(value, name=None) -> Tensor:
    """The fraction of zeros in ``value`` as a float32 scalar (``tf.math.zero_fraction``)."""
    from .math import equal
    from .reduce import reduce_mean
    v = as_tensor(value, "zero_fraction")
    return reduce_mean(cast(equal(v, zeros_like(v)), np.float32))


