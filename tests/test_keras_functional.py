"""Keras' functional API: keras.Input, layers called on symbolic tensors, Model(inputs,
outputs), Sequential with an Input, weight regularizers."""
import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_input_is_symbolic_with_an_unknown_batch():
    inp = keras.Input(shape=(4,), name="features")
    assert tuple(inp.shape) == (None, 4) and inp.dtype == gt.float32 and inp.name == "features"
    assert keras.Input(shape=(3,), batch_size=8).shape == (8, 3)
    assert keras.Input(batch_shape=(None, 2, 5), dtype="int32").dtype == gt.int32
    assert keras.Input(shape=7).shape == (None, 7)
    for bad in (dict(), dict(shape=(4,), sparse=True), dict(shape=(-1,)), dict(shape="a")):
        with pytest.raises((ValueError, TypeError)):
            keras.Input(**bad)
    with pytest.raises(TypeError, match="Lambda"):
        gt.exp(inp)                      # a gradtape function needs a Lambda layer
    with pytest.raises(TypeError, match="no value"):
        bool(inp)


def test_functional_model_runs_the_layers_it_was_built_from():
    inp = keras.Input(shape=(4,))
    d1, d2 = L.Dense(8, activation="relu"), L.Dense(3)
    h = d1(inp)
    out = d2(h)
    assert tuple(h.shape) == (None, 8) and tuple(out.shape) == (None, 3)
    model = keras.Model(inp, out, name="mlp")
    assert [type(l).__name__ for l in model.layers] == ["InputLayer", "Dense", "Dense"]
    assert model.layers[1] is d1 and model.get_layer(d2.name) is d2
    assert model.input_shape == (None, 4) and model.output_shape == (None, 3)
    assert len(model.trainable_variables) == 4 and model.count_params() == 4 * 8 + 8 + 8 * 3 + 3
    x = _x(5, 4)
    want = d2(d1(x)).numpy()
    np.testing.assert_array_equal(model(x).numpy(), want)
    np.testing.assert_array_equal(model(gt.constant(x.astype(np.float64))).numpy(), want)


def test_gradients_through_a_functional_model_match_the_same_layers_called_directly():
    inp = keras.Input(shape=(3,))
    d1, d2 = L.Dense(5, activation="tanh"), L.Dense(1)
    model = keras.Model(inputs=inp, outputs=d2(d1(inp)))
    x = gt.constant(_x(6, 3))
    with gt.GradientTape(persistent=True) as tape:
        a = gt.reduce_sum(model(x) ** 2)
        b = gt.reduce_sum(d2(d1(x)) ** 2)
    for ga, gb in zip(tape.gradient(a, model.trainable_variables),
                      tape.gradient(b, model.trainable_variables)):
        np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-6)


def test_several_inputs_and_outputs_shared_layers_and_nested_models():
    a, b = keras.Input(shape=(4,), name="a"), keras.Input(shape=(2,), name="b")
    shared = L.Dense(3)
    merged = L.Concatenate()([shared(a), L.Dense(3)(b)])
    tower = keras.Sequential([L.Dense(6, activation="relu"), L.Dense(2)])
    out1 = tower(merged)
    out2 = L.Dense(1, name="score")(shared(a) * 2.0 + 1.0)
    model = keras.Model({"a": a, "b": b}, [out1, out2])
    assert model.output_names == [tower.name, "score"]
    xa, xb = _x(5, 4), _x(5, 2, seed=1)
    y1, y2 = model({"a": xa, "b": xb})
    assert y1.shape == (5, 2) and y2.shape == (5, 1)
    # the same through the layers by hand: the shared Dense is one set of weights
    m2 = model.layers[-1] if model.layers[-1].name == "score" else model.get_layer("score")
    want2 = m2(shared(xa) * 2.0 + 1.0).numpy()
    np.testing.assert_allclose(y2.numpy(), want2, rtol=1e-6)
    assert sum(1 for l in model.layers if l is shared) == 1
    # a functional model is itself a layer of another functional model
    inner_a, inner_b = keras.Input(shape=(4,)), keras.Input(shape=(2,))
    outer = keras.Model([inner_a, inner_b], model({"a": inner_a, "b": inner_b})[1])
    np.testing.assert_allclose(outer([xa, xb]).numpy(), want2, rtol=1e-6)


