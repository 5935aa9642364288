"""Seeded random numbers on a device, as ``tf.random``.

A :class:`Generator` owns a random state on one device and draws arrays directly there:
nothing crosses between host and device. On the CPU it is NumPy's ``PCG64``. On a device
the host cannot read (a GPU; the strict test device computes the same numbers with NumPy)
it is the counter-based Philox4x32-10 (as TensorFlow's and JAX's), whose position in its
stream lives in device memory and advances there, so a draw recorded in a CUDA graph
(``gt.capture``: dropout in a training step) gives new numbers at every replay. The same
seed gives the same numbers on the same kind of device.

    g = gt.random.Generator.from_seed(42)
    w = g.normal([784, 512], stddev=0.05)

The module-level functions (``gt.random.normal``, ``uniform``, ``truncated_normal``,
``shuffle``) draw from a global generator per device. ``gt.random.set_seed(s)`` makes them
reproducible; an op-level ``seed=`` argument then selects its own reproducible sequence,
as TensorFlow's global-plus-operation seeds do.
"""
from __future__ import annotations

import threading

import numpy as np

from .backend import Device, current_device, get_device
from .dtypes import as_dtype, np_dtype
from .tensor import Tensor
from .ops.core import shape_tuple

__all__ = ["Generator", "set_seed", "get_global_generator", "set_global_generator", "normal",
           "uniform", "truncated_normal", "shuffle", "create_rng_state", "categorical"]

_FLOAT32 = np.dtype(np.float32)
# Draws per value of truncated_normal on a device: 0.0455 ** 10 (about 4e-14) is the chance
# that a value is still outside two standard deviations after them.
_TRUNCATED_ROUNDS = 10
#: The global seed TensorFlow uses when only an op-level seed is given.
_DEFAULT_GLOBAL_SEED = 87654321


def _below_one(xp, u, dt):
    """float32 draws in ``[0, 1)`` as ``dt`` (float16), still below 1: rounding would
    otherwise give 1.0 for the draws above ``1 - 2**-12``."""
    dt = np.dtype(dt)
    return xp.minimum(u.astype(dt), dt.type(np.nextafter(dt.type(1), dt.type(0))))


def _seed_int(seed, opname):
    if isinstance(seed, Tensor):
        seed = seed.numpy()
    if isinstance(seed, np.ndarray):
        # TF seeds may be a shape [2] (or [3]) integer tensor: fold all words in.
        if seed.dtype.kind not in "iu":
            raise TypeError(f"{opname}: seed must be an integer, got dtype {seed.dtype}")
        return [int(s) % (2 ** 64) for s in seed.ravel().tolist()]
    if isinstance(seed, (list, tuple)):
        return [int(s) % (2 ** 64) for s in seed]
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{opname}: seed must be an integer, got {type(seed).__name__} {seed!r}")
    return int(seed) % (2 ** 64)


def _float_dtype(dtype, opname):
    dt = np_dtype(dtype) if dtype is not None else _FLOAT32
    if dt.kind != "f":
        raise TypeError(f"{opname}: dtype must be a floating type, got {as_dtype(dt).name}")
    return dt


def _param(value, dt, dev: Device, opname, what):
    """A scalar parameter as a Python float, or an array parameter on ``dev`` in ``dt``."""
    if isinstance(value, Tensor):
        if value._device is not dev:
            raise ValueError(f"{opname}: {what} is on {value._device}, the generator on {dev}")
        v = value._value
        if v.ndim == 0 and dev.host_visible:
            return float(v)
        return v.astype(dt, copy=False)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    arr = np.asarray(value, dtype=dt)
    if arr.ndim == 0:
        return float(arr)
    return dev.asarray(arr)


