"""GPU benchmarks: gradtape on CuPy, eager and captured into a CUDA graph, beside PyTorch.

    python benchmarks/gpu.py --out OUT_DIR [--quick]

Workloads (float32):

* chain: ``y = tanh(y * 1.01 + 0.1)`` 100 times on 16 floats, recorded and differentiated
  (per-op overhead);
* mlp: a 784-512-512-10 ReLU network, one training step (forward, softmax cross-entropy,
  backward, SGD with momentum) at batch 128 and 1024;
* cnn: conv 3x3x16 - max-pool - conv 3x3x32 - max-pool - dense 10 on 28x28x1 images, one
  training step at batch 128 and 1024.

Each is timed with CUDA events after a warm-up (median of many runs), eagerly and as a
captured step (``gt.capture``), and the same model in PyTorch eager mode when PyTorch with
CUDA is installed. Also reported: peak GPU memory of a step and host synchronisations per
step. Writes ``gpu_results.md`` (the table) and ``gpu_results.json`` into OUT_DIR and prints
the table. Installs nothing; exits with status 2 and a message when no GPU is usable.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

CHAIN_STEPS = 100
CHAIN_SIZE = 16
LR = 0.01
MOMENTUM = 0.9


# --- timing --------------------------------------------------------------------------------

def time_cuda(fn, event_factory, synchronize, warmup, runs, budget_s):
    """Median milliseconds of ``fn`` between two CUDA events, after ``warmup`` calls.

    The number of runs shrinks so the timing stays within ``budget_s`` seconds.
    """
    for _ in range(warmup):
        fn()
    synchronize()
    t0 = time.perf_counter()
    fn()
    synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    runs = max(5, min(runs, int(budget_s / one)))
    times = []
    for _ in range(runs):
        start, end = event_factory()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(_elapsed(start, end))
    return statistics.median(times), runs


def _elapsed(start, end):
    if hasattr(start, "elapsed_time"):          # torch.cuda.Event
        return start.elapsed_time(end)
    import cupy
    return cupy.cuda.get_elapsed_time(start, end)


# --- gradtape workloads -------------------------------------------------------------------------

def _init(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    sizes = [784, 512, 512, 10]
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [_init(rng, (a, b), a), np.zeros(b, np.float32)]
    return params


def cnn_params(seed=0):
    rng = np.random.default_rng(seed)
    return [_init(rng, (3, 3, 1, 16), 9), np.zeros(16, np.float32),
            _init(rng, (3, 3, 16, 32), 144), np.zeros(32, np.float32),
            _init(rng, (7 * 7 * 32, 10), 7 * 7 * 32), np.zeros(10, np.float32)]


def batch(kind, n, seed=1):
    rng = np.random.default_rng(seed)
    shape = (n, 784) if kind == "mlp" else (n, 28, 28, 1)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, n).astype(np.int32)


def gradtape_step(gt, kind, params):
    """A training step on gradtape Variables: fused kernels, in-place momentum updates."""
    from gradtape.backend import kernels as K
    from gradtape.ops import fused
    velocity = [gt.zeros(p.shape) for p in params]
    dev = params[0].device

    def forward(x):
        if kind == "mlp":
            h = fused.fused_bias_act(gt.matmul(x, params[0]), params[1], "relu")
            h = fused.fused_bias_act(gt.matmul(h, params[2]), params[3], "relu")
            return gt.matmul(h, params[4]) + params[5]
        h = fused.fused_bias_act(gt.nn.conv2d(x, params[0], 1, "SAME"), params[1], "relu")
        h = gt.nn.max_pool2d(h, 2, 2, "VALID")
        h = fused.fused_bias_act(gt.nn.conv2d(h, params[2], 1, "SAME"), params[3], "relu")
        h = gt.nn.max_pool2d(h, 2, 2, "VALID")
        h = gt.reshape(h, (h.shape[0], -1))
        return gt.matmul(h, params[4]) + params[5]

    def step(x, y):
        with gt.GradientTape() as tape:
            loss = gt.reduce_mean(fused.fused_sparse_softmax_cross_entropy(y, forward(x)))
        grads = tape.gradient(loss, params)
        for p, v, g in zip(params, velocity, grads):
            K.sgd_momentum_update(dev.xp, p._value, g._value, v._value, LR, MOMENTUM)
        return loss
    return step


def run_gradtape(gt, device, kind, n, args, captured):
    from gradtape.capture import capture
    if kind == "chain":
        x = gt.constant(np.linspace(-1, 1, CHAIN_SIZE, dtype=np.float32))

        def step():
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = x
                for _ in range(CHAIN_STEPS):
                    y = gt.tanh(y * 1.01 + 0.1)
            return tape.gradient(y, x)
        fn = capture(step) if captured else step
        call = fn
    else:
        params = [gt.Variable(p) for p in (mlp_params() if kind == "mlp" else cnn_params())]
        step = gradtape_step(gt, kind, params)
        fn = capture(step) if captured else step
        xb, yb = batch(kind, n)
        x, y = gt.constant(xb), gt.constant(yb)

        def call():
            return fn(x, y)
    cp = device.xp
    for _ in range(3):          # warm-up, capture
        call()
    device.synchronize()
    device.reset_peak()
    syncs = device.sync_count
    ms, runs = time_cuda(call, lambda: (cp.cuda.Event(), cp.cuda.Event()), device.synchronize,
                         args.warmup, args.runs, args.budget)
    per_step_syncs = (device.sync_count - syncs) / (runs + args.warmup + 1)
    peak = device.memory_info()["peak_bytes"]
    return {"ms": ms, "runs": runs, "peak_mib": peak / 2**20, "syncs_per_step": per_step_syncs}


# --- PyTorch ------------------------------------------------------------------------------------

def run_torch(torch, kind, n, args):
    dev = torch.device("cuda:0")
    if kind == "chain":
        x = torch.tensor(np.linspace(-1, 1, CHAIN_SIZE, dtype=np.float32), device=dev,
                         requires_grad=True)

        def call():
            y = x
            for _ in range(CHAIN_STEPS):
                y = torch.tanh(y * 1.01 + 0.1)
            y.backward(torch.ones_like(y))
            x.grad = None
    else:
        nn = torch.nn
        p = [torch.tensor(a, device=dev) for a in (mlp_params() if kind == "mlp" else cnn_params())]
        if kind == "mlp":
            model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 10)).to(dev)
            linears = [model[0], model[2], model[4]]
            with torch.no_grad():
                for lin, (w, b) in zip(linears, zip(p[0::2], p[1::2])):
                    lin.weight.copy_(w.T)
                    lin.bias.copy_(b)
        else:
            model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(7 * 7 * 32, 10)).to(dev)
            with torch.no_grad():
                model[0].weight.copy_(p[0].permute(3, 2, 0, 1))
                model[3].weight.copy_(p[2].permute(3, 2, 0, 1))
                model[7].weight.copy_(p[4].T)
        opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
        loss_fn = nn.CrossEntropyLoss()
        xb, yb = batch(kind, n)
        if kind == "cnn":
            xb = np.ascontiguousarray(xb.transpose(0, 3, 1, 2))
        x = torch.tensor(xb, device=dev)
        y = torch.tensor(yb.astype(np.int64), device=dev)

        def call():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    ms, runs = time_cuda(call, lambda: (torch.cuda.Event(enable_timing=True),
                                        torch.cuda.Event(enable_timing=True)),
                         torch.cuda.synchronize, args.warmup, args.runs, args.budget)
    return {"ms": ms, "runs": runs, "peak_mib": torch.cuda.max_memory_allocated() / 2**20}


# --- driver ---------------------------------------------------------------------------------------

def _fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}"


def table(rows, torch_version):
    head = ("| workload | batch | gradtape eager ms | gradtape captured ms | PyTorch eager ms "
            "| eager / PyTorch | captured / PyTorch | gradtape peak MiB (eager / captured) "
            "| PyTorch peak MiB | host syncs per step |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        e, c, t = r.get("eager"), r.get("captured"), r.get("torch")
        em = e.get("ms") if isinstance(e, dict) else None
        cm = c.get("ms") if isinstance(c, dict) else None
        tm = t.get("ms") if isinstance(t, dict) else None
        lines.append("| " + " | ".join([
            r["workload"], str(r["batch"] or "-"),
            _fmt(em) if em is not None else _err(e), _fmt(cm) if cm is not None else _err(c),
            _fmt(tm) if tm is not None else _err(t),
            _fmt(em / tm, 2) if em and tm else "-", _fmt(cm / tm, 2) if cm and tm else "-",
            f"{_fmt(_get(e, 'peak_mib'), 1)} / {_fmt(_get(c, 'peak_mib'), 1)}",
            _fmt(_get(t, "peak_mib"), 1),
            f"{_fmt(_get(e, 'syncs_per_step'), 2)} / {_fmt(_get(c, 'syncs_per_step'), 2)}",
        ]) + " |")
    note = ("\nTimes: median of CUDA-event intervals after warm-up. gradtape uses its fused "
            "kernels and one in-place momentum-SGD kernel per parameter; 'captured' is "
            "gt.capture (one CUDA graph launch per step). PyTorch: "
            + (torch_version or "not installed") + ".")
    return "\n".join(lines) + "\n" + note + "\n"


def _err(v):
    return v if isinstance(v, str) else "-"


def _get(v, key):
    return v.get(key) if isinstance(v, dict) else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu_bench_out")
    ap.add_argument("--quick", action="store_true", help="fewer runs (a smoke test)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--budget", type=float, default=4.0, help="seconds of timing per case")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.budget = 10, 2, 0.5
    os.makedirs(args.out, exist_ok=True)

    import gradtape as gt
    from gradtape import backend
    reason = backend.gpu_unavailable_reason()
    if reason is not None:
        print(f"gpu.py: no GPU usable by CuPy: {reason}", file=sys.stderr)
        return 2
    device = gt.get_device("gpu:0")
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    gpu_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        import torch
        torch_ok = torch.cuda.is_available()
        torch_version = f"torch {torch.__version__}" if torch_ok else None
    except Exception:
        torch, torch_ok, torch_version = None, False, None

    cases = [("chain", None), ("mlp", 128), ("mlp", 1024), ("cnn", 128), ("cnn", 1024)]
    rows = []
    with gt.device(device):
        for kind, n in cases:
            row = {"workload": kind, "batch": n}
            for label, captured in (("eager", False), ("captured", True)):
                t0 = time.perf_counter()
                try:
                    row[label] = run_gradtape(gt, device, kind, n, args, captured)
                except Exception as exc:  # report the failure in the table, keep going
                    row[label] = f"error: {type(exc).__name__}"
                    row[label + "_traceback"] = traceback.format_exc()
                print(f"gradtape {kind:5s} {str(n):>5s} {label:8s} {row[label]} "
                      f"({time.perf_counter() - t0:.1f} s)", flush=True)
            if torch_ok:
                try:
                    row["torch"] = run_torch(torch, kind, n, args)
                except Exception as exc:
                    row["torch"] = f"error: {type(exc).__name__}"
                    row["torch_traceback"] = traceback.format_exc()
                print(f"torch    {kind:5s} {str(n):>5s} eager    {row['torch']}", flush=True)
            else:
                row["torch"] = "not installed"
            rows.append(row)

    md = (f"# GPU benchmark\n\n{gpu_name}; CuPy {cupy.__version__}; gradtape {gt.__version__}; "
          f"Python {platform.python_version()}\n\n" + table(rows, torch_version))
    with open(os.path.join(args.out, "gpu_results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "gpu_results.json"), "w") as f:
        json.dump({"gpu": gpu_name, "cupy": cupy.__version__, "torch": torch_version,
                   "rows": rows}, f, indent=2, default=str)
    print(md)
    failed = [r for r in rows for k in ("eager", "captured") if isinstance(r.get(k), str)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
