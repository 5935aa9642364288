"""The rest of ``tf.nn``: candidate sampling and the sampled losses, pooling with argmax,
fractional pooling, morphological dilation and erosion, isotonic regression, the depthwise
convolution gradients, space-to-batch rearrangements and TF's RNN cell wrappers.

Candidate samplers (``gt.random.*_candidate_sampler``, as TensorFlow's CPU kernels in
``range_sampler.cc``) draw on the host from gradtape's generators: the draws are not
TensorFlow's (another generator), but their distribution is, and the expected counts of
given candidates are TensorFlow's numbers (float32 arithmetic included): ``p * num_sampled``
when every try was kept, else ``1 - (1 - p) ** num_tries`` (``unique=True``, ``num_tries``
the draws it took to find ``num_sampled`` distinct values). The true classes' expected
counts are computed on their device (the learned unigram sampler reads them on the host to
update its counts, as TF's kernel does).

Window ops that pick a maximum (``max_pool_with_argmax``, ``fractional_max_pool``,
``dilation2d``) find each window's first maximum in row-major tap order with a
non-differentiable primitive and gather the values from the input, so their gradients are
TensorFlow's: each output's gradient goes to the element it came from (for dilation also to
the filter tap), and their second derivatives are gathers again.
"""
from __future__ import annotations

import collections
import math as _pymath
import threading

import numpy as np

from .backend import get_device
from .dtypes import as_dtype
from .registry import InvalidArgumentError, apply, defop
from .tensor import Tensor
from .ops._util import as_tensor

__all__ = ["log_uniform_candidate_sampler", "uniform_candidate_sampler",
           "fixed_unigram_candidate_sampler", "learned_unigram_candidate_sampler",
           "all_candidate_sampler", "compute_accidental_hits", "nce_loss",
           "sampled_softmax_loss", "max_pool_with_argmax", "dilation2d", "erosion2d",
           "fractional_max_pool", "fractional_avg_pool", "isotonic_regression",
           "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
           "atrous_conv2d_transpose", "batch_norm_with_global_normalization",
           "with_space_to_batch", "space_to_batch", "space_to_batch_nd", "batch_to_space",
           "required_space_to_batch_paddings"]
# (and the RNN cell wrappers, made on first use: see __getattr__)


def _rnd():
    from . import random
    return random


_FLT_MAX = float(np.finfo(np.float32).max)
_F32 = np.float32

CandidateSamplerOutput = collections.namedtuple(
    "CandidateSamplerOutput", ["sampled_candidates", "true_expected_count",
                               "sampled_expected_count"])
AccidentalHits = collections.namedtuple("AccidentalHits", ["indices", "ids", "weights"])


# --- candidate sampling ------------------------------------------------------------------------

def _positive_int(value, opname, what, minimum=1):
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{opname}: {what} must be an int, got {value!r}")
    if int(value) < minimum:
        raise InvalidArgumentError(f"{opname}: {what} must be >= {minimum}, got {int(value)}")
    return int(value)


def _true_classes(true_classes, num_true, opname):
    """``true_classes`` as an int64 ``[batch_size, num_true]`` tensor."""
    from .ops.core import cast
    t = as_tensor(true_classes, opname)
    if t._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: true_classes must be an integer tensor, got "
                        f"{t.dtype.name}")
    if t._value.ndim != 2:
        raise InvalidArgumentError(f"{opname}: true_classes must be a matrix [batch_size, "
                                   f"num_true], got shape {tuple(t._value.shape)}")
    if t._value.shape[1] != num_true:
        raise InvalidArgumentError(f"{opname}: true_classes must have num_true={num_true} "
                                   f"columns, got shape {tuple(t._value.shape)}")
    return t if t._value.dtype == np.int64 else cast(t, np.int64)


def _check_in_range(t: Tensor, range_max, opname):
    """TF's check that every true class is in ``[0, range_max)``, where the host can read
    them (a device would have to wait for it; there an id outside has probability 0 or the
    sampler's formula)."""
    if not t._device.host_visible or t._value.size == 0:
        return
    v = t._value
    lo, hi = int(v.min()), int(v.max())
    if lo < 0 or hi >= range_max:
        bad = lo if lo < 0 else hi
        raise InvalidArgumentError(f"{opname}: `true_candidate` out of range [0, {range_max}), "
                                   f"received {bad}")


def _expected_count(xp, p, num_sampled, num_tries):
    """TF's ExpectedCountHelper in float32: ``p * num_sampled`` when every try was kept,
    else ``-expm1(num_tries * log1p(-p))``."""
    if num_tries == num_sampled:
        return p * _F32(num_sampled)
    return -xp.expm1(_F32(num_tries) * xp.log1p(-p))


def _draw_unique(draw, num_sampled):
    """Draw values until ``num_sampled`` distinct ones were seen, keeping the first of each
    (TF's rejection loop): ``(values, num_tries)``. ``draw(k)`` gives k host draws."""
    picked = []
    seen = np.empty(0, dtype=np.int64)
    tries = 0
    while len(picked) < num_sampled:
        need = num_sampled - len(picked)
        chunk = np.asarray(draw(max(2 * need, 16)), dtype=np.int64)
        _, first = np.unique(chunk, return_index=True)
        fresh = np.zeros(chunk.shape, dtype=bool)
        fresh[first] = True
        if seen.size:
            fresh &= ~np.isin(chunk, seen)
        pos = np.flatnonzero(fresh)
        if pos.size >= need:
            picked.extend(chunk[pos[:need]].tolist())
            tries += int(pos[need - 1]) + 1
            break
        picked.extend(chunk[pos].tolist())
        seen = np.concatenate([seen, chunk[pos]])
        tries += chunk.size
    return np.asarray(picked, dtype=np.int64), tries


class _RangeSampler:
    """A sampler over ``[0, range)``: host draws, host and device probabilities."""

    def __init__(self, range_max):
        self.range = range_max

    def positive(self) -> int:
        """How many values can be drawn (for unique sampling)."""
        return self.range

    def sample(self, gen, k) -> np.ndarray:
        raise NotImplementedError

    def prob_host(self, values) -> np.ndarray:
        raise NotImplementedError

    def prob_device(self, t: Tensor):
        raise NotImplementedError


class _UniformSampler(_RangeSampler):
    def sample(self, gen, k):
        return gen._integers((k,), 0, self.range, np.int64)

    def _p(self):
        return _F32(1.0 / self.range)

    def prob_host(self, values):
        return np.full(values.shape, self._p(), dtype=_F32)

    def prob_device(self, t):
        return t._device.xp.full(t._value.shape, self._p(), dtype=_F32)


class _LogUniformSampler(_RangeSampler):
    def __init__(self, range_max):
        super().__init__(range_max)
        self.log_range = _pymath.log1p(range_max)

    def sample(self, gen, k):
        u = gen._random((k,), np.float64)
        return (np.exp(u * self.log_range).astype(np.int64) - 1) % self.range

    def _p(self, xp, v):
        v = v.astype(np.float64)
        return (xp.log((v + 2.0) / (v + 1.0)) / self.log_range).astype(_F32)

    def prob_host(self, values):
        return self._p(np, values)

    def prob_device(self, t):
        return self._p(t._device.xp, t._value)


class _TableSampler(_RangeSampler):
    """A sampler with a probability table (the unigram samplers): inverse-CDF draws."""

    def __init__(self, weights, probs):
        super().__init__(len(weights))
        self.probs = probs                                    # float32, host
        self.cdf = np.cumsum(np.asarray(weights, dtype=np.float64))

    def positive(self):
        return int(np.count_nonzero(self.probs > 0))

    def sample(self, gen, k):
        u = gen._random((k,), np.float64) * self.cdf[-1]
        return np.minimum(np.searchsorted(self.cdf, u, side="right"), self.range - 1)

    def prob_host(self, values):
        ok = (values >= 0) & (values < self.range)
        return np.where(ok, self.probs[np.clip(values, 0, self.range - 1)], _F32(0))

    def prob_device(self, t):
        dev = t._device
        xp = dev.xp
        table = dev.asarray(self.probs)
        v = t._value
        ok = (v >= 0) & (v < self.range)
        return xp.where(ok, table[xp.clip(v, 0, self.range - 1)], _F32(0))


def _candidate_sampler(opname, sampler, true_classes, num_true, num_sampled, unique, seed,
                       true_host=None):
    t = _true_classes(true_classes, num_true, opname)
    _check_in_range(t, sampler.range, opname)
    if unique and num_sampled > sampler.range:
        raise InvalidArgumentError(f"{opname}: Sampler's range is too small: num_sampled="
                                   f"{num_sampled} unique values from range_max="
                                   f"{sampler.range}")
    if unique and num_sampled > sampler.positive():
        raise InvalidArgumentError(f"{opname}: only {sampler.positive()} values have a "
                                   f"non-zero probability, fewer than num_sampled="
                                   f"{num_sampled} unique ones")
    gen = _rnd()._generator_for(seed, get_device("cpu"))
    if unique:
        sampled, tries = _draw_unique(lambda k: sampler.sample(gen, k), num_sampled)
    else:
        sampled = np.asarray(sampler.sample(gen, num_sampled), dtype=np.int64)
        tries = num_sampled
    dev = t._device
    sampled_count = _expected_count(np, sampler.prob_host(sampled), num_sampled, tries)
    with dev.activate():
        if true_host is not None:
            true_p = dev.asarray(sampler.prob_host(true_host))
        else:
            true_p = sampler.prob_device(t)
        true_count = _expected_count(dev.xp, true_p, num_sampled, tries)
        return CandidateSamplerOutput(Tensor(dev.asarray(sampled), dev), Tensor(true_count, dev),
                                      Tensor(dev.asarray(sampled_count.astype(_F32)), dev))


