"""The legacy functions of ``tf.keras.backend`` (Keras 1/2's ``K.*``) on gradtape tensors.

    import gradtape.keras.backend as K
    loss = K.mean(K.square(y_pred - y_true), axis=-1)
    last, outputs, states = K.rnn(step, inputs, [K.zeros((batch, units))])

Each function has the signature, defaults and results of TF 2.21's ``tf.keras.backend``
(Keras 3's ``keras/src/legacy/backend.py``, plus keras.backend's dtype and naming
functions), computed eagerly with gradtape's differentiable ops, so gradients flow through
them wherever they do in TF. Inputs that are not tensors (NumPy arrays, lists, Python
numbers) are converted first. :func:`gradients` raises ``RuntimeError`` as TF's does
under eager execution (use ``gt.GradientTape``). ``gt.keras.backend`` installs every name
of :data:`__all__`.
"""
from __future__ import annotations

import builtins
import itertools
import math as _pymath

import numpy as np

import gradtape as gt

from .keras_ops import _result_type
from .registry import InvalidArgumentError
from .tensor import Tensor

__all__ = [
    "abs", "all", "any", "arange", "argmax", "argmin", "backend", "batch_dot", "batch_flatten",
    "batch_get_value", "batch_normalization", "batch_set_value", "bias_add",
    "binary_crossentropy", "binary_focal_crossentropy", "cast", "cast_to_floatx",
    "categorical_crossentropy", "categorical_focal_crossentropy", "clip", "concatenate",
    "constant", "conv1d", "conv2d", "conv2d_transpose", "conv3d", "cos", "count_params",
    "cumprod", "cumsum", "depthwise_conv2d", "dot", "dropout", "dtype", "elu", "equal", "eval",
    "exp", "expand_dims", "eye", "flatten", "foldl", "foldr", "gather", "get_uid", "gradients",
    "greater", "greater_equal", "hard_sigmoid", "in_top_k", "is_float_dtype", "is_int_dtype",
    "is_sparse", "l2_normalize", "less", "less_equal", "log", "map_fn", "max", "maximum",
    "mean", "min", "minimum", "moving_average_update", "name_scope", "ndim", "not_equal",
    "one_hot", "ones", "ones_like", "permute_dimensions", "pool2d", "pool3d", "pow", "prod",
    "random_bernoulli", "random_normal", "random_normal_variable", "random_uniform",
    "random_uniform_variable", "relu", "repeat", "repeat_elements", "reshape", "resize_images",
    "resize_volumes", "result_type", "reverse", "rnn", "round", "separable_conv2d", "shape",
    "sigmoid", "sign", "sin", "softmax", "softplus", "softsign",
    "sparse_categorical_crossentropy", "spatial_2d_padding", "spatial_3d_padding", "sqrt",
    "square", "squeeze", "stack", "std", "stop_gradient", "sum", "switch", "tanh",
    "temporal_padding", "tile", "to_dense", "transpose", "truncated_normal", "update",
    "update_add", "update_sub", "var", "variable", "zeros", "zeros_like",
]

_py_any = builtins.any
_py_all = builtins.all
_py_max = builtins.max
_py_min = builtins.min


def _floatx():
    from .layers import _FLOATX
    return _FLOATX[0]


def _epsilon():
    from .constraints import _EPSILON
    return _EPSILON[0]


def _t(x):
    """``x`` as a tensor (tensors, Variables, sparse and ragged tensors as they are)."""
    if isinstance(x, (Tensor, gt.SparseTensor, gt.RaggedTensor)):
        return x
    return gt.convert_to_tensor(x)


def _is_bool(x):
    return x.dtype == gt.bool


def _static_shape(x):
    return tuple(None if d is None else int(d) for d in x.shape)


def _check_data_format(data_format):
    if data_format is None:
        data_format = "channels_last"
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


def _preprocess_padding(padding):
    if padding == "same":
        return "SAME"
    if padding == "valid":
        return "VALID"
    raise ValueError(f"Invalid padding: {padding}")


def _seed(seed, high=10e6):
    """TF's legacy seeding: no seed draws one from NumPy's global generator."""
    return np.random.randint(high) if seed is None else seed


# --- elementwise and reductions -----------------------------------------------------------------

def abs(x):
    """``tf.abs(x)``."""
    return gt.abs(_t(x))


def all(x, axis=None, keepdims=False):
    """Logical AND over ``axis`` of ``x`` cast to bool."""
    return gt.reduce_all(gt.cast(_t(x), gt.bool), axis, keepdims)


def any(x, axis=None, keepdims=False):
    """Logical OR over ``axis`` of ``x`` cast to bool."""
    return gt.reduce_any(gt.cast(_t(x), gt.bool), axis, keepdims)


def argmax(x, axis=-1):
    """Index (int64) of the largest value along ``axis`` (default the last)."""
    return gt.argmax(_t(x), axis)


def argmin(x, axis=-1):
    """Index (int64) of the smallest value along ``axis`` (default the last)."""
    return gt.argmin(_t(x), axis)


def cast(x, dtype):
    """``tf.cast(x, dtype)`` (a SparseTensor's values are cast)."""
    x = _t(x)
    if isinstance(x, gt.SparseTensor):
        return gt.SparseTensor(x.indices, gt.cast(x.values, dtype), x.dense_shape)
    return gt.cast(x, dtype)


def cos(x):
    """``tf.cos(x)``."""
    return gt.cos(_t(x))


def sin(x):
    """``tf.sin(x)``."""
    return gt.sin(_t(x))


def exp(x):
    """``tf.exp(x)``."""
    return gt.exp(_t(x))


def log(x):
    """``tf.math.log(x)``."""
    return gt.math.log(_t(x))


def round(x):
    """``tf.round(x)``: halves to even."""
    return gt.round(_t(x))


def sign(x):
    """``tf.sign(x)``."""
    return gt.sign(_t(x))


def square(x):
    """``tf.square(x)``."""
    return gt.square(_t(x))


def sqrt(x):
    """``tf.sqrt`` of ``x`` with negative values clipped to 0 first (so never NaN)."""
    x = _t(x)
    return gt.sqrt(gt.maximum(x, gt.constant(0.0, x.dtype)))


def pow(x, a):
    """``tf.pow(x, a)``."""
    return gt.pow(_t(x), a)


def equal(x, y):
    """Elementwise ``x == y`` (bool)."""
    return gt.equal(x, y)


def not_equal(x, y):
    """Elementwise ``x != y`` (bool)."""
    return gt.not_equal(x, y)


def greater(x, y):
    """Elementwise ``x > y`` (bool)."""
    return gt.greater(x, y)


def greater_equal(x, y):
    """Elementwise ``x >= y`` (bool)."""
    return gt.greater_equal(x, y)


def less(x, y):
    """Elementwise ``x < y`` (bool)."""
    return gt.less(x, y)


def less_equal(x, y):
    """Elementwise ``x <= y`` (bool)."""
    return gt.less_equal(x, y)


