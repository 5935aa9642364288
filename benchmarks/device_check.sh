#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU and no network: GPU tests, then GPU benchmarks.
#
#   bash benchmarks/device_check.sh OUT_DIR
#
# Installs nothing from the network: it uses the Python found (PYTHON, default python3),
# the checkout on PYTHONPATH (or `pip install --no-deps --no-build-isolation -e .` when
# importing from the checkout fails), and whatever CuPy build (cupy-cuda12x or
# cupy-cuda13x), pytest and PyTorch are already installed. Writes into OUT_DIR:
#   device_check.log   what ran and why anything was skipped
#   nvidia-smi.txt     the GPU(s)
#   info.txt           python -m gradtape info
#   pytest_gpu.log     pytest -m gpu (GPU tests and the gpu cases of device-parameterised tests)
#   pytest_gpu.xml     the same as JUnit XML
#   gpu_bench.log, gpu_results.md, gpu_results.json   benchmarks/gpu.py
# Exit status: 0 all passed; 1 tests or benchmarks failed; 2 no GPU / no usable CuPy.
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: bash benchmarks/device_check.sh OUT_DIR" >&2
    exit 2
fi
OUT=$1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
PY=${PYTHON:-python3}
LOG="$OUT/device_check.log"
: > "$LOG"
log() { echo "[device_check] $*" | tee -a "$LOG"; }
STATUS=0

log "checkout: $ROOT; python: $(command -v "$PY")"

# 1. Is there an NVIDIA GPU at all? (fails fast on a CPU-only machine)
if ! command -v nvidia-smi > /dev/null 2>&1; then
    log "no GPU: nvidia-smi is not installed, so this is not an NVIDIA GPU machine (or the driver is missing); nothing to check"
    exit 2
fi
if ! timeout 30 nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || ! grep -q "NVIDIA" "$OUT/nvidia-smi.txt"; then
    log "no GPU: nvidia-smi found no usable NVIDIA GPU:"
    tee -a "$LOG" < "$OUT/nvidia-smi.txt"
    exit 2
fi
log "GPU: $(timeout 30 nvidia-smi -L 2>/dev/null | head -n 4 | tr '\n' ';')"

# 2. gradtape importable from the checkout, else an offline editable install.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
if ! "$PY" -c "import gradtape" >> "$LOG" 2>&1; then
    log "gradtape does not import from the checkout; trying pip install --no-deps --no-build-isolation -e ."
    if ! timeout 300 "$PY" -m pip install --no-deps --no-build-isolation -e . >> "$LOG" 2>&1; then
        log "could not install gradtape offline (see above); NumPy and setuptools must be installed"
        exit 2
    fi
fi

# 2b. The optional C module (per-op hot paths): build it in place when it is missing and a C
# compiler is there; without it gradtape runs the same code in Python.
if ! "$PY" -c "import gradtape._speedups" > /dev/null 2>&1; then
    if timeout 300 "$PY" setup.py -q build_ext --inplace >> "$LOG" 2>&1; then
        log "built gradtape._speedups in place"
    else
        log "could not build gradtape._speedups (no C compiler or Python headers?): the Python hot paths run instead"
    fi
fi

# 3. CuPy must see the GPU.
if ! timeout 180 "$PY" - >> "$LOG" 2>&1 <<'PYEOF'
import sys
from gradtape import backend
reason = backend.gpu_unavailable_reason()
if reason is not None:
    print(f"[device_check] no GPU usable by CuPy: {reason}")
    sys.exit(3)
import cupy
print(f"[device_check] CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
      f"{cupy.cuda.runtime.getDeviceCount()} device(s)")
PYEOF
then
    log "no GPU usable by CuPy (see above): install cupy-cuda12x or cupy-cuda13x (gradtape[cuda12] / gradtape[cuda13])"
    exit 2
fi

timeout 120 "$PY" -m gradtape info > "$OUT/info.txt" 2>&1
tee -a "$LOG" < "$OUT/info.txt"

# 4. GPU tests: everything marked gpu, including the gpu cases of the device fixture.
if "$PY" -c "import pytest" > /dev/null 2>&1; then
    log "running pytest -m gpu (limit 300 s)"
    timeout 300 "$PY" -m pytest -q -m gpu -p no:cacheprovider -rs \
        --junitxml="$OUT/pytest_gpu.xml" $("$PY" -c "import hypothesis" > /dev/null 2>&1 || echo --ignore=tests/test_ops.py) tests > "$OUT/pytest_gpu.log" 2>&1
    rc=$?
    tail -n 5 "$OUT/pytest_gpu.log" | tee -a "$LOG"
    if [ $rc -ne 0 ]; then
        log "GPU tests failed (status $rc; 124 = timed out): see pytest_gpu.log"
        STATUS=1
    fi
else
    log "pytest is not installed: GPU tests skipped"
    STATUS=1
fi

# 5. Benchmarks (limit 240 s).
log "running benchmarks/gpu.py (limit 240 s)"
timeout 240 "$PY" benchmarks/gpu.py --out "$OUT" > "$OUT/gpu_bench.log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
    log "benchmarks/gpu.py failed (status $rc; 124 = timed out): see gpu_bench.log"
    tail -n 20 "$OUT/gpu_bench.log" | tee -a "$LOG"
    STATUS=1
fi
if [ -f "$OUT/gpu_results.md" ]; then
    cat "$OUT/gpu_results.md" | tee -a "$LOG"
fi
log "done (status $STATUS); results in $OUT"
exit $STATUS
