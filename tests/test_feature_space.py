"""keras.utils.FeatureSpace and keras.layers.HashedCrossing against Keras 3.15 (TF 2.21): the
expected numbers were computed with TensorFlow and are written out here."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.feature_space import FeatureSpace as FS
from gradtape.feature_space import HashedCrossing

keras = gt.keras


# --- HashedCrossing ---------------------------------------------------------------------------

def test_hashed_crossing_bins_equal_keras():
    layer = HashedCrossing(num_bins=5)
    out = layer((np.array(["A", "B", "A", "B", "A"]), np.array([101, 101, 101, 102, 102])))
    assert out.dtype == gt.int64
    np.testing.assert_array_equal(out.numpy(), [1, 4, 1, 1, 3])
    ints = HashedCrossing(1000)((np.array([1, 2, -3, 2 ** 40]), np.array([7, 8, 9, 10])))
    np.testing.assert_array_equal(ints.numpy(), [889, 12, 858, 908])
    three = HashedCrossing(1000)((gt.constant([[1], [2]]), gt.constant([[7], [8]]),
                                  gt.constant([["x"], ["y"]])))
    assert three.shape == (2, 1)
    np.testing.assert_array_equal(three.numpy(), [[157], [113]])
    # num_bins=0: tf.sparse.cross_hashed's unbucketed hash (modulo 2**63 - 1)
    raw = HashedCrossing(0)((np.array([5]), np.array(["ab"])))
    np.testing.assert_array_equal(raw.numpy(), [3227019748877081751])


def test_hashed_crossing_one_hot_and_shapes():
    one = HashedCrossing(10, output_mode="one_hot")((np.array(1), np.array("q")))
    assert one.shape == (1, 10) and one.dtype == gt.float32
    np.testing.assert_array_equal(np.nonzero(one.numpy())[1], [0])
    for a, b in (([[1], [2]], [[7], [8]]), ([1, 2], [7, 8])):
        out = HashedCrossing(10, output_mode="one_hot")((np.array(a), np.array(b)))
        assert out.shape == (2, 10)
        np.testing.assert_array_equal(np.argmax(out.numpy(), -1), [9, 2])
    scalar = HashedCrossing(10)((np.array(1), np.array("q")))
    assert scalar.shape == () and int(scalar.numpy()) == 0
    layer = HashedCrossing(3, output_mode="one_hot")
    assert layer.compute_output_shape([(4, 1), (4, 1)]) == (4, 3)
    assert HashedCrossing(3).compute_output_shape([(4,), (4,)]) == (4,)


def test_hashed_crossing_config_and_errors():
    layer = HashedCrossing(10, name="hc")
    assert layer.get_config() == {"num_bins": 10, "output_mode": "int", "sparse": False,
                                  "name": "hc", "dtype": "int64"}
    again = HashedCrossing.from_config(layer.get_config())
    np.testing.assert_array_equal(again(([1, 2], [3, 4])).numpy(),
                                  layer(([1, 2], [3, 4])).numpy())
    with pytest.raises(ValueError, match="list or tuple"):
        layer(np.array([1, 2]))
    with pytest.raises(ValueError, match="at least two"):
        layer((np.array([1]),))
    with pytest.raises(ValueError, match="integer or string dtype"):
        layer((np.array([1.5]), np.array([2])))
    with pytest.raises(ValueError, match=r"shape `\(\)`"):
        layer((np.array([[1, 2]]), np.array([[1, 2]])))
    with pytest.raises(ValueError, match="equal shape"):
        layer((np.array([1, 2]), np.array([1, 2, 3])))
    with pytest.raises(ValueError, match="output_mode"):
        HashedCrossing(4, output_mode="multi_hot")
    with pytest.raises(ValueError, match="sparse"):
        HashedCrossing(4, sparse=True)


def test_hashed_crossing_on_the_strict_device():
    with gt.device("strict:0"):
        out = HashedCrossing(5)((gt.constant([1, 2]), gt.constant([3, 4])))
        strings = HashedCrossing(5, output_mode="one_hot")((np.array(["A", "B"]),
                                                           np.array(["x", "y"])))
    assert out.device == "strict:0" and strings.device == "strict:0"
    np.testing.assert_array_equal(out.numpy(), HashedCrossing(5)(([1, 2], [3, 4])).numpy())


# --- FeatureSpace -----------------------------------------------------------------------------

def _heart_data(n=40):
    rng = np.random.RandomState(0)
    return {
        "sex": rng.randint(0, 2, n).astype("int32"),
        "cp": rng.randint(0, 4, n).astype("int32"),
        "age": rng.randint(29, 78, n).astype("float32"),
        "chol": rng.normal(240, 50, n).astype("float32"),
        "oldpeak": rng.uniform(0, 4, n).astype("float32"),
        "slope": rng.uniform(0, 1, n).astype("float32"),
        "thal": np.array(["fixed", "normal", "reversible", "normal"] * (n // 4)),
        "ca": rng.randint(0, 30, n).astype("int32"),
        "tag": np.array(["t%d" % (i % 7) for i in range(n)]),
    }


def _heart_space():
    return FS(features={
        "sex": FS.integer_categorical(num_oov_indices=0),
        "cp": "integer_categorical",
        "age": FS.float_discretized(num_bins=5),
        "chol": FS.float_normalized(),
        "oldpeak": FS.float_rescaled(scale=0.5, offset=1.0),
        "slope": "float",
        "thal": FS.string_categorical(num_oov_indices=1),
        "ca": FS.integer_hashed(8),
        "tag": FS.string_hashed(6),
    }, crosses=[FS.cross(feature_names=("sex", "age"), crossing_dim=16),
                FS.cross(("thal", "cp"), crossing_dim=8)], output_mode="concat")


# Keras' output for the first 6 rows: the columns holding 1 (every column but the three float
# features', chol 13, oldpeak 19, slope 22), and those three
ONES = [[3, 12, 18, 21, 28, 32, 36, 51], [0, 9, 15, 20, 26, 30, 41, 50],
        [0, 11, 16, 20, 26, 31, 41, 52], [4, 12, 17, 21, 24, 30, 38, 52],
        [4, 5, 15, 20, 25, 32, 39, 53], [3, 5, 17, 20, 27, 30, 37, 52]]
FLOATS = [[0.03152417, 2.7634706, 0.40718329], [0.55103099, 2.3850632, 0.069166996],
          [0.13929111, 2.4505086, 0.69742876], [0.4078041, 2.0026488, 0.45354268],
          [-0.65825444, 2.9121673, 0.72205561], [-0.34919894, 2.2879806, 0.8663823]]
FLOAT_COLS = [13, 19, 22]


def _check_heart(out):
    out = np.asarray(out)
    assert out.shape == (6, 57)
    np.testing.assert_allclose(out[:, FLOAT_COLS], FLOATS, rtol=2e-6, atol=1e-6)
    rest = np.delete(out, FLOAT_COLS, axis=1)
    assert set(np.unique(rest)) <= {0.0, 1.0}
    for row, cols in zip(out, ONES):
        assert [j for j in np.nonzero(row)[0] if j not in FLOAT_COLS] == cols


def test_feature_space_concat_equals_keras():
    data = _heart_data()
    fs = _heart_space()
    fs.adapt(gt.data.Dataset.from_tensor_slices(data).batch(16))
    assert fs.preprocessors["age"].bin_boundaries == pytest.approx(
        [34.0, 43.0, 55.999996185302734, 67.0])
    assert fs.preprocessors["cp"].get_vocabulary() == [-1, 3, 0, 1, 2]
    assert fs.preprocessors["sex"].get_vocabulary() == [1, 0]
    assert fs.preprocessors["thal"].get_vocabulary() == ["[UNK]", "normal", "reversible",
                                                         "fixed"]
    np.testing.assert_allclose(fs.preprocessors["chol"].mean.numpy().ravel(), [237.2058],
                               rtol=1e-6)
    np.testing.assert_allclose(fs.preprocessors["chol"].variance.numpy().ravel(), [1930.484],
                               rtol=1e-6)
    out = fs({k: v[:6] for k, v in data.items()})
    assert out.dtype == gt.float32
    _check_heart(out.numpy())
    # one example of scalars: the same row, unbatched
    one = fs({k: v[0] for k, v in data.items()})
    assert one.shape == (57,)
    np.testing.assert_array_equal(one.numpy(), out.numpy()[0])
    # rows of shape (n, 1) and Python lists too
    col = fs({k: v[:6].reshape(6, 1) for k, v in data.items()})
    np.testing.assert_array_equal(col.numpy(), out.numpy())
    # in an input pipeline
    ds = gt.data.Dataset.from_tensor_slices((data, data["sex"])).batch(6).map(
        lambda x, y: (fs(x), y))
    first, _ = next(iter(ds))
    np.testing.assert_array_equal(first.numpy(), out.numpy())


def test_feature_space_dict_mode_equals_keras():
    data = _heart_data()
    fs = FS(features={"sex": FS.integer_categorical(output_mode="int"),
                      "thal": FS.string_categorical(output_mode="int"),
                      "age": "float_discretized"},
            crosses=[FS.cross(("sex", "thal"), crossing_dim=7, output_mode="int")],
            output_mode="dict", num_discretization_bins=4)
    fs.adapt({k: data[k] for k in ("sex", "thal", "age")})       # a dict: batches of 32
    assert fs.preprocessors["age"].bin_boundaries == [40.0, 49.0, 64.0]
    out = fs({k: data[k][:5] for k in ("sex", "thal", "age")})
    assert sorted(out) == ["age", "sex", "sex_X_thal", "thal"]
    np.testing.assert_array_equal(out["age"].numpy(), [[0, 0, 1, 0], [1, 0, 0, 0],
                                                       [1, 0, 0, 0], [0, 0, 0, 1],
                                                       [0, 0, 0, 1]])
    assert out["sex"].dtype == gt.int64 and out["sex_X_thal"].dtype == gt.int64
    np.testing.assert_array_equal(out["sex"].numpy(), [[2], [1], [1], [2], [1]])
    np.testing.assert_array_equal(out["thal"].numpy(), [[3], [1], [2], [1], [3]])
    np.testing.assert_array_equal(out["sex_X_thal"].numpy(), [[5], [0], [0], [5], [2]])
    one = fs({k: data[k][0] for k in ("sex", "thal", "age")})
    np.testing.assert_array_equal(one["age"].numpy(), [0, 0, 1, 0])
    np.testing.assert_array_equal(one["sex"].numpy(), [2])
    np.testing.assert_array_equal(one["sex_X_thal"].numpy(), [5])


def test_feature_space_functional_model():
    data = _heart_data()
    fs = FS(features={"sex": "integer_categorical", "age": FS.float_discretized(num_bins=5),
                      "thal": FS.string_categorical(), "chol": FS.float_normalized(),
                      "slope": "float"},
            crosses=[("sex", "age")], crossing_dim=16)
    fs.adapt(gt.data.Dataset.from_tensor_slices(data))
    inputs = fs.get_inputs()
    assert sorted(inputs) == ["age", "chol", "sex", "slope", "thal"]
    assert inputs["thal"].dtype == gt.string and inputs["sex"].dtype == gt.int32
    assert tuple(inputs["age"].shape) == (None, 1)
    encoded = fs.get_encoded_features()
    assert tuple(encoded.shape) == (None, 3 + 5 + 1 + 1 + 4 + 16)
    assert fs.get_encoded_features() is encoded
    batch = {k: data[k][:7] for k in inputs}
    model = keras.Model(inputs, encoded)
    np.testing.assert_array_equal(model(batch).numpy(), fs(batch).numpy())
    head = keras.layers.Dense(1, activation="sigmoid")(keras.layers.Dense(4)(encoded))
    assert keras.Model(inputs, head)(batch).shape == (7, 1)


def test_feature_space_save_and_load(tmp_path):
    data = _heart_data()
    fs = _heart_space()
    fs.adapt(gt.data.Dataset.from_tensor_slices(data).batch(16))
    path = fs.save(str(tmp_path / "space.keras"))
    again = keras.models.load_model(path)
    assert isinstance(again, FS)
    _check_heart(again({k: v[:6] for k, v in data.items()}).numpy())
    # a space rebuilt from its config must be adapted again (as Keras)
    config = fs.get_config()
    assert sorted(config) == ["crosses", "crossing_dim", "features", "hashing_dim",
                              "num_discretization_bins", "output_mode"]
    assert config["features"]["sex"]["class_name"] == "Feature"
    assert config["crosses"][0]["config"] == {"feature_names": ("sex", "age"),
                                              "crossing_dim": 16, "output_mode": "one_hot"}
    clone = FS.from_config(config)
    with pytest.raises(ValueError, match="adapt"):
        clone({k: v[:6] for k, v in data.items()})
    clone.adapt(gt.data.Dataset.from_tensor_slices(data).batch(16))
    _check_heart(clone({k: v[:6] for k, v in data.items()}).numpy())


def test_feature_space_errors():
    with pytest.raises(ValueError, match="cannot be None or empty"):
        FS(features={})
    with pytest.raises(ValueError, match="output_mode"):
        FS(features={"a": "float"}, output_mode="x")
    with pytest.raises(ValueError, match="Invalid feature type: foo"):
        FS(features={"a": "foo"})
    with pytest.raises(ValueError, match="unknown features"):
        FS(features={"a": "float"}, crosses=[("a", "b")])
    with pytest.raises(ValueError, match="output_mode"):
        FS.cross(("a", "b"), 3, output_mode="multi_hot")
    with pytest.raises(ValueError, match="output_mode"):
        FS.feature("float32", keras.layers.Identity(), "bad")
    with pytest.raises(ValueError, match="has not been encoded"):
        FS(features={"a": "integer_categorical",
                     "b": FS.integer_categorical(output_mode="int")})
    with pytest.raises(ValueError, match="cannot be one-hot encoded"):
        FS(features={"a": FS.feature("float32", keras.layers.Identity(), "one_hot")})
    space = FS(features={"a": "integer_categorical"})
    with pytest.raises(ValueError, match="adapt"):
        space({"a": [1]})
    with pytest.raises(ValueError, match="can only be called on a tf.data.Dataset"):
        space.adapt([1, 2])
    plain = FS(features={"a": "float", "b": FS.float_rescaled(scale=2.0)})   # nothing to adapt
    np.testing.assert_array_equal(plain({"a": [1.0, 2.0], "b": [3.0, 4.0]}).numpy(),
                                  [[1, 6], [2, 8]])
    with pytest.raises(ValueError, match="only be called with a dict"):
        plain([1.0])
    with pytest.raises(ValueError, match="lacks the features"):
        plain({"a": [1.0]})
    with pytest.raises(ValueError, match="not one of its features"):
        plain({"a": [1.0], "b": [1.0], "c": [1.0]})


def test_feature_space_on_the_strict_device():
    data = _heart_data()
    fs = FS(features={"sex": FS.integer_categorical(num_oov_indices=0),
                      "age": FS.float_discretized(num_bins=5), "thal": "string_categorical",
                      "tag": FS.string_hashed(4), "oldpeak": FS.float_rescaled(scale=0.1)},
            crosses=[("sex", "age"), ("thal", "tag")])
    fs.adapt(data)
    batch = {k: data[k][:5] for k in fs.features}
    ref = fs(batch).numpy()
    with gt.device("strict:0"):
        out = fs({k: gt.constant(v) for k, v in batch.items()})
    assert out.device == "strict:0"
    np.testing.assert_array_equal(out.numpy(), ref)


def test_the_structured_data_tutorial_flow_runs():
    """Keras' 'Structured data classification with FeatureSpace': num_oov_indices=0 lookups,
    a training model cut at the encoded features, and an inference model from the raw
    dict inputs that predicts as the training model does on encoded features."""
    keras = gt.keras
    rng = np.random.default_rng(0)
    n = 48
    data = {"sex": rng.integers(0, 2, n), "ca": rng.integers(0, 4, n),
            "thal": rng.choice(["fixed", "normal", "reversible"], n),
            "age": rng.uniform(30, 70, n), "chol": rng.uniform(150, 300, n)}
    target = rng.integers(0, 2, n)
    ds = gt.data.Dataset.from_tensor_slices((dict(data), target)).batch(16)
    space = FS(
        features={"sex": FS.integer_categorical(num_oov_indices=0),
                  "ca": FS.integer_categorical(num_oov_indices=0),
                  "thal": FS.string_categorical(num_oov_indices=0),
                  "age": FS.float_discretized(num_bins=10),
                  "chol": FS.float_normalized()},
        crosses=[FS.cross(feature_names=("sex", "age"), crossing_dim=16)],
        output_mode="concat")
    space.adapt(ds.map(lambda x, _: x))
    encoded = space.get_encoded_features()
    assert tuple(encoded.shape) == (None, 2 + 4 + 3 + 10 + 1 + 16)
    hidden = keras.layers.Dense(8, activation="relu")(encoded)
    predictions = keras.layers.Dense(1, activation="sigmoid")(hidden)
    training_model = keras.Model(inputs=encoded, outputs=predictions)
    training_model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    inference_model = keras.Model(inputs=space.get_inputs(), outputs=predictions)
    history = training_model.fit(ds.map(lambda x, y: (space(x), y)), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    sample = {"age": 60, "sex": 1, "ca": 0, "chol": 233, "thal": "fixed"}
    inputs = {name: gt.convert_to_tensor([value]) for name, value in sample.items()}
    got = inference_model.predict(inputs, verbose=0)
    assert got.shape == (1, 1)
    np.testing.assert_allclose(got, training_model.predict(space(inputs), verbose=0),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="all inputs should be in vocabulary"):
        space({**inputs, "ca": gt.convert_to_tensor([7])})
