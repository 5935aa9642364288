"""gt.nn and gt.random: values against NumPy references and TensorFlow's documented numbers,
kinks and ties, numerical stability, argument errors, convolution and pooling against naive
loops, dropout and random reproducibility. (Gradients: tests/specs/nn.py.)"""
from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import gradtape as gt
from gradtape.registry import REGISTRY, InvalidArgumentError


def grad(f, x, *, second=False):
    """First (or second, of the summed first) derivative of ``sum(f(x))``."""
    x = gt.constant(x)
    if not second:
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.reduce_sum(f(x))
        return tape.gradient(y, x)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.reduce_sum(f(x))
        g = inner.gradient(y, x)
        s = gt.reduce_sum(g)
    return outer.gradient(s, x)


# --- activations ----------------------------------------------------------------------------

X = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 7.0], dtype=np.float32)


@pytest.mark.parametrize("name,ref", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("relu6", lambda x: np.clip(x, 0, 6)),
    ("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x)),
    ("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
    ("selu", lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("silu", lambda x: x / (1 + np.exp(-x))),
    ("swish", lambda x: x / (1 + np.exp(-x))),
    ("softsign", lambda x: x / (1 + np.abs(x))),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh),
    ("softplus", lambda x: np.log1p(np.exp(x))),
])
def test_activation_values(name, ref):
    y = getattr(gt.nn, name)(gt.constant(X))
    assert y.dtype == gt.float32 and y.shape == X.shape
    np.testing.assert_allclose(y.numpy(), ref(X.astype(np.float64)), rtol=1e-6, atol=1e-6)


def test_gelu_matches_tensorflow_numbers():
    x = gt.constant([-3.0, -1.0, 0.0, 1.0, 3.0])
    # TF's documented values (float32 rounding of its own kernels: rtol 1e-4)
    np.testing.assert_allclose(gt.nn.gelu(x).numpy(),
                               [-0.00404951, -0.15865529, 0.0, 0.8413447, 2.9959507], rtol=1e-4)
    np.testing.assert_allclose(gt.nn.gelu(x, approximate=True).numpy(),
                               [-0.00363752, -0.15880796, 0.0, 0.841192, 2.9963627], rtol=1e-4)
    # exact: x * Phi(x), accurate in float32 far into the negative tail
    xs = np.array([-8.0, -5.0, -3.0, -1.0, 0.5, 2.0])
    exact = xs * 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in xs])
    np.testing.assert_allclose(gt.nn.gelu(gt.constant(xs.astype(np.float32))).numpy(), exact,
                               rtol=1e-5)


def test_leaky_relu_alpha_and_silu_beta():
    np.testing.assert_allclose(gt.nn.leaky_relu(gt.constant(X), alpha=0.1).numpy(),
                               np.where(X > 0, X, 0.1 * X), rtol=1e-7)
    np.testing.assert_allclose(gt.nn.leaky_relu(gt.constant(X), alpha=2.0).numpy(),
                               np.where(X > 0, X, 2.0 * X), rtol=1e-7)
    np.testing.assert_allclose(gt.nn.silu(gt.constant(X), beta=2.0).numpy(),
                               X / (1 + np.exp(-2.0 * X)), rtol=1e-6, atol=1e-7)


def test_kinks_follow_tensorflow():
    x = np.array([-1.0, 0.0, 1.0, 6.0, 7.0], dtype=np.float32)
    assert grad(gt.nn.relu, x).numpy().tolist() == [0, 0, 1, 1, 1]
    assert grad(gt.nn.relu6, x).numpy().tolist() == [0, 0, 1, 0, 0]
    np.testing.assert_allclose(grad(lambda t: gt.nn.leaky_relu(t, 0.3), x).numpy(),
                               [0.3, 0.3, 1, 1, 1], rtol=1e-7)
    assert grad(gt.nn.elu, x).numpy()[1] == 1.0
    assert grad(gt.nn.selu, x).numpy()[1] == pytest.approx(1.0507009873554805)


@pytest.mark.parametrize("fn", [gt.nn.relu, gt.nn.relu6, lambda t: gt.nn.leaky_relu(t, 0.3)])
def test_second_derivative_of_piecewise_linear_is_zero(fn):
    x = np.array([-1.0, 0.0, 1.0, 6.0, 7.0], dtype=np.float32)
    g2 = grad(fn, x, second=True)
    assert g2 is not None
    assert g2.numpy().tolist() == [0, 0, 0, 0, 0]


def test_hessians_through_vectorised_jacobian():
    import warnings
    x = gt.constant(np.array([-1.0, 0.5, 2.0]))
    w = np.array([1.0, 2.0, 3.0])
    for fn, diag in ((gt.nn.relu, [0, 0, 0]), (gt.nn.leaky_relu, [0, 0, 0]),
                     (gt.nn.elu, [math.exp(-1.0), 0, 0])):
        with gt.GradientTape(persistent=True) as outer:
            outer.watch(x)
            with gt.GradientTape() as inner:
                inner.watch(x)
                y = gt.reduce_sum(fn(x) * w)
            g = inner.gradient(y, x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # no row-by-row fallback
            h = outer.jacobian(g, x).numpy()
        np.testing.assert_allclose(h, np.diag(np.array(diag) * w), rtol=1e-12)


def test_smooth_second_derivatives():
    x = np.array([-1.5, 0.5, 2.0])
    np.testing.assert_allclose(grad(gt.nn.elu, x, second=True).numpy(),
                               [math.exp(-1.5), 0, 0], rtol=1e-12)
    s = 1 / (1 + np.exp(-x))
    silu2 = s * (1 - s) * (2 + x * (1 - 2 * s))
    np.testing.assert_allclose(grad(gt.nn.silu, x, second=True).numpy(), silu2, rtol=1e-12)
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(grad(gt.nn.gelu, x, second=True).numpy(), pdf * (2 - x * x),
                               rtol=1e-12)


def test_float_only_errors_name_op_and_dtype():
    i = gt.constant([1, 2, 3])
    for name in ("relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "softmax",
                 "log_softmax", "l2_loss"):
        with pytest.raises(TypeError, match=rf"{name}: expected a floating-point tensor, got "
                                            r"int32"):
            getattr(gt.nn, name)(i)


# --- softmax and cross-entropies --------------------------------------------------------------

def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_and_log_softmax_values():
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    for axis in (-1, 0, 1):
        np.testing.assert_allclose(gt.nn.softmax(gt.constant(x), axis=axis).numpy(),
                                   _np_softmax(x, axis), rtol=1e-6)
        np.testing.assert_allclose(gt.nn.log_softmax(gt.constant(x), axis=axis).numpy(),
                                   np.log(_np_softmax(x.astype(np.float64), axis)), rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(gt.nn.softmax([1.0, 2.0, 3.0]).numpy(),
                               [0.09003057, 0.24472847, 0.66524096], rtol=1e-6)


def test_softmax_gradient_against_numpy():
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, 0.1]])
    w = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])
    g = grad(lambda t: gt.nn.softmax(t) * gt.constant(w), x).numpy()
    p = _np_softmax(x)
    np.testing.assert_allclose(g, p * (w - (w * p).sum(-1, keepdims=True)), rtol=1e-12)
    g = grad(lambda t: gt.nn.log_softmax(t) * gt.constant(w), x).numpy()
    np.testing.assert_allclose(g, w - p * w.sum(-1, keepdims=True), rtol=1e-12)


def test_cross_entropies_match_tensorflow_numbers():
    logits = gt.constant([[4.0, 2.0, 1.0], [0.0, 5.0, 1.0]])
    labels = gt.constant([[1.0, 0.0, 0.0], [0.0, 0.8, 0.2]])
    np.testing.assert_allclose(
        gt.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits).numpy(),
        [0.16984604, 0.82474494], rtol=1e-6)
    logits = gt.constant([[2.0, -5.0, 0.5, -0.1], [0.0, 0.0, 1.9, 1.4],
                          [-100.0, 100.0, -100.0, -100.0]])
    np.testing.assert_allclose(
        gt.nn.sparse_softmax_cross_entropy_with_logits(labels=gt.constant([0, 3, 1]),
                                                       logits=logits).numpy(),
        [0.29750752, 1.1448325, 0.0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        gt.nn.sigmoid_cross_entropy_with_logits(
            labels=gt.constant([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5]),
            logits=gt.constant([1.0, -1.0, 0.0, 1.0, -1.0, 0.0, 0.0])).numpy(),
        [1.3132617, 0.3132617, 0.6931472, 0.3132617, 1.3132617, 0.6931472, 0.6931472],
        rtol=1e-6)


def test_cross_entropy_gradients_are_softmax_minus_labels():
    x = np.array([[4.0, 2.0, 1.0], [0.0, 5.0, 1.0]])
    z = np.array([[1.0, 0.0, 0.0], [0.0, 0.8, 0.2]])
    g = grad(lambda t: gt.nn.softmax_cross_entropy_with_logits(gt.constant(z), t), x).numpy()
    np.testing.assert_allclose(g, _np_softmax(x) - z, rtol=1e-12, atol=1e-15)
    g = grad(lambda t: gt.nn.sparse_softmax_cross_entropy_with_logits(
        gt.constant(np.array([0, 2])), t), x).numpy()
    np.testing.assert_allclose(g, _np_softmax(x) - np.eye(3)[[0, 2]], rtol=1e-12, atol=1e-15)
    xs = np.array([-2.0, 0.0, 3.0])
    zs = np.array([0.0, 0.5, 1.0])
    g = grad(lambda t: gt.nn.sigmoid_cross_entropy_with_logits(gt.constant(zs), t), xs).numpy()
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-xs)) - zs, rtol=1e-12)


