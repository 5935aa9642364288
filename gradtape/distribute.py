"""``gt.distribute``: TensorFlow's single-machine strategies as they behave with one device.

gradtape runs a model on one device, so every strategy here has one replica
(``num_replicas_in_sync == 1``): a script written for ``tf.distribute`` runs unchanged, its
``strategy.run`` calls its step once, ``strategy.reduce`` and ``all_reduce`` over one replica
return the value (reduced along ``axis`` when one is given), and datasets pass through.

    strategy = gt.distribute.MirroredStrategy()          # the default device
    with strategy.scope():
        model = make_model()                             # variables on the strategy's device
        model.compile(optimizer="adam", loss="mse")      # model.distribute_strategy is strategy
    dist = strategy.experimental_distribute_dataset(dataset)
    for x in dist:
        per_replica = strategy.run(step, args=(x,))
        total = strategy.reduce(gt.distribute.ReduceOp.SUM, per_replica, axis=None)

``OneDeviceStrategy(device)`` places variables and computation on ``device``;
``MirroredStrategy()`` on the default device. A strategy over several devices is refused,
naming them: gradtape does not replicate a model.

``compute_average_loss`` and ``scale_regularization_loss`` are TF's ``tf.nn`` helpers of
custom training loops under a strategy (the loss summed and divided by the global batch
size; regularisation losses divided by the number of replicas).
"""
from __future__ import annotations

import contextlib
import enum
import threading
import types
from collections import namedtuple

import numpy as np

from . import backend as _backend
from . import nest as _nest
from .data import Dataset as _Dataset
from .misc import VariableAggregation, VariableSynchronization
from .tensor import Tensor, convert_to_tensor

__all__ = ["Strategy", "StrategyExtended", "OneDeviceStrategy", "MirroredStrategy",
           "ReplicaContext", "ReduceOp", "InputContext", "InputOptions",
           "InputReplicationMode", "DistributedDataset", "CrossDeviceOps", "NcclAllReduce",
           "HierarchicalCopyAllReduce", "ReductionToOneDevice", "get_strategy", "has_strategy",
           "in_cross_replica_context", "get_replica_context", "experimental_set_strategy",
           "compute_average_loss", "scale_regularization_loss", "cluster_resolver",
           "experimental", "VariableAggregation", "VariableSynchronization"]


class ReduceOp(enum.Enum):
    """How values combine across replicas: ``SUM`` or ``MEAN`` (also given as the strings
    ``"SUM"``/``"MEAN"``, in any case)."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation) -> "ReduceOp":
        """The ReduceOp of a :class:`VariableAggregation` (``SUM`` or ``MEAN``)."""
        table = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}
        if aggregation not in table:
            raise ValueError(f"Could not convert from `gt.VariableAggregation` {aggregation} "
                             "to `gt.distribute.ReduceOp` type")
        return table[aggregation]


def _reduce_op(value, opname) -> ReduceOp:
    if isinstance(value, ReduceOp):
        return value
    if isinstance(value, str):
        try:
            return ReduceOp(value.upper())
        except ValueError:
            pass
    raise ValueError(f"{opname}: {value!r} is not a valid ReduceOp (ReduceOp.SUM, "
                     "ReduceOp.MEAN, 'SUM' or 'MEAN')")


class InputReplicationMode(enum.Enum):
    """Whether an input pipeline serves a worker (``PER_WORKER``) or a replica."""
    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class InputOptions(namedtuple("InputOptions", [
        "experimental_fetch_to_device", "experimental_replication_mode",
        "experimental_place_dataset_on_device", "experimental_per_replica_buffer_size"])):
    """Options of ``experimental_distribute_dataset`` / ``distribute_datasets_from_function``
    (TF's fields; batches go to the strategy's device whatever they say)."""

    __slots__ = ()

    def __new__(cls, experimental_fetch_to_device=None,
                experimental_replication_mode=InputReplicationMode.PER_WORKER,
                experimental_place_dataset_on_device=False,
                experimental_per_replica_buffer_size=1):
        if experimental_fetch_to_device is None:
            experimental_fetch_to_device = True
        return super().__new__(cls, experimental_fetch_to_device, experimental_replication_mode,
                               experimental_place_dataset_on_device,
                               experimental_per_replica_buffer_size)


class InputContext:
    """What ``distribute_datasets_from_function`` tells its ``dataset_fn``: the number of
    input pipelines, this one's id, and the replicas in sync (1, 0 and 1 here)."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = int(num_input_pipelines)
        self._input_pipeline_id = int(input_pipeline_id)
        self._num_replicas_in_sync = int(num_replicas_in_sync)

    @property
    def num_input_pipelines(self) -> int:
        return self._num_input_pipelines

    @property
    def input_pipeline_id(self) -> int:
        return self._input_pipeline_id

    @property
    def num_replicas_in_sync(self) -> int:
        return self._num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size) -> int:
        """``global_batch_size`` divided by the replicas in sync (ValueError unless it
        divides)."""
        n = self._num_replicas_in_sync
        if global_batch_size % n != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {n} ")
        return global_batch_size // n

    def __str__(self):
        return (f"gt.distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")


