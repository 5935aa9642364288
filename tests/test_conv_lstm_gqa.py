"""ConvLSTM1D/2D/3D and GroupQueryAttention against Keras 3.15 (TensorFlow 2.21).

The references were computed with tf.keras on the same arrays: inputs and weights are
``_arr(seed, shape)`` (weights assigned in ``layer.weights`` order, seeds 10, 11, ...), each
output ``o_i`` enters the loss ``sum_i sum(o_i * _arr(99 + i, o_i.shape))``, and every output
and gradient (inputs first, then the trainable weights, then given initial states) is
summarised by :func:`_sig` (sum, sum of squares, dot with a fixed normal array). TensorFlow's
CPU kernels lack channels_first convolutions, so its channels_first references are the same
layer channels_last on moved axes. Keras' dropout masks were set on its cell (``c7``), the
same masks given here through ``_masks``. The files conv_lstm.keras and gqa.keras in
tests/data/tf_files were written by TensorFlow from seeded weights (zips re-compressed).
"""
import os

import numpy as np
import pytest

import gradtape as gt

L = gt.keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data", "tf_files")


def _arr(seed, shape, scale=0.5):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype("float32")


def _sig(a):
    a = np.asarray(a.numpy() if isinstance(a, gt.Tensor) else a, np.float64)
    probe = np.random.default_rng(777).standard_normal(a.shape)
    return [a.sum(), (a * a).sum(), (a * probe).sum()]


def _dmask(seed, shape, rate=0.5):
    keep = np.random.default_rng(seed).random(shape) >= rate
    return (keep / (1 - rate)).astype("float32")


def _close_sigs(got, want, tol=2e-4):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _seeded(layer):
    layer.set_weights([_arr(10 + i, tuple(w.shape)) for i, w in enumerate(layer.weights)])


CONV_REF = {
    "c1": ([(2, 3, 3, 3, 2)],
        [[0.736192, 6.614787, -4.859609]],
        [[4.558223, 1.749175, 0.256699], [1.091622, 1.393101, -2.057896], [-0.506386, 0.25769,
        0.273324], [-0.648787, 1.377151, -0.437475]]),
    "c2": ([(2, 3, 3, 2), (2, 3, 3, 2), (2, 3, 3, 2)],
        [[1.129555, 2.144556, -2.013765], [1.129555, 2.144556, -2.013765], [1.950381, 15.597055,
        -4.693489]],
        [[1.780517, 5.305727, -0.376383], [0.011754, 9.509381, 2.832777], [-0.103525, 1.07911,
        1.133436], [-0.330989, 5.922632, -0.650582]]),
    "c3": ([(2, 4, 3, 3, 2)],
        [[2.485409, 2.875141, -1.380298]],
        [[0.484316, 0.129206, -0.047106], [-0.928439, 0.407982, 0.932094], [-0.174884, 0.04606,
        -0.347496], [-0.417396, 0.698106, -0.268235]]),
    "c4": ([(2, 4, 3, 7)],
        [[5.483506, 0.941131, 0.60712]],
        [[1.904538, 1.062098, -0.133301], [0.163125, 1.66941, 3.375636], [-0.687399, 0.120725,
        -0.277972], [-0.8276, 1.168779, 2.838983]]),
    "c5": ([(1, 2, 3, 2, 2)],
        [[-0.100528, 0.650304, 0.796596]],
        [[0.548866, 1.378523, -1.437594], [-0.921916, 2.065545, -0.456806], [-0.052898, 0.074332,
        -0.157647]]),
    "c6": ([(2, 4, 2), (2, 4, 2), (2, 4, 2)],
        [[0.353663, 1.028525, -0.198536], [0.353663, 1.028525, -0.198536], [-0.736924, 7.080447,
        0.265587]],
        [[2.967419, 1.836426, 0.443613], [-2.152552, 2.842624, 0.110272], [0.800191, 0.275508,
        0.001522], [-0.624247, 1.056793, -0.650536], [-0.173489, 0.16851, -0.207187], [0.089059,
        0.454203, -0.049021]]),
    "c7": ([(2, 3, 3, 4, 2)],
        [[3.057834, 6.346696, -2.171053]],
        [[-1.539204, 2.580654, 2.769196], [0.134746, 2.174814, 0.274277], [-0.703502, 0.183531,
        0.044832], [0.799991, 1.486022, -0.743071]]),
    "c8": ([(2, 2, 3, 2), (2, 2, 3, 2), (2, 2, 3, 2)],
        [[1.74201, 1.614004, -0.64655], [1.74201, 1.614004, -0.64655], [3.013237, 11.135036,
        -1.052317]],
        [[4.124608, 2.379098, -0.730583], [0.772487, 3.534027, 0.122585], [-1.200102, 0.829181,
        0.365211], [-2.023249, 4.525502, 0.849971]]),
}

