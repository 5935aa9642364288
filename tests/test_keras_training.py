"""Keras' built-in training loop: compile / fit / evaluate / predict, the *_on_batch calls,
data adapters (arrays, datasets, generators, Sequences) and callbacks."""
import csv
import io
import math

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w = np.array([[1.5], [-2.0], [0.5]], np.float32)[:d]
    y = (x @ w + 0.3).astype(np.float32)
    return x, y


def _linear(seed=1, units=1):
    model = keras.Sequential([L.Dense(units, kernel_initializer=keras.initializers.GlorotUniform(
        seed=seed))])
    model.build((None, 3))
    return model


def _classifier(seed=2, classes=3):
    inp = keras.Input(shape=(4,))
    h = L.Dense(8, activation="relu",
                kernel_initializer=keras.initializers.GlorotUniform(seed=seed))(inp)
    out = L.Dense(classes, kernel_initializer=keras.initializers.GlorotUniform(seed=seed + 1))(h)
    return keras.Model(inp, out)


def _labels(n=48, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return x, y


def test_fit_takes_the_same_steps_as_a_hand_written_tape_loop():
    x, y = _data(n=40)
    a, b = _linear(), _linear()
    b.set_weights(a.get_weights())
    a.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    hist = a.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    opt, loss_fn = keras.optimizers.SGD(0.05), keras.losses.MeanSquaredError()
    epoch_losses = []
    for _ in range(3):
        total, count = 0.0, 0
        for s in range(0, 40, 16):
            xb, yb = x[s:s + 16], y[s:s + 16]
            with gt.GradientTape() as tape:
                loss = loss_fn(yb, b(xb, training=True))
            grads = tape.gradient(loss, b.trainable_variables)
            opt.apply_gradients(zip(grads, b.trainable_variables))
            total += float(loss) * len(xb)          # the epoch loss weighs batches by size
            count += len(xb)
        epoch_losses.append(total / count)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)
    assert hist is a.history and hist.epoch == [0, 1, 2]
    np.testing.assert_allclose(hist.history["loss"], epoch_losses, rtol=1e-5)
    assert all(isinstance(v, float) for v in hist.history["loss"])


def test_evaluate_and_predict_match_the_model_called_directly():
    x, y = _labels(n=37)
    model = _classifier()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    logits = model(x).numpy()
    shifted = logits - logits.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    want_loss = -logp[np.arange(37), y].mean()
    want_acc = (logits.argmax(1) == y).mean()
    loss, acc = model.evaluate(x, y, batch_size=10, verbose=0)
    np.testing.assert_allclose([loss, acc], [want_loss, want_acc], rtol=1e-5)
    assert model.metrics_names == ["loss", "accuracy"]
    logs = model.evaluate(x, y, batch_size=37, verbose=0, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    pred = model.predict(x, batch_size=10, verbose=0)
    assert isinstance(pred, np.ndarray) and pred.shape == (37, 3)
    np.testing.assert_allclose(pred, logits, rtol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x[:4]), logits[:4], rtol=1e-6)
    np.testing.assert_allclose(model.test_on_batch(x, y), [want_loss, want_acc], rtol=1e-5)


def test_accuracy_and_crossentropy_follow_the_shapes_of_labels_and_predictions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 4)).astype(np.float32)
    sparse = rng.integers(0, 3, 30)
    for y, units, act, loss in (
            (sparse, 3, "softmax", "sparse_categorical_crossentropy"),
            (np.eye(3, dtype=np.float32)[sparse], 3, "softmax", "categorical_crossentropy"),
            ((sparse > 0).astype(np.float32)[:, None], 1, "sigmoid", "binary_crossentropy")):
        model = keras.Sequential([L.Dense(units, activation=act)])
        model.compile("sgd", loss, metrics=["accuracy", "crossentropy"])
        logs = model.evaluate(x, y, verbose=0, return_dict=True)
        p = model.predict(x, verbose=0)
        if units == 1:
            acc = ((p[:, 0] > 0.5) == (y[:, 0] > 0.5)).mean()
            ce = -np.mean(y[:, 0] * np.log(p[:, 0]) + (1 - y[:, 0]) * np.log(1 - p[:, 0]))
        else:
            acc = (p.argmax(1) == sparse).mean()
            ce = -np.mean(np.log(p[np.arange(30), sparse]))
        np.testing.assert_allclose([logs["accuracy"], logs["crossentropy"], logs["loss"]],
                                   [acc, ce, ce], rtol=1e-4)


