"""Whole-model saving: every layer's config rebuilds it, Sequential and functional models
round-trip through model.save / load_model with their weights and compile arguments, and
what cannot be saved says so."""
import json
import zipfile

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = gt.layers

X4 = np.random.default_rng(0).standard_normal((2, 6, 6, 3)).astype(np.float32)
X3 = np.random.default_rng(1).standard_normal((2, 5, 3)).astype(np.float32)
X2 = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
IDS = np.array([[1, 2, 3], [4, 5, 0]])

LAYERS = [
    (lambda: L.Dense(3, activation="relu", use_bias=False), X2),
    (lambda: L.Conv2D(4, 3, strides=2, padding="same", activation="tanh"), X4),
    (lambda: L.Conv1D(4, 2, padding="causal", dilation_rate=2), X3),
    (lambda: L.MaxPool2D(2), X4), (lambda: L.AveragePooling2D(3, 1, "same"), X4),
    (lambda: L.GlobalAveragePooling2D(keepdims=True), X4), (lambda: L.GlobalMaxPooling2D(), X4),
    (lambda: L.Flatten(), X4), (lambda: L.Reshape((6, 18)), X4),
    (lambda: L.Activation("gelu"), X2), (lambda: L.ReLU(), X2), (lambda: L.Dropout(0.3), X2),
    (lambda: L.LayerNormalization(epsilon=1e-5), X3),
    (lambda: L.BatchNormalization(momentum=0.9), X4),
    (lambda: L.Embedding(10, 4, mask_zero=True), IDS),
    (lambda: L.SimpleRNN(3, return_sequences=True), X3),
    (lambda: L.LSTM(3, go_backwards=True, unit_forget_bias=False), X3),
    (lambda: L.GRU(3, return_state=True, reset_after=False), X3),
    (lambda: L.LeakyReLU(0.2), X2), (lambda: L.ELU(0.5), X2), (lambda: L.Softmax(axis=-1), X2),
    (lambda: L.PReLU(), X2), (lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"), X4),
    (lambda: L.UpSampling2D(2, interpolation="bilinear"), X4),
    (lambda: L.ZeroPadding2D(((1, 0), (2, 1))), X4), (lambda: L.Cropping2D(1), X4),
    (lambda: L.RepeatVector(3), X2), (lambda: L.Permute((2, 1)), X3),
    (lambda: L.Rescaling(0.5, offset=1.0), X2), (lambda: L.GaussianNoise(0.1), X2),
    (lambda: L.TimeDistributed(L.Dense(2)), X3),
    (lambda: L.Bidirectional(L.LSTM(2), merge_mode="sum"), X3),
    (lambda: L.MaxPooling1D(2), X3), (lambda: L.AveragePooling1D(2, 1, "same"), X3),
    (lambda: L.GlobalAveragePooling1D(), X3), (lambda: L.GlobalMaxPooling1D(), X3),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=2), X4),
    (lambda: L.SeparableConv2D(4, 3, padding="same"), X4),
    (lambda: L.SpatialDropout1D(0.2), X3), (lambda: L.SpatialDropout2D(0.2), X4),
    (lambda: L.GaussianDropout(0.1), X2),
    (lambda: L.Normalization(mean=[1.0, 2, 3, 4], variance=[1.0, 2, 3, 4]), X2),
    (lambda: L.Identity(), X2), (lambda: L.Masking(0.5), X3),
    (lambda: L.GroupNormalization(3), X4), (lambda: L.UnitNormalization(), X2),
    (lambda: L.Resizing(3, 4, crop_to_aspect_ratio=True), X4), (lambda: L.CenterCrop(2, 3), X4),
    (lambda: L.RandomFlip("vertical", seed=2), X4), (lambda: L.RandomCrop(3, 3, seed=1), X4),
]


@pytest.mark.parametrize("make,x", LAYERS, ids=lambda v: "" if not callable(v) else
                         type(v()).__name__)
