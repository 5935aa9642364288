"""EinsumDense, RMSNormalization, the adaptive poolings, SpectralNormalization and
ThresholdedReLU against Keras 3.15 (tf.keras of TF 2.21): the reference numbers below were
computed there with the same inputs and weights."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras


def _fill(shape, mod, div):
    return (np.arange(int(np.prod(shape))).reshape(shape) % mod - mod // 2).astype(
        np.float32) / div


# equation, output_shape, bias_axes, input shape, weight shapes, compute_output_shape,
# sum(y), sum(y * w) with w = arange % 3 - 1, and sum(g**2) of the gradients of sum(y**2)
# for (input, kernel[, bias]); activation tanh; weights (arange % 5 - 2) / 5, input
# (arange % 7 - 3) / 4
EINSUM_CASES = [
    ('ab,bc->ac', 4, 'c', (2, 3), [[3, 4], [4]], (None, 4),
     -0.431669, 0.579334, [0.3192165, 0.580282, 1.124496]),
    ('abc,cd->abd', (None, 4), 'd', (2, 5, 3), [[3, 4], [4]], (None, None, 4),
     -3.01965, -0.326804, [3.094687, 11.74328, 42.99028]),
    ('...x,xy->...y', 4, 'y', (2, 5, 3), [[3, 4], [4]], (None, 5, 4),
     -3.01965, -0.326804, [3.094687, 11.74328, 42.99028]),
    ('abc,cde->abde', (None, 2, 4), 'de', (2, 5, 3), [[3, 2, 4], [2, 4]], (None, None, 2, 4),
     -5.73424, 0.435223, [15.83416, 14.49577, 131.1906]),
    ('abc,cd->abd', (5, 4), None, (2, 5, 3), [[3, 4]], (None, 5, 4),
     0.444523, -0.601124, [2.767296, 19.58575]),
    ('ab...,bc->ac...', (4,), 'c', (2, 3, 5), [[3, 4], [4, 1]], (None, 4, 5),
     -2.84783, 0.585512, [4.419796, 25.7732, 28.04656]),
    ('abcd,cde->abe', (5, 4), 'e', (2, 5, 3, 2), [[3, 2, 4], [4]], (None, 5, 4),
     -3.13828, -0.03232, [9.048481, 38.39819, 47.29756]),
    ('...b,bc->...c', 3, 'c', (2, 3), [[3, 3], [3]], (None, 3),
     -0.766486, 0.719669, [0.3529128, 0.3499764, 1.487271]),
    ('abc,dc->abd', (5, 4), 'b', (2, 5, 3), [[4, 3], [5, 1]], (None, 5, 4),
     -0.181418, 0.382447, [1.824167, 15.02533, 52.29594]),
]


@pytest.mark.parametrize("case", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_dense_matches_keras(case):
    eq, out_shape, bias, in_shape, wshapes, cos, ysum, ywsum, gsums = case
    layer = keras.layers.EinsumDense(eq, output_shape=out_shape, bias_axes=bias,
                                     activation="tanh")
    layer.build(in_shape)
    assert [list(w.shape) for w in layer.weights] == wshapes
    assert tuple(layer.compute_output_shape((None,) + in_shape[1:])) == cos
    for w in layer.weights:
        w.assign(_fill(tuple(w.shape), 5, 5))
    x = gt.constant(_fill(in_shape, 7, 4))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        s = gt.reduce_sum(y * y)
    grads = tape.gradient(s, [x] + layer.trainable_weights)
    yv = y.numpy().ravel()
    np.testing.assert_allclose(yv.sum(), ysum, atol=2e-5)
    np.testing.assert_allclose((yv * (np.arange(yv.size) % 3 - 1)).sum(), ywsum, atol=2e-5)
    np.testing.assert_allclose([float(gt.reduce_sum(g * g)) for g in grads], gsums, rtol=2e-5)


def test_einsum_dense_kernel_initializer_takes_its_fans_from_the_equation():
    layer = keras.layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4), bias_axes="de",
                                     kernel_initializer=keras.initializers.VarianceScaling(
                                         1.0, "fan_in", "uniform", seed=1))
    layer.build((None, 5, 3))
    # fan_in is 3 (the c axis), so the limit is sqrt(3 / 3) = 1; Keras' default fans for a
    # [3, 2, 4] kernel would give fan_in = 2 * 3 and a limit of sqrt(0.5)
    k = layer.kernel.numpy()
    assert k.shape == (3, 2, 4) and np.abs(k).max() > 0.75 and np.abs(k).max() <= 1.0
    assert layer.kernel_initializer.input_axes is None       # (the layer's own is unchanged)


def test_einsum_dense_config_round_trip_and_saved_model(tmp_path):
    layer = keras.layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4),
                                     bias_axes="de", name="proj")
    config = layer.get_config()
    assert config["equation"] == "abc,cde->abde" and config["output_shape"] == (None, 2, 4)
    assert config["bias_axes"] == "de" and config["activation"] == "linear"
    clone = keras.layers.EinsumDense.from_config(config)
    assert clone.partial_output_shape == (None, 2, 4)
    inp = keras.Input((5, 3))
    hidden = keras.layers.Reshape((5, 8))(layer(inp))
    model = keras.Model(inp, keras.layers.EinsumDense("abc,cd->abd", (None, 3),
                                                      bias_axes="d")(hidden))
    x = _fill((2, 5, 3), 7, 4)
    want = model(x).numpy()
    path = tmp_path / "m.keras"
    model.save(path)
    again = keras.models.load_model(path)
    np.testing.assert_allclose(again(x).numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("equation,out_shape,bias,message", [
    ("ab,bc", 4, None, "Invalid einsum equation 'ab,bc'"),
    ("ab,bc->ad", 4, None, "Dimension 'd' was specified in the output 'ad'"),
    ("ab,bc->ac", 4, "d", "Bias dimension 'd' was requested"),
    ("ab,cd->ac", 4, None, "Weight dimension 'd' did not have a match"),
])
def test_einsum_dense_refuses_equations_as_keras(equation, out_shape, bias, message):
    with pytest.raises(ValueError, match=message):
        keras.layers.EinsumDense(equation, output_shape=out_shape, bias_axes=bias).build(
            (None, 3))


def test_einsum_dense_refuses_an_output_size_that_contradicts_the_input():
    layer = keras.layers.EinsumDense("abc,cd->abd", output_shape=(6, 4))
    with pytest.raises(ValueError, match="shared dimension 'b'. Input shape is 5, and output "
                                         "shape is 6"):
        layer.build((None, 5, 3))


def test_einsum_dense_on_the_strict_device_matches_the_cpu():
    x = _fill((2, 5, 3), 7, 4)
    layer = keras.layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4),
                                     bias_axes="de")
    want = layer(x).numpy()
    with gt.device("strict:0"):
        strict = keras.layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4),
                                          bias_axes="de")
        strict.build((2, 5, 3))
        strict.set_weights(layer.get_weights())
        got = strict(gt.constant(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_rms_normalization_matches_keras():
    x = (np.arange(24).reshape(2, 3, 4) % 5 - 1.5).astype(np.float32)
    layer = keras.layers.RMSNormalization(axis=-1, epsilon=1e-6)
    layer.build(x.shape)
    layer.scale.assign(np.array([1., 2., .5, -1.], np.float32))
    xt = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
        s = gt.reduce_sum(y * gt.constant(np.arange(24.).reshape(2, 3, 4).astype(np.float32)))
    gx, gs = tape.gradient(s, [xt, layer.scale])
    np.testing.assert_allclose(y.numpy()[0], [
        [-1.34164, -0.894427, 0.223607, -1.34164], [1.666666, -2.0, -0.166667, -0.333333],
        [0.904534, 3.015113, -0.452267, 0.301511]], atol=2e-6)
    np.testing.assert_allclose(gx.numpy()[1], [
        [4.906412, 8.68901, -7.428137, -2.055761], [9.740739, 23.592587, 8.777775, -8.037038],
        [-3.577694, 30.410519, 16.994106, 0.894415]], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(gs.numpy(), [-14.64507, 16.15492, 38.793571, 51.998009],
                               rtol=2e-5)
    two = keras.layers.RMSNormalization(axis=[2, 1])
    two.build(x.shape)
    assert tuple(two.scale.shape) == (3, 4) and two.get_config()["axis"] == [1, 2]
    np.testing.assert_allclose(two(x).numpy()[0, 0], [-1.03923, -0.34641, 0.34641, 1.03923],
                               atol=2e-6)


def test_adaptive_pooling_layers_match_keras():
    x = np.arange(2 * 7 * 5 * 3, dtype=np.float32).reshape(2, 7, 5, 3) % 11
    avg = keras.layers.AdaptiveAveragePooling2D((3, 2))(x).numpy()
    assert avg.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(avg.sum(), 178.44444, rtol=1e-6)
    np.testing.assert_allclose(avg[0, :, :, 0], [[4.55556, 5.66667], [4.0, 5.11111],
                                                 [4.66667, 4.55556]], atol=1e-5)
    mx = keras.layers.AdaptiveMaxPooling2D(3)(x).numpy()
    assert mx.shape == (2, 3, 3, 3)
    np.testing.assert_array_equal(mx[1, :, :, 2], [[8, 10, 10], [9, 8, 10], [10, 9, 8]])
    x1 = np.arange(2 * 3 * 7, dtype=np.float32).reshape(2, 3, 7) % 5
    np.testing.assert_allclose(
        keras.layers.AdaptiveAveragePooling1D(3, data_format="channels_first")(x1).numpy()[0],
        [[1.0, 3.0, 1.66667], [3.0, 1.66667, 2.0], [1.66667, 2.0, 2.33333]], atol=1e-5)
    np.testing.assert_array_equal(keras.layers.AdaptiveMaxPooling1D(4)(x1).numpy()[0], [
        [0, 1, 2, 3, 4, 0, 1], [2, 3, 4, 3, 4, 2, 3], [4, 3, 4, 2, 3, 4, 3],
        [4, 0, 1, 2, 3, 4, 0]])
    x3 = np.arange(4 * 5 * 6 * 2, dtype=np.float32).reshape(1, 4, 5, 6, 2) % 13
    np.testing.assert_allclose(keras.layers.AdaptiveAveragePooling3D((2, 3, 4))(x3).numpy().sum(),
                               283.0417, rtol=1e-6)
    np.testing.assert_array_equal(keras.layers.AdaptiveMaxPooling3D(2)(x3).numpy().ravel(),
                                  [12, 12, 12, 11, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 11, 12])
    config = keras.layers.AdaptiveAveragePooling2D((3, 2)).get_config()
    assert config["output_size"] == (3, 2) and config["data_format"] == "channels_last"
    with pytest.raises(TypeError, match="`output_size` must be an integer or"):
        keras.layers.AdaptiveMaxPooling2D((1, 2, 3))


def test_spectral_normalization_matches_keras():
    sn = keras.layers.SpectralNormalization(keras.layers.Dense(3), power_iterations=2)
    x = (np.arange(8).reshape(2, 4) % 3 - 1).astype(np.float32)
    sn.build((None, 4))
    assert [(w.trainable, tuple(w.shape)) for w in sn.weights] == [
        (True, (4, 3)), (False, (1, 3)), (True, (3,))]
    sn.layer.kernel.assign((np.arange(12).reshape(4, 3) % 5 - 2).astype(np.float32) / 3)
    sn.vector_u.assign(np.array([[0.3, -0.2, 0.5]], np.float32))
    np.testing.assert_allclose(sn(x, training=False).numpy(), [[-1 / 3, 1, 2 / 3],
                                                               [2 / 3, 2 / 3, -1]], rtol=1e-6)
    with gt.GradientTape() as tape:
        y = sn(x, training=True)
        s = gt.reduce_sum(y * y)
    gk, gb = tape.gradient(s, sn.trainable_weights)
    np.testing.assert_allclose(y.numpy(), [[-0.315267, 0.945801, 0.630534],
                                           [0.630534, 0.630534, -0.945801]], rtol=2e-6)
    np.testing.assert_allclose(sn.vector_u.numpy(), [[-0.137473, -0.885935, 0.442968]],
                               rtol=2e-5)
    np.testing.assert_allclose(sn.layer.kernel.numpy()[1], [0.315267, 0.630534, -0.630534],
                               rtol=2e-6)
    np.testing.assert_allclose(gk.numpy()[2], [-1.8916, 0.63053, 3.15267], rtol=2e-5)
    np.testing.assert_allclose(gb.numpy(), [0.63053, 3.15267, -0.63053], rtol=2e-5)
    config = sn.get_config()
    assert config["power_iterations"] == 2 and config["layer"]["class_name"] == "Dense"
    again = keras.layers.SpectralNormalization.from_config(config)
    assert again.power_iterations == 2 and isinstance(again.layer, keras.layers.Dense)
    # an all-zero kernel is left as it is
    zero = keras.layers.SpectralNormalization(keras.layers.Dense(2, kernel_initializer="zeros"))
    zero(x, training=True)
    assert not np.isnan(zero.layer.kernel.numpy()).any()
    assert not np.isnan(zero.vector_u.numpy()).any()


def test_spectral_normalization_refuses_bad_arguments():
    with pytest.raises(ValueError, match="`power_iterations` should be greater than zero"):
        keras.layers.SpectralNormalization(keras.layers.Dense(3), power_iterations=0)
    with pytest.raises(ValueError, match="ReLU object has no attribute 'kernel' nor "
                                         "'embeddings'"):
        keras.layers.SpectralNormalization(keras.layers.ReLU()).build((None, 3))
    emb = keras.layers.SpectralNormalization(keras.layers.Embedding(5, 3))
    emb.build((None,))
    assert [tuple(w.shape) for w in emb.weights] == [(5, 3), (1, 3)]


def test_thresholded_relu_and_the_other_names():
    layer = keras.layers.ThresholdedReLU(theta=0.5)
    np.testing.assert_array_equal(layer(np.array([-1, 0.5, 0.6, 2.], np.float32)).numpy(),
                                  np.array([0, 0, 0.6, 2], np.float32))
    assert keras.layers.ThresholdedReLU().get_config()["theta"] == 1.0
    with pytest.raises(ValueError, match="should be >=0"):
        keras.layers.ThresholdedReLU(theta=-1)
    assert keras.layers.Convolution3D is keras.layers.Conv3D
    assert keras.layers.Convolution3DTranspose is keras.layers.Conv3DTranspose
    assert keras.layers.SeparableConvolution1D is keras.layers.SeparableConv1D
    assert keras.layers.SeparableConvolution2D is keras.layers.SeparableConv2D


def test_rescaling_takes_one_factor_per_channel_as_keras():
    layer = keras.layers.Rescaling([1.0, 2.0, 3.0], offset=[0.0, 1.0, 0.0])
    np.testing.assert_array_equal(layer(np.ones((1, 2, 3), np.float32)).numpy(),
                                  np.array([[[1, 3, 3], [1, 3, 3]]], np.float32))
    config = layer.get_config()
    assert config["scale"] == [1.0, 2.0, 3.0] and config["offset"] == [0.0, 1.0, 0.0]
    again = keras.layers.Rescaling.from_config(config)
    with gt.device("strict:0"):
        np.testing.assert_array_equal(again(gt.ones((1, 3))).numpy(), [[1, 3, 3]])
    with pytest.raises(TypeError, match="scale must be a number or a list"):
        keras.layers.Rescaling("x")


def test_max_pooling2d_layers_are_named_as_keras():
    assert keras.layers.MaxPooling2D().name.startswith("max_pooling2d")
    assert keras.layers.MaxPool2D(name="p").name == "p"
