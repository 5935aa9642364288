"""The state of lookup and text layers in saved models, as Keras 3.15 keeps it: an adapted
vocabulary is the layer's asset (``assets/<the layer's path>/vocabulary.txt``, one token a
line, the special tokens first), ``"tf_idf"`` weights are an own variable
(``<path>/vars/idf_weights``); a given vocabulary stays in the config. Also: string inputs
of functional models, ``Discretization.from_config`` of an adapted layer, and string
datasets inside a device scope.

The expected values are TensorFlow 2.21's (Keras 3.15) for the same layers adapted on the
same data (the model of tests/data/tf_files/lookups.keras, whose assets are the reference
for the layout).
"""
import json
import os
import zipfile

import numpy as np
import pytest

import gradtape as gt

keras = gt.keras
L = keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data", "tf_files")
pytest.importorskip("safetensors", reason="gradtape's model files need safetensors")

WORDS = np.array([["a", "b", "c"], ["a", "a", "d"], ["b", "e", "a"], ["c", "a", "f"]])
INTS = np.array([[3, 7, 7], [1, 3, 9], [3, 4, 7], [2, 3, 1]], np.int64)
TEXTS = np.array([["The cat sat on the mat."], ["A dog, a cat!"], ["the dog ran"],
                  ["Cats and dogs and the cat"]])
FLOATS = np.array([[0.1, 2.0], [0.5, -1.0], [0.9, 3.0], [0.3, 0.0], [0.7, 1.5]], np.float32)
X = [np.array([["a", "zz", "[M]"], ["f", "b", "q"]]),
     np.array([[7, 0, 5], [3, 9, 1]], np.int64),
     np.array([["the cat and the dog"], ["unknown words, cat!"]]),
     np.array([[0.2, -5.0], [0.6, 2.5]], np.float32)]
# TensorFlow's outputs (the Dense layer on tv_tfidf, of random weights, left out)
WANT = {"sl_int": [[3, 1, 0], [6, 5, 2]],
        "sl_count": [[2, 1, 0, 0, 0], [1, 0, 0, 1, 1]],
        "sl_tfidf": [[1.859406471, 0.5877866745, 0, 0, 0, 0, 0],
                     [0.9297032357, 0, 0, 0.8472978473, 1.098612309, 0, 0]],
        "il_mh": [[1, 0, 1, 0, 0, 0, 0], [0, 1, 0, 1, 1, 0, 0]],
        "il_int": [[3, 0, 1], [2, 5, 4]],
        "tv_int": [[2, 3, 5, 2, 4, 0], [1, 1, 3, 0, 0, 0]],
        "tv_tfidf": [[1.958395720, 1.386294365, 0.6931471825, 0.8472978473, 0.8472978473,
                      1.098612309, 0, 0, 1.098612309, 0, 0, 0],
                     [3.916791439, 0, 0.6931471825, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
        "tv_given": [[1, 1, 1, 1], [1, 1, 0, 0]],
        "disc": [[1, 0], [1, 2]]}
NAMES = list(WANT)


def _lookups_model():
    """The model of lookups.keras built and adapted in gradtape."""
    s = keras.Input((3,), dtype="string", name="s")
    i = keras.Input((3,), dtype="int64", name="i")
    t = keras.Input((1,), dtype="string", name="t")
    f = keras.Input((2,), name="f")
    layers = {
        "sl_int": L.StringLookup(num_oov_indices=2, mask_token="[M]", name="sl_int"),
        "sl_count": L.StringLookup(output_mode="count", max_tokens=5, name="sl_count"),
        "sl_tfidf": L.StringLookup(output_mode="tf_idf", name="sl_tfidf"),
        "il_mh": L.IntegerLookup(output_mode="multi_hot", name="il_mh"),
        "il_int": L.IntegerLookup(mask_token=0, name="il_int"),
        "tv_int": L.TextVectorization(output_sequence_length=6, name="tv_int"),
        "tv_tfidf": L.TextVectorization(output_mode="tf_idf", ngrams=2, max_tokens=12,
                                        name="tv_tfidf"),
        "tv_given": L.TextVectorization(vocabulary=["cat", "dog", "the"],
                                        output_mode="multi_hot", name="tv_given"),
        "disc": L.Discretization(num_bins=3, name="disc")}
    data = {"sl": WORDS, "il": INTS, "tv": TEXTS, "di": FLOATS}
    for name, layer in layers.items():
        if name != "tv_given":
            layer.adapt(data[name[:2]])
    tv = layers["tv_tfidf"](t)
    outs = [layers[n](x) for n, x in (("sl_int", s), ("sl_count", s), ("sl_tfidf", s),
                                      ("il_mh", i), ("il_int", i), ("tv_int", t))]
    outs += [L.Dense(2, name="dense")(tv), tv, layers["tv_given"](t), layers["disc"](f)]
    return keras.Model([s, i, t, f], outs, name="lookups")


def _outputs(model):
    out = model.predict(X, verbose=0)
    return dict(zip(NAMES, out[:6] + out[7:]))


def _check(got):
    for name, want in WANT.items():
        if np.asarray(got[name]).dtype.kind == "f":
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want, err_msg=name)


def _members(path, prefix):
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist() if n.startswith(prefix)}


