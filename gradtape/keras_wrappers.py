"""``keras.wrappers``: scikit-learn estimators around Keras models (``SKLearnClassifier``,
``SKLearnRegressor``, ``SKLearnTransformer``), as Keras 3's.

Each takes ``model``: a compiled :class:`~gradtape.keras.Model` (cloned, with fresh weights,
for each ``fit`` unless ``warm_start``) or a callable ``model(X=..., y=..., **model_kwargs)``
that builds and compiles one from the training data. ``fit_kwargs`` go to ``Model.fit``
(``fit``'s own keyword arguments take precedence). With ``warm_start=True`` a second ``fit``
goes on training the fitted model. The classifier one-hot encodes its targets (binary and
multiclass ones) and maps the model's outputs back to the labels of ``classes_``; the
regressor gives 2-D targets back 2-D and 1-D ones 1-D; the transformer's ``transform`` is
the fitted model's ``predict``. They need scikit-learn (``pip install scikit-learn``).
"""
from __future__ import annotations

import copy

import numpy as np

try:
    import sklearn
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
except ImportError:                                   # the classes still import; using one
    sklearn = None                                    # says what to install

    class BaseEstimator:                              # noqa: D101
        pass

    class ClassifierMixin:                            # noqa: D101
        pass

    class RegressorMixin:                             # noqa: D101
        pass

    class TransformerMixin:                           # noqa: D101
        pass

__all__ = ["SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer"]


def _need_sklearn(who):
    if sklearn is None:
        raise ImportError(f"{who} requires `scikit-learn` to be installed. Run "
                          "`pip install scikit-learn` to install it.")


def _validate(estimator, *args, **kwargs):
    try:
        from sklearn.utils.validation import validate_data
    except ImportError:                               # scikit-learn < 1.6
        return estimator._validate_data(*args, **kwargs)
    return validate_data(estimator, *args, **kwargs)


def _target_type(y):
    from sklearn.utils.multiclass import type_of_target
    kind = type_of_target(y)
    if kind == "unknown":
        raise ValueError(f"Unknown label type for data: {y!r}")
    return kind


class _TargetReshaper(TransformerMixin, BaseEstimator):
    """1-D targets as a column, and back."""

    def fit(self, y):
        self.ndim_ = np.ndim(y)
        return self

    def transform(self, y):
        y = np.asarray(y)
        return y.reshape(-1, 1) if y.ndim == 1 else y

    def inverse_transform(self, y):
        y = np.asarray(y)
        return np.squeeze(y, axis=1) if self.ndim_ == 1 and y.ndim == 2 and \
            y.shape[1] == 1 else y


class SKLBase(BaseEstimator):
    """What the three wrappers share: ``fit``, ``predict`` and scikit-learn's protocol."""

    def __init__(self, model, warm_start=False, model_kwargs=None, fit_kwargs=None):
        _need_sklearn(type(self).__name__)
        self.model = model
        self.warm_start = warm_start
        self.model_kwargs = model_kwargs
        self.fit_kwargs = fit_kwargs

    def __sklearn_clone__(self):
        model = self.model if callable(self.model) and not _is_model(self.model) \
            else copy.deepcopy(self.model)
        return type(self)(model=model, warm_start=self.warm_start,
                          model_kwargs=self.model_kwargs, fit_kwargs=self.fit_kwargs)

    def _more_tags(self):                       # (scikit-learn < 1.6)
        return {"non_deterministic": True}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    @property
    def epoch_(self):
        """Epochs the last ``fit`` ran."""
        history = getattr(self, "history_", None)
        return len(history.epoch) if history is not None else 0

    def _get_model(self, X, y):
        if self.warm_start and hasattr(self, "model_"):
            return self.model_
        if _is_model(self.model):
            from .saving import clone_model
            fresh = clone_model(self.model)
            if self.model.compiled:
                fresh.compile(optimizer=type(self.model.optimizer).from_config(
                    self.model.optimizer.get_config()), loss=self.model.loss)
            return fresh
        if not callable(self.model):
            raise TypeError(f"{type(self).__name__}: model must be a compiled keras Model or "
                            f"a callable building one, got {type(self.model).__name__}")
        return self.model(X=X, y=y, **(self.model_kwargs or {}))

    def fit(self, X, y, **kwargs):
        """Validate ``X`` and ``y``, build (or clone) the model and train it; returns self."""
        X, y = _validate(self, X, y, multi_output=True)
        y = self._process_target(y, reset=True)
        model = self._get_model(X, y)
        if not _is_model(model) or not model.compiled or not model.loss or \
                not model.optimizer:
            raise RuntimeError("Given model needs to be compiled, and have a loss and an "
                               "optimizer.")
        fit_kwargs = {**(self.fit_kwargs or {}), **kwargs}
        fit_kwargs.setdefault("verbose", 0)
        self.history_ = model.fit(X, y, **fit_kwargs)
        self.model_ = model
        return self

    def predict(self, X):
        """The model's predictions for ``X``, in the targets' form."""
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        return self._reverse_process_target(_host(self.model_.predict(X, verbose=0)))

    def _process_target(self, y, reset=False):
        _target_type(y)
        if reset:
            self._target_encoder = _TargetReshaper().fit(y)
        return self._target_encoder.transform(y)

    def _reverse_process_target(self, y):
        return self._target_encoder.inverse_transform(y)


def _is_model(obj):
    from .layers import Model
    return isinstance(obj, Model)


def _host(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


class SKLearnClassifier(ClassifierMixin, SKLBase):
    """A scikit-learn classifier: targets (binary or multiclass labels of any type) are one-hot
    encoded for the model, whose outputs map back to labels of ``classes_`` by their largest
    entry; ``predict_proba`` is the model's output and ``decision_function`` its raw output."""

    def _process_target(self, y, reset=False):
        kind = _target_type(y)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"Only binary and multiclass target types are supported. Target "
                             f"type: {kind}")
        if reset:
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import OneHotEncoder
            self._target_encoder = make_pipeline(
                _TargetReshaper(), OneHotEncoder(sparse_output=False)).fit(y)
            self.classes_ = np.unique(y)
            if len(self.classes_) == 1:
                raise ValueError("Classifier can't train when only one class is present.")
        return self._target_encoder.transform(y)

    def _reverse_process_target(self, y):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == len(self.classes_):
            return self.classes_[np.argmax(y, axis=1)]
        return self._target_encoder.inverse_transform(y)

    def predict_proba(self, X):
        """The model's output for ``X`` (one column per class of ``classes_``)."""
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        return _host(self.model_.predict(X, verbose=0))

    def decision_function(self, X):
        """The model's raw output for ``X``."""
        return self.predict_proba(X)

    def _more_tags(self):
        return {"non_deterministic": True, "poor_score": True}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags


class SKLearnRegressor(RegressorMixin, SKLBase):
    """A scikit-learn regressor: ``predict`` gives 1-D targets back 1-D."""

    def _more_tags(self):
        return {"non_deterministic": True, "poor_score": True}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class SKLearnTransformer(TransformerMixin, SKLBase):
    """A scikit-learn transformer: ``fit(X, y)`` trains the model, ``transform(X)`` is its
    ``predict`` (an encoder in a pipeline, say)."""

    def transform(self, X):
        """The fitted model's output for ``X``."""
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        return _host(self.model_.predict(X, verbose=0))

    def _more_tags(self):
        return {"non_deterministic": True, "preserves_dtype": []}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags
