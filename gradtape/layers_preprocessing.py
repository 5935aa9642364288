"""Keras' image-augmentation and categorical preprocessing layers (Keras 3 semantics, as
``tf.keras`` in TF 2.21):

- ``RandomRotation``, ``RandomZoom``, ``RandomTranslation``: a random affine map per image,
  applied by :func:`affine_transform` (TF's ``ImageProjectiveTransformV3`` geometry, which
  Keras' ``keras.ops.image.affine_transform`` calls: pixel ``(x, y)`` of the output reads the
  input at ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x + c1 y + 1``,
  with the fill modes ``"reflect"``, ``"wrap"``, ``"constant"``, ``"nearest"`` and
  ``"bilinear"`` or ``"nearest"`` interpolation). Built from gradtape ops: differentiable
  with respect to the images, and run on the images' device.
- ``RandomContrast``, ``RandomBrightness``: one random factor per image, clipped to
  ``value_range``.
- ``RandomHeight``, ``RandomWidth``: the batch resized to a random height or width, one draw
  per call (the output shape depends on it, so that draw is read on the host).
- ``CategoryEncoding`` (``"one_hot"``, ``"multi_hot"``, ``"count"``), ``Discretization``
  (``bin_boundaries``, or ``num_bins`` learned by ``adapt``), ``Hashing`` (strings, integer
  and float inputs; TensorFlow's FarmHash of the string or of the decimal string, so the
  bins equal Keras'), ``IntegerLookup`` (``vocabulary`` or ``adapt``, ``num_oov_indices``,
  ``mask_token``, ``invert``, the encoded output modes).
- ``StringLookup`` (the same for strings, plus ``"tf_idf"`` and vocabulary files) and
  ``TextVectorization`` (standardize, split, ngrams, then a ``StringLookup``).

The random layers augment only when ``training`` is true and pass their inputs through at
inference. They draw on the inputs' device (from the layer's own generator when it has a
``seed``, else from the device's global generator): no host round trip. ``training`` is
resolved as for every gradtape layer (an enclosing call's value, ``fit``'s ``True``, and
``False`` for a direct top-level call); Keras 3 augments on a direct call without
``training`` (pass ``training=True`` for that).

``Hashing`` reads its inputs on the host (hashing decimal strings has no device
counterpart; Keras runs it on the CPU too); ``IntegerLookup`` with ``num_oov_indices=0``
reads them to check that every value is in the vocabulary. String tensors live on the host,
so the string layers work there and put the indices they make on the current device.
Saved models keep the lookups' state as Keras does: a vocabulary given to the constructor
in the config, an adapted one as the layer's asset ``vocabulary.txt`` (``save_assets`` /
``load_assets``; ``TextVectorization`` delegates to its ``StringLookup``), ``"tf_idf"``
weights as an own variable ``idf_weights`` (``save_own_variables`` /
``load_own_variables``); an adapted ``Discretization`` keeps its boundaries in the config.
Left out: ``salt`` (SipHash) of ``Hashing`` and the lookups, ``IntegerLookup``'s
``"tf_idf"`` mode and ``oov_method="farmhash"``, and sparse outputs.
"""
from __future__ import annotations

import collections

import numpy as np

from .layers import Layer
from .ops._util import as_tensor
from .registry import InvalidArgumentError
from .tensor import Tensor

__all__ = ["affine_transform", "RandomRotation", "RandomZoom", "RandomTranslation",
           "RandomContrast", "RandomBrightness", "RandomHeight", "RandomWidth",
           "CategoryEncoding", "Discretization",
           "Hashing", "IntegerLookup", "StringLookup", "TextVectorization"]

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_INTERPOLATIONS = ("nearest", "bilinear")


def _const(dev, arr):
    return Tensor(dev.asarray(arr), dev)


# --- affine transform -------------------------------------------------------------------------

def _map_coord(c, n, mode):
    """TF's MapCoordinate: an input coordinate outside ``[0, n - 1]`` mapped back per fill
    mode (float32, as TF)."""
    from .ops.math import clip_by_value, floor, where
    if mode == "constant":
        return c
    if n <= 1:
        return c * 0.0
    if mode == "reflect":
        sz2 = 2.0 * n
        neg = sz2 * floor(-c / sz2) + c
        neg = where(neg < -n, neg + sz2, -neg - 1.0)
        pos = c - sz2 * floor(c / sz2)
        pos = where(pos >= n, sz2 - pos - 1.0, pos)
        c = where(c < 0, neg, where(c > n - 1, pos, c))
    elif mode == "wrap":
        sz = float(n - 1)
        neg = c + n * (floor(-c / sz) + 1.0)
        pos = c - n * floor(c / sz)
        c = where(c < 0, neg, where(c > n - 1, pos, c))
    return clip_by_value(c, 0.0, float(n - 1))


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant",
                     fill_value=0, data_format=None) -> Tensor:
    """``images`` (``[batch, height, width, channels]`` or one image) mapped by the
    projective ``transform`` ``[a0, a1, a2, b0, b1, b2, c0, c1]`` (one, or one per image):
    output pixel ``(x, y)`` samples the input at ``((a0 x + a1 y + a2) / k, (b0 x + b1 y +
    b2) / k)``, ``k = c0 x + c1 y + 1``, as ``keras.ops.image.affine_transform`` (TF's
    ``ImageProjectiveTransformV3``). Samples outside the image follow ``fill_mode``
    (``"constant"``: ``fill_value``); ``interpolation`` ``"bilinear"`` or ``"nearest"``
    (rounding half away from zero). Float32 (float64 stays float64); differentiable with
    respect to the images and the transform."""
    from .ops.core import cast
    from .ops.math import clip_by_value, floor, logical_and, where, abs as _abs, sign
    from .ops.shape import expand_dims, gather, reshape, squeeze, transpose
    opname = "affine_transform"
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{opname}: Invalid value for argument `interpolation`. Expected of "
                         f"one {set(_INTERPOLATIONS)}. Received: interpolation={interpolation}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"{opname}: Invalid value for argument `fill_mode`. Expected of one "
                         f"{set(_FILL_MODES)}. Received: fill_mode={fill_mode}")
    x = as_tensor(images, opname)
    if x._value.ndim not in (3, 4):
        raise ValueError(f"{opname}: Invalid images rank: expected rank 3 (single image) or "
                         f"rank 4 (batch of images). Received input with shape: "
                         f"images.shape={tuple(x._value.shape)}")
    single = x._value.ndim == 3
    if single:
        x = expand_dims(x, 0)
    cf = data_format == "channels_first"
    if cf:
        x = transpose(x, [0, 2, 3, 1])
    if x._value.dtype != np.float64:
        x = cast(x, np.float32)
    dt = x._value.dtype
    dev = x._device
    t = transform if isinstance(transform, Tensor) else _const(dev, np.asarray(transform, dt))
    t = cast(t, dt)
    if t._value.ndim == 1:
        t = expand_dims(t, 0)
    if t._value.ndim != 2 or t._value.shape[1] != 8:
        raise ValueError(f"{opname}: Invalid transform shape: expected [8] or [batch, 8], got "
                         f"{tuple(t._value.shape)}")
    n, h, w, c = x._value.shape
    if t._value.shape[0] not in (1, n):
        raise ValueError(f"{opname}: {t._value.shape[0]} transforms for {n} images")
    cols = [reshape(t[:, i], [-1, 1, 1]) for i in range(8)]
    a0, a1, a2, b0, b1, b2, c0, c1 = cols
    xo = _const(dev, np.arange(w, dtype=dt).reshape(1, 1, w))
    yo = _const(dev, np.arange(h, dtype=dt).reshape(1, h, 1))
    proj = c0 * xo + c1 * yo + 1.0                                   # [n|1, h, w]
    ok_proj = proj != 0
    proj = where(ok_proj, proj, 1.0)
    in_x = _map_coord((a0 * xo + a1 * yo + a2) / proj, w, fill_mode)
    in_y = _map_coord((b0 * xo + b1 * yo + b2) / proj, h, fill_mode)
    if in_x._value.shape[0] != n:                                    # one transform, n images
        from .ops.shape import tile
        in_x, in_y = tile(in_x, [n, 1, 1]), tile(in_y, [n, 1, 1])
        ok_proj = tile(ok_proj, [n, 1, 1])
    flat = reshape(x, [n, h * w, c])

    def read(iy, ix):
        """Pixels at integer-valued float coordinates, ``fill_value`` outside the image."""
        valid = logical_and(logical_and(iy >= 0, iy <= h - 1), logical_and(ix >= 0, ix <= w - 1))
        idx = cast(clip_by_value(iy, 0.0, float(h - 1)) * w + clip_by_value(ix, 0.0, float(w - 1)),
                   np.int32)
        vals = gather(flat, reshape(idx, [n, h * w]), axis=1, batch_dims=1)
        vals = reshape(vals, [n, h, w, c])
        return where(expand_dims(valid, -1), vals, float(fill_value))

    if interpolation == "nearest":
        out = read(sign(in_y) * floor(_abs(in_y) + 0.5), sign(in_x) * floor(_abs(in_x) + 0.5))
    else:
        y0, x0 = floor(in_y), floor(in_x)
        y1, x1 = y0 + 1.0, x0 + 1.0
        wx0, wx1 = expand_dims(x1 - in_x, -1), expand_dims(in_x - x0, -1)
        wy0, wy1 = expand_dims(y1 - in_y, -1), expand_dims(in_y - y0, -1)
        top = wx0 * read(y0, x0) + wx1 * read(y0, x1)
        bottom = wx0 * read(y1, x0) + wx1 * read(y1, x1)
        out = wy0 * top + wy1 * bottom
    out = where(expand_dims(ok_proj, -1), out, float(fill_value))
    if cf:
        out = transpose(out, [0, 3, 1, 2])
    return squeeze(out, 0) if single else out


# --- random image layers ----------------------------------------------------------------------

def _data_format(value, who):
    value = "channels_last" if value is None else str(value).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"{who}: data_format must be 'channels_last' or 'channels_first', got "
                         f"{value!r}")
    return value


