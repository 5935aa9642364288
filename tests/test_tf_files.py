"""Models that TensorFlow saved load in gradtape: ``gt.keras.models.load_model`` of Keras 3's
``.keras`` files and tf.keras 2's ``.h5`` files, ``model.load_weights`` of Keras'
``.weights.h5`` files, with TensorFlow's predictions, weights and optimizer state.

The files in tests/data/tf_files were written by TensorFlow 2.21 (Keras 3.15; tf_keras 2.21
for the ``legacy_*`` ones) from models given seeded random weights; ``mlp`` and ``cnn`` were
trained for 2 steps (Adam, SGD with momentum). The values below are TensorFlow's on the
inputs :func:`_x` makes. To keep the files small the zips other than mlp.keras were
re-compressed, and some HDF5 files are gzipped (:func:`_path` unpacks them).
"""
import gzip
import json
import os
import shutil
import sys
import zipfile

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = gt.keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data", "tf_files")


def _x(shape, k=0):
    n = int(np.prod(shape))
    return np.sin(np.arange(n, dtype=np.float64) * 0.37 + k).reshape(shape).astype(np.float32)


IDS = (np.arange(14).reshape(2, 7) * 3 % 20).astype(np.int32)
IDS[0, 5:] = 0

INPUTS = {
    "mlp": _x((3, 6)), "cnn": _x((2, 8, 8, 2)), "conv1d": _x((2, 10, 3)), "rnn": IDS,
    "birnn": _x((2, 5, 3)), "attn": [_x((2, 4, 6)), _x((2, 3), 4)], "nested": _x((2, 4)),
    "legacy_mlp": _x((3, 6)), "legacy_func": [_x((2, 5, 3)), _x((2, 4, 4, 2), 1)],
    "mha_gate": [_x((2, 4, 6)), _x((2, 3, 5), 1)], "stacked": _x((2, 5, 3)),
    "convt": _x((2, 4, 4, 2)), "conv1dt": _x((2, 6, 2)), "bidir_gru_sum": _x((2, 5, 3)),
    "gru_v1": _x((2, 5, 3)), "tdist": _x((2, 5, 3)), "misc": _x((2, 6)),
}

