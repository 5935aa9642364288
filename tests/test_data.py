"""gt.data: tf.data's Dataset API on host pipelines, delivered to the current device."""
from __future__ import annotations

import collections
import threading

import numpy as np
import pytest

import gradtape as gt

Dataset = gt.data.Dataset


def _values(ds):
    return [np.asarray(v).tolist() if not isinstance(v, tuple) else
            tuple(np.asarray(p).tolist() for p in v) for v in ds.as_numpy_iterator()]


def test_slices_give_rows_with_their_dtypes_and_spec():
    x = np.arange(12, dtype=np.float64).reshape(6, 2)
    y = np.arange(6, dtype=np.int32)
    ds = Dataset.from_tensor_slices((x, y))
    assert len(ds) == 6 and int(ds.cardinality()) == 6
    assert ds.element_spec == (gt.TensorSpec((2,), gt.float64), gt.TensorSpec((), gt.int32))
    rows = list(ds)
    assert len(rows) == 6 and all(isinstance(a, gt.Tensor) for a, _ in rows)
    np.testing.assert_array_equal(rows[4][0].numpy(), [8.0, 9.0])
    assert rows[4][1].dtype == gt.int32 and int(rows[4][1]) == 4
    # Python lists are tensors (TF's inference: floats become float32), dicts are structures
    d = Dataset.from_tensor_slices({"a": [1.0, 2.0, 3.0], "b": [[1, 2], [3, 4], [5, 6]]})
    first = next(iter(d))
    assert set(first) == {"a", "b"} and first["a"].dtype == gt.float32
    assert first["b"].dtype == gt.int32 and first["b"].numpy().tolist() == [1, 2]


def test_batch_gathers_rows_and_counts_batches():
    ds = Dataset.from_tensor_slices(np.arange(10)).batch(4)
    assert _values(ds) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(ds) == 3 and ds.element_spec.shape.as_list() == [None]
    dropped = Dataset.from_tensor_slices(np.arange(10)).batch(4, drop_remainder=True)
    assert _values(dropped) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(dropped) == 2 and dropped.element_spec.shape.as_list() == [4]
    # element-wise batching (after map) gives the same batches
    mapped = Dataset.from_tensor_slices(np.arange(10)).map(lambda v: v + 0).batch(4)
    assert _values(mapped) == _values(ds)
    nested = Dataset.range(6).batch(2).batch(2)
    assert _values(nested) == [[[0, 1], [2, 3]], [[4, 5]]]


def test_shuffle_permutes_reproducibly_and_reshuffles_each_pass():
    ds = Dataset.range(50).shuffle(50, seed=7)
    a, b = _values(ds), _values(ds)
    assert sorted(a) == list(range(50)) and sorted(b) == list(range(50))
    assert a != list(range(50)) and a != b                # a new order each pass
    assert _values(Dataset.range(50).shuffle(50, seed=7)) == a    # the seed fixes the orders
    fixed = Dataset.range(50).shuffle(50, seed=7, reshuffle_each_iteration=False)
    assert _values(fixed) == _values(fixed)
    # a buffer of one element changes nothing; a small buffer delays an element at most
    # buffer_size - 1 places... and moves none earlier than buffer_size - 1 places
    assert _values(Dataset.range(20).shuffle(1, seed=3)) == list(range(20))
    small = _values(Dataset.range(200).shuffle(4, seed=3))
    assert sorted(small) == list(range(200)) and small != list(range(200))
    assert all(v <= i + 3 for i, v in enumerate(small))
    # repeat after shuffle: every epoch a permutation, each different
    epochs = _values(Dataset.range(30).shuffle(30, seed=1).repeat(3))
    parts = [epochs[i * 30:(i + 1) * 30] for i in range(3)]
    assert all(sorted(p) == list(range(30)) for p in parts) and parts[0] != parts[1]
    # the sliced fast path (batches gathered by index) shuffles rows the same way
    x = np.arange(40).reshape(20, 2)
    rows = np.concatenate([b.numpy() for b in Dataset.from_tensor_slices(x).shuffle(20, seed=2)
                           .batch(6)])
    assert sorted(rows[:, 0].tolist()) == list(range(0, 40, 2))
    np.testing.assert_array_equal(rows[:, 1], rows[:, 0] + 1)       # rows stay whole


