"""``keras.applications.mobilenet_v2``: MobileNetV2 as Keras 3.15 builds it (same layers,
names and order, so Keras' ImageNet weight files load)."""
from __future__ import annotations

import warnings

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
_SIZES = [96, 128, 160, 192, 224]


def _square_size(shape, default=224):
    rows, cols = shape[0], shape[1]
    return rows if rows == cols and rows in _SIZES else default


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet",  # noqa: N802
                input_tensor=None, pooling=None, classes=1000,
                classifier_activation="softmax", name=None):
    """MobileNetV2 (Keras' ``keras.applications.MobileNetV2``): ``alpha`` scales the
    filters; ImageNet weights exist for alpha 0.35, 0.5, 0.75, 1.0, 1.3, 1.4 and square
    inputs of 96, 128, 160, 192 or 224 pixels (others load the 224 weights)."""
    imagenet_utils.check_weights(weights, include_top, classes)
    if input_shape is not None and input_tensor is not None:
        if not isinstance(input_tensor, imagenet_utils.KerasTensor):
            raise ValueError(f"input_tensor is not a Keras tensor; Received "
                             f"`input_tensor={input_tensor}`")
        if input_tensor.shape[2] != input_shape[1]:
            raise ValueError(f"input_tensor.shape[2] must equal input_shape[1]; Received "
                             f"`input_tensor.shape={input_tensor.shape}`, "
                             f"`input_shape={input_shape}`")
    if input_shape is None and input_tensor is not None:
        if isinstance(input_tensor, imagenet_utils.KerasTensor):
            default_size = _square_size(input_tensor.shape[1:3])
        else:
            default_size = 224
    elif input_shape is None:
        default_size = 224
    else:
        default_size = _square_size(input_shape)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    rows, cols = input_shape[0], input_shape[1]
    if weights == "imagenet":
        if alpha not in [0.35, 0.50, 0.75, 1.0, 1.3, 1.4]:
            raise ValueError("If imagenet weights are being loaded, alpha must be one of "
                             "`0.35`, `0.50`, `0.75`, `1.0`, `1.3` or `1.4` only; Received "
                             f"`alpha={alpha}`")
        if rows != cols or rows not in _SIZES:
            rows = 224
            warnings.warn("`input_shape` is undefined or non-square, or `rows` is not in "
                          "[96, 128, 160, 192, 224]. Weights for input shape (224, 224) will "
                          "be loaded as the default.", stacklevel=2)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)

    first_block_filters = _make_divisible(32 * alpha, 8)
    x = layers.Conv2D(first_block_filters, kernel_size=3, strides=(2, 2), padding="same",
                      use_bias=False, name="Conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(
            [(16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6),
             (64, 2, 6), (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6),
             (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6), (320, 1, 6)]):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride,
                                expansion=expansion, block_id=block_id)
    last_block_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_block_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    inputs = imagenet_utils.source_inputs(input_tensor, img_input)
    if name is None:
        name = f"mobilenetv2_{alpha:0.2f}_{rows}"
    model = Model(inputs, x, name=name)
    model_name = (f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}"
                  + ("" if include_top else "_no_top") + ".h5")
    imagenet_utils.load_weights(model, weights, model_name, BASE_WEIGHT_PATH + model_name)
    return model


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    in_channels = inputs.shape[-1]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same",
                          use_bias=False, activation=None, name=f"{prefix}expand")(x)
        x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                      name=f"{prefix}expand_BN")(x)
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3),
                                 name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=f"{prefix}depthwise")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                  name=f"{prefix}depthwise_BN")(x)
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                      activation=None, name=f"{prefix}project")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                  name=f"{prefix}project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (``imagenet_utils.preprocess_input`` mode
    "tf")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