GQA_REF = {
    "g1": ([(2, 3, 8)],
        [[-37.349972, 122.071675, 0.215239]],
        [[-2.303272, 48.715575, -1.594319], [-4.340031, 3.704221, 4.161184], [3.032981, 2.41912,
        -3.039735], [1.641441, 11.080634, -2.687244], [-0.0, 0.0, -0.0], [2.307097, 29.435408,
        -1.849043], [-5.010326, 51.097568, 7.382812], [-0.906106, 70.578196, 5.770266], [5.760757,
        14.225344, -3.598903]]),
    "g2": ([(2, 3, 8), (2, 6, 3, 5)],
        [[4.635094, 35.123047, -1.129936], [30.0, 10.171657, -7.027079]],
        [[-2.005927, 1.037129, 1.382499], [10.775034, 11.204678, -1.951602], [0.0, 2.548856,
        1.039544], [-0.821476, 1.408511, 0.137997], [1.557628, 0.777187, 0.142963], [-0.07734,
        4.288405, 0.417697], [0.0, 0.0, 0.0], [-1.614049, 21.98651, 5.99995], [-6.171413,
        68.042725, -4.403242], [-0.908262, 40.800054, -2.364741], [5.760757, 14.225344,
        -3.598903]]),
    "g3": ([(2, 3, 8)],
        [[7.503975, 43.315198, 0.655357]],
        [[-1.419223, 0.856773, 1.257181], [10.866709, 11.979245, 0.155815], [0.0, 2.357346,
        0.172879], [-1.080348, 1.858897, 0.034962], [1.065603, 0.808833, -0.229607], [-0.59749,
        3.298438, -1.282518], [0.0, 0.0, -0.0], [-2.130293, 21.006026, 6.657378], [-3.894308,
        86.558375, -7.079185], [-2.797628, 58.479673, -6.38877], [5.760757, 14.225344,
        -3.598903]]),
    "g4": ([(2, 4, 5)],
        [[3.366066, 4.866381, -3.342454]],
        [[8.37898, 6.371995, -6.008311], [0.706496, 0.410193, -0.004294], [0.158367, 0.235007,
        -0.289706], [0.175533, 0.22093, 0.616518], [2.041388, 2.940565, -1.558466], [2.420595,
        3.615475, -2.417951]]),
    "g5": ([(1, 5, 4), (1, 2, 5, 5)],
        [[-8.343815, 11.928284, 4.256281], [10.0, 6.027403, -4.210904]],
        [[-2.160114, 3.026641, 1.216622], [0.031414, 0.041411, 0.235318], [0.092988, 0.121577,
        0.048912], [-0.177024, 0.095237, -0.05119], [-0.0, 0.0, 0.0], [0.393503, 0.860881,
        0.098138], [1.364194, 5.917181, -3.466264], [-0.955919, 3.971465, 0.601613], [1.229062,
        4.297737, -0.822644]]),
    "g6": ([(2, 3, 4)],
        [[-12.543611, 25.351074, 3.466918]],
        [[0.228932, 0.027406, 0.106673], [1.09721, 1.943504, -1.300123], [0.014617, 0.02765,
        -0.143629], [0.024412, 0.052157, -0.039276], [-0.060774, 0.017533, -0.035101], [0.0, 0.0,
        -0.0], [0.202543, 0.779659, -1.103488], [0.409142, 3.502463, 0.30277], [-4.784663,
        16.51017, -0.100773], [1.820523, 3.640356, -1.672682]]),
    "g7": ([(2, 3, 4)],
        [[-7.67517, 15.841048, 2.947765]],
        [[0.442461, 0.043787, -0.018359], [0.809575, 1.796379, -1.776029], [-0.040091, 0.047694,
        -0.13073], [-0.064266, 0.158628, 0.050068], [-0.012793, 0.046624, -0.119868], [0.0, 0.0,
        -0.0], [0.264886, 1.18669, -1.423301], [-0.318298, 3.270167, 0.354461], [-2.322595,
        19.743598, -0.038597], [1.820523, 3.640356, -1.672682]]),
    "g8": ([(1, 4, 4)],
        [[-5.447758, 10.647252, 3.44625]],
        [[-0.653141, 1.63957, -1.833091], [0.0, 0.0, -0.0], [0.0, 0.0, -0.0], [-0.0, 0.0, 0.0],
        [-0.0, 0.0, 0.0], [0.471644, 0.76503, -0.321032], [1.1033, 1.254205, -0.950171],
        [-3.767078, 9.643015, 1.973422], [1.72615, 3.669892, -1.312448]]),
}

# --- ConvLSTM ---------------------------------------------------------------------------------

