"""``gt.print``: TensorFlow's ``tf.print``, with its formatting of tensors."""
from __future__ import annotations

import sys

import numpy as np

from . import nest
from .tensor import Tensor

__all__ = ["print_"]


def _float_text(v, digits, more) -> str:
    """TF's float format: the short form (FLT_DIG / DBL_DIG significant digits) when it reads
    back as the same value, else three digits more."""
    if np.isnan(v):
        return "nan" if not np.signbit(v) else "-nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = f"{v:.{digits}g}"
    if type(v)(text) != v:
        text = f"{v:.{more}g}"
    return text


def _scalar_text(v) -> str:
    if isinstance(v, np.floating):
        if v.dtype == np.float64:
            return _float_text(v, 15, 17)
        if v.dtype == np.float16:
            return _float_text(np.float32(v), 6, 9)
        return _float_text(v, 6, 9)
    if isinstance(v, np.bool_):
        return "True" if v else "False"
    if isinstance(v, np.complexfloating):
        return f"({_scalar_text(v.real)},{_scalar_text(v.imag)})"
    if isinstance(v, bytes):
        return '"' + _escape(v) + '"'
    return str(v)


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}


def _escape(v: bytes) -> str:
    """A string element as TF prints it: C escapes (``\\n``, ``\\"``, octal for other
    control bytes), UTF-8 text kept as it is."""
    out = bytearray()
    for c in v:
        esc = _ESCAPES.get(c)
        if esc is not None:
            out += esc.encode()
        elif c < 0x20 or c == 0x7f:
            out += b"\\%03o" % c
        else:
            out.append(c)
    return out.decode("utf-8", "replace")


def _array_text(a: np.ndarray, summarize: int, indent: int = 0) -> str:
    if not isinstance(a, np.ndarray):     # an element of a string array
        return _scalar_text(a)
    if a.ndim == 0:
        return _scalar_text(a[()])
    n = a.shape[0]
    if 0 <= summarize < n and n > 2 * summarize:
        idx = list(range(summarize)) + [None] + list(range(n - summarize, n))
    else:
        idx = list(range(n))
    parts = ["..." if i is None else _array_text(a[i], summarize, indent + 1) for i in idx]
    if a.ndim == 1:
        return "[" + " ".join(parts) + "]"
    sep = "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _text(x, summarize) -> str:
    if isinstance(x, Tensor):
        v = x.numpy()
        return _array_text(v if isinstance(v, (np.ndarray, bytes)) else np.asarray(v),
                           summarize)
    if isinstance(x, np.ndarray):
        return _array_text(x, summarize)
    if isinstance(x, (list, tuple, dict)) and any(isinstance(v, Tensor)
                                                  for v in nest.flatten(x)):
        return _nested_text(x, summarize)
    return str(x)


def _nested_text(x, summarize) -> str:
    """A structure as TF prints one: its tensors by value, other items by ``repr``, dicts
    in key order."""
    if isinstance(x, (Tensor, np.ndarray)):
        return _text(x, summarize)
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_nested_text(x[k], summarize)}"
                               for k in sorted(x)) + "}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_nested_text(v, summarize) for v in x)
        if isinstance(x, tuple) and len(x) == 1:
            inner += ","
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    return repr(x)


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """Print ``inputs`` as ``tf.print`` does: tensors by their values (the first and last
    ``summarize`` entries of each axis around ``...``, 3 for None; all for ``-1``),
    floats with TF's digits, other objects with ``str``; to standard error by default, or
    ``output_stream``: ``sys.stdout``, ``sys.stderr``, ``"file://PATH"`` (appended), or any
    object with ``write``. Reading a device tensor waits for the device."""
    if summarize is None:
        summarize = 3
    if not isinstance(summarize, int) or summarize < -1 or summarize == 0:
        raise ValueError(f"print: summarize must be -1 (everything) or a positive int, got "
                         f"{summarize!r}")
    text = sep.join(_text(x, summarize) for x in inputs) + end
    stream = sys.stderr if output_stream is None else output_stream
    if isinstance(stream, str):
        if not stream.startswith("file://"):
            raise ValueError(f"print: output_stream must be sys.stdout, sys.stderr, a "
                             f"'file://' path or a stream, got {stream!r}")
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
        return
    if not hasattr(stream, "write"):
        raise TypeError(f"print: output_stream must be writable, got {type(stream).__name__}")
    stream.write(text)
    if hasattr(stream, "flush"):
        stream.flush()
