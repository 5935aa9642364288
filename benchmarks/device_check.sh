#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU and no network: GPU benchmarks, then GPU tests.
#
#   bash benchmarks/device_check.sh OUT_DIR
#
# Installs nothing from the network: it uses the Python found (PYTHON, default python3),
# the checkout on PYTHONPATH (or `pip install --no-deps --no-build-isolation -e .` when
# importing from the checkout fails), and whatever CuPy build (cupy-cuda12x or
# cupy-cuda13x), pytest and PyTorch are already installed.
#
# The whole run keeps to one time budget, DEVICE_CHECK_BUDGET_S seconds (default 420).
# The benchmark runs first, limited to DEVICE_CHECK_BENCH_S seconds (default 150); the GPU
# tests get what is left, the quick test files first. Whatever is stopped by its limit still
# leaves its results: the benchmark rewrites its table after every measurement, and pytest is
# interrupted (SIGINT) so that it writes its summary and JUnit XML.
#
# Writes into OUT_DIR:
#   device_check.log   what ran, for how long, and why anything was skipped
#   nvidia-smi.txt     the GPU(s)
#   info.txt           python -m gradtape info
#   gpu_bench.log, gpu_results.md, gpu_results.json   benchmarks/gpu.py (table and targets)
#   pytest_gpu.log     pytest -m gpu (GPU tests and the gpu cases of device-parameterised tests)
#   pytest_gpu.xml     the same as JUnit XML
# Exit status: 0 all passed; 1 tests or benchmarks failed or ran out of time; 2 no GPU / no
# usable CuPy / no Python.
#
# DEVICE_CHECK_DRY_RUN=1 runs the same steps on a machine without a GPU, to check the script
# itself: no GPU checks, the benchmark on the strict test device (benchmarks/gpu.py
# --device strict:0), and the GPU tests, which then skip. DEVICE_CHECK_BENCH_ARGS adds
# arguments to benchmarks/gpu.py (e.g. "--quick --cases mlp-128").
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: bash benchmarks/device_check.sh OUT_DIR" >&2
    exit 2
fi
BUDGET=${DEVICE_CHECK_BUDGET_S:-420}
BENCH_LIMIT=${DEVICE_CHECK_BENCH_S:-150}
DRY=${DEVICE_CHECK_DRY_RUN:-0}
read -r -a BENCH_ARGS <<< "${DEVICE_CHECK_BENCH_ARGS:-}"
if [ "$DRY" = 1 ]; then
    BENCH_ARGS+=(--device strict:0)
    export CUDA_VISIBLE_DEVICES=""      # (no GPU is used even where there is one)
fi
case "$BUDGET$BENCH_LIMIT" in
    *[!0-9]*) echo "DEVICE_CHECK_BUDGET_S and DEVICE_CHECK_BENCH_S must be whole seconds" >&2; exit 2 ;;
esac
T0=$SECONDS
# left: seconds left of the budget. cap N: N, or what is left if that is less (at least 5).
left() { echo $(( BUDGET - (SECONDS - T0) )); }
cap() {
    local l
    l=$(left)
    if [ "$1" -lt "$l" ]; then echo "$1"; elif [ "$l" -gt 5 ]; then echo "$l"; else echo 5; fi
}

# The interpreter, as an absolute path (the script changes directory below).
PY=${PYTHON:-python3}
if ! PY_FOUND=$(command -v "$PY"); then
    echo "[device_check] python not found: '$PY' (set PYTHON to a Python with NumPy and CuPy)" >&2
    exit 2
