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
                                        "complex64 or complex128, got int32"):
        gt.linalg.det(gt.constant([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match=r"linalg.solve: right-hand sides of shape \(3, 2\) do "
                                         r"not fit matrices of shape \(4, 4\)"):
        gt.linalg.solve(gt.eye(4), gt.ones([3, 2]))
    with pytest.raises(TypeError, match="the matrix is float32, the right-hand sides float64"):
        gt.linalg.solve(gt.eye(2), gt.constant(np.ones((2, 1))))
    with pytest.raises(ValueError, match=r"linalg.diag_part: only a single diagonal \(an int "
                                         r"k\) is supported, got k=\(-1, 1\)"):
        gt.linalg.diag_part(gt.eye(3), k=(-1, 1))
    with gt.device("cpu"):
        with pytest.raises(gt.InvalidArgumentError, match=r"matrix_inverse: Singular matrix "
                                                          r"\(inputs: float32\[3, 3\]\)"):
            gt.linalg.inv(gt.zeros([3, 3]))
        with pytest.raises(gt.InvalidArgumentError, match="cholesky: Matrix is not positive"):
            gt.linalg.logdet(-gt.eye(2))           # through Cholesky, as TF: not log|det|
        with pytest.raises(gt.InvalidArgumentError, match="cholesky: Matrix is not positive"):
            gt.linalg.cholesky(gt.constant([[1.0, 2.0], [2.0, 1.0]]))


# --- triangular solves, decompositions, least squares, expm: against TensorFlow 2.21 --------
# (the numbers below are TF's, for the inputs here; losses that use eigenvectors or singular
# vectors square them, since their signs are the solver's)
A3 = np.array([[2.0, 0.5, -1.0], [0.3, 3.0, 0.7], [-0.4, 1.1, 4.0]])
B3 = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]])
W34 = np.array([[1.0, 2.0, 0.5, -1.0], [0.0, 1.5, -2.0, 3.0], [2.0, -1.0, 1.0, 0.25]])
Y4 = np.array([[1.0], [2.0], [0.5], [-1.0]])

