"""``gt.signal``: TensorFlow's ``tf.signal``: Fourier transforms, framing, short-time Fourier
transforms, windows, mel filter banks, MFCCs and discrete cosine transforms.

Four primitives do the transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, each over a
tuple of axes, so the 1-D, 2-D, 3-D and N-D functions share them); everything else is
composed of differentiable gradtape ops, as TensorFlow composes it.

Gradients follow TensorFlow's convention for complex values (for a real loss ``L`` of
``z = x + iy`` the gradient is ``dL/dx + i dL/dy``). The transforms' rules are written for
that convention themselves (``complex_rule``), since ``rfft`` and ``irfft`` cross between
real and complex values: the gradient of ``rfft`` is the real part of the inverse transform
of the cotangent completed with zeros (TensorFlow's ``0.5 * (irfft(g) * n + extra terms)``),
that of ``irfft`` is ``rfft(g)`` weighted ``[1, 2, ..., 2, 1] / n``. Unlike TensorFlow's,
these rules also hold when ``fft_length`` crops the input, and for the 3-D transforms.
"""
from __future__ import annotations

import math as _pymath

import numpy as np

from .dtypes import as_dtype, float32
from .ops._util import as_tensor, dtype_name
from .ops.core import cast, ones, zeros_like
from .ops.extra import bessel_i0e
from .ops.math import (complex as _complex, cos, equal, exp, log, maximum, minimum,
                       pow as _pow, real, sin, sqrt, square, where)
from .ops.nn import relu
from .ops.reduce import cumsum, reduce_sum
from .ops.shape import concat, expand_dims, gather, pad, reshape, split, tile, transpose
from .registry import InvalidArgumentError, apply1, defop
from .tensor import Tensor, convert_to_tensor

__all__ = ["fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "fftnd", "ifftnd", "rfft",
           "irfft", "rfft2d", "irfft2d", "rfft3d", "irfft3d", "rfftnd", "irfftnd", "fftshift",
           "ifftshift", "frame", "overlap_and_add", "stft", "inverse_stft",
           "inverse_stft_window_fn", "mdct", "inverse_mdct", "hann_window", "hamming_window",
           "kaiser_window", "kaiser_bessel_derived_window", "vorbis_window",
           "linear_to_mel_weight_matrix", "mfccs_from_log_mel_spectrograms", "dct", "idct"]


# --- helpers ------------------------------------------------------------------------------

def _shape(v):
    """The shape of a raw array or a tensor, as a tuple."""
    return tuple(getattr(v, "_value", v).shape)


def _prod(values):
    n = 1
    for v in values:
        n *= int(v)
    return n


def _const(ops, like, make):
    """A constant ``make(xp, dtype)`` (``dtype``: ``like``'s) as a rule's ``ops`` takes it:
    a raw array of the namespace, or a tensor on ``like``'s device."""
    if ops.raw:
        return make(ops.xp, like.dtype)
    dev = like._device
    with dev.activate():
        return Tensor(make(dev.xp, like._value.dtype), dev)


def _device_tensor(like: Tensor, make):
    """A tensor ``make(xp)`` made on ``like``'s device (no upload)."""
    dev = like._device
    with dev.activate():
        return Tensor(make(dev.xp), dev)


def _complex_of(real_dtype):
    return np.dtype(np.complex128 if np.dtype(real_dtype) == np.float64 else np.complex64)


def _real_of(complex_dtype):
    return np.dtype(np.float64 if np.dtype(complex_dtype) == np.complex128 else np.float32)


def _index(ndim, axis, item):
    """An index tuple taking ``item`` on ``axis`` (negative) of an ``ndim`` array."""
    key = [slice(None)] * ndim
    key[ndim + axis] = item
    return tuple(key)


def _static_int(value, opname, what):
    """A Python int from an int, a NumPy integer or a scalar integer tensor."""
    if isinstance(value, Tensor):
        if value._value.ndim != 0 or value._value.dtype.kind not in "iu":
            raise ValueError(f"{opname}: {what} must be a scalar integer, got a "
                             f"{dtype_name(value)} tensor of shape {tuple(value.shape)}")
        return int(value.numpy())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        arr = np.asarray(value)
        if arr.ndim == 0 and arr.dtype.kind in "iu":
            return int(arr)
        raise ValueError(f"{opname}: {what} must be a scalar integer, got {value!r}")
    return int(value)


def _static_float(value):
    if isinstance(value, Tensor):
        return float(value.numpy())
    return float(value)


# --- the transform primitives ---------------------------------------------------------------
# ``axes`` are negative (so the rules also take a cotangent with leading batch axes); ``n``
# (rfft, irfft) are the real signal's lengths on those axes. The public functions crop or
# pad the input to exactly the transform's size first, so the primitives never do.

def _fft_fwd(xp, x, axes):
    if any(x.shape[a] == 0 for a in axes):
        return xp.zeros(x.shape, dtype=x.dtype)
    out = xp.fft.fft(x, axis=axes[0]) if len(axes) == 1 else xp.fft.fftn(x, axes=axes)
    return out.astype(x.dtype, copy=False)


def _ifft_fwd(xp, x, axes):
    if any(x.shape[a] == 0 for a in axes):
        return xp.zeros(x.shape, dtype=x.dtype)
    out = xp.fft.ifft(x, axis=axes[0]) if len(axes) == 1 else xp.fft.ifftn(x, axes=axes)
    return out.astype(x.dtype, copy=False)


def _fft_vjp(ops, needs, g, ans, x, axes):
    # TensorFlow's: ifft(g) * n (the adjoint of the transform)
    return (ops.ifft(g, axes=axes) * _prod(_shape(g)[a] for a in axes),)