def test_cross_entropy_label_gradients():
    x = gt.constant([[1.0, 2.0, 0.5]], dtype=gt.float64)
    z = gt.constant([[0.2, 0.5, 0.3]], dtype=gt.float64)
    with gt.GradientTape() as tape:
        tape.watch(z)
        loss = gt.nn.softmax_cross_entropy_with_logits(z, x)
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(),
                               -gt.nn.log_softmax(x).numpy(), rtol=1e-12)
    with gt.GradientTape() as tape:
        tape.watch(z)
        loss = gt.nn.sigmoid_cross_entropy_with_logits(z, x)
    np.testing.assert_allclose(tape.gradient(loss, z).numpy(), -x.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropies_stable_for_huge_logits(dtype):
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4], [1e4, 1e4, -1e4]], dtype=dtype)
    z = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]], dtype=dtype)
    sparse = np.array([1, 0, 2])
    cases = {
        "softmax": (lambda t: gt.nn.softmax_cross_entropy_with_logits(gt.constant(z), t),
                    [2e4, 2e4, math.log(2)]),
        "sparse": (lambda t: gt.nn.sparse_softmax_cross_entropy_with_logits(
            gt.constant(sparse), t), [2e4, 2e4, 2e4 + math.log(2)]),
        "sigmoid": (lambda t: gt.reduce_sum(gt.nn.sigmoid_cross_entropy_with_logits(
            gt.constant(z), t), axis=-1), [2e4 + math.log(2), 2e4, 1e4]),
    }
    for name, (f, expect) in cases.items():
        x = gt.constant(logits)
        with gt.GradientTape() as tape:
            tape.watch(x)
            loss = f(x)
        g = tape.gradient(loss, x).numpy()
        assert np.all(np.isfinite(loss.numpy())), name
        assert np.all(np.isfinite(g)), name
        np.testing.assert_allclose(loss.numpy(), expect, rtol=1e-6, err_msg=name)
        assert np.all(np.abs(g) <= 1.0 + 1e-6), name
    for f in (gt.nn.softmax, gt.nn.log_softmax):
        out = f(gt.constant(logits)).numpy()
        assert np.all(np.isfinite(out))
    np.testing.assert_allclose(gt.nn.log_softmax(gt.constant(logits)).numpy()[0],
                               [0.0, -2e4, -1e4], rtol=1e-6)