class Generator:
    """A random-number generator living on one device (as ``tf.random.Generator``).

    Create one with :meth:`from_seed` (reproducible) or :meth:`from_non_deterministic_state`.
    Arrays are drawn on the generator's device: the current device when it was made, or the
    ``device=`` argument.
    """

    def __init__(self, copy_from=None, state=None, alg=None, *, seed=None, device=None):
        if copy_from is not None:
            if not isinstance(copy_from, Generator):
                raise TypeError(f"Generator: copy_from must be a Generator, got "
                                f"{type(copy_from).__name__}")
            self._device = copy_from._device if device is None else get_device(device)
            self._seed_seq = copy_from._seed_seq
            self._rng = self._make_rng(self._seed_seq)
            self._rng_state_from(copy_from)
            self._lock = threading.Lock()
            return
        self._device = current_device() if device is None else get_device(device)
        if state is not None and seed is None:
            seed = state
        if seed is None:
            self._seed_seq = np.random.SeedSequence()
        else:
            self._seed_seq = np.random.SeedSequence(_seed_int(seed, "Generator"))
        self._rng = self._make_rng(self._seed_seq)
        self._lock = threading.Lock()

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_seed(cls, seed, alg=None, device=None) -> "Generator":
        """A generator whose numbers are fixed by ``seed`` (an int, or a list of ints)."""
        return cls(seed=seed, device=device)

    @classmethod
    def from_non_deterministic_state(cls, alg=None, device=None) -> "Generator":
        """A generator seeded from the operating system's entropy."""
        return cls(device=device)

    @classmethod
    def from_state(cls, state, alg=None, device=None) -> "Generator":
        """A generator seeded by ``state`` (an int or a list of ints)."""
        return cls(seed=state, device=device)

    def _make_rng(self, seed_seq):
        dev = self._device
        if dev.host_visible:
            return np.random.Generator(np.random.PCG64(seed_seq))
        return _PhiloxState(dev, seed_seq.generate_state(2, np.uint32))

    def _rng_state_from(self, other):
        if self._device.host_visible and other._device.host_visible:
            self._rng.bit_generator.state = other._rng.bit_generator.state
        elif not self._device.host_visible and not other._device.host_visible:
            self._rng = other._rng.copy_to(self._device)

    def reset_from_seed(self, seed) -> None:
        """Restart the generator from ``seed`` (on a device, in the same state buffer, so a
        captured step that draws from it restarts too)."""
        with self._lock:
            self._seed_seq = np.random.SeedSequence(_seed_int(seed, "Generator.reset_from_seed"))
            if isinstance(self._rng, _PhiloxState):
                self._rng.reseed(self._seed_seq.generate_state(2, np.uint32))
            else:
                self._rng = self._make_rng(self._seed_seq)

    @property
    def device(self) -> Device:
        """The device the generator draws on."""
        return self._device

    @property
    def algorithm(self) -> str:
        return "pcg64" if self._device.host_visible else "philox"

    def __repr__(self):
        return f"<gt.random.Generator device={self._device.name} algorithm={self.algorithm}>"

    # --- raw draws (device arrays) ----------------------------------------------------------
    def _standard_normal(self, shape, dt):
        dev = self._device
        with self._lock:
            if dev.host_visible:
                if dt in (np.float32, np.float64):
                    return self._rng.standard_normal(shape, dtype=dt)
                return self._rng.standard_normal(shape, dtype=np.float32).astype(dt)
            with dev.activate():
                gen_dt = dt if dt in (np.float32, np.float64) else np.float32
                return self._rng.standard_normal(size=shape, dtype=gen_dt).astype(dt, copy=False)

    def _random(self, shape, dt):
        """Uniform floats in ``[0, 1)``."""
        dev = self._device
        with self._lock:
            if dev.host_visible:
                if dt in (np.float32, np.float64):
                    return self._rng.random(shape, dtype=dt)
                return _below_one(np, self._rng.random(shape, dtype=np.float32), dt)
            with dev.activate():
                if dt in (np.float32, np.float64):
                    return self._rng.random_sample(size=shape, dtype=dt)
                return _below_one(dev.xp, self._rng.random_sample(size=shape,
                                                                  dtype=np.float32), dt)

    def _integers(self, shape, low, high, dt):
        dev = self._device
        with self._lock:
            if dev.host_visible:
                return self._rng.integers(low, high, size=shape, dtype=dt)
            with dev.activate():
                return self._rng.randint(low, high, size=shape, dtype=dt)

    def _permutation(self, n):
        dev = self._device
        with self._lock:
            if dev.host_visible:
                return self._rng.permutation(n)
            with dev.activate():
                return self._rng.permutation(n)

    # --- public draws -------------------------------------------------------------------------
    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_FLOAT32, name=None) -> Tensor:
        """Normally distributed values of ``shape``."""
        shape = shape_tuple(shape, "normal")
        dt = _float_dtype(dtype, "normal")
        dev = self._device
        mean = _param(mean, dt, dev, "normal", "mean")
        stddev = _param(stddev, dt, dev, "normal", "stddev")
        out = self._standard_normal(shape, dt)
        with dev.activate():
            out = self._affine(out, mean, stddev, dt, shape)
        return Tensor(out, dev)

    @staticmethod
    def _affine(out, offset, scale, dt, shape):
        if isinstance(scale, float):
            if scale != 1.0:
                out *= scale
        else:
            out = out * scale
        if isinstance(offset, float):
            if offset != 0.0:
                out += offset
        else:
            out = out + offset
        if tuple(out.shape) != shape:
            raise ValueError(f"parameters of shapes that broadcast to {tuple(out.shape)} do not "
                             f"fit the requested shape {shape}")
        return out.astype(dt, copy=False)

    def uniform(self, shape, minval=0, maxval=None, dtype=_FLOAT32, name=None) -> Tensor:
        """Uniform values in ``[minval, maxval)``.

        Floats: ``maxval`` defaults to 1. Integers (an integer ``dtype``): ``maxval`` is
        required and the values are drawn without bias.
        """
        shape = shape_tuple(shape, "uniform")
        dt = np_dtype(dtype) if dtype is not None else _FLOAT32
        dev = self._device
        if dt.kind in "iu":
            if maxval is None:
                raise ValueError(f"uniform: maxval must be given for an integer dtype "
                                 f"({as_dtype(dt).name})")
            lo = int(minval.numpy() if isinstance(minval, Tensor) else minval)
            hi = int(maxval.numpy() if isinstance(maxval, Tensor) else maxval)
            if hi <= lo:
                raise ValueError(f"uniform: need minval < maxval, got minval={lo}, maxval={hi}")
            info = np.iinfo(dt)
            if lo < info.min or hi - 1 > info.max:
                raise ValueError(f"uniform: [minval, maxval) = [{lo}, {hi}) does not fit "
                                 f"{as_dtype(dt).name} ({info.min} to {info.max})")
            return Tensor(self._integers(shape, lo, hi, dt), dev)
        if dt.kind != "f":
            raise TypeError(f"uniform: dtype must be a floating or integer type, got "
                            f"{as_dtype(dt).name}")
        lo = _param(minval, dt, dev, "uniform", "minval")
        hi = _param(1.0 if maxval is None else maxval, dt, dev, "uniform", "maxval")
        out = self._random(shape, dt)
        with dev.activate():
            out = self._affine(out, lo, hi - lo, dt, shape)
        return Tensor(out, dev)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_FLOAT32,
                         name=None) -> Tensor:
        """Normal values with those beyond two standard deviations drawn again (as TF).

        On the host, redrawn until none is left. On a device the host cannot read, in a
        fixed number of rounds over the whole array (no wait for the device): a value still
        outside after them (probability about 4e-14 each) is clipped to the bound."""
        shape = shape_tuple(shape, "truncated_normal")
        dt = _float_dtype(dtype, "truncated_normal")
        dev = self._device
        mean = _param(mean, dt, dev, "truncated_normal", "mean")
        stddev = _param(stddev, dt, dev, "truncated_normal", "stddev")
        work_dt = dt if dt in (np.float32, np.float64) else _FLOAT32
        out = self._standard_normal(shape, work_dt)
        xp = dev.xp
        if dev.host_visible:
            # About 4.6% redraw per round, until none is left.
            bad = np.abs(out) > 2
            n_bad = int(np.count_nonzero(bad))
            while n_bad:
                out[bad] = self._standard_normal((n_bad,), work_dt)
                bad = np.abs(out) > 2
                n_bad = int(np.count_nonzero(bad))
        else:
            # Counting the values left would make the host wait for the device: a fixed
            # number of rounds instead, each redrawing every value still outside. A value is
            # still outside after them with probability 0.0455 ** _TRUNCATED_ROUNDS (about
            # 4e-14); the final clip only ever moves those.
            for _ in range(_TRUNCATED_ROUNDS - 1):
                redraw = self._standard_normal(shape, work_dt)
                with dev.activate():
                    out = xp.where(xp.abs(out) > 2, redraw, out)
            with dev.activate():
                out = xp.clip(out, -2, 2)
        with dev.activate():
            out = self._affine(out, mean, stddev, work_dt, shape)
        return Tensor(out.astype(dt, copy=False), dev)

    def permutation(self, n: int) -> Tensor:
        """A random permutation of ``range(n)`` (int64) on the generator's device."""
        n = int(n)
        if n < 0:
            raise ValueError(f"permutation: n must be >= 0, got {n}")
        with self._device.activate():
            perm = self._permutation(n).astype(np.int64, copy=False)
        return Tensor(perm, self._device)

    def shuffle(self, value) -> Tensor:
        """``value`` with its first axis randomly permuted (gradients flow back)."""
        from .ops.shape import gather
        from .ops._util import as_tensor
        x = as_tensor(value, "shuffle")
        if x._device is not self._device:
            raise ValueError(f"shuffle: value is on {x._device}, the generator on {self._device}")
        if x._value.ndim == 0:
            raise ValueError("shuffle: value must have rank >= 1, got a scalar")
        return gather(x, self.permutation(x._value.shape[0]))

    def make_seeds(self, count: int = 1) -> Tensor:
        """``count`` new seeds as an int64 tensor of shape ``[2, count]`` (as TF)."""
        count = int(count)
        if count < 0:
            raise ValueError(f"make_seeds: count must be >= 0, got {count}")
        with self._lock:
            children = self._seed_seq.spawn(count)
        words = np.array([c.generate_state(2, np.uint64) for c in children],
                         dtype=np.uint64).reshape(count, 2)
        seeds = (words >> np.uint64(1)).astype(np.int64).T.copy()
        return Tensor(self._device.asarray(seeds), self._device)

    def split(self, count: int = 1) -> list:
        """``count`` new independent generators on the same device; this one advances."""
        count = int(count)
        if count < 0:
            raise ValueError(f"split: count must be >= 0, got {count}")
        with self._lock:
            children = self._seed_seq.spawn(count)
        out = []
        for c in children:
            g = Generator.__new__(Generator)
            g._device = self._device
            g._seed_seq = c
            g._rng = g._make_rng(c)
            g._lock = threading.Lock()
            out.append(g)
        return out


