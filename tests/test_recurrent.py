"""Recurrent layers against a NumPy transcription of Keras' equations (and PyTorch's LSTM
and GRU where PyTorch is installed), finite-difference gradients, training, dropout and bad
input."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

RNG = np.random.default_rng(21)
X = RNG.standard_normal((3, 6, 4))


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _np_rnn(kind, x, w, u, b, go_backwards=False, reset_after=True, h0=None, c0=None):
    """Keras' recurrences in NumPy: (every output, final h, final c)."""
    n, t, _ = x.shape
    units = u.shape[0]
    h = np.zeros((n, units)) if h0 is None else h0
    c = np.zeros((n, units)) if c0 is None else c0
    outs = []
    order = range(t - 1, -1, -1) if go_backwards else range(t)
    for s in order:
        xt = x[:, s]
        if kind == "simple":
            h = np.tanh(xt @ w + h @ u + b)
        elif kind == "lstm":
            z = xt @ w + h @ u + b
            i, f, g, o = np.split(z, 4, axis=-1)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
        else:
            if reset_after:
                xz, xr, xh = np.split(xt @ w + b[0], 3, axis=-1)
                rz, rr, rh = np.split(h @ u + b[1], 3, axis=-1)
                z, r = _sig(xz + rz), _sig(xr + rr)
                hh = np.tanh(xh + r * rh)
            else:
                xz, xr, xh = np.split(xt @ w + b, 3, axis=-1)
                z = _sig(xz + h @ u[:, :units])
                r = _sig(xr + h @ u[:, units:2 * units])
                hh = np.tanh(xh + (r * h) @ u[:, 2 * units:])
            h = z * h + (1 - z) * hh
        outs.append(h)
    return np.stack(outs, axis=1), h, c


def _weights(layer):
    cell = layer.cell
    return cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy()


@pytest.mark.parametrize("kind,make", [
    ("simple", lambda **k: gt.layers.SimpleRNN(5, **k)),
    ("lstm", lambda **k: gt.layers.LSTM(5, **k)),
    ("gru", lambda **k: gt.layers.GRU(5, **k)),
    ("gru_v1", lambda **k: gt.layers.GRU(5, reset_after=False, **k)),
])
def test_layers_follow_keras_equations(device, kind, make):
    x = gt.constant(X)
    seq = make(return_sequences=True, return_state=True, dtype="float64",
               bias_initializer="random_normal")
    out, *states = seq(x)
    w, u, b = _weights(seq)
    ref_kind = "gru" if kind.startswith("gru") else kind
    want, h, c = _np_rnn(ref_kind, X, w, u, b, reset_after=kind != "gru_v1")
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(states[0].numpy(), h, rtol=1e-10, atol=1e-12)
    assert len(states) == (2 if kind == "lstm" else 1)
    if kind == "lstm":
        np.testing.assert_allclose(states[1].numpy(), c, rtol=1e-10, atol=1e-12)
        # unit_forget_bias: the forget gate's bias starts at one (zeros initializer)
        fresh = gt.layers.LSTM(3)
        fresh(gt.ones([1, 2, 2]))
        np.testing.assert_array_equal(fresh.cell.bias.numpy(), [0] * 3 + [1] * 3 + [0] * 6)
    # the last output only, backwards, from given states
    back = make(go_backwards=True, dtype="float64")
    h0 = RNG.standard_normal((3, 5))
    init = [gt.constant(h0)] + ([gt.constant(h0 * 0.5)] if kind == "lstm" else [])
    last = back(x, initial_state=init)
    w, u, b = _weights(back)
    want, h, _ = _np_rnn(ref_kind, X, w, u, b, go_backwards=True,
                         reset_after=kind != "gru_v1", h0=h0, c0=h0 * 0.5)
    np.testing.assert_allclose(last.numpy(), h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [lambda: gt.layers.LSTM(3, dtype="float64"),
                                  lambda: gt.layers.GRU(3, dtype="float64"),
                                  lambda: gt.layers.SimpleRNN(3, dtype="float64",
                                                              return_sequences=True)],
                         ids=["lstm", "gru", "simple"])
