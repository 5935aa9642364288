"""gt.keras' preprocessing layers (gradtape/layers_preprocessing.py) against Keras 3.15 (the
reference numbers below come from tf.keras in TF 2.21): the affine transform behind
RandomRotation / RandomZoom / RandomTranslation (every fill mode and interpolation), the
random layers with their factors pinned to one value, RandomContrast / RandomBrightness, and
CategoryEncoding, Discretization, Hashing and IntegerLookup."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.layers_preprocessing import (CategoryEncoding, Discretization, Hashing,
                                           IntegerLookup, RandomBrightness, RandomContrast,
                                           RandomHeight, RandomRotation, RandomTranslation,
                                           RandomWidth, RandomZoom, affine_transform)
from gradtape.testing import check_grads

# keras.ops.image.affine_transform(IMG, TRANSFORM, interpolation, fill_mode, fill_value=-1)
IMG = np.arange(20, dtype=np.float32).reshape(1, 4, 5, 1) ** 1.3
TRANSFORM = np.array([1.3, 0.2, -2.1, -0.1, 0.8, 1.6, 0.0, 0.0], np.float32)
AFFINE = {
    ('reflect', 'bilinear'): [
        [17.9124, 14.028, 14.0196, 15.8901, 17.8097],
        [27.9778, 24.1069, 24.6101, 26.7376, 28.9139],
        [35.8709, 33.8001, 36.4625, 38.9319, 41.4165],
        [35.2792, 33.8001, 37.0598, 40.9997, 45.0241],
    ],
    ('reflect', 'nearest'): [
        [22.5845, 19.9526, 10.2706, 12.5495, 14.9285],
        [22.5845, 19.9526, 22.5845, 25.2892, 28.0625],
        [36.7583, 33.8001, 36.7583, 39.7726, 45.96],
        [33.8001, 33.8001, 36.7583, 39.7726, 45.96],
    ],
    ('wrap', 'bilinear'): [
        [22.5474, 24.1496, 14.0196, 15.8901, 17.8097],
        [34.2688, 35.4184, 24.6101, 26.7376, 28.9139],
        [4.7387, 6.0629, 36.4625, 38.9319, 41.4165],
        [5.117, 6.0629, 1.1462, 3.1458, 5.4954],
    ],
    ('wrap', 'nearest'): [
        [28.0625, 30.9006, 10.2706, 12.5495, 14.9285],
        [28.0625, 30.9006, 22.5845, 25.2892, 28.0625],
        [4.1712, 6.0629, 36.7583, 39.7726, 45.96],
        [6.0629, 6.0629, 1.0, 2.4623, 6.0629],
    ],
    ('constant', 'bilinear'): [
        [-1.0, 2.0056, 14.0196, 15.8901, 17.8097],
        [-1.0, 9.0428, 24.6101, 26.7376, 28.9139],
        [-1.0, 17.7921, 36.4625, 38.9319, 41.4165],
        [-1.0, 1.784, 6.6119, 11.5999, 17.4096],
    ],
    ('constant', 'nearest'): [
        [-1.0, -1.0, 10.2706, 12.5495, 14.9285],
        [-1.0, -1.0, 22.5845, 25.2892, 28.0625],
        [-1.0, 33.8001, 36.7583, 39.7726, 45.96],
        [-1.0, -1.0, -1.0, -1.0, -1.0],
    ],
    ('nearest', 'bilinear'): [
        [15.2129, 14.028, 14.0196, 15.8901, 17.8097],
        [25.4916, 24.1069, 24.6101, 26.7376, 28.9139],
        [33.8001, 33.8001, 36.4625, 38.9319, 41.4165],
        [33.8001, 33.8001, 37.0598, 40.9997, 45.0241],
    ],
    ('nearest', 'nearest'): [
        [19.9526, 19.9526, 10.2706, 12.5495, 14.9285],
        [19.9526, 19.9526, 22.5845, 25.2892, 28.0625],
        [33.8001, 33.8001, 36.7583, 39.7726, 45.96],
        [33.8001, 33.8001, 36.7583, 39.7726, 45.96],
    ],
}
SMALL = np.arange(30, dtype=np.float32).reshape(5, 6, 1) % 7


@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_affine_transform_matches_keras(device, fill_mode, interpolation):
    out = affine_transform(gt.constant(IMG), TRANSFORM, interpolation, fill_mode, -1.0)
    assert out.shape == (1, 4, 5, 1) and out.device == device.name
    np.testing.assert_allclose(out.numpy()[0, :, :, 0], AFFINE[(fill_mode, interpolation)],
                               atol=2e-4)
    # one image, channels first, one transform per image: the same numbers
    single = affine_transform(gt.constant(IMG[0]), TRANSFORM[None], interpolation, fill_mode,
                              -1.0)
    np.testing.assert_allclose(single.numpy()[:, :, 0], AFFINE[(fill_mode, interpolation)],
                               atol=2e-4)
    first = affine_transform(gt.constant(IMG.transpose(0, 3, 1, 2)), TRANSFORM, interpolation,
                             fill_mode, -1.0, data_format="channels_first")
    np.testing.assert_allclose(first.numpy()[0, 0], AFFINE[(fill_mode, interpolation)],
                               atol=2e-4)


def test_affine_transform_gradients_and_errors():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 5, 2))
    t = np.array([[1.1, 0.3, -0.7, -0.2, 0.9, 0.45, 0.0, 0.0],
                  [0.8, -0.1, 1.3, 0.15, 1.2, -0.6, 0.01, -0.02]])
    for mode in ("reflect", "constant"):
        check_grads(lambda v: affine_transform(v, t, "bilinear", mode), [x], order=2)
    assert affine_transform(x, t).dtype == gt.float64
    with pytest.raises(ValueError, match="Invalid value for argument `fill_mode`"):
        affine_transform(x, t, fill_mode="mirror")
    with pytest.raises(ValueError, match="Invalid transform shape"):
        affine_transform(x, np.zeros((2, 6)))


def test_random_affine_layers_with_a_fixed_draw_match_keras(device):
    x = gt.constant(SMALL)
    rot = RandomRotation((0.125, 0.125), fill_mode="constant")(x, training=True)
    assert rot.device == device.name and rot.dtype == gt.float32
    np.testing.assert_allclose(rot.numpy()[..., 0], [
        [0.0, 1.4985, 3.3284, 3.3284, 3.3284, 0.8416],
        [0.7558, 1.9142, 1.9142, 1.9142, 1.9142, 1.9142],
        [0.9353, 0.5, 0.5, 0.8624, 0.6866, 0.5],
        [5.4959, 4.2736, 4.0977, 5.1228, 4.6982, 1.3843],
        [1.7025, 4.6716, 4.6716, 4.6716, 2.7025, 0.0]], atol=2e-4)
    zoom = RandomZoom((-0.5, -0.5), fill_mode="reflect")(x, training=True)
    np.testing.assert_allclose(zoom.numpy()[..., 0], [
        [0.25, 0.75, 1.25, 1.75, 2.25, 2.75], [2.375, 1.125, 0.75, 1.25, 1.75, 2.25],
        [4.5, 1.5, 0.25, 0.75, 1.25, 1.75], [4.875, 3.625, 2.375, 1.125, 0.75, 1.25],
        [5.25, 5.75, 4.5, 1.5, 0.25, 0.75]], atol=1e-5)
    shift = RandomTranslation((0.2, 0.2), (-0.5, -0.5), fill_mode="wrap",
                              interpolation="nearest")(x, training=True)
    np.testing.assert_array_equal(shift.numpy()[..., 0], [
        [6, 0, 1, 3, 4, 5], [3, 4, 5, 0, 1, 2], [2, 3, 4, 6, 0, 1], [1, 2, 3, 5, 6, 0],
        [0, 1, 2, 4, 5, 6]])


def test_random_affine_layers_draw_per_image_on_the_device(device):
    x = gt.constant(np.tile(SMALL[None], (6, 1, 1, 1)))
    for layer in (RandomRotation(0.3, seed=4), RandomZoom(0.4, 0.2, seed=4),
                  RandomTranslation(0.3, 0.3, seed=4)):
        out = layer(x, training=True)
        assert out.shape == x.shape and out.device == device.name
        per_image = {out.numpy()[i].tobytes() for i in range(6)}
        assert len(per_image) == 6                         # one draw per image
        again = type(layer).from_config(layer.get_config())(x, training=True)
        np.testing.assert_array_equal(again.numpy(), out.numpy())   # seeded: reproducible
        # inference: the inputs (cast to the layer's dtype, as Keras)
        u8 = gt.constant(SMALL.astype(np.uint8))
        kept = layer(u8, training=False)
        assert kept.dtype == gt.float32
        np.testing.assert_array_equal(kept.numpy(), SMALL)
        assert np.array_equal(layer(x, training=False).numpy(), x.numpy())   # inference
        assert not np.array_equal(layer(x).numpy(), x.numpy())   # a direct call augments


def test_random_affine_layer_configs_and_factor_errors():
    cfg = RandomRotation(0.2, fill_mode="wrap", seed=1).get_config()
    assert cfg["factor"] == (-0.2, 0.2) and cfg["fill_mode"] == "wrap" and cfg["seed"] == 1
    assert cfg["interpolation"] == "bilinear" and cfg["fill_value"] == 0.0
    assert cfg["data_format"] == "channels_last"
    z = RandomZoom(0.2).get_config()
    assert z["height_factor"] == 0.2 and z["width_factor"] is None
    t = RandomTranslation((-0.1, 0.3), 0.2).get_config()
    assert t["height_factor"] == (-0.1, 0.3) and t["width_factor"] == 0.2
    with pytest.raises(ValueError, match="in the range"):
        RandomRotation(1.5)
    with pytest.raises(ValueError, match=r"in the range \(-1.0, 1.0\]"):
        RandomZoom((-1.0, 0.2))
    with pytest.raises(ValueError, match="Unknown `fill_mode`"):
        RandomTranslation(0.1, 0.1, fill_mode="mirror")


def test_random_contrast_and_brightness(device):
    x = gt.constant(np.random.default_rng(1).uniform(50, 200, (8, 4, 4, 3)).astype(np.float32))
    c = RandomContrast(0.5, seed=2)
    assert c.get_config()["factor"] == (0, 0.5)            # Keras 3.15: factor f -> (0, f)
    out = c(x, training=True)
    assert out.device == device.name
    xv, ov = x.numpy(), out.numpy()
    mean = xv.mean(axis=(1, 2), keepdims=True)
    f = (ov - mean) / (xv - mean)
    per_image = f.reshape(8, -1)
    assert np.ptp(per_image, axis=1).max() < 1e-3          # one factor per image
    assert (per_image[:, 0] >= 1.0 - 1e-4).all() and (per_image[:, 0] < 1.5 + 1e-4).all()
    assert np.ptp(per_image[:, 0]) > 0.01
    clipped = RandomContrast((0.0, 0.9), value_range=(60, 190), seed=2)(x, training=True)
    assert clipped.numpy().min() >= 60 and clipped.numpy().max() <= 190
    b = RandomBrightness(0.2, seed=3)
    assert b.get_config()["factor"] == (-0.2, 0.2) and b.get_config()["value_range"] == [0, 255]
    d = (b(x, training=True) - x).numpy().reshape(8, -1)
    assert np.ptp(d, axis=1).max() < 1e-3 and (np.abs(d) <= 0.2 * 255 + 1e-3).all()
    bounded = RandomBrightness((0.5, 0.6), value_range=(0, 1))(gt.constant(np.zeros(
        (2, 2, 1), np.float32)), training=True).numpy()
    assert np.ptp(bounded) < 1e-6 and 0.5 <= bounded.flat[0] < 0.6
    # inference passes the inputs through unchanged, dtype included
    u8 = gt.constant(np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
    assert c(u8, training=False) is u8 and b(u8, training=False) is u8
    with pytest.raises(ValueError, match="value_range"):
        RandomBrightness(0.1, value_range=5)


def test_augmentation_in_a_model():
    model = gt.keras.Sequential([RandomRotation(0.1, seed=1), RandomZoom(0.1, seed=1),
                                 RandomContrast(0.2, seed=1), gt.keras.layers.Flatten(),
                                 gt.keras.layers.Dense(2)])
    x = np.random.default_rng(2).uniform(0, 1, (4, 6, 6, 1)).astype(np.float32)
    a = model(x, training=True).numpy()
    b = model(x, training=False).numpy()
    assert a.shape == b.shape == (4, 2) and not np.allclose(a, b)
    np.testing.assert_allclose(model.predict(x, verbose=0), b, rtol=1e-6)


def test_category_encoding_matches_keras(device):
    ids = gt.constant(np.array([[0, 1, 1, 3], [2, 2, 0, 0]]))
    multi = CategoryEncoding(5)(ids)
    assert multi.dtype == gt.float32 and multi.device == device.name
    np.testing.assert_array_equal(multi.numpy(), [[1, 1, 0, 1, 0], [1, 0, 1, 0, 0]])
    np.testing.assert_array_equal(CategoryEncoding(5, output_mode="count")(ids).numpy(),
                                  [[1, 2, 0, 1, 0], [2, 0, 2, 0, 0]])
    w = np.array([[0.5, 1, 2, 3], [1, 1, 1, 4]], np.float32)
    np.testing.assert_array_equal(
        CategoryEncoding(5, output_mode="count")(ids, count_weights=w).numpy(),
        [[0.5, 3, 0, 3, 0], [5, 0, 2, 0, 0]])
    np.testing.assert_array_equal(
        CategoryEncoding(5, output_mode="one_hot")(np.array([[1], [3], [0]])).numpy(),
        np.eye(5)[[1, 3, 0]])
    np.testing.assert_array_equal(CategoryEncoding(5)(np.array([3, 1, 1])).numpy(),
                                  [0, 1, 0, 1, 0])                  # rank 1: one sample
    np.testing.assert_array_equal(
        CategoryEncoding(4, output_mode="one_hot")(np.array([[1, 2], [3, 0]])).numpy(),
        np.eye(4)[[[1, 2], [3, 0]]])
    np.testing.assert_array_equal(CategoryEncoding(4)(np.array([[1, 7]])).numpy(),
                                  [[0, 1, 0, 0]])                   # out of range: dropped
    cfg = CategoryEncoding(5).get_config()
    assert cfg["num_tokens"] == 5 and cfg["output_mode"] == "multi_hot"
    with pytest.raises(ValueError, match="num_tokens must be set"):
        CategoryEncoding()
    with pytest.raises(ValueError, match="`count_weights` is not used"):
        CategoryEncoding(3)(ids, count_weights=w)


def test_discretization_matches_keras(device):
    x = gt.constant(np.array([[-1.5, 0.0, 0.2, 1.0], [3.0, 0.99, 2.5, -0.1]], np.float32))
    layer = Discretization(bin_boundaries=[0.0, 1.0, 2.5])
    out = layer(x)
    assert out.dtype == gt.int32 and out.device == device.name
    np.testing.assert_array_equal(out.numpy(), [[0, 1, 1, 2], [3, 1, 3, 0]])
    np.testing.assert_array_equal(
        Discretization(bin_boundaries=[0.0, 1.0, 2.5], output_mode="multi_hot")(x).numpy(),
        [[1, 1, 1, 0], [1, 1, 0, 1]])
    np.testing.assert_array_equal(
        Discretization(bin_boundaries=[0.0, 1.0, 2.5], output_mode="count")(x).numpy(),
        [[1, 2, 1, 0], [1, 1, 0, 2]])
    np.testing.assert_array_equal(
        Discretization(bin_boundaries=[0.0, 1.0, 2.5], output_mode="one_hot")(x[0]).numpy(),
        np.eye(4)[[0, 1, 1, 2]])
    cfg = layer.get_config()
    assert cfg["bin_boundaries"] == [0.0, 1.0, 2.5] and cfg["num_bins"] is None
    assert Discretization.from_config(cfg)(x).numpy().tolist() == out.numpy().tolist()


def test_discretization_adapt_matches_keras():
    rng = np.random.default_rng(0)
    rng.random((2, 6, 7, 2))
    rng.random((2, 8, 9, 3))
    data = rng.standard_normal((300, 2)).astype(np.float32)
    layer = Discretization(num_bins=4, epsilon=0.01)
    layer.adapt(data)
    np.testing.assert_allclose(layer.bin_boundaries, [-0.679932, -0.05252, 0.573066], atol=1e-6)
    batched = Discretization(num_bins=3, epsilon=0.1)
    batched.adapt(gt.data.Dataset.from_tensor_slices(data[:, 0]).batch(64))
    np.testing.assert_allclose(batched.bin_boundaries, [-0.451724, 0.393554], atol=1e-6)
    with pytest.raises(ValueError, match="Cannot adapt a Discretization layer"):
        Discretization(bin_boundaries=[0.0]).adapt(data)


HASH_IN = np.array([[0, 1, 2, 3], [-1, 12345, 1234567890123, -9223372036854775808],
                    [9223372036854775807, 99999999, 7, 100]], np.int64)


def test_hashing_matches_keras(device):
    out = Hashing(1000)(gt.constant(HASH_IN))
    assert out.dtype == gt.int64 and out.device == device.name
    np.testing.assert_array_equal(out.numpy(), [[735, 849, 759, 921], [430, 728, 114, 112],
                                                [319, 519, 88, 355]])
    np.testing.assert_array_equal(Hashing(7)(HASH_IN).numpy(),
                                  [[2, 5, 5, 2], [4, 6, 5, 3], [2, 1, 2, 4]])
    np.testing.assert_array_equal(Hashing(3)(HASH_IN).numpy(),
                                  [[1, 0, 1, 0], [0, 1, 1, 2], [2, 1, 1, 0]])
    masked = Hashing(3, mask_value=0)(HASH_IN).numpy()
    assert masked[0, 0] == 0 and (masked.ravel()[1:] >= 1).all()
    np.testing.assert_array_equal(
        Hashing(4, output_mode="one_hot")(np.array([[5], [17], [3]])).numpy(),
        [[0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]])
    floats = Hashing(11)(np.array([1.7, -2.2, 3.0])).numpy()     # truncated to 1, -2, 3
    np.testing.assert_array_equal(floats, Hashing(11)(np.array([1, -2, 3])).numpy())
    cfg = Hashing(5, mask_value=0).get_config()
    assert cfg["num_bins"] == 5 and cfg["mask_value"] == 0 and cfg["salt"] is None
    with pytest.raises(ValueError, match="salt"):
        Hashing(5, salt=3)


def test_integer_lookup_matches_keras(device):
    vocab = [12, 36, 1138, 42]
    ids = gt.constant(np.array([[12, 1138, 42], [42, 1000, 36]]))
    out = IntegerLookup(vocabulary=vocab)(ids)
    assert out.dtype == gt.int64 and out.device == device.name
    np.testing.assert_array_equal(out.numpy(), [[1, 3, 4], [4, 0, 2]])
    masked = IntegerLookup(vocabulary=vocab, mask_token=0)
    np.testing.assert_array_equal(masked(np.array([[12, 0, 42], [7, 36, 0]])).numpy(),
                                  [[2, 0, 5], [1, 3, 0]])
    assert masked.get_vocabulary() == [0, -1, 12, 36, 1138, 42]
    np.testing.assert_array_equal(
        IntegerLookup(vocabulary=vocab, num_oov_indices=2)(np.array([[12, 5, 42],
                                                                      [7, -3, 0]])).numpy(),
        [[2, 1, 5], [1, 1, 0]])
    np.testing.assert_array_equal(
        IntegerLookup(vocabulary=vocab, invert=True)(np.array([[0, 1, 4], [2, 3, 9]])).numpy(),
        [[-1, 12, 42], [36, 1138, -1]])
    np.testing.assert_array_equal(
        IntegerLookup(vocabulary=vocab, mask_token=0, invert=True)(
            np.array([[0, 1, 5], [2, 3, 9]])).numpy(), [[0, -1, 42], [12, 36, -1]])
    multi = IntegerLookup(vocabulary=vocab, output_mode="multi_hot")(ids)
    assert multi.dtype == gt.int64
    np.testing.assert_array_equal(multi.numpy(), [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    np.testing.assert_array_equal(
        IntegerLookup(vocabulary=vocab, output_mode="one_hot")(np.array([12, 7, 42])).numpy(),
        np.eye(5)[[1, 0, 4]])
    np.testing.assert_array_equal(
        IntegerLookup(vocabulary=vocab, mask_token=0, output_mode="multi_hot")(
            np.array([[12, 0, 42], [7, 36, 0]])).numpy(),
        [[0, 1, 0, 0, 1], [1, 0, 1, 0, 0]])             # the mask is dropped
    np.testing.assert_array_equal(
        IntegerLookup(vocabulary=[-1] + vocab)(ids).numpy(), out.numpy())   # special first


def test_integer_lookup_adapt_and_config():
    layer = IntegerLookup()
    layer.adapt(np.array([[12, 1138, 42], [42, 1000, 36], [36, 42, 7]]))
    assert layer.get_vocabulary() == [-1, 42, 36, 1138, 1000, 12, 7]   # by count, then value
    np.testing.assert_array_equal(layer(np.array([[12, 1138, 42], [42, 1000, 36]])).numpy(),
                                  [[5, 3, 1], [1, 4, 2]])
    capped = IntegerLookup(max_tokens=4, mask_token=0)
    capped.adapt(gt.data.Dataset.from_tensor_slices(
        np.array([5, 5, 5, 3, 3, 9, 9, 1, 0, 0, 0, 0])).batch(5))
    assert capped.get_vocabulary() == [0, -1, 5, 9] and capped.vocabulary_size() == 4
    cfg = capped.get_config()
    # (as Keras: an adapted vocabulary is not in the config; saved files hold it as assets)
    assert cfg["vocabulary"] is None and cfg["vocabulary_size"] == 4
    assert cfg["mask_token"] == 0 and cfg["max_tokens"] == 4
    again = IntegerLookup.from_config(cfg)
    again.set_vocabulary(capped.get_vocabulary())
    assert again.get_vocabulary() == capped.get_vocabulary()
    strict = IntegerLookup(vocabulary=[1, 2], num_oov_indices=0)
    np.testing.assert_array_equal(strict(np.array([2, 1])).numpy(), [1, 0])
    with pytest.raises(ValueError, match="all inputs should be in vocabulary"):
        strict(np.array([3]))
    with pytest.raises(ValueError, match="repeated"):
        IntegerLookup(vocabulary=[1, 1])
    with pytest.raises(RuntimeError, match="set a vocabulary"):
        IntegerLookup()(np.array([1]))


# --- RandomHeight / RandomWidth (tf.keras 2.21's, Keras' legacy layers) ---------------------

RESIZE_X = np.arange(24, dtype=np.float32).reshape(1, 4, 3, 2) ** 1.5


def test_random_height_width_match_keras_with_pinned_factor():
    # tf.keras.layers.RandomHeight((0.5, 0.5)) on RESIZE_X: height 4 -> 6, bilinear
    y = RandomHeight((0.5, 0.5))(gt.constant(RESIZE_X), training=True)
    assert y.shape == (1, 6, 3, 2) and y.dtype == gt.float32
    np.testing.assert_allclose(y.numpy()[0, :, :, 0], [
        [0., 2.828427, 8.], [7.34847, 12.727922, 19.811388], [19.175655, 27.586716, 37.01898],
        [37.09051, 47.42391, 58.6038], [58.968376, 70.91296, 83.594574],
        [76.36753, 89.44272, 103.18914]], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.numpy()[0, -1, :, 1], [82.81908, 96.23409, 110.30412],
                               rtol=1e-5)
    # RandomWidth((-0.4, -0.4), "nearest") on one image: width int(0.6 * 3) = 1
    y = RandomWidth((-0.4, -0.4), interpolation="nearest")(gt.constant(RESIZE_X[0]),
                                                           training=True)
    assert y.shape == (4, 1, 2)
    np.testing.assert_allclose(y.numpy()[:, 0, :], [[2.828427, 5.196152], [22.627417, 27.],
                                                    [52.3832, 58.09475], [89.44272, 96.23409]],
                               rtol=1e-5)


def test_random_height_width_draw_once_per_call_and_pass_through_at_inference():
    x = gt.constant(np.random.default_rng(0).uniform(size=(3, 10, 8, 2)).astype(np.float32))
    layer = RandomHeight(0.5, seed=4)
    heights = {layer(x, training=True).shape[1] for _ in range(12)}
    assert len(heights) > 1 and all(5 <= h <= 15 for h in heights)
    widths = {RandomWidth((0.0, 1.0), seed=1)(x, training=True).shape[2] for _ in range(3)}
    assert all(8 <= w <= 16 for w in widths)
    same = RandomHeight(0.5, seed=4)
    assert same(x, training=True).shape == RandomHeight(0.5, seed=4)(x, training=True).shape
    out = layer(x, training=False)
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    assert layer(gt.constant(x.numpy().astype(np.float64)), training=False).dtype == gt.float32
    assert layer.compute_output_shape((None, 10, 8, 2)) == (None, None, 8, 2)
    assert RandomWidth(0.1).compute_output_shape((10, 8, 2)) == (10, None, 2)


def test_random_height_width_are_differentiable_in_the_images():
    layer = RandomHeight((0.5, 0.5), dtype="float64")
    check_grads(lambda t: layer(t, training=True), [RESIZE_X.astype(np.float64)[..., :1]],
                order=1)


def test_random_height_width_config_and_errors():
    layer = RandomHeight(0.2, interpolation="nearest", seed=3)
    cfg = layer.get_config()
    assert (cfg["factor"], cfg["interpolation"], cfg["seed"]) == (0.2, "nearest", 3)
    again = RandomHeight.from_config(cfg)
    x = gt.constant(RESIZE_X)
    assert again(x, training=True).shape == RandomHeight(0.2, interpolation="nearest",
                                                         seed=3)(x, training=True).shape
    assert RandomWidth.from_config(RandomWidth((-0.2, 0.3)).get_config()).factor == (-0.2, 0.3)
    with pytest.raises(ValueError, match="upper bound lesser than the lower bound"):
        RandomHeight((0.3, 0.1))
    with pytest.raises(ValueError, match="upper bound lesser than the lower bound"):
        RandomWidth(-1.5)
    with pytest.raises(ValueError, match="must have values larger than -1"):
        RandomHeight((-2, 0.1))
    with pytest.raises(ValueError, match="interpolation must be one of"):
        RandomWidth(0.1, interpolation="cubic")
    with pytest.raises(ValueError, match="rank 3 or 4"):
        RandomHeight(0.1)(gt.zeros([4, 4]), training=True)
