"""The rest of tf.nn (gradtape/nn_extra.py) against TensorFlow 2.21's numbers (computed once
with TF and written here): candidate samplers' expected counts, the sampled losses and their
gradients, max pooling with argmax, dilation and erosion, fractional pooling given TF's
pooling sequences, isotonic regression, the depthwise convolution gradients, the
space-to-batch rearrangements, and the RNN cell wrappers."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import nn_extra as ne
from gradtape.registry import InvalidArgumentError


def arr(shape, seed=0.0, scale=1.0, dtype=np.float64):
    """Deterministic test values (the same arrays were given to TensorFlow)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + seed) * scale).reshape(shape).astype(dtype)


def ints(shape, seed=0, mod=5, dtype=np.float64):
    """Small integer values with many ties (TF's tie-breaking is part of the semantics)."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 7 + seed) % mod).reshape(shape).astype(dtype)


def grads(f, *args, weights_seed=3.0):
    """The values of ``f(*args)`` and the gradients of ``sum(f(*args) * w)`` with respect to
    each argument (``w`` = ``arr(output shape, weights_seed)``)."""
    ts = [gt.constant(a) for a in args]
    with gt.GradientTape() as tape:
        tape.watch(ts)
        out = f(*ts)
        w = gt.constant(arr(tuple(out.shape), weights_seed, dtype=out.dtype.as_numpy_dtype))
        y = gt.reduce_sum(out * w)
    return out.numpy(), [g.numpy() for g in tape.gradient(y, ts)]


# --- candidate samplers ------------------------------------------------------------------------

TRUE = [[0, 5], [3, 9]]
# TF: expected counts of classes 0..19 under log_uniform(range_max=20), num_sampled=5, no
# rejection (p * 5, float32)
LOGUNI_COUNT5 = np.array([1.1383512, 0.66589284, 0.47245845, 0.36646724, 0.29942554, 0.2531607,
                          0.21929777, 0.19343434, 0.17303291, 0.15652731, 0.14289823,
                          0.13145363, 0.12170706, 0.11330656, 0.10599121, 0.099563435,
                          0.0938709, 0.08879426, 0.084238656, 0.08012778], dtype=np.float32)


def test_log_uniform_expected_counts_are_tensorflows():
    s, t, c = gt.random.log_uniform_candidate_sampler(TRUE, 2, 5, False, 20, seed=1)
    assert s.dtype == gt.int64 and t.dtype == gt.float32 and c.dtype == gt.float32
    assert s.shape == (5,) and t.shape == (2, 2) and c.shape == (5,)
    np.testing.assert_array_equal(t.numpy(), LOGUNI_COUNT5[[[0, 5], [3, 9]]])
    np.testing.assert_array_equal(c.numpy(), LOGUNI_COUNT5[s.numpy()])
    assert s.numpy().min() >= 0 and s.numpy().max() < 20


def _loguni_p(range_max=20):
    """TF's LogUniformSampler::Probability, in double, rounded to float32."""
    v = np.arange(range_max, dtype=np.float64)
    return (np.log((v + 2.0) / (v + 1.0)) / np.log1p(range_max)).astype(np.float32)


def test_unique_expected_counts_use_the_number_of_tries():
    # TF (seed=1): sampled [15, 2, 7, 0, 1] after 6 tries; 1 - (1 - p) ** 6 in float32
    p = _loguni_p()
    np.testing.assert_array_equal(p * np.float32(5), LOGUNI_COUNT5)
    got = ne._expected_count(np, p, 5, 6)
    np.testing.assert_array_equal(got[[[0, 5], [3, 9]]],
                                  np.array([[0.7877652, 0.26783806], [0.36663598, 0.17373168]],
                                           dtype=np.float32))
    np.testing.assert_array_equal(got[[15, 2, 7, 0, 1]],
                                  np.array([0.11368396, 0.44874233, 0.21079604, 0.7877652,
                                            0.57579297], dtype=np.float32))
    # without a rejection the count is p * num_sampled
    np.testing.assert_array_equal(ne._expected_count(np, p, 5, 5), p * np.float32(5))


def test_unique_sampling_keeps_first_occurrences_and_counts_tries():
    draws = iter([np.array([3, 3, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]),
                  np.array([1, 2, 7] + [0] * 13)])
    values, tries = ne._draw_unique(lambda k: next(draws)[:k], 3)
    np.testing.assert_array_equal(values, [3, 1, 2])
    assert tries == 16 + 2


def test_unique_samples_are_distinct_and_consistent_with_their_counts():
    s, t, c = gt.random.log_uniform_candidate_sampler(TRUE, 2, 12, True, 20, seed=5)
    sv = s.numpy()
    assert len(set(sv.tolist())) == 12
    p = _loguni_p()
    # some number of tries >= 12 explains every count, as TF's formula
    fits = [n for n in range(12, 400)
            if np.array_equal(ne._expected_count(np, p, 12, n)[sv], c.numpy())
            and np.array_equal(ne._expected_count(np, p, 12, n)[[[0, 5], [3, 9]]], t.numpy())]
    assert len(fits) == 1


def test_log_uniform_draws_follow_the_distribution():
    s, _, _ = gt.random.log_uniform_candidate_sampler([[0]], 1, 20000, False, 20, seed=11)
    freq = np.bincount(s.numpy(), minlength=20) / 20000
    p = LOGUNI_COUNT5.astype(np.float64) / 5
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / 20000))


def test_large_ranges():
    # TF (range_max=2**40): expected counts of classes 1, 2 and 10**9, num_sampled=3
    _, t, _ = gt.random.log_uniform_candidate_sampler([[1, 2, 10 ** 9]], 3, 3, False, 2 ** 40,
                                                      seed=4)
    np.testing.assert_array_equal(t.numpy(), np.array([[4.38721888e-02, 3.11278123e-02,
                                                        1.08202135e-10]], dtype=np.float32))


def test_uniform_sampler():
    s, t, c = gt.random.uniform_candidate_sampler(TRUE, 2, 7, False, 30, seed=1)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 0.23333335, np.float32))
    np.testing.assert_array_equal(c.numpy(), np.full(7, 0.23333335, np.float32))
    s, t, c = gt.random.uniform_candidate_sampler(TRUE, 2, 30, True, 30, seed=1)
    assert sorted(s.numpy().tolist()) == list(range(30))
    # all 30 classes: many rejections, so each count is 1 - (1 - 1/30) ** tries < 1
    assert np.all(c.numpy() == t.numpy()[0, 0]) and 0.9 < t.numpy()[0, 0] < 1


def test_seeds_make_draws_reproducible():
    gt.random.set_seed(7)
    a = [gt.random.log_uniform_candidate_sampler(TRUE, 2, 6, True, 50, seed=3)[0].numpy()
         for _ in range(2)]
    gt.random.set_seed(7)
    b = [gt.random.log_uniform_candidate_sampler(TRUE, 2, 6, True, 50, seed=3)[0].numpy()
         for _ in range(2)]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1])        # the op's sequence goes on, as TF's kernel


# TF's expected counts of every id (num_sampled=3, non-unique) of fixed unigram samplers
FIX_D075 = np.array([0.08609063, 0.14478661, 0.19624422, 0.24350108, 0.2878614, 0.33004212,
                     0.37049252, 0.40951836, 0.44734, 0.48412323], dtype=np.float32)
FIX_SHARD1 = np.array([0., 0.12, 0.35999998, 0.6, 0.84000003, 1.08], dtype=np.float32)
FIX_SHARD0 = np.array([0., 0., 0.12, 0.35999998, 0.6, 0.84000003, 1.08], dtype=np.float32)
FIX_FILE = np.array([0., 0., 1.0232441, 0.7235429, 0.8354753, 0.41773766], dtype=np.float32)
UNIGRAMS = [1., 2, 3, 4, 5, 6, 7, 8, 9, 10]


