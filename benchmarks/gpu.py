"""GPU benchmarks: gradtape on CuPy, eager and captured into a CUDA graph, beside PyTorch.

    python benchmarks/gpu.py --out OUT_DIR [--quick] [--budget-total SECONDS]

Workloads (float32):

* mlp: a 784-512-512-10 ReLU network, one training step (forward, softmax cross-entropy,
  backward, SGD with momentum) at batch 128 and 1024;
* cnn: conv 3x3x16 - max-pool - conv 3x3x32 - max-pool - dense 10 on 28x28x1 images, one
  training step at batch 128 and 1024;
* chain: ``y = tanh(y * 1.01 + 0.1)`` 100 times on 16 floats, recorded and differentiated
  (per-op overhead).

Each is timed with CUDA events after a warm-up (median of many runs), eagerly and as a
captured step (``gt.capture``), and the same model in PyTorch eager mode when PyTorch with
CUDA is installed (TF32 off, so both sides compute in full float32). Also reported: peak GPU
memory of a step, absolute and above what was in use before the case, and host
synchronisations per step; after the table, the performance targets with PASS or FAIL.

``gpu_results.md`` (the table) and ``gpu_results.json`` are rewritten in OUT_DIR after every
measurement, so a run that is stopped (SIGINT, SIGTERM, ``--budget-total``) still leaves the
numbers it has. Installs nothing; exits with status 2 and a message when no GPU is usable.
``--device strict:0`` is a dry run on the CPU (the strict test device, host-clock timing,
PyTorch on the CPU when installed) that checks this script, not the speed.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import signal
import statistics
import sys
import threading
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
MIB = 2 ** 20

# Run order: the cases the targets need first, so a short run still judges them.
CASES = [("mlp", 128), ("mlp", 1024), ("cnn", 128), ("cnn", 1024), ("chain", None)]
CELLS = ("eager", "captured", "torch")

TARGET_MLP_LARGE = 1.10     # mlp batch 1024: gradtape eager / PyTorch eager
TARGET_CAPTURED_SMALL = 1.0  # mlp batch 128: gradtape captured / PyTorch eager (strictly below)
TARGET_MEMORY = 1.10        # gradtape eager peak / PyTorch peak, above the baseline


def case_name(kind, n):
    return kind if n is None else f"{kind}-{n}"


# --- timing --------------------------------------------------------------------------------

class HostEvent:
    """A stand-in for a CUDA event on the CPU (dry run): the host clock at ``record()``."""

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


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
    if isinstance(start, HostEvent):
        return (end.t - start.t) * 1e3
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
    """A training step on gradtape Variables: fused kernels, and Keras' SGD with momentum
    (one multi-tensor launch updates every variable in place)."""
    from gradtape.ops import fused
    opt = gt.optimizers.SGD(LR, momentum=MOMENTUM)

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
        opt.apply_gradients(zip(grads, params))
        return loss
    return step


def _is_cupy(device):
    return device.name.startswith("gpu")


def _clear_gradtape(device):
    """Collect garbage and hand CuPy's cached blocks back, so a case starts from a clean pool."""
    gc.collect()
    if _is_cupy(device):
        with device.activate():
            device.xp.get_default_memory_pool().free_all_blocks()


def _used_bytes(device):
    return device.memory_info()["used_bytes"] or 0


def _reset_peak(device):
    if hasattr(device, "reset_peak"):
        device.reset_peak()
    else:                                       # the strict device
        device.peak_bytes = _used_bytes(device)


def _track_peak(device, on):
    """Whether the CuPy allocator reads the pool's usage at each allocation (a walk over its
    blocks, so it is off while timing)."""
    if _is_cupy(device):
        from gradtape.backend import cupy_backend
        alloc = cupy_backend.allocator()
        if alloc is not None:
            alloc.track_peak = on


