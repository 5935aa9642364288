"""Fused CUDA kernels (``kernels/*.cu``): loading, launching, and NumPy references.

Each kernel file is compiled with NVRTC through ``cupy.RawModule`` the first time one of its
kernels is launched (CuPy caches the binary on disk, keyed by source and options). Every
kernel has a NumPy reference here computing the same math; the reference runs on any
array namespace (NumPy, the strict test device), the kernel on CuPy arrays. The public
functions below pick one by the type of their arrays, so callers write one line for both.

Kernel sources are found in ``gradtape/kernels`` (an installed wheel) or in the ``kernels``
directory of a source checkout.
"""
from __future__ import annotations

import math
import os
import re
import threading
from pathlib import Path

import numpy as np

__all__ = [
    "KernelCompileError", "KernelNotFoundError", "kernel_dir", "kernel_files", "kernel_source",
    "NVRTC_OPTIONS", "CUPY_NVRTC_OPTIONS", "compile_options", "get_kernel", "is_cupy_array",
    "ACTIVATIONS", "FROM_OUTPUT", "bias_act_forward", "bias_act_backward",
    "act_backward_from_output", "reference_act_backward_from_output", "log_softmax",
    "softmax_xent_sparse", "softmax_xent_dense", "layer_norm_forward", "layer_norm_backward",
    "sgd_momentum_update", "adam_update", "adamw_update", "embedding_backward",
    "philox_state", "philox_uniform", "philox_bits", "philox_advance", "reference_philox",
    "reference_bias_act_forward", "reference_bias_act_backward", "reference_log_softmax",
    "reference_softmax_xent_sparse", "reference_softmax_xent_dense",
    "reference_layer_norm_forward", "reference_layer_norm_backward",
    "reference_sgd_momentum_update", "reference_adam_update", "reference_embedding_backward",
    "window_arrays_ok", "window_im2col", "window_col2im_add", "window_max_pool",
    "window_max_pool_grad", "window_max_pool_gather", "window_avg_pool",
    "window_avg_pool_grad",
]

#: Options every kernel file is compiled with (``RawModule`` adds the architecture).
NVRTC_OPTIONS = ("--std=c++17",)
#: Options ``cupy.RawModule`` adds to ours on NVIDIA GPUs (compile checks use them too).
CUPY_NVRTC_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")

#: Activation names accepted by the fused kernels, and their codes in ``common.cuh``.
ACTIVATIONS = {"linear": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4, "tanh": 5,
               "sigmoid": 6}
#: Activations whose derivative is a function of the output (what their op saves).
FROM_OUTPUT = ("linear", "relu", "tanh", "sigmoid")

_BLOCK = 256
_MAX_GRID = 65535
_lock = threading.Lock()
_modules: dict = {}         # (kernel directory, file, device) -> cupy.RawModule
_functions: dict = {}       # (GRADTAPE_KERNEL_DIR, file, kernel name, device) -> its kernel


class KernelNotFoundError(FileNotFoundError):
    """The kernel sources are not where a checkout or a wheel puts them."""


class KernelCompileError(RuntimeError):
    """NVRTC rejected a kernel file; the message names the file and holds NVRTC's log."""


# --- sources -------------------------------------------------------------------------------

def kernel_dir() -> Path:
    """The directory holding the ``*.cu`` files: ``GRADTAPE_KERNEL_DIR`` if set, an installed
    wheel's data files (``<prefix>/share/gradtape/kernels``), else the checkout's
    ``kernels/``."""
    import site
    import sys
    here = Path(__file__).resolve().parent.parent          # .../gradtape
    share = Path("share") / "gradtape" / "kernels"
    candidates = [here / "kernels", Path(sys.prefix) / share]
    user_base = getattr(site, "USER_BASE", None)
    if user_base:
        candidates.append(Path(user_base) / share)
    candidates.append(here.parent / "kernels")
    env = os.environ.get("GRADTAPE_KERNEL_DIR")
    if env:
        candidates.insert(0, Path(env))
    for c in candidates:
        if c.is_dir() and any(c.glob("*.cu")):
            return c
    raise KernelNotFoundError("gradtape: no CUDA kernel sources found (looked in "
                              + ", ".join(str(c) for c in candidates) + "); reinstall gradtape "
                              "or set GRADTAPE_KERNEL_DIR to the directory with the *.cu files")


def kernel_files() -> list:
    """Every kernel file (``activation.cu`` ...), sorted."""
    return sorted(p.name for p in kernel_dir().glob("*.cu"))


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


def kernel_source(name: str) -> str:
    """The source of kernel file ``name`` with its local ``#include "..."`` files inlined.

    Inlining keeps the whole text in CuPy's cache key, so a changed header recompiles.
    """
    root = kernel_dir()
    seen = set()

    def expand(path: Path) -> str:
        if path.name in seen:
            return ""
        seen.add(path.name)
        if not path.is_file():
            raise KernelNotFoundError(f"gradtape: kernel file {path} does not exist")
        text = path.read_text()
        text = _INCLUDE.sub(lambda m: expand(root / m.group(1)), text)
        return text.replace("#pragma once", "")
    return expand(root / name)


def compile_options(arch: str | None = None) -> tuple:
    """The NVRTC options of a kernel build, in the order ``RawModule`` passes them for
    ``arch`` (``"sm_90"``: a cubin, as CuPy builds for a GPU it knows; ``"compute_90"``:
    PTX); without ``arch``, only gradtape's own options."""
    opts = NVRTC_OPTIONS
    if arch is not None:
        ftz, default_space = CUPY_NVRTC_OPTIONS
        opts = opts + (ftz, f"-arch={arch}", default_space)
    return opts


# --- loading -------------------------------------------------------------------------------

def is_cupy_array(a) -> bool:
    """True for a CuPy array (without importing CuPy when it was never imported)."""
    return type(a).__module__.startswith("cupy")


def _load_module(cupy, name: str):
    dev = cupy.cuda.Device().id
    key = (str(kernel_dir()), name, dev)
    mod = _modules.get(key)
    if mod is not None:
        return mod
    with _lock:
        mod = _modules.get(key)
        if mod is None:
            source = kernel_source(name)
            try:
                mod = cupy.RawModule(code=source, options=NVRTC_OPTIONS)
                mod.compile()
            except cupy.cuda.compiler.CompileException as exc:
                log = exc.get_message() if hasattr(exc, "get_message") else str(exc)
                raise KernelCompileError(
                    f"gradtape: kernel file {kernel_dir() / name} failed to compile with NVRTC "
                    f"(options {' '.join(NVRTC_OPTIONS)}):\n{log}") from None
            _modules[key] = mod
    return mod


