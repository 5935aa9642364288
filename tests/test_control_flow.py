"""TF's eager control flow (cond, switch_case, while_loop, map_fn, py_function,
numpy_function), roll/meshgrid/sequence_mask, global pooling layers and Keras' layer names."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads


def test_cond_and_switch_case_run_the_taken_branch_under_the_tape():
    x = gt.Variable(3.0)
    with gt.GradientTape(persistent=True) as tape:
        big = gt.cond(x > 2.0, lambda: x * x, lambda: -x)
        small = gt.cond(False, lambda: x * x, lambda: -x)
    assert big.numpy() == 9.0 and tape.gradient(big, x).numpy() == 6.0
    assert small.numpy() == -3.0 and tape.gradient(small, x).numpy() == -1.0
    fns = [lambda: gt.constant(10), lambda: gt.constant(11)]
    assert gt.switch_case(gt.constant(1), fns).numpy() == 11
    assert gt.switch_case(7, fns).numpy() == 11                       # no default: the last
    assert gt.switch_case(7, fns, default=lambda: gt.constant(-1)).numpy() == -1
    assert gt.switch_case(2, {0: lambda: "a", 2: lambda: "c"}) == "c"
    with pytest.raises(ValueError, match="cond: the predicate must be a single boolean"):
        gt.cond(gt.constant([True, False]), lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="cond: true_fn and false_fn must both be callables"):
        gt.cond(True, lambda: 1, None)
    with pytest.raises(TypeError, match="switch_case: branch_index must be an int"):
        gt.switch_case(1.5, fns)


def test_while_loop_keeps_the_structure_and_differentiates():
    i, total = gt.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
                             (gt.constant(0), gt.constant(0)))
    assert (i.numpy(), total.numpy()) == (5, 10)
    # TF 2's eager while_loop: Python numbers become tensors, the result is what body returned
    (v,) = gt.while_loop(lambda v: v < 100, lambda v: (v * 2,), [1])
    assert v.dtype == gt.int32 and v.numpy() == 128
    out = gt.while_loop(lambda v, d: True, lambda v, d: [v + 1, {"a": d["a"] * 2.0}],
                        (0, {"a": 1.5}), maximum_iterations=3)
    assert isinstance(out, list) and out[0].numpy() == 3 and out[1]["a"].numpy() == 12.0
    assert out[1]["a"].dtype == gt.float32
    (k,) = gt.while_loop(lambda v: v > 5, lambda v: [v - 1], [2])
    assert k.dtype == gt.int32 and k.numpy() == 2
    x = gt.Variable(1.5)
    with gt.GradientTape() as tape:
        _, y = gt.while_loop(lambda k, v: k < 3, lambda k, v: (k + 1, v * x),
                             [gt.constant(0), gt.constant(1.0)])
    assert y.numpy() == pytest.approx(1.5 ** 3)
    assert tape.gradient(y, x).numpy() == pytest.approx(3 * 1.5 ** 2)
    with pytest.raises(ValueError, match="while_loop: body must return the structure of "
                                         r"loop_vars \(a list or tuple of 2 loop variables\), got one Tensor"):
        gt.while_loop(lambda a, b: a < 1, lambda a, b: a + 1, [0, 0])
    with pytest.raises(ValueError, match="while_loop: body must return the structure"):
        gt.while_loop(lambda a: a < 1, lambda a: a + 1, [0])
    with pytest.raises(ValueError, match="while_loop: body must return the structure"):
        gt.while_loop(lambda a, b: a < 1, lambda a, b: (a + 1, [b]), [0, 0])
    with pytest.raises(TypeError, match="while_loop: loop_vars must be a list or tuple"):
        gt.while_loop(lambda v: v < 100, lambda v: v * 2, gt.constant(1))


def test_map_fn_vectorized_map_and_py_functions():
    m = gt.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(gt.map_fn(lambda r: r * 2.0, m).numpy(), [[2, 4], [6, 8]])
    s, first = gt.map_fn(lambda p: (p[0] + p[1], p[0]),
                         (gt.constant([1, 2]), gt.constant([10, 20])))
    assert s.numpy().tolist() == [11, 22] and first.numpy().tolist() == [1, 2]
    np.testing.assert_array_equal(gt.vectorized_map(gt.reduce_sum, m).numpy(), [3, 7])
    check_grads(lambda a: gt.map_fn(lambda r: gt.reduce_sum(r * r), a), [np.ones((3, 2))])
    with pytest.raises(ValueError, match="map_fn: every tensor of elems needs the same first"):
        gt.map_fn(lambda p: p, (gt.ones([2]), gt.ones([3])))
    x = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        y = gt.py_function(lambda a: a * a, [x], gt.float32)
    assert y.numpy() == 4.0 and tape.gradient(y, x).numpy() == 4.0
    out = gt.numpy_function(lambda a, b: (np.sin(a), b + 1), [gt.constant(0.0), 1],
                            [gt.float32, gt.int32])
    assert out[0].dtype == gt.float32 and out[1].numpy() == 2
    with pytest.raises(ValueError, match="numpy_function: the function returned 1 value"):
        gt.numpy_function(lambda a: a, [1], [gt.int32, gt.int32])


def test_roll_meshgrid_sequence_mask():
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(gt.roll(a, 1, 0).numpy(), np.roll(a, 1, 0))
    np.testing.assert_array_equal(gt.roll(a, [1, -5], [0, 1]).numpy(),
                                  np.roll(a, [1, -5], [0, 1]))
    np.testing.assert_array_equal(gt.roll(a, [2, 3], [1, 1]).numpy(), np.roll(a, 5, 1))
    check_grads(lambda v: gt.roll(v, [1, 2], [0, 1]) * gt.roll(v, -1, 1), [a])
    for indexing in ("xy", "ij"):
        got = gt.meshgrid(gt.constant([1, 2, 3]), gt.constant([4, 5]), gt.constant([6, 7, 8, 9]),
                          indexing=indexing)
        want = np.meshgrid([1, 2, 3], [4, 5], [6, 7, 8, 9], indexing=indexing)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    check_grads(lambda u, v: gt.meshgrid(u, v)[0] * gt.meshgrid(u, v)[1],
                [np.arange(3.0), np.arange(2.0)])
    np.testing.assert_array_equal(gt.sequence_mask([1, 3, 0], 4).numpy(),
                                  [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    m = gt.sequence_mask(gt.constant([[1], [2]]), dtype=gt.float32)
    assert m.dtype == gt.float32 and m.shape == (2, 1, 2)
    with pytest.raises(ValueError, match="roll: shift \\[1\\] and axis \\[0, 1\\] differ"):
        gt.roll(a, [1], [0, 1])
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'xy' or 'ij'"):
        gt.meshgrid(gt.constant([1]), indexing="yx")
    with pytest.raises(TypeError, match="sequence_mask: lengths must be integers"):
        gt.sequence_mask([1.5])
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        x = gt.constant(np.arange(6.0, dtype=np.float32))
        lens = gt.constant(np.array([2, 4], np.int32))
        dev.reset_counters()
        r, mask = gt.roll(x, 2, 0), gt.sequence_mask(lens, 5)
        assert dev.sync_count == 0 and dev.transfer_count == 0
    np.testing.assert_array_equal(r.numpy(), np.roll(np.arange(6.0), 2))
    assert mask.numpy().sum() == 6


def test_global_pooling_layers_and_keras_layer_names():
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(gt.keras.layers.GlobalAveragePooling2D()(x).numpy(),
                               x.mean(axis=(1, 2)), rtol=1e-6)
    np.testing.assert_array_equal(gt.keras.layers.GlobalMaxPooling2D(keepdims=True)(x).numpy(),
                                  x.max(axis=(1, 2), keepdims=True))
    assert gt.keras.layers.GlobalAveragePooling2D(data_format="channels_first")(x).shape == (2, 3)
    model = gt.keras.Sequential([gt.keras.layers.Conv2D(3, 3, padding="same"),
                                 gt.keras.layers.GlobalAveragePooling2D(),
                                 gt.keras.layers.Dense(2)])
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(model(x) ** 2)
    assert all(g is not None for g in tape.gradient(loss, model.trainable_variables))
    with pytest.raises(ValueError, match="data_format must be 'channels_last' or"):
        gt.keras.layers.GlobalAveragePooling2D(data_format="NHWC")
    names = [gt.keras.layers.Conv2D(1, 1).name, gt.keras.layers.BatchNormalization().name,
             gt.keras.layers.GlobalAveragePooling2D().name]
    assert [n.rsplit("_", 1)[0] if n[-1].isdigit() and "_" in n and
            n.rsplit("_", 1)[1].isdigit() else n for n in names] == \
        ["conv2d", "batch_normalization", "global_average_pooling2d"]


def _conv1d_reference(x, w, stride=1, pad=(0, 0), dilation=1):
    x = np.pad(x, ((0, 0), pad, (0, 0)))
    k = w.shape[0]
    extent = (k - 1) * dilation + 1
    n_out = (x.shape[1] - extent) // stride + 1
    return np.stack([sum(x[:, i * stride + j * dilation, :] @ w[j] for j in range(k))
                     for i in range(n_out)], 1)


def test_conv1d_values_gradients_and_formats():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 11, 3))
    w = rng.standard_normal((3, 3, 4))
    np.testing.assert_allclose(gt.nn.conv1d(x, w, 1, "VALID").numpy(), _conv1d_reference(x, w),
                               rtol=1e-10)
    np.testing.assert_allclose(gt.nn.conv1d(x, w, [1, 2, 1], [[0, 0], [2, 1], [0, 0]]).numpy(),
                               _conv1d_reference(x, w, 2, (2, 1)), rtol=1e-10)
    np.testing.assert_allclose(gt.nn.conv1d(x, w, 1, "SAME", dilations=2).numpy(),
                               _conv1d_reference(x, w, 1, (2, 2), 2), rtol=1e-10)
    ncw = gt.nn.conv1d(np.transpose(x, (0, 2, 1)), w, 1, "VALID", data_format="NCW")
    np.testing.assert_allclose(ncw.numpy(), np.transpose(_conv1d_reference(x, w), (0, 2, 1)),
                               rtol=1e-10)
    check_grads(lambda a, b: gt.nn.conv1d(a, b, 2, "SAME"), [x[:, :7], w])
    with pytest.raises(ValueError, match="conv1d: input must have rank 3"):
        gt.nn.conv1d(x[0], w, 1, "VALID")
    with pytest.raises(ValueError, match="conv1d: stride must be an int or a list of 1 or 3"):
        gt.nn.conv1d(x, w, [2, 2, 1], "VALID")
    with pytest.raises(ValueError, match="conv1d: explicit padding must be"):
        gt.nn.conv1d(x, w, 1, [[1, 0], [0, 0], [0, 0]])


def test_conv1d_layer_paddings_and_the_device_kernels(monkeypatch):
    from test_kernels import _host_cuda, _strict_kernels
    x = np.random.default_rng(4).standard_normal((2, 10, 3)).astype(np.float32)
    shapes = {p: gt.keras.layers.Conv1D(4, 3, padding=p)(x).shape
              for p in ("valid", "same", "causal")}
    assert shapes == {"valid": (2, 8, 4), "same": (2, 10, 4), "causal": (2, 10, 4)}
    causal = gt.keras.layers.Conv1D(2, 3, padding="causal", dilation_rate=2)
    y = causal(x).numpy()
    later = x.copy()
    later[:, 6:] += 1.0                       # step t sees only steps up to t
    np.testing.assert_allclose(causal(later).numpy()[:, :6], y[:, :6], rtol=1e-6)
    assert not np.allclose(causal(later).numpy()[:, 6:], y[:, 6:])
    assert causal.name.startswith("conv1d") and causal.get_config()["padding"] == "causal"
    with pytest.raises(ValueError, match="Conv1D: padding must be 'valid', 'same' or 'causal'"):
        gt.keras.layers.Conv1D(2, 3, padding="full")
    if _host_cuda.compiler() is None:
        return
    w = np.random.default_rng(5).standard_normal((3, 3, 2)).astype(np.float32)

    def run():
        xv, wv = gt.Variable(x), gt.Variable(w)
        with gt.GradientTape() as tape:
            loss = gt.reduce_sum(gt.nn.conv1d(xv, wv, 1, "SAME") ** 2)
        return [loss.numpy()] + [g.numpy() for g in tape.gradient(loss, [xv, wv])]
    with gt.device("cpu"):
        want = run()
    launches = []
    _strict_kernels(monkeypatch, launches)
    with gt.device("strict:0"):
        got = run()
    assert {"im2col_f32", "col2im_add_f32"} <= set(launches)
    for g, wnt in zip(got, want):
        np.testing.assert_allclose(g, wnt, rtol=2e-5, atol=2e-5)