def run_gradtape(gt, device, kind, n, args, captured):
    from gradtape.capture import capture
    _clear_gradtape(device)
    base = _used_bytes(device)
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
    if _is_cupy(device):
        cp = device.xp

        def events():
            return cp.cuda.Event(), cp.cuda.Event()
    else:
        def events():
            return HostEvent(), HostEvent()
    for _ in range(3):          # warm-up, capture
        call()
    device.synchronize()
    _track_peak(device, False)  # timed without the allocator reading the pool's usage
    syncs = device.sync_count
    ms, runs = time_cuda(call, events, device.synchronize, args.warmup, args.runs, args.budget)
    per_step_syncs = (device.sync_count - syncs) / (runs + args.warmup + 1)
    _reset_peak(device)         # then the peak of a few more steps, tracked at each allocation
    for _ in range(3):
        call()
    device.synchronize()
    peak = device.memory_info()["peak_bytes"]
    _track_peak(device, False)
    return {"ms": ms, "runs": runs, "peak_mib": peak / MIB, "base_mib": base / MIB,
            "peak_above_base_mib": (peak - base) / MIB, "syncs_per_step": per_step_syncs}


# --- PyTorch ------------------------------------------------------------------------------------

def load_torch(on_gpu):
    """``(torch or None, a line saying what was found)``; on a GPU, only a torch that sees it."""
    try:
        import torch
    except ImportError:
        return None, "not installed"
    except Exception as exc:                    # a broken install: say so, go on without it
        return None, f"import failed: {_one_line(exc)}"
    version = f"torch {torch.__version__}"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if not on_gpu:
        return torch, f"{version} on the CPU (dry run)"
    if torch.version.cuda is None:
        return None, f"{version} is a CPU-only build"
    try:
        if not torch.cuda.is_available():
            return None, f"{version} (CUDA {torch.version.cuda}) finds no usable GPU"
        setup_torch(torch)
    except Exception as exc:
        return None, f"{version} (CUDA {torch.version.cuda}) failed to start: {_one_line(exc)}"
    return torch, f"{version}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"


def setup_torch(torch):
    """Start cuBLAS and cuDNN before any case is measured, so their long-lived workspaces are
    in every case's baseline rather than in the first one's peak."""
    dev = torch.device("cuda:0")
    a = torch.ones(64, 64, device=dev, requires_grad=True)
    img = torch.ones(2, 1, 8, 8, device=dev)
    w = torch.ones(4, 1, 3, 3, device=dev, requires_grad=True)
    ((a @ a).sum() + torch.nn.functional.conv2d(img, w, padding=1).sum()).backward()
    torch.cuda.synchronize()


def run_torch(torch, kind, n, args, on_gpu=True):
    dev = torch.device("cuda:0" if on_gpu else "cpu")
    gc.collect()
    if on_gpu:
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
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
        p = [torch.tensor(a) for a in (mlp_params() if kind == "mlp" else cnn_params())]
        if kind == "mlp":
            model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 10))
            linears = [model[0], model[2], model[4]]
            with torch.no_grad():
                for lin, (w, b) in zip(linears, zip(p[0::2], p[1::2])):
                    lin.weight.copy_(w.T)
                    lin.bias.copy_(b)
        else:
            model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(7 * 7 * 32, 10))
            with torch.no_grad():
                model[0].weight.copy_(p[0].permute(3, 2, 0, 1))
                model[0].bias.copy_(p[1])
                model[3].weight.copy_(p[2].permute(3, 2, 0, 1))
                model[3].bias.copy_(p[3])
                # gradtape flattens NHWC, PyTorch NCHW: reorder the dense rows to match
                model[7].weight.copy_(p[4].reshape(7 * 7, 32, 10).permute(1, 0, 2)
                                      .reshape(7 * 7 * 32, 10).T)
                model[7].bias.copy_(p[5])
        model = model.to(dev)
        del p
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
    if on_gpu:
        synchronize = torch.cuda.synchronize

        def events():
            return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    else:
        def synchronize():
            pass

        def events():
            return HostEvent(), HostEvent()
    for _ in range(3):
        call()
    synchronize()
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    ms, runs = time_cuda(call, events, synchronize, args.warmup, args.runs, args.budget)
    out = {"ms": ms, "runs": runs}
    if on_gpu:
        peak = torch.cuda.max_memory_allocated()
        out.update(peak_mib=peak / MIB, base_mib=base / MIB,
                   peak_above_base_mib=(peak - base) / MIB)
    return out