def test_validation_split_takes_the_last_samples_before_shuffling():
    x, y = _data(n=50)
    model = _linear()
    model.compile(keras.optimizers.SGD(0.01), "mse", metrics=["mae"])
    hist = model.fit(x, y, epochs=2, validation_split=0.2, batch_size=8, verbose=0)
    assert set(hist.history) == {"loss", "mae", "val_loss", "val_mae"}
    val = model.evaluate(x[40:], y[40:], verbose=0, return_dict=True)
    np.testing.assert_allclose(hist.history["val_loss"][-1], val["loss"], rtol=1e-6)
    np.testing.assert_allclose(hist.history["val_mae"][-1], val["mae"], rtol=1e-6)
    hist = model.fit(x, y, epochs=3, validation_data=(x[:10], y[:10]), validation_freq=2,
                     verbose=0)
    assert len(hist.history["loss"]) == 3 and len(hist.history["val_loss"]) == 1


def test_sample_and_class_weights_weigh_the_loss():
    x, y = _labels(n=20)
    model = _classifier()
    model.compile(keras.optimizers.SGD(0.0), keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    logits = model(x).numpy()
    shifted = logits - logits.max(1, keepdims=True)
    per = -(shifted - np.log(np.exp(shifted).sum(1, keepdims=True)))[np.arange(20), y]
    sw = np.linspace(0.5, 2.0, 20).astype(np.float32)
    got = model.evaluate(x, y, sample_weight=sw, batch_size=20, verbose=0)
    np.testing.assert_allclose(got, (per * sw).mean(), rtol=1e-5)
    cw = {0: 1.0, 1: 3.0, 2: 0.5}
    hist = model.fit(x, y, class_weight=cw, batch_size=20, epochs=1, shuffle=False, verbose=0)
    want = (per * np.array([cw[int(c)] for c in y])).mean()
    np.testing.assert_allclose(hist.history["loss"][0], want, rtol=1e-5)
    with pytest.raises(ValueError, match="keys 0 .. n_classes - 1"):
        model.fit(x, y, class_weight={0: 1.0, 2: 1.0}, verbose=0)


def test_datasets_generators_and_sequences_feed_fit():
    x, y = _data(n=32)
    ds = gt.data.Dataset.from_tensor_slices((x, y)).batch(8)
    model = _linear()
    model.compile(keras.optimizers.SGD(0.05), "mse")
    h1 = model.fit(ds, epochs=2, verbose=0, validation_data=ds)
    assert len(h1.history["loss"]) == 2 and "val_loss" in h1.history
    assert model.evaluate(ds, verbose=0) == pytest.approx(h1.history["val_loss"][-1], rel=1e-6)

    def gen():
        while True:
            for s in range(0, 32, 8):
                yield x[s:s + 8], y[s:s + 8]
    h2 = model.fit(gen(), steps_per_epoch=4, epochs=3, verbose=0)
    assert len(h2.history["loss"]) == 3

    class Batches(keras.utils.Sequence):
        def __init__(self):
            self.ends = 0
            self.seen = []

        def __len__(self):
            return 4

        def __getitem__(self, i):
            self.seen.append(i)
            return x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]

        def on_epoch_end(self):
            self.ends += 1
    seq = Batches()
    model.fit(seq, epochs=2, verbose=0, shuffle=False)
    assert seq.ends == 2 and seq.seen == [0, 1, 2, 3] * 2
    np.testing.assert_allclose(model.predict(seq, verbose=0), model(x).numpy(), rtol=1e-6)
    # a finite generator runs out: training stops with a warning, not an error
    with pytest.warns(UserWarning, match="ran out of data"):
        h3 = model.fit(iter([(x[:8], y[:8])] * 3), epochs=5, verbose=0)
    assert len(h3.history["loss"]) == 1