def _factor_pair(factor, bounds, who, what="factor", open_low=False):
    """Keras' factor: a number ``f`` -> ``(-|f|, |f|)`` (the lower end clipped to the
    bounds' lower end), or two numbers sorted; each within ``bounds``."""
    lo_b, hi_b = bounds
    msg = (f"{who}: The `{what}` argument should be a number (or a list of two numbers) in "
           f"the range {'(' if open_low else '['}{lo_b}, {hi_b}]. Received: {what}={factor}")

    def check(v):
        if v > hi_b or v < lo_b or (open_low and v <= lo_b):
            raise ValueError(msg)

    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(msg)
        check(factor[0])
        check(factor[1])
        lo, hi = sorted(float(f) for f in factor)
        return lo, hi
    if isinstance(factor, (int, float, np.integer, np.floating)) and not isinstance(factor,
                                                                                   bool):
        check(factor)
        f = abs(float(factor))
        return max(-f, lo_b) if not open_low else -f, f
    raise ValueError(msg)


class _RandomImageLayer(Layer):
    """Shared: seeds, drawing on the images' device, channels-first handling."""

    autocast = False

    def __init__(self, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.seed = seed
        self.data_format = _data_format(data_format, type(self).__name__)

    def _uniform(self, x, shape, lo, hi):
        from .backend import device_scope
        from . import random as _random
        rng = self._seeded_generator(x._device)
        with device_scope(x._device):
            if rng is not None:
                return rng.uniform(shape, minval=lo, maxval=hi)
            return _random.uniform(shape, minval=lo, maxval=hi)

    def _images(self, inputs):
        x = as_tensor(inputs, type(self).__name__)
        if x._value.ndim not in (3, 4):
            raise ValueError(f"{type(self).__name__} layer '{self.name}': Expected the input "
                             f"image to be rank 3 or 4. Received inputs.shape="
                             f"{tuple(x._value.shape)}")
        return x

    def _hw(self, x):
        s = x._value.shape
        return (s[-2], s[-1]) if self.data_format == "channels_first" else (s[-3], s[-2])

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "data_format": self.data_format}


class _AffineLayer(_RandomImageLayer):
    """A random affine map per image (``_transforms`` gives them, ``[n, 8]``)."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, name=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, name=name, **kwargs)
        if fill_mode not in _FILL_MODES:
            raise ValueError(f"{type(self).__name__}: Unknown `fill_mode` {fill_mode}. "
                             f"Expected of one {_FILL_MODES}.")
        if interpolation not in _INTERPOLATIONS:
            raise ValueError(f"{type(self).__name__}: Unknown `interpolation` "
                             f"{interpolation}. Expected of one {_INTERPOLATIONS}.")
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value

    def call(self, inputs, training=True):
        from .ops.core import cast
        x = self._images(inputs)
        x = cast(x, self._compute_dtype)            # as Keras, also at inference
        if not training:
            return x
        n = 1 if x._value.ndim == 3 else x._value.shape[0]
        h, w = self._hw(x)
        return affine_transform(x, self._transforms(x, n, h, w), self.interpolation,
                                self.fill_mode, self.fill_value, self.data_format)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


def _stack_cols(cols):
    from .ops.shape import concat
    return concat(cols, axis=1)


class RandomRotation(_AffineLayer):
    """Rotate each image by a random angle in ``factor * 360`` degrees (``factor``: ``f`` for
    ``[-f, f]``, or ``(lower, upper)``, within ``[-1, 1]``; counter-clockwise for positive
    angles) about its centre, as Keras 3's ``RandomRotation``."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, name=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, name,
                         **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "RandomRotation")

    def _transforms(self, x, n, h, w):
        from .ops.math import cos, sin
        from .ops.shape import reshape
        lo, hi = self.factor
        angle = self._uniform(x, [n], lo * 360.0, hi * 360.0) * (np.pi / 180.0)
        angle = reshape(angle, [n, 1])
        cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
        a0, a1 = cos(angle), -sin(angle)
        b0, b1 = sin(angle), cos(angle)
        zero = angle * 0.0
        return _stack_cols([a0, a1, cx - cx * a0 - cy * a1, b0, b1, cy - cx * b0 - cy * b1,
                            zero, zero])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_AffineLayer):
    """Zoom each image by a random factor about its centre: ``height_factor`` (``f`` for
    ``[-f, f]`` or ``(lower, upper)``, within ``(-1, 1]``) scales the sampling step by
    ``1 + draw`` (negative: zoom in); ``width_factor`` likewise, or the same draw when
    ``None`` (the aspect ratio kept), as Keras 3's ``RandomZoom``."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 name=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, name,
                         **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self._height = _factor_pair(height_factor, (-1.0, 1.0), "RandomZoom", "height_factor",
                                    open_low=True)
        self._width = None if width_factor is None else _factor_pair(
            width_factor, (-1.0, 1.0), "RandomZoom", "width_factor", open_low=True)

    _UNTRACKED = _AffineLayer._UNTRACKED | {"_height", "_width"}

    def _transforms(self, x, n, h, w):
        zy = self._uniform(x, [n, 1], 1.0 + self._height[0], 1.0 + self._height[1])
        zx = zy if self._width is None else self._uniform(x, [n, 1], 1.0 + self._width[0],
                                                          1.0 + self._width[1])
        zero = zy * 0.0
        return _stack_cols([zx, zero, (w - 1) / 2.0 * (1.0 - zx), zero, zy,
                            (h - 1) / 2.0 * (1.0 - zy), zero, zero])

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_AffineLayer):
    """Shift each image by random fractions of its height and width (``height_factor``,
    ``width_factor``: ``f`` for ``[-f, f]`` or ``(lower, upper)``, within ``[-1, 1]``;
    positive moves down / right), as Keras 3's ``RandomTranslation``."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 name=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, name,
                         **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self._height = _factor_pair(height_factor, (-1.0, 1.0), "RandomTranslation",
                                    "height_factor", open_low=False)
        self._width = _factor_pair(width_factor, (-1.0, 1.0), "RandomTranslation",
                                   "width_factor", open_low=False)

    _UNTRACKED = _AffineLayer._UNTRACKED | {"_height", "_width"}

    def _transforms(self, x, n, h, w):
        ty = self._uniform(x, [n, 1], *self._height) * float(h)
        tx = self._uniform(x, [n, 1], *self._width) * float(w)
        zero = ty * 0.0
        one = zero + 1.0
        return _stack_cols([one, zero, -tx, zero, one, -ty, zero, zero])

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


def _value_range(value_range, who):
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError(f"{who}: The `value_range` argument should be a list of two numbers. "
                         f"Received: value_range={value_range}")
    return value_range


class RandomContrast(_RandomImageLayer):
    """When training, ``(x - mean) * c + mean`` per image and channel (the mean over height
    and width) with ``c`` drawn per image from ``[1 - lower, 1 + upper)``, clipped to
    ``value_range``. ``factor``: ``(lower, upper)`` within ``[0, 1]``, or a number ``f``,
    which Keras 3 (3.15) takes as ``(0, f)``."""

    def __init__(self, factor, value_range=(0, 255), seed=None, name=None, **kwargs):
        data_format = kwargs.pop("data_format", None)
        super().__init__(seed=seed, data_format=data_format, name=name, **kwargs)
        self.factor = _factor_pair(factor, (0, 1), "RandomContrast")
        self.value_range = _value_range(value_range, "RandomContrast")

    def call(self, inputs, training=True):
        from .ops.core import cast
        from .ops.math import clip_by_value
        from .ops.reduce import reduce_mean
        x = self._images(inputs)
        if not training:
            return x
        x = cast(x, self._compute_dtype)
        shape = [1, 1, 1] if x._value.ndim == 3 else [x._value.shape[0], 1, 1, 1]
        f = cast(self._uniform(x, shape, 1.0 - self.factor[0], 1.0 + self.factor[1]),
                 x._value.dtype)
        axes = [-2, -1] if self.data_format == "channels_first" else [-3, -2]
        mean = reduce_mean(x, axis=axes, keepdims=True)
        out = (x - mean) * f + mean
        return clip_by_value(out, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}


class RandomBrightness(_RandomImageLayer):
    """When training, add ``d * (value_range[1] - value_range[0])`` to each image, ``d``
    drawn per image from ``factor`` (``f`` for ``[-f, f)``, or ``(lower, upper)``, within
    ``[-1, 1]``), then clip to ``value_range``, as Keras 3's ``RandomBrightness``."""

    def __init__(self, factor, value_range=(0, 255), seed=None, name=None, **kwargs):
        data_format = kwargs.pop("data_format", None)
        super().__init__(seed=seed, data_format=data_format, name=name, **kwargs)
        self.factor = _factor_pair(factor, (-1, 1), "RandomBrightness")
        self.value_range = sorted(_value_range(value_range, "RandomBrightness"))

    def call(self, inputs, training=True):
        from .ops.core import cast
        from .ops.math import clip_by_value
        x = self._images(inputs)
        if not training:
            return x
        x = cast(x, self._compute_dtype)
        shape = [1, 1, 1] if x._value.ndim == 3 else [x._value.shape[0], 1, 1, 1]
        span = float(self.value_range[1] - self.value_range[0])
        delta = cast(self._uniform(x, shape, *self.factor) * span, x._value.dtype)
        return clip_by_value(x + delta, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}



