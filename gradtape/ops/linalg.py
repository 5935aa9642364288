"""Matrix products: matmul (batched), tensordot, einsum."""
from __future__ import annotations

import contextlib
import re
import string

import numpy as np

from ..registry import InvalidArgumentError, apply, apply1, defop
from ..tensor import Tensor
from ._util import as_tensor, binary, dtype_name

__all__ = ["matmul", "tensordot", "einsum", "matvec", "inv", "solve", "det", "slogdet",
           "logdet", "cholesky", "diag_part", "trace", "band_part", "diag", "set_diag",
           "triangular_solve", "cholesky_solve", "eigh", "eigvalsh", "svd", "qr", "lstsq",
           "pinv", "expm", "cross", "tensor_diag", "tensor_diag_part", "lu", "lu_solve",
           "lu_matrix_inverse", "lu_reconstruct", "matrix_rank", "tridiagonal_solve",
           "tridiagonal_matmul", "banded_triangular_solve", "sqrtm", "eig", "eigvals"]


def _t(xp, a):
    return a.swapaxes(-1, -2)   # (the method: np.swapaxes adds a Python layer)


def _mm(xp, a, b):
    """``xp.matmul(a, b)``. On NumPy a contraction of length 1 (an outer product: a weight
    gradient at batch 1, a layer with one input) leaves BLAS for NumPy's naive loop, 3x
    slower than the broadcast product giving the same numbers."""
    if xp is np and a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1 and b.shape[-2] == 1:
        return np.multiply(a, b)
    return xp.matmul(a, b)


def _matmul_fwd(xp, a, b, transpose_a=False, transpose_b=False):
    if transpose_a:
        a = _t(xp, a)
    if transpose_b:
        b = _t(xp, b)
    return _mm(xp, a, b)


def _matmul_vjp(ops, needs, g, ans, a, b, transpose_a=False, transpose_b=False):
    if ops.raw and not transpose_a and not transpose_b:
        # the common case on raw arrays, without the primitive's keyword layer
        xp = ops.xp
        return (_mm(xp, g, b.swapaxes(-1, -2)) if needs[0] else None,
                _mm(xp, a.swapaxes(-1, -2), g) if needs[1] else None)
    mm = ops.matmul
    ga = gb = None
    if not transpose_a and not transpose_b:
        if needs[0]:
            ga = mm(g, b, transpose_b=True)
        if needs[1]:
            gb = mm(a, g, transpose_a=True)
    elif not transpose_a and transpose_b:
        if needs[0]:
            ga = mm(g, b)
        if needs[1]:
            gb = mm(g, a, transpose_a=True)
    elif transpose_a and not transpose_b:
        if needs[0]:
            ga = mm(b, g, transpose_b=True)
        if needs[1]:
            gb = mm(a, g)
    else:
        if needs[0]:
            ga = mm(b, g, transpose_a=True, transpose_b=True)
        if needs[1]:
            gb = mm(g, a, transpose_a=True, transpose_b=True)
    return ga, gb


_matmul = defop("matmul", _matmul_fwd, _matmul_vjp, broadcasts=True, save_output=False)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """Matrix product of the last two axes, broadcasting the leading (batch) axes."""
    a, b = binary("matmul", a, b)
    a = as_tensor(a, "matmul")
    b = as_tensor(b, "matmul")
    if a._value.dtype.kind == "c" and (adjoint_a or adjoint_b):
        from .math import conj       # an adjoint is the conjugated transpose
        a = conj(a) if adjoint_a else a
        b = conj(b) if adjoint_b else b
    ta = bool(transpose_a or adjoint_a)
    tb = bool(transpose_b or adjoint_b)
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"matmul: both operands need rank >= 2, got shapes {sa} and {sb} "
                         "(use gt.linalg.matvec or expand_dims for vectors)")
    if a._value.dtype.kind == "b":
        raise TypeError(f"matmul: bool tensors are not supported, got {dtype_name(a)}")
    ka = sa[-2] if ta else sa[-1]
    kb = sb[-1] if tb else sb[-2]
    if ka != kb:
        raise ValueError(f"matmul: shapes {sa} and {sb} do not align ({ka} != {kb})"
                         + (f" with transpose_a={ta}, transpose_b={tb}" if ta or tb else ""))
    if (len(sa) > 2 or len(sb) > 2) and sa[:-2] != sb[:-2]:
        try:
            np.broadcast_shapes(sa[:-2], sb[:-2])
        except ValueError:
            raise ValueError(f"matmul: batch shapes {sa[:-2]} and {sb[:-2]} are not "
                             "broadcast-compatible") from None
    attrs = None
    if ta or tb:
        attrs = {"transpose_a": ta, "transpose_b": tb}
    return apply(_matmul, (a, b), attrs)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """``a @ b`` for a matrix (batch) ``a`` and a vector (batch) ``b``."""
    from .shape import expand_dims, squeeze
    return squeeze(matmul(a, expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a),
                   -1)


def tensordot(a, b, axes, name=None):
    """Sum products over ``axes`` (an int N for the last/first N, or two lists)."""
    from .shape import reshape, transpose
    a, b = binary("tensordot", a, b)
    a = as_tensor(a, "tensordot")
    b = as_tensor(b, "tensordot")
    ra, rb = a._value.ndim, b._value.ndim
    if isinstance(axes, int):
        if axes < 0 or axes > min(ra, rb):
            raise ValueError(f"tensordot: axes={axes} is out of range for ranks {ra} and {rb}")
        ax_a = list(range(ra - axes, ra))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError(f"tensordot: axes {ax_a} and {ax_b} differ in length")
        ax_a = [x % ra for x in ax_a]
        ax_b = [x % rb for x in ax_b]
    sa, sb = a._value.shape, b._value.shape
    for i, j in zip(ax_a, ax_b):
        if sa[i] != sb[j]:
            raise ValueError(f"tensordot: shapes {tuple(sa)} and {tuple(sb)} do not align on "
                             f"axes {ax_a} and {ax_b} ({sa[i]} != {sb[j]})")
    free_a = [i for i in range(ra) if i not in ax_a]
    free_b = [i for i in range(rb) if i not in ax_b]
    n_free_a = 1
    for i in free_a:
        n_free_a *= sa[i]
    n_sum = 1
    for i in ax_a:
        n_sum *= sa[i]
    n_free_b = 1
    for i in free_b:
        n_free_b *= sb[i]
    at = reshape(transpose(a, free_a + ax_a), (n_free_a, n_sum))
    bt = reshape(transpose(b, ax_b + free_b), (n_sum, n_free_b))
    out = matmul(at, bt)
    return reshape(out, [sa[i] for i in free_a] + [sb[i] for i in free_b])


# --- einsum -------------------------------------------------------------------------------

def _parse(equation, shapes):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        out = None
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"einsum: equation {equation!r} names {len(ins)} operands, "
                         f"got {len(shapes)}")
    # expand '...' into fresh capital-free letters
    used = set(re.sub(r"[^a-zA-Z]", "", eq))
    free = [c for c in string.ascii_letters if c not in used]
    ell_rank = 0
    for sub, shp in zip(ins, shapes):
        if "..." in sub:
            ell_rank = max(ell_rank, len(shp) - (len(sub) - 3))
    ell = "".join(free[:ell_rank])
    ins = [s.replace("...", ell[ell_rank - (len(shp) - (len(s) - 3)):] if "..." in s else "")
           for s, shp in zip(ins, shapes)]
    if out is None:
        counts = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    for s, shp in zip(ins, shapes):
        if len(s) != len(shp):
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of shape "
                             f"{tuple(shp)}")
    return ins, out


def _einsum_fwd(xp, *operands, ins, out):
    return xp.einsum(",".join(ins) + "->" + out, *operands)


def _einsum_vjp(ops, needs, g, ans, *operands, ins, out):
    grads = []
    for i, sub in enumerate(ins):
        if not needs[i]:
            grads.append(None)
            continue
        others = [ins[j] for j in range(len(ins)) if j != i]
        other_ops = [operands[j] for j in range(len(ins)) if j != i]
        # letters of this operand, each once, in first-seen order
        uniq = "".join(dict.fromkeys(sub))
        present = set(out).union(*[set(o) for o in others]) if others else set(out)
        target = "".join(c for c in uniq if c in present)
        gi = ops.einsum(g, *other_ops, ins=[out] + others, out=target)
        # letters summed only inside this operand: broadcast back
        sizes = {}
        for c, d in zip(sub, operands[i].shape):
            sizes[c] = d
        if target != uniq:
            shape_t = tuple(sizes[c] if c in target else 1 for c in uniq)
            gi = ops.einsum(gi, ins=[target], out="".join(c for c in uniq if c in target))
            gi = ops.reshape(gi, shape=shape_t, in_shape=tuple(gi.shape))
            gi = ops.broadcast_to(gi, shape=tuple(sizes[c] for c in uniq))
        if uniq != sub:
            # repeated letters (a diagonal): place the gradient on the diagonal
            gi = _undiagonal(ops, gi, uniq, sub, sizes, operands[i])
        grads.append(gi)
    return tuple(grads)


def _undiagonal(ops, gi, uniq, sub, sizes, like):
    # build out[sub] = gi[uniq] * prod(delta) via einsum with identity matrices
    eyes = []
    subs = [uniq]
    letters = list(uniq)
    mapping = []
    fresh = iter(c for c in string.ascii_letters if c not in sub and c not in uniq)
    for c in sub:
        if c in mapping:
            n = next(fresh)
            eyes.append(ops.eye_like(like, n=sizes[c]))
            subs.append(c + n)
            letters.append(n)
            mapping.append(n)
        else:
            mapping.append(c)
    target = "".join(mapping)
    return ops.einsum(gi, *eyes, ins=subs, out=target)


_einsum = defop("einsum", _einsum_fwd, _einsum_vjp, save_output=False, broadcasts=True,
                 batch_rule=False)
_eye_like = defop("eye_like", lambda xp, x, n: xp.eye(n, dtype=x.dtype), nondiff=True)


def einsum(equation, *inputs, **kwargs):
    """Einstein summation, as ``tf.einsum`` (``...`` broadcasting included)."""
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    ts = [as_tensor(t, "einsum") for t in inputs]
    for t in ts[1:]:
        if t._value.dtype != ts[0]._value.dtype:
            raise TypeError(f"einsum: operands have different dtypes {dtype_name(ts[0])} and "
                            f"{dtype_name(t)}")
    ins, out = _parse(equation, [t._value.shape for t in ts])
    return apply(_einsum, tuple(ts), {"ins": ins, "out": out})


# --- inverses, solves, determinants, Cholesky ------------------------------------------------

def _mT(ops, x):
    """``x`` with its last two axes swapped (of any rank: a batched cotangent too)."""
    n = x.ndim
    return ops.transpose(x, perm=tuple(range(n - 2)) + (n - 1, n - 2))


def _per_matrix(ops, g):
    """A per-matrix cotangent ``g[...]`` shaped ``[..., 1, 1]`` to scale whole matrices."""
    return ops.reshape(g, shape=tuple(g.shape) + (1, 1), in_shape=tuple(g.shape))


def _like(ops, raw, like):
    """A constant array as the rules' ``ops`` take it: raw, or a tensor on ``like``'s device."""
    return raw if ops.raw else Tensor(raw, like._device)


