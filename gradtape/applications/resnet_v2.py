"""``keras.applications.resnet_v2``: ResNet50V2, ResNet101V2, ResNet152V2 (pre-activation
ResNets, Keras 3.15's layers and names) and their preprocessing (mode "tf")."""
from . import imagenet_utils
from .imagenet_utils import decode_predictions
from .resnet import ResNet50V2, ResNet101V2, ResNet152V2

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "preprocess_input",
           "decode_predictions"]


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (``imagenet_utils.preprocess_input`` mode
    "tf")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
