"""Keras' training callbacks (``tf.keras.callbacks``) for ``Model.fit``, ``evaluate`` and
``predict``.

    early = gt.keras.callbacks.EarlyStopping(monitor="val_loss", patience=3,
                                             restore_best_weights=True)
    history = model.fit(x, y, epochs=50, validation_split=0.2, callbacks=[early])

Epoch-level ``logs`` hold Python floats. Batch-level ``logs`` hold the metrics' current
values as tensors for the built-in callbacks (reading them would wait for the device every
step); a user callback that defines a batch hook gets Python floats, as in Keras.
"""
from __future__ import annotations

import csv
import math
import os
import sys
import time
import warnings

import numpy as np

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "LearningRateScheduler", "ReduceLROnPlateau", "TerminateOnNaN",
           "LambdaCallback", "CSVLogger"]

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
    """The callbacks of one ``fit``/``evaluate``/``predict``, called in order."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks: expected gt.keras.callbacks.Callback objects, got "
                                f"{type(cb).__name__}")
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.insert(0, ProgbarLogger())
        if add_history and model is not None:
            if not any(isinstance(c, History) for c in self.callbacks):
                self.callbacks.append(History())
            model.history = next(c for c in self.callbacks if isinstance(c, History))
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
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def _batch_call(self, hook, batch, logs):
        if not self._batch:
            return
        logs = logs or {}
        floats = _floats(logs) if self._float_batch else None
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
    ``fit`` returns this object."""

    _tensor_logs = True

    def __init__(self):
        super().__init__()
        self.epoch = []
        self.history = {}

    def on_train_begin(self, logs=None):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def _fmt(value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{v:.4f}" if 1e-3 <= abs(v) < 1e4 or v == 0 else f"{v:.4e}"


class ProgbarLogger(Callback):
    """Keras' progress display: ``verbose=1`` a bar per epoch (redrawn at most 10 times a
    second on a terminal; the final line elsewhere), ``verbose=2`` one line per epoch."""

    _tensor_logs = True

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream
        self._mode = "train"

    def _out(self):
        return self.stream if self.stream is not None else sys.stdout

    def _verbose(self):
        return self.params.get("verbose", 1)

    def on_train_begin(self, logs=None):
        self._mode = "train"

    def on_epoch_begin(self, epoch, logs=None):
        if self._verbose():
            print(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}", file=self._out())
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._seen = 0

    def on_test_begin(self, logs=None):
        if self.model is not None and getattr(self.model, "_fitting", False):
            return                           # validation inside fit: no bar of its own
        self._mode = "test"
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._seen = 0

    def on_predict_begin(self, logs=None):
        self._mode = "predict"
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._seen = 0

    def _interactive(self):
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
        parts += [f"{k}: {_fmt(v)}" for k, v in (logs or {}).items()]
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
            self._out().write("\r" + line + "\n")
        else:
            self._out().write(line + "\n")
        self._out().flush()

    def on_epoch_end(self, epoch, logs=None):
        self._finish(logs)

    def on_test_end(self, logs=None):
        if self._mode == "test":
            self._finish(logs)

    def on_predict_end(self, logs=None):
        self._finish({})


def _monitor_op(mode, monitor, who):
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}")
    if mode == "auto":
        mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")
                         or "auc" in monitor) else "min"
    return mode


def _improved(mode, current, reference, min_delta):
    if mode == "min":
        return current < reference - min_delta
    return current > reference + min_delta


