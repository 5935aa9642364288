"""Keras-style layers and models (``gt.layers``, also ``gt.keras.layers``).

    model = gt.keras.Sequential([
        gt.layers.Dense(64, activation="relu"),
        gt.layers.Dense(10),
    ])
    logits = model(x)                         # builds the weights on the first call
    model.trainable_variables                 # [kernel, bias, kernel, bias]

:class:`Module` finds the Variables held in its attributes, including inside lists, tuples,
dicts and sub-modules, at any depth; each Variable is listed once, under the first path that
reaches it (``layers.0.kernel``). Those paths name the weights in checkpoints
(:meth:`Module.save_weights`). :class:`Layer` adds ``__call__(inputs, training=None)``: the
input is converted to the layer's dtype, checked against the layer's input specification
(rank and, once built, the sizes of the axes the weights depend on), the weights are built
on the first call on the input's device, and :meth:`Layer.call` runs. A wrong input raises
an error naming the layer and the expected and given shapes, and changes nothing.
``training=None`` inherits the value of the enclosing layer call (``False`` at the top).
"""
from __future__ import annotations

from math import prod as _prod
import functools
import inspect
import threading
import weakref

import numpy as np

from . import initializers as _init
from . import keras_graph as _kg
from . import keras_remat as _remat
from . import mixed_precision as _mp
from . import nest as _nest
from .backend import current_device, device_scope
from .dtypes import np_dtype
from .ops import core as _core
from .ops import linalg as _la
from .ops import math as _m
from .ops import shape as _sh
from .keras_training import TrainingMixin
from .tensor import Tensor, Variable, convert_to_tensor

__all__ = ["Module", "Layer", "Model", "InputSpec", "Sequential", "Dense", "Conv1D", "Conv2D",
           "MaxPool2D", "MaxPooling2D", "AveragePooling2D", "AvgPool2D", "Flatten", "Dropout",
           "LayerNormalization", "BatchNormalization", "Embedding", "Activation", "ReLU",
           "Reshape", "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPooling2D",
           "GlobalMaxPool2D", "get_activation", "activation_names", "SimpleRNNCell", "LSTMCell",
           "GRUCell", "RNN", "SimpleRNN", "LSTM", "GRU", "LeakyReLU", "ELU", "Softmax", "PReLU",
           "Conv2DTranspose", "UpSampling2D", "ZeroPadding2D", "Cropping2D", "Concatenate",
           "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Lambda",
           "RepeatVector", "Permute", "Rescaling", "GaussianNoise", "TimeDistributed",
           "Bidirectional", "MultiHeadAttention", "Input", "InputLayer", "MaxPooling1D", "MaxPool1D",
           "AveragePooling1D", "AvgPool1D", "GlobalAveragePooling1D", "GlobalAvgPool1D",
           "GlobalMaxPooling1D", "GlobalMaxPool1D", "DepthwiseConv2D", "SeparableConv2D",
           "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "DepthwiseConv1D",
           "SeparableConv1D", "GaussianDropout", "Normalization",
           "Identity", "Dot", "Attention", "Masking", "GroupNormalization",
           "UnitNormalization", "Resizing", "CenterCrop", "RandomFlip", "RandomCrop",
           "StackedRNNCells", "Conv1DTranspose", "UpSampling1D", "ZeroPadding1D", "Cropping1D",
           "AlphaDropout", "ActivityRegularization", "AdditiveAttention", "Convolution1D",
           "Convolution2D", "Convolution1DTranspose", "Convolution2DTranspose", "concatenate",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "dot",
           "Conv3D", "Conv3DTranspose", "MaxPooling3D", "MaxPool3D", "AveragePooling3D",
           "AvgPool3D", "GlobalAveragePooling3D", "GlobalAvgPool3D", "GlobalMaxPooling3D",
           "GlobalMaxPool3D", "UpSampling3D", "ZeroPadding3D", "Cropping3D",
           "RandomRotation", "RandomZoom", "RandomTranslation", "RandomContrast",
           "RandomBrightness", "RandomHeight", "RandomWidth", "CategoryEncoding", "Discretization", "Hashing", "IntegerLookup",
           "StringLookup", "TextVectorization", "EinsumDense", "RMSNormalization",
           "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
           "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D", "Wrapper",
           "SpectralNormalization", "ThresholdedReLU", "ReversibleEmbedding", "Convolution3D",
           "Convolution3DTranspose", "SeparableConvolution1D", "SeparableConvolution2D",
           "AutoContrast", "Equalization", "Solarization", "RandomInvert", "RandomGrayscale",
           "RandomHue", "RandomSaturation", "RandomColorDegeneration", "RandomColorJitter",
           "RandomSharpness", "RandomPosterization", "RandomShear", "RandomPerspective",
           "RandomErasing", "RandomGaussianBlur", "RandomElasticTransform", "CutMix",
           "MixUp", "AugMix", "RandAugment", "MaxNumBoundingBoxes", "Pipeline",
           "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "GroupQueryAttention",
           "HashedCrossing", "MelSpectrogram", "STFTSpectrogram"]


# --- activations by name ----------------------------------------------------------------------

def _linear(x):
    return x


_linear.__name__ = _linear.__qualname__ = "linear"


def _keras_activation(fn):
    """Name ``fn`` as Keras' activation of the same name (``fn.__name__`` without the
    leading underscore: what get_config writes and ``get_activation`` reads)."""
    fn.__name__ = fn.__qualname__ = fn.__name__.lstrip("_")
    return fn


@_keras_activation
def _hard_sigmoid(x):
    """Keras 3's hard sigmoid: ``relu6(x + 3) / 6`` (0 below -3, 1 above 3)."""
    from . import nn
    x = convert_to_tensor(x)
    return nn.relu6(x + 3.0) / 6.0


@_keras_activation
def _hard_silu(x):
    """``x * hard_sigmoid(x)`` (``hard_swish``): 0 below -3, ``x`` above 3."""
    x = convert_to_tensor(x)
    return x * _hard_sigmoid(x)


@_keras_activation
def _mish(x):
    """``x * tanh(softplus(x))``."""
    x = convert_to_tensor(x)
    return x * _m.tanh(_m.softplus(x))


@_keras_activation
def _relu(x, negative_slope=0.0, max_value=None, threshold=0.0, *, alpha=None):
    """Keras' relu: ``x`` above ``threshold``, else ``negative_slope * (x - threshold)``,
    capped at ``max_value``; with the defaults, ``gt.nn.relu``. (``alpha`` is Keras 2's
    name for ``negative_slope``.)"""
    from . import nn
    x = convert_to_tensor(x)
    if alpha is not None:
        negative_slope = alpha
    if negative_slope is None or negative_slope < 0:
        raise ValueError(f"relu: negative_slope must be >= 0, got {negative_slope!r}")
    if max_value is not None and max_value < 0:
        raise ValueError(f"relu: max_value must be >= 0 or None, got {max_value!r}")
    if negative_slope != 0 and max_value is None and threshold == 0:
        return nn.leaky_relu(x, alpha=negative_slope)
    negative = nn.relu(threshold - x) if negative_slope != 0 else None
    clip = max_value is not None
    if threshold != 0:
        # x above the threshold, +0.0 elsewhere (as Keras' where; never -0.0)
        x = _m.where(_m.greater(x, threshold), x, _core.zeros_like(x))
    elif max_value == 6:
        x, clip = nn.relu6(x), False
    else:
        x = nn.relu(x)
    if clip:
        x = _m.clip_by_value(x, 0.0, max_value)
    if negative is not None:
        x = x - negative_slope * negative
    return x


@_keras_activation
def _elu(x, alpha=1.0):
    """``x`` above 0, ``alpha * (exp(x) - 1)`` below."""
    from . import nn
    x = convert_to_tensor(x)
    y = nn.elu(x)
    return y if alpha == 1 else _m.where(_m.greater(x, 0.0), y, y * alpha)


@_keras_activation
def _leaky_relu(x, negative_slope=0.2):
    """``x`` above 0, ``negative_slope * x`` below (Keras 3's default slope 0.2)."""
    from . import nn
    return nn.leaky_relu(convert_to_tensor(x), alpha=negative_slope)


#: Keras' activations with Keras' arguments (``gt.keras.activations``).
KERAS_ACTIVATIONS = {"relu": _relu, "elu": _elu, "leaky_relu": _leaky_relu,
                     "hard_sigmoid": _hard_sigmoid, "hard_silu": _hard_silu,
                     "hard_swish": _hard_silu, "mish": _mish}

# name -> (module, attribute); resolved on use so every gt.nn activation is reachable.
_ACTIVATIONS = {
    "linear": None, "relu": ("nn", "relu"), "relu6": ("nn", "relu6"),
    "leaky_relu": ("nn", "leaky_relu"), "elu": ("nn", "elu"), "selu": ("nn", "selu"),
    "gelu": ("nn", "gelu"), "silu": ("nn", "silu"), "swish": ("nn", "silu"),
    "sigmoid": ("math", "sigmoid"), "tanh": ("math", "tanh"), "softplus": ("math", "softplus"),
    "softsign": ("nn", "softsign"), "softmax": ("nn", "softmax"),
    "log_softmax": ("nn", "log_softmax"), "exponential": ("math", "exp"),
    "hard_sigmoid": ("keras", "hard_sigmoid"), "hard_silu": ("keras", "hard_silu"),
    "hard_swish": ("keras", "hard_swish"), "mish": ("keras", "mish"),
}


def activation_names() -> list:
    """The activation names layers accept (those the installed ``gt.nn`` provides)."""
    return sorted(n for n in _ACTIVATIONS if _resolve(n, strict=False) is not None)


def _resolve(name, strict=True):
    target = _ACTIVATIONS[name]
    if target is None:
        return _linear
    module_name, attr = target
    if module_name == "math":
        return getattr(_m, attr)
    if module_name == "keras":
        return KERAS_ACTIVATIONS[attr]
    from . import nn
    fn = getattr(nn, attr, None)
    if fn is None and strict:
        raise ValueError(f"activation {name!r} is not provided by gt.nn; known activations: "
                         f"{activation_names()}")
    return fn


def get_activation(identifier):
    """The activation function for a name (``"relu"``), a callable, or ``None`` (identity)."""
    if identifier is None:
        return _linear
    if isinstance(identifier, str):
        key = identifier.lower()
        if key not in _ACTIVATIONS or _resolve(key, strict=False) is None:
            from .saving import custom_object
            found = custom_object(identifier)
            if callable(found):
                return found
            raise ValueError(f"unknown activation {identifier!r}; known activations: "
                             f"{activation_names()}")
        return _resolve(key)
    if callable(identifier):
        return identifier
    raise TypeError(f"activation must be a name, a callable or None, got {identifier!r}")


def _activation_name(fn):
    """The name ``get_activation`` finds ``fn`` under (for get_config); a function of the
    user's keeps its ``__name__`` (``load_model`` finds it in ``custom_objects``)."""
    if fn is _linear:
        return "linear"
    for key in _ACTIVATIONS:
        if _ACTIVATIONS[key] is not None and _resolve(key, strict=False) is fn:
            return key
    for key, keras_fn in KERAS_ACTIVATIONS.items():
        if keras_fn is fn:
            return key
    name = getattr(fn, "__name__", None)
    return name if name is not None else repr(fn)


# --- the call context ---------------------------------------------------------------------------

_context = threading.local()


def _training_stack():
    try:
        return _context.training
    except AttributeError:
        _context.training = []
        _context.call_id = 0
        return _context.training


#: Non-empty once any layer has had a regularizer or an added loss; until then
#: ``Layer.losses`` returns [] without walking the model (fit reads it every step).
_LOSS_SOURCES = []


def _has_loss_source():
    if not _LOSS_SOURCES:
        _LOSS_SOURCES.append(True)


def _current_call_id() -> int:
    """The number of the outermost layer call now running in this thread (``add_loss``
    keeps only the losses of a layer's latest outermost call)."""
    _training_stack()
    return _context.call_id


# --- Module: variable tracking ------------------------------------------------------------------

#: Keras' floatx: the dtype of layers made without one (``gt.keras.backend.set_floatx``).
_FLOATX = ["float32"]

_name_counters: dict = {}
_name_lock = threading.Lock()


