"""Step capture: record a whole training step into a CUDA graph once, replay it cheaply.

    step = gt.capture(train_step)
    for x, y in batches:
        loss = step(x, y)          # same shapes every call

On a CuPy device the first call runs ``fn`` eagerly (it compiles kernels and lets
optimizers create their state), the second records it into a CUDA graph with CuPy's stream
capture and launches the graph, and every later call copies its inputs into the recorded
input buffers and launches the graph again: one launch for the whole step, no Python per op.
Each call performs exactly one step. What a step may do:

* read tensors passed as arguments (their shapes and dtypes must not change: a call with
  a different shape raises :class:`CaptureError` naming the argument) and Variables it
  closes over (weights, optimizer state). A NumPy array or scalar argument becomes a device
  tensor of its own dtype in every call, warm-up included, as ``tf.function`` converts it
  (pass float32 data to a float32 model); a device array argument stays a device array; a
  Python number is a fixed value (a call with another one raises);
* assign Variables (``assign``, ``assign_sub`` ... as optimizers do): the new values are
  written back into the Variables' buffers at the end of each replay;
* return tensors (nested in lists, tuples, dicts): each call returns fresh copies.

Variables keep the buffers the graph was recorded with: a value assigned to a Variable
between calls (``assign``, a checkpoint restore, a learning-rate Variable) is copied into
that buffer before the next replay, so the graph reads it. A tensor that shares a
Variable's buffer (``read_value()`` taken outside the step) therefore sees later values;
copy it (``v + 0``) to keep a snapshot. Tensors the step returns are fresh copies. A learning rate the step computes
on the host (a Python callable, a schedule without ``value_on``) would be frozen at its
captured value: optimizers refuse it inside a captured step (use a schedule from
``gt.optimizers.schedules`` or a Variable).

It must not make the host wait for the GPU (``.numpy()``, ``float()``, ``bool()`` of a
device tensor, data-dependent shapes) nor copy host arrays to the device (``gt.constant``
of a NumPy array inside the step: make such constants outside it, or pass them as
arguments): CUDA refuses the first during capture, and the graph would replay the second
from a host buffer that is reused. Single numbers (``gt.constant(0.5)``, ``x * 2.0``),
``gt.range``, ``gt.eye``, ``gt.fill`` are made by kernels on the device and are fine; as
Python numbers in a ``tf.function``, their values are fixed when the step is recorded. The capture then fails with :class:`CaptureError`, and
the Variables keep the values they had before the call. Python side effects (appending to a list, host random
numbers, a Python step counter) happen only while recording, not on replays; keep such
state in Variables.

On the CPU ``capture`` simply calls ``fn``. On the strict test device it calls ``fn`` too,
but applies the GPU's rules so CI catches what would fail on a GPU: a step that
synchronises with the host or uploads host arrays (after the warm-up call), or whose input
shapes change, raises :class:`CaptureError`; Variables are put back into the buffers of
the "recorded" call before each later one, as replays do.
"""
from __future__ import annotations

import functools
import inspect
import threading
import weakref

import numpy as np

from . import backend as _backend
from . import nest
from .tensor import Tensor, Variable, live_variables

__all__ = ["capture", "CapturedStep", "CaptureError"]


class CaptureError(RuntimeError):
    """A step cannot be captured or replayed (a host sync, a changed input shape ...)."""


_state = threading.local()
# one capture at a time in a process: the allocator's keep list and the assignment hook on
# Variable are process-wide while recording
_RECORDING = threading.Lock()


def keep_alive(obj) -> None:
    """Keep ``obj`` alive as long as the CUDA graph this thread is recording (device state a
    graph reads or writes by address, such as a random generator's)."""
    keep = getattr(_state, "keep", None)
    if keep is not None:
        keep.append(obj)


def capturing() -> bool:
    """Whether this thread is running a step being captured (or, on the strict device, a
    step checked by the GPU's rules): host-side values would be frozen in the graph."""
    return getattr(_state, "depth", 0) > 0


class _Capturing:
    def __enter__(self):
        _state.depth = getattr(_state, "depth", 0) + 1

    def __exit__(self, *exc):
        _state.depth -= 1


def _pin_variables(device) -> list:
    """(weak reference, buffer) of every live Variable on ``device``: the buffers a graph
    recorded now reads and writes."""
    return [(weakref.ref(v), v._value) for v in live_variables() if v._device is device]