# TensorFlow's predictions
PREDICT = {
    "mlp": [[0.5333293, 0.1531899, 0.3134807], [0.3714985, 0.259461, 0.3690405], [0.4376082,
        0.2694908, 0.292901]],
    "cnn": [[-0.1085048, -1.167658], [0.7471064, -1.226741]],
    "conv1d": [[-1.003664], [-0.3845586]],
    "rnn": [[1.372714, -0.05748512], [1.377415, 0.0001883507]],
    "birnn": [[0.3791476], [0.3826825]],
    "attn": [[2.340563, 0.4198504], [1.841211, 0.06178872]],
    "nested": [[[1.76658, 0.9125419], [1.789999, 0.8748209]], [[0.07698102], [0.06489937]]],
    "legacy_mlp": [[0.4451603, 0.3300898, 0.2247499], [0.2773676, 0.1804609, 0.5421715],
        [0.2632216, 0.1972151, 0.5395633]],
    "legacy_func": [[3.558457, -8.439312], [3.176824, -8.816504]],
    "mha_gate": [[[-0.06105371, 0.6199577, -0.3809672, -0.3956505, 0.3097197], [-0.06194627,
        0.624027, -0.3780655, -0.3954172, 0.3092319], [-0.06113737, 0.620849, -0.3802013,
        -0.3955451, 0.3096637], [-0.06146342, 0.6220875, -0.3793815, -0.3955005, 0.3094904]],
        [[-0.2430047, 1.101537, -0.1028248, -0.3796171, 0.2070596], [-0.241572, 1.096907,
        -0.1058267, -0.3798822, 0.2078635], [-0.2421476, 1.098625, -0.1047339, -0.3797723,
        0.2075358], [-0.2421761, 1.098758, -0.1046419, -0.3797679, 0.2075211]]],
    "stacked": [[0.4054981, 0.7980149], [0.4015211, 0.788507]],
    "convt": [[0.9273493, 0.8359379], [0.9399208, 0.8781088]],
    "conv1dt": [[0.7686598, -0.2717883], [0.6498729, -0.5277351]],
    "bidir_gru_sum": [[-0.4734901, -0.5486883], [-0.487455, -0.581113]],
    "gru_v1": [[0.8764403, -0.4594477, -0.2148059], [0.7802976, -0.4748773, -0.07677189]],
    "tdist": [[0.06178188, -0.2793836, -0.2131107, -0.7234178, -0.5582125, -0.7997872, -0.5902268,
        -0.4236702, -0.2735961, -0.01281118], [0.04000515, -0.02354181, 0.002267331, -0.4439439,
        -0.3448951, -0.8070865, -0.6158968, -0.7096354, -0.5097424, -0.2598274]],
    "misc": [[0.3651521, 0.3259374], [-0.2468772, 0.7198847]],
}
WEIGHT_SUMS = {
    "mlp": [1.784933, 1.028957, -0.5650116, 1.190697, 1.640718, 6.930839, -1.703951, 0.4189649],
    "cnn": [-0.7348966, -0.2043363, -0.9154712, 0.7703303, -1.045848, 3.083918, -0.062794,
        -0.2997504, -1.216511],
    "conv1d": [-4.904024, 0.3456089, -2.243143, 0.381862, 1.113566, -0.02487788],
    "rnn": [4.398757, 0.1194549, -4.710554, -3.360856, 0.2645934, 0.847579, -0.2764268, -2.270371,
        0.3895283],
    "birnn": [-2.138939, -6.72535, -1.005812, -4.005308, 1.992786, -2.725693, -2.910003, 6.892315,
        1.743118, 0.2942338, 0.1460313],
    "attn": [0.04301159, -0.483687, 1.727336, -0.2153474, -4.692365, 0.274707, -0.7849268,
        0.1410607, -0.4622039, 2.451477, 0.5186988, 2.505946, 0, 0.7935285, -0.5075884, 1.32917,
        0.8838752],
    "nested": [2.433679, -1.479125, 3.570342, -0.9152949, -0.4933361, 0.662828, 0.4436166,
        -0.6776217],
    "legacy_mlp": [-2.123285, 0.4808855, -1.164421, 0.08829439, -0.5771248, 6.886468, 0.1920585,
        0.3599069],
    "legacy_func": [-2.569645, -0.3798993, -1.822619, 0.6305174, -1.708476, -4.409393, -3.092387,
        1.051963, -1.446296, -0.1408391, 2.860265, 2.120878, 1.019863, 2.409795, -0.6571509,
        0.7588933, -2.667556, 2.892608, 1.070163, -4.184209, -1.307915, 0.6168509, -0.6399259,
        3.964985, -0.2718276],
}
SHAPES = {
    "rnn": [(20, 5), (5, 24), (6, 24), (24,), (6, 12), (4, 12), (2, 12), (4, 2), (2,)],
    "attn": [(6, 2, 3), (2, 3), (6, 2, 3), (2, 3), (6, 2, 3), (2, 3), (2, 3, 6), (6,), (6,), (6,),
        (3,), (3,), (), (3, 4), (4,), (7, 2), (2,)],
}
OPT_MLP = [2, 0.01, -0.1097473, 0.0002405579, -0.02086934, 3.349475e-05, 0.05348231, 0.000785007,
    -0.135977, 0.0003765986, -6.431947e-09, 0.001252534, -1.862645e-09, 0.0001647665]
AFTER_STEP_MLP = [1.833799, 1.043119, -0.5716435, 1.234231, 1.656673, 6.875847, -1.711623,
    0.4194012]
OPT_CNN = [2, 0.05, -0.08756727, 0.06528572, -0.287709, 0.2847387, 0.6189742, -0.09159037,
    -0.004294068]
AFTER_STEP_CNN = [1.33508, -0.1277365, -1.502354, -0.8767098, -0.9971099, 3.079849, 0.4582415,
    0.2353841, -1.145258]
OPT_LEGACY_MLP = [2, 0.6220738, 0.008327415, -0.02241911, 8.47262e-05, -0.06721424, 0.001565287,
    0.1526023, 0.0007707861, -8.847564e-09, 0.001223383, 6.519258e-09, 0.0003404082]
AFTER_STEP_LEGACY_MLP = [-2.317064, 0.4603725, -1.142869, 0.0678758, -0.5454839, 6.83213,
    0.1955804, 0.3644568]
OPS = [[0.14112, -0.7568025, -0.9589243, -0.2794155, 0.6569866, 0.9893582, 0, 0.841471, 0.9092974,
        0.273823, 0.1976339, -0.06025887, 0, 0.841471, 0.9092974, 0.1369115, 0.09881696,
        -0.03012943],
       [0.6502879, -0.2879033, -0.9613975, -0.7509872, 0.1498772, 0.9129453, -0.5365729,
        0.420167, 0.9906074, 0.1993833, 0.2732896, 0.09593475, 0, 0.420167, 0.9906074,
        0.09969166, 0.1366448, 0.04796737]]
LEGACY_OPS = [row[:15] for row in OPS]
AFTER_STEP_DICT_OUTPUTS = [-2.966259, -0.04420736, -0.622447, -0.01954312, 1.778745,
                           0.0125155]


def _path(name, tmp_path):
    """The data file ``name`` (unpacked into ``tmp_path`` when it is stored gzipped)."""
    path = os.path.join(DATA, name)
    if os.path.exists(path):
        return path
    out = os.path.join(str(tmp_path), name)
    with gzip.open(path + ".gz", "rb") as fin, open(out, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return out


def _close(got, want):
    if isinstance(want, list) and isinstance(got, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32), rtol=1e-4,
                               atol=2e-5)


