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
           "Checkpoint", "CheckpointLoadStatus", "CheckpointManager", "latest_checkpoint",
           "CheckpointReader", "load_checkpoint", "list_variables", "load_variable",
           "checkpoints_iterator"]

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
    """``(arrays, metadata)`` from a file written by :func:`write_arrays`, verified whole
    (``path`` may leave out the ``.safetensors`` suffix, as TF's checkpoint paths do)."""
    stnp = _safetensors()
    path = _file_of(os.fspath(path))
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
    """What :meth:`Checkpoint.restore` returns (TF's checks of a partial restore).

    ``restored`` names the values restored, ``unused`` those of the file that no object
    took, ``unrestored`` the objects' values the file did not have."""

    def __init__(self, path, names, unused=(), unrestored=()):
        self.path = path
        self.restored = tuple(names)
        self.unused = tuple(unused)
        self.unrestored = tuple(unrestored)

    def assert_consumed(self):
        """Raise AssertionError unless every value of the file was restored into an object
        and every object's value came from the file."""
        self.assert_existing_objects_matched()
        if self.unused:
            raise AssertionError(f"Unresolved values in checkpoint {self.path}: "
                                 f"{_listing(sorted(self.unused))}")
        return self

    def assert_existing_objects_matched(self):
        """Raise AssertionError if a value of the checkpointed objects was not restored."""
        if self.unrestored:
            raise AssertionError(f"Some objects had values that were not restored from "
                                 f"{self.path}: {_listing(sorted(self.unrestored))}")
        return self

    def assert_nontrivial_match(self):
        if not self.restored:
            raise AssertionError(f"Nothing was restored from {self.path}")
        return self

    def expect_partial(self):
        """Say that a partial restore is intended (TF then stops warning about it)."""
        return self

    def __repr__(self):
        return f"<CheckpointLoadStatus {self.path}: {len(self.restored)} values>"


