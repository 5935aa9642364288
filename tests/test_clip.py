"""clip_by_norm, clip_by_global_norm and global_norm: TF's values, their gradients against
float64 finite differences (second order too), the zero and non-finite cases, devices."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads


def test_clip_by_norm_values_match_tf_formula():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32) * 3
    for axes, clip in [(None, 1.5), ([1], 2.0), ([0], 0.5), (None, 100.0)]:
        got = gt.clip_by_norm(gt.constant(a), clip, axes=axes).numpy()
        norm = np.sqrt((a.astype(np.float64) ** 2).sum(axis=None if axes is None else
                                                      tuple(axes), keepdims=True))
        np.testing.assert_allclose(got, a * clip / np.maximum(norm, clip), rtol=1e-6)
    assert gt.clip_by_norm(gt.constant([3.0, 4.0]), gt.constant(1.0)).numpy().tolist() == \
        pytest.approx([0.6, 0.8])
    np.testing.assert_array_equal(gt.clip_by_norm(gt.zeros([3]), 1.0).numpy(), [0, 0, 0])


def test_clip_by_norm_gradients():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    check_grads(lambda x: gt.clip_by_norm(x, 1.0), [a])               # clipped
    check_grads(lambda x: gt.clip_by_norm(x, 50.0), [a])              # left alone
    check_grads(lambda x: gt.clip_by_norm(x, 1.5, axes=[1]), [a])
    check_grads(lambda x, c: gt.clip_by_norm(x, c), [a, np.float64(1.3)])
    # an all-zero input: the identity's gradient, not NaN (the sqrt is kept off 0)
    z = gt.Variable(np.zeros(3))
    with gt.GradientTape() as tape:
        y = gt.reduce_sum(gt.clip_by_norm(z, 1.0) * gt.constant([1.0, 2.0, 3.0], gt.float64))
    np.testing.assert_array_equal(tape.gradient(y, z).numpy(), [1, 2, 3])


def test_global_norm_and_clip_by_global_norm():
    a = gt.constant([3.0, 4.0])
    b = gt.constant([[12.0]])
    assert gt.linalg.global_norm([a, None, b]).numpy() == pytest.approx(13.0)
    clipped, norm = gt.clip_by_global_norm([a, None, b], 6.5)
    assert norm.numpy() == pytest.approx(13.0) and clipped[1] is None
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 2.0])
    np.testing.assert_allclose(clipped[2].numpy(), [[6.0]])
    same, _ = gt.clip_by_global_norm((a, b), 100.0)            # below the limit: unchanged
    np.testing.assert_allclose(same[0].numpy(), a.numpy())
    given, used = gt.clip_by_global_norm([a], 1.0, use_norm=10.0)
    assert used.numpy() == 10.0 and given[0].numpy().tolist() == pytest.approx([0.3, 0.4])
    inf, norm = gt.clip_by_global_norm([gt.constant([np.inf, 1.0]), a], 1.0)
    assert np.isinf(norm.numpy()) and all(np.isnan(t.numpy()).all() for t in inf)


def test_clip_by_global_norm_gradients():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(4)

    def f(x, y):
        out, norm = gt.clip_by_global_norm([x, y], 1.2)
        return gt.reduce_sum(out[0] * out[0]) + gt.reduce_sum(out[1]) + norm
    check_grads(f, [a, b])
    check_grads(lambda x, y: gt.linalg.global_norm([x, y]), [a, b])


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="clip_by_norm: t must be a float tensor, got int32"):
        gt.clip_by_norm(gt.constant([1, 2]), 1.0)
    with pytest.raises(ValueError, match="clip_by_norm: clip_norm must be a scalar"):
        gt.clip_by_norm(gt.constant([1.0, 2.0]), gt.constant([1.0, 2.0]))
    with pytest.raises(TypeError, match="clip_by_norm: clip_norm has dtype float64"):
        gt.clip_by_norm(gt.constant([1.0, 2.0]), gt.constant(1.0, gt.float64))
    with pytest.raises(TypeError, match="clip_by_global_norm: t_list should be a sequence"):
        gt.clip_by_global_norm(gt.constant([1.0]), 1.0)
    with pytest.raises(TypeError, match="global_norm: the tensors have different dtypes"):
        gt.linalg.global_norm([gt.constant([1.0]), gt.constant([1.0], gt.float64)])
    assert float(gt.linalg.global_norm([None])) == 0.0


def test_clipping_stays_on_the_device_without_host_reads():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        a = gt.constant(np.array([3.0, 4.0], np.float32))
        b = gt.constant(np.array([12.0], np.float32))
        dev.reset_counters()
        clipped, norm = gt.clip_by_global_norm([a, b], 6.5)
        c = gt.clip_by_norm(a, 1.0)
        assert dev.sync_count == 0 and dev.transfer_count == 0
    assert norm.device is dev and clipped[0].device is dev
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 2.0])
    np.testing.assert_allclose(c.numpy(), [0.6, 0.8])


def test_clip_by_value_with_min_above_max_gives_min_as_tensorflow():
    """TensorFlow computes max(min(t, max), min): with min > max every value is min, and the
    gradient goes to min; at the bounds (min <= max) it still passes to t."""
    x, lo, hi = gt.constant([1.0, 2.5, 5.0]), gt.constant(3.0), gt.constant(2.0)
    with gt.GradientTape() as tape:
        tape.watch([x, lo, hi])
        loss = gt.reduce_sum(gt.clip_by_value(x, lo, hi) * gt.constant([1.0, 2.0, 4.0]))
    assert float(loss) == 21.0
    gx, glo, ghi = tape.gradient(loss, [x, lo, hi])
    np.testing.assert_array_equal(gx.numpy(), [0, 0, 0])
    assert (float(glo), float(ghi)) == (7.0, 0.0)
    x, lo, hi = gt.constant([1.0, 2.0, 2.5, 3.0, 5.0]), gt.constant(2.0), gt.constant(3.0)
    with gt.GradientTape() as tape:
        tape.watch([x, lo, hi])
        loss = gt.reduce_sum(gt.clip_by_value(x, lo, hi) * gt.constant([1., 2., 4., 8., 16.]))
    gx, glo, ghi = tape.gradient(loss, [x, lo, hi])
    np.testing.assert_array_equal(gx.numpy(), [0, 2, 4, 8, 0])
    assert (float(loss), float(glo), float(ghi)) == (88.0, 1.0, 16.0)
