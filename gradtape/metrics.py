"""``gt.keras.metrics``: running metrics for custom training loops, as ``tf.keras.metrics``.

    train_loss = gt.keras.metrics.Mean(name="train_loss")
    train_acc = gt.keras.metrics.SparseCategoricalAccuracy()
    ...
    train_loss(loss)                      # update_state, then result()
    train_acc(labels, logits)
    print(float(train_loss.result()), float(train_acc.result()))
    train_loss.reset_state()

A metric's state is a few non-trainable Variables on the device current when it was made;
``update_state`` adds to them with device ops (nothing is read on the host, so a captured
step may update metrics); ``result()`` is a tensor.

The semantics are Keras 3's (tf.keras 2.21): ``Mean`` averages each sample over its
non-batch axes and counts samples (or sums their weights); the per-sample functions match
ranks as the losses do (``(N,)`` labels beside ``(N, 1)`` predictions); ``binary_accuracy``
gives one value per element. The confusion-matrix metrics (``AUC``, ``Precision``,
``Recall``, ``PrecisionAtRecall`` ...) follow Keras' ``update_confusion_matrix_variables``,
the bucketed path for evenly spaced thresholds included, and ``get(name)`` resolves names as
Keras 3's ``keras.metrics.get`` (every name gives a new metric object).
"""
from __future__ import annotations

import numpy as np

from . import losses as _losses
from ._config import Configurable
from .dtypes import as_dtype
from .layers import _snake_case
from .ops.core import broadcast_to, cast, ones_like, zeros_like
from .ops.math import abs as abs_
from .ops.math import (ceil, clip_by_value, equal, greater, greater_equal, is_finite, is_inf,
                       less, log, logical_and, maximum, minimum, not_equal, sqrt, square, where)
from .ops.reduce import argmax, cumsum, reduce_any, reduce_max, reduce_mean, reduce_sum
from .ops.scatter import unsorted_segment_sum
from .ops.shape import expand_dims, one_hot, reshape, squeeze
from .ops.sorting import top_k
from .tensor import Tensor, Variable, convert_to_tensor

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy", "MeanSquaredError", "RootMeanSquaredError",
           "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
           "LogCoshError", "CosineSimilarity", "R2Score", "Hinge", "SquaredHinge",
           "CategoricalHinge", "KLDivergence", "Poisson", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "BinaryCrossentropy", "TruePositives",
           "TrueNegatives", "FalsePositives", "FalseNegatives", "Precision", "Recall", "AUC",
           "PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity",
           "SpecificityAtSensitivity", "IoU", "MeanIoU", "BinaryIoU", "OneHotIoU",
           "OneHotMeanIoU", "FBetaScore", "F1Score", "PearsonCorrelation",
           "ConcordanceCorrelation", "pearson_correlation", "concordance_correlation", "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy", "get", "serialize", "deserialize"]


def _tensor(x, what, metric):
    if isinstance(x, Tensor):
        return x
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{metric}: {what} must be a tensor or array, got "
                        f"{type(x).__name__} ({exc})") from None


class Metric(Configurable):
    """Base class: state Variables made with :meth:`add_weight`, ``update_state``,
    ``result``, ``reset_state``; calling a metric updates it and returns its result."""

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake_case(type(self).__name__)
        self._dtype = np.dtype(as_dtype(dtype or "float32").np)
        if self._dtype.kind != "f":
            raise TypeError(f"{self.name}: a metric's dtype must be a float dtype, got "
                            f"{self._dtype.name}")
        self._weights = []

    @property
    def dtype(self):
        return as_dtype(self._dtype)

    def add_weight(self, name, shape=(), initializer="zeros", dtype=None) -> Variable:
        """A non-trainable state Variable of zeros on the current device."""
        if initializer != "zeros":
            raise ValueError(f"{self.name}: metric state starts at zeros, got initializer "
                             f"{initializer!r}")
        dt = self._dtype if dtype is None else np.dtype(as_dtype(dtype).np)
        v = Variable(np.zeros(tuple(shape), dt), trainable=False, name=f"{self.name}/{name}")
        self._weights.append(v)
        return v

    @property
    def variables(self):
        return list(self._weights)

    weights = variables

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define update_state")

    def result(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define result")

    def reset_state(self) -> None:
        """Every state Variable back to zero."""
        for v in self._weights:
            v.assign(zeros_like(v))

    reset_states = reset_state

    def __call__(self, *args, **kwargs) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self._dtype.name}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


def _samplewise(values, sample_weight, reduce_fn, metric, mask=None):
    """Keras 3's ``reduce_to_samplewise_values``: ``(values, weights)`` with one value (and
    one weight) per sample. The weights are squeezed or expanded to the values' rank as the
    losses do; values of a higher rank than the weights are reduced (``reduce_fn``) over the
    extra axes; the weights broadcast to the values and multiply them; weights of rank > 1 are
    then reduced over their non-batch axes, and values over theirs."""
    w = None
    if sample_weight is not None:
        w = cast(_tensor(sample_weight, "sample_weight", metric), values.dtype)
        given = tuple(w.shape)
        if mask is not None:
            # as Keras 3, a mask on the values (ignore_class) zeroes weights that are given
            m, w = _losses._squeeze_or_expand(cast(mask, values.dtype), w)
            w = w * m
        values, w = _losses._squeeze_or_expand(values, w)
        if values.rank > w.rank:
            values = reduce_fn(values, axis=list(range(w.rank, values.rank)))
        try:
            w = broadcast_to(w, values.shape)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{metric}: sample_weight of shape {given} does not broadcast to "
                             f"the values' shape {tuple(values.shape)} ({exc})") from None
        values = values * w
        if w.rank > 1:
            w = reduce_fn(w, axis=list(range(1, w.rank)))
    if values.rank > 1:
        values = reduce_fn(values, axis=list(range(1, values.rank)))
    return values, w


def _mask_of(values):
    from .layers import get_mask
    return get_mask(values)


def _masked_sample_weight(sample_weight, mask, metric):
    """As Keras 3's ``MeanMetricWrapper.update_state``: a Keras mask on ``y_pred`` (the
    output of ``Embedding(mask_zero=True)``, ``Masking`` ...) is a 0/1 sample weight, times
    any given one (squeezed or expanded to the mask's rank first)."""
    if mask is None:
        return sample_weight
    sw = None
    if sample_weight is not None:
        sw = cast(_tensor(sample_weight, "sample_weight", metric.name), metric._dtype)
    return _losses._apply_mask(sw, mask, _losses.Reduction.SUM, metric._dtype, metric.name)


