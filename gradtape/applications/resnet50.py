"""``keras.applications.resnet50``: ResNet50 with its preprocessing (mode "caffe")."""
from .resnet import ResNet50, decode_predictions, preprocess_input

__all__ = ["ResNet50", "preprocess_input", "decode_predictions"]
