"""The Keras surface that TF scripts use: add_weight's Keras 3 signature, weight constraints
(keras.constraints, <weight>_constraint= on layers, applied by the optimizers, saved with the
model), the functional merge helpers, Keras' activations (hard_sigmoid, hard_silu, mish,
relu's options) and ReLU layer, keras.backend, compute_output_shape, and the layers
UpSampling1D, ZeroPadding1D, Cropping1D, ActivityRegularization, AlphaDropout,
Conv1DTranspose, StackedRNNCells / RNN([cells]), AdditiveAttention, channels_first Conv2D
and pooling. Expected numbers come from TensorFlow 2.21 (Keras 3.15), hard-coded here."""
import json

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

keras = gt.keras
L = keras.layers
C = keras.constraints
A = keras.activations

XA = np.array([-4, -3, -2.5, -1, -0.5, 0, 0.5, 1, 2.5, 3, 4, 7], np.float32)
W = np.array([[3., -4., 0.1], [0., 1., -0.2], [1., 2., 0.3]], np.float32)
XS = np.arange(24, dtype=np.float32).reshape(2, 4, 3) / 10

# --- numbers from TensorFlow 2.21 ------------------------------------------------------------

ATT_OUT = np.array(
    [[[0.002292, 0.349797, -0.335852, -0.13224], [-0.245693, 0.392021, -0.346897, -0.0151],
    [0.270624, 0.335259, -0.23124, -0.203918]], [[0.239075, 0.379751, -0.353215, 0.359481],
    [0.119652, 0.284166, -0.258246, 0.61624], [0.249575, 0.147684, 0.239333, 0.574105]]])

ATT_OUT_MASK = np.array(
    [[[0.109058, 0.290655, -0.487096, -0.251339], [-0.101831, 0.285361, -0.611483,
    -0.192354], [0.0, 0.0, 0.0, 0.0]], [[0.239075, 0.379751, -0.353215, 0.359481],
    [0.119652, 0.284166, -0.258246, 0.61624], [0.249575, 0.147684, 0.239333, 0.574105]]])

ATT_SCORES_MASK = np.array(
    [[[0.338949, 0.307927, 0.353123, 0.0, 0.0], [0.199661, 0.518539, 0.281801, 0.0, 0.0],
    [0.451116, 0.0429, 0.505985, 0.0, 0.0]], [[0.218591, 0.071104, 0.450498, 0.194573,
    0.065233], [0.255885, 0.042328, 0.583111, 0.03476, 0.083915], [0.348411, 0.099908,
    0.336031, 0.084327, 0.131323]]])

ATT_NOSCALE = np.array(
    [[[-0.632564, 0.748449, 0.669599, 0.648724], [-0.426968, 0.621638, 0.391079, 0.420189],
    [-0.933878, 1.027484, 0.990004, 0.778033]], [[0.499027, 0.13587, 0.737996, 0.738994],
    [1.106517, 0.720559, 0.454276, -0.318786], [0.399795, -0.028679, 0.965052, 1.104975]]])

SEQ = np.array(
    [[[0.158556, 0.010764], [0.225094, -0.018499], [0.264503, -0.012513], [0.290892,
    0.000805]], [[0.153438, 0.022807], [0.240422, 0.043326], [0.295761, 0.050581],
    [0.307462, 0.032182]]])

LSTM_H = np.array(
    [[0.03182, -0.154185, -0.152929], [-0.059954, 0.039538, 0.052331]])

LSTM_C = np.array(
    [[0.113416, -0.255402, -0.38464], [-0.109021, 0.082405, 0.132662]])

GRU_H = np.array(
    [[0.290892, 0.000805], [0.307462, 0.032182]])

SEQ_INIT = np.array(
    [[[0.316189, 0.185702], [0.307251, 0.073618], [0.309785, 0.044881], [0.317215,
    0.038546]], [[0.317318, 0.215905], [0.332057, 0.171149], [0.345201, 0.130849],
    [0.334792, 0.081314]]])

CV_OUT = np.array(
    [[[[4.227387, -8.403649, -3.65349], [-1.290307, 6.248366, 3.129105], [4.489196,
    0.709348, 1.472351]], [[-4.213394, -0.06126, -4.609102], [-6.501287, 8.166492,
    6.434006], [-1.21313, 0.202741, -0.715874]]], [[[0.929988, -0.666966, -3.5571],
    [-10.677063, -2.321185, 0.403991], [2.051248, -0.721404, 0.984552]], [[-1.083485,
    -4.117712, -3.082857], [-2.622573, -9.332875, -3.697541], [-1.828393, 4.159233,
    -1.745992]]]])

MP_CF = np.array(
    [[1.066325, 2.345808, 2.345808, 0.852748], [0.163244, 2.345808, 2.345808, 0.767789],
    [-0.185774, -0.005876, 2.755808, 2.755808], [-0.185774, -0.827402, 2.755808, 2.755808],
    [-0.744361, 1.422379, 1.422379, 0.451685]])

AP_CF = np.array(
    [[0.361597, -0.052618, -0.010194], [-0.375896, -0.553441, 0.471848], [0.426456,
    0.693296, -1.016823]])

GRU_HS = np.array(
    [[0.315432, 0.315432], [0.136085, 0.136085]])

FIT_K1 = np.array(
    [[[[-0.129884, -0.129884]], [[-0.137592, -0.137592]]], [[[-0.160719, -0.160719]],
    [[-0.168428, -0.168428]]]])

FIT_B1 = np.array(
    [-62.775002, -62.775002])

FIT_B2 = np.array(
    [-5.58])
