"""Keras callbacks, History and the model configs of saving, against TensorFlow 2.21
(Keras 3.15): the order of events and log keys, the numbers logged, the files written and
the final weights, with the reference values TensorFlow gives for the same data, weights
and ``shuffle=False``."""
import contextlib
import csv
import http.server
import inspect
import io
import json
import os
import threading
import urllib.parse
import warnings

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers

_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(20, 3)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5]], "float32") + 0.3).astype("float32")
YC = (X[:, 0] > 0).astype("float32")[:, None]
W0 = [np.array([[0.1], [0.2], [-0.1]], "float32"), np.array([0.05], "float32")]


def _model(opt=None, metrics=None, loss="mse"):
    m = keras.Sequential([keras.Input((3,)), L.Dense(1)])
    m.set_weights(W0)
    m.compile(opt or keras.optimizers.SGD(0.1), loss, metrics=metrics)
    return m


class _Script(keras.callbacks.Callback):
    """Puts a fixed value of ``key`` in each epoch's logs and records the weights."""

    def __init__(self, key, values):
        super().__init__()
        self.key, self.values, self.snap = key, values, []

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = self.values[epoch]
        self.snap.append([w.copy() for w in self.model.get_weights()])


# --- logs, History, the order of the callbacks -------------------------------------------------

