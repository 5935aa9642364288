"""Weight initializers with Keras' names, formulas and defaults (``tf.keras.initializers``).

    init = gt.initializers.GlorotUniform(seed=0)
    w = init((784, 512))                       # a float32 Tensor on the current device

An initializer given a ``seed`` draws the same values at every call (Keras 3 semantics);
without one it draws from the device's global generator (:func:`gt.random.get_global_generator`),
which :func:`gt.random.set_seed` makes reproducible. Values are drawn on the current device.
"""
from __future__ import annotations

import math

import numpy as np

from . import _config
from .backend import current_device
from .dtypes import np_dtype
from .ops.core import shape_tuple
from .tensor import Tensor

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal",
           "HeUniform", "LecunNormal", "LecunUniform", "Orthogonal", "Identity",
           "IdentityInitializer", "OrthogonalInitializer", "get", "serialize", "deserialize",
           "compute_fans"]

# std of a standard normal truncated to [-2, 2]
_TRUNCATED_STD = 0.87962566103423978


def compute_fans(shape, input_axes=None, output_axes=None):
    """``(fan_in, fan_out)`` for a weight shape, as Keras computes them: with both
    ``input_axes`` and ``output_axes`` (lists of axes, as Keras 3's einsum kernels give), the
    products of the sizes along them."""
    shape = tuple(int(s) for s in shape)
    if input_axes is not None and output_axes is not None:
        try:
            return (int(np.prod([shape[a] for a in input_axes], dtype=np.int64)),
                    int(np.prod([shape[a] for a in output_axes], dtype=np.int64)))
        except (IndexError, TypeError):
            raise ValueError(f"compute_fans: input_axes={list(input_axes)} and output_axes="
                             f"{list(output_axes)} must be axes of the shape {shape}") from None
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = 1
    for s in shape[:-2]:
        receptive *= s
    return shape[-2] * receptive, shape[-1] * receptive


def _float_dtype(dtype, who):
    dt = np.dtype(np.float32) if dtype is None else np_dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"{who}: dtype must be a floating type, got {dt.name}")
    return dt


class Initializer(_config.Configurable):
    """Base class: ``initializer(shape, dtype=None)`` returns a Tensor."""

    def __call__(self, shape, dtype=None) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")


class _Seeded(Initializer):
    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"{type(self).__name__}: seed must be an int or None, got {seed!r}")
        self.seed = None if seed is None else int(seed)

    def _generator(self):
        from . import random as _random
        dev = current_device()
        if self.seed is None:
            return _random.get_global_generator(dev)
        return _random.Generator.from_seed(self.seed, device=dev)

    def get_config(self):
        return {"seed": self.seed}


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None) -> Tensor:
        dev = current_device()
        with dev.activate():
            arr = dev.xp.zeros(shape_tuple(shape, "Zeros"), dtype=_float_dtype(dtype, "Zeros"))
        return Tensor(arr, dev)


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None) -> Tensor:
        dev = current_device()
        with dev.activate():
            arr = dev.xp.ones(shape_tuple(shape, "Ones"), dtype=_float_dtype(dtype, "Ones"))
        return Tensor(arr, dev)


class Constant(Initializer):
    """Every element equal to ``value``: a number, or an array broadcast to the shape (as
    ``tf.keras.initializers.Constant(np.arange(12.).reshape(4, 3))``)."""

    def __init__(self, value=0.0):
        if isinstance(value, Tensor):
            value = value.numpy()
        if np.ndim(value) == 0:
            self.value = float(value)
        else:
            self.value = np.array(value, dtype=np.float64)

    def __call__(self, shape, dtype=None) -> Tensor:
        dev = current_device()
        shape = shape_tuple(shape, "Constant")
        dt = _float_dtype(dtype, "Constant")
        if isinstance(self.value, np.ndarray):
            try:
                host = np.broadcast_to(self.value, shape).astype(dt)
            except ValueError:
                raise ValueError(f"Constant: a value of shape {self.value.shape} cannot fill "
                                 f"shape {shape}") from None
            return Tensor(dev.asarray(host), dev)
        with dev.activate():
            arr = dev.xp.full(shape, self.value, dtype=dt)
        return Tensor(arr, dev)

    def get_config(self):
        v = self.value
        return {"value": v.tolist() if isinstance(v, np.ndarray) else v}


