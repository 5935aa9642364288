"""gt.linalg's LU family, matrix_rank, normalize, tridiagonal and banded solves, sqrtm and
eig; gt.math's segment products and accumulate_n; gt.test.compute_gradient; keras.ops'
lu_factor and eig. The reference values and gradients (``R``, at the end) are TensorFlow
2.21's, for the generated inputs below; float32 is checked against them too."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

DTYPES = [np.float32, np.float64]


def close(got, want, dtype=np.float64, rtol=None, atol=None):
    got = got.numpy() if isinstance(got, gt.Tensor) else np.asarray(got)
    want = want.numpy() if isinstance(want, gt.Tensor) else np.asarray(want)
    single = np.dtype(dtype) in (np.float32, np.complex64)
    rtol = rtol if rtol is not None else (2e-4 if single else 1e-8)
    atol = atol if atol is not None else (2e-5 if single else 1e-9)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


def central_differences(loss, z, eps=1e-6):
    """TF's gradient of a real loss of complex ``z`` (dL/dx + i dL/dy), numerically."""
    out = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        for unit in (1, 1j):
            zp, zm = z.copy(), z.copy()
            zp[idx] += eps * unit
            zm[idx] -= eps * unit
            out[idx] += (loss(zp) - loss(zm)) / (2 * eps) * unit
    return out


# --- LU -------------------------------------------------------------------------------------

