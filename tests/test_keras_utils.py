"""gt.keras as an importable package (``from gradtape.keras.layers import Dense``),
keras.models.clone_model / to_json / model_from_json / get_config / from_config, and
keras.utils (pad_sequences, timeseries_dataset_from_array, normalize, to_categorical,
split_dataset, Progbar, custom objects). Expected values come from TF 2.21 / Keras 3.15."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def _run_fresh(code):
    """Run ``code`` in a new interpreter (nothing of gradtape imported yet)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# --- import forms ---------------------------------------------------------------------------

def test_keras_import_forms_in_a_fresh_interpreter():
    out = _run_fresh("""
        from gradtape.keras.layers import Dense, Conv2D
        from gradtape.keras import layers, Model, Sequential
        from gradtape.keras.models import Sequential as S2, load_model, clone_model
        from gradtape.keras.models import model_from_json
        from gradtape.keras.optimizers import Adam
        from gradtape.keras.losses import SparseCategoricalCrossentropy, MeanSquaredError
        from gradtape.keras.callbacks import EarlyStopping
        import gradtape.keras.backend as K
        from gradtape.keras.utils import to_categorical, pad_sequences, Progbar
        from gradtape.keras.optimizers.schedules import ExponentialDecay
        from gradtape.keras.regularizers import l2
        from gradtape.keras.initializers import HeNormal
        from gradtape.keras.activations import relu
        from gradtape.keras.metrics import Accuracy
        from gradtape.keras.constraints import MaxNorm
        from gradtape.keras.preprocessing.sequence import pad_sequences as ps
        from gradtape.keras.saving import register_keras_serializable
        import gradtape.keras.layers as L
        import gradtape.keras.utils
        import gradtape as gt
        assert L is gt.keras.layers is gt.layers and Dense is gt.layers.Dense
        assert K is gt.keras.backend and ps is pad_sequences is gt.keras.utils.pad_sequences
        assert ExponentialDecay is gt.optimizers.schedules.ExponentialDecay
        assert Adam is gt.keras.optimizers.Adam and S2 is Sequential
        assert gradtape.keras.utils is gt.keras.utils
        print(K.epsilon(), to_categorical([1]).tolist())
        """)
    assert out.split() == ["1e-07", "[[0.0,", "1.0]]"]


def test_keras_submodules_first_import_and_unknown_names():
    out = _run_fresh("""
        import importlib
        import gradtape.keras.optimizers.schedules as S
        print(S.CosineDecay.__name__)
        print(importlib.import_module("gradtape.keras.utils").__name__)
        try:
            import gradtape.keras.nope
        except ModuleNotFoundError as e:
            print(e)
        """)
    assert out.splitlines() == ["CosineDecay", "gradtape.keras.utils",
                                "No module named 'gradtape.keras.nope'"]


def test_keras_namespaces_are_modules():
    import types
    for name in ("utils", "models", "backend", "activations", "saving", "preprocessing"):
        mod = getattr(keras, name)
        assert isinstance(mod, types.ModuleType) and mod.__name__ == f"gradtape.keras.{name}"
        assert sys.modules[mod.__name__] is mod
    assert keras.activations.relu is keras.activations.get("relu")
    assert "to_categorical" in keras.utils.__all__


# --- clone_model ------------------------------------------------------------------------------

def _seq():
    return keras.Sequential([keras.Input((3,)), L.Dense(4, activation="relu"), L.Dense(2)])


def test_clone_sequential_new_weights_same_names():
    m = _seq()
    c = keras.models.clone_model(m)
    assert type(c) is keras.Sequential and c.name == m.name and c.built
    assert [layer.name for layer in c.layers] == [layer.name for layer in m.layers]
    assert all(a is not b for a, b in zip(c.layers, m.layers))
    assert [tuple(w.shape) for w in c.weights] == [(3, 4), (4,), (4, 2), (2,)]
    assert not np.allclose(c.get_weights()[0], m.get_weights()[0])
    c.set_weights(m.get_weights())                      # the RL target network idiom
    np.testing.assert_array_equal(c(X).numpy(), m(X).numpy())
    m.layers[0].kernel.assign_add(np.ones((3, 4), np.float32))
    assert not np.allclose(c(X).numpy(), m(X).numpy())  # no shared variables