def _square(opname, a, complex_ok=False):
    a = as_tensor(a, opname)
    shape = tuple(a._value.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{opname}: expected square matrices of shape [..., n, n], got "
                         f"shape {shape}")
    if a._value.dtype.char not in ("fdFD" if complex_ok else "fd"):
        raise TypeError(f"{opname}: matrices must be float32 or float64"
                        f"{', complex64 or complex128' if complex_ok else ''}, got "
                        f"{dtype_name(a)}")
    return a


def _inv_vjp(ops, needs, g, ans, a):
    # d(A^-1) = -A^-1 dA A^-1
    return (-ops.matmul(ops.matmul(ans, g, transpose_a=True), ans, transpose_b=True),)


_inv = defop("matrix_inverse", lambda xp, a: xp.linalg.inv(a), _inv_vjp, save_inputs=False)


def inv(input, adjoint=False, name=None) -> Tensor:
    """The inverse of each square matrix in the last two axes (``adjoint``: of its
    transpose). A singular matrix raises on the CPU; on a GPU it gives inf or nan."""
    a = _square("linalg.inv", input, complex_ok=True)
    out = apply1(_inv, a)
    if adjoint:
        from .shape import transpose
        n = a._value.ndim
        out = transpose(out, list(range(n - 2)) + [n - 1, n - 2], conjugate=True)
    return out


def _solve_fwd(xp, a, b, adjoint=False):
    return xp.linalg.solve(a.swapaxes(-1, -2) if adjoint else a, b)


def _solve_vjp(ops, needs, g, ans, a, b, adjoint=False):
    gb = ops.matrix_solve(a, g, adjoint=not adjoint)
    ga = None
    if needs[0]:
        # A X = B: dA = -gB X^T; A^T X = B: dA = -X gB^T
        ga = -(ops.matmul(ans, gb, transpose_b=True) if adjoint
               else ops.matmul(gb, ans, transpose_b=True))
    return ga, (gb if needs[1] else None)


_solve = defop("matrix_solve", _solve_fwd, _solve_vjp, batch_rule=False)


def solve(matrix, rhs, adjoint=False, name=None) -> Tensor:
    """``X`` with ``matrix @ X = rhs`` (``adjoint``: ``matrix^T @ X = rhs``) for matrices
    ``[..., n, n]`` and right-hand sides ``[..., n, k]`` of the same batch shape."""
    a = _square("linalg.solve", matrix, complex_ok=True)
    b = as_tensor(rhs, "linalg.solve")
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    if len(sb) != len(sa) or sb[:-2] != sa[:-2] or sb[-2] != sa[-1]:
        raise ValueError(f"linalg.solve: right-hand sides of shape {sb} do not fit matrices of "
                         f"shape {sa} (expected {sa[:-1] + ('k',)})")
    if b.dtype != a.dtype:
        raise TypeError(f"linalg.solve: the matrix is {dtype_name(a)}, the right-hand sides "
                        f"{dtype_name(b)}")
    if adjoint and a._value.dtype.kind == "c":
        from .math import conj
        a = conj(a)              # (the primitive's adjoint is the plain transpose)
    return apply(_solve, (a, b), {"adjoint": True} if adjoint else None)


def _det_vjp(ops, needs, g, ans, a):
    # d det(A) = det(A) tr(A^-1 dA)
    return (_per_matrix(ops, g * ans) * _mT(ops, ops.matrix_inverse(a)),)


_det = defop("matrix_determinant", lambda xp, a: xp.linalg.det(a), _det_vjp)


def det(input, name=None) -> Tensor:
    """The determinant of each square matrix in the last two axes."""
    return apply1(_det, _square("linalg.det", input, complex_ok=True))


def _logabsdet_fwd(xp, a):
    return xp.linalg.slogdet(a)[1]


def _logabsdet_vjp(ops, needs, g, ans, a):
    # d log|det A| = tr(A^-1 dA)
    return (_per_matrix(ops, g) * _mT(ops, ops.matrix_inverse(a)),)


_logabsdet = defop("log_abs_determinant", _logabsdet_fwd, _logabsdet_vjp, save_output=False)


def slogdet(input, name=None):
    """``(sign, log_abs_determinant)`` of each square matrix: the determinant is
    ``sign * exp(log_abs_determinant)``, without overflow. The sign has no gradient."""
    a = _square("linalg.slogdet", input)
    dev = a._device
    with dev.activate():
        sign = dev.xp.asarray(dev.xp.linalg.slogdet(a._value)[0])
    return Tensor(sign, dev), apply1(_logabsdet, a)


def logdet(matrix, name=None) -> Tensor:
    """``log(det(matrix))`` of symmetric positive definite matrices, through the Cholesky
    factor as TensorFlow computes it (a matrix that is not positive definite raises on the
    CPU and gives nan on a GPU)."""
    from .math import log
    from .reduce import reduce_sum
    chol = cholesky(_square("linalg.logdet", matrix))
    return reduce_sum(log(diag_part(chol)), axis=-1) * 2.0


def _cholesky_vjp(ops, needs, g, ans, a):
    # TensorFlow's rule (Murray 2016): with L the factor and G its cotangent,
    # P = Phi(L^T G) (the lower triangle, diagonal halved), S = L^-T P L^-1,
    # dA = (S + S^T) / 2
    lo = ans
    n = lo.shape[-1]
    xp = ops.xp if ops.raw else lo._device.xp
    with contextlib.nullcontext() if ops.raw else lo._device.activate():
        phi = xp.tril(xp.ones((n, n), dtype=lo.dtype)) - 0.5 * xp.eye(n, dtype=lo.dtype)
    linv = ops.matrix_inverse(lo)
    middle = ops.matmul(lo, g, transpose_a=True) * _like(ops, phi, lo)
    s = ops.matmul(ops.matmul(linv, middle, transpose_a=True), linv)
    return ((s + _mT(ops, s)) * 0.5,)


_cholesky = defop("cholesky", lambda xp, a: xp.linalg.cholesky(a), _cholesky_vjp,
                  save_inputs=False)


def cholesky(input, name=None) -> Tensor:
    """The lower-triangular ``L`` with ``L @ L^T = input`` for symmetric positive definite
    matrices (only the lower triangle is read). A matrix that is not positive definite
    raises on the CPU; on a GPU it gives nan. The gradient is TensorFlow's: symmetric, for
    an input that is symmetric by construction (``X @ X^T + c I``)."""
    return apply1(_cholesky, _square("linalg.cholesky", input))


def trace(x, name=None) -> Tensor:
    """The sum of each matrix's main diagonal."""
    from .reduce import reduce_sum
    return reduce_sum(diag_part(x), axis=-1)


def band_part(input, num_lower, num_upper, name=None) -> Tensor:
    """Each matrix with everything outside a band zeroed: ``num_lower`` diagonals below the
    main one and ``num_upper`` above kept (a negative count keeps the whole triangle)."""
    from .math import logical_and, where
    from .core import zeros_like
    from .shape import range as _range, reshape
    x = as_tensor(input, "linalg.band_part")
    shape = tuple(x._value.shape)
    if len(shape) < 2:
        raise ValueError(f"linalg.band_part: expected matrices [..., m, n], got shape {shape}")
    m, n = shape[-2:]
    i = reshape(_range(m), (m, 1))
    j = reshape(_range(n), (1, n))
    keep_lower = (i - j) <= int(num_lower) if int(num_lower) >= 0 else None
    keep_upper = (j - i) <= int(num_upper) if int(num_upper) >= 0 else None
    if keep_lower is None and keep_upper is None:
        return x
    keep = keep_lower if keep_upper is None else keep_upper if keep_lower is None else \
        logical_and(keep_lower, keep_upper)
    return where(keep, x, zeros_like(x))


# --- diagonals ------------------------------------------------------------------------------

def _diag_index(xp, rows, cols, k):
    """Row and column indices (device arrays) of diagonal ``k`` of a ``rows x cols`` matrix."""
    n = _diag_len(rows, cols, k)
    i = xp.arange(n)
    return i + max(-k, 0), i + max(k, 0)


def _diag_len(rows, cols, k):
    return max(0, min(rows + min(k, 0), cols - max(k, 0)))


def _matrix_diag_fwd(xp, d, k, rows, cols, padding):
    out = xp.full(tuple(d.shape[:-1]) + (rows, cols), padding, dtype=d.dtype)
    r, c = _diag_index(xp, rows, cols, k)
    out[..., r, c] = d
    return out


def _matrix_diag_vjp(ops, needs, g, ans, d, k, rows, cols, padding):
    return (ops.matrix_diag_part(g, k=k, rows=rows, cols=cols),)


def _matrix_diag_part_fwd(xp, x, k):
    # a copy, not a view into x's buffer (which an optimizer may update in place)
    return xp.diagonal(x, offset=k, axis1=x.ndim - 2, axis2=x.ndim - 1).copy()


def _matrix_diag_part_vjp(ops, needs, g, ans, x, k, rows, cols):
    return (ops.matrix_diag(g, k=k, rows=rows, cols=cols, padding=0),)


def _matrix_set_diag_fwd(xp, x, d, k):
    out = x.copy()
    r, c = _diag_index(xp, x.shape[-2], x.shape[-1], k)
    out[..., r, c] = d
    return out


def _matrix_set_diag_vjp(ops, needs, g, ans, x, d, k):
    gx = None
    rows, cols = g.shape[-2:]
    if needs[0]:
        keep = _const(ops, g, lambda xp, dt: _matrix_set_diag_fwd(
            xp, xp.ones((rows, cols), dtype=dt), xp.zeros(_diag_len(rows, cols, k), dtype=dt),
            k))
        gx = g * keep
    return gx, (ops.matrix_diag_part(g, k=k, rows=rows, cols=cols) if needs[1] else None)


_matrix_diag = defop("matrix_diag", _matrix_diag_fwd, _matrix_diag_vjp, save_inputs=False,
                     save_output=False)
_matrix_diag_part = defop("matrix_diag_part",
                          lambda xp, x, k, rows, cols: _matrix_diag_part_fwd(xp, x, k),
                          _matrix_diag_part_vjp, save_inputs=False, save_output=False)
_matrix_set_diag = defop("matrix_set_diag", _matrix_set_diag_fwd, _matrix_set_diag_vjp,
                         save_inputs=False, save_output=False)


def _const(ops, like, make):
    """A constant array ``make(xp, dtype)`` (``dtype``: ``like``'s) as the rules' ``ops``
    take it: a raw array of the namespace, or a tensor on ``like``'s device."""
    if ops.raw:
        return make(ops.xp, like.dtype)
    dev = like._device
    with dev.activate():
        return Tensor(make(dev.xp, like._value.dtype), dev)


def _single_k(opname, k, align):
    if align not in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        raise ValueError(f"{opname}: align must be 'RIGHT_LEFT', 'LEFT_RIGHT', 'LEFT_LEFT' or "
                         f"'RIGHT_RIGHT', got {align!r}")
    if isinstance(k, (list, tuple)):
        if len(k) == 2 and k[0] == k[1]:
            k = k[0]
        else:
            raise ValueError(f"{opname}: only a single diagonal (an int k) is supported, got "
                             f"k={tuple(k)!r}")
    if isinstance(k, Tensor):
        k = int(k.numpy())
    return int(k)


