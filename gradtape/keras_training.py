"""Keras' built-in training loop on ``gt.keras.Model``: ``compile``, ``fit``, ``evaluate``,
``predict`` and the ``*_on_batch`` calls, with Keras' semantics.

    model.compile(optimizer="adam",
                  loss=gt.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=128, epochs=5, validation_split=0.1)
    loss, acc = model.evaluate(x_test, y_test)

Data: NumPy arrays or tensors (a list or dict of them for several inputs or outputs), a
``gt.data.Dataset`` of ``(x, y)`` or ``(x, y, sample_weight)``, a
``gt.keras.utils.Sequence``, or a Python generator (with ``steps_per_epoch``). A step is
``train_step(data)``, which a subclass may override as in Keras (``compute_loss``,
``compute_metrics``, ``compiled_loss``, ``compiled_metrics``, ``self.metrics``).

Every step runs on the current device; a batch of NumPy arrays is uploaded once per array.
Metrics accumulate on the device and are read (one host wait) at the end of each epoch, and
otherwise only when a progress bar is redrawn or a user callback asks for batch logs.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import MutableMapping

import numpy as np

from . import nest as _nest

__all__ = ["TrainingMixin", "Sequence", "unpack_x_y_sample_weight",
           "pack_x_y_sample_weight"]


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from a batch: ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)``; what is missing is None."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"a batch must be x, (x,), (x, y) or (x, y, sample_weight); got a tuple "
                     f"of {len(data)}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The inverse of :func:`unpack_x_y_sample_weight`: a lone ``x`` stays itself (a tuple
    or list ``x`` is wrapped, ``(x,)``), as Keras, so ``fit(x)`` hands ``train_step`` the
    batch ``x`` itself."""
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


class Sequence:
    """Keras' ``utils.Sequence``: batches by index. Implement ``__len__`` (batches per epoch)
    and ``__getitem__(i)`` (batch ``i``: ``(x, y)`` or ``(x, y, sample_weight)``);
    ``on_epoch_end`` runs after every epoch."""

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def on_epoch_end(self):
        pass


# --- data ----------------------------------------------------------------------------------

def _is_array(v):
    from .tensor import Tensor
    return isinstance(v, (np.ndarray, Tensor)) or hasattr(v, "__array__") and not isinstance(
        v, (list, tuple, dict))


def _arrays(v):
    """A structure of arrays: a list or tuple that holds no array, list or dict is one array
    (``y=[0, 1, 1]``), as Keras reads it."""
    from .backend import current_device
    from .tensor import Tensor, convert_to_tensor
    if v is None or isinstance(v, Tensor):
        return v
    if not isinstance(v, np.ndarray) and current_device().is_native(v):
        return convert_to_tensor(v)          # a CuPy (device) array: kept on the device
    if isinstance(v, dict):
        return {k: _arrays(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        if any(_is_array(x) or isinstance(x, (list, tuple, dict)) for x in v):
            if all(not _is_array(x) and isinstance(x, (list, tuple)) and not any(
                    _is_array(e) or isinstance(e, (list, tuple, dict)) for e in x) for x in v):
                return np.asarray(v)        # a nested list of numbers: one array
            return type(v)(_arrays(x) for x in v)
        return np.asarray(v)
    return np.asarray(v)


def _first_dim(a):
    shape = a.shape
    if len(shape) == 0:
        raise ValueError(f"a data array must have a batch axis, got a scalar ({a!r})")
    return int(shape[0])


def _to_tensors(structure):
    from .tensor import Tensor, convert_to_tensor
    if structure is None:
        return None
    return _nest.map_structure(
        lambda a: a if isinstance(a, Tensor) or a is None else convert_to_tensor(a), structure)


class _ArrayData:
    """Batches of in-memory arrays (NumPy or tensors), reshuffled every epoch."""

    def __init__(self, x, y, sample_weight, batch_size, shuffle, who):
        self.who = who
        self.parts = (_arrays(x), _arrays(y), _arrays(sample_weight))
        leaves = [a for part in self.parts if part is not None for a in _nest.flatten(part)]
        if not leaves:
            raise ValueError(f"{who}: no data given (x is None)")
        sizes = [_first_dim(a) for a in leaves]
        if len(set(sizes)) != 1:
            names = ("x", "y", "sample_weight")
            desc = "; ".join(f"{names[i]} sizes: "
                             f"{', '.join(str(_first_dim(a)) for a in _nest.flatten(p))}"
                             for i, p in enumerate(self.parts) if p is not None)
            raise ValueError(f"{who}: data cardinality is ambiguous ({desc}); make sure all "
                             "arrays contain the same number of samples")
        self.n = sizes[0]
        if batch_size is None:
            batch_size = 32
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or \
                batch_size <= 0:
            raise ValueError(f"{who}: batch_size must be a positive int, got {batch_size!r}")
        self.batch_size = int(batch_size)
        if shuffle not in (True, False, "batch"):
            raise ValueError(f"{who}: shuffle must be True, False or 'batch', got {shuffle!r}")
        self.shuffle = shuffle
        self._seed = None
        if shuffle:
            from .random import next_op_seed
            seed = next_op_seed()
            self._seed = list(seed) if seed is not None else [
                np.random.SeedSequence().entropy]
        self.epoch = 0

    def size(self):
        """Batches per epoch."""
        return math.ceil(self.n / self.batch_size)

    def split(self, fraction):
        """Keras' ``validation_split``: the last ``fraction`` of the samples (before any
        shuffling) as validation data, the rest for training."""
        cut = int(self.n * (1.0 - fraction))
        if cut <= 0 or cut >= self.n:
            raise ValueError(f"{self.who}: validation_split={fraction} leaves "
                             f"{cut} training and {self.n - cut} validation samples of "
                             f"{self.n}")

        def take(part, sl):
            return None if part is None else _nest.map_structure(lambda a: a[sl], part)
        head = tuple(take(p, slice(0, cut)) for p in self.parts)
        tail = tuple(take(p, slice(cut, None)) for p in self.parts)
        return head, tail

    def _take(self, part, sel):
        from .tensor import Tensor
        if part is None:
            return None
        if isinstance(sel, slice):
            return _to_tensors(_nest.map_structure(lambda a: a[sel], part))

        def gather(a):
            if isinstance(a, Tensor):
                from .ops.shape import gather as _gather
                from .tensor import constant
                return _gather(a, constant(sel.astype(np.int64)))
            return a[sel]
        return _to_tensors(_nest.map_structure(gather, part))

    def batches(self):
        """One epoch of ``(x, y, sample_weight)`` batches of tensors."""
        n, bs = self.n, self.batch_size
        starts = list(range(0, n, bs))
        order = None
        if self.shuffle:
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
                [w & 0xFFFFFFFFFFFFFFFF for w in self._seed + [self.epoch]])))
            if self.shuffle == "batch":
                rng.shuffle(starts)
            else:
                order = rng.permutation(n)
        self.epoch += 1
        for s in starts:
            sel = slice(s, min(s + bs, n)) if order is None else order[s:s + bs]
            yield tuple(self._take(p, sel) for p in self.parts)