def test_clone_sequential_unbuilt_and_built_by_a_call():
    s = keras.Sequential([L.Dense(4), L.Dense(2)])
    c = keras.models.clone_model(s)
    assert not c.built and [layer.name for layer in c.layers] == [x.name for x in s.layers]
    s(X)
    c = keras.models.clone_model(s)                     # Keras 3: built like the original
    assert c.built and len(c.weights) == 4


def test_clone_sequential_input_tensors_and_errors():
    m = _seq()
    c = keras.models.clone_model(m, input_tensors=keras.Input((3,), name="new"))
    assert c.built and c(X).shape == (4, 2)
    with pytest.raises(ValueError, match="must contain a single tensor"):
        keras.models.clone_model(m, input_tensors=[keras.Input((3,)), keras.Input((3,))])
    with pytest.raises(ValueError, match="must be a keras.Input tensor"):
        keras.models.clone_model(m, input_tensors=np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"Unexpected keyword argument\(s\): \('foo',\)"):
        keras.models.clone_model(m, foo=1)
    with pytest.raises(ValueError, match="call_function"):
        keras.models.clone_model(m, call_function=lambda layer, *a, **k: layer(*a, **k))


def test_clone_functional_model():
    i = keras.Input((3,), name="inp")
    f = keras.Model(i, L.Dense(2, name="d2")(L.Dense(4, name="d1")(i)), name="fm")
    c = keras.models.clone_model(f)
    assert c.name == "fm" and [x.name for x in c.layers] == ["inp", "d1", "d2"]
    assert all(a is not b for a, b in zip(c.layers, f.layers))
    c.set_weights(f.get_weights())
    np.testing.assert_array_equal(c(X).numpy(), f(X).numpy())
    c2 = keras.models.clone_model(f, input_tensors=keras.Input((3,), name="new"))
    assert [x.name for x in c2.layers] == ["new", "d1", "d2"]


def test_clone_functional_shared_nested_ops_and_lambda():
    d = L.Dense(3, name="sh")
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    f = keras.Model([a, b], L.Add()([d(a), d(b)]))
    c = keras.models.clone_model(f)
    assert [x.name for x in c.layers][:3] == ["a", "b", "sh"] and len(c.weights) == 2
    c.set_weights(f.get_weights())
    np.testing.assert_allclose(c([X, 2 * X]).numpy(), f([X, 2 * X]).numpy())
    c = keras.models.clone_model(f, input_tensors=[keras.Input((3,), name="x1"),
                                                   keras.Input((3,), name="x2")])
    assert [t.name for t in c.inputs] == ["x1", "x2"]
    with pytest.raises(ValueError, match="same structure as model.input"):
        keras.models.clone_model(f, input_tensors=[keras.Input((3,))])

    inner = keras.Sequential([L.Dense(3)], name="inner")
    i = keras.Input((3,))
    g = keras.Model(i, L.Dense(1)(inner(i)))
    c = keras.models.clone_model(g)
    assert c.layers[1].name == "inner" and c.layers[1] is not inner and len(c.weights) == 4

    i = keras.Input((3,))
    h = keras.Model(i, L.Lambda(lambda t: t * 2)(L.Dense(2)(i)) + 1.0)
    c = keras.models.clone_model(h)
    c.set_weights(h.get_weights())
    np.testing.assert_allclose(c(X).numpy(), h(X).numpy())