TF = {'ts_l': [[0.5, -1.0],
               [0.11666666666666665, 1.0999999999999999],
               [0.5179166666666667, -0.1525]],
      'ts_u': [[0.5, -1.0],
               [0.08333333333333333, 1.1666666666666665],
               [0.6104166666666667, -0.20416666666666664]],
      'e': [2.9242471533356102, 5.881130118167484, 9.19462272849691],
      's': [4.014701987187294, 2.4785392955355885, 2.302501012933618],
      'r_wide': [[-2.23606797749979,
                  2.220446049250313e-16,
                  -1.118033988749895,
                  0.22360679774997894],
                 [0.0, -2.692582403567252, 1.1141720290623116, -0.8356290217967342],
                 [0.0, 0.0, -1.6609095970747991, 3.0519213846249436]],
      'r_deep': [[-2.5, 0.39999999999999997, -0.09999999999999964],
                 [0.0, -3.8845849199110063, 0.6976292334631427],
                 [0.0, 0.0, 2.3591976289869456]],
      'lstsq': [[0.9840864884286177], [-0.001001086967887555], [0.0001988460415667063]],
      'pinv': [[0.15767109933695986, 0.0747724752755226, 0.35731241767809446],
               [0.3408219912041138, 0.0963082578638349, -0.1353167486475023],
               [0.05835646408346416, -0.10674128038934072, 0.11412327635603253],
               [-0.13150668621308076, 0.21401835080852194, 0.14374055856110624]],
      'expm07': [[4.773525403587183, -0.08109862710811376, -6.106054062456096],
                 [0.7871076659581083, 10.263751266510553, 5.692842089071417],
                 [-2.024538203870949, 9.542871027271499, 19.88882361201076]],
      'expm3': [[18119.2374960138, -138699.64802266174, -211054.33285773074],
                [-18092.63829319048, 181185.14365449682, 258282.80164689414],
                [-51858.15788288974, 452392.3672454092, 666459.0576507905]],
      'norm2': 4.014701987187294,
      'g_ts_b': [[0.5543677083333334, -1.1294437499999999],
                 [-0.017173611111111126, 0.7612916666666665],
                 [0.25895833333333335, -0.07625]],
      'g_ts_a': [[-1.4066276041666665, 0.0, 0.0],
                 [0.769878472222222, -0.8354172453703701, 0.0],
                 [-0.20572916666666669, 0.05366319444444444, -0.14574696180555555]],
      'g_tsu_a': [[-1.5797005208333332, 0.8094270833333332, -0.2546875],
                  [0.0, -0.9338917824074071, 0.0936631944444444],
                  [0.0, 0.0, -0.20714626736111114]],
      'g_eigh': [[-0.9286121471520522, -2.8285207008402384, 1.0828604243721582],
                 [-2.8285207008402384, -1.870878978988895, -0.10554657625038588],
                 [1.0828604243721582, -0.10554657625038588, 1.799491126140948]],
      'g_svd': [[-6.172039667736534,
                 1.5960045283312454,
                 -1.5790924328918365,
                 -3.3905195650009388],
                [-1.1724461102251544,
                 -0.6521327147429321,
                 -1.1118776268643378,
                 0.7632218353328415],
                [-2.3571723729744836,
                 -5.707989628402786,
                 -1.0390501273788066,
                 1.9850163568494927]],
      'g_qr_wide': [[-3.055908321233339,
                     0.2583504475519807,
                     0.7636830285439952,
                     -1.9056986824052735],
                    [-1.6674386014513327,
                     -4.6138784678204114,
                     1.9446268275997114,
                     -1.4636443439591176],
                    [0.40992017186677554,
                     -2.3652432012757796,
                     -0.9408585086469454,
                     2.070883329952532]],
      'g_qr_deep': [[-0.1780297660798469,
                     -2.643036335887652,
                     0.6450083071772064,
                     -0.14159828426654808],
                    [0.07500768725131259,
                     -1.9564980062316777,
                     1.5100855494987426,
                     -1.8329455504626722],
                    [3.7430505250953567,
                     -0.8049187783417442,
                     1.6229403633213857,
                     0.4446831500725623]],
      'g_lstsq': [[-0.2956527580968178,
                   -0.6386372114109693,
                   -0.10993114711498247,
                   0.24731953226694703],
                  [0.0006093886203688316,
                   0.0013165722853831843,
                   0.00022631877121747843,
                   -0.0005093813376075701],
                  [-0.00012133441980277508,
                   -0.0002621407690698574,
                   -4.506185373325921e-05,
                   0.00010142194610277683]],
      'g_pinv': [[-0.15767109933695989,
                  -0.3408219912041137,
                  -0.05835646408346417,
                  0.13150668621308076],
                 [-0.0747724752755226,
                  -0.09630825786383478,
                  0.10674128038934053,
                  -0.21401835080852175],
                 [-0.35731241767809463,
                  0.13531674864750226,
                  -0.11412327635603262,
                  -0.14374055856110632]],
      'g_expm3': [[278010.9477291908, -332205.0463078944, -876662.6542668175],
                  [-1785409.8998452127, 2541503.4411909543, 6150990.3282328695],
                  [-2799485.159713112, 3808258.539324738, 9423724.657681927]],
      'g_norm2': [[0.016386620233071032,
                   -0.03867894482734182,
                   0.057797360671507265,
                   -0.07538057974576386],
                  [-0.15125687591043843,
                   0.357026420023374,
                   -0.5334991649710452,
                   0.6958012594721057],
                  [0.04177416139949128,
                   -0.09860364498583249,
                   0.14734193133269816,
                   -0.19216656393437473]],
      'hess_eigh': [[28882.943999999996, 5792.255999999974, -40048.12800000005],
                    [5792.255999999974, 82658.30400000012, 73944.57600000018],
                    [-40048.12800000005, 73944.57600000018, 178113.02400000035]]}


def _tol(dtype):
    return dict(rtol=1e-9, atol=1e-9) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-4)


