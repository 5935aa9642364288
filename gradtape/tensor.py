"""Tensor (immutable, device-resident) and Variable (mutable, trainable)."""
from __future__ import annotations

from math import prod as _prod
import itertools
import os
import weakref

import numpy as np

from . import backend as _backend
from .backend import Device, DeviceError
from .dtypes import DType, as_dtype, np_dtype


def _load_speedups():
    """The optional C module with the per-op hot paths, or None (no compiler at install
    time, or ``GRADTAPE_PURE_PYTHON=1``): then the same logic runs in Python."""
    if os.environ.get("GRADTAPE_PURE_PYTHON", "").strip() not in ("", "0"):
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    return _speedups


_speedups = _load_speedups()
# every tensor's id, from one counter (the C hot paths draw from the same one)
_next_id = _speedups.next_id if _speedups is not None else itertools.count(1).__next__


class TensorShape(tuple):
    """A tensor's shape: a tuple of sizes (``None`` for an unknown one) with TensorFlow's
    helpers. ``TensorShape(None)`` is a shape of unknown rank."""

    __slots__ = ()

    def __new__(cls, dims=()):
        if dims is None or dims is _UNKNOWN_RANK:
            return _UNKNOWN_RANK
        if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
            dims = (dims,)
        return super().__new__(cls, (None if d is None else int(d) for d in dims))

    @property
    def rank(self):
        return len(self)

    ndims = rank

    @property
    def dims(self):
        return list(self)

    def __bool__(self):
        """True for a known rank, even 0 (as TF's: ``bool(TensorShape([]))`` is True)."""
        return True

    def as_list(self):
        return list(self)

    def num_elements(self):
        """The number of elements, or None when a size is unknown."""
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n

    def is_fully_defined(self):
        return all(d is not None for d in self)

    def is_compatible_with(self, other) -> bool:
        """Whether the two shapes can describe the same tensor (``None`` fits any size)."""
        other = as_shape(other)
        if other is _UNKNOWN_RANK:
            return True
        return len(self) == len(other) and all(
            a is None or b is None or a == b for a, b in zip(self, other))

    def merge_with(self, other) -> "TensorShape":
        """The most specific shape compatible with both, or ValueError."""
        other = as_shape(other)
        if other is _UNKNOWN_RANK:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self, other)])

    def concatenate(self, other) -> "TensorShape":
        other = as_shape(other)
        if other is _UNKNOWN_RANK:
            return other
        return TensorShape(tuple(self) + tuple(other))

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_has_rank(self, rank) -> None:
        if len(self) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank) -> "TensorShape":
        self.assert_has_rank(rank)
        return self

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(tuple.__getitem__(self, key))
        return tuple.__getitem__(self, key)

    def __add__(self, other):
        return self.concatenate(other)

    def __radd__(self, other):
        return as_shape(other).concatenate(self)

    def __eq__(self, other):
        if isinstance(other, (list, tuple)):
            return tuple(self) == tuple(other) and not isinstance(other, _UnknownRankShape)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __repr__(self):
        return f"TensorShape({list(self)})"

    def __str__(self):
        dims = ", ".join("None" if d is None else str(d) for d in self)
        return f"({dims},)" if len(self) == 1 else f"({dims})"


class _UnknownRankShape(TensorShape):
    """``TensorShape(None)``: nothing is known, not even the rank."""

    __slots__ = ()

    def __new__(cls):
        return tuple.__new__(cls, ())

    rank = property(lambda self: None)
    ndims = rank
    dims = property(lambda self: None)

    def __len__(self):
        raise ValueError("Cannot take the length of shape with unknown rank.")

    def __bool__(self):
        return False

    def __iter__(self):
        raise ValueError("Cannot iterate over a shape with unknown rank.")

    def as_list(self):
        raise ValueError("as_list() is not defined on an unknown TensorShape.")

    def num_elements(self):
        return None

    def is_fully_defined(self):
        return False

    def is_compatible_with(self, other) -> bool:
        return True

    def merge_with(self, other) -> TensorShape:
        return as_shape(other)

    def concatenate(self, other) -> TensorShape:
        return self

    def assert_has_rank(self, rank) -> None:
        return None

    def __getitem__(self, key):
        return self if isinstance(key, slice) else None

    def __eq__(self, other):
        return isinstance(other, _UnknownRankShape)

    __hash__ = tuple.__hash__

    def __repr__(self):
        return "TensorShape(None)"

    def __str__(self):
        return "<unknown>"

    def __reduce__(self):
        return (TensorShape, (None,))