def test_clone_function_and_call_function():
    m = _seq()
    c = keras.models.clone_model(m, clone_function=lambda layer: layer.__class__.from_config(
        {**layer.get_config(), "name": layer.name + "_x"}))
    assert [x.name for x in c.layers] == [x.name + "_x" for x in m.layers]
    shared = keras.models.clone_model(m, clone_function=lambda layer: layer)
    assert all(a is b for a, b in zip(shared.layers, m.layers))

    i = keras.Input((3,))
    f = keras.Model(i, L.Dense(2)(L.Dense(4)(i)))

    def call_function(layer, *args, **kwargs):
        out = layer(*args, **kwargs)
        return L.Dropout(0.5)(out) if isinstance(layer, L.Dense) else out
    c = keras.models.clone_model(f, clone_function=lambda layer: layer,
                                 call_function=call_function)
    assert [type(x).__name__ for x in c.layers] == ["InputLayer", "Dense", "Dropout", "Dense",
                                                    "Dropout"]
    np.testing.assert_allclose(c(X).numpy(), f(X).numpy())   # inference: dropout is identity


def test_clone_compiled_model_is_compiled_alike():
    m = _seq()
    m.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    c = keras.models.clone_model(m)
    assert c.optimizer is not m.optimizer and type(c.optimizer).__name__ == "Adam"
    np.testing.assert_allclose(float(np.asarray(c.optimizer.learning_rate)), 0.01, rtol=1e-6)
    hist = c.fit(X, np.zeros((4, 2), np.float32), epochs=1, verbose=0)
    assert set(hist.history) == {"loss", "mae"}


def test_clone_subclassed_and_plain_layer():
    class Sub(keras.Model):
        def __init__(self, units=2, **kw):
            super().__init__(**kw)
            self.units = units
            self.d = L.Dense(units)

        def call(self, x):
            return self.d(x)

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    m = Sub(5, name="s3")
    m(X)
    c = keras.models.clone_model(m)
    assert type(c) is Sub and c.name == "s3" and c.units == 5 and not c.built
    c(X)
    c.set_weights(m.get_weights())
    np.testing.assert_array_equal(c(X).numpy(), m(X).numpy())
    with pytest.raises(ValueError, match="only supported for Sequential models or Functional"):
        keras.models.clone_model(m, clone_function=lambda layer: layer)

    class NoConfig(keras.Model):
        def __init__(self, units):
            super().__init__()
            self.d = L.Dense(units)

        def call(self, x):
            return self.d(x)
    with pytest.raises(NotImplementedError, match="must implement get_config"):
        keras.models.clone_model(NoConfig(3))

    d = keras.models.clone_model(L.Dense(3, activation="tanh"))
    assert type(d) is L.Dense and d.units == 3 and not d.built


# --- JSON and configs ---------------------------------------------------------------------------

def test_to_json_model_from_json_roundtrip():
    m = _seq()
    text = m.to_json()
    data = json.loads(text)
    assert data["class_name"] == "Sequential" and data["config"]["name"] == m.name
    again = keras.models.model_from_json(text)
    assert type(again) is keras.Sequential and again.built
    assert [x.name for x in again.layers] == [x.name for x in m.layers]
    again.set_weights(m.get_weights())
    np.testing.assert_array_equal(again(X).numpy(), m(X).numpy())
    assert json.loads(m.to_json(indent=2)) == data            # kwargs go to json.dumps

    i = keras.Input((3,), name="inp")
    f = keras.Model(i, L.Dense(2, name="out")(L.Dense(4, name="hid")(i)), name="fm")
    g = keras.models.model_from_json(f.to_json())
    assert g.name == "fm" and [x.name for x in g.layers] == ["inp", "hid", "out"]
    g.set_weights(f.get_weights())
    np.testing.assert_array_equal(g(X).numpy(), f(X).numpy())