CONV_CASES = {
    "c1": ("ConvLSTM2D", dict(filters=2, kernel_size=(2, 3), return_sequences=True),
           (2, 3, 4, 5, 2), {}),
    "c2": ("ConvLSTM2D", dict(filters=2, kernel_size=3, strides=2, padding="same",
                              return_state=True, go_backwards=True),
           (2, 3, 5, 5, 2), {"mask": [[1, 1, 0], [1, 0, 1]]}),
    "c3": ("ConvLSTM2D", dict(filters=2, kernel_size=2, padding="same", return_sequences=True),
           (2, 4, 3, 3, 1), {"mask": [[1, 0, 1, 1], [0, 0, 1, 0]]}),
    "c4": ("ConvLSTM1D", dict(filters=3, kernel_size=3, dilation_rate=2, padding="same",
                              data_format="channels_first", return_sequences=True,
                              activation="relu", recurrent_activation="hard_sigmoid"),
           (2, 4, 2, 7), {}),
    "c5": ("ConvLSTM3D", dict(filters=2, kernel_size=2, use_bias=False, unit_forget_bias=False),
           (1, 3, 3, 4, 3, 2), {}),
    "c6": ("ConvLSTM1D", dict(filters=2, kernel_size=2, return_state=True), (2, 3, 5, 3),
           {"initial_state": True}),
    "c7": ("ConvLSTM2D", dict(filters=2, kernel_size=2, padding="same", dropout=0.5,
                              recurrent_dropout=0.5, return_sequences=True),
           (2, 3, 3, 4, 2), {"drop": True}),
    "c8": ("ConvLSTM2D", dict(filters=2, kernel_size=2, data_format="channels_first",
                              strides=(1, 2), return_state=True), (2, 3, 2, 4, 5), {}),
}


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv_lstm_values_and_gradients_are_keras(name):
    """Outputs, states and the gradients w.r.t. the inputs, the weights and the initial
    states: padding, strides, dilation, channels_first, masks, go_backwards, dropout."""
    cls, kwargs, shape, extra = CONV_CASES[name]
    layer = getattr(L, cls)(**kwargs)
    x = gt.constant(_arr(1, shape))
    layer.build(x.shape)
    _seeded(layer)
    call = {}
    if "mask" in extra:
        call["mask"] = gt.constant(np.array(extra["mask"], bool))
    if extra.get("initial_state"):
        call["initial_state"] = [gt.constant(_arr(50 + i, tuple(s.shape))) for i, s in
                                 enumerate(layer.cell.get_initial_state(shape[0]))]
    if extra.get("drop"):
        step, state = (shape[0],) + shape[2:], (shape[0],) + layer.cell.state_size[0]
        d_in = [gt.constant(_dmask(60 + g, step)) for g in range(4)]
        d_h = [gt.constant(_dmask(70 + g, state)) for g in range(4)]
        layer._masks = lambda x, training: [(d_in, d_h) if training else (None, None)]
        call["training"] = True
    with gt.GradientTape() as tape:
        tape.watch(x)
        for s in call.get("initial_state", []):
            tape.watch(s)
        out = layer(x, **call)
        outs = list(out) if isinstance(out, tuple) else [out]
        loss = sum(gt.reduce_sum(o * _arr(99 + i, tuple(o.shape))) for i, o in enumerate(outs))
    grads = tape.gradient(loss, [x] + layer.trainable_weights + call.get("initial_state", []))
    shapes, want_outs, want_grads = CONV_REF[name]
    assert [tuple(o.shape) for o in outs] == shapes
    _close_sigs([_sig(o) for o in outs], want_outs)
    _close_sigs([_sig(g) for g in grads], want_grads)


def test_conv_lstm_weights_as_keras():
    layer = L.ConvLSTM2D(3, 2, padding="same")
    assert layer.name.startswith("conv_lstm2d") and layer.cell.name == "conv_lstm_cell"
    layer.build((None, 4, 5, 6, 2))
    assert [w.name.split(":")[0] for w in layer.weights] == [
        "conv_lstm_cell/kernel", "conv_lstm_cell/recurrent_kernel", "conv_lstm_cell/bias"]
    assert [tuple(w.shape) for w in layer.weights] == [(2, 2, 2, 12), (2, 2, 3, 12), (12,)]
    # unit_forget_bias: the forget gate's bias starts at one (Keras' initial bias)
    small = L.ConvLSTM2D(2, 2)
    small.build((None, 2, 3, 3, 1))
    np.testing.assert_array_equal(small.weights[2].numpy(), [0, 0, 1, 1, 0, 0, 0, 0])
    plain = L.ConvLSTM1D(2, 2, unit_forget_bias=False, bias_initializer="ones")
    plain.build((None, 2, 3, 1))
    np.testing.assert_array_equal(plain.weights[2].numpy(), np.ones(8))
    three = L.ConvLSTM3D(1, (1, 2, 3), use_bias=False, data_format="channels_first")
    three.build((None, 2, 4, 3, 3, 3))
    assert [tuple(w.shape) for w in three.weights] == [(1, 2, 3, 4, 4), (1, 2, 3, 1, 4)]
    assert three.cell.state_size == [(1, 3, 2, 1), (1, 3, 2, 1)]


def test_conv_lstm_cell_steps_as_the_layer():
    """The cell called on one step (Keras' ``cell(inputs, states)``) gives the layer's
    output and states; its config rebuilds it."""
    layer = L.ConvLSTM2D(2, 2, padding="same", return_state=True)
    x = _arr(4, (2, 1, 3, 3, 1))
    y, h, c = layer(x)
    cell = layer.cell
    out, (h1, c1) = cell(x[:, 0], cell.get_initial_state(2))
    np.testing.assert_allclose(out.numpy(), y.numpy(), atol=1e-6)
    np.testing.assert_allclose(c1.numpy(), c.numpy(), atol=1e-6)
    assert type(cell).from_config(cell.get_config()).get_config() == cell.get_config()


