"""Functional autodiff: seed 002's gradients_function family, the JAX-style transforms
(grad, value_and_grad, jacobian, hessian, jvp, vjp, hvp) and custom_gradient, against
closed forms and central finite differences, plus every bad-input error."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt


def numeric_grad(f, x, eps=1e-6):
    """Central differences of scalar ``f`` (NumPy float64 in, float out)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def numeric_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    y0 = np.asarray(f(x))
    j = np.zeros(y0.shape + x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        j[(Ellipsis,) + i] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return j


def c64(v):
    return gt.constant(np.asarray(v, dtype=np.float64))


# --- seed 002: gradients_function and friends --------------------------------------------

w1 = gt.Variable(2.0)
w2 = gt.Variable(3.0)


def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


def weighted_sum_with_weights(w1, x1, w2, x2):
    return w1 * x1 + w2 * x2


def test_gradients_function_all_arguments():
    x1_grad, x2_grad = gt.gradients_function(weighted_sum)(5., 7.)
    assert float(x1_grad) == 2.0 and float(x2_grad) == 3.0


def test_gradients_function_params_by_name_and_index():
    by_name = gt.gradients_function(weighted_sum_with_weights, params=["w1", "w2"])
    g1, g2 = by_name(w1, 5., w2, 7.)
    assert (float(g1), float(g2)) == (5.0, 7.0)
    by_index = gt.gradients_function(weighted_sum_with_weights, params=[1, 3])
    gx1, gx2 = by_index(w1, 5., w2, 7.)
    assert (float(gx1), float(gx2)) == (2.0, 3.0)
    grads = gt.gradients_function(weighted_sum_with_weights, params=[0, 2])(2., 5., 3., 7.)
    assert [float(g) for g in grads] == [5.0, 7.0]


def test_gradients_function_dy_and_unconnected():
    def f(x, y):
        return [x * 2.0, x * 3.0]
    gx, gy = gt.gradients_function(f)(1.0, 4.0)
    assert float(gx) == 5.0 and gy is None
    gx, gy = gt.gradients_function(f)(1.0, 4.0, dy=[gt.constant(1.0), gt.constant(10.0)])
    assert float(gx) == 32.0


def test_value_and_gradients_function():
    value, grads = gt.value_and_gradients_function(weighted_sum)(5., 7.)
    assert float(value) == 31.0
    assert [float(g) for g in grads] == [2.0, 3.0]


def test_gradients_function_against_finite_differences():
    def f(a, b):
        return gt.reduce_sum(gt.sin(a) * gt.exp(b * a))
    av = np.array([0.3, -0.7, 1.1])
    bv = np.array([0.5, 0.2, -0.4])
    ga, gb = gt.gradients_function(f)(c64(av), c64(bv))
    np.testing.assert_allclose(
        ga.numpy(), numeric_grad(lambda a: np.sum(np.sin(a) * np.exp(bv * a)), av), rtol=1e-7)
    np.testing.assert_allclose(
        gb.numpy(), numeric_grad(lambda b: np.sum(np.sin(av) * np.exp(b * av)), bv), rtol=1e-7)


def test_implicit_gradients_come_in_construction_order():
    a = gt.Variable(1.0)
    b = gt.Variable(2.0)

    def f(x):
        return b * x + a * a          # b is read first; TF orders by construction
    pairs = gt.implicit_gradients(f)(3.0)
    assert pairs[0][1] is a and pairs[1][1] is b
    assert [float(g) for g, _ in pairs] == [2.0, 3.0]


def test_implicit_gradients_leaves_out_untrainable_and_unconnected():
    a = gt.Variable(1.0, trainable=False)
    b = gt.Variable(2.0)
    c = gt.Variable(5.0)

    def f(x):
        _ = c * 1.0       # read, but the output does not depend on it
        return a * x + b * x
    pairs = gt.implicit_gradients(f)(3.0)
    assert len(pairs) == 1 and pairs[0][1] is b and float(pairs[0][0]) == 3.0
    value, pairs = gt.implicit_value_and_gradients(f)(x=4.0)
    assert float(value) == 12.0 and float(pairs[0][0]) == 4.0


def test_implicit_value_and_gradients_seed_numbers():
    s, [(g1, v1), (g2, v2)] = gt.implicit_value_and_gradients(weighted_sum)(5., 7.)
    assert float(s) == 31.0 and v1 is w1 and v2 is w2
    assert (float(g1), float(g2)) == (5.0, 7.0)


def test_seed_api_errors():
    with pytest.raises(ValueError, match=r"weighted_sum_with_weights.*'w3'.*w1, x1, w2, x2"):
        gt.gradients_function(weighted_sum_with_weights, params=["w1", "w3"])
    with pytest.raises(ValueError, match="all strings or all integers"):
        gt.gradients_function(weighted_sum_with_weights, params=["w1", 2])
    fg = gt.gradients_function(weighted_sum_with_weights, params=[5])
    with pytest.raises(ValueError, match=r"gradients_function\(weighted_sum_with_weights\).*4 "
                                         r"positional"):
        fg(1., 2., 3., 4.)
    with pytest.raises(TypeError, match=r"gradients_function\(weighted_sum\): argument 'x1' "
                                        r"\(position 0\) has dtype int32.*5.0"):
        gt.gradients_function(weighted_sum)(5, 7.)
    with pytest.raises(ValueError, match="keyword arguments"):
        gt.gradients_function(weighted_sum)(5., x2=7.)
    with pytest.raises(ValueError, match="returns None.*nothing"):
        def nothing(x):
            x * 2.0
        gt.gradients_function(nothing)(1.0)
    with pytest.raises(ValueError, match=r"implicit_gradients\(f\): no trainable Variables"):
        def f(x):
            return x * 2.0
        gt.implicit_gradients(f)(gt.constant(1.0))


# --- grad / value_and_grad ----------------------------------------------------------------

def test_grad_closed_form_and_finite_differences():
    def f(x):
        return gt.reduce_sum(gt.tanh(x) * x)
    xv = np.array([0.1, -0.5, 2.0])
    g = gt.grad(f)(c64(xv)).numpy()
    np.testing.assert_allclose(g, np.tanh(xv) + xv * (1 - np.tanh(xv) ** 2), rtol=1e-12)
    np.testing.assert_allclose(g, numeric_grad(lambda x: np.sum(np.tanh(x) * x), xv), rtol=1e-7)


def test_grad_argnums_and_return_conventions():
    def f(x, y, z):
        return x * y * y + z
    g = gt.grad(f)(2.0, 3.0, 1.0)
    assert isinstance(g, gt.Tensor) and float(g) == 9.0
    gs = gt.grad(f, argnums=(0, 1))(2.0, 3.0, 1.0)
    assert isinstance(gs, tuple) and [float(v) for v in gs] == [9.0, 12.0]
    assert float(gt.grad(f, argnums=-1)(2.0, 3.0, 1.0)) == 1.0
    (gy,) = gt.grad(f, argnums=(1,))(2.0, 3.0, 1.0)
    assert float(gy) == 12.0


def test_grad_nested_arguments():
    def loss(params, x):
        return gt.reduce_sum((params["w"] * x + params["b"][0]) ** 2.0)
    params = {"w": c64([1.0, 2.0]), "b": [c64(0.5)]}
    x = c64([3.0, -1.0])
    g = gt.grad(loss)(params, x)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    r = np.array([1.0 * 3.0 + 0.5, 2.0 * -1.0 + 0.5])
    np.testing.assert_allclose(g["w"].numpy(), 2 * r * np.array([3.0, -1.0]))
    np.testing.assert_allclose(g["b"][0].numpy(), np.sum(2 * r))


def test_grad_has_aux_value_and_grad():
    def f(x):
        y = x * x
        return gt.reduce_sum(y), {"y": y}
    x = c64([1.0, 2.0])
    g, aux = gt.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(aux["y"].numpy(), [1.0, 4.0])
    (value, aux), g = gt.value_and_grad(f, has_aux=True)(x)
    assert float(value) == 5.0
    value, g = gt.value_and_grad(lambda x: gt.reduce_sum(x ** 3.0))(x)
    assert float(value) == 9.0
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])