def _lu_inputs():
    rng = np.random.default_rng(100)
    return (rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2)),
            rng.standard_normal((2, 3, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_solve_inverse_reconstruct_match_tensorflow(device, dtype):
    a_np, rhs, w = (v.astype(dtype) for v in _lu_inputs())
    lu, p = gt.linalg.lu(gt.constant(a_np))
    assert p.dtype == gt.int32 and lu.dtype == dtype and lu.device == device.name
    assert p.numpy().tolist() == R["perm"]
    close(lu, R["lu"], dtype)
    b = gt.constant(rhs)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([lu, b])
        x = gt.linalg.lu_solve(lu, p, b)
        inv = gt.linalg.lu_matrix_inverse(lu, p)
        rec = gt.linalg.lu_reconstruct(lu, p)
        loss = gt.reduce_sum(x * gt.constant(w)) + gt.reduce_sum(inv * inv) \
            + gt.reduce_sum(rec ** 3)
    close(x, R["lu_solve"], dtype)
    close(inv, R["lu_inv"], dtype)
    close(rec, a_np, dtype)
    glu, gb = tape.gradient(loss, [lu, b])
    close(glu, R["lu_glu"], dtype)
    close(gb, R["lu_gb"], dtype)
    # the batch axes of perm and rhs broadcast, as TF's
    close(gt.linalg.lu_solve(lu[:1], p[:1], gt.constant(rhs[:, None])), R["lu_solve_bcast"],
          dtype)


def test_lu_is_differentiable_beyond_tensorflow():
    """TF registers no gradient for Lu; here the factorisation's: reconstructing gives the
    identity map back, and finite differences agree (to second order, complex too)."""
    a_np, _, w = _lu_inputs()
    w = np.concatenate([w, w[..., :1]], -1)
    a = gt.constant(a_np)
    with gt.GradientTape() as tape:
        tape.watch(a)
        loss = gt.reduce_sum(gt.linalg.lu_reconstruct(*gt.linalg.lu(a)) * gt.constant(w))
    np.testing.assert_allclose(tape.gradient(loss, a).numpy(), w, atol=1e-12)
    check_grads(lambda x: gt.linalg.lu(x)[0] ** 2, [a_np + 3 * np.eye(3)], order=2)
    z = np.random.default_rng(1).standard_normal((3, 3, 2)) @ np.array([1, 1j]) + 2 * np.eye(3)

    def loss_of(zz):
        return gt.reduce_sum(gt.abs(gt.linalg.lu(zz)[0]) ** 2)
    zt = gt.constant(z)
    with gt.GradientTape() as tape:
        tape.watch(zt)
        loss = loss_of(zt)
    np.testing.assert_allclose(tape.gradient(loss, zt).numpy(),
                               central_differences(lambda v: float(loss_of(gt.constant(v))), z),
                               atol=1e-6)


def test_lu_pivots_complex_values_and_index_type():
    lu, p = gt.linalg.lu(gt.constant([[1., 2, 3], [-1, 5, 6], [1, 1, 1]], gt.float64))
    close(lu, R["lu_ties"][0])
    assert p.numpy().tolist() == R["lu_ties"][1]          # the first largest pivot, as TF
    rng = np.random.default_rng(100)
    for _ in range(3):
        rng.standard_normal((2, 3, 3 if _ == 0 else 2))
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    lu, p = gt.linalg.lu(gt.constant(c), output_idx_type=gt.int64)
    assert lu.dtype == gt.complex128 and p.dtype == gt.int64
    close(lu, R["lu_c"][0])
    assert p.numpy().tolist() == R["lu_c"][1]
    lu, p = gt.linalg.lu(gt.zeros([2, 0, 0]))
    assert tuple(lu.shape) == (2, 0, 0) and tuple(p.shape) == (2, 0)


def test_lu_solve_of_complex_factors_matches_tensorflow(device):
    rng = np.random.default_rng(3)
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    b = gt.constant(rng.standard_normal((3, 1)) + 1j * rng.standard_normal((3, 1)))
    lu, p = gt.linalg.lu(gt.constant(c))
    with gt.GradientTape() as tape:
        tape.watch([lu, b])
        x = gt.linalg.lu_solve(lu, p, b)
        loss = gt.reduce_sum(gt.abs(x) ** 2) \
            + gt.reduce_sum(gt.math.imag(gt.linalg.lu_matrix_inverse(lu, p)))
    close(x, np.linalg.solve(c, b.numpy()))
    for got, want in zip(tape.gradient(loss, [lu, b]), R["lu_c_grad"]):
        close(got, want)


def test_lu_bad_input(device):
    with pytest.raises(ValueError, match="square"):
        gt.linalg.lu(gt.ones([2, 3]))
    with pytest.raises(TypeError, match="float32"):
        gt.linalg.lu(gt.constant([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match="output_idx_type"):
        gt.linalg.lu(gt.eye(2), output_idx_type=gt.int16)
    singular = gt.constant([[1., 2], [2, 4]])
    if device.host_visible:
        with pytest.raises(gt.errors.InvalidArgumentError, match="not invertible"):
            gt.linalg.lu(singular)
        with pytest.raises(gt.errors.InvalidArgumentError, match="permutations"):
            gt.linalg.lu_reconstruct(gt.eye(2), gt.constant([1, 1]))
    else:           # no host wait: U keeps its zero pivot
        assert gt.linalg.lu(singular)[0].numpy()[1, 1] == 0
    lu, p = gt.linalg.lu(gt.eye(3))
    with pytest.raises(ValueError, match="rhs.shape"):
        gt.linalg.lu_solve(lu, p, gt.ones([2, 1]))
    with pytest.raises(ValueError, match="rank"):
        gt.linalg.lu_solve(lu, gt.constant([[0, 1, 2]]), gt.ones([3, 1]))
    with pytest.raises(ValueError, match="at least 2"):
        gt.linalg.lu_solve(lu, p, gt.ones([3]))


def test_matrix_rank(device):
    a_np = _lu_inputs()[0]
    m3 = np.stack([a_np[0], np.outer(a_np[0, 0], a_np[0, 1]), np.zeros((3, 3))])
    for dtype in DTYPES:
        r = gt.linalg.matrix_rank(gt.constant(m3.astype(dtype)))
        assert r.dtype == gt.int32 and r.numpy().tolist() == R["rank"]
    assert gt.linalg.matrix_rank(m3, tol=0.5).numpy().tolist() == R["rank_tol"]
    assert gt.linalg.matrix_rank(np.concatenate([m3, m3], -1)).numpy().tolist() \
        == R["rank_wide"]
    with pytest.raises(TypeError, match="float"):
        gt.linalg.matrix_rank(gt.constant([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="2 dimensions"):
        gt.linalg.matrix_rank(gt.ones([3]))


# --- normalize --------------------------------------------------------------------------------

NORMALIZE_CASES = [("euclidean", None), (1, -1), (np.inf, 0), (3, 1), (2, [0, 1]),
                   ("fro", [0, 1]), (1, [0, 1])]


@pytest.mark.parametrize("dtype", DTYPES)
def test_normalize_matches_tensorflow(device, dtype):
    rng = np.random.default_rng(101)
    x_np, w = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    for (ord_, axis), (want_y, want_n, want_g) in zip(NORMALIZE_CASES, R["normalize"]):
        x = gt.constant(x_np.astype(dtype))
        with gt.GradientTape() as tape:
            tape.watch(x)
            y, n = gt.linalg.normalize(x, ord=ord_, axis=axis)
            loss = gt.reduce_sum(y * gt.constant(w.astype(dtype))) + gt.reduce_sum(n)
        assert n.dtype == dtype and n.shape == np.shape(want_n)
        close(y, want_y, dtype)
        close(n, want_n, dtype)
        close(tape.gradient(loss, x), want_g, dtype)
    y, n = gt.linalg.normalize(gt.constant(x_np + 1j * x_np[::-1]), axis=1)
    assert n.dtype == gt.complex128
    close(y, R["normalize_c"][0])
    close(n, R["normalize_c"][1])
    with pytest.raises(ValueError, match="vector norm"):
        gt.linalg.normalize(gt.constant(x_np), ord="fro")
    with pytest.raises(ValueError):
        gt.linalg.normalize(gt.constant(x_np), ord=0, axis=1)


# --- tridiagonal systems --------------------------------------------------------------------------

def _tri_inputs():
    rng = np.random.default_rng(102)
    d = rng.standard_normal((2, 3, 4)) + np.array([[2.], [0.], [4.]])
    return d, rng.standard_normal((2, 4, 2)), rng.standard_normal((2, 4, 2)), \
        rng.standard_normal((2, 4, 4)), rng


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_solve_matches_tensorflow(device, dtype):
    d_np, b_np, w, m_np, _ = (v.astype(dtype) if isinstance(v, np.ndarray) else v
                              for v in _tri_inputs())
    for (pivoting, fmt), (want_x, want_gd, want_gb) in R["tri"].items():
        formats = ["compact", "sequence"] if fmt == "compact" else ["matrix"]
        for form in formats:
            d, b, m = gt.constant(d_np), gt.constant(b_np), gt.constant(m_np)
            with gt.GradientTape() as tape:
                tape.watch([d, b, m])
                diags = {"compact": d, "sequence": [d[:, 0, :-1], d[:, 1], d[:, 2, 1:]],
                         "matrix": m}[form]
                x = gt.linalg.tridiagonal_solve(diags, b, diagonals_format=form,
                                                partial_pivoting=pivoting)
                loss = gt.reduce_sum(x * gt.constant(w))
            gd, gb = tape.gradient(loss, [m if form == "matrix" else d, b])
            close(x, want_x, dtype)
            close(gd, want_gd, dtype)
            close(gb, want_gb, dtype)
    d = gt.constant(d_np)
    close(gt.linalg.tridiagonal_solve(d, gt.constant(b_np.swapaxes(-1, -2)),
                                      transpose_rhs=True), R["tri_T"], dtype)
    close(gt.linalg.tridiagonal_solve(d, gt.constant(b_np[..., 0])), R["tri_v"], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_matmul_matches_tensorflow(device, dtype):
    d_np, b_np, w, m_np, _ = (v.astype(dtype) if isinstance(v, np.ndarray) else v
                              for v in _tri_inputs())
    d, b, m = gt.constant(d_np), gt.constant(b_np), gt.constant(m_np)
    with gt.GradientTape() as tape:
        tape.watch([d, b, m])
        y1 = gt.linalg.tridiagonal_matmul(d, b)
        y2 = gt.linalg.tridiagonal_matmul([d[:, 0], d[:, 1], d[:, 2]], b,
                                          diagonals_format="sequence")
        y3 = gt.linalg.tridiagonal_matmul(m, b, diagonals_format="matrix")
        loss = gt.reduce_sum(y1 * gt.constant(w)) + gt.reduce_sum(y3 ** 2)
    want_y1, want_y3, want_gd, want_gb, want_gm = R["trimm"]
    close(y1, want_y1, dtype)
    close(y2, want_y1, dtype)
    close(y3, want_y3, dtype)
    for got, want in zip(tape.gradient(loss, [d, b, m]), [want_gd, want_gb, want_gm]):
        close(got, want, dtype)


def test_tridiagonal_singular_perturbed_and_complex(device):
    s = gt.constant([[1., 1, 0], [0., 0, 0], [0, 1, 1]])
    for pivoting in (True, False):   # a singular system is all nan, as TF's kernel
        out = gt.linalg.tridiagonal_solve(s, gt.ones([3, 2]), partial_pivoting=pivoting)
        assert np.isnan(out.numpy()).all()
    if device.host_visible:
        close(gt.linalg.tridiagonal_solve(gt.cast(s, gt.float64), gt.ones([3, 2], gt.float64),
                                          perturb_singular=True), R["tri_pert"])
        out = gt.linalg.tridiagonal_solve(gt.zeros([3, 1]), gt.ones([1, 2]),
                                          perturb_singular=True)
        np.testing.assert_allclose(out.numpy(), [[8.507059e37, 8.507059e37]], rtol=1e-7)
        rng = _tri_inputs()[-1]
        rr, rb = gt.constant(rng.standard_normal((2, 3, 5))), \
            gt.constant(rng.standard_normal((2, 5, 2)))
        with gt.GradientTape() as tape:
            tape.watch([rr, rb])
            x = gt.linalg.tridiagonal_solve(rr, rb, perturb_singular=True)
            loss = gt.reduce_sum(x * x)
        close(x, R["tri_pertR"][0])
        for got, want in zip(tape.gradient(loss, [rr, rb]), R["tri_pertR"][1]):
            close(got, want)
    else:             # TF's GPU kernel has no perturb_singular either
        with pytest.raises(gt.errors.UnimplementedError, match="perturb_singular"):
            gt.linalg.tridiagonal_solve(s, gt.ones([3, 2]), perturb_singular=True)
    d_np, b_np = _tri_inputs()[:2]
    dc, bc = d_np[0] + 1j * d_np[1], b_np[0] - 1j * b_np[1]
    close(gt.linalg.tridiagonal_solve(gt.constant(dc), gt.constant(bc)), R["tri_c"])
    close(gt.linalg.tridiagonal_solve(gt.constant(dc), gt.constant(bc.T), transpose_rhs=True,
                                      conjugate_rhs=True), R["tri_c_conj"])


def test_tridiagonal_complex_gradient_is_the_conjugated_one():
    """TF's complex tridiagonal gradient lacks a conjugate (it disagrees with its own central
    differences); this one follows TF's convention for complex gradients everywhere else."""
    d_np, b_np = _tri_inputs()[:2]
    dc, bc = d_np[0] + 1j * d_np[1], b_np[0] - 1j * b_np[1]

    def loss_of(dd, bb):
        return gt.reduce_sum(gt.abs(gt.linalg.tridiagonal_solve(dd, bb)) ** 2)
    d, b = gt.constant(dc), gt.constant(bc)
    with gt.GradientTape() as tape:
        tape.watch([d, b])
        loss = loss_of(d, b)
    gd, gb = tape.gradient(loss, [d, b])
    num_b = central_differences(lambda v: float(loss_of(gt.constant(dc), gt.constant(v))), bc)
    num_d = central_differences(lambda v: float(loss_of(gt.constant(v), gt.constant(bc))), dc)
    num_d[0, -1] = num_d[2, 0] = 0          # (the ignored corners)
    np.testing.assert_allclose(gb.numpy(), num_b, atol=1e-5)
    np.testing.assert_allclose(gd.numpy(), num_d, atol=1e-5)


def test_tridiagonal_bad_input():
    d, b = gt.ones([3, 4]), gt.ones([4, 1])
    for call, err, match in [
            (lambda: gt.linalg.tridiagonal_solve(gt.ones([2, 4]), b), ValueError, "3 diagonals"),
            (lambda: gt.linalg.tridiagonal_solve(d, gt.ones([5, 1])), ValueError,
             "equal"),
            (lambda: gt.linalg.tridiagonal_solve(gt.ones([1, 3, 4]), gt.ones([2, 4, 1])),
             ValueError, "incompatible"),
            (lambda: gt.linalg.tridiagonal_solve(d, b, partial_pivoting=False,
                                                 perturb_singular=True), ValueError,
             "partial_pivoting"),
            (lambda: gt.linalg.tridiagonal_solve(d, b, diagonals_format="bad"), ValueError,
             "diagonals_format"),
            (lambda: gt.linalg.tridiagonal_solve([d[0], d[1]], b, diagonals_format="sequence"),
             ValueError, "length 3"),
            (lambda: gt.linalg.tridiagonal_solve(gt.ones([3, 4]), gt.ones([4, 1], gt.float64)),
             TypeError, "float64"),
            (lambda: gt.linalg.tridiagonal_solve(gt.ones([3, 4], gt.int32),
                                                 gt.ones([4, 1], gt.int32)), TypeError,
             "int32"),
            (lambda: gt.linalg.tridiagonal_matmul(gt.ones([1, 3, 4]), gt.ones([2, 4, 1])),
             gt.errors.InvalidArgumentError, "outer dimensions"),
            (lambda: gt.linalg.tridiagonal_matmul(d, gt.ones([4])),
             gt.errors.InvalidArgumentError, "rank"),
            (lambda: gt.linalg.tridiagonal_matmul(gt.ones([3, 3]), gt.ones([3, 3]),
                                                  diagonals_format="matrix") + 0
             if False else gt.linalg.tridiagonal_matmul(gt.ones([3, 4]), gt.ones([5, 1])),
             gt.errors.InvalidArgumentError, "do not fit")]:
        with pytest.raises(err, match=match):
            call()


# --- banded triangular systems -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_banded_triangular_solve_matches_tensorflow(device, dtype):
    rng = np.random.default_rng(103)
    lower_bands = rng.standard_normal((2, 2, 4))
    lower_bands[:, 0] += 3 * np.sign(lower_bands[:, 0])
    upper_bands = lower_bands[:, ::-1].copy()
    rhs, w = rng.standard_normal((1, 4, 1)), rng.standard_normal((2, 4, 1))
    for (lower, adjoint), (want_x, want_ga, want_gb) in R["band"].items():
        a = gt.constant((lower_bands if lower else upper_bands).astype(dtype))
        b = gt.constant(rhs.astype(dtype))
        with gt.GradientTape() as tape:
            tape.watch([a, b])
            x = gt.linalg.banded_triangular_solve(a, b, lower=lower, adjoint=adjoint)
            loss = gt.reduce_sum(x * gt.constant(w.astype(dtype)))
        ga, gb = tape.gradient(loss, [a, b])
        close(x, want_x, dtype)
        close(ga, want_ga, dtype)
        close(gb, want_gb, dtype)


def test_banded_triangular_solve_documented_examples_and_errors(device):
    x = gt.linalg.banded_triangular_solve(gt.constant([[2., 3, 4], [10000., 2, 3]]),
                                          gt.ones([3, 1]))
    np.testing.assert_array_equal(x.numpy(), [[0.5], [0.0], [0.25]])
    x = gt.linalg.banded_triangular_solve(gt.constant([[2., 3, 4, 5], [-1, -2, -3, -4]]),
                                          gt.ones([4, 1]), lower=False)
    np.testing.assert_allclose(x.numpy(), [[-4.0], [-1.5], [-0.6666667], [-0.25]], rtol=1e-6)
    # more bands than rows: the extra ones are not read
    x = gt.linalg.banded_triangular_solve(gt.ones([5, 3]), gt.ones([3, 1]))
    np.testing.assert_array_equal(x.numpy(), [[1.0], [0.0], [0.0]])
    # complex adjoints conjugate
    rng = np.random.default_rng(7)
    bands = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)) + [[3], [0]]
    dense = np.diag(bands[0]) + np.diag(bands[1, 1:], -1)
    rhs = rng.standard_normal((3, 2)) + 0j
    close(gt.linalg.banded_triangular_solve(bands, rhs, adjoint=True),
          np.linalg.solve(dense.conj().T, rhs))
    for call, err, match in [
            (lambda: gt.linalg.banded_triangular_solve(gt.ones([2, 3]), gt.ones([3])),
             gt.errors.InvalidArgumentError, "rank"),
            (lambda: gt.linalg.banded_triangular_solve(gt.ones([2, 3]), gt.ones([4, 1])),
             gt.errors.InvalidArgumentError, "do not fit"),
            (lambda: gt.linalg.banded_triangular_solve(gt.ones([2, 2, 3]), gt.ones([3, 3, 1])),
             gt.errors.InvalidArgumentError, "batch"),
            (lambda: gt.linalg.banded_triangular_solve(gt.ones([0, 3]), gt.ones([3, 1])),
             gt.errors.InvalidArgumentError, "empty"),
            (lambda: gt.linalg.banded_triangular_solve(gt.ones([2, 3], gt.float64),
                                                       gt.ones([3, 1])), TypeError, "float32")]:
        with pytest.raises(err, match=match):
            call()
    singular = gt.constant([[0., 3, 4], [1, 2, 3]])
    if device.host_visible:
        with pytest.raises(gt.errors.InvalidArgumentError, match="not invertible"):
            gt.linalg.banded_triangular_solve(singular, gt.ones([3, 1]))
    else:
        assert not np.isfinite(gt.linalg.banded_triangular_solve(
            singular, gt.ones([3, 1])).numpy()).all()


# --- matrix square root ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrtm_matches_tensorflow(device, dtype):
    rng = np.random.default_rng(104)
    x_np = rng.standard_normal((2, 3, 3)) * 0.5 + 2 * np.eye(3)
    w = rng.standard_normal((2, 3, 3))
    x = gt.constant(x_np.astype(dtype))
    with gt.GradientTape() as tape:
        tape.watch(x)
        r = gt.linalg.sqrtm(x)
        loss = gt.reduce_sum(r * gt.constant(w.astype(dtype)))
    assert r.dtype == dtype
    close(r, R["sqrtm"][0], dtype)
    close(tape.gradient(loss, x), R["sqrtm"][1], dtype)
    close(gt.linalg.sqrtm(gt.constant(np.array([[0., -2, 0.5], [2, 0.3, 0], [0.1, 0, 1]],
                                               dtype))), R["sqrtm_rot"], dtype)


def test_sqrtm_complex_no_root_and_errors(device):
    close(gt.linalg.sqrtm(gt.constant([[1 + 1j, 2], [0, 3j]])), R["sqrtm_c"])
    # a negative eigenvalue: no real principal root, nan as TF's
    for a in ([[-1., 0], [0, 1]], [[1., 2], [3, 4]]):
        assert np.isnan(gt.linalg.sqrtm(gt.constant(a)).numpy()).all()
    assert tuple(gt.linalg.sqrtm(gt.zeros([2, 0, 0])).shape) == (2, 0, 0)
    with pytest.raises(ValueError, match="square"):
        gt.linalg.sqrtm(gt.ones([2, 3]))


# --- general eigendecomposition ---------------------------------------------------------------

def _eig_loss(e, v):
    """Order- and phase-free: Re(e)^2 + Im(e) * sum_k k |v_k|^2 per eigenpair."""
    w = gt.reshape(gt.range(1.0, 4.0, dtype=gt.math.real(e).dtype), (3, 1))
    mag = gt.reduce_sum(w * gt.abs(v) ** 2, axis=-2)
    return gt.reduce_sum(gt.math.real(e) ** 2 + gt.math.imag(e) * mag)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_matches_tensorflow(device, dtype):
    rng = np.random.default_rng(105)
    a_np = rng.standard_normal((2, 3, 3))
    a = gt.constant(a_np.astype(dtype))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(a)
        e, v = gt.linalg.eig(a)
        loss = _eig_loss(e, v)
        loss2 = gt.reduce_sum(gt.math.real(gt.linalg.eigvals(a)) ** 3)
    ctype = np.complex64 if dtype == np.float32 else np.complex128
    assert e.dtype == ctype and v.dtype == ctype
    close(np.sort_complex(e.numpy()), R["eig"][0], dtype)
    close(np.matmul(a_np, v.numpy()), v.numpy() * e.numpy()[..., None, :], dtype)
    close(np.linalg.norm(v.numpy(), axis=-2), np.ones((2, 3)), dtype)
    close(tape.gradient(loss, a), R["eig"][1], dtype)
    close(tape.gradient(loss2, a), R["eig"][2], dtype)
    c_np = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    c = gt.constant(c_np)
    with gt.GradientTape() as tape:
        tape.watch(c)
        e, v = gt.linalg.eig(c)
        w = gt.reshape(gt.range(1.0, 4.0, dtype=gt.float64), (3, 1))
        loss = gt.reduce_sum(gt.abs(e) ** 2 + gt.math.imag(e) * gt.reduce_sum(
            w * gt.abs(v) ** 2, axis=-2))
    close(np.sort_complex(e.numpy()), R["eig_c"][0])
    close(tape.gradient(loss, c), R["eig_c"][1])
    with pytest.raises(ValueError, match="square"):
        gt.linalg.eig(gt.ones([2, 3]))


# --- segment products -----------------------------------------------------------------------------

SEG_X = np.array([[0.5, -1.2], [0.0, 0.8], [1.5, 0.0], [-0.7, 0.0], [1.1, 0.9], [0.0, -1.3],
                  [2.0, 0.6]])
SEG_IDS, SEG_SORTED = [0, 2, 0, 4, 2, -1, 2], [0, 0, 1, 3, 3, 3, 5]


@pytest.mark.parametrize("dtype", DTYPES)
def test_segment_prod_values_and_gradients_match_tensorflow(device, dtype):
    """Zeros included: TF's rule gives a segment's only zero the product of the others and
    a segment with two zeros nothing; an empty segment is 1; negative ids are dropped."""
    x = gt.constant(SEG_X.astype(dtype))
    wu = gt.constant((np.arange(10.).reshape(5, 2) / 10 - 0.3).astype(dtype))
    ws = gt.constant((np.arange(12.).reshape(6, 2) / 7 - 0.5).astype(dtype))
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as tape:
            tape.watch(x)
            u = gt.math.unsorted_segment_prod(x, SEG_IDS, 5)
            s = gt.math.segment_prod(x, SEG_SORTED)
            loss = gt.reduce_sum(u * wu) + gt.reduce_sum(s * ws)
        g = tape.gradient(loss, x)
        gg = gt.reduce_sum(g * g)
    want_u, want_s, want_g, want_h = R["seg"]
    close(u, want_u, dtype)
    close(s, want_s, dtype)
    close(g, want_g, dtype)
    # second order: TF's is nan where its rule divides by a zero; elsewhere the same
    h, want_h = outer.gradient(gg, x).numpy(), np.asarray(want_h, dtype=float)
    assert np.isfinite(h).all()
    finite = np.isfinite(want_h)
    close(h[finite], want_h[finite], dtype)


def test_segment_prod_dtypes_ranks_and_errors(device):
    out = gt.math.unsorted_segment_prod(gt.constant([[1, 2], [3, 4], [5, 6]]), [1, 1, 0], 3)
    assert out.dtype == gt.int32 and out.numpy().tolist() == R["seg_int"]
    x3 = np.arange(1., 13.).reshape(2, 3, 2) / 4
    close(gt.math.unsorted_segment_prod(x3, [[0, 1, 0], [3, -1, 1]], 4), R["seg_r2"])
    close(gt.math.unsorted_segment_prod(gt.constant(SEG_X[:4] + 1j * SEG_X[3::-1]),
                                        [1, 0, 1, 1], 2), R["seg_c"])
    assert gt.math.unsorted_segment_prod(gt.ones([0, 2]), gt.zeros([0], gt.int32), 2) \
        .numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(ValueError, match="prefix"):
        gt.math.unsorted_segment_prod(gt.ones([3, 2]), [0, 1], 2)
    with pytest.raises(gt.errors.InvalidArgumentError, match="sorted"):
        gt.math.segment_prod(gt.ones([3]), [1, 0, 1])
    if device.host_visible:
        with pytest.raises(gt.errors.InvalidArgumentError, match="out of range"):
            gt.math.unsorted_segment_prod(gt.ones([3]), [0, 5, 1], 2)
    from gradtape.keras import ops     # keras.ops.segment_prod: the same products
    close(ops.segment_prod(SEG_X, [0, 2, 0, 3, 2, 1, 2]),
          gt.math.unsorted_segment_prod(SEG_X, [0, 2, 0, 3, 2, 1, 2], 4))


def test_accumulate_n():
    a, b = gt.constant([[1, 2], [3, 4]]), gt.constant([[5, 0], [0, 6]])
    assert gt.math.accumulate_n([a, b, a]).numpy().tolist() == [[7, 4], [6, 14]]
    assert gt.math.accumulate_n([a, b, a], shape=[2, 2], tensor_dtype=gt.int32) \
        .numpy().tolist() == [[7, 4], [6, 14]]
    assert gt.math.accumulate_n([a]) is a
    assert gt.math.accumulate_n([[1, 2], [3, 4]]).numpy().tolist() == [4, 6]
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.math.accumulate_n([x, x * x])
    assert tape.gradient(y, x).numpy().tolist() == [3.0, 5.0]
    for args, err in [(([],), ValueError), ((a,), ValueError),
                      (([a, gt.constant([[1., 2], [3, 4]])],), ValueError),
                      (([a, gt.constant([1, 2])],), ValueError), (([a], [3]), ValueError),
                      (([a], None, gt.float32), TypeError)]:
        with pytest.raises(err):
            gt.math.accumulate_n(*args)


# --- tf.test.compute_gradient ---------------------------------------------------------------------

def test_compute_gradient_matches_tensorflow(device):
    cases = {
        "sq": (lambda x: x * x, [1.0], None),
        "two": (lambda a, b: gt.matmul(a, b) ** 2,
                [np.arange(6.).reshape(2, 3) / 5, np.ones((3, 2)) * 0.3], None),
        "c": (lambda z: z * z + gt.math.conj(z), [np.array([1 + 2j, 0.5 - 1j], np.complex64)],
              None),
        "c2r": (lambda z: gt.abs(z) ** 2, [np.array([1 + 2j, 0.5 - 1j])], None),
        "r2c": (lambda x: gt.complex(x, 2 * x) * gt.complex(x, x * x),
                [np.array([1., 2.], np.float32)], None),
        "delta": (lambda x: gt.exp(x), [np.array([[0.5, 1.0]])], 1e-3),
        "uncon": (lambda a, b: a * 2.0, [np.ones(2, np.float32), np.ones(3, np.float32)],
                  None),
    }
    for name, (f, xs, delta) in cases.items():
        got = gt.test.compute_gradient(f, xs) if delta is None else \
            gt.test.compute_gradient(f, xs, delta=delta)
        assert isinstance(got, tuple) and len(got) == 2
        for part, want_part in zip(got, R["cg"][name]):
            assert isinstance(part, tuple) and len(part) == len(want_part)
            for jac, (want, want_dtype) in zip(part, want_part):
                assert isinstance(jac, np.ndarray) and str(jac.dtype) == want_dtype, name
                assert jac.shape == np.shape(want), name
                np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-8, err_msg=name)


def test_compute_gradient_bad_input():
    with pytest.raises(ValueError, match="list or tuple"):
        gt.test.compute_gradient(lambda x: x, 1.0)
    with pytest.raises(AssertionError, match="int64 of argument 0"):
        gt.test.compute_gradient(lambda x: x, [np.array([1, 2])])
    with pytest.raises(AssertionError, match="int32 of y"):
        gt.test.compute_gradient(lambda x: gt.cast(x, gt.int32), [1.0])
    theoretical, numerical = gt.test.compute_gradient(lambda x: x[:0] * 2.0, [np.ones(2)])
    assert theoretical[0].shape == numerical[0].shape == (0, 2)


# --- keras.ops ------------------------------------------------------------------------------------

def test_keras_lu_factor_and_eig():
    from gradtape.keras import ops
    lu, piv = ops.lu_factor(np.array([[1., 2, 3], [-1, 5, 6], [4, 1, 1]], np.float32))
    close(lu, R["k_lu"][0], np.float32)
    assert piv.dtype == gt.int32 and piv.numpy().tolist() == R["k_lu"][1]
    assert ops.linalg.lu_factor is ops.lu_factor and ops.linalg.eig is ops.eig
    with pytest.raises(ValueError, match="only supported for square matrices"):
        ops.lu_factor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="rank >= 2"):
        ops.lu_factor(np.ones(3))
    e, v = ops.eig(np.array([[2., 1], [0, 3]]))
    assert e.dtype == gt.complex128 and v.dtype == gt.complex128
    np.testing.assert_allclose(np.sort_complex(e.numpy()), [2, 3])
    e, _ = ops.eig(np.array([[2., 1], [0, 3]], np.float32))
    assert e.dtype == gt.complex64
    with pytest.raises(ValueError, match="square"):
        ops.eig(np.ones((2, 3)))


# --- TensorFlow 2.21's values for the inputs above --------------------------------------------

nan = np.nan
R = {'lu_c_grad': [[[(-0.0517050539+0.1027833643j), (0.1215113536+0.21934829j),
         (-0.0989622459-0.2890107972j)],
        [(2.4084728295+1.3883140837j), (-0.226958213-0.0805619926j),
         (0.8895642763-0.6144155551j)],
        [(-1.3420348175-3.1749169942j), (0.2472573666-1.1890322533j),
         (-0.4244400558+1.9543746663j)]],
       [[(0.1686232018-0.2519399255j)], [(-1.3169224741+1.0054404458j)],
        [(0.0295110473-1.2334715535j)]]],
 'band': {(False, False): ([[[-0.011461741], [0.020619055], [0.1290476041], [0.0312338271]],
                            [[0.0109597605], [-0.0549341557], [-0.1040038177],
                             [0.0304529869]]],
                           [[[0.0053148912, -0.0082496825, -0.0022792851, 0.0],
                             [-0.002954447, -0.0013181233, -0.0094172348, 0.0121140393]],
                            [[-0.0028347231, 0.0120504204, -0.0155482456, 0.0],
                             [0.0005655477, 0.0063649555, 0.053100765, 0.0010428976]]],
                           [[[-0.3093681906], [0.1797926092], [0.5835404271],
                             [-0.4220961357]]]),
          (False, True): ([[[-0.0060760127], [0.0660173796], [0.1511232068], [0.0056651497]],
                           [[0.0048835297], [-0.0743087231], [-0.1107126484], [0.0513590384]]],
                          [[[0.0008412411, 0.0018106764, 0.0567472619, 0.0],
                            [-0.0017859229, -0.0091402925, 0.0041448967, 0.0021272824]],
                           [[-0.0001494781, 0.0357061109, 0.0068824272, 0.0],
                            [0.0002685345, 0.0022744871, 0.053198574, -0.0031927232]]],
                          [[[-0.3489178753], [0.169061437], [0.4530830871], [-0.3133385156]]]),
          (True, False): ([[[-0.0060760127], [0.0697481718], [0.1365488351], [0.0115083247]],
                           [[0.0048835297], [-0.0759678439], [-0.0849860779],
                            [-0.0087874678]]],
                          [[[-0.0012637493, -0.0091550854, 0.0022852742, 0.0043214138],
                            [0.0, 0.0007975322, 0.0011673018, 0.0512745374]],
                           [[8.61646e-05, 0.0176964919, 0.0440893365, 0.000546271],
                            [0.0, -0.0011376043, 0.0394108296, 0.0052831407]]],
                          [[[-0.2256338188], [0.3642062841], [0.5020470993],
                            [-0.3133385156]]]),
          (True, True): ([[[0.0114675135], [0.0462621363], [0.1281583154], [0.0312338271]],
                          [[-0.0086769771], [-0.0930224112], [-0.0852549726], [0.0304529869]]],
                         [[[0.002955935, -0.0102794866, -0.0114040837, 0.0121298988],
                           [0.0, 0.0119248055, -0.0284768882, -0.0027793216]],
                          [[-0.0004477511, 0.012408855, 0.0398806596, -0.0084705713],
                           [0.0, -0.0048001608, 0.0113727067, -0.0142453298]]],
                         [[[-0.3093681906], [0.3555972649], [0.5567653826],
                           [-0.1102053516]]])},
 'cg': {'c': ((([[3.0, -4.0, 0.0, 0.0], [4.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 2.0],
                 [0.0, 0.0, -2.0, 0.0]],
                'float32'),),
              (([[3.0, -4.0, 0.0, 0.0], [4.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 2.0],
                 [0.0, 0.0, -2.0, 0.0]],
                'float32'),)),
        'c2r': ((([[2.0, 4.0, 0.0, 0.0], [0.0, 0.0, 1.0, -2.0]], 'float64'),),
                (([[2.0, 4.0, 0.0, 0.0], [0.0, 0.0, 1.0, -2.0]], 'float64'),)),
        'delta': ((([[1.6487212707, 0.0], [0.0, 2.7182818285]], 'float64'),),
                  (([[1.6487215455, 0.0], [0.0, 2.7182822815]], 'float64'),)),
        'r2c': ((([[-4.0, 0.0], [7.0, 0.0], [0.0, -20.0], [0.0, 20.0]], 'float32'),),
                (([[-4.0, 0.0], [7.0, 0.0], [0.0, -20.0], [0.0, 20.0]], 'float32'),)),
        'sq': ((([[2.0]], 'float32'),), (([[2.0]], 'float32'),)),
        'two': ((([[0.108, 0.108, 0.108, 0.0, 0.0, 0.0], [0.108, 0.108, 0.108, 0.0, 0.0, 0.0],
                   [0.0, 0.0, 0.0, 0.432, 0.432, 0.432],
                   [0.0, 0.0, 0.0, 0.432, 0.432, 0.432]],
                  'float64'),
                 ([[0.0, 0.0, 0.072, 0.0, 0.144, 0.0], [0.0, 0.0, 0.0, 0.072, 0.0, 0.144],
                   [0.864, 0.0, 1.152, 0.0, 1.44, 0.0], [0.0, 0.864, 0.0, 1.152, 0.0, 1.44]],
                  'float64')),
                (([[0.108, 0.108, 0.108, 0.0, 0.0, 0.0], [0.108, 0.108, 0.108, 0.0, 0.0, 0.0],
                   [0.0, 0.0, 0.0, 0.432, 0.432, 0.432],
                   [0.0, 0.0, 0.0, 0.432, 0.432, 0.432]],
                  'float64'),
                 ([[0.0, 0.0, 0.072, 0.0, 0.144, 0.0], [0.0, 0.0, 0.0, 0.072, 0.0, 0.144],
                   [0.864, 0.0, 1.152, 0.0, 1.44, 0.0], [0.0, 0.864, 0.0, 1.152, 0.0, 1.44]],
                  'float64'))),
        'uncon': ((([[2.0, 0.0], [0.0, 2.0]], 'float32'),
                   ([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], 'float32')),
                  (([[2.0, 0.0], [0.0, 2.0]], 'float32'),
                   ([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], 'float32')))},
 'eig': ([[(-0.5461233942+0j), (-0.1848844272+0j), (2.0298083562+0j)],
          [(-1.3466311343-0.4722807285j), (-1.3466311343+0.4722807285j), (1.9246405516+0j)]],
         [[[-0.1269084154, -0.1067499622, 0.1169320212],
           [2.4984262204, -0.4783150652, 1.6267928312],
           [3.9760224058, 2.1240593028, 3.2028245502]],
          [[0.5047423824, 2.0274006154, -0.9256413206],
           [3.6700301797, -0.3666172957, -1.0622659917],
           [-3.5167282052, -2.2294579607, -1.6753685208]]],
         [[[0.160742383, 0.2347335983, 0.139509763],
           [3.7170439002, 2.5631121328, 3.5432688949],
           [13.1525376946, 4.0219346067, 10.6338104118]],
          [[8.2129614432, 1.7577849726, -0.8025441005],
           [3.1819680084, 7.4574802935, -0.9209996203],
           [-3.0490530311, -1.9329715451, 6.322774494]]]),
 'eig_c': ([(-2.6485558271-0.1307909641j), (0.9356021577+0.2067655384j),
            (1.4795150831+0.8158025101j)],
           [[(-4.2315126833+1.3511227424j), (-2.8648938848+0.5356532175j),
             (-1.8725387893-0.9564750557j)],
            [(-0.8328940466-0.8120921127j), (2.987831225+2.710691551j),
             (-0.3243503816+0.7338699896j)],
            [(-2.3295045304-0.9485580905j), (0.8044734823+0.5306655545j),
             (0.7768042856+3.6564690676j)]]),
 'k_lu': ([[4.0, 1.0, 1.0], [-0.25, 5.25, 6.25], [0.25, 0.3333333, 0.6666665]], [2, 1, 0]),
 'lu': [[[-1.1575496471, 0.2897558023, 0.7808540692],
         [-0.605983218, 0.8805606086, 1.2182470643],
         [-0.4699354763, -0.9371485645, 2.579638182]],
        [[1.1043472384, 2.2429723957, -0.6114931227],
         [0.0427503067, 1.6583469247, -1.3118383478],
         [0.2948116838, -0.814288111, -0.907760863]]],
 'lu_c': ([[(1.8128926971-0.9218244626j), (-0.5214839733-0.3397899534j),
            (1.7959349419-1.197717115j)],
           [(-0.0047892839-0.074892837j), (2.2727181368-1.1989095577j),
            (0.3286122038-0.8001248608j)],
           [(-0.1998159721+0.5094905112j), (0.0998309546+0.4752131413j),
            (0.5819493758+0.0519054183j)]],
          [2, 0, 1]),
 'lu_gb': [[[0.1332806725, 0.9312448937], [-0.0858475487, -0.1084293254],
            [0.3029359227, 0.0139237384]],
           [[-0.5110170621, -0.8476027318], [-0.0296108537, 0.8350803789],
            [-0.7786461347, 1.8399581513]]],
 'lu_glu': [[[2.9461737767, -1.8158996748, 0.6804295871],
             [-0.1005027992, -2.9541797702, -1.4252162119],
             [2.2658971041, 6.7145400973, 2.9904559745]],
            [[1.0478377611, 17.3541621402, 1.9054449734],
             [19.0087745681, 4.9407898323, 2.8243701959],
             [5.7560205611, 2.8363133969, 7.4516968966]]],
 'lu_inv': [[[-0.5595647228, 0.1272512339, 0.4035247717],
             [0.1315774929, -0.5363117641, 0.633036371],
             [0.4023168002, 0.3876512633, 0.3632868249]],
            [[0.575529574, -0.2802167473, 1.1599339157],
             [0.2614649272, -0.1065865413, -0.8714319476],
             [0.3631162828, -0.8970293215, -1.1016117137]]],
 'lu_solve': [[[-0.4852020163, 0.6237614366], [0.448452756, 0.0636159341],
               [-0.277688205, -1.5719962536]],
              [[0.7066021992, -0.1870932371], [-0.0230236074, -0.1491255315],
               [-1.2860535616, 0.101507595]]],
 'lu_solve_bcast': [[[[-0.4852020163, 0.6237614366], [0.448452756, 0.0636159341],
                      [-0.277688205, -1.5719962536]]],
                    [[[-0.5202108153, 0.3018943161], [-0.5479032327, 0.163732716],
                      [1.3724639688, -0.3856756388]]]],
 'lu_ties': ([[1.0, 2.0, 3.0], [-1.0, 7.0, 9.0], [1.0, -0.1428571429, -0.7142857143]],
             [0, 1, 2]),
 'normalize': [([[-0.3249477893, -0.8367334816, 0.2481059908],
                 [0.3060888399, -0.1273577455, 0.1510597867]],
                [[2.4316290989]],
                [[0.2713116267, -0.6763538789, 0.6209206799],
                 [0.6898408702, -0.5244869394, 0.5973129787]]),
               ([[-0.2304942016, -0.59351755, 0.1759882484],
                 [0.5236706639, -0.2178894048, 0.2584399314]],
                [[3.4280797287], [1.4213027027]],
                [[-0.7633974686, -0.9528902759, 1.4687583422],
                 [0.9228120747, -1.0465141298, 1.1171882218]]),
               ([[-1.0, -1.0, 1.0], [0.9419631399, -0.1522082578, 0.6088518305]],
                [[0.7901525, 2.0346254818, 0.6033017469]],
                [[-0.1801145051, -0.9353973993, 0.0271147818],
                 [0.8704008258, -0.4244355836, 1.5979014425]]),
               ([[-0.3779761691, -0.9732804049, 0.2885945221],
                 [0.9430750531, -0.3923955954, 0.465422772]],
                [[2.0904823231], [0.789220887]],
                [[0.5745315111, -1.1080837573, 0.4805462372],
                 [0.1424067184, -0.9679918048, 1.043919819]]),
               ([[-0.3483873396, -0.8970898134, 0.2660026901],
                 [0.3281680324, -0.1365444776, 0.1619562248]],
                [[2.2680287429]],
                [[0.3027290044, -0.7761876411, 0.6909376969],
                 [0.2759404269, -0.4559753408, 0.4479599266]]),
               ([[-0.3249477893, -0.8367334816, 0.2481059908],
                 [0.3060888399, -0.1273577455, 0.1510597867]],
                [[2.4316290989]],
                [[0.2713116267, -0.6763538789, 0.6209206799],
                 [0.6898408702, -0.5244869394, 0.5973129787]]),
               ([[-0.3370508725, -0.8678986574, 0.257347006],
                 [0.3174894982, -0.1321013426, 0.1566861957]],
                [[2.3443122817]],
                [[0.7295931966, -0.9022180371, 0.3018535655],
                 [0.2933693578, -1.7230836312, 0.4112151522]])],
 'normalize_c': ([[(-0.3249477893+0.3060888399j), (-0.8367334816-0.1273577455j),
                   (0.2481059908+0.1510597867j)],
                  [(0.3060888399-0.3249477893j), (-0.1273577455-0.8367334816j),
                   (0.1510597867+0.2481059908j)]],
                 [[(2.4316290989+0j)], [(2.4316290989+0j)]]),
 'perm': [[0, 2, 1], [0, 1, 2]],
 'rank': [3, 1, 0],
 'rank_tol': [3, 1, 0],
 'rank_wide': [3, 1, 0],
 'seg': ([[0.75, -0.0], [1.0, 1.0], [0.0, 0.432], [1.0, 1.0], [-0.7, 0.0]],
         [[0.0, -0.96], [1.5, 0.0], [1.0, 1.0], [-0.0, -0.0], [1.0, 1.0], [2.0, 0.6]],
         [[-0.45, -0.2857142857], [-0.03, 0.5365714286], [-0.3642857143, 0.1685714286],
          [0.5, 0.015], [0.0, 0.096], [-0.275, 0.0], [0.9285714286, 1.2154285714]],
         [[nan, nan], [nan, 0.6646759184], [nan, nan], [-0.2160714286, nan],
          [nan, 0.4982142857], [nan, 0.0135], [nan, 0.2238857143]]),
 'seg_c': [[1.5j, (0.8+0j)], [1.11j, (-1.152+0j)]],
 'seg_int': [[5, 6], [3, 8], [1, 1]],
 'seg_r2': [[0.3125, 0.75], [2.0625, 3.0], [1.0, 1.0], [1.75, 2.0]],
 'sqrtm': ([[[1.5237542219, 0.0930028986, -0.1076306598],
             [-0.0029725332, 1.4146342759, 0.0101722329],
             [0.3762138724, -0.0633798223, 1.376668487]],
            [[1.3258314852, 0.1892291207, -0.0832101472],
             [-0.0076125785, 1.5497837451, 0.1269654546],
             [-0.1750748403, 0.3142155068, 1.4437004936]]],
           [[[0.2652462688, 0.1106874361, 0.5230446198],
             [-0.1034373344, -0.2241296309, 0.1458584927],
             [0.5002088205, 0.0014702499, 0.2827866937]],
            [[0.6357039066, -0.495422304, 0.5857654573],
             [0.3917786992, -0.1506352885, 0.0144955942],
             [-0.1885252782, 0.2850852605, -0.2344940459]]]),
 'sqrtm_c': [[(1.0986841135+0.4550898606j), (0.5652997055-0.4087106107j)],
             [0j, (1.2247448714+1.2247448714j)]],
 'sqrtm_rot': [[0.9619293903, -0.9664252527, 0.2082020293],
               [0.9664252527, 1.1116652188, -0.0954408111],
               [0.0416404059, 0.0190881622, 0.9965702046]],
 'tri': {(False, 'compact'): ([[[-0.8149667872, -1.0656385689], [0.7262163055, 0.0204714317],
                                [1.0502903784, 1.0795459326], [-1.5124647549, -0.7089387574]],
                               [[0.1881686469, 0.0790761919], [0.9404369171, 0.1699733033],
                                [0.4308077855, -0.5799607748],
                                [-1.5131069855, 0.1887632759]]],
                              [[[0.4932570866, -0.0497658855, 0.414067472, -0.0],
                                [-0.8626840126, 0.0066213166, -0.4087548145, -0.12351434],
                                [-0.0, 0.0515003507, -0.1327775674, 0.6418295663]],
                               [[-0.5669020448, 0.1213555897, -1.10761925, -0.0],
                                [-0.1220135517, 0.1910881685, 0.1503012018, -0.0443660741],
                                [-0.0, 0.0359172153, 0.7785304422, -0.0490257792]]],
                              [[[-0.6708571292, -0.2964961504], [-0.0107107899, 0.056519434],
                                [0.1770160152, 0.2064169669], [0.362175619, -0.9468973051]],
                               [[0.5683807, 0.1904760978], [-0.2124827918, 0.0514109746],
                                [-0.7711471963, -0.3136677892],
                                [-0.043938561, -0.1171714645]]]),
         (True, 'compact'): ([[[-0.8149667872, -1.0656385689], [0.7262163055, 0.0204714317],
                               [1.0502903784, 1.0795459326], [-1.5124647549, -0.7089387574]],
                              [[0.1881686469, 0.0790761919], [0.9404369171, 0.1699733033],
                               [0.4308077855, -0.5799607748], [-1.5131069855, 0.1887632759]]],
                             [[[0.4932570866, -0.0497658855, 0.414067472, -0.0],
                               [-0.8626840126, 0.0066213166, -0.4087548145, -0.12351434],
                               [-0.0, 0.0515003507, -0.1327775674, 0.6418295663]],
                              [[-0.5669020448, 0.1213555897, -1.10761925, -0.0],
                               [-0.1220135517, 0.1910881685, 0.1503012018, -0.0443660741],
                               [-0.0, 0.0359172153, 0.7785304422, -0.0490257792]]],
                             [[[-0.6708571292, -0.2964961504], [-0.0107107899, 0.056519434],
                               [0.1770160152, 0.2064169669], [0.362175619, -0.9468973051]],
                              [[0.5683807, 0.1904760978], [-0.2124827918, 0.0514109746],
                               [-0.7711471963, -0.3136677892],
                               [-0.043938561, -0.1171714645]]]),
         (True, 'matrix'): ([[[-3.1466287871, 0.4595318185], [0.9333163561, -0.8463330828],
                              [-0.5713099836, -1.0752239545], [-0.6863928313, -0.8153467167]],
                             [[-1.4977727389, -3.9109979965], [1.6818600982, 11.0860183094],
                              [0.1718415076, 3.01880394], [-1.4439378263, -8.1163227458]]],
                            [[[-2.4968500542, 0.5467114367, 0.0, 0.0],
                              [-5.5134846533, 1.988921676, -0.424063277, 0.0],
                              [0.0, -1.9989459251, -0.3496595388, 0.0503871477],
                              [0.0, 0.0, 0.6470457512, 0.3296559093]],
                             [[0.3170695686, 0.0872517566, 0.0, 0.0],
                              [5.066746972, -4.6473180038, -0.1812045713, 0.0],
                              [0.0, 8.2216792785, 1.6901971227, -6.4269192701],
                              [0.0, 0.0, -3.3081381911, 6.903810786]]],
                            [[[-0.8333762732, -0.2730512071], [-1.6794642858, 0.4979720126],
                              [1.2463570671, -0.9874368683], [-0.6359520614, 0.9396847129]],
                             [[0.3846055928, -0.0662189558], [3.7893659776, -0.1556794679],
                              [-1.9173265569, -0.4507483307],
                              [-2.027048353, 1.2112311063]]])},
 'tri_T': [[[-0.8149667872, -1.0656385689], [0.7262163055, 0.0204714317],
            [1.0502903784, 1.0795459326], [-1.5124647549, -0.7089387574]],
           [[0.1881686469, 0.0790761919], [0.9404369171, 0.1699733033],
            [0.4308077855, -0.5799607748], [-1.5131069855, 0.1887632759]]],
 'tri_c': [[(0.0493506703+0.4159591899j), (-0.5453078338+0.4726585969j)],
           [(0.378628982-0.7179975001j), (-0.0054239333-0.0862790235j)],
           [(0.2246242429-0.6489773915j), (0.7626732284-0.2139503893j)],
           [(-0.8618260363+1.3975800612j), (-0.6619755775+0.2376085681j)]],
 'tri_c_conj': [[(-0.2891327201+0.4432631137j), (-0.1652298032+0.5031311785j)],
                [(0.820980356+0.0893369288j), (0.1737343424+0.0660648121j)],
                [(0.6175118452-0.2574992764j), (0.0066691007-0.6923254625j)],
                [(-1.7047185793-0.0182771369j), (-0.961703066+0.3394631529j)]],
 'tri_pert': [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]],
 'tri_pert1': ([[8.507059173023462e+37, 8.507059173023462e+37]],),
 'tri_pertR': ([[[-2.8881863286, -2.2508573792], [-0.5773801455, -1.2379829228],
                 [-3.1452329801, -0.2146396291], [-0.3629553662, -0.1067240855],
                 [0.4312646757, -0.3120201609]],
                [[-0.6251121772, 0.0535457142], [0.484149927, 1.0058702773],
                 [1.4000174639, -0.8267977217], [0.0377812937, 1.9932948027],
                 [-1.3138402656, 0.6185154267]]],
               [[[[20.345670134, 73.8152016061, -12.9626397559, -3.5152965437, -0.0],
                  [64.1982555969, 36.6556003367, -100.5261422452, 6.241090489, -1.0601919626],
                  [-0.0, 107.3730384894, -38.3739521605, 47.7706339931, -0.0733035085]],
                 [[5.4560960079, -4.1628031575, -1.3524622203, -0.2429075711, -0.0],
                  [-4.8195345337, -2.7715887202, 2.3500008831, -3.8761322834, 9.5368764617],
                  [-0.0, 2.1841558784, -0.0947590456, 0.5826702489, 13.3013867987]]],
                [[[14.7988806639, 9.5325145805], [22.1533924469, 19.2770602413],
                  [-30.8272538418, -16.6197024781], [14.5817132022, 8.8881476865],
                  [0.5667897478, -2.6144322321]],
                 [[-7.8508182017, -1.6454636209], [3.5823476335, 1.0311422838],
                  [-1.2637055856, 0.7024583871], [0.7241059597, 1.9308607127],
                  [4.0808920716, -6.7504155243]]]]),
 'tri_v': [[-0.8149667872, 0.7262163055, 1.0502903784, -1.5124647549],
           [0.1881686469, 0.9404369171, 0.4308077855, -1.5131069855]],
 'trimm': ([[[-1.3737128501, -5.6614560338], [13.6189890233, -5.9486944946],
             [2.7034340425, -6.0434565614], [0.4263854285, -2.8834680125]],
            [[0.263593857, -1.1721294713], [6.5051786744, 2.0794892761],
             [1.8655750519, -5.7436712794], [1.6769130048, -2.181543978]]],
           [[[-2.8758009717, 2.0998224456], [0.8122348332, -4.5478094091],
             [0.8165039745, -0.5320073111], [1.0087048753, 5.4677663111]],
            [[-2.7841274298, -0.0690149169], [-0.5852516971, -0.8804687496],
             [0.2177062858, -3.6647593676], [-0.4741904216, 0.1216449341]]],
           [[[-1.0377633723, -0.8038301371, -3.4173662847, 0.0],
             [1.1535785953, -0.9829479661, 4.2172885101, -0.1539874913],
             [0.0, -1.4099017027, 4.3972101905, 0.8181007337]],
            [[-0.785898855, -0.4369955372, 1.972557689, 0.0],
             [-1.7845976116, -0.1686998097, -0.5837093815, 1.7331411203],
             [0.0, -1.4287090687, -0.1779062887, -0.6249668001]]],
           [[[2.8433263117, -5.931873792], [17.8959544044, -33.9510082365],
             [-3.2305891795, -29.5985578506], [6.5207932486, -2.2421455858]],
            [[6.0999223123, -1.925845409], [-1.0771694456, -10.2679509154],
             [-5.8228123651, 10.0214409824], [-3.0503747405, -8.9701685142]]],
           [[[-10.8675819763, -8.5031109984, 0.0, 0.0],
             [-2.359616516, 18.2280952409, 17.9996638306, 0.0],
             [0.0, 2.1573841272, 1.7556617477, -0.6002213849],
             [0.0, 0.0, -22.6036790379, 22.6484906176]],
            [[-8.4484028728, -3.1776895681, 0.0, 0.0],
             [-2.2109653523, 0.3991693212, -0.9172661259, 0.0],
             [0.0, 4.7713324652, -2.1545345922, 19.672116706],
             [0.0, 0.0, -0.2211866979, -0.7094320198]]])}
