"""Keras 3's image augmentation layers (``tf.keras`` in TF 2.21 = Keras 3.15) that build on
its ``BaseImagePreprocessingLayer``:

- colour: ``AutoContrast``, ``Equalization``, ``Solarization``, ``RandomInvert``,
  ``RandomGrayscale``, ``RandomHue``, ``RandomSaturation``, ``RandomColorDegeneration``,
  ``RandomColorJitter``, ``RandomSharpness``, ``RandomPosterization``,
  ``RandomGaussianBlur``, ``RandomErasing``;
- geometric: ``RandomShear``, ``RandomPerspective``, ``RandomElasticTransform``;
- mixing: ``CutMix``, ``MixUp``; policies: ``AugMix``, ``RandAugment``;
- ``MaxNumBoundingBoxes`` (pads or cuts the boxes of a batch) and ``Pipeline`` (layers
  applied in turn).

Each layer works as Keras': ``get_random_transformation(data, training=True, seed=None)``
draws the random part of one call (a dict of tensors, or None), and
``transform_images(images, transformation, training=True)`` (and ``transform_labels``,
``transform_bounding_boxes``, ``transform_segmentation_masks``) apply it to a batch; a call
does both, on a batch, on one image, or on a dict with ``"images"`` and optionally
``"labels"``, ``"bounding_boxes"`` (``{"boxes", "labels"}`` in ``bounding_box_format``)
and ``"segmentation_masks"``. The transformation dicts have Keras' keys, so a given
transformation gives Keras' numbers. Draws come from the layer's own generator when it has
a ``seed`` (else from the device's global one), on the images' device; ``seed`` of
``get_random_transformation`` may be a ``gt.random.Generator`` to draw from. The random
choices of ``AugMix`` and ``RandAugment`` (which layers run) are made on the host, from
the seed and a call counter. Float inputs are cast to the layer's compute dtype, as Keras'
autocast; the math follows Keras' code, its quirks included (``RandomSaturation`` and
``RandomColorDegeneration`` take ``factor`` ``f`` as ``(-f, f)``; ``AutoContrast`` reduces
over axes 1 and 2 whatever the data format; ``Equalization`` counts one histogram per
channel over the whole batch; ``RandomElasticTransform`` displaces x and y by the same
smoothed field, as Keras' two draws share one seed). ``training`` resolves as for every
gradtape layer: a direct call augments, ``predict`` and ``evaluate`` do not.

Bounding boxes: the colour layers pass them through; ``RandomShear``, ``RandomPerspective``,
``MixUp`` and ``MaxNumBoundingBoxes`` transform them as Keras (``RandomPerspective``
returns them in the layer's format, where Keras leaves them as ``"xyxy"``; ``MixUp``
concatenates the box labels along the box axis, where Keras stacks them on the batch axis,
and mixes segmentation masks along the batch axis, where Keras' ``take`` flattens them).
``CutMix``, ``RandomElasticTransform`` and ``RandAugment`` do not take boxes.
"""
from __future__ import annotations

import numpy as np

from .layers import Layer
from .layers_preprocessing import (_const, _data_format, affine_transform, RandomBrightness,
                                   RandomContrast, RandomRotation, RandomTranslation)
from .ops.core import cast, zeros_like
from .ops.linalg import solve, tensordot
from .ops.math import (abs as _abs, clip_by_value, exp, floor, floormod, is_nan, left_shift,
                       logical_and, logical_or, right_shift, round as _round, sqrt, where)
from .ops.nn import depthwise_conv2d
from .ops.reduce import argmax, count_nonzero, cumsum, reduce_max, reduce_mean, reduce_min, \
    reduce_sum
from .ops.shape import concat, expand_dims, gather, pad, reshape, squeeze, stack, tile, \
    transpose
from .tensor import Tensor, convert_to_tensor

__all__ = ["AutoContrast", "Equalization", "Solarization", "RandomInvert", "RandomGrayscale",
           "RandomHue", "RandomSaturation", "RandomColorDegeneration", "RandomColorJitter",
           "RandomSharpness", "RandomPosterization", "RandomShear", "RandomPerspective",
           "RandomErasing", "RandomGaussianBlur", "RandomElasticTransform", "CutMix", "MixUp",
           "AugMix", "RandAugment", "MaxNumBoundingBoxes", "Pipeline"]

_VALUE_RANGE_ERROR = "The `value_range` argument should be a list of two numbers. "


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating))


