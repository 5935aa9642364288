"""gt.signal: Fourier transforms, framing, STFTs, windows, mel filters, MFCCs and DCTs.

Values are checked against NumPy's transforms and direct formulas, and against TensorFlow's
results where the formula is TensorFlow's own (windows, mel matrix, gradients): those
hard-coded reference values are TensorFlow's. Gradients are also checked against finite
differences in float64 (complex inputs composed as real -> gt.complex -> op -> real)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import signal as S
from gradtape.testing import check_grads

RNG = np.random.default_rng(0)


def _cplx(shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _real(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _close(got, expected, dtype=None, scale=None):
    got = got.numpy() if isinstance(got, gt.Tensor) else got
    tol = _tol(dtype if dtype is not None else got.dtype)
    scale = max(1.0, float(np.abs(expected).max()) if np.size(expected) else 1.0) \
        if scale is None else scale
    np.testing.assert_allclose(got, expected, rtol=tol * 10, atol=tol * 10 * scale)


# --- NumPy references --------------------------------------------------------------------------

def np_frame(x, fl, fs, pad_end=False, pad_value=0.0, axis=-1):
    axis %= x.ndim
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    if pad_end:
        nf = -(-n // fs)
        extra = max(0, fl + fs * (nf - 1) - n)
        x = np.concatenate([x, np.full(x.shape[:-1] + (extra,), pad_value, x.dtype)], -1)
    else:
        nf = max(0, 1 + (n - fl) // fs)
    frames = np.zeros(x.shape[:-1] + (nf, fl), x.dtype)
    for i in range(nf):
        frames[..., i, :] = x[..., i * fs:i * fs + fl]
    return np.moveaxis(frames, (-2, -1), (axis, axis + 1))


def np_overlap_and_add(x, step):
    frames, fl = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + ((frames - 1) * step + fl,), x.dtype)
    for i in range(frames):
        out[..., i * step:i * step + fl] += x[..., i, :]
    return out


def np_hann(n, periodic=True):
    """TensorFlow's Hann window: periodic (denominator n) only for even lengths."""
    if n == 1:
        return np.ones(1)
    denom = n if periodic and n % 2 == 0 else n - 1
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / denom)


def np_dct_matrix(n, kind, ortho=False):
    """The matrix M with dct(x) = x @ M (scipy.fftpack's definitions)."""
    k = np.arange(n)[None, :]
    j = np.arange(n)[:, None]
    if kind == 1:
        m = 2 * np.cos(np.pi * k * j / (n - 1))
        m[0, :] = 1.0
        m[-1, :] = (-1.0) ** np.arange(n)
        return m
    if kind == 2:
        m = 2 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
        if ortho:
            m[:, 0] *= np.sqrt(1 / (4 * n))
            m[:, 1:] *= np.sqrt(1 / (2 * n))
        return m
    if kind == 3:
        m = 2 * np.cos(np.pi * (2 * k + 1) * j / (2 * n))
        m[0, :] = 1.0
        if ortho:
            m[0, :] /= np.sqrt(n)
            m[1:, :] *= np.sqrt(1 / (2 * n))
        return m
    m = 2 * np.cos(np.pi * (2 * k + 1) * (2 * j + 1) / (4 * n))
    return m * np.sqrt(1 / (2 * n)) if ortho else m


# --- complex transforms -------------------------------------------------------------------------

C2C = [("fft", np.fft.fftn, 1), ("ifft", np.fft.ifftn, 1), ("fft2d", np.fft.fftn, 2),
       ("ifft2d", np.fft.ifftn, 2), ("fft3d", np.fft.fftn, 3), ("ifft3d", np.fft.ifftn, 3)]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name,ref,rank", C2C, ids=[c[0] for c in C2C])
def test_complex_transforms_match_numpy(device, name, ref, rank, dtype):
    z = _cplx((2, 3, 4, 5), dtype)
    out = getattr(S, name)(gt.constant(z))
    assert out.dtype == gt.as_dtype(dtype) and out.shape == z.shape
    assert out.device == device.name
    _close(out, ref(z.astype(np.complex128), axes=tuple(range(-rank, 0))), dtype)


def test_complex_transform_inputs_and_errors():
    # non-tensors convert preferring complex64 (Python complex numbers give complex128)
    assert S.fft([1.0, 2.0, 3.0]).dtype == gt.complex64
    assert S.fft([1.0 + 1j, 2.0]).dtype == gt.complex128
    np.testing.assert_allclose(S.ifft([1.0, 2.0]).numpy(), [1.5, -0.5])
    with pytest.raises(gt.errors.InvalidArgumentError, match="complex"):
        S.fft(gt.constant([1.0, 2.0]))
    with pytest.raises(gt.errors.InvalidArgumentError, match="rank of at least 1"):
        S.fft(gt.constant(1 + 0j))
    with pytest.raises(gt.errors.InvalidArgumentError, match="rank of at least 2"):
        S.fft2d(gt.constant([1 + 0j, 2.0]))
    empty = S.fft(gt.constant(np.zeros((2, 0), np.complex64)))
    assert empty.shape == (2, 0) and empty.dtype == gt.complex64


