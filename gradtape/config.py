"""Device configuration and introspection (``gt.config``)."""
from __future__ import annotations

from . import _config_experimental as experimental
from . import backend as _backend

__all__ = ["list_devices", "list_physical_devices", "list_logical_devices",
           "get_visible_devices", "set_visible_devices", "default_device", "sync_count",
           "memory_info", "gpu_unavailable_reason", "run_functions_eagerly",
           "functions_run_eagerly", "experimental"]


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
    ones included, as TF's."""
    return _of_type(_backend.physical_devices(), device_type)


def get_visible_devices(device_type=None):
    """The devices not hidden by :func:`set_visible_devices`."""
    return _of_type(_backend.list_devices(), device_type)


#: TF's logical devices: here one per visible physical device
list_logical_devices = get_visible_devices


def set_visible_devices(devices, device_type=None):
    """Keep only ``devices`` (a device, a name, or a list of them) of ``device_type`` visible,
    as ``tf.config.set_visible_devices``: ``set_visible_devices([], "GPU")`` runs everything on
    the CPU. The CPU cannot be hidden. As in TF, the visible GPUs are then numbered from 0:
    ``gpu:0`` is the first visible one (a Device object keeps its physical name)."""
    if devices is None or isinstance(devices, (str, _backend.Device)):
        devices = [] if devices is None else [devices]
    kinds = {"cpu", "gpu"} if device_type is None else {device_type.lower()}
    if not kinds <= {"cpu", "gpu"}:
        raise ValueError(f"set_visible_devices: device_type must be 'CPU' or 'GPU', got "
                         f"{device_type!r}")
    parsed = []
    for d in devices:
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
