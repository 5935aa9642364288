"""More of Keras 3's layers: ``EinsumDense``, ``RMSNormalization``, the adaptive poolings,
``Wrapper`` and ``SpectralNormalization``, ``ThresholdedReLU``, ``ReversibleEmbedding``.

Each follows Keras 3.15 (weights, their shapes and order, ``get_config`` keys, errors) so a
model written for ``tf.keras`` builds, trains and saves the same way here.
"""
from __future__ import annotations

import re

import numpy as np

from . import initializers as _init
from .layers import (Embedding, InputSpec, Layer, _activation_name, _bias_activation,
                     _kernel_options, _LoRA, _lora_property, _no_quantization, _positive_int)

__all__ = ["EinsumDense", "RMSNormalization", "AdaptiveAveragePooling1D",
           "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D", "AdaptiveMaxPooling1D",
           "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D", "Wrapper", "SpectralNormalization",
           "ThresholdedReLU", "ReversibleEmbedding"]


# --- EinsumDense ------------------------------------------------------------------------------

def _einsum_parts(equation):
    """``(input spec, weight spec, output spec, elided)`` of an EinsumDense equation:
    ``elided`` is None (no ellipsis), ``"left"`` (``...ab,bc->...ac``) or ``"right"``
    (``ab...,bc->ac...``), the three forms Keras accepts."""
    if not isinstance(equation, str):
        raise TypeError(f"EinsumDense: equation must be a string, got {equation!r}")
    text = equation.replace(" ", "").replace("...", "0")
    for pattern, elided in (("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", None),
                            ("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)", "left"),
                            ("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0", "right")):
        m = re.fullmatch(pattern, text)
        if m:
            return m.group(1), m.group(2), m.group(3), elided
    raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form "
                     "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")


def _einsum_shapes(equation, bias_axes, input_shape, partial_output_shape):
    """Keras' analysis of an EinsumDense equation for ``input_shape``: ``(kernel shape,
    bias shape or None, full output shape, the kernel's input axes, its output axes)``."""
    in_spec, w_spec, out_spec, side = _einsum_parts(equation)
    input_shape = tuple(None if d is None else int(d) for d in input_shape)
    left = side == "left"
    elided = len(input_shape) - len(in_spec)
    if elided < 0 or (elided and side is None):
        raise ValueError(f"EinsumDense: the equation '{equation}' names {len(in_spec)} input "
                         f"axes, the input has shape {input_shape}")
    output = [input_shape[0]] + list(partial_output_shape)
    if elided and left:
        for i in range(1, elided):
            output.insert(1, input_shape[i])
    elif elided:
        output.extend(input_shape[len(input_shape) - elided:])
    if left:
        in_map = {d: i + elided - len(input_shape) for i, d in enumerate(in_spec)}
        out_map = {d: i + elided for i, d in enumerate(out_spec)}
    else:
        in_map = {d: i for i, d in enumerate(in_spec)}
        out_map = {d: i for i, d in enumerate(out_spec)}
    for d in in_spec:
        if d in out_map:
            size_in, size_out = input_shape[in_map[d]], output[out_map[d]]
            if size_out is not None and size_out != size_in:
                raise ValueError(f"Input shape and output shape do not match at shared "
                                 f"dimension '{d}'. Input shape is {size_in}, and output "
                                 f"shape is {size_out}.")
    for d in out_spec:
        if d not in in_spec and d not in w_spec:
            raise ValueError(f"Dimension '{d}' was specified in the output '{out_spec}' but "
                             f"has no corresponding dim in the input spec '{in_spec}' or "
                             f"weight spec '{w_spec}'")
    kernel, in_axes, out_axes = [], [], []
    for i, d in enumerate(w_spec):
        if d in out_map:
            kernel.append(output[out_map[d]])
            out_axes.append(i)
        elif d in in_map:
            kernel.append(input_shape[in_map[d]])
            in_axes.append(i)
        else:
            raise ValueError(f"Weight dimension '{d}' did not have a match in either the input "
                             f"spec '{in_spec}' or the output spec '{out_spec}'. For this "
                             "layer, the weight must be fully specified.")
    bias = None
    if bias_axes is not None:
        for ch in bias_axes:
            if ch not in out_spec:
                raise ValueError(f"Bias dimension '{ch}' was requested, but is not part of "
                                 f"the output spec '{out_spec}'")
        shift = elided if left else 0
        sizes = {ch: output[i + shift] for i, ch in enumerate(out_spec)}
        first = min(out_spec.find(ch) for ch in bias_axes)
        bias = [sizes[ch] if ch in bias_axes else 1 for ch in out_spec[first:]]
        if not left:
            bias.extend([1] * elided)
    return kernel, bias, output, in_axes, out_axes


