"""Specs for ``gt.nn``: activations, softmax and cross-entropies, bias_add, convolution,
pooling, and the rule primitives (relu_grad, conv2d_backprop_*, pool gradients) checked as
functions of their cotangent so their own rules are exercised to second order."""
from __future__ import annotations

import numpy as np

import gradtape as gt
from gradtape.registry import REGISTRY, apply
from . import UNARY, Spec, away_from_zero, distinct, normal, positive


def _prob(rng, shape):
    return rng.uniform(0.05, 1.0, shape)


def _relu6_domain(rng, shape):
    """Values away from both kinks (0 and 6)."""
    pick = rng.integers(0, 3, shape)
    return np.choose(pick, [rng.uniform(-2.0, -0.3, shape), rng.uniform(0.3, 5.7, shape),
                            rng.uniform(6.3, 8.0, shape)])


def _sparse_ce(logits):
    c = logits.shape[-1]
    n = int(np.prod(logits.shape[:-1]))
    labels = gt.constant((np.arange(n) * 7 % c).reshape(logits.shape[:-1]).astype(np.int64))
    return gt.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


def _prim(name, *args, **attrs):
    return apply(REGISTRY[name], args, attrs)


def _relu_grad(g, y):
    return _prim("relu_grad", g, y)


def _conv(strides=1, padding="SAME", dilations=None, data_format="NHWC"):
    def f(x, w):
        return gt.nn.conv2d(x, w, strides, padding, data_format=data_format, dilations=dilations)
    return f


_GEOM = {"strides": (2, 1), "dilations": (1, 2), "pads": ((1, 1), (2, 1))}


def _conv_bp_input(g, w):
    # input [2, 5, 5, 2], filters [2, 3, 2, 3], output [2, 3, 4, 3]
    return _prim("conv2d_backprop_input", g, w, input_shape=(2, 5, 5, 2), **_GEOM)


def _conv_bp_filter(x, g):
    return _prim("conv2d_backprop_filter", x, g, filter_shape=(2, 3, 2, 3), **_GEOM)


def _conv_transpose(g, w):
    return gt.nn.conv2d_transpose(g, w, [2, 6, 5, 2], strides=2, padding="SAME")


def _pool(fn, k, s, padding):
    def f(x):
        return fn(x, k, s, padding)
    return f


_POOL = {"ksize": (2, 3), "strides": (2, 2), "pads": ((0, 1), (1, 1))}


def _max_pool_grad(g, x):
    # g has the pooled output's shape: [2, 3, 2, 2] from x [2, 5, 4, 2]
    y = gt.stop_gradient(_prim("max_pool2d", x, **_POOL))
    return _prim("max_pool2d_grad", g, x, y, **_POOL)


def _avg_pool_grad(g):
    return _prim("avg_pool2d_grad", g, input_shape=(2, 5, 4, 2), **_POOL)


def _moments(x):
    mean, variance = gt.nn.moments(x, axes=[0, 1])
    return mean * 2.0 + variance


def _dropout(x):
    # A fresh generator per call: every evaluation draws the same mask.
    return gt.nn.dropout(x, 0.4, rng=gt.random.Generator.from_seed(3))


def _embedding(params):
    return gt.nn.embedding_lookup(params, np.array([[0, 2], [2, 4]]))


def _batch_norm(x, mean, variance, offset, scale):
    return gt.nn.batch_normalization(x, mean, variance, offset, scale, 1e-3)


def _wce(z, x, w):
    return gt.nn.weighted_cross_entropy_with_logits(z, x, w)


def _above_one(rng, shape):
    return rng.uniform(1.5, 4.0, shape)


def _weighted_moments(x, f):
    mean, variance = gt.nn.weighted_moments(x, [0, 2], f)
    return mean * 2.0 + variance


def _normalize_moments(counts, mean_ss, variance_ss, shift):
    mean, variance = gt.nn.normalize_moments(counts, mean_ss, variance_ss, shift)
    return mean * 3.0 + variance


def _conv3d(strides, padding, dilations=None):
    def f(x, w):
        return gt.nn.conv3d(x, w, strides, padding, dilations=dilations)
    return f


def _conv3d_transpose(g, w):
    # input [1, 3, 2, 2, 3] -> output [1, 5, 4, 3, 2] (strides 2, 2, 2, SAME)
    return gt.nn.conv3d_transpose(g, w, [1, 5, 4, 3, 2], 2, "SAME")