@pytest.mark.parametrize("buffer", [4, 25, 100])
def test_every_path_gives_the_same_order_for_a_seed(buffer):
    """Batches gathered by index and batches stacked element by element (after a map) come
    out in the same order, through take, skip, shard and repeat."""
    x = np.arange(60)

    def pipeline(with_map):
        ds = Dataset.from_tensor_slices(x).skip(3).take(50).shard(2, 1)
        ds = ds.shuffle(buffer, seed=5).repeat(2)
        if with_map:
            ds = ds.map(lambda v: v)
        return [b.tolist() for b in ds.batch(7).as_numpy_iterator()]

    fast, slow = pipeline(False), pipeline(True)
    assert fast == slow
    flat = sum(fast, [])
    assert sorted(flat[:25]) == sorted(flat[25:]) == list(range(4, 53, 2))   # two epochs
    assert flat[:25] != flat[25:]


def test_reading_the_spec_changes_nothing():
    """element_spec (and repr) read one element without counting a shuffle pass, so a seeded
    pipeline gives the same orders whether or not its spec was read; the source arrays are
    copied, as TF's constants are."""
    def make():
        return Dataset.range(10).shuffle(10, seed=1).map(lambda v: v * 2).prefetch(2)
    a, b = make(), make()
    assert b.element_spec == gt.TensorSpec((), gt.int64) and "int64" in repr(b)
    assert _values(a) == _values(b) and _values(a) == _values(b)
    src = np.arange(4)
    ds = Dataset.from_tensor_slices(src)
    src[:] = -1
    assert _values(ds) == [0, 1, 2, 3]


def test_functions_mixing_devices_say_where_pipelines_run():
    with gt.device("strict:0"):
        w = gt.constant(2.0)
        with pytest.raises(gt.DeviceError, match="Functions of a dataset run on the CPU"):
            list(Dataset.range(3).map(lambda v: gt.cast(v, gt.float32) * w))
        with gt.device("cpu"):
            w_host = gt.constant(2.0)
        out = list(Dataset.range(3).map(lambda v: gt.cast(v, gt.float32) * w_host))
        assert [float(t) for t in out] == [0.0, 2.0, 4.0]


def test_shuffle_follows_the_global_seed():
    gt.random.set_seed(11)
    a = [_values(Dataset.range(40).shuffle(40)), _values(Dataset.range(40).shuffle(40))]
    gt.random.set_seed(11)
    b = [_values(Dataset.range(40).shuffle(40)), _values(Dataset.range(40).shuffle(40))]
    assert a == b and a[0] != a[1]      # the program's shuffles, each its own order


def test_map_unpacks_tuples_and_runs_on_the_host():
    seen = []

    def scale(x, y):
        seen.append((x.device, y.device))
        return {"x": x * 2.0, "y": y}, gt.constant(1.0)

    ds = Dataset.from_tensor_slices((np.ones((3, 2), np.float32), np.arange(3))).map(scale)
    spec = ds.element_spec
    assert spec[0]["x"] == gt.TensorSpec((2,), gt.float32) and spec[1].shape.as_list() == []
    with gt.device("strict:0"):
        out = list(ds)
    assert all(d == ("cpu:0", "cpu:0") for d in seen)        # the function ran on the CPU
    assert out[2][0]["x"].device == "strict:0"                # the element arrived there
    np.testing.assert_array_equal(out[2][0]["x"].numpy(), [2.0, 2.0])
    assert [int(e[0]["y"]) for e in out] == [0, 1, 2]
    single = Dataset.from_tensor_slices({"a": np.arange(3)}).map(lambda d: d["a"] + 1)
    assert _values(single) == [1, 2, 3]