def test_model_from_json_custom_objects_and_foreign_json():
    class Twice(L.Layer):
        def call(self, x):
            return 2 * x
    m = keras.Sequential([keras.Input((3,)), Twice(name="tw")])
    text = m.to_json()
    with pytest.raises(gt.saving.SavingError, match="unknown layer class 'Twice'"):
        keras.models.model_from_json(text)
    again = keras.models.model_from_json(text, custom_objects={"Twice": Twice})
    np.testing.assert_allclose(again(X).numpy(), 2 * X)
    with keras.utils.custom_object_scope({"Twice": Twice}):
        assert type(keras.models.model_from_json(text).layers[0]) is Twice
    keras_json = json.dumps({"module": "keras", "class_name": "Sequential", "config": {},
                             "registered_name": None})
    with pytest.raises(gt.saving.SavingError, match="real Keras' JSON"):
        keras.models.model_from_json(keras_json)
    with pytest.raises(gt.saving.SavingError, match="not a JSON string"):
        keras.models.model_from_json("{oops")


def test_get_config_and_from_config():
    m = _seq()
    config = m.get_config()
    assert config["name"] == m.name and len(config["layers"]) == 3
    assert config["layers"][0]["class_name"] == "InputLayer"
    assert tuple(config["build_input_shape"]) == (None, 3)
    again = keras.Sequential.from_config(config)
    assert type(again) is keras.Sequential and again.built and again is not m
    i = keras.Input((3,), name="inp")
    f = keras.Model(i, L.Dense(2)(i), name="fm")
    assert {"layers", "inputs", "outputs", "name"} <= set(f.get_config())
    g = keras.Model.from_config(f.get_config())
    assert g.name == "fm" and g(X).shape == (4, 2)

    class Sub(keras.Model):
        def call(self, x):
            return x
    assert Sub(name="plain").get_config() == {"name": "plain", "trainable": True,
                                              "dtype": "float32"}


# --- utils: values from Keras 3.15 ------------------------------------------------------------

SEQS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], []]


def test_pad_sequences():
    P = keras.utils.pad_sequences
    got = P(SEQS)
    assert got.dtype == np.int32
    assert got.tolist() == [[0, 0, 1, 2, 3], [0, 0, 0, 4, 5], [6, 7, 8, 9, 10], [0, 0, 0, 0, 0]]
    assert P(SEQS, maxlen=3).tolist() == [[1, 2, 3], [0, 4, 5], [8, 9, 10], [0, 0, 0]]
    assert P(SEQS, maxlen=3, padding="post", truncating="post").tolist() == [
        [1, 2, 3], [4, 5, 0], [6, 7, 8], [0, 0, 0]]
    assert P(SEQS, maxlen=4, value=-1).tolist() == [[-1, 1, 2, 3], [-1, -1, 4, 5],
                                                    [7, 8, 9, 10], [-1, -1, -1, -1]]
    assert P([[1.5, 2.5], [3.7]], dtype="float32").tolist() == [[1.5, 2.5],
                                                                [0.0, np.float32(3.7)]]
    assert P([[1.5, 2.5], [3.7]]).tolist() == [[1, 2], [0, 3]]
    got = P([[[1, 2], [3, 4]], [[5, 6]]])
    assert got.shape == (2, 2, 2) and got.tolist() == [[[1, 2], [3, 4]], [[0, 0], [5, 6]]]
    assert P([["a", "b"], ["c"]], dtype=object, value="").tolist() == [["a", "b"], ["", "c"]]
    assert keras.preprocessing.sequence.pad_sequences is P
    with pytest.raises(ValueError, match='Padding type "mid" not understood'):
        P(SEQS, padding="mid")
    with pytest.raises(ValueError, match='Truncating type "mid" not understood'):
        P(SEQS, truncating="mid")
    with pytest.raises(ValueError, match="Found non-iterable: 1"):
        P([1, 2, 3])
    with pytest.raises(ValueError, match="not compatible with `value`"):
        P(SEQS, value="x")
    with pytest.raises(ValueError, match="different from expected shape"):
        P([[[1, 2]], [[1, 2, 3]]])


