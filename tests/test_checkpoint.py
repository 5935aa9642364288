"""Weights and training checkpoints: round trips, atomic writes, and every bad file or
mismatch leaving all variables unchanged."""
import importlib.util
import json
import os

import numpy as np
import pytest

import gradtape as gt
from gradtape import layers
from gradtape.checkpoint import CheckpointError

# checkpoints are written with safetensors, the `io` extra (the README's test command has it)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("safetensors") is None,
                                reason="safetensors is not installed (pip install 'gradtape[io]')")

X = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
Y = np.random.default_rng(1).integers(0, 3, 8)


def make_model(hidden=6):
    model = gt.keras.Sequential([layers.Dense(hidden, activation="relu"),
                                 layers.BatchNormalization(), layers.Dense(3)])
    model(X)
    return model


def train_steps(model, opt, n=2):
    loss_fn = gt.losses.SparseCategoricalCrossentropy(from_logits=True)
    for _ in range(n):
        with gt.GradientTape() as tape:
            loss = loss_fn(Y, model(X, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))


def snapshot(model):
    return [v.numpy().copy() for v in model.variables]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# --- weights ------------------------------------------------------------------------------------

def test_save_and_load_weights_round_trip(tmp_path):
    model = make_model()
    path = tmp_path / "model.safetensors"
    model.save_weights(path)
    saved = snapshot(model)
    other = make_model()
    other.load_weights(path)
    assert_same(snapshot(other), saved)
    np.testing.assert_array_equal(other(X).numpy(), model(X).numpy())
    # a safetensors file with a JSON header, not a pickle
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    assert header["__metadata__"]["format"] == "gradtape"
    assert "layers.0.kernel" in header and header["layers.0.kernel"]["dtype"] == "F32"


def test_write_is_atomic(tmp_path, monkeypatch):
    model = make_model()
    path = tmp_path / "w.safetensors"
    model.save_weights(path)
    good = path.read_bytes()
    model.layers[0].kernel.assign(np.zeros((5, 6), np.float32))

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        model.save_weights(path)
    monkeypatch.undo()
    assert path.read_bytes() == good                     # the old file is intact
    assert sorted(os.listdir(tmp_path)) == ["w.safetensors"]   # no temporary left behind