C1T_SAME_S2 = np.array(
    [[[0.21487, -0.18125], [0.05396, -0.25406], [0.13403, -0.31969], [0.51816, -0.80827],
    [-0.81268, -0.81829], [0.98237, -1.36248], [-1.75938, -1.31689], [1.44657, -1.91669]],
    [[0.97573, -0.26426], [1.91078, -2.47091], [-3.6528, -2.31409], [2.37498, -3.02512],
    [-4.5995, -2.81269], [2.83918, -3.57933], [-5.54621, -3.31129], [3.30339, -4.13354]]])

C1T_VALID_S3_K2 = np.array(
    [[[0.24383, -0.02312], [0.23102, 0.33785], [0.1, -0.2], [0.24399, 0.50137], [0.94851,
    1.26916], [0.1, -0.2], [0.24415, 1.02585], [1.66601, 2.20047], [0.1, -0.2], [0.24431,
    1.55034], [2.3835, 3.13177], [0.1, -0.2]], [[0.24447, 2.07483], [3.10099, 4.06308],
    [0.1, -0.2], [0.24463, 2.59931], [3.81849, 4.99439], [0.1, -0.2], [0.24479, 3.1238],
    [4.53598, 5.9257], [0.1, -0.2], [0.24495, 3.64829], [5.25347, 6.857], [0.1, -0.2]]])

C1T_SAME_OP1 = np.array(
    [[[0.30299, -0.06915], [0.22548, -0.45075], [1.57612, -0.25486], [0.08647, -0.79569],
    [2.65829, -0.5494], [-0.05254, -1.14062], [3.74046, -0.84394], [-0.19155, -1.48555]],
    [[4.47193, -0.73671], [-0.33057, -1.83049], [5.90482, -1.43303], [-0.46958, -2.17542],
    [6.98699, -1.72757], [-0.60859, -2.52035], [8.06917, -2.02212], [-0.7476, -2.86529]]])

# --- add_weight ---------------------------------------------------------------------------------

class _Weights(L.Layer):
    def build(self, shape):
        self.a = self.add_weight(shape=(2,))
        self.b = self.add_weight(shape=(2,), initializer="ones", constraint=C.NonNeg())
        self.c = self.add_weight((3,), "zeros")
        self.d = self.add_weight(shape=(), dtype="int32")
        self.e = self.add_weight("legacy", (2,), "ones", False)       # Keras 2 / earlier form

    def call(self, x):
        return x


def test_add_weight_takes_keras3_arguments_and_the_earlier_form():
    layer = _Weights(name="w")
    layer(np.zeros((1, 2), np.float32))
    assert layer.built
    names = [v.name for v in (layer.a, layer.b, layer.c, layer.d)]
    assert all(n.startswith("w/variable") for n in names) and len(set(names)) == 4
    assert layer.e.name == "w/legacy:0" and not layer.e.trainable
    assert tuple(layer.a.shape) == (2,) and layer.a.dtype == gt.float32
    np.testing.assert_array_equal(layer.b.numpy(), [1, 1])
    np.testing.assert_array_equal(layer.c.numpy(), [0, 0, 0])
    assert layer.d.dtype == gt.int32 and tuple(layer.d.shape) == () and int(layer.d.numpy()) == 0
    assert isinstance(layer.b.constraint, C.NonNeg) and layer.a.constraint is None
    assert len(layer.trainable_variables) == 4
    with pytest.raises(TypeError, match="at most 3 positional"):
        layer.add_weight((2,), "ones", "float32", True)
    with pytest.raises(TypeError, match="shape given both"):
        layer.add_weight((2,), shape=(3,))
    with pytest.raises(ValueError, match="fully defined"):
        layer.add_weight(shape=(None, 2))


def test_a_build_called_directly_marks_the_layer_built():
    d = L.Dense(2)
    d.build((None, 3))
    assert d.built
    kernel = d.kernel
    d(np.ones((1, 3), np.float32))
    assert d.kernel is kernel                  # the first call does not build again


# --- constraints --------------------------------------------------------------------------------

def test_constraints_match_keras():
    cases = [
        (C.MaxNorm(2.0), [[1.8973665, -1.745743, 0.09999998], [0.0, 0.43643576, -0.19999996],
                          [0.63245552, 0.87287152, 0.29999995]]),
        (C.MaxNorm(2.0, axis=1), [[1.19976008, -1.59968007, 0.039992],
                                  [0.0, 0.99999988, -0.19999997],
                                  [0.88648444, 1.77296889, 0.26594535]]),
        (C.NonNeg(), [[3.0, 0.0, 0.1], [0.0, 1.0, 0.0], [1.0, 2.0, 0.3]]),
        (C.UnitNorm(), [[0.94868326, -0.87287152, 0.26726115], [0.0, 0.21821788, -0.53452229],
                        [0.31622776, 0.43643576, 0.8017835]]),
        (C.UnitNorm(axis=[0, 1]), [[0.53760332, -0.71680444, 0.01792011],
                                   [0.0, 0.17920111, -0.03584022],
                                   [0.17920111, 0.35840222, 0.05376033]]),
        (C.MinMaxNorm(0.5, 1.5, rate=0.7), [[1.89611745, -2.11651516, 0.12354139],
                                            [0.0, 0.52912879, -0.24708278],
                                            [0.63203913, 1.05825758, 0.37062418]]),
        (C.MinMaxNorm(1.0, 2.0, axis=1), [[1.19976008, -1.59968007, 0.039992],
                                          [0.0, 0.99999988, -0.19999997],
                                          [0.88648444, 1.77296889, 0.26594535]]),
    ]
    for c, want in cases:
        np.testing.assert_allclose(c(gt.constant(W)).numpy(), want, rtol=1e-5, atol=1e-7,
                                   err_msg=repr(c))
    assert C.Constraint()(W) is W