class _PhiloxState:
    """Philox4x32-10 on a device: its state ``[offset, k0, k1]`` (uint64) is a device array
    that every draw reads and advances on the device, and that a reseed overwrites in place,
    so a captured step (which records the state's address) sees both. Draws:
    ``random_sample``, ``standard_normal`` (Box-Muller), ``randint`` (64 random bits modulo
    the span: each value's probability is off by at most span / 2^64 of itself),
    ``permutation`` (a sort of random keys)."""

    def __init__(self, device, key, state=None):
        from .backend import kernels as K
        self.device = device
        self.key = (int(key[0]), int(key[1]))
        with device.activate():
            self.state = K.philox_state(device.xp, self.key) if state is None else state

    def reseed(self, key):
        """Restart the stream of ``key`` in the same device buffer."""
        from .backend import kernels as K
        self.key = (int(key[0]), int(key[1]))
        with self.device.activate():
            self.device.xp.copyto(self.state, K.philox_state(self.device.xp, self.key))

    def copy_to(self, device):
        with device.activate():
            state = (self.state.copy() if device is self.device
                     else device.from_other(self.state, self.device))
        return _PhiloxState(device, self.key, state)

    def _draw(self, fn, n, dtype):
        from .backend import kernels as K
        from .capture import capturing, keep_alive
        xp = self.device.xp
        if capturing():
            keep_alive(self)                  # the graph reads and writes self.state
        out = fn(xp, self.state, n, dtype) if fn is K.philox_uniform else fn(xp, self.state, n)
        K.philox_advance(xp, self.state, n, dtype)
        return out

    def random_sample(self, size, dtype=np.float64):
        from .backend import kernels as K
        size = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
        n = int(np.prod(size, dtype=np.int64))
        return self._draw(K.philox_uniform, n, dtype).reshape(size)

    def standard_normal(self, size, dtype=np.float64):
        size = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
        n = int(np.prod(size, dtype=np.int64))
        xp = self.device.xp
        dt = np.dtype(dtype)
        m = (n + 1) // 2
        u = self.random_sample((2 * m,), dt)
        # Box-Muller, both halves of each pair; 1 - u is in (0, 1], so the log is finite
        r = xp.sqrt(dt.type(-2) * xp.log(dt.type(1) - u[:m]))
        theta = dt.type(2 * np.pi) * u[m:]
        z = xp.concatenate((r * xp.cos(theta), r * xp.sin(theta)))[:n]
        return z.astype(dt, copy=False).reshape(size)

    def randint(self, low, high=None, size=None, dtype=np.int64):
        from .backend import kernels as K
        if high is None:
            low, high = 0, low
        size = () if size is None else (tuple(size) if isinstance(size, (tuple, list))
                                         else (int(size),))
        n = int(np.prod(size, dtype=np.int64))
        span = int(high) - int(low)
        if not 0 < span <= 2 ** 64:
            raise ValueError(f"randint: need low < high within 2**64, got low={low}, "
                             f"high={high}")
        info = np.iinfo(dtype)
        if int(low) < info.min:
            raise ValueError(f"low is out of bounds for {np.dtype(dtype).name}")
        if int(high) - 1 > info.max:
            raise ValueError(f"high is out of bounds for {np.dtype(dtype).name}")
        bits = self._draw(K.philox_bits, n, np.uint64)
        if span < 2 ** 64:
            bits = bits % np.uint64(span)
        # low + bits in uint64 (two's complement wraps to the right value for any low)
        out = (bits + np.uint64(int(low) % 2 ** 64)).astype(dtype)
        return out.reshape(size)

    def permutation(self, n):
        keys = self.random_sample((int(n),), np.float64)
        return self.device.xp.argsort(keys)