def _snake_case(name):
    """Keras' default layer names: ``Conv2D`` -> ``conv2d``, ``BatchNormalization`` ->
    ``batch_normalization``, ``GlobalAveragePooling2D`` -> ``global_average_pooling2d``."""
    import re
    intermediate = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    out = re.sub(r"([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return out if not out.startswith("_") else "private" + out


def _unique_name(base):
    with _name_lock:
        n = _name_counters.get(base, 0)
        _name_counters[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


class Module:
    """A container of Variables and sub-modules, found through its attributes.

    ``variables`` lists every Variable reachable through attributes, lists, tuples, dicts
    and sub-modules (depth first, in attribute order, each once); ``trainable_variables``
    those that are trainable in a trainable module, ``non_trainable_variables`` the rest.
    """

    #: Attribute names never searched for Variables.
    _UNTRACKED = frozenset()

    def __init__(self, name=None):
        # (a class may give Keras' base name when its own differs: MaxPool2D's is
        # "max_pooling2d", as Keras names MaxPooling2D layers)
        base = type(self).__dict__.get("_NAME_BASE") or _snake_case(type(self).__name__)
        self._name = name if name is not None else _unique_name(base)
        if not isinstance(self._name, str) or not self._name:
            raise ValueError(f"{type(self).__name__}: name must be a non-empty string, got "
                             f"{name!r}")
        if "_trainable" not in self.__dict__:
            self._trainable = True

    @property
    def name(self) -> str:
        return self.__dict__.get("_name") or _snake_case(type(self).__name__)

    @property
    def trainable(self) -> bool:
        """False freezes every variable of this module and its sub-modules."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)

    # --- traversal ------------------------------------------------------------------------
    def _tracked_items(self):
        skip = self._UNTRACKED
        items = [(k, v) for k, v in vars(self).items() if k not in skip and k != "_trainable"]
        if not isinstance(self, Layer):
            # a plain tf.Module lists its attributes sorted by name (TF's _flatten_module),
            # so `w, b = module.trainable_variables` unpacks as in TensorFlow; Keras layers
            # keep the order their weights were created in
            items.sort(key=lambda kv: kv[0])
        return items

    def _walk(self):
        """``[(path, variable, effectively_trainable)]`` for every reachable Variable.

        A Keras layer lists its own weights first, the trainable ones before the others (a
        weight that LoRA froze among the trainable ones, where Keras keeps it), then its
        sub-layers' (Keras' ``layer.weights`` order); a plain Module lists its
        attributes in name order (as ``tf.Module``). A Variable reachable twice is listed
        under its first place in that order."""
        seen_objs = {id(self)}

        def visit_module(module, path, trainable):
            # a Layer: (own trainable, own non-trainable, sub-modules'); a Module: one list
            is_layer = isinstance(module, Layer)
            own_t, own_nt, subs = [], [], []
            if not is_layer:
                own_t = own_nt = subs
            # (a weight that LoRA froze stays where Keras lists it, among the trainable ones)
            frozen = _lora_frozen(module) if is_layer and module.__dict__.get("lora_enabled") \
                else None

            def visit(obj, p):
                if obj is None:
                    return
                if isinstance(obj, Variable):
                    (own_t if obj.trainable or obj is frozen else own_nt).append(
                        (p, obj, trainable and obj.trainable))
                elif isinstance(obj, (Tensor, str, bytes, int, float, np.ndarray)):
                    return
                elif id(obj) in seen_objs:
                    return
                elif isinstance(obj, Module):
                    seen_objs.add(id(obj))
                    subs.extend(visit_module(obj, p, trainable and obj.trainable))
                elif isinstance(obj, (list, tuple)):
                    seen_objs.add(id(obj))
                    for i, v in enumerate(obj):
                        visit(v, f"{p}.{i}")
                elif isinstance(obj, dict):
                    seen_objs.add(id(obj))
                    items = obj.items()
                    if not is_layer:                  # (tf.nest's sorted keys, as TF)
                        items = sorted(items, key=lambda kv: str(kv[0]))
                    for k, v in items:
                        visit(v, f"{p}.{k}")

            for k, v in module._tracked_items():
                visit(v, f"{path}.{k}" if path else k)
            return own_t + own_nt + subs if is_layer else subs

        out, seen_vars = [], set()
        for entry in visit_module(self, "", self.trainable):
            if entry[1]._id not in seen_vars:
                seen_vars.add(entry[1]._id)
                out.append(entry)
        return out

    def named_variables(self) -> list:
        """``[(path, variable)]``: the names used by :meth:`save_weights`."""
        return [(p, v) for p, v, _ in self._walk()]

    @property
    def variables(self) -> list:
        return [v for _, v, _ in self._walk()]

    @property
    def trainable_variables(self) -> list:
        return [v for _, v, t in self._walk() if t]

    @property
    def non_trainable_variables(self) -> list:
        return [v for _, v, t in self._walk() if not t]

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables

    @property
    def submodules(self) -> list:
        """Every Module reachable from this one (not itself), depth first."""
        out = []
        seen = {id(self)}

        def visit(obj):
            if isinstance(obj, Module):
                if id(obj) in seen:
                    return
                seen.add(id(obj))
                out.append(obj)
                for _, v in obj._tracked_items():
                    visit(v)
            elif isinstance(obj, (list, tuple)):
                for v in obj:
                    visit(v)
            elif isinstance(obj, dict):
                for v in obj.values():
                    visit(v)

        for _, v in self._tracked_items():
            visit(v)
        return out

    def count_params(self) -> int:
        return int(sum(v.size for v in self.variables))

    # --- weights ------------------------------------------------------------------------
    def get_weights(self) -> list:
        """The values of :attr:`variables` as host NumPy arrays."""
        return [v.numpy() for v in self.variables]

    def set_weights(self, weights) -> None:
        """Assign a list of arrays to :attr:`variables`; every shape and dtype is checked
        before anything is assigned."""
        variables = self.variables
        weights = list(weights)
        if len(weights) != len(variables):
            raise ValueError(f"{type(self).__name__} '{self.name}'.set_weights: {len(weights)} "
                             f"arrays for {len(variables)} variables (nothing was assigned)")
        arrays = []
        for (path, var), w in zip(self.named_variables(), weights):
            if isinstance(w, Tensor):
                host = w.numpy()
            elif var._device.is_native(w) and not isinstance(w, np.ndarray):
                host = var._device.to_host(w)      # a raw device array: an explicit copy
            else:
                host = np.asarray(w)
            if tuple(host.shape) != tuple(var.shape):
                raise ValueError(f"{type(self).__name__} '{self.name}'.set_weights: {path} has "
                                 f"shape {tuple(var.shape)}, the array {tuple(host.shape)} "
                                 "(nothing was assigned)")
            if host.dtype != var._value.dtype:
                if host.dtype.kind != var._value.dtype.kind:
                    raise TypeError(f"{type(self).__name__} '{self.name}'.set_weights: {path} "
                                    f"has dtype {var.dtype.name}, the array {host.dtype.name} "
                                    "(nothing was assigned)")
                host = host.astype(var._value.dtype)
            arrays.append(host)
        for var, host in zip(variables, arrays):
            var._set(var._device.asarray(np.array(host, copy=True)))    # (no constraint, as TF)

    def save_weights(self, filepath, overwrite=True) -> str:
        """Write every variable to ``filepath`` in the safetensors format (atomically); a
        LoRA layer's weight is written merged with its adapters, which are left out (as
        Keras)."""
        from .saving import save_own_weights
        return save_own_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath) -> None:
        """Read the variables from ``filepath`` (a weights file, or a whole model that
        ``model.save`` wrote; or an HDF5 weights file Keras wrote, ``.weights.h5``, which
        needs h5py); every name, shape and dtype is checked before any variable is
        assigned. A LoRA layer's adapters, which saved files leave out, are zeroed (as
        Keras)."""
        from .saving import (is_hdf5, is_saved_model, load_keras_weights, load_own_weights,
                             load_weights_of_saved_model)
        if is_hdf5(filepath):
            load_keras_weights(self, filepath)
            return
        if is_saved_model(filepath):
            load_weights_of_saved_model(self, filepath)
            return
        load_own_weights(self, filepath)

    def __repr__(self):
        return f"<{type(self).__name__} '{self.name}'>"


# --- Layer ---------------------------------------------------------------------------------------

class InputSpec:
    """What a layer accepts: a rank (``ndim`` or ``min_ndim``) and fixed axis sizes."""

    __slots__ = ("ndim", "min_ndim", "axes", "dtype_kind")

    def __init__(self, ndim=None, min_ndim=None, axes=None, dtype_kind=None):
        self.ndim = ndim
        self.min_ndim = min_ndim
        self.axes = dict(axes or {})
        self.dtype_kind = dtype_kind

    def describe(self) -> str:
        """The accepted shapes as text: ``(None, 4)``, ``(..., 4) with rank >= 2``."""
        if self.ndim is not None:
            dims = ["None"] * self.ndim
            for a, size in self.axes.items():
                dims[a] = str(size)
            return "shape (" + ", ".join(dims) + ("," if self.ndim == 1 else "") + ")"
        if self.axes:
            tail = max(-a for a in self.axes if a < 0) if any(a < 0 for a in self.axes) else 1
            dims = ["None"] * tail
            for a, size in self.axes.items():
                if a < 0:
                    dims[a] = str(size)
            text = "shape (..., " + ", ".join(dims) + ")"
            return text + (f" with rank >= {self.min_ndim}" if self.min_ndim else "")
        return f"rank >= {self.min_ndim}" if self.min_ndim else "any shape"

    def mismatch(self, shape) -> bool:
        nd = len(shape)
        if self.ndim is not None and nd != self.ndim:
            return True
        if self.min_ndim is not None and nd < self.min_ndim:
            return True
        for a, size in self.axes.items():
            if not -nd <= a < nd or shape[a] != size:
                return True
        return False

    def __repr__(self):
        return (f"InputSpec(ndim={self.ndim}, min_ndim={self.min_ndim}, axes={self.axes})")


# --- Keras masks: a boolean tensor riding along with a layer's output ---------------------------

#: id(tensor) -> (weak reference to the tensor, its mask); entries go with their tensors.
_MASKS: dict = {}


def set_mask(tensor, mask) -> None:
    """Attach ``mask`` (a boolean tensor, e.g. ``[batch, time]``) to ``tensor``, as Keras'
    ``_keras_mask``; layers called on ``tensor`` that take a ``mask`` argument receive it."""
    key = id(tensor)

    def drop(ref, key=key):
        entry = _MASKS.get(key)
        if entry is not None and entry[0] is ref:
            del _MASKS[key]
    if mask is None:
        _MASKS.pop(key, None)
        return
    _MASKS[key] = (weakref.ref(tensor, drop), mask)


def get_mask(tensor):
    """The mask attached to ``tensor`` by the layer that made it (None if none)."""
    if not _MASKS:
        return None
    entry = _MASKS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]


def _input_mask(x):
    if isinstance(x, Tensor):
        return get_mask(x)
    if isinstance(x, (list, tuple)):
        masks = [get_mask(t) if isinstance(t, Tensor) else None for t in x]
        return masks if any(m is not None for m in masks) else None
    return None


def _attach_masks(out, mask):
    if mask is not None and not isinstance(mask, (Tensor, list, tuple)):
        mask = convert_to_tensor(np.asarray(mask, dtype=bool))   # a mask given as an array
    if isinstance(out, Tensor):
        if not isinstance(mask, (list, tuple)):
            set_mask(out, mask)
        return
    if isinstance(out, (list, tuple)):
        masks = mask if isinstance(mask, (list, tuple)) else [mask] + [None] * (len(out) - 1)
        for t, m in zip(out, masks):
            if isinstance(t, Tensor) and not isinstance(m, (list, tuple)):
                set_mask(t, m)


_accepts_training_cache: dict = {}
_accepts_mask_cache: dict = {}


_makes_masks_cache: dict = {}


def _makes_masks(cls) -> bool:
    """Whether ``cls`` defines its own ``compute_mask`` (Embedding, Masking, recurrent and
    merge layers, user layers): its output may carry a mask with none on the input."""
    found = _makes_masks_cache.get(cls)
    if found is None:
        found = _makes_masks_cache[cls] = cls.compute_mask is not Layer.compute_mask
    return found


def _call_accepts_mask(cls) -> bool:
    found = _accepts_mask_cache.get(cls)
    if found is None:
        try:
            found = "mask" in inspect.signature(cls.call).parameters
        except (TypeError, ValueError):
            found = False
        _accepts_mask_cache[cls] = found
    return found


_training_default_cache: dict = {}
_REQUIRED = "required"      # (a call whose training argument has no default)


def _training_default(cls):
    """The default of ``training`` in ``cls.call`` when it is a bool, else None."""
    try:
        return _training_default_cache[cls]
    except KeyError:
        pass
    found = None
    try:
        p = inspect.signature(cls.call).parameters.get("training")
        if p is not None and isinstance(p.default, bool):
            found = p.default
        elif p is not None and p.default is inspect.Parameter.empty:
            found = _REQUIRED
    except (TypeError, ValueError):
        pass
    _training_default_cache[cls] = found
    return found


def _call_accepts_training(cls) -> bool:
    found = _accepts_training_cache.get(cls)
    if found is None:
        try:
            params = inspect.signature(cls.call).parameters
            found = "training" in params or any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            found = False
        _accepts_training_cache[cls] = found
    return found


class Layer(Module):
    """A module called on inputs: ``layer(inputs, training=None)``.

    Subclasses implement :meth:`call` and, for weights that depend on the input, :meth:`build`
    (run once, on the first call, on the input's device). ``dtype`` is the layer's dtype
    policy (:class:`gradtape.mixed_precision.DTypePolicy`, or its name: ``"float32"``,
    ``"float64"``, ``"float16"``, ``"mixed_float16"``; by default the global policy, which
    is ``floatx()``'s unless ``keras.mixed_precision.set_global_policy`` set one): weights are
    made in its ``variable_dtype`` (:attr:`dtype`), numeric inputs are cast to its
    ``compute_dtype`` when ``autocast`` is true. Under a mixed policy the layer's float
    weights are read as casts to the compute dtype while :meth:`call` runs (see
    :mod:`gradtape.mixed_precision`).
    """

    #: Build on the first call (containers that build by running their layers set False).
    _builds_on_call = True
    #: Cast numeric inputs to the layer's compute dtype.
    autocast = True
    @property
    def trainable(self) -> bool:
        """False freezes the layer's weights and its sub-layers'. Changing it changes it on
        every sub-layer too, as Keras 3: freezing a model freezes the layers inside (a frozen
        BatchNormalization runs in inference mode), unfreezing it unfreezes them all.
        Setting the value the layer already has leaves its sub-layers as they are."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value):
        value = bool(value)
        if value == self.__dict__.get("_trainable", True):
            return
        seen = set()

        def set_tree(layer):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            layer._trainable = value
            for child in _child_modules(layer):
                if isinstance(child, Layer):
                    set_tree(child)
        set_tree(self)

    #: Whether a call may take the mixed-precision path: set on a layer by its policy (a
    #: mixed one, or one given explicitly to a dtype-keeping layer), and on this class by
    #: gradtape.mixed_precision while a mixed call runs in any thread (so that a call without
    #: mixed precision pays one attribute test).
    _mp_on = False

    #: ``<prefix>_regularizer=`` and ``<prefix>_constraint=`` arguments the layer takes:
    #: prefix -> weight attribute.
    _REGULARIZABLE = {}

    def __init__(self, name=None, trainable=True, dtype=None, **kwargs):
        regs = {}
        for key in list(kwargs):
            if key.endswith("_regularizer") and key[:-12] in self._REGULARIZABLE:
                value = kwargs.pop(key)
                if value is not None:
                    from .regularizers import get as _get_regularizer
                    regs[self._REGULARIZABLE[key[:-12]]] = _get_regularizer(value)
            elif key.endswith("_constraint") and key[:-11] in self._REGULARIZABLE:
                value = kwargs.pop(key)
                if value is not None:
                    from .constraints import get as _get_constraint
                    self.__dict__.setdefault("_constraints", {})[
                        self._REGULARIZABLE[key[:-11]]] = _get_constraint(value)
            elif key == "activity_regularizer":
                value = kwargs.pop(key)
                if value is not None:
                    from .regularizers import get as _get_regularizer
                    self._activity_regularizer = _get_regularizer(value)
                    _has_loss_source()
            elif key not in ("input_shape", "input_dim", "batch_input_shape", "autocast"):
                raise TypeError(f"{type(self).__name__}: unexpected keyword argument {key!r}")
        if regs:
            self._regularizers = regs
            _has_loss_source()
        super().__init__(name=name)
        self._trainable = bool(trainable)
        if "autocast" in kwargs:
            self.autocast = bool(kwargs["autocast"])
            if not self.autocast:
                self._mp_no_autocast = True         # (Keras: no input cast, no autocast)
        self._set_dtype_policy(dtype)
        if _remat._STACK:                        # made inside a keras.RematScope
            self.__dict__["_remat_mode"] = _remat.get_current_remat_mode()
        # Keras' input_shape= (per example), input_dim= or batch_input_shape=: a Sequential
        # whose first layer has one builds itself at construction.
        if kwargs.get("batch_input_shape") is not None:
            self._build_input_shape = tuple(kwargs["batch_input_shape"])
        elif kwargs.get("input_shape") is not None:
            self._build_input_shape = (None,) + tuple(kwargs["input_shape"])
        elif kwargs.get("input_dim") is not None:
            self._build_input_shape = (None, int(kwargs["input_dim"]))
        else:
            self._build_input_shape = None
        self.built = False
        self.input_spec = None

    def __init_subclass__(cls, **kwargs):
        # As Keras: a layer's build, however it is called (by the first call, or directly
        # as layer.build(shape)), marks the layer built and gives the weights named by
        # <weight>_constraint= their constraints.
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is None or getattr(build, "_marks_built", False):
            return

        @functools.wraps(build)
        def marking_build(self, *args, **kw):
            out = build(self, *args, **kw)
            if self.__dict__.get("_constraints"):
                self._attach_constraints()
            self.built = True
            return out
        marking_build._marks_built = True
        cls.build = marking_build

    _UNTRACKED = frozenset({"input_spec", "_dtype", "_compute_dtype", "_dtype_policy",
                            "_mp_on", "_mp_no_autocast", "built", "_build_input_shape",
                            "_generators", "_regularizers", "_inbound_nodes",
                            "_activity_regularizer", "_call_losses", "_loss_call", "_top_call",
                            "_loss_fns", "_weight_regularizers", "_constraints"})

    # --- the functional API: what this layer was called on symbolically ---------------------
    def _node(self, what):
        nodes = self.__dict__.get("_inbound_nodes")
        if not nodes:
            raise AttributeError(f"{type(self).__name__} layer '{self.name}' has never been "
                                 f"called on a symbolic input (keras.Input), so it has no "
                                 f"{what}")
        if len(nodes) > 1:
            raise AttributeError(f"{type(self).__name__} layer '{self.name}' has been called "
                                 f"{len(nodes)} times symbolically, so its {what} is ambiguous")
        return nodes[0]

    @property
    def input(self):
        """The symbolic input of this layer's one call in a functional model."""
        return self._node("input").input

    @property
    def output(self):
        """The symbolic output of this layer's one call in a functional model (as in
        ``keras.Model(model.input, model.get_layer("fc1").output)``)."""
        return self._node("output").packed

    def count_params(self) -> int:
        """The number of weight elements; a layer not built yet has no weights to count, an
        error (as Keras)."""
        if not self.built:
            raise ValueError(f"{type(self).__name__} layer '{self.name}'.count_params: the layer "
                             "is not built yet; call it on inputs or build it "
                             "(layer.build(input_shape)) first")
        return super().count_params()

    @property
    def losses(self) -> list:
        """The current penalties of this layer's regularized weights and its sub-layers'
        (``kernel_regularizer=`` and the like), as scalar tensors."""
        from .regularizers import collect_losses
        return collect_losses(self)

    def _seeded_generator(self, device):
        """The layer's own generator on ``device`` when it has a ``seed`` (each call draws
        anew from one reproducible sequence), else None (the device's global generator)."""
        if getattr(self, "seed", None) is None:
            return None
        gens = self.__dict__.setdefault("_generators", {})
        gen = gens.get(device)
        if gen is None:
            from .random import Generator
            gen = gens[device] = Generator.from_seed(self.seed, device=device)
        return gen

    @property
    def dtype(self):
        """The dtype of the layer's weights (its policy's ``variable_dtype``, as Keras)."""
        from .dtypes import as_dtype
        return as_dtype(self._dtype)

    # --- the dtype policy -----------------------------------------------------------------
    def _set_dtype_policy(self, dtype, explicit=None):
        """Resolve ``dtype`` (None, a policy, its name or config, a float dtype) into the
        layer's policy, variable dtype and compute dtype."""
        who = type(self).__name__
        if dtype is not None and not isinstance(dtype, (_mp.DTypePolicy, dict)) and \
                not (isinstance(dtype, str) and dtype.startswith(("mixed_", "bfloat"))):
            try:
                dt = np.dtype(np_dtype(dtype))
            except TypeError:
                if not isinstance(dtype, str):
                    raise TypeError(f"{who}: cannot interpret dtype={dtype!r} as a dtype "
                                    "policy or a float dtype") from None
                dt = None                       # (a name the policy refuses with a reason)
            if dt is not None and dt.kind != "f":
                raise TypeError(f"{who}: dtype must be a floating type, got {dt.name}")
        if dtype is None and _mp._GLOBAL[0] is None:
            policy = _mp.DTypePolicy(_FLOATX[0])
        else:
            try:
                policy = _mp.get(dtype)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{who}: {exc}") from None
        if isinstance(policy, _mp.DTypePolicyMap):    # the entry for this layer's path
            policy = policy[self.name]
        d = self.__dict__
        d["_dtype_policy"] = policy
        d["_dtype"] = np.dtype(policy.variable_dtype)
        d["_compute_dtype"] = np.dtype(policy.compute_dtype)
        explicit = dtype is not None if explicit is None else explicit
        if _mp.is_mixed(policy) or (explicit and not self.autocast):
            d["_mp_on"] = True
        else:
            d.pop("_mp_on", None)

    @property
    def dtype_policy(self):
        """The layer's :class:`~gradtape.mixed_precision.DTypePolicy` (Keras 3). Settable
        (a policy or its name) while the layer has no weights, or to a policy of the same
        variable dtype."""
        return self._dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value):
        policy = _mp.get(value)
        if self.built and self.variables and np.dtype(policy.variable_dtype) != self._dtype:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': its weights are "
                             f"{self._dtype.name}; a built layer cannot take the policy "
                             f"{policy.name!r} (variable dtype {policy.variable_dtype})")
        self._set_dtype_policy(policy, explicit=True)

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer computes in and returns (its policy's, a name, as Keras)."""
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of the layer's weights (its policy's, a name, as Keras)."""
        return self._dtype_policy.variable_dtype

    def build(self, input_shape) -> None:
        """Create the weights for inputs of ``input_shape`` (a tuple)."""

    def call(self, inputs, *args, **kwargs):
        """The layer's computation."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(inputs)")

    def add_weight(self, *args, shape=None, initializer=None, dtype=None, trainable=True,
                   autocast=True, regularizer=None, constraint=None, aggregation="none",
                   name=None) -> Variable:
        """A new Variable of ``shape`` (``()`` if none) drawn from ``initializer`` on the
        current device, as Keras 3's ``add_weight(shape=None, initializer=None, dtype=None,
        trainable=True, autocast=True, regularizer=None, constraint=None, aggregation="none",
        name=None)``: the initializer defaults to ``"glorot_uniform"`` for a float dtype and
        ``"zeros"`` otherwise, the dtype to the layer's; ``regularizer`` adds its penalty to
        :attr:`losses`; ``constraint`` is applied to the weight after every optimizer step
        (also a ``<weight>_constraint=`` the layer was made with); ``name`` (a unique
        ``variable_N`` if none) names it ``<layer>/<name>``. Up to three positional
        arguments are ``shape, initializer, dtype`` (Keras 3); a name first keeps the
        earlier form ``add_weight(name, shape, initializer, trainable, dtype,
        regularizer)``. ``autocast=False`` keeps the weight out of mixed precision's
        autocasting (read as it is, in its own dtype); ``aggregation`` is accepted for Keras
        scripts (one device: nothing to aggregate)."""
        who = f"{type(self).__name__} '{self.name}'.add_weight"
        given = {"shape": shape, "initializer": initializer, "dtype": dtype,
                 "trainable": trainable, "regularizer": regularizer}
        defaults = {"shape": None, "initializer": None, "dtype": None, "trainable": True,
                    "regularizer": None}
        if args and isinstance(args[0], str):
            if name is not None:
                raise TypeError(f"{who}: name given both positionally and as name=")
            name, args = args[0], args[1:]
            order = ("shape", "initializer", "trainable", "dtype", "regularizer")
            after = " after the name"
        else:
            order, after = ("shape", "initializer", "dtype"), ""
        if len(args) > len(order):
            raise TypeError(f"{who}: takes at most {len(order)} positional arguments "
                            f"({', '.join(order)}){after}, got {len(args)}")
        for key, value in zip(order, args):
            if given[key] is not defaults[key]:
                raise TypeError(f"{who}: {key} given both positionally and as {key}=")
            given[key] = value
        shape, initializer, dtype = given["shape"], given["initializer"], given["dtype"]
        if aggregation not in (None, "none", "mean", "sum", "only_first_replica"):
            raise ValueError(f"{who}: aggregation must be one of None, 'none', 'mean', 'sum', "
                             f"'only_first_replica', got {aggregation!r}")
        dt = self._dtype if dtype is None else np.dtype(np_dtype(dtype))
        if initializer is None:
            initializer = "glorot_uniform" if dt.kind == "f" else "zeros"
        init = _init.get(initializer)
        regularizer = given["regularizer"]
        if regularizer is not None:
            from .regularizers import get as _get_regularizer
            regularizer = _get_regularizer(regularizer)
        if name is None:
            name = _unique_name("variable")
        elif not isinstance(name, str) or not name:
            raise TypeError(f"{who}: name must be a non-empty string, got {name!r}")
        if constraint is None:
            constraint = (self.__dict__.get("_constraints") or {}).get(name)
        else:
            from .constraints import get as _get_constraint
            constraint = _get_constraint(constraint)
        if shape is None:
            shape = ()
        elif isinstance(shape, (int, np.integer)):
            shape = (shape,)
        try:
            dims = tuple(int(s) for s in shape)
        except TypeError:
            raise ValueError(f"{who}: shape must be fully defined (ints), got {shape!r}") \
                from None
        if dt.kind == "f":
            value = init(dims, dtype=dt)
        else:       # an integer or boolean weight (a counter): drawn as float64, then cast
            value = _core.cast(init(dims, dtype=np.float64), dt)
        var = Variable(value, trainable=given["trainable"], name=f"{self.name}/{name}",
                       constraint=constraint)
        if not autocast:
            _mp.no_autocast(var)
        if regularizer is not None:
            self.__dict__.setdefault("_weight_regularizers", []).append((regularizer, var))
            _has_loss_source()
        return var

    def _attach_constraints(self):
        """Give the weights named by ``<weight>_constraint=`` their constraint (those that
        :meth:`add_weight` made under another name than the attribute)."""
        for attr, constraint in (self.__dict__.get("_constraints") or {}).items():
            var = getattr(self, attr, None)
            if isinstance(var, Variable) and var.constraint is None:
                var._constraint = constraint

    # --- calling ------------------------------------------------------------------------
    def _convert_input(self, x):
        """``x`` as a Tensor, numeric values cast to the layer's compute dtype when
        ``autocast``."""
        if not isinstance(x, Tensor):
            x = convert_to_tensor(x)
        dt = self._compute_dtype
        if self.autocast and x._value.dtype != dt and x._value.dtype.kind in "fiub":
            x = _core.cast(x, dt)
        return x

    def _input_error(self, shape, spec, what="input"):
        return ValueError(f"{type(self).__name__} layer '{self.name}': expected {what} of "
                          f"{spec.describe()}, got shape {tuple(shape)}")

    def _check_input(self, x):
        spec = self.input_spec
        if spec is None or not isinstance(x, Tensor):
            return
        shape = tuple(x._value.shape)
        if spec.mismatch(shape):
            raise self._input_error(shape, spec)
        if spec.dtype_kind is not None and x._value.dtype.kind not in spec.dtype_kind:
            raise TypeError(f"{type(self).__name__} layer '{self.name}': expected "
                            f"{'integer' if spec.dtype_kind == 'iu' else spec.dtype_kind} input, "
                            f"got dtype {x.dtype.name}")

    def __call__(self, inputs, *args, training=None, **kwargs):
        if type(inputs) is _KerasTensor or ((args or kwargs or type(inputs) in _STRUCTURES)
                                            and _kg.has_symbols(inputs, args, kwargs)):
            if training is not None:
                kwargs["training"] = training
            return _kg.symbolic_call(self, inputs, args, kwargs)
        stack = _training_stack()
        if not stack:                        # an outermost call: a new round of add_loss
            _context.call_id += 1
            if not _kg.probing():
                self.__dict__["_top_call"] = _context.call_id
        if training is None:
            # Keras: the enclosing call's mode, else this call's own default (True for the
            # augmentation layers, so a direct call augments; None, read as inference,
            # elsewhere); the stack keeps None for the layers inside to resolve in turn
            training = stack[-1] if stack else None
            if training is None:
                default = _training_default(type(self))
                training = None if default is _REQUIRED else default
        level = training
        training = bool(training)
        # mixed precision: this layer's policy is mixed, or a mixed layer's call encloses it
        mixed = self._mp_on and _mp.takes_mixed_path(self)
        if isinstance(inputs, dict) or (isinstance(inputs, (list, tuple)) and any(
                isinstance(v, (Tensor, np.ndarray)) for v in _nest.flatten(inputs))):
            x = inputs                       # a structure of inputs, passed as given
            if mixed:
                x = _mp.prepare_input(self, inputs, x)
        else:
            x = self._convert_input(inputs)
            if mixed:
                x = _mp.prepare_input(self, inputs, x)
            self._check_input(x)
        # the inputs' device (the first tensor's, for a structure): weights are built there
        # and what the layer makes while called (zero states, masks, noise) is made there
        dev = x._device if isinstance(x, Tensor) else next(
            (t._device for t in _nest.flatten(x) if isinstance(t, Tensor)), None)
        if not self.built:
            if self._builds_on_call:
                shape = tuple(x._value.shape) if isinstance(x, Tensor) else _shapes_of(x)
                if dev is not None:
                    with device_scope(dev):
                        self.build(shape)
                else:
                    self.build(shape)
            self.built = True
        if _call_accepts_training(type(self)) and (
                level is not None or _training_default(type(self)) is _REQUIRED):
            # (unresolved: the call's own default applies; a call that requires the
            # argument gets inference, False)
            kwargs["training"] = training
        masking = bool(_MASKS) or _makes_masks(type(self)) or "mask" in kwargs
        if masking:
            mask = kwargs.get("mask")
            if mask is None:
                mask = _input_mask(x)
                if mask is None and x is not inputs:        # the cast copy has none
                    mask = _input_mask(inputs)
                if mask is not None and _call_accepts_mask(type(self)):
                    kwargs["mask"] = mask
        scope = _mp.enter(self) if mixed else None
        stack.append(level)
        try:
            call = self.call if self._remat_mode is None else _remat.layer_call(self, x)
            if dev is None or dev is current_device():
                out = call(x, *args, **kwargs)
            else:
                with device_scope(dev):
                    out = call(x, *args, **kwargs)
            if mixed:
                out = _mp.finish_output(self, out)
            if self._activity_regularizer is not None:
                self._add_activity_loss(out)
            if masking:
                out_mask = self.compute_mask(x, mask)
                if out_mask is not None:
                    _attach_masks(out, out_mask)
            return out
        finally:
            stack.pop()
            if scope is not None:
                _mp.leave(scope)

    #: Whether the layer passes its input's mask on unchanged (Keras' ``supports_masking``).
    supports_masking = False

    #: The ``keras.RematScope`` settings the layer was made under (``None``: none).
    _remat_mode = None

    def compute_mask(self, inputs, mask=None):
        """The mask of this layer's output: the input's when :attr:`supports_masking`,
        else none."""
        return mask if self.supports_masking else None

    #: ``activity_regularizer=``: a penalty on the layer's output, added by each call.
    _activity_regularizer = None

    def _add_activity_loss(self, out):
        from .regularizers import penalty
        for t in _nest.flatten(out):
            if isinstance(t, Tensor) and t._value.dtype.kind == "f":
                batch = t._value.shape[0] if t._value.ndim else 1
                self.add_loss(penalty(self._activity_regularizer, t) / float(batch))

    def add_loss(self, loss) -> None:
        """Add a loss term (a scalar tensor, or a zero-argument callable evaluated when
        :attr:`losses` is read) to this layer, as Keras: terms added during a call replace
        those of the layer's previous outermost call; ``fit`` adds :attr:`losses` to the
        compiled loss."""
        if _kg.probing():
            return                           # a shape probe on zeros adds nothing
        _has_loss_source()
        if callable(loss) and not isinstance(loss, Tensor):
            self.__dict__.setdefault("_loss_fns", []).append(loss)
            return
        if not isinstance(loss, Tensor):
            loss = convert_to_tensor(loss)
        cid = _current_call_id()
        if self.__dict__.get("_loss_call") != cid:
            self._call_losses = []
            self._loss_call = cid
        self._call_losses.append(loss)

    def compute_output_shape(self, input_shape):
        """The shape of what the layer returns for inputs of ``input_shape`` (a tuple with
        ``None`` for unknown sizes; a list or dict of them for several inputs), as a tuple
        (a structure of tuples for several outputs). Found by running the layer on zeros, as
        a call on ``keras.Input`` does; an unbuilt layer is probed through a copy, so it
        stays unbuilt."""
        import copy
        who = f"{type(self).__name__} layer '{self.name}'.compute_output_shape"

        def is_shape(v):
            from .tensor import TensorShape
            return isinstance(v, TensorShape) or (isinstance(v, (list, tuple)) and all(
                d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
                for d in v))
        spec = self.input_spec
        dtype = np.int32 if spec is not None and spec.dtype_kind == "iu" else self._dtype

        def symbol(v):
            if not is_shape(v):
                raise TypeError(f"{who}: expected a shape (a tuple of ints and None), or a "
                                f"list or dict of shapes, got {v!r}")
            return _KerasTensor(_kg.dims(v, who), dtype, name="input")
        if is_shape(input_shape):
            inputs = symbol(input_shape)
        elif isinstance(input_shape, dict):
            inputs = {k: symbol(v) for k, v in input_shape.items()}
        elif isinstance(input_shape, (list, tuple)):
            inputs = [symbol(v) for v in input_shape]
        else:
            raise TypeError(f"{who}: expected a shape (a tuple of ints and None), or a list "
                            f"or dict of shapes, got {input_shape!r}")
        layer = self
        if not self.built:
            # a copy builds on the probe; its records of symbolic calls start empty
            memo = {}
            for m in [self] + self.submodules:
                nodes = m.__dict__.get("_inbound_nodes")
                if nodes is not None:
                    memo[id(nodes)] = []
            layer = copy.deepcopy(self, memo)
        out = _kg.symbolic_call(layer, inputs, (), {})
        _kg.forget_nodes(layer, layer.__dict__["_inbound_nodes"][-1:])

        def shapes(v):
            if isinstance(v, _KerasTensor):
                return tuple(v.shape)
            if isinstance(v, dict):
                return {k: shapes(t) for k, t in v.items()}
            return tuple(shapes(t) for t in v)
        return shapes(out)

    @classmethod
    def from_config(cls, config):
        """A new layer from :meth:`get_config`'s dict (as Keras: ``cls(**config)``); the keys
        of :attr:`_FOREIGN_CONFIG_KEYS` that configs of other Keras versions hold are left
        out first."""
        return cls(**_without_foreign_keys(cls, config))

    #: Keys that configs written by other Keras versions (tf.keras 2) hold and this class's
    #: constructor does not take: key -> the one value accepted (and dropped), or
    #: ``_ANY_VALUE`` when the key carries no meaning here whatever its value.
    _FOREIGN_CONFIG_KEYS = {}

    #: Constructor arguments that are initializers: argument -> attribute (get_config).
    _INITIALIZER_ARGS = {}

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": self._dtype_policy.name}
        for arg, attr in self._INITIALIZER_ARGS.items():
            init = getattr(self, attr, None)
            if isinstance(init, _init.Initializer):
                config[arg] = _init.serialize(init)
        # as Keras: every <weight>_regularizer and <weight>_constraint the layer takes, None
        # when not given
        from .regularizers import serialize
        from .constraints import serialize as _serialize_constraint
        regs = self.__dict__.get("_regularizers") or {}
        constraints = self.__dict__.get("_constraints") or {}
        for prefix, attr in self._REGULARIZABLE.items():
            reg = regs.get(attr)
            config[f"{prefix}_regularizer"] = None if reg is None else serialize(reg)
        if self._activity_regularizer is not None or self._ACTIVITY_IN_CONFIG:
            config["activity_regularizer"] = None if self._activity_regularizer is None else \
                serialize(self._activity_regularizer)
        for prefix, attr in self._REGULARIZABLE.items():
            constraint = constraints.get(attr)
            config[f"{prefix}_constraint"] = None if constraint is None else \
                _serialize_constraint(constraint)
        return config

    #: Whether get_config lists ``activity_regularizer`` even when None (Keras' convolutions
    #: and Embedding do; Dense does not).
    _ACTIVITY_IN_CONFIG = False


