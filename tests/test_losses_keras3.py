"""Keras 3.15's Dice, Tversky, Circle and CategoricalGeneralizedCrossEntropy losses and the
interactive-logging switch and Config of ``keras.utils``, against values computed with
TensorFlow 2.21 (tf.keras = Keras 3.15) and hard-coded here."""
import io
import json
import logging

import numpy as np
import pytest

import gradtape as gt

L = gt.keras.losses

rng = np.random.default_rng(7)
YT = (rng.random((3, 4, 5)) > 0.5).astype(np.float32)
YP = rng.random((3, 4, 5)).astype(np.float32)
SW = np.array([0.5, 2.0, 1.0], np.float32)
E = rng.standard_normal((6, 4)).astype(np.float32)
E = E / np.linalg.norm(E, axis=1, keepdims=True)
LAB = np.array([0, 0, 1, 1, 2, 3], np.int32)
SW6 = np.array([1, 2, 3, 1, 1, 0.5], np.float32)
R = rng.standard_normal((5, 4)).astype(np.float32)
R = R / np.linalg.norm(R, axis=1, keepdims=True)
RLAB = np.array([0, 1, 2, 0, 3], np.int32)
P = rng.random((4, 3)).astype(np.float32) + 0.05
P = P / P.sum(1, keepdims=True)
GL = np.array([0, 2, 1, 2], np.int32)
SW4 = np.array([1.0, 0.5, 2.0, 0.0], np.float32)

# name: (loss of the variable x, the value x takes)
CASES = {
    "dice_fn_none": (lambda p: L.dice(YT, p),
        YP),
    "dice_fn_12": (lambda p: L.dice(YT, p, axis=(1, 2)),
        YP),
    "dice_fn_last": (lambda p: L.dice(YT, p, axis=-1),
        YP),
    "dice_obj": (lambda p: L.Dice()(YT, p),
        YP),
    "dice_obj_12_sw": (lambda p: L.Dice(axis=(1, 2))(YT, p, sample_weight=SW),
        YP),
    "dice_obj_none_sw": (lambda p: L.Dice()(YT, p, sample_weight=SW),
        YP),
    "dice_obj_12_sum": (lambda p: L.Dice(axis=(1, 2), reduction="sum")(YT, p),
        YP),
    "dice_obj_12_mws": (lambda p: L.Dice(axis=(1, 2), reduction="mean_with_sample_weight")(
        YT, p, sample_weight=SW),
        YP),
    "tv_fn_none": (lambda p: L.tversky(YT, p),
        YP),
    "tv_fn_37_1": (lambda p: L.tversky(YT, p, alpha=0.3, beta=0.7, axis=1),
        YP),
    "tv_obj_37_12_sw": (lambda p: L.Tversky(0.3, 0.7, axis=(1, 2))(YT, p, sample_weight=SW),
        YP),
    "tv_obj_none": (lambda p: L.Tversky(alpha=0.8, beta=0.1, reduction=None, axis=(2,))(YT, p),
        YP),
    "circle_fn": (lambda e: L.circle(LAB, e),
        E),
    "circle_fn_nodiag": (lambda e: L.circle(LAB, e, remove_diagonal=False, gamma=10, margin=0.25),
        E),
    "circle_fn_ref": (lambda e: L.circle(LAB, e, ref_labels=RLAB, ref_embeddings=R),
        E),
    "circle_obj": (lambda e: L.Circle()(LAB, e),
        E),
    "circle_obj_sw": (lambda e: L.Circle(gamma=20.0, margin=0.3)(LAB, e, sample_weight=SW6),
        E),
    "circle_obj_sum": (lambda e: L.Circle(reduction="sum")(LAB, e),
        E),
    "circle_obj_none": (lambda e: L.Circle(reduction=None)(LAB, e),
        E),
    "circle_obj_nodiag_mws": (lambda e: L.Circle(
        remove_diagonal=False, reduction="mean_with_sample_weight")(LAB, e, sample_weight=SW6),
        E),
    "gce_fn": (lambda p: L.categorical_generalized_cross_entropy(GL, p, q=0.7),
        P),
    "gce_fn_col": (lambda p: L.categorical_generalized_cross_entropy(GL[:, None], p, q=0.3),
        P),
    "gce_obj": (lambda p: L.CategoricalGeneralizedCrossEntropy()(GL, p),
        P),
    "gce_obj_sw": (lambda p: L.CategoricalGeneralizedCrossEntropy(q=0.2)(GL, p, sample_weight=SW4),
        P),
    "gce_obj_col": (lambda p: L.CategoricalGeneralizedCrossEntropy()(GL[:, None], p),
        P),
    "gce_obj_float": (lambda p: L.CategoricalGeneralizedCrossEntropy(q=0.9, reduction="sum")(
        GL.astype(np.float32), p),
        P),}