def _monitored(logs, monitor, who):
    value = (logs or {}).get(monitor)
    if value is None:
        warnings.warn(f"{who}: the metric {monitor!r} is not in the logs (available: "
                      f"{', '.join(sorted(logs or {}))}); nothing was checked",
                      RuntimeWarning, stacklevel=3)
        return None
    return float(value)


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` epochs; ``restore_best_weights`` puts back the best epoch's weights."""

    _tensor_logs = True

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = int(patience)
        self.verbose = verbose
        self.mode = _monitor_op(mode, monitor, "EarlyStopping")
        self.baseline = None if baseline is None else float(baseline)
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        self.stopped_epoch = 0
        self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = math.inf if self.mode == "min" else -math.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = _monitored(logs, self.monitor, "EarlyStopping")
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if _improved(self.mode, current, self.best, self.min_delta):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or _improved(self.mode, current, self.baseline,
                                                  self.min_delta):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose:
                    print(f"Restoring model weights from the end of the best epoch: "
                          f"{self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Save the model (or only its weights) after each epoch, or every ``save_freq``
    batches; ``filepath`` may hold ``{epoch}`` and log keys (``"w-{epoch:02d}-{val_loss:.2f}"``);
    ``save_best_only`` keeps only improvements of ``monitor``; ``save_weights_only=False``
    (the default) writes the whole model with ``model.save``."""

    _tensor_logs = True

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        if save_freq != "epoch" and (not isinstance(save_freq, int) or save_freq <= 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive int, "
                             f"got {save_freq!r}")
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self.mode = _monitor_op(mode, monitor, "ModelCheckpoint")
        self.save_freq = save_freq
        self.best = (float(initial_value_threshold) if initial_value_threshold is not None
                     else (math.inf if self.mode == "min" else -math.inf))
        self._batches = 0
        self._epoch = 0

    def _path(self, epoch, logs):
        try:
            return self.filepath.format(epoch=epoch + 1, **(logs or {}))
        except KeyError as exc:
            raise KeyError(f"ModelCheckpoint: the filepath {self.filepath!r} names {exc}, which "
                           f"is not in the logs ({', '.join(sorted(logs or {}))})") from None

    def _save(self, epoch, logs):
        logs = _floats(logs)
        path = self._path(epoch, logs)
        if self.save_best_only:
            current = _monitored(logs, self.monitor, "ModelCheckpoint")
            if current is None or not _improved(self.mode, current, self.best, 0):
                return
            if self.verbose:
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)

    def on_train_begin(self, logs=None):
        if not self.save_weights_only:
            from .saving import check_saveable
            check_saveable(self.model)        # fail now, not after the first epoch

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch":
            self._batches += 1
            if self._batches % self.save_freq == 0:
                self._save(self._epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, logs)


def _get_lr(model, who):
    opt = getattr(model, "optimizer", None)
    if opt is None:
        raise ValueError(f"{who}: the model has no optimizer (compile it first)")
    lr = opt.learning_rate
    if hasattr(lr, "numpy"):
        return float(lr.numpy())
    if callable(lr):
        raise ValueError(f"{who}: the optimizer's learning rate is a schedule; a callback "
                         "cannot also set it")
    return float(lr)


def _set_lr(model, value):
    opt = model.optimizer
    lr = opt.learning_rate
    if hasattr(lr, "assign"):
        lr.assign(value)
    else:
        opt.learning_rate = float(value)


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of each epoch to ``schedule(epoch, lr)``."""

    _tensor_logs = True

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = _get_lr(self.model, "LearningRateScheduler")
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(new.numpy() if hasattr(new, "numpy") else new)
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: the schedule gave {new} for epoch "
                             f"{epoch}")
        _set_lr(self.model, new)
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _get_lr(self.model, "LearningRateScheduler")


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` when ``monitor`` has not improved for
    ``patience`` epochs (then wait ``cooldown`` epochs), never below ``min_lr``."""

    _tensor_logs = True

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword argument "
                            f"{next(iter(kwargs))!r}")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        self.monitor = monitor
        self.factor = float(factor)
        self.patience = int(patience)
        self.verbose = verbose
        self.mode = _monitor_op(mode, monitor, "ReduceLROnPlateau")
        self.min_delta = float(min_delta)
        self.cooldown = int(cooldown)
        self.min_lr = float(min_lr)

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.cooldown_counter = 0
        self.best = math.inf if self.mode == "min" else -math.inf

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _get_lr(self.model, "ReduceLROnPlateau")
        current = _monitored(logs, self.monitor, "ReduceLROnPlateau")
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if _improved(self.mode, current, self.best, self.min_delta):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = _get_lr(self.model, "ReduceLROnPlateau")
                if old > self.min_lr:
                    new = max(old * self.factor, self.min_lr)
                    _set_lr(self.model, new)
                    if self.verbose:
                        print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                              f"to {new}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class TerminateOnNaN(Callback):
    """Stop training at the first batch whose loss is NaN or infinite (reads the loss every
    batch: one device wait per step)."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: ``on_epoch_end=lambda epoch, logs: ...`` and the other
    hooks by name (``on_batch_begin``/``on_batch_end`` for training batches)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_batch_begin=on_batch_begin, on_batch_end=on_batch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end, **kwargs)
        for name, fn in hooks.items():
            if fn is None:
                continue
            if not hasattr(Callback, name) or not name.startswith("on_"):
                raise TypeError(f"LambdaCallback: unknown hook {name!r}")
            setattr(self, name, fn)
        if on_batch_begin is not None:
            self.on_train_batch_begin = on_batch_begin
        if on_batch_end is not None:
            self.on_train_batch_end = on_batch_end

    def _uses_batch_hooks(self):
        return any(name in self.__dict__ for name in _BATCH_HOOKS)


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file (``append`` to keep earlier rows)."""

    _tensor_logs = True

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = bool(append)
        self._file = None
        self._writer = None
        self._keys = None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(
            self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._keys = None
        self._writer = None
        self._has_header = exists

    def on_epoch_end(self, epoch, logs=None):
        logs = _floats(logs)
        if self._writer is None:
            self._keys = sorted(logs)
            # as Keras: with validation_freq > 1 the first epoch has no val_ keys; their
            # columns are made now (NA until validation runs)
            if not any(k.startswith("val_") for k in self._keys):
                self._keys += ["val_" + k for k in self._keys]
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys,
                                          delimiter=self.separator, extrasaction="ignore")
            if not self._has_header:
                self._writer.writeheader()
        row = {"epoch": epoch, **{k: logs.get(k, "NA") for k in self._keys}}
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None
