"""``gt.data``: input pipelines, as ``tf.data``.

    ds = (gt.data.Dataset.from_tensor_slices((x_train, y_train))
          .shuffle(10_000, seed=0).batch(128).prefetch(gt.data.AUTOTUNE))
    for x, y in ds:                 # tensors on the device current when the loop starts
        ...

As in TensorFlow, the pipeline runs on the host: sources are NumPy arrays, user functions
(``map``, ``filter``, ``from_generator`` ...) get CPU tensors, and each element reaches the
device current when iteration starts as one upload per component (a batch of slices is
gathered from the sources with one NumPy indexing per component, not element by element).
``prefetch`` prepares elements on a background thread while the training step runs.

Structures follow ``tf.data``: tuples, dicts and namedtuples are structures (a ``map``
function gets a tuple's parts as separate arguments); a Python list is one tensor. Elements
are nests of :class:`~gradtape.Tensor`; ``as_numpy_iterator`` gives NumPy values.
Shuffling draws from NumPy's PCG64 seeded by ``seed`` (or the global seed of
``gt.random.set_seed``), so orders are reproducible here but differ from TensorFlow's.
"""
from __future__ import annotations

import collections
import enum
import itertools
import os
import pickle
import queue
import re
import threading

import numpy as np

from . import nest
from . import random as _random
from .backend import current_device, get_device
from .dtypes import as_dtype
from .errors import InvalidArgumentError
from .tensor import Tensor, TensorShape, TensorSpec, convert_to_tensor