def _matrix_input(opname, x, floats=False):
    x = as_tensor(x, opname)
    shape = tuple(x._value.shape)
    if len(shape) < 2:
        raise ValueError(f"{opname}: expected matrices of shape [..., m, n], got shape {shape}")
    if floats and x._value.dtype.char not in "fd":
        raise TypeError(f"{opname}: matrices must be float32 or float64, got {dtype_name(x)}")
    return x


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT") -> Tensor:
    """Diagonal ``k`` of each matrix in the last two axes (0: the main diagonal, > 0 above
    it, < 0 below), of length ``min(m + min(k, 0), n - max(k, 0))``. Only a single
    diagonal: a band ``k=(lo, hi)`` with lo != hi is not supported."""
    k = _single_k("linalg.diag_part", k, align)
    x = _matrix_input("linalg.diag_part", input)
    rows, cols = x._value.shape[-2:]
    if not -rows < k < cols and not (rows == 0 or cols == 0):
        raise InvalidArgumentError(f"linalg.diag_part: diagonal k={k} is out of range for "
                                   f"matrices of shape {tuple(x._value.shape)}")
    return apply1(_matrix_diag_part, x, {"k": k, "rows": rows, "cols": cols})


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT") -> Tensor:
    """Matrices ``[..., num_rows, num_cols]`` holding ``diagonal [..., L]`` on diagonal ``k``
    and ``padding_value`` elsewhere. With ``num_rows``/``num_cols`` left at -1 the matrix is
    the smallest that fits (square when both are -1), as TensorFlow's. A single diagonal
    only (``k`` an int)."""
    k = _single_k("linalg.diag", k, align)
    d = as_tensor(diagonal, "linalg.diag")
    if d._value.ndim < 1:
        raise ValueError(f"linalg.diag: the diagonal needs rank >= 1, got shape "
                         f"{tuple(d._value.shape)}")
    n = d._value.shape[-1]
    min_rows, min_cols = n + max(-k, 0), n + max(k, 0)
    rows, cols = int(num_rows), int(num_cols)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    if _diag_len(rows, cols, k) != n:
        raise InvalidArgumentError(
            f"linalg.diag: a diagonal of length {n} does not fit diagonal k={k} of "
            f"{rows} x {cols} matrices")
    if isinstance(padding_value, Tensor):
        padding_value = padding_value.numpy().item()
    return apply1(_matrix_diag, d, {"k": k, "rows": rows, "cols": cols,
                                    "padding": padding_value})


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT") -> Tensor:
    """``input`` with its diagonal ``k`` replaced by ``diagonal`` (shape ``[..., L]``, the
    same batch shape). A single diagonal only (``k`` an int)."""
    k = _single_k("linalg.set_diag", k, align)
    x = _matrix_input("linalg.set_diag", input)
    d = as_tensor(diagonal, "linalg.set_diag")
    if d._value.dtype != x._value.dtype:
        raise TypeError(f"linalg.set_diag: the matrices are {dtype_name(x)}, the diagonal "
                        f"{dtype_name(d)}")
    sx = tuple(x._value.shape)
    want = sx[:-2] + (_diag_len(sx[-2], sx[-1], k),)
    if tuple(d._value.shape) != want:
        raise InvalidArgumentError(f"linalg.set_diag: a diagonal of shape "
                                   f"{tuple(d._value.shape)} does not fit diagonal k={k} of "
                                   f"matrices of shape {sx} (expected {want})")
    return apply(_matrix_set_diag, (x, d), {"k": k})


# --- triangular solves ------------------------------------------------------------------------

def _triangle(xp, n, lower, dtype=bool):
    t = xp.tri(n, dtype=bool)
    t = t if lower else t.T
    return t if dtype is bool else t.astype(dtype)


def _batch_shape(sa, sb):
    return tuple(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))


def _trisolve_fwd(xp, a, b, lower=True, adjoint=False):
    t = xp.where(_triangle(xp, a.shape[-1], lower), a, a.dtype.type(0))
    if adjoint:
        t = t.swapaxes(-1, -2)
    batch = _batch_shape(t.shape, b.shape)
    if t.shape[:-2] != batch:
        t = xp.ascontiguousarray(xp.broadcast_to(t, batch + tuple(t.shape[-2:])))
    if b.shape[:-2] != batch:
        b = xp.ascontiguousarray(xp.broadcast_to(b, batch + tuple(b.shape[-2:])))
    return xp.linalg.solve(t, b)


def _trisolve_vjp(ops, needs, g, ans, a, b, lower=True, adjoint=False):
    # TensorFlow's rule: gB = A^-T g; gA = -gB X^T (A^T X = B: -X gB^T), on the triangle
    gb = ops.matrix_triangular_solve(a, g, lower=lower, adjoint=not adjoint)
    ga = None
    if needs[0]:
        ga = -(ops.matmul(ans, gb, transpose_b=True) if adjoint
               else ops.matmul(gb, ans, transpose_b=True))
        n = a.shape[-1]
        ga = ga * _const(ops, a, lambda xp, dt: _triangle(xp, n, lower, dt))
    return ga, (gb if needs[1] else None)


_trisolve = defop("matrix_triangular_solve", _trisolve_fwd, _trisolve_vjp, broadcasts=True,
                  batch_rule=False)


def _solve_args(opname, matrix, rhs):
    a = _square(opname, matrix)
    return a, _rhs_for(opname, a, rhs, a._value.shape[-1])


def _rhs_for(opname, a, rhs, rows):
    """``rhs`` checked against matrices ``a``: same dtype, ``rows`` rows, batch shapes that
    broadcast."""
    b = as_tensor(rhs, opname)
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    if b._value.dtype != a._value.dtype:
        raise TypeError(f"{opname}: the matrix is {dtype_name(a)}, the right-hand sides "
                        f"{dtype_name(b)}")
    if len(sb) < 2 or sb[-2] != rows:
        raise ValueError(f"{opname}: right-hand sides of shape {sb} do not fit matrices of "
                         f"shape {sa} (expected [..., {rows}, k])")
    try:
        _batch_shape(sa, sb)
    except ValueError:
        raise ValueError(f"{opname}: batch shapes {sa[:-2]} and {sb[:-2]} are not "
                         "broadcast-compatible") from None
    return b


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None) -> Tensor:
    """``X`` with ``matrix @ X = rhs`` for triangular ``matrix [..., n, n]`` (only its lower
    triangle is read, or its upper one with ``lower=False``); ``adjoint``: ``matrix^T @ X =
    rhs``. The batch axes broadcast. A zero on the diagonal raises on the CPU (TensorFlow
    gives inf there); on a GPU it gives inf or nan."""
    a, b = _solve_args("linalg.triangular_solve", matrix, rhs)
    return apply(_trisolve, (a, b), {"lower": bool(lower), "adjoint": bool(adjoint)})


def cholesky_solve(chol, rhs, name=None) -> Tensor:
    """``X`` with ``A @ X = rhs`` given ``chol``, the Cholesky factor of ``A``
    (``gt.linalg.cholesky(A)``): two triangular solves."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


# --- symmetric eigendecomposition ---------------------------------------------------------------

def _row(ops, x):
    """``x [..., k]`` as ``[..., 1, k]``."""
    shape = tuple(x.shape)
    return ops.reshape(x, shape=shape[:-1] + (1, shape[-1]), in_shape=shape)


def _col(ops, x):
    """``x [..., k]`` as ``[..., k, 1]``."""
    shape = tuple(x.shape)
    return ops.reshape(x, shape=shape + (1,), in_shape=shape)


def _safe_reciprocal(x):
    """TensorFlow's Lorentz-broadened ``1 / x``: 0 at 0, no nan at a degenerate pair."""
    return x / (x * x + 1e-20)


def _off_diagonal(ops, like, k):
    return _const(ops, like, lambda xp, dt: 1 - xp.eye(k, dtype=dt))


def _eigh_fwd(xp, a):
    e, v = xp.linalg.eigh(a)
    return [e, v]


def _eigh_vjp(ops, needs, g, ans, a):
    # TensorFlow's rule: with F_ij = 1 / (e_j - e_i) off the diagonal,
    # G = V (diag(g_e) + F * V^T g_V) V^T, symmetrised onto the lower triangle (the only one
    # read), its diagonal halved.
    ge, gv = g
    e, v = ans
    n = e.shape[-1]
    f = _safe_reciprocal(_row(ops, e) - _col(ops, e)) * _off_diagonal(ops, e, n)
    inner = _row(ops, ge) * _const(ops, e, lambda xp, dt: xp.eye(n, dtype=dt)) \
        + f * ops.matmul(v, gv, transpose_a=True)
    ga = ops.matmul(v, ops.matmul(inner, v, transpose_b=True))
    phi = _const(ops, e, lambda xp, dt: _triangle(xp, n, True, dt) - 0.5 * xp.eye(n, dtype=dt))
    return ((ga + _mT(ops, ga)) * phi,)


_eigh = defop("self_adjoint_eig", _eigh_fwd, _eigh_vjp, multi=True, save_inputs=False,
              batch_rule=False)


def eigh(tensor, name=None):
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (the columns of ``v``) of
    each symmetric matrix in the last two axes; only the lower triangle is read. The
    gradient is TensorFlow's and needs distinct eigenvalues (an eigenvector's sign is
    whatever the device's solver gives)."""
    e, v = apply1(_eigh, _square("linalg.eigh", tensor))
    return e, v


def eigvalsh(tensor, name=None) -> Tensor:
    """The eigenvalues (ascending) of each symmetric matrix (the lower triangle is read)."""
    return eigh(tensor)[0]


# --- singular value decomposition -----------------------------------------------------------

def _svd_fwd(xp, a, full_matrices=False):
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return [s, u, vh.swapaxes(-1, -2)]


def _svd_vjp(ops, needs, g, ans, a, full_matrices=False):
    # TensorFlow's rule (Townsend's derivation for the reduced case)
    gs, gu, gv = g
    s, u, v = ans
    m, n = u.shape[-2], v.shape[-2]
    shape = (m, n)
    use_adjoint = m > n
    if use_adjoint:               # differentiate A^T = V S U^T instead
        m, n = n, m
        u, v = v, u
        gu, gv = gv, gu
    if full_matrices and abs(m - n) > 1:
        raise NotImplementedError(
            "svd: the gradient with full_matrices=True needs |m - n| <= 1 (as TensorFlow), "
            f"got {shape[0]} x {shape[1]} matrices; use full_matrices=False")
    k = s.shape[-1]
    eye = _const(ops, s, lambda xp, dt: xp.eye(k, dtype=dt))
    s2 = s * s
    f = _safe_reciprocal(_row(ops, s2) - _col(ops, s2)) * _off_diagonal(ops, s, k)
    if full_matrices and m != n:
        v1, gv1 = v[..., :, :m], gv[..., :, :m]
    else:
        v1, gv1 = v, gv
    f_u = f * ops.matmul(u, gu, transpose_a=True)
    f_v = f * ops.matmul(v1, gv1, transpose_a=True)
    # diag(gs) + (F_u + F_u^T) S + S (F_v + F_v^T), with S diagonal as a broadcast product
    middle = _row(ops, gs) * eye + (f_u + _mT(ops, f_u)) * _row(ops, s) \
        + _col(ops, s) * (f_v + _mT(ops, f_v))
    ga = ops.matmul(u, ops.matmul(middle, v1, transpose_b=True))
    if m != n:
        gv1t = _mT(ops, gv1)
        term2 = gv1t - ops.matmul(ops.matmul(gv1t, v1), v1, transpose_b=True)
        if full_matrices:
            v2, gv2 = v[..., :, m:n], gv[..., :, m:n]
            term2 = term2 - ops.matmul(ops.matmul(v1, gv2, transpose_a=True), v2,
                                       transpose_b=True)
        ga = ga + ops.matmul(u * _row(ops, _safe_reciprocal(s)), term2)
    return (_mT(ops, ga) if use_adjoint else ga,)


