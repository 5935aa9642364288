"""The strict test device (``strict:N``): NumPy arrays behind a CuPy-like wall.

Arrays of a strict device (:class:`StrictArray`) hold a NumPy array but behave like arrays
of an accelerator that the host cannot read:

* combining one with a host NumPy array (``strict + numpy``, ``xp.add(strict, numpy)``,
  ``numpy_array[...] = strict``) raises ``TypeError`` naming both sides;
* implicit conversion to the host raises ``TypeError``: ``__array__`` (``np.asarray``),
  ``float()``, ``int()``, ``bool()``, ``operator.index()``, ``.item()``, ``.tolist()``;
* arrays of two strict devices do not mix either (``strict:0`` with ``strict:1``);
* a strict device made with ``switching=True`` stands for one GPU among several: like CuPy
  with more than one GPU, work for it may only be launched while it is the current device
  (inside ``device.activate()``), and an array made for it while another device is current
  raises :class:`~gradtape.backend.base.DeviceError` naming both;
* explicit copies are counted: :meth:`StrictDevice.to_host` (what ``Tensor.numpy()``,
  ``float(tensor)`` ... use) increments ``sync_count`` and ``transfer_count``; uploads
  (:meth:`StrictDevice.asarray` of host data) increment ``transfer_count``; operations whose
  output shape depends on the data (``nonzero``, boolean-mask indexing), which make a GPU
  wait, increment ``sync_count``; so do writes and scatters through a boolean mask
  (``a[mask] = v``, ``xp.add.at(a, mask, v)``), which CuPy implements by counting the mask's
  true elements on the host.

Python scalars, NumPy scalars and 0-d host arrays combine freely, as on CuPy.

The device's ``xp`` is a thin namespace over NumPy: every NumPy function and ufunc is
reachable under its usual name, takes strict arrays, refuses host arrays and returns strict
arrays. NumPy functions called directly on strict arrays (``np.sum(a)``) dispatch to the same
checked implementation, as they do for CuPy arrays. This device is a test of device
discipline on a CPU-only machine (an op that quietly takes a host array, a host sync inside
a backward pass), not a stand-in for GPU numerics.
"""
from __future__ import annotations

import inspect
import sys
import threading
import types

import numpy as np

from .base import Device, DeviceError, native_order, single_value

__all__ = ["StrictDevice", "StrictArray", "StrictNamespace", "HostLeakError"]


def _inner_refs(holder) -> int:     # the references StrictDevice.owns_memory counts
    inner = holder._a
    return sys.getrefcount(inner)


# ... for a NumPy array held by its StrictArray only
_INNER_REFS = _inner_refs(types.SimpleNamespace(_a=object()))


class HostLeakError(TypeError):
    """A strict array met a host array, or was converted to the host implicitly."""


# Functions whose output shape depends on the values: a device must wait for them.
_DATA_DEPENDENT = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "extract",
                             "compress", "unique_values", "unique_counts", "unique_inverse",
                             "unique_all", "trim_zeros"})
# Creation functions that take host data: explicit uploads.
_UPLOADS = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray",
                      "asfortranarray", "copy"})


def _describe_host(value) -> str:
    return f"host numpy.ndarray of shape {tuple(value.shape)} ({value.dtype})"


def _is_host_array(value) -> bool:
    """A host array a device would refuse: a NumPy array with at least one dimension."""
    return type(value) is not StrictArray and isinstance(value, np.ndarray) and value.ndim > 0


