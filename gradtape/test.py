"""``gt.test``: TensorFlow's ``tf.test`` device queries, for scripts that check for a GPU, and
``compute_gradient``, its gradient checker."""
from __future__ import annotations

from . import backend as _backend

__all__ = ["is_gpu_available", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support", "compute_gradient"]


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None) -> bool:
    """Whether a visible CUDA GPU is usable (of at least ``(major, minor)`` compute
    capability when given), as the deprecated ``tf.test.is_gpu_available``."""
    gpus = [d for d in _backend.list_devices() if d.kind == "gpu"]
    if min_cuda_compute_capability is None:
        return bool(gpus)
    want = tuple(int(v) for v in min_cuda_compute_capability)
    for d in gpus:
        cc = d.xp.cuda.Device(d.index).compute_capability     # e.g. "90"
        if (int(cc[:-1]), int(cc[-1])) >= want:
            return True
    return False


def gpu_device_name() -> str:
    """``"/device:GPU:0"`` for the first visible GPU, ``""`` when there is none."""
    gpus = [d for d in _backend.list_devices() if d.kind == "gpu"]
    return "/device:GPU:0" if gpus else ""      # (visible GPUs are numbered from 0)


def is_built_with_cuda() -> bool:
    """Whether CuPy (the ``cuda12``/``cuda13`` extra) is installed: gradtape's CUDA support."""
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def is_built_with_gpu_support() -> bool:
    """As :func:`is_built_with_cuda`."""
    return is_built_with_cuda()


_GRAD_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def _jacobians(f, xs, param, y_shape, y_dtype, delta):
    """The theoretical and numeric Jacobians of ``f`` with respect to ``xs[param]``."""
    import numpy as np
    from .tape import GradientTape
    from .tensor import convert_to_tensor
    x = xs[param]
    if x.dtype.name not in _GRAD_DTYPES:
        raise AssertionError(f"compute_gradient: cannot compute gradient for unsupported type "
                             f"{x.dtype.name} of argument {param}")
    if y_dtype.name not in _GRAD_DTYPES:
        raise AssertionError(f"compute_gradient: cannot compute gradient for unsupported type "
                             f"{y_dtype.name} of y")
    x_real = np.dtype(x.dtype.real_dtype.as_numpy_dtype)
    y_np = np.dtype(y_dtype.as_numpy_dtype)
    y_real = np.dtype(y_dtype.real_dtype.as_numpy_dtype)
    x_size = int(np.prod(x.shape, dtype=np.int64)) * (2 if x.dtype.is_complex else 1)
    y_size = int(np.prod(y_shape, dtype=np.int64)) * (2 if y_dtype.is_complex else 1)

    # theoretical: one backward pass per real component of y, as TF's rows of dy
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(*xs)
    theoretical = np.zeros((y_size, x_size), dtype=x_real)
    dy = np.zeros(y_shape, dtype=y_np)
    dy_flat = dy.reshape(-1).view(y_real)
    for row in range(y_size):
        dy_flat[row] = 1
        g = tape.gradient(y, x, output_gradients=convert_to_tensor(dy))
        if g is not None:
            theoretical[row, :] = np.asarray(g.numpy()).reshape(-1).view(x_real)
        dy_flat[row] = 0
    if y_size == 0:
        g = tape.gradient(y, x, output_gradients=convert_to_tensor(dy))
        if g is not None:
            g = g.numpy()
            if tuple(g.shape) != tuple(x.shape):
                raise ValueError(f"Empty gradient has wrong shape: expected {tuple(x.shape)}, "
                                 f"got {tuple(g.shape)}")
            if np.any(g):
                raise ValueError("Empty tensor with nonzero gradients")
    del tape

    # numeric: central differences of each real component of x, in x's and y's dtypes
    values = [np.array(t.numpy()) for t in xs]
    xv = values[param]
    flat = xv.reshape(-1).view(x_real)
    scale = np.asarray(2 * delta, dtype=y_real)[()]
    numeric = np.zeros((y_size, x_size), dtype=x_real)

    def run():
        return np.asarray(f(*[convert_to_tensor(v) for v in values]).numpy())
    for col in range(x_size):
        original = flat[col]
        flat[col] += delta
        y_pos = run()
        flat[col] = original
        flat[col] -= delta
        y_neg = run()
        flat[col] = original
        numeric[:, col] = ((y_pos - y_neg) / scale).reshape(-1).view(y_real)
    return theoretical, numeric


def compute_gradient(f, x, delta=None):
    """The theoretical and numeric Jacobians of ``y = f(*x)``, as ``tf.test.compute_gradient``:
    ``(theoretical, numerical)``, two tuples with one 2-D NumPy array per argument, of
    shape ``[y_size, x_size]`` (a complex value counts as two real ones, its real part
    first) and of the argument's real dtype. The theoretical rows come from the tape (one
    backward pass per element of ``y``), the numeric columns from central differences with
    step ``delta`` (default ``1 / 1024``) computed in the arguments' own dtypes. ``x`` is a
    list or tuple of values convertible to tensors (Python floats become float32)."""
    from .tensor import convert_to_tensor
    from .dtypes import as_dtype
    if not isinstance(x, (list, tuple)):
        raise ValueError(f"`x` must be a list or tuple of values convertible to a Tensor "
                         f"(arguments to `f`), not a {type(x)}")
    if delta is None:
        delta = 1.0 / 1024
    xs = [convert_to_tensor(v) for v in x]
    y = f(*xs)
    y_shape, y_dtype = tuple(y.shape), as_dtype(y.dtype)
    pairs = [_jacobians(f, xs, i, y_shape, y_dtype, delta) for i in range(len(xs))]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
