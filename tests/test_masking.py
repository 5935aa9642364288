"""Keras masks: Embedding(mask_zero=True) and Masking make them, recurrent layers, pooling,
attention and fit's loss and metrics use them, pass-through layers carry them."""
import gc

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers

TOKENS = np.array([[3, 4, 5, 0, 0], [1, 2, 0, 0, 0], [6, 7, 8, 9, 1]])
LENGTHS = [3, 2, 5]


def _embed(seed=0):
    emb = L.Embedding(10, 4, mask_zero=True,
                      embeddings_initializer=keras.initializers.RandomNormal(seed=seed))
    return emb, emb(TOKENS)


def test_embedding_makes_a_mask_and_pass_through_layers_carry_it():
    emb, e = _embed()
    np.testing.assert_array_equal(e._keras_mask.numpy(), TOKENS != 0)
    d = L.Dropout(0.5)(L.Dense(3)(e))
    np.testing.assert_array_equal(d._keras_mask.numpy(), TOKENS != 0)
    assert L.Flatten()(e)._keras_mask is None             # a layer that drops it
    assert L.Embedding(10, 4)(TOKENS)._keras_mask is None


def _assert_trimmed(layer, e, got):
    """Each row of ``got`` (``layer`` on the masked batch) equals ``layer`` run on that
    sequence cut to its length."""
    for i, n in enumerate(LENGTHS):
        want = layer(e[i:i + 1, :n]).numpy()[0]
        np.testing.assert_allclose(got[i][:len(want)] if got.ndim == 3 else got[i], want,
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("layer", ["lstm", "gru", "simple", "backwards"])
def test_recurrent_layers_skip_masked_steps(layer):
    make = {"lstm": lambda: L.LSTM(3), "gru": lambda: L.GRU(3),
            "simple": lambda: L.SimpleRNN(3), "backwards": lambda: L.LSTM(3, go_backwards=True)}
    _, e = _embed()
    rnn = make[layer]()
    _assert_trimmed(rnn, e, rnn(e).numpy())


def test_sequences_repeat_the_last_output_and_keep_the_mask():
    _, e = _embed()
    lstm = L.LSTM(3, return_sequences=True)
    seq = lstm(e)
    np.testing.assert_array_equal(seq._keras_mask.numpy(), TOKENS != 0)
    out = seq.numpy()
    _assert_trimmed(lstm, e, out)
    for i, n in enumerate(LENGTHS):
        for t in range(n, 5):
            np.testing.assert_array_equal(out[i, t], out[i, n - 1])
    both = L.Bidirectional(L.LSTM(2))
    _assert_trimmed(both, e, both(e).numpy())


def test_pooling_and_masking_layer():
    _, e = _embed()
    x = e.numpy()
    keep = (TOKENS != 0)[..., None]
    avg = L.GlobalAveragePooling1D()(e).numpy()
    np.testing.assert_allclose(avg, (x * keep).sum(1) / keep.sum(1), rtol=1e-6)
    mx = L.GlobalMaxPooling1D()(e).numpy()
    np.testing.assert_allclose(mx, np.where(keep, x, -np.inf).max(1), rtol=1e-6)
    raw = np.ones((2, 4, 3), np.float32)
    raw[0, 2:] = -1.0
    masked = L.Masking(mask_value=-1.0)(raw)
    np.testing.assert_array_equal(masked._keras_mask.numpy(), [[1, 1, 0, 0], [1, 1, 1, 1]])
    np.testing.assert_array_equal(masked.numpy()[0, 2:], 0.0)
    att = L.Attention()
    q = L.Dense(4)(e)
    out = att([q, e])
    np.testing.assert_array_equal(out._keras_mask.numpy(), TOKENS != 0)


def test_masked_gradients_do_not_reach_the_padding():
    emb, e0 = _embed()
    lstm = L.LSTM(3)
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(lstm(emb(TOKENS)))
    g = tape.gradient(loss, emb.embeddings)
    g = g.numpy() if not hasattr(g, "values") else gt.convert_to_tensor(g).numpy()
    np.testing.assert_array_equal(g[0], 0.0)             # id 0 is only ever padding
    assert np.abs(g[3]).sum() > 0


def test_fit_weighs_the_loss_by_the_mask():
    gt.random.set_seed(1)
    inp = keras.Input(shape=(5,), dtype="int32")
    h = L.Embedding(10, 4, mask_zero=True)(inp)
    h = L.LSTM(3, return_sequences=True)(h)
    model = keras.Model(inp, L.Dense(2)(h))
    labels = (TOKENS % 2).astype(np.int64)
    model.compile(keras.optimizers.SGD(0.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    logs = model.evaluate(TOKENS, labels, verbose=0, return_dict=True)
    logits = model(TOKENS).numpy()
    shifted = logits - logits.max(-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    per = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    keep = TOKENS != 0
    # tf.keras 2.13+ / Keras 3: the mean runs over the unmasked entries
    assert logs["loss"] == pytest.approx((per * keep).sum() / keep.sum(), rel=1e-5)
    # a per-sample weight is spread over the time steps (batch 3, 5 steps)
    sw = np.array([1.0, 0.0, 2.0], np.float32)
    logs = model.evaluate(TOKENS, labels, sample_weight=sw, verbose=0, return_dict=True)
    w = sw[:, None] * keep * (keep.size / keep.sum())
    assert logs["loss"] == pytest.approx((per * w).sum() / per.size, rel=1e-5)
    hit = logits.argmax(-1) == labels
    assert logs["accuracy"] == pytest.approx((hit * keep).sum() / keep.sum(), rel=1e-6)


def test_masks_go_with_their_tensors():
    from gradtape import layers as layers_mod
    before = len(layers_mod._MASKS)
    _, e = _embed()
    assert len(layers_mod._MASKS) == before + 1
    del e
    gc.collect()
    assert len(layers_mod._MASKS) == before


def test_multi_head_attention_uses_the_query_and_value_masks():
    _, e = _embed()
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, seed=0)
    out, scores = mha(e, e, return_attention_scores=True)
    keep = TOKENS != 0
    s = scores.numpy()
    # padded keys get no weight; padded queries attend as Keras' and-ed mask makes them
    for i, n in enumerate(LENGTHS):
        np.testing.assert_allclose(s[i, :, :n, n:], 0.0, atol=1e-7)
        np.testing.assert_allclose(s[i, :, :n, :n].sum(-1), 1.0, rtol=1e-5)
    bare = e + 0.0                                       # the same values, no mask
    assert bare._keras_mask is None
    explicit = mha(bare, bare, attention_mask=keep[:, :, None] & keep[:, None, :])
    np.testing.assert_allclose(out.numpy()[keep], explicit.numpy()[keep], rtol=1e-6)
    np.testing.assert_array_equal(out._keras_mask.numpy(), keep)


def test_merge_layers_combine_masks():
    _, e = _embed()
    other = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 0, 1, 1, 1]])
    _, f = _embed(seed=1)
    gt.layers.set_mask(f, gt.constant(other != 0))
    keep = (TOKENS != 0) | (other != 0)                   # Keras 3: any input unmasked
    np.testing.assert_array_equal(L.Add()([e, f])._keras_mask.numpy(), keep)
    np.testing.assert_array_equal(L.Concatenate()([e, f])._keras_mask.numpy(), keep)
    time_cat = L.Concatenate(axis=1)([e, f])
    np.testing.assert_array_equal(time_cat._keras_mask.numpy(),
                                  np.concatenate([TOKENS != 0, other != 0], 1))
    g = gt.cast(f, "float64")                                # (an op: no mask of its own)
    assert g._keras_mask is None
    gt.layers.set_mask(g, gt.constant(other != 0))
    half = L.Average()([e, g])                       # the layer's float32 copy keeps the mask
    np.testing.assert_array_equal(half._keras_mask.numpy(), keep)