def test_constraints_by_name_and_config():
    assert C.serialize(C.MaxNorm(3)) == {"module": "keras.constraints", "class_name": "MaxNorm",
                                         "config": {"max_value": 3, "axis": 0},
                                         "registered_name": None}
    assert C.get("max_norm").get_config() == {"max_value": 2, "axis": 0}
    assert isinstance(C.get("non_neg"), C.NonNeg) and isinstance(C.get("NonNeg"), C.NonNeg)
    u = C.get({"class_name": "UnitNorm", "config": {"axis": 1}})
    assert isinstance(u, C.UnitNorm) and u.axis == 1
    again = C.deserialize(C.serialize(C.MinMaxNorm(0.1, 0.9, 0.5, [0, 1])))
    assert again.get_config() == {"min_value": 0.1, "max_value": 0.9, "rate": 0.5,
                                  "axis": [0, 1]}
    assert C.get(None) is None and C.serialize(None) is None
    fn = lambda w: w                                                   # noqa: E731
    assert C.get(fn) is fn
    with pytest.raises(ValueError, match="unknown constraint 'nope'"):
        C.get("nope")
    with pytest.raises(TypeError, match="axis must be an int"):
        C.MaxNorm(2, axis="x")
    with pytest.raises(ValueError, match="min_value 2 is larger"):
        C.MinMaxNorm(2, 1)


def test_layers_take_weight_constraints_and_optimizers_apply_them():
    d = L.Dense(2, kernel_constraint=C.MaxNorm(0.5), bias_constraint="non_neg",
                kernel_initializer="ones")
    m = keras.Sequential([keras.Input((3,)), d])
    assert isinstance(d.kernel.constraint, C.MaxNorm) and isinstance(d.bias.constraint, C.NonNeg)
    cfg = d.get_config()
    assert cfg["kernel_constraint"] == {"module": "keras.constraints", "class_name": "MaxNorm",
                                        "config": {"max_value": 0.5, "axis": 0},
                                        "registered_name": None}
    assert cfg["bias_constraint"] == {"module": "keras.constraints", "class_name": "NonNeg",
                                      "config": {}, "registered_name": None}
    m.compile("sgd", "mse")
    m.fit(np.ones((4, 3), np.float32), np.full((4, 2), -5.0, np.float32), epochs=1,
          batch_size=4, verbose=0)
    np.testing.assert_allclose(d.kernel.numpy(), np.full((3, 2), 0.28867513), rtol=1e-6)
    np.testing.assert_array_equal(d.bias.numpy(), [0.0, 0.0])
    d.kernel.assign(np.full((3, 2), 9.0, np.float32))                  # assign: unconstrained
    np.testing.assert_array_equal(d.kernel.numpy(), np.full((3, 2), 9.0))


def test_constraints_in_a_conv_model_fit_as_in_keras():
    m = keras.Sequential([
        keras.Input((4, 4, 1)),
        L.Conv2D(2, 2, kernel_constraint=C.MaxNorm(0.3, axis=[0, 1, 2]),
                 kernel_initializer="ones", bias_initializer="zeros"),
        L.Flatten(), L.Dense(1, kernel_constraint="non_neg", kernel_initializer="ones")])
    m.compile(keras.optimizers.SGD(0.1), "mse")
    x = np.arange(32, dtype=np.float32).reshape(2, 4, 4, 1) / 32
    m.fit(x, np.array([[1.0], [-1.0]], np.float32), epochs=2, verbose=0, batch_size=2,
          shuffle=False)
    np.testing.assert_allclose(m.layers[0].kernel.numpy(), FIT_K1, rtol=1e-4)
    np.testing.assert_allclose(m.layers[0].bias.numpy(), FIT_B1, rtol=1e-5)
    np.testing.assert_array_equal(m.layers[2].kernel.numpy(), np.zeros((18, 1)))
    np.testing.assert_allclose(m.layers[2].bias.numpy(), FIT_B2, rtol=1e-5)


@pytest.mark.parametrize("make,weights", [
    (lambda: L.Conv1D(2, 2, kernel_constraint="non_neg", bias_constraint="non_neg"),
     ["kernel", "bias"]),
    (lambda: L.Conv2DTranspose(2, 2, kernel_constraint="non_neg"), ["kernel"]),
    (lambda: L.DepthwiseConv2D(2, depthwise_constraint="non_neg"), ["depthwise_kernel"]),
    (lambda: L.SeparableConv2D(2, 2, depthwise_constraint="non_neg",
                               pointwise_constraint=C.UnitNorm()),
     ["depthwise_kernel", "pointwise_kernel"]),
    (lambda: L.Embedding(5, 2, embeddings_constraint="unit_norm"), ["embeddings"]),
    (lambda: L.BatchNormalization(gamma_constraint="non_neg", beta_constraint="non_neg"),
     ["gamma", "beta"]),
    (lambda: L.LayerNormalization(gamma_constraint="non_neg"), ["gamma"]),
    (lambda: L.GroupNormalization(1, beta_constraint="non_neg"), ["beta"]),
    (lambda: L.PReLU(alpha_constraint="non_neg"), ["alpha"]),
])
def test_every_constrainable_weight_gets_its_constraint(make, weights):
    layer = make()
    x = np.ones((2, 5), np.int64) if isinstance(layer, L.Embedding) else np.ones(
        (2, 4, 4, 3) if "2D" in type(layer).__name__ or "Normalization" in
        type(layer).__name__ else (2, 4, 3), np.float32)
    layer(x)
    for name in weights:
        assert getattr(layer, name).constraint is not None, name
    again = L.deserialize(json.loads(json.dumps(L.serialize(layer))))
    assert again.get_config() == layer.get_config()