__all__ = ["Dataset", "DatasetSpec", "Iterator", "NumpyIterator", "Optional", "Options",
           "ThreadingOptions", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "experimental", "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
_PREFETCH_AUTOTUNE = 2          # elements a prefetch(AUTOTUNE) keeps ready


_PEEK = threading.local()        # depth > 0 while Dataset._first reads an element


def _peeking() -> bool:
    return getattr(_PEEK, "depth", 0) > 0


class _Host:
    """The CPU device, where pipelines compute (looked up once)."""

    device = None

    @classmethod
    def get(cls):
        if cls.device is None:
            cls.device = get_device("cpu")
        return cls.device


def _on_host(fn, *args):
    """Call a user function with the CPU current, so the tensors it makes are host tensors."""
    from .backend import device_scope
    with device_scope(_Host.get()):
        return fn(*args)


def _row(array, i):
    """Row ``i`` of a host array as an array (a string element stays an object array)."""
    v = array[i]
    if v.__class__ is bytes:
        out = np.empty((), dtype=object)
        out[()] = v
        return out
    return np.asarray(v)


def _host_tensor(value, what, dtype=None) -> Tensor:
    """``value`` as a CPU tensor (TF's dtype inference for Python values; a device tensor is
    downloaded)."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != as_dtype(dtype):
            raise TypeError(f"{what}: expected {as_dtype(dtype).name}, got a "
                            f"{value.dtype.name} tensor")
        if value._device is _Host.get():
            return value
        return Tensor(value.numpy(), _Host.get())
    try:
        return _on_host(convert_to_tensor, value, dtype)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{what}: {exc}") from None


def _structure_of(value):
    """TF's view of a component tree: lists are values (tensors), tuples and dicts nest."""
    if isinstance(value, dict):
        items = [(k, _structure_of(v)) for k, v in value.items()]
        return collections.OrderedDict(items) if isinstance(value, collections.OrderedDict) \
            else dict(items)
    if isinstance(value, tuple):
        if hasattr(value, "_fields"):
            return type(value)(*[_structure_of(v) for v in value])
        return tuple(_structure_of(v) for v in value)
    return _Leaf(value)


class _Leaf:
    """A component of an element tree (so lists stay leaves for gradtape.nest)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _leaves(tree) -> tuple:
    """(structure with None leaves, [leaf values]) of a tree built by _structure_of."""
    flat = nest.flatten(tree)
    return nest.pack_sequence_as(tree, [None] * len(flat)), [leaf.value for leaf in flat]


def _tensors(value, what):
    """A user value (nest of tensors, arrays, numbers, lists) as a nest of CPU tensors."""
    structure, values = _leaves(_structure_of(value))
    return nest.pack_sequence_as(structure, [_host_tensor(v, what) for v in values])


def _call(fn, element):
    """``fn(*element)`` for a tuple element (TF unpacks tuples), else ``fn(element)``."""
    from .backend import DeviceError
    try:
        if type(element) is tuple:
            return _on_host(fn, *element)
        return _on_host(fn, element)
    except DeviceError as exc:
        raise DeviceError(f"{exc}. Functions of a dataset run on the CPU, as tf.data's do: "
                          "make the tensors they close over on the CPU "
                          "(with gt.device('cpu')) or use NumPy values") from None


def _same_structure(a, b, what):
    try:
        nest.assert_same_structure(a, b)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}: the elements do not have the same structure: {exc}") from None


def _spec_of(element):
    return nest.map_structure(lambda t: TensorSpec(tuple(t._value.shape), t.dtype), element)


def _count_arg(value, what) -> int:
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        if value.ndim:
            raise ValueError(f"{what}: expected a scalar, got shape {value.shape}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected an int, got {value!r}")
    return int(value)


class Dataset:
    """A sequence of elements (nests of tensors), iterated afresh by each ``for`` loop.

    Make one with :meth:`from_tensor_slices`, :meth:`from_tensors`, :meth:`range`,
    :meth:`from_generator` or :meth:`zip`, and transform it with the methods below; each
    returns a new dataset and leaves this one as it was.
    """

    # the sliced source every element comes from by index, when there is one: batches of
    # such a dataset are gathered from the source arrays in one indexing per component
    _source = None

    # --- what subclasses define ---------------------------------------------------------------
    def _generate(self):
        """Iterate the elements (nests of CPU tensors), one pass."""
        raise NotImplementedError

    def _indices(self):
        """Iterate the indices into ``_source`` of one pass (when ``_source`` is set)."""
        raise NotImplementedError

    def _index_array(self):
        """The indices of one pass as one NumPy array, where that is cheap (a finite pass of
        a sliced source), else None: batches then slice it instead of counting indices."""
        return None

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _element_spec(self):
        return _spec_of(self._first())

    # --- iteration ----------------------------------------------------------------------------
    def _iter(self):
        if self._source is not None:
            src = self._source
            return (src._element(i) for i in self._indices())
        return self._generate()

    def _first(self):
        """The first element, read for its structure: shuffles do not count it as a pass
        (reading ``element_spec`` leaves the orders of later passes as they were) and
        prefetching starts no thread."""
        _PEEK.depth = getattr(_PEEK, "depth", 0) + 1
        try:
            for element in self._iter():
                return element
        finally:
            _PEEK.depth -= 1
        raise ValueError(f"{type(self).__name__}: the dataset is empty, so the structure of "
                         "its elements is unknown")

    def __iter__(self):
        dev = current_device()
        elements = self._iter()
        if dev is not _Host.get():
            elements = _Delivery(elements, dev)
        return Iterator(self, elements)

    def as_numpy_iterator(self) -> "NumpyIterator":
        """Iterate the elements as nests of NumPy values (0-d ones as NumPy scalars)."""
        return NumpyIterator(self._iter())

    def __bool__(self):
        return True

    def __len__(self):
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def cardinality(self) -> Tensor:
        """The number of elements as an int64 scalar: ``INFINITE_CARDINALITY`` (-1) for an
        endless dataset, ``UNKNOWN_CARDINALITY`` (-2) when it cannot be told without
        iterating (after ``filter``, ``from_generator``, ``unbatch`` ...)."""
        dev = current_device()
        return Tensor(dev.asarray(np.asarray(self._cardinality(), np.int64)), dev)

    @property
    def element_spec(self):
        """The structure of an element, with a :class:`TensorSpec` per component (``None``
        for a size that varies, such as the last batch's)."""
        return self._element_spec()

    def __repr__(self):
        try:
            spec = self.element_spec
        except Exception:       # an empty dataset, a failing user function: no spec
            spec = "?"
        return f"<{type(self).__name__} element_spec={spec}>"

    # --- sources ------------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None) -> "Dataset":
        """One element per row of the components (which must share their first size)."""
        return _Slices(tensors)

    @staticmethod
    def from_tensors(tensors, name=None) -> "Dataset":
        """A dataset of one element: ``tensors``."""
        return _FromTensors(tensors)

    @staticmethod
    def range(*args, output_type=None, dtype=None, name=None) -> "Dataset":
        """``range(stop)``, ``range(start, stop[, step])`` as scalars of ``output_type``
        (int64 by default; ``dtype`` is accepted too)."""
        return _Range(args, output_type or dtype or "int64")

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None, name=None) -> "Dataset":
        """An endless stream of random int64 scalars (``tf.data.Dataset.random``): the same
        stream each pass for a given ``seed`` unless ``rerandomize_each_iteration``."""
        return _RandomStream(seed, bool(rerandomize_each_iteration))

    @staticmethod
    def counter(start=0, step=1, dtype="int64", name=None) -> "Dataset":
        """``start, start + step, ...`` without end, as scalars of ``dtype``."""
        return _Counter(start, step, dtype)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None) -> "Dataset":
        """Elements drawn from ``datasets`` at random with probabilities ``weights``
        (uniform by default); when one ends it is dropped from the draw (or, with
        ``stop_on_empty_dataset``, the whole dataset ends). One dataset: itself."""
        if isinstance(datasets, (list, tuple)) and len(datasets) == 1 and \
                isinstance(datasets[0], Dataset):
            return datasets[0]
        return _Sample(datasets, weights, seed, stop_on_empty_dataset)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True) -> "Dataset":
        """The next element of ``datasets[i]`` for each ``i`` of ``choice_dataset`` (int64
        scalars)."""
        return _Choose(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None) -> "Dataset":
        """The values ``generator(*args)`` yields (called afresh for each pass), each checked
        against ``output_signature`` (a nest of :class:`TensorSpec`), or converted to
        ``output_types`` and checked against ``output_shapes``."""
        return _FromGenerator(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def zip(*args, datasets=None, name=None) -> "Dataset":
        """Elements of several datasets side by side (a tuple, or the nest given), until the
        shortest ends: ``Dataset.zip((a, b))``, ``Dataset.zip(a, b)`` or
        ``Dataset.zip(datasets=(a, b))``."""
        if args and datasets is not None:
            raise TypeError("Dataset.zip: Both `*args` and `datasets` cannot be set.")
        if datasets is None:
            if not args:
                raise TypeError("Dataset.zip: Must pass at least one dataset to `zip`.")
            # a structure of datasets (or one: its elements)
            datasets = args[0] if len(args) == 1 else args
        return _Zip(datasets)

    # --- transformations ----------------------------------------------------------------------
    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None) -> "Dataset":
        """Stack ``batch_size`` consecutive elements (the last batch may be smaller unless
        ``drop_remainder``)."""
        return _Batch(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None) -> "Dataset":
        """Batch elements whose sizes differ, padding each component at the end of each axis
        to ``padded_shapes`` (``None`` or -1 sizes: the batch's largest) with
        ``padding_values`` (0 by default)."""
        return _Batch(self, batch_size, drop_remainder, padded=(padded_shapes, padding_values))

    def unbatch(self, name=None) -> "Dataset":
        """Split each element along its first axis (the inverse of ``batch``)."""
        return _Unbatch(self)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, synchronous=None,
            use_unbounded_threadpool=False, name=None) -> "Dataset":
        """``map_func(element)`` for each element (``map_func(*element)`` for a tuple)."""
        return _Map(self, map_func)

    def filter(self, predicate, name=None) -> "Dataset":
        """The elements for which ``predicate`` gives a true scalar."""
        return _Filter(self, predicate)

    def flat_map(self, map_func, name=None) -> "Dataset":
        """The elements of the datasets ``map_func`` makes of each element, in order."""
        return _FlatMap(self, map_func)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True,
                name=None) -> "Dataset":
        """Elements in random order, drawn from a buffer of ``buffer_size`` elements as
        ``tf.data`` does (a buffer as large as the dataset gives a uniform permutation); a new
        order each pass unless ``reshuffle_each_iteration=False``."""
        return _Shuffle(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None, name=None) -> "Dataset":
        """The dataset ``count`` times over (``None`` or -1: without end)."""
        return _Repeat(self, count)

    def take(self, count, name=None) -> "Dataset":
        """The first ``count`` elements (-1: all)."""
        return _Take(self, count)

    def skip(self, count, name=None) -> "Dataset":
        """All but the first ``count`` elements (-1: none)."""
        return _Skip(self, count)

    def shard(self, num_shards, index, name=None) -> "Dataset":
        """Every ``num_shards``-th element, from element ``index``."""
        return _Shard(self, num_shards, index)

    def enumerate(self, start=0, name=None) -> "Dataset":
        """``(i, element)`` pairs, ``i`` an int64 scalar from ``start``."""
        return _Enumerate(self, start)

    def concatenate(self, dataset, name=None) -> "Dataset":
        """This dataset's elements, then ``dataset``'s (of the same structure and dtypes)."""
        return _Concatenate(self, dataset)

    def prefetch(self, buffer_size, name=None) -> "Dataset":
        """Prepare up to ``buffer_size`` elements (``AUTOTUNE``: a few) on a background
        thread while the consumer works; 0 prepares none ahead."""
        return _Prefetch(self, buffer_size)

    def cache(self, filename="", name=None) -> "Dataset":
        """Keep the elements of the first complete pass (in memory, or in ``filename``, which
        later passes and later programs read) and replay them."""
        return _Cache(self, filename)

    def window(self, size, shift=None, stride=1, drop_remainder=False,
               name=None) -> "Dataset":
        """Windows of ``size`` elements (every ``stride``-th), a new one every ``shift``
        elements (``size`` by default); each window is the element structure with a dataset
        per component, as tf.data (``ds.window(5, 1, drop_remainder=True).flat_map(lambda w:
        w.batch(5))``)."""
        return _Window(self, size, shift, stride, drop_remainder)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None) -> "Dataset":
        """The datasets ``map_func`` makes of the elements, interleaved: ``cycle_length`` of
        them open at once, ``block_length`` elements taken from each in turn (tf.data's
        deterministic order)."""
        return _Interleave(self, map_func, cycle_length, block_length)

    def scan(self, initial_state, scan_func, name=None) -> "Dataset":
        """``(state, out) = scan_func(state, element)`` over the elements; the ``out``s."""
        return _Scan(self, initial_state, scan_func)

    def unique(self, name=None) -> "Dataset":
        """The elements (integer scalars) without repeats, in order of first appearance."""
        return _Unique(self)

    def rebatch(self, batch_size, drop_remainder=False, name=None) -> "Dataset":
        """The batched elements re-cut into batches of ``batch_size``."""
        return _Batch(_Unbatch(self), batch_size, drop_remainder)

    def get_single_element(self, name=None):
        """The dataset's only element (an error when it has none or more than one)."""
        it = iter(self)
        try:
            element = next(it)
        except StopIteration:
            raise InvalidArgumentError("Dataset.get_single_element: the dataset is "
                                       "empty") from None
        for _ in it:
            raise InvalidArgumentError("Dataset.get_single_element: the dataset has more "
                                       "than one element")
        return element

    def take_while(self, predicate, name=None) -> "Dataset":
        """Elements up to (not including) the first for which ``predicate`` is false."""
        return _TakeWhile(self, predicate)

    def reduce(self, initial_state, reduce_func, name=None):
        """Fold the elements: ``state = reduce_func(state, element)`` from
        ``initial_state``; returns the final state."""
        state = _tensors(initial_state, "Dataset.reduce")
        for element in self._iter():
            state = _tensors(_on_host(reduce_func, state, element), "Dataset.reduce")
        dev = current_device()
        return state if dev is _Host.get() else _deliver(state, dev)

    def group_by_window(self, key_func, reduce_func, window_size=None,
                        window_size_func=None, name=None) -> "Dataset":
        """Group the elements by ``key_func(element)`` (an int64 scalar); each time a group
        holds ``window_size`` elements (or ``window_size_func(key)``), the elements of the
        dataset ``reduce_func(key, group_dataset)``. At the end, the groups left over, in
        increasing key order."""
        return _GroupByWindow(self, key_func, reduce_func, window_size, window_size_func)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None,
                                  padding_values=None, pad_to_bucket_boundary=False,
                                  no_padding=False, drop_remainder=False,
                                  name=None) -> "Dataset":
        """Batches of elements of similar length: an element of length
        ``element_length_func(element)`` goes to the bucket ``i`` with
        ``bucket_boundaries[i-1] <= length < bucket_boundaries[i]``, whose batches have
        ``bucket_batch_sizes[i]`` elements, padded as :meth:`padded_batch` (to the batch's
        longest, or with ``pad_to_bucket_boundary`` to ``bucket_boundaries[i] - 1``) unless
        ``no_padding``."""
        return _bucket_by_sequence_length(
            self, element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)

    def save(self, path, compression=None, shard_func=None, checkpoint_args=None) -> None:
        """Write one complete pass (the elements and their spec) to the directory ``path``,
        in gradtape's format (``compression="GZIP"`` compresses it), for :meth:`load`."""
        _save(self, path, compression)

    @staticmethod
    def load(path, element_spec=None, compression=None, reader_func=None,
             wait=False) -> "Dataset":
        """The dataset :meth:`save` wrote to the directory ``path`` (its elements read
        into memory); ``element_spec``, when given, must match the saved one."""
        return _load(path, element_spec)

    def apply(self, transformation_func) -> "Dataset":
        """``transformation_func(self)``, which must return a dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.apply: the function returned {type(out).__name__}, "
                            "not a Dataset")
        return out

    def with_options(self, options, name=None) -> "Dataset":
        """This dataset with ``options`` (a :class:`Options`) set on it, merged over those
        of its inputs (read back with :meth:`options`). They are kept for TensorFlow
        scripts: gradtape's pipelines are deterministic and need no tuning, so none of
        them changes the elements."""
        if not isinstance(options, Options):
            raise TypeError(f"Dataset.with_options: expected a gt.data.Options, got "
                            f"{type(options).__name__}")
        return _WithOptions(self, options)

    def options(self) -> "Options":
        """The options of this dataset: those set with :meth:`with_options` on it and on
        the datasets it is made from (the later ones win)."""
        merged = Options()
        for parent in self._inputs():
            merged = merged.merge(parent.options())
        return merged

    def _inputs(self) -> list:
        """The datasets this one reads (for options)."""
        return []


class _OptionsBase:
    """A group of options, as ``tf.data``'s: a fixed set of properties, each at its default
    (mostly ``None``) until set; setting an unknown one, or one of the wrong type, is an
    error. Merging takes the properties the other group sets."""

    _fields = {}        # name: (type or tuple of types, factory of the default or None)
    _aliases = {}       # another name: name

    def __init__(self):
        # the properties set, and the groups nested in this one
        object.__setattr__(self, "_values", {
            name: kind() for name, (kind, _) in self._fields.items()
            if isinstance(kind, type) and issubclass(kind, _OptionsBase)})

    def __getattr__(self, name):
        values = self.__dict__.get("_values")
        key = self._aliases.get(name, name)
        if values is None or key not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no property {name!r}")
        if key in values:
            return values[key]
        default = self._fields[key][1]
        return default() if default is not None else None

    def __setattr__(self, name, value):
        key = self._aliases.get(name, name)
        if key not in self._fields:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        kind = self._fields[key][0]
        if value is not None and not (isinstance(value, kind) and not (
                isinstance(value, bool) and kind is int)):
            raise TypeError(f'Property "{name}" must be of type {kind}, got: {value!r} '
                            f"(type: {type(value)})")
        self._values[key] = value

    def __eq__(self, other):
        return type(other) is type(self) and other._values == self._values

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def _merged(self, other):
        """A copy with every property ``other`` sets taken from ``other``."""
        out = type(self)()
        for key in self._fields:
            mine, theirs = self._values.get(key, _UNSET), other._values.get(key, _UNSET)
            if isinstance(mine, _OptionsBase):
                out._values[key] = mine._merged(theirs)
            elif theirs is not _UNSET:
                out._values[key] = theirs
            elif mine is not _UNSET:
                out._values[key] = mine
        return out

    def __repr__(self):
        return f"{type(self).__name__}({self._values})"


_UNSET = object()


class AutoShardPolicy(enum.IntEnum):
    """How a distributed dataset would be split between workers
    (``tf.data.experimental.AutoShardPolicy``); kept in the options, unused here."""
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.IntEnum):
    """``tf.data.experimental.ExternalStatePolicy`` (kept in the options)."""
    WARN = 0
    IGNORE = 1
    FAIL = 2


class AutotuneAlgorithm(enum.IntEnum):
    """``tf.data.experimental.AutotuneAlgorithm`` (kept in the options)."""
    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


class ThreadingOptions(_OptionsBase):
    """``tf.data.ThreadingOptions``: thread pool sizes."""

    _fields = {"max_intra_op_parallelism": (int, None), "private_threadpool_size": (int, None)}


class AutotuneOptions(_OptionsBase):
    """``tf.data.experimental.AutotuneOptions``."""

    _fields = {"autotune_algorithm": (AutotuneAlgorithm, None), "cpu_budget": (int, None),
               "enabled": (bool, None), "initial_parallelism": (int, None),
               "min_parallelism": (int, None), "ram_budget": (int, None)}


class DistributeOptions(_OptionsBase):
    """``tf.data.experimental.DistributeOptions``."""

    _fields = {"auto_shard_policy": (AutoShardPolicy, lambda: AutoShardPolicy.AUTO),
               "num_devices": (int, None)}


class OptimizationOptions(_OptionsBase):
    """``tf.data.experimental.OptimizationOptions``: graph rewrites tf.data may make."""

    _fields = {name: (bool, None) for name in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization",
        "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
        "map_parallelization", "noop_elimination", "parallel_batch",
        "seq_interleave_prefetch", "shuffle_and_repeat_fusion")}


class ServiceOptions(_OptionsBase):
    """``tf.data.experimental.ServiceOptions``."""

    _fields = {"pinned": (bool, None)}


class Options(_OptionsBase):
    """``tf.data.Options``: the options of a dataset (``ds.with_options(options)``), in
    tf.data's groups (``options.threading.private_threadpool_size = 8``,
    ``options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA`` ...).
    They are kept, merged and read back as in TensorFlow; gradtape's pipelines are
    deterministic and need no tuning, so none of them changes the elements."""

    _fields = {
        "autotune": (AutotuneOptions, None),
        "dataset_name": (str, None),
        "deterministic": (bool, None),
        "experimental_distribute": (DistributeOptions, None),
        "experimental_external_state_policy": (ExternalStatePolicy, None),
        "experimental_optimization": (OptimizationOptions, None),
        "experimental_service": (ServiceOptions, None),
        "experimental_slack": (bool, None),
        "experimental_symbolic_checkpoint": (bool, None),
        "experimental_warm_start": (bool, None),
        "framework_type": (list, None),
        "threading": (ThreadingOptions, None),
    }
    _aliases = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}

    def merge(self, options) -> "Options":
        """A new Options: these, with every option that ``options`` sets taken from it."""
        if not isinstance(options, Options):
            raise TypeError(f"Options.merge: expected a gt.data.Options, got "
                            f"{type(options).__name__}")
        return self._merged(options)


class DatasetSpec:
    """The spec of a dataset-valued component, such as each component of a ``window``
    (``tf.data.DatasetSpec``): the ``element_spec`` of its elements, and the shape of the
    dataset value (``[]``: one dataset)."""

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = TensorShape(dataset_shape)

    @property
    def element_spec(self):
        return self._element_spec

    @property
    def shape(self) -> TensorShape:
        return self._dataset_shape

    @property
    def value_type(self):
        return Dataset

    @staticmethod
    def from_value(value) -> "DatasetSpec":
        """The spec of a dataset."""
        if not isinstance(value, Dataset):
            raise TypeError(f"DatasetSpec.from_value: expected a Dataset, got "
                            f"{type(value).__name__}")
        return DatasetSpec(value.element_spec)

    def is_compatible_with(self, other) -> bool:
        if isinstance(other, Dataset):
            other = DatasetSpec.from_value(other)
        if not isinstance(other, DatasetSpec):
            return False
        try:
            nest.assert_same_structure(self._element_spec, other._element_spec)
        except (TypeError, ValueError):
            return False
        return self._dataset_shape.is_compatible_with(other._dataset_shape) and all(
            a.is_compatible_with(b) for a, b in zip(nest.flatten(self._element_spec),
                                                    nest.flatten(other._element_spec)))

    def __eq__(self, other):
        return (isinstance(other, DatasetSpec) and self._element_spec == other._element_spec
                and self._dataset_shape == other._dataset_shape)

    def __hash__(self):
        return hash((DatasetSpec, str(self._element_spec), str(self._dataset_shape)))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, {self._dataset_shape!r})"


class NumpyIterator:
    """What ``as_numpy_iterator()`` gives (``tf.data.NumpyIterator``): the elements as nests
    of NumPy values, 0-d ones as NumPy scalars."""

    __slots__ = ("_elements",)

    def __init__(self, elements):
        self._elements = elements

    def __iter__(self):
        return self

    def __next__(self):
        return nest.map_structure(_numpy_value, next(self._elements))

    def next(self):
        return self.__next__()


def _numpy_value(t):
    if isinstance(t, Dataset):
        raise TypeError("Dataset.as_numpy_iterator() is not supported for datasets "
                        "that produce values of type Dataset (such as the windows of "
                        "Dataset.window): flat_map them first")
    a = t._value
    return a[()] if a.ndim == 0 else a


def _deliver(element, dev):
    # (string tensors stay on the host, as TF places its string kernels on the CPU)
    return nest.map_structure(lambda t: t if t._value.dtype.kind == "O" else
                              Tensor(dev.asarray(t._value), dev), element)


class Iterator:
    """What ``iter(dataset)`` gives (``tf.data.Iterator``): ``next(it)``, or TF's
    ``it.get_next()`` (``OutOfRangeError`` at the end) and ``it.get_next_as_optional()``."""

    __slots__ = ("_dataset", "_elements")

    def __init__(self, dataset, elements):
        self._dataset = dataset
        self._elements = elements

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._elements)

    def get_next(self, name=None):
        try:
            return next(self._elements)
        except StopIteration:
            from .errors import OutOfRangeError
            raise OutOfRangeError(None, None, "End of sequence") from None

    def get_next_as_optional(self) -> "Optional":
        try:
            return Optional.from_value(next(self._elements))
        except StopIteration:
            return Optional.empty(self._dataset.element_spec)

    @property
    def element_spec(self):
        return self._dataset.element_spec


class Optional:
    """A value that may be missing (``tf.experimental.Optional``)."""

    __slots__ = ("_value", "_has", "_spec")

    def __init__(self, value, has, spec):
        self._value, self._has, self._spec = value, has, spec

    @staticmethod
    def from_value(value) -> "Optional":
        return Optional(value, True, None)

    @staticmethod
    def empty(element_spec) -> "Optional":
        return Optional(None, False, element_spec)

    def has_value(self, name=None) -> Tensor:
        """A bool scalar (on the current device)."""
        dev = current_device()
        return Tensor(dev.asarray(np.asarray(self._has)), dev)

    def get_value(self, name=None):
        if not self._has:
            from .errors import InvalidArgumentError
            raise InvalidArgumentError("Optional.get_value: the optional does not have a value")
        return self._value

    @property
    def element_spec(self):
        return self._spec if not self._has else _spec_of(self._value)

    def __repr__(self):
        return f"<Optional has_value={self._has}>"


class _Delivery:
    """Elements moved to a device: one upload per component, in the consumer's thread."""

    def __init__(self, elements, dev):
        self._elements = elements
        self._dev = dev

    def __iter__(self):
        return self

    def __next__(self):
        return _deliver(next(self._elements), self._dev)


