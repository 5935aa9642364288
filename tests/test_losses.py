"""Losses: Keras' documented values, reductions, sample weights, from_logits, dtypes."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import losses

REG_TRUE = [[0.0, 1.0], [0.0, 0.0]]
REG_PRED = [[1.0, 1.0], [1.0, 0.0]]
PROB_PRED = [[0.6, 0.4], [0.4, 0.6]]
CAT_TRUE = [[0, 1, 0], [0, 0, 1]]
CAT_PRED = [[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]]


def val(t):
    return t.numpy()


# --- the values in Keras' documentation ------------------------------------------------------

@pytest.mark.parametrize("cls,y_true,y_pred,mean,weighted,weights,total,per_sample", [
    (losses.MeanSquaredError, REG_TRUE, REG_PRED, 0.5, 0.25, [0.7, 0.3], 1.0, [0.5, 0.5]),
    (losses.MeanAbsoluteError, REG_TRUE, REG_PRED, 0.5, 0.25, [0.7, 0.3], 1.0, [0.5, 0.5]),
    (losses.Huber, REG_TRUE, PROB_PRED, 0.155, 0.09, [1.0, 0.0], 0.31, [0.18, 0.13]),
    (losses.BinaryCrossentropy, REG_TRUE, PROB_PRED, 0.81492424, 0.45814, [1.0, 0.0],
     1.6298485, [0.91629076, 0.71355772]),
    (losses.CategoricalCrossentropy, CAT_TRUE, CAT_PRED, 1.1769392, 0.8135988, [0.3, 0.7],
     2.3538785, [0.0513, 2.3026]),
    (losses.SparseCategoricalCrossentropy, [1, 2], CAT_PRED, 1.1769392, 0.8135988, [0.3, 0.7],
     2.3538785, [0.0513, 2.3026]),
])
def test_keras_documented_values(cls, y_true, y_pred, mean, weighted, weights, total,
                                 per_sample):
    y_pred = gt.constant(y_pred)
    assert val(cls()(y_true, y_pred)) == pytest.approx(mean, rel=1e-3)
    assert val(cls()(y_true, y_pred, sample_weight=weights)) == pytest.approx(weighted, rel=1e-3)
    assert val(cls(reduction="sum")(y_true, y_pred)) == pytest.approx(total, rel=1e-3)
    np.testing.assert_allclose(val(cls(reduction=None)(y_true, y_pred)), per_sample, rtol=1e-3)
    np.testing.assert_allclose(val(cls(reduction="none")(y_true, y_pred)), per_sample, rtol=1e-3)


def test_binary_crossentropy_from_logits_documented_value():
    loss = losses.BinaryCrossentropy(from_logits=True)
    assert val(loss([0.0, 1.0, 0.0, 0.0], gt.constant([-18.6, 0.51, 2.94, -12.8]))) == \
        pytest.approx(0.865, abs=1e-3)


# --- against NumPy ---------------------------------------------------------------------------

def _np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_cross_entropies_from_logits_match_numpy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((5, 4))
    labels = np.array([0, 3, 1, 1, 2])
    onehot = np.eye(4)[labels]
    want = -_np_log_softmax(logits)[np.arange(5), labels]
    z = gt.constant(logits, dtype=gt.float64)
    cce = losses.CategoricalCrossentropy(from_logits=True, reduction=None)(onehot, z)
    scce = losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)(labels, z)
    np.testing.assert_allclose(val(cce), want, rtol=1e-12)
    np.testing.assert_allclose(val(scce), want, rtol=1e-12)
    targets = rng.uniform(size=(5, 4))
    bce = losses.binary_crossentropy(targets, z, from_logits=True)
    p = 1 / (1 + np.exp(-logits))
    want_b = -(targets * np.log(p) + (1 - targets) * np.log(1 - p)).mean(-1)
    np.testing.assert_allclose(val(bce), want_b, rtol=1e-10)


def test_stable_for_huge_logits():
    z = gt.constant([[1e4, -1e4, 0.0]])
    assert np.isfinite(val(losses.SparseCategoricalCrossentropy(from_logits=True)([1], z)))
    assert val(losses.CategoricalCrossentropy(from_logits=True)([[1, 0, 0]], z)) == 0.0
    assert np.isfinite(val(losses.BinaryCrossentropy(from_logits=True)([[1, 0, 1]], z)))


def test_probabilities_are_clipped_like_keras():
    # p = 0 for the true class: -log(1e-7)
    got = val(losses.sparse_categorical_crossentropy([0], gt.constant([[0.0, 1.0]])))
    np.testing.assert_allclose(got, [-np.log(1e-7)], rtol=1e-4)
    got = val(losses.binary_crossentropy([[1.0]], gt.constant([[0.0]])))
    np.testing.assert_allclose(got, [-np.log(1e-7)], rtol=1e-4)


def test_label_smoothing():
    y_true = np.array([[0.0, 1.0, 0.0]])
    logits = np.array([[1.0, 2.0, -1.0]])
    got = val(losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3)(
        y_true, gt.constant(logits, dtype=gt.float64)))
    smooth = y_true * 0.7 + 0.1
    assert got == pytest.approx(-(smooth * _np_log_softmax(logits)).sum(), rel=1e-12)
    got = val(losses.BinaryCrossentropy(label_smoothing=0.2)([[1.0, 0.0]],
                                                            gt.constant([[0.7, 0.2]],
                                                                        dtype=gt.float64)))
    t = np.array([0.9, 0.1])
    p = np.array([0.7, 0.2])
    assert got == pytest.approx(-(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(), rel=1e-12)


def test_huber_delta():
    y_pred = gt.constant([[0.5, 3.0, -2.0]], dtype=gt.float64)
    got = val(losses.Huber(delta=1.5)([[0.0, 0.0, 0.0]], y_pred))
    want = np.mean([0.5 * 0.25, 1.5 * 3.0 - 0.5 * 2.25, 1.5 * 2.0 - 0.5 * 2.25])
    assert got == pytest.approx(want, rel=1e-12)


# --- gradients ---------------------------------------------------------------------------------

def test_gradient_of_sparse_crossentropy_from_logits():
    rng = np.random.default_rng(3)
    logits = gt.constant(rng.standard_normal((4, 3)), dtype=gt.float64)
    labels = np.array([2, 0, 1, 1])
    with gt.GradientTape() as tape:
        tape.watch(logits)
        loss = losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    g = tape.gradient(loss, logits).numpy()
    soft = np.exp(_np_log_softmax(logits.numpy()))
    np.testing.assert_allclose(g, (soft - np.eye(3)[labels]) / 4, rtol=1e-10)


def test_gradient_of_mse():
    y_pred = gt.Variable(np.array([[1.0, 2.0], [3.0, 5.0]]))
    y_true = np.array([[0.0, 2.0], [3.0, 4.0]])
    with gt.GradientTape() as tape:
        loss = losses.MeanSquaredError()(y_true, y_pred)
    g = tape.gradient(loss, y_pred).numpy()
    np.testing.assert_allclose(g, 2 * (y_pred.numpy() - y_true) / 4)


# --- conversions and errors -------------------------------------------------------------------

def test_y_true_is_cast_to_y_pred_dtype():
    y_pred = gt.constant([[1.0, 2.0]], dtype=gt.float64)
    out = losses.MeanSquaredError()(gt.constant([[1, 1]]), y_pred)
    assert out.dtype == gt.float64 and val(out) == pytest.approx(0.5)
    out32 = losses.MeanSquaredError()(np.array([[1.0, 1.0]]), gt.constant([[1.0, 2.0]]))
    assert out32.dtype == gt.float32


def test_trailing_unit_axis_is_squeezed_like_keras():
    y_pred = gt.constant([1.0, 2.0, 3.0])
    assert val(losses.MeanSquaredError()(np.array([[1.0], [2.0], [5.0]]), y_pred)) == \
        pytest.approx(4.0 / 3)
    assert val(losses.SparseCategoricalCrossentropy()([[1], [2]], gt.constant(CAT_PRED))) == \
        pytest.approx(1.1769392, rel=1e-5)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="known reductions"):
        losses.MeanSquaredError(reduction="average")
    with pytest.raises(ValueError, match="known losses"):
        losses.get("hinge_of_doom")
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        losses.MeanSquaredError()([1.0, 2.0, 3.0], gt.constant([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match="same shape"):
        losses.CategoricalCrossentropy()([1, 2], gt.constant(CAT_PRED))
    with pytest.raises(Exception, match="label|range"):
        losses.SparseCategoricalCrossentropy(from_logits=True)([0, 7], gt.constant(CAT_PRED))


def test_lookup_and_function_forms():
    assert losses.get("mse") is losses.mean_squared_error
    assert isinstance(losses.get("Huber"), losses.Huber)
    np.testing.assert_allclose(val(losses.mse(REG_TRUE, gt.constant(REG_PRED))), [0.5, 0.5])
    np.testing.assert_allclose(val(losses.mae(REG_TRUE, gt.constant(REG_PRED))), [0.5, 0.5])
    cfg = losses.serialize(losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1))
    again = losses.deserialize(cfg)
    assert again.from_logits and again.get_config()["label_smoothing"] == 0.1
    assert gt.keras.losses.MeanSquaredError is losses.MeanSquaredError