def test_conv_lstm_small_output_and_stateful_calls():
    layer = L.ConvLSTM1D(1, 2)
    x = _arr(3, (1, 2, 3, 1))
    layer.build(x.shape)
    _seeded(layer)
    np.testing.assert_allclose(layer(x).numpy(), [[[0.043096], [0.30339]]], atol=2e-6)
    # stateful: the second call starts where the first ended; reset_states starts afresh
    layer = L.ConvLSTM2D(2, 2, stateful=True, padding="same")
    x = _arr(1, (2, 3, 3, 3, 1))
    layer.build(x.shape)
    _seeded(layer)
    got = [_sig(layer(x)), _sig(layer(_arr(2, x.shape)))]
    layer.reset_states()
    got.append(_sig(layer(_arr(2, x.shape))))
    _close_sigs(got, [[2.108361, 2.051317, -1.817921], [2.493734, 2.681803, -1.895198],
                      [1.765393, 1.747014, -1.363994]])
    assert [tuple(s.shape) for s in layer.states] == [(2, 3, 3, 2), (2, 3, 3, 2)]
    with pytest.raises(ValueError, match="batch"):
        layer(_arr(2, (3, 3, 3, 3, 1)))


def test_bidirectional_conv_lstm_is_keras():
    x = _arr(1, (2, 3, 3, 3, 1))
    layer = L.Bidirectional(L.ConvLSTM2D(2, 2, padding="same", return_sequences=True))
    layer(x)
    assert [tuple(w.shape) for w in layer.weights] == [(2, 2, 1, 8), (2, 2, 2, 8), (8,)] * 2
    _seeded(layer)
    y = layer(x)
    assert tuple(y.shape) == (2, 3, 3, 3, 4)
    _close_sigs([_sig(y)], [[13.099815, 5.652585, -2.796895]])


def test_conv_lstm_dropout_masks_per_sequence():
    """Four masks per sequence on the inputs (the step's shape) and four on the state, as
    Keras' ConvLSTMCell; inference drops nothing; rates are clipped to [0, 1] and a rate of
    1 drops nothing (as Keras)."""
    x = gt.constant(_arr(1, (2, 3, 4, 4, 2)))
    layer = L.ConvLSTM2D(2, 3, strides=(1, 2), dropout=0.25, recurrent_dropout=0.5, seed=3)
    plain = L.ConvLSTM2D(2, 3, strides=(1, 2))
    layer.build(x.shape)
    plain.build(x.shape)
    _seeded(layer)
    _seeded(plain)
    [(d_in, d_h)] = layer._masks(x, True)
    assert [tuple(m.shape) for m in d_in] == [(2, 4, 4, 2)] * 4
    assert [tuple(m.shape) for m in d_h] == [(2, 2, 1, 2)] * 4
    values = np.concatenate([m.numpy().ravel() for m in d_in])
    assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.75)} and 0 < values.mean() < 2
    assert set(np.unique(np.concatenate([m.numpy().ravel() for m in d_h]))) <= {0.0, 2.0}
    assert layer._masks(x, False) == [(None, None)]
    np.testing.assert_allclose(layer(x).numpy(), plain(x).numpy(), atol=1e-6)
    assert not np.allclose(layer(x, training=True).numpy(), plain(x).numpy(), atol=1e-3)
    for rate, kept in ((1.0, 1.0), (-0.5, 0.0), (2, 1.0)):
        odd = L.ConvLSTM2D(2, 3, strides=(1, 2), dropout=rate, recurrent_dropout=rate)
        assert odd.dropout == kept and odd.recurrent_dropout == kept
        odd.build(x.shape)
        _seeded(odd)
        np.testing.assert_allclose(odd(x, training=True).numpy(), plain(x).numpy(), atol=1e-6)


KERAS_CONFIG = {
    "name": "clstm", "trainable": True, "dtype": "float32", "return_sequences": True,
    "return_state": False, "go_backwards": False, "stateful": False, "unroll": False,
    "zero_output_for_mask": False, "filters": 3, "kernel_size": (2, 2), "strides": (1, 1),
    "padding": "valid", "data_format": "channels_last", "dilation_rate": (1, 1),
    "activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": True,
    "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                           "config": {"seed": None, "input_axes": None, "output_axes": None},
                           "registered_name": None},
    "recurrent_initializer": {"module": "keras.initializers", "class_name": "Orthogonal",
                              "config": {"seed": None, "gain": 1.0}, "registered_name": None},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {},
                         "registered_name": None},
    "unit_forget_bias": True, "kernel_regularizer": None, "recurrent_regularizer": None,
    "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
    "recurrent_constraint": None, "bias_constraint": None, "dropout": 0.0,
    "recurrent_dropout": 0.0, "seed": None}


