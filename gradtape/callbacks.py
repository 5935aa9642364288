"""Keras' training callbacks (``tf.keras.callbacks``) for ``Model.fit``, ``evaluate`` and
``predict``.

    early = gt.keras.callbacks.EarlyStopping(monitor="val_loss", patience=3,
                                             restore_best_weights=True)
    history = model.fit(x, y, epochs=50, validation_split=0.2, callbacks=[early])

As in Keras 3, the callbacks run in the order given, then ``History``, then the progress bar;
every hook gets its ``logs`` as a new dict with the keys sorted (``{"accuracy": ..., "loss":
..., "val_accuracy": ..., "val_loss": ...}``), shared by the callbacks of that call (so a value
one of them adds, such as ``learning_rate``, reaches the ones after it and ``History``).
Epoch-level values are Python floats. Batch-level ``logs`` hold the metrics' current values
as tensors for the built-in callbacks (reading them would wait for the device every step); a
user callback that defines a batch hook gets Python floats, as in Keras.
"""
from __future__ import annotations

import csv
import json
import math
import os
import shutil
import sys
import time
import warnings

import numpy as np

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "LearningRateScheduler", "ReduceLROnPlateau", "TerminateOnNaN",
           "LambdaCallback", "CSVLogger", "TensorBoard", "BackupAndRestore", "SwapEMAWeights",
           "RemoteMonitor"]

_BATCH_HOOKS = ("on_batch_begin", "on_batch_end", "on_train_batch_begin", "on_train_batch_end",
                "on_test_batch_begin", "on_test_batch_end", "on_predict_batch_begin",
                "on_predict_batch_end")


def _floats(logs):
    """``logs`` with every tensor or NumPy scalar as a Python float."""
    out = {}
    for k, v in (logs or {}).items():
        if hasattr(v, "numpy"):
            v = v.numpy()
        if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def _pythonify(logs):
    """Keras 3's ``pythonify_logs``: a new dict of ``logs`` with the keys sorted, a nested
    dict's entries in its place, and every value that ``float`` takes as a Python float
    (others, such as a list or an array of several values, as they are)."""
    out = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            out.update(_pythonify(value))
            continue
        if hasattr(value, "numpy"):
            value = value.numpy()
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            try:
                value = float(value)
            except (TypeError, ValueError):
                pass
        out[key] = value
    return out


class Callback:
    """Base class: override the hooks you need. ``self.model`` and ``self.params``
    (``epochs``, ``steps``, ``verbose``) are set before training starts."""

    #: Built-in callbacks take batch logs as tensors (no host wait per step).
    _tensor_logs = False

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass

    def _uses_batch_hooks(self):
        cls = type(self)
        return any(getattr(cls, h) is not getattr(Callback, h) for h in _BATCH_HOOKS)


class CallbackList:
    """The callbacks of one ``fit``/``evaluate``/``predict``, called in order: those given,
    then ``History`` and the ``ProgbarLogger`` when they are added (Keras 3's order)."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks: expected gt.keras.callbacks.Callback objects, got "
                                f"{type(cb).__name__}")
        history = next((c for c in self.callbacks if isinstance(c, History)), None)
        if history is None and add_history:
            history = History()
            self.callbacks.append(history)
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if history is not None and model is not None:
            model.history = history
        self.model = model
        self.params = params
        for cb in self.callbacks:
            if model is not None:
                cb.set_model(model)
            cb.set_params(params)
        batch_users = [c for c in self.callbacks if c._uses_batch_hooks()]
        self._batch = bool(batch_users)
        self._float_batch = any(not c._tensor_logs for c in batch_users)

    def _call(self, hook, *args):
        logs = _pythonify(args[-1])
        for cb in self.callbacks:
            getattr(cb, hook)(*args[:-1], logs)

    def _batch_call(self, hook, batch, logs):
        if not self._batch:
            return
        logs = logs if logs is not None else {}
        floats = _pythonify(logs) if self._float_batch else None
        for cb in self.callbacks:
            getattr(cb, hook)(batch, logs if cb._tensor_logs else floats)

    def on_train_begin(self, logs=None): self._call("on_train_begin", logs)
    def on_train_end(self, logs=None): self._call("on_train_end", logs)
    def on_epoch_begin(self, epoch, logs=None): self._call("on_epoch_begin", epoch, logs)
    def on_epoch_end(self, epoch, logs=None): self._call("on_epoch_end", epoch, logs)
    def on_test_begin(self, logs=None): self._call("on_test_begin", logs)
    def on_test_end(self, logs=None): self._call("on_test_end", logs)
    def on_predict_begin(self, logs=None): self._call("on_predict_begin", logs)
    def on_predict_end(self, logs=None): self._call("on_predict_end", logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._batch_call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._batch_call("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._batch_call("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._batch_call("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._batch_call("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._batch_call("on_predict_batch_end", batch, logs)


class History(Callback):
    """Records every epoch's logs: ``history.history["loss"]`` is the list of epoch losses;
    ``fit`` returns this object. As Keras 3, a History given to several ``fit`` calls keeps
    adding to ``history`` (``epoch`` restarts with each call)."""

    _tensor_logs = True

    def __init__(self):
        super().__init__()
        self.epoch = []
        self.history = {}

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


def _fmt(value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{v:.4f}" if 1e-3 <= abs(v) < 1e4 or v == 0 else f"{v:.4e}"


def _print_msg(message, stream=None):
    from .keras_utils import print_msg
    print_msg(message, stream=stream)


class ProgbarLogger(Callback):
    """Keras' progress display: ``verbose=1`` a bar per epoch (redrawn at most 10 times a
    second on a terminal; the final line elsewhere), ``verbose=2`` one line per epoch. The
    ``Epoch i/n`` line is printed when ``fit`` runs more than one epoch (Keras 3); the values
    are shown in the order they first appeared in the (sorted) logs of the bar, so a value
    a callback adds at the epoch end (``learning_rate``) comes last. With interactive logging
    off (``keras.utils.disable_interactive_logging``) the lines are INFO records of the
    ``gradtape`` logger instead."""

    _tensor_logs = True

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream
        self._mode = "train"

    def _out(self):
        return self.stream if self.stream is not None else sys.stdout

    def _verbose(self):
        v = self.params.get("verbose", 1)
        return 1 if v == "auto" else v

    def on_train_begin(self, logs=None):
        self._mode = "train"

    def on_epoch_begin(self, epoch, logs=None):
        epochs = self.params.get("epochs", 1)
        if self._verbose() and epochs > 1:
            _print_msg(f"Epoch {epoch + 1}/{epochs}", stream=self._out())
        self._reset()

    def _reset(self):
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._seen = 0
        self._order = []

    def on_test_begin(self, logs=None):
        if self.model is not None and getattr(self.model, "_fitting", False):
            return                           # validation inside fit: no bar of its own
        self._mode = "test"
        self._reset()

    def on_predict_begin(self, logs=None):
        self._mode = "predict"
        self._reset()

    def _interactive(self):
        from .keras_utils import is_interactive_logging_enabled
        if not is_interactive_logging_enabled():
            return False                    # lines go to the logger: no redrawing
        out = self._out()
        return hasattr(out, "isatty") and out.isatty()

    def _line(self, seen, logs, final):
        steps = self.params.get("steps")
        elapsed = time.perf_counter() - self._start
        if final and self._verbose() == 2:
            head = f"{seen}/{steps}" if steps else f"{seen}"
        elif steps:
            width = 30
            done = int(width * min(seen, steps) / steps)
            bar = "=" * max(done - 1, 0) + (">" if done < width else "=") + "." * (width - done)
            head = f"{seen}/{steps} [{bar}]"
        else:
            head = f"{seen}/Unknown"
        per = elapsed / max(seen, 1)
        unit = f"{per * 1e3:.0f}ms/step" if per >= 1e-3 else f"{per * 1e6:.0f}us/step"
        parts = [head, f"{elapsed:.0f}s {unit}"]
        logs = logs or {}
        keys = logs if final else sorted(logs)      # (batch logs come unsorted)
        self._order += [k for k in keys if k not in self._order]
        parts += [f"{k}: {_fmt(logs[k])}" for k in self._order if k in logs]
        return " - ".join(parts)

    def _batch_end(self, batch, logs):
        v = self._verbose()
        self._seen = batch + 1
        if v != 1 or not self._interactive():
            return
        now = time.perf_counter()
        if now - self._last_draw < 0.1:
            return
        self._last_draw = now
        self._out().write("\r" + self._line(self._seen, logs, False))
        self._out().flush()

    def on_train_batch_end(self, batch, logs=None):
        self._batch_end(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if self._mode == "test":
            self._batch_end(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._batch_end(batch, logs)

    def _finish(self, logs):
        v = self._verbose()
        if not v:
            return
        line = self._line(self._seen, logs, True)
        if v == 1 and self._interactive():
            line = "\r" + line
        _print_msg(line, stream=self._out())

    def on_epoch_end(self, epoch, logs=None):
        self._finish(logs)

    def on_test_end(self, logs=None):
        if self._mode == "test":
            self._finish(logs)

    def on_predict_end(self, logs=None):
        self._finish({})


# --- monitoring a metric ----------------------------------------------------------------------

#: Keras 3's ``_direction`` of its metric classes: "up" for a score, "down" for an error.
_METRIC_DIRECTIONS = {
    **dict.fromkeys(
        ("Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
         "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "Precision", "Recall",
         "SensitivityAtSpecificity", "SpecificityAtSensitivity", "PrecisionAtRecall",
         "RecallAtPrecision", "AUC", "PearsonCorrelation", "ConcordanceCorrelation",
         "FBetaScore", "F1Score", "IoU", "BinaryIoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU",
         "CosineSimilarity", "R2Score"), "up"),
    **dict.fromkeys(
        ("Hinge", "SquaredHinge", "CategoricalHinge", "BinaryCrossentropy",
         "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "MeanSquaredError",
         "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
         "RootMeanSquaredError", "LogCoshError", "KLDivergence", "Poisson"), "down"),
}

#: The per-sample functions of the accuracy metrics (what ``metrics=["accuracy"]`` wraps).
_ACCURACY_FUNCTIONS = frozenset({
    "accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"})


def _metric_direction(metric):
    """``"up"``, ``"down"`` or None: whether ``metric`` improves as it grows, as Keras 3 reads
    a metric's ``_direction`` (a metric class of your own may set it)."""
    from . import losses
    direction = getattr(metric, "_direction", None)
    if direction in ("up", "down"):
        return direction
    for cls in type(metric).__mro__:
        found = _METRIC_DIRECTIONS.get(cls.__name__)
        if found is not None and cls.__module__.startswith("gradtape."):
            return found
    fn = getattr(metric, "_fn", None)
    if fn is None:
        return None
    if getattr(fn, "__module__", "") == "gradtape.metrics" and \
            getattr(fn, "__name__", None) in _ACCURACY_FUNCTIONS:
        return "up"
    if isinstance(fn, losses.Loss) or getattr(fn, "__module__", "") == "gradtape.losses":
        return "down"        # a metric wrapping a loss, as Keras marks it
    return None


