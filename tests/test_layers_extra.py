"""The Keras layers of gradtape/layers_extra.py: values against NumPy, gradients, errors."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

RNG = np.random.default_rng(31)
L = gt.layers


def _transpose_conv_reference(x, k, s, padding):
    """Scatter each input pixel through the kernel (Keras' kernel (kh, kw, filters, in))."""
    n, h, w, c = x.shape
    kh, kw, f, _ = k.shape
    full = np.zeros((n, (h - 1) * s + kh, (w - 1) * s + kw, f))
    for i in range(h):
        for j in range(w):
            full[:, i * s:i * s + kh, j * s:j * s + kw, :] += np.einsum(
                "nc,abfc->nabf", x[:, i, j, :], k)
    if padding == "valid":            # a kernel smaller than the stride still spans it
        return np.pad(full, [[0, 0], [0, max(s - kh, 0)], [0, max(s - kw, 0)], [0, 0]])
    oh, ow = h * s, w * s
    top = max((h - 1) * s + kh - oh, 0) // 2
    left = max((w - 1) * s + kw - ow, 0) // 2
    # (a kernel smaller than the stride leaves the last rows or columns empty)
    full = np.pad(full, [[0, 0], [0, max(oh - full.shape[1], 0)],
                         [0, max(ow - full.shape[2], 0)], [0, 0]])
    return full[:, top:top + oh, left:left + ow, :]


@pytest.mark.parametrize("strides,padding", [(1, "valid"), (2, "valid"), (2, "same"),
                                             (3, "same"), (1, "same"), (3, "valid")])
def test_conv2d_transpose_scatters_each_pixel_through_the_kernel(device, strides, padding):
    x = RNG.standard_normal((2, 3, 4, 3))
    layer = L.Conv2DTranspose(5, (3, 2), strides=strides, padding=padding, dtype="float64",
                              bias_initializer="random_normal")
    y = layer(gt.constant(x))
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    assert k.shape == (3, 2, 5, 3)                       # Keras' layout: (kh, kw, out, in)
    want = _transpose_conv_reference(x, k, strides, padding) + b
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-12)


def test_conv2d_transpose_gradients():
    layer = L.Conv2DTranspose(2, 3, strides=2, padding="same", dtype="float64")
    x = RNG.standard_normal((1, 3, 3, 2))
    layer(gt.constant(x))
    k0 = layer.kernel.numpy()

    def f(x, k):
        saved = layer.kernel
        layer.kernel = k
        try:
            return layer(x)
        finally:
            layer.kernel = saved
    check_grads(f, [x, k0], order=2)


def test_activation_layers(device):
    x = gt.constant(np.array([-2.0, -0.5, 0.0, 1.5], np.float32))
    np.testing.assert_allclose(L.LeakyReLU()(x).numpy(), [-0.6, -0.15, 0, 1.5], rtol=1e-6)
    np.testing.assert_allclose(L.LeakyReLU(negative_slope=0.1)(x).numpy(),
                               [-0.2, -0.05, 0, 1.5], rtol=1e-6)
    np.testing.assert_allclose(L.ELU(alpha=2.0)(x).numpy(),
                               [2 * np.expm1(-2.0), 2 * np.expm1(-0.5), 0, 1.5], rtol=1e-6)
    m = gt.constant(np.array([[1.0, 2.0], [3.0, 5.0]], np.float32))
    np.testing.assert_allclose(L.Softmax(axis=0)(m).numpy().sum(axis=0), [1, 1], rtol=1e-6)
    prelu = L.PReLU(alpha_initializer=gt.initializers.Constant(0.25), shared_axes=[1, 2])
    img = gt.constant(-np.ones((2, 3, 3, 4), np.float32))
    out = prelu(img)
    assert prelu.alpha.shape == (1, 1, 4)
    np.testing.assert_allclose(out.numpy(), -0.25)
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(prelu(img))
    np.testing.assert_allclose(tape.gradient(loss, prelu.alpha).numpy(), -18.0)


