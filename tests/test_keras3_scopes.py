"""Keras 3's remaining top-level pieces against Keras 3.15 (expected values below are
Keras'): ReversibleEmbedding, keras.dtype_policies (DTypePolicyMap lookup by path and
pattern, serialization), RematScope / remat (the same values and gradients, the layer's call
run again for the gradient), keras.device and keras.version."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
E = np.arange(12, dtype="float32").reshape(4, 3) / 10


def test_reversible_embedding_tied(device, tmp_path):
    layer = keras.layers.ReversibleEmbedding(4, 3, mask_zero=True, logit_soft_cap=2.0,
                                             name="rev")
    ids = np.array([[0, 1, 3]])
    layer(ids)
    layer.set_weights([E])
    h = layer(ids)
    np.testing.assert_allclose(h.numpy(), E[[[0, 1, 3]]], rtol=1e-6)
    assert h._keras_mask.numpy().tolist() == [[False, True, True]]
    x = gt.constant([[1.0, -1.0, 0.5]])
    logits = layer(x, reverse=True)
    assert logits.device == device
    np.testing.assert_allclose(logits.numpy(), [[0.0, 0.14971940219402313, 0.29777011275291443,
                                                 0.4425569176673889]], rtol=1e-5, atol=1e-7)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.reduce_sum(layer(x, reverse=True) ** 2)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               [[1.196329116821289, 1.3685166835784912, 1.5407040119171143]],
                               rtol=1e-5)
    np.testing.assert_allclose(
        tape.gradient(y, layer.embeddings).numpy(),
        [[0.0, 0.0, 0.0], [0.2977607548236847, -0.2977607548236847, 0.14888037741184235],
         [0.5823389887809753, -0.5823389887809753, 0.29116949439048767],
         [0.8417750000953674, -0.8417750000953674, 0.4208875000476837]], rtol=1e-5, atol=1e-7)
    assert [w.path for w in layer.weights] == ["rev/embeddings"]
    assert layer.compute_output_shape((2, 5)) == (2, 5, 3)
    assert layer.compute_output_shape((2, 3), reverse=True) == (2, 4)
    cfg = layer.get_config()
    assert (cfg["tie_weights"], cfg["reverse_dtype"], cfg["logit_soft_cap"]) == (True, None, 2.0)
    assert cfg["mask_zero"] is True and (cfg["input_dim"], cfg["output_dim"]) == (4, 3)


def test_reversible_embedding_untied_saves(tmp_path):
    layer = keras.layers.ReversibleEmbedding(4, 3, tie_weights=False, name="re2",
                                             embeddings_initializer="ones")
    model = keras.Sequential([keras.Input((3,), dtype="int32"), layer])
    assert model.output_shape == (None, 3, 3)
    assert [(w.path, tuple(w.shape)) for w in layer.weights] == [
        ("re2/embeddings", (4, 3)), ("re2/reverse_embeddings", (3, 4))]
    layer.set_weights([E, np.arange(12, dtype="float32").reshape(3, 4) - 5])
    out = layer(gt.constant([[1.0, 2.0, -1.0]]), reverse=True)
    assert out.numpy().tolist() == [[-10.0, -8.0, -6.0, -4.0]]
    assert layer.compute_mask(np.array([[0, 1]])) is None
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = keras.models.load_model(path)
    back = again.layers[-1]
    assert type(back).__name__ == "ReversibleEmbedding" and back.tie_weights is False
    np.testing.assert_array_equal(back.reverse_embeddings.numpy(),
                                  layer.reverse_embeddings.numpy())


def test_reversible_embedding_errors():
    layer = keras.layers.ReversibleEmbedding(4, 3)
    layer(np.array([[1]]))
    with pytest.raises(ValueError, match="output_dim=3.*shape \\(1, 2\\)"):
        layer(gt.constant([[1.0, 2.0]]), reverse=True)
    with pytest.raises(ValueError, match="logit_soft_cap must be positive"):
        keras.layers.ReversibleEmbedding(4, 3, logit_soft_cap=0)


def test_dtype_policy_map():
    dp = keras.dtype_policies
    m = dp.DTypePolicyMap(default_policy="float32")
    m["encoder/layer_0/dense"] = "float64"
    m["encoder/.*"] = dp.DTypePolicy("float16")
    m["decoder"] = "float64"
    assert m["encoder/layer_0/dense"].name == "float64"
    assert m["encoder/attention/query"].name == "float16"
    assert m["decoder/attention"].name == "float32"
    assert (m.name, m.compute_dtype, m.variable_dtype, len(m)) == ("map_float32", "float32",
                                                                    "float32", 3)
    m["encoder/attention/.*"] = "float64"
    with pytest.raises(ValueError, match="matches multiple dtype policy"):
        m["encoder/attention/query"]
    with pytest.raises(ValueError, match="already exist in the DTypePolicyMap"):
        m["decoder"] = "float16"
    with pytest.raises(ValueError, match="cannot be a `DTypePolicyMap`"):
        dp.DTypePolicyMap(default_policy=m)
    with pytest.raises(TypeError, match="must be a dict"):
        dp.DTypePolicyMap(policy_map=[1])
    small = dp.DTypePolicyMap(default_policy="float32")
    small["dense/kernel"] = "float16"
    assert small.get_config() == {"default_policy": "float32", "policy_map": {
        "dense/kernel": {"module": "keras", "class_name": "DTypePolicy",
                         "config": {"name": "float16"}, "registered_name": None}}}
    back = dp.DTypePolicyMap.from_config(small.get_config())
    assert back["dense/kernel"].name == "float16" and list(back) == ["dense/kernel"]
    # a layer given a map takes the entry for its name
    dense = keras.layers.Dense(2, name="dd", dtype=dp.DTypePolicyMap(
        default_policy="float32", policy_map={"d.*": "float64"}))
    assert dense.dtype_policy.name == "float64" and dense.dtype == "float64"


def test_dtype_policies_get_serialize():
    dp = keras.dtype_policies
    p = dp.FloatDTypePolicy("mixed_float16")
    assert isinstance(p, dp.DTypePolicy)
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("mixed_float16", "float16", "float32")
    assert repr(p) == '<DTypePolicy "mixed_float16">'
    assert not isinstance(dp.get("float32"), dp.FloatDTypePolicy)
    cfg = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float16"},
           "registered_name": None}
    assert dp.serialize(dp.DTypePolicy("float16")) == cfg
    assert dp.deserialize(cfg) == dp.DTypePolicy("float16")
    assert dp.get(cfg).name == "float16"
    with pytest.raises(ValueError, match="unknown dtype policy class"):
        dp.deserialize({"class_name": "Nope", "config": {}})


class _Counting(keras.layers.Dense):
    calls = 0

    def call(self, x):
        type(self).calls += 1
        return super().call(x)


def _run(mode, **kw):
    _Counting.calls = 0
    x = gt.constant(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    if mode == "none":
        layer = _Counting(5, activation="tanh", kernel_initializer="ones", name="dd")
    else:
        with keras.RematScope(mode=mode, **kw):
            layer = _Counting(5, activation="tanh", kernel_initializer="ones", name="dd")
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.reduce_sum(layer(x) ** 2)
    gx, gk = tape.gradient(y, [x, layer.kernel])
    return y.numpy(), gx.numpy(), gk.numpy(), _Counting.calls


@pytest.mark.parametrize("mode, kw, calls", [
    ("full", {}, 2), ("list_of_layers", {"layer_names": ["dd"]}, 2),
    ("list_of_layers", {"layer_names": ["other"]}, 1), ("activations", {}, 1),
    # (larger_than: one more call, the output-shape probe, once per input shape)
    ("larger_than", {"output_size_threshold": 10}, 3),
    ("larger_than", {"output_size_threshold": 15}, 2), (None, {}, 1)])
def test_remat_scope_same_values_call_repeated(mode, kw, calls):
    ref = _run("none")
    got = _run(mode, **kw)
    for a, b in zip(ref[:3], got[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert got[3] == calls


def test_remat_scope_nesting_and_errors():
    with keras.RematScope("full"):
        with keras.RematScope(None):
            inner = keras.layers.Dense(2)
        outer = keras.layers.Dense(2)
    assert inner._remat_mode is None and outer._remat_mode.mode == "full"
    with pytest.raises(ValueError, match="Invalid mode 'fast'"):
        keras.RematScope("fast")
    f = keras.remat(lambda v: gt.sin(v) * v)
    x = gt.constant([0.5, 1.5])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.reduce_sum(f(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               np.cos([0.5, 1.5]) * [0.5, 1.5] + np.sin([0.5, 1.5]), rtol=1e-6)
    with pytest.raises(TypeError, match="expected a callable"):
        keras.remat(3)


def test_device_version_tree():
    with keras.device("cpu:0"):
        assert gt.constant(1.0).device == gt.get_device("cpu:0")
    assert keras.version() == "3.15.1"
    import importlib
    assert importlib.import_module("gradtape.keras.tree").flatten({"b": 1, "a": 2}) == [2, 1]
    assert importlib.import_module("gradtape.keras.dtype_policies").DTypePolicyMap
