"""Complex tensors: TensorFlow's gradients (for a real loss of z = x + iy, dL/dx + i dL/dy),
to second order and in forward mode. The reference values are TensorFlow's."""
import numpy as np
import pytest

import gradtape as gt

C = gt.complex
Z = np.array([1 + 2j], dtype=np.complex64)

# (name, loss of z) -> TensorFlow's gradient at z = 1 + 2i
CASES = [
    ("abs_squared", lambda z: gt.abs(z) ** 2, [2 + 4j]),
    ("real_of_square", lambda z: gt.math.real(z * z), [2 - 4j]),
    ("real_of_exp", lambda z: gt.math.real(gt.exp(z)), [-1.1312044 - 2.4717267j]),
    ("imag_of_quotient", lambda z: gt.math.imag(gt.sqrt(z) / z), [0.14893064 + 0.01342907j]),
    ("angle", lambda z: gt.math.angle(z * gt.math.conj(z) + z), [-0.15000004 - 0.05j]),
    ("abs_of_trig", lambda z: gt.abs(gt.sin(z) - gt.cos(z) * gt.tanh(z)),
     [-2.2416892 + 5.819721j]),
    ("matmul", lambda z: gt.reduce_sum(gt.math.real(gt.matmul(
        gt.reshape(z, (1, 1)), gt.reshape(gt.math.conj(z) * z, (1, 1))))), [7 + 4j]),
    ("cast_round_trip", lambda z: gt.math.real(
        gt.cast(gt.cast(z, gt.float32), gt.complex64) * z), [2 + 0j]),
]