_svd = defop("svd", _svd_fwd, _svd_vjp, multi=True, save_inputs=False, batch_rule=False)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """The singular value decomposition of each matrix ``[..., m, n]``: ``(s, u, v)`` with
    ``tensor = u @ diag(s) @ v^T`` (``v``, not ``v^T``, as TensorFlow), ``s`` descending;
    ``u [..., m, p]``, ``v [..., n, p]`` with ``p = min(m, n)``, or square with
    ``full_matrices``. ``compute_uv=False`` returns ``s`` alone. The gradient is
    TensorFlow's: it needs distinct nonzero singular values for ``u`` and ``v`` (only
    ``s``: any), and with ``full_matrices`` matrices at most one row or column from square."""
    a = _matrix_input("linalg.svd", tensor, floats=True)
    if not compute_uv:
        return apply1(_svd, a, {"full_matrices": False})[0]
    s, u, v = apply1(_svd, a, {"full_matrices": bool(full_matrices)})
    return s, u, v


# --- QR ---------------------------------------------------------------------------------------

def _qr_fwd(xp, a, full_matrices=False):
    q, r = xp.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q, r]


def _qr_vjp(ops, needs, g, ans, a, full_matrices=False):
    # TensorFlow's rule (Roberts & Roberts, arXiv:2009.10071)
    dq, dr = g
    q, r = ans
    m, n = q.shape[-2], r.shape[-1]
    if full_matrices and m > n:
        raise NotImplementedError(
            "qr: the gradient with full_matrices=True needs rows <= columns (as TensorFlow), "
            f"got matrices of shape {tuple(a.shape)}; use full_matrices=False")

    def square_and_deep(q, r, dq, dr):
        k = r.shape[-1]
        lower = _const(ops, r, lambda xp, dt: _triangle(xp, k, True, dt))

        def times_r_inv_t(x):     # x @ R^-T, R upper triangular
            return _mT(ops, ops.matrix_triangular_solve(r, _mT(ops, x), lower=False,
                                                        adjoint=False))
        qdq = ops.matmul(q, dq, transpose_a=True)
        rdr = ops.matmul(r, dr, transpose_b=True)
        tril = (qdq - _mT(ops, qdq) + rdr - _mT(ops, rdr)) * lower
        return ops.matmul(q, dr + times_r_inv_t(tril)) \
            + times_r_inv_t(dq - ops.matmul(q, qdq))

    if m >= n:
        return (square_and_deep(q, r, dq, dr),)
    # a wide matrix: A = [X, Y], R = [U, V] reduces to the square case
    y = a[..., :, m:]
    u = r[..., :, :m]
    dv = dr[..., :, m:]
    dx = square_and_deep(q, u, dq + ops.matmul(y, dv, transpose_b=True), dr[..., :, :m])
    dy = ops.matmul(q, dv)
    return (ops.concat(dx, dy, axis=-1, sizes=(m, n - m)),)


_qr = defop("qr", _qr_fwd, _qr_vjp, multi=True, batch_rule=False)


def qr(input, full_matrices=False, name=None):
    """``(q, r)`` with ``input = q @ r``, ``q`` orthonormal columns and ``r`` upper
    triangular, for matrices ``[..., m, n]``: ``q [..., m, p]``, ``r [..., p, n]`` with
    ``p = min(m, n)`` (``full_matrices``: ``p = m``). The gradient is TensorFlow's (not with
    ``full_matrices`` for m > n, as there)."""
    a = _matrix_input("linalg.qr", input, floats=True)
    q, r = apply1(_qr, a, {"full_matrices": bool(full_matrices)})
    return q, r


# --- composites: least squares, pseudo-inverse, exponential, cross product -------------------

def _eye_on(x, n):
    """An ``n x n`` identity of ``x``'s dtype on ``x``'s device (no gradient)."""
    dev = x._device
    with dev.activate():
        return Tensor(dev.xp.eye(n, dtype=x._value.dtype), dev)


def _scalar_on(x, value, opname):
    """``value`` (a number or a 0-d tensor) as a number or a tensor of ``x``'s dtype."""
    if isinstance(value, Tensor):
        from .core import cast
        if value._value.ndim != 0:
            raise ValueError(f"{opname}: expected a scalar, got shape "
                             f"{tuple(value._value.shape)}")
        return cast(value, x.dtype)
    return float(value)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None) -> Tensor:
    """The least-squares solutions ``X [..., n, k]`` of ``matrix [..., m, n] @ X = rhs
    [..., m, k]`` (the batch axes broadcast), as TensorFlow's ``matrix_solve_ls``.

    ``fast=True``: through the Cholesky factor of the regularised normal equations,
    ``(A^T A + l2 I)^-1 A^T B`` for m >= n, ``A^T (A A^T + l2 I)^-1 B`` for m < n (the
    minimum-norm solution); full-rank matrices only (a rank-deficient one is not positive
    definite: raises on the CPU, nan on a GPU). ``fast=False``: the minimum-norm solution
    through the singular value decomposition, for any rank; ``l2_regularizer`` is ignored
    there, as in TensorFlow (whose gradient is defined only for ``fast=True``; here it is
    the SVD's)."""
    a = _matrix_input("linalg.lstsq", matrix, floats=True)
    sa = tuple(a._value.shape)
    b = _rhs_for("linalg.lstsq", a, rhs, sa[-2])
    m, n = sa[-2:]
    if not fast:
        return matmul(pinv(a), b)
    l2 = _scalar_on(a, l2_regularizer, "linalg.lstsq")
    if m >= n:
        gram = matmul(a, a, transpose_a=True)
        if isinstance(l2, Tensor) or l2 != 0.0:
            gram = gram + l2 * _eye_on(a, n)
        return cholesky_solve(cholesky(gram), matmul(a, b, transpose_a=True))
    gram = matmul(a, a, transpose_b=True)
    if isinstance(l2, Tensor) or l2 != 0.0:
        gram = gram + l2 * _eye_on(a, m)
    return matmul(a, cholesky_solve(cholesky(gram), b), transpose_a=True)