class _Unwrapper:
    """Turns strict arguments into NumPy ones, checking devices and refusing host arrays."""

    __slots__ = ("device", "what")

    def __init__(self, device, what):
        self.device = device
        self.what = what

    def __call__(self, value):
        tv = type(value)
        if tv is StrictArray:
            dev = value._device
            if self.device is None:
                self.device = dev
            elif dev is not self.device:
                raise HostLeakError(f"{self.what}: arrays of {self.device.name} and {dev.name} "
                                    "cannot be combined; copy one to the other device first")
            return value._a
        if tv in (int, float, bool, complex, str, type(None), slice, type(Ellipsis)):
            return value
        if isinstance(value, np.ndarray):
            if value.ndim > 0:
                dev = self.device.name if self.device is not None else "a strict device"
                raise HostLeakError(f"{self.what}: cannot combine a {dev} array with a "
                                    f"{_describe_host(value)}; place it on the device first "
                                    "(device.asarray / tensor.to(device))")
            return value
        if tv is tuple or tv is list:
            return tv(self(v) for v in value)
        if tv is dict:
            return {k: self(v) for k, v in value.items()}
        return value


def _wrap(value, device):
    """Wrap NumPy results as strict arrays of ``device`` (scalars become 0-d arrays)."""
    if isinstance(value, np.ndarray):
        return StrictArray(value, device)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value), device)
    if type(value) is tuple:
        return tuple(_wrap(v, device) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):     # slogdet, eigh ... results
        return type(value)(*(_wrap(v, device) for v in value))
    if type(value) is list:
        return [_wrap(v, device) for v in value]
    return value


def _leak(device, what):
    return HostLeakError(f"{what} of a {device.name} array would read it on the host "
                         "implicitly; copy it explicitly with device.to_host / tensor.numpy()")


_active = threading.local()   # .device: the switching strict device made current here


class _Activation:
    """``with device.activate():`` for a switching strict device (as ``cupy.cuda.Device``)."""

    __slots__ = ("device", "previous")

    def __init__(self, device):
        self.device = device
        self.previous = None

    def __enter__(self):
        self.previous = getattr(_active, "device", None)
        _active.device = self.device
        return self.device

    def __exit__(self, *exc):
        _active.device = self.previous
        return False


def _not_current(device) -> DeviceError:
    current = getattr(_active, "device", None)
    return DeviceError(f"{device.name}: work for this device was launched while "
                       f"{current.name if current is not None else 'another device'} was "
                       f"current; make it current first (with device.activate()), as CuPy "
                       f"requires with several GPUs")