def test_resampling_padding_cropping(device):
    x = np.arange(2 * 2 * 3 * 1, dtype=np.float32).reshape(2, 2, 3, 1)
    up = L.UpSampling2D((2, 3))(gt.constant(x)).numpy()
    np.testing.assert_array_equal(up, x.repeat(2, axis=1).repeat(3, axis=2))
    smooth = L.UpSampling2D(interpolation="bilinear")(gt.constant(x))
    assert smooth.dtype == gt.float32 and smooth.shape == (2, 4, 6, 1)
    pad = L.ZeroPadding2D(((1, 0), (2, 1)))(gt.constant(x)).numpy()
    np.testing.assert_array_equal(pad, np.pad(x, [[0, 0], [1, 0], [2, 1], [0, 0]]))
    crop = L.Cropping2D(((0, 1), (1, 1)))(gt.constant(x)).numpy()
    np.testing.assert_array_equal(crop, x[:, :1, 1:2])
    with pytest.raises(ValueError, match="leaves nothing"):
        L.Cropping2D(2)(gt.constant(x))


def test_merge_layers(device):
    a = gt.constant(np.array([[1.0, -2.0]], np.float32))
    b = gt.constant(np.array([[3.0, 4.0]], np.float32))
    assert L.Add()([a, b]).numpy().tolist() == [[4, 2]]
    assert L.Subtract()([a, b]).numpy().tolist() == [[-2, -6]]
    assert L.Multiply()([a, b, b]).numpy().tolist() == [[9, -32]]
    assert L.Average()([a, b]).numpy().tolist() == [[2, 1]]
    assert L.Maximum()([a, b]).numpy().tolist() == [[3, 4]]
    assert L.Minimum()([a, b]).numpy().tolist() == [[1, -2]]
    assert L.Concatenate(axis=0)([a, b]).numpy().tolist() == [[1, -2], [3, 4]]
    with pytest.raises(ValueError, match="expects a list of at least 2 inputs"):
        L.Add()(a)
    with pytest.raises(ValueError, match="expects exactly 2 inputs"):
        L.Subtract()([a, b, b])


def test_utility_layers(device):
    v = gt.constant(np.array([[1.0, 2.0]], np.float32))
    assert L.RepeatVector(3)(v).numpy().tolist() == [[[1, 2]] * 3]
    seq = gt.constant(np.arange(6, dtype=np.float32).reshape(1, 2, 3))
    np.testing.assert_array_equal(L.Permute((2, 1))(seq).numpy(),
                                  np.arange(6).reshape(1, 2, 3).transpose(0, 2, 1))
    assert L.Rescaling(1 / 255, offset=-1)(gt.constant([[255.0]])).numpy().tolist() == [[0.0]]
    assert L.Lambda(lambda t, k: t * k, arguments={"k": 3.0})(v).numpy().tolist() == [[3, 6]]
    noise = L.GaussianNoise(0.5, seed=1)
    big = gt.zeros([200, 100])
    np.testing.assert_array_equal(noise(big).numpy(), 0)                  # inference
    drawn = noise(big, training=True).numpy()
    assert abs(drawn.std() - 0.5) < 0.02 and abs(drawn.mean()) < 0.02
    with pytest.raises(ValueError, match="permutation of 1..2"):
        L.Permute((0, 1))