class _StreamData:
    """Batches from a Dataset, a Sequence, or an iterator (one stream over all epochs);
    ``steps`` caps the batches of an epoch.

    A dataset gives a new pass each epoch, as Keras: unless ``steps`` is fewer than its
    batches (or it is infinite), when one pass continues across epochs. ``fresh`` (the
    validation data) always starts a new pass, so every evaluation sees the same batches."""

    def __init__(self, source, steps, shuffle, who, fresh=False):
        from .data import Dataset, INFINITE_CARDINALITY
        self.who = who
        self.source = source
        self.steps = None if steps is None else int(steps)
        if self.steps is not None and self.steps <= 0:
            raise ValueError(f"{who}: steps must be a positive int, got {steps!r}")
        self.kind = ("dataset" if isinstance(source, Dataset) else
                     "sequence" if hasattr(source, "__getitem__") and hasattr(source, "__len__")
                     else "iterator")
        self.fresh = bool(fresh)
        self.cardinality = None
        if self.kind == "dataset":
            n = source.cardinality()
            n = int(n.numpy() if hasattr(n, "numpy") else n)
            if n == INFINITE_CARDINALITY and self.steps is None:
                raise ValueError(f"{who}: the dataset is infinite (repeat() without a count); "
                                 "give the number of steps (steps_per_epoch, validation_steps "
                                 "or steps)")
            self.cardinality = n
        self.shuffle = bool(shuffle) if self.kind == "sequence" else False
        self._stream = iter(source) if self.kind == "iterator" else None
        self.exhausted = False
        self._rng = None
        if self.shuffle:
            from .random import next_op_seed
            seed = next_op_seed()
            self._rng = np.random.default_rng(list(seed) if seed is not None else None)

    def size(self):
        """Batches per epoch (None when unknown)."""
        if self.steps is not None:
            return self.steps
        if self.kind == "sequence":
            return len(self.source)
        if self.kind == "dataset":
            return self.cardinality if self.cardinality >= 0 else None
        return None

    def _continues(self):
        """Whether a dataset's pass continues across epochs (fewer steps than batches)."""
        if self.fresh or self.steps is None:
            return False
        n = self.cardinality
        return n < 0 or self.steps < n

    def _elements(self):
        if self.kind == "sequence":
            order = np.arange(len(self.source))
            if self.shuffle:
                self._rng.shuffle(order)
            return (self.source[int(i)] for i in order)
        if self.kind == "dataset":
            if self._continues():
                if self._stream is None:
                    self._stream = iter(self.source)
                return self._stream
            return iter(self.source)
        return self._stream

    def batches(self):
        taken = 0
        it = self._elements()
        while self.steps is None or taken < self.steps:
            try:
                data = next(it)
            except StopIteration:
                if self.kind == "dataset":
                    self._stream = None
                if self.steps is not None or self.kind == "iterator":
                    if taken < (self.steps or 1):
                        self.exhausted = True
                        warnings.warn(f"{self.who}: the input ran out of data after {taken} "
                                      f"batches of this epoch; training stops (give "
                                      f"steps_per_epoch that the data can supply, or "
                                      f"repeat() the dataset)", UserWarning, stacklevel=4)
                break
            taken += 1
            x, y, sw = unpack_x_y_sample_weight(data)
            yield _to_tensors(_arrays(x)), _to_tensors(_arrays(y)), _to_tensors(
                _arrays(sw))
        if self.kind == "sequence" and hasattr(self.source, "on_epoch_end"):
            self.source.on_epoch_end()


