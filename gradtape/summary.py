"""TensorFlow 2's ``tf.summary`` for eager scripts: TensorBoard event files, written with NumPy
and the standard library only (no TensorFlow, no TensorBoard, no protobuf package).

    writer = gt.summary.create_file_writer("logs/run1")
    with writer.as_default():
        for step in range(100):
            ...
            gt.summary.scalar("loss", loss, step=step)
            gt.summary.histogram("weights", w, step=step)

The files are what TF 2 writes: ``events.out.tfevents.<time>.<host>.<pid>.<n>.v2`` records in
TFRecord framing (length, masked CRC32C of the length, a serialized ``Event`` protobuf, masked
CRC32C of it), the first holding ``file_version: "brain.Event:2"``; every summary is one
``Summary.Value`` with a tag, a ``TensorProto`` and the plugin metadata TensorBoard's
dashboards look for (``scalars``: a float32 0-d tensor; ``histograms``: a float64 ``[k, 3]``
tensor of bucket left edge, right edge and count, bucketed as TF does, 30 buckets by default;
``text``: a string tensor; ``images``: width, height and PNG-encoded images). TensorBoard and
``tf.compat.v1.train.summary_iterator`` read them.

The summary functions return True when they wrote, False when there is no default writer (or
``record_if`` turned recording off), as TF's; a summary with no step, while a writer would
record it, raises ``ValueError``. The values of device tensors are copied to the host, with
one read per summary call (a device step tensor travels in the same copy as the data).
``should_record_summaries`` and the summary functions give Python bools where TF gives bool
tensors. Graph-only parts of ``tf.summary`` (``graph``, ``trace_on``/``trace_export``) and
``audio`` are not provided.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import socket
import struct
import sys
import threading
import time
import types
import weakref
import zlib

import numpy as np

from . import io as _io
from ._proto import field_bytes as _field_bytes, field_varint as _field_int, varint as _varint

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "scalar", "histogram",
           "text", "image", "audio", "write", "record_if", "should_record_summaries", "flush",
           "experimental"]

DEFAULT_BUCKET_COUNT = 30          # tf.summary.histogram's default


# --- CRC32C and TFRecord framing (gt.io's), protobuf encoding (gradtape._proto's) ------------
# (an event file is a TFRecord file of the few messages written below)

crc32c, masked_crc32c, _record = _io.crc32c, _io.masked_crc32c, _io._frame


def _field_double(field: int, value: float) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<d", value)


# TensorFlow's DataType enum
_DTYPES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
           "int64": 9, "bool": 10, "uint16": 17, "float16": 19, "uint32": 22, "uint64": 23}
_DT_STRING = 7


def _as_bytes(s) -> bytes:
    if isinstance(s, bytes):
        return s
    if isinstance(s, np.bytes_):
        return bytes(s)
    return str(s).encode("utf-8")


def _tensor_proto(array: np.ndarray) -> bytes:
    """A serialized ``TensorProto``: ``dtype``, ``tensor_shape`` (always present, as TF writes
    it), then ``tensor_content`` (little-endian bytes) for numbers or ``string_val`` for
    strings, as TF's event writer does."""
    shape = b"".join(_field_bytes(2, _field_int(1, int(d))) for d in array.shape)
    if array.dtype.kind in "USO":
        body = b"".join(_field_bytes(8, _as_bytes(s)) for s in array.reshape(-1))
        return _field_int(1, _DT_STRING) + _field_bytes(2, shape) + body
    enum = _DTYPES.get(array.dtype.name)
    if enum is None:
        raise TypeError(f"summary: cannot write a tensor of dtype {array.dtype.name}")
    content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return (_field_int(1, enum) + _field_bytes(2, shape)
            + (_field_bytes(4, content) if content else b""))


def _metadata(plugin_name: str, content: bytes = b"", description=None) -> bytes:
    """A serialized ``SummaryMetadata`` naming the TensorBoard plugin."""
    plugin = _field_bytes(1, plugin_name.encode())
    if content:
        plugin += _field_bytes(2, content)
    out = _field_bytes(1, plugin)
    if description:
        out += _field_bytes(3, str(description).encode("utf-8"))
    return out


def _summary_event(wall_time: float, step: int, tag: str, tensor: bytes,
                   metadata: bytes) -> bytes:
    """A serialized ``Event`` holding one ``Summary.Value`` (tag, tensor, metadata)."""
    value = _field_bytes(1, tag.encode("utf-8")) + _field_bytes(8, tensor)
    if metadata:
        value += _field_bytes(9, metadata)
    summary = _field_bytes(1, value)
    return _field_double(1, wall_time) + _field_int(2, step) + _field_bytes(5, summary)


