"""gt.linalg's inverses, solves, determinants and factorisations: values against NumPy on
every device, dtypes, and bad input. (Gradients: the spec table in tests/specs/core.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

RNG = np.random.default_rng(12)
A = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
SPD = A @ A.swapaxes(-1, -2) + np.eye(4)
B = RNG.standard_normal((2, 4, 3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_numpy(device, dtype):
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    a, spd, b = (gt.constant(v.astype(dtype)) for v in (A, SPD, B))
    for got, want in [
        (gt.linalg.inv(a), np.linalg.inv(A)),
        (gt.linalg.inv(a, adjoint=True), np.linalg.inv(A).swapaxes(-1, -2)),
        (gt.linalg.solve(a, b), np.linalg.solve(A, B)),
        (gt.linalg.solve(a, b, adjoint=True), np.linalg.solve(A.swapaxes(-1, -2), B)),
        (gt.linalg.det(a), np.linalg.det(A)),
        (gt.linalg.slogdet(a)[1], np.linalg.slogdet(A)[1]),
        (gt.linalg.logdet(spd), np.linalg.slogdet(SPD)[1]),
        (gt.linalg.cholesky(spd), np.linalg.cholesky(SPD)),
        (gt.linalg.trace(a), np.trace(A, axis1=-2, axis2=-1)),
        (gt.linalg.diag_part(b), np.diagonal(B, axis1=-2, axis2=-1)),
        (gt.linalg.band_part(b, 1, 0), np.tril(np.triu(B, -1), 0)),
        (gt.linalg.band_part(b, -1, 0), np.tril(B)),
        (gt.linalg.band_part(b, 0, -1), np.triu(B)),
    ]:
        assert got.dtype == dtype and got.device == device.name
        np.testing.assert_allclose(got.numpy(), want, **tol)
    sign, _ = gt.linalg.slogdet(gt.constant(-A[0].astype(dtype)))
    assert float(sign) == np.linalg.slogdet(-A[0])[0]


def test_least_squares_by_normal_equations_fits():
    """A TF-style script: solve the normal equations, and differentiate the residual."""
    x = RNG.standard_normal((50, 3))
    w_true = np.array([[1.0], [-2.0], [0.5]])
    y = x @ w_true
    xt = gt.constant(x)
    w = gt.linalg.solve(gt.matmul(xt, xt, transpose_a=True), gt.matmul(xt, gt.constant(y),
                                                                        transpose_a=True))
    np.testing.assert_allclose(w.numpy(), w_true, rtol=1e-10)
    # a Gaussian log-likelihood's gradient with respect to a covariance factor
    f = gt.Variable(np.eye(3) * 1.5)
    with gt.GradientTape() as tape:
        cov = gt.matmul(f, f, transpose_b=True) + 0.1 * gt.eye(3, dtype=gt.float64)
        chol = gt.linalg.cholesky(cov)
        logdet = 2.0 * gt.reduce_sum(gt.math.log(gt.linalg.diag_part(chol)))
        nll = 0.5 * logdet + 0.5 * gt.reduce_sum(gt.linalg.inv(cov) * gt.constant(np.eye(3)))
    g = tape.gradient(nll, f).numpy()
    # closed form: d/dF [0.5 log det C + 0.5 tr C^-1] = (C^-1 - C^-2) F
    c = 2.25 * np.eye(3) + 0.1 * np.eye(3)
    ci = np.linalg.inv(c)
    np.testing.assert_allclose(g, (ci - ci @ ci) @ (np.eye(3) * 1.5), rtol=1e-10)


def test_bad_input_names_the_op_and_the_shapes():
    with pytest.raises(ValueError, match=r"linalg.inv: expected square matrices of shape "
                                         r"\[..., n, n\], got shape \(2, 3\)"):
        gt.linalg.inv(gt.ones([2, 3]))
    with pytest.raises(TypeError, match="linalg.det: matrices must be float32 or float64, "
                                        "got int32"):
        gt.linalg.det(gt.constant([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match=r"linalg.solve: right-hand sides of shape \(3, 2\) do "
                                         r"not fit matrices of shape \(4, 4\)"):
        gt.linalg.solve(gt.eye(4), gt.ones([3, 2]))
    with pytest.raises(TypeError, match="the matrix is float32, the right-hand sides float64"):
        gt.linalg.solve(gt.eye(2), gt.constant(np.ones((2, 1))))
    with pytest.raises(ValueError, match="only k=0"):
        gt.linalg.diag_part(gt.eye(3), k=1)
    with gt.device("cpu"):
        with pytest.raises(gt.InvalidArgumentError, match=r"matrix_inverse: Singular matrix "
                                                          r"\(inputs: float32\[3, 3\]\)"):
            gt.linalg.inv(gt.zeros([3, 3]))
        with pytest.raises(gt.InvalidArgumentError, match="cholesky: Matrix is not positive"):
            gt.linalg.logdet(-gt.eye(2))           # through Cholesky, as TF: not log|det|
        with pytest.raises(gt.InvalidArgumentError, match="cholesky: Matrix is not positive"):
            gt.linalg.cholesky(gt.constant([[1.0, 2.0], [2.0, 1.0]]))