def test_grad_repeated_argument_positions_are_independent():
    x = c64(3.0)
    gx, gy = gt.grad(lambda a, b: a * b * b, argnums=(0, 1))(x, x)
    assert (float(gx), float(gy)) == (9.0, 18.0)


def test_grad_of_variables_numpy_arrays_and_unconnected():
    v = gt.Variable([1.0, 2.0])
    np.testing.assert_allclose(gt.grad(lambda v: gt.reduce_sum(v * v))(v).numpy(), [2.0, 4.0])
    g = gt.grad(lambda a: gt.reduce_sum(a * 2.0))(np.array([1.0, 2.0]))
    assert g.dtype == gt.float64
    z = gt.grad(lambda a, b: c64(2.0) * a, argnums=1)(1.0, c64([1.0, 2.0]))
    np.testing.assert_allclose(z.numpy(), [0.0, 0.0])


def test_higher_order_grad():
    f = gt.sin
    d3 = gt.grad(gt.grad(gt.grad(f)))
    assert float(d3(c64(0.7))) == pytest.approx(-np.cos(0.7), rel=1e-12)


def test_grad_errors():
    def vec(x):
        return x * 2.0
    with pytest.raises(TypeError, match=r"grad\(vec\).*shape \(2,\).*gt.jacobian"):
        gt.grad(vec)(c64([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"grad\(vec\): argument 'x' \(position 0\) has dtype "
                                        r"int32"):
        gt.grad(vec)(3)
    with pytest.raises(ValueError, match=r"grad\(vec\): argnums=1.*vec\(x\)"):
        gt.grad(vec, argnums=1)
    with pytest.raises(TypeError, match="argnums must be an int"):
        gt.grad(vec, argnums="x")

    def star(*xs):
        return xs[0] * 1.0
    with pytest.raises(ValueError, match=r"grad\(star\): argnums=3.*called with 1"):
        gt.grad(star, argnums=3)(1.0)
    with pytest.raises(TypeError, match="has_aux=True.*pair"):
        gt.grad(lambda x: x * 1.0, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="must return a scalar tensor"):
        gt.grad(lambda x: 3.0)(1.0)
    with pytest.raises(TypeError, match="floating-point scalar"):
        gt.grad(lambda x: gt.cast(x, gt.int32))(1.0)
    with pytest.raises(TypeError, match=r"grad\(<lambda>\): argument 'p' \(position 0\), leaf 1"):
        gt.grad(lambda p: p[0] * 1.0)([1.0, "a"])


# --- jacobian and hessian -----------------------------------------------------------------

def test_jacobian_closed_form_and_finite_differences():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3))
    xv = rng.standard_normal(3)

    def f(x):
        return gt.tanh(gt.linalg.matvec(c64(w), x))
    j = gt.jacobian(f)(c64(xv)).numpy()
    np.testing.assert_allclose(j, (1 - np.tanh(w @ xv) ** 2)[:, None] * w, rtol=1e-12)
    np.testing.assert_allclose(j, numeric_jacobian(lambda x: np.tanh(w @ x), xv), rtol=1e-6)