class _MonitorCallback(Callback):
    """Keras 3's ``MonitorCallback``: watches ``monitor`` in the epoch logs. With
    ``mode="auto"`` the direction is found at the first epoch end: ``loss`` and ``val_loss``
    go down, a compiled metric goes the way its class does (an accuracy, AUC, precision...
    up; an error down); another name raises ``ValueError`` (give ``mode``)."""

    _tensor_logs = True

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        who = type(self).__name__
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}")
        self.monitor = monitor
        self.mode = mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op = None

    def _set_monitor_op(self):
        if self.mode == "min":
            self.monitor_op = np.less
        elif self.mode == "max":
            self.monitor_op = np.greater
        else:
            name = self.monitor.removeprefix("val_")
            if name == "loss":
                self.monitor_op = np.less
            for metric in getattr(self.model, "metrics", None) or []:
                if metric.name == name:
                    direction = _metric_direction(metric)
                    if direction is not None:
                        self.monitor_op = np.greater if direction == "up" else np.less
            if self.monitor_op is None:
                raise ValueError(
                    f"{type(self).__name__} callback received monitor={self.monitor}, but "
                    "Keras isn't able to automatically determine whether that metric should "
                    "be maximized or minimized. Pass `mode='max'` in order to monitor based "
                    "on the highest metric value, or pass `mode='min'` in order to use the "
                    "lowest value.")
        if self.monitor_op is np.less:
            self.min_delta *= -1

    def _is_improvement(self, monitor_value, reference_value):
        if reference_value is None:
            return True
        if self.monitor_op is None:
            self._set_monitor_op()
        # (Keras compares the two as float32 tensors)
        return bool(self.monitor_op(np.float32(monitor_value - self.min_delta),
                                    np.float32(reference_value)))