def test_sparse_labels_out_of_range_error():
    logits = gt.constant(np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(InvalidArgumentError, match=r"sparse_softmax_cross_entropy_with_logits:"
                                                   r" received a label value of 4 .* \[0, 4\)"):
        gt.nn.sparse_softmax_cross_entropy_with_logits(gt.constant([0, 4, 1]), logits)
    with pytest.raises(InvalidArgumentError, match=r"label value of -1 .*4 classes"):
        gt.nn.sparse_softmax_cross_entropy_with_logits(gt.constant([0, -1, 1]), logits)
    with pytest.raises(ValueError, match=r"labels of shape \(2,\) do not match logits of shape"):
        gt.nn.sparse_softmax_cross_entropy_with_logits(gt.constant([0, 1]), logits)
    with pytest.raises(TypeError, match=r"labels must be an integer tensor.*float32"):
        gt.nn.sparse_softmax_cross_entropy_with_logits(gt.constant([0.0, 1.0, 2.0]), logits)


def test_cross_entropy_shape_and_dtype_errors():
    with pytest.raises(ValueError, match=r"softmax_cross_entropy_with_logits: logits and labels "
                                         r"must have the same shape"):
        gt.nn.softmax_cross_entropy_with_logits(gt.constant([[1.0, 0.0]]),
                                                gt.constant([[1.0, 2.0, 3.0]]))
    with pytest.raises(TypeError, match=r"sigmoid_cross_entropy_with_logits: labels has dtype "
                                        r"float64"):
        gt.nn.sigmoid_cross_entropy_with_logits(gt.constant([1.0], dtype=gt.float64),
                                                gt.constant([1.0]))


@pytest.mark.parametrize("name,fn", [
    ("relu", gt.nn.relu), ("relu6", gt.nn.relu6), ("leaky_relu", gt.nn.leaky_relu),
    ("elu", gt.nn.elu), ("gelu", gt.nn.gelu), ("silu", gt.nn.silu),
    ("softmax", gt.nn.softmax), ("softmax_axis0", lambda t: gt.nn.softmax(t, axis=0)),
    ("log_softmax", gt.nn.log_softmax),
    ("log_softmax_axis0", lambda t: gt.nn.log_softmax(t, axis=0)),
    ("softmax_ce", lambda t: gt.nn.softmax_cross_entropy_with_logits(t * 0.5 + 0.5, t)),
    ("sparse_ce", lambda t: gt.nn.sparse_softmax_cross_entropy_with_logits(
        gt.constant(np.array([0, 3, 1])), t)),
    ("sigmoid_ce", lambda t: gt.nn.sigmoid_cross_entropy_with_logits(t * 0.5 + 0.5, t)),
    ("l2_loss", gt.nn.l2_loss),
    ("bias_add", lambda t: gt.nn.bias_add(t, gt.reduce_sum(t, axis=0))),
])
def test_vectorised_jacobian_matches_row_loop(name, fn):
    """The rules take cotangents with a leading batch axis (no fallback, same numbers)."""
    import warnings
    x = gt.constant(np.random.default_rng(12).standard_normal((3, 4)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = tape.jacobian(y, x)
    slow = tape.jacobian(y, x, experimental_use_pfor=False)
    assert fast.shape == tuple(y.shape) + (3, 4)
    np.testing.assert_allclose(fast.numpy(), slow.numpy(), rtol=1e-12, atol=1e-14)


# --- l2_loss, bias_add, moments -----------------------------------------------------------------

def test_l2_loss_and_bias_add():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    assert gt.nn.l2_loss(gt.constant(x)).numpy() == pytest.approx((x ** 2).sum() / 2)
    assert gt.nn.l2_loss(gt.constant(x)).shape == ()
    np.testing.assert_allclose(grad(gt.nn.l2_loss, x.astype(np.float64)).numpy(), x)
    b = np.array([1.0, -2.0, 3.0, 0.5], dtype=np.float32)
    np.testing.assert_array_equal(gt.nn.bias_add(gt.constant(x), gt.constant(b)).numpy(), x + b)
    v = np.random.default_rng(1).standard_normal((2, 4, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(
        gt.nn.bias_add(gt.constant(v), gt.constant(b), data_format="NCHW").numpy(),
        v + b[:, None, None], rtol=1e-7)
    vt, bt = gt.constant(v), gt.constant(b)
    with gt.GradientTape() as tape:
        tape.watch([vt, bt])
        y = gt.reduce_sum(gt.nn.bias_add(vt, bt, data_format="NCHW") * 2.0)
    gv, gb = tape.gradient(y, [vt, bt])
    np.testing.assert_array_equal(gv.numpy(), np.full(v.shape, 2.0))
    np.testing.assert_array_equal(gb.numpy(), np.full(4, 2.0 * 2 * 3 * 3))
    with pytest.raises(ValueError, match=r"bias_add: bias of length 3 does not match the 4 "
                                         r"channels"):
        gt.nn.bias_add(gt.constant(x), gt.constant([1.0, 2.0, 3.0]))


def test_moments():
    x = np.random.default_rng(2).standard_normal((4, 3, 5)).astype(np.float32)
    mean, var = gt.nn.moments(gt.constant(x), axes=[0, 1])
    np.testing.assert_allclose(mean.numpy(), x.mean(axis=(0, 1)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var.numpy(), x.var(axis=(0, 1)), rtol=1e-5)
    assert mean.shape == (5,) and var.shape == (5,)
    mean, var = gt.nn.moments(gt.constant(x), axes=[2], keepdims=True)
    assert mean.shape == (4, 3, 1) and var.shape == (4, 3, 1)
    np.testing.assert_allclose(var.numpy(), x.var(axis=2, keepdims=True), rtol=1e-5)


def test_batch_normalization_and_l2_normalize():
    x = np.random.default_rng(3).standard_normal((4, 3))
    m, v = x.mean(0), x.var(0)
    out = gt.nn.batch_normalization(gt.constant(x), gt.constant(m), gt.constant(v),
                                    np.array([1.0, 2.0, 3.0]), np.array([2.0, 1.0, 0.5]),
                                    1e-3).numpy()
    np.testing.assert_allclose(out, (x - m) / np.sqrt(v + 1e-3) * [2.0, 1.0, 0.5] + [1, 2, 3],
                               rtol=1e-12)
    y = gt.nn.l2_normalize(gt.constant(x), axis=1).numpy()
    np.testing.assert_allclose(y, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-12)


# --- convolution ---------------------------------------------------------------------------------

def _ref_conv(x, w, strides, dilations, pads):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    oh = (h + sum(pads[0]) - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (wd + sum(pads[1]) - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((n, oh, ow, o))
    for a in range(oh):
        for b in range(ow):
            for i in range(kh):
                for j in range(kw):
                    out[:, a, b, :] += xp[:, a * strides[0] + i * dilations[0],
                                          b * strides[1] + j * dilations[1], :] @ w[i, j]
    return out


def _same_pads(size, k, s, d):
    eff = (k - 1) * d + 1
    total = max((-(-size // s) - 1) * s + eff - size, 0)
    return (total // 2, total - total // 2)


CONV_CASES = [
    # (input shape, filter shape, strides, padding, dilations)
    ((2, 5, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 7, 7, 2), (3, 3, 2, 3), (2, 2), "VALID", (1, 1)),
    ((1, 6, 7, 2), (2, 3, 2, 2), (2, 1), "SAME", (1, 1)),
    ((2, 8, 7, 2), (3, 2, 2, 3), (1, 1), "SAME", (2, 3)),
    ((2, 9, 9, 1), (3, 3, 1, 2), (1, 1), "VALID", (2, 2)),
    ((3, 4, 4, 5), (1, 1, 5, 2), (1, 1), "VALID", (1, 1)),
    ((1, 4, 4, 2), (5, 5, 2, 2), (1, 1), "SAME", (1, 1)),
    ((2, 6, 6, 2), (4, 4, 2, 3), (3, 3), "SAME", (1, 1)),
]


@pytest.mark.parametrize("xs,ws,strides,padding,dil", CONV_CASES)
def test_conv2d_against_naive_loops(xs, ws, strides, padding, dil):
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    if padding == "SAME":
        pads = (_same_pads(xs[1], ws[0], strides[0], dil[0]),
                _same_pads(xs[2], ws[1], strides[1], dil[1]))
    else:
        pads = ((0, 0), (0, 0))
    ref = _ref_conv(x, w, strides, dil, pads)
    y = gt.nn.conv2d(gt.constant(x), gt.constant(w), list(strides), padding, dilations=list(dil))
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-10)
    if padding == "SAME" and strides == (1, 1):
        assert y.shape[1:3] == xs[1:3]
    # gradients of <conv(x, w), r> against the reference's (linear in each argument)
    r = rng.standard_normal(ref.shape)
    xt, wt = gt.constant(x), gt.constant(w)
    with gt.GradientTape() as tape:
        tape.watch([xt, wt])
        s = gt.reduce_sum(gt.nn.conv2d(xt, wt, list(strides), padding, dilations=list(dil)) *
                          gt.constant(r))
    gx, gw = tape.gradient(s, [xt, wt])
    eye_x = np.eye(x.size).reshape((x.size,) + xs)
    num_gx = np.array([np.sum(_ref_conv(e, w, strides, dil, pads) * r) for e in eye_x])
    np.testing.assert_allclose(gx.numpy().ravel(), num_gx, rtol=1e-9, atol=1e-9)
    eye_w = np.eye(w.size).reshape((w.size,) + ws)
    num_gw = np.array([np.sum(_ref_conv(x, e, strides, dil, pads) * r) for e in eye_w])
    np.testing.assert_allclose(gw.numpy().ravel(), num_gw, rtol=1e-9, atol=1e-9)


def test_conv2d_float32_nchw_and_explicit_padding():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)     # NCHW
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    y = gt.nn.conv2d(gt.constant(x), gt.constant(w), 1, "SAME", data_format="NCHW")
    ref = _ref_conv(x.transpose(0, 2, 3, 1).astype(np.float64), w, (1, 1), (1, 1),
                    ((1, 1), (1, 1))).transpose(0, 3, 1, 2)
    assert y.dtype == gt.float32 and y.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)
    xn = x.transpose(0, 2, 3, 1)
    y = gt.nn.conv2d(gt.constant(xn), gt.constant(w), [1, 2, 1, 1],
                     [[0, 0], [2, 0], [1, 3], [0, 0]])
    ref = _ref_conv(xn.astype(np.float64), w, (2, 1), (1, 1), ((2, 0), (1, 3)))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_is_the_input_gradient():
    rng = np.random.default_rng(7)
    x = gt.constant(rng.standard_normal((2, 6, 5, 3)))
    w = gt.constant(rng.standard_normal((3, 3, 3, 4)))
    r = gt.constant(rng.standard_normal((2, 3, 3, 4)))
    with gt.GradientTape() as tape:
        tape.watch(x)
        s = gt.reduce_sum(gt.nn.conv2d(x, w, 2, "SAME") * r)
    gx = tape.gradient(s, x)
    y = gt.nn.conv2d_transpose(r, w, [2, 6, 5, 3], strides=2, padding="SAME")
    np.testing.assert_allclose(y.numpy(), gx.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="conv2d_transpose: output_shape"):
        gt.nn.conv2d_transpose(r, w, [2, 9, 9, 3], strides=2, padding="SAME")


def test_conv2d_errors():
    x = gt.constant(np.zeros((1, 4, 4, 3), dtype=np.float32))
    with pytest.raises(ValueError, match=r"conv2d: input has 3 channels but filters of shape "
                                         r"\(3, 3, 2, 4\) expect 2"):
        gt.nn.conv2d(x, gt.constant(np.zeros((3, 3, 2, 4), dtype=np.float32)), 1, "SAME")
    w = gt.constant(np.zeros((3, 3, 3, 4), dtype=np.float32))
    with pytest.raises(ValueError, match=r"conv2d: input must have rank 4"):
        gt.nn.conv2d(gt.constant(np.zeros((4, 4, 3), dtype=np.float32)), w, 1, "SAME")
    with pytest.raises(ValueError, match=r"conv2d: padding must be"):
        gt.nn.conv2d(x, w, 1, "FULL")
    with pytest.raises(ValueError, match=r"conv2d: strides must be >= 1"):
        gt.nn.conv2d(x, w, 0, "SAME")
    with pytest.raises(ValueError, match=r"does not fit"):
        gt.nn.conv2d(x, gt.constant(np.zeros((5, 5, 3, 1), dtype=np.float32)), 1, "VALID")
    with pytest.raises(TypeError, match=r"conv2d: filters has dtype float64"):
        gt.nn.conv2d(x, gt.constant(np.zeros((3, 3, 3, 4))), 1, "SAME")


def test_conv2d_memory_stays_within_twice_input_plus_output():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 24, 24, 8)).astype(np.float32)
    w = rng.standard_normal((5, 5, 8, 16)).astype(np.float32)
    geom = {"strides": (1, 1), "dilations": (1, 1), "pads": ((2, 2), (2, 2))}
    fwd = REGISTRY["conv2d"].forward
    tracemalloc.start()
    try:
        y = fwd(np, x, w, **geom)
        _, peak_fwd = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        dx = REGISTRY["conv2d_backprop_input"].forward(np, y, w, input_shape=x.shape, **geom)
        _, peak_in = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        base2, _ = tracemalloc.get_traced_memory()
        REGISTRY["conv2d_backprop_filter"].forward(np, x, y, filter_shape=w.shape, **geom)
        _, peak_filter = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    io = x.nbytes + y.nbytes
    # what each op allocates (its output included) on top of the arrays it was given
    assert peak_fwd + x.nbytes <= 2 * io
    assert peak_in - base + y.nbytes <= 2 * io
    assert peak_filter - base2 + x.nbytes + y.nbytes <= 2 * io
    assert dx.shape == x.shape


# --- pooling ----------------------------------------------------------------------------------

def _ref_pool(x, k, s, padding, kind):
    n, h, w, c = x.shape
    if padding == "SAME":
        pads = (_same_pads(h, k[0], s[0], 1), _same_pads(w, k[1], s[1], 1))
    else:
        pads = ((0, 0), (0, 0))
    oh = (h + sum(pads[0]) - k[0]) // s[0] + 1
    ow = (w + sum(pads[1]) - k[1]) // s[1] + 1
    out = np.zeros((n, oh, ow, c))
    for a in range(oh):
        for b in range(ow):
            r0, c0 = a * s[0] - pads[0][0], b * s[1] - pads[1][0]
            win = x[:, max(r0, 0):r0 + k[0], max(c0, 0):c0 + k[1], :]
            out[:, a, b, :] = win.max(axis=(1, 2)) if kind == "max" else win.mean(axis=(1, 2))
    return out


@pytest.mark.parametrize("k,s,padding", [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME"),
                                         ((2, 3), (1, 2), "SAME"), ((3, 2), (3, 1), "VALID")])
def test_pools_against_naive_loops(k, s, padding):
    x = np.random.default_rng(9).standard_normal((2, 7, 6, 3))
    for kind, fn in (("max", gt.nn.max_pool2d), ("avg", gt.nn.avg_pool2d)):
        y = fn(gt.constant(x), list(k), list(s), padding)
        np.testing.assert_allclose(y.numpy(), _ref_pool(x, k, s, padding, kind), rtol=1e-12,
                                   err_msg=kind)


def test_avg_pool_same_excludes_padding_like_tensorflow():
    x = gt.constant(np.ones((1, 3, 3, 1), dtype=np.float32))
    np.testing.assert_array_equal(gt.nn.avg_pool2d(x, 2, 2, "SAME").numpy(),
                                  np.ones((1, 2, 2, 1)))
    g = grad(lambda t: gt.nn.avg_pool2d(t, 2, 2, "SAME"), np.ones((1, 3, 3, 1)))
    np.testing.assert_allclose(g.numpy()[0, :, :, 0],
                               [[0.25, 0.25, 0.5], [0.25, 0.25, 0.5], [0.5, 0.5, 1.0]])


def test_max_pool_gradient_goes_to_first_maximum():
    x = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [3.0, 0.0, 2.0]]).reshape(1, 3, 3, 1)
    g = grad(lambda t: gt.nn.max_pool2d(t, 2, 1, "VALID"), x).numpy()[0, :, :, 0]
    # windows: [[1,1],[1,1]] -> (0,0); [[1,0],[1,2]] -> (1,2); [[1,1],[3,0]] -> (2,0);
    # [[1,2],[0,2]] -> (1,2)
    np.testing.assert_array_equal(g, [[1, 0, 0], [0, 0, 2], [1, 0, 0]])


def test_pool_names_1d_nchw_and_errors():
    x = np.random.default_rng(10).standard_normal((2, 7, 3)).astype(np.float32)
    y = gt.nn.max_pool(gt.constant(x), 2, 2, "VALID").numpy()
    np.testing.assert_array_equal(y, x[:, :6].reshape(2, 3, 2, 3).max(axis=2))
    y = gt.nn.avg_pool(gt.constant(x), [3], [1], "SAME").numpy()
    ref = _ref_pool(x[:, None], (1, 3), (1, 1), "SAME", "avg")[:, 0]
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    x4 = np.random.default_rng(11).standard_normal((2, 3, 4, 4)).astype(np.float32)
    y = gt.nn.max_pool2d(gt.constant(x4), 2, 2, "VALID", data_format="NCHW").numpy()
    np.testing.assert_array_equal(y, x4.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)))
    with pytest.raises(ValueError, match=r"max_pool2d: input must have rank 4"):
        gt.nn.max_pool2d(gt.constant(x), 2, 2, "VALID")
    with pytest.raises(ValueError, match=r"avg_pool2d: padding must be 'SAME' or 'VALID'"):
        gt.nn.avg_pool2d(gt.constant(x4), 2, 2, "valid_ish")
    with pytest.raises(ValueError, match=r"ksize must be an int or a list of 1, 2 or 4"):
        gt.nn.max_pool2d(gt.constant(x4), [2, 2, 2], 2, "VALID")


# --- dropout, embedding_lookup ------------------------------------------------------------------

def test_dropout_scaling_and_rate():
    x = gt.constant(np.ones((200, 100), dtype=np.float32))
    y = gt.nn.dropout(x, 0.25, seed=1).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.01
    assert gt.nn.dropout(x, 0.0) is x
    g = grad(lambda t: gt.nn.dropout(t, 0.5, rng=gt.random.Generator.from_seed(4)),
             np.ones((4, 5)))
    mask = gt.nn.dropout(gt.constant(np.ones((4, 5))), 0.5,
                         rng=gt.random.Generator.from_seed(4)).numpy()
    np.testing.assert_array_equal(g.numpy(), mask)
    assert set(np.unique(mask)) <= {0.0, 2.0}
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"dropout: rate must be a float in the range "
                                             r"\[0, 1\)"):
            gt.nn.dropout(x, bad)
    with pytest.raises(TypeError, match=r"dropout: expected a floating-point tensor, got int32"):
        gt.nn.dropout(gt.constant([1, 2]), 0.5)


def test_dropout_seeding_and_noise_shape():
    x = gt.constant(np.ones((8, 6), dtype=np.float32))
    gt.random.set_seed(123)
    a1, a2 = gt.nn.dropout(x, 0.5, seed=7).numpy(), gt.nn.dropout(x, 0.5, seed=7).numpy()
    gt.random.set_seed(123)
    b1, b2 = gt.nn.dropout(x, 0.5, seed=7).numpy(), gt.nn.dropout(x, 0.5, seed=7).numpy()
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)        # one op seed gives a sequence, not one mask
    y = gt.nn.dropout(x, 0.5, noise_shape=[8, 1], seed=3).numpy()
    assert np.all(y == y[:, :1])             # one draw per row
    with pytest.raises(ValueError, match=r"dropout: noise_shape \(3, 1\) does not broadcast"):
        gt.nn.dropout(x, 0.5, noise_shape=[3, 1])


def test_embedding_lookup_values_and_gradient():
    params = np.arange(15, dtype=np.float64).reshape(5, 3)
    ids = np.array([[0, 2], [2, 4]])
    p = gt.constant(params)
    with gt.GradientTape() as tape:
        tape.watch(p)
        out = gt.nn.embedding_lookup(p, ids)
        s = gt.reduce_sum(out)
    np.testing.assert_array_equal(out.numpy(), params[ids])
    np.testing.assert_array_equal(tape.gradient(s, p).numpy()[:, 0], [1, 0, 2, 0, 1])
    shards = [gt.constant(params[:2]), gt.constant(params[2:])]
    np.testing.assert_array_equal(gt.nn.embedding_lookup(shards, ids).numpy(), params[ids])
    clipped = gt.nn.embedding_lookup(p, [4], max_norm=1.0).numpy()
    np.testing.assert_allclose(np.linalg.norm(clipped, axis=-1), [1.0])
    with pytest.raises(IndexError, match=r"embedding_lookup: .*index 5 is out of range"):
        gt.nn.embedding_lookup(p, [5])


# --- gt.random ----------------------------------------------------------------------------------

def test_generator_reproducible_and_distinct_seeds(device):
    a = gt.random.Generator.from_seed(42)
    b = gt.random.Generator.from_seed(42)
    c = gt.random.Generator.from_seed(43)
    for method in ("normal", "uniform", "truncated_normal"):
        xa = getattr(a, method)([50]).numpy()
        xb = getattr(b, method)([50]).numpy()
        xc = getattr(c, method)([50]).numpy()
        np.testing.assert_array_equal(xa, xb)
        assert not np.array_equal(xa, xc)
    assert not np.array_equal(a.normal([5]).numpy(), a.normal([5]).numpy())  # state advances


def test_generator_distributions_and_dtypes(device):
    g = gt.random.Generator.from_seed(0)
    x = g.normal([20000], mean=2.0, stddev=3.0).numpy()
    assert x.dtype == np.float32
    assert abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.1
    u = g.uniform([20000], minval=-1.0, maxval=3.0, dtype=gt.float64).numpy()
    assert u.dtype == np.float64 and u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.05
    i = g.uniform([1000], minval=2, maxval=7, dtype=gt.int32).numpy()
    assert i.dtype == np.int32 and set(np.unique(i)) == {2, 3, 4, 5, 6}
    t = g.truncated_normal([20000], mean=1.0, stddev=0.5).numpy()
    assert t.min() >= 0.0 and t.max() <= 2.0
    assert abs(t.std() - 0.5 * 0.8796) < 0.02     # std of a normal truncated at 2 sigma
    h = g.normal([3], dtype=gt.float16)
    assert h.dtype == gt.float16
    m = g.normal([3], mean=gt.constant([0.0, 100.0, -100.0]), stddev=0.01).numpy()
    np.testing.assert_allclose(m, [0.0, 100.0, -100.0], atol=0.1)
    with pytest.raises(ValueError, match=r"uniform: maxval must be given for an integer dtype"):
        g.uniform([3], dtype=gt.int64)
    with pytest.raises(TypeError, match=r"normal: dtype must be a floating type, got int32"):
        g.normal([3], dtype=gt.int32)
    with pytest.raises(ValueError, match=r"negative dimension"):
        g.normal([-1])


def test_permutation_shuffle_split_make_seeds(device):
    g = gt.random.Generator.from_seed(5)
    perm = g.permutation(10).numpy()
    assert sorted(perm.tolist()) == list(range(10))
    x = gt.constant(np.arange(12.0).reshape(6, 2))
    s = gt.random.Generator.from_seed(1).shuffle(x).numpy()
    s2 = gt.random.Generator.from_seed(1).shuffle(x).numpy()
    np.testing.assert_array_equal(s, s2)
    assert sorted(s[:, 0].tolist()) == [0, 2, 4, 6, 8, 10]
    np.testing.assert_array_equal(s[:, 1], s[:, 0] + 1)       # rows move whole
    children = gt.random.Generator.from_seed(9).split(2)
    again = gt.random.Generator.from_seed(9).split(2)
    np.testing.assert_array_equal(children[0].normal([4]).numpy(), again[0].normal([4]).numpy())
    assert not np.array_equal(children[0].normal([4]).numpy(), children[1].normal([4]).numpy())
    seeds = gt.random.Generator.from_seed(3).make_seeds(4)
    assert seeds.shape == (2, 4) and seeds.dtype == gt.int64
    np.testing.assert_array_equal(seeds.numpy(),
                                  gt.random.Generator.from_seed(3).make_seeds(4).numpy())
    assert g.device is device


def test_categorical_draws_with_the_logits_probabilities(device):
    """tf.random.categorical: [batch, num_samples] int64 indices, frequencies matching the
    softmax of the logits, -inf classes never drawn, op seeds reproducible, no host wait."""
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    with np.errstate(divide="ignore"):
        logits = gt.constant(np.log(probs).astype(np.float32))
    syncs = gt.config.sync_count(device)
    s = gt.random.categorical(logits, 20000, seed=5)
    assert gt.config.sync_count(device) == syncs
    assert s.shape == (2, 20000) and s.dtype == gt.int64 and s.device == device.name
    got = s.numpy()
    for row, p in zip(got, probs):
        freq = np.bincount(row, minlength=3) / row.size
        np.testing.assert_allclose(freq, p, atol=0.015)       # ~4 sigma at 20000 draws
    assert (got[1] != 2).all()
    gt.random.set_seed(9)
    first = gt.random.categorical(logits, 7, seed=5).numpy()
    gt.random.set_seed(9)                   # the same program again: the same draws
    np.testing.assert_array_equal(gt.random.categorical(logits, 7, seed=5).numpy(), first)
    small = gt.random.categorical(logits, 3, dtype=gt.int32)
    assert small.dtype == gt.int32 and small.shape == (2, 3)
    assert gt.random.categorical(logits, 0).shape == (2, 0)
    with pytest.raises(ValueError, match=r"logits must be \[batch, classes\], got shape \(3,\)"):
        gt.random.categorical(gt.constant([1.0, 2.0, 3.0]), 2)
    with pytest.raises(TypeError, match="dtype must be int32 or int64, got float32"):
        gt.random.categorical(logits, 2, dtype=gt.float32)
    # float16 logits: the noise is drawn in float32 (a float16 draw can round to 1.0, whose
    # infinite noise would pick a class of logit -inf)
    half = gt.random.categorical(np.array([[0.0, -np.inf]], np.float16), 100000, seed=1)
    assert (half.numpy() == 0).all()
    u = gt.random.uniform([2000000], dtype=gt.float16, seed=2).numpy()
    assert u.dtype == np.float16 and u.max() < 1.0 and u.min() >= 0.0


def test_module_functions_follow_global_and_op_seeds():
    gt.random.set_seed(2024)
    a = [gt.random.normal([3]).numpy(), gt.random.uniform([3]).numpy(),
         gt.random.normal([3], seed=1).numpy(), gt.random.normal([3], seed=1).numpy(),
         gt.random.truncated_normal([3], seed=2).numpy()]
    gt.random.set_seed(2024)
    b = [gt.random.normal([3]).numpy(), gt.random.uniform([3]).numpy(),
         gt.random.normal([3], seed=1).numpy(), gt.random.normal([3], seed=1).numpy(),
         gt.random.truncated_normal([3], seed=2).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[2], a[3])
    gt.random.set_seed(2025)
    assert not np.array_equal(gt.random.normal([3]).numpy(), a[0])
    x = gt.constant(np.arange(5))
    np.testing.assert_array_equal(np.sort(gt.random.shuffle(x, seed=3).numpy()), np.arange(5))
    with pytest.raises(TypeError, match=r"set_seed: seed must be an integer"):
        gt.random.set_seed("abc")


def test_device_generators_draw_without_waiting_for_the_device():
    """Philox on a device: the stream position is read and advanced on the device, so no
    draw makes the host wait or uploads anything (what a captured step needs)."""
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        g = gt.random.Generator.from_seed(7)
        assert g.algorithm == "philox"
        dev.reset_counters()
        g.normal([100]), g.uniform([33], dtype=gt.float64), g.truncated_normal([10])
        g.uniform([9], minval=0, maxval=5, dtype=gt.int32), g.permutation(6)
        gt.nn.dropout(gt.ones([64]), 0.5, rng=g)
        assert dev.sync_count == 0 and dev.transfer_count == 0


def test_device_generator_stream_is_philox_4x32_10():
    """Float32 draws are the top 24 bits of consecutive Philox words, float64 draws the top
    53 bits of consecutive word pairs; each draw starts at a fresh block."""
    from gradtape.backend import kernels as K
    dev = gt.get_device("strict:0")
    g = gt.random.Generator.from_seed(11, device=dev)
    key = g._rng.key
    blocks = np.arange(3, dtype=np.uint64)
    zero = np.zeros(3, np.uint64)
    words = np.stack(K.reference_philox(np, blocks, zero, zero, zero, key), axis=1).reshape(-1)
    np.testing.assert_array_equal(g.uniform([10]).numpy(),
                                  (words[:10] >> np.uint64(8)).astype(np.float32) / 2 ** 24)
    nxt = np.stack(K.reference_philox(np, np.array([3], np.uint64), np.zeros(1, np.uint64),
                                      np.zeros(1, np.uint64), np.zeros(1, np.uint64), key),
                   axis=1).reshape(-1)
    want = ((nxt[0] >> np.uint64(5)).astype(np.float64) * 2.0 ** 26
            + (nxt[1] >> np.uint64(6)).astype(np.float64)) / 2.0 ** 53
    np.testing.assert_array_equal(g.uniform([1], dtype=gt.float64).numpy(), [want])


def test_generator_places_arrays_on_its_device():
    g = gt.random.Generator.from_seed(1, device="cpu")
    t = g.normal([2, 2])
    assert t.device == gt.get_device("cpu")
    with gt.device("cpu"):
        assert gt.random.Generator.from_seed(1).device == gt.get_device("cpu")
    np.testing.assert_array_equal(gt.random.Generator.from_seed(1, device="cpu").normal([2, 2])
                                  .numpy(), t.numpy())


def test_erfc_without_scipy_is_accurate_in_the_tail():
    # the NumPy-only fallback: erfc must not be computed as 1 - erf (it would cancel)
    import math
    from gradtape.backend.base import _erf_numpy
    x = np.array([-3.0, 0.5, 4.0, 6.0, 9.0])
    want = np.array([math.erfc(v) for v in x])
    np.testing.assert_allclose(_erf_numpy(x, complement=True), want, rtol=1e-15)
    np.testing.assert_allclose(_erf_numpy(x), [math.erf(v) for v in x], rtol=1e-15)
    assert _erf_numpy(np.float32(6.0).reshape(()), complement=True).dtype == np.float32


def test_gelu_gradient_in_the_negative_tail():
    # d/dx [x Phi(x)] = Phi(x) + x phi(x), both tiny for x << 0: 1 + erf would cancel to 0
    import math
    xs = np.array([-6.0, -9.0, -12.0])
    x = gt.constant(xs.astype(np.float32))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.nn.gelu(x, approximate=False)
    g = tape.gradient(y, x).numpy()
    want = [0.5 * math.erfc(-v / math.sqrt(2)) + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi)
            for v in xs]
    np.testing.assert_allclose(g, want, rtol=1e-4)
    assert (g < 0).all()