# --- sources ------------------------------------------------------------------------------------

class _Slices(Dataset):
    def __init__(self, tensors):
        structure, values = _leaves(_structure_of(tensors))
        if not values:
            raise ValueError("Dataset.from_tensor_slices: no components given")
        # copies, as TF's constants: the dataset does not change with the caller's arrays
        comps = [np.array(_host_tensor(v, "Dataset.from_tensor_slices")._value, copy=True)
                 for v in values]
        for i, c in enumerate(comps):
            if c.ndim == 0:
                raise ValueError(f"Dataset.from_tensor_slices: component {i} is a scalar; "
                                 "each component needs at least one axis to slice")
        sizes = [c.shape[0] for c in comps]
        if len(set(sizes)) > 1:
            raise ValueError(f"Dataset.from_tensor_slices: the components' first sizes "
                             f"differ: {sizes} (every component is sliced along its first "
                             "axis)")
        self._structure = structure
        self._arrays = comps
        self._n = sizes[0]
        self._source = self

    def _indices(self):
        return iter(range(self._n))

    def _index_array(self):
        return np.arange(self._n)

    def _element(self, i):
        host = _Host.get()
        return nest.pack_sequence_as(self._structure,
                                     [Tensor(_row(a, i), host) for a in self._arrays])

    def _gather(self, idx):
        host = _Host.get()
        ix = np.asarray(idx, np.intp)
        if len(ix) and ix[-1] - ix[0] == len(ix) - 1 and (len(ix) == 1 or
                                                          (np.diff(ix) == 1).all()):
            sl = slice(int(ix[0]), int(ix[-1]) + 1)   # consecutive rows: views, no copy
            parts = [a[sl] for a in self._arrays]
        else:
            parts = [a[ix] for a in self._arrays]
        return nest.pack_sequence_as(self._structure, [Tensor(p, host) for p in parts])

    def _cardinality(self):
        return self._n

    def _element_spec(self):
        return nest.pack_sequence_as(
            self._structure,
            [TensorSpec(a.shape[1:], as_dtype(a.dtype)) for a in self._arrays])


class _FromTensors(Dataset):
    def __init__(self, tensors):
        self._element_value = _tensors(tensors, "Dataset.from_tensors")

    def _generate(self):
        yield self._element_value

    def _cardinality(self):
        return 1

    def _element_spec(self):
        return _spec_of(self._element_value)


class _Range(Dataset):
    def __init__(self, args, dtype):
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Dataset.range: takes 1 to 3 arguments (stop, or start, stop[, "
                             f"step]), got {len(args)}")
        args = [_count_arg(a, "Dataset.range") for a in args]
        if len(args) == 3 and args[2] == 0:
            raise InvalidArgumentError("Dataset.range: step must not be 0")
        self._range = range(*args)
        self._dtype = as_dtype(dtype)
        if self._dtype.name not in ("int32", "int64", "float32", "float64", "int16", "int8",
                                    "uint8"):
            raise TypeError(f"Dataset.range: dtype must be numeric, got {self._dtype.name}")

    def _generate(self):
        host = _Host.get()
        np_type = np.dtype(self._dtype.name).type
        for v in self._range:
            yield Tensor(np.asarray(np_type(v)), host)

    def _cardinality(self):
        return len(self._range)

    def _element_spec(self):
        return TensorSpec((), self._dtype)


class _FromGenerator(Dataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError(f"Dataset.from_generator: generator must be callable (a generator "
                            f"function), got {type(generator).__name__}")
        if output_signature is not None and (output_types is not None
                                             or output_shapes is not None):
            raise TypeError("Dataset.from_generator: give output_signature, or output_types "
                            "(and output_shapes), not both")
        if output_signature is None and output_types is None:
            raise TypeError("Dataset.from_generator: give output_signature (a nest of "
                            "gt.TensorSpec) or output_types")
        if output_signature is None:
            types = output_types
            t_struct, t_flat = _leaves(_structure_of(types))
            if output_shapes is None:
                shapes = [None] * len(t_flat)
            else:
                s_struct, shapes = _leaves(_shape_structure(output_shapes))
                _same_structure(t_struct, s_struct, "Dataset.from_generator")
            specs = [TensorSpec(_shape_list(s), t) if s is not None else _AnyShape(t)
                     for t, s in zip(t_flat, shapes)]
            self._structure = t_struct
            self._specs = specs
        else:
            flat = nest.flatten(output_signature)
            for s in flat:
                if not isinstance(s, TensorSpec):
                    raise TypeError(f"Dataset.from_generator: output_signature must be a nest "
                                    f"of gt.TensorSpec, got {type(s).__name__}")
            self._structure = nest.pack_sequence_as(output_signature, [None] * len(flat))
            self._specs = flat
        self._generator = generator
        self._args = tuple(args) if args is not None else ()

    def _generate(self):
        what = "Dataset.from_generator"
        for value in self._generator(*self._args):
            structure, values = _leaves(_structure_of(value))
            if len(values) != len(self._specs):
                raise TypeError(f"{what}: the generator yielded {len(values)} components, the "
                                f"signature has {len(self._specs)}")
            if len(self._specs) > 1:
                _same_structure(structure, self._structure, what)
            out = []
            for i, (v, spec) in enumerate(zip(values, self._specs)):
                t = _generated(v, f"{what} component {i}", spec.dtype)
                if not spec.is_compatible_with(t):
                    raise ValueError(f"{what}: component {i} has shape "
                                     f"{tuple(t._value.shape)}, the signature says "
                                     f"{spec.shape}")
                out.append(t)
            yield nest.pack_sequence_as(self._structure, out)

    def _element_spec(self):
        if any(isinstance(s, _AnyShape) for s in self._specs):
            # shapes not given: the first element's ranks, every size unknown
            first = nest.flatten(self._first())
            return nest.pack_sequence_as(self._structure, [
                TensorSpec([None] * t._value.ndim, s.dtype) if isinstance(s, _AnyShape) else s
                for s, t in zip(self._specs, first)])
        return nest.pack_sequence_as(self._structure, self._specs)


def _generated(value, what, dtype) -> Tensor:
    """A value a generator yielded, as a CPU tensor of ``dtype``: NumPy values and Python
    numbers are cast as NumPy casts them (as tf.data: float64 arrays become float32, floats
    become ints by truncation); a tensor must have the dtype already."""
    if isinstance(value, Tensor) or isinstance(value, (str, bytes)):
        return _host_tensor(value, what, dtype)
    try:
        a = np.asarray(value)
    except ValueError as exc:          # a ragged list
        raise TypeError(f"{what}: {exc}") from None
    if a.dtype.kind in "USO":
        return _host_tensor(a, what, dtype)
    return Tensor(np.array(a, dtype=as_dtype(dtype).as_numpy_dtype), _Host.get())


def _is_shape(value) -> bool:
    return isinstance(value, TensorShape) or (
        isinstance(value, (list, tuple)) and not hasattr(value, "_fields")
        and all(d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
                for d in value))


def _shape_structure(shapes):
    """A nest of shapes as _structure_of builds it: a list or tuple of sizes is one shape."""
    if _is_shape(shapes) or shapes is None or isinstance(shapes, (int, np.integer)):
        return _Leaf(shapes)
    if isinstance(shapes, dict):
        return {k: _shape_structure(v) for k, v in shapes.items()}
    if isinstance(shapes, tuple) and hasattr(shapes, "_fields"):
        return type(shapes)(*[_shape_structure(v) for v in shapes])
    return tuple(_shape_structure(v) for v in shapes)


def _shape_list(shape):
    if isinstance(shape, TensorShape):
        return shape.as_list()
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    return [None if d is None or d == -1 else int(d) for d in shape]


class _AnyShape:
    """A from_generator component of a dtype and any shape (output_types, no shapes)."""

    def __init__(self, dtype):
        self.dtype = as_dtype(dtype)

    def is_compatible_with(self, t):
        return True


class _Zip(Dataset):
    def __init__(self, datasets):
        structure, flat = _leaves(_structure_of(datasets))
        for d in flat:
            if not isinstance(d, Dataset):
                raise TypeError(f"Dataset.zip: expected datasets, got {type(d).__name__}")
        self._structure = structure
        self._datasets = flat

    def _generate(self):
        for parts in zip(*(d._iter() for d in self._datasets)):
            yield nest.pack_sequence_as(self._structure, list(parts))

    def _inputs(self):
        return list(self._datasets)

    def _cardinality(self):
        cards = [d._cardinality() for d in self._datasets]
        if UNKNOWN_CARDINALITY in cards:
            return UNKNOWN_CARDINALITY
        finite = [c for c in cards if c >= 0]
        return min(finite) if finite else INFINITE_CARDINALITY

    def _element_spec(self):
        return nest.pack_sequence_as(self._structure,
                                     [d._element_spec() for d in self._datasets])


# --- transformations ----------------------------------------------------------------------------

class _Unary(Dataset):
    """A transformation of one dataset; index-preserving ones keep the parent's source."""

    index_preserving = False

    def __init__(self, parent):
        if not isinstance(parent, Dataset):
            raise TypeError(f"expected a Dataset, got {type(parent).__name__}")
        self._parent = parent
        if self.index_preserving:
            self._source = parent._source

    def _element_spec(self):
        return self._parent._element_spec()

    def _cardinality(self):
        return self._parent._cardinality()

    def _inputs(self):
        return [self._parent]


class _WithOptions(_Unary):
    index_preserving = True

    def __init__(self, parent, options):
        super().__init__(parent)
        self._options = options

    def _indices(self):
        return self._parent._indices()

    def _index_array(self):
        return self._parent._index_array()

    def _generate(self):
        return self._parent._iter()

    def options(self):
        return self._parent.options().merge(self._options)


def _stack(elements, what, padded=None):
    """Stack a list of elements (nests of CPU tensors) into one batch element."""
    first = elements[0]
    for e in elements[1:]:
        _same_structure(first, e, what)
    flats = [nest.flatten(e) for e in elements]
    host = _Host.get()
    if padded is not None:
        shapes, values = padded
    out = []
    for c in range(len(flats[0])):
        arrays = [f[c]._value for f in flats]
        dtypes = {a.dtype for a in arrays}
        if len(dtypes) > 1:
            raise TypeError(f"{what}: component {c} has dtypes {sorted(map(str, dtypes))} "
                            "in one batch")
        if padded is None:
            shape = arrays[0].shape
            for j, a in enumerate(arrays):
                if a.shape != shape:
                    raise InvalidArgumentError(
                        f"{what}: cannot batch tensors of different shapes in component {c}: "
                        f"the first element has shape {list(shape)}, element {j} has shape "
                        f"{list(a.shape)} (use padded_batch, or make them the same size)")
            out.append(Tensor(np.stack(arrays), host))
        else:
            out.append(Tensor(_pad_stack(arrays, shapes[c], values[c], what, c), host))
    return nest.pack_sequence_as(first, out)


def _pad_stack(arrays, target, value, what, c):
    ndim = arrays[0].ndim
    for j, a in enumerate(arrays):
        if a.ndim != ndim:
            raise ValueError(f"{what}: component {c} has rank {ndim} in the first element and "
                             f"{a.ndim} in element {j}")
    biggest = [max(a.shape[d] for a in arrays) for d in range(ndim)]
    if target is None:
        dims = biggest
    else:
        if len(target) != ndim:
            raise ValueError(f"{what}: padded shape {list(target)} of component {c} has "
                             f"{len(target)} sizes, the component rank {ndim}")
        dims = []
        for d, (t, b) in enumerate(zip(target, biggest)):
            if t is None or t == -1:
                dims.append(b)
            elif b > t:
                raise ValueError(f"{what}: component {c} has size {b} on axis {d}, more than "
                                 f"its padded size {t}")
            else:
                dims.append(int(t))
    if arrays[0].dtype.kind == "O":          # strings pad with b"" (or the given text)
        value = value.encode() if isinstance(value, str) else (
            value if isinstance(value, bytes) else b"")
    out = np.full([len(arrays)] + dims, value, dtype=arrays[0].dtype)
    for j, a in enumerate(arrays):
        out[(j,) + tuple(slice(0, s) for s in a.shape)] = a
    return out


class _Batch(_Unary):
    def __init__(self, parent, batch_size, drop_remainder, padded=None):
        super().__init__(parent)
        what = "Dataset.padded_batch" if padded is not None else "Dataset.batch"
        self._what = what
        self._size = _count_arg(batch_size, what)
        if self._size <= 0:
            raise InvalidArgumentError(f"{what}: batch_size must be positive, got "
                                       f"{self._size}")
        self._drop = bool(drop_remainder)
        self._padded = None
        if padded is not None:
            spec = parent._element_spec()
            structure, specs = _leaves(_structure_of(spec))
            n = len(specs)
            shapes, values = padded
            if shapes is None:
                shapes = [None] * n
            else:
                s_struct, shapes = _leaves(_shape_structure(shapes))
                _same_structure(structure, s_struct, what)
                shapes = [None if s is None else _shape_list(s) for s in shapes]
            if values is None:
                values = [0] * n
            else:
                v_struct, values = _leaves(_structure_of(values))
                if len(values) == 1 and n > 1:
                    values = values * n
                else:
                    _same_structure(structure, v_struct, what)
            values = [v.numpy() if isinstance(v, Tensor) else v for v in values]
            self._padded = (shapes, values)

    def _generate(self):
        size, parent = self._size, self._parent
        src = parent._source
        if src is not None and self._padded is None:
            order = parent._index_array()
            if order is not None:
                stop = len(order) - len(order) % size if self._drop else len(order)
                for start in range(0, stop, size):
                    yield src._gather(order[start:start + size])
                return
            idx = parent._indices()
            while True:
                chunk = list(itertools.islice(idx, size))
                if not chunk or (self._drop and len(chunk) < size):
                    return
                yield src._gather(chunk)
        elements = parent._iter()
        while True:
            chunk = list(itertools.islice(elements, size))
            if not chunk or (self._drop and len(chunk) < size):
                return
            yield _stack(chunk, self._what, self._padded)

    def _cardinality(self):
        n = self._parent._cardinality()
        if n < 0:
            return n
        return n // self._size if self._drop else -(-n // self._size)

    def _element_spec(self):
        lead = self._size if self._drop else None
        spec = self._parent._element_spec()
        if self._padded is None:
            return nest.map_structure(
                lambda s: TensorSpec([lead] + s.shape.as_list(), s.dtype), spec)
        structure, specs = _leaves(_structure_of(spec))
        shapes = self._padded[0]
        out = []
        for s, target in zip(specs, shapes):
            rank = len(s.shape.as_list())
            dims = [None] * rank if target is None else \
                [None if d is None or d == -1 else d for d in target]
            out.append(TensorSpec([lead] + dims, s.dtype))
        return nest.pack_sequence_as(structure, out)


class _Unbatch(_Unary):
    def _generate(self):
        host = _Host.get()
        for element in self._parent._iter():
            flat = nest.flatten(element)
            sizes = {t._value.shape[0] if t._value.ndim else None for t in flat}
            if None in sizes:
                raise ValueError("Dataset.unbatch: a component is a scalar; every component "
                                 "needs a first axis to split")
            if len(sizes) > 1:
                raise ValueError(f"Dataset.unbatch: the components' first sizes differ: "
                                 f"{sorted(sizes)}")
            for i in range(sizes.pop()):
                yield nest.pack_sequence_as(element, [Tensor(np.asarray(t._value[i]), host)
                                                      for t in flat])

    def _cardinality(self):
        n = self._parent._cardinality()
        return INFINITE_CARDINALITY if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY

    def _element_spec(self):
        return nest.map_structure(lambda s: TensorSpec(s.shape.as_list()[1:], s.dtype),
                                  self._parent._element_spec())


class _Map(_Unary):
    def __init__(self, parent, fn, spec=None):
        super().__init__(parent)
        if not callable(fn):
            raise TypeError(f"Dataset.map: map_func must be callable, got {type(fn).__name__}")
        self._fn = fn
        self._spec = spec       # the element spec when the maker knows it (else read)

    def _out(self, element):
        out = _call(self._fn, element)
        if type(out) is list:
            out = tuple(out)        # as tf.data: a list returned by map_func is a tuple
        return _tensors(out, "Dataset.map")

    def _generate(self):
        for element in self._parent._iter():
            yield self._out(element)

    def _element_spec(self):
        if self._spec is not None:
            return self._spec
        return _spec_of(self._out(self._parent._first()))


def _truth(value, what) -> bool:
    t = _host_tensor(value, what)
    if t._value.ndim != 0 or t._value.dtype != np.bool_:
        raise TypeError(f"{what}: the predicate must return a bool scalar, got "
                        f"{t.dtype.name} of shape {tuple(t._value.shape)}")
    return bool(t._value)


class _Filter(_Unary):
    def __init__(self, parent, predicate):
        super().__init__(parent)
        self._predicate = predicate

    def _generate(self):
        for element in self._parent._iter():
            if _truth(_call(self._predicate, element), "Dataset.filter"):
                yield element

    def _cardinality(self):
        return UNKNOWN_CARDINALITY      # as tf.data, even for an endless input


class _TakeWhile(_Filter):
    def _generate(self):
        for element in self._parent._iter():
            if not _truth(_call(self._predicate, element), "Dataset.take_while"):
                return
            yield element


class _FlatMap(_Unary):
    def __init__(self, parent, fn):
        super().__init__(parent)
        self._fn = fn

    def _inner(self, element):
        ds = _call(self._fn, element)
        if not isinstance(ds, Dataset):
            raise TypeError(f"Dataset.flat_map: map_func must return a Dataset, got "
                            f"{type(ds).__name__}")
        return ds

    def _generate(self):
        for element in self._parent._iter():
            yield from self._inner(element)._iter()

    def _cardinality(self):
        return UNKNOWN_CARDINALITY

    def _element_spec(self):
        return self._inner(self._parent._first())._element_spec()


class _Shuffle(_Unary):
    index_preserving = True

    def __init__(self, parent, buffer_size, seed, reshuffle):
        super().__init__(parent)
        self._buffer = _count_arg(buffer_size, "Dataset.shuffle")
        if self._buffer <= 0 and self._buffer != UNKNOWN_CARDINALITY:
            raise InvalidArgumentError(f"Dataset.shuffle: buffer_size must be positive, got "
                                       f"{self._buffer} (or UNKNOWN_CARDINALITY, -2: a "
                                       "buffer as large as the dataset)")
        if seed is None:
            # as TF: with a global seed, each shuffle of the program draws its own seed from
            # it in creation order; without one, fresh entropy
            self._seed = _random.next_op_seed() or (np.random.SeedSequence().entropy,)
        else:
            self._seed = (_count_arg(seed, "Dataset.shuffle"),)
        self._reshuffle = bool(reshuffle)
        self._passes = 0
        self._lock = threading.Lock()

    def _rng(self):
        with self._lock:
            n = self._passes
            if not _peeking():
                self._passes += 1
        words = list(self._seed) + ([n] if self._reshuffle else [])
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            [w & 0xFFFFFFFFFFFFFFFF for w in words])))

    def _shuffled(self, items, rng):
        """TF's buffered shuffle: fill the buffer, then hand out a random buffered item and
        put the next one in its place; at the end, the rest in a random permutation (so a
        pass that fits the buffer is one permutation, the same on every path)."""
        size = self._buffer if self._buffer > 0 else float("inf")
        buf = []
        it = iter(items)
        for item in it:
            buf.append(item)
            if len(buf) >= size:
                break
        for item in it:
            j = int(rng.integers(len(buf)))
            yield buf[j]
            buf[j] = item
        for j in rng.permutation(len(buf)):
            yield buf[j]

    def _indices(self):
        return self._shuffled(self._parent._indices(), self._rng())

    def _index_array(self):
        parent = self._parent
        size = self._buffer if self._buffer > 0 else float("inf")
        order = parent._index_array()
        if order is None:
            return None
        if len(order) <= size:          # the buffer holds the whole pass: a permutation
            return order[self._rng().permutation(len(order))]
        # (the buffered draws, over the same indices as _indices walks)
        return np.fromiter(self._shuffled(iter(order.tolist()), self._rng()), np.intp,
                           len(order))

    def _generate(self):
        return self._shuffled(self._parent._iter(), self._rng())