class _RandomResizeLayer(_RandomImageLayer):
    """Resize the batch along one axis (``_AXIS``: -3 height, -2 width) by ``1 + draw``,
    one draw per call from ``[1 + lower, 1 + upper)`` (Keras' legacy ``RandomHeight`` /
    ``RandomWidth``, which ``tf.keras`` 2.21 exports; channels-last only, as they). The new
    size is truncated to an integer, as Keras' ``int32`` cast. The output's shape depends on
    the draw, so it is read on the host: one synchronisation per training call (Keras'
    TensorFlow backend reads it as well, inside ``tf.image.resize``)."""

    _AXIS = -3

    def __init__(self, factor, interpolation="bilinear", seed=None, name=None, **kwargs):
        super().__init__(seed=seed, name=name, **kwargs)
        from .image import _METHODS
        who = type(self).__name__
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2:
                raise ValueError(f"{who}: `factor` should be a number or a list of two "
                                 f"numbers. Received: factor={factor}")
            lower, upper = float(factor[0]), float(factor[1])
        elif isinstance(factor, (int, float, np.integer, np.floating)) and not isinstance(
                factor, bool):
            lower, upper = -float(factor), float(factor)
        else:
            raise ValueError(f"{who}: `factor` should be a number or a list of two numbers. "
                             f"Received: factor={factor}")
        if upper < lower:
            raise ValueError(f"{who}: `factor` argument cannot have an upper bound lesser "
                             f"than the lower bound. Received: factor={factor}")
        if lower < -1.0 or upper < -1.0:
            raise ValueError(f"{who}: `factor` argument must have values larger than -1. "
                             f"Received: factor={factor}")
        interpolation = str(interpolation).lower()
        if interpolation not in _METHODS:
            raise ValueError(f"{who}: interpolation must be one of {list(_METHODS)}, got "
                             f"{interpolation!r}")
        self.factor = factor
        self.interpolation = interpolation
        self._bounds = (lower, upper)

    _UNTRACKED = _RandomImageLayer._UNTRACKED | {"_bounds"}

    def call(self, inputs, training=True):
        from .image import resize
        from .ops.core import cast
        x = cast(self._images(inputs), self._compute_dtype)   # as Keras, also at inference
        if not training:
            return x
        lo, hi = self._bounds
        draw = self._uniform(x, [], 1.0 + lo, 1.0 + hi)
        f = np.float32(draw.numpy())                     # the host read of the new size
        h, w = self._hw(x)
        size = [int(f * np.float32(h)), w] if self._AXIS == -3 else [h, int(f * np.float32(w))]
        if size[0] <= 0 or size[1] <= 0:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': the drawn factor "
                             f"{float(f)} gives an empty image of size {size}")
        return cast(resize(x, size, method=self.interpolation), self._compute_dtype)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        shape[self._AXIS] = None
        return tuple(shape)

    def get_config(self):
        config = super().get_config()
        config.pop("data_format", None)
        return {**config, "factor": self.factor, "interpolation": self.interpolation}


class RandomHeight(_RandomResizeLayer):
    """When training, resize the images' height by a random factor ``1 + d``, ``d`` drawn once
    per call from ``factor`` (``f`` for ``[-f, f)``, or ``(lower, upper)``, values above -1),
    the width kept, with ``interpolation`` (a ``tf.image.resize`` method), as ``tf.keras``'
    ``RandomHeight``; inputs pass through at inference. The output height is drawn, so each
    training call reads the draw on the host."""

    _AXIS = -3


class RandomWidth(_RandomResizeLayer):
    """When training, resize the images' width by a random factor ``1 + d`` drawn once per
    call, as :class:`RandomHeight` does the height (``tf.keras``' ``RandomWidth``)."""

    _AXIS = -2

# --- categorical encodings --------------------------------------------------------------------

def _encode(indices, output_mode, depth, dtype, count_weights=None):
    """Keras' ``encode_categorical_inputs`` on integer ``indices`` (values outside
    ``[0, depth)`` encode to nothing)."""
    from .ops.core import cast
    from .ops.reduce import reduce_max, reduce_sum
    from .ops.shape import expand_dims, one_hot, reshape
    if output_mode == "int":
        return cast(indices, dtype)
    x = indices
    if x._value.ndim == 0:
        x = expand_dims(x, -1)
    if output_mode == "one_hot":
        if x._value.ndim > 1 and x._value.shape[-1] == 1:
            x = reshape(x, list(x._value.shape[:-1]))
        return one_hot(x, depth, dtype=dtype)
    axis = 1 if x._value.ndim > 1 else 0
    if output_mode == "multi_hot":
        return reduce_max(one_hot(x, depth, dtype=dtype), axis=axis)
    if count_weights is not None:
        oh = one_hot(x, depth, dtype=count_weights._value.dtype)
        return reduce_sum(oh * expand_dims(count_weights, -1), axis=axis)
    return reduce_sum(one_hot(x, depth, dtype=dtype), axis=axis)


_ENCODINGS = ("int", "one_hot", "multi_hot", "count")


def _check_mode(mode, allowed, who):
    if mode == "binary":
        mode = "multi_hot"
    if mode not in allowed:
        raise ValueError(f"{who}: Invalid value for argument `output_mode`. Expected one of "
                         f"{allowed}. Received: output_mode={mode!r}")
    return mode


def _no_sparse(sparse, who):
    if sparse:
        raise ValueError(f"{who}: sparse=True is not supported (gradtape has no sparse "
                         "tensors)")


def _input(inputs, who, device=None):
    if isinstance(inputs, Tensor):
        return inputs
    from .backend import current_device
    dev = current_device() if device is None else device
    return _const(dev, np.asarray(inputs))


class CategoryEncoding(Layer):
    """Integer category ids ``[0, num_tokens)`` to ``"one_hot"`` (a last axis of 1 is
    replaced), ``"multi_hot"`` or ``"count"`` vectors (over the last axis of a rank-1 or
    rank-2 input; ``count_weights`` weight the counts) in the layer's dtype."""

    autocast = False

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.output_mode = _check_mode(output_mode, ("count", "one_hot", "multi_hot"),
                                       "CategoryEncoding")
        if num_tokens is None:
            raise ValueError("CategoryEncoding: num_tokens must be set to use this layer. If "
                             "the number of tokens is not known beforehand, use the "
                             "IntegerLookup layer instead.")
        if int(num_tokens) < 1:
            raise ValueError(f"CategoryEncoding: `num_tokens` must be >= 1. Received: "
                             f"num_tokens={num_tokens}.")
        self.num_tokens = int(num_tokens)
        _no_sparse(sparse, "CategoryEncoding")
        self.sparse = False

    def call(self, inputs, count_weights=None):
        from .ops.core import cast
        x = _input(inputs, "CategoryEncoding")
        if x._value.dtype.kind not in "iu":
            x = cast(x, np.int64)
        if count_weights is not None:
            if self.output_mode != "count":
                raise ValueError(f"CategoryEncoding: `count_weights` is not used when "
                                 f"`output_mode` is not `'count'`. Received "
                                 f"`count_weights={count_weights}`.")
            count_weights = cast(_input(count_weights, "CategoryEncoding", x._device),
                                 self._compute_dtype)
        return _encode(x, self.output_mode, self.num_tokens, self._compute_dtype, count_weights)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": self.sparse}


def _summarize(values, epsilon):
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size / (1.0 / epsilon), 1)
    boundaries = values[int(step - 1)::int(step)]
    return np.stack([boundaries, np.ones_like(boundaries) * step])


def _compress(summary, epsilon):
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    bins = np.interp(percents, cum / cum[-1], summary[0])
    cum = np.interp(percents, cum / cum[-1], cum)
    weights = cum - np.concatenate((np.array([0]), cum[:-1]))
    return np.stack((bins, weights)).astype("float32")


class Discretization(Layer):
    """Bucket ids of numbers: bucket ``i`` holds ``bin_boundaries[i - 1] <= x <
    bin_boundaries[i]`` (``"int"``, int32), or those ids encoded (``"one_hot"``,
    ``"multi_hot"``, ``"count"``, float32). ``num_bins`` with :meth:`adapt` learns the
    boundaries as Keras' approximate quantiles (``epsilon``)."""

    autocast = False

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, dtype=None, name=None, **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        _no_sparse(sparse, "Discretization")
        self.output_mode = _check_mode(output_mode, _ENCODINGS, "Discretization")
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"Discretization: `num_bins` must be greater than or equal to 0. "
                             f"Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Discretization: Both `num_bins` and `bin_boundaries` should not "
                             f"be set. Received: `num_bins={num_bins}` and "
                             f"`bin_boundaries={bin_boundaries}`")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("Discretization: You need to set either `num_bins` or "
                             "`bin_boundaries`.")
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in
                                                                   bin_boundaries]
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.sparse = False
        self._summary = None if bin_boundaries else np.array([[], []], np.float32)

    _UNTRACKED = Layer._UNTRACKED | {"_summary", "_boundary_tensors"}

    def adapt(self, data, steps=None):
        """Learn ``num_bins`` boundaries from ``data`` (an array, a tensor, a
        ``gt.data.Dataset`` or an iterable of batches; read on the host, as Keras)."""
        if self.num_bins is None:
            raise ValueError("Discretization: Cannot adapt a Discretization layer that has been "
                             "initialized with `bin_boundaries`, use `num_bins` instead.")
        self._summary = np.array([[], []], np.float32)
        if isinstance(data, (np.ndarray, Tensor)) or not hasattr(data, "__iter__"):
            batches = [data]
        else:
            batches = (b for i, b in enumerate(data) if steps is None or i < steps)
        for b in batches:
            b = np.asarray(b.numpy() if isinstance(b, Tensor) else b).astype("float32")
            merged = np.concatenate((_summarize(b, self.epsilon), self._summary), axis=1)
            merged = np.take(merged, np.argsort(merged[0]), axis=1)
            self._summary = _compress(merged, self.epsilon)
        self.bin_boundaries = _compress(self._summary, 1.0 / self.num_bins)[0, :-1].tolist()
        self.__dict__.pop("_boundary_tensors", None)

    def call(self, inputs):
        from .ops.core import cast
        from .ops.extra import searchsorted
        from .ops.shape import reshape
        if self.bin_boundaries is None:
            raise ValueError("Discretization: You need to either pass the `bin_boundaries` "
                             "argument at construction time or call `adapt(dataset)` before "
                             "you can start using the `Discretization` layer.")
        x = _input(inputs, "Discretization")
        if x._value.dtype != np.float64:
            x = cast(x, np.float32)
        dt = x._value.dtype
        cache = self.__dict__.setdefault("_boundary_tensors", {})
        key = (x._device, dt)
        if key not in cache:
            cache[key] = _const(x._device, np.asarray(self.bin_boundaries, dt))
        if not self.bin_boundaries:
            from .ops.core import zeros_like
            ids = cast(zeros_like(x), np.int32)
        else:
            ids = reshape(searchsorted(cache[key], reshape(x, [-1]), side="right"),
                          list(x._value.shape))
        out_dt = np.int32 if self.output_mode == "int" else self._compute_dtype
        return _encode(ids, self.output_mode, len(self.bin_boundaries) + 1, out_dt)

    def get_config(self):
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse}

    @classmethod
    def from_config(cls, config):
        """The layer of :meth:`get_config`. An adapted layer's config holds both
        ``num_bins`` and the learned ``bin_boundaries``, which the constructor refuses
        together: as Keras, the boundaries are applied after construction."""
        config = dict(config)
        if config.get("bin_boundaries") is not None and config.get("num_bins") is not None:
            boundaries = config.pop("bin_boundaries")
            layer = cls(**config)
            layer.bin_boundaries = [float(b) for b in boundaries]
            return layer
        return cls(**config)


