"""``keras.applications``: Keras 3.15's ImageNet models, built layer for layer as Keras builds
them so that Keras' pretrained weight files (``weights="imagenet"``, fetched with
``keras.utils.get_file`` into ``~/.keras/models``) load into them, with each family's
``preprocess_input`` and ``decode_predictions``.

    base = gt.keras.applications.MobileNetV2(input_shape=(160, 160, 3), include_top=False,
                                             weights="imagenet")
    preprocess_input = gt.keras.applications.mobilenet_v2.preprocess_input
"""
from . import (convnext, densenet, efficientnet, efficientnet_v2, imagenet_utils, inception_v3,
               mobilenet_v2, mobilenet_v3, resnet, resnet50, resnet_v2, vgg16, vgg19, xception)
from .convnext import (ConvNeXtBase, ConvNeXtLarge, ConvNeXtSmall, ConvNeXtTiny,
                       ConvNeXtXLarge)
from .densenet import DenseNet121, DenseNet169, DenseNet201
from .efficientnet import (EfficientNetB0, EfficientNetB1, EfficientNetB2, EfficientNetB3,
                           EfficientNetB4, EfficientNetB5, EfficientNetB6, EfficientNetB7)
from .efficientnet_v2 import (EfficientNetV2B0, EfficientNetV2B1, EfficientNetV2B2,
                              EfficientNetV2B3, EfficientNetV2L, EfficientNetV2M,
                              EfficientNetV2S)
from .inception_v3 import InceptionV3
from .mobilenet_v2 import MobileNetV2
from .mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from .resnet import ResNet50, ResNet101, ResNet152
from .resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from .vgg16 import VGG16
from .vgg19 import VGG19
from .xception import Xception

SUBMODULES = {"imagenet_utils": imagenet_utils, "mobilenet_v2": mobilenet_v2, "resnet": resnet,
              "resnet50": resnet50, "resnet_v2": resnet_v2, "vgg16": vgg16, "vgg19": vgg19,
              "efficientnet": efficientnet, "mobilenet_v3": mobilenet_v3,
              "densenet": densenet, "inception_v3": inception_v3, "xception": xception,
              "convnext": convnext, "efficientnet_v2": efficientnet_v2}

__all__ = ["ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge",
           "DenseNet121", "DenseNet169", "DenseNet201", "EfficientNetB0", "EfficientNetB1",
           "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5",
           "EfficientNetB6", "EfficientNetB7", "EfficientNetV2B0", "EfficientNetV2B1",
           "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M",
           "EfficientNetV2L", "InceptionV3", "MobileNetV2", "MobileNetV3Large",
           "MobileNetV3Small", "ResNet50", "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2",
           "ResNet152V2", "VGG16", "VGG19", "Xception", "convnext", "densenet", "efficientnet",
           "efficientnet_v2", "imagenet_utils", "inception_v3", "mobilenet_v2", "mobilenet_v3",
           "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19", "xception"]