def _factor(factor, bounds, who, what="factor"):
    """Keras' ``_set_factor``: a number ``f`` -> ``(max(-|f|, low), |f|)``; two numbers
    sorted (only the first checked against the upper bound and the second against the
    lower one, as Keras)."""
    lo_b, hi_b = bounds
    msg = (f"{who}: The `{what}` argument should be a number (or a list of two numbers) in "
           f"the range [{lo_b}, {hi_b}]. Received: {what}={factor}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or not all(_is_number(f) for f in factor):
            raise ValueError(msg)
        if factor[0] > hi_b or factor[1] < lo_b:
            raise ValueError(msg)
        lower, upper = sorted(factor)
        return lower, upper
    if _is_number(factor):
        if factor < lo_b or factor > hi_b:
            raise ValueError(msg)
        factor = abs(factor)
        return max(-factor, lo_b), factor
    raise ValueError(msg)


def _unit_factor(factor, name, who, error, symmetric):
    """The ``_set_factor`` of Keras' ``Solarization`` and ``RandomShear``: two numbers in
    ``[0, 1]`` sorted, or one number ``f`` -> ``(-f, f)`` (``symmetric``) or ``(0, f)``;
    ``error`` is the layer's message."""
    def check(v):
        if v > 1.0 or v < 0:
            raise ValueError(f"{who}: {error}Received: input_number={v}")
    if isinstance(factor, (tuple, list)) and len(factor) == 2 and all(
            _is_number(f) for f in factor):
        check(factor[0])
        check(factor[1])
        lower, upper = sorted(factor)
        return lower, upper
    if _is_number(factor):
        check(factor)
        if symmetric:
            factor = abs(factor)
            return -factor, factor
        return 0, factor
    raise ValueError(f"{who}: {error}Received: {name}={factor}")


def _check_choice(value, choices, who, what, shown=None):
    """Keras' ``NotImplementedError`` for an unknown ``fill_mode`` / ``interpolation``."""
    if value not in choices:
        raise NotImplementedError(f"{who}: Unknown `{what}` {value}. Expected of one "
                                  f"{choices if shown is None else shown}.")


def _sorted_range(value_range, who):
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError(f"{who}: {_VALUE_RANGE_ERROR}Received: value_range={value_range}")
    return sorted(value_range)


def _to_range(x, src, dst, dt):
    """Keras' ``_transform_value_range``: ``x`` mapped linearly from ``src`` to ``dst``
    (computed in ``dt``; unchanged when the ranges are equal)."""
    if src[0] == dst[0] and src[1] == dst[1]:
        return x
    f = np.dtype(dt).type
    x = cast(x, dt)
    x = (x - float(f(src[0]))) / float(f(src[1]) - f(src[0]))
    return x * float(f(dst[1]) - f(dst[0])) + float(f(dst[0]))


def _is_float(x):
    return x._value.dtype.kind == "f"


def _global_generator(dev):
    from .random import get_global_generator
    return get_global_generator(dev)


def _gamma(gen, shape, alpha):
    from .random import _gamma as gamma
    return gamma(gen, shape, alpha, None, np.float32, "gamma", False)


def _beta(gen, shape, alpha, beta):
    """Beta(alpha, beta) draws (float32), as Keras' ``random.beta``: two gamma draws."""
    a = _gamma(gen, shape, alpha)
    b = _gamma(gen, shape, beta)
    return a / (a + b)


def _grayscale(x, data_format):
    """Keras' ``ops.image.rgb_to_grayscale``: one channel of luma (weights 0.2989, 0.5870,
    0.1140) computed in floats and cast back to the images' dtype (one channel: unchanged)."""
    axis = -1 if data_format == "channels_last" else -3
    if x._value.shape[axis] not in (1, 3):
        raise ValueError(f"Invalid channel size: expected 3 (RGB) or 1 (Grayscale). Received "
                         f"input with shape: images.shape={tuple(x._value.shape)}")
    if x._value.shape[axis] == 1:
        return x
    orig = x._value.dtype
    dt = orig if orig.kind == "f" else np.dtype(np.float32)
    f = cast(x, dt)
    w = _const(x._device, np.array([0.2989, 0.5870, 0.1140], dt))
    gray = expand_dims(tensordot(f, w, [[axis % f._value.ndim], [0]]), axis)
    return cast(gray, orig)


def _hsv(fn, x, data_format):
    """``gt.image.rgb_to_hsv`` / ``hsv_to_rgb`` of float images in ``data_format``."""
    if not _is_float(x):
        raise ValueError(f"Invalid images dtype: expected float dtype. Received: "
                         f"images.dtype={x._value.dtype.name}")
    if data_format == "channels_first":
        return transpose(fn(transpose(x, [0, 2, 3, 1])), [0, 3, 1, 2])
    return fn(x)


def _map_hsv(x, data_format, fn):
    """RGB images through HSV: their ``(h, s, v)`` channels mapped by ``fn``, back to RGB."""
    from .image import hsv_to_rgb, rgb_to_hsv
    hsv = _hsv(rgb_to_hsv, x, data_format)
    cf = data_format == "channels_first"
    parts = fn(*[hsv[:, i] if cf else hsv[..., i] for i in range(3)])
    return _hsv(hsv_to_rgb, stack(list(parts), axis=1 if cf else -1), data_format)


def _depthwise_same(x, kernel):
    """Each channel of NHWC ``x`` convolved with the 2-D ``kernel`` (``SAME`` zero padding)."""
    kh, kw = kernel._value.shape
    k = tile(reshape(kernel, [kh, kw, 1, 1]), [1, 1, x._value.shape[-1], 1])
    return depthwise_conv2d(x, k, strides=[1, 1, 1, 1], padding="SAME")


def _gaussian_1d(size, sigma, dt, dev):
    x = _const(dev, np.arange(size, dtype=dt) - np.asarray((size - 1) / 2, dt))
    k = exp(-0.5 * (x / sigma) ** 2)
    return k / reduce_sum(k)


def _nhwc(x, data_format):
    return transpose(x, [0, 2, 3, 1]) if data_format == "channels_first" else x


def _from_nhwc(x, data_format):
    return transpose(x, [0, 3, 1, 2]) if data_format == "channels_first" else x


def _col(t):
    return reshape(t, [-1, 1, 1, 1])


class _ImageAugmentation(Layer):
    """Keras' ``BaseImagePreprocessingLayer``: the call protocol (a batch, one image or a
    dict of images, labels, bounding boxes and segmentation masks), drawing, and the
    transformation interface the layers implement."""

    autocast = False

    def __init__(self, data_format=None, bounding_box_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.bounding_box_format = bounding_box_format
        self.data_format = _data_format(data_format, type(self).__name__)

    # --- internals --------------------------------------------------------------------
    @property
    def _who(self):
        return type(self).__name__

    def _convert_input(self, x):
        """A Tensor, floats cast to the compute dtype (Keras casts float inputs only)."""
        if not isinstance(x, Tensor):
            x = convert_to_tensor(x)
        if _is_float(x) and x._value.dtype != self._compute_dtype:
            x = cast(x, self._compute_dtype)
        return x

    def _images_of(self, data):
        images = data["images"] if isinstance(data, dict) else data
        x = images if isinstance(images, Tensor) else self._convert_input(images)
        if x._value.ndim not in (3, 4):
            raise ValueError(f"{self._who} layer '{self.name}': Expected the input image to "
                             f"be rank 3 or 4. Received: inputs.shape={tuple(x._value.shape)}")
        return x

    def _batch(self, x):
        return 1 if x._value.ndim == 3 else x._value.shape[0]

    def _hw(self, x):
        return self._hw_of(x._value.shape)

    def _hw_of(self, s):
        return (s[-2], s[-1]) if self.data_format == "channels_first" else (s[-3], s[-2])

    def _generator(self, dev, seed=None):
        """The generator a draw comes from: ``seed`` when it is one, else the layer's own
        (with a ``seed``), else the device's global generator."""
        from .random import Generator
        if isinstance(seed, Generator):
            return seed
        gen = self._seeded_generator(dev)
        return gen if gen is not None else _global_generator(dev)

    def _uniform(self, x, shape, lo=0.0, hi=1.0, seed=None):
        return self._generator(x._device, seed).uniform(shape, minval=lo, maxval=hi)

    def _host_rng(self):
        """A host generator for the choices made on the host: from the layer's seed (or
        the global seed) and the call count, else fresh entropy (as ``RandomCrop``)."""
        words = self.__dict__.get("_seed_words", False)
        if words is False:
            from .random import next_op_seed
            found = None if self.seed is not None else next_op_seed()
            words = [int(self.seed)] if self.seed is not None else (
                None if found is None else [int(w) for w in found])
            self.__dict__["_seed_words"] = words
        calls = self.__dict__.get("_calls", 0)
        self.__dict__["_calls"] = calls + 1
        return np.random.default_rng(None if words is None else words + [calls])

    # --- the transformation interface (Keras' names) -------------------------------------
    def get_random_transformation(self, data, training=True, seed=None):
        return None

    def transform_images(self, images, transformation=None, training=True):
        return images

    def transform_labels(self, labels, transformation=None, training=True):
        return labels

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        return bounding_boxes

    def transform_segmentation_masks(self, segmentation_masks, transformation=None,
                                     training=True):
        return segmentation_masks

    # --- the call -----------------------------------------------------------------------
    def _on_batch(self, fn, x, transformation, training, batched):
        if batched:
            return fn(x, transformation, training=training)
        return squeeze(fn(expand_dims(x, 0), transformation, training=training), 0)

    def call(self, inputs, training=True):
        training = bool(training)
        if isinstance(inputs, dict):
            return self._call_dict(inputs, training)
        x = self._images_of(inputs)
        t = self.get_random_transformation(x, training=training)
        return self._on_batch(self.transform_images, x, t, training, x._value.ndim == 4)

    def _call_dict(self, data, training):
        if "images" not in data:
            raise ValueError(f"{self._who} layer '{self.name}': a dict input needs an "
                             f"'images' entry; got the keys {sorted(data)}")
        out = dict(data)
        out["images"] = images = self._images_of(data)
        batched = images._value.ndim == 4
        t = self.get_random_transformation(out, training=training)
        out["images"] = self._on_batch(self.transform_images, images, t, training, batched)
        if "bounding_boxes" in data:
            if not self.bounding_box_format:
                raise ValueError(f"You passed an input with a 'bounding_boxes' key, but you "
                                 f"didn't specify a bounding box format. Pass a "
                                 f"`bounding_box_format` argument to your {self._who} layer, "
                                 f"e.g. `bounding_box_format='xyxy'`.")
            boxes = _densify(data["bounding_boxes"], images._device)
            if batched:
                out["bounding_boxes"] = self.transform_bounding_boxes(boxes, t,
                                                                      training=training)
            else:
                one = {k: expand_dims(v, 0) if k in ("boxes", "labels") else v
                       for k, v in boxes.items()}
                res = self.transform_bounding_boxes(one, t, training=training)
                out["bounding_boxes"] = {k: squeeze(v, 0) if k in ("boxes", "labels") else v
                                         for k, v in res.items()}
        for key, fn in (("labels", self.transform_labels),
                        ("segmentation_masks", self.transform_segmentation_masks)):
            if key in data:
                out[key] = self._on_batch(fn, self._convert_input(data[key]), t, training,
                                          batched)
        return out

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = {**super().get_config(), "data_format": self.data_format}
        if self.bounding_box_format is not None:
            config["bounding_box_format"] = self.bounding_box_format
        return config


# --- bounding boxes ---------------------------------------------------------------------------

_BOX_FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw", "rel_xyxy", "rel_yxyx",
                "rel_xywh", "rel_center_xywh")


def _densify(bounding_boxes, dev):
    """Keras' ``densify_bounding_boxes`` for dense inputs: boxes as float32, labels as given."""
    if not isinstance(bounding_boxes, dict) or "boxes" not in bounding_boxes or \
            "labels" not in bounding_boxes:
        raise ValueError(f"Expected `bounding_boxes` agurment to be a dict with keys 'boxes' "
                         f"and 'labels'. Received: bounding_boxes={bounding_boxes}")
    from .backend import device_scope
    out = dict(bounding_boxes)
    with device_scope(dev):
        boxes = bounding_boxes["boxes"]
        boxes = boxes if isinstance(boxes, Tensor) else convert_to_tensor(np.asarray(boxes))
        labels = bounding_boxes["labels"]
        labels = labels if isinstance(labels, Tensor) else convert_to_tensor(labels)
    if boxes._value.ndim not in (2, 3):
        raise ValueError(f"Expected `bounding_boxes['boxes']` to have rank 2 or 3, with shape "
                         f"(num_boxes, 4) or (batch_size, num_boxes, 4). Received: "
                         f"bounding_boxes['boxes'].shape={tuple(boxes._value.shape)}")
    out["boxes"] = cast(boxes, np.float32)
    out["labels"] = labels
    return out


def _split4(b):
    return [b[..., i:i + 1] for i in range(4)]


def _to_xyxy(b, fmt, h, w):
    p, q, r, s = _split4(b)
    if fmt == "xyxy":
        return b
    if fmt == "yxyx":
        return concat([q, p, s, r], -1)
    if fmt == "xywh":
        return concat([p, q, p + r, q + s], -1)
    if fmt == "center_xywh":
        return concat([p - r / 2.0, q - s / 2.0, p + r / 2.0, q + s / 2.0], -1)
    if fmt == "center_yxhw":
        return concat([q - s / 2.0, p - r / 2.0, q + s / 2.0, p + r / 2.0], -1)
    if fmt == "rel_xyxy":
        return concat([p * w, q * h, r * w, s * h], -1)
    if fmt == "rel_yxyx":
        return concat([q * w, p * h, s * w, r * h], -1)
    if fmt == "rel_xywh":
        return concat([p * w, q * h, (p + r) * w, (q + s) * h], -1)
    return concat([(p - r / 2.0) * w, (q - s / 2.0) * h, (p + r / 2.0) * w,
                   (q + s / 2.0) * h], -1)                          # rel_center_xywh


def _from_xyxy(b, fmt, h, w):
    x1, y1, x2, y2 = _split4(b)
    if fmt == "xyxy":
        return b
    if fmt == "yxyx":
        return concat([y1, x1, y2, x2], -1)
    if fmt == "xywh":
        return concat([x1, y1, x2 - x1, y2 - y1], -1)
    if fmt == "center_xywh":
        return concat([x1 + (x2 - x1) / 2.0, y1 + (y2 - y1) / 2.0, x2 - x1, y2 - y1], -1)
    if fmt == "center_yxhw":
        return concat([y1 + (y2 - y1) / 2.0, x1 + (x2 - x1) / 2.0, y2 - y1, x2 - x1], -1)
    if fmt == "rel_xyxy":
        return concat([x1 / w, y1 / h, x2 / w, y2 / h], -1)
    if fmt == "rel_yxyx":
        return concat([y1 / h, x1 / w, y2 / h, x2 / w], -1)
    if fmt == "rel_xywh":
        return concat([x1 / w, y1 / h, (x2 - x1) / w, (y2 - y1) / h], -1)
    return concat([(x1 + (x2 - x1) / 2.0) / w, (y1 + (y2 - y1) / 2.0) / h, (x2 - x1) / w,
                   (y2 - y1) / h], -1)                              # rel_center_xywh


def _convert_boxes(boxes, source, target, h, w):
    """Keras' ``bounding_boxes.convert_format`` (float32, through ``"xyxy"``)."""
    if boxes._value.shape[-1] != 4:
        raise ValueError(f"`boxes` must be a tensor with the last dimension of 4. Received: "
                         f"boxes.shape={tuple(boxes._value.shape)}")
    source, target = source.lower(), target.lower()
    if source not in _BOX_FORMATS or target not in _BOX_FORMATS:
        raise ValueError(f"Invalid source or target format. Supported formats: "
                         f"{_BOX_FORMATS}")
    boxes = cast(boxes, np.float32)
    if source == target:
        return boxes
    if source.startswith("rel_") and target.startswith("rel_"):
        source, target = source[4:], target[4:]
    return _from_xyxy(_to_xyxy(boxes, source, float(h), float(w)), target, float(h), float(w))


def _clip_boxes(bounding_boxes, h, w, fmt):
    """Keras' ``clip_to_image_size`` (``"xyxy"`` or ``"rel_xyxy"``): corners clipped to the
    image, labels of empty boxes set to -1."""
    hi_x, hi_y = (1.0, 1.0) if fmt == "rel_xyxy" else (float(w), float(h))
    x1, y1, x2, y2 = _split4(bounding_boxes["boxes"])
    x1, x2 = clip_by_value(x1, 0.0, hi_x), clip_by_value(x2, 0.0, hi_x)
    y1, y2 = clip_by_value(y1, 0.0, hi_y), clip_by_value(y2, 0.0, hi_y)
    out = dict(bounding_boxes)
    out["boxes"] = concat([x1, y1, x2, y2], -1)
    labels = bounding_boxes.get("labels")
    if labels is not None:
        area = squeeze((x2 - x1) * (y2 - y1), -1)
        out["labels"] = where(area > 0, labels, cast(_const(labels._device, np.array(-1)),
                                                     labels._value.dtype))
    return out


# --- colour layers ----------------------------------------------------------------------------

class AutoContrast(_ImageAugmentation):
    """Stretch each image's values (per channel: the minimum and maximum over axes 1 and 2)
    across ``value_range``, as Keras' ``AutoContrast``; applied in training and at
    inference. A constant channel (NaN stretch) keeps its values. Output in the compute
    dtype."""

    def __init__(self, value_range=(0, 255), **kwargs):
        super().__init__(**kwargs)
        self.value_range = _sorted_range(value_range, "AutoContrast")

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        x = cast(_to_range(images, self.value_range, (0, 255), dt), dt)
        low = reduce_min(x, axis=[1, 2], keepdims=True)
        high = reduce_max(x, axis=[1, 2], keepdims=True)
        flat = high == low                  # Keras' stretch is NaN there: kept as given
        scale = 255.0 / where(flat, 1.0, high - low)
        out = clip_by_value(x * scale + -low * scale, 0.0, 255.0)
        out = _to_range(out, (0, 255), self.value_range, dt)
        keep = logical_or(is_nan(out), flat)
        return where(keep, cast(images, out._value.dtype), out)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range}