class StrictArray:
    """An array of a strict device: NumPy storage, no implicit way to the host."""

    __slots__ = ("_a", "_device", "__weakref__")
    # NumPy binary operators defer to __array_ufunc__, which refuses host arrays.
    __array_priority__ = 100

    def __init__(self, array: np.ndarray, device: "StrictDevice"):
        if device.needs_switch and getattr(_active, "device", None) is not device:
            raise _not_current(device)
        self._a = array
        self._device = device
        if array.base is None:
            device._hold(array)

    def __del__(self):
        try:
            if self._a.base is None:
                self._device._release(self._a)
        except Exception:  # interpreter shutdown: module globals may be gone
            pass

    # --- metadata (no data leaves the device) -------------------------------------------
    @property
    def shape(self):
        return self._a.shape

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def size(self):
        return self._a.size

    @property
    def nbytes(self):
        return self._a.nbytes

    @property
    def itemsize(self):
        return self._a.itemsize

    @property
    def strides(self):
        return self._a.strides

    @property
    def flags(self):
        return self._a.flags

    @property
    def device(self):
        return self._device

    @property
    def T(self):
        return StrictArray(self._a.T, self._device)

    @property
    def real(self):
        return StrictArray(self._a.real, self._device)

    @property
    def imag(self):
        return StrictArray(self._a.imag, self._device)

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._a.shape[0]

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._a.shape[0]):
            yield StrictArray(self._a[i], self._device)

    def __repr__(self):
        return f"StrictArray(shape={self._a.shape}, dtype={self._a.dtype}, device={self._device.name})"

    __str__ = __repr__
    __hash__ = None

    # --- refused implicit conversions ---------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise _leak(self._device, "__array__ (np.asarray)")

    def __float__(self):
        raise _leak(self._device, "float()")

    def __int__(self):
        raise _leak(self._device, "int()")

    def __complex__(self):
        raise _leak(self._device, "complex()")

    def __index__(self):
        raise _leak(self._device, "operator.index()")

    def __bool__(self):
        raise _leak(self._device, "bool()")

    def __contains__(self, item):
        raise _leak(self._device, "`in`")

    def item(self, *args):
        raise _leak(self._device, ".item()")

    def tolist(self):
        raise _leak(self._device, ".tolist()")

    def tobytes(self, order="C"):
        raise _leak(self._device, ".tobytes()")

    def get(self):
        """Explicit copy to the host (counted, as ``cupy.ndarray.get``)."""
        return self._device.to_host(self)

    # --- NumPy protocol ---------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        unwrap = _Unwrapper(self._device, f"numpy.{ufunc.__name__}")
        raw_in = unwrap(inputs)
        out = kwargs.get("out")
        raw_kw = {k: unwrap(v) for k, v in kwargs.items() if k != "out"}
        if out is not None:
            raw_kw["out"] = tuple(_out_array(o, unwrap, ufunc) for o in out)
        if method == "at":
            _check_scatter(ufunc.__name__, raw_in[0] if raw_in else None)
        result = getattr(ufunc, method)(*raw_in, **raw_kw)
        if method == "at":
            return None
        if out is not None:
            return out[0] if len(out) == 1 else tuple(out)
        return _wrap(result, unwrap.device)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, func.__name__, self._device, args, kwargs)

    # --- indexing -----------------------------------------------------------------------
    def __getitem__(self, key):
        raw_key = _key(key, self._device)
        if _has_bool_mask(raw_key):
            self._device._implicit_sync()
        return _wrap(self._a[raw_key], self._device)

    def __setitem__(self, key, value):
        raw_key = _key(key, self._device)
        if _has_bool_mask(raw_key):
            self._device._implicit_sync()       # CuPy counts the mask's true elements
        self._a[raw_key] = _Unwrapper(self._device, "__setitem__")(value)

    # --- methods ------------------------------------------------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        out = self._a.astype(dtype, order=order, casting=casting, copy=copy)
        return self if out is self._a else StrictArray(out, self._device)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return StrictArray(self._a.reshape(shape, order=order), self._device)

    def copy(self, order="C"):
        return StrictArray(self._a.copy(order=order), self._device)

    def view(self, *args, **kwargs):
        return StrictArray(self._a.view(*args, **kwargs), self._device)

    def fill(self, value):
        self._a.fill(_Unwrapper(self._device, "fill")(value))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __getattr__(self, name):
        # Remaining ndarray methods (sum, max, transpose, ravel ...), checked and wrapped.
        # Dunder names are never forwarded: __array_interface__, __array_struct__ or
        # __dlpack__ would hand NumPy the data behind the device's back.
        if name.startswith("__") or name in ("_a", "_device"):
            raise AttributeError(name)
        attr = getattr(np.ndarray, name, None)
        if attr is None or not callable(attr):
            raise AttributeError(f"'StrictArray' object has no attribute {name!r}")
        cupy = _cupy_namespace("xp")
        if cupy is not None and not hasattr(cupy.ndarray, name):
            raise AttributeError(f"ndarray.{name}: cupy.ndarray has no method {name}, so an "
                                 "op using it would fail on a GPU")
        method = getattr(self._a, name)
        device = self._device

        def call(*args, **kwargs):
            unwrap = _Unwrapper(device, f"ndarray.{name}")
            return _wrap(method(*unwrap(args), **unwrap(kwargs)), device)
        call.__name__ = name
        return call

    # --- operators ----------------------------------------------------------------------
    def _binary(self, other, ufunc, reflected=False):
        if type(other) is not StrictArray and not isinstance(
                other, (int, float, bool, complex, np.ndarray, np.generic)):
            return NotImplemented
        unwrap = _Unwrapper(self._device, f"numpy.{ufunc.__name__}")
        o = unwrap(other)
        res = ufunc(o, self._a) if reflected else ufunc(self._a, o)
        return _wrap(res, self._device)

    def _inplace(self, other, ufunc):
        if type(other) is not StrictArray and not isinstance(
                other, (int, float, bool, complex, np.ndarray, np.generic)):
            return NotImplemented
        o = _Unwrapper(self._device, f"numpy.{ufunc.__name__}")(other)
        ufunc(self._a, o, out=self._a)
        return self

    def __neg__(self):
        return StrictArray(-self._a, self._device)

    def __pos__(self):
        return StrictArray(+self._a, self._device)

    def __abs__(self):
        return StrictArray(abs(self._a), self._device)

    def __invert__(self):
        return StrictArray(~self._a, self._device)