def maximum(x, y):
    """Elementwise maximum."""
    return gt.maximum(x, y)


def minimum(x, y):
    """Elementwise minimum."""
    return gt.minimum(x, y)


def clip(x, min_value, max_value):
    """``x`` clipped to ``[min_value, max_value]``; a numeric ``max_value`` below
    ``min_value`` is raised to it, and ``None`` means no bound on that side."""
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)):
        if max_value < min_value:
            max_value = min_value
    if min_value is None:
        min_value = -np.inf
    if max_value is None:
        max_value = np.inf
    return gt.clip_by_value(_t(x), min_value, max_value)


def max(x, axis=None, keepdims=False):
    """``tf.reduce_max(x, axis, keepdims)``."""
    return gt.reduce_max(_t(x), axis, keepdims)


def min(x, axis=None, keepdims=False):
    """``tf.reduce_min(x, axis, keepdims)``."""
    return gt.reduce_min(_t(x), axis, keepdims)


def sum(x, axis=None, keepdims=False):
    """``tf.reduce_sum(x, axis, keepdims)``."""
    return gt.reduce_sum(_t(x), axis, keepdims)


def prod(x, axis=None, keepdims=False):
    """``tf.reduce_prod(x, axis, keepdims)``."""
    return gt.reduce_prod(_t(x), axis, keepdims)


def mean(x, axis=None, keepdims=False):
    """``tf.reduce_mean``; a bool ``x`` is cast to floatx first (integers stay integers, the
    mean truncated, as in TF)."""
    x = _t(x)
    if _is_bool(x):
        x = gt.cast(x, _floatx())
    return gt.reduce_mean(x, axis, keepdims)


