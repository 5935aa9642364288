"""The rest of TensorFlow's top level and tf.math (gradtape/ops/extra.py, control_flow.py,
array_ops.py, errors.py): values, gradients and errors. Reference numbers come from
TensorFlow 2.21 (float64 unless said otherwise)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

INF, NAN = np.inf, np.nan


def grads(f, *xs, dtype=np.float64):
    """``f``'s value and its gradients (None where there is none) at float64 ``xs``."""
    ts = [gt.constant(np.asarray(x, dtype=dtype)) for x in xs]
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(ts)
        y = f(*ts)
    gs = tape.gradient(y, ts)
    return y.numpy(), [None if g is None else g.numpy() for g in gs]


def first_second(f, x):
    """``f(x)``, ``d sum f / dx`` and the derivative of that gradient's sum (elementwise ``f``:
    the first and second derivatives)."""
    t = gt.constant(np.asarray(x, dtype=np.float64))
    with gt.GradientTape() as outer:
        outer.watch(t)
        with gt.GradientTape() as inner:
            inner.watch(t)
            y = f(t)
        g = inner.gradient(y, t)
    h = outer.gradient(g, t)
    return y.numpy(), g.numpy(), h.numpy()


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


# --- tf.errors ---------------------------------------------------------------------------------

def test_errors_module_classes_and_codes():
    E = gt.errors
    assert E.InvalidArgumentError is gt.InvalidArgumentError
    assert issubclass(E.InvalidArgumentError, E.OpError)
    assert issubclass(E.InvalidArgumentError, ValueError)      # as gradtape always raised it
    for name in ("NotFoundError", "OutOfRangeError", "ResourceExhaustedError",
                 "UnimplementedError", "FailedPreconditionError", "InternalError",
                 "AbortedError", "CancelledError", "UnknownError", "DataLossError",
                 "AlreadyExistsError", "PermissionDeniedError", "UnauthenticatedError",
                 "UnavailableError", "DeadlineExceededError"):
        assert issubclass(getattr(E, name), E.OpError), name
    assert (E.OK, E.INVALID_ARGUMENT, E.NOT_FOUND, E.OUT_OF_RANGE, E.RESOURCE_EXHAUSTED,
            E.UNIMPLEMENTED, E.UNAUTHENTICATED) == (0, 3, 5, 11, 8, 12, 16)


def test_errors_take_tf_and_gradtape_arguments():
    e = gt.errors.NotFoundError(None, None, "no such file")
    assert (str(e), e.message, e.op, e.node_def, e.error_code) == \
        ("no such file", "no such file", None, None, gt.errors.NOT_FOUND)
    e = gt.errors.OpError(None, None, "failed", gt.errors.ABORTED)
    assert e.message == "failed" and e.error_code == gt.errors.ABORTED
    e = gt.errors.InvalidArgumentError("bad shape")
    assert str(e) == e.message == "bad shape" and e.error_code == gt.errors.INVALID_ARGUMENT
    with pytest.raises(gt.errors.OutOfRangeError, match="end"):
        raise gt.errors.OutOfRangeError(None, None, "end of sequence")


def test_op_failures_are_caught_as_op_errors():
    with pytest.raises(gt.errors.OpError):
        gt.add(gt.zeros([2]), gt.zeros([3]))
    with pytest.raises(ValueError):
        gt.add(gt.zeros([2]), gt.zeros([3]))


# --- special functions ---------------------------------------------------------------------

def test_lgamma_digamma_polygamma_match_tf():
    x = [0.5, 1.0, 2.5, -0.5, -1.5, 0.0, -1.0, -2.0, 30.0]
    y, g, h = first_second(gt.math.lgamma, x)
    close(y, [0.572364943, 0., 0.28468287, 1.265512123, 0.860047015, INF, INF, INF,
              71.257038967])
    close(g, [-1.963510026, -0.577215665, 0.703156641, 0.036489974, 0.703156641, NAN, NAN,
              NAN, 3.384438133])
    close(h, [4.934802201, 1.644934067, 0.490357756, 8.934802201, 9.379246645, INF, INF, INF,
              0.03389506], rtol=1e-6)
    y, g, h = first_second(gt.math.digamma, [0.5, 1.0, -0.5, 0.0, -1.0, 30.0])
    close(y, [-1.963510026, -0.577215665, 0.036489974, NAN, NAN, 3.384438133])
    close(g, [4.934802201, 1.644934067, 8.934802201, INF, INF, 0.03389506], rtol=1e-6)
    close(h, [-16.82879664, -2.404113806, -0.8287966442, NAN, NAN, -1.148765204e-03],
          rtol=1e-6)
    y, (ga, gx) = grads(gt.math.polygamma, [1., 2.], [1.5, 2.5])
    close(y, [0.934802201, -0.236204052])
    assert ga is None                                   # no gradient for the order, as TF
    close(gx, [-0.828796644, 0.223905849])


def test_erfinv_ndtri_erfcinv_match_tf():
    y, g, h = first_second(gt.math.erfinv, [-0.9, 0.0, 0.3, 0.99, 1.0, -1.0, 1.5])
    close(y, [-1.163087154, 0., 0.272462715, 1.821386368, INF, -INF, NAN])
    close(g, [3.428042811, 0.886226925, 0.954520359, 24.450876474, INF, INF, NAN])
    close(h, [-27.33598507, 0., 0.4964865260, 2177.814779, INF, -INF, NAN], rtol=1e-6)
    y, g, h = first_second(gt.math.ndtri, [0.01, 0.5, 0.9, 0.0, 1.0, 1.5])
    close(y, [-2.326347874, 0., 1.281551566, -INF, INF, NAN])
    close(g, [37.520436157, 2.506628275, 5.698059856, INF, INF, NAN])
    close(h, [-3274.993290269, 0., 41.609270292, -INF, INF, NAN], rtol=1e-6)
    close(gt.math.erfcinv(gt.constant([0.5, 1.0, 1.5])).numpy(),
          [0.4769363, 0., -0.4769363], rtol=1e-6)


def test_bessel_functions_match_tf():
    x = [-2.0, 0.0, 0.5, 3.0, 50.0]
    y, g, h = first_second(gt.math.bessel_i0e, x)
    close(y, [0.308508323, 1., 0.64503527, 0.243000354, 0.056561627])
    close(g, [0.093239033, 0., -0.488614467, -0.046173641, -0.000568503], rtol=1e-6)
    close(h[[0, 2, 3, 4]], [7.884342198e-02, 6.643873282e-01, 2.673837730e-02,
                            1.714303126e-05], rtol=1e-6)
    y, g, h = first_second(gt.math.bessel_i1e, x)
    close(y, [-0.215269289, 0., 0.156420803, 0.196826713, 0.055993124])
    close(g, [-0.014395611, 0.5, 0.175772861, -0.019435264, -0.00055136], rtol=1e-6)
    close(h[[0, 2, 3, 4]], [1.782829401e-02, -3.902498372e-01, 1.609678703e-03,
                            1.628141276e-05], rtol=1e-6)
    y, g, _ = first_second(gt.math.bessel_i0, [-2.0, 0.0, 0.5, 3.0])
    close(y, [2.279585302, 1., 1.063483371, 4.880792586])
    close(g, [-1.590636855, 0., 0.257894305, 3.953370217])
    y, g, _ = first_second(gt.math.bessel_i1, [-2.0, 0.5, 3.0])
    close(g, [1.484266875, 0.54769476, 3.563002513])
    # I1'(0) = 1/2 (TF's rule says 1 there)
    close(first_second(gt.math.bessel_i1, [0.0])[1], [0.5])