def test_avg_pool_window_sizes_stay_on_the_device(device):
    """The 1 / window-size factors are made on the device (once per geometry): a forward and
    backward pass neither uploads nor waits, and matches the CPU."""
    x0 = np.random.default_rng(4).standard_normal((2, 5, 6, 3)).astype(np.float32)
    x = gt.constant(x0)
    if not device.host_visible:
        device.reset_counters()
        before = device.transfer_count, device.sync_count
    for padding in ("SAME", "VALID", "SAME"):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.nn.avg_pool2d(x, 3, 2, padding)
        g = tape.gradient(y, x)
    if not device.host_visible:
        assert (device.transfer_count, device.sync_count) == before
    with gt.device("cpu"):
        xc = gt.constant(x0)
        with gt.GradientTape() as tape:
            tape.watch(xc)
            yc = gt.nn.avg_pool2d(xc, 3, 2, "SAME")
        gc = tape.gradient(yc, xc)
    np.testing.assert_allclose(y.numpy(), yc.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), gc.numpy(), rtol=1e-6)


def test_truncated_normal_and_its_initializers_do_not_wait_for_the_device(device):
    """truncated_normal (and GlorotNormal, HeNormal, VarianceScaling, TruncatedNormal, which
    draw with it) run on a device without reading it on the host, and stay within two
    standard deviations with the truncated normal's spread."""
    from gradtape import initializers
    if not device.host_visible:
        device.reset_counters()
    t = gt.random.Generator.from_seed(6).truncated_normal([20000], mean=1.0, stddev=0.5)
    inits = [initializers.GlorotNormal(seed=1), initializers.HeNormal(seed=2),
             initializers.VarianceScaling(scale=2.0, seed=3),
             initializers.TruncatedNormal(stddev=0.1, seed=4)]
    weights = [init((200, 100)) for init in inits]
    if not device.host_visible:
        assert device.sync_count == 0
    assert t.device == device and all(w.device == device for w in weights)
    v = t.numpy()
    assert v.dtype == np.float32 and v.min() >= 0.0 and v.max() <= 2.0
    assert abs(v.std() - 0.5 * 0.8796) < 0.02
    # the variance-scaling ones correct the truncation's spread; TruncatedNormal does not
    spreads = [math.sqrt(2 / 300), math.sqrt(2 / 200), math.sqrt(2 / 200), 0.1 * 0.8796]
    limits = [2 * s / 0.87962566103423978 for s in spreads[:3]] + [0.2]
    for w, spread, limit in zip(weights, spreads, limits):
        w = w.numpy()
        assert np.abs(w).max() <= limit + 1e-6
        assert w.std() == pytest.approx(spread, rel=0.05)
    # one seed, one draw (the host keeps its exact redraw loop)
    np.testing.assert_array_equal(
        gt.random.Generator.from_seed(6).truncated_normal([20000], mean=1.0, stddev=0.5)
        .numpy(), v)