def pinv(a, rcond=None, validate_args=False, name=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse ``[..., n, m]`` of each matrix ``[..., m, n]``,
    through the singular value decomposition as TensorFlow computes it: singular values at
    most ``rcond`` times the largest count as zero (default ``10 * max(m, n) * eps`` of the
    dtype). Differentiable where the rank is constant (through the SVD's gradient)."""
    from .math import where
    from .reduce import reduce_max
    from .shape import expand_dims
    x = _matrix_input("linalg.pinv", a, floats=True)
    m, n = x._value.shape[-2:]
    if rcond is None:
        rcond = 10.0 * max(m, n) * float(np.finfo(x._value.dtype).eps)
    rcond = _scalar_on(x, rcond, "linalg.pinv")
    s, u, v = svd(x, full_matrices=False, compute_uv=True)
    cutoff = rcond * reduce_max(s, axis=-1)
    s = where(s > expand_dims(cutoff, -1), s, float("inf"))
    return matmul(v / expand_dims(s, -2), u, transpose_b=True)


# Pade approximants of exp (Higham 2005), as tf.linalg.expm
_PADE = {
    3: [120.0, 60.0, 12.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0],
}


def _pade(x, eye, order):
    """``(U, V)`` of the Pade approximant ``exp(x) ~ (V - U)^-1 (V + U)``."""
    b = _PADE[order]
    x2 = matmul(x, x)
    if order == 3:
        return matmul(x, x2 + b[1] * eye), b[2] * x2 + b[0] * eye
    x4 = matmul(x2, x2)
    if order == 5:
        return (matmul(x, x4 + b[3] * x2 + b[1] * eye),
                b[4] * x4 + b[2] * x2 + b[0] * eye)
    x6 = matmul(x4, x2)
    if order == 7:
        return (matmul(x, x6 + b[5] * x4 + b[3] * x2 + b[1] * eye),
                b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye)
    if order == 9:
        x8 = matmul(x6, x2)
        return (matmul(x, x8 + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye),
                b[8] * x8 + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye)
    u = matmul(x6, x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 \
        + b[1] * eye
    v = matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 \
        + b[2] * x2 + b[0] * eye
    return matmul(x, u), v


def expm(input, name=None) -> Tensor:
    """The matrix exponential of each square matrix in the last two axes, by TensorFlow's
    scaling and squaring with Pade approximants (orders 3 to 7 in float32, 3 to 13 in
    float64, picked per matrix by its 1-norm), differentiable through those operations.
    The number of squarings is read on the host once (one wait for a device, as TF's
    eager loop); a matrix with a non-finite entry gives all-nan matrices, as TF."""
    from .core import ones_like, stop_gradient
    from .math import abs as _abs, floor, log, maximum, pow as _pow, where
    from .reduce import reduce_max, reduce_sum
    from .shape import reshape
    a = _square("linalg.expm", input)
    shape = tuple(a._value.shape)
    n = shape[-1]
    if n == 0:
        return a
    x = reshape(a, (-1, n, n))
    l1 = reduce_max(reduce_sum(_abs(x), axis=-2), axis=-1)
    l1 = stop_gradient(reshape(l1, (-1, 1, 1)))
    eye = _eye_on(a, n)
    if a._value.dtype == np.float32:
        maxnorm, orders = 3.925724783138660, (3, 5, 7)
        bounds = (4.258730016922831e-001, 1.880152677804762e+000)
    else:
        maxnorm, orders = 5.371920351148152, (3, 5, 7, 9, 13)
        bounds = (1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                  2.097847961257068e+000)
    squarings = maximum(floor(log(l1 / maxnorm) / float(np.log(2.0))), 0.0)
    most = float(reduce_max(squarings).numpy())
    if not np.isfinite(most):
        return reshape(ones_like(x) * float("nan"), shape)
    scaled = x / _pow(ones_like(squarings) * 2.0, squarings)
    pairs = [_pade(x, eye, o) for o in orders[:-1]] + [_pade(scaled, eye, orders[-1])]
    u, v = pairs[-1]
    for bound, (ui, vi) in zip(bounds[::-1], pairs[-2::-1]):
        small = l1 < bound
        u, v = where(small, ui, u), where(small, vi, v)
    result = solve(v - u, u + v)
    for i in range(int(most)):
        result = where(squarings > float(i), matmul(result, result), result)
    return reshape(result, shape)


def cross(a, b, name=None) -> Tensor:
    """The cross product of 3-vectors along the last axis (``a`` and ``b`` of one shape)."""
    from .shape import stack
    a, b = binary("linalg.cross", a, b)
    a = as_tensor(a, "linalg.cross")
    b = as_tensor(b, "linalg.cross")
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    if sa != sb:
        raise InvalidArgumentError(f"linalg.cross: both inputs must have the same shape, got "
                                   f"{sa} and {sb}")
    if not sa or sa[-1] != 3:
        raise InvalidArgumentError(f"linalg.cross: the last axis must hold 3-vectors, got "
                                   f"shape {sa}")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def tensor_diag(diagonal, name=None) -> Tensor:
    """The rank-2k tensor with ``out[i1..ik, i1..ik] = diagonal[i1..ik]``, zero elsewhere."""
    from .shape import reshape
    d = as_tensor(diagonal, "linalg.tensor_diag")
    shape = tuple(d._value.shape)
    size = int(np.prod(shape, dtype=np.int64))
    return reshape(diag(reshape(d, (size,))), shape + shape)


def tensor_diag_part(input, name=None) -> Tensor:
    """The inverse of :func:`tensor_diag`: ``out[i1..ik] = input[i1..ik, i1..ik]`` for an
    input of shape ``s + s``."""
    from .shape import reshape
    x = as_tensor(input, "linalg.tensor_diag_part")
    shape = tuple(x._value.shape)
    k = len(shape) // 2
    if len(shape) % 2 or shape[:k] != shape[k:]:
        raise InvalidArgumentError(f"linalg.tensor_diag_part: the input's shape must be of "
                                   f"the form s + s (an even rank, two equal halves), got "
                                   f"{shape}")
    size = int(np.prod(shape[:k], dtype=np.int64))
    return reshape(diag_part(reshape(x, (size, size))), shape[:k])


# --- LU factorisation and its composites ----------------------------------------------------

def _lu_fwd(xp, a, index_dtype):
    # Gaussian elimination with partial pivoting (the first largest magnitude in each column,
    # as Eigen's PartialPivLU), vectorised over the batch: one step per column.
    shape = tuple(a.shape)
    n = shape[-1]
    if a.size == 0:
        return [a.copy(), xp.zeros(shape[:-1], dtype=index_dtype)]
    x = a.reshape((-1, n, n)).copy()
    b = x.shape[0]
    perm = xp.broadcast_to(xp.arange(n), (b, n)).copy()
    rows = xp.arange(b)
    from .math import _quiet
    with _quiet(xp):
        for k in range(n):
            piv = xp.argmax(xp.abs(x[:, k:, k]), axis=1) + k
            top, other = x[:, k, :].copy(), x[rows, piv, :]
            x[:, k, :] = other
            x[rows, piv, :] = top
            ptop, pother = perm[:, k].copy(), perm[rows, piv]
            perm[:, k] = pother
            perm[rows, piv] = ptop
            if k + 1 < n:
                x[:, k + 1:, k] /= x[:, k, k:k + 1]
                x[:, k + 1:, k + 1:] -= x[:, k + 1:, k:k + 1] * x[:, k:k + 1, k + 1:]
    return [x.reshape(shape), perm.reshape(shape[:-1]).astype(index_dtype)]


def _lu_vjp(ops, needs, g, ans, a, index_dtype):
    # A = P^T L U (L unit lower, U upper, packed in one matrix). The differential is
    # dL = L tril(M, -1), dU = triu(M) U with M = L^-1 P dA U^-1, so for a cotangent G of the
    # packed factors: dA = P^T L^-T (tril(L^T G, -1) + triu(G U^T)) U^-T.
    glu = g[0]
    lu, perm = ans
    n = lu.shape[-1]
    strict = _const(ops, lu, lambda xp, dt: xp.tri(n, k=-1, dtype=dt))
    upper = _const(ops, lu, lambda xp, dt: 1 - xp.tri(n, k=-1, dtype=dt))
    eye = _const(ops, lu, lambda xp, dt: xp.eye(n, dtype=dt))
    lower = lu * strict + eye
    up = lu * upper
    mid = ops.matmul(lower, glu, transpose_a=True) * strict \
        + ops.matmul(glu, up, transpose_b=True) * upper
    y = ops.matrix_triangular_solve(lower, mid, lower=True, adjoint=True)
    y = _mT(ops, ops.matrix_triangular_solve(up, _mT(ops, y), lower=False, adjoint=False))
    pr = _raw(perm)
    p = _const(ops, lu, lambda xp, dt: (pr[..., :, None] == xp.arange(n)).astype(dt))
    return (ops.matmul(p, y, transpose_a=True),)


def _raw(v):
    return v._value if isinstance(v, Tensor) else v


_lu = defop("lu", _lu_fwd, _lu_vjp, multi=True, save_inputs=False, batch_rule=False)


def lu(input, output_idx_type=np.int32, name=None):
    """``(lu, p)``: the LU factorisation with partial pivoting of each square matrix in the
    last two axes, as ``tf.linalg.lu``. ``lu`` packs the unit lower triangular ``L`` (below
    the diagonal) and the upper triangular ``U``; ``p [..., n]`` (``output_idx_type``, int32
    or int64) lists the rows: ``input[..., p, :] = L @ U``. Pivots are the first entry of
    largest magnitude in each column, as TensorFlow's CPU kernel. A singular matrix (a zero
    pivot) raises on the CPU, as there; on a GPU (no host wait) ``U`` keeps the zero pivot
    and the entries after it may be inf or nan. TensorFlow registers no gradient for ``Lu``;
    here ``lu`` is differentiable (the permutation is piecewise constant), with the gradient
    of the factorisation's differential."""
    from ..dtypes import as_dtype
    a = _square("linalg.lu", input, complex_ok=True)
    idx = as_dtype(output_idx_type)
    if idx.name not in ("int32", "int64"):
        raise TypeError(f"linalg.lu: output_idx_type must be int32 or int64, got {idx.name}")
    out, perm = apply1(_lu, a, {"index_dtype": np.dtype(idx.name)})
    dev = out._device
    if dev.host_visible and out._value.size:
        diag = np.diagonal(out._value, axis1=-2, axis2=-1)
        if not np.all(np.abs(diag) > 0):
            raise InvalidArgumentError("linalg.lu: the input is not invertible (a zero pivot)")
    return out, perm


def _lu_args(opname, lower_upper, perm):
    """``lower_upper`` and ``perm`` checked as ``tf.linalg.lu``'s outputs."""
    from .shape import _index_tensor
    lu_ = as_tensor(lower_upper, opname)
    shape = tuple(lu_._value.shape)
    if len(shape) < 2:
        raise ValueError(f"{opname}: `lower_upper` must have at least 2 dimensions, got shape "
                         f"{shape}")
    p = _index_tensor(perm, lu_._device, opname)
    if p._value.ndim + 1 != len(shape):
        raise ValueError(f"{opname}: `rank(lower_upper)` must equal `rank(perm) + 1`, got "
                         f"shapes {shape} and {tuple(p._value.shape)}")
    if shape[-2] != shape[-1]:
        raise ValueError(f"{opname}: `lower_upper` must be square, got shape {shape}")
    if lu_._value.dtype.char not in "fdFD":
        raise TypeError(f"{opname}: `lower_upper` must be float32, float64, complex64 or "
                        f"complex128, got {dtype_name(lu_)}")
    return lu_, p


def _unit_lower(lu_):
    """``L`` of packed LU factors: the strict lower triangle and ones on the diagonal."""
    from .core import ones
    n = lu_._value.shape[-1]
    lower = band_part(lu_, -1, 0)
    return set_diag(lower, ones(tuple(lu_._value.shape[:-1]), dtype=lu_.dtype)) if n else lower


def _gather_rows(x, perm):
    """``x[..., perm, :]`` for ``perm`` of ``x``'s batch shape (complex values: their parts,
    whose gradient scatters are real on every device)."""
    from .math import complex as _complex, imag, real
    from .shape import gather
    nb = perm._value.ndim - 1
    if x._value.dtype.kind == "c":
        return _complex(_gather_rows(real(x), perm), _gather_rows(imag(x), perm))
    return gather(x, perm, axis=nb, batch_dims=nb)


def _permute_rows(x, perm):
    """``x[..., perm, :]`` for ``perm [..., n]``, the batch axes broadcast."""
    from .core import broadcast_to
    sx, sp = tuple(x._value.shape), tuple(perm._value.shape)
    batch = tuple(np.broadcast_shapes(sx[:-2], sp[:-1]))
    if sx[:-2] != batch:
        x = broadcast_to(x, batch + sx[-2:])
    if sp[:-1] != batch:
        perm = broadcast_to(perm, batch + sp[-1:])
    return _gather_rows(x, perm)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None) -> Tensor:
    """``X`` with ``A @ X = rhs`` from ``A``'s LU factors (``tf.linalg.lu(A)``), as
    ``tf.linalg.lu_solve``: the rows of ``rhs [..., n, k]`` permuted, then two triangular
    solves; the batch axes broadcast. Differentiable in ``lower_upper`` and ``rhs``."""
    lu_, p = _lu_args("linalg.lu_solve", lower_upper, perm)
    b = as_tensor(rhs, "linalg.lu_solve")
    sb = tuple(b._value.shape)
    if len(sb) < 2:
        raise ValueError(f"linalg.lu_solve: `rhs` must have at least 2 dimensions, got shape "
                         f"{sb}")
    if sb[-2] != lu_._value.shape[-1]:
        raise ValueError(f"linalg.lu_solve: `lower_upper.shape[-1]` must equal "
                         f"`rhs.shape[-2]`, got shapes {tuple(lu_._value.shape)} and {sb}")
    if b._value.dtype != lu_._value.dtype:
        raise TypeError(f"linalg.lu_solve: `rhs` is {dtype_name(b)}, `lower_upper` "
                        f"{dtype_name(lu_)}")
    try:
        np.broadcast_shapes(sb[:-2], tuple(p._value.shape[:-1]),
                            tuple(lu_._value.shape[:-2]))
    except ValueError:
        raise ValueError(f"linalg.lu_solve: batch shapes {tuple(lu_._value.shape[:-2])}, "
                         f"{tuple(p._value.shape[:-1])} and {sb[:-2]} are not "
                         "broadcast-compatible") from None
    permuted = _permute_rows(b, p)
    y = apply(_trisolve, (_unit_lower(lu_), permuted), {"lower": True, "adjoint": False})
    return apply(_trisolve, (lu_, y), {"lower": False, "adjoint": False})


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None) -> Tensor:
    """The inverse of each matrix from its LU factors, as ``tf.linalg.lu_matrix_inverse``:
    :func:`lu_solve` of identity matrices."""
    from .core import broadcast_to
    lu_, p = _lu_args("linalg.lu_matrix_inverse", lower_upper, perm)
    shape = tuple(lu_._value.shape)
    eye = broadcast_to(_eye_on(lu_, shape[-1]), shape)
    return lu_solve(lu_, p, eye)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None) -> Tensor:
    """The matrices whose LU factors are given, as ``tf.linalg.lu_reconstruct``:
    ``(L @ U)`` with its rows put back by the inverse permutation. Each ``perm`` row must be
    a permutation (checked on the CPU, as TensorFlow's ``invert_permutation``)."""
    from .sorting import argsort
    lu_, p = _lu_args("linalg.lu_reconstruct", lower_upper, perm)
    x = matmul(_unit_lower(lu_), band_part(lu_, 0, -1))
    n = lu_._value.shape[-1]
    if p._device.host_visible and p._value.size:
        rows = p._value.reshape(-1, n)
        if not (np.sort(rows, axis=-1) == np.arange(n)).all():
            bad = rows[np.argmax(~(np.sort(rows, axis=-1) == np.arange(n)).all(axis=-1))]
            raise InvalidArgumentError(f"linalg.lu_reconstruct: perm must hold permutations "
                                       f"of 0..{n - 1}, got {bad.tolist()}")
    return _gather_rows(x, argsort(p, axis=-1) if n else p)