class InitializationOnlyStatus(CheckpointLoadStatus):
    """``restore(None)``: nothing to restore (the first run of a training script), so the
    objects keep their initial values."""

    def __init__(self):
        super().__init__(None, ())

    def assert_consumed(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    assert_existing_objects_matched = assert_consumed
    assert_nontrivial_match = assert_consumed

    def __repr__(self):
        return "<InitializationOnlyStatus>"


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
                hint = ""
                if hasattr(obj, "__next__"):
                    hint = ("; a dataset iterator's position cannot be checkpointed here "
                            "(leave it out: a restored run starts its dataset afresh)")
                raise TypeError(f"Checkpoint: {key}= must be a gt Module, optimizer, Variable "
                                f"or Checkpoint, got {type(obj).__name__}{hint}")
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
            targets[f"{name}/iterations"] = opt._iterations
        return targets, optimizers, var_paths

    def _state(self):
        targets, optimizers, var_paths = self._variables()
        targets["save_counter"] = self.save_counter
        by_id = {vid: targets[p] for vid, p in var_paths.items()}
        return targets, optimizers, var_paths, by_id

    # --- saving ------------------------------------------------------------------------------
    def write(self, file_path, options=None) -> str:
        """Write the checkpoint to exactly ``file_path`` (no counter, no state file).
        ``options`` (a ``gt.train.CheckpointOptions``) is accepted as TF's and changes nothing:
        gradtape writes from the host, synchronously."""
        _check_options(options, "Checkpoint.write")
        targets, optimizers, var_paths, by_id = self._state()
        arrays = {n: _host(v) for n, v in targets.items()}
        for name, opt in optimizers:
            for vid, path in var_paths.items():
                for slot_name, slot in opt._slot_state(by_id[vid]).items():
                    arrays[f"{name}/slots/{slot_name}/{path}"] = _host(slot)
        return write_arrays(file_path, arrays, "checkpoint")

    def save(self, file_prefix, options=None) -> str:
        """Write ``{file_prefix}-{n}.safetensors`` (``n`` counts saves) and record it as the
        latest checkpoint of its directory; returns TF's checkpoint path ``{file_prefix}-{n}``
        (what ``restore`` and ``latest_checkpoint`` take and give)."""
        _check_options(options, "Checkpoint.save")
        n = int(self.save_counter.numpy()) + 1
        path = f"{os.fspath(file_prefix)}-{n}"
        self.save_counter.assign(np.int64(n))
        try:
            self.write(path + SUFFIX)
        except BaseException:
            self.save_counter.assign(np.int64(n - 1))
            raise
        _record_latest(path)
        return path

    # --- restoring ---------------------------------------------------------------------------
    def read(self, save_path, options=None) -> CheckpointLoadStatus:
        return self.restore(save_path, options)

    def restore(self, save_path, options=None) -> CheckpointLoadStatus:
        """Restore the objects from ``save_path`` (with or without the ``.safetensors``
        suffix); ``None`` (no checkpoint yet, as ``latest_checkpoint`` gives on a first run)
        restores nothing.

        As TensorFlow, the values the file and the objects share are restored; what only
        one side has is reported by the returned status (``assert_consumed()``). Shapes,
        dtypes and optimizer slots are checked first, and on any mismatch (or a file with
        no value in common, or values for a model not built yet) nothing changes."""
        _check_options(options, "Checkpoint.restore")
        if save_path is None:
            return InitializationOnlyStatus()
        path = _file_of(os.fspath(save_path))
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
            if opt is None or var is None:
                continue      # (the slot of an optimizer or a variable not restored here)
            why = opt._check_slot_restore(var, slot_name, arr.shape, arr.dtype)
            if why:
                problems.append(f"{key}: {why}")
                continue
            slot_plan.append((opt, var, slot_name, arr, key))
        shared = {k: targets[k] for k in targets if k in plain}
        try:
            _check_match(path, {k: plain[k] for k in shared}, shared, "checkpoint object")
        except CheckpointError as exc:
            if problems:
                raise CheckpointError(str(exc) + "\n  " + "\n  ".join(problems)) from None
            raise
        problems.extend(self._unbuilt(plain, targets))
        if not set(shared) - {"save_counter"} and set(plain) - {"save_counter"}:
            problems.append("no value in common: the file is from other objects (it holds "
                            f"{_listing(sorted(plain))})")
        if problems:
            raise CheckpointError(f"checkpoint: {path} does not match the checkpoint object; "
                                  f"nothing was changed:\n  " + "\n  ".join(problems))
        staged = _device_arrays(shared, plain)
        for var, arr in staged:
            var._set(arr)
        restored_slots = {}
        for opt, var, slot_name, arr, _ in slot_plan:
            opt._restore_slot(var, slot_name, arr)
            restored_slots.setdefault(id(opt), set()).add(var._id)
        # Variables the file has no slots for restart with fresh optimizer state.
        for _, opt in optimizers:
            keep = restored_slots.get(id(opt), set())
            for vid in list(by_id):
                if vid not in keep and vid in opt._slots:
                    del opt._slots[vid]
                    del opt._slot_owners[vid]
        restored = list(shared) + [plan[4] for plan in slot_plan]
        done = set(restored)
        unused = [k for k in arrays if k not in done]
        unrestored = [k for k in targets if k not in plain]
        return CheckpointLoadStatus(path, restored, unused, unrestored)

    def _unbuilt(self, plain, targets):
        """A Module given with no variables yet while the file has values for it: TF would
        restore them once it is built; here it is an error, not a silent skip."""
        from .layers import Module
        out = []
        for key, obj in self._objects.items():
            if isinstance(obj, Module) and not any(k.startswith(key + "/") for k in targets) \
                    and any(k.startswith(key + "/") for k in plain):
                out.append(f"{key!r} has no variables yet: call it once on an input to build "
                           "it before restoring")
        return out


# --- the latest checkpoint of a directory ---------------------------------------------------------

_LATEST = re.compile(r'^model_checkpoint_path:\s*"(.*)"\s*$')


def _exists(path) -> bool:
    """Whether checkpoint ``path`` (TF's name, or the file's own) is there."""
    return os.path.exists(path) or os.path.exists(path + SUFFIX)


def _file_of(path) -> str:
    """The file of checkpoint ``path``: ``path.safetensors`` when there is one (what
    ``save`` and ``CheckpointManager`` write for TF's path ``path``), else the path itself."""
    return path + SUFFIX if os.path.exists(path + SUFFIX) else path


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
    paths = [p for p in previous if p != name and _exists(os.path.join(directory, p))]
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
                    return path if _exists(path) else None
    except OSError:
        return None
    return None


# --- keeping the last few checkpoints -------------------------------------------------------------

class CheckpointManager:
    """Numbered checkpoints in one directory, keeping the newest ``max_to_keep``
    (``tf.train.CheckpointManager``).

        manager = gt.train.CheckpointManager(ckpt, "runs", max_to_keep=3)
        ckpt.restore(manager.latest_checkpoint)       # None on the first run: nothing to do
        path = manager.save()                         # runs/ckpt-1.safetensors

    ``keep_checkpoint_every_n_hours`` also keeps, for good, one checkpoint per that many
    hours among those ``max_to_keep`` removes. With ``step_counter`` and
    ``checkpoint_interval``, ``save()`` writes only when the counter has moved on by at least
    the interval since the last save (and returns None otherwise)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: checkpoint must be a gt.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and int(max_to_keep) <= 0:
            raise ValueError(f"CheckpointManager: max_to_keep must be positive or None, got "
                             f"{max_to_keep!r}")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("CheckpointManager: checkpoint_interval needs a step_counter")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = None if max_to_keep is None else int(max_to_keep)
        self._keep_seconds = (None if keep_checkpoint_every_n_hours is None
                              else float(keep_checkpoint_every_n_hours) * 3600.0)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step = None
        # the checkpoints an earlier run left here (oldest first), as TF recovers them
        self._kept = []
        state = os.path.join(self._directory, _STATE_FILE)
        try:
            with open(state) as f:
                for line in f:
                    m = re.match(r'^all_model_checkpoint_paths:\s*"(.*)"\s*$', line.strip())
                    if m:
                        p = os.path.join(self._directory, m.group(1))
                        if _exists(p):
                            self._kept.append(p)
        except OSError:
            pass
        self._last_preserved = (os.path.getmtime(_file_of(self._kept[-1])) if self._kept
                                else _now())

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoints(self):
        """The kept checkpoints' paths, oldest first."""
        return list(self._kept)

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's path, or None when there is none yet."""
        return self._kept[-1] if self._kept else None

    @property
    def checkpoint_interval(self):
        return self._interval

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Write a checkpoint numbered ``checkpoint_number`` (by default the checkpoint's save
        counter, advanced by one), remove those beyond ``max_to_keep`` and return its path."""
        _check_options(options, "CheckpointManager.save")
        if self._interval is not None and check_interval:
            step = int(self._step_counter.numpy() if hasattr(self._step_counter, "numpy")
                       else self._step_counter)
            if self._last_step is not None and step < self._last_step + int(self._interval):
                return None
            self._last_step = step
        os.makedirs(self._directory, exist_ok=True)
        counter = self._checkpoint.save_counter
        n = int(counter.numpy()) + 1
        counter.assign(np.int64(n))
        number = n if checkpoint_number is None else int(
            checkpoint_number.numpy() if hasattr(checkpoint_number, "numpy")
            else checkpoint_number)
        path = f"{self._prefix}-{number}"
        try:
            self._checkpoint.write(path + SUFFIX)
        except BaseException:
            counter.assign(np.int64(n - 1))
            raise
        self._kept = [p for p in self._kept if p != path] + [path]
        self._sweep()
        self._write_state()
        return path

    def restore_or_initialize(self):
        """Restore the latest checkpoint and return its path; with none, call ``init_fn``
        (if given) and return None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def _sweep(self):
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            old = self._kept.pop(0)
            if self._keep_seconds is not None:
                t = os.path.getmtime(_file_of(old)) if _exists(old) else 0.0
                if t - self._last_preserved >= self._keep_seconds:
                    self._last_preserved = t
                    continue                    # kept for good, no longer managed
            try:
                os.remove(_file_of(old))
            except FileNotFoundError:
                pass

    def _write_state(self):
        names = [os.path.relpath(p, self._directory) for p in self._kept]
        text = ""
        if names:
            text = f'model_checkpoint_path: "{names[-1]}"\n'
        text += "".join(f'all_model_checkpoint_paths: "{n}"\n' for n in names)
        _atomic_write(os.path.join(self._directory, _STATE_FILE), text.encode())


def _now():
    import time
    return time.time()


# --- reading checkpoints without their objects -------------------------------------------------

class CheckpointReader:
    """The values of a checkpoint file by name (``tf.train.load_checkpoint``)."""

    def __init__(self, path):
        self._path = _file_of(os.fspath(path))
        self._arrays, _ = read_arrays(self._path)

    def get_variable_to_shape_map(self) -> dict:
        return {k: list(v.shape) for k, v in self._arrays.items()}

    def get_variable_to_dtype_map(self) -> dict:
        from .dtypes import as_dtype
        return {k: as_dtype(v.dtype) for k, v in self._arrays.items()}

    def has_tensor(self, name) -> bool:
        return name in self._arrays

    def get_tensor(self, name) -> np.ndarray:
        try:
            return np.array(self._arrays[name], copy=True)
        except KeyError:
            raise KeyError(f"{name!r} is not in checkpoint {self._path} (it holds "
                           f"{_listing(sorted(self._arrays))})") from None


def _checkpoint_path(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise CheckpointError(f"checkpoint: no checkpoint found in directory {path}")
        return latest
    return path


def load_checkpoint(ckpt_dir_or_file) -> CheckpointReader:
    """A reader of the checkpoint file (or of the latest checkpoint of a directory)."""
    return CheckpointReader(_checkpoint_path(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file) -> list:
    """``[(name, shape)]`` of the values of a checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file, name) -> np.ndarray:
    """One value of a checkpoint as a NumPy array."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yield each new latest checkpoint of ``checkpoint_dir`` as it appears (an evaluation
    loop beside training); waits ``timeout`` seconds at most for the next one (for ever with
    None), then asks ``timeout_fn`` whether to stop."""
    import time
    last = None
    while True:
        deadline = None if timeout is None else time.time() + timeout
        while True:
            path = latest_checkpoint(checkpoint_dir)
            if path is not None and path != last:
                break
            if deadline is not None and time.time() >= deadline:
                path = None
                break
            time.sleep(0.05 if timeout is not None and timeout < 1 else 1.0)
        if path is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        start = time.time()
        last = path
        yield path
        wait = min_interval_secs - (time.time() - start)
        if wait > 0:
            time.sleep(wait)


def _check_options(options, who):
    """TF's ``options=`` argument of the checkpoint calls: None or a CheckpointOptions."""
    if options is None:
        return
    from .misc_extra import CheckpointOptions
    if not isinstance(options, CheckpointOptions):
        raise TypeError(f"{who}: options must be a gt.train.CheckpointOptions, got "
                        f"{type(options).__name__}")