def test_normalize():
    N = keras.utils.normalize
    x = np.array([[3., 4.], [0., 0.], [1., 2.]])
    got = N(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.0, 0.0],
                                     [0.4472135954999579, 0.8944271909999159]], rtol=1e-15)
    np.testing.assert_allclose(N(x, order=1), [[0.42857142857142855, 0.5714285714285714],
                                               [0, 0], [1 / 3, 2 / 3]], rtol=1e-15)
    assert N(np.array([3, 4])).tolist() == [[0.6, 0.8]]          # Keras: 2-D for 1-D
    np.testing.assert_allclose(N(np.array([[3., 4.], [1., 2.]]), axis=0),
                               [[0.9486832980505138, 0.8944271909999159],
                                [0.31622776601683794, 0.4472135954999579]], rtol=1e-15)
    np.testing.assert_allclose(
        N(np.arange(24.).reshape(2, 3, 4), axis=1)[1],
        [[0.424264, 0.433574, 0.441836, 0.449215], [0.565685, 0.566982, 0.568075, 0.569005],
         [0.707107, 0.700389, 0.694314, 0.688796]], atol=1e-6)
    t = N(gt.constant(x, dtype=gt.float32))              # a tensor in, a tensor out
    assert isinstance(t, gt.Tensor) and t.dtype == gt.float32
    np.testing.assert_allclose(t.numpy(), [[0.6, 0.8], [0, 0], [0.4472136, 0.8944272]],
                               rtol=1e-6)
    np.testing.assert_allclose(N(gt.constant([[3., 4.], [0., 0.]]), order=1).numpy(),
                               [[0.4285714328289032, 0.5714285969734192], [0, 0]], rtol=1e-6)
    np.testing.assert_allclose(N(gt.constant([[3., 4.], [1., 2.]]), axis=0).numpy(),
                               [[0.9486832618713379, 0.8944271802902222],
                                [0.3162277638912201, 0.4472135901451111]], rtol=1e-6)
    v = gt.Variable([[3., 4.]])
    with gt.GradientTape() as tape:
        y = N(v)[0, 0]
    # d(x0/|x|)/dx = (|x|^2 - x0 x) / |x|^3 = ([16, -12]) / 125
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[16 / 125, -12 / 125]], rtol=1e-5)


def test_to_categorical_keras3_dtypes():
    tc = keras.utils.to_categorical
    got = tc([0, 2, 1])
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    assert got.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert tc(np.array([[1], [0]])).shape == (2, 2) and tc(np.array([[1, 0]])).shape == (1, 2, 2)
    assert tc(np.array([1.0, 2.0])).tolist() == [[0, 1, 0], [0, 0, 1]]
    assert tc(3, 5).tolist() == [0, 0, 0, 1, 0] and tc(np.int64(2)).tolist() == [0, 0, 1]
    assert tc([1, 0], 3, dtype="int32").dtype == np.int32        # Keras 2's argument
    t = tc(gt.constant([0, 2, 1]), 4)                             # a tensor: a float32 tensor
    assert isinstance(t, gt.Tensor) and t.dtype == gt.float32
    assert t.numpy().tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    assert tc(gt.constant([[1], [2]]), 3).numpy().tolist() == [[0, 1, 0], [0, 0, 1]]
    assert tc(gt.constant([1.0, 0.0])).numpy().tolist() == [[0, 1], [1, 0]]
    with pytest.raises(ValueError, match="class id 3 does not fit num_classes=2"):
        tc([0, 3], 2)
    with pytest.raises(ValueError, match="class ids must be >= 0"):
        tc(gt.constant([-1, 1]))


def _dump(ds):
    out = []
    for b in ds:
        if isinstance(b, tuple):
            out.append((b[0].numpy().tolist(), b[1].numpy().tolist()))
        else:
            out.append(b.numpy().tolist())
    return out


