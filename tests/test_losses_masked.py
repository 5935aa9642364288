"""A Keras mask on the prediction (``Embedding(mask_zero=True)``, ``Masking``) weighs the loss
objects and the ``MeanMetricWrapper`` metrics as Keras 3 does, in a custom loop as in fit.

The reference numbers come from TF 2.21 (Keras 3.15): the same Embedding(4, 3, mask_zero=True)
with weights ``arange(12).reshape(4, 3) / 10``, tokens ``X`` and labels ``Y`` below.
"""
import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers

X = np.array([[1, 2, 0, 0], [3, 1, 2, 0]])
Y = np.array([[1, 0, 0, 0], [2, 2, 1, 0]])
Y_DENSE = np.arange(24.0).reshape(2, 4, 3) / 20
SW = np.array([[1.0], [2.0]])


def _masked_output(tokens=X):
    emb = L.Embedding(4, 3, mask_zero=True)
    emb.build((None, 4))
    emb.set_weights([np.arange(12.0).reshape(4, 3) / 10])
    return emb(tokens)


def _scce(**kw):
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, **kw)


def test_loss_objects_average_over_the_unmasked_entries():
    o = _masked_output()
    np.testing.assert_array_equal(o._keras_mask.numpy(), X != 0)
    assert float(_scce()(Y, o)) == pytest.approx(1.0819429159164429, rel=1e-6)
    assert float(_scce(reduction="mean")(Y, o)) == pytest.approx(1.0819429159164429, rel=1e-6)
    assert float(_scce(reduction="sum")(Y, o)) == pytest.approx(5.409714698791504, rel=1e-6)
    assert float(keras.losses.MeanSquaredError()(Y_DENSE, o)) == pytest.approx(
        0.14516666531562805, rel=1e-6)
    # the mask survives as the prediction's: the prediction itself is unchanged
    np.testing.assert_array_equal(o._keras_mask.numpy(), X != 0)


def test_per_sample_losses_are_zero_at_the_masked_entries():
    o = _masked_output()
    np.testing.assert_allclose(
        _scce(reduction="none")(Y, o).numpy(),
        [[1.1019428968429565, 1.2019429206848145, 0.0, 0.0],
         [1.001942753791809, 1.0019428730010986, 1.1019428968429565, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(
        keras.losses.MeanSquaredError(reduction=None)(Y_DENSE, o).numpy(),
        [[0.12416666746139526, 0.2516666650772095, 0.0, 0.0],
         [0.12416666746139526, 0.16166667640209198, 0.06416665762662888, 0.0]],
        rtol=1e-5)


def test_mask_combines_with_sample_weight_and_ignore_class():
    o = _masked_output()
    assert float(_scce()(Y, o, sample_weight=SW)) == pytest.approx(1.703108549118042,
                                                                   rel=1e-6)
    # mean_with_sample_weight: the mask is a 0/1 weight, the divisor the weights' sum (8)
    assert float(_scce(reduction="mean_with_sample_weight")(Y, o, sample_weight=SW)) == \
        pytest.approx(1.0644428730010986, rel=1e-6)
    # ignore_class's mask and the prediction's are ANDed
    assert float(_scce(ignore_class=2)(Y, o)) == pytest.approx(1.1352763175964355, rel=1e-6)
    np.testing.assert_allclose(
        _scce(ignore_class=2, reduction="none")(Y, o).numpy(),
        [[1.1019428968429565, 1.2019429206848145, 0.0, 0.0],
         [0.0, 0.0, 1.1019428968429565, 0.0]], rtol=1e-6)


def test_everything_masked_gives_zero():
    o = _masked_output(np.zeros((2, 4), np.int64))
    assert float(_scce()(Y, o)) == 0.0
    m = keras.metrics.SparseCategoricalAccuracy()
    m.update_state(Y, o)
    assert float(m.result()) == 0.0


def test_a_sample_weight_that_does_not_fit_the_mask_is_reported():
    o = _masked_output()
    with pytest.raises(ValueError, match="Keras mask of shape"):
        _scce()(Y, o, sample_weight=np.ones(3))


def test_mean_metric_wrappers_leave_out_the_masked_entries():
    o = _masked_output()
    M = keras.metrics

    def result(m, *args, **kw):
        m.update_state(*args, **kw)
        return float(m.result())

    assert result(M.SparseCategoricalAccuracy(), Y, o) == pytest.approx(0.4, rel=1e-6)
    assert result(M.SparseCategoricalAccuracy(), Y, o, sample_weight=SW) == \
        pytest.approx(0.5, rel=1e-6)
    assert result(M.SparseTopKCategoricalAccuracy(k=1), Y, o) == pytest.approx(0.4, rel=1e-6)
    assert result(M.SparseCategoricalCrossentropy(from_logits=True), Y, o) == \
        pytest.approx(1.0819429159164429, rel=1e-6)
    assert result(M.MeanSquaredError(), Y_DENSE, o) == pytest.approx(0.14516666531562805,
                                                                     rel=1e-6)
    # as Keras 3, RootMeanSquaredError is a Mean, not a MeanMetricWrapper: no masking
    assert result(M.RootMeanSquaredError(), Y_DENSE, o) == pytest.approx(
        0.49413222074508667, rel=1e-6)
    # the call form updates the same way
    assert float(M.SparseCategoricalAccuracy()(Y, o)) == pytest.approx(0.4, rel=1e-6)


def test_masked_loss_has_no_gradient_at_the_padding():
    emb = L.Embedding(4, 3, mask_zero=True)
    emb.build((None, 4))
    with gt.GradientTape() as tape:
        loss = _scce()(Y, emb(X))
    g = tape.gradient(loss, emb.embeddings)
    g = gt.convert_to_tensor(g).numpy()
    np.testing.assert_array_equal(g[0], 0.0)        # token 0 is only ever at masked steps
    assert np.abs(g[1:]).sum() > 0


def test_custom_loop_and_evaluate_agree_without_masking_twice():
    gt.random.set_seed(3)
    inp = keras.Input(shape=(4,), dtype="int32")
    h = L.Embedding(4, 3, mask_zero=True)(inp)
    model = keras.Model(inp, L.Dense(3)(h))
    loss_fn = _scce()
    model.compile(keras.optimizers.SGD(0.0), loss_fn,
                  metrics=[keras.metrics.SparseCategoricalAccuracy()])
    logs = model.evaluate(X, Y, verbose=0, return_dict=True)
    pred = model(X)
    assert pred._keras_mask is not None
    assert logs["loss"] == pytest.approx(float(loss_fn(Y, pred)), rel=1e-6)
    acc = keras.metrics.SparseCategoricalAccuracy()
    acc.update_state(Y, pred)
    assert logs["sparse_categorical_accuracy"] == pytest.approx(float(acc.result()), rel=1e-6)
    # with a per-sample weight too (spread over the time steps by fit)
    sw = np.array([1.0, 2.0], np.float32)
    logs = model.evaluate(X, Y, sample_weight=sw, verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(float(loss_fn(Y, pred, sample_weight=sw[:, None])),
                                         rel=1e-6)
    # and the prediction keeps its mask after the compiled loss and metrics ran
    assert model.compiled_loss(Y, pred) is not None
    np.testing.assert_array_equal(pred._keras_mask.numpy(), X != 0)
