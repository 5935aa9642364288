"""``keras.applications.resnet`` (ResNet50, ResNet101, ResNet152) and the ResNet V2 builders
of ``keras.applications.resnet_v2``, as Keras 3.15 builds them (same layers, names and
order, so Keras' ImageNet weight files load)."""
from __future__ import annotations

from .. import layers
from ..layers import Model
from . import imagenet_utils
from .imagenet_utils import decode_predictions

__all__ = ["ResNet50", "ResNet101", "ResNet152", "preprocess_input", "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
WEIGHTS_HASHES = {
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "resnet50v2": ("3ef43a0b657b3be2300d5770ece849e0", "fac2f116257151a9d068a22e544a4917"),
    "resnet101v2": ("6343647c601c52e1368623803854d971", "c0ed64b8031c3730f411d2eb4eea35b5"),
    "resnet152v2": ("a49b44d1979771252814e80f8ec446f9", "ed17cf2e0169df9d443503ef94b23b33"),
}


def ResNet(stack_fn, preact, use_bias, include_top=True, weights="imagenet",  # noqa: N802
           input_tensor=None, input_shape=None, pooling=None, classes=1000,
           classifier_activation="softmax", name="resnet", weights_name=None):
    """The ResNet skeleton (Keras' ``resnet.ResNet``): stem, ``stack_fn``'s blocks, head;
    ``preact`` for the V2 layout."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=224, min_size=32, data_format="channels_last",
        require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, named=True)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if weights == "imagenet" and weights_name in WEIGHTS_HASHES:
        top = include_top
        file_name = f"{weights_name}_weights_tf_dim_ordering_tf_kernels" + \
            ("" if top else "_notop") + ".h5"
        imagenet_utils.load_weights(model, weights, file_name, BASE_WEIGHTS_PATH + file_name,
                                    WEIGHTS_HASHES[weights_name][0 if top else 1])
    elif weights is not None and weights != "imagenet":
        model.load_weights(weights)
    return model


def residual_block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """A bottleneck block of ResNet V1."""
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=3, epsilon=1.001e-5,
                                             name=f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="SAME", name=f"{name}_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_3_bn")(x)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def stack_residual_blocks_v1(x, filters, blocks, stride1=2, name=None):
    """``blocks`` V1 blocks, the first with a projection shortcut and stride ``stride1``."""
    x = residual_block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = residual_block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def residual_block_v2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    """A pre-activation bottleneck block of ResNet V2."""
    preact = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_preact_bn")(x)
    preact = layers.Activation("relu", name=f"{name}_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride,
                                 name=f"{name}_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride, name=layers._unique_name(
            "max_pooling2d"))(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False,
                      name=f"{name}_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return layers.Add(name=f"{name}_out")([shortcut, x])


def stack_residual_blocks_v2(x, filters, blocks, stride1=2, name=None):
    """``blocks`` V2 blocks, the last with stride ``stride1``."""
    x = residual_block_v2(x, filters, conv_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = residual_block_v2(x, filters, name=f"{name}_block{i}")
    return residual_block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def _builder(fn_name, default_name, depths, v2):
    stack = stack_residual_blocks_v2 if v2 else stack_residual_blocks_v1

    def stack_fn(x):
        if v2:
            x = stack(x, 64, depths[0], name="conv2")
        else:
            x = stack(x, 64, depths[0], stride1=1, name="conv2")
        x = stack(x, 128, depths[1], name="conv3")
        x = stack(x, 256, depths[2], name="conv4")
        if v2:
            return stack(x, 512, depths[3], stride1=1, name="conv5")
        return stack(x, 512, depths[3], name="conv5")

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              name=default_name):
        return ResNet(stack_fn, v2, True, name=name, weights_name=default_name,
                      include_top=include_top, weights=weights, input_tensor=input_tensor,
                      input_shape=input_shape, pooling=pooling, classes=classes,
                      classifier_activation=classifier_activation)
    build.__name__ = build.__qualname__ = fn_name
    build.__doc__ = (f"{fn_name} (Keras' ``keras.applications.{fn_name}``): "
                     f"{'pre-activation ' if v2 else ''}bottleneck blocks {depths}; "
                     f"ImageNet weights expect ``{'resnet_v2' if v2 else 'resnet'}"
                     ".preprocess_input``d images.")
    return build


ResNet50 = _builder("ResNet50", "resnet50", (3, 4, 6, 3), False)
ResNet101 = _builder("ResNet101", "resnet101", (3, 4, 23, 3), False)
ResNet152 = _builder("ResNet152", "resnet152", (3, 8, 36, 3), False)
ResNet50V2 = _builder("ResNet50V2", "resnet50v2", (3, 4, 6, 3), True)
ResNet101V2 = _builder("ResNet101V2", "resnet101v2", (3, 4, 23, 3), True)
ResNet152V2 = _builder("ResNet152V2", "resnet152v2", (3, 8, 36, 3), True)


def preprocess_input(x, data_format=None):
    """RGB to BGR and ImageNet mean subtraction (``imagenet_utils.preprocess_input`` mode
    "caffe")."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