@pytest.mark.parametrize("name,loss,expected", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_tensorflow(device, name, loss, expected):
    z = gt.constant(Z)
    with gt.GradientTape() as tape:
        tape.watch(z)
        y = loss(z)
    g = tape.gradient(y, z)
    assert g.dtype == gt.complex64
    np.testing.assert_allclose(g.numpy(), expected, rtol=2e-5, atol=1e-6)


def test_real_sources_through_complex_values():
    x = gt.constant([0.5, -1.5])
    y = gt.constant([2.0, 0.25])
    with gt.GradientTape() as tape:
        tape.watch([x, y])
        w = C(x, y)
        loss = gt.reduce_sum(gt.abs(gt.exp(w) * w))
    gx, gy = tape.gradient(loss, [x, y])
    np.testing.assert_allclose(gx.numpy(), [3.7987995, 0.11921771], rtol=1e-5)
    np.testing.assert_allclose(gy.numpy(), [1.5994945, 0.03668237], rtol=1e-5)


def test_second_order_matches_tensorflow():
    x = gt.constant([0.3, -0.7], gt.float64)
    y = gt.constant([1.1, 0.4], gt.float64)
    with gt.GradientTape() as outer:
        outer.watch([x, y])
        with gt.GradientTape() as inner:
            inner.watch([x, y])
            z = C(x, y)
            loss = gt.reduce_sum(gt.math.real(gt.exp(z) * gt.math.conj(z))
                                 + gt.abs(gt.sin(z)) ** 2)
        gx, gy = inner.gradient(loss, [x, y])
        s = gt.reduce_sum(gx * gy)
    np.testing.assert_allclose(gx.numpy(), [2.68392492, -0.77088235], rtol=1e-8)
    np.testing.assert_allclose(gy.numpy(), [5.97272784, 1.39980515], rtol=1e-8)
    hx, hy = outer.gradient(s, [x, y])
    np.testing.assert_allclose(hx.numpy(), [27.01299785, 1.17105758], rtol=1e-8)
    np.testing.assert_allclose(hy.numpy(), [25.62906358, -2.50878908], rtol=1e-8)

    z = C(x, y)
    with gt.GradientTape() as outer:
        outer.watch(z)
        with gt.GradientTape() as inner:
            inner.watch(z)
            loss = gt.reduce_sum(gt.abs(z * z + z) ** 2)
        g = inner.gradient(loss, z)
        s = gt.reduce_sum(gt.math.real(g * gt.math.conj(g)))
    np.testing.assert_allclose(g.numpy(), [5.12 + 9.24j, 0.04 + 0.72j], rtol=1e-8)
    np.testing.assert_allclose(outer.gradient(s, z).numpy(),
                               [248.064 + 406.208j, -0.912 + 4.384j], rtol=1e-8)


def test_forward_mode_matches_tensorflow():
    z = C(gt.constant([0.3, -0.7], gt.float64), gt.constant([1.1, 0.4], gt.float64))
    tangent = C(gt.constant([1.0, 0.5], gt.float64), gt.constant([-0.2, 2.0], gt.float64))
    with gt.autodiff.ForwardAccumulator(z, tangent) as acc:
        y = gt.abs(gt.exp(z) * gt.math.conj(z)) + gt.math.angle(z) + gt.math.real(
            gt.tan(z) / gt.math.sinh(z))
    np.testing.assert_allclose(acc.jvp(y).numpy(), [0.6641547, -2.7670828], rtol=1e-6)
    x = gt.constant([0.3, -0.7], gt.float64)
    with gt.autodiff.ForwardAccumulator(x, gt.constant([1.0, 0.5], gt.float64)) as acc:
        w = gt.math.imag(gt.math.reciprocal(C(x, x * x + 1)) * gt.math.cosh(C(x, x)))
    np.testing.assert_allclose(acc.jvp(w).numpy(), [0.99762882, -0.21765503], rtol=1e-7)


def test_vectorised_jacobian_of_complex_values_matches_the_row_loop():
    rng = np.random.default_rng(0)
    x = gt.constant(rng.standard_normal((3, 4)))
    y = gt.constant(rng.standard_normal((3, 4)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out = gt.math.real(gt.matmul(C(x, y), gt.transpose(C(y, x))))
    fast = tape.jacobian(out, x).numpy()
    loop = tape.jacobian(out, x, experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(fast, loop, rtol=1e-12, atol=1e-12)


def test_forward_values_and_dtypes(device):
    z = gt.constant(np.array([1 + 2j, -0.5 + 0.25j], dtype=np.complex64))
    np.testing.assert_allclose((z / z).numpy(), [1, 1])
    assert (z / z).dtype == gt.complex64
    np.testing.assert_allclose(gt.math.real(z).numpy(), [1, -0.5])
    np.testing.assert_allclose(gt.math.imag(z).numpy(), [2, 0.25])
    np.testing.assert_allclose(gt.math.conj(z).numpy(), [1 - 2j, -0.5 - 0.25j])
    np.testing.assert_allclose(gt.math.angle(z).numpy(), np.angle(Z.tolist() + [-0.5 + 0.25j]),
                               rtol=1e-6)
    np.testing.assert_allclose(gt.exp(z).numpy(), np.exp(z.numpy()), rtol=1e-6)
    np.testing.assert_allclose((z * 0.5 + 1).numpy(), z.numpy() * 0.5 + 1)
    np.testing.assert_allclose((z * 2j).numpy(), z.numpy() * 2j)
    real = gt.constant([-1.0, 2.0])
    np.testing.assert_allclose(gt.math.angle(real).numpy(), [np.pi, 0], rtol=1e-7)
    np.testing.assert_allclose(gt.math.real(real).numpy(), [-1, 2])
    np.testing.assert_allclose(gt.math.imag(real).numpy(), [0, 0])
    w = C(gt.constant([1.0, 2.0], gt.float64), 3.0)
    assert w.dtype == gt.complex128
    np.testing.assert_allclose(w.numpy(), [1 + 3j, 2 + 3j])
    np.testing.assert_allclose(gt.cast(z, gt.float32).numpy(), [1, -0.5])
    assert gt.complex64.is_complex and not gt.float32.is_complex
    assert gt.complex128.real_dtype == gt.float64


def test_bad_input_names_the_op():
    z = gt.constant(Z)
    with pytest.raises(TypeError,
                       match="complex: operands have different dtypes float32 and float64"):
        C(gt.constant([1.0]), gt.constant([1.0], gt.float64))
    with pytest.raises(TypeError, match="complex: real and imag must be float32 or float64"):
        C(gt.constant([1]), gt.constant([2]))
    with pytest.raises(TypeError, match=r"multiply: cannot convert 2j to a tensor of dtype "
                                        r"float32"):
        gt.constant([1.0]) * 2j
    with pytest.raises(TypeError, match="multiply: operands have different dtypes"):
        z * gt.constant([1.0])
    with pytest.raises(TypeError, match="erf: expected a floating-point tensor, got "
                                        "complex64"):
        gt.math.erf(z)


def test_adjoints_conjugate_as_tensorflow():
    """adjoint, matrix_transpose(conjugate=True), transpose(conjugate=True) and matmul's
    adjoint_a/adjoint_b conjugate complex values (TensorFlow's loss 4.65 and gradients)."""
    x = gt.constant(np.arange(6.0).reshape(2, 3) * 0.3 + 0.1, gt.float64)
    y = gt.constant(np.full((2, 3), 0.7), gt.float64)
    for f in (gt.linalg.adjoint, lambda z: gt.linalg.matrix_transpose(z, conjugate=True),
              lambda z: gt.transpose(z, conjugate=True)):
        with gt.GradientTape() as tape:
            tape.watch([x, y])
            r = f(C(x, y))
            loss = gt.reduce_sum(gt.math.real(r * gt.math.conj(r))) + gt.reduce_sum(
                gt.math.imag(r))
        gx, gy = tape.gradient(loss, [x, y])
        np.testing.assert_allclose(float(loss), 4.65)
        np.testing.assert_allclose(gx.numpy(), 2 * x.numpy())
        np.testing.assert_allclose(gy.numpy(), np.full((2, 3), 0.4))
    z = C(x, y)
    np.testing.assert_allclose(gt.matmul(z, z, adjoint_b=True).numpy(),
                               z.numpy() @ z.numpy().conj().T)
    np.testing.assert_allclose(gt.matmul(z, z, adjoint_a=True).numpy(),
                               z.numpy().conj().T @ z.numpy())
    v = C(y[:, 0], x[:, 0])
    np.testing.assert_allclose(gt.linalg.matvec(z, v, adjoint_a=True).numpy(),
                               z.numpy().conj().T @ v.numpy())


def test_inverse_trig_and_sigmoid_of_complex_values_match_tensorflow():
    """Values and gradients of |f(z)|^2 at z = 0.3+0.4i and -0.5+1.2i (TensorFlow's)."""
    want = {
        "asin": ([0.28063 + 0.40511j, -0.31569 + 1.0553j],
                 [0.6179 + 0.71001j, -0.71831 + 1.19479j]),
        "acos": ([1.29017 - 0.40511j, 1.88648 - 1.0553j],
                 [-2.36391 + 1.04031j, -2.64422 + 0.70173j]),
        "atan": ([0.33737 + 0.37909j, -1.08739 + 0.71629j],
                 [0.48298 + 0.93988j, 1.44455 + 1.5836j]),
        "sigmoid": ([0.57743 + 0.09902j, 0.32513 + 0.31277j],
                    [0.29008 + 0.06797j, 0.27472 + 0.12732j]),
    }
    for name, (values, grads) in want.items():
        z = gt.constant(np.array([0.3 + 0.4j, -0.5 + 1.2j], dtype=np.complex64))
        with gt.GradientTape() as tape:
            tape.watch(z)
            y = getattr(gt.math, name)(z)
            loss = gt.reduce_sum(gt.math.real(y * gt.math.conj(y)))
        np.testing.assert_allclose(y.numpy(), values, atol=2e-5)
        np.testing.assert_allclose(tape.gradient(loss, z).numpy(), grads, atol=2e-5)


def _complex_system():
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))).astype(np.complex128)
    b = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex128)
    return a, b