def get_kernel(file: str, name: str):
    """The compiled kernel ``name`` of kernel file ``file`` on the current CUDA device
    (looked up once per device: ``RawModule.get_function`` builds a new kernel object on
    each call, a few microseconds a launch)."""
    import cupy
    key = (os.environ.get("GRADTAPE_KERNEL_DIR"), file, name, cupy.cuda.Device().id)
    kernel = _functions.get(key)
    if kernel is None:
        kernel = _functions[key] = _load_module(cupy, file).get_function(name)
    return kernel


def _suffix(dtype) -> str:
    dt = np.dtype(dtype)
    if dt == np.float32:
        return "f32"
    if dt == np.float64:
        return "f64"
    raise TypeError(f"gradtape kernels support float32 and float64, got {dt}")


def _grid(n: int, block: int = _BLOCK) -> int:
    return max(1, min(_MAX_GRID, (n + block - 1) // block))


def _row_block(c: int) -> int:
    """Threads per row for the row kernels: a multiple of 32, at most 256."""
    return min(256, max(32, 1 << (max(int(c), 1) - 1).bit_length()))


def _scalar(dtype, value):
    return np.dtype(dtype).type(value)


def _act_code(activation: str) -> int:
    try:
        return ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(f"unknown activation {activation!r}; use one of "
                         f"{', '.join(ACTIVATIONS)}") from None


# --- NumPy references ----------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_cdf(xp, z):
    """``0.5 * erfc(-z / sqrt 2)`` (the normal CDF) on any namespace: SciPy for NumPy,
    cupyx for CuPy, the device's for strict. erfc, not ``1 + erf``, which cancels in the
    negative tail."""
    w = z * -_INV_SQRT_2
    dev = getattr(xp, "gradtape_device", None)
    if dev is not None:
        return 0.5 * dev.erfc(w)
    if xp.__name__.startswith("cupy"):
        from cupyx.scipy.special import erfc
        return 0.5 * erfc(w)
    try:
        from scipy.special import erfc
    except ImportError:  # pragma: no cover - exercised only without SciPy
        from .base import _erf_numpy

        def erfc(v):
            return _erf_numpy(v, complement=True)
    return 0.5 * erfc(w).astype(z.dtype, copy=False)


def _sigmoid(xp, z):
    e = xp.exp(-xp.abs(z))
    return xp.where(z >= 0, 1 / (1 + e), e / (1 + e))


def _activation(xp, z, activation):
    if activation == "linear":
        return z
    if activation == "relu":
        return xp.maximum(z, 0)
    if activation == "gelu":
        return z * _gelu_cdf(xp, z)
    if activation == "gelu_tanh":      # 0.5 z (1 + tanh u) = z sigmoid(2u)
        return z * _sigmoid(xp, 2 * (_SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)))
    if activation == "silu":
        return z * _sigmoid(xp, z)
    if activation == "tanh":
        return xp.tanh(z)
    if activation == "sigmoid":
        return _sigmoid(xp, z)
    _act_code(activation)


def _activation_grad(xp, z, activation):
    if activation == "linear":
        return xp.ones_like(z)
    if activation == "relu":
        return (z > 0).astype(z.dtype)
    if activation == "gelu":
        return _gelu_cdf(xp, z) + z * (_INV_SQRT_2PI * xp.exp(-0.5 * z * z))
    if activation == "gelu_tanh":
        # 1 + tanh u = 2 sigmoid(2u), 1 - tanh^2 u = 4 sigmoid(2u) sigmoid(-2u): no
        # cancellation where tanh u rounds to -1
        u = _SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)
        du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * z * z)
        return _sigmoid(xp, 2 * u) * (1 + 2 * z * _sigmoid(xp, -2 * u) * du)
    if activation == "silu":
        s = _sigmoid(xp, z)
        return s * (1 + z * (1 - s))
    if activation == "tanh":
        t = xp.tanh(z)
        return 1 - t * t
    if activation == "sigmoid":
        s = _sigmoid(xp, z)
        return s * (1 - s)
    _act_code(activation)


def reference_bias_act_forward(xp, x, b, activation):
    """``act(x + b)`` (``b`` over the last axis, or None) on any array namespace."""
    z = x + b if b is not None else x
    return _activation(xp, z, activation).astype(x.dtype, copy=False)


def reference_bias_act_backward(xp, g, x, b, activation):
    """``g * act'(x + b)``: the gradient of ``x`` (sum it over leading axes for ``b``)."""
    z = x + b if b is not None else x
    if activation == "relu":        # (a boolean mask, not an activation-sized float array)
        return (g * (z > 0)).astype(x.dtype, copy=False)
    return (g * _activation_grad(xp, z, activation)).astype(x.dtype, copy=False)


def reference_act_backward_from_output(xp, g, y, activation):
    """``g * act'(z)`` written with ``y = act(z)`` (activations in :data:`FROM_OUTPUT`)."""
    # (written to allocate little besides the result: these run on activation-sized arrays)
    if activation == "linear":
        return (g * xp.ones_like(y)).astype(y.dtype, copy=False)
    if activation == "relu":
        return (g * (y > 0)).astype(y.dtype, copy=False)
    if activation == "tanh":
        d = y * y
        d = 1 - d
    elif activation == "sigmoid":
        d = 1 - y
        d *= y
    else:
        raise ValueError(f"act_backward_from_output: {activation!r} has no derivative in terms "
                         f"of its output; use one of {', '.join(FROM_OUTPUT)}")
    return (g * d).astype(y.dtype, copy=False)


def _lse(xp, x):
    mx = xp.max(x, axis=-1, keepdims=True)
    mx = xp.where(xp.isfinite(mx), mx, 0)
    return mx + xp.log(xp.sum(xp.exp(x - mx), axis=-1, keepdims=True))


def reference_log_softmax(xp, x):
    """``x - logsumexp(x)`` over the last axis."""
    with np.errstate(all="ignore"):
        return x - _lse(xp, x)


