"""``gt.nn``: neural-network ops with TensorFlow's ``tf.nn`` names and arguments.

    import gradtape as gt
    h = gt.nn.relu(gt.nn.bias_add(x @ w, b))
    loss = gt.reduce_mean(gt.nn.sparse_softmax_cross_entropy_with_logits(labels, h))

Every op has a gradient rule that is itself differentiable (nested tapes give second
derivatives). Images are NHWC (volumes NDHWC) and filters HWIO (DHWIO), as in TensorFlow.
"""
from __future__ import annotations

from .ops.math import sigmoid, tanh, softplus, log_sigmoid
from .ops.nn import (relu, relu6, leaky_relu, elu, selu, gelu, silu, swish, softsign, softmax,
                     log_softmax, sigmoid_cross_entropy_with_logits,
                     softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits,
                     l2_loss, bias_add)
from .ops.nn import (depthwise_conv2d, separable_conv2d, max_pool1d, avg_pool1d)
from .ops.nn import (conv1d, conv2d, conv2d_transpose, max_pool2d, avg_pool2d, max_pool, avg_pool,
                     moments, batch_normalization, l2_normalize, dropout, embedding_lookup)
from .ops.nn import (in_top_k, weighted_cross_entropy_with_logits, log_poisson_loss, crelu,
                     weighted_moments, normalize_moments, depth_to_space, space_to_depth,
                     local_response_normalization, lrn, atrous_conv2d, conv1d_transpose,
                     conv3d, conv3d_transpose, max_pool3d, avg_pool3d, convolution, pool,
                     conv_transpose, sufficient_statistics, zero_fraction)
from .distribute import compute_average_loss, scale_regularization_loss

from .ops.sorting import top_k
from .misc_extra import approx_max_k, approx_min_k

__all__ = [
    "pool", "conv_transpose", "sufficient_statistics", "scale_regularization_loss",
    "zero_fraction", "top_k", "conv1d", "depthwise_conv2d", "separable_conv2d", "max_pool1d", "avg_pool1d",
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softsign",
    "sigmoid", "tanh", "softplus", "log_sigmoid", "softmax", "log_softmax",
    "sigmoid_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "l2_loss", "bias_add", "moments",
    "batch_normalization", "l2_normalize", "dropout", "conv2d", "conv2d_transpose",
    "max_pool2d", "avg_pool2d", "max_pool", "avg_pool", "embedding_lookup",
    "compute_average_loss", "in_top_k", "weighted_cross_entropy_with_logits",
    "log_poisson_loss", "crelu", "weighted_moments", "normalize_moments", "depth_to_space",
    "space_to_depth", "local_response_normalization", "lrn", "atrous_conv2d",
    "conv1d_transpose", "conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d",
    "convolution",
]

from .sparse import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: E402
__all__ += ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]
__all__ += ["approx_max_k", "approx_min_k"]

from .ctc import (ctc_loss, ctc_greedy_decoder, ctc_beam_search_decoder,  # noqa: E402
                  collapse_repeated, ctc_unique_labels)
__all__ += ["ctc_loss", "ctc_greedy_decoder", "ctc_beam_search_decoder", "collapse_repeated",
            "ctc_unique_labels"]

from . import nn_extra as _nn_extra  # noqa: E402
from .nn_extra import (fixed_unigram_candidate_sampler,  # noqa: E402
                       learned_unigram_candidate_sampler, all_candidate_sampler,
                       compute_accidental_hits, nce_loss, sampled_softmax_loss,
                       max_pool_with_argmax, dilation2d, erosion2d, fractional_max_pool,
                       fractional_avg_pool, isotonic_regression, depthwise_conv2d_backprop_input,
                       depthwise_conv2d_backprop_filter, atrous_conv2d_transpose,
                       batch_norm_with_global_normalization, with_space_to_batch, space_to_batch)
__all__ += ["fixed_unigram_candidate_sampler", "learned_unigram_candidate_sampler",
            "all_candidate_sampler", "compute_accidental_hits", "nce_loss",
            "sampled_softmax_loss", "max_pool_with_argmax", "dilation2d", "erosion2d",
            "fractional_max_pool", "fractional_avg_pool", "isotonic_regression",
            "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
            "atrous_conv2d_transpose", "batch_norm_with_global_normalization",
            "with_space_to_batch", "space_to_batch"]


def __getattr__(name):
    # the RNN cell wrappers (RNNCellDropoutWrapper, RNNCellResidualWrapper,
    # RNNCellDeviceWrapper) subclass the Keras layers: made when first asked for
    if name in _nn_extra._WRAPPERS:
        return getattr(_nn_extra, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