def test_round_trip_keeps_every_lookup_state(tmp_path):
    """model.save / load_model of a functional model with adapted lookups in every mode:
    TensorFlow's predictions before and after; the assets are laid out and written as
    Keras writes them (the same files as TensorFlow's lookups.keras)."""
    model = _lookups_model()
    before = model.predict(X, verbose=0)
    _check(_outputs(model))
    path = str(tmp_path / "lookups.keras")
    model.save(path)
    assets = _members(path, "assets/")
    assert assets == _members(os.path.join(DATA, "lookups.keras"), "assets/")
    assert assets["assets/layers/string_lookup/vocabulary.txt"] == \
        b"[M]\n[UNK]\n[UNK]\na\nc\nb\nf\ne\nd"
    assert assets["assets/layers/text_vectorization_1/vocabulary.txt"].startswith(b"\n[UNK]\n")
    config = json.loads(_members(path, "config.json")["config.json"])
    entries = {e["name"]: e["config"] for e in config["model"]["config"]["layers"]}
    assert entries["sl_int"]["vocabulary"] is None and entries["il_mh"]["vocabulary"] is None
    assert entries["il_mh"]["vocabulary_size"] == 7
    assert entries["tv_given"]["vocabulary"] == ["cat", "dog", "the"]   # (given: config)
    assert entries["disc"]["bin_boundaries"] == pytest.approx([0.16666666, 0.8333333])
    from gradtape.checkpoint import read_arrays
    with zipfile.ZipFile(path) as zf:
        zf.extract("own_variables.safetensors", str(tmp_path))
    own, _ = read_arrays(str(tmp_path / "own_variables.safetensors"))
    assert sorted(own) == ["layers/string_lookup_2/vars/idf_weights",
                           "layers/text_vectorization/_lookup_layer/vars/idf_weights",
                           "layers/text_vectorization/vars/idf_weights"]   # (Keras' paths)
    np.testing.assert_allclose(own["layers/string_lookup_2/vars/idf_weights"],
                               [0.9297032357, 0.5877866745, 0.8472978473, 0.8472978473,
                                1.098612309, 1.098612309, 1.098612309], rtol=1e-6)
    again = keras.models.load_model(path)
    _check(_outputs(again))
    for a, b in zip(before, again.predict(X, verbose=0)):
        np.testing.assert_array_equal(a, b)
    assert again.get_layer("il_int").get_vocabulary() == [0, -1, 3, 7, 1, 9, 4, 2]
    again.save(str(tmp_path / "twice.keras"))              # (the state goes on)
    assert _members(str(tmp_path / "twice.keras"), "assets/") == assets


def test_sequential_text_model_round_trip(tmp_path):
    texts = TEXTS
    tv = L.TextVectorization(max_tokens=10, output_mode="count")
    tv.adapt(texts)
    seq = keras.Sequential([keras.Input((1,), dtype="string"), tv, L.Dense(3)])
    x = X[2]
    before = seq.predict(x, verbose=0)
    np.testing.assert_array_equal(tv(x).numpy(), [[0, 2, 1, 1, 1, 0, 0, 0, 0, 0],
                                                   [2, 0, 1, 0, 0, 0, 0, 0, 0, 0]])
    path = str(tmp_path / "seq.keras")
    seq.save(path)
    assert _members(path, "assets/") == _members(os.path.join(DATA, "text_seq.keras"),
                                                 "assets/")
    again = keras.models.load_model(path)
    assert json.loads(_members(path, "config.json")["config.json"])["model"]["config"][
        "layers"][0]["config"]["dtype"] == "string"
    np.testing.assert_array_equal(again.predict(x, verbose=0), before)