def test_special_functions_on_each_device(device):
    x = gt.constant(np.array([0.25, 0.5, 0.75], np.float32))
    for fn, want in ((gt.math.lgamma, [1.2880225181, 0.5723649263, 0.2032809555]),
                     (gt.math.digamma, [-4.2274541854, -1.9635107517, -1.0858604907]),
                     (gt.math.erfinv, [0.2253120541, 0.4769363105, 0.8134199380]),
                     (gt.math.ndtri, [-0.6744897961, 0., 0.6744897961]),
                     (gt.math.bessel_i0e, [0.7910172939, 0.6450353860, 0.5411652326])):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        g = tape.gradient(y, x)
        assert y.device == device and g.device == device and y.dtype == gt.float32
        close(y.numpy(), want, rtol=2e-6, atol=1e-6)


def test_special_functions_refuse_integers():
    with pytest.raises(TypeError, match="lgamma: expected a floating-point tensor"):
        gt.math.lgamma(gt.constant([1, 2]))



def test_igamma_igammac_match_tf():
    a = [0.5, 1.0, 2.5, 3.0, 0.0, -1.0, 2.0, 2.0]
    x = [0.3, 2.0, 1.5, 10.0, 1.0, 1.0, 0.0, -1.0]
    y, (ga, gx) = grads(gt.math.igamma, a, x)
    close(y, [0.561421973919, 0.864664716763, 0.300014164121, 0.997230604284, NAN, NAN, 0.,
              NAN])
    close(ga, [-0.770570351375, -0.220825426212, -0.252175400424, -0.00412047082, NAN, NAN,
               0., NAN])
    close(gx, [0.763090578768, 0.135335283237, 0.308360659608, 0.002269996488, 0., 0., 0.,
               NAN])
    y, (ga, gx) = grads(gt.math.igammac, a, x)
    close(y, [0.438578026081, 0.135335283237, 0.699985835879, 0.002769395716, NAN, NAN, 1.,
              NAN])
    close(ga, [0.770570351375, 0.220825426212, 0.252175400424, 0.00412047082, NAN, NAN, 0.,
               NAN])
    close(gx, [-0.763090578768, -0.135335283237, -0.308360659608, -0.002269996488, 0., 0.,
               0., NAN])
    # TF's edge values: 0 at x = 0 whatever a; igammac NaN at a <= 0
    close(gt.math.igamma(gt.constant([0., -1., 2., 0.]), gt.constant([0., 0., INF, INF])),
          [0., 0., 1., NAN])
    close(gt.math.igammac(gt.constant([0., -1., 2.]), gt.constant([0., 0., INF])),
          [NAN, NAN, 0.])
    # second derivative in x (TF: -2.034908210048, -0.135335283237)
    close(first_second(lambda t: gt.math.igamma(gt.constant([0.5, 1.0], gt.float64), t),
                       [0.3, 2.0])[2], [-2.034908210048, -0.135335283237])


def test_igamma_gradient_in_a_matches_finite_differences():
    sp = pytest.importorskip("scipy.special")
    # both of Eigen's branches (series: x <= max(1, a); continued fraction otherwise), large
    # and small arguments
    a = np.array([0.1, 5., 50., 50., 200., 1e3, 0.7, 3.0, 2.0, 0.3])
    x = np.array([0.05, 5., 45., 60., 210., 1e3, 30., 1e-3, 3.5, 1.2])
    _, (ga, _) = grads(gt.math.igamma, a, x)
    h = 1e-6 * a
    fd = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
    close(ga, fd, rtol=1e-6, atol=1e-12)
    _, (gca, _) = grads(gt.math.igammac, a, x)
    close(gca, -fd, rtol=1e-6, atol=1e-12)


def test_igamma_second_derivative_in_a_is_refused_as_tf():
    a = gt.constant([1.5, 2.0], gt.float64)
    x = gt.constant([0.5, 3.0], gt.float64)
    with gt.GradientTape() as outer:
        outer.watch(a)
        with gt.GradientTape() as inner:
            inner.watch(a)
            y = gt.math.igamma(a, x)
        g = inner.gradient(y, a)
    with pytest.raises(LookupError, match="igamma_grad_a"):
        outer.gradient(g, a)


def test_zeta_matches_tf():
    x = [2.0, 3.5, 1.0, 0.5, 2.0, 2.0, 2.0]
    q = [1.0, 0.5, 2.0, 1.0, -1.0, -1.5, 0.0]
    y, (gx, gq) = grads(gt.math.zeta, x, q)
    close(y, [1.644934066848, 11.620804663442, INF, NAN, INF, 9.379246644989, INF])
    assert gx is None                                   # no gradient for x, as TF
    close(gq, [-2.404113806319, -79.837097011449, -0.644934066848, -1.306187674343, NAN,
               -0.236204051642, NAN])
    close(gt.math.zeta(gt.constant([3.0, 3.5, 2.5, 3.0, 2.0, 1.0, 0.5, -2.0, INF, 2.0]),
                       gt.constant([-1.0, -1.5, -1.5, -1.5, -2.0, -2.0, 0.5, 1.0, 2.0, INF])),
          [NAN, NAN, NAN, 0.118102025821, INF, INF, NAN, NAN, 0., 0.])


def test_betainc_matches_tf():
    a, b, x = [0.5, 2.0, 1.5, 3.0, 0.0, 1.0], [0.5, 3.0, 2.5, 1.0, 1.0, -1.0], \
        [0.3, 0.6, 0.9, 0.5, 0.5, 0.5]
    y, (ga, gb, gx) = grads(gt.math.betainc, a, b, x)
    close(y, [0.369010119566, 0.8208, 0.99379260428, 0.125, NAN, NAN])
    assert ga is None and gb is None                    # x only, as TF
    close(gx, [0.694609118043, 1.152, 0.152788745368, 0.75, 0., NAN])
    close(gt.math.betainc(2.0, 3.0, gt.constant([0.0, 1.0, -0.1, 1.1], gt.float64)),
          [0., 1., NAN, NAN])
    with pytest.raises(gt.errors.InvalidArgumentError, match="betainc: shapes of b and x"):
        gt.math.betainc(2.0, gt.constant([1., 2.]), gt.constant([[0.5], [0.2]]))