class ValueContext:
    """What ``experimental_distribute_values_from_function`` tells its ``value_fn``."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id_in_sync_group = int(replica_id_in_sync_group)
        self._num_replicas_in_sync = int(num_replicas_in_sync)

    @property
    def replica_id_in_sync_group(self) -> int:
        return self._replica_id_in_sync_group

    @property
    def num_replicas_in_sync(self) -> int:
        return self._num_replicas_in_sync


# --- the current strategy, per thread -------------------------------------------------------

_local = threading.local()


def _stack() -> list:
    """``[(strategy, replica context or None), ...]``: None marks the cross-replica context
    of a ``strategy.scope()``; a replica context, a ``strategy.run`` in progress."""
    try:
        return _local.stack
    except AttributeError:
        _local.stack = []
        return _local.stack


def _current():
    st = _stack()
    return st[-1] if st else (_DEFAULT, _DEFAULT_REPLICA)


def get_strategy() -> "Strategy":
    """The strategy of the innermost ``strategy.scope()`` (or ``run``); the default strategy
    (one replica, no placement) outside any."""
    return _current()[0]


def has_strategy() -> bool:
    """Whether a strategy other than the default one is current."""
    return _current()[0] is not _DEFAULT


def in_cross_replica_context() -> bool:
    """True inside a ``strategy.scope()`` (and a ``merge_call``), False inside
    ``strategy.run`` and outside any scope."""
    return _current()[1] is None


def get_replica_context():
    """The :class:`ReplicaContext` of the ``strategy.run`` in progress (the default
    strategy's outside any scope), ``None`` in a cross-replica context."""
    return _current()[1]


@contextlib.contextmanager
def _entered(strategy, replica_context, device):
    st = _stack()
    st.append((strategy, replica_context))
    try:
        if device is None:
            yield
        else:
            with _backend.device_scope(device):
                yield
    finally:
        st.pop()


def _check_mixing(strategy):
    current = _current()[0]
    if current is _DEFAULT or current is strategy:
        return
    if strategy is _DEFAULT:
        raise RuntimeError("Must not nest gt.distribute.Strategy scopes.")
    raise RuntimeError(f"Mixing different gt.distribute.Strategy objects: {current!r} is not "
                       f"{strategy!r}")


def _require_cross_replica(strategy, opname):
    ctx = _current()[1]
    if ctx is not None and ctx is not _DEFAULT_REPLICA:
        raise RuntimeError(f"{opname}: Method requires being in cross-replica context, use "
                           "get_replica_context().merge_call()")


def experimental_set_strategy(strategy) -> None:
    """Make ``strategy`` current in this thread without a ``with`` block (``None``: back to
    the default strategy), as ``tf.distribute.experimental_set_strategy``."""
    old = getattr(_local, "set_scope", None)
    st = _stack()
    depth = 1 if old is not None else 0
    if len(st) > depth:
        raise RuntimeError("Must not be called inside a `gt.distribute.Strategy` scope.")
    if old is not None:
        _local.set_scope = None
        old.__exit__(None, None, None)
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _local.set_scope = scope


def _device_name(dev) -> str:
    return f"/job:localhost/replica:0/task:0/device:{dev.kind.upper()}:{dev.index}"


def _tensor(value):
    return value if isinstance(value, Tensor) else convert_to_tensor(value)


# --- strategies -------------------------------------------------------------------------------

class _Scope:
    """``strategy.scope()``: the strategy current and in a cross-replica context, new
    variables on its device. ``__enter__`` returns the strategy."""

    def __init__(self, strategy):
        self._strategy = strategy
        self._open = []

    def __enter__(self):
        s = self._strategy
        _check_mixing(s)
        ctx = _DEFAULT_REPLICA if s is _DEFAULT else None
        cm = _entered(s, ctx, s._device)
        cm.__enter__()
        self._open.append(cm)
        return s

    def __exit__(self, *exc):
        return self._open.pop().__exit__(*exc)


class StrategyExtended:
    """``strategy.extended``: the device lists and the update calls scripts use."""

    def __init__(self, container_strategy):
        self._strategy = container_strategy

    def _devices(self):
        dev = self._strategy._device or _backend.current_device()
        return (_device_name(dev),)

    @property
    def worker_devices(self) -> tuple:
        """The full names of the replicas' devices (one)."""
        return self._devices()

    @property
    def parameter_devices(self) -> tuple:
        """The full names of the devices variables live on (one)."""
        return self._devices()

    def non_slot_devices(self, var_list):
        return self._devices()

    @property
    def experimental_require_static_shapes(self) -> bool:
        return False

    @property
    def should_checkpoint(self) -> bool:
        return True

    @property
    def should_save_summary(self) -> bool:
        return True

    @property
    def experimental_should_init(self) -> bool:
        return True

    def colocate_vars_with(self, colocate_with_variable):
        """A scope placing new variables with ``colocate_with_variable`` (on the one
        device anyway)."""
        return contextlib.nullcontext()

    def value_container(self, value):
        """The container of a (replica-local) value: the value itself."""
        return value

    def read_var(self, v) -> Tensor:
        """The value of variable ``v`` read in a cross-replica context."""
        from .ops.core import identity
        return identity(v)

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """``fn(var, *args, **kwargs)`` run on ``var``'s device in a cross-replica context
        (how distributed optimizers update their variables)."""
        s = self._strategy
        with _entered(s, None, getattr(var, "device", None)):
            return fn(var, *args, **(kwargs or {}))

    def reduce_to(self, reduce_op, value, destinations, options=None):
        """``value`` reduced over the replicas (one) for ``destinations``."""
        _reduce_op(reduce_op, "reduce_to")
        return _tensor(value)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None) -> list:
        """:meth:`reduce_to` of each ``(value, destinations)`` pair."""
        _reduce_op(reduce_op, "batch_reduce_to")
        return [_tensor(v) for v, _ in value_destination_pairs]

    def broadcast_to(self, tensor, destinations):
        return tensor

    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """As ``strategy.run(fn, args, kwargs)``."""
        return self._strategy.run(fn, args=args, kwargs=kwargs)


