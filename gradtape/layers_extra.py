"""More Keras layers: activations as layers, transposed convolution, resampling and padding,
merges, wrappers (``TimeDistributed``, ``Bidirectional``) and small utilities, under
``gt.layers`` / ``gt.keras.layers`` with Keras' names, arguments and weight layouts."""
from __future__ import annotations

import numpy as np

from . import initializers as _init
from . import keras_graph as _kg
from .layers import (Dropout, InputSpec, Layer, _ANY_VALUE, _GlobalPool2D, _activation_name,
                     _bias_activation, _data_format, _kernel_options, _pair,
                     _padding,
                     _positive_int, get_mask, set_mask)
from .ops import core as _core
from .ops import math as _m
from .ops import shape as _sh
from .tensor import Tensor, convert_to_tensor

__all__ = ["LeakyReLU", "ELU", "Softmax", "PReLU", "Conv2DTranspose", "UpSampling2D",
           "ZeroPadding2D", "Cropping2D", "Concatenate", "Add", "Subtract", "Multiply",
           "Average", "Maximum", "Minimum", "Lambda", "RepeatVector", "Permute", "Rescaling",
           "GaussianNoise", "TimeDistributed", "Bidirectional", "MultiHeadAttention",
           "Conv1DTranspose", "UpSampling1D", "ZeroPadding1D", "Cropping1D", "AlphaDropout",
           "ActivityRegularization", "AdditiveAttention", "SpatialDropout3D", "concatenate",
           "DepthwiseConv1D", "SeparableConv1D", "add", "subtract", "multiply", "average",
           "maximum", "minimum", "dot"]


def _channels_to_last(x, data_format):
    """``x`` with its channel axis last (moved from axis 1 for ``"channels_first"``)."""
    if data_format != "channels_first":
        return x
    n = x._value.ndim
    return _sh.transpose(x, [0] + list(range(2, n)) + [1])


def _channels_back(y, data_format):
    """The inverse of :func:`_channels_to_last`: the channel axis back to axis 1 for
    ``"channels_first"``."""
    if data_format != "channels_first":
        return y
    n = y._value.ndim
    return _sh.transpose(y, [0, n - 1] + list(range(1, n - 1)))


def _channel_axis(data_format):
    return 1 if data_format == "channels_first" else -1


# --- activations as layers ------------------------------------------------------------------

class LeakyReLU(Layer):
    """``x`` for ``x >= 0``, ``negative_slope * x`` below (default 0.3), as Keras 3
    (``alpha``, Keras 2's name for the slope, is accepted too)."""

    supports_masking = True

    def __init__(self, negative_slope=None, alpha=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        slope = negative_slope if negative_slope is not None else alpha
        self.negative_slope = 0.3 if slope is None else float(slope)
        if self.negative_slope < 0:
            raise ValueError(f"LeakyReLU: negative_slope must be >= 0, got "
                             f"{self.negative_slope}")

    @property
    def alpha(self):
        """The slope below zero (Keras 2's name for :attr:`negative_slope`)."""
        return self.negative_slope

    def call(self, inputs):
        from . import nn
        return nn.leaky_relu(inputs, alpha=self.negative_slope)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(Layer):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below."""

    supports_masking = True

    def __init__(self, alpha=1.0, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        from . import nn
        y = nn.elu(inputs)
        if self.alpha == 1.0:
            return y
        return _m.where(inputs > 0.0, y, y * self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


def _large_negative(dtype):
    """What masked scores get before the softmax (Keras': -1e9, or -3e4 in float16)."""
    return -3e4 if np.dtype(dtype) == np.float16 else -1e9


class Softmax(Layer):
    """The softmax over ``axis`` (the last by default; a list of axes: over all of them at
    once). Called with a ``mask`` (or on an input carrying one), as Keras 3: masked
    positions get probability 0 (a row masked everywhere gives zeros)."""

    supports_masking = True

    def __init__(self, axis=-1, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis

    def call(self, inputs, mask=None):
        from . import nn
        from .ops.reduce import reduce_logsumexp
        x = inputs
        keep = None
        if mask is not None:
            keep = mask if isinstance(mask, Tensor) else convert_to_tensor(mask)
            ms, xs = tuple(keep._value.shape), tuple(x._value.shape)
            if len(ms) > len(xs) or any(m not in (1, d) for m, d in zip(ms[::-1], xs[::-1])):
                raise ValueError(f"Softmax layer '{self.name}': the mask of shape {ms} does "
                                 f"not broadcast to the inputs of shape {xs}")
            if keep._value.dtype != np.bool_:
                keep = _m.greater(keep, 0.5)
            x = _m.where(keep, x, _core.zeros_like(x) + _large_negative(x._value.dtype))
        axis = self.axis
        if isinstance(axis, list) and len(axis) == 1:
            axis = axis[0]
        if isinstance(axis, list):
            y = _m.exp(x - reduce_logsumexp(x, axis=axis, keepdims=True))
        else:
            y = nn.softmax(x, axis=axis)
        if keep is not None:
            y = _m.where(keep, y, _core.zeros_like(y))
        return y

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class PReLU(Layer):
    """Leaky ReLU with a learned slope per unit (shared along ``shared_axes``)."""

    supports_masking = True

    _REGULARIZABLE = {"alpha": "alpha"}

    _INITIALIZER_ARGS = {"alpha_initializer": "alpha_initializer"}

    def __init__(self, alpha_initializer="zeros", shared_axes=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.alpha_initializer = _init.get(alpha_initializer)
        if shared_axes is None:
            self.shared_axes = ()
        elif isinstance(shared_axes, (int, np.integer)):
            self.shared_axes = (int(shared_axes),)
        else:
            self.shared_axes = tuple(int(a) for a in shared_axes)

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for a in self.shared_axes:
            if not 1 <= a < len(input_shape):
                raise ValueError(f"PReLU layer '{self.name}': shared axis {a} is not an axis "
                                 f"of the examples (input shape {tuple(input_shape)})")
            shape[a - 1] = 1
        self.alpha = self.add_weight("alpha", tuple(shape), self.alpha_initializer)
        self.input_spec = InputSpec(ndim=len(input_shape), axes={
            i: int(input_shape[i]) for i in range(1, len(input_shape))
            if i not in self.shared_axes})

    def call(self, inputs):
        return _m.maximum(inputs, 0.0) + self.alpha * _m.minimum(inputs, 0.0)

    def get_config(self):
        return {**super().get_config(), "shared_axes": list(self.shared_axes) or None}


# --- convolution, resampling, padding ---------------------------------------------------------

def deconv_output_size(size, k, s, padding, output_padding, axis):
    """Keras' ``deconv_output_length`` along ``axis`` of a transposed convolution (a kernel
    smaller than the stride still spans it)."""
    if output_padding is None:
        return size * s if padding == "same" else (size - 1) * s + max(k, s)
    pad = k // 2 if padding == "same" else 0
    return (size - 1) * s + k - 2 * pad + output_padding[axis]


class Conv2DTranspose(Layer):
    """The transpose of a 2-D convolution (a "deconvolution") over NHWC inputs (NCHW with
    ``data_format="channels_first"``), kernel
    ``(kh, kw, filters, in_channels)`` as Keras'. Output sizes: ``in * stride`` with
    ``"same"`` padding, ``(in - 1) * stride + max(kernel, stride)`` with ``"valid"``; with
    ``output_padding`` ``p``, ``(in - 1) * stride + kernel - 2 * pad + p`` (``pad`` is
    ``kernel // 2`` with ``"same"``, else 0), as Keras."""

    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}
    _ACTIVITY_IN_CONFIG = True
    _FOREIGN_CONFIG_KEYS = {"groups": 1}            # (tf.keras 2's configs hold it)

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        self.data_format = _data_format(data_format, who)
        self.filters = _positive_int(filters, "filters", who)
        self.kernel_size = _pair(kernel_size, "kernel_size", who)
        self.strides = _pair(strides, "strides", who)
        self.output_padding = None
        if output_padding is not None:
            op = _pair(output_padding, "output_padding", who) if not isinstance(
                output_padding, (int, np.integer)) else (int(output_padding),) * 2
            for o, st in zip(op, self.strides):
                if not 0 <= o < st:
                    raise ValueError(f"{who}: output_padding {op} must be >= 0 and smaller "
                                     f"than the strides {self.strides}")
            self.output_padding = op
        self.padding = _padding(padding, who)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", who)
        if self.dilation_rate != (1, 1):
            raise ValueError(f"{who}: dilation_rate other than 1 is not supported")
        _kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer)
        self.input_spec = InputSpec(ndim=4)

    def build(self, input_shape):
        axis = _channel_axis(self.data_format)
        in_ch = int(input_shape[axis])
        self.kernel = self.add_weight("kernel", self.kernel_size + (self.filters, in_ch),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={axis: in_ch})

    def _out_size(self, size, k, s, axis):
        return deconv_output_size(size, k, s, self.padding, self.output_padding, axis)

    def call(self, inputs):
        from . import nn
        x = _channels_to_last(inputs, self.data_format)
        n, h, w, _ = x._value.shape
        out = (n, self._out_size(h, self.kernel_size[0], self.strides[0], 0),
               self._out_size(w, self.kernel_size[1], self.strides[1], 1), self.filters)
        y = nn.conv2d_transpose(x, self.kernel, out, strides=list(self.strides),
                                padding=self.padding.upper())
        return _channels_back(_bias_activation(self, y), self.data_format)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": _activation_name(self.activation),
                "use_bias": self.use_bias, "output_padding": self.output_padding}


class UpSampling2D(Layer):
    """Repeat rows and columns ``size`` times (``"nearest"``), or resize the images with
    ``gt.image.resize`` (``"bilinear"``, ``"bicubic"``, ``"lanczos3"``, ``"lanczos5"``,
    ``"area"``), as Keras; NHWC inputs (NCHW with ``data_format="channels_first"``)."""

    _INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5", "area")

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "UpSampling2D")
        self.size = _pair(size, "size", "UpSampling2D")
        if interpolation not in self._INTERPOLATIONS:
            raise ValueError(f"UpSampling2D: interpolation must be one of "
                             f"{list(self._INTERPOLATIONS)}, got {interpolation!r}")
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        x = _channels_to_last(inputs, self.data_format)
        if self.interpolation != "nearest":
            from . import image
            _, h, w, _ = x._value.shape
            y = image.resize(x, [h * self.size[0], w * self.size[1]],
                             method=self.interpolation)
            y = y if y.dtype == x.dtype else _core.cast(y, x._value.dtype)
        else:
            y = _sh.repeat(x, self.size[0], axis=1) if self.size[0] != 1 else x
            y = _sh.repeat(y, self.size[1], axis=2) if self.size[1] != 1 else y
        return _channels_back(y, self.data_format)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}