class Equalization(_ImageAugmentation):
    """Histogram equalization per channel, as Keras' ``Equalization``: ``bins`` bins over
    ``value_range`` counted over the whole batch, each value replaced by its cumulative
    frequency scaled to the range (rounded); a channel with one occupied bin is kept.
    Applied when training (a direct call); the inputs pass through at inference."""

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.bins = bins
        self.value_range = _sorted_range(value_range, "Equalization")

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        dt = self._compute_dtype
        bins = int(self.bins)
        x = cast(images, dt)
        cf = self.data_format == "channels_first"
        perm = [1, 0, 2, 3] if cf else [3, 0, 1, 2]
        xc = transpose(x, perm)
        shape = xc._value.shape
        lo, hi = self.value_range
        scale = (255 - 0) / (hi - lo)
        ch = reshape(xc, [shape[0], -1]) * scale + (0 - lo * scale)
        v = cast(ch, np.float32)
        idx = clip_by_value(cast((v - 0.0) * float(bins - 1) / 255.0, np.int32), 0, bins - 1)
        from .ops.extra import bincount
        hist = bincount(idx, minlength=bins, maxlength=bins, axis=-1)
        occupied = count_nonzero(hist, axis=-1, keepdims=True)
        cdf = cumsum(hist, axis=-1)
        first = argmax(cast(cdf > 0, np.int32), axis=-1, output_type=np.int32)
        cdf_min = gather(cdf, reshape(first, [-1, 1]), batch_dims=1)
        den = cdf[:, -1:] - cdf_min
        den = cast(where(den == 0, 1, den), np.float64)
        lut = cast(cdf - cdf_min, np.float64) * 255.0 / den
        lut = clip_by_value(_round(lut), 0.0, 255.0)
        ind = cast(clip_by_value((ch / 255.0) * float(bins - 1), 0.0, float(bins - 1)),
                   np.int32)
        eq = gather(lut, ind, batch_dims=1)
        out = where(occupied <= 1, cast(ch, np.float64), eq)
        back = (hi - lo) / (255 - 0)
        out = cast(out * back + (lo - 0 * back), dt)
        inv = [1, 0, 2, 3] if cf else [1, 2, 3, 0]
        return transpose(reshape(out, list(shape)), inv)

    def get_config(self):
        return {**super().get_config(), "bins": self.bins, "value_range": self.value_range}


class Solarization(_ImageAugmentation):
    """``255 - x`` (in ``value_range`` scaled to ``[0, 255]``) for the values at or above a
    threshold, after adding an offset, as Keras' ``Solarization``: per image, the addition
    is drawn from ``[addition_factor[0], addition_factor[1] * 255)`` and the threshold from
    ``[threshold_factor[0], threshold_factor[1] * 255)`` (a number ``f``: ``(0, f)``; all
    within ``[0, 1]``). Defaults: no addition, every value inverted."""

    _FACTOR_ERROR = ("The `addition_factor` and `threshold_factor` arguments should be a "
                     "number (or a list of two numbers) in the range [0, 1]. ")

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255),
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.addition_factor = self._set_factor(addition_factor, "addition_factor")
        self.threshold_factor = self._set_factor(threshold_factor, "threshold_factor")
        self.value_range = _sorted_range(value_range, "Solarization")

    def _set_factor(self, factor, name):
        return _unit_factor(factor, name, "Solarization", self._FACTOR_ERROR, False)

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        shape = [x._value.shape[0], 1, 1, 1] if x._value.ndim == 4 else [1, 1, 1]
        add, thr = self.addition_factor, self.threshold_factor
        return {"additions": self._uniform(x, shape, add[0], add[1] * 255, seed),
                "thresholds": self._uniform(x, shape, thr[0], thr[1] * 255, seed)}

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        images = cast(images, dt)
        if not training or transformation is None:
            return images
        x = _to_range(images, self.value_range, (0, 255), dt)
        out = clip_by_value(x + cast(transformation["additions"], dt), 0.0, 255.0)
        out = where(out < cast(transformation["thresholds"], dt), out, 255.0 - out)
        return _to_range(out, (0, 255), self.value_range, dt)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "addition_factor": self.addition_factor,
                "threshold_factor": self.threshold_factor, "seed": self.seed}


class _ProbabilityMixin:
    """Keras' per-image choice: a probability drawn from ``factor`` and a threshold from
    ``[0, 1)``; the image is transformed where the threshold is below the probability."""

    def _apply_draw(self, x, n, seed):
        p = self._uniform(x, [n], self.factor[0], self.factor[1], seed)
        return self._uniform(x, [n], 0.0, 1.0, seed) < p


class RandomInvert(_ProbabilityMixin, _ImageAugmentation):
    """``value_range[1] - x`` for each image with a probability drawn from ``factor`` (a
    number ``f``: ``[0, f]``), as Keras' ``RandomInvert``."""

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None,
                 **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomInvert")
        self.value_range = value_range
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        return {"apply_inversion": self._apply_draw(x, self._batch(x), seed)}

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        images = cast(images, self._compute_dtype)
        return where(_col(transformation["apply_inversion"]),
                     float(self.value_range[1]) - images, images)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


