"""Weights and training checkpoints in the safetensors format (never pickle).

A file holds named arrays plus metadata: a format tag, what was saved, and a SHA-256 digest
of every name, dtype, shape and byte, so truncation and corruption are detected. Saving
writes a temporary file in the target directory, flushes it to disk and renames it over the
target (:func:`os.replace`), so a crash leaves either the old file or the new one, never half
of one. Loading reads and verifies the whole file, then checks every name, shape and dtype
against the variables to fill, and only then assigns them all: any problem raises
:class:`CheckpointError` naming it and leaves every variable as it was.

Needs the ``safetensors`` package (``pip install gradtape[io]``).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets

import numpy as np

from .tensor import Variable

__all__ = ["CheckpointError", "save_module", "load_module", "write_arrays", "read_arrays",
           "Checkpoint", "CheckpointLoadStatus", "latest_checkpoint"]

FORMAT = "gradtape"
FORMAT_VERSION = "1"
SUFFIX = ".safetensors"
_STATE_FILE = "checkpoint"


class CheckpointError(ValueError):
    """A checkpoint cannot be written or does not fit what it is loaded into."""


def _safetensors():
    try:
        import safetensors.numpy as stnp
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError("checkpoints need the 'safetensors' package: "
                          "pip install 'gradtape[io]' (or pip install safetensors)") from exc
    return stnp


def _digest(arrays: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        h.update(name.encode())
        h.update(b"\0" + a.dtype.str.encode() + b"\0" + repr(tuple(a.shape)).encode() + b"\0")
        h.update(_contiguous(a).tobytes())
    return h.hexdigest()


def _contiguous(a) -> np.ndarray:
    """``a`` as a C-contiguous array of the same shape (0-d arrays stay 0-d)."""
    return np.require(a, requirements="C")


def _host(var: Variable) -> np.ndarray:
    return _contiguous(var.numpy())


# --- files -------------------------------------------------------------------------------------

def write_arrays(path, arrays: dict, kind: str, overwrite=True) -> str:
    """Write host ``arrays`` (name -> NumPy array) to ``path`` atomically; returns the path."""
    stnp = _safetensors()
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise CheckpointError(f"checkpoint: {path} exists and overwrite=False")
    arrays = {k: _contiguous(v) for k, v in arrays.items()}
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind,
                "sha256": _digest(arrays), "count": str(len(arrays))}
    data = stnp.save(arrays, metadata=metadata)
    _atomic_write(path, data)
    return path


def _atomic_write(path, data: bytes):
    """Write ``data`` to a new file beside ``path``, flush it to disk, rename it over
    ``path``; on any failure the temporary file is removed and ``path`` is untouched."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".tmp-{os.path.basename(path)}-{secrets.token_hex(6)}")
    # os.open with mode 0o666 lets the umask decide the permissions, as for any new file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_arrays(path, kind: str | None = None):
    """``(arrays, metadata)`` from a file written by :func:`write_arrays`, verified whole."""
    stnp = _safetensors()
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint: no such file {path}") from None
    except IsADirectoryError:
        raise CheckpointError(f"checkpoint: {path} is a directory, not a checkpoint file") from None
    if len(data) < 8:
        raise CheckpointError(f"checkpoint: {path} is truncated or not a safetensors file "
                              f"({len(data)} bytes)")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise CheckpointError(f"checkpoint: {path} is truncated or corrupted (its header needs "
                              f"{n} bytes, the file has {len(data) - 8} after the length)")
    try:
        header = json.loads(data[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CheckpointError(f"checkpoint: {path} is corrupted (unreadable header)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"checkpoint: {path} is corrupted (the header is not a mapping)")
    metadata = header.get("__metadata__") or {}
    if metadata.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint: {path} was not written by gradtape (no "
                              f"'{FORMAT}' format tag in its metadata)")
    if kind is not None and metadata.get("kind") != kind:
        raise CheckpointError(f"checkpoint: {path} holds {metadata.get('kind')!r} data, "
                              f"expected {kind!r}")
    try:
        arrays = stnp.load(data)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
        raise CheckpointError(f"checkpoint: {path} is truncated or corrupted ({exc})") from None
    if str(len(arrays)) != metadata.get("count") or _digest(arrays) != metadata.get("sha256"):
        raise CheckpointError(f"checkpoint: {path} is corrupted (its contents do not match the "
                              "digest written with them)")
    return arrays, metadata


# --- matching ----------------------------------------------------------------------------------

def _check_match(path, arrays: dict, targets: dict, what: str):
    """Raise CheckpointError unless ``arrays`` and ``targets`` (name -> Variable) match."""
    missing = sorted(set(targets) - set(arrays))
    extra = sorted(set(arrays) - set(targets))
    problems = []
    if missing:
        problems.append(f"missing from the file: {_listing(missing)}")
    if extra:
        problems.append(f"in the file but not in the {what}: {_listing(extra)}")
    for name in sorted(set(targets) & set(arrays)):
        var, arr = targets[name], arrays[name]
        if tuple(arr.shape) != tuple(var._value.shape):
            problems.append(f"{name}: the file has shape {tuple(arr.shape)}, the variable "
                            f"{tuple(var._value.shape)}")
        elif arr.dtype != var._value.dtype:
            problems.append(f"{name}: the file has dtype {arr.dtype.name}, the variable "
                            f"{var._value.dtype.name}")
    if problems:
        hint = ""
        if not targets:
            hint = " (it has no variables yet: call it once on an input to build it before " \
                   "loading)"
        elif not set(targets) & set(arrays):
            hint = " (no name in common: the file is from a different model)"
        raise CheckpointError(f"checkpoint: {path} does not match the {what}{hint}; nothing "
                              f"was changed:\n  " + "\n  ".join(problems))


def _listing(names, limit=8):
    shown = ", ".join(names[:limit])
    return shown + (f" ... ({len(names)} in all)" if len(names) > limit else "")


def _device_arrays(targets: dict, arrays: dict) -> list:
    """Stage every value on its variable's device before any is installed."""
    staged = []
    for name, var in targets.items():
        dev = var._device
        host = np.array(arrays[name], copy=True)
        with dev.activate():
            staged.append((var, dev.asarray(host)))
    return staged


# --- modules -----------------------------------------------------------------------------------

def _module_targets(module) -> dict:
    return dict(module.named_variables())


def save_module(module, path, overwrite=True) -> str:
    """Write every variable of ``module`` under its path (``layers.0.kernel``)."""
    targets = _module_targets(module)
    if not targets:
        raise CheckpointError(f"save_weights: {type(module).__name__} '{module.name}' has no "
                              "variables yet (call it once on an input to build it)")
    return write_arrays(path, {n: _host(v) for n, v in targets.items()}, "weights",
                        overwrite=overwrite)


def load_module(module, path) -> None:
    """Fill every variable of ``module`` from ``path``, all or nothing."""
    arrays, _ = read_arrays(path)
    if "save_counter" in arrays and not any(k == "save_counter" for k in _module_targets(module)):
        raise CheckpointError(f"load_weights: {path} is a training checkpoint "
                              "(gt.train.Checkpoint); restore it with Checkpoint.restore")
    targets = _module_targets(module)
    _check_match(path, arrays, targets, f"{type(module).__name__} '{module.name}'")
    for var, arr in _device_arrays(targets, arrays):
        var._set(arr)


# --- training checkpoints ------------------------------------------------------------------------

class CheckpointLoadStatus:
    """What :meth:`Checkpoint.restore` returns; restoring is all or nothing, so every check
    passes once it has returned."""

    def __init__(self, path, names):
        self.path = path
        self.restored = tuple(names)

    def assert_consumed(self):
        return self

    def assert_existing_objects_matched(self):
        return self

    def expect_partial(self):
        return self

    def __repr__(self):
        return f"<CheckpointLoadStatus {self.path}: {len(self.restored)} values>"


class Checkpoint:
    """Save and restore models, optimizers and Variables together (``tf.train.Checkpoint``).

        ckpt = gt.train.Checkpoint(model=model, optimizer=opt)
        path = ckpt.save("runs/ckpt")            # runs/ckpt-1.safetensors
        ckpt.restore(gt.train.latest_checkpoint("runs"))

    Keyword arguments name the objects: Modules (every variable), optimizers (the step count
    and the slots of the variables of the Modules and Variables given alongside) and single
    Variables.
    """

    def __init__(self, root=None, **kwargs):
        from .layers import Module
        from .optimizers import Optimizer
        objects = dict(kwargs)
        if root is not None:
            objects["root"] = root
        for key, obj in objects.items():
            if "/" in key:
                raise ValueError(f"Checkpoint: names may not contain '/', got {key!r}")
            if not isinstance(obj, (Module, Optimizer, Variable, Checkpoint)):
                raise TypeError(f"Checkpoint: {key}= must be a gt Module, optimizer, Variable "
                                f"or Checkpoint, got {type(obj).__name__}")
        self._objects = objects
        self.save_counter = Variable(np.int64(0), trainable=False, name="save_counter")

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"Checkpoint has no object named {name!r}")

    # --- naming ------------------------------------------------------------------------------
    def _variables(self, prefix=""):
        """``(targets, optimizers, var_paths)``: name -> Variable for plain state, the
        optimizers with their names, and variable id -> name for slot naming."""
        from .layers import Module
        from .optimizers import Optimizer
        targets = {}
        optimizers = []
        var_paths = {}
        for key in sorted(self._objects):
            obj = self._objects[key]
            name = prefix + key
            if isinstance(obj, Module):
                for path, var in obj.named_variables():
                    full = f"{name}/{path}"
                    if var._id not in var_paths:
                        targets[full] = var
                        var_paths[var._id] = full
            elif isinstance(obj, Variable):
                if var_paths.setdefault(obj._id, name) == name:
                    targets[name] = obj
            elif isinstance(obj, Optimizer):
                optimizers.append((name, obj))
            elif isinstance(obj, Checkpoint):
                t, o, p = obj._variables(prefix=name + "/")
                for k, v in t.items():
                    if v._id not in var_paths:
                        targets[k] = v
                        var_paths[v._id] = k
                optimizers.extend(o)
        for name, opt in optimizers:
            targets[f"{name}/iterations"] = opt.iterations
        return targets, optimizers, var_paths

    def _state(self):
        targets, optimizers, var_paths = self._variables()
        targets["save_counter"] = self.save_counter
        by_id = {vid: targets[p] for vid, p in var_paths.items()}
        return targets, optimizers, var_paths, by_id

    # --- saving ------------------------------------------------------------------------------
    def write(self, file_path) -> str:
        """Write the checkpoint to exactly ``file_path`` (no counter, no state file)."""
        targets, optimizers, var_paths, by_id = self._state()
        arrays = {n: _host(v) for n, v in targets.items()}
        for name, opt in optimizers:
            for vid, path in var_paths.items():
                for slot_name, slot in opt._slot_state(by_id[vid]).items():
                    arrays[f"{name}/slots/{slot_name}/{path}"] = _host(slot)
        return write_arrays(file_path, arrays, "checkpoint")

    def save(self, file_prefix) -> str:
        """Write ``{file_prefix}-{n}.safetensors`` (``n`` counts saves) and record it as the
        latest checkpoint of its directory; returns the path."""
        n = int(self.save_counter.numpy()) + 1
        path = f"{os.fspath(file_prefix)}-{n}{SUFFIX}"
        self.save_counter.assign(np.int64(n))
        try:
            self.write(path)
        except BaseException:
            self.save_counter.assign(np.int64(n - 1))
            raise
        _record_latest(path)
        return path

    # --- restoring ---------------------------------------------------------------------------
    def read(self, save_path) -> CheckpointLoadStatus:
        return self.restore(save_path)

    def restore(self, save_path) -> CheckpointLoadStatus:
        """Restore every object from ``save_path`` (with or without the ``.safetensors``
        suffix). All names, shapes and dtypes are checked first; on any mismatch nothing
        changes."""
        if save_path is None:
            raise CheckpointError("Checkpoint.restore: save_path is None (no checkpoint found?)")
        path = os.fspath(save_path)
        if not os.path.exists(path) and os.path.exists(path + SUFFIX):
            path += SUFFIX
        arrays, _ = read_arrays(path, kind="checkpoint")
        targets, optimizers, var_paths, by_id = self._state()
        path_to_var = {p: by_id[vid] for vid, p in var_paths.items()}
        plain = {k: v for k, v in arrays.items() if "/slots/" not in k}
        slot_plan = []
        problems = []
        opt_names = {name: opt for name, opt in optimizers}
        for key, arr in arrays.items():
            if "/slots/" not in key:
                continue
            opt_name, rest = key.split("/slots/", 1)
            slot_name, _, var_path = rest.partition("/")
            opt = opt_names.get(opt_name)
            var = path_to_var.get(var_path)
            if opt is None:
                problems.append(f"{key}: no optimizer named {opt_name!r} in this checkpoint "
                                "object")
                continue
            if var is None:
                problems.append(f"{key}: no variable {var_path!r} in this checkpoint object")
                continue
            why = opt._check_slot_restore(var, slot_name, arr.shape, arr.dtype)
            if why:
                problems.append(f"{key}: {why}")
                continue
            slot_plan.append((opt, var, slot_name, arr))
        try:
            _check_match(path, plain, targets, "checkpoint object")
        except CheckpointError as exc:
            if problems:
                raise CheckpointError(str(exc) + "\n  " + "\n  ".join(problems)) from None
            raise
        if problems:
            raise CheckpointError(f"checkpoint: {path} does not match the checkpoint object; "
                                  f"nothing was changed:\n  " + "\n  ".join(problems))
        staged = _device_arrays(targets, plain)
        for var, arr in staged:
            var._set(arr)
        restored_slots = {}
        for opt, var, slot_name, arr in slot_plan:
            opt._restore_slot(var, slot_name, arr)
            restored_slots.setdefault(id(opt), set()).add(var._id)
        # Variables the file has no slots for restart with fresh optimizer state.
        for _, opt in optimizers:
            keep = restored_slots.get(id(opt), set())
            for vid in list(by_id):
                if vid not in keep and vid in opt._slots:
                    del opt._slots[vid]
                    del opt._slot_owners[vid]
        return CheckpointLoadStatus(path, list(arrays))


# --- the latest checkpoint of a directory ---------------------------------------------------------

_LATEST = re.compile(r'^model_checkpoint_path:\s*"(.*)"\s*$')


def _record_latest(path):
    directory = os.path.dirname(os.path.abspath(path))
    state = os.path.join(directory, _STATE_FILE)
    previous = []
    try:
        with open(state) as f:
            for line in f:
                m = re.match(r'^all_model_checkpoint_paths:\s*"(.*)"\s*$', line.strip())
                if m:
                    previous.append(m.group(1))
    except OSError:
        pass
    name = os.path.basename(path)
    paths = [p for p in previous if p != name and os.path.exists(os.path.join(directory, p))]
    paths.append(name)
    text = f'model_checkpoint_path: "{name}"\n' + "".join(
        f'all_model_checkpoint_paths: "{p}"\n' for p in paths)
    _atomic_write(state, text.encode())


def latest_checkpoint(checkpoint_dir) -> str | None:
    """The path of the newest checkpoint saved in ``checkpoint_dir``, or None."""
    state = os.path.join(os.fspath(checkpoint_dir), _STATE_FILE)
    try:
        with open(state) as f:
            for line in f:
                m = _LATEST.match(line.strip())
                if m:
                    path = os.path.join(os.fspath(checkpoint_dir), m.group(1))
                    return path if os.path.exists(path) else None
    except OSError:
        return None
    return None
