"""Mixed precision: dtype policies, autocasting in layer calls, LossScaleOptimizer, and
compile/fit under ``"mixed_float16"``. Reference numbers are from TensorFlow 2.21 (Keras
3.15) with the same weights."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import mixed_precision as gmp

keras = gt.keras
mp = keras.mixed_precision


@pytest.fixture(autouse=True)
def _reset_policy():
    gmp.set_global_policy(None)
    yield
    gmp.set_global_policy(None)


def _mixed():
    mp.set_global_policy("mixed_float16")


# --- policies --------------------------------------------------------------------------------

def test_policy_names_and_dtypes():
    p = mp.Policy("mixed_float16")
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("mixed_float16", "float16", "float32")
    for name in ("float16", "float32", "float64"):
        q = mp.DTypePolicy(name)
        assert (q.compute_dtype, q.variable_dtype) == (name, name)
    assert repr(p) == '<DTypePolicy "mixed_float16">'
    assert mp.Policy("float32") == mp.DTypePolicy("float32") and p != "mixed_float16"
    assert p.get_config() == {"name": "mixed_float16"}
    assert mp.Policy.from_config(p.get_config()) == p
    assert mp.Policy is mp.DTypePolicy


def test_policy_errors():
    for name in ("mixed_bfloat16", "bfloat16"):
        with pytest.raises(ValueError, match="gradtape has no bfloat16"):
            mp.Policy(name)
    with pytest.raises(ValueError, match="Cannot convert 'foo' to a mixed precision"):
        mp.Policy("foo")
    with pytest.raises(ValueError, match="floating type"):
        mp.Policy("int32")
    with pytest.raises(TypeError, match="'name' must be a string"):
        mp.Policy(np.float32)
    with pytest.raises(ValueError, match="Invalid `policy` argument"):
        mp.set_global_policy(3)
    with pytest.raises(ValueError, match="gradtape has no bfloat16"):
        keras.layers.Dense(2, dtype="mixed_bfloat16")


def test_global_policy_and_aliases():
    assert mp.global_policy() == mp.Policy("float32")
    assert mp.Policy().name == "float32"
    mp.set_global_policy("mixed_float16")
    assert mp.global_policy().name == "mixed_float16" and mp.dtype_policy().name == "mixed_float16"
    assert mp.Policy().name == "mixed_float16"
    mp.set_dtype_policy(mp.Policy("float64"))
    assert keras.layers.Dense(2).dtype == gt.float64
    mp.set_global_policy(None)                          # back to floatx's
    assert mp.global_policy().name == "float32"
    keras.backend.set_floatx("float64")
    try:
        assert mp.global_policy().name == "float64"
        assert keras.layers.Dense(2).variable_dtype == "float64"
    finally:
        keras.backend.set_floatx("float32")


def test_layer_dtype_properties():
    _mixed()
    d = keras.layers.Dense(3)
    assert d.dtype_policy == mp.Policy("mixed_float16")
    assert (d.compute_dtype, d.variable_dtype) == ("float16", "float32")
    assert d.dtype == gt.float32                      # the variable dtype, as Keras
    assert d.get_config()["dtype"] == "mixed_float16"
    assert keras.layers.Dense.from_config(d.get_config()).dtype_policy.name == "mixed_float16"
    f = keras.layers.Dense(3, dtype="float32")
    assert (f.compute_dtype, f.variable_dtype) == ("float32", "float32")
    g = keras.layers.Dense(3, dtype=mp.Policy("float64"))
    assert g.dtype == gt.float64 and g.compute_dtype == "float64"
    assert keras.layers.Dense(3, dtype=np.float16).dtype_policy.name == "float16"
    # a serialized Keras 3 policy
    cfg = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "mixed_float16"}}
    assert keras.layers.Dense(3, dtype=cfg).compute_dtype == "float16"
    with pytest.raises(TypeError, match="Dense: dtype must be a floating type, got int32"):
        keras.layers.Dense(3, dtype="int32")
    # the policy can be changed before the layer has weights
    e = keras.layers.Dense(2)
    e.dtype_policy = "float32"
    assert e.compute_dtype == "float32"
    e(np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="cannot take the policy 'float64'"):
        e.dtype_policy = "float64"


def test_keras_import_forms():
    import gradtape.keras.mixed_precision as m
    from gradtape.keras.mixed_precision import LossScaleOptimizer, set_global_policy
    assert m is mp and set_global_policy is gmp.set_global_policy
    assert LossScaleOptimizer is keras.optimizers.LossScaleOptimizer is gmp.LossScaleOptimizer


# --- autocasting -----------------------------------------------------------------------------

X = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.5) / 3.0
W1 = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
B1 = np.array([0.1, -0.2, 0.3], np.float32)
W2 = np.linspace(0.5, -0.7, 6, dtype=np.float32).reshape(3, 2)
B2 = np.array([0.05, -0.05], np.float32)


def _dense_model():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                          keras.layers.Dense(2),
                          keras.layers.Activation("softmax", dtype="float32")])
    m.set_weights([W1, B1, W2, B2])
    return m


def test_dense_model_matches_tensorflow():
    _mixed()
    m = _dense_model()
    out = m(X)
    assert out.dtype == gt.float32                    # the float32 softmax at the end
    np.testing.assert_allclose(out.numpy(), [[0.6906634, 0.30933657],
                                             [0.6906113, 0.30938876]], rtol=1e-5)
    logits = keras.Model(m.inputs, m.layers[1].output)(X)
    assert logits.dtype == gt.float16
    np.testing.assert_allclose(logits.numpy().astype(np.float32),
                               [[0.478, -0.3252], [-0.453, -1.256]], rtol=1e-3)
    for v in m.weights:                                 # the Variables are back, float32
        assert isinstance(v, gt.Variable) and v.dtype == gt.float32
    assert isinstance(m.layers[0].kernel, gt.Variable)
    # the gradients reach the float32 variables (TF's numbers)
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(m(X) * gt.constant([1.0, 2.0]))
    g = tape.gradient(loss, m.trainable_variables)
    assert [t.dtype for t in g] == [gt.float32] * 4
    np.testing.assert_allclose(g[0].numpy(), [[0.05130005, 0.05130005, 0.05136108],
                                              [0.0171051, 0.0171051, 0.01712036],
                                              [-0.0171051, -0.0171051, -0.01712036],
                                              [-0.05130005, -0.05130005, -0.05136108]],
                               rtol=2e-3)
    np.testing.assert_allclose(g[1].numpy(), [-0.10253906, -0.10253906, -0.10266113], rtol=2e-3)
    np.testing.assert_allclose(g[2].numpy(), [[-0.43115234, 0.43115234],
                                              [-0.30322266, 0.30322266],
                                              [-0.51660156, 0.51660156]], rtol=2e-3)
    np.testing.assert_allclose(g[3].numpy(), [-0.4272461, 0.4272461], rtol=2e-3)


def _grads(model, x):
    with gt.GradientTape() as tape:
        y = model(x)
        loss = gt.reduce_sum(gt.cast(y, "float32") ** 2)
    return y, tape.gradient(loss, model.trainable_variables)


def test_mixed_gradients_match_the_float32_model():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6, 6, 2)).astype(np.float32)

    def make():
        return keras.Sequential([keras.Input((6, 6, 2)),
                                 keras.layers.Conv2D(4, 3, activation="relu"),
                                 keras.layers.Flatten(), keras.layers.Dense(5, activation="tanh"),
                                 keras.layers.Dense(2)])
    ref = make()
    _mixed()
    mixed = make()
    mixed.set_weights(ref.get_weights())
    y32, g32 = _grads(ref, x)
    y16, g16 = _grads(mixed, x)
    assert y32.dtype == gt.float32 and y16.dtype == gt.float16
    assert all(v.dtype == gt.float32 for v in mixed.weights)
    np.testing.assert_allclose(y16.numpy().astype(np.float32), y32.numpy(), rtol=1e-2,
                               atol=1e-2)
    for a, b in zip(g16, g32):
        assert a.dtype == gt.float32
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-2,
                                   atol=2e-2 * float(np.abs(b.numpy()).max()))


def test_conv_model_matches_tensorflow():
    _mixed()
    xi = (np.arange(2 * 5 * 5 * 2, dtype=np.float32).reshape(2, 5, 5, 2) % 7 - 3) / 4.0
    k = np.linspace(-0.5, 0.5, 54, dtype=np.float32).reshape(3, 3, 2, 3)
    c = keras.Sequential([keras.Input((5, 5, 2)), keras.layers.Conv2D(3, 3, activation="tanh"),
                          keras.layers.Flatten(), keras.layers.Dense(1)])
    c.set_weights([k, np.array([0.01, 0.02, -0.03], np.float32),
                   np.linspace(-0.3, 0.3, 27, dtype=np.float32).reshape(27, 1),
                   np.array([0.2], np.float32)])
    out = c(xi)
    assert out.dtype == gt.float16
    np.testing.assert_allclose(out.numpy().astype(np.float32), [[-0.2256], [0.547]], rtol=2e-3)


H = (np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5) / 5.0


def test_normalization_layers_compute_in_float32_as_keras():
    _mixed()
    bn = keras.layers.BatchNormalization()
    bn.build((None, 3))
    bn.set_weights([np.array([1.5, 0.5, 1.0], np.float32), np.array([0.1, 0.2, 0.3], np.float32),
                    np.array([0.5, 1.0, 1.5], np.float32), np.array([2.0, 3.0, 4.0], np.float32)])
    y = bn(H, training=True)
    assert y.dtype == gt.float16 and bn.moving_mean.dtype == gt.float32
    np.testing.assert_allclose(y.numpy().astype(np.float32),
                               [[-1.611, -0.3967, -0.922], [-0.853, -0.09375, -0.2617],
                                [0.5347, 0.3616, 0.6445], [2.33, 0.9287, 1.739]], rtol=1e-3)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.5184424, 1.0195673, 1.5215662],
                               rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [2.0222034, 3.0233467, 4.023948],
                               rtol=1e-6)
    np.testing.assert_allclose(bn(H, training=False).numpy().astype(np.float32),
                               [[-0.4468, -0.03564, -0.1764], [0.649, 0.3667, 0.6562],
                                [2.652, 0.9717, 1.798], [5.246, 1.726, 3.178]], rtol=1e-3)
    ln = keras.layers.LayerNormalization()
    ln.build((None, 3))
    ln.set_weights([np.array([1.5, 0.5, 1.0], np.float32), np.array([0.1, 0.2, 0.3], np.float32)])
    y = ln(H)
    assert y.dtype == gt.float16
    np.testing.assert_allclose(y.numpy().astype(np.float32),
                               [[-1.52, 0.0832, 1.613], [-1.693, 0.1744, 1.547],
                                [-1.713, 0.1854, 1.538], [-1.72, 0.1898, 1.534]], rtol=1e-3)
    e = keras.layers.Embedding(4, 2)
    e.build((None,))
    e.set_weights([np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2) / 3])
    y = e(np.array([[0, 3, 1]]))
    assert y.dtype == gt.float16 and e.embeddings.dtype == gt.float32
    np.testing.assert_allclose(y.numpy().astype(np.float32),
                               [[[-0.3333, -0.238], [0.238, 0.3333], [-0.1428, -0.0476]]],
                               rtol=1e-3)
    assert keras.layers.GroupNormalization(groups=1)(H).dtype == gt.float16


def test_dtype_keeping_layers_follow_keras_under_mixed_precision():
    _mixed()
    x = np.ones((2, 3), np.float32)
    for layer in (keras.layers.Flatten(), keras.layers.Dropout(0.5), keras.layers.ReLU(),
                  keras.layers.Activation("relu")):
        assert layer(x).dtype == gt.float16, layer               # as Keras: cast to float16
    assert keras.layers.Add()([x, x]).dtype == gt.float16
    x16 = gt.constant(x, dtype="float16")
    assert keras.layers.Activation("softmax", dtype="float32")(x16).dtype == gt.float32
    gmp.set_global_policy(None)
    # without mixed precision they keep their input's dtype, as before
    assert keras.layers.Flatten()(x16).dtype == gt.float16
    assert keras.layers.Activation("relu")(np.ones((2, 3))).dtype == gt.float64


class _Holder(keras.layers.Layer):
    """Weights in a list, a dict and a tuple, one not autocast, and a sub-layer."""

    def __init__(self):
        super().__init__()
        self.inner = keras.layers.Dense(3, kernel_initializer="ones")
        self.seen = None

    def build(self, shape):
        self.ws = [self.add_weight(shape=(int(shape[-1]), 3), initializer="ones"),
                   self.add_weight(shape=(3,), initializer="ones")]
        self.d = {"a": self.add_weight(shape=(3,), initializer="ones")}
        self.t = (self.add_weight(shape=(3,), initializer="ones"), 5)
        self.raw = self.add_weight(shape=(3,), initializer="ones", autocast=False)

    def call(self, x):
        self.seen = (self.ws[0].dtype, self.d["a"].dtype, self.t[0].dtype, self.raw.dtype)
        y = gt.matmul(x, self.ws[0]) * self.ws[1] + self.d["a"] * self.t[0]
        return self.inner(y) + gt.cast(self.raw, "float16")


def test_nested_weights_are_autocast_and_restored():
    _mixed()
    layer = _Holder()
    x = np.ones((2, 4), np.float32)
    with gt.GradientTape() as tape:
        y = layer(x)
        loss = gt.reduce_sum(gt.cast(y, "float32"))
    assert y.dtype == gt.float16
    assert layer.seen == (gt.float16, gt.float16, gt.float16, gt.float32)
    assert all(isinstance(v, gt.Variable) for v in layer.ws + [layer.d["a"], layer.t[0]])
    grads = tape.gradient(loss, layer.trainable_variables)
    assert len(grads) == 7 and all(g is not None and g.dtype == gt.float32 for g in grads)
    # y0 = x @ W * w1 + a * t = 5 everywhere; out = y0 @ ones(3, 3) + raw = 16
    np.testing.assert_allclose(y.numpy(), np.full((2, 3), 16.0))
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(gt.cast(layer(x), "float32"))
    g_w, g_inner, g_raw = tape.gradient(loss, [layer.ws[0], layer.inner.kernel, layer.raw])
    np.testing.assert_allclose(g_w.numpy(), np.full((4, 3), 6.0))
    np.testing.assert_allclose(g_inner.numpy(), np.full((3, 3), 10.0))
    np.testing.assert_allclose(g_raw.numpy(), np.full((3,), 2.0))
    assert gt.layers.Layer._mp_on is False              # no scope left open


def test_an_error_in_call_puts_the_variables_back():
    _mixed()

    class Bad(keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(4, 2))

        def call(self, x):
            assert self.w.dtype == gt.float16
            raise RuntimeError("boom")
    bad = Bad()
    with pytest.raises(RuntimeError, match="boom"):
        bad(np.ones((1, 4), np.float32))
    assert isinstance(bad.w, gt.Variable) and bad.w.dtype == gt.float32
    assert gt.layers.Layer._mp_on is False


def test_float32_layer_inside_a_mixed_model_and_functional_api():
    _mixed()
    inp = keras.Input((4,))
    h = keras.layers.Dense(5)(inp)
    out = keras.layers.Dense(1, dtype="float32", use_bias=False, kernel_initializer="ones")(h)
    assert (h.dtype, out.dtype) == (gt.float16, gt.float32)
    # a float32 first layer of a functional model gets the inputs unrounded (as Keras)
    d = keras.layers.Dense(1, dtype="float32", use_bias=False, kernel_initializer="ones")
    inp2 = keras.Input((3,))
    m = keras.Model(inp2, d(inp2))
    x = np.array([[1.0001, 1e-4 + 1, 3.0]], np.float32)
    np.testing.assert_allclose(m(x).numpy(), [[5.0002003]], rtol=1e-7)


def test_recurrent_and_attention_layers_under_mixed_precision():
    _mixed()
    seq = np.ones((2, 5, 3), np.float32)
    for layer in (keras.layers.LSTM(4), keras.layers.GRU(2, return_sequences=True),
                  keras.layers.Bidirectional(keras.layers.SimpleRNN(2))):
        with gt.GradientTape() as tape:
            out = layer(seq)
            loss = gt.reduce_sum(gt.cast(out, "float32"))
        grads = tape.gradient(loss, layer.trainable_variables)
        assert out.dtype == gt.float16 and all(v.dtype == gt.float32 for v in layer.weights)
        assert all(g is not None and g.dtype == gt.float32 for g in grads)
    assert keras.layers.MultiHeadAttention(2, 3)(seq, seq).dtype == gt.float16


def test_default_policy_path_is_unchanged():
    d = keras.layers.Dense(3)
    assert "_mp_on" not in vars(d) and gt.layers.Layer._mp_on is False
    assert d(np.ones((1, 2))).dtype == gt.float32
    assert d.get_config()["dtype"] == "float32"
    assert d.dtype_policy == mp.Policy("float32") and d.compute_dtype == "float32"


# --- LossScaleOptimizer ------------------------------------------------------------------------

# (gradients, variable after, scale after, inner iterations, step counter): TF 2.21's
# keras.mixed_precision.LossScaleOptimizer(SGD(0.1), initial_scale=8, dynamic_growth_steps=2)
_LSO_STEPS = [([8.0, 16.0], [0.9, 1.8], 8.0, 1, 1),
              ([np.inf, 1.0], [0.9, 1.8], 4.0, 1, 0),
              ([8.0, 8.0], [0.7, 1.6], 4.0, 2, 1),
              ([4.0, 4.0], [0.6, 1.5], 8.0, 3, 0),
              ([np.nan, 0.0], [0.6, 1.5], 4.0, 3, 0),
              ([4.0, 4.0], [0.5, 1.4], 4.0, 4, 1)]


@pytest.mark.parametrize("devname", ["cpu", "strict:0"])
def test_loss_scale_optimizer_skips_halves_and_grows(devname):
    dev = gt.get_device(devname)
    with gt.device(dev):
        opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=8.0,
                                    dynamic_growth_steps=2)
        assert float(opt.scale_loss(gt.constant(2.0)).numpy()) == 16.0    # before build
        v = gt.Variable(np.array([1.0, 2.0], np.float32))
        if devname != "cpu":
            dev.reset_counters()
        for grads, want, scale, iterations, counter in _LSO_STEPS:
            g = gt.constant(np.array(grads, np.float32))
            before = (dev.sync_count, dev.transfer_count) if devname != "cpu" else None
            opt.apply([g], [v])
            if before is not None:                      # no host round trip in a step
                assert (dev.sync_count, dev.transfer_count) == before
            np.testing.assert_allclose(v.numpy(), want, rtol=1e-6)
            assert float(opt.dynamic_scale.numpy()) == scale
            assert int(opt.iterations.numpy()) == iterations
            assert int(opt.step_counter.numpy()) == counter
        assert opt.dynamic_scale.device is dev
        assert float(opt.scale_loss(gt.constant(2.0)).numpy()) == 8.0    # the current scale


@pytest.mark.parametrize("devname", ["cpu", "strict:0"])
def test_a_skipped_adam_step_leaves_the_slots_and_count_alone(devname):
    dev = gt.get_device(devname)
    with gt.device(dev):
        inner = keras.optimizers.Adam(0.1)
        opt = mp.LossScaleOptimizer(inner, initial_scale=4.0)
        ref = keras.optimizers.Adam(0.1)
        v = gt.Variable(np.array([1.0, -2.0, 3.0], np.float32))
        w = gt.Variable(np.array([1.0, -2.0, 3.0], np.float32))
        # the scale is 4, then 2 after the non-finite step
        for grads, scale in (([4.0, 8.0, -4.0], 4.0), ([np.inf, 0.0, 0.0], 4.0),
                             ([2.0, -2.0, 1.0], 2.0)):
            g = np.array(grads, np.float32)
            opt.apply_gradients([(gt.constant(g), v)])
            if np.isfinite(g).all():
                ref.apply_gradients([(gt.constant(g / scale), w)])
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=1e-6)
        for name in ("m", "v"):
            np.testing.assert_allclose(inner.get_slot(v, name).numpy(),
                                       ref.get_slot(w, name).numpy(), rtol=1e-6)
        assert int(opt.iterations.numpy()) == 2
        assert float(opt.dynamic_scale.numpy()) == 2.0


def test_loss_scale_optimizer_api():
    inner = keras.optimizers.SGD(0.5)
    opt = mp.LossScaleOptimizer(inner)
    assert opt.initial_scale == 2.0 ** 15 and opt.dynamic_growth_steps == 2000
    assert opt.inner_optimizer is inner and opt.iterations is inner.iterations
    assert opt.name == "loss_scale_optimizer" and opt.dynamic is True
    np.testing.assert_allclose(float(opt.learning_rate.numpy()), 0.5)
    opt.learning_rate = 0.25
    assert float(inner.learning_rate.numpy()) == 0.25
    with pytest.raises(AttributeError, match="made by build"):
        opt.dynamic_scale
    v = gt.Variable(np.ones(2, np.float32))
    # tf.keras 2's names: unscaled gradients are not divided again
    scaled = opt.get_scaled_loss(lambda: gt.constant(3.0))()
    assert float(scaled.numpy()) == 3.0 * 2 ** 15
    grads = opt.get_unscaled_gradients([gt.constant(np.array([2.0 ** 15, 0.0], np.float32)),
                                        None])
    assert grads[1] is None
    np.testing.assert_allclose(grads[0].numpy(), [1.0, 0.0])
    opt.apply_gradients(zip(grads[:1], [v]))
    np.testing.assert_allclose(v.numpy(), [0.75, 1.0])
    assert len(opt.variables) == 2 + len(inner.variables)
    assert float(opt.loss_scale.numpy()) == 2.0 ** 15
    # Keras' minimize works through apply_gradients
    opt2 = mp.LossScaleOptimizer(keras.optimizers.SGD(1.0), initial_scale=2.0)
    w = gt.Variable(np.array(3.0, np.float32))
    opt2.minimize(lambda: opt2.scale_loss(w * w), [w])
    np.testing.assert_allclose(w.numpy(), -3.0)
    # config
    cfg = opt.get_config()
    assert cfg["initial_scale"] == 2.0 ** 15 and cfg["inner_optimizer"]["class_name"] == "SGD"
    again = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    assert isinstance(again, mp.LossScaleOptimizer)
    assert isinstance(again.inner_optimizer, keras.optimizers.SGD)


def test_loss_scale_optimizer_refuses_what_keras_refuses():
    sgd = keras.optimizers.SGD()
    with pytest.raises(ValueError, match="no longer supports `dynamic=False`"):
        mp.LossScaleOptimizer(sgd, dynamic=False)
    with pytest.raises(ValueError, match="does not support `weight_decay`"):
        mp.LossScaleOptimizer(sgd, weight_decay=0.1)
    with pytest.raises(ValueError, match="does not support arguments: `foo`"):
        mp.LossScaleOptimizer(sgd, foo=1)
    with pytest.raises(TypeError, match="inner_optimizer must be a gradtape optimizer"):
        mp.LossScaleOptimizer("sgd")
    with pytest.raises(ValueError, match="initial_scale must be a finite number > 0"):
        mp.LossScaleOptimizer(sgd, initial_scale=0)
    with pytest.raises(ValueError, match="dynamic_growth_steps must be an int >= 1"):
        mp.LossScaleOptimizer(sgd, dynamic_growth_steps=0)


# --- compile and fit ---------------------------------------------------------------------------

def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] - x[:, 1] > 0).astype(np.int32)
    return x, y


def test_fit_under_mixed_float16_trains():
    _mixed()
    x, y = _data()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2), keras.layers.Activation("softmax",
                                                                             dtype="float32")])
    model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    assert isinstance(model.optimizer, mp.LossScaleOptimizer)
    assert model.optimizer.name == "loss_scale_optimizer"
    hist = model.fit(x, y, epochs=4, batch_size=16, verbose=0).history
    assert hist["loss"][-1] < hist["loss"][0]
    # each step the float16 gradients overflowed was skipped and halved the scale
    skipped = 16 - int(model.optimizer.iterations.numpy())
    assert 0 <= skipped < 8
    assert float(model.optimizer.dynamic_scale.numpy()) == 2.0 ** 15 * 0.5 ** skipped
    assert all(v.dtype == gt.float32 for v in model.weights)
    assert model.predict(x[:2], verbose=0).dtype == np.float32


def test_losses_and_metrics_are_computed_in_float32():
    _mixed()
    x, y = _data()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])   # float16 logits
    model.compile(keras.optimizers.Adam(0.01),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    logs = model.train_on_batch(x, y, return_dict=True)
    assert model(x).dtype == gt.float16
    assert model.predict(x[:2], verbose=0).dtype == np.float16      # as Keras
    loss = model.compute_loss(x, y, model(x))
    assert loss.dtype == gt.float32
    assert np.isfinite(logs["loss"]) and 0.0 <= logs["accuracy"] <= 1.0
    # float32 loss of the float16 logits = the loss of the logits cast to float32
    logits = gt.cast(model(x), "float32")
    want = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
    np.testing.assert_allclose(float(loss.numpy()), float(want.numpy()), rtol=1e-6)


def test_compile_wraps_only_mixed_float16_models():
    x, y = _data()
    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    plain.compile("sgd", "mse")
    assert isinstance(plain.optimizer, keras.optimizers.SGD)
    _mixed()
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    m.compile("sgd", "mse", auto_scale_loss=False)
    assert isinstance(m.optimizer, keras.optimizers.SGD)
    lso = mp.LossScaleOptimizer(keras.optimizers.SGD(), initial_scale=8.0)
    m.compile(lso, "mse")
    assert m.optimizer is lso                            # not wrapped twice


def test_a_mixed_training_step_makes_no_host_round_trip_on_a_device():
    dev = gt.get_device("strict:0")
    _mixed()
    rng = np.random.default_rng(0)
    with gt.device(dev):
        x = gt.constant(rng.standard_normal((8, 4)).astype(np.float32))
        y = gt.constant(rng.integers(0, 3, 8))
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, activation="relu"),
                                  keras.layers.BatchNormalization(), keras.layers.Dense(3)])
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        # (a scale small enough that no float16 gradient overflows: every step is taken)
        opt = mp.LossScaleOptimizer(keras.optimizers.Adam(0.01), initial_scale=128.0)
        model(x)
        for step in range(3):
            syncs, transfers = dev.sync_count, dev.transfer_count
            with gt.GradientTape() as tape:
                loss = loss_fn(y, gt.cast(model(x, training=True), "float32"))
                scaled = opt.scale_loss(loss)
            grads = tape.gradient(scaled, model.trainable_variables)
            opt.apply(grads, model.trainable_variables)
            if step:
                assert (dev.sync_count - syncs, dev.transfer_count - transfers) == (0, 0)
    assert int(opt.iterations.numpy()) == 3


def test_a_captured_mixed_step_matches_the_eager_one():
    """Step capture (the strict device runs its bookkeeping eagerly and refuses what a GPU
    capture would) of a mixed-precision step with loss scaling: same numbers as eager."""
    _mixed()
    dev = gt.get_device("strict:0")
    results = {}
    for mode in ("eager", "captured"):
        with gt.device(dev):
            rng = np.random.default_rng(0)
            x = gt.constant(rng.standard_normal((8, 4)).astype(np.float32))
            y = gt.constant(rng.integers(0, 3, 8))
            model = keras.Sequential([
                keras.Input((4,)),
                keras.layers.Dense(6, activation="relu",
                                   kernel_initializer=keras.initializers.Constant(0.1)),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(3, kernel_initializer="ones")])
            loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            opt = mp.LossScaleOptimizer(keras.optimizers.Adam(0.01), initial_scale=128.0,
                                        dynamic_growth_steps=2)

            def step(x, y):
                with gt.GradientTape() as tape:
                    loss = loss_fn(y, gt.cast(model(x, training=True), "float32"))
                    scaled = opt.scale_loss(loss)
                grads = tape.gradient(scaled, model.trainable_variables)
                opt.apply(grads, model.trainable_variables)
                return loss
            fn = gt.capture(step) if mode == "captured" else step
            losses = [float(fn(x, y).numpy()) for _ in range(5)]
            results[mode] = (losses, model.get_weights(), float(opt.dynamic_scale.numpy()),
                             int(opt.iterations.numpy()))
    eager, captured = results["eager"], results["captured"]
    np.testing.assert_allclose(captured[0], eager[0], rtol=1e-6)
    for a, b in zip(captured[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert captured[2:] == eager[2:] == (512.0, 5)       # grown twice (every 2 steps)
    assert eager[0][-1] < eager[0][0]


def test_a_mixed_model_saves_and_loads(tmp_path):
    _mixed()
    x, y = _data()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2), keras.layers.Activation("softmax",
                                                                             dtype="float32")])
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    path = str(tmp_path / "mixed.keras")
    model.save(path)
    gmp.set_global_policy(None)
    loaded = keras.models.load_model(path)
    assert [layer.dtype_policy.name for layer in loaded.layers] == \
        ["mixed_float16", "mixed_float16", "float32"]
    assert isinstance(loaded.optimizer, mp.LossScaleOptimizer)
    assert int(loaded.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy())
    np.testing.assert_array_equal(loaded.predict(x[:4], verbose=0),
                                  model.predict(x[:4], verbose=0))