def test_jacobian_structures():
    def f(x, y):
        return {"p": x * y, "s": gt.reduce_sum(x)}
    x = c64([1.0, 2.0])
    y = c64([3.0, 4.0])
    j = gt.jacobian(f, argnums=(0, 1))(x, y)
    assert set(j) == {"p", "s"} and isinstance(j["p"], tuple)
    np.testing.assert_allclose(j["p"][0].numpy(), np.diag([3.0, 4.0]))
    np.testing.assert_allclose(j["p"][1].numpy(), np.diag([1.0, 2.0]))
    np.testing.assert_allclose(j["s"][0].numpy(), [1.0, 1.0])
    np.testing.assert_allclose(j["s"][1].numpy(), [0.0, 0.0])
    jm = gt.jacobian(lambda m: m * 2.0)(c64(np.ones((2, 3))))
    assert jm.shape == (2, 3, 2, 3)
    j, aux = gt.jacobian(lambda x: (x * x, "aux"), has_aux=True)(x)
    assert aux == "aux"
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0]))


def test_hessian_of_quadratic_form_is_the_matrix():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((4, 4))
    a = m + m.T
    xv = rng.standard_normal(4)

    def quad(x):
        return 0.5 * gt.reduce_sum(x * gt.linalg.matvec(c64(a), x))
    np.testing.assert_allclose(gt.hessian(quad)(c64(xv)).numpy(), a, rtol=1e-12)

    def general(x):       # x^T M x: Hessian M + M^T
        return gt.reduce_sum(x * gt.linalg.matvec(c64(m), x))
    np.testing.assert_allclose(gt.hessian(general)(c64(xv)).numpy(), m + m.T, rtol=1e-12)