def test_filter_take_skip_shard_enumerate_take_while():
    ds = Dataset.range(10)
    assert _values(ds.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]
    assert int(ds.filter(lambda v: v > 2).cardinality()) == gt.data.UNKNOWN_CARDINALITY
    assert _values(ds.take(3)) == [0, 1, 2] and len(ds.take(3)) == 3
    assert _values(ds.take(-1)) == list(range(10)) and len(ds.take(20)) == 10
    assert _values(ds.skip(7)) == [7, 8, 9] and len(ds.skip(7)) == 3
    assert _values(ds.skip(-1)) == [] and len(ds.skip(20)) == 0
    assert _values(ds.shard(3, 1)) == [1, 4, 7] and len(ds.shard(3, 1)) == 3
    assert _values(ds.take(2).enumerate(5)) == [(5, 0), (6, 1)]
    assert _values(ds.take_while(lambda v: v < 4)) == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="predicate must return a bool scalar, got int64"):
        list(ds.filter(lambda v: v))
    with pytest.raises(ValueError, match=r"num_shards > 0 and 0 <= index < num_shards"):
        ds.shard(2, 2)


def test_repeat_zip_concatenate_unbatch_flat_map():
    assert _values(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    inf = Dataset.range(3).repeat()
    assert int(inf.cardinality()) == gt.data.INFINITE_CARDINALITY
    assert _values(inf.take(7)) == [0, 1, 2, 0, 1, 2, 0]
    with pytest.raises(TypeError, match="The dataset is infinite"):
        len(inf)
    with pytest.raises(TypeError, match="The dataset length is unknown"):
        len(Dataset.range(3).filter(lambda v: v > 0))
    assert _values(Dataset.range(0).repeat()) == []               # nothing to repeat
    z = Dataset.zip((Dataset.range(3), Dataset.range(10, 20)))
    assert _values(z) == [(0, 10), (1, 11), (2, 12)] and len(z) == 3
    assert _values(Dataset.zip(Dataset.range(2), Dataset.range(5, 7))) == [(0, 5), (1, 6)]
    assert _values(Dataset.zip(Dataset.range(2))) == [0, 1]      # one dataset: its elements
    unknown = Dataset.zip((Dataset.range(10).filter(lambda v: v < 3), Dataset.range(10)))
    assert int(unknown.cardinality()) == gt.data.UNKNOWN_CARDINALITY
    assert int(Dataset.zip((Dataset.range(4), Dataset.range(2).repeat())).cardinality()) == 4
    c = Dataset.range(2).concatenate(Dataset.range(5, 7))
    assert _values(c) == [0, 1, 5, 6] and len(c) == 4
    with pytest.raises(TypeError, match="component 0 is int64 in one dataset and float32"):
        Dataset.range(2).concatenate(Dataset.from_tensor_slices([1.0]))
    u = Dataset.from_tensor_slices(np.arange(12).reshape(3, 4)).batch(2).unbatch()
    assert [r.tolist() for r in u.as_numpy_iterator()] == np.arange(12).reshape(3, 4).tolist()
    assert u.element_spec.shape.as_list() == [4]
    fm = Dataset.range(3).flat_map(lambda v: Dataset.range(v))
    assert _values(fm) == [0, 0, 1]


def test_padded_batch_pads_to_the_batch_or_the_shape_given():
    def gen():
        for n in (1, 3, 2):
            yield np.arange(1, n + 1, dtype=np.int32), np.float32(n)

    sig = (gt.TensorSpec([None], gt.int32), gt.TensorSpec([], gt.float32))
    ds = Dataset.from_generator(gen, output_signature=sig)
    got = list(ds.padded_batch(2).as_numpy_iterator())
    np.testing.assert_array_equal(got[0][0], [[1, 0, 0], [1, 2, 3]])
    np.testing.assert_array_equal(got[1][0], [[1, 2]])
    np.testing.assert_array_equal(got[0][1], [1.0, 3.0])
    fixed = list(ds.padded_batch(3, padded_shapes=([5], []), padding_values=(-1, 0.0))
                 .as_numpy_iterator())
    np.testing.assert_array_equal(fixed[0][0], [[1, -1, -1, -1, -1], [1, 2, 3, -1, -1],
                                                [1, 2, -1, -1, -1]])
    assert ds.padded_batch(2, padded_shapes=([5], [])).element_spec[0].shape.as_list() == \
        [None, 5]
    with pytest.raises(ValueError, match="size 3 on axis 0, more than its padded size 2"):
        list(ds.padded_batch(3, padded_shapes=([2], [])))
    with pytest.raises(ValueError, match=r"cannot batch tensors of different shapes in "
                                         r"component 0: the first element has shape \[1\], "
                                         r"element 1 has shape \[3\]"):
        list(ds.batch(2))


def test_from_generator_checks_what_it_yields():
    def gen(n):
        for i in range(int(n)):
            yield np.full((2,), i, np.float32)

    ds = Dataset.from_generator(gen, output_types=gt.float32, output_shapes=(2,), args=(3,))
    assert [v.tolist() for v in ds.as_numpy_iterator()] == [[0, 0], [1, 1], [2, 2]]
    assert int(ds.cardinality()) == gt.data.UNKNOWN_CARDINALITY
    loose = Dataset.from_generator(lambda: iter([np.zeros((1, 3))]), output_types=gt.float64)
    assert loose.element_spec.shape.as_list() == [None, None]
    bad = Dataset.from_generator(lambda: iter([np.zeros(3, np.float32)]),
                                 output_signature=gt.TensorSpec([2], gt.float32))
    with pytest.raises(ValueError, match=r"component 0 has shape \(3,\), the signature"):
        list(bad)
    with pytest.raises(TypeError, match="give output_signature"):
        Dataset.from_generator(gen)


def test_cache_replays_the_first_complete_pass(tmp_path):
    calls = []

    def count(v):
        calls.append(int(v))
        return v * 10

    ds = Dataset.range(4).map(count).cache()
    assert _values(ds) == [0, 10, 20, 30] and _values(ds) == [0, 10, 20, 30]
    assert calls == [0, 1, 2, 3]
    calls.clear()
    path = tmp_path / "c.cache"
    assert _values(Dataset.range(3).map(count).cache(path)) == [0, 10, 20]
    again = Dataset.range(3).map(count).cache(str(path))       # another dataset: the file
    assert _values(again) == [0, 10, 20] and calls == [0, 1, 2]
    partial = Dataset.range(5).map(count).cache()
    calls.clear()
    assert _values(partial.take(2)) == [0, 10]
    assert _values(partial) == [0, 10, 20, 30, 40]            # an unfinished pass is not kept
    (tmp_path / "bad.cache").write_bytes(b"not a cache")
    with pytest.raises(ValueError, match="is not a gradtape dataset cache"):
        list(Dataset.range(2).cache(tmp_path / "bad.cache"))


def test_prefetch_runs_ahead_on_a_thread_and_hands_errors_over():
    thread_names = []

    def note(v):
        thread_names.append(threading.current_thread().name)
        return v

    ds = Dataset.range(20).map(note).batch(3).prefetch(gt.data.AUTOTUNE)
    assert _values(ds)[-1] == [18, 19] and len(ds) == 7
    assert set(thread_names) == {"gradtape-prefetch"}

    def boom(v):
        if int(v) == 3:
            raise RuntimeError("bad element 3")
        return v

    seen = []
    with pytest.raises(RuntimeError, match="bad element 3"):
        for v in Dataset.range(10).map(boom).prefetch(2):
            seen.append(int(v))
    assert seen == [0, 1, 2]
    before = threading.active_count()
    for v in Dataset.range(10**6).prefetch(4):      # leaving early stops the worker
        break
    for _ in range(100):
        if threading.active_count() <= before:
            break
        threading.Event().wait(0.01)
    assert threading.active_count() <= before
    assert _values(Dataset.range(3).prefetch(0)) == [0, 1, 2]


def test_elements_reach_the_current_device_one_upload_per_component():
    dev = gt.get_device("strict:0")
    x = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    y = np.arange(10, dtype=np.int32)
    ds = Dataset.from_tensor_slices((x, y)).shuffle(10, seed=0).batch(4)
    with gt.device(dev):
        dev.reset_counters()
        batches = list(ds)
        assert dev.transfer_count == 2 * len(batches) and dev.sync_count == 0
    assert [b[0].device for b in batches] == ["strict:0"] * 3
    got = np.concatenate([dev.to_host(b[0]._value) for b in batches])
    order = np.concatenate([dev.to_host(b[1]._value) for b in batches])
    np.testing.assert_array_equal(got, x[order])
    # a device tensor given as a source is read back once, then served like host data
    with gt.device(dev):
        src = gt.constant(x)
        dev.reset_counters()
        d2 = Dataset.from_tensor_slices(src)
        assert dev.sync_count == 1
        np.testing.assert_array_equal(next(iter(d2.batch(10))).numpy(), x)


def test_reduce_and_numpy_iteration():
    total = Dataset.range(5).reduce(gt.constant(0, gt.int64), lambda s, v: s + v)
    assert int(total) == 10
    pairs = list(Dataset.from_tensor_slices((np.arange(2), np.ones((2, 2)))).as_numpy_iterator())
    assert isinstance(pairs[0][0], np.integer) and pairs[1][1].shape == (2,)


def test_training_loop_over_a_dataset_like_a_tf_script():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 3)).astype(np.float32)
    w_true = np.array([[1.5], [-2.0], [0.5]], np.float32)
    y = x @ w_true + 0.3
    ds = Dataset.from_tensor_slices((x, y)).shuffle(256, seed=0).batch(32)
    w = gt.Variable(np.zeros((3, 1), np.float32))
    b = gt.Variable(np.zeros((1,), np.float32))
    opt = gt.optimizers.SGD(0.1)
    for _ in range(30):
        for xb, yb in ds:
            with gt.GradientTape() as tape:
                loss = gt.reduce_mean(gt.square(gt.matmul(xb, w) + b - yb))
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
    np.testing.assert_allclose(w.numpy(), w_true, atol=1e-3)
    np.testing.assert_allclose(b.numpy(), [0.3], atol=1e-3)