def test_timeseries_dataset_from_array_windows():
    T = keras.utils.timeseries_dataset_from_array
    data, tg = np.arange(20), np.arange(20) * 10
    assert _dump(T(data, tg, sequence_length=4, batch_size=3)) == [
        ([[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]], [0, 10, 20]),
        ([[3, 4, 5, 6], [4, 5, 6, 7], [5, 6, 7, 8]], [30, 40, 50]),
        ([[6, 7, 8, 9], [7, 8, 9, 10], [8, 9, 10, 11]], [60, 70, 80]),
        ([[9, 10, 11, 12], [10, 11, 12, 13], [11, 12, 13, 14]], [90, 100, 110]),
        ([[12, 13, 14, 15], [13, 14, 15, 16], [14, 15, 16, 17]], [120, 130, 140]),
        ([[15, 16, 17, 18], [16, 17, 18, 19]], [150, 160])]
    assert _dump(T(data, None, sequence_length=3, sequence_stride=2, sampling_rate=2,
                   batch_size=4)) == [
        [[0, 2, 4], [2, 4, 6], [4, 6, 8], [6, 8, 10]],
        [[8, 10, 12], [10, 12, 14], [12, 14, 16], [14, 16, 18]]]
    assert _dump(T(data, tg, sequence_length=5, start_index=3, end_index=15,
                   batch_size=100)) == [
        ([[3, 4, 5, 6, 7], [4, 5, 6, 7, 8], [5, 6, 7, 8, 9], [6, 7, 8, 9, 10],
          [7, 8, 9, 10, 11], [8, 9, 10, 11, 12], [9, 10, 11, 12, 13], [10, 11, 12, 13, 14]],
         [30, 40, 50, 60, 70, 80, 90, 100])]
    got = T(data[:, None].astype("float32"), None, sequence_length=3, sequence_stride=5)
    assert _dump(got) == [[[[0.0], [1.0], [2.0]], [[5.0], [6.0], [7.0]],
                           [[10.0], [11.0], [12.0]], [[15.0], [16.0], [17.0]]]]
    assert next(iter(got)).dtype == gt.float32
    x, y = next(iter(T(data, tg[4:], sequence_length=4, batch_size=3)))
    assert x.dtype == gt.int64 and y.numpy().tolist() == [40, 50, 60]
    assert _dump(T(data, None, sequence_length=20, batch_size=2)) == [[list(range(20))]]
    assert _dump(T(data, tg, sequence_length=30)) == []
    assert _dump(T(data, None, sequence_length=3, end_index=0)) == []
    single = list(T(data, tg, sequence_length=2, batch_size=None))
    assert len(single) == 19 and single[0][0].numpy().tolist() == [0, 1]
    shuffled = _dump(T(np.arange(10), None, sequence_length=2, shuffle=True, seed=1,
                       batch_size=3))
    assert sorted(sum(shuffled, [])) == [[i, i + 1] for i in range(9)]


def test_timeseries_dataset_errors():
    T = keras.utils.timeseries_dataset_from_array
    data = np.arange(20)
    for kwargs, msg in [(dict(sampling_rate=0), "`sampling_rate` must be higher than 0"),
                        (dict(sequence_stride=0), "`sequence_stride` must be higher than 0"),
                        (dict(start_index=30), "`start_index` must be lower than the length"),
                        (dict(start_index=-1), "`start_index` must be 0 or greater"),
                        (dict(start_index=5, end_index=4), "`end_index` must be higher"),
                        (dict(end_index=25), "`end_index` must be lower than the length")]:
        with pytest.raises(ValueError, match=msg):
            T(data, None, sequence_length=3, **kwargs)