# TF 2.21: (the loss value, rounded to 6 decimals; [sum(g), sum(g * cos(arange(g.size))),
# sum(|g|)] of g = d sum(loss * arange(1, loss.size + 1)) / dx, rounded to 5 decimals)
REF = {'dice_fn_none': (0.459013, [-0.47916, -0.00066, 0.98811]),
 'dice_fn_12': ([0.398229, 0.668603, 0.379143], [-2.9515, 0.23465, 5.75006]),
 'dice_fn_last': ([[0.303342, 0.470052, 0.927685, 0.189185],
                   [0.704425, 0.465116, 0.801856, 0.973631],
                   [0.33352, 0.413986, 0.516919, 0.310907]],
                  [-37.88195, -2.79164, 68.34675]),
 'dice_obj': (0.459013, [-0.47916, -0.00066, 0.98811]),
 'dice_obj_12_sw': (0.638488, [-0.5685, 0.1315, 1.14985]),
 'dice_obj_none_sw': (0.535516, [-0.55902, -0.00077, 1.15279]),
 'dice_obj_12_sum': (1.445975, [-1.49688, 0.07561, 2.9002]),
 'dice_obj_12_mws': (0.547275, [-0.48729, 0.11271, 0.98558]),
 'tv_fn_none': (0.459013, [-0.47916, -0.00066, 0.98811]),
 'tv_fn_37_1': ([[0.338159, 0.280514, 0.375579, 0.315241, 0.778813],
                 [0.553345, 1.0, 0.494761, 0.688925, 0.669231],
                 [0.849077, 0.201504, 0.296179, 0.47277, 0.098616]],
                [-40.16685, 3.87582, 109.90574]),
 'tv_obj_37_12_sw': (0.642809, [-0.35278, 0.12555, 1.13619]),
 'tv_obj_none': ([[0.324834, 0.521005, 0.877813, 0.27184],
                  [0.510767, 0.535373, 0.695324, 0.967478],
                  [0.345535, 0.47729, 0.221144, 0.294427]],
                 [-64.84319, -3.58552, 76.71441]),
 'circle_fn': ([130.565659, 107.450554, 138.305923, 161.851685, 0.0, 0.0],
               [1328.27723, 403.85452, 8785.45362]),
 'circle_fn_nodiag': ([18.400406, 15.764662, 19.9925, 22.269257, 2.063316, 1.16314],
                      [153.75052, 54.59851, 1153.74171]),
 'circle_fn_ref': ([56.793369, 157.267288, 172.767838, 152.417343, 130.82637, 134.842728],
                   [625.29281, -426.10203, 8672.70399]),
 'circle_obj': (134.543442, [213.1492, 114.48329, 850.2244]),
 'circle_obj_sw': (62.659191, [75.66097, 31.30372, 368.63933]),
 'circle_obj_sum': (538.173828, [852.5968, 457.93317, 3400.89762]),
 'circle_obj_none': ([130.565659, 107.450554, 138.305923, 161.851685, 0.0, 0.0],
                     [1328.27723, 403.85452, 8785.45362]),
 'circle_obj_nodiag_mws': (108.498466, [159.21759, 62.21143, 666.19507]),
 'gce_fn': ([0.707069, 0.802849, 0.922824, 0.67088], [-14.11983, -5.70094, 14.11983]),
 'gce_fn_col': ([[0.845983, 0.695123, 0.384476, 1.229729],
                 [1.250719, 0.993272, 1.6213, 0.793261],
                 [0.773704, 1.177608, 1.197307, 0.839313],
                 [1.250719, 0.993272, 1.6213, 0.793261]],
                [-369.12238, 38.17124, 369.12238]),
 'gce_obj': (0.859773, [-1.7762, -0.93257, 1.7762]),
 'gce_obj_sw': (0.994753, [-2.50503, -1.87185, 2.50503]),
 'gce_obj_col': (0.907037, [-1.93951, 0.16106, 1.93951]),
 'gce_obj_float': (2.814327, [-4.48241, -2.30098, 4.48241])}