class Conv1DTranspose(Conv2DTranspose):
    """The transpose of a 1-D convolution over ``(batch, steps, channels)`` inputs, kernel
    ``(kernel_size, filters, in_channels)`` as Keras'. Output length: ``in * stride`` with
    ``"same"``, ``(in - 1) * stride + max(kernel, stride)`` with ``"valid"``; with
    ``output_padding`` ``p``, ``(in - 1) * stride + kernel - 2 * pad + p``, as Keras."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 **kwargs):
        who = "Conv1DTranspose"
        one = (lambda v, what: (1, _one(v, what, who)))
        if output_padding is not None:
            op = output_padding[0] if isinstance(output_padding, (list, tuple)) and \
                len(output_padding) == 1 else output_padding
            if isinstance(op, bool) or not isinstance(op, (int, np.integer)):
                raise ValueError(f"{who}: output_padding must be an int, got "
                                 f"{output_padding!r}")
            output_padding = (0, int(op))
        super().__init__(filters, one(kernel_size, "kernel_size"), one(strides, "strides"),
                         padding, output_padding, data_format,
                         one(dilation_rate, "dilation_rate"),
                         activation, use_bias, kernel_initializer, bias_initializer, name=name,
                         **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        axis = _channel_axis(self.data_format)
        in_ch = int(input_shape[axis])
        self.kernel = self.add_weight("kernel", (self.kernel_size[1], self.filters, in_ch),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=3, axes={axis: in_ch})

    def call(self, inputs):
        from . import nn
        x = _channels_to_last(inputs, self.data_format)
        n, w, _ = x._value.shape
        out = (n, 1, self._out_size(w, self.kernel_size[1], self.strides[1], 1), self.filters)
        y = nn.conv2d_transpose(_sh.expand_dims(x, 1), _sh.expand_dims(self.kernel, 0),
                                out, strides=list(self.strides), padding=self.padding.upper())
        return _channels_back(_bias_activation(self, _sh.squeeze(y, [1])), self.data_format)

    def get_config(self):
        config = super().get_config()
        config.update(kernel_size=self.kernel_size[1:], strides=self.strides[1:],
                      dilation_rate=self.dilation_rate[1:],
                      output_padding=None if self.output_padding is None
                      else self.output_padding[1:])
        return config


class UpSampling1D(Layer):
    """Repeat each step ``size`` times along the time axis of ``(batch, steps, features)``."""

    def __init__(self, size=2, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.size = _positive_int(size, "size", "UpSampling1D")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        return _sh.repeat(inputs, self.size, axis=1) if self.size != 1 else inputs

    def get_config(self):
        return {**super().get_config(), "size": self.size}


def _one_side_pair(value, who, what):
    """(before, after) from an int or a pair of non-negative ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        pair = (int(value), int(value))
    else:
        try:
            pair = tuple(int(v) for v in value)
        except TypeError:
            raise TypeError(f"{who}: {what} must be an int or a pair of ints, got "
                            f"{value!r}") from None
        if len(pair) != 2:
            raise ValueError(f"{who}: {what} must be an int or a pair of ints, got {value!r}")
    if min(pair) < 0:
        raise ValueError(f"{who}: {what} must be non-negative, got {value!r}")
    return pair


class ZeroPadding1D(Layer):
    """Zeros before and after the steps of ``(batch, steps, features)`` inputs
    (``(batch, features, steps)`` with ``data_format="channels_first"``): ``padding`` an int
    or ``(before, after)``."""

    def __init__(self, padding=1, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"ZeroPadding1D: data_format must be 'channels_last' or "
                             f"'channels_first', got {data_format!r}")
        self.data_format = data_format or "channels_last"
        self.padding = _one_side_pair(padding, "ZeroPadding1D", "padding")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        pads = [[0, 0], list(self.padding), [0, 0]]
        if self.data_format == "channels_first":
            pads = [[0, 0], [0, 0], list(self.padding)]
        return _sh.pad(inputs, pads)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}


class Cropping1D(Layer):
    """Remove ``cropping`` (an int or ``(start, end)``) steps at the ends of
    ``(batch, steps, features)`` inputs."""

    def __init__(self, cropping=(1, 1), name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.cropping = _one_side_pair(cropping, "Cropping1D", "cropping")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        start, end = self.cropping
        steps = inputs._value.shape[1]
        if start + end >= steps:
            raise ValueError(f"Cropping1D layer '{self.name}': cropping {self.cropping} leaves "
                             f"nothing of {steps} steps (input shape "
                             f"{tuple(inputs._value.shape)})")
        return inputs[:, start:steps - end, :]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


def _two_sides(value, who, what):
    """((top, bottom), (left, right)) from an int, a pair, or a pair of pairs."""
    if isinstance(value, (int, np.integer)):
        v = int(value)
        pairs = ((v, v), (v, v))
    else:
        value = tuple(value)
        if len(value) != 2:
            raise ValueError(f"{who}: {what} must be an int, 2 ints or 2 pairs, got {value!r}")
        pairs = tuple((int(v), int(v)) if isinstance(v, (int, np.integer))
                      else tuple(int(u) for u in v) for v in value)
    if any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ValueError(f"{who}: {what} must be non-negative, got {value!r}")
    return pairs


class ZeroPadding2D(Layer):
    """Zeros around each image: ``padding`` an int, ``(rows, cols)`` or
    ``((top, bottom), (left, right))``; NHWC inputs (NCHW with
    ``data_format="channels_first"``)."""

    def __init__(self, padding=(1, 1), data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "ZeroPadding2D")
        self.padding = _two_sides(padding, "ZeroPadding2D", "padding")
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        (t, b), (le, r) = self.padding
        if self.data_format == "channels_first":
            return _sh.pad(inputs, [[0, 0], [0, 0], [t, b], [le, r]])
        return _sh.pad(inputs, [[0, 0], [t, b], [le, r], [0, 0]])

    def get_config(self):
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}


class Cropping2D(Layer):
    """Remove rows and columns at the edges of each image (``cropping`` as ZeroPadding2D's
    ``padding``); NHWC inputs (NCHW with ``data_format="channels_first"``)."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "Cropping2D")
        self.cropping = _two_sides(cropping, "Cropping2D", "cropping")
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        (t, b), (le, r) = self.cropping
        first = self.data_format == "channels_first"
        h, w = inputs._value.shape[2:4] if first else inputs._value.shape[1:3]
        if t + b >= h or le + r >= w:
            raise ValueError(f"Cropping2D layer '{self.name}': cropping {self.cropping} leaves "
                             f"nothing of images of size {h}x{w}")
        if first:
            return inputs[:, :, t:h - b, le:w - r]
        return inputs[:, t:h - b, le:w - r, :]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}


# --- merges -----------------------------------------------------------------------------------

class _Merge(Layer):
    """A layer called on a list of tensors of one shape (broadcasting as Keras allows)."""

    _min_inputs = 2

    def _convert_input(self, x):
        return x

    def __call__(self, inputs, *args, **kwargs):
        if _kg.has_symbols(inputs, args, kwargs):
            return _kg.symbolic_call(self, inputs, args, kwargs)
        if not isinstance(inputs, (list, tuple)) or len(inputs) < self._min_inputs:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': expects a list of at "
                             f"least {self._min_inputs} inputs, got {type(inputs).__name__}")
        tensors = [t if isinstance(t, Tensor) else convert_to_tensor(t) for t in inputs]
        cast = [_core.cast(t, self._compute_dtype) if t._value.dtype != self._compute_dtype
                and t._value.dtype.kind in "fiub" else t for t in tensors]
        for before, after in zip(tensors, cast):
            if after is not before:                      # the cast copy keeps the Keras mask
                m = get_mask(before)
                if m is not None:
                    set_mask(after, m)
        return super().__call__(cast, *args, **kwargs)

    supports_masking = True

    def compute_mask(self, inputs, mask=None):
        """As Keras 3: a position is kept where any input keeps it (no mask when an input
        has none)."""
        if mask is None or any(m is None for m in mask):
            return None
        out = mask[0]
        for m in mask[1:]:
            out = _m.logical_or(out, m)
        return out

    def call(self, inputs):
        out = inputs[0]
        for t in inputs[1:]:
            out = self._merge(out, t)
        return self._finish(out, len(inputs))

    def _finish(self, out, n):
        return out


class Add(_Merge):
    """The sum of the inputs."""

    def _merge(self, a, b):
        return a + b


class Subtract(_Merge):
    """The first input minus the second (exactly two inputs)."""

    def call(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"Subtract layer '{self.name}': expects exactly 2 inputs, got "
                             f"{len(inputs)}")
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """The elementwise product of the inputs; with masks on every input, as Keras 3, a
    masked position of one input counts as 1 and the positions no input keeps are 0."""

    def _merge(self, a, b):
        return a * b

    def call(self, inputs):
        masks = [get_mask(t) for t in inputs]
        if all(m is None for m in masks):
            return super().call(inputs)
        every = all(m is not None for m in masks)
        out = kept = None
        for x, m in zip(inputs, masks):
            if m is not None:
                m = _spread_mask(m, x)
                x = _m.where(m, x, _core.ones_like(x))
                if every:
                    kept = m if kept is None else _m.logical_or(kept, m)
            out = x if out is None else out * x
        return _m.where(kept, out, _core.zeros_like(out)) if every else out


def _spread_mask(mask, x):
    """A ``[batch, time]`` mask broadcast over ``x``'s features."""
    m = mask if isinstance(mask, Tensor) else convert_to_tensor(mask)
    return _m.logical_or(_sh.expand_dims(m, -1), _core.zeros(tuple(x._value.shape), "bool"))


def _or_masked_merge(inputs, op):
    """Keras 3's merge of masked inputs for Maximum and Minimum: a masked position of one
    input takes the other's value (positions kept by no input: the op of the inputs)."""
    out = kept = None
    for x in inputs:
        m = get_mask(x)
        if m is not None:
            m = _spread_mask(m, x)
        if out is None:
            out, kept = x, m
            continue
        if m is not None:
            x = _m.where(m, x, out)
        if kept is not None:
            out = _m.where(kept, out, x)
        kept = _m.logical_or(kept, m) if m is not None and kept is not None else None
        out = op(out, x)
    return out


class Average(_Merge):
    """The elementwise mean of the inputs."""

    def _merge(self, a, b):
        return a + b

    def _finish(self, out, n):
        return out / float(n)


class Maximum(_Merge):
    """The elementwise maximum of the inputs (masked values left out, as Keras 3)."""

    def _merge(self, a, b):
        return _m.maximum(a, b)

    def call(self, inputs):
        return _or_masked_merge(inputs, _m.maximum)


class Minimum(_Merge):
    """The elementwise minimum of the inputs (masked values left out, as Keras 3)."""

    def _merge(self, a, b):
        return _m.minimum(a, b)

    def call(self, inputs):
        return _or_masked_merge(inputs, _m.minimum)


