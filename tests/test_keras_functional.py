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
        keras.Model(np.zeros((1, 2), np.float32), out)
    # (an inner tensor as the input cuts the graph there, as Keras: here an identity model)
    np.testing.assert_array_equal(keras.Model(out, out)(np.ones((1, 2), np.float32)).numpy(),
                                  np.ones((1, 2), np.float32))
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
        "kernel_regularizer"] == {"module": "keras.regularizers", "class_name": "L2",
                                  "config": {"l2": 0.3}, "registered_name": None}


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


# --- model.layers in Keras' order (map_graph: deepest first, ties in first-reached order) -----
# Every expected list below is what TF 2.21 (Keras 3.15) gives for the same graph.

def _two_branch():
    i1, i2 = keras.Input((3,), name="in1"), keras.Input((3,), name="in2")
    out = L.Concatenate(name="cat")([L.Dense(2, name="a1")(i1),
                                     L.Dense(2, name="b1")(L.Dense(2, name="b0")(i2))])
    return keras.Model([i1, i2], out)


def _keras_order_graphs():
    graphs = {"two_branch": (_two_branch(), ["in2", "in1", "b0", "a1", "b1", "cat"])}
    x = keras.Input((4,), name="x")                   # a layer shared at two depths
    sh = L.Dense(4, name="sh")
    h3 = sh(L.Dense(4, name="mid")(sh(x)))
    graphs["shared"] = (keras.Model(x, L.Add(name="add")([h3, L.Dense(4, name="side")(x)])),
                        ["x", "sh", "mid", "side", "add"])
    img = keras.Input((8, 8, 3), name="img")          # a ResNet block with a projection
    c = L.Conv2D(4, 3, padding="same", name="c0")(img)
    y = L.ReLU(name="r1")(L.BatchNormalization(name="bn1")(
        L.Conv2D(4, 3, padding="same", name="c1")(c)))
    y = L.Conv2D(4, 3, padding="same", name="c2")(y)
    z = L.ReLU(name="r2")(L.Add(name="add")([y, L.Conv2D(4, 1, name="proj")(c)]))
    graphs["resnet"] = (keras.Model(img, L.Dense(3, name="head")(
        L.GlobalAveragePooling2D(name="gap")(z))),
        ["img", "c0", "c1", "bn1", "r1", "c2", "proj", "add", "r2", "gap", "head"])
    x = keras.Input((5,), name="x")                   # several outputs, a list and a dict
    t = L.Dense(6, name="trunk")(x)
    o1, o2, o3 = (L.Dense(1, name="o1")(t), L.Dense(2, name="o2")(L.Dense(3, name="o2pre")(t)),
                  L.Dense(2, name="o3")(x))
    graphs["multi_out"] = (keras.Model(x, [o1, o2, o3]),
                           ["x", "trunk", "o2pre", "o1", "o2", "o3"])
    graphs["multi_out_dict"] = (keras.Model(x, {"z": o1, "a": o2, "m": o3}),
                                ["x", "trunk", "o2pre", "o2", "o3", "o1"])
    a, b, c = (keras.Input((2,), name=n) for n in ("ua", "ub", "uc"))   # Inputs not used
    graphs["unused"] = (keras.Model([a, b, c], L.Dense(1, name="d")(L.Dense(2, name="e")(c))),
                        ["uc", "e", "ua", "ub", "d"])
    graphs["unused2"] = (keras.Model([a, b, c], L.Add(name="ad")([L.Dense(2, name="da")(a), c])),
                         ["ua", "da", "uc", "ub", "ad"])
    ii = keras.Input((3,), name="inner_in")           # a nested model called twice
    inner = keras.Model(ii, L.Dense(2, name="inner_d")(ii), name="inner")
    p, q = keras.Input((3,), name="p"), keras.Input((3,), name="q")
    cc = L.Concatenate(name="cc")([inner(p), inner(L.Dense(3, name="pre_q")(q)),
                                   L.Dense(2, name="r")(p)])
    graphs["nested"] = (keras.Model([p, q], cc), ["q", "p", "pre_q", "inner", "r", "cc"])
    za, al = keras.Input((2,), name="zeta"), keras.Input((2,), name="alpha")   # dict inputs
    graphs["dict_in"] = (keras.Model({"zeta": za, "alpha": al},
                                     L.Add(name="s")([L.Dense(2, name="dz")(za), al])),
                         ["zeta", "dz", "alpha", "s"])
    x = keras.Input((3,), name="x")                   # skip connections to the output
    d1 = L.Dense(3, name="d1")(x)
    d3 = L.Dense(3, name="d3")(L.Dense(3, name="d2")(d1))
    graphs["skip"] = (keras.Model(x, L.Concatenate(name="c")([d1, d3, x])),
                      ["x", "d1", "d2", "d3", "c"])
    graphs["skip_rev"] = (keras.Model(x, L.Concatenate(name="c2")([x, d3, d1])),
                          ["x", "d1", "d2", "d3", "c2"])
    p, q = keras.Input((3,), name="p"), keras.Input((3,), name="q")   # Inputs at two depths
    qq = L.Dense(3, name="q1")(q)
    r = L.Dense(3, name="t1")(L.Add(name="a1")([p, qq]))
    graphs["mixed_depth"] = (keras.Model([p, q], L.Add(name="a2")([r, L.Dense(3, name="q2")(qq)])),
                             ["q", "p", "q1", "a1", "t1", "q2", "a2"])
    return graphs


