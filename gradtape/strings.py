"""String ops (``gt.strings``), as TensorFlow's ``tf.strings``.

String tensors (dtype ``gt.string``) hold ``bytes`` on the host; these ops run there, on
NumPy object arrays, as TF runs its string kernels on the CPU. String results are CPU
tensors; numeric results (``length``, ``to_number``, ``to_hash_bucket_fast`` ...) land on
the current device. Ops that TF defines on ragged tensors accept ``gt.RaggedTensor`` too
(elementwise ones apply to its flat values). Nothing here is differentiable.

``regex_replace`` and ``regex_full_match`` take RE2 patterns, run by Python's ``re`` after a
translation: ``\\pL``, ``\\p{P}``, ``\\PN`` ... (Unicode general categories), the POSIX classes
``[[:alpha:]]`` ..., ASCII-only ``\\w``, ``\\d``, ``\\s``, ``\\b`` (as RE2), ``\\z``; rewrites use
RE2's ``\\0`` ... ``\\9``. Unicode scripts (``\\p{Greek}``) are not supported.
"""
from __future__ import annotations

import builtins
import codecs
import functools
import re
import unicodedata

import numpy as np

from .backend import CPU, current_device
from .dtypes import as_dtype
from .ragged import RaggedTensor
from .registry import InvalidArgumentError
from .tensor import Tensor, _string_array, convert_to_tensor

__all__ = ["lower", "upper", "strip", "length", "substr", "join", "reduce_join",
           "regex_replace", "regex_full_match", "split", "unicode_split", "unicode_decode",
           "unicode_encode", "unicode_transcode", "to_number", "as_string", "format",
           "bytes_split", "ngrams", "to_hash_bucket_fast"]


# --- tensors in and out -------------------------------------------------------------------

def _string_tensor(x, who) -> Tensor:
    """``x`` as a ``gt.string`` tensor, or InvalidArgumentError naming the op."""
    if isinstance(x, Tensor):
        if x._value.dtype.kind != "O":
            raise InvalidArgumentError(f"{who}: expected a string tensor, got a "
                                       f"{as_dtype(x._value.dtype).name} tensor")
        return x
    try:
        return Tensor(_string_array(x), CPU)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{who}: expected strings, got {x!r:.100} ({exc})") from None


def _text_host(x, who) -> np.ndarray:
    return _string_tensor(x, who)._value


def _strings_out(host: np.ndarray) -> Tensor:
    """A string tensor of the object array ``host``."""
    if host.dtype != object:
        host = host.astype(object)
    return Tensor(host, CPU)


def _numeric_out(host: np.ndarray) -> Tensor:
    """A numeric result, on the current device."""
    dev = current_device()
    return Tensor(host if dev is CPU else dev.asarray(host), dev)


def _map_bytes(fn, host: np.ndarray, dtype=object) -> np.ndarray:
    """``fn`` applied to each element of the object array ``host``."""
    items = host.reshape(-1).tolist()
    if dtype is object:
        out = np.empty(len(items), dtype=object)
        out[:] = [fn(v) for v in items]
    else:
        out = np.fromiter((fn(v) for v in items), dtype=dtype, count=len(items))
    return out.reshape(host.shape)


def _elementwise(x, who, fn, dtype=object):
    """``fn`` (bytes -> bytes, or -> a number of ``dtype``) on each string of ``x``; a
    RaggedTensor keeps its rows."""
    if isinstance(x, RaggedTensor):
        return x.with_flat_values(_elementwise(x.flat_values, who, fn, dtype))
    host = _text_host(x, who)
    out = _map_bytes(fn, host, dtype)
    return _strings_out(out) if dtype is object else _numeric_out(out)


def _as_bytes(v, who, what) -> bytes:
    if isinstance(v, Tensor):
        if v._value.dtype.kind != "O" or v._value.ndim:
            raise InvalidArgumentError(f"{who}: {what} must be a scalar string, got "
                                       f"{v!r:.100}")
        v = v.numpy()
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, bytes):
        return bytes(v)
    raise TypeError(f"{who}: {what} must be a string, got {v!r:.100}")


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


# --- case, whitespace, length ---------------------------------------------------------------

def _check_encoding(encoding, who):
    enc = (encoding or "").lower().replace("-", "").replace("_", "")
    if enc not in ("", "utf8"):
        raise InvalidArgumentError(f"{who}: encoding must be '' or 'utf-8', got "
                                   f"{encoding!r}")
    return enc


def lower(input, encoding="", name=None):
    """Lowercase: ASCII letters only, or every Unicode letter with ``encoding="utf-8"``."""
    if _check_encoding(encoding, "lower"):
        return _elementwise(input, "lower",
                            lambda b: b.decode("utf-8", "replace").lower().encode("utf-8"))
    return _elementwise(input, "lower", bytes.lower)


def upper(input, encoding="", name=None):
    """Uppercase: ASCII letters only, or every Unicode letter with ``encoding="utf-8"``."""
    if _check_encoding(encoding, "upper"):
        return _elementwise(input, "upper",
                            lambda b: b.decode("utf-8", "replace").upper().encode("utf-8"))
    return _elementwise(input, "upper", bytes.upper)