# --- hashing ----------------------------------------------------------------------------------

def _hash_ints(values, bins):
    """``Fingerprint64(str(v)) % bins`` for int64 ``values`` (TF's ``as_string`` then
    ``to_hash_bucket_fast``)."""
    return _hash_strings([str(int(v)).encode() for v in values.reshape(-1)], bins).reshape(
        values.shape)


def _hash_strings(items, bins):
    """``Fingerprint64(s) % bins`` (FarmHash, as TF's ``to_hash_bucket_fast``) of each of
    the ``bytes`` in ``items``, as int64."""
    from .strings import _fingerprint64
    return (_fingerprint64(items) % np.uint64(bins)).astype(np.int64)


class Hashing(Layer):
    """Strings, or integers (floats are truncated to int64 first), hashed into ``num_bins``
    bins: TensorFlow's FarmHash of each string (of each integer's decimal string) modulo
    the bins, so the bins equal Keras'. ``mask_value`` goes to bin 0 and the rest hash into
    ``num_bins - 1`` bins after it. ``output_mode``: ``"int"`` (int64) or the encodings. The
    values are read on the host (as Keras, which hashes on the CPU); the result lands on
    the inputs' device (for strings, which live on the host: the current device, as for
    ``StringLookup``). ``salt`` (SipHash) is not supported."""

    autocast = False

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False,
                 name=None, **kwargs):
        # Keras' int64 dtype policy for "int": the output is int64 whatever the policy
        if kwargs.get("dtype") in ("int64", "int32"):
            kwargs.pop("dtype")
        super().__init__(name=name, **kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(f"Hashing: The `num_bins` for `Hashing` cannot be `None` or "
                             f"non-positive values. Received: num_bins={num_bins}.")
        if salt is not None:
            raise ValueError("Hashing: `salt` (SipHash strong hashing) is not supported by "
                             "gradtape")
        self.output_mode = _check_mode(output_mode, _ENCODINGS, "Hashing")
        _no_sparse(sparse, "Hashing")
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.salt = None
        self.sparse = False

    _UNTRACKED = Layer._UNTRACKED | {"_out_device"}

    def __call__(self, inputs, *args, **kwargs):
        self.__dict__["_out_device"] = _output_device()
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        if isinstance(inputs, Tensor):
            x = inputs
        else:
            from .tensor import convert_to_tensor
            x = convert_to_tensor(inputs)
        v = x.numpy()                     # hashing strings: on the host
        v = v if isinstance(v, np.ndarray) else np.asarray(v, dtype=x._value.dtype)
        bins = self.num_bins
        masked = self.mask_value is not None and bins > 1
        if v.dtype.kind == "O":
            items = v.reshape(-1).tolist()
            dev = self.__dict__.get("_out_device") or _output_device()
            if masked:
                ids = _hash_strings(items, bins - 1) + 1
                mask = _token_bytes(self.mask_value)
                ids[np.fromiter((t == mask for t in items), np.bool_, len(items))] = 0
            else:
                ids = _hash_strings(items, bins)
            ids = ids.reshape(v.shape)
        elif v.dtype.kind in "iuf":
            v = v.astype(np.int64)
            dev = x._device
            if masked:
                ids = _hash_ints(v, bins - 1) + 1
                ids[v == int(self.mask_value)] = 0
            else:
                ids = _hash_ints(v, bins)
        else:
            raise TypeError(f"Hashing layer '{self.name}': expected string, integer or float "
                            f"inputs, got {x.dtype.name}")
        ids = _const(dev, ids)
        if self.output_mode == "one_hot" and ids._value.ndim and ids._value.shape[-1] == 1:
            from .ops.shape import squeeze
            ids = squeeze(ids, -1)
        dt = np.int64 if self.output_mode == "int" else self._compute_dtype
        return _encode(ids, self.output_mode, bins, dt)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt,
                "mask_value": self.mask_value, "output_mode": self.output_mode,
                "sparse": self.sparse}


# --- integer lookup ---------------------------------------------------------------------------

def _check_lookup_sizes(who, max_tokens, pad_to_max_tokens, num_oov_indices):
    """The size arguments of a lookup layer, with Keras' errors."""
    if max_tokens is not None and max_tokens <= 1:
        raise ValueError(f"{who}: If set, `max_tokens` must be greater than 1. Received: "
                         f"max_tokens={max_tokens}")
    if pad_to_max_tokens and max_tokens is None:
        raise ValueError(f"{who}: If pad_to_max_tokens is True, must set `max_tokens`. "
                         f"Received: max_tokens={max_tokens}")
    if num_oov_indices < 0:
        raise ValueError(f"{who}: `num_oov_indices` must be greater than or equal to 0. "
                         f"Received: num_oov_indices={num_oov_indices}")


_VOCABULARY_FILE = "vocabulary.txt"


def _save_vocabulary(dir_path, vocabulary):
    """Keras' ``save_assets`` of a lookup layer: ``vocabulary.txt`` in ``dir_path``, one
    token a line (the special tokens first), joined by newlines without a final one."""
    import os
    lines = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in vocabulary]
    with open(os.path.join(dir_path, _VOCABULARY_FILE), "wb") as f:
        f.write(b"\n".join(lines))


def _load_vocabulary(dir_path):
    """The tokens (``bytes``) of ``vocabulary.txt`` in ``dir_path``: its lines, each without
    the ``"\\r"`` that Windows writes before the newline, empty lines at the end dropped
    (as Keras' ``load_assets``); None when there is none. Lines split at ``"\\n"`` only,
    the exact inverse of the writer, so a token holding another line-break character (or
    bytes that are not UTF-8) survives."""
    import os
    if dir_path is None:
        return None
    path = os.path.join(os.fspath(dir_path), _VOCABULARY_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in f.read().split(b"\n")]
    while lines and lines[-1] == b"":
        lines.pop()
    return lines


def _saved_idf(store, who):
    """The ``idf_weights`` entry of a saved layer's own variables, as a float32 vector."""
    w = np.asarray(store["idf_weights"])
    if w.ndim != 1 or w.dtype.kind not in "fiu":
        raise ValueError(f"{who}: the saved idf_weights must be a vector of numbers, got "
                         f"shape {w.shape} dtype {w.dtype}")
    return w.astype(np.float32)


