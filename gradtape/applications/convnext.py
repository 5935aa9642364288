"""``keras.applications.convnext``: ConvNeXtTiny, Small, Base, Large and XLarge as Keras 3.15
builds them (same layers, names and order, so Keras' ImageNet weight files load). The input
normalization is part of the model (``include_preprocessing``), so ``preprocess_input``
returns its input unchanged, as Keras'. (The residual ``inputs + x``, a plain operation in
Keras' graph, is an op layer in gradtape's ``model.layers``; it holds no weights.)"""
from __future__ import annotations

import numpy as np

from .. import initializers, layers
from .. import math as _math
from .. import random as _random
from ..layers import Layer, Model, Sequential
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtXLarge",
           "LayerScale", "StochasticDepth", "preprocess_input", "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/"
WEIGHTS_HASHES = {
    "convnext_tiny": ("8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff",
                      "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1"),
    "convnext_small": ("ce1277d8f1ee5a0ef0e171469089c18f5233860ceaf9b168049cb9263fd7483c",
                       "6fc8009faa2f00c1c1dfce59feea9b0745eb260a7dd11bee65c8e20843da6eab"),
    "convnext_base": ("52cbb006d3dadd03f6e095a8ca1aca47aecdd75acb4bc74bce1f5c695d0086e6",
                      "40a20c5548a5e9202f69735ecc06c990e6b7c9d2de39f0361e27baeb24cb7c45"),
    "convnext_large": ("070c5ed9ed289581e477741d3b34beffa920db8cf590899d6d2c67fba2a198a6",
                       "96f02b6f0753d4f543261bc9d09bed650f24dd6bc02ddde3066135b63d23a1cd"),
    "convnext_xlarge": ("c1f5ccab661354fc3a79a10fa99af82f0fbf10ec65cb894a3ae0815f17a889ee",
                        "de3f8a54174130e0cecdc71583354753d557fcf1f4487331558e2a16ba0cfe05"),
}
_DEEP = [3, 3, 27, 3]
MODEL_CONFIGS = {
    "tiny": {"depths": [3, 3, 9, 3], "projection_dims": [96, 192, 384, 768],
             "default_size": 224},
    "small": {"depths": _DEEP, "projection_dims": [96, 192, 384, 768], "default_size": 224},
    "base": {"depths": _DEEP, "projection_dims": [128, 256, 512, 1024], "default_size": 224},
    "large": {"depths": _DEEP, "projection_dims": [192, 384, 768, 1536], "default_size": 224},
    "xlarge": {"depths": _DEEP, "projection_dims": [256, 512, 1024, 2048],
               "default_size": 224},
}


class StochasticDepth(Layer):
    """Keras' ``convnext.StochasticDepth``: when training, drop the residual path of each
    example with probability ``drop_path_rate`` (the kept ones scaled by ``1 / keep``)."""

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def call(self, x, training=None):
        if training:
            keep_prob = 1 - self.drop_path_rate
            shape = (x.shape[0],) + (1,) * (len(x.shape) - 1)
            random_tensor = _math.floor(keep_prob + _random.uniform(shape, 0, 1,
                                                                    dtype=x.dtype))
            return (x / keep_prob) * random_tensor
        return x

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


class LayerScale(Layer):
    """Keras' ``convnext.LayerScale``: ``x * gamma``, ``gamma`` a learned vector of
    ``projection_dim`` starting at ``init_values``."""

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(self.projection_dim,),
                                     initializer=initializers.Constant(self.init_values),
                                     trainable=True, name="variable")

    def call(self, x):
        return x * self.gamma

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values,
                "projection_dim": self.projection_dim}


def ConvNeXtBlock(projection_dim, drop_path_rate=0.0,  # noqa: N802
                  layer_scale_init_value=1e-6, name=None):
    """A ConvNeXt block: 7x7 depthwise convolution, LayerNormalization, two pointwise
    ``Dense`` layers around GELU, layer scale, (stochastic depth), residual."""
    if name is None:
        name = layers._unique_name("prestem")

    def apply(inputs):
        x = layers.Conv2D(filters=projection_dim, kernel_size=7, padding="same",
                          groups=projection_dim, name=f"{name}_depthwise_conv")(inputs)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_layernorm")(x)
        x = layers.Dense(4 * projection_dim, name=f"{name}_pointwise_conv_1")(x)
        x = layers.Activation("gelu", name=f"{name}_gelu")(x)
        x = layers.Dense(projection_dim, name=f"{name}_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim,
                           name=f"{name}_layer_scale")(x)
        if drop_path_rate:
            layer = StochasticDepth(drop_path_rate, name=f"{name}_stochastic_depth")
        else:
            layer = layers.Activation("linear", name=f"{name}_identity")
        return inputs + layer(x)
    return apply


def PreStem(name=None):  # noqa: N802
    """Normalize pixels in [0, 255] by ImageNet-1k's mean and std."""
    if name is None:
        name = layers._unique_name("prestem")

    def apply(x):
        return layers.Normalization(
            mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
            variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2],
            name=f"{name}_prestem_normalization")(x)
    return apply


