"""``gt.keras.utils``: Keras' data helpers, with Keras 3's values.

    y = gt.keras.utils.to_categorical(labels, 10)             # NumPy float64 one-hot rows
    x = gt.keras.utils.pad_sequences(token_lists, maxlen=100)  # int32, padded/truncated in front
    ds = gt.keras.utils.timeseries_dataset_from_array(series[:-10], series[10:],
                                                      sequence_length=10, batch_size=32)

NumPy in, NumPy out (as Keras); ``to_categorical`` and ``normalize`` of a gradtape tensor
give a tensor, computed with gradtape ops. ``timeseries_dataset_from_array`` returns a
:class:`gt.data.Dataset` of exactly Keras' windows (each gathered when its batch is read).
"""
from __future__ import annotations

import copy
import difflib
import json
import logging
import math
import os
import sys
import time

import numpy as np

__all__ = ["to_categorical", "normalize", "pad_sequences", "timeseries_dataset_from_array",
           "split_dataset", "Progbar", "get_custom_objects", "custom_object_scope",
           "CustomObjectScope", "text_dataset_from_directory"]


def _is_tensor(x) -> bool:
    from .tensor import Tensor
    return isinstance(x, Tensor)


# --- to_categorical, normalize ----------------------------------------------------------------

def to_categorical(x, num_classes=None, dtype=None):
    """One-hot rows for the integer class ids ``x`` (a trailing axis of size 1 is dropped).

    As Keras 3: an array or list gives a NumPy array of float64 (``dtype`` picks another: the
    Keras 2 argument); a gradtape tensor gives a float32 tensor (``gt.one_hot``).
    ``num_classes`` None or 0: ``max(x) + 1``. Class ids must be whole numbers in
    ``[0, num_classes)`` (Keras indexes with them unchecked; gradtape says which one is off).
    """
    tensor = x if _is_tensor(x) else None
    a = x.numpy() if tensor is not None else np.asarray(x)
    if a.dtype.kind == "f":
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError("to_categorical: class ids must be whole numbers")
    elif a.dtype.kind == "b" or a.dtype.kind not in "iu":
        raise TypeError(f"to_categorical: class ids must be integers, got {a.dtype}")
    shape = a.shape[:-1] if a.ndim > 1 and a.shape[-1] == 1 else a.shape
    flat = a.reshape(-1).astype(np.int64)
    n = _num_classes(flat, num_classes)
    if tensor is not None:            # Keras 3: a tensor gives a one-hot tensor (float32)
        from .ops.core import cast
        from .ops.shape import one_hot, reshape
        ids = tensor if a.dtype.kind in "iu" else cast(tensor, "int64")
        if tuple(shape) != a.shape:
            ids = reshape(ids, shape)
        return one_hot(ids, n, dtype="float32" if dtype is None else dtype)
    out = np.zeros((flat.size, n), dtype=np.float64 if dtype is None else _np_dtype(dtype))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(shape + (n,))


def _np_dtype(dtype):
    return np.dtype(getattr(dtype, "as_numpy_dtype", None) or getattr(dtype, "name", dtype))


def _num_classes(flat, num_classes):
    if flat.size and flat.min() < 0:
        raise ValueError(f"to_categorical: class ids must be >= 0, got {int(flat.min())}")
    n = int(num_classes) if num_classes else (int(flat.max()) + 1 if flat.size else 0)
    if flat.size and int(flat.max()) >= n:
        raise ValueError(f"to_categorical: class id {int(flat.max())} does not fit "
                         f"num_classes={n}")
    return n


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (a zero norm leaves zeros).

    As Keras 3: a NumPy array gives a NumPy array (float64 for integers; ``axis=None``
    divides by ``np.linalg.norm`` of the whole array, kept 2-D); anything else (a gradtape
    tensor, a list) gives a tensor, as ``keras.ops.normalize``:
    ``x * min(rsqrt(sum(x**2)), 1/eps)`` for ``order=2``, else ``x / max(norm, eps)`` (eps:
    ``keras.backend.epsilon()``; integers are cast to float32). (Keras 3 reads ``axis=0``
    of an array as ``-1``; gradtape normalizes along axis 0, as Keras 2 did.)
    """
    if not isinstance(x, np.ndarray):
        if not _is_tensor(x):
            from .tensor import convert_to_tensor
            x = convert_to_tensor(x)
        return _normalize_tensor(x, axis, order)
    a = x
    if a.dtype.kind not in "iuf":
        raise TypeError(f"normalize: expected a numeric array, got {a.dtype}")
    norm = np.atleast_1d(np.linalg.norm(a, order, axis))
    norm[norm == 0] = 1
    return a / np.expand_dims(norm, -1 if axis is None else axis)


def _normalize_tensor(x, axis, order):
    from . import constraints
    from .ops.core import cast
    from .ops.math import divide, maximum, minimum, rsqrt, square
    from .ops.reduce import norm, reduce_sum
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise ValueError(f"normalize: order must be an int >= 1, got {order!r}")
    if x._value.dtype.kind != "f":
        x = cast(x, "float32")
    eps = constraints._EPSILON[0]
    if order == 2:
        inv = minimum(rsqrt(reduce_sum(square(x), axis=axis, keepdims=True)), 1.0 / eps)
        return x * inv
    n = norm(x, ord=order, axis=axis, keepdims=True)
    return divide(x, maximum(n, eps))


# --- pad_sequences ----------------------------------------------------------------------------

def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """The sequences as one ``(len(sequences), maxlen, ...)`` array of ``dtype``: each
    shortened to its last (``truncating="pre"``) or first (``"post"``) ``maxlen`` items and
    filled with ``value`` in front (``padding="pre"``) or behind (``"post"``). ``maxlen``
    None: the longest. Strings need ``dtype=object`` (or a string dtype)."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences: `sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ValueError(f'pad_sequences: Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'pad_sequences: Truncating type "{truncating}" not understood')
    num_samples = len(sequences)
    lengths, sample_shape, first = [], (), True
    for x in sequences:
        if _is_tensor(x):
            x = x.numpy()
        try:
            lengths.append(len(x))
        except TypeError:
            raise ValueError(f"pad_sequences: `sequences` must be a list of iterables. "
                             f"Found non-iterable: {x}") from None
        if first and len(x):
            sample_shape = np.asarray(x).shape[1:]
            first = False
    if maxlen is None:
        if not lengths:
            raise ValueError("pad_sequences: no sequences and no maxlen: the length is "
                             "unknown")
        maxlen = int(np.max(lengths))
    maxlen = int(maxlen)
    if maxlen < 0:
        raise ValueError(f"pad_sequences: maxlen must be >= 0, got {maxlen}")
    dt = np.dtype(dtype) if dtype is not object else np.dtype(object)
    if isinstance(value, str) and dt.kind not in "OUS":
        raise ValueError(f"pad_sequences: `dtype` {dtype} is not compatible with `value`'s "
                         f"type: {type(value)}; set dtype=object for variable length strings")
    out = np.full((num_samples, maxlen) + tuple(sample_shape), value, dtype=dt)
    if maxlen == 0:
        return out
    for idx, s in enumerate(sequences):
        if _is_tensor(s):
            s = s.numpy()
        if not len(s):
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dt)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"pad_sequences: Shape of sample {trunc.shape[1:]} of sequence at "
                             f"position {idx} is different from expected shape "
                             f"{sample_shape}")
        if padding == "post":
            out[idx, :len(trunc)] = trunc
        else:
            out[idx, -len(trunc):] = trunc
    return out


