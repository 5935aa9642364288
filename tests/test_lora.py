"""Keras 3's LoRA on Dense, EinsumDense and Embedding: ``lora_rank`` / ``lora_alpha``,
``enable_lora``, the adapters (shapes, dtypes, order, trainability, regularization), the
merged ``kernel`` / ``embeddings``, configs, gradients and training, saving and loading.

The expected values are TensorFlow 2.21's (Keras 3.15) for the same models given the same
weights (:func:`_init`). tests/data/tf_files/lora.keras and lora.weights.h5.gz were written by
TensorFlow from :func:`_model` after :func:`_init` and 3 ``train_on_batch`` steps of
``Adam(0.05)`` on ``(IDS, Y)`` (``model.save`` / ``model.save_weights``; the zip recompressed,
the HDF5 file gzipped).
"""
import gzip
import os
import shutil

import numpy as np
import pytest

import gradtape as gt
from gradtape.checkpoint import CheckpointError, read_arrays

keras = gt.keras
L = gt.keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data", "tf_files")


def _x(shape, k=0):
    n = int(np.prod(shape))
    return np.sin(np.arange(n, dtype=np.float64) * 0.37 + k).reshape(shape).astype(np.float32)


def _model(lora=True):
    inp = keras.Input((4,), dtype="int32")
    rank = {"lora_rank": 2} if lora else {}
    h = L.Embedding(10, 6, name="emb", **rank)(inp)
    h = L.EinsumDense("abc,cd->abd", (4, 5), bias_axes="d", activation="tanh", name="ein",
                      **({"lora_rank": 3, "lora_alpha": 6} if lora else {}))(h)
    h = L.Flatten()(h)
    out = L.Dense(3, kernel_regularizer=keras.regularizers.L2(0.01), name="out", **rank)(h)
    return keras.Model(inp, out, name="lora")


def _init(model):
    for i, w in enumerate(model.weights):
        w.assign(_x(w.shape, i) * 0.5)


def _sums(arrays, absolute=False):
    f = np.abs if absolute else (lambda a: a)
    return [float(np.sum(f(np.asarray(a)), dtype=np.float64)) for a in arrays]


IDS = (np.arange(12).reshape(3, 4) * 7 % 10).astype(np.int32)
Y = _x((3, 3), 9)

# TensorFlow's values
PREDICT0 = [[-0.8549325, -0.6054512, -0.2740249], [-0.8646513, -1.016448, -1.030673],
            [-0.7875601, -0.7974752, -0.6994555]]
MERGED_SUMS = [1.431039, -1.956347, 3.636124]
LOSS0, LOSSES = 0.3001545, [0.04856022, 0.01022611]
GRAD_SUMS = [-0.01561508, -0.07452322, -0.2458684, -0.1122289, 0.131685, -0.4937678, -3.588031,
             -0.3564379]
GRAD_ABS = [0.515968, 0.6154242, 1.587891, 1.857411, 1.082558, 0.4937678, 3.588031, 0.3564379]
SGD_LOSSES = [0.3001545, 0.2187199, 0.2330186]
SGD_SUMS = [2.694603, 1.404389, -1.630392, -1.586718, -2.131422, -0.444718, 0.716338, 2.174419,
            1.322683, -0.4430233, -2.358951]
SGD_ABS = [18.88357, 6.755702, 3.632215, 9.230687, 2.131422, 5.811242, 4.729673, 19.0695,
           1.322683, 12.36444, 2.358951]
FILE_PREDICT = [[-0.121519, 0.02983618, 0.2258043], [-0.9377925, -1.06207, -1.080731],
                [-0.7820702, -1.109033, -1.285289]]
FILE_LOADED_SUMS = [0.5499134, 0.0, 0.0, 1.861118, -2.064695, 0.0, 0.0, 2.329608, 1.287309,
                    0.0, 0.0]
FILE_AFTER_STEP = [0.5499134, 0.1959815, 0.01586813, 1.861118, -2.05216, -0.00763434,
                   0.1609717, 2.329608, 1.260435, -0.5037061, 0.1073345]
MIXED_DENSE = [[-0.1154785, -0.07348633, -0.02172852], [1.139648, 1.113281, 0.9355469]]
MIXED_EMB = [[[-0.456543, -0.4111328, -0.3100586], [-0.04486084, -0.1424561, -0.2207031],
              [-0.4570312, -0.6757812, -0.8032227]]]


def _names(variables):
    return [v.name.split("/", 1)[1].partition(":")[0] for v in variables]


