"""Layers, Module variable tracking and initializers: values against NumPy."""
import math

import numpy as np
import pytest

import gradtape as gt
from gradtape import initializers, layers


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- Module: finding variables -----------------------------------------------------------------

class Block(layers.Module):
    def __init__(self):
        super().__init__()
        self.w = gt.Variable(np.ones(2), name="w")
        self.frozen = gt.Variable(np.zeros(1), trainable=False, name="frozen")
        self.parts = [gt.Variable(np.ones(3), name="p0"), {"b": gt.Variable(np.ones(4), name="pb")}]
        self.table = {"k": gt.Variable(np.ones(5), name="k")}
        self.alias = self.w                           # the same Variable twice: listed once
        self.not_a_variable = np.ones(3)


class Outer(layers.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.blocks = [Block()]
        self.shared = self.block                      # a shared sub-module: listed once


def test_module_finds_variables_in_attributes_lists_dicts_and_submodules():
    m = Outer()
    paths = [p for p, _ in m.named_variables()]
    # attributes sorted by name, as tf.Module (w is met first as its alias)
    assert paths == ["block.alias", "block.frozen", "block.parts.0", "block.parts.1.b",
                     "block.table.k", "blocks.0.alias", "blocks.0.frozen", "blocks.0.parts.0",
                     "blocks.0.parts.1.b", "blocks.0.table.k"]
    assert len(m.variables) == 10
    assert len(m.trainable_variables) == 8 and len(m.non_trainable_variables) == 2
    assert all(not v.trainable for v in m.non_trainable_variables)
    assert len(m.submodules) == 2


def test_frozen_layer_lists_its_variables_as_non_trainable():
    model = gt.keras.Sequential([layers.Dense(3), layers.Dense(2)])
    model(rand(4, 5))
    model.layers[0].trainable = False
    assert len(model.trainable_variables) == 2 and len(model.non_trainable_variables) == 2
    model.trainable = False
    assert model.trainable_variables == [] and len(model.variables) == 4


# --- Dense --------------------------------------------------------------------------------------

def test_dense_infers_input_size_and_computes_xw_plus_b():
    layer = layers.Dense(4, activation="relu", kernel_initializer=initializers.GlorotUniform(0))
    assert layer.variables == []
    x = rand(3, 5)
    y = layer(x)
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    assert k.shape == (5, 4) and b.shape == (4,)
    np.testing.assert_allclose(y.numpy(), np.maximum(x @ k + b, 0), rtol=1e-6)
    assert [v.name for v in layer.trainable_variables] == [f"{layer.name}/kernel:0",
                                                           f"{layer.name}/bias:0"]
    y3 = layer(rand(2, 3, 5))
    assert tuple(y3.shape) == (2, 3, 4)


def test_dense_default_initializers_are_glorot_uniform_and_zeros():
    layer = layers.Dense(300)
    layer(np.zeros((1, 200)))
    limit = math.sqrt(6 / (200 + 300))
    k = layer.kernel.numpy()
    assert np.abs(k).max() <= limit and np.abs(k).max() > 0.9 * limit
    assert k.std() == pytest.approx(limit / math.sqrt(3), rel=0.05)
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(300))


def test_wrong_input_names_layer_and_shapes_and_changes_nothing():
    layer = layers.Dense(4, name="head")
    with pytest.raises(ValueError, match=r"Dense layer 'head': expected input of rank >= 2, "
                                         r"got shape \(5,\)"):
        layer(np.ones(5))
    assert layer.variables == [] and not layer.built
    layer(np.ones((2, 5)))
    before = [v.numpy().copy() for v in layer.variables]
    ids = [id(v) for v in layer.variables]
    with pytest.raises(ValueError, match=r"Dense layer 'head': expected input of shape "
                                         r"\(\.\.\., 5\).*got shape \(2, 6\)"):
        layer(np.ones((2, 6)))
    assert [id(v) for v in layer.variables] == ids
    for a, v in zip(before, layer.variables):
        np.testing.assert_array_equal(a, v.numpy())
    conv = layers.Conv2D(2, 3, name="c")
    with pytest.raises(ValueError, match=r"Conv2D layer 'c': expected input of shape "
                                         r"\(None, None, None, None\), got shape \(8, 8, 1\)"):
        conv(np.ones((8, 8, 1)))
    assert conv.variables == []


def test_unknown_activation_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown activation 'rellu'; known activations: "
                                         r"\[.*'relu'.*'sigmoid'.*\]"):
        layers.Dense(3, activation="rellu")