#: In :attr:`Layer._FOREIGN_CONFIG_KEYS`: the key is dropped whatever its value.
_ANY_VALUE = object()


def _without_foreign_keys(cls, config):
    """``config`` without the keys of ``cls._FOREIGN_CONFIG_KEYS`` (each checked to hold
    the one value that means nothing here)."""
    foreign = cls._FOREIGN_CONFIG_KEYS
    if not foreign or not any(key in config for key in foreign):
        return config
    config = dict(config)
    for key, accepted in foreign.items():
        if key in config:
            value = config.pop(key)
            if accepted is not _ANY_VALUE and value != accepted:
                raise ValueError(f"{cls.__name__}.from_config: {key}={value!r} is not "
                                 f"supported (only {key}={accepted!r})")
    return config


def _child_modules(module):
    """The modules held directly by ``module``'s attributes (inside lists, tuples and dicts
    too), in attribute order, each once."""
    out, seen = [], set()

    def visit(v):
        if isinstance(v, Module):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        elif isinstance(v, (list, tuple)):
            for item in v:
                visit(item)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)
    for _, v in module._tracked_items():
        visit(v)
    return out


_KerasTensor = _kg.KerasTensor
_STRUCTURES = (list, tuple, dict)


class InputLayer(Layer):
    """The layer of a ``keras.Input``: where a functional model's inputs come from; first in
    a Sequential, a way to give its input shape (``InputLayer(input_shape=(784,))``)."""

    autocast = False
    _UNTRACKED = Layer._UNTRACKED | {"_output", "_input_dtype"}

    def __init__(self, input_shape=None, batch_size=None, dtype=None, name=None,
                 batch_shape=None, shape=None, sparse=None, ragged=None, optional=False,
                 **kwargs):
        if kwargs:
            raise TypeError(f"InputLayer: unexpected keyword argument {next(iter(kwargs))!r}")
        if sparse or ragged:
            raise ValueError(f"InputLayer: {'sparse' if sparse else 'ragged'} inputs are not "
                             "supported (gradtape tensors are dense)")
        if shape is not None and input_shape is None:
            input_shape = shape
        if batch_shape is not None:
            full = _kg.dims(batch_shape, "InputLayer")
        elif input_shape is not None:
            if isinstance(input_shape, (int, np.integer)):
                input_shape = (input_shape,)
            full = (None if batch_size is None else int(batch_size),) + _kg.dims(
                input_shape, "InputLayer")
        else:
            raise ValueError("InputLayer: give input_shape= (per example) or batch_shape=")
        super().__init__(name=name if name is not None else _unique_name("input_layer"))
        self.optional = bool(optional)
        self._input_dtype = np.dtype(_FLOATX[0]) if dtype is None else np.dtype(np_dtype(dtype))
        self._build_input_shape = full
        self.built = True
        self._output = _KerasTensor(full, self._input_dtype, name=self.name, input_layer=self)

    @property
    def output(self):
        return self._output

    @property
    def input(self):
        return self._output

    @property
    def dtype(self):
        from .dtypes import as_dtype
        return as_dtype(self._input_dtype)

    @property
    def batch_shape(self):
        return self._build_input_shape

    def call(self, inputs):
        return inputs

    def get_config(self):
        # as Keras 3: no "trainable"
        return {"name": self.name, "batch_shape": self._build_input_shape,
                "dtype": "string" if self._input_dtype.kind == "O" else self._input_dtype.name,
                "sparse": False, "ragged": False, "optional": self.optional}