def test_operators_on_symbolic_tensors_record_op_layers():
    inp = keras.Input(shape=(3,))
    out = -(inp[:, :2] * 3.0) + 1.0 - inp[:, 1:] / 2.0 + 2.0 ** inp[:, :2]
    model = keras.Model(inp, out)
    x = _x(4, 3)
    want = -(x[:, :2] * 3) + 1 - x[:, 1:] / 2 + 2.0 ** x[:, :2]
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-6)
    assert len(model.trainable_variables) == 0


def test_unknown_sizes_are_found_by_two_probes():
    seq = keras.Input(shape=(None, 3))
    per_step = L.Dense(5)(seq)                     # the time axis stays unknown
    last = L.LSTM(4)(seq)
    assert tuple(per_step.shape) == (None, None, 5) and tuple(last.shape) == (None, 4)
    model = keras.Model(seq, [per_step, last])
    a, b = model(_x(2, 7, 3))
    assert a.shape == (2, 7, 5) and b.shape == (2, 4)
    with pytest.raises(ValueError, match="None"):
        L.Dense(2)(keras.Input(shape=(None,)))     # its weights need the last size


def test_functional_errors_name_what_is_wrong():
    a, b = keras.Input(shape=(2,), name="a"), keras.Input(shape=(2,), name="b")
    out = L.Add()([a, b])
    with pytest.raises(ValueError, match="graph disconnected.*'b'"):
        keras.Model(a, out)
    with pytest.raises(TypeError, match="keras.Input"):
        keras.Model(out, out)
    model = keras.Model([a, b], out)
    with pytest.raises(ValueError, match="expects 2 inputs"):
        model([_x(3, 2)] * 3)
    with pytest.raises(ValueError, match=r"input 'a' expects shape \(None, 2\), got \(3, 5\)"):
        model([_x(3, 5), _x(3, 2)])
    with pytest.raises(TypeError, match="Model"):
        keras.Model(a, out, out)


def test_weights_of_a_functional_model_save_and_load(tmp_path):
    def make():
        inp = keras.Input(shape=(3,))
        return keras.Model(inp, L.Dense(2)(L.Dense(4, activation="relu")(inp)))
    m1, m2 = make(), make()
    path = m1.save_weights(str(tmp_path / "w.safetensors"))
    x = _x(5, 3)
    assert not np.allclose(m1(x).numpy(), m2(x).numpy())
    m2.load_weights(path)
    np.testing.assert_array_equal(m1(x).numpy(), m2(x).numpy())


def test_sequential_takes_an_input_or_an_input_layer():
    for first in (keras.Input(shape=(4,)), L.InputLayer(input_shape=(4,))):
        model = keras.Sequential([first, L.Dense(3), L.Dense(2)])
        assert model.built and len(model.layers) == 2
        assert model.layers[0].kernel.shape == (4, 3)
    model = keras.Sequential()
    model.add(keras.Input(shape=(6,)))
    model.add(L.Dense(5))
    assert model.layers[0].kernel.shape == (6, 5)          # built as it is added
    model.add(L.Dense(1))
    assert model.layers[1].kernel.shape == (5, 1)
    with pytest.raises(ValueError, match="must come first"):
        model.add(keras.Input(shape=(6,)))


def test_regularizers_add_their_penalties_to_losses():
    reg = keras.regularizers.L2(0.1)
    dense = L.Dense(3, kernel_regularizer=reg, bias_regularizer=keras.regularizers.L1(0.5),
                    bias_initializer="ones")
    dense(_x(2, 4))
    k = dense.kernel.numpy()
    got = [t.numpy() for t in dense.losses]
    np.testing.assert_allclose(got, [0.1 * (k ** 2).sum(), 0.5 * 3.0], rtol=1e-6)
    model = keras.Sequential([dense, L.Dense(2, kernel_regularizer="l1_l2")])
    model(_x(2, 4))
    assert len(model.losses) == 3
    k2 = model.layers[1].kernel.numpy()
    np.testing.assert_allclose(model.losses[2].numpy(),
                               0.01 * np.abs(k2).sum() + 0.01 * (k2 ** 2).sum(), rtol=1e-6)
    with gt.GradientTape() as tape:
        penalty = model.losses[0]
    np.testing.assert_allclose(tape.gradient(penalty, dense.kernel).numpy(), 0.2 * k, rtol=1e-6)
    with pytest.raises(TypeError, match="recurrent_regularizer"):
        L.Dense(2, recurrent_regularizer="l2")
    with pytest.raises(ValueError, match="unknown regularizer"):
        L.Dense(2, kernel_regularizer="l3")
    with pytest.raises(ValueError, match=">= 0"):
        keras.regularizers.L2(-1.0)
    assert keras.regularizers.get({"class_name": "L2", "config": {"l2": 0.3}}).l2 == 0.3