class Concatenate(_Merge):
    """The inputs joined along ``axis`` (the last by default)."""

    _min_inputs = 1

    def __init__(self, axis=-1, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.axis = int(axis)

    def call(self, inputs):
        return _sh.concat(list(inputs), axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        """As Keras 3: the masks spread over the features (an input without one counts as
        all kept) joined along ``axis``, then kept where any feature is kept."""
        if mask is None or all(m is None for m in mask):
            return None
        from .ops.reduce import reduce_any
        parts = []
        for t, m in zip(inputs, mask):
            if m is None:
                parts.append(_core.ones(tuple(t._value.shape), dtype="bool"))
            else:
                m = m if isinstance(m, Tensor) else convert_to_tensor(m)
                parts.append(_spread_mask(m, t) if m._value.ndim < t._value.ndim else m)
        return reduce_any(_sh.concat(parts, axis=self.axis), axis=-1)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


# --- the functional forms of the merge layers (keras.layers.add(...) and the like) -----------

def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis=axis, **kwargs)(inputs)``: on symbolic or eager tensors."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs, **kwargs):
    """``Add(**kwargs)(inputs)``: the sum of the inputs."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``Subtract(**kwargs)(inputs)``: the first input minus the second."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """``Multiply(**kwargs)(inputs)``: the elementwise product of the inputs."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """``Average(**kwargs)(inputs)``: the elementwise mean of the inputs."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """``Maximum(**kwargs)(inputs)``: the elementwise maximum of the inputs."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """``Minimum(**kwargs)(inputs)``: the elementwise minimum of the inputs."""
    return Minimum(**kwargs)(inputs)


def dot(inputs, axes=-1, **kwargs):
    """``Dot(axes=axes, **kwargs)(inputs)`` (``normalize=True``: cosine similarity)."""
    return Dot(axes=axes, **kwargs)(inputs)


# --- small utilities --------------------------------------------------------------------------

class Lambda(Layer):
    """Wrap a function of the inputs as a layer, as Keras': ``arguments``: extra keyword
    arguments; a function with a ``mask`` or ``training`` parameter receives the call's;
    ``mask``: the output's mask (a tensor, or a function ``(inputs, mask)`` giving it; by
    default the output has none); ``output_shape``: the output's shape without the batch
    axis (or a function of the input shape) for :meth:`compute_output_shape`."""

    autocast = False

    def __init__(self, function, output_shape=None, mask=None, arguments=None, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {type(function).__name__}")
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self.supports_masking = mask is not None
        self._output_shape = output_shape
        import inspect
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_takes = {k for k in ("mask", "training") if k in params}

    _UNTRACKED = Layer._UNTRACKED | {"mask", "_output_shape", "_fn_takes"}

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if "mask" in self._fn_takes:
            kwargs["mask"] = mask
        if "training" in self._fn_takes:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        shape = self._output_shape
        if shape is None:
            return super().compute_output_shape(input_shape)
        if callable(shape):
            return shape(input_shape)
        first = input_shape
        while isinstance(first, (list, tuple)) and first and isinstance(first[0],
                                                                        (list, tuple)):
            first = first[0]
        batch = first[0] if isinstance(first, (list, tuple)) and first else None
        if shape and isinstance(shape[0], (list, tuple)):
            return [(batch,) + tuple(s) for s in shape]
        return (batch,) + tuple(shape)

    def get_config(self):
        """As Keras': the function and ``arguments`` (and ``output_shape`` and ``mask`` when
        given), as Python objects (a Lambda is rebuilt in code, not loaded from a file)."""
        config = {**super().get_config(), "function": self.function,
                  "arguments": dict(self.arguments)}
        if self._output_shape is not None:
            config["output_shape"] = self._output_shape
        if self.mask is not None:
            config["mask"] = self.mask
        return config


class RepeatVector(Layer):
    """``(batch, features)`` to ``(batch, n, features)``: each vector repeated ``n`` times."""

    def __init__(self, n, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.n = _positive_int(n, "n", "RepeatVector")
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return _sh.tile(_sh.expand_dims(inputs, 1), [1, self.n, 1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


class Permute(Layer):
    """Permute the axes of each example: ``dims`` numbers them from 1 (the batch axis stays)."""

    autocast = False

    def __init__(self, dims, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Permute: dims must be a permutation of 1..{len(self.dims)}, "
                             f"got {self.dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return _sh.transpose(inputs, [0] + list(self.dims))

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


class Rescaling(Layer):
    """``inputs * scale + offset`` (``Rescaling(1 / 255)`` for pixel values); ``scale`` and
    ``offset`` are numbers, or lists broadcast against the inputs' last axes (one factor per
    channel, as Keras 3)."""

    supports_masking = True

    def __init__(self, scale, offset=0.0, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = self._factor(scale, "scale")
        self.offset = self._factor(offset, "offset")

    @staticmethod
    def _factor(value, what):
        if isinstance(value, (list, tuple, np.ndarray)):
            arr = np.asarray(value, dtype=np.float64)
            if arr.size == 0:
                raise ValueError(f"Rescaling: {what} is empty")
            return arr.tolist()
        try:
            return float(value)
        except (TypeError, ValueError):
            raise TypeError(f"Rescaling: {what} must be a number or a list of numbers, got "
                            f"{value!r}") from None

    def _operand(self, value, inputs):
        if isinstance(value, list):          # (made on the inputs' device)
            from .tensor import Tensor
            dev = inputs._device
            return Tensor(dev.asarray(np.asarray(value, dtype=inputs._value.dtype)), dev)
        return value

    def call(self, inputs):
        y = inputs * self._operand(self.scale, inputs)
        return y + self._operand(self.offset, inputs) if self.offset else y

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class GaussianNoise(Layer):
    """Add zero-mean normal noise of ``stddev`` when training; the identity otherwise."""

    supports_masking = True

    def __init__(self, stddev, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not isinstance(stddev, (int, float)) or stddev < 0:
            raise ValueError(f"GaussianNoise: stddev must be >= 0, got {stddev!r}")
        self.stddev = float(stddev)
        self.seed = seed

    def call(self, inputs, training=False):
        if not training or not self.stddev:
            return inputs
        from . import random
        noise = random.normal(tuple(inputs._value.shape), stddev=self.stddev,
                              dtype=inputs._value.dtype, seed=self.seed)
        return inputs + noise

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


# --- wrappers ---------------------------------------------------------------------------------

class TimeDistributed(Layer):
    """Apply ``layer`` to every time step of ``(batch, time, ...)`` inputs (the time axis
    folded into the batch, so one call of the layer does every step)."""

    supports_masking = True

    autocast = False
    _builds_on_call = False

    def __init__(self, layer, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not isinstance(layer, Layer):
            raise TypeError(f"TimeDistributed: expected a Layer, got {type(layer).__name__}")
        self.layer = layer
        self.input_spec = InputSpec(min_ndim=3)

    def call(self, inputs, training=None):
        shape = tuple(inputs._value.shape)
        flat = _sh.reshape(inputs, (shape[0] * shape[1],) + shape[2:])
        out = self.layer(flat, training=training)
        return _sh.reshape(out, shape[:2] + tuple(out._value.shape[1:]))

    def get_config(self):
        from .saving import serialize_layer
        return {**super().get_config(), "layer": serialize_layer(self.layer)}

    @classmethod
    def from_config(cls, config):
        from .saving import deserialize_layer
        config = dict(config)
        return cls(deserialize_layer(config.pop("layer")), **config)


class Bidirectional(Layer):
    """Run a recurrent layer forwards and a copy of it backwards, and merge their outputs
    (``merge_mode``: ``"concat"``, ``"sum"``, ``"mul"``, ``"ave"`` or None for the tuple
    ``(forward, backward)``), as Keras 3: the forward layer is a fresh copy of ``layer``
    named ``forward_<name>``, the backward one (unless ``backward_layer`` is given) a copy
    running the other way named ``backward_<name>``. With ``return_sequences`` the backward
    outputs are put back in time order; ``return_state`` adds the forward then the backward
    final states (a tuple)."""

    autocast = False
    _builds_on_call = False

    _MODES = ("concat", "sum", "mul", "ave", None)

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 name=None, **kwargs):
        from .recurrent import RNN, _unprefixed
        super().__init__(name=name, **kwargs)
        if not isinstance(layer, RNN):
            raise TypeError(f"Bidirectional: expected a recurrent layer (SimpleRNN, LSTM, GRU, "
                            f"RNN), got {type(layer).__name__}")
        if backward_layer is not None and not isinstance(backward_layer, RNN):
            raise TypeError(f"Bidirectional: backward_layer must be a recurrent layer, got "
                            f"{type(backward_layer).__name__}")
        if merge_mode not in self._MODES:
            raise ValueError(f"Bidirectional: merge_mode must be one of {list(self._MODES)}, "
                             f"got {merge_mode!r}")
        if weights is not None:
            raise ValueError("Bidirectional: weights= is not supported; assign the forward and "
                             "backward layers' variables after the first call")
        base = _unprefixed(layer.name)
        try:
            self.forward_layer = layer.fresh_copy(name=f"forward_{base}")
        except TypeError:                   # a subclass made with other arguments: itself
            self.forward_layer = layer
        self.backward_layer = backward_layer if backward_layer is not None else \
            layer.reversed_copy(name=f"backward_{base}")
        if self.backward_layer.go_backwards == self.forward_layer.go_backwards:
            raise ValueError("Bidirectional: backward_layer must run in the other direction "
                             "(go_backwards) from layer")
        for attr in ("stateful", "return_sequences", "return_state"):
            f, b = getattr(self.forward_layer, attr), getattr(self.backward_layer, attr)
            if f != b:
                raise ValueError(f"Bidirectional: the forward and backward layers must have "
                                 f"the same {attr}, got {f} and {b}")
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        # as Keras: with sequences, masked steps give zeros (not the last output) both ways
        self.forward_layer.zero_output_for_mask = self.return_sequences
        self.backward_layer.zero_output_for_mask = self.return_sequences
        self.return_state = layer.return_state
        self.stateful = layer.stateful

    def reset_states(self, states=None):
        """Reset both directions (``states``: the forward layer's, then the backward's)."""
        if not self.stateful:
            raise AttributeError(f"Bidirectional layer '{self.name}' is not stateful")
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        states = list(states)
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def call(self, inputs, initial_state=None, training=None, mask=None):
        f_init = b_init = None
        if initial_state is not None:
            half = len(initial_state) // 2
            f_init, b_init = list(initial_state[:half]), list(initial_state[half:])
        fwd = self.forward_layer(inputs, initial_state=f_init, training=training, mask=mask)
        bwd = self.backward_layer(inputs, initial_state=b_init, training=training, mask=mask)
        f_states = b_states = []
        if self.return_state:
            fwd, f_states = fwd[0], fwd[1:]
            bwd, b_states = bwd[0], bwd[1:]
        if self.return_sequences:
            bwd = _sh.reverse(bwd, [1])
        if self.merge_mode is None:
            merged = (fwd, bwd)
        elif self.merge_mode == "concat":
            merged = _sh.concat([fwd, bwd], axis=-1)
        elif self.merge_mode == "sum":
            merged = fwd + bwd
        elif self.merge_mode == "mul":
            merged = fwd * bwd
        else:
            merged = (fwd + bwd) * 0.5
        if self.return_state:
            head = merged if isinstance(merged, tuple) else (merged,)
            return head + tuple(f_states) + tuple(b_states)
        return merged

    def compute_mask(self, inputs, mask=None):
        out = mask if self.return_sequences else None
        heads = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            n = len(self.forward_layer.state_size)
            return heads + [None] * (2 * n)
        return heads if self.merge_mode is None else out

    def get_config(self):
        from .saving import serialize_layer
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": serialize_layer(self.forward_layer),
                "backward_layer": serialize_layer(self.backward_layer)}

    @classmethod
    def from_config(cls, config):
        from .saving import deserialize_layer
        config = dict(config)
        layer = deserialize_layer(config.pop("layer"))
        backward = config.pop("backward_layer", None)
        if backward is not None:
            backward = deserialize_layer(backward)
        return cls(layer, backward_layer=backward, **config)


# --- attention --------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _attention_equations(rank, attn_axes):
    """The einsum equations of multi-head attention over ``attn_axes`` of projected tensors
    of ``rank`` (``(batch, <other axes>, <attention axes>, heads, channels)``), as Keras:
    ``(scores, combine, scores rank)``. The scores are ``(batch, <other axes>, heads,
    <query attention axes>, <key attention axes>)``."""
    target = _LETTERS[:rank]
    batch_dims = [i for i in range(rank) if i not in attn_axes and i != rank - 1]
    source, offset = "", rank
    for i in range(rank):
        if i in batch_dims or i == rank - 1:
            source += target[i]
        else:
            source += _LETTERS[offset]
            offset += 1
    product = "".join([target[i] for i in batch_dims] + [target[i] for i in attn_axes] +
                      [source[i] for i in attn_axes])
    return f"{source},{target}->{product}", f"{product},{source}->{target}", len(product)


def _bool_mask(m):
    """An attention mask as booleans, as Keras: true where nonzero."""
    m = m if isinstance(m, Tensor) else convert_to_tensor(m)
    return m if m._value.dtype == np.bool_ else _m.not_equal(m, 0)


def _all_true(parts):
    """The logical and of the masks ``parts`` (None when there are none)."""
    if not parts:
        return None
    out = parts[0]
    for m in parts[1:]:
        out = _m.logical_and(out, m)
    return out


def _band_masks(t, s, causal, sliding_window):
    """The ``[1, T, S]`` bands asked for: causal (``t >= s``), then the sliding window
    (``|t - s| < sliding_window``)."""
    if not causal and sliding_window is None:
        return []
    rows = _sh.reshape(_sh.range(t), (1, t, 1))
    cols = _sh.reshape(_sh.range(s), (1, 1, s))
    bands = [rows >= cols] if causal else []
    if sliding_window is not None:
        bands.append(_m.abs(rows - cols) < sliding_window)
    return bands


def _masked_scores(scores, mask):
    """The scores where ``mask`` is true, Keras' large negative number elsewhere."""
    blocked = _core.zeros_like(scores) + _large_negative(scores._value.dtype)
    return _m.where(mask, scores, blocked)


