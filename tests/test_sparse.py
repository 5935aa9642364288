"""gt.sparse: SparseTensor and the tf.sparse ops, against values TensorFlow gives on the
same inputs (hard-coded), their gradients (TensorFlow's and finite differences), the
errors TensorFlow raises, and a run on every device (the strict device catches host
arrays and host waits)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import sparse
from gradtape.backend.strict import HostLeakError
from gradtape.testing import check_grads

SP = sparse.SparseTensor
IAE = gt.InvalidArgumentError


def parts(s):
    return s.indices.numpy().tolist(), s.values.numpy().tolist(), s.dense_shape.numpy().tolist()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol,
                               atol=tol)


def weighted(out):
    """sum(out * [1, 2, 3, ...]) (the loss TensorFlow's reference gradients were taken of)."""
    w = gt.constant(np.arange(1, 1 + int(np.prod(out.shape)), dtype=np.float32)
                    .reshape(tuple(out.shape)))
    return gt.reduce_sum(out * w)


IND = [[0, 0], [1, 2], [2, 1]]


def value_grads(fn, with_dense=True):
    """TF's reference setup: values [1, -2, 3] at IND of a 3x3 tensor and a dense
    0.1 * [[1..9]]; gradients of ``weighted(fn(sp, dense))`` (sparse results: their
    values)."""
    v = gt.Variable([1.0, -2.0, 3.0])
    d = gt.Variable(np.arange(1, 10, dtype=np.float32).reshape(3, 3) * 0.1)
    with gt.GradientTape() as tape:
        out = fn(SP(IND, v, [3, 3]), d)
        loss = weighted(out.values if isinstance(out, SP) else out)
    gv, gd = tape.gradient(loss, [v, d])
    return out, (None if gv is None else gv.numpy()), (None if gd is None else gd.numpy())


# --- the SparseTensor type ----------------------------------------------------------------

def test_sparse_tensor_parts_dtypes_shape():
    s = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert s.indices.dtype == gt.int64 and s.dense_shape.dtype == gt.int64
    assert s.values.dtype == gt.float32 and s.dtype == gt.float32
    assert s.shape == gt.TensorShape([3, 4]) and s.get_shape().as_list() == [3, 4]
    assert parts(s) == ([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert gt.sparse.SparseTensor is SP
    assert SP(np.zeros((0, 2)), [], [2, 2]).values.dtype == gt.float32
    assert SP([[0]], np.array([1.0]), [2]).dtype == gt.float64
    assert SP([[0]], [1.0], gt.constant([5], dtype=gt.int64)).shape.as_list() == [5]
    s.set_shape([None, 4])
    with pytest.raises(ValueError):
        s.set_shape([1, 4])


def test_sparse_tensor_repr_is_tfs_form():
    s = SP([[0, 0], [1, 2]], [1, 2], [3, 4])
    r = repr(s)
    assert r.startswith("SparseTensor(indices=") and ", values=" in r and ", dense_shape=" in r
    assert str(s.indices) in r and str(s.values) in r and str(s.dense_shape) in r


@pytest.mark.parametrize("args,err", [
    (([0, 0], [1.0], [2, 2]), ValueError),            # indices must be [N, rank]
    (([[0, 0]], [1.0, 2.0], [2, 2]), ValueError),      # one value per index
    (([[0, 0]], [1.0], [2, 2, 2]), ValueError),        # rank of indices and shape
    (([[0, 0]], [[1.0]], [2, 2]), ValueError),         # values must be 1-D
])
def test_sparse_tensor_checks_its_parts(args, err):
    with pytest.raises(err):
        SP(*args)


def test_sparse_tensor_int32_index_tensor_is_refused():
    """TensorFlow refuses an int32 indices tensor (it converts Python values to int64)."""
    with pytest.raises(TypeError, match="int64"):
        SP(gt.constant([[0, 0]]), [1.0], [2, 2])
    with pytest.raises(TypeError, match="int64"):
        SP([[0, 0]], [1.0], gt.constant([2, 2]))
    assert SP(np.array([[0, 0]], np.int32), [1.0], [2, 2]).indices.dtype == gt.int64


def test_with_values_and_from_value():
    s = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    w = s.with_values([10, 20])
    assert parts(w) == ([[0, 0], [1, 2]], [10, 20], [3, 4]) and w.dtype == gt.int32
    with pytest.raises(ValueError):
        s.with_values([1, 2, 3])
    assert parts(SP.from_value(s)) == parts(s)
    assert parts(SP.from_value(sparse.SparseTensorValue([[1]], [5], [3]))) == ([[1]], [5], [3])
    with pytest.raises(TypeError, match="neither a SparseTensor"):
        SP.from_value(3)


def test_mul_div_with_dense_and_numbers():
    """TensorFlow: the dense side broadcasts to the sparse shape (never the other way)."""
    s = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert parts(s * 2.0)[1] == [2.0, 4.0]
    assert parts(s * 2)[1] == [2.0, 4.0]
    assert parts(s * gt.constant([1.0, 2.0, 3.0, 4.0]))[1] == [1.0, 6.0]
    assert parts(s * gt.ones([3, 4]))[1] == [1.0, 2.0]
    assert parts(s / 2.0)[1] == [0.5, 1.0]
    q = SP([[0, 0]], [3], [2, 2]) / 2          # integer values divide as float64
    assert q.dtype == gt.float64 and parts(q)[1] == [1.5]
    with pytest.raises(IAE, match="broadcasts dense to sparse only"):
        s * gt.ones([2])
    with pytest.raises(IAE, match="broadcasts dense to sparse only"):
        s * gt.ones([2, 3, 4])
    with pytest.raises(TypeError):
        -s                                     # TF defines no unary minus
    with pytest.raises(TypeError):
        2.0 * s                                # nor a reflected product


def test_mul_div_gradients_match_tensorflow():
    _, gv, gd = value_grads(lambda s, d: s * d)
    close(gv, [0.1, 1.2, 2.4])
    close(gd, [[1, 0, 0], [0, 0, -4], [0, 9, 0]])
    _, gv, gd = value_grads(lambda s, d: s * d[0])
    close(gv, [0.1, 0.6, 0.6])
    close(gd, [[1, 9, -4], [0, 0, 0], [0, 0, 0]])
    out, gv, gd = value_grads(lambda s, d: s / (d + 1.0))
    close(out.values.numpy(), [0.9090909, -1.25, 1.6666667])
    close(gv, [0.90909, 1.25, 1.66667], 1e-4)
    close(gd, [[-0.82645, 0, 0], [0, 0, 1.5625], [0, -2.77778, 0]], 1e-4)


# --- conversions ---------------------------------------------------------------------------

def test_to_dense_values_and_default():
    s = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert sparse.to_dense(s).numpy().tolist() == [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]]
    assert sparse.to_dense(s, default_value=-1).numpy().tolist() == \
        [[1, -1, -1, -1], [-1, -1, 2, -1], [-1, -1, -1, -1]]
    assert sparse.to_dense(SP([[1]], ["x"], [3])).numpy().tolist() == [b"", b"x", b""]
    assert sparse.to_dense(SP([[1]], [True], [3])).numpy().tolist() == [False, True, False]
    assert float(sparse.to_dense(SP(np.zeros((1, 0)), [5.0], []))) == 5.0
    assert sparse.to_dense(SP([[0, 1, 1], [1, 0, 0]], [1, 2], [2, 2, 2])).numpy().tolist() == \
        [[[0, 0], [0, 1]], [[2, 0], [0, 0]]]
    with pytest.raises(TypeError, match="SparseTensor"):
        sparse.to_dense(gt.ones([2]))
    with pytest.raises(IAE, match="scalar"):
        sparse.to_dense(s, default_value=[5.0, 6.0])


@pytest.mark.parametrize("ind,message", [
    ([[1, 2], [0, 0]], r"indices\[1\] = \[0,0\] is out of order"),
    ([[0, 0], [0, 0]], r"indices\[1\] = \[0,0\] is repeated"),
    ([[0, 0], [3, 2]], r"indices\[1\] = \[3,2\] is out of bounds: need 0 <= index < \[3,4\]"),
    ([[0, 0], [-1, 2]], r"indices\[1\] = \[-1,2\] is out of bounds"),
])
def test_to_dense_validates_indices_as_tensorflow(ind, message):
    with pytest.raises(IAE, match=message):
        sparse.to_dense(SP(ind, [1.0, 2.0], [3, 4]))


def test_to_dense_without_validation():
    """Order is not checked, the last of repeated indices wins, bounds still are."""
    out = sparse.to_dense(SP([[1, 2], [0, 0]], [2.0, 1.0], [3, 4]), validate_indices=False)
    assert out.numpy()[0, 0] == 1.0 and out.numpy()[1, 2] == 2.0
    out = sparse.to_dense(SP([[0, 0], [0, 0]], [1.0, 2.0], [3, 4]), validate_indices=False)
    assert out.numpy()[0, 0] == 2.0
    with pytest.raises(IAE, match="out of bounds"):
        sparse.to_dense(SP([[0, 0], [3, 2]], [1.0, 2.0], [3, 4]), validate_indices=False)


def test_to_dense_gradients_match_tensorflow():
    _, gv, gd = value_grads(lambda s, d: sparse.to_dense(s))
    close(gv, [1.0, 6.0, 8.0])
    assert gd is None
    dv = gt.Variable(0.5)
    w = gt.constant(np.arange(1, 10, dtype=np.float32).reshape(3, 3))
    with gt.GradientTape() as tape:
        out = sparse.to_dense(SP(IND, [1.0, 2.0, 3.0], [3, 3]), default_value=dv)
        loss = gt.reduce_sum(out * w)
    assert float(tape.gradient(loss, dv)) == 30.0     # TensorFlow: 30


def test_from_dense():
    s = sparse.from_dense([[0, 1.5, 0], [2, 0, -0.0]])
    assert parts(s) == ([[0, 1], [1, 0]], [1.5, 2.0], [2, 3]) and s.shape.as_list() == [2, 3]
    assert parts(sparse.from_dense(["", "a"])) == ([[1]], [b"a"], [2])
    assert parts(sparse.from_dense([False, True])) == ([[1]], [True], [2])
    nan = sparse.from_dense([np.nan, 0.0])
    assert parts(nan)[0] == [[0]] and np.isnan(parts(nan)[1][0])
    with pytest.raises(IAE):
        sparse.from_dense(3.0)
    x = gt.Variable([[0.0, 2.0], [3.0, 0.0]])
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(sparse.from_dense(x).values * gt.constant([1.0, 5.0]))
    assert tape.gradient(loss, x).numpy().tolist() == [[0, 1], [5, 0]]


# --- order and shape ---------------------------------------------------------------------------

def test_reorder_is_stable_row_major():
    s = sparse.reorder(SP([[1, 2], [0, 3], [0, 1], [1, 0]], [1, 2, 3, 4], [2, 4]))
    assert parts(s) == ([[0, 1], [0, 3], [1, 0], [1, 2]], [3, 2, 4, 1], [2, 4])
    s = sparse.reorder(SP([[1, 2], [0, 3], [1, 2], [0, 3]], [1, 2, 3, 4], [2, 4]))
    assert parts(s) == ([[0, 3], [0, 3], [1, 2], [1, 2]], [2, 4, 1, 3], [2, 4])
    s = sparse.reorder(SP([[1, 2], [5, 3]], [1, 2], [2, 4]))      # not checked, as TF
    assert parts(s)[0] == [[1, 2], [5, 3]]


def test_reshape():
    s = SP([[0, 1], [1, 2], [2, 3]], [1, 2, 3], [3, 4])
    assert parts(sparse.reshape(s, [2, -1])) == ([[0, 1], [1, 0], [1, 5]], [1, 2, 3], [2, 6])
    assert parts(sparse.reshape(s, [2, 3, 2]))[0] == [[0, 0, 1], [1, 0, 0], [1, 2, 1]]
    assert parts(sparse.reshape(SP([[2, 3], [0, 1]], [1, 2], [3, 4]), [12]))[0] == [[11], [1]]
    assert parts(sparse.reshape(SP([[0, 1]], [1], [3, 4]), gt.constant([4, 3])))[2] == [4, 3]
    assert parts(sparse.reshape(SP(np.zeros((0, 2)), gt.zeros([0]), [0, 3]), [-1, 3]))[2] == \
        [0, 3]
    with pytest.raises(IAE, match="12 dense values, but the requested shape has 10"):
        sparse.reshape(s, [5, 2])
    with pytest.raises(IAE, match="only one output dimension may be -1"):
        sparse.reshape(s, [-1, -1])
    with pytest.raises(IAE, match="requires a multiple of 5"):
        sparse.reshape(s, [5, -1])


def test_transpose():
    s = sparse.transpose(SP([[0, 1], [1, 2], [2, 0]], [1, 2, 3], [3, 4]))
    assert parts(s) == ([[0, 2], [1, 0], [2, 1]], [3, 1, 2], [4, 3])
    s = sparse.transpose(SP([[0, 1, 0], [1, 0, 1]], [1, 2], [2, 2, 3]), [2, 0, 1])
    assert parts(s) == ([[0, 0, 1], [1, 1, 0]], [1, 2], [3, 2, 2])
    with pytest.raises(ValueError):
        sparse.transpose(SP([[0, 1]], [1.0], [2, 3]), [0])


def test_expand_dims():
    x = SP([[0, 0], [1, 1], [2, 2]], [1.0, -2.0, 3.0], [3, 3])
    assert parts(sparse.expand_dims(x)) == ([[0, 0, 0], [1, 1, 0], [2, 2, 0]],
                                            [1.0, -2.0, 3.0], [3, 3, 1])
    assert parts(sparse.expand_dims(x, 0))[0] == [[0, 0, 0], [0, 1, 1], [0, 2, 2]]
    assert parts(sparse.expand_dims(x, -3))[2] == [1, 3, 3]
    assert parts(sparse.expand_dims(x, 1)) == ([[0, 0, 0], [1, 0, 1], [2, 0, 2]],
                                               [1.0, -2.0, 3.0], [3, 1, 3])
    assert parts(sparse.expand_dims(SP(np.zeros((1, 0)), [1.0], []), 0)) == \
        ([[0]], [1.0], [1])
    with pytest.raises(IAE):
        sparse.expand_dims(x, 3)
    with pytest.raises(IAE):
        sparse.expand_dims(x, -4)
    with pytest.raises(TypeError, match="integer"):
        sparse.expand_dims(x, 1.0)


def test_eye():
    assert parts(sparse.eye(3)) == ([[0, 0], [1, 1], [2, 2]], [1.0, 1.0, 1.0], [3, 3])
    e = sparse.eye(2, 4, dtype=gt.int32)
    assert parts(e) == ([[0, 0], [1, 1]], [1, 1], [2, 4]) and e.dtype == gt.int32
    assert parts(sparse.eye(4, 2))[2] == [4, 2]
    assert parts(sparse.eye(0)) == ([], [], [0, 0])
    assert parts(sparse.eye(gt.constant(2)))[2] == [2, 2]
    with pytest.raises(IAE):
        sparse.eye(-1)
    with pytest.raises(TypeError, match="num_rows must be an integer"):
        sparse.eye(2.0)


def test_reset_shape():
    r = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert parts(sparse.reset_shape(r))[2] == [2, 3]
    assert parts(sparse.reset_shape(r, [5, 6]))[2] == [5, 6]
    assert parts(sparse.reset_shape(r, gt.constant([4, 4])))[2] == [4, 4]
    assert parts(sparse.reset_shape(SP(np.zeros((0, 2)), gt.zeros([0]), [3, 4])))[2] == [0, 0]
    with pytest.raises(ValueError, match="dimension sizes >= sp_input.shape"):
        sparse.reset_shape(r, [2, 6])
    with pytest.raises(ValueError):
        sparse.reset_shape(r, [5, 6, 7])


# --- selecting entries ---------------------------------------------------------------------------

def test_slice():
    s = SP([[0, 1], [1, 2], [2, 3], [1, 0]], [1, 2, 3, 4], [3, 4])
    assert parts(sparse.slice(s, [1, 0], [2, 3])) == ([[0, 2], [0, 0]], [2, 4], [2, 3])
    s = SP([[0, 1], [1, 2], [2, 3]], [1, 2, 3], [3, 4])
    assert parts(sparse.slice(s, [1, 1], [10, 10])) == ([[0, 1], [1, 2]], [2, 3], [2, 3])
    one = SP([[0, 1]], [1], [3, 4])
    assert parts(sparse.slice(one, [-1, 0], [2, 2])) == ([[1, 1]], [1], [2, 2])
    assert parts(sparse.slice(one, [5, 0], [2, 2])) == ([], [], [0, 2])
    assert parts(sparse.slice(one, [1, 0], [1, 4])) == ([], [], [1, 4])
    with pytest.raises(IAE, match="Expected start to be a vector of length 2"):
        sparse.slice(one, [1], [1])
    with pytest.raises(IAE, match="Expected a non-negative size, got -1"):
        sparse.slice(one, [0, 0], [-1, 2])
    _, gv, _ = value_grads(lambda s, d: sparse.slice(s, [1, 0], [2, 3]))
    close(gv, [0.0, 1.0, 2.0])


def test_split():
    sp = SP([[0, 0], [0, 2], [0, 4], [1, 1], [1, 4], [2, 5]], [1, 2, 3, 4, 5, 6], [3, 6])
    got = [parts(p) for p in sparse.split(sp_input=sp, num_split=4, axis=1)]
    assert got == [([[0, 0], [1, 1]], [1, 4], [3, 2]), ([[0, 0]], [2], [3, 2]),
                   ([[0, 0], [1, 0]], [3, 5], [3, 1]), ([[2, 0]], [6], [3, 1])]
    got = [parts(p) for p in sparse.split(sp, 2, 0)]
    assert got == [([[0, 0], [0, 2], [0, 4], [1, 1], [1, 4]], [1, 2, 3, 4, 5], [2, 6]),
                   ([[0, 5]], [6], [1, 6])]
    got = [parts(p) for p in sparse.split(sp_input=SP([[1, 1], [0, 0], [0, 3]], [1, 2, 3],
                                                      [2, 4]), num_split=2, axis=-1)]
    assert got == [([[1, 1], [0, 0]], [1, 2], [2, 2]), ([[0, 1]], [3], [2, 2])]
    with pytest.raises(IAE, match=r"between 1 and the splitting dimension size \(6\), got 7"):
        sparse.split(sp_input=sp, num_split=7, axis=1)
    with pytest.raises(IAE, match=r"in range \[-2, 2\), got 2"):
        sparse.split(sp_input=sp, num_split=2, axis=2)
    with pytest.raises(ValueError, match="axis is required"):
        sparse.split(sp_input=sp, num_split=2)


def test_concat():
    b1 = SP([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])
    b2 = SP([[0, 1], [1, 0]], [3.0, 4.0], [2, 3])
    assert parts(sparse.concat(1, [b1, b2])) == ([[0, 0], [0, 3], [1, 1], [1, 2]],
                                                 [1.0, 3.0, 2.0, 4.0], [2, 5])
    assert parts(sparse.concat(-1, [b1, b2]))[2] == [2, 5]
    assert parts(sparse.concat(0, [b1, b2], expand_nonconcat_dims=True)) == \
        ([[0, 0], [1, 1], [2, 1], [3, 0]], [1.0, 2.0, 3.0, 4.0], [4, 3])
    assert parts(sparse.concat(1, [SP([[1, 1], [0, 0]], [1.0, 2.0], [2, 2]), b2])) == \
        ([[0, 0], [0, 3], [1, 1], [1, 2]], [2.0, 3.0, 1.0, 4.0], [2, 5])
    assert sparse.concat(1, [b1]) is b1
    with pytest.raises(IAE, match="expected 2 for dimension 1 but got 3 at position 1"):
        sparse.concat(0, [b1, b2])
    with pytest.raises(IAE, match="Ranks of all input tensors must match"):
        sparse.concat(0, [b1, SP([[0]], [1.0], [2])])
    with pytest.raises(TypeError):
        sparse.concat(0, [b1, gt.ones([2, 2])])
    _, gv, _ = value_grads(lambda s, d: sparse.concat(1, [s, s]))
    assert gv is None                                   # TensorFlow: not differentiable


def test_retain():
    fe = SP([[0, 1], [0, 3], [2, 0], [3, 1], [3, 3]], [1.0, 2.0, 3.0, 4.0, 5.0], [5, 6])
    want = ([[0, 1], [2, 0], [3, 3]], [1.0, 3.0, 5.0], [5, 6])
    assert parts(sparse.retain(fe, [True, False, True, False, True])) == want
    assert parts(sparse.retain(fe, [1, 0, 1, 0, 1])) == want
    with pytest.raises(ValueError):
        sparse.retain(fe, [True, False])
    with pytest.raises(ValueError):
        sparse.retain(fe, [[True]])
    _, gv, _ = value_grads(lambda s, d: sparse.retain(s, [True, False, True]))
    close(gv, [1.0, 0.0, 2.0])


def test_fill_empty_rows():
    fe = SP([[0, 1], [0, 3], [2, 0], [3, 1], [3, 3]], [1.0, 2.0, 3.0, 4.0, 5.0], [5, 6])
    out, empty = sparse.fill_empty_rows(fe, -1.0)
    assert parts(out) == ([[0, 1], [0, 3], [1, 0], [2, 0], [3, 1], [3, 3], [4, 0]],
                          [1.0, 2.0, -1.0, 3.0, 4.0, 5.0, -1.0], [5, 6])
    assert empty.numpy().tolist() == [False, True, False, False, True]
    out, empty = sparse.fill_empty_rows(SP([[3, 1], [0, 3], [0, 1]], [1.0, 2.0, 3.0], [5, 6]),
                                        0.0)
    assert parts(out) == ([[0, 3], [0, 1], [1, 0], [2, 0], [3, 1], [4, 0]],
                          [2.0, 3.0, 0.0, 0.0, 1.0, 0.0], [5, 6])
    out, empty = sparse.fill_empty_rows(SP([[1, 1, 1]], [1.0], [3, 2, 2]), 0.0)
    assert parts(out)[0] == [[0, 0, 0], [1, 1, 1], [2, 0, 0]]
    out, _ = sparse.fill_empty_rows(SP([[1]], ["a"], [3]), "z")
    assert parts(out)[1] == [b"z", b"a", b"z"]
    out, empty = sparse.fill_empty_rows(SP(np.zeros((0, 2)), gt.zeros([0]), [0, 2]), 9.0)
    assert parts(out) == ([], [], [0, 2]) and empty.shape.as_list() == [0]
    with pytest.raises(IAE, match=r"indices\(0, 0\) is invalid: 7 >= 5"):
        sparse.fill_empty_rows(SP([[7, 1]], [1.0], [5, 6]), 0.0)
    with pytest.raises(IAE, match="default_value must be a scalar"):
        sparse.fill_empty_rows(SP([[0]], [1.0], [2]), [1.0, 2.0])
    # TensorFlow: d_values [1, 2, 4, 5, 6], d_default 3 + 7 = 10
    vv, dv = gt.Variable(fe.values), gt.Variable(-1.0)
    with gt.GradientTape() as tape:
        o, _ = sparse.fill_empty_rows(SP(fe.indices, vv, fe.dense_shape), dv)
        loss = weighted(o.values)
    g1, g2 = tape.gradient(loss, [vv, dv])
    assert g1.numpy().tolist() == [1, 2, 4, 5, 6] and float(g2) == 10.0


def test_to_indicator():
    ids = SP([[0, 0], [0, 1], [2, 0]], [3, 1, 2], [3, 2])
    assert sparse.to_indicator(ids, 4).numpy().tolist() == [
        [False, True, False, True], [False] * 4, [False, False, True, False]]
    assert sparse.to_indicator(SP([[0, 0], [0, 1]], [1, 1], [3, 2]), 3).numpy()[0].tolist() \
        == [False, True, False]
    assert sparse.to_indicator(SP([[0, 1, 0], [1, 0, 1]], [1, 2], [2, 2, 2]), 3).numpy() \
        .tolist() == [[[False, False, False], [False, True, False]],
                      [[False, False, True], [False, False, False]]]
    with pytest.raises(IAE, match="out of bounds"):
        sparse.to_indicator(ids, 3)
    with pytest.raises(IAE, match="out of bounds"):
        sparse.to_indicator(SP([[0, 0]], [-1], [3, 2]), 3)


def test_mask_indexed_slices():
    isl = gt.IndexedSlices(gt.constant([[1.0, 2], [3, 4], [5, 6]]), gt.constant([12, 26, 37]),
                           gt.constant([40, 2]))
    r = sparse.mask(isl, [12, 45])
    assert isinstance(r, gt.IndexedSlices)
    assert r.values.numpy().tolist() == [[3, 4], [5, 6]]
    assert r.indices.numpy().tolist() == [26, 37] and r.indices.dtype == gt.int32
    assert r.dense_shape.numpy().tolist() == [40, 2]
    r = sparse.mask(gt.IndexedSlices(gt.constant([1.0, 2.0]), gt.constant([3, 4], gt.int64)),
                    [4])
    assert r.indices.numpy().tolist() == [3] and r.indices.dtype == gt.int64
    assert r.dense_shape is None


# --- arithmetic -------------------------------------------------------------------------------

A = ([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
B = ([[0, 0], [0, 1], [2, 3]], [-1.0, 5.0, 0.5], [3, 4])


def test_add_sparse_sparse_and_threshold():
    a, b = SP(*A), SP(*B)
    assert parts(sparse.add(a, b)) == ([[0, 0], [0, 1], [1, 2], [2, 3]],
                                       [0.0, 5.0, 2.0, 0.5], [3, 4])
    # the threshold applies to sums only: b's lone 0.5 stays
    assert parts(sparse.add(a, b, threshold=0.6)) == ([[0, 1], [1, 2], [2, 3]],
                                                      [5.0, 2.0, 0.5], [3, 4])
    assert parts(sparse.add(a, b, threshold=0.5))[1] == [5.0, 2.0, 0.5]
    assert parts(sparse.add(SP([[0]], [1], [3]), SP([[1]], [1], [3]), threshold=1))[1] == [1, 1]
    assert parts(sparse.add(SP([[0]], [1.0], [2]), SP([[0]], [-0.5], [2]),
                            threshold=gt.constant(0.6))) == ([], [], [2])
    assert parts(sparse.add(SP([[5]], [1.0], [3]), SP([[0]], [-1.0], [3]))) == \
        ([[0], [5]], [-1.0, 1.0], [3])                    # not checked, as TF
    with pytest.raises(IAE, match="Operands' shapes do not match: got 4 and 5 for dimension 1"):
        sparse.add(a, SP([[0, 0]], [1.0], [3, 5]))
    with pytest.raises(IAE, match="Input indices must have the same dimension"):
        sparse.add(SP([[0]], [1.0], [2]), SP([[0, 0]], [1.0], [2, 2]))
    with pytest.raises(TypeError):
        sparse.add(a, SP([[0, 0]], [1], [3, 4]))
    with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
        sparse.add(gt.ones([2]), gt.ones([2]))


def test_add_sparse_dense():
    a = SP(*A)
    want = [[2, 1, 1, 1], [1, 1, 3, 1], [1, 1, 1, 1]]
    assert sparse.add(a, gt.ones([3, 4])).numpy().tolist() == want
    assert sparse.add(gt.ones([3, 4]), a).numpy().tolist() == want
    assert sparse.add(SP([[0, 0], [0, 0]], [2.0, 1.0], [3, 4]), gt.ones([3, 4])).numpy()[0, 0] \
        == 4.0
    assert sparse.add(SP([[0]], [1.0], [2]), [1.0, 2.0]).numpy().tolist() == [2.0, 2.0]
    with pytest.raises(IAE, match="different ranks; received: 2 and 1"):
        sparse.add(a, gt.ones([4]))
    with pytest.raises(IAE, match="sparse side 2 vs dense side 3"):
        sparse.add(SP([[0]], [1.0], [2]), gt.constant([1.0, 2.0, 3.0]))
    with pytest.raises(IAE, match=r"invalid index on dimension 0: a_indices\(0,0\) = 5"):
        sparse.add(SP([[5, 0]], [2.0], [3, 4]), gt.ones([3, 4]))


def test_add_gradients_match_tensorflow():
    other = SP([[0, 0], [0, 1]], [5.0, 6.0], [3, 3])
    out, gv, _ = value_grads(lambda s, d: sparse.add(s, other))
    assert parts(out) == ([[0, 0], [0, 1], [1, 2], [2, 1]], [6.0, 6.0, -2.0, 3.0], [3, 3])
    close(gv, [1.0, 3.0, 4.0])
    cut = SP([[0, 0], [0, 1]], [-1.0, 6.0], [3, 3])
    _, gv, _ = value_grads(lambda s, d: sparse.add(s, cut, threshold=0.5))
    close(gv, [0.0, 2.0, 3.0])                            # the dropped sum gets nothing
    _, gv, _ = value_grads(lambda s, d: sparse.add(s, s))
    close(gv, [2.0, 4.0, 6.0])
    _, gv, gd = value_grads(lambda s, d: sparse.add(s, d))
    close(gv, [1.0, 6.0, 8.0])
    close(gd, np.arange(1, 10).reshape(3, 3))


def test_maximum_minimum():
    x = SP([[0, 0], [1, 1], [2, 2]], [1.0, -2.0, 3.0], [3, 3])
    y = SP([[0, 0], [1, 0], [2, 2]], [-1.0, 4.0, 5.0], [3, 3])
    assert parts(sparse.maximum(x, y)) == ([[0, 0], [1, 0], [1, 1], [2, 2]],
                                           [1.0, 4.0, 0.0, 5.0], [3, 3])
    assert parts(sparse.minimum(x, y)) == ([[0, 0], [1, 0], [1, 1], [2, 2]],
                                           [-1.0, 0.0, -2.0, 3.0], [3, 3])
    assert parts(sparse.maximum(SP([[0, 0]], [-3], [3, 3]), SP([[0, 1]], [-3], [3, 3])))[1] \
        == [0, 0]
    with pytest.raises(IAE, match="Operands' shapes do not match: got 3 and 4"):
        sparse.maximum(x, SP([[0, 0]], [1.0], [3, 4]))
    with pytest.raises(IAE, match=r"indices\[0, :\] = \[5,0\] is out of bounds"):
        sparse.maximum(SP([[5, 0]], [1.0], [3, 3]), SP([[0, 1]], [-3.0], [3, 3]))
    with pytest.raises(TypeError):
        sparse.maximum(SP([[0, 0]], [1], [3, 3]), SP([[0, 1]], [-3.0], [3, 3]))


# --- reductions --------------------------------------------------------------------------

C = ([[0, 0], [0, 2], [1, 1], [2, 0], [2, 3]], [1.0, -2.0, 3.0, -4.0, 5.0], [3, 4])


def test_reduce_sum():
    c = SP(*C)
    assert float(sparse.reduce_sum(c)) == 3.0
    assert sparse.reduce_sum(c, 0).numpy().tolist() == [-3.0, 3.0, -2.0, 5.0]
    assert sparse.reduce_sum(c, 1, keepdims=True).numpy().tolist() == [[-1.0], [3.0], [1.0]]
    assert sparse.reduce_sum(c, -1).numpy().tolist() == [-1.0, 3.0, 1.0]
    assert sparse.reduce_sum(c, [0, 1]).shape.as_list() == []
    assert sparse.reduce_sum(c, [1, 1]).numpy().tolist() == [-1.0, 3.0, 1.0]
    assert sparse.reduce_sum(c, keepdims=True).numpy().tolist() == [[3.0]]
    assert sparse.reduce_sum(c, gt.constant(1)).numpy().tolist() == [-1.0, 3.0, 1.0]
    r = sparse.reduce_sum(SP([[0, 0]], [3], [2, 2]), 0)
    assert r.numpy().tolist() == [3, 0] and r.dtype == gt.int32
    assert sparse.reduce_sum(SP([[1, 1], [0, 0]], [1.0, 2.0], [2, 2]), 1).numpy().tolist() == \
        [2.0, 1.0]
    with pytest.raises(IAE, match="Invalid reduction dimension 2, for input with 2 dimensions"):
        sparse.reduce_sum(c, 2)
    with pytest.raises(IAE):
        sparse.reduce_sum(SP([[5, 0]], [1.0], [2, 2]), 1)
    with pytest.raises(TypeError):
        sparse.reduce_sum(SP([[0]], [True], [2]))


def test_reduce_sum_sparse_output():
    c = SP(*C)
    assert parts(sparse.reduce_sum(c, 1, output_is_sparse=True)) == \
        ([[0], [1], [2]], [-1.0, 3.0, 1.0], [3])
    assert parts(sparse.reduce_sum(c, 0, keepdims=True, output_is_sparse=True)) == \
        ([[0, 0], [0, 1], [0, 2], [0, 3]], [-3.0, 3.0, -2.0, 5.0], [1, 4])
    assert parts(sparse.reduce_sum(c, output_is_sparse=True)) == ([[]], [3.0], [])
    assert parts(sparse.reduce_sum(SP([[0, 0], [0, 1]], [1.0, -1.0], [2, 2]), 1,
                                   output_is_sparse=True)) == ([[0]], [0.0], [2])
    assert parts(sparse.reduce_sum(SP([[1, 0], [0, 1], [1, 2], [0, 0]], [1.0, 2.0, 3.0, 4.0],
                                      [2, 3]), 1, output_is_sparse=True)) == \
        ([[0], [1]], [6.0, 4.0], [2])
    assert parts(sparse.reduce_sum(SP(np.zeros((0, 2)), gt.zeros([0]), [3, 4]), 1,
                                   output_is_sparse=True)) == ([], [], [3])


def test_reduce_max_counts_stored_values_only():
    c = SP(*C)
    assert float(sparse.reduce_max(c)) == 5.0
    assert sparse.reduce_max(c, 0).numpy().tolist() == [1.0, 3.0, -2.0, 5.0]
    assert sparse.reduce_max(c, 1).numpy().tolist() == [1.0, 3.0, 5.0]
    assert sparse.reduce_max(c, 1, keepdims=True).numpy().tolist() == [[1.0], [3.0], [5.0]]
    neg = SP([[0, 0], [1, 0]], [-7.0, -3.0], [3, 2])
    assert sparse.reduce_max(neg, 1).numpy().tolist() == [-7.0, -3.0, 0.0]
    assert sparse.reduce_max(SP([[0, 0], [1, 0]], [-7, -3], [3, 2]), 1).numpy().tolist() == \
        [-7, -3, 0]
    assert parts(sparse.reduce_max(neg, 1, output_is_sparse=True)) == \
        ([[0], [1]], [-7.0, -3.0], [3])
    assert parts(sparse.reduce_max(SP([[1, 0], [0, 1], [1, 2], [0, 0]], [1.0, 2.0, 3.0, 4.0],
                                      [2, 3]), 0, output_is_sparse=True)) == \
        ([[0], [1], [2]], [4.0, 2.0, 3.0], [3])
    assert float(sparse.reduce_max(SP(np.zeros((0, 2)), gt.zeros([0]), [3, 2]))) == 0.0


def test_reduce_gradients_match_tensorflow():
    _, gv, _ = value_grads(lambda s, d: sparse.reduce_sum(s, 0))
    close(gv, [1.0, 3.0, 2.0])
    _, gv, _ = value_grads(lambda s, d: sparse.reduce_sum(s, 1, output_is_sparse=True))
    close(gv, [1.0, 2.0, 3.0])
    _, gv, _ = value_grads(lambda s, d: sparse.reduce_max(s, 1))
    close(gv, [1.0, 2.0, 3.0])


def test_softmax():
    sm = SP([[0, 0], [0, 2], [1, 1], [2, 0], [2, 1], [2, 3]], [1.0, 2.0, 3.0, -1.0, 0.0, 1.0],
            [3, 4])
    out = sparse.softmax(sm)
    assert parts(out)[0] == parts(sm)[0]
    close(out.values.numpy(), [0.26894143, 0.7310586, 1.0, 0.09003057, 0.24472848, 0.66524094])
    out = sparse.softmax(SP([[0, 0, 0], [0, 0, 1], [1, 0, 1], [1, 1, 0]], [1.0, 2.0, 3.0, 4.0],
                            [2, 2, 2]))
    close(out.values.numpy(), [0.26894143, 0.7310586, 1.0, 1.0])
    with pytest.raises(IAE, match="rank >= 2"):
        sparse.softmax(SP([[0], [2]], [1.0, 2.0], [3]))
    with pytest.raises(TypeError):
        sparse.softmax(SP([[0, 0], [0, 2]], [1, 2], [3, 3]))
    v = gt.Variable(sm.values)
    with gt.GradientTape() as tape:
        loss = weighted(sparse.softmax(SP(sm.indices, v, sm.dense_shape)).values)
    close(tape.gradient(loss, v).numpy(),
          [-0.19661194, 0.19661193, 0.0, -0.14181706, -0.14077029, 0.28258765])


# --- products -------------------------------------------------------------------------------

MA = ([[0, 1], [1, 0], [1, 2], [2, 2]], [1.0, 2.0, 3.0, 4.0], [3, 3])
MB = np.arange(6, dtype=np.float32).reshape(3, 2)


def test_sparse_dense_matmul_values():
    a, b = SP(*MA), gt.constant(MB)
    mm = sparse.sparse_dense_matmul
    assert mm(a, b).numpy().tolist() == [[2, 3], [12, 17], [16, 20]]
    assert mm(a, b, adjoint_a=True).numpy().tolist() == [[4, 6], [0, 1], [22, 29]]
    assert mm(a, gt.transpose(b), adjoint_b=True).numpy().tolist() == [[2, 3], [12, 17],
                                                                       [16, 20]]
    assert mm(gt.transpose(b), a).numpy().tolist() == [[4, 0, 22], [6, 1, 29]]
    assert mm(b, a, adjoint_a=True).numpy().tolist() == [[4, 0, 22], [6, 1, 29]]
    assert mm(gt.transpose(b), a, adjoint_b=True).numpy().tolist() == [[2, 12, 16],
                                                                       [3, 17, 20]]
    assert mm(SP([[2, 2], [0, 1]], [4.0, 1.0], [3, 3]), b).numpy().tolist() == \
        [[2, 3], [0, 0], [16, 20]]
    assert mm(SP([[0, 1], [0, 1]], [4.0, 1.0], [3, 3]), b).numpy().tolist()[0] == [10, 15]
    assert mm(a, [[1.0], [2.0], [3.0]]).numpy().tolist() == [[2], [11], [12]]
    r = mm(SP([[0, 0]], [2], [2, 2]), gt.ones([2, 2], gt.int32))
    assert r.numpy().tolist() == [[2, 2], [0, 0]] and r.dtype == gt.int32
    c = SP([[0, 1]], [1 + 2j], [2, 2])
    assert mm(c, gt.constant([[1 + 1j], [2 - 1j]]), adjoint_a=True).numpy().tolist() == \
        [[0j], [3 - 1j]]
    assert mm(c, gt.constant([[1 + 1j, 2 - 1j]]), adjoint_b=True).numpy().tolist() == \
        [[5j], [0j]]


def test_sparse_dense_matmul_errors():
    a = SP(*MA)
    mm = sparse.sparse_dense_matmul
    with pytest.raises(IAE, match=r"k \(3\) from index\[0,1\] out of bounds \(>=3\)"):
        mm(SP([[0, 3]], [4.0], [3, 3]), gt.constant(MB))
    with pytest.raises(IAE, match=r"m \(3\) from index\[0,0\] out of bounds \(>=3\)"):
        mm(SP([[3, 0]], [4.0], [3, 3]), gt.constant(MB))
    with pytest.raises(IAE, match="inner dimension does not match: 3 vs. 2"):
        mm(a, gt.ones([2, 2]))
    with pytest.raises(IAE, match="a_shape"):
        mm(SP([[0, 0, 0]], [1.0], [2, 2, 2]), gt.ones([2, 2]))
    with pytest.raises(IAE, match="not a matrix"):
        mm(a, gt.ones([2, 3, 2]))
    with pytest.raises(TypeError):
        mm(a, gt.ones([3, 2], gt.float64))


@pytest.mark.parametrize("adj_a,adj_b,gv,gb", [
    (False, False, [8, 4, 32, 50], [[6, 8], [1, 2], [29, 36]]),
    (True, False, [4, 8, 28, 50], [[3, 4], [17, 22], [20, 24]]),
    (False, True, [8, 4, 32, 50], [[6, 8], [1, 2], [29, 36]]),
    (True, True, [4, 8, 28, 50], [[3, 4], [17, 22], [20, 24]]),
])
def test_sparse_dense_matmul_gradients_match_tensorflow(adj_a, adj_b, gv, gb):
    vals = gt.Variable(MA[1])
    bv = gt.Variable(MB)
    with gt.GradientTape() as tape:
        out = sparse.sparse_dense_matmul(SP(MA[0], vals, MA[2]),
                                         gt.transpose(bv) if adj_b else bv,
                                         adjoint_a=adj_a, adjoint_b=adj_b)
        loss = weighted(out)
    g1, g2 = tape.gradient(loss, [vals, bv])
    close(g1.numpy(), gv)
    close(g2.numpy(), gb)


def test_matmul_against_finite_differences():
    ind = np.array(MA[0], np.int64)

    def f(v, b):
        return sparse.sparse_dense_matmul(SP(ind, v, [3, 3]), b) ** 2
    rng = np.random.default_rng(0)
    check_grads(f, [rng.standard_normal(4), rng.standard_normal((3, 2))])


# --- segments ---------------------------------------------------------------------------------

DATA = np.array([[1.0, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]], np.float32)


def test_segment_sum_mean_sqrt_n():
    c = gt.constant(DATA)
    assert sparse.segment_sum(c, [0, 1, 2], [0, 0, 1]).numpy().tolist() == \
        [[0, 0, 0, 0], [5, 6, 7, 8]]
    assert sparse.segment_sum(c, [0, 1], [0, 2]).numpy().tolist() == \
        [[1, 2, 3, 4], [0, 0, 0, 0], [-1, -2, -3, -4]]
    assert sparse.segment_sum(c, [0, 1], [0, 2], num_segments=4).numpy().tolist()[3] == \
        [0, 0, 0, 0]
    assert sparse.segment_mean(c, [0, 1, 2, 2], [0, 0, 2, 2]).numpy().tolist() == \
        [[0, 0, 0, 0], [0, 0, 0, 0], [5, 6, 7, 8]]
    assert sparse.segment_sqrt_n(c, [0, 1, 2], [0, 0, 2]).numpy().tolist()[2] == [5, 6, 7, 8]
    assert sparse.segment_mean(c, [0, 1, 2], [0, 0, 2], num_segments=4).shape.as_list() == \
        [4, 4]
    r = sparse.segment_sum(gt.constant([[1, 2], [3, 4]]), [0, 1], [0, 0])
    assert r.numpy().tolist() == [[4, 6]] and r.dtype == gt.int32
    assert sparse.segment_sum(gt.constant([1.0, 2, 3]), [0, 2], [0, 1]).numpy().tolist() == \
        [1, 3]
    assert sparse.segment_sum(c, gt.zeros([0], gt.int32), gt.zeros([0], gt.int32)) \
        .shape.as_list() == [0, 4]
    assert sparse.segment_mean(c, gt.constant([0, 1], gt.int64),
                               gt.constant([0, 0], gt.int64)).numpy().tolist() == [[0] * 4]


@pytest.mark.parametrize("call,message", [
    (lambda c: sparse.segment_sum(c, [0, 1], [0, 2], num_segments=2),
     "segment ids must be < num_segments"),
    (lambda c: sparse.segment_sum(c, [0, 1, 2], [1, 0, 1]), "segment ids are not increasing"),
    (lambda c: sparse.segment_sum(c, [0, 1, 2], [1, 0, 1], num_segments=3),
     "segment ids are not increasing"),
    (lambda c: sparse.segment_sum(c, [0, 5], [0, 0]), r"Bad: indices\[1\] == 5 out of range"),
    (lambda c: sparse.segment_sum(c, [0, -1], [0, 0]),
     r"Bad: indices\[1\] == -1 out of range \[0, 3\)"),
    (lambda c: sparse.segment_sum(c, [0, 1], [-1, 0]), r"Segment id -1 out of range \[0, 1\)"),
    (lambda c: sparse.segment_sum(c, [0, 1], [0]), "should have same size"),
])
def test_segment_errors_match_tensorflow(call, message):
    with pytest.raises(IAE, match=message):
        call(gt.constant(DATA))


def test_segment_mean_needs_floats():
    with pytest.raises(TypeError):
        sparse.segment_mean(gt.constant([[1, 2], [3, 4]]), [0, 1], [0, 0])
    with pytest.raises(TypeError):
        sparse.segment_mean(gt.constant(DATA), [0.0, 1.0], [0, 0])


@pytest.mark.parametrize("fn,want", [
    (sparse.segment_sum, [[1, 2, 3, 4], [1, 2, 3, 4], [10, 12, 14, 16]]),
    (sparse.segment_mean, [[0.5, 1, 1.5, 2], [0.5, 1, 1.5, 2], [5, 6, 7, 8]]),
])
def test_segment_gradients_match_tensorflow(fn, want):
    v = gt.Variable(DATA)
    for ns in (None, 4):
        with gt.GradientTape() as tape:
            loss = weighted(fn(v, [0, 1, 2, 2], [0, 0, 1, 1], num_segments=ns))
        close(tape.gradient(loss, v).numpy(), want)


def test_segment_sqrt_n_gradient_matches_tensorflow():
    v = gt.Variable(DATA)
    with gt.GradientTape() as tape:
        loss = weighted(sparse.segment_sqrt_n(v, [0, 1, 2, 2], [0, 0, 2, 2]))
    r = 0.70710677
    close(tape.gradient(loss, v).numpy(), [[r, 2 * r, 3 * r, 4 * r], [r, 2 * r, 3 * r, 4 * r],
                                           [12.727922, 14.142136, 15.556349, 16.970562]])


# --- counting ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,want", [
    (dict(values=[1, 1, 3, 0, 3, 3]), ([[0], [1], [3]], [1, 2, 3], [4])),
    (dict(values=[[1, 1, 3], [0, 3, 3]]), ([[0], [1], [3]], [1, 2, 3], [4])),
    (dict(values=[[1, 1, 3], [0, 3, 3]], axis=-1),
     ([[0, 1], [0, 3], [1, 0], [1, 3]], [2, 1, 1, 2], [2, 4])),
    (dict(values=[1, 1, 3], weights=[0.5, 1.0, 2.0]), ([[1], [3]], [1.5, 2.0], [4])),
    (dict(values=[1, 1, 3], minlength=6), ([[1], [3]], [2, 1], [6])),
    (dict(values=[1, 1, 3, 5], maxlength=3), ([[1]], [2], [3])),
    (dict(values=[1, 1], maxlength=5), ([[1]], [2], [5])),
    (dict(values=[1, 1, 7], minlength=3, maxlength=5), ([[1]], [2], [5])),
    (dict(values=[1, 1], maxlength=0), ([], [], [0])),
    (dict(values=[1, 1, 3], binary_output=True), ([[1], [3]], [1, 1], [4])),
    (dict(values=np.zeros(0, np.int32)), ([], [], [1])),
    (dict(values=np.zeros(0, np.int32), minlength=3), ([], [], [3])),
    (dict(values=[[1, 2], [5, 5]], axis=-1, maxlength=3), ([[0, 1], [0, 2]], [1, 1], [2, 3])),
    (dict(values=[1, 1, 3], weights=[1, 2, 3]), ([[1], [3]], [3, 3], [4])),
])
def test_bincount_dense_matches_tensorflow(kwargs, want):
    assert parts(sparse.bincount(**kwargs)) == want


def test_bincount_dtypes_sparse_and_errors():
    assert sparse.bincount(gt.constant([1, 1, 3], gt.int64)).dtype == gt.int64
    assert sparse.bincount([1, 1, 3], weights=np.array([1.0, 2, 3])).dtype == gt.float64
    spv = SP([[0, 0], [0, 1], [1, 3]], [2, 2, 5], [2, 4])
    assert parts(sparse.bincount(spv)) == ([[2], [5]], [2, 1], [6])
    assert parts(sparse.bincount(spv, axis=-1)) == ([[0, 2], [1, 5]], [2, 1], [2, 6])
    w = SP([[0, 0], [0, 1], [1, 3]], [1.0, 2.0, 3.0], [2, 4])
    assert parts(sparse.bincount(spv, weights=w, axis=-1)) == ([[0, 2], [1, 5]], [3.0, 3.0],
                                                               [2, 6])
    assert parts(sparse.bincount(SP([[0, 0], [2, 1]], [1, 2], [4, 3]), axis=-1)) == \
        ([[0, 1], [2, 2]], [1, 1], [4, 3])
    assert parts(sparse.bincount(SP([[0], [2]], [1, 2], [4]), axis=-1)) == \
        ([[1], [2]], [1, 1], [3])
    with pytest.raises(ValueError, match="mutually exclusive"):
        sparse.bincount([1], weights=[1], binary_output=True)
    with pytest.raises(ValueError, match="Only 0 and -1"):
        sparse.bincount([1], axis=1)
    with pytest.raises(IAE, match="non-negative"):
        sparse.bincount([1, -1, 3])
    with pytest.raises(IAE, match="1 or 2-dimensional"):
        sparse.bincount([[[1, 2], [2, 2]]], axis=-1)
    with pytest.raises(IAE, match="Weights and data must have the same shape"):
        sparse.bincount([1, 1], weights=[1.0])
    with pytest.raises(ValueError, match="must be a SparseTensor"):
        sparse.bincount(spv, weights=gt.constant([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError):
        sparse.bincount([1.0, 2.0])


def test_bincount_ragged():
    ragged = pytest.importorskip("gradtape.ragged")
    r = ragged.constant([[1, 1], [3]])
    assert parts(sparse.bincount(r, axis=-1)) == ([[0, 1], [1, 3]], [2, 1], [2, 4])


# --- map_values and specs ------------------------------------------------------------------------

def test_map_values():
    r = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    assert parts(sparse.map_values(gt.ones_like, r))[1] == [1.0, 1.0]
    assert parts(sparse.map_values(gt.add, r, 5.0))[1] == [6.0, 7.0]
    assert parts(sparse.map_values(gt.multiply, r, r))[1] == [1.0, 4.0]
    assert parts(sparse.map_values(gt.cast, r, dtype=gt.int32))[1] == [1, 2]
    assert parts(sparse.map_values(gt.add, x=r, y=2.0))[1] == [3.0, 4.0]
    assert parts(sparse.map_values(gt.add_n, [r, r]))[1] == [2.0, 4.0]
    with pytest.raises(IAE, match="Mismatched indices"):
        sparse.map_values(gt.multiply, r, SP([[0, 0], [1, 1]], [1.0, 2.0], [3, 4]))
    with pytest.raises(IAE, match="Mismatched shapes"):
        sparse.map_values(gt.multiply, r, SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 5]))
    with pytest.raises(IAE, match="Mismatched indices"):
        sparse.map_values(gt.multiply, r, SP([[0, 0]], [1.0], [3, 4]))
    with pytest.raises(ValueError, match="No SparseTensor"):
        sparse.map_values(gt.add, 1.0, 2.0)
    _, gv, _ = value_grads(lambda s, d: sparse.map_values(gt.square, s))
    close(gv, [2.0, -8.0, 18.0])


def test_sparse_tensor_spec():
    s = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
    spec = sparse.SparseTensorSpec([3, 4], gt.float32)
    assert repr(spec) == "SparseTensorSpec(TensorShape([3, 4]), gt.float32)"
    assert sparse.SparseTensorSpec.from_value(s) == spec
    assert repr(sparse.SparseTensorSpec()) == "SparseTensorSpec(TensorShape(None), gt.float32)"
    assert sparse.SparseTensorSpec([None, 4]).is_compatible_with(s)
    assert not sparse.SparseTensorSpec([None, 5]).is_compatible_with(s)
    assert not sparse.SparseTensorSpec([3, 4], gt.int32).is_compatible_with(s)
    assert sparse.SparseTensorSpec([None, 4]) == sparse.SparseTensorSpec([None, 4])
    assert hash(sparse.SparseTensorSpec([None, 4])) == hash(sparse.SparseTensorSpec([None, 4]))
    assert sparse.SparseTensorSpec().value_type is SP
    assert spec.shape.as_list() == [3, 4] and spec.dtype == gt.float32
    with pytest.raises(TypeError):
        sparse.SparseTensorSpec.from_value(3)


# --- embeddings ----------------------------------------------------------------------------------

PARAMS = np.arange(12, dtype=np.float32).reshape(6, 2) * 0.5 - 1
IDS = ([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]], [1, 3, 0, 5, 1, 1], [5, 3])
WEIGHTS = [2.0, 1.0, 0.5, 1.0, -1.0, 3.0]

ELS = {
    ("sum", False): [[2.0, 3.0], [-1.0, -0.5], [0.0, 0.0], [4.0, 5.5]],
    ("sum", True): [[2.0, 3.5], [-0.5, -0.25], [0.0, 0.0], [4.0, 5.5]],
    ("mean", False): [[1.0, 1.5], [-1.0, -0.5], [0.0, 0.0], [1.3333334, 1.8333334]],
    ("mean", True): [[0.6666667, 1.1666666], [-1.0, -0.5], [0.0, 0.0], [1.3333334, 1.8333334]],
    ("sqrtn", False): [[1.4142135, 2.1213202], [-1.0, -0.5], [0.0, 0.0], [2.309401, 3.1754265]],
    ("sqrtn", True): [[0.8944272, 1.5652475], [-1.0, -0.5], [0.0, 0.0], [1.2060454, 1.6583123]],
}
SAFE_W = {
    "sum": [[2.0, 3.5], [-0.5, -0.25], [0.0, 0.0], [4.0, 5.5], [0.0, 0.0]],
    "mean": [[0.6666667, 1.1666666], [-1.0, -0.5], [0.0, 0.0], [1.0, 1.5], [0.0, 0.0]],
    "sqrtn": [[0.8944272, 1.5652475], [-1.0, -0.5], [0.0, 0.0], [1.264911, 1.8973666],
              [0.0, 0.0]],
}


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_matches_tensorflow(combiner):
    ids = SP(*IDS)
    w = SP(IDS[0], WEIGHTS, IDS[2])
    p = gt.constant(PARAMS)
    close(sparse.embedding_lookup_sparse(p, ids, None, combiner=combiner).numpy(),
          ELS[combiner, False])
    close(sparse.embedding_lookup_sparse(p, ids, w, combiner=combiner).numpy(),
          ELS[combiner, True])
    safe = sparse.safe_embedding_lookup_sparse(p, ids, combiner=combiner).numpy()
    close(safe, ELS[combiner, False] + [[0.0, 0.0]])
    close(sparse.safe_embedding_lookup_sparse(p, ids, w, combiner=combiner).numpy(),
          SAFE_W[combiner])
    with_default = np.array(SAFE_W[combiner])
    with_default[[2, 4]] = [1.0, 1.5]
    close(sparse.safe_embedding_lookup_sparse(p, ids, w, combiner=combiner,
                                              default_id=2).numpy(), with_default)


def test_embedding_lookup_sparse_options_and_errors():
    ids = SP(*IDS)
    p = gt.constant(PARAMS)
    els = sparse.embedding_lookup_sparse
    close(els(p, ids, None).numpy(), ELS["mean", False])
    close(els(p, ids, None, combiner="sum", max_norm=1.0).numpy(),
          [[0.6246951, 1.2808688], [-0.8944272, -0.4472136], [0, 0], [0.66436386, 1.7474093]])
    close(els([p[:3], p[3:]], ids, None, combiner="sum").numpy(), ELS["sum", False])
    close(els(p, SP([[0, 0, 0], [1, 0, 1]], [1, 2], [2, 2, 2]), None).numpy(),
          [[0.0, 0.5], [1.0, 1.5]])
    close(els(p, SP([[0, 0], [1, 0]], gt.constant([1, 2], gt.int64), [2, 2]), None).numpy(),
          [[0.0, 0.5], [1.0, 1.5]])
    w64 = SP(IDS[0], np.array(WEIGHTS, np.float64), IDS[2])
    r = els(p, ids, w64, combiner="sum")
    assert r.dtype == gt.float32
    close(r.numpy(), ELS["sum", True])
    with pytest.raises(ValueError, match="combiner must be one of"):
        els(p, ids, None, combiner="max")
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        els(p, gt.constant([[1]]), None)
    with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
        els(p, ids, gt.ones([6]))
    with pytest.raises(ValueError, match="incompatible"):
        els(p, ids, SP([[0, 0]], [1.0], [5, 3]))
    with pytest.raises(IAE, match=r"Bad: indices\[0\] == -1 out of range \[0, 6\)"):
        els(p, SP([[0, 0], [1, 0]], [-1, 2], [2, 2]), None)
    with pytest.raises(IAE, match=r"Bad: indices\[0\] == 7 out of range \[0, 6\)"):
        els(p, SP([[0, 0], [1, 0]], [7, 2], [2, 2]), None)
    with pytest.raises(IAE, match="segment ids are not increasing"):
        els(p, SP([[1, 0], [0, 0]], [1, 2], [2, 2]), None)


def test_safe_embedding_lookup_sparse_shapes_and_errors():
    p = gt.constant(PARAMS)
    safe = sparse.safe_embedding_lookup_sparse
    close(safe(p, SP([[0, 0, 0], [1, 1, 1], [1, 1, 0]], [1, 2, -1], [2, 3, 2])).numpy(),
          [[[0.0, 0.5], [0, 0], [0, 0]], [[0, 0], [1.0, 1.5], [0, 0]]])
    close(safe(p, SP([[0, 0], [1, 0]], [-1, 2], [3, 2])).numpy(),
          [[0, 0], [1.0, 1.5], [0, 0]])
    with pytest.raises(ValueError, match="Missing embedding_weights"):
        safe(None, SP(*IDS))
    with pytest.raises(TypeError):
        safe(p, SP(*IDS), SP(IDS[0], np.array(WEIGHTS, np.float64), IDS[2]))


# TensorFlow's gradients of weighted(safe(...)) (params, weights) and weighted(els(...))
SAFE_GRADS = {
    "sum": ([[1.5, 2.0], [16.0, 20.0], [0, 0], [1.0, 2.0], [0, 0], [7.0, 8.0]],
            [1.0, 7.0, -5.0, 64.0, 4.0, 4.0]),
    "mean": ([[3.0, 4.0], [5.9166665, 7.3333335], [0, 0], [0.33333334, 0.6666667], [0, 0],
              [1.75, 2.0]], [-0.6666666, 1.3333335, 0.0, 11.25, 0.0, -3.75]),
    "sqrtn": ([[3.0, 4.0], [7.5352106, 9.378321], [0, 0], [0.4472136, 0.8944272], [0, 0],
               [2.2135944, 2.5298221]], [-1.1627553, 2.3255105, 0.0, 17.835247, 0.0,
                                         -5.945081]),
}
ELS_GRADS = {
    "sum": [[3.0, 4.0], [15.0, 18.0], [0, 0], [1.0, 2.0], [0, 0], [7.0, 8.0]],
    "mean": [[3.0, 4.0], [5.166667, 6.3333335], [0, 0], [0.5, 1.0], [0, 0],
             [2.3333335, 2.6666667]],
    "sqrtn": [[3.0, 4.0], [8.79001, 10.651817], [0, 0], [0.70710677, 1.4142135], [0, 0],
              [4.041452, 4.618802]],
}


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_gradients_match_tensorflow(combiner):
    pv, wv = gt.Variable(PARAMS), gt.Variable(WEIGHTS)
    ids = SP(*IDS)
    with gt.GradientTape() as tape:
        out = sparse.safe_embedding_lookup_sparse(pv, ids, SP(IDS[0], wv, IDS[2]),
                                                  combiner=combiner)
        loss = weighted(out)
    gp, gw = tape.gradient(loss, [pv, wv])
    close(gp.numpy(), SAFE_GRADS[combiner][0])
    close(gw.numpy(), SAFE_GRADS[combiner][1])
    with gt.GradientTape() as tape:
        loss = weighted(sparse.embedding_lookup_sparse(pv, ids, None, combiner=combiner))
    close(tape.gradient(loss, pv).numpy(), ELS_GRADS[combiner])


# --- finite differences for the ops whose result size depends on the values --------------------

def _rng():
    return np.random.default_rng(7)


def test_value_dependent_ops_against_finite_differences():
    ind = np.array(IND, np.int64)
    other = SP([[0, 0], [0, 1]], np.array([5.0, 6.0]), [3, 3])

    def f(v, d):
        s = SP(ind, v, [3, 3])
        added = sparse.add(s, SP(other.indices, other.values * d[0, 0], [3, 3]))
        sliced = sparse.slice(s, [1, 0], [2, 3])
        kept = sparse.retain(s, [True, False, True])
        filled, _ = sparse.fill_empty_rows(kept, d[1, 1])
        top = sparse.maximum(s, SP(ind[:1], v[:1] * 0.5 + 1.0, [3, 3]))
        pieces = sparse.split(sp_input=s, num_split=2, axis=1)
        red = sparse.reduce_sum(s, 0, output_is_sparse=True)
        return gt.concat([added.values ** 2, sliced.values * d[0, 1], filled.values ** 2,
                          top.values ** 2, pieces[0].values * pieces[0].values,
                          red.values * d[2, 2]], 0)
    rng = _rng()
    check_grads(f, [rng.standard_normal(3), rng.standard_normal((3, 3))])


def test_embeddings_against_finite_differences():
    ind = np.array(IDS[0], np.int64)
    ids = SP(ind, IDS[1], IDS[2])

    def f(p, w):
        sw = SP(ind, w, IDS[2])
        return (sparse.embedding_lookup_sparse(p, ids, sw, combiner="sqrtn")[:2]
                + sparse.safe_embedding_lookup_sparse(p, ids, sw, combiner="mean")[:2]
                * sparse.embedding_lookup_sparse(p, ids, None, combiner="mean")[:2])
    rng = _rng()
    check_grads(f, [rng.standard_normal((6, 2)), rng.uniform(0.5, 2.0, 6)])


# --- every device ----------------------------------------------------------------------------------

def test_ops_on_every_device(device):
    """Forward values and gradients equal the CPU's (TensorFlow's) on each device, nothing
    from the host mixes into an op, and the ops whose size is fixed do not make the host
    wait."""
    v = gt.Variable(np.array(MA[1], np.float32))
    b = gt.Variable(MB)
    assert v.device is device
    ind = gt.constant(np.array(MA[0], np.int64))
    before = gt.config.sync_count(device)
    with gt.GradientTape() as tape:
        s = SP(ind, v, MA[2])
        assert s.indices.device is device and s.dense_shape.device is device
        mm = sparse.sparse_dense_matmul(s, b)
        dense = sparse.to_dense(s, default_value=0.5)
        rs = sparse.reduce_sum(s, 1)
        rm = sparse.reduce_max(s, 0)
        sm = sparse.softmax(s)
        ro = sparse.reorder(sparse.transpose(s))
        cw = s * b[:, 0]
        seg = sparse.segment_mean(b, [0, 2, 2], [0, 0, 1], num_segments=3)
        loss = (weighted(mm) + weighted(dense) + weighted(rs) + weighted(rm)
                + weighted(sm.values) + weighted(ro.values) + weighted(cw.values)
                + weighted(seg))
    gv, gb = tape.gradient(loss, [v, b])
    assert gt.config.sync_count(device) == before
    assert mm.numpy().tolist() == [[2, 3], [12, 17], [16, 20]]
    assert dense.numpy().tolist() == [[0.5, 1, 0.5], [2, 0.5, 3], [0.5, 0.5, 4]]
    assert rs.numpy().tolist() == [1, 5, 4] and rm.numpy().tolist() == [2, 1, 4]
    close(sm.values.numpy(), [1.0, 0.26894143, 0.7310586, 1.0])
    assert parts(ro) == ([[0, 1], [1, 0], [2, 1], [2, 2]], [2, 1, 3, 4], [3, 3])
    assert cw.values.numpy().tolist() == [2, 0, 12, 16]
    # the dynamic-size ops run there too (the host waits for their sizes)
    added = sparse.add(s, SP(gt.constant(np.array([[0, 1], [2, 0]], np.int64)),
                             gt.constant([1.0, 7.0]), [3, 3]))
    assert parts(added) == ([[0, 1], [1, 0], [1, 2], [2, 0], [2, 2]],
                            [2, 2, 3, 7, 4], [3, 3])
    filled, empty = sparse.fill_empty_rows(sparse.retain(s, [False, True, True, False]), -1.0)
    assert parts(filled) == ([[0, 0], [1, 0], [1, 2], [2, 0]], [-1, 2, 3, -1], [3, 3])
    assert empty.numpy().tolist() == [True, False, True]
    assert parts(sparse.from_dense(dense - 0.5))[0] == MA[0]
    assert parts(sparse.bincount(gt.constant([[1, 1, 3], [0, 3, 3]]), axis=-1)) == \
        ([[0, 1], [0, 3], [1, 0], [1, 3]], [2, 1, 1, 2], [2, 4])
    ref_v, ref_b = _cpu_reference_grads()
    close(gv.numpy(), ref_v)
    close(gb.numpy(), ref_b)


def _cpu_reference_grads():
    with gt.device("cpu"):
        v = gt.Variable(np.array(MA[1], np.float32))
        b = gt.Variable(MB)
        with gt.GradientTape() as tape:
            s = SP(MA[0], v, MA[2])
            loss = (weighted(sparse.sparse_dense_matmul(s, b))
                    + weighted(sparse.to_dense(s, default_value=0.5))
                    + weighted(sparse.reduce_sum(s, 1)) + weighted(sparse.reduce_max(s, 0))
                    + weighted(sparse.softmax(s).values)
                    + weighted(sparse.reorder(sparse.transpose(s)).values)
                    + weighted((s * b[:, 0]).values)
                    + weighted(sparse.segment_mean(b, [0, 2, 2], [0, 0, 1], num_segments=3)))
        return [g.numpy() for g in tape.gradient(loss, [v, b])]


def test_strict_device_refuses_host_arrays_in_ops():
    """The strict device raises on any host array meeting its arrays: the sparse ops place
    every index and constant on the device themselves."""
    with gt.device("strict:0"):
        s = SP([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
        out = sparse.to_dense(sparse.reshape(sparse.expand_dims(s, 0), [12]))
        assert out.numpy().tolist()[6] == 2.0
        with pytest.raises(HostLeakError):
            s.values._value + np.ones(2, np.float32)


def test_is_tensor_of_composite_tensors_as_tensorflow():
    """tf.is_tensor is True for SparseTensor, RaggedTensor and IndexedSlices too."""
    assert gt.is_tensor(gt.SparseTensor([[0]], [1.0], [2]))
    assert gt.is_tensor(gt.ragged.constant([[1], [2, 3]]))
    assert gt.is_tensor(gt.IndexedSlices(gt.constant([[1.0]]), gt.constant([0])))
    assert gt.is_tensor(gt.constant(1.0)) and not gt.is_tensor(3) and not gt.is_tensor([1.0])


def test_zero_preserving_unary_ops_map_the_values_as_tensorflow():
    """tf.math.abs, square, sqrt, sin, tan, atan, asin, tanh, sign, erf and negative of a
    SparseTensor give a SparseTensor of the mapped values (the same indices); exp, which
    does not map 0 to 0, refuses it."""
    sp = gt.SparseTensor([[0, 1], [1, 0]], [-0.5, 2.0], [2, 2])
    for name in ("abs", "negative", "square", "sin", "tan", "atan", "tanh", "sign", "erf"):
        out = getattr(gt.math, name)(sp)
        assert isinstance(out, gt.SparseTensor)
        np.testing.assert_array_equal(out.indices.numpy(), [[0, 1], [1, 0]])
        np.testing.assert_allclose(out.values.numpy(),
                                   getattr(gt.math, name)(sp.values).numpy())
    with pytest.raises(TypeError, match="exp: expected a tensor"):
        gt.exp(sp)
    with gt.GradientTape() as tape:
        tape.watch(sp.values)
        total = gt.sparse.reduce_sum(gt.abs(sp))
    np.testing.assert_allclose(tape.gradient(total, sp.values).numpy(), [-1.0, 1.0])
