"""Running example programs from tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(path, *args, timeout=120, device="cpu") -> list[str]:
    """Run a program from the checkout on ``device`` (the CPU); return its printed lines."""
    env = dict(os.environ, GRADTAPE_DEVICE=device, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                         env=env, timeout=timeout, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()