def _attention_shapes(query_shape, value_shape, key_shape):
    """Keras' ``(query_shape, value_shape, key_shape)``, also given as one list of them."""
    if value_shape is None and isinstance(query_shape, (list, tuple)) and query_shape \
            and isinstance(query_shape[0], (list, tuple)):
        query_shape, value_shape, key_shape = (list(query_shape) + [None, None])[:3]
    return query_shape, value_shape, key_shape


def _attention_call(layer, call, who, short, query, value, key, kwargs):
    """The ``__call__`` of the attention layers: a symbolic call on Keras tensors, else
    ``call([query, value, key], **kwargs)`` (the key defaults to the value)."""
    if _kg.has_symbols(query, (value, key), kwargs):
        args = (value,) if key is None else (value, key)
        return _kg.symbolic_call(layer, query, args, kwargs)
    if value is None:
        raise TypeError(f"{who} layer '{layer.name}': call it with the query and the value "
                        f"({short}(query, value) for cross-attention, {short}(x, x) for "
                        f"self-attention)")
    q, v = Layer._convert_input(layer, query), Layer._convert_input(layer, value)
    k = v if key is None else Layer._convert_input(layer, key)
    return call([q, v, k], **kwargs)


class MultiHeadAttention(Layer):
    """Multi-head attention, as ``keras.layers.MultiHeadAttention`` (inputs
    ``[batch, <axes>, features]``, usually ``[batch, time, features]``).

    ``mha(query, value, key=None, attention_mask=None, return_attention_scores=False,
    use_causal_mask=False)``: per head, ``softmax(q k^T / sqrt(key_dim)) v`` over
    ``attention_axes`` (all axes between the batch and the features by default), then the
    output projection back to the query's feature size (or ``output_shape``, an int or a
    shape). ``attention_mask`` ``[batch, T, S]`` is true where a query may attend (the
    inputs' Keras masks, ``use_causal_mask`` and ``sliding_window``, a band of
    ``|t - s| < sliding_window``, are and-ed in); ``dropout`` drops attention probabilities
    while training; ``use_gate`` multiplies each head's output by
    ``sigmoid(query @ gate_kernel + gate_bias)``. As Keras, masked probabilities are zeroed
    (a query that may attend nowhere gets zeros, not the mean of the values) when the
    scores are returned, with ``dropout``, or over more than one axis. Weights in Keras'
    layout and order: ``query``/``key`` kernels ``[features, heads, key_dim]``, (``gate``
    ``[features, heads, value_dim]``), ``value`` ``[features, heads, value_dim]``,
    ``attention_output`` ``[heads, value_dim, *output_shape]``, each with its bias.
    """

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, sliding_window=None,
                 flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        from .constraints import get as _get_constraint
        from .regularizers import get as _get_regularizer
        who = "MultiHeadAttention"
        self.num_heads = _positive_int(num_heads, "num_heads", who)
        self.key_dim = _positive_int(key_dim, "key_dim", who)
        self.value_dim = _positive_int(value_dim if value_dim is not None else key_dim,
                                       "value_dim", who)
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"{who}: dropout must be a float in [0, 1), got {dropout!r}")
        if attention_axes is not None:
            attention_axes = tuple(int(a) for a in np.atleast_1d(attention_axes))
        self.attention_axes = attention_axes
        if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(
                sliding_window, (int, np.integer)) or sliding_window <= 0):
            raise ValueError(f"{who}: sliding_window must be None or a positive int, got "
                             f"{sliding_window!r}")
        self.sliding_window = None if sliding_window is None else int(sliding_window)
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        self.use_gate = bool(use_gate)
        if output_shape is not None:
            dims = (output_shape,) if isinstance(output_shape, (int, np.integer)) else tuple(
                output_shape)
            output_shape = tuple(_positive_int(d, "output_shape", who) for d in dims)
        self._output_shape = output_shape
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)
        self.kernel_regularizer = None if kernel_regularizer is None else \
            _get_regularizer(kernel_regularizer)
        self.bias_regularizer = None if bias_regularizer is None else \
            _get_regularizer(bias_regularizer)
        self.kernel_constraint = None if kernel_constraint is None else \
            _get_constraint(kernel_constraint)
        self.bias_constraint = None if bias_constraint is None else \
            _get_constraint(bias_constraint)
        self.seed = seed
        self._built_dims = None

    _UNTRACKED = Layer._UNTRACKED | {"_built_dims", "_output_shape"}

    #: tf.keras 2's configs: the shapes it was built for (this layer builds on its first
    #: call) and its choice of how a mask enters the softmax (a masked position gets no
    #: weight either way)
    _FOREIGN_CONFIG_KEYS = {"query_shape": _ANY_VALUE, "key_shape": _ANY_VALUE,
                            "value_shape": _ANY_VALUE, "softmax_robust_masking": _ANY_VALUE}

    @property
    def output_dim(self):
        """The output's last size when ``output_shape`` is one int (None when not given)."""
        return None if self._output_shape is None else self._output_shape[-1]

    def _convert_input(self, x):
        return x

    def __call__(self, query, value=None, key=None, **kwargs):
        return _attention_call(self, super().__call__, "MultiHeadAttention", "mha", query,
                               value, key, kwargs)

    def build(self, shapes):
        q_shape, v_shape, k_shape = (tuple(s) for s in shapes)
        rank = len(q_shape)
        for label, shape in (("query", q_shape), ("value", v_shape), ("key", k_shape)):
            if len(shape) < 3 or len(shape) != rank:
                raise ValueError(f"MultiHeadAttention layer '{self.name}': the {label} must be "
                                 f"[batch, <axes>, features] of the query's rank, got shape "
                                 f"{shape}")
        if v_shape[1:-1] != k_shape[1:-1]:
            raise ValueError(f"MultiHeadAttention layer '{self.name}': the value and the key "
                             f"must agree on every axis but the last, got {v_shape} and "
                             f"{k_shape}")
        axes = self.attention_axes
        # (in the projected tensors' axes, as Keras: a negative axis counts from the heads)
        axes = tuple(range(1, rank - 1)) if axes is None else tuple(
            a if a >= 0 else rank + a for a in axes)
        for a in axes:
            if not 1 <= a < rank - 1:
                raise ValueError(f"MultiHeadAttention layer '{self.name}': attention axis {a} "
                                 f"is not an axis between the batch and the features of "
                                 f"inputs of rank {rank}")
        self.attention_axes = axes
        h, kd, vd = self.num_heads, self.key_dim, self.value_dim
        out = self._output_shape or (int(q_shape[-1]),)

        def dense(label, dim_in, per_head):
            kern = self.add_weight(f"{label}/kernel", (int(dim_in), h, per_head),
                                   self.kernel_initializer, regularizer=self.kernel_regularizer,
                                   constraint=self.kernel_constraint)
            bias = self.add_weight(f"{label}/bias", (h, per_head), self.bias_initializer,
                                   regularizer=self.bias_regularizer,
                                   constraint=self.bias_constraint) if self.use_bias else None
            return kern, bias
        self.query_kernel, self.query_bias = dense("query", q_shape[-1], kd)
        self.key_kernel, self.key_bias = dense("key", k_shape[-1], kd)
        self.gate_kernel = self.gate_bias = None
        if self.use_gate:
            self.gate_kernel, self.gate_bias = dense("gate", q_shape[-1], vd)
        self.value_kernel, self.value_bias = dense("value", v_shape[-1], vd)
        self.output_kernel = self.add_weight("attention_output/kernel", (h, vd) + tuple(out),
                                             self.kernel_initializer,
                                             regularizer=self.kernel_regularizer,
                                             constraint=self.kernel_constraint)
        self.output_bias = self.add_weight("attention_output/bias", tuple(out),
                                           self.bias_initializer,
                                           regularizer=self.bias_regularizer,
                                           constraint=self.bias_constraint) \
            if self.use_bias else None
        self._built_dims = (int(q_shape[-1]), int(v_shape[-1]), int(k_shape[-1]))

    def call(self, inputs, attention_mask=None, return_attention_scores=False, training=False,
             use_causal_mask=False, mask=None):
        from .ops.linalg import einsum
        from .ops.reduce import reduce_logsumexp
        from . import nn
        q_in, v_in, k_in = inputs
        rank = q_in._value.ndim
        dims = (q_in._value.shape[-1], v_in._value.shape[-1], k_in._value.shape[-1])
        batches = {q_in._value.shape[0], v_in._value.shape[0], k_in._value.shape[0]}
        if len(batches) > 1:
            raise ValueError(f"MultiHeadAttention layer '{self.name}': the query, value and "
                             f"key batch sizes differ: {sorted(batches)}")
        if dims != self._built_dims or v_in._value.ndim != rank or k_in._value.ndim != rank:
            raise ValueError(f"MultiHeadAttention layer '{self.name}': built for feature sizes "
                             f"(query, value, key) {self._built_dims} of rank-{rank} inputs, "
                             f"got shapes {tuple(q_in.shape)}, {tuple(v_in.shape)}, "
                             f"{tuple(k_in.shape)}")
        if mask is not None:
            attention_mask = self._keras_attention_mask(mask, attention_mask)
        free = _LETTERS[:rank - 1]

        def project(x, kern, bias):
            y = einsum(f"{free}y,ynz->{free}nz", x, kern)
            return y + bias if bias is not None else y
        q = project(q_in, self.query_kernel, self.query_bias) * (1.0 / np.sqrt(self.key_dim))
        k = project(k_in, self.key_kernel, self.key_bias)
        v = project(v_in, self.value_kernel, self.value_bias)
        axes = self.attention_axes
        n = len(axes)
        dot_eq, combine_eq, scores_rank = _attention_equations(rank + 1, axes)
        scores = einsum(dot_eq, k, q)
        mask = self._mask(attention_mask, use_causal_mask, q_in, v_in, scores, n)
        if mask is not None:
            scores = _masked_scores(scores, mask)
        if n == 1:
            probs = nn.softmax(scores, axis=-1)
        else:
            last = list(range(scores_rank - n, scores_rank))
            probs = _m.exp(scores - reduce_logsumexp(scores, axis=last, keepdims=True))
        if mask is not None and (return_attention_scores or self.dropout or rank != 3):
            # Keras' explicit path (a masked softmax): masked probabilities are zeros
            probs = probs * _core.cast(mask, probs._value.dtype)
        dropped = probs
        if training and self.dropout:
            dropped = nn.dropout(probs, rate=self.dropout,
                                 rng=self._seeded_generator(probs._device))
        ctx = einsum(combine_eq, dropped, v)                 # [batch, <axes>, heads, vd]
        if self.gate_kernel is not None:
            ctx = ctx * _m.sigmoid(project(q_in, self.gate_kernel, self.gate_bias))
        out_letters = _LETTERS[rank + 1:rank + 1 + len(self.output_kernel.shape) - 2]
        out = einsum(f"{free}nz,nz{out_letters}->{free}{out_letters}", ctx,
                     self.output_kernel)
        if self.output_bias is not None:
            out = out + self.output_bias
        return (out, probs) if return_attention_scores else out

    @staticmethod
    def _keras_attention_mask(masks, attention_mask):
        """As Keras: the inputs' masks (query ``[B, T]``, value and key ``[B, S]``) as an
        attention mask ``[B, T, S]``, and-ed with a given one."""
        q_mask, v_mask, k_mask = (list(masks) + [None, None, None])[:3]
        parts = []
        if q_mask is not None:
            parts.append(_sh.expand_dims(convert_to_tensor(q_mask, dtype="bool"), -1))
        for m in (v_mask, k_mask):
            if m is not None:
                parts.append(_sh.expand_dims(convert_to_tensor(m, dtype="bool"), -2))
        if attention_mask is not None:
            parts.append(_bool_mask(attention_mask))
        return _all_true(parts)

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, (list, tuple)) and mask else None

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        """The output's shape for a query of ``query_shape`` (Keras' signature:
        ``(query_shape, value_shape, key_shape=None)``; a list of the shapes works too)."""
        query_shape, value_shape, key_shape = _attention_shapes(query_shape, value_shape,
                                                                key_shape)
        query_shape = tuple(query_shape)
        if value_shape is not None and key_shape is not None and \
                tuple(value_shape)[1:-1] != tuple(key_shape)[1:-1]:
            raise ValueError(f"MultiHeadAttention layer '{self.name}': the value and the key "
                             f"must agree on every axis but the last, got {tuple(value_shape)} "
                             f"and {tuple(key_shape)}")
        if self._output_shape:
            return query_shape[:-1] + tuple(self._output_shape)
        return query_shape

    def _mask(self, attention_mask, causal, q_in, v_in, scores, n_axes):
        """The boolean mask of the scores: the attention mask (``[B, T, S]``, expanded as
        Keras from the heads axis on), the causal and the sliding-window bands."""
        t, s = q_in._value.shape[1], v_in._value.shape[1]
        parts = [] if attention_mask is None else [_bool_mask(attention_mask)]
        parts += _band_masks(t, s, causal, self.sliding_window)
        mask = _all_true(parts)
        if mask is None:
            return None
        want = tuple(scores._value.shape)
        if mask._value.ndim > len(want):
            raise ValueError(f"MultiHeadAttention layer '{self.name}': attention_mask of "
                             f"shape {tuple(mask._value.shape)} has more axes than the scores "
                             f"{want}")
        while mask._value.ndim < len(want):
            mask = _sh.expand_dims(mask, -2 * n_axes - 1)
        shape = tuple(mask._value.shape)
        if any(m not in (1, w) for m, w in zip(shape, want)):
            raise ValueError(f"MultiHeadAttention layer '{self.name}': attention_mask of "
                             f"shape {tuple(parts[0]._value.shape)} does not fit {t} queries "
                             f"and {s} keys (expected [batch, {t}, {s}])")
        return mask

    def get_config(self):
        from .constraints import serialize as _serialize_constraint
        from .regularizers import serialize as _serialize_regularizer
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout,
                "use_bias": self.use_bias, "use_gate": self.use_gate,
                "output_shape": self._output_shape, "attention_axes": self.attention_axes,
                "sliding_window": self.sliding_window,
                "kernel_regularizer": None if self.kernel_regularizer is None else
                _serialize_regularizer(self.kernel_regularizer),
                "bias_regularizer": None if self.bias_regularizer is None else
                _serialize_regularizer(self.bias_regularizer),
                "kernel_constraint": None if self.kernel_constraint is None else
                _serialize_constraint(self.kernel_constraint),
                "bias_constraint": None if self.bias_constraint is None else
                _serialize_constraint(self.bias_constraint),
                "activity_regularizer": None, "seed": self.seed,
                **{k: v for k, v in super().get_config().items()
                   if k == "activity_regularizer"}}