def test_functional_model_on_the_strict_device_makes_no_host_round_trip():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        inp = keras.Input(shape=(4,))
        out = L.Dense(2)(L.Dense(8, activation="relu")(inp) + 1.0)
        model = keras.Model(inp, out)
        x = gt.constant(_x(5, 4))
        model(x)
        syncs, transfers = dev.sync_count, dev.transfer_count
        with gt.GradientTape() as tape:
            loss = gt.reduce_sum(model(x, training=True))
        tape.gradient(loss, model.trainable_variables)
        assert (dev.sync_count - syncs, dev.transfer_count - transfers) == (0, 0)


def test_summary_prints_keras_table():
    lines = []
    inp = keras.Input(shape=(6, 6, 1))
    h = L.Flatten()(L.Conv2D(2, 3, name="c")(inp))
    model = keras.Model(inp, L.Dense(3, name="d")(h), name="net")
    model.summary(print_fn=lines.append)
    assert lines[0] == 'Model: "net"'
    rows = {line.split()[0]: line.split() for line in lines[4:-5]}
    assert rows["c"][-1] == "20" and "(None, 4, 4, 2)" in " ".join(rows["c"])
    assert rows["d"][-1] == str(32 * 3 + 3)
    assert lines[-4:-1] == [f"Total params: {20 + 99}", f"Trainable params: {20 + 99}",
                            "Non-trainable params: 0"]
    seq = keras.Sequential([keras.Input(shape=(4,)), L.Dense(5), L.BatchNormalization()])
    lines.clear()
    seq.summary(print_fn=lines.append)
    assert "(None, 5)" in lines[4] and lines[-2] == "Non-trainable params: 10"


def test_unknown_spatial_sizes_keep_convolutional_models_working():
    inp = keras.Input(shape=(None, None, 3))
    h = L.Conv2D(8, 3, activation="relu")(inp)
    h = L.MaxPool2D()(h)
    assert tuple(h.shape) == (None, None, None, 8)
    fcn = keras.Model(inp, L.GlobalAveragePooling2D()(h))
    for size in (9, 17):
        assert fcn(_x(2, size, size + 3, 3)).shape == (2, 8)
    assert tuple(L.MaxPooling1D(2)(keras.Input(shape=(None, 8))).shape) == (None, None, 8)
    seq = keras.Sequential([keras.Input(shape=(None, 8)), L.Conv1D(4, 3), L.GlobalMaxPooling1D()])
    assert seq.output_shape == (None, 4) and seq(_x(3, 11, 8)).shape == (3, 4)


def test_layers_know_their_symbolic_input_and_output():
    inp = keras.Input(shape=(5,))
    fc1 = L.Dense(4, name="fc1")
    model = keras.Model(inp, L.Dense(2)(fc1(inp)))
    assert fc1.input is inp and tuple(fc1.output.shape) == (None, 4)
    features = keras.Model(model.input, model.get_layer("fc1").output)
    x = _x(3, 5)
    np.testing.assert_allclose(features(x).numpy(), fc1(x).numpy(), rtol=1e-6)
    seq = keras.Sequential([keras.Input(shape=(3,)), L.Dense(2, name="last")])
    assert tuple(seq.input.shape) == (None, 3) and tuple(seq.output.shape) == (None, 2)
    assert seq.output_names == ["last"]
    lstm = L.LSTM(3, return_state=True)
    out, h, c = lstm(keras.Input(shape=(4, 2)))
    assert isinstance(lstm.output, (list, tuple)) and len(lstm.output) == 3
    fc1(keras.Input(shape=(5,)))                             # a second symbolic call
    with pytest.raises(AttributeError, match="2 times"):
        fc1.output
    with pytest.raises(AttributeError, match="never been called"):
        L.Dense(2).output


def test_building_a_model_never_trains_its_layers():
    bn = L.BatchNormalization()
    inp = keras.Input(shape=(3,))
    keras.Model(inp, L.Dropout(0.5)(bn(inp, training=True), training=True))
    np.testing.assert_array_equal(bn.moving_variance.numpy(), 1.0)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), 0.0)


