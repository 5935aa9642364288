"""``keras.applications.efficientnet_v2``: EfficientNetV2B0..B3, S, M and L as Keras 3.15
builds them (same layers, names and order, so Keras' ImageNet weight files load). The input
scaling is part of the model (``include_preprocessing``), so ``preprocess_input`` returns its
input unchanged, as Keras'."""
from __future__ import annotations

import copy
import math

from .. import initializers, layers
from ..layers import Model
from . import imagenet_utils
from .efficientnet import CONV_KERNEL_INITIALIZER, DENSE_KERNEL_INITIALIZER, _initializer
from .imagenet_utils import decode_predictions

__all__ = ["EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3",
           "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L", "preprocess_input",
           "decode_predictions"]

BASE_WEIGHTS_PATH = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                     "efficientnet_v2/")
WEIGHTS_HASHES = {
    "b0": ("21ecbf6da12460d5c40bb2f29ceb2188", "893217f2bb855e2983157299931e43ff"),
    "b1": ("069f0534ff22adf035c89e2d9547a9dc", "0e80663031ca32d657f9caa404b6ec37"),
    "b2": ("424e49f28180edbde1e94797771950a7", "1dfe2e7a5d45b6632553a8961ea609eb"),
    "b3": ("1f1fc43bd98a6e4fd8fdfd551e02c7a0", "f6abf7b5849ac99a89b50dd3fd532856"),
    "-s": ("e1d88a8495beba45748fedd0cecbe016", "af0682fb74e8c54910f2d4393339c070"),
    "-m": ("a3bf6aa3276309f4fc6a34aa114c95cd", "1b8dc055df72dde80d614482840fe342"),
    "-l": ("27e6d408b53c7ebc868fefa357689935", "b0b66b5c863aef5b46e8608fe1711615"),
}

_KEYS = ("kernel_size", "num_repeat", "input_filters", "output_filters", "expand_ratio",
         "se_ratio", "strides", "conv_type")
_B = [(3, 1, 32, 16, 1, 0, 1, 1), (3, 2, 16, 32, 4, 0, 2, 1), (3, 2, 32, 48, 4, 0, 2, 1),
      (3, 3, 48, 96, 4, 0.25, 2, 0), (3, 5, 96, 112, 6, 0.25, 1, 0),
      (3, 8, 112, 192, 6, 0.25, 2, 0)]
DEFAULT_BLOCKS_ARGS = {name: [dict(zip(_KEYS, row)) for row in rows] for name, rows in {
    "efficientnetv2-s": [(3, 2, 24, 24, 1, 0.0, 1, 1), (3, 4, 24, 48, 4, 0.0, 2, 1),
                         (3, 4, 48, 64, 4, 0, 2, 1), (3, 6, 64, 128, 4, 0.25, 2, 0),
                         (3, 9, 128, 160, 6, 0.25, 1, 0), (3, 15, 160, 256, 6, 0.25, 2, 0)],
    "efficientnetv2-m": [(3, 3, 24, 24, 1, 0, 1, 1), (3, 5, 24, 48, 4, 0, 2, 1),
                         (3, 5, 48, 80, 4, 0, 2, 1), (3, 7, 80, 160, 4, 0.25, 2, 0),
                         (3, 14, 160, 176, 6, 0.25, 1, 0), (3, 18, 176, 304, 6, 0.25, 2, 0),
                         (3, 5, 304, 512, 6, 0.25, 1, 0)],
    "efficientnetv2-l": [(3, 4, 32, 32, 1, 0, 1, 1), (3, 7, 32, 64, 4, 0, 2, 1),
                         (3, 7, 64, 96, 4, 0, 2, 1), (3, 10, 96, 192, 4, 0.25, 2, 0),
                         (3, 19, 192, 224, 6, 0.25, 1, 0), (3, 25, 224, 384, 6, 0.25, 2, 0),
                         (3, 7, 384, 640, 6, 0.25, 1, 0)],
    "efficientnetv2-b0": _B, "efficientnetv2-b1": _B, "efficientnetv2-b2": _B,
    "efficientnetv2-b3": _B}.items()}