def test_recurrent_layers_take_constraints():
    lstm = L.LSTM(2, kernel_constraint="max_norm", recurrent_constraint=C.UnitNorm(),
                  bias_constraint="non_neg")
    lstm(XS)
    cell = lstm.cell
    assert isinstance(cell.kernel.constraint, C.MaxNorm)
    assert isinstance(cell.recurrent_kernel.constraint, C.UnitNorm)
    assert isinstance(cell.bias.constraint, C.NonNeg)
    cfg = lstm.get_config()
    assert [cfg[k]["class_name"] for k in ("kernel_constraint", "recurrent_constraint",
                                            "bias_constraint")] == ["MaxNorm", "UnitNorm",
                                                                    "NonNeg"]


def test_a_model_with_constraints_saves_and_loads(tmp_path):
    inp = keras.Input((4,))
    h = L.Dense(3, kernel_constraint=C.MaxNorm(1.5), bias_constraint="non_neg")(inp)
    out = L.Dense(1, kernel_constraint=C.MinMaxNorm(0.1, 0.5, rate=0.5))(h)
    model = keras.Model(inp, out)
    model.compile("sgd", "mse")
    path = model.save(str(tmp_path / "c.keras"))
    again = keras.models.load_model(path)
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(again(x).numpy(), model(x).numpy(), rtol=1e-6)
    dense = again.layers[1]
    assert isinstance(dense.kernel.constraint, C.MaxNorm)
    assert dense.kernel.constraint.max_value == 1.5
    assert isinstance(dense.bias.constraint, C.NonNeg)
    assert again.layers[2].kernel.constraint.get_config() == {
        "min_value": 0.1, "max_value": 0.5, "rate": 0.5, "axis": 0}


class _Clip(C.Constraint):
    def __init__(self, limit=1.0):
        self.limit = limit

    def __call__(self, w):
        return gt.clip_by_value(w, -self.limit, self.limit)

    def get_config(self):
        return {"limit": self.limit}


def test_a_custom_constraint_loads_through_custom_objects(tmp_path):
    model = keras.Sequential([keras.Input((2,)), L.Dense(2, kernel_constraint=_Clip(0.25))])
    path = model.save(str(tmp_path / "custom.keras"))
    again = keras.models.load_model(path, custom_objects={"_Clip": _Clip})
    c = again.layers[0].kernel.constraint
    assert isinstance(c, _Clip) and c.limit == 0.25
    with pytest.raises(Exception, match="_Clip"):
        keras.models.load_model(path)


# --- merge helpers ------------------------------------------------------------------------------