def reference_softmax_xent_sparse(xp, logits, labels, scale=None, want_loss=True,
                                  want_grad=False):
    """``(loss, grad)`` of sparse softmax cross-entropy for ``logits[rows, C]``, integer
    ``labels[rows]``; ``grad = scale[:, None] * (softmax - onehot)``. Labels outside
    ``[0, C)`` give NaN rows. Entries not asked for are None."""
    rows, c = logits.shape
    lab = labels.astype(np.int64)
    valid = (lab >= 0) & (lab < c)
    safe = xp.where(valid, lab, 0)
    with np.errstate(all="ignore"):
        lse = _lse(xp, logits)[:, 0]
        loss = grad = None
        if want_loss:
            picked = xp.take_along_axis(logits, safe[:, None], axis=1)[:, 0]
            loss = xp.where(valid, lse - picked, xp.nan).astype(logits.dtype, copy=False)
        if want_grad:
            p = xp.exp(logits - lse[:, None])
            onehot = (xp.arange(c)[None, :] == safe[:, None]).astype(logits.dtype)
            grad = p - onehot
            if scale is not None:
                grad = grad * scale[:, None]
            grad = xp.where(valid[:, None], grad, xp.nan).astype(logits.dtype, copy=False)
    return loss, grad


def reference_softmax_xent_dense(xp, logits, labels, scale=None, want_loss=True,
                                 want_grad=False):
    """``(loss, grad)`` of softmax cross-entropy with label distributions ``labels[rows, C]``;
    ``grad = scale[:, None] * (sum(labels) * softmax - labels)``."""
    with np.errstate(all="ignore"):
        lse = _lse(xp, logits)
        total = xp.sum(labels, axis=-1, keepdims=True)
        loss = grad = None
        if want_loss:
            loss = (total[:, 0] * lse[:, 0] - xp.sum(labels * logits, axis=-1)).astype(
                logits.dtype, copy=False)
        if want_grad:
            grad = total * xp.exp(logits - lse) - labels
            if scale is not None:
                grad = grad * scale[:, None]
            grad = grad.astype(logits.dtype, copy=False)
    return loss, grad


def _moments(xp, x, epsilon):
    mean = xp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = xp.mean(d * d, axis=-1, keepdims=True)
    return mean, 1 / xp.sqrt(var + epsilon)


