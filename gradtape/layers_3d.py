"""Keras' 3-D (volumetric) layers: convolution, transposed convolution, pooling, global
pooling, upsampling, zero padding and cropping over ``(batch, depth, height, width,
channels)`` inputs (``data_format="channels_first"``: ``(batch, channels, depth, height,
width)``).

    model = gt.keras.Sequential([
        gt.keras.layers.Conv3D(8, 3, padding="same", activation="relu"),
        gt.keras.layers.MaxPooling3D(),
        gt.keras.layers.GlobalAveragePooling3D(),
    ])

Weights have Keras' names, shapes and order: ``Conv3D`` ``kernel`` ``(kd, kh, kw, in,
filters)`` then ``bias``; ``Conv3DTranspose`` ``kernel`` ``(kd, kh, kw, filters, in)``. The
layers call ``gt.nn.conv3d``, ``conv3d_transpose``, ``max_pool3d`` and ``avg_pool3d``, which
run on every device.
"""
from __future__ import annotations

import numpy as np

from .layers import (InputSpec, Layer, _GlobalPool2D, _conv_config, _data_format,
                     _group_channels, _groups, _kernel_options, _linear, _padding,
                     _positive_int)
from .layers_extra import deconv_output_size
from .ops import shape as _sh
from .tensor import Tensor

__all__ = ["Conv3D", "Conv3DTranspose", "MaxPooling3D", "MaxPool3D", "AveragePooling3D",
           "AvgPool3D", "GlobalAveragePooling3D", "GlobalAvgPool3D", "GlobalMaxPooling3D",
           "GlobalMaxPool3D", "UpSampling3D", "ZeroPadding3D", "Cropping3D"]


def _triple(value, what, who):
    """``(d, h, w)`` from an int or three ints, each positive."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        out = (int(value),) * 3
    else:
        try:
            out = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise TypeError(f"{who}: {what} must be an int or a tuple of 3 ints, got "
                            f"{value!r}") from None
        if len(out) != 3:
            raise ValueError(f"{who}: {what} must be an int or a tuple of 3 ints, got {value!r}")
    if min(out) <= 0:
        raise ValueError(f"{who}: {what} must be positive, got {value!r}")
    return out


def _three_sides(value, who, what):
    """((before, after),) * 3 from an int, three ints, or three pairs (all >= 0)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        pairs = ((int(value),) * 2,) * 3
    else:
        try:
            value = tuple(value)
            if len(value) != 3:
                raise ValueError
            pairs = tuple((int(v),) * 2 if isinstance(v, (int, np.integer))
                          else tuple(int(u) for u in v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"{who}: {what} must be an int, 3 ints or 3 pairs of ints, got "
                             f"{value!r}") from None
    if any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ValueError(f"{who}: {what} must be non-negative pairs, got {value!r}")
    return pairs


def _nn_format(layer):
    return "NCDHW" if layer.data_format == "channels_first" else "NDHWC"


def _spatial(layer, shape):
    """The (depth, height, width) sizes of an input shape in the layer's data format."""
    return tuple(shape[2:5]) if layer.data_format == "channels_first" else tuple(shape[1:4])


def _add_bias_activation(layer, y):
    if layer.bias is not None:
        b = layer.bias
        if layer.data_format == "channels_first":
            b = _sh.reshape(b, (layer.filters, 1, 1, 1))
        y = y + b
    return layer.activation(y) if layer.activation is not _linear else y


class Conv3D(Layer):
    """3-D convolution over ``(batch, depth, height, width, channels)`` inputs, kernel
    ``(kd, kh, kw, in_channels // groups, filters)`` (TF layout); with ``groups`` > 1, group
    ``g`` of the filters sees only group ``g`` of the input channels."""

    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}
    _ACTIVITY_IN_CONFIG = True

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        who = "Conv3D"
        self.data_format = _data_format(data_format, who)
        self.filters = _positive_int(filters, "filters", who)
        _groups(self, groups, who)
        self.kernel_size = _triple(kernel_size, "kernel_size", who)
        self.strides = _triple(strides, "strides", who)
        self.padding = _padding(padding, who)
        self.dilation_rate = _triple(dilation_rate, "dilation_rate", who)
        if self.strides != (1, 1, 1) and self.dilation_rate != (1, 1, 1):
            raise ValueError(f"{who}: strides > 1 together with dilation_rate > 1 is not "
                             "supported (as in TensorFlow)")
        _kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer)
        self.input_spec = InputSpec(ndim=5)

    def build(self, input_shape):
        ch_axis = 1 if self.data_format == "channels_first" else -1
        in_ch = int(input_shape[ch_axis])
        if self.padding == "valid":
            for size, k, d, axis in zip(_spatial(self, input_shape), self.kernel_size,
                                        self.dilation_rate, ("depth", "height", "width")):
                if size < (k - 1) * d + 1:
                    raise ValueError(f"Conv3D layer '{self.name}': input {axis} {size} is smaller "
                                     f"than the kernel's extent {(k - 1) * d + 1} with padding "
                                     f"'valid' (input shape {tuple(input_shape)})")
        self.kernel = self.add_weight("kernel", self.kernel_size + (
            _group_channels(self, in_ch), self.filters), self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=5, axes={ch_axis: in_ch})

    def call(self, inputs):
        from . import nn
        from .ops.nn import _grouped
        first = self.data_format == "channels_first"
        five = (lambda v: [1, 1, *v]) if first else (lambda v: [1, *v, 1])

        def conv(x, w):
            return nn.conv3d(x, w, five(self.strides), self.padding.upper(),
                             data_format=_nn_format(self), dilations=five(self.dilation_rate))
        if self.groups == 1:
            y = conv(inputs, self.kernel)
        else:
            y = _grouped(conv, inputs, self.kernel, self.groups, axis=1 if first else -1)
        return _add_bias_activation(self, y)

    def get_config(self):
        return {**super().get_config(), **_conv_config(self)}