def test_conv_lstm_config_round_trip():
    layer = L.ConvLSTM2D(3, 2, return_sequences=True, name="clstm")
    config = layer.get_config()
    assert config == KERAS_CONFIG and list(config) == list(KERAS_CONFIG)     # Keras' order
    odd = L.ConvLSTM1D(2, [3], strides=2, padding="SAME", go_backwards=True, stateful=True,
                       recurrent_activation="relu", dropout=0.1, seed=5,
                       kernel_regularizer="l2", activity_regularizer="l1",
                       recurrent_constraint="non_neg")
    again = L.ConvLSTM1D.from_config(odd.get_config())
    assert again.get_config() == odd.get_config()
    assert (again.kernel_size, again.strides, again.padding) == ((3,), (2,), "same")
    assert again.cell.seed == 5
    assert again.go_backwards and again.stateful and again.dropout == 0.1
    x = _arr(1, (2, 3, 6, 2))
    a = L.ConvLSTM1D(2, 3, go_backwards=True)
    a.build(x.shape)
    _seeded(a)
    b = L.ConvLSTM1D.from_config(a.get_config())
    b.build(x.shape)
    b.set_weights(a.get_weights())
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    # regularizers reach the cell's weights
    reg = L.ConvLSTM1D(2, 3, kernel_regularizer=gt.keras.regularizers.L2(0.5))
    reg.build(x.shape)
    np.testing.assert_allclose(float(sum(reg.losses)),
                               0.5 * float(np.sum(reg.cell.kernel.numpy() ** 2)), rtol=1e-5)


def test_conv_lstm_masks_and_symbolic_shapes():
    layer = L.ConvLSTM2D(2, 2, return_state=True)
    inp = gt.keras.Input((3, 5, 5, 1))
    outs = layer(inp)
    assert [tuple(o.shape) for o in outs] == [(None, 4, 4, 2)] * 3
    assert L.ConvLSTM2D(2, 2, return_sequences=True, strides=2).compute_output_shape(
        (None, 3, 5, 5, 1)) == (None, 3, 2, 2, 2)
    mask = gt.constant([[True, False]])
    assert layer.compute_mask(None, mask) == [None, None, None]
    seq = L.ConvLSTM2D(2, 2, return_sequences=True)
    assert seq.compute_mask(None, mask) is mask
    assert L.ConvLSTM2D(2, 2).compute_mask(None, mask) is None
    model = gt.keras.Sequential([gt.keras.Input((3, 4, 4, 1)),
                                 L.ConvLSTM2D(2, 2, padding="same", return_sequences=True),
                                 L.ConvLSTM2D(1, 3)])
    assert model.output_shape == (None, 2, 2, 1)
    assert model.predict(_arr(1, (2, 3, 4, 4, 1)), verbose=0).shape == (2, 2, 2, 1)


def test_conv_lstm_errors():
    with pytest.raises(ValueError, match="strides > 1 is not compatible with dilation_rate"):
        L.ConvLSTM2D(2, 2, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="padding"):
        L.ConvLSTM2D(2, 2, padding="causal")
    with pytest.raises(ValueError, match="data_format"):
        L.ConvLSTM2D(2, 2, data_format="nchw")
    with pytest.raises(ValueError, match="kernel_size"):
        L.ConvLSTM2D(2, (2, 2, 2))
    with pytest.raises(ValueError, match="filters"):
        L.ConvLSTM3D(0, 2)
    with pytest.raises(TypeError, match="dropout"):
        L.ConvLSTM1D(2, 2, dropout="half")
    layer = L.ConvLSTM2D(2, 2)
    layer(_arr(1, (2, 3, 3, 3, 1)))
    with pytest.raises(ValueError, match="ConvLSTM2D layer"):
        layer(_arr(1, (2, 3, 4, 3, 1)))                 # other spatial sizes than built for
    with pytest.raises(ValueError, match="ConvLSTM2D layer"):
        layer(_arr(1, (2, 3, 3, 3)))
    with pytest.raises(ValueError, match="smaller than the kernel"):
        L.ConvLSTM2D(2, 4)(_arr(1, (2, 3, 3, 3, 1)))
    with pytest.raises(ValueError, match="initial state 0 has shape"):
        layer(_arr(1, (2, 3, 3, 3, 1)), initial_state=[_arr(1, (2, 3, 3, 2))] * 2)
    with pytest.raises(ValueError, match="static input shapes"):
        L.ConvLSTM1D(2, 2).build((None, 3, None, 1))