def test_split_dataset():
    S = keras.utils.split_dataset
    a, b = S(np.arange(10), left_size=0.8)
    assert isinstance(a, gt.data.Dataset)
    assert [int(v) for v in a] == list(range(8)) and [int(v) for v in b] == [8, 9]
    a, b = S((np.arange(10), np.arange(10) * 2), left_size=3, right_size=4)
    assert [(int(x), int(y)) for x, y in a] == [(0, 0), (1, 2), (2, 4)]
    assert [(int(x), int(y)) for x, y in b] == [(6, 12), (7, 14), (8, 16), (9, 18)]
    for left, right, sizes in [(None, 0.25, (8, 2)), (0.33, None, (3, 7)),
                               (None, 0.33, (7, 3)), (0.33, 0.33, (3, 3))]:
        a, b = S(np.arange(10), left_size=left, right_size=right)
        assert (len(list(a)), len(list(b))) == sizes
    a, b = S(np.arange(10), left_size=0.5, shuffle=True, seed=1)
    assert sorted(int(v) for v in list(a) + list(b)) == list(range(10))
    ds = gt.data.Dataset.from_tensor_slices(np.arange(10)).batch(4)
    a, b = S(ds, left_size=6)
    assert [t.numpy().tolist() for t in a] == [[0, 1, 2, 3], [4, 5]]
    assert [t.numpy().tolist() for t in b] == [[6, 7, 8, 9]]
    with pytest.raises(ValueError, match="should be smaller than the 10"):
        S(np.arange(10), left_size=8, right_size=5)
    with pytest.raises(ValueError, match="At least one of the `left_size` or `right_size`"):
        S(np.arange(10))
    with pytest.raises(ValueError, match="float within the range"):
        S(np.arange(10), left_size=1.5)
    with pytest.raises(TypeError, match="must be either a `gt.data.Dataset`"):
        S({"x": np.arange(4)}, left_size=0.5)


def test_progbar_averages_and_lines(capsys):
    P = keras.utils.Progbar
    p = P(4, verbose=2, stateful_metrics=["acc"])
    p.update(1, [("loss", 1.0), ("acc", 0.5)])
    p.update(3, [("loss", 2.0), ("acc", 0.7)])
    p.add(1, [("loss", 0.0001), ("acc", 0.9)])
    assert p._values == {"loss": [0.0001, 1], "acc": [0.9, 1]} and p._seen_so_far == 4
    line = capsys.readouterr().out
    assert line.startswith("4/4 - 0s - ") and line.endswith(
        "/step - loss: 1.0000e-04 - acc: 0.9000\n")
    p = P(5, verbose=2)
    p.update(2, [("l", 1.0)])
    p.update(4, [("l", 3.0)])
    assert p._values == {"l": [8.0, 4]}                  # weighted by the steps: 2*1 + 2*3
    p.update(5, [("l", 4.0)])
    assert p._values == {"l": [4.0, 1]}
    assert capsys.readouterr().out.endswith("/step - l: 4.0000\n")
    p = P(None, verbose=2, stateless_metrics=["l"])
    p.update(2, [("l", 1.0), ("m", 5.0)])
    p.update(4, [("l", 3.0), ("m", 6.0)])
    assert p._values == {"l": [8.0, 4], "m": [6.0, 1]}
    assert capsys.readouterr().out == ""
    p = P(3, verbose=1, interval=0, unit_name="batch")
    p.update(1, [("loss", 0.5)])                          # not a terminal: the final line only
    p.update(3, [("loss", gt.constant(0.25))])
    out = capsys.readouterr().out
    assert out.startswith("3/3 " + "━" * 20 + " 0s ") and out.endswith(
        "/batch - loss: 0.2500\n") and out.count("\n") == 1
    P(3, verbose=0).update(3, [("loss", 1.0)])
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="only one of"):
        P(3, stateful_metrics=["a"], stateless_metrics=["b"])


def test_custom_objects():
    def twice(x):
        return 2 * x
    table = keras.utils.get_custom_objects()
    assert table is keras.saving.get_custom_objects()
    m = keras.Sequential([keras.Input((3,)), L.Dense(2, activation=twice)])
    text = m.to_json()
    with keras.utils.custom_object_scope({"twice": twice}) as scope:
        assert scope.custom_objects == {"twice": twice}
        again = keras.models.model_from_json(text)
    assert again.layers[0].activation is twice
    table["twice"] = twice
    try:
        assert keras.models.model_from_json(text).layers[0].activation is twice
    finally:
        del table["twice"]
    with pytest.raises(TypeError, match="expected a dict"):
        keras.utils.CustomObjectScope([twice])