def std(x, axis=None, keepdims=False):
    """``tf.math.reduce_std`` (population standard deviation); bool is cast to floatx,
    integers are a TypeError."""
    x = _t(x)
    if _is_bool(x):
        x = gt.cast(x, _floatx())
    return gt.math.reduce_std(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    """``tf.math.reduce_variance`` (population variance); bool is cast to floatx,
    integers are a TypeError."""
    x = _t(x)
    if _is_bool(x):
        x = gt.cast(x, _floatx())
    return gt.math.reduce_variance(x, axis=axis, keepdims=keepdims)


def cumsum(x, axis=0):
    """Cumulative sum along ``axis`` (default 0)."""
    return gt.cumsum(_t(x), axis=axis)


def cumprod(x, axis=0):
    """Cumulative product along ``axis`` (default 0)."""
    return gt.math.cumprod(_t(x), axis=axis)


# --- activations ----------------------------------------------------------------------------------

def sigmoid(x):
    """``tf.sigmoid(x)``."""
    return gt.sigmoid(_t(x))


def tanh(x):
    """``tf.tanh(x)``."""
    return gt.tanh(_t(x))


def softplus(x):
    """``tf.math.softplus(x)``."""
    return gt.math.softplus(_t(x))


def softsign(x):
    """``tf.math.softsign(x)``."""
    return gt.math.softsign(_t(x))


def hard_sigmoid(x):
    """``clip(0.2 * x + 0.5, 0, 1)``."""
    x = _t(x)
    x = x * gt.constant(0.2, x.dtype) + gt.constant(0.5, x.dtype)
    return gt.clip_by_value(x, 0.0, 1.0)


def elu(x, alpha=1.0):
    """ELU: ``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _t(x)
    res = gt.nn.elu(x)
    if alpha == 1:
        return res
    return gt.where(x > 0, res, alpha * res)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """Keras' generalised ReLU: ``x`` above ``threshold`` (clipped at ``max_value``),
    ``alpha * (x - threshold)`` below it."""
    x = _t(x)
    dtype = x.dtype
    if alpha != 0.0:
        if max_value is None and threshold == 0:
            return gt.nn.leaky_relu(x, alpha=alpha)
        if threshold != 0:
            negative_part = gt.nn.relu(-x + threshold)
        else:
            negative_part = gt.nn.relu(-x)
    else:
        negative_part = 1
    clip_max = max_value is not None
    if threshold != 0:
        x = x * gt.cast(gt.greater(x, threshold), dtype=dtype)
    elif max_value == 6:
        x = gt.nn.relu6(x)
        clip_max = False
    else:
        x = gt.nn.relu(x)
    if clip_max:
        x = gt.clip_by_value(x, gt.constant(0, x.dtype), gt.constant(max_value, x.dtype))
    if alpha != 0.0:
        x = x - gt.constant(alpha, x.dtype) * negative_part
    return x


def softmax(x, axis=-1):
    """Softmax over ``axis`` (an int or a tuple of axes); ValueError for a 1-D tensor."""
    x = _t(x)
    if x.ndim <= 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    if isinstance(axis, int):
        return gt.nn.softmax(x, axis=axis)
    numerator = gt.exp(x - gt.reduce_max(x, axis=axis, keepdims=True))
    return numerator / gt.reduce_sum(numerator, axis=axis, keepdims=True)


def l2_normalize(x, axis=None):
    """``tf.linalg.l2_normalize(x, axis)`` (``x / sqrt(max(sum(x**2), 1e-12))``)."""
    return gt.linalg.l2_normalize(_t(x), axis=axis)


def dropout(x, level, noise_shape=None, seed=None):
    """``tf.nn.dropout(x, rate=level)``: kept values scaled by ``1 / (1 - level)``."""
    return gt.nn.dropout(_t(x), rate=level, noise_shape=noise_shape, seed=_seed(seed))


def in_top_k(predictions, targets, k):
    """Whether each ``targets[i]`` is among the ``k`` largest ``predictions[i]`` (bool)."""
    return gt.math.in_top_k(targets, predictions, k)


# --- losses -------------------------------------------------------------------------------------

def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy. From probabilities: ``output`` clipped to
    ``[eps, 1 - eps]``, then ``-(t * log(o + eps) + (1 - t) * log(1 - o + eps))``."""
    target, output = _t(target), _t(output)
    if from_logits:
        return gt.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = _epsilon()
    eps_ = gt.constant(eps, output.dtype)
    output = gt.clip_by_value(output, eps_, 1.0 - eps_)
    bce = target * gt.math.log(output + eps)
    bce = bce + (1 - target) * gt.math.log(1 - output + eps)
    return -bce


def binary_focal_crossentropy(target, output, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False):
    """Binary cross-entropy weighted by ``(1 - p_t) ** gamma`` (and by ``alpha`` /
    ``1 - alpha`` with ``apply_class_balancing``)."""
    target, output = _t(target), _t(output)
    sigmoidal = gt.sigmoid(output) if from_logits else output
    p_t = target * sigmoidal + (1 - target) * (1 - sigmoidal)
    focal_factor = gt.pow(1.0 - p_t, gamma)
    focal_bce = focal_factor * binary_crossentropy(target, output, from_logits=from_logits)
    if apply_class_balancing:
        weight = target * alpha + (1 - target) * (1 - alpha)
        focal_bce = weight * focal_bce
    return focal_bce


def _check_compatible(target, output):
    ts, os_ = _static_shape(target), _static_shape(output)
    if len(ts) != len(os_) or _py_any(a is not None and b is not None and a != b
                                      for a, b in zip(ts, os_)):
        raise ValueError(f"Shapes {ts} and {os_} are incompatible")


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between one-hot ``target`` and ``output`` along ``axis``; probabilities
    are renormalised to sum to 1 and clipped to ``[eps, 1 - eps]``. ``target`` and
    ``output`` must have compatible shapes (ValueError)."""
    target, output = _t(target), _t(output)
    _check_compatible(target, output)
    if from_logits:
        return gt.nn.softmax_cross_entropy_with_logits(labels=target, logits=output, axis=axis)
    output = output / gt.reduce_sum(output, axis, True)
    eps_ = gt.constant(_epsilon(), output.dtype)
    output = gt.clip_by_value(output, eps_, 1.0 - eps_)
    return -gt.reduce_sum(target * gt.math.log(output), axis)


def categorical_focal_crossentropy(target, output, alpha=0.25, gamma=2.0, from_logits=False,
                                   axis=-1):
    """Categorical cross-entropy with each class term weighted by
    ``alpha * (1 - p) ** gamma``."""
    target, output = _t(target), _t(output)
    _check_compatible(target, output)
    if from_logits:
        output = gt.nn.softmax(output, axis=axis)
    output = output / gt.reduce_sum(output, axis=axis, keepdims=True)
    eps_ = gt.constant(_epsilon(), output.dtype)
    output = gt.clip_by_value(output, eps_, 1.0 - eps_)
    cce = -target * gt.math.log(output)
    weighting_factor = gt.pow(1.0 - output, gamma) * alpha
    return gt.reduce_sum(weighting_factor * cce, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1,
                                    ignore_class=None):
    """Cross-entropy of integer labels ``target`` against ``output`` (classes along
    ``axis``). A ``target`` with a trailing size-1 axis is flattened, and the result takes
    ``output``'s shape without the class axis. With ``ignore_class``, those positions give 0
    (and no gradient) and the result carries their mask as ``_keras_mask``."""
    target, output = _t(target), _t(output)
    target = gt.cast(target, "int64")
    if not from_logits:
        eps_ = gt.constant(_epsilon(), output.dtype)
        output = gt.math.log(gt.clip_by_value(output, eps_, 1 - eps_))
    output_rank = output.ndim
    axis %= output_rank
    if axis != output_rank - 1:
        perm = list(itertools.chain(range(axis), range(axis + 1, output_rank), [axis]))
        output = gt.transpose(output, perm=perm)
    output_shape = _static_shape(output)
    update_shape = target.ndim != output_rank - 1
    if update_shape:
        target = gt.reshape(target, [-1])
        output = gt.reshape(output, [-1, output_shape[-1]])
    if ignore_class is not None:
        valid = gt.not_equal(target, gt.cast(ignore_class, target.dtype))
        safe = gt.where(valid, target, gt.zeros_like(target))
        res = gt.nn.sparse_softmax_cross_entropy_with_logits(labels=safe, logits=output)
        res = gt.where(valid, res, gt.zeros_like(res))
        res = gt.reshape(res, output_shape[:-1])
        res._keras_mask = gt.reshape(valid, output_shape[:-1])
        return res
    res = gt.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)
    if update_shape and output_rank >= 3:
        res = gt.reshape(res, output_shape[:-1])
    return res


# --- shapes and structure ------------------------------------------------------------------------

def ndim(x):
    """The rank of ``x`` (an int)."""
    return len(_t(x).shape)


def shape(x):
    """``tf.shape(x)``: the dynamic shape as an int32 tensor."""
    return gt.shape(_t(x))


def dtype(x):
    """The dtype name of ``x`` (``"float32"``)."""
    return _t(x).dtype.name


def count_params(x):
    """The number of elements of ``x`` (a Python int)."""
    return _pymath.prod(_static_shape(_t(x)))


def reshape(x, shape):
    """``tf.reshape(x, shape)``."""
    return gt.reshape(_t(x), shape)


def permute_dimensions(x, pattern):
    """``tf.transpose(x, perm=pattern)``."""
    return gt.transpose(_t(x), perm=pattern)


def transpose(x):
    """``tf.transpose(x)``: all axes reversed."""
    return gt.transpose(_t(x))


def expand_dims(x, axis=-1):
    """A size-1 axis inserted at ``axis`` (default last)."""
    return gt.expand_dims(_t(x), axis)


def squeeze(x, axis):
    """The size-1 axis ``axis`` removed."""
    return gt.squeeze(_t(x), [axis])


def flatten(x):
    """``x`` as a 1-D tensor."""
    return gt.reshape(_t(x), [-1])


def batch_flatten(x):
    """``x`` reshaped to ``(batch, prod(other axes))``."""
    x = _t(x)
    return gt.reshape(x, [-1, _pymath.prod(_static_shape(x)[1:])])


def stack(x, axis=0):
    """``tf.stack(x, axis)``."""
    return gt.stack(x, axis=axis)


def tile(x, n):
    """``tf.tile(x, n)`` (an int ``n`` stands for ``[n]``)."""
    if isinstance(n, int):
        n = [n]
    return gt.tile(_t(x), n)


def reverse(x, axes):
    """``x`` reversed along ``axes`` (an int or a list)."""
    if isinstance(axes, int):
        axes = [axes]
    return gt.reverse(_t(x), axes)


def gather(reference, indices):
    """Rows ``indices`` of ``reference`` (``tf.gather`` on axis 0)."""
    return gt.gather(_t(reference), indices)


def one_hot(indices, num_classes):
    """One-hot float32 encoding on a new last axis of size ``num_classes``."""
    return gt.one_hot(indices, depth=num_classes, axis=-1)


def repeat(x, n):
    """A 2-D ``(batch, dim)`` tensor repeated ``n`` times: ``(batch, n, dim)``."""
    x = _t(x)
    if x.ndim != 2:
        raise ValueError(f"Expected input `x` to have rank 2. Received: rank(x)={x.ndim}")
    return gt.tile(gt.expand_dims(x, 1), [1, n, 1])


def repeat_elements(x, rep, axis):
    """Each slice of ``x`` along ``axis`` repeated ``rep`` times (``np.repeat``)."""
    if not isinstance(rep, (int, np.integer)) or rep < 1:
        raise InvalidArgumentError(f"repeat_elements: rep must be a positive integer, got "
                                   f"{rep!r}")
    return gt.repeat(_t(x), int(rep), axis=axis)


def is_sparse(tensor):
    """Whether ``tensor`` is a ``SparseTensor``."""
    return isinstance(tensor, gt.SparseTensor)


def to_dense(tensor):
    """A ``SparseTensor`` made dense; anything else as it is."""
    if is_sparse(tensor):
        return gt.sparse.to_dense(tensor)
    return tensor


def _ragged_concat(tensors, axis):
    """Concatenation of RaggedTensors along axis 0 (rows), or along axis 1 for tensors of
    ragged rank 1 (each row's values joined, row by row)."""
    if axis == 0:
        ranks = {t.ragged_rank for t in tensors}
        if len(ranks) != 1:
            raise ValueError(f"concatenate: ragged tensors of different ragged ranks "
                             f"{sorted(ranks)}")
        levels = [gt.concat([t.nested_row_lengths()[i] for t in tensors], 0)
                  for i in range(ranks.pop())]
        values = gt.concat([t.flat_values for t in tensors], 0)
        return gt.RaggedTensor.from_nested_row_lengths(values, levels)
    if axis == 1 and _py_all(t.ragged_rank == 1 for t in tensors):
        splits = [np.asarray(t.row_splits.numpy(), dtype=np.int64) for t in tensors]
        nrows = {len(s) - 1 for s in splits}
        if len(nrows) != 1:
            raise ValueError("concatenate: ragged tensors need the same number of rows to be "
                             "concatenated along axis 1")
        offsets = np.cumsum([0] + [int(s[-1]) for s in splits])
        index, lengths = [], []
        for row in range(nrows.pop()):
            n = 0
            for s, off in zip(splits, offsets):
                index.extend(range(off + s[row], off + s[row + 1]))
                n += int(s[row + 1] - s[row])
            lengths.append(n)
        values = gt.concat([t.values for t in tensors], 0)
        return gt.RaggedTensor.from_row_lengths(
            gt.gather(values, np.asarray(index, dtype=np.int64)),
            np.asarray(lengths, dtype=np.int64))
    raise ValueError(f"concatenate: ragged tensors are joined along axis 0, or along axis 1 "
                     f"when their ragged rank is 1; got axis={axis}")


def concatenate(tensors, axis=-1):
    """``tensors`` joined along ``axis``: SparseTensors stay sparse when all are, ragged
    tensors stay ragged when all are, anything else is made dense first."""
    if axis < 0:
        rank = ndim(tensors[0]) if not isinstance(tensors[0], gt.RaggedTensor) \
            else tensors[0].ndim
        axis = axis % rank if rank else 0
    if tensors and _py_all(is_sparse(x) for x in tensors):
        return gt.sparse.concat(axis, list(tensors))
    if tensors and _py_all(isinstance(x, gt.RaggedTensor) for x in tensors):
        return _ragged_concat(list(tensors), axis)
    return gt.concat([to_dense(x) for x in tensors], axis)


def temporal_padding(x, padding=(1, 1)):
    """Zeros added before and after axis 1 of a 3-D tensor."""
    if len(padding) != 2:
        raise ValueError(f"Expected `padding` to be a tuple of 2 integers. Received: "
                         f"padding={padding}")
    return gt.pad(_t(x), [[0, 0], [padding[0], padding[1]], [0, 0]])


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    """Zeros around the two spatial axes of a 4-D tensor."""
    if len(padding) != 2 or _py_any(not hasattr(p, "__len__") or len(p) != 2
                                    for p in padding):
        raise ValueError(f"Expected `padding` to be a tuple of 2 tuples of 2 integers. "
                         f"Received: padding={padding}")
    data_format = _check_data_format(data_format)
    if data_format == "channels_first":
        pattern = [[0, 0], [0, 0], list(padding[0]), list(padding[1])]
    else:
        pattern = [[0, 0], list(padding[0]), list(padding[1]), [0, 0]]
    return gt.pad(_t(x), pattern)


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    """Zeros around the three spatial axes of a 5-D tensor."""
    if len(padding) != 3 or _py_any(not hasattr(p, "__len__") or len(p) != 2
                                    for p in padding):
        raise ValueError(f"Expected `padding` to be a tuple of 3 tuples of 2 integers. "
                         f"Received: padding={padding}")
    data_format = _check_data_format(data_format)
    pads = [list(p) for p in padding]
    if data_format == "channels_first":
        pattern = [[0, 0], [0, 0]] + pads
    else:
        pattern = [[0, 0]] + pads + [[0, 0]]
    return gt.pad(_t(x), pattern)


# --- products ------------------------------------------------------------------------------------

def dot(x, y):
    """Keras' ``dot``: a matrix product for 2-D tensors; for N-D tensors the last axis of
    ``x`` is contracted with the second-to-last of ``y`` (Theano's ``dot``: the result has
    shape ``x.shape[:-1] + y.shape[:-2] + y.shape[-1:]``). A SparseTensor ``x`` is
    multiplied as sparse."""
    if is_sparse(x):
        return gt.sparse.sparse_dense_matmul(x, _t(y))
    x, y = _t(x), _t(y)
    if x.ndim > 2 or y.ndim > 2:
        if y.ndim < 2:
            raise ValueError(f"dot: y needs rank >= 2 when x or y has rank > 2, got shapes "
                             f"{_static_shape(x)} and {_static_shape(y)}")
        x_shape, y_shape = _static_shape(x), _static_shape(y)
        perm = list(range(y.ndim))
        perm = [perm.pop(-2)] + perm
        xt = gt.reshape(x, [-1, x_shape[-1]])
        yt = gt.reshape(gt.transpose(y, perm=perm), [y_shape[-2], -1])
        return gt.reshape(gt.matmul(xt, yt), x_shape[:-1] + y_shape[:-2] + y_shape[-1:])
    if x.ndim != y.ndim:
        raise InvalidArgumentError(f"dot: In[0] and In[1] has different ndims: "
                                   f"{list(_static_shape(x))} vs. {list(_static_shape(y))}")
    return gt.matmul(x, y)


def batch_dot(x, y, axes=None):
    """Per-sample dot product of two batches (axis 0 is the batch): ``axes`` (an int or a
    pair; default the last axis of ``x`` and the second-to-last of ``y``, or its last when
    ``y`` is 2-D) are contracted. The result has shape ``x.shape[:a0] + x.shape[a0+1:] +
    y.shape[1:a1] + y.shape[a1+1:]`` (2-D inputs give ``(batch, 1)`` when both are 2-D)."""
    x, y = _t(x), _t(y)
    x_shape, y_shape = _static_shape(x), _static_shape(y)
    x_ndim, y_ndim = len(x_shape), len(y_shape)
    if x_ndim < 2 or y_ndim < 2:
        raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs with "
                         f"tf.shapes {x_shape} and {y_shape}.")
    if x_shape[0] is not None and y_shape[0] is not None and x_shape[0] != y_shape[0]:
        raise ValueError(f"Cannot do batch_dot on inputs with different batch sizes. Received "
                         f"inputs with tf.shapes {x_shape} and {y_shape}.")
    if isinstance(axes, int):
        axes = [axes, axes]
    if axes is None:
        axes = [x_ndim - 1, y_ndim - 1] if y_ndim == 2 else [x_ndim - 1, y_ndim - 2]
    if _py_any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError(f"Multiple target dimensions are not supported. Expected: None, int, "
                         f"(int, int), Provided: {axes}")
    axes = list(axes)
    if axes[0] < 0:
        axes[0] += x_ndim
    if axes[1] < 0:
        axes[1] += y_ndim
    if 0 in axes:
        raise ValueError("Cannot perform batch_dot over axis 0. If your inputs are not "
                         "batched, add a dummy batch dimension to your inputs using "
                         "K.expand_dims(x, 0)")
    a0, a1 = axes
    d1, d2 = x_shape[a0], y_shape[a1]
    if d1 is not None and d2 is not None and d1 != d2:
        raise ValueError(f"Cannot do batch_dot on inputs with tf.shapes {x_shape} and "
                         f"{y_shape} with axes={axes}. x.shape[{a0}] != y.shape[{a1}] "
                         f"({d1} != {d2}).")
    orig_x_ndim, orig_y_ndim = x_ndim, y_ndim
    if x_ndim == 2:
        x = gt.expand_dims(x, 1)
        a0 += 1
        x_ndim += 1
    if y_ndim == 2:
        y = gt.expand_dims(y, 2)
        y_ndim += 1
    if a0 != x_ndim - 1:                        # x's contracted axis to the end
        pattern = list(range(x_ndim))
        for i in range(a0, x_ndim - 1):
            pattern[i] = pattern[i + 1]
        pattern[-1] = a0
        x = gt.transpose(x, pattern)
    if a1 != 1:                                 # y's contracted axis to position 1
        pattern = list(range(y_ndim))
        for i in range(a1, 1, -1):
            pattern[i] = pattern[i - 1]
        pattern[1] = a1
        y = gt.transpose(y, pattern)
    xs, ys = _static_shape(x), _static_shape(y)
    if x_ndim > 3:
        x = gt.reshape(x, [xs[0], -1, xs[-1]])
    if y_ndim > 3:
        y = gt.reshape(y, [ys[0], ys[1], -1])
    result = gt.matmul(x, y)
    out = _static_shape(result)
    if x_ndim > 3:
        out = out[:1] + xs[1:-1] + out[-1:]
    if y_ndim > 3:
        out = out[:-1] + ys[2:]
    if x_ndim > 3 or y_ndim > 3:
        result = gt.reshape(result, out)
    if orig_x_ndim == 2:
        result = gt.squeeze(result, [1])
    elif orig_y_ndim == 2:
        result = gt.squeeze(result, [-1])
    return result


# --- creation and variables ---------------------------------------------------------------------

def backend():
    """``"tensorflow"``: the backend whose API gradtape serves."""
    return "tensorflow"


def arange(start, stop=None, step=1, dtype="int32"):
    """``tf.range(start, stop, step)`` (int32 for ints, float32 for floats), cast to
    ``dtype`` unless that is ``"int32"``; a single negative ``start`` gives an empty
    range."""
    if stop is None and start < 0:
        start = 0
    result = gt.range(start, stop, step)
    if dtype != "int32":
        result = gt.cast(result, dtype)
    return result


def constant(value, dtype=None, shape=None, name=None):
    """``tf.constant(value, dtype, shape)`` with ``dtype`` defaulting to floatx."""
    if dtype is None:
        dtype = _floatx()
    return gt.constant(value, dtype=dtype, shape=shape, name=name)


def cast_to_floatx(x):
    """A tensor cast to floatx; anything else as a NumPy array of floatx."""
    if isinstance(x, (Tensor, gt.SparseTensor)):
        return cast(x, _floatx())
    return np.asarray(x, dtype=_floatx())


def variable(value, dtype=None, name=None, constraint=None):
    """A ``gt.Variable`` of ``value`` (dtype floatx unless given); a SciPy sparse matrix
    (anything with ``tocoo``) gives a ``SparseTensor`` instead. A tensor ``value`` must
    already have the dtype (ValueError, as TF)."""
    if dtype is None:
        dtype = _floatx()
    if hasattr(value, "tocoo"):
        coo = value.tocoo()
        indices = np.concatenate((np.expand_dims(coo.row, 1), np.expand_dims(coo.col, 1)), 1)
        return gt.SparseTensor(indices=indices.astype(np.int64), values=coo.data,
                               dense_shape=coo.shape)
    want = gt.as_dtype(dtype)
    if isinstance(value, Tensor) and value.dtype != want:
        raise ValueError(f"initial_value: Tensor conversion requested dtype {want.name} for "
                         f"Tensor with dtype {value.dtype.name}")
    return gt.Variable(value, dtype=want, name=name, constraint=constraint)


def _filled(fill, shape, dtype, name):
    if dtype is None:
        dtype = _floatx()
    v = fill(shape=shape, dtype=gt.as_dtype(dtype))
    if _py_all(_static_shape(v)):
        return variable(v, dtype=dtype, name=name)
    return v


def zeros(shape, dtype=None, name=None):
    """A Variable of zeros (a plain tensor when a dimension is 0)."""
    return _filled(gt.zeros, shape, dtype, name)


def ones(shape, dtype=None, name=None):
    """A Variable of ones (a plain tensor when a dimension is 0)."""
    return _filled(gt.ones, shape, dtype, name)


def eye(size, dtype=None, name=None):
    """A Variable holding the ``size`` x ``size`` identity matrix."""
    if dtype is None:
        dtype = _floatx()
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 0:
        raise TypeError(f"Arguments `num_rows` and `num_columns` must be positive integer "
                        f"values. Received: num_rows={size}, num_columns={size}")
    return variable(gt.eye(int(size), dtype=gt.as_dtype(dtype)), dtype, name)


def zeros_like(x, dtype=None, name=None):
    """Zeros of ``x``'s shape (and dtype unless given)."""
    return gt.zeros_like(_t(x), dtype=dtype, name=name)


def ones_like(x, dtype=None, name=None):
    """Ones of ``x``'s shape (and dtype unless given)."""
    return gt.ones_like(_t(x), dtype=dtype, name=name)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """``tf.random.uniform`` over ``[minval, maxval)`` (dtype floatx unless given)."""
    return gt.random.uniform(shape, minval=minval, maxval=maxval,
                             dtype=dtype or _floatx(), seed=_seed(seed))


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """``tf.random.normal`` (dtype floatx unless given)."""
    return gt.random.normal(shape, mean=mean, stddev=stddev, dtype=dtype or _floatx(),
                            seed=_seed(seed))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """``tf.random.truncated_normal``: normal values redrawn beyond two ``stddev``."""
    return gt.random.truncated_normal(shape, mean, stddev, dtype=dtype or _floatx(),
                                      seed=_seed(seed))


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    """1 with probability ``p`` (a uniform draw ``<= p``), else 0, in ``dtype``."""
    dtype = dtype or _floatx()
    u = gt.random.uniform(shape, dtype=dtype, seed=_seed(seed))
    return gt.where(u <= p, gt.ones(shape, dtype=dtype), gt.zeros(shape, dtype=dtype))


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    """A Variable drawn from a normal distribution of ``mean`` and ``scale``."""
    dtype = dtype or _floatx()
    value = gt.random.normal(shape, mean=mean, stddev=scale, dtype=gt.as_dtype(dtype),
                             seed=_seed(seed, 10e8))
    return variable(value, dtype=dtype, name=name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    """A Variable drawn uniformly from ``[low, high)``."""
    dtype = dtype or _floatx()
    value = gt.random.uniform(shape, minval=low, maxval=high, dtype=gt.as_dtype(dtype),
                              seed=_seed(seed, 10e8))
    return variable(value, dtype=dtype, name=name)


def _as_numpy(x):
    return x.numpy() if isinstance(x, Tensor) else x


def eval(x):
    """The value of a tensor or Variable as NumPy (a SparseTensor made dense first);
    anything that is not a tensor is returned as it is."""
    x = to_dense(x)
    return x.numpy() if isinstance(x, (Tensor, gt.RaggedTensor)) else x


def batch_get_value(tensors):
    """``[x.numpy() for x in tensors]``."""
    return [x.numpy() for x in tensors]


def batch_set_value(tuples):
    """Assign each ``value`` (converted to the variable's dtype) to its Variable ``x``;
    every value is converted before the first assignment."""
    pairs = [(x, np.asarray(_as_numpy(value), dtype=x.dtype.name)) for x, value in tuples]
    for x, value in pairs:
        if tuple(value.shape) != _static_shape(x):
            raise ValueError(f"batch_set_value: a value of shape {tuple(value.shape)} for a "
                             f"variable of shape {_static_shape(x)}")
    for x, value in pairs:
        x.assign(value)


def update(x, new_x):
    """``x.assign(new_x)``; returns the Variable."""
    return x.assign(new_x)


def update_add(x, increment):
    """``x.assign_add(increment)``; returns the Variable."""
    return x.assign_add(increment)


def update_sub(x, decrement):
    """``x.assign_sub(decrement)``; returns the Variable."""
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    """``x = x * momentum + value * (1 - momentum)`` (as ``x -= (x - value) * (1 -
    momentum)``); returns the Variable."""
    momentum = gt.cast(momentum, x.dtype)
    value = gt.cast(value, x.dtype)
    return x.assign_sub((x - value) * (1 - momentum))


def get_uid(prefix=""):
    """A counter per ``prefix``: 1, 2, ... (shared with Keras' layer names, so after one
    ``Dense`` layer ``get_uid("dense")`` is 2; reset by ``clear_session``)."""
    from .layers import _name_counters, _name_lock
    with _name_lock:
        n = _name_counters.get(prefix, 0) + 1
        _name_counters[prefix] = n
    return n


def name_scope(name):
    """``tf.name_scope(name)``: a context manager."""
    return gt.name_scope(name)


def gradients(loss, variables):
    """TF's ``tf.compat.v1.gradients`` works in graphs only: under eager execution (always,
    here) it raises ``RuntimeError``; record the computation with ``gt.GradientTape``."""
    raise RuntimeError("tf.gradients is not supported when eager execution is enabled. Use "
                       "tf.GradientTape instead.")


def stop_gradient(variables):
    """``tf.stop_gradient`` of a tensor, or of each tensor of a list or tuple (returned as
    a list)."""
    if isinstance(variables, (list, tuple)):
        return [gt.stop_gradient(v) for v in variables]
    return gt.stop_gradient(variables)


def is_float_dtype(dtype):
    """Whether ``dtype`` (a name, NumPy or gradtape dtype, Python type) is a float type."""
    from .keras import _standardize_dtype
    d = _standardize_dtype(dtype)
    return d.startswith("float") or d.startswith("bfloat")


def is_int_dtype(dtype):
    """Whether ``dtype`` is a signed or unsigned integer type."""
    from .keras import _standardize_dtype
    d = _standardize_dtype(dtype)
    return d.startswith("int") or d.startswith("uint")


def result_type(*dtypes):
    """Keras' promotion of ``dtypes`` (JAX's lattice; Python ``int``/``float`` are weak;
    none: floatx)."""
    for d in dtypes:
        if isinstance(d, str) and d.startswith("float8"):
            raise ValueError(f"There is no implicit conversions from float8 dtypes to others. "
                             f"You must cast it internally. Received: {dtypes}")
    return _result_type(*dtypes)


# --- control flow ---------------------------------------------------------------------------------

def map_fn(fn, elems, name=None, dtype=None):
    """``fn`` applied to the slices of ``elems`` along axis 0, stacked (``dtype``: the
    output dtype)."""
    return gt.map_fn(fn, elems, dtype=dtype)


def foldl(fn, elems, initializer=None, name=None):
    """``acc = fn(acc, x)`` over ``elems`` first to last (``tf.foldl``)."""
    return gt.foldl(fn, elems, initializer=initializer)


def foldr(fn, elems, initializer=None, name=None):
    """``acc = fn(acc, x)`` over ``elems`` last to first (``tf.foldr``)."""
    return gt.foldr(fn, elems, initializer=initializer)


def switch(condition, then_expression, else_expression):
    """A scalar ``condition`` picks ``then_expression`` or ``else_expression`` (values or
    callables, only the chosen one called); a tensor ``condition`` selects elementwise,
    its shape padded with trailing 1s to the expressions' rank and tiled over them
    (ValueError when it has the higher rank)."""
    condition = _t(condition)
    if not _is_bool(condition):
        condition = gt.cast(condition, gt.bool)
    cond_ndim = condition.ndim
    if not cond_ndim:
        then_fn = then_expression if callable(then_expression) else (lambda: then_expression)
        else_fn = else_expression if callable(else_expression) else (lambda: else_expression)
        return gt.cond(condition, then_fn, else_fn)
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    then_expression = _t(then_expression)
    expr_ndim = then_expression.ndim
    if cond_ndim > expr_ndim:
        raise ValueError(f"Rank of `condition` should be less than or equal to rank of "
                         f"`then_expression` and `else_expression`. ndim(condition)="
                         f"{cond_ndim}, ndim(then_expression)={expr_ndim}")
    if cond_ndim > 1:
        cond_shape = _static_shape(condition) + (1,) * (expr_ndim - cond_ndim)
        condition = gt.reshape(condition, cond_shape)
        expr_shape = _static_shape(then_expression)
        multiples = [e if e - c > 0 else 1 for e, c in zip(expr_shape, cond_shape)]
        condition = gt.tile(condition, multiples)
    return gt.where(condition, then_expression, else_expression)


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None,
        unroll=False, input_length=None, time_major=False, zero_output_for_mask=False,
        return_all_outputs=True):
    """Iterate ``step_function(input_t, states + constants) -> (output, new_states)`` over
    the time axis (1, or 0 with ``time_major``) of ``inputs`` (a tensor or a structure of
    tensors of rank >= 3), as ``tf.keras.backend.rnn``. Returns ``(last_output, outputs,
    new_states)``; ``outputs`` has the time axis where the inputs had it (size 1 without
    ``return_all_outputs``). With ``go_backwards`` the steps run last to first and the
    outputs are in that order.

    ``mask`` (``(batch, time)``): a masked step keeps the previous output (zeros with
    ``zero_output_for_mask``) and states. Without ``unroll``, ``input_length`` (an int or
    a ``(batch,)`` tensor) caps the steps run at its maximum (outputs past it are zeros),
    and as a tensor masks each sample past its length. ``new_states`` is a tuple (the step
    function's own structure when unrolled without a mask)."""
    nest = gt.nest

    def swap(t):
        axes = list(range(t.ndim))
        axes[0], axes[1] = 1, 0
        return gt.transpose(t, axes)

    inputs = nest.map_structure(_t, inputs)
    for x in nest.flatten(inputs):
        if x.ndim < 2:
            raise ValueError(f"Shape {_static_shape(x)} must have rank at least 3")
    if not time_major:
        inputs = nest.map_structure(swap, inputs)
    flat_inputs = nest.flatten(inputs)
    for x in flat_inputs:
        if x.ndim < 3:
            raise ValueError(f"Shape {_static_shape(x)} must have rank at least 3")
    time_steps = _static_shape(flat_inputs[0])[0]
    if mask is not None:
        mask = _t(mask)
        if not _is_bool(mask):
            mask = gt.cast(mask, gt.bool)
        if mask.ndim == 2:
            mask = gt.expand_dims(mask, -1)
        if not time_major:
            mask = swap(mask)
    constants = tuple(constants or ())
    states = tuple(initial_states)
    columns = [gt.unstack(x, num=time_steps) for x in flat_inputs]
    order = list(range(time_steps))
    if go_backwards:
        order.reverse()

    def input_at(i):
        return nest.pack_sequence_as(inputs, [c[order[i]] for c in columns])

    def select(m, new, old):
        m = gt.reshape(m, _static_shape(m) + (1,) * _py_max(new.ndim - m.ndim, 0))
        return gt.where(m, new, old)

    steps = time_steps
    step_masks = None              # step i -> the (batch, 1) mask of the step, or None
    if mask is not None:
        mask_steps = gt.unstack(mask, num=time_steps)
        step_masks = [mask_steps[t] for t in order]
    if not unroll and input_length is not None:
        steps = _py_min(time_steps, int(np.max(_as_numpy(input_length))))
        if mask is None and isinstance(input_length, Tensor):
            lengths = input_length
            if go_backwards:            # TF's reversed lengths: step i is masked
                rev = (gt.reduce_max(lengths, axis=0) - 1) - lengths
                step_masks = [gt.expand_dims(gt.less(rev, i), -1) for i in range(steps)]
            else:
                step_masks = [gt.expand_dims(gt.greater(lengths, i), -1)
                              for i in range(steps)]

    outputs, prev, struct = [], None, None
    for i in range(steps):
        output, new_states = step_function(input_at(i), tuple(states) + constants)
        struct = output
        flat_out = nest.flatten(output)
        if step_masks is not None:
            m = step_masks[i]
            if prev is None or zero_output_for_mask:
                keep = [gt.zeros_like(o) for o in flat_out]
            else:
                keep = prev
            flat_out = [select(m, o, k) for o, k in zip(flat_out, keep)]
            flat_new = [select(m, s, p) for s, p in
                        zip(nest.flatten(new_states), nest.flatten(states))]
            states = tuple(nest.pack_sequence_as(list(initial_states), flat_new))
        elif unroll:
            states = new_states
        else:
            states = tuple(nest.pack_sequence_as(list(initial_states),
                                                 nest.flatten(new_states)))
        prev = flat_out
        if return_all_outputs:
            outputs.append(flat_out)
        else:
            outputs = [flat_out]
    if struct is None:      # no step ran: the outputs' shape comes from a probe step
        struct, _ = step_function(input_at(0), tuple(states) + constants)
    size = time_steps if return_all_outputs else 1
    flat_struct = nest.flatten(struct)
    stacked = []
    for j, o in enumerate(flat_struct):
        rows = [out[j] for out in outputs]
        rows += [gt.zeros_like(o)] * (size - len(rows))
        stacked.append(gt.stack(rows))
    last_output = nest.pack_sequence_as(struct, [s[-1] for s in stacked])
    all_outputs = nest.pack_sequence_as(struct, stacked)
    if not time_major:
        all_outputs = nest.map_structure(swap, all_outputs)
    new_states = states if (unroll and step_masks is None) else tuple(states)
    return last_output, all_outputs, new_states


# --- convolutions, pooling, resizing --------------------------------------------------------------

def _tuple(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """1-D convolution of ``(batch, steps, channels)`` (or channels first) with a
    ``(width, in, out)`` kernel; ``padding`` is ``"valid"``, ``"same"`` or ``"causal"``
    (left padding of ``dilation_rate * (width - 1)``)."""
    data_format = _check_data_format(data_format)
    x, kernel = _t(x), _t(kernel)
    if padding == "causal":
        left_pad = dilation_rate * (_static_shape(kernel)[0] - 1)
        x = temporal_padding(x, (left_pad, 0))
        padding = "valid"
    padding = _preprocess_padding(padding)
    fmt = "NCW" if data_format == "channels_first" else "NWC"
    return gt.nn.convolution(x, kernel, strides=strides, padding=padding, data_format=fmt,
                             dilations=dilation_rate)


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1)):
    """2-D convolution with a ``(kh, kw, in, out)`` kernel."""
    data_format = _check_data_format(data_format)
    padding = _preprocess_padding(padding)
    fmt = "NCHW" if data_format == "channels_first" else "NHWC"
    return gt.nn.convolution(_t(x), _t(kernel), strides=strides, padding=padding,
                             data_format=fmt, dilations=dilation_rate)


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1, 1)):
    """3-D convolution with a ``(kd, kh, kw, in, out)`` kernel."""
    data_format = _check_data_format(data_format)
    padding = _preprocess_padding(padding)
    fmt = "NCDHW" if data_format == "channels_first" else "NDHWC"
    return gt.nn.convolution(_t(x), _t(kernel), strides=strides, padding=padding,
                             data_format=fmt, dilations=dilation_rate)


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """Transposed 2-D convolution to ``output_shape`` (a ``(batch, ...)`` tuple in the
    data format; a None batch is ``x``'s) with a ``(kh, kw, out, in)`` kernel. With a
    dilation (equal in both axes) the strides are 1, as in TF's atrous form."""
    data_format = _check_data_format(data_format)
    x, kernel = _t(x), _t(kernel)
    dilation_rate = _tuple(dilation_rate, 2)
    strides = _tuple(strides, 2)
    force_transpose = data_format == "channels_first" and dilation_rate != (1, 1)
    fmt = "NCHW" if data_format == "channels_first" and not force_transpose else "NHWC"
    output_shape = tuple(output_shape)
    if force_transpose:
        x = gt.transpose(x, (0, 2, 3, 1))
        output_shape = (output_shape[0], output_shape[2], output_shape[3], output_shape[1])
    if output_shape[0] is None:
        output_shape = (_static_shape(x)[0],) + output_shape[1:]
    output_shape = [int(d) for d in output_shape]
    padding = _preprocess_padding(padding)
    if dilation_rate == (1, 1):
        full_strides = (1,) + strides + (1,) if fmt == "NHWC" else (1, 1) + strides
        out = gt.nn.conv2d_transpose(x, kernel, output_shape, full_strides, padding=padding,
                                     data_format=fmt)
    else:
        if dilation_rate[0] != dilation_rate[1]:
            raise ValueError(f"Expected the 2 dimensions of the `dilation_rate` argument to "
                             f"be equal to each other. Received: dilation_rate={dilation_rate}")
        out = gt.nn.conv2d_transpose(x, kernel, output_shape, 1, padding=padding,
                                     data_format="NHWC", dilations=dilation_rate[0])
    if force_transpose:
        out = gt.transpose(out, (0, 3, 1, 2))
    return out