def _refresh_pins(pins, copyto) -> int:
    """Put each pinned Variable's current value into its pinned buffer (one device copy per
    Variable assigned since; no host sync) and point the Variable at it again. Returns the
    number copied."""
    copied = 0
    for ref, buf in pins:
        var = ref()
        if var is None or var._value is buf:
            continue
        copyto(buf, var._value)
        var._value = buf
        copied += 1
    return copied


def capture(fn=None, *, warmup: int = 1):
    """Wrap ``fn`` (a training step) so it runs as a replayed CUDA graph on a GPU.

    ``warmup`` eager calls (at least 1, the default) come before the capture: they compile
    kernels and create what a step creates once (optimizer slots, lazily built weights),
    which a graph would otherwise re-create on every replay. Usable as a decorator, with or
    without arguments. See the module documentation for what a step may do.
    """
    if fn is None:
        return lambda f: CapturedStep(f, warmup=warmup)
    return CapturedStep(fn, warmup=warmup)


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None):
    """``tf.function``, for scripts that port by their import: gradtape is eager, so the
    decorated function runs as written on every call (as TF's
    ``tf.config.run_functions_eagerly(True)``); its results are a traced function's. TF's
    arguments are accepted and have no effect. To record a training step into a CUDA graph
    and replay it, use :func:`capture`, whose rules (fixed shapes, no host reads inside)
    are those of a traced function. Usable as ``@gt.function``, ``@gt.function(...)`` or
    ``gt.function(f)``, on functions and methods."""
    if input_signature is not None and not isinstance(input_signature, (list, tuple)):
        raise TypeError(f"function: input_signature must be a list or tuple, got "
                        f"{type(input_signature).__name__}")
    specs = None if input_signature is None else nest.flatten(list(input_signature))

    def wrap(f):
        if not callable(f):
            raise TypeError(f"function: expected a function, got {type(f).__name__}")
        name = getattr(f, "__name__", "function")

        @functools.wraps(f)
        def run(*args, **kwargs):
            if specs is not None:
                _check_signature(name, specs, args, kwargs)
            return f(*args, **kwargs)
        run.python_function = f
        run.input_signature = input_signature
        return run
    return wrap if func is None else wrap(func)


def _check_signature(name, specs, args, kwargs):
    """As a traced function with an input_signature: the call's arguments must fit it."""
    from .tensor import TensorSpec
    # (a method's self is not in the signature)
    if args and len(nest.flatten(list(args))) == len(specs) + 1 and \
            not isinstance(args[0], (Tensor, np.ndarray, list, tuple, int, float)):
        args = args[1:]
    if kwargs:
        raise TypeError(f"function {name}: a function with an input_signature takes its "
                        f"arguments by position, got keyword arguments {sorted(kwargs)}")
    flat = nest.flatten(list(args))
    if len(flat) != len(specs):
        raise TypeError(f"function {name}: input_signature has {len(specs)} tensor(s), the "
                        f"call passed {len(flat)}")
    for i, (spec, value) in enumerate(zip(specs, flat)):
        if isinstance(spec, TensorSpec) and not spec.is_compatible_with(value):
            got = (f"shape {tuple(value._value.shape)} and dtype {value.dtype.name}"
                   if isinstance(value, Tensor) else repr(value))
            raise ValueError(f"function {name}: argument {i} ({got}) does not match "
                             f"input_signature {spec}")


class _Signature:
    """Shapes and dtypes of a call's tensor arguments, and the values of the others."""

    __slots__ = ("names", "specs")

    def __init__(self, names, specs):
        self.names = names
        self.specs = specs


def _spec(value, device):
    if isinstance(value, Tensor):
        return ("tensor", tuple(value._value.shape), value._value.dtype, value._device)
    if isinstance(value, np.ndarray):
        return ("array", tuple(value.shape), value.dtype, None)
    if device.is_native(value):
        return ("device array", tuple(value.shape), value.dtype, None)
    return ("value", value)


def _describe(spec):
    if spec[0] in ("tensor", "array", "device array"):
        kind = {"tensor": "tensor", "array": "NumPy array"}.get(spec[0], spec[0])
        where = f" on {spec[3]}" if spec[3] is not None else ""
        return f"a {kind} of shape {spec[1]} and dtype {np.dtype(spec[2]).name}{where}"
    return f"the value {spec[1]!r}"