Input = _kg.Input


class TFOpLambda(Layer):
    """A gradtape operator applied to symbolic tensors of a functional model (no weights)."""

    autocast = False

    def __init__(self, function, name=None):
        super().__init__(name=name)
        self.function = function

    def call(self, inputs):
        return self.function(inputs)


def _shapes_of(structure):
    if isinstance(structure, (Tensor, np.ndarray)):
        return tuple(structure.shape) if isinstance(structure, np.ndarray) else tuple(
            structure._value.shape)
    if isinstance(structure, dict):
        return {k: _shapes_of(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return type(structure)(_shapes_of(v) for v in structure)
    return None


class Model(TrainingMixin, Layer):
    """A whole model (``keras.Model``), made in one of two ways:

    * functional: ``Model(inputs, outputs)`` from ``keras.Input`` tensors and the layers
      called on them (see :mod:`gradtape.keras_graph`);
    * subclassed: define the sub-layers in ``__init__`` and the forward pass in ``call``.

    Inputs pass through as given (no cast), since a model usually takes several. Either kind
    trains with ``compile`` / ``fit`` / ``evaluate`` / ``predict`` (see
    :mod:`gradtape.keras_training`) or with a hand-written GradientTape loop.
    """

    autocast = False
    _UNTRACKED = Layer._UNTRACKED | {"_graph", "inputs", "outputs"}

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if args:
            if len(args) > 2 or inputs is not None or (len(args) == 2 and outputs is not None):
                raise TypeError(f"{type(self).__name__}: expected Model(inputs, outputs, "
                                f"name=...), got {len(args)} positional arguments")
            inputs = args[0]
            if len(args) == 2:
                outputs = args[1]
        from . import distribute
        if distribute.has_strategy():         # made inside a strategy.scope()
            self._distribute_strategy = distribute.get_strategy()
        super().__init__(**kwargs)
        self._graph = None
        if inputs is not None or outputs is not None:
            graph = _kg.Graph(inputs, outputs, f"{type(self).__name__} '{self.name}'")
            self._graph = graph
            self.inputs = list(graph.flat_inputs)
            self.outputs = list(graph.flat_outputs)
            self.layers = graph.layers
            self.built = True

    @property
    def distribute_strategy(self):
        """The ``gt.distribute`` strategy whose ``scope()`` the model was made in (the
        default strategy otherwise), as Keras' ``model.distribute_strategy``."""
        from . import distribute
        return self.__dict__.get("_distribute_strategy") or distribute.get_strategy()

    def call(self, inputs, training=None):
        graph = self.__dict__.get("_graph")
        if graph is None:
            raise NotImplementedError(f"{type(self).__name__} must implement call(inputs), or "
                                      "be made as a functional Model(inputs, outputs)")
        return graph.run(inputs, training)

    @property
    def layers(self) -> list:
        """The model's layers: a functional model's in graph order, a Sequential's in stack
        order; for a subclassed model, the layers its attributes hold (in the order they
        were set), as Keras."""
        found = self.__dict__.get("layers")
        if found is not None:
            return found
        return [m for m in _child_modules(self) if isinstance(m, Layer)]

    @layers.setter
    def layers(self, value):
        self.__dict__["layers"] = value

    @property
    def output_names(self):
        """The names of the outputs: the output layers' names for a functional model, the
        last layer's for a Sequential; None for a subclassed model (``fit`` names them from
        what ``call`` returns: a dict's keys, else ``output_1``, ``output_2`` ...)."""
        graph = self.__dict__.get("_graph")
        if graph is not None:
            return list(graph.output_names)
        layers = self.__dict__.get("layers")
        if isinstance(self, Sequential) and layers:
            return [getattr(layers[-1], "name", "output_1")]
        return None

    def _single(self, what):
        items = self.__dict__.get(what + "s")
        if items is None:
            raise AttributeError(f"{type(self).__name__} '{self.name}' has no {what}s (only a "
                                 "functional model has)")
        return items[0] if len(items) == 1 else list(items)

    @property
    def input(self):
        return self._single("input")

    @property
    def output(self):
        return self._single("output")

    @property
    def input_shape(self):
        x = self.input
        return [tuple(t.shape) for t in x] if isinstance(x, list) else tuple(x.shape)

    @property
    def output_shape(self):
        y = self.output
        return [tuple(t.shape) for t in y] if isinstance(y, list) else tuple(y.shape)

    def reset_states(self):
        """Reset every stateful recurrent layer of the model to zero states."""
        for m in [self] + self.submodules:
            if getattr(m, "stateful", False) and hasattr(m, "reset_states") and m is not self:
                m.reset_states()

    def save(self, filepath, overwrite=True, **kwargs):
        """Write the architecture, compile arguments, weights and optimizer state to one
        file (see :mod:`gradtape.saving`); ``gt.keras.models.load_model`` reads it back.
        ``include_optimizer=False`` leaves the optimizer state out."""
        from .saving import save_model
        if kwargs.get("save_format") not in (None, "keras", "tf", "h5"):
            raise ValueError(f"save: unknown save_format {kwargs['save_format']!r}")
        return save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=kwargs.get("include_optimizer", True))

    def get_layer(self, name=None, index=None):
        """A layer of the model by ``name`` or by position (``index``) in ``model.layers``."""
        layers = self.__dict__.get("layers")
        if layers is None:
            layers = [m for m in self.submodules if isinstance(m, Layer)]
        if index is not None:
            if name is not None:
                raise ValueError("get_layer: give name or index, not both")
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer: index {index} is out of range: the model has "
                                 f"{len(layers)} layers")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"get_layer: no layer named {name!r} (the layers are "
                         f"{[layer.name for layer in layers]})")

    def summary(self, line_length=None, positions=None, print_fn=print, **kwargs) -> None:
        """Print Keras' table: each layer with its output shape (known for functional models
        and for built Sequentials) and parameter count, then the totals."""
        rows = []
        graph = self.__dict__.get("_graph")
        if graph is not None:
            shapes = {}
            for node in graph.nodes:
                outs = [tuple(t.shape) for t in node.outputs]
                shapes.setdefault(id(node.layer), outs[0] if len(outs) == 1 else outs)
            for layer in graph.layers:
                shape = (layer._build_input_shape if isinstance(layer, InputLayer)
                         else shapes.get(id(layer)))
                rows.append((layer, shape))
        else:
            subs = self.__dict__.get("layers")
            if subs is None:
                if not self.built:
                    raise ValueError(f"{type(self).__name__} '{self.name}'.summary: the model "
                                     "has not been built yet; call it on a batch of data (or "
                                     "build it) first")
                subs = _child_modules(self)
            built = {id(layer): node for layer, node in self.__dict__.get("_build_nodes", ())}
            for layer in subs:
                node = built.get(id(layer))
                out = None
                if node is not None:
                    outs = [tuple(t.shape) for t in node.outputs]
                    out = outs[0] if len(outs) == 1 else outs
                rows.append((layer, out))
        width = line_length or 72
        cols = (int(width * 0.45), int(width * 0.33))
        rule = "_" * width
        print_fn(f'Model: "{self.name}"')
        print_fn(rule)
        print_fn(f"{'Layer (type)':<{cols[0]}}{'Output Shape':<{cols[1]}}Param #")
        print_fn("=" * width)
        for layer, shape in rows:
            label = f"{layer.name} ({type(layer).__name__})"
            shown = "?" if shape is None else str(shape)
            count = layer.count_params() if getattr(layer, "built", True) else "0 (unbuilt)"
            print_fn(f"{label:<{cols[0] - 1}} {shown:<{cols[1] - 1}} {count}")
        print_fn("=" * width)
        trainable = sum(int(v.size) for v in self.trainable_variables)
        total = self.count_params()
        print_fn(f"Total params: {total}")
        print_fn(f"Trainable params: {trainable}")
        print_fn(f"Non-trainable params: {total - trainable}")
        print_fn(rule)


