"""A fast smoke run of ``python -m gradtape demo`` (one epoch)."""
import os
import types

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")
pytest.importorskip("safetensors")

from gradtape import demo  # noqa: E402


def test_one_epoch_run_learns_and_writes_its_files(tmp_path):
    summary = demo.run(device="cpu", epochs=1, out=str(tmp_path), seed=0, verbose=False)
    assert summary["device"] == "cpu:0"
    assert summary["steps"] == -(-summary["n_train"] // demo.BATCH_SIZE)
    assert summary["accuracy"] > 0.6                      # chance is 0.1
    assert summary["reloaded_accuracy"] == summary["accuracy"]
    assert os.path.getsize(summary["checkpoint"]) > 1000
    with open(summary["loss_curve"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    losses = summary["losses"]
    assert losses[0] > 2.0                                # about log(10) = 2.30 at the start
    assert np.mean(losses[-5:]) < 0.85 * losses[0]


def test_one_epoch_runs_on_the_strict_device(tmp_path):
    """The README's main job as a GPU runs it: device arrays the host cannot read, kernels'
    references, checkpoint saved from and loaded back onto the device."""
    summary = demo.run(device="strict:0", epochs=1, out=str(tmp_path), seed=0, verbose=False)
    assert summary["device"] == "strict:0"
    assert summary["accuracy"] > 0.6
    assert summary["reloaded_accuracy"] == summary["accuracy"]
    assert summary["losses"][0] > 2.0 and np.mean(summary["losses"][-5:]) < \
        0.85 * summary["losses"][0]


def test_main_dispatches_and_prints(tmp_path, capsys):
    args = types.SimpleNamespace(device="cpu", epochs=1, out=str(tmp_path), seeds=False)
    assert demo.main(args) == 0
    out = capsys.readouterr().out
    assert "held-out accuracy" in out and "reloaded accuracy" in out
    assert os.path.exists(tmp_path / "loss_curve.png")
    assert demo.main(types.SimpleNamespace(device="cpu", epochs=0, out=str(tmp_path),
                                           seeds=False)) == 2


def test_seed_program_of_this_stack_runs(capsys):
    assert demo.run_seeds(only=["seed_004"]) == 0
    out = capsys.readouterr().out
    assert "=== examples/seeds/seed_004_linear_regression.py ===" in out
    assert out.count("Current w:") == 20