class CapturedStep:
    """A step function recorded into a CUDA graph on its first GPU calls (see :func:`capture`)."""

    def __init__(self, fn, warmup: int = 1):
        if not callable(fn):
            raise TypeError(f"capture: expected a function, got {type(fn).__name__}")
        self.fn = fn
        if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 1:
            raise ValueError(f"capture: warmup must be an int >= 1 (the eager calls that create "
                             f"optimizer slots and compile kernels before recording), got "
                             f"{warmup!r}")
        self.warmup = int(warmup)
        self.calls = 0
        self.replays = 0
        self._graph = None
        self._signature = None
        self._inputs = None          # device arrays the graph reads, per flattened argument
        self._outputs = None         # (structure, device arrays) the graph writes
        self._write_back = None      # [(variable buffer, new value buffer)]
        self._keep = None            # every allocation made while capturing
        self._pins = None            # [(Variable weakref, the buffer the graph uses)]
        self._device = None
        self._lock = threading.Lock()
        try:
            self._param_names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self._param_names = []
        functools.update_wrapper(self, fn)

    # --- arguments ------------------------------------------------------------------------
    def _flatten(self, args, kwargs):
        flat, names = [], []
        for i, a in enumerate(args):
            label = (f"argument {i} ({self._param_names[i]})" if i < len(self._param_names)
                     else f"argument {i}")
            leaves = nest.flatten(a)
            for j, leaf in enumerate(leaves):
                flat.append(leaf)
                names.append(label if len(leaves) == 1 else f"{label}, element {j}")
        for k in sorted(kwargs):
            leaves = nest.flatten(kwargs[k])
            for j, leaf in enumerate(leaves):
                flat.append(leaf)
                names.append(f"keyword argument {k!r}" if len(leaves) == 1
                             else f"keyword argument {k!r}, element {j}")
        return flat, names

    def _check(self, device, flat, names):
        old = self._signature
        if len(flat) != len(old.specs):
            raise CaptureError(f"capture: {getattr(self.fn, '__name__', 'step')} was captured with "
                               f"{len(old.specs)} inputs, now called with {len(flat)}")
        for name, spec, value in zip(names, old.specs, flat):
            new = _spec(value, device)
            if new[0] == "value" and spec[0] == "value":
                same = new[1] is spec[1] or _equal(new[1], spec[1])
            else:
                same = new[:3] == spec[:3] and new[3] is spec[3]
            if not same:
                raise CaptureError(
                    f"capture: {name} of {getattr(self.fn, '__name__', 'step')} changed from "
                    f"{_describe(spec)} to {_describe(new)}; a captured step replays fixed "
                    "shapes, dtypes and Python values. Capture a separate step for each shape "
                    "(gt.capture(fn) again)")

    # --- calling --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        flat, names = self._flatten(args, kwargs)
        device = self._device or _device_of(flat)
        if device.kind not in ("strict", "gpu") or capturing():
            # (inside another step being captured, this one becomes part of that graph)
            self.calls += 1
            return self.fn(*args, **kwargs)
        # NumPy arguments become device tensors in every call (as tf.function converts
        # them), so the warm-up sees the dtypes the captured calls will
        args, kwargs, flat = _on_device(device, args, kwargs, flat)
        if device.kind == "strict":
            return self._call_strict(device, flat, names, args, kwargs)
        with self._lock:
            return self._call_gpu(device, flat, names, args, kwargs)

    def _call_strict(self, device, flat, names, args, kwargs):
        self.calls += 1
        if self.calls <= self.warmup:
            return self.fn(*args, **kwargs)
        if self._signature is None:
            self._signature = _Signature(names, [_spec(v, device) for v in flat])
            self._device = device
        else:
            self._check(device, flat, names)
            if self._pins is not None:
                # as a replay does: Variables back in the buffers of the recorded call
                _refresh_pins(self._pins, device.xp.copyto)
        # what a failed capture leaves as it was: every Variable's buffer and values (fused
        # optimizer updates write slots in place, which on a GPU would only be recorded)
        saved = [(v, v._value, device.copy(v._value)) for v in live_variables()
                 if v._device is device]
        syncs, uploads = device.sync_count, device.transfer_count
        try:
            with _Capturing():
                out = self.fn(*args, **kwargs)
            name = getattr(self.fn, "__name__", "step")
            if device.sync_count != syncs:
                raise CaptureError(
                    f"capture: {name} made the host wait for {device} "
                    f"{device.sync_count - syncs} time(s) (.numpy(), float(), bool() of a "
                    "device tensor, or a data-dependent shape); on a GPU this step cannot be "
                    "captured into a CUDA graph")
            if device.transfer_count != uploads:
                raise CaptureError(
                    f"capture: {name} copied {device.transfer_count - uploads} host array(s) "
                    f"to {device} (gt.constant of a NumPy array, a host index list ...); a "
                    "CUDA graph would replay them from a host buffer that is reused. Make such "
                    "constants outside the step or pass them as arguments")
        except BaseException:
            for var, buf, values in saved:
                var._value = buf
                device.xp.copyto(buf, values)
            raise
        if self._pins is None:
            self._pins = _pin_variables(device)
        return _copy_outputs(device, out)

    def _call_gpu(self, device, flat, names, args, kwargs):
        self.calls += 1
        if self.calls <= self.warmup:
            return self.fn(*args, **kwargs)
        if self._graph is None:
            with _RECORDING:
                return self._record(device, flat, names, args, kwargs)
        self._check(device, flat, names)
        return self._replay(device, flat)

    # --- GPU: recording and replaying --------------------------------------------------------
    def _record(self, device, flat, names, args, kwargs):
        from .backend import cupy_backend
        cupy = device.xp
        alloc = cupy_backend.allocator()
        with device.activate():
            caller = cupy.cuda.get_current_stream()
            # inputs the graph reads: device buffers owned by this step
            inputs = []
            placed = []
            for v in flat:
                if isinstance(v, Tensor):
                    if v._device is not device:
                        raise CaptureError(f"capture: an input is on {v._device}, the step runs "
                                           f"on {device}")
                    buf = device.copy(v._value)
                    inputs.append(buf)
                    placed.append(Tensor(buf, device))
                elif device.is_native(v):
                    buf = device.copy(v)
                    inputs.append(buf)
                    placed.append(buf)
                else:
                    inputs.append(None)
                    placed.append(v)
            call_args, call_kwargs = _rebuild(args, kwargs, placed)
            stream = cupy.cuda.Stream(non_blocking=True)
            stream.wait_event(caller.record())
            keep = []
            assigned = {}
            syncs, uploads = device.sync_count, device.transfer_count
            if alloc is not None:
                alloc.keep = keep
            try:
                _state.keep = keep
                with stream, _track_assignments(assigned), _Capturing():
                    stream.begin_capture()
                    try:
                        out = self.fn(*call_args, **call_kwargs)
                        # a returned tensor sharing a buffer the write-back below overwrites
                        # (a read_value() of an updated Variable) is copied first
                        olds = [old for var, old in assigned.values()
                                if var._value is not old]
                        out = _copy_outputs(device, out, only=olds)
                        write_back = []
                        for var, old in assigned.values():
                            new = var._value
                            if new is not old:
                                old[...] = new          # captured copy back into the old buffer
                                write_back.append((old, new))
                                var._value = old
                    except BaseException as exc:
                        _restore(assigned)
                        _abort_capture(stream)
                        raise _capture_failure(self.fn, device, exc) from exc
                    try:
                        graph = stream.end_capture()
                    except BaseException as exc:
                        _restore(assigned)
                        raise _capture_failure(self.fn, device, exc) from exc
            finally:
                _state.keep = None
                if alloc is not None:
                    alloc.keep = None
            if device.sync_count != syncs:
                _restore(assigned)
                raise CaptureError(f"capture: {getattr(self.fn, '__name__', 'step')} copied "
                                   f"a tensor to the host while being captured")
            if device.transfer_count != uploads:
                # (CuPy stages an upload through a pinned buffer it reuses: a graph would
                # replay whatever that buffer holds then)
                _restore(assigned)
                raise CaptureError(
                    f"capture: {getattr(self.fn, '__name__', 'step')} copied "
                    f"{device.transfer_count - uploads} host array(s) to {device} while being "
                    "captured (gt.constant of a NumPy array, a host index list ...); make such "
                    "constants outside the step or pass them as arguments")
            flat_out = nest.flatten(out)
            self._outputs = (out, [o._value if isinstance(o, Tensor) else None
                                   for o in flat_out])
            self._graph = graph
            self._keep = keep
            self._write_back = write_back
            self._inputs = inputs
            self._pins = _pin_variables(device)
            self._signature = _Signature(names, [_spec(v, device) for v in flat])
            self._device = device
            self._stream = stream
            graph.launch(stream=caller)
            self.replays += 1
            return self._fresh_outputs(device)

    def _replay(self, device, flat):
        cupy = device.xp
        with device.activate():
            for buf, v in zip(self._inputs, flat):
                if buf is None:
                    continue
                src = v._value if isinstance(v, Tensor) else v
                if src is not buf:
                    cupy.copyto(buf, src)
            _refresh_pins(self._pins, cupy.copyto)
            self._graph.launch(stream=cupy.cuda.get_current_stream())
            self.replays += 1
            return self._fresh_outputs(device)

    def _fresh_outputs(self, device):
        structure, arrays = self._outputs
        if structure is None:
            return None
        flat = nest.flatten(structure)
        fresh = [Tensor(device.copy(a), device) if a is not None else leaf
                 for leaf, a in zip(flat, arrays)]
        if isinstance(structure, Tensor):
            return fresh[0]
        return nest.pack_sequence_as(structure, fresh) if flat else structure