# --- containers --------------------------------------------------------------------------------

class Sequential(Model):
    """A stack of layers, each fed the previous one's output.

    ``build(input_shape)`` creates every weight by running zeros of that shape (``None``
    dimensions taken as 1) through the stack; otherwise weights are built on the first call.
    """

    _builds_on_call = False

    _UNTRACKED = Model._UNTRACKED | {"_input_batch_shape", "_adding", "_build_nodes",
                                     "_input_dtype", "_seen_input_shape"}

    def __init__(self, layers=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.layers = []
        self._input_batch_shape = None
        self._adding = True
        try:
            for layer in layers or []:
                self.add(layer)
        finally:
            self._adding = False
        if self._input_batch_shape is not None and self.layers:
            self.build(self._input_batch_shape)

    def add(self, layer) -> None:
        """Append a layer. A ``keras.Input`` or ``InputLayer`` first gives the input shape
        (it is not listed in ``layers``); with a known input shape the model is built."""
        if isinstance(layer, _KerasTensor) and layer._input_layer is not None:
            layer = layer._input_layer
        if isinstance(layer, InputLayer):
            if self.layers:
                raise ValueError(f"Sequential '{self.name}'.add: an Input must come first")
            self._input_batch_shape = layer._build_input_shape
            self._input_dtype = layer._input_dtype
            return
        if isinstance(layer, _KerasTensor):
            raise TypeError(f"Sequential '{self.name}'.add: expected a layer, got the symbolic "
                            f"tensor {layer.name}")
        if not callable(layer):
            raise TypeError(f"Sequential '{self.name}'.add: expected a layer, got "
                            f"{type(layer).__name__}")
        if not self.layers and self._input_batch_shape is None and isinstance(layer, Layer):
            self._input_batch_shape = layer._build_input_shape
        self.layers.append(layer)
        if not self.__dict__.get("_adding") and self._input_batch_shape is not None:
            self.build(self._input_batch_shape)

    def pop(self):
        if not self.layers:
            raise IndexError(f"Sequential '{self.name}'.pop: there are no layers")
        layer = self.layers.pop()
        for owner, node in self.__dict__.get("_build_nodes", ()):
            if owner is layer:
                _kg.forget_nodes(owner, [node])
        self._build_nodes = [(o, n) for o, n in self.__dict__.get("_build_nodes", ())
                             if o is not layer]
        if self.layers and self._input_batch_shape is not None:
            self.build(self._input_batch_shape)
        elif not self.layers:
            self.__dict__.pop("inputs", None)
            self.__dict__.pop("outputs", None)
        return layer

    def build(self, input_shape=None) -> None:
        """Create every weight for inputs of ``input_shape`` (``None`` for unknown sizes):
        the layers are called on a symbolic input, as in a functional model, which also
        gives the model ``input``, ``output`` and each layer's output shape."""
        if input_shape is None:
            raise ValueError(f"Sequential '{self.name}'.build: input_shape is required")
        shape = tuple(None if s is None else int(s) for s in input_shape)
        first = self.layers[0] if self.layers else None
        dtype = (self.__dict__.get("_input_dtype") or
                 (first._dtype if isinstance(first, Layer) else np.float32))
        if not all(isinstance(layer, Layer) for layer in self.layers):
            # a plain function among the layers: run zeros through (None taken as 1)
            x = _core.zeros(tuple(1 if d is None else d for d in shape), dtype=dtype)
            self.call(x, training=False)
            self.built = True
            return
        if self._input_batch_shape is None:
            self._seen_input_shape = shape             # (for save / load_model)
            self._input_dtype = np.dtype(dtype)
        for layer, node in self.__dict__.get("_build_nodes", ()):
            _kg.forget_nodes(layer, [node])            # a rebuild replaces the last one
        inp = InputLayer(batch_shape=shape, dtype=dtype).output
        x, nodes = inp, []
        for layer in self.layers:
            x = layer(x)
            nodes.append((layer, layer.__dict__["_inbound_nodes"][-1]))
        self._build_nodes = nodes
        self.inputs = [inp]
        self.outputs = [x] if isinstance(x, _KerasTensor) else list(_nest.flatten(x))
        self.built = True

    def call(self, inputs, training=None):
        if self._input_batch_shape is None and "_seen_input_shape" not in self.__dict__ and \
                isinstance(inputs, Tensor) and not _kg.probing():
            # the input shape of a Sequential built by calling it (for save/load_model)
            self._seen_input_shape = (None,) + tuple(inputs._value.shape[1:])
            self._input_dtype = inputs._value.dtype
        x = inputs
        for layer in self.layers:
            x = layer(x, training=training) if isinstance(layer, Layer) else layer(x)
        return x

    def __len__(self):
        return len(self.layers)

    def __getitem__(self, index):
        return self.layers[index]


# --- core layers ---------------------------------------------------------------------------------

def _pair(value, what, who):
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{who}: {what} must be an int or a pair of ints, got {value!r}") from None
    if len(out) != 2:
        raise ValueError(f"{who}: {what} must be an int or a pair of ints, got {value!r}")
    return out


def _channels_last(data_format, who, layout="NHWC"):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{who}: only data_format='channels_last' ({layout}) is supported, got "
                         f"{data_format!r}")


def _data_format(data_format, who):
    """``"channels_last"`` (NHWC, the default) or ``"channels_first"`` (NCHW)."""
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"{who}: data_format must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}")
    return data_format or "channels_last"


def _padding(value, who):
    if not isinstance(value, str) or value.lower() not in ("valid", "same"):
        raise ValueError(f"{who}: padding must be 'valid' or 'same', got {value!r}")
    return value.lower()


def _kernel_options(layer, activation, use_bias, kernel_initializer, bias_initializer):
    """The options every kernel layer (Dense, the convolutions) takes, as attributes."""
    layer.activation = get_activation(activation)
    layer.use_bias = bool(use_bias)
    layer.kernel_initializer = _init.get(kernel_initializer)
    layer.bias_initializer = _init.get(bias_initializer)


def _bias_activation(layer, y):
    """``activation(y + bias)`` of a kernel layer (no bias: ``activation(y)``)."""
    if layer.bias is not None:
        y = y + layer.bias
    return layer.activation(y) if layer.activation is not _linear else y


def _no_quantization(who, quantization_config):
    """Keras 3's ``quantization_config`` argument (of Dense, EinsumDense, Embedding): None is
    accepted (their config writes it); a value is refused, as gradtape has no quantization."""
    if quantization_config is not None:
        raise ValueError(f"{who}: quantized layers are not supported (quantization_config="
                         f"{quantization_config!r:.100}); save the model unquantized")