def _sampler_args(opname, num_true, num_sampled, unique, range_max=None):
    num_true = _positive_int(num_true, opname, "num_true")
    num_sampled = _positive_int(num_sampled, opname, "num_sampled")
    if not isinstance(unique, (bool, np.bool_)):
        raise TypeError(f"{opname}: unique must be a bool, got {unique!r}")
    if range_max is not None:
        range_max = _positive_int(range_max, opname, "range_max")
    return num_true, num_sampled, bool(unique), range_max


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """Sample ``num_sampled`` classes uniformly from ``[0, range_max)``, as
    ``tf.random.uniform_candidate_sampler``: ``(sampled_candidates`` int64 ``[num_sampled],
    true_expected_count`` float32 like ``true_classes``, ``sampled_expected_count)``.
    With ``unique`` the candidates are distinct (rejection sampling)."""
    opname = "uniform_candidate_sampler"
    num_true, num_sampled, unique, range_max = _sampler_args(opname, num_true, num_sampled,
                                                             unique, range_max)
    return _candidate_sampler(opname, _UniformSampler(range_max), true_classes, num_true,
                              num_sampled, unique, seed)


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Sample classes from the log-uniform (Zipfian) distribution ``P(c) = (log(c + 2) -
    log(c + 1)) / log(range_max + 1)``, as ``tf.random.log_uniform_candidate_sampler``
    (classes should be sorted by decreasing frequency). Returns ``(sampled_candidates,
    true_expected_count, sampled_expected_count)``."""
    opname = "log_uniform_candidate_sampler"
    num_true, num_sampled, unique, range_max = _sampler_args(opname, num_true, num_sampled,
                                                             unique, range_max)
    return _candidate_sampler(opname, _LogUniformSampler(range_max), true_classes, num_true,
                              num_sampled, unique, seed)


def _read_vocab_file(vocab_file, opname):
    """The last comma-separated field of each line of ``vocab_file``, as float32 (empty
    lines are skipped, as TF's reader does)."""
    values = []
    with open(vocab_file, encoding="utf-8") as fh:
        for line in fh.read().splitlines():
            if not line:
                continue
            field = line.split(",")[-1].strip()
            try:
                values.append(_F32(float(field)))
            except ValueError:
                raise InvalidArgumentError(f"{opname}: Wrong vocabulary format at line: "
                                           f"{line}") from None
    return values


def _fixed_unigram_table(unigrams, distortion, num_reserved_ids, num_shards, shard):
    """TF's FixedUnigramSampler: ``(weights, probabilities)`` of this shard, float32.

    Reserved ids come first with weight 0 (those of this shard); the unigram entries then
    continue the word ids from the number of weights so far, as TF's kernel does, and an
    entry belongs to this shard when its word id modulo ``num_shards`` is ``shard``. Each
    weight is raised to ``distortion`` and summed into a float32 total.
    """
    reserved = int(np.count_nonzero(np.arange(num_reserved_ids) % num_shards == shard))
    values = np.asarray(unigrams, dtype=_F32)
    mine = values[(reserved + np.arange(values.size)) % num_shards == shard]
    mine = np.power(mine, _F32(distortion)).astype(_F32)
    # the total summed in float32 in order (an accumulate, not a pairwise sum)
    total = np.add.accumulate(mine, dtype=_F32)[-1] if mine.size else _F32(0)
    weights = np.concatenate([np.zeros(reserved, dtype=_F32), mine])
    with np.errstate(divide="ignore", invalid="ignore"):
        probs = (weights / total).astype(_F32)
    return weights, probs


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None, name=None):
    """Sample classes from a fixed unigram distribution, as
    ``tf.random.fixed_unigram_candidate_sampler``: the weights come from ``unigrams`` or from
    the last comma-separated field of each line of ``vocab_file`` (exactly one of them),
    raised to the power ``distortion``; ids ``[0, num_reserved_ids)`` get probability 0;
    with ``num_shards`` > 1 this sampler covers the ids of shard ``shard`` (word id modulo
    ``num_shards``), and ``range_max`` must equal their number."""
    opname = "fixed_unigram_candidate_sampler"
    num_true, num_sampled, unique, range_max = _sampler_args(opname, num_true, num_sampled,
                                                             unique, range_max)
    has_file = bool(vocab_file)
    unigrams = list(unigrams) if not isinstance(unigrams, Tensor) else \
        unigrams.numpy().tolist()
    if has_file == bool(unigrams):
        raise InvalidArgumentError(f"{opname}: " + ("Must only provide one of vocab_file and "
                                                    "unigrams." if has_file else
                                                    "Must provide either vocab_file or "
                                                    "unigrams."))
    num_reserved_ids = _positive_int(num_reserved_ids, opname, "num_reserved_ids", 0)
    num_shards = _positive_int(num_shards, opname, "num_shards", 1)
    shard = _positive_int(shard, opname, "shard", 0)
    if shard >= num_shards:
        raise InvalidArgumentError(f"{opname}: shard must be in [0, num_shards={num_shards}), "
                                   f"got {shard}")
    values = _read_vocab_file(vocab_file, opname) if has_file else \
        np.asarray(unigrams, dtype=_F32)
    weights, probs = _fixed_unigram_table(values, float(distortion), num_reserved_ids,
                                          num_shards, shard)
    if len(weights) != range_max:
        raise InvalidArgumentError(f"{opname}: range is {range_max} must be equal to weights "
                                   f"size  {len(weights)}")
    return _candidate_sampler(opname, _TableSampler(weights, probs), true_classes, num_true,
                              num_sampled, unique, seed)


class _LearnedCounts:
    """The learned unigram sampler's counts: every class starts at 1 and each true class
    seen adds 1 (after the sampling), as TF's UnigramSampler."""

    def __init__(self, range_max):
        self.weights = np.ones(range_max, dtype=np.int64)
        self.total = range_max

    def table(self):
        w = self.weights
        probs = (w.astype(_F32) / _F32(self.total)).astype(_F32)
        return _TableSampler(w, probs)

    def update(self, values):
        n = min(values.size, 2 ** 31 - 1 - self.total)
        if n > 0:
            np.add.at(self.weights, values[:n], 1)
            self.total += n


_LEARNED = {}
_LEARNED_LOCK = threading.Lock()


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                      seed=None, name=None):
    """Sample classes from a unigram distribution learned from the true classes seen so far,
    as ``tf.random.learned_unigram_candidate_sampler``: each class starts with weight 1 and
    gains 1 each time it is a true class (after the call's sampling). As TF's eager kernel,
    the counts belong to the sampler's arguments (``num_true``, ``num_sampled``, ``unique``,
    ``range_max`` and the seeds) and persist across calls that repeat them; without a seed
    but with a global seed each call starts afresh. The true classes are read on the host."""
    opname = "learned_unigram_candidate_sampler"
    num_true, num_sampled, unique, range_max = _sampler_args(opname, num_true, num_sampled,
                                                             unique, range_max)
    if range_max > 2147483647:
        raise ValueError(f"{opname}: Value of range_max:{range_max} is too large to handle")
    t = _true_classes(true_classes, num_true, opname)
    host = np.asarray(t.numpy(), dtype=np.int64)
    bad = host[(host < 0) | (host >= range_max)]
    if bad.size:
        raise InvalidArgumentError(f"{opname}: `true_candidate` out of range [0, {range_max}), "
                                   f"received {int(bad[0])}")
    seed_key = None if seed is None else _rnd()._seed_int(seed, opname)
    key = (num_true, num_sampled, unique, range_max, _rnd()._GLOBAL.seed,
           tuple(seed_key) if isinstance(seed_key, list) else seed_key)
    with _LEARNED_LOCK:
        if seed is None and _rnd()._GLOBAL.seed is not None:
            counts = _LearnedCounts(range_max)
        else:
            counts = _LEARNED.get(key)
            if counts is None:
                counts = _LEARNED[key] = _LearnedCounts(range_max)
        out = _candidate_sampler(opname, counts.table(), t, num_true, num_sampled, unique, seed,
                                 true_host=host)
        counts.update(host.reshape(-1))
    return out


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """All classes ``[0, num_sampled)`` as the "sample", each with expected count 1, as
    ``tf.random.all_candidate_sampler`` (``unique`` and ``seed`` are ignored)."""
    opname = "all_candidate_sampler"
    num_true, num_sampled, unique, _ = _sampler_args(opname, num_true, num_sampled, unique)
    t = _true_classes(true_classes, num_true, opname)
    _check_in_range(t, num_sampled, opname)
    dev = t._device
    with dev.activate():
        xp = dev.xp
        return CandidateSamplerOutput(Tensor(xp.arange(num_sampled, dtype=np.int64), dev),
                                      Tensor(xp.ones(t._value.shape, dtype=_F32), dev),
                                      Tensor(xp.ones((num_sampled,), dtype=_F32), dev))


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """The sampled candidates that equal a true class of an example, as
    ``tf.nn.compute_accidental_hits``: ``(indices`` int32 (the example's row), ``ids`` int64
    (the position in ``sampled_candidates``; a candidate sampled more than once is found at
    its last position, as TF's kernel), ``weights`` float32 ``-FLT_MAX)``, in row-major
    order of ``true_classes``. Read on the host (the number of hits is data-dependent)."""
    opname = "compute_accidental_hits"
    num_true = _positive_int(num_true, opname, "num_true")
    t = _true_classes(true_classes, num_true, opname)
    s = as_tensor(sampled_candidates, opname)
    if s._value.ndim != 1:
        raise InvalidArgumentError(f"{opname}: sampled_candidates must be a vector, which is "
                                   f"typically an output from CandidateSampler; got shape "
                                   f"{tuple(s._value.shape)}")
    if s._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: sampled_candidates must be integers, got {s.dtype.name}")
    true_h = np.asarray(t.numpy(), dtype=np.int64)
    samp_h = np.asarray(s.numpy(), dtype=np.int64)
    last = {int(v): i for i, v in enumerate(samp_h)}
    indices, ids = [], []
    for i, row in enumerate(true_h):
        for v in row:
            j = last.get(int(v))
            if j is not None:
                indices.append(i)
                ids.append(j)
    dev = t._device
    n = len(indices)
    return AccidentalHits(Tensor(dev.asarray(np.asarray(indices, dtype=np.int32)), dev),
                          Tensor(dev.asarray(np.asarray(ids, dtype=np.int64)), dev),
                          Tensor(dev.asarray(np.full(n, -_FLT_MAX, dtype=_F32)), dev))


