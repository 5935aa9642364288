"""Device registry, the default device and the per-thread device stack.

This is the one place that chooses a backend; ops ask a tensor's device for its ``xp``.
"""
from __future__ import annotations

import os
import re
import threading

from .base import Device, DeviceError

__all__ = ["Device", "DeviceError", "get_device", "default_device", "current_device",
           "device_scope", "list_devices", "gpu_unavailable_reason", "parse_device_name", "CPU"]

CPU = Device("cpu", 0)

_gpus = None          # list of GPU devices once probed
_gpu_reason = None    # why no GPU is used, when none is
_extra = {}           # other registered devices by name (the strict test device)
_local = threading.local()
_default = None
_hidden = set()       # indices of GPUs hidden by gt.config.set_visible_devices

_NAME = re.compile(r"^/?(?:job:[^/]*/)?(?:replica:\d+/)?(?:task:\d+/)?(?:(?:physical_)?device:)?"
                   r"(cpu|gpu|cuda|strict)(?::(\d+))?$", re.IGNORECASE)


def parse_device_name(spec: str):
    """``"gpu"``, ``"GPU:1"``, ``"/device:GPU:0"``, ``"cuda:0"`` -> ``("gpu", 1)``."""
    m = _NAME.match(spec.strip())
    if not m:
        raise DeviceError(f"unknown device {spec!r}: use 'cpu', 'gpu' or 'gpu:N'")
    kind = m.group(1).lower()
    kind = "gpu" if kind == "cuda" else kind
    return kind, int(m.group(2) or 0)


def _probe_gpus():
    global _gpus, _gpu_reason
    if _gpus is None:
        from .cupy_backend import make_devices
        _gpus, _gpu_reason = make_devices()
    return _gpus


def gpu_unavailable_reason():
    """Why no GPU is available (``None`` when one is)."""
    _probe_gpus()
    return _gpu_reason


def register_device(device: Device):
    """Make an extra device (for example the strict test device) reachable by name."""
    _extra[device.name] = device
    return device


def get_device(spec=None) -> Device:
    """The :class:`Device` for a name or Device; ``None`` gives the current device."""
    if spec is None:
        return current_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string like 'cpu' or 'gpu:0' or a Device, got {spec!r}")
    kind, index = parse_device_name(spec)
    if kind == "cpu":
        if index != 0:
            raise DeviceError(f"cpu:{index} does not exist; the host is cpu:0")
        return CPU
    if kind == "gpu":
        from .cupy_backend import require_gpu
        if not _hidden:
            return require_gpu(index, _probe_gpus(), _gpu_reason)
        # as TF: with GPUs hidden, gpu:N is the N-th visible one
        visible = _visible_gpus()
        if index >= len(visible):
            raise DeviceError(f"gpu:{index} was asked for but only {len(visible)} GPU(s) are "
                              f"visible (gt.config.set_visible_devices hid "
                              f"{', '.join(f'gpu:{i}' for i in sorted(_hidden))})")
        return visible[index]
    dev = _extra.get(f"{kind}:{index}")
    if dev is None:
        if kind == "strict":
            from .strict import StrictDevice
            return register_device(StrictDevice(index))
        raise DeviceError(f"unknown device {spec!r}")
    return dev


def default_device() -> Device:
    """GRADTAPE_DEVICE if set, else the first CUDA GPU when CuPy answers, else the CPU."""
    global _default
    if _default is None:
        env = os.environ.get("GRADTAPE_DEVICE", "").strip()
        if env:
            _default = get_device(env)
        else:
            gpus = _visible_gpus()
            _default = gpus[0] if gpus else CPU
    return _default


def _stack():
    try:
        return _local.stack
    except AttributeError:
        _local.stack = []
        return _local.stack


def current_device() -> Device:
    """The device new tensors are placed on: the innermost ``gt.device`` scope or the default."""
    stack = _stack()
    return stack[-1] if stack else default_device()


class device_scope:
    """``with gt.device("cpu"):`` places tensors created inside on that device."""

    __slots__ = ("device",)

    def __init__(self, spec):
        self.device = get_device(spec)
        if self.device.kind == "gpu" and self.device.index in _hidden:
            raise DeviceError(f"{self.device} is hidden by gt.config.set_visible_devices")

    def __enter__(self):
        _stack().append(self.device)
        return self.device

    def __exit__(self, *exc):
        _stack().pop()
        return False


def physical_gpu(index: int) -> Device:
    """GPU ``index`` as CUDA numbers it (the device an array's memory is on), whatever
    ``set_visible_devices`` hid."""
    from .cupy_backend import require_gpu
    return require_gpu(index, _probe_gpus(), _gpu_reason)


def device_of(xp, array) -> Device:
    """The device owning ``array`` of namespace ``xp`` (for device-specific functions such as
    the special functions, called from inside an op's forward)."""
    dev = getattr(xp, "gradtape_device", None)
    if dev is not None:
        return dev
    if xp.__name__ == "numpy":
        return CPU
    return physical_gpu(array.device.id)


def list_devices():
    """Every usable device: the CPU and each CUDA GPU not hidden by
    :func:`set_visible_gpus`."""
    return [CPU] + _visible_gpus()


def _visible_gpus():
    return [g for g in _probe_gpus() if g.index not in _hidden]


def physical_devices():
    """The CPU and every CUDA GPU, hidden or not."""
    return [CPU] + list(_probe_gpus())


def set_visible_gpus(indices):
    """Make only the GPUs ``indices`` usable (the others raise when asked for); the default
    device is chosen again unless ``GRADTAPE_DEVICE`` fixes it."""
    global _default
    gpus = _probe_gpus()
    keep = set(indices)
    unknown = sorted(keep - {g.index for g in gpus})
    if unknown:
        raise DeviceError(f"set_visible_devices: no gpu:{unknown[0]} ({len(gpus)} GPU(s) exist)")
    _hidden.clear()
    _hidden.update(g.index for g in gpus if g.index not in keep)
    if not os.environ.get("GRADTAPE_DEVICE", "").strip():
        _default = None