# --- timeseries_dataset_from_array -------------------------------------------------------------

def _host_array(x, what):
    """``x`` as a NumPy array: a tensor's values; a Python list with TensorFlow's dtypes
    (int32, float32), as Keras converts it; other arrays as they are."""
    if _is_tensor(x):
        return x.numpy()
    a = np.asarray(x)
    if isinstance(x, (list, tuple)) and a.dtype.kind in "iufb":
        from .data import _host_tensor
        return _host_tensor(x, f"timeseries_dataset_from_array ({what})")._value
    if a.dtype.kind in "USO":
        raise TypeError(f"timeseries_dataset_from_array: {what} must be numeric, got "
                        f"{a.dtype}")
    return a


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None, format="tf"):
    """A :class:`gt.data.Dataset` of sliding windows over ``data`` (axis 0 is time), as
    Keras: window ``i`` starts at ``start_index + i * sequence_stride`` and takes
    ``sequence_length`` steps ``sampling_rate`` apart; with ``targets``, each window comes
    with ``targets[start]`` (``targets[start_index + i * sequence_stride]``). Batches of
    ``batch_size`` windows (None: single windows). ``shuffle`` permutes the windows with
    ``np.random.RandomState(seed)`` as Keras does, then shuffles within a buffer of
    ``8 * batch_size`` windows with gradtape's seeded shuffle (TF's stream differs).
    ``format``: ``"tf"``, the only one (Keras' ``"grain"`` needs Grain)."""
    from .data import Dataset, _Map
    from .dtypes import as_dtype
    from .tensor import TensorSpec
    who = "timeseries_dataset_from_array"
    data = _host_array(data, "data")
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"{who}: `start_index` must be 0 or greater. Received: "
                             f"start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"{who}: `start_index` must be lower than the length of the "
                             f"data. Received: start_index={start_index}, for data of "
                             f"length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"{who}: `end_index` must be higher than `start_index`. "
                             f"Received: start_index={start_index}, and "
                             f"end_index={end_index}")
        if end_index >= n:
            raise ValueError(f"{who}: `end_index` must be lower than the length of the data. "
                             f"Received: end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"{who}: `end_index` must be higher than 0. Received: "
                             f"end_index={end_index}")
    if sampling_rate <= 0:
        raise ValueError(f"{who}: `sampling_rate` must be higher than 0. Received: "
                         f"sampling_rate={sampling_rate}")
    if sampling_rate >= n:
        raise ValueError(f"{who}: `sampling_rate` must be lower than the length of the data. "
                         f"Received: sampling_rate={sampling_rate}, for data of length {n}")
    if sequence_stride <= 0:
        raise ValueError(f"{who}: `sequence_stride` must be higher than 0. Received: "
                         f"sequence_stride={sequence_stride}")
    if sequence_stride >= n:
        raise ValueError(f"{who}: `sequence_stride` must be lower than the length of the "
                         f"data. Received: sequence_stride={sequence_stride}, for data of "
                         f"length {n}")
    if format not in ("tf", "grain"):
        raise ValueError(f'{who}: `format` should be either "tf" or "grain". Received: '
                         f"format={format}")
    if format == "grain":
        raise ValueError(f'{who}: format="grain" gives a Grain dataset, which gradtape does '
                         'not have; use format="tf" (a gt.data.Dataset)')
    if sequence_length < 0:
        raise ValueError(f"{who}: sequence_length must be >= 0, got {sequence_length}")
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"{who}: batch_size must be a positive int or None, got "
                         f"{batch_size}")
    start = 0 if start_index is None else int(start_index)
    end = n if end_index is None else int(end_index)
    sequence_length, sampling_rate = int(sequence_length), int(sampling_rate)
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    window = data[start:end]
    target_window = None
    if targets is not None:
        targets = _host_array(targets, "targets")
        num_seqs = min(num_seqs, len(targets))
        target_window = targets[start:end]
    positions = np.arange(0, max(num_seqs, 0), int(sequence_stride), dtype=np.int64)
    if target_window is not None and positions.size and positions[-1] >= len(target_window):
        raise ValueError(f"{who}: window {len(positions) - 1} starts at {positions[-1]} past "
                         f"start_index, but targets[start_index:end_index] has only "
                         f"{len(target_window)} entries")
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(positions)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate

    def windows(p):
        p = p.numpy()
        x = window[p[..., None] + offsets]
        if target_window is None:
            return x
        return x, target_window[p]

    ds = Dataset.from_tensor_slices(positions)
    if shuffle:
        ds = ds.shuffle(buffer_size=(batch_size or 128) * 8, seed=seed)
    lead = []
    if batch_size is not None:
        ds = ds.batch(int(batch_size))
        lead = [None]
    # Keras' spec: batch and window sizes unknown
    spec = TensorSpec(lead + [None] + list(data.shape[1:]), as_dtype(data.dtype))
    if target_window is not None:
        spec = (spec, TensorSpec(lead + list(target_window.shape[1:]),
                                 as_dtype(target_window.dtype)))
    return _Map(ds, windows, spec)