def matrix_rank(a, tol=None, validate_args=False, name=None) -> Tensor:
    """The number of singular values above ``tol`` (int32) of each matrix, as
    ``tf.linalg.matrix_rank``; ``tol`` defaults to ``eps * max(rows, cols)`` times the
    largest singular value."""
    from .core import cast
    from .reduce import reduce_max, reduce_sum
    x = as_tensor(a, "linalg.matrix_rank")
    if x._value.dtype.char not in "fd":
        raise TypeError(f"linalg.matrix_rank: input `a` must have a float dtype, got "
                        f"{dtype_name(x)}")
    if x._value.ndim < 2:
        raise ValueError(f"linalg.matrix_rank: input `a` must have at least 2 dimensions, got "
                         f"shape {tuple(x._value.shape)}")
    s = svd(x, compute_uv=False)
    if tol is None:
        m = max(x._value.shape[-2:])
        tol = float(np.finfo(x._value.dtype).eps) * float(m) \
            * reduce_max(s, axis=-1, keepdims=True)
    elif isinstance(tol, Tensor):
        tol = cast(tol, x.dtype)
    else:
        tol = float(tol)
    return reduce_sum(cast(s > tol, np.int32), axis=-1)


# --- tridiagonal systems ----------------------------------------------------------------------

def _shift_rows(ops, y, up, by=1):
    """``y [..., M, K]`` moved ``by`` rows up (row i holds row i + by; the last rows zero) or
    down (row i holds row i - by; the first rows zero), written with differentiable
    primitives."""
    nd = y.ndim
    shape = tuple(y.shape)
    m = shape[-2]
    by = min(by, m)
    lead = (slice(None),) * (nd - 2)
    part = ops.getitem(y, key=lead + ((slice(by, None) if up else slice(None, m - by)),
                                      slice(None)), in_shape=shape, advanced=False)
    pads = ((0, 0),) * (nd - 2) + (((0, by) if up else (by, 0)), (0, 0))
    return ops.pad(part, paddings=pads, value=0, in_shape=tuple(part.shape))


def _tds_rows(xp, diags, rhs, transpose):
    """The three diagonals as ``[B, M, 1]`` arrays and the right-hand sides as ``[B, M, K]``
    (``transpose``: the diagonals of the transposed matrix)."""
    m, k = rhs.shape[-2:]
    d3 = diags.reshape((-1, 3, m))
    sup, dia, sub = d3[:, 0, :, None], d3[:, 1, :, None], d3[:, 2, :, None]
    if transpose:
        zero = xp.zeros_like(dia[:, :1])
        sup, sub = (xp.concatenate([sub[:, 1:], zero], axis=1),
                    xp.concatenate([zero, sup[:, :-1]], axis=1))
    return sup, dia, sub, rhs.reshape((-1, m, k))


def _tds_thomas(xp, sup, dia, sub, b):
    # Gaussian elimination without pivoting (the Thomas algorithm), as TF's CPU kernel
    m = b.shape[1]
    bad = dia[:, 0] == 0
    u = [sup[:, 0] / dia[:, 0]]
    x = [b[:, 0] / dia[:, 0]]
    for i in range(1, m):
        denom = dia[:, i] - sub[:, i] * u[i - 1]
        bad = bad | (denom == 0)
        u.append(sup[:, i] / denom)
        x.append((b[:, i] - sub[:, i] * x[i - 1]) / denom)
    for i in range(m - 2, -1, -1):
        x[i] = x[i] - u[i] * x[i + 1]
    return x, bad


def _tds_pivoting(xp, sup, dia, sub, b):
    # Gaussian elimination with partial pivoting between neighbouring rows (LAPACK's gtsv),
    # as TF's CPU kernel: U has the diagonal u0 and two superdiagonals u1, u2
    m = b.shape[1]
    zero = xp.zeros_like(dia[:, 0])
    u0, u1, u2 = [dia[:, 0]] + [None] * (m - 1), [sup[:, 0]] + [zero] * (m - 1), [zero] * m
    x = [b[:, 0]] + [None] * (m - 1)
    bad = xp.zeros(dia[:, 0].shape, dtype=bool)
    for i in range(m - 1):
        s, dn, sp = sub[:, i + 1], dia[:, i + 1], sup[:, i + 1]
        keep = xp.abs(u0[i]) >= xp.abs(s)
        bad = bad | (keep & (u0[i] == 0))
        fk, fs = s / u0[i], u0[i] / s
        u0[i + 1] = xp.where(keep, dn - fk * u1[i], u1[i] - fs * dn)
        x[i + 1] = xp.where(keep, b[:, i + 1] - fk * x[i], x[i] - fs * b[:, i + 1])
        x[i] = xp.where(keep, x[i], b[:, i + 1])
        u0[i] = xp.where(keep, u0[i], s)
        u1[i] = xp.where(keep, u1[i], dn)
        if i != m - 2:
            u2[i] = xp.where(keep, zero, sp)
            u1[i + 1] = xp.where(keep, sp, -fs * sp)
    bad = bad | (u0[m - 1] == 0)
    x[m - 1] = x[m - 1] / u0[m - 1]
    if m > 1:
        x[m - 2] = (x[m - 2] - u1[m - 2] * x[m - 1]) / u0[m - 2]
    for i in range(m - 3, -1, -1):
        x[i] = (x[i] - u1[i] * x[i + 1] - u2[i] * x[i + 2]) / u0[i]
    return x, bad


def _perturb_pivot(xp, perturb, pivot, row):
    """TF's (LAPACK xLAGTS's) adjustment of a tiny pivot so that ``row / pivot`` does not
    overflow, per system of the batch (host-visible arrays: the loop reads its flag)."""
    real = np.finfo(pivot.dtype).dtype
    tiny = float(np.finfo(real).tiny)
    small = 1.0 / float(np.finfo(real).max)
    safemin = tiny if small < tiny else (1.0 + float(np.finfo(real).eps)) * small
    bignum = 1.0 / safemin
    absp = xp.abs(pivot)
    perturb = xp.maximum(xp.abs(perturb), safemin).astype(real)
    perturb = xp.copysign(perturb, xp.real(pivot))
    factor = xp.abs(row).max(axis=-1, keepdims=True) if row.shape[-1] else xp.zeros_like(absp)
    active = absp < 1
    while bool(active.any()):
        small_p = absp < safemin
        add_small = small_p & ((absp == 0) | (factor * safemin > absp))
        add_big = ~small_p & (factor > absp * bignum)
        scale = active & small_p & ~add_small
        add = active & (add_small | add_big)
        pivot = xp.where(add, pivot + perturb, pivot)
        perturb = xp.where(add, perturb * 2, perturb)
        pivot = xp.where(scale, pivot * bignum, pivot)
        row = xp.where(scale, row * bignum, row)
        absp = xp.abs(pivot)
        active = add & (absp < 1)
    return pivot, row


def _tds_perturbed(xp, sup, dia, sub, b):
    # LAPACK's xLAGTF + xLAGTS as TF's CPU kernel with perturb_singular: row pivoting scaled
    # by the rows' sizes, and tiny pivots of U perturbed by about eps * max|U|
    m = b.shape[1]
    one = dia.dtype.type(1)
    eps = float(np.finfo(np.finfo(dia.dtype).dtype).eps)
    if m == 1:
        denom, row = _perturb_pivot(xp, eps * xp.abs(dia[:, 0]), dia[:, 0], b[:, 0])
        return [row * (one / denom)], None
    zero = xp.zeros_like(dia[:, 0])
    u0, u1, u2 = [dia[:, 0]] + [None] * (m - 1), [sup[:, 0]] + [zero] * (m - 1), [zero] * m
    x = [b[:, 0]] + [None] * (m - 1)
    max_u = xp.maximum(xp.abs(u0[0]), xp.abs(u1[0]))
    scale1 = xp.abs(u0[0]) + xp.abs(u1[0])
    for k in range(m - 1):
        s, dn, sp = sub[:, k + 1], dia[:, k + 1], sup[:, k + 1]
        scale2 = xp.abs(s) + xp.abs(dn)
        if k < m - 2:
            scale2 = scale2 + xp.abs(sp)
        zsub = s == 0
        piv1 = xp.where(u0[k] == 0, 0, xp.abs(u0[k]) / scale1)
        keep = zsub | (xp.abs(s) / scale2 <= piv1)
        fk, fs = s / u0[k], u0[k] / s
        scale1 = xp.where(keep, scale2, scale1)
        u0[k + 1] = xp.where(zsub, dn, xp.where(keep, dn - fk * u1[k], u1[k] - fs * dn))
        x[k + 1] = xp.where(zsub, b[:, k + 1], xp.where(keep, b[:, k + 1] - fk * x[k],
                                                         x[k] - fs * b[:, k + 1]))
        x[k] = xp.where(keep, x[k], b[:, k + 1])
        u0[k] = xp.where(keep, u0[k], s)
        u1[k] = xp.where(keep, u1[k], dn)
        if k < m - 2:
            u2[k] = xp.where(keep, zero, sp)
            u1[k + 1] = xp.where(keep, sp, -fs * sp)
            max_u = xp.maximum(max_u, xp.maximum(xp.abs(u0[k]),
                                                 xp.maximum(xp.abs(u1[k]), xp.abs(u2[k]))))
        else:
            u1[k + 1] = sp
    max_u = xp.maximum(max_u, xp.abs(u0[m - 1]))
    tol = eps * max_u
    for i in range(m - 1, -1, -1):
        row = x[i]
        if i <= m - 2:
            row = row - u1[i] * x[i + 1]
        if i <= m - 3:
            row = row - u2[i] * x[i + 2]
        denom, row = _perturb_pivot(xp, tol, u0[i], row)
        x[i] = row * (one / denom)
    return x, None


def _tds_fwd(xp, diags, rhs, partial_pivoting, perturb_singular, transpose):
    from .math import _quiet
    m, k = rhs.shape[-2:]
    if m == 0 or k == 0 or rhs.size == 0:
        return xp.zeros(rhs.shape, dtype=rhs.dtype)
    sup, dia, sub, b = _tds_rows(xp, diags, rhs, transpose)
    with _quiet(xp):
        if perturb_singular:
            x, bad = _tds_perturbed(xp, sup, dia, sub, b)
        elif partial_pivoting:
            x, bad = _tds_pivoting(xp, sup, dia, sub, b)
        else:
            x, bad = _tds_thomas(xp, sup, dia, sub, b)
        out = xp.stack(x, axis=1)
        if bad is not None:        # a singular system: all nan, as TF's kernel
            out = xp.where(bad[:, None], out.dtype.type(np.nan), out)
    return out.reshape(rhs.shape)


