"""gt.keras.applications against Keras 3.15 (tf.keras of TF 2.21).

Each model is built as Keras builds it: the layer count, the hash of the layer names, the
parameter count, the output shape and the model name are Keras' (TF's builders run with
``weights=None``). The predictions are checked with deterministic weights: every weight,
layer by layer in the order Keras' weight files list them, is drawn from one seeded
generator (:func:`_fill`, run the same way on TF's model); TF's outputs on the same batch are
hard-coded. Nothing is downloaded: ``weights="imagenet"`` reads a file put in a temporary
KERAS_HOME, the tf.keras 2 weights file of a small MobileNetV2 stored in tests/data."""
import gzip
import hashlib
import importlib
import json
import os
import shutil
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape.applications import imagenet_utils

DATA = os.path.join(os.path.dirname(__file__), "data", "tf_files")
LEGACY_MOBILENET = "mobilenet_v2_035_no_top.h5"


def _fill(model, seed=0):
    """Deterministic weights: the variables of ``model.layers`` in order, scales by kind."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        for var in layer.variables:
            name = var.name.rpartition("/")[2].partition(":")[0]
            shape = tuple(var.shape)
            if name in ("gamma", "moving_variance", "variance"):
                value = rng.uniform(0.5, 1.5, shape)
            elif name in ("beta", "moving_mean", "bias", "mean"):
                value = rng.normal(0, 0.1, shape)
            else:
                value = rng.normal(0, 1, shape) / np.sqrt(max(1, np.prod(shape[:-1])))
            var.assign(value.astype("float32"))


def _layer_names(model):
    """The names of ``model.layers`` less gradtape's op layers (``x + 3.0`` on symbolic
    tensors: Keras' graph keeps such operations out of ``model.layers``)."""
    return [layer.name for layer in model.layers if not layer.name.startswith("tf.")]


def _names_hash(model):
    return hashlib.sha1("\n".join(_layer_names(model)).encode()).hexdigest()[:12]


def _build(module, fn, kwargs):
    gt.keras.backend.clear_session()
    return getattr(importlib.import_module(f"gradtape.keras.applications.{module}"), fn)(
        weights=None, **kwargs)