def round_filters(filters, width_coefficient, min_depth, depth_divisor):
    """Round number of filters based on the width multiplier."""
    filters *= width_coefficient
    minimum_depth = min_depth or depth_divisor
    return int(max(minimum_depth,
                   int(filters + depth_divisor / 2) // depth_divisor * depth_divisor))


def round_repeats(repeats, depth_coefficient):
    """Round number of repeats based on the depth multiplier."""
    return int(math.ceil(depth_coefficient * repeats))


def _squeeze_excite(x, filters, input_filters, se_ratio, activation, name):
    conv_init = _initializer(CONV_KERNEL_INITIALIZER)
    filters_se = max(1, int(input_filters * se_ratio))
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
    se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                       kernel_initializer=conv_init, name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                       kernel_initializer=conv_init, name=f"{name}se_expand")(se)
    return layers.Multiply(name=f"{name}se_excite")([x, se])


def _residual(x, inputs, strides, input_filters, output_filters, survival_probability, name):
    if strides == 1 and input_filters == output_filters:
        if survival_probability:
            x = layers.Dropout(survival_probability, noise_shape=(None, 1, 1, 1),
                               name=f"{name}drop")(x)
        x = layers.Add(name=f"{name}add")([x, inputs])
    return x


def MBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3,  # noqa: N802
                strides=1, se_ratio=0.0, bn_momentum=0.9, activation="swish",
                survival_probability=0.8, name=None):
    """MBConv block: mobile inverted residual bottleneck (Keras' names)."""
    if name is None:
        name = layers._unique_name("block0")
    conv_init = _initializer(CONV_KERNEL_INITIALIZER)

    def apply(inputs):
        filters = input_filters * expand_ratio
        if expand_ratio != 1:
            x = layers.Conv2D(filters=filters, kernel_size=1, strides=1,
                              kernel_initializer=conv_init, padding="same", use_bias=False,
                              name=f"{name}expand_conv")(inputs)
            x = layers.BatchNormalization(axis=3, momentum=bn_momentum,
                                          name=f"{name}expand_bn")(x)
            x = layers.Activation(activation, name=f"{name}expand_activation")(x)
        else:
            x = inputs
        x = layers.DepthwiseConv2D(kernel_size=kernel_size, strides=strides,
                                   depthwise_initializer=conv_init, padding="same",
                                   use_bias=False, name=f"{name}dwconv2")(x)
        x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name=f"{name}bn")(x)
        x = layers.Activation(activation, name=f"{name}activation")(x)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, filters, input_filters, se_ratio, activation, name)
        x = layers.Conv2D(filters=output_filters, kernel_size=1, strides=1,
                          kernel_initializer=conv_init, padding="same", use_bias=False,
                          name=f"{name}project_conv")(x)
        x = layers.BatchNormalization(axis=3, momentum=bn_momentum,
                                      name=f"{name}project_bn")(x)
        return _residual(x, inputs, strides, input_filters, output_filters,
                         survival_probability, name)
    return apply


def FusedMBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3,  # noqa: N802
                     strides=1, se_ratio=0.0, bn_momentum=0.9, activation="swish",
                     survival_probability=0.8, name=None):
    """Fused MBConv block: the expansion and depthwise convolutions fused into one."""
    if name is None:
        name = layers._unique_name("block0")
    conv_init = _initializer(CONV_KERNEL_INITIALIZER)

    def apply(inputs):
        filters = input_filters * expand_ratio
        if expand_ratio != 1:
            x = layers.Conv2D(filters, kernel_size=kernel_size, strides=strides,
                              kernel_initializer=conv_init, padding="same", use_bias=False,
                              name=f"{name}expand_conv")(inputs)
            x = layers.BatchNormalization(axis=3, momentum=bn_momentum,
                                          name=f"{name}expand_bn")(x)
            x = layers.Activation(activation=activation, name=f"{name}expand_activation")(x)
        else:
            x = inputs
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, filters, input_filters, se_ratio, activation, name)
        x = layers.Conv2D(output_filters, kernel_size=1 if expand_ratio != 1 else kernel_size,
                          strides=1 if expand_ratio != 1 else strides,
                          kernel_initializer=conv_init, padding="same", use_bias=False,
                          name=f"{name}project_conv")(x)
        x = layers.BatchNormalization(axis=3, momentum=bn_momentum,
                                      name=f"{name}project_bn")(x)
        if expand_ratio == 1:
            x = layers.Activation(activation=activation, name=f"{name}project_activation")(x)
        return _residual(x, inputs, strides, input_filters, output_filters,
                         survival_probability, name)
    return apply