@pytest.mark.parametrize("kwargs,ref", [
    ({"range_max": 10, "distortion": 0.75}, FIX_D075),
    ({"range_max": 6, "num_shards": 2, "shard": 1, "num_reserved_ids": 3}, FIX_SHARD1),
    ({"range_max": 7, "num_shards": 2, "shard": 0, "num_reserved_ids": 3}, FIX_SHARD0),
])
def test_fixed_unigram_expected_counts(kwargs, ref):
    n = kwargs["range_max"]
    s, t, c = gt.random.fixed_unigram_candidate_sampler([list(range(n))], n, 3, False,
                                                        unigrams=UNIGRAMS, seed=1, **kwargs)
    np.testing.assert_array_equal(t.numpy()[0], ref)
    np.testing.assert_array_equal(c.numpy(), ref[s.numpy()])
    assert np.all(ref[s.numpy()] > 0)            # reserved ids are never drawn


def test_fixed_unigram_from_a_vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a,3\nb,1.5\n\nc,x,2\nd,0.5\n")       # the empty line is skipped, as TF
    _, t, _ = gt.nn.fixed_unigram_candidate_sampler([list(range(6))], 6, 3, False, 6,
                                                    vocab_file=str(path), num_reserved_ids=2,
                                                    distortion=0.5, seed=1)
    np.testing.assert_array_equal(t.numpy()[0], FIX_FILE)
    path.write_text("a,3\nb,oops\n")
    with pytest.raises(InvalidArgumentError, match="Wrong vocabulary format at line: b,oops"):
        gt.nn.fixed_unigram_candidate_sampler([[0]], 1, 1, False, 2, vocab_file=str(path))


def test_fixed_unigram_errors():
    f = gt.random.fixed_unigram_candidate_sampler
    with pytest.raises(InvalidArgumentError, match="Must provide either vocab_file or unigrams"):
        f([[0]], 1, 2, False, 10)
    with pytest.raises(InvalidArgumentError, match="Must only provide one"):
        f([[0]], 1, 2, False, 10, vocab_file="v.txt", unigrams=UNIGRAMS)
    with pytest.raises(InvalidArgumentError, match="must be equal to weights size  6"):
        f([[0]], 1, 2, False, 7, unigrams=UNIGRAMS, num_shards=2, shard=1, num_reserved_ids=3)
    # TF's kernel would loop forever: two drawable ids, three unique ones asked for
    with pytest.raises(InvalidArgumentError, match="non-zero probability"):
        f([[0]], 1, 3, True, 4, unigrams=[0., 0., 3., 4.])


def test_learned_unigram_counts_persist_per_sampler():
    # TF: three calls with the same arguments learn from the true classes seen (weights
    # start at 1, +1 per true class); another seed is another sampler
    refs = [0.4, 0.5714286, 0.6666667]
    for ref in refs:
        _, t, _ = gt.random.learned_unigram_candidate_sampler(TRUE, 2, 4, False, 10, seed=1234)
        np.testing.assert_array_equal(t.numpy(), np.full((2, 2), ref, np.float32))
    _, t, c = gt.nn.learned_unigram_candidate_sampler(TRUE, 2, 4, False, 10, seed=1235)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 0.4, np.float32))
    np.testing.assert_array_equal(c.numpy(), np.full(4, 0.4, np.float32))
    # after one call, classes 0, 3, 5, 9 weigh 2 of 14, the others 1 of 14
    s, _, c = gt.nn.learned_unigram_candidate_sampler(TRUE, 2, 4, False, 10, seed=1235)
    want = np.where(np.isin(s.numpy(), [0, 3, 5, 9]), np.float32(2) / np.float32(14),
                    np.float32(1) / np.float32(14)) * np.float32(4)
    np.testing.assert_array_equal(c.numpy(), want.astype(np.float32))
    with pytest.raises(InvalidArgumentError, match="out of range"):
        gt.nn.learned_unigram_candidate_sampler([[10]], 1, 4, False, 10)


def test_all_candidate_sampler():
    s, t, c = gt.nn.all_candidate_sampler(TRUE, 2, 10, True)
    np.testing.assert_array_equal(s.numpy(), np.arange(10))
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(c.numpy(), np.ones(10, np.float32))
    with pytest.raises(InvalidArgumentError, match=r"out of range \[0, 5\), received 9"):
        gt.random.all_candidate_sampler(TRUE, 2, 5, True)


def test_sampler_argument_errors():
    f = gt.random.uniform_candidate_sampler
    with pytest.raises(InvalidArgumentError, match="Sampler's range is too small"):
        f(TRUE, 2, 25, True, 20)
    with pytest.raises(InvalidArgumentError, match="range_max must be >= 1"):
        f(TRUE, 2, 5, True, 0)
    with pytest.raises(InvalidArgumentError, match="num_true=3 columns"):
        f(TRUE, 3, 5, True, 10)
    with pytest.raises(InvalidArgumentError, match="must be a matrix"):
        f([0, 5], 2, 5, True, 10)
    with pytest.raises(InvalidArgumentError, match="num_sampled must be >= 1"):
        f(TRUE, 2, 0, True, 10)
    with pytest.raises(InvalidArgumentError, match=r"out of range \[0, 6\), received 9"):
        f(TRUE, 2, 3, False, 6)
    with pytest.raises(TypeError, match="integer"):
        f([[0.5, 1.0]], 2, 3, False, 6)


def test_samplers_on_the_strict_device_read_nothing_back():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        tc = gt.constant(TRUE, gt.int64)
        dev.reset_counters()
        s, t, c = gt.random.log_uniform_candidate_sampler(tc, 2, 5, False, 20, seed=1)
        s2, t2, c2 = gt.random.fixed_unigram_candidate_sampler(tc, 2, 3, True, 10,
                                                               unigrams=UNIGRAMS, seed=1)
        assert dev.sync_count == 0
    assert t._device is dev and s._device is dev
    np.testing.assert_array_equal(t.numpy(), LOGUNI_COUNT5[[[0, 5], [3, 9]]])
    np.testing.assert_array_equal(c.numpy(), LOGUNI_COUNT5[s.numpy()])


def test_compute_accidental_hits():
    # TF: a candidate sampled twice is found at its last position; repeated true classes hit
    # once each
    idx, ids, w = gt.nn.compute_accidental_hits([[1, 2], [2, 2], [3, 0]], [2, 7, 2, 3], 2)
    assert idx.dtype == gt.int32 and ids.dtype == gt.int64 and w.dtype == gt.float32
    np.testing.assert_array_equal(idx.numpy(), [0, 1, 1, 2])
    np.testing.assert_array_equal(ids.numpy(), [2, 2, 2, 3])
    np.testing.assert_array_equal(w.numpy(), np.full(4, -np.finfo(np.float32).max))
    with pytest.raises(InvalidArgumentError, match="must be a vector"):
        gt.nn.compute_accidental_hits([[1, 2]], [[2, 7]], 2)


# --- sampled losses ----------------------------------------------------------------------------
# weights arr((10, 4)), biases arr((10,), 1), inputs arr((3, 4), 2), labels LABELS, given
# sampled values; TF's losses and gradients of sum(loss * arr((3,), 3)) (float64)

LABELS = [[1, 2], [3, 3], [9, 0]]
NCE_OUT = np.array([
    10.5259510438, 7.03589131142, 12.2398277566])