def test_multi_output_losses_weights_and_metrics_by_output_name():
    inp = keras.Input(shape=(4,))
    h = L.Dense(6, activation="relu")(inp)
    reg = L.Dense(1, name="reg")(h)
    cls = L.Dense(3, name="cls")(h)
    model = keras.Model(inp, [reg, cls])
    x, labels = _labels(n=24)
    target = x[:, :1] * 2.0
    model.compile(keras.optimizers.SGD(0.0),
                  loss={"reg": "mse", "cls": keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True)},
                  loss_weights={"reg": 0.5, "cls": 2.0},
                  metrics={"cls": ["accuracy"]})
    logs = model.evaluate(x, {"reg": target, "cls": labels}, batch_size=24, verbose=0,
                          return_dict=True)
    assert set(logs) == {"loss", "reg_loss", "cls_loss", "cls_accuracy"}
    r, c = (t.numpy() for t in model(x))
    mse = ((r - target) ** 2).mean()
    shifted = c - c.max(1, keepdims=True)
    ce = -(shifted - np.log(np.exp(shifted).sum(1, keepdims=True)))[np.arange(24), labels].mean()
    np.testing.assert_allclose([logs["reg_loss"], logs["cls_loss"], logs["loss"]],
                               [mse, ce, 0.5 * mse + 2.0 * ce], rtol=1e-5)
    np.testing.assert_allclose(logs["cls_accuracy"], (c.argmax(1) == labels).mean())
    same = model.evaluate(x, [target, labels], batch_size=24, verbose=0, return_dict=True)
    assert same == pytest.approx(logs)
    with pytest.raises(ValueError, match="not outputs of the model"):
        model.compile("sgd", loss={"nope": "mse"})
    with pytest.raises(ValueError, match="2 outputs"):
        model.evaluate(x, [target], verbose=0)


def test_regularization_losses_are_part_of_the_fit_loss():
    x, y = _data(n=16)
    model = keras.Sequential([L.Dense(1, kernel_regularizer=keras.regularizers.L2(0.1))])
    model.build((None, 3))
    model.compile(keras.optimizers.SGD(0.0), "mse")
    k = model.layers[0].kernel.numpy()
    pred = model(x).numpy()
    hist = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    np.testing.assert_allclose(hist.history["loss"][0],
                               ((pred - y) ** 2).mean() + 0.1 * (k ** 2).sum(), rtol=1e-5)


def test_a_custom_train_step_uses_the_compiled_loss_and_metrics():
    class Custom(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(1)
            self.steps = 0

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with gt.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            self.compiled_metrics.update_state(y, y_pred)
            self.steps += 1
            return {m.name: m.result() for m in self.metrics}
    x, y = _data(n=32)
    model = Custom()
    model.compile(keras.optimizers.Adam(0.1), "mse", metrics=["mae"])
    hist = model.fit(x, y, epochs=20, batch_size=8, verbose=0)
    assert model.steps == 80
    assert hist.history["loss"][-1] < 0.1 * hist.history["loss"][0]
    assert set(hist.history) == {"loss", "mae"}


def test_fit_shuffles_reproducibly_under_the_global_seed():
    x, y = _data(n=40)
    weights = []
    for _ in range(2):
        gt.random.set_seed(5)
        model = _linear()
        model.compile(keras.optimizers.SGD(0.1), "mse")
        model.fit(x, y, batch_size=8, epochs=2, verbose=0)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)
    model = _linear()
    model.set_weights(weights[0])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    gt.random.set_seed(6)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)      # another order: other weights
    assert not np.allclose(model.get_weights()[0], weights[0][0])


def test_train_on_batch_returns_the_metrics():
    x, y = _labels(n=16)
    model = _classifier()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    first = model.train_on_batch(x, y)
    assert isinstance(first, list) and len(first) == 2
    for _ in range(30):
        last = model.train_on_batch(x, y, return_dict=True)
    assert last["loss"] < first[0]