# --- real transforms -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rfft_matches_numpy(device, dtype):
    x = _real((2, 3, 6, 7), dtype)
    x64 = x.astype(np.float64)
    cdt = gt.complex64 if dtype == np.float32 else gt.complex128
    for rank, lengths in ((1, [None, [5], [7], [10], [1]]),
                          (2, [None, [2, 5], [9, 12], [7, 6]]),
                          (3, [None, [3, 6, 7], [2, 4, 8], [4, 9, 5]])):
        fn = {1: S.rfft, 2: S.rfft2d, 3: S.rfft3d}[rank]
        for n in lengths:
            out = fn(gt.constant(x), n)
            expected = np.fft.rfftn(x64, s=n, axes=tuple(range(-rank, 0)))
            assert out.dtype == cdt and out.shape == expected.shape, (rank, n)
            _close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_irfft_matches_numpy(device, dtype):
    y = _cplx((2, 3, 6, 5), dtype)
    rdt = gt.float32 if dtype == np.complex64 else gt.float64
    for rank, lengths in ((1, [None, [8], [9], [4], [5], [20], [1], [2]]),
                          (2, [None, [6, 8], [4, 9], [9, 3], [3, 12]]),
                          (3, [None, [3, 6, 8], [2, 7, 9], [4, 4, 4]])):
        fn = {1: S.irfft, 2: S.irfft2d, 3: S.irfft3d}[rank]
        for n in lengths:
            out = fn(gt.constant(y), n)
            expected = np.fft.irfftn(y.astype(np.complex128), s=n, axes=tuple(range(-rank, 0)))
            assert out.dtype == rdt and out.shape == expected.shape, (rank, n)
            _close(out, expected, dtype)


def test_irfft_ignores_imaginary_parts_of_zero_and_nyquist_bins(device):
    y = gt.constant(np.array([[1 + 1j, 2 - 1j, 0.5 + 3j]], np.complex64))
    # TensorFlow gives [[1.375, 0.625, -0.625, -0.375]]
    np.testing.assert_allclose(S.irfft(y).numpy(), [[1.375, 0.625, -0.625, -0.375]],
                               rtol=1e-6)
    np.testing.assert_allclose(S.irfft(y, [5]).numpy(),
                               np.fft.irfft(np.array([[1, 2 - 1j, 0.5 + 3j]]), 5), rtol=1e-5)


def test_real_transform_inputs_and_errors():
    assert S.rfft([1, 2, 3, 4]).dtype == gt.complex64          # lists: float32
    assert S.rfft(np.ones(4)).dtype == gt.complex64              # NumPy float64 too, as TF
    assert S.irfft([1.0, 2.0, 3.0]).dtype == gt.float32
    assert S.irfft(np.ones(3, np.complex128)).shape == (4,)
    for bad in (gt.constant([1, 2]), gt.constant([1 + 0j, 2.0]),
                gt.constant([1.0, 2.0], gt.float16)):
        with pytest.raises(ValueError, match="float32 or float64"):
            S.rfft(bad)
    with pytest.raises(ValueError, match="complex64 or complex128"):
        S.irfft(gt.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="rank of at least 2"):
        S.rfft2d(gt.constant([1.0, 2.0]))
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"shape \[1\]"):
        S.rfft(gt.constant([1.0, 2.0]), [2, 2])
    with pytest.raises(ValueError, match="must be >= 0"):
        S.rfft(gt.constant([1.0, 2.0]), [-2])
    assert S.rfft(gt.constant(np.zeros((2, 0), np.float32))).shape == (2, 0)


def test_nd_transforms_over_chosen_axes():
    z = _cplx((3, 4, 5))
    _close(S.fftnd(gt.constant(z)), np.fft.fftn(z))
    _close(S.fftnd(gt.constant(z), fft_length=[6, 2], axes=[0, 2], norm="ortho"),
           np.fft.fftn(z, s=[6, 2], axes=[0, 2], norm="ortho"))
    _close(S.ifftnd(gt.constant(z), axes=[1], norm="forward"),
           np.fft.ifftn(z, axes=[1], norm="forward"))
    x = _real((3, 4, 5))
    _close(S.rfftnd(gt.constant(x), axes=[2, 0]), np.fft.rfftn(x, axes=[2, 0]))
    _close(S.irfftnd(gt.constant(z), fft_length=[5, 7], axes=[0, 1], norm="ortho"),
           np.fft.irfftn(z, s=[5, 7], axes=[0, 1], norm="ortho"))
    with pytest.raises(ValueError, match="norm"):
        S.fftnd(gt.constant(z), norm="bad")


def test_fftshift_matches_tensorflow_examples(device):
    x = S.fftshift(gt.constant([0., 1., 2., 3., 4., -5., -4., -3., -2., -1.]))
    np.testing.assert_array_equal(x.numpy(), [-5., -4., -3., -2., -1., 0., 1., 2., 3., 4.])
    x = S.ifftshift(gt.constant([[0., 1., 2.], [3., 4., -4.], [-3., -2., -1.]]))
    np.testing.assert_array_equal(x.numpy(), [[4., -4., 3.], [-2., -1., -3.], [1., 2., 0.]])
    a = np.arange(30.).reshape(5, 6)
    np.testing.assert_array_equal(S.fftshift(gt.constant(a), axes=-1).numpy(),
                                  np.fft.fftshift(a, axes=-1))
    np.testing.assert_array_equal(S.ifftshift(gt.constant(a), axes=[0]).numpy(),
                                  np.fft.ifftshift(a, axes=0))