def test_merge_helpers_on_symbolic_and_eager_tensors():
    i1, i2 = keras.Input((3,)), keras.Input((3,))
    shapes = {f: tuple(getattr(L, f)([i1, i2]).shape) for f in
              ("concatenate", "add", "subtract", "multiply", "average", "maximum", "minimum")}
    assert shapes == {"concatenate": (None, 6), "add": (None, 3), "subtract": (None, 3),
                      "multiply": (None, 3), "average": (None, 3), "maximum": (None, 3),
                      "minimum": (None, 3)}
    assert tuple(L.dot([i1, i2], axes=1).shape) == (None, 1)
    model = keras.Model([i1, i2], L.dot([i1, i2], axes=1, normalize=True))
    a1 = np.array([[1., 2, 3]], np.float32)
    a2 = np.array([[4., 5, 6]], np.float32)
    np.testing.assert_allclose(model([a1, a2]).numpy(), [[0.97463185]], rtol=1e-6)
    np.testing.assert_allclose(L.dot([a1, a2], axes=-1, normalize=True).numpy(),
                               [[0.97463185]], rtol=1e-6)
    np.testing.assert_array_equal(L.concatenate([a1, a2], axis=0).numpy(),
                                  [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(L.add([a1, a2]).numpy(), [[5, 7, 9]])
    np.testing.assert_array_equal(L.subtract([a1, a2]).numpy(), [[-3, -3, -3]])
    np.testing.assert_array_equal(L.multiply([a1, a2, a1]).numpy(), [[4, 20, 54]])
    np.testing.assert_array_equal(L.average([a1, a2]).numpy(), [[2.5, 3.5, 4.5]])
    np.testing.assert_array_equal(L.maximum([a1, -a2]).numpy(), [[1, 2, 3]])
    np.testing.assert_array_equal(L.minimum([a1, -a2]).numpy(), [[-4, -5, -6]])
    assert L.add([a1, a2], name="plus") is not None
    with pytest.raises(ValueError, match="at least 2 inputs"):
        L.add([a1])


# --- activations --------------------------------------------------------------------------------

def test_keras_activations_match_keras():
    h = [0.0, 0.0, 0.08333334, 0.33333334, 0.41666666, 0.5, 0.58333331, 0.66666669,
         0.91666669, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(A.hard_sigmoid(XA).numpy(), h, rtol=1e-6)
    np.testing.assert_allclose(A.hard_silu(XA).numpy(), XA * np.array(h, np.float32),
                               rtol=1e-6)
    assert A.hard_swish is A.hard_silu and A.get("hard_swish") is A.hard_silu
    mish = [-0.07259174, -0.14564748, -0.19681621, -0.3034015, -0.22074378, 0.0, 0.37524518,
            0.86509842, 2.47139239, 2.98653507, 3.99741244, 6.99998903]
    np.testing.assert_allclose(A.mish(XA).numpy(), mish, rtol=1e-6)
    np.testing.assert_allclose(A.elu(XA, alpha=0.5).numpy(), [
        -0.49084219, -0.47510648, -0.45895749, -0.31606027, -0.19673467, 0.0, 0.5, 1.0, 2.5,
        3.0, 4.0, 7.0], rtol=1e-6)
    np.testing.assert_allclose(A.leaky_relu(XA).numpy(), np.where(XA > 0, XA, 0.2 * XA),
                               rtol=1e-6)


def test_keras_relu_options():
    t = A.relu(XA, threshold=1.0).numpy()
    np.testing.assert_array_equal(t, [0, 0, 0, 0, 0, 0, 0, 0, 2.5, 3, 4, 7])
    assert not np.signbit(t).any()                     # +0.0 where thresholded, as Keras
    np.testing.assert_allclose(A.relu(XA, negative_slope=0.1, max_value=3.0,
                                      threshold=0.5).numpy(),
                               [-0.45, -0.35, -0.3, -0.15, -0.1, -0.05, 0, 1, 2.5, 3, 3, 3],
                               rtol=1e-6)
    np.testing.assert_allclose(A.relu(XA, negative_slope=0.1).numpy(),
                               np.where(XA > 0, XA, 0.1 * XA), rtol=1e-6)
    np.testing.assert_array_equal(A.relu(XA, max_value=6).numpy(), np.clip(XA, 0, 6))
    np.testing.assert_allclose(A.relu(XA, negative_slope=0.5, threshold=1.0).numpy(),
                               [-2.5, -2, -1.75, -1, -0.75, -0.5, -0.25, 0, 2.5, 3, 4, 7])
    with pytest.raises(ValueError, match="negative_slope must be >= 0"):
        A.relu(XA, negative_slope=-1)


def test_activation_gradients():
    x = np.array([-3.7, -2.2, -0.9, -0.3, 0.4, 1.1, 2.6, 3.8])
    for fn in (A.hard_sigmoid, A.hard_silu, A.mish, lambda v: A.elu(v, alpha=0.5),
               A.leaky_relu, lambda v: A.relu(v, negative_slope=0.2, max_value=2.0,
                                              threshold=0.2)):
        check_grads(fn, [x])


def test_activations_by_name():
    assert A.serialize(A.relu) == "relu" and A.serialize(A.hard_sigmoid) == "hard_sigmoid"
    assert A.serialize(A.get("swish")) == "silu"
    assert A.deserialize("relu") is A.relu and A.get("relu") is A.relu
    assert A.get(None).__name__ == "linear" and A.get("tanh") is A.tanh
    assert A.get({"class_name": "function", "config": "mish"}) is A.mish
    with pytest.raises(ValueError, match="Could not interpret activation"):
        A.get("nope")
    d = L.Dense(2, activation="mish")
    assert d.get_config()["activation"] == "mish"
    assert L.Dense(2, activation=A.relu).get_config()["activation"] == "relu"


def test_hard_sigmoid_as_recurrent_activation():
    rng, *_ = _attention_inputs()
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    g = L.GRU(2, recurrent_activation="hard_sigmoid")
    g(x)
    g.set_weights([np.full(w.shape, 0.3, np.float32) for w in g.get_weights()])
    np.testing.assert_allclose(g(x).numpy(), GRU_HS, atol=2e-5)
    assert g.get_config()["recurrent_activation"] == "hard_sigmoid"
    lstm = L.LSTM(3, recurrent_activation="hard_sigmoid", activation="hard_silu")
    assert lstm.get_config()["activation"] == "hard_silu"
    assert L.deserialize(L.serialize(lstm)).cell.recurrent_activation is A.hard_sigmoid


# --- ReLU layer ---------------------------------------------------------------------------------

def test_relu_layer():
    layer = L.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.5)
    np.testing.assert_allclose(layer(XA).numpy(), [-0.45, -0.35, -0.3, -0.15, -0.1, -0.05, 0.0,
                                                   1.0, 2.0, 2.0, 2.0, 2.0], rtol=1e-6)
    cfg = layer.get_config()
    assert (cfg["max_value"], cfg["negative_slope"], cfg["threshold"]) == (2.0, 0.1, 0.5)
    np.testing.assert_array_equal(L.ReLU()(XA).numpy(), np.maximum(XA, 0))
    for bad in ({"negative_slope": -1}, {"max_value": -1.0}, {"threshold": None}):
        with pytest.raises(ValueError, match="must be a number >= 0"):
            L.ReLU(**bad)


# --- backend and utils --------------------------------------------------------------------------

def test_backend_calls():
    B = keras.backend
    assert B.epsilon() == 1e-7 and B.floatx() == "float32"
    assert B.image_data_format() == "channels_last"
    assert B.int_shape(keras.Input((3, 4))) == (None, 3, 4)
    assert B.int_shape(np.zeros((2, 3))) == (2, 3)
    v = gt.Variable(np.zeros(2, np.float32))
    B.set_value(v, [1.0, 2.0])
    np.testing.assert_array_equal(B.get_value(v), [1, 2])
    B.set_epsilon(1e-4)
    try:
        assert B.epsilon() == 1e-4
        np.testing.assert_allclose(C.UnitNorm()(np.array([[0.0]], np.float32)).numpy(), 0)
        from gradtape import losses
        assert losses.EPSILON == 1e-4
    finally:
        B.set_epsilon(1e-7)
    B.set_floatx("float64")
    try:
        assert L.Dense(2).dtype == gt.float64 and keras.Input((2,)).dtype == gt.float64
    finally:
        B.set_floatx("float32")
    assert L.Dense(2).dtype == gt.float32
    with pytest.raises(ValueError, match="unknown floatx"):
        B.set_floatx("int32")
    B.clear_session()
    assert L.Dense(1).name == "dense"


def test_set_random_seed_makes_draws_repeat():
    import random
    keras.utils.set_random_seed(5)
    a = (random.random(), np.random.rand(), gt.random.normal((3,)).numpy(),
         L.Dense(2)(np.ones((1, 2), np.float32)).numpy())
    keras.utils.set_random_seed(5)
    b = (random.random(), np.random.rand(), gt.random.normal((3,)).numpy(),
         L.Dense(2)(np.ones((1, 2), np.float32)).numpy())
    assert a[0] == b[0] and a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_array_equal(a[3], b[3])


# --- compute_output_shape -----------------------------------------------------------------------

def test_compute_output_shape():
    assert L.Dense(3).compute_output_shape((None, 4)) == (None, 3)
    assert L.Conv2D(4, 3, strides=2).compute_output_shape((None, 9, 9, 2)) == (None, 4, 4, 4)
    assert L.LSTM(5, return_sequences=True).compute_output_shape((None, 7, 2)) == (None, 7, 5)
    assert L.Flatten().compute_output_shape((None, 3, 4)) == (None, 12)
    assert L.LSTM(5, return_state=True).compute_output_shape((None, 7, 2)) == (
        (None, 5), (None, 5), (None, 5))
    assert L.Embedding(10, 3).compute_output_shape((None, 5)) == (None, 5, 3)
    assert L.Concatenate().compute_output_shape([(None, 3), (None, 4)]) == (None, 7)
    assert L.Conv1DTranspose(2, 3, strides=2).compute_output_shape((None, 4, 3)) == (None, 9, 2)
    assert L.RNN([L.LSTMCell(3), L.GRUCell(2)]).compute_output_shape((None, 5, 3)) == (None, 2)
    d = L.Dense(3)
    assert d.compute_output_shape((None, 4)) == (None, 3)
    assert not d.built and d.variables == []                 # an unbuilt layer stays so
    d(np.zeros((2, 4), np.float32))
    assert d.compute_output_shape((None, 4)) == (None, 3)
    assert not d.__dict__.get("_inbound_nodes")
    m = keras.Sequential([L.Dense(4), L.Dense(2)])
    assert m.compute_output_shape((None, 3)) == (None, 2)
    with pytest.raises(TypeError, match="expected a shape"):
        L.Dense(3).compute_output_shape("x")


# --- layers -------------------------------------------------------------------------------------

def test_upsampling_padding_cropping_1d():
    up = L.UpSampling1D(3)
    y = up(XS).numpy()
    assert y.shape == (2, 12, 3)
    np.testing.assert_array_equal(y[0, :5], [XS[0, 0]] * 3 + [XS[0, 1]] * 2)
    zp = L.ZeroPadding1D((1, 2))
    y = zp(XS).numpy()
    assert y.shape == (2, 7, 3) and zp.get_config()["padding"] == (1, 2)
    np.testing.assert_array_equal(y[:, 1:5], XS)
    assert not y[:, [0, 5, 6]].any()
    assert L.ZeroPadding1D(2).get_config()["padding"] == (2, 2)
    cf = L.ZeroPadding1D(1, data_format="channels_first")(XS).numpy()
    assert cf.shape == (2, 4, 5)
    cr = L.Cropping1D((1, 2))
    np.testing.assert_array_equal(cr(XS).numpy(), XS[:, 1:2])
    assert L.Cropping1D(1).get_config()["cropping"] == (1, 1)
    with pytest.raises(ValueError, match="leaves nothing"):
        L.Cropping1D((2, 2))(XS)
    with pytest.raises(ValueError, match="non-negative"):
        L.ZeroPadding1D(-1)


def test_activity_regularization():
    layer = L.ActivityRegularization(l1=0.1, l2=0.01)
    np.testing.assert_array_equal(layer(XS).numpy(), XS)
    (loss,) = layer.losses
    np.testing.assert_allclose(loss.numpy(), 1.5962, rtol=1e-5)         # TF's value
    assert layer.get_config()["l1"] == 0.1 and "activity_regularizer" not in layer.get_config()


def test_alpha_dropout():
    x = np.random.default_rng(4).standard_normal((400, 50)).astype(np.float32)
    layer = L.AlphaDropout(0.3, seed=1)
    np.testing.assert_array_equal(layer(x).numpy(), x)                  # inference: identity
    y = layer(x, training=True).numpy()
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.3) * (1 + 0.3 * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * 0.3
    dropped = np.isclose(y, a * alpha_p + b, atol=1e-6)
    assert 0.27 < dropped.mean() < 0.33
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-5, atol=1e-6)
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05          # SELU's fixed point kept
    z = L.AlphaDropout(0.5, noise_shape=(None, 1), seed=2)(x, training=True).numpy()
    row_dropped = np.isclose(z, z[:, :1], atol=1e-6).all(axis=1)
    assert row_dropped.any()
    assert layer.get_config()["rate"] == 0.3 and layer.get_config()["seed"] == 1
    with pytest.raises(ValueError, match="rate must be a float"):
        L.AlphaDropout(1.5)


def test_conv1d_transpose_matches_keras():
    rng = np.random.default_rng(0)
    expected = {("same", 2, 3, None): C1T_SAME_S2, ("valid", 3, 2, None): C1T_VALID_S3_K2,
                ("same", 2, 3, 1): C1T_SAME_OP1}
    for pad, st, k, op in [("same", 2, 3, None), ("valid", 2, 3, None), ("valid", 3, 2, None),
                           ("same", 2, 3, 1), ("valid", 1, 3, None)]:
        ct = L.Conv1DTranspose(2, k, strides=st, padding=pad, output_padding=op)
        ct.build((None, 4, 3))
        assert tuple(ct.kernel.shape) == (k, 2, 3)
        ct.set_weights([rng.standard_normal((k, 2, 3)).astype(np.float32),
                        np.array([0.1, -0.2], np.float32)])
        y = ct(XS).numpy()
        want_len = {"same": 4 * st}.get(pad, 3 * st + max(k, st))
        assert y.shape == (2, want_len, 2)
        if (pad, st, k, op) in expected:
            np.testing.assert_allclose(y, expected[(pad, st, k, op)], atol=2e-5)
    ct = L.Conv1DTranspose(2, 3, strides=2, padding="same", activation="relu")
    cfg = ct.get_config()
    assert cfg["kernel_size"] == (3,) and cfg["strides"] == (2,) and cfg["output_padding"] is None
    x = np.random.default_rng(1).standard_normal((1, 3, 2))
    layer = L.Conv1DTranspose(2, 3, strides=2, padding="same", output_padding=1,
                              dtype="float64")
    layer(x)
    check_grads(lambda a: layer(a), [x])
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(layer(x) ** 2)
    g = tape.gradient(loss, layer.kernel).numpy()
    k0, eps = layer.kernel.numpy(), 1e-6
    bumped = k0.copy()
    bumped[1, 0, 1] += eps
    layer.kernel.assign(bumped)
    up = float(gt.reduce_sum(layer(x) ** 2).numpy())
    bumped[1, 0, 1] -= 2 * eps
    layer.kernel.assign(bumped)
    down = float(gt.reduce_sum(layer(x) ** 2).numpy())
    np.testing.assert_allclose(g[1, 0, 1], (up - down) / (2 * eps), rtol=1e-6)


def test_convolution_aliases():
    assert L.Convolution1D is L.Conv1D and L.Convolution2D is L.Conv2D
    assert L.Convolution2DTranspose is L.Conv2DTranspose
    assert L.Convolution1DTranspose is L.Conv1DTranspose


def _attention_inputs():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v = rng.standard_normal((2, 5, 4)).astype(np.float32)
    k = rng.standard_normal((2, 5, 4)).astype(np.float32)
    return rng, q, v, k


def test_additive_attention_matches_keras():
    _, q, v, k = _attention_inputs()
    at = L.AdditiveAttention()
    at([q, v, k])
    assert [tuple(w.shape) for w in at.weights] == [(4,)]
    at.set_weights([np.array([0.5, -1.0, 2.0, 0.25], np.float32)])
    np.testing.assert_allclose(at([q, v, k]).numpy(), ATT_OUT, atol=2e-5)
    o, s = at([q, v, k], return_attention_scores=True,
              mask=[np.array([[1, 1, 0], [1, 1, 1]], bool),
                    np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)])
    np.testing.assert_allclose(o.numpy(), ATT_OUT_MASK, atol=2e-5)
    np.testing.assert_allclose(s.numpy(), ATT_SCORES_MASK, atol=2e-5)
    plain = L.AdditiveAttention(use_scale=False)
    np.testing.assert_allclose(plain([q, v]).numpy(), ATT_NOSCALE, atol=2e-5)
    assert plain.weights == []
    assert plain.get_config()["use_scale"] is False and "score_mode" not in plain.get_config()
    q64, v64 = q.astype(np.float64), v.astype(np.float64)
    layer = L.AdditiveAttention(dtype="float64")
    layer([q64, v64])
    check_grads(lambda a, b: layer([a, b]), [q64[:1, :2], v64[:1, :3]])