class Strategy:
    """A distribution strategy with one replica (the base of the strategies here): see the
    module docstring. ``device`` is where it places variables and runs steps (``None``: no
    placement, the default strategy's)."""

    def __init__(self, extended=None, device=None):
        self._extended = extended if extended is not None else StrategyExtended(self)
        self._device = device

    # (a model records the strategy it was made under; copies share it)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    @property
    def extended(self) -> StrategyExtended:
        return self._extended

    @property
    def num_replicas_in_sync(self) -> int:
        """1: gradtape runs a model on one device."""
        return 1

    @property
    def cluster_resolver(self):
        """None: a single-machine strategy has no cluster."""
        return None

    def scope(self) -> _Scope:
        """``with strategy.scope():`` makes the strategy current (variables, models and
        optimizers made inside belong to it)."""
        return _Scope(self)

    def run(self, fn, args=(), kwargs=None, options=None):
        """``fn(*args, **kwargs)`` run once (one replica) in a replica context on the
        strategy's device; its result is the per-replica value."""
        _require_cross_replica(self, "run")
        _check_mixing(self)
        if self is _DEFAULT:
            return fn(*args, **(kwargs or {}))
        dev = self._device
        rid = _on(dev, lambda: convert_to_tensor(0, dtype="int32"))
        with _entered(self, ReplicaContext(self, rid), dev):
            return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op, value, axis):
        """``value`` (a per-replica value or a tensor) reduced across the replicas (one:
        itself) and, when ``axis`` is given, along ``axis`` (``SUM``: the sum, ``MEAN``: the
        sum divided by the number of elements reduced)."""
        op = _reduce_op(reduce_op, "reduce")
        _require_cross_replica(self, "reduce")
        v = _tensor(value)
        if axis is None:
            return v
        from .ops.reduce import reduce_sum
        axes = [axis] if isinstance(axis, int) else list(axis)
        total = reduce_sum(v, axis=axis)
        if op is ReduceOp.SUM:
            return total
        count = 1
        for a in axes:
            count *= v.shape[a]
        return total / count

    def gather(self, value, axis):
        """``value`` concatenated along ``axis`` over the replicas (one: itself)."""
        _require_cross_replica(self, "gather")
        return _nest.map_structure(_tensor, value)

    def experimental_local_results(self, value) -> tuple:
        """The values of each local replica: ``(value,)``."""
        return (value,)

    def experimental_distribute_dataset(self, dataset, options=None) -> "DistributedDataset":
        """``dataset`` served to the replica (one): its batches, delivered to the strategy's
        device."""
        if not isinstance(dataset, _Dataset):
            raise TypeError(f"experimental_distribute_dataset: expected a gt.data.Dataset, got "
                            f"{type(dataset).__name__}")
        if options is not None and \
                options.experimental_replication_mode is InputReplicationMode.PER_REPLICA:
            raise NotImplementedError("InputReplicationMode.PER_REPLICA is only supported in "
                                      "`distribute_datasets_from_function`.")
        return DistributedDataset(dataset, self)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """The dataset ``dataset_fn(input_context)`` returns, served to the replica (one
        input pipeline, one replica)."""
        dataset = dataset_fn(InputContext(1, 0, self.num_replicas_in_sync))
        if not isinstance(dataset, _Dataset):
            raise TypeError(f"distribute_datasets_from_function: dataset_fn must return a "
                            f"gt.data.Dataset, it returned {type(dataset).__name__}")
        return DistributedDataset(dataset, self)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        """``value_fn(value_context)`` for the replica (one)."""
        return value_fn(ValueContext(0, self.num_replicas_in_sync))