# --- sampled losses ----------------------------------------------------------------------------

def _sharded_lookup(params, ids: Tensor, partition_strategy, opname):
    """Rows of ``params`` (a tensor, or a list of row shards) at int64 ``ids``, with TF's
    ``"mod"`` (id ``i`` is row ``i // n`` of shard ``i % n``) or ``"div"`` (contiguous
    blocks, the first ``total % n`` shards one row longer) partition of the ids."""
    from .ops.shape import concat, gather
    shards = list(params) if isinstance(params, (list, tuple)) else [params]
    if not shards:
        raise ValueError(f"{opname}: params must be a tensor or a non-empty list of shards")
    shards = [as_tensor(p, opname) for p in shards]
    if len(shards) == 1:
        return gather(shards[0], ids)
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"{opname}: partition_strategy must be 'mod' or 'div', got "
                         f"{partition_strategy!r}")
    sizes = [int(s._value.shape[0]) for s in shards]
    n = len(shards)
    dev = ids._device
    with dev.activate():
        xp = dev.xp
        v = ids._value
        if partition_strategy == "mod":
            part, row = v % n, v // n
        else:
            per, extras = sum(sizes) // n, sum(sizes) % n
            part = xp.maximum(v // (per + 1), (v - extras) // max(per, 1))
            row = xp.where(part < extras, v % (per + 1), (v - extras) % max(per, 1))
        offsets = dev.asarray(np.cumsum([0] + sizes[:-1]).astype(np.int64))
        flat = offsets[xp.clip(part, 0, n - 1)] + row
    return gather(concat(shards, 0), Tensor(flat, dev))


def _accidental_hit_mask(labels: Tensor, sampled: Tensor):
    """``[batch, num_sampled]`` bool: sampled position j is a hit of example i when a true
    class of i equals it and no later position holds the same candidate (TF's
    compute_accidental_hits maps each candidate to its last position)."""
    dev = labels._device
    with dev.activate():
        xp = dev.xp
        lv, sv = labels._value, sampled._value
        hit = (lv[:, :, None] == sv[None, None, :]).any(axis=1)
        k = xp.arange(sv.shape[0])
        later = (sv[:, None] == sv[None, :]) & (k[None, :] > k[:, None])
        return hit & ~later.any(axis=1)[None, :]


def _compute_sampled_logits(opname, weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true, sampled_values, subtract_log_q, remove_accidental_hits,
                            partition_strategy, seed):
    """TF's ``_compute_sampled_logits``: ``(logits, labels)`` of shape ``[batch_size,
    num_true + num_sampled]``, the true classes first."""
    from .ops.core import cast, ones_like, stop_gradient, zeros_like
    from .ops.linalg import matmul
    from .ops.math import log, where
    from .ops.nn import _float_input
    from .ops.reduce import reduce_sum
    from .ops.shape import concat, expand_dims, reshape
    x = _float_input(inputs, opname)
    if x._value.ndim != 2:
        raise ValueError(f"{opname}: inputs must be [batch_size, dim], got shape "
                         f"{tuple(x._value.shape)}")
    num_true = _positive_int(num_true, opname, "num_true")
    num_sampled = _positive_int(num_sampled, opname, "num_sampled")
    lab = as_tensor(labels, opname)
    if lab._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: labels must be integers, got {lab.dtype.name}")
    if lab._value.dtype != np.int64:
        lab = cast(lab, np.int64)
    batch = x._value.shape[0]
    if lab._value.size != batch * num_true:
        raise InvalidArgumentError(f"{opname}: labels of shape {tuple(lab._value.shape)} do not "
                                   f"hold num_true={num_true} classes for each of the {batch} "
                                   "inputs")
    labels_flat = reshape(lab, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(reshape(lab, [batch, num_true]),
                                                       num_true, num_sampled, True, num_classes,
                                                       seed=seed)
    sampled, true_expected, sampled_expected = (stop_gradient(as_tensor(s, opname))
                                                for s in sampled_values)
    if sampled._value.dtype != np.int64:
        sampled = cast(sampled, np.int64)
    dt = x.dtype
    all_ids = concat([labels_flat, sampled], 0)
    all_w = _sharded_lookup(weights, all_ids, partition_strategy, opname)
    if all_w.dtype != dt:
        all_w = cast(all_w, dt)
    n = batch * num_true
    dim = x._value.shape[1]
    true_w, sampled_w = all_w[:n], all_w[n:]
    sampled_logits = matmul(x, sampled_w, transpose_b=True)
    all_b = _sharded_lookup(biases, all_ids, partition_strategy, opname)
    if all_b.dtype != dt:
        all_b = cast(all_b, dt)
    true_b, sampled_b = all_b[:n], all_b[n:]
    dots = expand_dims(x, 1) * reshape(true_w, [-1, num_true, dim])
    true_logits = reshape(reduce_sum(reshape(dots, [-1, dim]), 1), [-1, num_true])
    true_logits = true_logits + reshape(true_b, [-1, num_true])
    sampled_logits = sampled_logits + sampled_b
    if remove_accidental_hits:
        hit = Tensor(_accidental_hit_mask(reshape(lab, [batch, num_true]), sampled), x._device)
        sampled_logits = sampled_logits + where(hit, -_FLT_MAX, zeros_like(sampled_logits))
    if subtract_log_q:
        true_logits = true_logits - log(cast(true_expected, dt))
        sampled_logits = sampled_logits - log(cast(sampled_expected, dt))
    out_logits = concat([true_logits, sampled_logits], 1)
    out_labels = concat([ones_like(true_logits) / num_true, zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, name="nce_loss"):
    """Noise-contrastive estimation loss per example, as ``tf.nn.nce_loss``: the sigmoid
    cross-entropies of the true classes' logits (label ``1 / num_true``) and of
    ``num_sampled`` sampled classes' logits (label 0), each minus the log of its expected
    count, summed per example (``[batch_size]``).

    ``weights`` ``[num_classes, dim]`` (or a list of row shards, split as TF's ``"div"``
    strategy), ``biases`` ``[num_classes]``, ``labels`` int ``[batch_size, num_true]``,
    ``inputs`` ``[batch_size, dim]``. Without ``sampled_values`` the classes come from
    :func:`log_uniform_candidate_sampler` (``unique=True``); given ``(sampled_candidates,
    true_expected_count, sampled_expected_count)`` the loss is deterministic.
    ``remove_accidental_hits`` sends sampled classes equal to a true class to ``-FLT_MAX``.
    Differentiable with respect to ``weights``, ``biases`` and ``inputs``."""
    from .ops.nn import sigmoid_cross_entropy_with_logits
    from .ops.reduce import reduce_sum
    logits, target = _compute_sampled_logits(
        "nce_loss", weights, biases, labels, inputs, num_sampled, num_classes, num_true,
        sampled_values, True, remove_accidental_hits, "div", None)
    return reduce_sum(sigmoid_cross_entropy_with_logits(labels=target, logits=logits), 1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True, seed=None,
                         name="sampled_softmax_loss"):
    """Sampled softmax loss per example, as ``tf.nn.sampled_softmax_loss``: the softmax
    cross-entropy over the true classes (each with probability ``1 / num_true``) and
    ``num_sampled`` sampled classes, their logits corrected by the log expected counts
    (``[batch_size]``). Arguments as :func:`nce_loss`; ``seed`` seeds the default
    log-uniform sampler, and accidental hits are removed by default."""
    from .ops.core import stop_gradient
    from .ops.nn import softmax_cross_entropy_with_logits
    logits, target = _compute_sampled_logits(
        "sampled_softmax_loss", weights, biases, labels, inputs, num_sampled, num_classes,
        num_true, sampled_values, True, remove_accidental_hits, "div", seed)
    return softmax_cross_entropy_with_logits(labels=stop_gradient(target), logits=logits)


# --- windows picking a maximum: argmax primitives ----------------------------------------------
# A window axis (rows or columns) is described for the primitives by a hashable spec:
#   ("grid", out, stride, pad, rate, size, k): tap i of output o reads o * stride - pad + i * rate
#   ("seq", starts, ends, size): tap i of output o reads starts[o] + i while <= ends[o]
# Taps outside [0, size) (or past the window's end) are skipped.

def _axis_taps(xp, spec):
    """Per tap: (index array [out] clipped into range, valid bool array [out]) and the
    default index of each output (its window's first position, clipped), on the device."""
    if spec[0] == "grid":
        _, out, stride, pad, rate, size, k = spec
        base = xp.arange(out, dtype=np.int64) * stride - pad
        taps = []
        for i in range(k):
            idx = base + i * rate
            taps.append((xp.clip(idx, 0, size - 1), (idx >= 0) & (idx < size)))
        return taps, xp.clip(base, 0, size - 1)
    _, starts, ends, size = spec
    s = xp.asarray(np.asarray(starts, dtype=np.int64))
    e = xp.asarray(np.asarray(ends, dtype=np.int64))
    k = max(int(b) - int(a) + 1 for a, b in zip(starts, ends)) if starts else 0
    taps = [(xp.clip(s + i, 0, size - 1), (s + i <= e) & (s + i < size)) for i in range(k)]
    return taps, xp.clip(s, 0, size - 1)


def _flat_index(xp, shape, r, c):
    """Flat NHWC index of rows ``r`` and columns ``c`` (``[N, OH, OW, C]`` each)."""
    n, h, w, ch = shape
    b = xp.arange(n, dtype=np.int64).reshape(n, 1, 1, 1)
    d = xp.arange(ch, dtype=np.int64).reshape(1, 1, 1, ch)
    return ((b * h + r) * w + c) * ch + d


def _pool_argmax_fwd(xp, x, rows, cols):
    # TF's MaxPoolWithArgmax / FractionalMaxPoolGrad: a window's element replaces the
    # current maximum when it is larger, or when no element was taken yet (so a NaN first
    # element stays), visiting the window in row-major order.
    row_taps, _ = _axis_taps(xp, rows)
    col_taps, _ = _axis_taps(xp, cols)
    best = ridx = cidx = None
    for r, rv in row_taps:
        xr = xp.take(x, r, axis=1)
        for c, cv in col_taps:
            v = xp.take(xr, c, axis=2)
            ok = (rv[:, None] & cv[None, :])[None, :, :, None]
            rb, cb = r[None, :, None, None], c[None, None, :, None]
            if best is None:
                best = v
                ridx = xp.where(ok, rb, -1)
                cidx = xp.broadcast_to(cb, v.shape)
                continue
            take = ok & ((best < v) | (ridx < 0))
            best = xp.where(take, v, best)
            ridx = xp.where(take, rb, ridx)
            cidx = xp.where(take, cb, cidx)
    return _flat_index(xp, x.shape, xp.maximum(ridx, 0), cidx)


def _dilation_argmax_fwd(xp, x, w, rows, cols):
    # TF's Dilation2DBackpropInput/Filter: the first tap (row-major) whose x + w is strictly
    # larger than the current maximum (which starts at the dtype's lowest value); without
    # one, the window's clipped first position and filter tap (0, 0).
    row_taps, row0 = _axis_taps(xp, rows)
    col_taps, col0 = _axis_taps(xp, cols)
    n, _, _, ch = x.shape
    shape = (n, row0.shape[0], col0.shape[0], ch)
    lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.finfo(x.dtype).max
    best = xp.full(shape, lowest, dtype=x.dtype)
    ridx = xp.broadcast_to(row0[None, :, None, None], shape)
    cidx = xp.broadcast_to(col0[None, None, :, None], shape)
    tap = xp.zeros(shape, dtype=np.int64)
    hit = xp.zeros(shape, dtype=bool)
    kw = len(col_taps)
    for i, (r, rv) in enumerate(row_taps):
        xr = xp.take(x, r, axis=1)
        for j, (c, cv) in enumerate(col_taps):
            v = xp.take(xr, c, axis=2) + w[i, j]
            take = (rv[:, None] & cv[None, :])[None, :, :, None] & (v > best)
            best = xp.where(take, v, best)
            ridx = xp.where(take, r[None, :, None, None], ridx)
            cidx = xp.where(take, c[None, None, :, None], cidx)
            tap = xp.where(take, i * kw + j, tap)
            hit |= take
    d = xp.arange(ch, dtype=np.int64).reshape(1, 1, 1, ch)
    return _flat_index(xp, x.shape, ridx, cidx), tap * ch + d, hit


_pool_argmax = defop("window_max_argmax", _pool_argmax_fwd, nondiff=True)
_dilation_argmax = defop("dilation2d_argmax", _dilation_argmax_fwd, nondiff=True, multi=True)


def _gather_flat(x: Tensor, idx: Tensor) -> Tensor:
    """``reshape(x, [-1])[idx]``: its gradient scatters back into ``x``."""
    from .ops.shape import gather, reshape
    return gather(reshape(x, [-1]), idx)


def _window_sizes(value, opname, what, n=2):
    """TF's ``_get_sequence(value, 2, 3)`` for NHWC: an int, or 1, 2 or 4 numbers ->
    the 4 numbers ``[1, a, b, 1]`` (4 given as they are)."""
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    vals = [value] if isinstance(value, (int, float, np.integer, np.floating)) else list(value)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) == n:
        vals = [1] + vals + [1]
    elif len(vals) != n + 2:
        raise ValueError(f"{opname}: {what} should be of length 1, {n} or {n + 2}. Received: "
                         f"{what}={value!r} of length {len(vals)}")
    return vals


def _real_input(value, opname, rank=4):
    x = as_tensor(value, opname)
    if x._value.dtype.kind not in "fiu":
        raise TypeError(f"{opname}: input must be a real number tensor, got {x.dtype.name}")
    if x._value.ndim != rank:
        raise InvalidArgumentError(f"{opname}: input must be {rank}-dimensional, got shape "
                                   f"{tuple(x._value.shape)}")
    return x


def _grid(out, stride, pad, rate, size, k):
    return ("grid", int(out), int(stride), int(pad), int(rate), int(size), int(k))


MaxPoolWithArgmax = collections.namedtuple("MaxPoolWithArgmax", ["output", "argmax"])


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",
                         output_dtype=np.int64, include_batch_in_index=False, name=None):
    """Max pooling that also returns each maximum's flat index, as
    ``tf.nn.max_pool_with_argmax``: ``(output, argmax)``, argmax ``(y * width + x) *
    channels + c`` (plus ``b * height * width * channels`` with
    ``include_batch_in_index``) of the window's first maximum in row-major order. The
    gradient goes to that element, as TF's ``MaxPoolGradWithArgmax``."""
    from .ops.core import cast
    from .ops.math import floormod
    from .ops.nn import _out_size, _pads
    from .ops.shape import reshape
    opname = "max_pool_with_argmax"
    if data_format != "NHWC":
        raise ValueError(f"{opname}: `data_format` values other than 'NHWC' are not "
                         f"supported. Received: data_format={data_format}")
    out_dt = np.dtype(as_dtype(output_dtype).as_numpy_dtype)
    if out_dt not in (np.int32, np.int64):
        raise TypeError(f"{opname}: output_dtype must be int32 or int64, got "
                        f"{as_dtype(output_dtype).name}")
    x = _real_input(input, opname)
    k = _window_sizes(ksize, opname, "ksize")
    s = _window_sizes(strides, opname, "strides")
    if k[0] != 1 or s[0] != 1:
        raise InvalidArgumentError(f"{opname}: pooling is not supported on the batch "
                                   f"dimension (ksize {k}, strides {s})")
    if k[3] != 1 or s[3] != 1:
        raise InvalidArgumentError(f"{opname}: MaxPooling supports exactly one of pooling "
                                   f"across depth or pooling across width/height (ksize {k}, "
                                   f"strides {s})")
    if min(k + s) < 1:
        raise InvalidArgumentError(f"{opname}: ksize {k} and strides {s} must be positive")
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}")
    n, h, w, c = x._value.shape
    kh, kw, sh, sw = k[1], k[2], s[1], s[2]
    pads = _pads(padding, (h, w), (kh, kw), (sh, sw), (1, 1), opname)
    oh, ow = _out_size(h, kh, sh, 1, pads[0]), _out_size(w, kw, sw, 1, pads[1])
    if oh <= 0 or ow <= 0:
        raise InvalidArgumentError(f"{opname}: window {kh}x{kw} does not fit the input of "
                                   f"spatial size {h}x{w} with {padding} padding")
    idx = apply(_pool_argmax, (x,), {"rows": _grid(oh, sh, pads[0][0], 1, h, kh),
                                     "cols": _grid(ow, sw, pads[1][0], 1, w, kw)})
    out = reshape(_gather_flat(x, idx), [n, oh, ow, c])
    if not include_batch_in_index:
        idx = floormod(idx, h * w * c)
    return MaxPoolWithArgmax(out, cast(idx, out_dt) if out_dt != np.int64 else idx)