@pytest.mark.parametrize("name,fn", [
    ("relu", lambda x: np.maximum(x, 0)), ("tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("linear", lambda x: x),
    ("softmax", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
])
def test_activations_by_name(name, fn):
    x = rand(2, 3)
    np.testing.assert_allclose(layers.Activation(name)(x).numpy(), fn(x), rtol=1e-5, atol=1e-6)


def test_numpy_float64_input_is_cast_to_the_layer_dtype():
    y = layers.Dense(2)(np.ones((1, 3)))
    assert y.dtype == gt.float32
    y64 = layers.Dense(2, dtype="float64")(np.ones((1, 3), np.float32))
    assert y64.dtype == gt.float64


# --- convolution and pooling ----------------------------------------------------------------------

def _np_conv_valid(x, w):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, o), np.float64)
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j, :] = np.tensordot(x[:, i:i + kh, j:j + kw, :], w, axes=3)
    return out


def test_conv2d_matches_numpy_and_has_tf_kernel_layout():
    x = rand(2, 6, 5, 3)
    layer = layers.Conv2D(4, (3, 2), activation=None)
    y = layer(x)
    assert tuple(layer.kernel.shape) == (3, 2, 3, 4)
    np.testing.assert_allclose(y.numpy(), _np_conv_valid(x, layer.kernel.numpy()) +
                               layer.bias.numpy(), rtol=1e-5, atol=1e-5)
    same = layers.Conv2D(2, 3, strides=2, padding="same")
    assert tuple(same(x).shape) == (2, 3, 3, 2)


def test_pooling_and_flatten():
    x = np.arange(2 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 1)
    mx = layers.MaxPool2D()(x).numpy()
    av = layers.AveragePooling2D(pool_size=2)(x).numpy()
    want_max = x.reshape(2, 2, 2, 2, 2, 1).max(axis=(2, 4))
    want_avg = x.reshape(2, 2, 2, 2, 2, 1).mean(axis=(2, 4))
    np.testing.assert_array_equal(mx, want_max)
    np.testing.assert_allclose(av, want_avg)
    assert layers.MaxPooling2D is layers.MaxPool2D
    flat = layers.Flatten()(x)
    assert tuple(flat.shape) == (2, 16)
    np.testing.assert_array_equal(flat.numpy(), x.reshape(2, 16))


# --- dropout and normalisation --------------------------------------------------------------------

def test_dropout_only_when_training_and_seeded():
    x = np.ones((200, 50), np.float32)
    layer = layers.Dropout(0.25, seed=7)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    y = layer(x, training=True).numpy()
    kept = y != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], 1 / 0.75)
    y2 = layer(x, training=True).numpy()
    assert not np.array_equal(y, y2)                 # a new mask each call
    np.testing.assert_array_equal(layers.Dropout(0.25, seed=7)(x, training=True).numpy(), y)


def test_training_flag_propagates_through_sequential():
    model = gt.keras.Sequential([layers.Dense(8), layers.Dropout(0.5, seed=1)])
    x = np.ones((4, 3))
    a = model(x).numpy()
    np.testing.assert_array_equal(a, model(x, training=False).numpy())
    assert (model(x, training=True).numpy() == 0).any()


def test_layer_normalization_matches_numpy():
    x = rand(3, 6) * 3 + 1
    layer = layers.LayerNormalization()
    y = layer(x).numpy()
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    assert [p for p, _ in layer.named_variables()] == ["gamma", "beta"]


def test_batch_normalization_statistics():
    x = rand(16, 3) * 2 + 5
    bn = layers.BatchNormalization(momentum=0.9)
    y_inf = bn(x).numpy()                               # moving stats 0 / 1: nearly identity
    np.testing.assert_allclose(y_inf, x / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.zeros(3))
    y = bn(x, training=True).numpy()
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * x.var(0), rtol=1e-5)
    assert len(bn.trainable_variables) == 2 and len(bn.non_trainable_variables) == 2
    bn.trainable = False                                # frozen: inference mode, no update
    before = bn.moving_mean.numpy().copy()
    bn(x, training=True)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)


def test_batch_normalization_on_images_and_gradients():
    x = rand(4, 3, 3, 2)
    bn = layers.BatchNormalization()
    with gt.GradientTape() as tape:
        y = bn(x, training=True)
        loss = gt.reduce_sum(y * y)
    grads = tape.gradient(loss, bn.trainable_variables)
    assert tuple(y.shape) == x.shape
    assert all(g is not None for g in grads)
    np.testing.assert_allclose(y.numpy().mean(axis=(0, 1, 2)), 0, atol=1e-5)


def test_embedding_lookup_and_gradient():
    emb = layers.Embedding(10, 4, embeddings_initializer=initializers.RandomNormal(seed=1))
    ids = np.array([[1, 2], [2, 9]])
    with gt.GradientTape() as tape:
        out = emb(ids)
        loss = gt.reduce_sum(out)
    table = emb.embeddings.numpy()
    np.testing.assert_array_equal(out.numpy(), table[ids])
    g = tape.gradient(loss, emb.embeddings).numpy()
    counts = np.bincount(ids.ravel(), minlength=10)[:, None]
    np.testing.assert_array_equal(g, np.broadcast_to(counts, (10, 4)))


