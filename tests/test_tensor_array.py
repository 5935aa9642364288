"""gt.TensorArray: TF 2.21's eager tf.TensorArray (values, errors and gradients; the expected
numbers and messages were obtained from TensorFlow 2.21)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.errors import OutOfRangeError
from gradtape.tensor_array import TensorArray
from gradtape.testing import check_grads


def test_write_read_stack_as_the_tf_docstring(device):
    ta = TensorArray(gt.float32, size=0, dynamic_size=True, clear_after_read=False)
    ta = ta.write(0, 10)
    ta = ta.write(1, 20)
    ta = ta.write(2, 30)
    assert ta.read(0).numpy() == 10.0 and ta.read(1).numpy() == 20.0
    assert ta.read(2).numpy() == 30.0
    s = ta.stack()
    assert s.dtype == gt.float32 and s.device == device
    np.testing.assert_array_equal(s.numpy(), [10.0, 20.0, 30.0])
    ti = TensorArray(gt.int32, size=3)
    for i, v in enumerate([[1, 2], [3, 4], [5, 6]]):
        assert ti.write(i, gt.constant(v)) is ti        # write returns the TensorArray
    np.testing.assert_array_equal(ti.stack().numpy(), [[1, 2], [3, 4], [5, 6]])
    assert ti.stack().dtype == gt.int32
    assert ti.size().dtype == gt.int32 and int(ti.size().numpy()) == 3


def test_properties_and_bookkeeping():
    ta = TensorArray(gt.float32, size=2)
    assert ta.dtype == gt.float32 and ta.dynamic_size is False and ta.handle is None
    assert ta.flow.dtype == gt.int32 and int(ta.flow.numpy()) == 0
    assert ta.element_shape.rank is None              # unknown until the first write
    ta = ta.write(gt.constant(1), [1.0, 2.0])        # a tensor index is read on the host
    assert ta.element_shape == [2]
    assert ta.identity() is ta
    assert ta.mark_used() is None
    ta.close()
    assert int(ta.size().numpy()) == 0
    partial = TensorArray(gt.float32, size=1, element_shape=[None, 2])
    partial = partial.write(0, gt.zeros([5, 2]))
    assert partial.element_shape == [5, 2]
    free = TensorArray(gt.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [1.0, 2])
    assert free.element_shape.rank is None
    assert "TensorArray" in repr(free)
    grow = TensorArray(gt.float32, size=1, dynamic_size=True).write(3, 1.0)
    np.testing.assert_array_equal(grow.stack().numpy(), [0.0, 0.0, 0.0, 1.0])


def test_reads_clear_and_unwritten_elements_are_zeros(device):
    ta = TensorArray(gt.float32, size=2)
    ta = ta.write(0, 1.0)
    ta = ta.write(0, 2.0)                    # eager TF overwrites without complaint
    assert ta.read(0).numpy() == 2.0
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"Could not read index 0 twice because it was cleared"):
        ta.read(0)
    assert ta.read(1).numpy() == 0.0         # never written: zeros of the element shape
    a = TensorArray(gt.float32, size=2).write(0, 5.0).write(1, 6.0)
    assert a.read(0).numpy() == 5.0
    np.testing.assert_array_equal(a.stack().numpy(), [0.0, 6.0])   # as TF: read cleared it
    np.testing.assert_array_equal(a.stack().numpy(), [0.0, 6.0])   # stack does not clear
    keep = TensorArray(gt.float32, size=1, clear_after_read=False).write(0, 5.0)
    assert keep.read(0).numpy() == 5.0 and keep.read(0).numpy() == 5.0
    b = TensorArray(gt.float32, size=2, element_shape=[2]).write(0, [1.0, 2.0])
    got = b.stack()
    assert got.device == device
    np.testing.assert_array_equal(got.numpy(), [[1.0, 2.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"index 0 was never written and the element shape "
                                         r"<unknown> is not fully defined"):
        TensorArray(gt.float32, size=2).read(0)


def test_empty_arrays():
    e = TensorArray(gt.float32, size=0, dynamic_size=True)
    assert e.stack().shape == (0,) and int(e.size().numpy()) == 0
    s = TensorArray(gt.float32, size=0, dynamic_size=True, element_shape=[3])
    assert s.stack().shape == (0, 3) and s.stack().dtype == gt.float32
    assert s.gather([]).shape == (0, 3)
    assert TensorArray(gt.float32, size=0, element_shape=[2, 3]).concat().shape == (0, 3)


def test_errors_as_tensorflow():
    ta = TensorArray(gt.float32, size=2)
    with pytest.raises(OutOfRangeError, match=r"Tried to read from index 5 but array size is: 2"):
        ta.read(5)
    with pytest.raises(OutOfRangeError, match=r"Reading from negative indices \(index -1\)"):
        ta.read(-1)
    with pytest.raises(OutOfRangeError, match=r"Tried to write to index 2 but array is not "
                                              r"resizeable and size is: 2"):
        ta.write(2, 1.0)
    with pytest.raises(OutOfRangeError, match=r"Writing to negative indices \(index -1\)"):
        ta.write(-1, 1.0)
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"TensorArray dtype is float32 but Op is trying to write dtype "
                             r"int32"):
        ta.write(1, gt.constant(1, gt.int32))
    with pytest.raises(gt.errors.InvalidArgumentError, match="trying to write dtype float32"):
        TensorArray(gt.int32, size=1).write(0, 1.5)
    ta = ta.write(1, 3)                      # Python numbers take the array's dtype
    ta = ta.write(0, np.float64(3.0))
    assert ta.stack().dtype == gt.float32
    tb = TensorArray(gt.float32, size=2).write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(3,\)\), "
                                         r"expected \(\(2,\)\)"):
        tb.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"Incompatible shape"):
        TensorArray(gt.float32, size=2, element_shape=[2]).write(0, [1.0, 2.0, 3.0])
    ragged = TensorArray(gt.float32, size=2, infer_shape=False).write(0, [1.0]).write(1, [1., 2.])
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"Shapes of all inputs must match: values\[0\].shape = \[1\] != "
                             r"values\[1\].shape = \[2\]"):
        ragged.stack()
    with pytest.raises(ValueError, match="Size must be declared"):
        TensorArray(gt.float32)
    with pytest.raises(ValueError, match="handles are not supported"):
        TensorArray(gt.float32, size=1, handle=object())
    with pytest.raises(TypeError, match=r"TensorArray.write: index must be an integer"):
        TensorArray(gt.float32, size=1).write(0.5, 1.0)
    with pytest.raises(ValueError, match=r"size must be >= 0, got -1"):
        TensorArray(gt.float32, size=-1)


def test_unstack_gather_scatter_split_concat(device):
    te = TensorArray(gt.float32, size=3).unstack(gt.reshape(gt.range(6.0), [3, 2]))
    assert te.element_shape == [2]
    np.testing.assert_array_equal(te.gather([2, 0]).numpy(), [[4.0, 5.0], [0.0, 1.0]])
    np.testing.assert_array_equal(te.gather(gt.constant([1])).numpy(), [[2.0, 3.0]])
    with pytest.raises(OutOfRangeError, match=r"gather: index 5 is out of range for a "
                                              r"TensorArray of size 3"):
        te.gather([5])
    # eager TF: unstacking fewer slices leaves the array holding exactly those
    assert int(TensorArray(gt.float32, size=4).unstack(gt.zeros([3, 2])).size().numpy()) == 3
    with pytest.raises(ValueError, match=r"Cannot unstack 3 tensors into a TensorArray of "
                                         r"static size 2"):
        TensorArray(gt.float32, size=2).unstack(gt.zeros([3, 2]))
    with pytest.raises(gt.errors.InvalidArgumentError, match="trying to write dtype int32"):
        TensorArray(gt.float32, size=3).unstack(gt.zeros([3, 2], gt.int32))
    sc = TensorArray(gt.float32, size=4).scatter([3, 1], gt.constant([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(sc.stack().numpy(), [[0, 0], [3, 4], [0, 0], [1, 2]])
    with pytest.raises(OutOfRangeError, match=r"Tried to write to index 3 but array is not "
                                              r"resizeable and size is: 2"):
        TensorArray(gt.float32, size=2).scatter([3], gt.constant([[1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"scatter: 2 indices for a value of 1 slices"):
        TensorArray(gt.float32, size=2).scatter([0, 1], gt.constant([[1.0, 2.0]]))
    sp = TensorArray(gt.float32, size=2, clear_after_read=False).split(gt.range(5.0), [2, 3])
    np.testing.assert_array_equal(sp.read(1).numpy(), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(sp.concat().numpy(), [0.0, 1.0, 2.0, 3.0, 4.0])
    cleared = TensorArray(gt.float32, size=2).split(gt.range(5.0), [2, 3])
    cleared.read(1)
    with pytest.raises(ValueError, match=r"concat: index 1 was never written"):
        cleared.concat()            # a cleared element of no known shape has no zeros
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"Expected sum of lengths to be equal to values.shape\[0\], but "
                             r"sum of lengths is 4 and value's shape is: \[5\]"):
        TensorArray(gt.float32, size=2).split(gt.range(5.0), [2, 2])
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"TensorArray's size is not equal to the size of lengths \(3 vs. "
                             r"2\), and the TensorArray is not marked as dynamically "
                             r"resizeable."):
        TensorArray(gt.float32, size=3).split(gt.range(5.0), [2, 3])
    with pytest.raises(gt.errors.InvalidArgumentError, match="trying to write dtype int32"):
        TensorArray(gt.float32, size=2).split(gt.range(5), [2, 3])
    c = TensorArray(gt.float32, size=2, infer_shape=False).write(0, [1.0, 2.0]).write(1, [3.0])
    out = c.concat()
    assert out.device == device
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(1,\)\)"):
        TensorArray(gt.float32, size=2).write(0, [1.0, 2.0]).write(1, [3.0])
    with pytest.raises(gt.errors.InvalidArgumentError,
                       match=r"Concat saw a scalar shape at index 0 but requires at least "
                             r"vectors."):
        TensorArray(gt.float32, size=2).write(0, 1.0).write(1, 2.0).concat()


def _rnn_inputs():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    w = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    return x, w


def test_gradient_of_an_rnn_loop_through_write_and_stack(device):
    """h_t = tanh(x_t W + h_{t-1}); loss = sum(stack(h)^2): the gradient with respect to W is
    TF 2.21's, and the same as with a Python list and gt.stack."""
    x0, w0 = _rnn_inputs()
    x = gt.constant(x0)
    w = gt.Variable(w0)

    def run(use_ta):
        with gt.GradientTape() as tape:
            ta = TensorArray(gt.float32, size=3) if use_ta else []
            h = gt.zeros([1, 2])
            for t in range(3):
                h = gt.tanh(gt.matmul(x[t:t + 1], w) + h)
                if use_ta:
                    ta = ta.write(t, h[0])
                else:
                    ta.append(h[0])
            loss = gt.reduce_sum((ta.stack() if use_ta else gt.stack(ta)) ** 2)
        return tape.gradient(loss, w)

    g = run(True)
    assert g.device == device
    tf_grad = [[-0.08148244023323059, 0.5521737933158875],
               [-0.03150240704417229, 0.7928614616394043],
               [0.018477611243724823, 1.033549189567566],
               [0.06845763325691223, 1.2742369174957275]]
    np.testing.assert_allclose(g.numpy(), tf_grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), run(False).numpy(), rtol=1e-6, atol=1e-7)