class RandomGrayscale(_ImageAugmentation):
    """Each image turned to grayscale (Keras' luma, repeated over the channels; the
    images' dtype kept) with probability ``factor``, as Keras' ``RandomGrayscale``. The
    transformation is the boolean ``[batch, 1, 1, 1]`` choice itself."""

    def __init__(self, factor=0.5, data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        if not _is_number(factor) or factor < 0 or factor > 1:
            raise ValueError(f"RandomGrayscale: `factor` should be between 0 and 1. "
                             f"Received: factor={factor}")
        self.factor = factor
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        n = self._batch(x)
        return reshape(self._uniform(x, [n], 0.0, 1.0, seed) < float(self.factor),
                       [n, 1, 1, 1])

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        if transformation is None:
            transformation = self.get_random_transformation(images)
        return where(transformation, _grayscale(images, self.data_format), images)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def _check_rank(x, who):
    if x._value.ndim not in (3, 4):
        raise ValueError(f"{who}: Expected the input image to be rank 3 or 4. Received: "
                         f"inputs.shape={tuple(x._value.shape)}")


class RandomHue(_ImageAugmentation):
    """Shift each image's hue by ``±d / 2`` turns, ``d`` drawn from ``factor`` (a number
    ``f``: ``[0, f]``, within ``[0, 1]``) and the sign at random, as Keras' ``RandomHue``
    (the images scaled from ``value_range`` to ``[0, 1]`` and back)."""

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomHue")
        self.value_range = value_range
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        n = self._batch(x)
        invert = self._uniform(x, [n], 0.0, 1.0, seed)
        invert = where(invert > 0.5, -1.0, 1.0)
        factor = self._uniform(x, [n], self.factor[0], self.factor[1], seed)
        return {"factor": invert * factor * 0.5}

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        dt = self._compute_dtype
        x = _to_range(cast(images, dt), self.value_range, (0, 1), dt)
        f = reshape(cast(transformation["factor"], x._value.dtype), [-1, 1, 1])

        def shift(h, s, v):
            h = h + f
            h = where(h > 1.0, h - 1.0, h)
            return where(h < 0.0, h + 1.0, h), s, v
        x = _map_hsv(x, self.data_format, shift)
        x = _to_range(clip_by_value(x, 0.0, 1.0), (0, 1), self.value_range, dt)
        return cast(x, dt)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


class RandomSaturation(_ImageAugmentation):
    """Scale each image's HSV saturation by ``d / (1 - d + 1e-7)``, ``d`` drawn per image
    from ``factor``, then clip it to ``value_range``, as Keras' ``RandomSaturation``
    (``factor`` within ``[-1, 1]``: a number ``f`` is ``(-f, f)``). Needs float images."""

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (-1, 1), "RandomSaturation")
        self.value_range = _sorted_range(value_range, "RandomSaturation")
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        f = self._uniform(x, [self._batch(x)], self.factor[0], self.factor[1], seed)
        return {"factor": f / (1.0 - f + 1e-7)}

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        f = reshape(cast(transformation["factor"], self._compute_dtype), [-1, 1, 1])

        def scale(h, s, v):
            return h, clip_by_value(s * cast(f, s._value.dtype), float(self.value_range[0]),
                                    float(self.value_range[1])), v
        return _map_hsv(images, self.data_format, scale)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


class RandomColorDegeneration(_ImageAugmentation):
    """Blend each image towards its grayscale version by a factor drawn per image from
    ``factor`` (within ``[-1, 1]``; a number ``f`` is ``(-f, f)``), clipped to
    ``value_range``, as Keras' ``RandomColorDegeneration``."""

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (-1, 1), "RandomColorDegeneration")
        self.value_range = _sorted_range(value_range, "RandomColorDegeneration")
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        return {"factor": self._uniform(x, [self._batch(x), 1, 1, 1], self.factor[0],
                                        self.factor[1], seed)}

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        dt = self._compute_dtype
        x = cast(images, dt)
        f = cast(transformation["factor"], dt)
        x = x + f * (_grayscale(x, self.data_format) - x)
        return cast(clip_by_value(x, float(self.value_range[0]), float(self.value_range[1])),
                    dt)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


# Keras' RandomBrightness / RandomContrast / RandomRotation / RandomTranslation
# transformations, for the gradtape layers of layers_preprocessing

def _brightness_draw(layer, owner, x, seed):
    shape = [x._value.shape[0], 1, 1, 1] if x._value.ndim == 4 else [1, 1, 1]
    span = layer.value_range[1] - layer.value_range[0]
    return {"rgb_delta": owner._uniform(x, shape, layer.factor[0], layer.factor[1], seed)
            * float(span)}


def _brightness_apply(layer, images, t, interpolation=None):
    out = images + cast(t["rgb_delta"], images._value.dtype)
    return clip_by_value(out, float(layer.value_range[0]), float(layer.value_range[1]))


def _contrast_draw(layer, owner, x, seed):
    shape = [x._value.shape[0], 1, 1, 1] if x._value.ndim == 4 else [1, 1, 1]
    return {"contrast_factor": owner._uniform(x, shape, 1.0 - layer.factor[0],
                                              1.0 + layer.factor[1], seed)}


def _contrast_apply(layer, images, t, interpolation=None):
    axes = (-2, -1) if layer.data_format == "channels_first" else (-3, -2)
    mean = reduce_mean(reduce_mean(images, axis=axes[0], keepdims=True), axis=axes[1],
                       keepdims=True)
    out = (images - mean) * cast(t["contrast_factor"], images._value.dtype) + mean
    return clip_by_value(out, float(layer.value_range[0]), float(layer.value_range[1]))


def _rotation_draw(layer, owner, x, seed):
    n = owner._batch(x)
    h, w = owner._hw(x)
    lo, hi = layer.factor
    angle = owner._uniform(x, [n], lo * 360.0, hi * 360.0, seed)
    rad = reshape(angle * (np.pi / 180.0), [n, 1])
    from .ops.math import cos, sin
    cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
    a0, a1, b0, b1 = cos(rad), -sin(rad), sin(rad), cos(rad)
    zero = rad * 0.0
    return {"angle": angle, "rotation_matrix": concat(
        [a0, a1, cx - cx * a0 - cy * a1, b0, b1, cy - cx * b0 - cy * b1, zero, zero], 1)}


def _rotation_apply(layer, images, t, interpolation=None):
    return affine_transform(images, t["rotation_matrix"], interpolation or layer.interpolation,
                            layer.fill_mode, layer.fill_value, layer.data_format)


def _translation_draw(layer, owner, x, seed):
    n = owner._batch(x)
    h, w = owner._hw(x)
    ty = owner._uniform(x, [n, 1], layer._height[0], layer._height[1], seed) * float(h)
    tx = owner._uniform(x, [n, 1], layer._width[0], layer._width[1], seed) * float(w)
    return {"translations": concat([tx, ty], 1)}


def _translation_apply(layer, images, t, interpolation=None):
    tr = cast(t["translations"], np.float32)
    zero = tr[:, :1] * 0.0
    m = concat([zero + 1.0, zero, -tr[:, :1], zero, zero + 1.0, -tr[:, 1:], zero, zero], 1)
    return affine_transform(images, m, interpolation or layer.interpolation, layer.fill_mode,
                            layer.fill_value, layer.data_format)


_FOREIGN = {RandomBrightness: (_brightness_draw, _brightness_apply),
            RandomContrast: (_contrast_draw, _contrast_apply),
            RandomRotation: (_rotation_draw, _rotation_apply),
            RandomTranslation: (_translation_draw, _translation_apply)}


def _draw_with(layer, owner, data, seed):
    """``layer``'s Keras transformation drawn from ``seed`` (the owner's generator)."""
    if type(layer) in _FOREIGN:
        return _FOREIGN[type(layer)][0](layer, owner, owner._images_of(data), seed)
    return layer.get_random_transformation(data, training=True, seed=seed)


def _apply_with(layer, images, t):
    if type(layer) in _FOREIGN:
        return _FOREIGN[type(layer)][1](layer, cast(images, layer._compute_dtype), t)
    return layer.transform_images(images, t)


def _apply_masks_with(layer, masks, t):
    if type(layer) in (RandomRotation, RandomTranslation):
        return cast(_FOREIGN[type(layer)][1](layer, masks, t, "nearest"), masks._value.dtype)
    if type(layer) in _FOREIGN:
        return masks
    return layer.transform_segmentation_masks(masks, t)


class RandomColorJitter(_ImageAugmentation):
    """Random brightness, contrast, saturation and hue in turn (each when its factor is
    given, as Keras' ``RandomBrightness``, ``RandomContrast``, ``RandomSaturation`` and
    ``RandomHue`` with ``value_range``), as Keras' ``RandomColorJitter``. The draws happen
    in :meth:`transform_images`; a transformation dict may give any of them instead, under
    ``"brightness"``, ``"contrast"``, ``"saturation"`` and ``"hue"``."""

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None,
                 saturation_factor=None, hue_factor=None, seed=None, data_format=None,
                 **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.value_range = value_range
        self.brightness_factor = brightness_factor
        self.contrast_factor = contrast_factor
        self.saturation_factor = saturation_factor
        self.hue_factor = hue_factor
        self.seed = seed
        self.random_brightness = None if brightness_factor is None else RandomBrightness(
            factor=brightness_factor, value_range=value_range, seed=seed)
        self.random_contrast = None if contrast_factor is None else RandomContrast(
            factor=contrast_factor, value_range=value_range, seed=seed)
        self.random_saturation = None if saturation_factor is None else RandomSaturation(
            factor=saturation_factor, value_range=value_range, seed=seed)
        self.random_hue = None if hue_factor is None else RandomHue(
            factor=hue_factor, value_range=value_range, seed=seed)

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        given = transformation or {}
        x = cast(images, self._compute_dtype)
        gen = self._generator(x._device)
        for key in ("brightness", "contrast", "saturation", "hue"):
            layer = getattr(self, f"random_{key}")
            if layer is None:
                continue
            t = given.get(key)
            if t is None:
                t = _draw_with(layer, self, x, gen)
            x = _apply_with(layer, x, t)
        return cast(x, self._compute_dtype)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "brightness_factor": self.brightness_factor,
                "contrast_factor": self.contrast_factor,
                "saturation_factor": self.saturation_factor, "hue_factor": self.hue_factor,
                "seed": self.seed}


