"""``gt.image``: resizing and flipping images (``[batch, height, width, channels]`` or one
``[height, width, channels]`` image), as ``tf.image``.

``resize`` follows TensorFlow 2: bilinear and nearest sample at pixel centres
(``half_pixel_centers``); with ``antialias=True`` a downscaling bilinear resize averages
with a triangle filter widened by the scale, as TF's ``scale_and_translate``. A bilinear
resize is two products with interpolation matrices, so it runs on any device and is
differentiable with respect to the images.
"""
from __future__ import annotations

import numpy as np

from .ops._util import as_tensor
from .tensor import Tensor

__all__ = ["resize", "ResizeMethod", "flip_left_right", "flip_up_down",
           "random_flip_left_right", "random_flip_up_down"]


class ResizeMethod:
    """The method names ``resize`` takes (those gradtape implements)."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"


def _images(images, opname):
    x = as_tensor(images, opname)
    nd = x._value.ndim
    if nd not in (3, 4):
        raise ValueError(f"{opname}: images must be [batch, height, width, channels] or "
                         f"[height, width, channels], got shape {tuple(x._value.shape)}")
    return x, nd == 3


def _size(size, opname):
    if isinstance(size, Tensor):
        size = size.numpy().tolist()
    size = [int(s) for s in size]
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(f"{opname}: size must be two positive ints [height, width], got {size}")
    return size


def _bilinear_weights(n_in, n_out):
    """[n_out, n_in]: TF's resize_bilinear with half-pixel centres."""
    scale = n_in / n_out
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = (o + 0.5) * scale - 0.5
        base = np.floor(src)
        lower = min(max(int(base), 0), n_in - 1)
        upper = min(max(int(np.ceil(src)), 0), n_in - 1)
        frac = src - base
        w[o, lower] += 1.0 - frac
        w[o, upper] += frac
    return w


def _triangle_weights(n_in, n_out):
    """[n_out, n_in]: TF's scale_and_translate with the triangle kernel (antialiased)."""
    inv = n_in / n_out
    width = max(inv, 1.0)
    j = np.arange(n_in) + 0.5
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        row = np.clip(1.0 - np.abs(j - (o + 0.5) * inv) / width, 0.0, None)
        total = row.sum()
        if total > 0:
            w[o] = row / total
    return w


def _nearest_index(n_in, n_out):
    scale = n_in / n_out
    return np.minimum(np.floor((np.arange(n_out) + 0.5) * scale).astype(np.int64), n_in - 1)


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None) -> Tensor:
    """``images`` resized to ``size`` ``[height, width]``.

    ``method``: ``"bilinear"`` (the result is float32, or float64 for float64 images, as
    TF) or ``"nearest"`` (the images' dtype). ``preserve_aspect_ratio``: the largest size
    within ``size`` with the images' aspect ratio. Other TF methods (bicubic, area, lanczos
    ...) are not implemented and raise ValueError.
    """
    from .ops.core import cast
    from .ops.linalg import einsum
    from .ops.shape import expand_dims, gather, squeeze
    x, single = _images(images, "image.resize")
    h_out, w_out = _size(size, "image.resize")
    method = str(method).lower()
    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR):
        raise ValueError(f"image.resize: method {method!r} is not implemented; use "
                         "'bilinear' or 'nearest'")
    if single:
        x = expand_dims(x, 0)
    _, h_in, w_in, _ = x._value.shape
    if preserve_aspect_ratio:
        factor = min(h_out / h_in, w_out / w_in)
        h_out, w_out = max(1, int(round(h_in * factor))), max(1, int(round(w_in * factor)))
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        dev = x._device
        y = x
        if h_out != h_in:
            y = gather(y, Tensor(dev.asarray(_nearest_index(h_in, h_out)), dev), axis=1)
        if w_out != w_in:
            y = gather(y, Tensor(dev.asarray(_nearest_index(w_in, w_out)), dev), axis=2)
    else:
        if x._value.dtype != np.float64:
            x = cast(x, np.float32)
        dt = x._value.dtype
        weights = _triangle_weights if antialias else _bilinear_weights
        dev = x._device
        y = x
        if h_out != h_in:
            wy = Tensor(dev.asarray(weights(h_in, h_out).astype(dt)), dev)
            y = einsum("hH,nHWc->nhWc", wy, y)
        if w_out != w_in:
            wx = Tensor(dev.asarray(weights(w_in, w_out).astype(dt)), dev)
            y = einsum("nhWc,wW->nhwc", y, wx)
    return squeeze(y, 0) if single else y


def flip_left_right(image, name=None) -> Tensor:
    """Each image mirrored horizontally (the width axis reversed)."""
    from .ops.shape import reverse
    x, _ = _images(image, "image.flip_left_right")
    return reverse(x, [x._value.ndim - 2])


def flip_up_down(image, name=None) -> Tensor:
    """Each image mirrored vertically (the height axis reversed)."""
    from .ops.shape import reverse
    x, _ = _images(image, "image.flip_up_down")
    return reverse(x, [x._value.ndim - 3])


def _random_flip(image, seed, flip, opname, rng=None):
    from .ops.core import cast
    from .ops.math import where
    from . import random as _random
    from .backend import device_scope
    x, single = _images(image, opname)
    n = 1 if single else x._value.shape[0]
    shape = [n] if not single else []
    with device_scope(x._device):           # drawn where the images are
        draw = rng.uniform(shape) if rng is not None else _random.uniform(shape, seed=seed)
    keep_shape = [n, 1, 1, 1] if not single else []
    mask = cast(draw < 0.5, "bool")
    if keep_shape:
        from .ops.shape import reshape
        mask = reshape(mask, keep_shape)
    return where(mask, flip(x), x)


def random_flip_left_right(image, seed=None) -> Tensor:
    """Each image mirrored horizontally with probability 1/2 (drawn per image, on the
    device)."""
    return _random_flip(image, seed, flip_left_right, "image.random_flip_left_right")


def random_flip_up_down(image, seed=None) -> Tensor:
    """Each image mirrored vertically with probability 1/2 (drawn per image)."""
    return _random_flip(image, seed, flip_up_down, "image.random_flip_up_down")