# (module, builder, kwargs, input range, layers, names hash, parameters, output shape, model
#  name, first 4 outputs, mean |output|); None for the outputs: structure only (the deep
#  variants of a family whose blocks a shallower case checks)
CASES = [
    ("mobilenet_v2", "MobileNetV2", dict(alpha=0.35, input_shape=(32, 32, 3), classes=10,
                                         classifier_activation=None),
     (-1, 1), 156, "5705d19ed70c", 423018, (None, 10), "mobilenetv2_0.35_32",
     [0.280445, 0.130045, -0.368758, 0.31969], 0.257889),
    ("mobilenet_v2", "MobileNetV2", dict(alpha=0.5, input_shape=(33, 35, 3), include_top=False,
                                         pooling="max"),
     (-1, 1), 155, "fc5c3958dd40", 706224, (None, 1280), "mobilenetv2_0.50_33",
     [0, 0, 0.403156, 0], 0.0973037),
    ("resnet", "ResNet50", dict(input_shape=(32, 32, 3), classes=7, classifier_activation=None),
     (0, 255), 177, "5a0a0dff3592", 23602055, (None, 7), "resnet50",
     [25.3225, 120.977, 101.223, -136.828], 154.134),
    ("resnet", "ResNet101", dict(input_shape=(32, 32, 3), include_top=False, pooling="avg"),
     (-1, 1), 346, "81a0e8581b51", 42658176, (None, 2048), "resnet101", None, None),
    ("resnet_v2", "ResNet50V2", dict(input_shape=(32, 32, 3), classes=5,
                                     classifier_activation=None),
     (-1, 1), 192, "9fdc896ce476", 23575045, (None, 5), "resnet50v2",
     [-0.296581, 0.251804, 0.792016, 0.98823], 0.508996),
    # Keras counts the Normalization layer's `count` (1 parameter) that gradtape's lacks
    ("efficientnet", "EfficientNetB0", dict(input_shape=(32, 32, 3), classes=6,
                                            classifier_activation=None),
     (0, 255), 240, "2a33d66a157e", 4057257 - 1, (None, 6), "efficientnetb0",
     [-0.0924029, -0.0620611, 0.313289, 0.021492], 0.110964),
    ("efficientnet", "EfficientNetB1", dict(input_shape=(32, 32, 3), include_top=False,
                                            pooling="avg"),
     (0, 255), 340, "36e9ce4f6db6", 6575239 - 1, (None, 1280), "efficientnetb1",
     [-0.0285416, 0.0482223, -0.117905, 0.0213472], 0.106587),
    ("efficientnet", "EfficientNetB3", dict(input_shape=(32, 32, 3), include_top=False),
     (0, 255), 384, "0477cbe3f277", 10783535 - 1, (None, 1, 1, 1536), "efficientnetb3",
     [-0.0109682, -0.244771, 0.125009, 0.185993], 0.120288),
    ("mobilenet_v3", "MobileNetV3Small", dict(input_shape=(32, 32, 3), classes=6,
                                              classifier_activation=None),
     (0, 255), 164, "c5b12584cdaa", 1536118, (None, 6), "MobileNetV3Small",
     [0.147052, 0.0588824, -0.266107, 0.0928704], 0.118712),
    ("mobilenet_v3", "MobileNetV3Small", dict(input_shape=(48, 32, 3), alpha=0.75,
                                              minimalistic=True, include_top=False,
                                              pooling="avg"),
     (0, 255), 104, "f318df4b1047", 273800, (None, 432), "MobileNetV3Small",
     [0.000281677, 0.63141, 0.437992, 0], 0.148976),
    ("mobilenet_v3", "MobileNetV3Large", dict(input_shape=(32, 32, 3), include_top=False,
                                              pooling="max", include_preprocessing=False),
     (-1, 1), 187, "bfed2e270586", 2996352, (None, 960), "MobileNetV3Large",
     [0.00359794, 0.209097, -0.0209037, -0.0131715], 0.12522),
    ("mobilenet_v3", "MobileNetV3Large", dict(input_shape=(32, 32, 3), alpha=1.25, classes=4,
                                              classifier_activation=None, name="big"),
     (0, 255), 193, "32d66a286765", 6692164, (None, 4), "big",
     [-0.0245244, -0.0399801, 0.16353, 0.0327394], 0.0651935),
    ("densenet", "DenseNet121", dict(input_shape=(32, 32, 3), classes=5,
                                     classifier_activation=None),
     (-1, 1), 429, "c69654c15b3d", 7042629, (None, 5), "densenet121",
     [-0.148318, 0.214989, -0.0704632, -0.00190784], 0.129751),
    ("densenet", "DenseNet169", dict(input_shape=(32, 32, 3), include_top=False, pooling="avg"),
     (-1, 1), 596, "909e2ddbdba4", 12642880, (None, 1664), "densenet169",
     None, None),
    ("densenet", "DenseNet201", dict(input_shape=(32, 32, 3), include_top=False),
     (-1, 1), 707, "404b798cc3d6", 18321984, (None, 1, 1, 1920), "densenet201",
     None, None),
    ("inception_v3", "InceptionV3", dict(input_shape=(75, 75, 3), classes=5,
                                         classifier_activation=None),
     (-1, 1), 313, "ea63f6b128bd", 21813029, (None, 5), "inception_v3",
     [0.0904874, 0.0537782, 0.120385, 0.0143772], 0.0897045),
    ("xception", "Xception", dict(input_shape=(71, 71, 3), classes=5, classifier_activation=None),
     (-1, 1), 134, "20d6f32195d2", 20871725, (None, 5), "xception",
     [-0.00254551, -0.315914, 0.123057, 0.292732], 0.19072),
    ("convnext", "ConvNeXtTiny", dict(input_shape=(32, 32, 3), classes=5,
                                      classifier_activation=None),
     (0, 255), 135, "72379c629aa7", 27823973, (None, 5), "convnext_tiny",
     [-0.897422, 0.985273, 1.50684, -0.316851], 1.0208),
    ("convnext", "ConvNeXtSmall", dict(input_shape=(32, 32, 3), include_top=False, pooling="avg"),
     (0, 255), 260, "8a80faae2249", 49454688, (None, 768), "convnext_small",
     None, None),
    ("efficientnet_v2", "EfficientNetV2B0", dict(input_shape=(32, 32, 3), classes=5,
                                                 classifier_activation=None),
     (0, 255), 273, "6ef75b893c5d", 5925717, (None, 5), "efficientnetv2-b0",
     [0.152225, 0.124057, 0.222345, 0.618946], 0.288197),
    ("efficientnet_v2", "EfficientNetV2B3", dict(input_shape=(32, 32, 3), include_top=False,
                                                 pooling="avg"),
     (0, 255), 410, "5ffa6dd34cef", 12930622, (None, 1536), "efficientnetv2-b3",
     [-0.135279, 0.365299, 0.685401, -0.150523], 0.219935),
    ("efficientnet_v2", "EfficientNetV2S", dict(input_shape=(32, 32, 3), include_top=False,
                                                pooling="max"),
     (0, 255), 514, "ea09fafedac9", 20331360, (None, 1280), "efficientnetv2-s",
     [0.881714, -0.230958, 0.102357, -0.201613], 0.259415),
    ("vgg16", "VGG16", dict(input_shape=(32, 32, 3), classes=3, classifier_activation=None),
     (0, 255), 23, "5c8ebd8126a0", 33609539, (None, 3), "vgg16",
     [0.0517029, -0.860766, -1.0965, 0.179218], 0.678187),
    ("vgg19", "VGG19", dict(input_shape=(40, 32, 3), include_top=False, pooling="avg"),
     (-1, 1), 23, "b2fdf186c2e1", 20024384, (None, 512), "vgg19",
     [0.259936, 0.031873, 0.273614, 0.0552437], 0.0674225),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}-{c[6]}")
