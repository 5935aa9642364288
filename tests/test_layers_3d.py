"""The 3-D Keras layers (gradtape/layers_3d.py): outputs against TensorFlow 2.21 / Keras 3.15
numbers with the same weights, weight shapes and order, configs, channels-first inputs,
gradients and errors."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import layers_3d as L3
from gradtape.testing import check_grads

# Reference outputs: each layer built in tf.keras (Keras 3.15), given the weights below with
# set_weights, called on the inputs below; printed rounded to 5 decimals.


def arr(shape, scale=1.0, off=0):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + off) * scale).reshape(shape).astype(np.float32)


BIAS = np.array([0.1, -0.2], np.float32)

TF_CASES = [
    ("conv", lambda: L3.Conv3D(2, 2), (1, 3, 3, 3, 2), (2, 2, 2, 2, 2), 1,
     [-0.74957, -1.89274, 1.30043, 0.09602, -0.67291, 0.1136, -1.42038, -1.88676, -0.70321,
      -1.87187, 1.3357, 0.15533, -0.71987, 0.05406, -1.40196, -1.90629]),
    ("conv_same_strided_relu",
     lambda: L3.Conv3D(2, (2, 1, 2), strides=(2, 1, 1), padding="same", activation="relu"),
     (1, 3, 2, 3, 2), (2, 1, 2, 2, 2), 1,
     [0.35269, 0.13914, 0.65741, 0.33757, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.56837, 0.14854, 0.0,
      0.0, 0.0, 0.0, 0.72221, 0.15878, 1.06601, 0.58247, 0.18892, 0.1698, 0.0, 0.0]),
    ("transpose_same",
     lambda: L3.Conv3DTranspose(2, (2, 2, 1), strides=(2, 1, 2), padding="same"),
     (1, 1, 2, 2, 2), (2, 2, 1, 2, 2), 2,
     [0.23766, -0.46357, 0.1, -0.2, 0.73249, -0.67908, 0.1, -0.2, -0.04992, 0.08704, 0.1, -0.2,
      -1.30155, 0.52204, 0.1, -0.2, 0.3906, -0.28754, 0.1, -0.2, 0.9663, -0.11423, 0.1, -0.2,
      -0.21647, -0.10467, 0.1, -0.2, -1.60212, -0.61644, 0.1, -0.2]),
    ("transpose_valid", lambda: L3.Conv3DTranspose(2, (1, 2, 2), strides=(1, 2, 1)),
     (1, 1, 2, 1, 2), (1, 2, 2, 2, 2), 2,
     [0.23766, -0.46357, -0.12726, -0.01368, 0.3906, -0.28754, -0.22035, -0.22136, 0.73249,
      -0.67908, -0.69535, 0.00872, 0.9663, -0.11423, -0.73714, -0.57034]),
    ("transpose_output_padding",
     lambda: L3.Conv3DTranspose(2, 2, strides=2, padding="same", output_padding=(1, 1, 1)),
     (1, 2, 2, 1, 2), (2, 2, 2, 2, 2), 2,
     [0.23766, -0.46357, 0.3906, -0.28754, 0.73249, -0.67908, 0.41309, -0.07221, 0.29505,
      0.08576, 0.81125, 0.41212, 0.17734, -0.09928, 0.10389, -0.08331, -0.5062, 0.31332]),
]

TF_SHAPES = {"conv": (1, 2, 2, 2, 2), "conv_same_strided_relu": (1, 2, 2, 3, 2),
             "transpose_same": (1, 2, 2, 4, 2), "transpose_valid": (1, 1, 4, 2, 2),
             "transpose_output_padding": (1, 3, 3, 1, 2)}


@pytest.mark.parametrize("name,make,xshape,kshape,koff,want", TF_CASES,
                         ids=[c[0] for c in TF_CASES])
def test_kernel_layers_match_keras(device, name, make, xshape, kshape, koff, want):
    layer = make()
    x = gt.constant(arr(xshape))
    layer(x)
    assert [tuple(w.shape) for w in layer.get_weights()] == [kshape, (2,)]
    assert [v.name.split("/")[-1].split(":")[0] for v in layer.weights] == ["kernel", "bias"]
    layer.set_weights([arr(kshape, 0.5, koff), BIAS])
    y = layer(x)
    assert y.shape == TF_SHAPES[name] and y.dtype == gt.float32
    np.testing.assert_allclose(y.numpy().ravel(), want, atol=2e-5)


def test_kernel_layers_channels_first_and_weight_layout():
    x = arr((2, 4, 3, 5, 2))
    for make in (lambda fmt: L3.Conv3D(3, (2, 2, 3), padding="same", data_format=fmt),
                 lambda fmt: L3.Conv3DTranspose(3, (2, 3, 2), strides=2, padding="same",
                                                data_format=fmt)):
        last, first = make("channels_last"), make("channels_first")
        y = last(gt.constant(x))
        first(gt.constant(x.transpose(0, 4, 1, 2, 3)))
        w = last.get_weights()
        w[1] = np.array([0.3, -0.1, 0.2], np.float32)
        last.set_weights(w)
        first.set_weights(w)
        y = last(gt.constant(x)).numpy()
        yf = first(gt.constant(x.transpose(0, 4, 1, 2, 3))).numpy()
        np.testing.assert_allclose(yf.transpose(0, 2, 3, 4, 1), y, rtol=1e-5, atol=1e-5)
    conv = L3.Conv3D(4, (1, 2, 3), use_bias=False)
    conv(gt.zeros((1, 2, 3, 4, 5)))
    assert [tuple(v.shape) for v in conv.weights] == [(1, 2, 3, 5, 4)]
    tconv = L3.Conv3DTranspose(4, (1, 2, 3))
    tconv(gt.zeros((1, 2, 3, 4, 5)))
    assert [tuple(v.shape) for v in tconv.weights] == [(1, 2, 3, 4, 5), (4,)]


def test_pooling_layers_match_keras(device):
    x = gt.constant(arr((1, 3, 2, 3, 1)))
    np.testing.assert_allclose(L3.AveragePooling3D(2, padding="same")(x).numpy().ravel(),
                               [0.08277, 0.24789, -0.17129, -0.49231], atol=1e-5)
    y = L3.MaxPooling3D((3, 2, 2), strides=(2, 1, 2), padding="same")(x)
    assert y.shape == (1, 2, 2, 2, 1)
    np.testing.assert_allclose(y.numpy().ravel(), [0.86321, 0.98817, 0.86321, 0.98817, 0.8546,
                                                   0.98817, 0.65699, 0.98817], atol=1e-5)
    v = arr((2, 4, 4, 6, 3))
    y = L3.MaxPooling3D()(gt.constant(v)).numpy()
    np.testing.assert_array_equal(y, v.reshape(2, 2, 2, 2, 2, 3, 2, 3).max(axis=(2, 4, 6)))
    y = L3.AvgPool3D((1, 2, 3), strides=(1, 2, 3))(gt.constant(v)).numpy()
    np.testing.assert_allclose(y, v.reshape(2, 4, 2, 2, 2, 3, 3).mean(axis=(3, 5)), rtol=1e-6)
    yf = L3.MaxPool3D(2, data_format="channels_first")(gt.constant(v.transpose(0, 4, 1, 2, 3)))
    np.testing.assert_array_equal(yf.numpy().transpose(0, 2, 3, 4, 1),
                                  L3.MaxPooling3D(2)(gt.constant(v)).numpy())
    np.testing.assert_allclose(L3.GlobalAveragePooling3D()(gt.constant(v)).numpy(),
                               v.mean(axis=(1, 2, 3)), rtol=1e-6)
    g = L3.GlobalMaxPooling3D(keepdims=True)(gt.constant(v))
    assert g.shape == (2, 1, 1, 1, 3)
    np.testing.assert_array_equal(g.numpy().ravel(), v.max(axis=(1, 2, 3)).ravel())
    np.testing.assert_allclose(
        L3.GlobalAvgPool3D(data_format="channels_first")(gt.constant(v)).numpy(),
        v.mean(axis=(2, 3, 4)), rtol=1e-6)
    assert L3.GlobalMaxPool3D is L3.GlobalMaxPooling3D
    with pytest.raises(TypeError):
        L3.AveragePooling3D()                     # pool_size is required, as in Keras 3
    with pytest.raises(ValueError, match=r"MaxPooling3D layer '.*': input of shape "
                                         r"\(1, 1, 4, 4, 1\) is smaller than the pool"):
        L3.MaxPooling3D()(gt.zeros((1, 1, 4, 4, 1)))


def test_upsampling_padding_cropping(device):
    v = arr((2, 2, 3, 2, 3))
    x = gt.constant(v)
    np.testing.assert_array_equal(L3.UpSampling3D((2, 1, 3))(x).numpy(),
                                  v.repeat(2, axis=1).repeat(3, axis=3))
    np.testing.assert_array_equal(
        L3.UpSampling3D(2, data_format="channels_first")(x).numpy(),
        v.repeat(2, axis=2).repeat(2, axis=3).repeat(2, axis=4))
    np.testing.assert_array_equal(
        L3.ZeroPadding3D(((1, 0), (0, 2), (1, 1)))(x).numpy(),
        np.pad(v, ((0, 0), (1, 0), (0, 2), (1, 1), (0, 0))))
    np.testing.assert_array_equal(L3.ZeroPadding3D()(x).numpy(),
                                  np.pad(v, ((0, 0), (1, 1), (1, 1), (1, 1), (0, 0))))
    np.testing.assert_array_equal(
        L3.ZeroPadding3D((1, 0, 2), data_format="channels_first")(x).numpy(),
        np.pad(v, ((0, 0), (0, 0), (1, 1), (0, 0), (2, 2))))
    w = arr((1, 4, 3, 5, 2))
    np.testing.assert_array_equal(L3.Cropping3D(((1, 0), (0, 1), (1, 2)))(gt.constant(w)).numpy(),
                                  w[:, 1:, :2, 1:3])
    np.testing.assert_array_equal(L3.Cropping3D()(gt.constant(w)).numpy(), w[:, 1:3, 1:2, 1:4])
    wf = w.transpose(0, 4, 1, 2, 3)
    np.testing.assert_array_equal(
        L3.Cropping3D((1, 0, 1), data_format="channels_first")(gt.constant(wf)).numpy(),
        wf[:, :, 1:3, :, 1:4])
    with pytest.raises(ValueError, match=r"Cropping3D layer '.*': cropping .* leaves nothing"):
        L3.Cropping3D(2)(gt.constant(w))
    with pytest.raises(ValueError, match=r"ZeroPadding3D: padding must be an int, 3 ints or 3 "
                                         r"pairs"):
        L3.ZeroPadding3D((1, 1))


def test_configs_follow_keras_and_round_trip():
    cases = [
        (L3.Conv3D(3, 2), {"filters": 3, "kernel_size": (2, 2, 2), "strides": (1, 1, 1),
                           "padding": "valid", "data_format": "channels_last",
                           "dilation_rate": (1, 1, 1), "activation": "linear",
                           "use_bias": True}),
        (L3.Conv3DTranspose(3, 2), {"filters": 3, "kernel_size": (2, 2, 2),
                                    "strides": (1, 1, 1), "padding": "valid",
                                    "output_padding": None, "data_format": "channels_last",
                                    "dilation_rate": (1, 1, 1), "activation": "linear",
                                    "use_bias": True}),
        (L3.MaxPooling3D(), {"pool_size": (2, 2, 2), "padding": "valid",
                             "strides": (2, 2, 2), "data_format": "channels_last"}),
        (L3.AveragePooling3D(2), {"pool_size": (2, 2, 2), "padding": "valid",
                                  "strides": (2, 2, 2), "data_format": "channels_last"}),
        (L3.GlobalAveragePooling3D(), {"data_format": "channels_last", "keepdims": False}),
        (L3.UpSampling3D(), {"size": (2, 2, 2), "data_format": "channels_last"}),
        (L3.ZeroPadding3D(), {"padding": ((1, 1), (1, 1), (1, 1)),
                              "data_format": "channels_last"}),
        (L3.Cropping3D(), {"cropping": ((1, 1), (1, 1), (1, 1)),
                           "data_format": "channels_last"}),
    ]
    for layer, want in cases:
        config = layer.get_config()
        for key, value in want.items():
            assert config[key] == value, (type(layer).__name__, key, config[key])
        again = type(layer).from_config(config)
        assert again.get_config() == config


def test_conv3d_layer_gradients_to_second_order():
    layer = L3.Conv3D(2, (2, 1, 2), strides=(2, 1, 1), padding="same", dtype="float64",
                      bias_initializer="random_normal")
    x = np.random.default_rng(0).standard_normal((1, 3, 2, 3, 2))
    layer(gt.constant(x))
    k0, b0 = layer.kernel.numpy(), layer.bias.numpy()

    def f(x, k, b):
        saved = layer.kernel, layer.bias
        layer.kernel, layer.bias = k, b
        try:
            return layer(x)
        finally:
            layer.kernel, layer.bias = saved
    check_grads(f, [x, k0, b0], order=2)


def test_layer_argument_errors():
    with pytest.raises(ValueError, match=r"Conv3D: strides > 1 together with dilation_rate"):
        L3.Conv3D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match=r"Conv3D: kernel_size must be an int or a tuple of 3"):
        L3.Conv3D(2, (3, 3))
    with pytest.raises(ValueError, match=r"Conv3D: padding must be 'valid' or 'same'"):
        L3.Conv3D(2, 3, padding="causal")
    with pytest.raises(ValueError, match=r"Conv3D: data_format must be 'channels_last' or "
                                         r"'channels_first'"):
        L3.Conv3D(2, 3, data_format="NDHWC")
    with pytest.raises(ValueError, match=r"Conv3DTranspose: output_padding \(2, 0, 0\) must be "
                                         r">= 0 and smaller than the strides"):
        L3.Conv3DTranspose(2, 3, strides=2, output_padding=(2, 0, 0))
    with pytest.raises(ValueError, match=r"Conv3D layer '.*': input depth 1 is smaller than "
                                         r"the kernel's extent 2"):
        L3.Conv3D(2, 2)(gt.zeros((1, 1, 3, 3, 1)))
    with pytest.raises(ValueError, match=r"Conv3D layer '.*': expected input of shape \(None, "
                                         r"None, None, None, None\), got shape \(1, 3, 3, 1\)"):
        L3.Conv3D(2, 2)(gt.zeros((1, 3, 3, 1)))


def test_sequential_save_load_and_functional_model(tmp_path):
    layers = [L3.Conv3D(2, 2, padding="same", activation="relu"), L3.MaxPooling3D(),
              L3.Conv3DTranspose(2, 2, strides=2, output_padding=1, padding="same"),
              L3.ZeroPadding3D(1), L3.Cropping3D(((1, 0), (0, 1), (1, 1))),
              L3.UpSampling3D((1, 2, 1)), L3.AveragePooling3D(2, padding="same"),
              L3.GlobalMaxPooling3D()]
    model = gt.keras.Sequential(layers)
    x = gt.constant(np.random.default_rng(1).standard_normal((2, 4, 4, 4, 3)).astype(np.float32))
    y = model(x)
    assert y.shape == (2, 2)
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = gt.keras.models.load_model(path, custom_objects={name: getattr(L3, name)
                                                            for name in L3.__all__})
    np.testing.assert_array_equal(again(x).numpy(), y.numpy())
    inp = gt.keras.Input(shape=(4, 4, 4, 3))
    h = L3.Conv3D(3, 3, padding="same")(inp)
    h = L3.MaxPooling3D()(h)
    out = L3.GlobalAveragePooling3D()(h)
    assert tuple(out.shape) == (None, 3)
    functional = gt.keras.Model(inp, out)
    assert functional(x).shape == (2, 3)