def Head(num_classes=1000, classifier_activation=None, name=None):  # noqa: N802
    """Global average pooling, LayerNormalization, the ``Dense`` classifier."""
    if name is None:
        name = layers._unique_name("head")

    def apply(x):
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_head_layernorm")(x)
        return layers.Dense(num_classes, activation=classifier_activation,
                            name=f"{name}_head_dense")(x)
    return apply


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0,  # noqa: N802
             layer_scale_init_value=1e-6, default_size=224, name="convnext",
             include_preprocessing=True, include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             weights_name=None):
    """The ConvNeXt skeleton (Keras' ``convnext.ConvNeXt``)."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    if input_tensor is not None:
        inputs = imagenet_utils.source_inputs(input_tensor, img_input)[0]
        x = input_tensor
    else:
        inputs = x = img_input
    if include_preprocessing and input_shape[2] == 3:
        x = PreStem(name=name)(x)
    stem = Sequential([
        layers.Conv2D(projection_dims[0], kernel_size=4, strides=4, name=f"{name}_stem_conv"),
        layers.LayerNormalization(epsilon=1e-6, name=f"{name}_stem_layernorm")],
        name=f"{name}_stem")
    downsample_layers = [stem]
    for i in range(3):
        downsample_layers.append(Sequential([
            layers.LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
            layers.Conv2D(projection_dims[i + 1], kernel_size=2, strides=2,
                          name=f"{name}_downsampling_conv_{i}")],
            name=f"{name}_downsampling_block_{i}"))
    depth_drop_rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i in range(4):
        x = downsample_layers[i](x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(projection_dim=projection_dims[i],
                              drop_path_rate=depth_drop_rates[cur + j],
                              layer_scale_init_value=layer_scale_init_value,
                              name=name + f"_stage_{i}_block_{j}")(x)
        cur += depths[i]
    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Head(num_classes=classes, classifier_activation=classifier_activation,
                 name=name)(x)
    else:
        if pooling == "avg":
            x = layers.GlobalAveragePooling2D()(x)
        elif pooling == "max":
            x = layers.GlobalMaxPooling2D()(x)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
    model = Model(inputs=inputs, outputs=x, name=name)
    if weights == "imagenet":
        expected = MODEL_CONFIGS[weights_name.split("convnext_")[-1]]
        if depths != expected["depths"] or projection_dims != expected["projection_dims"]:
            raise ValueError(
                f"Architecture configuration does not match {weights_name} variant. When "
                "using pre-trained weights, the model architecture must match the "
                f"pre-trained configuration exactly. Expected depths: {expected['depths']}, "
                f"got: {depths}. Expected projection_dims: {expected['projection_dims']}, "
                f"got: {projection_dims}.")
        if weights_name not in name:
            raise ValueError(
                f'Model name "{name}" does not match weights variant "{weights_name}". When '
                "using imagenet weights, model name must contain the weights variant (e.g., "
                f'"convnext_{weights_name.split("convnext_")[-1]}").')
        file_name = name + (".h5" if include_top else "_notop.h5")
        imagenet_utils.load_weights(model, weights, file_name, BASE_WEIGHTS_PATH + file_name,
                                    WEIGHTS_HASHES[weights_name][0 if include_top else 1])
    elif weights is not None:
        model.load_weights(weights)
    return model


def _builder(fn_name, size):
    config = MODEL_CONFIGS[size]

    def build(include_top=True, include_preprocessing=True, weights="imagenet",
              input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name=f"convnext_{size}"):
        return ConvNeXt(weights_name=f"convnext_{size}", depths=config["depths"],
                        projection_dims=config["projection_dims"], drop_path_rate=0.0,
                        layer_scale_init_value=1e-6, default_size=config["default_size"],
                        name=name, include_top=include_top,
                        include_preprocessing=include_preprocessing, weights=weights,
                        input_tensor=input_tensor, input_shape=input_shape, pooling=pooling,
                        classes=classes, classifier_activation=classifier_activation)
    build.__name__ = build.__qualname__ = fn_name
    build.__doc__ = (f"{fn_name} (Keras' ``keras.applications.{fn_name}``): stages of "
                     f"{config['depths']} blocks, widths {config['projection_dims']}; takes "
                     "pixels in [0, 255] when ``include_preprocessing``.")
    return build


ConvNeXtTiny = _builder("ConvNeXtTiny", "tiny")
ConvNeXtSmall = _builder("ConvNeXtSmall", "small")
ConvNeXtBase = _builder("ConvNeXtBase", "base")
ConvNeXtLarge = _builder("ConvNeXtLarge", "large")
ConvNeXtXLarge = _builder("ConvNeXtXLarge", "xlarge")


def preprocess_input(x, data_format=None):
    """The input unchanged, as Keras' (the ConvNeXt models normalize their input
    themselves)."""
    return x