def _conv1d_transpose(g, w):
    return gt.nn.conv1d_transpose(g, w, [2, 7, 2], 2, "VALID")


SPECS = [
    # --- activations (domains away from the kinks) ---
    Spec("relu", gt.nn.relu, UNARY, ops=("relu",), domain=away_from_zero),
    Spec("relu_grad", _relu_grad, [((3, 4), (3, 4))], ops=("relu_grad",),
         domains=(normal, away_from_zero), wrt=(0,)),
    Spec("relu6", gt.nn.relu6, UNARY, ops=("relu6",), domain=_relu6_domain),
    Spec("relu6_grad", lambda g, y: _prim("relu6_grad", g, y), [((3, 4), (3, 4))],
         ops=("relu6_grad",), domains=(normal, _relu6_domain), wrt=(0,)),
    Spec("leaky_relu", lambda x: gt.nn.leaky_relu(x, alpha=0.3), UNARY, ops=("leaky_relu",),
         domain=away_from_zero),
    Spec("leaky_relu_grad", lambda g, x: _prim("leaky_relu_grad", g, x, alpha=0.3),
         [((3, 4), (3, 4))], ops=("leaky_relu_grad",), domains=(normal, away_from_zero),
         wrt=(0,)),
    Spec("elu", gt.nn.elu, UNARY, ops=("elu",), domain=away_from_zero),
    Spec("selu", gt.nn.selu, UNARY, ops=("selu",), domain=away_from_zero),
    Spec("gelu", gt.nn.gelu, UNARY, ops=("gelu",)),
    Spec("gelu_tanh", lambda x: gt.nn.gelu(x, approximate=True), UNARY, ops=("gelu",)),
    Spec("silu", gt.nn.silu, UNARY, ops=("silu",)),
    Spec("silu_beta", lambda x: gt.nn.silu(x, beta=1.7), UNARY, ops=("silu",)),
    Spec("softsign", gt.nn.softsign, UNARY, ops=("abs", "divide"), domain=away_from_zero),
    # --- softmax family ---
    Spec("softmax", gt.nn.softmax, [((5,),), ((3, 4),), ((2, 3, 4),)], ops=("softmax",)),
    Spec("softmax_axis0", lambda x: gt.nn.softmax(x, axis=0), [((3, 4),)], ops=("softmax",)),
    Spec("log_softmax", gt.nn.log_softmax, [((5,),), ((3, 4),), ((2, 3, 4),)],
         ops=("log_softmax",)),
    Spec("log_softmax_axis1", lambda x: gt.nn.log_softmax(x, axis=1), [((2, 3, 4),)],
         ops=("log_softmax",)),
    Spec("sigmoid_cross_entropy_with_logits",
         lambda z, x: gt.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
         [((3, 4), (3, 4)), ((5,), (5,))], ops=("sigmoid_cross_entropy_with_logits",),
         domains=(_prob, normal)),
    Spec("softmax_cross_entropy_with_logits",
         lambda z, x: gt.nn.softmax_cross_entropy_with_logits(z, x),
         [((3, 4), (3, 4)), ((5,), (5,)), ((2, 3, 4), (2, 3, 4))],
         ops=("softmax_cross_entropy_with_logits",), domains=(_prob, normal)),
    Spec("softmax_cross_entropy_axis1",
         lambda z, x: gt.nn.softmax_cross_entropy_with_logits(z, x, axis=1),
         [((2, 3, 4), (2, 3, 4))], ops=("softmax_cross_entropy_with_logits",),
         domains=(_prob, normal)),
    Spec("sparse_softmax_cross_entropy_with_logits", _sparse_ce, [((4, 5),), ((6,),),
                                                                  ((2, 3, 4),)],
         ops=("sparse_softmax_cross_entropy_with_logits",)),
    # --- l2_loss, bias_add, moments and other composites ---
    Spec("l2_loss", gt.nn.l2_loss, UNARY, ops=("l2_loss",)),
    Spec("bias_add", gt.nn.bias_add, [((3, 4), (4,)), ((2, 3, 3, 4), (4,))], ops=("bias_add",)),
    Spec("bias_add_nchw", lambda v, b: gt.nn.bias_add(v, b, data_format="NCHW"),
         [((2, 4, 3, 3), (4,))], ops=("bias_add",)),
    Spec("moments", _moments, [((3, 4),), ((2, 3, 4),)], ops=("reduce_mean",)),
    Spec("batch_normalization", _batch_norm,
         [((3, 4), (4,), (4,), (4,), (4,))], ops=("rsqrt",),
         domains=(normal, normal, positive, normal, normal)),
    Spec("l2_normalize", lambda x: gt.nn.l2_normalize(x, axis=-1), [((3, 4),)],
         ops=("rsqrt", "maximum")),
    Spec("dropout", _dropout, [((4, 5),)], ops=("multiply",)),
    Spec("embedding_lookup", _embedding, [((5, 3),)], ops=("getitem",)),
    # --- convolution ---
    Spec("conv2d", _conv(), [((2, 5, 5, 3), (3, 3, 3, 2)), ((1, 4, 6, 2), (1, 1, 2, 3))],
         ops=("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter")),
    Spec("conv2d_valid_strided", _conv(strides=2, padding="VALID"),
         [((2, 6, 5, 2), (2, 3, 2, 3))], ops=("conv2d",)),
    Spec("conv2d_same_strided_dilated", _conv(strides=[1, 2], dilations=[2, 1]),
         [((1, 7, 6, 2), (3, 2, 2, 2))], ops=("conv2d",)),
    Spec("conv2d_explicit_padding_nchw",
         _conv(padding=[[0, 0], [0, 0], [1, 2], [0, 1]], data_format="NCHW"),
         [((2, 2, 4, 4), (3, 2, 2, 3))], ops=("conv2d",)),
    Spec("conv2d_grouped", _conv(strides=[1, 2]), [((2, 5, 5, 4), (3, 3, 2, 6))],
         ops=("conv2d",)),
    Spec("conv2d_backprop_input", _conv_bp_input, [((2, 3, 4, 3), (2, 3, 2, 3))],
         ops=("conv2d_backprop_input", "conv2d", "conv2d_backprop_filter")),
    Spec("conv2d_backprop_filter", _conv_bp_filter, [((2, 5, 5, 2), (2, 3, 4, 3))],
         ops=("conv2d_backprop_filter", "conv2d", "conv2d_backprop_input")),
    Spec("conv2d_transpose", _conv_transpose, [((2, 3, 3, 3), (3, 3, 2, 3))],
         ops=("conv2d_backprop_input",)),
    # --- pooling (distinct values: no ties inside a window) ---
    Spec("max_pool2d", _pool(gt.nn.max_pool2d, 2, 2, "VALID"), [((2, 4, 4, 3),)],
         ops=("max_pool2d",), domain=distinct),
    Spec("max_pool2d_same", _pool(gt.nn.max_pool2d, [3, 2], [2, 1], "SAME"), [((2, 5, 4, 2),)],
         ops=("max_pool2d",), domain=distinct),
    Spec("max_pool1d", _pool(gt.nn.max_pool, 2, 1, "SAME"), [((2, 5, 3),)],
         ops=("max_pool2d",), domain=distinct),
    Spec("max_pool2d_grad", _max_pool_grad, [((2, 3, 2, 2), (2, 5, 4, 2))],
         ops=("max_pool2d_grad", "max_pool2d_gather"), domains=(normal, distinct), wrt=(0,)),
    Spec("avg_pool2d", _pool(gt.nn.avg_pool2d, 2, 2, "VALID"), [((2, 4, 4, 3),)],
         ops=("avg_pool2d",)),
    Spec("avg_pool2d_same", _pool(gt.nn.avg_pool2d, [3, 2], [2, 1], "SAME"), [((2, 5, 4, 2),)],
         ops=("avg_pool2d",)),
    Spec("avg_pool1d", _pool(gt.nn.avg_pool, 3, 2, "SAME"), [((2, 5, 3),)],
         ops=("avg_pool2d",)),
    Spec("avg_pool2d_grad", _avg_pool_grad, [((2, 3, 2, 2),)], ops=("avg_pool2d_grad",)),
    Spec("max_pool2d_explicit_padding",
         _pool(gt.nn.max_pool2d, [3, 2], [2, 1], [[0, 0], [2, 0], [1, 1], [0, 0]]),
         [((2, 5, 4, 2),)], ops=("max_pool2d",), domain=distinct),
    # --- more of tf.nn, composed from the primitives above ---
    Spec("weighted_cross_entropy_with_logits", _wce, [((2, 3), (2, 3), (3,))],
         ops=("log1p", "abs", "relu"), domains=(_prob, away_from_zero, positive)),
    Spec("log_poisson_loss", gt.nn.log_poisson_loss, [((3, 4), (3, 4))], ops=("exp",)),
    Spec("log_poisson_loss_full",
         lambda z, c: gt.nn.log_poisson_loss(z, c, compute_full_loss=True), [((3, 4), (3, 4))],
         ops=("log", "where"), domains=(_above_one, normal)),
    Spec("crelu", gt.nn.crelu, [((3, 4),)], ops=("concat", "relu"), domain=away_from_zero),
    Spec("crelu_axis0", lambda x: gt.nn.crelu(x, axis=0), [((2, 3),)], ops=("concat",),
         domain=away_from_zero),
    Spec("weighted_moments", _weighted_moments, [((3, 2, 4), (3, 1, 4))],
         ops=("divide_no_nan", "squared_difference"), domains=(normal, positive)),
    Spec("normalize_moments", _normalize_moments, [((), (4,), (4,), (4,))],
         ops=("square",), domains=(positive, normal, positive, normal)),
    Spec("depth_to_space", lambda x: gt.nn.depth_to_space(x, 2), [((2, 2, 3, 8),)],
         ops=("transpose", "reshape")),
    Spec("space_to_depth", lambda x: gt.nn.space_to_depth(x, 2), [((2, 4, 2, 3),)],
         ops=("transpose", "reshape")),
    Spec("local_response_normalization",
         lambda x: gt.nn.local_response_normalization(x, 2, 1.5, 0.4, 0.75), [((2, 2, 1, 6),)],
         ops=("pad", "getitem", "pow")),
    Spec("atrous_conv2d", lambda x, w: gt.nn.atrous_conv2d(x, w, 2, "SAME"),
         [((1, 5, 4, 2), (2, 2, 2, 3))], ops=("conv2d",)),
    Spec("conv1d_transpose", _conv1d_transpose, [((2, 3, 3), (3, 2, 3))],
         ops=("conv2d_backprop_input",)),
    Spec("convolution_1d", lambda x, w: gt.nn.convolution(x, w, padding="SAME", dilations=2),
         [((2, 5, 2), (2, 2, 3))], ops=("conv2d",)),
    Spec("conv3d_same", _conv3d([1, 1, 1, 1, 1], "SAME"), [((1, 3, 4, 3, 2), (2, 2, 3, 2, 2))],
         ops=("conv2d", "concat", "getitem")),
    Spec("conv3d_valid_strided", _conv3d([1, 2, 1, 2, 1], "VALID"),
         [((2, 5, 3, 4, 2), (3, 2, 2, 2, 2))], ops=("conv2d",)),
    Spec("conv3d_same_dilated", _conv3d([1, 1, 1, 1, 1], "SAME", [1, 2, 1, 1, 1]),
         [((1, 4, 3, 3, 1), (2, 2, 2, 1, 2))], ops=("conv2d",)),
    Spec("conv3d_transpose", _conv3d_transpose, [((1, 3, 2, 2, 3), (2, 3, 2, 2, 3))],
         ops=("conv2d_backprop_input", "pad")),
    Spec("max_pool3d_same", _pool(gt.nn.max_pool3d, [3, 2, 2], [2, 1, 2], "SAME"),
         [((2, 4, 3, 4, 2),)], ops=("max_pool2d",), domain=distinct),
    Spec("max_pool3d_valid", _pool(gt.nn.max_pool3d, 2, 2, "VALID"), [((1, 4, 4, 5, 2),)],
         ops=("max_pool2d",), domain=distinct),
    Spec("avg_pool3d_same", _pool(gt.nn.avg_pool3d, [3, 2, 2], [2, 1, 2], "SAME"),
         [((2, 4, 3, 4, 2),)], ops=("avg_pool2d",)),
    Spec("avg_pool3d_valid", _pool(gt.nn.avg_pool3d, [2, 1, 3], 1, "VALID"),
         [((1, 3, 2, 4, 2),)], ops=("avg_pool2d",)),
]