def _tds_vjp(ops, needs, g, ans, diags, rhs, partial_pivoting, perturb_singular, transpose):
    # TF's rule: gB = T^-T g; the cotangents of the three diagonals are those of
    # -gB X^T (of -X gB^T for the transposed solve) on them
    gb = ops.tridiagonal_solve(diags, g, partial_pivoting=partial_pivoting,
                               perturb_singular=perturb_singular, transpose=not transpose)
    gd = None
    if needs[0]:
        left, right = (ans, gb) if transpose else (gb, ans)
        sup = ops.reduce_sum(left * _shift_rows(ops, right, True), axis=(right.ndim - 1,),
                             keepdims=False, in_shape=tuple(right.shape))
        mid = ops.reduce_sum(left * right, axis=(right.ndim - 1,), keepdims=False,
                             in_shape=tuple(right.shape))
        sub = ops.reduce_sum(left * _shift_rows(ops, right, False), axis=(right.ndim - 1,),
                             keepdims=False, in_shape=tuple(right.shape))
        gd = -ops.stack(sup, mid, sub, axis=right.ndim - 2)
    return gd, (gb if needs[1] else None)


_tds = defop("tridiagonal_solve", _tds_fwd, _tds_vjp, batch_rule=False)


def _three_diagonals(opname, diagonals, diagonals_format):
    """``diagonals`` in any of TF's formats as the compact ``[..., 3, M]`` tensor."""
    from .shape import pad, stack
    if diagonals_format == "compact":
        return as_tensor(diagonals, opname)
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (tuple, list)) or len(diagonals) != 3:
            raise ValueError(f"{opname}: expected diagonals to be a sequence of length 3.")
        sup, main, sub = (as_tensor(d, opname) for d in diagonals)
        shapes = [tuple(t._value.shape) for t in (sup, main, sub)]
        if not all(len(s) >= 1 for s in shapes) or shapes[0][:-1] != shapes[1][:-1] \
                or shapes[2][:-1] != shapes[1][:-1]:
            raise ValueError(f"{opname}: tensors representing the three diagonals must have "
                             f"the same shape, except for the last dimension, got "
                             f"{shapes[2]}, {shapes[1]}, {shapes[0]}")
        m = shapes[1][-1]

        def padded(t, what, where):
            n = t._value.shape[-1]
            if n == m:
                return t
            if n == m - 1:
                return pad(t, [[0, 0]] * (t._value.ndim - 1) + [where])
            raise ValueError(f"{opname}: expected {what} to have length {m} or {m - 1}, got "
                             f"{n}.")
        return stack([padded(sup, "superdiagonal", [0, 1]), main,
                      padded(sub, "subdiagonal", [1, 0])], axis=-2)
    if diagonals_format == "matrix":
        a = as_tensor(diagonals, opname)
        shape = tuple(a._value.shape)
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"{opname}: expected last two dimensions of diagonals to be "
                             f"same, got shape {shape}")
        m = shape[-1]
        if m == 0:
            return stack([diag_part(a)] * 3, axis=-2)
        if m == 1:
            main = diag_part(a)
            return stack([main * 0, main, main * 0], axis=-2)
        lead = [[0, 0]] * (len(shape) - 2)
        sup = pad(diag_part(a, k=1), lead + [[0, 1]])
        sub = pad(diag_part(a, k=-1), lead + [[1, 0]])
        return stack([sup, diag_part(a), sub], axis=-2)
    raise ValueError(f"{opname}: unrecognized diagonals_format: {diagonals_format}")


def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False,
                      conjugate_rhs=False, name=None, partial_pivoting=True,
                      perturb_singular=False) -> Tensor:
    """``X`` with ``T @ X = rhs`` for tridiagonal matrices ``T``, as
    ``tf.linalg.tridiagonal_solve``. ``diagonals``: ``[..., 3, M]`` (``'compact'``: the
    superdiagonal, the diagonal and the subdiagonal; ``[..., 0, M-1]`` and ``[..., 2, 0]``
    are ignored), three tensors (``'sequence'``: the off-diagonals of length M or M - 1) or
    ``[..., M, M]`` matrices (``'matrix'``: only the three diagonals are read). ``rhs``:
    ``[..., M, K]`` (``[..., K, M]`` with ``transpose_rhs``) or ``[..., M]``; the batch
    shapes must be equal. Solved by Gaussian elimination with partial pivoting between
    neighbouring rows (``partial_pivoting=False``: the Thomas algorithm), as TF's CPU kernel,
    one step per row; a singular system gives nan, as there. ``perturb_singular`` perturbs
    tiny pivots to give a finite result (as TF, only where the host reads the arrays: TF's
    GPU kernel raises there too). The gradient is TensorFlow's."""
    from .math import conj
    from .shape import expand_dims, squeeze, transpose as _transpose
    opname = "linalg.tridiagonal_solve"
    if perturb_singular and not partial_pivoting:
        raise ValueError(f"{opname}: partial_pivoting must be True if perturb_singular is.")
    d = _three_diagonals(opname, diagonals, diagonals_format)
    b = as_tensor(rhs, opname)
    sd, sb = tuple(d._value.shape), tuple(b._value.shape)
    if len(sd) < 2:
        raise ValueError(f"{opname}: expected diagonals to have rank at least 2, got "
                         f"{len(sd)}")
    if len(sb) not in (len(sd), len(sd) - 1):
        raise ValueError(f"{opname}: expected the rank of rhs to be {len(sd) - 1} or "
                         f"{len(sd)}, got {len(sb)}")
    if sb[:len(sd) - 2] != sd[:-2]:
        raise ValueError(f"{opname}: batch shapes {sd[:-2]} and {sb[:len(sd) - 2]} are "
                         "incompatible")
    if sd[-2] != 3:
        raise ValueError(f"{opname}: expected 3 diagonals got {sd[-2]}")
    if d._value.dtype.char not in "fdFD":
        raise TypeError(f"{opname}: diagonals must be float32, float64, complex64 or "
                        f"complex128, got {dtype_name(d)}")
    if b._value.dtype != d._value.dtype:
        raise TypeError(f"{opname}: rhs is {dtype_name(b)}, the diagonals {dtype_name(d)}")
    if perturb_singular and not d._device.host_visible:
        from ..errors import UnimplementedError
        raise UnimplementedError(f"{opname}: perturb_singular=True is implemented only where "
                                 f"the host reads the arrays (as TF's CPU kernel), not on "
                                 f"{d._device}")
    vector = len(sb) == len(sd) - 1
    if vector:
        b = expand_dims(conj(b) if conjugate_rhs else b, -1)
    elif transpose_rhs:
        n = len(sb)
        b = _transpose(b, list(range(n - 2)) + [n - 1, n - 2], conjugate=conjugate_rhs)
    elif conjugate_rhs:
        b = conj(b)
    if b._value.shape[-2] != sd[-1]:
        raise ValueError(f"{opname}: expected number of left-hand sided and right-hand sides "
                         f"to be equal, got {sd[-1]} and {b._value.shape[-2]}")
    out = apply(_tds, (d, b), {"partial_pivoting": bool(partial_pivoting),
                               "perturb_singular": bool(perturb_singular), "transpose": False})
    return squeeze(out, -1) if vector else out


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None) -> Tensor:
    """``T @ rhs`` for tridiagonal matrices ``T`` given by their diagonals (the formats of
    :func:`tridiagonal_solve`; ``'sequence'`` diagonals all of length M) and ``rhs
    [..., M, N]`` of the same batch shape, as ``tf.linalg.tridiagonal_matmul``: three
    broadcast products of shifted rows, whose gradient is TensorFlow's (zero for the ignored
    ``superdiag[..., M-1]`` and ``subdiag[..., 0]``)."""
    from .shape import expand_dims, pad
    opname = "linalg.tridiagonal_matmul"
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (tuple, list)) or len(diagonals) != 3:
            raise ValueError(f"{opname}: expected diagonals to be a sequence of length 3.")
        sup, main, sub = (as_tensor(t, opname) for t in diagonals)
    elif diagonals_format in ("compact", "matrix"):
        d = _three_diagonals(opname, diagonals, diagonals_format)
        if d._value.ndim < 2:
            raise InvalidArgumentError(f"{opname}: diagonals must have rank at least 2, got "
                                       f"shape {tuple(d._value.shape)}")
        sup, main, sub = d[..., 0, :], d[..., 1, :], d[..., 2, :]
    else:
        raise ValueError(f"{opname}: unrecognized diagonals_format: {diagonals_format}")
    b = as_tensor(rhs, opname)
    sb = tuple(b._value.shape)
    for t in (sup, main, sub):
        if t._value.ndim + 1 != len(sb):
            raise InvalidArgumentError(f"{opname}: all input tensors must have the same rank "
                                       f"(diagonals {tuple(t._value.shape)} and rhs {sb})")
        if tuple(t._value.shape[:-1]) != sb[:-2]:
            raise InvalidArgumentError(f"{opname}: all input tensors must have the same outer "
                                       f"dimensions, got {tuple(t._value.shape)} and rhs {sb}")
        if t._value.shape[-1] != sb[-2]:
            raise InvalidArgumentError(f"{opname}: diagonals of length {t._value.shape[-1]} "
                                       f"do not fit rhs of shape {sb}")
        if t._value.dtype != b._value.dtype:
            raise TypeError(f"{opname}: the diagonals are {dtype_name(t)}, rhs "
                            f"{dtype_name(b)}")
    if b._value.dtype.char not in "fdFD":
        raise TypeError(f"{opname}: expected float32, float64, complex64 or complex128, got "
                        f"{dtype_name(b)}")
    if sb[-2] == 0:
        return b
    lead = [[0, 0]] * (len(sb) - 2)
    up = pad(b[..., 1:, :], lead + [[0, 1], [0, 0]])
    down = pad(b[..., :-1, :], lead + [[1, 0], [0, 0]])
    return expand_dims(sup, -1) * up + expand_dims(main, -1) * b + expand_dims(sub, -1) * down


# --- banded triangular systems ----------------------------------------------------------------

def _banded_rows(xp, bands, lower, adjoint):
    """``C [B, M, K]``: ``C[:, i, j]`` multiplies ``x[i - j]`` (a forward sweep) or
    ``x[i + j]`` (a backward one) in row ``i`` of the system; ``C[:, i, 0]`` is the
    diagonal. Returns ``(C, forward)``."""
    k, m = bands.shape[-2:]
    if lower and not adjoint:            # A[i, i-j] = bands[j, i]
        return bands.swapaxes(-1, -2), True
    if not lower and not adjoint:        # A[i, i+j] = bands[K-1-j, i]
        return bands[:, ::-1].swapaxes(-1, -2), False
    cols = []
    for j in range(k):
        band = bands[:, j] if lower else bands[:, k - 1 - j]
        zero = xp.zeros_like(band[:, :min(j, m)])
        if lower:                        # A^T[i, i+j] = A[i+j, i] = bands[j, i+j]
            cols.append(xp.concatenate([band[:, j:], zero], axis=1))
        else:                            # A^T[i, i-j] = A[i-j, i] = bands[K-1-j, i-j]
            cols.append(xp.concatenate([zero, band[:, :m - min(j, m)]], axis=1))
    return xp.stack(cols, axis=-1), not lower


def _banded_fwd(xp, bands, rhs, lower, adjoint):
    from .math import _quiet
    batch = _batch_shape(bands.shape, rhs.shape)
    k, m = bands.shape[-2:]
    n = rhs.shape[-1]
    bands = xp.broadcast_to(bands, batch + (k, m)).reshape((-1, k, m))
    b = xp.broadcast_to(rhs, batch + (m, n)).reshape((-1, m, n))
    c, forward = _banded_rows(xp, bands, lower, adjoint)
    x = xp.zeros(b.shape, dtype=b.dtype)
    with _quiet(xp):
        for i in (range(m) if forward else range(m - 1, -1, -1)):
            if forward:
                lo = max(0, i - k + 1)
                coef, window = c[:, i, i - lo:0:-1] if i > lo else None, x[:, lo:i]
            else:
                hi = min(m, i + k)
                coef, window = c[:, i, 1:hi - i] if hi > i + 1 else None, x[:, i + 1:hi]
            row = b[:, i]
            if coef is not None:
                row = row - xp.matmul(coef[:, None, :], window)[:, 0]
            x[:, i] = row / c[:, i, 0:1]
    return x.reshape(batch + (m, n))