class RandomSharpness(_ImageAugmentation):
    """Blend each image with a 3x3 smoothed version (centre 5/13, neighbours 1/13, zero
    padding): ``x + (1 - 2 d) * (smooth - x)``, ``d`` drawn per image from ``factor`` (a
    number ``f``: ``[0, f]``), clipped to ``value_range``, as Keras' ``RandomSharpness``."""

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomSharpness")
        self.value_range = _sorted_range(value_range, "RandomSharpness")
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        return {"factor": self._uniform(x, [self._batch(x)], self.factor[0], self.factor[1],
                                        seed)}

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        x = cast(images, dt)
        if not training:
            return x
        x = _nhwc(x, self.data_format)
        f = reshape(cast(transformation["factor"] * 2.0, dt), [-1, 1, 1, 1])
        a, b = 1.0 / 13.0, 5.0 / 13.0
        kernel = _const(x._device, np.array([[a, a, a], [a, b, a], [a, a, a]], dt))
        smooth = cast(_depthwise_same(x, kernel), dt)
        x = x + (1.0 - f) * (smooth - x)
        x = clip_by_value(x, float(self.value_range[0]), float(self.value_range[1]))
        return _from_nhwc(x, self.data_format)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


class RandomPosterization(_ImageAugmentation):
    """Keep the top ``b`` bits of each 8-bit value (``value_range`` scaled to ``[0, 255]``
    and cast to uint8), ``b`` drawn per image from ``[factor[0], factor[1])`` (one value
    when they are equal; a number ``f``: ``(1, f)``, within ``[1, 8]``), as Keras'
    ``RandomPosterization``."""

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (1, 8), "RandomPosterization")
        self.value_range = _sorted_range(value_range, "RandomPosterization")
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        n = self._batch(x)
        lo, hi = int(self.factor[0]), int(self.factor[1])
        if self.factor[0] != self.factor[1]:
            gen = self._generator(x._device, seed)
            bits = cast(gen.uniform([n], minval=lo, maxval=hi, dtype=np.int32), np.uint8)
        else:
            bits = _const(x._device, np.full([n], lo, np.uint8))
        return {"shift_factor": 8 - bits}

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        dt = self._compute_dtype
        shift = reshape(cast(transformation["shift_factor"], np.uint8), [-1, 1, 1, 1])
        x = cast(_to_range(images, self.value_range, (0, 255), dt), np.uint8)
        x = left_shift(right_shift(x, shift), shift)
        return _to_range(cast(x, dt), (0, 255), self.value_range, dt)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range, "seed": self.seed}


class RandomGaussianBlur(_ProbabilityMixin, _ImageAugmentation):
    """Blur each image, with a probability drawn from ``factor``, by a Gaussian kernel of
    ``kernel_size`` (odd; zero padding) whose two sigmas are drawn once per call from
    ``sigma`` (within ``[0, 1]``; plus 1e-6), clipped to ``value_range``, as Keras'
    ``RandomGaussianBlur``."""

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255),
                 data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomGaussianBlur")
        self.kernel_size = self._kernel_size(kernel_size)
        self.sigma = _factor(sigma, (0, 1), "RandomGaussianBlur", "sigma")
        self.value_range = value_range
        self.seed = seed

    @staticmethod
    def _kernel_size(k):
        msg = f"RandomGaussianBlur: kernel_size must be an odd number. Received: kernel_size={k}"
        if isinstance(k, (tuple, list)):
            if len(k) != 2:
                raise ValueError(f"RandomGaussianBlur: The `kernel_size` argument should be a "
                                 f"number (or a list of two numbers) Received: kernel_size={k}")
            if not all(_is_number(v) for v in k) or k[0] % 2 == 0 or k[1] % 2 == 0:
                raise ValueError(msg)
            return k[0], k[1]
        if not _is_number(k) or k % 2 == 0:
            raise ValueError(msg)
        return k, k

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        apply = self._apply_draw(x, self._batch(x), seed)
        sig = self._uniform(x, [2], self.sigma[0], self.sigma[1], seed) + 1e-6
        return {"should_apply_blur": apply, "blur_factor": sig}

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        x = cast(images, dt)
        if not training or transformation is None:
            return x
        sig = cast(transformation["blur_factor"], dt)
        k0, k1 = int(self.kernel_size[0]), int(self.kernel_size[1])
        kx = _gaussian_1d(k0, sig[0], dt, x._device)
        ky = _gaussian_1d(k1, sig[1], dt, x._device)
        kernel = reshape(reshape(ky, [k1, 1]) * reshape(kx, [1, k0]), [k0, k1])
        blurred = _from_nhwc(_depthwise_same(_nhwc(x, self.data_format), kernel),
                             self.data_format)
        x = where(_col(transformation["should_apply_blur"]), blurred, x)
        return cast(clip_by_value(x, float(self.value_range[0]), float(self.value_range[1])),
                    dt)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "kernel_size": self.kernel_size, "sigma": self.sigma,
                "value_range": self.value_range, "seed": self.seed}


class RandomErasing(_ProbabilityMixin, _ImageAugmentation):
    """Erase a random rectangle of each image, with a probability drawn from ``factor``, as
    Keras' ``RandomErasing``: its sides are ``sqrt(s)`` times the image's, ``s`` drawn per
    side from ``scale``, at a random place; the pixels take ``fill_value`` (a number, three
    channel values, or None: normal noise times ``value_range[1]``), clipped to
    ``value_range``."""

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None,
                 value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomErasing")
        self.scale = _factor(scale, (0, 1), "RandomErasing", "scale")
        msg = ("RandomErasing: The `fill_value` argument should be a number (or a list of "
               f"three numbers) Received: fill_value={fill_value}")
        if fill_value is not None and not _is_number(fill_value) and not (
                isinstance(fill_value, (tuple, list)) and len(fill_value) == 3):
            raise ValueError(msg)
        self.fill_value = fill_value
        self.value_range = value_range
        self.seed = seed

    def _bounds(self, x, n, length, ratio, seed):
        crop = cast(ratio * float(length), self._compute_dtype)
        start = self._uniform(x, [n], 0.0, 1.0, seed) * (float(length) - crop)
        return start, start + crop

    def _mask(self, x, x0, x1, y0, y1):
        """Keras' box mask: ``x0 <= col < x1`` and ``y0 <= row < y1``, per image."""
        h, w = self._hw(x)
        dt = self._compute_dtype
        cf = self.data_format == "channels_first"
        shape_y = [1, 1, h, 1] if cf else [1, h, 1, 1]
        shape_x = [1, 1, 1, w] if cf else [1, 1, w, 1]
        gy = _const(x._device, np.arange(h, dtype=dt).reshape(shape_y))
        gx = _const(x._device, np.arange(w, dtype=dt).reshape(shape_x))
        m = logical_and(logical_and(gx >= _col(x0), gx < _col(x1)),
                        logical_and(gy >= _col(y0), gy < _col(y1)))
        c = x._value.shape[-3 if cf else -1]
        return tile(m, [1, c, 1, 1] if cf else [1, 1, 1, c])

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        n = self._batch(x)
        h, w = self._hw(x)
        mix = sqrt(self._uniform(x, [n, 2], self.scale[0], self.scale[1], seed))
        x0, x1 = self._bounds(x, n, w, mix[:, 0], seed)
        y0, y1 = self._bounds(x, n, h, mix[:, 1], seed)
        masks = self._mask(x, x0, x1, y0, y1)
        apply = self._apply_draw(x, n, seed)
        return {"apply_erasing": apply, "batch_masks": masks,
                "fill_value": self._fill(x, seed)}

    def _fill(self, x, seed):
        dt = self._compute_dtype
        shape = list(x._value.shape)
        if self.fill_value is None:
            fill = self._generator(x._device, seed).normal(shape, dtype=dt) * float(
                self.value_range[1])
        elif isinstance(self.fill_value, (tuple, list)):
            fill = _const(x._device, np.broadcast_to(np.asarray(self.fill_value, dt),
                                                     shape).copy())
        else:
            fill = _const(x._device, np.full(shape, self.fill_value, dt))
        return clip_by_value(fill, float(self.value_range[0]), float(self.value_range[1]))

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        x = cast(images, dt)
        if training:
            erased = where(transformation["batch_masks"], cast(transformation["fill_value"], dt),
                           x)
            x = where(_col(transformation["apply_erasing"]), erased, x)
        return x

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "fill_value": self.fill_value, "value_range": self.value_range,
                "seed": self.seed}


# --- geometric layers -------------------------------------------------------------------------

class _GeometricMixin:
    """Keras' base ``transform_images`` of the geometric layers: the images cast to the
    compute dtype, then (training) ``_transform_images`` with the layer's interpolation;
    segmentation masks take ``"nearest"``."""

    def transform_images(self, images, transformation=None, training=True):
        images = cast(images, self._compute_dtype)
        if training:
            images = self._transform_images(images, transformation, self.interpolation)
        return images

    def transform_segmentation_masks(self, segmentation_masks, transformation=None,
                                     training=True):
        if training:
            return self._transform_images(segmentation_masks, transformation, "nearest")
        return segmentation_masks


_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_INTERPOLATIONS = ("nearest", "bilinear")


