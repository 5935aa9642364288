"""Protocol-buffer wire format, written by hand: the ``tf.train`` example messages
(``Example``, ``Features``, ``Feature``, ``BytesList``, ``FloatList``, ``Int64List``,
``SequenceExample``, ``FeatureList``, ``FeatureLists``) and TensorFlow's ``TensorProto``.

The message classes behave as the protobuf classes TensorFlow generates for them: the same
constructor keywords (messages or dicts for message fields, iterables for repeated fields),
attribute access (``ex.features.feature["x"].int64_list.value``), maps that create an entry
when indexed, the ``kind`` oneof of ``Feature`` (setting one list clears the others),
presence that follows writes (reading a sub-message does not set it), ``SerializeToString``,
``FromString`` / ``ParseFromString`` / ``MergeFromString``, ``CopyFrom``, ``MergeFrom``,
``HasField``, ``WhichOneof``, ``ClearField``, ``Clear``, ``ByteSize``, ``__eq__`` and a
protobuf text-format ``__str__``. Repeated floats and int64s are written packed (as proto3
does) and read packed or not. Map entries are written, and printed, in sorted key order: the
bytes are those of TF's ``SerializeToString(deterministic=True)`` (TF's default order for a
map of several keys is its hash table's).
"""
from __future__ import annotations

import operator
import struct

import numpy as np

__all__ = ["DecodeError", "Example", "Features", "Feature", "BytesList", "FloatList",
           "Int64List", "SequenceExample", "FeatureList", "FeatureLists"]


class DecodeError(Exception):
    """Bytes that are not a serialized message of the expected type (protobuf's
    ``google.protobuf.message.DecodeError``)."""


# --- wire format -------------------------------------------------------------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def varint(n: int) -> bytes:
    """``n`` as a base-128 varint (negative numbers as their 64-bit two's complement)."""
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def field_bytes(number: int, value: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | _LEN) + varint(len(value)) + value


def field_varint(number: int, value: int) -> bytes:
    """A varint field, left out when zero (proto3)."""
    return varint(number << 3) + varint(value) if value else b""


def _read_varint(buf, pos: int, end: int):
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def fields(buf, start: int = 0, end: int = None):
    """Iterate ``(number, wire type, value)`` over a serialized message: the value is an
    int for varints and fixed-width fields, a ``(start, end)`` slice of ``buf`` for
    length-delimited ones. DecodeError for malformed input."""
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0")
        if wire == _VARINT:
            value, pos = _read_varint(buf, pos, end)
        elif wire == _LEN:
            n, pos = _read_varint(buf, pos, end)
            if pos + n > end:
                raise DecodeError("truncated length-delimited field")
            value = (pos, pos + n)
            pos += n
        elif wire == _I64:
            if pos + 8 > end:
                raise DecodeError("truncated fixed64")
            value = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wire == _I32:
            if pos + 4 > end:
                raise DecodeError("truncated fixed32")
            value = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise DecodeError(f"wire type {wire}")
        yield number, wire, value


def packed_varints(data: bytes) -> np.ndarray:
    """The varints of a packed field, as uint64 (vectorized: each value is the sum of its
    bytes' 7-bit groups shifted into place)."""
    b = np.frombuffer(data, np.uint8)
    if b.size == 0:
        return np.zeros(0, np.uint64)
    ends = np.flatnonzero(b < 0x80)
    if ends.size == 0 or ends[-1] != b.size - 1:
        raise DecodeError("truncated packed varint")
    starts = np.concatenate([[0], ends[:-1] + 1])
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise DecodeError("varint longer than 10 bytes")
    pos = np.arange(b.size) - np.repeat(starts, lengths)
    parts = (b & 0x7F).astype(np.uint64) << (7 * pos).astype(np.uint64)
    return np.bitwise_or.reduceat(parts, starts)


def _zigzag_none(v):
    return v


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


# --- text format -------------------------------------------------------------------------------

