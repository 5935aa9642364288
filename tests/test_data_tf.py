"""gt.data and keras.utils data helpers against tf.data (TF 2.21) and Keras 3.15: values,
dtypes, specs, cardinalities and error types. The expected values were read from TF."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import gradtape as gt
from gradtape import keras

Dataset = gt.data.Dataset
E = gt.data.experimental
UNKNOWN, INFINITE = gt.data.UNKNOWN_CARDINALITY, gt.data.INFINITE_CARDINALITY


def _rows(ds):
    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, tuple):
            return tuple(plain(x) for x in v)
        return np.asarray(v).tolist()
    return [plain(e) for e in ds.as_numpy_iterator()]


def _card(ds):
    return int(ds.cardinality())


def _shapes(spec):
    return gt.nest.map_structure(lambda s: s.shape.as_list(), spec)


# --- take / skip / cardinality --------------------------------------------------------------

def test_take_and_skip_read_any_negative_count_as_tf_does():
    """TensorFlow: take(-2) keeps every element (cardinality -2), skip(-2) drops them all."""
    ds = Dataset.range(5)
    assert _rows(ds.take(-2)) == [0, 1, 2, 3, 4] and _card(ds.take(-2)) == UNKNOWN
    assert _rows(ds.skip(-2)) == [] and _card(ds.skip(-2)) == 0
    assert _rows(ds.take(-1)) == [0, 1, 2, 3, 4] and _card(ds.take(-1)) == 5
    assert _rows(ds.skip(-1)) == [] and _card(ds.skip(-1)) == 0
    assert _card(ds.repeat().take(-2)) == UNKNOWN
    assert _card(ds.filter(lambda v: True).take(-2)) == UNKNOWN
    assert _card(ds.repeat().skip(-2)) == INFINITE
    assert _rows(ds.take(10)) == [0, 1, 2, 3, 4] and _rows(ds.skip(10)) == []


def test_filter_and_repeat_cardinalities():
    """TensorFlow: a filter is of unknown size even over an endless input; repeating an
    input of unknown size forever is endless."""
    ds = Dataset.range(5)
    assert _card(ds.repeat().filter(lambda v: v > 1)) == UNKNOWN
    assert _card(ds.filter(lambda v: True).repeat()) == INFINITE
    assert _card(ds.filter(lambda v: True).repeat(2)) == UNKNOWN
    assert _card(ds.repeat(0)) == 0 and _card(Dataset.range(0).repeat()) == 0
    assert _card(ds.take_while(lambda v: v < 3)) == UNKNOWN
    assert _card(ds.batch(2).repeat().unbatch()) == INFINITE


def test_sample_from_datasets_cardinality():
    """TensorFlow: [-2, -1, -1, -1] for these four; one dataset is returned as it is."""
    D = Dataset
    cards = [_card(d) for d in [
        D.sample_from_datasets([D.range(2), D.range(3)], seed=1),
        D.sample_from_datasets([D.range(2), D.range(3).repeat()], seed=1),
        D.sample_from_datasets([D.range(2).repeat(), D.range(3).repeat()], seed=1,
                               stop_on_empty_dataset=True),
        D.sample_from_datasets([D.range(2), D.range(3).repeat()], seed=1,
                               stop_on_empty_dataset=True)]]
    assert cards == [-2, -1, -1, -1]
    single = E.sample_from_datasets([D.range(2)], seed=1)
    assert _card(single) == 2 and _rows(single) == [0, 1]


# --- window ------------------------------------------------------------------------------------

def test_window_cardinality_spec_and_elements():
    """TensorFlow: range(7).window(3, 2) has 4 windows (3 with drop_remainder); each window
    component is a DatasetSpec."""
    D = Dataset
    assert _card(D.range(7).window(3, 2)) == 4
    assert _card(D.range(7).window(3, 2, drop_remainder=True)) == 3
    assert _card(D.range(7).window(3)) == 3
    assert _card(D.range(10).window(3, 1, 2, drop_remainder=True)) == 6
    assert _card(D.range(2).window(3, drop_remainder=True)) == 0
    assert _card(D.range(10).window(2, shift=3)) == 4
    spec = D.range(7).window(3).element_spec
    assert isinstance(spec, gt.data.DatasetSpec)
    assert repr(spec) == ("DatasetSpec(TensorSpec(shape=(), dtype=gt.int64, name=None), "
                          "TensorShape([]))")
    assert spec.element_spec == gt.TensorSpec((), gt.int64) and spec.shape.as_list() == []
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    pair = D.from_tensor_slices((x, np.arange(6))).window(2, 2).element_spec
    assert pair == (gt.data.DatasetSpec(gt.TensorSpec((2,), gt.float32)),
                    gt.data.DatasetSpec(gt.TensorSpec((), gt.int64)))
    first = next(iter(D.range(5).window(2)))
    assert first.element_spec == gt.TensorSpec((), gt.int64) and _card(first) == 2
    assert [_card(w) for w in D.range(5).window(2)] == [2, 2, 1]
    assert _rows(D.range(10).window(3, 1, 2, drop_remainder=True).flat_map(
        lambda w: w.batch(3))) == [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5, 7], [4, 6, 8],
                                   [5, 7, 9]]
    assert _rows(D.range(10).window(2, shift=3).flat_map(lambda w: w.batch(2))) == \
        [[0, 1], [3, 4], [6, 7], [9]]
    with pytest.raises(TypeError, match="as_numpy_iterator"):
        next(D.range(7).window(3).as_numpy_iterator())


def test_as_numpy_iterator_is_a_numpy_iterator():
    it = Dataset.range(3).as_numpy_iterator()
    assert type(it).__name__ == "NumpyIterator" and iter(it) is it
    assert it.next() == 0 and next(it) == 1
    assert isinstance(next(it), np.int64)


# --- scan --------------------------------------------------------------------------------------

def test_scan_passes_a_tuple_element_as_one_argument():
    """TensorFlow calls scan_func(state, element): a tuple element is not unpacked."""
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    ds = Dataset.from_tensor_slices((x, np.arange(6)))
    out = ds.scan(np.float32(0), lambda s, e: (s + e[0][0], (s, e[1])))
    assert _rows(out) == [(0.0, 0), (0.0, 1), (2.0, 2), (6.0, 3), (12.0, 4), (20.0, 5)]
    assert out.element_spec == (gt.TensorSpec((), gt.float32), gt.TensorSpec((), gt.int64))
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        list(ds.scan(0.0, lambda s, a, b: (s, b)))
    st = Dataset.range(4).scan((np.int64(0), np.int64(1)),
                               lambda st, v: ((st[0] + v, st[1] * 2), st[0] * st[1]))
    assert _rows(st) == [0, 0, 4, 24]
    assert _rows(Dataset.range(4).apply(E.scan(np.int64(0), lambda s, v: (s + v, s)))) == \
        [0, 0, 1, 3]


# --- error types -------------------------------------------------------------------------------

def test_errors_tf_raises_as_invalid_argument():
    """TensorFlow raises InvalidArgumentError for these (gradtape's is also a ValueError)."""
    IA = gt.errors.InvalidArgumentError
    with pytest.raises(IA, match="step must not be 0"):
        Dataset.range(1, 5, 0)
    with pytest.raises(IA, match="batch_size must be positive"):
        Dataset.range(3).batch(0)
    with pytest.raises(IA, match="buffer_size must be positive, got 0"):
        Dataset.range(3).shuffle(0)
    with pytest.raises(IA, match="got -1"):
        Dataset.range(3).shuffle(gt.data.AUTOTUNE)
    with pytest.raises(IA, match="buffer_size must be at least 0"):
        Dataset.range(3).prefetch(-2)
    with pytest.raises(IA, match="is empty"):
        Dataset.range(0).get_single_element()
    with pytest.raises(IA, match="more than one element"):
        Dataset.range(2).get_single_element()
    with pytest.raises(IA, match="cannot batch tensors of different shapes"):
        list(Dataset.range(1, 4).map(lambda v: gt.range(v)).batch(2))
    assert issubclass(IA, ValueError)


def test_shuffle_unknown_cardinality_buffers_the_whole_dataset():
    """TensorFlow: shuffle(-2) (UNKNOWN_CARDINALITY) is a buffer as large as the dataset."""
    ds = Dataset.range(10).shuffle(gt.data.UNKNOWN_CARDINALITY, seed=3)
    assert sorted(_rows(ds)) == list(range(10)) and _card(ds) == 10
    assert sorted(_rows(Dataset.range(10).map(lambda v: v).shuffle(-2, seed=1))) == \
        list(range(10))


# --- from_generator ---------------------------------------------------------------------------

def test_from_generator_casts_values_as_numpy_does():
    """TensorFlow casts what the generator yields to the signature's dtype."""
    def gen(*values):
        return lambda: iter(values)
    D = Dataset.from_generator
    cases = [
        (1.5, gt.int32, (), 1), (1.5, gt.uint8, (), 1), (1.5, gt.bool, (), True),
        (np.float64(2.7), gt.int32, (), 2), (np.float64(2.7), gt.bool, (), True),
        (np.array([1.5, 2.5]), gt.int32, (None,), [1, 2]),
        (np.array([1.5, 2.5]), gt.bool, (None,), [True, True]),
        (2 ** 40, gt.int32, (), 0), (-1, gt.uint8, (), 255), (300, gt.uint8, (), 44),
        (True, gt.int32, (), 1), (np.int64(5), gt.float32, (), 5.0),
        (np.array([1.7, -2.7]), gt.int32, (None,), [1, -2]),
        ([1, 2], gt.float32, (2,), [1.0, 2.0]),
    ]
    for value, dtype, shape, want in cases:
        got = list(D(gen(value), output_signature=gt.TensorSpec(shape, dtype)))
        assert got[0].dtype == dtype and got[0].numpy().tolist() == want, (value, dtype)
    pair = D(gen((np.float64(1.5), np.array([3, 4]))),
             output_signature=(gt.TensorSpec((), gt.float32), gt.TensorSpec((2,), gt.uint8)))
    a, b = next(iter(pair))
    assert a.dtype == gt.float32 and float(a) == 1.5
    assert b.dtype == gt.uint8 and b.numpy().tolist() == [3, 4]
    typed = D(gen(np.float64(2.7)), output_types=gt.int32)
    assert next(iter(typed)).numpy().tolist() == 2
    with pytest.raises(TypeError, match="expected int32, got a float32 tensor"):
        list(D(gen(gt.constant(1.0)), output_signature=gt.TensorSpec((), gt.int32)))


# --- options -----------------------------------------------------------------------------------

def test_options_groups_defaults_merge_and_errors():
    """TensorFlow: every option is None until set (auto_shard_policy AUTO); unknown
    properties raise AttributeError, values of the wrong type TypeError."""
    o = gt.data.Options()
    assert o.deterministic is None and o.experimental_deterministic is None
    assert o.experimental_distribute.auto_shard_policy == E.AutoShardPolicy.AUTO
    assert int(E.AutoShardPolicy.AUTO) == 0 and int(E.AutoShardPolicy.OFF) == -1
    assert int(E.AutoShardPolicy.DATA) == 2 and int(E.ExternalStatePolicy.FAIL) == 2
    assert o.threading.private_threadpool_size is None and o.autotune.enabled is None
    assert o.experimental_optimization.map_parallelization is None
    assert isinstance(o.threading, gt.data.ThreadingOptions)
    assert o == gt.data.Options()
    o.experimental_deterministic = False
    o.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.DATA
    o.threading.private_threadpool_size = 4
    o.experimental_optimization.map_parallelization = True
    o.autotune.enabled = False
    ds = Dataset.range(3).with_options(o)
    assert _rows(ds) == [0, 1, 2] and _card(ds) == 3
    assert ds.options().deterministic is False and ds.options() == o
    assert ds.options().threading.private_threadpool_size == 4
    o2 = gt.data.Options()
    o2.threading.max_intra_op_parallelism = 1
    o2.deterministic = True
    ds2 = ds.map(lambda v: v).with_options(o2)
    got = ds2.options()
    assert got.deterministic is True and got.threading.private_threadpool_size == 4
    assert got.threading.max_intra_op_parallelism == 1
    assert got.experimental_distribute.auto_shard_policy.name == "DATA"
    assert Dataset.zip((ds, Dataset.range(2))).options().deterministic is False
    assert ds.batch(2).options().autotune.enabled is False
    assert gt.data.Options().merge(gt.data.Options()).deterministic is None
    assert Dataset.range(3).options().deterministic is None
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options."):
        gt.data.Options().foo = 1
    with pytest.raises(TypeError, match='Property "threading" must be of type'):
        gt.data.Options().threading = 3
    with pytest.raises(TypeError, match='Property "deterministic" must be of type'):
        gt.data.Options().deterministic = 1
    with pytest.raises(TypeError, match="expected a gt.data.Options"):
        Dataset.range(3).with_options(3)


# --- group_by_window / bucket_by_sequence_length -----------------------------------------------

def test_group_by_window_gives_tfs_groups():
    """TensorFlow's groups; the groups left at the end come in increasing key order."""
    D = Dataset
    ds = D.range(10).group_by_window(key_func=lambda v: v % 2,
                                     reduce_func=lambda k, w: w.batch(3), window_size=3)
    assert _rows(ds) == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    assert _card(ds) == UNKNOWN and _shapes(ds.element_spec) == [None]
    keyed = D.range(10).group_by_window(
        key_func=lambda v: v % 3, reduce_func=lambda k, w: w.batch(2).map(lambda b: (k, b)),
        window_size=2)
    assert _rows(keyed) == [(0, [0, 3]), (1, [1, 4]), (2, [2, 5]), (0, [6, 9]), (1, [7]),
                            (2, [8])]
    sized = D.range(12).group_by_window(key_func=lambda v: v % 2,
                                        reduce_func=lambda k, w: w.batch(10),
                                        window_size_func=lambda k: k + 2)
    assert _rows(sized) == [[0, 2], [1, 3, 5], [4, 6], [8, 10], [7, 9, 11]]
    pairs = D.from_tensor_slices((np.arange(6), np.arange(6) * 10)).group_by_window(
        key_func=lambda a, b: a % 2, reduce_func=lambda k, w: w.batch(2), window_size=2)
    assert _rows(pairs) == [([0, 2], [0, 20]), ([1, 3], [10, 30]), ([4], [40]), ([5], [50])]
    neg = D.range(6).group_by_window(key_func=lambda v: -(v % 3),
                                     reduce_func=lambda k, w: w.batch(5), window_size=5)
    assert _rows(neg) == [[2, 5], [1, 4], [0, 3]]
    exp = D.range(10).apply(E.group_by_window(lambda v: v % 2, lambda k, w: w.batch(3), 3))
    assert _rows(exp) == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    for kwargs in ({}, {"window_size": 3, "window_size_func": lambda k: k}):
        with pytest.raises(ValueError, match="Either the `window_size` argument or"):
            D.range(10).group_by_window(lambda v: v % 2, lambda k, w: w.batch(3), **kwargs)
    with pytest.raises(ValueError, match="key_func must return a single int64 scalar"):
        list(D.range(10).group_by_window(lambda v: gt.cast(v % 2, gt.int32),
                                         lambda k, w: w.batch(3), 3))
    with pytest.raises(TypeError, match="reduce_func must return a Dataset"):
        list(D.range(6).group_by_window(lambda v: v % 3, lambda k, w: k, window_size=5))


def test_bucket_by_sequence_length_gives_tfs_batches():
    seqs = Dataset.range(1, 9).map(lambda v: gt.fill([v], v))
    length = lambda e: gt.shape(e)[0]  # noqa: E731
    ds = seqs.bucket_by_sequence_length(length, [3, 5], [2, 2, 2])
    assert _rows(ds) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]],
                         [[5, 5, 5, 5, 5, 0], [6, 6, 6, 6, 6, 6]],
                         [[7, 7, 7, 7, 7, 7, 7, 0], [8, 8, 8, 8, 8, 8, 8, 8]]]
    assert _card(ds) == UNKNOWN and _shapes(ds.element_spec) == [None, None]
    assert _rows(seqs.apply(E.bucket_by_sequence_length(length, [3, 5], [2, 2, 2]))) == \
        _rows(ds)
    drop = seqs.bucket_by_sequence_length(length, [3, 5], [2, 2, 2], drop_remainder=True)
    assert _shapes(drop.element_spec) == [None, None] and _rows(drop) == _rows(ds)
    boundary = Dataset.range(1, 7).map(lambda v: gt.fill([v], v)).bucket_by_sequence_length(
        length, [3, 5, 8], [2, 2, 2, 2], pad_to_bucket_boundary=True)
    assert _rows(boundary) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]],
                               [[5, 5, 5, 5, 5, 0, 0], [6, 6, 6, 6, 6, 6, 0]]]
    fixed = Dataset.from_tensor_slices(np.array([[1, 1], [2, 2]])).bucket_by_sequence_length(
        length, [3, 5], [2, 2, 2], pad_to_bucket_boundary=True)
    assert _rows(fixed) == [[[1, 1], [2, 2]]]
    padval = seqs.bucket_by_sequence_length(length, [3, 5], [2, 2, 3],
                                            padding_values=gt.constant(-1, gt.int64))
    assert _rows(padval) == [[[1, -1], [2, 2]], [[3, 3, 3, -1], [4, 4, 4, 4]],
                             [[5, 5, 5, 5, 5, -1, -1], [6, 6, 6, 6, 6, 6, -1],
                              [7, 7, 7, 7, 7, 7, 7]], [[8, 8, 8, 8, 8, 8, 8, 8]]]
    shaped = seqs.bucket_by_sequence_length(length, [3, 5], [2, 2, 3], padded_shapes=[9])
    assert _shapes(shaped.element_spec) == [None, 9]
    assert [np.asarray(b).shape for b in shaped.as_numpy_iterator()] == \
        [(2, 9), (2, 9), (3, 9), (1, 9)]
    assert _rows(shaped)[3] == [[8, 8, 8, 8, 8, 8, 8, 8, 0]]
    pairs = Dataset.range(1, 7).map(lambda v: (gt.fill([v], v), v)).bucket_by_sequence_length(
        lambda e, n: gt.shape(e)[0], [3], [2, 3])
    assert _rows(pairs) == [([[1, 0], [2, 2]], [1, 2]),
                            ([[3, 3, 3, 0, 0], [4, 4, 4, 4, 0], [5, 5, 5, 5, 5]], [3, 4, 5]),
                            ([[6, 6, 6, 6, 6, 6]], [6])]
    planes = Dataset.range(1, 5).map(lambda v: gt.ones((v, 2)) * gt.cast(v, gt.float32))
    got = _rows(planes.bucket_by_sequence_length(length, [3, 6], [2, 2, 2],
                                                 pad_to_bucket_boundary=True))
    assert got == [[[[1.0, 1.0], [0.0, 0.0]], [[2.0, 2.0], [2.0, 2.0]]],
                   [[[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [0.0, 0.0], [0.0, 0.0]],
                    [[4.0, 4.0], [4.0, 4.0], [4.0, 4.0], [4.0, 4.0], [0.0, 0.0]]]]
    ranges = Dataset.range(1, 5).map(lambda v: gt.range(v)).bucket_by_sequence_length(
        length, [3, 6], [2, 2, 2], padded_shapes=[None], pad_to_bucket_boundary=True)
    assert _rows(ranges) == [[[0, 0], [0, 1]], [[0, 1, 2, 0, 0], [0, 1, 2, 3, 0]]]
    with pytest.raises(ValueError, match=r"`len\(bucket_batch_sizes\)` must equal"):
        seqs.bucket_by_sequence_length(length, [3, 5], [2, 2])
    with pytest.raises(gt.errors.InvalidArgumentError, match="length < bucket_boundaries"):
        list(Dataset.range(1, 7).map(lambda v: gt.fill([v], v)).bucket_by_sequence_length(
            length, [3], [2, 2], pad_to_bucket_boundary=True))


# --- counter, assert_cardinality, experimental transformations --------------------------------

def test_counter_and_assert_cardinality():
    D = Dataset
    assert _rows(D.counter().take(3)) == [0, 1, 2] and _card(D.counter()) == INFINITE
    c = D.counter(5, 2, dtype=gt.int32).take(3)
    assert _rows(c) == [5, 7, 9] and c.element_spec == gt.TensorSpec((), gt.int32)
    assert _rows(E.Counter(3).take(2)) == [3, 4]
    ok = D.range(5).filter(lambda v: True).apply(E.assert_cardinality(5))
    assert _card(ok) == 5 and len(ok) == 5 and _rows(ok) == [0, 1, 2, 3, 4]
    FP = gt.errors.FailedPreconditionError
    less = D.range(5).filter(lambda v: v < 3).apply(E.assert_cardinality(5))
    with pytest.raises(FP, match="expected to contain 5 elements but contained only 3 "
                                 "elements"):
        list(less)
    more = D.range(5).apply(E.assert_cardinality(3))
    assert _card(more) == 3
    it = iter(more)
    assert [int(next(it)) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(FP, match="expected to contain 3 elements but contained at least 4 "
                                 "elements"):
        next(it)
    with pytest.raises(FP, match="an infinite number of elements but contained only 5"):
        list(D.range(5).apply(E.assert_cardinality(INFINITE)))
    endless = D.range(5).repeat().apply(E.assert_cardinality(INFINITE)).take(2)
    assert _card(endless) == 2 and _rows(endless) == [0, 1]


def test_experimental_transformations():
    D = Dataset
    assert _rows(D.range(2).apply(E.enumerate_dataset(3))) == [(3, 0), (4, 1)]
    assert _rows(D.range(4).batch(3).apply(E.unbatch())) == [0, 1, 2, 3]
    assert _rows(D.range(4).apply(E.take_while(lambda v: v < 2))) == [0, 1]
    assert _rows(D.from_tensor_slices([1, 1, 2]).apply(E.unique())) == [1, 2]
    sr = D.range(3).apply(E.shuffle_and_repeat(1, 2))
    assert _rows(sr) == [0, 1, 2, 0, 1, 2] and _card(sr) == 6
    mb = D.range(5).apply(E.map_and_batch(lambda v: v * 2, 2))
    assert _rows(mb) == [[0, 2], [4, 6], [8]] and _card(mb) == 3
    mbd = D.range(5).apply(E.map_and_batch(lambda v: v * 2, 2, drop_remainder=True))
    assert _rows(mbd) == [[0, 2], [4, 6]] and _shapes(mbd.element_spec) == [2]
    pi = D.range(1, 4).apply(E.parallel_interleave(lambda v: D.range(v), cycle_length=2))
    assert _rows(pi) == [0, 0, 1, 0, 1, 2]
    assert int(E.get_single_element(D.range(1))) == 0
    ch = E.choose_from_datasets([D.range(2), D.range(10, 12)],
                                D.from_tensor_slices(np.array([1, 0, 1], np.int64)))
    assert _rows(ch) == [10, 0, 11] and _card(ch) == UNKNOWN
    assert E.RandomDataset(seed=1).element_spec == gt.TensorSpec((), gt.int64)
    assert _rows(D.range(3).apply(E.prefetch_to_device("/cpu:0"))) == [0, 1, 2]
    assert _rows(D.range(3).apply(E.copy_to_device("/cpu:0"))) == [0, 1, 2]
    assert bool(E.Optional.from_value(gt.constant(1)).has_value())
    assert E.DatasetSpec is gt.data.DatasetSpec


# --- save / load -------------------------------------------------------------------------------

def test_save_and_load_round_trip(tmp_path):
    """TensorFlow: the loaded dataset has the saved spec, cardinality and elements."""
    x = {"a": np.arange(4.0, dtype=np.float32)}
    ds = Dataset.from_tensor_slices((x, np.arange(4))).batch(3)
    assert ds.save(str(tmp_path / "plain")) is None
    back = Dataset.load(str(tmp_path / "plain"))
    assert back.element_spec == ({"a": gt.TensorSpec((None,), gt.float32)},
                                 gt.TensorSpec((None,), gt.int64))
    assert _card(back) == 2
    assert _rows(back) == [({"a": [0.0, 1.0, 2.0]}, [0, 1, 2]), ({"a": [3.0]}, [3])]
    assert _rows(back) == _rows(back)           # read again
    ds.save(tmp_path / "zipped", compression="GZIP")
    assert _rows(Dataset.load(tmp_path / "zipped", compression="GZIP")) == _rows(back)
    with pytest.raises(gt.errors.NotFoundError, match="no dataset saved"):
        Dataset.load(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="not"):
        Dataset.load(str(tmp_path / "plain"), element_spec=(
            {"a": gt.TensorSpec((None,), gt.int32)}, gt.TensorSpec((None,), gt.int64)))
    with pytest.raises(ValueError, match="infinite"):
        Dataset.range(3).repeat().save(str(tmp_path / "endless"))
    Point = collections.namedtuple("Point", "x y")
    Dataset.from_tensor_slices(Point(np.arange(2), np.arange(2.0))).save(tmp_path / "nt")
    p = next(iter(Dataset.load(tmp_path / "nt")))      # (a local class: rebuilt by name)
    assert type(p).__name__ == "Point" and p._fields == ("x", "y") and float(p.y) == 0.0


# --- keras.utils --------------------------------------------------------------------------------

def test_timeseries_dataset_spec_and_list_dtypes():
    """Keras: batch and window sizes are unknown in the spec; a Python list becomes int32
    (float32 for floats); too short data gives an empty dataset."""
    T = keras.utils.timeseries_dataset_from_array
    data = np.arange(20, dtype=np.float32).reshape(10, 2)
    tg = np.arange(100, 110)
    ds = T(data, tg, sequence_length=3, batch_size=4)
    assert _shapes(ds.element_spec) == ([None, None, 2], [None])
    assert ds.element_spec[1].dtype == gt.int64 and _card(ds) == 2
    single = T(data, None, sequence_length=4, batch_size=None)
    assert _shapes(single.element_spec) == [None, 2] and _card(single) == 7
    empty = T(data, None, sequence_length=20, batch_size=10)
    assert _rows(empty) == [] and _card(empty) == 0
    assert _shapes(empty.element_spec) == [None, None, 2]
    ints = T(list(range(6)), None, sequence_length=2, batch_size=10)
    assert ints.element_spec.dtype == gt.int32
    assert _rows(ints) == [[[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]]
    floats = T([0.5, 1.5, 2.5], [1, 2, 3], sequence_length=2, batch_size=10)
    assert floats.element_spec[0].dtype == gt.float32
    assert floats.element_spec[1].dtype == gt.int32
    assert _rows(T(data, data, sequence_length=3, batch_size=10))[0][1][-1] == [14.0, 15.0]


def test_normalize_lists_and_axis_none():
    """Keras 3: a list goes the tensor way (float32); axis=None divides an array by its
    whole norm (np.linalg.norm)."""
    N = keras.utils.normalize
    got = N([[3.0, 4.0]])
    assert isinstance(got, gt.Tensor) and got.dtype == gt.float32
    np.testing.assert_allclose(got.numpy(), [[0.6000000238418579, 0.800000011920929]])
    a = np.array([[3., 4.], [1., 0.], [0., 0.]])
    np.testing.assert_allclose(N(a, axis=None), [[0.5956167028972557, 0.7941556038630077],
                                                 [0.1985389009657519, 0.0], [0.0, 0.0]],
                               rtol=1e-12)
    np.testing.assert_allclose(N(a, order=np.inf), [[0.75, 1.0], [1.0, 0.0], [0.0, 0.0]])


def test_split_dataset_needs_arrays_in_a_list():
    """Keras: a list or tuple must hold NumPy arrays (ValueError otherwise)."""
    S = keras.utils.split_dataset
    with pytest.raises(ValueError, match="Expected a list of `numpy.ndarray` objects"):
        S([1, 2, 3, 4], left_size=2)
    with pytest.raises(ValueError, match="Expected a tuple of `numpy.ndarray` objects"):
        S(([1, 2], [3, 4]), left_size=1)
    with pytest.raises(ValueError, match="empty list"):
        S([], left_size=1)
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    a, b = S([x, np.arange(5)], left_size=3)
    assert _rows(a) == [([0.0, 1.0], 0), ([2.0, 3.0], 1), ([4.0, 5.0], 2)]
    assert _rows(b) == [([6.0, 7.0], 3), ([8.0, 9.0], 4)]


# --- model.fit on datasets ----------------------------------------------------------------------

def test_fit_on_datasets_matches_keras_losses():
    """Keras 3 (SGD 0.1, mse, 2 epochs, the same weights): the loss history and kernel."""
    rng = np.random.RandomState(0)
    x = rng.randn(20, 3).astype(np.float32)
    y = rng.randn(20, 1).astype(np.float32)
    sw = rng.rand(20).astype(np.float32)
    w = [rng.randn(3, 1).astype(np.float32) * 0.5, np.array([0.1], np.float32)]

    def model(dict_in=False):
        if dict_in:
            a = keras.Input((3,), name="a")
            m = keras.Model({"a": a}, keras.layers.Dense(1, name="out")(a))
        else:
            m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        m.layers[-1].set_weights(w)
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
        return m

    def fit(ds, m=None, **kw):
        m = m or model()
        h = m.fit(ds, epochs=2, verbose=0, shuffle=False, **kw)
        return h.history, m.layers[-1].get_weights()[0].ravel()

    plain = ([0.77611, 0.51127], [0.69839, 0.5705], [0.003, 0.31843, 0.07212])
    weighted = ([0.34255, 0.25429], [0.70822, 0.62376], [0.07506, 0.33433, 0.05105])
    for ds, m, want in [
            (Dataset.from_tensor_slices((x, y)).batch(8), None, plain),
            (Dataset.from_tensor_slices((x, y, sw)).batch(8), None, weighted),
            (Dataset.from_tensor_slices(({"a": x}, y)).batch(8), model(True), plain),
            (Dataset.from_tensor_slices((x, y)).cache().batch(8).prefetch(-1), None, plain)]:
        hist, kernel = fit(ds, m)
        np.testing.assert_allclose(hist["loss"], want[0], atol=1e-5)
        np.testing.assert_allclose(hist["mae"], want[1], atol=1e-5)
        np.testing.assert_allclose(kernel, want[2], atol=1e-5)
    hist, kernel = fit(Dataset.from_tensor_slices((x, y)).batch(8).repeat(), steps_per_epoch=2)
    np.testing.assert_allclose(hist["loss"], [0.91829, 0.61345], atol=1e-5)
    np.testing.assert_allclose(kernel, [-0.07787, 0.27123, 0.07345], atol=1e-5)
    hist, _ = fit(Dataset.from_tensor_slices((x, y)).batch(8),
                  validation_data=Dataset.from_tensor_slices((x[:6], y[:6])).batch(4))
    np.testing.assert_allclose(hist["val_loss"], [0.88365, 0.69179], atol=1e-5)
    np.testing.assert_allclose(model().evaluate(
        Dataset.from_tensor_slices((x, y, sw)).batch(8), verbose=0), [0.35769, 0.71946],
        atol=1e-5)


def test_zip_keyword_and_signatures():
    """TensorFlow: zip(datasets=...) works; both forms at once, or none, is a TypeError;
    map takes synchronous= and use_unbounded_threadpool=."""
    D = Dataset
    assert _rows(D.zip(datasets=(D.range(2), D.range(3)))) == [(0, 0), (1, 1)]
    assert D.zip(datasets={"a": D.range(2)}).element_spec == {"a": gt.TensorSpec((),
                                                                                  gt.int64)}
    with pytest.raises(TypeError, match="Both `\\*args` and `datasets` cannot be set"):
        D.zip(D.range(2), datasets=(D.range(2),))
    with pytest.raises(TypeError, match="Must pass at least one dataset"):
        D.zip()
    assert _rows(D.range(3).map(lambda v: v * 2, synchronous=True,
                                use_unbounded_threadpool=True)) == [0, 2, 4]
    T = keras.utils.timeseries_dataset_from_array
    assert _card(T(np.arange(10), None, 3, batch_size=4, format="tf")) == 2
    with pytest.raises(ValueError, match='`format` should be either "tf" or "grain"'):
        T(np.arange(10), None, 3, format="numpy")