def _ifft_vjp(ops, needs, g, ans, x, axes):
    # TensorFlow's: fft(g) / n
    return (ops.fft(g, axes=axes) * (1.0 / max(_prod(_shape(g)[a] for a in axes), 1)),)


def _fft_jvp(ops, t, ans, x, axes):
    return ops.fft(t[0], axes=axes)


def _ifft_jvp(ops, t, ans, x, axes):
    return ops.ifft(t[0], axes=axes)


def _rfft_fwd(xp, x, axes, n):
    cdt = _complex_of(x.dtype)
    if 0 in n:
        shape = list(x.shape)
        shape[axes[-1]] = n[-1] // 2 + 1 if n[-1] else 0
        return xp.zeros(tuple(shape), dtype=cdt)
    out = xp.fft.rfft(x, axis=axes[0]) if len(axes) == 1 else xp.fft.rfftn(x, axes=axes)
    return out.astype(cdt, copy=False)


def _rfft_vjp(ops, needs, g, ans, x, axes, n):
    # For a real loss of Y = rfft(x): dL/dx = Re(F^H G) with G completed by zeros to the full
    # spectrum (the bins rfft leaves out); F^H = n * ifft. This is TensorFlow's
    # 0.5 * (irfft(G) * n + extra terms), written with complex transforms only.
    shape = _shape(g)
    ax = len(shape) + axes[-1]
    missing = n[-1] - shape[ax]
    if missing > 0:
        paddings = tuple((0, missing) if i == ax else (0, 0) for i in range(len(shape)))
        g = ops.pad(g, paddings=paddings, value=0, in_shape=shape)
    return (ops.real(ops.ifft(g, axes=axes)) * _prod(n),)


def _rfft_jvp(ops, t, ans, x, axes, n):
    return ops.rfft(t[0], axes=axes, n=n)


