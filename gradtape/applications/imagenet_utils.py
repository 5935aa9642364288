"""``keras.applications.imagenet_utils``: the input preprocessing of the ImageNet models
(modes ``"caffe"``, ``"tf"``, ``"torch"``), ``decode_predictions`` and the argument checks
the model builders share, as Keras 3.15.

The pretrained files are Keras' own (same URLs, names and hashes), fetched with
``keras.utils.get_file`` into ``~/.keras/models`` and read by ``model.load_weights`` (the
tf.keras 2 HDF5 layout: the layers with weights in order)."""
from __future__ import annotations

import json
import os
import warnings

import numpy as np

from .. import keras_ops as ops
from .. import layers as _layers
from ..keras_datasets import get_file
from ..keras_graph import Input, KerasTensor

__all__ = ["preprocess_input", "decode_predictions"]

CLASS_INDEX = None
CLASS_INDEX_PATH = ("https://storage.googleapis.com/download.tensorflow.org/"
                    "data/imagenet_class_index.json")
CLASS_INDEX_HASH = "c2c37ea517e94d9795004a39431a14cb"


def _data_format(data_format):
    if data_format is None:
        return "channels_last"
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError("Expected data_format to be one of `channels_first` or "
                         f"`channels_last`. Received: data_format={data_format}")
    return data_format


def preprocess_input(x, data_format=None, mode="caffe"):
    """Preprocess a batch of images (values in [0, 255]) as Keras'
    ``imagenet_utils.preprocess_input``: ``"caffe"`` turns RGB into BGR and subtracts the
    ImageNet channel means, ``"tf"`` scales to [-1, 1], ``"torch"`` scales to [0, 1] and
    normalizes each channel by ImageNet's mean and std. A float NumPy array is changed in
    place (as Keras); other arrays become float32. Tensors and symbolic tensors give new
    tensors."""
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError("Expected mode to be one of `caffe`, `tf` or `torch`. "
                         f"Received: mode={mode}")
    data_format = _data_format(data_format)
    if isinstance(x, np.ndarray):
        return _preprocess_numpy_input(x, data_format, mode)
    return _preprocess_tensor_input(x, data_format, mode)


_CAFFE_MEAN = [103.939, 116.779, 123.68]
_TORCH_MEAN = [0.485, 0.456, 0.406]
_TORCH_STD = [0.229, 0.224, 0.225]