def test_model_matches_keras(case):
    module, fn, kwargs, (lo, hi), n_layers, names, params, out_shape, name, head, absmean = case
    model = _build(module, fn, kwargs)
    assert len(_layer_names(model)) == n_layers
    assert _names_hash(model) == names
    assert model.count_params() == params
    assert tuple(model.output.shape) == out_shape
    assert model.name == name
    if head is None:
        return
    _fill(model)
    x = np.random.default_rng(1).uniform(lo, hi, (2,) + kwargs["input_shape"]).astype("float32")
    y = np.asarray(model(x, training=False))
    assert y.shape == (2,) + out_shape[1:]
    np.testing.assert_allclose(y.ravel()[:4], head, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(np.abs(y).mean(), absmean, rtol=2e-3)


# --- the weight files ------------------------------------------------------------------------

def _legacy_file(tmp_path):
    """tf_keras 2.21's ``save_weights`` of MobileNetV2(alpha=0.35, include_top=False), its
    weights 3-level values (so the stored file compresses)."""
    out = tmp_path / LEGACY_MOBILENET
    with gzip.open(os.path.join(DATA, LEGACY_MOBILENET + ".gz"), "rb") as fin, \
            open(out, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return str(out)


# tf_keras' outputs for the batch of _check_legacy at 96x96
LEGACY_HEAD = [0.4296366274356842, 0.10193885862827301, 0.0, 0.0]
LEGACY_ABSMEAN = 0.08227922022342682
LEGACY_STD = 0.12047486007213593


def _check_legacy(model):
    x = np.random.default_rng(1).uniform(-1, 1, (2, 96, 96, 3)).astype("float32")
    y = np.asarray(model(x, training=False))
    assert y.shape == (2, 3, 3, 1280)
    np.testing.assert_allclose(y.ravel()[:4], LEGACY_HEAD, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.abs(y).mean(), LEGACY_ABSMEAN, rtol=1e-4)
    np.testing.assert_allclose(y.std(), LEGACY_STD, rtol=1e-4)


def test_weights_path_reads_tf_keras_legacy_file(tmp_path):
    path = _legacy_file(tmp_path)
    model = gt.keras.applications.MobileNetV2(alpha=0.35, include_top=False, weights=path,
                                              input_shape=(96, 96, 3))
    _check_legacy(model)
    again = gt.keras.applications.MobileNetV2(alpha=0.35, include_top=False, weights=None,
                                              input_shape=(96, 96, 3))
    again.load_weights(path)
    _check_legacy(again)


def test_weights_imagenet_reads_keras_cache(tmp_path, monkeypatch):
    """``weights="imagenet"`` fetches Keras' file name into KERAS_HOME/models; a cached file
    is used (MobileNetV2's files carry no hash)."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    models = tmp_path / "home" / "models"
    models.mkdir(parents=True)
    shutil.copy(_legacy_file(tmp_path),
                models / "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5")
    base = gt.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35,
                                             include_top=False, weights="imagenet")
    _check_legacy(base)
    # the transfer-learning recipe: a frozen base under a new head
    base.trainable = False
    inputs = gt.keras.Input((96, 96, 3))
    x = gt.keras.applications.mobilenet_v2.preprocess_input(inputs)
    x = base(x, training=False)
    x = gt.keras.layers.GlobalAveragePooling2D()(x)
    outputs = gt.keras.layers.Dense(1)(x)
    model = gt.keras.Model(inputs, outputs)
    assert len(model.trainable_weights) == 2
    pixels = np.random.default_rng(1).uniform(-1, 1, (2, 96, 96, 3)).astype("float32")
    features = np.asarray(base((pixels + 1.0) * 127.5 / 127.5 - 1.0, training=False))
    np.testing.assert_allclose(np.asarray(model.layers[-1](features.mean(axis=(1, 2)))),
                               np.asarray(model((pixels + 1.0) * 127.5)), rtol=1e-4,
                               atol=1e-5)


def test_imagenet_file_names_and_hashes(tmp_path, monkeypatch):
    """The file each builder asks ``get_file`` for: Keras' name, URL, subdir and hash."""
    from gradtape.applications import efficientnet, mobilenet_v2, resnet, vgg16, vgg19
    asked = []

    def fake_get_file(fname, origin, cache_subdir="datasets", file_hash=None, **kw):
        asked.append((fname, origin, cache_subdir, file_hash))
        raise RuntimeError("stop")
    monkeypatch.setattr(imagenet_utils, "get_file", fake_get_file)
    small = dict(include_top=False, input_shape=(32, 32, 3))
    apps = gt.keras.applications
    builds = [  # (builder, warns: a size with no weights of its own loads the 224 ones)
        (lambda: mobilenet_v2.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35), False),
        (lambda: mobilenet_v2.MobileNetV2(input_shape=(32, 32, 3), alpha=0.5,
                                          include_top=False), True),
        (lambda: resnet.ResNet50(**small), False),
        (lambda: resnet.ResNet50V2(**small), False),
        (lambda: vgg16.VGG16(**small), False),
        (lambda: vgg19.VGG19(**small), False),
        (lambda: efficientnet.EfficientNetB0(**small), False),
        (lambda: efficientnet.EfficientNetB2(name="eff", **small), False),
        (lambda: apps.MobileNetV3Small(**small), True),
        (lambda: apps.MobileNetV3Large(minimalistic=True, **small), True),
        (lambda: apps.DenseNet121(**small), False),
        (lambda: apps.InceptionV3(include_top=False, input_shape=(75, 75, 3)), False),
        (lambda: apps.Xception(include_top=False, input_shape=(71, 71, 3)), False),
        (lambda: apps.ConvNeXtTiny(**small), False),
        (lambda: apps.EfficientNetV2B0(**small), False),
        (lambda: apps.EfficientNetV2S(**small), False)]
    for build, warns in builds:
        with pytest.raises(RuntimeError, match="stop"), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            build()
        assert [str(x.message)[:13] for x in w] == (["`input_shape`"] if warns else [])
    base = "https://storage.googleapis.com/tensorflow/keras-applications/"
    assert asked == [
        ("mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96.h5",
         base + "mobilenet_v2/mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96.h5",
         "models", None),
        ("mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.5_224_no_top.h5",
         base + "mobilenet_v2/mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.5_224_no_top.h5",
         "models", None),
        ("resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "resnet/resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
         "4d473c1dd8becc155b73f8504c6f6626"),
        ("resnet50v2_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "resnet/resnet50v2_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
         "fac2f116257151a9d068a22e544a4917"),
        ("vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "vgg16/vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
         "6d6bbae143d832006294945121d1f1fc"),
        ("vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "vgg19/vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
         "253f8cb515780f3b799900260a226db6"),
        ("efficientnetb0_notop.h5",
         "https://storage.googleapis.com/keras-applications/efficientnetb0_notop.h5", "models",
         "50bc09e76180e00e4465e1a485ddc09d"),
        ("eff_notop.h5", "https://storage.googleapis.com/keras-applications/eff_notop.h5",
         "models", "111f8e2ac8aa800a7a99e3239f7bfb39"),
        ("weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5",
         base + "mobilenet_v3/weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5", "models",
         "d3e8ec802a04aa4fc771ee12a9a9b836"),
        ("weights_mobilenet_v3_large_minimalistic_224_1.0_float_no_top_v2.h5",
         base + "mobilenet_v3/weights_mobilenet_v3_large_minimalistic_224_1.0_float_no_top_v2.h5",
         "models", "ec5221f64a2f6d1ef965a614bdae7973"),
        ("densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "densenet/densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
         "30ee3e1110167f948a6b9946edeeb738"),
        ("inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "inception_v3/inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5",
         "models", "bcbd6486424b2319ff4ef7d526e38f63"),
        ("xception_weights_tf_dim_ordering_tf_kernels_notop.h5",
         base + "xception/xception_weights_tf_dim_ordering_tf_kernels_notop.h5", "models",
         "b0042744bf5b25fce3cb969f33bebb97"),
        ("convnext_tiny_notop.h5", base + "convnext/convnext_tiny_notop.h5", "models",
         "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1"),
        ("efficientnetv2-b0_notop.h5", base + "efficientnet_v2/efficientnetv2-b0_notop.h5",
         "models", "893217f2bb855e2983157299931e43ff"),
        ("efficientnetv2-s_notop.h5", base + "efficientnet_v2/efficientnetv2-s_notop.h5",
         "models", "af0682fb74e8c54910f2d4393339c070"),
    ]


def test_convnext_layers():
    """Keras' LayerScale (``x * gamma``) and StochasticDepth (each example's path kept with
    probability ``1 - rate``, scaled by its inverse; the identity when not training)."""
    from gradtape.applications import convnext
    scale = convnext.LayerScale(0.5, 3)
    np.testing.assert_allclose(scale(gt.ones((1, 3))).numpy(), [[0.5, 0.5, 0.5]])
    assert [v.name.rpartition("/")[2].partition(":")[0] for v in scale.variables] == ["variable"]
    drop = convnext.StochasticDepth(0.5)
    x = gt.ones((64, 2, 2, 1))
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    y = drop(x, training=True).numpy().reshape(64, -1)
    assert set(np.unique(y)) <= {0.0, 2.0} and 0 < (y[:, 0] == 2.0).sum() < 64
    assert (y == y[:, :1]).all()                              # one draw per example
    assert convnext.StochasticDepth(0.1).get_config()["drop_path_rate"] == 0.1


def test_efficientnet_imagenet_scaling_layer():
    """With ImageNet weights the stem divides by ImageNet's standard deviations (Keras'
    ``Rescaling`` with one factor per channel) after ``Rescaling`` and ``Normalization``."""
    gt.keras.backend.clear_session()
    layer = gt.keras.layers.Rescaling([1.0, 2.0, 4.0])
    assert layer.name == "rescaling"
    x = np.ones((1, 2, 2, 3), "float32")
    np.testing.assert_allclose(layer(gt.constant(x)).numpy()[0, 0, 0], [1.0, 2.0, 4.0])


# --- arguments -------------------------------------------------------------------------------

def test_argument_errors(tmp_path):
    apps = gt.keras.applications
    with pytest.raises(ValueError, match="The `weights` argument should be either"):
        apps.MobileNetV2(weights=str(tmp_path / "missing.h5"))
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        apps.ResNet50(classes=10)
    with pytest.raises(ValueError, match="alpha must be one of"):
        apps.MobileNetV2(alpha=0.6, include_top=False, input_shape=(96, 96, 3))
    with pytest.raises(ValueError, match="Input size must be at least 32x32"):
        apps.VGG16(weights=None, include_top=False, input_shape=(31, 64, 3))
    with pytest.raises(ValueError, match="`input_shape` must be a tuple of three integers"):
        apps.VGG16(weights=None, include_top=False, input_shape=(64, 64))
    with pytest.raises(ValueError, match="you should specify a static `input_shape`"):
        apps.ResNet50(weights=None, input_shape=(None, 64, 3))
    with pytest.raises(ValueError, match=r"`input_shape` should be \(224, 224, 3\)"):
        apps.ResNet50(input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match="The input must have 3 channels"):
        apps.VGG16(include_top=False, input_shape=(64, 64, 1))
    with pytest.raises(ValueError, match="Only `None` and `softmax` activations"):
        apps.MobileNetV2(alpha=0.35, input_shape=(96, 96, 3), classifier_activation="relu")
    with pytest.warns(UserWarning, match="usually expects 1 or 3 input channels"):
        apps.VGG16(weights=None, include_top=False, input_shape=(32, 32, 4))


def test_defaults_and_input_tensor():
    apps = gt.keras.applications
    model = apps.MobileNetV2(weights=None)
    assert model.name == "mobilenetv2_1.00_224"
    assert tuple(model.input.shape) == (None, 224, 224, 3)
    assert tuple(model.output.shape) == (None, 1000)
    model = apps.MobileNetV2(weights=None, include_top=False)
    assert tuple(model.input.shape) == (None, None, None, 3)
    assert model.name == "mobilenetv2_1.00_None"            # (Keras' name too)
    # input_tensor: the model's input is the Input the tensor derives from
    inp = gt.keras.Input((64, 64, 3))
    x = gt.keras.layers.Rescaling(1.0 / 255)(inp)
    model = apps.ResNet50(weights=None, include_top=False, input_tensor=x, pooling="avg")
    assert model.inputs[0] is inp
    assert tuple(model.output.shape) == (None, 2048)
    model = apps.MobileNetV2(weights=None, include_top=False, input_tensor=gt.keras.Input(
        (128, 128, 3)))
    assert model.name == "mobilenetv2_1.00_None"            # (Keras: the same)
    with pytest.raises(ValueError, match="input_tensor.shape\\[2\\] must equal input_shape"):
        apps.MobileNetV2(weights=None, include_top=False, input_shape=(64, 64, 3),
                         input_tensor=gt.keras.Input((32, 32, 3)))
    import gradtape.keras.applications.resnet50 as r50
    from gradtape.keras.applications.mobilenet_v2 import preprocess_input
    assert r50.ResNet50 is apps.ResNet50 and preprocess_input is apps.mobilenet_v2.preprocess_input


# --- preprocessing and decoding ----------------------------------------------------------------

BASE = np.arange(12, dtype="float32") * 20.0
# Keras' outputs for BASE as (1, 2, 2, 3) (channels_last) and (1, 3, 2, 2) (channels_first)
PREPROCESSED = {
    ("caffe", "channels_last"): [-63.939, -96.779, -123.68, -3.939, -36.779, -63.68, 56.061,
                                 23.221, -3.68, 116.061, 83.221, 56.32],
    ("caffe", "channels_first"): [56.061, 76.061, 96.061, 116.061, -36.779, -16.779, 3.221,
                                  23.221, -123.68, -103.68, -83.68, -63.68],
    ("tf", "channels_last"): [-1.0, -0.84314, -0.68627, -0.52941, -0.37255, -0.21569,
                              -0.05882, 0.09804, 0.2549, 0.41176, 0.56863, 0.72549],
    ("torch", "channels_last"): [-2.1179, -1.68557, -1.10728, -1.09042, -0.63515, -0.06152,
                                 -0.06293, 0.41527, 0.98423, 0.96455, 1.46569, 2.02998],
    ("torch", "channels_first"): [-2.1179, -1.77541, -1.43291, -1.09042, -0.63515, -0.28501,
                                  0.06513, 0.41527, 0.98423, 1.33281, 1.68139, 2.02998],
}


@pytest.mark.parametrize("mode,data_format", sorted(PREPROCESSED))
def test_preprocess_input(mode, data_format):
    shape = (1, 2, 2, 3) if data_format == "channels_last" else (1, 3, 2, 2)
    want = np.array(PREPROCESSED[mode, data_format]).reshape(shape)
    x = BASE.reshape(shape).copy()
    y = imagenet_utils.preprocess_input(x, data_format=data_format, mode=mode)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)
    assert np.shares_memory(x, y)            # a float array is changed in place, as Keras
    np.testing.assert_allclose(imagenet_utils.preprocess_input(
        BASE.reshape(shape)[0].copy(), data_format=data_format, mode=mode), want[0],
        rtol=1e-5, atol=1e-4)
    t = imagenet_utils.preprocess_input(gt.constant(BASE.reshape(shape)),
                                        data_format=data_format, mode=mode)
    assert isinstance(t, gt.Tensor)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-5, atol=1e-4)
    t3 = imagenet_utils.preprocess_input(gt.constant(BASE.reshape(shape)[0]),
                                         data_format=data_format, mode=mode)
    np.testing.assert_allclose(t3.numpy(), want[0], rtol=1e-5, atol=1e-4)
    with gt.device("strict:0"):
        s = imagenet_utils.preprocess_input(gt.constant(BASE.reshape(shape)),
                                            data_format=data_format, mode=mode)
        np.testing.assert_allclose(s.numpy(), want, rtol=1e-5, atol=1e-4)


