"""``gt.image``: image operations on ``[batch, height, width, channels]`` images (or one
``[height, width, channels]`` image), as ``tf.image``.

Everything is built from gradtape's differentiable ops, runs on the images' device and
draws its random numbers there (``gt.random``), so gradients come free, also where
TensorFlow has none (``adjust_hue``, ``adjust_saturation``, ``adjust_contrast``,
``resize`` with ``"area"``). The exceptions: ``non_max_suppression`` reads the boxes and
scores on the host (its output size depends on them).

``resize`` follows TensorFlow 2 (``tf.image.resize``): ``"bilinear"``, ``"nearest"`` and
``"bicubic"`` sample at pixel centres (``half_pixel_centers``; bicubic with Keys' kernel,
``a = -0.5``, its coefficients read from TF's 1024-step table, samples outside the image
dropped and the rest renormalised); ``"area"`` averages the covered input area;
``"lanczos3"``, ``"lanczos5"``, ``"gaussian"`` and ``"mitchellcubic"`` (and bilinear and
bicubic with ``antialias=True``) use TF's ``scale_and_translate`` kernels, widened by the
scale when downscaling with ``antialias``. Each is two products with interpolation matrices
(nearest: two gathers). The result is float32 (``"nearest"``: the images' dtype); float64
images stay float64 (TensorFlow returns float32 for them), which keeps float64 gradient
checks exact.

Colour adjustments convert integer images to float32 in ``[0, 1]`` first and back after,
as TensorFlow (``convert_image_dtype``).
"""
from __future__ import annotations

import math

import numpy as np

from .ops._util import as_tensor
from .tensor import Tensor

__all__ = ["resize", "ResizeMethod", "resize_with_pad", "resize_with_crop_or_pad",
           "central_crop", "crop_to_bounding_box", "pad_to_bounding_box", "crop_and_resize",
           "extract_patches", "flip_left_right", "flip_up_down", "rot90", "transpose",
           "random_flip_left_right", "random_flip_up_down", "stateless_random_flip_left_right",
           "stateless_random_flip_up_down", "random_crop", "stateless_random_crop",
           "convert_image_dtype", "adjust_brightness", "adjust_contrast", "adjust_gamma",
           "adjust_hue", "adjust_saturation", "random_brightness", "random_contrast",
           "random_hue", "random_saturation", "stateless_random_brightness",
           "stateless_random_contrast", "stateless_random_hue",
           "stateless_random_saturation", "rgb_to_grayscale", "grayscale_to_rgb",
           "rgb_to_hsv", "hsv_to_rgb", "rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq",
           "yiq_to_rgb", "per_image_standardization", "image_gradients", "sobel_edges",
           "total_variation", "psnr", "ssim", "ssim_multiscale", "non_max_suppression",
           "non_max_suppression_with_scores"]


class ResizeMethod:
    """The method names ``resize`` takes."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
            "mitchellcubic")


# --- helpers ----------------------------------------------------------------------------------

def _images(images, opname):
    x = as_tensor(images, opname)
    nd = x._value.ndim
    if nd not in (3, 4):
        raise ValueError(f"{opname}: images must be [batch, height, width, channels] or "
                         f"[height, width, channels], got shape {tuple(x._value.shape)}")
    return x, nd == 3


def _at_least_3d(images, opname):
    x = as_tensor(images, opname)
    if x._value.ndim < 3:
        raise ValueError(f"{opname}: images must have at least 3 dimensions [..., height, "
                         f"width, channels], got shape {tuple(x._value.shape)}")
    return x


def _batched(images, opname):
    """``(4-D tensor, was_single)``."""
    from .ops.shape import expand_dims
    x, single = _images(images, opname)
    return (expand_dims(x, 0) if single else x), single


def _unbatch(y, single):
    from .ops.shape import squeeze
    return squeeze(y, 0) if single else y


def _const(dev, arr):
    """A device tensor holding the host array ``arr``."""
    return Tensor(dev.asarray(arr), dev)


def _size(size, opname):
    if isinstance(size, Tensor):
        size = size.numpy().tolist()
    size = [int(s) for s in size]
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(f"{opname}: size must be two positive ints [height, width], got {size}")
    return size


def _int(value, what, opname):
    if isinstance(value, Tensor):
        value = value.numpy()
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{opname}: {what} must be an int, got {value!r}") from None
    if out != value:
        raise TypeError(f"{opname}: {what} must be an int, got {value!r}")
    return out


def _float_image(x):
    """TF's colour ops: float16/float32 images as they are, others through
    ``convert_image_dtype(x, float32)``."""
    if x._value.dtype in (np.float16, np.float32):
        return x
    return convert_image_dtype(x, np.float32)


def _scalar_param(value, dt, dev):
    """A scalar factor for an image op: a Python number as is; a tensor cast to ``dt`` on
    the images' device."""
    if isinstance(value, Tensor):
        from .ops.core import cast
        if value._device is not dev:
            from .ops.core import copy_to_device
            value = copy_to_device(value, dev)
        return cast(value, dt)
    return float(value)


# --- resize -----------------------------------------------------------------------------------

_F32 = np.float32


def _bilinear_weights(n_in, n_out):
    """[n_out, n_in]: TF's ResizeBilinear with half-pixel centres (float32 positions)."""
    scale = _F32(n_in) / _F32(n_out)
    src = (np.arange(n_out, dtype=_F32) + _F32(0.5)) * scale - _F32(0.5)
    base = np.floor(src)
    lower = np.clip(base.astype(np.int64), 0, n_in - 1)
    upper = np.clip(np.ceil(src).astype(np.int64), 0, n_in - 1)
    frac = (src - base).astype(np.float64)
    w = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(w, (rows, lower), 1.0 - frac)
    np.add.at(w, (rows, upper), frac)
    return w


def _nearest_index(n_in, n_out):
    """TF's ResizeNearestNeighbor with half-pixel centres (float32 positions)."""
    scale = _F32(n_in) / _F32(n_out)
    src = np.floor((np.arange(n_out, dtype=_F32) + _F32(0.5)) * scale)
    return np.clip(src.astype(np.int64), 0, n_in - 1)


def _keys_table():
    """TF's bicubic coefficient table (1024 steps, Keys' a = -0.5), float32."""
    a = _F32(-0.5)
    x = np.arange(1025, dtype=_F32) / _F32(1024)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + _F32(1)
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return near.astype(np.float64), far.astype(np.float64)


def _bicubic_weights(n_in, n_out):
    """[n_out, n_in]: TF's ResizeBicubic with half-pixel centres (out-of-image taps dropped,
    the rest renormalised)."""
    near, far = _keys_table()
    scale = _F32(n_in) / _F32(n_out)
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = (_F32(o) + _F32(0.5)) * scale - _F32(0.5)
        base = int(np.floor(src))
        offset = int(np.rint(_F32(src - _F32(base)) * _F32(1024)))
        taps = ((base - 1, far[offset]), (base, near[offset]), (base + 1, near[1024 - offset]),
                (base + 2, far[1024 - offset]))
        row = np.zeros(n_in)
        for i, c in taps:
            if 0 <= i < n_in:
                row[i] += c
        total = row.sum()
        if abs(total) >= 1000.0 * np.finfo(np.float32).tiny:
            row /= total
        w[o] = row
    return w


