"""Scatters and segment reductions: TF's documented values, out-of-range indices per device,
and bad input. (Gradients: the spec table in tests/specs/core.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

from conftest import resolve_device

DATA = np.array([[1.0, 2, 3, 4], [5, 6, 7, 8], [4, 3, 2, 1]], np.float32)


def test_tf_documented_values(device):
    idx = [[4], [3], [1], [7]]
    upd = gt.constant([9.0, 10, 11, 12])
    np.testing.assert_array_equal(gt.scatter_nd(idx, upd, [8]).numpy(),
                                  [0, 11, 0, 10, 9, 0, 0, 12])
    t = gt.constant([1.0, 2, 3, 4, 5, 6, 7, 8])
    np.testing.assert_array_equal(gt.tensor_scatter_nd_update(t, idx, upd).numpy(),
                                  [1, 11, 3, 10, 9, 6, 7, 12])
    np.testing.assert_array_equal(gt.tensor_scatter_nd_add(t, idx, upd).numpy(),
                                  [1, 13, 3, 14, 14, 6, 7, 20])
    np.testing.assert_array_equal(gt.tensor_scatter_nd_sub(t, idx, upd).numpy(),
                                  [1, -9, 3, -6, -4, 6, 7, -4])
    # slices: whole rows of a 3-D tensor
    rows = gt.scatter_nd([[0], [2]], gt.ones([2, 2, 3]), [4, 2, 3])
    np.testing.assert_array_equal(rows.numpy().sum(axis=(1, 2)), [6, 0, 6, 0])
    d = gt.constant(DATA)
    np.testing.assert_array_equal(gt.math.unsorted_segment_sum(d, [0, 1, 0], 2).numpy(),
                                  [[5, 5, 5, 5], [5, 6, 7, 8]])
    np.testing.assert_array_equal(gt.math.segment_sum(d, [0, 0, 1]).numpy(),
                                  [[6, 8, 10, 12], [4, 3, 2, 1]])
    np.testing.assert_array_equal(gt.math.unsorted_segment_max(d, [0, 1, 0], 2).numpy(),
                                  [[4, 3, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(gt.math.unsorted_segment_min(d, [0, 1, 0], 2).numpy(),
                                  [[1, 2, 2, 1], [5, 6, 7, 8]])
    np.testing.assert_allclose(gt.math.unsorted_segment_mean(d, [0, 1, 0], 3).numpy(),
                               [[2.5, 2.5, 2.5, 2.5], [5, 6, 7, 8], [0, 0, 0, 0]])
    np.testing.assert_allclose(gt.math.unsorted_segment_sqrt_n(d, [0, 1, 0], 2).numpy()[0],
                               np.full(4, 5 / np.sqrt(2)), rtol=1e-6)
    # empty segments: the dtype's lowest (unsorted max), 0 (sorted ops)
    assert gt.math.unsorted_segment_max(d, [0, 0, 0], 2).numpy()[1, 0] == \
        np.finfo(np.float32).min
    np.testing.assert_array_equal(gt.math.segment_max(d, [0, 0, 2]).numpy()[1], [0, 0, 0, 0])
    np.testing.assert_allclose(gt.math.segment_mean(d, [1, 1, 1]).numpy(),
                               [[0, 0, 0, 0], [10 / 3, 11 / 3, 4, 13 / 3]], rtol=1e-6)


def test_python_updates_take_the_tensors_dtype(device):
    out = gt.tensor_scatter_nd_update(gt.constant([1, 2], dtype=gt.int64), [[0]], [5])
    assert out.dtype == gt.int64 and out.numpy().tolist() == [5, 2]
    out = gt.tensor_scatter_nd_add(gt.constant([1.0, 2.0], dtype=gt.float64), [[1]], [0.5])
    assert out.dtype == gt.float64 and out.numpy().tolist() == [1.0, 2.5]


def test_integer_data_and_repeated_indices(device):
    t = gt.constant(np.zeros(4, np.int32))
    out = gt.tensor_scatter_nd_add(t, [[1], [1], [3]], gt.constant([2, 5, 7], gt.int32))
    assert out.dtype == gt.int32 and out.numpy().tolist() == [0, 7, 0, 7]
    seg = gt.math.unsorted_segment_max(gt.constant([3, 9, 4], gt.int32), [1, 1, 0], 2)
    assert seg.numpy().tolist() == [4, 9]


def test_exact_float64_extremes_and_narrow_dtypes(device):
    """float64 maxima stay exact (no float32 atomic on a GPU); int8, uint8, float16 and bool
    scatter and reduce as on the CPU (CuPy's atomics take only 32- and 64-bit numbers)."""
    x = gt.constant(np.array([1e300, -1e300, 1.0 + 1e-10, 1.0]))
    np.testing.assert_array_equal(gt.math.unsorted_segment_max(x, [0, 0, 1, 1], 2).numpy(),
                                  [1e300, 1.0 + 1e-10])
    np.testing.assert_array_equal(gt.math.unsorted_segment_min(x, [0, 0, 1, 1], 2).numpy(),
                                  [-1e300, 1.0])
    for dt in (np.int8, np.uint8, np.int16, np.float16):
        d = gt.constant(np.array([[1, 5], [3, 2], [2, 7]], dt))
        mx = gt.math.unsorted_segment_max(d, [0, 0, 2], 3)
        assert mx.dtype == dt
        low = np.finfo(dt).min if np.dtype(dt).kind == "f" else np.iinfo(dt).min
        np.testing.assert_array_equal(mx.numpy(), np.array([[3, 5], [low, low], [2, 7]], dt))
        np.testing.assert_array_equal(gt.math.unsorted_segment_sum(d, [0, 0, 2], 3).numpy(),
                                      np.array([[4, 7], [0, 0], [2, 7]], dt))
    flags = gt.scatter_nd([[1], [1], [2]], gt.constant([True, True, False]), [3])
    assert flags.dtype == gt.bool and flags.numpy().tolist() == [False, True, False]


def test_negative_segment_ids_are_dropped_everywhere(device):
    d = gt.constant(DATA)
    out = gt.math.unsorted_segment_sum(d, [0, -1, 0], 2).numpy()
    np.testing.assert_array_equal(out, [[5, 5, 5, 5], [0, 0, 0, 0]])


def test_out_of_range_indices_raise_on_the_cpu_and_are_dropped_on_a_device():
    with gt.device("cpu"):
        with pytest.raises(gt.InvalidArgumentError,
                           match=r"scatter_nd: index 9 is out of range \[0, 8\) for axis 0"):
            gt.scatter_nd([[9]], [1.0], [8])
        with pytest.raises(gt.InvalidArgumentError,
                           match=r"segment_ids\[1\] = 3 is out of range \[0, 2\)"):
            gt.math.unsorted_segment_sum(gt.constant(DATA), [0, 3, 1], 2)
    dev = resolve_device("strict")
    with gt.device(dev):
        # the dropped update must not clobber a kept one at the same (redirected) place
        t = gt.zeros([3])
        out = gt.tensor_scatter_nd_update(t, [[0], [5], [-2]], gt.constant([7.0, 8.0, 9.0]))
        assert dev.sync_count == 0
        np.testing.assert_array_equal(out.numpy(), [7, 0, 0])
        np.testing.assert_array_equal(gt.scatter_nd([[1], [8]], [1.0, 2.0], [3]).numpy(),
                                      [0, 1, 0])
        s = gt.math.unsorted_segment_max(gt.constant(DATA), [0, 4, 1], 2)
        np.testing.assert_array_equal(s.numpy(), [DATA[0], DATA[2]])
        x = gt.Variable(np.arange(3.0, dtype=np.float32))
        with gt.GradientTape() as tape:
            y = gt.reduce_sum(gt.scatter_nd([[0], [7]], x[:2] * 3.0, [2]))
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3, 0, 0])