def _sums(arrays):
    return [float(np.sum(np.asarray(a), dtype=np.float64)) for a in arrays]


KERAS3 = ["mlp", "cnn", "conv1d", "rnn", "birnn", "attn", "nested", "mha_gate", "stacked",
          "convt", "conv1dt", "bidir_gru_sum", "gru_v1", "tdist", "misc"]


@pytest.mark.parametrize("name", KERAS3)
def test_keras3_file_predicts_as_tensorflow(name):
    """load_model of a .keras file TensorFlow wrote: the same predictions."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py "
                        "(pip install 'gradtape[io]')")
    model = keras.models.load_model(os.path.join(DATA, f"{name}.keras"))
    _close(model.predict(INPUTS[name], verbose=0), PREDICT[name])


@pytest.mark.parametrize("name", ["mlp", "cnn", "conv1d", "rnn", "birnn", "attn", "nested"])
def test_keras3_file_weights_are_tensorflows(name):
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    model = keras.models.load_model(os.path.join(DATA, f"{name}.keras"))
    want = WEIGHT_SUMS[name]
    if name == "attn":
        # TensorFlow's Normalization keeps a step count (0) as a third weight; gradtape's
        # has mean and variance only
        assert SHAPES["attn"][12] == () and want[12] == 0
        want = want[:12] + want[13:]
    np.testing.assert_allclose(_sums(model.get_weights()), want, rtol=1e-5, atol=1e-6)
    if name in SHAPES:
        shapes = [s for s in SHAPES[name] if s != ()]
        assert [w.shape for w in model.get_weights()] == shapes


def test_keras3_file_architecture():
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    attn = keras.models.load_model(os.path.join(DATA, "attn.keras"))
    assert attn.name == "attn" and [t.name for t in attn.inputs] == ["a", "b"]
    names = [type(layer).__name__ for layer in attn.layers]
    assert names == ["InputLayer", "MultiHeadAttention", "Add", "InputLayer",
                     "LayerNormalization", "Normalization", "Flatten", "Dense", "Concatenate",
                     "Reshape", "GlobalMaxPooling1D", "Dense"]
    assert attn.get_layer("mha").num_heads == 2 and attn.get_layer("out").units == 2
    nested = keras.models.load_model(os.path.join(DATA, "nested.keras"))
    inner = nested.get_layer("inner")
    assert type(inner) is keras.Sequential and [x.units for x in inner.layers] == [5, 3]
    assert len(nested.outputs) == 2
    rnn = keras.models.load_model(os.path.join(DATA, "rnn.keras"))
    assert rnn.layers[0].mask_zero and rnn.layers[1].return_sequences
    assert rnn.layers[2].cell.reset_after


def test_compile_config_is_restored():
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    mlp = keras.models.load_model(os.path.join(DATA, "mlp.keras"))
    assert type(mlp.optimizer) is gt.keras.optimizers.Adam
    assert mlp.optimizer.get_config()["learning_rate"] == pytest.approx(0.01)
    assert mlp.loss == "categorical_crossentropy"
    cnn = keras.models.load_model(os.path.join(DATA, "cnn.keras"))
    config = cnn.optimizer.get_config()
    assert type(cnn.optimizer) is gt.keras.optimizers.SGD and config["momentum"] == 0.9
    assert config["learning_rate"] == pytest.approx(0.05) and cnn.loss == "mse"
    attn = keras.models.load_model(os.path.join(DATA, "attn.keras"))
    assert type(attn.optimizer) is gt.keras.optimizers.RMSprop
    assert int(attn.optimizer.iterations.numpy()) == 0     # (compiled, never trained)
    x, y = INPUTS["attn"], np.zeros((2, 2), np.float32)
    assert set(attn.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "mae"}
    plain = keras.models.load_model(os.path.join(DATA, "mlp.keras"), compile=False)
    assert not plain.__dict__.get("_is_compiled") and plain.__dict__.get("optimizer") is None
    _close(plain.predict(INPUTS["mlp"], verbose=0), PREDICT["mlp"])


@pytest.mark.parametrize("name,opt,after", [("mlp", OPT_MLP, AFTER_STEP_MLP),
                                            ("cnn", OPT_CNN, AFTER_STEP_CNN)])
def test_optimizer_state_resumes_training_as_tensorflow(name, opt, after):
    """The optimizer variables of the file are restored: one more step (on the first batch
    TensorFlow trained on) gives TensorFlow's weights."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    model = keras.models.load_model(os.path.join(DATA, f"{name}.keras"))
    # TensorFlow's: iterations, learning_rate, then the slots; gradtape's: no learning rate
    np.testing.assert_allclose(_sums(model.optimizer.variables), [opt[0]] + opt[2:],
                               rtol=1e-5, atol=1e-7)
    if name == "mlp":
        x, y = _x((8, 6), 1)[:4], np.eye(3, dtype=np.float32)[np.arange(4) % 3]
    else:
        x, y = _x((8, 8, 8, 2), 2)[:4], _x((8, 2), 3)[:4]
    model.train_on_batch(x, y)
    np.testing.assert_allclose(_sums(model.get_weights()), after, rtol=1e-4, atol=1e-5)