def _close(got, want, dtype, scale=1.0):
    want = np.asarray(want)
    tol = _tol(dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=tol["rtol"],
                               atol=tol["atol"] * max(1.0, scale * float(np.abs(want).max())))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solves_and_factorisations_match_tensorflow(device, dtype):
    a, b, w, y = (gt.constant(v.astype(dtype)) for v in (A3, B3, W34, Y4))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([a, b, w])
        ts_l = gt.linalg.triangular_solve(a, b)
        ts_u = gt.linalg.triangular_solve(a, b, lower=False, adjoint=True)
        e, v = gt.linalg.eigh(a + gt.transpose(a))
        s, u, vv = gt.linalg.svd(w)
        ls = gt.linalg.lstsq(gt.transpose(w), y, l2_regularizer=0.1)
        pi = gt.linalg.pinv(w)
        n2 = gt.linalg.norm(w, ord=2, axis=[-2, -1])
        l_ts = gt.reduce_sum(ts_l * ts_l)
        l_tsu = gt.reduce_sum(ts_u * ts_u)
        l_e = gt.reduce_sum(e * gt.constant(np.array([1.0, -2.0, 0.5], dtype))) \
            + gt.reduce_sum(v ** 2 * gt.constant(A3.astype(dtype)))
        l_s = gt.reduce_sum(s * gt.constant(np.array([1.0, 0.3, -0.5], dtype))) \
            + gt.reduce_sum(u ** 2 * gt.constant(A3.astype(dtype))) \
            + gt.reduce_sum(vv ** 2 * gt.constant(W34.T.astype(dtype)))
        l_ls = gt.reduce_sum(ls ** 2)
        l_pi = gt.reduce_sum(pi * gt.constant(W34.T.astype(dtype)))
    for got, key in [(ts_l, "ts_l"), (ts_u, "ts_u"), (e, "e"), (s, "s"), (ls, "lstsq"),
                     (pi, "pinv"), (n2, "norm2"), (tape.gradient(l_ts, b), "g_ts_b"),
                     (tape.gradient(l_ts, a), "g_ts_a"), (tape.gradient(l_tsu, a), "g_tsu_a"),
                     (tape.gradient(l_e, a), "g_eigh"), (tape.gradient(l_s, w), "g_svd"),
                     (tape.gradient(l_ls, w), "g_lstsq"), (tape.gradient(l_pi, w), "g_pinv"),
                     (tape.gradient(n2, w), "g_norm2")]:
        assert got.dtype == dtype and got.device == device.name, key
        _close(got, TF[key], dtype)
    # the decompositions reconstruct their input
    np.testing.assert_allclose((v.numpy() * e.numpy()[None]) @ v.numpy().T, A3 + A3.T,
                               **_tol(dtype))
    np.testing.assert_allclose((u.numpy() * s.numpy()[None]) @ vv.numpy().T, W34, **_tol(dtype))
    for m in (W34, W34.T):
        q, r = gt.linalg.qr(gt.constant(m.astype(dtype)))
        p = min(m.shape)
        assert q.shape == (m.shape[0], p) and r.shape == (p, m.shape[1])
        np.testing.assert_allclose(q.numpy() @ r.numpy(), m, **_tol(dtype))
        np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(p), **_tol(dtype))
        assert np.all(np.tril(r.numpy(), -1) == 0)
        np.testing.assert_allclose(np.abs(r.numpy()), np.abs(TF["r_wide" if m is W34 else
                                                                 "r_deep"]), **_tol(dtype))