def _corrupt_cases(good: bytes):
    n = int.from_bytes(good[:8], "little")
    flipped = bytearray(good)
    flipped[-3] ^= 0xFF                                   # a bit flip in the data
    bad_header = bytearray(good)
    bad_header[10] = ord("#")
    return {
        "truncated": good[: len(good) - 7],
        "truncated_header": good[: 8 + n // 2],
        "empty": b"",
        "flipped_data": bytes(flipped),
        "bad_header": bytes(bad_header),
        "garbage": b"\x80\x04\x95 not a checkpoint at all" * 3,
    }


@pytest.mark.parametrize("case", ["truncated", "truncated_header", "empty", "flipped_data",
                                  "bad_header", "garbage"])
def test_corrupted_files_raise_and_change_nothing(tmp_path, case):
    model = make_model()
    path = tmp_path / "w.safetensors"
    model.save_weights(path)
    path.write_bytes(_corrupt_cases(path.read_bytes())[case])
    target = make_model()
    before = snapshot(target)
    with pytest.raises(CheckpointError, match="truncated|corrupted|not written by gradtape"):
        target.load_weights(path)
    assert_same(snapshot(target), before)


def test_foreign_safetensors_file_is_refused(tmp_path):
    import safetensors.numpy
    path = tmp_path / "foreign.safetensors"
    safetensors.numpy.save_file({"layers.0.kernel": np.zeros((5, 6), np.float32)}, str(path))
    with pytest.raises(CheckpointError, match="not written by gradtape"):
        make_model().load_weights(path)


@pytest.mark.parametrize("other,pattern", [
    (lambda: make_model(hidden=7), r"layers\.0\.kernel: the file has shape \(5, 6\), the "
                                   r"variable \(5, 7\)"),
    (lambda: gt.keras.Sequential([layers.Dense(6), layers.Dense(3)]),
     r"in the file but not in the .*layers\.1\.gamma"),
    (lambda: gt.keras.Sequential([layers.Dense(6, activation="relu"),
                                  layers.BatchNormalization(), layers.Dense(3),
                                  layers.Dense(2)]),
     r"missing from the file: layers\.3\.bias, layers\.3\.kernel"),
    (lambda: gt.keras.Sequential([layers.Dense(6, dtype="float64"), layers.BatchNormalization(
        dtype="float64"), layers.Dense(3, dtype="float64")]),
     r"layers\.0\.bias: the file has dtype float32, the variable float64"),
])
def test_mismatched_models_raise_and_change_nothing(tmp_path, other, pattern):
    path = tmp_path / "w.safetensors"
    make_model().save_weights(path)
    target = other()
    target(X)
    before = snapshot(target)
    with pytest.raises(CheckpointError, match=pattern):
        target.load_weights(path)
    assert_same(snapshot(target), before)


def test_a_different_model_and_an_unbuilt_model_are_named(tmp_path):
    path = tmp_path / "w.safetensors"
    make_model().save_weights(path)
    cnn = gt.keras.Sequential([layers.Conv2D(2, 3), layers.Flatten(), layers.Dense(3)])
    with pytest.raises(CheckpointError, match="no variables yet: call it once"):
        cnn.load_weights(path)
    cnn(np.zeros((1, 5, 5, 1)))
    before = snapshot(cnn)
    with pytest.raises(CheckpointError, match=r"layers\.0\.kernel: the file has shape "
                                              r"\(5, 6\), the variable \(3, 3, 1, 2\)"):
        cnn.load_weights(path)
    mlp = gt.keras.Sequential([layers.Dense(3)])
    mlp.inner = layers.Dense(2)
    mlp.layers = []
    mlp(np.zeros((1, 4)))
    mlp.inner(np.zeros((1, 4)))
    with pytest.raises(CheckpointError, match="no name in common: the file is from a "
                                              "different model"):
        mlp.load_weights(path)
    assert_same(snapshot(cnn), before)
    with pytest.raises(CheckpointError, match="no such file"):
        make_model().load_weights(tmp_path / "missing.safetensors")


# --- training checkpoints ---------------------------------------------------------------------------

def test_checkpoint_restores_model_and_optimizer_state(tmp_path):
    model = make_model()
    opt = gt.optimizers.Adam(0.01)
    train_steps(model, opt, 2)
    ckpt = gt.train.Checkpoint(model=model, optimizer=opt)
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert path.endswith("ckpt-1") and os.path.exists(path + ".safetensors")   # TF's names
    assert int(path.split("-")[-1]) == 1
    assert gt.train.latest_checkpoint(tmp_path) == path
    saved = snapshot(model)
    slots = [v.numpy().copy() for v in opt.variables]

    train_steps(model, opt, 3)                            # move away, then come back
    ckpt.restore(path)
    assert_same(snapshot(model), saved)
    assert int(opt.iterations.numpy()) == 2
    assert_same([v.numpy() for v in opt.variables], slots)

    # A fresh model + optimizer restored from the file continue exactly like the original.
    model2 = make_model()
    opt2 = gt.optimizers.Adam(0.01)
    gt.train.Checkpoint(model=model2, optimizer=opt2).restore(path)
    assert int(opt2.iterations.numpy()) == 2
    train_steps(model, opt, 2)
    train_steps(model2, opt2, 2)
    for a, b in zip(snapshot(model), snapshot(model2)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)

    path2 = ckpt.save(str(tmp_path / "ckpt"))
    assert path2.endswith("ckpt-2")
    assert gt.train.latest_checkpoint(tmp_path) == path2
    assert ckpt.restore(path2 + ".safetensors").restored


def test_checkpoint_mismatch_changes_neither_model_nor_optimizer(tmp_path):
    model = make_model()
    opt = gt.optimizers.Adam(0.01)
    train_steps(model, opt, 1)
    path = gt.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))

    sgd_model = make_model()
    sgd = gt.optimizers.SGD(0.1, momentum=0.9)
    train_steps(sgd_model, sgd, 1)
    before = snapshot(sgd_model)
    before_opt = [v.numpy().copy() for v in sgd.variables]
    with pytest.raises(CheckpointError, match="slot 'm' is not a slot of SGD"):
        gt.train.Checkpoint(model=sgd_model, optimizer=sgd).restore(path)
    assert_same(snapshot(sgd_model), before)
    assert_same([v.numpy() for v in sgd.variables], before_opt)

    wide = make_model(hidden=9)
    wide_before = snapshot(wide)
    with pytest.raises(CheckpointError, match="model/layers.0.kernel"):
        gt.train.Checkpoint(model=wide, optimizer=gt.optimizers.Adam()).restore(path)
    assert_same(snapshot(wide), wide_before)

    with pytest.raises(CheckpointError, match="holds 'weights' data"):
        weights = tmp_path / "w.safetensors"
        model.save_weights(weights)
        gt.train.Checkpoint(model=model).restore(weights)
    with pytest.raises(CheckpointError, match="training checkpoint"):
        model.load_weights(path)