NCE_GW = np.array([
    -0.31821052324, -0.296595450601, -0.135486903113, 0.0893432519505, 0.0572496114905,
    0.0269079526461, -0.0160889367761, -0.0515189478359, -0.231760104516, -0.374895166623,
    -0.341711173968, -0.147815076812, -0.77754327301, -0.769538366225, -0.399607541435,
    0.158264954131, 0, 0, 0, 0, -0.619285102663, -0.657599840423, -0.386635097952,
    0.0661701724267, 0, 0, 0, 0, -0.574400635324, -0.618422106004, -0.371589997119,
    0.0500066936656, 0, 0, 0, 0, -0.345810697355, -0.322320828867, -0.14723843816,
    0.0970924906771]).reshape((10, 4))
NCE_GB = np.array([
    -0.32875716078, 0.0629602699859, -1.29110591507, -0.689663617246, 0, -0.881459643625, 0,
    -0.934039300583, 0, -0.357272103613])
NCE_GX = np.array([
    0.269562250144, 0.235229157208, 0.0902641160806, -0.0971535492555, 0.135177867712,
    -0.265876983172, -0.541885734427, -0.563037157584, -1.69217565647, -2.36578802675,
    -1.92673332159, -0.581505829252]).reshape((3, 4))
NCE_HITS_OUT = np.array([
    9.10987924586, 8.88485358434, 11.0969770888])
NCE_HITS_GB = np.array([
    -0.32875716078, 0.0629602699859, -2.48369707173, -0.465392244458, 0, -0.881459643625, 0, 0,
    0, -0.357272103613])
NCE_HITS_GX = np.array([
    0.196677342649, 0.129127181203, 0.000846488768856, -0.12783232056, 0.757391635379,
    -0.0328692337615, -0.807671188668, -1.20261276333, -0.66001861381, -1.51389844205,
    -1.65576817768, -1.01890426726]).reshape((3, 4))
SSM_OUT = np.array([
    2.66576853712, 5.50390580902, 2.10448507954])
SSM_GW = np.array([
    0.361464409946, 0.33691123239, 0.153903437858, -0.101487548307, -0.0194437528139,
    -0.00913877957175, 0.00546430450041, 0.0174974407839, 0.22411639927, 0.116070346192,
    -0.0465654043492, -0.187300717621, -0.683318606923, -0.542713891832, -0.146862353274,
    0.318060844817, 0, 0, 0, 0, -0.216092516002, -0.2117646804, -0.107840606692,
    0.0468025893994, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.333274066523, 0.310635773222,
    0.141900621957, -0.0935726090727]).reshape((10, 4))
SSM_GB = np.array([
    0.373444636358, -0.0213832704683, -0.834078694744, 0.363726480859, 0, -0.226029115896, 0, 0,
    0, 0.344319963891])
SSM_GX = np.array([
    0.0987827118484, 0.0439047522404, -0.0316222983769, -0.0922768879555, 0.777498606129,
    0.157141503571, -0.53712170352, -0.978768180688, -0.246843177162, 0.196926029976,
    0.548077848162, 0.641460090404]).reshape((3, 4))
SSM_KEEP_OUT = np.array([
    1.06110578123, 5.5093189189, 1.86548560219])
SSM_KEEP_GX = np.array([
    0.0294530888173, 0.069718579833, 0.0771943333704, 0.048364385729, 0.773301291256,
    0.156293177458, -0.534222059846, -0.973484314956, -0.248470739162, 0.24156132684,
    0.61798332633, 0.703758111191]).reshape((3, 4))


def _sampled(candidates, num_true=2):
    return (gt.constant(candidates, gt.int64),
            gt.constant(np.array([[.5, .6], [.7, .7], [.8, .9]])[:, :num_true]),
            gt.constant([.1, .2, .3, .4], gt.float64))


def _loss_and_grads(f, weights=None, biases=None):
    weights = arr((10, 4)) if weights is None else weights
    biases = arr((10,), 1.0) if biases is None else biases
    wt = [gt.constant(w) for w in weights] if isinstance(weights, list) else gt.constant(weights)
    bt = [gt.constant(b) for b in biases] if isinstance(biases, list) else gt.constant(biases)
    xt = gt.constant(arr((3, 4), 2.0))
    with gt.GradientTape() as tape:
        tape.watch([wt, bt, xt])
        out = f(wt, bt, xt)
        y = gt.reduce_sum(out * arr((3,), 3.0))
    gw, gb, gx = tape.gradient(y, [wt, bt, xt])

    def cat(g):
        return np.concatenate([v.numpy() for v in g]) if isinstance(g, list) else g.numpy()
    return out.numpy(), cat(gw), cat(gb), gx.numpy()


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_nce_loss_and_gradients_are_tensorflows():
    out, gw, gb, gx = _loss_and_grads(lambda w, b, x: gt.nn.nce_loss(
        w, b, LABELS, x, 4, 10, num_true=2, sampled_values=_sampled([2, 5, 3, 7])))
    for got, want in ((out, NCE_OUT), (gw, NCE_GW), (gb, NCE_GB), (gx, NCE_GX)):
        _close(got, want)


def test_nce_loss_removing_accidental_hits():
    # candidate 2 sampled twice: only its last position is masked for example 0 (TF)
    out, _, gb, gx = _loss_and_grads(lambda w, b, x: gt.nn.nce_loss(
        w, b, LABELS, x, 4, 10, num_true=2, sampled_values=_sampled([2, 5, 3, 2]),
        remove_accidental_hits=True))
    for got, want in ((out, NCE_HITS_OUT), (gb, NCE_HITS_GB), (gx, NCE_HITS_GX)):
        _close(got, want)


def test_sampled_softmax_loss_and_gradients_are_tensorflows():
    out, gw, gb, gx = _loss_and_grads(lambda w, b, x: gt.nn.sampled_softmax_loss(
        w, b, LABELS, x, 4, 10, num_true=2, sampled_values=_sampled([2, 5, 3, 2])))
    for got, want in ((out, SSM_OUT), (gw, SSM_GW), (gb, SSM_GB), (gx, SSM_GX)):
        _close(got, want)
    out, _, _, gx = _loss_and_grads(lambda w, b, x: gt.nn.sampled_softmax_loss(
        w, b, [[1], [3], [9]], x, 4, 10, sampled_values=_sampled([2, 5, 3, 2], 1),
        remove_accidental_hits=False))
    _close(out, SSM_KEEP_OUT)
    _close(gx, SSM_KEEP_GX)


def test_sharded_weights():
    w, b = arr((10, 4)), arr((10,), 1.0)
    # TF 2's "div" split (10 rows in 3 shards: 4, 3, 3): the same as one tensor
    out, gw, gb, gx = _loss_and_grads(lambda w, b, x: gt.nn.nce_loss(
        w, b, LABELS, x, 4, 10, num_true=2, sampled_values=_sampled([2, 5, 3, 7])),
        [w[:4], w[4:7], w[7:]], [b[:4], b[4:7], b[7:]])
    for got, want in ((out, NCE_OUT), (gw, NCE_GW), (gb, NCE_GB), (gx, NCE_GX)):
        _close(got, want)
    # "mod" (tf.compat.v1.nn.nce_loss's default): id i is row i // 3 of shard i % 3
    perm = [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]

    def mod(w, b, x):
        logits, labels = ne._compute_sampled_logits(
            "nce_loss", w, b, LABELS, x, 4, 10, 2, _sampled([2, 5, 3, 7]), True, False, "mod",
            None)
        return gt.reduce_sum(gt.nn.sigmoid_cross_entropy_with_logits(labels, logits), 1)
    out, gw, gb, gx = _loss_and_grads(mod, [w[0::3], w[1::3], w[2::3]],
                                      [b[0::3], b[1::3], b[2::3]])
    for got, want in ((out, NCE_OUT), (gw, NCE_GW[perm]), (gb, NCE_GB[perm]), (gx, NCE_GX)):
        _close(got, want)