def test_qr_gradient_matches_tensorflow():
    """Q and R themselves (not sign-free): on the CPU, whose Householder signs are TF's."""
    with gt.device("cpu"):
        w = gt.constant(W34)
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(w)
            q, r = gt.linalg.qr(w)
            q2, r2 = gt.linalg.qr(gt.transpose(w))
            wide = gt.reduce_sum(q * gt.constant(A3)) + gt.reduce_sum(r * gt.constant(W34))
            deep = gt.reduce_sum(q2 * gt.constant(W34.T)) + gt.reduce_sum(r2 * gt.constant(A3))
        np.testing.assert_allclose(r.numpy(), TF["r_wide"], atol=1e-12)
        np.testing.assert_allclose(r2.numpy(), TF["r_deep"], atol=1e-12)
        np.testing.assert_allclose(tape.gradient(wide, w).numpy(), TF["g_qr_wide"], rtol=1e-9)
        np.testing.assert_allclose(tape.gradient(deep, w).numpy(), TF["g_qr_deep"], rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expm_matches_tensorflow(device, dtype):
    a = gt.constant(A3.astype(dtype))
    with gt.GradientTape() as tape:
        tape.watch(a)
        small = gt.linalg.expm(a * 0.7)
        big = gt.linalg.expm(a * 3.0)              # norm 18: scaled by 2^2 (f64) / 2^3 (f32)
        loss = gt.reduce_sum(big * gt.constant(A3.astype(dtype)))
    _close(small, TF["expm07"], dtype)
    _close(big, TF["expm3"], dtype)
    _close(tape.gradient(loss, a), TF["g_expm3"], dtype)
    batch = gt.linalg.expm(gt.constant(np.stack([A3 * 0.1, np.zeros((3, 3)), A3 * 5.0])
                                       .astype(dtype)))
    # each matrix its own approximant and number of squarings (against SciPy's expm)
    want = np.array([[1.2248649893065564, 0.056934847005163249, -0.1331424475414365],
                     [1.0, 0.0, 0.0],
                     [1.4556631312373134e+08, -1.2938720173794756e+09, -1.8971114895682757e+09]])
    _close(batch[:, 0, :], want, dtype)
    nan = gt.linalg.expm(gt.constant(np.array([[1.0, np.inf], [0.0, 1.0]], dtype)))
    assert np.isnan(nan.numpy()).all()
    assert gt.linalg.expm(gt.zeros([0, 0], dtype=dtype)).shape == (0, 0)


def test_expm_gradients_against_finite_differences():
    from gradtape.testing import check_grads
    rng = np.random.default_rng(4)
    for scale in (0.005, 0.2, 0.7, 1.5, 6.0):      # every Pade order, then squarings
        check_grads(lambda x: gt.linalg.expm(x), [scale * rng.standard_normal((2, 3, 3))],
                    order=2, rtol=1e-5, atol=1e-6 * max(1.0, np.exp(3 * scale)))


def test_eigh_reads_the_lower_triangle_and_its_gradient_lies_there(device):
    x = gt.constant(A3)
    with gt.GradientTape() as tape:
        tape.watch(x)
        e = gt.linalg.eigvalsh(x)
        loss = gt.reduce_sum(e * gt.constant(np.array([1.0, 2.0, 3.0])))
    sym = np.tril(A3) + np.tril(A3, -1).T
    np.testing.assert_allclose(e.numpy(), np.linalg.eigvalsh(sym), rtol=1e-12)
    g = tape.gradient(loss, x).numpy()
    assert np.all(np.triu(g, 1) == 0)
    ev, vec = np.linalg.eigh(sym)
    full = vec @ np.diag([1.0, 2.0, 3.0]) @ vec.T       # d/dS of the symmetric function
    np.testing.assert_allclose(g, np.tril(2 * full, -1) + np.diag(np.diag(full)), rtol=1e-10)


def test_eigh_second_derivative_matches_tensorflow():
    a = gt.constant(A3)
    with gt.GradientTape() as t2:
        t2.watch(a)
        with gt.GradientTape() as t1:
            t1.watch(a)
            y = gt.reduce_sum(gt.linalg.eigh(a + gt.transpose(a))[0] ** 3)
        g = t1.gradient(y, a)
        z = gt.reduce_sum(g * g)
    np.testing.assert_allclose(t2.gradient(z, a).numpy(), TF["hess_eigh"], rtol=1e-9)


def test_svd_shapes_and_options(device):
    w = gt.constant(W34)
    s, u, v = gt.linalg.svd(w, full_matrices=True)
    assert (s.shape, u.shape, v.shape) == ((3,), (3, 3), (4, 4))
    np.testing.assert_allclose(v.numpy().T @ v.numpy(), np.eye(4), atol=1e-12)
    s_only = gt.linalg.svd(w, compute_uv=False)
    np.testing.assert_allclose(s_only.numpy(), TF["s"], rtol=1e-12)
    s, u, v = gt.linalg.svd(gt.constant(np.stack([W34.T, 2 * W34.T])))
    assert (s.shape, u.shape, v.shape) == ((2, 3), (2, 4, 3), (2, 3, 3))
    np.testing.assert_allclose(s.numpy(), [TF["s"], 2 * np.array(TF["s"])], rtol=1e-12)
    q, r = gt.linalg.qr(w, full_matrices=True)
    assert (q.shape, r.shape) == ((3, 3), (3, 4))
    q, r = gt.linalg.qr(gt.transpose(w), full_matrices=True)
    assert (q.shape, r.shape) == ((4, 4), (4, 3))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), W34.T, atol=1e-12)