def _adapter(x, y, sample_weight, batch_size, shuffle, steps, who, fresh=False):
    from .data import Dataset
    if isinstance(x, Dataset) or (x is not None and not _is_array(x) and not isinstance(
            x, (list, tuple, dict)) and (hasattr(x, "__next__") or hasattr(
                x, "__getitem__") and hasattr(x, "__len__"))):
        if y is not None:
            raise ValueError(f"{who}: y must be None when x is a dataset, generator or "
                             "Sequence (it yields (x, y) itself)")
        if sample_weight is not None:
            raise ValueError(f"{who}: sample_weight must be None when x is a dataset, "
                             "generator or Sequence (yield (x, y, sample_weight) instead)")
        # (batch_size is ignored: the stream makes its own batches, as Keras 3)
        return _StreamData(x, steps, shuffle, who, fresh)
    data = _ArrayData(x, y, sample_weight, batch_size, shuffle, who)
    return data


def _validation_due(freq):
    """``fit``'s ``validation_freq``: every ``freq`` epochs (an int), or the epochs (counted
    from 1) in a container; checked before any training."""
    from collections.abc import Container
    if isinstance(freq, (int, np.integer)) and not isinstance(freq, bool):
        if freq < 1:
            raise ValueError(f"fit: validation_freq must be >= 1, got {freq}")
        return lambda epoch: (epoch + 1) % int(freq) == 0
    if isinstance(freq, Container) and not isinstance(freq, (str, bytes)):
        return lambda epoch: (epoch + 1) in freq
    raise TypeError(f"fit: validation_freq must be an int or a container of epochs, got "
                    f"{type(freq).__name__}")


def _limited(adapter, steps):
    """An epoch of ``adapter``'s batches, at most ``steps`` of them."""
    for i, batch in enumerate(adapter.batches()):
        if steps is not None and i >= steps:
            break
        yield batch


def _floats(logs):
    from .callbacks import _floats as f
    return f(logs)


# --- compiled losses and metrics -------------------------------------------------------------

def _in_floatx(pred):
    """As Keras (a loss or metric computes in ``floatx``): a float16 prediction, the output of
    a mixed-precision model, is cast to floatx (float32) for the losses and metrics, its mask
    kept."""
    from .tensor import Tensor
    if not isinstance(pred, Tensor) or pred._value.dtype != np.float16:
        return pred
    from .layers import _FLOATX, get_mask, set_mask
    from .ops.core import cast
    if _FLOATX[0] == "float16":
        return pred
    out = cast(pred, _FLOATX[0])
    mask = get_mask(pred)
    if mask is not None:
        set_mask(out, mask)
    return out


def _align(y_true, y_pred, names, who):
    """``[(y_true_i, y_pred_i)]`` per model output (float16 predictions in floatx)."""
    preds = [_in_floatx(p) for p in _nest.flatten(y_pred)]
    if len(preds) == 1:
        if isinstance(y_true, (list, tuple)) and len(y_true) == 1 and _is_array(y_true[0]):
            y_true = y_true[0]
        if isinstance(y_true, dict) and len(y_true) == 1:
            y_true = next(iter(y_true.values()))
        return [(y_true, preds[0])]
    if isinstance(y_true, dict):
        unknown = sorted(set(map(str, y_true)) - set(names))
        if unknown:
            raise ValueError(f"{who}: y has keys {unknown} that are not outputs of the model "
                             f"(the outputs are {names})")
        return [(y_true.get(n), p) for n, p in zip(names, preds)]
    trues = [None] * len(preds) if y_true is None else _nest.flatten(y_true)
    if len(trues) != len(preds):
        raise ValueError(f"{who}: the model has {len(preds)} outputs ({names}) but y has "
                         f"{len(trues)} arrays")
    return list(zip(trues, preds))


def _output_names(known, y_pred):
    """The names of the outputs in ``y_pred``: the model's when they fit, else the keys of a
    dict output, else ``output_1``, ``output_2`` ..."""
    n = len(_nest.flatten(y_pred))
    if known is not None and len(known) == n:
        return list(known)
    if isinstance(y_pred, dict):
        return [str(k) for k in _nest._sorted_keys(y_pred)]
    return [f"output_{i + 1}" for i in range(n)]


def _per_output(spec, names, what):
    """One entry per output from a single value (shared), a list, or a dict by name."""
    if isinstance(spec, dict):
        unknown = sorted(set(map(str, spec)) - set(names))
        if unknown:
            raise ValueError(f"compile: {what} names {unknown}, which are not outputs of the "
                             f"model (the outputs are {names})")
        return [spec.get(n) for n in names]
    if isinstance(spec, (list, tuple)) and what == "loss":
        if len(spec) != len(names):
            raise ValueError(f"compile: {len(spec)} losses for {len(names)} outputs ({names})")
        return list(spec)
    return [spec] * len(names)