class _Repeat(_Unary):
    index_preserving = True

    def __init__(self, parent, count):
        super().__init__(parent)
        count = -1 if count is None else _count_arg(count, "Dataset.repeat")
        if count < -1:
            raise ValueError(f"Dataset.repeat: count must be -1 (forever) or at least 0, got "
                             f"{count}")
        self._count = count

    def _passes(self, make):
        for k in (itertools.count() if self._count == -1 else range(self._count)):
            empty = True
            for item in make():
                empty = False
                yield item
            if empty:           # an empty dataset repeated forever is empty
                return

    def _indices(self):
        return self._passes(self._parent._indices)

    def _index_array(self):
        if self._count == -1:
            return None
        passes = [self._parent._index_array() for _ in range(self._count)]
        if any(p is None for p in passes):
            return None
        return np.concatenate(passes) if passes else np.zeros(0, np.intp)

    def _generate(self):
        return self._passes(self._parent._iter)

    def _cardinality(self):
        n = self._parent._cardinality()
        if n == 0 or self._count == 0:
            return 0
        if self._count == -1:           # as tf.data: even an unknown count repeats forever
            return INFINITE_CARDINALITY
        return n * self._count if n >= 0 else n


class _Take(_Unary):
    index_preserving = True

    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = _count_arg(count, "Dataset.take")

    def _limit(self, items):
        # as tf.data: any negative count takes every element
        return items if self._count < 0 else itertools.islice(items, self._count)

    def _indices(self):
        return self._limit(self._parent._indices())

    def _index_array(self):
        order = self._parent._index_array()
        if order is None or self._count < 0:
            return order
        return order[:self._count]

    def _generate(self):
        return self._limit(self._parent._iter())

    def _cardinality(self):
        # tf.data's rule (a count below -1 reads as UNKNOWN_CARDINALITY, as there)
        n = self._parent._cardinality()
        if n == UNKNOWN_CARDINALITY:
            return UNKNOWN_CARDINALITY
        if n == INFINITE_CARDINALITY:
            return self._count
        if self._count == INFINITE_CARDINALITY:
            return n
        return min(n, self._count)


class _Skip(_Unary):
    index_preserving = True

    def __init__(self, parent, count):
        super().__init__(parent)
        self._count = _count_arg(count, "Dataset.skip")

    def _drop(self, items):
        if self._count < 0:         # as tf.data: any negative count skips every element
            return iter(())
        return itertools.islice(items, self._count, None)

    def _indices(self):
        return self._drop(self._parent._indices())

    def _index_array(self):
        order = self._parent._index_array()
        if order is None:
            return None
        return order[:0] if self._count < 0 else order[self._count:]

    def _generate(self):
        return self._drop(self._parent._iter())

    def _cardinality(self):
        n = self._parent._cardinality()
        if n < 0:
            return n
        return 0 if self._count < 0 else max(n - self._count, 0)


