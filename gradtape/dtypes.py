"""Data types: TensorFlow's names over NumPy's dtypes."""
from __future__ import annotations

import numpy as np

__all__ = ["DType", "as_dtype", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
           "string"]


class DType:
    """A tensor element type (``gt.float32`` ...). Compares equal to NumPy dtypes and names.

    ``gt.string`` (TF's ``tf.string``) holds byte strings: its tensors keep a NumPy object
    array of ``bytes`` on the host."""

    __slots__ = ("np", "name")

    def __init__(self, np_dtype):
        self.np = np.dtype(np_dtype)
        self.name = "bool" if self.np == np.bool_ else (
            "string" if self.np.kind == "O" else self.np.name)

    @property
    def dtype(self):
        """The NumPy dtype (lets NumPy and CuPy accept a DType wherever a dtype goes)."""
        return self.np

    @property
    def as_numpy_dtype(self):
        return self.np.type

    @property
    def is_floating(self) -> bool:
        return self.np.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.np.kind == "c"

    @property
    def real_dtype(self) -> "DType":
        """The dtype of the real and imaginary parts (the dtype itself when real)."""
        return as_dtype(self.np.type(0).real.dtype) if self.is_complex else self

    @property
    def is_integer(self) -> bool:
        return self.np.kind in "iu"

    @property
    def is_bool(self) -> bool:
        return self.np.kind == "b"

    @property
    def is_numeric(self) -> bool:
        return self.np.kind in "biufc"

    @property
    def is_unsigned(self) -> bool:
        return self.np.kind == "u"

    @property
    def size(self) -> int:
        return 0 if self.np.kind == "O" else self.np.itemsize

    def _check_numeric(self, what):
        if self.np.kind == "O":
            raise TypeError(f"Cannot find {what} value of {self} with type {self}.")

    @property
    def min(self):
        self._check_numeric("minimum")
        return np.finfo(self.np).min if self.is_floating else (
            False if self.is_bool else np.iinfo(self.np).min)

    @property
    def max(self):
        self._check_numeric("maximum")
        return np.finfo(self.np).max if self.is_floating else (
            True if self.is_bool else np.iinfo(self.np).max)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self.np == other.np
        if isinstance(other, str) and other == "string":
            return self.np.kind == "O"
        try:
            return self.np == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.np)

    def __repr__(self):
        return f"gt.{self.name}"

    def __str__(self):
        return f"<dtype: '{self.name}'>"


float16 = DType(np.float16)
float32 = DType(np.float32)
float64 = DType(np.float64)
int8 = DType(np.int8)
int16 = DType(np.int16)
int32 = DType(np.int32)
int64 = DType(np.int64)
uint8 = DType(np.uint8)
uint16 = DType(np.uint16)
uint32 = DType(np.uint32)
uint64 = DType(np.uint64)
bool = DType(np.bool_)  # noqa: A001 - TensorFlow's name
complex64 = DType(np.complex64)
complex128 = DType(np.complex128)
string = DType(np.object_)
half = float16
double = float64

_BY_NP = {d.np: d for d in (float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
                            uint32, uint64, bool, complex64, complex128, string)}


def as_dtype(value) -> DType:
    """Convert a DType, NumPy dtype, type or name into a :class:`DType` (``"string"``, and
    NumPy's text and object dtypes, are ``gt.string``)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, np.dtype):
        found = _BY_NP.get(value)
        if found is not None:
            return found
        npd = value
    else:
        if value is None:
            raise TypeError("dtype must not be None")
        if isinstance(value, str):
            if value == "string":
                return string
            if value in ("str", "object", "bytes"):
                raise TypeError(f"cannot interpret {value!r} as a dtype (strings are "
                                "gt.string)")
        elif value is str or value is bytes or value is object:
            raise TypeError(f"cannot interpret {value!r} as a dtype (strings are gt.string)")
        try:
            npd = np.dtype(value)
        except TypeError as exc:
            raise TypeError(f"cannot interpret {value!r} as a dtype") from exc
    found = _BY_NP.get(npd)
    if found is None:
        if npd.kind in "USO":           # NumPy's text and object dtypes: TF's string
            return string
        found = DType(npd)
        _BY_NP[npd] = found
    return found


def np_dtype(value) -> np.dtype:
    """The NumPy dtype for a DType / dtype-like (None stays None)."""
    if value is None:
        return None
    if isinstance(value, DType):
        return value.np
    return as_dtype(value).np