def _loss_object(spec):
    from . import losses
    if spec is None:
        return None
    obj = losses.get(spec)
    if isinstance(obj, losses.Loss):
        return obj
    return losses.LossFunctionWrapper(obj, name=getattr(obj, "__name__", "loss"))


class LossesContainer:
    """``model.compiled_loss``: the compiled loss of each output, weighted and summed, plus
    the regularization losses; tracks the running mean loss (``loss``, and ``<output>_loss``
    for each output of a multi-output model)."""

    def __init__(self, loss, loss_weights, output_names):
        from .metrics import Mean
        self.names = None if output_names is None else list(output_names)
        self._spec = loss
        self._weights_spec = loss_weights
        self.losses = None
        self.weights = None
        self.loss_tracker = Mean(name="loss")
        self.output_trackers = []

    def build(self, y_pred):
        names = self.names = _output_names(self.names, y_pred)
        n = len(names)
        self.losses = [_loss_object(s) for s in _per_output(self._spec, names, "loss")]
        w = self._weights_spec
        if w is None:
            self.weights = [1.0] * n
        elif isinstance(w, dict):
            self.weights = [float(v) if v is not None else 1.0
                            for v in _per_output(w, names, "loss_weights")]
        elif isinstance(w, (list, tuple)):
            if len(w) != n:
                raise ValueError(f"compile: {len(w)} loss_weights for {n} outputs ({names})")
            self.weights = [float(v) for v in w]
        else:
            self.weights = [float(w)] * n
        if n > 1:
            from .metrics import Mean
            self.output_trackers = [Mean(name=f"{name}_loss") if fn is not None else None
                                    for name, fn in zip(names, self.losses)]

    @property
    def metrics(self):
        return [self.loss_tracker] + [t for t in self.output_trackers if t is not None]

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        from .ops.core import cast
        from .ops.math import add_n
        if self.losses is None:
            self.build(y_pred)
        pairs = _align(y_true, y_pred, self.names, "loss")
        sws = _per_sample_weights(sample_weight, self.names, len(pairs))
        terms = []
        batch = None
        for i, ((yt, yp), fn, w) in enumerate(zip(pairs, self.losses, self.weights)):
            if batch is None and len(yp.shape):
                batch = int(yp.shape[0])
            if fn is None or yt is None:
                continue
            sw = _masked_weights(yp, sws[i], for_loss=True)
            with _mask_hidden(yp):
                value = fn(yt, yp, sample_weight=sw)
            if self.output_trackers:
                _track(self.output_trackers[i], value, batch)
            terms.append(value * w if w != 1.0 else value)
        for reg in regularization_losses or ():
            terms.append(reg)
        if not terms:
            raise ValueError("No loss to compute: give compile(loss=...), or add losses to the "
                             "model's layers")
        dtype = terms[0]._value.dtype
        terms = [t if t._value.dtype == dtype else cast(t, dtype) for t in terms]
        total = terms[0] if len(terms) == 1 else add_n(terms)
        _track(self.loss_tracker, total, batch)
        return total

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()


def _track(tracker, value, batch):
    """Add a batch's mean loss to a Mean tracker, weighted by the batch size (Keras' epoch
    loss): two in-place adds, without the general sample-weight path."""
    from .ops.core import cast
    if value._value.ndim != 0:
        tracker.update_state(value, sample_weight=batch)
        return
    if value._value.dtype != tracker._dtype:
        value = cast(value, tracker._dtype)
    n = float(batch if batch is not None else 1)
    tracker.total.assign_add(value * n)
    tracker.count.assign_add(n)


@contextlib.contextmanager
def _mask_hidden(y_pred):
    """``y_pred`` without its Keras mask for the duration: the compiled loss and metrics
    already weigh by it (:func:`_masked_weights`), so the loss and metric objects, which
    apply a prediction's mask themselves as Keras 3's do, must not apply it again."""
    from .layers import get_mask, set_mask
    mask = get_mask(y_pred)
    if mask is None:
        yield
        return
    set_mask(y_pred, None)
    try:
        yield
    finally:
        set_mask(y_pred, mask)


def _masked_weights(y_pred, sample_weight, for_loss=False):
    """As Keras: a prediction's mask (``Embedding(mask_zero=True)``, ``Masking``) is a
    sample weight of its loss and metrics, times any given one (a per-sample weight is
    spread over the masked axes). For the loss the mask is scaled by ``size / kept``, as
    tf.keras 2.13+ and Keras 3 do, so the mean runs over the unmasked entries."""
    from .layers import get_mask
    mask = get_mask(y_pred)
    if mask is None:
        return sample_weight
    from .ops.core import cast
    from .ops.math import maximum
    from .ops.reduce import reduce_sum
    from .ops.shape import reshape
    m = cast(mask, np.float32)
    if for_loss:
        total = float(int(np.prod(m._value.shape)))
        m = m * (total / maximum(reduce_sum(m), 1.0))
    if sample_weight is None:
        return m
    sw = sample_weight if hasattr(sample_weight, "_value") else _to_tensors(
        np.asarray(sample_weight, np.float32))
    sw = cast(sw, np.float32)
    extra = m._value.ndim - sw._value.ndim
    if extra > 0:
        sw = reshape(sw, tuple(sw._value.shape) + (1,) * extra)
    return sw * m


