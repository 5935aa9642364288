"""``gt.io``: files, records, images and serialized examples, as TensorFlow's ``tf.io``.

Everything runs on the host, as TF runs these kernels on the CPU. String results are CPU
``gt.string`` tensors; numeric results land on the current device (CPU inside ``gt.data``
pipelines, whose functions run on the host). Nothing here is differentiable.

* Files: ``read_file``, ``write_file`` and ``gfile`` (``GFile`` with TF's modes and lazy
  opening, ``exists``, ``glob``, ``isdir``, ``listdir``, ``makedirs``, ``mkdir``, ``remove``,
  ``rmtree``, ``rename``, ``copy``, ``stat``, ``walk``, ``join``) for local paths (and
  ``file://`` URLs), raising TF's ``gt.errors`` classes with TF's messages.
* Records: ``TFRecordWriter`` / ``TFRecordOptions`` (compression ``""``, ``"ZLIB"``,
  ``"GZIP"``, written with zlib's settings as TF: the files are byte for byte TF's), TF's
  framing (length, masked CRC-32C of it, data, masked CRC-32C of the data; the CRC is
  table-driven and, for long records, computed over many lanes at once with NumPy).
  ``gt.data.TFRecordDataset`` reads them.
* Tensors: ``serialize_tensor`` / ``parse_tensor`` (TF's ``TensorProto`` bytes), ``decode_raw``,
  ``decode_csv``, ``decode_compressed``.
* Examples: ``FixedLenFeature``, ``VarLenFeature``, ``FixedLenSequenceFeature``,
  ``parse_example``, ``parse_single_example``, ``parse_sequence_example``,
  ``parse_single_sequence_example`` (dense features as tensors, variable-length ones as
  ``gt.sparse.SparseTensor``), and the message classes in ``gt.train``.
* Images (``decode_png``, ``decode_jpeg``, ``decode_gif``, ``decode_bmp``, ``decode_image``,
  ``decode_and_crop_jpeg``, ``extract_jpeg_shape``, ``is_jpeg``, ``encode_png``,
  ``encode_jpeg``), with TF's shapes, channel conversions and dtypes. PNG (decoding every
  colour type and bit depth with libpng's conversions as TF configures them, and encoding with
  libpng's filter choice and zlib settings: the bytes are TF's except with ``compression=0``),
  GIF (giflib's frame composition as TF does it) and BMP are decoded here; Pillow
  (``pip install 'gradtape[io]'``) decodes and encodes JPEG (TF's bytes) and speeds up PNG
  decoding. JPEG pixels are libjpeg's as TF asks for them: TF's default ``dct_method``
  (``"INTEGER_FAST"``) with fancy upsampling is rebuilt from libjpeg's fast IDCT output and
  libjpeg's own upsampling and colour-conversion arithmetic, so it equals TF's decoding;
  ``"INTEGER_ACCURATE"`` is Pillow's default decoding (also TF's), without fancy upsampling
  its chroma planes come from libjpeg's half-scale decoding. The one combination this cannot
  reach, ``"INTEGER_ACCURATE"`` with ``fancy_upscaling=False`` on 4:2:2 images, uses the fast
  IDCT instead (a few levels off TF's).
"""
from __future__ import annotations

import collections
import glob as _glob
import io as _pyio
import os
import re
import shutil
import struct
import sys
import types
import zlib

import numpy as np

from . import _proto
from .backend import CPU, current_device
from .dtypes import as_dtype
from .errors import (AlreadyExistsError, DataLossError, FailedPreconditionError,
                     InternalError, InvalidArgumentError, NotFoundError, PermissionDeniedError,
                     UnknownError)
from .tensor import Tensor, _string_array, convert_to_tensor

__all__ = ["read_file", "write_file", "gfile", "decode_png", "decode_jpeg", "decode_bmp",
           "decode_gif", "decode_image", "decode_and_crop_jpeg", "extract_jpeg_shape",
           "is_jpeg", "encode_png", "encode_jpeg", "decode_raw", "decode_csv",
           "decode_compressed", "serialize_tensor", "parse_tensor", "TFRecordOptions",
           "TFRecordWriter", "FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature",
           "parse_example", "parse_single_example", "parse_sequence_example",
           "parse_single_sequence_example"]

_PIL_HINT = "pip install 'gradtape[io]'"


def _pil(who):
    """Pillow's Image module, or ImportError naming the extra that installs it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{who} needs Pillow: {_PIL_HINT} (or pip install pillow)") from None
    return Image


# --- tensors in and out ------------------------------------------------------------------------

def _strings(x, who) -> np.ndarray:
    """``x`` (string tensor, str/bytes, nested lists) as an object array of bytes."""
    if isinstance(x, Tensor):
        if x._value.dtype.kind != "O":
            raise InvalidArgumentError(f"{who}: expected a string tensor, got a "
                                       f"{as_dtype(x._value.dtype).name} tensor")
        return x._value
    try:
        return _string_array(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{who}: expected strings, got {x!r:.100} ({exc})") from None


def _scalar_bytes(x, who, what) -> bytes:
    host = _strings(x, who)
    if host.ndim:
        raise InvalidArgumentError(f"{who}: {what} must be scalar but got shape"
                                   f"{_shape_str(host.shape)}")
    return host[()]


def _shape_str(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _string_out(host) -> Tensor:
    if not isinstance(host, np.ndarray):
        out = np.empty((), dtype=object)
        out[()] = host
        host = out
    elif host.dtype != object:
        host = host.astype(object)
    return Tensor(host, CPU)


def _numeric_out(host: np.ndarray) -> Tensor:
    dev = current_device()
    return Tensor(host if dev is CPU else dev.asarray(host), dev)


def _host_numeric(x, who) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.numpy() if x._value.ndim else np.asarray(x.numpy())
    return np.asarray(x)


def _path(p, who="gfile") -> str:
    """A local path from a str, bytes, os.PathLike or scalar string tensor (``file://``
    URLs are local paths, as TF's local file system reads them)."""
    if isinstance(p, Tensor):
        p = _scalar_bytes(p, who, "the path")
    if isinstance(p, os.PathLike):
        p = os.fspath(p)
    if isinstance(p, bytes):
        p = p.decode("utf-8")
    if not isinstance(p, str):
        raise TypeError(f"{who}: expected a path (str, bytes or os.PathLike), got "
                        f"{type(p).__name__}")
    if p.startswith("file://"):
        p = p[len("file://"):]
    return p


def _os_error(exc: OSError, path) -> Exception:
    """An OSError as the ``gt.errors`` class TF raises, with TF's ``path; reason``."""
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"{path}; No such file or directory")
    if isinstance(exc, IsADirectoryError):
        return FailedPreconditionError(f"{path}; Is a directory")
    if isinstance(exc, NotADirectoryError):
        return FailedPreconditionError(f"{path}; Not a directory")
    if isinstance(exc, PermissionError):
        return PermissionDeniedError(f"{path}; Permission denied")
    if isinstance(exc, FileExistsError):
        return AlreadyExistsError(f"{path}; File exists")
    return UnknownError(f"{path}; {exc.strerror or exc}")


def _os_call(path, fn, *args):
    """``fn(*args)``, an OSError raised as :func:`_os_error` of ``path``."""
    try:
        return fn(*args)
    except OSError as exc:
        raise _os_error(exc, path) from None


# --- read_file, write_file ---------------------------------------------------------------------

def _scalar_strings(value, who, what):
    """``value`` as a 0-d host string array; TF's error naming ``what`` when it is not."""
    host = _strings(value, who)
    if host.ndim:
        raise InvalidArgumentError(f"{what} tensor must be scalar, but had shape: "
                                   f"{_shape_str(host.shape)}")
    return host


def read_file(filename, name=None) -> Tensor:
    """The contents of a file as a scalar string tensor (``tf.io.read_file``)."""
    host = _scalar_strings(filename, "read_file", "Input filename")
    path = _path(host[()], "read_file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise _os_error(exc, path) from None
    return _string_out(data)


def write_file(filename, contents, name=None) -> None:
    """Write a scalar string to a file, creating its folder (``tf.io.write_file``)."""
    fn = _scalar_strings(filename, "write_file", "Input filename")
    data = _scalar_strings(contents, "write_file", "Contents")
    path = _path(fn[()], "write_file")
    try:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data[()])
    except OSError as exc:
        raise _os_error(exc, path) from None
    return None


# --- gfile ---------------------------------------------------------------------------------------

_GFILE_MODES = ("r", "w", "a", "r+", "w+", "a+")