def test_load_weights_of_keras_weights_files(tmp_path):
    """model.load_weights of Keras' .weights.h5 into the same architecture built in
    gradtape."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    mlp = keras.Sequential([keras.Input((6,)), L.Dense(8, activation="relu"),
                            L.BatchNormalization(), L.Dense(3, activation="softmax")])
    mlp.load_weights(os.path.join(DATA, "mlp.weights.h5"))
    _close(mlp.predict(INPUTS["mlp"], verbose=0), PREDICT["mlp"])
    np.testing.assert_allclose(_sums(mlp.get_weights()), WEIGHT_SUMS["mlp"], rtol=1e-5)
    mlp.load_weights(_path("legacy_mlp.weights.h5", tmp_path))      # (tf_keras' .weights.h5)
    _close(mlp.predict(INPUTS["mlp"], verbose=0), PREDICT["legacy_mlp"])
    mlp.load_weights(_path("legacy_mlp.h5", tmp_path))              # (a whole tf_keras model)
    _close(mlp.predict(INPUTS["mlp"], verbose=0), PREDICT["legacy_mlp"])
    mlp.load_weights(os.path.join(DATA, "mlp.keras"))               # (a whole Keras 3 model)
    _close(mlp.predict(INPUTS["mlp"], verbose=0), PREDICT["mlp"])
    rnn = keras.Sequential([keras.Input((7,), dtype="int32"), L.Embedding(20, 5, mask_zero=True),
                            L.LSTM(6, return_sequences=True), L.GRU(4), L.Dense(2)])
    rnn.load_weights(_path("rnn.weights.h5", tmp_path))
    _close(rnn.predict(IDS, verbose=0), PREDICT["rnn"])
    a, b = keras.Input((4, 6)), keras.Input((3,))
    x = L.MultiHeadAttention(num_heads=2, key_dim=3)(a, a)
    x = L.Flatten()(L.LayerNormalization()(L.Add()([a, x])))
    y = L.Dense(4, activation="gelu")(L.Normalization()(b))
    z = L.GlobalMaxPooling1D()(L.Reshape((4, 7))(L.Concatenate()([x, y])))
    attn = keras.Model([a, b], L.Dense(2)(z))
    attn.load_weights(_path("attn.weights.h5", tmp_path))
    _close(attn.predict(INPUTS["attn"], verbose=0), PREDICT["attn"])


def test_weights_that_do_not_fit_name_the_layer_and_weight(tmp_path):
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    path = os.path.join(DATA, "mlp.weights.h5")
    narrow = keras.Sequential([keras.Input((6,)), L.Dense(5), L.BatchNormalization(),
                               L.Dense(3)])
    before = narrow.get_weights()
    with pytest.raises(gt.saving.SavingError, match=r"(?s)nothing was loaded.*Dense 'dense_?\d*"
                       r"', weight 'layers\.0\.kernel' \(layers/dense/vars/0\): shape \(6, 5\) "
                       r"in the model, \(6, 8\) in the file"):
        narrow.load_weights(path)
    for w, b in zip(narrow.get_weights(), before):
        np.testing.assert_array_equal(w, b)
    no_bn = keras.Sequential([keras.Input((6,)), L.Dense(8), L.Dense(3)])
    with pytest.raises(gt.saving.SavingError, match="with no place in the model: "
                       "layers/batch_normalization/vars/0"):
        no_bn.load_weights(path)
    with pytest.raises(gt.saving.SavingError, match=r"holds the weights of 3 layers \(dense, "
                       r"batch_normalization, dense_1\)"):
        no_bn.load_weights(_path("legacy_mlp.h5", tmp_path))
    unbuilt = keras.Sequential([L.Dense(8), L.BatchNormalization(), L.Dense(3)])
    with pytest.raises(gt.saving.SavingError, match="no weights yet"):
        unbuilt.load_weights(path)


def test_tf_keras_2_h5_models(tmp_path):
    """tf.keras 2's model.save("m.h5"): Keras 2 configs (a nested Sequential, whose calls
    Keras 2 numbers from 1; MultiHeadAttention given its value as a keyword; TFOpLambda
    layers of tf.math.multiply and +), weights by layer, Adam's state."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    for name in ("legacy_mlp", "legacy_func"):
        model = keras.models.load_model(_path(f"{name}.h5", tmp_path))
        _close(model.predict(INPUTS[name], verbose=0), PREDICT[name])
        np.testing.assert_allclose(_sums(model.get_weights()), WEIGHT_SUMS[name], rtol=1e-5,
                                   atol=1e-6)
    assert type(model.get_layer("inner")) is keras.Sequential
    assert type(model.optimizer) is gt.keras.optimizers.SGD and model.loss == "mse"
    mlp = keras.models.load_model(_path("legacy_mlp.h5", tmp_path))
    assert type(mlp.optimizer) is gt.keras.optimizers.Adam
    # tf_keras' optimizer variables: iterations, then the slots (no learning rate)
    np.testing.assert_allclose(_sums(mlp.optimizer.variables), OPT_LEGACY_MLP, rtol=1e-5,
                               atol=1e-7)
    mlp.train_on_batch(_x((8, 6), 1)[:4], np.eye(3, dtype=np.float32)[np.arange(4) % 3])
    np.testing.assert_allclose(_sums(mlp.get_weights()), AFTER_STEP_LEGACY_MLP, rtol=1e-4,
                               atol=1e-5)


