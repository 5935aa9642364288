"""Keras 3's spectrogram layers (as ``tf.keras`` in TF 2.21), built from gradtape ops (so
differentiable with respect to the audio, and run on its device):

- ``MelSpectrogram``: ``keras.ops.stft`` of the audio (centred, reflect-padded frames,
  ``"hann"``/``"hamming"`` windows), its magnitude to the power ``mag_exp``, mapped to
  ``num_mel_bins`` mel bands by ``gt.signal.linear_to_mel_weight_matrix`` and, with
  ``power_to_db``, to decibels (``10 log10(max(x, min_power) / ref_power)``, floored at the
  maximum over the whole batch minus ``top_db``, as Keras); ``(..., num_mel_bins, frames)``.
- ``STFTSpectrogram``: the STFT as a strided 1-D convolution of each channel by trainable
  kernels made by ``keras.initializers.STFT``; modes ``"log"``, ``"magnitude"``, ``"psd"``,
  ``"real"``, ``"imag"``, ``"angle"``, ``"stft"``, ``"valid"``/``"same"`` padding, channels
  last or first, optionally a channel axis of its own (``expand_dims``).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .layers import InputSpec, Layer
from .tensor import Tensor, convert_to_tensor

__all__ = ["MelSpectrogram", "STFTSpectrogram"]


class MelSpectrogram(Layer):
    """Mel spectrograms of raw audio (``(samples,)`` or ``(batch, samples)``), as Keras'
    ``MelSpectrogram``: frames of ``sequence_length`` samples (``fft_length`` by default)
    every ``sequence_stride``, centred (the audio reflect-padded by ``fft_length // 2``),
    windowed (``"hann"``, ``"hamming"`` or None) and zero-padded to ``fft_length``; the
    magnitude of their FFT to the power ``mag_exp`` on ``num_mel_bins`` HTK mel bands from
    ``min_freq`` to ``max_freq`` (``sampling_rate / 2`` by default); with ``power_to_db``,
    ``10 log10(max(x, min_power)) - 10 log10(max(|ref_power|, min_power))`` floored at the
    largest value of the batch minus ``top_db``. Output ``(..., num_mel_bins, frames)``,
    ``frames = samples // sequence_stride + 1``, computed in float32 (float64 for a float64
    layer)."""

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None,
                 window="hann", sampling_rate=16000, num_mel_bins=128, min_freq=20.0,
                 max_freq=None, power_to_db=True, top_db=80.0, mag_exp=2.0, min_power=1e-10,
                 ref_power=1.0, **kwargs):
        self.fft_length = fft_length
        self.sequence_stride = sequence_stride
        self.sequence_length = sequence_length or fft_length
        if self.fft_length < self.sequence_length:
            raise ValueError(f"MelSpectrogram: `fft_length` must be greater than or equal to "
                             f"`sequence_length`. Received: `sequence_length`="
                             f"{self.sequence_length}, `fft_length`={self.fft_length}.")
        if isinstance(window, str) and window not in ("hann", "hamming"):
            raise ValueError(f'MelSpectrogram: If a string is passed to `window`, it must be '
                             f'one of `"hann"`, `"hamming"`. Received: window={window}')
        self.window = window
        self.sampling_rate = sampling_rate
        self.num_mel_bins = num_mel_bins
        self.min_freq = min_freq
        self.max_freq = max_freq or int(sampling_rate / 2)
        self.power_to_db = power_to_db
        self.top_db = top_db
        self.mag_exp = mag_exp
        self.min_power = min_power
        self.ref_power = ref_power
        super().__init__(**kwargs)

    _UNTRACKED = Layer._UNTRACKED | {"_mel_matrices"}

    def _work_dtype(self):
        return np.float64 if self._compute_dtype == np.float64 else np.float32

    def call(self, inputs):
        from .ops.core import cast
        dt = self._work_dtype()
        x = inputs if isinstance(inputs, Tensor) else convert_to_tensor(inputs)
        if x._value.dtype != dt:
            x = cast(x, dt)
        out = self._melscale(self._spectrogram(x))
        if self.power_to_db:
            out = self._dbscale(out)
        from .keras_ops import swapaxes
        out = swapaxes(out, -1, -2)
        return out if out._value.dtype == self._compute_dtype else cast(out,
                                                                          self._compute_dtype)

    def _spectrogram(self, x):
        from .keras_ops import stft
        from .ops.math import pow, sqrt, square
        real, imag = stft(x, sequence_length=self.sequence_length,
                          sequence_stride=self.sequence_stride, fft_length=self.fft_length,
                          window=self.window, center=True)
        return pow(sqrt(square(real) + square(imag)), self.mag_exp)

    def _melscale(self, spec):
        from .ops.linalg import tensordot
        dt = spec._value.dtype
        key = (spec._device, dt, int(spec.shape[-1]))
        cache = self.__dict__.setdefault("_mel_matrices", {})
        if key not in cache:
            from .backend import device_scope
            from .signal import linear_to_mel_weight_matrix
            with device_scope(spec._device):
                cache[key] = linear_to_mel_weight_matrix(
                    num_mel_bins=self.num_mel_bins, num_spectrogram_bins=int(spec.shape[-1]),
                    sample_rate=self.sampling_rate, lower_edge_hertz=self.min_freq,
                    upper_edge_hertz=self.max_freq, dtype=dt)
        return tensordot(spec, cache[key], axes=1)

    def _dbscale(self, x):
        from .ops.math import log, maximum
        from .ops.reduce import reduce_max
        t = x._value.dtype.type
        ln10 = float(np.log(t(10.0)).astype(t))
        log_spec = 10.0 * (log(maximum(x, self.min_power)) / ln10)
        ref = max(abs(float(self.ref_power)), float(self.min_power))
        log_spec = log_spec - float(t(10.0) * (np.log(t(ref)) / t(ln10)))
        return maximum(log_spec, reduce_max(log_spec) - self.top_db)

    def linear_to_mel_weight_matrix(self, num_mel_bins=20, num_spectrogram_bins=129,
                                    sampling_rate=8000, lower_edge_hertz=125.0,
                                    upper_edge_hertz=3800.0, dtype="float32"):
        """The ``[num_spectrogram_bins, num_mel_bins]`` HTK mel filter bank (Keras' method;
        ``gt.signal.linear_to_mel_weight_matrix``)."""
        from .signal import linear_to_mel_weight_matrix
        return linear_to_mel_weight_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate,
                                           lower_edge_hertz, upper_edge_hertz, dtype=dtype)

    def compute_output_shape(self, input_shape):
        def frames(n):
            return None if n is None else (n + self.sequence_stride + 1) // \
                self.sequence_stride
        if len(input_shape) == 1:
            return [self.num_mel_bins, frames(input_shape[0])]
        return [input_shape[0], self.num_mel_bins, frames(input_shape[1])]

    def get_config(self):
        return {**super().get_config(), "fft_length": self.fft_length,
                "sequence_stride": self.sequence_stride,
                "sequence_length": self.sequence_length, "window": self.window,
                "sampling_rate": self.sampling_rate, "num_mel_bins": self.num_mel_bins,
                "min_freq": self.min_freq, "max_freq": self.max_freq,
                "power_to_db": self.power_to_db, "top_db": self.top_db,
                "mag_exp": self.mag_exp, "min_power": self.min_power,
                "ref_power": self.ref_power}


_STFT_MODES = ["log", "magnitude", "psd", "real", "imag", "angle", "stft"]


class STFTSpectrogram(Layer):
    """Spectrograms of multi-channel signals ``(batch, time, channels)`` (channels first:
    ``(batch, channels, time)``), as Keras' ``STFTSpectrogram``: each channel convolved, with
    stride ``frame_step`` (``frame_length // 2``) and ``padding``, by the trainable
    ``real_kernel`` and ``imag_kernel`` (``frame_length, 1, fft_length // 2 + 1``, made by
    ``keras.initializers.STFT`` with ``window``, ``scaling`` and ``periodic``; ``fft_length``
    defaults to the power of two at or above ``frame_length``). ``mode``: ``"real"``,
    ``"imag"``, ``"angle"``, ``"stft"`` (real then imaginary bins), ``"psd"`` (power, the
    inner bins doubled), ``"magnitude"`` (``sqrt(max(power, epsilon))``), ``"log"`` (its
    log, floored at ``epsilon``). Output ``(batch, frames, channels * bins)`` (channels
    first: ``(batch, channels * bins, frames)``), or with ``expand_dims`` ``(batch, frames,
    bins, channels)`` (``(batch, channels, frames, bins)``)."""

    autocast = False

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None,
                 window="hann", periodic=False, scaling="density", padding="valid",
                 expand_dims=False, data_format=None, **kwargs):
        from .initializers import get_window
        if frame_step is not None and (frame_step > frame_length or frame_step < 1):
            raise ValueError(f"STFTSpectrogram: `frame_step` should be a positive integer not "
                             f"greater than `frame_length`. Received frame_step={frame_step}, "
                             f"frame_length={frame_length}")
        if fft_length is not None and fft_length < frame_length:
            raise ValueError(f"STFTSpectrogram: `fft_length` should be not less than "
                             f"`frame_length`. Received fft_length={fft_length}, "
                             f"frame_length={frame_length}")
        if fft_length is not None and (fft_length & -fft_length) != fft_length:
            warnings.warn(f"`fft_length` is recommended to be a power of two. Received "
                          f"fft_length={fft_length}", stacklevel=2)
        if mode not in _STFT_MODES:
            raise ValueError(f"STFTSpectrogram: Output mode is invalid, it must be one of "
                             f"{', '.join(_STFT_MODES)}. Received: mode={mode}")
        if scaling is not None and scaling not in ["density", "spectrum"]:
            raise ValueError(f"STFTSpectrogram: Scaling is invalid, it must be `None`, "
                             f"'density' or 'spectrum'. Received scaling={scaling}")
        if padding not in ["valid", "same"]:
            raise ValueError(f"STFTSpectrogram: Padding is invalid, it should be 'valid', "
                             f"'same'. Received: padding={padding}")
        if data_format is None:
            data_format = "channels_last"
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(f'STFTSpectrogram: The `data_format` argument must be one of '
                             f'{{"channels_first", "channels_last"}}. Received: '
                             f"data_format={data_format}")
        if isinstance(window, str):
            get_window(window, 1)                   # (an unknown window fails here)
        super().__init__(**kwargs)
        self.mode = mode
        self.frame_length = frame_length
        self.frame_step = frame_step
        self._frame_step = frame_step or frame_length // 2
        self.fft_length = fft_length
        self._fft_length = fft_length or 2 ** int(math.ceil(math.log2(frame_length)))
        self.window = window
        self.periodic = periodic
        self.scaling = scaling
        self.padding = padding
        self.expand_dims = expand_dims
        self.data_format = data_format
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        from .initializers import STFT
        shape = (self.frame_length, 1, self._fft_length // 2 + 1)
        if self.mode != "imag":
            self.real_kernel = self.add_weight(
                name="real_kernel", shape=shape,
                initializer=STFT("real", self.window, self.scaling, self.periodic))
        if self.mode != "real":
            self.imag_kernel = self.add_weight(
                name="imag_kernel", shape=shape,
                initializer=STFT("imag", self.window, self.scaling, self.periodic))

    def _apply_conv(self, x, kernel):
        """``[batch, channels, bins, frames]``: each channel convolved by ``kernel``."""
        from .keras_ops import conv
        from .ops.core import cast
        from .ops.shape import reshape, transpose
        if self.data_format == "channels_last":
            _, time, channels = x.shape
            x = transpose(x, [0, 2, 1])
        else:
            _, channels, time = x.shape
        x = reshape(x, [-1, int(time), 1])
        if kernel._value.dtype != x._value.dtype:
            kernel = cast(kernel, x._value.dtype)
        out = conv(x, kernel, strides=self._frame_step, padding=self.padding)
        _, frames, bins = out.shape
        return reshape(transpose(out, [0, 2, 1]), [-1, int(channels), int(bins), int(frames)])

    def _adjust_shapes(self, out):
        from .ops.shape import reshape, transpose
        _, channels, bins, frames = out.shape
        if self.expand_dims:
            return transpose(out, [0, 3, 2, 1] if self.data_format == "channels_last"
                             else [0, 1, 3, 2])
        out = reshape(out, [-1, int(channels) * int(bins), int(frames)])
        return transpose(out, [0, 2, 1]) if self.data_format == "channels_last" else out

    def call(self, inputs):
        from .constraints import epsilon
        from .ops.core import cast
        from .ops.extra import atan2
        from .ops.math import log, maximum, sqrt, square
        from .ops.shape import concat, pad
        x = inputs
        if x._value.dtype.kind != "f":
            raise TypeError(f"STFTSpectrogram layer '{self.name}': Invalid input type. "
                            f"Expected `float16`, `float32` or `float64`. Received: input "
                            f"type={x.dtype.name}")
        if x._value.dtype != self._compute_dtype:
            x = cast(x, self._compute_dtype)           # (Keras' autocasting of floats)
        real = self._apply_conv(x, self.real_kernel) if self.mode != "imag" else None
        imag = self._apply_conv(x, self.imag_kernel) if self.mode != "real" else None
        if self.mode == "real":
            return self._adjust_shapes(real)
        if self.mode == "imag":
            return self._adjust_shapes(imag)
        if self.mode == "angle":
            return self._adjust_shapes(atan2(imag, real))
        if self.mode == "stft":
            return self._adjust_shapes(concat([real, imag], axis=2))
        power = square(real) + square(imag)
        if self.mode == "psd":
            return self._adjust_shapes(
                power + pad(power[:, :, 1:-1, :], [[0, 0], [0, 0], [1, 1], [0, 0]]))
        eps = epsilon()
        linear = self._adjust_shapes(sqrt(maximum(power, eps)))
        if self.mode == "magnitude":
            return linear
        return log(maximum(linear, eps))

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_last":
            channels, time = input_shape[-1], input_shape[1]
        else:
            channels, time = input_shape[1], input_shape[-1]
        bins = self._fft_length // 2 + 1
        if self.mode == "stft":
            bins *= 2
        if time is None:
            frames = None
        elif self.padding == "same":
            frames = (time + self._frame_step - 1) // self._frame_step
        else:
            frames = (time - self.frame_length) // self._frame_step + 1
        if self.expand_dims:
            if self.data_format == "channels_last":
                return (input_shape[0], frames, bins, channels)
            return (input_shape[0], channels, frames, bins)
        width = None if channels is None else bins * channels
        if self.data_format == "channels_last":
            return (input_shape[0], frames, width)
        return (input_shape[0], width, frames)

    def get_config(self):
        window = self.window
        if isinstance(window, np.ndarray):
            window = window.tolist()
        return {**super().get_config(), "mode": self.mode,
                "frame_length": self.frame_length, "frame_step": self.frame_step,
                "fft_length": self.fft_length, "window": window, "periodic": self.periodic,
                "scaling": self.scaling, "padding": self.padding,
                "data_format": self.data_format, "expand_dims": self.expand_dims}
