"""``keras.applications.xception``: Xception as Keras 3.15 builds it (same layers, names and
order, so Keras' ImageNet weight files load)."""
from __future__ import annotations

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["Xception", "preprocess_input", "decode_predictions"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"
WEIGHTS_PATH = _BASE + "xception_weights_tf_dim_ordering_tf_kernels.h5"
WEIGHTS_PATH_NO_TOP = _BASE + "xception_weights_tf_dim_ordering_tf_kernels_notop.h5"


def _sep(x, filters, name):
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=f"{name}_bn")(x)


def _strided_block(x, block, filters, first_act=True):
    """A block whose two separable convolutions end in a strided max pooling, added to a
    strided 1x1 convolution of its input (``filters``: the two convolutions' widths)."""
    residual = layers.Conv2D(filters[1], (1, 1), strides=(2, 2), padding="same",
                             use_bias=False)(x)
    residual = layers.BatchNormalization(axis=-1)(residual)
    if first_act:
        x = layers.Activation("relu", name=f"block{block}_sepconv1_act")(x)
    x = _sep(x, filters[0], f"block{block}_sepconv1")
    x = layers.Activation("relu", name=f"block{block}_sepconv2_act")(x)
    x = _sep(x, filters[1], f"block{block}_sepconv2")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same",
                            name=f"block{block}_pool")(x)
    return layers.Add()([x, residual])


def Xception(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             name="xception"):
    """Xception (Keras' ``keras.applications.Xception``): default input 299x299, at least
    71x71; ImageNet weights expect ``xception.preprocess_input``d images."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=299, min_size=71, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)
    x = _strided_block(x, 2, (128, 128), first_act=False)
    x = _strided_block(x, 3, (256, 256))
    x = _strided_block(x, 4, (728, 728))
    for i in range(8):
        residual = x
        prefix = f"block{i + 5}"
        for j in (1, 2, 3):
            x = layers.Activation("relu", name=f"{prefix}_sepconv{j}_act")(x)
            x = _sep(x, 728, f"{prefix}_sepconv{j}")
        x = layers.Add()([x, residual])
    x = _strided_block(x, 13, (728, 1024))
    x = _sep(x, 1536, "block14_sepconv1")
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = _sep(x, 2048, "block14_sepconv2")
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if include_top:
        origin, file_hash = WEIGHTS_PATH, "0a58e3b7378bc2990ea3b43d5981f1f6"
    else:
        origin, file_hash = WEIGHTS_PATH_NO_TOP, "b0042744bf5b25fce3cb969f33bebb97"
    imagenet_utils.load_weights(model, weights, origin.rpartition("/")[2], origin, file_hash)
    return model


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (``imagenet_utils.preprocess_input`` mode
    "tf")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