def _on(dev, make):
    with _backend.device_scope(dev):
        return make()


class OneDeviceStrategy(Strategy):
    """Variables and computation on ``device`` (``"/gpu:0"``, ``"cpu"``), one replica, as
    ``tf.distribute.OneDeviceStrategy``."""

    def __init__(self, device):
        if not isinstance(device, (str, _backend.Device)):
            raise TypeError(f"OneDeviceStrategy: device must be a device name such as "
                            f"'/gpu:0', got {device!r}")
        super().__init__(device=_backend.get_device(device))


class CrossDeviceOps:
    """How a strategy combines values across devices (one device: as they are)."""

    def reduce(self, reduce_op, per_replica_value, destinations, options=None):
        _reduce_op(reduce_op, "reduce")
        return _tensor(per_replica_value)

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None) -> list:
        _reduce_op(reduce_op, "batch_reduce")
        return [_tensor(v) for v, _ in value_destination_pairs]

    def broadcast(self, tensor, destinations):
        return tensor


def _num_packs(num_packs, who):
    if not isinstance(num_packs, int) or num_packs < 0:
        raise ValueError(f"{who} requires num_packs >= 0, but {num_packs} is specified.")
    return num_packs


class NcclAllReduce(CrossDeviceOps):
    def __init__(self, num_packs=1):
        self.num_packs = _num_packs(num_packs, "NCCL all-reduce")


class HierarchicalCopyAllReduce(CrossDeviceOps):
    def __init__(self, num_packs=1):
        self.num_packs = _num_packs(num_packs, "HierarchicalCopy")


class ReductionToOneDevice(CrossDeviceOps):
    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn


class MirroredStrategy(Strategy):
    """``tf.distribute.MirroredStrategy`` over one device: ``devices`` (a list of one device
    name) or, by default, the default device (``gt.config.default_device()``). Several
    devices are refused: gradtape does not replicate a model."""

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            dev = _backend.default_device()
        else:
            if isinstance(devices, (str, _backend.Device)):
                raise ValueError(f"MirroredStrategy: devices must be a list of device names, "
                                 f"got {devices!r} (write [{str(devices)!r}])")
            devices = list(devices)
            if not devices:
                raise ValueError("Must specify at least one device.")
            resolved = [_backend.get_device(d) for d in devices]
            if len(set(d.name for d in resolved)) != len(resolved):
                raise ValueError(f"No duplicates allowed in `devices` argument: {devices}")
            if len(resolved) > 1:
                names = ", ".join(str(d) for d in devices)
                raise ValueError(f"MirroredStrategy: gradtape runs a model on one device and "
                                 f"does not replicate it; {len(resolved)} devices were given "
                                 f"({names}). Use one device: MirroredStrategy([{devices[0]!r}]) "
                                 f"or OneDeviceStrategy({devices[0]!r})")
            dev = resolved[0]
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise TypeError(f"MirroredStrategy: cross_device_ops must be a "
                            f"gt.distribute.CrossDeviceOps, got {cross_device_ops!r}")
        super().__init__(device=dev)
        self._cross_device_ops = cross_device_ops


class _DefaultDistributionStrategy(Strategy):
    """The strategy current outside any scope: one replica, no placement."""


class ReplicaContext:
    """The context of one replica while ``strategy.run`` runs a step (and, outside any
    scope, the default strategy's): its id, the replicas in sync, and the cross-replica
    calls."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id_in_sync_group = replica_id_in_sync_group

    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's number (0): an int32 scalar inside ``strategy.run``."""
        return self._replica_id_in_sync_group

    @property
    def devices(self) -> tuple:
        return self._strategy.extended.worker_devices

    def all_reduce(self, reduce_op, value, options=None):
        """``value`` (a tensor or a nest of them) summed or averaged over the replicas
        (one: the value itself)."""
        _reduce_op(reduce_op, "all_reduce")
        return _nest.map_structure(_tensor, value)

    def all_gather(self, value, axis, options=None):
        """``value`` concatenated along ``axis`` over the replicas (one: itself)."""
        return _nest.map_structure(_tensor, value)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """``merge_fn(strategy, *args, **kwargs)`` run in the cross-replica context."""
        s = self._strategy
        with _entered(s, None, None):
            return merge_fn(s, *args, **(kwargs or {}))


_DEFAULT = _DefaultDistributionStrategy()
_DEFAULT_REPLICA = ReplicaContext(_DEFAULT, 0)


# --- datasets -----------------------------------------------------------------------------------

class DistributedDataset(_Dataset):
    """A dataset served to a strategy's replica: iterating it delivers each element to the
    strategy's device (``for x in dist: strategy.run(step, args=(x,))``). It is a
    ``gt.data.Dataset``, so ``model.fit`` takes it as well."""

    def __init__(self, dataset, strategy):
        self._dataset = dataset
        self._strategy = strategy

    def _generate(self):
        return self._dataset._iter()

    def _cardinality(self):
        return self._dataset._cardinality()

    def _element_spec(self):
        return self._dataset._element_spec()

    def __iter__(self):
        dev = self._strategy._device
        if dev is None:
            return iter(self._dataset)
        with _backend.device_scope(dev):
            return iter(self._dataset)

    def __repr__(self):
        return f"<DistributedDataset of {self._dataset!r}>"


# --- losses of custom training loops --------------------------------------------------------