def _dilation_operands(opname, input, filters, strides, padding, data_format, dilations):
    from .ops.nn import _out_size, _pads, _spatial_arg
    if data_format != "NHWC":
        raise ValueError(f"{opname}: `data_format` values other than 'NHWC' are not "
                         f"supported. Received: data_format={data_format}")
    x = _real_input(input, opname)
    f = as_tensor(filters, opname)
    if f._value.ndim != 3:
        raise InvalidArgumentError(f"{opname}: filter must be 3-dimensional [filter_height, "
                                   f"filter_width, depth], got shape {tuple(f._value.shape)}")
    if f.dtype != x.dtype:
        raise TypeError(f"{opname}: input is {x.dtype.name} but filters are {f.dtype.name}")
    if f._value.shape[2] != x._value.shape[3]:
        raise InvalidArgumentError(f"{opname}: input and filter must have the same depth: "
                                   f"{x._value.shape[3]} vs {f._value.shape[2]}")
    s = _spatial_arg(strides, opname, "strides")
    r = _spatial_arg(dilations, opname, "dilations")
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}")
    h, w = x._value.shape[1:3]
    kh, kw = f._value.shape[:2]
    pads = _pads(padding, (h, w), (kh, kw), s, r, opname)
    oh, ow = _out_size(h, kh, s[0], r[0], pads[0]), _out_size(w, kw, s[1], r[1], pads[1])
    if oh <= 0 or ow <= 0:
        raise InvalidArgumentError(f"{opname}: the {kh}x{kw} filter (dilations {r}) does not "
                                   f"fit the {h}x{w} input with {padding} padding")
    attrs = {"rows": _grid(oh, s[0], pads[0][0], r[0], h, kh),
             "cols": _grid(ow, s[1], pads[1][0], r[1], w, kw)}
    return x, f, attrs


def dilation2d(input, filters, strides, padding, data_format, dilations, name=None):
    """Grayscale morphological dilation, as ``tf.nn.dilation2d``: ``output[b, y, x, c] =
    max over (dy, dx) of input[b, y * sh + dy * rh - pad_top, x * sw + dx * rw - pad_left,
    c] + filters[dy, dx, c]`` over the taps inside the image (the dtype's lowest value where
    none is). ``input`` NHWC, ``filters`` ``[height, width, depth]``, ``strides`` and
    ``dilations`` as ``[1, h, w, 1]`` (or 1 or 2 numbers). The gradient is TF's max-plus
    subgradient: each output's gradient goes to the input element and filter tap of the
    first maximum."""
    from .ops.math import where
    x, f, attrs = _dilation_operands("dilation2d", input, filters, strides, padding,
                                     data_format, dilations)
    ix, iw, hit = apply(_dilation_argmax, (x, f), attrs)
    val = _gather_flat(x, ix) + _gather_flat(f, iw)
    lowest = np.iinfo(x._value.dtype).min if x._value.dtype.kind in "iu" else \
        -np.finfo(x._value.dtype).max
    return where(hit, val, lowest)


