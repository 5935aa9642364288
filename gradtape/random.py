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
``shuffle``, ``categorical``, ``gamma``, ``poisson``) draw from a global generator per
device. ``gt.random.set_seed(s)`` makes them reproducible; an op-level ``seed=`` argument
then selects its own reproducible sequence, as TensorFlow's global-plus-operation seeds do.

The stateless functions (``stateless_normal``, ``stateless_uniform``,
``stateless_truncated_normal``, ``stateless_categorical``, ``stateless_gamma``,
``stateless_poisson``, ``stateless_binomial``, ``stateless_parameterized_truncated_normal``,
and the seed helpers ``split`` and ``fold_in``, also ``experimental.stateless_split`` and
``experimental.stateless_fold_in``) are deterministic functions of their seed pair, shape
and dtype, giving the same numbers on every device. Their streams are gradtape's own
Philox streams, not TensorFlow's: a TF program ported with a fixed seed gets different (but
equally distributed) numbers.
"""
from __future__ import annotations

import enum
import threading

import numpy as np

from .backend import Device, current_device, get_device
from .dtypes import as_dtype, np_dtype
from .tensor import Tensor
from .ops.core import shape_tuple
from .registry import InvalidArgumentError

__all__ = ["Generator", "set_seed", "get_global_generator", "set_global_generator", "normal",
           "uniform", "truncated_normal", "shuffle", "create_rng_state", "categorical",
           "gamma", "poisson", "stateless_normal", "stateless_uniform",
           "stateless_truncated_normal", "stateless_categorical", "stateless_gamma",
           "stateless_poisson", "stateless_binomial", "stateless_parameterized_truncated_normal",
           "split", "fold_in", "experimental"]

_FLOAT32 = np.dtype(np.float32)
# Draws per value of truncated_normal on a device: 0.0455 ** 10 (about 4e-14) is the chance
# that a value is still outside two standard deviations after them.
_TRUNCATED_ROUNDS = 10
# Rounds of Marsaglia and Tsang's gamma sampler with Philox (each accepts with probability
# above 0.95), of the Poisson and binomial rejection samplers (each above 0.8), and steps of
# the Poisson and binomial inversion used below a mean of 10 (P(X > 48) < 1e-17 there).
_GAMMA_ROUNDS = 12
_REJECTION_ROUNDS = 24
_INVERSION_STEPS = 48
_FULL_INT_DTYPES = tuple(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))
_COUNT_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int32,
                                            np.int64))
_STATELESS_UNIFORM_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64,
                                                        np.int32, np.int64, np.uint32,
                                                        np.uint64))
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
        return "philox" if self._philox else "pcg64"

    def __repr__(self):
        return f"<gt.random.Generator device={self._device.name} algorithm={self.algorithm}>"

    # --- raw draws (device arrays) ----------------------------------------------------------
    @property
    def _philox(self) -> bool:
        """Whether the draws come from Philox (a device generator, or a stateless op's):
        then every draw is a fixed amount of device work that never waits for the device."""
        return isinstance(self._rng, _PhiloxState)

    def _standard_normal(self, shape, dt):
        dev = self._device
        with self._lock:
            if not self._philox:
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
            if not self._philox:
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
            if not self._philox:
                return self._rng.integers(low, high, size=shape, dtype=dt)
            with dev.activate():
                return self._rng.randint(low, high, size=shape, dtype=dt)

    def _permutation(self, n):
        dev = self._device
        with self._lock:
            if not self._philox:
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

        With PCG64 (a host generator), redrawn until none is left. With Philox (a device
        generator, or a stateless op), in a fixed number of rounds over the whole array (no
        wait for the device): a value still outside after them (probability about 4e-14
        each) is clipped to the bound."""
        shape = shape_tuple(shape, "truncated_normal")
        dt = _float_dtype(dtype, "truncated_normal")
        dev = self._device
        mean = _param(mean, dt, dev, "truncated_normal", "mean")
        stddev = _param(stddev, dt, dev, "truncated_normal", "stddev")
        work_dt = dt if dt in (np.float32, np.float64) else _FLOAT32
        out = self._standard_normal(shape, work_dt)
        xp = dev.xp
        if not self._philox:
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

    # --- state, full-range integers, gamma, Poisson, binomial ---------------------------------
    @property
    def state(self) -> Tensor:
        """The generator's current position as an int64 tensor on its device (a snapshot: it
        changes as the generator draws). With Philox the words are ``[counter, key0, key1]``
        (read on the device, no wait); with PCG64 ``[state_hi, state_lo, inc_hi, inc_lo,
        has_uint32, uinteger]``. Not TF's layout: only for inspecting or comparing states."""
        dev = self._device
        with self._lock:
            if self._philox:
                with dev.activate():
                    return Tensor(self._rng.state.astype(np.int64), dev)
            st = self._rng.bit_generator.state
            words = []
            for v in (st["state"]["state"], st["state"]["inc"]):
                words += [(v >> 64) & (2 ** 64 - 1), v & (2 ** 64 - 1)]
            words += [int(st["has_uint32"]), int(st["uinteger"])]
        arr = np.array(words, dtype=np.uint64).astype(np.int64)
        return Tensor(dev.asarray(arr), dev)

    def uniform_full_int(self, shape, dtype=np.uint64, name=None) -> Tensor:
        """Integers uniform over the whole range of ``dtype`` (int32, int64, uint32 or uint64;
        uint64 by default), as ``tf.random.Generator.uniform_full_int``."""
        shape = shape_tuple(shape, "uniform_full_int")
        dt = np_dtype(dtype)
        if dt not in _FULL_INT_DTYPES:
            raise InvalidArgumentError(f"uniform_full_int: dtype must be int32, int64, uint32 "
                                       f"or uint64, got {as_dtype(dt).name}")
        info = np.iinfo(dt)
        return Tensor(self._integers(shape, int(info.min), int(info.max) + 1, dt), self._device)

    def _float64_param(self, value, opname, what):
        """A parameter as a float64 array on the generator's device (host values uploaded)."""
        dev = self._device
        if isinstance(value, Tensor):
            if value._device is not dev:
                raise ValueError(f"{opname}: {what} is on {value._device}, the generator on "
                                 f"{dev}")
            with dev.activate():
                return value._value.astype(np.float64)
        arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{opname}: {what} must be numeric, got {arr.dtype}")
        return dev.asarray(arr.astype(np.float64))

    def _finished(self, done) -> bool:
        """Whether a rejection loop may stop early: on a device the host can read (the CPU),
        once every value is accepted (the rest of the rounds are then skipped, the stream
        advanced past them as if drawn, so the numbers are those of every other device);
        never on others (that check would make the host wait)."""
        return self._device.host_visible and bool(done.all())

    def _skip_rounds(self, rounds, per_round):
        """Advance the Philox stream past ``rounds`` rounds of draws ``per_round``, a list
        of ``(n, dtype)``, without drawing them."""
        from .backend import kernels as K
        with self._lock:
            for _ in range(rounds):
                for n, dt in per_round:
                    K.philox_advance(self._device.xp, self._rng.state, n, dt)

    def _gamma_draw(self, alpha, shape):
        """float64 draws of Gamma(alpha, 1) of ``shape`` (``alpha``: a float64 device array
        broadcastable to it); NaN where alpha <= 0. PCG64: NumPy's sampler. Philox:
        Marsaglia and Tsang's method in ``_GAMMA_ROUNDS`` rounds over the whole array (each
        accepts with probability above 0.95, so a value still rejected after them, left at
        ``alpha - 1/3``, has probability below 1e-16); alpha < 1 boosted by ``u ** (1/alpha)``."""
        dev = self._device
        xp = dev.xp
        with dev.activate():
            alpha = xp.broadcast_to(alpha, shape)
            valid = alpha > 0
        if not self._philox:
            with self._lock:
                out = self._rng.standard_gamma(np.where(valid, alpha, 1.0), size=shape)
            return np.where(valid, out, np.nan)
        with dev.activate(), np.errstate(all="ignore"):
            safe = xp.where(valid, alpha, 1.0)
            boost = safe < 1
            d = xp.where(boost, safe + 1, safe) - 1.0 / 3.0
            c = 1.0 / xp.sqrt(9.0 * d)
            out = d
            done = xp.zeros(shape, dtype=bool)
        size = int(np.prod(shape, dtype=np.int64))
        for r in range(_GAMMA_ROUNDS):
            if r and self._finished(done):
                self._skip_rounds(_GAMMA_ROUNDS - r, [(2 * ((size + 1) // 2), np.float64),
                                                      (size, np.float64)])
                break
            x = self._standard_normal(shape, np.float64)
            u = self._random(shape, np.float64)
            with dev.activate(), np.errstate(all="ignore"):
                v = (1.0 + c * x) ** 3
                pos = v > 0
                vs = xp.where(pos, v, 1.0)
                ok = pos & (xp.log(u) < 0.5 * x * x + d - d * vs + d * xp.log(vs))
                out = xp.where(ok & ~done, d * vs, out)
                done = done | ok
        u = self._random(shape, np.float64)
        with dev.activate(), np.errstate(all="ignore"):
            out = xp.where(boost, out * u ** (1.0 / safe), out)
            return xp.where(valid, out, np.nan)

    def _poisson_draw(self, lam, shape):
        """float64 draws of Poisson(lam) of ``shape`` (``lam``: a float64 device array
        broadcastable to it); 0 where lam <= 0, as TF. PCG64: NumPy's sampler. Philox: for
        lam < 10, inversion of the CDF in ``_INVERSION_STEPS`` steps (P(X > 48) < 1e-17);
        for lam >= 10, Hormann's transformed rejection (PTRS) in ``_REJECTION_ROUNDS`` rounds
        (each accepts with probability above 0.89; a value still rejected after them is left
        at ``floor(lam)``, probability below 1e-15)."""
        dev = self._device
        xp = dev.xp
        with dev.activate():
            lam = xp.broadcast_to(lam, shape)
            lam = xp.where(lam > 0, lam, 0.0)
        if not self._philox:
            with self._lock:
                return self._rng.poisson(lam, size=shape).astype(np.float64)
        with dev.activate():
            small = lam < 10
            lam_s = xp.where(small, lam, 0.0)
        u = self._random(shape, np.float64)
        with dev.activate():
            k = _inversion(xp, u, xp.exp(-lam_s), lambda i, p: p * lam_s / (i + 1.0), shape)
            lam_l = xp.where(small, 10.0, lam)
            slam = xp.sqrt(lam_l)
            loglam = xp.log(lam_l)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            invalpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2.0)
            big = xp.floor(lam_l)
            done = small.copy()         # (those take the inversion's value)
        size = int(np.prod(shape, dtype=np.int64))
        for r in range(_REJECTION_ROUNDS):
            if self._finished(done):
                self._skip_rounds(_REJECTION_ROUNDS - r, [(size, np.float64)] * 2)
                break
            uu = self._random(shape, np.float64)
            vv = self._random(shape, np.float64)
            with dev.activate(), np.errstate(all="ignore"):
                uu = uu - 0.5
                us = 0.5 - xp.abs(uu)
                kk = xp.floor((2.0 * a / us + b) * uu + lam_l + 0.43)
                quick = (us >= 0.07) & (vv <= vr)
                kpos = xp.maximum(kk, 0.0)
                slow = ((kk >= 0) & ~((us < 0.013) & (vv > us))
                        & (xp.log(vv) + xp.log(invalpha) - xp.log(a / (us * us) + b)
                           <= -lam_l + kpos * loglam - _log_factorial(xp, kpos)))
                ok = quick | slow
                big = xp.where(ok & ~done, kk, big)
                done = done | ok
        with dev.activate():
            return xp.where(small, k, big)

    def _binomial_draw(self, counts, probs, shape):
        """float64 draws of Binomial(counts, probs) of ``shape`` (float64 device arrays
        broadcastable to it; counts floored, probs clipped to [0, 1]). PCG64: NumPy's sampler.
        Philox, on ``p = min(probs, 1 - probs)`` (the draw flipped to ``counts - k`` when
        probs > 1/2): for ``counts * p < 10``, inversion in ``_INVERSION_STEPS`` steps; beyond,
        Hormann's BTRS in ``_REJECTION_ROUNDS`` rounds (each accepts with probability above
        0.8; a value still rejected after them is left at the mode)."""
        dev = self._device
        xp = dev.xp
        with dev.activate():
            n = xp.floor(xp.maximum(xp.broadcast_to(counts, shape), 0.0))
            prob = xp.clip(xp.broadcast_to(probs, shape), 0.0, 1.0)
        if not self._philox:
            with self._lock:
                return self._rng.binomial(n.astype(np.int64), prob, size=shape).astype(
                    np.float64)
        with dev.activate(), np.errstate(all="ignore"):
            flip = prob > 0.5
            p = xp.where(flip, 1.0 - prob, prob)
            small = n * p < 10
            n_s = xp.where(small, n, 0.0)
            q_s = 1.0 - p
            ratio = xp.where(q_s > 0, p / q_s, 0.0)
        u = self._random(shape, np.float64)
        with dev.activate(), np.errstate(all="ignore"):
            k = _inversion(xp, u, q_s ** n_s,
                           lambda i, pk: pk * xp.maximum(n_s - i, 0.0) / (i + 1.0) * ratio,
                           shape)
            k = xp.minimum(k, n_s)
            n_l = xp.where(small, 100.0, n)
            p_l = xp.where(small, 0.5, p)
            q_l = 1.0 - p_l
            spq = xp.sqrt(n_l * p_l * q_l)
            b = 1.15 + 2.53 * spq
            a = -0.0873 + 0.0248 * b + 0.01 * p_l
            c = n_l * p_l + 0.5
            vr = 0.92 - 4.2 / b
            alpha = (2.83 + 5.1 / b) * spq
            lpq = xp.log(p_l / q_l)
            m = xp.floor((n_l + 1.0) * p_l)
            h = _log_factorial(xp, m) + _log_factorial(xp, n_l - m)
            big = m
            done = small.copy()         # (those take the inversion's value)
        size = int(np.prod(shape, dtype=np.int64))
        for r in range(_REJECTION_ROUNDS):
            if self._finished(done):
                self._skip_rounds(_REJECTION_ROUNDS - r, [(size, np.float64)] * 2)
                break
            uu = self._random(shape, np.float64)
            vv = self._random(shape, np.float64)
            with dev.activate(), np.errstate(all="ignore"):
                uu = uu - 0.5
                us = 0.5 - xp.abs(uu)
                kk = xp.floor((2.0 * a / us + b) * uu + c)
                inside = (kk >= 0) & (kk <= n_l)
                quick = (us >= 0.07) & (vv <= vr) & inside
                kc = xp.clip(kk, 0.0, n_l)
                lv = xp.log(vv * alpha / (a / (us * us) + b))
                slow = inside & (lv <= h - _log_factorial(xp, kc) - _log_factorial(xp, n_l - kc)
                                 + (kc - m) * lpq)
                ok = quick | slow
                big = xp.where(ok & ~done, kk, big)
                done = done | ok
        with dev.activate():
            out = xp.where(small, k, big)
            return xp.where(flip, n - out, out)

    def binomial(self, shape, counts, probs, dtype=np.int32, name=None) -> Tensor:
        """Binomial draws of ``shape``: successes in ``counts`` trials of probability
        ``probs`` (both broadcast to ``shape``), as ``tf.random.Generator.binomial``
        (int32 by default). Not differentiable."""
        shape = shape_tuple(shape, "binomial")
        dt = _count_dtype(dtype, "binomial")
        counts = self._float64_param(counts, "binomial", "counts")
        probs = self._float64_param(probs, "binomial", "probs")
        _check_broadcast(shape, [counts.shape, probs.shape], "binomial")
        out = self._binomial_draw(counts, probs, shape)
        with self._device.activate():
            return Tensor(out.astype(dt), self._device)

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
        # (None for a stateless op's stream, whose key may live only on the device)
        self.key = None if key is None else (int(key[0]), int(key[1]))
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
    return _categorical(x, num_samples, dtype, "random.categorical",
                        lambda dev: _generator_for(seed, dev))


def _categorical(x, num_samples, dtype, opname, make_generator) -> Tensor:
    lv = x._value
    if lv.ndim != 2:
        raise ValueError(f"{opname}: logits must be [batch, classes], got shape "
                         f"{tuple(lv.shape)}")
    if lv.dtype.kind != "f":
        raise TypeError(f"{opname}: logits must be floating point, got "
                        f"{as_dtype(lv.dtype).name}")
    n = int(num_samples.numpy() if isinstance(num_samples, Tensor) else num_samples)
    if n < 0:
        raise ValueError(f"{opname}: num_samples must be >= 0, got {n}")
    if lv.shape[1] == 0 and lv.shape[0] and n:
        raise ValueError(f"{opname}: the logits have 0 classes to draw from")
    out_dt = np_dtype(dtype) if dtype is not None else np.dtype(np.int64)
    if out_dt not in (np.int32, np.int64):
        raise TypeError(f"{opname}: dtype must be int32 or int64, got "
                        f"{as_dtype(out_dt).name}")
    dev = x._device
    batch, classes = lv.shape
    # the noise in float32 at least: float16 draws are too coarse in their tail
    work = np.float64 if lv.dtype == np.float64 else np.float32
    u = make_generator(dev)._random((batch, n, classes), work)
    with dev.activate():
        xp = dev.xp
        with np.errstate(divide="ignore"):
            gumbel = -xp.log(-xp.log(u))        # u = 0 gives -inf: that draw never wins
        logits_w = lv.astype(work, copy=False)
        out = xp.argmax(logits_w[:, None, :] + gumbel, axis=-1).astype(out_dt, copy=False)
    return Tensor(out, dev)


# --- sampling helpers ------------------------------------------------------------------------

def _inversion(xp, u, p0, step, shape):
    """Inversion of a discrete CDF in ``_INVERSION_STEPS`` steps over the whole array: the
    smallest k with ``u <= P(X <= k)``, where ``P(X = 0) = p0`` and ``P(X = i + 1) =
    step(i, P(X = i))`` (float64)."""
    k = xp.zeros(shape, dtype=np.float64)
    pk = p0
    cdf = p0
    for i in range(_INVERSION_STEPS):
        k = k + (u > cdf)
        pk = step(float(i), pk)
        cdf = cdf + pk
    return k


def _log_factorial(xp, k):
    """``log(k!) = lgamma(k + 1)`` of float64 counts ``k >= 0`` (device arrays): Stirling's
    series at ``k + 1`` (shifted by 8 below 30, the shift's product divided out), absolute
    error below 1e-11; plain xp functions, so it runs on every device."""
    x = k + 1.0
    small = x < 30
    xs = xp.where(small, x, 1.0)
    z = xp.where(small, x + 8.0, x)
    prod = xs
    for j in range(1, 8):
        prod = prod * (xs + float(j))
    zi = 1.0 / z
    zi2 = zi * zi
    series = zi * (1.0 / 12 - zi2 * (1.0 / 360 - zi2 * (1.0 / 1260 - zi2 / 1680)))
    st = (z - 0.5) * xp.log(z) - z + 0.5 * np.log(2 * np.pi) + series
    return st - xp.where(small, xp.log(prod), 0.0)


def _check_broadcast(shape, param_shapes, opname, what="parameters"):
    try:
        full = np.broadcast_shapes(tuple(shape), *[tuple(s) for s in param_shapes])
    except ValueError:
        full = None
    if full != tuple(shape):
        raise InvalidArgumentError(f"{opname}: {what} of shapes "
                                   f"{[tuple(s) for s in param_shapes]} do not broadcast to "
                                   f"the requested shape {tuple(shape)}")


def _count_dtype(dtype, opname):
    dt = np_dtype(dtype)
    if dt not in _COUNT_DTYPES:
        raise TypeError(f"{opname}: dtype must be float16, float32, float64, int32 or int64, "
                        f"got {as_dtype(dt).name}")
    return dt


def _param_shape(value):
    if isinstance(value, Tensor):
        return tuple(value._value.shape)
    return np.shape(value.numpy() if hasattr(value, "numpy") else value)


# --- gamma and Poisson (stateful) ------------------------------------------------------------

def _gamma(gen, shape, alpha, beta, dtype, opname, stateless):
    from .ops._util import as_tensor
    from .ops.math import divide
    shape = shape_tuple(shape, opname)
    dt = _float_dtype(dtype, opname)
    dev = gen.device
    a = gen._float64_param(alpha, opname, "alpha")
    bshape = tuple(a.shape) if beta is None else np.broadcast_shapes(tuple(a.shape),
                                                                     _param_shape(beta))
    if stateless:
        _check_broadcast(shape, [bshape], opname, "alpha and beta")
        out_shape = shape
    else:
        out_shape = shape + bshape
    g = gen._gamma_draw(a, out_shape)
    with dev.activate():
        out = Tensor(g.astype(dt), dev)
    if beta is None:
        return out
    if isinstance(beta, Tensor):
        if beta._device is not dev:
            raise ValueError(f"{opname}: beta is on {beta._device}, the draw on {dev}")
        b = beta if beta.dtype == as_dtype(dt) else _cast(beta, dt)
    else:
        b = as_tensor(np.asarray(beta, dtype=dt), opname)
    # a tensor beta stays on the tape: the draw is differentiable with respect to it
    return divide(out, b)


def _cast(x, dt):
    from .ops.core import cast
    return cast(x, as_dtype(dt))


def gamma(shape, alpha, beta=None, dtype=_FLOAT32, seed=None, name=None) -> Tensor:
    """Gamma draws of shape ``shape + broadcast(alpha, beta).shape`` (``tf.random.gamma``):
    concentration ``alpha``, inverse scale ``beta`` (1 when None). Gradients flow to a
    tensor ``beta`` (the draw is a standard gamma draw divided by beta), not to ``alpha``
    (TF differentiates the sampler in alpha as well; gradtape does not). NaN where
    alpha <= 0."""
    return _gamma(_generator_for(seed), shape, alpha, beta, dtype, "gamma", False)


def poisson(shape, lam, dtype=_FLOAT32, seed=None, name=None) -> Tensor:
    """Poisson draws of shape ``shape + lam.shape`` (``tf.random.poisson``), of ``dtype``
    (float16/32/64, int32 or int64; float32 by default); 0 where lam <= 0. Not
    differentiable."""
    return _poisson(_generator_for(seed), shape, lam, dtype, "poisson", False)


def _poisson(gen, shape, lam, dtype, opname, stateless):
    shape = shape_tuple(shape, opname)
    dt = _count_dtype(dtype, opname)
    lam = gen._float64_param(lam, opname, "lam")
    if stateless:
        _check_broadcast(shape, [lam.shape], opname, "lam")
        out_shape = shape
    else:
        out_shape = shape + tuple(lam.shape)
    out = gen._poisson_draw(lam, out_shape)
    with gen.device.activate():
        return Tensor(out.astype(dt), gen.device)


# --- stateless random numbers ----------------------------------------------------------------
#
# A stateless op draws from the Philox4x32-10 stream that its seed pair selects, on every
# device (the CPU too), with the kernels the device generators use: the same (seed, shape,
# dtype) gives the same numbers on the CPU, the strict device and a GPU (uniforms and
# integers bit for bit; values computed through log, sin or cos may differ in the last bit
# on a GPU). The streams are gradtape's own, not TensorFlow's: only the properties match
# (a function of seed, shape and dtype alone; different seeds give independent numbers).
# The seed pair (s0, s1) goes through one Philox block under a fixed key, whose four output
# words give the stream's key (two) and starting block (two): a one-to-one map, computed on
# the device when the seed is a tensor there (``split``'s seeds never leave the device).

_SEED_KEY = (0xA4093822, 0x299F31D0)


def _seed_words(xp, s):
    """The Philox words ``(w0, w1, w2, w3)`` of a seed pair ``s`` (uint64 array, shape [2])."""
    from .backend import kernels as K
    mask = np.uint64(0xFFFFFFFF)
    shift = np.uint64(32)
    s0, s1 = s[0], s[1]
    return K.reference_philox(xp, s0 & mask, s0 >> shift, s1 & mask, s1 >> shift, _SEED_KEY)


def _stateless_generator(seed, opname, device=None) -> Generator:
    """A Philox generator on ``device`` (the current one) whose stream the seed pair selects."""
    from .backend import kernels as K
    dev = current_device() if device is None else get_device(device)
    if isinstance(seed, Tensor):
        sv = seed._value
        if sv.dtype.kind not in "iu":
            raise InvalidArgumentError(f"{opname}: seed must be an int32 or int64 tensor of "
                                       f"shape [2], got dtype {as_dtype(sv.dtype).name}")
        if tuple(sv.shape) != (2,):
            raise InvalidArgumentError(f"{opname}: seed must have shape [2], not "
                                       f"{list(sv.shape)}")
        if seed._device is dev and not dev.host_visible:
            xp = dev.xp
            with dev.activate():
                w = _seed_words(xp, sv.astype(np.int64).astype(np.uint64))
                state = xp.stack([w[2] | (w[3] << np.uint64(32)), w[0], w[1]])
            return _philox_generator(dev, state)
        seed = seed.numpy()
    arr = np.asarray(seed)
    if arr.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{opname}: seed must be an int32 or int64 tensor of shape "
                                   f"[2], got {arr.dtype} values {seed!r}")
    if arr.shape != (2,):
        raise InvalidArgumentError(f"{opname}: seed must have shape [2], not {list(arr.shape)}")
    w = _seed_words(np, arr.astype(np.int64).astype(np.uint64))
    with dev.activate():
        state = K.philox_state(dev.xp, (int(w[0]), int(w[1])), int(w[2]) | int(w[3]) << 32)
    return _philox_generator(dev, state)


def _philox_generator(dev, state) -> Generator:
    g = Generator.__new__(Generator)
    g._device = dev
    g._seed_seq = None
    g._rng = _PhiloxState(dev, None, state=state)
    g._lock = threading.Lock()
    return g


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_FLOAT32, name=None,
                     alg="auto_select") -> Tensor:
    """Normal values, a deterministic function of ``seed`` (a shape [2] integer pair),
    ``shape`` and ``dtype`` (``tf.random.stateless_normal``)."""
    return _stateless_generator(seed, "stateless_normal").normal(shape, mean=mean,
                                                                 stddev=stddev, dtype=dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_FLOAT32, name=None,
                               alg="auto_select") -> Tensor:
    """Normal values redrawn beyond two standard deviations, a deterministic function of
    ``seed``, ``shape`` and ``dtype`` (``tf.random.stateless_truncated_normal``)."""
    return _stateless_generator(seed, "stateless_truncated_normal").truncated_normal(
        shape, mean=mean, stddev=stddev, dtype=dtype)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_FLOAT32, name=None,
                      alg="auto_select") -> Tensor:
    """Uniform values in ``[minval, maxval)``, a deterministic function of ``seed``, ``shape``
    and ``dtype`` (``tf.random.stateless_uniform``). Floats: ``maxval`` defaults to 1.
    Integers (int32, int64): scalar bounds; with ``minval=None`` and ``maxval=None`` (the
    only form uint32 and uint64 take) the whole range of the dtype."""
    opname = "stateless_uniform"
    dt = np_dtype(dtype) if dtype is not None else _FLOAT32
    if dt not in _STATELESS_UNIFORM_DTYPES:
        raise ValueError(f"{opname}: Argument `dtype` got invalid value {as_dtype(dt).name}. "
                         f"Accepted dtypes are float16, float32, float64, int32, int64, "
                         f"uint32, uint64.")
    shape = shape_tuple(shape, opname)
    if dt.kind in "iu":
        if (minval is None) != (maxval is None):
            raise ValueError(f"{opname}: For integer `dtype` argument {as_dtype(dt).name}, "
                             f"argument `minval` and `maxval` must be both None or not None. "
                             f"Got `minval`={minval} and `maxval`={maxval}.")
        if minval is None:
            return _stateless_generator(seed, opname).uniform_full_int(shape, dtype=dt)
        if dt.kind == "u":
            raise ValueError(f"{opname}: Argument `dtype` got invalid value "
                             f"{as_dtype(dt).name} when argument `minval` is not None. Please "
                             f"don't use unsigned integers in this case.")
        for what, v in (("minval", minval), ("maxval", maxval)):
            if len(_param_shape(v)):
                raise InvalidArgumentError(f"{opname}: {what} must be 0-D, got shape "
                                           f"{list(_param_shape(v))}")
    elif minval is None:
        raise ValueError(f"{opname}: minval must be a number for a floating dtype, got None")
    return _stateless_generator(seed, opname).uniform(shape, minval=minval, maxval=maxval,
                                                      dtype=dt)