_ESCAPES = {0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def text_bytes(b: bytes) -> str:
    """Bytes quoted as protobuf's text format writes them (C escapes, octal for the rest)."""
    out = []
    for c in b:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append(f"\\{c:03o}")
    return '"' + "".join(out) + '"'


def text_float(v: float) -> str:
    """A float32 as protobuf prints it: the shortest of ``%.6g`` and ``%.9g`` that reads
    back to the same float32."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    s = "%.6g" % v
    if np.float32(float(s)) != np.float32(v):
        s = "%.9g" % v
    return s


# --- values ------------------------------------------------------------------------------------

def _check_int64(v, where):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"Field {where}: Expected an int, got a boolean.")
    v = operator.index(v)
    if not -(1 << 63) <= v < 1 << 63:
        raise ValueError(f"Value out of range: {v}")
    return v


def _check_float(v, where):
    if isinstance(v, (str, bytes)) or not isinstance(v, (int, float, np.number)) \
            or isinstance(v, complex):
        raise TypeError(f"must be real number, not {type(v).__name__}")
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def _check_bytes(v, where):
    if isinstance(v, bytes):
        return bytes(v)
    raise TypeError(f"expected bytes, {type(v).__name__} found")


_CHECKS = {"bytes": _check_bytes, "float": _check_float, "int64": _check_int64}


# --- containers --------------------------------------------------------------------------------

class RepeatedScalarContainer:
    """A repeated scalar field (protobuf's ``RepeatedScalarContainer``): a list whose
    writes check the element type and mark the owning message as set."""

    __slots__ = ("_items", "_kind", "_owner", "_where")

    def __init__(self, kind, owner, where):
        self._items = []
        self._kind = kind
        self._owner = owner
        self._where = where

    def _check(self, v):
        return _CHECKS[self._kind](v, self._where)

    def _changed(self):
        self._owner._modified()

    def append(self, value):
        self._items.append(self._check(value))
        self._changed()

    def extend(self, values):
        new = [self._check(v) for v in values]
        self._items.extend(new)
        self._changed()

    def insert(self, index, value):
        self._items.insert(index, self._check(value))
        self._changed()

    def pop(self, index=-1):
        v = self._items.pop(index)
        self._changed()
        return v

    def remove(self, value):
        self._items.remove(value)
        self._changed()

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            self._items[index] = [self._check(v) for v in value]
        else:
            self._items[index] = self._check(value)
        self._changed()

    def __delitem__(self, index):
        del self._items[index]
        self._changed()

    def __getitem__(self, index):
        return self._items[index]

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __eq__(self, other):
        if isinstance(other, RepeatedScalarContainer):
            return self._items == other._items
        try:
            return self._items == list(other)
        except TypeError:
            return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._items)


class RepeatedCompositeContainer:
    """A repeated message field (protobuf's ``RepeatedCompositeContainer``)."""

    __slots__ = ("_items", "_cls", "_owner")

    def __init__(self, cls, owner):
        self._items = []
        self._cls = cls
        self._owner = owner

    def add(self, **kwargs):
        msg = self._cls(**kwargs)
        msg._listener = self._owner
        self._items.append(msg)
        self._owner._modified()
        return msg

    def append(self, message):
        if not isinstance(message, self._cls):
            raise TypeError(f"Parameter to MergeFrom() must be instance of same class: "
                            f"expected {self._cls.__name__} got {type(message).__name__}.")
        self.add().CopyFrom(message)

    def extend(self, messages):
        for m in messages:
            if isinstance(m, dict):
                self.add(**m)
            else:
                self.append(m)

    def __delitem__(self, index):
        del self._items[index]
        self._owner._modified()

    def __getitem__(self, index):
        return self._items[index]

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __eq__(self, other):
        try:
            return list(self._items) == list(other)
        except TypeError:
            return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._items)


class MessageMap:
    """A ``map<string, Message>`` field (protobuf's ``MessageMap``): indexing a missing key
    adds an empty entry; entries cannot be assigned (``CopyFrom`` into them)."""

    __slots__ = ("_items", "_cls", "_owner")

    def __init__(self, cls, owner):
        self._items = {}
        self._cls = cls
        self._owner = owner

    @staticmethod
    def _key(key):
        if isinstance(key, bytes):
            try:
                return key.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{key!r} has type bytes, but isn't valid UTF-8 encoding. "
                                 "Non-UTF-8 strings must be converted to unicode objects "
                                 "before being added.") from None
        if not isinstance(key, str):
            raise TypeError("bad argument type for built-in operation")
        return key

    def __getitem__(self, key):
        key = self._key(key)
        msg = self._items.get(key)
        if msg is None:
            msg = self._items[key] = self._cls()
            msg._listener = self._owner
            self._owner._modified()
        return msg

    def get_or_create(self, key):
        return self[key]

    def __setitem__(self, key, value):
        raise ValueError("Message objects may not be assigned")

    def __delitem__(self, key):
        del self._items[self._key(key)]
        self._owner._modified()

    def get(self, key, default=None):
        return self._items.get(self._key(key), default)

    def __contains__(self, key):
        return self._key(key) in self._items

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()

    def clear(self):
        self._items.clear()
        self._owner._modified()

    def __eq__(self, other):
        if isinstance(other, MessageMap):
            return self._items == other._items
        try:
            return self._items == dict(other)
        except (TypeError, ValueError):
            return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._items)


