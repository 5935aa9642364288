"""``keras.applications.mobilenet_v3``: MobileNetV3Small and MobileNetV3Large as Keras 3.15
builds them (same layers, names and order, so Keras' ImageNet weight files load). The input
scaling is part of the model (``include_preprocessing``), so ``preprocess_input`` returns its
input unchanged, as Keras'. (The hard sigmoid's ``+ 3`` and ``/ 6``, plain operations in
Keras' graph, are op layers in gradtape's ``model.layers``; they hold no weights.)"""
from __future__ import annotations

import warnings

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["MobileNetV3Small", "MobileNetV3Large", "preprocess_input", "decode_predictions"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/"
WEIGHTS_HASHES = {
    "large_224_0.75_float": ("765b44a33ad4005b3ac83185abf1d0eb",
                             "40af19a13ebea4e2ee0c676887f69a2e"),
    "large_224_1.0_float": ("59e551e166be033d707958cf9e29a6a7",
                            "07fb09a5933dd0c8eaafa16978110389"),
    "large_minimalistic_224_1.0_float": ("675e7b876c45c57e9e63e6d90a36599c",
                                         "ec5221f64a2f6d1ef965a614bdae7973"),
    "small_224_0.75_float": ("cb65d4e5be93758266aa0a7f2c6708b7",
                             "ebdb5cc8e0b497cd13a7c275d475c819"),
    "small_224_1.0_float": ("8768d4c2e7dee89b9d02b2d03d65d862",
                            "d3e8ec802a04aa4fc771ee12a9a9b836"),
    "small_minimalistic_224_1.0_float": ("99cd97fb2fcdad2bf028eb838de69e37",
                                         "cde8136e733e811080d9fcd8a252f7e4"),
}


def MobileNetV3(stack_fn, last_point_ch, input_shape=None, alpha=1.0,  # noqa: N802
                model_type="large", minimalistic=False, include_top=True, weights="imagenet",
                input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2,
                classifier_activation="softmax", include_preprocessing=True, name=None):
    """The MobileNetV3 skeleton (Keras' ``mobilenet_v3.MobileNetV3``)."""
    imagenet_utils.check_weights(weights, include_top, classes)
    is_symbolic = isinstance(input_tensor, imagenet_utils.KerasTensor)
    if input_shape is not None and input_tensor is not None:
        if not is_symbolic:
            raise ValueError(f"input_tensor specified: {input_tensor} is not a keras tensor")
        if input_tensor.shape[2] != input_shape[1]:
            raise ValueError(f"input_shape[1] must equal input_tensor.shape[2].  Received "
                             f"input_shape={input_shape}, "
                             f"input_tensor.shape={input_tensor.shape}")
    if input_shape is None and is_symbolic:
        rows, cols = input_tensor.shape[1], input_tensor.shape[2]
        input_shape = (cols, rows, 3)
    if input_shape is None and input_tensor is None:
        input_shape = (None, None, 3)
    rows, cols = input_shape[0], input_shape[1]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"Input size must be at least 32x32; Received "
                         f"`input_shape={input_shape}`")
    if weights == "imagenet":
        if not minimalistic and alpha not in [0.75, 1.0] or minimalistic and alpha != 1.0:
            raise ValueError("If imagenet weights are being loaded, alpha can be one of "
                             "`0.75`, `1.0` for non minimalistic or `1.0` for minimalistic "
                             "only.")
        if rows != cols or rows != 224:
            warnings.warn("`input_shape` is undefined or non-square, or `rows` is not 224. "
                          "Weights for input shape (224, 224) will be loaded as the default.",
                          stacklevel=3)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    if minimalistic:
        kernel, activation, se_ratio = 3, relu, None
    else:
        kernel, activation, se_ratio = 5, hard_swish, 0.25
    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="conv")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="conv_bn")(x)
    x = activation(x)
    x = stack_fn(x, kernel, activation, se_ratio)
    last_conv_ch = _depth(x.shape[-1] * 6)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False,
                      name="conv_1")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name="conv_1_bn")(x)
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True,
                          name="conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="logits")(x)
        x = layers.Flatten()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, named=True)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if weights == "imagenet":
        model_name = "{}{}_224_{}_float".format(model_type,
                                               "_minimalistic" if minimalistic else "",
                                               str(alpha))
        if include_top:
            file_name = f"weights_mobilenet_v3_{model_name}.h5"
            file_hash = WEIGHTS_HASHES[model_name][0]
        else:
            file_name = f"weights_mobilenet_v3_{model_name}_no_top_v2.h5"
            file_hash = WEIGHTS_HASHES[model_name][1]
        imagenet_utils.load_weights(model, weights, file_name, BASE_WEIGHT_PATH + file_name,
                                    file_hash)
    elif weights is not None:
        model.load_weights(weights)
    return model