@pytest.mark.parametrize("lo, hi, dtype", [(-5, 3, gt.int32), (-2 ** 40, 2 ** 40, gt.int64),
                                           (7, 8, gt.int64), (-128, 127, gt.int8)])
def test_device_generator_integers_cover_the_range_with_negative_bounds(lo, hi, dtype):
    dev = gt.get_device("strict:0")
    g = gt.random.Generator.from_seed(5, device=dev)
    got = g.uniform([4000], minval=lo, maxval=hi, dtype=dtype).numpy()
    assert got.dtype == gt.as_dtype(dtype).as_numpy_dtype
    assert got.min() >= lo and got.max() < hi
    if hi - lo <= 8:
        assert set(got.tolist()) == set(range(lo, hi))
    else:
        assert got.min() < lo + (hi - lo) // 8 and got.max() > hi - (hi - lo) // 8


def test_device_generator_reset_from_seed_restarts_its_stream_in_place():
    dev = gt.get_device("strict:0")
    g = gt.random.Generator.from_seed(9, device=dev)
    state = g._rng.state
    first = g.normal([5]).numpy()
    assert not np.array_equal(g.normal([5]).numpy(), first)
    g.reset_from_seed(9)
    assert g._rng.state is state                 # the buffer a captured step recorded
    np.testing.assert_array_equal(g.normal([5]).numpy(), first)


@pytest.mark.parametrize("activation, keeps_input", [
    ("relu", False), ("tanh", False), ("sigmoid", False), ("linear", False),
    ("gelu", True), ("silu", True)])
def test_fused_bias_act_keeps_its_output_on_the_tape_where_that_suffices(activation,
                                                                         keeps_input):
    """relu, tanh, sigmoid and linear differentiate through their output (which the next
    layer keeps anyway), so the pre-activation is freed once the forward drops it."""
    import weakref
    from gradtape.ops import fused
    rng = np.random.default_rng(0)
    x = gt.constant(rng.standard_normal((4, 5)).astype(np.float32))
    b = gt.Variable(rng.standard_normal(5).astype(np.float32))
    with gt.GradientTape() as tape:
        tape.watch(x)
        z = x * 2.0
        alive = weakref.ref(z)
        y = fused.fused_bias_act(z, b, activation)
        del z
        loss = gt.reduce_sum(y * y)
    assert (alive() is not None) == keeps_input
    gx, gb = tape.gradient(loss, [x, b])
    from gradtape.backend import kernels as K
    zz = x.numpy() * 2.0
    yy = K.reference_bias_act_forward(np, zz, b.numpy(), activation)
    dz = K.reference_bias_act_backward(np, 2 * yy, zz, b.numpy(), activation)
    np.testing.assert_allclose(gx.numpy(), 2 * dz, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), dz.sum(0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device_name", ["cpu", "strict:0"])
@pytest.mark.parametrize("lo, hi", [(0, 300), (-200, 5), (0, 2 ** 40)])
def test_integer_uniform_outside_its_dtype_names_the_range(device_name, lo, hi):
    g = gt.random.Generator.from_seed(1, device=device_name)
    dtype = gt.int32 if hi == 2 ** 40 else gt.int8
    with pytest.raises(ValueError, match=r"uniform: \[minval, maxval\) = \[.*\) does not fit "
                                         r"int(8|32) \("):
        g.uniform([3], minval=lo, maxval=hi, dtype=dtype)
    got = g.uniform([200], minval=-128, maxval=128, dtype=gt.int8).numpy()
    assert got.min() >= -128 and got.max() <= 127 and got.dtype == np.int8


# --- more of tf.nn: in_top_k, losses, moments, rearrangements, LRN ---------------------------
# Reference numbers below were computed with TensorFlow 2.21 (CPU).

def test_in_top_k_follows_tensorflow(device):
    v = np.array([[1.0, 5.0, 3.0, 5.0, 0.0], [0.0, 2.0, 7.0, 7.0, 7.0]], np.float32)
    p = gt.constant(v)
    for targets, k, want in [([1, 3], 1, [True, True]), ([3, 4], 2, [True, True]),
                             ([2, 0], 1, [False, False]), ([2, 0], 5, [True, True]),
                             ([5, -1], 5, [False, False]), ([1, 2], 0, [False, False])]:
        got = gt.nn.in_top_k(gt.constant(np.array(targets, np.int32)), p, k)
        assert got.dtype == gt.bool and got.device == device.name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{targets} k={k}")
    # ties count for the target: fewer than k classes strictly above it
    ties = gt.constant(np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 3.0]], np.float32))
    np.testing.assert_array_equal(gt.nn.in_top_k([2, 0], ties, 1).numpy(), [True, False])
    # a NaN or an infinity anywhere in the row: False (TF's "cannot say")
    odd = gt.constant(np.array([[np.nan, 1.0], [np.inf, 1.0], [1.0, 2.0]], np.float32))
    np.testing.assert_array_equal(gt.nn.in_top_k(gt.constant(np.array([0, 1, 1], np.int64)),
                                                 odd, 2).numpy(), [False, False, True])