class Sum(Metric):
    """The (weighted) sum of every value seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")

    def update_state(self, values, sample_weight=None) -> None:
        values = _tensor(values, "values", self.name)
        mask = _mask_of(values)
        values, _ = _samplewise(cast(values, self._dtype), sample_weight, reduce_sum, self.name,
                                mask)
        self.total.assign_add(reduce_sum(values))

    def result(self) -> Tensor:
        return self.total + 0.0                # (a snapshot, not the Variable's buffer)


class Mean(Metric):
    """The (weighted) mean of every value seen: total / count, 0 before any value. As in
    Keras 3 the values are first averaged per sample (over the non-batch axes), and
    ``count`` counts samples (or sums their weights)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")
        self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None) -> None:
        values = _tensor(values, "values", self.name)
        mask = _mask_of(values)
        values, w = _samplewise(cast(values, self._dtype), sample_weight, reduce_mean,
                                self.name, mask)
        self.total.assign_add(reduce_sum(values))
        if w is not None:
            self.count.assign_add(reduce_sum(w))
        else:
            self.count.assign_add(float(values.shape[0]) if values.rank else 1.0)

    def result(self) -> Tensor:
        from .math import divide_no_nan
        return divide_no_nan(self.total, self.count)


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over every sample seen. As in Keras 3, a
    Keras mask on ``y_pred`` (``Embedding(mask_zero=True)``, ``Masking`` ...) is a sample
    weight: the masked entries are left out."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name or getattr(fn, "__name__", "mean_metric_wrapper"), dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        # both cast to the metric's dtype; the functions match the ranks as Keras 3's do
        y_true = cast(_tensor(y_true, "y_true", self.name), self._dtype)
        y_pred = _tensor(y_pred, "y_pred", self.name)
        mask = _mask_of(y_pred)
        y_pred = cast(y_pred, self._dtype)
        Mean.update_state(self, self._fn(y_true, y_pred, **self._fn_kwargs),
                          _masked_sample_weight(sample_weight, mask, self))

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


# --- the per-sample functions ---------------------------------------------------------------

def _floatx(x):
    return cast(x, "float32")


def accuracy(y_true, y_pred) -> Tensor:
    """1.0 where ``y_pred`` equals ``y_true`` (cast to its dtype), else 0.0; a trailing axis
    of 1 on either is matched as Keras does."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true)
    if y_true.dtype != y_pred.dtype:
        y_true = cast(y_true, y_pred.dtype)
    y_true, y_pred = _losses._squeeze_or_expand(y_true, y_pred)
    try:
        np.broadcast_shapes(tuple(y_true.shape), tuple(y_pred.shape))
    except ValueError:
        raise ValueError(f"accuracy: y_true of shape {tuple(y_true.shape)} and y_pred of shape "
                         f"{tuple(y_pred.shape)} differ") from None
    return _floatx(equal(y_true, y_pred))


def binary_accuracy(y_true, y_pred, threshold=0.5) -> Tensor:
    """1.0 for each element where ``y_pred > threshold`` equals ``y_true``, else 0.0 (Keras
    3: one value per element, no mean over the last axis)."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    y_true, y_pred = _losses._squeeze_or_expand(y_true, y_pred)
    predicted = cast(greater(y_pred, threshold), y_true.dtype)
    return _floatx(equal(y_true, predicted))


def categorical_accuracy(y_true, y_pred) -> Tensor:
    """1.0 where the one-hot ``y_true`` and ``y_pred`` have their maximum at the same class."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    return _floatx(equal(argmax(y_true, axis=-1), argmax(y_pred, axis=-1)))


def sparse_categorical_accuracy(y_true, y_pred) -> Tensor:
    """1.0 where the class id ``y_true`` is ``y_pred``'s most likely class (a trailing axis
    of 1 on ``y_true`` is squeezed)."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    if y_true.rank == y_pred.rank and y_true.rank > 0 and y_true.shape[-1] == 1:
        y_true = squeeze(y_true, -1)
    predicted = argmax(y_pred, axis=-1)
    if y_true.dtype.is_floating:
        predicted = cast(predicted, y_true.dtype)
    elif predicted.dtype != y_true.dtype:
        y_true = cast(y_true, predicted.dtype)
    return _floatx(equal(y_true, predicted))


def _in_top_k(targets, predictions, k):
    """As ``tf.math.in_top_k``: the target's score is finite and fewer than ``k`` classes
    score strictly higher (ties at the boundary are all in); out-of-range targets are not."""
    num_classes = int(predictions.shape[-1])
    targets = cast(targets, np.int64)
    hot = one_hot(targets, num_classes, dtype=predictions.dtype)
    target_score = reduce_sum(hot * where(is_finite(predictions), predictions,
                                          zeros_like(predictions)), axis=-1)
    hot_finite = reduce_sum(hot * cast(is_finite(predictions), predictions.dtype), axis=-1)
    higher = reduce_sum(cast(greater(predictions, expand_dims(target_score, -1)), np.int32),
                        axis=-1)
    ok = logical_and(greater(hot_finite, 0.0), less(higher, int(k)))
    return ok


def top_k_categorical_accuracy(y_true, y_pred, k=5) -> Tensor:
    """1.0 where the one-hot ``y_true``'s class is among ``y_pred``'s ``k`` highest scores."""
    y_pred = convert_to_tensor(y_pred)
    y_true = argmax(cast(convert_to_tensor(y_true), y_pred.dtype), axis=-1)
    shape = tuple(y_true.shape)
    if y_pred.rank > 2:
        y_pred = reshape(y_pred, (-1, y_pred.shape[-1]))
    if y_true.rank > 1:
        y_true = reshape(y_true, (-1,))
    matches = _floatx(_in_top_k(y_true, y_pred, k))
    return reshape(matches, shape) if len(shape) > 1 else matches


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False) -> Tensor:
    """1.0 where the class id ``y_true`` is among ``y_pred``'s ``k`` highest scores (with
    ``from_sorted_ids``, among the first ``k`` ids of ``y_pred``)."""
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true)
    y_true = cast(y_true, y_pred.dtype if from_sorted_ids else np.int32)
    shape = tuple(y_true.shape)
    if y_pred.rank > 2:
        y_pred = reshape(y_pred, (-1, y_pred.shape[-1]))
    if y_true.rank > 1:
        y_true = reshape(y_true, (-1,))
    if from_sorted_ids:
        matches = reduce_any(equal(expand_dims(y_true, 1), y_pred[:, :k]), axis=1)
    else:
        matches = _in_top_k(y_true, y_pred, k)
    matches = _floatx(matches)
    return reshape(matches, shape) if len(shape) > 1 else matches