class RandomShear(_GeometricMixin, _ImageAugmentation):
    """Shear each image about its top-left corner: output ``(x, y)`` reads the input at
    ``(x + sx y, sy x + y)``, ``sx`` and ``sy`` drawn per image from ``x_factor`` and
    ``y_factor`` (a number ``f``: ``[-f, f]``; within ``[0, 1]``) with one random sign, as
    Keras' ``RandomShear`` (``fill_mode``, ``fill_value`` and ``interpolation`` as
    :func:`affine_transform`). Bounding boxes are sheared in relative coordinates and
    clipped."""

    _FACTOR_ERROR = ("The `factor` argument should be a number (or a list of two numbers) in "
                     "the range [0, 1.0]. ")

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear",
                 fill_mode="reflect", fill_value=0.0, data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.x_factor = self._set_factor(x_factor, "x_factor")
        self.y_factor = self._set_factor(y_factor, "y_factor")
        _check_choice(fill_mode, _FILL_MODES, "RandomShear", "fill_mode")
        _check_choice(interpolation, _INTERPOLATIONS, "RandomShear", "interpolation")
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.interpolation = interpolation
        self.seed = seed

    def _set_factor(self, factor, name):
        return _unit_factor(factor, name, "RandomShear", self._FACTOR_ERROR, True)

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        n = self._batch(x)
        invert = where(self._uniform(x, [n, 1], 0.0, 1.0, seed) > 0.5, -1.0, 1.0)
        sy = self._uniform(x, [n, 1], self.y_factor[0], self.y_factor[1], seed)
        sx = self._uniform(x, [n, 1], self.x_factor[0], self.x_factor[1], seed)
        return {"shear_factor": concat([sx, sy], 1) * invert,
                "input_shape": tuple(x._value.shape)}

    def _transform_images(self, images, transformation, interpolation):
        if transformation is None:
            return images
        s = cast(transformation["shear_factor"], np.float32)
        zero = s[:, :1] * 0.0
        m = concat([zero + 1.0, s[:, :1], zero, s[:, 1:], zero + 1.0, zero, zero, zero], 1)
        out = affine_transform(images, m, interpolation, self.fill_mode, self.fill_value,
                               self.data_format)
        return cast(out, images._value.dtype)          # (integer masks stay integers)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        if not training or transformation is None:
            return bounding_boxes
        h, w = self._hw_of(transformation["input_shape"])
        out = dict(bounding_boxes)
        boxes = _convert_boxes(bounding_boxes["boxes"], self.bounding_box_format, "rel_xyxy",
                               h, w)
        s = cast(transformation["shear_factor"], np.float32)
        shx, shy = s[:, :1], s[:, 1:]
        x1, y1, x2, y2 = (boxes[..., i] for i in range(4))
        x1n = where(shx < 0, x1 - shx * y1, x1 - shx * y2)
        x2n = where(shx < 0, x2 - shx * y2, x2 - shx * y1)
        y1n = where(shy > 0, y1 - shy * x2n, y1 - shy * x1n)
        y2n = where(shy > 0, y2 - shy * x1n, y2 - shy * x2n)
        out["boxes"] = stack([x1n, y1n, x2n, y2n], -1)
        out = _clip_boxes(out, h, w, "rel_xyxy")
        out["boxes"] = _convert_boxes(out["boxes"], "rel_xyxy", self.bounding_box_format, h, w)
        return out

    @classmethod
    def from_config(cls, config):
        """The layer of a config: its stored ``(lower, upper)`` factors (a negative lower
        end included, which the constructor refuses, so Keras 3.15 cannot rebuild it)."""
        config = dict(config)
        factors = {k: config.pop(k, 0.0) for k in ("x_factor", "y_factor")}
        layer = cls(**config)
        for key, value in factors.items():
            if isinstance(value, (tuple, list)) and len(value) == 2 and all(
                    _is_number(v) and -1.0 <= v <= 1.0 for v in value):
                setattr(layer, key, tuple(sorted(value)))
            else:
                setattr(layer, key, layer._set_factor(value, key))
        return layer

    def get_config(self):
        return {**super().get_config(), "x_factor": self.x_factor, "y_factor": self.y_factor,
                "fill_mode": self.fill_mode, "interpolation": self.interpolation,
                "seed": self.seed, "fill_value": self.fill_value,
                "data_format": self.data_format}


def _homography(start, end):
    """Keras' ``compute_homography_matrix``: the 8 projective coefficients mapping ``end``
    points to ``start`` points (``[n, 4, 2]`` each), solved in float64."""
    s = cast(start, np.float64)
    e = cast(end, np.float64)
    zero = e[:, 0, 0] * 0.0
    one = zero + 1.0
    rows = []
    for i in range(4):
        ex, ey, sx, sy = e[:, i, 0], e[:, i, 1], s[:, i, 0], s[:, i, 1]
        rows.append(stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], -1))
        rows.append(stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], -1))
    a = stack(rows, 1)
    b = reshape(s, [-1, 8, 1])
    return reshape(solve(a, b), [-1, 8])


class RandomPerspective(_ProbabilityMixin, _GeometricMixin, _ImageAugmentation):
    """A random perspective warp per image, with a probability drawn from ``factor``, as
    Keras' ``RandomPerspective``: the image corners move by ``corner * u``, ``u`` drawn
    from ``[-scale / 2, scale / 2)`` per coordinate, and the projective map between them
    resamples the image (``interpolation``; ``fill_value`` outside)."""

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_value=0.0,
                 seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomPerspective")
        if not _is_number(scale) or scale < 0.0 or scale > 1.0:
            raise ValueError(f"RandomPerspective: The `scale` argument should be a number in "
                             f"the range [0,1]. Received: scale={scale}")
        _check_choice(interpolation, _INTERPOLATIONS, "RandomPerspective", "interpolation")
        self.scale = scale
        self.fill_value = fill_value
        self.interpolation = interpolation
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        n = self._batch(x)
        h, w = self._hw(x)
        apply = self._apply_draw(x, n, seed)
        u = self._uniform(x, [n, 4, 2], -0.5 * self.scale, 0.5 * self.scale, seed)
        dt = self._compute_dtype
        start = _const(x._device, np.tile(np.array(
            [[[0.0, 0.0], [w - 1, 0.0], [0.0, h - 1], [w - 1, h - 1]]], dt), (n, 1, 1)))
        return {"apply_perspective": apply, "start_points": start,
                "end_points": start + start * cast(u, dt),
                "input_shape": tuple(x._value.shape)}

    def _transform_images(self, images, transformation, interpolation):
        if transformation is None:
            return images
        m = _homography(transformation["start_points"], transformation["end_points"])
        out = affine_transform(images, cast(m, np.float32), interpolation, "constant",
                               self.fill_value, self.data_format)
        out = cast(out, images._value.dtype)
        return where(_col(transformation["apply_perspective"]), out, images)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        if not training or transformation is None:
            return bounding_boxes
        from .ops.linalg import inv, matmul
        h, w = self._hw_of(transformation["input_shape"])
        boxes = _convert_boxes(bounding_boxes["boxes"], self.bounding_box_format, "xyxy", h, w)
        m = _homography(transformation["start_points"], transformation["end_points"])
        full = reshape(concat([m, m[:, :1] * 0.0 + 1.0], 1), [-1, 3, 3])
        hinv = cast(inv(full), np.float32)                                  # [n, 3, 3]
        x0, y0, x1, y1 = (boxes[..., i] for i in range(4))                  # [n, k]
        xs, ys = [], []
        for px, py in ((x0, y0), (x1, y1), (x0, y1), (x1, y0)):
            pts = stack([px, py, px * 0.0 + 1.0], 1)                        # [n, 3, k]
            t = matmul(hinv, pts)
            xs.append(t[:, 0] / t[:, 2])
            ys.append(t[:, 1] / t[:, 2])
        xs, ys = stack(xs, -1), stack(ys, -1)
        new = stack([reduce_min(xs, -1), reduce_min(ys, -1), reduce_max(xs, -1),
                     reduce_max(ys, -1)], -1)
        out = dict(bounding_boxes)
        out["boxes"] = where(reshape(transformation["apply_perspective"], [-1, 1, 1]), new,
                             boxes)
        out = _clip_boxes(out, h, w, "xyxy")
        out["boxes"] = _convert_boxes(out["boxes"], "xyxy", self.bounding_box_format, h, w)
        return out

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "interpolation": self.interpolation, "fill_value": self.fill_value,
                "seed": self.seed}


_MAP_FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _map_index(idx, size, mode):
    """Keras' ``map_coordinates`` index fix-up: (index inside the image, valid mask or
    None). An index that Keras' ``"mirror"`` sends to ``size`` is clipped."""
    if mode == "constant":
        valid = logical_and(idx >= 0, idx < size)
        return clip_by_value(idx, 0, size - 1), valid
    if mode == "nearest":
        return clip_by_value(idx, 0, size - 1), None
    if mode == "wrap":
        return floormod(idx, size), None
    a = _abs(idx)
    m = floormod(a, 2 * size)
    under = m < size
    c = where(under, m, 2 * size - m)
    if mode == "reflect":
        c = where(under, c, c - 1)
    return clip_by_value(c, 0, size - 1), None


def _map_coordinates(x, cy, cx, order, mode, fill_value):
    """Keras' ``map_coordinates`` of each image and channel of NHWC ``x`` at ``(cy, cx)``
    (``[n, h, w]``): order 0 (rounding half to even) or 1 (bilinear), fill ``mode``."""
    n, h, w, c = x._value.shape
    flat = reshape(x, [n, h * w, c])

    def nodes(coord):
        if order == 0:
            return [(cast(_round(coord), np.int32), None)]
        lower = floor(coord)
        upper_w = coord - lower
        i = cast(lower, np.int32)
        return [(i, 1.0 - upper_w), (i + 1, upper_w)]

    out = None
    for iy, wy in nodes(cy):
        sy, vy = _map_index(iy, h, mode)
        for ix, wx in nodes(cx):
            sx, vx = _map_index(ix, w, mode)
            g = gather(flat, reshape(sy * w + sx, [n, h * w]), batch_dims=1)
            g = reshape(g, [n, h, w, c])
            if mode == "constant":
                g = where(expand_dims(logical_and(vy, vx), -1), g, float(fill_value))
            if wy is not None:
                g = expand_dims(wy * wx, -1) * g
            out = g if out is None else out + g
    return out