def test_hessian_blocks_and_finite_differences():
    def f(x, y):
        return gt.reduce_sum(gt.sin(x) * y * y)
    xv = np.array([0.2, 1.3])
    yv = np.array([0.7, -0.4])
    h = gt.hessian(f, argnums=(0, 1))(c64(xv), c64(yv))
    np.testing.assert_allclose(h[0][0].numpy(), np.diag(-np.sin(xv) * yv * yv), rtol=1e-12)
    np.testing.assert_allclose(h[0][1].numpy(), np.diag(2 * np.cos(xv) * yv), rtol=1e-12)
    np.testing.assert_allclose(h[1][0].numpy(), h[0][1].numpy().T, rtol=1e-12)
    np.testing.assert_allclose(h[1][1].numpy(), np.diag(2 * np.sin(xv)), rtol=1e-12)

    def g_np(x):
        return np.cos(x) * yv * yv
    np.testing.assert_allclose(h[0][0].numpy(), numeric_jacobian(g_np, xv), rtol=1e-6)
    with pytest.raises(TypeError, match=r"hessian\(<lambda>\).*scalar"):
        gt.hessian(lambda x: x * x)(c64([1.0, 2.0]))


# --- jvp, vjp, hvp ------------------------------------------------------------------------

def _nonlinear(x):
    return gt.exp(x) * gt.reduce_sum(x * x) + gt.sin(x[::-1])


def test_jvp_equals_jacobian_times_tangent():
    rng = np.random.default_rng(2)
    xv = rng.standard_normal(5)
    tv = rng.standard_normal(5)
    y, yt = gt.jvp(_nonlinear, (c64(xv),), (c64(tv),))
    j = gt.jacobian(_nonlinear)(c64(xv)).numpy()
    np.testing.assert_allclose(yt.numpy(), j @ tv, rtol=1e-10)
    np.testing.assert_allclose(y.numpy(), _nonlinear(c64(xv)).numpy())
    jn = numeric_jacobian(lambda x: np.exp(x) * np.sum(x * x) + np.sin(x[::-1]), xv)
    np.testing.assert_allclose(yt.numpy(), jn @ tv, rtol=1e-6)


def test_jvp_structures_and_aux():
    def f(p, s):
        return {"a": p["w"] * s, "b": [gt.reduce_sum(p["w"])]}
    p = {"w": c64([1.0, 2.0])}
    t = {"w": c64([1.0, -1.0])}
    out, out_t = gt.jvp(f, [p, c64(3.0)], [t, 0.5])
    np.testing.assert_allclose(out_t["a"].numpy(), [1.0 * 3 + 1.0 * 0.5, -3.0 + 2.0 * 0.5])
    np.testing.assert_allclose(out_t["b"][0].numpy(), 0.0)
    y, yt, aux = gt.jvp(lambda x: (x * x, 7), (c64(2.0),), (c64(1.0),), has_aux=True)
    assert float(yt) == 4.0 and aux == 7