def test_in_top_k_errors():
    p = gt.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"in_top_k: predictions must be 2-dimensional"):
        gt.nn.in_top_k([0], gt.constant(np.zeros(3, np.float32)), 1)
    with pytest.raises(ValueError, match=r"in_top_k: targets must be a vector of the batch "
                                         r"size 2, got shape \(3,\)"):
        gt.nn.in_top_k([0, 1, 2], p, 1)
    with pytest.raises(TypeError, match=r"in_top_k: targets must be int32 or int64"):
        gt.nn.in_top_k(gt.constant([0.0, 1.0]), p, 1)
    with pytest.raises(TypeError, match=r"in_top_k: k must be an int"):
        gt.nn.in_top_k([0, 1], p, 1.5)


def test_weighted_cross_entropy_matches_tensorflow():
    z, x = gt.constant([0.0, 1.0, 0.3]), gt.constant([-2.0, 0.5, 3.0])
    np.testing.assert_allclose(gt.nn.weighted_cross_entropy_with_logits(z, x, 2.5).numpy(),
                               [0.12692809, 1.1851925, 2.1704516], rtol=1e-6)
    y = gt.nn.weighted_cross_entropy_with_logits(gt.reshape(z, [1, 3]), gt.reshape(x, [1, 3]),
                                                 gt.constant([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(y.numpy(), [[0.12692809, 0.94815397, 2.1777396]], rtol=1e-6)
    # pos_weight 1: the plain sigmoid cross-entropy
    np.testing.assert_allclose(gt.nn.weighted_cross_entropy_with_logits(z, x, 1.0).numpy(),
                               gt.nn.sigmoid_cross_entropy_with_logits(z, x).numpy(), rtol=1e-6)
    # gradients, at the kink x = 0 too (TF's: 0 there)
    zt, xt = gt.constant([0.0, 1.0, 0.3]), gt.constant([-2.0, 0.0, 3.0])
    with gt.GradientTape() as tape:
        tape.watch([zt, xt])
        s = gt.reduce_sum(gt.nn.weighted_cross_entropy_with_logits(zt, xt, 2.5))
    gz, gx = tape.gradient(s, [zt, xt])
    np.testing.assert_allclose(gz.numpy(), [5.190392, 1.0397208, -2.927119], rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), [0.11920291, 0.0, 0.6312325], rtol=1e-6)
    with pytest.raises(ValueError, match=r"weighted_cross_entropy_with_logits: logits and "
                                         r"labels must have the same shape"):
        gt.nn.weighted_cross_entropy_with_logits(gt.constant([0.0, 1.0]), x, 2.5)


def test_log_poisson_loss_matches_tensorflow():
    z = gt.constant([0.0, 0.5, 1.0, 2.0, 5.0])
    c = gt.constant([0.1, -0.3, 0.2, 1.0, 2.0])
    np.testing.assert_allclose(gt.nn.log_poisson_loss(z, c).numpy(),
                               [1.105171, 0.8908182, 1.0214027, 0.7182817, -2.6109438],
                               rtol=1e-6)
    with gt.GradientTape() as tape:
        tape.watch([z, c])
        full = gt.nn.log_poisson_loss(z, c, compute_full_loss=True)
        s = gt.reduce_sum(full)
    np.testing.assert_allclose(full.numpy(),
                               [1.105171, 0.8908182, 1.0214027, 1.3700882, 2.1599035], rtol=1e-6)
    gz, gc = tape.gradient(s, [z, c])
    # as TF: NaN for the target 0 (0 * log'(0) through the unselected branch)
    assert np.isnan(gz.numpy()[0])
    np.testing.assert_allclose(gz.numpy()[1:], [0.3, -0.2, -0.05685282, -0.29056206],
                               rtol=1e-5)
    np.testing.assert_allclose(gc.numpy(), [1.105171, 0.2408182, 0.22140276, 0.7182817,
                                            2.3890562], rtol=1e-6)


def test_crelu():
    x = gt.constant([[1.0, -2.0], [0.0, 3.0]])
    np.testing.assert_array_equal(gt.nn.crelu(x).numpy(), [[1, 0, 0, 2], [0, 3, 0, 0]])
    np.testing.assert_array_equal(gt.nn.crelu(x, axis=0).numpy(),
                                  [[1, 0], [0, 3], [0, 2], [0, 0]])
    g = grad(lambda t: gt.nn.crelu(t) * gt.constant([1.0, 2.0, 3.0, 4.0]),
             np.array([0.0, 1.0], np.float32))
    np.testing.assert_array_equal(g.numpy(), [0.0, 2.0])       # TF: relu'(0) = 0


def test_weighted_and_normalized_moments_match_tensorflow():
    x = gt.constant([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]])
    f = gt.constant([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]])
    mean, var = gt.nn.weighted_moments(x, [1], f)
    np.testing.assert_allclose(mean.numpy(), [2.3333333, 4.5], rtol=1e-6)
    np.testing.assert_allclose(var.numpy(), [0.8888889, 0.75], rtol=1e-6)
    mean, var = gt.nn.weighted_moments(x, [0, 1], f, keepdims=True)
    assert mean.shape == (1, 1)
    np.testing.assert_allclose([mean.numpy()[0, 0], var.numpy()[0, 0]], [3.5714285, 1.9591836],
                               rtol=1e-6)
    mean, var = gt.nn.weighted_moments(x, 1, gt.constant([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
    np.testing.assert_allclose(mean.numpy(), [0.0, 6.0])        # zero weight: 0, not NaN
    np.testing.assert_allclose(var.numpy(), [0.0, 2.6666667], rtol=1e-6)
    mean, var = gt.nn.weighted_moments(x, [0], gt.constant([1.0, 2.0, 3.0]))   # broadcast
    np.testing.assert_allclose(mean.numpy(), [2.5, 4.0, 5.5])
    np.testing.assert_allclose(var.numpy(), [2.25, 4.0, 6.25])
    mean, var = gt.nn.normalize_moments(gt.constant(4.0), gt.constant([2.0, 4.0]),
                                        gt.constant([3.0, 8.0]), None)
    np.testing.assert_allclose([mean.numpy(), var.numpy()], [[0.5, 1.0], [0.5, 1.0]])
    mean, var = gt.nn.normalize_moments(gt.constant(4.0), gt.constant([2.0, 4.0]),
                                        gt.constant([3.0, 8.0]), gt.constant([1.0, -1.0]))
    np.testing.assert_allclose([mean.numpy(), var.numpy()], [[1.5, 0.0], [0.5, 1.0]])
    mean, var = gt.nn.normalize_moments(4.0, [2.0, 4.0], [3.0, 8.0], 0.5)
    np.testing.assert_allclose([mean.numpy(), var.numpy()], [[1.0, 1.5], [0.5, 1.0]])


def test_depth_to_space_and_back(device):
    x = gt.reshape(gt.range(16.0), (1, 1, 2, 8))
    y = gt.nn.depth_to_space(x, 2)
    np.testing.assert_array_equal(y.numpy()[0, :, :, 0], [[0, 2, 8, 10], [4, 6, 12, 14]])
    np.testing.assert_array_equal(y.numpy()[0, 0, :, 1], [1, 3, 9, 11])
    s = gt.nn.space_to_depth(gt.reshape(gt.range(32.0), (1, 4, 4, 2)), 2)
    np.testing.assert_array_equal(s.numpy()[0, 0], [[0, 1, 2, 3, 8, 9, 10, 11],
                                                    [4, 5, 6, 7, 12, 13, 14, 15]])
    r = np.random.default_rng(0).standard_normal((2, 3, 2, 18))
    back = gt.nn.space_to_depth(gt.nn.depth_to_space(gt.constant(r), 3), 3)
    np.testing.assert_array_equal(back.numpy(), r)
    nchw = gt.nn.depth_to_space(gt.constant(r.transpose(0, 3, 1, 2)), 3, data_format="NCHW")
    np.testing.assert_array_equal(nchw.numpy().transpose(0, 2, 3, 1),
                                  gt.nn.depth_to_space(gt.constant(r), 3).numpy())
    ints = gt.nn.depth_to_space(gt.reshape(gt.range(16), (1, 1, 2, 8)), 2)
    assert ints.dtype == gt.int32
    with pytest.raises(ValueError, match=r"depth_to_space: block_size must be at least 2"):
        gt.nn.depth_to_space(x, 1)
    with pytest.raises(ValueError, match=r"depth_to_space: input depth 6 must be divisible by "
                                         r"block_size \*\* 2 = 4"):
        gt.nn.depth_to_space(gt.zeros((1, 1, 2, 6)), 2)
    with pytest.raises(ValueError, match=r"space_to_depth: image height 3 and width 3 must be "
                                         r"divisible by block_size 2"):
        gt.nn.space_to_depth(gt.zeros((1, 3, 3, 2)), 2)


LRN_X = np.random.RandomState(0).randn(1, 2, 2, 7).astype(np.float32)


def _ref_lrn(x, r, bias, alpha, beta):
    c = x.shape[-1]
    out = np.empty_like(x, dtype=np.float64)
    for i in range(c):
        s = np.sum(x[..., max(0, i - r):i + r + 1].astype(np.float64) ** 2, axis=-1)
        out[..., i] = x[..., i] / (bias + alpha * s) ** beta
    return out


def test_local_response_normalization_matches_tensorflow(device):
    x = gt.constant(LRN_X)
    y = gt.nn.local_response_normalization(x, depth_radius=2, bias=0.5, alpha=0.3, beta=0.75)
    np.testing.assert_allclose(y.numpy()[0, 0, 0], [1.1500565, 0.1643525, 0.3265265, 0.8443067,
                                                    0.6732609, -0.3731432, 0.5439178],
                               rtol=2e-6)
    np.testing.assert_allclose(y.numpy(), _ref_lrn(LRN_X, 2, 0.5, 0.3, 0.75), rtol=2e-6)
    np.testing.assert_allclose(gt.nn.lrn(x).numpy(), _ref_lrn(LRN_X, 5, 1.0, 1.0, 0.5),
                               rtol=2e-6)
    np.testing.assert_allclose(gt.nn.lrn(x).numpy()[0, 0, 0, :3],
                               [0.4601885, 0.1013233, 0.24782504], rtol=2e-6)
    np.testing.assert_allclose(gt.nn.lrn(x, 0).numpy(), _ref_lrn(LRN_X, 0, 1.0, 1.0, 0.5),
                               rtol=2e-6)
    with gt.GradientTape() as tape:
        tape.watch(x)
        s = gt.reduce_sum(gt.nn.lrn(x, 2, 0.5, 0.3, 0.75) * gt.range(7, dtype=gt.float32))
    np.testing.assert_allclose(tape.gradient(s, x).numpy()[0, 0, 0],
                               [-0.15978387, 0.25035593, -0.02931464, 0.05664575, -0.7143723,
                                2.9710605, 2.6972241], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"local_response_normalization: input must be "
                                         r"4-dimensional"):
        gt.nn.lrn(gt.zeros((1, 1, 3)))


# --- more convolutions: atrous, 1-D transpose, N-D dispatch, 3-D ------------------------------

def test_atrous_conv2d_and_conv1d_transpose_match_tensorflow():
    img = gt.reshape(gt.range(25.0), (1, 5, 5, 1))
    ones = gt.ones((2, 2, 1, 1))
    np.testing.assert_array_equal(gt.nn.atrous_conv2d(img, ones, 2, "VALID").numpy()[0, :, :, 0],
                                  [[24, 28, 32], [44, 48, 52], [64, 68, 72]])
    np.testing.assert_array_equal(gt.nn.atrous_conv2d(img, ones, 2, "SAME").numpy()[0, :, 0, 0],
                                  [6, 12, 22, 32, 16])
    with pytest.raises(ValueError, match=r"atrous_conv2d: rate must be positive, got 0"):
        gt.nn.atrous_conv2d(img, ones, 0, "SAME")
    g = gt.reshape(gt.range(6.0), (1, 3, 2))
    w = gt.reshape(gt.range(12.0), (3, 2, 2))
    np.testing.assert_array_equal(
        gt.nn.conv1d_transpose(g, w, [1, 6, 2], 2, "SAME").numpy()[0],
        [[1, 3], [5, 7], [12, 24], [23, 33], [48, 76], [41, 59]])
    np.testing.assert_array_equal(
        gt.nn.conv1d_transpose(g, w, [1, 7, 2], [1, 2, 1], "VALID").numpy()[0, -1], [77, 95])
    np.testing.assert_array_equal(
        gt.nn.conv1d_transpose(g, w, [1, 3, 2], 1, "SAME", dilations=2).numpy()[0],
        [[10, 30], [23, 33], [50, 70]])
    ncw = gt.nn.conv1d_transpose(gt.transpose(g, [0, 2, 1]), w, [1, 2, 6], 2, "SAME",
                                 data_format="NCW")
    np.testing.assert_array_equal(ncw.numpy()[0].T,
                                  gt.nn.conv1d_transpose(g, w, [1, 6, 2], 2, "SAME").numpy()[0])


def test_convolution_dispatches_on_the_filter_rank():
    rng = np.random.default_rng(12)
    x1 = gt.constant(rng.standard_normal((2, 7, 2)))
    w1 = gt.constant(rng.standard_normal((3, 2, 3)))
    np.testing.assert_allclose(gt.nn.convolution(x1, w1, 2, "SAME").numpy(),
                               gt.nn.conv1d(x1, w1, 2, "SAME").numpy(), rtol=1e-12)
    x2, w2 = gt.constant(rng.standard_normal((2, 6, 5, 2))), gt.constant(
        rng.standard_normal((2, 3, 2, 3)))
    np.testing.assert_allclose(gt.nn.convolution(x2, w2, [1, 2, 1, 1], "VALID").numpy(),
                               gt.nn.conv2d(x2, w2, [2, 1], "VALID").numpy(), rtol=1e-12)
    np.testing.assert_allclose(gt.nn.convolution(x2, w2, padding="SAME", dilations=2).numpy(),
                               gt.nn.conv2d(x2, w2, 1, "SAME", dilations=2).numpy(), rtol=1e-12)
    x3, w3 = gt.constant(rng.standard_normal((1, 4, 5, 3, 2))), gt.constant(
        rng.standard_normal((2, 2, 2, 2, 3)))
    np.testing.assert_allclose(gt.nn.convolution(x3, w3, [2, 1, 1], "SAME").numpy(),
                               gt.nn.conv3d(x3, w3, [1, 2, 1, 1, 1], "SAME").numpy(), rtol=1e-12)
    # extra leading batch axes, and channels first
    lead = gt.constant(rng.standard_normal((2, 3, 6, 5, 2)))
    y = gt.nn.convolution(lead, w2, padding="SAME")
    assert y.shape == (2, 3, 6, 5, 3)
    np.testing.assert_allclose(y.numpy()[1], gt.nn.conv2d(lead[1], w2, 1, "SAME").numpy(),
                               rtol=1e-12)
    ncw = gt.nn.convolution(gt.transpose(x1, [0, 2, 1]), w1, padding="SAME", data_format="NCW")
    np.testing.assert_allclose(ncw.numpy(), gt.nn.conv1d(x1, w1, 1, "SAME").numpy()
                               .transpose(0, 2, 1), rtol=1e-12)
    with pytest.raises(ValueError, match=r"convolution: strides > 1 not supported in "
                                         r"conjunction with dilations > 1"):
        gt.nn.convolution(x2, w2, 2, "SAME", dilations=2)
    with pytest.raises(TypeError, match=r"convolution: padding must be 'SAME' or 'VALID'"):
        gt.nn.convolution(x2, w2, padding=[[0, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"convolution: filters must have rank 3, 4 or 5"):
        gt.nn.convolution(x2, gt.zeros((2, 2), dtype=gt.float64))


def _ref_conv3d(x, w, strides, dilations, pads):
    n, d, h, wd, c = x.shape
    kd, kh, kw, _, o = w.shape
    xp = np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),))
    outs = [(size + sum(p) - (k - 1) * dl - 1) // s + 1 for size, k, s, dl, p in
            zip((d, h, wd), (kd, kh, kw), strides, dilations, pads)]
    out = np.zeros([n] + outs + [o])
    for a in range(outs[0]):
        for b in range(outs[1]):
            for e in range(outs[2]):
                for i in range(kd):
                    for j in range(kh):
                        for m in range(kw):
                            out[:, a, b, e] += xp[:, a * strides[0] + i * dilations[0],
                                                  b * strides[1] + j * dilations[1],
                                                  e * strides[2] + m * dilations[2]] @ w[i, j, m]
    return out


@pytest.mark.parametrize("xs,ws,strides,padding,dil", [
    ((2, 5, 4, 6, 2), (3, 2, 3, 2, 3), (1, 1, 1), "SAME", (1, 1, 1)),
    ((1, 6, 5, 5, 3), (2, 3, 2, 3, 2), (2, 1, 3), "SAME", (1, 1, 1)),
    ((2, 7, 4, 5, 2), (3, 2, 2, 2, 2), (2, 2, 1), "VALID", (1, 1, 1)),
    ((1, 6, 5, 6, 1), (2, 2, 3, 1, 2), (1, 1, 1), "SAME", (2, 1, 2)),
    ((1, 3, 3, 3, 2), (1, 1, 1, 2, 4), (1, 1, 1), "VALID", (1, 1, 1)),
])
def test_conv3d_and_its_transpose_against_naive_loops(xs, ws, strides, padding, dil):
    rng = np.random.default_rng(13)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    pads = [_same_pads(size, k, s, d) if padding == "SAME" else (0, 0)
            for size, k, s, d in zip(xs[1:4], ws[:3], strides, dil)]
    ref = _ref_conv3d(x, w, strides, dil, pads)
    five = lambda v: [1, *v, 1]   # noqa: E731
    y = gt.nn.conv3d(gt.constant(x), gt.constant(w), five(strides), padding, dilations=five(dil))
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-10)
    # NCDHW gives the same numbers
    ycf = gt.nn.conv3d(gt.constant(x.transpose(0, 4, 1, 2, 3)), gt.constant(w),
                       [1, 1, *strides], padding, data_format="NCDHW", dilations=[1, 1, *dil])
    np.testing.assert_allclose(ycf.numpy().transpose(0, 2, 3, 4, 1), ref, rtol=1e-10, atol=1e-10)
    # conv3d_transpose is the input gradient; the filter gradient is <x-patches, r>
    r = rng.standard_normal(ref.shape)
    xt, wt = gt.constant(x), gt.constant(w)
    with gt.GradientTape() as tape:
        tape.watch([xt, wt])
        s = gt.reduce_sum(gt.nn.conv3d(xt, wt, five(strides), padding, dilations=five(dil)) *
                          gt.constant(r))
    gx, gw = tape.gradient(s, [xt, wt])
    eye_x = np.eye(x.size).reshape((x.size,) + xs)
    num_gx = np.array([np.sum(_ref_conv3d(e, w, strides, dil, pads) * r) for e in eye_x])
    np.testing.assert_allclose(gx.numpy().ravel(), num_gx, rtol=1e-9, atol=1e-9)
    eye_w = np.eye(w.size).reshape((w.size,) + ws)
    num_gw = np.array([np.sum(_ref_conv3d(x, e, strides, dil, pads) * r) for e in eye_w])
    np.testing.assert_allclose(gw.numpy().ravel(), num_gw, rtol=1e-9, atol=1e-9)
    yt = gt.nn.conv3d_transpose(gt.constant(r), wt, xs, list(strides), padding, dilations=dil)
    np.testing.assert_allclose(yt.numpy(), gx.numpy(), rtol=1e-10, atol=1e-12)


def test_conv3d_errors_follow_tensorflow():
    x = gt.zeros((1, 3, 3, 3, 2))
    w = gt.zeros((2, 2, 2, 2, 1))
    with pytest.raises(TypeError, match=r"conv3d: strides must be a list of 5 ints, got 1"):
        gt.nn.conv3d(x, w, 1, "SAME")
    with pytest.raises(ValueError, match=r"conv3d: strides must be a list of 5 ints"):
        gt.nn.conv3d(x, w, [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"must be 1 in the batch and channel dimensions"):
        gt.nn.conv3d(x, w, [2, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"conv3d: padding must be 'SAME' or 'VALID'"):
        gt.nn.conv3d(x, w, [1] * 5, [[0, 0], [1, 1], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"conv3d: input has 2 channels but filters"):
        gt.nn.conv3d(x, gt.zeros((2, 2, 2, 3, 1)), [1] * 5, "SAME")
    with pytest.raises(ValueError, match=r"conv3d: data_format must be 'NDHWC' or 'NCDHW'"):
        gt.nn.conv3d(x, w, [1] * 5, "SAME", data_format="NHWC")
    with pytest.raises(ValueError, match=r"does not fit"):
        gt.nn.conv3d(x, gt.zeros((4, 2, 2, 2, 1)), [1] * 5, "VALID")
    with pytest.raises(ValueError, match=r"conv3d_transpose: output_shape \(1, 5, 4, 4, 3\) "
                                         r"with strides \(2, 2, 2\)"):
        gt.nn.conv3d_transpose(gt.zeros((1, 2, 2, 2, 2)), gt.zeros((2, 2, 2, 3, 2)),
                               [1, 5, 4, 4, 3], 2, "SAME")


def _ref_pool3d(x, k, s, padding, kind):
    n, d, h, w, c = x.shape
    pads = [_same_pads(size, kk, ss, 1) if padding == "SAME" else (0, 0)
            for size, kk, ss in zip((d, h, w), k, s)]
    outs = [(size + sum(p) - kk) // ss + 1 for size, kk, ss, p in zip((d, h, w), k, s, pads)]
    out = np.zeros([n] + outs + [c])
    for a in range(outs[0]):
        for b in range(outs[1]):
            for e in range(outs[2]):
                o = [q * ss - p[0] for q, ss, p in zip((a, b, e), s, pads)]
                win = x[:, max(o[0], 0):o[0] + k[0], max(o[1], 0):o[1] + k[1],
                        max(o[2], 0):o[2] + k[2]]
                out[:, a, b, e] = win.max(axis=(1, 2, 3)) if kind == "max" else \
                    win.mean(axis=(1, 2, 3))
    return out


@pytest.mark.parametrize("k,s,padding", [((2, 2, 2), (2, 2, 2), "VALID"),
                                         ((3, 2, 2), (2, 1, 2), "SAME"),
                                         ((1, 3, 3), (1, 2, 2), "SAME"),
                                         ((2, 1, 1), (1, 1, 1), "VALID"),
                                         ((3, 3, 3), (1, 1, 1), "SAME")])
def test_pool3d_against_naive_loops(device, k, s, padding):
    x = np.random.default_rng(14).standard_normal((2, 5, 6, 7, 3))
    for kind, fn in (("max", gt.nn.max_pool3d), ("avg", gt.nn.avg_pool3d)):
        y = fn(gt.constant(x), list(k), list(s), padding)
        np.testing.assert_allclose(y.numpy(), _ref_pool3d(x, k, s, padding, kind), rtol=1e-12,
                                   err_msg=kind)
        ycf = fn(gt.constant(x.transpose(0, 4, 1, 2, 3)), [1, 1, *k], [1, 1, *s], padding,
                 data_format="NCDHW")
        np.testing.assert_allclose(ycf.numpy().transpose(0, 2, 3, 4, 1),
                                   _ref_pool3d(x, k, s, padding, kind), rtol=1e-12)


def test_pool3d_numbers_gradients_and_errors():
    x = gt.reshape(gt.range(27.0), (1, 3, 3, 3, 1))
    # TF: SAME windows average only their input elements
    np.testing.assert_array_equal(gt.nn.avg_pool3d(x, 2, 2, "SAME").numpy().ravel(),
                                  [6.5, 8.0, 11.0, 12.5, 20.0, 21.5, 24.5, 26.0])
    g = grad(lambda t: gt.nn.avg_pool3d(t, 2, 2, "SAME"), np.ones((1, 3, 3, 3, 1)))
    np.testing.assert_allclose(g.numpy()[0, 2, :, :, 0], [[0.25, 0.25, 0.5], [0.25, 0.25, 0.5],
                                                          [0.5, 0.5, 1.0]])
    # ties: the whole gradient goes to the window's first maximum in (depth, row, column)
    # order, as 2-D max pooling does. (TF's CPU MaxPool3DGrad gives every tied maximum the
    # whole gradient instead: all ones here.)
    g = grad(lambda t: gt.nn.max_pool3d(t, 2, 2, "VALID"), np.ones((1, 2, 2, 2, 1)))
    assert g.numpy().sum() == 1.0 and g.numpy()[0, 0, 0, 0, 0] == 1.0
    t = np.zeros((1, 2, 2, 2, 1))
    t[0, 1, 0, 0, 0] = t[0, 0, 1, 1, 0] = 1.0
    g = grad(lambda v: gt.nn.max_pool3d(v, 2, 2, "VALID"), t).numpy()
    assert g.sum() == 1.0 and g[0, 0, 1, 1, 0] == 1.0
    assert gt.nn.max_pool3d(gt.zeros((1, 4, 4, 4, 1)), [2, 1, 2], [1, 2, 2], "VALID").shape == \
        (1, 3, 2, 2, 1)
    with pytest.raises(ValueError, match=r"max_pool3d: input must have rank 5"):
        gt.nn.max_pool3d(gt.zeros((1, 4, 4, 1)), 2, 2, "VALID")
    with pytest.raises(ValueError, match=r"avg_pool3d: padding must be 'SAME' or 'VALID'"):
        gt.nn.avg_pool3d(x, 2, 2, [[0, 0], [1, 1], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"ksize must be an int or a list of 1, 3 or 5 ints"):
        gt.nn.max_pool3d(x, [2, 2], 2, "VALID")
    with pytest.raises(ValueError, match=r"does not fit"):
        gt.nn.max_pool3d(x, 4, 1, "VALID")


def test_max_pool_explicit_padding_matches_tensorflow(device):
    x = gt.reshape(gt.range(16.0), (1, 4, 4, 1)) - 8.0
    y = gt.nn.max_pool2d(x, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]])
    np.testing.assert_array_equal(y.numpy()[0, :, :, 0],
                                  [[-8, -6, -5], [0, 2, 3], [4, 6, 7]])
    y = gt.nn.max_pool2d(x, 3, 1, [[0, 0], [0, 2], [1, 0], [0, 0]])
    np.testing.assert_array_equal(y.numpy()[0, :, :, 0],
                                  [[1, 2, 3], [5, 6, 7], [5, 6, 7], [5, 6, 7]])
    assert gt.nn.max_pool(x, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]]).shape == (1, 3, 3, 1)
    y1 = gt.nn.max_pool1d(gt.constant([[[1.0], [-2.0], [3.0], [-4.0]]]), 2, 2,
                          [[0, 0], [1, 1], [0, 0]])
    np.testing.assert_array_equal(y1.numpy().ravel(), [1.0, 3.0, -4.0])
    nchw = gt.nn.max_pool2d(gt.transpose(x, [0, 3, 1, 2]), 2, 2, [[0, 0], [0, 0], [1, 1], [1, 1]],
                            data_format="NCHW")
    np.testing.assert_array_equal(nchw.numpy()[0, 0], [[-8, -6, -5], [0, 2, 3], [4, 6, 7]])
    # the gradient goes to the window's first maximum; padding never takes it
    g = grad(lambda t: gt.nn.max_pool2d(t, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]]),
             -np.ones((1, 4, 4, 1)))
    assert g.numpy().sum() == 9.0
    with pytest.raises(ValueError, match=r"max_pool2d: explicit padding \[\[0, 0\], \[2, 2\], "
                                         r"\[1, 1\], \[0, 0\]\] must be non-negative and "
                                         r"smaller than the window size"):
        gt.nn.max_pool2d(x, 2, 2, [[0, 0], [2, 2], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"one \[before, after\] pair per input axis \(4\)"):
        gt.nn.max_pool2d(x, 2, 2, [[1, 1], [1, 1]])
    with pytest.raises(ValueError, match=r"must be 0 in the batch and channel dimensions"):
        gt.nn.max_pool2d(x, 2, 2, [[1, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"avg_pool2d: padding must be 'SAME' or 'VALID'"):
        gt.nn.avg_pool2d(x, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]])