# --- framing ---------------------------------------------------------------------------------

FRAMES = [(5, 2, False), (5, 2, True), (6, 4, False), (6, 4, True), (4, 4, True), (3, 5, False),
          (3, 5, True), (30, 4, False), (30, 4, True), (8, 3, True)]


@pytest.mark.parametrize("fl,fs,pad_end", FRAMES)
def test_frame_matches_numpy(device, fl, fs, pad_end):
    x = _real((2, 3, 23), np.float32)
    out = S.frame(gt.constant(x), fl, fs, pad_end=pad_end, pad_value=7.5)
    expected = np_frame(x, fl, fs, pad_end, 7.5)
    assert out.shape == expected.shape and out.dtype == gt.float32
    np.testing.assert_array_equal(out.numpy(), expected)


def test_frame_axis_and_tensorflow_shapes():
    x = _real((4, 5, 6))
    for axis in (0, 1, -2):
        np.testing.assert_array_equal(
            S.frame(gt.constant(x), 2, 1, axis=axis, pad_end=True, pad_value=-1.0).numpy(),
            np_frame(x, 2, 1, True, -1.0, axis))
    # TensorFlow's docstring: 9152 samples, 512 per frame every 180: 49 frames, 51 padded
    audio = gt.zeros([3, 9152])
    assert S.frame(audio, 512, 180).shape == (3, 49, 512)
    assert S.frame(audio, 512, 180, pad_end=True).shape == (3, 51, 512)
    assert S.frame(gt.constant(np.zeros((2, 3), np.float32)), 5, 2).shape == (2, 0, 5)
    with pytest.raises(ValueError, match="rank at least 1"):
        S.frame(gt.constant(1.0), 2, 1)


@pytest.mark.parametrize("step", [1, 2, 3, 4, 6, 8])
def test_overlap_and_add_matches_numpy(device, step):
    x = _real((2, 5, 6), np.float32)
    _close(S.overlap_and_add(gt.constant(x), step), np_overlap_and_add(x, step))


def test_overlap_and_add_complex_and_errors():
    z = _cplx((3, 4), np.complex64)
    out = S.overlap_and_add(gt.constant(z), 2)
    assert out.dtype == gt.complex64
    _close(out, np_overlap_and_add(z, 2), np.complex64)
    with pytest.raises(ValueError, match="rank at least 2"):
        S.overlap_and_add(gt.constant([1.0, 2.0]), 1)
    with pytest.raises(ValueError, match="integer"):
        S.overlap_and_add(gt.constant(z), 2.0)


# --- windows ------------------------------------------------------------------------------------

# TensorFlow's windows
HANN8 = [0., 0.146446645, 0.5, 0.853553355, 1., 0.853553355, 0.5, 0.146446466]
HANN7_SYMMETRIC = [0., 0.25, 0.75, 1., 0.74999994, 0.249999821, 0.]
HAMMING8 = [0.080000013, 0.214730918, 0.540000021, 0.865269125, 1., 0.865269125, 0.540000021,
            0.214730769]
KAISER7 = [5.277344826e-05, 5.475932360e-02, 5.188446045e-01, 1.0, 5.188446045e-01,
           5.475932360e-02, 5.277344826e-05]
KAISER8_BETA35 = [0.135534331, 0.429046065, 0.755146265, 0.970289946, 0.970289946,
                  0.755146265, 0.429046065, 0.135534331]
KBD8 = [0.006071829, 0.388206184, 0.921572566, 0.999981523, 0.999981523, 0.921572566,
        0.388206184, 0.006071829]
KBD9_BETA5 = [0.129794523, 0.520144284, 0.854078352, 0.991540909, 0.991540909, 0.854078352,
              0.520144284, 0.129794523]
VORBIS8 = [0.059749275, 0.466066241, 0.884749889, 0.99821341, 0.99821341, 0.88474977,
           0.466066152, 0.059749264]


def test_windows_match_tensorflow(device):
    cases = [(S.hann_window(8), HANN8), (S.hann_window(7, periodic=False), HANN7_SYMMETRIC),
             (S.hamming_window(8), HAMMING8), (S.kaiser_window(7), KAISER7),
             (S.kaiser_window(8, 3.5), KAISER8_BETA35),
             (S.kaiser_bessel_derived_window(8), KBD8),
             (S.kaiser_bessel_derived_window(9, 5.0), KBD9_BETA5),  # (8 samples, as TF)
             (S.vorbis_window(8), VORBIS8)]
    for got, expected in cases:
        assert got.dtype == gt.float32 and got.shape == (len(expected),)
        assert got.device == device.name
        np.testing.assert_allclose(got.numpy(), expected, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 16])