def test_bad_input_is_refused_with_the_values_involved():
    with pytest.raises(ValueError, match=r"first sizes differ: \[3, 2\]"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))
    with pytest.raises(ValueError, match="component 0 is a scalar"):
        Dataset.from_tensor_slices(np.float32(1.0))
    with pytest.raises(ValueError, match="batch_size must be positive, got 0"):
        Dataset.range(3).batch(0)
    with pytest.raises(ValueError, match="buffer_size must be positive, got 0"):
        Dataset.range(3).shuffle(0)
    with pytest.raises(TypeError, match="expected datasets, got int"):
        Dataset.zip((Dataset.range(2), 3))
    assert [bytes(v.numpy()) for v in Dataset.from_tensor_slices(np.array(["a", "b"]))] == \
        [b"a", b"b"]
    with pytest.raises(TypeError, match="map_func must be callable"):
        Dataset.range(2).map(3)
    with pytest.raises(TypeError, match="the elements do not have the same structure"):
        list(Dataset.range(3).map(lambda v: (v, v) if int(v) else v).batch(3))
    with pytest.raises(ValueError, match="step must not be 0"):
        Dataset.range(0, 5, 0)
    with pytest.raises(TypeError, match="must return a Dataset, got int"):
        list(Dataset.range(2).flat_map(lambda v: 3))