# --- split_dataset ------------------------------------------------------------------------------

def _rescale_split_sizes(left_size, right_size, total):
    """Keras' split sizes: an int is a count (``0 < size < total``), a float a fraction
    (``0 < size < 1``, rounded as Python's ``round``); the missing one is the rest."""
    who = "split_dataset"

    def plain(size, name):
        if isinstance(size, (np.integer, np.floating)):
            size = size.item()
        if size is not None and (isinstance(size, bool) or type(size) not in (int, float)):
            raise TypeError(f"{who}: Invalid `{name}` Type. Expected: int or float or None, "
                            f"Received: type({name})={type(size).__name__}")
        return size
    left_size, right_size = plain(left_size, "left_size"), plain(right_size, "right_size")
    if left_size == 0 and right_size == 0:
        raise ValueError(f"{who}: Both `left_size` and `right_size` are zero. At least one of "
                         "the split sizes must be non-zero.")
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if (type(size) is int and (size <= 0 or size >= total)) or \
                (type(size) is float and (size <= 0 or size >= 1)):
            raise ValueError(f"{who}: `{name}` should be either a positive integer smaller "
                             f"than {total}, or a float within the range `[0, 1]`. Received: "
                             f"{name}={size}")
    if type(left_size) is float and type(right_size) is float and left_size + right_size > 1:
        raise ValueError(f"{who}: The sum of `left_size` and `right_size` is greater than 1. "
                         "It must be less than or equal to 1.")
    left = round(left_size * total) if type(left_size) is float else left_size
    right = round(right_size * total) if type(right_size) is float else right_size
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total:
        raise ValueError(f"{who}: The sum of `left_size` and `right_size` should be smaller "
                         f"than the {total}. Received: left_size + right_size = "
                         f"{float(left + right)} and total_length = {total}")
    for size, side in ((left, "left"), (right, "right")):
        if size == 0:
            raise ValueError(f"{who}: With `dataset` of length={total}, `left_size`={left} and "
                             f"`right_size`={right}. Resulting {side} side dataset split will "
                             "be empty. Adjust any of the aforementioned parameters")
    return int(left), int(right)


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None,
                  preferred_backend=None):
    """Two :class:`gt.data.Dataset` of a dataset's samples: the first ``left_size`` and the
    last ``right_size`` (ints are counts, floats fractions of the whole; a missing one is
    the rest). ``dataset``: an array, a tuple/list of arrays (sliced together) or an
    ``gt.data.Dataset`` (read whole into memory; one made by ``.batch`` is split by sample
    and the splits batched alike). ``shuffle`` permutes the samples first with Python's
    ``random.Random(seed)``, as Keras."""
    import random as _py_random
    from .data import Dataset
    who = "split_dataset"
    if preferred_backend not in (None, "tensorflow", "gradtape"):
        raise ValueError(f"{who}: preferred_backend must be None or 'tensorflow', got "
                         f"{preferred_backend!r}")
    batch = None
    if isinstance(dataset, Dataset):
        batch = _batch_size_of(dataset)
        if batch is not None:
            dataset = dataset.unbatch()
        samples = [_to_numpy(e) for e in dataset]
        structure = None
    elif isinstance(dataset, (list, tuple)):
        kind = type(dataset).__name__
        if not dataset:
            raise ValueError(f"{who}: Received an empty {kind} dataset. Please provide a "
                             f"non-empty {kind} of arrays.")
        for i, a in enumerate(dataset):
            if not (isinstance(a, np.ndarray) or _is_tensor(a)):
                raise ValueError(f"{who}: Expected a {kind} of `numpy.ndarray` objects, "
                                 f"Received: {type(a)} at index {i}.")
        arrays = [_host_array(a, "dataset") for a in dataset]
        lengths = {len(a) for a in arrays}
        if len(lengths) != 1:
            raise ValueError(f"{who}: the arrays of `dataset` must have the same length, got "
                             f"{[len(a) for a in arrays]}")
        samples = list(zip(*arrays))
        structure = type(dataset)
    elif isinstance(dataset, np.ndarray) or _is_tensor(dataset):
        samples = list(_host_array(dataset, "dataset"))
        structure = np.ndarray
    else:
        raise TypeError(f"{who}: The `dataset` argument must be either a `gt.data.Dataset` "
                        f"object, or a list/tuple of arrays. Received: dataset of type "
                        f"{type(dataset).__name__}")
    if left_size is None and right_size is None:
        raise ValueError(f"{who}: At least one of the `left_size` or `right_size` must be "
                         "specified. Received: left_size=None and right_size=None")
    if shuffle:
        if seed is None:
            seed = _py_random.randint(0, int(1e6))
        _py_random.Random(seed).shuffle(samples)
    left, right = _rescale_split_sizes(left_size, right_size, len(samples))
    parts = []
    for part in (samples[:left], samples[-right:]):
        if structure is None:
            import gradtape.nest as _nest
            first = part[0]
            flat = [_nest.flatten(e) for e in part]
            cols = [np.stack(c) for c in zip(*flat)]
            value = _nest.pack_sequence_as(first, cols) if _nest.is_nested(first) else cols[0]
        elif structure is np.ndarray:
            value = np.stack(part)
        else:
            value = tuple(np.stack(c) for c in zip(*part))
        ds = Dataset.from_tensor_slices(value)
        if batch is not None:
            ds = ds.batch(batch)
        parts.append(ds)
    return parts[0], parts[1]