def cosine_similarity(y_true, y_pred, axis=-1) -> Tensor:
    """``sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`` (the metric's sign: 1 for
    vectors of one direction)."""
    return -_losses.cosine_similarity(y_true, y_pred, axis=axis)


def _correlation_operands(y_true, y_pred):
    y_pred = _tensor(y_pred, "y_pred", "correlation")
    y_true = cast(_tensor(y_true, "y_true", "correlation"), y_pred.dtype)
    return _losses._squeeze_or_expand(y_true, y_pred)


def pearson_correlation(y_true, y_pred, axis=-1) -> Tensor:
    """The Pearson correlation coefficient of ``y_true`` and ``y_pred`` along ``axis``, as
    Keras 3: both centred and divided by their (population) standard deviation, then the
    mean of their product."""
    from .ops.reduce import reduce_mean, reduce_std
    y_true, y_pred = _correlation_operands(y_true, y_pred)
    t = y_true - reduce_mean(y_true, axis=axis, keepdims=True)
    p = y_pred - reduce_mean(y_pred, axis=axis, keepdims=True)
    t = t / reduce_std(t, axis=axis, keepdims=True)
    p = p / reduce_std(p, axis=axis, keepdims=True)
    return reduce_mean(t * p, axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1) -> Tensor:
    """The concordance correlation coefficient along ``axis`` exactly as Keras 3 computes it:
    ``mean(2 (y_true - mean(y_pred)) (y_pred - mean(y_pred)) / (var(y_true) + var(y_pred) +
    (mean(y_true) - mean(y_pred))**2 + epsilon))`` (Keras centres ``y_true`` on the
    prediction's mean; the numbers here are Keras')."""
    from .ops.math import square
    from .ops.reduce import reduce_mean, reduce_variance
    from .constraints import _EPSILON
    y_true, y_pred = _correlation_operands(y_true, y_pred)
    t_mean = reduce_mean(y_true, axis=axis, keepdims=True)
    p_mean = reduce_mean(y_pred, axis=axis, keepdims=True)
    t_var = reduce_variance(y_true - t_mean, axis=axis, keepdims=True)
    p_var = reduce_variance(y_pred - p_mean, axis=axis, keepdims=True)
    covar = (y_true - p_mean) * (y_pred - p_mean)
    norm = t_var + p_var + square(t_mean - p_mean)
    return reduce_mean(2.0 * covar / (norm + _EPSILON[0]), axis=axis)


# --- the mean metrics ---------------------------------------------------------------------------