def test_fit_errors_are_clear_and_change_nothing():
    x, y = _data(n=20)
    model = _linear()
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y, verbose=0)
    model.compile("sgd", "mse")
    before = model.get_weights()
    with pytest.raises(ValueError, match="x sizes: 20; y sizes: 19"):
        model.fit(x, y[:19], verbose=0)
    with pytest.raises(ValueError, match="y must be None"):
        model.fit(gt.data.Dataset.from_tensor_slices((x, y)).batch(4), y, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(x, y, validation_split=1.5, verbose=0)
    with pytest.raises(ValueError, match="batch_size"):
        model.fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(TypeError, match="epoch_count"):
        model.fit(x, y, epoch_count=3)
    with pytest.raises(ValueError, match="unknown loss"):
        model.compile("sgd", "msqe")
    with pytest.raises(ValueError, match="unknown optimizer"):
        model.compile("sgdx", "mse")
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert model.optimizer.__class__.__name__ == "SGD"        # the failed compiles kept it


def test_progress_output(capsys):
    x, y = _data(n=20)
    model = _linear()
    model.compile("sgd", "mse", metrics=["mae"])
    model.fit(x, y, epochs=2, batch_size=10, verbose=1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[2] == "Epoch 2/2"
    assert out[1].startswith("2/2 [==============================]") and " - loss: " in out[1]
    assert " - mae: " in out[1]
    model.fit(x, y, epochs=1, verbose=0)
    model.evaluate(x, y, verbose=0)
    assert capsys.readouterr().out == ""
    model.evaluate(x, y, batch_size=5, verbose=1)
    assert capsys.readouterr().out.startswith("4/4 [")


class _Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None):
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(f"epoch_begin {epoch}")

    def on_train_batch_end(self, batch, logs=None):
        assert isinstance(logs["loss"], float)          # a user callback gets floats
        self.events.append(f"batch {batch}")

    def on_test_begin(self, logs=None):
        self.events.append("test")

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(f"epoch_end {epoch} {sorted(logs)}")

    def on_train_end(self, logs=None):
        self.events.append("train_end")


def test_callback_hooks_run_in_keras_order():
    x, y = _data(n=8)
    model = _linear()
    model.compile("sgd", "mse")
    rec = _Recorder()
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x, y), callbacks=[rec], verbose=0)
    assert rec.events == ["train_begin", "epoch_begin 0", "batch 0", "batch 1", "test",
                          "epoch_end 0 ['loss', 'val_loss']", "epoch_begin 1", "batch 0",
                          "batch 1", "test", "epoch_end 1 ['loss', 'val_loss']", "train_end"]
    assert rec.model is model and rec.params["epochs"] == 2 and rec.params["steps"] == 2


def test_early_stopping_stops_and_restores_the_best_weights():
    class Script(keras.callbacks.Callback):
        """Feeds EarlyStopping a fixed val_loss sequence and records the weights."""
        values = [1.0, 0.5, 0.6, 0.7, 0.4, 0.3]

        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = self.values[epoch]
            self.snap.append(self.model.get_weights())
    x, y = _data(n=16)
    model = _linear()
    model.compile(keras.optimizers.SGD(0.1), "mse")
    script = Script()
    script.snap = []
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2,
                                         restore_best_weights=True)
    hist = model.fit(x, y, epochs=6, callbacks=[script, stop], verbose=0)
    assert len(hist.history["loss"]) == 4 and stop.stopped_epoch == 3 and stop.best == 0.5
    for a, b in zip(model.get_weights(), script.snap[1]):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="mode"):
        keras.callbacks.EarlyStopping(mode="up")


def test_model_checkpoint_lr_scheduler_plateau_csv_and_nan(tmp_path):
    x, y = _data(n=16)
    model = _linear()
    opt = keras.optimizers.SGD(0.1)
    model.compile(opt, "mse")
    ckpt = keras.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{loss:.3f}"),
                                           monitor="loss", save_weights_only=True,
                                           save_best_only=True)
    sched = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 * 0.5 ** epoch)
    log_path = tmp_path / "log.csv"
    hist = model.fit(x, y, epochs=3, batch_size=4, verbose=0,
                     callbacks=[ckpt, sched, keras.callbacks.CSVLogger(str(log_path))])
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("w-"))
    assert [n[:4] for n in names] == ["w-01", "w-02", "w-03"]      # each epoch improved
    assert float(opt.learning_rate) == pytest.approx(0.025)
    assert hist.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.025])
    rows = list(csv.DictReader(io.StringIO(log_path.read_text())))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    assert [float(r["loss"]) for r in rows] == pytest.approx(hist.history["loss"], rel=1e-6)
    restored = _linear(seed=9)
    restored.load_weights(str(tmp_path / names[-1]))
    for a, b in zip(restored.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="save_freq"):
        keras.callbacks.ModelCheckpoint(str(tmp_path / "m"), save_freq="often")

    class Flat(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = 1.0
    plateau = keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=1, min_lr=0.02)
    opt.learning_rate = 0.1
    model.fit(x, y, epochs=4, verbose=0, callbacks=[Flat(), plateau])
    assert float(opt.learning_rate) == pytest.approx(0.02)      # 0.05, 0.025, then min_lr

    bad = y.copy()
    bad[3] = np.nan
    hist = model.fit(x, bad, batch_size=4, epochs=3, verbose=0,
                     callbacks=[keras.callbacks.TerminateOnNaN()])
    assert len(hist.history["loss"]) == 1 and math.isnan(hist.history["loss"][0])