def test_bad_input_names_the_op_and_the_values():
    with pytest.raises(ValueError, match=r"scatter_nd: updates have shape \(3,\); indices of "
                                         r"shape \(2, 1\) into shape \(8,\) need updates of "
                                         r"shape \(2,\)"):
        gt.scatter_nd([[1], [2]], [1.0, 2.0, 3.0], [8])
    with pytest.raises(ValueError, match=r"need a last axis of 1 to 1 coordinates"):
        gt.scatter_nd([[1, 2]], [1.0], [8])
    with pytest.raises(TypeError, match="updates are float64, the tensor float32"):
        gt.tensor_scatter_nd_update(gt.zeros([3]), [[0]], gt.constant([1.0], gt.float64))
    with pytest.raises(TypeError, match="indices must be integers"):
        gt.scatter_nd([[0.5]], [1.0], [2])
    with pytest.raises(ValueError, match=r"segment_ids of shape \(2,\) must be a prefix of the "
                                         r"data's shape \(3, 4\)"):
        gt.math.unsorted_segment_sum(gt.constant(DATA), [0, 1], 2)
    with pytest.raises(gt.InvalidArgumentError, match="must be sorted and non-negative"):
        gt.math.segment_sum(gt.constant(DATA), [1, 0, 1])
    with pytest.raises(TypeError, match="data must be floating point, got int32"):
        gt.math.unsorted_segment_mean(gt.constant([1, 2]), [0, 0], 1)


def test_segment_ops_train_an_embedding_bag():
    """A bag-of-embeddings model (segment mean over looked-up rows) learns its targets."""
    rng = np.random.default_rng(0)
    table = gt.Variable(rng.standard_normal((6, 3)).astype(np.float32) * 0.1)
    ids = gt.constant([0, 2, 2, 5, 1, 3, 4])
    bags = gt.constant([0, 0, 0, 1, 1, 2, 2])
    target = gt.constant(np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32))
    opt = gt.optimizers.Adam(0.1)
    for _ in range(150):
        with gt.GradientTape() as tape:
            pooled = gt.math.segment_mean(gt.gather(table, ids), bags)
            loss = gt.reduce_mean(gt.square(pooled - target))
        opt.apply_gradients([(tape.gradient(loss, table), table)])
    assert float(loss) < 1e-3