def test_least_squares_variants(device):
    w = gt.constant(W34)
    # fast=False: the minimum-norm solution; the regulariser is ignored there, as in TF
    for l2 in (0.0, 0.1):
        x = gt.linalg.lstsq(gt.transpose(w), gt.constant(Y4), l2_regularizer=l2, fast=False)
        np.testing.assert_allclose(x.numpy(), [[1.0], [0.0], [0.0]], atol=1e-12)
    under = gt.linalg.lstsq(w, gt.constant(Y4[:3]))       # m < n: the minimum-norm solution
    np.testing.assert_allclose(under.numpy().ravel(), [0.48587225872705214, 0.46578013260803236,
                                                       -0.09806445851720108, 0.3684002946845163],
                               rtol=1e-12)
    batch = gt.linalg.lstsq(gt.constant(np.stack([W34.T, W34.T])), gt.constant(Y4))
    assert batch.shape == (2, 3, 1)
    # pinv's default cutoff: 10 max(m, n) eps of the dtype
    np.testing.assert_allclose(gt.linalg.pinv(gt.constant(np.diag([1.0, 1e-9]))).numpy(),
                               np.diag([1.0, 1e9]), rtol=1e-12)
    np.testing.assert_array_equal(gt.linalg.pinv(gt.constant(np.diag([1.0, 1e-6])
                                                             .astype(np.float32))).numpy(),
                                  np.diag([1.0, 0.0]))
    np.testing.assert_array_equal(gt.linalg.pinv(gt.constant(np.diag([1.0, 1e-3])),
                                                 rcond=0.01).numpy(), np.diag([1.0, 0.0]))


def test_triangular_and_cholesky_solves_broadcast(device):
    a = gt.constant(np.stack([A3, 2 * A3]))
    x = gt.linalg.triangular_solve(a, gt.constant(B3))
    assert x.shape == (2, 3, 2)
    np.testing.assert_allclose(x.numpy()[1], np.array(TF["ts_l"]) / 2, rtol=1e-12)
    # only the named triangle is read
    junk = gt.constant(np.tril(A3) + np.triu(np.full((3, 3), np.nan), 1))
    np.testing.assert_allclose(gt.linalg.triangular_solve(junk, gt.constant(B3)).numpy(),
                               TF["ts_l"], rtol=1e-12)
    chol = gt.linalg.cholesky(gt.constant(SPD))
    np.testing.assert_allclose(gt.linalg.cholesky_solve(chol, gt.constant(B)).numpy(),
                               np.linalg.solve(SPD, B), rtol=1e-10)


def test_norm_ord_2_on_matrices(device):
    x = gt.constant(np.stack([W34, 2 * W34], -1))         # [3, 4, 2]
    n = gt.linalg.norm(x, ord=2, axis=[0, 1], keepdims=True)
    assert n.shape == (1, 1, 2)
    np.testing.assert_allclose(n.numpy().ravel(), [TF["norm2"], 2 * TF["norm2"]], rtol=1e-12)
    np.testing.assert_allclose(gt.linalg.norm(x, ord=2, axis=(1, 0)).numpy(),
                               [TF["norm2"], 2 * TF["norm2"]], rtol=1e-12)
    # other orders go on to gt.norm
    np.testing.assert_allclose(gt.linalg.norm(gt.constant(W34), ord=1, axis=[-2, -1]).numpy(),
                               np.linalg.norm(W34, 1), rtol=1e-12)
    np.testing.assert_allclose(gt.linalg.norm(gt.constant(W34)).numpy(),
                               np.linalg.norm(W34), rtol=1e-12)
    with pytest.raises(ValueError, match="not supported"):
        gt.linalg.norm(gt.constant(W34), ord="nuc", axis=[-2, -1])   # as TF: no nuclear norm