# --- the global generators ------------------------------------------------------------------

class _Global:
    __slots__ = ("seed", "op_count", "generators", "op_generators", "lock")

    def __init__(self):
        self.seed = None            # the global seed, None when unset
        self.op_count = 0           # seeds drawn by next_op_seed since set_seed
        self.generators = {}        # device -> Generator
        self.op_generators = {}     # (device, op seed) -> Generator
        self.lock = threading.Lock()


_GLOBAL = _Global()


def set_seed(seed) -> None:
    """Set the global seed: the module functions and the global generators restart from it."""
    s = _seed_int(seed, "set_seed")
    with _GLOBAL.lock:
        _GLOBAL.seed = s
        _GLOBAL.op_count = 0
        # The generators made here restart in place, so a captured step drawing from one
        # restarts too; one installed with set_global_generator is the caller's and is
        # replaced by a fresh one, not reseeded.
        kept = {}
        for dev, g in _GLOBAL.generators.items():
            if getattr(g, "_made_by_global", False):
                g.reset_from_seed(_words(s, _GLOBAL_GENERATOR_WORD))
                kept[dev] = g
        _GLOBAL.generators = kept
        for (dev, op_seed), g in _GLOBAL.op_generators.items():
            g.reset_from_seed(_words(s, op_seed))