def test_lambda_callback_gets_float_logs():
    x, y = _data(n=8)
    model = _linear()
    model.compile("sgd", "mse")
    seen = []
    cb = keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append(logs["loss"]),
                                        on_epoch_end=lambda e, logs: seen.append(e))
    model.fit(x, y, batch_size=4, epochs=2, callbacks=[cb], verbose=0)
    assert len(seen) == 6 and all(isinstance(v, float) for v in seen[:2]) and seen[2] == 0
    with pytest.raises(TypeError, match="unknown hook"):
        keras.callbacks.LambdaCallback(on_lunch=print)


def test_a_training_step_on_the_strict_device_stays_on_the_device():
    """fit's steps upload nothing and read nothing back: on the strict device the syncs of a
    fit are the metric reads at the end of each epoch, however many steps it takes."""
    dev = gt.get_device("strict:0")
    x, y = _data(n=64)
    counts = []
    with gt.device(dev):
        xt, yt = gt.constant(x), gt.constant(y)
        for batch in (32, 8):
            model = _linear()
            model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
            model.train_on_batch(xt[:8], yt[:8])                 # builds the optimizer state
            syncs = dev.sync_count
            model.fit(xt, yt, batch_size=batch, epochs=2, shuffle=False, verbose=0)
            counts.append(dev.sync_count - syncs)
            syncs, transfers = dev.sync_count, dev.transfer_count
            model.train_step((xt, yt))
            assert (dev.sync_count - syncs, dev.transfer_count - transfers) == (0, 0)
    assert counts[0] == counts[1] and counts[0] <= 2 * 2


def test_weighted_metrics_use_the_sample_weights_and_verbose_2_prints_a_line_per_epoch(capsys):
    x, y = _labels(n=20)
    model = _classifier()
    model.compile(keras.optimizers.SGD(0.0), keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=["accuracy"], weighted_metrics=["accuracy"])
    sw = (np.arange(20) % 2).astype(np.float32)
    logs = model.evaluate(x, y, sample_weight=sw, verbose=0, return_dict=True)
    hit = model(x).numpy().argmax(1) == y
    np.testing.assert_allclose([logs["accuracy"], logs["weighted_accuracy"]],
                               [hit.mean(), (hit * sw).sum() / sw.sum()], rtol=1e-6)
    model.fit(x, y, epochs=2, batch_size=10, verbose=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[1].startswith("2/2 - ") and "[" not in out[1]
    assert len(out) == 4


def test_subclassed_models_with_several_outputs_compile_and_fit():
    class Two(keras.Model):
        def __init__(self, as_dict):
            super().__init__()
            self.a, self.b = L.Dense(1), L.Dense(2)
            self.as_dict = as_dict

        def call(self, x):
            a, b = self.a(x), self.b(x)
            return {"a": a, "b": b} if self.as_dict else (a, b)
    x, y = _data(n=16)
    y2 = np.concatenate([y, -y], 1)
    model = Two(False)
    model.compile(keras.optimizers.SGD(0.01), ["mse", "mae"], metrics=[["mae"], []])
    hist = model.fit(x, (y, y2), epochs=2, verbose=0)
    assert set(hist.history) == {"loss", "output_1_loss", "output_2_loss", "output_1_mae"}
    model = Two(True)
    model.compile(keras.optimizers.SGD(0.01), {"a": "mse", "b": "mae"}, loss_weights={"b": 2.0})
    logs = model.evaluate(x, {"a": y, "b": y2}, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], logs["a_loss"] + 2 * logs["b_loss"], rtol=1e-6)
    model = Two(True)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="not outputs"):
        model.evaluate(x, {"a": y, "c": y2}, verbose=0)