def test_windows_formulas_and_dtypes(n):
    for periodic in (True, False):
        ref = np_hann(n, periodic)
        for dt in (gt.float32, gt.float64):
            w = S.hann_window(n, periodic=periodic, dtype=dt)
            assert w.dtype == dt
            np.testing.assert_allclose(w.numpy(), ref, atol=1e-6)
        h = S.hamming_window(n, periodic=periodic, dtype=gt.float64).numpy()
        np.testing.assert_allclose(h, 0.54 - 0.46 / 0.5 * (0.5 - ref) if n > 1 else [1.0],
                                   atol=1e-12)
        assert S.hann_window(n, periodic, dtype=gt.float16).dtype == gt.float16
    np.testing.assert_allclose(S.kaiser_window(n, 4.0, dtype=gt.float64).numpy(),
                               np.kaiser(n, 4.0), rtol=1e-10, atol=1e-14)
    k = np.arange(n)
    np.testing.assert_allclose(S.vorbis_window(n, dtype=gt.float64).numpy(),
                               np.sin(np.pi / 2 * np.sin(np.pi * (k + 0.5) / n) ** 2))
    with pytest.raises(ValueError, match="floating point"):
        S.hann_window(4, dtype=gt.int32)


# --- STFT --------------------------------------------------------------------------------------

def np_stft(x, fl, fs, fft_length=None, window=True, pad_end=False):
    fft_length = fft_length or int(2 ** np.ceil(np.log2(fl)))
    frames = np_frame(x, fl, fs, pad_end)
    if window:
        frames = frames * np_hann(fl)
    return np.fft.rfft(frames, n=fft_length)


def test_stft_matches_numpy(device):
    x = _real((2, 1000), np.float32)
    x64 = x.astype(np.float64)
    for fl, fs, fft_length, pad_end in ((255, 128, None, False), (200, 80, 256, True),
                                        (200, 80, 128, False), (64, 32, None, False)):
        out = S.stft(gt.constant(x), fl, fs, fft_length=fft_length, pad_end=pad_end)
        expected = np_stft(x64, fl, fs, fft_length, pad_end=pad_end)
        assert out.dtype == gt.complex64 and out.shape == expected.shape
        _close(out, expected, np.float32)
    out = S.stft(gt.constant(x64), 64, 32, window_fn=None)
    assert out.dtype == gt.complex128
    _close(out, np_stft(x64, 64, 32, window=False))