# --- 1-D pooling ----------------------------------------------------------------------------

class _Pool1D(Layer):
    _op = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        self.data_format = _data_format(data_format, who)
        self.pool_size = _one(pool_size, "pool_size", who)
        self.strides = self.pool_size if strides is None else _one(strides, "strides", who)
        self.padding = _padding(padding, who)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        from . import nn
        x = _channels_to_last(inputs, self.data_format)
        if self.padding == "valid" and x._value.shape[1] < self.pool_size:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': input of shape "
                             f"{tuple(inputs._value.shape)} is shorter than the pool "
                             f"{self.pool_size} with padding 'valid'")
        y = getattr(nn, self._op)(x, self.pool_size, self.strides, self.padding.upper())
        return _channels_back(y, self.data_format)

    def get_config(self):
        return {**super().get_config(), "pool_size": (self.pool_size,),
                "strides": (self.strides,), "padding": self.padding,
                "data_format": self.data_format}


def _one(value, what, who):
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    return _positive_int(value, what, who)


class MaxPooling1D(_Pool1D):
    """Maximum over ``pool_size`` steps of ``(batch, steps, channels)`` inputs."""

    _op = "max_pool1d"


class AveragePooling1D(_Pool1D):
    """Mean over ``pool_size`` steps of ``(batch, steps, channels)`` inputs."""

    _op = "avg_pool1d"


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D


class _GlobalPool1D(_GlobalPool2D):
    _ndim = 3

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        if self.data_format != "channels_last":
            raise ValueError(f"{type(self).__name__} layer '{self.name}': a mask needs "
                             "channels_last inputs")
        keep = _sh.expand_dims(_core.cast(mask, inputs._value.dtype), -1)   # [B, T, 1]
        return self._masked(inputs, keep)


class GlobalAveragePooling1D(_GlobalPool1D):
    """The mean over the steps of ``(batch, steps, channels)`` inputs (with a mask: over the
    unmasked steps)."""

    _reduce = "reduce_mean"

    def _masked(self, x, keep):
        from .ops.reduce import reduce_sum
        total = reduce_sum(x * keep, axis=1, keepdims=self.keepdims)
        return total / _m.maximum(reduce_sum(keep, axis=1, keepdims=self.keepdims), 1.0)


class GlobalMaxPooling1D(_GlobalPool1D):
    """The maximum over the steps of ``(batch, steps, channels)`` inputs (with a mask: over
    the unmasked steps)."""

    _reduce = "reduce_max"

    def _masked(self, x, keep):
        from .ops.reduce import reduce_max
        # masked steps pushed to the lowest finite value, so they never win; a row with
        # every step masked gives 0, not the lowest float
        low = float(np.finfo(x._value.dtype).min)
        top = reduce_max(x * keep + (1.0 - keep) * low, axis=1, keepdims=self.keepdims)
        return top * reduce_max(keep, axis=1, keepdims=self.keepdims)


class Masking(Layer):
    """Mask the time steps whose features all equal ``mask_value``: the output is the input
    with those steps zeroed, and carries the mask ``any(x != mask_value, axis=-1)`` to the
    layers that take one (recurrent layers, pooling, attention, the loss in ``fit``)."""

    supports_masking = True
    _makes_masks = True
    autocast = False

    def __init__(self, mask_value=0.0, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.mask_value = float(mask_value)

    def _keep(self, inputs):
        from .ops.reduce import reduce_any
        return reduce_any(_m.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = self._keep(inputs)
        return inputs * _sh.expand_dims(_core.cast(keep, inputs._value.dtype), -1)

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D


# --- depthwise and separable convolutions -----------------------------------------------------

class DepthwiseConv2D(Layer):
    """Each input channel convolved with ``depth_multiplier`` filters of its own
    (``gt.nn.depthwise_conv2d``): kernel ``depthwise_kernel`` ``(kh, kw, channels,
    depth_multiplier)``, ``channels * depth_multiplier`` outputs."""

    _REGULARIZABLE = {"depthwise": "depthwise_kernel", "bias": "bias"}
    _ACTIVITY_IN_CONFIG = True
    _FOREIGN_CONFIG_KEYS = {"groups": 1}            # (tf.keras 2's configs hold it)

    _INITIALIZER_ARGS = {"depthwise_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        self.data_format = _data_format(data_format, who)
        self.kernel_size = _pair(kernel_size, "kernel_size", who)
        self.strides = _pair(strides, "strides", who)
        self.padding = _padding(padding, who)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", who)
        self.depth_multiplier = _positive_int(depth_multiplier, "depth_multiplier", who)
        if min(self.kernel_size + self.strides + self.dilation_rate) <= 0:
            raise ValueError(f"{who}: kernel_size, strides and dilation_rate must be positive")
        _kernel_options(self, activation, use_bias, depthwise_initializer, bias_initializer)
        self.input_spec = InputSpec(ndim=4)

    def _depthwise(self, in_ch):
        return self.add_weight("depthwise_kernel",
                               self.kernel_size + (in_ch, self.depth_multiplier),
                               self.kernel_initializer)

    def build(self, input_shape):
        axis = _channel_axis(self.data_format)
        in_ch = int(input_shape[axis])
        self.depthwise_kernel = self._depthwise(in_ch)
        self.bias = self.add_weight("bias", (in_ch * self.depth_multiplier,),
                                    self.bias_initializer) if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={axis: in_ch})

    def call(self, inputs):
        from . import nn
        x = _channels_to_last(inputs, self.data_format)
        y = nn.depthwise_conv2d(x, self.depthwise_kernel, self.strides,
                                self.padding.upper(), dilations=self.dilation_rate)
        return _channels_back(_bias_activation(self, y), self.data_format)

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "depth_multiplier": self.depth_multiplier, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": _activation_name(self.activation), "use_bias": self.use_bias}


class SeparableConv2D(DepthwiseConv2D):
    """A depthwise convolution then a 1x1 convolution to ``filters`` channels
    (``gt.nn.separable_conv2d``): weights ``depthwise_kernel`` ``(kh, kw, channels,
    depth_multiplier)``, ``pointwise_kernel`` ``(1, 1, channels * depth_multiplier, filters)``,
    ``bias`` ``(filters,)``."""

    _REGULARIZABLE = {"depthwise": "depthwise_kernel", "pointwise": "pointwise_kernel",
                      "bias": "bias"}

    _INITIALIZER_ARGS = {"depthwise_initializer": "kernel_initializer",
                         "pointwise_initializer": "pointwise_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", name=None, **kwargs):
        super().__init__(kernel_size, strides=strides, padding=padding,
                         depth_multiplier=depth_multiplier, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         depthwise_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, name=name, **kwargs)
        self.filters = _positive_int(filters, "filters", "SeparableConv2D")
        self.pointwise_initializer = _init.get(pointwise_initializer)

    def build(self, input_shape):
        axis = _channel_axis(self.data_format)
        in_ch = int(input_shape[axis])
        self.depthwise_kernel = self._depthwise(in_ch)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, 1, in_ch * self.depth_multiplier, self.filters),
            self.pointwise_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={axis: in_ch})

    def call(self, inputs):
        from . import nn
        x = _channels_to_last(inputs, self.data_format)
        y = nn.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel,
                                self.strides, self.padding.upper(),
                                dilations=self.dilation_rate)
        return _channels_back(_bias_activation(self, y), self.data_format)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters}


