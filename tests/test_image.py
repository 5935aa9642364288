"""gt.image: TF 2's resize (half-pixel centres), antialiasing, flips."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

SQUARE = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)[None, :, :, None]


def test_bilinear_and_nearest_match_tensorflow(device):
    up = gt.image.resize(gt.constant(SQUARE), [4, 4])
    assert up.dtype == gt.float32 and up.shape == (1, 4, 4, 1) and up.device == device.name
    np.testing.assert_allclose(up.numpy()[0, :, :, 0], [[1.0, 1.25, 1.75, 2.0],
                                                         [1.5, 1.75, 2.25, 2.5],
                                                         [2.5, 2.75, 3.25, 3.5],
                                                         [3.0, 3.25, 3.75, 4.0]])
    near = gt.image.resize(gt.constant(SQUARE.astype(np.int32)), [3, 3], method="nearest")
    assert near.dtype == gt.int32
    np.testing.assert_array_equal(near.numpy()[0, :, :, 0], [[1, 2, 2], [3, 4, 4], [3, 4, 4]])
    # integer images come back as float32 from bilinear; one image without a batch axis
    single = gt.image.resize(gt.constant(np.arange(16, dtype=np.uint8).reshape(4, 4, 1)), [2, 2])
    assert single.dtype == gt.float32 and single.shape == (2, 2, 1)
    np.testing.assert_allclose(single.numpy()[:, :, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_antialiased_downscaling_averages_with_a_triangle_filter():
    x = np.arange(8, dtype=np.float64).reshape(1, 1, 8, 1)
    plain = gt.image.resize(gt.constant(x), [1, 4]).numpy().ravel()
    np.testing.assert_allclose(plain, [0.5, 2.5, 4.5, 6.5])       # two-tap at half pixels
    smooth = gt.image.resize(gt.constant(x), [1, 4], antialias=True).numpy().ravel()
    # interior: taps (0.25, 0.75, 0.75, 0.25) / 2; borders renormalised over what exists
    np.testing.assert_allclose(smooth[1:3], [(0.25 * 1 + 0.75 * 2 + 0.75 * 3 + 0.25 * 4) / 2,
                                             (0.25 * 3 + 0.75 * 4 + 0.75 * 5 + 0.25 * 6) / 2])
    np.testing.assert_allclose(smooth[0], (0.75 * 0 + 0.75 * 1 + 0.25 * 2) / 1.75)
    # a constant image stays constant, whatever the sizes
    const = gt.image.resize(gt.fill([2, 5, 7, 3], 3.0), [3, 2], antialias=True)
    np.testing.assert_allclose(const.numpy(), 3.0, rtol=1e-6)


def test_resize_gradients_and_aspect_ratio():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 2))
    check_grads(lambda t: gt.image.resize(t, [4, 3]) ** 2, [x], order=2)
    check_grads(lambda t: gt.image.resize(t, [2, 7], antialias=True), [x], order=1)
    check_grads(lambda t: gt.image.resize(t, [6, 2], method="nearest") * t[:, :1, :1, :],
                [x], order=2)
    kept = gt.image.resize(gt.zeros([1, 10, 20, 1]), [8, 8], preserve_aspect_ratio=True)
    assert kept.shape == (1, 4, 8, 1)


def test_flips(device):
    img = gt.constant(np.arange(12.0).reshape(1, 2, 3, 2))
    np.testing.assert_array_equal(gt.image.flip_left_right(img).numpy(),
                                  img.numpy()[:, :, ::-1])
    np.testing.assert_array_equal(gt.image.flip_up_down(img).numpy(), img.numpy()[:, ::-1])
    batch = gt.constant(np.repeat(np.arange(6.0).reshape(1, 1, 6, 1), 200, axis=0))
    out = gt.image.random_flip_left_right(batch, seed=3).numpy()
    flipped = (out[:, 0, 0, 0] == 5.0)
    assert ((out[:, 0, 0, 0] == 0.0) | flipped).all()
    assert 60 < flipped.sum() < 140                 # about half, drawn per image
    single = gt.image.random_flip_up_down(gt.constant(np.arange(4.0).reshape(2, 2, 1)))
    assert single.shape == (2, 2, 1)


def test_bad_input():
    with pytest.raises(ValueError, match=r"images must be \[batch, height, width, channels\]"):
        gt.image.resize(gt.zeros([3, 3]), [2, 2])
    with pytest.raises(ValueError, match=r"size must be two positive ints"):
        gt.image.resize(gt.zeros([3, 3, 1]), [0, 2])
    with pytest.raises(ValueError, match="method 'bicubic' is not implemented"):
        gt.image.resize(gt.zeros([3, 3, 1]), [2, 2], method="bicubic")