def _per_sample_weights(sample_weight, names, n):
    if sample_weight is None:
        return [None] * n
    if isinstance(sample_weight, dict):
        return [sample_weight.get(name) for name in names]
    if isinstance(sample_weight, (list, tuple)) and n > 1:
        if len(sample_weight) != n:
            raise ValueError(f"sample_weight: {len(sample_weight)} arrays for {n} outputs")
        return list(sample_weight)
    return [sample_weight] * n


def _metric_fn_for(name, y_true, y_pred):
    """Keras' choice for ``"accuracy"`` and ``"crossentropy"`` from the shapes of the
    labels and predictions."""
    from . import losses
    from . import metrics as M
    t_shape = tuple(y_true.shape) if y_true is not None else ()
    p_shape = tuple(y_pred.shape)
    t_last = t_shape[-1] if t_shape else None
    p_last = p_shape[-1] if p_shape else None
    binary = p_last == 1
    sparse = len(t_shape) < len(p_shape) or (t_last == 1 and p_last != 1)
    if name in ("accuracy", "acc"):
        return (M.binary_accuracy if binary else M.sparse_categorical_accuracy if sparse
                else M.categorical_accuracy)
    return (losses.binary_crossentropy if binary else losses.sparse_categorical_crossentropy
            if sparse else losses.categorical_crossentropy)


def _metric_object(spec, y_true, y_pred):
    from . import metrics as M
    if isinstance(spec, M.Metric):
        return spec
    if isinstance(spec, str):
        if spec in ("accuracy", "acc", "crossentropy", "ce"):
            return M.MeanMetricWrapper(_metric_fn_for(spec, y_true, y_pred), name=spec)
        obj = M.get(spec)
        if isinstance(obj, M.Metric):
            obj.name = spec          # (Keras 3: a metric given by a string takes that name)
            return obj
        return M.MeanMetricWrapper(obj, name=spec)
    if callable(spec):
        return M.MeanMetricWrapper(spec, name=getattr(spec, "__name__", "metric"))
    raise TypeError(f"compile: cannot interpret {spec!r} as a metric")


class MetricsContainer:
    """``model.compiled_metrics``: the compiled metrics of each output (``metrics`` without
    sample weights, ``weighted_metrics`` with them), built from the first batch."""

    def __init__(self, metrics, weighted_metrics, output_names):
        self.names = None if output_names is None else list(output_names)
        self._spec = metrics
        self._weighted_spec = weighted_metrics
        self.per_output = None       # [[(metric, weighted)], ...]

    def _specs(self, spec, n):
        if spec is None:
            return [[] for _ in range(n)]
        if isinstance(spec, dict):
            out = _per_output(spec, self.names, "metrics")
            return [[] if s is None else list(s) if isinstance(s, (list, tuple)) else [s]
                    for s in out]
        if isinstance(spec, (list, tuple)):
            if n > 1 and len(spec) == n and all(
                    isinstance(s, (list, tuple)) or s is None for s in spec):
                return [list(s or []) for s in spec]
            return [list(spec) for _ in range(n)]
        return [[spec] for _ in range(n)]

    def build(self, y_true, y_pred):
        self.names = _output_names(self.names, y_pred)
        n = len(self.names)
        pairs = _align(y_true, y_pred, self.names, "metrics")
        plain, weighted = self._specs(self._spec, n), self._specs(self._weighted_spec, n)
        seen, names = set(), set()
        self.per_output = []
        for i, (yt, yp) in enumerate(pairs):
            row = []
            for specs, w in ((plain[i], False), (weighted[i], True)):
                for s in specs:
                    m = _metric_object(s, yt, yp)
                    if id(m) in seen:
                        raise ValueError(f"compile: the metric object {m.name!r} is given for "
                                         "several outputs; give a name or one object per "
                                         "output")
                    seen.add(id(m))
                    if n > 1:
                        m.name = f"{self.names[i]}_{m.name}"
                    if w and m.name in names:          # as Keras: only to tell them apart
                        m.name = f"weighted_{m.name}"
                    names.add(m.name)
                    row.append((m, w))
            self.per_output.append(row)

    @property
    def metrics(self):
        if self.per_output is None:
            return []
        return [m for row in self.per_output for m, _ in row]

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.per_output is None:
            self.build(y_true, y_pred)
        pairs = _align(y_true, y_pred, self.names, "metrics")
        sws = _per_sample_weights(sample_weight, self.names, len(pairs))
        for (yt, yp), row, sw in zip(pairs, self.per_output, sws):
            if yt is None:
                continue
            for m, weighted in row:
                w = _masked_weights(yp, sw if weighted else None)
                with _mask_hidden(yp):
                    m.update_state(yt, yp, sample_weight=w)

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()