def test_every_layer_is_rebuilt_from_its_config(make, x):
    layer = make()
    y = layer(x, training=False)       # (a direct call of an augmentation layer augments)
    data = gt.keras.layers.serialize(layer)
    json.dumps(data)                                    # plain JSON
    again = gt.keras.layers.deserialize(json.loads(json.dumps(data)))
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
    again(x)
    if layer.variables:
        again.set_weights(layer.get_weights())
    for a, b in zip(gt.nest.flatten(y), gt.nest.flatten(again(x, training=False))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def _functional():
    a = keras.Input(shape=(5,), dtype="int32", name="tokens")
    b = keras.Input(shape=(3,), name="extra")
    h = L.Embedding(10, 4, mask_zero=True, name="emb")(a)
    h = L.Bidirectional(L.LSTM(3), name="bi")(h)
    shared = L.Dense(4, activation="relu", name="shared")
    h = L.Concatenate(name="cat")([shared(h), shared(L.Dense(6, name="lift")(b))])
    tower = keras.Sequential([L.Dense(4, activation="tanh"), L.Dense(2)], name="tower")
    return keras.Model({"tokens": a, "extra": b},
                       [tower(h), L.Dense(1, name="score")(h)], name="two_heads")


def test_a_functional_model_round_trips_with_weights_and_compile(tmp_path):
    model = _functional()
    model.compile(keras.optimizers.Adam(0.01),
                  loss=[keras.losses.SparseCategoricalCrossentropy(from_logits=True), "mse"],
                  loss_weights=[1.0, 0.5], metrics=[["accuracy"], []])
    ids = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 0], [1, 1, 0, 0, 0]])
    extra = np.random.default_rng(3).standard_normal((3, 3)).astype(np.float32)
    inputs = {"tokens": ids, "extra": extra}
    y = (np.array([0, 1, 1]), np.ones((3, 1), np.float32))
    model.fit(inputs, y, epochs=2, verbose=0)
    path = model.save(str(tmp_path / "m.keras"))
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["config.json", "metadata.json",
                                         "model.weights.safetensors", "optimizer.safetensors"]
    loaded = keras.models.load_model(path)
    for a, b in zip(model(inputs), loaded(inputs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
    assert float(loaded.optimizer.learning_rate) == pytest.approx(0.01)
    want = model.evaluate(inputs, y, verbose=0, return_dict=True)
    got = loaded.evaluate(inputs, y, verbose=0, return_dict=True)
    assert got == pytest.approx(want, rel=1e-5)
    loaded.fit(inputs, y, epochs=1, verbose=0)                 # trains on


def test_a_sequential_model_round_trips_built_either_way(tmp_path):
    for first in ([keras.Input(shape=(4,))], []):
        model = keras.Sequential(first + [L.Dense(3, activation="relu"),
                                          L.BatchNormalization(), L.Dense(2)])
        model(X2)
        model.layers[1].moving_mean.assign(np.arange(3, dtype=np.float32))
        path = str(tmp_path / "s.keras")
        model.save(path)
        loaded = keras.models.load_model(path, compile=False)
        np.testing.assert_allclose(loaded(X2).numpy(), model(X2).numpy(), rtol=1e-6)
        np.testing.assert_array_equal(loaded.layers[1].moving_mean.numpy(), [0, 1, 2])


class _Net(keras.Model):
    """A subclassed model: its architecture is code."""

    def __init__(self):
        super().__init__()
        self.d = L.Dense(1)

    def call(self, x):
        return self.d(x)


def test_what_cannot_be_saved_says_why(tmp_path):
    net = _Net()
    net(X2)
    with pytest.raises(gt.saving.SavingError, match="subclassed"):
        net.save(str(tmp_path / "n.keras"))
    inp = keras.Input(shape=(4,))
    with pytest.raises(gt.saving.SavingError, match="Python function"):
        keras.Model(inp, L.Lambda(lambda t: t * 2)(inp)).save(str(tmp_path / "l.keras"))
    with pytest.raises(gt.saving.SavingError, match="Python function"):
        keras.Model(inp, inp * 2.0).save(str(tmp_path / "o.keras"))
    with pytest.raises(gt.saving.SavingError, match="not built"):
        keras.Sequential([L.Dense(2)]).save(str(tmp_path / "e.keras"))
    assert not list(tmp_path.iterdir())                       # nothing half-written
    bad = tmp_path / "bad.keras"
    bad.write_bytes(b"not a zip")
    with pytest.raises(gt.saving.SavingError, match="not a saved gradtape model"):
        keras.models.load_model(str(bad))


def test_custom_layers_load_when_registered_or_given(tmp_path):
    @keras.saving.register_keras_serializable()
    class Scale(L.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, shape):
            self.w = self.add_weight("w", (shape[-1],), "ones")

        def call(self, x):
            return x * self.w * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}
    model = keras.Sequential([keras.Input(shape=(4,)), Scale(3.0), L.Dense(1)])
    model.layers[0].w.assign(np.arange(4, dtype=np.float32))
    path = str(tmp_path / "c.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(X2).numpy(), model(X2).numpy(), rtol=1e-6)
    assert loaded.layers[0].factor == 3.0


def test_model_checkpoint_saves_whole_models(tmp_path):
    x, y = X2, np.ones((2, 1), np.float32)
    model = keras.Sequential([keras.Input(shape=(4,)), L.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(str(tmp_path / "ep{epoch}.keras"))])
    loaded = keras.models.load_model(str(tmp_path / "ep2.keras"))
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_review_cases_round_trip(tmp_path):
    path = str(tmp_path / "m.keras")
    # a Sequential built with build()
    model = keras.Sequential([L.Dense(3), L.Dense(1)])
    model.build((None, 4))
    model.save(path)
    np.testing.assert_allclose(keras.models.load_model(path)(X2).numpy(), model(X2).numpy(),
                               rtol=1e-6)
    # a frozen base inside a functional model stays frozen
    base = keras.Sequential([keras.Input(shape=(4,)), L.Dense(8), L.BatchNormalization()])
    base.trainable = False
    inp = keras.Input(shape=(4,))
    outer = keras.Model(inp, L.Dense(1)(base(inp)))
    outer.save(path)
    loaded = keras.models.load_model(path)
    assert len(loaded.trainable_variables) == len(outer.trainable_variables) == 2
    # activations by any name they were given, and a user's function via custom_objects
    def twice(t):
        return t * 2.0
    model = keras.Sequential([keras.Input(shape=(4,)), L.Dense(2, activation="exponential"),
                              L.Dense(2, activation=keras.activations.relu),
                              L.Dense(2, activation=twice)])
    model.save(path)
    with pytest.raises(gt.saving.SavingError, match="twice"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, custom_objects={"twice": twice})
    np.testing.assert_allclose(loaded(X2).numpy(), model(X2).numpy(), rtol=1e-6)
    # MultiHeadAttention with output_shape; a generic RNN(cell); a weightless model
    q = keras.Input(shape=(5, 3))
    model = keras.Model(q, L.MultiHeadAttention(2, 4, output_shape=3)(q, q))
    model.save(path)
    np.testing.assert_allclose(keras.models.load_model(path)(X3).numpy(), model(X3).numpy(),
                               rtol=1e-6)
    model = keras.Sequential([keras.Input(shape=(5, 3)), L.RNN(L.LSTMCell(4))])
    model.save(path)
    np.testing.assert_allclose(keras.models.load_model(path)(X3).numpy(), model(X3).numpy(),
                               rtol=1e-6)
    model = keras.Sequential([keras.Input(shape=(4,)), L.Rescaling(0.5)])
    model.save(path)
    np.testing.assert_allclose(keras.models.load_model(path)(X2).numpy(), X2 * 0.5)


def test_review_cases_compile_and_weights(tmp_path):
    path = str(tmp_path / "m.keras")
    model = keras.Sequential([keras.Input(shape=(4,)), L.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy",
                  metrics=[keras.metrics.BinaryAccuracy(threshold=0.9),
                           keras.metrics.MeanSquaredError(name="score")])
    y = np.array([[1.0], [0.0]], np.float32)
    want = model.evaluate(X2, y, verbose=0, return_dict=True)
    model.save(path)
    got = keras.models.load_model(path).evaluate(X2, y, verbose=0, return_dict=True)
    assert got == pytest.approx(want, rel=1e-6) and "score" in got
    # load_weights reads the weights of a whole saved model (ModelCheckpoint's default)
    fresh = keras.Sequential([keras.Input(shape=(4,)), L.Dense(1, activation="sigmoid")])
    fresh.load_weights(path)
    np.testing.assert_allclose(fresh(X2).numpy(), model(X2).numpy(), rtol=1e-6)
    # a file whose weights do not fit names the user's file
    other = keras.Sequential([keras.Input(shape=(4,)), L.Dense(2)])
    with pytest.raises(Exception, match="m.keras"):
        other.load_weights(path)


def test_review_cases_refused_with_reasons(tmp_path):
    path = str(tmp_path / "m.keras")

    class NoConfig(L.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def call(self, x):
            return x[:, :self.units]
    with pytest.raises(gt.saving.SavingError, match="units"):
        keras.Sequential([keras.Input(shape=(4,)), NoConfig(2)]).save(path)
    d = L.Dense(4)
    i = keras.Input(shape=(4,))
    inner = keras.Model(i, d(i))
    a = keras.Input(shape=(4,))
    with pytest.raises(gt.saving.SavingError, match="shared across nested models"):
        keras.Model(a, d(inner(a))).save(path)

    net = _Net()
    net.compile("sgd", "mse")
    with pytest.raises(gt.saving.SavingError, match="subclassed"):
        net.fit(X2, np.ones((2, 1), np.float32), verbose=0,
                callbacks=[keras.callbacks.ModelCheckpoint(str(tmp_path / "ck.keras"))])
    assert int(net.optimizer.iterations.numpy()) == 0          # refused before training
    for content in (b"[1, 2]", b'{"format": "gradtape.keras/1"}'):
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("config.json", content)
        with pytest.raises(gt.saving.SavingError):
            keras.models.load_model(path)


# --- the optimizer's state travels with the model ---------------------------------------------

_XT = np.random.default_rng(5).standard_normal((12, 4)).astype(np.float32)
_YT = np.random.default_rng(6).standard_normal((12, 1)).astype(np.float32)


def _trained(opt, steps=3):
    """A small model compiled with ``opt`` and trained ``steps`` batches of 4."""
    gt.random.set_seed(11)
    inp = keras.Input(shape=(4,))
    h = L.Dense(5, activation="tanh", name="hidden")(inp)
    model = keras.Model(inp, L.Dense(1, name="out")(h), name="small")
    model.compile(opt, "mse")
    for k in range(steps):
        model.train_on_batch(_XT[4 * (k % 3):4 * (k % 3) + 4], _YT[4 * (k % 3):4 * (k % 3) + 4])
    return model


def _train_on(model, epochs=2):
    model.fit(_XT, _YT, batch_size=4, epochs=epochs, shuffle=False, verbose=0)


def _assert_same_weights(a, b, atol=1e-6):
    wa, wb = a.get_weights(), b.get_weights()
    assert len(wa) == len(wb)
    for x, y in zip(wa, wb):
        np.testing.assert_allclose(x, y, rtol=0, atol=atol)


@pytest.mark.parametrize("make", [
    lambda: keras.optimizers.Adam(0.01),
    lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    lambda: keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.02, 2, 0.5)),
], ids=["adam", "sgd_momentum", "adam_schedule"])
def test_training_resumes_exactly_after_load_model(tmp_path, device, make):
    model = _trained(make())
    path = model.save(str(tmp_path / "m.keras"))
    with zipfile.ZipFile(path) as zf:
        assert "optimizer.safetensors" in zf.namelist()
    loaded = keras.models.load_model(path)
    opt, lopt = model.optimizer, loaded.optimizer
    assert type(lopt) is type(opt) and lopt is not opt
    assert int(lopt.iterations.numpy()) == int(opt.iterations.numpy()) == 3
    for var, lvar in zip(model.trainable_variables, loaded.trainable_variables):
        assert lvar.device == var.device == device.name
        for name in opt.slot_names():
            np.testing.assert_array_equal(lopt.get_slot(lvar, name).numpy(),
                                          opt.get_slot(var, name).numpy())
    _train_on(model)
    _train_on(loaded)                       # the same batches, continuing the same state
    _assert_same_weights(model, loaded)
    assert int(lopt.iterations.numpy()) == int(opt.iterations.numpy()) == 9


def test_without_the_optimizer_state_training_restarts(tmp_path):
    model = _trained(keras.optimizers.Adam(0.01))
    path = str(tmp_path / "m.keras")
    keras.saving.save_model(model, path, include_optimizer=False)
    with zipfile.ZipFile(path) as zf:
        assert "optimizer.safetensors" not in zf.namelist()
    loaded = keras.models.load_model(path)
    assert int(loaded.optimizer.iterations.numpy()) == 0
    _assert_same_weights(model, loaded, atol=0)
    _train_on(model)
    _train_on(loaded)
    # a fresh Adam takes bias-corrected first steps of about lr: the weights part ways
    assert max(np.abs(a - b).max() for a, b in zip(model.get_weights(),
                                                   loaded.get_weights())) > 1e-3


def test_a_model_saved_before_training_loads_with_a_fresh_optimizer(tmp_path):
    model = _trained(keras.optimizers.Adam(0.01), steps=0)
    path = model.save(str(tmp_path / "m.keras"))
    with zipfile.ZipFile(path) as zf:
        assert "optimizer.safetensors" not in zf.namelist()
    loaded = keras.models.load_model(path)
    assert int(loaded.optimizer.iterations.numpy()) == 0
    assert loaded.optimizer.variables == [loaded.optimizer.iterations]     # no slots yet
    _train_on(model)
    _train_on(loaded)
    _assert_same_weights(model, loaded)
    # compile=False: the weights only, no optimizer
    assert not keras.models.load_model(path, compile=False).__dict__.get("_is_compiled")


def test_a_file_without_optimizer_state_still_loads(tmp_path):
    model = _trained(keras.optimizers.SGD(0.05, momentum=0.9))
    path = model.save(str(tmp_path / "m.keras"))
    old = str(tmp_path / "old.keras")           # as model.save wrote before it kept the state
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(old, "w") as dst:
        for name in src.namelist():
            if name != "optimizer.safetensors":
                dst.writestr(name, src.read(name))
    loaded = keras.models.load_model(old)
    assert int(loaded.optimizer.iterations.numpy()) == 0
    assert loaded.optimizer.momentum == 0.9
    _assert_same_weights(model, loaded, atol=0)
    np.testing.assert_allclose(loaded(_XT).numpy(), model(_XT).numpy(), rtol=1e-6)
    loaded.fit(_XT, _YT, verbose=0)             # trains on, from a fresh momentum


def test_the_learning_rate_set_during_training_is_kept(tmp_path):
    model = _trained(keras.optimizers.Adam(0.01))
    model.optimizer.learning_rate.assign(0.003)
    path = model.save(str(tmp_path / "m.keras"))
    from gradtape.checkpoint import read_arrays
    with zipfile.ZipFile(path) as zf:
        zf.extract("optimizer.safetensors", str(tmp_path))
    arrays, _ = read_arrays(str(tmp_path / "optimizer.safetensors"), kind="optimizer")
    assert sorted(arrays) == ["iterations", "learning_rate"] + [
        f"slots/{slot}/layers.{k}.{w}" for slot in "mv" for k in (1, 2)
        for w in ("bias", "kernel")]
    assert arrays["iterations"] == 3 and arrays["learning_rate"] == np.float32(0.003)
    loaded = keras.models.load_model(path)
    assert float(loaded.optimizer.learning_rate) == float(np.float32(0.003))
    _train_on(model)
    _train_on(loaded)
    _assert_same_weights(model, loaded)


def _rewrite_optimizer_state(src, dst, arrays):
    from gradtape.checkpoint import write_arrays
    tmp = dst + ".opt"
    write_arrays(tmp, arrays, "optimizer")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            if name != "optimizer.safetensors":
                zout.writestr(name, zin.read(name))
        zout.write(tmp, "optimizer.safetensors")


def test_bad_optimizer_state_is_refused_naming_file_and_slot(tmp_path):
    from gradtape.checkpoint import read_arrays
    model = _trained(keras.optimizers.Adam(0.01))
    path = model.save(str(tmp_path / "m.keras"))
    with zipfile.ZipFile(path) as zf:
        zf.extract("optimizer.safetensors", str(tmp_path))
        members = {n: zf.read(n) for n in zf.namelist()}
    good, _ = read_arrays(str(tmp_path / "optimizer.safetensors"))
    kernel = next(k for k in good if k.startswith("slots/m/") and k.endswith("kernel"))
    bad = str(tmp_path / "bad.keras")
    cases = [
        ({**good, kernel: np.zeros((2, 2), np.float32)}, [kernel, "shape"]),
        ({**good, kernel: good[kernel].astype(np.float64)}, [kernel, "dtype"]),
        ({**good, "slots/momentum/layers.1.kernel": good[kernel]},
         ["slots/momentum/layers.1.kernel", "not a slot of Adam"]),
        ({**good, "slots/m/layers.9.kernel": good[kernel]},
         ["slots/m/layers.9.kernel", "no variable"]),
        ({k: v for k, v in good.items() if k != "iterations"}, ["iterations", "missing"]),
        ({**good, "iterations": np.float32(3)}, ["iterations", "float32"]),
        ({**good, "extra": np.zeros(2)}, ["extra"]),
    ]
    for arrays, words in cases:
        _rewrite_optimizer_state(path, bad, arrays)
        with pytest.raises(gt.saving.SavingError) as info:
            keras.models.load_model(bad)
        message = str(info.value)
        for word in ["bad.keras", "optimizer.safetensors"] + words:
            assert word in message, (word, message)
    # corrupted bytes: the digest catches them
    data = bytearray(members["optimizer.safetensors"])
    data[-3] ^= 0xFF
    with zipfile.ZipFile(bad, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, bytes(data) if name == "optimizer.safetensors" else content)
    with pytest.raises(gt.saving.SavingError, match=r"bad\.keras.*optimizer\.safetensors.*"
                       r"corrupted"):
        keras.models.load_model(bad)


def test_a_refused_optimizer_state_changes_nothing():
    """All checks come before any assignment: one bad slot among good ones restores none."""
    model = _trained(keras.optimizers.Adam(0.01))
    fresh = _trained(keras.optimizers.Adam(0.01), steps=0)
    good = gt.saving._optimizer_arrays(model)
    opt = fresh.optimizer
    kernel = next(k for k in good if k.startswith("slots/v/"))
    with pytest.raises(gt.saving.SavingError, match="shape"):
        gt.saving._restore_optimizer(fresh, {**good, kernel: np.zeros(7, np.float32)}, "f")
    assert int(opt.iterations.numpy()) == 0 and opt.variables == [opt.iterations]
    with pytest.raises(gt.saving.SavingError, match="learning_rate"):
        gt.saving._restore_optimizer(fresh, {**good, "learning_rate": np.float32(-1)}, "f")
    assert float(opt.learning_rate) == pytest.approx(0.01)
    # the good state restores whole (a saved learning rate over the configured one)
    gt.saving._restore_optimizer(fresh, {**good, "learning_rate": np.float32(0.25)}, "f")
    assert int(opt.iterations.numpy()) == 3 and float(opt.learning_rate) == 0.25
    for var, fvar in zip(model.trainable_variables, fresh.trainable_variables):
        for name in ("m", "v"):
            np.testing.assert_array_equal(opt.get_slot(fvar, name).numpy(),
                                          model.optimizer.get_slot(var, name).numpy())
    # a learning rate saved for an optimizer that now follows a schedule does not fit
    sched = _trained(keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(
        0.02, 2, 0.5)), steps=0)
    with pytest.raises(gt.saving.SavingError, match="learning_rate.*ExponentialDecay"):
        gt.saving._restore_optimizer(sched, {**good, "learning_rate": np.float32(0.1)}, "f")
    assert int(sched.optimizer.iterations.numpy()) == 0


def test_model_checkpoint_files_resume_training(tmp_path):
    model = _trained(keras.optimizers.Adam(0.01), steps=0)
    model.fit(_XT, _YT, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(str(tmp_path / "ep{epoch}.keras"))])
    first = keras.models.load_model(str(tmp_path / "ep1.keras"))
    assert int(first.optimizer.iterations.numpy()) == 3
    _train_on(first, epochs=1)                  # epoch 2 again, from epoch 1's file
    _assert_same_weights(first, model)
    assert int(first.optimizer.iterations.numpy()) == 6