def test_incomplete_functions_dtypes_and_errors():
    y = gt.math.igamma(2.0, 1.5)
    assert y.dtype == gt.float32
    close(gt.math.igamma(gt.constant([1.0, 2.0]), 1.5), [0.77686983, 0.44217455], rtol=1e-6)
    with pytest.raises(TypeError, match="igamma: expected floating-point tensors"):
        gt.math.igamma(gt.constant([1, 2]), gt.constant([1, 2]))
    with pytest.raises(TypeError, match="zeta: operands have different dtypes"):
        gt.math.zeta(gt.constant([2.0]), gt.constant([1.0], gt.float64))


def test_incomplete_functions_on_each_device(device):
    a = gt.constant(np.array([0.5, 2.5, 3.0], np.float32))
    x = gt.constant(np.array([0.3, 1.5, 10.0], np.float32))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([a, x])
        y = gt.math.igamma(a, x)
        z = gt.math.zeta(x + 1.5, a)
        b = gt.math.betainc(a, a, x / 10.5)
    for t in (y, z, b) + tuple(tape.gradient(y, [a, x])) + (tape.gradient(z, a),
                                                            tape.gradient(b, x)):
        assert t.device == device and t.dtype == gt.float32
    close(y.numpy(), [0.561421973919, 0.300014164121, 0.997230604284], rtol=2e-6, atol=1e-6)
    close(tape.gradient(y, a).numpy(), [-0.770570351375, -0.252175400424, -0.00412047082],
          rtol=1e-5, atol=1e-6)

# --- inverse hyperbolic, atan2, the zero-safe binaries ----------------------------------------

def test_inverse_hyperbolic_match_tf():
    y, g, h = first_second(gt.math.asinh, [-2.0, 0.0, 0.5])
    close(y, [-1.443635475, 0., 0.481211825])
    close(g, [0.447213595, 1., 0.894427191])
    close(h, [0.178885438, 0., -0.357770876])
    y, g, h = first_second(gt.math.acosh, [1.0, 1.5, 3.0, 0.5])
    close(y, [0., 0.96242365, 1.762747174, NAN])
    close(g, [INF, 0.894427191, 0.353553391, NAN])
    close(h, [-INF, -1.073312629, -0.132582521, NAN])
    y, g, h = first_second(gt.math.atanh, [-0.5, 0.0, 0.9, 1.0, 1.5])
    close(y, [-0.549306144, 0., 1.47221949, INF, NAN])
    close(g, [1.333333333, 1., 5.263157895, INF, -0.8])
    close(h, [-1.777777778, 0., 49.861495845, INF, 1.92])
    assert gt.asinh is gt.math.asinh and gt.atan2 is gt.math.atan2
    assert gt.sinh is gt.math.sinh and gt.acos is gt.math.acos


def test_atan2_and_zero_safe_binaries_match_tf():
    y, (gy, gx) = grads(gt.math.atan2, [1., -1., 0., 0., 2.], [1., -1., 0., -1., 0.])
    close(y, [0.785398163, -2.35619449, 0., 3.141592654, 1.570796327])
    close(gy, [0.5, -0.5, NAN, -1., 0.])
    close(gx, [-0.5, 0.5, NAN, 0., -0.5])
    y, (gx, gy) = grads(gt.math.xdivy, [0., 0., 2., 3.], [0., 2., 0., 4.])
    close(y, [0., 0., INF, 0.75])
    close(gx, [0., 0., INF, 0.25])
    close(gy, [0., 0., -INF, -0.1875])
    y, (gx, gy) = grads(gt.math.xlog1py, [0., 0., 2., 3.], [-1., 2., -1., 4.])
    close(y, [0., 0., -INF, 4.828313737])
    close(gx, [0., 0., -INF, 1.609437912])
    close(gy, [0., 0., INF, 0.6])
    y, (gx, gy) = grads(gt.math.multiply_no_nan, [INF, NAN, 2., 3.], [0., 0., 0., 4.])
    close(y, [0., 0., 0., 12.])
    close(gx, [0., 0., 0., 4.])
    close(gy, [INF, NAN, 2., 3.])
    y, g, h = first_second(gt.math.reciprocal_no_nan, [0.0, 2.0, -0.5])
    close(y, [0., 0.5, -2.])
    close(g, [0., -0.25, -4.])
    close(h, [0., 0.25, -16.])


def test_rint_truncatediv_truncatemod_scalar_mul():
    close(gt.math.rint(gt.constant([-1.5, -0.5, 0.5, 1.5, 2.5, 2.6])).numpy(),
          [-2., -0., 0., 2., 2., 3.])
    assert grads(gt.math.rint, [0.4, 1.5])[1] == [None]          # not differentiable, as TF
    a, b = gt.constant([-7, 7, -7, 7]), gt.constant([2, -2, -2, 2])
    np.testing.assert_array_equal(gt.truncatediv(a, b).numpy(), [-3, -3, 3, 3])
    np.testing.assert_array_equal(gt.truncatemod(a, b).numpy(), [-1, 1, -1, 1])
    assert gt.truncatediv(a, b).dtype == gt.int32
    close(gt.truncatediv(gt.constant([-7., 7.5]), gt.constant([2., -2.])).numpy(), [-3., -3.])
    close(gt.truncatemod(gt.constant([-7.5, 7.5, 5.25]), gt.constant([2., -2., 1.5])).numpy(),
          [-1.5, 1.5, 0.75])
    with pytest.raises(gt.errors.InvalidArgumentError, match="division by zero"):
        gt.truncatediv(gt.constant([1]), gt.constant([0]))
    close(gt.scalar_mul(2., gt.constant([1., 2.])).numpy(), [2., 4.])
    close(gt.math.scalar_mul(gt.constant(3.), gt.constant([1., 2.])).numpy(), [3., 6.])
    np.testing.assert_array_equal(gt.scalar_mul(2, gt.constant([1, 2])).numpy(), [2, 4])
    with pytest.raises(ValueError, match="0-D value. Received shape \\(2,\\)"):
        gt.scalar_mul(gt.constant([3., 1.]), gt.constant([1., 2.]))
    with pytest.raises(TypeError):
        gt.scalar_mul(2.5, gt.constant([1, 2]))
    with pytest.raises(TypeError, match="realdiv"):
        gt.realdiv(gt.constant([1]), gt.constant([2]))


# --- slicing -------------------------------------------------------------------------------

X24 = np.arange(24).reshape(2, 3, 4)


def test_slice_matches_tf():
    x = gt.constant(X24)
    assert gt.slice(x, [1, 0, 0], [1, 1, 3]).numpy().tolist() == [[[12, 13, 14]]]
    assert gt.slice(x, [1, 1, 2], [-1, -1, -1]).numpy().tolist() == [[[18, 19], [22, 23]]]
    assert gt.slice(x, gt.constant([1, 0, 0], gt.int64),
                    gt.constant([1, 1, 1], gt.int64)).numpy().tolist() == [[[12]]]
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"Expected size\[0\] in \[0, 1\], "
                                                             r"but got 2"):
        gt.slice(x, [1, 0, 0], [2, 1, 3])
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"begin\[0\] in \[0, 2\], but got -1"):
        gt.slice(x, [-1, 0, 0], [1, 1, 3])
    with pytest.raises(gt.errors.InvalidArgumentError, match="1-D tensors of size 3"):
        gt.slice(x, [1, 0], [1, 1])
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"size\[1\] in \[0, 3\], but got -2"):
        gt.slice(x, [0, 0, 0], [1, -2, 1])