def _check_specs(spec, names, what, check):
    """compile's checks of a loss or metric argument: dict keys against known output
    names, and each entry by ``check``."""
    if spec is None:
        return
    if isinstance(spec, dict):
        if names is not None:
            _per_output(spec, names, what)
        entries = list(spec.values())
    elif isinstance(spec, (list, tuple)):
        if what == "loss" and names is not None and len(spec) != len(names):
            raise ValueError(f"compile: {len(spec)} losses for {len(names)} outputs ({names})")
        entries = list(spec)
    else:
        entries = [spec]
    if check is None:
        return
    for entry in entries:
        for item in (entry if isinstance(entry, (list, tuple)) else [entry]):
            if item is not None:
                check(item)


def _check_metric(spec):
    from . import metrics as M
    if isinstance(spec, str) and spec not in ("accuracy", "acc", "crossentropy", "ce"):
        M.get(spec)                                 # raises for an unknown name
    elif not isinstance(spec, (str, M.Metric)) and not callable(spec):
        raise TypeError(f"compile: cannot interpret {spec!r} as a metric")


class MetricResults(MutableMapping):
    """``{metric name: metric.result()}``, each result computed when it is read (so a step
    whose logs nobody reads pays nothing; a value read after ``reset_metrics`` is the reset
    one). Entries may be added or replaced, as in the dict Keras returns."""

    __slots__ = ("_metrics", "_set")

    def __init__(self, metrics):
        self._metrics = {m.name: m for m in metrics}
        self._set = {}

    def __getitem__(self, name):
        if name in self._set:
            return self._set[name]
        return self._metrics[name].result()

    def __setitem__(self, name, value):
        self._set[name] = value

    def __delitem__(self, name):
        found = False
        if name in self._set:
            del self._set[name]
            found = True
        if name in self._metrics:
            del self._metrics[name]
            found = True
        if not found:
            raise KeyError(name)

    def __iter__(self):
        yield from self._metrics
        for k in self._set:
            if k not in self._metrics:
                yield k

    def __len__(self):
        return len(self._metrics) + sum(1 for k in self._set if k not in self._metrics)

    def __repr__(self):
        return repr(dict(self.items()))


# --- the training mixin ------------------------------------------------------------------------

def _class_weight_table(class_weight, who):
    """The class weights as a float32 tensor indexed by class id (made once per fit)."""
    from .tensor import constant
    if not isinstance(class_weight, dict):
        raise TypeError(f"{who}: class_weight must be a dict {{class id: weight}}, got "
                        f"{type(class_weight).__name__}")
    keys = sorted(int(k) for k in class_weight)
    if keys != list(range(len(keys))):
        raise ValueError(f"{who}: class_weight must have the keys 0 .. n_classes - 1, got "
                         f"{keys}")
    return constant(np.array([float(class_weight[k]) for k in keys], np.float32))


def _class_weights(table, y, sw, who):
    """``sample_weight`` times each sample's class weight (``y``: class ids, or one-hot)."""
    from .ops.core import cast
    from .ops.reduce import argmax
    from .ops.shape import gather
    if isinstance(y, (list, tuple)) and len(y) == 1:
        y = y[0]
    if isinstance(y, (list, tuple, dict)):
        raise ValueError(f"{who}: class_weight is for models with one output")
    shape = tuple(y.shape)
    if len(shape) >= 2 and shape[-1] > 1:
        ids = argmax(y, axis=-1)
    else:
        ids = y if len(shape) == 1 else y[..., 0] if len(shape) == 2 else y
        ids = cast(ids, np.int64)
    w = gather(table, cast(ids, np.int64))
    return w if sw is None else cast(sw, np.float32) * w


