"""Specs for the fused kernel-backed primitives (gradtape.ops.fused).

Each spec's second-order check differentiates the primitive's backward (``*_grad``, the
backward kernel on a GPU), so every backward primitive is covered here too.
"""
from __future__ import annotations

import numpy as np

import gradtape as gt
from gradtape.ops import fused
from . import Spec, away_from_zero, normal


def _relu_safe(rng, shape):
    """Inputs away from relu's kink (after the bias from ``_small`` is added)."""
    return away_from_zero(rng, shape) * 2.0


def _small(rng, shape):
    return rng.uniform(-0.1, 0.1, shape)


def _labels(rng, shape):
    return rng.integers(0, 4, shape).astype(np.float64)


def _distribution(rng, shape):
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


def _gamma(rng, shape):
    return rng.uniform(0.5, 1.5, shape)


def _int_labels(labels):
    if isinstance(labels, gt.Tensor):
        return gt.cast(labels, gt.int32)
    return np.asarray(labels).astype(np.int32)


def _bias_act(activation):
    return lambda x, b: fused.fused_bias_act(x, b, activation)


_COVERS_BIAS_ACT = ("fused_bias_act", "fused_bias_act_grad")
# linear, relu, tanh and sigmoid save their output and differentiate through it
_COVERS_BIAS_ACT_OUT = ("fused_bias_act_out", "fused_act_grad_out")


def _covers(act):
    return _COVERS_BIAS_ACT_OUT if act in ("linear", "relu", "tanh", "sigmoid") \
        else _COVERS_BIAS_ACT


SPECS = [
    Spec(f"fused_bias_act_{act}", _bias_act(act), [((3, 4), (4,)), ((2, 3, 5), (5,))],
         ops=_covers(act),
         domains=((_relu_safe, _small) if act == "relu" else (normal, normal)))
    for act in fused.ACTIVATIONS
] + [
    Spec("fused_bias_act_no_bias", lambda x: fused.fused_bias_act(x, None, "silu"),
         [((3, 4),), ((5,),)], ops=_COVERS_BIAS_ACT),
    Spec("fused_bias_act_no_bias_tanh", lambda x: fused.fused_bias_act(x, None, "tanh"),
         [((3, 4),), ((5,),)], ops=_COVERS_BIAS_ACT_OUT),
    Spec("fused_bias_act_no_bias_sigmoid", lambda x: fused.fused_bias_act(x, None, "sigmoid"),
         [((3, 4),), ((), )], ops=_COVERS_BIAS_ACT_OUT),
    Spec("fused_log_softmax", fused.fused_log_softmax, [((3, 4),), ((5,),), ((2, 3, 4),)],
         ops=("fused_log_softmax",)),
    Spec("fused_sparse_softmax_cross_entropy",
         lambda labels, logits: fused.fused_sparse_softmax_cross_entropy(_int_labels(labels),
                                                                         logits),
         [((3,), (3, 4)), ((2, 3), (2, 3, 4))],
         ops=("fused_sparse_softmax_cross_entropy", "fused_sparse_softmax_cross_entropy_grad"),
         domains=(_labels, normal), wrt=(1,)),
    Spec("fused_softmax_cross_entropy", fused.fused_softmax_cross_entropy,
         [((3, 4), (3, 4)), ((2, 3, 4), (2, 3, 4))],
         ops=("fused_softmax_cross_entropy", "fused_softmax_cross_entropy_grad"),
         domains=(_distribution, normal)),
    Spec("fused_layer_norm", lambda x, g, b: fused.fused_layer_norm(x, g, b, 1e-3),
         [((3, 4), (4,), (4,)), ((2, 3, 5), (5,), (5,))],
         ops=("fused_layer_norm", "fused_layer_norm_grad"),
         domains=(normal, _gamma, normal), rtol=1e-4, atol=1e-5),
]