def _irfft_fwd(xp, y, axes, n):
    rdt = _real_of(y.dtype)
    if 0 in n:
        shape = list(y.shape)
        for a, m in zip(axes, n):
            shape[a] = m
        return xp.zeros(tuple(shape), dtype=rdt)
    if len(axes) > 1:
        y = xp.fft.ifftn(y, axes=axes[:-1])
    else:
        y = y.copy()
    # The imaginary parts of the zero (and, for an even length, the Nyquist) frequency have
    # no real signal: ignored, on every device (a C2R transform's result on them varies).
    m = n[-1]
    dc = _index(y.ndim, axes[-1], slice(0, 1))
    y[dc] = y[dc].real
    if m % 2 == 0:
        ny = _index(y.ndim, axes[-1], slice(m // 2, m // 2 + 1))
        y[ny] = y[ny].real
    return xp.fft.irfft(y, n=m, axis=axes[-1]).astype(rdt, copy=False)


def _irfft_vjp(ops, needs, g, ans, y, axes, n):
    # TensorFlow's: rfft(g) * [1, 2, ..., 2, 1] / n (no 1 at the end for an odd length)
    r = ops.rfft(g, axes=axes, n=n)
    m = n[-1]
    bins = m // 2 + 1
    total = _prod(n)
    trailing = (1,) * (-axes[-1] - 1)

    def weights(xp, dtype):
        w = xp.full((bins,), 2.0 / total, dtype=dtype)
        w[0] = 1.0 / total
        if m % 2 == 0:
            w[bins - 1] = 1.0 / total
        return w.reshape((bins,) + trailing)
    return (r * _const(ops, r, weights),)


def _irfft_jvp(ops, t, ans, y, axes, n):
    return ops.irfft(t[0], axes=axes, n=n)


_fft = defop("fft", _fft_fwd, _fft_vjp, jvp=_fft_jvp, save_inputs=False, save_output=False,
             complex_rule=True)
_ifft = defop("ifft", _ifft_fwd, _ifft_vjp, jvp=_ifft_jvp, save_inputs=False,
              save_output=False, complex_rule=True)
_rfft = defop("rfft", _rfft_fwd, _rfft_vjp, jvp=_rfft_jvp, save_inputs=False,
              save_output=False, complex_rule=True)
_irfft = defop("irfft", _irfft_fwd, _irfft_vjp, jvp=_irfft_jvp, save_inputs=False,
               save_output=False, complex_rule=True)


# --- input handling ---------------------------------------------------------------------------

def _complex_input(x, opname):
    """A complex tensor (other values are converted, preferring complex64, as TF)."""
    if isinstance(x, Tensor):
        if x._value.dtype.kind != "c":
            raise InvalidArgumentError(f"{opname}: expected a complex64 or complex128 tensor, "
                                       f"got {dtype_name(x)}")
        return x
    t = convert_to_tensor(x)
    return t if t._value.dtype.kind == "c" else cast(t, np.complex64)


def _real_input(x, opname):
    """A float32/float64 tensor for the real-to-complex transforms (other values are
    converted to float32, as TF)."""
    if isinstance(x, Tensor):
        if x._value.dtype not in (np.float32, np.float64):
            raise ValueError(f"{opname}: RFFT requires float32 or float64 inputs, got "
                             f"{dtype_name(x)}")
        return x
    return cast(convert_to_tensor(x), np.float32)


def _hermitian_input(x, opname):
    """A complex tensor for the complex-to-real transforms (other values are converted to
    complex64, as TF)."""
    if isinstance(x, Tensor):
        if x._value.dtype.kind != "c":
            raise ValueError(f"{opname}: IRFFT requires complex64 or complex128 inputs, got "
                             f"{dtype_name(x)}")
        return x
    return cast(convert_to_tensor(x), np.complex64)


def _check_rank(x, rank, opname, error=InvalidArgumentError):
    if x._value.ndim < rank:
        raise error(f"{opname}: input must have rank of at least {rank} but got shape "
                    f"{tuple(x.shape)}")


def _lengths(fft_length, count, opname):
    """``fft_length`` as a tuple of ``count`` non-negative ints."""
    if isinstance(fft_length, Tensor):
        fft_length = fft_length.numpy()
    arr = np.asarray(fft_length)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(f"{opname}: fft_length must be a list of {count} ints, got "
                        f"{fft_length!r}")
    vals = tuple(int(v) for v in arr)
    if len(vals) != count:
        raise InvalidArgumentError(f"{opname}: fft_length must have shape [{count}], got "
                                   f"{list(vals)}")
    for v in vals:
        if v < 0:
            raise ValueError(f"{opname}: Dimension {v} must be >= 0 (fft_length {list(vals)})")
    return vals


def _fit(x, axes, sizes):
    """``x`` cropped or zero-padded to ``sizes`` on ``axes`` (negative)."""
    shape = list(x.shape)
    nd = len(shape)
    if any(shape[a] > s for a, s in zip(axes, sizes)):
        key = [slice(None)] * nd
        for a, s in zip(axes, sizes):
            if shape[a] > s:
                key[nd + a] = slice(0, s)
                shape[a] = s
        x = x[tuple(key)]
    if any(shape[a] < s for a, s in zip(axes, sizes)) and 0 not in shape:
        paddings = [[0, 0] for _ in range(nd)]
        for a, s in zip(axes, sizes):
            paddings[nd + a][1] = max(s - shape[a], 0)
        x = pad(x, paddings)
    return x


def _norm_axes(axes, ndim, opname):
    if axes is None:
        return tuple(range(-ndim, 0))
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        axes = [axes]
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(f"{opname}: axis {a} is out of range for a tensor of "
                                       f"rank {ndim}")
        out.append(a - ndim if a >= 0 else a)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"{opname}: repeated axis in {list(axes)}")
    return tuple(out)


# --- complex-to-complex transforms ------------------------------------------------------------

def _c2c(op, rank, opname):
    def transform(input, name=None):
        x = _complex_input(input, opname)
        _check_rank(x, rank, opname)
        return apply1(op, x, {"axes": tuple(range(-rank, 0))})
    transform.__name__ = transform.__qualname__ = opname
    what = "inverse " if op is _ifft else ""
    dims = {1: "", 2: "2-D ", 3: "3-D "}[rank]
    transform.__doc__ = (f"The {dims}{what}discrete Fourier transform over the inner-most "
                         f"{rank} ax{'i' if rank == 1 else 'e'}s of a complex tensor.")
    return transform


fft = _c2c(_fft, 1, "fft")
ifft = _c2c(_ifft, 1, "ifft")
fft2d = _c2c(_fft, 2, "fft2d")
ifft2d = _c2c(_ifft, 2, "ifft2d")
fft3d = _c2c(_fft, 3, "fft3d")
ifft3d = _c2c(_ifft, 3, "ifft3d")


# --- real-to-complex and complex-to-real transforms --------------------------------------------

def _rfft_along(x, axes, n):
    x = _fit(x, axes, n)
    return apply1(_rfft, x, {"axes": axes, "n": n})


def _irfft_along(y, axes, n):
    sizes = tuple(n[:-1]) + (n[-1] // 2 + 1,)
    y = _fit(y, axes, sizes)
    return apply1(_irfft, y, {"axes": axes, "n": n})


def _r2c(rank, opname):
    def transform(input_tensor, fft_length=None, name=None):
        x = _real_input(input_tensor, opname)
        _check_rank(x, rank, opname, ValueError)
        axes = tuple(range(-rank, 0))
        n = tuple(x.shape[a] for a in axes) if fft_length is None else \
            _lengths(fft_length, rank, opname)
        return _rfft_along(x, axes, n)
    transform.__name__ = transform.__qualname__ = opname
    transform.__doc__ = (
        f"The {'' if rank == 1 else f'{rank}-D '}discrete Fourier transform of a real signal "
        f"over its inner-most {rank} ax{'i' if rank == 1 else 'e'}s: the "
        "``fft_length[-1] // 2 + 1`` unique bins on the last one. ``fft_length`` (default: "
        "the input's sizes) crops or zero-pads the input first. float32 gives complex64, "
        "float64 complex128.")
    return transform


def _c2r(rank, opname):
    def transform(input_tensor, fft_length=None, name=None):
        y = _hermitian_input(input_tensor, opname)
        _check_rank(y, rank, opname, ValueError)
        axes = tuple(range(-rank, 0))
        if fft_length is None:
            n = tuple(y.shape[a] for a in axes)
            n = n[:-1] + (max(0, 2 * (n[-1] - 1)),)
        else:
            n = _lengths(fft_length, rank, opname)
        return _irfft_along(y, axes, n)
    transform.__name__ = transform.__qualname__ = opname
    transform.__doc__ = (
        f"The inverse of ``rfft{'' if rank == 1 else f'{rank}d'}``: a real signal of "
        "``fft_length`` samples (default: ``2 * (bins - 1)`` on the last axis) from its "
        f"unique bins over the inner-most {rank} ax{'i' if rank == 1 else 'e'}s (cropped or "
        "zero-padded to ``fft_length[-1] // 2 + 1`` first). The imaginary parts of the zero "
        "and Nyquist frequencies are ignored.")
    return transform


rfft = _r2c(1, "rfft")
irfft = _c2r(1, "irfft")
rfft2d = _r2c(2, "rfft2d")
irfft2d = _c2r(2, "irfft2d")
rfft3d = _r2c(3, "rfft3d")
irfft3d = _c2r(3, "irfft3d")


# --- N-D transforms over chosen axes -------------------------------------------------------------

def _scale_for_norm(x, norm, n, inverse, opname):
    """TensorFlow's normalisation: the input scaled before the (unnormalised) transform."""
    if norm is None or norm == "backward":
        return x
    if norm == "forward":
        factor = float(n) if inverse else 1.0 / n
    elif norm == "ortho":
        factor = float(np.sqrt(n)) if inverse else 1.0 / float(np.sqrt(n))
    else:
        raise ValueError(f"{opname}: norm must be 'backward', 'forward' or 'ortho', got "
                         f"{norm!r}")
    return x * factor


def _nd_setup(x, fft_length, axes, opname, inverse_real=False):
    axes = _norm_axes(axes, x._value.ndim, opname)
    if fft_length is None:
        n = tuple(x.shape[a] for a in axes)
        if inverse_real and n:
            n = n[:-1] + (max(0, 2 * (n[-1] - 1)),)
    else:
        n = _lengths(fft_length, len(axes), opname)
    if not axes:
        raise InvalidArgumentError(f"{opname}: needs at least one axis")
    return axes, n


def fftnd(input_tensor, fft_length=None, axes=None, norm=None, name=None):
    """The N-D discrete Fourier transform over ``axes`` (default: all), the input cropped
    or zero-padded to ``fft_length`` on them first; ``norm``: ``"backward"`` (none),
    ``"forward"`` (1/n) or ``"ortho"`` (1/sqrt(n))."""
    x = _complex_input(input_tensor, "fftnd")
    axes, n = _nd_setup(x, fft_length, axes, "fftnd")
    x = _scale_for_norm(_fit(x, axes, n), norm, _prod(n), False, "fftnd")
    return apply1(_fft, x, {"axes": axes})


def ifftnd(input_tensor, fft_length=None, axes=None, norm=None, name=None):
    """The inverse of :func:`fftnd` (``norm="backward"`` divides by n)."""
    x = _complex_input(input_tensor, "ifftnd")
    axes, n = _nd_setup(x, fft_length, axes, "ifftnd")
    x = _scale_for_norm(_fit(x, axes, n), norm, _prod(n), True, "ifftnd")
    return apply1(_ifft, x, {"axes": axes})


def rfftnd(input_tensor, fft_length=None, axes=None, norm=None, name=None):
    """The N-D transform of a real signal over ``axes`` (the last one keeps its
    ``fft_length // 2 + 1`` unique bins)."""
    x = _real_input(input_tensor, "rfftnd")
    axes, n = _nd_setup(x, fft_length, axes, "rfftnd")
    x = _scale_for_norm(_fit(x, axes, n), norm, _prod(n), False, "rfftnd")
    return apply1(_rfft, x, {"axes": axes, "n": n})


def irfftnd(input_tensor, fft_length=None, axes=None, norm=None, name=None):
    """The inverse of :func:`rfftnd`: a real signal of ``fft_length`` samples on ``axes``."""
    y = _hermitian_input(input_tensor, "irfftnd")
    axes, n = _nd_setup(y, fft_length, axes, "irfftnd", inverse_real=True)
    sizes = tuple(n[:-1]) + (n[-1] // 2 + 1,)
    y = _scale_for_norm(_fit(y, axes, sizes), norm, _prod(n), True, "irfftnd")
    return apply1(_irfft, y, {"axes": axes, "n": n})


# --- shifts --------------------------------------------------------------------------------------

def _shift(x, axes, sign, opname):
    from .array_ops import roll
    x = as_tensor(x, opname)
    nd = x._value.ndim
    if axes is None:
        axes = list(range(nd))
    elif isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        axes = [int(axes)]
    axes = [int(a) for a in axes]
    for a in axes:
        if not -nd <= a < nd:
            raise InvalidArgumentError(f"{opname}: axis {a} is out of range for a tensor of "
                                       f"rank {nd}")
    if not axes:
        return x
    shifts = [sign * (x.shape[a] // 2) for a in axes]
    return roll(x, shifts, axes)


def fftshift(x, axes=None, name=None):
    """The zero-frequency component moved to the centre: each of ``axes`` (default: all)
    rolled by half its length (``numpy.fft.fftshift``)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of :func:`fftshift` (they differ by one sample on odd lengths)."""
    return _shift(x, axes, -1, "ifftshift")


# --- framing --------------------------------------------------------------------------------------

def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """``signal``'s ``axis`` expanded into frames ``[..., frames, frame_length, ...]`` of
    ``frame_length`` samples every ``frame_step``. Only frames that fit are made, unless
    ``pad_end``: then the end is padded with ``pad_value`` until the window has moved past
    it (``ceil(samples / frame_step)`` frames)."""
    x = as_tensor(signal, "frame")
    frame_length = _static_int(frame_length, "frame", "frame_length")
    frame_step = _static_int(frame_step, "frame", "frame_step")
    axis = _static_int(axis, "frame", "axis")
    rank = x._value.ndim
    if rank < 1:
        raise ValueError(f"frame: signal must have rank at least 1, got shape {tuple(x.shape)}")
    if not -rank <= axis < rank:
        raise ValueError(f"frame: axis {axis} is out of range for a signal of rank {rank}")
    if frame_length < 0 or frame_step <= 0:
        raise ValueError(f"frame: frame_length must be >= 0 and frame_step > 0, got "
                         f"{frame_length} and {frame_step}")
    axis %= rank
    shape = list(x.shape)
    outer, inner = shape[:axis], shape[axis + 1:]
    length = shape[axis]
    if pad_end:
        if isinstance(pad_value, Tensor):
            if pad_value._value.ndim != 0:
                raise ValueError(f"frame: pad_value must be a scalar, got shape "
                                 f"{tuple(pad_value.shape)}")
            pad_value = pad_value.numpy().item()
        num_frames = -(-length // frame_step)
        pad_samples = max(0, frame_length + frame_step * (num_frames - 1) - length)
        if pad_samples:
            paddings = [[0, 0] for _ in range(rank)]
            paddings[axis][1] = pad_samples
            x = pad(x, paddings, constant_values=pad_value)
            length += pad_samples
    else:
        num_frames = max(0, 1 + (length - frame_length) // frame_step)
    # TensorFlow's construction: the signal cut into subframes of gcd(length, step)
    # samples, and each frame gathered as whole subframes.
    sub = _pymath.gcd(frame_length, frame_step)
    per_frame = frame_length // sub
    per_hop = frame_step // sub
    num_sub = length // sub
    if num_sub * sub != length:
        x = x[(slice(None),) * axis + (slice(0, num_sub * sub),)]
    x = reshape(x, outer + [num_sub, sub] + inner)
    selector = _device_tensor(x, lambda xp: (
        xp.arange(num_frames, dtype=np.int32) * per_hop)[:, None] +
        xp.arange(per_frame, dtype=np.int32)[None, :])
    frames = gather(x, selector, axis=axis)
    return reshape(frames, outer + [num_frames, frame_length] + inner)


def overlap_and_add(signal, frame_step, name=None):
    """Frames ``[..., frames, frame_length]`` added back together, each ``frame_step``
    samples after the previous: ``[..., (frames - 1) * frame_step + frame_length]``."""
    x = as_tensor(signal, "overlap_and_add")
    if x._value.ndim < 2:
        raise ValueError(f"overlap_and_add: signal must have rank at least 2, got shape "
                         f"{tuple(x.shape)}")
    if isinstance(frame_step, Tensor) and frame_step._value.dtype.kind not in "iu" or \
            isinstance(frame_step, (float, np.floating)):
        raise ValueError(f"overlap_and_add: frame_step must be an integer, got {frame_step!r}")
    frame_step = _static_int(frame_step, "overlap_and_add", "frame_step")
    if frame_step <= 0:
        raise ValueError(f"overlap_and_add: frame_step must be positive, got {frame_step}")
    shape = list(x.shape)
    outer = shape[:-2]
    nouter = len(outer)
    frames, frame_length = shape[-2], shape[-1]
    output_length = frame_length + frame_step * (frames - 1)
    if frame_step == frame_length:
        return reshape(x, outer + [output_length])
    # TensorFlow's construction: frames padded to whole steps, shifted by one step per
    # frame through a reshape, and summed.
    segments = -(-frame_length // frame_step)
    paddings = [[0, 0]] * nouter + [[0, segments], [0, segments * frame_step - frame_length]]
    x = pad(x, paddings)
    x = reshape(x, outer + [frames + segments, segments, frame_step])
    x = transpose(x, list(range(nouter)) + [nouter + 1, nouter, nouter + 2])
    x = reshape(x, outer + [(frames + segments) * segments, frame_step])
    x = x[..., :(frames + segments - 1) * segments, :]
    x = reshape(x, outer + [segments, frames + segments - 1, frame_step])
    x = reduce_sum(x, -3)
    x = reshape(x, outer + [(frames + segments - 1) * frame_step])
    return x[..., :output_length]


# --- windows --------------------------------------------------------------------------------------

def _window_dtype(dtype):
    dt = as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"dtype must be a floating point type. Found {dt.name}")
    return dt


def _count(window_length, dtype):
    """``[0, 1, ..., window_length - 1]`` in ``dtype`` (made on the current device)."""
    from .ops.shape import range as _range
    return cast(_range(window_length), dtype)


def _raised_cosine_window(opname, window_length, periodic, dtype, a, b):
    dt = _window_dtype(dtype)
    window_length = _static_int(window_length, opname, "window_length")
    if window_length == 1:
        return ones([1], dtype=dt)
    if isinstance(periodic, Tensor):
        periodic = periodic.numpy().item()
    periodic = int(bool(periodic))
    even = 1 - window_length % 2
    n = dt.np.type(window_length + periodic * even - 1)
    count = _count(window_length, dt)
    cos_arg = count * float(dt.np.type(2 * np.pi)) / float(n)
    return a - b * cos(cos_arg)


def hann_window(window_length, periodic=True, dtype=float32, name=None):
    """A Hann window ``0.5 - 0.5 cos(2 pi k / N)`` of ``window_length`` samples (``N``:
    the length when ``periodic`` (for spectral analysis) and the length is even, else the
    length - 1, as TensorFlow)."""
    return _raised_cosine_window("hann_window", window_length, periodic, dtype, 0.5, 0.5)


def hamming_window(window_length, periodic=True, dtype=float32, name=None):
    """A Hamming window ``0.54 - 0.46 cos(2 pi k / N)`` (``N`` as in :func:`hann_window`)."""
    return _raised_cosine_window("hamming_window", window_length, periodic, dtype, 0.54, 0.46)


def kaiser_window(window_length, beta=12., dtype=float32, name=None):
    """A Kaiser window ``I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)``."""
    dt = _window_dtype(dtype)
    window_length = _static_int(window_length, "kaiser_window", "window_length")
    if window_length == 1:
        return ones([1], dtype=dt)
    # (as TensorFlow: positions made in float32, then the window in dtype)
    halflen = (np.float32(window_length) - np.float32(1.0)) / np.float32(2.0)
    arg = cast(_count(window_length, float32) - float(halflen), dt)
    beta = dt.np.type(_static_float(beta))
    num = sqrt(relu(1.0 - square(arg / float(dt.np.type(halflen))))) * float(beta)
    i0e_beta = bessel_i0e(_device_tensor(num, lambda xp: xp.full((), beta, dtype=dt.np)))
    return exp(num - float(beta)) * (bessel_i0e(num) / i0e_beta)


def kaiser_bessel_derived_window(window_length, beta=12., dtype=float32, name=None):
    """A Kaiser-Bessel-derived window (for the MDCT): the normalised running sum of a
    Kaiser window of ``window_length // 2 + 1`` samples, square-rooted and mirrored (so
    ``2 * (window_length // 2)`` samples)."""
    dt = _window_dtype(dtype)
    window_length = _static_int(window_length, "kaiser_bessel_derived_window",
                                "window_length")
    halflen = window_length // 2
    kaiserw = kaiser_window(halflen + 1, beta, dtype=dt)
    csum = cumsum(kaiserw)
    halfw = sqrt(csum[:-1] / csum[-1])
    return concat([halfw, halfw[::-1]], axis=0)


def vorbis_window(window_length, dtype=float32, name=None):
    """The Vorbis power-complementary window ``sin(pi / 2 sin^2(pi (k + 0.5) / N))``."""
    dt = _window_dtype(dtype)
    window_length = _static_int(window_length, "vorbis_window", "window_length")
    arg = _count(window_length, dt)
    step = float(dt.np.type(np.pi) / dt.np.type(window_length)) if window_length else 0.0
    return sin(_pow(sin((arg + 0.5) * step), 2.0) * (np.pi / 2.0))


# --- short-time Fourier transforms ------------------------------------------------------------------

def _enclosing_power_of_two(value):
    """2**N for the smallest integer N with 2**N >= value (TensorFlow's formula)."""
    return int(2 ** np.ceil(np.log(value) / np.log(2.0)))


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False, name=None):
    """The short-time Fourier transform of real ``[..., samples]`` signals:
    ``[..., frames, fft_length // 2 + 1]`` complex bins of each windowed frame
    (``fft_length`` defaults to the smallest power of 2 >= ``frame_length``)."""
    x = as_tensor(signals, "stft")
    if x._value.ndim < 1:
        raise ValueError(f"stft: signals must have rank at least 1, got shape {tuple(x.shape)}")
    frame_length = _static_int(frame_length, "stft", "frame_length")
    frame_step = _static_int(frame_step, "stft", "frame_step")
    if fft_length is None:
        fft_length = _enclosing_power_of_two(frame_length)
    else:
        fft_length = _static_int(fft_length, "stft", "fft_length")
    framed = frame(x, frame_length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(frame_length, dtype=framed.dtype)
    return rfft(framed, [fft_length])


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """A window function for :func:`inverse_stft` that undoes ``forward_window_fn``'s
    overlapping windows (Griffin and Lim's equation 7): the forward window divided by the
    sum of its squares over the overlapping positions."""
    def inverse_stft_window_fn_inner(frame_length, dtype):
        step = _static_int(frame_step, "inverse_stft_window_fn", "frame_step")
        length = _static_int(frame_length, "inverse_stft_window_fn", "frame_length")
        forward_window = forward_window_fn(length, dtype=dtype)
        denom = square(forward_window)
        overlaps = -(-length // step)
        denom = pad(denom, [(0, overlaps * step - length)])
        denom = reshape(denom, [overlaps, step])
        denom = reduce_sum(denom, 0, keepdims=True)
        denom = tile(denom, [overlaps, 1])
        denom = reshape(denom, [overlaps * step])
        denom = denom[:length]
        return where(equal(denom, 0.0), zeros_like(forward_window), forward_window / denom)
    return inverse_stft_window_fn_inner


def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window,
                 name=None):
    """The inverse short-time Fourier transform: each frame's ``irfft`` (cropped or padded
    to ``frame_length``), windowed by ``window_fn`` and overlap-added. Pass
    ``window_fn=inverse_stft_window_fn(frame_step)`` to reconstruct :func:`stft`'s input."""
    y = as_tensor(stfts, "inverse_stft")
    if y._value.ndim < 2:
        raise ValueError(f"inverse_stft: stfts must have rank at least 2, got shape "
                         f"{tuple(y.shape)}")
    frame_length = _static_int(frame_length, "inverse_stft", "frame_length")
    frame_step = _static_int(frame_step, "inverse_stft", "frame_step")
    if fft_length is None:
        fft_length = _enclosing_power_of_two(frame_length)
    else:
        fft_length = _static_int(fft_length, "inverse_stft", "fft_length")
    real_frames = irfft(y, [fft_length])
    n = real_frames.shape[-1]
    if n > frame_length:
        real_frames = real_frames[..., :frame_length]
    elif n < frame_length:
        real_frames = pad(real_frames, [[0, 0]] * (real_frames.ndim - 1) +
                          [[0, frame_length - n]])
    if window_fn is not None:
        real_frames = real_frames * window_fn(frame_length,
                                              dtype=as_dtype(_real_of(y._value.dtype)))
    return overlap_and_add(real_frames, frame_step)


def mdct(signals, frame_length, window_fn=vorbis_window, pad_end=False, norm=None, name=None):
    """The modified discrete cosine transform of real ``[..., samples]`` signals:
    ``[..., frames, frame_length // 2]`` with frames every ``frame_length // 2`` samples
    (``frame_length`` a multiple of 4). ``window_fn=None`` uses a flat ``1/sqrt(2)``."""
    x = as_tensor(signals, "mdct")
    if x._value.ndim < 1:
        raise ValueError(f"mdct: signals must have rank at least 1, got shape {tuple(x.shape)}")
    frame_length = _static_int(frame_length, "mdct", "frame_length")
    if frame_length % 4 != 0:
        raise ValueError("The frame length must be a multiple of 4.")
    framed = frame(x, frame_length, frame_length // 2, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(frame_length, dtype=framed.dtype)
    else:
        framed = framed * (1.0 / np.sqrt(2))
    q0, q1, q2, q3 = split(framed, 4, axis=-1)
    first = -q2[..., ::-1] - q3
    second = q0 - q1[..., ::-1]
    return dct(concat([first, second], axis=-1), type=4, norm=norm)


def inverse_mdct(mdcts, window_fn=vorbis_window, norm=None, name=None):
    """The inverse of :func:`mdct` (with the same window): ``[..., samples]`` with
    ``samples = (frames - 1) * (frame_length // 2) + frame_length``."""
    y = as_tensor(mdcts, "inverse_mdct")
    if y._value.ndim < 2:
        raise ValueError(f"inverse_mdct: mdcts must have rank at least 2, got shape "
                         f"{tuple(y.shape)}")
    half_len = y.shape[-1]
    if norm is None:
        t = y.dtype.np.type
        result = dct(y, type=4) * float(t(0.5) / t(half_len))
    elif norm == "ortho":
        result = dct(y, type=4, norm="ortho")
    else:
        raise ValueError(f"inverse_mdct: norm must be None or 'ortho', got {norm!r}")
    h0, h1 = split(result, 2, axis=-1)
    real_frames = concat([h1, -h1[..., ::-1], -h0[..., ::-1], -h0], axis=-1)
    if window_fn is not None:
        real_frames = real_frames * window_fn(2 * half_len, dtype=y.dtype)
    else:
        real_frames = real_frames * (1.0 / np.sqrt(2))
    return overlap_and_add(real_frames, half_len)


# --- mel scale and MFCCs ------------------------------------------------------------------------------

_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(f):
    """HTK's mel scale, ``1127 ln(1 + f / 700)`` (= ``2595 log10(1 + f / 700)``)."""
    return log(f / _MEL_BREAK_FREQUENCY_HERTZ + 1.0) * _MEL_HIGH_FREQUENCY_Q


def _hertz_to_mel_scalar(f, t):
    return t(_MEL_HIGH_FREQUENCY_Q) * np.log(t(1.0) + t(f) / t(_MEL_BREAK_FREQUENCY_HERTZ))


def _linspace(start, stop, num, dt):
    """``num`` points from ``start`` to ``stop`` in ``dt``, as TensorFlow's kernel computes
    them (``start + i * step`` in ``dt``, the last one ``stop``), on the current device."""
    from .backend import current_device
    t = dt.np.type
    start, stop = t(start), t(stop)
    dev = current_device()
    with dev.activate():
        xp = dev.xp
        if num <= 1:
            out = xp.full((max(num, 0),), start, dtype=dt.np)
        else:
            step = (stop - start) / t(num - 1)
            out = xp.arange(num, dtype=np.int32).astype(dt.np) * step + start
            out[num - 1] = stop
        return Tensor(out, dev)


def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000,
                                lower_edge_hertz=125.0, upper_edge_hertz=3800.0,
                                dtype=float32, name=None):
    """A ``[num_spectrogram_bins, num_mel_bins]`` matrix of triangular filters (peak 1) on
    HTK's mel scale, ``mel(f) = 2595 log10(1 + f / 700)``: right-multiplying a linear
    spectrogram (bins from 0 to ``sample_rate / 2``) by it gives a mel spectrogram of
    ``num_mel_bins`` bands spread evenly in mels over ``[lower_edge_hertz,
    upper_edge_hertz]``. The DC bin gets no weight (as HTK)."""
    num_mel_bins = _static_int(num_mel_bins, "linear_to_mel_weight_matrix", "num_mel_bins")
    num_spectrogram_bins = _static_int(num_spectrogram_bins, "linear_to_mel_weight_matrix",
                                       "num_spectrogram_bins")
    sample_rate = _static_float(sample_rate)
    lower_edge_hertz = _static_float(lower_edge_hertz)
    upper_edge_hertz = _static_float(upper_edge_hertz)
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {num_mel_bins}")
    if lower_edge_hertz < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative. Got: {lower_edge_hertz}")
    if lower_edge_hertz >= upper_edge_hertz:
        raise ValueError(f"lower_edge_hertz {lower_edge_hertz:.1f} >= upper_edge_hertz "
                         f"{upper_edge_hertz:.1f}")
    if sample_rate <= 0.0:
        raise ValueError(f"sample_rate must be positive. Got: {sample_rate}")
    if upper_edge_hertz > sample_rate / 2:
        raise ValueError(f"upper_edge_hertz must not be larger than the Nyquist frequency "
                         f"(sample_rate / 2). Got {upper_edge_hertz} for sample_rate: "
                         f"{sample_rate}")
    dt = as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"dtype must be a floating point type. Got: {dt.name}")
    if num_spectrogram_bins < 0:
        raise InvalidArgumentError(f"linear_to_mel_weight_matrix: num_spectrogram_bins must "
                                   f"not be negative, got {num_spectrogram_bins}")
    t = dt.np.type
    nyquist = t(sample_rate) / t(2.0)
    # HTK excludes the spectrogram's DC bin
    linear_frequencies = _linspace(0.0, nyquist, num_spectrogram_bins, dt)[1:]
    spectrogram_bins_mel = expand_dims(_hertz_to_mel(linear_frequencies), 1)
    # num_mel_bins triples (lower edge, centre, upper edge): the centre of each band is the
    # edge of its neighbours, so [lower, upper] is cut into num_mel_bins + 2 points
    edges = _linspace(_hertz_to_mel_scalar(lower_edge_hertz, t),
                      _hertz_to_mel_scalar(upper_edge_hertz, t), num_mel_bins + 2, dt)
    band_edges_mel = frame(edges, frame_length=3, frame_step=1)
    lower_edge_mel, center_mel, upper_edge_mel = (
        reshape(e, [1, num_mel_bins]) for e in split(band_edges_mel, 3, axis=1))
    # the filters are linear in mels, not in Hertz
    lower_slopes = (spectrogram_bins_mel - lower_edge_mel) / (center_mel - lower_edge_mel)
    upper_slopes = (upper_edge_mel - spectrogram_bins_mel) / (upper_edge_mel - center_mel)
    weights = maximum(minimum(lower_slopes, upper_slopes), 0.0)
    return pad(weights, [[1, 0], [0, 0]])


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """The mel-frequency cepstral coefficients of ``[..., num_mel_bins]`` log-magnitude mel
    spectrograms: their type-II DCT scaled by ``sqrt(2 / N) / 2`` (HTK's scaling; all
    ``num_mel_bins`` coefficients, keep the first few)."""
    x = as_tensor(log_mel_spectrograms, "mfccs_from_log_mel_spectrograms")
    if x._value.ndim and x.shape[-1] == 0:
        raise ValueError(f"num_mel_bins must be positive. Got: {tuple(x.shape)}")
    num_mel_bins = x.shape[-1]
    dct2 = dct(x, type=2)
    t = dct2.dtype.np.type
    return dct2 * float(t(1.0) / np.sqrt(t(num_mel_bins) * t(2.0)))


# --- discrete cosine transforms -----------------------------------------------------------------------

def _validate_dct(x, dct_type, n, axis, norm):
    if axis != -1:
        raise NotImplementedError(f"axis must be -1. Got: {axis}")
    if n is not None and n < 1:
        raise ValueError("n should be a positive integer or None")
    if dct_type not in (1, 2, 3, 4):
        raise ValueError("Types I, II, III and IV (I)DCT are supported.")
    if dct_type == 1:
        if norm == "ortho":
            raise ValueError("Normalization is not supported for the Type-I DCT.")
        if x._value.ndim and x.shape[-1] < 2:
            raise ValueError("Type-I DCT requires the dimension to be greater than one.")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")


def _dct_input(x, opname):
    x = as_tensor(x, opname)
    if x._value.dtype not in (np.float32, np.float64):
        raise ValueError(f"{opname}: expected a float32 or float64 tensor, got {dtype_name(x)}")
    if x._value.ndim < 1:
        raise ValueError(f"{opname}: input must have rank at least 1, got shape "
                         f"{tuple(x.shape)}")
    return x


def _ramp(x, length, factor):
    """``exp(i * k * factor)`` for ``k = 0 .. length - 1``, times 2, in ``x``'s complex
    dtype (on ``x``'s device)."""
    rdt = x._value.dtype
    t = rdt.type
    count = cast(_device_tensor(x, lambda xp: xp.arange(length, dtype=np.int32)), rdt)
    angle = count * float(t(factor))
    angle = angle * float(np.pi) * 0.5 / float(t(length))
    return exp(_complex(zeros_like(angle), angle)) * 2.0


def _dct_internal(x, dct_type, n, norm):
    t = x._value.dtype.type
    if n is not None:
        seq_len = x.shape[-1]
        if n <= seq_len:
            x = x[..., 0:n]
        else:
            x = pad(x, [[0, 0]] * (x.ndim - 1) + [[0, n - seq_len]])
    axis_dim = x.shape[-1]
    dim = t(axis_dim)
    if dct_type == 1:
        dct1_input = concat([x, x[..., -2:0:-1]], axis=-1)
        return real(rfft(dct1_input))
    if dct_type == 2:
        scale = _ramp(x, axis_dim, -1.0)
        dct2 = real(rfft(x, [2 * axis_dim])[..., :axis_dim] * scale)
        if norm == "ortho":
            n1 = t(0.5) * (t(1.0) / np.sqrt(dim))
            n2 = n1 * t(np.sqrt(2.0))
            weights = _device_tensor(x, lambda xp: xp.concatenate([
                xp.full((1,), n1, dtype=x._value.dtype),
                xp.full((axis_dim - 1,), n2, dtype=x._value.dtype)]))
            dct2 = dct2 * weights
        return dct2
    if dct_type == 3:
        if norm == "ortho":
            n1 = np.sqrt(dim)
            n2 = n1 * t(np.sqrt(0.5))
            weights = _device_tensor(x, lambda xp: xp.concatenate([
                xp.full((1,), n1, dtype=x._value.dtype),
                xp.full((axis_dim - 1,), n2, dtype=x._value.dtype)]))
            x = x * weights
        else:
            x = x * float(dim)
        scale = _ramp(x, axis_dim, 1.0)
        spectrum = scale * _complex(x, zeros_like(x))
        return irfft(spectrum, [2 * axis_dim])[..., :axis_dim]
    # type 4: the odd bins of the type-II DCT of the signal zero-padded to twice its length
    dct2 = _dct_internal(x, 2, 2 * axis_dim, None)
    dct4 = dct2[..., 1::2]
    if norm == "ortho":
        dct4 = dct4 * float(t(np.sqrt(0.5)) * (t(1.0) / np.sqrt(dim)))
    return dct4


def dct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The type I, II, III or IV discrete cosine transform of ``input``'s last axis
    (``scipy.fftpack.dct``'s): ``n`` crops or zero-pads that axis first; ``norm="ortho"``
    makes types II-IV orthonormal."""
    x = _dct_input(input, "dct")
    n = None if n is None else _static_int(n, "dct", "n")
    _validate_dct(x, type, n, axis, norm)
    return _dct_internal(x, type, n, norm)


def idct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The inverse DCT: type II and III invert each other, I and IV themselves. Without
    ``norm``, ``idct(dct(x)) = 2 * N * x`` (``2 * (N - 1) * x`` for type I); with
    ``norm="ortho"``, ``x``."""
    x = _dct_input(input, "idct")
    n = None if n is None else _static_int(n, "idct", "n")
    _validate_dct(x, type, n, axis, norm)
    return _dct_internal(x, {1: 1, 2: 3, 3: 2, 4: 4}[type], n, norm)