def test_stacked_rnn_cells_match_keras():
    rng, *_ = _attention_inputs()
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    r = L.RNN([L.LSTMCell(3), L.GRUCell(2)], return_state=True, return_sequences=True)
    r(x)
    assert isinstance(r.cell, L.StackedRNNCells) and r.cell.state_size == [[3, 3], 2]
    r.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in r.get_weights()])
    out = r(x)
    assert len(out) == 3 and len(out[1]) == 2 and len(out[2]) == 1
    np.testing.assert_allclose(out[0].numpy(), SEQ, atol=2e-5)
    np.testing.assert_allclose(out[1][0].numpy(), LSTM_H, atol=2e-5)
    np.testing.assert_allclose(out[1][1].numpy(), LSTM_C, atol=2e-5)
    np.testing.assert_allclose(out[2][0].numpy(), GRU_H, atol=2e-5)
    init = [[np.full((2, 3), 0.1, np.float32), np.full((2, 3), -0.2, np.float32)],
            [np.full((2, 2), 0.3, np.float32)]]
    np.testing.assert_allclose(r(x, initial_state=init)[0].numpy(), SEQ_INIT, atol=2e-5)
    with pytest.raises(ValueError, match="expected 3 initial state"):
        r(x, initial_state=init[0])
    # one step of the stacked cells, as Keras' cell call
    y, states = r.cell(x[:, 0], [s for c in init for s in c])
    assert tuple(y.shape) == (2, 2) and [len(s) for s in states] == [2, 1]
    with pytest.raises(TypeError, match="must be a SimpleRNNCell"):
        L.StackedRNNCells([L.Dense(2)])