def EfficientNetV2(width_coefficient, depth_coefficient, default_size,  # noqa: N802
                   dropout_rate=0.2, drop_connect_rate=0.2, depth_divisor=8, min_depth=8,
                   bn_momentum=0.9, activation="swish", blocks_args="default",
                   name="efficientnetv2", include_top=True, weights="imagenet",
                   input_tensor=None, input_shape=None, pooling=None, classes=1000,
                   classifier_activation="softmax", include_preprocessing=True,
                   weights_name=None):
    """The EfficientNetV2 skeleton (Keras' ``efficientnet_v2.EfficientNetV2``; the default
    blocks are looked up by ``name``, as Keras does)."""
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS[name]
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    conv_init = _initializer(CONV_KERNEL_INITIALIZER)
    x = img_input
    if include_preprocessing:
        if name.split("-")[-1].startswith("b") and input_shape[2] == 3:
            x = layers.Rescaling(scale=1.0 / 255)(x)
            x = layers.Normalization(mean=[0.485, 0.456, 0.406],
                                     variance=[0.229**2, 0.224**2, 0.225**2], axis=3)(x)
        else:
            x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)

    def rounded(filters):
        return round_filters(filters=filters, width_coefficient=width_coefficient,
                             min_depth=min_depth, depth_divisor=depth_divisor)
    x = layers.Conv2D(filters=rounded(blocks_args[0]["input_filters"]), kernel_size=3,
                      strides=2, kernel_initializer=conv_init, padding="same", use_bias=False,
                      name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(args["num_repeat"] for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["num_repeat"] <= 0:
            raise ValueError(f"The number of repeats in `EfficientNetV2` must be > 0. "
                             f"Received: num_repeat={args['num_repeat']}")
        args["input_filters"] = rounded(args["input_filters"])
        args["output_filters"] = rounded(args["output_filters"])
        block = {0: MBConvBlock, 1: FusedMBConvBlock}[args.pop("conv_type")]
        for j in range(round_repeats(repeats=args.pop("num_repeat"),
                                     depth_coefficient=depth_coefficient)):
            if j > 0:
                args["strides"] = 1
                args["input_filters"] = args["output_filters"]
            x = block(activation=activation, bn_momentum=bn_momentum,
                      survival_probability=drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)(x)
            b += 1
    x = layers.Conv2D(filters=rounded(1280), kernel_size=1, strides=1,
                      kernel_initializer=conv_init, padding="same", use_bias=False,
                      name="top_conv")(x)
    x = layers.BatchNormalization(axis=3, momentum=bn_momentum, name="top_bn")(x)
    x = layers.Activation(activation=activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=_initializer(DENSE_KERNEL_INITIALIZER),
                         bias_initializer=initializers.Constant(0.0), name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, named=True)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if weights == "imagenet":
        file_name = name + (".h5" if include_top else "_notop.h5")
        imagenet_utils.load_weights(model, weights, file_name, BASE_WEIGHTS_PATH + file_name,
                                    WEIGHTS_HASHES[weights_name][0 if include_top else 1])
    elif weights is not None:
        model.load_weights(weights)
    return model


def _builder(suffix, width, depth, size):
    fn_name = f"EfficientNetV2{suffix}"
    key = suffix.lower() if suffix.startswith("B") else f"-{suffix.lower()}"

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              include_preprocessing=True, name=f"efficientnetv2-{suffix.lower()}"):
        return EfficientNetV2(width_coefficient=width, depth_coefficient=depth,
                              default_size=size, name=name, include_top=include_top,
                              weights=weights, input_tensor=input_tensor,
                              input_shape=input_shape, pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation,
                              include_preprocessing=include_preprocessing, weights_name=key)
    build.__name__ = build.__qualname__ = fn_name
    build.__doc__ = (f"{fn_name} (Keras' ``keras.applications.{fn_name}``): default input "
                     f"{size}x{size}; takes pixels in [0, 255] when "
                     "``include_preprocessing``.")
    return build


EfficientNetV2B0 = _builder("B0", 1.0, 1.0, 224)
EfficientNetV2B1 = _builder("B1", 1.0, 1.1, 240)
EfficientNetV2B2 = _builder("B2", 1.1, 1.2, 260)
EfficientNetV2B3 = _builder("B3", 1.2, 1.4, 300)
EfficientNetV2S = _builder("S", 1.0, 1.0, 384)
EfficientNetV2M = _builder("M", 1.0, 1.0, 480)
EfficientNetV2L = _builder("L", 1.0, 1.0, 480)


def preprocess_input(x, data_format=None):
    """The input unchanged, as Keras' (the EfficientNetV2 models scale their input
    themselves)."""
    return x