def _window_strides(strides, fmt):
    strides = tuple(strides)
    return (1,) + strides + (1,) if fmt.endswith("C") else (1, 1) + strides


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    """Depthwise 2-D convolution with a ``(kh, kw, in, multiplier)`` kernel."""
    data_format = _check_data_format(data_format)
    padding = _preprocess_padding(padding)
    fmt = "NCHW" if data_format == "channels_first" else "NHWC"
    return gt.nn.depthwise_conv2d(_t(x), _t(depthwise_kernel),
                                  strides=_window_strides(strides, fmt), padding=padding,
                                  dilations=dilation_rate, data_format=fmt)


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """A depthwise 2-D convolution followed by a ``(1, 1, in * multiplier, out)``
    pointwise one."""
    data_format = _check_data_format(data_format)
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    padding = _preprocess_padding(padding)
    fmt = "NCHW" if data_format == "channels_first" else "NHWC"
    return gt.nn.separable_conv2d(_t(x), _t(depthwise_kernel), _t(pointwise_kernel),
                                  strides=_window_strides(strides, fmt), padding=padding,
                                  dilations=dilation_rate, data_format=fmt)


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    """2-D max (``pool_mode="max"``) or average (``"avg"``) pooling."""
    data_format = _check_data_format(data_format)
    if len(pool_size) != 2:
        raise ValueError("`pool_size` must be a tuple of 2 integers.")
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    padding = _preprocess_padding(padding)
    fmt = "NCHW" if data_format == "channels_first" else "NHWC"
    ksize, strides = _window_strides(pool_size, fmt), _window_strides(strides, fmt)
    if pool_mode == "max":
        return gt.nn.max_pool(_t(x), ksize, strides, padding=padding, data_format=fmt)
    if pool_mode == "avg":
        return gt.nn.avg_pool(_t(x), ksize, strides, padding=padding, data_format=fmt)
    raise ValueError(f"Invalid pooling mode: {pool_mode}")


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None,
           pool_mode="max"):
    """3-D max (``pool_mode="max"``) or average (``"avg"``) pooling."""
    data_format = _check_data_format(data_format)
    padding = _preprocess_padding(padding)
    fmt = "NCDHW" if data_format == "channels_first" else "NDHWC"
    ksize, strides = _window_strides(pool_size, fmt), _window_strides(strides, fmt)
    if pool_mode == "max":
        return gt.nn.max_pool3d(_t(x), ksize, strides, padding=padding, data_format=fmt)
    if pool_mode == "avg":
        return gt.nn.avg_pool3d(_t(x), ksize, strides, padding=padding, data_format=fmt)
    raise ValueError(f"Invalid pooling mode: {pool_mode}")


