"""``keras.applications.vgg19``: VGG19 as Keras 3.15 builds it (same layers, names and
order, so Keras' ImageNet weight files load)."""
from __future__ import annotations

from .imagenet_utils import decode_predictions
from .vgg16 import _BASE, _vgg, preprocess_input

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]

WEIGHTS_PATH = _BASE + "vgg19/vgg19_weights_tf_dim_ordering_tf_kernels.h5"
WEIGHTS_PATH_NO_TOP = _BASE + "vgg19/vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5"
_HASHES = ("cbe5617147190e668d6c5d5026f83318", "253f8cb515780f3b799900260a226db6")


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg19"):
    """VGG19 (Keras' ``keras.applications.VGG19``): 16 3x3 convolutions in 5 blocks, and
    with the top two 4096-unit ``Dense`` layers and the classifier."""
    return _vgg((2, 2, 4, 4, 4), include_top, weights, input_tensor, input_shape, pooling,
                classes, classifier_activation, name,
                ((WEIGHTS_PATH, _HASHES[0]), (WEIGHTS_PATH_NO_TOP, _HASHES[1])))