def test_what_keras_keeps_in_the_config_stays_there(tmp_path):
    """A vocabulary given to the constructor is in the config and written nowhere else (as
    Keras); one read from a file is written as an asset, so the saved model does not need
    the file."""
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_bytes(b"x\ny\nz\n")
    s = keras.Input((2,), dtype="string")
    given = L.StringLookup(vocabulary=["x", "y"], name="given")
    from_file = L.StringLookup(vocabulary=str(vocab_file), output_mode="multi_hot",
                               name="from_file")
    ints = L.IntegerLookup(vocabulary=[4, 5], name="ints")
    i = keras.Input((2,), dtype="int64")
    model = keras.Model([s, i], [given(s), from_file(s), ints(i)])
    path = str(tmp_path / "given.keras")
    model.save(path)
    os.remove(vocab_file)
    assert list(_members(path, "assets/")) == ["assets/layers/string_lookup_1/vocabulary.txt"]
    assert _members(path, "assets/")["assets/layers/string_lookup_1/vocabulary.txt"] == \
        b"[UNK]\nx\ny\nz"
    again = keras.models.load_model(path)
    x = [np.array([["y", "z"], ["q", "x"]]), np.array([[5, 6], [4, 4]], np.int64)]
    for a, b in zip(model.predict(x, verbose=0), again.predict(x, verbose=0)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again.predict(x, verbose=0)[1], [[0, 0, 1, 1], [1, 1, 0, 0]])


def test_tf_idf_padded_to_max_tokens(tmp_path):
    """The saved idf weights are padded to max_tokens, longer than the vocabulary (Keras
    3.15 fails to load its own file there; gradtape reads it, and TensorFlow's)."""
    sl = L.StringLookup(output_mode="tf_idf", max_tokens=8, pad_to_max_tokens=True)
    sl.adapt(np.array([["a", "b", "c"], ["a", "a", "d"]]))
    s = keras.Input((3,), dtype="string")
    model = keras.Model(s, sl(s))
    want = [[0.6475667954, 0.5108256340, 0.6931471825, 0, 0, 0, 0, 0]]
    x = np.array([["a", "d", "z"]])
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-6)
    model.save(str(tmp_path / "pad.keras"))
    again = keras.models.load_model(str(tmp_path / "pad.keras"))
    np.testing.assert_allclose(again.predict(x, verbose=0), want, rtol=1e-6)
    np.testing.assert_allclose(again.layers[-1].idf_weights.numpy(),
                               [0.6475667954, 0.5108256340, 0.6931471825, 0.6931471825,
                                0.6931471825, 0, 0, 0], rtol=1e-6)


def test_a_lookup_adapted_after_the_model_is_built(tmp_path):
    """As Keras, a functional model may hold a lookup whose vocabulary comes later."""
    s = keras.Input((3,), dtype="string")
    sl = L.StringLookup()
    i = keras.Input((2,), dtype="int64")
    il = L.IntegerLookup()
    model = keras.Model([s, i], [sl(s), il(i)])
    sl.adapt(WORDS)
    il.adapt(INTS)
    x = [np.array([["a", "zz", "f"]]), np.array([[9, 8]], np.int64)]
    got = model.predict(x, verbose=0)
    np.testing.assert_array_equal(got[0], [[1, 0, 4]])
    np.testing.assert_array_equal(got[1], [[4, 0]])
    model.save(str(tmp_path / "late.keras"))
    again = keras.models.load_model(str(tmp_path / "late.keras"))
    for a, b in zip(got, again.predict(x, verbose=0)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="set a vocabulary"):
        L.IntegerLookup()(np.array([1]))


