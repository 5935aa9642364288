"""TensorFlow 2's remaining small top-level names: ``tf.matrix_square_root``, ``tf.eig``,
``tf.eigvals``, the raw n-D FFT ops (``tf.fftnd`` and kin), ``tf.bitcast``,
``tf.fingerprint``, ``tf.timestamp``, ``tf.edit_distance``, ``tf.extract_volume_patches``,
``tf.random_index_shuffle``, ``tf.math.approx_max_k`` / ``approx_min_k``, and
``tf.train.get_checkpoint_state`` / ``CheckpointOptions``."""
from __future__ import annotations

import time

import numpy as np

from .backend import CPU, current_device
from .dtypes import as_dtype
from .ops._util import as_tensor, dtype_name
from .ops.linalg import eig as _eig, eigvals as _eigvals, sqrtm as _sqrtm
from .registry import InvalidArgumentError, apply1, defop
from .tensor import Tensor, convert_to_tensor

__all__ = ["matrix_square_root", "eig", "eigvals", "fftnd", "ifftnd", "rfftnd", "irfftnd",
           "bitcast", "fingerprint", "timestamp", "edit_distance", "extract_volume_patches",
           "random_index_shuffle", "approx_max_k", "approx_min_k", "CheckpointState",
           "get_checkpoint_state", "CheckpointOptions"]


def _host_out(host: np.ndarray) -> Tensor:
    """A result computed on the host, placed on the current device."""
    dev = current_device()
    return Tensor(host if dev is CPU else dev.asarray(host), dev)


# --- linear algebra aliases -------------------------------------------------------------------

def matrix_square_root(input, name=None) -> Tensor:  # noqa: A002
    """``tf.matrix_square_root``: the principal square root of each matrix (see
    :func:`gradtape.linalg.sqrtm`)."""
    return _sqrtm(input)


def eig(tensor, name=None):
    """``tf.eig``: eigenvalues and eigenvectors (see :func:`gradtape.linalg.eig`)."""
    return _eig(tensor)


def eigvals(tensor, name=None) -> Tensor:
    """``tf.eigvals``: eigenvalues (see :func:`gradtape.linalg.eigvals`)."""
    return _eigvals(tensor)


# --- the raw n-D FFT ops ----------------------------------------------------------------------

def _raw_complex(x, opname):
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if t._value.dtype not in (np.complex64, np.complex128):
        raise InvalidArgumentError(f"{opname}: input must be complex64 or complex128, got "
                                   f"{dtype_name(t)}")
    return t


def _raw_real(x, opname):
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if t._value.dtype not in (np.float32, np.float64):
        raise InvalidArgumentError(f"{opname}: input must be float32 or float64, got "
                                   f"{dtype_name(t)}")
    return t


def _int_list(v, opname, what):
    if isinstance(v, Tensor):
        v = v.numpy()
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{opname}: {what} must be a vector of ints, got {v!r}")
    return [int(a) for a in arr]


def _nd_args(opname, fft_length, axes):
    n = _int_list(fft_length, opname, "fft_length")
    ax = _int_list(axes, opname, "axes")
    if len(n) != len(ax):
        raise InvalidArgumentError(f"{opname}: fft_length and axes must have the same length, "
                                   f"got {n} and {ax}")
    return n, ax


def fftnd(input, fft_length, axes, name=None) -> Tensor:  # noqa: A002
    """``tf.fftnd`` (the raw ``FFTND`` op): the n-D FFT of a complex tensor over ``axes``,
    each cropped or zero-padded to ``fft_length`` first; both arguments are required."""
    from .signal import fftnd as _f
    x = _raw_complex(input, "fftnd")
    n, ax = _nd_args("fftnd", fft_length, axes)
    return _f(x, n, ax)


def ifftnd(input, fft_length, axes, name=None) -> Tensor:  # noqa: A002
    """``tf.ifftnd``: the inverse of :func:`fftnd` (divided by the product of the
    lengths)."""
    from .signal import ifftnd as _f
    x = _raw_complex(input, "ifftnd")
    n, ax = _nd_args("ifftnd", fft_length, axes)
    return _f(x, n, ax)