def _area_weights(n_in, n_out):
    """[n_out, n_in]: TF's ResizeArea (the mean over each output pixel's input area)."""
    scale = _F32(n_in) / _F32(n_out)
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        lo, hi = float(_F32(o) * scale), float(_F32(o + 1) * scale)
        for i in range(int(math.floor(lo)), int(math.ceil(hi))):
            part = min(i + 1.0, hi) - max(float(i), lo)
            w[o, min(i, n_in - 1)] += part
    return w / float(scale)


def _lanczos(radius):
    def k(x):
        x = np.abs(x)
        safe = np.where(x <= 1e-3, 1.0, x)
        out = radius * np.sin(np.pi * safe) * np.sin(np.pi * safe / radius) / (np.pi ** 2 *
                                                                                safe ** 2)
        return np.where(x > radius, 0.0, np.where(x <= 1e-3, 1.0, out))
    return k, float(radius)


def _gaussian_kernel(x):
    x = np.abs(x)
    sigma = 0.5
    return np.where(x >= 1.5, 0.0, np.exp(-x * x / (2.0 * sigma * sigma)))


def _triangle_kernel(x):
    return np.clip(1.0 - np.abs(x), 0.0, None)


def _keys_kernel(x):
    x = np.abs(x)
    return np.where(x >= 2.0, 0.0, np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0,
                                            ((1.5 * x - 2.5) * x) * x + 1.0))


def _mitchell_kernel(x):
    x = np.abs(x)
    return np.where(x >= 2.0, 0.0,
                    np.where(x >= 1.0,
                             (((-7.0 / 18.0) * x + 2.0) * x - 10.0 / 3.0) * x + 16.0 / 9.0,
                             (((7.0 / 6.0) * x - 2.0) * x) * x + 8.0 / 9.0))


_KERNELS = {"triangle": (_triangle_kernel, 1.0), "keyscubic": (_keys_kernel, 2.0),
            "lanczos3": _lanczos(3), "lanczos5": _lanczos(5), "gaussian": (_gaussian_kernel, 1.5),
            "mitchellcubic": (_mitchell_kernel, 2.0)}


def _scale_translate_weights(n_in, n_out, kernel, antialias):
    """[n_out, n_in]: TF's ScaleAndTranslate (no translation) with ``kernel``, its positions
    in float32 as TF's (a tap at the kernel's edge is in or out as there)."""
    fn, radius = _KERNELS[kernel]
    f = _F32
    inv_scale = f(1.0 / float(f(n_out) / f(n_in)))
    kscale = max(inv_scale, f(1.0)) if antialias else f(1.0)
    one_over = f(1.0) / kscale
    reach = f(f(radius) * kscale)
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        sample = f(f(o) + f(0.5)) * inv_scale
        start = int(math.ceil(f(f(sample - reach) - f(0.5))))
        end = int(math.floor(f(f(sample + reach) - f(0.5))))
        start = min(max(start, 0), n_in - 1)
        end = min(max(end, 0), n_in - 1) + 1
        pos = (np.arange(start, end, dtype=f) + f(0.5) - sample) * one_over
        row = fn(pos.astype(np.float64))
        total = row.sum()
        if abs(total) >= 1000.0 * np.finfo(np.float32).tiny:
            row = row / total
        w[o, start:end] = row
    return w


def _resize_weights(method, antialias, n_in, n_out):
    if method == "bilinear":
        return (_scale_translate_weights(n_in, n_out, "triangle", True) if antialias
                else _bilinear_weights(n_in, n_out))
    if method == "bicubic":
        return (_scale_translate_weights(n_in, n_out, "keyscubic", True) if antialias
                else _bicubic_weights(n_in, n_out))
    if method == "area":
        return _area_weights(n_in, n_out)
    return _scale_translate_weights(n_in, n_out, method, antialias)


def _aspect_size(h_in, w_in, h_out, w_out):
    """TF's ``preserve_aspect_ratio`` size (float32 arithmetic, rounded half to even)."""
    factor = min(_F32(h_out) / _F32(h_in), _F32(w_out) / _F32(w_in))
    return (max(1, int(np.round(_F32(factor * _F32(h_in))))),
            max(1, int(np.round(_F32(factor * _F32(w_in))))))


def _resize4(x, h_out, w_out, method, antialias):
    """4-D ``x`` resized (no checks)."""
    from .ops.core import cast
    from .ops.linalg import einsum
    from .ops.shape import gather
    dev = x._device
    _, h_in, w_in, _ = x._value.shape
    if method == "nearest":
        y = x
        if h_out != h_in:
            y = gather(y, _const(dev, _nearest_index(h_in, h_out)), axis=1)
        if w_out != w_in:
            y = gather(y, _const(dev, _nearest_index(w_in, w_out)), axis=2)
        return y
    if x._value.dtype != np.float64:
        x = cast(x, np.float32)
    dt = x._value.dtype
    exact = method in ("bilinear", "bicubic", "area") and not antialias
    y = x
    if h_out != h_in or not exact:
        wy = _const(dev, _resize_weights(method, antialias, h_in, h_out).astype(dt))
        y = einsum("hH,nHWc->nhWc", wy, y)
    if w_out != w_in or not exact:
        wx = _const(dev, _resize_weights(method, antialias, w_in, w_out).astype(dt))
        y = einsum("nhWc,wW->nhwc", y, wx)
    return y


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None) -> Tensor:
    """``images`` resized to ``size`` ``[height, width]`` with ``method`` (a
    :class:`ResizeMethod` name; see the module docstring for each method's definition).

    The result is float32 (float64 for float64 images), or the images' dtype for
    ``"nearest"``. ``preserve_aspect_ratio``: the largest size within ``size`` with the
    images' aspect ratio. ``antialias``: when downscaling, the kernel is widened by the
    scale (bilinear, bicubic and the ``scale_and_translate`` kernels; ignored by
    ``"nearest"`` and ``"area"``).
    """
    x, single = _batched(images, "image.resize")
    h_out, w_out = _size(size, "image.resize")
    method = str(method).lower()
    if method not in _METHODS:
        raise ValueError(f"image.resize: method {method!r} is not one of {list(_METHODS)}")
    _, h_in, w_in, _ = x._value.shape
    if preserve_aspect_ratio:
        h_out, w_out = _aspect_size(h_in, w_in, h_out, w_out)
    return _unbatch(_resize4(x, h_out, w_out, method, bool(antialias)), single)


def _target_size(target_height, target_width, opname):
    th = _int(target_height, "target_height", opname)
    tw = _int(target_width, "target_width", opname)
    if th <= 0 or tw <= 0:
        raise ValueError(f"{opname}: target_height and target_width must be > 0, got "
                         f"{th} and {tw}")
    return th, tw


def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR,
                    antialias=False) -> Tensor:
    """``image`` resized to fit ``[target_height, target_width]`` keeping its aspect ratio,
    then padded with zeros to that size (centred, the odd pixel at the bottom/right)."""
    opname = "image.resize_with_pad"
    x, single = _batched(image, opname)
    th, tw = _target_size(target_height, target_width, opname)
    _, h, w, _ = x._value.shape
    ratio = max(_F32(w) / _F32(tw), _F32(h) / _F32(th))
    rh, rw = _F32(_F32(h) / ratio), _F32(_F32(w) / ratio)
    new_h, new_w = int(np.floor(rh)), int(np.floor(rw))
    ph = max(0, int(np.floor(_F32((_F32(th) - rh) / _F32(2)))))
    pw = max(0, int(np.floor(_F32((_F32(tw) - rw) / _F32(2)))))
    method = str(method).lower()
    if method not in _METHODS:
        raise ValueError(f"{opname}: method {method!r} is not one of {list(_METHODS)}")
    resized = _resize4(x, new_h, new_w, method, bool(antialias))
    return _unbatch(_pad4(resized, ph, pw, th, tw, opname), single)