def test_a_tensor_on_the_left_of_a_symbolic_tensor_says_what_to_do():
    inp = keras.Input(shape=(3,))
    with pytest.raises(TypeError, match="on the left"):
        gt.constant([1.0, 2.0, 3.0]) + inp
    model = keras.Model(inp, inp + gt.constant([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(model(np.zeros((1, 3), np.float32)).numpy(), [[1, 2, 3]])


def test_add_loss_activity_and_weight_regularizers():
    class Penalized(L.Layer):
        def build(self, shape):
            self.w = self.add_weight("w", (shape[-1], 2), "ones",
                                     regularizer=keras.regularizers.L1(0.5))

        def call(self, x):
            y = gt.matmul(x, self.w)
            self.add_loss(gt.reduce_sum(y) * 0.1)
            return y
    layer = Penalized()
    model = keras.Sequential([layer, L.Dense(1, activity_regularizer=keras.regularizers.L2(1.0),
                                             kernel_initializer="ones")])
    x = np.ones((4, 3), np.float32)
    y = model(x).numpy()
    values = sorted(float(t.numpy()) for t in model.losses)
    # weight penalty 0.5 * 6; call loss 0.1 * sum(3 * 8 ones); activity sum(y**2) / batch
    assert values == pytest.approx(sorted([3.0, 2.4, float((y ** 2).sum() / 4)]), rel=1e-6)
    model(x[:2])                        # the next call replaces the call losses
    assert len(model.losses) == 3
    np.testing.assert_allclose(sorted(float(t.numpy()) for t in model.losses),
                               sorted([3.0, 1.2, float((y[:2] ** 2).sum() / 2)]), rtol=1e-6)
    model.compile(keras.optimizers.SGD(0.0), "mse")
    logs = model.evaluate(x, np.zeros((4, 1), np.float32), verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx((y ** 2).mean() + 3.0 + 2.4 + (y ** 2).sum() / 4,
                                         rel=1e-5)
    bn = L.BatchNormalization(gamma_regularizer="l2")
    bn(x)
    assert float(bn.losses[0].numpy()) == pytest.approx(0.01 * 3)
    assert L.Dense(2, kernel_regularizer=keras.regularizers.L2(0.3)).get_config()[
        "kernel_regularizer"] == {"class_name": "L2", "config": {"l2": 0.3}}


def test_embedding_takes_input_length():
    emb = L.Embedding(10, 3, input_length=5)
    model = keras.Sequential([emb, L.Flatten(), L.Dense(1)])
    assert model.built and model.output_shape == (None, 1)


def test_layer_losses_inside_models_and_after_probes():
    d = L.Dense(2, activity_regularizer="l2", kernel_initializer="ones")
    model = keras.Sequential([L.InputLayer(input_shape=(3,)), d])
    assert d.losses == [] and model.losses == []          # building adds no loss
    x = np.ones((2, 3), np.float32)
    model(x)
    assert len(d.losses) == 1 and len(model.losses) == 1
    # outputs of 3: l2 0.01 * sum(y ** 2) over the batch of 2
    np.testing.assert_allclose(d.losses[0].numpy(), 0.01 * 36 / 2, rtol=1e-6)
    d(x[:1] * 2)                                           # a later call of d alone
    np.testing.assert_allclose(d.losses[0].numpy(), 0.01 * 72, rtol=1e-6)
    np.testing.assert_allclose(model.losses[0].numpy(), 0.01 * 72, rtol=1e-6)   # d's latest
    model(x)
    np.testing.assert_allclose(model.losses[0].numpy(), 0.01 * 36 / 2, rtol=1e-6)


def test_train_step_logs_can_be_extended_and_pop_rebuilds():
    class Extra(keras.Sequential):
        def train_step(self, data):
            logs = super().train_step(data)
            logs["extra"] = 1.5
            return logs
    model = Extra([keras.Input(shape=(3,)), L.Dense(4), L.Dense(2)])
    model.compile("sgd", "mse")
    hist = model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32), verbose=0)
    assert hist.history["extra"] == [1.5]
    model.pop()
    assert model.output_shape == (None, 4) and len(model.layers) == 1


def test_summary_of_a_subclassed_model_lists_its_layers():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [L.Dense(3), L.Dense(2)]
            self.head = L.Dense(1)

        def call(self, x):
            for b in self.blocks:
                x = b(x)
            return self.head(x)
    net = Net()
    with pytest.raises(ValueError, match="not been built"):
        net.summary()
    net(np.ones((1, 4), np.float32))
    lines = []
    net.summary(print_fn=lines.append)
    assert len(lines) == 4 + 3 + 5 and lines[-4] == f"Total params: {15 + 8 + 3}"
