"""The seed programs (examples/seeds) run with `import gradtape as tf` and print the seed's numbers."""
from __future__ import annotations

import pytest

from _run import ROOT, run_example

SEEDS = ROOT / "examples" / "seeds"

EXPECTED = {
    "seed_000_basics.py": ["dy_dx 6.0", "dy_dx 6.0", "d2y_dx2 2.0", "dz_dx 108.0", "dy_dx 6.0"],
    "seed_001_tape.py": [
        "gt.Tensor(8.0, shape=(), dtype=float32, device=cpu:0)",
        "gt.Tensor(", "[[8. 8.]", " [8. 8.]], shape=(2, 2), dtype=float32, device=cpu:0)",
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
    # s = w1 * x1 + w2 * x2 = 31; ds/dw1 = x1 = 5
    "seed_002_gradient_tape.py": ["31.0", "5.0"],
    # ds/dx1 = w1 = 2; with params=["w1", "w2"]: ds/dw2 = x2 = 7
    "seed_002_gradients_function.py": ["2.0", "7.0"],
    # ds/dw1 = 5; with w1 untrainable only w2's gradient (7) comes back
    "seed_002_implicit_gradients.py": ["5.0", "1", "7.0"],
    # the value s = 31 together with the gradients
    "seed_002_implicit_value_and_gradients.py": ["31.0"],
}
# seed 004 (training with SGD) is checked number by number in tests/test_examples.py
CHECKED_ELSEWHERE = {"seed_004_linear_regression.py"}


def test_every_seed_program_is_checked():
    assert sorted(p.name for p in SEEDS.glob("seed_*.py")) == sorted(
        set(EXPECTED) | CHECKED_ELSEWHERE)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_seed_program_prints_seed_numbers(name):
    assert run_example(SEEDS / name) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED) + sorted(CHECKED_ELSEWHERE))
def test_seed_program_runs_unchanged_on_the_strict_device(name):
    """As on a GPU: the programs' tensors live where the host cannot read them implicitly;
    they print the same numbers (tensors print their device)."""
    got = run_example(SEEDS / name, device="strict:0")
    if name in EXPECTED:
        assert got == [line.replace("device=cpu:0", "device=strict:0") for line in EXPECTED[name]]
    else:
        assert got == run_example(SEEDS / name)