def test_strided_slice_matches_tf():
    x = gt.constant(X24)
    ss = gt.strided_slice
    assert ss(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]).numpy().tolist() == \
        [[[4, 6], [8, 10]], [[16, 18], [20, 22]]]
    assert ss(x, [1, -1, 0], [2, 0, 4], [1, 1, 1], shrink_axis_mask=3).numpy().tolist() == \
        [20, 21, 22, 23]
    assert ss(x, [1, 5, 0], [0, 0, 3], [1, -1, 1], begin_mask=1, end_mask=2).numpy().tolist() \
        == []
    assert ss(x, [0, 0, 1], [1, 1, 3], [1, 1, 1], new_axis_mask=2).shape == (1, 1, 2, 4)
    assert ss(x, [0, 1], [1, 3], [1, 1], ellipsis_mask=1).numpy().tolist() == \
        [[[1, 2], [5, 6], [9, 10]], [[13, 14], [17, 18], [21, 22]]]
    assert ss(x, [0, 2], [1, 3], ellipsis_mask=1, shrink_axis_mask=2).numpy().tolist() == \
        [[2, 6, 10], [14, 18, 22]]
    assert ss(x, [1], [2]).shape == (1, 3, 4)
    assert ss(x, [0, 0], [1, 1], new_axis_mask=1, shrink_axis_mask=1).shape == (1, 1, 3, 4)
    assert gt.newaxis is None
    with pytest.raises(gt.errors.InvalidArgumentError, match="slice index 5 of dimension 0"):
        ss(x, [5], [6], shrink_axis_mask=1)
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"strides\[0\] must be non-zero"):
        ss(x, [0], [2], [0])
    with pytest.raises(gt.errors.InvalidArgumentError, match="Multiple ellipses"):
        ss(x, [0, 0], [1, 1], ellipsis_mask=3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="1D equal size"):
        ss(x, [0, 0], [1], [1])
    with pytest.raises(gt.errors.InvalidArgumentError, match="only stride 1"):
        ss(x, [1], [0], [-1], shrink_axis_mask=1)


def test_strided_slice_gradient_matches_tf():
    y, g, h = first_second(lambda v: gt.strided_slice(v, [1], [4], [2]) ** 2,
                           [1., 2., 3., 4., 5.])
    close(y, [4., 16.])
    close(g, [0., 4., 0., 8., 0.])
    close(h, [0., 2., 0., 2., 0.])


# --- unique / searchsorted / ensure_shape ----------------------------------------------------

def test_unique_keeps_first_occurrence_order(device):
    u = gt.unique(gt.constant([1, 1, 2, 4, 4, 4, 7, 8, 8]))
    assert type(u).__name__ == "Unique" and u._fields == ("y", "idx")
    np.testing.assert_array_equal(u.y.numpy(), [1, 2, 4, 7, 8])
    np.testing.assert_array_equal(u.idx.numpy(), [0, 0, 1, 2, 2, 2, 3, 4, 4])
    u = gt.unique(gt.constant([3., 1., 3., 2.]), out_idx=gt.int64)
    np.testing.assert_array_equal(u.y.numpy(), [3., 1., 2.])
    assert u.idx.dtype == gt.int64 and u.idx.numpy().tolist() == [0, 1, 0, 2]
    c = gt.unique_with_counts(gt.constant([3., 1., 3., 2.]))
    assert c.y.numpy().tolist() == [3., 1., 2.] and c.idx.numpy().tolist() == [0, 1, 0, 2]
    assert c.count.numpy().tolist() == [2, 1, 1] and c.count.dtype == gt.int32
    assert u.y.device == device


def test_unique_errors_and_no_gradient():
    with pytest.raises(gt.errors.InvalidArgumentError, match="1D vector"):
        gt.unique(gt.constant([[1, 2]]))
    assert grads(lambda a: gt.unique(a).y * 2.0, [3., 1., 3., 2.])[1] == [None]


def test_searchsorted_matches_tf(device):
    seq = gt.constant([0., 1., 2., 3.])
    out = gt.searchsorted(seq, gt.constant([0.5, 1., 3., 4., -1.]))
    assert out.dtype == gt.int32 and out.numpy().tolist() == [1, 1, 3, 4, 0]
    out = gt.searchsorted(seq, gt.constant([0.5, 1., 3., 4., -1.]), side="right",
                          out_type=gt.int64)
    assert out.dtype == gt.int64 and out.numpy().tolist() == [1, 2, 4, 4, 0]
    out = gt.searchsorted(gt.constant([[0., 3., 8.], [1., 2., 3.]]),
                          gt.constant([[2., 9.], [0., 3.]]))
    assert out.numpy().tolist() == [[1, 3], [0, 2]]
    out = gt.searchsorted(gt.constant([[0., 3., 8.], [1., 2., 3.]]),
                          gt.constant([[2., 9.], [0., 3.]]), side="right")
    assert out.numpy().tolist() == [[1, 3], [0, 3]]
    with pytest.raises(gt.errors.InvalidArgumentError, match="Leading dim_size"):
        gt.searchsorted(gt.constant([[0., 3., 8.], [1., 2., 3.]]), gt.constant([2., 9.]))
    with pytest.raises(ValueError, match="either 'right' or 'left'"):
        gt.searchsorted(seq, gt.constant([0.5]), side="middle")


def test_ensure_shape():
    x = gt.zeros([3, 4])
    assert gt.ensure_shape(x, [None, 4]).shape == (3, 4)
    assert gt.ensure_shape(x, gt.TensorShape(None)).shape == (3, 4)
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"Shape of tensor input \[3,4\] is not compatible with expected "
                             r"shape \[3,5\]"):
        gt.ensure_shape(x, [3, 5])
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"expected shape \[3\]"):
        gt.ensure_shape(x, [3])
    close(grads(lambda a: gt.ensure_shape(a, [2]) * 3., [1., 2.])[1][0], [3., 3.])


# --- scans, folds, case ------------------------------------------------------------------------

