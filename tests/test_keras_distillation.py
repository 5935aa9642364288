"""keras.distillation against Keras 3.15 (the expected numbers are Keras' on the same
weights): the two distillation losses, the Distiller's combined loss, two epochs of fit and
an evaluate, its metrics, configs, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
D = keras.distillation


def _mk(name):
    inp = keras.Input((4,), name="x")
    h = keras.layers.Dense(8, activation="relu", name="hid")(inp)
    return keras.Model(inp, keras.layers.Dense(3, name="logits")(h), name=name)


def _weights(seed):
    r = np.random.RandomState(seed)
    return [r.randn(4, 8).astype("float32") * 0.5, r.randn(8).astype("float32") * 0.1,
            r.randn(8, 3).astype("float32") * 0.5, r.randn(3).astype("float32") * 0.1]


def _setup():
    t, s = _mk("teacher"), _mk("student")
    t.set_weights(_weights(1))
    s.set_weights(_weights(2))
    r = np.random.RandomState(0)
    return t, s, r.randn(6, 4).astype("float32"), r.randint(0, 3, 6)


def test_distillation_losses():
    t, s, x, _ = _setup()
    tx, sx = t(x), s(x)
    assert float(D.LogitsDistillation(temperature=2.0).compute_loss(tx, sx)) == \
        pytest.approx(2.569072961807251, rel=1e-5)
    kl = D.LogitsDistillation(temperature=2.0, loss=keras.losses.KLDivergence())
    assert float(kl.compute_loss(tx, sx)) == pytest.approx(0.059951167553663254, rel=1e-5)
    assert float(D.FeatureDistillation().compute_loss(tx, sx)) == \
        pytest.approx(0.9633998870849609, rel=1e-5)
    both = D.FeatureDistillation(loss=["mse", None])
    assert float(both.compute_loss([tx, tx], [sx, tx])) == \
        pytest.approx(0.9633998870849609, rel=1e-5)
    with gt.GradientTape() as tape:
        sx = s(x)
        loss = D.LogitsDistillation(temperature=2.0).compute_loss(tx, sx)
    grads = tape.gradient(loss, s.trainable_variables)
    assert all(g is not None for g in grads)


def test_distiller_fit_evaluate():
    t, s, x, y = _setup()
    d = D.Distiller(t, s, [D.LogitsDistillation(temperature=2.0),
                           D.FeatureDistillation(loss="mse", teacher_layer_name="hid",
                                                 student_layer_name="hid")],
                    distillation_loss_weights=[1.0, 0.5], student_loss_weight=0.3)
    d.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    assert t.trainable is False and len(d.trainable_variables) == 4 and len(d.weights) == 8
    assert float(d.compute_loss(x, y, d(x))) == pytest.approx(5.233334541320801, rel=1e-5)
    h = d.fit(x, y, epochs=2, batch_size=6, verbose=0)
    ref = {"distillation_loss": [2.990313768386841, 2.944700002670288],
           "loss": [5.233334541320801, 3.6911580562591553],
           "student_loss": [10.467049598693848, 5.4328932762146],
           "total_loss": [5.233334541320801, 3.6911580562591553]}
    assert sorted(h.history) == sorted(ref)
    for k, v in ref.items():
        np.testing.assert_allclose(h.history[k], v, rtol=1e-5)
    np.testing.assert_allclose(s.get_weights()[3],
                               [0.5766339302062988, 0.0646558403968811, -0.16748782992362976],
                               rtol=1e-4)
    e = d.evaluate(x, y, verbose=0, return_dict=True)
    ref = {"distillation_loss": 3.0154314041137695, "loss": 2.9513638019561768,
           "student_loss": 2.8018739223480225, "total_loss": 2.951364040374756}
    for k, v in ref.items():
        assert e[k] == pytest.approx(v, rel=1e-5)
    assert [m.name for m in d.metrics] == ["loss", "student_loss", "distillation_loss",
                                           "total_loss"]
    np.testing.assert_allclose(d.predict(x, verbose=0), s.predict(x, verbose=0), rtol=1e-6)


def test_configs_round_trip():
    assert D.LogitsDistillation(3.0).get_config() == {"temperature": 3.0, "loss": {
        "module": "builtins", "class_name": "function", "config": "kl_divergence",
        "registered_name": "function"}}
    cfg = D.FeatureDistillation().get_config()
    assert cfg == {"loss": {"module": "builtins", "class_name": "function",
                            "config": "mean_squared_error", "registered_name": "function"},
                   "teacher_layer_name": None, "student_layer_name": None}
    back = D.FeatureDistillation.from_config(cfg)
    assert back.loss is keras.losses.get("mean_squared_error")
    t, s, x, _ = _setup()
    d = D.Distiller(t, s, D.LogitsDistillation(temperature=4.0), student_loss_weight=0.25)
    config = d.get_config()
    assert sorted(config) == ["distillation_loss_weights", "distillation_losses", "dtype",
                              "name", "student", "student_loss_weight", "teacher",
                              "trainable"]
    again = D.Distiller.from_config(config)
    assert again.student_loss_weight == 0.25 and again.distillation_losses[0].temperature == 4.0
    assert again.distillation_loss_weights == [1.0]


def test_errors():
    t, s, _, _ = _setup()
    with pytest.raises(ValueError, match="Teacher must be a keras.Model"):
        D.Distiller(keras.layers.Dense(3), s, D.LogitsDistillation())
    with pytest.raises(ValueError, match="between 0.0 and 1.0, got 1.5"):
        D.Distiller(t, s, D.LogitsDistillation(), student_loss_weight=1.5)
    with pytest.raises(ValueError, match="cannot be `None`"):
        D.Distiller(t, s, None)
    with pytest.raises(ValueError, match=r"distillation_loss_weights \(1\) must match number "
                                         r"of distillation_losses \(2\)"):
        D.Distiller(t, s, [D.LogitsDistillation(), D.FeatureDistillation()],
                    distillation_loss_weights=[1.0])
    with pytest.raises(ValueError, match="In teacher model: .*nope"):
        D.Distiller(t, s, D.FeatureDistillation(teacher_layer_name="nope"))
    other = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="input shapes are incompatible"):
        D.Distiller(t, other, D.LogitsDistillation())
    with pytest.raises(ValueError, match="temperature must be positive"):
        D.LogitsDistillation(temperature=0)
    with pytest.raises(ValueError, match="At least one loss must be non-`None`"):
        D.LogitsDistillation(loss=[None])
    d = D.Distiller(t, s, D.LogitsDistillation())
    with pytest.raises(ValueError, match="'loss' cannot be `None`"):
        d.compile(optimizer="sgd")