def _check_replica_context(opname):
    if has_strategy() and in_cross_replica_context():
        raise RuntimeError(f"You are calling `{opname}` in cross replica context, while it was "
                           "expected to be called in replica context.")


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None) -> Tensor:
    """``sum(per_example_loss * sample_weight) / global_batch_size``, as
    ``tf.nn.compute_average_loss``: ``global_batch_size`` defaults to the batch size of
    ``per_example_loss`` times the replicas in sync, and a zero one gives 0. ``sample_weight``
    (a scalar or per-example weights, one axis more or less than the loss is squeezed or
    expanded) scales the losses. Called under a strategy, it belongs in ``strategy.run``."""
    from .ops.core import cast
    from .ops.math import divide_no_nan, multiply
    from .ops.reduce import reduce_sum
    from .ops.shape import expand_dims, squeeze
    opname = "compute_average_loss"
    loss = _tensor(per_example_loss)
    in_dt = loss.dtype
    if not in_dt.is_floating:
        raise TypeError(f"{opname}: per_example_loss must be a float tensor, got "
                        f"{in_dt.name}")
    if loss.ndim == 0:
        raise ValueError(f"Invalid value passed for `per_example_loss`. Expected a tensor with "
                         f"at least rank 1. Received per_example_loss={loss} with rank 0")
    if sample_weight is not None:
        w = cast(_tensor(sample_weight), "float32")
        scaled = cast(loss, "float32")
        if w.ndim and w.ndim - scaled.ndim == 1:
            w = squeeze(w, [-1])
        elif w.ndim and scaled.ndim - w.ndim == 1:
            w = expand_dims(w, -1)
        loss = cast(multiply(scaled, w), in_dt)
    if global_batch_size is None:
        _check_replica_context(opname)
        global_batch_size = loss.shape[0] * get_strategy().num_replicas_in_sync
    gbs = global_batch_size
    if isinstance(gbs, Tensor):
        if gbs.ndim != 0:
            raise ValueError(f"{opname}: global_batch_size must be scalar, got shape "
                             f"{tuple(gbs.shape)}")
        if not gbs.dtype.is_integer:
            raise TypeError(f"{opname}: global_batch_size must be an integer, got "
                            f"{gbs.dtype.name}")
        gbs = gbs.numpy()
    if isinstance(gbs, (bool, np.bool_)) or not isinstance(gbs, (int, np.integer)):
        raise TypeError(f"{opname}: global_batch_size must be an integer, got {gbs!r}")
    if gbs < 0:
        from .registry import InvalidArgumentError
        raise InvalidArgumentError(f"{opname}: global_batch_size must be non-negative, got "
                                   f"{int(gbs)}")
    total = reduce_sum(loss)
    denom = _on(total.device, lambda: convert_to_tensor(float(gbs), dtype=in_dt))
    return divide_no_nan(total, denom)


def scale_regularization_loss(regularization_loss) -> Tensor:
    """The sum of ``regularization_loss`` (a tensor, or a list of tensors of one shape such
    as ``model.losses``) divided by the replicas in sync, as
    ``tf.nn.scale_regularization_loss``; under a strategy it belongs in ``strategy.run``."""
    from .ops.reduce import reduce_sum
    from .ops.shape import stack
    _check_replica_context("scale_regularization_loss")
    if isinstance(regularization_loss, (list, tuple)):
        # (one tensor of the losses, as TF converts the list; none: 0.0)
        regularization_loss = stack([_tensor(t) for t in regularization_loss]) \
            if regularization_loss else convert_to_tensor(0.0)
    return reduce_sum(_tensor(regularization_loss)) / get_strategy().num_replicas_in_sync


# --- cluster resolvers ------------------------------------------------------------------------

class TPUClusterResolver:
    """``tf.distribute.cluster_resolver.TPUClusterResolver``: gradtape finds no TPU, so this
    raises ValueError as TF does on a machine without one (the usual
    ``try: TPUClusterResolver() except ValueError: strategy = get_strategy()`` falls back)."""

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",
                 coordinator_name=None, coordinator_address=None, credentials="default",
                 service=None, discovery_url=None):
        if not tpu:
            raise ValueError("Please provide a TPU Name to connect to.")
        raise ValueError(f"TPUClusterResolver: gradtape cannot connect to TPU {tpu!r}; it runs "
                         "on the CPU and CUDA GPUs")


cluster_resolver = types.SimpleNamespace(TPUClusterResolver=TPUClusterResolver)
experimental = types.SimpleNamespace(ValueContext=ValueContext)