class RandomElasticTransform(_ProbabilityMixin, _GeometricMixin, _ImageAugmentation):
    """Elastic distortion, as Keras' ``RandomElasticTransform``: a distortion ``d`` drawn
    once per call from ``scale`` gives ``alpha = max(h, w) * 0.1 d`` and ``sigma =
    min(h, w) * 0.05 d``; a normal noise field times ``sigma``, smoothed by a Gaussian of
    ``sigma`` (kernel ``6 * int(sigma) | 1``, zero padding), times ``alpha`` displaces the
    sampling points of each image chosen with a probability drawn from ``factor``
    (``interpolation`` ``"bilinear"`` or ``"nearest"``, ``fill_mode`` of Keras'
    ``map_coordinates``: ``"mirror"``, which the layer accepts but Keras' TensorFlow
    ``elastic_transform`` refuses, runs too); clipped to ``value_range``. The noise is part
    of the transformation (``"noise"``, ``[batch, height, width]`` standard normal)."""

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_mode="reflect",
                 fill_value=0.0, value_range=(0, 255), seed=None, data_format=None,
                 **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "RandomElasticTransform")
        self.scale = _factor(scale, (0, 1), "RandomElasticTransform", "scale")
        _check_choice(interpolation, _INTERPOLATIONS, "RandomElasticTransform",
                      "interpolation")
        _check_choice(fill_mode, _MAP_FILL_MODES, "RandomElasticTransform", "fill_mode",
                      set(_MAP_FILL_MODES))
        self.interpolation = interpolation
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.value_range = value_range
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        if not training or self.scale[1] == 0 or self.factor[1] == 0:
            return None
        x = self._images_of(data)
        n = self._batch(x)
        h, w = self._hw(x)
        apply = self._apply_draw(x, n, seed)
        d = self._uniform(x, [], self.scale[0], self.scale[1], seed)
        noise = self._generator(x._device, seed).normal([n, h, w], dtype=self._compute_dtype)
        return {"apply_transform": apply, "distortion_factor": d, "noise": noise}

    def _transform_images(self, images, transformation, interpolation):
        if transformation is None:
            return images
        dt = images._value.dtype if _is_float(images) else np.dtype(np.float32)
        x = _nhwc(cast(images, dt), self.data_format)
        n, h, w, _ = x._value.shape
        d = cast(transformation["distortion_factor"], dt)
        alpha = float(max(h, w)) * (0.1 * d)
        sigma = float(min(h, w)) * (0.05 * d)
        # the kernel's radius 3 * int(sigma) depends on the draw: taps up to the largest
        # possible radius, weighted zero beyond it (the same sums as Keras' smaller kernel)
        rmax = 3 * (int(min(h, w) * 0.05 * max(float(self.scale[1]), 0.0)) + 1)
        taps = _const(x._device, np.arange(-rmax, rmax + 1, dtype=dt))
        radius = 3.0 * floor(sigma)
        k = where(_abs(taps) <= radius, exp(-0.5 * (taps / sigma) ** 2), 0.0)
        k = k / reduce_sum(k)
        field = expand_dims(cast(transformation["noise"], dt) * sigma, -1)   # [n, h, w, 1]
        field = _depthwise_same(field, reshape(k, [-1, 1]))
        field = squeeze(_depthwise_same(field, reshape(k, [1, -1])), -1)
        gy = _const(x._device, np.arange(h, dtype=dt).reshape(1, h, 1))
        gx = _const(x._device, np.arange(w, dtype=dt).reshape(1, 1, w))
        shift = alpha * field
        out = _map_coordinates(x, gy + shift, gx + shift, _INTERPOLATIONS.index(interpolation),
                               self.fill_mode, self.fill_value)
        out = _from_nhwc(out, self.data_format)
        out = where(_col(transformation["apply_transform"]), out, cast(images, dt))
        out = clip_by_value(out, float(self.value_range[0]), float(self.value_range[1]))
        return cast(out, self._compute_dtype)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        raise NotImplementedError("RandomElasticTransform does not transform bounding boxes "
                                  "(as Keras)")

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "interpolation": self.interpolation, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "value_range": self.value_range,
                "seed": self.seed}


# --- mixing -----------------------------------------------------------------------------------

def _take(x, perm):
    return gather(x, cast(perm, np.int32), axis=0)


def _blend(x, transformation, w):
    """``w x + (1 - w) x[perm]`` (``w`` cast to ``x``'s dtype), as Keras' CutMix / MixUp."""
    w = cast(w, x._value.dtype)
    return w * x + (1.0 - w) * _take(x, transformation["permutation_order"])


def _mix_labels(labels, transformation):
    """CutMix / MixUp labels: blended by the mix weights (integer labels as floats)."""
    w = reshape(transformation["mix_weight"], [-1, 1])
    if not _is_float(labels):
        labels = cast(labels, w._value.dtype)
    return _blend(labels, transformation, w)


class CutMix(_ImageAugmentation):
    """Paste a random rectangle of another image of the batch into each image, and mix the
    labels by the areas, as Keras' ``CutMix``: a Beta(a, a) weight per image (``a`` drawn
    once per call from ``factor`` plus 1e-6) sets the rectangle's sides to ``sqrt(1 - w)``
    times the image's; the other images come from a random permutation. Batches only (one
    image passes through); no bounding boxes."""

    def __init__(self, factor=1.0, seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.factor = _factor(factor, (0, 1), "CutMix")
        self.seed = seed

    _bounds = RandomErasing._bounds
    _mask = RandomErasing._mask

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        if x._value.ndim == 3:
            return None
        n = x._value.shape[0]
        h, w = self._hw(x)
        gen = self._generator(x._device, seed)
        alpha = gen.uniform([], minval=self.factor[0], maxval=self.factor[1]) + 1e-6
        weight = _beta(gen, [n], alpha, alpha)
        ratio = sqrt(1.0 - weight)
        x0, x1 = self._bounds(x, n, w, ratio, gen)
        y0, y1 = self._bounds(x, n, h, ratio, gen)
        mix = 1.0 - _col(x1 - x0) * _col(y1 - y0) / float(w * h)
        return {"permutation_order": cast(gen.permutation(n), np.int32),
                "batch_masks": self._mask(x, x0, x1, y0, y1), "mix_weight": mix}

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        if training and transformation is not None:
            images = cast(images, dt)
            images = where(transformation["batch_masks"],
                           _take(images, transformation["permutation_order"]), images)
        return cast(images, dt)

    def transform_labels(self, labels, transformation=None, training=True):
        if not training or transformation is None:
            return labels
        return _mix_labels(labels, transformation)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        raise NotImplementedError("CutMix does not transform bounding boxes (as Keras)")

    def transform_segmentation_masks(self, segmentation_masks, transformation=None,
                                     training=True):
        return self.transform_images(segmentation_masks, transformation, training)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "seed": self.seed}


class MixUp(_ImageAugmentation):
    """Blend each image (and its labels) with another of the batch, as Keras' ``MixUp``:
    ``w x + (1 - w) x[perm]`` with ``w`` drawn per image from Beta(alpha, alpha) and
    ``perm`` a random permutation. Bounding boxes of the partner image are appended."""

    def __init__(self, alpha=0.2, data_format=None, seed=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.alpha = alpha
        self.seed = seed

    def get_random_transformation(self, data, training=True, seed=None):
        x = self._images_of(data)
        n = self._batch(x)
        gen = self._generator(x._device, seed)
        perm = gen.permutation(n)
        return {"mix_weight": _beta(gen, [n], float(self.alpha), float(self.alpha)),
                "permutation_order": perm}

    def transform_images(self, images, transformation=None, training=True):
        if not training:
            return images
        return _blend(cast(images, self._compute_dtype), transformation,
                      _col(transformation["mix_weight"]))

    def transform_labels(self, labels, transformation=None, training=True):
        if not training:
            return labels
        return _mix_labels(labels, transformation)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        if not training:
            return bounding_boxes
        perm = transformation["permutation_order"]
        boxes, labels = bounding_boxes["boxes"], bounding_boxes["labels"]
        return {"boxes": concat([boxes, _take(boxes, perm)], 1),
                "labels": concat([labels, _take(labels, perm)], 1)}

    def transform_segmentation_masks(self, segmentation_masks, transformation=None,
                                     training=True):
        if not training:
            return segmentation_masks
        m = segmentation_masks
        if not _is_float(m):
            m = cast(m, np.float32)
        return _blend(m, transformation, _col(transformation["mix_weight"]))

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha, "seed": self.seed}


# --- policies ---------------------------------------------------------------------------------

_AUGMIX_ALL = ["random_shear", "random_translation", "random_rotation", "random_posterization",
               "solarization", "auto_contrast", "equalization", "random_brightness",
               "random_color_degeneration", "random_contrast", "random_sharpness"]
_RANDAUGMENT = ["random_shear", "random_translation", "random_rotation", "random_brightness",
                "random_color_degeneration", "random_contrast", "random_sharpness",
                "random_posterization", "solarization", "auto_contrast", "equalization"]