def _batch_size_of(dataset):
    """The batch size of a dataset made by ``.batch`` (as Keras, only the outermost step
    counts: a batched-then-mapped dataset's elements are its samples)."""
    from .data import _Batch
    return int(dataset._size) if isinstance(dataset, _Batch) else None


def _to_numpy(element):
    import gradtape.nest as _nest
    return _nest.map_structure(lambda t: t.numpy() if _is_tensor(t) else np.asarray(t),
                               element)


# --- interactive logging, Config --------------------------------------------------------------

_INTERACTIVE_LOGGING = [True]


def enable_interactive_logging():
    """Progress and callback messages go to ``sys.stdout`` (the default), as Keras 3's
    ``keras.utils.enable_interactive_logging``."""
    _INTERACTIVE_LOGGING[0] = True


def disable_interactive_logging():
    """Progress and callback messages become INFO records of the ``gradtape`` logger
    (:func:`gt.get_logger`; Keras 3 sends them to ``absl.logging``) instead of lines on
    ``sys.stdout``, as ``keras.utils.disable_interactive_logging``."""
    _INTERACTIVE_LOGGING[0] = False


def is_interactive_logging_enabled():
    """Whether progress output goes to ``sys.stdout`` (True, the default) or to the logger,
    as Keras 3's ``keras.utils.is_interactive_logging_enabled``."""
    return _INTERACTIVE_LOGGING[0]


def print_msg(message, line_break=True, stream=None):
    """Keras 3's ``io_utils.print_msg``: ``message`` written to ``stream`` (default
    ``sys.stdout``) while interactive logging is on, else logged at INFO level by the
    ``gradtape`` logger (without the trailing line break)."""
    message = str(message)
    if _INTERACTIVE_LOGGING[0]:
        out = sys.stdout if stream is None else stream
        out.write(f"{message}\n" if line_break else message)
        out.flush()
    else:
        logging.getLogger("gradtape").info(message.rstrip("\n"))


class Config:
    """A dict-like container of named values read and set as attributes or items, which
    can be frozen against changes and written as JSON, as Keras 3's ``keras.utils.Config``:
    ``Config(learning_rate=0.1)``, ``config.seed = 1``, ``config["seed"]``, ``freeze()``,
    ``as_dict()``, ``to_json()``; iteration gives the sorted keys."""

    __attrs__ = None

    def __init__(self, **kwargs):
        self._config = kwargs
        self._frozen = False
        self.__attrs__ = set(dir(self))

    @property
    def frozen(self):
        """True once :meth:`freeze` was called (and :meth:`unfreeze` not since)."""
        return self._frozen

    def freeze(self):
        """Refuse every later change (``ValueError``)."""
        self._frozen = True

    def unfreeze(self):
        self._frozen = False

    def _raise_if_frozen(self):
        if self._frozen:
            raise ValueError("Cannot mutate attribute(s) because the config is frozen.")

    def as_dict(self):
        return copy.copy(self._config)

    def to_json(self):
        return json.dumps(self._config)

    def keys(self):
        return self._config.keys()

    def values(self):
        return self._config.values()

    def items(self):
        return self._config.items()

    def pop(self, *args):
        self._raise_if_frozen()
        return self._config.pop(*args)

    def update(self, *args, **kwargs):
        self._raise_if_frozen()
        return self._config.update(*args, **kwargs)

    def get(self, keyname, value=None):
        return self._config.get(keyname, value)

    def __setattr__(self, name, value):
        attrs = object.__getattribute__(self, "__attrs__")
        if attrs is None or name in attrs:
            return object.__setattr__(self, name, value)
        self._raise_if_frozen()
        self._config[name] = value

    def __getattr__(self, name):
        attrs = object.__getattribute__(self, "__attrs__")
        if attrs is None or name in attrs:
            return object.__getattribute__(self, name)
        config = object.__getattribute__(self, "_config")
        if name in config:
            return config[name]
        msg = f"Unknown attribute: '{name}'."
        close = difflib.get_close_matches(name, config.keys(), n=1, cutoff=0.7)
        if close:
            msg += f" Did you mean '{close[0]}'?"
        raise AttributeError(msg)

    def __setitem__(self, key, item):
        self._raise_if_frozen()
        self._config[key] = item

    def __getitem__(self, key):
        return self._config[key]

    def __repr__(self):
        return f"<Config {self._config}>"

    def __iter__(self):
        yield from sorted(self._config.keys())

    def __len__(self):
        return len(self._config)

    def __delitem__(self, key):
        self._raise_if_frozen()
        del self._config[key]

    def __contains__(self, item):
        return item in self._config


