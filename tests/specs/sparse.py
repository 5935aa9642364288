"""Specs for ``gt.sparse``: the differentiable sparse ops (compositions of the gathers,
scatters and segment reductions, so they add no primitive) on fixed indices, with the
values and dense operands as inputs. Every op here runs without the host waiting."""
from __future__ import annotations

import numpy as np

import gradtape as gt
from gradtape import sparse

from . import Spec, away_from_zero, distinct

# 4 entries of a 3x3 matrix, in row-major order
IND = [[0, 1], [1, 0], [1, 2], [2, 2]]
# 5 entries of a 2x3x4 tensor, out of order (reorder / transpose / softmax)
IND3 = [[1, 2, 3], [0, 0, 1], [1, 0, 0], [0, 0, 3], [1, 2, 0]]


def _sp(values, ind=IND, shape=(3, 3)):
    return sparse.SparseTensor(gt.constant(np.asarray(ind, np.int64)), values, shape)


def _to_dense(v, d):
    dense = sparse.to_dense(_sp(v), default_value=d)
    return dense * dense


def _softmax(v, w):
    return sparse.softmax(_sp(v)).values * sparse.softmax(_sp(w, IND3, (2, 3, 4))).values[:4]


def _matmul_all(v, b):
    sp = _sp(v)
    return (sparse.sparse_dense_matmul(sp, b) ** 2
            + sparse.sparse_dense_matmul(sp, b, adjoint_a=True)
            + gt.transpose(sparse.sparse_dense_matmul(gt.transpose(b), sp)))


def _matmul_adjoint_b(v, b):
    sp = _sp(v)
    return (sparse.sparse_dense_matmul(sp, b, adjoint_b=True) ** 2
            + sparse.sparse_dense_matmul(sp, b, adjoint_a=True, adjoint_b=True))


def _reduce_sum(v):
    sp = _sp(v * v, IND3, (2, 3, 4))
    return (sparse.reduce_sum(sp, axis=[0, 2]) * sparse.reduce_sum(sp, axis=-1)[0]
            + sparse.reduce_sum(sp) * sparse.reduce_sum(sp, axis=1, keepdims=True)[:, 0, :3])


def _reduce_max(v):
    sp = _sp(v, IND3, (2, 3, 4))
    return (sparse.reduce_max(sp, axis=2) ** 2
            + sparse.reduce_max(sp, axis=[0, 2], keepdims=True)[0, :, 0])


def _cwise(v, d):
    sp = _sp(v)
    return (sp * d).values * (sp / (d * d + 1.0)).values


def _add_dense(v, d):
    return sparse.add(_sp(v * v), d) * sparse.add(d, _sp(v))


def _reorder_transpose(v):
    sp = _sp(v, IND3, (2, 3, 4))
    return (sparse.reorder(sp).values ** 2 * sparse.transpose(sp).values
            + sparse.transpose(sp, [1, 0, 2]).values)


def _reshape_expand(v):
    sp = sparse.reshape(_sp(v * v), [9, 1])
    return sparse.to_dense(sparse.expand_dims(sp, 0), validate_indices=False) * v[0]


_ROWS = [0, 2, 2, 4, 1, 0]
_SEGS = [0, 0, 1, 1, 3, 3]


def _segments(x):
    return (sparse.segment_sum(x, _ROWS, _SEGS, num_segments=5) ** 2
            + sparse.segment_mean(x, _ROWS, _SEGS, num_segments=5)
            * sparse.segment_sqrt_n(x, _ROWS, _SEGS, num_segments=5))


SPECS = [
    Spec("sparse_to_dense", _to_dense, [((4,), ())]),
    Spec("sparse_softmax", _softmax, [((4,), (5,))]),
    Spec("sparse_dense_matmul", _matmul_all, [((4,), (3, 2))]),
    Spec("sparse_dense_matmul_adjoint_b", _matmul_adjoint_b, [((4,), (2, 3))]),
    Spec("sparse_reduce_sum", _reduce_sum, [((5,),)]),
    Spec("sparse_reduce_max", _reduce_max, [((5,),)], domain=distinct),
    Spec("sparse_dense_cwise", _cwise, [((4,), (3, 3)), ((4,), (3,)), ((4,), (3, 1)),
                                        ((4,), ())],
         domains=(away_from_zero, away_from_zero)),
    Spec("sparse_add_dense", _add_dense, [((4,), (3, 3))]),
    Spec("sparse_reorder_transpose", _reorder_transpose, [((5,),)]),
    Spec("sparse_reshape_expand_dims", _reshape_expand, [((4,),)]),
    Spec("sparse_segment_sum_mean_sqrt_n", _segments, [((5, 3),), ((5,),)]),
]