def _policy_layers(owner, value_range, interpolation, seed, data_format, all_ops, dtype):
    """The sub-layers of Keras' ``AugMix`` / ``RandAugment`` (attributes of ``owner``)."""
    f = owner.factor
    kw = {"seed": seed, "dtype": dtype}
    owner.random_shear = RandomShear(x_factor=f, y_factor=f, interpolation=interpolation,
                                     data_format=data_format, **kw)
    owner.random_translation = RandomTranslation(height_factor=f, width_factor=f,
                                                 interpolation=interpolation,
                                                 data_format=data_format, **kw)
    owner.random_rotation = RandomRotation(factor=f, interpolation=interpolation,
                                           data_format=data_format, **kw)
    owner.solarization = Solarization(addition_factor=f, threshold_factor=f,
                                      value_range=value_range, data_format=data_format, **kw)
    owner.random_posterization = RandomPosterization(
        factor=max(1, int(8 * f[1])), value_range=value_range, data_format=data_format, **kw)
    owner.auto_contrast = AutoContrast(value_range=value_range, data_format=data_format,
                                       dtype=dtype)
    owner.equalization = Equalization(value_range=value_range, data_format=data_format,
                                      dtype=dtype)
    if all_ops:
        owner.random_brightness = RandomBrightness(factor=f, value_range=value_range,
                                                   data_format=data_format, **kw)
        owner.random_color_degeneration = RandomColorDegeneration(
            factor=f, value_range=value_range, data_format=data_format, **kw)
        owner.random_contrast = RandomContrast(factor=f, value_range=value_range,
                                               data_format=data_format, **kw)
        owner.random_sharpness = RandomSharpness(factor=f, value_range=value_range,
                                                 data_format=data_format, **kw)


class AugMix(_ImageAugmentation):
    """AugMix (Hendrycks et al.), as Keras' ``AugMix``: ``num_chains`` chains of up to
    ``chain_depth`` operations (each step one of the shear, translation, rotation,
    posterization, solarization, auto-contrast, equalization layers, plus brightness,
    colour degeneration, contrast and sharpness with ``all_ops``, or none; chosen on the
    host), the chains mixed with Dirichlet(alpha) weights and the result with the image by
    a Beta(alpha, alpha) weight, clipped to ``value_range``. ``factor`` (within ``[0, 1]``)
    sets the operations' strength."""

    def __init__(self, value_range=(0, 255), num_chains=3, chain_depth=3, factor=0.3,
                 alpha=1.0, all_ops=True, interpolation="bilinear", seed=None,
                 data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.value_range = value_range
        self.num_chains = num_chains
        self.chain_depth = chain_depth
        self.factor = _factor(factor, (0, 1), "AugMix")
        self.alpha = alpha
        self.all_ops = all_ops
        self.interpolation = interpolation
        self.seed = seed
        self._augment_layers = list(_AUGMIX_ALL if all_ops else _AUGMIX_ALL[:7])
        _policy_layers(self, value_range, interpolation, seed, data_format, all_ops,
                       kwargs.get("dtype"))

    _UNTRACKED = _ImageAugmentation._UNTRACKED | {"_augment_layers", "_seed_words", "_calls"}

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        gen = self._generator(x._device, seed)
        g = _gamma(gen, [int(self.num_chains)], float(self.alpha))
        weights = g / reduce_sum(g, axis=-1, keepdims=True)
        sample = _beta(gen, [], float(self.alpha), float(self.alpha))
        rng = self._host_rng()
        names = self._augment_layers + [None]
        chains = []
        for _ in range(int(self.num_chains)):
            steps = []
            for _ in range(int(self.chain_depth)):
                name = names[int(rng.integers(0, len(names)))]
                if name is not None:
                    steps.append({"layer_name": name, "transformation": _draw_with(
                        getattr(self, name), self, data, gen)})
            chains.append(steps)
        return {"chain_mixing_weights": weights, "weight_sample": sample,
                "chain_transforms": chains}

    def _mix(self, x, transformation, apply):
        dt = x._value.dtype
        weights = cast(transformation["chain_mixing_weights"], dt)
        sample = cast(transformation["weight_sample"], dt)
        aug = zeros_like(x)
        for i, chain in enumerate(transformation["chain_transforms"]):
            y = x
            for step in chain:
                y = apply(getattr(self, step["layer_name"]), y, step["transformation"])
            aug = aug + y * weights[i]
        return sample * x + (1.0 - sample) * aug

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        x = cast(images, dt)
        if training:
            x = self._mix(x, transformation, _apply_with)
            x = clip_by_value(x, float(self.value_range[0]), float(self.value_range[1]))
        return cast(x, dt)

    def transform_segmentation_masks(self, segmentation_masks, transformation=None,
                                     training=True):
        if not training:
            return segmentation_masks
        m = segmentation_masks
        if not _is_float(m):
            m = cast(m, self._compute_dtype)
        return self._mix(m, transformation, _apply_masks_with)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "num_chains": self.num_chains, "chain_depth": self.chain_depth,
                "factor": self.factor, "alpha": self.alpha, "all_ops": self.all_ops,
                "interpolation": self.interpolation, "seed": self.seed}


class RandAugment(_ImageAugmentation):
    """RandAugment (Cubuk et al.), as Keras' ``RandAugment``: ``num_ops`` operations, each
    one of eleven (shear, translation, rotation, brightness, colour degeneration, contrast,
    sharpness, posterization, solarization, auto-contrast, equalization; of strength
    ``factor``) chosen once per call for the whole batch. The choice is made on the host
    (the transformation's ``"layer_idxes"``), and only the chosen operations draw."""

    _AUGMENT_LAYERS = list(_RANDAUGMENT)

    def __init__(self, value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear",
                 seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.value_range = value_range
        self.num_ops = num_ops
        self.factor = _factor(factor, (0, 1), "RandAugment")
        self.interpolation = interpolation
        self.seed = seed
        _policy_layers(self, value_range, interpolation, seed, data_format, True,
                       kwargs.get("dtype"))

    _UNTRACKED = _ImageAugmentation._UNTRACKED | {"_seed_words", "_calls"}

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        x = self._images_of(data)
        gen = self._generator(x._device, seed)
        idxes = [int(i) for i in self._host_rng().integers(0, len(self._AUGMENT_LAYERS),
                                                           int(self.num_ops))]
        transforms = {}
        for i in sorted(set(idxes)):
            name = self._AUGMENT_LAYERS[i]
            transforms[name] = _draw_with(getattr(self, name), self, data, gen)
        return {"transforms": transforms, "layer_idxes": idxes}

    def _chosen(self, transformation):
        idxes = transformation["layer_idxes"]
        if isinstance(idxes, Tensor):
            idxes = idxes.numpy()
        return [self._AUGMENT_LAYERS[int(i)] for i in np.asarray(idxes).reshape(-1)]

    def transform_images(self, images, transformation=None, training=True):
        dt = self._compute_dtype
        x = cast(images, dt)
        if training:
            for name in self._chosen(transformation)[:int(self.num_ops)]:
                x = _apply_with(getattr(self, name), x, transformation["transforms"][name])
        return cast(x, dt)

    def transform_segmentation_masks(self, segmentation_masks, transformation=None,
                                     training=True):
        if not training:
            return segmentation_masks
        m = segmentation_masks
        for name in self._chosen(transformation)[:int(self.num_ops)]:
            m = _apply_masks_with(getattr(self, name), m, transformation["transforms"][name])
        return m

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        raise NotImplementedError("RandAugment: bounding boxes are not supported (its "
                                  "translation and rotation layers do not transform them)")

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "num_ops": self.num_ops, "factor": self.factor,
                "interpolation": self.interpolation, "seed": self.seed}


# --- boxes and pipelines ----------------------------------------------------------------------

class MaxNumBoundingBoxes(_ImageAugmentation):
    """Cut or pad (with ``fill_value``) the boxes and box labels of a batch to
    ``max_number`` per image, as Keras' ``MaxNumBoundingBoxes``; images pass through."""

    def __init__(self, max_number, fill_value=-1, **kwargs):
        super().__init__(**kwargs)
        self.max_number = int(max_number)
        self.fill_value = int(fill_value)

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        boxes, labels = bounding_boxes["boxes"], bounding_boxes["labels"]
        k = self.max_number
        extra = max(k - boxes._value.shape[1], 0)
        boxes = pad(boxes[:, :k], [[0, 0], [0, extra], [0, 0]],
                    constant_values=self.fill_value)
        labels = pad(labels[:, :k], [[0, 0], [0, extra]], constant_values=self.fill_value)
        out = dict(bounding_boxes)
        out["boxes"], out["labels"] = boxes, labels
        return out

    def get_config(self):
        return {**super().get_config(), "max_number": self.max_number}


class Pipeline(Layer):
    """Layers applied in turn, as Keras' ``Pipeline`` (meant for preprocessing layers,
    also in a ``gt.data`` pipeline): each gets the previous one's output and the call's
    ``training``."""

    def __init__(self, layers, name=None):
        super().__init__(name=name)
        self._pipeline_layers = layers

    @property
    def layers(self):
        return self._pipeline_layers

    def call(self, inputs, training=True):
        for layer in self._pipeline_layers:
            inputs = layer(inputs, training=training)
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    @classmethod
    def from_config(cls, config):
        from .saving import deserialize_layer
        layers = config.get("layers")
        if not isinstance(layers, (list, tuple)):
            raise ValueError(f"`Pipeline` config must contain a `layers` key mapping to a list "
                             f"of serialized layers. Received config with layers={layers}.")
        config = {**config, "layers": [deserialize_layer(x) for x in layers]}
        return cls(**config)

    def get_config(self):
        from .saving import serialize_layer
        return {"layers": [serialize_layer(layer) for layer in self._pipeline_layers],
                "name": self.name}