# --- the adapters -------------------------------------------------------------------------------

def test_enable_lora_adds_float32_adapters_and_freezes_the_weight():
    d = L.Dense(3)
    d.build((None, 5))
    kernel = d.kernel
    assert kernel is d.weights[0] and not d.lora_enabled and d.lora_rank is None
    d.enable_lora(2)
    assert d.lora_enabled and d.lora_rank == 2 and d.lora_alpha == 2
    assert _names(d.weights) == ["kernel", "bias", "lora_kernel_a", "lora_kernel_b"]
    assert _names(d.trainable_weights) == ["bias", "lora_kernel_a", "lora_kernel_b"]
    assert _names(d.non_trainable_weights) == ["kernel"] and not kernel.trainable
    assert d.lora_kernel_a.shape == (5, 2) and d.lora_kernel_b.shape == (2, 3)
    assert np.all(d.lora_kernel_b.numpy() == 0)                 # (b_initializer "zeros")
    a = d.lora_kernel_a.numpy()                                 # (he_uniform: sqrt(6 / 5))
    assert np.abs(a).max() <= np.sqrt(6 / 5) and np.abs(a).max() > 0.3
    assert [p for p, _ in d.named_variables()] == ["kernel", "bias", "lora_kernel_a",
                                                   "lora_kernel_b"]

    e = L.EinsumDense("abc,cde->abde", (4, 2, 3), bias_axes="de", lora_rank=2, lora_alpha=6)
    e.build((None, 4, 5))
    assert e.lora_alpha == 6            # (EinsumDense keeps the lora_alpha it was given)
    assert [tuple(w.shape) for w in e.weights] == [(5, 2, 3), (2, 3), (5, 2, 2), (2, 3)]
    assert _names(e.trainable_weights) == ["bias", "lora_kernel_a", "lora_kernel_b"]

    m = L.Embedding(10, 3, lora_rank=2, lora_alpha=5)
    m.build(None)
    assert m.lora_alpha == 2            # (Keras 3.15's Embedding builds with alpha = rank)
    assert [(n, tuple(w.shape), w.trainable) for n, w in zip(_names(m.weights), m.weights)] == [
        ("embeddings", (10, 3), False), ("lora_embeddings_a", (10, 2), True),
        ("lora_embeddings_b", (2, 3), True)]
    d = L.Dense(3, lora_rank=4, lora_alpha=8)
    d.build((None, 2))
    assert d.lora_alpha == 4            # (as Dense: alpha = rank)
    d = L.Dense(3)
    d.build((None, 2))
    d.enable_lora(3, lora_alpha=1.5, a_initializer="ones")
    assert d.lora_alpha == 1.5 and np.all(d.lora_kernel_a.numpy() == 1)


def test_enable_lora_errors_as_keras():
    with pytest.raises(ValueError, match=r"^Cannot enable lora on a layer that isn't yet "
                       r"built\.$"):
        L.Dense(3).enable_lora(2)
    d = L.Dense(3, lora_rank=2)
    d.build((None, 4))
    with pytest.raises(ValueError, match=r"^lora is already enabled\. This can only be done "
                       r"once per layer\.$"):
        d.enable_lora(2)
    c = L.Dense(3, kernel_constraint="non_neg")
    c.build((None, 4))
    with pytest.raises(ValueError, match=r"^Lora is incompatible with kernel constraints\. In "
                       r"order to enable lora on this layer, remove the `kernel_constraint` "
                       r"argument\.$"):
        c.enable_lora(2)
    assert len(c.weights) == 2 and c.weights[0].trainable
    with pytest.raises(ValueError, match="incompatible with kernel constraints"):
        L.EinsumDense("ab,bc->ac", 3, kernel_constraint="non_neg", lora_rank=2)
    e = L.Embedding(3, 3, embeddings_constraint="non_neg")
    e.build(None)
    with pytest.raises(ValueError, match=r"^Lora is incompatible with embedding constraints\. "
                       r"In order to enable lora on this layer, remove the "
                       r"`embeddings_constraint` argument\.$"):
        e.enable_lora(2)
    d = L.Dense(3)
    d.build((None, 4))
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="Dense.enable_lora: rank must be a positive int"):
            d.enable_lora(bad)
    with pytest.raises(TypeError, match="lora_alpha must be None or a number"):
        d.enable_lora(2, lora_alpha="2")
    assert not d.lora_enabled and len(d.weights) == 2 and d.kernel is d.weights[0]
    with pytest.raises(ValueError, match="lora_rank must be None or a non-negative int"):
        L.Dense(3, lora_rank=-2)
    with pytest.raises(ValueError, match="quantized layers are not supported"):
        L.EinsumDense("ab,bc->ac", 3, quantization_config={"mode": "int8"})
    assert L.Dense(3, lora_rank=0).lora_rank == 0               # (0: no LoRA, as Keras)
    with pytest.raises(AttributeError, match="build the layer before accessing `kernel`"):
        L.Dense(3).kernel


