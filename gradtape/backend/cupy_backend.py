"""CUDA GPUs through CuPy. Imported only when a GPU device is asked for."""
from __future__ import annotations

import threading

import numpy as np

from .base import Device, DeviceError, native_order, single_value


def load_cupy():
    """Import CuPy and count devices; return ``(cupy, count, reason)``."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, 0, f"CuPy is not installed or failed to import ({type(exc).__name__}: {exc}); " \
                        "install the `cuda12` (or `cuda13`) extra: pip install 'gradtape[cuda12]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return cupy, 0, f"CuPy {cupy.__version__} found no usable CUDA driver or device ({exc})"
    if count == 0:
        return cupy, 0, f"CuPy {cupy.__version__} imported but no CUDA device is visible"
    return cupy, count, None


class CupyDevice(Device):
    host_visible = False
    fused_updates = True

    def __init__(self, index: int, cupy, count: int):
        super().__init__("gpu", index)
        self.xp = cupy
        self._cupy = cupy
        self.needs_switch = count > 1
        if self.needs_switch:
            from . import base
            base.SWITCHING_DEVICES = True
        self.peak_bytes = 0

    def is_native(self, value) -> bool:
        return isinstance(value, self._cupy.ndarray)

    def asarray(self, value, dtype=None):
        if isinstance(value, self._cupy.ndarray) and value.device.id != self.index:
            out = self._peer_copy(value, value.device.id)
            if dtype is None:
                return out
            with self.activate():             # cast here, on this GPU's stream
                return out.astype(dtype, copy=False)
        one = None if isinstance(value, self._cupy.ndarray) else single_value(value, dtype)
        with self.activate():
            if one is not None:
                return self._cupy.full(*one)            # a fill kernel: no copy to wait on
            if not isinstance(value, self._cupy.ndarray):
                self.transfer_count += 1                # an upload (refused in a capture)
            return self._cupy.asarray(native_order(value), dtype=dtype)

    def _peer_copy(self, array, source_index):
        """``array`` of GPU ``source_index`` copied to this GPU, after the work queued on the
        source's current stream (the copy runs on this GPU's stream, which would otherwise
        not wait for it)."""
        cupy = self._cupy
        cuda = cupy.cuda
        with cuda.Device(source_index):
            # a strided source is made contiguous there first, before the event, so the
            # copy reads finished data; the source stream then waits for the copy before
            # it may reuse that memory
            src = cupy.ascontiguousarray(array)
            source_stream = cuda.get_current_stream()
            done = source_stream.record()
        with self.activate():
            stream = cuda.get_current_stream()
            stream.wait_event(done)
            out = src.copy()
            copied = stream.record()
        source_stream.wait_event(copied)
        return out

    def to_host(self, array) -> np.ndarray:
        self.sync_count += 1
        if isinstance(array, self._cupy.ndarray):
            return array.get()
        return np.asarray(array)

    def from_other(self, array, source: Device):
        if isinstance(source, CupyDevice):
            return self._peer_copy(array, source.index)
        return self.asarray(source.to_host(array))

    def owns_memory(self, array) -> bool:
        # memory another library lent (a DLPack import, __cuda_array_interface__) is never
        # written in place: only blocks of CuPy's own allocators are this array's
        if array.base is not None:
            return False
        memory = self._cupy.cuda.memory
        return type(array.data.mem) in (memory.PooledMemory, memory.Memory)

    def copy(self, array):
        with self.activate():
            return array.copy()

    def scatter_add(self, target, indices, values):
        import cupyx
        with self.activate():
            cupyx.scatter_add(target, indices, values)

    def erf(self, x):
        from cupyx.scipy.special import erf
        return erf(x).astype(x.dtype, copy=False)

    def erfc(self, x):
        from cupyx.scipy.special import erfc
        return erfc(x).astype(x.dtype, copy=False)

    def errstate(self):
        import contextlib
        return contextlib.nullcontext()

    def synchronize(self):
        self._cupy.cuda.Device(self.index).synchronize()

    def activate(self):
        """A context making this GPU current. A new ``cupy.cuda.Device`` each time: one keeps
        a stack of the devices it replaced, which threads sharing it would mix up."""
        return self._cupy.cuda.Device(self.index)

    def memory_info(self) -> dict:
        """Bytes in use and held by CuPy's memory pool on this GPU, and the peak in use: at
        every allocation since :meth:`reset_peak` (which starts the tracking; reading the
        pool's usage costs a walk over its blocks, so allocations skip it until asked), and
        before that the highest usage seen by these calls."""
        with self.activate():
            pool = self._cupy.get_default_memory_pool()
            used = pool.used_bytes()
            total = pool.total_bytes()
        peak = max(self.peak_bytes, _ALLOCATOR.peak.get(self.index, 0) if _ALLOCATOR else 0, used)
        self.peak_bytes = peak
        return {"device": self.name, "used_bytes": used, "pool_bytes": total, "peak_bytes": peak}

    def reset_peak(self):
        """Measure the peak from the bytes in use now, at every allocation from here on."""
        with self.activate():
            used = self._cupy.get_default_memory_pool().used_bytes()
        self.peak_bytes = used
        if _ALLOCATOR is not None:
            _ALLOCATOR.peak[self.index] = used
            _ALLOCATOR.track_peak = True


class DeviceOutOfMemoryError(DeviceError, MemoryError):
    """A GPU allocation failed even after the memory pool's cached blocks were freed."""


def _fmt_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


class PoolAllocator:
    """CuPy allocator used by gradtape: CuPy's default memory pool, plus

    * out-of-memory handling: a failed allocation frees the pool's cached blocks (and
      CuPy's pinned host pool), collects garbage and retries once, then raises
      :class:`DeviceOutOfMemoryError` naming the device, the request and the pool's usage
      (while a step is being captured gradtape frees nothing more, as that would
      synchronise: CuPy's own retry has already freed its cached blocks);
    * the peak of bytes in use per device, read at each allocation once ``track_peak`` is
      set (by ``reset_peak``: CuPy's ``used_bytes`` walks every block in use);
    * ``keep``: while this thread captures a step into a CUDA graph, every block it takes
      from the pool is kept alive there, so no block the graph uses is handed out again.
      Within the capture, a block whose arrays have all died is handed to a later request
      of the same (rounded) size, as PyTorch's graph pools do: the capture records one
      stream, so in the graph every later kernel runs after the block's earlier uses. A
      captured step then holds about what its eager step peaks at, not the sum of its
      temporaries.
    """

    def __init__(self, cupy):
        self._cupy = cupy
        self._pool = cupy.get_default_memory_pool()
        self._oom = cupy.cuda.memory.OutOfMemoryError
        self._local = threading.local()
        self.peak = {}
        self.track_peak = False

    @property
    def keep(self):
        return getattr(self._local, "keep", None)

    @keep.setter
    def keep(self, value):
        arena = getattr(self._local, "arena", None)
        if arena is not None:
            arena.close()
        self._local.keep = value
        self._local.arena = None if value is None else _CaptureArena(value)

    def __call__(self, size):
        pool = self._pool
        arena = getattr(self._local, "arena", None)
        if arena is not None and size:
            mem = arena.lend(size, self)
        else:
            try:
                mem = pool.malloc(size)
            except self._oom:
                mem = self._retry(size)
            if arena is not None:
                arena.keep.append(mem)
        if self.track_peak:
            used = pool.used_bytes()
            dev = mem.device_id
            if used > self.peak.get(dev, 0):
                self.peak[dev] = used
        return mem

    def _retry(self, size):
        import gc
        pool = self._pool
        used, held = pool.used_bytes(), pool.total_bytes()
        if self.keep is not None:            # capturing: freeing blocks would synchronise
            raise self._error(size, used, held, "") from None
        pool.free_all_blocks()
        try:
            self._cupy.get_default_pinned_memory_pool().free_all_blocks()
        except Exception:  # pinned pool unavailable: nothing cached there to free
            pass
        gc.collect()
        try:
            return pool.malloc(size)
        except self._oom:
            raise self._error(size, used, held, " Cached blocks were freed and the allocation "
                                                "retried once.") from None

    def _error(self, size, used, held, retried):
        dev = self._cupy.cuda.Device().id
        try:
            free, total = self._cupy.cuda.runtime.memGetInfo()
            device_line = f"; the device has {_fmt_bytes(free)} free of {_fmt_bytes(total)}"
        except Exception:
            device_line = ""
        return DeviceOutOfMemoryError(
            f"gpu:{dev}: out of memory allocating {_fmt_bytes(size)} ({size} bytes); the "
            f"memory pool had {_fmt_bytes(used)} in use and held {_fmt_bytes(held)}"
            f"{device_line}.{retried} Use a smaller batch, free tensors you no longer need, "
            "or check gt.config.memory_info()")


class _CaptureArena:
    """The blocks of one capture: ``keep`` holds every block taken from the pool (for the
    graph's lifetime); ``free`` the blocks, by rounded size, whose arrays died during the
    capture. Arrays get a pointer whose owner returns its block here when they die."""

    __slots__ = ("keep", "free", "open", "_pointer", "_unowned")

    def __init__(self, keep):
        from cupy.cuda.memory import MemoryPointer, UnownedMemory
        self.keep = keep
        self.free = {}
        self.open = True
        self._pointer, self._unowned = MemoryPointer, UnownedMemory

    def close(self):
        # (leases of arrays that outlive the capture hold their own block; the list of
        # all blocks belongs to the captured step alone)
        self.open = False
        self.free = {}
        self.keep = None

    def lend(self, size, alloc):
        cuda = alloc._cupy.cuda
        rounded = -(-size // _BLOCK_ROUND) * _BLOCK_ROUND
        # a block is reused only on the device and stream that last used it (a step that
        # forks onto another stream gets fresh blocks there)
        key = (cuda.Device().id, cuda.get_current_stream().ptr, rounded)
        spare = self.free.get(key)
        if spare:
            block = spare.pop()
        else:
            pool = alloc._pool
            try:
                block = pool.malloc(rounded)
            except alloc._oom:
                raise alloc._error(rounded, pool.used_bytes(), pool.total_bytes(), "") from None
            self.keep.append(block)
        lease = _Lease(self, block, key)
        return self._pointer(self._unowned(block.ptr, size, lease, block.device_id), 0)


class _Lease:
    """Owner of a block lent during a capture: returns it to the capture's free list when
    the last array using it dies while the capture still runs."""

    __slots__ = ("arena", "block", "key")

    def __init__(self, arena, block, key):
        self.arena, self.block, self.key = arena, block, key

    def __del__(self):
        arena = self.arena
        if arena.open:
            arena.free.setdefault(self.key, []).append(self.block)


_BLOCK_ROUND = 512          # CuPy's pool rounds every request up to a multiple of 512 bytes
_ALLOCATOR = None


def allocator():
    """The :class:`PoolAllocator` in use (None before a GPU device exists)."""
    return _ALLOCATOR


def make_devices():
    global _ALLOCATOR
    cupy, count, reason = load_cupy()
    if cupy is None or count == 0:
        return [], reason
    if _ALLOCATOR is None:
        _ALLOCATOR = PoolAllocator(cupy)
        cupy.cuda.set_allocator(_ALLOCATOR)
    return [CupyDevice(i, cupy, count) for i in range(count)], None


_INSTALL_HINT = ("to use a GPU, run on a machine with an NVIDIA GPU and driver and install CuPy "
                 "for its CUDA version: pip install 'gradtape[cuda12]' (or 'gradtape[cuda13]')")


def require_gpu(index: int, devices, reason):
    if not devices:
        raise DeviceError(f"gpu:{index} was asked for but no GPU is usable: {reason}. "
                          f"CuPy or a CUDA device is missing; {_INSTALL_HINT}")
    if index >= len(devices):
        raise DeviceError(f"gpu:{index} was asked for but only {len(devices)} GPU(s) exist "
                          f"(gpu:0..gpu:{len(devices) - 1})")
    return devices[index]