def test_without_h5py_the_error_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "h5py", None)           # (import h5py fails)
    for call in (lambda: keras.models.load_model(os.path.join(DATA, "mlp.keras")),
                 lambda: keras.Sequential([keras.Input((6,)), L.Dense(8),
                                           L.BatchNormalization(), L.Dense(3)]).load_weights(
                     os.path.join(DATA, "mlp.weights.h5"))):
        with pytest.raises(ImportError, match=r"needs the h5py package: pip install "
                           r"'gradtape\[io\]'"):
            call()
    pytest.importorskip("safetensors", reason="gradtape's own files need safetensors")
    model = keras.Sequential([keras.Input((3,)), L.Dense(2)])       # (gradtape's own files)
    model.save(str(tmp_path / "own.keras"))
    model.save_weights(str(tmp_path / "own.weights.h5"))
    again = keras.models.load_model(str(tmp_path / "own.keras"))
    again.load_weights(str(tmp_path / "own.weights.h5"))
    np.testing.assert_array_equal(again.get_weights()[0], model.get_weights()[0])


def _rewritten(src, tmp_path, change=None, extra=None):
    """A copy of the zip ``src`` with its config.json changed by ``change`` and the members
    ``extra`` added."""
    out = str(tmp_path / os.path.basename(src))
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "config.json" and change is not None:
                config = json.loads(data)
                change(config)
                data = json.dumps(config)
            zout.writestr(name, data)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)
    return out


def test_what_cannot_be_read_says_so(tmp_path):
    def custom(config):
        config["config"]["layers"][1].update(class_name="MyConv", module="my_pkg.layers",
                                             registered_name="my_pkg>MyConv")
    path = _rewritten(os.path.join(DATA, "conv1d.keras"), tmp_path, custom)
    with pytest.raises(gt.saving.SavingError, match="unknown layer class 'MyConv'"):
        keras.models.load_model(path)

    def op(config):
        config["config"]["layers"][2].update(module="keras.src.ops.numpy",
                                             class_name="NoSuchOp")
    path = _rewritten(os.path.join(DATA, "conv1d.keras"), tmp_path, op)
    with pytest.raises(gt.saving.SavingError, match="NoSuchOp .* no counterpart"):
        keras.models.load_model(path)
    path = _rewritten(os.path.join(DATA, "conv1d.keras"), tmp_path,
                      extra={"assets/string_lookup/vocabulary.txt": "a\nb\n"})
    with pytest.raises(gt.saving.SavingError, match=r"holds assets \(assets/string_lookup/"
                       r"vocabulary.txt\) that no layer of Model 'conv1d' reads"):
        keras.models.load_model(path)
    os.makedirs(tmp_path / "saved_model")
    with pytest.raises(gt.saving.SavingError, match="SavedModel"):
        keras.models.load_model(str(tmp_path / "saved_model"))


def test_keras_3_initializer_axes():
    """Keras 3's VarianceScaling family takes input_axes and output_axes (the fans of an
    einsum kernel), and lists them in its config."""
    assert gt.keras.initializers.compute_fans((6, 2, 3), [0], [1, 2]) == (6, 6)
    assert gt.keras.initializers.compute_fans((2, 3, 6), [0, 1], [2]) == (6, 6)
    assert gt.keras.initializers.compute_fans((6, 2, 3)) == (12, 18)
    assert gt.keras.initializers.GlorotUniform().get_config() == {
        "seed": None, "input_axes": None, "output_axes": None}
    assert gt.keras.initializers.HeNormal(seed=3).get_config() == {
        "seed": 3, "input_axes": None, "output_axes": None}
    vs = gt.keras.initializers.VarianceScaling(2.0, "fan_in", "uniform", seed=1,
                                               input_axes=[0], output_axes=[1, 2])
    assert vs.get_config() == {"scale": 2.0, "mode": "fan_in", "distribution": "uniform",
                               "seed": 1, "input_axes": [0], "output_axes": [1, 2]}
    w = vs((6, 2, 3)).numpy()                  # limit sqrt(3 * 2 / 6) = 1 (fan_in 6, not 12)
    assert np.abs(w).max() <= 1.0 and np.abs(w).max() > 0.75
    again = gt.keras.initializers.deserialize(gt.keras.initializers.serialize(vs))
    assert again.get_config() == vs.get_config()
    with pytest.raises(TypeError, match="input_axes"):
        gt.keras.initializers.GlorotUniform(input_axes="a")