class Conv3DTranspose(Layer):
    """The transpose of a 3-D convolution, kernel ``(kd, kh, kw, filters, in_channels)`` as
    Keras'. Output sizes as Keras: ``in * stride`` with ``"same"`` padding,
    ``(in - 1) * stride + max(kernel, stride)`` with ``"valid"``; with ``output_padding``
    ``p``, ``(in - 1) * stride + kernel - 2 * pad + p`` (``pad`` is ``kernel // 2`` with
    ``"same"``, else 0). ``dilation_rate`` must be 1."""

    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}
    _ACTIVITY_IN_CONFIG = True

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, output_padding=None, dilation_rate=(1, 1, 1),
                 activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        who = "Conv3DTranspose"
        self.data_format = _data_format(data_format, who)
        self.filters = _positive_int(filters, "filters", who)
        self.kernel_size = _triple(kernel_size, "kernel_size", who)
        self.strides = _triple(strides, "strides", who)
        self.padding = _padding(padding, who)
        self.output_padding = None
        if output_padding is not None:
            if isinstance(output_padding, (int, np.integer)):
                op = (int(output_padding),) * 3
            else:
                op = tuple(int(v) for v in output_padding)
                if len(op) != 3:
                    raise ValueError(f"{who}: output_padding must be an int or 3 ints, got "
                                     f"{output_padding!r}")
            for o, st in zip(op, self.strides):
                if not 0 <= o < st:
                    raise ValueError(f"{who}: output_padding {op} must be >= 0 and smaller "
                                     f"than the strides {self.strides}")
            self.output_padding = op
        self.dilation_rate = _triple(dilation_rate, "dilation_rate", who)
        if self.dilation_rate != (1, 1, 1):
            raise ValueError(f"{who}: dilation_rate other than 1 is not supported")
        _kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer)
        self.input_spec = InputSpec(ndim=5)

    def build(self, input_shape):
        ch_axis = 1 if self.data_format == "channels_first" else -1
        in_ch = int(input_shape[ch_axis])
        self.kernel = self.add_weight("kernel", self.kernel_size + (self.filters, in_ch),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=5, axes={ch_axis: in_ch})

    def _out_size(self, size, k, s, axis):
        return deconv_output_size(size, k, s, self.padding, self.output_padding, axis)

    def call(self, inputs):
        from . import nn
        shape = tuple(inputs._value.shape)
        sizes = tuple(self._out_size(n, k, s, i) for i, (n, k, s) in
                      enumerate(zip(_spatial(self, shape), self.kernel_size, self.strides)))
        out = (shape[0], self.filters) + sizes if self.data_format == "channels_first" else \
            (shape[0],) + sizes + (self.filters,)
        y = nn.conv3d_transpose(inputs, self.kernel, out, list(self.strides),
                                self.padding.upper(), data_format=_nn_format(self))
        return _add_bias_activation(self, y)

    def get_config(self):
        return {**super().get_config(), **_conv_config(self),
                "output_padding": self.output_padding}