_GLOBAL_GENERATOR_WORD = 0x9E3779B9      # the global generators' second seed word


def next_op_seed():
    """``(global seed, n)`` for the n-th seedless random op made since :func:`set_seed`
    (the counter restarts there, so a program that sets the global seed makes the same
    ops with the same seeds, as TensorFlow derives op seeds); None without a global seed."""
    with _GLOBAL.lock:
        if _GLOBAL.seed is None:
            return None
        n = _GLOBAL.op_count
        _GLOBAL.op_count += 1
        return _GLOBAL.seed, n


def _words(*parts):
    """Seed words: ints and lists (or tuples) of ints, flattened in order."""
    out = []
    for p in parts:
        out.extend(p if isinstance(p, (list, tuple)) else [p])
    return out


def get_global_generator(device=None) -> Generator:
    """The global generator of ``device`` (the current device by default)."""
    dev = current_device() if device is None else get_device(device)
    with _GLOBAL.lock:
        g = _GLOBAL.generators.get(dev)
        if g is None:
            seed = None if _GLOBAL.seed is None else _words(_GLOBAL.seed, _GLOBAL_GENERATOR_WORD)
            g = _GLOBAL.generators[dev] = Generator(seed=seed, device=dev)
            g._made_by_global = True
        return g


def set_global_generator(generator: Generator) -> None:
    """Make ``generator`` the global generator of its device."""
    if not isinstance(generator, Generator):
        raise TypeError(f"set_global_generator: expected a Generator, got "
                        f"{type(generator).__name__}")
    with _GLOBAL.lock:
        _GLOBAL.generators[generator.device] = generator