def _file_version_event(wall_time: float) -> bytes:
    source = _field_bytes(1, b"gradtape.summary")           # SourceMetadata.writer
    return (_field_double(1, wall_time) + _field_bytes(3, b"brain.Event:2")
            + _field_bytes(10, source))


# --- writers -------------------------------------------------------------------------------

class _State(threading.local):
    def __init__(self):
        self.writer = None
        self.step = None
        self.is_recording = None


_state = _State()
_file_counter = itertools.count()
_counter_lock = threading.Lock()


class SummaryWriter:
    """A summary writer (``tf.summary.SummaryWriter``): ``as_default()`` makes it the
    writer the summary functions write to."""

    def set_as_default(self, step=None):
        """Make this the default writer of the current thread (and ``step``, when given,
        the default step) until another is set."""
        self.as_default(step).__enter__()

    def as_default(self, step=None):
        """A context manager that makes this the default writer (and ``step``, when given,
        the default step) inside it; on exit it flushes and restores the previous ones."""
        return _SummaryContextManager(self, step)

    def init(self):
        raise NotImplementedError

    def flush(self):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError


class _SummaryContextManager:
    # a class, not a generator, so that set_as_default can enter it for good (as TF)
    def __init__(self, writer, step=None):
        self._writer = writer
        self._step = step
        self._old_writer = None
        self._old_step = None

    def __enter__(self):
        self._old_writer = _state.writer
        _state.writer = self._writer
        if self._step is not None:
            self._old_step = _state.step
            _state.step = self._step
        return self._writer

    def __exit__(self, *exc):
        _state.writer.flush()
        _state.writer = self._old_writer
        if self._step is not None:
            _state.step = self._old_step
        return False


class _EventFile:
    """The open event file and its queue of records (kept apart from the writer so that a
    finalizer can flush and close it when the writer is garbage collected or at exit)."""

    def __init__(self, path, max_queue, flush_millis):
        self.path = path
        self.max_queue = max_queue
        self.flush_secs = flush_millis / 1000.0
        self.lock = threading.Lock()
        self.queue = []
        self.file = open(path, "wb")
        self.file.write(_record(_file_version_event(time.time())))
        self.file.flush()
        self.last_flush = time.monotonic()

    def add(self, payload: bytes):
        with self.lock:
            if self.file is None:
                raise RuntimeError(f"summary: the writer of {self.path} is closed")
            self.queue.append(_record(payload))
            # as TF's SummaryFileWriter: flush past max_queue events or flush_millis
            if (len(self.queue) > self.max_queue
                    or time.monotonic() - self.last_flush > self.flush_secs):
                self._flush()

    def _flush(self):
        if self.file is None:
            return
        if self.queue:
            self.file.write(b"".join(self.queue))
            self.queue.clear()
        self.file.flush()
        self.last_flush = time.monotonic()

    def flush(self):
        with self.lock:
            self._flush()

    def close(self):
        with self.lock:
            self._flush()
            if self.file is not None:
                self.file.close()
                self.file = None


class _FileWriter(SummaryWriter):
    """The writer :func:`create_file_writer` makes: one event file in ``logdir``."""

    def __init__(self, logdir, max_queue, flush_millis, filename_suffix):
        os.makedirs(logdir, exist_ok=True)
        with _counter_lock:
            n = next(_file_counter)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{n}{filename_suffix}")
        self._file = _EventFile(os.path.join(logdir, name), max_queue, flush_millis)
        self._closed = False
        self._finalizer = weakref.finalize(self, self._file.close)

    @property
    def path(self) -> str:
        """The event file this writer writes."""
        return self._file.path

    def __repr__(self):
        return f"<gt.summary.SummaryWriter {self._file.path!r}>"

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"SummaryWriter {self!r} is already closed")

    def set_as_default(self, step=None):
        self._check_open()
        super().set_as_default(step)

    def as_default(self, step=None):
        self._check_open()
        return super().as_default(step)

    def init(self):
        """Nothing to do: the file is made when the writer is (TF runs its init op then)."""
        self._check_open()

    def flush(self):
        """Write the queued summaries to the file."""
        if not self._closed:
            self._file.flush()

    def close(self):
        """Flush and close the file; the writer cannot be used again."""
        if not self._closed:
            self._closed = True
            self._finalizer()

    def _write(self, payload: bytes):
        if self._closed:
            raise RuntimeError(f"summary: cannot write to SummaryWriter {self!r}: it is "
                               "closed")
        self._file.add(payload)