def _lora_property(attr):
    """The ``attr`` weight of a LoRA-capable layer, as Keras 3 reads it: the Variable, or
    once LoRA is enabled the effective weight, ``weight + (lora_alpha / lora_rank) * (A @ B)``
    in the layer's compute dtype. The Variable stays in the layer's ``__dict__`` under
    ``attr`` (where tracking, saving and mixed precision find it); assigning sets it."""
    def get(self):
        d = self.__dict__
        if attr not in d:
            raise AttributeError(f"{type(self).__name__} layer '{self.name}': you must build "
                                 f"the layer before accessing `{attr}`")
        value = d[attr]
        if d.get("lora_enabled") and value is not None:
            return self._lora_merged(value)
        return value

    def set(self, value):
        self.__dict__[attr] = value
    return property(get, set, doc=f"The layer's ``{attr}`` (merged with its LoRA adapters "
                                  "once ``enable_lora`` ran).")


class _LoRA:
    """Keras 3's LoRA (low-rank adaptation) of a layer's main weight (Dense's and
    EinsumDense's ``kernel``, Embedding's ``embeddings``): ``enable_lora(rank)`` freezes the
    weight and adds two trainable float32 adapters, ``A`` (the weight's shape with its last
    axis ``rank``) and ``B`` (``(rank, last axis)``), regularized as the weight was; the layer
    then computes with ``weight + (lora_alpha / lora_rank) * (A @ B)``. ``lora_rank=`` at
    construction enables it when the layer is built (Dense and Embedding then use
    ``lora_alpha = lora_rank``, as Keras 3.15 does; EinsumDense keeps the ``lora_alpha``
    given). Saving writes the merged weight and leaves the adapters out; loading zeroes them
    (as Keras' ``save_own_variables`` / ``load_own_variables``)."""

    #: The weight LoRA adapts, its adapters' names, and what the weight is called in Keras'
    #: message refusing a constraint.
    _LORA_WEIGHT = "kernel"
    _LORA_NAMES = ("lora_kernel_a", "lora_kernel_b")
    _LORA_WHAT = "kernel"
    #: (class defaults: a layer without LoRA keeps no such attributes of its own, so the
    #: variable walk, run twice a training step, does not visit them)
    lora_rank = None
    lora_alpha = None
    lora_enabled = False

    def _lora_setup(self, lora_rank, lora_alpha):
        """Keep the ``lora_rank`` / ``lora_alpha`` constructor arguments (as Keras: alpha
        defaults to the rank; rank None or 0 is no LoRA)."""
        who = type(self).__name__
        if lora_rank is not None and (isinstance(lora_rank, bool) or not isinstance(
                lora_rank, (int, np.integer)) or lora_rank < 0):
            raise ValueError(f"{who}: lora_rank must be None or a non-negative int (0: no "
                             f"LoRA), got {lora_rank!r}")
        _lora_check_alpha(lora_alpha, who)
        lora_rank = None if lora_rank is None else int(lora_rank)
        if lora_rank:
            self._lora_refuse_constraint()
        if lora_rank is not None:
            self.lora_rank = lora_rank
        alpha = lora_alpha if lora_alpha is not None else lora_rank
        if alpha is not None:
            self.lora_alpha = alpha

    def _lora_refuse_constraint(self):
        if (self.__dict__.get("_constraints") or {}).get(self._LORA_WEIGHT) is not None:
            what = self._LORA_WHAT
            raise ValueError(f"Lora is incompatible with {what} constraints. In order to enable "
                             f"lora on this layer, remove the `{self._LORA_WEIGHT}_constraint` "
                             "argument.")

    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Keras 3's ``enable_lora``: freeze the layer's weight and add the trainable adapters
        ``A`` (``a_initializer``) and ``B`` (``b_initializer``) of ``rank``; the delta
        ``A @ B`` is scaled by ``lora_alpha / rank`` (``lora_alpha`` defaults to ``rank``).
        Refused (ValueError, as Keras) with a constraint on the weight, on a layer not built
        yet, and a second time."""
        who = f"{type(self).__name__}.enable_lora"
        self._lora_refuse_constraint()
        if not self.built:
            raise ValueError("Cannot enable lora on a layer that isn't yet built.")
        if self.lora_enabled:
            raise ValueError("lora is already enabled. This can only be done once per layer.")
        rank = _positive_int(rank, "rank", who)
        _lora_check_alpha(lora_alpha, who)
        a_init, b_init = _init.get(a_initializer), _init.get(b_initializer)
        d = self.__dict__
        base = d[self._LORA_WEIGHT]
        shape = tuple(int(s) for s in base._value.shape)
        regs = d.get("_regularizers") or {}
        reg = regs.get(self._LORA_WEIGHT)
        name_a, name_b = self._LORA_NAMES
        # (float32 whatever the layer's policy, as Keras: no underflow while fine-tuning)
        with device_scope(base._device):
            a = self.add_weight(name=name_a, shape=shape[:-1] + (rank,), initializer=a_init,
                                dtype="float32", regularizer=reg)
            b = self.add_weight(name=name_b, shape=(rank, shape[-1]), initializer=b_init,
                                dtype="float32", regularizer=reg)
        if reg is not None:
            # the frozen weight is no longer penalized (Keras counts trainable weights only);
            # the config still names its regularizer
            d["_lora_regularizer"] = regs.pop(self._LORA_WEIGHT)
        d[name_a], d[name_b] = a, b
        base.trainable = False
        self.lora_enabled = True
        self.lora_rank = rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else rank

    def _lora_merged(self, base, dtype=None):
        """``base + (lora_alpha / lora_rank) * (A @ B)`` (in the wider of their dtypes), cast
        to ``dtype`` (default: the compute dtype)."""
        d = self.__dict__
        a, b = d[self._LORA_NAMES[0]], d[self._LORA_NAMES[1]]
        nd = a._value.ndim
        ab = _la.matmul(a, b) if nd == 2 else _la.tensordot(a, b, axes=[[nd - 1], [0]])
        delta = (self.lora_alpha / self.lora_rank) * ab
        bt, dt = base._value.dtype, delta._value.dtype
        if bt != dt:
            wide = np.promote_types(bt, dt)
            base = base if bt == wide else _core.cast(base, wide)
            delta = delta if dt == wide else _core.cast(delta, wide)
        merged = base + delta
        dtype = np.dtype(self._compute_dtype if dtype is None else dtype)
        return merged if merged._value.dtype == dtype else _core.cast(merged, dtype)

    def _lora_config(self, config):
        """``config`` with what LoRA adds (as Keras: ``lora_rank`` / ``lora_alpha`` when a
        rank is set; the weight's regularizer, held apart once LoRA is enabled)."""
        reg = self.__dict__.get("_lora_regularizer")
        if reg is not None:
            from .regularizers import serialize
            config[f"{self._LORA_WEIGHT}_regularizer"] = serialize(reg)
        if self.lora_rank:
            config["lora_rank"] = self.lora_rank
            config["lora_alpha"] = self.lora_alpha
        return config


def _lora_check_alpha(lora_alpha, who):
    if lora_alpha is not None and (isinstance(lora_alpha, bool) or not isinstance(
            lora_alpha, (int, float, np.integer, np.floating))):
        raise TypeError(f"{who}: lora_alpha must be None or a number, got {lora_alpha!r}")


def lora_parts(module) -> list:
    """``[(layer, frozen weight, (A, B))]`` for every layer of ``module`` (itself included)
    with LoRA enabled."""
    out = []
    for m in [module] + module.submodules:
        if isinstance(m, _LoRA) and m.__dict__.get("lora_enabled"):
            d = m.__dict__
            out.append((m, d[m._LORA_WEIGHT], tuple(d[n] for n in m._LORA_NAMES)))
    return out


def _lora_frozen(layer):
    """The weight LoRA froze in ``layer`` (None when there is none)."""
    d = layer.__dict__
    return d.get(layer._LORA_WEIGHT) if d.get("lora_enabled") and isinstance(layer, _LoRA) \
        else None


def _positive_int(value, what, who):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{who}: {what} must be a positive int, got {value!r}")
    return int(value)


class Dense(_LoRA, Layer):
    """``activation(inputs @ kernel + bias)``; the input size is inferred on the first call.

    Inputs of rank > 2 are contracted over their last axis. ``lora_rank`` (or
    ``enable_lora``) adapts the kernel with LoRA, as Keras 3 (see :class:`_LoRA`).
    """

    supports_masking = True
    _UNTRACKED = Layer._UNTRACKED | {"_lora_regularizer"}
    kernel = _lora_property("kernel")

    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", name=None, lora_rank=None, lora_alpha=None,
                 quantization_config=None, **kwargs):
        _no_quantization("Dense", quantization_config)
        super().__init__(name=name, **kwargs)
        self.units = _positive_int(units, "units", "Dense")
        _kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer)
        self._lora_setup(lora_rank, lora_alpha)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        in_dim = int(input_shape[-1])
        kernel = self.add_weight("kernel", (in_dim, self.units), self.kernel_initializer)
        bias = self.add_weight("bias", (self.units,), self.bias_initializer) if self.use_bias \
            else None
        self.kernel = kernel
        self.bias = bias
        self.input_spec = InputSpec(min_ndim=2, axes={-1: in_dim})
        if self.lora_rank:
            self.built = True
            self.enable_lora(self.lora_rank)        # (Keras 3.15: alpha = rank)

    def call(self, inputs):
        kernel = self.kernel
        if inputs._value.ndim == 2:
            y = _la.matmul(inputs, kernel)
        else:
            y = _la.tensordot(inputs, kernel, axes=[[inputs._value.ndim - 1], [0]])
        return _bias_activation(self, y)

    def get_config(self):
        return self._lora_config({**super().get_config(), "units": self.units,
                                  "activation": _activation_name(self.activation),
                                  "use_bias": self.use_bias})


def _groups(layer, groups, who):
    """Keras' ``groups``: the filters split into that many groups, each seeing its share of
    the input channels (the filters must divide evenly)."""
    layer.groups = _positive_int(groups, "groups", who)
    if layer.filters % layer.groups:
        raise ValueError(f"{who}: the number of filters must be evenly divisible by the number "
                         f"of groups, got groups={layer.groups}, filters={layer.filters}")


def _group_channels(layer, in_ch):
    """The input channels each group of ``layer``'s filters sees."""
    if in_ch % layer.groups:
        raise ValueError(f"{type(layer).__name__} layer '{layer.name}': the number of input "
                         f"channels must be evenly divisible by the number of groups, got "
                         f"groups={layer.groups} and {in_ch} input channels")
    return in_ch // layer.groups


class Conv2D(Layer):
    """2-D convolution over NHWC inputs (NCHW with ``data_format="channels_first"``), kernel
    ``(kh, kw, in_channels // groups, filters)`` (TF layout); with ``groups`` > 1, group ``g``
    of the filters sees only group ``g`` of the input channels."""

    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}
    _ACTIVITY_IN_CONFIG = True

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "Conv2D")
        self.filters = _positive_int(filters, "filters", "Conv2D")
        _groups(self, groups, "Conv2D")
        self.kernel_size = _pair(kernel_size, "kernel_size", "Conv2D")
        self.strides = _pair(strides, "strides", "Conv2D")
        self.padding = _padding(padding, "Conv2D")
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", "Conv2D")
        if min(self.kernel_size + self.strides + self.dilation_rate) <= 0:
            raise ValueError("Conv2D: kernel_size, strides and dilation_rate must be positive")
        if self.strides != (1, 1) and self.dilation_rate != (1, 1):
            raise ValueError("Conv2D: strides > 1 together with dilation_rate > 1 is not "
                             "supported (as in TensorFlow)")
        _kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer)
        self.input_spec = InputSpec(ndim=4)

    def build(self, input_shape):
        first = self.data_format == "channels_first"
        ch_axis = 1 if first else -1
        in_ch = int(input_shape[ch_axis])
        spatial = input_shape[2:4] if first else input_shape[1:3]
        if self.padding == "valid":
            for size, k, d, axis in zip(spatial, self.kernel_size, self.dilation_rate,
                                        ("height", "width")):
                if size < (k - 1) * d + 1:
                    raise ValueError(f"Conv2D layer '{self.name}': input {axis} {size} is smaller "
                                     f"than the kernel's extent {(k - 1) * d + 1} with padding "
                                     f"'valid' (input shape {tuple(input_shape)})")
        kernel = self.add_weight("kernel", self.kernel_size + (_group_channels(self, in_ch),
                                                               self.filters),
                                 self.kernel_initializer)
        bias = self.add_weight("bias", (self.filters,), self.bias_initializer) if self.use_bias \
            else None
        self.kernel = kernel
        self.bias = bias
        self.input_spec = InputSpec(ndim=4, axes={ch_axis: in_ch})

    def call(self, inputs):
        from . import nn
        if self.data_format == "channels_first":
            y = nn.conv2d(inputs, self.kernel, strides=list(self.strides),
                          padding=self.padding.upper(), dilations=list(self.dilation_rate),
                          data_format="NCHW")
            if self.bias is not None:
                y = y + _sh.reshape(self.bias, (self.filters, 1, 1))
            return self.activation(y) if self.activation is not _linear else y
        y = nn.conv2d(inputs, self.kernel, strides=list(self.strides),
                      padding=self.padding.upper(), dilations=list(self.dilation_rate))
        return _bias_activation(self, y)

    def get_config(self):
        return {**super().get_config(), **_conv_config(self)}


def _conv_config(layer) -> dict:
    """The config entries every N-D convolution layer (Conv2D, Conv3D, ...) shares."""
    config = {"filters": layer.filters, "kernel_size": layer.kernel_size,
              "strides": layer.strides, "padding": layer.padding,
              "data_format": layer.data_format, "dilation_rate": layer.dilation_rate}
    if hasattr(layer, "groups"):
        config["groups"] = layer.groups
    config.update(activation=_activation_name(layer.activation), use_bias=layer.use_bias)
    return config


