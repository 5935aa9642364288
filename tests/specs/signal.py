"""Specs for gt.signal: the transform primitives (fft, ifft, rfft, irfft) through every
public transform, and the functions composed from them (framing, STFTs, DCTs, MFCCs).

Specs take and give real values: complex inputs are made with gt.complex and complex
outputs are turned back into real ones by ``_out`` (``|z|^2 + imag(z)``: smooth, with
non-zero second derivatives)."""
from __future__ import annotations

import gradtape as gt
from gradtape import signal as S
from . import Spec


def _c(x, y):
    return gt.complex(x, y)


def _out(z):
    """A real, smooth, non-linear function of complex values."""
    return gt.math.real(z * gt.math.conj(z)) + gt.math.imag(z)


def _rout(x):
    """A real, smooth, non-linear function of real values."""
    return x * x + x


def _pair(*shape):
    return [(shape, shape)]


SPECS = [
    # --- complex to complex ---
    Spec("fft", lambda x, y: _out(S.fft(_c(x, y))), _pair(8) + _pair(3, 5),
         ops=("fft", "complex", "real", "imag", "conj")),
    Spec("fft2d", lambda x, y: _out(S.fft2d(_c(x, y))), _pair(3, 4) + _pair(2, 3, 5),
         ops=("fft",)),
    Spec("fft3d", lambda x, y: _out(S.fft3d(_c(x, y))), _pair(2, 3, 4), ops=("fft",)),
    Spec("ifft", lambda x, y: _out(S.ifft(_c(x, y))), _pair(8) + _pair(3, 5), ops=("ifft",)),
    Spec("ifft2d", lambda x, y: _out(S.ifft2d(_c(x, y))), _pair(3, 4), ops=("ifft",)),
    Spec("ifft3d", lambda x, y: _out(S.ifft3d(_c(x, y))), _pair(2, 3, 4), ops=("ifft",)),
    Spec("fftnd", lambda x, y: _out(S.fftnd(_c(x, y), fft_length=[4], axes=[0], norm="ortho"))[:3]
         + _out(S.ifftnd(_c(y, x), axes=[-1, 0])),
         _pair(3, 5), ops=("fft", "ifft")),
    # --- real to complex (even and odd lengths, cropped and padded) ---
    Spec("rfft", lambda x: _out(S.rfft(x)), [((8,),), ((3, 7),)], ops=("rfft",)),
    Spec("rfft_crop", lambda x: _out(S.rfft(x, [5])), [((2, 8),)], ops=("rfft",)),
    Spec("rfft_pad", lambda x: _out(S.rfft(x, [10])), [((2, 7),)], ops=("rfft",)),
    Spec("rfft2d", lambda x: _out(S.rfft2d(x)), [((4, 6),), ((2, 3, 5),)], ops=("rfft",)),
    Spec("rfft2d_length", lambda x: _out(S.rfft2d(x, [2, 7])), [((3, 4),)], ops=("rfft",)),
    Spec("rfft3d", lambda x: _out(S.rfft3d(x)), [((2, 3, 4),)], ops=("rfft",)),
    Spec("rfftnd", lambda x: _out(S.rfftnd(x, axes=[0, 2], norm="forward")), [((3, 2, 5),)],
         ops=("rfft",)),
    # --- complex to real ---
    Spec("irfft", lambda x, y: _rout(S.irfft(_c(x, y))), _pair(5) + _pair(3, 4),
         ops=("irfft",)),
    Spec("irfft_odd", lambda x, y: _rout(S.irfft(_c(x, y), [7])), _pair(2, 5),
         ops=("irfft",)),
    Spec("irfft_pad", lambda x, y: _rout(S.irfft(_c(x, y), [12])), _pair(2, 4),
         ops=("irfft",)),
    Spec("irfft2d", lambda x, y: _rout(S.irfft2d(_c(x, y))), _pair(3, 4) + _pair(2, 3, 3),
         ops=("irfft",)),
    Spec("irfft2d_odd", lambda x, y: _rout(S.irfft2d(_c(x, y), [2, 5])), _pair(3, 4),
         ops=("irfft",)),
    Spec("irfft3d", lambda x, y: _rout(S.irfft3d(_c(x, y))), _pair(2, 3, 3),
         ops=("irfft",)),
    Spec("irfftnd", lambda x, y: _rout(S.irfftnd(_c(x, y), fft_length=[3, 4], axes=[1, 0],
                                                 norm="ortho")), _pair(3, 3),
         ops=("irfft",)),
    # --- composed functions ---
    Spec("fftshift", lambda x: _rout(S.fftshift(x) + S.ifftshift(x, axes=[-1])),
         [((3, 5),)]),
    Spec("frame", lambda x: _rout(S.frame(x, 4, 3, pad_end=True, pad_value=0.5)),
         [((11,),), ((2, 9),)]),
    Spec("frame_axis", lambda x: _rout(S.frame(x, 2, 1, axis=0)), [((4, 3),)]),
    Spec("overlap_and_add", lambda x: _rout(S.overlap_and_add(x, 2)),
         [((3, 5),), ((2, 4, 3),)]),
    Spec("stft", lambda x: _out(S.stft(x, 8, 3, pad_end=True)), [((20,),), ((2, 14),)]),
    Spec("inverse_stft", lambda x, y: _rout(S.inverse_stft(
        _c(x, y), 8, 3, window_fn=S.inverse_stft_window_fn(3))), _pair(3, 5)),
    Spec("dct", lambda x: _rout(S.dct(x, type=1) + S.dct(x, type=2, norm="ortho")
                                + S.dct(x, type=3) + S.dct(x, type=4, norm="ortho")),
         [((6,),), ((2, 5),)]),
    Spec("idct", lambda x: _rout(S.idct(x, type=2, n=4) + S.idct(x, type=3, norm="ortho",
                                                                   n=4)), [((2, 6),)]),
    Spec("mfccs", lambda x: _rout(S.mfccs_from_log_mel_spectrograms(x)), [((3, 6),)]),
    Spec("mdct", lambda x: _rout(S.inverse_mdct(S.mdct(x, 8) * 0.5)), [((24,),)]),
]