def test_namedtuple_elements_keep_their_type():
    Point = collections.namedtuple("Point", "x y")
    ds = Dataset.from_tensor_slices(Point(np.arange(3), np.arange(3) * 2.0))
    p = next(iter(ds.batch(2)))
    assert isinstance(p, Point) and p.y.numpy().tolist() == [0.0, 2.0]
    assert _values(ds.map(lambda pt: pt.x + 1)) == [1, 2, 3]     # one argument, not two


def test_nest_assert_same_structure():
    gt.nest.assert_same_structure((1, [2, 3]), ("a", ["b", "c"]))
    with pytest.raises(ValueError, match="same number of elements at \\[1\\]: 2 and 1"):
        gt.nest.assert_same_structure((1, [2, 3]), (1, [2]))
    with pytest.raises(TypeError, match="same sequence type"):
        gt.nest.assert_same_structure((1, 2), [1, 2])
    gt.nest.assert_same_structure({"a": 1}, collections.OrderedDict(a=2))   # as tf.nest
    P1, P2 = collections.namedtuple("P", "x y"), collections.namedtuple("P", "x y")
    gt.nest.assert_same_structure(P1(1, 2), P2(3, 4))
    gt.nest.assert_same_structure((1, 2), [1, 2], check_types=False)
    with pytest.raises(ValueError, match="same keys"):
        gt.nest.assert_same_structure({"a": 1}, {"b": 1})


def _rows(ds):
    return [[np.asarray(x).tolist() for x in e] if isinstance(e, tuple)
            else np.asarray(e).tolist() for e in ds]