class _Shard(_Unary):
    index_preserving = True

    def __init__(self, parent, num_shards, index):
        super().__init__(parent)
        self._num = _count_arg(num_shards, "Dataset.shard")
        self._index = _count_arg(index, "Dataset.shard")
        if self._num <= 0 or not 0 <= self._index < self._num:
            raise ValueError(f"Dataset.shard: need num_shards > 0 and 0 <= index < "
                             f"num_shards, got num_shards={self._num}, index={self._index}")

    def _every(self, items):
        return itertools.islice(items, self._index, None, self._num)

    def _indices(self):
        return self._every(self._parent._indices())

    def _index_array(self):
        order = self._parent._index_array()
        return None if order is None else order[self._index::self._num]

    def _generate(self):
        return self._every(self._parent._iter())

    def _cardinality(self):
        n = self._parent._cardinality()
        if n < 0:
            return n
        return max(0, -(-(n - self._index) // self._num))


class _Enumerate(_Unary):
    def __init__(self, parent, start):
        super().__init__(parent)
        self._start = _count_arg(start, "Dataset.enumerate")

    def _generate(self):
        host = _Host.get()
        for i, element in enumerate(self._parent._iter(), self._start):
            yield (Tensor(np.asarray(np.int64(i)), host), element)

    def _element_spec(self):
        return (TensorSpec((), "int64"), self._parent._element_spec())


class _Concatenate(_Unary):
    def __init__(self, parent, other):
        super().__init__(parent)
        if not isinstance(other, Dataset):
            raise TypeError(f"Dataset.concatenate: expected a Dataset, got "
                            f"{type(other).__name__}")
        a, b = parent._element_spec(), other._element_spec()
        _same_structure(a, b, "Dataset.concatenate")
        for i, (sa, sb) in enumerate(zip(nest.flatten(a), nest.flatten(b))):
            if sa.dtype != sb.dtype:
                raise TypeError(f"Dataset.concatenate: component {i} is {sa.dtype.name} in "
                                f"one dataset and {sb.dtype.name} in the other")
            if len(sa.shape) != len(sb.shape):
                raise TypeError(f"Dataset.concatenate: component {i} has rank "
                                f"{len(sa.shape)} in one dataset and {len(sb.shape)} in the "
                                "other")
        self._other = other

    def _generate(self):
        yield from self._parent._iter()
        yield from self._other._iter()

    def _inputs(self):
        return [self._parent, self._other]

    def _cardinality(self):
        a, b = self._parent._cardinality(), self._other._cardinality()
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (a, b):
            return UNKNOWN_CARDINALITY
        return a + b

    def _element_spec(self):
        def merge(sa, sb):
            da, db = sa.shape.as_list(), sb.shape.as_list()
            return TensorSpec([x if x == y else None for x, y in zip(da, db)], sa.dtype)
        a, b = self._parent._element_spec(), self._other._element_spec()
        return nest.pack_sequence_as(a, [merge(x, y) for x, y in
                                         zip(nest.flatten(a), nest.flatten(b))])


class _Prefetch(_Unary):
    def __init__(self, parent, buffer_size):
        super().__init__(parent)
        size = _count_arg(buffer_size, "Dataset.prefetch")
        if size < 0 and size != AUTOTUNE:
            raise InvalidArgumentError(f"Dataset.prefetch: buffer_size must be at least 0 or "
                                       f"AUTOTUNE, got {size}")
        self._size = _PREFETCH_AUTOTUNE if size == AUTOTUNE else size
        if self._size == 0:
            self._source = parent._source       # nothing ahead: the parent as it is

    def _indices(self):
        return self._parent._indices()

    def _generate(self):
        if self._size == 0 or _peeking():
            yield from self._parent._iter()
            return
        q = queue.Queue(maxsize=self._size)
        stop = threading.Event()

        def put(item):
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False

        def work():
            try:
                for element in self._parent._iter():
                    if not put((True, element)):
                        return
                put((False, None))
            except BaseException as exc:   # handed to the consumer, raised there
                put((False, exc))

        worker = threading.Thread(target=work, name="gradtape-prefetch", daemon=True)
        worker.start()
        try:
            while True:
                ok, value = q.get()
                if ok:
                    yield value
                elif value is None:
                    return
                else:
                    raise value
        finally:
            stop.set()


class _Cache(_Unary):
    def __init__(self, parent, filename):
        super().__init__(parent)
        self._filename = os.fspath(filename) if filename else ""
        self._elements = None
        self._lock = threading.Lock()

    def _stored(self):
        if self._elements is not None:
            return self._elements
        if self._filename and os.path.exists(self._filename):
            try:
                with open(self._filename, "rb") as f:
                    header, payload = pickle.load(f)
            except Exception as exc:
                raise ValueError(f"Dataset.cache: {self._filename!r} is not a gradtape "
                                 f"dataset cache ({type(exc).__name__}: {exc}); delete it to "
                                 "rebuild it") from None
            if header != _CACHE_HEADER:
                raise ValueError(f"Dataset.cache: {self._filename!r} is not a gradtape "
                                 f"dataset cache (header {header!r})")
            host = _Host.get()
            self._elements = [nest.map_structure(lambda a: Tensor(a, host), e)
                              for e in payload]
        return self._elements

    def _generate(self):
        with self._lock:
            stored = self._stored()
        if stored is not None:
            yield from stored
            return
        seen = []
        for element in self._parent._iter():
            seen.append(element)
            yield element
        with self._lock:        # a complete pass: keep it
            if self._elements is None:
                self._elements = seen
                if self._filename:
                    tmp = f"{self._filename}.tmp-{os.getpid()}"
                    with open(tmp, "wb") as f:
                        pickle.dump((_CACHE_HEADER, [nest.map_structure(lambda t: t._value, e)
                                                     for e in seen]), f)
                    os.replace(tmp, self._filename)


_CACHE_HEADER = "gradtape.data cache v1"
_SAVE_HEADER = "gradtape.data saved dataset v1"
_SAVE_FILE = "dataset.gtdata"


def _save(dataset, path, compression):
    import gzip
    if compression not in (None, "", "NONE", "GZIP"):
        raise ValueError(f"Dataset.save: compression must be None or 'GZIP', got "
                         f"{compression!r}")
    if dataset._cardinality() == INFINITE_CARDINALITY:
        raise ValueError("Dataset.save: the dataset is infinite")
    spec = dataset.element_spec
    structure, specs = _leaves(_structure_of(spec))
    for s in specs:
        if not isinstance(s, TensorSpec):
            raise TypeError(f"Dataset.save: cannot save components of type "
                            f"{type(s).__name__}")
    rows = [[t._value for t in nest.flatten(e)] for e in dataset._iter()]
    payload = (_SAVE_HEADER, _encode_structure(structure),
               [(s.shape.as_list(), s.dtype.name) for s in specs], rows)
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    target = os.path.join(path, _SAVE_FILE)
    tmp = f"{target}.tmp-{os.getpid()}"
    opener = gzip.open if compression == "GZIP" else open
    with opener(tmp, "wb") as f:
        pickle.dump(payload, f)
    os.replace(tmp, target)


def _encode_structure(structure):
    """An element structure (None leaves) as plain data: a namedtuple is saved by name and
    fields, so a class local to a function can be saved too."""
    if isinstance(structure, dict):
        return ("dict", [(k, _encode_structure(v)) for k, v in structure.items()])
    if isinstance(structure, tuple):
        children = [_encode_structure(v) for v in structure]
        if hasattr(structure, "_fields"):
            cls = type(structure)
            return ("namedtuple", cls.__module__, cls.__qualname__, list(cls._fields),
                    children)
        return ("tuple", children)
    return None


def _decode_structure(code):
    if code is None:
        return None
    if code[0] == "dict":
        return {k: _decode_structure(v) for k, v in code[1]}
    if code[0] == "tuple":
        return tuple(_decode_structure(v) for v in code[1])
    _, module, qualname, fields, children = code
    import importlib
    cls = None
    try:
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
    except (ImportError, AttributeError):
        cls = None
    if not (isinstance(cls, type) and getattr(cls, "_fields", None) == tuple(fields)):
        cls = collections.namedtuple(qualname.rsplit(".", 1)[-1], fields)
    return cls(*[_decode_structure(v) for v in children])


def _load(path, element_spec):
    import gzip
    from .errors import NotFoundError
    target = os.path.join(os.fspath(path), _SAVE_FILE)
    if not os.path.exists(target):
        raise NotFoundError(f"Dataset.load: no dataset saved by Dataset.save in "
                            f"{os.fspath(path)!r} (no {_SAVE_FILE})")
    with open(target, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    try:
        with (gzip.open if gzipped else open)(target, "rb") as f:
            header, structure, specs, rows = pickle.load(f)
        structure = _decode_structure(structure)
    except Exception as exc:
        raise ValueError(f"Dataset.load: {target!r} is not a saved gradtape dataset "
                         f"({type(exc).__name__}: {exc})") from None
    if header != _SAVE_HEADER:
        raise ValueError(f"Dataset.load: {target!r} is not a saved gradtape dataset "
                         f"(header {header!r})")
    saved = nest.pack_sequence_as(structure, [TensorSpec(shape, dtype)
                                              for shape, dtype in specs])
    if element_spec is not None:
        _same_structure(saved, element_spec, "Dataset.load (element_spec)")
        for a, b in zip(nest.flatten(saved), nest.flatten(element_spec)):
            if a.dtype != b.dtype or not b.shape.is_compatible_with(a.shape):
                raise ValueError(f"Dataset.load: the saved dataset has elements of {saved}, "
                                 f"not {element_spec}")
        saved = element_spec
    host = _Host.get()
    elements = [nest.pack_sequence_as(structure, [Tensor(a, host) for a in row])
                for row in rows]
    return _Elements(elements, lambda: saved)


# --- windows, interleaving, scans, sampling ---------------------------------------------------

class _Elements(Dataset):
    """The elements of a list (a window's component); ``spec()`` gives their spec."""

    def __init__(self, elements, spec):
        self._elements = list(elements)
        self._spec = spec

    def _generate(self):
        return iter(self._elements)

    def _cardinality(self):
        return len(self._elements)

    def _element_spec(self):
        return self._spec()


class _Window(_Unary):
    def __init__(self, parent, size, shift, stride, drop_remainder):
        super().__init__(parent)
        self._size = _count_arg(size, "Dataset.window")
        self._shift = self._size if shift is None else _count_arg(shift, "Dataset.window")
        self._stride = _count_arg(stride, "Dataset.window")
        for what, v in (("size", self._size), ("shift", self._shift),
                        ("stride", self._stride)):
            if v <= 0:
                raise ValueError(f"Dataset.window: {what} must be positive, got {v}")
        self._drop = bool(drop_remainder)

    def _generate(self):
        skip = 0
        span = (self._size - 1) * self._stride + 1
        buf = []
        for element in self._parent._iter():
            if skip:
                skip -= 1
                continue
            buf.append(element)
            if len(buf) == span:
                yield self._pack(buf[::self._stride])
                if self._shift >= span:
                    skip, buf = self._shift - span, []
                else:
                    buf = buf[self._shift:]
        while buf:
            window = buf[:span:self._stride]
            if self._drop and len(window) < self._size:
                break
            yield self._pack(window)
            buf = buf[self._shift:]

    def _pack(self, window):
        structure, _ = _leaves(_structure_of(window[0]))
        columns = list(zip(*[nest.flatten(e) for e in window]))
        return nest.pack_sequence_as(structure, [
            _Elements(c, lambda i=i: nest.flatten(self._parent._element_spec())[i])
            for i, c in enumerate(columns)])

    def _cardinality(self):
        n = self._parent._cardinality()
        if n < 0:
            return n
        if self._drop:
            rest = n - ((self._size - 1) * self._stride + 1)
            return 0 if rest < 0 else rest // self._shift + 1
        return -(-n // self._shift)

    def _element_spec(self):
        return nest.map_structure(DatasetSpec, self._parent._element_spec())


class _Interleave(_Unary):
    def __init__(self, parent, fn, cycle_length, block_length):
        super().__init__(parent)
        if not callable(fn):
            raise TypeError(f"Dataset.interleave: map_func must be callable, got "
                            f"{type(fn).__name__}")
        self._fn = fn
        c = AUTOTUNE if cycle_length is None else _count_arg(cycle_length, "Dataset.interleave")
        self._cycle = (os.cpu_count() or 1) if c == AUTOTUNE else c
        self._block = 1 if block_length is None else _count_arg(block_length,
                                                                "Dataset.interleave")
        if self._cycle <= 0 or self._block <= 0:
            raise ValueError("Dataset.interleave: cycle_length and block_length must be "
                             "positive")

    def _open(self, element):
        ds = _call(self._fn, element)
        if not isinstance(ds, Dataset):
            raise TypeError(f"Dataset.interleave: map_func must return a Dataset, got "
                            f"{type(ds).__name__}")
        return ds._iter()

    def _generate(self):
        inputs = self._parent._iter()
        slots = []
        for element in inputs:
            slots.append(self._open(element))
            if len(slots) == self._cycle:
                break
        k = 0
        while slots:
            it = slots[k]
            ended = False
            for _ in range(self._block):
                try:
                    yield next(it)
                except StopIteration:
                    ended = True
                    break
            if ended:
                nxt = next(inputs, None)
                if nxt is not None:
                    slots[k] = self._open(nxt)      # (its first turn comes round next cycle)
                    k = (k + 1) % len(slots)
                    continue
                del slots[k]
                if not slots:
                    return
                k %= len(slots)
            else:
                k = (k + 1) % len(slots)

    def _cardinality(self):
        return UNKNOWN_CARDINALITY

    def _element_spec(self):
        return _spec_of(next(self._open(self._parent._first())))


class _Scan(_Unary):
    def __init__(self, parent, initial_state, fn):
        super().__init__(parent)
        self._initial = initial_state
        self._fn = fn

    def _generate(self):
        state = _tensors(self._initial, "Dataset.scan")
        for element in self._parent._iter():
            out = _on_host(self._fn, state, element)     # (a tuple element stays one argument)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("Dataset.scan: scan_func must return (new_state, output)")
            new_state = _tensors(out[0], "Dataset.scan")
            _same_structure(state, new_state, "Dataset.scan (the state)")
            state = new_state
            yield _tensors(out[1], "Dataset.scan")

    def _element_spec(self):
        return _spec_of(next(self._generate()))


class _Unique(_Unary):
    def _generate(self):
        seen = set()
        for element in self._parent._iter():
            if not isinstance(element, Tensor) or element._value.ndim != 0 or \
                    element._value.dtype.kind not in "iu":
                raise TypeError("Dataset.unique: the elements must be integer scalars")
            key = int(element._value)
            if key not in seen:
                seen.add(key)
                yield element

    def _cardinality(self):
        return UNKNOWN_CARDINALITY


def _seeded_rng(seed, what, salt=0):
    if seed is None:
        words = list(_random.next_op_seed() or (np.random.SeedSequence().entropy,))
    else:
        words = [_count_arg(seed, what)]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        [w & 0xFFFFFFFFFFFFFFFF for w in words + [salt]])))


class _RandomStream(Dataset):
    def __init__(self, seed, rerandomize):
        self._seed = seed
        self._rerandomize = rerandomize
        self._words = None if seed is not None else _random.next_op_seed()
        self._passes = 0

    def _generate(self):
        salt = self._passes if self._rerandomize else 0
        if not _peeking():
            self._passes += 1
        rng = _seeded_rng(self._seed if self._seed is not None else
                          (self._words[0] if self._words else None), "Dataset.random", salt)
        host = _Host.get()
        while True:
            yield Tensor(np.asarray(rng.integers(-2 ** 63, 2 ** 63 - 1, dtype=np.int64)), host)

    def _cardinality(self):
        return INFINITE_CARDINALITY

    def _element_spec(self):
        return TensorSpec((), "int64")


class _Sample(Dataset):
    def __init__(self, datasets, weights, seed, stop_on_empty):
        self._datasets = list(datasets)
        if not self._datasets or not all(isinstance(d, Dataset) for d in self._datasets):
            raise TypeError("Dataset.sample_from_datasets: datasets must be a non-empty list "
                            "of Datasets")
        n = len(self._datasets)
        w = np.full(n, 1.0 / n) if weights is None else np.asarray(
            weights.numpy() if isinstance(weights, Tensor) else weights, np.float64)
        if w.shape != (n,) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"Dataset.sample_from_datasets: weights must be {n} non-negative "
                             f"numbers, not all zero; got {w.tolist()}")
        self._weights = w
        self._seed = seed if seed is not None else (_random.next_op_seed() or (None,))[0]
        self._stop = bool(stop_on_empty)
        self._passes = 0

    def _cardinality(self):
        # as tf.data: endless when an input is (even with stop_on_empty_dataset), else
        # unknown
        if any(d._cardinality() == INFINITE_CARDINALITY for d in self._datasets):
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY

    def _generate(self):
        salt = self._passes
        if not _peeking():
            self._passes += 1
        rng = _seeded_rng(self._seed, "Dataset.sample_from_datasets", salt)
        its = [d._iter() for d in self._datasets]
        w = self._weights.copy()
        while w.sum() > 0:
            i = int(rng.choice(len(its), p=w / w.sum()))
            try:
                yield next(its[i])
            except StopIteration:
                if self._stop:
                    return
                w[i] = 0.0

    def _element_spec(self):
        return self._datasets[0]._element_spec()

    def _inputs(self):
        return list(self._datasets)