def _run(fn, x0):
    x = gt.Variable(x0)
    with gt.GradientTape() as tape:
        v = fn(x)
        w = np.arange(1, v.numpy().size + 1, dtype=np.float32).reshape(v.shape)
        s = gt.reduce_sum(v * w)
    g = tape.gradient(s, x).numpy().astype(np.float64)
    wg = np.cos(np.arange(g.size)).reshape(g.shape)
    return v.numpy(), [g.sum(), (g * wg).sum(), np.abs(g).sum()]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_tf(name):
    fn, x0 = CASES[name]
    value, proj = _run(fn, x0)
    ref_value, ref_proj = REF[name]
    np.testing.assert_allclose(value, np.asarray(ref_value), rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(proj, ref_proj, rtol=5e-5, atol=5e-4)


def test_dice_keras_docstring_example():
    y_true = [[[[1.0], [1.0]], [[0.0], [0.0]]], [[[1.0], [1.0]], [[0.0], [0.0]]]]
    y_pred = [[[[0.0], [1.0]], [[0.0], [1.0]]], [[[0.4], [0.0]], [[0.0], [0.9]]]]
    loss = L.Dice(axis=(1, 2, 3), reduction=None)(y_true, y_pred)
    np.testing.assert_allclose(loss.numpy(), [0.5, 0.75757575], rtol=1e-6)
    loss = L.Dice()(y_true, y_pred)
    assert loss.shape == ()
    np.testing.assert_allclose(loss.numpy(), 0.6164384, rtol=1e-6)
    # Tversky with alpha = beta = 0.5 is the Dice loss
    np.testing.assert_allclose(L.tversky(y_true, y_pred, axis=[1, 2, 3]).numpy(),
                               [0.5, 0.75757575], rtol=1e-6)


def test_circle_masks_the_samples_without_loss():
    per = L.circle(LAB, E)
    np.testing.assert_array_equal(gt.keras.layers.get_mask(per).numpy(),
                                  [True] * 4 + [False] * 2)
    # the mean runs over the 4 samples with a loss > 0, not over all 6
    np.testing.assert_allclose(L.Circle()(LAB, E).numpy(), per.numpy()[:4].mean(), rtol=1e-6)


def test_gce_integer_column_labels_broadcast_as_keras():
    # Keras one-hot encodes (N, 1) labels to (N, 1, C): the product with (N, C) broadcasts
    assert L.categorical_generalized_cross_entropy(GL[:, None], P, q=0.3).shape == (4, 4)


def test_defaults_and_configs_match_keras():
    d = L.Dice()
    assert (d.name, d.reduction, d.axis) == ("dice", "sum_over_batch_size", None)
    t = L.Tversky()
    assert (t.name, t.alpha, t.beta, t.axis) == ("tversky", 0.5, 0.5, None)
    c = L.Circle()
    assert (c.name, c.gamma, c.margin, c.remove_diagonal) == ("circle", 80.0, 0.4, True)
    q = L.CategoricalGeneralizedCrossEntropy()
    assert (q.name, q.q) == ("categorical_generalized_cross_entropy", 0.5)
    # Keras 3.15's get_config / serialize of these objects
    assert L.Dice(axis=(1, 2)).get_config() == {
        "name": "dice", "reduction": "sum_over_batch_size", "axis": (1, 2)}
    assert L.Tversky(0.3, 0.7, axis=-1).get_config() == {
        "name": "tversky", "reduction": "sum_over_batch_size", "alpha": 0.3, "beta": 0.7,
        "axis": -1}
    assert L.Circle(gamma=20.0).get_config() == {
        "name": "circle", "reduction": "sum_over_batch_size", "gamma": 20.0, "margin": 0.4,
        "remove_diagonal": True}
    assert L.serialize(L.CategoricalGeneralizedCrossEntropy(q=0.7)) == {
        "module": "keras.losses", "class_name": "CategoricalGeneralizedCrossEntropy",
        "config": {"name": "categorical_generalized_cross_entropy",
                   "reduction": "sum_over_batch_size", "q": 0.7},
        "registered_name": None}


@pytest.mark.parametrize("obj", [L.Dice(axis=(1, 2), reduction="sum"),
                                 L.Tversky(0.3, 0.7, axis=(1, 2), name="tv"),
                                 L.Circle(gamma=20.0, margin=0.3, remove_diagonal=False),
                                 L.CategoricalGeneralizedCrossEntropy(q=0.2)])
def test_serialization_round_trip(obj):
    cfg = json.loads(json.dumps(L.serialize(obj)))
    back = L.deserialize(cfg)
    assert type(back) is type(obj)
    assert back.get_config() == obj.get_config()
    assert type(L.get(cfg)) is type(obj)
    assert type(L.get(type(obj).__name__)) is type(obj)


def test_get_by_function_name():
    assert L.get("dice") is L.dice
    assert L.get("tversky") is L.tversky
    assert L.get("circle") is L.circle
    assert L.get("categorical_generalized_cross_entropy") is \
        L.categorical_generalized_cross_entropy
    for name in ("Dice", "Tversky", "Circle", "CategoricalGeneralizedCrossEntropy", "dice",
                 "tversky", "circle", "categorical_generalized_cross_entropy"):
        assert name in L.__all__


@pytest.mark.parametrize("q", [0, 1, -0.5, 1.5])
def test_gce_q_outside_the_open_interval_is_refused(q):
    with pytest.raises(ValueError, match="q must be in the interval"):
        L.CategoricalGeneralizedCrossEntropy(q=q)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="reduction"):
        L.Dice(reduction="avg")
    with pytest.raises(TypeError, match="dice: axis"):
        L.dice(YT, YP, axis="rows")
    with pytest.raises(ValueError, match="circle"):
        L.circle(LAB, YP)