def erosion2d(value, filters, strides, padding, data_format, dilations, name=None):
    """Grayscale morphological erosion, as ``tf.nn.erosion2d``: ``-dilation2d(-value,
    reverse(filters, [0, 1]))``, a minimum of ``value - filters`` over each window."""
    from .ops.math import negative
    from .ops.shape import reverse
    f = as_tensor(filters, "erosion2d")
    if f._value.ndim != 3:
        raise InvalidArgumentError(f"erosion2d: filter must be 3-dimensional [filter_height, "
                                   f"filter_width, depth], got shape {tuple(f._value.shape)}")
    return negative(dilation2d(negative(as_tensor(value, "erosion2d")), reverse(f, [0, 1]),
                               strides, padding, data_format, dilations))


# --- fractional pooling ------------------------------------------------------------------------

FractionalPool = collections.namedtuple("FractionalPool", ["output", "row_pooling_sequence",
                                                           "col_pooling_sequence"])


def _pooling_sequence(gen, input_length, output_length, pseudo_random):
    """TF's GeneratePoolingSequence (fractional_pool_common.cc) with gradtape's generator:
    the cumulative boundaries ``[0, ..., input_length]`` of ``output_length`` windows of
    ``k`` or ``k + 1`` rows (``k = input_length // output_length``)."""
    k = input_length // output_length
    if pseudo_random:
        alpha = input_length / output_length
        u_max1 = (k + 2) / alpha - 1
        u_max2 = (input_length + 1 - k) / alpha - (output_length - 1)
        u = float(gen._random((), np.float64)) * min(u_max1, u_max2)
        cum = [1] + [int(_pymath.ceil(alpha * (i + u))) for i in range(1, output_length)] + \
            [input_length + 1]
        diff = np.diff(np.asarray(cum, dtype=np.int64))
    else:
        diff = np.full(output_length, k, dtype=np.int64)
        diff[:input_length % output_length] += 1
        diff = diff[np.asarray(gen._permutation(output_length))]
    return np.concatenate([[0], np.cumsum(diff)]).astype(np.int64)


def _windows(seq, size, overlapping):
    """(starts, ends) of the windows of a pooling sequence: ``[seq[i], seq[i + 1])`` (the
    end included with ``overlapping``), clipped to the input, as TF's kernels."""
    seq = [int(v) for v in seq]
    starts = tuple(seq[:-1])
    ends = tuple(min(b if overlapping else b - 1, size - 1) for b in seq[1:])
    return starts, ends


def _check_sequence(seq, size, opname, what):
    seq = np.asarray(seq, dtype=np.int64).reshape(-1)
    if seq.size < 2 or seq[0] < 0 or np.any(np.diff(seq) <= 0) or seq[-2] >= size:
        raise InvalidArgumentError(f"{opname}: {what} {seq.tolist()} must be increasing from "
                                   f"0 with every window inside the input of size {size}")
    return seq


def _fractional_pool(value, row_seq, col_seq, overlapping, kind, opname):
    """Fractional pooling of NHWC ``value`` with the given pooling sequences (host ints):
    ``kind`` "max" (each window's first maximum, gathered, as TF's FractionalMaxPoolGrad)
    or "avg" (the window's elements summed in row-major order, divided by their count)."""
    from .ops.math import where
    from .ops.shape import gather
    x = value if isinstance(value, Tensor) else as_tensor(value, opname)
    n, h, w, c = x._value.shape
    rows = _windows(_check_sequence(row_seq, h, opname, "row_pooling_sequence"), h,
                    overlapping)
    cols = _windows(_check_sequence(col_seq, w, opname, "col_pooling_sequence"), w,
                    overlapping)
    oh, ow = len(rows[0]), len(cols[0])
    if kind == "max":
        idx = apply(_pool_argmax, (x,), {"rows": ("seq",) + rows + (h,),
                                         "cols": ("seq",) + cols + (w,)})
        from .ops.shape import reshape
        return reshape(_gather_flat(x, idx), [n, oh, ow, c])
    dev = x._device
    tables = []
    for (starts, ends), size in ((rows, h), (cols, w)):
        s, e = np.asarray(starts), np.asarray(ends)
        k = int(np.max(e - s)) + 1
        idx = s[None, :] + np.arange(k)[:, None]
        tables.append((np.minimum(idx, size - 1), idx <= e[None, :], e - s + 1))
    (ri, rv, rn), (ci, cv, cn) = tables
    acc = None
    for i in range(ri.shape[0]):
        xr = gather(x, Tensor(dev.asarray(ri[i]), dev), axis=1)
        for j in range(ci.shape[0]):
            tap = gather(xr, Tensor(dev.asarray(ci[j]), dev), axis=2)
            ok = (rv[i][:, None] & cv[j][None, :])[None, :, :, None]
            if not ok.all():
                tap = where(Tensor(dev.asarray(ok), dev), tap, 0)
            acc = tap if acc is None else acc + tap
    counts = Tensor(dev.asarray((rn[:, None] * cn[None, :])[None, :, :, None]
                                .astype(x._value.dtype)), dev)
    if x._value.dtype.kind in "iu":
        from .ops.extra import truncatediv
        return truncatediv(acc, counts)
    return acc / counts


def _pooling_ratio(pooling_ratio, opname):
    if isinstance(pooling_ratio, (list, tuple)):
        if not pooling_ratio or pooling_ratio[0] != 1.0 or pooling_ratio[-1] != 1.0:
            raise ValueError(f"{opname}: `pooling_ratio` should have first and last elements "
                             f"with value 1.0. Received: pooling_ratio={pooling_ratio}")
        if any(r < 1.0 for r in pooling_ratio):
            raise ValueError(f"{opname}: `pooling_ratio` elements should be >= 1.0. "
                             f"Received: pooling_ratio={pooling_ratio}")
    elif isinstance(pooling_ratio, (int, float, np.integer, np.floating)) and \
            not isinstance(pooling_ratio, bool):
        if pooling_ratio < 1.0:
            raise ValueError(f"{opname}: `pooling_ratio` should be >= 1.0. Received: "
                             f"pooling_ratio={pooling_ratio}")
    else:
        raise ValueError(f"{opname}: `pooling_ratio` should be an int or a list of ints. "
                         f"Received: pooling_ratio={pooling_ratio}")
    ratio = _window_sizes(pooling_ratio if isinstance(pooling_ratio, (list, tuple))
                          else float(pooling_ratio), opname, "pooling_ratio")
    if len(ratio) != 4 or ratio[0] != 1.0 or ratio[3] != 1.0:
        raise ValueError(f"{opname}: pooling_ratio must be [1.0, row ratio, col ratio, 1.0], "
                         f"got {pooling_ratio!r}")
    return [_F32(r) for r in ratio]


def _fractional(opname, kind, value, pooling_ratio, pseudo_random, overlapping, seed):
    ratio = _pooling_ratio(pooling_ratio, opname)
    x = _real_input(value, opname)
    if x._value.dtype not in (np.float32, np.float64, np.int32, np.int64):
        raise TypeError(f"{opname}: value must be float32, float64, int32 or int64, got "
                        f"{x.dtype.name}")
    shape = x._value.shape
    out = []
    for i in (1, 2):
        if ratio[i] > shape[i]:
            raise InvalidArgumentError(f"{opname}: Pooling ratio is higher than input "
                                       f"dimension size for dimension {i}. Input dim size: "
                                       f"{shape[i]} pooling ratio: {float(ratio[i]):g}")
        out.append(int(np.floor(_F32(shape[i]) / ratio[i])))
    if min(out) <= 0:
        raise InvalidArgumentError(f"{opname}: the output would be empty (input "
                                   f"{tuple(shape)}, pooling_ratio {pooling_ratio!r})")
    seed = int(seed)
    if seed == 0:
        gen = _rnd().get_global_generator(get_device("cpu"))
    else:
        glob = _rnd()._GLOBAL.seed
        gen = _rnd().Generator(seed=[_rnd()._DEFAULT_GLOBAL_SEED if glob is None else glob,
                                      seed], device="cpu")
    rows = _pooling_sequence(gen, shape[1], out[0], bool(pseudo_random))
    cols = _pooling_sequence(gen, shape[2], out[1], bool(pseudo_random))
    y = _fractional_pool(x, rows, cols, bool(overlapping), kind, opname)
    dev = x._device
    return FractionalPool(y, Tensor(dev.asarray(rows), dev), Tensor(dev.asarray(cols), dev))


def fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False, seed=0,
                        name=None):
    """Fractional max pooling, as ``tf.nn.fractional_max_pool``: NHWC ``value`` pooled over
    windows of ``floor(ratio)`` or ``ceil(ratio)`` rows and columns (``pooling_ratio`` a
    number >= 1 or ``[1.0, rows, cols, 1.0]``), the output ``floor(size / ratio)``.
    Returns ``(output, row_pooling_sequence, col_pooling_sequence)``, the window
    boundaries (int64). ``pseudo_random`` draws the boundaries as TF's pseudo-random
    sequence, else a random shuffle; ``overlapping`` makes windows share their boundary
    row and column. A non-zero ``seed`` gives the same sequences at every call; the
    draws are gradtape's, not TF's. The gradient goes to each window's first maximum."""
    return _fractional("fractional_max_pool", "max", value, pooling_ratio, pseudo_random,
                       overlapping, seed)


def fractional_avg_pool(value, pooling_ratio, pseudo_random=False, overlapping=False, seed=0,
                        name=None):
    """Fractional average pooling, as ``tf.nn.fractional_avg_pool`` (arguments and results
    as :func:`fractional_max_pool`): each output is its window's mean (an integer input's
    sum divided with truncation, as TF's kernel); the gradient spreads evenly over the
    window."""
    return _fractional("fractional_avg_pool", "avg", value, pooling_ratio, pseudo_random,
                       overlapping, seed)


# --- isotonic regression -----------------------------------------------------------------------