class _Choose(Dataset):
    def __init__(self, datasets, choices, stop_on_empty):
        self._datasets = list(datasets)
        if not isinstance(choices, Dataset):
            raise TypeError("Dataset.choose_from_datasets: choice_dataset must be a Dataset")
        self._choices = choices
        self._stop = bool(stop_on_empty)

    def _generate(self):
        its = [d._iter() for d in self._datasets]
        ended = set()
        for c in self._choices._iter():
            if not isinstance(c, Tensor) or c._value.ndim != 0 or c._value.dtype != np.int64:
                raise TypeError("Dataset.choose_from_datasets: choice_dataset must hold int64 "
                                "scalars")
            i = int(c._value)
            if not 0 <= i < len(its):
                raise ValueError(f"Dataset.choose_from_datasets: choice {i} is out of range "
                                 f"for {len(its)} datasets")
            if i in ended:
                continue
            try:
                yield next(its[i])
            except StopIteration:
                if self._stop:
                    return
                ended.add(i)

    def _element_spec(self):
        return self._datasets[0]._element_spec()

    def _inputs(self):
        return list(self._datasets)


class _Counter(Dataset):
    def __init__(self, start, step, dtype):
        self._dtype = as_dtype(dtype)
        np_type = self._dtype.as_numpy_dtype
        self._start, self._step = (np.asarray(v.numpy() if isinstance(v, Tensor) else v,
                                              np_type) for v in (start, step))
        if self._start.ndim or self._step.ndim:
            raise ValueError(f"Dataset.counter: start and step must be scalars, got shapes "
                             f"{self._start.shape} and {self._step.shape}")

    def _generate(self):
        host = _Host.get()
        value = self._start
        while True:
            yield Tensor(value, host)
            value = np.asarray(value + self._step)

    def _cardinality(self):
        return INFINITE_CARDINALITY

    def _element_spec(self):
        return TensorSpec((), self._dtype)


class _GroupByWindow(_Unary):
    def __init__(self, parent, key_func, reduce_func, window_size, window_size_func,
                 spec=None):
        super().__init__(parent)
        self._spec = spec
        what = "Dataset.group_by_window"
        if (window_size is None) == (window_size_func is None):
            raise ValueError(f"{what}: Either the `window_size` argument or the "
                             "`window_size_func` argument must be specified.")
        for name, fn in (("key_func", key_func), ("reduce_func", reduce_func),
                         ("window_size_func", window_size_func)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what}: {name} must be callable, got {type(fn).__name__}")
        self._key_func, self._reduce_func = key_func, reduce_func
        self._window_size = None if window_size is None else _count_arg(window_size, what)
        self._window_size_func = window_size_func

    def _key(self, element) -> int:
        t = _host_tensor(_call(self._key_func, element), "Dataset.group_by_window")
        if t._value.ndim != 0 or t._value.dtype != np.int64:
            raise ValueError(f"Dataset.group_by_window: key_func must return a single int64 "
                             f"scalar, got {t.dtype.name} of shape {tuple(t._value.shape)}")
        return int(t._value)

    def _size_of(self, key) -> int:
        if self._window_size_func is None:
            size = self._window_size
        else:
            size = _count_arg(_host_tensor(_on_host(self._window_size_func, _int64(key)),
                                           "Dataset.group_by_window"),
                              "Dataset.group_by_window (window_size_func)")
        if size <= 0:
            raise InvalidArgumentError(f"Dataset.group_by_window: the window size must be "
                                       f"positive, got {size} for key {key}")
        return size

    def _reduced(self, key, elements) -> Dataset:
        group = _Elements(elements, self._parent._element_spec)
        ds = _on_host(self._reduce_func, _int64(key), group)
        if not isinstance(ds, Dataset):
            raise TypeError(f"Dataset.group_by_window: reduce_func must return a Dataset, got "
                            f"{type(ds).__name__}")
        return ds

    def _generate(self):
        groups = {}
        for element in self._parent._iter():
            key = self._key(element)
            group = groups.setdefault(key, [])
            group.append(element)
            if len(group) >= self._size_of(key):
                del groups[key]
                yield from self._reduced(key, group)._iter()
        for key in sorted(groups):          # the groups left over, by key (as tf.data)
            yield from self._reduced(key, groups[key])._iter()

    def _cardinality(self):
        return UNKNOWN_CARDINALITY

    def _element_spec(self):
        if self._spec is not None:
            return self._spec()
        first = self._parent._first()
        return self._reduced(self._key(first), [first])._element_spec()


def _int64(value) -> Tensor:
    return Tensor(np.asarray(value, np.int64), _Host.get())


def _bucket_by_sequence_length(dataset, length_func, boundaries, batch_sizes, padded_shapes,
                               padding_values, pad_to_boundary, no_padding, drop_remainder):
    what = "Dataset.bucket_by_sequence_length"
    boundaries = [_count_arg(b, what) for b in boundaries]
    batch_sizes = [_count_arg(b, what) for b in batch_sizes]
    if len(batch_sizes) != len(boundaries) + 1:
        raise ValueError(f"{what}: `len(bucket_batch_sizes)` must equal "
                         f"`len(bucket_boundaries) + 1` but `len(bucket_batch_sizes)="
                         f"{len(batch_sizes)}` and `len(bucket_boundaries)={len(boundaries)}`.")
    if any(b >= a for b, a in zip(boundaries, boundaries[1:])):
        raise ValueError(f"{what}: bucket_boundaries must be increasing, got {boundaries}")

    def bucket_of(*element):         # (called as key_func: a tuple element comes unpacked)
        length = _host_tensor(length_func(*element), what)
        if length._value.ndim != 0 or length._value.dtype.kind not in "iu":
            raise TypeError(f"{what}: element_length_func must return an integer scalar, got "
                            f"{length.dtype.name} of shape {tuple(length._value.shape)}")
        return _int64(int(np.searchsorted(boundaries, int(length._value), side="right")))

    def batch_group(bucket, group):
        bucket = int(bucket._value)
        size = batch_sizes[bucket]
        if no_padding:
            return group.batch(size, drop_remainder=drop_remainder)
        filler = None
        if pad_to_boundary:
            if bucket >= len(boundaries):
                raise InvalidArgumentError(f"{what}: When pad_to_bucket_boundary=True, elements "
                                           f"must have length < bucket_boundaries[-1] "
                                           f"({boundaries[-1]}).")
            filler = boundaries[bucket] - 1
        if padded_shapes is not None:
            s_struct, shapes = _leaves(_shape_structure(padded_shapes))
            shapes = nest.pack_sequence_as(s_struct, [
                [filler if d is None else d for d in _shape_list(sh)] for sh in shapes])
        elif filler is not None:
            shapes = _boundary_shapes(group, filler)
        else:
            shapes = None           # each axis padded to the batch's longest
        return group.padded_batch(size, shapes, padding_values, drop_remainder=drop_remainder)

    def spec():
        # as tf.data: the batch size and the padded sizes vary from bucket to bucket
        parent = dataset._element_spec()
        if padded_shapes is None or no_padding:
            return nest.map_structure(lambda s: TensorSpec(
                [None] + (s.shape.as_list() if no_padding else [None] * s.shape.rank),
                s.dtype), parent)
        structure, specs = _leaves(_structure_of(parent))
        _, shapes = _leaves(_shape_structure(padded_shapes))
        return nest.pack_sequence_as(structure, [
            TensorSpec([None] + _shape_list(sh), sp.dtype) for sp, sh in zip(specs, shapes)])

    return _GroupByWindow(dataset, bucket_of, batch_group, None,
                          lambda bucket: batch_sizes[int(bucket._value)], spec)


def _boundary_shapes(group, filler):
    """Padded shapes for a bucket padded to its boundary: ``filler`` on the axes whose size
    is not fixed (unknown in the element spec, or differing in the group), the batch's size
    on the others."""
    spec_struct, specs = _leaves(_structure_of(group.element_spec))
    flats = [nest.flatten(e) for e in group._elements]
    shapes = []
    for c, spec in enumerate(specs):
        dims = spec.shape.as_list()
        shapes.append([filler if d is None or any(f[c]._value.shape[a] != d for f in flats)
                       else None for a, d in enumerate(dims)])
    return nest.pack_sequence_as(spec_struct, shapes)


class _AssertCardinality(_Unary):
    def __init__(self, parent, expected):
        super().__init__(parent)
        self._expected = _count_arg(expected, "assert_cardinality")

    def _generate(self):
        from .errors import FailedPreconditionError
        n = self._expected

        def expected():
            return "an infinite number of" if n == INFINITE_CARDINALITY else str(n)
        count = 0
        for element in self._parent._iter():
            count += 1
            if n >= 0 and count > n:
                raise FailedPreconditionError(f"Input dataset was expected to contain "
                                              f"{expected()} elements but contained at least "
                                              f"{count} elements.")
            yield element
        if n != UNKNOWN_CARDINALITY and count != n:
            raise FailedPreconditionError(f"Input dataset was expected to contain "
                                          f"{expected()} elements but contained only {count} "
                                          "elements.")

    def _cardinality(self):
        return self._expected


# --- datasets of files' records (tf.data.TFRecordDataset, TextLineDataset, FixedLength...) ------

def _file_names(filenames, what):
    """The file names of a dataset of records: a Dataset of scalar strings (read afresh each
    pass), or a list of paths from a string, path, list or string tensor."""
    if isinstance(filenames, Dataset):
        return filenames
    if isinstance(filenames, Tensor):
        host = filenames._value
        if host.dtype != object:
            raise TypeError(f"{what}: The `filenames` argument must contain `string` "
                            f"elements. Got `{filenames.dtype.name}` elements.")
        return [bytes(v).decode("utf-8") for v in host.reshape(-1).tolist()]
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    if not isinstance(filenames, (list, tuple, np.ndarray)):
        raise TypeError(f"{what}: The `filenames` argument must contain `string` elements. "
                        f"Got {type(filenames).__name__} elements.")
    out = []
    for f in filenames:
        if isinstance(f, (Tensor, list, tuple, np.ndarray)):
            out.extend(_file_names(f, what))
            continue
        f = os.fspath(f) if isinstance(f, os.PathLike) else f
        if isinstance(f, bytes):
            f = f.decode("utf-8")
        if not isinstance(f, str):
            raise TypeError(f"{what}: The `filenames` argument must contain `string` "
                            f"elements. Got {type(f).__name__} elements.")
        out.append(f)
    return out


class _FileRecords(Dataset):
    """Scalar string elements read from files one after another, or round-robin over
    ``num_parallel_reads`` files at a time (TF's deterministic interleave, one record per
    turn)."""

    _what = "Dataset"

    def __init__(self, filenames, compression_type, num_parallel_reads):
        self._filenames = _file_names(filenames, self._what)
        self._compression = "" if compression_type is None else compression_type
        if num_parallel_reads is None:
            self._parallel = 0
        else:
            n = _count_arg(num_parallel_reads, self._what)
            self._parallel = (os.cpu_count() or 1) if n == AUTOTUNE else n
            if self._parallel <= 0:
                raise ValueError(f"{self._what}: num_parallel_reads must be positive or "
                                 f"AUTOTUNE, got {n}")

    def _names(self):
        if isinstance(self._filenames, Dataset):
            for element in self._filenames._iter():
                if not isinstance(element, Tensor) or element._value.dtype != object \
                        or element._value.ndim:
                    raise TypeError(f"{self._what}: a dataset of filenames must have scalar "
                                    "string elements")
                yield bytes(element._value[()]).decode("utf-8")
        else:
            yield from self._filenames

    def _records(self, path):
        raise NotImplementedError

    def _generate(self):
        host = _Host.get()

        def scalar(record):
            out = np.empty((), dtype=object)
            out[()] = record
            return Tensor(out, host)

        names = self._names()
        if self._parallel <= 1:
            for path in names:
                for record in self._records(path):
                    yield scalar(record)
            return
        slots = [None] * self._parallel
        open_count, k, exhausted = 0, 0, False
        while not exhausted or open_count:
            if slots[k] is None:
                if not exhausted:
                    path = next(names, None)
                    if path is None:
                        exhausted = True
                    else:
                        slots[k] = iter(self._records(path))
                        open_count += 1
                        continue
                k = (k + 1) % len(slots)
                continue
            record = next(slots[k], None)
            if record is None:
                slots[k] = None
                open_count -= 1
            else:
                yield scalar(record)
            k = (k + 1) % len(slots)

    def _element_spec(self):
        from .dtypes import string
        return TensorSpec((), string)


class TFRecordDataset(_FileRecords):
    """The records of TFRecord files as scalar string tensors (``tf.data.TFRecordDataset``):
    ``compression_type`` ``""``/None, ``"ZLIB"`` or ``"GZIP"``; both CRCs of every record
    are checked (``gt.errors.DataLossError`` for a corrupted or truncated one);
    ``num_parallel_reads`` files are read round-robin. ``buffer_size`` is accepted and
    ignored (files are read in 64 KiB blocks)."""

    _what = "TFRecordDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, num_parallel_reads)

    def _records(self, path):
        from .io import _tfrecords
        return _tfrecords(path, self._compression)