# --- results ---------------------------------------------------------------------------------

def _one_line(exc):
    """``Type: first line of the message``, short enough for a table cell."""
    text = str(exc).strip().splitlines()
    msg = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    msg = msg.replace("|", "/")
    return msg if len(msg) <= 160 else msg[:157] + "..."


def _fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}"


def _get(v, key):
    return v.get(key) if isinstance(v, dict) else None


def _text(v):
    """A cell that holds no number: its error, skip or absence."""
    return v if isinstance(v, str) else "-"


def _ratio(row, cell, key="ms", of="torch"):
    a, b = _get(row.get(cell), key), _get(row.get(of), key)
    return a / b if a is not None and b else None


def _peak(v):
    if not isinstance(v, dict) or v.get("peak_mib") is None:
        return "-"
    return f"{v['peak_mib']:.1f} ({v['peak_above_base_mib']:.1f})"


def summary(v):
    """One line for the log."""
    if not isinstance(v, dict):
        return str(v)
    line = f"{v['ms']:.3f} ms ({v['runs']} runs)"
    if v.get("peak_mib") is not None:
        line += f", peak {v['peak_mib']:.1f} MiB ({v['peak_above_base_mib']:+.1f} MiB)"
    if "syncs_per_step" in v:
        line += f", {v['syncs_per_step']:.2f} host syncs per step"
    return line