def test_gradients_match_finite_differences(make):
    layer = make()
    x = X[:2, :4, :3]
    layer(gt.constant(x))
    cell = layer.cell
    w0, u0, b0 = (v.numpy() for v in (cell.kernel, cell.recurrent_kernel, cell.bias))

    def g(x, w, u, b):
        # the weights as arguments: substituted for the cell's Variables during the call
        saved = cell.kernel, cell.recurrent_kernel, cell.bias
        cell.kernel, cell.recurrent_kernel, cell.bias = w, u, b
        try:
            return layer(x)
        finally:
            cell.kernel, cell.recurrent_kernel, cell.bias = saved
    check_grads(g, [x, w0, u0, b0], order=2, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_same_numbers_as_pytorch(kind):
    torch = pytest.importorskip("torch")
    layer = (gt.layers.LSTM if kind == "lstm" else gt.layers.GRU)(
        4, return_sequences=True, dtype="float64", bias_initializer="random_normal")
    out = layer(gt.constant(X)).numpy()
    w, u, b = _weights(layer)
    net = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(4, 4, batch_first=True).double()
    with torch.no_grad():
        if kind == "lstm":              # the same gate order (i, f, g, o), one bias
            net.weight_ih_l0.copy_(torch.tensor(w.T))
            net.weight_hh_l0.copy_(torch.tensor(u.T))
            net.bias_ih_l0.copy_(torch.tensor(b))
            net.bias_hh_l0.zero_()
        else:                           # Keras z, r, h against PyTorch r, z, n
            perm = lambda a: np.concatenate([a[..., 4:8], a[..., 0:4], a[..., 8:]], axis=-1)
            net.weight_ih_l0.copy_(torch.tensor(perm(w).T))
            net.weight_hh_l0.copy_(torch.tensor(perm(u).T))
            net.bias_ih_l0.copy_(torch.tensor(perm(b[0])))
            net.bias_hh_l0.copy_(torch.tensor(perm(b[1])))
        want = net(torch.tensor(X))[0].numpy()
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)


def test_an_lstm_learns_to_add_a_sequence():
    gt.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (64, 8, 1)).astype(np.float32)
    y = x.sum(axis=(1, 2))[:, None] / 4.0
    model = gt.keras.Sequential([gt.layers.LSTM(16), gt.layers.Dense(1)])
    opt = gt.optimizers.Adam(0.02)
    losses = []
    for _ in range(150):
        with gt.GradientTape() as tape:
            loss = gt.reduce_mean(gt.square(model(gt.constant(x)) - y))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < 0.01 * losses[0] and losses[-1] < 2e-3


def test_dropout_masks_are_per_sequence_and_only_in_training(device):
    layer = gt.layers.GRU(6, dropout=0.5, recurrent_dropout=0.3, return_sequences=True)
    x = gt.constant(np.ones((4, 5, 3), np.float32))
    a, b = layer(x), layer(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())          # inference: no dropout
    syncs = gt.config.sync_count(device)
    t1, t2 = layer(x, training=True), layer(x, training=True)
    assert gt.config.sync_count(device) == syncs                  # masks drawn on the device
    assert not np.allclose(t1.numpy(), t2.numpy()) and not np.allclose(t1.numpy(), a.numpy())
    # one input mask per sequence: with the input mask alone, a zero-initialised SimpleRNN
    # with an identity kernel sees the same masked input at every step
    rnn = gt.layers.SimpleRNN(3, dropout=0.5, activation=None, kernel_initializer="identity",
                              recurrent_initializer="zeros", return_sequences=True)
    seq = rnn(gt.constant(np.ones((8, 4, 3), np.float32)), training=True).numpy()
    for step in range(1, 4):
        np.testing.assert_array_equal(seq[:, step], seq[:, 0])
    assert set(np.unique(seq)) <= {0.0, 2.0} and 0.0 in seq and 2.0 in seq


def test_bad_input_names_the_layer():
    lstm = gt.layers.LSTM(4, name="enc")
    with pytest.raises(ValueError, match=r"LSTM layer 'enc': expected input of shape "
                                         r"\(None, None, None\), got shape \(2, 3\)"):
        lstm(gt.ones([2, 3]))
    lstm(gt.ones([2, 5, 3]))
    with pytest.raises(ValueError, match=r"LSTM layer 'enc': expected 2 initial state\(s\), "
                                         r"got 1"):
        lstm(gt.ones([2, 5, 3]), initial_state=[gt.zeros([2, 4])])
    with pytest.raises(ValueError, match=r"initial state 1 has shape \(2, 3\), expected "
                                         r"\(2, 4\)"):
        lstm(gt.ones([2, 5, 3]), initial_state=[gt.zeros([2, 4]), gt.zeros([2, 3])])
    with pytest.raises(TypeError, match="GRU: unexpected keyword argument 'bogus'"):
        gt.layers.GRU(3, bogus=1)
    with pytest.raises(ValueError, match="dropout must be a float in"):
        gt.layers.LSTM(3, dropout=1.5)