class IntegerLookup(Layer):
    """Integers to vocabulary indices, as Keras' ``IntegerLookup``: index 0 is
    ``mask_token`` when one is set (``"int"`` mode), then ``num_oov_indices`` indices for
    values outside the vocabulary (``value mod num_oov_indices`` picks one), then the
    vocabulary in order. ``vocabulary`` is given, or learned by :meth:`adapt` (most frequent
    first, ties by larger value; at most ``max_tokens`` indices in all). ``invert=True``
    maps indices back to values (``oov_token`` for unknown ones). ``output_mode``:
    ``"int"`` (int64) or the encodings (``"one_hot"``, ``"multi_hot"``, ``"count"``,
    int64 as Keras', ``vocabulary_size()`` wide, or ``max_tokens`` with ``pad_to_max_tokens``).
    The lookup runs on the inputs' device (a sorted table and a binary search)."""

    autocast = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="floormod", salt=None, name=None, **kwargs):
        # Keras' config: the vocabulary's size when saved (its values come with the assets)
        saved_size = kwargs.pop("vocabulary_size", None)
        super().__init__(name=name, **kwargs)
        who = "IntegerLookup"
        _check_lookup_sizes(who, max_tokens, pad_to_max_tokens, num_oov_indices)
        if str(vocabulary_dtype) not in ("int64", "int32"):
            raise ValueError(f"{who}: vocabulary_dtype must be 'int64' or 'int32', got "
                             f"{vocabulary_dtype!r}")
        if oov_method != "floormod" or salt is not None:
            raise ValueError(f"{who}: only oov_method='floormod' without salt is supported "
                             f"(got oov_method={oov_method!r}, salt={salt!r})")
        if idf_weights is not None or output_mode in ("tf_idf", "tf-idf"):
            raise ValueError(f"{who}: output_mode 'tf_idf' is not supported by gradtape")
        self.output_mode = _check_mode(output_mode, _ENCODINGS, who)
        if invert and self.output_mode != "int":
            raise ValueError(f"{who}: `output_mode` must be `'int'` when `invert` is true. "
                             f"Received: output_mode={output_mode}")
        _no_sparse(sparse, who)
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = None if mask_token is None else int(mask_token)
        self.oov_token = int(oov_token)
        self.vocabulary_dtype = str(vocabulary_dtype)
        self.invert = bool(invert)
        self.sparse = False
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.oov_method = oov_method
        self.salt = None
        self._vocab = None                 # the learned/given tokens (no special ones)
        self._given = vocabulary is not None
        self.input_vocabulary = vocabulary
        self._saved_vocab_size = saved_size
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    _UNTRACKED = Layer._UNTRACKED | {"_vocab", "_given", "_tables", "input_vocabulary",
                                     "_saved_vocab_size"}

    def _oov_start(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self):
        return self._oov_start() + self.num_oov_indices

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Use ``vocabulary`` (integers; may start with the special tokens, which are then
        dropped)."""
        if idf_weights is not None:
            raise ValueError("IntegerLookup: idf_weights (tf_idf) is not supported")
        vocab = np.asarray(vocabulary.numpy() if isinstance(vocabulary, Tensor) else vocabulary)
        if vocab.size == 0:
            raise ValueError(f"IntegerLookup: Cannot set an empty vocabulary. Received: "
                             f"vocabulary={vocabulary}")
        vocab = vocab.astype(np.int64).reshape(-1).tolist()
        special = ([self.mask_token] * self._oov_start() +
                   [self.oov_token] * self.num_oov_indices)
        if vocab[:len(special)] == special:
            vocab = vocab[len(special):]
        repeated = [t for t, c in collections.Counter(vocab).items() if c > 1]
        if repeated:
            raise ValueError(f"IntegerLookup: The passed vocabulary has at least one repeated "
                             f"term. Please uniquify your dataset. The repeated terms are "
                             f"{repeated}")
        for tok, what in ((self.mask_token, "mask_token"), (self.oov_token, "oov_token")):
            if tok is not None and tok in vocab and not (what == "oov_token" and
                                                         self.num_oov_indices == 0):
                raise ValueError(f"IntegerLookup: Found reserved token {tok} ({what}) in the "
                                 f"vocabulary at index {vocab.index(tok)}; the special tokens "
                                 f"may only come first")
        if self.max_tokens is not None and len(vocab) + self._token_start() > self.max_tokens:
            raise ValueError(f"IntegerLookup: Attempted to set a vocabulary larger than the "
                             f"maximum vocab size. Received vocabulary size is "
                             f"{len(vocab) + self._token_start()}; `max_tokens` is "
                             f"{self.max_tokens}.")
        self._vocab = vocab
        self._given = True
        self.__dict__.pop("_tables", None)

    def adapt(self, data, steps=None):
        """Learn the vocabulary from ``data`` (an array, a tensor, a ``gt.data.Dataset`` or
        an iterable of batches; counted on the host): the most frequent values first, ties
        by the larger value, up to ``max_tokens`` indices with the special ones."""
        batches = _adapt_batches(data, steps)
        if batches is None:
            batches = [data]
        counts = collections.Counter()
        for b in batches:
            arr = np.asarray(b.numpy() if isinstance(b, Tensor) else b).astype(np.int64)
            counts.update(arr.reshape(-1).tolist())
        counts.pop(self.mask_token, None)
        counts.pop(self.oov_token, None)
        toks = np.array(list(counts.keys()), np.int64)
        cnts = np.array(list(counts.values()), np.int64)
        order = np.lexsort((toks, cnts))[::-1]
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start()]
        self._vocab = toks[order].tolist()
        self._given = False
        self.__dict__.pop("_tables", None)

    def vocabulary_size(self) -> int:
        """Indices in use, the special ones included."""
        return len(self._vocab or []) + self._token_start()

    def get_vocabulary(self, include_special_tokens=True) -> list:
        """The value of each index (the special tokens first, unless left out)."""
        vocab = ([self.oov_token] * self._token_start()) + list(self._vocab or [])
        if self.mask_token is not None and self.output_mode == "int":
            vocab[0] = self.mask_token
        return vocab if include_special_tokens else vocab[self._token_start():]

    def _table(self, dev):
        tables = self.__dict__.setdefault("_tables", {})
        if dev not in tables:
            keys = np.asarray(self._vocab, np.int64)
            order = np.argsort(keys, kind="stable")
            tables[dev] = (_const(dev, keys[order]),
                           _const(dev, (order + self._token_start()).astype(np.int64)),
                           _const(dev, keys))
        return tables[dev]

    def call(self, inputs):
        from .ops.core import cast
        from .ops.extra import searchsorted
        from .ops.math import floormod, logical_and, where
        from .ops.shape import gather, reshape
        from .keras_graph import probing
        if self._vocab is None and not probing():
            raise RuntimeError(f"IntegerLookup layer '{self.name}': set a vocabulary "
                               "(`vocabulary=` or `set_vocabulary`) or call `adapt` first")
        x = _input(inputs, "IntegerLookup")
        if x._value.dtype.kind not in "iu":
            raise TypeError(f"IntegerLookup layer '{self.name}': expected integer inputs, got "
                            f"{x._value.dtype}")
        x = cast(x, np.int64)
        if self._vocab is None:
            # a functional model's shape probe before the vocabulary is set (a saved file's
            # assets come after the model is rebuilt): the vocabulary's size from the config
            out = x * 0
            if self.output_mode == "int":
                return out
            depth = self.max_tokens if self.pad_to_max_tokens else (
                self._saved_vocab_size or self._token_start())
            return _encode(out, self.output_mode, depth, np.int64)
        dev = x._device
        keys, values, vocab = self._table(dev)
        shape = list(x._value.shape)
        if self.invert:
            start, size = self._token_start(), len(self._vocab)
            idx = x - start
            ok = logical_and(idx >= 0, idx < size)
            out = where(ok, gather(vocab, cast(where(ok, idx, 0), np.int32)), self.oov_token)
            if self.mask_token is not None:
                out = where(x == 0, self.mask_token, out)
            return out
        flat = reshape(x, [-1])
        pos = cast(searchsorted(keys, flat, side="left"), np.int32)
        n = len(self._vocab)
        safe = where(pos < n, pos, n - 1)
        found = logical_and(pos < n, gather(keys, safe) == flat)
        if self.num_oov_indices == 0:
            # Keras asserts: a host check (not while a functional call probes the layer with
            # zeros for its output shape)
            from .keras_graph import probing
            missing = np.zeros(1, np.bool_) if probing() else ~found.numpy()
            if missing.any():
                raise ValueError(f"IntegerLookup layer '{self.name}': When "
                                 f"`num_oov_indices=0` all inputs should be in vocabulary, "
                                 f"found OOV values {flat.numpy()[missing].tolist()}, consider "
                                 f"setting `num_oov_indices=1`.")
            oov = flat * 0
        elif self.num_oov_indices == 1:
            oov = flat * 0 + self._oov_start()
        else:
            oov = floormod(flat, self.num_oov_indices) + self._oov_start()
        out = where(found, gather(values, safe), oov)
        if self.mask_token is not None:
            out = where(flat == self.mask_token,
                        0 if self.output_mode == "int" else -1, out)
        out = reshape(out, shape)
        if self.output_mode == "int":
            return out
        depth = self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()
        return _encode(out, self.output_mode, depth, np.int64)     # Keras' int64 counts

    def get_config(self):
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token,
                "mask_token": self.mask_token, "output_mode": self.output_mode,
                "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary_dtype": self.vocabulary_dtype, "idf_weights": None,
                "vocabulary": _listify(self.input_vocabulary),
                "vocabulary_size": None if self._vocab is None else self.vocabulary_size(),
                "oov_method": self.oov_method, "salt": self.salt}

    # --- saving (Keras' protocol) -------------------------------------------------------
    def save_assets(self, dir_path):
        """Keras' ``save_assets``: a vocabulary not given to the constructor (adapted, or
        set by :meth:`set_vocabulary`; the config holds a given one) is written to
        ``vocabulary.txt`` in ``dir_path``, one value a line, the special tokens first."""
        if self.input_vocabulary is not None or self._vocab is None:
            return
        _save_vocabulary(dir_path, self.get_vocabulary())

    def load_assets(self, dir_path):
        """Keras' ``load_assets``: the vocabulary :meth:`save_assets` wrote, if any."""
        if self.input_vocabulary is not None:
            return
        lines = _load_vocabulary(dir_path)
        if lines is None:
            return
        try:
            values = [int(v) for v in lines]
        except ValueError:
            raise ValueError(f"IntegerLookup layer '{self.name}': the saved vocabulary holds "
                             f"values that are not integers: {lines[:5]}") from None
        self.set_vocabulary(values)


# --- string lookup and text vectorization -----------------------------------------------------

def _adapt_batches(data, steps):
    """The batches ``adapt`` reads: a Dataset or another iterable of batches (``steps`` of
    them at most) batch by batch; an array, list, tensor or ragged tensor as one batch
    (None then, so the caller can treat it as Keras does)."""
    from .ragged import RaggedTensor
    if isinstance(data, (np.ndarray, Tensor, RaggedTensor, list, tuple, str, bytes)) or \
            not hasattr(data, "__iter__"):
        return None
    return (b for i, b in enumerate(data) if steps is None or i < steps)


def _string_input(x, who):
    """``x`` as a string Tensor or RaggedTensor (lists, arrays and Python text converted)."""
    from .ragged import RaggedTensor
    from .tensor import convert_to_tensor
    if isinstance(x, (Tensor, RaggedTensor)):
        return x
    try:
        return convert_to_tensor(x, dtype="string")
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{who}: expected strings, got {type(x).__name__} ({exc})") from None


def _host_value(t) -> np.ndarray:
    """The host array of a tensor (string tensors live on the host already; this reads one
    that some device holds without an implicit conversion)."""
    v = t._value
    return v if isinstance(v, np.ndarray) else t._device.to_host(v)


def _output_device():
    """Where a string layer puts the numbers it makes: the current device; but inside an
    enclosing layer's call, which runs on the CPU for its string inputs, the innermost
    device scope that is not the CPU, else the default device (as TF runs its string kernels
    on the host and the model's other layers where they would run anyway)."""
    from .backend import CPU, _stack, current_device, default_device
    from .layers import _training_stack
    dev = current_device()
    if dev is not CPU or not _training_stack():
        return dev
    for scoped in reversed(_stack()):
        if scoped is not CPU:
            return scoped
    return default_device()


def _to_device(t, dev):
    from .ragged import RaggedTensor
    if isinstance(t, RaggedTensor):
        return t.with_flat_values(_to_device(t.flat_values, dev))
    if t._device is dev:
        return t
    return Tensor(dev.asarray(t.numpy()), dev)


def _text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _token_bytes(v) -> bytes:
    if isinstance(v, bytes):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise TypeError(f"StringLookup: vocabulary entries must be strings, got {v!r}")


def _listify(x):
    """A vocabulary or idf weights as a config value (lists, as Keras)."""
    if isinstance(x, Tensor):
        x = x.numpy()
    if isinstance(x, np.ndarray):
        x = x.tolist()
    return x