class EinsumDense(_LoRA, Layer):
    """A dense layer whose contraction is an einsum ``equation`` between the input and the
    kernel, as ``keras.layers.EinsumDense``: ``"ab,bc->ac"`` is ``Dense``; ``"abc,cde->abde"``
    projects each position to ``[heads, dim]``; ``...`` stands for any leading
    (``"...x,xy->...y"``) or trailing (``"ab...,bc->ac..."``) axes. ``output_shape`` gives the
    output's sizes after the batch axis and without the elided ones (None: the input's);
    ``bias_axes`` names the output letters the bias spans (broadcast over the axes after the
    first of them that it does not name). A VarianceScaling kernel initializer (the default
    GlorotUniform) takes its fans from the kernel's input and output axes, as Keras.
    ``lora_rank`` (with ``lora_alpha``) or ``enable_lora`` adapts the kernel with LoRA, as
    Keras 3: ``A`` has the kernel's shape with its last axis ``rank``, ``B`` is ``(rank,
    kernel.shape[-1])``."""

    supports_masking = False
    _UNTRACKED = Layer._UNTRACKED | {"_lora_regularizer"}
    kernel = _lora_property("kernel")
    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}
    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 lora_rank=None, lora_alpha=None, quantization_config=None, **kwargs):
        _no_quantization("EinsumDense", quantization_config)
        super().__init__(name=name, **kwargs)
        _einsum_parts(equation)
        self.equation = equation
        if isinstance(output_shape, (int, np.integer)) and not isinstance(output_shape, bool):
            output_shape = (int(output_shape),)
        try:
            output_shape = tuple(None if d is None else _positive_int(d, "output_shape",
                                                                      "EinsumDense")
                                 for d in output_shape)
        except TypeError:
            raise TypeError(f"EinsumDense: output_shape must be an int or a tuple of ints "
                            f"and None, got {output_shape!r}") from None
        self.partial_output_shape = output_shape
        if bias_axes is not None and not isinstance(bias_axes, str):
            raise TypeError(f"EinsumDense: bias_axes must be a string of output letters, got "
                            f"{bias_axes!r}")
        self.bias_axes = bias_axes
        _kernel_options(self, activation, True, kernel_initializer, bias_initializer)
        self.kernel = self.bias = None
        self.full_output_shape = None
        self._lora_setup(lora_rank, lora_alpha)

    def build(self, input_shape):
        kernel_shape, bias_shape, full, in_axes, out_axes = _einsum_shapes(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        if any(d is None for d in kernel_shape):
            raise ValueError(f"EinsumDense layer '{self.name}': the kernel shape {kernel_shape} "
                             f"has an unknown size (input shape {tuple(input_shape)}, "
                             f"output_shape {self.partial_output_shape})")
        self.full_output_shape = tuple(full)
        self.input_spec = InputSpec(ndim=len(input_shape))
        init = self.kernel_initializer
        if isinstance(init, _init.VarianceScaling) and (init.input_axes is None
                                                        or init.output_axes is None):
            config = dict(init.get_config(), input_axes=in_axes, output_axes=out_axes)
            init = type(init).from_config(config)
        self.kernel = self.add_weight("kernel", tuple(kernel_shape), init)
        self.bias = self.add_weight("bias", tuple(bias_shape), self.bias_initializer) \
            if bias_shape is not None else None
        if self.lora_rank:
            self.built = True
            self.enable_lora(self.lora_rank, lora_alpha=self.lora_alpha)

    def compute_output_shape(self, input_shape):
        return tuple(_einsum_shapes(self.equation, self.bias_axes, input_shape,
                                    self.partial_output_shape)[2])

    def call(self, inputs):
        from .ops.linalg import einsum
        return _bias_activation(self, einsum(self.equation, inputs, self.kernel))

    def get_config(self):
        shape = self.partial_output_shape
        return self._lora_config({**super().get_config(), "output_shape": shape,
                                  "equation": self.equation,
                                  "activation": _activation_name(self.activation),
                                  "bias_axes": self.bias_axes})


# --- RMSNormalization -------------------------------------------------------------------------

class RMSNormalization(Layer):
    """``x * rsqrt(mean(x**2 over axis) + epsilon) * scale``, as
    ``keras.layers.RMSNormalization`` (``axis`` an int or a list; ``scale`` has the sizes
    of those axes, initialised to ones; statistics in float32 at least)."""

    supports_masking = True

    def __init__(self, axis=-1, epsilon=1e-6, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(axis, (list, tuple)):
            axis = [int(a) for a in axis]
        elif isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"RMSNormalization: axis must be an int or a list of ints, got "
                            f"{axis!r}")
        else:
            axis = int(axis)
        self.axis = axis
        self.epsilon = float(epsilon)
        self.scale = None

    def build(self, input_shape):
        rank = len(input_shape)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(f"RMSNormalization layer '{self.name}': axis {a} is out of "
                                 f"range for inputs of rank {rank}")
        if isinstance(self.axis, list):
            self.axis = sorted(self.axis)
            axes = self.axis
        else:
            self.axis = [self.axis]
        self.scale = self.add_weight("scale", tuple(int(input_shape[a]) for a in axes), "ones")

    def call(self, inputs):
        from .keras_ops import rms_normalization
        return rms_normalization(inputs, scale=self.scale, axis=self.axis,
                                 epsilon=self.epsilon)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}


