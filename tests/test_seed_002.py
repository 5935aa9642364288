"""Seed 002's programs (examples/seeds/seed_002_*.py) run and print the seed's numbers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "examples" / "seeds"

EXPECTED = {
    # s = w1 * x1 + w2 * x2 = 31; ds/dw1 = x1 = 5
    "seed_002_gradient_tape.py": ["31.0", "5.0"],
    # ds/dx1 = w1 = 2; with params=["w1", "w2"]: ds/dw2 = x2 = 7
    "seed_002_gradients_function.py": ["2.0", "7.0"],
    # ds/dw1 = 5; with w1 untrainable only w2's gradient (7) comes back
    "seed_002_implicit_gradients.py": ["5.0", "1", "7.0"],
    # the value s = 31 together with the gradients
    "seed_002_implicit_value_and_gradients.py": ["31.0"],
}


def run_example(path: Path) -> list[str]:
    env = dict(os.environ, GRADTAPE_DEVICE="cpu", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_every_seed_002_program_is_checked():
    assert sorted(p.name for p in SEEDS.glob("seed_002_*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_seed_002_program_prints_seed_numbers(name):
    assert run_example(SEEDS / name) == EXPECTED[name]
