"""Depthwise and separable convolutions, 1-D pooling, spatial and Gaussian dropout,
Normalization (adapt), Identity, Dot and Attention: values against NumPy references and
gradients against float64 finite differences."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

L = gt.keras.layers


def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _depthwise_reference(x, w, stride=(1, 1), pads=((0, 0), (0, 0)), dil=(1, 1)):
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, c, m))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    v = xp[:, i * stride[0] + a * dil[0], j * stride[1] + b * dil[1], :]
                    out[:, i, j] += v[:, :, None] * w[a, b]
    return out.reshape(n, oh, ow, c * m)


def test_depthwise_conv2d_matches_a_direct_loop_and_its_gradients():
    x, w = _rand(2, 7, 6, 3), _rand(3, 2, 3, 2, seed=1)
    got = gt.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID").numpy()
    np.testing.assert_allclose(got, _depthwise_reference(x, w), rtol=1e-12)
    # SAME with stride 2: TF pads (total // 2, rest) -> rows (0, 1)... from the formula
    got = gt.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME").numpy()
    oh, ow = 4, 3
    th, tw = max((oh - 1) * 2 + 3 - 7, 0), max((ow - 1) * 2 + 2 - 6, 0)
    ref = _depthwise_reference(x, w, (2, 2), ((th // 2, th - th // 2), (tw // 2, tw - tw // 2)))
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    got = gt.nn.depthwise_conv2d(x, w, 1, "VALID", dilations=[2, 2]).numpy()
    np.testing.assert_allclose(got, _depthwise_reference(x, w, dil=(2, 2)), rtol=1e-12)
    nchw = gt.nn.depthwise_conv2d(np.transpose(x, (0, 3, 1, 2)), w, 1, "VALID",
                                  data_format="NCHW").numpy()
    np.testing.assert_allclose(nchw, np.transpose(_depthwise_reference(x, w), (0, 3, 1, 2)),
                               rtol=1e-12)
    check_grads(lambda a, b: gt.nn.depthwise_conv2d(a, b, [1, 2, 2, 1], "SAME"),
                [x[:1, :5, :4], w])
    with pytest.raises(ValueError, match="3 channels but filters of shape"):
        gt.nn.depthwise_conv2d(x, _rand(3, 3, 4, 1), 1, "VALID")
    with pytest.raises(ValueError, match="does not fit"):
        gt.nn.depthwise_conv2d(x[:, :2], w, 1, "VALID")


def test_separable_conv2d_is_depthwise_then_pointwise():
    x, dw, pw = _rand(2, 6, 6, 3), _rand(3, 3, 3, 2, seed=1), _rand(1, 1, 6, 4, seed=2)
    got = gt.nn.separable_conv2d(x, dw, pw, 1, "VALID").numpy()
    np.testing.assert_allclose(got, _depthwise_reference(x, dw) @ pw[0, 0], rtol=1e-10)
    check_grads(lambda a, b, c: gt.nn.separable_conv2d(a, b, c, 1, "SAME"),
                [x[:1, :4, :4], dw, pw], order=1)
    layer = L.SeparableConv2D(5, 3, padding="same", depth_multiplier=2, activation="relu",
                              dtype="float64")
    y = layer(x)
    assert y.shape == (2, 6, 6, 5)
    assert layer.depthwise_kernel.shape == (3, 3, 3, 2)
    assert layer.pointwise_kernel.shape == (1, 1, 6, 5) and layer.bias.shape == (5,)
    want = np.maximum(gt.nn.separable_conv2d(x, layer.depthwise_kernel, layer.pointwise_kernel,
                                             1, "SAME").numpy() + layer.bias.numpy(), 0)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)
    dwl = L.DepthwiseConv2D((2, 3), strides=2, depth_multiplier=3, dtype="float64",
                            depthwise_regularizer="l2")
    z = dwl(x)
    assert z.shape == (2, 3, 2, 9) and len(dwl.losses) == 1
    np.testing.assert_allclose(z.numpy(), _depthwise_reference(
        x, dwl.depthwise_kernel.numpy(), (2, 2)), rtol=1e-12)


def test_one_dimensional_pooling_layers():
    s = _rand(2, 9, 3)
    got = L.MaxPooling1D(pool_size=3, strides=2, dtype="float64")(s).numpy()
    want = np.stack([s[:, i:i + 3].max(1) for i in range(0, 7, 2)], 1)
    np.testing.assert_array_equal(got, want)
    got = L.AveragePooling1D(2, dtype="float64")(s).numpy()
    np.testing.assert_allclose(got, (s[:, 0:8:2] + s[:, 1:8:2]) / 2, rtol=1e-12)
    same = L.AveragePooling1D(2, 1, padding="same", dtype="float64")(s).numpy()
    assert same.shape == (2, 9, 3)
    np.testing.assert_allclose(same[:, -1], s[:, -1], rtol=1e-12)   # only inside elements
    np.testing.assert_allclose(L.GlobalAveragePooling1D(dtype="float64")(s).numpy(),
                               s.mean(1), rtol=1e-12)
    np.testing.assert_array_equal(L.GlobalMaxPooling1D(keepdims=True, dtype="float64")(
        s).numpy(), s.max(1, keepdims=True))
    check_grads(lambda a: gt.nn.max_pool1d(a, 3, 2, "SAME"), [s[:1]])
    check_grads(lambda a: gt.nn.avg_pool1d(a, 2, 1, "VALID"), [s[:1]])
    with pytest.raises(ValueError, match="shorter than the pool"):
        L.MaxPooling1D(10)(s)
    with pytest.raises(ValueError, match="expected input"):
        L.MaxPooling1D()(np.ones((2, 4, 4, 1)))


def test_spatial_and_gaussian_dropout():
    x = np.ones((64, 5, 8), np.float32)
    y = L.SpatialDropout1D(0.5, seed=3)(x, training=True).numpy()
    per_channel = y[:, 0, :]
    assert np.all(y == per_channel[:, None, :])                 # whole channels
    assert set(np.unique(y)) == {0.0, 2.0}
    assert 0.35 < (per_channel == 0).mean() < 0.65
    np.testing.assert_array_equal(L.SpatialDropout2D(0.5)(np.ones((2, 3, 3, 4))).numpy(), 1.0)
    img = L.SpatialDropout2D(0.5, seed=1)(np.ones((8, 3, 3, 4)), training=True).numpy()
    assert np.all(img == img[:, :1, :1, :])
    big = np.ones((200, 500), np.float32)
    g = L.GaussianDropout(0.2, seed=4)(big, training=True).numpy()
    assert abs(g.mean() - 1.0) < 0.01 and abs(g.std() - (0.2 / 0.8) ** 0.5) < 0.01
    np.testing.assert_array_equal(L.GaussianDropout(0.2)(big).numpy(), big)
    with pytest.raises(ValueError, match="rate"):
        L.GaussianDropout(1.0)


def test_normalization_adapts_its_statistics():
    data = _rand(100, 4, seed=5) * np.array([1.0, 2.0, 3.0, 4.0]) + np.array([0, 1, -1, 5])
    norm = L.Normalization()
    norm.adapt(data)
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.variance.numpy(), data.var(0), rtol=1e-5)
    out = norm(data).numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(out.std(0), 1, rtol=1e-4)
    assert norm.trainable_variables == [] and len(norm.non_trainable_variables) == 2
    batched = L.Normalization()
    batched.adapt(data, batch_size=7)                           # merged batch statistics
    np.testing.assert_allclose(batched.variance.numpy(), data.var(0), rtol=1e-5)
    ds = L.Normalization()
    ds.adapt(gt.data.Dataset.from_tensor_slices(data).batch(16))
    np.testing.assert_allclose(ds.mean.numpy(), data.mean(0), rtol=1e-5)
    scalar = L.Normalization(axis=None)
    scalar.adapt(data)
    np.testing.assert_allclose(scalar.mean.numpy(), data.mean(), rtol=1e-5)
    inverse = L.Normalization(mean=data.mean(0), variance=data.var(0), invert=True)
    np.testing.assert_allclose(inverse(out).numpy(), data, rtol=1e-4, atol=1e-4)
    img = _rand(6, 3, 3, 2, seed=6)
    per_channel = L.Normalization(axis=-1)
    per_channel.adapt(img)
    assert per_channel.mean.shape == (1, 1, 2)
    np.testing.assert_allclose(per_channel.mean.numpy()[0, 0], img.mean((0, 1, 2)), rtol=1e-5)
    with pytest.raises(ValueError, match="both mean and variance"):
        L.Normalization(mean=0.0)
    with pytest.raises(ValueError, match="empty"):
        L.Normalization().adapt(gt.data.Dataset.from_tensor_slices(data).take(0).batch(4))


def test_identity_and_dot():
    a, b = _rand(4, 5), _rand(4, 5, seed=1)
    assert L.Identity()(a) is not None and np.array_equal(L.Identity()(a).numpy(), a)
    np.testing.assert_allclose(L.Dot(1, dtype="float64")([a, b]).numpy(),
                               (a * b).sum(1, keepdims=True), rtol=1e-12)
    cos = L.Dot(axes=1, normalize=True)([a, b]).numpy()
    want = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(cos[:, 0], want, rtol=1e-10)
    x, y = _rand(4, 3, 5), _rand(4, 6, 5, seed=2)
    np.testing.assert_allclose(L.Dot((2, 2))([x, y]).numpy(), np.einsum("bik,bjk->bij", x, y),
                               rtol=1e-10)
    z = _rand(4, 3, 6, seed=3)
    np.testing.assert_allclose(L.Dot((1, 1))([x, z]).numpy(), np.einsum("bki,bkj->bij", x, z),
                               rtol=1e-10)
    np.testing.assert_allclose(L.Dot((1, 2))([a, y]).numpy(), np.einsum("bk,bjk->bj", a, y),
                               rtol=1e-10)
    with pytest.raises(ValueError, match="differ in size"):
        L.Dot(1)([a, _rand(4, 6)])
    with pytest.raises(ValueError, match="batch axis"):
        L.Dot(0)([a, b])


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_attention_matches_its_formula():
    q, v, k = _rand(2, 3, 4), _rand(2, 5, 4, seed=1), _rand(2, 5, 4, seed=2)
    layer = L.Attention(dtype="float64")
    out, w = layer([q, v, k], return_attention_scores=True)
    want_w = _softmax(q @ k.transpose(0, 2, 1))
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(out.numpy(), want_w @ v, rtol=1e-10)
    vmask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    qmask = np.array([[1, 1, 0], [1, 0, 1]], bool)
    out = L.Attention(dtype="float64")([q, v], mask=[qmask, vmask]).numpy()
    s = q @ v.transpose(0, 2, 1) - 1e9 * (1 - vmask[:, None, :])
    np.testing.assert_allclose(out, (_softmax(s) @ v) * qmask[..., None], rtol=1e-9,
                               atol=1e-12)
    causal = L.Attention(dtype="float64")([v, v], use_causal_mask=True).numpy()
    s = v @ v.transpose(0, 2, 1) - 1e9 * (1 - np.tril(np.ones((5, 5))))
    np.testing.assert_allclose(causal, _softmax(s) @ v, rtol=1e-9)
    concat = L.Attention(score_mode="concat", use_scale=True, dtype="float64")
    out = concat([q, v]).numpy()
    s = np.tanh(q[:, :, None] + v[:, None]).sum(-1)          # scale and weight start at 1
    np.testing.assert_allclose(out, _softmax(s) @ v, rtol=1e-10)
    assert len(concat.trainable_variables) == 2
    check_grads(lambda a, b: L.Attention(dtype="float64")([a, b]), [q, v], order=1)
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="additive")


def test_a_text_cnn_of_the_new_layers_trains_with_fit():
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 20, (96, 12))
    labels = (tokens == 7).any(1).astype(np.int64)          # does the sequence hold token 7?
    gt.random.set_seed(0)
    inp = gt.keras.Input(shape=(12,), dtype="int32")
    h = L.Embedding(20, 8)(inp)
    h = L.Conv1D(16, 3, padding="same", activation="relu")(h)
    h = L.SpatialDropout1D(0.1)(h)
    h = L.GlobalMaxPooling1D()(h)
    model = gt.keras.Model(inp, L.Dense(2)(h))
    model.compile(gt.keras.optimizers.Adam(0.02),
                  gt.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    hist = model.fit(tokens, labels, batch_size=16, epochs=15, verbose=0)
    assert hist.history["accuracy"][-1] > 0.9


def test_recurrent_layers_take_weight_regularizers():
    lstm = L.LSTM(3, kernel_regularizer=gt.keras.regularizers.L2(0.5),
                  recurrent_regularizer="l1", dtype="float64")
    lstm(_rand(2, 4, 5))
    k, r = lstm.cell.kernel.numpy(), lstm.cell.recurrent_kernel.numpy()
    np.testing.assert_allclose([t.numpy() for t in lstm.losses],
                               [0.5 * (k ** 2).sum(), 0.01 * np.abs(r).sum()], rtol=1e-10)
    gru = L.GRU(3, activity_regularizer="l2", dtype="float64")
    out = gru(_rand(2, 4, 5)).numpy()
    np.testing.assert_allclose(gru.losses[0].numpy(), 0.01 * (out ** 2).sum() / 2, rtol=1e-10)
    with pytest.raises(TypeError, match="cell_regularizer"):
        L.GRU(3, cell_regularizer="l2")


def test_review_fixes_adapt_batches_concat_scale_and_pool_arguments():
    x = np.arange(40.0).reshape(20, 2)
    norm = L.Normalization(axis=None)
    norm.adapt(x, batch_size=5)
    np.testing.assert_allclose([float(norm.mean.numpy().ravel()[0]),
                                float(norm.variance.numpy().ravel()[0])], [19.5, 133.25],
                               rtol=1e-6)
    q, v = _rand(1, 2, 3), _rand(1, 4, 3, seed=1)
    att = L.Attention(score_mode="concat", use_scale=True, dtype="float64")
    att([q, v])
    att.scale.assign(2.0)
    s = np.tanh(2.0 * (q[:, :, None] + v[:, None])).sum(-1)
    np.testing.assert_allclose(att([q, v]).numpy(), _softmax(s) @ v, rtol=1e-10)
    seq = _rand(2, 6, 3)
    np.testing.assert_array_equal(gt.nn.max_pool1d(seq, [1, 2, 1], [1, 2, 1], "VALID").numpy(),
                                  gt.nn.max_pool1d(seq, 2, 2, "VALID").numpy())
    img, w = _rand(1, 3, 6, 6), _rand(3, 3, 3, 1, seed=2)
    nchw = gt.nn.depthwise_conv2d(img, w, [1, 1, 2, 2], "VALID", data_format="NCHW").numpy()
    nhwc = gt.nn.depthwise_conv2d(np.transpose(img, (0, 2, 3, 1)), w, 2, "VALID").numpy()
    np.testing.assert_allclose(nchw, np.transpose(nhwc, (0, 3, 1, 2)), rtol=1e-12)


@pytest.mark.parametrize("padding,op,k", [("valid", 1, 3), ("same", 1, 3), ("valid", (0, 1), 2),
                                          ("same", 0, 3)])
def test_conv2d_transpose_output_padding_is_the_adjoint_of_conv2d(padding, op, k):
    x = _rand(2, 4, 5, 3)
    layer = L.Conv2DTranspose(2, k, strides=2, padding=padding, output_padding=op,
                              use_bias=False, dtype="float64")
    y = layer(x)
    ops = (op, op) if isinstance(op, int) else op
    pad = k // 2 if padding == "same" else 0
    assert y.shape == (2, 3 * 2 + k - 2 * pad + ops[0], 4 * 2 + k - 2 * pad + ops[1], 2)
    z = gt.zeros(tuple(y.shape), dtype="float64")
    with gt.GradientTape() as tape:
        tape.watch(z)
        f = gt.nn.conv2d(z, layer.kernel, 2, padding.upper())
        total = gt.reduce_sum(f * x)
    np.testing.assert_allclose(y.numpy(), tape.gradient(total, z).numpy(), rtol=1e-10)
    again = type(layer).from_config(layer.get_config())
    assert again.output_padding == layer.output_padding
    with pytest.raises(ValueError, match="smaller than the strides"):
        L.Conv2DTranspose(2, 3, strides=2, output_padding=2)


def test_group_and_unit_normalization():
    x = _rand(2, 3, 5, 6)
    layer = L.GroupNormalization(groups=3, epsilon=1e-5, dtype="float64")
    y = layer(x).numpy()
    g = x.reshape(2, 3, 5, 3, 2)
    want = (g - g.mean((1, 2, 4), keepdims=True)) / np.sqrt(g.var((1, 2, 4), keepdims=True)
                                                            + 1e-5)
    np.testing.assert_allclose(y, want.reshape(x.shape), rtol=1e-10)
    check_grads(lambda a: L.GroupNormalization(2, dtype="float64")(a), [x[:1, :2, :2, :4]],
                order=1)
    with pytest.raises(ValueError, match="do not split into 4 groups"):
        L.GroupNormalization(4)(x)
    u = L.UnitNormalization(dtype="float64")(x).numpy()
    np.testing.assert_allclose(np.linalg.norm(u, axis=-1), 1.0, rtol=1e-10)
    again = L.GroupNormalization.from_config(layer.get_config())
    assert again.groups == 3 and again.epsilon == 1e-5


def test_image_preprocessing_layers():
    x = _rand(2, 6, 8, 3)
    np.testing.assert_allclose(L.Resizing(3, 4, dtype="float64")(x).numpy(),
                               gt.image.resize(x, [3, 4]).numpy(), rtol=1e-12)
    cropped = L.Resizing(4, 4, crop_to_aspect_ratio=True, dtype="float64")(x).numpy()
    np.testing.assert_allclose(cropped, gt.image.resize(x[:, :, 1:7], [4, 4]).numpy(),
                               rtol=1e-12)
    np.testing.assert_array_equal(L.CenterCrop(4, 4, dtype="float64")(x).numpy(),
                                  x[:, 1:5, 2:6])
    flip = L.RandomFlip("horizontal", seed=3, dtype="float64")
    np.testing.assert_array_equal(flip(x, training=False).numpy(), x)   # inference: identity
    assert not np.array_equal(flip(x).numpy(), x)        # a direct call augments, as Keras
    out = flip(np.concatenate([x] * 8), training=True).numpy()
    flipped = [np.array_equal(o, x[i % 2][:, ::-1]) for i, o in enumerate(out)]
    kept = [np.array_equal(o, x[i % 2]) for i, o in enumerate(out)]
    assert all(a or b for a, b in zip(flipped, kept)) and any(flipped) and any(kept)
    crop = L.RandomCrop(3, 5, seed=1, dtype="float64")
    np.testing.assert_array_equal(crop(x, training=False).numpy(), x[:, 1:4, 1:6])   # centred
    a = crop(x, training=True).numpy()
    assert a.shape == (2, 3, 5, 3)
    assert any(np.array_equal(a, x[:, t:t + 3, l:l + 5]) for t in range(4) for l in range(4))
    with pytest.raises(ValueError, match="smaller than the crop"):
        L.RandomCrop(9, 9)(x, training=True)
    with pytest.raises(ValueError, match="mode"):
        L.RandomFlip("diagonal")