def strip(input, name=None):
    """Leading and trailing ASCII whitespace removed."""
    return _elementwise(input, "strip", bytes.strip)


_CONTINUATION = bytes(range(0x80, 0xC0))


def _utf8_len(b: bytes) -> int:
    """Characters in UTF-8 text: the bytes that do not continue a character."""
    return len(b.translate(None, _CONTINUATION))


def _check_unit(unit, who):
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"{who}: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return unit


def length(input, unit="BYTE", name=None):
    """The length of each string (int32): in bytes, or in characters with
    ``unit="UTF8_CHAR"``."""
    fn = len if _check_unit(unit, "length") == "BYTE" else _utf8_len
    return _elementwise(input, "length", fn, np.int32)


def _utf8_starts(b: bytes) -> list:
    """The byte offset of each character of UTF-8 text, then its length."""
    starts = [i for i, c in enumerate(b) if c & 0xC0 != 0x80]
    return starts + [len(b)]


def substr(input, pos, len, unit="BYTE", name=None):
    """``len`` bytes (characters with ``unit="UTF8_CHAR"``) from ``pos`` of each string
    (negative ``pos`` counts from the end; past the end: as many as there are).
    ``pos`` and ``len`` are scalars or broadcast with the strings. A ``pos`` beyond the
    string raises InvalidArgumentError, as TF."""
    who = "substr"
    _check_unit(unit, who)
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(substr(input.flat_values, pos, len, unit))
    host = _text_host(input, who)
    p = np.asarray(pos.numpy() if isinstance(pos, Tensor) else pos)
    n = np.asarray(len.numpy() if isinstance(len, Tensor) else len)
    if p.dtype.kind not in "iu" or n.dtype.kind not in "iu":
        raise TypeError(f"{who}: pos and len must be integers, got {p.dtype} and {n.dtype}")
    try:
        shape = np.broadcast_shapes(host.shape, p.shape, n.shape)
    except ValueError:
        raise InvalidArgumentError(f"{who}: pos {p.shape} and len {n.shape} do not "
                                   f"broadcast with the strings {host.shape}") from None
    strs = np.broadcast_to(host, shape).reshape(-1).tolist()
    ps = np.broadcast_to(p, shape).reshape(-1).tolist()
    ns = np.broadcast_to(n, shape).reshape(-1).tolist()
    out = np.empty(builtins.len(strs), dtype=object)
    for i, (s, a, k) in enumerate(zip(strs, ps, ns)):
        if unit == "BYTE":
            size = builtins.len(s)
            starts = None
        else:
            starts = _utf8_starts(s)
            size = builtins.len(starts) - 1
        if abs(a) > size:
            raise InvalidArgumentError(f"{who}: pos {a} out of range for string {s!r} at "
                                       f"index {i}")
        if a < 0:
            a += size
        stop = size if k < 0 else min(a + k, size)
        out[i] = s[a:stop] if starts is None else s[starts[a]:starts[stop]]
    return _strings_out(out.reshape(shape))


# --- joining ----------------------------------------------------------------------------------

def join(inputs, separator="", name=None):
    """The strings of ``inputs`` (a list of tensors of one shape, or scalars that
    broadcast) joined elementwise with ``separator``."""
    who = "join"
    sep = _as_bytes(separator, who, "separator")
    if isinstance(inputs, (Tensor, str, bytes)):
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs:
        raise ValueError(f"{who}: needs at least one input")
    ragged = [x for x in inputs if isinstance(x, RaggedTensor)]
    if ragged:
        from .ragged import map_flat_values
        return map_flat_values(lambda *xs: join(list(xs), separator), *inputs)
    hosts = [_text_host(x, who) for x in inputs]
    try:
        shape = np.broadcast_shapes(*[h.shape for h in hosts])
    except ValueError:
        raise InvalidArgumentError(f"{who}: inputs of shapes "
                                   f"{[h.shape for h in hosts]} do not match") from None
    cols = [np.broadcast_to(h, shape).reshape(-1).tolist() for h in hosts]
    out = np.empty(len(cols[0]), dtype=object)
    out[:] = [sep.join(parts) for parts in zip(*cols)]
    return _strings_out(out.reshape(shape))