def test_sampled_losses_with_their_own_sampler():
    w = gt.constant(arr((50, 8), dtype=np.float32))
    b = gt.constant(arr((50,), 1.0, dtype=np.float32))
    x = gt.constant(arr((6, 8), 2.0, dtype=np.float32))
    labels = gt.constant([[1], [7], [3], [49], [0], [12]], gt.int64)
    gt.random.set_seed(1)
    a = gt.nn.sampled_softmax_loss(w, b, labels, x, 10, 50, seed=5)
    gt.random.set_seed(1)
    a2 = gt.nn.sampled_softmax_loss(w, b, labels, x, 10, 50, seed=5)
    assert a.shape == (6,) and a.dtype == gt.float32
    np.testing.assert_array_equal(a.numpy(), a2.numpy())
    with gt.GradientTape() as tape:
        tape.watch(w)
        loss = gt.reduce_mean(gt.nn.nce_loss(w, b, labels, x, 10, 50))
    g = tape.gradient(loss, w).numpy()
    assert np.isfinite(loss.numpy()) and np.count_nonzero(np.abs(g).sum(1)) >= 6


def test_sampled_loss_errors():
    w, b, x = arr((10, 4)), arr((10,)), arr((3, 4))
    with pytest.raises(InvalidArgumentError, match="num_true=2"):
        gt.nn.nce_loss(w, b, [[1], [2], [3]], x, 4, 10, num_true=2,
                       sampled_values=_sampled([2, 5, 3, 7]))
    with pytest.raises(TypeError, match="integers"):
        gt.nn.nce_loss(w, b, [[1.0], [2.0], [3.0]], x, 4, 10)


# --- windows picking a maximum, fractional pooling, isotonic regression -----------------------
# Fingerprints of TF's arrays: (sum a * sin(0.37 k + 1), sum a * cos(0.91 k), sum |a|) over
# the flattened array; "_g0"/"_g1": gradients of sum(out * arr(out.shape, 3)).

def fp(a):
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    k = np.arange(a.size)
    return (np.sum(a * np.sin(k * 0.37 + 1.0)), np.sum(a * np.cos(k * 0.91)), np.sum(np.abs(a)))


TF_FP = {
    "mpa1_out": (10.0902535324918, 4.62160778895116, 211),
    "mpa1_g0": (2.04314768178421, -1.39528858055959, 33.0344131067395),
    "mpa1_arg": (54.886887850014, 205.382426593847, 3201),
    "mpa2_out": (2.9642250062459, 1.05588845514514, 60.0763175401845),
    "mpa2_g0": (-1.01668278858521, 2.53157626924561, 39.1933428787592),
    "mpa2_arg": (389.532990352758, 201.055184191913, 7776),
    "mpa3_out": (2.10470704640097, -0.760903480290837, 44.8133870154198),
    "mpa3_arg": (198.445311773729, -266.258444114835, 2886),
    "dil1_out": (7.34057984861951, 6.82323253301946, 807),
    "dil1_g0": (-1.64709659193486, 2.89363691988366, 40.2234412534162),
    "dil1_g1": (-0.861616532745026, 5.15369167016657, 22.0289768576622),
    "dil2_out": (2.93581521199035, 2.17936725412176, 54.3972852204148),
    "dil2_g0": (-3.29523222609429, 8.68337189154192, 22.9850287833159),
    "dil2_g1": (1.72191136036884, -1.68644817475206, 4.21665263999167),
    "dil3_out": (10.852540905895, 3.10439056588107, 200),
    "dil3_g0": (4.08229945682851, -3.20587721811661, 34.4259342215955),
    "dil3_g1": (8.8506458987517, -11.1054844715255, 19.1636733859777),
    "ero1_out": (6.19935170592283, 2.17023335241817, 203),
    "ero1_g0": (-2.84728358180428, 4.4285204794542, 36.1274350490421),
    "ero1_g1": (-1.28075967779379, 3.78954870607845, 28.5971995592117),
    "ero2_out": (-4.48273363303057, -3.44026700936691, 51.7796101724065),
    "ero2_g0": (2.02246158015677, 5.85406946728746, 22.9850287833159),
    "ero2_g1": (3.71684312072691, 4.32614573267391, 6.84648499213385),
    "fmax_r_out": (-8.55631951480697, 3.87466424162936, 107.152372829685),
    "fmax_r_g0": (0.214610240015308, 6.63914473193071, 91.4405832268389),
    "fmax_po_out": (9.56413783079227, -1.72482460810058, 360),
    "fmax_po_g0": (-0.659341718536949, 1.61240720040739, 87.7845776686445),
    "favg_r_out": (-3.8756031704338, 3.8221720345234, 41.4829350230235),
    "favg_r_g0": (5.4773806386774, 4.64318295712213, 91.4405832268389),
    "favg_po_out": (0.336965211641585, 0.284613354663591, 10.1045028102657),
    "favg_po_g0": (6.17416269320972, 2.29701706929999, 51.5415777853295),
    "favg_int_out": (-1.33571596670005, -2.32596472536437, 3),
    "iso1_out": (7.38647908140678, -0.763842590244109, 34.3000002503395),
    "iso1_g0": (-3.56412375116342, 0.142795538210661, 16.5025843828917),
    "iso1_seg": (-4.29111917257936, -0.0106537087453712, 36),
    "iso2_out": (1.01553466801157, 0.838091851455805, 2.63719096808245),
    "iso2_g0": (-1.77009353649011, -1.6464352604345, 4.40945023468284),
    "iso2_seg": (4.08143503616063, 0.101157243348978, 18),
    "iso4_out": (2.99048673092261, 3.02480905919704, 10.8756085903188),
    "iso4_seg": (7.58791587016269, -4.66536899022605, 37),
    "iso3_out": (1.29480149738023, 0.588678157001298, 18),
    "iso3_seg": (-3.20478972286609, -3.36192342995033, 9),
}


def check(name, got, rtol=1e-9):
    np.testing.assert_allclose(fp(got), TF_FP[name], rtol=rtol, atol=1e-9, err_msg=name)


def check_grads(name, f, *args, rtol=1e-9):
    out, gs = grads(f, *args)
    check(name + "_out", out, rtol)
    for i, g in enumerate(gs):
        check(f"{name}_g{i}", g, rtol)


X_TIES = ints((2, 5, 7, 3), mod=4, dtype=np.float32)
X_SIN = arr((2, 5, 7, 3), 0.5)
F_TIES = ints((2, 3, 3), seed=1, mod=3, dtype=np.float32)
F_SIN = arr((2, 3, 3), 1.5)


def test_max_pool_with_argmax_is_tensorflows():
    out, arg = gt.nn.max_pool_with_argmax(X_TIES, 3, 2, "SAME")
    assert arg.dtype == gt.int64 and out.shape == (2, 3, 4, 3)
    check("mpa1_arg", arg.numpy())
    check_grads("mpa1", lambda x: gt.nn.max_pool_with_argmax(x, 3, 2, "SAME")[0], X_TIES)
    out, arg = gt.nn.max_pool_with_argmax(X_SIN, [2, 3], [1, 2], "VALID",
                                          include_batch_in_index=True)
    check("mpa2_arg", arg.numpy())
    check_grads("mpa2", lambda x: gt.nn.max_pool_with_argmax(
        x, [2, 3], [1, 2], "VALID", include_batch_in_index=True).output, X_SIN)
    out, arg = gt.nn.max_pool_with_argmax(X_SIN, [1, 3, 2, 1], [1, 2, 3, 1], "SAME",
                                          output_dtype=gt.int32)
    assert arg.dtype == gt.int32
    check("mpa3_arg", arg.numpy())
    check("mpa3_out", out.numpy())
    # the argmax indexes the flattened input
    flat = X_SIN.reshape(-1)
    np.testing.assert_array_equal(flat[arg.numpy() + np.arange(2).reshape(2, 1, 1, 1) * 105],
                                  out.numpy())


