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
  (``bin_boundaries``, or ``num_bins`` learned by ``adapt``), ``Hashing`` (integer and float
  inputs; TensorFlow's FarmHash of the decimal string, so the bins equal Keras'),
  ``IntegerLookup`` (``vocabulary`` or ``adapt``, ``num_oov_indices``, ``mask_token``,
  ``invert``, the encoded output modes).

The random layers augment only when ``training`` is true and pass their inputs through at
inference. They draw on the inputs' device (from the layer's own generator when it has a
``seed``, else from the device's global generator): no host round trip. ``training`` is
resolved as for every gradtape layer (an enclosing call's value, ``fit``'s ``True``, and
``False`` for a direct top-level call); Keras 3 augments on a direct call without
``training`` (pass ``training=True`` for that).

``Hashing`` reads its inputs on the host (hashing decimal strings has no device
counterpart; Keras runs it on the CPU too); ``IntegerLookup`` with ``num_oov_indices=0``
reads them to check that every value is in the vocabulary. Strings are not supported (gradtape
has no string tensors): ``StringLookup`` and string ``Hashing`` are left out, as are
``Hashing``'s ``salt`` (SipHash) and ``IntegerLookup``'s ``"tf_idf"`` mode and
``oov_method="farmhash"``.
"""
from __future__ import annotations

import collections

import numpy as np

from .layers import Layer
from .ops._util import as_tensor
from .tensor import Tensor

__all__ = ["affine_transform", "RandomRotation", "RandomZoom", "RandomTranslation",
           "RandomContrast", "RandomBrightness", "RandomHeight", "RandomWidth",
           "CategoryEncoding", "Discretization",
           "Hashing", "IntegerLookup"]

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


# --- hashing ----------------------------------------------------------------------------------

_K0 = np.uint64(0xc3a5c85c97cb3127)
_K1 = np.uint64(0xb492b66fbe98f273)
_K2 = np.uint64(0x9ae16a3b2f90404f)


def _rot(v, s):
    s = np.uint64(s)
    return (v >> s) | (v << (np.uint64(64) - s))


def _hash_len16(u, v, mul):
    a = (u ^ v) * mul
    a ^= a >> np.uint64(47)
    b = (v ^ a) * mul
    b ^= b >> np.uint64(47)
    return b * mul


def _fingerprint64(buf, n):
    """FarmHash's Fingerprint64 (farmhashna, strings of ``n`` <= 32 bytes) of each row of
    ``buf`` ``[m, n]`` uint8."""
    def f64(off):
        return np.ascontiguousarray(buf[:, off:off + 8]).view("<u8")[:, 0]

    def f32(off):
        return np.ascontiguousarray(buf[:, off:off + 4]).view("<u4")[:, 0].astype(np.uint64)

    size = np.uint64(n)
    with np.errstate(over="ignore"):
        mul = _K2 + size * np.uint64(2)
        if n > 16:
            a, b = f64(0) * _K1, f64(8)
            c, d = f64(n - 8) * mul, f64(n - 16) * _K2
            return _hash_len16(_rot(a + b, 43) + _rot(c, 30) + d, a + _rot(b + _K2, 18) + c, mul)
        if n >= 8:
            a, b = f64(0) + _K2, f64(n - 8)
            return _hash_len16(_rot(b, 37) * mul + a, (_rot(a, 25) + b) * mul, mul)
        if n >= 4:
            return _hash_len16(size + (f32(0) << np.uint64(3)), f32(n - 4), mul)
        a = buf[:, 0].astype(np.uint64)
        b = buf[:, n >> 1].astype(np.uint64)
        c = buf[:, n - 1].astype(np.uint64)
        y = (a + (b << np.uint64(8))) & np.uint64(0xFFFFFFFF)
        z = (size + (c << np.uint64(2))) & np.uint64(0xFFFFFFFF)
        v = y * _K2 ^ z * _K0
        return (v ^ (v >> np.uint64(47))) * _K2


def _hash_ints(values, bins):
    """``Fingerprint64(str(v)) % bins`` for int64 ``values`` (TF's ``as_string`` then
    ``to_hash_bucket_fast``)."""
    flat = values.reshape(-1)
    strs = [str(int(v)).encode() for v in flat]
    lens = np.fromiter((len(s) for s in strs), np.int64, len(strs))
    out = np.zeros(len(strs), np.uint64)
    for n in np.unique(lens):
        idx = np.nonzero(lens == n)[0]
        buf = np.frombuffer(b"".join(strs[i] for i in idx), np.uint8).reshape(len(idx), int(n))
        out[idx] = _fingerprint64(buf, int(n))
    return (out % np.uint64(bins)).astype(np.int64).reshape(values.shape)


class Hashing(Layer):
    """Integers (floats are truncated to int64 first) hashed into ``num_bins`` bins:
    TensorFlow's FarmHash of each value's decimal string modulo the bins, so the bins equal
    Keras'. ``mask_value`` goes to bin 0 and the rest hash into ``num_bins - 1`` bins after
    it. ``output_mode``: ``"int"`` (int64) or the encodings. The values are read on the host
    (as Keras, which hashes on the CPU); the result lands on the inputs' device. Strings and
    ``salt`` (SipHash) are not supported."""

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

    def call(self, inputs):
        x = _input(inputs, "Hashing")
        v = x.numpy()                     # hashing decimal strings: on the host
        if v.dtype.kind not in "iuf":
            raise TypeError(f"Hashing layer '{self.name}': only integer and float inputs are "
                            f"supported (gradtape has no strings), got {v.dtype}")
        v = v.astype(np.int64)
        bins = self.num_bins
        if self.mask_value is not None and bins > 1:
            ids = _hash_ints(v, bins - 1) + 1
            ids[v == int(self.mask_value)] = 0
        else:
            ids = _hash_ints(v, bins)
        ids = _const(x._device, ids)
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
        super().__init__(name=name, **kwargs)
        who = "IntegerLookup"
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"{who}: If set, `max_tokens` must be greater than 1. Received: "
                             f"max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"{who}: If pad_to_max_tokens is True, must set `max_tokens`. "
                             f"Received: max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError(f"{who}: `num_oov_indices` must be greater than or equal to 0. "
                             f"Received: num_oov_indices={num_oov_indices}")
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
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    _UNTRACKED = Layer._UNTRACKED | {"_vocab", "_given", "_tables"}

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
        if isinstance(data, (np.ndarray, Tensor, list, tuple)) or not hasattr(data,
                                                                             "__iter__"):
            batches = [data]
        else:
            batches = (b for i, b in enumerate(data) if steps is None or i < steps)
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
        if self._vocab is None:
            raise RuntimeError(f"IntegerLookup layer '{self.name}': set a vocabulary "
                               "(`vocabulary=` or `set_vocabulary`) or call `adapt` first")
        x = _input(inputs, "IntegerLookup")
        if x._value.dtype.kind not in "iu":
            raise TypeError(f"IntegerLookup layer '{self.name}': expected integer inputs, got "
                            f"{x._value.dtype}")
        x = cast(x, np.int64)
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
            missing = ~found.numpy()                       # Keras asserts: a host check
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
                "vocabulary": list(self._vocab) if self._vocab is not None else None,
                "oov_method": self.oov_method, "salt": self.salt}