def _ctc_loss(x):
    """CTC over logits [T, B, C]: repeats needing a blank, shorter sequences; for B == 3
    batch-major with the blank at class 1 (TF's label shift)."""
    t, b, c = x.shape
    if b == 3:
        return gt.nn.ctc_loss([[2, 2, 3, 0], [3, 0, 0, 0], [0, 2, 2, 0]],
                              gt.transpose(x, [1, 0, 2]), [3, 2, 3], [t, t - 1, t - 2],
                              logits_time_major=False, blank_index=1)
    return gt.nn.ctc_loss([[1, 1, 3, 2], [2, 3, 0, 0]], x, [4, 2], [t, t - 2])


SPECS.append(Spec("ctc_loss", _ctc_loss, [((7, 2, 4),), ((6, 3, 4),)], ops=("ctc_loss",),
                  order=1))


# --- the rest of tf.nn (gradtape/nn_extra.py): composites over gathers, pads and reshapes ---

def _nce_like(loss, **kwargs):
    """A sampled loss with given sampled values (deterministic), as a function of weights
    [8, 3], biases [8] and inputs [2, 3]."""
    def f(w, b, x):
        dt = x.dtype
        sampled = (gt.constant([2, 5, 3, 2], gt.int64), gt.constant([[.5, .6], [.7, .4]], dt),
                   gt.constant([.1, .2, .3, .4], dt))
        return loss(w, b, [[1, 2], [3, 7]], x, 4, 8, num_true=2, sampled_values=sampled,
                    **kwargs)
    return f