def test_preprocess_input_family_modes_and_errors():
    apps = gt.keras.applications
    pix = BASE.reshape(1, 2, 2, 3)
    for fn, key in ((apps.mobilenet_v2.preprocess_input, "tf"),
                    (apps.resnet_v2.preprocess_input, "tf"),
                    (apps.resnet.preprocess_input, "caffe"),
                    (apps.resnet50.preprocess_input, "caffe"),
                    (apps.vgg16.preprocess_input, "caffe"),
                    (apps.vgg19.preprocess_input, "caffe")):
        np.testing.assert_allclose(fn(pix.copy()).ravel(), PREPROCESSED[key, "channels_last"],
                                   rtol=1e-5, atol=1e-4)
    x = np.arange(12, dtype="uint8").reshape(2, 2, 3)
    y = imagenet_utils.preprocess_input(x, mode="caffe")
    assert y.dtype == np.float32 and x.dtype == np.uint8
    np.testing.assert_allclose(y.ravel()[:3], [-101.939, -115.779, -123.68], rtol=1e-6)
    with pytest.raises(ValueError, match="Expected mode to be one of `caffe`, `tf` or `torch`"):
        imagenet_utils.preprocess_input(pix.copy(), mode="keras")
    with pytest.raises(ValueError, match="Expected data_format to be one of"):
        imagenet_utils.preprocess_input(pix.copy(), data_format="nhwc")
    # symbolic tensors: a functional model that preprocesses
    inp = gt.keras.Input((2, 2, 3))
    model = gt.keras.Model(inp, apps.vgg16.preprocess_input(inp))
    np.testing.assert_allclose(np.asarray(model(pix)).ravel(),
                               PREPROCESSED["caffe", "channels_last"], rtol=1e-5, atol=1e-4)


