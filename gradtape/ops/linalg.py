"""Matrix products: matmul (batched), tensordot, einsum."""
from __future__ import annotations

import contextlib
import re
import string

import numpy as np

from ..registry import apply, apply1, defop
from ..tensor import Tensor
from ._util import as_tensor, binary, dtype_name

__all__ = ["matmul", "tensordot", "einsum", "matvec", "inv", "solve", "det", "slogdet",
           "logdet", "cholesky", "diag_part", "trace", "band_part"]


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
    return squeeze(matmul(a, expand_dims(b, -1), transpose_a=transpose_a or adjoint_a), -1)


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


def _square(opname, a):
    a = as_tensor(a, opname)
    shape = tuple(a._value.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{opname}: expected square matrices of shape [..., n, n], got "
                         f"shape {shape}")
    if a._value.dtype.char not in "fd":
        raise TypeError(f"{opname}: matrices must be float32 or float64, got {dtype_name(a)}")
    return a


def _inv_vjp(ops, needs, g, ans, a):
    # d(A^-1) = -A^-1 dA A^-1
    return (-ops.matmul(ops.matmul(ans, g, transpose_a=True), ans, transpose_b=True),)


_inv = defop("matrix_inverse", lambda xp, a: xp.linalg.inv(a), _inv_vjp, save_inputs=False)


def inv(input, adjoint=False, name=None) -> Tensor:
    """The inverse of each square matrix in the last two axes (``adjoint``: of its
    transpose). A singular matrix raises on the CPU; on a GPU it gives inf or nan."""
    a = _square("linalg.inv", input)
    out = apply1(_inv, a)
    if adjoint:
        from .shape import transpose
        n = a._value.ndim
        out = transpose(out, list(range(n - 2)) + [n - 1, n - 2])
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
    a = _square("linalg.solve", matrix)
    b = as_tensor(rhs, "linalg.solve")
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    if len(sb) != len(sa) or sb[:-2] != sa[:-2] or sb[-2] != sa[-1]:
        raise ValueError(f"linalg.solve: right-hand sides of shape {sb} do not fit matrices of "
                         f"shape {sa} (expected {sa[:-1] + ('k',)})")
    if b.dtype != a.dtype:
        raise TypeError(f"linalg.solve: the matrix is {dtype_name(a)}, the right-hand sides "
                        f"{dtype_name(b)}")
    return apply(_solve, (a, b), {"adjoint": True} if adjoint else None)


def _det_vjp(ops, needs, g, ans, a):
    # d det(A) = det(A) tr(A^-1 dA)
    return (_per_matrix(ops, g * ans) * _mT(ops, ops.matrix_inverse(a)),)


_det = defop("matrix_determinant", lambda xp, a: xp.linalg.det(a), _det_vjp)


def det(input, name=None) -> Tensor:
    """The determinant of each square matrix in the last two axes."""
    return apply1(_det, _square("linalg.det", input))


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


def diag_part(input, k=0, name=None) -> Tensor:
    """The main diagonal of each matrix in the last two axes (``k`` = 0 only)."""
    if k != 0:
        raise ValueError(f"linalg.diag_part: only k=0 (the main diagonal) is supported, got {k}")
    x = as_tensor(input, "linalg.diag_part")
    shape = tuple(x._value.shape)
    if len(shape) < 2:
        raise ValueError(f"linalg.diag_part: expected matrices [..., m, n], got shape {shape}")
    with x._device.activate():
        idx = Tensor(x._device.xp.arange(min(shape[-2:])), x._device)
    return x[..., idx, idx]


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
