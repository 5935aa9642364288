"""Matrix products: matmul (batched), tensordot, einsum."""
from __future__ import annotations

import re
import string

import numpy as np

from ..registry import apply, defop
from ._util import as_tensor, binary, dtype_name

__all__ = ["matmul", "tensordot", "einsum", "matvec"]


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