# --- messages ------------------------------------------------------------------------------------

class _Field:
    __slots__ = ("name", "number", "kind", "cls")

    def __init__(self, name, number, kind, cls=None):
        self.name, self.number, self.kind, self.cls = name, number, kind, cls


def _field_property(f):
    def get(self):
        return self._get(f)

    def set_(self, value):
        if f.kind == "message":
            raise AttributeError(f'Assignment not allowed to message field "{f.name}" in '
                                 "protocol message object.")
        raise AttributeError(f'Assignment not allowed to map, or repeated field "{f.name}" '
                             "in protocol message object.")
    return property(get, set_)


class Message:
    """The base of the message classes (see the module docstring)."""

    __slots__ = ("_data", "_present", "_listener", "__weakref__")
    _FULL_NAME = ""
    _FIELDS: tuple = ()
    _ONEOFS: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._BY_NAME = {f.name: f for f in cls._FIELDS}
        cls._BY_NUMBER = {f.number: f for f in cls._FIELDS}
        cls._ONEOF_OF = {name: group for group, names in cls._ONEOFS.items()
                         for name in names}
        for f in cls._FIELDS:
            setattr(cls, f.name, _field_property(f))

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError("No positional arguments allowed")
        self._data = {}
        self._present = set()
        self._listener = None
        for name, value in kwargs.items():
            f = self._BY_NAME.get(name)
            if f is None:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" '
                                 "field.")
            if value is None:
                continue
            if f.kind == "message":
                child = self._get(f)
                if isinstance(value, dict):
                    child.MergeFrom(f.cls(**value))
                elif isinstance(value, f.cls):
                    child.MergeFrom(value)
                else:
                    raise TypeError(f"Parameter to initialize message field must be dict or "
                                    f"instance of same class: expected {f.cls.__name__} got "
                                    f"{type(value).__name__}.")
                self._set_present(name)
            elif f.kind == "map":
                m = self._get(f)
                for key, v in value.items():
                    entry = m[key]
                    entry.MergeFrom(f.cls(**v) if isinstance(v, dict) else v)
            elif f.kind == "messages":
                self._get(f).extend(value)
            else:
                self._get(f).extend(value)

    # --- fields and presence -------------------------------------------------------------
    def _get(self, f):
        v = self._data.get(f.name)
        if v is None:
            if f.kind == "message":
                v = f.cls()
                v._listener = (self, f.name)
            elif f.kind == "map":
                v = MessageMap(f.cls, self)
            elif f.kind == "messages":
                v = RepeatedCompositeContainer(f.cls, self)
            else:
                v = RepeatedScalarContainer(f.kind, self, f"{self._FULL_NAME}.{f.name}")
            self._data[f.name] = v
        return v

    def _set_present(self, name):
        group = self._ONEOF_OF.get(name)
        if group is not None:
            for other in self._ONEOFS[group]:
                if other != name:
                    self._present.discard(other)
                    self._data.pop(other, None)
        self._present.add(name)
        self._modified()

    def _modified(self):
        """A write below this message: mark it set in its parent, up the chain."""
        listener = self._listener
        if listener is None:
            return
        if isinstance(listener, tuple):
            parent, name = listener
            if name not in parent._present or parent._ONEOF_OF.get(name):
                if parent._data.get(name) is self:
                    parent._set_present(name)
                return
            parent._modified()
        else:
            listener._modified()

    def HasField(self, field_name):
        f = self._BY_NAME.get(field_name)
        if f is None:
            if field_name in self._ONEOFS:
                return self.WhichOneof(field_name) is not None
            raise ValueError(f'Protocol message {type(self).__name__} has no "{field_name}" '
                             "field.")
        if f.kind != "message":
            raise ValueError(f"Field {self._FULL_NAME}.{field_name} does not have presence.")
        return field_name in self._present

    def WhichOneof(self, oneof_group):
        names = self._ONEOFS.get(oneof_group)
        if names is None:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{oneof_group}" '
                             "field.")
        for n in names:
            if n in self._present:
                return n
        return None

    def ClearField(self, field_name):
        if field_name not in self._BY_NAME:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{field_name}" '
                             "field.")
        self._data.pop(field_name, None)
        self._present.discard(field_name)
        self._modified()

    def Clear(self):
        self._data.clear()
        self._present.clear()
        self._modified()

    def _set_fields(self):
        """``(field, value)`` of the fields with content, in field-number order."""
        out = []
        for f in self._FIELDS:
            v = self._data.get(f.name)
            if v is None:
                continue
            if f.kind == "message":
                if f.name in self._present:
                    out.append((f, v))
            elif len(v):
                out.append((f, v))
        return out

    def ListFields(self):
        return [(f.name, v) for f, v in self._set_fields()]

    def IsInitialized(self):
        return True

    # --- copying ---------------------------------------------------------------------------
    def MergeFrom(self, other):
        if not isinstance(other, type(self)):
            raise TypeError(f"Parameter to MergeFrom() must be instance of same class: "
                            f"expected {type(self).__name__} got {type(other).__name__}.")
        for f, v in other._set_fields():
            if f.kind == "message":
                self._get(f).MergeFrom(v)
                self._set_present(f.name)
            elif f.kind == "map":
                m = self._get(f)
                for key, entry in v.items():
                    m[key].MergeFrom(entry)
            elif f.kind == "messages":
                self._get(f).extend(list(v))
            else:
                self._get(f).extend(list(v))
        if other._set_fields() == [] and self._listener is not None:
            self._modified()

    def CopyFrom(self, other):
        if other is self:
            return
        if not isinstance(other, type(self)):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: "
                            f"expected {type(self).__name__} got {type(other).__name__}.")
        self._data.clear()
        self._present.clear()
        self.MergeFrom(other)
        self._modified()

    def __copy__(self):
        out = type(self)()
        out.MergeFrom(self)
        return out

    def __deepcopy__(self, memo=None):
        return self.__copy__()

    def __reduce__(self):
        return type(self).FromString, (self.SerializeToString(),)

    # --- wire format -----------------------------------------------------------------------
    def SerializeToString(self, deterministic=None):
        """The serialized message (map entries in key order)."""
        out = []
        for f, v in self._set_fields():
            if f.kind == "message":
                out.append(field_bytes(f.number, v.SerializeToString()))
            elif f.kind == "map":
                for key in sorted(v.keys()):
                    entry = (field_bytes(1, key.encode("utf-8"))
                             + field_bytes(2, v._items[key].SerializeToString()))
                    out.append(field_bytes(f.number, entry))
            elif f.kind == "messages":
                out.extend(field_bytes(f.number, m.SerializeToString()) for m in v)
            elif f.kind == "bytes":
                out.extend(field_bytes(f.number, b) for b in v._items)
            elif f.kind == "float":
                out.append(field_bytes(f.number, np.asarray(v._items, "<f4").tobytes()))
            else:
                out.append(field_bytes(f.number, b"".join(varint(i) for i in v._items)))
        return b"".join(out)

    SerializePartialToString = SerializeToString

    def ByteSize(self):
        return len(self.SerializeToString())

    def MergeFromString(self, serialized):
        """Merge a serialized message into this one; returns the number of bytes read."""
        data = bytes(serialized)
        try:
            self._merge(data, 0, len(data))
        except DecodeError:
            raise DecodeError(f"Error parsing message with type '{self._FULL_NAME}': Wire "
                              "format was corrupt") from None
        return len(data)

    def ParseFromString(self, serialized):
        """Replace this message by the serialized one; returns the number of bytes read."""
        self._data.clear()
        self._present.clear()
        n = self.MergeFromString(serialized)
        self._modified()
        return n

    @classmethod
    def FromString(cls, s):
        msg = cls()
        msg.MergeFromString(s)
        return msg

    def _merge(self, buf, start, end):
        for number, wire, value in fields(buf, start, end):
            f = self._BY_NUMBER.get(number)
            if f is None:
                continue                      # unknown fields are skipped
            kind = f.kind
            if kind in ("message", "map", "messages", "bytes"):
                if wire != _LEN:
                    raise DecodeError("wrong wire type")
                a, b = value
                if kind == "message":
                    self._get(f)._merge(buf, a, b)
                    self._set_present(f.name)
                elif kind == "messages":
                    self._get(f).add()._merge(buf, a, b)
                elif kind == "bytes":
                    self._get(f)._items.append(buf[a:b])
                else:
                    key, entry = "", f.cls()
                    for n2, w2, v2 in fields(buf, a, b):
                        if n2 == 1 and w2 == _LEN:
                            try:
                                key = buf[v2[0]:v2[1]].decode("utf-8")
                            except UnicodeDecodeError:
                                raise DecodeError("map key is not UTF-8") from None
                        elif n2 == 2 and w2 == _LEN:
                            entry._merge(buf, v2[0], v2[1])
                    target = self._get(f)[key]
                    target.Clear()
                    target.MergeFrom(entry)
            elif kind == "float":
                items = self._get(f)._items
                if wire == _LEN:
                    a, b = value
                    if (b - a) % 4:
                        raise DecodeError("packed floats of a bad length")
                    items.extend(np.frombuffer(buf[a:b], "<f4").astype(float).tolist())
                elif wire == _I32:
                    items.append(struct.unpack("<f", value.to_bytes(4, "little"))[0])
                else:
                    raise DecodeError("wrong wire type")
            else:
                items = self._get(f)._items
                if wire == _LEN:
                    a, b = value
                    items.extend(packed_varints(buf[a:b]).view(np.int64).tolist())
                elif wire == _VARINT:
                    items.append(_signed64(value))
                else:
                    raise DecodeError("wrong wire type")
            self._modified()

    # --- comparison and printing -------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented if not isinstance(other, (list, dict)) else False
        if type(other) is not type(self):
            return False
        return self.SerializeToString() == other.SerializeToString()

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def _text(self, indent, lines):
        pad = "  " * indent
        for f, v in self._set_fields():
            if f.kind == "message":
                lines.append(f"{pad}{f.name} {{")
                v._text(indent + 1, lines)
                lines.append(f"{pad}}}")
            elif f.kind == "messages":
                for m in v:
                    lines.append(f"{pad}{f.name} {{")
                    m._text(indent + 1, lines)
                    lines.append(f"{pad}}}")
            elif f.kind == "map":
                for key in sorted(v.keys()):
                    lines.append(f"{pad}{f.name} {{")
                    lines.append(f"{pad}  key: {text_bytes(key.encode('utf-8'))}")
                    lines.append(f"{pad}  value {{")
                    v._items[key]._text(indent + 2, lines)
                    lines.append(f"{pad}  }}")
                    lines.append(f"{pad}}}")
            else:
                fmt = {"bytes": text_bytes, "float": text_float, "int64": str}[f.kind]
                lines.extend(f"{pad}{f.name}: {fmt(x)}" for x in v._items)

    def __str__(self):
        lines = []
        self._text(0, lines)
        return "".join(line + "\n" for line in lines)

    __repr__ = __str__