# --- adaptive pooling -------------------------------------------------------------------------

class _AdaptivePooling(Layer):
    """Pooling to a fixed ``output_size`` whatever the input size (window ``i`` of an axis of
    length ``n`` covers ``[floor(i n / out), ceil((i + 1) n / out))``), as Keras 3's
    adaptive pooling layers."""

    _RANK = 1
    _MAX = False

    def __init__(self, output_size, data_format=None, name=None, **kwargs):
        who = type(self).__name__
        rank = self._RANK
        if isinstance(output_size, (int, np.integer)) and not isinstance(output_size, bool):
            size = (int(output_size),) * rank
        elif isinstance(output_size, (tuple, list)) and len(output_size) == rank:
            size = tuple(output_size)
        else:
            what = {1: "an integer or a single-element tuple", 2: "an integer or "
                    "(height, width) tuple", 3: "an integer or (depth, height, width) tuple"}
            raise TypeError(f"`output_size` must be {what[rank]}. Received: {output_size} of "
                            f"type {type(output_size)}")
        super().__init__(name=name, **kwargs)
        for d in size:
            _positive_int(d, "output_size", who)
        self.output_size = tuple(int(d) for d in size)
        data_format = data_format or "channels_last"
        if data_format not in ("channels_first", "channels_last"):
            raise ValueError(f"Invalid data_format: {data_format}. Expected 'channels_first' "
                             "or 'channels_last'.")
        self.data_format = data_format
        self.input_spec = InputSpec(ndim=rank + 2)

    def call(self, inputs):
        from .keras_ops import adaptive_average_pool, adaptive_max_pool
        fn = adaptive_max_pool if self._MAX else adaptive_average_pool
        return fn(inputs, output_size=self.output_size, data_format=self.data_format)

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_last":
            return (input_shape[0],) + self.output_size + (input_shape[-1],)
        return (input_shape[0], input_shape[1]) + self.output_size

    def get_config(self):
        return {**super().get_config(), "output_size": self.output_size,
                "data_format": self.data_format}


class AdaptiveAveragePooling1D(_AdaptivePooling):
    """Average pooling of ``(batch, steps, channels)`` inputs to ``output_size`` steps."""
    _RANK, _MAX = 1, False


class AdaptiveAveragePooling2D(_AdaptivePooling):
    """Average pooling of images to ``output_size`` (an int or ``(height, width)``)."""
    _RANK, _MAX = 2, False


class AdaptiveAveragePooling3D(_AdaptivePooling):
    """Average pooling of volumes to ``output_size`` (an int or ``(depth, height, width)``)."""
    _RANK, _MAX = 3, False


class AdaptiveMaxPooling1D(_AdaptivePooling):
    """Max pooling of ``(batch, steps, channels)`` inputs to ``output_size`` steps."""
    _RANK, _MAX = 1, True


class AdaptiveMaxPooling2D(_AdaptivePooling):
    """Max pooling of images to ``output_size`` (an int or ``(height, width)``)."""
    _RANK, _MAX = 2, True


