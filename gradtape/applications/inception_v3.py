"""``keras.applications.inception_v3``: InceptionV3 as Keras 3.15 builds it (same layers,
names and order, so Keras' ImageNet weight files load)."""
from __future__ import annotations

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["InceptionV3", "preprocess_input", "decode_predictions"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"
WEIGHTS_PATH = _BASE + "inception_v3_weights_tf_dim_ordering_tf_kernels.h5"
WEIGHTS_PATH_NO_TOP = _BASE + "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5"


def _max_pool(x):
    return layers.MaxPooling2D((3, 3), strides=(2, 2),
                               name=layers._unique_name("max_pooling2d"))(x)


def _avg_pool(x):
    return layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)


def _concat(tensors, name=None):
    return layers.Concatenate(axis=3, name=name)(tensors)


def InceptionV3(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                input_shape=None, pooling=None, classes=1000,
                classifier_activation="softmax", name="inception_v3"):
    """InceptionV3 (Keras' ``keras.applications.InceptionV3``): default input 299x299, at
    least 75x75; ImageNet weights expect ``inception_v3.preprocess_input``d images."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=299, min_size=75, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = _max_pool(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = _max_pool(x)
    for i, pool_filters in enumerate((32, 64, 64)):          # mixed 0, 1, 2: 35 x 35 x 256
        branch1x1 = conv2d_bn(x, 64, 1, 1)
        branch5x5 = conv2d_bn(x, 48, 1, 1)
        branch5x5 = conv2d_bn(branch5x5, 64, 5, 5)
        branch3x3dbl = conv2d_bn(x, 64, 1, 1)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
        branch_pool = conv2d_bn(_avg_pool(x), pool_filters, 1, 1)
        x = _concat([branch1x1, branch5x5, branch3x3dbl, branch_pool], name=f"mixed{i}")
    branch3x3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")     # mixed 3
    branch3x3dbl = conv2d_bn(x, 64, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3, strides=(2, 2), padding="valid")
    x = _concat([branch3x3, branch3x3dbl, _max_pool(x)], name="mixed3")
    for i, width in enumerate((128, 160, 160, 192)):          # mixed 4..7: 17 x 17 x 768
        branch1x1 = conv2d_bn(x, 192, 1, 1)
        branch7x7 = conv2d_bn(x, width, 1, 1)
        branch7x7 = conv2d_bn(branch7x7, width, 1, 7)
        branch7x7 = conv2d_bn(branch7x7, 192, 7, 1)
        branch7x7dbl = conv2d_bn(x, width, 1, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, width, 7, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, width, 1, 7)
        branch7x7dbl = conv2d_bn(branch7x7dbl, width, 7, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, 192, 1, 7)
        branch_pool = conv2d_bn(_avg_pool(x), 192, 1, 1)
        x = _concat([branch1x1, branch7x7, branch7x7dbl, branch_pool], name=f"mixed{4 + i}")
    branch3x3 = conv2d_bn(x, 192, 1, 1)                                       # mixed 8
    branch3x3 = conv2d_bn(branch3x3, 320, 3, 3, strides=(2, 2), padding="valid")
    branch7x7x3 = conv2d_bn(x, 192, 1, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 1, 7)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 7, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 3, 3, strides=(2, 2), padding="valid")
    x = _concat([branch3x3, branch7x7x3, _max_pool(x)], name="mixed8")
    for i in range(2):                                        # mixed 9, 10: 8 x 8 x 2048
        branch1x1 = conv2d_bn(x, 320, 1, 1)
        branch3x3 = conv2d_bn(x, 384, 1, 1)
        branch3x3_1 = conv2d_bn(branch3x3, 384, 1, 3)
        branch3x3_2 = conv2d_bn(branch3x3, 384, 3, 1)
        branch3x3 = _concat([branch3x3_1, branch3x3_2], name=f"mixed9_{i}")
        branch3x3dbl = conv2d_bn(x, 448, 1, 1)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 384, 3, 3)
        branch3x3dbl_1 = conv2d_bn(branch3x3dbl, 384, 1, 3)
        branch3x3dbl_2 = conv2d_bn(branch3x3dbl, 384, 3, 1)
        branch3x3dbl = _concat([branch3x3dbl_1, branch3x3dbl_2])
        branch_pool = conv2d_bn(_avg_pool(x), 192, 1, 1)
        x = _concat([branch1x1, branch3x3, branch3x3dbl, branch_pool], name=f"mixed{9 + i}")
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if include_top:
        origin, file_hash = WEIGHTS_PATH, "9a0d58056eeedaa3f26cb7ebd46da564"
    else:
        origin, file_hash = WEIGHTS_PATH_NO_TOP, "bcbd6486424b2319ff4ef7d526e38f63"
    imagenet_utils.load_weights(model, weights, origin.rpartition("/")[2], origin, file_hash)
    return model


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """Conv2D (no bias), BatchNormalization (no scale), ReLU; ``name`` gives
    ``name_conv``, ``name_bn`` and ``name``."""
    bn_name = None if name is None else f"{name}_bn"
    conv_name = None if name is None else f"{name}_conv"
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding,
                      use_bias=False, name=conv_name)(x)
    x = layers.BatchNormalization(axis=3, scale=False, name=bn_name)(x)
    return layers.Activation("relu", name=name)(x)


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (``imagenet_utils.preprocess_input`` mode
    "tf")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
