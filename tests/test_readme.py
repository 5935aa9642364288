"""The README stays true: its tour runs, its commands name what CI runs."""
from __future__ import annotations

from _run import ROOT

README = (ROOT / "README.md").read_text()


def test_tour_runs_and_prints_what_it_says(capsys):
    code = README[README.index("## A short tour"):].split("```python", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, "README tour", "exec"), scope)
    assert capsys.readouterr().out.strip() == \
        "gt.Tensor(6.0, shape=(), dtype=float32, device=cpu:0)"
    assert float(scope["d2y"]) == 18.0
    assert tuple(scope["J"].shape) == (3, 3)


def test_keras_example_runs(tmp_path):
    import numpy as np
    tour = README[README.index("## A short tour"):]
    code = tour.split("```python", 2)[2].split("```", 1)[0]
    code = code.replace("/tmp/classifier.keras", str(tmp_path / "classifier.keras"))
    scope: dict = {}
    exec(compile(code, "README keras example", "exec"), scope)
    assert scope["history"].history["accuracy"][-1] > 0.7
    x = scope["x"]
    np.testing.assert_allclose(scope["same"](x).numpy(), scope["model"](x).numpy(), rtol=1e-6)


def test_first_two_commands_are_the_demo_and_the_tests():
    blocks = [b.split("```", 1)[0].strip() for b in README.split("```bash")[1:3]]
    assert "python -m gradtape demo" in blocks[0]
    assert "python -m pytest" in blocks[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert blocks[1] in ci, "the CI script must run the README's test command"