class TrainingMixin:
    """``compile`` / ``fit`` / ``evaluate`` / ``predict`` for :class:`gradtape.layers.Model`."""

    # --- compile -----------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None, auto_scale_loss=True, **kwargs):
        """Set the optimizer (name or object; Keras' default ``"rmsprop"``), the loss (name,
        Loss, function; a list or dict by output for several outputs), ``metrics`` and
        ``weighted_metrics``. ``run_eagerly``, ``steps_per_execution`` and ``jit_compile``
        are accepted for TF scripts: gradtape always runs eagerly. With ``auto_scale_loss``
        (Keras 3) a model whose dtype policy is ``"mixed_float16"`` gets its optimizer wrapped
        in a :class:`~gradtape.optimizers.LossScaleOptimizer`, and ``train_step`` scales the
        loss (``optimizer.scale_loss``) before taking the gradients."""
        from . import optimizers
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument {next(iter(kwargs))!r}")
        opt = optimizers.get(optimizer)
        policy = self.__dict__.get("_dtype_policy")
        if auto_scale_loss and policy is not None and policy.name == "mixed_float16" and \
                not isinstance(opt, optimizers.LossScaleOptimizer):
            opt = optimizers.LossScaleOptimizer(opt, name="loss_scale_optimizer")
        names = self.output_names
        # check everything before assigning, so a bad argument changes nothing
        _check_specs(loss, names, "loss", _loss_object)
        if loss_weights is not None and isinstance(loss_weights, dict):
            _check_specs(loss_weights, names, "loss_weights", None)
        for spec, what in ((metrics, "metrics"), (weighted_metrics, "weighted_metrics")):
            _check_specs(spec, names, what, _check_metric)
        loss_c = LossesContainer(loss, loss_weights, names)
        metrics_c = MetricsContainer(metrics, weighted_metrics, names)
        self.optimizer = opt
        self.loss = loss
        self.compiled_loss = loss_c
        self.compiled_metrics = metrics_c
        self.stop_training = False
        self._is_compiled = True

    @property
    def compiled(self) -> bool:
        """Whether :meth:`compile` has been called (Keras 3's ``Model.compiled``)."""
        return bool(self.__dict__.get("_is_compiled"))

    def _require_compiled(self, who):
        if not self.__dict__.get("_is_compiled"):
            raise RuntimeError(f"{who}: you must compile the model before training or "
                               "evaluating it: model.compile(optimizer, loss)")

    @property
    def metrics(self) -> list:
        """The metrics that ``fit`` and ``evaluate`` report and reset: the loss tracker(s)
        and the compiled metrics (after the first batch)."""
        if not self.__dict__.get("_is_compiled"):
            return []
        return self.compiled_loss.metrics + self.compiled_metrics.metrics

    @property
    def metrics_names(self) -> list:
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    # --- one step ---------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The compiled loss of ``y`` against ``y_pred`` plus the regularization losses."""
        return self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics; return :meth:`get_metrics_result`."""
        self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        """``{name: current value}`` of :attr:`metrics`: a read-only mapping whose values
        (tensors on the device) are computed when read, so a step whose logs nobody reads
        pays nothing for them."""
        return MetricResults(self.metrics)

    def train_step(self, data):
        """One optimizer step on a batch: forward under a tape, the compiled loss (scaled by
        the optimizer's ``scale_loss`` where it has one: a LossScaleOptimizer), the gradients
        of the trainable variables, ``optimizer.apply_gradients``; returns the metrics'
        values."""
        from .tape import GradientTape
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        scale_loss = getattr(self.optimizer, "scale_loss", None)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            if scale_loss is not None:
                loss = scale_loss(loss)
        if self.compiled_metrics.per_output is None:
            self.compiled_metrics.build(y, y_pred)      # a bad metric fails before any update
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        """The loss and metrics of a batch (inference mode, no update)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # --- loops -------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, **kwargs):
        """Train for ``epochs`` epochs; returns the :class:`~gradtape.callbacks.History`
        (``history.history["loss"]``, ``["val_loss"]``, one float per epoch)."""
        from .callbacks import CallbackList
        if kwargs:
            raise TypeError(f"fit: unexpected keyword argument {next(iter(kwargs))!r}")
        self._require_compiled("fit")
        verbose = 1 if verbose == "auto" else int(verbose)
        if not 0.0 <= float(validation_split) < 1.0:
            raise ValueError(f"fit: validation_split must be in [0, 1), got {validation_split}")
        train = _adapter(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, "fit")
        val = None
        if validation_split and validation_data is None:
            if not isinstance(train, _ArrayData):
                raise ValueError("fit: validation_split needs array inputs; with a dataset, "
                                 "generator or Sequence give validation_data")
            (tx, ty, tsw), (vx, vy, vsw) = train.split(float(validation_split))
            train = _adapter(tx, ty, tsw, batch_size, shuffle, steps_per_epoch, "fit")
            val = _adapter(vx, vy, vsw, validation_batch_size or batch_size, False, None, "fit")
        elif validation_data is not None:
            val = self._validation_adapter(validation_data, validation_batch_size or batch_size,
                                           validation_steps)
        table = None if class_weight is None else _class_weight_table(class_weight, "fit")
        due = _validation_due(validation_freq)
        steps = steps_per_epoch if steps_per_epoch is not None else train.size()
        cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                           verbose=verbose, epochs=int(epochs), steps=steps)
        self.stop_training = False
        self._fitting = True
        logs = {}
        try:
            cbs.on_train_begin()
            # a callback that restored a backup (BackupAndRestore) says where to resume
            initial_epoch = self.__dict__.pop("_initial_epoch", None) or initial_epoch
            for epoch in range(int(initial_epoch), int(epochs)):
                self.reset_metrics()
                cbs.on_epoch_begin(epoch)
                step_logs, ran = None, 0
                for step, batch in enumerate(_limited(train, steps_per_epoch)):
                    cbs.on_train_batch_begin(step)
                    if table is not None:
                        bx, by, bsw = batch
                        batch = (bx, by, _class_weights(table, by, bsw, "fit"))
                    step_logs = self.train_step(_packed(batch))
                    ran += 1
                    cbs.on_train_batch_end(step, step_logs)
                    if self.stop_training:
                        break
                if ran == 0:
                    if getattr(train, "exhausted", False):
                        break
                    raise ValueError("fit: the training data gave no batch (is it empty?)")
                logs = _floats(step_logs)
                if isinstance(train, _ArrayData) and steps_per_epoch is not None and \
                        ran < steps_per_epoch and not self.stop_training:
                    train.exhausted = True
                    warnings.warn(f"fit: the input ran out of data after {ran} batches of "
                                  f"steps_per_epoch={steps_per_epoch}; training stops",
                                  UserWarning, stacklevel=2)
                if val is not None and due(epoch):
                    val_logs = self._evaluate_loop(val, validation_steps, cbs)
                    logs.update({"val_" + k: v for k, v in val_logs.items()})
                cbs.on_epoch_end(epoch, logs)
                if self.stop_training or getattr(train, "exhausted", False):
                    break
            if int(epochs) > 0 and hasattr(self.optimizer, "finalize_variable_values"):
                # with use_ema the moving averages become the weights, as Keras' fit does
                self.optimizer.finalize_variable_values(self.trainable_variables)
            cbs.on_train_end(logs)
        finally:
            self._fitting = False
        return self.history

    def _validation_adapter(self, data, batch_size, steps):
        from .data import Dataset
        if isinstance(data, Dataset) or not isinstance(data, (list, tuple)):
            return _adapter(data, None, None, None, False, steps, "fit(validation_data)",
                            fresh=True)
        if len(data) not in (2, 3):
            raise ValueError(f"fit: validation_data must be (x, y) or (x, y, sample_weight), "
                             f"got a sequence of {len(data)}")
        vx, vy = data[0], data[1]
        vsw = data[2] if len(data) == 3 else None
        return _adapter(vx, vy, vsw, batch_size, False, None, "fit(validation_data)")

    def _evaluate_loop(self, data, steps, cbs):
        self.reset_metrics()
        cbs.on_test_begin()
        step_logs = None
        for step, batch in enumerate(_limited(data, steps)):
            cbs.on_test_batch_begin(step)
            step_logs = self.test_step(_packed(batch))
            cbs.on_test_batch_end(step, step_logs)
        if step_logs is None:
            raise ValueError("evaluate: the data gave no batch (is it empty?)")
        logs = _floats(step_logs)
        cbs.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        """The loss and metrics over the data: a float when only the loss is tracked, else
        the list in :attr:`metrics_names` order (or a dict with ``return_dict``)."""
        from .callbacks import CallbackList
        if kwargs:
            raise TypeError(f"evaluate: unexpected keyword argument {next(iter(kwargs))!r}")
        self._require_compiled("evaluate")
        verbose = 1 if verbose == "auto" else int(verbose)
        data = _adapter(x, y, sample_weight, batch_size, False, steps, "evaluate")
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                           epochs=1, steps=steps if steps is not None else data.size())
        logs = self._evaluate_loop(data, steps, cbs)
        if return_dict:
            return logs
        values = [logs[n] for n in self.metrics_names if n in logs]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                **kwargs):
        """The model's outputs for every sample, as NumPy arrays (concatenated on the device,
        copied to the host once)."""
        from .callbacks import CallbackList
        from .ops.shape import concat
        if kwargs:
            raise TypeError(f"predict: unexpected keyword argument {next(iter(kwargs))!r}")
        verbose = 1 if verbose == "auto" else int(verbose)
        data = _adapter(x, None, None, batch_size, False, steps, "predict")
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                           epochs=1, steps=steps if steps is not None else data.size())
        cbs.on_predict_begin()
        outs = []
        for step, batch in enumerate(_limited(data, steps)):
            cbs.on_predict_batch_begin(step)
            out = self.predict_step(_packed((batch[0],)))
            outs.append(out)
            cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not outs:
            raise ValueError("predict: the data gave no batch (is it empty?)")
        flat = [_nest.flatten(o) for o in outs]
        joined = [concat([f[i] for f in flat], axis=0).numpy() if len(flat) > 1 else
                  flat[0][i].numpy() for i in range(len(flat[0]))]
        return _nest.pack_sequence_as(outs[0], joined) if _nest.is_nested(outs[0]) else \
            joined[0]

    # --- single batches -----------------------------------------------------------------------
    def _batch_result(self, logs, return_dict):
        logs = _floats(logs)
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        """One ``train_step`` on the given batch; the metrics as ``evaluate`` returns them."""
        self._require_compiled("train_on_batch")
        if reset_metrics:
            self.reset_metrics()
        x, y, sw = _to_tensors(_arrays(x)), _to_tensors(_arrays(y)), _to_tensors(
            _arrays(sample_weight))
        if class_weight is not None:
            sw = _class_weights(_class_weight_table(class_weight, "train_on_batch"), y, sw,
                                "train_on_batch")
        return self._batch_result(self.train_step(_packed((x, y, sw))), return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        self._require_compiled("test_on_batch")
        if reset_metrics:
            self.reset_metrics()
        batch = (_to_tensors(_arrays(x)), _to_tensors(_arrays(y)),
                 _to_tensors(_arrays(sample_weight)))
        return self._batch_result(self.test_step(_packed(batch)), return_dict)

    def predict_on_batch(self, x):
        out = self.predict_step(_packed((_to_tensors(_arrays(x)),)))
        return _nest.map_structure(lambda t: t.numpy(), out)


def _packed(batch):
    x, y, sw = (tuple(batch) + (None, None))[:3]
    return pack_x_y_sample_weight(x, y, sw)
