"""``keras.applications.densenet``: DenseNet121, DenseNet169, DenseNet201 as Keras 3.15 builds
them (same layers, names and order, so Keras' ImageNet weight files load)."""
from __future__ import annotations

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "preprocess_input",
           "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
# blocks -> (depth, top hash, no-top hash)
_FILES = {(6, 12, 24, 16): (121, "9d60b8095a5708f2dcce2bca79d332c7",
                            "30ee3e1110167f948a6b9946edeeb738"),
          (6, 12, 32, 32): (169, "d699b8f76981ab1b30698df4c175e90b",
                            "b8c4d4c20dd625c148057b9ff1c1176b"),
          (6, 12, 48, 32): (201, "1ceb130c1ea1b78c3bf6114dbdfd8807",
                            "c13680b51ded0fb44dff2d8f86ac8bb1")}


def dense_block(x, blocks, name):
    """``blocks`` conv blocks, each concatenating 32 new channels."""
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x, reduction, name):
    """BN, ReLU, 1x1 convolution to ``reduction`` of the channels, 2x2 average pooling."""
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_bn")(x)
    x = layers.Activation("relu", name=f"{name}_relu")(x)
    x = layers.Conv2D(int(x.shape[3] * reduction), 1, use_bias=False, name=f"{name}_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def conv_block(x, growth_rate, name):
    """BN-ReLU-1x1 conv, BN-ReLU-3x3 conv, concatenated to the input."""
    x1 = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_0_bn")(x)
    x1 = layers.Activation("relu", name=f"{name}_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=f"{name}_1_conv")(x1)
    x1 = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x1)
    x1 = layers.Activation("relu", name=f"{name}_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False,
                       name=f"{name}_2_conv")(x1)
    return layers.Concatenate(axis=3, name=f"{name}_concat")([x, x1])


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             name="densenet"):
    """The DenseNet skeleton (Keras' ``densenet.DenseNet``): ``blocks`` conv blocks in each
    of the four dense blocks."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=224, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i in range(3):
        x = dense_block(x, blocks[i], name=f"conv{i + 2}")
        x = transition_block(x, 0.5, name=f"pool{i + 2}")
    x = dense_block(x, blocks[3], name="conv5")
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, named=True)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if weights == "imagenet":
        if tuple(blocks) not in _FILES:
            raise ValueError("weights_path undefined")
        depth, top_hash, notop_hash = _FILES[tuple(blocks)]
        file_name = f"densenet{depth}_weights_tf_dim_ordering_tf_kernels" + \
            ("" if include_top else "_notop") + ".h5"
        imagenet_utils.load_weights(model, weights, file_name, BASE_WEIGHTS_PATH + file_name,
                                    top_hash if include_top else notop_hash)
    elif weights is not None:
        model.load_weights(weights)
    return model


def _builder(depth, blocks):
    fn_name = f"DenseNet{depth}"

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              name=f"densenet{depth}"):
        return DenseNet(list(blocks), include_top, weights, input_tensor, input_shape, pooling,
                        classes, classifier_activation, name=name)
    build.__name__ = build.__qualname__ = fn_name
    build.__doc__ = (f"{fn_name} (Keras' ``keras.applications.{fn_name}``): dense blocks of "
                     f"{blocks} conv blocks; ImageNet weights expect "
                     "``densenet.preprocess_input``d images.")
    return build


DenseNet121 = _builder(121, (6, 12, 24, 16))
DenseNet169 = _builder(169, (6, 12, 32, 32))
DenseNet201 = _builder(201, (6, 12, 48, 32))


def preprocess_input(x, data_format=None):
    """Scale to [0, 1] and normalize each channel by ImageNet's mean and std
    (``imagenet_utils.preprocess_input`` mode "torch")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")