def _banded_vjp(ops, needs, g, ans, bands, rhs, lower, adjoint):
    # TF's rule: gB = A^-T g, gA = -gB X^T (-X gB^T for the adjoint solve), read on the bands
    gb = ops.banded_triangular_solve(bands, g, lower=lower, adjoint=not adjoint)
    ga = None
    if needs[0]:
        left, right = (ans, gb) if adjoint else (gb, ans)
        k = bands.shape[-2]
        nd = right.ndim
        rows = []
        for r in range(k):
            shift = r if lower else k - 1 - r      # the band's distance from the diagonal
            other = right if shift == 0 else _shift_rows(ops, right, not lower, shift)
            rows.append(ops.reduce_sum(left * other, axis=(nd - 1,), keepdims=False,
                                       in_shape=tuple(right.shape)))
        ga = -ops.stack(*rows, axis=nd - 2)
    return ga, (gb if needs[1] else None)


_banded = defop("banded_triangular_solve", _banded_fwd, _banded_vjp, broadcasts=True,
                batch_rule=False)


def banded_triangular_solve(bands, rhs, lower=True, adjoint=False, name=None) -> Tensor:
    """``X`` with ``A @ X = rhs`` (``adjoint``: ``A^H @ X = rhs``) for banded triangular
    matrices ``A [..., M, M]`` stored as ``bands [..., K, M]``, as
    ``tf.linalg.banded_triangular_solve``: with ``lower`` row ``j`` holds diagonal ``-j``
    (the main diagonal on top), otherwise row ``r`` holds diagonal ``K - 1 - r`` (the main
    diagonal at the bottom), aligned 'LEFT_RIGHT' (subdiagonals padded on the left,
    superdiagonals on the right). ``rhs [..., M, N]``; the batch axes broadcast. Solved by
    substitution, one row at a time. A zero on the diagonal raises on the CPU, as TF's
    kernel; on a GPU it gives inf or nan. The gradient is TensorFlow's."""
    opname = "linalg.banded_triangular_solve"
    a = as_tensor(bands, opname)
    b = as_tensor(rhs, opname)
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    if len(sa) < 2 or len(sb) < 2:
        raise InvalidArgumentError(f"{opname}: bands and rhs need rank >= 2, got shapes {sa} "
                                   f"and {sb}")
    if a._value.size == 0:
        raise InvalidArgumentError(f"{opname}: bands must not be an empty tensor, got shape "
                                   f"{sa}")
    if sa[-1] != sb[-2]:
        raise InvalidArgumentError(f"{opname}: bands of shape {sa} (matrices of size "
                                   f"{sa[-1]}) do not fit rhs of shape {sb}")
    try:
        _batch_shape(sa, sb)
    except ValueError:
        raise InvalidArgumentError(f"{opname}: bands and rhs must have compatible batch "
                                   f"dimensions: {sa} vs. {sb}") from None
    if a._value.dtype.char not in "fdFD":
        raise TypeError(f"{opname}: bands must be float32, float64, complex64 or complex128, "
                        f"got {dtype_name(a)}")
    if b._value.dtype != a._value.dtype:
        raise TypeError(f"{opname}: rhs is {dtype_name(b)}, bands {dtype_name(a)}")
    if a._device.host_visible:
        main = a._value[..., 0 if lower else sa[-2] - 1, :]
        if (main == 0).any():
            raise InvalidArgumentError(f"{opname}: input matrix is not invertible (a zero on "
                                       "the diagonal)")
    if adjoint and a._value.dtype.kind == "c":
        from .math import conj
        a = conj(a)              # (the primitive's adjoint is the plain transpose)
    return apply(_banded, (a, b), {"lower": bool(lower), "adjoint": bool(adjoint)})


# --- matrix square root -------------------------------------------------------------------------

def _sqrtm_fwd(xp, a):
    # The scaled Denman-Beavers iteration Y <- (mu Y + (mu Z)^-1) / 2, Z <- (mu Z + (mu Y)^-1)
    # / 2 from Y = A, Z = I (mu: determinant scaling), which converges quadratically to the
    # principal square root; a fixed number of steps (no host wait), then matrices whose
    # square is off by more than sqrt(eps) (no principal real root: a negative eigenvalue, a
    # singular matrix) become nan, as TF's Schur method gives there.
    from .math import _quiet
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    real = np.finfo(a.dtype).dtype
    eps = float(np.finfo(real).eps)
    steps = 12 if real == np.float32 else 16
    eye = xp.eye(n, dtype=a.dtype)
    y = a.copy()
    z = xp.broadcast_to(eye, a.shape).copy()
    ok = xp.ones(a.shape[:-2], dtype=bool)
    with _quiet(xp):
        for _ in range(steps):
            ly, lz = xp.linalg.slogdet(y)[1], xp.linalg.slogdet(z)[1]
            ok = ok & xp.isfinite(ly) & xp.isfinite(lz)
            keep = ok[..., None, None]
            y, z = xp.where(keep, y, eye), xp.where(keep, z, eye)  # (a singular one fails)
            mu = xp.exp(-(ly + lz) / (2 * n)).astype(real)
            mu = xp.where(ok, mu, real.type(1))[..., None, None]
            yi, zi = xp.linalg.inv(y), xp.linalg.inv(z)
            y, z = 0.5 * (mu * y + zi / mu), 0.5 * (mu * z + yi / mu)
        res = xp.abs(xp.matmul(y, y) - a).sum(axis=(-2, -1))
        size = (xp.abs(y) ** 2).sum(axis=(-2, -1))
        ok = ok & (res <= np.sqrt(eps) * n * size)
        return xp.where(ok[..., None, None], y, a.dtype.type(np.nan))


def _kron(ops, b1, b2, n):
    """The Kronecker products of two batches of ``n x n`` matrices (``[..., n^2, n^2]``)."""
    lead1, lead2 = tuple(b1.shape[:-2]), tuple(b2.shape[:-2])
    r1 = ops.reshape(b1, shape=lead1 + (n, 1, n, 1), in_shape=tuple(b1.shape))
    r2 = ops.reshape(b2, shape=lead2 + (1, n, 1, n), in_shape=tuple(b2.shape))
    prod = r1 * r2
    lead = tuple(prod.shape[:-4])
    return ops.reshape(prod, shape=lead + (n * n, n * n), in_shape=tuple(prod.shape))


def _sqrtm_vjp(ops, needs, g, ans, a):
    # TF's rule: R dR + dR R = dA is solved for dR as one linear system with the Kronecker
    # sum I (x) R^T + R (x) I (n^2 x n^2), on the transposed, vectorised cotangent
    r = ans
    shape = tuple(r.shape)
    n = shape[-1]
    eye = _const(ops, r, lambda xp, dt: xp.eye(n, dtype=dt))
    ksum = _kron(ops, eye, _mT(ops, r), n) + _kron(ops, r, eye, n)
    vec = ops.reshape(_mT(ops, g), shape=shape[:-2] + (n * n, 1), in_shape=shape)
    sol = ops.matrix_solve(ksum, vec)
    return (_mT(ops, ops.reshape(sol, shape=shape, in_shape=tuple(sol.shape))),)


_sqrtm = defop("matrix_square_root", _sqrtm_fwd, _sqrtm_vjp, save_inputs=False,
               batch_rule=False)


def sqrtm(input, name=None) -> Tensor:
    """The principal square root of each square matrix in the last two axes (the root whose
    eigenvalues have positive real parts), as ``tf.linalg.sqrtm``. TensorFlow computes it
    from the Schur form on the CPU; here the scaled Denman-Beavers iteration runs on the
    tensor's device (a fixed number of steps, no host round trip) and agrees to rounding
    where the root is well defined. Matrices without a principal square root reachable
    this way (a negative real eigenvalue, as TF: nan; also singular ones, which TF's Schur
    method may still take) give nan. The gradient is TensorFlow's: a Sylvester equation
    solved as an ``n^2 x n^2`` linear system."""
    a = _square("linalg.sqrtm", input, complex_ok=True)
    return apply1(_sqrtm, a)


# --- general eigendecomposition -------------------------------------------------------------------

def _eig_fwd(xp, a):
    ctype = np.complex64 if a.dtype.char in "fF" else np.complex128
    solver = getattr(xp.linalg, "eig", None)
    if solver is None:            # a CuPy without a general eigensolver: on the host, as TF
        e, v = np.linalg.eig(xp.asnumpy(a))
        return [xp.asarray(e.astype(ctype)), xp.asarray(v.astype(ctype))]
    e, v = solver(a)
    return [e.astype(ctype), v.astype(ctype)]


def _eig_vjp(ops, needs, g, ans, a):
    # TF's rule (Boeddeker et al., eq. 4.77), written for TF's complex convention itself:
    # with F_ij = conj(1 / (e_j - e_i)) off the diagonal,
    # gA = V^-H (diag(gE) + F * (V^H gV - V^H V diag(Re diag(V^H gV)))) V^H,
    # its real part for a real matrix
    ge, gv = g
    e, v = ans
    n = e.shape[-1]
    eye = _const(ops, e, lambda xp, dt: xp.eye(n, dtype=dt))
    vt = ops.conj(_mT(ops, v))
    f = ops.conj(_safe_reciprocal(_row(ops, e) - _col(ops, e)) * _off_diagonal(ops, e, n))
    vgv = ops.matmul(vt, gv)
    re_diag = (vgv + ops.conj(vgv)) * 0.5 * eye
    mid = _row(ops, ge) * eye + f * (vgv - ops.matmul(ops.matmul(vt, v), re_diag))
    ga = ops.matrix_solve(vt, ops.matmul(mid, vt))
    return (ops.real(ga) if _raw(a).dtype.kind != "c" else ga,)


_eig = defop("eig", _eig_fwd, _eig_vjp, multi=True, complex_rule=True, batch_rule=False)


def eig(tensor, name=None):
    """``(e, v)``: the eigenvalues and right eigenvectors (the columns of ``v``, of unit
    length) of each square matrix in the last two axes, as ``tf.linalg.eig``: complex64 for
    float32 and complex64 matrices, complex128 for float64 and complex128 ones. The order of
    the eigenvalues and each eigenvector's phase are LAPACK's (NumPy's; CuPy's solver on a
    GPU, or the host's when CuPy has none, as TF computes it on the CPU), not necessarily
    TF's, which leaves both unspecified. The gradient is TensorFlow's: it needs distinct
    eigenvalues and is meaningful for losses that do not depend on the eigenvectors'
    phases."""
    e, v = apply1(_eig, _square("linalg.eig", tensor, complex_ok=True))
    return e, v


def eigvals(tensor, name=None) -> Tensor:
    """The eigenvalues of each square matrix (complex), as ``tf.linalg.eigvals``; their
    gradient is TensorFlow's (through the eigenvectors)."""
    return eig(tensor)[0]