def test_diagonals_match_tensorflow(device):
    d = gt.constant([1.0, 2.0, 3.0])
    w = gt.constant(W34)
    np.testing.assert_array_equal(gt.linalg.diag(d).numpy(), np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(gt.linalg.diag(d, k=1).numpy(), np.diag([1.0, 2.0, 3.0], 1))
    np.testing.assert_array_equal(
        gt.linalg.diag(d, k=-1, num_rows=4, num_cols=5, padding_value=9).numpy(),
        [[9, 9, 9, 9, 9], [1, 9, 9, 9, 9], [9, 2, 9, 9, 9], [9, 9, 3, 9, 9]])
    np.testing.assert_array_equal(gt.linalg.diag(d, num_rows=3, num_cols=5).numpy(),
                                  np.eye(3, 5) * [1.0, 2.0, 3.0, 0, 0])
    batch = gt.linalg.diag(gt.constant([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(batch.numpy(), [np.diag([1.0, 2.0]), np.diag([3.0, 4.0])])
    np.testing.assert_array_equal(gt.linalg.diag_part(w, k=1).numpy(), [2.0, -2.0, 0.25])
    np.testing.assert_array_equal(gt.linalg.diag_part(w, k=-1).numpy(), [0.0, -1.0])
    np.testing.assert_array_equal(
        gt.linalg.set_diag(w, gt.constant([7.0, 8.0, 9.0], dtype=gt.float64), k=1).numpy(),
        [[1.0, 7.0, 0.5, -1.0], [0.0, 1.5, 8.0, 3.0], [2.0, -1.0, 1.0, 9.0]])
    np.testing.assert_array_equal(
        gt.linalg.tensor_diag_part(gt.reshape(gt.range(16.0), [2, 2, 2, 2])).numpy(),
        [[0.0, 5.0], [10.0, 15.0]])
    td = gt.linalg.tensor_diag(gt.constant([[1.0, 2.0], [3.0, 4.0]]))
    assert td.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(td.numpy().reshape(4, 4), np.diag([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(gt.linalg.cross(gt.constant([[1.0, 2.0, 3.0]]),
                                                  gt.constant([[4.0, -5.0, 6.0]])).numpy(),
                                  [[27.0, 6.0, -13.0]])
    np.testing.assert_allclose(gt.linalg.l2_normalize(gt.constant([3.0, 4.0])).numpy(),
                               [0.6, 0.8], rtol=1e-6)
    assert gt.linalg.adjoint(w).shape == (4, 3)


def test_new_ops_bad_input_names_the_op():
    with pytest.raises(gt.InvalidArgumentError, match=r"linalg.cross: both inputs must have the "
                                                      r"same shape, got \(2, 3\) and \(3,\)"):
        gt.linalg.cross(gt.ones([2, 3]), gt.ones([3]))
    with pytest.raises(gt.InvalidArgumentError, match="the last axis must hold 3-vectors"):
        gt.linalg.cross(gt.ones([2]), gt.ones([2]))
    with pytest.raises(ValueError, match=r"linalg.triangular_solve: expected square matrices"):
        gt.linalg.triangular_solve(gt.ones([4, 3]), gt.ones([4, 2]))
    with pytest.raises(ValueError, match=r"linalg.triangular_solve: right-hand sides of shape "
                                         r"\(2, 2\) do not fit matrices of shape \(3, 3\)"):
        gt.linalg.triangular_solve(gt.eye(3), gt.ones([2, 2]))
    with pytest.raises(TypeError, match="linalg.eigh: matrices must be float32 or float64, got "
                                        "int32"):
        gt.linalg.eigh(gt.constant([[1, 0], [0, 1]]))
    with pytest.raises(ValueError, match=r"linalg.svd: expected matrices of shape \[..., m, n\],"
                                         r" got shape \(2,\)"):
        gt.linalg.svd(gt.constant([1.0, 2.0]))
    with pytest.raises(gt.InvalidArgumentError, match=r"linalg.diag: a diagonal of length 3 does "
                                                      r"not fit diagonal k=-1 of 5 x 4 matrices"):
        gt.linalg.diag(gt.ones([3]), k=-1, num_rows=5, num_cols=4)
    with pytest.raises(gt.InvalidArgumentError, match=r"linalg.set_diag: a diagonal of shape "
                                                      r"\(3,\) does not fit"):
        gt.linalg.set_diag(gt.ones([3, 3]), gt.ones([3]), k=1)
    with pytest.raises(gt.InvalidArgumentError, match="linalg.tensor_diag_part: the input's "
                                                      "shape must be of the form s \\+ s"):
        gt.linalg.tensor_diag_part(gt.ones([2, 3]))
    with pytest.raises(ValueError, match=r"linalg.lstsq: right-hand sides of shape \(3, 1\) "
                                         r"do not fit matrices of shape \(4, 3\)"):
        gt.linalg.lstsq(gt.ones([4, 3]), gt.ones([3, 1]))
    x = gt.constant(np.random.default_rng(0).standard_normal((3, 5)))
    with gt.GradientTape() as tape:
        tape.watch(x)
        _, u, _ = gt.linalg.svd(x, full_matrices=True)
    with pytest.raises(NotImplementedError, match=r"svd: the gradient with full_matrices=True "
                                                  r"needs \|m - n\| <= 1"):
        tape.gradient(u, x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        q, _ = gt.linalg.qr(gt.transpose(x), full_matrices=True)
    with pytest.raises(NotImplementedError, match="qr: the gradient with full_matrices=True "
                                                  "needs rows <= columns"):
        tape.gradient(q, x)