def bias_add(x, bias, data_format=None):
    """``x + bias`` with a 1-D ``bias`` on the channel axis (last, or 1 for
    ``channels_first``), or a bias of rank ``ndim(x) - 1`` (channels last in it)."""
    data_format = _check_data_format(data_format)
    x, bias = _t(x), _t(bias)
    bias_shape = _static_shape(bias)
    if len(bias_shape) != 1 and len(bias_shape) != x.ndim - 1:
        raise ValueError(f"Unexpected bias dimensions {len(bias_shape)}. Expected it to be 1 "
                         f"or {x.ndim - 1} dimensions")
    if len(bias_shape) == 1:
        fmt = "NCHW" if data_format == "channels_first" else "NHWC"
        return gt.nn.bias_add(x, bias, data_format=fmt)
    if x.ndim in (3, 4, 5):
        if data_format == "channels_first":
            return x + gt.reshape(bias, (1, bias_shape[-1]) + bias_shape[:-1])
        return x + gt.reshape(bias, (1,) + bias_shape)
    return gt.nn.bias_add(x, bias)


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` (``tf.nn.batch_normalization``;
    ``axis`` is not used, as in TF)."""
    return gt.nn.batch_normalization(_t(x), mean, var, beta, gamma, epsilon)


_INTERPOLATIONS = ("area", "bicubic", "bilinear", "gaussian", "lanczos3", "lanczos5",
                   "mitchellcubic", "nearest")


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    """The spatial size of a 4-D tensor multiplied by the (integer) factors with
    ``tf.image.resize`` (``interpolation``: one of ``area, bicubic, bilinear, gaussian,
    lanczos3, lanczos5, mitchellcubic, nearest``)."""
    if data_format == "channels_first":
        rows, cols = 2, 3
    elif data_format == "channels_last":
        rows, cols = 1, 2
    else:
        raise ValueError(f"Invalid `data_format` argument: {data_format}")
    x = _t(x)
    size = _static_shape(x)[rows:cols + 1]
    new_shape = [int(size[0]) * int(height_factor), int(size[1]) * int(width_factor)]
    if interpolation not in _INTERPOLATIONS:
        names = '"' + '", "'.join(_INTERPOLATIONS) + '"'
        raise ValueError(f"`interpolation` argument should be one of: {names}. Received: "
                         f"\"{interpolation}\".")
    if data_format == "channels_first":
        x = gt.transpose(x, [0, 2, 3, 1])
    x = gt.image.resize(x, new_shape, method=interpolation)
    if data_format == "channels_first":
        x = gt.transpose(x, [0, 3, 1, 2])
    return x


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """Each voxel of a 5-D tensor repeated ``depth_factor`` x ``height_factor`` x
    ``width_factor`` times."""
    if data_format == "channels_first":
        axes = (2, 3, 4)
    elif data_format == "channels_last":
        axes = (1, 2, 3)
    else:
        raise ValueError(f"Invalid data_format: {data_format}")
    out = _t(x)
    for axis, factor in zip(axes, (depth_factor, height_factor, width_factor)):
        out = repeat_elements(out, factor, axis=axis)
    return out