def test_strict_device():
    with gt.device("strict:0"):
        for name in ("dice_obj_12_sw", "tv_obj_37_12_sw", "circle_obj_sw", "gce_obj_sw",
                     "circle_fn_ref"):
            fn, x0 = CASES[name]
            value, proj = _run(fn, x0)
            np.testing.assert_allclose(value, np.asarray(REF[name][0]), rtol=2e-5, atol=2e-6)
            np.testing.assert_allclose(proj, REF[name][1], rtol=5e-5, atol=5e-4)


# --- keras.utils: interactive logging, Config -----------------------------------------------

@pytest.fixture
def logger_records():
    records = []

    class _Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    log = logging.getLogger("gradtape")
    handler, level = _Keep(), log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield records
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        gt.keras.utils.enable_interactive_logging()


def _model():
    m = gt.keras.Sequential([gt.keras.layers.Dense(1)])
    m.compile("sgd", "mse")
    return m


def test_interactive_logging_switch_routes_fit_and_predict_output(capsys, logger_records):
    u = gt.keras.utils
    assert u.is_interactive_logging_enabled() is True
    x, y = np.ones((8, 2), np.float32), np.ones((8, 1), np.float32)
    m = _model()
    m.fit(x, y, epochs=2, verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "loss:" in out
    assert logger_records == []
    u.disable_interactive_logging()
    assert u.is_interactive_logging_enabled() is False
    m.fit(x, y, epochs=2, verbose=2)
    m.predict(x, verbose=1)
    assert capsys.readouterr().out == ""
    assert logger_records[0] == "Epoch 1/2" and logger_records[2] == "Epoch 2/2"
    assert "loss:" in logger_records[1] and "loss:" in logger_records[3]
    assert logger_records[4].startswith("1/1 [")          # predict's final bar line
    assert all("\r" not in r and not r.endswith("\n") for r in logger_records)
    u.enable_interactive_logging()
    assert u.is_interactive_logging_enabled() is True
    m.fit(x, y, epochs=1, verbose=2)
    assert "loss:" in capsys.readouterr().out
    assert len(logger_records) == 5


def test_progbar_and_callback_messages_follow_the_switch(capsys, logger_records):
    u = gt.keras.utils
    u.disable_interactive_logging()
    bar = u.Progbar(3, verbose=2)
    bar.update(3, [("loss", 0.5)])
    cb = gt.keras.callbacks.TerminateOnNaN()
    cb.set_model(_model())
    cb.on_batch_end(4, {"loss": float("nan")})
    assert capsys.readouterr().out == ""
    assert logger_records[0].startswith("3/3 - ") and "loss: 0.5000" in logger_records[0]
    assert logger_records[1] == "Batch 4: Invalid loss, terminating training"
    u.enable_interactive_logging()
    bar = u.Progbar(3, verbose=2)
    bar.update(3, [("loss", 0.5)])
    assert capsys.readouterr().out.startswith("3/3 - ")
    assert len(logger_records) == 2


def test_progbar_logger_stream_when_interactive():
    stream = io.StringIO()
    cb = gt.keras.callbacks.ProgbarLogger(stream=stream)
    cb.set_params({"verbose": 2, "epochs": 2, "steps": 1})
    cb.on_epoch_begin(0)
    cb.on_train_batch_end(0, {"loss": 1.0})
    cb.on_epoch_end(0, {"loss": 1.0})
    lines = stream.getvalue().splitlines()
    assert lines[0] == "Epoch 1/2" and lines[1].startswith("1/1 - ")


def test_config_behaves_as_keras():
    c = gt.keras.utils.Config(learning_rate=0.1, momentum=0.9)
    c.use_ema = True
    c["seed"] = 123
    assert c.seed == 123 and c["learning_rate"] == 0.1 and c.use_ema is True
    assert list(c) == ["learning_rate", "momentum", "seed", "use_ema"]      # sorted
    assert list(c.keys()) == ["learning_rate", "momentum", "use_ema", "seed"]
    assert len(c) == 4 and "seed" in c and "nope" not in c
    assert c.as_dict() == {"learning_rate": 0.1, "momentum": 0.9, "use_ema": True, "seed": 123}
    assert json.loads(c.to_json()) == c.as_dict()
    assert c.get("missing", 7) == 7
    assert repr(gt.keras.utils.Config(a=1)) == "<Config {'a': 1}>"
    with pytest.raises(AttributeError, match="Unknown attribute: 'learning_rat'. Did you mean "
                                             "'learning_rate'"):
        c.learning_rat
    c.freeze()
    assert c.frozen
    for change in (lambda: setattr(c, "x", 1), lambda: c.__setitem__("x", 1),
                   lambda: c.pop("seed"), lambda: c.update(x=1), lambda: c.__delitem__("seed")):
        with pytest.raises(ValueError, match="frozen"):
            change()
    assert c.as_dict() == {"learning_rate": 0.1, "momentum": 0.9, "use_ema": True, "seed": 123}
    c.unfreeze()
    assert c.pop("seed") == 123
    del c["use_ema"]
    c.update(momentum=0.5)
    assert c.as_dict() == {"learning_rate": 0.1, "momentum": 0.5}