def test_device_paths(device):
    """The tensor paths run on the current device (strict: no host leaks or implicit syncs)."""
    t = keras.utils.to_categorical(gt.constant([[1], [2]]), 3)
    assert t._device is device and t.numpy().tolist() == [[0, 1, 0], [0, 0, 1]]
    n = keras.utils.normalize(gt.constant([[3., 4.], [0., 0.]]))
    assert n._device is device
    np.testing.assert_allclose(n.numpy(), [[0.6, 0.8], [0, 0]], rtol=1e-6)
    n1 = keras.utils.normalize(gt.constant([[3., 4.]]), order=1)
    np.testing.assert_allclose(n1.numpy(), [[3 / 7, 4 / 7]], rtol=1e-6)
    m = _seq()
    c = keras.models.clone_model(m)
    c.set_weights(m.get_weights())
    x = gt.constant(X)
    np.testing.assert_array_equal(c(x).numpy(), m(x).numpy())
    ds = keras.utils.timeseries_dataset_from_array(np.arange(6.0, dtype=np.float32), None,
                                                   sequence_length=2, batch_size=4)
    first = next(iter(ds))
    assert first._device is device and first.numpy().tolist()[1] == [1.0, 2.0]
    p = keras.utils.Progbar(2, verbose=0)
    p.update(2, [("loss", gt.reduce_mean(x))])
    np.testing.assert_allclose(p._values["loss"][0], X.mean(), rtol=1e-6)


def test_text_dataset_from_directory_as_keras(tmp_path, capsys):
    """Keras 3's file order (sorted folders and walk, its seeded NumPy shuffle), split and
    label modes; the texts are bytes (TensorFlow's outputs for the same folder)."""
    for i in range(1, 6):
        (tmp_path / "pos").mkdir(exist_ok=True)
        (tmp_path / "neg" / "sub").mkdir(parents=True, exist_ok=True)
        (tmp_path / "pos" / f"p{i}.txt").write_text(f"good movie number {i}\n")
        (tmp_path / "neg" / f"n{i}.txt").write_text(f"bad film {i}, awful\n")
    (tmp_path / "neg" / "sub" / "z.txt").write_text("nested bad\n")
    (tmp_path / "pos" / "readme.md").write_text("skip\n")
    utils = keras.utils
    train, val = utils.text_dataset_from_directory(tmp_path, batch_size=None,
                                                   validation_split=0.3, subset="both",
                                                   seed=42, shuffle=False)
    out = capsys.readouterr().out
    assert "Found 11 files belonging to 2 classes." in out and "Using 8 files for training." in out
    assert train.class_names == ["neg", "pos"]
    got = [(x.numpy(), int(y.numpy())) for x, y in train]
    assert got[5] == (b"nested bad\n", 0) and got[6] == (b"good movie number 1\n", 1)
    assert type(got[0][0]) is bytes and len(got) == 8
    assert [x.numpy() for x, _ in val] == [f"good movie number {i}\n".encode() for i in (3, 4, 5)]
    x, y = next(iter(utils.text_dataset_from_directory(tmp_path, batch_size=4, max_length=6,
                                                       label_mode="categorical",
                                                       shuffle=False)))
    assert x.numpy().tolist() == [b"bad fi"] * 4 and y.numpy().tolist() == [[1.0, 0.0]] * 4
    binary = utils.text_dataset_from_directory(tmp_path, batch_size=None, label_mode="binary",
                                               seed=3)
    assert sorted(x.numpy() for x, _ in binary)[0] == b"bad film 1, awful\n"
    assert next(iter(binary))[1].shape == (1,)
    with pytest.raises(ValueError, match="you must provide a `seed`"):
        utils.text_dataset_from_directory(tmp_path, validation_split=0.2, subset="training")