class _NoopSummaryWriter(SummaryWriter):
    """A writer that does nothing: ``as_default`` leaves the default writer as it is."""

    def set_as_default(self, step=None):
        pass

    @contextlib.contextmanager
    def as_default(self, step=None):
        yield

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def _nonneg_int(value, label):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 0:
        raise ValueError(f"create_file_writer: {label} must be an int >= 0, got {value!r}")
    return int(value)


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """A writer of a new event file in ``logdir`` (made if missing), as
    ``tf.summary.create_file_writer``: the summaries queue up and are written every
    ``max_queue`` (10) summaries, when ``flush_millis`` (120000) have passed at a write, at
    ``flush()``, at the end of ``as_default()`` and at ``close()``. The file name ends with
    ``filename_suffix`` (``".v2"``). ``name`` (a graph op name in TF) is ignored."""
    del name
    if logdir is None:
        raise ValueError("Argument `logdir` cannot be None")
    logdir = os.fspath(logdir)
    max_queue = 10 if max_queue is None else _nonneg_int(max_queue, "max_queue")
    flush_millis = 120000 if flush_millis is None else _nonneg_int(flush_millis,
                                                                   "flush_millis")
    suffix = ".v2" if filename_suffix is None else str(filename_suffix)
    return _FileWriter(logdir, max_queue, flush_millis, suffix)


def create_noop_writer():
    """A writer that does nothing (a stand-in where code expects one)."""
    return _NoopSummaryWriter()


def flush(writer=None, name=None):
    """Flush ``writer`` (by default the default writer, if any)."""
    del name
    if writer is None:
        writer = _state.writer
        if writer is None:
            return None
    if isinstance(writer, SummaryWriter):
        return writer.flush()
    raise ValueError(f"Invalid argument to flush(): {writer!r}")


# --- recording state -------------------------------------------------------------------------

@contextlib.contextmanager
def record_if(condition):
    """Record summaries inside only if ``condition`` holds: a bool, a bool tensor, or a
    callable giving one (called at every summary, so ``lambda: step % 100 == 0`` follows
    ``step``)."""
    old = _state.is_recording
    try:
        _state.is_recording = condition
        yield
    finally:
        _state.is_recording = old


def should_record_summaries() -> bool:
    """True when a summary written now would be recorded: a default writer is set and the
    ``record_if`` condition (if any) holds."""
    if _state.writer is None:
        return False
    cond = _state.is_recording
    if callable(cond):
        cond = cond()
    if cond is None:
        return True
    if hasattr(cond, "numpy"):
        cond = cond.numpy()
    return bool(cond)


def get_step():
    """The default step of the current thread (set by ``set_step`` or ``as_default(step)``),
    or None."""
    return _state.step


def set_step(step):
    """Set the default step of the current thread: an int or an int Variable (read at each
    summary, so ``set_step(optimizer.iterations)`` follows training); None unsets it."""
    _state.step = step


@contextlib.contextmanager
def summary_scope(name, default_name="summary", values=None):
    """``with summary_scope(name) as (tag, scope):`` the summary tag for ``name`` under the
    current name scope, inside a name scope for the summary, as
    ``tf.summary.experimental.summary_scope``."""
    from .array_ops import get_current_name_scope, name_scope
    del values
    name = name or default_name
    current = get_current_name_scope()
    tag = f"{current}/{name}" if current else name
    with name_scope(name) as scope:
        yield tag, scope


def _tag(name, who):
    if not isinstance(name, str):
        raise TypeError(f"{who}: name must be a string, got {type(name).__name__}")
    from .array_ops import get_current_name_scope
    current = get_current_name_scope()
    return f"{current}/{name}" if current else name


# --- values ------------------------------------------------------------------------------------

def _is_tensor(x):
    from .tensor import Tensor
    return isinstance(x, Tensor)


def _check_step(step, who):
    """Validate ``step`` (an int, or an int scalar tensor) without reading a device."""
    if step is None:
        return
    if _is_tensor(step):
        if step._value.ndim != 0 and step._value.size != 1:
            raise ValueError(f"{who}: step must be a scalar, got a tensor of shape "
                             f"{tuple(step.shape)}")
        if step._value.dtype.kind not in "iu":
            raise TypeError(f"{who}: step must be an integer, got a {step.dtype.name} tensor")
        return
    arr = np.asarray(step)
    if arr.size != 1:
        raise ValueError(f"{who}: step must be a scalar, got shape {arr.shape}")
    if arr.dtype.kind == "f" and float(arr.reshape(())).is_integer():
        return
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{who}: step must be an integer, got {step!r}")