def reference_layer_norm_forward(xp, x, gamma, beta, epsilon):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last axis."""
    mean, rstd = _moments(xp, x, epsilon)
    y = (x - mean) * rstd
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y.astype(x.dtype, copy=False)


def reference_layer_norm_backward(xp, g, x, gamma, epsilon):
    """``(dx, dgamma, dbeta)`` of layer normalisation over the last axis of ``x[rows, C]``."""
    mean, rstd = _moments(xp, x, epsilon)
    xhat = (x - mean) * rstd
    h = g * gamma if gamma is not None else g
    mh = xp.mean(h, axis=-1, keepdims=True)
    mhx = xp.mean(h * xhat, axis=-1, keepdims=True)
    dx = (rstd * (h - mh - xhat * mhx)).astype(x.dtype, copy=False)
    lead = tuple(range(x.ndim - 1))
    dgamma = xp.sum(g * xhat, axis=lead).astype(x.dtype, copy=False)
    dbeta = xp.sum(g, axis=lead).astype(x.dtype, copy=False)
    return dx, dgamma, dbeta


def reference_sgd_momentum_update(xp, param, grad, velocity, lr, momentum=0.0,
                                  nesterov=False):
    """In place: ``velocity = momentum * velocity - lr * grad``; ``param += velocity``
    (Nesterov: ``param += momentum * velocity - lr * grad``). ``velocity`` None: plain SGD."""
    if velocity is None:
        param -= lr * grad
        return
    velocity *= momentum
    velocity -= lr * grad
    if nesterov:
        param += momentum * velocity - lr * grad
    else:
        param += velocity


def reference_adam_update(xp, param, grad, m, v, lr, step, beta1=0.9, beta2=0.999,
                          epsilon=1e-7, weight_decay=0.0):
    """In place, Keras' Adam (AdamW when ``weight_decay`` > 0: ``param -= lr * wd * param``
    first): ``m, v`` moments, ``alpha = lr * sqrt(1 - beta2^step) / (1 - beta1^step)``,
    ``param -= alpha * m / (sqrt(v) + epsilon)``. ``lr`` and ``step`` may be device 0-d
    arrays."""
    dt = param.dtype
    # the bias correction in float64 whatever the dtype (as the kernel computes it)
    if isinstance(step, (int, float, np.integer, np.floating)):
        correction = math.sqrt(1 - beta2 ** float(step)) / (1 - beta1 ** float(step))
    else:
        t = step.astype(np.float64)
        correction = (xp.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)).astype(dt)
    alpha = lr * correction
    if weight_decay:
        param -= (lr * weight_decay) * param
    m *= beta1
    m += (1 - beta1) * grad
    v *= beta2
    v += (1 - beta2) * (grad * grad)
    update = m / (xp.sqrt(v) + epsilon)
    param -= (alpha * update).astype(dt, copy=False)


def reference_embedding_backward(xp, ids, grad, vocab_size):
    """``table_grad[vocab_size, dim]`` with ``table_grad[ids[i]] += grad[i]`` (ids outside
    ``[0, vocab_size)`` skipped)."""
    dim = grad.shape[-1]
    flat_ids = ids.reshape(-1).astype(np.int64)
    flat_grad = grad.reshape(-1, dim)
    out = xp.zeros((vocab_size, dim), dtype=grad.dtype)
    valid = (flat_ids >= 0) & (flat_ids < vocab_size)
    # invalid rows add zeros to row 0 (no data-dependent shapes, no host read)
    safe = xp.where(valid, flat_ids, 0)
    contrib = xp.where(valid[:, None], flat_grad, 0).astype(grad.dtype, copy=False)
    xp.add.at(out, safe, contrib)
    return out


# --- counter-based random numbers (Philox4x32-10) --------------------------------------------

_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_U32 = 0xFFFFFFFF


def reference_philox(xp, c0, c1, c2, c3, key):
    """The four 32-bit words (uint64 arrays) of Philox4x32-10 of the counters ``c0..c3``
    (arrays of uint64 holding 32-bit values) under ``key`` = (k0, k1): Python ints, or
    uint64 0-d device arrays (read on the device)."""
    mask = np.uint64(_U32)
    shift = np.uint64(32)
    m0, m1 = np.uint64(_PHILOX_M[0]), np.uint64(_PHILOX_M[1])
    k0, k1 = (np.uint64(int(k) & _U32) if isinstance(k, int) else k & mask for k in key)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(_PHILOX_W[0])) & mask
            k1 = (k1 + np.uint64(_PHILOX_W[1])) & mask
        p0 = c0 * m0                       # < 2^64: exact in uint64
        p1 = c2 * m1
        c0, c1, c2, c3 = ((p1 >> shift) ^ c1 ^ k0, p1 & mask,
                          (p0 >> shift) ^ c3 ^ k1, p0 & mask)
    return c0, c1, c2, c3


def philox_state(xp, key, offset=0):
    """A generator state on a device: uint64 ``[offset, k0, k1]`` (what the kernels read)."""
    return xp.asarray(np.array([offset, int(key[0]) & _U32, int(key[1]) & _U32], np.uint64))


def _philox_blocks(xp, state, nblocks):
    """The words of the blocks ``state[0] ..`` of the stream (all read on the device)."""
    blocks = state[0] + xp.arange(nblocks, dtype=np.uint64)
    zero = xp.zeros(nblocks, dtype=np.uint64)
    return reference_philox(xp, blocks & np.uint64(_U32), blocks >> np.uint64(32), zero, zero,
                            (state[1], state[2]))


def _philox_nblocks(n, dtype) -> int:
    per = 4 if np.dtype(dtype) == np.float32 else 2
    return (int(n) + per - 1) // per


def _philox_launch(xp, name, state, n, dtype):
    out = xp.empty((n,), dtype=dtype)
    if n:
        get_kernel("random.cu", name)((_grid(_philox_nblocks(n, dtype)),), (_BLOCK,),
                                      (out, np.int64(n), state))
    return out


def philox_uniform(xp, state, n, dtype):
    """``n`` uniform floats in ``[0, 1)`` (float32: 24 random bits, float64: 53) from the
    Philox ``state`` (see :func:`philox_state`; read on the device, advance it with
    :func:`philox_advance`). One launch on CuPy arrays."""
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"philox_uniform: dtype must be float32 or float64, got {dt}")
    n = int(n)
    if is_cupy_array(state):
        return _philox_launch(xp, f"philox_uniform_{_suffix(dt)}", state, n, dt)
    w = _philox_blocks(xp, state, _philox_nblocks(n, dt))
    if dt == np.float32:
        words = xp.stack(w, axis=1).reshape(-1)[:n]
        return (words >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    hi = xp.stack((w[0], w[2]), axis=1).reshape(-1)[:n] >> np.uint64(5)
    lo = xp.stack((w[1], w[3]), axis=1).reshape(-1)[:n] >> np.uint64(6)
    return (hi.astype(np.float64) * 67108864.0 + lo.astype(np.float64)) * (1.0 / 2.0 ** 53)


def philox_bits(xp, state, n):
    """``n`` random uint64 values from the Philox ``state`` (two words a value, high first;
    as :func:`philox_uniform` in float64)."""
    n = int(n)
    if is_cupy_array(state):
        return _philox_launch(xp, "philox_bits_u64", state, n, np.uint64)
    w = _philox_blocks(xp, state, _philox_nblocks(n, np.float64))
    hi = xp.stack((w[0], w[2]), axis=1).reshape(-1)[:n]
    lo = xp.stack((w[1], w[3]), axis=1).reshape(-1)[:n]
    return (hi << np.uint64(32)) | lo


def philox_advance(xp, state, n, dtype):
    """Move the Philox ``state`` (in place, on the device) past the blocks a draw of ``n``
    values of ``dtype`` used (uint64 draws use float64's)."""
    blocks = _philox_nblocks(n, dtype)
    if not blocks:
        return
    if is_cupy_array(state):
        get_kernel("random.cu", "philox_advance")((1,), (1,), (state, np.uint64(blocks)))
    else:
        state[0:1] += np.uint64(blocks)


# --- kernels on CuPy arrays ------------------------------------------------------------------

def _contig(cupy, a):
    return cupy.ascontiguousarray(a)


def _null():
    return np.uintp(0)


def _kernel_ok(x, *operands, g=None):
    """Whether a call goes to the kernels: ``x`` a CuPy array of float32 or float64, each
    ``(array, shape)`` operand None or a CuPy array of ``x``'s dtype and exactly that shape,
    and ``g`` (broadcast to ``x``) None or of ``x``'s dtype. Anything else (float16, a float64
    bias beside a float32 ``x``, an operand that only broadcasts, another namespace) runs the
    reference, which follows NumPy's promotion and broadcasting on any array namespace (CuPy
    included), so every device gives the same result for the same call and no kernel reads
    past an operand's end."""
    if not is_cupy_array(x) or x.dtype.char not in "fd":
        return False
    if g is not None and (not is_cupy_array(g) or g.dtype != x.dtype):
        return False
    for a, shape in operands:
        if a is not None and (not is_cupy_array(a) or a.dtype != x.dtype
                              or tuple(a.shape) != shape):
            return False
    return True


def _labels_ok(labels, rows):
    return is_cupy_array(labels) and labels.dtype.kind in "iu" and tuple(labels.shape) == (rows,)


def _scale_ok(scale, rows):
    return scale is None or (is_cupy_array(scale) and tuple(scale.shape) == (rows,))


def _classes(fn, rows, c):
    if rows and not c:
        raise ValueError(f"{fn}: the logits have {rows} rows of 0 classes; a softmax needs at "
                         "least one class")


def bias_act_forward(xp, x, b, activation):
    """``act(x + b)``: the fused kernel on CuPy arrays, the NumPy reference elsewhere."""
    code = _act_code(activation)
    channels = x.shape[-1] if x.ndim else 1
    if not _kernel_ok(x, (b, (channels,))) or (x.ndim == 0 and b is not None):
        return reference_bias_act_forward(xp, x, b, activation)
    x = _contig(xp, x)
    y = xp.empty_like(x)
    n = x.size
    if n:
        bb = _contig(xp, b) if b is not None else _null()
        get_kernel("activation.cu", f"bias_act_forward_{_suffix(x.dtype)}")(
            (_grid(n),), (_BLOCK,), (x, bb, y, np.int64(n), np.int64(channels), np.int32(code)))
    return y


def bias_act_backward(xp, g, x, b, activation):
    """``g * act'(x + b)`` (one launch on CuPy arrays)."""
    code = _act_code(activation)
    channels = x.shape[-1] if x.ndim else 1
    if not _kernel_ok(x, (b, (channels,)), g=g) or (x.ndim == 0 and b is not None):
        return reference_bias_act_backward(xp, g, x, b, activation)
    x = _contig(xp, x)
    g = _contig(xp, xp.broadcast_to(g, x.shape))
    dz = xp.empty_like(x)
    n = x.size
    if n:
        bb = _contig(xp, b) if b is not None else _null()
        get_kernel("activation.cu", f"bias_act_backward_{_suffix(x.dtype)}")(
            (_grid(n),), (_BLOCK,),
            (g, x, bb, dz, np.int64(n), np.int64(channels), np.int32(code)))
    return dz


def _rows(x):
    c = x.shape[-1]
    rows = x.size // c if c else 0
    return rows, c


def log_softmax(xp, x):
    """Log-softmax over the last axis (one block per row on CuPy)."""
    if not _kernel_ok(x):
        return reference_log_softmax(xp, x)
    x = _contig(xp, x)
    out = xp.empty_like(x)
    rows, c = _rows(x)
    if rows and c:
        get_kernel("softmax.cu", f"log_softmax_{_suffix(x.dtype)}")(
            (min(rows, _MAX_GRID),), (_row_block(c),), (x, out, np.int64(rows), np.int64(c)))
    return out


def softmax_xent_sparse(xp, logits, labels, scale=None, want_loss=True, want_grad=False):
    """Sparse softmax cross-entropy of ``logits[rows, C]``: ``(loss, grad)`` from one pass
    per row; ``grad`` is multiplied by ``scale[rows]`` when given."""
    rows, c = logits.shape
    _classes("softmax_xent_sparse", rows, c)
    if not (_kernel_ok(logits) and _labels_ok(labels, rows) and _scale_ok(scale, rows)):
        return reference_softmax_xent_sparse(xp, logits, labels, scale, want_loss, want_grad)
    logits = _contig(xp, logits)
    lab = _contig(xp, labels.astype(xp.int64, copy=False))
    loss = xp.empty((rows,), dtype=logits.dtype) if want_loss else None
    grad = xp.empty_like(logits) if want_grad else None
    if rows:
        sc = _contig(xp, scale.astype(logits.dtype, copy=False)) if scale is not None else _null()
        get_kernel("softmax.cu", f"softmax_xent_sparse_{_suffix(logits.dtype)}")(
            (min(rows, _MAX_GRID),), (_row_block(c),),
            (logits, lab, sc, loss if loss is not None else _null(),
             grad if grad is not None else _null(), np.int64(rows), np.int64(c)))
    return loss, grad


def softmax_xent_dense(xp, logits, labels, scale=None, want_loss=True, want_grad=False):
    """Softmax cross-entropy with label distributions ``labels[rows, C]``: ``(loss, grad)``
    from one pass per row."""
    rows, c = logits.shape
    _classes("softmax_xent_dense", rows, c)
    if not (_kernel_ok(logits, (labels, (rows, c))) and _scale_ok(scale, rows)):
        return reference_softmax_xent_dense(xp, logits, labels, scale, want_loss, want_grad)
    logits = _contig(xp, logits)
    labels = _contig(xp, labels)
    loss = xp.empty((rows,), dtype=logits.dtype) if want_loss else None
    grad = xp.empty_like(logits) if want_grad else None
    if rows:
        sc = _contig(xp, scale.astype(logits.dtype, copy=False)) if scale is not None else _null()
        get_kernel("softmax.cu", f"softmax_xent_dense_{_suffix(logits.dtype)}")(
            (min(rows, _MAX_GRID),), (_row_block(c),),
            (logits, labels, sc, loss if loss is not None else _null(),
             grad if grad is not None else _null(), np.int64(rows), np.int64(c)))
    return loss, grad


def layer_norm_forward(xp, x, gamma, beta, epsilon):
    """Layer normalisation over the last axis (one block per row on CuPy)."""
    c = x.shape[-1] if x.ndim else 0
    if not _kernel_ok(x, (gamma, (c,)), (beta, (c,))):
        return reference_layer_norm_forward(xp, x, gamma, beta, epsilon)
    x = _contig(xp, x)
    y = xp.empty_like(x)
    rows, c = _rows(x)
    if rows and c:
        get_kernel("layer_norm.cu", f"layer_norm_forward_{_suffix(x.dtype)}")(
            (min(rows, _MAX_GRID),), (_row_block(c),),
            (x, _contig(xp, gamma) if gamma is not None else _null(),
             _contig(xp, beta) if beta is not None else _null(), y, _null(), _null(),
             np.int64(rows), np.int64(c), np.float64(epsilon)))
    return y


def layer_norm_backward(xp, g, x, gamma, epsilon):
    """``(dx, dgamma, dbeta)`` of layer normalisation. On CuPy: one launch per row for ``dx``
    (it also writes ``g * xhat``), then the column sums giving ``dgamma`` and ``dbeta`` as
    products with a vector of ones (cuBLAS: parallel over rows and deterministic)."""
    c = x.shape[-1] if x.ndim else 0
    if not _kernel_ok(x, (gamma, (c,)), g=g):
        return reference_layer_norm_backward(xp, g, x, gamma, epsilon)
    x = _contig(xp, x)
    g = _contig(xp, xp.broadcast_to(g, x.shape))
    rows, c = _rows(x)
    dx = xp.empty_like(x)
    if not rows or not c:
        return dx, xp.zeros((c,), dtype=x.dtype), xp.zeros((c,), dtype=x.dtype)
    gxhat = xp.empty_like(x)
    get_kernel("layer_norm.cu", f"layer_norm_backward_input_{_suffix(x.dtype)}")(
        (min(rows, _MAX_GRID),), (_row_block(c),),
        (g, x, _contig(xp, gamma) if gamma is not None else _null(), dx, gxhat,
         np.int64(rows), np.int64(c), np.float64(epsilon)))
    ones = xp.ones((rows,), dtype=x.dtype)
    return dx, xp.matmul(ones, gxhat.reshape(rows, c)), xp.matmul(ones, g.reshape(rows, c))


def act_backward_from_output(xp, g, y, activation):
    """``g * act'(z)`` from ``y = act(z)`` (one launch on CuPy arrays)."""
    code = _act_code(activation)
    if activation not in FROM_OUTPUT or not _kernel_ok(y, g=g):
        return reference_act_backward_from_output(xp, g, y, activation)
    y = _contig(xp, y)
    g = _contig(xp, xp.broadcast_to(g, y.shape))
    dz = xp.empty_like(y)
    n = y.size
    if n:
        get_kernel("activation.cu", f"act_backward_from_output_{_suffix(y.dtype)}")(
            (_grid(n),), (_BLOCK,), (g, y, dz, np.int64(n), np.int32(code)))
    return dz


def _check_state(name, param, **buffers):
    for key, buf in buffers.items():
        if buf is None:
            continue
        if tuple(buf.shape) != tuple(param.shape) or buf.dtype != param.dtype:
            raise ValueError(f"{name}: {key} has shape {tuple(buf.shape)} and dtype {buf.dtype}, "
                             f"the parameter {tuple(param.shape)} and {param.dtype}")
        if not key.startswith("grad") and not isinstance(param, np.ndarray) \
                and not buf.flags.c_contiguous:
            # (the gradient is only read: a strided one is made contiguous for the kernel)
            raise ValueError(f"{name}: {key} must be C-contiguous to be updated in place")


def _scalar_args(xp, value, dtype, ptr_dtype):
    """(pointer, value) kernel arguments for a Python scalar or a device 0-d array."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return _null(), _scalar(ptr_dtype if ptr_dtype is not None else dtype, value)
    arr = _contig(xp, value.astype(ptr_dtype or dtype, copy=False).reshape(()))
    return arr, _scalar(ptr_dtype or dtype, 0)


def sgd_momentum_update(xp, param, grad, velocity, lr, momentum=0.0, nesterov=False):
    """Update ``param`` (and ``velocity``) in place with SGD with momentum, as Keras' SGD.

    ``velocity = momentum * velocity - lr * grad``; ``param += velocity`` (Nesterov:
    ``param += momentum * velocity - lr * grad``). ``velocity`` None means plain SGD
    (``param -= lr * grad``). ``lr`` is a Python float or a device 0-d array (read on the
    device, so a captured step sees each replay's value). One kernel launch on CuPy arrays,
    the NumPy reference on other namespaces. Returns None.
    """
    _check_state("sgd_momentum_update", param, grad=grad, velocity=velocity)
    if not isinstance(param, np.ndarray) and not param.flags.c_contiguous:
        raise ValueError(f"sgd_momentum_update: the parameter (shape {tuple(param.shape)}) must be "
                         "C-contiguous to be updated in place")
    if not is_cupy_array(param):
        reference_sgd_momentum_update(xp, param, grad, velocity, lr, momentum, nesterov)
        return
    n = param.size
    if not n:
        return
    lr_ptr, lr_val = _scalar_args(xp, lr, param.dtype, None)
    get_kernel("optimizers.cu", f"sgd_momentum_{_suffix(param.dtype)}")(
        (_grid(n),), (_BLOCK,),
        (param, _contig(xp, grad), velocity if velocity is not None else _null(), lr_ptr, lr_val,
         _scalar(param.dtype, momentum), np.int32(bool(nesterov)), np.int64(n)))


def adam_update(xp, param, grad, m, v, lr, step, beta1=0.9, beta2=0.999, epsilon=1e-7,
                weight_decay=0.0):
    """Update ``param``, ``m`` and ``v`` in place with Adam, as Keras' Adam.

    ``m = beta1 m + (1 - beta1) grad``, ``v = beta2 v + (1 - beta2) grad^2``,
    ``param -= lr * sqrt(1 - beta2^step) / (1 - beta1^step) * m / (sqrt(v) + epsilon)``;
    ``step`` counts from 1 (the update being made). ``weight_decay`` > 0 gives AdamW
    (see :func:`adamw_update`). ``lr`` and ``step`` are Python numbers or device 0-d arrays
    (read on the device). One kernel launch on CuPy arrays. Returns None.
    """
    _check_state("adam_update", param, grad=grad, m=m, v=v)
    if not isinstance(param, np.ndarray) and not param.flags.c_contiguous:
        raise ValueError(f"adam_update: the parameter (shape {tuple(param.shape)}) must be "
                         "C-contiguous to be updated in place")
    if not is_cupy_array(param):
        reference_adam_update(xp, param, grad, m, v, lr, step, beta1, beta2, epsilon,
                              weight_decay)
        return
    n = param.size
    if not n:
        return
    lr_ptr, lr_val = _scalar_args(xp, lr, param.dtype, None)
    step_ptr, step_val = _scalar_args(xp, step, None, np.int64)
    dt = param.dtype
    get_kernel("optimizers.cu", f"adam_{_suffix(dt)}")(
        (_grid(n),), (_BLOCK,),
        (param, _contig(xp, grad), m, v, lr_ptr, lr_val, step_ptr, step_val,
         np.float64(beta1), np.float64(beta2), _scalar(dt, epsilon), _scalar(dt, weight_decay),
         np.int64(n)))


def adamw_update(xp, param, grad, m, v, lr, step, weight_decay, beta1=0.9, beta2=0.999,
                 epsilon=1e-7):
    """AdamW in place: ``param -= lr * weight_decay * param``, then the Adam update of
    :func:`adam_update` (decoupled weight decay, as Keras' AdamW). Returns None."""
    adam_update(xp, param, grad, m, v, lr, step, beta1, beta2, epsilon, weight_decay)


# GT_MULTI of optimizers.cu: the parameters one *_multi launch updates
MULTI = 8


def _check_multi(name, params, outs, grads, **state):
    """Validate a multi-tensor update's lists (nothing is written when one is off)."""
    count = len(params)
    for label, seq in (("outs", outs), ("grads", grads), *state.items()):
        if seq is not None and len(seq) != count:
            raise ValueError(f"{name}: {count} parameters but {len(seq)} {label}")
    dtypes = {np.dtype(p.dtype) for p in params}
    if len(dtypes) > 1:
        raise ValueError(f"{name}: the parameters must share one dtype, got "
                         f"{sorted(str(d) for d in dtypes)}")
    for i, p in enumerate(params):
        out = outs[i] if outs is not None else p
        buffers = {f"grad {i}": grads[i], f"out {i}": out}
        buffers.update({f"{label} {i}": seq[i] for label, seq in state.items()
                        if seq is not None})
        _check_state(name, p, **buffers)


def _multi_launch(xp, kernel, slots, scalars):
    """Launch ``kernel`` of optimizers.cu on ``slots`` ((p, out, g, a, b) each, a and b None
    where absent), MULTI slots a launch, then ``scalars``."""
    dt = slots[0][0].dtype
    fn = get_kernel("optimizers.cu", f"{kernel}_{_suffix(dt)}")
    empty = (_null(), _null(), _null(), _null(), _null(), np.int64(0))
    for start in range(0, len(slots), MULTI):
        args = []
        n_max = 0
        for p, out, g, a, b in slots[start:start + MULTI]:
            n = p.size
            if not n:
                continue
            n_max = max(n_max, n)
            args += (_contig(xp, p), out, _contig(xp, g), _null() if a is None else a,
                     _null() if b is None else b, np.int64(n))
        if not n_max:
            continue
        args += empty * (MULTI - len(args) // 6)
        fn((_grid(n_max),), (_BLOCK,), tuple(args) + scalars)


def sgd_momentum_update_multi(xp, params, grads, velocities, lr, momentum=0.0,
                              nesterov=False, outs=None):
    """:func:`sgd_momentum_update` of many parameters of one dtype: one launch per
    :data:`MULTI` of them on CuPy arrays (the NumPy reference elsewhere). Parameter ``i`` is
    read from ``params[i]`` and written to ``outs[i]`` (``outs`` None, or an entry that is
    the parameter itself: in place); the velocities (None, or None entries: plain SGD) are
    updated in place. Returns None."""
    _check_multi("sgd_momentum_update_multi", params, outs, grads, velocities=velocities)
    vels = velocities if velocities is not None else [None] * len(params)
    outs = outs if outs is not None else params
    if not params or not is_cupy_array(params[0]):
        for p, out, g, v in zip(params, outs, grads, vels):
            if out is not p:
                out[...] = p
            reference_sgd_momentum_update(xp, out, g, v, lr, momentum, nesterov)
        return
    dt = params[0].dtype
    lr_ptr, lr_val = _scalar_args(xp, lr, dt, None)
    _multi_launch(xp, "sgd_momentum_multi",
                  [(p, out, g, v, None) for p, out, g, v in zip(params, outs, grads, vels)],
                  (lr_ptr, lr_val, _scalar(dt, momentum), np.int32(bool(nesterov))))


def adam_update_multi(xp, params, grads, ms, vs, lr, step, beta1=0.9, beta2=0.999,
                      epsilon=1e-7, weight_decay=0.0, outs=None):
    """:func:`adam_update` (AdamW with ``weight_decay`` > 0) of many parameters of one dtype:
    one launch per :data:`MULTI` of them on CuPy arrays. ``outs`` as for
    :func:`sgd_momentum_update_multi`; ``ms`` and ``vs`` are updated in place. Returns
    None."""
    _check_multi("adam_update_multi", params, outs, grads, m=ms, v=vs)
    outs = outs if outs is not None else params
    if not params or not is_cupy_array(params[0]):
        for p, out, g, m, v in zip(params, outs, grads, ms, vs):
            if out is not p:
                out[...] = p
            reference_adam_update(xp, out, g, m, v, lr, step, beta1, beta2, epsilon,
                                  weight_decay)
        return
    dt = params[0].dtype
    lr_ptr, lr_val = _scalar_args(xp, lr, dt, None)
    step_ptr, step_val = _scalar_args(xp, step, None, np.int64)
    _multi_launch(xp, "adam_multi", list(zip(params, outs, grads, ms, vs)),
                  (lr_ptr, lr_val, step_ptr, step_val, np.float64(beta1), np.float64(beta2),
                   _scalar(dt, epsilon), _scalar(dt, weight_decay)))


def embedding_backward(xp, ids, grad, vocab_size):
    """Gradient of an embedding table ``[vocab_size, dim]`` from the gradient of its looked-up
    rows ``grad[..., dim]`` at ``ids[...]`` (repeated ids summed; atomicAdd on CuPy)."""
    if grad.ndim < 1 or tuple(grad.shape[:-1]) != tuple(ids.shape):
        raise ValueError(f"embedding_backward: grad of shape {tuple(grad.shape)} does not match "
                         f"ids of shape {tuple(ids.shape)} (expected ids.shape + (dim,))")
    if not (_kernel_ok(grad) and is_cupy_array(ids) and ids.dtype.kind in "iu"):
        return reference_embedding_backward(xp, ids, grad, vocab_size)
    dim = grad.shape[-1]
    flat_ids = _contig(xp, ids.reshape(-1).astype(xp.int64, copy=False))
    flat_grad = _contig(xp, grad.reshape(-1, dim))
    out = xp.zeros((vocab_size, dim), dtype=grad.dtype)
    n = flat_grad.size
    if n:
        get_kernel("embedding.cu", f"embedding_backward_{_suffix(grad.dtype)}")(
            (_grid(n),), (_BLOCK,),
            (flat_ids, flat_grad, out, np.int64(flat_ids.size), np.int64(dim),
             np.int64(vocab_size)))
    return out


def _extreme_fill(dtype, is_max):
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if is_max else info.max


def _ordered(xp, bits, it):
    """Float bits as ints of the same order (an involution): a negative float's magnitude
    bits are flipped, so larger magnitudes compare smaller."""
    return xp.where(bits < 0, bits ^ it(np.iinfo(it).max), bits)


# narrow dtypes, folded in a wider one where ufunc.at must be CuPy's (32/64-bit atomics)
_SEGMENT_WIDER = {"b": np.int32, "h": np.int32, "B": np.uint32, "H": np.uint32,
                  "e": np.float32}


def reference_segment_extreme(xp, x, ids, segments, is_max):
    """``out[s] = max (min) of x[r]`` over the rows ``r`` (the axes of ``ids``) with
    ``ids[r] == s``, for ``0 <= s < segments``; the dtype's lowest (highest) value where no
    row falls; ids outside ``[0, segments)`` are dropped. NumPy folds with ``maximum.at``;
    another namespace (CuPy's rules: atomics of 32- and 64-bit ints only, exact) folds floats
    as order-preserving ints and narrow types in a wider one."""
    inner = tuple(x.shape[ids.ndim:])
    dt = x.dtype
    fill = _extreme_fill(dt, is_max)
    ok = (ids >= 0) & (ids < segments)
    key = (xp.where(ok, ids, 0),)
    ok = ok.reshape(tuple(ok.shape) + (1,) * len(inner))
    ufunc = xp.maximum if is_max else xp.minimum
    if xp is np or dt.char in "ilIL":
        out = xp.full((segments,) + inner, fill, dtype=dt)
        ufunc.at(out, key, xp.where(ok, x, dt.type(fill)))
        return out
    wide = _SEGMENT_WIDER.get(dt.char)
    if wide is not None:
        out = reference_segment_extreme(xp, x.astype(wide), ids, segments, is_max)
        empty = out == _extreme_fill(np.dtype(wide), is_max)
        return xp.where(empty, np.dtype(wide).type(fill), out).astype(dt)
    it = np.int32 if dt == np.float32 else np.int64
    vals = _ordered(xp, xp.where(ok, x, dt.type(fill)).view(it), it)
    start = _ordered(xp, xp.full((1,), fill, dtype=dt).view(it), it)
    out = xp.broadcast_to(start, (segments,) + inner).copy() if inner or segments else \
        xp.zeros((segments,), dtype=it)
    out = out.reshape((segments,) + inner)
    ufunc.at(out, key, vals)
    return _ordered(xp, out, it).view(dt)


def segment_extreme(xp, x, ids, segments, is_max):
    """:func:`reference_segment_extreme` with one launch of segment.cu's compare-and-swap
    kernel on CuPy float32/float64 arrays."""
    if not (_kernel_ok(x) and is_cupy_array(ids) and ids.dtype.kind in "iu"):
        return reference_segment_extreme(xp, x, ids, segments, is_max)
    rows = int(ids.size)
    inner = int(np.prod(x.shape[ids.ndim:], dtype=np.int64))
    out = xp.full((segments,) + tuple(x.shape[ids.ndim:]), _extreme_fill(x.dtype, is_max),
                  dtype=x.dtype)
    n = rows * inner
    if n and segments:
        flat_ids = _contig(xp, ids.reshape(-1).astype(xp.int64, copy=False))
        get_kernel("segment.cu", f"segment_extreme_{_suffix(x.dtype)}")(
            (_grid(n),), (_BLOCK,),
            (_contig(xp, x), flat_ids, out, np.int64(rows), np.int64(inner),
             np.int64(segments), np.int32(bool(is_max))))
    return out


# --- window ops: convolution patches and max pooling (window.cu) -----------------------------
# The launchers take the arguments of gradtape._speedups' host loops of the same names (NHWC
# arrays, then the geometry); their references are the tap loops of gradtape.ops.nn, which the
# CPU and the strict device run. Outputs must be C-contiguous; inputs are made so.

def window_arrays_ok(*arrays) -> bool:
    """Whether the window kernels take these: CuPy arrays of one dtype, float32 or float64."""
    dt = arrays[0].dtype
    return dt.char in "fd" and all(is_cupy_array(a) and a.dtype == dt for a in arrays)


def _window_out(name, a):
    if not a.flags.c_contiguous:
        raise ValueError(f"{name}: the output array must be C-contiguous")


def _i64(*values):
    return tuple(np.int64(v) for v in values)


def window_im2col(xp, x, p, n0, r0, sh, sw, dh, dw, pt, pl):
    """Patches ``p[nb, rows, OW, KH, KW, C]`` of NHWC ``x`` for images ``[n0, n0 + nb)`` and
    output rows ``[r0, r0 + rows)``, zeros in the padding (every element written)."""
    nb, rows, ow, kh, kw, c = p.shape
    _, h, w, _ = x.shape
    _window_out("im2col", p)
    if p.size:
        get_kernel("window.cu", f"im2col_{_suffix(p.dtype)}")(
            (_grid(p.size),), (_BLOCK,),
            (_contig(xp, x), p) + _i64(n0, nb, r0, rows, h, w, c, ow, kh, kw, sh, sw, dh, dw,
                                       pt, pl))


def window_col2im_add(xp, dx, dp, n0, r0, sh, sw, dh, dw, pt, pl):
    """``dx`` (NHWC) plus the patch gradients ``dp[nb, rows, OW, KH, KW, C]`` of images
    ``[n0, n0 + nb)`` and output rows ``[r0, r0 + rows)``, in place."""
    nb, rows, ow, kh, kw, c = dp.shape
    _, h, w, _ = dx.shape
    _window_out("col2im_add", dx)
    ih0 = max(0, r0 * sh - pt)
    ih1 = min(h, (r0 + rows - 1) * sh - pt + (kh - 1) * dh + 1)
    n = nb * max(0, ih1 - ih0) * w * c
    if n and dp.size:
        get_kernel("window.cu", f"col2im_add_{_suffix(dx.dtype)}")(
            (_grid(n),), (_BLOCK,),
            (_contig(xp, dp), dx) + _i64(n0, nb, r0, rows, ih0, ih1 - ih0, h, w, c, ow, kh, kw,
                                         sh, sw, dh, dw, pt, pl))


def _pool_launch(xp, name, inputs, out, x_shape, y_shape, kh, kw, sh, sw, pt, pl):
    """Launch pooling kernel ``name`` writing all of ``out``: the input arrays, ``out``, then
    the geometry of input ``x_shape`` pooled to ``y_shape`` (both NHWC)."""
    n, h, w, c = x_shape
    _, oh, ow, _ = y_shape
    _window_out(name, out)
    if out.size:
        get_kernel("window.cu", f"{name}_{_suffix(out.dtype)}")(
            (_grid(out.size),), (_BLOCK,),
            tuple(_contig(xp, a) for a in inputs) + (out,)
            + _i64(n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl))


def window_max_pool(xp, x, out, kh, kw, sh, sw, pt, pl):
    """``out[N, OH, OW, C]``: the maximum of each window of NHWC ``x`` (a NaN wins)."""
    _pool_launch(xp, "max_pool", (x,), out, x.shape, out.shape, kh, kw, sh, sw, pt, pl)


def window_max_pool_grad(xp, g, x, y, dx, kh, kw, sh, sw, pt, pl):
    """``dx`` (written whole): each window's gradient ``g`` at its first maximum."""
    _pool_launch(xp, "max_pool_grad", (g, x, y), dx, x.shape, y.shape, kh, kw, sh, sw, pt, pl)


def window_max_pool_gather(xp, v, x, y, out, kh, kw, sh, sw, pt, pl):
    """``out`` (written whole): ``v`` at each window's first maximum."""
    _pool_launch(xp, "max_pool_gather", (v, x, y), out, x.shape, y.shape, kh, kw, sh, sw, pt,
                 pl)


def window_avg_pool(xp, x, out, kh, kw, sh, sw, pt, pl):
    """``out[N, OH, OW, C]``: each window's sum over its taps inside ``x`` times 1 / their
    count."""
    _pool_launch(xp, "avg_pool", (x,), out, x.shape, out.shape, kh, kw, sh, sw, pt, pl)


def window_avg_pool_grad(xp, g, dx, kh, kw, sh, sw, pt, pl):
    """``dx`` (written whole): each window's gradient ``g`` spread evenly over its taps."""
    _pool_launch(xp, "avg_pool_grad", (g,), dx, dx.shape, g.shape, kh, kw, sh, sw, pt, pl)