class Accuracy(MeanMetricWrapper):
    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name, dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target is among the ``k`` highest predictions."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name, dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer target is among the ``k`` highest predictions."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None,
                 from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
        self.k = k
        self.from_sorted_ids = from_sorted_ids

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        # the labels stay integer ids (not cast to the metric's float dtype)
        y_true = _tensor(y_true, "y_true", self.name)
        y_pred = _tensor(y_pred, "y_pred", self.name)
        mask = _mask_of(y_pred)
        if not self.from_sorted_ids:
            y_pred = cast(y_pred, self._dtype)
        Mean.update_state(self, self._fn(y_true, y_pred, **self._fn_kwargs),
                          _masked_sample_weight(sample_weight, mask, self))


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mean_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name, dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(_losses.mean_absolute_percentage_error, name, dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(_losses.mean_squared_logarithmic_error, name, dtype)


class LogCoshError(MeanMetricWrapper):
    def __init__(self, name="logcosh", dtype=None):
        super().__init__(_losses.log_cosh, name, dtype)


class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity along ``axis`` (1 for vectors of one direction)."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name, dtype, axis=axis)


class PearsonCorrelation(MeanMetricWrapper):
    """The mean Pearson correlation coefficient along ``axis`` (:func:`pearson_correlation`)
    over the samples seen; higher is better."""

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        super().__init__(pearson_correlation, name, dtype, axis=axis)
        self.axis = axis


class ConcordanceCorrelation(MeanMetricWrapper):
    """The mean concordance correlation coefficient along ``axis``
    (:func:`concordance_correlation`) over the samples seen; higher is better."""

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        super().__init__(concordance_correlation, name, dtype, axis=axis)
        self.axis = axis


class Hinge(MeanMetricWrapper):
    def __init__(self, name="hinge", dtype=None):
        super().__init__(_losses.hinge, name, dtype)


class SquaredHinge(MeanMetricWrapper):
    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(_losses.squared_hinge, name, dtype)


class CategoricalHinge(MeanMetricWrapper):
    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(_losses.categorical_hinge, name, dtype)


class KLDivergence(MeanMetricWrapper):
    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(_losses.kl_divergence, name, dtype)


class Poisson(MeanMetricWrapper):
    def __init__(self, name="poisson", dtype=None):
        super().__init__(_losses.poisson, name, dtype)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0, axis=-1):
        super().__init__(_losses.categorical_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 ignore_class=None, axis=-1):
        super().__init__(_losses.sparse_categorical_crossentropy, name, dtype,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(_losses.binary_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the (weighted) mean squared error."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = cast(_tensor(y_true, "y_true", self.name), self._dtype)
        y_pred = cast(_tensor(y_pred, "y_pred", self.name), self._dtype)
        y_true, y_pred = _losses._squeeze_or_expand(y_true, y_pred)
        super().update_state(square(y_pred - y_true), sample_weight)

    def result(self) -> Tensor:
        return sqrt(super().result())


class R2Score(Metric):
    """The coefficient of determination over every sample seen, per output column, then
    averaged (``class_aggregation``: ``"uniform_average"``, ``"variance_weighted_average"``
    or None for one score per column); ``num_regressors`` gives the adjusted score."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score",
                 dtype=None):
        super().__init__(name, dtype)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError(f"R2Score: class_aggregation must be one of {valid}, got "
                             f"{class_aggregation!r}")
        if num_regressors < 0:
            raise ValueError(f"R2Score: num_regressors must be >= 0, got {num_regressors}")
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_weight("num_samples")
        self._built = False

    def _build(self, shape):
        if len(shape) != 2:
            raise ValueError(f"R2Score expects 2D inputs with shape (batch_size, output_dim), "
                             f"got shape {tuple(shape)}")
        n = int(shape[-1])
        self.squared_sum = self.add_weight("squared_sum", (n,))
        self.sum = self.add_weight("sum", (n,))
        self.total_mse = self.add_weight("residual", (n,))
        self.count = self.add_weight("count", (n,))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = cast(_tensor(y_true, "y_true", self.name), self._dtype)
        y_pred = cast(_tensor(y_pred, "y_pred", self.name), self._dtype)
        y_true, y_pred = _losses._squeeze_or_expand(y_true, y_pred)
        if not self._built:
            self._build(tuple(y_true.shape))
        if sample_weight is None:
            w = ones_like(y_true)
        else:
            w = cast(_tensor(sample_weight, "sample_weight", self.name), self._dtype)
            if w.rank == 1:
                w = expand_dims(w, 1)
            w = broadcast_to(w, y_true.shape)
        weighted = y_true * w
        self.sum.assign_add(reduce_sum(weighted, axis=0))
        self.squared_sum.assign_add(reduce_sum(y_true * weighted, axis=0))
        self.total_mse.assign_add(reduce_sum(square(y_true - y_pred) * w, axis=0))
        self.count.assign_add(reduce_sum(w, axis=0))
        self.num_samples.assign_add(float(int(np.prod(y_true.shape))))

    def result(self) -> Tensor:
        if not self._built:
            return self.num_samples * np.nan
        mean = self.sum / self.count
        total = self.squared_sum - self.sum * mean
        raw = 1.0 - self.total_mse / total
        raw = where(is_inf(raw), zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            r2 = reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            r2 = reduce_sum(total * raw) / reduce_sum(total)
        else:
            r2 = raw
        if self.num_regressors:
            # the adjusted score where it is defined (n - 1 > p), else the plain one
            n, p = self.num_samples, float(self.num_regressors)
            adjusted = 1.0 - (1.0 - r2) * (n - 1.0) / maximum(n - p - 1.0, 1.0)
            r2 = where(greater(n - 1.0, p), adjusted, r2)
        return r2

    def get_config(self) -> dict:
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


# --- confusion-matrix metrics -------------------------------------------------------------------

#: Keras' value for the predictions outside the top k (``metrics_utils.NEG_INF``).
NEG_INF = -1e10

TRUE_POSITIVES, FALSE_POSITIVES, TRUE_NEGATIVES, FALSE_NEGATIVES = "tp", "fp", "tn", "fn"


def _thresholds_list(thresholds, default, who):
    if thresholds is None:
        return [float(default)]
    values = list(thresholds) if isinstance(thresholds, (list, tuple, np.ndarray)) else \
        [thresholds]
    bad = [t for t in values if t is None or t < 0 or t > 1]
    if bad:
        raise ValueError(f"{who}: threshold values must be in [0, 1], got {bad}")
    return [float(t) for t in values]


def _evenly_distributed(thresholds) -> bool:
    """Keras' ``is_evenly_distributed_thresholds``."""
    n = len(thresholds)
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(thresholds, even, atol=_losses.EPSILON))


def _filter_top_k(x, k):
    """Keep the ``k`` largest values of the last axis; the others become ``NEG_INF``."""
    _, idx = top_k(x, k)
    mask = reduce_sum(one_hot(idx, int(x.shape[-1]), dtype=x.dtype), axis=-2)
    return x * mask + NEG_INF * (1.0 - mask)


def _update_confusion(variables, y_true, y_pred, thresholds, thresholds_tensor=None,
                      top_k_=None, class_id=None, sample_weight=None, multi_label=False,
                      label_weights=None, evenly=False, metric="metric"):
    """Keras' ``update_confusion_matrix_variables``: add the (weighted) counts of true/false
    positives/negatives at each threshold (``y_pred > threshold``) to ``variables`` (a dict
    keyed by ``"tp"``, ``"fp"``, ``"tn"``, ``"fn"``). Evenly spaced thresholds take Keras'
    bucketed path (a segment sum and a reversed cumulative sum); others compare every
    prediction with every threshold. Everything stays on the device."""
    dtype = next(iter(variables.values())).dtype
    y_true = cast(_tensor(y_true, "y_true", metric), dtype)
    y_pred = cast(_tensor(y_pred, "y_pred", metric), dtype)
    y_pred, y_true = _losses._squeeze_or_expand(y_pred, y_true)
    try:
        np.broadcast_shapes(tuple(y_true.shape), tuple(y_pred.shape))
    except ValueError:
        raise ValueError(f"{metric}: y_true of shape {tuple(y_true.shape)} and y_pred of shape "
                         f"{tuple(y_pred.shape)} are incompatible") from None
    if sample_weight is not None:
        sample_weight = expand_dims(cast(_tensor(sample_weight, "sample_weight", metric),
                                         dtype), -1)
        _, sample_weight = _losses._squeeze_or_expand(y_true, sample_weight,
                                                      expand_rank_1=False)
    if top_k_ is not None:
        y_pred = _filter_top_k(y_pred, top_k_)
    if class_id is not None:
        if y_pred.rank == 1:
            raise ValueError(f"{metric}: when class_id is given, y_pred must be a 2D array of "
                             f"shape (num_samples, num_classes), got shape "
                             f"{tuple(y_pred.shape)}")
        y_true = y_true[..., class_id:class_id + 1]
        y_pred = y_pred[..., class_id:class_id + 1]
    if tuple(y_true.shape) != tuple(y_pred.shape):
        y_true = broadcast_to(y_true, y_pred.shape)
    want_neg = TRUE_NEGATIVES in variables or FALSE_NEGATIVES in variables
    weights = None
    if sample_weight is not None:
        try:
            weights = broadcast_to(sample_weight, y_pred.shape)
        except (ValueError, TypeError):
            raise ValueError(f"{metric}: sample_weight of shape {tuple(sample_weight.shape)} "
                             f"does not broadcast to y_pred's shape "
                             f"{tuple(y_pred.shape)}") from None
    if label_weights is not None and not multi_label:
        lw = broadcast_to(expand_dims(label_weights, 0), y_pred.shape)
        weights = lw if weights is None else weights * lw
    if weights is None:
        weights = ones_like(y_pred)
    positive = cast(not_equal(y_true, 0.0), dtype)
    if not multi_label:
        positive, y_pred, weights = (reshape(t, (-1,)) for t in (positive, y_pred, weights))
    true_labels = positive * weights
    false_labels = (1.0 - positive) * weights
    n_thr = len(thresholds)
    if evenly:
        with_eps = thresholds[0] < 0.0 or thresholds[-1] > 1.0
        y_pred = clip_by_value(y_pred, 0.0, 1.0)
        bucket = ceil(y_pred * float(n_thr - 1)) - 1.0
        if with_eps:
            bucket = maximum(bucket, 0.0)
        bucket = cast(bucket, np.int32)
        if multi_label:
            n_labels = int(y_pred.shape[-1])
            ids = bucket * n_labels + cumsum(ones_like(bucket), axis=-1) - 1
            seg = n_thr * n_labels
            tp = reshape(unsorted_segment_sum(reshape(true_labels, (-1,)), reshape(ids, (-1,)),
                                              seg), (n_thr, n_labels))
            fp = reshape(unsorted_segment_sum(reshape(false_labels, (-1,)), reshape(ids, (-1,)),
                                              seg), (n_thr, n_labels))
            tp, fp = cumsum(tp, axis=0, reverse=True), cumsum(fp, axis=0, reverse=True)
        else:
            tp = cumsum(unsorted_segment_sum(true_labels, bucket, n_thr), reverse=True)
            fp = cumsum(unsorted_segment_sum(false_labels, bucket, n_thr), reverse=True)
    else:
        # (T, M) or (T, N, L): every prediction against every threshold
        thr = reshape(thresholds_tensor, (n_thr,) + (1,) * y_pred.rank)
        pred_pos = cast(greater(expand_dims(y_pred, 0), thr), dtype)
        tp = reduce_sum(pred_pos * expand_dims(true_labels, 0), axis=1)
        fp = reduce_sum(pred_pos * expand_dims(false_labels, 0), axis=1)
    if TRUE_POSITIVES in variables:
        variables[TRUE_POSITIVES].assign_add(tp)
    if FALSE_POSITIVES in variables:
        variables[FALSE_POSITIVES].assign_add(fp)
    if want_neg:
        if TRUE_NEGATIVES in variables:
            variables[TRUE_NEGATIVES].assign_add(reduce_sum(false_labels, axis=0) - fp)
        if FALSE_NEGATIVES in variables:
            variables[FALSE_NEGATIVES].assign_add(reduce_sum(true_labels, axis=0) - tp)


class _ConfusionMetric(Metric):
    """State: one accumulator per threshold for each count the metric needs."""

    def _setup_thresholds(self, thresholds):
        self.thresholds = thresholds
        self._evenly = _evenly_distributed(thresholds)
        self._thresholds_tensor = None if self._evenly else convert_to_tensor(
            np.asarray(thresholds, self._dtype))

    def _update(self, variables, y_true, y_pred, sample_weight, **kwargs):
        _update_confusion(variables, y_true, y_pred, self.thresholds,
                          thresholds_tensor=self._thresholds_tensor, evenly=self._evenly,
                          sample_weight=sample_weight, metric=self.name, **kwargs)


class _ConfusionMatrixConditionCount(_ConfusionMetric):
    _cond = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.init_thresholds = thresholds
        self._setup_thresholds(_thresholds_list(thresholds, 0.5, type(self).__name__))
        self.accumulator = self.add_weight("accumulator", (len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self._update({self._cond: self.accumulator}, y_true, y_pred, sample_weight)

    def result(self) -> Tensor:
        return self.accumulator[0] if len(self.thresholds) == 1 else self.accumulator + 0.0

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConfusionMatrixConditionCount):
    """The (weighted) number of positives predicted above the threshold(s)."""
    _cond = TRUE_POSITIVES


class FalsePositives(_ConfusionMatrixConditionCount):
    """The (weighted) number of negatives predicted above the threshold(s)."""
    _cond = FALSE_POSITIVES


class TrueNegatives(_ConfusionMatrixConditionCount):
    """The (weighted) number of negatives predicted at or below the threshold(s)."""
    _cond = TRUE_NEGATIVES


class FalseNegatives(_ConfusionMatrixConditionCount):
    """The (weighted) number of positives predicted at or below the threshold(s)."""
    _cond = FALSE_NEGATIVES


class _PrecisionRecall(_ConfusionMetric):
    _other = None

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self._setup_thresholds(_thresholds_list(thresholds, 0.5 if top_k is None else NEG_INF,
                                                type(self).__name__))
        n = len(self.thresholds)
        self.true_positives = self.add_weight("true_positives", (n,))
        setattr(self, self._other_name, self.add_weight(self._other_name, (n,)))

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self._update({TRUE_POSITIVES: self.true_positives,
                      self._other: getattr(self, self._other_name)}, y_true, y_pred,
                     sample_weight, top_k_=self.top_k, class_id=self.class_id)

    def result(self) -> Tensor:
        from .math import divide_no_nan
        tp = self.true_positives
        r = divide_no_nan(tp, tp + getattr(self, self._other_name))
        return r[0] if len(self.thresholds) == 1 else r

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """``true_positives / (true_positives + false_positives)`` at each threshold (default
    0.5; with ``top_k``, the top-k predictions count as positive; ``class_id`` picks one
    class of multi-class predictions)."""
    _other, _other_name = FALSE_POSITIVES, "false_positives"


class Recall(_PrecisionRecall):
    """``true_positives / (true_positives + false_negatives)`` at each threshold."""
    _other, _other_name = FALSE_NEGATIVES, "false_negatives"


class _SensitivitySpecificityBase(_ConfusionMetric):
    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name, dtype)
        if num_thresholds <= 0:
            raise ValueError(f"{type(self).__name__}: num_thresholds must be an integer > 0, "
                             f"got {num_thresholds}")
        self.value = value
        self.class_id = class_id
        if num_thresholds == 1:
            thresholds = [0.5]
        else:
            thresholds = [0.0] + [(i + 1) * 1.0 / (num_thresholds - 1)
                                  for i in range(num_thresholds - 2)] + [1.0]
        self._setup_thresholds(thresholds)
        n = len(thresholds)
        self.true_positives = self.add_weight("true_positives", (n,))
        self.false_positives = self.add_weight("false_positives", (n,))
        self.true_negatives = self.add_weight("true_negatives", (n,))
        self.false_negatives = self.add_weight("false_negatives", (n,))

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self._update({TRUE_POSITIVES: self.true_positives, TRUE_NEGATIVES: self.true_negatives,
                      FALSE_POSITIVES: self.false_positives,
                      FALSE_NEGATIVES: self.false_negatives}, y_true, y_pred, sample_weight,
                     class_id=self.class_id)

    def _rates(self):
        from .math import divide_no_nan
        tp, fp, tn, fn = (self.true_positives, self.false_positives, self.true_negatives,
                          self.false_negatives)
        return {"sensitivity": divide_no_nan(tp, tp + fn),
                "specificity": divide_no_nan(tn, tn + fp),
                "precision": divide_no_nan(tp, tp + fp)}

    def _max_under_constraint(self, constrained, dependent):
        feasible = greater_equal(constrained, self.value)
        return maximum(reduce_max(where(feasible, dependent, zeros_like(dependent))), 0.0)

    def get_config(self) -> dict:
        return {**super().get_config(), "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._arg: self.value}


def _check_unit(value, arg, who):
    if value < 0 or value > 1:
        raise ValueError(f"{who}: {arg} must be in the range [0, 1], got {value}")


class SensitivityAtSpecificity(_SensitivitySpecificityBase):
    """The best sensitivity (recall) over the thresholds whose specificity is at least
    ``specificity``."""
    _arg = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(specificity, "specificity", "SensitivityAtSpecificity")
        self.specificity = specificity
        self.num_thresholds = num_thresholds
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def result(self) -> Tensor:
        r = self._rates()
        return self._max_under_constraint(r["specificity"], r["sensitivity"])


class SpecificityAtSensitivity(_SensitivitySpecificityBase):
    """The best specificity over the thresholds whose sensitivity is at least
    ``sensitivity``."""
    _arg = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(sensitivity, "sensitivity", "SpecificityAtSensitivity")
        self.sensitivity = sensitivity
        self.num_thresholds = num_thresholds
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def result(self) -> Tensor:
        r = self._rates()
        return self._max_under_constraint(r["sensitivity"], r["specificity"])


class PrecisionAtRecall(_SensitivitySpecificityBase):
    """The best precision over the thresholds whose recall is at least ``recall``."""
    _arg = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(recall, "recall", "PrecisionAtRecall")
        self.recall = recall
        self.num_thresholds = num_thresholds
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def result(self) -> Tensor:
        r = self._rates()
        return self._max_under_constraint(r["sensitivity"], r["precision"])


class RecallAtPrecision(_SensitivitySpecificityBase):
    """The best recall over the thresholds whose precision is at least ``precision``."""
    _arg = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_unit(precision, "precision", "RecallAtPrecision")
        self.precision = precision
        self.num_thresholds = num_thresholds
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def result(self) -> Tensor:
        r = self._rates()
        return self._max_under_constraint(r["precision"], r["sensitivity"])


class AUC(_ConfusionMetric):
    """The area under the ROC or PR curve, by Keras' algorithm: confusion counts at
    ``num_thresholds`` evenly spaced thresholds (or the given ``thresholds``), then a
    Riemann sum (``summation_method``: ``"interpolation"``, ``"minoring"``,
    ``"majoring"``; for PR, interpolation is Davis & Goadrich's). ``multi_label`` keeps
    one curve per label and averages them (weighted by ``label_weights``); otherwise
    ``label_weights`` weigh the flattened labels. ``from_logits`` applies a sigmoid."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name, dtype)
        curve_name = {"roc": "ROC", "pr": "PR", "prgain": "PRGAIN"}.get(str(curve).lower())
        if curve_name is None:
            raise ValueError(f'AUC: invalid curve "{curve}"; expected one of '
                             '["PR", "ROC", "PRGAIN"]')
        method = str(summation_method).lower()
        if method not in ("interpolation", "majoring", "minoring"):
            raise ValueError(f'AUC: invalid summation_method "{summation_method}"; expected '
                             'one of ["interpolation", "majoring", "minoring"]')
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
            self.num_thresholds = len(inner) + 2
            self._evenly_given = _evenly_distributed(np.array([0.0] + inner + [1.0]))
        else:
            if num_thresholds <= 1:
                raise ValueError(f"AUC: num_thresholds must be an integer > 1, got "
                                 f"{num_thresholds}")
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._evenly_given = True
        eps = _losses.EPSILON
        all_thresholds = [0.0 - eps] + inner + [1.0 + eps]
        self.thresholds = all_thresholds
        self._evenly = self._evenly_given
        self._thresholds_tensor = None if self._evenly else convert_to_tensor(
            np.asarray(all_thresholds, self._dtype))
        self.curve = curve_name
        self.summation_method = method
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else convert_to_tensor(
            np.asarray(label_weights, self._dtype))
        self._label_weights_init = None if label_weights is None else \
            [float(v) for v in np.asarray(label_weights).reshape(-1)]
        self._from_logits = bool(from_logits)
        self._built = False
        if self.multi_label:
            if num_labels:
                self._build((None, num_labels))
        else:
            if num_labels:
                raise ValueError("AUC: num_labels is needed only when multi_label is True")
            self._build(None)

    def _build(self, shape):
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError(f"AUC: y_pred must have rank 2 when multi_label=True, got "
                                 f"shape {tuple(shape)}")
            self._num_labels = int(shape[1])
            vshape = (self.num_thresholds, self._num_labels)
        else:
            vshape = (self.num_thresholds,)
        self.true_positives = self.add_weight("true_positives", vshape)
        self.false_positives = self.add_weight("false_positives", vshape)
        self.true_negatives = self.add_weight("true_negatives", vshape)
        self.false_negatives = self.add_weight("false_negatives", vshape)
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_pred = _tensor(y_pred, "y_pred", self.name)
        if not self._built:
            self._build(tuple(y_pred.shape))
        if self._from_logits:
            from .ops.math import sigmoid
            y_pred = sigmoid(cast(y_pred, self._dtype))
        self._update({TRUE_POSITIVES: self.true_positives, TRUE_NEGATIVES: self.true_negatives,
                      FALSE_POSITIVES: self.false_positives,
                      FALSE_NEGATIVES: self.false_negatives}, y_true, y_pred, sample_weight,
                     multi_label=self.multi_label,
                     label_weights=None if self.multi_label else self.label_weights)

    def _by_label(self, terms):
        if not self.multi_label:
            return reduce_sum(terms)
        by_label = reduce_sum(terms, axis=0)
        if self.label_weights is None:
            return reduce_mean(by_label)
        from .math import divide_no_nan
        return divide_no_nan(reduce_sum(by_label * self.label_weights),
                             reduce_sum(self.label_weights))

    def interpolate_pr_auc(self) -> Tensor:
        """Davis & Goadrich's interpolation of the PR curve (Keras' ``interpolate_pr_auc``)."""
        from .math import divide_no_nan
        n = self.num_thresholds
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        prec_slope = divide_no_nan(dtp, maximum(dp, 0.0))
        intercept = tp[1:] - prec_slope * p[1:]
        safe_p_ratio = where(logical_and(greater(p[:n - 1], 0.0), greater(p[1:], 0.0)),
                             divide_no_nan(p[:n - 1], maximum(p[1:], 0.0)), ones_like(p[1:]))
        increment = divide_no_nan(prec_slope * (dtp + intercept * log(safe_p_ratio)),
                                  maximum(tp[1:] + fn[1:], 0.0))
        return self._by_label(increment)

    def result(self) -> Tensor:
        from .math import divide_no_nan
        if not self._built:
            return zeros_like(convert_to_tensor(np.float32(0.0)))
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self.interpolate_pr_auc()
        n = self.num_thresholds
        tp, fp, tn, fn = (self.true_positives, self.false_positives, self.true_negatives,
                          self.false_negatives)
        recall = divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, divide_no_nan(tp, tp + fp)
        else:
            scale = divide_no_nan(tp + fn, tn + fp)
            recall_gain = 1.0 - scale * divide_no_nan(fn, tp)
            precision_gain = 1.0 - scale * divide_no_nan(fp, tp)
            none = equal(tp, 0.0)
            recall_gain = maximum(where(none, zeros_like(tp), recall_gain), 0.0)
            precision_gain = where(none, ones_like(tp), precision_gain)
            x, y = recall_gain, precision_gain
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = minimum(y[:n - 1], y[1:])
        else:
            heights = maximum(y[:n - 1], y[1:])
        return self._by_label((x[:n - 1] - x[1:]) * heights)

    def reset_state(self) -> None:
        if self._built:
            super().reset_state()

    def get_config(self) -> dict:
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": self._label_weights_init, "from_logits": self._from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config


# --- IoU ----------------------------------------------------------------------------------------

class _IoUBase(Metric):
    """A running confusion matrix ``total_cm[true class, predicted class]``. With the
    default ``dtype`` Keras keeps it in integers, so float sample weights are truncated to
    whole numbers first; the matrix is held here in float32 with the same (whole) values."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name, dtype)
        self._int_weights = dtype is None
        self.num_classes = int(num_classes)
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_weight("total_confusion_matrix",
                                        (self.num_classes, self.num_classes))

    def _labels(self, y, sparse, what):
        y = _tensor(y, what, self.name)
        if not sparse:
            y = argmax(y, axis=self.axis)
        y = cast(y, np.int32)
        return reshape(y, (-1,)) if y.rank != 1 else y

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = self._labels(y_true, self.sparse_y_true, "y_true")
        y_pred = self._labels(y_pred, self.sparse_y_pred, "y_pred")
        if tuple(y_true.shape) != tuple(y_pred.shape):
            raise ValueError(f"{self.name}: {int(y_true.shape[0])} labels and "
                             f"{int(y_pred.shape[0])} predictions")
        if sample_weight is None:
            w = ones_like(y_true, dtype=self._dtype)
        else:
            w = _tensor(sample_weight, "sample_weight", self.name)
            w = cast(cast(w, np.int32), self._dtype) if self._int_weights else \
                cast(w, self._dtype)
            if w.rank > 1:
                w = reshape(w, (-1,))
            w = broadcast_to(w, y_true.shape)
        n = self.num_classes
        ok = logical_and(logical_and(greater_equal(y_true, 0), less(y_true, n)),
                         logical_and(greater_equal(y_pred, 0), less(y_pred, n)))
        if self.ignore_class is not None:
            ok = logical_and(ok, not_equal(y_true, int(self.ignore_class)))
        zero = zeros_like(y_true)
        ids = where(ok, y_true, zero) * n + where(ok, y_pred, zero)
        w = where(ok, w, zeros_like(w))
        self.total_cm.assign_add(reshape(unsorted_segment_sum(w, ids, n * n), (n, n)))

    def _iou(self):
        cm = self.total_cm
        sum_over_row = reduce_sum(cm, axis=0)
        sum_over_col = reduce_sum(cm, axis=1)
        tp = reduce_sum(cm * _eye_like(cm), axis=1)
        denominator = sum_over_row + sum_over_col - tp
        rows = self._target_rows
        if rows is not None:
            # the targets' entries, in the given order, through one-hot rows
            tp = reduce_sum(rows * tp, axis=-1)
            denominator = reduce_sum(rows * denominator, axis=-1)
        valid = greater(denominator, 1e-9)
        num_valid = reduce_sum(cast(valid, cm.dtype))
        iou = where(valid, tp / (denominator + _losses.EPSILON), zeros_like(tp))
        return reduce_sum(iou, axis=-1) / (num_valid + _losses.EPSILON)

    def get_config(self) -> dict:
        # dtype None: the default, whole-number weights (Keras' integer matrix)
        return {**super().get_config(), "dtype": None if self._int_weights else
                self._dtype.name, "num_classes": self.num_classes,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


def _eye_like(cm):
    """The identity of ``cm``'s (square) shape, made on its device."""
    n = int(cm.shape[0])
    idx = cumsum(ones_like(cm[0], dtype=np.int32)) - 1
    return one_hot(idx, n, dtype=cm.dtype)


class IoU(_IoUBase):
    """Intersection over union, ``tp / (tp + fp + fn)``, averaged over
    ``target_class_ids`` (classes never seen are left out of the mean)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis)
        target_class_ids = list(target_class_ids)
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"{type(self).__name__}: target class id "
                             f"{max(target_class_ids)} is out of range, which is "
                             f"[0, {num_classes})")
        self.target_class_ids = target_class_ids
        # one-hot rows picking the targets (made here, on the metric's device)
        self._target_rows = None if target_class_ids == list(range(num_classes)) else \
            one_hot(convert_to_tensor(np.asarray(target_class_ids, np.int32)), num_classes,
                    dtype=self._dtype)

    def result(self) -> Tensor:
        return self._iou()

    def get_config(self) -> dict:
        return {**super().get_config(), "target_class_ids": self.target_class_ids}


class BinaryIoU(IoU):
    """IoU of the two classes of a binary problem, ``y_pred >= threshold`` predicting 1."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_pred = cast(_tensor(y_pred, "y_pred", self.name), np.float32)
        super().update_state(y_true, cast(greater_equal(y_pred, self.threshold), np.int32),
                             sample_weight)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": None if self._int_weights else self._dtype.name,
                "target_class_ids": self.target_class_ids, "threshold": self.threshold}


class MeanIoU(IoU):
    """The mean IoU over all ``num_classes`` classes."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["target_class_ids"]
        return config


class OneHotIoU(IoU):
    """IoU for one-hot labels (and, by default, class scores as predictions)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["sparse_y_true"]
        return config


class OneHotMeanIoU(MeanIoU):
    """Mean IoU for one-hot labels (and, by default, class scores as predictions)."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["sparse_y_true"]
        return config


# --- F-scores -----------------------------------------------------------------------------------

class FBetaScore(Metric):
    """The F-beta score per class of 2-D multi-label (or one-hot) predictions: a prediction
    is positive above ``threshold`` (None: the row's maximum); ``average`` None (per
    class), ``"micro"``, ``"macro"`` or ``"weighted"``."""

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score",
                 dtype=None):
        super().__init__(name, dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"{type(self).__name__}: average must be one of None, 'micro', "
                             f"'macro', 'weighted', got {average!r}")
        if not isinstance(beta, float):
            raise ValueError(f"{type(self).__name__}: beta must be a Python float, got "
                             f"{beta!r} of type {type(beta).__name__}")
        if beta <= 0.0:
            raise ValueError(f"{type(self).__name__}: beta must be > 0, got {beta}")
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError(f"{type(self).__name__}: threshold must be a Python float, "
                                 f"got {threshold!r} of type {type(threshold).__name__}")
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError(f"{type(self).__name__}: threshold must verify "
                                 f"0 < threshold <= 1, got {threshold}")
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._built = False

    def _build(self, true_shape, pred_shape):
        if len(pred_shape) != 2 or len(true_shape) != 2:
            raise ValueError(f"{type(self).__name__} expects 2D inputs with shape "
                             f"(batch_size, output_dim), got y_pred.shape={tuple(pred_shape)} "
                             f"and y_true.shape={tuple(true_shape)}")
        shape = (int(pred_shape[-1]),) if self.average != "micro" else ()
        self.true_positives = self.add_weight("true_positives", shape)
        self.false_positives = self.add_weight("false_positives", shape)
        self.false_negatives = self.add_weight("false_negatives", shape)
        self.intermediate_weights = self.add_weight("intermediate_weights", shape)
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        y_true = cast(_tensor(y_true, "y_true", self.name), self._dtype)
        y_pred = cast(_tensor(y_pred, "y_pred", self.name), self._dtype)
        if not self._built:
            self._build(tuple(y_true.shape), tuple(y_pred.shape))
        if self.threshold is None:
            top = reduce_max(y_pred, axis=-1, keepdims=True)
            y_pred = logical_and(greater_equal(y_pred, top), greater(abs_(y_pred), 1e-9))
        else:
            y_pred = greater(y_pred, self.threshold)
        y_pred = cast(y_pred, self._dtype)
        w = None
        if sample_weight is not None:
            w = expand_dims(cast(_tensor(sample_weight, "sample_weight", self.name),
                                 self._dtype), 1)

        def weighted_sum(v):
            return reduce_sum(v if w is None else v * w, axis=self.axis)
        self.true_positives.assign_add(weighted_sum(y_pred * y_true))
        self.false_positives.assign_add(weighted_sum(y_pred * (1.0 - y_true)))
        self.false_negatives.assign_add(weighted_sum((1.0 - y_pred) * y_true))
        self.intermediate_weights.assign_add(weighted_sum(y_true))

    def result(self) -> Tensor:
        if not self._built:
            return convert_to_tensor(np.float32(0.0)) * 0.0
        eps = _losses.EPSILON
        tp = self.true_positives
        precision = tp / (tp + self.false_positives + eps)
        recall = tp / (tp + self.false_negatives + eps)
        b2 = self.beta ** 2
        f = precision * recall / (b2 * precision + recall + eps) * (1.0 + b2)
        if self.average == "weighted":
            weights = self.intermediate_weights / (reduce_sum(self.intermediate_weights) + eps)
            f = reduce_sum(f * weights)
        elif self.average is not None:
            f = reduce_mean(f)
        return f

    def reset_state(self) -> None:
        if self._built:
            super().reset_state()

    def get_config(self) -> dict:
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """The F1 score (F-beta with beta = 1)."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name,
                         dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config


# --- by name ------------------------------------------------------------------------------------

def _keras_snake(name):
    """Keras 3's ``to_snake_case`` (``MeanIoU`` -> ``mean_io_u``, ``AUC`` -> ``auc``)."""
    import re
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


_CLASSES = {cls.__name__: cls for cls in (
    Mean, Sum, MeanMetricWrapper, MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError,
    MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CosineSimilarity, LogCoshError,
    R2Score, AUC, FalseNegatives, FalsePositives, Precision, PrecisionAtRecall, Recall,
    RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity, TrueNegatives,
    TruePositives, Hinge, SquaredHinge, CategoricalHinge, KLDivergence, Poisson,
    BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, Accuracy,
    BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
    SparseTopKCategoricalAccuracy, F1Score, FBetaScore, IoU, BinaryIoU, MeanIoU, OneHotIoU,
    OneHotMeanIoU, PearsonCorrelation, ConcordanceCorrelation)}
#: Keras 3's ``ALL_OBJECTS_DICT``: class names, their snake_case forms, and a few aliases;
#: every entry is a class, so :func:`get` gives a new metric object.
_BY_NAME = dict(_CLASSES)
_BY_NAME.update({_keras_snake(name): cls for name, cls in _CLASSES.items()})
_BY_NAME.update({"bce": BinaryCrossentropy, "BCE": BinaryCrossentropy, "mse": MeanSquaredError,
                 "MSE": MeanSquaredError, "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
                 "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
                 "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError})

# the per-sample functions under their tf.keras.metrics names
mse = MSE = _losses.mean_squared_error
mae = MAE = _losses.mean_absolute_error
mape = MAPE = _losses.mean_absolute_percentage_error
msle = MSLE = _losses.mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = _losses.kl_divergence
logcosh = _losses.log_cosh
hinge = _losses.hinge
squared_hinge = _losses.squared_hinge
categorical_hinge = _losses.categorical_hinge
poisson = _losses.poisson
huber = _losses.huber
binary_crossentropy = _losses.binary_crossentropy
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy
binary_focal_crossentropy = _losses.binary_focal_crossentropy
categorical_focal_crossentropy = _losses.categorical_focal_crossentropy


def get(identifier):
    """As Keras 3's ``keras.metrics.get``: a name (``"AUC"``, ``"auc"``, ``"accuracy"``,
    ``"mse"``, ``"f1_score"`` ...) gives a new metric object of that class; a config dict
    is deserialized; a metric or a callable is returned as it is."""
    if identifier is None:
        return None
    if isinstance(identifier, Metric) or callable(identifier) and \
            not isinstance(identifier, type):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is not None:
            return cls()
        raise ValueError(f"metrics.get: unknown metric {identifier!r} (known: "
                         f"{', '.join(sorted(_BY_NAME))})")
    raise TypeError(f"metrics.get: expected a metric name or a Metric, got "
                    f"{type(identifier).__name__}")


def serialize(metric) -> dict:
    from ._config import serialize as _serialize
    return _serialize(metric)


def deserialize(config: dict) -> Metric:
    from ._config import deserialize as _deserialize
    return _deserialize(config, _CLASSES, "metric", sorted(_CLASSES), fold_case=False)
