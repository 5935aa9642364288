"""Keras 3 correlation metrics and the orthogonal regularizer against Keras 3.15 (tf.keras of
TF 2.21): the reference numbers were computed there with the same inputs."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras

Y_TRUE = np.array([[0, 1, 0.5, 0.3], [1, 1, 0.2, -0.4], [0.3, -2, 1, 0]], np.float32)
Y_PRED = np.array([[0.1, 0.9, 0.5, 0.0], [1, 0.9, 0.2, 0.1], [0.5, -1, 0.7, 0.2]], np.float32)


@pytest.mark.parametrize("cls,fn,rows,cols,weighted,axis0,name", [
    (keras.metrics.PearsonCorrelation, keras.metrics.pearson_correlation,
     [0.915878, 0.957365, 0.993206], [0.986761, 1.0, 0.966823, -0.427121], 0.950632,
     0.631616, "pearson_correlation"),
    (keras.metrics.ConcordanceCorrelation, keras.metrics.concordance_correlation,
     [0.896226, 0.875, 0.833096], [0.948097, 0.88167, 0.813792, -0.1875], 0.875078,
     0.614015, "concordance_correlation"),
])
def test_correlation_metrics_match_keras(cls, fn, rows, cols, weighted, axis0, name):
    np.testing.assert_allclose(fn(Y_TRUE, Y_PRED).numpy(), rows, atol=2e-6)
    np.testing.assert_allclose(fn(Y_TRUE, Y_PRED, axis=0).numpy(), cols, atol=2e-6)
    np.testing.assert_allclose(float(fn(Y_TRUE[0], Y_PRED[0])), rows[0], atol=2e-6)
    metric = cls()
    metric.update_state(Y_TRUE, Y_PRED)
    metric.update_state(Y_TRUE[:2], Y_PRED[:2], sample_weight=[1., 3.])
    np.testing.assert_allclose(float(metric.result()), weighted, atol=2e-6)
    assert metric.get_config() == {"name": name, "dtype": "float32", "axis": -1}
    by_axis = cls(axis=0)
    by_axis.update_state(Y_TRUE, Y_PRED)
    np.testing.assert_allclose(float(by_axis.result()), axis0, atol=2e-6)
    assert isinstance(keras.metrics.get(name), cls)
    assert gt.callbacks._metric_direction(metric) == "up"


W = np.array([[1., 2., 0.], [0.5, -1., 3.], [2., 0., -1.], [0.1, 0.2, 0.3]], np.float32)


@pytest.mark.parametrize("mode,value,grad_row", [
    ("rows", 0.0372021, [-0.028955, -0.006054, 0.013687]),
    ("columns", 0.0257334, [-0.000306, -0.001691, -0.001865]),
])
def test_orthogonal_regularizer_matches_keras(mode, value, grad_row):
    reg = keras.regularizers.OrthogonalRegularizer(factor=0.1, mode=mode)
    w = gt.constant(W)
    with gt.GradientTape() as tape:
        tape.watch(w)
        penalty = reg(w)
    np.testing.assert_allclose(float(penalty), value, rtol=1e-5)
    np.testing.assert_allclose(tape.gradient(penalty, w).numpy()[3], grad_row, atol=2e-6)
    assert reg.get_config() == {"factor": 0.1, "mode": mode}
    again = keras.regularizers.deserialize(keras.regularizers.serialize(reg))
    assert isinstance(again, keras.regularizers.OrthogonalRegularizer) and again.mode == mode
    layer = keras.layers.Dense(3, kernel_regularizer=reg)
    layer.build((None, 4))
    layer.kernel.assign(W)
    np.testing.assert_allclose(float(layer.losses[0]), value, rtol=1e-5)


def test_orthogonal_regularizer_names_and_errors():
    np.testing.assert_allclose(float(keras.regularizers.orthogonal_regularizer(0.2)(
        gt.constant(W))), 0.0744042, rtol=1e-5)
    assert isinstance(keras.regularizers.get("orthogonal_regularizer"),
                      keras.regularizers.OrthogonalRegularizer)
    with pytest.raises(ValueError, match="must have rank 2"):
        keras.regularizers.OrthogonalRegularizer(0.1)(gt.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="Expected one of"):
        keras.regularizers.OrthogonalRegularizer(0.1, mode="x")
    with pytest.raises(ValueError, match="expected a non-negative float"):
        keras.regularizers.OrthogonalRegularizer(-1.0)
    l2 = keras.regularizers.deserialize({"class_name": "L2", "config": {"l2": 0.5}})
    assert isinstance(l2, keras.regularizers.L2) and l2.get_config() == {"l2": 0.5}