def _fractional(kind, overlapping):
    from gradtape import nn_extra
    return lambda x: nn_extra._fractional_pool(x, [0, 2, 3, 5], [0, 1, 3, 4, 6], overlapping,
                                               kind, "fractional_pool")


SPECS += [
    Spec("max_pool_with_argmax", lambda x: gt.nn.max_pool_with_argmax(
        x, [2, 3], [2, 1], "SAME").output, [((2, 5, 6, 3),)],
        ops=("window_max_argmax", "getitem"), domain=distinct),
    Spec("dilation2d", lambda x, f: gt.nn.dilation2d(x, f, [1, 2, 1, 1], "SAME", "NHWC",
                                                     [1, 1, 2, 1]),
         [((2, 4, 5, 2), (2, 3, 2))], ops=("dilation2d_argmax", "getitem"),
         domains=(distinct, normal)),
    Spec("erosion2d", lambda x, f: gt.nn.erosion2d(x, f, [1, 1, 1, 1], "VALID", "NHWC",
                                                   [1, 2, 1, 1]),
         [((1, 5, 4, 2), (2, 2, 2))], ops=("dilation2d_argmax", "getitem"),
         domains=(distinct, normal)),
    Spec("fractional_max_pool", _fractional("max", False), [((2, 5, 6, 2),)],
         ops=("window_max_argmax", "getitem"), domain=distinct),
    Spec("fractional_max_pool_overlapping", _fractional("max", True), [((1, 5, 6, 2),)],
         ops=("window_max_argmax", "getitem"), domain=distinct),
    Spec("fractional_avg_pool", _fractional("avg", True), [((2, 5, 6, 2),)], ops=("getitem",)),
    Spec("space_to_batch_nd", lambda x: gt.space_to_batch_nd(x, [2, 3], [[1, 0], [0, 2]]),
         [((2, 3, 4, 2),)], ops=("pad", "transpose")),
    Spec("batch_to_space", lambda x: gt.batch_to_space(x, [2, 2], [[1, 0], [0, 1]]),
         [((8, 2, 3, 1),)], ops=("transpose", "getitem")),
    Spec("depthwise_conv2d_backprop_input", lambda w, g: gt.nn.depthwise_conv2d_backprop_input(
        [1, 4, 5, 2], w, g, [1, 2, 1, 1], "SAME"), [((2, 3, 2, 2), (1, 2, 5, 4))],
        ops=("getitem_grad",)),
    Spec("depthwise_conv2d_backprop_filter", lambda x, g:
         gt.nn.depthwise_conv2d_backprop_filter(x, [2, 3, 2, 2], g, [1, 1, 1, 1], "VALID"),
         [((1, 4, 5, 2), (1, 3, 3, 4))], ops=("getitem",)),
    Spec("atrous_conv2d_transpose", lambda v, f: gt.nn.atrous_conv2d_transpose(
        v, f, [1, 5, 4, 2], 2, "SAME"), [((1, 5, 4, 3), (2, 2, 2, 3))],
        ops=("conv2d_backprop_input",)),
    Spec("nce_loss", _nce_like(gt.nn.nce_loss, remove_accidental_hits=True),
         [((8, 3), (8,), (2, 3))], ops=("sigmoid_cross_entropy_with_logits",)),
    Spec("sampled_softmax_loss", _nce_like(gt.nn.sampled_softmax_loss),
         [((8, 3), (8,), (2, 3))], ops=("softmax_cross_entropy_with_logits",)),
]