def _make_binary(ufunc):
    def op(self, other):
        return self._binary(other, ufunc)

    def rop(self, other):
        return self._binary(other, ufunc, reflected=True)

    def iop(self, other):
        return self._inplace(other, ufunc)
    return op, rop, iop


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                      ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)]:
    _op, _rop, _iop = _make_binary(_ufunc)
    setattr(StrictArray, f"__{_name}__", _op)
    setattr(StrictArray, f"__r{_name}__", _rop)
    setattr(StrictArray, f"__i{_name}__", _iop)

for _name, _ufunc in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                      ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(StrictArray, f"__{_name}__", _make_binary(_ufunc)[0])


def _out_array(o, unwrap, ufunc):
    if type(o) is StrictArray:
        return unwrap(o)
    if isinstance(o, np.ndarray):
        raise HostLeakError(f"numpy.{ufunc.__name__}: out= is a {_describe_host(o)}; a "
                            f"{unwrap.device.name} result cannot be written to host memory")
    return o


def _has_bool_mask(key):
    parts = key if type(key) is tuple else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim > 0 for k in parts)


def _key(key, device):
    """An index with strict arrays unwrapped; host index arrays and lists are refused."""
    parts = key if type(key) is tuple else (key,)
    out = []
    for k in parts:
        tk = type(k)
        if tk is StrictArray:
            if k._device is not device:
                raise HostLeakError(f"__getitem__: index array is on {k._device.name}, the "
                                    f"array on {device.name}")
            out.append(k._a)
        elif tk is list or (isinstance(k, np.ndarray) and k.ndim > 0):
            what = "a host list" if tk is list else f"a {_describe_host(k)}"
            raise HostLeakError(f"__getitem__: a {device.name} array indexed by {what}; "
                                "place the index on the device first (device.asarray)")
        else:
            out.append(k)
    return tuple(out) if type(key) is tuple else out[0]


def _call(func, name, device, args, kwargs):
    """Run NumPy function ``func`` on strict arguments; wrap the results."""
    unwrap = _Unwrapper(device, f"numpy.{name}")
    raw_args = unwrap(args)
    raw_kwargs = unwrap(kwargs) if kwargs else {}
    result = func(*raw_args, **raw_kwargs)
    dev = unwrap.device or device
    if name in _DATA_DEPENDENT:
        dev._implicit_sync()
    return _wrap(result, dev)


# CuPy's ufunc.at: the ufuncs it has a scatter for, and the dtypes each takes (its atomics);
# maximum/minimum.at of float64 go through a float atomic there, rounding to float32
_SCATTER_DTYPES = {"add": "ilefdIL", "subtract": "ilIL", "maximum": "ilfIL",
                   "minimum": "ilfIL"}