@pytest.mark.parametrize("name,fn,value,grad_a", [
    ("inv", lambda a, b: gt.linalg.inv(a), [0.0136 - 0.05304j, -0.21256 + 0.46481j],
     [2.18882 + 2.10623j, -0.66537 + 5.10761j, 3.46508 - 8.72151j]),
    ("inv_adjoint", lambda a, b: gt.linalg.inv(a, adjoint=True),
     [0.0136 + 0.05304j, 0.57449 - 0.48221j],
     [1.97819 + 1.67761j, -2.06708 + 5.91587j, 3.13169 - 8.25659j]),
    ("solve", lambda a, b: gt.linalg.solve(a, b), [0.24667 - 0.85625j, 0.43804 - 0.74531j],
     [-5.88429 + 14.91208j, -25.06522 + 48.81883j, 14.44196 - 46.78178j]),
    ("solve_adjoint", lambda a, b: gt.linalg.solve(a, b, adjoint=True),
     [-0.30855 + 1.1147j, -0.59912 + 0.85464j],
     [13.46825 + 7.39205j, 1.30585 + 17.98207j, 6.73765 - 31.94109j]),
    # (TensorFlow's complex determinant gradient lacks a conjugate: these are the central
    # differences' dL/dx + i dL/dy, which gradtape's rule gives)
    ("det", lambda a, b: gt.reshape(gt.linalg.det(a), (1, 1)), [1.10968 - 0.21155j],
     [-0.02701 + 0.13924j, 1.87981 - 0.49121j, -1.39337 + 2.26626j]),
])
def test_complex_linear_algebra(name, fn, value, grad_a):
    """Values and gradients of sum(|y|^2) + sum(imag(y)) (TensorFlow's, but for det)."""
    a0, b0 = _complex_system()
    a, b = gt.constant(a0), gt.constant(b0)
    with gt.GradientTape() as tape:
        tape.watch([a, b])
        y = fn(a, b)
        loss = gt.reduce_sum(gt.math.real(y * gt.math.conj(y))) + gt.reduce_sum(gt.math.imag(y))
    ga = tape.gradient(loss, a)
    np.testing.assert_allclose(y.numpy().ravel()[:len(value)], value, atol=1e-5)
    np.testing.assert_allclose(ga.numpy().ravel()[:3], grad_a, atol=1e-5)