class _OneD:
    """The 1-D forms of the depthwise and separable convolutions, over ``(batch, steps,
    channels)`` inputs (``(batch, channels, steps)`` with ``data_format="channels_first"``):
    Keras' 1-D kernels (no height axis), run as the 2-D convolution of a one-row image."""

    @staticmethod
    def _one_d(value, what, who):
        return (1, _one(value, what, who))

    def _depthwise(self, in_ch):
        return self.add_weight("depthwise_kernel",
                               self.kernel_size[1:] + (in_ch, self.depth_multiplier),
                               self.kernel_initializer)

    def _conv2d(self, x):
        raise NotImplementedError

    def call(self, inputs):
        x = _sh.expand_dims(_channels_to_last(inputs, self.data_format), 1)
        y = _sh.squeeze(self._conv2d(x), [1])
        return _channels_back(_bias_activation(self, y), self.data_format)

    def get_config(self):
        config = super().get_config()
        config.update(kernel_size=self.kernel_size[1:], strides=self.strides[1:],
                      dilation_rate=self.dilation_rate[1:])
        return config


class DepthwiseConv1D(_OneD, DepthwiseConv2D):
    """Each input channel of ``(batch, steps, channels)`` inputs convolved with
    ``depth_multiplier`` filters of its own: kernel ``depthwise_kernel`` ``(kernel_size,
    channels, depth_multiplier)``, ``channels * depth_multiplier`` outputs, as Keras."""

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 **kwargs):
        who = "DepthwiseConv1D"
        super().__init__(self._one_d(kernel_size, "kernel_size", who),
                         strides=self._one_d(strides, "strides", who), padding=padding,
                         depth_multiplier=depth_multiplier, data_format=data_format,
                         dilation_rate=self._one_d(dilation_rate, "dilation_rate", who),
                         activation=activation, use_bias=use_bias,
                         depthwise_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, name=name, **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        super().build(input_shape)
        self.input_spec = InputSpec(ndim=3, axes=self.input_spec.axes)

    def _conv2d(self, x):
        from . import nn
        return nn.depthwise_conv2d(x, _sh.expand_dims(self.depthwise_kernel, 0), self.strides,
                                   self.padding.upper(), dilations=self.dilation_rate)


class SeparableConv1D(_OneD, SeparableConv2D):
    """A depthwise convolution then a pointwise one to ``filters`` channels over
    ``(batch, steps, channels)`` inputs, as Keras: weights ``depthwise_kernel``
    ``(kernel_size, channels, depth_multiplier)``, ``pointwise_kernel`` ``(1, channels *
    depth_multiplier, filters)``, ``bias`` ``(filters,)``."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", name=None, **kwargs):
        who = "SeparableConv1D"
        super().__init__(filters, self._one_d(kernel_size, "kernel_size", who),
                         strides=self._one_d(strides, "strides", who), padding=padding,
                         data_format=data_format,
                         dilation_rate=self._one_d(dilation_rate, "dilation_rate", who),
                         depth_multiplier=depth_multiplier, activation=activation,
                         use_bias=use_bias, depthwise_initializer=depthwise_initializer,
                         pointwise_initializer=pointwise_initializer,
                         bias_initializer=bias_initializer, name=name, **kwargs)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        axis = _channel_axis(self.data_format)
        in_ch = int(input_shape[axis])
        self.depthwise_kernel = self._depthwise(in_ch)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, in_ch * self.depth_multiplier, self.filters),
            self.pointwise_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=3, axes={axis: in_ch})

    def _conv2d(self, x):
        from . import nn
        return nn.separable_conv2d(x, _sh.expand_dims(self.depthwise_kernel, 0),
                                   _sh.expand_dims(self.pointwise_kernel, 0), self.strides,
                                   self.padding.upper(), dilations=self.dilation_rate)


# --- noise ------------------------------------------------------------------------------------

class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one draw per example and channel (the last axis, or
    axis 1 with ``data_format="channels_first"``); the identity at inference."""

    _ndim = None
    _has_data_format = True

    def __init__(self, rate, data_format=None, seed=None, name=None, **kwargs):
        super().__init__(rate, seed=seed, name=name, **kwargs)
        self.data_format = _data_format(data_format, type(self).__name__)
        self.input_spec = InputSpec(ndim=self._ndim)

    def _noise_shape(self, inputs):
        shape = inputs._value.shape
        if self.data_format == "channels_first":
            return (shape[0], shape[1]) + (1,) * (len(shape) - 2)
        return (shape[0],) + (1,) * (len(shape) - 2) + (shape[-1],)

    def get_config(self):
        config = super().get_config()
        for key in ("noise_shape", "trainable"):     # (not arguments of Keras' layers)
            config.pop(key, None)
        if self._has_data_format:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Dropout of whole channels of ``(batch, steps, channels)`` inputs."""

    _ndim = 3
    _has_data_format = False


class SpatialDropout2D(_SpatialDropout):
    """Dropout of whole channels of NHWC inputs (NCHW with
    ``data_format="channels_first"``)."""

    _ndim = 4


class SpatialDropout3D(_SpatialDropout):
    """Dropout of whole channels of ``(batch, d1, d2, d3, channels)`` inputs (channels
    first with ``data_format="channels_first"``)."""

    _ndim = 5


class GaussianDropout(Layer):
    """Multiply by normal noise of mean 1 and standard deviation ``sqrt(rate / (1 -
    rate))`` when training; the identity otherwise."""

    supports_masking = True

    autocast = False

    def __init__(self, rate, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"GaussianDropout: rate must be a float in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.seed = seed

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        from . import random
        std = (self.rate / (1.0 - self.rate)) ** 0.5
        shape, dtype = tuple(inputs._value.shape), inputs._value.dtype
        gen = self._seeded_generator(inputs._device)
        noise = (gen.normal(shape, mean=1.0, stddev=std, dtype=dtype) if gen is not None
                 else random.normal(shape, mean=1.0, stddev=std, dtype=dtype))
        return inputs * noise

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class AlphaDropout(Layer):
    """Dropout that keeps the mean and variance of SELU activations, as Keras': when
    training, dropped values are set to ``-scale * alpha`` of SELU and the result is
    ``a * x + b`` with ``a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5`` and
    ``b = -a * alpha_p * rate``; the identity otherwise. ``noise_shape``: the shape of the
    drop pattern (``None`` entries take the input's size)."""

    supports_masking = True

    autocast = False

    def __init__(self, rate, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"AlphaDropout: rate must be a float in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        from . import random
        shape = tuple(inputs._value.shape)
        if self.noise_shape is not None:
            if len(self.noise_shape) != len(shape):
                raise ValueError(f"AlphaDropout layer '{self.name}': noise_shape "
                                 f"{self.noise_shape} does not match inputs of shape {shape}")
            shape = tuple(s if d is None else int(d) for d, s in zip(self.noise_shape, shape))
        dtype = inputs._value.dtype
        gen = self._seeded_generator(inputs._device)
        u = gen.uniform(shape, dtype=dtype) if gen is not None else random.uniform(
            shape, dtype=dtype)
        kept = _core.cast(_m.greater_equal(u, self.rate), dtype)
        alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        x = inputs * kept + alpha_p * (1.0 - kept)
        return a * x + b

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class ActivityRegularization(Layer):
    """The identity, adding ``l1 * sum(|x|) + l2 * sum(x ** 2)`` of its output (divided by
    the batch size, as every activity regularizer) to :attr:`losses`."""

    supports_masking = True

    def __init__(self, l1=0.0, l2=0.0, name=None, **kwargs):
        if "activity_regularizer" in kwargs:
            raise TypeError("ActivityRegularization: give l1= and l2=, not "
                            "activity_regularizer=")
        from .regularizers import L1L2
        super().__init__(name=name, activity_regularizer=L1L2(l1=l1, l2=l2), **kwargs)
        self.l1 = float(l1)
        self.l2 = float(l2)

    def call(self, inputs):
        return inputs

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return {**config, "l1": self.l1, "l2": self.l2}


# --- preprocessing and plumbing ----------------------------------------------------------------

class Normalization(Layer):
    """``(x - mean) / sqrt(variance)`` per feature along ``axis`` (``invert=True``: the
    inverse), with the statistics given or learned by :meth:`adapt` from data, as Keras'
    ``Normalization``. Learned ones are non-trainable weights ``mean`` and ``variance``;
    given ones are constants (the layer has no weights, as Keras 3), their axes lined up from
    the right with the kept axes. The layer passes a mask on."""

    _UNTRACKED = Layer._UNTRACKED | {"_given"}

    supports_masking = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if axis is None:
            self.axis = ()
        else:
            self.axis = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(
                int(a) for a in axis)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither (and "
                             "call adapt)")
        self._given = None if mean is None else (np.asarray(mean, np.float64),
                                                  np.asarray(variance, np.float64))
        self.invert = bool(invert)
        self.mean = None
        self.variance = None

    def _kept(self, ndim):
        kept = []
        for a in self.axis:
            if not -ndim <= a < ndim:
                raise ValueError(f"Normalization layer '{self.name}': axis {a} is out of range "
                                 f"for inputs of rank {ndim}")
            kept.append(a % ndim)
        if 0 in kept:
            raise ValueError(f"Normalization layer '{self.name}': the batch axis cannot be "
                             "kept")
        return sorted(kept)

    def _stat_shape(self, shape):
        kept = self._kept(len(shape))
        return tuple(int(shape[a]) if a in kept else 1 for a in range(len(shape)))[1:]

    def build(self, input_shape):
        shape = self._stat_shape(input_shape)
        if self._given is None:
            self.mean = self.add_weight("mean", shape, "zeros", trainable=False)
            self.variance = self.add_weight("variance", shape, "ones", trainable=False)
            return
        # given statistics are constants, not weights (as Keras 3): their axes line up,
        # from the right, with the kept axes
        kept = self._kept(len(input_shape))
        mean, var = self._given
        if mean.shape != var.shape or mean.ndim > len(kept):
            raise ValueError(f"Normalization layer '{self.name}': mean and variance must have "
                             f"one shape, of at most {len(kept)} axes (axis={self.axis}), "
                             f"got {mean.shape} and {var.shape}")
        full = [1] * len(input_shape)
        for i in range(1, mean.ndim + 1):
            full[kept[-i]] = mean.shape[-i]
        try:
            self.mean, self.variance = (convert_to_tensor(np.broadcast_to(
                v.reshape(full[1:]), shape).astype(self._compute_dtype)) for v in (mean, var))
        except ValueError:
            raise ValueError(f"Normalization layer '{self.name}': mean of shape "
                             f"{mean.shape} and variance of shape {var.shape} do not "
                             f"broadcast to the statistics' shape {shape}") from None

    def adapt(self, data, batch_size=None, steps=None):
        """Set ``mean`` and ``variance`` from ``data`` (an array, a tensor, or a
        ``gt.data.Dataset`` of batches), reduced over every axis but ``axis`` in float64."""
        from .data import Dataset
        if isinstance(data, Dataset):
            batches = (b for i, b in enumerate(data) if steps is None or i < steps)
        else:
            arr = data.numpy() if isinstance(data, Tensor) else np.asarray(data)
            if batch_size is not None:
                step = int(batch_size)
                batches = (arr[i:i + step] for i in range(0, len(arr), step))
            else:
                batches = iter([arr])
        count, mean, m2, shape = 0, None, None, None
        for b in batches:
            b = np.asarray(b.numpy() if isinstance(b, Tensor) else b, np.float64)
            if b.ndim == 1:
                b = b[:, None]
            kept = self._kept(b.ndim)
            axes = tuple(a for a in range(b.ndim) if a not in kept)
            n = int(np.prod([b.shape[a] for a in axes]))
            bm = b.mean(axis=axes, keepdims=True)
            bv = ((b - bm) ** 2).sum(axis=axes, keepdims=True)
            if mean is None:
                count, mean, m2, shape = n, bm, bv, b.shape
                continue
            delta = bm - mean
            total = count + n
            mean = mean + delta * (n / total)
            m2 = m2 + bv + delta ** 2 * (count * n / total)
            count = total
        if mean is None:
            raise ValueError(f"Normalization layer '{self.name}'.adapt: the data is empty")
        if self._given is not None:
            raise ValueError(f"Normalization layer '{self.name}'.adapt: the layer was made "
                             "with mean and variance; make it without them to adapt it")
        if not self.built:
            with _device_scope_of(data):
                self.build(shape)
            self.built = True
        stat = self._stat_shape(shape)
        self.mean.assign(mean.reshape(stat).astype(self._dtype))
        self.variance.assign((m2 / count).reshape(stat).astype(self._dtype))

    def call(self, inputs):
        from .ops.math import maximum, sqrt
        std = maximum(sqrt(self.variance), 1e-7)
        if self.invert:
            return self.mean + inputs * std
        return (inputs - self.mean) / std

    def get_config(self):
        given = self._given
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": None if given is None else given[0].tolist(),
                "variance": None if given is None else given[1].tolist()}


def _device_scope_of(data):
    import contextlib
    from .backend import device_scope
    return device_scope(data._device) if isinstance(data, Tensor) else contextlib.nullcontext()


class Identity(Layer):
    """Returns its input unchanged (a placeholder in a model)."""

    supports_masking = True

    autocast = False

    def call(self, inputs):
        return inputs


class Dot(Layer):
    """The dot product of two batches of vectors or matrices along ``axes`` (one int for
    both, or a pair), as Keras' ``Dot``; ``normalize`` divides by their L2 norms first
    (cosine similarity). Inputs of rank 2 or 3."""

    autocast = False

    def __init__(self, axes, normalize=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        pair = (axes, axes) if isinstance(axes, (int, np.integer)) else tuple(axes)
        if len(pair) != 2:
            raise ValueError(f"Dot: axes must be an int or a pair of ints, got {axes!r}")
        self.axes = tuple(int(a) for a in pair)
        self._axes_arg = int(axes) if isinstance(axes, (int, np.integer)) else self.axes
        self.normalize = bool(normalize)

    def call(self, inputs):
        from .nn import l2_normalize
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"Dot layer '{self.name}': expects a list of two inputs")
        x, y = (t if isinstance(t, Tensor) else convert_to_tensor(t) for t in inputs)
        rx, ry = x._value.ndim, y._value.ndim
        if rx not in (2, 3) or ry not in (2, 3):
            raise ValueError(f"Dot layer '{self.name}': inputs must have rank 2 or 3, got "
                             f"shapes {tuple(x.shape)} and {tuple(y.shape)}")
        ax, ay = (a % r for a, r in zip(self.axes, (rx, ry)))
        if 0 in (ax, ay):
            raise ValueError(f"Dot layer '{self.name}': cannot contract the batch axis")
        if x._value.shape[ax] != y._value.shape[ay]:
            raise ValueError(f"Dot layer '{self.name}': axis {ax} of {tuple(x.shape)} and axis "
                             f"{ay} of {tuple(y.shape)} differ in size")
        if self.normalize:
            x, y = l2_normalize(x, axis=ax), l2_normalize(y, axis=ay)
        # x as [batch, rows, k], y as [batch, k, cols]; then drop the axes added for rank 2
        xm = _sh.expand_dims(x, 1) if rx == 2 else (x if ax == 2 else _sh.transpose(x, [0, 2, 1]))
        ym = _sh.expand_dims(y, 2) if ry == 2 else (y if ay == 1 else _sh.transpose(y, [0, 2, 1]))
        from .ops.linalg import matmul
        out = matmul(xm, ym)
        if rx == 2 and ry == 2:
            return _sh.reshape(out, (-1, 1))
        if rx == 2:
            return _sh.squeeze(out, [1])
        if ry == 2:
            return _sh.squeeze(out, [2])
        return out

    def get_config(self):
        return {**super().get_config(), "axes": self._axes_arg, "normalize": self.normalize}


class Attention(Layer):
    """Dot-product attention (Luong), as Keras' ``Attention``: called on ``[query, value]``
    or ``[query, value, key]`` of shapes ``(batch, Tq, d)`` and ``(batch, Tv, d)``; scores
    ``query @ key^T`` (times a learned scalar with ``use_scale``; ``score_mode="concat"``:
    ``scale * sum(tanh(query + key))``), softmax over ``Tv``, weighted sum of ``value``.
    ``mask=[query_mask, value_mask]`` (booleans), ``use_causal_mask``,
    ``return_attention_scores``; ``dropout`` on the attention weights when training."""

    autocast = False

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Attention: score_mode must be 'dot' or 'concat', got "
                             f"{score_mode!r}")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"Attention: dropout must be in [0, 1), got {dropout!r}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = float(dropout)
        self.seed = seed
        self.scale = None
        self.concat_score_weight = None

    def build(self, input_shape):
        if self.use_scale:
            self.scale = self.add_weight("scale", (), "ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", (), "ones")

    def call(self, inputs, mask=None, training=False, return_attention_scores=False,
             use_causal_mask=False):
        from . import nn
        from .ops.core import cast
        from .ops.math import logical_and
        from .ops.linalg import matmul
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer '{self.name}': call it on [query, "
                             "value] or [query, value, key]")
        inputs = [t if isinstance(t, Tensor) else convert_to_tensor(t) for t in inputs]
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) == 3 else v
        for label, t in (("query", q), ("value", v), ("key", k)):
            if t._value.ndim != 3:
                raise ValueError(f"Attention layer '{self.name}': the {label} must be "
                                 f"(batch, time, dim), got shape {tuple(t.shape)}")
        scores = self._scores(q, k)
        tq, tv = int(q._value.shape[1]), int(v._value.shape[1])
        keep = None
        q_mask = v_mask = None
        if mask is not None:
            if not isinstance(mask, (list, tuple)) or len(mask) not in (2, 3):
                raise ValueError(f"Attention layer '{self.name}': mask must be [query_mask, "
                                 "value_mask]")
            q_mask, v_mask = mask[0], mask[1]
        if v_mask is not None:
            keep = _sh.expand_dims(convert_to_tensor(v_mask, dtype="bool"), 1)   # [B, 1, Tv]
        if use_causal_mask:
            causal = convert_to_tensor(np.tril(np.ones((1, tq, tv), dtype=bool)))
            keep = causal if keep is None else logical_and(keep, causal)
        if keep is not None:
            # as Keras: a large negative score where masked (fully masked rows average)
            big = -1e9 if scores._value.dtype != np.float16 else -6e4
            scores = scores + (1.0 - cast(keep, scores._value.dtype)) * big
        weights = nn.softmax(scores, axis=-1)
        attn = weights
        if training and self.dropout > 0:
            attn = nn.dropout(weights, rate=self.dropout,
                              rng=self._seeded_generator(weights._device))
        out = matmul(attn, v)
        if q_mask is not None:
            out = out * cast(_sh.expand_dims(convert_to_tensor(q_mask, dtype="bool"), -1),
                             out._value.dtype)
        return (out, attn) if return_attention_scores else out

    def _scores(self, q, k):
        """``[batch, Tq, Tv]`` attention scores of the queries against the keys."""
        from .ops.linalg import matmul
        from .ops.math import tanh
        from .ops.reduce import reduce_sum
        if self.score_mode == "dot":
            scores = matmul(q, k, transpose_b=True)
            if self.scale is not None:
                scores = scores * self.scale
            return scores
        s = _sh.expand_dims(q, 2) + _sh.expand_dims(k, 1)
        if self.scale is not None:
            s = s * self.scale
        return self.concat_score_weight * reduce_sum(tanh(s), axis=-1)

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, (list, tuple)) and mask else None

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive (Bahdanau) attention, as Keras' ``AdditiveAttention``: scores
    ``sum(scale * tanh(query[:, :, None] + key[:, None]), axis=-1)`` with a learned ``scale``
    per feature (``use_scale``, initialized ``glorot_uniform``; 1 without it); then as
    :class:`Attention` (masks, ``return_attention_scores``, ``dropout``)."""

    def __init__(self, use_scale=True, dropout=0.0, seed=None, name=None, **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, seed=seed, name=name,
                         **kwargs)

    def build(self, input_shape):
        dim = input_shape[0][-1] if isinstance(input_shape, (list, tuple)) and \
            isinstance(input_shape[0], (list, tuple)) else None
        if dim is None:
            raise ValueError(f"AdditiveAttention layer '{self.name}': call it on [query, "
                             "value] or [query, value, key]")
        if self.use_scale:
            self.scale = self.add_weight("scale", (int(dim),), "glorot_uniform")

    def _scores(self, q, k):
        from .ops.math import tanh
        from .ops.reduce import reduce_sum
        if q._value.shape[-1] != k._value.shape[-1]:
            raise ValueError(f"AdditiveAttention layer '{self.name}': the query has "
                             f"{q._value.shape[-1]} features, the key "
                             f"{k._value.shape[-1]}")
        s = tanh(_sh.expand_dims(q, 2) + _sh.expand_dims(k, 1))
        if self.scale is not None:
            s = s * self.scale
        return reduce_sum(s, axis=-1)

    def get_config(self):
        config = super().get_config()
        del config["score_mode"]
        return config


# --- more normalizations -------------------------------------------------------------------

class GroupNormalization(Layer):
    """Normalize each example over groups of channels (the channel axis, ``axis``, the last
    by default, split into ``groups`` of equal size), then scale by ``gamma`` and shift by
    ``beta`` per channel, as Keras' ``GroupNormalization`` (``groups=1``: layer norm over
    all features; ``groups=channels``: instance norm). It passes a mask on."""

    supports_masking = True
    _REGULARIZABLE = {"gamma": "gamma", "beta": "beta"}
    _INITIALIZER_ARGS = {"beta_initializer": "beta_initializer",
                         "gamma_initializer": "gamma_initializer"}

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.groups = _positive_int(groups, "groups", "GroupNormalization")
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"GroupNormalization: axis must be an int, got {axis!r}")
        self.axis = int(axis)
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = _init.get(beta_initializer)
        self.gamma_initializer = _init.get(gamma_initializer)
        self.input_spec = InputSpec(min_ndim=2)

    def _channel_axis(self, ndim):
        if not -ndim < self.axis < ndim or self.axis % ndim == 0:
            raise ValueError(f"GroupNormalization layer '{self.name}': axis {self.axis} is "
                             f"not a channel axis of inputs of rank {ndim}")
        return self.axis % ndim

    def build(self, input_shape):
        axis = self._channel_axis(len(input_shape))
        c = int(input_shape[axis])
        if c % self.groups:
            raise ValueError(f"GroupNormalization layer '{self.name}': {c} channels do not "
                             f"split into {self.groups} groups")
        self.gamma = self.add_weight("gamma", (c,), self.gamma_initializer) if self.scale \
            else None
        self.beta = self.add_weight("beta", (c,), self.beta_initializer) if self.center \
            else None
        self.input_spec = InputSpec(min_ndim=2, axes={axis: c})

    def call(self, inputs):
        from . import nn
        ndim = inputs._value.ndim
        axis = self._channel_axis(ndim)
        x = inputs
        if axis != ndim - 1:                     # the channels last, then back
            x = _sh.transpose(x, [a for a in range(ndim) if a != axis] + [axis])
        shape = tuple(x._value.shape)
        c = shape[-1]
        g = _sh.reshape(x, shape[:-1] + (self.groups, c // self.groups))
        axes = list(range(1, len(shape) - 1)) + [len(shape)]   # all but batch and group
        mean, variance = nn.moments(g, axes=axes, keepdims=True)
        y = _sh.reshape((g - mean) * _m.rsqrt(variance + self.epsilon), shape)
        if self.gamma is not None:
            y = y * self.gamma
        if self.beta is not None:
            y = y + self.beta
        if axis != ndim - 1:
            order = [a for a in range(ndim) if a != axis] + [axis]
            y = _sh.transpose(y, [order.index(a) for a in range(ndim)])
        return y

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale}


class UnitNormalization(Layer):
    """Each example scaled to unit L2 norm along ``axis``."""

    supports_masking = True

    def __init__(self, axis=-1, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.axis = axis

    def call(self, inputs):
        from .nn import l2_normalize
        return l2_normalize(inputs, axis=self.axis)

    def get_config(self):
        axis = list(self.axis) if isinstance(self.axis, (list, tuple)) else self.axis
        return {**super().get_config(), "axis": axis}


# --- image preprocessing ----------------------------------------------------------------------

def _aspect_box(size, target, other, other_target):
    """Keras' crop or pad box along one axis: ``int(other * target / other_target)`` in
    float32, as Keras computes it."""
    return int(np.float32(other * target) / np.float32(other_target))


def _resize(x, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
            pad_to_aspect_ratio=False, fill_value=0.0, antialias=False):
    """NHWC images resized to ``(height, width)`` (a float result), first cropped to the
    largest centred window of that aspect ratio, or padded with ``fill_value`` on both
    sides to it, when asked (Keras' ``ops.image.resize``)."""
    from . import image
    h, w = x._value.shape[-3], x._value.shape[-2]
    if crop_to_aspect_ratio:
        ch = max(min(h, _aspect_box(h, height, w, width)), 1)
        cw = max(min(w, _aspect_box(w, width, h, height)), 1)
        top, left = int(np.float32(h - ch) / 2), int(np.float32(w - cw) / 2)
        x = x[..., top:top + ch, left:left + cw, :]
    elif pad_to_aspect_ratio:
        ph = max(h, _aspect_box(h, height, w, width))
        pw = max(w, _aspect_box(w, width, h, height))
        top, left = int(np.float32(ph - h) / 2), int(np.float32(pw - w) / 2)
        if top > 0 or left > 0:
            pads = [[0, 0]] * (x._value.ndim - 3) + [[top, top], [left, left], [0, 0]]
            x = _sh.pad(x, pads, constant_values=fill_value)
    return image.resize(x, [height, width], method=interpolation, antialias=antialias)


def _center_crop(x, height, width):
    """The centred ``(height, width)`` window of NHWC images (when an image is smaller, the
    largest centred window of that aspect ratio resized bilinearly, as Keras'
    ``smart_resize``)."""
    h, w = x._value.shape[-3], x._value.shape[-2]
    if h < height or w < width:
        y = _resize(x, height, width, crop_to_aspect_ratio=True)
        return y if y._value.dtype == x._value.dtype else _core.cast(y, x._value.dtype)
    top, left = (h - height) // 2, (w - width) // 2
    return x[..., top:top + height, left:left + width, :]


def _float_input(layer, x):
    """``x`` as a tensor, floats cast to the layer's compute dtype (integer images kept)."""
    if not isinstance(x, Tensor):
        x = convert_to_tensor(x)
    dt = layer._compute_dtype
    if x._value.dtype.kind == "f" and x._value.dtype != dt:
        x = _core.cast(x, dt)
    return x


class Resizing(Layer):
    """Resize images to ``(height, width)`` with ``gt.image.resize`` (``interpolation``:
    ``"bilinear"``, ``"nearest"``, ``"bicubic"``, ``"area"``, ``"lanczos3"``,
    ``"lanczos5"``, ``"gaussian"``, ``"mitchellcubic"``; ``antialias``), as Keras':
    ``crop_to_aspect_ratio`` first crops the largest centred window of the target's aspect
    ratio, ``pad_to_aspect_ratio`` pads both sides with ``fill_value`` to it. NHWC images
    (NCHW with ``data_format="channels_first"``); integer images stay integers (rounded)."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        from .image import _METHODS
        self.height = _positive_int(height, "height", "Resizing")
        self.width = _positive_int(width, "width", "Resizing")
        if interpolation not in _METHODS:
            raise ValueError(f"Resizing: interpolation must be one of {list(_METHODS)}, got "
                             f"{interpolation!r}")
        if fill_mode != "constant":
            raise ValueError(f"Resizing: only fill_mode='constant' is supported, got "
                             f"{fill_mode!r}")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Resizing: give crop_to_aspect_ratio or pad_to_aspect_ratio, "
                             "not both")
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode = fill_mode
        self.fill_value = float(fill_value)
        self.antialias = bool(antialias)
        self.data_format = _data_format(data_format, "Resizing")
        self.input_spec = InputSpec(min_ndim=3)

    def _convert_input(self, x):
        return _float_input(self, x)

    def call(self, inputs):
        first = self.data_format == "channels_first"
        x = inputs
        if first:
            x = _sh.transpose(x, [0, 2, 3, 1] if x._value.ndim == 4 else [1, 2, 0])
        y = _resize(x, self.height, self.width, self.interpolation,
                    self.crop_to_aspect_ratio, self.pad_to_aspect_ratio, self.fill_value,
                    self.antialias)
        dt = inputs._value.dtype
        if y._value.dtype != dt:
            if dt.kind in "iu":                          # rounded, saturated, as Keras
                info = np.iinfo(dt)
                y = _m.minimum(_m.maximum(_m.round(y), float(info.min)), float(info.max))
            y = _core.cast(y, dt)
        if first:
            y = _sh.transpose(y, [0, 3, 1, 2] if y._value.ndim == 4 else [2, 0, 1])
        return y

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias,
                "data_format": self.data_format}


class CenterCrop(Layer):
    """The centred ``(height, width)`` window of images (resized up first when an image is
    smaller, as Keras), in the compute dtype; NHWC images (NCHW with
    ``data_format="channels_first"``)."""

    def __init__(self, height, width, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.height = _positive_int(height, "height", "CenterCrop")
        self.width = _positive_int(width, "width", "CenterCrop")
        self.data_format = _data_format(data_format, "CenterCrop")
        self.input_spec = InputSpec(min_ndim=3)

    def call(self, inputs):
        if self.data_format != "channels_first":
            return _center_crop(inputs, self.height, self.width)
        four = inputs._value.ndim == 4
        x = _sh.transpose(inputs, [0, 2, 3, 1] if four else [1, 2, 0])
        y = _center_crop(x, self.height, self.width)
        return _sh.transpose(y, [0, 3, 1, 2] if four else [2, 0, 1])

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}


class RandomFlip(Layer):
    """When training, mirror each image with probability 1/2: ``"horizontal"``,
    ``"vertical"`` or ``"horizontal_and_vertical"`` (each drawn independently); the identity
    at inference."""

    _MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode="horizontal_and_vertical", seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip: mode must be one of {list(self._MODES)}, got "
                             f"{mode!r}")
        self.mode = mode
        self.seed = seed
        self.input_spec = InputSpec(min_ndim=3)

    def call(self, inputs, training=True):
        if not training:
            return inputs
        from .image import _random_flip, flip_left_right, flip_up_down
        rng = self._seeded_generator(inputs._device)
        x = inputs
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            x = _random_flip(x, None, flip_left_right, "RandomFlip", rng=rng)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            x = _random_flip(x, None, flip_up_down, "RandomFlip", rng=rng)
        return x

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "seed": self.seed}


class RandomCrop(Layer):
    """When training, a random ``(height, width)`` window of each batch of NHWC images (one
    offset per call); at inference the centred window, as Keras."""

    def __init__(self, height, width, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.height = _positive_int(height, "height", "RandomCrop")
        self.width = _positive_int(width, "width", "RandomCrop")
        self.seed = seed
        if seed is not None:
            self._seed_words = [int(seed)]
        else:
            from .random import next_op_seed
            found = next_op_seed()
            self._seed_words = None if found is None else [int(w) for w in found]
        self.input_spec = InputSpec(min_ndim=3)

    _UNTRACKED = Layer._UNTRACKED | {"_seed_words", "_calls"}

    def call(self, inputs, training=True):
        h, w = inputs._value.shape[-3], inputs._value.shape[-2]
        if h < self.height or w < self.width:
            raise ValueError(f"RandomCrop layer '{self.name}': images of {h}x{w} are smaller "
                             f"than the crop {self.height}x{self.width}")
        if not training:
            return _center_crop(inputs, self.height, self.width)
        # the offset is drawn on the host (no device round trip): from the layer's seed (or
        # the global seed) and the call count, else fresh entropy
        calls = self.__dict__.get("_calls", 0)
        self._calls = calls + 1
        words = self._seed_words
        rng = np.random.default_rng(None if words is None else words + [calls])
        top = int(rng.integers(0, h - self.height + 1))
        left = int(rng.integers(0, w - self.width + 1))
        return inputs[..., top:top + self.height, left:left + self.width, :]

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "seed": self.seed}