class BytesList(Message):
    """``tf.train.BytesList``: ``repeated bytes value = 1``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.BytesList"
    _FIELDS = (_Field("value", 1, "bytes"),)


class FloatList(Message):
    """``tf.train.FloatList``: ``repeated float value = 1 [packed]`` (values are float32)."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.FloatList"
    _FIELDS = (_Field("value", 1, "float"),)


class Int64List(Message):
    """``tf.train.Int64List``: ``repeated int64 value = 1 [packed]``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.Int64List"
    _FIELDS = (_Field("value", 1, "int64"),)


class Feature(Message):
    """``tf.train.Feature``: one of ``bytes_list``, ``float_list``, ``int64_list``
    (the ``kind`` oneof)."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.Feature"
    _FIELDS = (_Field("bytes_list", 1, "message", BytesList),
               _Field("float_list", 2, "message", FloatList),
               _Field("int64_list", 3, "message", Int64List))
    _ONEOFS = {"kind": ("bytes_list", "float_list", "int64_list")}


class Features(Message):
    """``tf.train.Features``: ``map<string, Feature> feature = 1``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.Features"
    _FIELDS = (_Field("feature", 1, "map", Feature),)


class FeatureList(Message):
    """``tf.train.FeatureList``: ``repeated Feature feature = 1``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.FeatureList"
    _FIELDS = (_Field("feature", 1, "messages", Feature),)