def _pava_segments(rows, dt):
    """Segment ids of each row's non-increasing isotonic fit by TF's pool-adjacent-violators
    loop (``isotonic_regression_op.cc``): a new element opens a pool, and while the last
    pool's mean (its sum over its size, in ``dt``) is larger than the one before, the two
    merge. Pools of equal means stay apart, as TF's."""
    one = dt.type
    segments = np.zeros(rows.shape, dtype=np.int32)
    for b, row in enumerate(rows):
        pools = []                                     # [start, size, sum, mean]
        for i, v in enumerate(row.tolist()):
            v = one(v)
            pools.append([i, 1, v, v])
            while len(pools) > 1 and pools[-1][3] > pools[-2][3]:
                last = pools.pop()
                prev = pools[-1]
                prev[1] += last[1]
                prev[2] = one(prev[2] + last[2])
                prev[3] = one(prev[2] / one(prev[1]))
        for sid, (start, size, _, _) in enumerate(pools):
            segments[b, start:start + size] = sid
    return segments


_ISOTONIC_OUT = {np.dtype(np.float32): np.float32, np.dtype(np.float16): np.float16,
                 np.dtype(np.int8): np.float32, np.dtype(np.int16): np.float32}


def isotonic_regression(inputs, decreasing=True, axis=-1):
    """Isotonic regression along ``axis``, as ``tf.nn.isotonic_regression``: for each
    vector x, ``argmin over y_1 >= y_2 >= ... of sum (x_i - y_i) ** 2`` (``decreasing=False``:
    ``y_1 <= y_2 <= ...``). Returns ``(output, segments)``: the fit (float32 for float32,
    int8 and int16 inputs, float16 for float16, float64 otherwise) and int32 segment ids
    (from 0 along each vector) of its constant pieces.

    The segments come from TF's pool-adjacent-violators loop, run on the host (a device
    input is read back); the fit is each segment's mean of the input, so its gradient is
    TF's: the incoming gradient averaged over each segment."""
    from .ops.core import cast
    from .ops.scatter import unsorted_segment_sum
    from .ops.shape import gather, reshape, transpose
    opname = "isotonic_regression"
    x = as_tensor(inputs, opname)
    kind = x._value.dtype.kind
    if kind not in "fiu" or x._value.dtype == np.uint64:
        raise TypeError(f"{opname}: inputs must be real numbers, got {x.dtype.name}")
    out_dt = np.dtype(_ISOTONIC_OUT.get(x._value.dtype, np.float64))
    rank = x._value.ndim
    if isinstance(axis, Tensor):
        axis = int(axis.numpy())
    lo = -max(rank, 1)
    if not lo <= int(axis) < max(rank, 1):
        raise InvalidArgumentError(f"{opname}: `dim` must be in the range [{lo}, {-lo}) where "
                                   f"{-lo} is the number of dimensions in the input. "
                                   f"Received: dim={axis}")
    xt = cast(x, out_dt) if x._value.dtype != out_dt else x
    if rank == 0:
        xt = reshape(xt, [1])
    ax = int(axis) % max(rank, 1)
    perm = None
    if rank > 1 and ax != rank - 1:
        perm = [i for i in range(rank) if i != ax] + [ax]
        xt = transpose(xt, perm)
    moved = tuple(xt._value.shape)
    n = moved[-1] if moved else 1
    batch = int(np.prod(moved[:-1], dtype=np.int64))
    mat = reshape(xt, [batch, n])
    host = np.asarray(mat.numpy())
    segments = _pava_segments(host if decreasing else -host, out_dt)
    dev = x._device
    ids = segments.astype(np.int64) + np.arange(batch, dtype=np.int64)[:, None] * n
    flat_ids = Tensor(dev.asarray(ids.reshape(-1)), dev)
    counts = np.bincount(ids.reshape(-1), minlength=batch * n).astype(out_dt)
    sums = unsorted_segment_sum(reshape(mat, [-1]), flat_ids, batch * n)
    means = sums / Tensor(dev.asarray(np.maximum(counts, 1)), dev)
    out = reshape(gather(means, flat_ids), moved)
    seg = Tensor(dev.asarray(segments.reshape(moved)), dev)
    if perm is not None:
        inv = list(np.argsort(perm))
        out, seg = transpose(out, inv), transpose(seg, inv)
    if rank == 0:
        out, seg = reshape(out, []), reshape(seg, [])
    return out, seg


# --- convolution gradients and composites -------------------------------------------------------

def _int_list(value, opname, what, length=None):
    if isinstance(value, Tensor):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.ndim != 1 or (length is not None and arr.size != length):
        raise ValueError(f"{opname}: {what} must be a list of {length or 'some'} ints, got "
                         f"{value!r}")
    return [int(v) for v in arr]


def _vjp_of(fn, at: Tensor, cotangent: Tensor, opname, what):
    """The gradient of ``fn`` (linear in its argument) at ``at`` along ``cotangent``,
    recorded by any outer tape (so differentiable again)."""
    from .tape import GradientTape
    with GradientTape() as tape:
        tape.watch(at)
        y = fn(at)
    if tuple(y._value.shape) != tuple(cotangent._value.shape):
        raise InvalidArgumentError(f"{opname}: out_backprop has shape "
                                   f"{tuple(cotangent._value.shape)} but the convolution of "
                                   f"{what} gives {tuple(y._value.shape)}")
    return tape.gradient(y, at, output_gradients=cotangent)


def _depthwise_backprop(opname, known, sizes, sizes_name, out_backprop, conv, what):
    """The gradient of ``conv(unknown, known)`` with respect to ``unknown`` (of shape
    ``sizes``, 4 ints) along ``out_backprop``: the backprops of a depthwise convolution."""
    from .ops.core import zeros
    from .ops.nn import _float_input
    k = _float_input(known, opname)
    g = as_tensor(out_backprop, opname)
    sizes = _int_list(sizes, opname, sizes_name, 4)
    with _device_of(k):
        start = zeros(sizes, dtype=k.dtype)
    return _vjp_of(lambda u: conv(u, k), start, g, opname, f"{what} of shape {tuple(sizes)}")


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding,
                                    data_format="NHWC", dilations=[1, 1, 1, 1],  # noqa: B006
                                    name=None):
    """The gradient of :func:`depthwise_conv2d` with respect to its input, as
    ``tf.nn.depthwise_conv2d_backprop_input``: ``input_sizes`` (4 ints) is the input's
    shape, ``filter`` ``[KH, KW, C, M]``, ``out_backprop`` the convolution output's
    gradient. Differentiable with respect to ``filter`` and ``out_backprop``."""
    from .ops.nn import depthwise_conv2d
    return _depthwise_backprop(
        "depthwise_conv2d_backprop_input", filter, input_sizes, "input_sizes", out_backprop,
        lambda x, w: depthwise_conv2d(x, w, strides, padding, data_format, dilations),
        "an input")


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                                     data_format="NHWC", dilations=[1, 1, 1, 1],  # noqa: B006
                                     name=None):
    """The gradient of :func:`depthwise_conv2d` with respect to its filter, as
    ``tf.nn.depthwise_conv2d_backprop_filter``: ``filter_sizes`` (4 ints) is the filter's
    shape ``[KH, KW, C, M]``. Differentiable with respect to ``input`` and
    ``out_backprop``."""
    from .ops.nn import depthwise_conv2d
    return _depthwise_backprop(
        "depthwise_conv2d_backprop_filter", input, filter_sizes, "filter_sizes", out_backprop,
        lambda w, x: depthwise_conv2d(x, w, strides, padding, data_format, dilations),
        "a filter")


def _device_of(t: Tensor):
    from .backend import device_scope
    return device_scope(t._device)


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """The transpose of :func:`atrous_conv2d` (a dilated :func:`conv2d_transpose` of stride
    1), as ``tf.nn.atrous_conv2d_transpose``: ``value`` ``[N, H, W, in_channels]``,
    ``filters`` ``[KH, KW, out_channels, in_channels]``, ``output_shape`` 4 ints,
    ``rate`` >= 1, ``padding`` ``"SAME"`` or ``"VALID"``."""
    from .ops.nn import conv2d_transpose
    opname = "atrous_conv2d_transpose"
    v = as_tensor(value, opname)
    f = as_tensor(filters, opname)
    if v._value.ndim != 4 or f._value.ndim != 4:
        raise ValueError(f"{opname}: value and filters must have rank 4, got shapes "
                         f"{tuple(v._value.shape)} and {tuple(f._value.shape)}")
    if v._value.shape[3] != f._value.shape[3]:
        raise ValueError(f"{opname}: `value` channel count must be compatible with `filters` "
                         f"input channel count. Received: value.shape={tuple(v._value.shape)} "
                         f"and filters.shape={tuple(f._value.shape)}")
    rate = int(rate)
    if rate < 1:
        raise ValueError(f"{opname}: `rate` cannot be less than one. Received: rate={rate}")
    shape = _int_list(output_shape, opname, "output_shape", 4)
    if shape[3] != f._value.shape[2]:
        raise ValueError(f"{opname}: `output_shape` channel count must be compatible with "
                         f"`filters` output channel count. Received: output_shape={shape} and "
                         f"filters.shape={tuple(f._value.shape)}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{opname}: `padding` must be either 'VALID' or 'SAME'. Received: "
                         f"padding={padding}")
    return conv2d_transpose(v, f, shape, strides=1, padding=padding, dilations=rate)


def batch_norm_with_global_normalization(input, mean, variance, beta, gamma, variance_epsilon,
                                         scale_after_normalization, name=None):
    """Batch normalization with given statistics, as
    ``tf.nn.batch_norm_with_global_normalization``: ``batch_normalization(input, mean,
    variance, beta, gamma if scale_after_normalization else None, variance_epsilon)``."""
    from .ops.nn import batch_normalization
    return batch_normalization(input, mean, variance, beta,
                               gamma if scale_after_normalization else None, variance_epsilon)


# --- space to batch ------------------------------------------------------------------------------