def test_window_interleave_scan_unique_rebatch_give_tfs_elements():
    # (the expected lists are what TensorFlow 2.21 gives)
    D = gt.data.Dataset
    assert _rows(D.range(7).window(3, shift=2).flat_map(lambda w: w.batch(3))) == \
        [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert _rows(D.range(7).window(3, 2, drop_remainder=True).flat_map(lambda w: w.batch(3))) \
        == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert _rows(D.range(10).window(2, shift=4, stride=2).flat_map(lambda w: w.batch(5))) == \
        [[0, 2], [4, 6], [8]]
    assert _rows(D.range(8).window(3, 1, 2, drop_remainder=True)
                 .flat_map(lambda w: w.batch(5))) == [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5, 7]]
    pairs = D.zip((D.range(5), D.range(5, 10))).window(2)
    assert _rows(pairs.flat_map(lambda a, b: D.zip((a.batch(2), b.batch(2))))) == \
        [[[0, 1], [5, 6]], [[2, 3], [7, 8]], [[4], [9]]]
    assert _rows(D.range(1, 4).interleave(lambda x: D.from_tensors(x).repeat(4), cycle_length=2,
                                          block_length=2)) == [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3]
    assert _rows(D.range(1, 6).interleave(lambda x: D.range(x), cycle_length=3)) == \
        [0, 0, 0, 1, 1, 0, 2, 1, 0, 2, 1, 3, 2, 3, 4]
    assert _rows(D.range(5).scan(gt.constant(0, gt.int64), lambda s, x: (s + x, s * 2))) == \
        [0, 0, 2, 6, 12]
    assert _rows(D.from_tensor_slices([1, 2, 1, 3, 2]).unique()) == [1, 2, 3]
    assert _rows(D.range(10).batch(3).rebatch(4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert D.range(1).get_single_element().numpy() == 0
    with pytest.raises(ValueError, match="more than one element"):
        D.range(2).get_single_element()
    assert _rows(D.range(3).map(lambda v: [v, v * 2])) == [[0, 0], [1, 2], [2, 4]]  # a tuple
    assert D.range(3, output_type=gt.int32).element_spec.dtype == gt.int32
    with pytest.raises(ValueError, match="window: shift must be positive"):
        D.range(3).window(2, shift=0)


def test_choosing_and_sampling_from_datasets():
    D = gt.data.Dataset
    choice = D.from_tensor_slices(gt.constant([0, 1, 1, 0, 0, 1], gt.int64))
    assert _rows(D.choose_from_datasets([D.range(3), D.range(10, 13)], choice)) == \
        [0, 10, 11, 1, 2, 12]
    mixed = D.sample_from_datasets([D.range(3), D.range(10, 13)], weights=[0.5, 0.5], seed=1)
    first, second = _rows(mixed), _rows(mixed)
    assert sorted(first) == [0, 1, 2, 10, 11, 12] and sorted(second) == sorted(first)
    assert [v for v in first if v < 10] == [0, 1, 2]            # each keeps its own order
    only = D.sample_from_datasets([D.range(3), D.range(10, 13)], weights=[1.0, 0.0], seed=2)
    assert _rows(only) == [0, 1, 2]
    stream = D.random(seed=4).take(3)
    assert _rows(stream) == _rows(stream) and stream.element_spec.dtype == gt.int64
    with pytest.raises(ValueError, match="weights must be 2 non-negative numbers"):
        D.sample_from_datasets([D.range(3), D.range(3)], weights=[1.0, -1.0])


def test_iterators_have_tfs_get_next_and_optionals():
    ds = gt.data.Dataset.from_tensor_slices([1.0, 2.0])
    it = iter(ds)
    assert isinstance(it, gt.data.Iterator) and it.element_spec.dtype == gt.float32
    assert float(it.get_next()) == 1.0
    opt = it.get_next_as_optional()
    assert bool(opt.has_value()) and float(opt.get_value()) == 2.0
    empty = it.get_next_as_optional()
    assert not bool(empty.has_value()) and empty.element_spec.dtype == gt.float32
    with pytest.raises(gt.errors.OutOfRangeError, match="End of sequence"):
        it.get_next()
    with pytest.raises(gt.errors.InvalidArgumentError, match="does not have a value"):
        empty.get_value()
    assert [float(v) for v in ds] == [1.0, 2.0]            # a for loop, afresh