class RandomNormal(_Seeded):
    """Normal values with ``mean`` and ``stddev`` (Keras defaults 0 and 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean = float(mean)
        self.stddev = float(stddev)

    def __call__(self, shape, dtype=None) -> Tensor:
        return self._generator().normal(shape_tuple(shape, "RandomNormal"), mean=self.mean,
                                        stddev=self.stddev,
                                        dtype=_float_dtype(dtype, "RandomNormal"))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(_Seeded):
    """Uniform values in ``[minval, maxval)`` (Keras defaults -0.05 and 0.05)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        if maxval <= minval:
            raise ValueError(f"RandomUniform: need minval < maxval, got {minval} and {maxval}")
        self.minval = float(minval)
        self.maxval = float(maxval)

    def __call__(self, shape, dtype=None) -> Tensor:
        return self._generator().uniform(shape_tuple(shape, "RandomUniform"), minval=self.minval,
                                         maxval=self.maxval,
                                         dtype=_float_dtype(dtype, "RandomUniform"))

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(_Seeded):
    """Normal values redrawn beyond two standard deviations (Keras defaults 0 and 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean = float(mean)
        self.stddev = float(stddev)

    def __call__(self, shape, dtype=None) -> Tensor:
        return self._generator().truncated_normal(shape_tuple(shape, "TruncatedNormal"),
                                                  mean=self.mean, stddev=self.stddev,
                                                  dtype=_float_dtype(dtype, "TruncatedNormal"))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _axes(value, what, who):
    """``input_axes``/``output_axes``: None or a list of ints."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = [value]
    try:
        axes = [int(a) for a in value]
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {what} must be None or a list of ints, got {value!r}") \
            from None
    if any(isinstance(a, bool) for a in value):
        raise TypeError(f"{who}: {what} must be None or a list of ints, got {value!r}")
    return axes


class VarianceScaling(_Seeded):
    """Values with variance ``scale / n``, ``n`` the fan-in, fan-out or their mean.

    ``distribution``: ``"truncated_normal"`` (std corrected for the truncation, as Keras),
    ``"untruncated_normal"`` or ``"uniform"`` (limit ``sqrt(3 * scale / n)``).
    ``input_axes`` and ``output_axes`` (lists of axes, both or neither) name the axes whose
    sizes multiply into the fan-in and the fan-out, as Keras 3 (default: Keras' rule for
    dense and convolution kernels, :func:`compute_fans`).
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        super().__init__(seed)
        self.input_axes = _axes(input_axes, "input_axes", type(self).__name__)
        self.output_axes = _axes(output_axes, "output_axes", type(self).__name__)
        if scale <= 0:
            raise ValueError(f"{type(self).__name__}: scale must be > 0, got {scale}")
        if mode not in self._MODES:
            raise ValueError(f"{type(self).__name__}: unknown mode {mode!r}; known modes: "
                             f"{list(self._MODES)}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"{type(self).__name__}: unknown distribution {distribution!r}; "
                             f"known distributions: {list(self._DISTRIBUTIONS)}")
        self.scale = float(scale)
        self.mode = mode
        self.distribution = distribution

    def __call__(self, shape, dtype=None) -> Tensor:
        who = type(self).__name__
        shape = shape_tuple(shape, who)
        dt = _float_dtype(dtype, who)
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        gen = self._generator()
        if self.distribution == "truncated_normal":
            return gen.truncated_normal(shape, stddev=math.sqrt(scale) / _TRUNCATED_STD, dtype=dt)
        if self.distribution == "untruncated_normal":
            return gen.normal(shape, stddev=math.sqrt(scale), dtype=dt)
        limit = math.sqrt(3.0 * scale)
        return gen.uniform(shape, minval=-limit, maxval=limit, dtype=dt)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class GlorotUniform(VarianceScaling):
    """Uniform in ``[-limit, limit]``, ``limit = sqrt(6 / (fan_in + fan_out))`` (Xavier)."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_avg", "uniform", seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class GlorotNormal(VarianceScaling):
    """Truncated normal with ``stddev = sqrt(2 / (fan_in + fan_out))``."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class HeNormal(VarianceScaling):
    """Truncated normal with ``stddev = sqrt(2 / fan_in)`` (He et al.)."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class HeUniform(VarianceScaling):
    """Uniform in ``[-limit, limit]``, ``limit = sqrt(6 / fan_in)``."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(2.0, "fan_in", "uniform", seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class LecunNormal(VarianceScaling):
    """Truncated normal with ``stddev = sqrt(1 / fan_in)``."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class LecunUniform(VarianceScaling):
    """Uniform in ``[-limit, limit]``, ``limit = sqrt(3 / fan_in)``."""

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_in", "uniform", seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes; a rectangular one gets ones on its
    main diagonal), as Keras'."""

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def __call__(self, shape, dtype=None) -> Tensor:
        shape = shape_tuple(shape, "Identity")
        dt = _float_dtype(dtype, "Identity")
        if len(shape) != 2:
            raise ValueError(f"Identity: needs a 2-D shape, got {shape}")
        dev = current_device()
        with dev.activate():
            out = dev.xp.eye(shape[0], shape[1], dtype=dt) * dt.type(self.gain)
        return Tensor(out, dev)

    def get_config(self):
        return {"gain": self.gain}