def test_scan_matches_tf():
    np.testing.assert_array_equal(gt.scan(lambda a, x: a + x, gt.constant([1, 2, 3, 4])).numpy(),
                                  [1, 3, 6, 10])
    close(gt.scan(lambda a, x: a * x, gt.constant([1., 2., 3.]),
                  initializer=gt.constant(2.)).numpy(), [2., 4., 12.])
    np.testing.assert_array_equal(gt.scan(lambda a, x: a + x, gt.constant([1, 2, 3, 4]),
                                          reverse=True).numpy(), [10, 9, 7, 4])
    s, p = gt.scan(lambda a, x: (a[0] + x[0], a[1] * x[1]),
                   (gt.constant([1., 2., 3.]), gt.constant([2., 3., 4.])))
    close(s.numpy(), [1., 3., 6.])
    close(p.numpy(), [2., 6., 24.])
    d = gt.scan(lambda a, x: {"s": a["s"] + x, "p": a["p"] * x}, gt.constant([1., 2., 3.]),
                initializer={"s": gt.constant(0.), "p": gt.constant(1.)})
    close(d["s"].numpy(), [1., 3., 6.])
    close(d["p"].numpy(), [1., 2., 6.])
    a, b = gt.scan(lambda acc, _: (acc[1], acc[0] + acc[1]), gt.range(6), initializer=(0, 1))
    assert a.dtype == gt.int32
    assert a.numpy().tolist() == [1, 1, 2, 3, 5, 8] and b.numpy().tolist() == [1, 2, 3, 5, 8, 13]
    empty = gt.scan(lambda a, x: a + x, gt.zeros([0]), initializer=gt.constant(1.))
    assert empty.shape == (0,) and empty.dtype == gt.float32


def test_scan_gradient_matches_tf():
    _, (g,) = grads(lambda a: gt.reduce_sum(gt.scan(lambda c, x: c * x + 1.0, a,
                                                    initializer=gt.constant(1.0, gt.float64))),
                    [1., 2., 3.])
    close(g, [9., 8., 5.])


def test_foldl_foldr_match_tf():
    c = gt.constant([1, 2, 3, 4])
    assert int(gt.foldl(lambda a, x: a - x, c).numpy()) == -8
    assert int(gt.foldr(lambda a, x: a - x, c).numpy()) == -2
    out = gt.foldl(lambda a, x: a - x, c, initializer=10)
    assert out.dtype == gt.int32 and int(out.numpy()) == 0
    assert int(gt.foldr(lambda a, x: a * 2 + x, gt.constant([1, 2, 3]),
                        initializer=gt.constant(10)).numpy()) == 97
    assert float(gt.foldl(lambda a, x: a + x[0] * x[1],
                          (gt.constant([1., 2.]), gt.constant([3., 4.])),
                          initializer=gt.constant(0.)).numpy()) == 11.0
    assert float(gt.foldl(lambda a, x: a + x, gt.zeros([0]),
                          initializer=gt.constant(5.)).numpy()) == 5.0
    _, (g,) = grads(lambda a: gt.foldl(lambda c, x: c * x, a), [2., 3., 4.])
    close(g, [12., 8., 6.])


def test_scan_and_fold_errors():
    with pytest.raises(gt.errors.OutOfRangeError):
        gt.scan(lambda a, x: a + x, gt.zeros([0]))
    with pytest.raises(gt.errors.OutOfRangeError):
        gt.foldl(lambda a, x: a + x, gt.zeros([0]))
    with pytest.raises(ValueError, match="same nested structure"):
        gt.scan(lambda a, x: (a, a), gt.constant([1., 2.]), initializer=gt.constant(0.))
    with pytest.raises(ValueError, match="same first axis"):
        gt.scan(lambda a, x: a, (gt.zeros([2]), gt.zeros([3])), initializer=(0., 0.))
    with pytest.raises(TypeError, match="callable"):
        gt.foldl(3, gt.zeros([2]))


def test_case_matches_tf():
    T, F = gt.constant(True), gt.constant(False)
    assert int(gt.case([(F, lambda: gt.constant(1)), (T, lambda: gt.constant(2))]).numpy()) == 2
    assert int(gt.case([(F, lambda: gt.constant(1))], default=lambda: gt.constant(3)).numpy()) \
        == 3
    # the first true one; exclusive is not checked eagerly, as in TF
    assert int(gt.case([(T, lambda: gt.constant(1)), (T, lambda: gt.constant(2))],
                       exclusive=True).numpy()) == 1
    out = gt.case([(T, lambda: [gt.constant(1)])])
    assert isinstance(out, list) and len(out) == 1
    with pytest.raises(gt.errors.InvalidArgumentError, match="None of conditions evaluated as "
                                                             "True"):
        gt.case([(F, lambda: gt.constant(1)), (F, lambda: gt.constant(2))])
    with pytest.raises(TypeError, match="pred must be a Tensor, got: True"):
        gt.case([(True, lambda: gt.constant(1))])
    with pytest.raises(ValueError):
        gt.case([], default=lambda: gt.constant(1))


# --- scatters with max and min -----------------------------------------------------------------

T4 = np.array([1., 5., 3., 5.])


def test_tensor_scatter_nd_max_min_values(device):
    t = gt.constant(T4.astype(np.float32))
    idx, upd = [[1], [2], [2], [0]], gt.constant([5., 4., 7., -1.])
    close(gt.tensor_scatter_nd_max(t, idx, upd).numpy(), [1., 5., 7., 5.])
    close(gt.tensor_scatter_nd_min(t, idx, upd).numpy(), [-1., 5., 3., 5.])
    out = gt.tensor_scatter_nd_max(gt.zeros([3, 2]), [[2], [0]],
                                   gt.constant([[1., -1.], [-2., 3.]]))
    close(out.numpy(), [[0., 3.], [0., 0.], [1., 0.]])
    out = gt.tensor_scatter_nd_max(gt.constant([1, 2]), [[0]], gt.constant([5]))
    assert out.dtype == gt.int32 and out.numpy().tolist() == [5, 2]
    # no update reaches the last place: an -inf there stays -inf
    out = gt.tensor_scatter_nd_max(gt.constant([0., -np.inf]), [[0]], gt.constant([1.]))
    assert out.numpy().tolist() == [1., -np.inf]
    assert out.device == device


def test_tensor_scatter_nd_max_min_gradients_match_tf():
    w = gt.constant([1., 2., 3., 4.], gt.float64)
    _, (gt_, gu) = grads(lambda a, u: gt.tensor_scatter_nd_max(a, [[1], [2], [2], [0]], u) * w,
                         T4, [5., 4., 7., -1.])
    close(gt_, [1., 1., 0., 4.])
    close(gu, [1., 0., 3., 0.])
    # ties share the gradient equally (TF's rule)
    _, (gt_, gu) = grads(lambda a, u: gt.tensor_scatter_nd_max(a, [[1], [1], [2]], u) * w,
                         T4, [5., 5., 3.])
    close(gt_, [1., 2 / 3, 1.5, 4.])
    close(gu, [2 / 3, 2 / 3, 1.5])
    _, (gt_, gu) = grads(lambda a, u: gt.tensor_scatter_nd_min(a, [[1], [2], [2], [0]], u) * w,
                         T4, [5., 4., 7., -1.])
    close(gt_, [0., 1., 3., 4.])
    close(gu, [1., 0., 0., 1.])


def test_tensor_scatter_nd_max_out_of_range_raises_on_cpu():
    with pytest.raises(gt.errors.InvalidArgumentError, match="out of range"):
        gt.tensor_scatter_nd_max(gt.constant(T4), [[7]], [5.])