@keras.saving.register_keras_serializable(package="assets_test")
class MemoLayer(L.Layer):
    """A layer of a user's that keeps words as an asset and a table as an own variable."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.words = []
        self.table = np.zeros(0, np.float32)

    def call(self, x):
        return x * float(len(self.words)) + float(self.table.sum())

    def save_assets(self, dir_path):
        with open(os.path.join(dir_path, "words.txt"), "w") as f:
            f.write("\n".join(self.words))

    def load_assets(self, dir_path):
        with open(os.path.join(dir_path, "words.txt")) as f:
            self.words = f.read().split("\n")

    def save_own_variables(self, store):
        store["table"] = self.table

    def load_own_variables(self, store):
        self.table = np.asarray(store["table"])


def test_custom_layers_get_the_same_service(tmp_path):
    memo = MemoLayer(name="memo")
    memo.words = ["alpha", "beta", "gamma"]
    memo.table = np.array([0.5, 0.25], np.float32)
    model = keras.Sequential([keras.Input((2,)), L.Dense(2), memo])
    x = np.ones((1, 2), np.float32)
    before = model.predict(x, verbose=0)
    path = str(tmp_path / "memo.keras")
    model.save(path)
    assert _members(path, "assets/") == {
        "assets/layers/memo_layer/words.txt": b"alpha\nbeta\ngamma"}
    again = keras.models.load_model(path)
    memo2 = again.layers[-1]
    assert memo2.words == ["alpha", "beta", "gamma"] and memo2.table.tolist() == [0.5, 0.25]
    np.testing.assert_allclose(again.predict(x, verbose=0), before)


def test_files_with_assets_or_state_that_do_not_fit(tmp_path):
    model = _lookups_model()
    path = str(tmp_path / "m.keras")
    model.save(path)

    def rewritten(change, name):
        out = str(tmp_path / name)
        with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
            for item in zin.namelist():
                zout.writestr(item, zin.read(item))
            change(zout)
        return out
    bad = rewritten(lambda z: z.writestr("assets/layers/dense/extra.txt", b"x"), "a.keras")
    with pytest.raises(gt.saving.SavingError, match=r"holds assets \(assets/layers/dense/"
                       r"extra.txt\) that no layer of Model 'lookups' reads"):
        keras.models.load_model(bad)
    bad = rewritten(lambda z: z.writestr("assets/layers/string_lookup/../x.txt", b"x"),
                    "b.keras")
    with pytest.raises(gt.saving.SavingError, match="is not a plain path inside the archive"):
        keras.models.load_model(bad)
    with zipfile.ZipFile(path) as zf:
        zf.extract("own_variables.safetensors", str(tmp_path))
    from gradtape.checkpoint import read_arrays, write_arrays
    own, _ = read_arrays(str(tmp_path / "own_variables.safetensors"))
    own["layers/dense/vars/idf_weights"] = np.ones(3, np.float32)
    extra = str(tmp_path / "extra.safetensors")
    write_arrays(extra, own, "own_variables")

    def replace(z):
        z.write(extra, "own_variables.safetensors")
    out = str(tmp_path / "c.keras")
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.namelist():
            if item != "own_variables.safetensors":
                zout.writestr(item, zin.read(item))
        replace(zout)
    with pytest.raises(gt.saving.SavingError, match="with no place in Model 'lookups': "
                       "layers/dense/vars/idf_weights"):
        keras.models.load_model(out)


def test_string_inputs_save_as_keras_writes_them(tmp_path):
    """A functional model with a string Input saves its dtype as "string" (Keras' name);
    files that wrote "object" (gradtape's earlier ones) load too. clone_model keeps it."""
    s = keras.Input((1,), dtype="string", name="text")
    sl = L.StringLookup(vocabulary=["a", "b"])
    model = keras.Model(s, sl(s))
    path = str(tmp_path / "s.keras")
    model.save(path)
    config = json.loads(_members(path, "config.json")["config.json"])
    entry = config["model"]["config"]["layers"][0]
    assert entry["class_name"] == "InputLayer" and entry["config"]["dtype"] == "string"
    x = np.array([["a"], ["b"], ["z"]])
    np.testing.assert_array_equal(keras.models.load_model(path).predict(x, verbose=0),
                                  [[1], [2], [0]])
    entry["config"]["dtype"] = "object"
    old = str(tmp_path / "old.keras")
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(old, "w") as zout:
        for item in zin.namelist():
            data = json.dumps(config) if item == "config.json" else zin.read(item)
            zout.writestr(item, data)
    np.testing.assert_array_equal(keras.models.load_model(old).predict(x, verbose=0),
                                  [[1], [2], [0]])
    clone = keras.models.clone_model(model)
    assert clone.inputs[0].dtype == gt.string
    seq = keras.Sequential([keras.Input((1,), dtype="string"),
                            L.StringLookup(vocabulary=["a"])])
    assert seq.get_config()["layers"][0]["config"]["dtype"] == "string"
    np.testing.assert_array_equal(keras.Sequential.from_config(seq.get_config())(
        np.array([["a"], ["b"]])).numpy(), [[1], [0]])


def test_discretization_from_an_adapted_config():
    """As Keras: the config of an adapted layer holds num_bins and bin_boundaries, and
    from_config applies the boundaries after construction (TensorFlow's boundaries)."""
    d = L.Discretization(num_bins=3)
    d.adapt(np.array([0.1, 0.5, 0.9, 0.3], np.float32))
    config = d.get_config()
    assert config["num_bins"] == 3
    np.testing.assert_allclose(config["bin_boundaries"], [0.1666666716, 0.4333333373],
                               rtol=1e-7)
    again = L.Discretization.from_config(config)
    assert again.num_bins == 3 and again.bin_boundaries == config["bin_boundaries"]
    x = np.array([0.0, 0.2, 0.45, 0.9], np.float32)
    np.testing.assert_array_equal(again(x).numpy(), [0, 1, 2, 2])
    again.adapt(np.array([1.0, 2.0, 3.0], np.float32))          # (still adaptable)
    assert len(again.bin_boundaries) == 2
    with pytest.raises(ValueError, match="Both `num_bins` and `bin_boundaries`"):
        L.Discretization(num_bins=3, bin_boundaries=[0.5])


def test_string_datasets_in_a_device_scope():
    """Iterating a dataset of strings inside a device scope leaves the strings on the host
    (numbers go to the device); adapt works there (TensorFlow's vocabularies)."""
    texts = gt.data.Dataset.from_tensor_slices(TEXTS[:, 0]).batch(2)
    pairs = gt.data.Dataset.from_tensor_slices((WORDS[:, 0], INTS[:, 0])).batch(2)
    with gt.device("strict:0"):
        for batch in texts:
            assert str(batch.device) == "cpu:0" and batch.dtype == gt.string
        words, ints = next(iter(pairs))
        assert str(words.device) == "cpu:0" and str(ints.device) == "strict:0"
        tv = L.TextVectorization()
        tv.adapt(texts)
        assert tv.get_vocabulary() == ["", "[UNK]", "the", "cat", "dog", "and", "a", "sat",
                                       "ran", "on", "mat", "dogs", "cats"]
        sl = L.StringLookup(output_mode="tf_idf")
        sl.adapt(gt.data.Dataset.from_tensor_slices(WORDS).batch(2))
        assert sl.get_vocabulary() == ["[UNK]", "a", "c", "b", "f", "e", "d"]
        np.testing.assert_allclose(sl.idf_weights.numpy(), [
            0.9297032357, 0.5877866745, 0.8472978473, 0.8472978473, 1.098612309, 1.098612309,
            1.098612309], rtol=1e-6)
        il = L.IntegerLookup()
        il.adapt(gt.data.Dataset.from_tensor_slices(INTS).batch(3))
        assert il.get_vocabulary() == [-1, 3, 7, 1, 9, 4, 2]
        out = tv(X[2])
        assert str(out.device) == "strict:0"
        np.testing.assert_array_equal(out.numpy(), [[2, 3, 5, 2, 4], [1, 1, 3, 0, 0]])


def test_feature_space_keeps_vocabularies_as_assets(tmp_path):
    """As Keras: the adapted lookups' vocabularies are not in the FeatureSpace's config but
    its assets (assets/preprocessors/...)."""
    fs_cls = keras.utils.FeatureSpace
    space = fs_cls(features={"s": fs_cls.string_categorical(),
                             "i": fs_cls.integer_categorical(),
                             "f": fs_cls.float_normalized(),
                             "d": fs_cls.float_discretized(num_bins=3)}, output_mode="concat")
    space.adapt({"s": ["a", "b", "a", "c"], "i": [1, 2, 2, 5], "f": [1.0, 2.0, 3.0, 4.0],
                 "d": [0.1, 0.5, 0.9, 0.3]})
    path = str(tmp_path / "fs.keras")
    space.save(path)
    assert _members(path, "assets/") == _members(os.path.join(DATA, "feature_space.keras"),
                                                 "assets/")
    assert b'"assets"' not in _members(path, "config.json")["config.json"]
    again = keras.models.load_model(path)
    x = {"s": ["a", "c", "q"], "i": [5, 1, 7], "f": [2.0, 3.0, 0.0], "d": [0.2, 0.8, 0.45]}
    want = [[0, 1, 0, -0.4472135901, 0, 0, 1, 0, 0, 1, 0, 0],
            [0, 0, 1, 0.4472135901, 0, 0, 0, 1, 0, 0, 1, 0],
            [0, 0, 1, -2.236068010, 1, 0, 0, 0, 1, 0, 0, 0]]
    np.testing.assert_allclose(space(x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(again(x).numpy(), want, rtol=1e-6)


def test_a_string_input_layer_config_round_trips():
    layer = gt.keras.Input((1,), dtype="string")._input_layer
    config = layer.get_config()
    assert config["dtype"] == "string"
    again = type(layer).from_config(config)
    assert again._input_dtype.kind == "O" and again.batch_shape == layer.batch_shape