class GFile:
    """A file (``tf.io.gfile.GFile``): opened when first read or written, ``mode`` one of
    ``r w a r+ w+ a+`` with an optional ``b`` (bytes instead of str; writes take either).
    Reading and writing keep separate positions, as TF's; ``read(n)`` reads ``n`` bytes."""

    def __init__(self, name, mode="r"):
        self._name = name
        self._path = _path(name)
        self._mode = mode
        if not isinstance(mode, str) or mode.replace("b", "", 1) not in _GFILE_MODES:
            raise InvalidArgumentError(
                "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._binary = "b" in mode
        plain = mode.replace("b", "")
        self._readable = plain in ("r", "r+", "w+", "a+")
        self._writable = plain in ("a", "w", "r+", "a+", "w+")
        self._append = "a" in plain
        self._reader = None
        self._writer = None

    @property
    def name(self):
        return self._name

    @property
    def mode(self):
        return self._mode

    def _read_stream(self):
        if self._reader is None:
            if not self._readable:
                raise PermissionDeniedError("File isn't open for reading")
            self._reader = _os_call(self._path, open, self._path, "rb")
        return self._reader

    def _write_stream(self):
        if self._writer is None:
            if not self._writable:
                raise PermissionDeniedError("File isn't open for writing")
            self._writer = _os_call(self._path, open, self._path, "ab" if self._append else "wb")
        return self._writer

    def _value(self, data: bytes):
        return data if self._binary else data.decode("utf-8")

    def size(self):
        """The size of the file in bytes."""
        return stat(self._path).length

    def write(self, file_content):
        """Append ``file_content`` (str or bytes) to the file."""
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        elif not isinstance(file_content, (bytes, bytearray, memoryview)):
            raise TypeError(f"Expected binary or unicode string, got {file_content!r:.100}")
        self._write_stream().write(file_content)

    def read(self, n=-1):
        """``n`` bytes from the current position (all the rest with ``n=-1``)."""
        f = self._read_stream()
        return self._value(f.read() if n == -1 else f.read(n))

    def readline(self):
        """The next line, with its ``\\n``; empty at the end."""
        return self._value(self._read_stream().readline())

    def readlines(self):
        out = []
        while True:
            line = self.readline()
            if not line:
                return out
            out.append(line)

    def seek(self, offset=None, whence=0, position=None):
        """Move the read position: ``whence`` 0 (from the start), 1 (from here), 2 (from
        the end); ``position`` is the deprecated name of ``offset``."""
        f = self._read_stream()
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        if position is not None:
            offset = position
        if whence == 1:
            offset += f.tell()
        elif whence == 2:
            offset += self.size()
        elif whence != 0:
            raise InvalidArgumentError(f"Invalid whence argument: {whence}. Valid values are "
                                       "0, 1, or 2.")
        f.seek(offset)

    def tell(self):
        if self._readable:
            return self._read_stream().tell()
        return self._write_stream().tell()

    def flush(self):
        if self._writer is not None:
            self._writer.flush()

    def close(self):
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def seekable(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class FileStatistics:
    """A file's size in bytes, modification time in nanoseconds and whether it is a folder
    (``tf.io.gfile.stat``'s result)."""

    __slots__ = ("length", "mtime_nsec", "is_directory")

    def __init__(self, length, mtime_nsec, is_directory):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self):
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def exists(path):
    """Whether ``path`` is a file or a folder."""
    return os.path.exists(_path(path))


def isdir(path):
    return os.path.isdir(_path(path))


def listdir(path):
    """The names in folder ``path`` (in the file system's order, as TF)."""
    p = _path(path)
    if not os.path.isdir(p):
        raise NotFoundError(f"Could not find directory {p}")
    return os.listdir(p)


def glob(pattern):
    """The paths matching ``pattern`` (``*``, ``?``, ``[...]``; hidden files match too), or
    the paths matching any pattern of a list, each pattern's sorted."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    out = []
    for p in patterns:
        out.extend(sorted(_glob.glob(_path(p), include_hidden=True)))
    return out


def makedirs(path):
    """Create folder ``path`` and the missing folders above it."""
    p = _path(path)
    try:
        os.makedirs(p, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise FailedPreconditionError(f"{p} is not a directory") from None
    except OSError as exc:
        raise _os_error(exc, p) from None


def mkdir(path):
    """Create folder ``path`` (its parent must exist; an existing folder is left as is)."""
    p = _path(path)
    if os.path.isdir(p):
        return
    _os_call(p, os.mkdir, p)


def remove(path):
    """Delete file ``path``."""
    p = _path(path)
    if os.path.isdir(p):
        raise FailedPreconditionError(f"{p}; Is a directory")
    _os_call(p, os.remove, p)


def rmtree(path):
    """Delete ``path`` and everything under it (a file is deleted too, as TF)."""
    p = _path(path)
    if not os.path.lexists(p):
        raise NotFoundError(f"{p} not found")
    try:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.remove(p)
    except OSError as exc:
        raise _os_error(exc, p) from None


def _check_target(src, dst, overwrite):
    if not os.path.exists(src):
        raise NotFoundError(f"{src}; No such file or directory")
    if not overwrite and os.path.exists(dst):
        raise AlreadyExistsError("file already exists")


def rename(src, dst, overwrite=False):
    """Rename ``src`` to ``dst`` (AlreadyExistsError when ``dst`` exists, unless
    ``overwrite``)."""
    s, d = _path(src), _path(dst)
    _check_target(s, d, overwrite)
    _os_call(s, os.replace, s, d)


def copy(src, dst, overwrite=False):
    """Copy file ``src`` to ``dst`` (AlreadyExistsError when ``dst`` exists, unless
    ``overwrite``)."""
    s, d = _path(src), _path(dst)
    _check_target(s, d, overwrite)
    _os_call(s, shutil.copyfile, s, d)


def stat(path):
    """A :class:`FileStatistics` of ``path``."""
    p = _path(path)
    st = _os_call(p, os.stat, p)
    import stat as _st
    return FileStatistics(int(st.st_size), int(st.st_mtime_ns), _st.S_ISDIR(st.st_mode))


def walk(top, topdown=True, onerror=None):
    """``(folder, subfolders, files)`` for ``top`` and every folder below it, as TF's
    ``walk`` (listing order; a missing ``top`` gives nothing, or ``onerror(error)``)."""
    top = _path(top)
    try:
        listing = listdir(top)
    except NotFoundError as err:
        if onerror:
            onerror(err)
        return
    files, subdirs = [], []
    for item in listing:
        (subdirs if os.path.isdir(os.path.join(top, item)) else files).append(item)
    here = (top, subdirs, files)
    if topdown:
        yield here
    for sub in subdirs:
        yield from walk(os.path.join(top, sub), topdown, onerror)
    if not topdown:
        yield here


def join(path, *paths):
    """The paths joined with ``/``."""
    return os.path.join(_path(path), *[_path(p) for p in paths])


def get_registered_schemes():
    """The URL schemes of the file systems gfile reads: the local one."""
    return ["file"]


def _make_gfile_module():
    mod = types.ModuleType(f"{__name__}.gfile", "Local files (``tf.io.gfile``).")
    for name, obj in (("GFile", GFile), ("Open", GFile), ("exists", exists),
                      ("glob", glob), ("isdir", isdir), ("listdir", listdir),
                      ("makedirs", makedirs), ("mkdir", mkdir), ("remove", remove),
                      ("rmtree", rmtree), ("rename", rename), ("copy", copy),
                      ("stat", stat), ("walk", walk), ("join", join),
                      ("get_registered_schemes", get_registered_schemes),
                      ("FileStatistics", FileStatistics)):
        setattr(mod, name, obj)
    mod.__all__ = [n for n in vars(mod) if not n.startswith("_")]
    sys.modules[mod.__name__] = mod
    return mod


gfile = _make_gfile_module()


# --- CRC-32C and TFRecord framing ----------------------------------------------------------------

def _crc_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1)
    return table.astype(np.uint32)


_CRC_NP = _crc_table()
_CRC_LIST = _CRC_NP.tolist()
_SHIFT_CACHE = {}


def _crc_update(reg: int, data) -> int:
    table = _CRC_LIST
    for b in data:
        reg = table[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg


def _zeros_operator(m: int) -> np.ndarray:
    """Four 256-entry tables giving the CRC register after ``m`` zero bytes (the register
    update is linear over GF(2) with zero input, so one table per byte of the register)."""
    ops = _SHIFT_CACHE.get(m)
    if ops is None:
        v = (np.arange(256, dtype=np.uint32)[None, :]
             << (np.arange(4, dtype=np.uint32)[:, None] * 8)).reshape(-1)
        for _ in range(m):
            v = _CRC_NP[v & 0xFF] ^ (v >> 8)
        ops = v.reshape(4, 256).tolist()
        if len(_SHIFT_CACHE) > 64:
            _SHIFT_CACHE.clear()
        _SHIFT_CACHE[m] = ops
    return ops


def crc32c(data) -> int:
    """The CRC-32C (Castagnoli) of ``data``. Long inputs run as ``L`` lanes of ``m`` bytes
    updated together by NumPy, then chained (each lane's register shifted through the next
    lane's length of zero bytes and XOR-ed with it)."""
    data = bytes(data)
    n = len(data)
    if n < 4096:
        return _crc_update(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    m = int(np.sqrt(n))
    lanes = n // m
    block = np.frombuffer(data, np.uint8, count=lanes * m).reshape(lanes, m).T.copy()
    regs = np.zeros(lanes, np.uint32)
    regs[0] = 0xFFFFFFFF
    table = _CRC_NP
    for col in block:
        regs = table[(regs ^ col) & 0xFF] ^ (regs >> 8)
    s0, s1, s2, s3 = _zeros_operator(m)
    reg = 0
    for r in regs.tolist():
        reg = (s0[reg & 0xFF] ^ s1[(reg >> 8) & 0xFF] ^ s2[(reg >> 16) & 0xFF]
               ^ s3[reg >> 24] ^ r)
    reg = _crc_update(reg, data[lanes * m:])
    return reg ^ 0xFFFFFFFF


def masked_crc32c(data) -> int:
    """TFRecord's masked CRC: the CRC-32C rotated right by 15 bits plus ``0xa282ead8``."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _frame(record: bytes) -> bytes:
    header = struct.pack("<Q", len(record))
    return (header + struct.pack("<I", masked_crc32c(header)) + record
            + struct.pack("<I", masked_crc32c(record)))


_COMPRESSIONS = ("", "ZLIB", "GZIP")


def _compression(value, who="TFRecordOptions") -> str:
    if value is None:
        return ""
    if isinstance(value, TFRecordOptions):
        return value.compression_type or ""
    if not isinstance(value, str) or value not in _COMPRESSIONS:
        raise ValueError(f'Not a valid compression_type: "{value}"')
    return value


class TFRecordOptions:
    """Options of a TFRecord file (``tf.io.TFRecordOptions``): ``compression_type`` (``""``
    / None, ``"ZLIB"``, ``"GZIP"``) and zlib's parameters (None: TF's defaults, level
    ``Z_DEFAULT_COMPRESSION``, 15 window bits, memory level 9, the default strategy)."""

    compression_type_map = {"ZLIB": "ZLIB", "GZIP": "GZIP", "": "", None: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        if compression_type is not None:
            _compression(compression_type)
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options):
        """The compression of ``options`` (TFRecordOptions, a string or None) as a
        string."""
        if not options:
            return ""
        return _compression(options)

    def __repr__(self):
        return f"TFRecordOptions(compression_type={self.compression_type!r})"


def _options(options) -> TFRecordOptions:
    if isinstance(options, TFRecordOptions):
        return options
    if options is None or isinstance(options, str):
        return TFRecordOptions(options or None)
    raise ValueError(f'Not a valid compression_type: "{options}"')


class TFRecordWriter:
    """Write records to a TFRecord file (``tf.io.TFRecordWriter``): each record is framed
    as TF frames it; with ZLIB or GZIP the whole file is one zlib stream, as TF writes it."""

    def __init__(self, path, options=None):
        opts = _options(options)
        self._compression = _compression(opts)
        self._path = _path(path, "TFRecordWriter")
        self._file = _os_call(self._path, open, self._path, "wb")
        self._zip = None
        self._flush_mode = opts.flush_mode or zlib.Z_NO_FLUSH
        if self._compression:
            wbits = 15 if opts.window_bits is None else opts.window_bits
            if self._compression == "GZIP":
                wbits += 16
            level = -1 if opts.compression_level is None else opts.compression_level
            self._zip = zlib.compressobj(
                level, zlib.DEFLATED if opts.compression_method is None
                else opts.compression_method, wbits,
                9 if opts.mem_level is None else opts.mem_level,
                0 if opts.compression_strategy is None else opts.compression_strategy)

    def write(self, record):
        """Write one record (bytes, or str as UTF-8)."""
        if self._file is None:
            raise FailedPreconditionError("Writer is closed.")
        if isinstance(record, Tensor):
            record = _scalar_bytes(record, "TFRecordWriter.write", "record")
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"write(): incompatible function arguments: record must be str "
                            f"or bytes, got {type(record).__name__}")
        framed = _frame(bytes(record))
        self._file.write(self._zip.compress(framed) if self._zip else framed)

    def flush(self):
        if self._file is None:
            raise FailedPreconditionError("Writer is closed.")
        if self._zip is not None and self._flush_mode != zlib.Z_NO_FLUSH:
            self._file.write(self._zip.flush(self._flush_mode))
        self._file.flush()

    def close(self):
        if self._file is None:
            return
        if self._zip is not None:
            self._file.write(self._zip.flush())
        self._file.close()
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Inflate(_pyio.RawIOBase):
    """A zlib (or gzip) stream being decompressed, as a raw binary file."""

    def __init__(self, f, wbits):
        self._f = f
        self._z = zlib.decompressobj(wbits)
        self._buf = b""
        self._done = False

    def readable(self):
        return True

    def readinto(self, b):
        while not self._buf and not self._done:
            chunk = self._f.read(1 << 16)
            try:
                if chunk:
                    self._buf = self._z.decompress(chunk)
                else:
                    self._buf = self._z.flush()
                    self._done = True
            except zlib.error as exc:
                m = re.match(r"Error (-?\d+) while \w+ data: (.*)", str(exc))
                msg = (f"inflate() failed with error {m.group(1)}: {m.group(2)}" if m
                       else f"inflate() failed: {exc}")
                raise DataLossError(msg) from None
            if self._z.eof:
                self._done = True
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def close(self):
        self._f.close()
        super().close()


def _open_stream(path, compression, what="Dataset"):
    """A binary reader of ``path``, decompressing ZLIB or GZIP."""
    if compression not in _COMPRESSIONS:
        raise InvalidArgumentError(f"{what}: Unsupported compression_type: "
                                   f"{compression!r}.")
    f = _os_call(path, open, path, "rb")
    if not compression:
        return f
    return _pyio.BufferedReader(_Inflate(f, 15 if compression == "ZLIB" else 31), 1 << 16)


def _tfrecords(path, compression):
    """Iterate the records of a TFRecord file, checking both CRCs as TF does
    (DataLossError for a corrupted or truncated record)."""
    with _open_stream(path, compression, "TFRecordDataset") as f:
        offset = 0
        while True:
            header = f.read(12)
            if len(header) < 12:
                return
            length, crc = struct.unpack("<QI", header)
            if masked_crc32c(header[:8]) != crc:
                hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
                raise DataLossError(f"corrupted record at {offset}{hint}")
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise DataLossError(f"truncated record at {offset}")
            record = body[:length]
            if masked_crc32c(record) != struct.unpack("<I", body[length:])[0]:
                raise DataLossError(f"corrupted record at {offset + 12}")
            yield record
            offset += 16 + length


def _text_lines(path, compression):
    """Iterate the lines of a text file without their ``\\n`` (or ``\\r\\n``)."""
    with _open_stream(path, compression, "TextLineDataset") as f:
        for line in f:
            if line.endswith(b"\n"):
                line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
            yield line


def _fixed_records(path, record_bytes, header_bytes, footer_bytes, compression):
    """Iterate the ``record_bytes``-long records of a file between its header and footer
    (InvalidArgumentError when the body is not a whole number of records)."""
    if record_bytes <= 0:
        raise InvalidArgumentError(f"record_bytes must be greater than zero, got "
                                   f"{record_bytes}")
    if header_bytes < 0 or footer_bytes < 0:
        raise InvalidArgumentError("header_bytes and footer_bytes must be >= 0")
    with _open_stream(path, compression, "FixedLengthRecordDataset") as f:
        data = f.read()
    body = len(data) - header_bytes - footer_bytes
    if body < 0 or body % record_bytes:
        raise InvalidArgumentError(
            f"Excluding the header ({header_bytes} bytes) and footer ({footer_bytes} bytes), "
            f'input file "{path}" has body length {max(body, 0)} bytes, which is not an '
            f"exact multiple of the record length ({record_bytes} bytes).")
    for start in range(header_bytes, header_bytes + body, record_bytes):
        yield data[start:start + record_bytes]


def decode_compressed(bytes, compression_type="", name=None) -> Tensor:  # noqa: A002
    """Each string decompressed (``compression_type`` ``""``, ``"ZLIB"`` or ``"GZIP"``), as
    ``tf.io.decode_compressed``."""
    host = _strings(bytes, "decode_compressed")
    ct = _compression(compression_type or "")
    wbits = {"ZLIB": 15, "GZIP": 31}.get(ct)
    out = np.empty(host.shape, dtype=object)
    flat_in, flat_out = host.reshape(-1), out.reshape(-1)
    for i, s in enumerate(flat_in):
        if wbits is None:
            flat_out[i] = s
            continue
        try:
            flat_out[i] = zlib.decompress(s, wbits)
        except zlib.error as exc:
            raise DataLossError(f"decode_compressed: {exc}") from None
    return _string_out(out)


# --- TensorProto ---------------------------------------------------------------------------------

def serialize_tensor(tensor, name=None) -> Tensor:
    """``tensor`` as the bytes of TF's ``TensorProto`` (a scalar string tensor)."""
    if isinstance(tensor, Tensor):
        host = tensor._value if tensor._value.dtype == object else tensor.numpy()
        host = np.asarray(host)
    else:
        t = convert_to_tensor(tensor)
        host = np.asarray(t._value if t._value.dtype == object else t.numpy())
    name = "object" if host.dtype.kind == "O" else host.dtype.name
    if name not in _proto.DT_ENUM:
        raise InvalidArgumentError(f"serialize_tensor: dtype {host.dtype} has no TensorProto "
                                   "encoding")
    return _string_out(_proto.encode_tensor_proto(host))


def parse_tensor(serialized, out_type, name=None) -> Tensor:
    """The tensor in serialized ``TensorProto`` bytes (``tf.io.parse_tensor``); its dtype
    must be ``out_type``."""
    host = _strings(serialized, "parse_tensor")
    if host.ndim:
        raise InvalidArgumentError(f"Expected `serialized` to be a scalar, got shape: "
                                   f"{_shape_str(host.shape)}")
    data = host[()]
    want = as_dtype(out_type)
    try:
        enum, array = _proto.decode_tensor_proto(data)
    except _proto.DecodeError:
        import base64
        raise InvalidArgumentError(f"Could not parse `serialized` as TensorProto, base64: "
                                   f"{base64.urlsafe_b64encode(data).decode()}") from None
    except ValueError as exc:
        raise InvalidArgumentError(f"Cannot parse tensor from proto: {exc}") from None
    want_enum = 7 if want.name == "string" else _proto.DT_ENUM.get(
        np.dtype(want.as_numpy_dtype).name)
    if enum != want_enum:
        raise InvalidArgumentError(
            f"Type mismatch between parsed tensor ({_proto.DT_NAME.get(enum, enum)}) and "
            f"dtype ({_proto.DT_NAME.get(want_enum, want.name)})")
    return _string_out(array) if enum == 7 else _numeric_out(array)


# --- decode_raw, decode_csv ---------------------------------------------------------------------

_RAW_TYPES = ("float16", "float32", "float64", "int32", "uint16", "uint8", "int16", "int8",
              "int64", "complex64", "complex128", "bool")
_TF_NAMES = {"float16": "half", "float32": "float", "float64": "double", "object": "string"}


def _tf_name(dt) -> str:
    name = dt.name if not isinstance(dt, np.dtype) else dt.name
    return _TF_NAMES.get(name, name)


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None,
               name=None) -> Tensor:
    """The bytes of each string reinterpreted as numbers of ``out_type``: shape
    ``input.shape + [n]``; all strings must have the same length, or be cut or zero-padded
    to ``fixed_length`` bytes (``tf.io.decode_raw``)."""
    host = _strings(input_bytes, "decode_raw")
    dt = as_dtype(out_type)
    npd = np.dtype(dt.as_numpy_dtype) if dt.name != "string" else np.dtype(object)
    if npd.name not in _RAW_TYPES:
        raise InvalidArgumentError(
            f"Value for attr 'out_type' of {_tf_name(npd)} is not in the list of allowed "
            "values: half, float, double, int32, uint16, uint8, int16, int8, int64, "
            "complex64, complex128, bool")
    size = npd.itemsize
    flat = host.reshape(-1).tolist()
    if fixed_length is not None:
        fixed_length = int(_host_numeric(fixed_length, "decode_raw"))
        if fixed_length % size:
            raise InvalidArgumentError(f"fixed_length ({fixed_length}) must be a multiple of "
                                       f"the size of out_type ({size})")
        flat = [s[:fixed_length].ljust(fixed_length, b"\0") for s in flat]
        width = fixed_length
    else:
        width = len(flat[0]) if flat else 0
        for i, s in enumerate(flat):
            if len(s) != width:
                raise InvalidArgumentError(
                    f"DecodeRaw requires input strings to all be the same size, but element "
                    f"{i} has size {width} != {len(s)}")
        if width % size:
            raise InvalidArgumentError(
                f"Input to DecodeRaw has length {width} that is not a multiple of {size}, the "
                f"size of {_tf_name(npd)}")
    order = "<" if little_endian else ">"
    wire = npd.newbyteorder(order) if size > 1 else npd
    if npd.kind == "c":
        wire = np.dtype(f"{order}c{size}")
    arr = np.frombuffer(b"".join(flat), wire) if flat else np.zeros(0, npd)
    if npd == np.bool_:
        arr = np.frombuffer(b"".join(flat), np.uint8) != 0 if flat else arr
    arr = arr.astype(npd).reshape(host.shape + (width // size,))
    return _numeric_out(arr)


_CSV_TYPES = ("float32", "float64", "int32", "int64", "object")


def _csv_fields(record: bytes, delim: int, use_quote: bool, i: int):
    """The fields of one CSV record (TF's parser: quotes must enclose a whole field, a
    quote inside is doubled)."""
    fields, n, pos = [], len(record), 0
    if n == 0:
        return fields
    while True:
        if use_quote and pos < n and record[pos] == 0x22:
            j, buf = pos + 1, bytearray()
            while True:
                if j >= n:
                    raise InvalidArgumentError("Quoted field has to end with quote followed "
                                               "by delim or end")
                c = record[j]
                if c == 0x22:
                    if j + 1 < n and record[j + 1] == 0x22:
                        buf.append(0x22)
                        j += 2
                        continue
                    if j + 1 < n and record[j + 1] != delim:
                        raise InvalidArgumentError("Quote inside a string has to be escaped "
                                                   "by another quote")
                    j += 1
                    break
                buf.append(c)
                j += 1
            fields.append(bytes(buf))
            if j >= n:
                return fields
            pos = j + 1
            if pos == n:
                fields.append(b"")
                return fields
        else:
            end = record.find(bytes([delim]), pos)
            if end < 0:
                fields.append(record[pos:])
                return fields
            fields.append(record[pos:end])
            pos = end + 1
            if pos == n:
                fields.append(b"")
                return fields


_INT_RE = re.compile(rb"\s*[+-]?\d+\s*\Z")


def _csv_number(text: bytes, npd, f, i):
    kind = _tf_name(npd)
    if npd.kind == "i":
        if not _INT_RE.match(text):
            raise InvalidArgumentError(f"Field {f} in record {i} is not a valid {kind}: "
                                       f"{text.decode('utf-8', 'replace')}")
        v = int(text)
        info = np.iinfo(npd)
        if not info.min <= v <= info.max:
            raise InvalidArgumentError(f"Field {f} in record {i} is not a valid {kind}: "
                                       f"{text.decode('utf-8', 'replace')}")
        return v
    try:
        s = text.decode("ascii").strip()
        if re.fullmatch(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                        r"([pP][+-]?\d+)?", s):
            return float.fromhex(s)                 # (strtod's hex floats, as TF)
        if not s or s.lower().lstrip("+-") not in ("inf", "infinity", "nan") and \
                not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
            raise ValueError
        return float(s)
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgumentError(f"Field {f} in record {i} is not a valid {kind}: "
                                   f"{text.decode('utf-8', 'replace')}") from None


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, na_value="",
               select_cols=None, name=None):
    """CSV records to one tensor per column, each shaped as ``records``
    (``tf.io.decode_csv``): ``record_defaults`` gives each column's dtype (float32, float64,
    int32, int64, string) and its value for empty fields (an empty default makes the column
    required); ``na_value`` reads as empty; ``select_cols`` keeps those columns."""
    host = _strings(records, "decode_csv")
    if select_cols is not None:
        cols = [int(c) for c in select_cols]
        if any(b <= a for a, b in zip(cols, cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if cols and cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    else:
        cols = None
    if not isinstance(field_delim, (str, bytes)) or len(field_delim) != 1:
        raise InvalidArgumentError("field_delim should be only 1 char")
    delim = ord(field_delim) if isinstance(field_delim, str) else field_delim[0]
    na = na_value.encode("utf-8") if isinstance(na_value, str) else bytes(na_value)
    defaults = []
    for k, d in enumerate(record_defaults):
        t = d if isinstance(d, Tensor) else convert_to_tensor(d)
        npd = t._value.dtype
        if npd.name not in _CSV_TYPES:
            raise InvalidArgumentError(
                f"Value for attr 'OUT_TYPE' of {_tf_name(npd)} is not in the list of allowed "
                "values: float, double, int32, int64, string")
        vals = t._value.reshape(-1) if npd == object else np.asarray(t.numpy()).reshape(-1)
        if vals.size > 1:
            raise InvalidArgumentError(f"There should only be 1 default per field but field "
                                       f"{k} has {vals.size}")
        defaults.append((npd, vals[0] if vals.size else None))
    n_out = len(defaults)
    flat = host.reshape(-1).tolist()
    columns = [[] for _ in range(n_out)]
    for i, rec in enumerate(flat):
        fields = _csv_fields(rec, delim, use_quote_delim, i)
        if cols is None:
            if len(fields) != n_out:
                raise InvalidArgumentError(f"Expect {n_out} fields but have {len(fields)} in "
                                           f"record {i}")
            picked = fields
        else:
            if len(fields) <= cols[-1]:
                raise InvalidArgumentError(f"Expect {cols[-1] + 1} fields but have "
                                           f"{len(fields)} in record {i}")
            picked = [fields[c] for c in cols]
        for f, (text, (npd, default)) in enumerate(zip(picked, defaults)):
            if text == b"" or text == na:
                if default is None:
                    raise InvalidArgumentError(f"Field {f} is required but missing in record "
                                               f"{i}!")
                columns[f].append(default)
            elif npd == object:
                columns[f].append(text)
            else:
                columns[f].append(_csv_number(text, npd, f, i))
    out = []
    for (npd, _), vals in zip(defaults, columns):
        if npd == object:
            arr = np.empty(len(vals), dtype=object)
            arr[:] = vals
            out.append(_string_out(arr.reshape(host.shape)))
        else:
            out.append(_numeric_out(np.asarray(vals, dtype=npd).reshape(host.shape)))
    return out


# --- Example parsing -----------------------------------------------------------------------------

class FixedLenFeature(collections.namedtuple(
        "FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed ``shape`` (``tf.io.FixedLenFeature``): ``dtype`` float32, int64
    or string; ``default_value`` (of ``shape``) for examples without it."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, as_dtype(dtype), default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any length, parsed to a ``SparseTensor`` (``tf.io.VarLenFeature``)."""

    def __new__(cls, dtype):
        return super().__new__(cls, as_dtype(dtype))


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A sequence of items of ``shape`` (``tf.io.FixedLenSequenceFeature``): parsed to
    ``[length, *shape]``, padded with ``default_value`` (or zeros) across a batch."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, as_dtype(dtype), allow_missing, default_value)


_KINDS = {1: "bytes", 2: "float", 3: "int64"}
_KIND_OF_DTYPE = {"float32": "float", "int64": "int64", "string": "bytes"}
_TF_KIND = {"bytes": "string", "float": "float", "int64": "int64"}
_NP_OF_KIND = {"float": np.float32, "int64": np.int64, "bytes": object}


class _BadProto(Exception):
    pass


def _feature_values(buf, a, b):
    """``(kind, values)`` of a serialized Feature (kind None when no list is set)."""
    kind, values = None, None
    for number, wire, value in _proto.fields(buf, a, b):
        if number not in _KINDS or wire != 2:
            continue
        kind = _KINDS[number]
        values = []
        for n2, w2, v2 in _proto.fields(buf, *value):
            if n2 != 1:
                continue
            if kind == "bytes":
                if w2 != 2:
                    raise _BadProto()
                values.append(buf[v2[0]:v2[1]])
            elif kind == "float":
                if w2 == 2:
                    raw = buf[v2[0]:v2[1]]
                    if len(raw) % 4:
                        raise _BadProto()
                    values.extend(np.frombuffer(raw, "<f4").tolist())
                elif w2 == 5:
                    values.append(struct.unpack("<f", v2.to_bytes(4, "little"))[0])
                else:
                    raise _BadProto()
            else:
                if w2 == 2:
                    values.extend(_proto.packed_varints(buf[v2[0]:v2[1]])
                                  .view(np.int64).tolist())
                elif w2 == 0:
                    values.append(_proto._signed64(v2))
                else:
                    raise _BadProto()
    return kind, values


def _features_map(buf, a, b, keys):
    """``{key: (kind, values)}`` of a serialized Features, for the wanted keys."""
    out = {}
    for number, wire, value in _proto.fields(buf, a, b):
        if number != 1 or wire != 2:
            continue
        key, fa = None, None
        for n2, w2, v2 in _proto.fields(buf, *value):
            if n2 == 1 and w2 == 2:
                key = buf[v2[0]:v2[1]].decode("utf-8", "replace")
            elif n2 == 2 and w2 == 2:
                fa = v2
        if key is None:
            key = ""
        if key in keys:
            out[key] = _feature_values(buf, *fa) if fa is not None else (None, None)
    return out


def _feature_lists_map(buf, a, b, keys):
    """``{key: [(kind, values) per step]}`` of a serialized FeatureLists."""
    out = {}
    for number, wire, value in _proto.fields(buf, a, b):
        if number != 1 or wire != 2:
            continue
        key, la = "", None
        for n2, w2, v2 in _proto.fields(buf, *value):
            if n2 == 1 and w2 == 2:
                key = buf[v2[0]:v2[1]].decode("utf-8", "replace")
            elif n2 == 2 and w2 == 2:
                la = v2
        if key in keys:
            steps = []
            if la is not None:
                for n3, w3, v3 in _proto.fields(buf, *la):
                    if n3 == 1 and w3 == 2:
                        steps.append(_feature_values(buf, *v3))
            out[key] = steps
    return out


def _parse_example_bytes(data: bytes, keys):
    try:
        for number, wire, value in _proto.fields(data):
            if number == 1 and wire == 2:
                return _features_map(data, value[0], value[1], keys)
        return {}
    except (_proto.DecodeError, _BadProto):
        raise InvalidArgumentError(f"Could not parse example input, value: "
                                   f"'{data.decode('latin-1')}'") from None


def _parse_sequence_bytes(data: bytes, ckeys, skeys):
    ctx, lists = {}, {}
    try:
        for number, wire, value in _proto.fields(data):
            if number == 1 and wire == 2:
                ctx.update(_features_map(data, value[0], value[1], ckeys))
            elif number == 2 and wire == 2:
                lists.update(_feature_lists_map(data, value[0], value[1], skeys))
    except (_proto.DecodeError, _BadProto):
        raise InvalidArgumentError(f"Could not parse example input, value: "
                                   f"'{data.decode('latin-1')}'") from None
    return ctx, lists


def _spec_kind(spec, key):
    name = spec.dtype.name
    if name not in _KIND_OF_DTYPE:
        raise InvalidArgumentError(f"Value for attr 'Tdense' of {_tf_name(spec.dtype)} is not "
                                   f"in the list of allowed values: float, int64, string "
                                   f"(feature {key!r})")
    return _KIND_OF_DTYPE[name]


def _check_shape(shape, key, spec, sequence=False):
    dims = list(shape) if shape is not None else []
    if dims and dims[0] is None and not sequence:
        raise ValueError(f"First dimension of shape for feature {key} unknown. Consider using "
                         f"FixedLenSequenceFeature. Received feature={spec}.")
    out = []
    for d in dims:
        if d is None:
            raise ValueError(f"All dimensions of shape for feature {key} need to be known "
                             f"but received {shape}.")
        d = int(d)
        if d < 0:
            raise ValueError(f"Dimension {d} must be >= 0")
        out.append(d)
    return out


def _default_array(spec, shape, kind):
    if spec.default_value is None:
        return None
    npd = _NP_OF_KIND[kind]
    if npd is object:
        arr = _string_array(spec.default_value)
    else:
        arr = np.asarray(spec.default_value.numpy() if isinstance(spec.default_value, Tensor)
                         else spec.default_value, dtype=npd)
    n = int(np.prod(shape, dtype=np.int64))
    if arr.size != n:
        raise InvalidArgumentError(f"Input to reshape is a tensor with {arr.size} values, but "
                                   f"the requested shape has {n}")
    return arr.reshape(shape)


def _check_features(features, who):
    if not features:
        raise ValueError("Invalid argument: features cannot be empty.")
    for key, spec in features.items():
        if not isinstance(spec, (FixedLenFeature, VarLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Unsupported {type(spec).__name__} {spec} for key '{key}'")


def _typed(values, kind, npd):
    if npd is object:
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    return np.asarray(values, dtype=npd)


def _mismatch(key, got, kind):
    return InvalidArgumentError(f"Key: {key}.  Data types don't match. Data type: "
                                f"{_TF_KIND[got]} but expected type: {_TF_KIND[kind]}")


def _count_error(key, index, kind, got, n, shape, single):
    """TF's error for a fixed-length feature with the wrong number of values (its
    single-example and batch parsers word it differently)."""
    too_many_bytes = kind == "bytes" and got > n
    if single:
        detail = ("Parsing bytes_list failed." if too_many_bytes
                  else f"Some {kind}_list slice was not parsed.")
        return InvalidArgumentError(f"Key: {key}.  Can't parse serialized Example: {detail}")
    if too_many_bytes:
        return InvalidArgumentError(f"Name: <unknown>, Key: {key}, Index: {index}.  Can't "
                                    "parse serialized Example.")
    return InvalidArgumentError(f"Name: <unknown>, Key: {key}, Index: {index}.  Number of "
                                f"{kind} values != expected.  Values size: {got} but output "
                                f"shape: {_shape_str(shape)}")


def _dense_out(arr, kind):
    return _string_out(arr) if kind == "bytes" else _numeric_out(arr)


def _sparse_out(indices, values, dense_shape, kind):
    from .sparse import SparseTensor
    dev = CPU if kind == "bytes" else current_device()
    idx = Tensor(np.asarray(indices, np.int64).reshape(-1, len(dense_shape)), CPU)
    vals = Tensor(values, CPU)
    shape = Tensor(np.asarray(dense_shape, np.int64), CPU)
    if dev is not CPU:
        idx, vals, shape = (Tensor(dev.asarray(t._value), dev) for t in (idx, vals, shape))
    return SparseTensor(idx, vals, shape)


def _output_order(features):
    """TF's order of the outputs: the VarLen features by key, then the dense ones by key."""
    return sorted(features, key=lambda k: (not isinstance(features[k], VarLenFeature), k))


def _parse_features(parsed, features, single):
    """The parse_example outputs of the examples ``parsed`` (a list of feature maps)."""
    out = {}
    batch = len(parsed)
    for key in _output_order(features):
        spec = features[key]
        kind = _spec_kind(spec, key)
        npd = _NP_OF_KIND[kind]
        if isinstance(spec, VarLenFeature):
            idx, vals, width = [], [], 0
            for b, feats in enumerate(parsed):
                got, values = feats.get(key, (None, None))
                if got is None:
                    continue
                if got != kind:
                    raise InvalidArgumentError(
                        f"Key: {key}.  Data types don't match. Expected type: "
                        f"{_TF_KIND[kind]}, Actual type: {_TF_KIND[got]}")
                width = max(width, len(values))
                idx.extend([j] if single else [b, j] for j in range(len(values)))
                vals.extend(values)
            shape = [width] if single else [batch, width]
            out[key] = _sparse_out(idx, _typed(vals, kind, npd), shape, kind)
        elif isinstance(spec, FixedLenSequenceFeature):
            if not spec.allow_missing:
                raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing "
                                 "to be True.")
            shape = _check_shape(spec.shape, key, spec, sequence=True)
            item = int(np.prod(shape, dtype=np.int64))
            rows = []
            for b, feats in enumerate(parsed):
                got, values = feats.get(key, (None, None))
                if got is None:
                    rows.append(_typed([], kind, npd))
                    continue
                if got != kind:
                    raise _mismatch(key, got, kind)
                if item == 0 and values or item and len(values) % item:
                    raise InvalidArgumentError(
                        f"Error while parsing feature with key {key}: number of elements "
                        f"should be divisible by {item}, found {len(values)} instead")
                rows.append(_typed(values, kind, npd))
            length = max((len(r) // item for r in rows), default=0) if item else 0
            fill = spec.default_value
            if fill is None:
                fill = b"" if npd is object else 0
            elif isinstance(fill, str):
                fill = fill.encode("utf-8")
            arr = np.empty((batch, length * item), dtype=npd)
            arr[...] = fill
            for b, r in enumerate(rows):
                arr[b, :len(r)] = r
            arr = arr.reshape([batch, length] + shape)
            out[key] = _dense_out(arr[0] if single else arr, kind)
        else:
            shape = _check_shape(spec.shape, key, spec)
            n = int(np.prod(shape, dtype=np.int64))
            default = _default_array(spec, shape, kind)
            arr = np.empty([batch] + shape, dtype=npd)
            for b, feats in enumerate(parsed):
                got, values = feats.get(key, (None, None))
                if got is None:
                    if default is None:
                        raise InvalidArgumentError(
                            f"Feature: {key} (data type: {_TF_KIND[kind]}) is required but "
                            "could not be found.")
                    arr[b, ...] = default
                    continue
                if got != kind:
                    raise _mismatch(key, got, kind)
                if len(values) != n:
                    raise _count_error(key, b, kind, len(values), n, shape, single)
                arr[b, ...] = _typed(values, kind, npd).reshape(shape)
            out[key] = _dense_out(arr[0] if single else arr, kind)
    return out


def parse_example(serialized, features, example_names=None, name=None) -> dict:
    """Parse a batch (vector) of serialized ``Example`` protos (``tf.io.parse_example``):
    FixedLenFeature -> ``[batch, *shape]``; VarLenFeature -> SparseTensor with
    ``[batch, max_len]`` dense shape; FixedLenSequenceFeature (``allow_missing=True``) ->
    ``[batch, max_len, *shape]`` padded with its default. A scalar gives one example's
    tensors, as TF."""
    _check_features(features, "parse_example")
    host = _strings(serialized, "parse_example")
    if host.ndim > 1:
        raise InvalidArgumentError(f"Expected serialized to be a scalar or vector, got shape: "
                                   f"{_shape_str(host.shape)}")
    keys = set(features)
    parsed = [_parse_example_bytes(s, keys) for s in host.reshape(-1).tolist()]
    return _parse_features(parsed, features, single=host.ndim == 0)


def parse_single_example(serialized, features, example_names=None, name=None) -> dict:
    """Parse one serialized ``Example`` (``tf.io.parse_single_example``): dense features
    shaped ``shape``, VarLen features as SparseTensors with ``[n, 1]`` indices."""
    host = _strings(serialized, "parse_single_example")
    if host.ndim:
        raise ValueError("Input serialized must be a scalar")
    return parse_example(serialized, features)


def _sequence_parse(host, context_features, sequence_features, single):
    context_features = dict(context_features or {})
    sequence_features = dict(sequence_features or {})
    if not context_features and not sequence_features:
        raise ValueError("Missing features.")
    for key, spec in context_features.items():
        if not isinstance(spec, (FixedLenFeature, VarLenFeature)):
            raise ValueError(f"Unsupported {type(spec).__name__} {spec} for key '{key}'")
    for key, spec in sequence_features.items():
        if not isinstance(spec, (FixedLenSequenceFeature, VarLenFeature)):
            raise ValueError(f"Unsupported {type(spec).__name__} {spec} for key '{key}'")
    examples = [_parse_sequence_bytes(s, set(context_features), set(sequence_features))
                for s in host.reshape(-1).tolist()]
    batch = len(examples)
    context = (_parse_features([c for c, _ in examples], context_features, single)
               if context_features else {})
    lists, lengths = {}, {}
    for key in _output_order(sequence_features):
        spec = sequence_features[key]
        kind = _spec_kind(spec, key)
        npd = _NP_OF_KIND[kind]
        steps_of = []
        for b, (_, fl) in enumerate(examples):
            steps = fl.get(key)
            if steps is None and isinstance(spec, FixedLenSequenceFeature) \
                    and not spec.allow_missing and spec.default_value is None:
                raise InvalidArgumentError(
                    f"Name: <unknown>, Feature list '{key}' is required but could not be "
                    "found.  Did you mean to include it in "
                    "feature_list_dense_missing_assumed_empty or "
                    "feature_list_dense_defaults?")
            steps_of.append(steps or [])
        if isinstance(spec, VarLenFeature):
            idx, vals, t_max, k_max = [], [], 0, 0
            for b, steps in enumerate(steps_of):
                t_max = max(t_max, len(steps))
                for t, (got, values) in enumerate(steps):
                    if got is None:
                        continue
                    if got != kind:
                        raise InvalidArgumentError(
                            f"Name: <unknown>, Feature list: {key}, Index: {t}.  Data types "
                            f"don't match. Expected type: {_TF_KIND[kind]}")
                    k_max = max(k_max, len(values))
                    idx.extend([t, j] if single else [b, t, j] for j in range(len(values)))
                    vals.extend(values)
            shape = [t_max, k_max] if single else [batch, t_max, k_max]
            lists[key] = _sparse_out(idx, _typed(vals, kind, npd), shape, kind)
            continue
        shape = _check_shape(spec.shape, key, spec, sequence=True)
        n = int(np.prod(shape, dtype=np.int64))
        t_max = max((len(s) for s in steps_of), default=0)
        fill = spec.default_value
        if fill is None:
            fill = b"" if npd is object else 0
        elif isinstance(fill, str):
            fill = fill.encode("utf-8")
        arr = np.empty([batch, t_max] + shape, dtype=npd)
        arr[...] = fill
        for b, steps in enumerate(steps_of):
            for t, (got, values) in enumerate(steps):
                if got is not None and got != kind:
                    raise InvalidArgumentError(
                        f"Name: <unknown>, Feature list: {key}, Index: {t}.  Data types don't "
                        f"match. Expected type: {_TF_KIND[kind]}")
            total = sum(len(values or ()) for _, values in steps)
            if n and total % n:
                raise InvalidArgumentError(
                    f"Feature list '{key}' has an unexpected number of values.  Total values "
                    f"size: {total} is not consistent with output shape: "
                    f"[?,{','.join(str(d) for d in shape)}]")
            for t, (got, values) in enumerate(steps):
                values = values or []
                if len(values) != n:
                    raise InvalidArgumentError(
                        f"Name: <unknown>, Key: {key}, Index: {t}.  Number of values != "
                        f"expected.  values size: {len(values)} but output shape: "
                        f"{_shape_str(shape)}")
                arr[b, t, ...] = _typed(values, kind, npd).reshape(shape)
        lists[key] = _dense_out(arr[0] if single else arr, kind)
        lengths[key] = np.asarray([len(s) for s in steps_of], np.int64)
    return context, lists, lengths


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """Parse a batch (vector) of serialized ``SequenceExample`` protos
    (``tf.io.parse_sequence_example``): ``(context, feature_lists, lengths)`` — context as
    parse_example's, FixedLenSequenceFeature lists as ``[batch, max_steps, *shape]`` (padded
    with the default or zeros) with their int64 lengths, VarLen lists as SparseTensors of
    dense shape ``[batch, max_steps, max_values]``."""
    host = _strings(serialized, "parse_sequence_example")
    if host.ndim != 1:
        raise ValueError(f"Input serialized must be a vector, got shape "
                         f"{_shape_str(host.shape)}")
    context, lists, lengths = _sequence_parse(host, context_features, sequence_features,
                                              single=False)
    return context, lists, {k: _numeric_out(v) for k, v in lengths.items()}


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """Parse one serialized ``SequenceExample`` (``tf.io.parse_single_sequence_example``):
    ``(context, feature_lists)``, lists shaped ``[steps, *shape]`` (VarLen:
    SparseTensors of dense shape ``[steps, max_values]``)."""
    host = _strings(serialized, "parse_single_sequence_example")
    if host.ndim:
        raise ValueError("Input serialized must be a scalar")
    context, lists, _ = _sequence_parse(host, context_features, sequence_features,
                                        single=True)
    return context, lists


# --- image formats -------------------------------------------------------------------------------

_PNG_SIG = b"\x89PNG\r\n\x1a\n"


def _sniff(data: bytes):
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == _PNG_SIG:
        return "png"
    if data[:4] == b"GIF8":
        return "gif"
    if data[:2] == b"BM":
        return "bmp"
    return None


_UNKNOWN_FORMAT = ("Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP "
                   "required.")


# ---- PNG ----

class _PngError(Exception):
    pass


def _png_chunks(data: bytes):
    """IHDR fields, the palette, tRNS and the concatenated IDAT data of a PNG."""
    pos, ihdr, plte, trns, idat = 8, None, None, None, []
    n = len(data)
    while pos + 8 <= n:
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) < length:
            raise _PngError("truncated chunk")
        if ctype == b"IHDR":
            if length != 13:
                raise _PngError("bad IHDR")
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"PLTE":
            plte = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif ctype == b"tRNS":
            trns = body
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        raise _PngError("no IHDR")
    return ihdr, plte, trns, b"".join(idat)


_SAMPLES = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_ADAM7 = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2),
          (0, 1, 2, 2), (1, 0, 2, 1))


def _unfilter(raw: bytes, rows: int, row_bytes: int, bpp: int) -> np.ndarray:
    """PNG scanlines unfiltered (Sub and Up vectorized, Average and Paeth byte by byte)."""
    out = np.zeros((rows, row_bytes), np.uint8)
    stride = row_bytes + 1
    if len(raw) < rows * stride:
        raise _PngError("not enough image data")
    buf = np.frombuffer(raw, np.uint8, count=rows * stride).reshape(rows, stride)
    prior = np.zeros(row_bytes, np.uint8)
    for r in range(rows):
        ftype = int(buf[r, 0])
        line = buf[r, 1:]
        if ftype == 0:
            cur = line.copy()
        elif ftype == 1:
            pad = (-row_bytes) % bpp
            cur = np.concatenate([line, np.zeros(pad, np.uint8)]).reshape(-1, bpp)
            cur = np.cumsum(cur, axis=0, dtype=np.uint8).reshape(-1)[:row_bytes]
        elif ftype == 2:
            cur = line + prior
        elif ftype in (3, 4):
            ln, pr = line.tolist(), prior.tolist()
            cur_l = [0] * row_bytes
            for i in range(row_bytes):
                a = cur_l[i - bpp] if i >= bpp else 0
                b = pr[i]
                if ftype == 3:
                    cur_l[i] = (ln[i] + ((a + b) >> 1)) & 0xFF
                else:
                    c = pr[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    cur_l[i] = (ln[i] + pred) & 0xFF
            cur = np.asarray(cur_l, np.uint8)
        else:
            raise _PngError(f"bad filter type {ftype}")
        out[r] = cur
        prior = cur
    return out


def _unpack_samples(rows: np.ndarray, width: int, depth: int, samples: int) -> np.ndarray:
    """Unfiltered scanlines as ``[h, w, samples]`` sample values (uint8 or uint16)."""
    h = rows.shape[0]
    if depth == 16:
        vals = rows.reshape(h, -1).view(">u2").astype(np.uint16)
        return vals[:, :width * samples].reshape(h, width, samples)
    if depth == 8:
        return rows[:, :width * samples].reshape(h, width, samples)
    bits = np.unpackbits(rows, axis=1)
    bits = bits[:, :width * depth * samples].reshape(h, width * samples, depth)
    weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint8)
    vals = (bits * weights).sum(axis=2, dtype=np.uint8)
    return vals.reshape(h, width, samples)


def _png_raw_pillow(ihdr, idat):
    """The unfiltered scanlines through Pillow's decoder, for pixel sizes Pillow has an
    8-bit mode of (1 to 4 bytes), or None."""
    width, height, depth, ctype, _, _, interlace = ihdr
    bits = depth * _SAMPLES[ctype]
    if bits not in (1, 2, 4, 8, 16, 24, 32) or (interlace and bits < 8):
        return None
    try:
        from PIL import Image
    except ImportError:
        return None
    bpp = max(1, bits // 8)
    row_bytes = (width * bits + 7) // 8
    fake_type = {1: 0, 2: 4, 3: 2, 4: 6}[bpp]
    fake_width = row_bytes // bpp if not interlace else width
    head = struct.pack(">IIBBBBB", fake_width, height, 8, fake_type, 0, 0, interlace)
    png = (_PNG_SIG + _chunk(b"IHDR", head) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b""))
    try:
        im = Image.open(_pyio.BytesIO(png))
        im.load()
    except Exception:
        return None
    arr = np.asarray(im, dtype=np.uint8)
    return arr.reshape(height, -1)


def _png_samples(data: bytes):
    """``(samples [h, w, n], depth, colour type, palette, tRNS)`` of a PNG: the samples
    are palette indices, or gray / RGB (+alpha) values at the file's depth (1, 2 and 4-bit
    gray scaled to 8 bits, as libpng's expansion)."""
    ihdr, plte, trns, idat = _png_chunks(data)
    width, height, depth, ctype, _, _, interlace = ihdr
    if ctype not in _SAMPLES or width == 0 or height == 0:
        raise _PngError("bad header")
    samples = _SAMPLES[ctype]
    bits = depth * samples
    bpp = max(1, bits // 8)
    rows = _png_raw_pillow(ihdr, idat)
    if rows is None:
        try:
            raw = zlib.decompress(idat)
        except zlib.error:
            raise _PngError("bad image data") from None
    if rows is not None:
        vals = _unpack_samples(rows, width, depth, samples)
    elif not interlace:
        row_bytes = (width * bits + 7) // 8
        vals = _unpack_samples(_unfilter(raw, height, row_bytes, bpp), width, depth, samples)
    else:
        vals = np.zeros((height, width, samples), np.uint16 if depth == 16 else np.uint8)
        pos = 0
        for y0, x0, dy, dx in _ADAM7:
            ph = (height - y0 + dy - 1) // dy
            pw = (width - x0 + dx - 1) // dx
            if ph <= 0 or pw <= 0:
                continue
            row_bytes = (pw * bits + 7) // 8
            size = ph * (row_bytes + 1)
            sub = _unfilter(raw[pos:pos + size], ph, row_bytes, bpp)
            pos += size
            vals[y0::dy, x0::dx] = _unpack_samples(sub, pw, depth, samples)
    if ctype == 0 and depth < 8:
        gray_trns = None
        if trns is not None and len(trns) >= 2:
            gray_trns = struct.unpack(">H", trns[:2])[0]
        alpha = None if gray_trns is None else np.where(vals == gray_trns, 0, 255)
        vals = (vals.astype(np.uint16) * (255 // ((1 << depth) - 1))).astype(np.uint8)
        return vals, 8, ctype, plte, trns, alpha
    return vals, depth, ctype, plte, trns, None


def _decode_png(data: bytes, channels: int, sixteen: bool) -> np.ndarray:
    """A PNG decoded as TF's ``DecodePng`` (libpng set up by TF's png_io): channels 0 keeps
    the file's (palette: RGB, RGBA with tRNS); gray/RGB/alpha conversions, 16-bit
    stripping, the alpha filler and 8-to-16-bit synthesis as libpng does them."""
    try:
        vals, depth, ctype, plte, trns, gray_alpha = _png_samples(data)
    except (_PngError, struct.error, ValueError):
        raise InvalidArgumentError(f"Invalid PNG data, size {len(data)}") from None
    file_depth = _png_chunks(data)[0][2]
    has_trns = trns is not None
    has_alpha = ctype in (4, 6)
    if channels == 0:
        channels = (4 if has_trns else 3) if ctype == 3 else _SAMPLES[ctype]
    want_alpha = channels % 2 == 0
    # expand: palette to RGB(A), tRNS to alpha
    alpha = None
    if ctype == 3:
        if plte is None:
            raise InvalidArgumentError(f"Invalid PNG data, size {len(data)}")
        idx = vals[..., 0].astype(np.intp)
        pal = np.zeros((256, 3), np.uint8)
        pal[:len(plte)] = plte
        color = pal[idx]
        if has_trns:
            a = np.full(256, 255, np.uint8)
            t = np.frombuffer(trns[:256], np.uint8)
            a[:len(t)] = t
            alpha = a[idx][..., None]
        is_gray = False
        depth = 8
    else:
        is_gray = ctype in (0, 4)
        color = vals[..., :1] if is_gray else vals[..., :3]
        if has_alpha:
            alpha = vals[..., -1:]
        elif has_trns and want_alpha:
            if gray_alpha is not None:
                alpha = gray_alpha.astype(np.uint8)
            else:
                key = struct.unpack(">HHH", trns[:6]) if not is_gray else \
                    struct.unpack(">H", trns[:2])
                match = np.all(color == np.asarray(key, color.dtype), axis=-1, keepdims=True)
                top = 65535 if depth == 16 else 255
                alpha = np.where(match, 0, top).astype(color.dtype)
    if not want_alpha:
        alpha = None
    # rgb to gray (before stripping 16 bits): libpng's integer weights for 0.299, 0.587
    if channels < 3 and not is_gray:
        rc, gc = 9797, 19234
        bc = 32768 - rc - gc
        c = color.astype(np.int64)
        y = rc * c[..., 0] + gc * c[..., 1] + bc * c[..., 2]
        y = (y + 16384) >> 15 if depth == 16 else y >> 15
        same = (c[..., 0] == c[..., 1]) & (c[..., 0] == c[..., 2])
        color = np.where(same, c[..., 0], y).astype(color.dtype)[..., None]
    elif channels >= 3 and is_gray:
        color = np.repeat(color, 3, axis=-1)
    out_depth = depth
    if depth == 16 and not sixteen:
        color = (color >> 8).astype(np.uint8)
        if alpha is not None:
            alpha = (alpha >> 8).astype(np.uint8)
        out_depth = 8
    if want_alpha and alpha is None:
        filler = (1 << file_depth) - 1
        filler = filler & 0xFF if out_depth == 8 else filler & 0xFFFF
        alpha = np.full(color.shape[:2] + (1,), filler, color.dtype)
    img = color if alpha is None else np.concatenate([color, alpha.astype(color.dtype)], -1)
    if sixteen and out_depth == 8:
        img = img.astype(np.uint16) * np.uint16(257)
    return np.ascontiguousarray(img)


def _chunk(ctype: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + ctype + body
            + struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF))


def _filter_rows(img_rows: np.ndarray, bpp: int) -> bytes:
    """The filtered scanlines libpng writes: per row the filter (None, Sub, Up, Average,
    Paeth, in that order of preference) with the smallest sum of bytes taken as signed."""
    h, n = img_rows.shape
    x = img_rows.astype(np.int16)
    prior = np.concatenate([np.zeros((1, n), np.int16), x[:-1]], axis=0)
    left = np.concatenate([np.zeros((h, bpp), np.int16), x[:, :-bpp]], axis=1)
    upleft = np.concatenate([np.zeros((h, bpp), np.int16), prior[:, :-bpp]], axis=1)
    p = left + prior - upleft
    pa, pb, pc = np.abs(p - left), np.abs(p - prior), np.abs(p - upleft)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, upleft))
    cands = np.stack([x, x - left, x - prior, x - ((left + prior) >> 1), x - paeth]) & 0xFF
    cost = np.where(cands < 128, cands, 256 - cands).sum(axis=2)
    big = np.iinfo(cost.dtype).max
    if h == 1:                                  # libpng: no Up, Average, Paeth
        cost[2:] = big
    if n == bpp:                                # one pixel wide: no Sub, Average, Paeth
        cost[[1, 3, 4]] = big
    choice = np.argmin(cost, axis=0)
    rows = cands[choice, np.arange(h)].astype(np.uint8)
    return np.concatenate([choice.astype(np.uint8)[:, None], rows], axis=1).tobytes()


def _encode_png_one(img: np.ndarray, compression: int) -> bytes:
    h, w, c = img.shape
    depth = 16 if img.dtype == np.uint16 else 8
    ctype = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = (img.astype(">u2").view(np.uint8) if depth == 16 else img).reshape(h, -1)
    bpp = c * depth // 8
    filtered = _filter_rows(np.ascontiguousarray(rows), bpp)
    wbits = 15
    size = (rows.shape[1] + 1) * h
    if size <= 16384:
        half = 1 << (wbits - 1)
        while size + 262 <= half:
            half >>= 1
            wbits -= 1
    wbits = max(wbits, 9)
    z = zlib.compressobj(compression, zlib.DEFLATED, wbits, 9, zlib.Z_FILTERED)
    stream = bytearray(z.compress(filtered) + z.flush())
    if size <= 16384 and stream[0] & 0x0F == 8 and stream[0] & 0xF0 <= 0x70:
        # libpng's optimize_cmf: the header claims the smallest window that holds the data
        cinfo = stream[0] >> 4
        half = 1 << (cinfo + 7)
        if size <= half:
            while True:
                half >>= 1
                cinfo -= 1
                if not (cinfo > 0 and size <= half):
                    break
            stream[0] = (stream[0] & 0x0F) | (cinfo << 4)
            flg = stream[1] & 0xE0
            stream[1] = flg + 0x1F - ((stream[0] << 8) + flg) % 0x1F
    stream = bytes(stream)
    out = [_PNG_SIG, _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))]
    for i in range(0, len(stream), 8192):
        out.append(_chunk(b"IDAT", stream[i:i + 8192]))
    out.append(_chunk(b"IEND", b""))
    return b"".join(out)


def encode_png(image, compression=-1, name=None) -> Tensor:
    """PNG-encode a uint8 or uint16 image ``[h, w, c]`` (c in 1..4; leading batch
    dimensions give a string tensor of that shape), as ``tf.io.encode_png``: libpng's
    per-row filter choice and zlib's ``compression`` level (-1: the default)."""
    arr = _host_numeric(image, "encode_png")
    if arr.dtype not in (np.uint8, np.uint16):
        raise InvalidArgumentError(f"Value for attr 'T' of {_tf_name(arr.dtype)} is not in the "
                                   "list of allowed values: uint8, uint16")
    if not -1 <= int(compression) <= 9:
        raise InvalidArgumentError(f"compression should be in [-1,9], got {compression}")
    if arr.ndim < 3:
        raise InvalidArgumentError(f"images must be at least rank 3"
                                   f"{_shape_str(arr.shape)}")
    c = arr.shape[-1]
    if c not in (1, 2, 3, 4):
        raise InvalidArgumentError(f"image must have 1, 2, 3, or 4 channels, got {c}")
    batch = arr.shape[:-3]
    flat = arr.reshape((-1,) + arr.shape[-3:])
    out = np.empty(len(flat), dtype=object)
    for i, img in enumerate(flat):
        if img.shape[0] == 0 or img.shape[1] == 0:
            raise InternalError(f"PNG encoding failed at the following flattened batch "
                                f"indices: {i}")
        out[i] = _encode_png_one(img, int(compression))
    return _string_out(out.reshape(batch) if batch else out[0])


# ---- BMP ----

def _decode_bmp(data: bytes, channels: int) -> np.ndarray:
    """A BMP decoded as TF's ``DecodeBmp``: 8-bit (the raw values as gray, as TF reads
    them), 24-bit and 32-bit images, bottom-up or top-down."""
    try:
        header_size, width, height, _, bpp = struct.unpack("<iiiHH", data[14:30])
        offset = struct.unpack("<I", data[10:14])[0]
    except struct.error:
        raise InvalidArgumentError("Invalid BMP header") from None
    del header_size
    file_ch = bpp // 8
    if bpp % 8 or file_ch not in (1, 3, 4):
        raise InvalidArgumentError(f"Number of channels inherited from bpp field must be 1, 3 "
                                   f"or 4, got {file_ch}")
    if width <= 0 or height == 0:
        raise InvalidArgumentError(f"Invalid BMP dimensions {width}x{height}")
    top_down = height < 0
    h = abs(height)
    row = (8 * file_ch * width + 31) // 32 * 4
    need = offset + row * h
    if len(data) < need:
        raise InvalidArgumentError(f"Input size should be at least {need} bytes, got "
                                   f"{len(data)}")
    px = np.frombuffer(data, np.uint8, count=row * h, offset=offset).reshape(h, row)
    px = px[:, :width * file_ch].reshape(h, width, file_ch)
    if not top_down:
        px = px[::-1]
    if file_ch >= 3:
        px = np.concatenate([px[..., 2::-1], px[..., 3:]], axis=-1)
    channels = channels or file_ch
    if file_ch == 1 and channels >= 3:
        px = np.repeat(px, 3, axis=-1)
    if px.shape[-1] == 3 and channels == 4:
        px = np.concatenate([px, np.full(px.shape[:2] + (1,), 255, np.uint8)], -1)
    elif px.shape[-1] == 4 and channels == 3:
        px = px[..., :3]
    return np.ascontiguousarray(px)


# ---- JPEG ----

def _jpeg_fail():
    return InvalidArgumentError("jpeg::Uncompress failed. Invalid JPEG data or crop window.")


def _fancy_h2v2(p: np.ndarray, h: int, w: int) -> np.ndarray:
    """libjpeg's triangle-filter upsampling of a chroma plane by 2 both ways."""
    p = p.astype(np.int32)
    up = np.concatenate([p[:1], p[:-1]], 0)
    down = np.concatenate([p[1:], p[-1:]], 0)
    out = np.empty((2 * p.shape[0], 2 * p.shape[1]), np.int32)
    for v, near in ((0, up), (1, down)):
        c = 3 * p + near
        left = np.concatenate([c[:, :1], c[:, :-1]], 1)
        right = np.concatenate([c[:, 1:], c[:, -1:]], 1)
        out[v::2, 0::2] = (3 * c + left + 8) >> 4
        out[v::2, 1::2] = (3 * c + right + 7) >> 4
    return out[:h, :w]


def _fancy_h2v1(p: np.ndarray, h: int, w: int) -> np.ndarray:
    """libjpeg's triangle-filter upsampling of a chroma plane by 2 horizontally."""
    p = p.astype(np.int32)
    left = np.concatenate([p[:, :1], p[:, :-1]], 1)
    right = np.concatenate([p[:, 1:], p[:, -1:]], 1)
    out = np.empty((p.shape[0], 2 * p.shape[1]), np.int32)
    out[:, 0::2] = (3 * p + left + 1) >> 2
    out[:, 1::2] = (3 * p + right + 2) >> 2
    out[:, 0] = p[:, 0]
    out[:, -1] = p[:, -1]
    return out[:h, :w]


def _fancy_h1v2(p: np.ndarray, h: int, w: int) -> np.ndarray:
    """libjpeg-turbo's triangle-filter upsampling of a chroma plane by 2 vertically."""
    p = p.astype(np.int32)
    up = np.concatenate([p[:1], p[:-1]], 0)
    down = np.concatenate([p[1:], p[-1:]], 0)
    out = np.empty((2 * p.shape[0], p.shape[1]), np.int32)
    out[0::2] = (3 * p + up + 1) >> 2
    out[1::2] = (3 * p + down + 2) >> 2
    return out[:h, :w]


def _ycc_to_rgb(y, cb, cr) -> np.ndarray:
    """libjpeg's YCbCr -> RGB conversion (16-bit fixed point, rounded as its tables)."""
    one_half = 1 << 15

    def fix(x):
        return int(x * 65536 + 0.5)
    cb = cb.astype(np.int64) - 128
    cr = cr.astype(np.int64) - 128
    y = y.astype(np.int64)
    r = y + ((fix(1.40200) * cr + one_half) >> 16)
    g = y + ((-fix(0.34414) * cb - fix(0.71414) * cr + one_half) >> 16)
    b = y + ((fix(1.77200) * cb + one_half) >> 16)
    return np.clip(np.stack([r, g, b], -1), 0, 255).astype(np.uint8)


def _jpeg_open(data: bytes, mode, ratio: int, fast: bool):
    """A Pillow JPEG image set up to decode in ``mode`` at 1/``ratio`` scale; ``fast``:
    libjpeg's fast integer IDCT without fancy upsampling (Pillow's draft decoding)."""
    Image = _pil("decode_jpeg")
    try:
        im = Image.open(_pyio.BytesIO(data))
    except Exception:
        raise _jpeg_fail() from None
    if im.format != "JPEG":
        raise _jpeg_fail()
    if mode is not None and im.mode == "RGB" and mode in ("L", "YCbCr"):
        im.draft(mode, None)
    if len(im.tile) == 1 and (ratio > 1 or fast):
        t = im.tile[0]
        e = t[1]
        if ratio > 1:
            e = (e[0], e[1], (e[2] - e[0] + ratio - 1) // ratio + e[0],
                 (e[3] - e[1] + ratio - 1) // ratio + e[1])
            im._size = ((im.size[0] + ratio - 1) // ratio, (im.size[1] + ratio - 1) // ratio)
        im.tile = [t._replace(extents=e) if hasattr(t, "_replace") else (t[0], e, t[2], t[3])]
        im.decoderconfig = (ratio, 1 if fast else 0)
    return im


def _jpeg_load(im, recover):
    from PIL import ImageFile
    old = ImageFile.LOAD_TRUNCATED_IMAGES
    try:
        ImageFile.LOAD_TRUNCATED_IMAGES = bool(recover)
        im.load()
    except Exception:
        raise _jpeg_fail() from None
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = old
    return np.asarray(im)


def _jpeg_scaling(layers, ratio):
    """libjpeg-turbo's IDCT size of each component at 1/``ratio`` scale (chroma is scaled up
    by the IDCT where the sampling factors allow) and the upsampling left to do:
    ``[(h_expand, v_expand, idct_size)]``."""
    hmax = max(lay[1] for lay in layers)
    vmax = max(lay[2] for lay in layers)
    low = 8 // ratio
    out = []
    for _, h, v, _ in layers:
        size = low
        while size < 8 and (hmax * low) % (h * size * 2) == 0 \
                and (vmax * low) % (v * size * 2) == 0:
            size *= 2
        out.append(((hmax * low) // (h * size), (vmax * low) // (v * size), size))
    return out, hmax * low


_FANCY = {(2, 2): _fancy_h2v2, (2, 1): _fancy_h2v1, (1, 2): _fancy_h1v2}


def _jpeg_planes(data, ratio, fast, layers, scaling, recover):
    """The luma plane and the chroma planes at their decoded (not upsampled) resolution,
    with the IDCT TF asks for, or None where libjpeg cannot be made to give them: the fast
    IDCT's come from draft decoding (chroma replicated, so every ``expand``-th sample); the
    accurate IDCT's chroma from decoding at half the scale, where libjpeg scales chroma by
    its IDCT instead of upsampling it, when that IDCT has the same size."""
    if fast:
        ycc = _jpeg_load(_jpeg_open(data, "YCbCr", ratio, True), recover)
        return ycc[..., 0], [ycc[::scaling[k][1], ::scaling[k][0], k] for k in (1, 2)]
    if ratio * 2 > 8:
        return None
    half, _ = _jpeg_scaling(layers, ratio * 2)
    if any(half[k][:2] != (1, 1) or half[k][2] != scaling[k][2] for k in (1, 2)):
        return None
    y = _jpeg_load(_jpeg_open(data, "YCbCr", ratio, False), recover)[..., 0]
    c = _jpeg_load(_jpeg_open(data, "YCbCr", ratio * 2, False), recover)
    return y, [c[..., 1], c[..., 2]]


def _decode_jpeg(data, channels, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                 acceptable_fraction=1, dct_method="", crop=None):
    """A JPEG decoded as TF's ``DecodeJpeg`` / ``DecodeAndCropJpeg`` (``crop``: ``(y, x,
    h, w)``): libjpeg's IDCT through Pillow, with the chroma upsampling and the colour
    conversion redone here as libjpeg computes them where Pillow cannot ask for TF's
    combination (see the module docstring)."""
    if ratio not in (1, 2, 4, 8):
        raise InvalidArgumentError(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    if dct_method not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
        raise InvalidArgumentError("dct_method must be one of {'', 'INTEGER_FAST', "
                                   "'INTEGER_ACCURATE'}")
    if channels == 4:
        raise InvalidArgumentError("JPEG does not support 4 channels")
    fast = dct_method != "INTEGER_ACCURATE"
    recover = try_recover_truncated
    probe = _jpeg_open(data, None, 1, False)
    file_mode, layers = probe.mode, list(getattr(probe, "layer", []))

    def cropped(img):
        if crop is None:
            return img
        y, x, h, w = crop
        if y < 0 or x < 0 or h <= 0 or w <= 0 or y + h > img.shape[0] \
                or x + w > img.shape[1]:
            raise _jpeg_fail()
        return np.ascontiguousarray(img[y:y + h, x:x + w])

    if channels == 1 or (channels == 0 and file_mode == "L"):
        return cropped(_jpeg_load(_jpeg_open(data, "L", ratio, fast), recover)[..., None])
    if file_mode == "L":
        px = _jpeg_load(_jpeg_open(data, None, ratio, fast), recover)
        return cropped(np.repeat(px[..., None], 3, axis=-1))
    if file_mode != "RGB" or len(layers) != 3:
        im = _jpeg_open(data, None, ratio, fast)
        _jpeg_load(im, recover)
        return cropped(np.asarray(im.convert("RGB")))
    scaling, align = _jpeg_scaling(layers, ratio)
    expands = [s[:2] for s in scaling]
    if expands[0] != (1, 1) or all(e == (1, 1) for e in expands[1:]):
        return cropped(_jpeg_load(_jpeg_open(data, None, ratio, fast), recover))
    exact_up = all(e == (1, 1) or e in _FANCY for e in expands[1:])
    if not fast and fancy_upscaling and crop is None:
        return _jpeg_load(_jpeg_open(data, None, ratio, False), recover)
    planes = _jpeg_planes(data, ratio, fast, layers, scaling, recover) if exact_up \
        else None
    if planes is None:
        # libjpeg cannot be asked for these planes: the nearest decoding Pillow offers
        return cropped(_jpeg_load(_jpeg_open(data, None, ratio, fast or not fancy_upscaling),
                                  recover))
    y_plane, chroma = planes
    h_full, w_full = y_plane.shape
    x0, width = 0, w_full
    if crop is not None:
        cy, cx, ch, cw = crop
        if cy < 0 or cx < 0 or ch <= 0 or cw <= 0 or cy + ch > h_full or cx + cw > w_full:
            raise _jpeg_fail()
        # jpeg_crop_scanline: the window starts at an iMCU column and its edges are the
        # upsampler's image edges
        x0 = (cx // align) * align
        width = cw + cx - x0
    out = [y_plane[:, x0:x0 + width]]
    for k, (eh, ev) in zip((1, 2), expands[1:]):
        p = chroma[k - 1]
        p = p[:, x0 // eh:x0 // eh + -(-width // eh)]
        if (eh, ev) == (1, 1):
            out.append(p[:h_full, :width])
        elif fancy_upscaling and ratio < 8:      # (libjpeg: no fancy 1x1 IDCT output)
            out.append(_FANCY[(eh, ev)](p, h_full, width))
        else:
            out.append(np.repeat(np.repeat(p, ev, axis=0), eh, axis=1)[:h_full, :width])
    rgb = _ycc_to_rgb(*out)
    if crop is not None:
        cy, cx, ch, cw = crop
        rgb = np.ascontiguousarray(rgb[cy:cy + ch, cx - x0:cx - x0 + cw])
    return rgb


_SOF = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_header(data: bytes):
    """``(height, width, components)`` from a JPEG's frame header, or None."""
    if data[:2] != b"\xff\xd8":
        return None
    pos, n = 2, len(data)
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        length = struct.unpack(">H", data[pos + 2:pos + 4])[0]
        if marker in _SOF:
            if pos + 10 > n:
                return None
            h, w = struct.unpack(">HH", data[pos + 5:pos + 9])
            return h, w, data[pos + 9]
        if marker == 0xDA:
            return None
        pos += 2 + length
    return None


def extract_jpeg_shape(contents, output_type="int32", name=None) -> Tensor:
    """``[height, width, channels]`` of a JPEG, read from its header
    (``tf.io.extract_jpeg_shape``)."""
    data = _scalar_bytes(contents, "extract_jpeg_shape", "contents")
    dt = np.dtype(as_dtype(output_type).as_numpy_dtype)
    if dt not in (np.int32, np.int64):
        raise InvalidArgumentError(f"Value for attr 'output_type' of {_tf_name(dt)} is not in "
                                   "the list of allowed values: int32, int64")
    shape = _jpeg_header(data)
    if shape is None or not shape[0] or not shape[1]:
        raise InvalidArgumentError(f"Invalid JPEG data, size {len(data)}")
    return _numeric_out(np.asarray(shape, dt))


def is_jpeg(contents, name=None) -> Tensor:
    """Whether each string starts as a JPEG does (``tf.io.is_jpeg``)."""
    host = _strings(contents, "is_jpeg")
    flat = [s[:3] == b"\xff\xd8\xff" for s in host.reshape(-1).tolist()]
    return _numeric_out(np.asarray(flat, np.bool_).reshape(host.shape))


# ---- GIF ----

def _lzw(data: bytes, min_size: int, count: int) -> bytes:
    """GIF's variable-length LZW decoding (codes least significant bit first)."""
    clear, end = 1 << min_size, (1 << min_size) + 1
    table = [bytes([i]) for i in range(clear)] + [b"", b""]
    size, out, prev = min_size + 1, bytearray(), None
    acc = nbits = 0
    for byte in data:
        acc |= byte << nbits
        nbits += 8
        while nbits >= size:
            code = acc & ((1 << size) - 1)
            acc >>= size
            nbits -= size
            if code == clear:
                table = table[:end + 1]
                size, prev = min_size + 1, None
                continue
            if code == end:
                return bytes(out[:count])
            if code < len(table):
                entry = table[code]
                if prev is not None:
                    table.append(prev + entry[:1])
            elif prev is not None and code == len(table):
                entry = prev + prev[:1]
                table.append(entry)
            else:
                raise ValueError("bad LZW code")
            out += entry
            prev = entry
            if len(table) == 1 << size and size < 12:
                size += 1
            if len(out) >= count:
                return bytes(out[:count])
    return bytes(out[:count])


def _gif_blocks(data: bytes, pos: int):
    out = bytearray()
    while True:
        n = data[pos]
        pos += 1
        if n == 0:
            return bytes(out), pos
        out += data[pos:pos + n]
        pos += n


def _decode_gif(data: bytes) -> np.ndarray:
    """The frames of a GIF, ``[frames, h, w, 3]``, as TF's ``DecodeGif`` (giflib): each
    frame starts as a copy of the previous one (the first as black) and its pixels are drawn
    over it, except those of its transparent colour index; disposal methods are not
    applied."""
    try:
        width, height, packed = struct.unpack("<HHB", data[6:11])
        pos = 13
        global_map = None
        if packed & 0x80:
            n = 3 << ((packed & 7) + 1)
            global_map = np.frombuffer(data[pos:pos + n], np.uint8).reshape(-1, 3)
            pos += n
        frames, transparent = [], -1
        canvas = np.zeros((height, width, 3), np.uint8)
        while pos < len(data):
            kind = data[pos]
            pos += 1
            if kind == 0x3B:
                break
            if kind == 0x21:
                label = data[pos]
                block, pos = _gif_blocks(data, pos + 1)
                if label == 0xF9 and len(block) >= 4:
                    transparent = block[3] if block[0] & 1 else -1
                continue
            if kind != 0x2C:
                raise ValueError("bad block")
            left, top, w, h, fpacked = struct.unpack("<HHHHB", data[pos:pos + 9])
            pos += 9
            cmap = global_map
            if fpacked & 0x80:
                n = 3 << ((fpacked & 7) + 1)
                cmap = np.frombuffer(data[pos:pos + n], np.uint8).reshape(-1, 3)
                pos += n
            min_size = data[pos]
            lzw, pos = _gif_blocks(data, pos + 1)
            idx = np.frombuffer(_lzw(lzw, min_size, w * h).ljust(w * h, b"\0"), np.uint8)
            idx = idx.reshape(h, w)
            if fpacked & 0x40:
                order = np.concatenate([np.arange(0, h, 8), np.arange(4, h, 8),
                                        np.arange(2, h, 4), np.arange(1, h, 2)])
                rows = np.empty_like(idx)
                rows[order] = idx
                idx = rows
            if cmap is None:
                raise ValueError("no colour map")
            frame = canvas.copy() if frames else np.zeros_like(canvas)
            y1, x1 = min(top + h, height), min(left + w, width)
            sub = idx[:max(0, y1 - top), :max(0, x1 - left)]
            pal = np.zeros((256, 3), np.uint8)
            pal[:len(cmap)] = cmap
            region = frame[top:y1, left:x1]
            keep = sub == transparent
            drawn = pal[sub]
            if not frames:
                drawn[keep] = 0
                region[...] = drawn
            else:
                region[...] = np.where(keep[..., None], region, drawn)
            frames.append(frame)
            canvas = frame
            transparent = -1
        if not frames:
            raise ValueError("no frames")
    except (ValueError, IndexError, struct.error):
        raise InvalidArgumentError("Failed to decode gif: invalid GIF data") from None
    return np.stack(frames)


# ---- decode ops ----

_F32 = np.float32


def _check_channels(channels, op):
    channels = int(channels or 0)
    if channels not in (0, 1, 3, 4):
        raise InvalidArgumentError(f"`channels` must be 0, 1, 3 or 4 but got {channels}")
    return channels


def _decode(contents, op, channels, dtype, expand_animations, jpeg_args=None):
    """TF's ``DecodeImageV2`` kernel: the format from the bytes, 3-D images (GIF: 4-D when
    ``expand_animations``), uint8, uint16 or float32."""
    data = _scalar_bytes(contents, op, "`contents`")
    npd = np.dtype(as_dtype(dtype).as_numpy_dtype)
    if npd not in (np.uint8, np.uint16, np.float32):
        raise InvalidArgumentError(f"Value for attr 'dtype' of {_tf_name(npd)} is not in the "
                                   "list of allowed values: uint8, uint16, float32")
    fmt = _sniff(data)
    if op == "DecodeBmp":
        if fmt != "bmp":
            if fmt is None:
                raise InvalidArgumentError(_UNKNOWN_FORMAT)
            raise InvalidArgumentError(f"Trying to decode {fmt.upper()} format using DecodeBmp "
                                       f"op. Use `decode_{fmt}` or `decode_image` instead.")
    else:
        channels = _check_channels(channels, op)
    if fmt is None:
        raise InvalidArgumentError(_UNKNOWN_FORMAT)
    if fmt == "png":
        img = _decode_png(data, channels, npd != np.uint8)
        if op == "DecodeGif":
            img = img[None]
        if npd == np.float32:
            return img.astype(np.float32) * _F32(1.0 / 65535)
        return img
    if fmt == "jpeg":
        img = _decode_jpeg(data, channels, **(jpeg_args or {}))
    elif fmt == "bmp":
        if channels not in (0, 3, 4):
            raise InvalidArgumentError(f"`channels` must be 0, 3 or 4 for BMP, but got "
                                       f"{channels}")
        img = _decode_bmp(data, channels)
    else:
        if channels not in (0, 3):
            raise InvalidArgumentError(f"channels must be 0 or 3 for GIF, got {channels}")
        img = _decode_gif(data)
        if not expand_animations:
            img = img[0]
    if fmt != "gif" and op == "DecodeGif":
        img = img[None]
    if npd == np.uint16:
        return img.astype(np.uint16) * np.uint16(256)
    if npd == np.float32:
        return img.astype(np.float32) * _F32(1.0 / 255)
    return img


def decode_png(contents, channels=0, dtype="uint8", name=None) -> Tensor:
    """Decode a PNG (``tf.io.decode_png``) to ``[h, w, channels]`` uint8 or uint16:
    ``channels`` 0 (the file's), 1, 3 or 4; TF decodes other formats here too."""
    return _numeric_out(_decode(contents, "DecodePng", channels, dtype, False))


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                name=None) -> Tensor:
    """Decode a JPEG (``tf.io.decode_jpeg``) to ``[h, w, channels]`` uint8 (``ratio``:
    libjpeg's 1/2, 1/4, 1/8 scaling; ``dct_method`` ``""``/``"INTEGER_FAST"`` or
    ``"INTEGER_ACCURATE"``)."""
    args = dict(ratio=int(ratio), fancy_upscaling=bool(fancy_upscaling),
                try_recover_truncated=bool(try_recover_truncated),
                acceptable_fraction=acceptable_fraction, dct_method=dct_method)
    return _numeric_out(_decode(contents, "DecodeJpeg", channels, "uint8", False, args))


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None) -> Tensor:
    """Decode the ``crop_window`` ``[y, x, height, width]`` of a JPEG
    (``tf.io.decode_and_crop_jpeg``), as libjpeg's cropped decoding (the window's left edge
    moved to an iMCU column, its edges upsampled as image edges)."""
    win = np.asarray(_host_numeric(crop_window, "decode_and_crop_jpeg")).reshape(-1)
    if win.size != 4:
        raise InvalidArgumentError(f"crop_size must have four elements [{win.size}]")
    args = dict(ratio=int(ratio), fancy_upscaling=bool(fancy_upscaling),
                try_recover_truncated=bool(try_recover_truncated),
                acceptable_fraction=acceptable_fraction, dct_method=dct_method,
                crop=tuple(int(v) for v in win))
    data = _scalar_bytes(contents, "decode_and_crop_jpeg", "`contents`")
    if _sniff(data) != "jpeg":
        raise _jpeg_fail()
    channels = _check_channels(channels, "DecodeAndCropJpeg")
    return _numeric_out(_decode_jpeg(data, channels, **args))


def decode_bmp(contents, channels=0, name=None) -> Tensor:
    """Decode a BMP (``tf.io.decode_bmp``) to ``[h, w, channels]`` uint8 (``channels`` 0,
    3 or 4)."""
    data = _scalar_bytes(contents, "decode_bmp", "`contents`")
    if int(channels) not in (0, 3, 4):
        raise InvalidArgumentError(f"`channels` must be 0, 3 or 4 for BMP, but got "
                                   f"{channels}")
    return _numeric_out(_decode(data, "DecodeBmp", int(channels), "uint8", False))


def decode_gif(contents, name=None) -> Tensor:
    """Decode a GIF (``tf.io.decode_gif``) to ``[frames, h, w, 3]`` uint8."""
    return _numeric_out(_decode(contents, "DecodeGif", 0, "uint8", True))


def decode_image(contents, channels=None, dtype="uint8", name=None,
                 expand_animations=True) -> Tensor:
    """Decode a BMP, GIF, JPEG or PNG by its contents (``tf.io.decode_image``): 3-D
    images, GIFs 4-D unless ``expand_animations=False`` (then their first frame); dtypes
    other than uint8, uint16 and float32 go through ``gt.image.convert_image_dtype``."""
    dt = as_dtype(dtype)
    native = np.dtype(dt.as_numpy_dtype) in (np.uint8, np.uint16, np.float32)
    img = _decode(contents, "DecodeImage", 0 if channels is None else channels,
                  dt if native else "uint16", expand_animations)
    out = _numeric_out(img)
    if not native:
        from .image import convert_image_dtype
        out = convert_image_dtype(out, dt)
    return out


_DENSITY_UNITS = {"in": 1, "cm": 2}


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None) -> Tensor:
    """JPEG-encode a uint8 image ``[h, w, 1 or 3]`` (``tf.io.encode_jpeg``) with libjpeg
    through Pillow: ``quality``, 4:2:0 chroma (or 4:4:4), progressive and optimized coding,
    the JFIF density and XMP metadata as TF writes them."""
    Image = _pil("encode_jpeg")
    arr = _host_numeric(image, "encode_jpeg")
    if arr.dtype != np.uint8:
        arr = np.asarray(convert_to_tensor(arr, "uint8").numpy())
    if arr.ndim != 3 or arr.shape[2] not in (1, 3):
        raise InvalidArgumentError(f"image must have 1 or 3 channels, got "
                                   f"{_shape_str(arr.shape)}")
    if format not in ("", "grayscale", "rgb"):
        raise InvalidArgumentError(f'Value for attr \'format\' of "{format}" is not in the '
                                   'list of allowed values: "", "grayscale", "rgb"')
    want = {"grayscale": 1, "rgb": 3}.get(format)
    if want is not None and arr.shape[2] != want:
        raise InvalidArgumentError(f"format {format} expects {want} channels, got "
                                   f"{_shape_str(arr.shape)}")
    if not 0 <= int(quality) <= 100:
        raise InvalidArgumentError(f"quality must be in [0,100], got {quality}")
    if density_unit not in _DENSITY_UNITS:
        raise InvalidArgumentError(f'Value for attr \'density_unit\' of "{density_unit}" is '
                                   'not in the list of allowed values: "in", "cm"')
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InternalError("JPEG encoding failed")
    im = Image.fromarray(arr[..., 0] if arr.shape[2] == 1 else arr,
                         "L" if arr.shape[2] == 1 else "RGB")
    kw = dict(quality=int(quality), progressive=bool(progressive),
              optimize=bool(optimize_size), dpi=(int(x_density), int(y_density)))
    if arr.shape[2] == 3:
        kw["subsampling"] = 2 if chroma_downsampling else 0
    if xmp_metadata:
        kw["xmp"] = xmp_metadata.encode("utf-8") if isinstance(xmp_metadata, str) \
            else bytes(xmp_metadata)
    buf = _pyio.BytesIO()
    im.save(buf, "JPEG", **kw)
    data = bytearray(buf.getvalue())
    if data[2:4] == b"\xff\xe0" and data[6:11] == b"JFIF\0":
        data[13] = _DENSITY_UNITS[density_unit]
    return _string_out(bytes(data))