# --- partitions, stitches, sequences -----------------------------------------------------------

def test_dynamic_partition_matches_tf():
    d = gt.constant(np.arange(10, 16, dtype=np.float32))
    parts = gt.dynamic_partition(d, [0, 0, 1, 1, 0, 2], 3)
    assert [p.numpy().tolist() for p in parts] == [[10., 11., 14.], [12., 13.], [15.]]
    parts = gt.dynamic_partition(gt.constant(np.arange(12.).reshape(3, 2, 2)),
                                 [[0, 1], [1, 0], [0, 0]], 2)
    assert parts[0].numpy().tolist() == [[0., 1.], [6., 7.], [8., 9.], [10., 11.]]
    assert parts[1].numpy().tolist() == [[2., 3.], [4., 5.]]
    parts = gt.dynamic_partition(gt.constant(np.arange(6.).reshape(3, 2)), [1, 0, 1], 3)
    assert parts[2].shape == (0, 2)
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"partitions\[3\] = 5 is not in "
                                                             r"\[0, 3\)"):
        gt.dynamic_partition(d, [0, 0, 1, 5, 0, 2], 3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="must start with partitions.shape"):
        gt.dynamic_partition(d, [0, 0, 1], 3)
    _, (g,) = grads(lambda a: gt.dynamic_partition(a, [0, 0, 1, 1, 0, 2], 3)[0]
                    * gt.constant([1., 2., 3.], gt.float64), np.arange(10., 16.))
    close(g, [1., 2., 0., 0., 3., 0.])


def test_dynamic_stitch_matches_tf(device):
    out = gt.dynamic_stitch([[0, 1, 2], [1, 2]], [gt.constant([1., 2., 3.]),
                                                  gt.constant([20., 30.])])
    assert out.numpy().tolist() == [1., 20., 30.]          # later entries win
    out = gt.dynamic_stitch([[0, 3]], [gt.constant([1., 2.])])
    assert out.numpy().tolist() == [1., 0., 0., 2.]         # unnamed rows are 0
    out = gt.dynamic_stitch([[6], [4, 1], [[5, 2], [0, 3]]],
                            [gt.constant([[61., 62.]]), gt.constant([[41., 42.], [11., 12.]]),
                             gt.constant([[[51., 52.], [21., 22.]], [[1., 2.], [31., 32.]]])])
    assert out.numpy()[:, 0].tolist() == [1., 11., 21., 31., 41., 51., 61.]
    assert out.device == device
    with pytest.raises(gt.errors.InvalidArgumentError, match="does not start with"):
        gt.dynamic_stitch([[0, 1]], [gt.constant([1., 2., 3.])])
    with pytest.raises(gt.errors.InvalidArgumentError, match="negative"):
        gt.dynamic_stitch([[0, -1]], [gt.constant([1., 2.])])


def test_dynamic_stitch_gradient_matches_tf():
    # every entry gets the gradient of its place, the overwritten ones too (TF's rule)
    _, (ga, gb) = grads(lambda a, b: gt.dynamic_stitch([[0, 1, 2], [1, 2]], [a, b])
                        * gt.constant([1., 2., 3.], gt.float64), [1., 2., 3.], [20., 30.])
    close(ga, [1., 2., 3.])
    close(gb, [2., 3.])


def test_reverse_sequence_matches_tf(device):
    x = gt.constant(np.arange(12).reshape(3, 4))
    assert gt.reverse_sequence(x, [1, 3, 4], seq_axis=1, batch_axis=0).numpy().tolist() == \
        [[0, 1, 2, 3], [6, 5, 4, 7], [11, 10, 9, 8]]
    assert gt.reverse_sequence(x, [2, 0, 3, 1], seq_axis=0, batch_axis=1).numpy().tolist() == \
        [[4, 1, 10, 3], [0, 5, 6, 7], [8, 9, 2, 11]]
    y = gt.reverse_sequence(gt.constant(np.arange(24).reshape(2, 3, 4)), [2, 3, 1, 0],
                            seq_axis=1, batch_axis=2)
    assert y.numpy().tolist() == [[[4, 9, 2, 3], [0, 5, 6, 7], [8, 1, 10, 11]],
                                  [[16, 21, 14, 15], [12, 17, 18, 19], [20, 13, 22, 23]]]
    assert gt.reverse_sequence(x, gt.constant([1, 3, 4], gt.int64),
                               seq_axis=1).numpy().tolist()[1] == [6, 5, 4, 7]
    assert y.device == device


def test_reverse_sequence_errors_and_gradient():
    x = gt.constant(np.arange(12).reshape(3, 4))
    with pytest.raises(TypeError, match="seq_axis"):
        gt.reverse_sequence(x, [1, 3, 4])
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"seq_lens\(2\) > input.dims\(1\)"):
        gt.reverse_sequence(x, [1, 3, 5], seq_axis=1)
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"seq_lens\(1\) < 0"):
        gt.reverse_sequence(x, [1, -3, 2], seq_axis=1)
    with pytest.raises(gt.errors.InvalidArgumentError, match="batch_dim == seq_dim == 0"):
        gt.reverse_sequence(x, [1, 3, 4], seq_axis=0, batch_axis=0)
    _, (g,) = grads(lambda a: gt.reverse_sequence(a, [2, 1], seq_axis=1)
                    * gt.constant([[1., 2., 3.], [4., 5., 6.]], gt.float64), np.ones((2, 3)))
    close(g, [[2., 1., 3.], [4., 5., 6.]])


def test_unravel_index_matches_tf(device):
    out = gt.unravel_index(gt.constant([1, 5, 7]), [3, 3])
    assert out.dtype == gt.int32 and out.numpy().tolist() == [[0, 1, 2], [1, 2, 1]]
    assert gt.unravel_index(gt.constant(5), [3, 3]).numpy().tolist() == [1, 2]
    out = gt.unravel_index(gt.constant([1, 5], gt.int64), [2, 3])
    assert out.dtype == gt.int64 and out.numpy().tolist() == [[0, 1], [1, 2]]
    # C's division, as TF's kernel: -1 gives [0, -1]
    assert gt.unravel_index(gt.constant([-1]), [3, 3]).numpy().tolist() == [[0], [-1]]


def test_unravel_index_errors():
    with pytest.raises(gt.errors.InvalidArgumentError, match="out of bound"):
        gt.unravel_index(gt.constant([9]), [3, 3])
    with pytest.raises(gt.errors.InvalidArgumentError, match="scalar or vector"):
        gt.unravel_index(gt.constant([[1, 2], [3, 4]]), [2, 3])