class StringLookup(Layer):
    """Strings to vocabulary indices, as Keras' ``StringLookup``: index 0 is ``mask_token``
    when one is set (``"int"`` mode), then ``num_oov_indices`` indices for strings outside
    the vocabulary (with several, TF's FarmHash of the string picks one), then the
    vocabulary in order. ``vocabulary`` is a list, array, tensor or the path of a file with
    one token a line, or it is learned by :meth:`adapt` (most frequent first, ties by the
    larger string; at most ``max_tokens`` indices in all, the special ones included).
    ``invert=True`` maps indices back to strings (``oov_token`` for unknown ones).
    ``output_mode``: ``"int"`` (int64), ``"one_hot"``, ``"multi_hot"``, ``"count"``
    (int64, ``vocabulary_size()`` wide, or ``max_tokens`` with ``pad_to_max_tokens``) or
    ``"tf_idf"`` (float32: counts times ``idf_weights``, given or learned by ``adapt``).
    Inputs are string tensors, lists, arrays or ``gt.RaggedTensor``s (ragged in, ragged
    out); the lookup runs on the host, and the indices go to the current device (the default
    device inside a model that runs on the CPU for its string inputs)."""

    autocast = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, encoding="utf-8", name=None,
                 salt=None, oov_method="floormod", **kwargs):
        has_input_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        frozen = kwargs.pop("vocabulary_size", None)
        kwargs.pop("trainable", None)
        kwargs.pop("dtype", None)
        kwargs.pop("vocabulary_dtype", None)
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        _check_lookup_sizes(who, max_tokens, pad_to_max_tokens, num_oov_indices)
        if salt is not None:
            raise ValueError(f"{who}: `salt` (SipHash) is not supported by gradtape")
        if output_mode == "tf-idf":
            output_mode = "tf_idf"
        self.output_mode = _check_mode(output_mode, _ENCODINGS + ("tf_idf",), who)
        if invert and self.output_mode != "int":
            raise ValueError(f"{who}: `output_mode` must be `'int'` when `invert` is true. "
                             f"Received: output_mode={output_mode}")
        if sparse and self.output_mode == "int":
            raise ValueError(f"{who}: `sparse` may only be true if `output_mode` is "
                             f"`'one_hot'`, `'multi_hot'`, `'count'` or `'tf_idf'`. Received: "
                             f"sparse={sparse} and output_mode={self.output_mode}")
        _no_sparse(sparse, who)
        if idf_weights is not None and self.output_mode != "tf_idf":
            raise ValueError(f"{who}: `idf_weights` should only be set if `output_mode` is "
                             f"`'tf_idf'`. Received: idf_weights={idf_weights} and "
                             f"output_mode={self.output_mode}")
        if self.output_mode == "tf_idf" and has_input_vocabulary and idf_weights is None:
            raise ValueError(f"{who}: When specifying the `vocabulary` argument, in TF-IDF "
                             "output mode, the `idf_weights` argument must also be provided.")
        self.invert = bool(invert)
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.sparse = False
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.oov_method = oov_method
        self.salt = None
        self.encoding = encoding
        self.vocabulary_dtype = "string"
        self.input_vocabulary = None if isinstance(vocabulary, str) else vocabulary
        self.input_idf_weights = idf_weights
        self._has_input_vocabulary = bool(has_input_vocabulary)
        self._frozen_vocab_size = frozen
        self._tokens = None              # the vocabulary (bytes, no special tokens)
        self._idf = None                 # float32 idf weights, one per index (tf_idf)
        self._counts = collections.Counter()
        self._doc_counts = collections.Counter()
        self._num_documents = 0
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    _UNTRACKED = Layer._UNTRACKED | {"_tokens", "_idf", "_counts", "_doc_counts", "_index",
                                     "_out_device", "input_vocabulary", "input_idf_weights"}

    # --- indices ----------------------------------------------------------------------
    def _oov_start(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self):
        return self._oov_start() + self.num_oov_indices

    def vocabulary_size(self) -> int:
        """Indices in use, the special ones included."""
        return len(self._tokens or []) + self._token_start()

    def get_vocabulary(self, include_special_tokens=True) -> list:
        """The string of each index (the special tokens first, unless left out)."""
        vocab = [self.oov_token] * self._token_start() + [
            np.str_(_text(t)) for t in (self._tokens or [])]
        if self.mask_token is not None and self.output_mode == "int":
            vocab[0] = self.mask_token
        return vocab if include_special_tokens else vocab[self._token_start():]

    @property
    def idf_weights(self):
        """The tf_idf weights of every index (a float32 tensor), or None."""
        return None if self._idf is None else _const(_output_device(), self._idf)

    def _record_vocabulary_size(self):
        if self.output_mode != "int" and not self.pad_to_max_tokens and \
                self._frozen_vocab_size is not None and \
                self.vocabulary_size() != self._frozen_vocab_size:
            raise RuntimeError(f"When using `output_mode={self.output_mode}` and "
                               f"`pad_to_max_tokens=False`, the vocabulary size cannot be "
                               f"changed after the layer is called. Old vocab size is "
                               f"{self._frozen_vocab_size}, new vocab size is "
                               f"{self.vocabulary_size()}")
        self._frozen_vocab_size = self.vocabulary_size()

    def _install(self, tokens):
        self._tokens = list(tokens)
        self.__dict__.pop("_index", None)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Use ``vocabulary`` (a list, array or tensor of strings, which may start with the
        special tokens, or a file with one token a line) and, for ``"tf_idf"``, its
        ``idf_weights``."""
        who = type(self).__name__
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ValueError(f"{who}: `idf_weights` must be set if output_mode is "
                                 "'tf_idf'.")
        elif idf_weights is not None:
            raise ValueError(f"{who}: `idf_weights` should only be set if output_mode is "
                             f"`'tf_idf'`. Received: output_mode={self.output_mode} and "
                             f"idf_weights={idf_weights}")
        if isinstance(vocabulary, str):
            import os
            if not os.path.exists(vocabulary):
                raise ValueError(f"Vocabulary file {vocabulary} does not exist.")
            if self.output_mode == "tf_idf":
                raise ValueError("output_mode `'tf_idf'` does not support loading a "
                                 "vocabulary from file.")
            with open(vocabulary, "rb") as f:
                lines = f.read().split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            self._install([ln[:-1] if ln.endswith(b"\r") else ln for ln in lines])
            self._record_vocabulary_size()
            return
        if isinstance(vocabulary, Tensor):
            vocabulary = vocabulary.numpy()
        items = [_token_bytes(v) for v in np.asarray(vocabulary, dtype=object).reshape(
            -1).tolist()] if not isinstance(vocabulary, (list, tuple)) else \
            [_token_bytes(v) for v in vocabulary]
        if not items:
            raise ValueError(f"Cannot set an empty vocabulary. Received: "
                             f"vocabulary={vocabulary}")
        start = self._token_start()
        special = ([self.mask_token] * self._oov_start() +
                   [self.oov_token] * self.num_oov_indices)
        special_b = [None if t is None else _token_bytes(t) for t in special]
        found_special = items[:start] == special_b
        tokens = items[start:] if found_special else items
        repeated = [t for t, c in collections.Counter(tokens).items() if c > 1]
        if repeated:
            raise ValueError(f"The passed vocabulary has at least one repeated term. Please "
                             f"uniquify your dataset. The repeated terms are: "
                             f"{[np.str_(_text(t)) for t in repeated]}")
        for tok, what, check in ((self.mask_token, "mask_token", True),
                                 (self.oov_token, "oov_token", self.invert)):
            if tok is not None and check and _token_bytes(tok) in tokens:
                index = len(items) - 1 - items[::-1].index(_token_bytes(tok))
                raise ValueError(f"Found reserved {'mask' if what == 'mask_token' else 'OOV'} "
                                 f"token at unexpected location in `vocabulary`. Note that "
                                 f"passed `vocabulary` does not need to include the OOV and "
                                 f"mask tokens. Either remove all mask and OOV tokens, or "
                                 f"include them only at the start of the vocabulary in "
                                 f"precisely this order: {special}. Received: {what}={tok} at "
                                 f"vocabulary index [{index}]")
        size = start + len(tokens)
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError(f"Attempted to set a vocabulary larger than the maximum vocab "
                             f"size. Received vocabulary size is {size}; `max_tokens` is "
                             f"{self.max_tokens}.")
        self._install(tokens)
        self._record_vocabulary_size()
        if self.output_mode == "tf_idf":
            w = np.asarray(idf_weights.numpy() if isinstance(idf_weights, Tensor)
                           else idf_weights, dtype=np.float64)
            if len(items) != len(w):
                raise ValueError(f"`idf_weights` must be the same length as vocabulary. "
                                 f"len(idf_weights) is {len(w)}; len(vocabulary) is "
                                 f"{len(items)}")
            if w.ndim != 1:
                raise ValueError(f"TF-IDF data must be a 1-index array. Received: "
                                 f"type(idf_weights)={type(idf_weights)}")
            front, front_value = (0, 0.0) if found_special else (start, np.average(w))
            back = (self.max_tokens - front - len(w)) if self.pad_to_max_tokens and \
                self.max_tokens is not None else 0
            self._idf = np.pad(w, (front, back), "constant",
                               constant_values=(front_value, 0)).astype(np.float32)

    # --- adapt ------------------------------------------------------------------------
    def reset_state(self):
        self._counts = collections.Counter()
        self._doc_counts = collections.Counter()
        self._num_documents = 0

    def update_state(self, data):
        """Count the tokens of one batch (a rank-1 batch is one document)."""
        from .ragged import RaggedTensor
        if self._has_input_vocabulary:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static "
                             "vocabulary via `vocabulary` argument or `set_vocabulary()` "
                             "method.")
        data = _string_input(data, type(self).__name__)
        if isinstance(data, RaggedTensor):
            flat = _host_value(data.flat_values).reshape(-1).tolist()
            self._counts.update(flat)
            if self.output_mode == "tf_idf":
                for row in data.to_list():
                    self._doc_counts.update(set(_flat_items(row)))
                self._num_documents += data.nrows_host()
            return
        host = _host_value(data)
        if host.ndim < 2:
            host = host.reshape(1, -1)
        self._counts.update(host.reshape(-1).tolist())
        if self.output_mode == "tf_idf":
            for row in host.reshape(host.shape[0], -1).tolist():
                self._doc_counts.update(set(row))
            self._num_documents += host.shape[0]

    def finalize_state(self):
        """The vocabulary from the counts: most frequent first, ties by the larger string."""
        if self._has_input_vocabulary or not self._counts:
            self._record_vocabulary_size()
            return
        counts = dict(self._counts)
        for tok in (self.mask_token, self.oov_token):
            if tok is not None:
                counts.pop(_token_bytes(tok), None)
        toks = np.empty(len(counts), dtype=object)
        toks[:] = list(counts.keys())
        cnts = np.fromiter(counts.values(), np.int64, len(counts))
        order = np.lexsort((toks, cnts))[::-1] if len(counts) else np.zeros(0, np.int64)
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start()]
        tokens = toks[order].tolist()
        self._install(tokens)
        if self.output_mode == "tf_idf":
            df = np.asarray([self._doc_counts.get(t, 0) for t in tokens], np.float64)
            idf = np.log(1 + self._num_documents / (1 + df)).astype(np.float32)
            mean = np.float32(np.mean(idf)) if idf.size else np.float32(np.nan)
            idf = np.pad(idf, (self._token_start(), 0), constant_values=mean)
            if self.pad_to_max_tokens and self.max_tokens is not None:
                idf = np.pad(idf, (0, self.max_tokens - idf.size), constant_values=0)
            self._idf = idf.astype(np.float32)
        self.reset_state()
        self._record_vocabulary_size()

    def adapt(self, data, steps=None):
        """Learn the vocabulary from ``data``: a ``gt.data.Dataset`` or other iterable of
        batches (``steps`` of them at most), or one array, list or tensor of strings
        (a rank-1 one holds one token per document)."""
        self.reset_state()
        batches = _adapt_batches(data, steps)
        if batches is not None:
            for batch in batches:
                self.update_state(batch)
        else:
            data = _string_input(data, type(self).__name__)
            if isinstance(data, Tensor) and data._value.ndim == 1:
                from .ops.shape import expand_dims
                data = expand_dims(data, -1)
            self.update_state(data)
        self.finalize_state()

    # --- the lookup -------------------------------------------------------------------
    def _table(self) -> dict:
        index = self.__dict__.get("_index")
        if index is None:
            start = self._token_start()
            tokens = self._tokens or []     # (none yet: a shape probe, see _check_ready)
            if self.invert:
                index = tokens
            else:
                index = {t: i + start for i, t in enumerate(tokens)}
            if self._tokens is not None:
                self.__dict__["_index"] = index
        return index

    def _ids(self, host: np.ndarray) -> np.ndarray:
        """The index of each string of the object array ``host`` (int64)."""
        from .strings import _fingerprint64
        table = self._table()
        items = host.reshape(-1).tolist()
        n = self.num_oov_indices
        default = self._oov_start() if n == 1 else -1
        ids = np.fromiter((table.get(t, default) for t in items), np.int64, len(items))
        if self.mask_token is not None:
            mask = _token_bytes(self.mask_token)
            at = np.fromiter((t == mask for t in items), np.bool_, len(items))
            ids[at] = 0 if self.output_mode == "int" else -1
        if n == 0:
            from .keras_graph import probing
            missing = (ids == -1) & (not probing())     # (no check on a functional probe)
            if self.mask_token is not None and self.output_mode != "int":
                missing &= ~at
            if missing.any():
                bad = [_text(items[i]) for i in np.nonzero(missing)[0]]
                raise InvalidArgumentError(f"{type(self).__name__} layer '{self.name}': When "
                                           f"`num_oov_indices=0` all inputs should be in "
                                           f"vocabulary, found OOV values {bad}, consider "
                                           f"setting `num_oov_indices=1`.")
        elif n > 1:
            oov = ids == -1
            if self.mask_token is not None and self.output_mode != "int":
                oov &= ~at
            if oov.any():
                idx = np.nonzero(oov)[0]
                h = _fingerprint64([items[i] for i in idx]) % np.uint64(n)
                ids[idx] = h.astype(np.int64) + self._oov_start()
        return ids.reshape(host.shape)

    def _strings_of(self, ids: np.ndarray) -> np.ndarray:
        """The string of each index (``invert``)."""
        tokens = self._table()
        start, size = self._token_start(), len(tokens)
        oov = _token_bytes(self.oov_token) if self.oov_token is not None else b""
        mask = None if self.mask_token is None else _token_bytes(self.mask_token)
        flat = ids.reshape(-1).tolist()
        out = np.empty(len(flat), dtype=object)
        out[:] = [mask if (mask is not None and i == 0) else
                  (tokens[i - start] if 0 <= i - start < size else oov) for i in flat]
        return out.reshape(ids.shape)

    def __call__(self, inputs, *args, **kwargs):
        self.__dict__["_out_device"] = _output_device()
        return super().__call__(inputs, *args, **kwargs)

    def _convert_input(self, x):
        from .ragged import RaggedTensor
        from .tensor import convert_to_tensor
        if isinstance(x, (Tensor, RaggedTensor)):
            return x
        if self.invert:
            return convert_to_tensor(x)
        return _string_input(x, type(self).__name__)

    def call(self, inputs):
        return self._lookup(inputs, self.__dict__.get("_out_device") or _output_device())

    def _check_ready(self):
        who = type(self).__name__
        if self.output_mode != "int" and not self.pad_to_max_tokens and \
                self._frozen_vocab_size is None:
            raise RuntimeError(f"{who} layer '{self.name}': When using `output_mode="
                               f"{self.output_mode}` and `pad_to_max_tokens=False`, you must "
                               f"set the layer's vocabulary before calling it. Either pass a "
                               f"`vocabulary` argument to the layer, or call `adapt` with "
                               f"some sample data.")
        if self._tokens is None:
            from .keras_graph import probing
            if probing():       # (a functional model rebuilt before its assets are read)
                return
            raise RuntimeError(f"{who} layer '{self.name}': the vocabulary is not set; pass "
                               "`vocabulary=`, call `set_vocabulary` or `adapt` first")

    def _lookup(self, inputs, dev):
        """The indices (or, inverted, the strings) of ``inputs``, encoded per
        ``output_mode``; numbers on ``dev``."""
        from .ragged import RaggedTensor
        self._check_ready()
        who = type(self).__name__
        if isinstance(inputs, RaggedTensor):
            flat = inputs.flat_values
            if self.invert:
                out = inputs.with_flat_values(self._lookup(flat, dev))
                return out
            ids = self._ids(_string_input(flat, who)._value)
            if self.output_mode == "int":
                return inputs.with_flat_values(_const(dev, ids))
            return self._encode_ragged(inputs, ids, dev)
        x = inputs
        if self.invert:
            if not isinstance(x, Tensor):
                from .tensor import convert_to_tensor
                x = convert_to_tensor(x)
            if x._value.dtype.kind not in "iu":
                raise TypeError(f"{who} layer '{self.name}': an inverted lookup takes integer "
                                f"indices, got {x.dtype.name}")
            host = np.asarray(x.numpy()).astype(np.int64)
            return Tensor(self._strings_of(host), _cpu())
        if x._value.dtype.kind != "O":
            raise TypeError(f"{who} layer '{self.name}': expected string inputs, got "
                            f"{x.dtype.name}")
        ids = _const(dev, self._ids(x._value))
        if self.output_mode == "int":
            return ids
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        if self.output_mode == "tf_idf":
            from .ops.core import cast
            counts = cast(_encode(ids, "count", depth, np.int64), np.float32)
            return counts * _const(dev, self._idf_row(depth))
        return _encode(ids, self.output_mode, depth, np.int64)

    def _idf_row(self, depth):
        idf = self._idf
        if idf is None:
            from .keras_graph import probing
            if probing() and self._tokens is None:
                return np.zeros(depth, np.float32)
            raise ValueError("When `output_mode` is `'tf_idf'`, `idf_weights` must be "
                             "provided.")
        if idf.size < depth:
            idf = np.pad(idf, (0, depth - idf.size))
        return idf[:depth]

    def _encode_ragged(self, rt, ids, dev):
        """The encodings of ragged rows of ids: ``"one_hot"`` keeps the rows (a ragged
        tensor of one-hot vectors), the others count each row's ids (a dense
        ``[rows, depth]`` tensor)."""
        from .ragged import RaggedTensor
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        if self.output_mode == "one_hot":
            return rt.with_flat_values(_encode(_const(dev, ids), "one_hot", depth, np.int64))
        if isinstance(rt.values, RaggedTensor):
            raise ValueError(f"{type(self).__name__}: output_mode={self.output_mode!r} takes "
                             "inputs of one ragged axis")
        rows = rt.value_rowids().numpy()
        ok = (ids >= 0) & (ids < depth)
        counts = np.zeros((rt.nrows_host(), depth), np.int64)
        np.add.at(counts, (rows[ok], ids[ok]), 1)
        if self.output_mode == "multi_hot":
            return _const(dev, (counts > 0).astype(np.int64))
        if self.output_mode == "count":
            return _const(dev, counts)
        return _const(dev, counts.astype(np.float32) * self._idf_row(depth))

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        input_shape = tuple(input_shape)
        if self.output_mode == "one_hot":
            if len(input_shape) > 1 and input_shape[-1] == 1:
                return input_shape[:-1] + (depth,)
            return input_shape + (depth,)
        return input_shape[:-1] + (depth,)

    def get_config(self):
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token,
                "mask_token": self.mask_token, "output_mode": self.output_mode,
                "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                "idf_weights": _listify(self.input_idf_weights),
                "vocabulary": _listify(self.input_vocabulary),
                "vocabulary_size": self._frozen_vocab_size, "oov_method": self.oov_method,
                "salt": self.salt, "encoding": self.encoding}

    # --- saving (Keras' protocol) -------------------------------------------------------
    def save_own_variables(self, store):
        """Keras' ``save_own_variables``: in ``"tf_idf"`` mode the idf weights (one per
        index), as ``store["idf_weights"]``."""
        if self.output_mode == "tf_idf" and self._idf is not None:
            store["idf_weights"] = np.array(self._idf, np.float32)

    def load_own_variables(self, store):
        """Keras' ``load_own_variables``: the idf weights :meth:`save_own_variables`
        wrote (before :meth:`load_assets` reads the vocabulary they go with)."""
        if self.output_mode == "tf_idf" and "idf_weights" in store:
            self._idf = _saved_idf(store, f"{type(self).__name__} layer '{self.name}'")

    def save_assets(self, dir_path):
        """Keras' ``save_assets``: a vocabulary not given to the constructor as a list
        (adapted, set by :meth:`set_vocabulary`, or read from a file; the config holds a
        given list) is written to ``vocabulary.txt`` in ``dir_path``, one token a line,
        the special tokens first."""
        if self.input_vocabulary is not None or self._tokens is None:
            return
        _save_vocabulary(dir_path, self.get_vocabulary())

    def load_assets(self, dir_path):
        """Keras' ``load_assets``: the vocabulary :meth:`save_assets` wrote, if any (in
        ``"tf_idf"`` mode with the idf weights :meth:`load_own_variables` read)."""
        if self.input_vocabulary is not None:
            return
        tokens = _load_vocabulary(dir_path)
        if tokens is None:
            return
        if self.output_mode != "tf_idf":
            self.set_vocabulary(tokens)
            return
        if self._idf is None:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': the saved "
                             "vocabulary comes without its idf_weights (output_mode "
                             "'tf_idf')")
        # (saved padded to max_tokens with pad_to_max_tokens: set_vocabulary pads again)
        self.set_vocabulary(tokens, idf_weights=self._idf[:len(tokens)])


def _flat_items(row):
    if isinstance(row, list):
        out = []
        for v in row:
            out.extend(_flat_items(v))
        return out
    return [row]


def _cpu():
    from .backend import CPU
    return CPU


_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


class TextVectorization(Layer):
    """Text to token indices, as Keras' ``TextVectorization``: each string is
    standardized (``"lower_and_strip_punctuation"``, ``"lower"``, ``"strip_punctuation"``,
    None, or a function of a string tensor), split (``"whitespace"``, ``"character"``, None,
    or a function), optionally cut into ``ngrams`` (an int n: widths 1 to n; or a tuple of
    widths), and looked up in a vocabulary (given, or learned by :meth:`adapt`: most
    frequent first, ties by the larger token; ``max_tokens`` at most, index 0 for padding
    and 1 for unknown tokens in ``"int"`` mode). ``output_mode``: ``"int"`` (int64 indices,
    padded with 0 or cut to ``output_sequence_length``; ``ragged=True`` keeps the rows
    ragged), ``"multi_hot"``, ``"count"``, ``"one_hot"`` (int64) or ``"tf_idf"``
    (float32). Inputs are strings (a batch of them, or a batch of one-string rows); the text
    work runs on the host, and the indices go to the current device (the default device
    inside a model that runs on the CPU for its string inputs)."""

    autocast = False

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None,
                 **kwargs):
        who = "TextVectorization"
        for arg, value, allowed in (
                ("standardize", standardize, ("lower_and_strip_punctuation", "lower",
                                              "strip_punctuation")),
                ("split", split, ("whitespace", "character"))):
            if value is not None and not callable(value) and value not in allowed:
                raise ValueError(f"Unknown value for `{arg}` argument of layer {who}. "
                                 f"If restoring a model, note that custom functions need to "
                                 f"be registered. Allowed values are: {allowed} or a Callable. "
                                 f"Received: {arg}={value}")
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode == "tf-idf":
            output_mode = "tf_idf"
        modes = ("int", "one_hot", "multi_hot", "count", "tf_idf")
        if output_mode not in modes:
            raise ValueError(f"Unknown value for `output_mode` argument of {who}. Allowed "
                             f"values are: {modes}. Received: output_mode={output_mode}")
        if isinstance(ngrams, list):
            ngrams = tuple(ngrams)
        if not (ngrams is None or (isinstance(ngrams, int) and not isinstance(ngrams, bool))
                or isinstance(ngrams, tuple) and all(isinstance(i, int) for i in ngrams)):
            raise ValueError(f"`ngrams` must be None, an integer, or a tuple of integers. "
                             f"Received: ngrams={ngrams}")
        if output_mode == "int" and not (output_sequence_length is None or isinstance(
                output_sequence_length, int)):
            raise ValueError(f"`output_sequence_length` must be either None or an integer "
                             f"when `output_mode` is 'int'. Received: "
                             f"output_sequence_length={output_sequence_length}")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if `output_mode` is "
                             f"not 'int'. Received output_sequence_length="
                             f"{output_sequence_length}.")
        if ragged and output_mode != "int":
            raise ValueError(f"`ragged` must not be true if `output_mode` is `'int'`. "
                             f"Received: ragged={ragged} and output_mode={output_mode}")
        _no_sparse(sparse, who)
        has_input_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("dtype", None)
        super().__init__(name=name, **kwargs)
        self._max_tokens = max_tokens
        self._standardize = standardize
        self._split = split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self._ragged = bool(ragged)
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._encoding = encoding
        self._has_input_vocabulary = bool(has_input_vocabulary)
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="", output_mode=output_mode,
            has_input_vocabulary=self._has_input_vocabulary, encoding=encoding,
            vocabulary_size=vocabulary_size, name=f"{self.name}_lookup")

    _UNTRACKED = Layer._UNTRACKED | {"_standardize", "_split", "_out_device"}

    def build(self, input_shape=None):
        self.built = True

    def compute_output_shape(self, input_shape):
        if self._output_mode == "int":
            return (input_shape[0], self._output_sequence_length)
        if self._split is None:
            if len(input_shape) <= 1:
                input_shape = tuple(input_shape) + (1,)
        else:
            input_shape = tuple(input_shape) + (None,)
        return self._lookup_layer.compute_output_shape(input_shape)

    # --- vocabulary -------------------------------------------------------------------
    def adapt(self, data, batch_size=None, steps=None):
        """Learn the vocabulary from ``data``: a batched ``gt.data.Dataset`` or other
        iterable of batches (``steps`` of them at most), or one array, list or tensor of
        strings."""
        self.reset_state()
        batches = _adapt_batches(data, steps)
        if batches is not None:
            for batch in batches:
                self.update_state(batch)
        else:
            data = _string_input(data, "TextVectorization")
            if isinstance(data, Tensor) and data._value.ndim == 1:
                from .ops.shape import expand_dims
                data = expand_dims(data, -1)
            self.update_state(data)
        self.finalize_state()

    def update_state(self, data):
        self._lookup_layer.update_state(self._preprocess(data))

    def finalize_state(self):
        self._lookup_layer.finalize_state()

    def reset_state(self):
        self._lookup_layer.reset_state()

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights=idf_weights)

    # --- saving (Keras' protocol: the state of the lookup layer) ------------------------
    def save_own_variables(self, store):
        self._lookup_layer.save_own_variables(store)

    def load_own_variables(self, store):
        self._lookup_layer.load_own_variables(store)

    def save_assets(self, dir_path):
        self._lookup_layer.save_assets(dir_path)

    def load_assets(self, dir_path):
        self._lookup_layer.load_assets(dir_path)

    # --- the pipeline -----------------------------------------------------------------
    def _preprocess(self, inputs):
        from . import strings
        from .ragged import RaggedTensor
        from .ops.shape import squeeze
        x = _string_input(inputs, "TextVectorization")
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            x = strings.lower(x)
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = strings.regex_replace(x, _PUNCTUATION, "")
        if callable(self._standardize):
            x = _string_input(self._standardize(x), "TextVectorization")
        if self._split is not None:
            if not isinstance(x, RaggedTensor) and x._value.ndim > 1:
                if x._value.shape[-1] != 1:
                    raise ValueError(f"When using `TextVectorization` to tokenize strings, "
                                     f"the input rank must be 1 or the last shape dimension "
                                     f"must be 1. Received: inputs.shape="
                                     f"{tuple(x._value.shape)} with rank={x._value.ndim}")
                x = squeeze(x, axis=-1)
            if self._split == "whitespace":
                x = strings.split(x)
            elif self._split == "character":
                x = strings.unicode_split(x, "UTF-8")
            else:
                x = self._split(x)
        if self._ngrams is not None:
            x = strings.ngrams(x, ngram_width=self._ngrams, separator=" ")
        return x

    def __call__(self, inputs, *args, **kwargs):
        self.__dict__["_out_device"] = _output_device()
        return super().__call__(inputs, *args, **kwargs)

    def _convert_input(self, x):
        from .ragged import RaggedTensor
        if isinstance(x, (Tensor, RaggedTensor)):
            return x
        return _string_input(x, "TextVectorization")

    def call(self, inputs):
        from .ragged import RaggedTensor
        dev = self.__dict__.get("_out_device") or _output_device()
        x = self._preprocess(inputs)
        out = self._lookup_layer._lookup(x, dev)
        if self._output_mode != "int":
            return out
        n = self._output_sequence_length
        if isinstance(out, RaggedTensor):
            if self._ragged:
                return out
            shape = list(out.shape)
            shape[-1] = n
            return out.to_tensor(default_value=0, shape=shape)
        if n is None:
            return out
        host = np.asarray(out.numpy())
        if host.ndim == 0:
            return out
        host = host[..., :n]
        if host.shape[-1] < n and not self._ragged:
            pad = [(0, 0)] * (host.ndim - 1) + [(0, n - host.shape[-1])]
            host = np.pad(host, pad)
        return _const(out._device, host)

    # --- config -----------------------------------------------------------------------
    def get_config(self):
        lookup = self._lookup_layer
        return {**super().get_config(), "max_tokens": lookup.max_tokens,
                "standardize": self._standardize, "split": self._split,
                "ngrams": self._ngrams_arg, "output_mode": self._output_mode,
                "output_sequence_length": self._output_sequence_length,
                "pad_to_max_tokens": lookup.pad_to_max_tokens, "sparse": lookup.sparse,
                "ragged": self._ragged, "vocabulary": _listify(lookup.input_vocabulary),
                "idf_weights": _listify(lookup.input_idf_weights), "encoding": self._encoding,
                "vocabulary_size": self.vocabulary_size()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        builtin = {"standardize": ("lower_and_strip_punctuation", "lower",
                                   "strip_punctuation"),
                   "split": ("whitespace", "character")}
        for key, names in builtin.items():
            value = config.get(key)
            if isinstance(value, dict):           # Keras' serialized function
                value = value.get("registered_name") or value.get("config")
            if isinstance(value, str) and value not in names:
                from .saving import get_registered_object
                found = get_registered_object(value)
                if found is None:
                    raise ValueError(f"TextVectorization.from_config: unknown {key} function "
                                     f"{value!r}; register it with "
                                     f"register_keras_serializable")
                value = found
            config[key] = value
        if isinstance(config.get("ngrams"), list):
            config["ngrams"] = tuple(config["ngrams"])
        return cls(**config)
