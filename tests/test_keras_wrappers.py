"""keras.wrappers' scikit-learn estimators: classification, regression and a transformer in a
pipeline, scikit-learn's clone / cross-validation protocol, warm starts, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

keras = gt.keras
W = keras.wrappers


def _mlp(X, y, loss, hidden=16, out_activation=None):
    gt.random.set_seed(0)
    inp = keras.Input((X.shape[1],))
    h = keras.layers.Dense(hidden, activation="relu")(inp)
    n_out = y.shape[1] if y.ndim > 1 else 1
    model = keras.Model(inp, keras.layers.Dense(n_out, activation=out_activation)(h))
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=loss)
    return model


def test_classifier_multiclass_string_labels():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3,
                               random_state=0)
    labels = np.array(["ant", "bee", "cat"])[y]
    est = W.SKLearnClassifier(model=_mlp, model_kwargs={"loss": "categorical_crossentropy",
                                                        "out_activation": "softmax"},
                              fit_kwargs={"epochs": 40, "batch_size": 32})
    assert est.fit(X, labels) is est
    assert est.classes_.tolist() == ["ant", "bee", "cat"]
    pred = est.predict(X)
    assert pred.dtype.kind == "U" and set(pred) <= {"ant", "bee", "cat"}
    assert est.score(X, labels) > 0.8
    proba = est.predict_proba(X[:5])
    assert proba.shape == (5, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    assert est.epoch_ == 40 and est.history_.epoch[-1] == 39


def test_regressor_and_cross_validation():
    X, y = make_regression(n_samples=200, n_features=4, noise=0.1, random_state=0)
    y = y / y.std()
    est = W.SKLearnRegressor(model=_mlp, model_kwargs={"loss": "mse"},
                             fit_kwargs={"epochs": 60, "batch_size": 32})
    est.fit(X, y)
    pred = est.predict(X)
    assert pred.shape == (200,)
    assert est.score(X, y) > 0.9
    scores = cross_val_score(est, X, y, cv=2)
    assert scores.shape == (2,) and np.all(scores > 0.5)
    est2 = W.SKLearnRegressor(model=_mlp, model_kwargs={"loss": "mse"},
                              fit_kwargs={"epochs": 5})
    est2.fit(X, np.stack([y, -y], axis=1))
    assert est2.predict(X[:3]).shape == (3, 2)


def test_model_instance_is_cloned_and_warm_start_keeps_training():
    X, y = make_regression(n_samples=64, n_features=3, random_state=1)
    y = y / y.std()
    base = _mlp(X, y, "mse")
    before = [w.copy() for w in base.get_weights()]
    est = W.SKLearnRegressor(model=base, fit_kwargs={"epochs": 2})
    est.fit(X, y)
    assert est.model_ is not base
    for a, b in zip(before, base.get_weights()):
        np.testing.assert_array_equal(a, b)         # the given model is left as it was
    warm = W.SKLearnRegressor(model=_mlp, model_kwargs={"loss": "mse"}, warm_start=True)
    warm.fit(X, y, epochs=3)
    first = warm.model_
    loss1 = warm.history_.history["loss"][-1]
    warm.fit(X, y, epochs=3)
    assert warm.model_ is first and warm.history_.history["loss"][0] < loss1 * 1.05


def test_transformer_in_pipeline():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)

    def encoder(X, y):
        inp = keras.Input((X.shape[1],))
        model = keras.Model(inp, keras.layers.Dense(3, activation="tanh")(inp))
        model.compile(optimizer="adam", loss="mse")
        return model

    pipe = make_pipeline(W.SKLearnTransformer(model=encoder, fit_kwargs={"epochs": 1}),
                         LogisticRegression())
    pipe.fit(X, y)                  # (the encoder's 3 outputs are each fit to y)
    out = pipe[0].transform(X)
    assert out.shape == (200, 3) and np.all(np.abs(out) <= 1)
    assert pipe.predict(X).shape == (200,) and pipe.score(X, y) > 0.6


def test_errors():
    X = np.random.RandomState(0).rand(10, 2)
    with pytest.raises(ValueError, match="only one class"):
        W.SKLearnClassifier(model=_mlp, model_kwargs={"loss": "mse"}).fit(X, np.zeros(10))
    with pytest.raises(ValueError, match="Only binary and multiclass"):
        W.SKLearnClassifier(model=_mlp, model_kwargs={"loss": "mse"}).fit(X, X[:, 0])

    def uncompiled(X, y):
        return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with pytest.raises(RuntimeError, match="needs to be compiled"):
        W.SKLearnRegressor(model=uncompiled).fit(X, X[:, 0])
    with pytest.raises(TypeError, match="compiled keras Model or a callable"):
        W.SKLearnRegressor(model=3).fit(X, X[:, 0])
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        W.SKLearnRegressor(model=_mlp).predict(X)