def test_gradient_through_unstack_read_gather_concat(device):
    x0, w0 = _rnn_inputs()
    x = gt.constant(x0)
    w = gt.Variable(w0)
    with gt.GradientTape() as tape:
        ta = TensorArray(gt.float32, size=3, clear_after_read=False)
        ta = ta.unstack(x * w[0, 0])
        loss = (gt.reduce_sum(ta.read(1) * ta.read(1)) + gt.reduce_sum(ta.gather([0, 0]))
                + gt.reduce_sum(ta.concat() * 3.0))
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(),
                               [[18.479999542236328, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
                               rtol=1e-5)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 3))
    w0 = rng.standard_normal((3, 3)) * 0.5

    def recurrent(x, w):
        ta = TensorArray(gt.float64, size=0, dynamic_size=True, clear_after_read=False)
        h = gt.zeros([1, 3], dtype=gt.float64)
        for t in range(4):
            h = gt.tanh(gt.matmul(x[t:t + 1], w) + gt.matmul(h, w))
            ta = ta.write(t, h[0])
        return ta.stack() * ta.read(2)

    def pieces(x, w):
        ta = TensorArray(gt.float64, size=2, infer_shape=False).split(gt.matmul(x, w), [1, 3])
        sc = TensorArray(gt.float64, size=5).scatter([4, 0], x[1:3] * 2.0)
        return gt.concat([ta.concat() ** 2, sc.gather([0, 4, 1]) * 3.0], axis=0)

    check_grads(recurrent, [xs, w0], order=2)
    check_grads(pieces, [xs, w0], order=2)


def test_write_loop_inside_while_loop(device):
    """The TF idiom: a TensorArray as a while_loop variable, rebound by each write."""
    x0, w0 = _rnn_inputs()
    x = gt.constant(x0)
    w = gt.Variable(w0)
    with gt.GradientTape() as tape:
        def body(t, h, ta):
            h = gt.tanh(gt.matmul(gt.gather(x, gt.reshape(t, [1])), w) + h)
            return t + 1, h, ta.write(t, h[0])

        _, _, ta = gt.while_loop(lambda t, h, ta: t < 3, body,
                                 [gt.constant(0), gt.zeros([1, 2]),
                                  TensorArray(gt.float32, size=3)])
        loss = gt.reduce_sum(ta.stack() ** 2)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(),
                               [[-0.08148244023323059, 0.5521737933158875],
                                [-0.03150240704417229, 0.7928614616394043],
                                [0.018477611243724823, 1.033549189567566],
                                [0.06845763325691223, 1.2742369174957275]], rtol=1e-5, atol=1e-6)