def _on_device(device, args, kwargs, flat):
    """The call's NumPy arrays and NumPy scalars as tensors on ``device`` (their own
    dtypes); Python numbers stay values (fixed in the graph, as tf.function retraces)."""
    if not any(isinstance(v, (np.ndarray, np.generic)) for v in flat):
        return args, kwargs, flat
    placed = [Tensor(device.asarray(v), device) if isinstance(v, (np.ndarray, np.generic))
              else v for v in flat]
    new_args, new_kwargs = _rebuild(args, kwargs, placed)
    return tuple(new_args), new_kwargs, placed


def _copy_outputs(device, out, only=None):
    """``out`` with its tensors copied (those sharing memory with a buffer in ``only``, if
    given: the buffer itself, or a view of it)."""
    if out is None:
        return None
    flat = nest.flatten(out)
    may_share = device.xp.may_share_memory

    def wanted(o):
        return isinstance(o, Tensor) and (only is None or any(
            o._value is b or may_share(o._value, b) for b in only))
    if not any(wanted(o) for o in flat):
        return out
    fresh = [Tensor(device.copy(o._value), device) if wanted(o) else o for o in flat]
    if isinstance(out, Tensor):
        return fresh[0]
    return nest.pack_sequence_as(out, fresh)


def _restore(assigned):
    """Put back the buffers the Variables had before a failed step or capture (what a failed
    capture assigned was only recorded, never computed)."""
    for var, old in assigned.values():
        var._value = old


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:
        return False