class _Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None):
        self.events.append(("train_begin", logs))

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(("epoch_begin", epoch, logs))

    def on_train_batch_end(self, batch, logs=None):
        self.events.append(("batch", batch, list(logs), list(logs.values())))

    def on_test_end(self, logs=None):
        self.events.append(("test_end", list(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(("epoch_end", epoch, list(logs)))

    def on_train_end(self, logs=None):
        self.events.append(("train_end", list(logs)))


def test_logs_and_history_keys_are_sorted_as_keras_3():
    """TensorFlow gives every hook its logs sorted by key (Keras 3's pythonify_logs), so
    ``list(history.history)`` is sorted too; on_train_begin/on_epoch_begin get ``{}``."""
    m = _model(metrics=["mae", keras.metrics.RootMeanSquaredError(), "mse"])
    rec = _Recorder()
    h = m.fit(X, Y, batch_size=8, epochs=2, validation_data=(X[:6], Y[:6]), shuffle=False,
              verbose=0, callbacks=[rec])
    train = ["loss", "mae", "mse", "root_mean_squared_error"]
    assert list(h.history) == train + ["val_" + k for k in train]
    assert rec.events[0] == ("train_begin", {}) and rec.events[1] == ("epoch_begin", 0, {})
    batches = [e for e in rec.events if e[0] == "batch"]
    assert all(e[2] == train for e in batches)
    np.testing.assert_allclose(
        [e[3] for e in batches],
        [[2.918721, 1.497355, 2.918721, 1.708426], [3.093109, 1.293389, 3.093109, 1.758724],
         [2.899183, 1.285207, 2.899183, 1.702699], [1.41824, 1.087288, 1.41824, 1.190899],
         [1.480505, 0.915751, 1.480505, 1.21676], [1.379244, 0.900385, 1.379244, 1.174412]],
        rtol=1e-5)
    assert ("test_end", train) in rec.events
    assert rec.events[-1] == ("train_end", train + ["val_" + k for k in train])
    np.testing.assert_allclose(h.history["loss"], [2.899183, 1.379244], rtol=1e-5)
    np.testing.assert_allclose(h.history["val_loss"], [0.892283, 0.496254], rtol=1e-5)

    m = _model(metrics=["accuracy"], loss="binary_crossentropy")
    h = m.fit(X, YC, batch_size=8, epochs=1, validation_split=0.25, shuffle=False, verbose=0)
    assert list(h.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    np.testing.assert_allclose([v[0] for v in h.history.values()],
                               [0.666667, 2.562549, 1.0, 0.091577], rtol=1e-5)


def test_callback_order_and_a_history_given_to_several_fits():
    """TensorFlow: the given callbacks, then History, then ProgbarLogger; a History passed
    to two fits keeps adding to ``history`` (``epoch`` restarts)."""
    m = _model()
    rec = _Recorder()
    cbs = keras.callbacks.CallbackList([rec], add_history=True, add_progbar=True, model=m,
                                       verbose=1, epochs=1, steps=1)
    assert [type(c).__name__ for c in cbs.callbacks] == ["_Recorder", "History",
                                                         "ProgbarLogger"]
    assert m.history is cbs.callbacks[1]
    h1 = m.fit(X, Y, epochs=1, verbose=0)
    h2 = m.fit(X, Y, epochs=1, verbose=0)
    assert h1 is not h2 and m.history is h2 and len(h2.history["loss"]) == 1
    hist = keras.callbacks.History()
    m.fit(X, Y, epochs=2, verbose=0, callbacks=[hist])
    m.fit(X, Y, epochs=1, verbose=0, callbacks=[hist])
    assert len(hist.history["loss"]) == 3 and hist.epoch == [0]


def test_a_value_added_by_a_callback_reaches_history_and_the_progress_line(capsys):
    """TensorFlow prints "1/1 - ... - loss: 3.4527 - mae: 1.3710 - learning_rate: 0.0500"
    (the sorted logs, then what a callback added)."""
    m = _model(keras.optimizers.SGD(0.1), metrics=["mae"])
    sched = keras.callbacks.LearningRateScheduler(lambda e, lr: 0.05)
    h = m.fit(X, Y, batch_size=20, epochs=2, verbose=2, callbacks=[sched])
    assert list(h.history) == ["loss", "mae", "learning_rate"]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2"
    assert out[1].endswith(" - loss: 3.4527 - mae: 1.3710 - learning_rate: 0.0500")
    assert out[3].endswith(" - loss: 3.0307 - mae: 1.2950 - learning_rate: 0.0500")
    m.fit(X, Y, batch_size=20, epochs=1, verbose=2)
    assert not capsys.readouterr().out.startswith("Epoch")   # one epoch: no Epoch line


# --- EarlyStopping ----------------------------------------------------------------------------------

def _early(values, key="val_loss", metrics=None, **kwargs):
    m = _model(metrics=metrics)
    script = _Script(key, values)
    stop = keras.callbacks.EarlyStopping(monitor=key, **kwargs)
    h = m.fit(X, Y, epochs=len(values), batch_size=20, verbose=0, shuffle=False,
              callbacks=[script, stop])
    final = m.get_weights()
    same = [i for i, s in enumerate(script.snap)
            if all(np.array_equal(a, b) for a, b in zip(final, s))]
    return len(h.history["loss"]), stop.stopped_epoch, stop.best, stop.best_epoch, \
        stop.wait, same


@pytest.mark.parametrize("values, kwargs, want", [
    ([1.0, .5, .6, .7, .4, .3], dict(patience=2, restore_best_weights=True),
     (4, 3, 0.5, 1, 2, [1])),
    # not stopped: the best weights are restored at the end all the same
    ([1.0, .5, .6, .4, .45], dict(patience=2, restore_best_weights=True),
     (5, 0, 0.4, 3, 1, [3])),
    ([1.0, 1.0, 1.0], dict(patience=0), (2, 1, 1.0, 0, 1, [1])),
    ([1.0, 1.2, 1.3, 1.4], dict(patience=0, restore_best_weights=True),
     (2, 1, 1.0, 0, 1, [0])),
    ([.9, .85, .84, .83, .82], dict(patience=2, baseline=0.8, restore_best_weights=True),
     (5, 0, 0.82, 4, 5, [4])),
    ([.9, .85, .84, .83, .82], dict(patience=2, baseline=0.8, min_delta=-0.01),
     (3, 2, 0.85, 1, 3, [2])),
    ([.5, .9, .8, .7, .6, .5, .4], dict(patience=1, start_from_epoch=2,
                                        restore_best_weights=True),
     (7, 0, 0.4, 6, 0, [6])),
    ([.5, .49, .48, .47], dict(patience=1, min_delta=-0.05), (2, 1, 0.5, 0, 1, [1])),
])
def test_early_stopping_matches_keras(values, kwargs, want):
    """TensorFlow's ran epochs, stopped_epoch, best, best_epoch, wait, and which epoch's
    weights the model ends with."""
    got = _early(values, **kwargs)
    assert got[:2] == want[:2] and got[3:] == want[3:]
    assert got[2] == pytest.approx(want[2])


@pytest.mark.parametrize("key, metric, stops", [
    ("val_accuracy", "accuracy", False), ("val_auc", keras.metrics.AUC, False),
    ("val_precision", keras.metrics.Precision, False), ("val_mae", "mae", True),
    ("val_acc", "acc", False), ("acc", "acc", False),
    ("val_binary_accuracy", "binary_accuracy", False),
    ("val_cosine_similarity", "cosine_similarity", False),
    ("val_r2_score", keras.metrics.R2Score, False),
    ("val_mean_squared_error", "mean_squared_error", True), ("val_mse", "mse", True),
])
def test_auto_mode_follows_the_metric_direction(key, metric, stops):
    """TensorFlow reads a metric's direction (an accuracy, AUC, precision, cosine or R2 is
    maximized, an error minimized): a rising value stops the run only when minimized."""
    metric = metric() if isinstance(metric, type) else metric
    ran, stopped, *_ = _early([.5, .6, .7], key=key, metrics=[metric], patience=1)
    assert (ran, stopped) == ((2, 1) if stops else (3, 0))


def test_auto_mode_refuses_a_monitor_of_unknown_direction():
    with pytest.raises(ValueError, match="isn't able to automatically determine"):
        _early([.5, .6, .7], key="val_score", patience=1)

    def myfn(y, p):
        return gt.reduce_mean(p)
    with pytest.raises(ValueError, match="monitor=val_myfn"):
        _early([.5, .6, .7], key="val_myfn", metrics=[myfn], patience=1)
    assert _early([.5, .6, .7], key="val_score", patience=1, mode="max")[:2] == (3, 0)


def test_early_stopping_messages(capsys):
    _early([.5, .49, .48, .47], patience=1, min_delta=0.05, verbose=1)
    assert capsys.readouterr().out == "Epoch 2: early stopping\n"
    _early([1.0, .5, .6, .4, .45], patience=2, restore_best_weights=True, verbose=1)
    assert capsys.readouterr().out == \
        "Restoring model weights from the end of the best epoch: 4.\n"
    m = _model()
    with pytest.warns(UserWarning) as record:
        m.fit(X, Y, epochs=1, verbose=0,
              callbacks=[keras.callbacks.EarlyStopping(monitor="val_nothere", mode="min")])
    assert "Early stopping conditioned on metric `val_nothere` which is not available. " \
           "Available metrics are: loss" in [str(w.message) for w in record]


# --- ModelCheckpoint --------------------------------------------------------------------------

def _checkpoint(tmp_path, path, values=None, key="val_loss", **kwargs):
    m = _model()
    cb = keras.callbacks.ModelCheckpoint(str(tmp_path / path), **kwargs)
    callbacks = [cb] if values is None else [_Script(key, values), cb]
    m.fit(X, Y, epochs=3, batch_size=8, verbose=0, shuffle=False,
          validation_data=(X[:5], Y[:5]), callbacks=callbacks)
    files = sorted(os.listdir(tmp_path))
    for name in files:
        os.remove(tmp_path / name)
    return files, cb.best


def test_model_checkpoint_file_names_and_best(tmp_path):
    """TensorFlow's file names for the same runs (the files hold gradtape's formats)."""
    assert _checkpoint(tmp_path, "m-{epoch:02d}-{val_loss:.2f}.keras") == (
        ["m-01-1.03.keras", "m-02-0.58.keras", "m-03-0.33.keras"], None)
    assert _checkpoint(tmp_path, "m-{epoch:02d}.keras", [0.5, 0.7, 0.4],
                       save_best_only=True) == (["m-01.keras", "m-03.keras"], 0.4)
    assert _checkpoint(tmp_path, "w-{epoch:02d}.weights.h5", [0.5, 0.7, 0.4],
                       save_best_only=True, save_weights_only=True,
                       initial_value_threshold=0.45) == (["w-03.weights.h5"], 0.4)
    # an int save_freq: {batch} is the batch (from 1) within the epoch
    assert _checkpoint(tmp_path, "w-{epoch}-{batch}.weights.h5", save_weights_only=True,
                       save_freq=2)[0] == ["w-1-2.weights.h5", "w-2-1.weights.h5",
                                           "w-2-3.weights.h5", "w-3-2.weights.h5"]
    assert _checkpoint(tmp_path, "w-{epoch}-{loss:.3f}.weights.h5", save_weights_only=True,
                       save_freq=3)[0] == ["w-1-2.899.weights.h5", "w-2-1.379.weights.h5",
                                           "w-3-0.694.weights.h5"]
    assert _checkpoint(tmp_path, "m-{epoch}.keras", [0.5, 0.7, 0.8], key="val_accuracy",
                       save_best_only=True, monitor="val_accuracy",
                       mode="max") == (["m-1.keras", "m-2.keras", "m-3.keras"], 0.8)


def test_model_checkpoint_without_the_monitor_saves_and_warns(tmp_path):
    with pytest.warns(UserWarning, match="Can save best model only with val_nothere "
                                         "available."):
        files, best = _checkpoint(tmp_path, "w.weights.h5", save_weights_only=True,
                                  save_best_only=True, monitor="val_nothere", mode="min")
    assert files == ["w.weights.h5"] and best is None


def test_model_checkpoint_messages_and_errors(tmp_path, capsys):
    _checkpoint(tmp_path, "m-{epoch}.keras", [0.5, 0.4, 0.6], save_best_only=True, verbose=1)
    path = str(tmp_path / "m-{}.keras")
    assert capsys.readouterr().out == (
        f"\nEpoch 1: val_loss improved from None to 0.50000, saving model to "
        f"{path.format(1)}\n\nEpoch 1: finished saving model to {path.format(1)}\n"
        f"\nEpoch 2: val_loss improved from 0.50000 to 0.40000, saving model to "
        f"{path.format(2)}\n\nEpoch 2: finished saving model to {path.format(2)}\n"
        f"\nEpoch 3: val_loss did not improve from 0.40000\n")
    with pytest.raises(ValueError, match="Unrecognized save_freq: bad"):
        keras.callbacks.ModelCheckpoint(str(tmp_path / "m.keras"), save_freq="bad")
    with pytest.raises(KeyError, match="Failed to format this callback filepath"):
        _checkpoint(tmp_path, "m-{epoch}-{nokey}.keras")


# --- ReduceLROnPlateau and LearningRateScheduler -------------------------------------------------

def _plateau(values, key="val_loss", **kwargs):
    m = _model(keras.optimizers.SGD(0.1))
    cb = keras.callbacks.ReduceLROnPlateau(monitor=key, **kwargs)
    h = m.fit(X, Y, epochs=len(values), batch_size=20, verbose=0,
              callbacks=[_Script(key, values), cb])
    return h.history["learning_rate"], float(m.optimizer.learning_rate), cb


@pytest.mark.parametrize("values, kwargs, logged, wait, cooldown", [
    ([1] * 7, dict(factor=0.5, patience=1),
     [0.1, 0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125], 0, 0),
    ([1] * 7, dict(factor=0.5, patience=1, cooldown=2),
     [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125], 0, 1),
    ([1] * 7, dict(factor=0.5, patience=2, min_lr=0.03),
     [0.1, 0.1, 0.1, 0.05, 0.05, 0.03, 0.03], 2, 0),
    # at min_lr (as float32) nothing is reduced, and neither wait nor cooldown restart
    ([1] * 7, dict(factor=0.5, patience=1, min_lr=0.05, cooldown=1),
     [0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05], 5, 0),
    ([1, .99995, .9999, .999], dict(factor=0.5, patience=1), [0.1, 0.1, 0.05, 0.025], 0, 0),
    ([1, .99, .98, .97], dict(factor=0.5, patience=1, min_delta=0.05),
     [0.1, 0.1, 0.05, 0.025], 0, 0),
    ([1, .99, .98, .97], dict(factor=0.5, patience=1, min_delta=-0.05),
     [0.1, 0.1, 0.05, 0.025], 0, 0),
])
def test_reduce_lr_on_plateau_matches_keras(values, kwargs, logged, wait, cooldown):
    got, _, cb = _plateau(values, **kwargs)
    np.testing.assert_allclose(got, logged, rtol=1e-6)
    assert (cb.wait, cb.cooldown_counter) == (wait, cooldown)


def test_reduce_lr_on_plateau_messages_and_errors(capsys):
    _plateau([1, 1, 1], factor=0.5, patience=1, verbose=1)
    assert capsys.readouterr().out == (
        "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05000000074505806.\n"
        "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.02500000037252903.\n")
    with pytest.raises(ValueError, match="monitor=val_score"):
        _plateau([.5, .6], key="val_score")
    with pytest.raises(ValueError, match="does not support a factor >= 1.0"):
        keras.callbacks.ReduceLROnPlateau(factor=1.0)


def test_learning_rate_scheduler_matches_keras(capsys):
    def run(schedule, epochs=3, verbose=0):
        m = _model(keras.optimizers.SGD(0.1))
        h = m.fit(X, Y, epochs=epochs, batch_size=20, verbose=0,
                  callbacks=[keras.callbacks.LearningRateScheduler(schedule, verbose=verbose)])
        assert list(h.history) == ["loss", "learning_rate"]
        return h.history["learning_rate"], h.history["loss"]
    lr, loss = run(lambda e, lr: lr * 0.5)
    np.testing.assert_allclose(lr, [0.05, 0.025, 0.0125], rtol=1e-6)
    np.testing.assert_allclose(loss, [3.452741, 3.030653, 2.846435], rtol=1e-5)
    lr, loss = run(lambda e: 0.1 / (e + 1))
    np.testing.assert_allclose(lr, [0.1, 0.05, 0.0333333], rtol=1e-5)
    np.testing.assert_allclose(loss, [3.452741, 2.64184, 2.334881], rtol=1e-5)
    lr, loss = run(lambda e, lr: lr if e < 1 else lr * float(np.exp(-0.1)))
    np.testing.assert_allclose(lr, [0.1, 0.090484, 0.081873], rtol=1e-5)
    np.testing.assert_allclose(loss, [3.452741, 2.64184, 2.102619], rtol=1e-5)
    lr, _ = run(lambda e, lr: np.float32(0.05))
    assert all(isinstance(v, float) for v in lr)
    capsys.readouterr()
    run(lambda e, lr: 0.05, epochs=1, verbose=1)
    assert capsys.readouterr().out == \
        "\nEpoch 1: LearningRateScheduler setting learning rate to 0.05.\n"
    # Keras 3 takes only a float: an int or a tensor is refused
    with pytest.raises(ValueError, match="should be a float. Got: 1"):
        run(lambda e, lr: 1)
    with pytest.raises(ValueError, match="should be a float"):
        run(lambda e, lr: lr * gt.math.exp(-0.1))


# --- CSVLogger, TerminateOnNaN, LambdaCallback, RemoteMonitor ------------------------------------

def test_csv_logger_rows_columns_and_append(tmp_path):
    path = str(tmp_path / "log.csv")
    m = _model(metrics=["mae"])
    m.fit(X, Y, epochs=2, batch_size=8, verbose=0, shuffle=False,
          validation_data=(X[:5], Y[:5]), validation_freq=2,
          callbacks=[keras.callbacks.CSVLogger(path, separator=";")])
    m.fit(X, Y, epochs=1, batch_size=8, verbose=0, shuffle=False,
          callbacks=[keras.callbacks.CSVLogger(path, separator=";", append=True)])
    text = open(path).read()
    assert text.count("epoch;") == 1
    rows = list(csv.reader(io.StringIO(text), delimiter=";"))
    assert rows[0] == ["epoch", "loss", "mae", "val_loss", "val_mae"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "0"]
    assert rows[1][3:] == ["NA", "NA"] and rows[3][3:] == ["NA", "NA"]
    np.testing.assert_allclose(
        [float(v) for r in rows[1:] for v in r[1:] if v != "NA"],
        [2.8991832733154297, 1.2852065563201904, 1.379244327545166, 0.9003854990005493,
         0.5766618251800537, 0.725032389163971, 0.6935144662857056, 0.6462617516517639],
        rtol=1e-5)

    class Extra(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["vec"] = [1, 2]
            logs["name"] = "x"
    path2 = str(tmp_path / "log2.csv")
    m.fit(X, Y, epochs=1, verbose=0, callbacks=[Extra(), keras.callbacks.CSVLogger(path2)])
    lines = open(path2).read().splitlines()
    assert lines[0] == "epoch,loss,mae,name,vec,val_loss,val_mae,val_name,val_vec"
    assert lines[1].endswith(',x,"""[1, 2]""",NA,NA,NA,NA')


def test_terminate_on_nan_prints_or_raises():
    bad = Y.copy()
    bad[9] = np.nan
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        h = _model().fit(X, bad, batch_size=4, epochs=3, verbose=0, shuffle=False,
                         callbacks=[keras.callbacks.TerminateOnNaN()])
    assert out.getvalue() == "Batch 2: Invalid loss, terminating training\n"
    assert len(h.history["loss"]) == 1
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 2. Loss "
                                           "value: nan. Terminating training immediately."):
        _model().fit(X, bad, batch_size=4, epochs=3, verbose=0, shuffle=False,
                     callbacks=[keras.callbacks.TerminateOnNaN(raise_error=True)])


def test_lambda_callback_takes_keras_3_arguments():
    params = list(inspect.signature(keras.callbacks.LambdaCallback.__init__).parameters)
    assert params == ["self", "on_epoch_begin", "on_epoch_end", "on_train_begin",
                      "on_train_end", "on_train_batch_begin", "on_train_batch_end", "kwargs"]
    seen = []
    cb = keras.callbacks.LambdaCallback(
        None, None, None, None, lambda b, logs: seen.append(("begin", b)),
        lambda b, logs: seen.append(("end", b, sorted(logs))))
    _model().fit(X, Y, batch_size=10, epochs=1, verbose=0, callbacks=[cb])
    assert seen == [("begin", 0), ("end", 0, ["loss"]), ("begin", 1), ("end", 1, ["loss"])]
    seen = []
    cb = keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append(("b", b)),
                                        on_test_batch_end=lambda b, logs: seen.append(("t", b)))
    _model().fit(X, Y, batch_size=10, epochs=1, verbose=0, validation_data=(X, Y),
                 callbacks=[cb])
    assert seen == [("b", 0), ("b", 1), ("t", 0), ("t", 1)]


class _Collector(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body.decode()))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_remote_monitor_posts_each_epoch():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        root = f"http://127.0.0.1:{server.server_port}"
        _Collector.received = []
        _model().fit(X, Y, epochs=2, batch_size=20, verbose=0,
                     callbacks=[keras.callbacks.RemoteMonitor(root=root)])
        _model().fit(X, Y, epochs=1, batch_size=20, verbose=0,
                     callbacks=[keras.callbacks.RemoteMonitor(root=root, path="/j",
                                                              send_as_json=True)])
    finally:
        server.shutdown()
        server.server_close()
    (p0, t0, b0), (_, _, b1), (p2, t2, b2) = _Collector.received
    assert p0 == "/publish/epoch/end/" and t0 == "application/x-www-form-urlencoded"
    sent = json.loads(urllib.parse.parse_qs(b0)["data"][0])
    assert list(sent) == ["epoch", "loss"] and sent["epoch"] == 0
    assert sent["loss"] == pytest.approx(3.452741, rel=1e-5)
    assert json.loads(urllib.parse.parse_qs(b1)["data"][0])["epoch"] == 1
    assert p2 == "/j" and t2 == "application/json" and json.loads(b2)["epoch"] == 0
    with pytest.warns(UserWarning, match="Could not reach RemoteMonitor root server"):
        _model().fit(X, Y, epochs=1, verbose=0, callbacks=[
            keras.callbacks.RemoteMonitor(root="http://127.0.0.1:9")])


# --- BackupAndRestore -------------------------------------------------------------------------

class _Interrupt(keras.callbacks.Callback):
    """Raises at the start of ``epoch``, or after its batch ``batch``."""

    def __init__(self, epoch, batch=None):
        super().__init__()
        self.epoch, self.batch, self.current = epoch, batch, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch
        if self.batch is None and epoch == self.epoch:
            raise RuntimeError("interrupted")

    def on_train_batch_end(self, batch, logs=None):
        if self.batch is not None and self.current == self.epoch and batch == self.batch:
            raise RuntimeError("interrupted")


class _Epochs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)


def _adam_model():
    return _model(keras.optimizers.Adam(0.05), metrics=["mae"])


def _fit_starts_at_the_restored_epoch():
    """Whether fit starts at ``model._initial_epoch`` set by a callback's on_train_begin
    (Keras 3's hand-over from BackupAndRestore to the training loop)."""
    class Set(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.model._initial_epoch = 1
    seen = _Epochs()
    _model().fit(X, Y, epochs=2, batch_size=20, verbose=0, callbacks=[Set(), seen])
    return seen.epochs == [1]


_RESUMES = pytest.mark.skipif(not _fit_starts_at_the_restored_epoch(),
                              reason="fit does not start at model._initial_epoch")


def _interrupted(backup, interrupt, **kwargs):
    m = _adam_model()
    with pytest.raises(RuntimeError, match="interrupted"):
        m.fit(X, Y, batch_size=4, epochs=4, shuffle=False, verbose=0,
              callbacks=[keras.callbacks.BackupAndRestore(backup, **kwargs), interrupt])
    return m


def test_backup_and_restore_writes_keras_files_and_restores_the_state(tmp_path):
    backup = str(tmp_path / "bk")
    m = _interrupted(backup, _Interrupt(2))
    assert sorted(os.listdir(backup)) == ["latest.weights.h5", "training_metadata.json"]
    assert json.load(open(os.path.join(backup, "training_metadata.json"))) == \
        {"epoch": 2, "batch": 0}

    class Probe(keras.callbacks.Callback):
        """The state right after BackupAndRestore restored it; then stops."""
        def on_train_begin(self, logs=None):
            self.weights = self.model.get_weights()
            self.iterations = int(self.model.optimizer.iterations.numpy())
            self.slots = [v.numpy().copy() for v in self.model.optimizer.variables[1:]]
            self.model.stop_training = True
    fresh = _adam_model()
    probe = Probe()
    fresh.fit(X, Y, batch_size=4, epochs=4, shuffle=False, verbose=0, callbacks=[
        keras.callbacks.BackupAndRestore(backup, delete_checkpoint=False), probe])
    assert probe.iterations == int(m.optimizer.iterations.numpy()) == 10
    for a, b in zip(probe.weights, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(probe.slots, [v.numpy() for v in m.optimizer.variables[1:]]):
        np.testing.assert_array_equal(a, b)
    assert os.path.isdir(backup)                      # delete_checkpoint=False kept it
    done = _adam_model()
    done.fit(X, Y, batch_size=4, epochs=1, verbose=0,
             callbacks=[keras.callbacks.BackupAndRestore(str(tmp_path / "other"))])
    assert not os.path.exists(tmp_path / "other")     # deleted when training completes


def test_backup_and_restore_arguments():
    with pytest.raises(ValueError, match="Empty `backup_dir` argument passed"):
        keras.callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match="Expected either 'epoch' or an integer value"):
        keras.callbacks.BackupAndRestore("bk", save_freq="batch")


def test_backup_and_restore_needs_a_built_model_to_restore_into(tmp_path):
    backup = str(tmp_path / "bk")
    _interrupted(backup, _Interrupt(1))
    unbuilt = keras.Sequential([L.Dense(1)])
    unbuilt.compile(keras.optimizers.Adam(0.05), "mse")
    with pytest.raises(ValueError, match="your model must be built"):
        unbuilt.fit(X, Y, epochs=2, verbose=0,
                    callbacks=[keras.callbacks.BackupAndRestore(backup)])


@_RESUMES
def test_backup_and_restore_resumes_as_keras(tmp_path):
    """TensorFlow: a backup at an epoch end resumes at the next epoch with the uninterrupted
    run's numbers; a backup taken every 3 batches restarts the interrupted epoch from its
    first batch with the weights of the last backup (so the step count is larger)."""
    ref = _adam_model()
    h = ref.fit(X, Y, batch_size=4, epochs=4, shuffle=False, verbose=0)
    want_loss = [3.185447, 2.378625, 1.790887, 1.334235]
    np.testing.assert_allclose(h.history["loss"], want_loss, rtol=2e-5)
    cases = [
        ({}, _Interrupt(2), [2, 3], want_loss[2:], 20, [0.625554, -0.601523, 0.330197]),
        (dict(save_freq=3), _Interrupt(2, 2), [2, 3], [1.609327, 1.192726], 22,
         [0.664745, -0.671815, 0.396795]),
        (dict(save_freq=3, double_checkpoint=True), _Interrupt(1, 3), [1, 2, 3],
         [1.915879, 1.438378, 1.057998], 24, [0.713918, -0.738773, 0.424629]),
    ]
    for n, (kwargs, interrupt, epochs, loss, steps, kernel) in enumerate(cases):
        backup = str(tmp_path / f"bk{n}")
        _interrupted(backup, interrupt, **kwargs)
        if kwargs.get("double_checkpoint"):
            assert sorted(os.listdir(backup)) == [
                "latest.weights.h5", "latest.weights.h5.bkp", "training_metadata.json",
                "training_metadata.json.bkp"]
        m = _adam_model()
        seen = _Epochs()
        h = m.fit(X, Y, batch_size=4, epochs=4, shuffle=False, verbose=0,
                  callbacks=[keras.callbacks.BackupAndRestore(backup, **kwargs), seen])
        assert seen.epochs == epochs
        np.testing.assert_allclose(h.history["loss"], loss, rtol=2e-5)
        assert int(m.optimizer.iterations.numpy()) == steps
        np.testing.assert_allclose(m.get_weights()[0].ravel(), kernel, rtol=5e-5, atol=1e-5)
        assert not os.path.exists(backup)


@_RESUMES
def test_backup_and_restore_falls_back_to_the_previous_backup(tmp_path):
    backup = str(tmp_path / "bk")
    _interrupted(backup, _Interrupt(2), double_checkpoint=True)
    with open(os.path.join(backup, "latest.weights.h5"), "r+b") as f:
        f.seek(40)
        f.write(b"\0" * 16)                        # the latest backup is corrupted
    assert json.load(open(os.path.join(backup, "training_metadata.json.bkp")))["epoch"] == 1
    seen = _Epochs()
    _adam_model().fit(X, Y, batch_size=4, epochs=4, shuffle=False, verbose=0,
                      callbacks=[keras.callbacks.BackupAndRestore(
                          backup, double_checkpoint=True), seen])
    assert seen.epochs == [1, 2, 3]


# --- SwapEMAWeights ---------------------------------------------------------------------------

class _Weights(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.at_test, self.at_epoch_end = [], []

    def on_test_begin(self, logs=None):
        self.at_test.append(self.model.get_weights()[0].ravel())

    def on_epoch_end(self, epoch, logs=None):
        self.at_epoch_end.append(self.model.get_weights()[0].ravel())


_EMA_FINAL = [0.604558, -0.660062, 0.204274]
_EMA_EPOCHS = [[0.305849, -0.000835, 0.115592], [0.460615, -0.31219, 0.15707], _EMA_FINAL]
_RAW_EPOCHS = [[0.635375, -0.615701, 0.07358], [0.831467, -1.137499, 0.187118],
               [0.914055, -1.463406, 0.271377]]


@pytest.mark.parametrize("swap_on_epoch", [None, False, True])
def test_swap_ema_weights_matches_keras(device, swap_on_epoch):
    """TensorFlow's validation losses and weights with SGD(use_ema=True, ema_momentum=0.9):
    without the callback validation sees the raw weights; with it the moving averages;
    ``swap_on_epoch`` leaves the averages in the model at each epoch end."""
    m = _model(keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9))
    rec = _Weights()
    cbs = [] if swap_on_epoch is None else [
        keras.callbacks.SwapEMAWeights(swap_on_epoch=swap_on_epoch)]
    h = m.fit(X, Y, batch_size=5, epochs=3, shuffle=False, verbose=0,
              validation_data=(X[:6], Y[:6]), callbacks=cbs + [rec])
    np.testing.assert_allclose(h.history["loss"], [2.735359, 0.968935, 0.367626], rtol=1e-5)
    np.testing.assert_allclose(
        h.history["val_loss"], [0.655981, 0.278692, 0.120159] if swap_on_epoch is None
        else [1.140502, 0.811892, 0.521692], rtol=1e-5)
    np.testing.assert_allclose(rec.at_test, _RAW_EPOCHS if swap_on_epoch is None
                               else _EMA_EPOCHS, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(rec.at_epoch_end, _EMA_EPOCHS if swap_on_epoch
                               else _RAW_EPOCHS, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(m.get_weights()[0].ravel(), _EMA_FINAL, rtol=1e-5, atol=2e-6)


def test_swap_ema_weights_in_evaluate_and_predict_swaps_back():
    """TensorFlow evaluates and predicts with the averages; after ``evaluate`` the raw
    weights are back (Keras 3's ``predict`` leaves the averages in the model, a slip this
    callback does not copy: it swaps back after ``predict`` too)."""
    m = _model(keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9))
    for _ in range(3):
        m.train_on_batch(X, Y)
    before = m.get_weights()
    np.testing.assert_allclose(m.predict(X[:2], verbose=0).ravel(), [0.379648, 0.505133],
                               rtol=1e-5)
    np.testing.assert_allclose(
        m.predict(X[:2], verbose=0, callbacks=[keras.callbacks.SwapEMAWeights()]).ravel(),
        [0.174019, 0.19953], rtol=1e-5)
    assert m.evaluate(X, Y, verbose=0, callbacks=[keras.callbacks.SwapEMAWeights()]) == \
        pytest.approx(2.469559, rel=1e-5)
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Received: use_ema=False"):
        _model().fit(X, Y, epochs=1, verbose=0, validation_data=(X, Y),
                     callbacks=[keras.callbacks.SwapEMAWeights()])


# --- registration -----------------------------------------------------------------------------

def test_registered_names_as_keras_3():
    """TensorFlow: a class registered as "P>Foo" is found by that name only."""
    @keras.utils.register_keras_serializable(package="KcbP", name="KcbFoo")
    class Foo(L.Layer):
        def call(self, x):
            return x
    u = keras.utils
    assert u.get_registered_object("KcbFoo") is None
    assert u.get_registered_object("KcbP>KcbFoo") is Foo
    assert u.get_registered_name(Foo) == "KcbP>KcbFoo"
    table = u.get_custom_objects()
    assert "KcbFoo" not in table and table["KcbP>KcbFoo"] is Foo
    assert gt.saving.get_registered_object("KcbFoo") is None
    assert gt.saving.get_registered_name(Foo) == "KcbP>KcbFoo"

    @keras.utils.register_keras_serializable()
    def kcb_act(x):
        return x
    assert u.get_registered_name(kcb_act) == "Custom>kcb_act"
    assert u.get_registered_object("kcb_act") is None
    assert u.get_registered_object("Custom>kcb_act") is kcb_act
    with pytest.raises(ValueError, match="Cannot register a class that does not have a "
                                         "get_config"):
        @keras.utils.register_keras_serializable()
        class NoConfig:
            pass

    m = keras.Sequential([keras.Input((3,)), Foo(name="foo")])
    entry = m.get_config()["layers"][1]
    assert {k: v for k, v in entry.items() if k != "config"} == {
        "module": __name__, "class_name": "Foo", "registered_name": "KcbP>KcbFoo"}
    again = keras.Sequential.from_config(m.get_config())
    assert type(again.layers[0]) is Foo
    # a config that names the class without its package (gradtape's earlier layout)
    old = {"name": "s", "trainable": True, "build_input_shape": [None, 3],
           "input_dtype": "float32",
           "layers": [{"class_name": "KcbFoo", "config": {"name": "foo", "trainable": True,
                                                          "dtype": "float32"}}]}
    assert type(keras.Sequential.from_config(old).layers[0]) is Foo


# --- Sequential configs -----------------------------------------------------------------------

def test_sequential_config_has_keras_3_input_layer_entry():
    m = keras.Sequential([keras.Input((4,)), L.Dense(3, name="d")], name="seq")
    c = m.get_config()
    assert list(c) == ["name", "trainable", "dtype", "layers", "build_input_shape"]
    first, dense = c["layers"]
    assert first["class_name"] == "InputLayer" and first["module"] == "keras.layers"
    assert first["registered_name"] is None
    assert {k: v for k, v in first["config"].items() if k != "name"} == {
        "batch_shape": (None, 4), "dtype": "float32", "sparse": False, "ragged": False,
        "optional": False}
    assert list(dense) == ["module", "class_name", "config", "registered_name"]
    assert (dense["module"], dense["class_name"], dense["registered_name"]) == (
        "keras.layers", "Dense", None)
    assert c["build_input_shape"] == (None, 4)
    json.dumps(c)
    again = keras.Sequential.from_config(c)
    assert [layer.name for layer in again.layers] == ["d"] and again.built
    assert again.input_shape == (None, 4) and len(again.weights) == 2

    unbuilt = keras.Sequential([L.Dense(3)])
    c = unbuilt.get_config()
    assert list(c) == ["name", "trainable", "dtype", "layers"]
    assert [e["class_name"] for e in c["layers"]] == ["Dense"]
    unbuilt.build((None, 5))
    c = unbuilt.get_config()
    assert [e["class_name"] for e in c["layers"]] == ["InputLayer", "Dense"]
    assert c["build_input_shape"] == (None, 5)

    ints = keras.Sequential([keras.Input((2,), dtype="int32"), L.Embedding(5, 2)])
    assert ints.get_config()["layers"][0]["config"]["dtype"] == "int32"
    assert keras.Sequential.from_config(ints.get_config()).inputs[0].dtype == gt.int32


def test_sequential_configs_of_the_earlier_layout_still_load(tmp_path):
    old = {"name": "old", "trainable": True, "build_input_shape": [None, 3],
           "input_dtype": "float32",
           "layers": [{"class_name": "Dense", "config": {"name": "d", "units": 2,
                                                          "trainable": True,
                                                          "dtype": "float32"}}]}
    m = keras.Sequential.from_config(old)
    assert m.built and m.input_shape == (None, 3) and m.layers[0].units == 2
    path = str(tmp_path / "m.keras")
    m.compile("sgd", "mse")
    m.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(X).numpy(), m(X).numpy(), rtol=1e-6)
    c = loaded.get_config()
    assert c["layers"][0]["class_name"] == "InputLayer"


def test_nested_sequential_entry_is_keras_3():
    """TensorFlow: [("keras.layers", "InputLayer", None), ("keras", "Sequential", None),
    ("keras.layers", "BatchNormalization", None)]."""
    inner = keras.Sequential([keras.Input((3,)), L.Dense(2)])
    outer = keras.Sequential([keras.Input((3,)), inner, L.BatchNormalization()])
    assert [(e["module"], e["class_name"], e["registered_name"])
            for e in outer.get_config()["layers"]] == [
        ("keras.layers", "InputLayer", None), ("keras", "Sequential", None),
        ("keras.layers", "BatchNormalization", None)]
    again = keras.Sequential.from_config(outer.get_config())
    assert [type(layer).__name__ for layer in again.layers] == ["Sequential",
                                                                "BatchNormalization"]


def test_functional_layer_entries_have_the_keras_3_layout():
    inp = keras.Input((3,))
    f = keras.Model(inp, L.Dense(1, name="out")(inp))
    s = keras.Sequential([keras.Input((3,)), f])
    entry = s.get_config()["layers"][1]
    assert {k: v for k, v in entry.items() if k != "config"} == {
        "module": "keras.src.models.functional", "class_name": "Functional",
        "registered_name": "Functional"}
    dense = [e for e in f.get_config()["layers"] if e["class_name"] == "Dense"][0]
    assert (dense["module"], dense["registered_name"]) == ("keras.layers", None)
    again = keras.Sequential.from_config(s.get_config())
    again.set_weights(s.get_weights())
    np.testing.assert_allclose(again(X).numpy(), s(X).numpy(), rtol=1e-6)


def test_model_checkpoint_files_load(tmp_path):
    """The whole-model files ModelCheckpoint writes load back (weights and state)."""
    m = _model()
    m.fit(X, Y, epochs=2, batch_size=8, verbose=0, shuffle=False,
          callbacks=[keras.callbacks.ModelCheckpoint(str(tmp_path / "m-{epoch}.keras"))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = keras.models.load_model(str(tmp_path / "m-2.keras"))
    np.testing.assert_allclose(loaded(X).numpy(), m(X).numpy(), rtol=1e-6)