def test_vjp_equals_transposed_jacobian_product():
    rng = np.random.default_rng(3)
    xv = rng.standard_normal(5)
    ct = rng.standard_normal(5)
    y, vjp_fn = gt.vjp(_nonlinear, c64(xv))
    (g,) = vjp_fn(c64(ct))
    j = gt.jacobian(_nonlinear)(c64(xv)).numpy()
    np.testing.assert_allclose(g.numpy(), ct @ j, rtol=1e-10)
    (g2,) = vjp_fn(c64(ct * 2))      # callable many times
    np.testing.assert_allclose(g2.numpy(), 2 * ct @ j, rtol=1e-10)


def test_vjp_several_primals_and_aux():
    out, fn, aux = gt.vjp(lambda a, b: ([a * b, a + b], "aux"), 2.0, 3.0, has_aux=True)
    ga, gb = fn([1.0, 10.0])
    assert (float(ga), float(gb)) == (13.0, 12.0) and aux == "aux"
    with pytest.raises(ValueError, match=r"vjp\(<lambda>\).*structure"):
        fn([1.0])
    with pytest.raises(ValueError, match=r"cotangent for output 0 has shape \(2,\)"):
        fn([np.ones(2), 1.0])


def test_hvp_equals_hessian_times_vector():
    rng = np.random.default_rng(4)
    xv = rng.standard_normal(5)
    vv = rng.standard_normal(5)

    def f(x):
        return gt.reduce_sum(_nonlinear(x) * x)
    (hv,) = gt.hvp(f, (c64(xv),), (c64(vv),))
    h = gt.hessian(f)(c64(xv)).numpy()
    np.testing.assert_allclose(hv.numpy(), h @ vv, rtol=1e-10)

    def f_np_grad(x):
        def fx(z):
            return np.sum((np.exp(z) * np.sum(z * z) + np.sin(z[::-1])) * z)
        return numeric_grad(fx, x, eps=1e-5)
    hn = (f_np_grad(xv + 1e-4 * vv) - f_np_grad(xv - 1e-4 * vv)) / 2e-4
    np.testing.assert_allclose(hv.numpy(), hn, rtol=1e-4, atol=1e-4)


def test_hvp_quadratic_and_several_arguments():
    rng = np.random.default_rng(5)
    m = rng.standard_normal((3, 3))
    a = m + m.T
    xv = rng.standard_normal(3)
    vv = rng.standard_normal(3)
    (hv,) = gt.hvp(lambda x: 0.5 * gt.reduce_sum(x * gt.linalg.matvec(c64(a), x)),
                   (c64(xv),), (c64(vv),))
    np.testing.assert_allclose(hv.numpy(), a @ vv, rtol=1e-12)

    def f(x, y):
        return gt.reduce_sum(x * x * y)
    x, y = c64([1.0, 2.0]), c64([3.0, 4.0])
    tx, ty = c64([1.0, 0.0]), c64([0.0, 1.0])
    hx, hy = gt.hvp(f, [x, y], [tx, ty])
    # H = [[diag(2y), diag(2x)], [diag(2x), 0]]
    np.testing.assert_allclose(hx.numpy(), [6.0, 4.0])
    np.testing.assert_allclose(hy.numpy(), [2.0, 0.0])
    out = gt.hvp(lambda p: gt.reduce_sum(p["a"] ** 3.0), ({"a": x},), ({"a": tx},))
    np.testing.assert_allclose(out[0]["a"].numpy(), [6.0, 0.0])


def test_hvp_does_not_form_the_hessian(monkeypatch):
    from gradtape import jacobians
    called = []
    monkeypatch.setattr(jacobians, "tape_jacobian", lambda *a, **k: called.append(1))
    gt.hvp(lambda x: gt.reduce_sum(x ** 4.0), (c64([1.0, 2.0]),), (c64([1.0, 1.0]),))
    assert not called