def test_histogram_fixed_width_matches_tf(device):
    v = gt.constant([-1.0, 0.0, 1.5, 2.0, 5.0, 15, 1.0, 2.5])
    out = gt.histogram_fixed_width(v, [0.0, 5.0], nbins=5)
    assert out.dtype == gt.int32 and out.numpy().tolist() == [2, 2, 2, 0, 2]
    assert gt.histogram_fixed_width(v, [0.0, 5.0], nbins=5, dtype=gt.int64).dtype == gt.int64
    counts = gt.histogram_fixed_width(v, [0.0, 5.0]).numpy()
    assert counts.shape == (100,) and counts[[0, 20, 30, 40, 50, 99]].tolist() == [2, 1, 1, 1, 1, 2]
    assert gt.histogram_fixed_width_bins(v, [0.0, 5.0], nbins=5).numpy().tolist() == \
        [0, 0, 1, 2, 4, 4, 1, 2]
    # float32 edges: the kernel's float64 step puts 0.7f in bin 6, the bins op in bin 7
    e = gt.constant([0.1, 0.2, 0.3, 0.7, 0.9999999, 1.0])
    assert gt.histogram_fixed_width(e, [0.0, 1.0], nbins=10).numpy().tolist() == \
        [0, 1, 1, 1, 0, 0, 1, 0, 0, 2]
    assert gt.histogram_fixed_width_bins(e, [0.0, 1.0], nbins=10).numpy().tolist() == \
        [1, 2, 3, 7, 9, 9]
    assert gt.histogram_fixed_width(gt.constant([1, 2, 3]), [0, 4], nbins=2).numpy().tolist() \
        == [1, 2]
    assert gt.histogram_fixed_width(gt.constant([[1., 2.], [3., 4.]]), [0.0, 5.0],
                                    nbins=5).numpy().tolist() == [0, 1, 1, 1, 1]
    assert out.device == device


def test_histogram_errors():
    with pytest.raises(gt.errors.InvalidArgumentError, match="value_range\\[0\\] < "):
        gt.histogram_fixed_width(gt.constant([1.]), [5.0, 0.0], nbins=5)
    with pytest.raises(gt.errors.InvalidArgumentError, match="nbins should be a positive"):
        gt.histogram_fixed_width(gt.constant([1.]), [0.0, 5.0], nbins=0)


# --- counting ----------------------------------------------------------------------------------

def test_bincount_matches_tf():
    bc = gt.math.bincount
    out = bc(gt.constant([1, 1, 3, 0]))
    assert out.dtype == gt.int32 and out.numpy().tolist() == [1, 2, 0, 1]
    out = bc(gt.constant([1, 1, 3, 0]), weights=[0.5, 1., 2., 3.])
    assert out.dtype == gt.float32 and out.numpy().tolist() == [3., 1.5, 0., 2.]
    assert bc(gt.constant([1, 1, 3, 0, 7]), minlength=3, maxlength=5).numpy().tolist() == \
        [1, 2, 0, 1, 0]
    out = bc(gt.constant([1, 1]), minlength=5, dtype=gt.float32)
    assert out.dtype == gt.float32 and out.numpy().tolist() == [0., 2., 0., 0., 0.]
    assert bc(gt.zeros([0], gt.int32)).shape == (0,)
    assert bc(gt.constant([[1, 2], [0, 2]])).numpy().tolist() == [1, 1, 2]
    assert bc(gt.constant([[1, 2], [0, 2]]), axis=-1).numpy().tolist() == [[0, 1, 1], [1, 0, 1]]
    assert bc(gt.constant([1, 1, 2]), binary_output=True).numpy().tolist() == [0, 1, 1]
    assert bc(gt.constant([1, 1, 2], gt.int64)).dtype == gt.int32
    out = bc(gt.constant([1, 1, 2]), weights=[1, 2, 3])
    assert out.dtype == gt.int32 and out.numpy().tolist() == [0, 3, 3]
    with pytest.raises(gt.errors.InvalidArgumentError, match="non-negative"):
        bc(gt.constant([1, -1]))
    _, (g,) = grads(lambda w: bc(gt.constant([1, 1, 3, 0]), weights=w)
                    * gt.constant([1., 2., 3., 4.], gt.float64), [0.5, 1., 2., 3.])
    close(g, [2., 2., 4., 1.])


def test_bincount_on_a_device(device):
    out = gt.math.bincount(gt.constant([1, 1, 3]), minlength=4, maxlength=4)
    assert out.device == device and out.numpy().tolist() == [0, 2, 0, 1]


def test_confusion_matrix_matches_tf():
    cm = gt.math.confusion_matrix
    out = cm(gt.constant([1, 2, 4]), gt.constant([2, 2, 4]))
    assert out.dtype == gt.int32 and out.shape == (5, 5)
    assert np.argwhere(out.numpy()).tolist() == [[1, 2], [2, 2], [4, 4]]
    out = cm(gt.constant([1, 2, 4]), gt.constant([2, 2, 4]), num_classes=6,
             weights=gt.constant([1., 2., 3.]), dtype=gt.float32)
    assert out.dtype == gt.float32 and out.shape == (6, 6)
    assert (out.numpy()[1, 2], out.numpy()[2, 2], out.numpy()[4, 4], out.numpy().sum()) == \
        (1., 2., 3., 6.)
    assert cm(gt.constant([1, 2], gt.int64), gt.constant([2, 2], gt.int64)).dtype == gt.int32
    with pytest.raises(gt.errors.InvalidArgumentError, match="`labels` out of bound"):
        cm(gt.constant([1, 2, 4]), gt.constant([2, 2, 4]), num_classes=3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="contains negative values"):
        cm(gt.constant([-1, 2]), gt.constant([2, 2]))


def test_math_aliases_and_small_functions():
    m = gt.math
    assert m.softmax is gt.nn.softmax and m.log_softmax is gt.nn.log_softmax
    assert m.l2_normalize is gt.nn.l2_normalize and m.softsign is gt.nn.softsign
    assert m.in_top_k is gt.nn.in_top_k
    close(m.polyval([gt.constant(2.), gt.constant(3.), gt.constant(4.)], gt.constant(2.)).numpy(),
          18.)
    close(m.polyval([gt.constant([1., 2.]), gt.constant([3., 4.])], gt.constant([2., 3.])).numpy(),
          [5., 10.])
    close(m.polyval([], gt.constant(2.)).numpy(), 0.)
    y, g, h = first_second(m.lbeta, [[1., 2.], [0.5, 3.]])
    close(y, [-0.693147181, 0.064538521])
    close(g, [[-1.5, -0.5], [-3.066666667, -0.180372306]])
    close(h, [[0.855065933, -0.144934067], [4.274086688, -0.265781445]], rtol=1e-6)
    assert bool(m.is_non_decreasing(gt.constant([1, 1, 2])).numpy())
    assert not bool(m.is_strictly_increasing(gt.constant([1, 1, 2])).numpy())
    assert bool(m.is_strictly_increasing(gt.constant([], gt.int32)).numpy())
    assert m.invert_permutation(gt.constant([3, 4, 0, 2, 1])).numpy().tolist() == [2, 4, 3, 0, 1]
    with pytest.raises(gt.errors.InvalidArgumentError, match="0 is duplicated"):
        m.invert_permutation(gt.constant([0, 0]))
    out = m.zero_fraction(gt.constant([1., 0., 0., 2.]))
    assert out.dtype == gt.float32 and float(out.numpy()) == 0.5
    close(m.nextafter(gt.constant([1.0], gt.float64), gt.constant([2.0], gt.float64)).numpy(),
          [1.0 + 2 ** -52], rtol=0, atol=0)