class Orthogonal(_Seeded):
    """A (semi-)orthogonal matrix times ``gain``, as Keras': the Q of the QR factorisation of
    a normal matrix (signs fixed by R's diagonal); shapes of rank > 2 are flattened to
    ``(prod(shape[:-1]), shape[-1])``. The recurrent kernels' default."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = float(gain)

    def __call__(self, shape, dtype=None) -> Tensor:
        who = type(self).__name__
        shape = shape_tuple(shape, who)
        dt = _float_dtype(dtype, who)
        if len(shape) < 2:
            raise ValueError(f"{who}: needs a shape of rank >= 2, got {shape}")
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        a = self._generator().normal((max(rows, cols), min(rows, cols)), dtype=np.float64)
        dev = a._device
        with dev.activate():
            xp = dev.xp
            q, r = xp.linalg.qr(a._value)
            q = q * xp.sign(xp.diagonal(r))
            if rows < cols:
                q = q.T
            out = (self.gain * q).reshape(shape).astype(dt)
        return Tensor(out, dev)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


# --- by name ----------------------------------------------------------------------------------

_CLASSES = (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
            GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform,
            Orthogonal, Identity)
_BY_NAME = {}
for _cls in _CLASSES:
    _BY_NAME[_cls.__name__.lower()] = _cls
_BY_NAME.update({"zeros": Zeros, "ones": Ones, "constant": Constant,
                 "random_normal": RandomNormal, "random_uniform": RandomUniform,
                 "uniform": RandomUniform, "normal": RandomNormal,
                 "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
                 "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
                 "xavier_uniform": GlorotUniform, "xavier_normal": GlorotNormal,
                 "he_normal": HeNormal, "he_uniform": HeUniform, "lecun_normal": LecunNormal,
                 "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
                 "identity": Identity, "identityinitializer": Identity,
                 "orthogonalinitializer": Orthogonal})
del _cls


def known_names() -> list:
    """Every name :func:`get` accepts."""
    return sorted(_BY_NAME)


def get(identifier) -> Initializer:
    """An initializer from a name (``"glorot_uniform"``, ``"HeNormal"``), a config dict, an
    Initializer, or a callable ``(shape, dtype) -> Tensor`` (returned as is)."""
    if identifier is None:
        raise ValueError("initializers.get: expected a name or an initializer, got None")
    found = _config.lookup(identifier, Initializer, _BY_NAME, "initializer", known_names())
    if found is not None:
        return found
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"cannot interpret {identifier!r} as an initializer")


serialize = _config.serialize


def deserialize(config: dict) -> Initializer:
    return _config.deserialize(config, _BY_NAME, "initializer", known_names())


# Keras' lower-case aliases
zeros = Zeros
ones = Ones
constant = Constant
random_normal = RandomNormal
random_uniform = RandomUniform
truncated_normal = TruncatedNormal
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal
he_normal = HeNormal
he_uniform = HeUniform
lecun_normal = LecunNormal
lecun_uniform = LecunUniform
variance_scaling = VarianceScaling
identity = IdentityInitializer = Identity
orthogonal = OrthogonalInitializer = Orthogonal


# --- the STFT kernels (Keras 3's keras.initializers.STFT) ---------------------------------------

def _cosine_sum(m, coefs):
    """SciPy's ``general_cosine`` window of ``m`` symmetric points (float64)."""
    fac = np.linspace(-np.pi, np.pi, m)
    w = np.zeros(m)
    for k, a in enumerate(coefs):
        w += a * np.cos(k * fac)
    return w


def _triang(m):
    n = np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        w = (2 * n - 1.0) / m
        return np.concatenate([w, w[::-1]])
    w = 2 * n / (m + 1.0)
    return np.concatenate([w, w[-2::-1]])


_WINDOWS = {
    "hann": lambda m: _cosine_sum(m, (0.5, 0.5)),
    "hamming": lambda m: _cosine_sum(m, (0.54, 0.46)),
    "blackman": lambda m: _cosine_sum(m, (0.42, 0.50, 0.08)),
    "nuttall": lambda m: _cosine_sum(m, (0.3635819, 0.4891775, 0.1365995, 0.0106411)),
    "blackmanharris": lambda m: _cosine_sum(m, (0.35875, 0.48829, 0.14128, 0.01168)),
    "bartlett": np.bartlett,
    "boxcar": np.ones,
    "triang": _triang,
    "cosine": lambda m: np.sin(np.pi / m * (np.arange(m) + 0.5)),
}
_WINDOW_ALIASES = {"han": "hann", "hamm": "hamming", "ham": "hamming",
                   "black": "blackman", "nutl": "nuttall",
                   "blackharr": "blackmanharris", "bart": "bartlett", "brt": "bartlett",
                   "box": "boxcar", "ones": "boxcar", "rect": "boxcar",
                   "rectangular": "boxcar", "triangle": "triang", "tri": "triang",
                   "halfcosine": "cosine"}


