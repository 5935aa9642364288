"""Device configuration and introspection (``gt.config``)."""
from __future__ import annotations

from . import _config_experimental as experimental
from . import backend as _backend

__all__ = ["list_devices", "list_physical_devices", "default_device", "sync_count",
           "memory_info", "gpu_unavailable_reason", "experimental"]


def list_devices():
    """Every usable device: ``cpu:0`` and each CUDA GPU (``gpu:N``)."""
    return _backend.list_devices()


def list_physical_devices(device_type=None):
    devs = _backend.list_devices()
    if device_type is None:
        return devs
    kind = device_type.lower()
    return [d for d in devs if d.kind == kind]


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