def table(rows):
    head = ("| workload | batch | gradtape eager ms | gradtape captured ms | PyTorch eager ms "
            "| eager / PyTorch | captured / PyTorch "
            "| gradtape peak MiB, eager / captured (above baseline) "
            "| PyTorch peak MiB (above baseline) | peak eager / PyTorch (above baseline) "
            "| host syncs per step, eager / captured |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        e, c, t = r.get("eager"), r.get("captured"), r.get("torch")
        em, cm, tm = _get(e, "ms"), _get(c, "ms"), _get(t, "ms")
        lines.append("| " + " | ".join([
            r["workload"], str(r["batch"] or "-"),
            _fmt(em) if em is not None else _text(e), _fmt(cm) if cm is not None else _text(c),
            _fmt(tm) if tm is not None else _text(t),
            _fmt(_ratio(r, "eager"), 2), _fmt(_ratio(r, "captured"), 2),
            f"{_peak(e)} / {_peak(c)}", _peak(t),
            _fmt(_ratio(r, "eager", "peak_above_base_mib"), 2),
            f"{_fmt(_get(e, 'syncs_per_step'), 2)} / {_fmt(_get(c, 'syncs_per_step'), 2)}",
        ]) + " |")
    return "\n".join(lines) + "\n"


NOTES = """\
Times: median of CUDA-event intervals per step after warm-up, each step waited for before
the next. gradtape uses its fused kernels and gt.optimizers.SGD with momentum (one
multi-tensor launch updates every parameter in place); PyTorch uses torch.optim.SGD.
'captured' is gt.capture (one CUDA graph launch per step). Both sides compute in float32
(PyTorch's TF32 is off); the models have the same weights and biases.
Peak memory: the most bytes in use by the framework's allocator during the timed steps
(parameters, optimizer state, inputs and the step's temporaries); in brackets, the part above
what was in use before the case was built (garbage collected and caches emptied between cases;
PyTorch's cuBLAS and cuDNN are started before the first case, so their workspaces are in every
baseline). CuPy's cuBLAS workspace is outside its memory pool and not counted.
Host syncs: device-to-host copies counted by gradtape (to_host()). A captured step replays a
CUDA graph, in which a host synchronisation cannot be recorded: a captured case that ran is
itself the proof that the step has none.
"""


def _why(rows, name, cell):
    """Why a cell needed by a target has no number."""
    row = next((r for r in rows if case_name(r["workload"], r["batch"]) == name), None)
    v = row.get(cell) if row is not None else None
    what = "PyTorch" if cell == "torch" else f"gradtape {cell}"
    if v is None:
        return f"{name} {what} was not run"
    return f"{name} {what}: {v}"


def targets(rows):
    """The four performance targets: ``{"target", "measured", "result"}`` each, where result is
    PASS, FAIL or "not measured"."""
    by = {case_name(r["workload"], r["batch"]): r for r in rows}
    out = []

    def add(target, value, passed, reason, detail=""):
        if value is None:
            out.append({"target": target, "measured": None, "result": "not measured",
                        "detail": reason})
        else:
            out.append({"target": target, "measured": value,
                        "result": "PASS" if passed else "FAIL", "detail": detail})

    def missing(name, *cells):
        if name not in by:
            return f"{name} was not run"
        return "; ".join(_why(rows, name, c) for c in cells
                         if _get(by.get(name, {}).get(c), "ms") is None)

    r = _ratio(by["mlp-1024"], "eager") if "mlp-1024" in by else None
    add(f"mlp batch 1024: gradtape eager step <= {TARGET_MLP_LARGE:.2f}x PyTorch eager", r,
        r is not None and r <= TARGET_MLP_LARGE, missing("mlp-1024", "eager", "torch"),
        _also(by, "mlp-1024", "captured", "captured"))

    r = _ratio(by["mlp-128"], "captured") if "mlp-128" in by else None
    add(f"mlp batch 128: gradtape captured step < {TARGET_CAPTURED_SMALL:.2f}x PyTorch eager", r,
        r is not None and r < TARGET_CAPTURED_SMALL, missing("mlp-128", "captured", "torch"),
        _also(by, "cnn-128", "captured", "cnn-128 captured"))

    names = [case_name(k, n) for k, n in CASES if k in ("mlp", "cnn")]
    mem = {name: _ratio(by[name], "eager", "peak_above_base_mib")
           for name in names if name in by}
    mem = {name: v for name, v in mem.items() if v is not None}
    worst = max(mem, key=mem.get) if mem else None
    no_stats = [name for name in names if name not in mem and not missing(name, "eager", "torch")]
    reasons = [missing(name, "eager", "torch") for name in names
               if name not in mem and name not in no_stats]
    if no_stats:
        reasons.append(f"{', '.join(no_stats)}: no memory statistics (PyTorch not on a GPU)")
    add(f"peak memory <= {TARGET_MEMORY:.2f}x PyTorch (gradtape eager, above baseline, "
        "worst of mlp and cnn at batch 128 and 1024)", mem.get(worst),
        worst is not None and mem[worst] <= TARGET_MEMORY, "; ".join(reasons),
        (f"worst: {worst}; " + ", ".join(
            f"{k} {v:.2f}x (absolute {_ratio(by[k], 'eager', 'peak_mib'):.2f}x)"
            for k, v in mem.items())
         + (f"; not measured: {'; '.join(reasons)}" if reasons else "")) if mem else "")

    syncs = {f"{case_name(r['workload'], r['batch'])} {c}": _get(r.get(c), "syncs_per_step")
             for r in rows for c in ("eager", "captured")}
    syncs = {k: v for k, v in syncs.items() if v is not None}
    most = max(syncs.values()) if syncs else None
    add("host synchronisations per step == 0 (gradtape, eager and captured)", most,
        most == 0, "no gradtape case finished",
        f"{len(syncs)} cases" + "".join(f"; {k}: {v:.2f}" for k, v in syncs.items() if v))
    return out


def _also(by, name, cell, label):
    r = _ratio(by[name], cell) if name in by else None
    return f"{label}: {r:.2f}x" if r is not None else ""


def targets_md(items):
    lines = ["## Targets", "", "| target | measured | result |", "|---|---|---|"]
    for t in items:
        if t["measured"] is None:
            measured, result = "-", f"not measured: {t['detail']}"
        else:
            unit = "" if t["target"].startswith("host") else "x"
            measured = f"{t['measured']:.2f}{unit}" + (f" ({t['detail']})" if t["detail"] else "")
            result = t["result"]
        cells = [t["target"], measured, result]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_results(out, meta, rows, state):
    """Rewrite gpu_results.md and gpu_results.json from what is measured so far; returns the
    markdown."""
    items = targets(rows)
    tf32 = meta["tf32"]
    md = [f"# GPU benchmark\n\nStatus: {state['status'].upper()}"
          + (f" ({state['detail']})" if state.get("detail") else ""),
          f"{meta['gpu'] or 'no GPU'}; CuPy {meta['cupy'] or 'not used'}; gradtape "
          f"{meta['gradtape']} (C hot paths {_onoff(meta['c_hot_paths'])}); Python "
          f"{meta['python']}; PyTorch: {meta['torch']}",
          f"Precision: float32. PyTorch TF32: matmul {_onoff(tf32['torch_matmul'])}, cuDNN "
          f"{_onoff(tf32['torch_cudnn'])}; CUPY_TF32={tf32['CUPY_TF32'] or 'unset'}. "
          f"Timing: {meta['settings']['warmup']} warm-up steps, up to "
          f"{meta['settings']['runs']} runs or {meta['settings']['budget']} s per case.",
          table(rows) + "\n" + NOTES]
    if state.get("skipped"):
        md.append("Not run (time budget): " + ", ".join(state["skipped"]) + ".\n")
    md.append(targets_md(items))
    text = "\n\n".join(md)
    _write_atomic(os.path.join(out, "gpu_results.md"), text)
    _write_atomic(os.path.join(out, "gpu_results.json"), json.dumps(
        dict(meta, **state, rows=rows, targets=items), indent=2, default=str) + "\n")
    return text


def _onoff(flag):
    return "unknown" if flag is None else ("on" if flag else "off")


# --- driver ---------------------------------------------------------------------------------------

def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _gpu_name(cupy):
    props = cupy.cuda.runtime.getDeviceProperties(0)
    return props["name"].decode() if isinstance(props["name"], bytes) else props["name"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu_bench_out")
    ap.add_argument("--quick", action="store_true", help="fewer runs (a smoke test)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--budget", type=float, default=4.0, help="seconds of timing per case")
    ap.add_argument("--budget-total", type=float, default=0.0,
                    help="seconds for the whole run: no measurement starts when less time is "
                         "left than the longest one so far took (0: no limit)")
    ap.add_argument("--cases", default=",".join(case_name(k, n) for k, n in CASES),
                    help="comma-separated, run in this order (default: %(default)s)")
    ap.add_argument("--device", default="gpu:0",
                    help="gpu:0, or strict:0 for a dry run of this script on the CPU")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.budget = 10, 2, 0.5
    known = {case_name(k, n): (k, n) for k, n in CASES}
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in known]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    t_start = time.perf_counter()
    deadline = t_start + args.budget_total if args.budget_total > 0 else None
    os.makedirs(args.out, exist_ok=True)

    import gradtape as gt
    from gradtape import backend
    from gradtape.tensor import _speedups
    on_gpu = args.device.startswith("gpu")
    meta = {"gpu": None, "device": args.device, "cupy": None, "gradtape": gt.__version__,
            "c_hot_paths": _speedups is not None, "python": platform.python_version(),
            "torch": "not loaded yet",
            "tf32": {"torch_matmul": None, "torch_cudnn": None,
                     "CUPY_TF32": os.environ.get("CUPY_TF32")},
            "settings": {"runs": args.runs, "warmup": args.warmup, "budget": args.budget,
                         "budget_total": args.budget_total, "cases": wanted}}
    rows = []
    state = {"status": "running", "detail": "", "skipped": [], "elapsed_s": 0.0}
    if on_gpu:
        reason = backend.gpu_unavailable_reason()
        if reason is not None:
            print(f"gpu.py: no GPU usable by CuPy: {reason}", file=sys.stderr)
            state.update(status="no GPU", detail=f"no GPU usable by CuPy: {reason}")
            write_results(args.out, meta, rows, state)
            return 2
        import cupy
        meta["cupy"], meta["gpu"] = cupy.__version__, _gpu_name(cupy)
    else:
        meta["gpu"] = f"dry run on {args.device} (CPU, host clock)"
    device = gt.get_device(args.device)

    torch = None
    torch_loaded = False
    failed = []
    current = None
    longest = 0.0
    done, total = 0, len(wanted) * len(CELLS)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with gt.device(device):
            for name in wanted:
                kind, n = known[name]
                row = {"workload": kind, "batch": n}
                rows.append(row)
                for cell in CELLS:
                    if cell == "torch" and not torch_loaded:
                        torch, meta["torch"] = load_torch(on_gpu)
                        torch_loaded = True
                        if torch is not None:
                            meta["tf32"].update(
                                torch_matmul=torch.backends.cuda.matmul.allow_tf32,
                                torch_cudnn=torch.backends.cudnn.allow_tf32)
                        print(f"PyTorch: {meta['torch']}", flush=True)
                    if cell == "torch" and torch is None:
                        row[cell] = "not measured"
                        continue
                    need = max(longest, args.budget + 2.0)
                    if deadline is not None and deadline - time.perf_counter() < need:
                        row[cell] = "skipped (time budget)"
                        state["skipped"].append(f"{name} {cell}")
                        print(f"{name:9s} {cell:8s} skipped: {deadline - time.perf_counter():.0f}"
                              f" s of --budget-total left, a measurement needs about {need:.0f} s",
                              flush=True)
                        continue
                    current = (row, cell)
                    t0 = time.perf_counter()
                    try:
                        if cell == "torch":
                            row[cell] = run_torch(torch, kind, n, args, on_gpu)
                        else:
                            row[cell] = run_gradtape(gt, device, kind, n, args, cell == "captured")
                    except Exception as exc:  # report the failure in the table, keep going
                        tb = traceback.format_exc()
                        print(f"--- {name} {cell} failed:\n{tb}", file=sys.stderr, flush=True)
                        row[cell] = f"error: {_one_line(exc)}"
                        row[cell + "_traceback"] = tb
                        if cell != "torch":
                            failed.append(f"{name} {cell}")
                    current = None
                    dt = time.perf_counter() - t0
                    longest = max(longest, dt)
                    print(f"{name:9s} {cell:8s} {summary(row[cell])} [{dt:.1f} s]", flush=True)
                    done += 1
                    state.update(elapsed_s=time.perf_counter() - t_start,
                                 detail=f"{done} of {total} measurements done")
                    write_results(args.out, meta, rows, state)
        if state["skipped"]:
            state.update(status="stopped", detail=f"{len(state['skipped'])} case(s) not run: "
                         f"--budget-total {args.budget_total:g} s reached")
        else:
            state.update(status="complete", detail="")
    except KeyboardInterrupt as exc:
        what = f" during {case_name(current[0]['workload'], current[0]['batch'])} {current[1]}" \
            if current else ""
        if current:
            current[0][current[1]] = "interrupted"
        state.update(status="interrupted", detail=f"stopped by {str(exc) or 'KeyboardInterrupt'}{what}")
        print(f"gpu.py: interrupted{what}; writing what was measured", file=sys.stderr, flush=True)
    except Exception as exc:
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        state.update(status="failed", detail=_one_line(exc))
    finally:
        for s in previous:                      # a second signal must not cut the last write
            signal.signal(s, signal.SIG_IGN)
        try:
            state["elapsed_s"] = time.perf_counter() - t_start
            md = write_results(args.out, meta, rows, state)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    print(md, flush=True)
    if failed:
        print(f"gpu.py: gradtape failed in {', '.join(failed)}", file=sys.stderr)
    return 0 if state["status"] == "complete" and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
