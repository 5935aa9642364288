"""Device configuration and introspection (``gt.config``): TF's calls that scripts make at
set-up (physical and logical devices, visibility, memory limits, soft placement, threads,
graph-optimizer switches) and gradtape's own (``list_devices``, ``memory_info``,
``sync_count``)."""
from __future__ import annotations

import types as _types
from collections import namedtuple as _namedtuple

from . import _config_experimental as experimental
from . import backend as _backend

__all__ = ["list_devices", "list_physical_devices", "list_logical_devices",
           "get_visible_devices", "set_visible_devices", "default_device", "sync_count",
           "memory_info", "gpu_unavailable_reason", "run_functions_eagerly",
           "functions_run_eagerly", "experimental_run_functions_eagerly",
           "experimental_functions_run_eagerly", "experimental", "PhysicalDevice",
           "LogicalDevice", "LogicalDeviceConfiguration", "set_logical_device_configuration",
           "get_logical_device_configuration", "set_soft_device_placement",
           "get_soft_device_placement", "threading", "optimizer"]


class _DeviceRecord:
    """What PhysicalDevice and LogicalDevice share: TF's namedtuple ``(name, device_type)``,
    which also compares equal to the gradtape :class:`~gradtape.Device` it names."""

    __slots__ = ()

    def device(self):
        """The gradtape Device this names."""
        raise NotImplementedError

    def __eq__(self, other):
        if isinstance(other, _backend.Device):
            try:
                return self.device() is other
            except _backend.DeviceError:
                return False
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__


class PhysicalDevice(_DeviceRecord, _namedtuple("PhysicalDevice", ["name", "device_type"])):
    """A device of the machine, as ``tf.config.PhysicalDevice``:
    ``PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')``. GPUs keep CUDA's
    numbering whatever ``set_visible_devices`` hides."""

    __slots__ = ()

    def device(self):
        kind, index = _backend.parse_device_name(self.name)
        if kind == "gpu":
            return _backend.physical_gpu(index)
        return _backend.get_device(f"{kind}:{index}")


class LogicalDevice(_DeviceRecord, _namedtuple("LogicalDevice", ["name", "device_type"])):
    """A device ops run on, as ``tf.config.LogicalDevice``:
    ``LogicalDevice(name='/device:GPU:0', device_type='GPU')``; visible GPUs are numbered from
    0 (``gt.device(logical.name)`` places on it)."""

    __slots__ = ()

    def device(self):
        return _backend.get_device(self.name)