def _preprocess_numpy_input(x, data_format, mode):
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype("float32", copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        if data_format == "channels_first":
            x = x[::-1, ...] if x.ndim == 3 else x[:, ::-1, ...]
        else:
            x = x[..., ::-1]
        mean, std = _CAFFE_MEAN, None
    for c in range(3):
        if data_format == "channels_first":
            idx = (c,) if x.ndim == 3 else (slice(None), c)
        else:
            idx = (Ellipsis, c)
        x[idx] -= mean[c]
        if std is not None:
            x[idx] /= std[c]
    return x


def _preprocess_tensor_input(x, data_format, mode):
    ndim = len(x.shape)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        if data_format == "channels_first":
            if ndim == 3:
                x = ops.stack([x[i, ...] for i in (2, 1, 0)], axis=0)
            else:
                x = ops.stack([x[:, i, :] for i in (2, 1, 0)], axis=1)
        else:
            x = ops.stack([x[..., i] for i in (2, 1, 0)], axis=-1)
        mean, std = _CAFFE_MEAN, None
    mean_tensor = ops.convert_to_tensor(-np.array(mean), dtype=x.dtype)
    if data_format == "channels_first":
        shape = (3, 1, 1) if ndim == 3 else (1, 3) + (1,) * (ndim - 2)
    else:
        shape = (1,) * (ndim - 1) + (3,)
    x += ops.reshape(mean_tensor, shape)
    if std is not None:
        std_tensor = ops.convert_to_tensor(np.array(std), dtype=x.dtype)
        if data_format == "channels_first":
            std_tensor = ops.reshape(std_tensor, (-1, 1, 1))
        x /= std_tensor
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each row of ``preds`` (shape ``(samples, 1000)``) as
    lists of ``(class_name, class_description, score)``, best first, as Keras'
    ``decode_predictions`` (the class index is fetched once with ``get_file`` into
    ``~/.keras/models``)."""
    global CLASS_INDEX
    if len(preds.shape) != 2 or preds.shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D array "
                         f"of shape (samples, 1000)). Received array with shape: {preds.shape}")
    if CLASS_INDEX is None:
        fpath = get_file("imagenet_class_index.json", CLASS_INDEX_PATH, cache_subdir="models",
                         file_hash=CLASS_INDEX_HASH)
        with open(fpath) as f:
            CLASS_INDEX = json.load(f)
    results = []
    for pred in ops.convert_to_numpy(preds):
        top_indices = pred.argsort()[-top:][::-1]
        result = [tuple(CLASS_INDEX[str(i)]) + (pred[i],) for i in top_indices]
        result.sort(key=lambda r: r[2], reverse=True)
        results.append(result)
    return results


def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten,
                       weights=None):
    """The input shape of a model (Keras' ``imagenet_utils.obtain_input_shape``): the
    default when ``input_shape`` is None, otherwise ``input_shape`` checked (3 entries, 3
    channels for ImageNet weights, sides of at least ``min_size``)."""
    first = data_format == "channels_first"
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[0] if first else input_shape[-1]
        if channels not in {1, 3}:
            warnings.warn("This model usually expects 1 or 3 input channels. However, it was "
                          f"passed an input_shape with {channels} input channels.",
                          stacklevel=3)
        default_shape = ((input_shape[0], default_size, default_size) if first else
                         (default_size, default_size, input_shape[-1]))
    else:
        default_shape = (3, default_size, default_size) if first else \
            (default_size, default_size, 3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default_shape:
            raise ValueError("When setting `include_top=True` and loading `imagenet` "
                             f"weights, `input_shape` should be {default_shape}.  "
                             f"Received: input_shape={input_shape}")
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers.")
        channels, sides = (input_shape[0], input_shape[1:]) if first else \
            (input_shape[-1], input_shape[:2])
        if channels != 3 and weights == "imagenet":
            raise ValueError(f"The input must have 3 channels; Received "
                             f"`input_shape={input_shape}`")
        if any(s is not None and s < min_size for s in sides):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                             f"input_shape={input_shape}")
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (3, None, None) if first else (None, None, 3)
    if require_flatten and None in tuple(input_shape):
        raise ValueError("If `include_top` is True, you should specify a static "
                         f"`input_shape`. Received: input_shape={input_shape}")
    return input_shape


def correct_pad(inputs, kernel_size):
    """The ``ZeroPadding2D`` padding before a strided 'valid' convolution that matches
    TensorFlow's 'same' padding (Keras' ``imagenet_utils.correct_pad``; channels last)."""
    input_size = inputs.shape[1:3]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    if input_size[0] is None:
        adjust = (1, 1)
    else:
        adjust = (1 - input_size[0] % 2, 1 - input_size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def validate_activation(classifier_activation, weights):
    """With pretrained weights the classifier's activation must be None or softmax."""
    if weights is None:
        return
    act = _layers.get_activation(classifier_activation)
    if act not in {_layers.get_activation("softmax"), _layers.get_activation(None)}:
        raise ValueError("Only `None` and `softmax` activations are allowed for the "
                         "`classifier_activation` argument when using pretrained weights, "
                         "with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


# --- what the model builders share -----------------------------------------------------------

def check_weights(weights, include_top, classes):
    """Keras' first checks of a model builder: ``weights`` is None, ``"imagenet"`` or an
    existing file; ImageNet weights with the top need ``classes=1000``."""
    if not (weights in {"imagenet", None} or (isinstance(weights, (str, os.PathLike))
                                               and os.path.exists(weights))):
        raise ValueError("The `weights` argument should be either `None` (random "
                         "initialization), `imagenet` (pre-training on ImageNet), or the path "
                         f"to the weights file to be loaded.  Received: weights={weights}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError('If using `weights="imagenet"` with `include_top` as true, '
                         f"`classes` should be 1000. Received: classes={classes}")


def model_input(input_tensor, input_shape):
    """The model's input: a new ``Input(shape=input_shape)``, or ``input_tensor`` (a
    symbolic tensor; a concrete tensor is refused as gradtape's ``Input(tensor=)`` does)."""
    if input_tensor is None:
        return Input(shape=input_shape)
    if not isinstance(input_tensor, KerasTensor):
        return Input(tensor=input_tensor, shape=input_shape)
    return input_tensor


def pool(x, pooling, named=False):
    """The headless model's pooling (``pooling`` None, ``"avg"`` or ``"max"``), the layers
    named ``avg_pool``/``max_pool`` where the family's Keras code names them (``named``)."""
    if pooling == "avg":
        return _layers.GlobalAveragePooling2D(name="avg_pool" if named else None)(x)
    if pooling == "max":
        return _layers.GlobalMaxPooling2D(name="max_pool" if named else None)(x)
    return x


def source_inputs(input_tensor, img_input):
    """The inputs of the functional model: the ``Input`` tensors ``input_tensor`` derives
    from, or the new input."""
    if input_tensor is None:
        return img_input
    from ..keras import utils
    return utils.get_source_inputs(input_tensor)


def load_weights(model, weights, fname=None, origin=None, file_hash=None):
    """Load the pretrained file ``origin`` (fetched as ``fname`` into ``models``) for
    ``weights="imagenet"``, or the file ``weights`` names."""
    if weights == "imagenet":
        path = get_file(fname, origin, cache_subdir="models", file_hash=file_hash)
        model.load_weights(path)
    elif weights is not None:
        model.load_weights(weights)
