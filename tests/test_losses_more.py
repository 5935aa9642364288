"""Keras 3 losses: rank matching of (N,) labels beside (N, 1) predictions, the Keras 3
reductions and sample weights, the losses added with Keras 3 names, against numbers from
tf.keras 2.21 (Keras 3.15), and their gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import losses
from gradtape.testing import check_grads

_rng = np.random.RandomState(3)
YT = _rng.randn(4, 3).astype(np.float32)
YP = _rng.randn(4, 3).astype(np.float32)
POS_T = (_rng.rand(4, 3) + 0.1).astype(np.float32)
POS_P = (_rng.rand(4, 3) + 0.1).astype(np.float32)
YB = (_rng.rand(4, 3) > 0.5).astype(np.float32)
PB = _rng.rand(4, 3).astype(np.float32)
LG = (_rng.randn(4, 3) * 2).astype(np.float32)
YC = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
PC = _rng.dirichlet(np.ones(3), 4).astype(np.float32)
YS = np.array([0, 2, 1, 2], np.int32)
SW = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
# the example of the (N,) / (N, 1) bug: TF's per-sample MSE is [0.25, 0, 1, 4]
Y1 = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
P1 = np.array([[0.5], [1.0], [1.0], [5.0]], np.float32)
SW1 = np.array([1.0, 0.0, 2.0, 1.0], np.float32)
YB1 = np.array([0.0, 1.0, 1.0, 0.0], np.float32)
PB1 = np.array([[0.2], [0.7], [0.4], [0.9]], np.float32)


def _all(K, cls, y, p, **kw):
    """The loss under each reduction, unweighted and weighted."""
    out = []
    for red in ("sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight"):
        loss = cls(reduction=red, **kw)
        out.append(np.asarray(loss(y, p)).tolist())
        out.append(np.asarray(loss(y, p, sample_weight=SW)).tolist())
    return out


CASES = {
    "mse_n_n1": lambda K: [np.asarray(K.losses.MeanSquaredError(reduction="none")(Y1, P1)).tolist(),
                           np.asarray(K.losses.MeanSquaredError(reduction="none")(P1, Y1)).tolist()]
    + _all(K, K.losses.MeanSquaredError, Y1, P1),
    "mae_n_n1": lambda K: _all(K, K.losses.MeanAbsoluteError, Y1, P1),
    "huber_n_n1": lambda K: _all(K, K.losses.Huber, Y1, P1, delta=0.7),
    "bce_n_n1": lambda K: _all(K, K.losses.BinaryCrossentropy, YB1, PB1),
    "bce_n1_n": lambda K: _all(K, K.losses.BinaryCrossentropy, YB1.reshape(4, 1),
                               PB1.reshape(4)),
    "mape": lambda K: _all(K, K.losses.MeanAbsolutePercentageError, YT, YP),
    "msle": lambda K: _all(K, K.losses.MeanSquaredLogarithmicError, POS_T, POS_P),
    "log_cosh": lambda K: _all(K, K.losses.LogCosh, YT, YP * 10),
    "kld": lambda K: _all(K, K.losses.KLDivergence, PC, np.roll(PC, 1, axis=0)),
    "poisson": lambda K: _all(K, K.losses.Poisson, POS_T, POS_P),
    "cosine": lambda K: _all(K, K.losses.CosineSimilarity, YT, YP),
    "cosine_axis0": lambda K: np.asarray(K.losses.CosineSimilarity(axis=0)(YT, YP)).tolist(),
    "hinge": lambda K: _all(K, K.losses.Hinge, YB, YP),
    "hinge_pm1": lambda K: _all(K, K.losses.Hinge, 2 * YB - 1, YP),
    "hinge_other": lambda K: _all(K, K.losses.Hinge, YB * 0.5, YP),
    "squared_hinge": lambda K: _all(K, K.losses.SquaredHinge, YB, YP),
    "categorical_hinge": lambda K: _all(K, K.losses.CategoricalHinge, YC, YP),
    "bfce": lambda K: _all(K, K.losses.BinaryFocalCrossentropy, YB, PB),
    "bfce_balanced": lambda K: _all(K, K.losses.BinaryFocalCrossentropy, YB, LG,
                                    apply_class_balancing=True, alpha=0.3, gamma=1.5,
                                    from_logits=True, label_smoothing=0.1),
    "bfce_axis0": lambda K: np.asarray(K.losses.BinaryFocalCrossentropy(axis=0, gamma=3.0)(
        YB, PB)).tolist(),
    "cfce": lambda K: _all(K, K.losses.CategoricalFocalCrossentropy, YC, PC),
    "cfce_logits": lambda K: _all(K, K.losses.CategoricalFocalCrossentropy, YC, LG,
                                  alpha=0.5, gamma=1.0, from_logits=True, label_smoothing=0.2),
    "cfce_unnormalised": lambda K: np.asarray(K.losses.CategoricalFocalCrossentropy()(
        YC, PC * 3)).tolist(),
    "scce_ignore": lambda K: _all(K, K.losses.SparseCategoricalCrossentropy, YS, PC,
                                  ignore_class=2),
    "scce_ignore_logits": lambda K: _all(K, K.losses.SparseCategoricalCrossentropy, YS, LG,
                                         ignore_class=0, from_logits=True),
    "scce_ignore_fn": lambda K: np.asarray(K.losses.sparse_categorical_crossentropy(
        np.array([0, -1, 1]), np.array([[0.2, 0.8], [0.5, 0.5], [0.3, 0.7]], np.float32),
        ignore_class=-1)).tolist(),
    "fn_forms": lambda K: [np.asarray(f(y, p)).tolist() for f, y, p in [
        (K.losses.mse, Y1, P1), (K.losses.mae, Y1, P1), (K.losses.mape, YT, YP),
        (K.losses.msle, POS_T, POS_P), (K.losses.kld, PC, PC[::-1]),
        (K.losses.logcosh, YT, YP), (K.losses.poisson, POS_T, POS_P),
        (K.losses.cosine_similarity, YT, YP), (K.losses.hinge, YB, YP),
        (K.losses.squared_hinge, YB, YP), (K.losses.categorical_hinge, YC, YP),
        (K.losses.binary_focal_crossentropy, YB, PB),
        (K.losses.categorical_focal_crossentropy, YC, PC)]],
    "rank3_weights": lambda K: [
        np.asarray(K.losses.MeanSquaredError(reduction=r)(YT.reshape(2, 2, 3), YP.reshape(2, 2, 3),
                                                          sample_weight=w)).tolist()
        for r in ("none", "sum_over_batch_size", "mean_with_sample_weight")
        for w in (np.array([1.0, 2.0]), np.array([[1.0], [3.0]]), np.array([[1.0, 2.0],
                                                                              [0.0, 1.0]]))],
}

NAN = float("nan")
#: tf.keras 2.21 (Keras 3.15) results of CASES.
REF = {'bce_n1_n': [0.9496735, 0.8017544, 3.798694, 3.207017,
              [0.2231435, 0.356675, 0.9162907, 2.302585], [0.2231435, 0.0, 1.832581, 1.151292],
              0.9496735, 0.8017544, 0.9496735, 0.9162907],
 'bce_n_n1': [0.9496735, 0.8017544, 3.798694, 3.207017,
              [0.2231435, 0.356675, 0.9162907, 2.302585], [0.2231435, 0.0, 1.832581, 1.151292],
              0.9496735, 0.8017544, 0.9496735, 0.9162907],
 'bfce': [0.2338281, 0.2591837, 0.9353123, 1.036735,
          [0.2789142, 0.04444413, 0.301229, 0.3107249], [0.2789142, 0.0, 0.6024581, 0.1553624],
          0.2338281, 0.2591837, 0.2338281, 0.29621],
 'bfce_axis0': 0.1557669,
 'bfce_balanced': [0.349575, 0.1540987, 1.3983, 0.6163948,
                   [0.1062239, 0.9097778, 0.2126812, 0.1696171],
                   [0.1062239, 0.0, 0.4253624, 0.08480854], 0.349575, 0.1540987, 0.349575,
                   0.1761128],
 'categorical_hinge': [2.4269, 2.27996, 9.7076, 9.119841,
                       [1.828255, 2.546477, 3.083435, 2.249432],
                       [1.828255, 0.0, 6.16687, 1.124716], 2.4269, 2.27996, 2.4269, 2.605669],
 'cfce': [0.2559651, 0.1371707, 1.02386, 0.5486827,
          [0.2083918, 0.3470986, 0.07073731, 0.3976325], [0.2083918, 0.0, 0.1414746, 0.1988162],
          0.2559651, 0.1371707, 0.2559651, 0.1567665],
 'cfce_logits': [0.6271589, 0.4767938, 2.508636, 1.907175,
                 [0.9924389, 0.2994829, 0.204253, 1.012461],
                 [0.9924389, 0.0, 0.408506, 0.5062304], 0.6271589, 0.4767938, 0.6271589,
                 0.5449072],
 'cfce_unnormalised': 0.2559651,
 'cosine': [-0.2503455, -0.3576626, -1.001382, -1.43065,
            [-0.6561254, -0.4490381, -0.5509439, 0.6547255],
            [-0.6561254, -0.0, -1.101888, 0.3273627], -0.2503455, -0.3576626, -0.2503455,
            -0.4087573],
 'cosine_axis0': -0.3270501,
 'fn_forms': [[0.25, 0.0, 1.0, 4.0], [0.5, 0.0, 1.0, 2.0],
              [130.1743, 170.2709, 1322.449, 114.4201],
              [0.0005470766, 0.09988367, 0.02687241, 0.02810893],
              [0.2296311, 0.409005, 0.4115206, 0.2533968],
              [0.3405131, 0.4801991, 0.3792878, 0.7812176],
              [0.76701, 1.236748, 1.002712, 0.8737008],
              [-0.6561254, -0.4490381, -0.5509439, 0.6547255],
              [1.846952, 0.3499875, 1.434582, 1.485027],
              [3.92786, 0.1870355, 3.063075, 2.739042],
              [1.828255, 2.546477, 3.083435, 2.249432],
              [0.2789142, 0.04444413, 0.301229, 0.3107249],
              [0.2083918, 0.3470986, 0.07073731, 0.3976325]],
 'hinge': [1.279137, 1.364658, 5.116549, 5.458631, [1.846952, 0.3499875, 1.434582, 1.485027],
           [1.846952, 0.0, 2.869164, 0.7425137], 1.279137, 1.364658, 1.279137, 1.559609],
 'hinge_other': [1.050944, 0.9809136, 4.203774, 3.923655, [0.9916611, 1.0, 1.217291, 0.9948223],
                 [0.9916611, 0.0, 2.434582, 0.4974111], 1.050944, 0.9809136, 1.050944,
                 1.121044],
 'hinge_pm1': [1.279137, 1.364658, 5.116549, 5.458631,
               [1.846952, 0.3499875, 1.434582, 1.485027], [1.846952, 0.0, 2.869164, 0.7425137],
               1.279137, 1.364658, 1.279137, 1.559609],
 'huber_n_n1': [0.43375, 0.403125, 1.735, 1.6125, [0.125, 0.0, 0.455, 1.155],
                [0.125, 0.0, 0.91, 0.5775], 0.43375, 0.403125, 0.43375, 0.4607143],
 'kld': [0.3964919, 0.3783601, 1.585968, 1.51344, [0.2296311, 0.02328021, 0.4115206, 0.9215357],
         [0.2296311, 0.0, 0.8230412, 0.4607679], 0.3964919, 0.3783601, 0.3964919, 0.4324115],
 'log_cosh': [7.503876, 7.586358, 30.0155, 30.34543, [7.458965, 6.800904, 10.00577, 5.749869],
              [7.458965, 0.0, 20.01153, 2.874934], 7.503876, 7.586358, 7.503876, 8.670123],
 'mae_n_n1': [0.875, 0.875, 3.5, 3.5, [0.5, 0.0, 1.0, 2.0], [0.5, 0.0, 2.0, 1.0], 0.875, 0.875,
              0.875, 1.0],
 'mape': [434.3285, 708.0704, 1737.314, 2832.281, [130.1743, 170.2709, 1322.449, 114.4201],
          [130.1743, 0.0, 2644.897, 57.21004], 434.3285, 708.0704, 434.3285, 809.2233],
 'mse_n_n1': [[0.25, 0.0, 1.0, 4.0], [0.25, 0.0, 1.0, 4.0], 1.3125, 1.0625, 5.25, 4.25,
              [0.25, 0.0, 1.0, 4.0], [0.25, 0.0, 2.0, 2.0], 1.3125, 1.0625, 1.3125, 1.214286],
 'msle': [0.03885302, 0.01708659, 0.1554121, 0.06834637,
          [0.0005470766, 0.09988367, 0.02687241, 0.02810893],
          [0.0005470766, 0.0, 0.05374483, 0.01405447], 0.03885302, 0.01708659, 0.03885302,
          0.01952753],
 'poisson': [0.9700428, 0.8023212, 3.880171, 3.209285, [0.76701, 1.236748, 1.002712, 0.8737008],
             [0.76701, 0.0, 2.005424, 0.4368504], 0.9700428, 0.8023212, 0.9700428, 0.9169385],
 'rank3_weights': [[[0.8153536, 2.413429], [0.8871996, 5.555737]],
                   [[0.8153536, 1.206715], [2.661599, 8.333605]],
                   [[0.8153536, 2.413429], [0.0, 2.777868]], 2.41793, 3.254318, 1.501663,
                   3.223906, 3.254318, 1.501663],
 'scce_ignore': [1.145633, 1.573496, 2.291266, 3.146992, [1.435541, 0.0, 0.8557258, 0.0],
                 [1.435541, 0.0, 1.711452, 0.0], 1.145633, 1.573496, 1.145633, 1.048997],
 'scce_ignore_fn': [1.609438, 0.0, 0.356675],
 'scce_ignore_logits': [0.848002, 0.4822822, 2.544006, 1.446846,
                        [0.0, 0.05083332, 0.1335068, 2.359666], [0.0, 0.0, 0.2670136, 1.179833],
                        0.848002, 0.4822822, 0.848002, 0.5787386],
 'squared_hinge': [2.479253, 2.855883, 9.917012, 11.42353,
                   [3.92786, 0.1870355, 3.063075, 2.739042], [3.92786, 0.0, 6.12615, 1.369521],
                   2.479253, 2.855883, 2.479253, 3.263866]}


def _close(got, want):
    """Equal to ~float32 precision, nested lists of different shapes allowed."""
    if isinstance(want, list) and any(isinstance(w, list) for w in want):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=2e-5, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_tf_keras(name):
    if name not in REF:
        pytest.fail(f"no reference number for {name}")
    _close(CASES[name](gt.keras), REF[name])


# --- the (N,) / (N, 1) case, by hand ------------------------------------------------------------

def test_rank_1_labels_beside_column_predictions_give_one_value_per_sample():
    mse = losses.MeanSquaredError
    np.testing.assert_allclose(losses.mse(Y1, gt.constant(P1)).numpy(), [0.25, 0, 1, 4])
    np.testing.assert_allclose(losses.mse(P1, gt.constant(Y1)).numpy(), [0.25, 0, 1, 4])
    assert mse(reduction="sum")(Y1, gt.constant(P1)).numpy() == pytest.approx(5.25)
    assert mse()(Y1, gt.constant(P1), SW1).numpy() == pytest.approx(1.5625)
    np.testing.assert_allclose(mse(reduction="none")(Y1, gt.constant(P1), SW1).numpy(),
                               [0.25, 0, 2, 4])
    assert mse(reduction="mean_with_sample_weight")(Y1, gt.constant(P1), SW1).numpy() == \
        pytest.approx(6.25 / 4)
    # (N, T, 1) labels beside (N, T) predictions: the label's unit axis is squeezed
    got = losses.mae(np.ones((2, 3, 1)), gt.constant(np.zeros((2, 3))))
    assert got.shape == (2,)
    M = gt.keras.metrics
    for m, want in [(M.MeanSquaredError(), 1.5625), (M.MeanAbsoluteError(), 1.125)]:
        m.update_state(Y1, P1, sample_weight=SW1)
        assert m.result().numpy() == pytest.approx(want)
    b = M.BinaryAccuracy()
    b.update_state(YB1, PB1, sample_weight=SW1)
    assert b.result().numpy() == pytest.approx(0.25)


def test_evaluate_with_sample_weights_and_a_column_output():
    # tf.keras 2.21: evaluate(x, y, sample_weight=sw) of these models
    keras = gt.keras
    x = np.linspace(-1, 1, 8).reshape(8, 1).astype(np.float32)
    y = (np.arange(8) % 2).astype(np.float32)
    sw = np.array([1, 2, 0, 1, 3, 1, 1, 0.5], np.float32)
    inp = keras.Input(shape=(1,))
    out = keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones",
                             bias_initializer="zeros")(inp)
    m = keras.Model(inp, out)
    m.compile(optimizer="sgd", loss="binary_crossentropy",
              metrics=["accuracy", keras.metrics.MeanSquaredError()])
    np.testing.assert_allclose(m.evaluate(x, y, verbose=0, batch_size=8),
                               [0.6737, 0.5, 0.24139], atol=1e-5)
    np.testing.assert_allclose(m.evaluate(x, y, verbose=0, batch_size=8, sample_weight=sw),
                               [0.92229, 0.5, 0.24139], atol=1e-5)
    m2 = keras.Model(inp, keras.layers.Dense(1, kernel_initializer="ones")(inp))
    m2.compile("sgd", loss="mse", metrics=["mae"])
    np.testing.assert_allclose(m2.evaluate(x, y * 3, verbose=0, batch_size=8,
                                           sample_weight=sw), [5.95663, 1.71429], atol=1e-5)
    m2.compile("sgd", loss="kld")                        # the new names resolve in compile
    assert np.isfinite(m2.evaluate(x, np.abs(y), verbose=0))


# --- gradients ------------------------------------------------------------------------------------

_R = np.random.default_rng(11)
_GRAD_CASES = [
    ("mape", losses.MeanAbsolutePercentageError(), _R.standard_normal((3, 4)) + 3.0,
     _R.standard_normal((3, 4))),
    ("msle", losses.MeanSquaredLogarithmicError(), _R.random((3, 4)) + 0.5,
     _R.random((3, 4)) + 0.5),
    ("log_cosh", losses.LogCosh(), _R.standard_normal((3, 4)), _R.standard_normal((3, 4)) * 3),
    ("kld", losses.KLDivergence(), _R.dirichlet(np.ones(4), 3), _R.dirichlet(np.ones(4), 3)),
    ("poisson", losses.Poisson(), _R.random((3, 4)) * 3, _R.random((3, 4)) + 0.5),
    ("cosine", losses.CosineSimilarity(), _R.standard_normal((3, 4)),
     _R.standard_normal((3, 4))),
    ("cosine_axis0", losses.CosineSimilarity(axis=0), _R.standard_normal((4, 3)),
     _R.standard_normal((4, 3))),
    ("hinge", losses.Hinge(), (_R.random((3, 4)) > 0.5) * 1.0,
     _R.standard_normal((3, 4)) * 0.4 + 0.3),
    ("squared_hinge", losses.SquaredHinge(), (_R.random((3, 4)) > 0.5) * 1.0,
     _R.standard_normal((3, 4)) * 0.4 + 0.3),
    ("categorical_hinge", losses.CategoricalHinge(), np.eye(4)[[0, 3, 1]],
     _R.standard_normal((3, 4))),
    ("bfce", losses.BinaryFocalCrossentropy(), (_R.random((3, 4)) > 0.5) * 1.0,
     _R.random((3, 4)) * 0.8 + 0.1),
    ("bfce_logits", losses.BinaryFocalCrossentropy(apply_class_balancing=True, from_logits=True,
                                                   gamma=1.5, label_smoothing=0.1),
     (_R.random((3, 4)) > 0.5) * 1.0, _R.standard_normal((3, 4))),
    ("cfce", losses.CategoricalFocalCrossentropy(), np.eye(4)[[0, 3, 1]],
     _R.dirichlet(np.ones(4), 3)),
    ("cfce_logits", losses.CategoricalFocalCrossentropy(from_logits=True, alpha=0.4,
                                                        label_smoothing=0.1),
     np.eye(4)[[0, 3, 1]], _R.standard_normal((3, 4))),
    ("scce_ignore", losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=1),
     np.array([0, 1, 3]), _R.standard_normal((3, 4))),
    ("mse_n_n1", losses.MeanSquaredError(), _R.standard_normal(3),
     _R.standard_normal((3, 1))),
]


@pytest.mark.parametrize("name,loss,y_true,y_pred", _GRAD_CASES, ids=[c[0] for c in _GRAD_CASES])
def test_gradients_wrt_predictions(name, loss, y_true, y_pred):
    weights = np.array([1.0, 0.5, 2.0])
    check_grads(lambda p: loss(y_true, p, sample_weight=weights), [y_pred], order=2)


def test_ignored_labels_get_no_gradient():
    logits = gt.constant(np.random.default_rng(2).standard_normal((3, 4)))
    with gt.GradientTape() as tape:
        tape.watch(logits)
        loss = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)(
            np.array([2, -1, 0]), logits)
    g = tape.gradient(loss, logits).numpy()
    assert np.all(g[1] == 0) and np.all(g[0] != 0)
    # the mean is over the two kept entries
    per = losses.sparse_categorical_crossentropy(np.array([2, 0]), logits.numpy()[[0, 2]],
                                                 from_logits=True).numpy()
    assert loss.numpy() == pytest.approx(per.mean(), rel=1e-12)


# --- names, configs, errors ---------------------------------------------------------------------

def test_get_knows_the_keras_names():
    for name, fn in [("kld", losses.kl_divergence), ("KLD", losses.kl_divergence),
                     ("kl_divergence", losses.kl_divergence), ("mape", losses.mape),
                     ("MSLE", losses.mean_squared_logarithmic_error), ("log_cosh", losses.logcosh),
                     ("poisson", losses.poisson), ("hinge", losses.hinge),
                     ("cosine_similarity", losses.cosine_similarity),
                     ("bce", losses.binary_crossentropy),
                     ("binary_focal_crossentropy", losses.binary_focal_crossentropy),
                     ("categorical_focal_crossentropy", losses.categorical_focal_crossentropy)]:
        assert losses.get(name) is fn, name
    for name in ("LogCosh", "KLDivergence", "Poisson", "CosineSimilarity", "Hinge",
                 "SquaredHinge", "CategoricalHinge", "BinaryFocalCrossentropy",
                 "CategoricalFocalCrossentropy", "MeanAbsolutePercentageError",
                 "MeanSquaredLogarithmicError"):
        assert type(losses.get(name)).__name__ == name
    assert losses.kullback_leibler_divergence is losses.KLD is losses.kld
    assert gt.keras.losses.BinaryFocalCrossentropy is losses.BinaryFocalCrossentropy
    assert losses.get("log_cosh")(np.zeros((1, 2)), gt.constant([[0.0, 0.0]])).numpy() == [0.0]


def test_configs():
    f = losses.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.4, gamma=3.0)
    cfg = f.get_config()
    assert cfg["alpha"] == 0.4 and cfg["gamma"] == 3.0 and cfg["apply_class_balancing"]
    again = losses.deserialize(losses.serialize(f))
    assert again.get_config() == cfg
    s = losses.SparseCategoricalCrossentropy(ignore_class=255, reduction="mean")
    assert s.get_config() == {"name": "sparse_categorical_crossentropy", "reduction": "mean",
                              "from_logits": False, "ignore_class": 255}
    assert losses.LogCosh().get_config() == {"name": "log_cosh",
                                             "reduction": "sum_over_batch_size"}
    assert losses.CosineSimilarity(axis=0).get_config()["axis"] == 0


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"sample_weight of shape \(3,\) does not fit the "
                                         r"per-sample losses of shape \(2, 2\)"):
        losses.MeanSquaredError()(np.zeros((2, 2, 3)), gt.constant(np.ones((2, 2, 3))),
                                  sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        losses.BinaryFocalCrossentropy(label_smoothing=2.0)
    with pytest.raises(ValueError, match="categorical_focal_crossentropy: y_true of shape"):
        losses.categorical_focal_crossentropy([1, 2], gt.constant(PC))
    with pytest.raises(ValueError, match="known reductions"):
        losses.Poisson(reduction="average")


def test_losses_and_gradients_stay_on_the_strict_device():
    dev = gt.get_device("strict:0")
    objs = [losses.MeanAbsolutePercentageError(), losses.MeanSquaredLogarithmicError(),
            losses.LogCosh(), losses.KLDivergence(), losses.Poisson(), losses.CosineSimilarity(),
            losses.Hinge(), losses.SquaredHinge(), losses.CategoricalHinge(),
            losses.BinaryFocalCrossentropy(apply_class_balancing=True),
            losses.CategoricalFocalCrossentropy(from_logits=True),
            losses.MeanSquaredError(reduction="mean_with_sample_weight")]
    with gt.device(dev):
        y = gt.constant(YC)
        p = gt.Variable(PC)
        w = gt.constant(SW)
        labels = gt.constant(YS)
        scce = losses.SparseCategoricalCrossentropy(ignore_class=2)
        dev.reset_counters()
        with gt.GradientTape() as tape:
            total = gt.add_n([o(y, p, sample_weight=w) for o in objs] + [scce(labels, p)])
        g = tape.gradient(total, p)
        assert dev.sync_count == 0 and g._device is dev and total._device is dev
    assert np.all(np.isfinite(g.numpy()))
