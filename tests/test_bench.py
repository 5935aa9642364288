"""Smoke tests of the benchmark driver (``python -m gradtape bench``) and its guard.

They run the suite at its tiniest size with only the NumPy floor and gradtape, and check the
structure of what it writes, not how fast anything is.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gradtape import bench  # noqa: E402
from benchmarks import check  # noqa: E402
from benchmarks.cases import spec  # noqa: E402

FAST = ["--sizes", "tiny", "--rounds", "2", "--target-ms", "0.5"]


def test_driver_writes_json_and_markdown(tmp_path, capsys):
    status = bench.main(["--impls", "numpy,gradtape", *FAST, "--out", str(tmp_path)])
    assert status == 0
    runs = sorted(tmp_path.glob("run-*.json"))
    assert len(runs) == 1
    latest = json.loads((tmp_path / "latest.json").read_text())
    assert latest == json.loads(runs[0].read_text())
    assert (tmp_path / "latest.md").read_text() == runs[0].with_suffix(".md").read_text()

    assert latest["floor"] == "numpy"
    assert list(latest["implementations"]) == ["numpy", "gradtape"]
    assert latest["meta"]["cores"] == os.cpu_count()
    assert latest["meta"]["rounds"] == 2
    assert set(latest["cases"]) == set(spec.CASES)
    by_key = {(e["case"], e["impl"]): e for e in latest["results"]}
    for case in spec.CASES:
        floor = by_key[(case, "numpy")]
        assert floor["status"] == "ok" and floor["size"] == "tiny"
        assert len(floor["times"]) == 2 and all(t > 0 for t in floor["times"])
        assert floor["ratio"] == 1.0
        mine = by_key[(case, "gradtape")]
        assert mine["status"] in ("ok", "skipped"), mine
        if mine["status"] == "ok":
            assert len(mine["ratios"]) == 2 and mine["ratio"] > 0
            assert mine["median_s"] == pytest.approx(float(np.median(mine["times"])))
        else:
            assert mine["reason"]
    assert by_key[("opchain", "gradtape")]["status"] == "ok"
    memory = {(r["case"], r["impl"]): r for r in latest["memory"]}
    assert memory[("mlp", "numpy")]["peak_bytes"] >= memory[("mlp", "numpy")]["transient_bytes"] > 0
    assert memory[("mlp", "numpy")]["ratio"] == 1.0

    text = capsys.readouterr().out
    assert text.strip() == (tmp_path / "latest.md").read_text().strip()
    assert "| case | size | gradtape |" in text
    assert "| case | size | NumPy by hand | gradtape |" in text
    for case in spec.CASES.values():
        assert case.title in text
    assert "## Memory" in text
    if importlib.util.find_spec("matplotlib") is None:
        return
    assert (tmp_path / "latest_ratios.png").read_bytes()[:4] == b"\x89PNG"


WRONG = '''
from benchmarks.cases.impl_numpy import NumpyByHand, _Chain
from benchmarks.cases.spec import CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS


class WrongChain(_Chain):
    """The op chain with a classic mistake: tanh' taken as 1 - t instead of 1 - t^2."""

    def check(self):
        xp = self.xp
        ys, y = [], self.x
        for _ in range(CHAIN_STEPS):
            y = xp.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
            ys.append(y)
        g = xp.ones_like(y)
        for t in reversed(ys):
            g = g * (1.0 - t) * CHAIN_SCALE
        return {"y": y, "grad/x": g}


class Wrong(NumpyByHand):
    name = "wrong"

    def case_opchain(self, p, data):
        return WrongChain(self.xp, data)
