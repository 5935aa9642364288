"""gt.keras.metrics: Keras' running metrics for custom training loops."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

M = gt.keras.metrics


def test_mean_and_sum_accumulate_weight_and_reset():
    m = M.Mean(name="train_loss")
    assert m.name == "train_loss" and m.result().numpy() == 0.0      # nothing seen yet
    assert m(gt.constant(2.0)).numpy() == 2.0
    assert m([4.0, 6.0]).numpy() == 4.0
    m.update_state(np.array([[10.0]]), sample_weight=[[0.0]])
    assert m.result().numpy() == 4.0 and m.count.numpy() == 3.0
    m.reset_state()
    assert m.result().numpy() == 0.0 and m.total.numpy() == 0.0
    w = M.Mean()
    w.update_state([1.0, 2.0, 3.0], sample_weight=[1.0, 0.0, 3.0])
    assert w.result().numpy() == pytest.approx(2.5)
    w.update_state([[1.0, 2.0], [3.0, 4.0]], sample_weight=[1.0, 0.0])   # per row
    # Keras 3: a row's mean is one sample of weight 1 (tf.keras 2.21 gives 2.3)
    assert w.result().numpy() == pytest.approx((1 + 9 + 1.5) / 5)
    s = M.Sum()
    s.update_state([1, 2, 3])
    s.update_state([4.0], sample_weight=[0.5])
    assert s.result().numpy() == 8.0 and s.result().dtype == gt.float32
    assert [v.trainable for v in m.variables] == [False, False]
    assert m.get_config() == {"name": "train_loss", "dtype": "float32"}


def test_accuracies():
    a = M.SparseCategoricalAccuracy()
    logits = gt.constant([[0.1, 0.8, 0.1], [0.9, 0.05, 0.05], [0.2, 0.3, 0.5]])
    assert a(gt.constant([1, 2, 2]), logits).numpy() == pytest.approx(2 / 3)
    a.reset_state()
    assert a(np.array([[1], [0], [2]], np.int64), logits).numpy() == 1.0   # (N, 1) labels
    a.reset_state()
    assert a(np.array([1.0, 0.0, 0.0]), logits).numpy() == pytest.approx(2 / 3)
    assert M.CategoricalAccuracy()([[0, 1], [1, 0]], [[0.2, 0.8], [0.3, 0.7]]).numpy() == 0.5
    assert M.BinaryAccuracy()([[1.0], [0.0]], [[0.7], [0.8]]).numpy() == 0.5
    assert M.BinaryAccuracy(threshold=0.9)([[1.0], [0.0]], [[0.7], [0.8]]).numpy() == 0.5
    assert M.Accuracy()([1, 2, 3, 4], [1, 2, 0, 4]).numpy() == 0.75
    assert M.Accuracy().name == "accuracy" and M.SparseCategoricalAccuracy().name == \
        "sparse_categorical_accuracy"


def test_inputs_are_cast_and_squeezed_as_keras_does():
    a = M.Accuracy()
    a.update_state([0, 1], [0.9, 1.0])            # both cast to float32: 0.9 is not 0
    assert a.result().numpy() == 0.5
    b = M.BinaryAccuracy()                        # (N,) labels beside (N, 1) predictions
    b.update_state([1.0, 0.0, 1.0, 0.0], [[0.9], [0.1], [0.8], [0.7]])
    assert b.result().numpy() == 0.75
    b.reset_state()
    b.update_state([[1.0], [0.0]], [0.9, 0.8])
    assert b.result().numpy() == 0.5
    assert M.Accuracy()([1, 2], [[1], [2]]).numpy() == 1.0
    assert M.MeanSquaredError()([1.0, 2.0], [[1.0], [4.0]]).numpy() == 2.0
    # weights that cover only the leading axes weigh the mean over the others
    m = M.Mean()
    m.update_state(np.arange(24.0).reshape(2, 3, 4), sample_weight=[1.0, 0.0])
    assert m.result().numpy() == pytest.approx(5.5) and m.count.numpy() == 1.0


def test_loss_metrics_average_the_per_sample_losses():
    y, p = np.array([[1.0, 2.0], [0.0, 0.0]]), np.array([[2.0, 4.0], [0.0, 1.0]])
    assert M.MeanSquaredError()(y, p).numpy() == pytest.approx((2.5 + 0.5) / 2)
    assert M.MeanAbsoluteError()(y, p).numpy() == pytest.approx((1.5 + 0.5) / 2)
    ce = M.SparseCategoricalCrossentropy(from_logits=True)
    assert ce([0], [[2.0, 1.0]]).numpy() == pytest.approx(np.log1p(np.exp(-1.0)), rel=1e-6)


def test_get_and_bad_input():
    # as Keras 3: every name gives a new metric object
    assert type(M.get("accuracy")) is M.Accuracy and type(M.get("mse")) is M.MeanSquaredError
    assert isinstance(M.get("SparseCategoricalAccuracy"), M.SparseCategoricalAccuracy)
    m = M.Mean()
    assert M.get(m) is m
    with pytest.raises(ValueError, match="metrics.get: unknown metric 'f1'"):
        M.get("f1")
    with pytest.raises(TypeError, match="a metric's dtype must be a float dtype, got int32"):
        M.Mean(dtype="int32")
    with pytest.raises(ValueError, match="sample_weight of shape \\(3,\\) does not broadcast"):
        M.Mean().update_state([1.0, 2.0], sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="sample_weight of shape \\(3,\\) does not broadcast"):
        M.Mean().update_state(np.ones((2, 4)), sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="accuracy: y_true of shape \\(2,\\) and y_pred of "
                                         "shape \\(3,\\) differ"):
        M.Accuracy()([1, 2], [1, 2, 3])
    with pytest.raises(TypeError, match="values must be a tensor or array, got object"):
        M.Mean().update_state(object())


def test_metrics_update_on_the_device_inside_a_captured_step():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        loss_metric = M.Mean()
        acc = M.SparseCategoricalAccuracy()
        w = gt.Variable(np.eye(3, dtype=np.float32))

        def step(x, y):
            logits = gt.matmul(x, w)
            loss = gt.reduce_mean(gt.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
            loss_metric(loss)
            acc.update_state(y, logits)
            return loss
        fn = gt.capture(step)
        x = gt.constant(np.eye(3, dtype=np.float32))
        y = gt.constant(np.array([0, 1, 1], np.int32))
        dev.reset_counters()
        losses = [fn(x, y) for _ in range(3)]           # eager, recorded, replayed
        assert dev.sync_count == 0
    assert acc.result().numpy() == pytest.approx(2 / 3)
    assert loss_metric.result().numpy() == pytest.approx(float(losses[0].numpy()), rel=1e-6)
    assert loss_metric.count.numpy() == 3.0 and acc.count.numpy() == 9.0


def test_keras_activations_utils_and_backend():
    np.testing.assert_array_equal(gt.keras.activations.relu(gt.constant([-1.0, 2.0])).numpy(),
                                  [0, 2])
    assert gt.keras.activations.sigmoid(gt.constant(0.0)).numpy() == 0.5
    assert gt.keras.activations.get("tanh") is gt.keras.activations.tanh
    x = gt.constant([-2.0, 0.5, 1.0, 8.0])
    np.testing.assert_allclose(gt.keras.activations.relu(x, alpha=0.1, max_value=6.0).numpy(),
                               [-0.2, 0.5, 1.0, 6.0])
    np.testing.assert_allclose(gt.keras.activations.relu(x, threshold=0.75).numpy(),
                               [0, 0, 1, 8])
    np.testing.assert_allclose(gt.keras.activations.relu(x, alpha=0.5, threshold=1.0).numpy(),
                               [-1.5, -0.25, 0, 8])
    assert gt.keras.utils.to_categorical([1], num_classes=0).tolist() == [[0, 1]]
    np.testing.assert_array_equal(gt.keras.utils.to_categorical([0, 2, 1]),
                                  [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    got = gt.keras.utils.to_categorical(np.array([[1], [0]]), num_classes=4, dtype="int32")
    assert got.shape == (2, 4) and got.dtype == np.int32 and got[0].tolist() == [0, 1, 0, 0]
    one_hot = gt.keras.utils.to_categorical(gt.constant([1.0, 0.0]), 2)     # a tensor in, a tensor out
    assert one_hot.numpy().tolist() == [[0, 1], [1, 0]]
    with pytest.raises(ValueError, match="class id 3 does not fit num_classes=2"):
        gt.keras.utils.to_categorical([3], 2)
    with pytest.raises(ValueError, match="class ids must be >= 0, got -1"):
        gt.keras.utils.to_categorical([-1])
    with pytest.raises(ValueError, match="class ids must be whole numbers"):
        gt.keras.utils.to_categorical([0.5])
    assert gt.keras.backend.clear_session() is None