def test_cumulative_logsumexp_matches_tf(device):
    x = [1.0, 2.0, -1000.0, 3.0]
    y, g, _ = first_second(gt.math.cumulative_logsumexp, x)
    close(y, [1., 2.313261688, 2.313261688, 3.407605964])
    close(g, [1.627913416, 1.706845628, 0., 0.665240956])
    y, g, _ = first_second(lambda t: gt.math.cumulative_logsumexp(t, exclusive=True,
                                                                  reverse=True), x)
    close(y, [3.313261688, 3., 3., -INF])
    close(g, [0., 0.268941421, 0., 2.731058579])
    out = gt.math.cumulative_logsumexp(gt.constant([[1., 2.], [3., 4.]]), axis=1)
    close(out.numpy(), [[1., 2.3132617], [3., 4.3132615]], rtol=1e-6)
    assert out.device == device
    with pytest.raises(TypeError, match="floating-point"):
        gt.math.cumulative_logsumexp(gt.constant([1, 2]))


# --- eager helpers --------------------------------------------------------------------------------

def test_name_scope():
    with gt.name_scope("foo") as s:
        assert s == "foo/" and gt.get_current_name_scope() == "foo"
        with gt.name_scope("bar") as s2:
            assert s2 == "foo/bar/" and gt.get_current_name_scope() == "foo/bar"
        with gt.name_scope("abs/") as s3:
            assert s3 == "abs/"
        with gt.name_scope("") as s4:
            assert s4 == "" and gt.get_current_name_scope() == ""
        assert gt.get_current_name_scope() == "foo"
    assert gt.get_current_name_scope() == ""
    assert gt.name_scope("x").name == "x"
    with pytest.raises(ValueError, match="must be a string"):
        gt.name_scope(3)


def test_eager_noops_and_static_values():
    assert gt.executing_eagerly() is True
    with gt.control_dependencies([gt.constant(1)]) as c:
        assert c is None
    with gt.control_dependencies(None):
        pass
    assert gt.group(gt.constant(1), gt.constant(2)) is None and gt.no_op() is None
    with pytest.raises(TypeError, match="Unknown keyword"):
        gt.group(gt.constant(1), control_inputs=[])
    v = gt.get_static_value(gt.constant([1, 2]))
    assert isinstance(v, np.ndarray) and v.tolist() == [1, 2]
    assert gt.get_static_value([1, 2]) == [1, 2] and gt.get_static_value(None) is None
    assert gt.get_static_value(gt.Variable(1.)) is None
    ids = gt.identity_n([gt.constant(1.), gt.constant([2, 3])])
    assert [i.numpy().tolist() for i in ids] == [1.0, [2, 3]]
    assert [s.numpy().tolist() for s in gt.shape_n([gt.zeros([2, 3]), gt.zeros([4])])] == \
        [[2, 3], [4]]


def test_tf_initializers():
    z = gt.zeros_initializer()([2], dtype=gt.int32)
    assert z.dtype == gt.int32 and z.numpy().tolist() == [0, 0]
    assert gt.zeros_initializer()([2]).dtype == gt.float32
    o = gt.ones_initializer()([2], dtype=gt.bool)
    assert o.dtype == gt.bool and o.numpy().tolist() == [True, True]
    c = gt.constant_initializer([1, 2, 3, 4])([2, 2])
    assert c.dtype == gt.int32 and c.numpy().tolist() == [[1, 2], [3, 4]]
    c = gt.constant_initializer(3)([2], dtype=gt.int64)
    assert c.dtype == gt.int64 and c.numpy().tolist() == [3, 3]
    assert gt.constant_initializer(3).get_config() == {"value": 3}
    with pytest.raises(TypeError, match="3 elements"):
        gt.constant_initializer([1, 2, 3])([2, 2])
    assert gt.random_normal_initializer().get_config() == {"mean": 0.0, "stddev": 0.05,
                                                           "seed": None}
    assert gt.random_uniform_initializer().get_config() == {"minval": -0.05, "maxval": 0.05,
                                                            "seed": None}
    r = gt.random_uniform_initializer(0, 10, seed=1)([50], dtype=gt.int32)
    assert r.dtype == gt.int32 and 0 <= r.numpy().min() and r.numpy().max() < 10
    n = gt.random_normal_initializer(seed=3)([4, 5], dtype=gt.float64)
    assert n.dtype == gt.float64
    np.testing.assert_array_equal(n.numpy(), gt.random_normal_initializer(seed=3)([4, 5],
                                                                                  gt.float64)
                                  .numpy())
    with pytest.raises(ValueError, match="floating point"):
        gt.random_normal_initializer()([3], dtype=gt.int32)
    with pytest.raises(TypeError, match="partition_shape"):
        gt.zeros_initializer()([2], partition_info=None)


# --- recompute_grad and grad_pass_through ---------------------------------------------------------

def test_recompute_grad_gives_the_same_gradients_and_records_less():
    w = gt.Variable(np.array([[0.5, -1.0], [2.0, 0.3]]))
    calls = []

    def block(x):
        calls.append(1)
        return gt.tanh(x @ w) * x

    x = gt.constant(np.array([[1.0, 2.0], [-0.5, 0.25]]))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.reduce_sum(block(x) ** 2)
    want = tape.gradient(y, [x, w])
    wrapped = gt.recompute_grad(block)
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = wrapped(x)
        recorded = len(tape._entries)
        y = gt.reduce_sum(out ** 2)
    got = tape.gradient(y, [x, w])
    for a, b in zip(got, want):
        close(a.numpy(), b.numpy(), rtol=1e-12)
    assert recorded == 1                      # the block as one op, not its matmul/tanh/...
    assert len(calls) == 3                    # plain, recomputed forward, backward replay


def test_recompute_grad_second_order():
    f = gt.recompute_grad(lambda x: gt.sin(x) * x)
    y, g, h = first_second(f, [0.3, 1.2])
    x = np.array([0.3, 1.2])
    close(g, np.cos(x) * x + np.sin(x))
    close(h, -np.sin(x) * x + 2 * np.cos(x))


def test_grad_pass_through():
    x = gt.constant([1.7, -0.2], gt.float64)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.grad_pass_through(gt.round)(x) * gt.constant([3., 4.], gt.float64)
    assert y.numpy().tolist() == [6., -0.]
    close(tape.gradient(y, x).numpy(), [3., 4.])
    v = gt.Variable(2.0)
    x = gt.constant(3.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.grad_pass_through(lambda t: t * v)(x)
    gx, gv = tape.gradient(y, [x, v])
    assert float(gx.numpy()) == 1.0 and gv is None