def test_checkpoint_of_plain_variables_and_latest_in_empty_dir(tmp_path):
    v = gt.Variable(np.arange(3.0))
    ckpt = gt.train.Checkpoint(v=v)
    path = ckpt.write(str(tmp_path / "plain.safetensors"))
    v.assign(np.zeros(3))
    ckpt.restore(path)
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])
    assert gt.train.latest_checkpoint(tmp_path / "nothing_here") is None
    with pytest.raises(TypeError, match="must be a gt Module"):
        gt.train.Checkpoint(model=object())


def test_restore_none_partial_restores_and_their_status(tmp_path):
    model = make_model()
    opt = gt.optimizers.Adam(0.01)
    train_steps(model, opt, 1)
    step = gt.Variable(np.int64(7), trainable=False)
    path = gt.train.Checkpoint(model=model, optimizer=opt, step=step).save(str(tmp_path / "c"))

    status = gt.train.Checkpoint(model=make_model()).restore(None)     # a first run
    with pytest.raises(AssertionError, match="No checkpoint specified"):
        status.assert_consumed()

    # the model alone out of a file that also holds an optimizer and a step (TF's partial)
    fresh = make_model()
    status = gt.train.Checkpoint(model=fresh).restore(path).expect_partial()
    assert_same(snapshot(fresh), snapshot(model))
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Unresolved values in checkpoint"):
        status.assert_consumed()
    assert "step" in status.unused and "optimizer/iterations" in status.unused

    # more objects than the file has: the shared ones are restored, the rest reported
    extra = gt.Variable(5.0)
    other = make_model()
    status = gt.train.Checkpoint(model=other, extra=extra).restore(path)
    assert_same(snapshot(other), snapshot(model)) and float(extra) == 5.0
    assert status.unrestored == ("extra",)
    with pytest.raises(AssertionError, match="not restored .*extra"):
        status.assert_existing_objects_matched()

    # nothing in common, or a model not built yet: an error, and nothing changes
    v = gt.Variable(1.0)
    with pytest.raises(CheckpointError, match="no value in common"):
        gt.train.Checkpoint(other_name=v).restore(path)
    unbuilt = gt.keras.Sequential([gt.keras.layers.Dense(3)])
    with pytest.raises(CheckpointError, match="'model' has no variables yet"):
        gt.train.Checkpoint(model=unbuilt, step=gt.Variable(np.int64(0))).restore(path)


def test_checkpoint_manager_keeps_the_newest_and_resumes(tmp_path):
    v = gt.Variable(0.0)
    ckpt = gt.train.Checkpoint(v=v)
    manager = gt.train.CheckpointManager(ckpt, tmp_path / "runs", max_to_keep=2)
    assert manager.latest_checkpoint is None
    assert isinstance(ckpt.restore(manager.latest_checkpoint), gt.train.CheckpointLoadStatus)
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(manager.save())
    assert [os.path.basename(p) for p in paths] == [f"ckpt-{i}" for i in range(1, 5)]
    assert manager.checkpoints == paths[2:]
    assert sorted(os.listdir(tmp_path / "runs")) == ["checkpoint", "ckpt-3.safetensors",
                                                    "ckpt-4.safetensors"]
    assert gt.train.latest_checkpoint(tmp_path / "runs") == paths[3]
    # a later run finds them and goes on numbering from the restored counter
    v2 = gt.Variable(-1.0)
    ckpt2 = gt.train.Checkpoint(v=v2)
    manager2 = gt.train.CheckpointManager(ckpt2, tmp_path / "runs", max_to_keep=2)
    assert manager2.checkpoints == paths[2:]
    assert manager2.restore_or_initialize() == paths[3] and float(v2) == 3.0
    assert os.path.basename(manager2.save()).startswith("ckpt-5")
    assert manager2.checkpoints == [paths[3], manager2.latest_checkpoint]
    assert manager2.save(checkpoint_number=100).endswith("ckpt-100")

    # a step interval: saves only once the counter has moved on far enough
    step = gt.Variable(np.int64(0), trainable=False)
    every = gt.train.CheckpointManager(gt.train.Checkpoint(v=v), tmp_path / "every", None,
                                       step_counter=step, checkpoint_interval=10)
    saved = []
    for s in (0, 5, 10, 12, 25):
        step.assign(np.int64(s))
        saved.append(every.save() is not None)
    assert saved == [True, False, True, False, True] and len(every.checkpoints) == 3
    called = []
    fresh = gt.train.CheckpointManager(gt.train.Checkpoint(v=v), tmp_path / "empty", 1,
                                       init_fn=lambda: called.append(1))
    assert fresh.restore_or_initialize() is None and called == [1]
    with pytest.raises(ValueError, match="max_to_keep must be positive"):
        gt.train.CheckpointManager(ckpt, tmp_path, max_to_keep=0)