class LogicalDeviceConfiguration(_namedtuple("LogicalDeviceConfiguration", [
        "memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """The configuration of a logical device (``memory_limit`` in MB), as
    ``tf.config.LogicalDeviceConfiguration``."""

    __slots__ = ()

    def __new__(cls, memory_limit=None, experimental_priority=None,
                experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority,
                               experimental_device_ordinal)


experimental.VirtualDeviceConfiguration = LogicalDeviceConfiguration


def _physical(dev) -> PhysicalDevice:
    return PhysicalDevice(f"/physical_device:{dev.kind.upper()}:{dev.index}", dev.kind.upper())


def _device_of(spec):
    """The gradtape Device of a PhysicalDevice, LogicalDevice, Device or name."""
    if isinstance(spec, _DeviceRecord):
        return spec.device()
    return _backend.get_device(spec)


def list_devices():
    """Every usable device: ``cpu:0`` and each CUDA GPU (``gpu:N``)."""
    return _backend.list_devices()


def _of_type(devs, device_type):
    if device_type is None:
        return list(devs)
    kind = device_type.lower()
    return [d for d in devs if d.kind == kind]


def list_physical_devices(device_type=None):
    """The CPU and every CUDA GPU (``device_type``: ``"CPU"`` or ``"GPU"`` to filter), hidden
    ones included, as :class:`PhysicalDevice` records (TF's)."""
    return [_physical(d) for d in _of_type(_backend.physical_devices(), device_type)]


def get_visible_devices(device_type=None):
    """The physical devices not hidden by :func:`set_visible_devices`."""
    return [_physical(d) for d in _of_type(_backend.list_devices(), device_type)]


def list_logical_devices(device_type=None):
    """The devices ops can run on (one per visible physical device) as
    :class:`LogicalDevice` records: ``/device:CPU:0``, ``/device:GPU:0`` ... with the visible
    GPUs numbered from 0."""
    out = []
    counts = {}
    for d in _backend.list_devices():
        k = counts.get(d.kind, 0)
        counts[d.kind] = k + 1
        out.append(LogicalDevice(f"/device:{d.kind.upper()}:{k}", d.kind.upper()))
    if device_type is None:
        return out
    return [d for d in out if d.device_type == device_type.upper()]


def set_visible_devices(devices, device_type=None):
    """Keep only ``devices`` (a device, a name, or a list of them) of ``device_type`` visible,
    as ``tf.config.set_visible_devices``: ``set_visible_devices([], "GPU")`` runs everything on
    the CPU. The CPU cannot be hidden. As in TF, the visible GPUs are then numbered from 0:
    ``gpu:0`` is the first visible one (a Device object keeps its physical name)."""
    if devices is None or isinstance(devices, (str, _backend.Device, _DeviceRecord)):
        devices = [] if devices is None else [devices]
    kinds = {"cpu", "gpu"} if device_type is None else {device_type.lower()}
    if not kinds <= {"cpu", "gpu"}:
        raise ValueError(f"set_visible_devices: device_type must be 'CPU' or 'GPU', got "
                         f"{device_type!r}")
    parsed = []
    for d in devices:
        if isinstance(d, _DeviceRecord):
            d = d.device()
        kind, index = (d.kind, d.index) if isinstance(d, _backend.Device) else \
            _backend.parse_device_name(str(d))
        if kind not in ("cpu", "gpu"):
            raise ValueError(f"set_visible_devices: {kind}:{index} is not a CPU or GPU device")
        if kind not in kinds:
            raise ValueError(f"set_visible_devices: {kind}:{index} is not of device_type "
                             f"{device_type!r}")
        parsed.append((kind, index))
    # (the CPU always stays visible; asking to hide it explicitly is an error)
    if device_type is not None and kinds == {"cpu"} and ("cpu", 0) not in parsed:
        raise ValueError("set_visible_devices: the CPU cannot be hidden")
    if "gpu" in kinds:
        _backend.set_visible_gpus([i for k, i in parsed if k == "gpu"])


_EAGER = [False]


def run_functions_eagerly(run_eagerly: bool) -> None:
    """TF's switch for ``tf.function``; gradtape's :func:`gradtape.function` always runs
    eagerly, so this only records the setting (read by :func:`functions_run_eagerly`)."""
    _EAGER[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """The setting of :func:`run_functions_eagerly`."""
    return _EAGER[0]


def default_device():
    """The device tensors go to when no ``gt.device`` scope is active."""
    return _backend.default_device()


def gpu_unavailable_reason():
    """Why no GPU is used (``None`` when one is)."""
    return _backend.gpu_unavailable_reason()


def sync_count(device=None) -> int:
    """Host synchronisations so far (``.numpy()``, ``float()`` ... of device tensors)."""
    if device is not None:
        return _backend.get_device(device).sync_count
    devices = list(_backend.list_devices()) + list(_backend._extra.values())
    return sum(d.sync_count for d in devices)


def memory_info(device=None) -> dict:
    """Bytes in use, held by the memory pool, and the peak seen, for a device."""
    return _backend.get_device(device).memory_info()


def experimental_run_functions_eagerly(run_eagerly: bool) -> None:
    """TF's older name of :func:`run_functions_eagerly`."""
    run_functions_eagerly(run_eagerly)


def experimental_functions_run_eagerly() -> bool:
    """TF's older name of :func:`functions_run_eagerly`."""
    return functions_run_eagerly()


# --- placement ------------------------------------------------------------------------------

_SOFT_PLACEMENT = [True]


def set_soft_device_placement(enabled) -> None:
    """TF's fallback of ops without a kernel on the asked device to another one. gradtape
    runs every op on its inputs' device (an op a device cannot run raises, naming it), so
    this records the setting for :func:`get_soft_device_placement`."""
    _SOFT_PLACEMENT[0] = bool(enabled)


def get_soft_device_placement() -> bool:
    """The setting of :func:`set_soft_device_placement` (True by default, as TF)."""
    return _SOFT_PLACEMENT[0]


# --- logical device configurations -----------------------------------------------------------

_LOGICAL_CONFIGS = {}       # device name -> [LogicalDeviceConfiguration]
_MIB = 1 << 20


def _physical_arg(device, opname):
    if isinstance(device, PhysicalDevice):
        return device.device()
    if isinstance(device, _backend.Device) and device.kind in ("cpu", "gpu"):
        return device
    raise ValueError(f"Unrecognized device: {device!r} ({opname} takes a PhysicalDevice from "
                     "gt.config.list_physical_devices())")


def _apply_memory_limit(dev, limit_mb):
    """Cap the memory pool of GPU ``dev`` at ``limit_mb`` MB (None: no cap); an allocation
    beyond it raises the device's out-of-memory error."""
    with dev.activate():
        dev.xp.get_default_memory_pool().set_limit(size=0 if limit_mb is None else
                                                   int(limit_mb * _MIB))


def set_logical_device_configuration(device, logical_devices) -> None:
    """Configure the logical devices of a physical device (a :class:`PhysicalDevice`), as
    ``tf.config.set_logical_device_configuration``: a list of
    :class:`LogicalDeviceConfiguration`. On a GPU, one configuration whose ``memory_limit``
    (MB) caps the device's memory pool (allocations beyond it raise the out-of-memory
    error); gradtape does not split a GPU into several logical devices. On the CPU the
    configurations are recorded (a memory limit is refused there, as in TF)."""
    dev = _physical_arg(device, "set_logical_device_configuration")
    configs = list(logical_devices)
    for c in configs:
        if not isinstance(c, LogicalDeviceConfiguration):
            raise TypeError(f"set_logical_device_configuration: expected "
                            f"LogicalDeviceConfiguration objects, got {c!r}")
    if not configs:
        raise ValueError(f"set_logical_device_configuration: {dev} needs at least one "
                         "LogicalDeviceConfiguration")
    if dev.kind == "cpu":
        if any(c.memory_limit is not None for c in configs):
            raise ValueError("Setting memory limit on CPU virtual devices is currently not "
                             "supported")
    else:
        if len(configs) > 1:
            raise ValueError(f"set_logical_device_configuration: gradtape does not split "
                             f"{dev} into {len(configs)} logical devices (one "
                             "LogicalDeviceConfiguration per GPU, to set its memory_limit)")
        limit = configs[0].memory_limit
        if limit is not None and (isinstance(limit, bool) or not limit > 0):
            raise ValueError(f"set_logical_device_configuration: memory_limit must be a "
                             f"positive number of MB, got {limit!r}")
        _apply_memory_limit(dev, limit)
    _LOGICAL_CONFIGS[dev.name] = configs


def get_logical_device_configuration(device):
    """The configurations :func:`set_logical_device_configuration` set for ``device`` (a
    PhysicalDevice), or None."""
    dev = _physical_arg(device, "get_logical_device_configuration")
    found = _LOGICAL_CONFIGS.get(dev.name)
    return None if found is None else list(found)


# --- threads and the graph optimizer (recorded) ---------------------------------------------

_THREADS = {"intra": 0, "inter": 0}


def _thread_count(num_threads, what):
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
        raise TypeError(f"set_{what}_op_parallelism_threads: num_threads must be a "
                        f"non-negative int, got {num_threads!r}")
    _THREADS[what] = int(num_threads)


def set_intra_op_parallelism_threads(num_threads) -> None:
    """Record the threads of one op (0: the system chooses); NumPy's and CuPy's libraries
    pick their own."""
    _thread_count(num_threads, "intra")


def get_intra_op_parallelism_threads() -> int:
    return _THREADS["intra"]


def set_inter_op_parallelism_threads(num_threads) -> None:
    """Record the threads running independent ops (0: the system chooses); gradtape runs
    ops one after another in the calling thread."""
    _thread_count(num_threads, "inter")


def get_inter_op_parallelism_threads() -> int:
    return _THREADS["inter"]


threading = _types.SimpleNamespace(
    set_intra_op_parallelism_threads=set_intra_op_parallelism_threads,
    get_intra_op_parallelism_threads=get_intra_op_parallelism_threads,
    set_inter_op_parallelism_threads=set_inter_op_parallelism_threads,
    get_inter_op_parallelism_threads=get_inter_op_parallelism_threads)

_JIT = [False]
# TF's graph-rewrite switches in the order get_experimental_options lists them; the two
# plain booleans are always listed
_TOGGLES = ("layout_optimizer", "constant_folding", "shape_optimization", "remapping",
            "arithmetic_optimization", "dependency_optimization", "loop_optimization",
            "function_optimization", "debug_stripper", "disable_model_pruning",
            "scoped_allocator_optimization", "pin_to_host_optimization",
            "implementation_selector", "auto_mixed_precision", "use_plugin_optimizers",
            "disable_meta_optimizer", "auto_mixed_precision_onednn_bfloat16",
            "auto_mixed_precision_mkl")
_ALWAYS = ("disable_model_pruning", "disable_meta_optimizer")
_OPTIONS = {}


def _set_jit(enabled):
    """Record XLA auto-clustering (``"autoclustering"`` or True turns it on, anything else
    off); gradtape compiles no graphs."""
    _JIT[0] = enabled in (True, "autoclustering")


def _get_jit() -> str:
    """``"autoclustering"`` when :func:`set_jit` turned it on, else ``""``."""
    return "autoclustering" if _JIT[0] else ""


def _set_experimental_options(options):
    """Record TF's graph-optimizer switches (a dict; unknown keys are ignored, as TF)."""
    _OPTIONS.update(dict(options))


def _get_experimental_options() -> dict:
    """The switches set so far (the two plain booleans always listed), as TF's."""
    out = {}
    for key in _TOGGLES:
        if key in _ALWAYS:
            out[key] = bool(_OPTIONS.get(key, False))
        elif key in _OPTIONS:
            out[key] = bool(_OPTIONS[key])
    if _OPTIONS.get("min_graph_nodes"):
        out["min_graph_nodes"] = int(_OPTIONS["min_graph_nodes"])
    return out


optimizer = _types.SimpleNamespace(
    set_jit=_set_jit, get_jit=_get_jit, set_experimental_options=_set_experimental_options,
    get_experimental_options=_get_experimental_options)