def test_stft_matches_tensorflow():
    sig = gt.constant(np.sin(np.arange(20) * 0.7).astype(np.float32))
    expected = np.array([
        [0.779774964, -0.679289937 - 1.829669237j, 0.278051168 + 0.797987223j,
         0.009313643 + 0.027356327j, 0.004075289],
        [-1.469442725, 1.280084372 + 1.506044626j, -0.523972034 - 0.65684247j,
         -0.017551064 - 0.022517622j, -0.00767982],
        [1.989308357, -1.732958317 - 1.008388758j, 0.709345162 + 0.43979615j,
         0.023760498 + 0.015076995j, 0.010396838],
        [-2.279299021, 1.985579729 + 0.394208133j, -0.812749684 - 0.171929061j,
         -0.027224302 - 0.00589402j, -0.011912584]])
    np.testing.assert_allclose(S.stft(sig, 8, 4).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_inverse_stft_reconstructs_and_matches_numpy(device):
    x = _real((2, 1000), np.float32)
    st = S.stft(gt.constant(x), 400, 160)
    back = S.inverse_stft(st, 400, 160, window_fn=S.inverse_stft_window_fn(160))
    assert back.dtype == gt.float32 and back.shape == (2, 880)
    # exact where every sample is covered by the full set of overlapping frames
    np.testing.assert_allclose(back.numpy()[:, 320:560], x[:, 320:560], atol=2e-5)
    plain = S.inverse_stft(st, 400, 160).numpy()
    frames = np.fft.irfft(st.numpy().astype(np.complex128), 512)[..., :400] * np_hann(400)
    np.testing.assert_allclose(plain, np_overlap_and_add(frames, 160), atol=2e-5)
    padded = S.inverse_stft(st, 600, 160, fft_length=512, window_fn=None).numpy()
    frames = np.fft.irfft(st.numpy().astype(np.complex128), 512)
    frames = np.concatenate([frames, np.zeros(frames.shape[:-1] + (88,))], -1)
    np.testing.assert_allclose(padded, np_overlap_and_add(frames, 160), atol=2e-5)


def test_inverse_stft_window_fn_matches_tensorflow():
    w = S.inverse_stft_window_fn(3)(8, dtype=gt.float32)
    np.testing.assert_allclose(w.numpy(), [0., 0.140423432, 0.510958314, 0.872260392,
                                           0.958871007, 0.872260392, 0.510958314,
                                           0.140423268], rtol=2e-6, atol=1e-7)


# --- mel and MFCCs --------------------------------------------------------------------------------

MEL_SMALL = np.array([  # TensorFlow's linear_to_mel_weight_matrix(4, 9, 8000, 125.0, 3800.0)
    [0., 0., 0., 0.],
    [0.895653844, 0.104346149, 0., 0.],
    [0., 0.869078219, 0.130921781, 0.],
    [0., 0.109170303, 0.890829682, 0.],
    [0., 0., 0.505572975, 0.494427055],
    [0., 0., 0.004824332, 0.99517566],
    [0., 0., 0., 0.576924384],
    [0., 0., 0., 0.203344733],
    [0., 0., 0., 0.]])
MEL_DEFAULT_COLUMN_SUMS = [  # TensorFlow's default matrix (20 x 129), summed per mel band
    2.285471439, 2.485195398, 2.709531307, 2.977631569, 3.205300331, 3.420204163, 3.77644968,
    4.096006393, 4.393705368, 4.78977108, 5.187715054, 5.61691618, 6.122586727, 6.594091415,
    7.170044899, 7.769453049, 8.434292793, 9.121258736, 9.916668892, 10.728545189]
MEL80_COLUMN_SUMS = [1.411000848, 1.623628259, 1.554951787, 1.586351514, 1.794189334,
                     1.689085245, 1.764513731, 1.835162401, 1.901482344, 1.963862062]


def np_mel(num_mel, num_bins, rate, lo, hi):
    """HTK's triangles, float64: mel(f) = 2595 log10(1 + f / 700), DC bin excluded."""
    def mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)
    bins = mel(np.linspace(0.0, rate / 2, num_bins))[1:, None]
    edges = np.linspace(mel(lo), mel(hi), num_mel + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    w = np.maximum(0.0, np.minimum((bins - lower) / (center - lower),
                                   (upper - bins) / (upper - center)))
    return np.concatenate([np.zeros((1, num_mel)), w])


def test_linear_to_mel_weight_matrix_matches_tensorflow(device):
    m = S.linear_to_mel_weight_matrix(4, 9, 8000, 125.0, 3800.0)
    assert m.dtype == gt.float32 and m.shape == (9, 4)
    np.testing.assert_allclose(m.numpy(), MEL_SMALL, rtol=2e-5, atol=1e-6)
    m = S.linear_to_mel_weight_matrix()
    assert m.shape == (129, 20)
    np.testing.assert_allclose(m.numpy().sum(0), MEL_DEFAULT_COLUMN_SUMS, rtol=2e-5)
    m = S.linear_to_mel_weight_matrix(80, 513, 16000, 80.0, 7600.0)
    np.testing.assert_allclose(m.numpy().sum(0)[:10], MEL80_COLUMN_SUMS, rtol=2e-5)
    np.testing.assert_allclose(m.numpy()[100][m.numpy()[100] > 0], [0.522277594, 0.477722406],
                               rtol=2e-5)
    m64 = S.linear_to_mel_weight_matrix(64, 257, 22050, 0.0, 11025.0, dtype=gt.float64)
    assert m64.dtype == gt.float64
    np.testing.assert_allclose(m64.numpy(), np_mel(64, 257, 22050, 0.0, 11025.0), atol=1e-10)


def test_linear_to_mel_weight_matrix_errors():
    with pytest.raises(ValueError, match="Nyquist"):
        S.linear_to_mel_weight_matrix(10, 10, 100, 1.0, 60.0)
    with pytest.raises(ValueError, match=">= upper_edge_hertz"):
        S.linear_to_mel_weight_matrix(10, 10, 100, 10.0, 5.0)
    with pytest.raises(ValueError, match="num_mel_bins must be positive"):
        S.linear_to_mel_weight_matrix(0)
    with pytest.raises(ValueError, match="floating point"):
        S.linear_to_mel_weight_matrix(dtype=gt.int32)


def test_mfccs_match_tensorflow(device):
    lm = gt.constant([[0.5, -1.0, 2.0, 0.25, 1.5, -0.75]])
    out = S.mfccs_from_log_mel_spectrograms(lm)
    np.testing.assert_allclose(out.numpy(), [[1.443375587, -0.062022593, -1.25, 0.816496551,
                                              0.288675159, 2.183342934]], rtol=1e-5, atol=1e-6)
    x = _real((2, 7, 40))
    expected = x @ np_dct_matrix(40, 2) / np.sqrt(80.0)
    _close(S.mfccs_from_log_mel_spectrograms(gt.constant(x)), expected)


# --- DCT and MDCT -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", [1, 2, 3, 4])
def test_dct_matches_formulas(device, kind, dtype):
    x = _real((3, 9), dtype)
    x64 = x.astype(np.float64)
    for norm in (None, "ortho") if kind != 1 else (None,):
        ortho = norm == "ortho"
        for n in (None, 5, 12):
            xs = x64[:, :n] if n is not None and n <= 9 else \
                np.pad(x64, [(0, 0), (0, (n or 9) - 9)])
            m = np_dct_matrix(xs.shape[-1], kind, ortho)
            out = S.dct(gt.constant(x), type=kind, n=n, norm=norm)
            assert out.dtype == gt.as_dtype(dtype)
            _close(out, xs @ m, dtype)
            inverse = {1: 1, 2: 3, 3: 2, 4: 4}[kind]
            _close(S.idct(gt.constant(x), type=kind, n=n, norm=norm),
                   xs @ np_dct_matrix(xs.shape[-1], inverse, ortho), dtype)
    if kind != 1:
        back = S.idct(S.dct(gt.constant(x), type=kind, norm="ortho"), type=kind, norm="ortho")
        _close(back, x64, dtype)


def test_dct_matches_tensorflow_and_errors():
    x = gt.constant([0.5, -1.0, 2.0, 0.25, 1.5, -0.75])
    np.testing.assert_allclose(S.dct(x, norm="ortho").numpy(),
                               [1.020620704, -0.062022593, -1.25, 0.816496551, 0.288675159,
                                2.183342934], rtol=1e-5, atol=1e-6)
    x = gt.constant(np.ones((3, 4), np.float32))
    with pytest.raises(NotImplementedError, match="axis must be -1"):
        S.dct(x, axis=0)
    with pytest.raises(ValueError, match="Types I, II, III and IV"):
        S.dct(x, type=5)
    with pytest.raises(ValueError, match="Unknown normalization"):
        S.dct(x, norm="forward")
    with pytest.raises(ValueError, match="Type-I DCT"):
        S.dct(x, type=1, norm="ortho")
    with pytest.raises(ValueError, match="greater than one"):
        S.dct(gt.ones([3, 1]), type=1)
    with pytest.raises(ValueError, match="positive integer"):
        S.idct(x, n=0)


def test_mdct_matches_tensorflow_and_reconstructs(device):
    x = gt.constant(np.arange(16, dtype=np.float32) * 0.25 - 1.0)
    np.testing.assert_allclose(S.mdct(x, 8).numpy(), [
        [-7.183875442e-01, -1.213312387e+00, -1.883803606e-01, 6.113722920e-03],
        [-6.333563805e+00, -7.407606840e-01, -6.764742136e-01, -8.473455906e-02],
        [-1.194873810e+01, -2.682089806e-01, -1.164567947e+00, -1.755828261e-01]],
        rtol=2e-5, atol=1e-5)
    # TensorFlow's docstring example: the padded round trip gives the waveform back
    samples, frame_length = 1000, 400
    half = frame_length // 2
    wave = _real(samples, np.float32)
    padded = gt.pad(gt.constant(wave), [[half, 0]])
    for window, norm in ((S.vorbis_window, None), (S.kaiser_bessel_derived_window, "ortho"),
                         (None, "ortho")):
        md = S.mdct(padded, frame_length, pad_end=True, window_fn=window, norm=norm)
        back = S.inverse_mdct(md, window_fn=window, norm=norm)[half:half + samples]
        np.testing.assert_allclose(back.numpy(), wave, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="multiple of 4"):
        S.mdct(x, 10)


# --- gradients (TensorFlow's values) -----------------------------------------------------------------

def _grad(f, x):
    x = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        loss = f(x)
    return tape.gradient(loss, x)


def test_fft_gradient_matches_tensorflow(device):
    z = np.array([1 + 2j, -0.5 + 1j, 0.25 - 1.5j, 2 + 0j], np.complex64)
    w = gt.constant([1.0, 0.5, -1.0, 2.0])
    g = _grad(lambda v: gt.reduce_sum(gt.abs(S.fft(v)) ** 2 * w), z)
    assert g.dtype == gt.complex64
    np.testing.assert_allclose(g.numpy(), [6.75 + 14.j, 3. + 4.75j, 5.25 - 6.j, 7. - 0.75j],
                               rtol=1e-5)


@pytest.mark.parametrize("n,expected", [
    (5, [6.581558704, -18.628993988, 28.127193451, -4.649734497, 21.069976807]),
    (6, [38.75, -50.330127716, 59.116027832, -30.25, 49.133972168, -36.419872284])])
def test_rfft_gradient_matches_tensorflow(device, n, expected):
    x = np.array([0.5, -1.0, 2.0, 0.25, 1.5, -0.75], np.float32)[:n]
    k = n // 2 + 1
    w = gt.constant(np.arange(1.0, k + 1.0, dtype=np.float32))

    def loss(v):
        y = S.rfft(v)
        return gt.reduce_sum(gt.abs(y) ** 2 * w) + gt.reduce_sum(gt.math.imag(y) * w)
    g = _grad(loss, x)
    assert g.dtype == gt.float32
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("n,expected", [
    (6, [1.500000238, 5.206267357 - 1.800641418j, -0.333333015 + 9.828276634j, -3.706267834]),
    (7, [1.837149262, 5.828982353 - 1.493415236j, 0.65802002 + 10.047679901j,
         -6.181294918 + 2.452214241j])])
def test_irfft_gradient_matches_tensorflow(device, n, expected):
    y = np.array([1 + 1j, 2 - 1j, 0.5 + 3j, -1 + 0.5j], np.complex64)
    w = gt.constant(np.arange(1.0, n + 1.0, dtype=np.float32))

    def loss(v):
        r = S.irfft(v, [n])
        return gt.reduce_sum(r * r * w) + gt.reduce_sum(r)
    g = _grad(loss, y)
    assert g.dtype == gt.complex64
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_stft_gradient_matches_tensorflow(device):
    sig = np.sin(np.arange(20) * 0.7).astype(np.float32)
    g = _grad(lambda v: gt.reduce_sum(gt.abs(S.stft(v, 8, 4))), sig)
    np.testing.assert_allclose(g.numpy(), [
        0., -0.208657175, 1.777539253, 1.205079436, 2.354798794, -0.147926912, -1.570110321,
        -1.343196511, -2.656481743, -0.368325084, 1.181545973, 1.474701285, 2.869865417,
        0.836161971, -0.658300877, -1.444730639, -2.98184824, -1.015411496, -0.307659745,
        0.17072475], rtol=1e-4, atol=1e-5)


def test_second_order_matches_tensorflow(device):
    x = gt.constant([0.3, -0.7, 1.1, 0.4, -0.2], gt.float64)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = S.rfft(x)
            loss = gt.reduce_sum(gt.abs(y) ** 4) + gt.reduce_sum(gt.math.real(y) ** 3)
        g = inner.gradient(loss, x)
        s = gt.reduce_sum(g * g)
    np.testing.assert_allclose(g.numpy(), [28.263, -23.46575, 26.52425, 3.98425, -8.57575],
                               rtol=1e-10)
    np.testing.assert_allclose(outer.gradient(s, x).numpy(),
                               [6377.5899, -5420.250225, 5191.113525, 150.023775, -2256.900975],
                               rtol=1e-10)
    z = gt.constant(np.array([1 + 2j, -0.5 + 1j, 0.25 - 1.5j]))
    w = gt.constant([1.0, 2.0, 3.0], gt.float64)
    with gt.GradientTape() as outer:
        outer.watch(z)
        with gt.GradientTape() as inner:
            inner.watch(z)
            loss = gt.reduce_sum(gt.abs(S.ifft(z * z)) ** 2 * w)
        g = inner.gradient(loss, z)
        s = gt.reduce_sum(gt.math.real(g * gt.math.conj(g)))
    np.testing.assert_allclose(g.numpy(), [16.422186939 + 23.555822748j,
                                           -4.96109347 + 2.942974884j,
                                           4.348753785 - 2.896742303j], rtol=1e-9)
    np.testing.assert_allclose(outer.gradient(s, z).numpy(),
                               [1281.202836253 + 1925.787713021j, -262.342008826 + 186.59672299j,
                                288.188960949 + 141.16348293j], rtol=1e-9)


# --- gradients against finite differences (float64) ---------------------------------------------------

def _z(x, y):
    return gt.complex(x, y)


def _abs2(z):
    return gt.math.real(z * gt.math.conj(z)) + gt.math.imag(z)


FD_COMPLEX = [
    ("fft", lambda x, y: _abs2(S.fft(_z(x, y))), (3, 6)),
    ("ifft2d", lambda x, y: _abs2(S.ifft2d(_z(x, y))), (3, 4)),
    ("fft3d", lambda x, y: _abs2(S.fft3d(_z(x, y))), (2, 3, 2)),
    # TensorFlow's own IRFFT gradients fail on cropped inputs and have no 3-D rule
    ("irfft_crop", lambda x, y: S.irfft(_z(x, y), [5]) ** 2, (2, 5)),
    ("irfft_even_crop", lambda x, y: S.irfft(_z(x, y), [4]) ** 2, (2, 5)),
    ("irfft2d_crop", lambda x, y: S.irfft2d(_z(x, y), [2, 5]) ** 2, (3, 5)),
    ("irfft3d", lambda x, y: S.irfft3d(_z(x, y)) ** 2, (2, 2, 3)),
    ("inverse_stft", lambda x, y: S.inverse_stft(_z(x, y), 6, 2) ** 2, (4, 5)),
]
FD_REAL = [
    # TensorFlow's own RFFT gradients fail when fft_length crops and have no 3-D rule
    ("rfft_crop", lambda x: _abs2(S.rfft(x, [5])), (2, 8)),
    ("rfft2d_crop", lambda x: _abs2(S.rfft2d(x, [2, 3])), (3, 5)),
    ("rfft3d", lambda x: _abs2(S.rfft3d(x)), (2, 3, 4)),
    ("rfft3d_pad", lambda x: _abs2(S.rfft3d(x, [3, 3, 5])), (2, 3, 4)),
    ("stft", lambda x: _abs2(S.stft(x, 7, 3, fft_length=10, pad_end=True)), (2, 17)),
    ("frame", lambda x: S.frame(x, 4, 3, pad_end=True, axis=0) ** 2, (10, 2)),
    ("overlap_and_add", lambda x: S.overlap_and_add(x, 3) ** 2, (2, 3, 5)),
    ("dct", lambda x: (S.dct(x, 1) + S.dct(x, 2) + S.idct(x, 2, norm="ortho")
                       + S.dct(x, 4, n=5)[..., :4]) ** 2, (3, 4)),
    ("mfccs", lambda x: gt.exp(S.mfccs_from_log_mel_spectrograms(x) * 0.1), (2, 6)),
    ("mdct", lambda x: S.mdct(x, 8, pad_end=True) ** 2, (2, 19)),
    ("mel", lambda x: gt.math.log(gt.matmul(gt.abs(S.stft(x, 16, 8)),
                                            S.linear_to_mel_weight_matrix(
                                                5, 9, 8000, 100.0, 4000.0, gt.float64)) + 0.1),
     (40,)),
]


@pytest.mark.parametrize("name,fn,shape", FD_COMPLEX, ids=[c[0] for c in FD_COMPLEX])
def test_complex_input_gradients_against_finite_differences(name, fn, shape):
    check_grads(fn, [_real(shape, seed=1), _real(shape, seed=2)], order=2)


@pytest.mark.parametrize("name,fn,shape", FD_REAL, ids=[c[0] for c in FD_REAL])
def test_real_input_gradients_against_finite_differences(name, fn, shape):
    check_grads(fn, [_real(shape, seed=3)], order=2)


def test_forward_mode_is_the_transform_of_the_tangent(device):
    z = gt.constant(_cplx((3, 8)))
    t = gt.constant(_cplx((3, 8), seed=5))
    with gt.ForwardAccumulator(z, t) as acc:
        y = S.fft2d(z)
        r = S.irfft(z, [14])
    _close(acc.jvp(y), np.fft.fft2(t.numpy()))
    _close(acc.jvp(r), np.fft.irfft(t.numpy(), 14))
    x = gt.constant(_real((2, 9)))
    tx = gt.constant(_real((2, 9), seed=6))
    with gt.ForwardAccumulator(x, tx) as acc:
        y = S.rfft(x, [12])
    _close(acc.jvp(y), np.fft.rfft(tx.numpy(), 12))


# --- devices and tutorials ------------------------------------------------------------------------

def _audio_pipeline(wave):
    """stft -> magnitude -> mel -> log -> MFCCs, and the gradient of a loss of them."""
    with gt.GradientTape() as tape:
        tape.watch(wave)
        spec = gt.abs(S.stft(wave, 64, 32))
        mel = gt.matmul(spec, S.linear_to_mel_weight_matrix(16, 33, 8000, 50.0, 3900.0))
        mfcc = S.mfccs_from_log_mel_spectrograms(gt.math.log(mel + 1e-3))[..., :8]
        loss = gt.reduce_sum(mfcc * mfcc)
    return mfcc, tape.gradient(loss, wave)


def test_strict_device_runs_everything_without_host_arrays_or_syncs():
    wave = _real((2, 800), np.float32)
    ref_mfcc, ref_grad = _audio_pipeline(gt.constant(wave))
    dev = gt.get_device("strict:0")
    with gt.device("strict:0"):
        w = gt.constant(wave)
        z = gt.constant(_cplx((2, 3, 5), np.complex64))
        before = gt.config.sync_count(dev)
        mfcc, grad = _audio_pipeline(w)
        back = S.inverse_stft(S.stft(w, 64, 32), 64, 32,
                              window_fn=S.inverse_stft_window_fn(32))
        others = [S.fft3d(z), S.ifft2d(z), S.irfft2d(z, [3, 7]), S.rfft3d(gt.reshape(w[:, :12], [2, 2, 6]), [2, 3, 4]),
                  S.fftshift(z), S.mdct(w, 16), S.inverse_mdct(S.mdct(w, 16)),
                  S.dct(w, 1), S.dct(w, 3, norm="ortho"), S.kaiser_window(9),
                  S.kaiser_bessel_derived_window(10), S.vorbis_window(5),
                  S.hamming_window(6, periodic=False), S.frame(w, 30, 7, axis=-1, pad_end=True)]
        with gt.GradientTape() as tape:
            tape.watch(z)
            loss = gt.reduce_sum(gt.abs(S.ifft(S.fft2d(z))) ** 2) + \
                gt.reduce_sum(S.irfft3d(z) ** 2)
        gz = tape.gradient(loss, z)
        assert gt.config.sync_count(dev) == before
        for t in [mfcc, grad, back, gz] + others:
            assert t.device == dev.name
    np.testing.assert_allclose(mfcc.numpy(), ref_mfcc.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad.numpy(), ref_grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back.numpy()[:, 64:700], wave[:, 64:700], atol=1e-5)


def test_simple_audio_tutorial_spectrogram(device):
    """TensorFlow's "Simple audio recognition" tutorial's get_spectrogram."""
    def get_spectrogram(waveform):
        spectrogram = S.stft(waveform, frame_length=255, frame_step=128)
        spectrogram = gt.abs(spectrogram)
        spectrogram = spectrogram[..., gt.newaxis]
        return spectrogram

    wave = (np.sin(np.arange(16000) * 0.05) * 0.3).astype(np.float32)
    spec = get_spectrogram(gt.constant(wave))
    assert spec.shape == (124, 129, 1) and spec.dtype == gt.float32
    expected = np.abs(np_stft(wave.astype(np.float64), 255, 128))[..., None]
    np.testing.assert_allclose(spec.numpy(), expected, rtol=1e-4, atol=1e-4)
    batch = get_spectrogram(gt.constant(np.stack([wave, wave[::-1]])))
    assert batch.shape == (2, 124, 129, 1)


def test_time_series_tutorial_rfft(device):
    """The time-series tutorial's tf.signal.rfft of a float32 series (and its magnitude)."""
    series = (np.cos(np.arange(4000) * 2 * np.pi / 24) * 5 + 10).astype(np.float32)
    fft = S.rfft(series)
    assert fft.dtype == gt.complex64 and fft.shape == (2001,)
    mag = gt.abs(fft).numpy()
    np.testing.assert_allclose(mag, np.abs(np.fft.rfft(series.astype(np.float64))),
                               rtol=1e-4, atol=2e-2)
    assert np.argmax(mag[1:]) + 1 == round(4000 / 24)