def test_reading_checkpoints_by_name_and_moving_averages(tmp_path):
    model = make_model()
    opt = gt.optimizers.Adam(0.01)
    train_steps(model, opt, 1)
    path = gt.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "c"))
    names = dict(gt.train.list_variables(tmp_path))          # a directory: its latest one
    assert names["optimizer/iterations"] == [] and names["model/layers.0.kernel"] == [5, 6]
    kernel = gt.train.load_variable(path, "model/layers.0.kernel")
    np.testing.assert_array_equal(kernel, model.layers[0].kernel.numpy())
    reader = gt.train.load_checkpoint(path)
    assert reader.has_tensor("save_counter") and reader.get_tensor("save_counter") == 1
    with pytest.raises(KeyError, match="'nope' is not in checkpoint"):
        reader.get_tensor("nope")
    with pytest.raises(TypeError, match="a dataset iterator's position cannot be checkpointed"):
        gt.train.Checkpoint(iterator=iter(gt.data.Dataset.range(3)))
    assert next(gt.train.checkpoints_iterator(tmp_path, timeout=0.1)) == path

    # (TF 2.21 gives 3.982249 and [0.307692, 0.615385] for these steps)
    v, w = gt.Variable(1.0), gt.Variable([1.0, 2.0])
    ema = gt.train.ExponentialMovingAverage(0.99, num_updates=3)
    ema.apply([v, w])
    v.assign(2.0)
    w.assign([0.0, 0.0])
    ema.apply([v, w])
    v.assign(5.0)
    ema.apply([v])
    assert float(ema.average(v)) == pytest.approx(3.982249, abs=1e-6)
    np.testing.assert_allclose(ema.average(w).numpy(), [0.307692, 0.615385], atol=1e-6)
    assert ema.average_name(v) == "Variable/ExponentialMovingAverage"
    assert gt.Variable(1.0, name="dense/kernel").path == "dense/kernel"


def test_a_checkpoint_path_means_its_safetensors_file_when_both_exist(tmp_path):
    w = gt.Variable([5.0, 5.0])
    ckpt = gt.train.Checkpoint(w=w)
    ckpt.write(str(tmp_path / "ckpt-1"))                 # a bare file of that name
    w.assign([7.0, 7.0])
    manager = gt.train.CheckpointManager(ckpt, tmp_path, 1)
    path = manager.save()
    w.assign([0.0, 0.0])
    ckpt.restore(manager.latest_checkpoint)
    np.testing.assert_array_equal(w.numpy(), [7.0, 7.0])
    assert path == manager.latest_checkpoint and manager.save().endswith("ckpt-2")


def test_checkpoint_calls_take_tf_options(tmp_path):
    v = gt.Variable([1.0, 2.0])
    ckpt = gt.train.Checkpoint(v=v)
    opts = gt.train.CheckpointOptions()
    path = ckpt.save(str(tmp_path / "c"), options=opts)
    v.assign([0.0, 0.0])
    ckpt.restore(path, options=opts)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    ckpt.write(str(tmp_path / "w.safetensors"), options=opts)
    manager = gt.train.CheckpointManager(ckpt, str(tmp_path / "m"), max_to_keep=1)
    assert manager.save(options=opts) is not None
    with pytest.raises(TypeError, match="CheckpointOptions"):
        ckpt.save(str(tmp_path / "c"), options={"enable_async": True})