def test_sequential_trains():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    model = gt.keras.Sequential([layers.Dense(16, activation="tanh"), layers.Dense(1)])
    opt = gt.optimizers.Adam(0.05)
    loss_fn = gt.losses.MeanSquaredError()
    first = None
    for _ in range(60):
        with gt.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        first = float(loss.numpy()) if first is None else first
    assert float(loss.numpy()) < 0.05 * first


def test_sequential_build_from_shape():
    model = gt.keras.Sequential([layers.Dense(4), layers.Dense(2)])
    model.build((None, 7))
    assert [tuple(v.shape) for v in model.variables] == [(7, 4), (4,), (4, 2), (2,)]


# --- initializers ----------------------------------------------------------------------------------

def test_initializers_seeded_and_by_name():
    a = initializers.GlorotUniform(seed=3)((20, 30)).numpy()
    b = initializers.get("glorot_uniform")
    assert isinstance(b, initializers.GlorotUniform)
    np.testing.assert_array_equal(a, initializers.GlorotUniform(seed=3)((20, 30)).numpy())
    assert not np.array_equal(a, initializers.GlorotUniform(seed=4)((20, 30)).numpy())
    he = initializers.HeNormal(seed=0)((400, 300)).numpy()
    assert he.std() == pytest.approx(math.sqrt(2 / 400), rel=0.05)
    assert np.abs(he).max() <= 2 * math.sqrt(2 / 400) / 0.87962566103423978 + 1e-6
    rn = initializers.get("random_normal")
    assert isinstance(rn, initializers.RandomNormal) and rn.stddev == 0.05
    np.testing.assert_array_equal(initializers.Zeros()((2, 2)).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(initializers.Ones()((3,), dtype="float64").numpy(), np.ones(3))
    fan_in, fan_out = initializers.compute_fans((3, 3, 4, 8))
    assert (fan_in, fan_out) == (36, 72)
    with pytest.raises(ValueError, match="known initializers"):
        initializers.get("glorot_unicorn")


def test_layers_reachable_through_keras():
    assert gt.keras.layers.Dense is layers.Dense
    assert gt.keras.Sequential is layers.Sequential
    assert gt.keras.initializers.HeNormal is initializers.HeNormal


def test_input_shape_builds_a_sequential_at_construction():
    model = gt.keras.Sequential([layers.Dense(4, input_shape=(3,)), layers.Dense(2)])
    assert [tuple(v.shape) for v in model.variables] == [(3, 4), (4,), (4, 2), (2,)]
    assert tuple(layers.Dense(2)([[1.0, 2.0]]).shape) == (1, 2)


def test_subclassed_model_with_several_inputs():
    class TwoTowers(gt.keras.Model):
        def __init__(self):
            super().__init__()
            self.left = layers.Dense(2, kernel_initializer="ones")
            self.right = layers.Dense(2, kernel_initializer="ones")

        def call(self, inputs, training=False):
            a, b = inputs
            return self.left(a) + self.right(b)

    model = TwoTowers()
    out = model([np.ones((1, 3)), np.ones((1, 4))])
    np.testing.assert_allclose(out.numpy(), [[7.0, 7.0]])
    assert [p for p, _ in model.named_variables()] == ["left.kernel", "left.bias",
                                                       "right.kernel", "right.bias"]


def test_constant_initializer_takes_arrays_that_broadcast():
    table = np.arange(12.0).reshape(4, 3) / 10
    emb = layers.Embedding(4, 3, embeddings_initializer=initializers.Constant(table))
    np.testing.assert_allclose(emb(gt.constant([1, 3])).numpy(), table[[1, 3]], rtol=1e-6)
    row = initializers.Constant([1.0, 2.0])((3, 2)).numpy()
    assert row.tolist() == [[1.0, 2.0]] * 3
    assert initializers.Constant(table).get_config()["value"][1] == [0.3, 0.4, 0.5]
    with pytest.raises(ValueError, match=r"Constant: a value of shape \(2,\) cannot fill"):
        initializers.Constant([1.0, 2.0])((3, 3))


def test_a_call_that_requires_training_gets_inference_when_none_is_set():
    class Req(layers.Layer):
        def call(self, x, training):
            return x * (2.0 if training else 1.0)
    x = np.ones((2, 3), np.float32)
    assert float(gt.reduce_sum(Req()(x))) == 6.0
    assert float(gt.reduce_sum(gt.keras.Sequential([Req()])(x))) == 6.0
    assert float(gt.reduce_sum(Req()(x, training=True))) == 12.0
    assert not gt.TensorShape(None)