def test_conv_lstm_on_the_strict_device():
    with gt.device("strict:0"):
        x = gt.constant(_arr(1, (2, 3, 2, 4, 5)))
        layer = L.ConvLSTM2D(2, 2, data_format="channels_first", strides=(1, 2),
                             return_state=True, dropout=0.2, recurrent_dropout=0.3)
        layer.build(x.shape)
        _seeded(layer)
        with gt.GradientTape() as tape:
            tape.watch(x)
            outs = layer(x, mask=gt.constant([[True, False, True], [True, True, True]]),
                         training=True)
            loss = sum(gt.reduce_sum(o) for o in outs)
        grads = tape.gradient(loss, [x] + layer.trainable_weights)
        assert [tuple(g.shape) for g in grads] == [(2, 3, 2, 4, 5), (2, 2, 2, 8), (2, 2, 2, 8),
                                                   (8,)]
        plain = L.ConvLSTM2D(2, 2, data_format="channels_first", strides=(1, 2),
                             return_state=True)
        plain.build(x.shape)
        _seeded(plain)
        outs = plain(x)
    _close_sigs([_sig(o) for o in outs], CONV_REF["c8"][1])


# --- GroupQueryAttention ----------------------------------------------------------------------

AM = np.ones((2, 3, 5), bool)
AM[0, 1] = False
AM[1, :, 3:] = False
AM[1, 2, 0] = False

GQA_CASES = {
    "g1": (dict(head_dim=4, num_query_heads=4, num_key_value_heads=2), [(2, 3, 8)], {}),
    "g2": (dict(head_dim=3, num_query_heads=6, num_key_value_heads=3),
           [(2, 3, 8), (2, 5, 6), (2, 5, 7)],
           {"attention_mask": AM, "return_attention_scores": True}),
    "g3": (dict(head_dim=3, num_query_heads=6, num_key_value_heads=3),
           [(2, 3, 8), (2, 5, 6), (2, 5, 7)], {"attention_mask": AM}),
    "g4": (dict(head_dim=2, num_query_heads=3, num_key_value_heads=1, use_gate=True,
                use_bias=False), [(2, 4, 5)], {"use_causal_mask": True}),
    "g5": (dict(head_dim=2, num_query_heads=2, num_key_value_heads=2, sliding_window=2),
           [(1, 5, 4)], {"use_causal_mask": True, "return_attention_scores": True}),
    "g6": (dict(head_dim=2, num_query_heads=4, num_key_value_heads=2), [(2, 3, 4), (2, 4, 4)],
           {"query_mask": [[1, 1, 0], [1, 1, 1]], "value_mask": [[1, 0, 1, 1], [0, 0, 0, 0]]}),
    "g7": (dict(head_dim=2, num_query_heads=4, num_key_value_heads=2, dropout=0.3),
           [(2, 3, 4), (2, 4, 4)], {"value_mask": [[1, 0, 1, 1], [0, 0, 0, 0]]}),
    "g8": (dict(head_dim=2, num_query_heads=2, num_key_value_heads=1, sliding_window=1),
           [(1, 4, 4)], {}),
}


def _gqa(kwargs, shapes):
    layer = L.GroupQueryAttention(**kwargs)
    layer.build(shapes[0], shapes[1] if len(shapes) > 1 else shapes[0], *shapes[2:])
    _seeded(layer)
    return layer


@pytest.mark.parametrize("name", sorted(GQA_CASES))
def test_gqa_values_and_gradients_are_keras(name):
    """Outputs, scores and the gradients w.r.t. query, value, key and every weight: cross
    attention, attention masks (rows masked entirely, on Keras' fused and masked-softmax
    paths), causal masks, sliding windows, gates, Keras masks, dropout (inference)."""
    kwargs, shapes, extra = GQA_CASES[name]
    layer = _gqa(kwargs, shapes)
    ins = [gt.constant(_arr(1 + i, s)) for i, s in enumerate(shapes)]
    call = {k: gt.constant(np.array(v, bool)) if k.endswith("_mask") and k != "use_causal_mask"
            else v for k, v in extra.items()}
    with gt.GradientTape() as tape:
        for t in ins:
            tape.watch(t)
        out = layer(ins[0], ins[1] if len(ins) > 1 else ins[0],
                    key=ins[2] if len(ins) > 2 else None, **call)
        outs = list(out) if isinstance(out, tuple) else [out]
        loss = sum(gt.reduce_sum(o * _arr(99 + i, tuple(o.shape))) for i, o in enumerate(outs))
    grads = tape.gradient(loss, ins + layer.trainable_weights)
    shapes_out, want_outs, want_grads = GQA_REF[name]
    assert [tuple(o.shape) for o in outs] == shapes_out
    _close_sigs([_sig(o) for o in outs], want_outs)
    _close_sigs([_sig(g) for g in grads], want_grads)