def test_forward_transform_errors():
    x = c64([1.0, 2.0])

    def f(x):
        return gt.reduce_sum(x * x)
    with pytest.raises(TypeError, match=r"jvp\(f\): primals must be a tuple or list"):
        gt.jvp(f, x, x)
    with pytest.raises(ValueError, match=r"jvp\(f\): got 1 primal\(s\) but 2 tangent\(s\)"):
        gt.jvp(f, (x,), (x, x))
    with pytest.raises(ValueError, match=r"jvp\(f\): the tangent for argument 0 has shape "
                                         r"\(3,\), but the primal has shape \(2,\)"):
        gt.jvp(f, (x,), (c64([1.0, 2.0, 3.0]),))
    with pytest.raises(TypeError, match=r"hvp\(f\): the tangent for argument 0 has dtype "
                                        r"float32, but the primal has dtype float64"):
        gt.hvp(f, (x,), (gt.constant([1.0, 2.0]),))
    with pytest.raises(ValueError, match=r"hvp\(f\): the tangent for argument 0 does not have "
                                         "the structure"):
        gt.hvp(f, ([x, x],), ([x],))
    with pytest.raises(TypeError, match=r"jvp\(f\): argument 0 has dtype int32"):
        gt.jvp(f, (gt.constant([1, 2]),), (gt.constant([1, 2]),))
    with pytest.raises(TypeError, match=r"hvp\(<lambda>\).*scalar.*shape \(2,\)"):
        gt.hvp(lambda x: x * x, (x,), (x,))


# --- custom_gradient ----------------------------------------------------------------------

@gt.custom_gradient
def log1pexp(x):
    e = gt.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return gt.math.log1p(e), grad