def _check_scatter(name, target):
    allowed = _SCATTER_DTYPES.get(name)
    if allowed is None:
        raise TypeError(f"xp.{name}.at: CuPy has no {name}.at (only "
                        f"{', '.join(sorted(_SCATTER_DTYPES))})")
    char = getattr(getattr(target, "dtype", None), "char", None)
    if char is not None and char not in allowed and not (char == "q" and "l" in allowed) \
            and not (char == "Q" and "L" in allowed):
        raise TypeError(f"xp.{name}.at: CuPy's {name}.at does not take {target.dtype} "
                        f"(it takes {', '.join(str(np.dtype(c)) for c in allowed)})")


class _StrictUfunc:
    """A NumPy ufunc taking and returning strict arrays (``xp.add``, ``xp.add.at`` ...)."""

    __slots__ = ("_ufunc", "_device", "__name__")

    def __init__(self, ufunc, device):
        self._ufunc = ufunc
        self._device = device
        self.__name__ = ufunc.__name__

    def __getattr__(self, name):
        return getattr(self._ufunc, name)

    def _run(self, method, args, kwargs):
        unwrap = _Unwrapper(self._device, f"xp.{self.__name__}")
        raw_args = unwrap(args)
        out = kwargs.get("out")
        raw_kwargs = {k: unwrap(v) for k, v in kwargs.items() if k != "out"}
        if out is not None:
            outs = out if type(out) is tuple else (out,)
            raw_kwargs["out"] = tuple(_out_array(o, unwrap, self._ufunc) for o in outs)
        if method == "at":
            _check_scatter(self.__name__, raw_args[0] if raw_args else None)
        if method == "at" and len(raw_args) > 1 and _has_bool_mask(raw_args[1]):
            (unwrap.device or self._device)._implicit_sync()   # as CuPy's scatter with a mask
        result = getattr(self._ufunc, method)(*raw_args, **raw_kwargs)
        if method == "at":
            return None
        if out is not None:
            return out
        return _wrap(result, unwrap.device or self._device)

    def __call__(self, *args, **kwargs):
        return self._run("__call__", args, kwargs)

    def reduce(self, *args, **kwargs):
        return self._run("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return self._run("accumulate", args, kwargs)

    def reduceat(self, *args, **kwargs):
        return self._run("reduceat", args, kwargs)

    def outer(self, *args, **kwargs):
        return self._run("outer", args, kwargs)

    def at(self, *args, **kwargs):
        return self._run("at", args, kwargs)

    def __repr__(self):
        return f"<strict ufunc {self.__name__!r}>"


class _StrictRandomState:
    """CuPy's ``RandomState`` API (``dtype=`` on draws) with results on the strict device."""

    def __init__(self, device, seed=None):
        self._device = device
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def _out(self, host):
        return StrictArray(np.asarray(host), self._device)

    def standard_normal(self, size=None, dtype=np.float64):
        return self._out(self._rng.standard_normal(size, dtype=dtype))

    def random_sample(self, size=None, dtype=np.float64):
        return self._out(self._rng.random(size, dtype=dtype))

    def randint(self, low, high=None, size=None, dtype=np.int64):
        return self._out(self._rng.integers(low, high, size=size, dtype=dtype))

    def permutation(self, n):
        return self._out(self._rng.permutation(n))


# Names the strict namespace serves beyond CuPy's: host-side helpers ops look up with a
# fallback (``getattr(xp, "errstate", None)``).
_NOT_CUPY_OK = frozenset({"errstate"})
_CUPY_NAMESPACES: dict = {}


def _cupy_namespace(prefix):
    """CuPy's module for namespace ``prefix`` (``xp``, ``xp.linalg`` ...) when CuPy imports
    (no GPU needed), else None: then the strict device does not check names against it."""
    try:
        return _CUPY_NAMESPACES[prefix]
    except KeyError:
        pass
    try:
        import cupy as mod
    except Exception:  # not installed, or a broken CUDA install: nothing to check against
        mod = None
    for part in prefix.split(".")[1:]:
        mod = getattr(mod, part, None) if mod is not None else None
    _CUPY_NAMESPACES[prefix] = mod
    return mod


def _cupy_keywords(prefix, name):
    """The keyword names CuPy's ``prefix.name`` accepts, or None where that is unknown (no
    CuPy, a compiled function without a signature, or ``**kwargs``)."""
    mod = _cupy_namespace(prefix)
    func = getattr(mod, name, None) if mod is not None else None
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


class StrictNamespace:
    """``device.xp`` of a strict device: NumPy's names, on strict arrays only. Where CuPy is
    installed, only the names CuPy also has: an op using a NumPy function CuPy lacks fails
    here, not first on a GPU."""

    ndarray = StrictArray

    def __init__(self, device: "StrictDevice", module=np, prefix="xp"):
        self._device = device
        self._module = module
        self._prefix = prefix
        self.gradtape_device = device      # lets device-specific helpers (erf) find the device
        self.__name__ = f"gradtape.backend.strict.{prefix}"

    def __repr__(self):
        return f"<array namespace {self._prefix} of {self._device.name}>"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        obj = getattr(self._module, name)
        cupy_mod = _cupy_namespace(self._prefix)
        if cupy_mod is not None and name not in _NOT_CUPY_OK and not hasattr(cupy_mod, name):
            raise AttributeError(f"{self._prefix}.{name}: CuPy has no {name} in "
                                 f"{cupy_mod.__name__}, so an op using it would fail on a GPU")
        if self._prefix == "xp.random" and name == "RandomState":
            device = self._device
            value = lambda seed=None: _StrictRandomState(device, seed)  # noqa: E731
            setattr(self, name, value)
            return value
        if isinstance(obj, np.ufunc):
            value = _StrictUfunc(obj, self._device)
        elif isinstance(obj, types.ModuleType):
            value = StrictNamespace(self._device, obj, f"{self._prefix}.{name}")
        elif isinstance(obj, type) or not callable(obj):
            value = obj                        # dtypes, errstate, finfo, constants
        elif name in _UPLOADS:
            value = self._uploader(obj, name)
        else:
            value = self._function(obj, name)
        setattr(self, name, value)
        return value

    def _function(self, func, name):
        device = self._device
        accepts = _cupy_keywords(self._prefix, name)

        def call(*args, **kwargs):
            if accepts is not None and kwargs and not accepts.issuperset(kwargs):
                raise TypeError(f"{self._prefix}.{name}: CuPy's {name} takes no keyword "
                                f"{sorted(set(kwargs) - accepts)[0]!r}, so this call would "
                                f"fail on a GPU")
            return _call(func, name, device, args, kwargs)
        call.__name__ = name
        call.__doc__ = func.__doc__
        return call

    def _uploader(self, func, name):
        device = self._device

        def call(obj, *args, **kwargs):
            if type(obj) is StrictArray or type(obj) in (list, tuple) and any(
                    type(v) is StrictArray for v in obj):
                return _call(func, name, device, (obj,) + args, kwargs)
            if isinstance(obj, np.ndarray) and obj.ndim > 0 or type(obj) in (list, tuple):
                device.transfer_count += 1
            host = np.asarray(func(obj, *args, **kwargs))
            return StrictArray(np.array(host, copy=True) if host is obj else host, device)
        call.__name__ = name
        return call


class StrictDevice(Device):
    """``strict:N``: NumPy storage, CuPy's rules (see the module docstring).

    Counters: ``sync_count`` (downloads through :meth:`to_host` and data-dependent shapes),
    ``transfer_count`` (every explicit copy, either way), ``allocated_bytes`` and
    ``peak_bytes`` (live array storage owned by this device).
    """

    host_visible = False
    fused_updates = True

    def __init__(self, index: int = 0, switching: bool = False):
        super().__init__("strict", index)
        self.needs_switch = bool(switching)
        self._live = {}              # id(storage) -> number of StrictArrays holding it
        self.transfer_count = 0
        self.allocated_bytes = 0
        self.peak_bytes = 0
        self.xp = StrictNamespace(self)

    # --- bookkeeping ----------------------------------------------------------------------
    def _hold(self, storage):
        key = id(storage)
        n = self._live.get(key)
        if n is None:
            self._live[key] = 1
            self.allocated_bytes += storage.nbytes
            if self.allocated_bytes > self.peak_bytes:
                self.peak_bytes = self.allocated_bytes
        else:
            self._live[key] = n + 1

    def _release(self, storage):
        key = id(storage)
        n = self._live.get(key)
        if n is None:
            return
        if n == 1:
            del self._live[key]
            self.allocated_bytes -= storage.nbytes
        else:
            self._live[key] = n - 1

    def _implicit_sync(self):
        self.sync_count += 1

    def reset_counters(self):
        """Zero ``sync_count``, ``transfer_count`` and the peak (tests measure from here)."""
        self.sync_count = 0
        self.transfer_count = 0
        self.peak_bytes = self.allocated_bytes

    def activate(self):
        return _Activation(self) if self.needs_switch else Device.activate(self)

    # --- arrays ---------------------------------------------------------------------------
    def is_native(self, value) -> bool:
        return type(value) is StrictArray

    def asarray(self, value, dtype=None):
        """Upload a host value (or copy a strict array of another strict device)."""
        with self.activate():
            return self._asarray(value, dtype)

    def _asarray(self, value, dtype=None):
        if type(value) is StrictArray:
            if value._device is not self:
                self.transfer_count += 1
                value._device.transfer_count += 1
                arr = np.array(value._a, dtype=dtype, copy=True)
                return StrictArray(arr, self)
            if dtype is not None and value._a.dtype != np.dtype(dtype):
                return StrictArray(value._a.astype(dtype), self)
            return value
        if hasattr(value, "__cuda_array_interface__"):
            raise DeviceError(f"{self.name}: cannot place a GPU array here directly; copy it "
                              "to the host first")
        one = single_value(value, dtype)
        if one is not None:           # as the GPU: a fill kernel taking the number, no copy
            shape, scalar, dt = one
            return StrictArray(np.full(shape, scalar, dtype=dt), self)
        self.transfer_count += 1
        return StrictArray(native_order(np.array(value, dtype=dtype, copy=True)), self)

    def to_host(self, array) -> np.ndarray:
        """An explicit, counted copy to the host."""
        if type(array) is not StrictArray:
            raise HostLeakError(f"{self.name}: expected an array of this device, got "
                                f"{type(array).__name__}; an op returned a host value instead "
                                "of a device array")
        self.sync_count += 1
        self.transfer_count += 1
        return array._a.copy()

    def from_other(self, array, source: Device):
        if isinstance(source, StrictDevice):
            return self.asarray(array)
        return self.asarray(source.to_host(array))

    def copy(self, array):
        with self.activate():
            return StrictArray(array._a.copy(), self)

    def owns_memory(self, array) -> bool:
        # a view made through another StrictArray holds the NumPy array, not the wrapper
        inner = array._a
        return inner.base is None and sys.getrefcount(inner) <= _INNER_REFS

    def scatter_add(self, target, indices, values):
        unwrap = _Unwrapper(self, "scatter_add")
        raw_indices = unwrap(indices)
        if _has_bool_mask(raw_indices):
            self._implicit_sync()
        _check_scatter("add", unwrap(target))
        np.add.at(unwrap(target), raw_indices, unwrap(values))

    def erf(self, x):
        return StrictArray(np.asarray(Device.erf(self, x._a)), self)

    def erfc(self, x):
        return StrictArray(np.asarray(Device.erfc(self, x._a)), self)

    def memory_info(self) -> dict:
        return {"device": self.name, "used_bytes": self.allocated_bytes,
                "pool_bytes": self.allocated_bytes, "peak_bytes": self.peak_bytes}