_PAIRS = {np.dtype(np.float32): np.dtype(np.complex64),
          np.dtype(np.float64): np.dtype(np.complex128)}


def rfftnd(input, fft_length, axes, Tcomplex=None, name=None) -> Tensor:  # noqa: A002
    """``tf.rfftnd``: the n-D FFT of a real tensor (the last axis keeps its
    ``fft_length // 2 + 1`` bins); ``Tcomplex`` (default complex64) must pair with the
    input's precision (float32 -> complex64, float64 -> complex128)."""
    from .signal import rfftnd as _f
    x = _raw_real(input, "rfftnd")
    n, ax = _nd_args("rfftnd", fft_length, axes)
    want = np.dtype(as_dtype(Tcomplex if Tcomplex is not None else "complex64").as_numpy_dtype)
    if _PAIRS[x._value.dtype] != want:
        raise InvalidArgumentError(f"rfftnd: Tcomplex {want.name} does not pair with input "
                                   f"dtype {dtype_name(x)}")
    return _f(x, n, ax)


def irfftnd(input, fft_length, axes, Treal=None, name=None) -> Tensor:  # noqa: A002
    """``tf.irfftnd``: the inverse of :func:`rfftnd`, a real signal of ``fft_length``
    samples on ``axes``; ``Treal`` (default float32) must pair with the input's
    precision."""
    from .signal import irfftnd as _f
    x = _raw_complex(input, "irfftnd")
    n, ax = _nd_args("irfftnd", fft_length, axes)
    want = np.dtype(as_dtype(Treal if Treal is not None else "float32").as_numpy_dtype)
    if want not in _PAIRS or _PAIRS[want] != x._value.dtype:
        raise InvalidArgumentError(f"irfftnd: Treal {want.name} does not pair with input "
                                   f"dtype {dtype_name(x)}")
    return _f(x, n, ax)


# --- bitcast, fingerprint, timestamp ----------------------------------------------------------

# TensorFlow's DataType enum values (its error messages name dtypes by them)
_TF_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
            "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18,
            "float16": 19, "uint32": 22, "uint64": 23}


def _bitcast_fwd(xp, x, dtype, shape):
    return xp.ascontiguousarray(x).view(np.dtype(dtype)).reshape(shape)


_bitcast = defop("bitcast", _bitcast_fwd, None, nondiff=True)