def test_gqa_fully_masked_rows_as_keras():
    """A query that may attend nowhere: zero scores on the masked-softmax path (scores
    returned), the mean of the values on the fused path."""
    layer = _gqa(dict(head_dim=2, num_query_heads=2, num_key_value_heads=1), [(1, 2, 4)])
    x = _arr(1, (1, 2, 4))
    mask = np.array([[[True, False], [False, False]]])
    out, scores = layer(x, x, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(scores.numpy(), [[[[1, 0], [0, 0]], [[1, 0], [0, 0]]]])
    np.testing.assert_allclose(out.numpy(), [[[0.589137, -0.240998, -1.547088, -0.814531],
                                              [0.550631, 0.169216, -0.269986, -0.630121]]],
                               atol=2e-6)
    np.testing.assert_allclose(layer(x, x, attention_mask=mask).numpy(),
                               [[[0.589137, -0.240998, -1.547088, -0.814531],
                                 [0.462797, -0.227329, -1.417949, -0.799215]]], atol=2e-6)


def test_gqa_weights_regularizers_and_dropout():
    layer = _gqa(dict(head_dim=3, num_query_heads=4, num_key_value_heads=2, use_gate=True),
                 [(2, 3, 6), (2, 5, 7)])
    assert layer.name.startswith("grouped_query_attention")
    assert [w.name.split(":")[0] for w in layer.weights] == [
        "query/kernel", "query/bias", "key/kernel", "key/bias", "gate/kernel", "gate/bias",
        "value/kernel", "value/bias", "attention_output/kernel", "attention_output/bias"]
    assert [tuple(w.shape) for w in layer.weights] == [
        (6, 4, 3), (4, 3), (7, 2, 3), (2, 3), (6, 4, 3), (4, 3), (7, 2, 3), (2, 3), (4, 3, 6),
        (6,)]
    assert [type(s).__name__ for s in (layer._query_dense, layer._output_dense)] == \
        ["EinsumDense", "EinsumDense"]
    # Keras' losses: each projection's kernel penalty and activity penalty, and the layer's
    reg = L.GroupQueryAttention(2, 2, 1, activity_regularizer="l2",
                                kernel_regularizer=gt.keras.regularizers.L2(0.1))
    x = _arr(1, (1, 2, 4))
    reg.build(x.shape, x.shape)
    _seeded(reg)
    reg(x, x)
    np.testing.assert_allclose(sorted(float(v) for v in reg.losses),
                               [0.02138, 0.04215, 0.04946, 0.05875, 0.05875, 0.19915, 0.20949,
                                0.3026, 0.36047], atol=1e-5)
    # dropout drops probabilities while training only; the scores returned are undropped
    kwargs, shapes, _ = GQA_CASES["g7"]
    drop = _gqa(dict(kwargs, seed=1), shapes)
    q, v = _arr(1, shapes[0]), _arr(2, shapes[1])
    inference, s0 = drop(q, v, return_attention_scores=True)
    trained, s1 = drop(q, v, return_attention_scores=True, training=True)
    np.testing.assert_allclose(s0.numpy(), s1.numpy(), atol=1e-6)
    assert not np.allclose(inference.numpy(), trained.numpy(), atol=1e-4)


GQA_CONFIG = {
    "name": "gqa", "trainable": True, "dtype": "float32", "head_dim": 4, "num_query_heads": 4,
    "num_key_value_heads": 2, "use_bias": True, "use_gate": False, "sliding_window": None,
    "dropout": 0.0,
    "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                           "config": {"seed": None, "input_axes": None, "output_axes": None},
                           "registered_name": None},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {},
                         "registered_name": None},
    "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
    "kernel_constraint": None, "bias_constraint": None, "seed": None}


def test_gqa_config_round_trip():
    layer = L.GroupQueryAttention(4, 4, 2, name="gqa", flash_attention=False)
    config = layer.get_config()
    assert config == GQA_CONFIG and list(config) == list(GQA_CONFIG)
    odd = L.GroupQueryAttention(2, 6, 3, dropout=0.25, use_bias=False, sliding_window=3,
                                use_gate=True, seed=4, kernel_regularizer="l2",
                                bias_constraint="non_neg", bias_initializer="ones")
    again = L.GroupQueryAttention.from_config(odd.get_config())
    assert again.get_config() == odd.get_config()
    assert (again.dropout, again.sliding_window, again.use_gate) == (0.25, 3, True)
    kwargs, shapes, extra = GQA_CASES["g5"]
    a = _gqa(kwargs, shapes)
    b = L.GroupQueryAttention.from_config(a.get_config())
    b.build(shapes[0], shapes[0])
    b.set_weights(a.get_weights())
    x = _arr(1, shapes[0])
    np.testing.assert_array_equal(a(x, x, use_causal_mask=True).numpy(),
                                  b(x, x, use_causal_mask=True).numpy())


def test_gqa_keras_masks_and_symbolic_calls():
    """The inputs' Keras masks act as query_mask/value_mask; the output keeps the query's
    mask; symbolic calls give Keras' shapes."""
    kwargs, shapes, extra = GQA_CASES["g6"]
    layer = _gqa(kwargs, shapes)
    q, v = _arr(1, shapes[0]), _arr(2, shapes[1])
    qm, vm = np.array(extra["query_mask"], bool), np.array(extra["value_mask"], bool)
    q, v = q * qm[..., None], v * vm[..., None]
    want = layer(q, v, query_mask=qm, value_mask=vm)
    masking = L.Masking(0.0)
    got = layer(masking(q), masking(v))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)
    np.testing.assert_array_equal(got._keras_mask.numpy(), qm)
    assert not np.allclose(layer(q, v).numpy(), want.numpy(), atol=1e-3)
    inp = gt.keras.Input((3, 4))
    out, scores = L.GroupQueryAttention(2, 2, 1)(inp, inp, return_attention_scores=True)
    assert tuple(out.shape) == (None, 3, 4) and tuple(scores.shape) == (None, 2, 3, 3)
    assert layer.compute_output_shape((None, 3, 4), (None, 5, 4)) == (None, 3, 4)