def test_config_keys_other_keras_versions_write():
    """Keras 3's lora/quantization arguments (None), tf.keras 2's ``implementation``,
    ``groups=1`` of the transposed and depthwise convolutions, BatchNormalization's
    ``axis=[1]``, MultiHeadAttention's build shapes."""
    assert L.Dense(3, quantization_config=None, lora_rank=None).units == 3
    assert L.Embedding(4, 2, quantization_config=None).output_dim == 2
    with pytest.raises(ValueError, match="quantized layers are not supported"):
        L.Dense(3, quantization_config={"mode": "int8"})
    assert L.Dense(3, lora_rank=4).lora_rank == 4                 # (LoRA: tests/test_lora.py)
    assert L.LSTM(3, implementation=2).units == 3
    assert L.GRUCell(2, implementation=1).units == 2
    assert L.BatchNormalization.from_config({"axis": [1], "momentum": 0.9}).axis == 1
    t = L.Conv2DTranspose.from_config({"filters": 2, "kernel_size": 3, "groups": 1})
    assert t.filters == 2 and "activity_regularizer" in t.get_config()
    with pytest.raises(ValueError, match=r"groups=2 is not supported \(only groups=1\)"):
        L.Conv2DTranspose.from_config({"filters": 2, "kernel_size": 3, "groups": 2})
    assert "activity_regularizer" in L.DepthwiseConv2D(3).get_config()
    mha = L.MultiHeadAttention.from_config({"num_heads": 2, "key_dim": 3,
                                            "query_shape": [None, 4, 6],
                                            "key_shape": [None, 4, 6],
                                            "value_shape": [None, 4, 6],
                                            "softmax_robust_masking": False})
    assert mha.num_heads == 2


def test_operations_on_symbolic_tensors(tmp_path):
    """Keras 3's keras.ops calls in a functional model (x[:, 1:3, ...], x[:, 0], ops.sum,
    ops.mean, ops.relu, * 2.0) and tf.keras 2's TFOpLambda / SlicingOpLambda layers
    (tf.math.reduce_sum, tf.nn.relu, x[...])."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    x = np.sin(np.arange(24.0)).reshape(2, 4, 3).astype(np.float32)
    model = keras.models.load_model(os.path.join(DATA, "ops.keras"))
    _close(model.predict(x, verbose=0), OPS)
    model = keras.models.load_model(_path("legacy_ops.h5", tmp_path))
    _close(model.predict(x, verbose=0), LEGACY_OPS)


def test_dict_outputs_loss_objects_and_a_schedule():
    """Two named outputs compiled with a CategoricalCrossentropy(from_logits=True) object,
    loss weights, an AUC metric and AdamW on an ExponentialDecay schedule, trained 2 steps:
    all restored, the next step as TensorFlow's."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    model = keras.models.load_model(os.path.join(DATA, "dict_outputs.keras"))
    opt = model.optimizer
    assert type(opt) is gt.keras.optimizers.AdamW and opt.weight_decay == 0.01
    schedule = opt.get_config()["learning_rate"]
    assert schedule["class_name"] == "ExponentialDecay" and schedule["config"][
        "decay_steps"] == 10
    assert int(opt.iterations.numpy()) == 2
    assert float(opt.learning_rate.numpy()) == pytest.approx(0.01 * 0.9 ** 0.2)
    loss = model.loss["a"]
    assert type(loss) is gt.keras.losses.CategoricalCrossentropy and loss.get_config()[
        "from_logits"] and model.loss["b"] == "binary_crossentropy"
    x = np.sin(np.arange(32.0)).reshape(8, 4).astype(np.float32)
    y = {"a": np.eye(3, dtype=np.float32)[np.arange(8) % 3],
         "b": (np.arange(8) % 2).reshape(8, 1).astype(np.float32)}
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert {"b_auc", "b_accuracy", "a_mae"} <= set(logs)
    model.train_on_batch(x[:4], {k: v[:4] for k, v in y.items()})
    np.testing.assert_allclose(_sums(model.get_weights()), AFTER_STEP_DICT_OUTPUTS, rtol=1e-4,
                               atol=1e-5)