# --- Progbar ---------------------------------------------------------------------------------

class Progbar:
    """Keras' progress bar: ``update(current, values)`` / ``add(n, values)`` with
    ``values`` a list of ``(name, value)``; a name in ``stateful_metrics`` is shown as given,
    the others as their average over the steps so far (Keras 3's weighting). ``verbose=1``
    redraws one line on a terminal (at most every ``interval`` seconds) and prints the final
    line; ``verbose=2`` prints only the final line; ``0`` nothing. Lines go to
    ``sys.stdout`` (to the logger when interactive logging is off); on a terminal the bar
    is drawn in colour as Keras 3 draws it."""

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
                 stateless_metrics=None, unit_name="step"):
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Progbar: give only one of `stateful_metrics` or "
                             "`stateless_metrics`")
        self.target = target
        self.width = int(width)
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        if stateful_metrics is not None:
            self.stateful_metrics, self.stateless_metrics = set(stateful_metrics), None
        elif stateless_metrics is not None:
            self.stateful_metrics, self.stateless_metrics = None, set(stateless_metrics)
        else:
            self.stateful_metrics, self.stateless_metrics = set(), None
        self._seen_so_far = 0
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._last_update = 0.0
        self._time_after_first_step = None
        self._prev_total_width = 0

    @staticmethod
    def _dynamic():
        if not _INTERACTIVE_LOGGING[0]:
            return False                    # lines go to the logger: no redrawing
        out = sys.stdout
        return (hasattr(out, "isatty") and out.isatty()) or "ipykernel" in sys.modules or \
            "PYCHARM_HOSTED" in os.environ

    def update(self, current, values=None, finalize=None):
        """Move to step ``current``; ``values``: ``[(name, value_of_this_step), ...]``;
        ``finalize`` (default: ``current >= target``) ends the line."""
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        for k, v in values or []:
            if _is_tensor(v):
                v = v.numpy()
            if k not in self._values_order:
                self._values_order.append(k)
            if self.stateful_metrics is not None:
                stateless = k not in self.stateful_metrics
            else:
                stateless = k in self.stateless_metrics
            if stateless:
                if finalize:
                    self._values[k] = [v, 1]
                else:
                    base = max(current - self._seen_so_far, 1)
                    if k not in self._values:
                        self._values[k] = [v * base, base]
                    else:
                        self._values[k][0] += v * base
                        self._values[k][1] += base
            else:
                self._values[k] = [v, 1]
        self._seen_so_far = current
        now = time.time()
        per_unit = self._step_duration(current, now)
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            dynamic = self._dynamic()
            if not dynamic and not finalize:        # a log file: the final line only
                self._last_update = now
                return
            bar, bar_width = self._bar(current, dynamic)
            if self.target is not None and self.target > 0 and not finalize:
                eta = per_unit * (self.target - current)
                if eta > 3600:
                    when = "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
                elif eta > 60:
                    when = "%d:%02d" % (eta // 60, eta % 60)
                else:
                    when = "%ds" % eta
            else:
                when = f"{now - self._start:.0f}s"
            tail = self._format_time(per_unit, self.unit_name) + self._metrics(abs_check=True)
            total_width = bar_width + 1 + len(when) + len(tail)
            message = ("\r" if dynamic else "") + bar + " " + self._bold(when, dynamic) + tail
            if dynamic and self._prev_total_width > total_width:
                message += " " * (self._prev_total_width - total_width)
            if finalize:
                message += "\n"
            print_msg(message, line_break=False)
            self._prev_total_width = total_width
        elif self.verbose == 2:
            if finalize and self.target is not None and self.target > 0:
                digits = int(math.log10(self.target)) + 1
                count = f"%{digits}d/%d" % (current, self.target)
                info = f"{count} - {now - self._start:.0f}s"
                info += f" -{self._format_time(per_unit, self.unit_name)}"
                info += self._metrics(abs_check=False)
                print_msg(info)
        self._last_update = now

    def add(self, n, values=None):
        """``update(current + n, values)``."""
        self.update(self._seen_so_far + n, values)

    @staticmethod
    def _bold(text, dynamic):
        return f"\x1b[1m{text}\x1b[0m" if dynamic else text

    def _bar(self, current, dynamic):
        """The step count and bar, and its printed width."""
        if self.target is not None and self.target > 0:
            digits = int(math.log10(self.target)) + 1
            count = f"%{digits}d/%d" % (current, self.target)
            done = int(self.width * float(current) / self.target)
            if dynamic:
                bar = self._bold(count, True) + " "
                if done > 0:
                    bar += f"\33[32m{'━' * done}\x1b[0m"
                bar += f"\33[37m{'━' * (self.width - done)}\x1b[0m"
            else:
                bar = count + " " + "━" * done + "─" * (self.width - done)
            return bar, len(count) + 1 + self.width
        bar = "%7d/Unknown" % current
        return bar, len(bar)

    def _metrics(self, abs_check):
        info = ""
        for k in self._values_order:
            info += f" - {k}:"
            total, count = self._values[k]
            if not isinstance(total, float):
                total = np.mean(total)
            avg = total / max(1, count)
            big = abs(avg) > 1e-3 if abs_check else avg > 1e-3
            info += f" {avg:.4f}" if big else f" {avg:.4e}"
        return info

    @staticmethod
    def _format_time(per_unit, unit_name):
        if per_unit >= 1 or per_unit == 0:
            return f" {per_unit:.0f}s/{unit_name}"
        if per_unit >= 1e-3:
            return f" {per_unit * 1000.0:.0f}ms/{unit_name}"
        return f" {per_unit * 1000000.0:.0f}us/{unit_name}"

    def _step_duration(self, current, now):
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_unit


# --- custom objects ------------------------------------------------------------------------------

def get_custom_objects():
    """The global table of custom objects (``{name: class or function}``) that loading
    looks names up in; ``register_keras_serializable`` adds to it, and so may you
    (``get_custom_objects()["my_fn"] = my_fn``)."""
    from .saving import _REGISTERED
    return _REGISTERED


class CustomObjectScope:
    """``with custom_object_scope({"MyLayer": MyLayer}):`` makes the objects visible by name
    to ``load_model``, ``model_from_json``, ``deserialize`` and activation lookups made
    inside the block (this thread)."""

    def __init__(self, custom_objects):
        if custom_objects is not None and not isinstance(custom_objects, dict):
            raise TypeError(f"custom_object_scope: expected a dict of custom objects, got "
                            f"{type(custom_objects).__name__}")
        self.custom_objects = dict(custom_objects or {})
        self._ctx = None

    def __enter__(self):
        from .saving import _custom_scope
        self._ctx = _custom_scope(self.custom_objects)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        ctx, self._ctx = self._ctx, None
        return ctx.__exit__(*exc)


custom_object_scope = CustomObjectScope


# --- text_dataset_from_directory ----------------------------------------------------------------

def _index_directory(directory, labels, formats, class_names, shuffle, seed, follow_links,
                     verbose):
    """Keras' file index: the files with a suffix in ``formats`` under each class folder
    (sorted folders, then sorted walk and names), their labels and the class names; shuffled
    with NumPy's ``RandomState(seed)`` as Keras does, so the order is Keras' own."""
    if labels == "inferred":
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError(f"The `class_names` passed did not match the names of the "
                                 f"subdirectories of the target directory. Expected: "
                                 f"{subdirs} (or a subset of it), but received: "
                                 f"class_names={class_names}")
            subdirs = list(class_names)
    else:
        subdirs = [""]
        if class_names is not None:
            raise ValueError("When argument `labels` is specified, argument `class_names` "
                             "cannot be specified (the `class_names` will be the sorted list "
                             "of labels).")
    names, found = subdirs, []
    for index, sub in enumerate(subdirs):
        root_dir = os.path.join(directory, sub)
        for root, _, files in sorted(os.walk(root_dir, followlinks=follow_links),
                                     key=lambda entry: entry[0]):
            for fname in sorted(files):
                if fname.lower().endswith(formats):
                    found.append((os.path.join(root, fname), index))
    paths = [p for p, _ in found]
    if labels == "inferred":
        label_array = np.asarray([i for _, i in found], dtype=np.int32)
    elif labels is None:
        label_array, names = None, None
    else:
        if len(labels) != len(paths):
            raise ValueError(f"Expected the lengths of `labels` to match the number of files in "
                             f"the target directory. len(labels) is {len(labels)} while we "
                             f"found {len(paths)} files in directory {directory}.")
        label_array = np.asarray(labels)
        names = [str(v) for v in sorted(set(labels))]
    if verbose:
        print(f"Found {len(paths)} files." if label_array is None else
              f"Found {len(paths)} files belonging to {len(names)} classes.")
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(paths)
        if label_array is not None:
            np.random.RandomState(seed).shuffle(label_array)
    return paths, label_array, names


def _check_split_args(validation_split, subset, shuffle, seed):
    """Keras' checks of ``validation_split`` / ``subset`` / ``seed``."""
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if bool(validation_split) != bool(subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be either "training", "validation" or "both", '
                         f"received: {subset}")
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")


def _check_label_args(labels, label_mode, class_names, files, contents=None, article=""):
    """Keras' checks of ``labels``, ``class_names`` and ``label_mode`` in its
    ``*_dataset_from_directory`` functions, with each function's message: ``files`` names the
    files (``"image"``), ``contents`` what a dataset without labels holds (None: Keras' text
    function, which leaves that advice out), ``article`` opens the message (``"The "`` in the
    audio function). Returns ``(labels, label_mode)``, both None when either is."""
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            advice = "" if contents is None else (
                "If you wish to infer the labels from the subdirectory names in the target "
                'directory, pass `labels="inferred"`. If you wish to get a dataset that only '
                f"contains {contents} (no labels), pass `labels=None`. ")
            raise ValueError(f"{article}`labels` argument should be a list/tuple of integer "
                             f"labels, of the same size as the number of {files} files in the "
                             f"target directory. {advice}Received: labels={labels}")
        if class_names:
            raise ValueError(f'You can only pass `class_names` if `labels="inferred"`. '
                             f"Received: labels={labels}, and class_names={class_names}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f'`label_mode` argument must be one of "int", "categorical", '
                         f'"binary", or None. Received: label_mode={label_mode}')
    if labels is None or label_mode is None:
        return None, None
    return labels, label_mode


def _index_labeled(directory, labels, label_mode, formats, class_names, shuffle, seed,
                   validation_split, subset, follow_links, verbose):
    """The split arguments checked, ``seed`` drawn when None, then :func:`_index_directory`
    and Keras' check that ``"binary"`` labels have two classes. Returns ``(paths, labels,
    class_names, seed)``."""
    _check_split_args(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, label_array, names = _index_directory(directory, labels, formats, class_names,
                                                 shuffle, seed, follow_links, verbose)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be exactly 2 '
                         f"class_names. Received: class_names={names}")
    return paths, label_array, names, seed


def _subset_datasets(paths, label_array, names, validation_split, subset, make):
    """The dataset of ``subset`` (for ``"both"``, a list of the training and validation
    ones): ``make(part, paths, labels)`` on the part's files, ``class_names`` set on it."""
    out = []
    for part in ["training", "validation"] if subset == "both" else [subset]:
        p, lab = _split(paths, label_array, validation_split, part)
        ds = make(part, p, lab)
        ds.class_names = names
        out.append(ds)
    return out if subset == "both" else out[0]


def _split(paths, labels, validation_split, subset):
    if not validation_split:
        return paths, labels
    n_val = int(validation_split * len(paths))
    if subset == "training":
        print(f"Using {len(paths) - n_val} files for training.")
        keep = slice(None, -n_val)
    else:
        print(f"Using {n_val} files for validation.")
        keep = slice(-n_val, None)
    return paths[keep], None if labels is None else labels[keep]


def _text_dataset(paths, labels, label_mode, num_classes, max_length, shuffle, buffer, seed,
                  batch_size, what):
    from .data import Dataset

    def read(path):
        with open(path, "rb") as f:
            text = f.read()
        return text if max_length is None else text[:max_length]

    if not paths:
        raise ValueError(f"No {what}text files found in directory. Allowed format: .txt")
    texts = np.empty(len(paths), dtype=object)
    texts[:] = [read(p) for p in paths]
    if label_mode is None:
        ds = Dataset.from_tensor_slices(texts)
    else:
        if label_mode == "binary":
            y = labels.astype(np.float32)[:, None]
        elif label_mode == "categorical":
            y = np.eye(num_classes, dtype=np.float32)[labels]
        else:
            y = labels
        ds = Dataset.from_tensor_slices((texts, y))
    if shuffle:
        ds = ds.shuffle(buffer, seed=seed)
    if batch_size is not None:
        ds = ds.batch(batch_size)
    return ds


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None, shuffle=True,
                                seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True):
    """A :class:`gt.data.Dataset` of ``(text, label)`` batches from a folder of ``.txt``
    files with one sub-folder per class, as Keras 3's: the same file order (Keras' sorted
    index and its seeded NumPy shuffle), the same training/validation split, labels as int32
    ids, one-hot float32 (``"categorical"``) or float32 ``(n, 1)`` (``"binary"``), texts cut
    to ``max_length`` bytes; ``class_names`` on the result. The texts are read when the
    dataset is made; the shuffle of the batches themselves uses gradtape's generator."""
    labels, label_mode = _check_label_args(labels, label_mode, class_names, "text")
    if format != "tf":
        raise ValueError(f'`format` should be "tf" (gradtape has no grain datasets). '
                         f"Received: format={format}")
    paths, label_array, names, seed = _index_labeled(
        directory, labels, label_mode, (".txt",), class_names, shuffle, seed, validation_split,
        subset, follow_links, verbose)
    buffer = batch_size * 8 if batch_size is not None else 1024
    n_classes = len(names) if names else 0

    def make(part, p, lab):
        return _text_dataset(p, lab, label_mode, n_classes, max_length,
                             shuffle and part != "validation", buffer, seed, batch_size,
                             f"{part} " if subset == "both" else "")
    return _subset_datasets(paths, label_array, names, validation_split, subset, make)