def test_custom_gradient_is_used():
    x = gt.constant(100.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == 1.0       # the plain rule gives NaN here
    assert float(gt.grad(log1pexp)(0.0)) == 0.5


def test_second_order_through_custom_gradient():
    xv = np.array([-1.0, 0.3, 2.0])
    d2 = gt.grad(lambda x: gt.reduce_sum(gt.grad(lambda z: gt.reduce_sum(log1pexp(z)))(x)))
    s = 1 / (1 + np.exp(-xv))
    np.testing.assert_allclose(d2(c64(xv)).numpy(), s * (1 - s), rtol=1e-12)
    h = gt.hessian(lambda x: gt.reduce_sum(log1pexp(x)))(c64(xv)).numpy()
    np.testing.assert_allclose(h, np.diag(s * (1 - s)), rtol=1e-12)
    (hv,) = gt.hvp(lambda x: gt.reduce_sum(log1pexp(x)), (c64(xv),), (c64(np.ones(3)),))
    np.testing.assert_allclose(hv.numpy(), s * (1 - s), rtol=1e-12)


def test_second_order_uses_values_computed_inside_the_function():
    @gt.custom_gradient
    def cube(x):
        sq = x * x

        def grad(dy):
            return dy * 3.0 * sq
        return sq * x, grad
    xv = np.array([0.5, -2.0])
    np.testing.assert_allclose(gt.hessian(lambda x: gt.reduce_sum(cube(x)))(c64(xv)).numpy(),
                               np.diag(6 * xv), rtol=1e-12)


def test_forward_mode_through_custom_gradient():
    xv = np.array([-1.0, 0.5])
    _, yt = gt.jvp(log1pexp, (c64(xv),), (c64([1.0, 2.0]),))
    np.testing.assert_allclose(yt.numpy(), 1 / (1 + np.exp(-xv)) * [1.0, 2.0], rtol=1e-12)


def test_custom_gradient_several_inputs_and_outputs():
    @gt.custom_gradient
    def both(x, y):
        def grad(da, db):
            return da * 10.0 + db, da * 100.0
        return [x * y, x + y], grad
    x, y = c64(2.0), c64(3.0)
    with gt.GradientTape() as tape:
        tape.watch([x, y])
        a, b = both(x, y)
        total = a + b * 2.0
    gx, gy = tape.gradient(total, [x, y])
    assert (float(gx), float(gy)) == (12.0, 100.0)
    assert float(a) == 6.0 and float(b) == 5.0
    j = gt.jacobian(lambda v: both(v, c64(1.0))[0])(c64([1.0, 2.0])).numpy()
    np.testing.assert_allclose(j, 10 * np.eye(2))


def test_custom_gradient_with_variables():
    v = gt.Variable(3.0)

    @gt.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            assert variables == [v] or variables[0] is v
            return dy * v, [dy * x * 100.0]
        return x * v, grad
    x = gt.constant(2.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    gx, gv = tape.gradient(y, [x, v])
    assert (float(gx), float(gv)) == (3.0, 200.0)
    pairs = gt.implicit_gradients(scaled)(gt.constant(1.0))
    assert pairs[0][1] is v and float(pairs[0][0]) == 100.0


def test_custom_gradient_hands_variables_over_in_creation_order():
    a, b = gt.Variable(10.0), gt.Variable(20.0)

    @gt.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            assert variables[0] is a and variables[1] is b
            return dy, [dy * 1.0, dy * 2.0]      # (d/da, d/db) in the order given
        return x * b * a, grad
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert [float(g) for g in tape.gradient(y, [x, a, b])] == [1.0, 1.0, 2.0]


def test_custom_gradient_on_a_method_binds_self_first():
    class Scale:
        def __init__(self):
            self.w = gt.Variable(2.0)

        @gt.custom_gradient
        def call(self, x):
            def grad(dy, variables=None):
                return dy * self.w, [dy * x * 10.0]
            return x * self.w, grad
    m = Scale()
    x = gt.constant(3.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = m.call(x)
    assert float(y) == 6.0
    assert [float(g) for g in tape.gradient(y, [x, m.w])] == [2.0, 30.0]
    assert Scale.call.__name__ == "call" and m.call.__name__ == "call"


def test_custom_gradient_errors():
    v = gt.Variable(3.0)

    @gt.custom_gradient
    def no_variables_kw(x):
        return x * v, lambda dy: dy * v
    with pytest.raises(TypeError, match="no_variables_kw must accept keyword argument "
                                        "'variables'"):
        no_variables_kw(gt.constant(1.0))

    @gt.custom_gradient
    def two_grads(x):
        return x * 2.0, lambda dy: (dy, dy)
    with pytest.raises(ValueError, match="custom_gradient function two_grads expected to "
                                         "return 1 gradients, but returned 2"):
        gt.grad(two_grads)(1.0)

    @gt.custom_gradient
    def bad_shape(x):
        return gt.reduce_sum(x), lambda dy: dy
    with pytest.raises(ValueError, match=r"bad_shape: the gradient for input 0 has shape \(\), "
                                         r"but the input 0 has shape \(2,\)"):
        gt.grad(bad_shape)(c64([1.0, 2.0]))

    @gt.custom_gradient
    def bad_dtype(x):
        return x * 1.0, lambda dy: gt.cast(dy, gt.float32)
    with pytest.raises(TypeError, match="bad_dtype: the gradient for input 0 has dtype "
                                        "float32"):
        gt.grad(bad_dtype)(c64(1.0))

    @gt.custom_gradient
    def wrong_variable_count(x):
        def grad(dy, variables=None):
            return dy, []
        return x * v, grad
    with pytest.raises(ValueError, match="wrong_variable_count: grad_fn must return a gradient "
                                         "for each of the 1 variable"):
        gt.grad(wrong_variable_count)(1.0)

    @gt.custom_gradient
    def not_a_pair(x):
        return x * 2.0
    with pytest.raises(TypeError, match="not_a_pair must return a pair"):
        not_a_pair(gt.constant(1.0))