def test_time_distributed_applies_the_layer_at_every_step(device):
    x = gt.constant(RNG.standard_normal((3, 4, 5)).astype(np.float32))
    dense = L.Dense(2)
    td = L.TimeDistributed(dense)
    y = td(x)
    assert y.shape == (3, 4, 2) and td.trainable_variables == dense.trainable_variables
    for t in range(4):
        np.testing.assert_allclose(y.numpy()[:, t], dense(x[:, t]).numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_merges_a_forward_and_a_reversed_backward_pass(mode):
    x = gt.constant(RNG.standard_normal((2, 5, 3)))
    bi = L.Bidirectional(L.GRU(4, return_sequences=True, dtype="float64"), merge_mode=mode)
    out = bi(x)
    fwd = bi.forward_layer(x).numpy()
    bwd = bi.backward_layer(x).numpy()[:, ::-1]          # back in time order
    assert bi.backward_layer.go_backwards and len(bi.trainable_variables) == 6
    want = {"concat": np.concatenate([fwd, bwd], -1), "sum": fwd + bwd, "mul": fwd * bwd,
            "ave": (fwd + bwd) / 2, None: None}[mode]
    if mode is None:
        np.testing.assert_allclose(out[0].numpy(), fwd)
        np.testing.assert_allclose(out[1].numpy(), bwd)
    else:
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    states = L.Bidirectional(L.LSTM(3, return_state=True))(gt.ones([2, 4, 2]))
    assert len(states) == 5 and states[0].shape == (2, 6)      # output, h, c forwards, h, c
    with pytest.raises(TypeError, match="expected a recurrent layer"):
        L.Bidirectional(L.Dense(3))


def _np_mha(layer, q, v, mask=None):
    w = {n: getattr(layer, n).numpy() for n in ("query_kernel", "query_bias", "key_kernel",
                                                 "key_bias", "value_kernel", "value_bias",
                                                 "output_kernel", "output_bias")}
    qp = np.einsum("btd,dhk->bthk", q, w["query_kernel"]) + w["query_bias"]
    kp = np.einsum("btd,dhk->bthk", v, w["key_kernel"]) + w["key_bias"]
    vp = np.einsum("btd,dhk->bthk", v, w["value_kernel"]) + w["value_bias"]
    s = np.einsum("bthk,bshk->bhts", qp / np.sqrt(layer.key_dim), kp)
    if mask is not None:
        s = np.where(mask[:, None], s, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ctx = np.einsum("bhts,bshv->bthv", p, vp)
    return np.einsum("bthv,hvo->bto", ctx, w["output_kernel"]) + w["output_bias"], p


def test_multi_head_attention_matches_the_equations(device):
    q = RNG.standard_normal((2, 4, 6))
    v = RNG.standard_normal((2, 5, 3))
    mha = L.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4, dtype="float64",
                               bias_initializer="random_normal")
    out, probs = mha(gt.constant(q), gt.constant(v), return_attention_scores=True)
    assert out.shape == (2, 4, 6) and probs.shape == (2, 3, 4, 5)
    assert mha.query_kernel.shape == (6, 3, 2) and mha.value_kernel.shape == (3, 3, 4)
    assert mha.output_kernel.shape == (3, 4, 6)
    want, p = _np_mha(mha, q, v)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(probs.numpy(), p, rtol=1e-10, atol=1e-12)
    mask = RNG.uniform(size=(2, 4, 5)) > 0.3
    mask[:, :, 0] = True
    got = mha(gt.constant(q), gt.constant(v), attention_mask=gt.constant(mask))
    np.testing.assert_allclose(got.numpy(), _np_mha(mha, q, v, mask)[0], rtol=1e-9)
    x = gt.constant(q)
    self_attn = L.MultiHeadAttention(2, 3, dtype="float64")
    _, causal = self_attn(x, x, use_causal_mask=True, return_attention_scores=True)
    assert np.allclose(np.triu(causal.numpy(), 1), 0.0)          # no look at the future
    with pytest.raises(ValueError, match=r"attention_mask of shape \(2, 3, 5\) does not fit"):
        mha(gt.constant(q), gt.constant(v), attention_mask=gt.ones([2, 3, 5]))
    with pytest.raises(TypeError, match="call it with the query and the value"):
        mha(gt.constant(q))


def test_multi_head_attention_gradients_and_training():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
    q = RNG.standard_normal((1, 3, 4))
    mha(gt.constant(q), gt.constant(q))
    kernels = [mha.query_kernel.numpy(), mha.output_kernel.numpy()]

    def f(x, qk, ok):
        saved = mha.query_kernel, mha.output_kernel
        mha.query_kernel, mha.output_kernel = qk, ok
        try:
            return mha(x, x, use_causal_mask=True)
        finally:
            mha.query_kernel, mha.output_kernel = saved
    check_grads(f, [q] + kernels, order=2)
    # a one-block model learns to output each sequence's mean at every position
    gt.random.set_seed(2)
    x = gt.constant(RNG.standard_normal((32, 6, 4)).astype(np.float32))
    target = gt.reduce_mean(x, axis=1, keepdims=True) * gt.ones([1, 6, 1])
    layer = L.MultiHeadAttention(num_heads=2, key_dim=4)
    opt = gt.optimizers.Adam(0.02)
    first = None
    for _ in range(120):
        with gt.GradientTape() as tape:
            loss = gt.reduce_mean(gt.square(layer(x, x) - target))
        first = first if first is not None else float(loss)
        opt.apply_gradients(zip(tape.gradient(loss, layer.trainable_variables),
                                layer.trainable_variables))
    assert float(loss) < 0.1 * first


def test_layers_work_on_their_inputs_device_from_any_scope():
    """Weights, zero states, masks and noise are made on the inputs' device, whichever
    device is current when the layer is called (as Dense does)."""
    with gt.device("strict:0"):
        seq = gt.ones([2, 3, 4])
        img = gt.ones([2, 4, 4, 3])
    for out in [L.LSTM(2)(seq), L.MultiHeadAttention(2, 2)(seq, seq),
                L.Bidirectional(L.GRU(2, dropout=0.5))(seq, training=True),
                L.GaussianNoise(0.1)(img, training=True), gt.image.random_flip_left_right(img),
                L.MultiHeadAttention(2, 2)(seq, seq, use_causal_mask=True)]:
        assert out.device == "strict:0"


def test_argument_checks():
    x = np.random.default_rng(0).standard_normal((1, 4, 5, 2)).astype(np.float32)
    for cls in (L.UpSampling2D, L.ZeroPadding2D, L.Cropping2D):
        last = cls()(x).numpy()              # channels_first: the same, axes moved
        first = cls(data_format="channels_first")(np.moveaxis(x, -1, 1)).numpy()
        np.testing.assert_array_equal(np.moveaxis(first, 1, -1), last)
    assert L.MultiHeadAttention(2, 3, output_shape=(2, 3))(
        gt.ones([1, 2, 4]), gt.ones([1, 2, 4])).shape == (1, 2, 2, 3)
    assert L.MultiHeadAttention(2, 3, output_shape=(5,))(gt.ones([1, 2, 4]),
                                                        gt.ones([1, 2, 4])).shape == (1, 2, 5)
    mha = L.MultiHeadAttention(2, 3)
    with pytest.raises(ValueError, match=r"batch sizes differ: \[1, 2\]"):
        mha(gt.ones([1, 2, 4]), gt.ones([2, 2, 4]))
    with pytest.raises(ValueError, match="weights= is not supported"):
        L.Bidirectional(L.GRU(2), weights=[np.zeros(1)])
    prelu = L.PReLU()
    prelu(gt.ones([2, 3, 4]))
    with pytest.raises(ValueError, match="PReLU layer"):
        prelu(gt.ones([2, 3, 5]))
    drop = L.MultiHeadAttention(2, 2, dropout=0.5, seed=4)
    x = gt.ones([1, 3, 2])
    a = drop(x, x, training=True, return_attention_scores=False).numpy()
    drop2 = L.MultiHeadAttention(2, 2, dropout=0.5, seed=4)
    drop2(x, x)
    for v, w in zip(drop2.trainable_variables, drop.trainable_variables):
        v.assign(w)
    np.testing.assert_array_equal(drop2(x, x, training=True).numpy(), a)   # seeded dropout