@pytest.mark.parametrize("graph", ["two_branch", "shared", "resnet", "multi_out",
                                   "multi_out_dict", "unused", "unused2", "nested", "dict_in",
                                   "skip", "skip_rev", "mixed_depth"])
def test_layers_are_listed_in_keras_order_and_the_graph_still_runs(graph):
    model, want = _keras_order_graphs()[graph]
    assert [layer.name for layer in model.layers] == want
    # each node still runs after the nodes it reads: the model runs, and as the layers do
    ran = set()
    for node in model._graph.nodes:
        assert all(v._node is None or id(v._node) in ran for v in node.symbols)
        ran.add(id(node))
    inputs = [_x(2, *kt.shape[1:], seed=i) for i, kt in enumerate(model.inputs)]
    out = model(inputs if len(inputs) > 1 else inputs[0])
    assert all(np.isfinite(t.numpy()).all() for t in gt.nest.flatten(out))


def test_weights_get_set_weights_and_summary_follow_the_keras_layer_order(tmp_path):
    model = _two_branch()
    dense = {name: model.get_layer(name) for name in ("a1", "b0", "b1")}
    # TF: [w.path for w in m.weights] == ['b0/kernel', 'b0/bias', 'a1/kernel', 'a1/bias',
    # 'b1/kernel', 'b1/bias']
    want = [v for n in ("b0", "a1", "b1") for v in (dense[n].kernel, dense[n].bias)]
    assert [id(v) for v in model.weights] == [id(v) for v in want]
    arrays = [np.full(v.shape, k, np.float32) for k, v in enumerate(want)]
    model.set_weights(arrays)
    assert np.all(dense["b0"].kernel.numpy() == 0) and np.all(dense["a1"].kernel.numpy() == 2)
    assert [a[0].item() if a.ndim == 1 else a[0, 0].item() for a in model.get_weights()] == \
        list(range(6))
    lines = []
    model.summary(print_fn=lines.append)
    names = [line.split()[0] for line in lines if line.split() and line.split()[0] in
             ("in1", "in2", "a1", "b0", "b1", "cat")]
    assert names == ["in2", "in1", "b0", "a1", "b1", "cat"]
    # saving keeps the order and the weights where they were; so does clone_model
    x = [_x(2, 3), _x(2, 3, seed=1)]
    model.save(str(tmp_path / "m.keras"))
    loaded = keras.models.load_model(str(tmp_path / "m.keras"))
    assert [layer.name for layer in loaded.layers] == ["in2", "in1", "b0", "a1", "b1", "cat"]
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
    clone = keras.models.clone_model(model)
    assert [layer.name for layer in clone.layers] == ["in2", "in1", "b0", "a1", "b1", "cat"]
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(clone(x).numpy(), model(x).numpy())


def test_a_file_saved_when_layers_were_listed_in_another_order_still_loads(tmp_path):
    """Files written before model.layers followed Keras list the layers in the order of
    the calls (Inputs first), and name the weights by those positions (``layers.2.kernel``):
    the loaded model keeps that listing, so every weight (and optimizer slot) lands where it
    was."""
    model = _two_branch()
    by_name = {layer.name: layer for layer in model.layers}
    model._graph.keep_layer_order([by_name[n] for n in ("in1", "in2", "a1", "b0", "b1", "cat")])
    assert [layer.name for layer in model.layers] == ["in1", "in2", "a1", "b0", "b1", "cat"]
    model.compile(optimizer="adam", loss="mse")
    x = [_x(4, 3), _x(4, 3, seed=1)]
    model.fit(x, _x(4, 4, seed=2), epochs=1, verbose=0)
    model.save(str(tmp_path / "old.keras"))
    loaded = keras.models.load_model(str(tmp_path / "old.keras"))
    assert [layer.name for layer in loaded.layers] == ["in1", "in2", "a1", "b0", "b1", "cat"]
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
    assert int(loaded.optimizer.iterations.numpy()) == 1
    # keep_layer_order leaves the order when the layers are not the same set
    loaded._graph.keep_layer_order(loaded.layers[:3])
    assert [layer.name for layer in loaded.layers] == ["in1", "in2", "a1", "b0", "b1", "cat"]