class Conv1D(Layer):
    """1-D convolution over ``(batch, steps, channels)`` inputs (``(batch, channels, steps)``
    with ``data_format="channels_first"``), kernel ``(kernel_size, in_channels // groups,
    filters)``; ``padding`` ``"valid"``, ``"same"`` or ``"causal"`` (zeros on the left only,
    so step t sees steps up to t)."""

    _REGULARIZABLE = {"kernel": "kernel", "bias": "bias"}
    _ACTIVITY_IN_CONFIG = True

    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "Conv1D")
        self.filters = _positive_int(filters, "filters", "Conv1D")
        _groups(self, groups, "Conv1D")
        self.kernel_size = _single(kernel_size, "kernel_size")
        self.strides = _single(strides, "strides")
        self.dilation_rate = _single(dilation_rate, "dilation_rate")
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same", "causal"):
            raise ValueError(f"Conv1D: padding must be 'valid', 'same' or 'causal', got "
                             f"{padding!r}")
        self.padding = padding.lower()
        if self.strides != 1 and self.dilation_rate != 1:
            raise ValueError("Conv1D: strides > 1 together with dilation_rate > 1 is not "
                             "supported (as in TensorFlow)")
        _kernel_options(self, activation, use_bias, kernel_initializer, bias_initializer)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        first = self.data_format == "channels_first"
        ch_axis, steps = (1, input_shape[2]) if first else (-1, input_shape[1])
        in_ch = int(input_shape[ch_axis])
        extent = (self.kernel_size - 1) * self.dilation_rate + 1
        if self.padding == "valid" and steps < extent:
            raise ValueError(f"Conv1D layer '{self.name}': input length {steps} is "
                             f"smaller than the kernel's extent {extent} with padding 'valid' "
                             f"(input shape {tuple(input_shape)})")
        self.kernel = self.add_weight("kernel", (self.kernel_size, _group_channels(self, in_ch),
                                                 self.filters),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.input_spec = InputSpec(ndim=3, axes={ch_axis: in_ch})

    def call(self, inputs):
        from . import nn
        first = self.data_format == "channels_first"
        if self.padding == "causal":
            left = [(self.kernel_size - 1) * self.dilation_rate, 0]
            padding = [[0, 0], [0, 0], left] if first else [[0, 0], left, [0, 0]]
        else:
            padding = self.padding.upper()
        y = nn.conv1d(inputs, self.kernel, self.strides, padding,
                      data_format="NCW" if first else "NWC", dilations=self.dilation_rate)
        if first:
            if self.bias is not None:
                y = y + _sh.reshape(self.bias, (self.filters, 1))
            return self.activation(y) if self.activation is not _linear else y
        return _bias_activation(self, y)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": (self.kernel_size,), "strides": (self.strides,),
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": (self.dilation_rate,), "groups": self.groups,
                "activation": _activation_name(self.activation), "use_bias": self.use_bias}


def _single(value, what):
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    return _positive_int(value, what, "Conv1D")


class _Pool2D(Layer):
    _op = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        self.data_format = _data_format(data_format, who)
        self.pool_size = _pair(pool_size, "pool_size", who)
        self.strides = self.pool_size if strides is None else _pair(strides, "strides", who)
        if min(self.pool_size + self.strides) <= 0:
            raise ValueError(f"{who}: pool_size and strides must be positive")
        self.padding = _padding(padding, who)
        self.input_spec = InputSpec(ndim=4)

    def _check_input(self, x):
        super()._check_input(x)
        if self.padding == "valid" and isinstance(x, Tensor):
            h, w = x._value.shape[2:4] if self.data_format == "channels_first" else \
                x._value.shape[1:3]
            if h < self.pool_size[0] or w < self.pool_size[1]:
                raise ValueError(f"{type(self).__name__} layer '{self.name}': input of shape "
                                 f"{tuple(x._value.shape)} is smaller than the pool "
                                 f"{self.pool_size} with padding 'valid'")

    def call(self, inputs):
        from . import nn
        return getattr(nn, self._op)(inputs, ksize=list(self.pool_size),
                                     strides=list(self.strides), padding=self.padding.upper(),
                                     data_format="NCHW" if self.data_format ==
                                     "channels_first" else "NHWC")

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPool2D(_Pool2D):
    """Maximum over ``pool_size`` windows of NHWC inputs (NCHW with
    ``data_format="channels_first"``)."""

    _NAME_BASE = "max_pooling2d"

    _op = "max_pool2d"


class AveragePooling2D(_Pool2D):
    """Mean over ``pool_size`` windows of NHWC inputs (NCHW with
    ``data_format="channels_first"``)."""

    _op = "avg_pool2d"


MaxPooling2D = MaxPool2D
AvgPool2D = AveragePooling2D


class _GlobalPool2D(Layer):
    _reduce = None
    _ndim = 4

    def __init__(self, data_format=None, keepdims=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{type(self).__name__}: data_format must be 'channels_last' or "
                             f"'channels_first', got {data_format!r}")
        self.data_format = data_format or "channels_last"
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._ndim)

    def call(self, inputs):
        from .ops import reduce as _red
        nd = self._ndim
        axes = list(range(1, nd - 1)) if self.data_format == "channels_last" else list(
            range(2, nd))
        return getattr(_red, self._reduce)(inputs, axis=axes, keepdims=self.keepdims)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPool2D):
    """The mean over the spatial axes of 4-D inputs: ``(batch, channels)``."""

    _reduce = "reduce_mean"


class GlobalMaxPooling2D(_GlobalPool2D):
    """The maximum over the spatial axes of 4-D inputs: ``(batch, channels)``."""

    _reduce = "reduce_max"


GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D


class Flatten(Layer):
    """Reshape ``(batch, ...)`` to ``(batch, prod(...))``. With
    ``data_format="channels_first"`` the channel axis (1) is moved last first, so the
    features come in the order a channels-last model would flatten them (as Keras)."""

    autocast = False

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format, "Flatten")
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        shape = inputs._value.shape
        if self.data_format == "channels_first" and len(shape) > 2:
            inputs = _sh.transpose(inputs, (0, *range(2, len(shape)), 1))
        n = 1
        for s in shape[1:]:
            n *= s
        return _sh.reshape(inputs, (shape[0], n))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshape each example to ``target_shape`` (the batch axis is kept)."""

    autocast = False

    def __init__(self, target_shape, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.target_shape = tuple(int(s) for s in target_shape)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        shape = tuple(inputs._value.shape)
        per_example = _prod(shape[1:])
        target = self.target_shape
        known = _prod([s for s in target if s != -1])
        ok = (per_example == known) if -1 not in target else (known and per_example % known == 0)
        if not ok or target.count(-1) > 1:
            raise ValueError(f"Reshape layer '{self.name}': cannot reshape examples of shape "
                             f"{shape[1:]} to {target} (input shape {shape})")
        return _sh.reshape(inputs, (shape[0],) + target)

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Activation(Layer):
    """Apply an activation given by name or callable."""

    supports_masking = True

    autocast = False

    def __init__(self, activation, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.activation = get_activation(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self):
        config = super().get_config()
        if type(self) is Activation:
            config["activation"] = _activation_name(self.activation)
        return config


class ReLU(Layer):
    """Keras' ReLU layer: ``x`` above ``threshold``, ``negative_slope * (x - threshold)``
    below, capped at ``max_value`` (``max(x, 0)`` with the defaults)."""

    supports_masking = True

    autocast = False

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        for what, value, none_ok in (("max_value", max_value, True),
                                     ("negative_slope", negative_slope, False),
                                     ("threshold", threshold, False)):
            if (value is None and not none_ok) or (value is not None and not value >= 0):
                raise ValueError(f"ReLU: {what} must be a number >= 0"
                                 f"{' or None' if none_ok else ''}, got {value!r}")
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        return _relu(inputs, negative_slope=self.negative_slope, max_value=self.max_value,
                     threshold=self.threshold)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class Dropout(Layer):
    """Zero a ``rate`` fraction of the inputs and scale the rest by ``1 / (1 - rate)`` when
    ``training``; the identity otherwise."""

    supports_masking = True

    autocast = False

    def __init__(self, rate, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"{type(self).__name__}: rate must be a float in [0, 1], got "
                             f"{rate!r}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed

    def _noise_shape(self, inputs):
        return self.noise_shape

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return _core.zeros_like(inputs)     # everything dropped (as Keras: unconnected)
        from . import nn
        return nn.dropout(inputs, rate=self.rate, noise_shape=self._noise_shape(inputs),
                          rng=self._seeded_generator(inputs._device))

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": None if self.noise_shape is None else list(self.noise_shape)}


def _norm_axes(axis, ndim, who, name):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{who} layer '{name}': axis {a} is out of range for inputs of "
                             f"rank {ndim}")
        out.append(a % ndim)
    return tuple(sorted(set(out)))


class LayerNormalization(Layer):
    """Normalise each example over ``axis`` to zero mean and unit variance, then scale by
    ``gamma`` and shift by ``beta`` (``epsilon`` 1e-3 as Keras).

    ``rms_scaling=True`` (deprecated in Keras 3, kept for its models) divides by
    ``sqrt(variance + epsilon)`` without subtracting the mean, then scales by ``gamma``;
    there is no ``beta``."""

    supports_masking = True

    _REGULARIZABLE = {"gamma": "gamma", "beta": "beta"}

    _INITIALIZER_ARGS = {"beta_initializer": "beta_initializer",
                         "gamma_initializer": "gamma_initializer"}

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", name=None,
                 rms_scaling=False, **kwargs):
        super().__init__(name=name, **kwargs)
        if rms_scaling:
            import warnings
            warnings.warn("LayerNormalization: rms_scaling=True is deprecated (as in Keras 3): "
                          "it scales the input by the variance, not the root mean square",
                          stacklevel=2)
        self.rms_scaling = bool(rms_scaling)
        self.axis = axis
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = _init.get(beta_initializer)
        self.gamma_initializer = _init.get(gamma_initializer)
        axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        self.input_spec = InputSpec(min_ndim=max(max(-a if a < 0 else a + 1 for a in axes), 1))

    def build(self, input_shape):
        nd = len(input_shape)
        axes = _norm_axes(self.axis, nd, "LayerNormalization", self.name)
        param_shape = tuple(input_shape[a] for a in axes)
        gamma = self.add_weight("gamma", param_shape, self.gamma_initializer) \
            if self.scale or self.rms_scaling else None
        beta = self.add_weight("beta", param_shape, self.beta_initializer) \
            if self.center and not self.rms_scaling else None
        self.gamma = gamma
        self.beta = beta
        self._axes = axes
        self._broadcast = None if axes == tuple(range(nd - len(axes), nd)) else tuple(
            input_shape[i] if i in axes else 1 for i in range(nd))
        self.input_spec = InputSpec(ndim=nd, axes={a: input_shape[a] for a in axes})

    _UNTRACKED = Layer._UNTRACKED | {"_axes", "_broadcast"}

    def call(self, inputs):
        from . import nn
        mean, variance = nn.moments(inputs, axes=list(self._axes), keepdims=True)
        inv = _m.rsqrt(variance + self.epsilon)
        gamma, beta = self.gamma, self.beta
        if self._broadcast is not None:
            gamma = None if gamma is None else _sh.reshape(gamma, self._broadcast)
            beta = None if beta is None else _sh.reshape(beta, self._broadcast)
        if gamma is not None:
            inv = inv * gamma
        if self.rms_scaling:
            return inputs * inv
        y = (inputs - mean) * inv
        return y + beta if beta is not None else y

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale, "rms_scaling": self.rms_scaling}


class BatchNormalization(Layer):
    """Normalise over the batch (and spatial) axes per feature of ``axis``.

    With ``training=True`` the batch statistics are used and the moving statistics
    (non-trainable Variables) move toward them: ``moving = moving * momentum + batch *
    (1 - momentum)``; otherwise, or when the layer is frozen (``trainable=False``), the moving
    statistics are used and nothing changes. A mask (from the layer before, as Keras':
    one less axis than the inputs) leaves the masked positions out of the batch statistics.

    ``renorm=True`` is batch renormalization (Ioffe, 2017), as Keras: in training the batch
    statistics are corrected toward moving ones (``renorm_mean``, ``renorm_stddev``, which
    move with ``renorm_momentum``) by ``r`` and ``d``, clipped by ``renorm_clipping``'s
    ``rmin``, ``rmax`` and ``dmax``; the layer also tracks ``moving_stddev``.
    ``synchronized`` is accepted (one device: the batch statistics are already global).
    """

    supports_masking = True

    _REGULARIZABLE = {"gamma": "gamma", "beta": "beta"}

    _INITIALIZER_ARGS = {"beta_initializer": "beta_initializer",
                         "gamma_initializer": "gamma_initializer",
                         "moving_mean_initializer": "moving_mean_initializer",
                         "moving_variance_initializer": "moving_variance_initializer"}

    @classmethod
    def from_config(cls, config):
        axis = config.get("axis")
        if isinstance(axis, (list, tuple)) and len(axis) == 1:
            config = {**config, "axis": axis[0]}        # (tf.keras 2 writes [axis])
        return super().from_config(config)

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, synchronized=False,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not isinstance(axis, (int, np.integer)):
            raise ValueError(f"BatchNormalization: axis must be an int, got {axis!r}")
        if not 0 <= momentum <= 1:
            raise ValueError(f"BatchNormalization: momentum must be in [0, 1], got {momentum}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = _init.get(beta_initializer)
        self.gamma_initializer = _init.get(gamma_initializer)
        self.moving_mean_initializer = _init.get(moving_mean_initializer)
        self.moving_variance_initializer = _init.get(moving_variance_initializer)
        self.synchronized = bool(synchronized)
        self.renorm = bool(renorm)
        if self.renorm:
            renorm_clipping = dict(renorm_clipping or {})
            unknown = set(renorm_clipping) - {"rmax", "rmin", "dmax"}
            if unknown:
                raise ValueError(f"BatchNormalization: unknown keys {sorted(unknown)} in "
                                 f"renorm_clipping {renorm_clipping}; the keys are 'rmax', "
                                 "'rmin' and 'dmax'")
            rmax, rmin = renorm_clipping.get("rmax"), renorm_clipping.get("rmin")
            dmax = renorm_clipping.get("dmax")
            if rmax is not None and rmin is not None and rmax < rmin:
                raise ValueError(f"BatchNormalization: renorm_clipping rmax={rmax} is smaller "
                                 f"than rmin={rmin}")
            if dmax is not None and dmax < 0:
                raise ValueError(f"BatchNormalization: renorm_clipping dmax must be >= 0, got "
                                 f"{dmax}")
        self.renorm_clipping = renorm_clipping
        self.renorm_momentum = float(renorm_momentum)
        self.input_spec = InputSpec(min_ndim=max(-self.axis if self.axis < 0 else self.axis + 1,
                                                 1))

    _UNTRACKED = Layer._UNTRACKED | {"_reduce_axes", "_broadcast", "renorm_clipping"}

    def build(self, input_shape):
        nd = len(input_shape)
        (axis,) = _norm_axes(self.axis, nd, "BatchNormalization", self.name)
        c = (int(input_shape[axis]),)
        gamma = self.add_weight("gamma", c, self.gamma_initializer) if self.scale else None
        beta = self.add_weight("beta", c, self.beta_initializer) if self.center else None
        moving_mean = self.add_weight("moving_mean", c, self.moving_mean_initializer,
                                      trainable=False)
        moving_variance = self.add_weight("moving_variance", c,
                                          self.moving_variance_initializer, trainable=False)
        self.gamma, self.beta = gamma, beta
        self.moving_mean, self.moving_variance = moving_mean, moving_variance
        if self.renorm:
            # Keras: the moving and renorm standard deviations start at the square root of
            # the variance initializer's values, the renorm mean at the mean initializer's
            stddevs = []
            for what in ("moving_stddev", "renorm_mean", "renorm_stddev"):
                init = self.moving_mean_initializer if what == "renorm_mean" else \
                    self.moving_variance_initializer
                var = self.add_weight(what, c, init, trainable=False)
                if what != "renorm_mean":
                    stddevs.append(var)
                setattr(self, what, var)
            for var in stddevs:
                var._assign_array(_m.sqrt(var)._value)
        self._reduce_axes = [i for i in range(nd) if i != axis]
        self._broadcast = None if axis == nd - 1 else tuple(
            input_shape[i] if i == axis else 1 for i in range(nd))
        self.input_spec = InputSpec(ndim=nd, axes={axis: c[0]})

    def _shaped(self, t):
        return t if t is None or self._broadcast is None else _sh.reshape(t, self._broadcast)

    def call(self, inputs, training=False, mask=None):
        training = training and self.trainable
        gamma, beta = self.gamma, self.beta
        if training:
            mean, variance = self._moments(inputs, mask)
            if self.renorm:
                gamma, beta = self._renorm_transform(mean, variance)
            else:
                self._update_moving(mean, variance)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        inv = _m.rsqrt(variance + self.epsilon)
        if gamma is not None:
            inv = inv * gamma
        shift = -mean * inv
        if beta is not None:
            shift = shift + beta
        return inputs * self._shaped(inv) + self._shaped(shift)

    def _moments(self, inputs, mask):
        """The batch mean and variance per feature; with a mask, over the unmasked positions
        only (Keras' weighted moments, the mask broadcast along the last axis)."""
        from . import nn
        if mask is None:
            return nn.moments(inputs, axes=self._reduce_axes, keepdims=False)
        if mask._value.ndim != inputs._value.ndim - 1:
            raise ValueError(f"BatchNormalization layer '{self.name}': the mask should have one "
                             f"axis less than the inputs, got mask shape "
                             f"{tuple(mask._value.shape)} and inputs of shape "
                             f"{tuple(inputs._value.shape)}")
        from .ops import reduce as _red
        weights = _core.broadcast_to(_core.cast(_sh.expand_dims(mask, -1), inputs.dtype),
                                     tuple(inputs._value.shape))
        axes = self._reduce_axes
        count = _red.reduce_sum(weights, axis=axes, keepdims=True) + 1e-7
        mean = _red.reduce_sum(inputs * weights, axis=axes, keepdims=True) / count
        variance = _red.reduce_sum(_m.square((inputs - mean) * weights), axis=axes,
                                   keepdims=True) / count
        return _sh.reshape(mean, (-1,)), _sh.reshape(variance, (-1,))

    def _renorm_transform(self, mean, variance):
        """Batch renormalization's scale and offset for this training step (``r * gamma``,
        ``d * gamma + beta``, with ``r`` and ``d`` held constant), after which the renorm
        and moving statistics move toward the batch's."""
        stddev = _m.sqrt(variance + self.epsilon)
        renorm_stddev = _m.maximum(self.renorm_stddev, float(np.sqrt(self.epsilon)))
        r = stddev / renorm_stddev
        d = (mean - self.renorm_mean) / renorm_stddev
        clip = self.renorm_clipping or {}
        if clip.get("rmin") is not None:
            r = _m.maximum(r, float(clip["rmin"]))
        if clip.get("rmax") is not None:
            r = _m.minimum(r, float(clip["rmax"]))
        if clip.get("dmax") is not None:
            d = _m.clip_by_value(d, -float(clip["dmax"]), float(clip["dmax"]))
        r, d = _core.stop_gradient(r), _core.stop_gradient(d)
        gamma = r if self.gamma is None else r * self.gamma
        beta = d if self.gamma is None else d * self.gamma
        if self.beta is not None:
            beta = beta + self.beta
        self._blend(self.renorm_mean, mean, self.renorm_momentum)
        self._blend(self.renorm_stddev, stddev, self.renorm_momentum)
        self._blend(self.moving_mean, mean, self.momentum)
        self._blend(self.moving_stddev, stddev, self.momentum)
        var = self.moving_variance
        with var._device.activate():
            new = self.moving_stddev._value * self.moving_stddev._value
            new -= self.epsilon
            new[new < 0] = 0
        var._assign_array(new)
        return gamma, beta

    @staticmethod
    def _blend(var, batch, m):
        """``var = var * m + batch * (1 - m)`` (outside any tape)."""
        with var._device.activate():
            new = var._value * m
            new += batch._value * (1.0 - m)
        var._assign_array(new)

    def _update_moving(self, mean, variance):
        self._blend(self.moving_mean, mean, self.momentum)
        self._blend(self.moving_variance, variance, self.momentum)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "synchronized": self.synchronized, "renorm": self.renorm,
                "renorm_clipping": self.renorm_clipping,
                "renorm_momentum": self.renorm_momentum}