class AdaptiveMaxPooling3D(_AdaptivePooling):
    """Max pooling of volumes to ``output_size`` (an int or ``(depth, height, width)``)."""
    _RANK, _MAX = 3, True


# --- wrappers ---------------------------------------------------------------------------------

class Wrapper(Layer):
    """A layer that holds another one, ``layer``, as ``keras.layers.Wrapper``: it builds the
    inner layer with its own input shape, and its config holds the inner layer's."""

    def __init__(self, layer, name=None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Layer {layer} supplied to Wrapper isn't a supported layer type. "
                             "Please ensure wrapped layer is a valid Keras layer.")
        super().__init__(name=name, **kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True

    def get_config(self):
        from .saving import serialize_layer
        return {**super().get_config(), "layer": serialize_layer(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from .saving import deserialize_layer
        config = dict(config)
        return cls(deserialize_layer(config.pop("layer")), **config)


class SpectralNormalization(Wrapper):
    """Spectral normalisation of the wrapped layer's ``kernel`` (or ``embeddings``), as
    ``keras.layers.SpectralNormalization``: while training, ``power_iterations`` steps of
    the power method on the kernel (reshaped to ``[-1, last axis]``) refine the estimate
    ``vector_u`` of its top singular vector, and the kernel is divided in place by the
    estimated spectral norm before the inner layer runs (an all-zero kernel is left alone).
    In inference the kernel is used as it is."""

    def __init__(self, layer, power_iterations=1, name=None, **kwargs):
        super().__init__(layer, name=name, **kwargs)
        if isinstance(power_iterations, bool) or not isinstance(
                power_iterations, (int, np.integer)) or power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             f"`power_iterations={power_iterations}`")
        self.power_iterations = int(power_iterations)
        self.vector_u = None

    def build(self, input_shape):
        super().build(input_shape)
        self.input_spec = InputSpec(min_ndim=1, axes={-1: input_shape[-1]})
        kernel = getattr(self.layer, "kernel", None)
        if kernel is None:
            kernel = getattr(self.layer, "embeddings", None)
        if kernel is None:
            raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' "
                             "nor 'embeddings'")
        # (held here too, as Keras: the kernel counts among this layer's own weights, so
        # ``weights`` is kernel, vector_u, then the inner layer's others)
        self.kernel = kernel
        self.kernel_shape = tuple(kernel.shape)
        self.vector_u = self.add_weight("vector_u", (1, self.kernel_shape[-1]),
                                        _init.TruncatedNormal(stddev=0.02), trainable=False,
                                        dtype=kernel.dtype)

    _UNTRACKED = Layer._UNTRACKED | {"kernel_shape"}

    def normalized_weights(self):
        """``(new vector_u, the kernel divided by its estimated spectral norm)``."""
        from .ops import linalg as _la, shape as _sh
        from .ops.core import stop_gradient
        from .nn import l2_normalize
        kernel = self.kernel
        w = _sh.reshape(kernel, (-1, self.kernel_shape[-1]))
        u = self.vector_u
        v = None
        for _ in range(self.power_iterations):
            v = l2_normalize(_la.matmul(u, w, transpose_b=True), axis=None)
            u = l2_normalize(_la.matmul(v, w), axis=None)
        u, v = stop_gradient(u), stop_gradient(v)
        sigma = _la.matmul(_la.matmul(v, w), u, transpose_b=True)
        return u, _sh.reshape(kernel / sigma, self.kernel_shape)

    def call(self, inputs, training=False):
        from .ops.core import cast
        from .ops.math import equal, where
        from .ops.reduce import reduce_all
        if training:
            # (an all-zero kernel keeps its value and vector_u: chosen on the device, no
            # host read)
            kernel = self.kernel
            zero = reduce_all(equal(kernel, 0.0))
            u, new_kernel = self.normalized_weights()
            self.vector_u.assign(where(zero, self.vector_u, u))
            kernel.assign(where(zero, kernel, new_kernel))
        out = self.layer(inputs)
        return cast(out, inputs.dtype) if out.dtype != inputs.dtype else out

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def get_config(self):
        return {**super().get_config(), "power_iterations": self.power_iterations}


# --- ThresholdedReLU --------------------------------------------------------------------------

class ThresholdedReLU(Layer):
    """``x`` where ``x > theta``, else 0, as tf.keras' ``ThresholdedReLU`` (``theta`` >= 0,
    default 1.0)."""

    supports_masking = True

    def __init__(self, theta=1.0, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if theta is None:
            raise ValueError("Theta of a Thresholded ReLU layer cannot be None, expecting a "
                             f"float. Received: {theta}")
        if theta < 0:
            raise ValueError("The theta value of a Thresholded ReLU layer should be >=0. "
                             f"Received: {theta}")
        self.theta = float(theta)

    def call(self, inputs):
        from .ops.core import cast
        from .ops.math import greater
        return inputs * cast(greater(inputs, self.theta), inputs.dtype)

    def get_config(self):
        return {**super().get_config(), "theta": self.theta}


# --- ReversibleEmbedding ----------------------------------------------------------------------

class ReversibleEmbedding(Embedding):
    """An :class:`Embedding` that also projects back to the vocabulary
    (``keras.layers.ReversibleEmbedding``): ``layer(ids)`` embeds, ``layer(h, reverse=True)``
    gives the logits ``h @ embeddings^T`` (with ``tie_weights=False``, ``h @
    reverse_embeddings``, a separate ``(output_dim, input_dim)`` weight). ``reverse_dtype``
    casts both operands of the projection; ``logit_soft_cap`` bounds the logits as
    ``tanh(logits / cap) * cap``. The mask (``mask_zero``) is the forward call's only."""

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 reverse_dtype=None, logit_soft_cap=None, **kwargs):
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         embeddings_regularizer=embeddings_regularizer,
                         embeddings_constraint=embeddings_constraint, mask_zero=mask_zero,
                         **kwargs)
        self.tie_weights = bool(tie_weights)
        self.reverse_dtype = reverse_dtype
        if logit_soft_cap is not None and not float(logit_soft_cap) > 0:
            raise ValueError(f"ReversibleEmbedding: logit_soft_cap must be positive, got "
                             f"{logit_soft_cap!r}")
        self.logit_soft_cap = logit_soft_cap
        self.input_spec = None              # ids forward, float hidden states in reverse

    def build(self, input_shape=None):
        super().build(input_shape)
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight(
                "reverse_embeddings", (self.output_dim, self.input_dim),
                self.embeddings_initializer)

    def _convert_input(self, x):
        from .tensor import Tensor, convert_to_tensor
        t = x if isinstance(x, Tensor) else convert_to_tensor(x)
        return t if t._value.dtype.kind == "f" else super()._convert_input(t)

    def call(self, inputs, reverse=False):
        from . import math as _math
        from .ops import core as _core
        from .ops import linalg as _la
        from .ops import shape as _sh
        if not reverse:
            ids = super()._convert_input(inputs)
            out = super().call(ids)
            if self.mask_zero:
                from .layers import _attach_masks
                _attach_masks(out, Embedding.compute_mask(self, ids))
            return out
        if inputs._value.dtype.kind != "f":
            raise TypeError(f"ReversibleEmbedding layer '{self.name}': reverse=True takes "
                            f"float hidden states, got {inputs._value.dtype.name}")
        if inputs.shape[-1] != self.output_dim:
            raise ValueError(f"ReversibleEmbedding layer '{self.name}': reverse=True takes "
                             f"inputs whose last axis is output_dim={self.output_dim}, got "
                             f"shape {tuple(inputs.shape)}")
        kernel = (_sh.transpose(self.embeddings) if self.tie_weights
                  else self.reverse_embeddings)
        kernel = _core.cast(kernel, inputs.dtype) if kernel.dtype != inputs.dtype else kernel
        if self.reverse_dtype is not None:
            inputs = _core.cast(inputs, self.reverse_dtype)
            kernel = _core.cast(kernel, self.reverse_dtype)
        logits = _la.matmul(inputs, kernel)
        if self.logit_soft_cap is not None:
            cap = float(self.logit_soft_cap)
            logits = _math.tanh(logits / cap) * cap
        return logits

    def compute_mask(self, inputs, mask=None):
        return None                         # (the forward call attaches its own, as Keras)

    def compute_output_shape(self, input_shape, reverse=False):
        shape = list(input_shape)
        if reverse:
            shape[-1] = self.input_dim
            return tuple(shape)
        return tuple(shape) + (self.output_dim,)

    def get_config(self):
        return {**super().get_config(), "tie_weights": self.tie_weights,
                "reverse_dtype": self.reverse_dtype, "logit_soft_cap": self.logit_soft_cap}
