"""``keras.applications.vgg16``: VGG16 as Keras 3.15 builds it (same layers, names and
order, so Keras' ImageNet weight files load); ``vgg19`` shares the builder."""
from __future__ import annotations

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["VGG16", "preprocess_input", "decode_predictions"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/"
WEIGHTS_PATH = _BASE + "vgg16/vgg16_weights_tf_dim_ordering_tf_kernels.h5"
WEIGHTS_PATH_NO_TOP = _BASE + "vgg16/vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5"
_HASHES = ("64373286793e3c8b2b4e3219cbf3544b", "6d6bbae143d832006294945121d1f1fc")


def _vgg(convs, include_top, weights, input_tensor, input_shape, pooling, classes,
         classifier_activation, name, files):
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=224, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    x = img_input
    for block, (filters, count) in enumerate(zip((64, 128, 256, 512, 512), convs), 1):
        for i in range(1, count + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same",
                              name=f"block{block}_conv{i}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    origin, file_hash = files[0] if include_top else files[1]
    imagenet_utils.load_weights(model, weights, origin.rpartition("/")[2], origin, file_hash)
    return model


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg16"):
    """VGG16 (Keras' ``keras.applications.VGG16``): 13 3x3 convolutions in 5 blocks, and
    with the top two 4096-unit ``Dense`` layers and the classifier."""
    return _vgg((2, 2, 3, 3, 3), include_top, weights, input_tensor, input_shape, pooling,
                classes, classifier_activation, name,
                ((WEIGHTS_PATH, _HASHES[0]), (WEIGHTS_PATH_NO_TOP, _HASHES[1])))


def preprocess_input(x, data_format=None):
    """RGB to BGR and ImageNet mean subtraction (``imagenet_utils.preprocess_input`` mode
    "caffe")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