class _Pool3D(Layer):
    _op = None

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        self.data_format = _data_format(data_format, who)
        self.pool_size = _triple(pool_size, "pool_size", who)
        self.strides = self.pool_size if strides is None else _triple(strides, "strides", who)
        self.padding = _padding(padding, who)
        self.input_spec = InputSpec(ndim=5)

    def _check_input(self, x):
        super()._check_input(x)
        if self.padding == "valid" and isinstance(x, Tensor):
            sizes = _spatial(self, x._value.shape)
            if any(n < k for n, k in zip(sizes, self.pool_size)):
                raise ValueError(f"{type(self).__name__} layer '{self.name}': input of shape "
                                 f"{tuple(x._value.shape)} is smaller than the pool "
                                 f"{self.pool_size} with padding 'valid'")

    def call(self, inputs):
        from . import nn
        return getattr(nn, self._op)(inputs, list(self.pool_size), list(self.strides),
                                     self.padding.upper(), data_format=_nn_format(self))

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class MaxPooling3D(_Pool3D):
    """Maximum over ``pool_size`` windows of 5-D inputs (the gradient goes to each window's
    first maximum, see ``gt.nn.max_pool3d``)."""

    _op = "max_pool3d"


class AveragePooling3D(_Pool3D):
    """Mean over ``pool_size`` windows of 5-D inputs; ``pool_size`` is required, as in
    Keras 3. With ``"same"`` padding each window averages only its input elements."""

    _op = "avg_pool3d"

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, name=name, **kwargs)


MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D


class GlobalAveragePooling3D(_GlobalPool2D):
    """The mean over the spatial axes of 5-D inputs: ``(batch, channels)``."""

    _reduce = "reduce_mean"
    _ndim = 5


class GlobalMaxPooling3D(_GlobalPool2D):
    """The maximum over the spatial axes of 5-D inputs: ``(batch, channels)``."""

    _reduce = "reduce_max"
    _ndim = 5


GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D


class UpSampling3D(Layer):
    """Repeat each voxel ``size`` times along depth, height and width."""

    def __init__(self, size=(2, 2, 2), data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "UpSampling3D")
        self.size = _triple(size, "size", "UpSampling3D")
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        first = 2 if self.data_format == "channels_first" else 1
        y = inputs
        for i, n in enumerate(self.size):
            if n != 1:
                y = _sh.repeat(y, n, axis=first + i)
        return y

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}


class ZeroPadding3D(Layer):
    """Zeros around each volume: ``padding`` an int, three ints, or three
    ``(before, after)`` pairs for depth, height and width."""

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "ZeroPadding3D")
        self.padding = _three_sides(padding, "ZeroPadding3D", "padding")
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        pads = [list(p) for p in self.padding]
        full = [[0, 0], [0, 0]] + pads if self.data_format == "channels_first" else \
            [[0, 0]] + pads + [[0, 0]]
        return _sh.pad(inputs, full)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}


class Cropping3D(Layer):
    """Remove voxels at the edges of each volume (``cropping`` as ZeroPadding3D's
    ``padding``)."""

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "Cropping3D")
        self.cropping = _three_sides(cropping, "Cropping3D", "cropping")
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        sizes = _spatial(self, inputs._value.shape)
        if any(a + b >= n for (a, b), n in zip(self.cropping, sizes)):
            raise ValueError(f"Cropping3D layer '{self.name}': cropping {self.cropping} leaves "
                             f"nothing of volumes of size {sizes}")
        key = tuple(slice(a, n - b) for (a, b), n in zip(self.cropping, sizes))
        if self.data_format == "channels_first":
            return inputs[(slice(None), slice(None)) + key]
        return inputs[(slice(None),) + key + (slice(None),)]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}
