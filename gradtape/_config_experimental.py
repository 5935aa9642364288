"""``gt.config.experimental``: TensorFlow's ``tf.config.experimental`` memory calls, so that a
TF script's device set-up ports unchanged."""
from __future__ import annotations

__all__ = ["list_physical_devices", "list_logical_devices", "get_visible_devices",
           "set_visible_devices", "get_memory_info", "reset_memory_stats", "set_memory_growth",
           "get_memory_growth", "VirtualDeviceConfiguration", "set_virtual_device_configuration",
           "get_virtual_device_configuration"]

#: TF's older name of ``gt.config.LogicalDeviceConfiguration`` (set by gradtape.config)
VirtualDeviceConfiguration = None


def list_physical_devices(device_type=None):
    """As ``gt.config.list_physical_devices``."""
    from .config import list_physical_devices as listed
    return listed(device_type)


def list_logical_devices(device_type=None):
    """As ``gt.config.list_logical_devices``."""
    from .config import list_logical_devices as listed
    return listed(device_type)


def get_visible_devices(device_type=None):
    """As ``gt.config.get_visible_devices``."""
    from .config import get_visible_devices as visible
    return visible(device_type)


def set_visible_devices(devices, device_type=None):
    """As ``gt.config.set_visible_devices``."""
    from .config import set_visible_devices as set_visible
    set_visible(devices, device_type)


def _device(device):
    """The gradtape Device of a PhysicalDevice, LogicalDevice, Device or name."""
    from .config import _device_of
    return _device_of(device)


def _memory_device(device, opname):
    dev = _device(device)
    if dev.kind == "cpu":
        raise ValueError(f"{opname}: {dev} keeps no memory statistics (NumPy allocates from the "
                         "C heap; tracemalloc measures it); use a GPU device such as 'GPU:0'")
    return dev


def get_memory_info(device) -> dict:
    """``{"current": bytes in use, "peak": most bytes in use}`` on a GPU (``"GPU:0"``), as
    ``tf.config.experimental.get_memory_info``. The peak is tracked at every allocation from
    :func:`reset_memory_stats` on; before that it is the highest usage these calls saw."""
    info = _memory_device(device, "get_memory_info").memory_info()
    current = info["used_bytes"] or 0
    return {"current": int(current), "peak": int(max(info["peak_bytes"] or 0, current))}


def reset_memory_stats(device) -> None:
    """Start the peak of :func:`get_memory_info` again from the bytes in use now."""
    dev = _memory_device(device, "reset_memory_stats")
    if hasattr(dev, "reset_peak"):
        dev.reset_peak()
    else:                                   # the strict test device
        dev.peak_bytes = dev.memory_info()["used_bytes"] or 0


def _gpu(device, opname):
    dev = _device(device)
    if dev.kind == "cpu":
        raise ValueError(f"{opname}: memory growth applies to GPUs, not {dev}")
    return dev


def set_memory_growth(device, enable) -> None:
    """Accepted for TF scripts; gradtape's memory pool already grows on demand (CuPy takes
    GPU memory as arrays need it, never the whole device up front), so there is nothing to
    switch. ``device``: a device from :func:`list_physical_devices` or a name."""
    _gpu(device, "set_memory_growth")
    if not isinstance(enable, bool):
        raise TypeError(f"set_memory_growth: enable must be a bool, got {enable!r}")


def get_memory_growth(device) -> bool:
    """True: the pool grows on demand (see :func:`set_memory_growth`)."""
    _gpu(device, "get_memory_growth")
    return True


def set_virtual_device_configuration(device, logical_devices) -> None:
    """TF's older name of ``gt.config.set_logical_device_configuration``."""
    from .config import set_logical_device_configuration
    set_logical_device_configuration(device, logical_devices)


def get_virtual_device_configuration(device):
    """TF's older name of ``gt.config.get_logical_device_configuration``."""
    from .config import get_logical_device_configuration
    return get_logical_device_configuration(device)