class FeatureLists(Message):
    """``tf.train.FeatureLists``: ``map<string, FeatureList> feature_list = 1``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.FeatureLists"
    _FIELDS = (_Field("feature_list", 1, "map", FeatureList),)


class Example(Message):
    """``tf.train.Example``: ``Features features = 1``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.Example"
    _FIELDS = (_Field("features", 1, "message", Features),)


class SequenceExample(Message):
    """``tf.train.SequenceExample``: ``Features context = 1``, ``FeatureLists
    feature_lists = 2``."""
    __slots__ = ()
    _FULL_NAME = "tensorflow.SequenceExample"
    _FIELDS = (_Field("context", 1, "message", Features),
               _Field("feature_lists", 2, "message", FeatureLists))


# --- TensorProto ---------------------------------------------------------------------------------

# TensorFlow's DataType enum, by NumPy dtype name
DT_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
           "object": 7, "complex64": 8, "int64": 9, "bool": 10, "uint16": 17,
           "complex128": 18, "float16": 19, "uint32": 22, "uint64": 23}
DT_NAME = {1: "float", 2: "double", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
           7: "string", 8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16",
           17: "uint16", 18: "complex128", 19: "half", 20: "resource", 21: "variant",
           22: "uint32", 23: "uint64"}
NP_OF_ENUM = {v: k for k, v in DT_ENUM.items()}