# --- image_dataset_from_directory, load_img, save_img -----------------------------------------

_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
                   "gaussian", "mitchellcubic")


def _label_values(labels, label_mode, num_classes):
    if label_mode == "binary":
        return labels.astype(np.float32)[:, None]
    if label_mode == "categorical":
        return np.eye(num_classes, dtype=np.float32)[labels]
    return labels


def _load_image(path, image_size, num_channels, interpolation, data_format, crop, pad):
    """Keras' ``_load_image_tf``: read, ``decode_image`` (first frame of a GIF), resize to
    ``image_size`` (cropping or padding to its aspect ratio when asked), channels first
    when asked."""
    from . import image as gt_image
    from . import io as gt_io
    from .layers_extra import _resize
    from .ops.shape import transpose
    img = gt_io.decode_image(gt_io.read_file(path), channels=num_channels,
                             expand_animations=False)
    if crop:
        img = _resize(img, image_size[0], image_size[1], interpolation,
                      crop_to_aspect_ratio=True)
    elif pad:
        img = gt_image.resize_with_pad(img, image_size[0], image_size[1],
                                       method=interpolation)
    else:
        img = gt_image.resize(img, image_size, method=interpolation)
    if data_format == "channels_first":
        img = transpose(img, (2, 0, 1))
    return img


