"""The seed programs (examples/seeds) run with `import gradtape as tf` and print the seed's numbers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "examples" / "seeds"

EXPECTED = {
    "seed_000_basics.py": ["dy_dx 6.0", "dy_dx 6.0", "d2y_dx2 2.0", "dz_dx 108.0", "dy_dx 6.0"],
    "seed_001_tape.py": [
        "gt.Tensor(8.0, shape=(), dtype=float32, device=cpu:0)",
        "gt.Tensor([[8. 8.]", " [8. 8.]], shape=(2, 2), dtype=float32, device=cpu:0)",
        "gt.Tensor(3.0, shape=(), dtype=float32, device=cpu:0)",
        "gt.Tensor(6.0, shape=(), dtype=float32, device=cpu:0)",
        "gt.Tensor(24.0, shape=(), dtype=float32, device=cpu:0)",
        "gt.Tensor(24.0, shape=(), dtype=float32, device=cpu:0)",
        "gt.Tensor(8.0, shape=(), dtype=float32, device=cpu:0)",
    ],
    "seed_003_variables.py": [
        "6.0", "None", "6.0", "6.0", "None", "18.0",
        "RuntimeError: A non-persistent GradientTape can only be used to compute one set of "
        "gradients (or jacobians)",
        "6.0", "108.0", "6.0", "4.0", "12.0",
    ],
}


def run_example(path: Path) -> list[str]:
    env = dict(os.environ, GRADTAPE_DEVICE="cpu", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_seed_program_prints_seed_numbers(name):
    assert run_example(SEEDS / name) == EXPECTED[name]