# the typed value fields of TensorProto: number -> (wire dtype of the packed values, dtypes)
_VAL_FIELDS = {5: "<f4", 6: "<f8", 7: "varint", 9: "<f4", 10: "varint", 11: "varint",
               12: "<f8", 13: "varint", 16: "varint", 17: "varint"}


def encode_tensor_proto(array: np.ndarray) -> bytes:
    """A serialized ``TensorProto`` as ``tf.io.serialize_tensor`` writes it: ``dtype``,
    ``tensor_shape`` (always present), then ``tensor_content`` (little-endian bytes, left
    out when empty) for numbers or one ``string_val`` per element for strings."""
    kind = "object" if array.dtype.kind in "OSU" else array.dtype.name
    enum = DT_ENUM[kind]
    shape = b"".join(field_bytes(2, field_varint(1, int(d))) for d in array.shape)
    head = field_varint(1, enum) + field_bytes(2, shape)
    if enum == 7:
        return head + b"".join(field_bytes(8, bytes(s)) for s in array.reshape(-1))
    content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    return head + (field_bytes(4, content) if content else b"")


def decode_tensor_proto(data: bytes):
    """``(dtype enum, NumPy array)`` of a serialized ``TensorProto``: ``tensor_content``,
    or the typed value fields (fewer values than elements repeat the last one, none give
    zeros), as TF's ``Tensor::FromProto``. ValueError for a proto TF would not accept."""
    enum, dims, content, strings, vals = 0, [], None, [], {}
    for number, wire, value in fields(data):
        if number == 1 and wire == _VARINT:
            enum = value
        elif number == 2 and wire == _LEN:
            for n2, w2, v2 in fields(data, *value):
                if n2 == 2 and w2 == _LEN:
                    size = 0
                    for n3, w3, v3 in fields(data, *v2):
                        if n3 == 1 and w3 == _VARINT:
                            size = _signed64(v3)
                    dims.append(size)
        elif number == 4 and wire == _LEN:
            content = data[value[0]:value[1]]
        elif number == 8 and wire == _LEN:
            strings.append(data[value[0]:value[1]])
        elif number in _VAL_FIELDS:
            fmt = _VAL_FIELDS[number]
            got = vals.setdefault(number, [])
            if wire == _LEN:
                raw = data[value[0]:value[1]]
                if fmt == "varint":
                    got.extend(packed_varints(raw).tolist())
                else:
                    got.extend(np.frombuffer(raw, fmt).tolist())
            elif fmt == "varint" and wire == _VARINT:
                got.append(value)
            elif fmt != "varint" and wire in (_I32, _I64):
                width = 4 if fmt == "<f4" else 8
                got.append(np.frombuffer(value.to_bytes(width, "little"), fmt)[0].item())
    if enum not in NP_OF_ENUM:
        raise ValueError(f"unsupported dtype enum {enum}")
    if any(d < 0 for d in dims):
        raise ValueError("negative dimension")
    np_name = NP_OF_ENUM[enum]
    n = int(np.prod(dims, dtype=np.int64))
    if enum == 7:
        out = np.empty(n, dtype=object)
        if strings:
            got = strings[:n] + [strings[-1]] * max(0, n - len(strings))
            out[:] = got
        else:
            out[:] = [b""] * n
        return enum, out.reshape(dims)
    dt = np.dtype(np_name)
    if content is not None:
        if len(content) != n * dt.itemsize:
            raise ValueError("tensor_content has the wrong size")
        return enum, np.frombuffer(content, dt.newbyteorder("<")).astype(dt).reshape(dims)
    source = {1: 5, 2: 6, 8: 9, 18: 12, 9: 10, 10: 11, 19: 13, 22: 16, 23: 17}.get(enum, 7)
    raw = vals.get(source, [])
    if enum in (8, 18):
        pairs = np.asarray(raw, np.float64).reshape(-1, 2) if raw else np.zeros((0, 2))
        flat = (pairs[:, 0] + 1j * pairs[:, 1]).astype(dt)
    elif enum == 19:
        flat = np.asarray([r & 0xFFFF for r in raw], np.uint16).view(np.float16)
    elif dt.kind in "iu":
        width = dt.itemsize * 8
        flat = np.asarray([r & ((1 << width) - 1) for r in raw], np.uint64)
        flat = flat.astype(np.dtype(f"u{dt.itemsize}")).view(dt)
    else:
        flat = np.asarray(raw, dtype=np.float64 if dt.kind == "f" else None).astype(dt)
    out = np.zeros(n, dt)
    if flat.size:
        k = min(n, flat.size)
        out[:k] = flat[:k]
        out[k:] = flat[k - 1] if k else 0
    return enum, out.reshape(dims)