def MobileNetV3Small(input_shape=None, alpha=1.0, minimalistic=False,  # noqa: N802
                     include_top=True, weights="imagenet", input_tensor=None, classes=1000,
                     pooling=None, dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True, name="MobileNetV3Small"):
    """MobileNetV3Small (Keras' ``keras.applications.MobileNetV3Small``); takes pixels in
    [0, 255] when ``include_preprocessing``; ``minimalistic`` drops squeeze-and-excitation,
    hard-swish and 5x5 convolutions."""
    def stack_fn(x, kernel, activation, se_ratio):
        def depth(d):
            return _depth(d * alpha)
        x = _inverted_res_block(x, 1, depth(16), 3, 2, se_ratio, relu, 0)
        x = _inverted_res_block(x, 72.0 / 16, depth(24), 3, 2, None, relu, 1)
        x = _inverted_res_block(x, 88.0 / 24, depth(24), 3, 1, None, relu, 2)
        for block_id, (expansion, filters, stride) in enumerate(
                [(4, 40, 2), (6, 40, 1), (6, 40, 1), (3, 48, 1), (3, 48, 1), (6, 96, 2),
                 (6, 96, 1), (6, 96, 1)], 3):
            x = _inverted_res_block(x, expansion, depth(filters), kernel, stride, se_ratio,
                                    activation, block_id)
        return x
    return MobileNetV3(stack_fn, 1024, input_shape, alpha, "small", minimalistic, include_top,
                       weights, input_tensor, classes, pooling, dropout_rate,
                       classifier_activation, include_preprocessing, name=name)


def MobileNetV3Large(input_shape=None, alpha=1.0, minimalistic=False,  # noqa: N802
                     include_top=True, weights="imagenet", input_tensor=None, classes=1000,
                     pooling=None, dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True, name="MobileNetV3Large"):
    """MobileNetV3Large (Keras' ``keras.applications.MobileNetV3Large``); takes pixels in
    [0, 255] when ``include_preprocessing``; ``minimalistic`` drops squeeze-and-excitation,
    hard-swish and 5x5 convolutions."""
    def stack_fn(x, kernel, activation, se_ratio):
        def depth(d):
            return _depth(d * alpha)
        rows = [(1, 16, 3, 1, None, relu), (4, 24, 3, 2, None, relu),
                (3, 24, 3, 1, None, relu), (3, 40, kernel, 2, se_ratio, relu),
                (3, 40, kernel, 1, se_ratio, relu), (3, 40, kernel, 1, se_ratio, relu),
                (6, 80, 3, 2, None, activation), (2.5, 80, 3, 1, None, activation),
                (2.3, 80, 3, 1, None, activation), (2.3, 80, 3, 1, None, activation),
                (6, 112, 3, 1, se_ratio, activation), (6, 112, 3, 1, se_ratio, activation),
                (6, 160, kernel, 2, se_ratio, activation),
                (6, 160, kernel, 1, se_ratio, activation),
                (6, 160, kernel, 1, se_ratio, activation)]
        for block_id, (expansion, filters, k, stride, se, act) in enumerate(rows):
            x = _inverted_res_block(x, expansion, depth(filters), k, stride, se, act, block_id)
        return x
    return MobileNetV3(stack_fn, 1280, input_shape, alpha, "large", minimalistic, include_top,
                       weights, input_tensor, classes, pooling, dropout_rate,
                       classifier_activation, include_preprocessing, name=name)


def relu(x):
    return layers.ReLU()(x)


def hard_sigmoid(x):
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def hard_swish(x):
    return layers.Activation("hard_swish")(x)


def _depth(v, divisor=8, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _se_block(inputs, filters, se_ratio, prefix):
    x = layers.GlobalAveragePooling2D(keepdims=True,
                                      name=f"{prefix}squeeze_excite_avg_pool")(inputs)
    x = layers.Conv2D(_depth(filters * se_ratio), kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv")(x)
    x = layers.ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, x])


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation,
                        block_id):
    shortcut = x
    prefix = "expanded_conv_"
    infilters = x.shape[-1]
    if block_id:
        prefix = f"expanded_conv_{block_id}_"
        x = layers.Conv2D(_depth(infilters * expansion), kernel_size=1, padding="same",
                          use_bias=False, name=f"{prefix}expand")(x)
        x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                      name=f"{prefix}expand_bn")(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"{prefix}depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding="same" if stride == 1 else "valid", use_bias=False,
                               name=f"{prefix}depthwise")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                  name=f"{prefix}depthwise_bn")(x)
    x = activation(x)
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion), se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False,
                      name=f"{prefix}project")(x)
    x = layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999,
                                  name=f"{prefix}project_bn")(x)
    if stride == 1 and infilters == filters:
        x = layers.Add(name=f"{prefix}add")([shortcut, x])
    return x


def preprocess_input(x, data_format=None):
    """The input unchanged, as Keras' (the MobileNetV3 models scale their input
    themselves)."""
    return x