def _pad4(x, top, left, th, tw, opname):
    from .ops.shape import pad
    _, h, w, _ = x._value.shape
    if top < 0 or left < 0:
        raise ValueError(f"{opname}: offset_height and offset_width must be >= 0, got {top} "
                         f"and {left}")
    bottom, right = th - top - h, tw - left - w
    if bottom < 0:
        raise ValueError(f"{opname}: height must be <= target - offset (height {h}, target "
                         f"{th}, offset {top})")
    if right < 0:
        raise ValueError(f"{opname}: width must be <= target - offset (width {w}, target "
                         f"{tw}, offset {left})")
    if (top, bottom, left, right) == (0, 0, 0, 0):
        return x
    return pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]])


def _crop4(x, top, left, th, tw, opname):
    _, h, w, _ = x._value.shape
    if top < 0 or left < 0:
        raise ValueError(f"{opname}: offset_height and offset_width must be >= 0, got {top} "
                         f"and {left}")
    if th <= 0 or tw <= 0:
        raise ValueError(f"{opname}: target_height and target_width must be > 0, got {th} "
                         f"and {tw}")
    if h < th + top:
        raise ValueError(f"{opname}: height must be >= target + offset (height {h}, target "
                         f"{th}, offset {top})")
    if w < tw + left:
        raise ValueError(f"{opname}: width must be >= target + offset (width {w}, target "
                         f"{tw}, offset {left})")
    if (top, left, th, tw) == (0, 0, h, w):
        return x
    return x[:, top:top + th, left:left + tw, :]


def pad_to_bounding_box(image, offset_height, offset_width, target_height,
                        target_width) -> Tensor:
    """``image`` padded with zeros to ``[target_height, target_width]``, placed at
    ``(offset_height, offset_width)``."""
    opname = "image.pad_to_bounding_box"
    x, single = _batched(image, opname)
    args = [_int(v, what, opname) for v, what in
            ((offset_height, "offset_height"), (offset_width, "offset_width"),
             (target_height, "target_height"), (target_width, "target_width"))]
    return _unbatch(_pad4(x, *args, opname), single)


def crop_to_bounding_box(image, offset_height, offset_width, target_height,
                         target_width) -> Tensor:
    """The ``[target_height, target_width]`` window of ``image`` at ``(offset_height,
    offset_width)``."""
    opname = "image.crop_to_bounding_box"
    x, single = _batched(image, opname)
    args = [_int(v, what, opname) for v, what in
            ((offset_height, "offset_height"), (offset_width, "offset_width"),
             (target_height, "target_height"), (target_width, "target_width"))]
    return _unbatch(_crop4(x, *args, opname), single)