def test_decode_predictions(tmp_path, monkeypatch):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    data = json.dumps(index).encode()
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "models").mkdir(parents=True)
    (tmp_path / "home" / "models" / "imagenet_class_index.json").write_bytes(data)
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX", None)
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX_PATH", (tmp_path / "none.json").as_uri())
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX_HASH", hashlib.md5(data).hexdigest())
    preds = np.zeros((2, 1000), "float32")
    preds[0, [5, 999, 42]] = [0.5, 0.3, 0.2]
    preds[1] = np.arange(1000) * 1e-5
    preds[1, [7, 8]] = [0.1, 0.9]
    got = gt.keras.applications.resnet50.decode_predictions(gt.constant(preds), top=3)
    assert [[r[:2] for r in row] for row in got] == [
        [("n00000005", "class_5"), ("n00000999", "class_999"), ("n00000042", "class_42")],
        [("n00000008", "class_8"), ("n00000007", "class_7"), ("n00000999", "class_999")]]
    np.testing.assert_allclose([r[2] for r in got[0]], [0.5, 0.3, 0.2])
    assert len(gt.keras.applications.imagenet_utils.decode_predictions(preds)[0]) == 5
    with pytest.raises(ValueError, match=r"expects a batch of predictions .*\(2, 10\)"):
        imagenet_utils.decode_predictions(np.zeros((2, 10)))
