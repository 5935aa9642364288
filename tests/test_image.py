"""gt.image against tf.image (TF 2.21; the reference numbers below come from it): resize
with every method, crops and pads, crop_and_resize, extract_patches, dtype conversion,
colour adjustments and spaces, quality measures (psnr, ssim), Sobel, NMS, and the random
versions (distribution and shape; their streams are gradtape's own)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

SQUARE = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)[None, :, :, None]

# tf.image.resize of [0, 1, 4, 9, 16, 25, 36] (one row) to width 3 and 10; antialias=True
# entries only where they differ (upscaling ignores it)
RESIZE_1D = {
    ('bilinear', False, 3): [0.66667, 9.0, 28.66666],
    ('bilinear', False, 10): [0.0, 0.55, 1.75, 3.85, 7.25, 11.45, 16.45, 22.75, 29.95, 36.0],
    ('bilinear', True, 3): [1.28571, 9.94118, 27.0],
    ('nearest', False, 3): [1.0, 9.0, 25.0],
    ('nearest', False, 10): [0.0, 1.0, 1.0, 4.0, 9.0, 9.0, 16.0, 25.0, 25.0, 36.0],
    ('bicubic', False, 3): [0.46468, 9.0, 29.17419],
    ('bicubic', False, 10): [-0.06069, 0.33911, 1.5625, 3.80326, 7.02457, 11.21988, 16.40092,
                             22.5625, 30.72296, 36.66765],
    ('bicubic', True, 3): [0.67742, 9.36386, 28.06452],
    ('bicubic', True, 10): [-0.06057, 0.33929, 1.5625, 3.8025, 7.0225, 11.2225, 16.4025, 22.5625,
                            30.72044, 36.66627],
    ('area', False, 3): [1.0, 9.57143, 28.42857],
    ('area', False, 10): [0.0, 0.57143, 1.42857, 4.0, 7.57143, 11.0, 16.0, 23.71428, 29.71428,
                          36.00002],
    ('lanczos3', False, 3): [0.47081, 9.0, 29.64847],
    ('lanczos3', False, 10): [-0.00521, 0.31673, 1.52893, 3.83366, 7.10219, 11.12175, 16.33012,
                              21.93562, 31.18565, 36.68633],
    ('lanczos3', True, 3): [0.41924, 9.0, 28.64605],
    ('lanczos5', False, 3): [0.45599, 9.0, 29.81942],
    ('lanczos5', False, 10): [-0.00393, 0.30813, 1.58076, 3.84507, 6.53652, 11.97323, 16.22118,
                              21.4971, 31.29943, 36.73864],
    ('lanczos5', True, 3): [0.59502, 8.80807, 28.76531],
    ('gaussian', False, 3): [0.73766, 9.21301, 28.43848],
    ('gaussian', False, 10): [0.06914, 0.59176, 1.74337, 4.04554, 7.4133, 11.32262, 16.558,
                              23.05084, 29.7823, 35.23948],
    ('gaussian', True, 3): [1.82507, 10.3313, 25.86184],
    ('mitchellcubic', False, 3): [0.56539, 9.11111, 29.00804],
    ('mitchellcubic', False, 10): [-0.00237, 0.43183, 1.67361, 3.91361, 7.13361, 11.33361,
                                   16.51361, 22.67361, 30.40966, 36.0261],
    ('mitchellcubic', True, 3): [1.17953, 9.82376, 27.03174],
}
METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]

RGB = np.array([[[[0.9, 0.2, 0.4], [0.1, 0.5, 0.3]], [[0.6, 0.6, 0.1], [0.2, 0.3, 0.95]]]],
               np.float32)
RGBU = (RGB * 255).astype(np.uint8)


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


@pytest.mark.parametrize("method", METHODS)
def test_every_resize_method_matches_tensorflow(method):
    row = np.array([0, 1, 4, 9, 16, 25, 36], np.float32)
    for antialias in (False, True):
        for n in (3, 10):
            want = RESIZE_1D.get((method, antialias, n), RESIZE_1D[(method, False, n)])
            wide = gt.image.resize(gt.constant(row.reshape(1, 1, 7, 1)), [1, n], method=method,
                                   antialias=antialias)
            np.testing.assert_allclose(wide.numpy().ravel(), want, rtol=2e-5, atol=2e-5,
                                       err_msg=f"{method} antialias={antialias} width {n}")
            # the same along the height axis
            tall = gt.image.resize(gt.constant(row.reshape(7, 1, 1)), [n, 1], method=method,
                                   antialias=antialias)
            np.testing.assert_allclose(tall.numpy().ravel(), want, rtol=2e-5, atol=2e-5)
    rgb = np.repeat(row.reshape(1, 1, 7, 1), 3, axis=3).astype(np.uint8)
    out = gt.image.resize(gt.constant(rgb), [2, 4], method=method)
    assert out.dtype == (gt.uint8 if method == "nearest" else gt.float32)
    assert out.shape == (1, 2, 4, 3)


def test_resize_on_a_device(device):
    x = gt.constant(np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3))
    for method in METHODS:
        y = gt.image.resize(x, [3, 8], method=method, antialias=True)
        assert y.shape == (2, 3, 8, 3) and y.device == device.name


def test_antialiased_downscaling_averages_with_a_triangle_filter():
    x = np.arange(8, dtype=np.float64).reshape(1, 1, 8, 1)
    plain = gt.image.resize(gt.constant(x), [1, 4]).numpy().ravel()
    np.testing.assert_allclose(plain, [0.5, 2.5, 4.5, 6.5])       # two-tap at half pixels
    smooth = gt.image.resize(gt.constant(x), [1, 4], antialias=True).numpy().ravel()
    # interior: taps (0.25, 0.75, 0.75, 0.25) / 2; borders renormalised over what exists
    np.testing.assert_allclose(smooth[1:3], [(0.25 * 1 + 0.75 * 2 + 0.75 * 3 + 0.25 * 4) / 2,
                                             (0.25 * 3 + 0.75 * 4 + 0.75 * 5 + 0.25 * 6) / 2])
    np.testing.assert_allclose(smooth[0], (0.75 * 0 + 0.75 * 1 + 0.25 * 2) / 1.75)
    # a constant image stays constant, whatever the sizes and the kernel
    for method in METHODS:
        const = gt.image.resize(gt.fill([2, 5, 7, 3], 3.0), [3, 2], method=method,
                                antialias=True)
        np.testing.assert_allclose(const.numpy(), 3.0, rtol=1e-6)


def test_resize_gradients_and_aspect_ratio():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 2))
    check_grads(lambda t: gt.image.resize(t, [4, 3]) ** 2, [x], order=2)
    check_grads(lambda t: gt.image.resize(t, [2, 7], antialias=True), [x], order=1)
    check_grads(lambda t: gt.image.resize(t, [6, 2], method="nearest") * t[:, :1, :1, :],
                [x], order=2)
    for method in ("bicubic", "area", "lanczos3", "gaussian", "mitchellcubic"):
        check_grads(lambda t: gt.image.resize(t, [4, 2], method=method), [x], order=1)
    kept = gt.image.resize(gt.zeros([1, 10, 20, 1]), [8, 8], preserve_aspect_ratio=True)
    assert kept.shape == (1, 4, 8, 1)
    kept = gt.image.resize(gt.zeros([7, 9, 3]), [5, 30], method="bicubic",
                           preserve_aspect_ratio=True)
    assert kept.shape == (5, 6, 3)                       # TF: round(9 * 5 / 7) = 6


def test_crops_and_pads_match_tensorflow(device):
    img = gt.constant(np.arange(6, dtype=np.float32).reshape(2, 3, 1))
    np.testing.assert_allclose(gt.image.resize_with_pad(img, 4, 4).numpy()[..., 0],
                               [[0.0, 0.625, 1.375, 2.0], [3.0, 3.625, 4.375, 5.0],
                                [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], atol=1e-6)
    img = gt.constant(np.arange(15, dtype=np.float32).reshape(3, 5, 1))
    np.testing.assert_array_equal(gt.image.resize_with_crop_or_pad(img, 4, 2).numpy()[..., 0],
                                  [[1, 2], [6, 7], [11, 12], [0, 0]])
    img = gt.constant(np.arange(30, dtype=np.float32).reshape(5, 6, 1))
    np.testing.assert_array_equal(gt.image.central_crop(img, 0.5).numpy()[..., 0],
                                  [[7, 8, 9, 10], [13, 14, 15, 16], [19, 20, 21, 22]])
    batch = np.arange(2 * 4 * 5 * 3).reshape(2, 4, 5, 3).astype(np.uint8)
    crop = gt.image.crop_to_bounding_box(gt.constant(batch), 1, 2, 2, 3)
    np.testing.assert_array_equal(crop.numpy(), batch[:, 1:3, 2:5])
    padded = gt.image.pad_to_bounding_box(gt.constant(batch[0]), 1, 2, 7, 9)
    want = np.zeros((7, 9, 3), np.uint8)
    want[1:5, 2:7] = batch[0]
    np.testing.assert_array_equal(padded.numpy(), want)
    assert padded.dtype == gt.uint8 and padded.device == device.name
    with pytest.raises(ValueError, match="width must be >= target \\+ offset"):
        gt.image.crop_to_bounding_box(gt.constant(batch), 0, 3, 2, 3)
    with pytest.raises(ValueError, match="height must be <= target - offset"):
        gt.image.pad_to_bounding_box(gt.constant(batch), 2, 0, 5, 5)
    with pytest.raises(ValueError, match=r"central_fraction must be within \(0, 1\]"):
        gt.image.central_crop(gt.constant(batch), 1.5)


def test_crop_and_resize_matches_tensorflow(device):
    img = gt.constant(np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1) ** 1.5)
    boxes = np.array([[0.1, 0.2, 0.9, 0.7], [0.5, 1.0, -0.5, 0.0]], np.float32)
    out = gt.image.crop_and_resize(img, boxes, [0, 0], (2, 3), extrapolation_value=-1.0)
    assert out.shape == (2, 2, 3, 1) and out.device == device.name
    np.testing.assert_allclose(out.numpy()[..., 0],
                               [[[2.461641, 3.79419, 5.468014], [22.182417, 25.376606, 28.70288]],
                                [[18.520258, 12.938639, 8.0], [-1.0, -1.0, -1.0]]], rtol=1e-5)
    near = gt.image.crop_and_resize(img, boxes, [0, 0], (2, 3), method="nearest",
                                    extrapolation_value=-1.0)
    np.testing.assert_allclose(near.numpy()[..., 0],
                               [[[1.0, 1.0, 2.828427], [27.0, 27.0, 31.622776]],
                                [[18.520258, 14.696939, 8.0], [-1.0, -1.0, -1.0]]], rtol=1e-5)
    bt = gt.constant(boxes)
    with gt.GradientTape() as tape:
        tape.watch(bt)
        y = gt.reduce_sum(gt.image.crop_and_resize(img, bt, [0, 0], (2, 3)) *
                          gt.constant(np.arange(12.0, dtype=np.float32).reshape(2, 2, 3, 1)))
    np.testing.assert_allclose(tape.gradient(y, bt).numpy(),
                               [[69.598679, 66.86554, 392.006317, 115.402512],
                                [0.0, 36.924286, 0.0, 36.924286]], rtol=1e-4)


def test_crop_and_resize_gradients():
    rng = np.random.default_rng(2)
    img = rng.standard_normal((2, 4, 5, 2))
    boxes = np.array([[0.12, 0.21, 0.83, 0.74], [0.9, 0.66, 0.07, 0.13], [0.3, 0.1, 0.6, 0.2]])
    check_grads(lambda t: gt.image.crop_and_resize(t, boxes, [0, 1, 1], (3, 4)), [img], order=2)
    check_grads(lambda b: gt.image.crop_and_resize(img, b, [0, 1, 1], (3, 4)), [boxes], order=1)


def test_extract_patches_matches_tensorflow(device):
    a = gt.constant(np.arange(20, dtype=np.float32).reshape(1, 4, 5, 1))
    same = gt.image.extract_patches(a, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
    np.testing.assert_array_equal(same.numpy()[0],
                                  [[[0, 1, 5, 6], [2, 3, 7, 8], [4, 0, 9, 0]],
                                   [[10, 11, 15, 16], [12, 13, 17, 18], [14, 0, 19, 0]]])
    rate = gt.image.extract_patches(a, [1, 2, 2, 1], [1, 1, 3, 1], [1, 2, 1, 1], "VALID")
    np.testing.assert_array_equal(rate.numpy()[0],
                                  [[[0, 1, 10, 11], [3, 4, 13, 14]],
                                   [[5, 6, 15, 16], [8, 9, 18, 19]]])
    x = np.random.default_rng(3).standard_normal((1, 5, 4, 2))
    deep = gt.image.extract_patches(gt.constant(x), [1, 2, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1],
                                    "VALID").numpy()
    np.testing.assert_array_equal(deep[0, 1, 0], x[0, 1:3, 0:3].ravel())   # (row, col, depth)
    check_grads(lambda t: gt.image.extract_patches(t, [1, 2, 2, 1], [1, 2, 1, 1],
                                                   [1, 1, 2, 1], "SAME"), [x], order=2)
    with pytest.raises(ValueError, match=r"sizes must be \[1, rows, cols, 1\]"):
        gt.image.extract_patches(a, [2, 2], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")


def test_flips_rotations_transpose(device):
    img = gt.constant(np.arange(12.0).reshape(1, 2, 3, 2))
    np.testing.assert_array_equal(gt.image.flip_left_right(img).numpy(),
                                  img.numpy()[:, :, ::-1])
    np.testing.assert_array_equal(gt.image.flip_up_down(img).numpy(), img.numpy()[:, ::-1])
    for k in range(-1, 6):
        np.testing.assert_array_equal(gt.image.rot90(img, k).numpy(),
                                      np.rot90(img.numpy(), k, axes=(1, 2)))
        np.testing.assert_array_equal(gt.image.rot90(img[0], k).numpy(),
                                      np.rot90(img.numpy()[0], k, axes=(0, 1)))
    np.testing.assert_array_equal(gt.image.transpose(img).numpy(),
                                  img.numpy().transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(gt.image.transpose(img[0]).numpy(),
                                  img.numpy()[0].transpose(1, 0, 2))


def test_random_flips(device):
    batch = gt.constant(np.repeat(np.arange(6.0).reshape(1, 1, 6, 1), 200, axis=0))
    out = gt.image.random_flip_left_right(batch, seed=3).numpy()
    flipped = (out[:, 0, 0, 0] == 5.0)
    assert ((out[:, 0, 0, 0] == 0.0) | flipped).all()
    assert 60 < flipped.sum() < 140                 # about half, drawn per image
    single = gt.image.random_flip_up_down(gt.constant(np.arange(4.0).reshape(2, 2, 1)))
    assert single.shape == (2, 2, 1)
    a = gt.image.stateless_random_flip_left_right(batch, seed=[1, 2]).numpy()
    b = gt.image.stateless_random_flip_left_right(batch, seed=[1, 2]).numpy()
    np.testing.assert_array_equal(a, b)             # a function of the seed
    assert 60 < (a[:, 0, 0, 0] == 5.0).sum() < 140
    col = gt.constant(np.repeat(np.arange(6.0).reshape(1, 6, 1, 1), 200, axis=0))
    c = gt.image.stateless_random_flip_up_down(col, seed=[3, 4]).numpy()
    assert 60 < (c[:, 0, 0, 0] == 5.0).sum() < 140
    assert gt.image.stateless_random_flip_up_down(col, seed=[3, 4]).device == device.name


def test_random_crop(device):
    x = gt.constant(np.arange(6 * 7 * 2, dtype=np.float32).reshape(6, 7, 2))
    seen = set()
    for _ in range(40):
        out = gt.image.random_crop(x, [3, 4, 2])
        assert out.shape == (3, 4, 2) and out.device == device.name
        v = out.numpy()
        top, left = int(v[0, 0, 0]) // 14, (int(v[0, 0, 0]) % 14) // 2
        np.testing.assert_array_equal(v, x.numpy()[top:top + 3, left:left + 4])
        seen.add((top, left))
    assert len(seen) > 5 and all(t <= 3 and l <= 3 for t, l in seen)
    a = gt.image.stateless_random_crop(x, [2, 2, 1], seed=[5, 6]).numpy()
    np.testing.assert_array_equal(a, gt.image.stateless_random_crop(x, [2, 2, 1],
                                                                    seed=[5, 6]).numpy())
    with pytest.raises(ValueError, match="need value.shape >= size"):
        gt.image.random_crop(x, [7, 2, 2])
    rng = np.random.default_rng(0)
    check_grads(lambda t: gt.image.stateless_random_crop(t, [2, 3], seed=[1, 1]),
                [rng.standard_normal((4, 5))], order=1)


def test_convert_image_dtype_matches_tensorflow(device):
    u = gt.constant(np.array([0, 1, 127, 128, 254, 255], np.uint8))
    np.testing.assert_allclose(gt.image.convert_image_dtype(u, gt.float32).numpy(),
                               [0.0, 0.003922, 0.498039, 0.501961, 0.996078, 1.0], atol=1e-6)
    np.testing.assert_array_equal(gt.image.convert_image_dtype(u, gt.int32).numpy(),
                                  [0, 8388608, 1065353216, 1073741824, 2130706432, 2139095040])
    i = gt.constant(np.array([0, 2 ** 23, 2 ** 31 - 1, -5], np.int32))
    np.testing.assert_array_equal(gt.image.convert_image_dtype(i, gt.uint8).numpy(),
                                  [0, 1, 255, 255])
    f = gt.constant(np.array([-0.5, 0, 0.3, 0.999, 1.0, 1.7], np.float32))
    np.testing.assert_array_equal(
        gt.image.convert_image_dtype(f, gt.uint8, saturate=True).numpy(), [0, 0, 76, 255, 255, 255])
    np.testing.assert_array_equal(
        gt.image.convert_image_dtype(f[:3], gt.int16, saturate=True).numpy(), [-16383, 0, 9830])
    assert gt.image.convert_image_dtype(f, gt.float64).dtype == gt.float64
    assert gt.image.convert_image_dtype(u, gt.uint8) is u


def test_colour_spaces_match_tensorflow(device):
    hsv = gt.image.rgb_to_hsv(gt.constant(RGB))
    np.testing.assert_allclose(hsv.numpy(), [[[[0.952381, 0.777778, 0.9], [0.416667, 0.8, 0.5]],
                                              [[0.166667, 0.833333, 0.6],
                                               [0.644444, 0.789474, 0.95]]]], atol=1e-6)
    half = gt.image.hsv_to_rgb(hsv * gt.constant(np.array([1, 0.5, 1], np.float32)))
    np.testing.assert_allclose(half.numpy(), [[[[0.9, 0.55, 0.65], [0.3, 0.5, 0.4]],
                                               [[0.6, 0.6, 0.35], [0.575, 0.625, 0.95]]]],
                               atol=1e-6)
    np.testing.assert_allclose(gt.image.hsv_to_rgb(hsv).numpy(), RGB, atol=1e-6)
    yuv = gt.image.rgb_to_yuv(gt.constant(RGB))
    np.testing.assert_allclose(yuv.numpy()[0, 0], [[0.4321, -0.015797, 0.410481],
                                                   [0.3576, -0.028346, -0.225988]], atol=1e-6)
    np.testing.assert_allclose(gt.image.yuv_to_rgb(yuv).numpy(), RGB, atol=1e-5)
    yiq = gt.image.rgb_to_yiq(gt.constant(RGB))
    np.testing.assert_allclose(yiq.numpy()[0, 1], [[0.543, 0.160672, -0.155622],
                                                   [0.3442, -0.268464, 0.181119]], atol=1e-6)
    np.testing.assert_allclose(gt.image.yiq_to_rgb(yiq).numpy(), RGB, atol=1e-4)  # as TF
    gray = gt.image.rgb_to_grayscale(gt.constant(RGB))
    np.testing.assert_allclose(gray.numpy().ravel(), [0.43201, 0.35759, 0.54294, 0.34418],
                               atol=1e-6)
    np.testing.assert_array_equal(gt.image.rgb_to_grayscale(gt.constant(RGBU)).numpy().ravel(),
                                  [110, 90, 138, 87])
    rgb = gt.image.grayscale_to_rgb(gray)
    assert rgb.shape == (1, 2, 2, 3) and rgb.device == device.name
    rng = np.random.default_rng(4)
    x = rng.uniform(0.05, 0.95, (2, 3, 3))
    check_grads(gt.image.rgb_to_hsv, [x], order=2)
    check_grads(gt.image.hsv_to_rgb, [x], order=1)
    check_grads(gt.image.rgb_to_yuv, [x], order=1)


def test_adjustments_match_tensorflow(device):
    f, u = gt.constant(RGB), gt.constant(RGBU)
    np.testing.assert_allclose(gt.image.adjust_hue(f, 0.3).numpy(),
                               [[[[0.54, 0.9, 0.2], [0.22, 0.1, 0.5]],
                                 [[0.1, 0.6, 0.5], [0.95, 0.2, 0.45]]]], atol=1e-6)
    np.testing.assert_array_equal(gt.image.adjust_hue(u, -0.45).numpy(),
                                  [[[[51, 227, 229], [127, 25, 45]],
                                    [[63, 25, 153], [210, 242, 51]]]])
    np.testing.assert_allclose(gt.image.adjust_saturation(f, 1.7).numpy(),
                               [[[[0.9, 0.0, 0.257143], [0.0, 0.5, 0.25]],
                                 [[0.6, 0.6, 0.0], [0.0, 0.126667, 0.95]]]], atol=1e-6)
    np.testing.assert_array_equal(gt.image.adjust_saturation(u, 0.5).numpy(),
                                  [[[[229, 140, 165], [76, 127, 101]],
                                    [[153, 153, 89], [146, 159, 242]]]])
    np.testing.assert_allclose(gt.image.adjust_contrast(f, 2.0).numpy(),
                               [[[[1.35, 0.0, 0.3625], [-0.25, 0.6, 0.1625]],
                                 [[0.75, 0.8, -0.2375], [-0.05, 0.2, 1.4625]]]], atol=1e-6)
    np.testing.assert_array_equal(gt.image.adjust_contrast(u, 2.0).numpy(),
                                  [[[[255, 0, 92], [0, 152, 40]], [[191, 204, 0], [0, 50, 255]]]])
    np.testing.assert_array_equal(gt.image.adjust_brightness(u, 0.3).numpy(),
                                  [[[[255, 127, 178], [101, 203, 152]],
                                    [[229, 229, 101], [127, 152, 255]]]])
    np.testing.assert_array_equal(gt.image.adjust_gamma(u, 0.5, 1.2).numpy(),
                                  [[[[255, 137, 193], [96, 216, 167]],
                                    [[237, 237, 96], [137, 167, 255]]]])
    np.testing.assert_allclose(gt.image.per_image_standardization(u).numpy().ravel(),
                               [1.70393, -0.827082, -0.101904, -1.19678, 0.253575, -0.471602,
                                0.623274, 0.623274, -1.19678, -0.827082, -0.471602, 1.88878],
                               atol=2e-5)
    # float64 images go through float32, as TF; float16 stays float16
    assert gt.image.adjust_brightness(gt.constant(RGB.astype(np.float64)), 0.1).dtype == gt.float64
    assert gt.image.adjust_hue(gt.constant(RGB.astype(np.float16)), 0.1).dtype == gt.float16
    with pytest.raises(ValueError, match=r"delta must be in the interval \[-1, 1\]"):
        gt.image.adjust_hue(f, 1.5)
    with pytest.raises(ValueError, match="Gamma should be a non-negative"):
        gt.image.adjust_gamma(f, -1)


def test_adjustment_gradients():
    # TF has no gradient for AdjustHue / AdjustSaturation / AdjustContrastv2; gradtape's come
    # from the ops (the images go through float32, so a loose check)
    x = np.random.default_rng(6).uniform(0.05, 0.95, (1, 3, 2, 3))
    kw = dict(order=1, eps=1e-3, rtol=5e-3, atol=5e-3)
    check_grads(lambda t: gt.image.adjust_hue(t, 0.27), [x], **kw)
    check_grads(lambda t: gt.image.adjust_saturation(t, 1.3), [x], **kw)
    check_grads(lambda t: gt.image.adjust_contrast(t, 1.6), [x], **kw)
    check_grads(lambda t: gt.image.adjust_gamma(t, 0.7, 1.1), [x], **kw)
    check_grads(gt.image.per_image_standardization, [x], **kw)


def test_random_colour_ops(device):
    x = gt.constant(np.random.default_rng(7).uniform(0.1, 0.9, (2, 4, 4, 3)).astype(np.float32))
    diffs = set()
    for _ in range(5):
        out = gt.image.random_brightness(x, 0.2)
        d = (out - x).numpy()
        assert out.device == device.name and np.ptp(d) < 1e-6 and abs(d.flat[0]) <= 0.2
        diffs.add(round(float(d.flat[0]), 6))
    assert len(diffs) > 1
    for fn, args in ((gt.image.random_contrast, (0.5, 1.5)),
                     (gt.image.random_saturation, (0.5, 1.5)),
                     (gt.image.random_hue, (0.2,))):
        out = fn(x, *args)
        assert out.shape == x.shape and out.dtype == gt.float32 and out.device == device.name
    for fn, args in ((gt.image.stateless_random_brightness, (0.2,)),
                     (gt.image.stateless_random_contrast, (0.5, 1.5)),
                     (gt.image.stateless_random_saturation, (0.5, 1.5)),
                     (gt.image.stateless_random_hue, (0.2,))):
        a, b = fn(x, *args, seed=[1, 2]), fn(x, *args, seed=[1, 2])
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert not np.array_equal(a.numpy(), fn(x, *args, seed=[2, 2]).numpy())
    # one contrast factor for the whole batch, in [lower, upper)
    c = gt.image.stateless_random_contrast(x, 0.5, 1.5, seed=[9, 9]).numpy()
    xv = x.numpy()
    mean = xv.mean(axis=(1, 2), keepdims=True)
    factor = ((c - mean) / (xv - mean)).ravel()
    assert np.ptp(factor) < 1e-3 and 0.5 <= factor[0] < 1.5
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        gt.image.random_hue(x, 0.6)
    with pytest.raises(ValueError, match="upper must be > lower"):
        gt.image.random_contrast(x, 1.0, 0.5)


def test_quality_measures_match_tensorflow(device):
    k = np.arange(144).reshape(1, 12, 12, 1)
    i1 = gt.constant((np.sin(k / 7.0) * 0.5 + 0.5).astype(np.float32))
    i2 = gt.constant((np.cos(k / 9.0) * 0.4 + 0.5).astype(np.float32))
    np.testing.assert_allclose(gt.image.psnr(i1, i2, 1.0).numpy(), [8.177169], rtol=1e-5)
    np.testing.assert_allclose(gt.image.ssim(i1, i2, 1.0).numpy(), [0.623453], rtol=1e-5)
    np.testing.assert_allclose(gt.image.ssim(i1, i2, 1.0, filter_size=5, filter_sigma=1.0).numpy(),
                               [0.45663], rtol=1e-5)
    ms = gt.image.ssim_multiscale(i1, i2, 1.0, power_factors=(0.3, 0.7), filter_size=3)
    np.testing.assert_allclose(ms.numpy(), [0.593954], rtol=1e-5)
    assert ms.device == device.name
    g = gt.constant(np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1) ** 2)
    np.testing.assert_allclose(gt.image.sobel_edges(g).numpy()[0, :, :, 0],
                               [[[0, 0], [0, 40], [0, 0]], [[168, 0], [192, 64], [216, 0]],
                                [[0, 0], [0, 88], [0, 0]]], atol=1e-4)
    dy, dx = gt.image.image_gradients(g)
    np.testing.assert_array_equal(dy.numpy()[0, :, :, 0], [[9, 15, 21], [27, 33, 39], [0, 0, 0]])
    np.testing.assert_array_equal(dx.numpy()[0, :, :, 0], [[1, 3, 0], [7, 9, 0], [13, 15, 0]])
    np.testing.assert_allclose(gt.image.total_variation(g).numpy(), [144 + 48])
    np.testing.assert_allclose(gt.image.total_variation(g[0]).numpy(), 192)


def test_quality_measure_gradients():
    rng = np.random.default_rng(8)
    a, b = rng.uniform(0, 1, (1, 7, 8, 2)), rng.uniform(0, 1, (1, 7, 8, 2))
    kw = dict(order=1, eps=1e-3, rtol=5e-3, atol=5e-3)      # computed in float32, as TF
    check_grads(lambda t: gt.image.psnr(t, b, 1.0), [a], **kw)
    check_grads(lambda t: gt.image.ssim(t, b, 1.0, filter_size=5), [a], **kw)
    check_grads(gt.image.sobel_edges, [a], order=2)
    check_grads(lambda t: gt.image.total_variation(t + 0.0), [a], order=1)


def test_uint8_quality_measures():
    rng = np.random.default_rng(9)
    a = (rng.uniform(0, 1, (2, 12, 12, 3)) * 255).astype(np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-20, 20, a.shape), 0, 255).astype(np.uint8)
    # uint8 images with max_val=255 give what float images in [0, 1] with max_val=1 give
    np.testing.assert_allclose(gt.image.psnr(a, b, 255).numpy(),
                               gt.image.psnr(a / 255.0, b / 255.0, 1.0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(gt.image.ssim(a, b, 255).numpy(),
                               gt.image.ssim((a / 255.0).astype(np.float32),
                                             (b / 255.0).astype(np.float32), 1.0).numpy(),
                               rtol=1e-5)


def test_non_max_suppression_matches_tensorflow(device):
    boxes = gt.constant(np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9],
                                  [0, 10, 1, 11], [1, 10.1, 0, 11.1], [0, 100, 1, 101]],
                                 np.float32))
    scores = gt.constant(np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32))
    idx = gt.image.non_max_suppression(boxes, scores, 3, 0.5)
    assert idx.dtype == gt.int32 and idx.device == device.name
    np.testing.assert_array_equal(idx.numpy(), [3, 0, 5])
    np.testing.assert_array_equal(
        gt.image.non_max_suppression(boxes, scores, 10, 0.5, 0.4).numpy(), [3, 0])
    i, s = gt.image.non_max_suppression_with_scores(boxes, scores, 10, 0.5, soft_nms_sigma=0.5)
    np.testing.assert_array_equal(i.numpy(), [3, 0, 1, 5, 4, 2])
    np.testing.assert_allclose(s.numpy(), [0.95, 0.9, 0.384004, 0.3, 0.256003, 0.196972],
                               rtol=1e-5)
    with pytest.raises(ValueError, match=r"boxes must be \[num_boxes, 4\]"):
        gt.image.non_max_suppression(gt.zeros([3, 3]), gt.zeros([3]), 2)


def test_bad_input():
    with pytest.raises(ValueError, match=r"images must be \[batch, height, width, channels\]"):
        gt.image.resize(gt.zeros([3, 3]), [2, 2])
    with pytest.raises(ValueError, match=r"size must be two positive ints"):
        gt.image.resize(gt.zeros([3, 3, 1]), [0, 2])
    with pytest.raises(ValueError, match="method 'cubic' is not one of"):
        gt.image.resize(gt.zeros([3, 3, 1]), [2, 2], method="cubic")
    with pytest.raises(ValueError, match="the last dimension must be 3 channels"):
        gt.image.rgb_to_hsv(gt.zeros([2, 2, 4]))
    with pytest.raises(ValueError, match="must be at least filter_size"):
        gt.image.ssim(gt.zeros([1, 5, 5, 1]), gt.zeros([1, 5, 5, 1]), 1.0)