def test_max_pool_with_argmax_errors():
    f = gt.nn.max_pool_with_argmax
    with pytest.raises(ValueError, match="NHWC"):
        f(X_SIN, 2, 2, "SAME", data_format="NCHW")
    with pytest.raises(TypeError, match="int32 or int64"):
        f(X_SIN, 2, 2, "SAME", output_dtype=gt.float32)
    with pytest.raises(InvalidArgumentError, match="across depth"):
        f(X_SIN, [1, 2, 2, 2], 2, "SAME")
    with pytest.raises(InvalidArgumentError, match="4-dimensional"):
        f(X_SIN[0], 2, 2, "SAME")
    with pytest.raises(ValueError, match="'SAME' or 'VALID'"):
        f(X_SIN, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]])


@pytest.mark.parametrize("name,fn,args", [
    ("dil1", gt.nn.dilation2d, ([1, 1, 1, 1], "SAME", "NHWC", [1, 2, 1, 1])),
    ("dil2", gt.nn.dilation2d, ([1, 2, 1, 1], "VALID", "NHWC", [1, 1, 2, 1])),
    ("dil3", gt.nn.dilation2d, ([1, 2, 3, 1], "SAME", "NHWC", [1, 1, 1, 1])),
    ("ero1", gt.nn.erosion2d, ([1, 1, 1, 1], "SAME", "NHWC", [1, 2, 1, 1])),
    ("ero2", gt.nn.erosion2d, ([1, 2, 1, 1], "VALID", "NHWC", [1, 1, 2, 1])),
])
def test_dilation_and_erosion_are_tensorflows(name, fn, args):
    x, f = (X_SIN, F_SIN) if name.endswith("2") else (X_TIES, F_TIES)
    check_grads(name, lambda a, b: fn(a, b, *args), x, f)


def test_dilation_where_no_tap_is_inside_the_image():
    # TF: the dtype's lowest value (a 1x1 image, taps 5 apart)
    out = gt.nn.dilation2d(X_SIN[:, :1, :1], np.ones((2, 2, 3)), [1, 1, 1, 1], "SAME", "NHWC",
                           [1, 5, 5, 1])
    np.testing.assert_array_equal(out.numpy(), np.full((2, 1, 1, 3), -np.finfo(np.float64).max))


def test_dilation_errors():
    with pytest.raises(ValueError, match="NHWC"):
        gt.nn.dilation2d(X_SIN, F_SIN, 1, "SAME", "NCHW", 1)
    with pytest.raises(InvalidArgumentError, match="same depth: 3 vs 1"):
        gt.nn.dilation2d(X_SIN, F_SIN[..., :1], 1, "SAME", "NHWC", 1)
    with pytest.raises(InvalidArgumentError, match="3-dimensional"):
        gt.nn.erosion2d(X_SIN, F_SIN[0], 1, "SAME", "NHWC", 1)
    with pytest.raises(ValueError, match="batch and channel"):
        gt.nn.dilation2d(X_SIN, F_SIN, [2, 1, 1, 1], "SAME", "NHWC", 1)
    with pytest.raises(TypeError, match="filters are float32"):
        gt.nn.dilation2d(X_SIN, F_TIES, 1, "SAME", "NHWC", 1)


# TF's pooling sequences (seed=5, pooling_ratio [1, 1.44, 1.73, 1] of a 9 x 11 image)
SEQ_RANDOM = ([0, 2, 3, 5, 7, 8, 9], [0, 2, 3, 5, 7, 9, 11])
SEQ_PSEUDO = ([0, 1, 3, 4, 6, 7, 9], [0, 2, 4, 6, 8, 9, 11])


@pytest.mark.parametrize("name,seqs,overlapping,x", [
    ("fmax_r", SEQ_RANDOM, False, arr((2, 9, 11, 2), 0.3)),
    ("fmax_po", SEQ_PSEUDO, True, ints((2, 9, 11, 2), mod=4, dtype=np.float32)),
    ("favg_r", SEQ_RANDOM, False, arr((2, 9, 11, 2), 0.3)),
    ("favg_po", SEQ_PSEUDO, True, arr((2, 9, 11, 2), 0.3)),
])
def test_fractional_pooling_given_tensorflows_sequences(name, seqs, overlapping, x):
    kind = "max" if name.startswith("fmax") else "avg"
    check_grads(name, lambda v: ne._fractional_pool(v, seqs[0], seqs[1], overlapping, kind,
                                                    "fractional_pool"), x)