class TextLineDataset(_FileRecords):
    """The lines of text files, without their ``\\n`` (or ``\\r\\n``), as scalar string
    tensors (``tf.data.TextLineDataset``); ``compression_type`` as TFRecordDataset's."""

    _what = "TextLineDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, num_parallel_reads)

    def _records(self, path):
        from .io import _text_lines
        return _text_lines(path, self._compression)


class FixedLengthRecordDataset(_FileRecords):
    """Records of ``record_bytes`` bytes between a ``header_bytes`` header and a
    ``footer_bytes`` footer of each file, as scalar string tensors
    (``tf.data.FixedLengthRecordDataset``); a body that is not a whole number of records
    raises InvalidArgumentError when the file is read."""

    _what = "FixedLengthRecordDataset"

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, num_parallel_reads)
        self._sizes = tuple(0 if v is None else _count_arg(v, self._what)
                            for v in (record_bytes, header_bytes, footer_bytes))

    def _records(self, path):
        from .io import _fixed_records
        return _fixed_records(path, *self._sizes, self._compression)


# --- CSV files (tf.data.experimental.CsvDataset, make_csv_dataset) -------------------------------

_CSV_DTYPES = ("float32", "float64", "int32", "int64", "string")
_CSV_CHUNK = 1 << 20
_CSV_UNCLOSED = "Reached end of file without closing quoted field in record"
_CSV_INT = re.compile(rb"\s*[+-]?\d+\s*\Z")
_CSV_FLOAT = re.compile(rb"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)\s*\Z",
                        re.IGNORECASE)
_CSV_HEX = re.compile(rb"\s*[+-]?0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?\s*\Z",
                      re.IGNORECASE)
_F32_MAX = float(np.finfo(np.float32).max)


def _csv_scan(buf, pos, final, delim, quote, unquoted, rest):
    """The fields of the CSV record at ``pos`` of ``buf``, read as TF's CsvDataset kernel
    reads them (a quoted field may span lines; a record ends at ``\\n``, ``\\r``, ``\\r\\n``
    or the end of the file): ``([(text or None, syntax error or None), ...], next pos)``,
    or None when ``buf`` ends before the record does and more may follow (not ``final``)."""
    n, fields = len(buf), []
    while True:
        if pos >= n:                    # a delimiter ended the data: one more empty field
            if not final:
                return None
            fields.append((b"", None))
            return fields, pos
        if quote and buf[pos] == 0x22:
            start, pos, err = pos, pos + 1, None
            while True:
                q = buf.find(b'"', pos)
                if q < 0:
                    if not final:
                        return None
                    fields.append((None, _CSV_UNCLOSED))
                    return fields, n
                pos = q + 1
                if pos >= n:
                    if not final:
                        return None
                    fields.append((None if err else buf[start + 1:pos - 1].replace(b'""', b'"'),
                                   err))
                    return fields, pos
                c = buf[pos]
                pos += 1
                if c == delim or c == 10 or c == 13:
                    fields.append((None if err else buf[start + 1:pos - 2].replace(b'""', b'"'),
                                   err))
                    break
                if c != 0x22:
                    err = err or "Quote inside a string has to be escaped by another quote"
        else:
            end = unquoted.match(buf, pos).end()
            err = None
            if quote and end < n and buf[end] == 0x22:
                err = "Unquoted fields cannot have quotes inside"
                end = rest.match(buf, end).end()
            if end >= n:
                if not final:
                    return None
                fields.append((buf[pos:end], err))
                return fields, end
            c = buf[end]
            fields.append((buf[pos:end], err))
            pos = end + 1
        if c == delim:
            continue
        if c == 13:                     # \r\n ends a record as one line break
            if pos >= n and not final:
                return None
            if pos < n and buf[pos] == 10:
                pos += 1
        return fields, pos


def _csv_filenames(filenames, what):
    """The file names of a CsvDataset: a string, path, or a vector (list, array, tensor) of
    them."""
    if isinstance(filenames, Tensor):
        host = _host_tensor(filenames, what)._value
        if host.dtype != object:
            raise TypeError(f"{what}: filenames must be strings, got a "
                            f"{filenames.dtype.name} tensor")
        if host.ndim > 1:
            raise InvalidArgumentError(f"{what}: `filenames` must be a scalar or a vector, "
                                       f"got shape {list(host.shape)}")
        return [bytes(v).decode("utf-8") for v in host.reshape(-1).tolist()]
    if isinstance(filenames, np.ndarray):
        if filenames.ndim > 1:
            raise InvalidArgumentError(f"{what}: `filenames` must be a scalar or a vector, "
                                       f"got shape {list(filenames.shape)}")
        filenames = filenames.reshape(-1).tolist()
    elif not isinstance(filenames, (list, tuple)):
        filenames = [filenames]
    out = []
    for f in filenames:
        if isinstance(f, (list, tuple, np.ndarray, Tensor)):
            raise InvalidArgumentError(f"{what}: `filenames` must be a scalar or a vector")
        if isinstance(f, os.PathLike):
            f = os.fspath(f)
        if isinstance(f, bytes):
            f = f.decode("utf-8")
        if not isinstance(f, str):
            raise TypeError(f"{what}: filenames must be strings, got {f!r}")
        out.append(f)
    return out


def _csv_record_defaults(record_defaults, what):
    """``[(numpy dtype, TF type name, default or None), ...]`` of CsvDataset's
    ``record_defaults``: a CSV dtype (a required column), or a tensor of such a dtype with
    one value (the column's default) or none (required)."""
    from .dtypes import DType
    from .io import _tf_name
    if isinstance(record_defaults, (Tensor, str, bytes)) or \
            not hasattr(record_defaults, "__iter__"):
        raise TypeError(f"{what}: record_defaults must be a list, got "
                        f"{type(record_defaults).__name__}")
    out = []
    for k, x in enumerate(record_defaults):
        if not isinstance(x, Tensor) and isinstance(x, (DType, str, type, np.dtype)):
            try:
                dt = as_dtype(x)
            except TypeError:
                dt = None
            if dt is not None and dt.name in _CSV_DTYPES:
                npd = np.dtype(object) if dt.name == "string" else np.dtype(dt.name)
                out.append((npd, _tf_name(npd), None))
                continue
            if not isinstance(x, str):
                raise ValueError(f"{what}: record_defaults[{k}] is {x!r}, not a CSV dtype "
                                 "(float32, float64, int32, int64 or string)")
        t = _host_tensor(x, what)
        if t.dtype.name not in _CSV_DTYPES:
            raise InvalidArgumentError(
                f"{what}: Value for attr 'output_types' of {_tf_name(t._value.dtype)} is not "
                "in the list of allowed values: float, double, int32, int64, string "
                f"(record_defaults[{k}])")
        value = t._value
        if value.ndim > 1:
            raise InvalidArgumentError(f"{what}: Each record default should be at most rank "
                                       f"1, record_defaults[{k}] has shape {list(value.shape)}")
        if value.size > 1:
            raise InvalidArgumentError(f"{what}: There should only be 1 default per field but "
                                       f"field {k} has {value.size}")
        default = None
        if value.size:
            default = value.reshape(-1)[0]
            if isinstance(default, str):
                default = default.encode("utf-8")
        out.append((value.dtype, _tf_name(value.dtype), default))
    return out


def _csv_columns(cols, what, name):
    if cols is None:
        return []
    if isinstance(cols, Tensor):
        cols = cols.numpy()
    cols = np.asarray(cols)
    if cols.ndim != 1:
        raise InvalidArgumentError(f"{what}: `{name}` must be a vector, got {cols.tolist()}")
    if cols.size and cols.dtype.kind not in "iu":
        raise TypeError(f"{what}: `{name}` must hold integers, got {cols.tolist()}")
    return [int(c) for c in cols]


class _CsvDataset(Dataset):
    """The records of CSV files as tuples of scalar tensors
    (``tf.data.experimental.CsvDataset``), read as TF's kernel reads them (RFC 4180: quoted
    fields may hold delimiters, doubled quotes and line breaks; records end at ``\\n``,
    ``\\r\\n`` or ``\\r``; numbers may have surrounding spaces, floats may be hexadecimal).

    ``record_defaults`` has one item per parsed column: a dtype (float32, float64, int32,
    int64, string), which makes the column required, or a tensor holding the column's default
    (or nothing, required too). An empty field, or one equal to ``na_value``, takes the
    default; a required one is an InvalidArgumentError when read, as are a number that does
    not parse and a record with a wrong number of fields. ``header`` skips each file's first
    record; ``select_cols`` / ``exclude_cols`` (sorted column indices, at most one of them)
    choose the columns parsed; ``compression_type`` ``""``/None, ``"ZLIB"`` or ``"GZIP"``.
    ``buffer_size`` must be positive and is otherwise unused."""

    _what = "CsvDataset"

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None):
        what = self._what
        self._filenames = _csv_filenames(filenames, what)
        self._compression = "" if compression_type is None else compression_type
        self._defaults = _csv_record_defaults(record_defaults, what)
        select = _csv_columns(select_cols, what, "select_cols")
        exclude = _csv_columns(exclude_cols, what, "exclude_cols")
        if buffer_size is not None and _count_arg(buffer_size, what) <= 0:
            raise InvalidArgumentError(f"{what}: buffer_size should be positive, got "
                                       f"{buffer_size}")
        delim = field_delim.encode("utf-8") if isinstance(field_delim, str) else field_delim
        if not isinstance(delim, bytes) or len(delim) != 1:
            raise InvalidArgumentError(f"{what}: field_delim should be only 1 char, got "
                                       f"{field_delim!r}")
        if self._compression not in ("", "ZLIB", "GZIP"):
            raise InvalidArgumentError(f"{what}: Unsupported compression_type: "
                                       f"{self._compression}.")
        if select and len(select) != len(self._defaults):
            raise InvalidArgumentError(f"{what}: select_cols should match output size: "
                                       f"{len(select)} select_cols for "
                                       f"{len(self._defaults)} record_defaults")
        for name, cols in (("select_cols", select), ("exclude_cols", exclude)):
            if any(b <= a for a, b in zip(cols, cols[1:])):
                raise InvalidArgumentError(f"{what}: {name} should be strictly increasing "
                                           f"indices, got {cols}")
            if cols and cols[0] < 0:
                raise InvalidArgumentError(f"{what}: {name} should be non-negative indices, "
                                           f"got {cols}")
            if name == "select_cols" and select and exclude:
                raise InvalidArgumentError(f"{what}: Either select_cols or exclude_cols "
                                           "should be empty")
        self._select, self._exclude = set(select), set(exclude)
        self._header = bool(header)
        self._delim = delim[0]
        self._quote = bool(use_quote_delim)
        self._na = na_value.encode("utf-8") if isinstance(na_value, str) else bytes(na_value)
        d = re.escape(delim)
        self._patterns = (re.compile(b'[^' + d + (b'\r\n"]*' if self._quote else b'\r\n]*')),
                          re.compile(b'[^' + d + b'\r\n]*'))
        self._skip_errors = False       # set by make_csv_dataset(ignore_errors=True)

    def _value(self, text, k):
        """Field ``text`` as the Python value of output ``k`` (TF's parsing and errors)."""
        npd, name, default = self._defaults[k]
        if text == b"" or text == self._na:
            if default is None:
                raise InvalidArgumentError(f"Field {k} is required but missing in record!")
            return default
        if npd.kind == "O":
            return text
        if npd.kind == "i":
            if _CSV_INT.match(text) is not None:
                v = int(text)
                if -(1 << (8 * npd.itemsize - 1)) <= v < 1 << (8 * npd.itemsize - 1):
                    return v
        elif _CSV_FLOAT.match(text) is not None:
            v = float(text)
            if npd.itemsize == 4 and _F32_MAX < abs(v) < float("inf"):
                with np.errstate(over="ignore"):
                    v = float(np.float32(v))        # inf, as TF's strtof
            return v
        elif _CSV_HEX.match(text) is not None:
            v = float.fromhex(text.strip().decode("ascii"))
            if npd.itemsize == 4 and _F32_MAX < abs(v) < float("inf"):
                with np.errstate(over="ignore"):
                    v = float(np.float32(v))
            return v
        raise InvalidArgumentError(f"Field {k} in record is not a valid {name}: "
                                   f"{text.decode('utf-8', 'replace')}")

    def _element(self, fields):
        """The tuple of scalar tensors of one record's fields (TF's checks, its first error
        raised)."""
        n_out, values = len(self._defaults), []
        select_all = not self._select and not self._exclude
        for k, (text, err) in enumerate(fields):
            if err is not None:
                raise InvalidArgumentError(err)
            if not (select_all or k in self._select or
                    (self._exclude and k not in self._exclude)):
                continue
            if len(values) >= n_out:
                raise InvalidArgumentError(f"Expect {n_out} fields but have more in record")
            values.append(self._value(text, len(values)))
        if len(values) != n_out:
            raise InvalidArgumentError(f"Expect {n_out} fields but have {len(values)} in "
                                       "record")
        host, out = _Host.get(), []
        for (npd, _, _), v in zip(self._defaults, values):
            if npd.kind == "O":
                a = np.empty((), dtype=object)
                a[()] = v
            else:
                a = np.asarray(v, dtype=npd)
            out.append(Tensor(a, host))
        return tuple(out)

    def _records(self, path):
        """The elements of one file (or, skipping errors, of its readable records)."""
        from .io import _open_stream
        try:
            f = _open_stream(path, self._compression, self._what)
        except Exception:
            if self._skip_errors:
                return
            raise
        scan = (self._delim, self._quote) + self._patterns
        with f:
            buf, pos, final, header = b"", 0, False, self._header
            while True:
                got = None
                if pos < len(buf):
                    got = _csv_scan(buf, pos, final, *scan)
                elif final:
                    if header:
                        if self._skip_errors:
                            return
                        raise InvalidArgumentError(f"Can't read header of file {path}")
                    return
                if got is None:
                    try:
                        chunk = f.read(_CSV_CHUNK)
                    except Exception:
                        if self._skip_errors:
                            return
                        raise
                    buf, pos, final = buf[pos:] + chunk, 0, not chunk
                    continue
                fields, pos = got
                if header:
                    header = False
                    if any(err is not None for _, err in fields):
                        if self._skip_errors:
                            return
                        raise InvalidArgumentError(f"Can't read header of file {path}")
                    continue
                try:
                    element = self._element(fields)
                except InvalidArgumentError:
                    if self._skip_errors:
                        continue
                    raise
                yield element

    def _generate(self):
        for path in self._filenames:
            yield from self._records(path)

    def _element_spec(self):
        from .dtypes import string
        return tuple(TensorSpec((), string if npd == object else as_dtype(npd))
                     for npd, _, _ in self._defaults)