def bitcast(input, type, name=None) -> Tensor:  # noqa: A002
    """``tf.bitcast``: the bytes of ``input`` read as dtype ``type``. A wider type consumes
    the last axis (which must hold exactly the size ratio), a narrower one adds a last axis
    of that ratio; bool and string tensors are refused, as TF."""
    x = as_tensor(input, "bitcast")
    src = x._value.dtype
    dst = np.dtype(as_dtype(type).as_numpy_dtype)
    for d, who in ((src, "T"), (dst, "type")):
        if d.name not in _TF_ENUM or d.kind == "b":
            raise InvalidArgumentError(f"bitcast: Value for attr '{who}' of {d.name} is not in "
                                       f"the list of allowed values")
    shape = tuple(x._value.shape)
    if src.itemsize > dst.itemsize:
        shape = shape + (src.itemsize // dst.itemsize,)
    elif src.itemsize < dst.itemsize:
        ratio = dst.itemsize // src.itemsize
        if not shape or shape[-1] != ratio:
            raise InvalidArgumentError(f"Cannot bitcast from {_TF_ENUM[src.name]} to "
                                       f"{_TF_ENUM[dst.name]}")
        shape = shape[:-1]
    return apply1(_bitcast, x, {"dtype": dst.name, "shape": shape})


def fingerprint(data, method="farmhash64", name=None) -> Tensor:
    """``tf.fingerprint``: a uint8 ``[rows, 8]`` tensor, the little-endian FarmHash
    Fingerprint64 of each row's bytes (``data[i]``, row-major). For strings, a row of one
    string hashes the string; longer rows hash the concatenation of their strings'
    fingerprints, as TF."""
    from .strings import _fingerprint64
    if method != "farmhash64":
        raise InvalidArgumentError(f"Unsupported fingerprint method: {method}")
    if isinstance(data, Tensor):
        host = data.numpy()
    else:
        host = as_tensor(data, "fingerprint").numpy()
    host = np.asarray(host)
    if host.ndim < 1:
        raise InvalidArgumentError("`data` should have at least one dimension: "
                                   f"[{','.join(str(d) for d in host.shape)}]")
    rows = host.shape[0]
    if host.dtype.kind in "OSU":
        flat = [v if isinstance(v, bytes) else str(v).encode("utf-8")
                for v in host.reshape(-1).tolist()]
        per_row = len(flat) // rows if rows else 0
        if per_row == 1:
            h = _fingerprint64(flat)
        else:
            inner = _fingerprint64(flat).astype("<u8").reshape(rows, per_row)
            h = _fingerprint64([inner[i].tobytes() for i in range(rows)])
    else:
        le = np.ascontiguousarray(host, dtype=host.dtype.newbyteorder("<"))
        raw = le.reshape(rows, -1).view(np.uint8) if le.size else \
            np.zeros((rows, 0), np.uint8)
        h = _fingerprint64([raw[i].tobytes() for i in range(rows)])
    out = np.asarray(h, dtype="<u8").reshape(rows, 1).view(np.uint8).reshape(rows, 8)
    return _host_out(np.ascontiguousarray(out))


def timestamp(name=None) -> Tensor:
    """``tf.timestamp``: the seconds since the epoch as a float64 scalar."""
    return _host_out(np.asarray(time.time(), np.float64))


# --- edit distance ----------------------------------------------------------------------------

def _levenshtein(a, b) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def _groups(sp, rank):
    """``{leading index tuple: [values in order of the last index]}`` of a SparseTensor."""
    idx = np.asarray(sp.indices.numpy(), np.int64).reshape(-1, rank)
    vals = np.asarray(sp.values.numpy()).reshape(-1)
    order = np.lexsort(idx.T[::-1]) if len(idx) else np.zeros(0, np.int64)
    out = {}
    for i in order:
        out.setdefault(tuple(int(v) for v in idx[i, :-1]), []).append(vals[i])
    return out


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance") -> Tensor:
    """``tf.edit_distance``: the Levenshtein distance between the sequences of two
    SparseTensors (grouped by all but the last index), a float32 tensor of the larger
    leading shape; ``normalize`` divides by the truth's length (an empty truth gives inf,
    or 0 when the hypothesis is empty too), as TF."""
    from .sparse import SparseTensor
    if not isinstance(hypothesis, SparseTensor):
        raise TypeError("Hypothesis must be a SparseTensor.")
    if not isinstance(truth, SparseTensor):
        raise TypeError("Truth must be a SparseTensor.")
    hs = [int(v) for v in np.asarray(hypothesis.dense_shape.numpy()).reshape(-1)]
    ts = [int(v) for v in np.asarray(truth.dense_shape.numpy()).reshape(-1)]
    if len(hs) != len(ts):
        raise InvalidArgumentError(f"Expected truth and hypothesis to have matching ranks, but "
                                   f"their shapes are: [{','.join(map(str, ts))}] and "
                                   f"[{','.join(map(str, hs))}]")
    if len(hs) < 1:
        raise InvalidArgumentError("edit_distance: hypothesis and truth need at least rank 1")
    hd, td = hypothesis.values.dtype, truth.values.dtype
    if hd != td:
        raise InvalidArgumentError(f"edit_distance: hypothesis values are {hd.name} but truth "
                                   f"values are {td.name}; they must match")
    rank = len(hs)
    out_shape = tuple(max(a, b) for a, b in zip(hs[:-1], ts[:-1]))
    out = np.zeros(out_shape, np.float32)
    hg, tg = _groups(hypothesis, rank), _groups(truth, rank)
    for key in set(hg) | set(tg):
        h, t = hg.get(key, []), tg.get(key, [])
        d = np.float32(_levenshtein(h, t))
        if normalize:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.float32(d / np.float32(len(t))) if t else \
                    (np.float32(np.inf) if h else np.float32(0))
        out[key] = d
    return _host_out(out)


# --- extract_volume_patches -------------------------------------------------------------------

def extract_volume_patches(input, ksizes, strides, padding, name=None) -> Tensor:  # noqa: A002
    """``tf.extract_volume_patches``: patches of ``input`` ``[batch, planes, rows, cols,
    depth]``; ``ksizes`` and ``strides`` ``[1, p, r, c, 1]``, ``padding`` ``"VALID"`` or
    ``"SAME"`` (zeros, the extra one after) -> ``[batch, out_p, out_r, out_c,
    p * r * c * depth]``, each patch flattened plane, row, column, depth fastest.
    Differentiable (slices and a concatenation)."""
    from .errors import UnimplementedError
    from .ops.shape import concat, pad
    x = as_tensor(input, "extract_volume_patches")
    if x._value.ndim != 5:
        raise InvalidArgumentError("input must be 5-dimensional"
                                   f"[{','.join(str(d) for d in x._value.shape)}]")
    k = [int(v) for v in ksizes]
    s = [int(v) for v in strides]
    if len(k) != 5 or len(s) != 5:
        raise InvalidArgumentError(f"extract_volume_patches: ksizes and strides must have 5 "
                                   f"entries, got {k} and {s}")
    if k[0] != 1 or k[4] != 1:
        raise UnimplementedError("Only support ksizes across space.")
    if s[0] != 1 or s[4] != 1:
        raise UnimplementedError("Only support strides across space.")
    if min(k) <= 0 or min(s) <= 0:
        raise InvalidArgumentError(f"extract_volume_patches: ksizes and strides must be "
                                   f"positive, got {k} and {s}")
    padding = str(padding).upper() if isinstance(padding, str) else padding
    if padding not in ("VALID", "SAME"):
        raise InvalidArgumentError(f"Value for attr 'padding' of {padding!r} is not in the "
                                   f"list of allowed values: \"SAME\", \"VALID\"")
    dims = x._value.shape[1:4]
    outs, pads = [], [[0, 0]]
    for n, kk, ss in zip(dims, k[1:4], s[1:4]):
        if padding == "SAME":
            o = -(-n // ss)
            p = max((o - 1) * ss + kk - n, 0)
            pads.append([p // 2, p - p // 2])
        else:
            o = (n - kk) // ss + 1
            if o < 0:
                raise InvalidArgumentError(f"Computed output size would be negative: {o} "
                                           f"[input_size: {n}, effective_filter_size: {kk}, "
                                           f"stride: {ss}]")
            pads.append([0, 0])
        outs.append(o)
    pads.append([0, 0])
    if any(a or b for a, b in pads):
        x = pad(x, pads)
    op, orow, ocol = outs
    if min(outs) == 0:
        from .backend import device_scope
        from .ops.core import zeros
        with device_scope(x._device):
            return zeros([x._value.shape[0]] + outs + [k[1] * k[2] * k[3] * x._value.shape[4]],
                         x._value.dtype)
    pieces = [x[:, a:a + (op - 1) * s[1] + 1:s[1], b:b + (orow - 1) * s[2] + 1:s[2],
                c:c + (ocol - 1) * s[3] + 1:s[3], :]
              for a in range(k[1]) for b in range(k[2]) for c in range(k[3])]
    return pieces[0] if len(pieces) == 1 else concat(pieces, axis=4)


# --- random_index_shuffle ---------------------------------------------------------------------

_U64 = (1 << 64) - 1


def _simon_keys(key, w, rounds):
    """The Simon key schedule on ``w``-bit words (uint64 arrays, one entry per output)."""
    mask = np.uint64((1 << w) - 1)
    c = np.uint64(0xfffffffc & ((1 << w) - 1))
    z = 0x7369f885192c0ef5 & ((1 << w) - 1)
    rk = [key[:, 0] & mask, key[:, 1] & mask, key[:, 2] & mask]
    for i in range(3, rounds):
        prev = rk[i - 1]
        rk.append((c ^ np.uint64(z & 1) ^ rk[i - 3] ^ _rotr(prev, 3, w) ^ _rotr(prev, 4, w))
                  & mask)
        z >>= 1
    return rk


def _rotl(x, r, w):
    return ((x << np.uint64(r)) | (x >> np.uint64(w - r))) & np.uint64((1 << w) - 1)


def _rotr(x, r, w):
    return ((x >> np.uint64(r)) | (x << np.uint64(w - r))) & np.uint64((1 << w) - 1)


def _simon_f(x, w):
    return (_rotl(x, 1, w) & _rotl(x, 8, w)) ^ _rotl(x, 2, w)


def _encrypt(value, rk, w):
    mask = np.uint64((1 << w) - 1)
    left = (value >> np.uint64(w)) & mask
    right = value & mask
    for i in range(0, len(rk), 2):
        left = left ^ _simon_f(right, w) ^ rk[i]
        right = right ^ _simon_f(left, w) ^ rk[i + 1]
    return (left << np.uint64(w)) | right


def _index_shuffle(index, key, max_index, rounds):
    """TensorFlow's ``random::index_shuffle`` (a Simon block cipher, cycle-walked into
    ``[0, max_index]``), vectorised over uint64 arrays."""
    out = np.zeros_like(index)
    with np.errstate(divide="ignore"):
        bits = np.ceil(np.log2(max_index.astype(np.float64))).astype(np.int64)
    block = np.maximum(bits + bits % 2, 16)
    block = np.where(max_index == 0, 0, block)
    with np.errstate(over="ignore"):
        for b in np.unique(block):
            sel = np.nonzero(block == b)[0]
            if b == 0:
                continue
            w = int(min(b, 64)) // 2
            rk = _simon_keys(key[sel], w, rounds)
            value, top = index[sel], max_index[sel]
            todo = np.ones(len(sel), bool)
            while todo.any():
                enc = _encrypt(value[todo], [r[todo] for r in rk], w)
                value[todo] = enc
                todo[todo] = enc > top[todo]
            out[sel] = value
    return out


_SHUFFLE_DTYPES = ("int32", "int64", "uint32", "uint64")


def random_index_shuffle(index, seed, max_index, rounds=4, name=None) -> Tensor:
    """``tf.random_index_shuffle``: the position of ``index`` in TensorFlow's stateless
    pseudorandom permutation of ``[0, max_index]`` chosen by ``seed`` (three ints per
    output, read as uint32); exactly TF's outputs. ``index`` and ``max_index`` are scalars
    or vectors of one dtype (int32, int64, uint32, uint64); ``seed`` is ``[3]`` or
    ``[n, 3]``; ``rounds`` is an even number of Simon rounds, at least 4."""
    idx = as_tensor(index, "random_index_shuffle")
    dt = idx._value.dtype
    if dt.name not in _SHUFFLE_DTYPES:
        raise InvalidArgumentError(f"Value for attr 'dtype' of {dt.name} is not in the list "
                                   f"of allowed values: int32, uint32, int64, uint64")
    mx = max_index if isinstance(max_index, Tensor) else convert_to_tensor(max_index, dt)
    if mx._value.dtype != dt:
        raise InvalidArgumentError(f"random_index_shuffle: max_index is {dtype_name(mx)} but "
                                   f"index is {dt.name}; they must match")
    sd = as_tensor(seed, "random_index_shuffle")
    if sd._value.dtype.name not in _SHUFFLE_DTYPES:
        raise InvalidArgumentError(f"Invalid seed type: {dtype_name(sd)}")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) \
            or rounds < 4 or rounds % 2:
        raise ValueError(f"random_index_shuffle: rounds must be an even int >= 4, got "
                         f"{rounds!r}")
    i_h, s_h, m_h = (np.asarray(t.numpy()) for t in (idx, sd, mx))
    n = max(i_h.size, m_h.size, s_h.size // 3)
    if not (i_h.ndim == 0 or (i_h.ndim == 1 and i_h.shape[0] == n)):
        raise InvalidArgumentError("Index bust be a scalar or vector.")
    if not ((s_h.ndim == 1 and s_h.shape[0] == 3)
            or (s_h.ndim == 2 and s_h.shape[0] == n and s_h.shape[1] == 3)):
        raise InvalidArgumentError(f"Seed must be a vector of size [3] or a matrix of size "
                                   f"[{n}, 3] but got [{','.join(map(str, s_h.shape))}].")
    if not (m_h.ndim == 0 or (m_h.ndim == 1 and m_h.shape[0] == n)):
        raise InvalidArgumentError(f"Maxval must be a scalar or a vector of the same size as "
                                   f"index but got [{','.join(map(str, m_h.shape))}]")
    i_b = np.broadcast_to(i_h, (n,))
    m_b = np.broadcast_to(m_h, (n,))
    bad = np.nonzero(m_b < i_b)[0]
    if len(bad):
        j = bad[0]
        raise InvalidArgumentError(f"max_index must be >= index, but {m_b[j]} < {i_b[j]}")
    key = np.broadcast_to(s_h.reshape(-1, 3), (n, 3)).astype(np.int64).astype(np.uint64) \
        if s_h.dtype != np.uint64 else np.broadcast_to(s_h.reshape(-1, 3), (n, 3))
    key = key & np.uint64(0xffffffff)
    res = _index_shuffle(i_b.astype(np.int64).astype(np.uint64) if dt.kind == "i"
                         else i_b.astype(np.uint64), key,
                         m_b.astype(np.int64).astype(np.uint64) if dt.kind == "i"
                         else m_b.astype(np.uint64), int(rounds))
    res = res.astype(dt)
    all_scalar = i_h.ndim == 0 and s_h.ndim == 1 and m_h.ndim == 0
    return _host_out(res.reshape(()) if all_scalar else res)


# --- approx_max_k / approx_min_k --------------------------------------------------------------

def _approx_top_k(operand, k, reduction_dimension, is_max, opname):
    from .ops.core import cast
    from .ops.sorting import _order, _take_last, _to_last
    from .ops.shape import transpose
    x = as_tensor(operand, opname)
    if x._value.dtype not in (np.float16, np.float32):
        raise InvalidArgumentError(f"Value for attr 'T' of {dtype_name(x)} is not in the list "
                                   f"of allowed values: half, bfloat16, float")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InvalidArgumentError(f"{opname}: k must be a non-negative int, got {k!r}")
    nd = x._value.ndim
    if isinstance(reduction_dimension, bool) or not isinstance(reduction_dimension,
                                                               (int, np.integer)) \
            or nd == 0 or not -nd <= reduction_dimension < nd:
        raise InvalidArgumentError(f"{opname}: reduction_dimension {reduction_dimension!r} is "
                                   f"out of range for an operand of rank {nd}")
    ax = int(reduction_dimension) % nd
    if x._value.shape[ax] < k:
        raise InvalidArgumentError(f"input must have at least k columns. Had "
                                   f"{x._value.shape[ax]}, needed {k}")
    y, back = _to_last(x, ax)
    order = apply1(_order, y, {"descending": is_max})[..., :int(k)]
    values = _take_last(y, order)
    order = cast(order, np.int32)
    if back is not None:
        values, order = transpose(values, back), transpose(order, back)
    return values, order


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True, name=None):
    """``tf.math.approx_max_k``: ``(values, indices)`` of the ``k`` largest entries along
    ``reduction_dimension``. The exact top k is returned (what TF's CPU kernel computes;
    an approximation is allowed, never required): largest first, NaN above everything,
    ties in index order; int32 indices; ``values`` is differentiable (the gradient goes
    back to the chosen entries). ``recall_target``, ``reduction_input_size_override`` and
    ``aggregate_to_topk`` only tune the approximation."""
    return _approx_top_k(operand, k, reduction_dimension, True, "approx_max_k")


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True, name=None):
    """``tf.math.approx_min_k``: ``(values, indices)`` of the ``k`` smallest entries along
    ``reduction_dimension``, exactly (as TF's compiled kernel, the only one it has):
    smallest first, ties in index order; differentiable like :func:`approx_max_k`. NaNs
    sort after every number here (TF's compiled sort leaves their place unspecified)."""
    return _approx_top_k(operand, k, reduction_dimension, False, "approx_min_k")



# --- tf.train.get_checkpoint_state / CheckpointOptions ----------------------------------------

class CheckpointState:
    """The contents of a directory's ``checkpoint`` state file (TF's ``CheckpointState``
    message): ``model_checkpoint_path`` (the newest), ``all_model_checkpoint_paths``
    (oldest first), ``all_model_checkpoint_timestamps`` and ``last_preserved_timestamp``."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __str__(self):
        def q(s):
            return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines = [f"model_checkpoint_path: {q(self.model_checkpoint_path)}"] \
            if self.model_checkpoint_path else []
        lines += [f"all_model_checkpoint_paths: {q(p)}" for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}"
                  for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "".join(line + "\n" for line in lines)

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, CheckpointState) and str(self) == str(other)


def _unquote(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            i += 1
            ch = {"n": "\n", "t": "\t"}.get(text[i], text[i])
        out.append(ch)
        i += 1
    return "".join(out)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """``tf.train.get_checkpoint_state``: the :class:`CheckpointState` read from
    ``checkpoint_dir``'s state file (``latest_filename``, default ``"checkpoint"``, as
    ``save`` and ``CheckpointManager`` write it), relative paths joined to
    ``checkpoint_dir``; None when there is no state file (or it cannot be parsed). A state
    without ``model_checkpoint_path`` raises ValueError, as TF."""
    import os
    import re
    directory = os.fspath(checkpoint_dir)
    path = os.path.join(directory, latest_filename or "checkpoint")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    state = CheckpointState()
    pattern = re.compile(r'^\s*(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|([-+0-9.eEinfa]+))\s*$')
    for line in text.splitlines():
        if not line.strip():
            continue
        m = pattern.match(line)
        if m is None:
            return None
        field, s, num = m.group(1), m.group(2), m.group(3)
        if field == "model_checkpoint_path" and s is not None:
            state.model_checkpoint_path = _unquote(s)
        elif field == "all_model_checkpoint_paths" and s is not None:
            state.all_model_checkpoint_paths.append(_unquote(s))
        elif field == "all_model_checkpoint_timestamps" and num is not None:
            state.all_model_checkpoint_timestamps.append(float(num))
        elif field == "last_preserved_timestamp" and num is not None:
            state.last_preserved_timestamp = float(num)
        else:
            return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + directory)
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(directory, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [p if os.path.isabs(p) else os.path.join(directory, p)
                                        for p in state.all_model_checkpoint_paths]
    return state


class CheckpointOptions:
    """``tf.train.CheckpointOptions``: TF's checkpoint options, accepted and kept
    (``enable_async`` and ``experimental_enable_async_checkpoint`` are one setting, as TF;
    gradtape writes checkpoints synchronously on the host, so the options change nothing
    in what is written)."""

    __slots__ = ("experimental_io_device", "enable_async", "experimental_enable_async_checkpoint",
                 "experimental_write_callbacks", "experimental_sharding_callback",
                 "experimental_skip_slot_variables")

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False,
                 experimental_skip_slot_variables=False, experimental_sharding_callback=None):
        import inspect
        if experimental_write_callbacks is not None:
            for cb in experimental_write_callbacks:
                if len(inspect.signature(cb).parameters) > 1:
                    raise ValueError("CheckpointOptions: each write callback takes at most one "
                                     "argument (the checkpoint path)")
        if experimental_sharding_callback is not None:
            raise ValueError("The experimental_sharding_callback checkpoint option must be of "
                             "type ShardingCallback. The option provided was of type "
                             f"{type(experimental_sharding_callback)}.")
        self.experimental_io_device = experimental_io_device
        self.enable_async = bool(experimental_enable_async_checkpoint or enable_async)
        self.experimental_enable_async_checkpoint = self.enable_async
        self.experimental_write_callbacks = experimental_write_callbacks
        self.experimental_sharding_callback = experimental_sharding_callback
        self.experimental_skip_slot_variables = experimental_skip_slot_variables

    def __copy__(self):
        out = CheckpointOptions.__new__(CheckpointOptions)
        for name in self.__slots__:
            setattr(out, name, getattr(self, name))
        return out