def _paths_dataset(paths, labels, label_mode, num_classes, shuffle, buffer, seed):
    """Keras' ``paths_and_labels_to_dataset``: the paths (with their labels unless
    ``label_mode`` is None), shuffled when asked."""
    from .data import Dataset
    path_array = np.asarray(paths, dtype=object)
    if label_mode is None:
        ds = Dataset.from_tensor_slices(path_array)
    else:
        ds = Dataset.from_tensor_slices(
            (path_array, _label_values(labels, label_mode, num_classes)))
    if shuffle:
        ds = ds.shuffle(buffer, seed=seed)
    return ds


def _load_paths(ds, load, label_mode):
    """``ds`` of :func:`_paths_dataset` with each path read by ``load``."""
    return ds.map(load) if label_mode is None else ds.map(lambda x, y: (load(x), y))


def _image_dataset(paths, labels, label_mode, num_classes, load, shuffle, buffer, seed,
                   batch_size):
    from .data import AUTOTUNE
    ds = _paths_dataset(paths, labels, label_mode, num_classes, shuffle, buffer, seed)
    ds = _load_paths(ds, load, label_mode)
    if batch_size is not None:
        ds = ds.batch(batch_size)
    return ds.prefetch(AUTOTUNE)


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, format="tf",
                                 verbose=True):
    """A :class:`gt.data.Dataset` of ``(images, labels)`` batches from a folder of images
    (``.bmp .gif .jpeg .jpg .png``) with one sub-folder per class, as Keras 3's: Keras' file
    order (sorted index, its seeded NumPy shuffle) and training/validation split, images
    decoded with ``gt.io.decode_image`` (``color_mode`` ``"grayscale"``, ``"rgb"``,
    ``"rgba"``; a GIF's first frame) and resized to ``image_size`` with ``gt.image.resize``
    (``interpolation``; ``crop_to_aspect_ratio`` crops the centred window of the target's
    aspect ratio first, ``pad_to_aspect_ratio`` is ``resize_with_pad``), float32
    ``(batch, h, w, c)`` (channels first with ``data_format="channels_first"``); labels as
    int32 ids, one-hot float32 (``"categorical"``) or float32 ``(n, 1)`` (``"binary"``).
    ``class_names`` and ``file_paths`` are set on the result. Images are read as the
    dataset is iterated; the shuffle of the elements uses gradtape's generator."""
    labels, label_mode = _check_label_args(labels, label_mode, class_names, "image",
                                           "images")
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. '
                         f"Received: color_mode={color_mode}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    elif not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"Invalid `image_size` value. Expected a tuple of 2 integers. "
                         f"Received: image_size={image_size}")
    interpolation = interpolation.lower()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Argument `interpolation` should be one of {_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if format != "tf":
        raise ValueError(f'`format` should be "tf" (gradtape has no grain datasets). '
                         f"Received: format={format}")
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio`, `crop_to_aspect_ratio` can be "
                         "set to `True`.")
    paths, label_array, names, seed = _index_labeled(
        directory, labels, label_mode, _IMAGE_FORMATS, class_names, shuffle, seed,
        validation_split, subset, follow_links, verbose)
    from .keras import backend as _backend
    data_format = _backend.image_data_format() if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f'The `data_format` argument must be one of {{"channels_first", '
                         f'"channels_last"}}. Received: data_format={data_format}')
    image_size = (int(image_size[0]), int(image_size[1]))

    def load(path):
        return _load_image(path, image_size, channels, interpolation, data_format,
                           crop_to_aspect_ratio, pad_to_aspect_ratio)

    buffer = batch_size * 8 if batch_size is not None else 1024
    n_classes = len(names) if names else 0

    def make(part, p, lab):
        if not p:
            what = f"{part} " if subset == "both" else ""
            raise ValueError(f"No {what}images found in directory {directory}. Allowed "
                             f"formats: {_IMAGE_FORMATS}")
        ds = _image_dataset(p, lab, label_mode, n_classes, load,
                            shuffle and part != "validation", buffer, seed, batch_size)
        ds.file_paths = list(p)
        return ds
    return _subset_datasets(paths, label_array, names, validation_split, subset, make)


_PIL_RESAMPLING = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil_image():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("Could not import PIL.Image. Loading and saving images needs "
                          "Pillow: pip install 'gradtape[io]'") from None
    return Image


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """An image file (path, or a file object) as a PIL Image, as ``keras.utils.load_img``:
    converted to ``color_mode`` (``"grayscale"`` keeps 16- and 32-bit grayscale), resized to
    ``target_size`` ``(height, width)`` with Pillow's ``interpolation``, first cropped to the
    centred window of that aspect ratio with ``keep_aspect_ratio``."""
    import io
    import pathlib
    Image = _pil_image()
    if isinstance(path, io.BytesIO):
        img = Image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        if isinstance(path, pathlib.Path):
            path = str(path.resolve())
        with open(path, "rb") as f:
            img = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    if color_mode == "grayscale":
        if img.mode not in ("L", "I;16", "I"):
            img = img.convert("L")
    elif color_mode == "rgba":
        if img.mode != "RGBA":
            img = img.convert("RGBA")
    elif color_mode == "rgb":
        if img.mode != "RGB":
            img = img.convert("RGB")
    else:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if target_size is not None:
        size = (target_size[1], target_size[0])
        if img.size != size:
            if interpolation not in _PIL_RESAMPLING:
                raise ValueError(f"Invalid interpolation method {interpolation} specified. "
                                 f"Supported methods are {', '.join(_PIL_RESAMPLING)}")
            resample = getattr(Image.Resampling, interpolation.upper())
            if keep_aspect_ratio:
                width, height = img.size
                crop_h = min(height, (width * size[1]) // size[0])
                crop_w = min(width, (height * size[0]) // size[1])
                top, left = (height - crop_h) // 2, (width - crop_w) // 2
                img = img.resize(size, resample, box=[left, top, left + crop_w, top + crop_h])
            else:
                img = img.resize(size, resample)
    return img


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Save an image array to a path or file object, as ``keras.utils.save_img``: the
    format from the file's extension unless ``file_format``; ``scale`` maps the values to
    0..255; an RGBA image saved as JPEG becomes RGB (with a warning)."""
    import pathlib
    import warnings
    from .keras import utils as _utils
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = _utils.array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)