'''


@pytest.fixture
def wrong_impl(tmp_path, monkeypatch):
    (tmp_path / "wrong_impl.py").write_text(textwrap.dedent(WRONG))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return "wrong_impl:Wrong"


def test_agreement_check_stops_a_wrong_implementation(tmp_path, wrong_impl, capsys):
    out = tmp_path / "out"
    status = bench.main(["--impls", f"numpy,{wrong_impl}", "--cases", "opchain", *FAST,
                         "--out", str(out)])
    assert status == bench.EXIT_DISAGREE
    err = capsys.readouterr().err
    assert "AGREEMENT CHECK FAILED" in err and wrong_impl in err and "grad/x" in err
    assert not out.exists() or not any(out.iterdir())


def test_keep_going_marks_the_disagreeing_cell(tmp_path, wrong_impl, capsys):
    status = bench.main(["--impls", f"numpy,{wrong_impl}", "--cases", "opchain", *FAST,
                         "--out", str(tmp_path), "--keep-going", "--no-memory", "--no-plots"])
    assert status == bench.EXIT_DISAGREE
    latest = json.loads((tmp_path / "latest.json").read_text())
    (entry,) = [e for e in latest["results"] if e["impl"] == wrong_impl]
    assert entry["status"] == "disagrees" and "grad/x" in entry["reason"]
    assert "DISAGREES" in (tmp_path / "latest.md").read_text()


def test_compare_tolerances():
    ref = {"loss": np.float32(2.0), "grad/w": np.array([1.0, -2e-4, 3.0]),
           "update/w": np.array([-1e-3, 1e-3, -1e-3])}
    same = {k: np.asarray(v) * (1 + 1e-5) for k, v in ref.items()}
    assert spec.compare(ref, same) == []
    # an update may differ where the gradient is tiny (epsilon's place differs by framework)
    eps_moved = dict(same, **{"update/w": np.array([-1e-3, 3e-4, -1e-3])})
    assert spec.compare(ref, eps_moved) == []
    flipped = dict(same, **{"update/w": np.array([1e-3, 1e-3, -1e-3])})
    assert any(p.startswith("update/w") for p in spec.compare(ref, flipped))
    assert any("shape" in p for p in spec.compare(ref, dict(same, **{"grad/w": np.ones(2)})))
    assert any("non-finite" in p for p in spec.compare(
        ref, dict(same, **{"grad/w": np.array([np.nan, 0.0, 3.0])})))
    assert any("missing" in p for p in spec.compare(ref, {"loss": np.float32(2.0)}))


def _run(ratios, memory=None):
    return {"floor": "numpy", "meta": {"device": "cpu", "cores": 2},
            "results": [{"case": c, "size": "tiny", "impl": i, "status": "ok", "ratio": r}
                        for (c, i), r in ratios.items()],
            "memory": [{"case": c, "size": "tiny", "impl": i, "ratio": r}
                       for (c, i), r in (memory or {}).items()]}


def test_check_reports_what_got_slower(tmp_path, capsys):
    base = _run({("mlp", "numpy"): 1.0, ("mlp", "gradtape"): 1.0, ("cnn", "gradtape"): 2.0},
                {("mlp", "gradtape"): 1.0})
    now = _run({("mlp", "numpy"): 1.0, ("mlp", "gradtape"): 1.2, ("cnn", "gradtape"): 2.1},
               {("mlp", "gradtape"): 1.1})
    cmp = check.compare_runs(base, now, 0.15)
    assert [r[:4] for r in cmp["slower"]] == [("time", "mlp", "tiny", "gradtape")]
    assert len(cmp["compared"]) == 3            # the floor itself is not compared
    base_path, now_path = tmp_path / "base.json", tmp_path / "now.json"
    base_path.write_text(json.dumps(base))
    now_path.write_text(json.dumps(now))
    assert check.main(["--run", str(now_path), "--against", str(base_path)]) == 1
    assert "gradtape mlp (tiny, time): 1.00x -> 1.20x (+20%)" in capsys.readouterr().out
    assert check.main(["--run", str(base_path), "--against", str(base_path)]) == 0
    assert check.main(["--run", str(now_path), "--against", str(tmp_path / "none.json")]) == 2
