"""sort, argsort and top_k: TF's order (ties in index order both ways), their gradients
against float64 differences, devices and bad input."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads


def test_sort_and_argsort_match_numpy_with_ties_in_index_order():
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 5.0, -1.0]], np.float32)
    np.testing.assert_array_equal(gt.sort(x).numpy(), np.sort(x, axis=-1))
    np.testing.assert_array_equal(gt.sort(x, direction="DESCENDING").numpy(),
                                  -np.sort(-x, axis=-1))
    np.testing.assert_array_equal(gt.argsort(x).numpy(), [[1, 3, 2, 0], [3, 0, 1, 2]])
    np.testing.assert_array_equal(gt.argsort(x, direction="DESCENDING").numpy(),
                                  [[0, 2, 1, 3], [1, 2, 0, 3]])
    np.testing.assert_array_equal(gt.sort(x, axis=0).numpy(), np.sort(x, axis=0))
    np.testing.assert_array_equal(gt.argsort(x, axis=0, direction="DESCENDING").numpy(),
                                  [[0, 1, 1, 0], [1, 0, 0, 1]])
    assert gt.argsort(x).dtype == gt.int32
    ints = np.array([np.iinfo(np.int32).min, 7, 0, np.iinfo(np.int32).max, 7], np.int32)
    np.testing.assert_array_equal(gt.argsort(ints, direction="DESCENDING").numpy(),
                                  [3, 1, 4, 2, 0])
    np.testing.assert_array_equal(gt.sort(np.array([2, 0, 255], np.uint8),
                                          direction="DESCENDING").numpy(), [255, 2, 0])
    np.testing.assert_array_equal(gt.sort(np.array([True, False, True])).numpy(),
                                  [False, True, True])


def test_top_k():
    x = gt.constant([[3.0, 1.0, 2.0, 3.0], [0.0, 5.0, 5.0, -1.0]])
    values, indices = gt.math.top_k(x, 3)
    np.testing.assert_array_equal(values.numpy(), [[3, 3, 2], [5, 5, 0]])
    np.testing.assert_array_equal(indices.numpy(), [[0, 3, 2], [1, 2, 0]])
    assert indices.dtype == gt.int32 and gt.nn.top_k is gt.math.top_k
    assert gt.math.top_k(x).values.shape == (2, 1)
    assert gt.math.top_k(x, k=gt.constant(4)).indices.shape == (2, 4)
    assert gt.math.top_k(x, 0).values.shape == (2, 0)
    assert gt.math.top_k(x, 2, index_type=gt.int64).indices.dtype == gt.int64


def test_gradients():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5))
    check_grads(lambda v: gt.sort(v), [a])
    check_grads(lambda v: gt.sort(v, axis=0, direction="DESCENDING"), [a])
    check_grads(lambda v: gt.math.top_k(v, 2).values, [a])
    v = gt.Variable([[3.0, 1.0, 2.0]])
    with gt.GradientTape() as tape:
        y = gt.reduce_sum(gt.sort(v) * gt.constant([[1.0, 2.0, 3.0]]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [[3, 1, 2]])
    with gt.GradientTape() as tape:
        y = gt.reduce_sum(gt.cast(gt.argsort(v), gt.float32))
    assert tape.gradient(y, v) is None                       # positions: no gradient


def test_on_the_device_without_host_reads():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        x = gt.constant(np.array([[3.0, 1.0, 2.0], [0.0, -2.0, 4.0]], np.float32))
        dev.reset_counters()
        s = gt.sort(x, direction="DESCENDING")
        top = gt.math.top_k(x, 2)
        order = gt.argsort(x, axis=0)
        assert dev.sync_count == 0 and dev.transfer_count == 0
    np.testing.assert_array_equal(s.numpy(), [[3, 2, 1], [4, 0, -2]])
    np.testing.assert_array_equal(top.indices.numpy(), [[0, 2], [2, 0]])
    np.testing.assert_array_equal(order.numpy(), [[1, 1, 0], [0, 0, 1]])


def test_bad_input_is_named():
    x = gt.constant([3.0, 1.0])
    with pytest.raises(ValueError, match="sort: direction must be 'ASCENDING' or 'DESCENDING'"):
        gt.sort(x, direction="UP")
    with pytest.raises(ValueError, match="argsort: axis 1 is out of range for values of rank 1"):
        gt.argsort(x, axis=1)
    with pytest.raises(ValueError, match="sort: values must have at least one axis"):
        gt.sort(gt.constant(1.0))
    with pytest.raises(ValueError, match="top_k: input must have at least k=3 columns"):
        gt.math.top_k(x, 3)
    with pytest.raises(ValueError, match="top_k: k must be non-negative"):
        gt.math.top_k(x, -1)
    with pytest.raises(TypeError, match="top_k: k must be an int"):
        gt.math.top_k(x, 1.5)
    with pytest.raises(TypeError, match="argsort: axis must be an int"):
        gt.argsort(x, axis=None)


@pytest.mark.parametrize("device", ["cpu", "strict:0"])
def test_top_k_ranks_nan_above_infinity_as_tf(device):
    with gt.device(device):
        values, indices = gt.nn.top_k(gt.constant(np.array([1.0, np.nan, 3.0, np.inf],
                                                            np.float32)), 3)
    np.testing.assert_array_equal(values.numpy(), [np.nan, np.inf, 3.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 3, 2])