def _read(data, step):
    """``(data on the host as a NumPy array, step as an int)``, reading a device at most once:
    a device tensor and a device step of the same device come back in one copy."""
    host_step = None
    if _is_tensor(step) and step._device.host_visible:
        host_step = int(np.asarray(step._value).reshape(()))
    elif not _is_tensor(step):
        host_step = int(np.asarray(step).reshape(()))
    if _is_tensor(data) and not data._device.host_visible:
        dev = data._device
        if host_step is None and step._device is dev:
            xp = dev.xp
            with dev.activate():
                raw = xp.ascontiguousarray(data._value).reshape(-1).view(xp.uint8)
                s = step._value.astype(xp.int64).reshape(-1).view(xp.uint8)
                both = dev.to_host(xp.concatenate([raw, s]))
            value = np.frombuffer(both[:-8].tobytes(), dtype=data._value.dtype)
            return (value.reshape(data._value.shape),
                    int(np.frombuffer(both[-8:].tobytes(), np.int64)[0]))
        value = np.asarray(dev.to_host(data._value))
    elif _is_tensor(data):
        value = np.asarray(data._value)
    else:
        value = data
    if host_step is None:
        host_step = int(step.numpy())
    return value, host_step


def _host_array(value, who):
    """``value`` (already off any device, or host data) as a NumPy array."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)) and any(_is_tensor(v) for v in value):
        from .tensor import convert_to_tensor
        value = convert_to_tensor(value).numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{who}: cannot read {type(value).__name__} as an array: "
                        f"{exc}") from None


def _shape_of(data):
    if _is_tensor(data):
        return tuple(data._value.shape)
    if isinstance(data, (list, tuple)) and any(_is_tensor(v) for v in data):
        return None
    return np.shape(data)


def _emit(tag, data, step, metadata, encode, who):
    """Write one summary if the default writer records now: ``encode(host data)`` gives the
    ``TensorProto`` bytes. Returns whether it wrote."""
    _check_step(step, who)
    writer = _state.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter):
        return False
    if not should_record_summaries():
        return False
    if step is None:
        step = _state.step
        if step is None:
            raise ValueError("No step set. Please specify one either through the `step` "
                             "argument or through tf.summary.experimental.set_step()")
        _check_step(step, who)
    if callable(data) and not _is_tensor(data):
        data = data()
    value, step = _read(data, step)
    tensor = encode(value)
    writer._write(_summary_event(time.time(), step, tag, tensor, metadata))
    return True


# --- the summaries -----------------------------------------------------------------------------

def _numeric(arr, who):
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{who}: data must be numeric, got dtype {arr.dtype}")
    return arr


def scalar(name, data, step=None, description=None):
    """Write a scalar (a float32, TensorBoard's "Scalars" dashboard) under ``name`` at
    ``step`` (default: ``experimental.get_step()``)."""
    shape = _shape_of(data)
    if shape is not None and shape != ():
        raise ValueError(f"scalar: data must be a scalar, got shape {shape} for {name!r}")
    tag = _tag(name, "scalar")

    def encode(value):
        arr = _numeric(_host_array(value, "scalar"), "scalar")
        if arr.shape != ():
            raise ValueError(f"scalar: data must be a scalar, got shape {arr.shape} for "
                             f"{name!r}")
        return _tensor_proto(arr.astype(np.float32))

    return _emit(tag, data, step, _metadata("scalars", description=description), encode,
                 "scalar")


def _check_buckets(buckets):
    if buckets is None:
        return DEFAULT_BUCKET_COUNT
    if isinstance(buckets, (bool, np.bool_)) or not isinstance(buckets, (int, np.integer)):
        raise TypeError(f"histogram: buckets must be an int, got {buckets!r}")
    return max(0, int(buckets))


def histogram_buckets(data, bucket_count=None) -> np.ndarray:
    """TF 2's histogram of ``data`` (flattened, as float64): a ``[k, 3]`` float64 array of
    bucket left edge, right edge and count. ``k`` equal-width buckets span ``[min, max]``
    (the last includes ``max``); all-equal data puts every count in the last bucket, with
    both edges at the value; no data gives ``k`` zero rows."""
    k = _check_buckets(bucket_count)
    x = np.asarray(data, dtype=np.float64).reshape(-1)
    if x.size == 0 or k == 0:
        return np.zeros((k, 3), np.float64)
    lo, hi = x.min(), x.max()
    span = hi - lo
    if span == 0:
        counts = np.zeros(k, np.float64)
        counts[-1] = x.size
        edges = np.full(k, hi)
        return np.stack([edges, edges, counts], axis=1)
    width = span / k
    with np.errstate(invalid="ignore", over="ignore"):
        idx = np.floor((x - lo) / width)
        idx = np.where(np.isfinite(idx), idx, -1).astype(np.int64)
    idx = np.minimum(idx, k - 1)
    counts = np.bincount(idx[idx >= 0], minlength=k).astype(np.float64)
    # tf.linspace(lo, hi, k + 1) computes lo + width * i; the last edge is hi
    edges = np.concatenate([[lo], lo + width * np.arange(1, k, dtype=np.float64), [hi]])
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def histogram(name, data, step=None, buckets=None, description=None):
    """Write a histogram of ``data``'s values (TensorBoard's "Histograms" and
    "Distributions") with ``buckets`` (30) equal-width buckets, as TF 2 buckets them."""
    k = _check_buckets(buckets)
    tag = _tag(name, "histogram")

    def encode(value):
        arr = _numeric(_host_array(value, "histogram"), "histogram")
        return _tensor_proto(histogram_buckets(arr, k))

    return _emit(tag, data, step, _metadata("histograms", description=description), encode,
                 "histogram")


def _strings(data, who):
    if isinstance(data, (str, bytes)):
        return np.array(data, dtype=object)
    if _is_tensor(data):
        if data._value.dtype.kind == "O":        # a gt.string tensor
            return np.asarray(data.numpy(), dtype=object)
        raise TypeError(f"{who}: data must be a string or strings, got a "
                        f"{data.dtype.name} tensor")
    arr = np.asarray(data, dtype=object)
    for s in arr.reshape(-1):
        if not isinstance(s, (str, bytes, np.str_, np.bytes_)):
            raise TypeError(f"{who}: data must be a string or strings, got an element of type "
                            f"{type(s).__name__}")
    return arr


def text(name, data, step=None, description=None):
    """Write ``data`` (a string, or an array of strings) for TensorBoard's "Text"
    dashboard (Markdown)."""
    arr = _strings(data, "text")
    tag = _tag(name, "text")
    return _emit(tag, arr, step, _metadata("text", description=description), _tensor_proto,
                 "text")


def _png(image: np.ndarray) -> bytes:
    """``image`` (``[h, w, c]`` uint8, c = 1 to 4) as PNG bytes (8-bit, no filtering)."""
    h, w, c = image.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]       # gray, gray+alpha, RGB, RGBA

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    rows = np.concatenate([np.zeros((h, 1), np.uint8),
                           np.ascontiguousarray(image).reshape(h, w * c)], axis=1)
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + chunk(b"IEND", b""))


def _to_uint8(arr, who):
    """``tf.image.convert_image_dtype(arr, tf.uint8, saturate=True)``."""
    kind = arr.dtype.kind
    if arr.dtype == np.uint8:
        return arr
    if kind == "f":
        scaled = arr * arr.dtype.type(255.5)
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(np.clip(scaled, 0, 255), nan=0.0).astype(np.uint8)
    if kind in "iu":
        top = np.iinfo(arr.dtype).max
        if top > 255:
            scaled = arr // ((top + 1) // 256)
            return np.clip(scaled, 0, 255).astype(np.uint8)
        return (np.clip(arr, 0, 255).astype(np.uint8) * np.uint8(256 // (top + 1)))
    raise TypeError(f"{who}: images must be numbers (floats in [0, 1] or integers), got "
                    f"dtype {arr.dtype}")


def image(name, data, step=None, max_outputs=3, description=None):
    """Write up to ``max_outputs`` images of ``data`` (``[k, h, w, c]``, c = 1 (gray), 2
    (gray, alpha), 3 (RGB) or 4 (RGBA); floats in [0, 1] or uint8) as PNG, for TensorBoard's
    "Images" dashboard. Floats are scaled as ``tf.image.convert_image_dtype`` does
    (``x * 255.5``, clipped to [0, 255], truncated)."""
    if isinstance(max_outputs, (bool, np.bool_)) or not isinstance(max_outputs,
                                                                   (int, np.integer)):
        raise TypeError(f"image: max_outputs must be an int, got {max_outputs!r}")
    tag = _tag(name, "image")

    def encode(value):
        arr = _host_array(value, "image")
        if arr.ndim != 4:
            raise ValueError(f"image: data must have rank 4 ([k, h, w, c]), got shape "
                             f"{arr.shape} for {name!r}")
        if max_outputs < 0:
            raise ValueError(f"image: max_outputs must be >= 0, got {max_outputs}")
        k, h, w, c = arr.shape
        if c not in (1, 2, 3, 4):
            raise ValueError(f"image: images must have 1, 2, 3 or 4 channels, got {c} for "
                             f"{name!r}")
        kept = arr[:max_outputs]
        if kept.shape[0] and (h == 0 or w == 0):
            raise ValueError(f"image: cannot encode empty images (shape {arr.shape}) for "
                             f"{name!r}")
        pixels = _to_uint8(kept, "image")
        out = np.empty(2 + kept.shape[0], dtype=object)
        out[0], out[1] = str(w), str(h)
        for i in range(kept.shape[0]):
            out[2 + i] = _png(pixels[i])
        return _tensor_proto(out)

    return _emit(tag, data, step, _metadata("images", description=description), encode,
                 "image")


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None,
          description=None):
    """Write up to ``max_outputs`` clips of ``data`` (``[k, t, c]`` float32 in [-1, 1]) as
    16-bit WAV files (``gt.audio.encode_wav``), for TensorBoard's "Audio" dashboard, as
    ``tf.summary.audio``: a ``[k, 2]`` string tensor of (wav, empty label) rows, with the
    audio plugin's metadata (``AudioPluginData`` encoding WAV). Only ``encoding="wav"``
    (the default) exists."""
    from . import audio as _audio
    if encoding is None:
        encoding = "wav"
    if encoding != "wav":
        raise ValueError(f"Unknown encoding: {encoding!r}")
    tag = _tag(name, "audio")

    def encode(value):
        arr = _host_array(value, "audio")
        if arr.ndim != 3:
            raise ValueError(f"audio: data must have rank 3 ([k, t, c]), got shape "
                             f"{arr.shape} for {name!r}")
        limit = int(max_outputs.numpy()) if _is_tensor(max_outputs) else int(max_outputs)
        if limit < 0:
            raise _io.InvalidArgumentError(f"audio: max_outputs must be >= 0, got {limit}")
        out = np.empty((min(limit, arr.shape[0]), 2), dtype=object)
        for i in range(out.shape[0]):
            out[i, 0] = _audio.encode_wav(arr[i].astype(np.float32), sample_rate).numpy()
            out[i, 1] = b""
        return _tensor_proto(out)

    # AudioPluginData: version 0 (the default, not written), encoding WAV (11)
    meta = _metadata("audio", _field_int(2, 11), description=description)
    return _emit(tag, data, step, meta, encode, "audio")


def write(tag, tensor, step=None, metadata=None, name=None):
    """Write ``tensor`` (or what the callable ``tensor()`` returns, called only when it will
    be recorded) under ``tag`` with ``metadata`` (serialized ``SummaryMetadata`` bytes, or an
    object with ``SerializeToString``): the primitive the typed summaries use."""
    del name
    if metadata is None:
        meta = b""
    elif hasattr(metadata, "SerializeToString"):
        meta = metadata.SerializeToString()
    elif isinstance(metadata, (bytes, bytearray)):
        meta = bytes(metadata)
    else:
        raise TypeError(f"write: metadata must be bytes or a protobuf message, got "
                        f"{type(metadata).__name__}")

    def encode(value):
        if isinstance(value, (str, bytes)):
            return _tensor_proto(np.array(value, dtype=object))
        arr = _host_array(value, "write")
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
        return _tensor_proto(arr)

    return _emit(str(tag), tensor, step, meta, encode, "write")


def _make_experimental():
    """``gt.summary.experimental``, as ``tf.summary.experimental``."""
    mod = types.ModuleType(__name__ + ".experimental",
                           "tf.summary.experimental: the default step and summary_scope.")
    for attr, value in (("get_step", get_step), ("set_step", set_step),
                        ("summary_scope", summary_scope)):
        setattr(mod, attr, value)
    mod.__all__ = ["get_step", "set_step", "summary_scope"]
    sys.modules[mod.__name__] = mod
    return mod


experimental = _make_experimental()