def test_jacobians_with_complex_values_match_tensorflow():
    """tape.jacobian/batch_jacobian of complex targets and sources: TensorFlow's (pfor)
    values, vectorised or row by row."""
    z = C(gt.constant([0.3, -0.7], gt.float64), gt.constant([1.1, 0.4], gt.float64))
    x = gt.constant([0.3, -0.7], gt.float64)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([z, x])
        y = gt.exp(z) * z
        w = C(x * x, x)
        r = gt.math.real(gt.sin(z))
    for pfor in (True, False):
        np.testing.assert_allclose(tape.jacobian(y, z, experimental_use_pfor=pfor).numpy(),
                                   np.diag([-0.52733 - 2.23743j, 0.05986 - 0.24097j]),
                                   atol=1e-5)
        jw = tape.jacobian(w, x, experimental_use_pfor=pfor)
        assert jw.dtype == gt.float64
        np.testing.assert_allclose(jw.numpy(), np.diag([0.6, -1.4]), atol=1e-12)
        np.testing.assert_allclose(tape.jacobian(r, z, experimental_use_pfor=pfor).numpy(),
                                   np.diag([1.594 + 0.39471j, 0.82685 - 0.26461j]), atol=1e-5)
    zz = C(gt.constant([[0.3, -0.7]], gt.float64), gt.constant([[1.1, 0.4]], gt.float64))
    with gt.GradientTape() as tape:
        tape.watch(zz)
        yy = gt.exp(zz) * zz
    np.testing.assert_allclose(tape.batch_jacobian(yy, zz).numpy(),
                               [np.diag([-0.52733 - 2.23743j, 0.05986 - 0.24097j])], atol=1e-5)