def test_kernel_and_embeddings_read_merged():
    """``layer.kernel`` (``embeddings``) is the effective weight once LoRA is enabled, and the
    layer computes with it."""
    d = L.Dense(3, lora_rank=2)
    d.build((None, 4))
    for i, w in enumerate(d.weights):
        w.assign(_x(w.shape, i))
    k, a, b = (w.numpy() for w in (d.weights[0], d.lora_kernel_a, d.lora_kernel_b))
    np.testing.assert_allclose(d.kernel.numpy(), k + 1.0 * a @ b, rtol=1e-6)
    x = _x((2, 4), 3)
    np.testing.assert_allclose(d(x).numpy(), x @ (k + a @ b) + d.bias.numpy(), rtol=1e-5)
    x3 = _x((2, 5, 4), 3)
    np.testing.assert_allclose(d(x3).numpy(), x3 @ (k + a @ b) + d.bias.numpy(), rtol=1e-5)
    e = L.EinsumDense("abc,cde->abde", (4, 2, 3), lora_rank=2, lora_alpha=6)
    e.build((None, 4, 5))
    for i, w in enumerate(e.weights):
        w.assign(_x(w.shape, i))
    k, a, b = (w.numpy() for w in e.weights)
    merged = k + 3.0 * np.tensordot(a, b, axes=1)
    np.testing.assert_allclose(e.kernel.numpy(), merged, rtol=1e-5, atol=1e-6)
    x = _x((2, 4, 5), 1)
    np.testing.assert_allclose(e(x).numpy(), np.einsum("abc,cde->abde", x, merged), rtol=1e-5,
                               atol=1e-5)
    m = L.Embedding(5, 3)
    m.build(None)
    m.enable_lora(2, lora_alpha=4, b_initializer="ones")
    t, a = m.weights[0].numpy(), m.lora_embeddings_a.numpy()
    np.testing.assert_allclose(m.embeddings.numpy(), t + 2.0 * a @ np.ones((2, 3)), rtol=1e-6)
    np.testing.assert_allclose(m(np.array([4, 0, -1])).numpy(), m.embeddings.numpy()[[4, 0, 4]],
                               rtol=1e-6)
    model = _model()
    _init(model)
    merged = [model.get_layer("emb").embeddings, model.get_layer("ein").kernel,
              model.get_layer("out").kernel]
    np.testing.assert_allclose(_sums(merged), MERGED_SUMS, rtol=1e-5)
    np.testing.assert_allclose(model.predict(IDS, verbose=0), PREDICT0, rtol=1e-5, atol=1e-6)


def test_config_has_lora_only_when_set_and_rebuilds_it():
    plain = L.Dense(3).get_config()
    assert "lora_rank" not in plain and "lora_alpha" not in plain
    d = L.Dense(3, kernel_regularizer="l2")
    d.build((None, 4))
    d.enable_lora(2, lora_alpha=3)
    config = d.get_config()
    assert config["lora_rank"] == 2 and config["lora_alpha"] == 3
    assert config["kernel_regularizer"]["class_name"] == "L2"
    again = L.Dense.from_config(config)
    again.build((None, 4))
    # (rebuilt from lora_rank: Keras 3.15's Dense enables it with alpha = rank)
    assert again.lora_enabled and again.lora_alpha == 2 and len(again.trainable_weights) == 3
    e = L.EinsumDense("ab,bc->ac", 3, lora_rank=2, lora_alpha=5).get_config()
    assert e["lora_rank"] == 2 and e["lora_alpha"] == 5
    m = L.Embedding(4, 2, lora_rank=3).get_config()
    assert m["lora_rank"] == 3 and m["lora_alpha"] == 3
    model = _model()
    clone = keras.models.model_from_json(model.to_json())
    assert [layer.lora_enabled for layer in clone.layers if hasattr(layer, "lora_enabled")] == \
        [True, True, True]
    assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in model.weights]