def test_a_mask_given_by_hand_or_made_by_compute_mask_flows_on():
    from gradtape import layers as layers_mod
    x = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    m = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], bool)
    assert not layers_mod._MASKS
    out = L.LSTM(2, return_sequences=True)(x, mask=m)    # no mask alive anywhere else
    np.testing.assert_array_equal(out._keras_mask.numpy(), m)
    pooled = L.GlobalAveragePooling1D()(out).numpy()
    np.testing.assert_allclose(pooled, (out.numpy() * m[..., None]).sum(1) / m.sum(1)[:, None],
                               rtol=1e-6)
    del out

    class Pad(L.Layer):
        def call(self, inputs):
            return inputs

        def compute_mask(self, inputs, mask=None):
            return gt.not_equal(gt.reduce_sum(inputs, axis=-1), 0.0)
    y = x.copy()
    y[0, 3] = 0.0
    t = Pad()(y)
    np.testing.assert_array_equal(t._keras_mask.numpy(), [[1, 1, 1, 0], [1, 1, 1, 1]])
    t._keras_mask = gt.constant(m)                       # TF's idiom
    np.testing.assert_array_equal(t._keras_mask.numpy(), m)


def test_bidirectional_sequences_zero_masked_steps_and_full_masks_pool_to_zero():
    _, e = _embed()
    out = L.Bidirectional(L.LSTM(2, return_sequences=True))(e).numpy()
    for i, n in enumerate(LENGTHS):
        np.testing.assert_array_equal(out[i, n:], 0.0)
    empty = gt.constant(np.ones((1, 3, 2), np.float32))
    gt.layers.set_mask(empty, gt.constant(np.zeros((1, 3), bool)))
    np.testing.assert_array_equal(L.GlobalMaxPooling1D()(empty).numpy(), 0.0)