def get_window(window, length, fftbins=True) -> np.ndarray:
    """SciPy's ``scipy.signal.get_window(window, length, fftbins)`` (float64): the windows
    ``hann``, ``hamming``, ``blackman``, ``nuttall``, ``blackmanharris``, ``bartlett``,
    ``boxcar``, ``triang``, ``cosine`` (and SciPy's aliases) here, periodic with ``fftbins``
    (the symmetric window of ``length + 1`` points without its last); any other SciPy
    window (a name or a ``(name, parameter...)`` tuple) through SciPy when it is installed,
    else SciPy's ValueError for an unknown name."""
    name = window if isinstance(window, str) else None
    key = _WINDOW_ALIASES.get(name, name)
    if key in _WINDOWS:
        m = int(length)
        if m < 1:
            raise ValueError(f"Parameter Nx={m} is not a positive integer")
        if m == 1:
            return np.ones(1)
        return _WINDOWS[key](m + 1)[:-1] if fftbins else _WINDOWS[key](m)
    try:
        import scipy.signal
    except ImportError:
        if name is not None:
            raise ValueError(f"Invalid window name '{name}' in parameter "
                             f"window={window!r}!") from None
        raise ValueError(f"get_window: the window {window!r} needs SciPy (pip install "
                         "scipy)") from None
    return np.asarray(scipy.signal.get_window(window, length, fftbins), np.float64)


class STFT(Initializer):
    """The kernels of a short-time Fourier transform as a convolution, as Keras 3's
    ``keras.initializers.STFT`` (``STFTInitializer``): for a shape ``(T, 1, F)``, ``cos`` (side
    ``"real"``) or ``sin`` (``"imag"``) of ``-2 pi t f / (2 (F - 1))``, computed in the dtype
    as Keras does, times ``window`` (a SciPy window name, symmetric unless ``periodic``, or
    the window's values, or None) divided by its L2 norm (``scaling="density"``), its sum
    (``"spectrum"``) or 1 (None)."""

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ["real", "imag"]:
            raise ValueError(f"side should be 'real' or 'imag', not {side}")
        if isinstance(window, str):
            get_window(window, 1)                   # (an unknown window fails here)
        if scaling is not None and scaling not in ["density", "spectrum"]:
            raise ValueError(f"Scaling is invalid, it must be `None`, 'density' or "
                             f"'spectrum'. Received scaling={scaling}")
        self.side = side
        self.window = window
        self.scaling = scaling
        self.periodic = periodic

    def __call__(self, shape, dtype=None) -> Tensor:
        dt = _float_dtype(dtype, "STFT")
        shape = shape_tuple(shape, "STFT")
        if len(shape) != 3:
            raise ValueError(f"STFT: the shape must be (frame_length, 1, fft_length // 2 + "
                             f"1), got {shape}")
        frame_length, _, bins = shape
        win, scaling = None, dt.type(1)
        if self.window is not None:
            win = self.window
            if isinstance(win, str):
                win = get_window(win, frame_length, self.periodic)
            win = np.asarray(win.numpy() if isinstance(win, Tensor) else win).astype(dt)
            if win.ndim != 1 or win.shape[-1] != frame_length:
                raise ValueError(f"The shape of `window` must be equal to [frame_length]."
                                 f"Received: window shape={win.shape}")
            win = win.reshape(frame_length, 1, 1)
            if self.scaling == "density":
                scaling = np.sqrt(np.sum(np.square(win)))
            elif self.scaling == "spectrum":
                scaling = np.sum(np.abs(win))
        # Keras' arithmetic, in the dtype
        freq = np.arange(bins, dtype=dt).reshape(1, 1, bins) / dt.type((bins - 1) * 2)
        time = np.arange(frame_length, dtype=dt).reshape(frame_length, 1, 1)
        args = (dt.type(-2) * time) * freq * np.arccos(dt.type(-1))
        kernel = np.cos(args) if self.side == "real" else np.sin(args)
        if win is not None:
            kernel = (kernel * win) / scaling
        dev = current_device()
        return Tensor(dev.asarray(kernel.astype(dt)), dev)

    def get_config(self):
        window = self.window
        if isinstance(window, np.ndarray):
            window = window.tolist()
        return {"side": self.side, "window": window, "periodic": self.periodic,
                "scaling": self.scaling}


STFTInitializer = stft = STFT
_BY_NAME.update({"stft": STFT, "stftinitializer": STFT})
__all__ += ["STFT", "STFTInitializer"]