class Embedding(_LoRA, Layer):
    """Rows of an ``(input_dim, output_dim)`` table looked up by integer ids; a negative id
    counts from the end of the table (``-1`` is the last row), as Keras 3. ``weights``
    (the table, or a list holding it) sets the table at construction. ``lora_rank`` (or
    ``enable_lora``) adapts the table with LoRA, as Keras 3 (see :class:`_LoRA`)."""

    autocast = False
    _UNTRACKED = Layer._UNTRACKED | {"_lora_regularizer"}
    embeddings = _lora_property("embeddings")
    _LORA_WEIGHT = "embeddings"
    _LORA_NAMES = ("lora_embeddings_a", "lora_embeddings_b")
    _LORA_WHAT = "embedding"

    _REGULARIZABLE = {"embeddings": "embeddings"}
    _ACTIVITY_IN_CONFIG = True

    _INITIALIZER_ARGS = {"embeddings_initializer": "embeddings_initializer"}

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", name=None,
                 mask_zero=False, input_length=None, weights=None, lora_rank=None,
                 lora_alpha=None, quantization_config=None, **kwargs):
        _no_quantization("Embedding", quantization_config)
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (int(input_length),)     # Keras 2: the sequence length
        super().__init__(name=name, **kwargs)
        self.mask_zero = bool(mask_zero)
        self.input_dim = _positive_int(input_dim, "input_dim", "Embedding")
        self.output_dim = _positive_int(output_dim, "output_dim", "Embedding")
        self.embeddings_initializer = _init.get(embeddings_initializer)
        self.input_spec = InputSpec(dtype_kind="iu")
        self._lora_setup(lora_rank, lora_alpha)
        if weights is not None:
            self.build(None)
            if not (isinstance(weights, list) and len(weights) == 1):
                weights = [weights]
            self.set_weights(weights)

    def _convert_input(self, x):
        if not isinstance(x, Tensor) and not isinstance(x, np.ndarray) and \
                current_device().is_native(x):
            x = convert_to_tensor(x)            # a raw device array: placed as it is
        if not isinstance(x, Tensor):
            host = np.asarray(x)
            if host.dtype.kind == "f":
                if host.size and not np.all(np.mod(host, 1) == 0):
                    raise TypeError(f"Embedding layer '{self.name}': ids must be integers, got "
                                    "non-integer floats")
                host = host.astype(np.int64)
            x = convert_to_tensor(host)
        elif x._value.dtype.kind == "f":
            x = _core.cast(x, np.int64)
        return x

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer)
        if self.lora_rank:
            self.built = True
            self.enable_lora(self.lora_rank)        # (Keras 3.15: alpha = rank)

    def call(self, inputs):
        from . import nn
        ids = inputs
        if ids._value.dtype.kind == "i":         # (Keras' take: -1 is the last row)
            ids = _m.where(_m.less(ids, 0), ids + self.input_dim, ids)
        return nn.embedding_lookup(self.embeddings, ids)

    def compute_mask(self, inputs, mask=None):
        """With ``mask_zero``: True where the id is not 0 (padding), as Keras."""
        if not self.mask_zero:
            return None
        return _m.not_equal(inputs, 0)

    def get_config(self):
        return self._lora_config({**super().get_config(), "input_dim": self.input_dim,
                                  "output_dim": self.output_dim, "mask_zero": self.mask_zero})


# recurrent layers (their module builds on Layer)
from .recurrent import (SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells, RNN,  # noqa: E402
                        SimpleRNN, LSTM, GRU)
from .layers_extra import (LeakyReLU, ELU, Softmax, PReLU, Conv2DTranspose,  # noqa: E402
                           UpSampling2D, ZeroPadding2D, Cropping2D, Concatenate, Add, Subtract,
                           Multiply, Average, Maximum, Minimum, Lambda, RepeatVector, Permute,
                           Rescaling, GaussianNoise, TimeDistributed, Bidirectional,
                           MultiHeadAttention, MaxPooling1D, MaxPool1D, AveragePooling1D,
                           AvgPool1D, GlobalAveragePooling1D, GlobalAvgPool1D,
                           GlobalMaxPooling1D, GlobalMaxPool1D, DepthwiseConv2D,
                           SeparableConv2D, SpatialDropout1D, SpatialDropout2D,
                           GaussianDropout, Normalization, Identity, Dot, Attention, Masking,
                           GroupNormalization, UnitNormalization, Resizing, CenterCrop,
                           RandomFlip, RandomCrop, Conv1DTranspose, UpSampling1D,
                           ZeroPadding1D, Cropping1D, AlphaDropout, ActivityRegularization,
                           AdditiveAttention, concatenate, add, subtract, multiply, average,
                           maximum, minimum, dot, DepthwiseConv1D, SeparableConv1D,
                           SpatialDropout3D)

# Keras' other names for the convolutions
Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose

from .layers_3d import (Conv3D, Conv3DTranspose, MaxPooling3D, MaxPool3D,  # noqa: E402
                        AveragePooling3D, AvgPool3D, GlobalAveragePooling3D, GlobalAvgPool3D,
                        GlobalMaxPooling3D, GlobalMaxPool3D, UpSampling3D, ZeroPadding3D,
                        Cropping3D)
from .layers_preprocessing import (RandomRotation, RandomZoom, RandomTranslation,  # noqa: E402
                                   RandomContrast, RandomBrightness, RandomHeight, RandomWidth,
                                   CategoryEncoding,
                                   Discretization, Hashing, IntegerLookup, StringLookup,
                                   TextVectorization)
from .layers_more import (EinsumDense, RMSNormalization, AdaptiveAveragePooling1D,  # noqa: E402
                          AdaptiveAveragePooling2D, AdaptiveAveragePooling3D,
                          AdaptiveMaxPooling1D, AdaptiveMaxPooling2D, AdaptiveMaxPooling3D,
                          Wrapper, SpectralNormalization, ThresholdedReLU,
                          ReversibleEmbedding)
from .layers_conv_rnn import (ConvLSTM1D, ConvLSTM2D, ConvLSTM3D,  # noqa: E402
                              GroupQueryAttention)
# (keras.utils' FeatureSpace is a layer too: here, load_model finds it when reading files)
from .feature_space import FeatureSpace, HashedCrossing  # noqa: E402,F401
from .layers_spectral import MelSpectrogram, STFTSpectrogram  # noqa: E402
from .layers_augment import (AutoContrast, Equalization, Solarization,  # noqa: E402
                             RandomInvert, RandomGrayscale, RandomHue, RandomSaturation,
                             RandomColorDegeneration, RandomColorJitter, RandomSharpness,
                             RandomPosterization, RandomShear, RandomPerspective,
                             RandomErasing, RandomGaussianBlur, RandomElasticTransform,
                             CutMix, MixUp, AugMix, RandAugment, MaxNumBoundingBoxes,
                             Pipeline)

Convolution3D = Conv3D
Convolution3DTranspose = Conv3DTranspose
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