def _block_args(opname, x: Tensor, block_shape, pairs, what):
    block = _int_list(np.atleast_1d(np.asarray(block_shape.numpy() if isinstance(
        block_shape, Tensor) else block_shape)), opname, "block_shape")
    m = len(block)
    if isinstance(pairs, Tensor):
        pairs = pairs.numpy()
    arr = np.asarray(pairs)
    if arr.size == 0 and m == 0:
        arr = arr.reshape(0, 2)
    if arr.dtype.kind not in "iu" or arr.shape != (m, 2):
        raise InvalidArgumentError(f"{opname}: {what} should have shape [{m}, 2] instead of "
                                   f"{list(arr.shape)}")
    if x._value.ndim < m + 1:
        raise InvalidArgumentError(f"{opname}: input rank should be >= {m + 1} instead of "
                                   f"{x._value.ndim}")
    for i, b in enumerate(block):
        if b < 1:
            raise InvalidArgumentError(f"{opname}: All values in block_shape must be positive, "
                                       f"got value, {b} at index {i}.")
    if np.any(arr < 0):
        raise InvalidArgumentError(f"{opname}: {what.capitalize()} must be non-negative")
    return block, [[int(a), int(b)] for a, b in arr]


def space_to_batch_nd(input, block_shape, paddings, name=None):
    """Zero-pad the spatial axes ``1..M`` of ``input`` by ``paddings`` (``[M, 2]``) and move
    ``block_shape`` (M ints) blocks of them into the batch, as ``tf.space_to_batch_nd``:
    ``[batch * prod(block_shape), padded_1 / block_1, ..., padded_M / block_M, rest...]``,
    batch entry ``(offsets..., b)`` at position ``offsets`` of each block."""
    from .ops.shape import pad, reshape, transpose
    opname = "space_to_batch_nd"
    x = as_tensor(input, opname)
    block, pads = _block_args(opname, x, block_shape, paddings, "paddings")
    m = len(block)
    shape = list(x._value.shape)
    padded = [shape[1 + i] + pads[i][0] + pads[i][1] for i in range(m)]
    for i in range(m):
        if padded[i] % block[i]:
            raise InvalidArgumentError(f"{opname}: padded_shape[{i}]={padded[i]} is not "
                                       f"divisible by block_shape[{i}]={block[i]}")
    rest = shape[1 + m:]
    if any(a or b for a, b in pads):
        x = pad(x, [[0, 0]] + pads + [[0, 0]] * len(rest))
    split = [shape[0]]
    for p, b in zip(padded, block):
        split += [p // b, b]
    y = reshape(x, split + rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    y = transpose(y, perm)
    return reshape(y, [shape[0] * int(np.prod(block))] + [p // b for p, b in zip(padded, block)]
                   + rest)


def space_to_batch(input, block_shape, paddings, name=None):
    """``tf.space_to_batch`` (TF 2): :func:`space_to_batch_nd`."""
    return space_to_batch_nd(input, block_shape, paddings)


def batch_to_space(input, block_shape, crops, name=None):
    """The inverse of :func:`space_to_batch_nd`, as ``tf.batch_to_space``: the batch's
    ``prod(block_shape)`` groups interleaved back into the spatial axes ``1..M``, then
    ``crops`` (``[M, 2]``) removed from their starts and ends. An int ``block_shape`` means
    that size on two spatial axes."""
    from .ops.shape import reshape, transpose
    opname = "batch_to_space"
    x = as_tensor(input, opname)
    if isinstance(block_shape, (int, np.integer)) and not isinstance(block_shape, bool):
        block_shape = [int(block_shape)] * 2
    block, crop = _block_args(opname, x, block_shape, crops, "crops")
    m = len(block)
    shape = list(x._value.shape)
    prod = int(np.prod(block))
    if shape[0] % prod:
        raise InvalidArgumentError(f"{opname}: Input batch dimension ({shape[0]}) is not "
                                   f"divisible by product of block sizes ({prod})")
    rest = shape[1 + m:]
    spatial = shape[1:1 + m]
    batch = shape[0] // prod
    for i in range(m):
        cropped = spatial[i] * block[i] - crop[i][0] - crop[i][1]
        if cropped < 0:
            raise InvalidArgumentError(f"{opname}: cropped_shape[{i}]={cropped} must be "
                                       "non-negative")
    y = reshape(x, block + [batch] + spatial + rest)
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = reshape(transpose(y, perm), [batch] + [s * b for s, b in zip(spatial, block)] + rest)
    if any(a or b for a, b in crop):
        key = (slice(None),) + tuple(slice(a, s * blk - b) for (a, b), s, blk
                                     in zip(crop, spatial, block))
        y = y[key]
    return y


def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None):
    """``(paddings, crops)`` (int32 ``[M, 2]``) that make the spatial ``input_shape`` plus
    ``base_paddings`` divisible by ``block_shape``, as
    ``tf.required_space_to_batch_paddings``: the extra padding goes at the ends, and the
    crops remove it again."""
    from .tensor import constant
    opname = "required_space_to_batch_paddings"
    block = np.asarray(_int_list(np.atleast_1d(np.asarray(
        block_shape.numpy() if isinstance(block_shape, Tensor) else block_shape)), opname,
        "block_shape"), dtype=np.int64)
    m = block.size
    shape = np.asarray(_int_list(np.atleast_1d(np.asarray(
        input_shape.numpy() if isinstance(input_shape, Tensor) else input_shape)), opname,
        "input_shape", m), dtype=np.int64)
    if base_paddings is None:
        base = np.zeros((m, 2), dtype=np.int64)
    else:
        base = np.asarray(base_paddings.numpy() if isinstance(base_paddings, Tensor)
                          else base_paddings, dtype=np.int64).reshape(-1)
        if base.size != 2 * m:
            raise ValueError(f"{opname}: base_paddings must have shape [{m}, 2], got "
                             f"{base_paddings!r}")
        base = base.reshape(m, 2)
    full = shape + base[:, 0] + base[:, 1]
    extra = (block - full % block) % block
    paddings = np.stack([base[:, 0], base[:, 1] + extra], axis=1).astype(np.int32)
    crops = np.stack([np.zeros_like(extra), extra], axis=1).astype(np.int32)
    return constant(paddings.reshape(m, 2)), constant(crops.reshape(m, 2))


def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None,
                        spatial_dims=None, data_format=None):
    """Run ``op(converted_input, num_spatial_dims, "VALID")`` on the space-to-batch form of
    ``input`` (blocks of ``dilation_rate``) and turn the result back, as
    ``tf.nn.with_space_to_batch``: a convolution or pooling ``op`` then acts as its
    ``dilation_rate``-dilated version. ``padding`` ``"SAME"`` (needs ``filter_shape``),
    ``"VALID"`` or explicit pads; ``spatial_dims`` (default: the axes after the batch, or
    after the channels for ``"NC..."`` ``data_format``) must increase."""
    opname = "with_space_to_batch"
    x = as_tensor(input, opname)
    rate = np.atleast_1d(np.asarray(dilation_rate.numpy() if isinstance(dilation_rate, Tensor)
                                    else dilation_rate, dtype=np.int64))
    if rate.ndim != 1:
        raise ValueError(f"{opname}: `dilation_rate.shape.rank` must be 1. Received: "
                         f"dilation_rate={dilation_rate!r}")
    m = rate.size
    channels_first = data_format is not None and str(data_format).startswith("NC")
    start = 2 if channels_first else 1
    dims = list(range(start, m + start)) if spatial_dims is None else list(spatial_dims)
    if sorted(set(int(d) for d in dims)) != [int(d) for d in dims] or any(d < 1 for d in dims):
        raise ValueError(f"{opname}: `spatial_dims` must be a monotonically increasing "
                         f"sequence of positive integers. Received: spatial_dims={dims}")
    need = dims[-1] if channels_first else dims[-1] + 1
    if x._value.ndim < need:
        raise ValueError(f"{opname}: `input.shape.rank` must be at least {need}. Received: "
                         f"input.shape={tuple(x._value.shape)}")
    if np.any(rate < 1):
        raise ValueError(f"{opname}: `dilation_rate` must be positive. Received: "
                         f"dilation_rate={rate.tolist()}")
    if np.all(rate == 1):
        return op(x, m, padding)
    if isinstance(padding, str) and padding.upper() == "SAME":
        if filter_shape is None:
            raise ValueError(f"{opname}: `filter_shape` must be specified for "
                             f"`padding='SAME'`. Received: filter_shape={filter_shape}")
        fs = np.asarray(filter_shape.numpy() if isinstance(filter_shape, Tensor)
                        else filter_shape, dtype=np.int64)[:m]
        extra = (fs - 1) * rate
        base = np.stack([extra // 2, extra - extra // 2], axis=1)
    elif isinstance(padding, str) and padding.upper() == "VALID":
        base = np.zeros((m, 2), dtype=np.int64)
    elif not isinstance(padding, str):
        p = np.asarray(padding, dtype=np.int64).reshape(m + 2, 2)
        base = p[2:] if channels_first else p[1:-1]
    else:
        raise ValueError(f"{opname}: `padding` must be one of 'SAME' or 'VALID'. Received: "
                         f"padding={padding}")
    spatial = [x._value.shape[d] for d in dims]
    full = np.asarray(spatial) + base[:, 0] + base[:, 1]
    extra_end = (rate - full % rate) % rate
    pads = np.stack([base[:, 0], base[:, 1] + extra_end], axis=1)
    crops = np.stack([np.zeros_like(extra_end), extra_end], axis=1)
    # the block shape, paddings and crops over axes 1..dims[-1], the axes between the
    # spatial ones with block 1 and no padding
    block_all = np.ones(dims[-1], dtype=np.int64)
    pads_all = np.zeros((dims[-1], 2), dtype=np.int64)
    crops_all = np.zeros((dims[-1], 2), dtype=np.int64)
    for i, d in enumerate(dims):
        block_all[d - 1], pads_all[d - 1], crops_all[d - 1] = rate[i], pads[i], crops[i]
    converted = space_to_batch_nd(x, block_all, pads_all)
    result = op(converted, m, "VALID")
    return batch_to_space(result, block_all, crops_all)


# --- RNN cell wrappers ----------------------------------------------------------------------------

_WRAPPERS = ("RNNCellDropoutWrapper", "RNNCellResidualWrapper", "RNNCellDeviceWrapper")


def __getattr__(name):
    # The wrappers subclass gt.layers.Layer: the classes are made on first use, so that
    # importing gt.nn does not import the Keras layers.
    if name in _WRAPPERS:
        classes = _make_wrappers()
        globals().update(classes)
        return classes[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _make_wrappers():
    """The RNN cell wrapper classes (made once, see ``__getattr__``)."""
    from .layers import Layer

    class _RNNCellWrapper(Layer):
        """A layer that runs ``cell`` (a Keras-style RNN cell: ``call(inputs, states)`` and
        ``state_size``) and changes its inputs, outputs or states, as TF's
        ``tf.nn.RNNCell*Wrapper`` classes."""

        def __init__(self, cell, name=None, **kwargs):
            from .recurrent import _is_cell
            if not _is_cell(cell):
                raise TypeError(f"{type(self).__name__}: cell must be an RNN cell (a call "
                                f"method and a state_size), got {type(cell).__name__}")
            super().__init__(name=name, **kwargs)
            self.cell = cell

        @property
        def wrapped_cell(self):
            return self.cell

        @property
        def state_size(self):
            return self.cell.state_size

        @property
        def output_size(self):
            from .recurrent import _output_size
            return _output_size(self.cell)

        def build(self, input_shape):
            if getattr(self.cell, "built", True) is False:
                self.cell.build(input_shape)
                self.cell.built = True

        def get_initial_state(self, batch_size=None):
            from .ops.core import zeros
            from .recurrent import _initial_states
            states = _initial_states(self.cell, int(batch_size),
                                     zeros((), dtype=self._compute_dtype))
            return states[0] if isinstance(self.cell.state_size, (int, np.integer)) \
                else states

        def _run_cell(self, inputs, states, training):
            from .layers import Layer as _Layer
            if isinstance(self.cell, _Layer):
                return self.cell(inputs, states, training=training)
            return self.cell.call(inputs, states)

        def call(self, inputs, states, training=None):
            return self._call_wrapped_cell(inputs, states, training)

        def get_config(self):
            from .saving import serialize_layer
            return {**super().get_config(), "cell": serialize_layer(self.cell)}

        @classmethod
        def from_config(cls, config, custom_objects=None):
            from .saving import deserialize_layer
            config = dict(config)
            cell = deserialize_layer(config.pop("cell"), custom_objects=custom_objects)
            return cls(cell, **config)


    class RNNCellDropoutWrapper(_RNNCellWrapper):
        """Dropout on a cell's inputs, outputs and new states, as ``tf.nn.RNNCellDropoutWrapper``
        (applied at every call, training or not, as TF's wrapper). ``*_keep_prob`` are the
        probabilities of keeping an element. With ``variational_recurrent`` one mask per
        input, state and output (drawn when the wrapper is made; ``dtype`` needed, and
        ``input_size`` when ``input_keep_prob < 1``) is used at every step.
        ``dropout_state_filter_visitor(state) -> bool`` says which states get dropout (all by
        default). ``seed`` fixes the masks (each input, state and output its own seed)."""

        def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                     variational_recurrent=False, input_size=None, dtype=None, seed=None,
                     dropout_state_filter_visitor=None, **kwargs):
            from .recurrent import LSTMCell
            if dropout_state_filter_visitor is not None and \
                    not callable(dropout_state_filter_visitor):
                raise TypeError("dropout_state_filter_visitor must be callable")
            if isinstance(cell, LSTMCell):
                raise ValueError("keras LSTM cell does not work with DropoutWrapper. Please use "
                                 "LSTMCell(dropout=x, recurrent_dropout=y) instead.")
            super().__init__(cell, dtype=dtype, **kwargs)
            for prob, attr in ((input_keep_prob, "input_keep_prob"),
                               (state_keep_prob, "state_keep_prob"),
                               (output_keep_prob, "output_keep_prob")):
                p = float(prob.numpy()) if isinstance(prob, Tensor) else float(prob)
                if p < 0 or p > 1:
                    raise ValueError(f"Parameter {attr} must be between 0 and 1: {p}")
                setattr(self, "_" + attr, p)
            self._state_filter = dropout_state_filter_visitor
            self._variational_recurrent = bool(variational_recurrent)
            self._input_size = input_size
            self._seed = seed
            self._noise = {}
            if self._variational_recurrent:
                if dtype is None:
                    raise ValueError("When variational_recurrent=True, dtype must be provided")
                if self._input_keep_prob < 1.0:
                    if input_size is None:
                        raise ValueError("When variational_recurrent=True and input_keep_prob < "
                                         "1.0 or is unknown, input_size must be provided")
                    self._noise["input"] = self._batch_noise("input", input_size, dtype)
                self._noise["state"] = self._batch_noise("state", cell.state_size, dtype)
                self._noise["output"] = self._batch_noise("output", cell.output_size, dtype)

        def _gen_seed(self, salt_prefix, index):
            """TF's per-tensor seed: an MD5 of the wrapper's seed and the salt."""
            import hashlib
            if self._seed is None:
                return None
            text = (str(self._seed) + f"{salt_prefix}_{index}").encode("utf-8")
            return int(hashlib.md5(text).hexdigest()[:8], 16) & 0x7FFFFFFF

        def _batch_noise(self, salt, sizes, dtype):
            from .random import uniform
            flat = sizes if isinstance(sizes, (list, tuple)) else [sizes]
            out = []
            for i, s in enumerate(flat):
                shape = [1] + ([int(s)] if isinstance(s, (int, np.integer)) else list(s))
                out.append(uniform(shape, dtype=dtype, seed=self._gen_seed(salt, i)))
            return out

        def _dropout(self, values, salt, keep, do=None):
            from .ops.math import floor
            from .ops.nn import dropout
            noise = self._noise.get(salt)

            def one(i, v):
                if do is not None and not do(v):
                    return v
                if noise is not None:
                    return (v / keep) * floor(keep + noise[i])
                return dropout(v, rate=1.0 - keep, seed=self._gen_seed(salt, i))
            return _structure_map(one, values)

        def _call_wrapped_cell(self, inputs, states, training):
            if self._input_keep_prob < 1:
                inputs = self._dropout(inputs, "input", self._input_keep_prob)
            output, new_state = self._run_cell(inputs, states, training)
            if self._state_keep_prob < 1:
                new_state = self._dropout(new_state, "state", self._state_keep_prob,
                                          self._state_filter)
            if self._output_keep_prob < 1:
                output = self._dropout(output, "output", self._output_keep_prob)
            return output, new_state

        def get_config(self):
            if self._state_filter is not None:
                raise NotImplementedError("RNNCellDropoutWrapper: a dropout_state_filter_visitor "
                                          "cannot be serialized")
            return {**super().get_config(), "input_keep_prob": self._input_keep_prob,
                    "output_keep_prob": self._output_keep_prob,
                    "state_keep_prob": self._state_keep_prob,
                    "variational_recurrent": self._variational_recurrent,
                    "input_size": self._input_size, "seed": self._seed}


    class RNNCellResidualWrapper(_RNNCellWrapper):
        """A cell whose output is ``residual_fn(inputs, output)`` (``inputs + output`` by
        default, which needs matching shapes), as ``tf.nn.RNNCellResidualWrapper``."""

        def __init__(self, cell, residual_fn=None, **kwargs):
            super().__init__(cell, **kwargs)
            self._residual_fn = residual_fn

        def _call_wrapped_cell(self, inputs, states, training):
            from . import nest
            output, new_state = self._run_cell(inputs, states, training)
            if self._residual_fn is not None:
                return self._residual_fn(inputs, output), new_state

            def add(i, a, b):
                if tuple(a.shape) != tuple(b.shape):
                    raise ValueError(f"RNNCellResidualWrapper: the inputs' shape {tuple(a.shape)} "
                                     f"and the cell output's {tuple(b.shape)} must match")
                return a + b
            nest.assert_same_structure(inputs, output)
            return _structure_map(add, inputs, output), new_state

        def get_config(self):
            if self._residual_fn is not None:
                raise NotImplementedError("RNNCellResidualWrapper: a residual_fn cannot be "
                                          "serialized")
            return super().get_config()


    class RNNCellDeviceWrapper(_RNNCellWrapper):
        """A cell run on ``device`` (its inputs and states must be there), as
        ``tf.nn.RNNCellDeviceWrapper``."""

        def __init__(self, cell, device, **kwargs):
            super().__init__(cell, **kwargs)
            self._cell_device = device

        def get_initial_state(self, batch_size=None):
            from .backend import device_scope
            with device_scope(self._cell_device):
                return super().get_initial_state(batch_size)

        def _call_wrapped_cell(self, inputs, states, training):
            from .backend import device_scope
            with device_scope(self._cell_device):
                return self._run_cell(inputs, states, training)

        def get_config(self):
            return {**super().get_config(), "device": self._cell_device}

    for cls in (_RNNCellWrapper, RNNCellDropoutWrapper, RNNCellResidualWrapper,
                RNNCellDeviceWrapper):
        cls.__qualname__ = cls.__name__
    return {"RNNCellDropoutWrapper": RNNCellDropoutWrapper,
            "RNNCellResidualWrapper": RNNCellResidualWrapper,
            "RNNCellDeviceWrapper": RNNCellDeviceWrapper}


def _structure_map(fn, *structures):
    """``fn(index, *leaves)`` over nested lists/tuples of tensors, the index counting leaves
    in order (TF's ``_enumerated_map_structure_up_to``)."""
    from . import nest
    leaves = [nest.flatten(s) for s in structures]
    out = [fn(i, *vals) for i, vals in enumerate(zip(*leaves))]
    return nest.pack_sequence_as(structures[0], out)
