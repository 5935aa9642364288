"""gt.random's stateless functions, seed helpers, gamma / Poisson / binomial draws, the
experimental namespace, Generator.state and uniform_full_int.

The stateless streams are gradtape's own (not TensorFlow's numbers): the tests check that
they are deterministic functions of (seed, shape, dtype), equal on every device, different
for different seeds, and distributed as they should be; the shapes, dtypes and error texts
follow TF 2.21."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradtape as gt
from gradtape.registry import InvalidArgumentError

R = gt.random


def _draws():
    """name -> function of a seed, each a stateless draw (small, for the equality tests)."""
    logits = np.log(np.array([[0.2, 0.3, 0.5]], np.float32))
    return {
        "normal": lambda s: R.stateless_normal([5, 3], s, mean=1.0, stddev=2.0),
        "normal64": lambda s: R.stateless_normal([7], s, dtype=gt.float64),
        "normal16": lambda s: R.stateless_normal([7], s, dtype=gt.float16),
        "uniform": lambda s: R.stateless_uniform([9], s, minval=-2.0, maxval=3.0),
        "uniform64": lambda s: R.stateless_uniform([9], s, dtype=gt.float64),
        "uniform_int": lambda s: R.stateless_uniform([11], s, minval=-5, maxval=9,
                                                     dtype=gt.int64),
        "full_int": lambda s: R.stateless_uniform([6], s, minval=None, maxval=None,
                                                  dtype=np.uint64),
        "truncated": lambda s: R.stateless_truncated_normal([40], s),
        "categorical": lambda s: R.stateless_categorical(logits, 12, s),
        "gamma": lambda s: R.stateless_gamma([4, 2], s, alpha=[0.4, 3.0]),
        "poisson": lambda s: R.stateless_poisson([4, 2], s, lam=[2.5, 40.0]),
        "binomial": lambda s: R.stateless_binomial([4, 2], s, counts=[8.0, 500.0],
                                                   probs=[0.3, 0.8]),
        "ptn": lambda s: R.stateless_parameterized_truncated_normal(
            [6], s, means=0.5, stddevs=2.0, minvals=-1.0, maxvals=1.5),
        "split": lambda s: R.split(s, 3),
        "fold_in": lambda s: R.fold_in(s, 11),
    }


@pytest.mark.parametrize("name", sorted(_draws()))
def test_stateless_draws_are_functions_of_the_seed_on_every_device(device, name):
    f = _draws()[name]
    a = f([3, 4])
    assert a.device == device
    np.testing.assert_array_equal(f([3, 4]).numpy(), a.numpy())
    np.testing.assert_array_equal(f(np.array([3, 4], np.int32)).numpy(), a.numpy())
    # (split's seeds take the seed's dtype: int32 for a Python pair)
    tensor_seed = gt.constant([3, 4], gt.int32 if name == "split" else gt.int64)
    np.testing.assert_array_equal(f(tensor_seed).numpy(), a.numpy())
    assert not np.array_equal(f([3, 5]).numpy(), a.numpy())
    assert not np.array_equal(f([2 ** 40 + 3, 4]).numpy(), a.numpy())   # the high words count
    with gt.device("cpu"):
        want = f([3, 4]).numpy()
    assert a.numpy().dtype == want.dtype and a.shape == want.shape
    if device.kind == "gpu" and want.dtype.kind == "f":
        # (log, sin and cos may differ in the last bit on a GPU)
        np.testing.assert_allclose(a.numpy(), want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(a.numpy(), want)


def test_stateless_draws_do_not_wait_for_the_device():
    """A seed made on the device (by split) is turned into the stream's key there: neither a
    host sync nor a transfer."""
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        seeds = R.split([1, 2], 4)
        dev.reset_counters()
        R.stateless_normal([100], seeds[0])
        R.stateless_uniform([10], seeds[1], minval=0, maxval=7, dtype=gt.int32)
        R.stateless_truncated_normal([50], seeds[2])
        R.stateless_gamma([20], seeds[3], alpha=gt.constant(2.0))
        R.stateless_poisson([20], seeds[0], lam=gt.constant(30.0))
        R.stateless_binomial([20], seeds[1], counts=gt.constant(50.0), probs=gt.constant(0.4))
        R.fold_in(seeds[2], gt.constant(3, gt.int64))
        assert dev.sync_count == 0 and dev.transfer_count == 0
    with gt.device("cpu"):
        np.testing.assert_array_equal(R.stateless_normal([100], R.split([1, 2], 4)[0]).numpy(),
                                      R.stateless_normal([100], seeds[0].numpy()).numpy())


def test_split_and_fold_in_follow_tensorflow():
    s = R.split([1, 2], 3)
    assert s.shape == (3, 2) and s.dtype == gt.int32        # the seed's dtype, as TF
    assert R.split(gt.constant([1, 2], gt.int64)).shape == (2, 2)
    assert R.split(gt.constant([1, 2], gt.int64)).dtype == gt.int64
    # as TF: split is the full-range integers of stateless_uniform([num, 2], seed), and
    # fold_in's first word is the first of them
    flat = R.stateless_uniform([6], [1, 2], minval=None, maxval=None, dtype=gt.int32).numpy()
    np.testing.assert_array_equal(s.numpy().reshape(-1), flat)
    f = R.fold_in([1, 2], 7)
    assert f.dtype == gt.int32 and f.numpy()[1] == 7 and f.numpy()[0] == flat[0]
    assert R.fold_in([1, 2], gt.constant(7, gt.int64)).dtype == gt.int64
    assert not np.array_equal(R.fold_in([1, 2], 7).numpy(), R.fold_in([1, 2], 8).numpy())
    assert R.experimental.stateless_split is R.split
    assert R.experimental.stateless_fold_in is R.fold_in
    assert R.experimental.Generator is R.Generator
    import gradtape.random.experimental as exp
    assert exp is R.experimental
    with pytest.raises(InvalidArgumentError, match="fold_in: data must be an int32 or int64"):
        R.fold_in([1, 2], 1.5)


def test_stateless_errors_as_tensorflow():
    with pytest.raises(InvalidArgumentError, match=r"seed must have shape \[2\], not \[3\]"):
        R.stateless_normal([2], seed=[1, 2, 3])
    with pytest.raises(InvalidArgumentError, match=r"seed must have shape \[2\], not \[\]"):
        R.stateless_normal([2], seed=1)
    with pytest.raises(InvalidArgumentError, match=r"seed must be an int32 or int64"):
        R.stateless_normal([2], seed=[1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match=r"seed must be an int32 or int64"):
        R.stateless_normal([2], seed=gt.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"argument `minval` and `maxval` must be both None or "
                                         r"not None. Got `minval`=0 and `maxval`=None."):
        R.stateless_uniform([2], seed=[1, 2], minval=0, dtype=gt.int32)
    with pytest.raises(ValueError, match=r"Please don't use unsigned integers"):
        R.stateless_uniform([3], seed=[1, 2], minval=0, maxval=5, dtype=np.uint32)
    with pytest.raises(ValueError, match=r"Argument `dtype` got invalid value int8"):
        R.stateless_uniform([3], seed=[1, 2], minval=0, maxval=5, dtype=gt.int8)
    with pytest.raises(InvalidArgumentError, match=r"minval must be 0-D, got shape \[3\]"):
        R.stateless_uniform([3], seed=[1, 2], minval=[0, 1, 2], maxval=10, dtype=gt.int32)
    with pytest.raises(ValueError, match=r"need minval < maxval"):
        R.stateless_uniform([3], seed=[1, 2], minval=5, maxval=5, dtype=gt.int32)
    with pytest.raises(ValueError, match=r"minval must be a number for a floating dtype"):
        R.stateless_uniform([3], seed=[1, 2], minval=None, maxval=None)
    with pytest.raises(TypeError, match=r"normal: dtype must be a floating type, got int32"):
        R.stateless_normal([3], seed=[1, 2], dtype=gt.int32)
    with pytest.raises(ValueError, match=r"logits must be \[batch, classes\], got shape \(2,\)"):
        R.stateless_categorical([0.5, 0.5], 5, seed=[7, 17])
    with pytest.raises(InvalidArgumentError, match=r"do not broadcast to the requested shape"):
        R.stateless_gamma([10], seed=[1, 2], alpha=[0.5, 1.5])
    with pytest.raises(InvalidArgumentError, match=r"do not broadcast to the requested shape"):
        R.stateless_binomial([3], seed=[1, 2], counts=[1.0, 2.0], probs=0.5)
    with pytest.raises(TypeError, match=r"dtype must be float16, float32, float64, int32 or "
                                        r"int64, got uint8"):
        R.stateless_poisson([3], seed=[1, 2], lam=1.0, dtype=gt.uint8)


def test_stateless_shapes_and_dtypes():
    assert R.stateless_uniform([2, 3], [1, 2], minval=[0.0, 10.0, 20.0],
                               maxval=[1.0, 11.0, 21.0]).shape == (2, 3)
    u = R.stateless_uniform([2, 3], [1, 2], minval=[0.0, 10.0, 20.0],
                            maxval=[1.0, 11.0, 21.0]).numpy()
    assert (u >= [0, 10, 20]).all() and (u < [1, 11, 21]).all()
    assert R.stateless_normal([3], [1, 2], dtype=gt.float16).dtype == gt.float16
    assert R.stateless_categorical(np.zeros((1, 2), np.float32), 5, [7, 17],
                                   dtype=gt.int32).dtype == gt.int32
    assert R.stateless_gamma([10, 3], [1, 2], alpha=[0.5, 1.5, 2.0]).shape == (10, 3)
    assert R.stateless_poisson([10, 2], [1, 2], lam=[0.5, 1.5]).dtype == gt.int32
    assert R.stateless_poisson([3], [1, 2], lam=2.0, dtype=gt.float32).dtype == gt.float32
    np.testing.assert_array_equal(R.stateless_poisson([3], [1, 2], lam=-2.0).numpy(), [0, 0, 0])
    assert R.stateless_binomial([2, 3], [1, 2], counts=[10.0, 20.0, 30.0],
                                probs=0.5).dtype == gt.int32
    assert R.stateless_binomial([3], [1, 2], counts=10.0, probs=0.5,
                                output_dtype=gt.float64).dtype == gt.float64
    assert R.stateless_parameterized_truncated_normal(
        [2, 3], [1, 2], means=[0.0, 1.0, 2.0]).shape == (2, 3)
    p64 = R.stateless_parameterized_truncated_normal([3], [1, 2], means=gt.constant(0.0,
                                                                                  gt.float64))
    assert p64.dtype == gt.float64
    for dt, lo, hi in ((gt.int32, -2 ** 31, 2 ** 31 - 1), (np.uint32, 0, 2 ** 32 - 1)):
        full = R.stateless_uniform([4000], [9, 9], minval=None, maxval=None, dtype=dt).numpy()
        assert full.min() >= lo and full.max() <= hi
        assert full.min() < lo + (hi - lo) // 50 and full.max() > hi - (hi - lo) // 50


def test_stateless_distributions(device):
    n = 40000
    x = R.stateless_normal([n], [1, 1], mean=2.0, stddev=3.0).numpy()
    assert abs(x.mean() - 2.0) < 0.06 and abs(x.std() - 3.0) < 0.06
    u = R.stateless_uniform([n], [1, 2], minval=-1.0, maxval=3.0, dtype=gt.float64).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.03
    i = R.stateless_uniform([n], [1, 3], minval=2, maxval=7, dtype=gt.int32).numpy()
    np.testing.assert_allclose(np.bincount(i, minlength=7)[2:] / n, 0.2, atol=0.01)
    t = R.stateless_truncated_normal([n], [1, 4], mean=1.0, stddev=0.5).numpy()
    assert t.min() >= 0.0 and t.max() <= 2.0 and abs(t.std() - 0.5 * 0.8796) < 0.01
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    with np.errstate(divide="ignore"):
        c = R.stateless_categorical(np.log(probs).astype(np.float32), 20000, [1, 5]).numpy()
    for row, p in zip(c, probs):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, p, atol=0.015)
    # truncated to [-1, 1] around mean 0.5 with stddev 2: the standard normal on
    # [-0.75, 0.25], whose mean and variance follow from the pdf and cdf
    z = (R.stateless_parameterized_truncated_normal([n], [1, 6], means=0.5, stddevs=2.0,
                                                    minvals=-1.0, maxvals=1.0).numpy() - 0.5) / 2
    a, b = -0.75, 0.25
    pdf = lambda v: math.exp(-v * v / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda v: 0.5 * math.erfc(-v / math.sqrt(2))  # noqa: E731
    zmass = cdf(b) - cdf(a)
    mean = (pdf(a) - pdf(b)) / zmass
    var = 1 + (a * pdf(a) - b * pdf(b)) / zmass - mean ** 2
    assert z.min() >= a - 1e-6 and z.max() <= b + 1e-6
    assert abs(z.mean() - mean) < 0.01 and abs(z.var() - var) < 0.01
    # far in the tail: [5, 6] standard deviations out
    tail = R.stateless_parameterized_truncated_normal([2000], [1, 7], minvals=5.0,
                                                      maxvals=6.0).numpy()
    assert tail.min() >= 5.0 and tail.max() <= 6.0 and 5.1 < tail.mean() < 5.3


@pytest.mark.parametrize("lam", [0.7, 4.0, 9.5, 12.0, 300.0])
def test_poisson_mean_and_variance(device, lam):
    n = 30000
    x = R.stateless_poisson([n], [2, int(lam * 10)], lam=lam, dtype=gt.float64).numpy()
    se = math.sqrt(lam / n)
    assert abs(x.mean() - lam) < 5 * se
    assert abs(x.var() / lam - 1) < 0.06
    assert (x >= 0).all() and (x == np.floor(x)).all()


@pytest.mark.parametrize("count, prob", [(6, 0.3), (40, 0.2), (100, 0.5), (1000, 0.93),
                                         (10 ** 6, 0.3)])
def test_binomial_mean_and_variance(device, count, prob):
    n = 30000
    x = R.stateless_binomial([n], [3, count], counts=float(count), probs=prob,
                             output_dtype=gt.float64).numpy()
    mean, var = count * prob, count * prob * (1 - prob)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n)
    assert abs(x.var() / var - 1) < 0.06
    assert x.min() >= 0 and x.max() <= count and (x == np.floor(x)).all()


def test_binomial_edges_and_generator_binomial(device):
    out = R.stateless_binomial([3, 3], [1, 1], counts=[0.0, 20.0, 20.0],
                               probs=[0.5, 0.0, 1.0]).numpy()
    np.testing.assert_array_equal(out, [[0, 0, 20]] * 3)
    g = R.Generator.from_seed(4)
    b = g.binomial([20000], counts=[30.0] * 20000, probs=0.25)
    assert b.dtype == gt.int32 and b.device == device
    b = b.numpy()
    assert abs(b.mean() - 7.5) < 0.06 and abs(b.var() / 5.625 - 1) < 0.06
    assert g.binomial([2, 3], counts=10.0, probs=[0.1, 0.5, 0.9],
                      dtype=gt.float32).dtype == gt.float32


@pytest.mark.parametrize("alpha", [0.2, 1.0, 3.5, 80.0])
def test_gamma_mean_and_variance(device, alpha):
    n = 30000
    x = R.stateless_gamma([n], [4, int(alpha * 10)], alpha=alpha, beta=2.0,
                          dtype=gt.float64).numpy()
    mean, var = alpha / 2.0, alpha / 4.0
    assert (x >= 0).all()
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n)
    assert abs(x.var() / var - 1) < (0.12 if alpha < 1 else 0.06)


def test_stateful_gamma_and_poisson(device):
    g = R.gamma([10], alpha=[0.5, 1.5], seed=3)
    assert g.shape == (10, 2) and g.dtype == gt.float32 and g.device == device
    assert R.gamma([10, 3], alpha=[[1.0], [2.0]], beta=[3.0, 4.0, 5.0]).shape == (10, 3, 2, 3)
    assert R.gamma([3], alpha=1.0, dtype=gt.float64).dtype == gt.float64
    assert np.isnan(R.gamma([2], alpha=[-1.0]).numpy()).all()
    big = R.gamma([20000], alpha=2.0, beta=4.0, seed=5).numpy()
    assert abs(big.mean() - 0.5) < 0.01
    p = R.poisson([10], lam=[0.5, 1.5])
    assert p.shape == (10, 2) and p.dtype == gt.float32
    assert R.poisson([3], lam=2.0, dtype=gt.int64).dtype == gt.int64
    draws = R.poisson([20000], lam=[3.0, 50.0], seed=6).numpy()
    np.testing.assert_allclose(draws.mean(axis=0), [3.0, 50.0], rtol=0.02)
    gt.random.set_seed(11)
    first = R.poisson([5], lam=4.0, seed=1).numpy()
    gt.random.set_seed(11)
    np.testing.assert_array_equal(R.poisson([5], lam=4.0, seed=1).numpy(), first)
    with pytest.raises(TypeError, match=r"gamma: dtype must be a floating type, got int32"):
        R.gamma([3], alpha=1.0, dtype=gt.int32)


def test_gamma_is_differentiable_in_beta(device):
    beta = gt.Variable([2.0, 5.0])
    with gt.GradientTape() as tape:
        out = R.stateless_gamma([6, 2], [1, 2], alpha=[1.5, 3.0], beta=beta)
        loss = gt.reduce_sum(out)
    got = tape.gradient(loss, beta).numpy()
    # out = g / beta with g the standard gamma draw: d out / d beta = -out / beta
    np.testing.assert_allclose(got, -out.numpy().sum(axis=0) / np.array([2.0, 5.0]), rtol=1e-5)


def test_generator_state_and_uniform_full_int(device):
    g = R.Generator.from_seed(1)
    s0 = g.state
    assert s0.dtype == gt.int64 and s0.device == device
    x = g.uniform_full_int([3])
    assert x.dtype == gt.as_dtype(np.uint64) and x.shape == (3,)
    assert not np.array_equal(g.state.numpy(), s0.numpy())        # the position moved
    np.testing.assert_array_equal(R.Generator.from_seed(1).state.numpy(), s0.numpy())
    np.testing.assert_array_equal(R.Generator.from_seed(1).uniform_full_int([3]).numpy(),
                                  x.numpy())
    i32 = g.uniform_full_int([5000], dtype=gt.int32).numpy()
    assert i32.dtype == np.int32 and i32.min() < -2 ** 30 and i32.max() > 2 ** 30
    with pytest.raises(InvalidArgumentError, match=r"uniform_full_int: dtype must be int32, "
                                                   r"int64, uint32 or uint64, got float32"):
        g.uniform_full_int([3], dtype=gt.float32)
    with pytest.raises(InvalidArgumentError, match=r"got int8"):
        g.uniform_full_int([3], dtype=gt.int8)