def resize_with_crop_or_pad(image, target_height, target_width) -> Tensor:
    """``image`` centrally cropped and/or zero padded to ``[target_height, target_width]``
    (the odd pixel cropped from, or padded at, the bottom/right)."""
    opname = "image.resize_with_crop_or_pad"
    x, single = _batched(image, opname)
    th, tw = _target_size(target_height, target_width, opname)
    _, h, w, _ = x._value.shape
    dw, dh = tw - w, th - h
    cropped = _crop4(x, max(-dh // 2, 0), max(-dw // 2, 0), min(th, h), min(tw, w), opname)
    return _unbatch(_pad4(cropped, max(dh // 2, 0), max(dw // 2, 0), th, tw, opname), single)


def central_crop(image, central_fraction) -> Tensor:
    """The central ``central_fraction`` (in ``(0, 1]``) of each image's height and width."""
    opname = "image.central_crop"
    x, single = _batched(image, opname)
    if isinstance(central_fraction, Tensor):
        central_fraction = float(central_fraction.numpy())
    f = float(central_fraction)
    if f <= 0.0 or f > 1.0:
        raise ValueError(f"{opname}: central_fraction must be within (0, 1], got {f}")
    if f == 1.0:
        return image if isinstance(image, Tensor) else _unbatch(x, single)
    _, h, w, _ = x._value.shape
    top = int((float(h) - float(h) * f) / 2)
    left = int((float(w) - float(w) * f) / 2)
    return _unbatch(x[:, top:h - top, left:w - left, :], single)


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear",
                    extrapolation_value=0.0, name=None) -> Tensor:
    """Crops of ``image`` ``[batch, height, width, channels]`` resized to ``crop_size``:
    ``boxes`` ``[num_boxes, 4]`` normalised ``(y1, x1, y2, x2)`` (``y = y1 * (height - 1)``
    and so on; flipped boxes flip the crop), ``box_indices`` ``[num_boxes]`` the image of
    each. Samples outside the image are ``extrapolation_value``. ``method``: ``"bilinear"``
    or ``"nearest"``. Float32 ``[num_boxes, crop_height, crop_width, channels]``,
    differentiable with respect to the image and the boxes (bilinear), as TF."""
    from .ops.core import cast
    from .ops.math import ceil, floor, logical_and, where, clip_by_value
    from .ops.shape import gather, reshape
    opname = "image.crop_and_resize"
    x = as_tensor(image, opname)
    if x._value.ndim != 4:
        raise ValueError(f"{opname}: image must be [batch, height, width, channels], got "
                         f"shape {tuple(x._value.shape)}")
    dev = x._device
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"{opname}: method must be 'bilinear' or 'nearest', got {method!r}")
    ch, cw = _size(crop_size, opname)
    if x._value.dtype != np.float64:
        x = cast(x, np.float32)
    dt = x._value.dtype
    b = boxes if isinstance(boxes, Tensor) else _const(dev, np.asarray(boxes, dt))
    if b._value.dtype != dt:
        b = cast(b, dt)
    if b._value.ndim != 2 or b._value.shape[1] != 4:
        raise ValueError(f"{opname}: boxes must be [num_boxes, 4], got shape "
                         f"{tuple(b._value.shape)}")
    bi = box_indices if isinstance(box_indices, Tensor) else _const(
        dev, np.asarray(box_indices, np.int32).reshape(-1))
    if tuple(bi._value.shape) != (b._value.shape[0],):
        raise ValueError(f"{opname}: box_indices must be [num_boxes] = [{b._value.shape[0]}], "
                         f"got shape {tuple(bi._value.shape)}")
    _, h, w, _ = x._value.shape
    imgs = gather(x, bi, axis=0)                                   # [nb, h, w, c]
    y1, x1, y2, x2 = b[:, 0:1], b[:, 1:2], b[:, 2:3], b[:, 3:4]

    def coords(lo, hi, n_in, n_out):
        if n_out > 1:
            steps = _const(dev, np.arange(n_out, dtype=dt)[None, :])
            return lo * (n_in - 1) + steps * ((hi - lo) * (n_in - 1) / (n_out - 1))
        return (lo + hi) * (0.5 * (n_in - 1))

    in_y = coords(y1, y2, h, ch)                  # [nb, ch] (or [nb, 1] for one row)
    in_x = coords(x1, x2, w, cw)
    if ch == 1:
        in_y = reshape(in_y, [-1, 1])
    if cw == 1:
        in_x = reshape(in_x, [-1, 1])
    ok_y = logical_and(in_y >= 0, in_y <= h - 1)
    ok_x = logical_and(in_x >= 0, in_x <= w - 1)

    def idx(v, n):
        return cast(clip_by_value(v, 0, n - 1), np.int32)

    def take(iy, ix):
        rows = gather(imgs, iy, axis=1, batch_dims=1)              # [nb, ch, w, c]
        return gather(rows, ix, axis=2, batch_dims=1)              # [nb, ch, cw, c]

    if method == "nearest":
        out = take(idx(floor(in_y + 0.5), h), idx(floor(in_x + 0.5), w))
    else:
        ty, tx = floor(in_y), floor(in_x)
        ly = reshape(in_y - ty, [-1, ch, 1, 1])
        lx = reshape(in_x - tx, [-1, 1, cw, 1])
        top_i, bot_i = idx(ty, h), idx(ceil(in_y), h)
        left_i, right_i = idx(tx, w), idx(ceil(in_x), w)
        tl, tr = take(top_i, left_i), take(top_i, right_i)
        bl, br = take(bot_i, left_i), take(bot_i, right_i)
        top = tl + (tr - tl) * lx
        bottom = bl + (br - bl) * lx
        out = top + (bottom - top) * ly
    ok = logical_and(reshape(ok_y, [-1, ch, 1, 1]), reshape(ok_x, [-1, 1, cw, 1]))
    return where(ok, out, float(extrapolation_value))


def extract_patches(images, sizes, strides, rates, padding, name=None) -> Tensor:
    """Patches of ``images`` ``[batch, height, width, depth]``: ``sizes``, ``strides`` and
    ``rates`` ``[1, rows, cols, 1]``, ``padding`` ``"VALID"`` or ``"SAME"`` (zeros) ->
    ``[batch, out_rows, out_cols, rows * cols * depth]``, each patch flattened row by row
    (depth fastest), as ``tf.image.extract_patches``."""
    from .ops.shape import concat, pad
    opname = "image.extract_patches"
    x = as_tensor(images, opname)
    if x._value.ndim != 4:
        raise ValueError(f"{opname}: images must be [batch, height, width, depth], got "
                         f"shape {tuple(x._value.shape)}")
    quads = []
    for what, v in (("sizes", sizes), ("strides", strides), ("rates", rates)):
        v = [int(t) for t in v]
        if len(v) != 4 or v[0] != 1 or v[3] != 1 or min(v) <= 0:
            raise ValueError(f"{opname}: {what} must be [1, rows, cols, 1] with positive "
                             f"entries, got {v}")
        quads.append(v[1:3])
    (kh, kw), (sh, sw), (rh, rw) = quads
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError(f"{opname}: padding must be 'VALID' or 'SAME', got {padding!r}")
    _, h, w, _ = x._value.shape
    eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1
    if padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
        ph, pw = max((oh - 1) * sh + eh - h, 0), max((ow - 1) * sw + ew - w, 0)
        if ph or pw:
            x = pad(x, [[0, 0], [ph // 2, ph - ph // 2], [pw // 2, pw - pw // 2], [0, 0]])
    else:
        oh, ow = (h - eh) // sh + 1, (w - ew) // sw + 1
    if oh <= 0 or ow <= 0:
        from .ops.core import zeros
        from .backend import device_scope
        with device_scope(x._device):
            return zeros([x._value.shape[0], max(oh, 0), max(ow, 0),
                          kh * kw * x._value.shape[3]], x._value.dtype)
    pieces = [x[:, i * rh:i * rh + (oh - 1) * sh + 1:sh, j * rw:j * rw + (ow - 1) * sw + 1:sw, :]
              for i in range(kh) for j in range(kw)]
    return pieces[0] if len(pieces) == 1 else concat(pieces, axis=3)


# --- flips, rotations, random crops -----------------------------------------------------------

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


def rot90(image, k=1, name=None) -> Tensor:
    """Each image rotated counter-clockwise by ``k`` quarter turns."""
    from .ops.shape import reverse, transpose as _tr
    x, single = _images(image, "image.rot90")
    k = _int(k, "k", "image.rot90") % 4
    hw = [0, 1] if single else [1, 2]
    perm = [1, 0, 2] if single else [0, 2, 1, 3]
    if k == 1:
        return _tr(reverse(x, [hw[1]]), perm)
    if k == 2:
        return reverse(x, hw)
    if k == 3:
        return reverse(_tr(x, perm), [hw[1]])
    return x


def transpose(image, name=None) -> Tensor:
    """Each image with its height and width swapped."""
    from .ops.shape import transpose as _tr
    x, single = _images(image, "image.transpose")
    return _tr(x, [1, 0, 2] if single else [0, 2, 1, 3])


def _random_flip(image, seed, flip, opname, rng=None, draw=None):
    from .ops.core import cast
    from .ops.math import where
    from . import random as _random
    from .backend import device_scope
    x, single = _images(image, opname)
    n = 1 if single else x._value.shape[0]
    shape = [n] if not single else []
    if draw is None:
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


def _stateless_uniform(x, shape, seed, minval=0.0, maxval=1.0, dtype=np.float32):
    from . import random as _random
    from .backend import device_scope
    with device_scope(x._device):
        return _random.stateless_uniform(shape, seed, minval=minval, maxval=maxval,
                                         dtype=dtype)


def _uniform(x, shape, seed, minval=0.0, maxval=1.0, dtype=np.float32):
    from . import random as _random
    from .backend import device_scope
    with device_scope(x._device):
        return _random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=seed)


def stateless_random_flip_left_right(image, seed) -> Tensor:
    """Each image mirrored horizontally with probability 1/2, a deterministic function of
    ``seed`` (a shape [2] integer pair)."""
    x, single = _images(image, "image.stateless_random_flip_left_right")
    draw = _stateless_uniform(x, [] if single else [x._value.shape[0]], seed)
    return _random_flip(x, None, flip_left_right, "image.stateless_random_flip_left_right",
                        draw=draw)


def stateless_random_flip_up_down(image, seed) -> Tensor:
    """Each image mirrored vertically with probability 1/2, a deterministic function of
    ``seed``."""
    x, single = _images(image, "image.stateless_random_flip_up_down")
    draw = _stateless_uniform(x, [] if single else [x._value.shape[0]], seed)
    return _random_flip(x, None, flip_up_down, "image.stateless_random_flip_up_down",
                        draw=draw)


def _random_crop(value, size, draw_fn, opname):
    from .ops.core import cast
    from .ops.math import floor
    from .ops.shape import gather
    x = as_tensor(value, opname)
    if isinstance(size, Tensor):
        size = size.numpy().tolist()
    size = [int(s) for s in size]
    shape = list(x._value.shape)
    if len(size) != len(shape):
        raise ValueError(f"{opname}: size {size} must have one entry per dimension of value "
                         f"(shape {shape})")
    if any(s < 0 or s > d for s, d in zip(size, shape)):
        raise ValueError(f"{opname}: need value.shape >= size, got shape {shape} and size "
                         f"{size}")
    free = [i for i, (s, d) in enumerate(zip(size, shape)) if s < d]
    if not free:
        return x
    dev = x._device
    # one uniform draw per free axis, on the device: offset = floor(u * (limit))
    u = draw_fn(x, [len(free)])
    limits = np.array([shape[i] - size[i] + 1 for i in free])
    offsets = cast(floor(u * _const(dev, limits.astype(np.float32))), np.int32)
    # u * limit can round up to limit itself in float32
    offsets = offsets - cast(offsets >= _const(dev, limits.astype(np.int32)), np.int32)
    y = x
    for k, i in enumerate(free):
        ids = offsets[k] + _const(dev, np.arange(size[i], dtype=np.int32))
        y = gather(y, ids, axis=i)
    return y


def random_crop(value, size, seed=None, name=None) -> Tensor:
    """A random window of shape ``size`` of ``value`` (any rank; one offset per axis,
    uniform over the positions that fit), drawn on ``value``'s device."""
    return _random_crop(value, size, lambda x, shape: _uniform(x, shape, seed),
                        "image.random_crop")


def stateless_random_crop(value, size, seed, name=None) -> Tensor:
    """:func:`random_crop`, a deterministic function of ``seed`` (a shape [2] integer
    pair)."""
    return _random_crop(value, size, lambda x, shape: _stateless_uniform(x, shape, seed),
                        "image.stateless_random_crop")


# --- dtype conversion and colour --------------------------------------------------------------

def _saturate(x, dt):
    """``x`` clamped to ``dt``'s range (in ``x``'s dtype) and cast, as ``tf.saturate_cast``."""
    from .ops.core import cast
    from .ops.math import maximum, minimum
    src = x._value.dtype
    lo_out = np.iinfo(dt).min if dt.kind in "iu" else np.finfo(dt).min
    hi_out = np.iinfo(dt).max if dt.kind in "iu" else np.finfo(dt).max
    lo_in = np.iinfo(src).min if src.kind in "iu" else np.finfo(src).min
    hi_in = np.iinfo(src).max if src.kind in "iu" else np.finfo(src).max
    if lo_in < lo_out:
        lo = np.array(lo_out).astype(src)
        x = maximum(x, lo.item())
    if hi_in > hi_out:
        hi = np.array(hi_out).astype(src)
        if src.kind == "f" and hi.astype(np.float64) > hi_out:
            hi = np.nextafter(hi, np.array(0, src))          # the float just below the max
        x = minimum(x, hi.item())
    return cast(x, dt)


def convert_image_dtype(image, dtype, saturate=False, name=None) -> Tensor:
    """``image`` converted to ``dtype``, rescaling values: floats are in ``[0, 1]``,
    integers in ``[0, MAX]`` of their dtype. Float to integer multiplies by ``MAX + 0.5``
    and truncates (``saturate=True`` clamps first); integer to integer shifts by the ratio of
    the ranges, as ``tf.image.convert_image_dtype``."""
    from .dtypes import np_dtype
    from .ops.core import cast
    from .ops.math import floordiv
    x = as_tensor(image, "image.convert_image_dtype")
    dt = np_dtype(dtype)
    src = x._value.dtype
    ok = ("f", "i", "u")
    if dt.kind not in ok or src.kind not in ok:
        raise AttributeError(f"image.convert_image_dtype: dtypes must be integer or floating, "
                             f"got {src.name} -> {dt.name}")
    if src == dt:
        return x
    if src.kind in "iu" and dt.kind in "iu":
        max_in, max_out = int(np.iinfo(src).max), int(np.iinfo(dt).max)
        if max_in > max_out:
            scaled = floordiv(x, (max_in + 1) // (max_out + 1))
            return _saturate(scaled, dt) if saturate else cast(scaled, dt)
        y = _saturate(x, dt) if saturate else cast(x, dt)
        return y * ((max_out + 1) // (max_in + 1))
    if src.kind == "f" and dt.kind == "f":
        return cast(x, dt)
    if src.kind in "iu":
        return cast(x, dt) * (1.0 / float(np.iinfo(src).max))
    scaled = x * (float(np.iinfo(dt).max) + 0.5)
    return _saturate(scaled, dt) if saturate else cast(scaled, dt)


def adjust_brightness(image, delta) -> Tensor:
    """``image + delta`` (integer images: in ``[0, 1]`` floats, then back, saturating)."""
    x = as_tensor(image, "image.adjust_brightness")
    orig = x._value.dtype
    f = _float_image(x)
    out = f + _scalar_param(delta, f._value.dtype, f._device)
    return convert_image_dtype(out, orig, saturate=True)


def adjust_contrast(images, contrast_factor) -> Tensor:
    """``(x - mean) * contrast_factor + mean`` per image and channel (the mean over height
    and width)."""
    from .ops.reduce import reduce_mean
    x = _at_least_3d(images, "image.adjust_contrast")
    orig = x._value.dtype
    f = _float_image(x)
    mean = reduce_mean(f, axis=[-3, -2], keepdims=True)
    out = (f - mean) * _scalar_param(contrast_factor, f._value.dtype, f._device) + mean
    return convert_image_dtype(out, orig, saturate=True)


def adjust_gamma(image, gamma=1, gain=1) -> Tensor:
    """``gain * image ** gamma`` (integer images in ``[0, 1]`` floats, then back)."""
    x = as_tensor(image, "image.adjust_gamma")
    if not isinstance(gamma, Tensor) and gamma < 0:
        raise ValueError(f"image.adjust_gamma: Gamma should be a non-negative real number, "
                         f"got {gamma}")
    orig = x._value.dtype
    f = _float_image(x)
    dt, dev = f._value.dtype, f._device
    out = _scalar_param(gain, dt, dev) * f ** _scalar_param(gamma, dt, dev)
    return convert_image_dtype(out, orig, saturate=True)


def _channels(x, opname, n=3):
    if x._value.shape[-1] != n:
        raise ValueError(f"{opname}: the last dimension must be {n} channels, got shape "
                         f"{tuple(x._value.shape)}")
    return x[..., 0], x[..., 1], x[..., 2]


def _hue6(r, g, b, vmax, rng):
    """TF's hue times 6 in ``[0, 6)`` (0 where the range is 0)."""
    from .ops.math import where
    safe = where(rng > 0, rng, 1.0)
    norm = 1.0 / (6.0 * safe)
    h = where(r == vmax, norm * (g - b),
              where(g == vmax, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = where(rng > 0, h, 0.0)
    return where(h < 0, h + 1.0, h)


def rgb_to_hsv(images, name=None) -> Tensor:
    """RGB ``[..., 3]`` floats in ``[0, 1]`` to HSV (hue in ``[0, 1)``)."""
    from .ops.math import maximum, minimum, where
    from .ops.shape import stack
    x = as_tensor(images, "image.rgb_to_hsv")
    r, g, b = _channels(x, "image.rgb_to_hsv")
    v = maximum(maximum(r, g), b)
    rng = v - minimum(minimum(r, g), b)
    s = where(v > 0, rng / where(v > 0, v, 1.0), 0.0)
    return stack([_hue6(r, g, b, v, rng), s, v], axis=-1)


def _hsv_channel_weights(h):
    """TF's HSVToRGB ramps for hue ``h`` (in units of a full turn)."""
    from .ops.math import abs as _abs, clip_by_value
    dh = h * 6.0
    dr = clip_by_value(_abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = clip_by_value(2.0 - _abs(dh - 2.0), 0.0, 1.0)
    db = clip_by_value(2.0 - _abs(dh - 4.0), 0.0, 1.0)
    return dr, dg, db


def hsv_to_rgb(images, name=None) -> Tensor:
    """HSV ``[..., 3]`` to RGB (TF's formula)."""
    from .ops.shape import stack
    x = as_tensor(images, "image.hsv_to_rgb")
    h, s, v = _channels(x, "image.hsv_to_rgb")
    one_s = 1.0 - s
    return stack([(one_s + s * d) * v for d in _hsv_channel_weights(h)], axis=-1)


def adjust_hue(image, delta, name=None) -> Tensor:
    """RGB images with their hue rotated by ``delta`` (in ``[-1, 1]``, a fraction of a full
    turn); the channels' minimum and maximum are kept, as TF's AdjustHue."""
    from .ops.math import floormod, maximum, minimum
    from .ops.shape import stack
    if not isinstance(delta, Tensor) and (delta < -1 or delta > 1):
        raise ValueError(f"image.adjust_hue: delta must be in the interval [-1, 1], got {delta}")
    x = as_tensor(image, "image.adjust_hue")
    orig = x._value.dtype
    f = _float_image(x)
    r, g, b = _channels(f, "image.adjust_hue")
    vmax = maximum(maximum(r, g), b)
    rng = vmax - minimum(minimum(r, g), b)
    h = floormod(_hue6(r, g, b, vmax, rng) + _scalar_param(delta, f._value.dtype, f._device),
                 1.0)
    out = stack([vmax - rng * (1.0 - d) for d in _hsv_channel_weights(h)], axis=-1)
    return convert_image_dtype(out, orig)


def adjust_saturation(image, saturation_factor, name=None) -> Tensor:
    """RGB images with their HSV saturation scaled by ``saturation_factor`` (clipped to
    ``[0, 1]``)."""
    from .ops.math import clip_by_value
    from .ops.shape import stack, unstack
    x = as_tensor(image, "image.adjust_saturation")
    orig = x._value.dtype
    f = _float_image(x)
    _channels(f, "image.adjust_saturation")
    h, s, v = unstack(rgb_to_hsv(f), axis=-1)
    s = clip_by_value(s * _scalar_param(saturation_factor, f._value.dtype, f._device), 0.0, 1.0)
    out = hsv_to_rgb(stack([h, s, v], axis=-1))
    return convert_image_dtype(out, orig)


def _check_range(lower, upper, opname):
    if upper <= lower:
        raise ValueError(f"{opname}: upper must be > lower, got lower={lower}, upper={upper}")
    if lower < 0:
        raise ValueError(f"{opname}: lower must be non-negative, got {lower}")


def _check_delta(max_delta, opname, most=None):
    if max_delta < 0:
        raise ValueError(f"{opname}: max_delta must be non-negative, got {max_delta}")
    if most is not None and max_delta > most:
        raise ValueError(f"{opname}: max_delta must be <= {most}, got {max_delta}")


def random_brightness(image, max_delta, seed=None) -> Tensor:
    """:func:`adjust_brightness` by one ``delta`` drawn uniformly from ``[-max_delta,
    max_delta)`` (on the images' device)."""
    _check_delta(max_delta, "image.random_brightness")
    x = as_tensor(image, "image.random_brightness")
    return adjust_brightness(x, _uniform(x, [], seed, -max_delta, max_delta))


def stateless_random_brightness(image, max_delta, seed) -> Tensor:
    """:func:`random_brightness`, a deterministic function of ``seed``."""
    _check_delta(max_delta, "image.stateless_random_brightness")
    x = as_tensor(image, "image.stateless_random_brightness")
    return adjust_brightness(x, _stateless_uniform(x, [], seed, -max_delta, max_delta))


def random_contrast(image, lower, upper, seed=None) -> Tensor:
    """:func:`adjust_contrast` by one factor drawn uniformly from ``[lower, upper)``."""
    _check_range(lower, upper, "image.random_contrast")
    x = as_tensor(image, "image.random_contrast")
    return adjust_contrast(x, _uniform(x, [], seed, lower, upper))


def stateless_random_contrast(image, lower, upper, seed) -> Tensor:
    """:func:`random_contrast`, a deterministic function of ``seed``."""
    _check_range(lower, upper, "image.stateless_random_contrast")
    x = as_tensor(image, "image.stateless_random_contrast")
    return adjust_contrast(x, _stateless_uniform(x, [], seed, lower, upper))


def random_saturation(image, lower, upper, seed=None) -> Tensor:
    """:func:`adjust_saturation` by one factor drawn uniformly from ``[lower, upper)``."""
    _check_range(lower, upper, "image.random_saturation")
    x = as_tensor(image, "image.random_saturation")
    return adjust_saturation(x, _uniform(x, [], seed, lower, upper))


def stateless_random_saturation(image, lower, upper, seed=None) -> Tensor:
    """:func:`random_saturation`, a deterministic function of ``seed``."""
    _check_range(lower, upper, "image.stateless_random_saturation")
    x = as_tensor(image, "image.stateless_random_saturation")
    return adjust_saturation(x, _stateless_uniform(x, [], seed, lower, upper))


def random_hue(image, max_delta, seed=None) -> Tensor:
    """:func:`adjust_hue` by one delta drawn uniformly from ``[-max_delta, max_delta)``
    (``max_delta`` at most 0.5)."""
    _check_delta(max_delta, "image.random_hue", 0.5)
    x = as_tensor(image, "image.random_hue")
    return adjust_hue(x, _uniform(x, [], seed, -max_delta, max_delta))


def stateless_random_hue(image, max_delta, seed) -> Tensor:
    """:func:`random_hue`, a deterministic function of ``seed``."""
    _check_delta(max_delta, "image.stateless_random_hue", 0.5)
    x = as_tensor(image, "image.stateless_random_hue")
    return adjust_hue(x, _stateless_uniform(x, [], seed, -max_delta, max_delta))


def rgb_to_grayscale(images, name=None) -> Tensor:
    """RGB ``[..., 3]`` to one luma channel ``[..., 1]`` (weights 0.2989, 0.5870, 0.1140),
    in the images' dtype."""
    from .ops.linalg import tensordot
    from .ops.shape import expand_dims
    x = as_tensor(images, "image.rgb_to_grayscale")
    orig = x._value.dtype
    f = convert_image_dtype(x, np.float32)
    _channels(f, "image.rgb_to_grayscale")
    w = _const(f._device, np.array([0.2989, 0.5870, 0.1140], np.float32))
    gray = expand_dims(tensordot(f, w, [[-1], [-1]]), -1)
    return convert_image_dtype(gray, orig)


def grayscale_to_rgb(images, name=None) -> Tensor:
    """One channel ``[..., 1]`` repeated to three."""
    from .ops.shape import tile
    x = as_tensor(images, "image.grayscale_to_rgb")
    if x._value.ndim < 2 or x._value.shape[-1] != 1:
        raise ValueError(f"image.grayscale_to_rgb: the last dimension must be 1 channel, got "
                         f"shape {tuple(x._value.shape)}")
    return tile(x, [1] * (x._value.ndim - 1) + [3])


def _color_matrix(images, kernel, opname):
    from .ops.linalg import tensordot
    x = as_tensor(images, opname)
    if x._value.dtype.kind != "f":
        raise TypeError(f"{opname}: images must be floating point, got "
                        f"{x._value.dtype.name}")
    _channels(x, opname)
    k = _const(x._device, np.asarray(kernel, np.float64).astype(x._value.dtype))
    return tensordot(x, k, [[x._value.ndim - 1], [0]])


_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def rgb_to_yuv(images) -> Tensor:
    """RGB ``[..., 3]`` floats to YUV."""
    return _color_matrix(images, _RGB_TO_YUV, "image.rgb_to_yuv")


def yuv_to_rgb(images) -> Tensor:
    """YUV ``[..., 3]`` floats to RGB."""
    return _color_matrix(images, _YUV_TO_RGB, "image.yuv_to_rgb")


def rgb_to_yiq(images) -> Tensor:
    """RGB ``[..., 3]`` floats to YIQ."""
    return _color_matrix(images, _RGB_TO_YIQ, "image.rgb_to_yiq")


def yiq_to_rgb(images) -> Tensor:
    """YIQ ``[..., 3]`` floats to RGB."""
    return _color_matrix(images, _YIQ_TO_RGB, "image.yiq_to_rgb")


def per_image_standardization(image) -> Tensor:
    """Each image (the last three axes) scaled to zero mean and unit variance: ``(x - mean)
    / max(stddev, 1 / sqrt(num_pixels))``, in float32."""
    from .ops.core import cast
    from .ops.math import maximum
    from .ops.reduce import reduce_mean, reduce_std
    x = _at_least_3d(image, "image.per_image_standardization")
    x = cast(x, np.float32)
    n = int(np.prod(x._value.shape[-3:]))
    mean = reduce_mean(x, axis=[-1, -2, -3], keepdims=True)
    std = reduce_std(x, axis=[-1, -2, -3], keepdims=True)
    return (x - mean) / maximum(std, float(_F32(1.0) / np.sqrt(_F32(n))))


# --- image quality and edges ------------------------------------------------------------------

def image_gradients(image):
    """``(dy, dx)``: forward differences ``x[y+1] - x[y]`` and ``x[:, x+1] - x[:, x]`` of
    ``[batch, height, width, depth]`` images, zero in the last row / column."""
    from .ops.shape import pad
    x = as_tensor(image, "image.image_gradients")
    if x._value.ndim != 4:
        raise ValueError(f"image.image_gradients: expects a 4D tensor [batch_size, h, w, d], "
                         f"not shape {tuple(x._value.shape)}")
    dy = pad(x[:, 1:] - x[:, :-1], [[0, 0], [0, 1], [0, 0], [0, 0]])
    dx = pad(x[:, :, 1:] - x[:, :, :-1], [[0, 0], [0, 0], [0, 1], [0, 0]])
    return dy, dx


def sobel_edges(image) -> Tensor:
    """Sobel responses ``[batch, height, width, depth, 2]`` (vertical then horizontal
    derivative) of ``[batch, height, width, depth]`` images, reflect-padded."""
    from .ops.nn import depthwise_conv2d
    from .ops.shape import pad, reshape
    x = as_tensor(image, "image.sobel_edges")
    if x._value.ndim != 4:
        raise ValueError(f"image.sobel_edges: expects a 4D tensor [batch_size, h, w, d], not "
                         f"shape {tuple(x._value.shape)}")
    k = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
                  [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]], np.float64)
    c = x._value.shape[-1]
    k = np.tile(np.transpose(k, (1, 2, 0))[:, :, None, :], (1, 1, c, 1))
    padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    out = depthwise_conv2d(padded, _const(x._device, k.astype(x._value.dtype)), [1, 1, 1, 1],
                           "VALID")
    return reshape(out, list(x._value.shape) + [2])


def total_variation(images, name=None) -> Tensor:
    """Sum of absolute differences of neighbouring pixels (vertical plus horizontal): a
    scalar for one image, ``[batch]`` for a batch."""
    from .ops.math import abs as _abs
    from .ops.reduce import reduce_sum
    x, single = _images(images, "image.total_variation")
    if single:
        return (reduce_sum(_abs(x[1:] - x[:-1])) + reduce_sum(_abs(x[:, 1:] - x[:, :-1])))
    axes = [1, 2, 3]
    return (reduce_sum(_abs(x[:, 1:] - x[:, :-1]), axis=axes) +
            reduce_sum(_abs(x[:, :, 1:] - x[:, :, :-1]), axis=axes))


def _pair(img1, img2, opname):
    a, b = as_tensor(img1, opname), as_tensor(img2, opname)
    if a._value.ndim < 3 or b._value.ndim < 3:
        raise ValueError(f"{opname}: images must have at least 3 dimensions, got shapes "
                         f"{tuple(a._value.shape)} and {tuple(b._value.shape)}")
    if tuple(a._value.shape[-3:]) != tuple(b._value.shape[-3:]):
        raise ValueError(f"{opname}: the images' last three dimensions must match, got shapes "
                         f"{tuple(a._value.shape)} and {tuple(b._value.shape)}")
    if a._value.dtype != b._value.dtype:
        raise TypeError(f"{opname}: the images must have one dtype, got "
                        f"{a._value.dtype.name} and {b._value.dtype.name}")
    return a, b


def _max_val(max_val, dt):
    """``max_val`` (in the images' dtype) as a float32 in TF's ``[0, 1]`` scale."""
    v = np.array(max_val).astype(dt)
    if dt.kind in "iu":
        return float(_F32(v) * _F32(1.0 / float(np.iinfo(dt).max)))
    return float(_F32(v))


def psnr(a, b, max_val, name=None) -> Tensor:
    """Peak signal-to-noise ratio (dB) of two batches of images, per image (float32;
    integer images in ``[0, 1]`` as ``convert_image_dtype``)."""
    from .ops.math import log
    from .ops.reduce import reduce_mean
    a, b = _pair(a, b, "image.psnr")
    mv = _max_val(max_val, a._value.dtype)
    a, b = convert_image_dtype(a, np.float32), convert_image_dtype(b, np.float32)
    mse = reduce_mean((a - b) ** 2, axis=[-3, -2, -1])
    first = float(_F32(20.0 * _F32(np.log(_F32(mv)))) / _F32(np.log(_F32(10.0))))
    return first - float(_F32(10 / np.log(10))) * log(mse)


def _gauss_kernel(size, sigma):
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2.0)
    g = np.square(coords) * (np.float32(-0.5) / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(-1).astype(np.float64)
    g = np.exp(g - g.max())
    return (g / g.sum()).reshape(size, size)


def _ssim_per_channel(x, y, max_val, filter_size, filter_sigma, k1, k2, index_map=False):
    from .ops.nn import depthwise_conv2d
    from .ops.reduce import reduce_mean
    from .ops.shape import reshape
    shape = list(x._value.shape)
    h, w, c = shape[-3:]
    if h < filter_size or w < filter_size:
        raise ValueError(f"image.ssim: the images ({h}x{w}) must be at least filter_size "
                         f"({filter_size}) high and wide")
    k = np.tile(_gauss_kernel(filter_size, filter_sigma)[:, :, None, None], (1, 1, c, 1))
    kern = _const(x._device, k.astype(np.float32))

    def reducer(t):
        flat = reshape(t, [-1, h, w, c])
        out = depthwise_conv2d(flat, kern, [1, 1, 1, 1], "VALID")
        return reshape(out, shape[:-3] + list(out._value.shape[1:]))

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean0, mean1 = reducer(x), reducer(y)
    num0 = mean0 * mean1 * 2.0
    den0 = mean0 * mean0 + mean1 * mean1
    lum = (num0 + c1) / (den0 + c1)
    num1 = reducer(x * y) * 2.0
    den1 = reducer(x * x + y * y)
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    if index_map:
        return lum * cs, cs
    return reduce_mean(lum * cs, axis=[-3, -2]), reduce_mean(cs, axis=[-3, -2])


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False) -> Tensor:
    """Structural similarity of two batches of images (a Gaussian window of
    ``filter_size`` and ``filter_sigma``; per image, averaged over channels), float32."""
    from .ops.reduce import reduce_mean
    a, b = _pair(img1, img2, "image.ssim")
    mv = _max_val(max_val, a._value.dtype)
    a, b = convert_image_dtype(a, np.float32), convert_image_dtype(b, np.float32)
    val, _ = _ssim_per_channel(a, b, mv, int(filter_size), float(filter_sigma), k1, k2,
                               return_index_map)
    return reduce_mean(val, axis=[-1])


_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11,
                    filter_sigma=1.5, k1=0.01, k2=0.03) -> Tensor:
    """Multi-scale SSIM: SSIM's contrast-structure term at ``len(power_factors)`` scales
    (each half the last, 2x2 average pooling after symmetric padding to even sizes) and the
    full SSIM at the last, combined as a weighted geometric mean, as TF."""
    from .ops.math import maximum, pow as _pow
    from .ops.nn import avg_pool
    from .ops.reduce import reduce_mean, reduce_prod
    from .ops.shape import pad, reshape, stack
    a, b = _pair(img1, img2, "image.ssim_multiscale")
    mv = _max_val(max_val, a._value.dtype)
    imgs = [convert_image_dtype(a, np.float32), convert_image_dtype(b, np.float32)]
    mcs = []
    for k in range(len(power_factors)):
        if k > 0:
            down = []
            for t in imgs:
                head, tail = list(t._value.shape[:-3]), list(t._value.shape[-3:])
                flat = reshape(t, [-1] + tail)
                rh, rw = tail[0] % 2, tail[1] % 2
                if rh or rw:
                    flat = pad(flat, [[0, 0], [0, rh], [0, rw], [0, 0]], mode="SYMMETRIC")
                p = avg_pool(flat, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                down.append(reshape(p, head + list(p._value.shape[1:])))
            imgs = down
        val, cs = _ssim_per_channel(imgs[0], imgs[1], mv, int(filter_size), float(filter_sigma),
                                    k1, k2)
        mcs.append(maximum(cs, 0.0))
    mcs.pop()
    stacked = stack(mcs + [maximum(val, 0.0)], axis=-1)
    weights = _const(stacked._device, np.asarray(power_factors, np.float32))
    return reduce_mean(reduce_prod(_pow(stacked, weights), axis=[-1]), axis=[-1])


# --- non-maximum suppression ------------------------------------------------------------------

def _nms_host(boxes, scores, max_output_size, iou_threshold, score_threshold, sigma, opname):
    """TF's greedy (soft) NMS on the host: ``(indices, scores)`` as NumPy arrays."""
    import heapq
    b = np.asarray(boxes, np.float64)
    s = np.asarray(scores, np.float64)
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"{opname}: boxes must be [num_boxes, 4], got shape {b.shape}")
    if s.shape != (b.shape[0],):
        raise ValueError(f"{opname}: scores must be [num_boxes] = [{b.shape[0]}], got shape "
                         f"{s.shape}")
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueError(f"{opname}: iou_threshold must be in [0, 1], got {iou_threshold}")
    if max_output_size < 0:
        raise ValueError(f"{opname}: max_output_size must be >= 0, got {max_output_size}")
    ymin, ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    xmin, xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)

    def iou(i, j):
        if area[i] <= 0 or area[j] <= 0:
            return 0.0
        ih = max(min(ymax[i], ymax[j]) - max(ymin[i], ymin[j]), 0.0)
        iw = max(min(xmax[i], xmax[j]) - max(xmin[i], xmin[j]), 0.0)
        inter = ih * iw
        return inter / (area[i] + area[j] - inter)

    soft = sigma > 0.0
    scale = -0.5 / sigma if soft else 0.0
    heap = [(-s[i], i, 0) for i in range(len(s)) if s[i] > score_threshold]
    heapq.heapify(heap)           # highest score first, ties by lower index
    sel, sel_scores = [], []
    while len(sel) < max_output_size and heap:
        neg, i, begin = heapq.heappop(heap)
        score = orig = -neg
        hard = False
        for j in range(len(sel) - 1, begin - 1, -1):
            sim = iou(i, sel[j])
            if not soft and sim > iou_threshold:
                hard = True
                break
            score *= math.exp(scale * sim * sim) if (soft or sim <= iou_threshold) else 0.0
            if score <= score_threshold:
                break
        if hard:
            continue
        if score == orig:
            sel.append(i)
            sel_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(heap, (-score, i, len(sel)))
    return np.asarray(sel, np.int32), np.asarray(sel_scores)


def _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, sigma, opname):
    bt = as_tensor(boxes, opname)
    st = as_tensor(scores, opname)
    n = _int(max_output_size, "max_output_size", opname)
    # the number of boxes kept depends on their values: read on the host
    idx, kept = _nms_host(bt.numpy(), st.numpy(), n, float(np.asarray(
        iou_threshold.numpy() if isinstance(iou_threshold, Tensor) else iou_threshold)),
        float(np.asarray(score_threshold.numpy() if isinstance(score_threshold, Tensor)
                         else score_threshold)), float(sigma), opname)
    dev = bt._device
    return _const(dev, idx), _const(dev, kept.astype(st._value.dtype))


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None) -> Tensor:
    """Indices (int32) of at most ``max_output_size`` boxes chosen greedily by descending
    score, dropping each box whose IoU with a chosen one exceeds ``iou_threshold`` and those
    scoring at most ``score_threshold``. ``boxes`` ``[num_boxes, 4]`` as ``(y1, x1, y2, x2)``
    corners in any order. The boxes and scores are read on the host (the number kept depends
    on them); the indices land on the boxes' device."""
    return _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, 0.0,
                "image.non_max_suppression")[0]


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name=None):
    """``(selected_indices, selected_scores)``: :func:`non_max_suppression`, or with
    ``soft_nms_sigma > 0`` Soft-NMS (Bodla et al.): overlapping boxes have their scores
    multiplied by ``exp(-iou ** 2 / (2 * soft_nms_sigma))`` instead of being dropped."""
    if soft_nms_sigma < 0:
        raise ValueError(f"image.non_max_suppression_with_scores: soft_nms_sigma must be "
                         f">= 0, got {soft_nms_sigma}")
    return _nms(boxes, scores, max_output_size, iou_threshold, score_threshold,
                soft_nms_sigma, "image.non_max_suppression_with_scores")


# decoding and encoding: tf.image's aliases of tf.io's functions
from .io import (decode_and_crop_jpeg, decode_bmp, decode_gif, decode_image,  # noqa: E402
                 decode_jpeg, decode_png, encode_jpeg, encode_png, extract_jpeg_shape, is_jpeg)
__all__ += ["decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image", "decode_jpeg",
            "decode_png", "encode_jpeg", "encode_png", "extract_jpeg_shape", "is_jpeg"]

# detection helpers: combined and padded NMS, drawing, random crops, glimpses, proposals
from .image_boxes import (combined_non_max_suppression, draw_bounding_boxes,  # noqa: E402
                          extract_glimpse, generate_bounding_box_proposals,
                          non_max_suppression_overlaps, non_max_suppression_padded,
                          sample_distorted_bounding_box, stateless_sample_distorted_bounding_box)
__all__ += ["combined_non_max_suppression", "draw_bounding_boxes", "extract_glimpse",
            "generate_bounding_box_proposals", "non_max_suppression_overlaps",
            "non_max_suppression_padded", "sample_distorted_bounding_box",
            "stateless_sample_distorted_bounding_box"]