_UNKNOWN_RANK = _UnknownRankShape()


def as_shape(shape) -> TensorShape:
    """``shape`` (a TensorShape, list, tuple or None) as a TensorShape."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


class TensorSpec:
    """The shape (``None`` for any size) and dtype a tensor should have, as ``tf.TensorSpec``
    (for ``gt.function(input_signature=...)``)."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype="float32", name=None):
        from .dtypes import as_dtype
        if shape is None:
            raise ValueError("TensorSpec: shape must be a list of sizes (None for any), "
                             "got None")
        dims = []
        for d in (shape.as_list() if isinstance(shape, TensorShape) else list(shape)):
            if d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer))
                                  or d < 0):
                raise ValueError(f"TensorSpec: sizes must be non-negative ints or None, got "
                                 f"{list(shape)}")
            dims.append(None if d is None else int(d))
        self.shape = TensorShape(dims)
        self.dtype = as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None) -> "TensorSpec":
        return cls(tuple(tensor._value.shape), tensor.dtype, name)

    def is_compatible_with(self, other) -> bool:
        """Whether a tensor (or spec) has this dtype and a shape fitting this one."""
        if isinstance(other, TensorSpec):
            shape, dtype = other.shape, other.dtype
        elif isinstance(other, Tensor):
            shape, dtype = tuple(other._value.shape), other.dtype
        elif isinstance(other, (np.ndarray, np.generic)):
            from .dtypes import as_dtype
            shape, dtype = other.shape, as_dtype(other.dtype)
        else:                   # Python numbers and lists convert to the spec's dtype
            try:
                shape, dtype = np.asarray(other, dtype=self.dtype.np).shape, self.dtype
            except Exception:
                return False
        if dtype != self.dtype or len(shape) != len(self.shape):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.shape, shape))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == (
            other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((tuple(self.shape), self.dtype, self.name))

    def __repr__(self):
        shape = "(" + ", ".join("None" if d is None else str(d) for d in self.shape) + \
            ("," if len(self.shape) == 1 else "") + ")"
        return f"TensorSpec(shape={shape}, dtype=gt.{self.dtype.name}, name={self.name!r})"


class Tensor:
    """An immutable multi-dimensional array on one device, tracked by gradient tapes."""

    __slots__ = ("_value", "_device", "_id", "__weakref__")
    # NumPy's operators defer to ours (ndarray + tensor is a tensor), while NumPy functions
    # (np.exp(t), np.sum(t)) work on the host value and give arrays, as with TensorFlow
    __array_priority__ = 1000

    @property
    def _keras_mask(self):
        """The Keras mask a layer attached to this tensor (``Embedding(mask_zero=True)``,
        ``Masking``), or None."""
        from .layers import get_mask
        return get_mask(self)

    @_keras_mask.setter
    def _keras_mask(self, mask):
        from .layers import set_mask
        set_mask(self, mask)

    @_keras_mask.deleter
    def _keras_mask(self):
        # (`del logits._keras_mask`, as Keras' tutorials do to keep a mask out of the loss)
        from .layers import get_mask, set_mask
        if get_mask(self) is None:
            raise AttributeError("_keras_mask")
        set_mask(self, None)

    def __init__(self, value, device: Device):
        self._value = value
        self._device = device
        self._id = _next_id()

    # --- description ----------------------------------------------------------------
    @property
    def shape(self) -> TensorShape:
        return tuple.__new__(TensorShape, self._value.shape)

    @property
    def dtype(self) -> DType:
        return as_dtype(self._value.dtype)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def rank(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return int(self._value.size)

    def get_shape(self) -> TensorShape:
        return self.shape

    def numpy(self):
        """The value as a host NumPy array (a copy for GPU tensors); a NumPy scalar
        (``np.float32(2.5)``) for a 0-d tensor, as TensorFlow."""
        host = self._device.to_host(self._value)
        if host.ndim == 0:
            return host[()]
        return np.array(host, copy=True) if self._device.host_visible else host

    def __array__(self, dtype=None, copy=None):
        if not self._device.host_visible:
            raise TypeError(f"a {self._device} tensor cannot be converted to a NumPy array "
                            "implicitly; call .numpy() to copy it to the host")
        a = np.asarray(self._device.to_host(self._value))
        return a.astype(dtype) if dtype is not None else a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack capsule of the tensor's buffer (``torch.from_dlpack(t)``,
        ``cupy.from_dlpack(t)``, ``np.from_dlpack(t)``): no copy."""
        from .experimental.dlpack import dlpack_of
        return dlpack_of(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from .experimental.dlpack import dlpack_device_of
        return dlpack_device_of(self)

    def _host_scalar(self, what):
        if self._value.size != 1:
            raise TypeError(f"{what}() needs a one-element tensor, got shape {tuple(self._value.shape)}")
        return self._device.to_host(self._value).reshape(())[()]

    def __float__(self):
        return float(self._host_scalar("float"))

    def __int__(self):
        return int(self._host_scalar("int"))

    def __index__(self):
        if self._value.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype.name}")
        return int(self._host_scalar("index"))

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {tuple(self._value.shape)} "
                             "is ambiguous; use gt.reduce_any or gt.reduce_all")
        return bool(self._host_scalar("bool"))

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a scalar (0-d) tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a scalar (0-d) tensor")
        for i in range(self._value.shape[0]):
            yield self[i]

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def ref(self):
        """A hashable reference to this tensor (``deref()`` gives it back)."""
        return _Ref(self)

    def experimental_ref(self):
        return self.ref()

    def _format_value(self, is_repr=False):
        """The value as TensorFlow shows it: NumPy's str (or repr) of the host array, put on
        a line of its own when it takes several."""
        host = np.asarray(self._device.to_host(self._value))
        if host.ndim == 0:
            text = repr(host.item()) if is_repr and host.dtype.kind != "f" else str(host[()])
        else:
            text = np.array_repr(host) if is_repr else str(host)
        return "\n" + text if "\n" in text else text

    def __str__(self):
        return (f"gt.Tensor({self._format_value()}, shape={tuple(self._value.shape)}, "
                f"dtype={as_dtype(self._value.dtype).name}, device={self._device.name})")

    def __repr__(self):
        return (f"<gt.Tensor: shape={tuple(self._value.shape)}, "
                f"dtype={as_dtype(self._value.dtype).name}, device={self._device.name}, "
                f"numpy={self._format_value(is_repr=True)}>")

    def __format__(self, format_spec):
        """``f"{loss:.4f}"``: the host value formatted as NumPy formats it (as TF)."""
        if not format_spec:
            return str(self._host_value())
        return format(self._host_value(), format_spec)

    def _host_value(self):
        host = np.asarray(self._device.to_host(self._value))
        return host[()] if host.ndim == 0 else host

    # --- devices --------------------------------------------------------------------
    def to(self, device) -> "Tensor":
        """A copy of this tensor on ``device`` (the same tensor if already there)."""
        dev = _backend.get_device(device)
        if dev is self._device or self._value.dtype.kind == "O":
            return self         # (string tensors stay on the host, as TF's string kernels)
        from .ops.core import copy_to_device
        return copy_to_device(self, dev)

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def gpu(self, index: int = 0) -> "Tensor":
        return self.to(f"gpu:{index}")

    # --- operators -------------------------------------------------------------------
    # + - * and unary - are the op functions themselves, bound by gradtape.ops.math (one
    # frame less on the hottest paths); the rest call into gradtape.ops here.
    def __truediv__(self, other):
        return _m.divide(self, other)

    def __rtruediv__(self, other):
        return _m.divide(other, self)

    def __floordiv__(self, other):
        return _m.floordiv(self, other)

    def __rfloordiv__(self, other):
        return _m.floordiv(other, self)

    def __mod__(self, other):
        return _m.floormod(self, other)

    def __rmod__(self, other):
        return _m.floormod(other, self)

    def __pow__(self, other):
        return _m.pow(self, other)

    def __rpow__(self, other):
        return _m.pow(other, self)

    def __matmul__(self, other):
        return _la.matmul(self, other)

    def __rmatmul__(self, other):
        return _la.matmul(other, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _m.abs(self)

    # logical on bool tensors, bitwise on integer ones (as TensorFlow)
    def __invert__(self):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_invert(self)
        return _m.logical_not(self)

    def __and__(self, other):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_and(self, other)
        return _m.logical_and(self, other)

    def __rand__(self, other):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_and(other, self)
        return _m.logical_and(other, self)

    def __or__(self, other):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_or(self, other)
        return _m.logical_or(self, other)

    def __ror__(self, other):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_or(other, self)
        return _m.logical_or(other, self)

    def __xor__(self, other):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_xor(self, other)
        return _m.logical_xor(self, other)

    def __rxor__(self, other):
        if self._value.dtype.kind in "iu":
            return _m.bitwise_xor(other, self)
        return _m.logical_xor(other, self)

    def __lt__(self, other):
        return _m.less(self, other)

    def __le__(self, other):
        return _m.less_equal(self, other)

    def __gt__(self, other):
        return _m.greater(self, other)

    def __ge__(self, other):
        return _m.greater_equal(self, other)

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return _m.equal(self, other)
        except ValueError:
            if _broadcastable(self, other):
                raise
            return _constant_bool(False, self._device)   # shapes that cannot meet, as TF
        except TypeError:
            if self._value.dtype.kind != "O":
                raise
            return _string_compare(self, other, True)

    def __ne__(self, other):
        if other is None:
            return True
        try:
            return _m.not_equal(self, other)
        except ValueError:
            if _broadcastable(self, other):
                raise
            return _constant_bool(True, self._device)
        except TypeError:
            if self._value.dtype.kind != "O":
                raise
            return _string_compare(self, other, False)

    def __getitem__(self, key):
        return _sh.getitem(self, key)

    # --- TF-style methods -----------------------------------------------------------
    @property
    def T(self):
        return _sh.transpose(self)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return Tensor(self._device.copy(self._value), self._device)


def _broadcastable(a, b) -> bool:
    shape_b = b._value.shape if isinstance(b, Tensor) else np.shape(b)
    try:
        np.broadcast_shapes(a._value.shape, shape_b)
    except ValueError:
        return False
    return True


def _string_compare(a, other, equal):
    """``a == other`` (``!=`` when not ``equal``) for a string tensor ``a`` and a value that
    is not a tensor (str, bytes, lists, NumPy text arrays): elementwise, broadcasting; False
    (True) when the shapes cannot meet, as TF."""
    if isinstance(other, Tensor):
        raise TypeError(f"equal: operands have different dtypes string and "
                        f"{as_dtype(other._value.dtype).name}")
    try:
        host = _string_array(other)
    except (TypeError, ValueError):
        raise TypeError(f"equal: cannot compare a string tensor with {other!r:.100}") from None
    try:
        shape = np.broadcast_shapes(a._value.shape, host.shape)
    except ValueError:
        return _constant_bool(not equal, a._device)
    x = np.broadcast_to(a._value, shape)
    y = np.broadcast_to(host, shape)
    res = (x == y) if equal else (x != y)
    return Tensor(np.asarray(res, dtype=np.bool_), a._device)


def _constant_bool(value, device):
    with device.activate():
        return Tensor(device.xp.asarray(value), device)


class _Ref:
    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __hash__(self):
        return id(self._obj)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._obj is self._obj


# Tensor(value, device) without the __init__ frame when the C module is there (its wrap is
# usable once registry.py has called _speedups.setup, which importing gradtape does)
_new_tensor = _speedups.wrap if _speedups is not None else Tensor


class Variable(Tensor):
    """A mutable tensor; trainable Variables are watched by tapes when read.

    ``assign`` installs a new buffer rather than writing over the old one, so a value that a
    tape saved, or a tensor read earlier, keeps the value it had when it was read.
    """

    __slots__ = ("trainable", "_name", "_constraint", "_aggregation", "_synchronization")

    def __init__(self, initial_value=None, trainable: bool = True, name: str | None = None,
                 dtype=None, shape=None, constraint=None, aggregation=None,
                 synchronization=None, **unused):
        if initial_value is None:
            raise ValueError("Variable: initial_value must be given")
        if callable(initial_value):
            initial_value = initial_value()
        value, device = _initial_array(initial_value, dtype)
        if shape is not None and tuple(shape) != tuple(value.shape):
            raise ValueError(f"Variable {name or 'Variable'}: initial value has shape "
                             f"{tuple(value.shape)}, but shape={tuple(shape)} was given")
        super().__init__(value, device)
        self.trainable = bool(trainable)
        self._name = (name or "Variable")
        self._constraint = constraint
        self._aggregation = aggregation          # (one replica: recorded, as given)
        self._synchronization = synchronization
        # (captured steps pin the buffers of live Variables)
        key = self._id
        _LIVE_VARIABLES[key] = weakref.ref(self, lambda _, k=key: _LIVE_VARIABLES.pop(k, None))

    @property
    def name(self) -> str:
        return self._name if ":" in self._name else self._name + ":0"

    @property
    def path(self) -> str:
        """Keras 3's name of the variable with its layer's: ``"dense/kernel"``."""
        return self._name.split(":")[0]

    @property
    def constraint(self):
        return self._constraint

    @property
    def aggregation(self):
        """``gt.VariableAggregation`` given at creation (``NONE`` by default)."""
        from .misc import VariableAggregation
        given = getattr(self, "_aggregation", None)
        return VariableAggregation.NONE if given is None else VariableAggregation(given)

    @property
    def synchronization(self):
        """``gt.VariableSynchronization`` given at creation (``AUTO`` by default)."""
        from .misc import VariableSynchronization
        given = getattr(self, "_synchronization", None)
        return VariableSynchronization.AUTO if given is None else VariableSynchronization(given)

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    def read_value(self) -> Tensor:
        """The current value as a Tensor (recorded as an identity read by recording tapes)."""
        from .ops.core import identity
        return identity(self)

    def value(self) -> Tensor:
        return self.read_value()

    def _check_new(self, value, op: str):
        """Convert ``value`` for assignment: same device, dtype and shape, or a clear error."""
        dev = self._device
        dt = self._value.dtype
        if isinstance(value, Tensor):
            if value._value.dtype != dt:
                raise TypeError(f"Variable.{op}: {self.name} has dtype {as_dtype(dt).name}, "
                                f"the value has dtype {as_dtype(value._value.dtype).name}")
            if value._device is not dev:
                raise DeviceError(f"Variable.{op}: {self.name} is on {dev}, the value on "
                                  f"{value._device}")
            arr = value._value
        elif dt.kind == "O":
            arr = _string_array(value)
        else:
            _check_python_value_fits(value, dt, f"Variable.{op}")
            arr = dev.asarray(value, dtype=dt)
        if tuple(arr.shape) != tuple(self._value.shape):
            raise ValueError(f"Variable.{op}: cannot assign a value of shape {tuple(arr.shape)} "
                             f"to {self.name} of shape {tuple(self._value.shape)}")
        return arr

    def _set(self, array):
        self._value = array

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Set the value (same shape and dtype); not differentiable."""
        arr = self._check_new(value, "assign")
        self._set(self._device.copy(arr) if isinstance(value, Tensor) else arr)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        arr = self._check_new(delta, "assign_add")
        self._set(self._value + arr)
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        arr = self._check_new(delta, "assign_sub")
        self._set(self._value - arr)
        return self if read_value else None

    # --- TF's sliced and scattered assignment -------------------------------------------
    def __getitem__(self, key):
        """``v[key]``: the slice as a tensor (differentiable, as any read), which also has
        ``assign(value)`` writing into that part of the variable (``v[0].assign(...)``)."""
        out = _sh.getitem(self, key)
        s = _VariableSlice.__new__(_VariableSlice)
        s._value, s._device, s._id = out._value, out._device, out._id
        s._base, s._variable, s._key = out, self, key
        return s

    def _assign_part(self, key, value, op):
        """A new buffer equal to the old one with ``value`` written at ``key``."""
        dev = self._device
        if isinstance(value, Tensor):
            if value._value.dtype != self._value.dtype:
                raise TypeError(f"Variable.{op}: {self.name} has dtype "
                                f"{as_dtype(self._value.dtype).name}, the value has dtype "
                                f"{as_dtype(value._value.dtype).name}")
            if value._device is not dev:
                raise DeviceError(f"Variable.{op}: {self.name} is on {dev}, the value on "
                                  f"{value._device}")
            arr = value._value
        else:
            _check_python_value_fits(value, self._value.dtype, f"Variable.{op}")
            arr = dev.asarray(np.asarray(value, dtype=self._value.dtype))
        key = _host_key(key)
        with dev.activate():
            new = dev.copy(self._value)
            try:
                target_shape = new[key].shape
                new[key] = dev.xp.broadcast_to(arr, target_shape)
            except (IndexError, ValueError) as exc:
                raise ValueError(f"Variable.{op}: cannot write a value of shape "
                                 f"{tuple(arr.shape)} into {self.name}{_key_text(key)} ({exc})") \
                    from None
        self._set(new)
        return self

    def _scatter(self, op, fn, indices, updates):
        from .ops import scatter as _sc
        if isinstance(updates, Tensor) and updates._value.dtype != self._value.dtype:
            raise TypeError(f"Variable.{op}: {self.name} has dtype "
                            f"{as_dtype(self._value.dtype).name}, the updates "
                            f"{as_dtype(updates._value.dtype).name}")
        new = getattr(_sc, fn)(Tensor(self._value, self._device), indices, updates)
        self._set(new._value)
        return self

    def scatter_nd_update(self, indices, updates, use_locking=True, name=None):
        """Write ``updates`` at ``indices`` (``tf.Variable.scatter_nd_update``)."""
        return self._scatter("scatter_nd_update", "tensor_scatter_nd_update", indices, updates)

    def scatter_nd_add(self, indices, updates, use_locking=False, name=None):
        return self._scatter("scatter_nd_add", "tensor_scatter_nd_add", indices, updates)

    def scatter_nd_sub(self, indices, updates, use_locking=False, name=None):
        return self._scatter("scatter_nd_sub", "tensor_scatter_nd_sub", indices, updates)

    def sparse_read(self, indices, name=None) -> Tensor:
        """``gather(v, indices)``."""
        from .ops.shape import gather
        return gather(self, indices)

    def gather_nd(self, indices, name=None) -> Tensor:
        from .ops.shape import gather_nd
        return gather_nd(self, indices)

    def _assign_array(self, array):
        """Install an optimizer's freshly computed device array of the right shape/dtype,
        through the Variable's ``constraint`` as Keras' optimizers apply it (``assign`` and
        restoring a checkpoint never apply it, as in TensorFlow)."""
        if self._constraint is not None:
            array = self._constraint(Tensor(array, self._device))._value
        self._set(array)        # (through _set: captured steps track writes there)

    def __repr__(self):
        return (f"<gt.Variable '{self.name}' shape={tuple(self._value.shape)} "
                f"dtype={as_dtype(self._value.dtype).name} device={self._device.name}, "
                f"numpy={self._format_value(is_repr=True)}>")

    __str__ = __repr__

    def __deepcopy__(self, memo):
        return Variable(Tensor(self._device.copy(self._value), self._device),
                        trainable=self.trainable, name=self._name, constraint=self._constraint)


class _VariableSlice(Tensor):
    """``v[key]`` of a Variable: a tensor (the slice's value when read) that can also write
    that slice of the variable, as TF's ``v[0].assign(...)``."""

    __slots__ = ("_base", "_variable", "_key")

    def assign(self, value, use_locking=None, name=None, read_value=True):
        var = self._variable._assign_part(self._key, value, "assign")
        return var if read_value else None


def _host_key(key):
    """An index of ints, slices, ``...`` and ``None`` with tensors read as ints."""
    items = key if isinstance(key, tuple) else (tuple(key) if type(key) is list else (key,))
    out = []
    for k in items:
        if isinstance(k, Tensor):
            k = int(k.numpy()) if k.ndim == 0 else k.numpy()
        elif isinstance(k, slice):
            k = slice(*(int(v.numpy()) if isinstance(v, Tensor) else v
                        for v in (k.start, k.stop, k.step)))
        out.append(k)
    return tuple(out)


def _key_text(key):
    def one(k):
        if isinstance(k, slice):
            return ":".join("" if v is None else str(v) for v in (k.start, k.stop, k.step)) \
                .rstrip(":") or ":"
        return "..." if k is Ellipsis else str(k)
    return "[" + ", ".join(one(k) for k in key) + "]"


# every live Variable: a captured step keeps each one's buffer (gradtape.capture)
# (by id: Variables are unhashable, as in TensorFlow)
_LIVE_VARIABLES: dict = {}


def live_variables() -> list:
    """Every Variable alive now."""
    return [v for v in (r() for r in list(_LIVE_VARIABLES.values())) if v is not None]


def _snapshot(var: Variable) -> Tensor:
    """The value a Variable has now, under the Variable's id (what tapes save)."""
    t = Tensor.__new__(Tensor)
    t._value = var._value
    t._device = var._device
    t._id = var._id
    return t


# --- conversion ------------------------------------------------------------------------

def _infer_host(value, dtype):
    """A host NumPy array for a Python/NumPy value with TensorFlow's default dtypes (text
    becomes a ``gt.string`` array: an object array of ``bytes``)."""
    if dtype is not None:
        if dtype.kind == "O":
            return _string_array(value)
        if isinstance(value, (str, bytes)):
            raise TypeError(f"convert_to_tensor: cannot convert {value!r} to a tensor of "
                            f"dtype {as_dtype(dtype).name}")
        _check_python_value_fits(value, dtype, "convert_to_tensor")
        return np.asarray(value, dtype=dtype)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "USO":
            return _string_array(value)
        return value
    if isinstance(value, np.generic):
        return _string_array(value) if value.dtype.kind in "US" else np.asarray(value)
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        # (NumPy float64 values in a list keep their dtype, as in TF; Python floats do not)
        return arr if _holds_numpy_float64(value) else arr.astype(np.float32)
    if arr.dtype.kind in "iu" and arr.dtype != np.int32:
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            return arr.astype(np.int32)
        return arr.astype(np.int64)
    if arr.dtype.kind in "USO":
        return _string_array(value)
    return arr


_OBJECT = np.dtype(object)      # the host dtype of string tensors


def _string_array(value) -> np.ndarray:
    """``value`` (a str or bytes, a nested list of them, a NumPy text or object array) as
    the host value of a ``gt.string`` tensor: an object array of ``bytes``, str encoded as
    UTF-8. TypeError for values that are not text (ValueError when text and other values
    mix, as TF)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "US":
        arr = value
    else:
        try:
            arr = np.asarray(value, dtype=object)
        except ValueError as exc:
            raise ValueError(f"convert_to_tensor: {exc}") from None
    items = arr.reshape(-1).tolist()
    out = []
    for v in items:
        if isinstance(v, bytes):
            out.append(bytes(v) if type(v) is not bytes else v)
        elif isinstance(v, str):
            out.append(v.encode("utf-8"))
        else:
            if isinstance(v, (list, tuple)):
                raise ValueError(f"convert_to_tensor: Can't convert non-rectangular Python "
                                 f"sequence to Tensor ({value!r:.200})")
            if out or any(isinstance(u, (str, bytes)) for u in items):
                raise ValueError(f"convert_to_tensor: Can't convert Python sequence with "
                                 f"mixed types to Tensor ({value!r:.200})")
            raise TypeError(f"convert_to_tensor: cannot convert {value!r:.200} to a tensor "
                            f"(an element is {type(v).__name__} {v!r:.50})")
    host = np.empty(len(out), dtype=object)
    host[:] = out
    return host.reshape(arr.shape)


def _holds_numpy_float64(value) -> bool:
    if isinstance(value, (np.floating, np.ndarray)):
        return value.dtype == np.float64
    if isinstance(value, (list, tuple)):
        return any(_holds_numpy_float64(v) for v in value)
    return False


def _holds_tensor(value) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    return False


def _packed(value, dtype, what):
    """A (nested) list holding tensors as one tensor: TF's auto-packing (``tf.stack`` of the
    parts, so gradients flow to them); the tensors decide the dtype, the other values
    (Python numbers) are converted to it."""
    from .ops.shape import stack
    leaves = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for u in v:
                walk(u)
        elif isinstance(v, Tensor):
            leaves.append(v)
    walk(value)
    dts = {t._value.dtype for t in leaves}
    if dtype is None:
        if len(dts) > 1:
            raise TypeError(f"{what}: cannot pack tensors of dtypes "
                            f"{sorted(as_dtype(d).name for d in dts)} into one tensor")
        dtype = dts.pop()
    else:
        for t in leaves:
            if t._value.dtype != dtype:
                raise TypeError(f"{what}: a tensor of dtype {as_dtype(t._value.dtype).name} "
                                f"cannot be packed as {as_dtype(dtype).name}")

    def pack(v):
        if isinstance(v, (list, tuple)):
            if not v:
                raise ValueError(f"{what}: cannot pack an empty list next to tensors")
            return stack([pack(u) for u in v])
        if isinstance(v, Tensor):
            return v
        return constant(v, dtype=dtype)
    return pack(value)


def _check_python_value_fits(value, dtype, what):
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        if isinstance(value, float) and not float(value).is_integer():
            raise TypeError(f"{what}: cannot convert {value!r} to a tensor of dtype "
                            f"{as_dtype(dt).name}")
        if isinstance(value, (list, tuple, np.ndarray)):
            arr = np.asarray(value)
            if arr.dtype.kind == "f" and arr.size and not np.all(np.mod(arr, 1) == 0):
                raise TypeError(f"{what}: cannot convert float values to a tensor of dtype "
                                f"{as_dtype(dt).name}")


def _initial_array(value, dtype):
    dt = np_dtype(dtype)
    if isinstance(value, Tensor):
        arr = value._value
        if dt is not None and arr.dtype != dt:
            arr = arr.astype(dt)
        else:
            arr = value._device.copy(arr)
        return arr, value._device
    device = _backend.current_device()
    if device.is_native(value) and not isinstance(value, np.ndarray):
        return (value.astype(dt) if dt is not None else value.copy()), device
    host = _infer_host(value, dt)
    if host.dtype is _OBJECT:
        return host, _backend.CPU              # (a string variable: on the host)
    return device.asarray(host).copy() if device.host_visible else device.asarray(host), device


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None) -> Tensor:
    """Turn a Tensor, Variable, NumPy array, Python number or nested list into a Tensor."""
    if isinstance(value, Tensor):
        if dtype is not None and value._value.dtype != np_dtype(dtype):
            raise TypeError(f"convert_to_tensor: tensor of dtype {as_dtype(value._value.dtype).name} "
                            f"requested as {as_dtype(dtype).name}; use gt.cast")
        return value
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return _packed(value, np_dtype(dtype), "convert_to_tensor")
    if type(value).__name__ == "IndexedSlices" and hasattr(value, "_dense"):
        return convert_to_tensor(value._dense(), dtype=dtype)
    if dtype is None and dtype_hint is not None and not isinstance(value, np.ndarray):
        try:
            return constant(value, dtype=dtype_hint)
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype)


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    """A tensor holding ``value`` (Python floats become float32 and ints int32, as in TF)."""
    device = _backend.current_device()
    dt = np_dtype(dtype)
    if isinstance(value, Tensor):
        arr = value._value
        if dt is not None and arr.dtype != dt:
            arr = arr.astype(dt)
        if value._device is not device:
            if arr.dtype.kind == "O":          # strings stay on the host
                device = value._device
            else:
                arr = device.from_other(arr, value._device)
    elif device.is_native(value) and not isinstance(value, np.ndarray):
        arr = value.astype(dt) if dt is not None else value
    elif isinstance(value, (list, tuple)) and _holds_tensor(value):
        packed = _packed(value, dt, "constant")
        arr = packed._value
        if packed._device is not device:
            if arr.dtype.kind == "O":
                device = packed._device
            else:
                arr = device.from_other(arr, packed._device)
    else:
        host = _infer_host(value, dt)
        if host.dtype is _OBJECT:
            # string tensors live on the host, as TF places its string kernels on the CPU
            device = _backend.CPU
        arr = device.asarray(host)
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if arr.size == 1:
            with device.activate():
                arr = device.xp.broadcast_to(arr.reshape(()), shape).copy()
        elif _prod(shape) == arr.size:
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"constant: value of shape {tuple(arr.shape)} cannot be given "
                             f"shape {shape}")
    return Tensor(arr, device)


def is_tensor(x) -> bool:
    """Whether ``x`` is a tensor of any kind: a Tensor or Variable, or a SparseTensor,
    RaggedTensor or IndexedSlices (as ``tf.is_tensor``)."""
    if isinstance(x, Tensor):
        return True
    from .indexed_slices import IndexedSlices
    from .ragged import RaggedTensor
    from .sparse import SparseTensor
    return isinstance(x, (SparseTensor, RaggedTensor, IndexedSlices))


# Bound late: the op modules import this one.
from .ops import math as _m  # noqa: E402
from .ops import linalg as _la  # noqa: E402
from .ops import shape as _sh  # noqa: E402

__all__ = ["Tensor", "Variable", "TensorShape", "convert_to_tensor", "constant", "is_tensor"]