# --- Keras 3's input rank adjustment (Functional._adjust_input_rank) ---------------------------

def test_an_input_one_trailing_axis_of_size_one_off_is_adjusted_as_keras():
    inp = keras.Input((1,))
    model = keras.Model(inp, L.Dense(2, kernel_initializer="ones")(inp))
    np.testing.assert_array_equal(model(np.arange(3.0)).numpy(), [[0, 0], [1, 1], [2, 2]])
    assert model(np.ones((3, 1, 1))).shape == (3, 2)          # squeezed back to (3, 1)
    inp = keras.Input((3,), name="three")
    model = keras.Model(inp, L.Dense(2)(inp))
    assert model(np.ones((4, 3, 1))).shape == (4, 2)          # one axis of 1 too many
    for bad in (np.ones((4, 3, 2)), np.ones((4,)), np.ones((4, 3, 1, 1))):
        with pytest.raises(ValueError, match=r"input 'three' expects shape \(None, 3\), got"):
            model(bad)
    inp = keras.Input((2, 1))
    assert keras.Model(inp, L.Flatten()(inp))(np.ones((4, 2))).shape == (4, 2)
    inp = keras.Input(())                                       # (None,): a (3, 1) is squeezed
    assert keras.Model(inp, inp * 2.0)(np.ones((3, 1))).shape == (3,)
    # a mask on the given tensor stays on the adjusted one
    inp = keras.Input((4, 1))
    model = keras.Model(inp, L.LSTM(2, kernel_initializer="ones",
                                    recurrent_initializer="zeros")(inp))
    x = gt.constant(np.ones((2, 4), np.float32))
    gt.layers.set_mask(x, gt.constant([[True, True, False, False], [True] * 4]))
    x3 = x[..., None]
    gt.layers.set_mask(x3, gt.constant([[True, True, False, False], [True] * 4]))
    np.testing.assert_allclose(model(x).numpy(), model(x3).numpy(), rtol=1e-6)


def test_fit_predict_evaluate_expand_a_rank_one_input_as_keras():
    inp = keras.Input((1,))
    model = keras.Model(inp, L.Dense(2, kernel_initializer="ones")(inp))
    model.compile(optimizer="sgd", loss="mse")
    np.testing.assert_array_equal(model.predict(np.arange(3.0), verbose=0),
                                  [[0, 0], [1, 1], [2, 2]])
    hist = model.fit(np.arange(4.0), np.zeros((4, 2)), epochs=1, batch_size=4, verbose=0,
                     shuffle=False)
    # TF 2.21: loss [3.5], kernel [[0.965, 0.965]], evaluate 3.2160873413085938
    np.testing.assert_allclose(hist.history["loss"], [3.5], rtol=1e-6)
    np.testing.assert_allclose(model.layers[1].kernel.numpy(), [[0.965, 0.965]], rtol=1e-6)
    np.testing.assert_allclose(model.evaluate(np.arange(4.0), np.zeros((4, 2)), verbose=0),
                               3.2160873413085938, rtol=1e-6)


def test_a_model_can_start_from_an_inner_symbolic_tensor(tmp_path):
    """As Keras (clone_graph_nodes): an intermediate tensor given as an input cuts the graph
    there; the model gets an Input of that tensor's shape, trains, and saves."""
    keras = gt.keras
    inp = keras.Input((3,), name="raw")
    feat = keras.layers.Dense(4, name="pre")(inp)
    out = keras.layers.Dense(1, name="o")(keras.layers.Dense(5, activation="relu",
                                                            name="h")(feat))
    head = keras.Model(feat, out)
    full = keras.Model(inp, out)
    assert [layer.name for layer in head.layers] == ["preCLONE", "h", "o"]
    assert len(head.weights) == 4 and len(full.weights) == 6
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    raw = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)
    np.testing.assert_allclose(full(raw).numpy(), head(full.get_layer("pre")(raw)).numpy(),
                               rtol=1e-6)
    head.compile("sgd", "mse")
    head.fit(x, np.ones((8, 1), np.float32), epochs=1, verbose=0)
    path = tmp_path / "head.keras"
    head.save(path)
    again = keras.models.load_model(path)
    np.testing.assert_allclose(again(x).numpy(), head(x).numpy(), rtol=1e-6)
