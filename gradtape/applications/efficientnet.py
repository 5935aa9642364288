"""``keras.applications.efficientnet``: EfficientNetB0..B7 as Keras 3.15 builds them (same
layers, names and order, so Keras' ImageNet weight files load). The input scaling is part of
the model (``Rescaling`` and ``Normalization`` layers), so ``preprocess_input`` returns its
input unchanged, as Keras'."""
from __future__ import annotations

import copy
import math

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
           "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7",
           "preprocess_input", "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/keras-applications/"
WEIGHTS_HASHES = {
    "b0": ("902e53a9f72be733fc0bcb005b3ebbac", "50bc09e76180e00e4465e1a485ddc09d"),
    "b1": ("1d254153d4ab51201f1646940f018540", "74c4e6b3e1f6a1eea24c589628592432"),
    "b2": ("b15cce36ff4dcbd00b6dd88e7857a6ad", "111f8e2ac8aa800a7a99e3239f7bfb39"),
    "b3": ("ffd1fdc53d0ce67064dc6a9c7960ede0", "af6d107764bb5b1abb91932881670226"),
    "b4": ("18c95ad55216b8f92d7e70b3a046e2fc", "ebc24e6d6c33eaebbd558eafbeedf1ba"),
    "b5": ("ace28f2a6363774853a83a0b21b9421a", "38879255a25d3c92d5e44e04ae6cec6f"),
    "b6": ("165f6e37dce68623721b423839de8be5", "9ecce42647a20130c1f39a5d4cb75743"),
    "b7": ("8c03f828fec3ef71311cd463b6759d99", "cbcfe4450ddf6f3ad90b1b398090fe4a"),
}

# (kernel_size, repeats, filters_in, filters_out, expand_ratio, strides); id_skip=True and
# se_ratio=0.25 throughout
DEFAULT_BLOCKS_ARGS = [
    dict(kernel_size=k, repeats=r, filters_in=i, filters_out=o, expand_ratio=e, id_skip=True,
         strides=s, se_ratio=0.25)
    for k, r, i, o, e, s in [(3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2),
                             (3, 3, 40, 80, 6, 2), (5, 3, 80, 112, 6, 1),
                             (5, 4, 112, 192, 6, 2), (3, 1, 192, 320, 6, 1)]]

CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out",
                                      "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out",
                                       "distribution": "uniform"}}
IMAGENET_STDDEV_RGB = [0.229, 0.224, 0.225]


def _initializer(config):
    from ..initializers import VarianceScaling
    return VarianceScaling(**config["config"])


def EfficientNet(width_coefficient, depth_coefficient, default_size,  # noqa: N802
                 dropout_rate=0.2, drop_connect_rate=0.2, depth_divisor=8, activation="swish",
                 blocks_args="default", name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                 classes=1000, classifier_activation="softmax", weights_name=None):
    """The EfficientNet skeleton (Keras' ``efficientnet.EfficientNet``)."""
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    conv_init = _initializer(CONV_KERNEL_INITIALIZER)

    def round_filters(filters, divisor=depth_divisor):
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:
            new_filters += divisor
        return int(new_filters)

    def round_repeats(repeats):
        return int(math.ceil(depth_coefficient * repeats))

    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=3)(x)
    if weights == "imagenet":
        x = layers.Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=conv_init, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["repeats"] <= 0:
            raise ValueError(f"The number of repeats in `EfficientNet` must be > 0. "
                             f"Received: repeats={args['repeats']}")
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1
    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=conv_init, name="top_conv")(x)
    x = layers.BatchNormalization(axis=3, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=_initializer(DENSE_KERNEL_INITIALIZER),
                         name="predictions")(x)
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


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32, filters_out=16,
          kernel_size=3, strides=1, expand_ratio=1, se_ratio=0.0, id_skip=True):
    """An inverted residual block with squeeze-and-excitation (Keras' names)."""
    conv_init = _initializer(CONV_KERNEL_INITIALIZER)
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False,
                          kernel_initializer=conv_init, name=f"{name}expand_conv")(inputs)
        x = layers.BatchNormalization(axis=3, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    else:
        x = inputs
    if strides == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"{name}dwconv_pad")(x)
        conv_pad = "valid"
    else:
        conv_pad = "same"
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding=conv_pad, use_bias=False,
                               depthwise_initializer=conv_init, name=f"{name}dwconv")(x)
    x = layers.BatchNormalization(axis=3, name=f"{name}bn")(x)
    x = layers.Activation(activation, name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
        se = layers.Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
        se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                           kernel_initializer=conv_init, name=f"{name}se_reduce")(se)
        se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                           kernel_initializer=conv_init, name=f"{name}se_expand")(se)
        x = layers.Multiply(name=f"{name}se_excite")([x, se])
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False,
                      kernel_initializer=conv_init, name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=3, name=f"{name}project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.Add(name=f"{name}add")([x, inputs])
    return x


def _builder(index, width, depth, size, dropout):
    fn_name = f"EfficientNetB{index}"

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              name=f"efficientnetb{index}"):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top,
                            weights=weights, input_tensor=input_tensor,
                            input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation,
                            weights_name=f"b{index}")
    build.__name__ = build.__qualname__ = fn_name
    build.__doc__ = (f"{fn_name} (Keras' ``keras.applications.{fn_name}``): width x{width}, "
                     f"depth x{depth}, default input {size}x{size}; takes pixels in [0, 255] "
                     "(the scaling is in the model).")
    return build


EfficientNetB0 = _builder(0, 1.0, 1.0, 224, 0.2)
EfficientNetB1 = _builder(1, 1.0, 1.1, 240, 0.2)
EfficientNetB2 = _builder(2, 1.1, 1.2, 260, 0.3)
EfficientNetB3 = _builder(3, 1.2, 1.4, 300, 0.3)
EfficientNetB4 = _builder(4, 1.4, 1.8, 380, 0.4)
EfficientNetB5 = _builder(5, 1.6, 2.2, 456, 0.4)
EfficientNetB6 = _builder(6, 1.8, 2.6, 528, 0.5)
EfficientNetB7 = _builder(7, 2.0, 3.1, 600, 0.5)


def preprocess_input(x, data_format=None):
    """The input unchanged, as Keras' (the EfficientNet models scale their input
    themselves)."""
    return x