def test_regularization_penalizes_the_adapters_not_the_frozen_weight():
    """Keras counts the trainable weights' penalties: with LoRA the adapters' (which take the
    kernel's regularizer), not the frozen kernel's."""
    r = L.Dense(3, kernel_regularizer=keras.regularizers.L2(0.1), bias_regularizer="l1")
    r.build((None, 4))
    r.bias.assign([1.0, 2.0, 3.0])
    assert len(r.losses) == 2
    r.enable_lora(2, a_initializer="ones", b_initializer="ones")
    np.testing.assert_allclose([float(v) for v in r.losses], [0.06, 0.8, 0.6], rtol=1e-6)
    model = _model()
    _init(model)
    model(IDS)
    np.testing.assert_allclose([float(v) for v in model.losses], LOSSES, rtol=1e-5)


# --- training -----------------------------------------------------------------------------------

def test_gradients_and_sgd_steps_match_tensorflow():
    model = _model()
    _init(model)
    with gt.GradientTape() as tape:
        loss = gt.reduce_mean((model(IDS) - Y) ** 2) + gt.add_n(model.losses)
    grads = tape.gradient(loss, model.trainable_weights)
    assert len(grads) == 8            # (the adapters and the biases: no frozen weight)
    np.testing.assert_allclose(float(loss), LOSS0, rtol=1e-6)
    grads = [gt.convert_to_tensor(g).numpy() for g in grads]
    np.testing.assert_allclose(_sums(grads), GRAD_SUMS, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(_sums(grads, True), GRAD_ABS, rtol=1e-5)
    before = [w.numpy() for w in model.non_trainable_weights]
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")
    losses = [float(model.train_on_batch(IDS, Y)) for _ in range(3)]
    np.testing.assert_allclose(losses, SGD_LOSSES, rtol=1e-6)
    np.testing.assert_allclose(_sums(model.get_weights()), SGD_SUMS, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_sums(model.get_weights(), True), SGD_ABS, rtol=1e-6)
    for w, b in zip(model.non_trainable_weights, before):
        np.testing.assert_array_equal(w.numpy(), b)


def test_lora_on_the_strict_device():
    with gt.device("strict:0"):
        d = L.Dense(3, lora_rank=2)
        e = L.Embedding(6, 3, lora_rank=2)
        ein = L.EinsumDense("abc,cde->abde", (4, 2, 3), bias_axes="de", lora_rank=2)
        x = gt.constant(_x((2, 4)))
        with gt.GradientTape() as tape:
            y = gt.reduce_sum(d(x)) + gt.reduce_sum(e(gt.constant(np.array([1, 2])))) + \
                gt.reduce_sum(ein(gt.constant(_x((2, 4, 5)))))
        weights = d.trainable_weights + e.trainable_weights + ein.trainable_weights
        grads = tape.gradient(y, weights)
        assert [tuple(g.shape) for g in grads] == [tuple(w.shape) for w in weights]
        assert d.kernel.device == "strict:0"
        late = L.Dense(3)
        late(x)
        late.enable_lora(2)
        assert late.lora_kernel_a.device == "strict:0"


def test_mixed_precision_keeps_the_adapters_float32():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        d = L.Dense(3, lora_rank=2)
        d.build((None, 4))
        inp = keras.Input((3,), dtype="int32")
        e = L.Embedding(6, 3, lora_rank=2)
        m = keras.Model(inp, e(inp))
        for i, w in enumerate(d.weights + e.weights):
            w.assign(_x(w.shape, i) * 0.5)
        assert [w.dtype.name for w in d.weights + e.weights] == ["float32"] * 7
        assert d.kernel.dtype.name == "float16"
        y = d(_x((2, 4), 5))
        assert y.dtype.name == "float16"
        np.testing.assert_allclose(y.numpy(), MIXED_DENSE, rtol=1e-3)
        z = m.predict(np.array([[1, 5, 0]]), verbose=0)
        np.testing.assert_allclose(z, MIXED_EMB, rtol=1e-3)
        with gt.GradientTape() as tape:
            s = gt.reduce_sum(gt.cast(d(_x((2, 4), 5)), "float32"))
        assert [g.dtype.name for g in tape.gradient(s, d.trainable_weights)] == ["float32"] * 3
        keras.mixed_precision.set_global_policy("float64")
        d = L.Dense(3, lora_rank=2)
        d.build((None, 4))
        assert [w.dtype.name for w in d.weights] == ["float64", "float64", "float32", "float32"]
        assert d.kernel.dtype.name == "float64" and d(_x((2, 4))).dtype.name == "float64"
    finally:
        keras.mixed_precision.set_global_policy(None)     # (back to floatx())


# --- saving -------------------------------------------------------------------------------------

def _trained():
    model = _model()
    _init(model)
    model.compile(keras.optimizers.Adam(0.05), "mse")
    for _ in range(2):
        model.train_on_batch(IDS, Y)
    return model


def test_save_and_load_merge_the_adapters_as_keras(tmp_path):
    """model.save / save_weights write each LoRA layer's weight merged with its adapters and
    leave the adapters out; loading zeroes them: the same predictions."""
    pytest.importorskip("safetensors", reason="gradtape's own files need safetensors")
    model = _trained()
    want = model.predict(IDS, verbose=0)
    merged = [model.get_layer("emb").embeddings.numpy(), model.get_layer("ein").kernel.numpy(),
              model.get_layer("out").kernel.numpy()]
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = keras.models.load_model(path)
    np.testing.assert_array_equal(again.predict(IDS, verbose=0), want)
    adapters = [w for w in again.trainable_weights if "lora" in w.name]
    assert len(adapters) == 6 and all(not np.any(w.numpy()) for w in adapters)
    np.testing.assert_array_equal(again.get_layer("out").weights[0].numpy(), merged[2])
    assert int(again.optimizer.iterations.numpy()) == 2
    again.train_on_batch(IDS, Y)            # (Adam's momentum moves the zeroed adapters)
    assert np.any(again.get_layer("out").lora_kernel_a.numpy())

    wpath = str(tmp_path / "m.weights.safetensors")
    model.save_weights(wpath)
    arrays, _ = read_arrays(wpath)
    assert sorted(arrays) == ["layers.1.embeddings", "layers.2.bias", "layers.2.kernel",
                              "layers.4.bias", "layers.4.kernel"]
    np.testing.assert_array_equal(arrays["layers.4.kernel"], merged[2])
    fresh = _model()
    fresh.load_weights(wpath)
    np.testing.assert_array_equal(fresh.predict(IDS, verbose=0), want)
    plain = _model(lora=False)                  # (the file fits the model without LoRA)
    plain.load_weights(wpath)
    np.testing.assert_array_equal(plain.predict(IDS, verbose=0), want)
    for w, m in zip([plain.weights[0], plain.weights[1], plain.weights[3]], merged):
        np.testing.assert_array_equal(w.numpy(), m)
    plain.save_weights(str(tmp_path / "plain.weights.safetensors"))
    fresh.load_weights(str(tmp_path / "plain.weights.safetensors"))
    np.testing.assert_array_equal(fresh.predict(IDS, verbose=0), want)
    bad = keras.Sequential([keras.Input((4,)), L.Dense(3, lora_rank=2)])
    before = bad.get_weights()
    with pytest.raises(CheckpointError, match="does not match"):
        bad.load_weights(wpath)
    for w, b in zip(bad.get_weights(), before):
        np.testing.assert_array_equal(w, b)


def _unzipped(name, tmp_path):
    out = str(tmp_path / name)
    with gzip.open(os.path.join(DATA, name + ".gz"), "rb") as fin, open(out, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return out


def test_loading_tensorflows_lora_files(tmp_path):
    """lora.keras: predictions as TensorFlow's, merged weights with zeroed adapters (Keras'
    load_own_variables), Adam's state restored (one more step as TensorFlow's)."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    model = keras.models.load_model(os.path.join(DATA, "lora.keras"))
    assert [layer.lora_enabled for layer in model.layers if hasattr(layer, "lora_enabled")] == \
        [True, True, True]
    assert model.get_layer("ein").lora_alpha == 6 and model.get_layer("out").lora_alpha == 2
    np.testing.assert_allclose(model.predict(IDS, verbose=0), FILE_PREDICT, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(_sums(model.get_weights()), FILE_LOADED_SUMS, rtol=1e-6,
                               atol=1e-7)
    model.train_on_batch(IDS, Y)
    np.testing.assert_allclose(_sums(model.get_weights()), FILE_AFTER_STEP, rtol=1e-4,
                               atol=1e-6)
    built = _model()
    _init(built)
    built.load_weights(_unzipped("lora.weights.h5", tmp_path))
    np.testing.assert_allclose(built.predict(IDS, verbose=0), FILE_PREDICT, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(_sums(built.get_weights()), FILE_LOADED_SUMS, rtol=1e-6,
                               atol=1e-7)
    plain = _model(lora=False)
    plain.load_weights(_unzipped("lora.weights.h5", tmp_path))
    np.testing.assert_allclose(plain.predict(IDS, verbose=0), FILE_PREDICT, rtol=1e-5,
                               atol=1e-6)