def test_orthogonal_initializer():
    for shape in [(6, 4), (4, 6), (2, 3, 5)]:
        q = gt.initializers.Orthogonal(gain=2.0, seed=3)(shape).numpy().reshape(-1, shape[-1])
        small = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
        np.testing.assert_allclose(small, 4.0 * np.eye(min(q.shape)), atol=1e-5)
    np.testing.assert_array_equal(gt.initializers.Orthogonal(seed=3)((3, 3)).numpy(),
                                  gt.initializers.Orthogonal(seed=3)((3, 3)).numpy())
    with pytest.raises(ValueError, match="rank >= 2"):
        gt.initializers.get("orthogonal")((3,))


def test_stateful_layers_carry_states_between_calls():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    for cls in (gt.layers.LSTM, gt.layers.GRU, gt.layers.SimpleRNN):
        whole = cls(4, return_sequences=True)
        ref = whole(x).numpy()
        stateful = cls(4, return_sequences=True, stateful=True)
        stateful(x[:, :1])
        stateful.set_weights(whole.get_weights())
        stateful.reset_states()
        parts = [stateful(x[:, i:i + 2]).numpy() for i in range(0, 6, 2)]
        np.testing.assert_allclose(np.concatenate(parts, 1), ref, rtol=1e-5, atol=1e-6)
        stateful.reset_states()
        np.testing.assert_allclose(stateful(x[:, :2]).numpy(), ref[:, :2], rtol=1e-5, atol=1e-6)
        assert all(not v.trainable for v in stateful.states)
        assert len(stateful.variables) == len(whole.variables)     # states are not weights
        with pytest.raises(ValueError, match="batch of 3"):
            stateful(np.concatenate([x, x[:1]])[:, :2])
        with pytest.raises(ValueError, match="2 states for|1 states for|shape"):
            stateful.reset_states([np.zeros((5, 4))] * len(stateful.states))
    with pytest.raises(AttributeError, match="not stateful"):
        gt.layers.LSTM(2).reset_states()


def test_a_stateful_model_in_fit_and_reset_states():
    inp = gt.keras.Input(batch_shape=(4, 3, 2))
    lstm = gt.layers.LSTM(3, stateful=True)
    model = gt.keras.Model(inp, gt.layers.Dense(1)(lstm(inp)))
    x = np.random.default_rng(1).standard_normal((8, 3, 2)).astype(np.float32)
    model.compile("sgd", "mse")
    model.fit(x, np.zeros((8, 1), np.float32), batch_size=4, shuffle=False, verbose=0)
    assert np.abs(lstm.states[0].numpy()).sum() > 0
    model.reset_states()
    np.testing.assert_array_equal(lstm.states[0].numpy(), 0.0)
    again = gt.layers.deserialize(gt.layers.serialize(lstm))
    assert again.stateful


def test_stateful_states_from_a_batch_shape_bidirectional_and_tensor_states():
    inp = gt.keras.Input(batch_shape=(2, 3, 2))
    lstm = gt.layers.LSTM(4, stateful=True)
    gt.keras.Model(inp, lstm(inp))
    lstm.reset_states(states=[np.ones((2, 4)), gt.constant(np.ones((2, 4)))])   # float64 too
    np.testing.assert_array_equal(lstm.states[1].numpy(), 1.0)
    assert lstm.states[1].dtype == gt.float32
    bi = gt.layers.Bidirectional(gt.layers.GRU(3, stateful=True, return_sequences=True))
    bi(np.ones((2, 4, 2), np.float32))
    assert bi.stateful
    bi.reset_states()
    np.testing.assert_array_equal(bi.forward_layer.states[0].numpy(), 0.0)
    bi.reset_states([np.ones((2, 3)), np.full((2, 3), 2.0)])
    np.testing.assert_array_equal(bi.backward_layer.states[0].numpy(), 2.0)


def test_cell_state_and_output_sizes_as_keras():
    L = gt.keras.layers
    assert L.GRUCell(4).state_size == 4 and L.SimpleRNNCell(4).state_size == 4
    assert L.LSTMCell(4).state_size == [4, 4] and L.GRUCell(4).output_size == 4
    assert L.StackedRNNCells([L.LSTMCell(2), L.GRUCell(3)]).state_size == [[2, 2], 3]
    cell = L.GRUCell(3)
    h = gt.zeros([2, cell.state_size])          # the common idiom
    out, new = cell(gt.ones([2, 5]), [h])
    assert out.shape == [2, 3] and new[0].shape == [2, 3]


def test_set_weights_writes_the_values_without_the_constraint():
    d = gt.keras.layers.Dense(1, kernel_constraint=gt.keras.constraints.MinMaxNorm(0.2, 0.8,
                                                                                     rate=0.5))
    d.build((None, 3))
    d.set_weights([np.ones((3, 1), np.float32), np.zeros(1, np.float32)])
    np.testing.assert_array_equal(d.kernel.numpy().ravel(), [1.0, 1.0, 1.0])   # as TF