def test_datasets_restart_each_epoch_and_validation_sees_the_same_batches():
    x, y = _data(n=32)
    ds = gt.data.Dataset.from_tensor_slices((x, y)).batch(8)
    model = _linear()
    model.compile(keras.optimizers.SGD(0.0), "mse")
    hist = model.fit(ds, epochs=3, steps_per_epoch=4, validation_data=ds, validation_steps=2,
                     verbose=0)
    assert len(hist.history["loss"]) == 3
    assert hist.history["val_loss"] == [hist.history["val_loss"][0]] * 3
    assert hist.history["val_loss"][0] == pytest.approx(
        model.evaluate(x[:16], y[:16], verbose=0), rel=1e-6)
    # fewer steps than batches: one pass continues across epochs
    seen = []

    class Count(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(epoch)
    model.fit(ds, epochs=2, steps_per_epoch=2, callbacks=[Count()], verbose=0)
    assert seen == [0, 1]
    with pytest.raises(ValueError, match="infinite"):
        model.fit(ds.repeat(), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="infinite"):
        model.evaluate(ds.repeat(), verbose=0)


def test_bad_compile_and_fit_arguments_fail_before_any_update():
    x, y = _data(n=16)
    model = _linear()
    model.compile("sgd", "mse")
    before = model.get_weights()
    with pytest.raises(ValueError, match="unknown metric 'accuracyy'"):
        model.compile("sgd", "mse", metrics=["accuracyy"])
    with pytest.raises(TypeError, match="validation_freq"):
        model.fit(x, y, validation_data=(x, y), validation_freq="2", verbose=0)
    with pytest.raises(ValueError, match="validation_freq"):
        model.fit(x, y, validation_data=(x, y), validation_freq=0, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert int(model.optimizer.iterations.numpy()) == 0
    hist = model.fit(x, y, validation_data=(x, y), validation_freq=range(2, 3), epochs=3,
                     verbose=0)
    assert len(hist.history["val_loss"]) == 1


def test_small_fixes_csv_columns_baseline_class_weight_list_and_short_arrays(tmp_path):
    x, y = _data(n=16)
    model = _linear()
    model.compile(keras.optimizers.SGD(0.01), "mse")
    path = tmp_path / "log.csv"
    model.fit(x, y, epochs=2, validation_data=(x, y), validation_freq=2, verbose=0,
              callbacks=[keras.callbacks.CSVLogger(str(path))])
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert rows[0]["val_loss"] == "NA" and float(rows[1]["val_loss"]) > 0

    class Script(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = [0.75, 0.74, 0.73, 0.72][epoch]
    stop = keras.callbacks.EarlyStopping(patience=2, baseline=0.8, min_delta=0.1)
    hist = model.fit(x, y, epochs=4, verbose=0, callbacks=[Script(), stop])
    assert len(hist.history["loss"]) == 2                   # none beat 0.8 by 0.1

    xc, yc = _labels(n=12)
    clf = _classifier()
    clf.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    clf.fit(xc, [yc], class_weight={0: 1.0, 1: 2.0, 2: 1.0}, epochs=1, verbose=0)

    with pytest.warns(UserWarning, match="ran out of data"):
        hist = model.fit(x, y, batch_size=8, steps_per_epoch=4, epochs=3, verbose=0)
    assert len(hist.history["loss"]) == 1

    reg = keras.Sequential([L.Dense(1, kernel_regularizer=lambda w: 0.5)])
    reg.compile(keras.optimizers.SGD(0.0), "mse")
    pred = reg(x).numpy()
    loss = reg.fit(x, y, batch_size=16, verbose=0).history["loss"][0]
    assert loss == pytest.approx(((pred - y) ** 2).mean() + 0.5, rel=1e-5)


def test_fit_takes_raw_device_arrays():
    """A CuPy array (here the strict device's array type) is data too: it stays on the
    device and is never read back through NumPy."""
    dev = gt.get_device("strict:0")
    x, y = _data(n=16)
    with gt.device(dev):
        xr, yr = dev.asarray(x), dev.asarray(y)
        model = _linear()
        model.compile(keras.optimizers.SGD(0.05), "mse")
        hist = model.fit(xr, yr, batch_size=8, epochs=2, verbose=0)
        assert len(hist.history["loss"]) == 2
        np.testing.assert_allclose(model.predict(xr, verbose=0), model(x).numpy(), rtol=1e-6)
