"""Keras 3 metrics: values over several weighted batches against numbers from tf.keras 2.21
(Keras 3.15), reset, config, lookup by name, and device residency (no host syncs)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

M = gt.keras.metrics

_rng = np.random.RandomState(7)
YB = (_rng.rand(12) > 0.5).astype(np.float32)
PB = _rng.rand(12).astype(np.float32)
SWB = _rng.rand(12).astype(np.float32)
YC = np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 1, 2, 0, 3]]
PC = _rng.rand(8, 4).astype(np.float32)
YS = np.argmax(YC, 1).astype(np.int32)
SWC = _rng.rand(8).astype(np.float32)
YML = (_rng.rand(10, 3) > 0.5).astype(np.float32)
PML = _rng.rand(10, 3).astype(np.float32)
YR = _rng.randn(9, 2).astype(np.float32)
PR_ = (YR + 0.5 * _rng.randn(9, 2)).astype(np.float32)
SWR = _rng.rand(9).astype(np.float32)


def _run(m, batches):
    """The result after each batch, then after reset_state."""
    out = []
    for b in batches:
        if len(b) > 2:
            m.update_state(b[0], b[1], sample_weight=b[2])
        else:
            m.update_state(b[0], b[1])
        out.append(np.asarray(m.result()).tolist())
    m.reset_state()
    out.append(np.asarray(m.result()).tolist())
    return out


def _bin(K, m):
    return _run(m, [(YB[:5], PB[:5]), (YB[5:], PB[5:], SWB[5:])])


def _cls(K, m):
    return _run(m, [(YC[:3], PC[:3]), (YC[3:], PC[3:], SWC[3:])])


def _sparse(K, m):
    return _run(m, [(YS[:3], PC[:3]), (YS[3:], PC[3:], SWC[3:])])


def _reg(K, m):
    return _run(m, [(YR[:4], PR_[:4]), (YR[4:], PR_[4:], SWR[4:])])


#: name -> f(K) with K the keras module (gradtape's or tf.keras); the reference numbers
#: below come from running these same cases with tf.keras 2.21.
CASES = {
    "auc": lambda K: _bin(K, K.metrics.AUC()),
    "auc_pr": lambda K: _bin(K, K.metrics.AUC(curve="PR")),
    "auc_pr_majoring": lambda K: _bin(K, K.metrics.AUC(curve="PR", summation_method="majoring")),
    "auc_roc_minoring_7": lambda K: _bin(K, K.metrics.AUC(num_thresholds=7,
                                                          summation_method="minoring")),
    "auc_thresholds": lambda K: _bin(K, K.metrics.AUC(thresholds=[0.1, 0.35, 0.5, 0.8])),
    "auc_logits": lambda K: _bin(K, K.metrics.AUC(from_logits=True)),
    "auc_multi": lambda K: _run(K.metrics.AUC(multi_label=True),
                                [(YML[:4], PML[:4]), (YML[4:], PML[4:], SWR[:6])]),
    "auc_multi_lw": lambda K: _run(K.metrics.AUC(multi_label=True, num_labels=3,
                                                 label_weights=[0.2, 1.0, 0.5], curve="PR"),
                                   [(YML[:4], PML[:4]), (YML[4:], PML[4:])]),
    "auc_flat_lw": lambda K: _run(K.metrics.AUC(label_weights=[0.2, 1.0, 0.5]),
                                  [(YML[:4], PML[:4]), (YML[4:], PML[4:])]),
    "tp": lambda K: _bin(K, K.metrics.TruePositives()),
    "fp_list": lambda K: _bin(K, K.metrics.FalsePositives(thresholds=[0.2, 0.6])),
    "tn": lambda K: _bin(K, K.metrics.TrueNegatives(thresholds=0.3)),
    "fn_even": lambda K: _bin(K, K.metrics.FalseNegatives(thresholds=[0.0, 0.5, 1.0])),
    "precision": lambda K: _bin(K, K.metrics.Precision()),
    "precision_list": lambda K: _bin(K, K.metrics.Precision(thresholds=[0.3, 0.7])),
    "recall_list": lambda K: _bin(K, K.metrics.Recall(thresholds=[0.3, 0.7])),
    "precision_topk": lambda K: _cls(K, K.metrics.Precision(top_k=2)),
    "recall_class": lambda K: _cls(K, K.metrics.Recall(class_id=2)),
    "recall_topk_class": lambda K: _cls(K, K.metrics.Recall(top_k=1, class_id=1)),
    "p_at_r": lambda K: _bin(K, K.metrics.PrecisionAtRecall(0.6)),
    "r_at_p": lambda K: _bin(K, K.metrics.RecallAtPrecision(0.5, num_thresholds=50)),
    "sens_at_spec": lambda K: _bin(K, K.metrics.SensitivityAtSpecificity(0.4)),
    "spec_at_sens": lambda K: _bin(K, K.metrics.SpecificityAtSensitivity(0.7,
                                                                         num_thresholds=1)),
    "spec_at_sens_class": lambda K: _cls(K, K.metrics.SpecificityAtSensitivity(0.5,
                                                                               class_id=1)),
    "miou": lambda K: _run(K.metrics.MeanIoU(num_classes=4),
                           [(YS[:4], np.argmax(PC[:4], 1)),
                            (YS[4:], np.argmax(PC[4:], 1), np.array([1., 2., 0., 3.]))]),
    "miou_ignore": lambda K: _run(K.metrics.MeanIoU(num_classes=4, ignore_class=0),
                                  [(YS, np.argmax(PC, 1))]),
    "iou_targets": lambda K: _run(K.metrics.IoU(num_classes=4, target_class_ids=[3, 1]),
                                  [(YS, np.argmax(PC, 1), SWC * 3)]),
    "iou_float_w": lambda K: _run(K.metrics.IoU(num_classes=4, target_class_ids=[0, 2],
                                                dtype="float32"),
                                  [(YS, np.argmax(PC, 1), SWC * 3)]),
    "binary_iou": lambda K: _bin(K, K.metrics.BinaryIoU(threshold=0.4)),
    "binary_iou_1": lambda K: _run(K.metrics.BinaryIoU(target_class_ids=[1]),
                                   [(YB, PB)]),
    "onehot_iou": lambda K: _run(K.metrics.OneHotIoU(num_classes=4, target_class_ids=[0, 1]),
                                 [(YC, PC)]),
    "onehot_miou": lambda K: _run(K.metrics.OneHotMeanIoU(num_classes=4), [(YC, PC, SWC)]),
    "f1_none": lambda K: _cls(K, K.metrics.F1Score()),
    "f1_macro": lambda K: _run(K.metrics.F1Score(average="macro", threshold=0.5),
                               [(YML, PML)]),
    "f1_micro": lambda K: _run(K.metrics.F1Score(average="micro", threshold=0.4),
                               [(YML[:5], PML[:5]), (YML[5:], PML[5:], SWR[:5])]),
    "fbeta_weighted": lambda K: _run(K.metrics.FBetaScore(average="weighted", beta=2.0),
                                     [(YC, PC, SWC)]),
    "r2": lambda K: _reg(K, K.metrics.R2Score()),
    "r2_raw": lambda K: _reg(K, K.metrics.R2Score(class_aggregation=None)),
    "r2_var": lambda K: _reg(K, K.metrics.R2Score(class_aggregation="variance_weighted_average")),
    "r2_adj": lambda K: _reg(K, K.metrics.R2Score(num_regressors=2)),
    "rmse": lambda K: _reg(K, K.metrics.RootMeanSquaredError()),
    "mape": lambda K: _reg(K, K.metrics.MeanAbsolutePercentageError()),
    "msle": lambda K: _run(K.metrics.MeanSquaredLogarithmicError(),
                           [(np.abs(YR), np.abs(PR_), SWR)]),
    "logcosh": lambda K: _reg(K, K.metrics.LogCoshError()),
    "cosine": lambda K: _reg(K, K.metrics.CosineSimilarity()),
    "cosine_axis0": lambda K: _run(K.metrics.CosineSimilarity(axis=0), [(YR, PR_)]),
    "kld": lambda K: _cls(K, K.metrics.KLDivergence()),
    "poisson": lambda K: _reg(K, K.metrics.Poisson()),
    "hinge": lambda K: _cls(K, K.metrics.Hinge()),
    "hinge_pm1": lambda K: _run(K.metrics.Hinge(), [(2 * YC - 1, PC - 0.5)]),
    "squared_hinge": lambda K: _cls(K, K.metrics.SquaredHinge()),
    "categorical_hinge": lambda K: _cls(K, K.metrics.CategoricalHinge()),
    "topk": lambda K: _cls(K, K.metrics.TopKCategoricalAccuracy(k=2)),
    "sparse_topk": lambda K: _sparse(K, K.metrics.SparseTopKCategoricalAccuracy(k=2)),
    "sparse_topk_sorted": lambda K: _run(
        K.metrics.SparseTopKCategoricalAccuracy(k=2, from_sorted_ids=True),
        [(YS, np.argsort(-PC, axis=1)[:, :3].astype(np.int32))]),
    "scce_ignore": lambda K: _sparse(K, K.metrics.SparseCategoricalCrossentropy(
        ignore_class=1)),
    # the brief's example: (N,) labels, (N, 1) predictions, (N,) weights
    "mse_n1": lambda K: _run(K.metrics.MeanSquaredError(),
                             [(np.array([0., 1, 2, 3]), np.array([[.5], [1], [1], [5]]),
                               np.array([1., 0, 2, 1]))]),
    "mae_n1": lambda K: _run(K.metrics.MeanAbsoluteError(),
                             [(np.array([0., 1, 2, 3]), np.array([[.5], [1], [1], [5]]),
                               np.array([1., 0, 2, 1]))]),
    "binacc_n1": lambda K: _run(K.metrics.BinaryAccuracy(),
                                [(np.array([0., 1, 1, 0]), np.array([[.2], [.7], [.4], [.9]]),
                                  np.array([1., 0, 2, 1]))]),
    "binacc_elementwise_w": lambda K: _run(K.metrics.BinaryAccuracy(), [(
        np.array([[1., 0., 1.], [0., 0., 1.]]), np.array([[0.9, 0.2, 0.3], [0.6, 0.1, 0.8]]),
        np.array([[1., 2., 3.], [0.5, 1., 0.]]))]),
    "mean_rows": lambda K: _mean_rows(K),
}


def _mean_rows(K):
    m = K.metrics.Mean()
    m.update_state([1.0, 2.0, 3.0], sample_weight=[1.0, 0.0, 3.0])
    a = float(np.asarray(m.result()))
    m.update_state([[1.0, 2.0], [3.0, 4.0]], sample_weight=[1.0, 0.0])
    return [a, float(np.asarray(m.result())), float(np.asarray(m.total)),
            float(np.asarray(m.count))]


NAN = float("nan")
#: tf.keras 2.21 (Keras 3.15) results of CASES.
REF = {'auc': [0.3333333, 0.4826845, 0.0],
 'auc_flat_lw': [0.7529644, 0.585563, 0.0],
 'auc_logits': [0.3333333, 0.4826845, 0.0],
 'auc_multi': [0.8888888, 0.7501408, 0.0],
 'auc_multi_lw': [0.5922664, 0.5160913, 0.0],
 'auc_pr': [0.6594496, 0.5773102, 0.0],
 'auc_pr_majoring': [0.7, 0.6378047, 0.0],
 'auc_roc_minoring_7': [0.3333333, 0.4238432, 0.0],
 'auc_thresholds': [0.4166667, 0.5224207, 0.0],
 'binacc_elementwise_w': [0.5333334, 0.0],
 'binacc_n1': [0.25, 0.0],
 'binary_iou': [0.4166667, 0.4166667, 0.0],
 'binary_iou_1': [0.3333333, 0.0],
 'categorical_hinge': [1.20061, 1.11123, 0.0],
 'cosine': [0.8235215, 0.649542, 0.0],
 'cosine_axis0': [0.7919247, 0.0],
 'f1_macro': [0.5940725, 0.0],
 'f1_micro': [0.4999999, 0.6178257, 0.0],
 'f1_none': [[0.9999998, 0.0, 0.0, 0.0], [0.918592, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]],
 'fbeta_weighted': [0.3566063, 0.0],
 'fn_even': [[0.0, 2.0, 3.0], [0.0, 2.833643, 4.87641], [0.0, 0.0, 0.0]],
 'fp_list': [[2.0, 0.0], [2.849786, 0.8497859], [0.0, 0.0]],
 'hinge': [1.266124, 1.214676, 0.0],
 'hinge_pm1': [0.9546656, 0.0],
 'iou_float_w': [0.4187107, 0.0],
 'iou_targets': [0.0, 0.0],
 'kld': [0.7295949, 0.5576144, 0.0],
 'logcosh': [0.09180206, 0.1013946, 0.0],
 'mae_n1': [1.125, 0.0],
 'mape': [373.8658, 280.894, 0.0],
 'mean_rows': [2.5, 2.3, 11.5, 5.0],
 'miou': [0.25, 0.125, 0.0],
 'miou_ignore': [0.0, 0.0],
 'mse_n1': [1.5625, 0.0],
 'msle': [0.06332045, 0.0],
 'onehot_iou': [0.3333333, 0.0],
 'onehot_miou': [0.0, 0.0],
 'p_at_r': [0.6, 0.6311528, 0.0],
 'poisson': [NAN, NAN, 0.0],
 'precision': [1.0, 0.706216, 0.0],
 'precision_list': [[0.5, 1.0], [0.575767, 0.7162127], [0.0, 0.0]],
 'precision_topk': [0.1666667, 0.2599659, 0.0],
 'r2': [0.0220969, 0.4070952, NAN],
 'r2_adj': [-0.3690643, 0.3280412, NAN],
 'r2_raw': [[0.7431827, -0.6989889], [0.5203109, 0.2938794], [NAN, NAN]],
 'r2_var': [0.5037487, 0.4395581, NAN],
 'r_at_p': [1.0, 1.0, 0.0],
 'recall_class': [0.0, 0.3164713, 0.0],
 'recall_list': [[0.3333333, 0.3333333], [0.5148295, 0.247077], [0.0, 0.0]],
 'recall_topk_class': [0.0, 0.0, 0.0],
 'rmse': [0.4457159, 0.4684488, 0.0],
 'scce_ignore': [0.9070251, 0.9534927, 0.0],
 'sens_at_spec': [0.3333333, 0.5148295, 0.0],
 'sparse_topk': [0.3333333, 0.5199317, 0.0],
 'sparse_topk_sorted': [0.625, 0.0],
 'spec_at_sens': [0.0, 0.0, 0.0],
 'spec_at_sens_class': [0.5, 0.3887784, 0.0],
 'squared_hinge': [1.841653, 1.763949, 0.0],
 'tn': [1.0, 1.490766, 0.0],
 'topk': [0.3333333, 0.5199317, 0.0],
 'tp': [1.0, 2.042767, 0.0]}


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=2e-5, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_tf_keras(name):
    if name not in REF:
        pytest.fail(f"no reference number for {name}")
    _close(CASES[name](gt.keras), REF[name])


# --- lookup, config, errors ---------------------------------------------------------------------

def test_get_resolves_names_as_keras_3():
    # Keras 3: every name (class name, its snake_case, a few aliases) gives a new object
    assert type(M.get("accuracy")) is M.Accuracy
    assert type(M.get("mse")) is M.MeanSquaredError and type(M.get("MAPE")) is \
        M.MeanAbsolutePercentageError
    for name, cls in [("AUC", M.AUC), ("auc", M.AUC), ("precision", M.Precision),
                      ("recall", M.Recall), ("f1_score", M.F1Score), ("r2_score", M.R2Score),
                      ("binary_io_u", M.BinaryIoU), ("log_cosh_error", M.LogCoshError),
                      ("top_k_categorical_accuracy", M.TopKCategoricalAccuracy),
                      ("root_mean_squared_error", M.RootMeanSquaredError),
                      ("kl_divergence", M.KLDivergence), ("bce", M.BinaryCrossentropy),
                      ("true_positives", M.TruePositives), ("cosine_similarity",
                                                            M.CosineSimilarity)]:
        assert type(M.get(name)) is cls, name
    assert M.get("AUC") is not M.get("AUC")
    for bad in ("kld", "acc", "logcosh"):               # not metric names in Keras 3 either
        with pytest.raises(ValueError, match=f"unknown metric '{bad}'"):
            M.get(bad)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        M.get("mean_io_u")                              # MeanIoU needs num_classes, as Keras
    m = M.get({"class_name": "AUC", "config": {"num_thresholds": 7, "curve": "PR"}})
    assert type(m) is M.AUC and m.num_thresholds == 7 and m.curve == "PR"


def test_configs_round_trip():
    for m in [M.AUC(num_thresholds=9, curve="PR", summation_method="minoring"),
              M.AUC(thresholds=[0.2, 0.6], multi_label=True, label_weights=[1.0, 2.0]),
              M.Precision(thresholds=[0.2, 0.5], top_k=2, class_id=1), M.Recall(class_id=0),
              M.TruePositives(thresholds=0.3), M.PrecisionAtRecall(0.4, num_thresholds=20),
              M.SensitivityAtSpecificity(0.5), M.MeanIoU(3, ignore_class=0),
              M.IoU(4, [1, 2]), M.BinaryIoU([1], threshold=0.3), M.OneHotMeanIoU(3),
              M.F1Score(average="macro", threshold=0.4),
              M.FBetaScore(beta=2.0, average="weighted"),
              M.R2Score(class_aggregation=None, num_regressors=1),
              M.TopKCategoricalAccuracy(k=3), M.SparseTopKCategoricalAccuracy(k=2)]:
        cfg = m.get_config()
        again = type(m).from_config(cfg)
        assert again.get_config() == cfg, type(m).__name__
    assert M.AUC(thresholds=[0.6, 0.2]).get_config()["thresholds"] == [0.2, 0.6]
    assert M.F1Score().get_config() == {"name": "f1_score", "dtype": "float32",
                                        "average": None, "threshold": None}


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"threshold values must be in \[0, 1\], got \[1.5\]"):
        M.Precision(thresholds=[0.5, 1.5])
    with pytest.raises(ValueError, match='invalid curve "ROCK"'):
        M.AUC(curve="ROCK")
    with pytest.raises(ValueError, match="num_thresholds must be an integer > 1, got 1"):
        M.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="recall must be in the range"):
        M.PrecisionAtRecall(1.5)
    with pytest.raises(ValueError, match="target class id 5 is out of range"):
        M.IoU(3, [0, 5])
    with pytest.raises(ValueError, match="beta must be a Python float"):
        M.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="R2Score expects 2D inputs"):
        M.R2Score().update_state([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="class_id is given, y_pred must be a 2D array"):
        M.Recall(class_id=1).update_state([1.0, 0.0], [0.3, 0.6])
    with pytest.raises(ValueError, match="y_pred must have rank 2 when multi_label=True"):
        M.AUC(multi_label=True).update_state(np.ones((2, 2, 2)), np.ones((2, 2, 2)))


def test_single_and_multi_threshold_results_and_call_form():
    tp = M.TruePositives(thresholds=[0.25, 0.75])
    assert tp([1.0, 1.0, 0.0], [0.5, 0.9, 0.8]).numpy().tolist() == [2.0, 1.0]
    p = M.Precision()
    assert p([1.0, 0.0], [0.9, 0.6]).numpy() == pytest.approx(0.5) and p.result().shape == ()
    auc = M.AUC()
    assert auc.result().numpy() == 0.0                       # nothing seen yet
    assert [v.name.split("/")[-1].split(":")[0] for v in auc.variables] == [
        "true_positives", "false_positives", "true_negatives", "false_negatives"]


# --- the device: state stays there, update_state reads nothing on the host ---------------------

def test_metrics_update_on_the_strict_device_without_syncs():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        metrics = [M.AUC(), M.AUC(curve="PR", multi_label=True), M.Precision(top_k=2),
                   M.Recall(thresholds=[0.3, 0.6]), M.PrecisionAtRecall(0.5),
                   M.MeanIoU(4), M.OneHotIoU(4, [0, 2]), M.F1Score(average="micro"),
                   M.R2Score(), M.RootMeanSquaredError(), M.TopKCategoricalAccuracy(k=2),
                   M.SparseTopKCategoricalAccuracy(k=2), M.Hinge(), M.BinaryAccuracy(),
                   M.SparseCategoricalCrossentropy(ignore_class=1),
                   M.CosineSimilarity(), M.LogCoshError()]
        y = gt.constant(YC)
        p = gt.constant(PC)
        ys = gt.constant(YS)
        w = gt.constant(SWC)
        for m in metrics:                                # build lazily-made state first
            m.update_state(*_args(m, y, p, ys), sample_weight=w)
        dev.reset_counters()
        for m in metrics:
            m.update_state(*_args(m, y, p, ys), sample_weight=w)
        assert dev.sync_count == 0
        for m in metrics:
            assert all(v._device is dev for v in m.variables), m.name
    ref = M.AUC()
    ref.update_state(YC, PC, sample_weight=SWC)
    ref.update_state(YC, PC, sample_weight=SWC)
    assert metrics[0].result().numpy() == pytest.approx(float(ref.result().numpy()), rel=1e-6)
    miou = M.MeanIoU(4)
    for _ in range(2):
        miou.update_state(YS, np.argmax(PC, 1), sample_weight=SWC)
    assert metrics[5].result().numpy() == pytest.approx(float(miou.result().numpy()), rel=1e-6)
    with gt.device(dev):
        results = [m.result() for m in metrics]          # results are device tensors too
        assert all(r._device is dev for r in results)
    assert np.all(np.isfinite(np.concatenate([np.ravel(r.numpy()) for r in results])))


def _args(m, y, p, ys):
    if isinstance(m, (M.MeanIoU, M.SparseTopKCategoricalAccuracy,
                      M.SparseCategoricalCrossentropy)):
        if isinstance(m, M.MeanIoU):
            return ys, gt.argmax(p, axis=-1)
        return ys, p
    return y, p