def _csv_glob(file_pattern, what):
    """The sorted paths matching ``file_pattern`` (a pattern or a list of them), as
    make_csv_dataset finds them."""
    from .io import glob
    if isinstance(file_pattern, list):
        if not file_pattern:
            raise ValueError(f"{what}: Argument `file_pattern` should not be empty.")
        names = []
        for entry in file_pattern:
            names.extend(glob(entry))
    else:
        names = list(glob(file_pattern))
    if not names:
        raise ValueError(f"{what}: No files match `file_pattern` {file_pattern}.")
    return sorted(os.fspath(n) if not isinstance(n, bytes) else n.decode("utf-8")
                  for n in names)


def _csv_infer_type(text, na_value, prev):
    """TF's ``_infer_type``: the least permissive of int32, int64, float32, float64, string
    that ``text`` fits and that still holds the column's earlier values (NumPy's parsing, as
    TF's; an empty or ``na_value`` field tells nothing)."""
    if text in ("", na_value):
        return prev

    def fits(kind):
        try:
            with np.errstate(over="ignore"):
                if kind == "int32":
                    return np.int32(text) == np.int64(text)
                if kind == "int64":
                    np.int64(text)
                    return True
                return np.dtype(kind).type(text) < np.inf
        except (ValueError, OverflowError):
            return False

    order = ("int32", "int64", "float32", "float64", "string")
    for i, kind in enumerate(order):
        if (kind == "string" or fits(kind)) and (prev is None or prev in order[:i + 1]):
            return kind


def _make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                      label_name=None, select_columns=None, field_delim=",",
                      use_quote_delim=True, na_value="", header=True, num_epochs=None,
                      shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                      prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                      num_rows_for_inference=100, compression_type=None,
                      ignore_errors=False, encoding="utf-8") -> Dataset:
    """Batches of CSV records as ``(features, label)`` (``features`` alone without
    ``label_name``), as ``tf.data.experimental.make_csv_dataset``.

    ``features`` is an OrderedDict of column name to batched tensor. The files matching
    ``file_pattern`` are read in sorted order (shuffled each epoch when ``shuffle``), one
    after another or ``num_parallel_reads`` at a time round-robin. Column names come from
    the first file's header line unless given (every file's header must match); without
    ``column_defaults`` each column's type is inferred from the first
    ``num_rows_for_inference`` records as TF infers it (int32, int64, float32, float64, else
    string; defaults 0 / ""). ``select_columns`` (names or indices) keeps those columns.
    Records are shuffled with a ``shuffle_buffer_size`` buffer, repeated ``num_epochs`` times
    (None: forever, and batches are then all full), batched and prefetched;
    ``ignore_errors`` skips records that do not parse. ``sloppy`` is accepted (the order is
    always the deterministic one)."""
    import csv
    import gzip
    what = "make_csv_dataset"
    if num_parallel_reads is None:
        num_parallel_reads = 1
    if prefetch_buffer_size is None:
        prefetch_buffer_size = AUTOTUNE
    filenames = _csv_glob(file_pattern, what)
    files = Dataset.from_tensor_slices(filenames)
    if shuffle:
        files = files.shuffle(len(filenames), shuffle_seed)

    comp = "" if compression_type is None else compression_type
    if comp not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"{what}: Received unknown `compression_type` {compression_type}. "
                         "Expected: GZIP, ZLIB or  (empty string).")

    def open_text(path):
        if comp == "GZIP":
            return gzip.open(path, "rt", encoding=encoding, newline="")
        if comp == "ZLIB":
            raise ValueError(f"{what}: `compression_type` {compression_type} is not supported "
                             "for probing columns.")
        return open(path, "r", encoding=encoding, newline="")

    csv_kwargs = {"delimiter": field_delim,
                  "quoting": csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE}
    if column_names is None:
        if not header:
            raise ValueError(f"{what}: Expected `column_names` or `header` arguments. "
                             "Neither is provided.")
        for k, path in enumerate(filenames):
            with open_text(path) as f:
                try:
                    names = next(csv.reader(f, **csv_kwargs))
                except StopIteration:
                    raise ValueError(f"{what}: Failed when reading the header line of "
                                     f"{path}. Is it an empty file?") from None
            if k == 0:
                column_names = names
            elif names != column_names:
                raise ValueError(f"{what}: All input CSV files should have the same column "
                                 f"names in the header row. File {path} has different "
                                 "column names.")
    column_names = list(column_names)
    seen, dups = set(), set()
    for name in column_names:
        (dups if name in seen else seen).add(name)
    if dups:
        raise ValueError(f"{what}: Either `column_names` argument or CSV header row contains "
                         f"duplicate column names: {dups}.")

    if select_columns is not None:
        index = {name: i for i, name in enumerate(column_names)}
        picked = []
        for v in select_columns:
            if isinstance(v, int):
                if v < 0 or v >= len(column_names):
                    raise ValueError(f"{what}: Column index {v} specified in `select_columns` "
                                     f"should be > 0  and <= {len(column_names)}, which is "
                                     "the number of columns.")
                picked.append(int(v))
            elif v not in index:
                raise ValueError(f"{what}: Column {v} specified in `select_columns` must be "
                                 f"of one of the columns: {index.keys()}.")
            else:
                picked.append(index[v])
        dup_cols = {c for c in picked if picked.count(c) > 1}
        if dup_cols:
            raise ValueError(f"{what}: The `select_columns` argument contains duplicate "
                             f"columns: {dup_cols}.")
        select_columns = sorted(picked)

    if column_defaults is None:
        cols = range(len(column_names)) if select_columns is None else select_columns
        inferred = [None] * len(cols)
        num_cols = len(column_names)

        def rows():
            for path in filenames:
                with open_text(path) as f:
                    reader = csv.reader(f, **csv_kwargs)
                    row_num = 1
                    if header:
                        next(reader, None)
                        row_num += 1
                    for row in reader:
                        if len(row) != num_cols:
                            raise ValueError(f"{what}: Problem inferring types: CSV row "
                                             f"{row_num} has {len(row)} number of fields. "
                                             f"Expected: {num_cols}.")
                        row_num += 1
                        yield row

        for i, row in enumerate(rows()):
            if num_rows_for_inference is not None and i >= num_rows_for_inference:
                break
            for j, c in enumerate(cols):
                inferred[j] = _csv_infer_type(row[c], na_value, inferred[j])
        host = _Host.get()
        column_defaults = []
        for kind in inferred:
            kind = kind or "string"
            if kind == "string":
                a = np.empty(1, dtype=object)
                a[0] = b""
            else:
                a = np.zeros(1, dtype=kind)
            column_defaults.append(Tensor(a, host))
    else:
        column_defaults = list(column_defaults)

    if select_columns is not None and len(column_defaults) != len(select_columns):
        raise ValueError(f"{what}: If specified, `column_defaults` and `select_columns` must "
                         f"have the same length: `column_defaults` has length "
                         f"{len(column_defaults)}, `select_columns` has length "
                         f"{len(select_columns)}.")
    if select_columns is not None and len(column_names) > len(select_columns):
        column_names = [column_names[i] for i in select_columns]
    if label_name is not None and label_name not in column_names:
        raise ValueError(f"{what}: `label_name` provided must be one of the columns: "
                         f"{column_names}. Received: {label_name}.")

    def read_file(filename):
        records = _CsvDataset(filename, column_defaults, compression_type=compression_type,
                              header=header, field_delim=field_delim,
                              use_quote_delim=use_quote_delim, na_value=na_value,
                              select_cols=select_columns)
        records._skip_errors = bool(ignore_errors)
        return records

    spec = read_file(filenames[0])._element_spec()     # (checks the defaults once, now)
    cycle = (os.cpu_count() or 1) if num_parallel_reads == AUTOTUNE else num_parallel_reads
    dataset = files.interleave(read_file, cycle_length=cycle, block_length=1)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)

    def to_features(*columns):
        features = collections.OrderedDict(zip(column_names, columns))
        if label_name is not None:
            label = features.pop(label_name)
            return features, label
        return features

    lead = None if num_epochs is not None else dataset._size
    spec = to_features(*[TensorSpec([lead], s.dtype) for s in spec])
    return _Map(dataset, to_features, spec).prefetch(prefetch_buffer_size)


_CsvDataset.__name__ = _CsvDataset.__qualname__ = "CsvDataset"
_make_csv_dataset.__name__ = _make_csv_dataset.__qualname__ = "make_csv_dataset"


def _transformation(method, doc):
    """A ``tf.data.experimental`` function: ``f(*args)`` gives ``lambda ds:
    ds.<method>(*args)`` for ``ds.apply``."""
    def make(*args, **kwargs):
        return lambda dataset: getattr(dataset, method)(*args, **kwargs)
    make.__name__ = method
    make.__doc__ = doc
    return make


class _Experimental:
    """``gt.data.experimental``: the names TF scripts use from there (transformations for
    ``Dataset.apply``, options, constants)."""

    AUTOTUNE = AUTOTUNE
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY
    AutoShardPolicy = AutoShardPolicy
    AutotuneAlgorithm = AutotuneAlgorithm
    AutotuneOptions = AutotuneOptions
    DistributeOptions = DistributeOptions
    ExternalStatePolicy = ExternalStatePolicy
    OptimizationOptions = OptimizationOptions
    ServiceOptions = ServiceOptions
    ThreadingOptions = ThreadingOptions
    DatasetSpec = DatasetSpec
    Optional = Optional
    CsvDataset = _CsvDataset
    make_csv_dataset = staticmethod(_make_csv_dataset)
    sample_from_datasets = staticmethod(Dataset.sample_from_datasets)
    choose_from_datasets = staticmethod(Dataset.choose_from_datasets)
    scan = staticmethod(_transformation("scan", "``ds.scan(initial_state, scan_func)``."))
    take_while = staticmethod(_transformation("take_while", "``ds.take_while(predicate)``."))
    unique = staticmethod(_transformation("unique", "``ds.unique()``."))
    unbatch = staticmethod(_transformation("unbatch", "``ds.unbatch()``."))
    enumerate_dataset = staticmethod(_transformation("enumerate", "``ds.enumerate(start)``."))
    group_by_window = staticmethod(_transformation(
        "group_by_window", "``ds.group_by_window(key_func, reduce_func, window_size, "
        "window_size_func)``."))
    bucket_by_sequence_length = staticmethod(_transformation(
        "bucket_by_sequence_length", "``ds.bucket_by_sequence_length(...)``."))

    @staticmethod
    def cardinality(dataset) -> Tensor:
        return dataset.cardinality()

    @staticmethod
    def Counter(start=0, step=1, dtype="int64") -> Dataset:
        return Dataset.counter(start, step, dtype)

    @staticmethod
    def RandomDataset(seed=None) -> Dataset:
        return Dataset.random(seed)

    @staticmethod
    def get_single_element(dataset):
        return dataset.get_single_element()

    @staticmethod
    def assert_cardinality(expected_cardinality):
        """For ``ds.apply``: the dataset, declared to have ``expected_cardinality``
        elements (its ``cardinality()``), and checked as it is read
        (``FailedPreconditionError`` when the count differs)."""
        return lambda dataset: _AssertCardinality(dataset, expected_cardinality)

    @staticmethod
    def shuffle_and_repeat(buffer_size, count=None, seed=None):
        """For ``ds.apply``: ``ds.shuffle(buffer_size, seed).repeat(count)``."""
        return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)

    @staticmethod
    def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                      num_parallel_calls=None):
        """For ``ds.apply``: ``ds.map(map_func).batch(batch_size, drop_remainder)``."""
        return lambda dataset: dataset.map(map_func).batch(batch_size, drop_remainder)

    @staticmethod
    def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                            buffer_output_elements=None, prefetch_input_elements=None):
        """For ``ds.apply``: ``ds.interleave(map_func, cycle_length, block_length)`` (in
        the deterministic order)."""
        return lambda dataset: dataset.interleave(map_func, cycle_length, block_length)

    @staticmethod
    def prefetch_to_device(device, buffer_size=None):
        """For ``ds.apply``: ``ds.prefetch(buffer_size)`` (elements reach the device
        current when iteration starts, as every gradtape dataset's do)."""
        return lambda dataset: dataset.prefetch(AUTOTUNE if buffer_size is None
                                                else buffer_size)

    @staticmethod
    def copy_to_device(target_device, source_device="/cpu:0"):
        """For ``ds.apply``: the dataset as it is (elements reach the device current when
        iteration starts)."""
        return lambda dataset: dataset


experimental = _Experimental()