def _device_of(flat):
    for v in flat:
        if isinstance(v, Tensor):
            return v._device
    return _backend.current_device()


def _rebuild(args, kwargs, placed):
    it = iter(placed)
    new_args = []
    for a in args:
        leaves = nest.flatten(a)
        vals = [next(it) for _ in leaves]
        new_args.append(nest.pack_sequence_as(a, vals) if not _is_leaf(a) else vals[0])
    new_kwargs = {}
    for k in sorted(kwargs):
        a = kwargs[k]
        leaves = nest.flatten(a)
        vals = [next(it) for _ in leaves]
        new_kwargs[k] = nest.pack_sequence_as(a, vals) if not _is_leaf(a) else vals[0]
    return new_args, new_kwargs


def _is_leaf(a):
    return not isinstance(a, (list, tuple, dict))


class _track_assignments:
    """Record, for this thread, each Variable assigned and the buffer it had before."""

    def __init__(self, record):
        self.record = record
        self.thread = threading.get_ident()
        self.original = None

    def __enter__(self):
        original = Variable._set
        record = self.record
        thread = self.thread

        def _set(var, array):
            if threading.get_ident() == thread and id(var) not in record:
                record[id(var)] = (var, var._value)
            original(var, array)
        self.original = original
        Variable._set = _set
        return self

    def __exit__(self, *exc):
        Variable._set = self.original
        return False


def _abort_capture(stream):
    try:
        stream.end_capture()
    except Exception:  # the capture was invalidated by the failure being reported
        pass


def _capture_failure(fn, device, exc):
    name = getattr(fn, "__name__", "step")
    text = f"{type(exc).__name__}: {exc}"
    if "Unjoined" in text or "unjoined" in text:
        return CaptureError(f"capture: {name} used another GPU or stream while being captured "
                            f"on {device} ({text}); a captured step must run on one device: "
                            "move tensors between GPUs outside it")
    if isinstance(exc, MemoryError) or "out of memory" in text.lower() \
            or "MemoryAllocation" in text:
        return CaptureError(f"capture: {name} ran out of memory on {device} while being "
                            f"captured ({text}); a captured step keeps every buffer it uses, "
                            "so it needs about what its eager step peaks at: use a smaller "
                            "batch or free memory before capturing")
    if "apture" in text or "cudaErrorStreamCapture" in text or "synchron" in text:
        return CaptureError(f"capture: {name} synchronised with the host while being captured "
                            f"on {device} ({text}); remove .numpy(), float(), bool() and "
                            "data-dependent shapes from the step (on a nearly full device, "
                            "CuPy's pool releasing its cached blocks to satisfy an allocation "
                            "does this too)")
    return CaptureError(f"capture: {name} failed while being captured on {device} ({text})")
