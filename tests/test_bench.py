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
from benchmarks import check, gpu  # noqa: E402
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


# --- benchmarks/gpu.py: its pure-Python parts, on the strict CPU device ---------------------------

def test_gpu_dry_run_writes_table_and_targets(tmp_path):
    status = gpu.main(["--device", "strict:0", "--quick", "--cases", "mlp-128,chain",
                       "--out", str(tmp_path)])
    assert status == 0
    result = json.loads((tmp_path / "gpu_results.json").read_text())
    assert result["status"] == "complete"
    assert [(r["workload"], r["batch"]) for r in result["rows"]] == [("mlp", 128), ("chain", None)]
    for row in result["rows"]:
        for cell in ("eager", "captured"):
            assert row[cell]["ms"] > 0 and row[cell]["syncs_per_step"] == 0
            assert row[cell]["peak_mib"] >= row[cell]["peak_above_base_mib"] > 0
        assert isinstance(row["torch"], dict) or row["torch"] == "not measured"
    by_target = {t["target"].split(":")[0]: t for t in result["targets"]}
    assert len(by_target) == 4
    assert by_target["mlp batch 1024"]["result"] == "not measured"
    assert "mlp-1024 was not run" in by_target["mlp batch 1024"]["detail"]
    assert by_target["host synchronisations per step == 0 (gradtape, eager and captured)"][
        "result"] == "PASS"
    md = (tmp_path / "gpu_results.md").read_text()
    assert "Status: COMPLETE" in md and "## Targets" in md and "CUPY_TF32=" in md
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def _fake_cell(ms, peak=10.0):
    return {"ms": ms, "runs": 5, "peak_mib": peak + 1, "base_mib": 1.0,
            "peak_above_base_mib": peak, "syncs_per_step": 0.0}


def test_gpu_targets_judge_each_goal():
    rows = [{"workload": "mlp", "batch": 128, "eager": _fake_cell(2.0), "captured": _fake_cell(0.5),
             "torch": {"ms": 1.0, "runs": 5, "peak_mib": 11.0, "base_mib": 1.0,
                       "peak_above_base_mib": 10.0}},
            {"workload": "mlp", "batch": 1024, "eager": _fake_cell(1.05, peak=13.0),
             "captured": "error: CaptureError: no", "torch": _fake_cell(1.0)}]
    large, small, memory, syncs = gpu.targets(rows)
    assert large["target"].startswith("mlp batch 1024")
    assert small["target"].startswith("mlp batch 128")
    assert large["result"] == "PASS" and large["measured"] == 1.05
    assert small["result"] == "PASS" and small["measured"] == 0.5
    assert memory["result"] == "FAIL" and memory["measured"] == pytest.approx(1.3)
    assert "worst: mlp-1024" in memory["detail"] and "cnn-128 was not run" in memory["detail"]
    assert syncs["result"] == "PASS" and syncs["measured"] == 0
    rows[0]["torch"] = "not measured"
    small = gpu.targets(rows)[1]
    assert small["result"] == "not measured"
    assert "mlp-128 PyTorch: not measured" in small["detail"]
    rows[1]["eager"] = _fake_cell(1.0) | {"syncs_per_step": 1.0}
    assert gpu.targets(rows)[-1]["result"] == "FAIL"


def test_gpu_interrupt_keeps_what_was_measured(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_run(gt, device, kind, n, args, captured):
        calls.append((kind, n, captured))
        if len(calls) == 2:
            raise KeyboardInterrupt("signal 15")
        return _fake_cell(1.0)
    monkeypatch.setattr(gpu, "run_gradtape", fake_run)
    status = gpu.main(["--device", "strict:0", "--quick", "--out", str(tmp_path)])
    assert status == 1
    result = json.loads((tmp_path / "gpu_results.json").read_text())
    assert result["status"] == "interrupted" and "mlp-128 captured" in result["detail"]
    (row,) = result["rows"]
    assert row["eager"]["ms"] == 1.0 and row["captured"] == "interrupted"
    assert "Status: INTERRUPTED" in (tmp_path / "gpu_results.md").read_text()
    assert "interrupted during mlp-128 captured" in capsys.readouterr().err


def test_gpu_budget_total_skips_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "run_gradtape", lambda *a: _fake_cell(1.0))
    monkeypatch.setattr(gpu, "load_torch", lambda on_gpu: (None, "not installed"))
    status = gpu.main(["--device", "strict:0", "--budget-total", "1", "--out", str(tmp_path)])
    assert status == 1
    result = json.loads((tmp_path / "gpu_results.json").read_text())
    assert result["status"] == "stopped" and result["torch"] == "not installed"
    assert len(result["skipped"]) == 2 * len(gpu.CASES)     # torch cells are not measured
    assert "Not run (time budget): mlp-128 eager" in (tmp_path / "gpu_results.md").read_text()


def test_gpu_failure_is_printed_at_once_and_kept(tmp_path, monkeypatch, capsys):
    def broken(gt, device, kind, n, args, captured):
        raise ValueError("shapes (3,) | (4,) disagree\nsecond line")
    monkeypatch.setattr(gpu, "run_gradtape", broken)
    monkeypatch.setattr(gpu, "load_torch", lambda on_gpu: (None, "not installed"))
    assert gpu.main(["--device", "strict:0", "--cases", "chain", "--out", str(tmp_path)]) == 1
    (row,) = json.loads((tmp_path / "gpu_results.json").read_text())["rows"]
    assert row["eager"] == "error: ValueError: shapes (3,) / (4,) disagree"
    assert "Traceback" in row["eager_traceback"]
    assert "--- chain eager failed:\nTraceback" in capsys.readouterr().err