fi
case $PY_FOUND in
    /*) PY=$PY_FOUND ;;
    *) PY="$(pwd)/$PY_FOUND" ;;
esac

OUT=$1
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
LOG="$OUT/device_check.log"
: > "$LOG"
log() { echo "[device_check] $*" | tee -a "$LOG"; }
STATUS=0

log "checkout: $ROOT; python: $PY; budget ${BUDGET} s (benchmark at most ${BENCH_LIMIT} s)"

# 1. Is there an NVIDIA GPU at all? (fails fast on a CPU-only machine)
if [ "$DRY" = 1 ]; then
    log "dry run (DEVICE_CHECK_DRY_RUN=1): no GPU checks; the benchmark runs on the strict test device and the GPU tests skip"
elif ! command -v nvidia-smi > /dev/null 2>&1; then
    log "no GPU: nvidia-smi is not installed, so this is not an NVIDIA GPU machine (or the driver is missing); nothing to check"
    exit 2
fi
if [ "$DRY" != 1 ]; then
    if ! timeout 20 nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || ! grep -q "NVIDIA" "$OUT/nvidia-smi.txt"; then
        log "no GPU: nvidia-smi found no usable NVIDIA GPU:"
        tee -a "$LOG" < "$OUT/nvidia-smi.txt"
        exit 2
    fi
    log "GPU: $(timeout 20 nvidia-smi -L 2>/dev/null | head -n 4 | tr '\n' ';')"
fi

# CuPy compiles its kernels on first use and caches them under ~/.cupy: elsewhere when that
# cannot be written.
if [ -z "${CUPY_CACHE_DIR:-}" ]; then
    cache="${HOME:-/nonexistent}/.cupy/kernel_cache"
    if ! { mkdir -p "$cache" && [ -w "$cache" ]; } 2> /dev/null; then
        for cache in "${TMPDIR:-/tmp}/gradtape-cupy-cache" "$OUT/cupy_cache"; do
            if { mkdir -p "$cache" && [ -w "$cache" ]; } 2> /dev/null; then
                export CUPY_CACHE_DIR=$cache
                log "CuPy kernel cache: $cache (${HOME:-\$HOME}/.cupy is not writable)"
                break
            fi
        done
    fi
fi

# 2. gradtape importable from the checkout, else an offline editable install.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
if ! "$PY" -c "import gradtape" >> "$LOG" 2>&1; then
    log "gradtape does not import from the checkout; trying pip install --no-deps --no-build-isolation -e ."
    if ! timeout "$(cap 60)" "$PY" -m pip install --no-deps --no-build-isolation -e . >> "$LOG" 2>&1; then
        log "could not install gradtape offline (see above); NumPy and setuptools must be installed"
        exit 2
    fi
fi

# 2b. The optional C module (per-op hot paths): build it in place when it is missing and a C
# compiler is there; without it gradtape runs the same code in Python. The build reports
# success even when the (optional) extension failed, so the import decides.
if ! "$PY" -c "import gradtape._speedups" > /dev/null 2>&1; then
    timeout "$(cap 60)" "$PY" setup.py -q build_ext --inplace >> "$LOG" 2>&1
    if "$PY" -c "import gradtape._speedups" >> "$LOG" 2>&1; then
        log "built gradtape._speedups in place: C hot paths on"
    else
        log "could not build gradtape._speedups (no C compiler or Python headers? see above): the Python hot paths run instead"
    fi
else
    log "gradtape._speedups imports: C hot paths on"
fi

# 3. CuPy must see the GPU.
if [ "$DRY" != 1 ] && ! timeout "$(cap 60)" "$PY" - >> "$LOG" 2>&1 <<'PYEOF'
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

timeout "$(cap 30)" "$PY" -m gradtape info > "$OUT/info.txt" 2>&1
tee -a "$LOG" < "$OUT/info.txt"

# 4. Benchmarks first: the numbers of this one run. gpu.py stops starting measurements
# before its --budget-total; the timeout (SIGINT, then SIGKILL) is the backstop, and the
# table is on disk after every measurement either way.
limit=$(cap "$BENCH_LIMIT")
log "running benchmarks/gpu.py (limit $limit s; $(left) s of the budget left)"
start=$SECONDS
timeout -s INT -k 10 "$limit" "$PY" benchmarks/gpu.py --out "$OUT" \
    --budget-total $(( limit > 30 ? limit - 15 : limit / 2 )) ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} \
    > "$OUT/gpu_bench.log" 2>&1
rc=$?
log "benchmarks/gpu.py: status $rc after $(( SECONDS - start )) s"
if [ $rc -ne 0 ]; then
    log "benchmarks/gpu.py failed or stopped early (status $rc; 124 = timed out, 137 = killed): see gpu_bench.log"
    tail -n 20 "$OUT/gpu_bench.log" | tee -a "$LOG"
    STATUS=1
fi
if [ -f "$OUT/gpu_results.md" ]; then
    tee -a "$LOG" < "$OUT/gpu_results.md"
else
    log "no gpu_results.md was written"
fi

# 5. GPU tests with what is left: everything marked gpu, including the gpu cases of the
# device fixture. The quick files first, the many gradcheck cases last, so a cut-short run
# has still covered the kernels and devices; the rest of tests/ in between (cheap to collect,
# and any GPU tests there are not missed).
if ! "$PY" -c "import pytest" > /dev/null 2>&1; then
    log "pytest is not installed: GPU tests skipped"
    STATUS=1
elif [ "$(( $(left) - 20 ))" -lt 30 ]; then
    log "no time left for the GPU tests ($(left) s of the budget left)"
    STATUS=1
else
    files=(tests/test_kernels.py tests/test_devices.py)
    has_hypothesis=1
    "$PY" -c "import hypothesis" > /dev/null 2>&1 || has_hypothesis=0
    for f in tests/test_*.py; do
        case $f in
            tests/test_kernels.py|tests/test_devices.py|tests/test_gradcheck.py) ;;
            tests/test_ops.py) [ $has_hypothesis = 1 ] && files+=("$f") ;;
            *) files+=("$f") ;;
        esac
    done
    files+=(tests/test_gradcheck.py)
    [ $has_hypothesis = 1 ] || log "hypothesis is not installed: tests/test_ops.py (property tests, no GPU tests) is left out"
    limit=$(( $(left) - 20 ))      # room for the 15 s grace after SIGINT
    log "running pytest -m gpu (limit $limit s)"
    start=$SECONDS
    timeout -s INT -k 15 "$limit" "$PY" -m pytest -v -m gpu -p no:cacheprovider -rfEs \
        --tb=short --durations=15 --continue-on-collection-errors -o faulthandler_timeout=120 \
        --junitxml="$OUT/pytest_gpu.xml" "${files[@]}" > "$OUT/pytest_gpu.log" 2>&1
    rc=$?
    log "pytest: status $rc after $(( SECONDS - start )) s"
    grep -E '^(FAILED|ERROR)' "$OUT/pytest_gpu.log" | head -n 40 | tee -a "$LOG"
    tail -n 3 "$OUT/pytest_gpu.log" | tee -a "$LOG"
    if [ $rc -ne 0 ]; then
        log "GPU tests failed (status $rc; 124 = timed out, 137 = killed, 5 = none collected): see pytest_gpu.log"
        STATUS=1
    fi
fi

log "done (status $STATUS) after $(( SECONDS - T0 )) s; results in $OUT"
exit $STATUS
