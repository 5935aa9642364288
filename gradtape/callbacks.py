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
           "LambdaCallback", "CSVLogger", "TensorBoard"]

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