def _norm_axes(axis, ndim, who):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    axes = [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(f"{who}: axis {a} is out of range for a tensor of "
                                       f"rank {ndim}")
        out.append(a % ndim)
    return tuple(sorted(set(out)))


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings joined (with ``separator``) along ``axis`` (every axis when None);
    ``keepdims`` keeps the joined axes with size 1. A RaggedTensor joins along its rows
    (``axis=-1``), across them (``axis=0``), or entirely."""
    who = "reduce_join"
    sep = _as_bytes(separator, who, "separator")
    if isinstance(inputs, RaggedTensor):
        return _reduce_join_ragged(inputs, axis, keepdims, sep, separator)
    host = _text_host(inputs, who)
    axes = _norm_axes(axis, host.ndim, who)
    keep = [d for d in range(host.ndim) if d not in axes]
    moved = np.transpose(host, keep + list(axes))
    out_shape = tuple(host.shape[d] for d in keep)
    width = int(np.prod([host.shape[d] for d in axes], dtype=np.int64))
    rows = moved.reshape(-1, width).tolist() if width else \
        [[] for _ in range(int(np.prod(out_shape, dtype=np.int64)))]
    out = np.empty(len(rows), dtype=object)
    out[:] = [sep.join(r) for r in rows]
    out = out.reshape(out_shape)
    if keepdims:
        out = out.reshape(tuple(1 if d in axes else host.shape[d] for d in range(host.ndim)))
    return _strings_out(out)


def _reduce_join_ragged(rt, axis, keepdims, sep, separator):
    who = "reduce_join"
    ndim = rt.ndim
    if axis is None:
        return reduce_join(rt.flat_values, None, keepdims, separator)
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise ValueError(f"{who}: a ragged tensor joins along one axis at a time")
        axis = axis[0]
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"{who}: axis {axis} is out of range for rank {ndim}")
    axis %= ndim
    if keepdims:
        raise ValueError(f"{who}: keepdims is not supported for ragged tensors")
    if axis >= 2:
        return rt.with_values(reduce_join(rt.values, axis - 1, False, separator))
    s = rt._row_splits
    if isinstance(rt.values, RaggedTensor):
        if axis == 1:                       # across each row's sub-rows
            rows = [reduce_join(rt.values[int(s[i]):int(s[i + 1])], 0, False, separator)
                    for i in range(rt.nrows_host())]
            from .ragged import _concat_rows
            return _concat_rows(rows, rt)
        raise ValueError(f"{who}: axis 0 of a ragged tensor of ragged rank > 1 is not "
                         "supported")
    vals = rt.values._value
    if axis == 1:
        out = np.empty(rt.nrows_host(), dtype=object)
        if vals.ndim == 1:
            items = vals.tolist()
            out[:] = [sep.join(items[s[i]:s[i + 1]]) for i in range(rt.nrows_host())]
            return _strings_out(out)
        parts = [reduce_join(Tensor(vals[s[i]:s[i + 1]], CPU), 0, False, separator)._value
                 for i in range(rt.nrows_host())]
        return _strings_out(np.stack(parts) if parts else np.empty((0,) + vals.shape[2:],
                                                                  object))
    # axis 0: the j-th values of the rows that have one, joined in row order
    lens = np.diff(s)
    longest = int(lens.max()) if lens.size else 0
    cols = [[] for _ in range(longest)]
    items = vals.reshape(vals.shape[0], -1).tolist() if vals.ndim > 1 else vals.tolist()
    for i in range(rt.nrows_host()):
        for j in range(int(lens[i])):
            cols[j].append(items[s[i] + j])
    if vals.ndim == 1:
        out = np.empty(longest, dtype=object)
        out[:] = [sep.join(c) for c in cols]
        return _strings_out(out)
    out = np.empty((longest,) + vals.shape[1:], dtype=object).reshape(longest, -1)
    for j, c in enumerate(cols):
        out[j] = [sep.join(parts) for parts in zip(*c)]
    return _strings_out(out.reshape((longest,) + vals.shape[1:]))


# --- regular expressions ----------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _category_ranges() -> dict:
    """Each Unicode general category (``"Lu"`` ...) as a character-class body of ranges."""
    spans: dict = {}
    prev_cat, start = None, 0
    for cp in range(0x110001):
        cat = unicodedata.category(chr(cp)) if cp < 0x110000 else None
        if cat != prev_cat:
            if prev_cat is not None and prev_cat != "Cs":
                spans.setdefault(prev_cat, []).append((start, cp - 1))
            prev_cat, start = cat, cp
    return spans


def _class_body(name: str, who) -> str:
    """The character-class body (no brackets) of the Unicode property ``name``."""
    spans = _category_ranges()
    if name in ("Any",):
        cats = list(spans)
    elif len(name) == 1:
        cats = [c for c in spans if c[0] == name]
    else:
        cats = [name] if name in spans else []
    if not cats:
        raise InvalidArgumentError(f"{who}: the Unicode class \\p{{{name}}} is not supported "
                                   "(only general categories such as L, Lu, N, P, S, Z)")
    ranges = sorted(r for c in cats for r in spans[c])
    parts = []
    for a, b in ranges:
        parts.append(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}")
    return "".join(parts)


_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9a-zA-Z", "upper": "A-Z", "lower": "a-z",
    "space": "\\t\\n\\v\\f\\r ", "blank": "\\t ", "punct": re.escape(
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~").replace("-", "\\-"),
    "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f", "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~", "graph": "!-~", "ascii": "\\x00-\\x7f",
}


@functools.lru_cache(maxsize=256)
def _compile(pattern: str, who: str):
    """An RE2 pattern as a compiled Python regular expression."""
    out = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            d = pattern[i + 1]
            if d in "pP":
                if i + 2 < n and pattern[i + 2] == "{":
                    end = pattern.find("}", i + 3)
                    if end < 0:
                        raise InvalidArgumentError(f"{who}: invalid pattern {pattern!r}")
                    name = pattern[i + 3:end]
                    i = end + 1
                else:
                    name = pattern[i + 2:i + 3]
                    i += 3
                negate = d == "P"
                if name.startswith("^"):
                    negate, name = not negate, name[1:]
                body = _class_body(name, who)
                if in_class:
                    if negate:
                        raise InvalidArgumentError(f"{who}: \\P{{{name}}} inside a character "
                                                   "class is not supported")
                    out.append(body)
                else:
                    out.append(f"[{'^' if negate else ''}{body}]")
                continue
            if d == "z":
                out.append("\\Z")
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2:end] if end > 0 else ""
                negate = name.startswith("^")
                if negate:
                    name = name[1:]
                if name in _POSIX and not negate:
                    out.append(_POSIX[name])
                    i = end + 2
                    continue
                raise InvalidArgumentError(f"{who}: unsupported class [:{name}:] in "
                                           f"{pattern!r}")
            if c == "[":
                out.append("\\[")
                i += 1
                continue
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
        elif c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                if i < n and pattern[i] == "]":
                    out.append("\\]")
                    i += 1
                continue
            out.append("[")
            i += 1
            if i < n and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        out.append(c)
        i += 1
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error as exc:
        raise InvalidArgumentError(f"{who}: invalid pattern {pattern!r} ({exc})") from None


@functools.lru_cache(maxsize=256)
def _rewrite(rewrite: str, who: str):
    """RE2's rewrite string (``\\0`` ... ``\\9`` for the groups, ``\\\\`` for a backslash)
    as a function of a match."""
    parts = []
    i, n = 0, len(rewrite)
    text = []
    while i < n:
        c = rewrite[i]
        if c == "\\":
            if i + 1 < n and rewrite[i + 1].isdigit():
                if text:
                    parts.append("".join(text))
                    text = []
                parts.append(int(rewrite[i + 1]))
                i += 2
                continue
            if i + 1 < n and rewrite[i + 1] == "\\":
                text.append("\\")
                i += 2
                continue
            raise InvalidArgumentError(f"{who}: invalid rewrite pattern {rewrite!r}")
        text.append(c)
        i += 1
    if text:
        parts.append("".join(text))
    if len(parts) == 1 and isinstance(parts[0], str):
        const = parts[0]
        return lambda m: const
    if not parts:
        return lambda m: ""

    def fn(m):
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)
    return fn


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    """Each match of the RE2 ``pattern`` replaced by ``rewrite`` (every match, or the
    first with ``replace_global=False``); ``\\1`` in ``rewrite`` is the first group,
    ``\\0`` the whole match."""
    who = "regex_replace"
    rx = _compile(_decode(_as_bytes(pattern, who, "pattern")), who)
    rw = _rewrite(_decode(_as_bytes(rewrite, who, "rewrite")), who)
    count = 0 if replace_global else 1
    return _elementwise(input, who, lambda b: _encode(rx.sub(rw, _decode(b), count=count)))


def regex_full_match(input, pattern, name=None):
    """Whether each whole string matches the RE2 ``pattern`` (bool)."""
    who = "regex_full_match"
    rx = _compile(_decode(_as_bytes(pattern, who, "pattern")), who)
    return _elementwise(input, who, lambda b: rx.fullmatch(_decode(b)) is not None, np.bool_)


# --- splitting --------------------------------------------------------------------------------

def _split_rows(x, who, fn, out_dtype=object):
    """TF's splitting structure: ``fn`` (bytes -> list of parts) on each string; a scalar
    gives a dense 1-D result, a rank-1 tensor a RaggedTensor, higher ranks and ragged
    inputs one more ragged axis."""
    if isinstance(x, RaggedTensor):
        return x.with_flat_values(_split_rows(x.flat_values, who, fn, out_dtype))
    host = _text_host(x, who)
    if host.ndim == 0:
        parts = fn(host[()])
        return _parts_out(parts, out_dtype)
    if host.ndim > 1:
        rt = RaggedTensor.from_tensor(Tensor(host, CPU))
        return _split_rows(rt, who, fn, out_dtype)
    rows = [fn(v) for v in host.tolist()]
    lengths = [len(r) for r in rows]
    flat = [p for r in rows for p in r]
    return RaggedTensor.from_row_lengths(_parts_out(flat, out_dtype), lengths,
                                         validate=False)


def _parts_out(parts, out_dtype) -> Tensor:
    if out_dtype is object:
        out = np.empty(len(parts), dtype=object)
        out[:] = parts
        return _strings_out(out)
    return _numeric_out(np.asarray(parts, dtype=out_dtype).reshape(-1))


def split(input, sep=None, maxsplit=-1, name=None):
    """Each string split at ``sep`` (runs of ASCII whitespace when None or empty, with no
    empty parts), at most ``maxsplit`` times when positive: a RaggedTensor with one more
    axis (a 1-D tensor for a scalar)."""
    who = "split"
    s = None if sep is None else _as_bytes(sep, who, "sep")
    if s == b"":
        s = None
    m = -1 if maxsplit is None or maxsplit <= 0 else int(maxsplit)
    return _split_rows(input, who, lambda b: b.split(s, m))


def bytes_split(input, name=None):
    """Each string split into its bytes (a RaggedTensor; a 1-D tensor for a scalar)."""
    return _split_rows(input, "bytes_split", lambda b: [b[i:i + 1] for i in
                                                       range(len(b))])


def _check_input_encoding(enc, who):
    e = str(enc).upper().replace("_", "-")
    if e not in ("UTF-8", "UTF8"):
        raise InvalidArgumentError(f"{who}: only the UTF-8 encoding is supported, got "
                                   f"{enc!r}")


def _decoder(errors, replacement_char, who):
    """bytes -> str for UTF-8 text, with TF's error modes: each invalid sequence replaced
    by ``replacement_char`` (``"replace"``), dropped (``"ignore"``), or an error."""
    if errors not in ("replace", "ignore", "strict"):
        raise ValueError(f"{who}: errors must be 'replace', 'ignore' or 'strict', got "
                         f"{errors!r}")
    if errors == "strict":
        def decode(b: bytes) -> str:
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidArgumentError(f"{who}: invalid UTF-8 in {b!r} ({exc})") from None
        return decode
    handler = "ignore" if errors == "ignore" else _replace_handler(int(replacement_char))
    return lambda b: b.decode("utf-8", handler)


@functools.lru_cache(maxsize=None)
def _replace_handler(cp: int) -> str:
    """The name of a codec error handler putting ``chr(cp)`` for each invalid sequence."""
    name = f"gradtape.strings.replace.{cp}"
    repl = chr(cp)
    codecs.register_error(name, lambda exc: (repl, exc.end))
    return name


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,
                  name=None):
    """Each UTF-8 string split into its characters (a RaggedTensor; 1-D for a scalar)."""
    who = "unicode_split"
    _check_input_encoding(input_encoding, who)
    dec = _decoder(errors, replacement_char, who)
    return _split_rows(input, who, lambda b: [ch.encode("utf-8", "surrogatepass")
                                             for ch in dec(b)])


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,
                   replace_control_characters=False, name=None):
    """Each UTF-8 string as its code points (int32; a RaggedTensor, 1-D for a scalar)."""
    who = "unicode_decode"
    _check_input_encoding(input_encoding, who)
    dec = _decoder(errors, replacement_char, who)

    def points(b):
        cps = [ord(ch) for ch in dec(b)]
        if replace_control_characters:
            r = int(replacement_char)
            cps = [r if cp < 0x20 or 0x7f <= cp < 0xa0 else cp for cp in cps]
        return cps
    return _split_rows(input, who, points, np.int32)


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533,
                   name=None):
    """Code points (int32; the last axis, ragged or dense) encoded as UTF-8 strings: one
    string per row."""
    who = "unicode_encode"
    _check_input_encoding(output_encoding, who)
    repl = chr(int(replacement_char))

    def enc(cps) -> bytes:
        chars = []
        for cp in cps:
            cp = int(cp)
            if 0 <= cp < 0x110000 and not 0xD800 <= cp < 0xE000:
                chars.append(chr(cp))
            elif errors == "strict":
                raise InvalidArgumentError(f"{who}: invalid code point {cp}")
            elif errors == "replace":
                chars.append(repl)
        return "".join(chars).encode("utf-8")
    if isinstance(input, RaggedTensor):
        if isinstance(input.values, RaggedTensor):
            return input.with_values(unicode_encode(input.values, output_encoding, errors,
                                                    replacement_char))
        vals = np.asarray(input.values.numpy())
        s = input._row_splits
        out = np.empty(input.nrows_host(), dtype=object)
        items = vals.tolist()
        out[:] = [enc(items[s[i]:s[i + 1]]) for i in range(input.nrows_host())]
        return _strings_out(out)
    x = input if isinstance(input, Tensor) else convert_to_tensor(input)
    if x._value.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{who}: expected int32 code points, got "
                                   f"{as_dtype(x._value.dtype).name}")
    host = np.asarray(x.numpy())
    if host.ndim == 0:
        raise InvalidArgumentError(f"{who}: the code points need at least one axis")
    rows = host.reshape(-1, host.shape[-1]).tolist()
    out = np.empty(len(rows), dtype=object)
    out[:] = [enc(r) for r in rows]
    return _strings_out(out.reshape(host.shape[:-1]))


_CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}


def unicode_transcode(input, input_encoding, output_encoding, errors="replace",
                      replacement_char=65533, replace_control_characters=False, name=None):
    """Each string re-encoded from ``input_encoding`` to ``output_encoding`` (``"UTF-8"``,
    ``"UTF-16-BE"``, ``"UTF-32-BE"``)."""
    who = "unicode_transcode"
    for enc in (input_encoding, output_encoding):
        if enc not in _CODECS:
            raise InvalidArgumentError(f"{who}: encoding {enc!r} is not one of "
                                       f"{list(_CODECS)}")
    src, dst = _CODECS[input_encoding], _CODECS[output_encoding]
    if errors not in ("replace", "ignore", "strict"):
        raise ValueError(f"{who}: errors must be 'replace', 'ignore' or 'strict', got "
                         f"{errors!r}")
    handler = {"strict": "strict", "ignore": "ignore"}.get(errors) or \
        _replace_handler(int(replacement_char))
    r = chr(int(replacement_char))

    def fn(b: bytes) -> bytes:
        try:
            text = b.decode(src, handler)
        except UnicodeDecodeError as exc:
            raise InvalidArgumentError(f"{who}: invalid {input_encoding} in {b!r} ({exc})") \
                from None
        if replace_control_characters:
            text = "".join(r if ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 else c for c in text)
        return text.encode(dst)
    return _elementwise(input, who, fn)


# --- numbers and text -------------------------------------------------------------------------

def to_number(input, out_type="float32", name=None):
    """Each string parsed as a number of ``out_type`` (float32, float64, int32, int64);
    InvalidArgumentError for text that is not one, as TF."""
    who = "to_number"
    dt = as_dtype(out_type)
    if dt.np.kind not in "fi" or dt.np.itemsize < 4:
        raise TypeError(f"{who}: out_type must be float32, float64, int32 or int64, got "
                        f"{dt.name}")

    def parse(b: bytes):
        text = b.decode("utf-8", "replace").strip()
        bad = "_" in text or not text
        try:
            if not bad:
                if dt.np.kind == "f":
                    return float(text)
                v = int(text)
                info = np.iinfo(dt.np)
                if info.min <= v <= info.max:
                    return v
        except ValueError:
            pass
        raise InvalidArgumentError(f"{who}: StringToNumberOp could not correctly convert "
                                   f"string: {b.decode('utf-8', 'replace')}")
    return _elementwise(input, who, parse, dt.np)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",
              name=None):
    """Numbers (and bools) as strings, by C's printf: floats ``%f`` (``precision``
    decimals; ``%e`` with ``scientific``, ``%g`` with ``shortest``), integers ``%d``, bools
    ``true``/``false``; ``width`` pads with spaces, or ``fill`` (one of ``" +-0#"``) as a
    printf flag."""
    who = "as_string"
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(as_string(input.flat_values, precision, scientific,
                                                shortest, width, fill))
    x = input if isinstance(input, Tensor) else convert_to_tensor(input)
    kind = x._value.dtype.kind
    if kind == "O":
        raise InvalidArgumentError(f"{who}: expected a numeric or bool tensor, got string")
    if fill and (len(fill) > 1 or fill not in " +-0#"):
        raise InvalidArgumentError(f"{who}: fill {fill!r} is not supported (one of ' +-0#')")
    if scientific and shortest:
        raise InvalidArgumentError(f"{who}: cannot select both scientific and shortest "
                                   "notation")
    spec = "%" + fill + (str(width) if width > -1 else "")
    if kind in "iub":
        if precision > -1:
            raise InvalidArgumentError(f"{who}: Cannot select precision for int types")
        if scientific or shortest:
            raise InvalidArgumentError(f"{who}: Cannot select scientific or shortest "
                                       "notation for int types")
    if precision > -1:
        spec += f".{precision}"
    host = np.asarray(x.numpy())
    if kind == "b":
        fmt = "%" + fill + (str(width) if width > -1 else "") + "s"
        fn = (lambda v: (fmt % ("true" if v else "false")).encode())
    elif kind in "iu":
        fn = (lambda v, f=spec + "d": (f % v).encode())
    elif kind == "f":
        f = spec + ("g" if shortest else "e" if scientific else "f")
        fn = (lambda v: (f % v).encode())
    elif kind == "c":
        f = spec + ("g" if shortest else "e" if scientific else "f")
        fn = (lambda v: f"({f % v.real},{f % v.imag})".encode())
    else:
        raise InvalidArgumentError(f"{who}: unsupported dtype {host.dtype}")
    items = host.reshape(-1).tolist()
    out = np.empty(len(items), dtype=object)
    out[:] = [fn(v) for v in items]
    return _strings_out(out.reshape(host.shape))


def format(template, inputs, placeholder="{}", summarize=3, name=None):
    """``template`` with each ``placeholder`` replaced by the next of ``inputs`` (a tensor
    or a list of them), formatted as ``gt.print`` formats them: a scalar string tensor."""
    from .printing import _text
    who = "format"
    if isinstance(inputs, (list, tuple)):
        items = list(inputs)
    else:
        items = [inputs]
    if summarize is None:
        summarize = 3
    tmpl = template.decode("utf-8") if isinstance(template, bytes) else str(template)
    pieces = tmpl.split(placeholder)
    if len(pieces) - 1 != len(items):
        raise ValueError(f"{who}: {len(pieces) - 1} placeholders in the template "
                         f"{tmpl!r} but {len(items)} inputs")
    texts = [_text(v if isinstance(v, Tensor) else convert_to_tensor(v), summarize)
             for v in items]
    out = pieces[0] + "".join(t + p for t, p in zip(texts, pieces[1:]))
    return _strings_out(np.asarray(out.encode("utf-8"), dtype=object))


# --- ngrams -----------------------------------------------------------------------------------

def _ngrams_of(tokens, widths, sep, left, right, pad_width, preserve):
    """TF's StringNGrams kernel on one row of tokens (bytes)."""
    out = []
    length = len(tokens)

    def pad_of(width):
        return min(width - 1 if pad_width < 0 else pad_width, width - 1)

    def make(num, width):
        pw = pad_of(width)
        for k in range(num):
            lp = max(0, pw - k)
            rp = max(0, pw - (num - (k + 1)))
            nt = width - (lp + rp)
            start = 0 if lp > 0 else k - pw
            parts = [left] * lp + tokens[start:start + nt] + [right] * rp
            out.append(sep.join(parts))

    for w in widths:
        pw = pad_of(w)
        num = max(0, length + 2 * pw - w + 1)
        make(num, w)
    if preserve and not out and length:
        width = length + 2 * max(pad_width, 0)
        pw = min(max(pad_width, 0), width - 1)
        lp, rp = pw, pw
        out.append(sep.join([left] * lp + tokens + [right] * rp))
    return out


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The ngrams of ``ngram_width`` (an int or several) of the last axis of ``data``
    (string tokens, dense or ragged), joined by ``separator``; ``pad_values`` (one string
    or a (left, right) pair) pads each sequence by ``padding_width`` (``width - 1`` by
    default) on each side. Dense inputs give dense outputs, ragged inputs ragged ones."""
    who = "ngrams"
    if pad_values is None:
        left = right = b""
    elif isinstance(pad_values, (list, tuple)):
        if not all(isinstance(p, (str, bytes)) for p in pad_values[:2]):
            raise TypeError("pad_values must be a string, tuple of strings, or None.")
        left, right = (_as_bytes(p, who, "pad_values") for p in pad_values[:2])
    elif isinstance(pad_values, (str, bytes)):
        left = right = _as_bytes(pad_values, who, "pad_values")
    else:
        raise TypeError("pad_values must be a string, tuple of strings, or None.")
    if padding_width is not None and padding_width < 1:
        raise ValueError("padding_width must be greater than 0.")
    if padding_width is not None and pad_values is None:
        raise ValueError("pad_values must be provided if padding_width is set.")
    pad_width = 0 if pad_values is None else (-1 if padding_width is None else
                                              int(padding_width))
    widths = list(ngram_width) if isinstance(ngram_width, (list, tuple)) else [ngram_width]
    for w in widths:
        if w < 1:
            raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    sep = _as_bytes(separator, who, "separator")

    def rows_of(rt: RaggedTensor) -> RaggedTensor:
        if isinstance(rt.values, RaggedTensor):
            return rt.with_values(rows_of(rt.values))
        items = rt.values._value.tolist()
        s = rt._row_splits
        rows = [_ngrams_of(items[s[i]:s[i + 1]], widths, sep, left, right, pad_width,
                           bool(preserve_short_sequences)) for i in range(rt.nrows_host())]
        flat = np.empty(sum(len(r) for r in rows), dtype=object)
        flat[:] = [g for r in rows for g in r]
        return RaggedTensor.from_row_lengths(_strings_out(flat),
                                             [len(r) for r in rows], validate=False)

    if isinstance(data, RaggedTensor):
        _string_tensor(data.flat_values, who)
        return rows_of(data)
    host = _text_host(data, who)
    if host.ndim == 0:
        raise ValueError("Data must have rank>0")
    rows = host.reshape(-1, host.shape[-1])
    rt = RaggedTensor.from_row_lengths(Tensor(rows.reshape(-1), CPU),
                                       [rows.shape[1]] * rows.shape[0], validate=False)
    out = rows_of(rt)
    flat = out.values._value
    try:
        return _strings_out(flat.reshape(host.shape[:-1] + (-1,)))
    except ValueError:
        raise InvalidArgumentError(f"{who}: the rows give different numbers of ngrams") \
            from None


# --- hashing ----------------------------------------------------------------------------------

_M64 = (1 << 64) - 1
_K0 = 0xc3a5c85c97cb3127
_K1 = 0xb492b66fbe98f273
_K2 = 0x9ae16a3b2f90404f
_UK0, _UK1, _UK2 = np.uint64(_K0), np.uint64(_K1), np.uint64(_K2)


def _urot(v, s):
    s = np.uint64(s)
    return (v >> s) | (v << (np.uint64(64) - s))


def _ulen16(u, v, mul):
    a = (u ^ v) * mul
    a ^= a >> np.uint64(47)
    b = (v ^ a) * mul
    b ^= b >> np.uint64(47)
    return b * mul


def _fingerprint_rows(buf: np.ndarray, n: int) -> np.ndarray:
    """FarmHash's Fingerprint64 (farmhashna's Hash64) of each row of ``buf`` (``[m, n]``
    uint8), for ``n <= 64`` bytes, vectorized over the rows."""
    def f64(off):
        return np.ascontiguousarray(buf[:, off:off + 8]).view("<u8")[:, 0]

    def f32(off):
        return np.ascontiguousarray(buf[:, off:off + 4]).view("<u4")[:, 0].astype(np.uint64)

    size = np.uint64(n)
    with np.errstate(over="ignore"):
        mul = _UK2 + size * np.uint64(2)
        if n > 32:
            a = f64(0) * _UK2
            b = f64(8)
            c = f64(n - 8) * mul
            d = f64(n - 16) * _UK2
            y = _urot(a + b, 43) + _urot(c, 30) + d
            z = _ulen16(y, a + _urot(b + _UK2, 18) + c, mul)
            e = f64(16) * mul
            f = f64(24)
            g = (y + f64(n - 32)) * mul
            h = (z + f64(n - 24)) * mul
            return _ulen16(_urot(e + f, 43) + _urot(g, 30) + h, e + _urot(f + a, 18) + g, mul)
        if n > 16:
            a, b = f64(0) * _UK1, f64(8)
            c, d = f64(n - 8) * mul, f64(n - 16) * _UK2
            return _ulen16(_urot(a + b, 43) + _urot(c, 30) + d, a + _urot(b + _UK2, 18) + c,
                           mul)
        if n >= 8:
            a, b = f64(0) + _UK2, f64(n - 8)
            return _ulen16(_urot(b, 37) * mul + a, (_urot(a, 25) + b) * mul, mul)
        if n >= 4:
            return _ulen16(size + (f32(0) << np.uint64(3)), f32(n - 4), mul)
        if n == 0:
            return np.full(buf.shape[0], _UK2, np.uint64)
        a = buf[:, 0].astype(np.uint64)
        b = buf[:, n >> 1].astype(np.uint64)
        c = buf[:, n - 1].astype(np.uint64)
        y = (a + (b << np.uint64(8))) & np.uint64(0xFFFFFFFF)
        z = (size + (c << np.uint64(2))) & np.uint64(0xFFFFFFFF)
        v = y * _UK2 ^ z * _UK0
        return (v ^ (v >> np.uint64(47))) * _UK2


def _rot(v, s):
    return ((v >> s) | (v << (64 - s))) & _M64


def _shift_mix(v):
    return v ^ (v >> 47)


def _len16(u, v, mul):
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _fetch(s, i):
    return int.from_bytes(s[i:i + 8], "little")


def _weak32(s, i, a, b):
    w, x, y, z = _fetch(s, i), _fetch(s, i + 8), _fetch(s, i + 16), _fetch(s, i + 24)
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def _fingerprint_long(s: bytes) -> int:
    """Fingerprint64 of a string of more than 64 bytes (farmhashna's loop)."""
    n = len(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _fetch(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _fetch(s, i + 8)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v[1] + _fetch(s, i + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _fetch(s, i + 40)) & _M64
        z = (_rot((z + w[0]) & _M64, 33) * _K1) & _M64
        v = _weak32(s, i, (v[1] * _K1) & _M64, (x + w[0]) & _M64)
        w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _fetch(s, i + 16)) & _M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = (_K1 + ((z & 0xff) << 1)) & _M64
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & _M64, w[1])
    v = ((v[0] + w[0]) & _M64, v[1])
    w = ((w[0] + v[0]) & _M64, w[1])
    x = (_rot((x + y + v[0] + _fetch(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v[1] + _fetch(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _fetch(s, i + 40)) & _M64
    z = (_rot((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak32(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _fetch(s, i + 16)) & _M64)
    z, x = x, z
    return _len16((_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M64,
                  (_len16(v[1], w[1], mul) + x) & _M64, mul)


def _fingerprint64(strings) -> np.ndarray:
    """FarmHash's Fingerprint64 (TF's ``tf.fingerprint`` / hash buckets) of each of the
    ``bytes`` in ``strings``, as uint64."""
    strs = list(strings)
    lens = np.fromiter((len(s) for s in strs), np.int64, len(strs))
    out = np.zeros(len(strs), np.uint64)
    for n in np.unique(lens):
        idx = np.nonzero(lens == n)[0]
        n = int(n)
        if n > 64:
            out[idx] = [_fingerprint_long(strs[i]) for i in idx]
            continue
        joined = b"".join(strs[i] for i in idx)
        buf = np.frombuffer(joined, np.uint8).reshape(len(idx), n) if n else \
            np.zeros((len(idx), 0), np.uint8)
        out[idx] = _fingerprint_rows(buf, n)
    return out


def to_hash_bucket_fast(input, num_buckets, name=None):
    """Each string's FarmHash Fingerprint64 modulo ``num_buckets`` (int64), as TF."""
    who = "to_hash_bucket_fast"
    if int(num_buckets) < 1:
        raise InvalidArgumentError(f"{who}: num_buckets must be positive, got {num_buckets}")
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(to_hash_bucket_fast(input.flat_values, num_buckets))
    host = _text_host(input, who)
    h = _fingerprint64(host.reshape(-1).tolist()) % np.uint64(int(num_buckets))
    return _numeric_out(h.astype(np.int64).reshape(host.shape))