def test_gqa_errors():
    with pytest.raises(ValueError, match="num_query_heads must be divisible"):
        L.GroupQueryAttention(2, 3, 2)
    with pytest.raises(ValueError, match="dropout is not supported when flash attention"):
        L.GroupQueryAttention(2, 2, 1, dropout=0.1, flash_attention=True)
    with pytest.raises(ValueError, match="sliding_window"):
        L.GroupQueryAttention(2, 2, 1, sliding_window=0)
    with pytest.raises(ValueError, match="head_dim"):
        L.GroupQueryAttention(0, 2, 1)
    x = _arr(1, (1, 2, 4))
    flash = L.GroupQueryAttention(2, 2, 1, flash_attention=True)
    with pytest.raises(ValueError, match="Flash attention is not supported"):
        flash(x, x)                          # (as Keras' TensorFlow backend)
    with pytest.raises(ValueError, match="returning attention scores is not supported"):
        flash(x, x, return_attention_scores=True)
    layer = L.GroupQueryAttention(2, 2, 1)
    with pytest.raises(TypeError, match="query and the value"):
        layer(x)
    with pytest.raises(ValueError, match=r"\[batch, time, features\]"):
        L.GroupQueryAttention(2, 2, 1)(_arr(1, (1, 2, 2, 4)), _arr(1, (1, 2, 2, 4)))
    with pytest.raises(ValueError, match="does not fit 2 queries and 2 keys"):
        layer(x, x, attention_mask=np.ones((1, 3, 2), bool))
    with pytest.raises(ValueError, match="value and key"):
        layer.compute_output_shape((None, 2, 4), (None, 3, 4), (None, 2, 4))


def test_gqa_on_the_strict_device():
    kwargs, shapes, extra = GQA_CASES["g2"]
    with gt.device("strict:0"):
        layer = _gqa(kwargs, shapes)
        ins = [gt.constant(_arr(1 + i, s)) for i, s in enumerate(shapes)]
        with gt.GradientTape() as tape:
            tape.watch(ins[0])
            out, scores = layer(ins[0], ins[1], key=ins[2], attention_mask=gt.constant(AM),
                                return_attention_scores=True)
            loss = gt.reduce_sum(out * _arr(99, tuple(out.shape))) + \
                gt.reduce_sum(scores * _arr(100, tuple(scores.shape)))
        grad = tape.gradient(loss, ins[0])
        causal = layer(ins[0], ins[1], key=ins[2], use_causal_mask=True)
    _close_sigs([_sig(out), _sig(scores), _sig(grad)], GQA_REF["g2"][1] + GQA_REF["g2"][2][:1])
    assert tuple(causal.shape) == (2, 3, 8)


# --- files TensorFlow saved ---------------------------------------------------------------------

def _x(shape, k=0):
    n = int(np.prod(shape))
    return np.sin(np.arange(n, dtype=np.float64) * 0.37 + k).reshape(shape).astype(np.float32)


def test_tf_saved_conv_lstm_and_gqa_models_load_and_predict_as_tensorflow():
    """conv_lstm.keras (two ConvLSTM2D, one with strides and go_backwards) and gqa.keras
    (GroupQueryAttention with a gate, and one self-attending causally in a sliding window),
    written by TensorFlow: the same weights and predictions."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    model = gt.keras.models.load_model(os.path.join(DATA, "conv_lstm.keras"))
    assert [type(layer).__name__ for layer in model.layers[1:3]] == ["ConvLSTM2D"] * 2
    np.testing.assert_allclose(
        [float(np.sum(w, dtype=np.float64)) for w in model.get_weights()],
        [-3.3435703, 3.4615813, 0.8674453, 4.4101766, 2.9782058, 2.6251467, 1.7012835,
         0.8779627], rtol=1e-6)
    np.testing.assert_allclose(model.predict(_x((2, 3, 4, 4, 2)), verbose=0),
                               [[0.1789969, 0.9674011], [0.162493, 0.9106224]], rtol=1e-4,
                               atol=2e-6)
    model = gt.keras.models.load_model(os.path.join(DATA, "gqa.keras"))
    gqa = model.get_layer("gqa")
    assert type(gqa).__name__ == "GroupQueryAttention" and gqa.use_gate
    assert model.get_layer("gqa_self").sliding_window == 2
    assert len(model.get_weights()) == 20
    np.testing.assert_allclose(model.predict([_x((2, 4, 6)), _x((2, 5, 6), 1)], verbose=0),
                               [[0.3589115, 0.1869016, -0.6409417],
                                [0.2643425, 0.1757095, -0.650714]], rtol=1e-4, atol=2e-6)