def test_stacked_rnn_in_a_saved_model(tmp_path):
    inp = keras.Input((4, 3))
    out = L.RNN(L.StackedRNNCells([L.SimpleRNNCell(2), L.GRUCell(3, dropout=0.2)]))(inp)
    model = keras.Model(inp, L.Dense(1)(out))
    again = keras.models.load_model(model.save(str(tmp_path / "s.keras")))
    np.testing.assert_allclose(again(XS).numpy(), model(XS).numpy(), rtol=1e-6)
    assert isinstance(again.layers[1].cell, L.StackedRNNCells)
    model(XS, training=True)                         # dropout of the upper cell


def test_channels_first_conv_and_pooling_match_keras():
    rng, *_ = _attention_inputs()
    rng.standard_normal((2, 4, 3))
    for shape in [(3, 12), (3, 12), (12,), (3, 6), (2, 6), (2, 6)]:
        rng.uniform(-0.5, 0.5, shape)
    xi = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    cv = L.Conv2D(2, 3, padding="same", strides=2, data_format="channels_first")
    cv(xi)
    cv.set_weights([rng.standard_normal((3, 3, 3, 2)).astype(np.float32),
                    np.array([0.5, -0.5], np.float32)])
    np.testing.assert_allclose(cv(xi).numpy(), CV_OUT, rtol=1e-5, atol=5e-5)
    assert cv.compute_output_shape((None, 3, 6, 5)) == (None, 2, 3, 3)
    assert cv.get_config()["data_format"] == "channels_first"
    mp = L.MaxPooling2D(2, strides=1, data_format="channels_first")
    np.testing.assert_allclose(mp(xi).numpy()[0, 0], MP_CF, atol=1e-6)
    ap = L.AveragePooling2D(2, padding="same", data_format="channels_first")
    np.testing.assert_allclose(ap(xi).numpy()[1, 2], AP_CF, atol=1e-6)
    assert ap.get_config()["data_format"] == "channels_first"
    with pytest.raises(ValueError, match="data_format must be"):
        L.Conv2D(2, 3, data_format="NCHW")
    with pytest.raises(ValueError, match="expected input of shape"):
        cv(np.zeros((2, 4, 6, 5), np.float32))