def _generator_for(seed, device=None) -> Generator:
    """The generator an op draws from: the global one, or the op-seed sequence for ``seed``."""
    if seed is None:
        return get_global_generator(device)
    dev = current_device() if device is None else get_device(device)
    op_seed = _seed_int(seed, "seed")
    key = (dev, tuple(op_seed) if isinstance(op_seed, list) else op_seed)
    with _GLOBAL.lock:
        g = _GLOBAL.op_generators.get(key)
        if g is None:
            glob = _DEFAULT_GLOBAL_SEED if _GLOBAL.seed is None else _GLOBAL.seed
            g = _GLOBAL.op_generators[key] = Generator(seed=_words(glob, op_seed), device=dev)
        return g


def create_rng_state(seed, alg=None) -> np.ndarray:
    """The state words a generator seeded with ``seed`` starts from (host int64 array)."""
    ss = np.random.SeedSequence(_seed_int(seed, "create_rng_state"))
    return (ss.generate_state(2, np.uint64) >> np.uint64(1)).astype(np.int64)


def normal(shape, mean=0.0, stddev=1.0, dtype=_FLOAT32, seed=None, name=None) -> Tensor:
    """Normal values on the current device (as ``tf.random.normal``)."""
    return _generator_for(seed).normal(shape, mean=mean, stddev=stddev, dtype=dtype)


def uniform(shape, minval=0, maxval=None, dtype=_FLOAT32, seed=None, name=None) -> Tensor:
    """Uniform values in ``[minval, maxval)`` on the current device (``tf.random.uniform``)."""
    return _generator_for(seed).uniform(shape, minval=minval, maxval=maxval, dtype=dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_FLOAT32, seed=None,
                     name=None) -> Tensor:
    """Normal values redrawn beyond two standard deviations (``tf.random.truncated_normal``)."""
    return _generator_for(seed).truncated_normal(shape, mean=mean, stddev=stddev, dtype=dtype)


def shuffle(value, seed=None, name=None) -> Tensor:
    """``value`` with its first axis randomly permuted, on its device (``tf.random.shuffle``)."""
    from .ops._util import as_tensor
    x = as_tensor(value, "shuffle")
    return _generator_for(seed, x._device).shuffle(x)


def categorical(logits, num_samples, dtype=None, seed=None, name=None) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` ``[batch, classes]`` (unnormalised
    log-probabilities), as ``tf.random.categorical``: ``[batch, num_samples]`` of ``dtype``
    (int64 by default). Drawn on the logits' device with the Gumbel-max trick (the argmax of
    the logits plus Gumbel noise), so a GPU never waits; a class of logit ``-inf`` is never
    drawn. Not differentiable."""
    from .ops._util import as_tensor
    x = as_tensor(logits, "random.categorical")
    lv = x._value
    if lv.ndim != 2:
        raise ValueError(f"random.categorical: logits must be [batch, classes], got shape "
                         f"{tuple(lv.shape)}")
    if lv.dtype.kind != "f":
        raise TypeError(f"random.categorical: logits must be floating point, got "
                        f"{as_dtype(lv.dtype).name}")
    n = int(num_samples.numpy() if isinstance(num_samples, Tensor) else num_samples)
    if n < 0:
        raise ValueError(f"random.categorical: num_samples must be >= 0, got {n}")
    if lv.shape[1] == 0 and lv.shape[0] and n:
        raise ValueError("random.categorical: the logits have 0 classes to draw from")
    out_dt = np_dtype(dtype) if dtype is not None else np.dtype(np.int64)
    if out_dt not in (np.int32, np.int64):
        raise TypeError(f"random.categorical: dtype must be int32 or int64, got "
                        f"{as_dtype(out_dt).name}")
    dev = x._device
    batch, classes = lv.shape
    # the noise in float32 at least: float16 draws are too coarse in their tail
    work = np.float64 if lv.dtype == np.float64 else np.float32
    u = _generator_for(seed, dev)._random((batch, n, classes), work)
    with dev.activate():
        xp = dev.xp
        with np.errstate(divide="ignore"):
            gumbel = -xp.log(-xp.log(u))        # u = 0 gives -inf: that draw never wins
        logits_w = lv.astype(work, copy=False)
        out = xp.argmax(logits_w[:, None, :] + gumbel, axis=-1).astype(out_dt, copy=False)
    return Tensor(out, dev)