def test_tf_keras_2_legacy_optimizer_and_loss_object(tmp_path):
    """tf.keras 2's legacy Adam (decay=0.0) and a MeanSquaredError object (reduction "auto",
    with its fn): compiled alike; the legacy optimizer's state is not restored (a warning)."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    with pytest.warns(UserWarning, match="legacy optimizer.*starts afresh"):
        model = keras.models.load_model(_path("legacy_optimizer.h5", tmp_path))
    assert type(model.optimizer) is gt.keras.optimizers.Adam
    assert model.optimizer.get_config()["learning_rate"] == pytest.approx(0.01)
    assert type(model.loss) is gt.keras.losses.MeanSquaredError
    assert model.loss.get_config()["reduction"] == "sum_over_batch_size"


def test_registered_objects_in_configs_are_found_by_their_registered_name():
    @gt.keras.saving.register_keras_serializable(package="tf_files_test")
    class Quarter(gt.keras.initializers.Initializer):
        def __call__(self, shape, dtype=None):
            return gt.fill(shape, 0.25)

    entry = {"module": "my_module", "class_name": "Quarter", "config": {},
             "registered_name": "tf_files_test>Quarter"}
    assert type(gt.keras.initializers.deserialize(entry)) is Quarter
    dense = L.Dense.from_config({"units": 2, "kernel_initializer": entry})
    np.testing.assert_array_equal(dense(np.ones((1, 4), np.float32)).numpy(), [[1.0, 1.0]])


def test_load_weights_of_a_subclassed_model(tmp_path):
    """A subclassed model's weights file: Keras 3 names each layer by the attribute holding
    it (a list's by class), a layer first met through the model's ``layers`` (attributes
    sorted by name: ``layers`` comes before ``rnn``) under ``layers/``."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.encoder = L.Dense(4, activation="relu")
            self.blocks = [L.Dense(4, activation="tanh"), L.LayerNormalization(), L.Dense(4)]
            self.rnn = L.GRU(3)
            self.head = L.Dense(2)

        def call(self, x):
            h = self.encoder(x)
            for block in self.blocks:
                h = block(h)
            return self.head(self.rnn(gt.reshape(h, (-1, 2, 2))))

    x = np.sin(np.arange(12.0)).reshape(2, 6).astype(np.float32)
    net = Net()
    net(x)
    net.load_weights(_path("subclassed.weights.h5", tmp_path))
    _close(net(x).numpy(), [[-0.3015556, -1.074543], [-0.3009526, -1.074254]])


# --- lookup and text layers: their adapted vocabularies are the file's assets -------------------
#
# lookups.keras: a functional model of inputs s (strings (3,)), i (int64 (3,)), t (one text
# (1,)), f (float32 (2,)) and outputs sl_int(s) (StringLookup num_oov_indices=2,
# mask_token="[M]"), sl_count(s) (output_mode="count", max_tokens=5), sl_tfidf(s)
# ("tf_idf"), il_mh(i) (IntegerLookup "multi_hot"), il_int(i) (mask_token=0), tv_int(t)
# (TextVectorization output_sequence_length=6), Dense(2)(tv_tfidf(t)) ("tf_idf", ngrams=2,
# max_tokens=12), tv_given(t) (vocabulary=["cat", "dog", "the"], "multi_hot") and disc(f)
# (Discretization num_bins=3), each adapted on WORDS, IDS_L, TEXTS, FLOATS. text_seq.keras:
# Sequential([Input((1,), "string"), TextVectorization(max_tokens=10, "count"), Dense(3)]).
# tf_idf_padded.keras: StringLookup("tf_idf", max_tokens=8, pad_to_max_tokens=True) adapted on
# [["a", "b", "c"], ["a", "a", "d"]] (a file Keras 3.15 itself fails to load: its saved
# idf_weights are longer than the vocabulary). feature_space.keras: a FeatureSpace
# (string_categorical s, integer_categorical i, float_normalized f, float_discretized d
# with 3 bins, concatenated) adapted on FS_DATA.

LOOKUP_X = [np.array([["a", "zz", "[M]"], ["f", "b", "q"]]),
            np.array([[7, 0, 5], [3, 9, 1]], np.int64),
            np.array([["the cat and the dog"], ["unknown words, cat!"]]),
            np.array([[0.2, -5.0], [0.6, 2.5]], np.float32)]
LOOKUP_PREDICT = [
    [[3, 1, 0], [6, 5, 2]],
    [[2, 1, 0, 0, 0], [1, 0, 0, 1, 1]],
    [[1.859406471, 0.5877866745, 0, 0, 0, 0, 0], [0.9297032357, 0, 0, 0.8472978473,
                                                  1.098612309, 0, 0]],
    [[1, 0, 1, 0, 0, 0, 0], [0, 1, 0, 1, 1, 0, 0]],
    [[3, 0, 1], [2, 5, 4]],
    [[2, 3, 5, 2, 4, 0], [1, 1, 3, 0, 0, 0]],
    [[0.04765014350, -0.3712283671], [0.04449922591, -0.1505134404]],
    [[1, 1, 1, 1], [1, 1, 0, 0]],
    [[1, 0], [1, 2]]]
LOOKUP_DTYPES = ["int64", "int64", "float32", "int64", "int64", "int64", "float32", "int64",
                 "int32"]
TEXT_SEQ_PREDICT = [[-0.05519960076, -0.1727869213, -0.03703917190],
                    [-0.08753748983, -0.05276178941, -0.08149727434]]
FS_X = {"s": ["a", "c", "q"], "i": [5, 1, 7], "f": [2.0, 3.0, 0.0], "d": [0.2, 0.8, 0.45]}
FS_PREDICT = [[0, 1, 0, -0.4472135901, 0, 0, 1, 0, 0, 1, 0, 0],
              [0, 0, 1, 0.4472135901, 0, 0, 0, 1, 0, 0, 1, 0],
              [0, 0, 1, -2.236068010, 1, 0, 0, 0, 1, 0, 0, 0]]


def test_lookup_and_text_layers_read_their_assets():
    """A TensorFlow model with adapted StringLookup, IntegerLookup, TextVectorization (int,
    multi_hot, count and tf_idf: the idf weights are own variables of model.weights.h5) and
    Discretization layers: TensorFlow's predictions and vocabularies."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    model = keras.models.load_model(os.path.join(DATA, "lookups.keras"))
    got = model.predict(LOOKUP_X, verbose=0)
    assert [g.dtype.name for g in got] == LOOKUP_DTYPES
    _close(got, LOOKUP_PREDICT)
    for g, w in zip(got, LOOKUP_PREDICT):
        if g.dtype.kind == "i":
            np.testing.assert_array_equal(g, w)
    assert model.get_layer("sl_int").get_vocabulary() == ["[M]", "[UNK]", "[UNK]", "a", "c",
                                                          "b", "f", "e", "d"]
    assert model.get_layer("il_int").get_vocabulary() == [0, -1, 3, 7, 1, 9, 4, 2]
    assert model.get_layer("tv_tfidf").get_vocabulary() == [
        "[UNK]", "the", "cat", "the cat", "dog", "and", "a", "the mat", "the dog", "sat on",
        "sat", "ran"]
    _close(model.get_layer("sl_tfidf").idf_weights.numpy(),
           [0.9297032357, 0.5877866745, 0.8472978473, 0.8472978473, 1.098612309,
            1.098612309, 1.098612309])
    assert model.get_layer("tv_given").get_config()["vocabulary"] == ["cat", "dog", "the"]
    disc = model.get_layer("disc")          # (adapted: num_bins and bin_boundaries given)
    assert disc.num_bins == 3 and disc.bin_boundaries == [0.1666666567325592,
                                                          0.8333333134651184]
    seq = keras.models.load_model(os.path.join(DATA, "text_seq.keras"))
    assert [type(x).__name__ for x in seq.layers] == ["TextVectorization", "Dense"]
    _close(seq.predict(LOOKUP_X[2], verbose=0), TEXT_SEQ_PREDICT)
    padded = keras.models.load_model(os.path.join(DATA, "tf_idf_padded.keras"))
    _close(padded.predict(np.array([["a", "d", "z"]]), verbose=0),
           [[0.6475667954, 0.5108256340, 0.6931471825, 0, 0, 0, 0, 0]])
    _close(padded.layers[-1].idf_weights.numpy(), [0.6475667954, 0.5108256340, 0.6931471825,
                                                   0.6931471825, 0.6931471825, 0, 0, 0])


def test_lookup_assets_on_the_strict_device():
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    with gt.device("strict:0"):
        model = keras.models.load_model(os.path.join(DATA, "lookups.keras"))
        out = model(LOOKUP_X)
        assert {str(o.device) for o in out} == {"strict:0"}
        _close([o.numpy() for o in out], LOOKUP_PREDICT)


def test_feature_space_of_tensorflow():
    """keras.utils.FeatureSpace saved by TensorFlow: its lookups' vocabularies are assets
    (assets/preprocessors/...), its Normalization's statistics weights, its Discretization's
    bins in the config."""
    pytest.importorskip("h5py", reason="reading Keras' weights needs h5py")
    space = keras.models.load_model(os.path.join(DATA, "feature_space.keras"))
    assert type(space) is keras.utils.FeatureSpace
    assert space.preprocessors["s"].get_vocabulary() == ["[UNK]", "a", "c", "b"]
    assert space.preprocessors["i"].get_vocabulary() == [-1, 2, 5, 1]
    _close(space(FS_X).numpy(), FS_PREDICT)
