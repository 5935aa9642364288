"""Op values, TensorFlow's conventions at special points, the Tensor API and error messages."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradtape as gt
from gradtape.registry import Op, apply


def grad(f, *xs):
    xs = [gt.constant(x) if not isinstance(x, gt.Tensor) else x for x in xs]
    with gt.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    gs = tape.gradient(y, xs)
    return [None if g is None else g.numpy() for g in gs]


# --- Tensor API ---------------------------------------------------------------------------

def test_repr_and_properties():
    x = gt.constant([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2) and x.shape.as_list() == [2, 2] and x.ndim == 2
    assert x.dtype == gt.float32 and x.dtype == np.float32 and x.device == "cpu:0"
    assert str(gt.constant(6.0)) == "gt.Tensor(6.0, shape=(), dtype=float32, device=cpu:0)"
    assert repr(gt.constant(6.0)) == "<gt.Tensor: shape=(), dtype=float32, device=cpu:0, numpy=6.0>"
    # TF's layouts: str puts a multi-line value on lines of its own, repr shows NumPy's repr
    assert str(x) == ("gt.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32, "
                      "device=cpu:0)")
    assert repr(gt.constant([1, 2])) == ("<gt.Tensor: shape=(2,), dtype=int32, device=cpu:0, "
                                         "numpy=array([1, 2], dtype=int32)>")
    assert repr(x).endswith("numpy=\narray([[1., 2.],\n       [3., 4.]], dtype=float32)>")
    v = gt.Variable(1.0, name="w")
    assert v.name == "w:0" and "gt.Variable 'w:0'" in repr(v) and repr(v).endswith("numpy=1.0>")
    assert str(gt.float32) == "<dtype: 'float32'>" and repr(gt.float32) == "gt.float32"


def test_format_specs_and_numpy_scalars_as_tf():
    loss, n = gt.constant(1.23456), gt.constant(3)
    assert f"{loss:.3f} {n:d} {loss} {n:>3}" == "1.235 3 1.23456   3"
    assert f"{gt.constant([1.5, 2.0])}" == "[1.5 2. ]"
    assert type(loss.numpy()) is np.float32 and type(n.numpy()) is np.int32
    assert type(gt.constant([1.0]).numpy()) is np.ndarray
    with gt.device("strict:0"):
        s = gt.constant(np.float32(2.5))
    assert type(s.numpy()) is np.float32 and f"{s:.1f}" == "2.5"


def test_tensor_shapes_behave_as_tf():
    s = gt.TensorShape([None, 3])
    assert str(s) == "(None, 3)" and repr(s) == "TensorShape([None, 3])"
    assert str(gt.TensorShape([4])) == "(4,)"
    assert not s.is_fully_defined() and s.num_elements() is None
    assert gt.ones((2, 3)).shape == [2, 3] and gt.ones((2, 3)).shape != [3, 2]
    shape = gt.ones((2, 3, 4)).shape
    assert shape[1:].as_list() == [3, 4] and (shape[1:] + [5]).as_list() == [3, 4, 5]
    assert s.is_compatible_with([7, 3]) and not s.is_compatible_with([7, 4])
    assert s.merge_with([7, None]).as_list() == [7, 3]
    with pytest.raises(ValueError, match="not compatible"):
        s.merge_with([7, 4])
    unknown = gt.TensorShape(None)
    assert str(unknown) == "<unknown>" and unknown.rank is None
    assert unknown.is_compatible_with([1, 2]) and not unknown.is_fully_defined()
    with pytest.raises(ValueError, match="unknown rank"):
        len(unknown)


def test_numpy_functions_give_arrays_and_operators_give_tensors():
    t = gt.constant([0.0, 1.0])
    e = np.exp(t)
    assert type(e) is np.ndarray and np.allclose(e, [1.0, np.e])
    assert type(np.ones(2) + t) is gt.Tensor
    assert np.sum(gt.constant([[1.0, 2.0]]), axis=0).tolist() == [1.0, 2.0]
    with gt.device("strict:0"):
        s = gt.constant(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array implicitly"):
        np.exp(s)


def test_bitwise_operators_on_integer_tensors_logical_on_bools():
    a = gt.constant([6, 5])
    assert (a & 3).numpy().tolist() == [2, 1] and (a | gt.constant([1, 2])).numpy().tolist() == [7, 7]
    assert (a ^ 3).numpy().tolist() == [5, 6] and (~a).numpy().tolist() == [-7, -6]
    assert (3 & a).numpy().tolist() == [2, 1]
    b = gt.constant([True, False])
    assert (b & True).numpy().tolist() == [True, False] and (~b).numpy().tolist() == [False, True]
    with pytest.raises(TypeError, match="logical_and: expected bool tensors, got float32"):
        gt.constant([1.0]) & 1
    with pytest.raises(TypeError, match="bitwise_and: expected integer tensors, got bool"):
        gt.bitwise.bitwise_and(b, b)
    assert gt.bitwise.left_shift(a, 1).numpy().tolist() == [12, 10]
    assert gt.bitwise.right_shift(a, gt.constant([1, 2])).numpy().tolist() == [3, 1]


def test_lists_index_one_axis_each_and_pack_tensors_as_tf():
    x = gt.reshape(gt.range(6.0), (2, 3))
    assert x[[1, 2]].numpy() == 5.0                      # x[[1, 2]] is x[1, 2]
    f64 = gt.constant(1.0, gt.float64)
    assert gt.convert_to_tensor([f64, 2.0]).dtype == gt.float64
    assert gt.constant([np.float64(1.0), np.float64(2.0)]).dtype == gt.float64
    assert gt.constant([1.0, 2.0]).dtype == gt.float32
    assert gt.convert_to_tensor([gt.constant(1, gt.int64)]).dtype == gt.int64
    with pytest.raises(TypeError, match="cannot pack tensors of dtypes"):
        gt.convert_to_tensor([f64, gt.constant(1.0)])
    w = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        y = gt.convert_to_tensor([[w, 3.0], [w * w, 1.0]])
        z = gt.reduce_sum(y * y)
    assert y.shape == [2, 2] and float(tape.gradient(z, w)) == 2 * 2.0 + 4 * 2.0 ** 3


def test_default_dtypes_as_tf():
    assert gt.constant(1.0).dtype == gt.float32
    assert gt.constant(1).dtype == gt.int32
    assert gt.constant([1, 2.5]).dtype == gt.float32
    assert gt.constant(True).dtype == gt.bool
    assert gt.constant(np.float64(1.0)).dtype == gt.float64
    assert gt.constant(np.array([1, 2], np.int64)).dtype == gt.int64
    assert gt.constant(2 ** 40).dtype == gt.int64
    assert gt.constant([1, 2], dtype=gt.float16).dtype == gt.float16
    assert gt.constant(0.5, shape=[2, 3]).numpy().tolist() == [[0.5] * 3] * 2


def test_operators_and_scalars():
    x = gt.constant([1.0, 2.0, 4.0])
    np.testing.assert_allclose((x + 1).numpy(), [2, 3, 5])
    np.testing.assert_allclose((2 - x).numpy(), [1, 0, -2])
    np.testing.assert_allclose((x * np.float64(2)).numpy(), [2, 4, 8])
    assert (x * np.float64(2)).dtype == gt.float32
    np.testing.assert_allclose((1 / x).numpy(), [1, 0.5, 0.25])
    np.testing.assert_allclose((x ** 2).numpy(), [1, 4, 16])
    np.testing.assert_allclose((2 ** x).numpy(), [2, 4, 16])
    np.testing.assert_allclose((x // 1.5).numpy(), [0, 1, 2])
    np.testing.assert_allclose((x % 1.5).numpy(), [1, 0.5, 1])
    np.testing.assert_allclose((-x).numpy(), [-1, -2, -4])
    np.testing.assert_allclose(abs(-x).numpy(), [1, 2, 4])
    assert (x > 1.5).numpy().tolist() == [False, True, True]
    assert (x == 2.0).numpy().tolist() == [False, True, False]
    assert ((x > 1.5) & (x < 3)).numpy().tolist() == [False, True, False]
    m = gt.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose((m @ m).numpy(), [[7, 10], [15, 22]])
    arr = np.array([1.0, 1.0, 1.0])
    out = arr + x  # NumPy defers to the tensor
    assert isinstance(out, gt.Tensor) and out.dtype == gt.float32


def test_numpy_array_operand_takes_tensor_dtype():
    x = gt.constant([1.0, 2.0])
    y = x * np.array([2.0, 3.0])  # float64 array converted to float32, as TF
    assert y.dtype == gt.float32
    np.testing.assert_allclose(y.numpy(), [2, 6])


def test_scalar_conversions():
    x = gt.constant([[2.5]])
    assert float(x) == 2.5 and int(gt.constant(3)) == 3 and bool(gt.constant(True))
    with pytest.raises(TypeError, match="one-element"):
        float(gt.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(gt.constant([1.0, 2.0]))
    assert len(gt.constant([1, 2, 3])) == 3
    with pytest.raises(TypeError):
        len(gt.constant(1.0))
    assert [t.numpy().tolist() for t in gt.constant([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="unhashable"):
        hash(gt.constant(1.0))
    assert {gt.constant(1.0).ref()}


def test_indexing():
    x = gt.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    n = x.numpy()
    for key in [1, (0, 2), (slice(None), 1), (Ellipsis, 2), (None, 1, slice(1, None, 2)),
                (slice(None, None, -1),), (1, [0, 2, 2]), (n > 10,)]:
        np.testing.assert_array_equal(x[key].numpy(), n[key])
    idx = gt.constant([2, 0])
    np.testing.assert_array_equal(x[:, idx].numpy(), n[:, [2, 0]])
    with pytest.raises(IndexError, match="getitem"):
        x[5]


def test_getitem_gradient_with_repeats():
    g, = grad(lambda x: gt.reduce_sum(x[gt.constant([0, 0, 2])]), np.ones(4, np.float32))
    np.testing.assert_allclose(g, [2, 0, 1, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_against_numpy(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(dtype)
    b = rng.uniform(0.5, 2, (3, 4)).astype(dtype)
    A, B = gt.constant(a), gt.constant(b)
    pairs = [
        (gt.exp(A), np.exp(a)), (gt.math.log(B), np.log(b)), (gt.sqrt(B), np.sqrt(b)),
        (gt.tanh(A), np.tanh(a)), (gt.sigmoid(A), 1 / (1 + np.exp(-a))),
        (gt.math.softplus(A), np.log1p(np.exp(a))), (gt.math.rsqrt(B), 1 / np.sqrt(b)),
        (gt.math.log1p(B), np.log1p(b)), (gt.math.expm1(A), np.expm1(a)),
        (gt.math.erf(A), np.vectorize(__import__("math").erf)(a)),
        (gt.pow(B, A), b ** a), (gt.math.squared_difference(A, B), (a - b) ** 2),
        (gt.reduce_logsumexp(A, axis=1), np.log(np.exp(a).sum(1))),
        (gt.reduce_prod(A, axis=0), a.prod(0)), (gt.math.reduce_std(A), a.std()),
        (gt.math.reduce_variance(A, axis=1), a.var(1)), (gt.cumsum(A, axis=1), a.cumsum(1)),
        (gt.cumsum(A, axis=1, exclusive=True, reverse=True),
         np.flip(np.cumsum(np.flip(a, 1), 1), 1) - a),
        (gt.norm(A), np.linalg.norm(a)), (gt.norm(A, ord=1, axis=1), np.abs(a).sum(1)),
        (gt.matmul(A, B, transpose_b=True), a @ b.T),
        (gt.einsum("ij,kj->ik", A, B), a @ b.T),
        (gt.tensordot(A, B, axes=[[1], [1]]), a @ b.T),
        (gt.tile(A, [2, 1]), np.tile(a, (2, 1))),
        (gt.pad(A, [[1, 0], [0, 2]], mode="REFLECT"), np.pad(a, [[1, 0], [0, 2]], "reflect")),
        (gt.pad(A, [[1, 1], [2, 0]], mode="SYMMETRIC"),
         np.pad(a, [[1, 1], [2, 0]], "symmetric")),
        (gt.pad(A, [[1, 1], [2, 0]], constant_values=3), np.pad(a, [[1, 1], [2, 0]],
                                                                 constant_values=3)),
        (gt.gather(A, [2, 0], axis=1), a[:, [2, 0]]),
        (gt.gather(A, [[1, 0], [2, 2], [3, 3]], axis=1, batch_dims=1),
         np.take_along_axis(a, np.array([[1, 0], [2, 2], [3, 3]]), 1)),
        (gt.concat([A, B], 0), np.concatenate([a, b], 0)), (gt.stack([A, B], 1),
                                                           np.stack([a, b], 1)),
        (gt.clip_by_value(A, -0.5, 0.5), np.clip(a, -0.5, 0.5)),
    ]
    for got, want in pairs:
        assert got.dtype == gt.as_dtype(dtype)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6)


def test_creation_ops():
    assert gt.range(5).numpy().tolist() == [0, 1, 2, 3, 4] and gt.range(5).dtype == gt.int32
    assert gt.range(1.0, 2.0, 0.5).dtype == gt.float32
    # as TF: each argument's dtype, the widest of int32 < int64 < float16 < float32 < float64
    assert gt.range(gt.constant(np.int64(4))).dtype == gt.int64
    got = gt.range(0, 1, np.float32(0.25))
    assert got.dtype == gt.float32 and got.numpy().tolist() == [0, 0.25, 0.5, 0.75]
    assert gt.range(np.float64(2.0)).dtype == gt.float64
    assert gt.range(5, 1, -2).numpy().tolist() == [5, 3]
    with pytest.raises(TypeError, match="range: arguments must be .* got uint8"):
        gt.range(np.uint8(3))
    assert gt.linspace(np.float64(0.0), 1.0, 3).dtype == gt.float64
    for name in ("cpu", "strict:0"):
        with gt.device(name), pytest.raises(ValueError, match="linspace: axis 1 is out of range"):
            gt.linspace(0.0, 1.0, 3, axis=1)
    np.testing.assert_allclose(gt.linspace(0.0, 1.0, 5).numpy(), [0, .25, .5, .75, 1])
    np.testing.assert_array_equal(gt.eye(2, 3).numpy(), np.eye(2, 3))
    assert gt.fill([2, 2], 7).numpy().tolist() == [[7, 7], [7, 7]]
    assert gt.zeros([2]).dtype == gt.float32 and gt.ones([1], gt.int64).dtype == gt.int64
    oh = gt.one_hot(gt.constant([0, 2, 5]), 3)
    np.testing.assert_array_equal(oh.numpy(), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    assert gt.argmax(gt.constant([[1.0, 3.0, 2.0]]), axis=1).numpy().tolist() == [1]
    assert gt.argmax(gt.constant([1.0, 3.0])).dtype == gt.int64
    s, = gt.unstack(gt.constant([[1.0, 2.0]]))
    assert s.numpy().tolist() == [1.0, 2.0]
    parts = gt.split(gt.constant(np.arange(6.0)), [1, -1])
    assert [p.numpy().tolist() for p in parts] == [[0.0], [1.0, 2.0, 3.0, 4.0, 5.0]]


# --- TF conventions at special points --------------------------------------------------------

def test_ties_maximum_minimum_first_argument():
    gx, gy = grad(lambda x, y: gt.maximum(x, y), np.float32(1.0), np.float32(1.0))
    assert (gx, gy) == (1.0, 0.0)
    gx, gy = grad(lambda x, y: gt.minimum(x, y), np.float32(1.0), np.float32(1.0))
    assert (gx, gy) == (1.0, 0.0)
    g, = grad(lambda x: gt.maximum(x, 0.0), np.float32(0.0))
    assert g == 1.0
    g, = grad(lambda x: gt.maximum(0.0, x), np.float32(0.0))
    assert g == 0.0


def test_reduce_max_splits_ties():
    g, = grad(lambda x: gt.reduce_max(x), np.array([1.0, 3.0, 3.0, 2.0], np.float32))
    np.testing.assert_allclose(g, [0, 0.5, 0.5, 0])
    g, = grad(lambda x: gt.reduce_min(x, axis=1),
              np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 3.0]], np.float32))
    np.testing.assert_allclose(g, [[1 / 3] * 3, [1, 0, 0]], rtol=1e-6)


def test_kinks():
    g, = grad(lambda x: gt.abs(x), np.float32(0.0))
    assert g == 0.0
    g, = grad(lambda x: gt.clip_by_value(x, 0.0, 1.0), np.array([0.0, 1.0, 2.0], np.float32))
    np.testing.assert_allclose(g, [1, 1, 0])


def test_sqrt_at_zero():
    g, = grad(lambda x: gt.sqrt(x), np.float32(0.0))
    assert np.isinf(g)
    g, = grad(lambda x: gt.where(x > 0, gt.sqrt(x), 0.0), np.float32(0.0))
    assert g == 0.0
    g, = grad(lambda x: gt.where(x > 0, gt.math.log(x), 0.0), np.float32(0.0))
    assert np.isnan(g)  # log has no guard, as in TF


def test_pow_gradient_of_exponent_at_nonpositive_base():
    gx, gy = grad(lambda x, y: gt.pow(x, y), np.array([0.0, -2.0, 2.0], np.float32),
                  np.array([2.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(gx, [0, -4, 12])
    np.testing.assert_allclose(gy, [0, 0, 8 * np.log(2)], rtol=1e-6)


def test_reduce_prod_with_zeros():
    g, = grad(lambda x: gt.reduce_prod(x), np.array([2.0, 0.0, 3.0], np.float32))
    np.testing.assert_allclose(g, [0, 6, 0])
    g, = grad(lambda x: gt.reduce_prod(x), np.array([0.0, 0.0, 3.0], np.float32))
    np.testing.assert_allclose(g, [0, 0, 0])
    g, = grad(lambda x: gt.reduce_prod(x, axis=1),
              np.array([[2.0, 4.0], [0.0, 5.0]], np.float32))
    np.testing.assert_allclose(g, [[4, 2], [5, 0]])


def test_large_inputs_stay_finite():
    g, = grad(lambda x: gt.tanh(x) + gt.sigmoid(x) + gt.math.softplus(x),
              np.array([-100.0, 100.0], np.float32))
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, [0, 1], atol=1e-6)
    assert np.isfinite(gt.reduce_logsumexp(gt.constant([1e4, 1e4])).numpy())


def test_floor_and_friends_not_differentiable():
    x = gt.constant([1.5, -0.5])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.floor(x) + gt.ceil(x) + gt.round(x) + x // 1.0
    assert tape.gradient(y, x) is None


def test_where_gradient_routes():
    gx, gy = grad(lambda x, y: gt.where(gt.constant([True, False]), x, y),
                  np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32))
    np.testing.assert_allclose(gx, [1, 0])
    np.testing.assert_allclose(gy, [0, 1])


# --- broadcasting property ----------------------------------------------------------------

dims = st.integers(min_value=1, max_value=3)


@st.composite
def broadcast_pair(draw):
    rank = draw(st.integers(0, 3))
    full = [draw(dims) for _ in range(rank)]
    def sub():
        r = draw(st.integers(0, rank))
        return tuple(d if draw(st.booleans()) else 1 for d in full[rank - r:])
    return sub(), sub()


@settings(max_examples=60, deadline=None)
@given(broadcast_pair(), st.sampled_from(["add", "subtract", "multiply", "divide", "maximum"]))
def test_broadcast_gradients_sum_back(shapes, opname):
    sa, sb = shapes
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 2, sa)
    b = rng.uniform(3, 4, sb)
    fn = getattr(gt, opname)
    ga, gb = grad(lambda x, y: fn(x, y), a, b)
    assert ga.shape == tuple(sa) and gb.shape == tuple(sb)
    out_shape = np.broadcast_shapes(sa, sb)
    eps = 1e-6
    ones = np.ones(out_shape)
    npfn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
            "divide": np.divide, "maximum": np.maximum}[opname]
    # numerical gradient of sum(f(a, b)) w.r.t. the first element of a
    if a.size:
        d = np.zeros_like(a)
        d.flat[0] = eps
        num = (np.sum(npfn(a + d, b) * ones) - np.sum(npfn(a - d, b) * ones)) / (2 * eps)
        assert np.isclose(ga.flat[0], num, rtol=1e-4)


# --- errors -------------------------------------------------------------------------------

def test_matmul_misaligned_message():
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) do not align "
                                         r"\(4 != 5\)"):
        gt.matmul(gt.ones([3, 4]), gt.ones([5, 2]))
    with pytest.raises(ValueError, match="rank >= 2"):
        gt.matmul(gt.ones([3]), gt.ones([3, 2]))


def test_mixed_dtypes_raise_naming_both():
    with pytest.raises(TypeError, match="float32 and float64"):
        gt.constant(1.0) + gt.constant(1.0, dtype=gt.float64)
    with pytest.raises(TypeError, match="int32"):
        gt.constant(1) + 1.5
    with pytest.raises(TypeError, match="floating-point"):
        gt.exp(gt.constant(1))


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(3,\) and \(4,\)"):
        gt.constant([1.0, 2.0, 3.0]) + gt.constant([1.0, 2.0, 3.0, 4.0])


def test_non_tensor_where_tensor_needed():
    with pytest.raises(TypeError, match="reduce_sum"):
        gt.reduce_sum(object())
    with pytest.raises(TypeError, match="None"):
        gt.exp(None)


def test_missing_rule_names_op():
    op = Op("mystery", lambda xp, x: x * 2)
    x = gt.constant(1.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = apply(op, (x,))
    with pytest.raises(LookupError, match="mystery"):
        tape.gradient(y, x)


def test_bad_axis_and_reshape_messages():
    with pytest.raises(ValueError, match="reduce_sum: axis 2 is out of range"):
        gt.reduce_sum(gt.ones([2, 2]), axis=2)
    with pytest.raises(ValueError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\)"):
        gt.reshape(gt.ones([2, 3]), [4, 2])
    with pytest.raises(IndexError, match="gather: index 7 is out of range"):
        gt.gather(gt.ones([3]), [7])


@pytest.mark.parametrize("device", ["cpu", "strict:0"])
@pytest.mark.parametrize("shape, bshape", [((64, 8, 8, 4), (4,)), ((256, 32), (32,)),
                                           ((64, 8, 8, 4), (8, 1, 4)), ((8, 4), (4,))])
def test_broadcast_gradients_of_big_batches_equal_float64_sums(device, shape, bshape):
    """Summing a gradient over leading axes (a bias over a big batch) takes a BLAS
    matrix-vector product on large arrays: same values as the float64 sum, within float32
    rounding, on every device; other axis patterns keep the plain sum."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(bshape).astype(np.float32)
    with gt.device(device):
        tb = gt.constant(b)
        with gt.GradientTape() as tape:
            tape.watch(tb)
            loss = gt.reduce_sum((gt.constant(x) + tb) * gt.constant(w))
        g = tape.gradient(loss, tb).numpy()
    lead = len(shape) - len(bshape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(bshape) if d == 1)
    want = w.astype(np.float64).sum(axis=axes).reshape(bshape)
    assert g.shape == bshape and g.dtype == np.float32
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("device", ["cpu", "strict:0"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_sum_and_bias_add_over_leading_axes_of_big_arrays(device, keepdims):
    """reduce_sum over leading axes and bias_add's bias gradient (the BLAS path on big
    arrays) agree with float64 sums; the gradient of reduce_sum is still all ones."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 8, 8, 6)).astype(np.float32)
    with gt.device(device):
        tx = gt.constant(x)
        b = gt.constant(np.zeros(6, np.float32))
        with gt.GradientTape(persistent=True) as tape:
            tape.watch([tx, b])
            s = gt.reduce_sum(tx, axis=[0, 1, 2], keepdims=keepdims)
            y = gt.reduce_sum(gt.nn.bias_add(tx, b) * tx)
        gx = tape.gradient(s, tx).numpy()
        gb = tape.gradient(y, b).numpy()
    want = x.astype(np.float64).sum(axis=(0, 1, 2), keepdims=keepdims)
    assert s.shape == want.shape
    np.testing.assert_allclose(s.numpy(), want, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(gx, np.ones_like(x))
    np.testing.assert_allclose(gb, want.reshape(6), rtol=1e-4, atol=1e-3)


# --- out-of-range indices: IndexError on the host, zeros on a device ------------------------------

def _pad_reference(x, key, negative):
    """``x[key]`` with every out-of-range index of ``key``'s arrays reading a zero: ``x`` padded
    with zeros after each axis, those indices sent to the padding (an independent model of
    the device rule)."""
    xp_ = np.pad(x, [(0, 1)] * x.ndim)
    out, axis = [], 0
    for k in key:
        if isinstance(k, np.ndarray):
            n = x.shape[axis]
            k = np.where(k < 0, k + n, k) if negative else np.where(k < 0, n, k)
            out.append(np.where((k >= 0) & (k < n), k, n))
            axis += 1
        elif isinstance(k, slice):
            out.append(slice(0, x.shape[axis]))
            axis += 1
        else:
            out.append(k)
            axis += k is not None
    out += [slice(0, n) for n in x.shape[axis:]]
    return xp_[tuple(out)]


@pytest.mark.parametrize("key", [
    (np.array([2, 0, 5, -1, -4]),),
    (slice(None), np.array([[0, 3], [-2, 9]])),
    (np.array([0, 7]), slice(None), np.array([[1], [-6]])),
    (slice(None), np.array([1, -5]), np.array([[3], [9]]), None),
    (None, 1, np.array([0, 3, -3])),
])
def test_getitem_out_of_range_index_arrays_read_zeros_on_a_device(device, key):
    """NumPy's indexing on the host (an out-of-range index raises); on a device the host cannot
    read, an index outside [-n, n) reads zeros wherever the index arrays put their axes, and
    its gradient goes nowhere, instead of wrapping around as CuPy would."""
    x0 = np.arange(1.0, 1.0 + 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    x = gt.Variable(x0)
    dkey = tuple(gt.constant(k) if isinstance(k, np.ndarray) else k for k in key)
    if device.host_visible:
        with pytest.raises(IndexError, match=r"getitem: index -?\d+ is out of bounds"):
            x[dkey]
        return
    want = _pad_reference(x0, key, negative=True)
    with gt.GradientTape() as tape:
        y = x[dkey]
        s = gt.reduce_sum(y * gt.constant(np.arange(1.0, 1.0 + want.size, dtype=np.float32)
                                          .reshape(want.shape)))
    np.testing.assert_array_equal(y.numpy(), want)
    # the gradient: each in-range result's weight lands on the element it read
    xr = np.arange(x0.size, dtype=np.float64).reshape(x0.shape) + 1
    ids = _pad_reference(xr, key, negative=True)
    expected = np.zeros(x0.size + 1)
    np.add.at(expected, ids.astype(np.int64).ravel(),
              np.arange(1.0, 1.0 + want.size))
    np.testing.assert_array_equal(tape.gradient(s, x).numpy().ravel(), expected[1:])


def test_gather_and_gather_nd_out_of_range_and_negative_indices(device):
    """As TensorFlow: an index outside [0, n) (a negative one included) raises on the CPU;
    on a device it gives zeros and no gradient, never a wrapped-around row."""
    p0 = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    p = gt.Variable(p0)
    if device.host_visible:
        for idx in ([0, 4], [-1, 2]):
            with pytest.raises(IndexError, match=r"gather: index (4|-1) is out of range "
                                                 r"\[0, 4\) for axis 0"):
                gt.gather(p, idx)
        with pytest.raises(IndexError, match=r"gather: index 3 is out of range \[0, 3\) for "
                                             r"axis 1"):
            gt.gather(p, [[0, 3]], axis=1)
        with pytest.raises(IndexError, match=r"gather_nd: index -1 is out of range \[0, 4\) "
                                             r"for axis 0"):
            gt.gather_nd(p, [[1, 2], [-1, 0]])
        with pytest.raises(IndexError, match=r"gather_nd: index 3 is out of range \[0, 3\) "
                                             r"for axis 1"):
            gt.gather_nd(p, [[1, 3]])
        with pytest.raises(IndexError, match=r"embedding_lookup: .*index 4 is out of range"):
            gt.nn.embedding_lookup(p, [4])
        return
    with gt.GradientTape(persistent=True) as tape:
        rows = gt.gather(p, [2, 4, -1, 0])
        cols = gt.gather(p, [[2, 3, -3]], axis=1)
        cells = gt.gather_nd(p, [[1, 2], [4, 0], [-1, 1], [3, 3]])
        emb = gt.nn.embedding_lookup(p, [[3, 4], [-4, 3]])
        batched = gt.gather(p, [[0, 5], [2, -1], [1, 1], [2, 0]], axis=1, batch_dims=1)
    np.testing.assert_array_equal(rows.numpy(), [p0[2], np.zeros(3), np.zeros(3), p0[0]])
    np.testing.assert_array_equal(cols.numpy()[:, 0], np.stack(
        [p0[:, 2], np.zeros(4), np.zeros(4)], axis=-1))
    np.testing.assert_array_equal(cells.numpy(), [p0[1, 2], 0, 0, 0])
    np.testing.assert_array_equal(emb.numpy(), [[p0[3], np.zeros(3)], [np.zeros(3), p0[3]]])
    np.testing.assert_array_equal(batched.numpy(), [[0, 0], [5, 0], [7, 7], [11, 9]])
    want = np.zeros_like(p0)
    want[2] = want[0] = 1
    np.testing.assert_array_equal(tape.gradient(rows, p).numpy(), want)
    want = np.zeros_like(p0)
    want[1, 2] = 1
    np.testing.assert_array_equal(tape.gradient(cells, p).numpy(), want)
    want = np.zeros_like(p0)
    want[3] = 2
    np.testing.assert_array_equal(tape.gradient(emb, p).numpy(), want)
    # second order: the backward scatter's own gradient reads zeros at the same places
    v = gt.Variable(p0)
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = gt.reduce_sum(gt.gather(v, [1, 7]) ** 2)
        g = inner.gradient(y, v)
        z = gt.reduce_sum(g * g)
    want = np.zeros_like(p0)
    want[1] = 8 * p0[1]
    np.testing.assert_allclose(outer.gradient(z, v).numpy(), want)


def test_where_with_a_scalar_condition_gives_n_by_0_coordinates(device):
    """TF's shape [n, 0] (NumPy refuses a 0-d nonzero; CuPy would give [n, 1])."""
    for cond, n in ((True, 1), (False, 0)):
        out = gt.where(gt.constant(cond))
        assert out.shape == (n, 0) and out.dtype == gt.int64
    out = gt.where(gt.constant([[True, False], [False, True]]))
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [1, 1]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_matmul_with_a_contraction_of_one_gives_numpy_matmul(dtype):
    """(.., M, 1) @ (.., 1, N), the weight gradient at batch 1: the same numbers as
    np.matmul (computed as a broadcast product, which NumPy runs 3x faster), batched
    and broadcast too."""
    rng = np.random.default_rng(0)
    for sa, sb in [((5, 1), (1, 7)), ((3, 5, 1), (1, 4)), ((2, 1, 4, 1), (3, 1, 6))]:
        a = (rng.standard_normal(sa) * 4).astype(dtype)
        b = (rng.standard_normal(sb) * 4).astype(dtype)
        got = gt.matmul(gt.constant(a), gt.constant(b))
        assert got.dtype == gt.as_dtype(dtype) and got.shape == np.matmul(a, b).shape
        np.testing.assert_array_equal(got.numpy(), np.matmul(a, b))
    x = rng.standard_normal((1, 6))
    w = gt.Variable(rng.standard_normal((6, 3)))
    g = rng.standard_normal((1, 3))
    with gt.GradientTape() as tape:
        y = gt.matmul(gt.constant(x), w)
    np.testing.assert_array_equal(tape.gradient(y, w, output_gradients=gt.constant(g)).numpy(),
                                  np.matmul(x.T, g))


def test_integer_reductions_division_and_dtype_inference_as_tf():
    assert gt.reduce_sum(gt.constant([1, 2])).dtype == gt.int32
    assert gt.reduce_sum(gt.constant([200, 100], gt.uint8)).numpy() == 44      # wraps, as TF
    assert gt.reduce_prod(gt.constant([2 ** 16, 2 ** 16])).numpy() == 0
    assert gt.reduce_mean(gt.constant([-1, -2])).numpy() == -1                 # toward zero
    assert gt.reduce_mean(gt.constant([[-1, -2, -4], [1, 2, 4]]), axis=1).numpy().tolist() == [-2, 2]
    assert (gt.constant([1.0, 0.7, 3.0]) // 0.1).numpy().tolist() == [10.0, 7.0, 30.0]
    third = gt.constant(1 / 3, gt.float64)
    assert (gt.constant(-8.0, gt.float64) // third).numpy() == -24.0
    assert (gt.constant([7, -7]) // 2).numpy().tolist() == [3, -4]
    with pytest.raises(gt.InvalidArgumentError, match="floordiv: Integer division by zero"):
        gt.constant([1, 2]) // gt.constant([1, 0])
    with pytest.raises(gt.InvalidArgumentError, match="floormod: Integer division by zero"):
        gt.constant([1]) % 0
    assert gt.reduce_max(gt.zeros((0,))).numpy() == -np.inf
    assert gt.reduce_min(gt.zeros((2, 0), gt.int32), axis=1).numpy().tolist() == [2 ** 31 - 1] * 2
    assert gt.round(gt.constant([1, -2])).numpy().tolist() == [1, -2]
    assert gt.one_hot([[1], [0]], 2, on_value=5, off_value=-1).dtype == gt.int32
    assert gt.one_hot([1], 2).dtype == gt.float32
    lin = gt.linspace(0, 10, 5)
    assert lin.dtype == gt.float64 and lin.numpy().tolist() == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert gt.linspace(0.0, 1.0, 3).dtype == gt.float32
    assert (gt.constant([1, 2]) == gt.constant([1, 2, 3])).numpy() is np.False_
    assert (gt.constant([1, 2]) != gt.constant([1, 2, 3])).numpy() is np.True_


def test_top_level_norm_takes_the_spectral_norm_of_matrices():
    a = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = gt.norm(gt.constant(a), ord=2, axis=[-2, -1]).numpy()
    np.testing.assert_allclose(got, np.linalg.norm(a, 2, axis=(-2, -1)), rtol=1e-5)


def test_indexed_slices_convert_to_the_dense_tensor_they_stand_for():
    s = gt.IndexedSlices(gt.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), gt.constant([0, 2, 0]),
                         [3, 2])
    assert s.shape == [3, 2] and s.dtype == gt.float32
    np.testing.assert_array_equal(gt.convert_to_tensor(s).numpy(), [[6, 8], [0, 0], [3, 4]])
    assert float(gt.reduce_sum(s)) == 21.0
    np.testing.assert_array_equal(s.values.numpy()[1], [3.0, 4.0])
    with pytest.raises(TypeError, match="indices must be a 1-D integer tensor"):
        gt.IndexedSlices(gt.ones((2, 2)), gt.constant([0.0, 1.0]))
    v = gt.Variable(np.zeros((3, 2), np.float32))
    gt.optimizers.SGD(1.0).apply_gradients([(s, v)])
    np.testing.assert_array_equal(v.numpy(), [[-6, -8], [0, 0], [-3, -4]])