@pytest.mark.parametrize("make,x", [
    (lambda: L.UpSampling1D(2), XS), (lambda: L.ZeroPadding1D((2, 1)), XS),
    (lambda: L.Cropping1D((1, 0)), XS), (lambda: L.ActivityRegularization(0.1, 0.2), XS),
    (lambda: L.AlphaDropout(0.2, seed=3), XS),
    (lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same", output_padding=1), XS),
    (lambda: L.RNN([L.LSTMCell(2), L.SimpleRNNCell(3)], return_state=True), XS),
    (lambda: L.AdditiveAttention(), [XS, XS]),
    (lambda: L.ReLU(max_value=1.0, negative_slope=0.2), XS),
    (lambda: L.Conv2D(2, 2, data_format="channels_first"), XS[:, None]),
    (lambda: L.MaxPooling2D(1, data_format="channels_first"), XS[:, None]),
], ids=lambda v: "" if not callable(v) else type(v()).__name__)
def test_new_layers_are_rebuilt_from_their_config(make, x):
    layer = make()
    y = layer(x)
    data = L.serialize(layer)
    again = L.deserialize(json.loads(json.dumps(data)))
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
    again(x)
    if layer.variables:
        again.set_weights(layer.get_weights())
    for a, b in zip(gt.nest.flatten(y), gt.nest.flatten(again(x))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_new_surface_on_each_device(device):
    """The new layers, activations and constraints run on every device (the strict device
    refuses host arrays mixed in and implicit host syncs)."""
    x3 = gt.constant(XS)
    for layer in (L.UpSampling1D(2), L.ZeroPadding1D(1), L.Cropping1D(1),
                  L.ActivityRegularization(0.1), L.Conv1DTranspose(2, 3, strides=2),
                  L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.2)):
        y = layer(x3)
        assert y.device == device.name
    y = L.AlphaDropout(0.3, seed=1)(x3, training=True)
    assert y.device == device.name
    out = L.RNN([L.LSTMCell(2), L.GRUCell(3, recurrent_dropout=0.2)], return_state=True)(
        x3, training=True)
    assert out[0].device == device.name and tuple(out[2][0].shape) == (2, 3)
    at = L.AdditiveAttention()([x3, x3], mask=[None, gt.constant(np.array(
        [[1, 1, 0, 0], [1, 1, 1, 1]], bool))])
    assert at.device == device.name
    x4 = gt.constant(np.random.default_rng(0).standard_normal((2, 3, 6, 5)).astype(np.float32))
    for layer in (L.Conv2D(2, 3, padding="same", data_format="channels_first"),
                  L.MaxPooling2D(2, data_format="channels_first"),
                  L.AveragePooling2D(2, data_format="channels_first")):
        assert layer(x4).device == device.name
    for fn in (A.hard_sigmoid, A.hard_silu, A.mish, A.leaky_relu, lambda v: A.elu(v, 0.5),
               lambda v: A.relu(v, threshold=0.3, max_value=0.5, negative_slope=0.1)):
        assert fn(x3).device == device.name
    d = L.Dense(2, kernel_constraint=C.MaxNorm(0.5), bias_constraint=C.NonNeg())
    model = keras.Sequential([keras.Input((3,)), d,
                              L.Dense(1, kernel_constraint=C.MinMaxNorm(0.1, 0.2)),
                              L.Dense(1, kernel_constraint=C.UnitNorm())])
    opt = keras.optimizers.SGD(0.1)
    xb = gt.constant(np.ones((4, 3), np.float32))
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(model(xb) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    assert d.kernel.device == device.name
    norms = np.sqrt((d.kernel.numpy() ** 2).sum(axis=0))
    assert (norms <= 0.5 + 1e-6).all() and (d.bias.numpy() >= 0).all()