def test_fractional_avg_pool_of_integers_truncates():
    x = gt.constant(ints((1, 7, 7, 1), mod=9, dtype=np.int32) - 4)
    out = ne._fractional_pool(x, [0, 1, 3, 5, 7], [0, 2, 4, 5, 7], True, "avg", "t")
    assert out.dtype == gt.int32
    np.testing.assert_array_equal(out.numpy().reshape(4, 4), [[-1, 0, 0, 0], [0, 0, 0, -1],
                                                              [0, 1, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("pseudo_random", [False, True])
@pytest.mark.parametrize("fn", [gt.nn.fractional_max_pool, gt.nn.fractional_avg_pool])
def test_fractional_pool_sequences(fn, pseudo_random):
    x = arr((2, 9, 11, 2), 0.3)
    out, rows, cols = fn(x, [1.0, 1.44, 1.73, 1.0], pseudo_random=pseudo_random, seed=5)
    assert out.shape == (2, 6, 6, 2) and rows.dtype == gt.int64
    for seq, size in ((rows.numpy(), 9), (cols.numpy(), 11)):
        assert seq[0] == 0 and seq[-1] == size and len(seq) == 7
        k = size // 6
        assert set(np.diff(seq).tolist()) <= {k, k + 1}
    # the output is the pooling with those sequences
    want = ne._fractional_pool(gt.constant(x), rows.numpy(), cols.numpy(), False,
                               "max" if fn is gt.nn.fractional_max_pool else "avg", "t")
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    # a seed gives the same sequences at every call, as TF's deterministic kernels
    again = fn(x, [1.0, 1.44, 1.73, 1.0], pseudo_random=pseudo_random, seed=5)
    np.testing.assert_array_equal(again[1].numpy(), rows.numpy())
    np.testing.assert_array_equal(again[2].numpy(), cols.numpy())


def test_fractional_pool_arguments():
    x = arr((2, 7, 9, 2))
    out, rows, cols = gt.nn.fractional_max_pool(x, 1.5)
    assert out.shape == (2, 4, 6, 2) and rows.shape == (5,) and cols.shape == (7,)
    with pytest.raises(ValueError, match="first and last elements"):
        gt.nn.fractional_max_pool(x, [1.5, 2.0])
    with pytest.raises(ValueError, match=">= 1.0"):
        gt.nn.fractional_avg_pool(x, 0.5)
    with pytest.raises(InvalidArgumentError, match="Pooling ratio is higher than input "
                                                   "dimension size for dimension 1"):
        gt.nn.fractional_max_pool(x, 8.0)
    with pytest.raises(InvalidArgumentError, match="4-dimensional"):
        gt.nn.fractional_max_pool(x[0], 1.5)
    with pytest.raises(TypeError, match="float32, float64, int32 or int64"):
        gt.nn.fractional_max_pool(x.astype(np.float16), 1.5)


def test_isotonic_regression_is_tensorflows():
    x = np.round(arr((3, 9), 0.1, 2.0), 1).astype(np.float32)   # ties and repeated values
    check_grads("iso1", lambda v: gt.nn.isotonic_regression(v)[0], x, rtol=1e-6)
    out, seg = gt.nn.isotonic_regression(x)
    assert out.dtype == gt.float32 and seg.dtype == gt.int32
    check("iso1_seg", seg.numpy())
    x = arr((6, 4), 0.7)
    check_grads("iso2", lambda v: gt.nn.isotonic_regression(v, decreasing=False, axis=0)[0], x)
    check("iso2_seg", gt.nn.isotonic_regression(x, decreasing=False, axis=0)[1].numpy())
    out, seg = gt.nn.isotonic_regression(arr((3, 4, 5), 0.9), axis=1)
    check("iso4_out", out.numpy())
    check("iso4_seg", seg.numpy())
    out, seg = gt.nn.isotonic_regression(gt.constant(ints((2, 6), mod=4, dtype=np.int32)))
    assert out.dtype == gt.float64
    check("iso3_out", out.numpy())
    check("iso3_seg", seg.numpy())


def test_isotonic_regression_documented_example_and_edges():
    y, seg = gt.nn.isotonic_regression([[3., 1., 2.], [1., 3., 4.]], axis=1)
    np.testing.assert_allclose(y.numpy(), [[3, 1.5, 1.5], [8 / 3, 8 / 3, 8 / 3]], rtol=1e-6)
    np.testing.assert_array_equal(seg.numpy(), [[0, 1, 1], [0, 0, 0]])
    # TF merges only strict violations: equal neighbours stay separate segments
    np.testing.assert_array_equal(
        gt.nn.isotonic_regression([1., 1., 2.], decreasing=False)[1].numpy(), [0, 1, 2])
    np.testing.assert_array_equal(gt.nn.isotonic_regression([1., 1., 2.])[1].numpy(),
                                  [0, 0, 0])
    y, seg = gt.nn.isotonic_regression(gt.constant(3.0))
    assert y.shape == () and float(y) == 3.0 and int(seg) == 0
    assert gt.nn.isotonic_regression(gt.zeros([2, 0]))[0].shape == (2, 0)
    assert gt.nn.isotonic_regression(gt.constant([1, 2], gt.int16))[0].dtype == gt.float32
    with pytest.raises(InvalidArgumentError, match=r"range \[-1, 1\)"):
        gt.nn.isotonic_regression([3.0, 4.0], axis=2)


# --- convolution gradients, atrous transpose, batch norm, space to batch -----------------------

TF_FP.update({
    "dbi1_out": (-34.4037635244953, -8.21084799357309, 663.725298236572),
    "dbi1_g0": (187.147015676653, -7.86802685587455, 729.033670168644),
    "dbi1_g1": (20.0232665027052, -2.62402077847322, 811.035138835409),
    "dbi2_out": (-8.04797671177794, -3.65848687510611, 122.168094936415),
    "dbi2_g0": (2.76687864675017, 1.76632683539617, 37.8614384681499),
    "dbi2_g1": (-2.43291115281167, 5.67960890095048, 140.583804416639),
    "dbf1_out": (-21.665208462987, -0.736397931998951, 206.273062047531),
    "dbf1_g0": (21.5856474310063, -19.6877155280094, 230.091231056657),
    "dbf1_g1": (-16.0917862137985, 2.08103034244747, 200.298486285888),
    "dbf2_out": (145.08927050843, -22.4507408679687, 623.467020325461),
    "dbf2_g0": (-13.7614238621108, -4.85658079978961, 530.45751307739),
    "dbf2_g1": (22.9105190183083, 9.79665246614779, 610.93366552691),
    "act1_out": (-1.14752363571824, 12.7088849907372, 1777.29017654948),
    "act1_g0": (-3.58210868992127, -0.971536059451251, 157.482378427091),
    "act1_g1": (-14.8614878069131, -2.93254017562078, 167.202726166805),
    "act2_out": (-1.55354044593738, 1.98790727599085, 581.430317593287),
    "act2_g0": (-0.891556837356746, -3.22636278251047, 99.383775524717),
    "act2_g1": (-44.8718341016352, -12.814266611507, 341.777396984826),
    "act3_out": (0.764755362097436, -0.439802442265275, 253.199149369853),
    "act3_g0": (4.31931525473408, 37.8995347424841, 65.6250290632825),
    "act3_g1": (1.27216108644851, 1.77837796049227, 55.5689584583389),
    "act4_out": (-1.97217381224937, 0.525340395661659, 132.977528003339),
    "act4_g0": (-2.87199744540347, -5.20791154302049, 44.1269195750109),
    "act4_g1": (2.93615928948306, -0.348361917678802, 76.7017785538241),
    "bng_out": (-0.298567503362001, 1.30930950346681, 17.0164977201662),
    "bng_g0": (1.15720857354083, 1.1160358239691, 10.1852582141133),
    "bng_g1": (-2.09335809464327, -0.660283241809381, 2.18321899898647),
    "bng_g2": (-3.10311434639828, -0.611078216806816, 3.29394518520189),
    "bng_g3": (-2.33042288242147, -0.426948864540354, 2.48859419154607),
    "bng_g4": (-8.48998436644379, 0.574374547279248, 9.45460188281209),
    "bng2_out": (-3.68997533592708, -3.37528686652406, 28.7764792391915),
    "bng2_g0": (-1.87696743380005, 1.4056800574976, 15.372450214541),
    "bng2_g1": (2.66434778611084, 0.431547531686174, 2.81501406806837),
    "bng2_g2": (4.78817689807782, -0.400989732086942, 5.19776847756569),
    "bng2_g3": (-2.33042288242147, -0.426948864540354, 2.48859419154607),
    "s2b1_out": (-7.86981112264574, -0.314917675611053, 114.40108535179),
    "s2b1_g0": (1.44981935817521, -1.96513332997962, 118.084876022229),
    "s2b2_out": (0.341742470593973, 0.102936500465978, 114.40108535179),
    "s2b2_g0": (-3.52983323746842, 4.03948219929575, 114.316190231118),
    "b2s1_out": (3.47909575268914, 0.643606550379993, 25.0221520471197),
    "b2s1_g0": (-4.23261386724207, -0.0348066197026116, 25.5133555451391),
    "b2s2_out": (4.79780354154699, 1.64053219593044, 38.024886244615),
    "b2s2_g0": (1.91066997416966, 7.08258834777374, 37.6253808491664),
    "b2s3_out": (-0.0635681481788956, -2.80499113667053, 19.5061593787261),
    "b2s3_g0": (0.414635739584669, 3.89192355281235, 18.8780768465468),
    "wsb1_out": (-2.1559078382303, -61.4839648965767, 427.681958354312),
    "wsb1_g0": (3.85606944274881, 5.00515999632558, 508.059076245574),
    "wsb2_out": (-10.1009982506866, 1.38504443462276, 339.182351220889),
    "wsb2_g0": (4.74854151310319, -1.30932646123391, 425.07403086324),
    "wsb3_out": (0.504491515723826, 1.09507623362067, 56.7034339359491),
    "wsb3_g0": (0.317710474806034, 3.83400242300833, 17.2431666168341),
    "wsb4_out": (-0.26773229978778, 0.980103509760935, 56.9351061813517),
    "wsb4_g0": (6.97253240740139, 11.633113020908, 888.839334433919),
    "dbi3_true": (-14.4521067846943, 8.49877554364062, 597.8517744406),
    "dbf3_true": (22.3895377001057, -2.59147565538746, 578.735363380617),
})

W_DW = arr((3, 3, 3, 2), 0.2)
X_DW = arr((2, 5, 6, 3), 0.4)


@pytest.mark.parametrize("name,f,args", [
    ("dbi1", lambda w, g: gt.nn.depthwise_conv2d_backprop_input([2, 5, 6, 3], w, g, [1, 1, 1, 1],
                                                                "SAME"),
     (W_DW, arr((2, 5, 6, 6), 0.6))),
    ("dbi2", lambda w, g: gt.nn.depthwise_conv2d_backprop_input(
        gt.constant([2, 5, 6, 3]), w, g, [1, 2, 2, 1], "VALID"), (W_DW, arr((2, 2, 2, 6), 0.6))),
    ("dbf1", lambda x, g: gt.nn.depthwise_conv2d_backprop_filter(x, [3, 3, 3, 2], g,
                                                                 [1, 2, 2, 1], "SAME"),
     (X_DW, arr((2, 3, 3, 6), 0.6))),
    ("dbf2", lambda x, g: gt.nn.depthwise_conv2d_backprop_filter(
        x, [3, 3, 3, 2], g, [1, 1, 1, 1], [[0, 0], [1, 0], [0, 2], [0, 0]]),
     (X_DW, arr((2, 4, 6, 6), 0.6))),
])
def test_depthwise_conv2d_gradients_are_tensorflows(name, f, args):
    check_grads(name, f, *args)


def test_depthwise_conv2d_gradients_honour_dilations():
    # TF's CPU kernels ignore dilations; these are the gradients of TF's dilated
    # depthwise_conv2d (through its tape)
    g = arr((2, 5, 6, 6), 0.6)
    check("dbi3_true", gt.nn.depthwise_conv2d_backprop_input(
        [2, 5, 6, 3], W_DW, g, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1]).numpy())
    check("dbf3_true", gt.nn.depthwise_conv2d_backprop_filter(
        X_DW, [3, 3, 3, 2], g, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1]).numpy())
    with pytest.raises(InvalidArgumentError, match="out_backprop has shape"):
        gt.nn.depthwise_conv2d_backprop_input([2, 5, 6, 3], W_DW, arr((2, 5, 6, 6)),
                                              [1, 2, 2, 1], "SAME")
    with pytest.raises(ValueError, match="input_sizes"):
        gt.nn.depthwise_conv2d_backprop_input([2, 5, 6], W_DW, arr((2, 5, 6, 6)), 1, "SAME")


F_AT = arr((3, 2, 4, 3), 0.8)


@pytest.mark.parametrize("name,shape,value,rate,padding", [
    ("act1", [2, 7, 8, 4], arr((2, 7, 8, 3), 0.1), 2, "SAME"),
    ("act2", [2, 9, 8, 4], arr((2, 3, 5, 3), 0.1), 3, "VALID"),
    ("act3", [1, 6, 5, 4], arr((1, 6, 5, 3), 0.1), 1, "SAME"),
    ("act4", [1, 6, 5, 4], arr((1, 6, 5, 3), 0.1), 3, "SAME"),
])
def test_atrous_conv2d_transpose_is_tensorflows(name, shape, value, rate, padding):
    check_grads(name, lambda v, f: gt.nn.atrous_conv2d_transpose(v, f, shape, rate, padding),
                value, F_AT)


def test_atrous_conv2d_transpose_errors():
    f = gt.nn.atrous_conv2d_transpose
    with pytest.raises(ValueError, match="rate` cannot be less than one"):
        f(arr((1, 6, 5, 3)), F_AT, [1, 6, 5, 4], 0, "SAME")
    with pytest.raises(ValueError, match="`value` channel count"):
        f(arr((1, 6, 5, 2)), F_AT, [1, 6, 5, 4], 2, "SAME")
    with pytest.raises(ValueError, match="`output_shape` channel count"):
        f(arr((1, 6, 5, 3)), F_AT, [1, 6, 5, 3], 2, "SAME")
    with pytest.raises(ValueError, match="'VALID' or 'SAME'"):
        f(arr((1, 6, 5, 3)), F_AT, [1, 6, 5, 4], 2, "FULL")


def test_batch_norm_with_global_normalization_is_tensorflows():
    args = (arr((2, 3, 4)), arr((4,), 1), arr((4,), 2) ** 2 + 0.5, arr((4,), 3), arr((4,), 4))
    check_grads("bng", lambda x, m, v, b, g: gt.nn.batch_norm_with_global_normalization(
        x, m, v, b, g, 0.01, True), *args)
    out, gs = grads(lambda x, m, v, b: gt.nn.batch_norm_with_global_normalization(
        x, m, v, b, gt.constant(args[4]), 0.01, False), *args[:4])
    check("bng2_out", out)
    for i, g in enumerate(gs):
        check(f"bng2_g{i}", g)


@pytest.mark.parametrize("name,f,x", [
    ("s2b1", lambda x: gt.space_to_batch(x, [2, 3], [[1, 0], [0, 0]]), arr((2, 5, 6, 3), 0.5)),
    ("s2b2", lambda x: gt.space_to_batch_nd(x, [2], [[1, 2]]), arr((2, 5, 6, 3), 0.5)),
    ("b2s1", lambda x: gt.batch_to_space(x, [2, 1], [[0, 1], [0, 0]]), arr((4, 3, 2, 2))),
    ("b2s2", lambda x: gt.batch_to_space(x, [2, 2, 1], [[1, 0], [0, 1], [0, 0]]),
     arr((8, 2, 3, 2, 1))),
    ("b2s3", lambda x: gt.batch_to_space(x, 2, [[0, 1], [1, 0]]), arr((4, 3, 2, 2))),
])
def test_space_to_batch_is_tensorflows(name, f, x):
    check_grads(name, f, x)


def test_space_to_batch_round_trip_and_errors():
    x = arr((2, 5, 6, 3))
    y = gt.nn.space_to_batch(x, [2, 3], [[1, 0], [0, 0]])
    assert y.shape == (12, 3, 2, 3)
    np.testing.assert_array_equal(gt.batch_to_space(y, [2, 3], [[1, 0], [0, 0]]).numpy(), x)
    with pytest.raises(InvalidArgumentError, match=r"paddings should have shape \[2, 2\]"):
        gt.space_to_batch_nd(x, [2, 3], [[1, 0]])
    with pytest.raises(InvalidArgumentError, match="must be positive, got value, 0 at index 0"):
        gt.space_to_batch_nd(x, [0, 3], [[1, 0], [0, 0]])
    with pytest.raises(InvalidArgumentError, match="Paddings must be non-negative"):
        gt.space_to_batch_nd(x, [2, 3], [[-1, 0], [0, 0]])
    with pytest.raises(InvalidArgumentError, match="padded_shape.0.=5 is not divisible"):
        gt.space_to_batch_nd(x, [2, 3], [[0, 0], [0, 0]])
    with pytest.raises(InvalidArgumentError, match=r"Input batch dimension \(2\) is not "
                                                   r"divisible by product of block sizes \(3\)"):
        gt.batch_to_space(x, [3, 1], [[0, 1], [0, 0]])
    with pytest.raises(InvalidArgumentError, match=r"cropped_shape\[0\]=-1"):
        gt.batch_to_space(x, [2, 1], [[0, 11], [0, 0]])


def test_required_space_to_batch_paddings():
    # TF's results
    p, c = gt.required_space_to_batch_paddings([5, 6], [2, 4], [[1, 0], [2, 2]])
    assert p.dtype == gt.int32
    np.testing.assert_array_equal(p.numpy(), [[1, 0], [2, 4]])
    np.testing.assert_array_equal(c.numpy(), [[0, 0], [0, 2]])
    p, c = gt.required_space_to_batch_paddings([5, 6, 7], [2, 4, 1])
    np.testing.assert_array_equal(p.numpy(), [[0, 1], [0, 2], [0, 0]])
    np.testing.assert_array_equal(c.numpy(), [[0, 1], [0, 2], [0, 0]])


FW = arr((3, 2, 3, 2), 0.3)


@pytest.mark.parametrize("name,f,x", [
    ("wsb1", lambda x: gt.nn.with_space_to_batch(
        x, [2, 3], "SAME", lambda v, n, p: gt.nn.convolution(v, FW, padding=p),
        filter_shape=[3, 2]), arr((2, 7, 8, 3))),
    ("wsb2", lambda x: gt.nn.with_space_to_batch(
        x, [2, 2], "VALID", lambda v, n, p: gt.nn.convolution(v, FW, padding=p)),
     arr((2, 7, 8, 3))),
    ("wsb3", lambda x: gt.nn.with_space_to_batch(
        x, [2], "SAME", lambda v, n, p: gt.nn.pool(v, [1, 3], "MAX", padding=p),
        filter_shape=[3], spatial_dims=[2]), arr((2, 3, 7, 2))),
    ("wsb4", lambda x: gt.nn.with_space_to_batch(
        x, [1, 1], "SAME", lambda v, n, p: gt.nn.convolution(v, FW, padding=p)),
     arr((2, 7, 8, 3))),
])
def test_with_space_to_batch_is_tensorflows(name, f, x):
    check_grads(name, f, x)


def test_with_space_to_batch_errors():
    def op(v, n, p):
        return v
    x = arr((2, 7, 8, 3))
    with pytest.raises(ValueError, match="filter_shape` must be specified"):
        gt.nn.with_space_to_batch(x, [2, 2], "SAME", op)
    with pytest.raises(ValueError, match="monotonically increasing"):
        gt.nn.with_space_to_batch(x, [2, 2], "VALID", op, spatial_dims=[2, 1])
    with pytest.raises(ValueError, match="must be positive"):
        gt.nn.with_space_to_batch(x, [0, 2], "VALID", op)
    with pytest.raises(ValueError, match="rank` must be at least 5"):
        gt.nn.with_space_to_batch(x, [2, 2], "VALID", op, spatial_dims=[3, 4])


# --- RNN cell wrappers ---------------------------------------------------------------------------

def _step(cell, x, h):
    return cell(gt.constant(x), [gt.constant(h)])


def test_residual_wrapper_adds_the_inputs():
    cell = gt.keras.layers.SimpleRNNCell(3)
    wrapped = gt.nn.RNNCellResidualWrapper(cell)
    x, h = arr((2, 3), 0.1, dtype=np.float32), arr((2, 3), 0.2, dtype=np.float32)
    out, state = _step(wrapped, x, h)
    ref_out, ref_state = _step(cell, x, h)
    np.testing.assert_allclose(out.numpy(), ref_out.numpy() + x, rtol=1e-6)
    np.testing.assert_array_equal(state[0].numpy(), ref_state[0].numpy())
    assert wrapped.state_size == 3 and wrapped.output_size == 3
    custom = gt.nn.RNNCellResidualWrapper(cell, residual_fn=lambda i, o: i - o)
    np.testing.assert_allclose(_step(custom, x, h)[0].numpy(), x - ref_out.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="must match"):
        gt.keras.layers.RNN(gt.nn.RNNCellResidualWrapper(gt.keras.layers.SimpleRNNCell(4)))(
            arr((2, 5, 3), dtype=np.float32))


def test_dropout_wrapper():
    cell = gt.keras.layers.GRUCell(4)
    x, h = arr((3, 2), 0.1, dtype=np.float32), arr((3, 4), 0.2, dtype=np.float32)
    ref_out, ref_state = _step(cell, x, h)
    same = gt.nn.RNNCellDropoutWrapper(cell)
    np.testing.assert_array_equal(_step(same, x, h)[0].numpy(), ref_out.numpy())
    drop = gt.nn.RNNCellDropoutWrapper(cell, output_keep_prob=0.5, state_keep_prob=0.25, seed=3)
    out, state = _step(drop, x, h)
    o, r = out.numpy(), ref_out.numpy()
    assert np.all((o == 0) | np.isclose(o, 2 * r, rtol=1e-6)) and 0 < np.count_nonzero(o) < o.size
    s = state[0].numpy()
    assert np.all((s == 0) | np.isclose(s, 4 * ref_state[0].numpy(), rtol=1e-6))
    # variational: one mask for every step
    var = gt.nn.RNNCellDropoutWrapper(cell, input_keep_prob=0.5, output_keep_prob=0.5,
                                      variational_recurrent=True, input_size=2,
                                      dtype=gt.float32, seed=1)
    a, b = _step(var, x, h)[0].numpy(), _step(var, x, h)[0].numpy()
    np.testing.assert_array_equal(a, b)
    zero_cols = np.all(a == 0, axis=0)          # the mask is shared along the batch
    assert np.all(a[:, ~zero_cols] != 0)
    y = gt.keras.layers.RNN(drop, return_sequences=True)(arr((3, 5, 2), dtype=np.float32))
    assert y.shape == (3, 5, 4)
    with pytest.raises(ValueError, match="LSTM cell does not work"):
        gt.nn.RNNCellDropoutWrapper(gt.keras.layers.LSTMCell(2))
    with pytest.raises(ValueError, match="between 0 and 1"):
        gt.nn.RNNCellDropoutWrapper(cell, input_keep_prob=1.5)
    with pytest.raises(ValueError, match="dtype must be provided"):
        gt.nn.RNNCellDropoutWrapper(cell, variational_recurrent=True)
    with pytest.raises(ValueError, match="input_size must be provided"):
        gt.nn.RNNCellDropoutWrapper(cell, 0.5, variational_recurrent=True, dtype=gt.float32)
    clone = gt.nn.RNNCellDropoutWrapper.from_config(drop.get_config())
    assert clone._output_keep_prob == 0.5 and clone._seed == 3
    assert isinstance(clone.cell, gt.keras.layers.GRUCell) and clone.cell.units == 4


def test_device_wrapper_runs_the_cell_there():
    dev = gt.get_device("strict:0")
    cell = gt.nn.RNNCellDeviceWrapper(gt.keras.layers.SimpleRNNCell(2), "strict:0")
    with gt.device(dev):
        x = gt.constant(arr((2, 3), dtype=np.float32))
    state = cell.get_initial_state(batch_size=2)
    assert state._device is dev
    out, new = cell(x, [state])
    assert out._device is dev and out.shape == (2, 2)
    assert gt.nn.RNNCellDeviceWrapper.from_config(cell.get_config())._cell_device == "strict:0"


def test_host_reading_ops_on_the_strict_device():
    """Isotonic regression, accidental hits and the learned sampler read their inputs back
    (as TF's CPU kernels need them); on a device they give the CPU's results there."""
    dev = gt.get_device("strict:0")
    x = np.round(arr((3, 9), 0.1, 2.0), 1)
    with gt.device(dev):
        out, seg = gt.nn.isotonic_regression(gt.constant(x), decreasing=False)
        hits = gt.nn.compute_accidental_hits(gt.constant([[1, 2], [2, 2], [3, 0]]),
                                             gt.constant([2, 7, 2, 3]), 2)
        _, t, _ = gt.nn.learned_unigram_candidate_sampler(gt.constant(TRUE), 2, 4, True, 10,
                                                          seed=99)
    ref_out, ref_seg = gt.nn.isotonic_regression(x, decreasing=False)
    assert out._device is dev and hits.ids._device is dev and t._device is dev
    np.testing.assert_array_equal(out.numpy(), ref_out.numpy())
    np.testing.assert_array_equal(seg.numpy(), ref_seg.numpy())
    np.testing.assert_array_equal(hits.ids.numpy(), [2, 2, 2, 3])