class EarlyStopping(_MonitorCallback):
    """Stop training when ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` epochs (counting from ``start_from_epoch``; an epoch that does not beat
    ``baseline`` is no improvement). ``restore_best_weights`` puts back the best epoch's
    weights when training ends, stopped early or not (as Keras 3)."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.best_weights = None
        self.start_from_epoch = start_from_epoch

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            _print_msg(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                _print_msg(f"Restoring model weights from the end of the best epoch: "
                           f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs)}",
                          stacklevel=2)
            return None
        return float(value) if np.ndim(value) == 0 else value


def _save_due_on_batch(callback, batch):
    """Keras' count of the batches since the last save (an int ``save_freq``): whether
    ``batch`` makes a save due (ModelCheckpoint's and BackupAndRestore's)."""
    if callback.save_freq == "epoch":
        return False
    last = callback._last_batch_seen
    added = batch + 1 if last is None or batch <= last else batch - last   # (a new epoch)
    callback._batches_seen_since_last_saving += added
    callback._last_batch_seen = batch
    if callback._batches_seen_since_last_saving >= callback.save_freq:
        callback._batches_seen_since_last_saving = 0
        return True
    return False


class ModelCheckpoint(_MonitorCallback):
    """Save the model (or only its weights) after each epoch, or every ``save_freq``
    batches; ``filepath`` may hold ``{epoch}``, ``{batch}`` (with an int ``save_freq``) and
    log keys (``"w-{epoch:02d}-{val_loss:.2f}.weights.h5"``); ``save_best_only`` keeps only
    improvements of ``monitor`` over the best so far (or ``initial_value_threshold``);
    ``save_weights_only=False`` (the default) writes the whole model with ``model.save``.
    The files hold gradtape's formats (a zip of JSON and safetensors, or safetensors) under
    the names given."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__(monitor, mode, initial_value_threshold)
        self.verbose = verbose
        self.filepath = os.fspath(filepath)
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = None
        self._current_epoch = 0
        if save_freq != "epoch" and (isinstance(save_freq, bool)
                                     or not isinstance(save_freq, (int, np.integer))):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are "
                             "'epoch' or integer values")

    def on_train_begin(self, logs=None):
        if not self.save_weights_only:
            from .saving import check_saveable
            check_saveable(self.model)        # fail now, not after the first epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(epoch=self._current_epoch, batch=batch, logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        if self.save_freq == "epoch":
            self._save_model(epoch=epoch, batch=None, logs=logs)

    _should_save_on_batch = _save_due_on_batch

    def _should_save_model(self, epoch, logs, filepath):
        if not self.save_best_only:
            if self.verbose > 0:
                _print_msg(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.",
                          stacklevel=3)
            return True
        if np.ndim(current) > 0:
            warnings.warn(f"Can save best model only when `monitor` is a scalar value. "
                          f"Received: {current}. Falling back to `save_best_only=False`.",
                          stacklevel=3)
            return True
        current = float(current)
        best_str = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                _print_msg(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best_str} to "
                           f"{current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            _print_msg(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best_str}")
        return False

    def _save_model(self, epoch, batch, logs):
        logs = _floats(logs)
        filepath = self._get_file_path(epoch, batch, logs)
        try:
            if self._should_save_model(epoch, logs, filepath):
                folder = os.path.dirname(filepath)
                if folder:
                    os.makedirs(folder, exist_ok=True)
                if self.save_weights_only:
                    self.model.save_weights(filepath, overwrite=True)
                else:
                    self.model.save(filepath, overwrite=True)
                if self.verbose > 0:
                    _print_msg(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")
        except IsADirectoryError:
            raise OSError(f"Please specify a non-directory filepath for ModelCheckpoint. "
                          f"Filepath used is an existing directory: {filepath}") from None

    def _get_file_path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as exc:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {exc} (the logs have: {', '.join(logs)})") from None


def _get_lr(model, who):
    opt = getattr(model, "optimizer", None)
    if opt is None:
        raise ValueError(f"{who}: the model has no optimizer (compile it first)")
    raw = opt._learning_rate
    if callable(raw) and not hasattr(raw, "numpy"):
        raise ValueError(f"{who}: the optimizer's learning rate is a schedule; a callback "
                         "cannot also set it")
    lr = opt.learning_rate
    if hasattr(lr, "numpy"):
        return float(lr.numpy())
    return float(lr)


def _set_lr(model, value):
    opt = model.optimizer
    lr = opt.learning_rate
    if hasattr(lr, "assign"):
        lr.assign(value)
    else:
        opt.learning_rate = float(value)


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of each epoch to ``schedule(epoch, lr)`` (or
    ``schedule(epoch)``), which must return a float (a Python, ``np.float32`` or
    ``np.float64`` float, as Keras 3 requires); each epoch's rate is logged as
    ``learning_rate``."""

    _tensor_logs = True

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        try:
            lr = _get_lr(self.model, "LearningRateScheduler")
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        if not isinstance(new, (float, np.float32, np.float64)):
            raise ValueError(f"The output of the `schedule` function should be a float. "
                             f"Got: {new}")
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: the schedule gave {new} for epoch "
                             f"{epoch}")
        _set_lr(self.model, new)
        if self.verbose > 0:
            _print_msg(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                       f"{new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _get_lr(self.model, "LearningRateScheduler")


class ReduceLROnPlateau(_MonitorCallback):
    """Multiply the learning rate by ``factor`` when ``monitor`` has not improved by more
    than ``min_delta`` for ``patience`` epochs (then wait ``cooldown`` epochs), never below
    ``min_lr``; each epoch's rate is logged as ``learning_rate``."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        super().__init__(monitor, mode, min_delta=min_delta)
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received "
                             f"factor={factor}")
        self.factor = factor
        self.min_lr = min_lr
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0

    def _reset(self):
        self.best = None
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs if logs is not None else {}
        logs["learning_rate"] = _get_lr(self.model, "ReduceLROnPlateau")
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` "
                          f"which is not available. Available metrics are: {','.join(logs)}.",
                          stacklevel=2)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old = _get_lr(self.model, "ReduceLROnPlateau")
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    _set_lr(self.model, new)
                    if self.verbose > 0:
                        _print_msg(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                                   f"to {new}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class TerminateOnNaN(Callback):
    """Stop training at the first batch whose loss is NaN or infinite (reads the loss every
    batch: one device wait per step); with ``raise_error=True`` raise ``RuntimeError``
    there instead."""

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            if self.raise_error:
                raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: "
                                   f"{loss}. Terminating training immediately.")
            _print_msg(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: ``on_epoch_end=lambda epoch, logs: ...`` and the other
    hooks by name (Keras 3's arguments, in its order; ``on_batch_begin``/``on_batch_end``
    and the test and predict hooks by keyword)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in hooks.items():
            if fn is None:
                continue
            if not hasattr(Callback, name) or not name.startswith("on_"):
                raise TypeError(f"LambdaCallback: unknown hook {name!r}")
            setattr(self, name, fn)

    def _uses_batch_hooks(self):
        return any(name in self.__dict__ for name in _BATCH_HOOKS)


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file: ``epoch``, then the sorted keys of
    the first epoch's logs (and their ``val_`` columns when it had none, ``NA`` until
    validation runs); ``append`` keeps the earlier rows (and writes no second header)."""

    _tensor_logs = True

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    @property
    def separator(self):
        return self.sep

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = _floats(logs)

        def handle_value(k):
            is_zero_dim = isinstance(k, np.ndarray) and k.ndim == 0
            if isinstance(k, str):
                return k
            if hasattr(k, "__iter__") and not is_zero_dim:
                return f"\"[{', '.join(map(str, k))}]\""
            return k

        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys.extend([f"val_{k}" for k in self.keys])
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         delimiter=self.sep)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


class RemoteMonitor(Callback):
    """POST each epoch's logs (with ``epoch``) to a server: to ``root + path`` as the form
    field ``field`` holding the JSON text, or as a JSON body with ``send_as_json``. A server
    that cannot be reached gives a warning, not an error."""

    _tensor_logs = True

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False):
        super().__init__()
        self.root = root
        self.path = path
        self.field = field
        self.headers = headers
        self.send_as_json = send_as_json

    def on_epoch_end(self, epoch, logs=None):
        import urllib.error
        import urllib.parse
        import urllib.request
        send = {"epoch": epoch}
        for k, v in _floats(logs).items():
            send[k] = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        headers = dict(self.headers or {})
        if self.send_as_json:
            data = json.dumps(send).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            data = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(self.root + self.path, data=data, headers=headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError):
            warnings.warn(f"Could not reach RemoteMonitor root server at {self.root}",
                          stacklevel=2)


class BackupAndRestore(Callback):
    """Back up the training state in ``backup_dir`` and resume an interrupted ``fit``
    from it, as Keras 3's callback.

    At each epoch end (or every ``save_freq`` batches when it is an int) the model's
    weights and its compiled optimizer's state (step count, learning rate, every slot) are
    written to ``backup_dir/latest.weights.h5`` (gradtape's safetensors format, under
    Keras' name) and the number of finished epochs to ``training_metadata.json``. A new
    ``fit`` with this callback restores them first and starts at the epoch the backup was
    taken in: a backup taken mid-epoch restarts that epoch from its first batch, with the
    weights of the backup (as Keras does). ``double_checkpoint`` keeps the previous backup
    as ``*.bkp`` and falls back to it when the latest cannot be read;
    ``delete_checkpoint`` removes ``backup_dir`` when training completes.

    The model must be built when ``fit`` starts if there is a backup to restore (give the
    first layer an ``Input``, or call it once)."""

    _tensor_logs = True

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__()
        self.save_freq = save_freq
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = 0
        self._current_epoch = 0
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        self.backup_dir = os.fspath(backup_dir)
        self._weights_path = os.path.join(self.backup_dir, "latest.weights.h5")
        self._training_metadata_path = os.path.join(self.backup_dir,
                                                    "training_metadata.json")
        self._prev_weights_path = f"{self._weights_path}.bkp"
        self._prev_training_metadata_path = f"{self._training_metadata_path}.bkp"
        if save_freq != "epoch" and (isinstance(save_freq, bool)
                                     or not isinstance(save_freq, (int, np.integer))):
            raise ValueError(f"Invalid value for argument `save_freq`. Received: "
                             f"save_freq={save_freq}. Expected either 'epoch' or an integer "
                             "value.")

    def on_train_begin(self, logs=None):
        from .checkpoint import CheckpointError
        try:
            self._load_model()
        except (OSError, CheckpointError) as exc:
            # the latest backup cannot be read: the previous one, if there is one
            if not os.path.exists(self._prev_weights_path):
                raise exc
            shutil.copyfile(self._prev_weights_path, self._weights_path)
            if os.path.exists(self._prev_training_metadata_path):
                shutil.copyfile(self._prev_training_metadata_path,
                                self._training_metadata_path)
            elif os.path.exists(self._training_metadata_path):
                os.remove(self._training_metadata_path)
            self._load_model()

    def _load_model(self):
        from .saving import read_training_state
        if os.path.exists(self._weights_path):
            if not getattr(self.model, "built", True) or not self.model.variables:
                raise ValueError(
                    f"To use the BackupAndRestore callback, your model must be built before "
                    f"you call `fit()`. Model {self.model.name!r} is unbuilt. You can build "
                    "it beforehand by calling it on a batch of data.")
            read_training_state(self.model, self._weights_path)
        if os.path.exists(self._training_metadata_path):
            with open(self._training_metadata_path) as f:
                metadata = json.loads(f.read())
            self.model._initial_epoch = metadata["epoch"]

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save_model()

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model()

    def _save_model(self):
        from .saving import write_training_state
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint and os.path.exists(self._weights_path):
            shutil.copyfile(self._weights_path, self._prev_weights_path)
        if self.double_checkpoint and os.path.exists(self._training_metadata_path):
            shutil.copyfile(self._training_metadata_path, self._prev_training_metadata_path)
        write_training_state(self.model, self._weights_path)
        with open(self._training_metadata_path, "w") as f:
            f.write(json.dumps({"epoch": self._current_epoch, "batch": self._last_batch_seen}))

    _should_save_on_batch = _save_due_on_batch

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.exists(self.backup_dir):
            shutil.rmtree(self.backup_dir)


class SwapEMAWeights(Callback):
    """Evaluate with the optimizer's exponential moving averages of the weights (an
    optimizer made with ``use_ema=True``), as Keras 3: the model's trainable weights and
    their averages are swapped in place at the start of every evaluation (and ``predict``)
    and swapped back at its end, so the validation of ``fit`` sees the averaged weights.
    With ``swap_on_epoch=True`` they are also swapped at each epoch end and back at the next
    epoch's start, so that callbacks after this one (``ModelCheckpoint``) see the averages;
    after the last epoch the averages stay in the model."""

    _tensor_logs = True

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = swap_on_epoch
        self._ema_weights_in_model = False

    def _ema_optimizers(self):
        opt = self.model.optimizer
        opt = getattr(opt, "inner_optimizer", opt)
        if not getattr(opt, "use_ema", False):
            raise ValueError(f"SwapEMAWeights must be used when `use_ema=True` is set on the "
                             f"optimizer. Received: use_ema={getattr(opt, 'use_ema', False)}")
        return opt

    def _pairs(self, opt):
        """``(variable, its moving average)`` for every variable the optimizer averages."""
        pairs = []
        for vid in list(opt._slot_order):
            slots = opt._slots.get(vid)
            owner = opt._slot_owners.get(vid)
            var = owner() if owner is not None else None
            if var is not None and slots and "average" in slots:
                pairs.append((var, slots["average"]))
        return pairs

    def _swap_variables(self):
        for var, average in self._pairs(self._ema_optimizers()):
            dev = var._device
            with dev.activate():
                xp = dev.xp
                current = xp.copy(var._value)
                var._set(xp.copy(average._value))
                average._set(current)

    def _finalize_ema_values(self):
        for var, average in self._pairs(self._ema_optimizers()):
            dev = var._device
            with dev.activate():
                average._set(dev.xp.copy(var._value))

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = False

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._ema_weights_in_model:
            self._swap_variables()
            self._ema_weights_in_model = True
            if epoch == self.params["epochs"] - 1:
                self._finalize_ema_values()

    def _use_ema(self, on):
        """Put the moving averages in the model (``on``) or the trained weights back."""
        if self._ema_weights_in_model != on:
            self._swap_variables()
            self._ema_weights_in_model = on

    def on_test_begin(self, logs=None):
        self._use_ema(True)

    def on_test_end(self, logs=None):
        self._use_ema(False)

    def on_predict_begin(self, logs=None):
        self._use_ema(True)

    def on_predict_end(self, logs=None):
        self._use_ema(False)


def _weight_tag(weight):
    """Keras 3's ``weight.path`` (``"dense/kernel"``): the variable's name without its
    ``:0``."""
    path = getattr(weight, "path", None)
    if not path:
        name = weight.name
        head, sep, tail = name.rpartition(":")
        path = head if sep and tail.isdigit() else name
    return path.replace(":", "_")


class TensorBoard(Callback):
    """Write TensorBoard event files during ``fit`` and ``evaluate``, as Keras'
    ``TensorBoard`` callback, with :mod:`gradtape.summary` (no TensorFlow needed):

    * ``log_dir/train``: ``epoch_loss``, ``epoch_<metric>`` and ``epoch_learning_rate`` at
      step ``epoch``; ``epoch_steps_per_second`` with ``write_steps_per_second``;
    * ``log_dir/validation``: the validation ``epoch_<name>`` scalars (without ``val_``), and
      ``evaluation_<name>_vs_iterations`` at step ``optimizer.iterations`` after every
      evaluation;
    * ``update_freq``: ``"epoch"``, or ``"batch"``/an int N: the train writer is the default
      summary writer during training (summaries written in a custom ``train_step`` land
      there), and ``batch_loss``, ``batch_<metric>`` (and ``batch_steps_per_second``) are
      written every N batches, at the global batch count (from 1);
    * ``histogram_freq`` N > 0: a histogram of every layer weight
      (``"<layer>/<weight>/histogram"``) every N epochs (and, with ``write_images``, the
      weight as an image, ``"<layer>/<weight>/image"``, as Keras shapes it).

    ``write_graph`` is accepted and ignored: gradtape has no graph to show (Keras 3 writes the
    model's JSON config as a ``keras`` summary). Profiling (``profile_batch``) and embeddings
    (``embeddings_freq``) are not available; a non-zero value raises ``ValueError``.
    As in Keras 2 (Keras 3 skips them when the last batch count is not a multiple of
    ``update_freq``), the epoch, evaluation and weight summaries are always recorded. Batch
    values are read from the device only for the batches that are written.
    """

    _tensor_logs = True

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True,
                 write_images=False, write_steps_per_second=False, update_freq="epoch",
                 profile_batch=0, embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool)
                                       or not isinstance(update_freq, int)
                                       or update_freq <= 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a "
                             f"positive int, got {update_freq!r}")
        if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, int) \
                or histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be an int >= 0, got "
                             f"{histogram_freq!r}")
        if profile_batch:
            raise ValueError(f"TensorBoard: profiling is not available in gradtape; "
                             f"profile_batch must be 0, got {profile_batch!r}")
        if embeddings_freq:
            raise ValueError(f"TensorBoard: embedding visualization is not available in "
                             f"gradtape; embeddings_freq must be 0, got {embeddings_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = bool(write_images)
        self.write_steps_per_second = bool(write_steps_per_second)
        self.update_freq = update_freq
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._global_train_batch = 0
        self._global_test_batch = 0
        self._previous_epoch_iterations = 0
        self._epoch_start_time = 0.0
        self._batch_start_time = 0.0
        self._writers = {}
        self._prev_summary_state = []
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")

    def set_model(self, model):
        super().set_model(model)
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._writers = {}          # new event files for each fit/evaluate, as Keras

    def _writer(self, key):
        from . import summary
        if key not in self._writers:
            self._writers[key] = summary.create_file_writer(
                self._train_dir if key == "train" else self._val_dir)
        return self._writers[key]

    def _optimizer(self):
        opt = getattr(self.model, "optimizer", None)
        return getattr(opt, "inner_optimizer", opt)

    def _iterations(self):
        opt = self._optimizer()
        if opt is None or not hasattr(opt, "iterations"):
            return None
        if hasattr(opt, "_current_step"):
            return opt._current_step()              # the host count: no device read
        it = opt.iterations
        return int(it.numpy() if hasattr(it, "numpy") else it)

    def _push_writer(self, key, step):
        """Make ``key``'s writer the default one, recording every ``update_freq`` steps."""
        if self.update_freq == "epoch":
            return
        from . import summary
        freq = self.update_freq
        contexts = (self._writer(key).as_default(step),
                    summary.record_if(lambda: step % freq == 0))
        self._prev_summary_state.append(contexts)
        contexts[0].__enter__()
        contexts[1].__enter__()

    def _pop_writer(self):
        if self.update_freq == "epoch" or not self._prev_summary_state:
            return
        contexts = self._prev_summary_state.pop()
        contexts[1].__exit__(None, None, None)
        contexts[0].__exit__(None, None, None)

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()

    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._previous_epoch_iterations = 0
        self._push_writer("train", self._global_train_batch)

    def on_train_end(self, logs=None):
        self._pop_writer()
        self._close_writers()

    def on_test_begin(self, logs=None):
        self._push_writer("val", self._global_test_batch)

    def on_test_end(self, logs=None):
        from . import summary
        step = self._iterations()
        if step is not None:
            with summary.record_if(True), self._writer("val").as_default():
                for name, value in (logs or {}).items():
                    summary.scalar(f"evaluation_{name}_vs_iterations", value, step=step)
        self._pop_writer()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.update_freq != "epoch":
            self._pop_writer()
            self._push_writer("train", self._global_train_batch)
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        from . import summary
        if not summary.should_record_summaries():
            return                                  # (no writer: nothing to read)
        step = self._global_train_batch
        if self.write_steps_per_second:
            elapsed = time.time() - self._batch_start_time
            summary.scalar("batch_steps_per_second", 1.0 / max(elapsed, 1e-12), step=step)
        if isinstance(logs, dict) or hasattr(logs, "items"):
            for name, value in logs.items():
                summary.scalar(f"batch_{name}", value, step=step)

    def on_test_batch_begin(self, batch, logs=None):
        self._global_test_batch += 1
        if self.update_freq != "epoch":
            self._pop_writer()
            self._push_writer("val", self._global_test_batch)

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._previous_epoch_iterations = self._iterations() or 0
            self._epoch_start_time = time.time()

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _learning_rate(self):
        from .optimizers import Optimizer
        opt = self._optimizer()
        if not isinstance(opt, Optimizer):
            return None
        lr = opt._lr_for(opt._current_step())       # a schedule's value at this step
        return float(lr.numpy() if hasattr(lr, "numpy") else lr)

    def _log_epoch_metrics(self, epoch, logs):
        from . import summary
        if not logs:
            return
        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val_logs = {k: v for k, v in logs.items() if k.startswith("val_")}
        lr = self._learning_rate()
        if lr is not None:
            train_logs["learning_rate"] = lr
        if self.write_steps_per_second:
            done = (self._iterations() or 0) - self._previous_epoch_iterations
            train_logs["steps_per_second"] = done / max(time.time() - self._epoch_start_time,
                                                        1e-12)
        with summary.record_if(True):
            if train_logs:
                with self._writer("train").as_default():
                    for name, value in train_logs.items():
                        summary.scalar(f"epoch_{name}", value, step=epoch)
            if val_logs:
                with self._writer("val").as_default():
                    for name, value in val_logs.items():
                        summary.scalar(f"epoch_{name[4:]}", value, step=epoch)

    def _log_weights(self, epoch):
        from . import summary
        writer = self._writer("train")
        with summary.record_if(True), writer.as_default():
            for layer in self.model.layers:
                for weight in layer.weights:
                    tag = _weight_tag(weight)
                    value = weight.numpy()              # one read for both summaries
                    summary.histogram(f"{tag}/histogram", value, step=epoch)
                    if self.write_images:
                        self._log_weight_as_image(value, f"{tag}/image", epoch)
        writer.flush()

    def _log_weight_as_image(self, w, name, epoch):
        """The weight as Keras 3 shows it: a bias as a column, a kernel as a matrix (the
        longer side across), a 3-D kernel as one image per output channel."""
        from . import summary
        w = np.squeeze(np.asarray(w))
        if w.ndim == 1:
            w = w.reshape(1, w.shape[0], 1, 1)
        elif w.ndim == 2:
            if w.shape[0] > w.shape[1]:
                w = w.T
            w = w.reshape(1, w.shape[0], w.shape[1], 1)
        elif w.ndim == 3:
            w = np.transpose(w, (2, 0, 1))
            w = w.reshape(w.shape[0], w.shape[1], w.shape[2], 1)
        if w.ndim == 4 and w.shape[-1] in (1, 3, 4):
            summary.image(name, w, step=epoch)