def stateless_categorical(logits, num_samples, seed, dtype=np.int64, name=None) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` ``[batch, classes]``, a
    deterministic function of ``seed`` (``tf.random.stateless_categorical``)."""
    from .ops._util import as_tensor
    x = as_tensor(logits, "stateless_categorical")
    return _categorical(x, num_samples, dtype, "stateless_categorical",
                        lambda dev: _stateless_generator(seed, "stateless_categorical", dev))


def stateless_gamma(shape, seed, alpha, beta=None, dtype=_FLOAT32, name=None) -> Tensor:
    """Gamma draws of ``shape`` (which must end with ``broadcast(alpha, beta).shape``), a
    deterministic function of ``seed`` (``tf.random.stateless_gamma``); differentiable in a
    tensor ``beta``, not in ``alpha`` (see :func:`gamma`)."""
    return _gamma(_stateless_generator(seed, "stateless_gamma"), shape, alpha, beta, dtype,
                  "stateless_gamma", True)


def stateless_poisson(shape, seed, lam, dtype=np.int32, name=None) -> Tensor:
    """Poisson draws of ``shape`` (``lam`` broadcast to it), a deterministic function of
    ``seed`` (``tf.random.stateless_poisson``; int32 by default); 0 where lam <= 0."""
    return _poisson(_stateless_generator(seed, "stateless_poisson"), shape, lam, dtype,
                    "stateless_poisson", True)


def stateless_binomial(shape, seed, counts, probs, output_dtype=np.int32, name=None) -> Tensor:
    """Binomial draws of ``shape`` (``counts`` and ``probs`` broadcast to it), a deterministic
    function of ``seed`` (``tf.random.stateless_binomial``)."""
    return _stateless_generator(seed, "stateless_binomial").binomial(shape, counts, probs,
                                                                     dtype=output_dtype)


def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0, minvals=-2.0,
                                             maxvals=2.0, name=None) -> Tensor:
    """Normal values of ``means`` and ``stddevs`` restricted to ``[minvals, maxvals]`` (all
    broadcast to ``shape``), a deterministic function of ``seed``
    (``tf.random.stateless_parameterized_truncated_normal``). Drawn by inverting the normal
    CDF in float64 on the side of the interval nearer the mean (accurate to bounds about 37
    standard deviations out); the dtype is the parameters' floating dtype (float32 by
    default). Needs SciPy on the CPU (``ndtr``, ``ndtri``). Not differentiable."""
    from .ops.extra import _special
    opname = "stateless_parameterized_truncated_normal"
    shape = shape_tuple(shape, opname)
    params = [means, stddevs, minvals, maxvals]
    dt = _FLOAT32
    for v in params:
        k = v.dtype.as_numpy_dtype if isinstance(v, Tensor) else None
        if k is not None and np.dtype(k).kind == "f":
            dt = np.dtype(k)
            break
    gen = _stateless_generator(seed, opname)
    dev = gen.device
    arrs = [gen._float64_param(v, opname, w)
            for v, w in zip(params, ("means", "stddevs", "minvals", "maxvals"))]
    _check_broadcast(shape, [a.shape for a in arrs], opname)
    u = gen._random(shape, np.float64)
    xp = dev.xp
    with dev.activate(), np.errstate(all="ignore"):
        mean, std, lo, hi = (xp.broadcast_to(a, shape) for a in arrs)
        a = (lo - mean) / std
        b = (hi - mean) / std
        # draw on the side nearer the mean: there both CDF values are accurate in float64
        flip = a > 0
        lo_s = xp.where(flip, -b, a)
        hi_s = xp.where(flip, -a, b)
        pa = _special("ndtr", xp, lo_s)
        pb = _special("ndtr", xp, hi_s)
        z = _special("ndtri", xp, pa + u * (pb - pa))
        z = xp.clip(z, lo_s, hi_s)
        z = xp.where(flip, -z, z)
        out = mean + std * z
        return Tensor(out.astype(dt), dev)


def split(seed, num=2, alg="auto_select") -> Tensor:
    """``num`` new seeds from ``seed``, shape ``[num, 2]`` of the seed's dtype (int32 for a
    Python pair), as ``tf.random.split``: the full-range integers of
    ``stateless_uniform([num, 2], seed)``."""
    from .ops._util import as_tensor
    s = seed if isinstance(seed, Tensor) else as_tensor(seed, "split")
    n = int(num.numpy() if isinstance(num, Tensor) else num)
    if n < 0:
        raise ValueError(f"split: num must be >= 0, got {n}")
    return stateless_uniform([n, 2], s, minval=None, maxval=None, dtype=s.dtype)


def fold_in(seed, data, alg="auto_select") -> Tensor:
    """A new seed from ``seed`` and the integer ``data`` (``tf.random.fold_in``): ``[x,
    data]`` where x is a full-range integer drawn from ``seed``, of ``data``'s dtype."""
    from .ops._util import as_tensor
    from .ops.shape import stack
    d = data if isinstance(data, Tensor) else as_tensor(data, "fold_in")
    if d.dtype.as_numpy_dtype not in (np.int32, np.int64) or d._value.ndim != 0:
        raise InvalidArgumentError(f"fold_in: data must be an int32 or int64 scalar, got "
                                   f"dtype {d.dtype.name} and shape {tuple(d._value.shape)}")
    x = stateless_uniform([], seed, minval=None, maxval=None, dtype=d.dtype)
    if d._device is not x._device:
        from .ops.core import copy_to_device
        d = copy_to_device(d, x._device)
    return stack([x, d])


def _make_experimental():
    """``gt.random.experimental``, as ``tf.random.experimental``."""
    import sys
    import types
    mod = types.ModuleType(__name__ + ".experimental",
                           "tf.random.experimental: the stateless seed helpers and the "
                           "generator API under their experimental names.")
    for attr, value in (("Generator", Generator), ("create_rng_state", create_rng_state),
                        ("get_global_generator", get_global_generator),
                        ("set_global_generator", set_global_generator),
                        ("stateless_split", split), ("stateless_fold_in", fold_in)):
        setattr(mod, attr, value)
    mod.__all__ = ["Generator", "create_rng_state", "get_global_generator",
                   "set_global_generator", "stateless_split", "stateless_fold_in"]
    sys.modules[mod.__name__] = mod
    return mod


experimental = _make_experimental()

from .nn_extra import (log_uniform_candidate_sampler, uniform_candidate_sampler,  # noqa: E402
                       fixed_unigram_candidate_sampler, learned_unigram_candidate_sampler,
                       all_candidate_sampler)
__all__ += ["log_uniform_candidate_sampler", "uniform_candidate_sampler",
            "fixed_unigram_candidate_sampler", "learned_unigram_candidate_sampler",
            "all_candidate_sampler"]


class Algorithm(enum.Enum):
    """``tf.random.Algorithm``: the RNG algorithm names TF's ``alg`` arguments take (with
    TF's values). gradtape accepts them and draws from its own generators whatever the
    choice."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


__all__ += ["Algorithm"]
experimental.Algorithm = Algorithm            # also tf.random.experimental.Algorithm
experimental.__all__.append("Algorithm")
