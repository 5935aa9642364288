"""One training step (forward, backward, Adam update), gradtape against hand-written NumPy.

Models, float32:
  * MLP 784-512-512-10 with ReLU, batch 128, sparse softmax cross-entropy.
  * CNN on 28x28x1 images, batch 64: Conv 3x3x16 (SAME) + ReLU + 2x2 max pool,
    Conv 3x3x32 (SAME) + ReLU + 2x2 max pool, Dense 10.

Implementations: gradtape through ``gt.layers``/``gt.losses``/``gt.optimizers.Adam`` and,
for the MLP, through bare ops (``gt.matmul``, ``gt.nn.relu`` ...); the same step written by
hand in NumPy (forward, backward and Adam with in-place state updates); PyTorch and JAX
(jitted) when they are installed. Time: the median of repeated steps after warm-up; gradtape's
and NumPy's runs are interleaved, and the other frameworks are timed afterwards, each on its
own, so that their thread pools do not run during the NumPy and gradtape steps. Memory: the peak of the step's host
allocations above what existed before it (``tracemalloc``; NumPy reports its buffers to it).
Both the wall-clock time and the process CPU time (all threads) of a step are reported; the
CPU time is the steadier figure when other programs share the cores.

    python benchmarks/train_step.py [--repeats 30] [--device cpu] [--quick]

Prints a markdown table with each time and peak relative to hand-written NumPy.
"""
from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gradtape as gt  # noqa: E402

B1, B2, EPS, LR = 0.9, 0.999, 1e-7, 1e-3
F32 = np.float32


# --- data and shared initial weights ---------------------------------------------------------

def mlp_problem(batch=128, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 784)).astype(F32)
    y = rng.integers(0, 10, batch).astype(np.int64)
    sizes = [(784, 512), (512, 512), (512, 10)]
    params = []
    for fan_in, fan_out in sizes:
        lim = math.sqrt(6 / (fan_in + fan_out))
        params += [rng.uniform(-lim, lim, (fan_in, fan_out)).astype(F32),
                   np.zeros(fan_out, F32)]
    return x, y, params


def cnn_problem(batch=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 28, 28, 1)).astype(F32)
    y = rng.integers(0, 10, batch).astype(np.int64)
    shapes = [((3, 3, 1, 16), 9, 144), ((3, 3, 16, 32), 144, 288), ((7 * 7 * 32, 10), 1568, 10)]
    params = []
    for shape, fan_in, fan_out in shapes:
        lim = math.sqrt(6 / (fan_in + fan_out))
        params += [rng.uniform(-lim, lim, shape).astype(F32), np.zeros(shape[-1], F32)]
    return x, y, params


# --- hand-written NumPy ------------------------------------------------------------------------

class NumpyAdam:
    def __init__(self, params):
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        alpha = LR * math.sqrt(1 - B2 ** self.t) / (1 - B1 ** self.t)
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m += (1 - B1) * (g - m)
            v += (1 - B2) * (g * g - v)
            p -= alpha * m / (np.sqrt(v) + EPS)


def np_softmax_xent(logits, y):
    n = len(y)
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(s[:, 0]) - z[np.arange(n), y]))
    d = e / s
    d[np.arange(n), y] -= 1
    d /= n
    return loss, d


def numpy_mlp_step(x, y, params, opt):
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    z3 = h2 @ w3 + b3
    loss, d3 = np_softmax_xent(z3, y)
    gw3 = h2.T @ d3
    gb3 = d3.sum(0)
    d2 = d3 @ w3.T
    d2 *= z2 > 0
    gw2 = h1.T @ d2
    gb2 = d2.sum(0)
    d1 = d2 @ w2.T
    d1 *= z1 > 0
    gw1 = x.T @ d1
    gb1 = d1.sum(0)
    opt.step(params, [gw1, gb1, gw2, gb2, gw3, gb3])
    return loss


def _im2col_same3(x):
    """``(N, H, W, 9*C)`` patches of 3x3 SAME windows, tap-major like an HWIO kernel."""
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.empty((n, h, w, 9, c), x.dtype)
    for i in range(3):
        for j in range(3):
            cols[:, :, :, 3 * i + j, :] = xp[:, i:i + h, j:j + w, :]
    return cols.reshape(n, h, w, 9 * c)


def _col2im_same3(dcols, c):
    n, h, w, _ = dcols.shape
    d = dcols.reshape(n, h, w, 9, c)
    dxp = np.zeros((n, h + 2, w + 2, c), dcols.dtype)
    for i in range(3):
        for j in range(3):
            dxp[:, i:i + h, j:j + w, :] += d[:, :, :, 3 * i + j, :]
    return dxp[:, 1:-1, 1:-1, :]


def _maxpool2(x):
    n, h, w, c = x.shape
    r = x.reshape(n, h // 2, 2, w // 2, 2, c)
    out = r.max(axis=(2, 4))
    mask = r == out[:, :, None, :, None, :]
    return out, mask


def _maxpool2_back(g, mask):
    n, h2, _, w2, _, c = mask.shape
    d = mask * g[:, :, None, :, None, :]
    return d.reshape(n, 2 * h2, 2 * w2, c)


def numpy_cnn_step(x, y, params, opt):
    k1, c1, k2, c2, w3, b3 = params
    n = len(x)
    cols1 = _im2col_same3(x)
    z1 = cols1 @ k1.reshape(-1, 16) + c1
    a1 = np.maximum(z1, 0)
    p1, m1 = _maxpool2(a1)
    cols2 = _im2col_same3(p1)
    z2 = cols2 @ k2.reshape(-1, 32) + c2
    a2 = np.maximum(z2, 0)
    p2, m2 = _maxpool2(a2)
    flat = p2.reshape(n, -1)
    z3 = flat @ w3 + b3
    loss, d3 = np_softmax_xent(z3, y)
    gw3 = flat.T @ d3
    gb3 = d3.sum(0)
    dp2 = (d3 @ w3.T).reshape(p2.shape)
    da2 = _maxpool2_back(dp2, m2)
    dz2 = da2 * (z2 > 0)
    gk2 = (cols2.reshape(-1, cols2.shape[-1]).T @ dz2.reshape(-1, 32)).reshape(k2.shape)
    gc2 = dz2.sum(axis=(0, 1, 2))
    dp1 = _col2im_same3(dz2 @ k2.reshape(-1, 32).T, 16)
    da1 = _maxpool2_back(dp1, m1)
    dz1 = da1 * (z1 > 0)
    gk1 = (cols1.reshape(-1, cols1.shape[-1]).T @ dz1.reshape(-1, 16)).reshape(k1.shape)
    gc1 = dz1.sum(axis=(0, 1, 2))
    opt.step(params, [gk1, gc1, gk2, gc2, gw3, gb3])
    return loss


# --- gradtape ------------------------------------------------------------------------------------

def gt_mlp_layers(x, y, params, device):
    with gt.device(device):
        model = gt.keras.Sequential([gt.layers.Dense(512, activation="relu"),
                                     gt.layers.Dense(512, activation="relu"),
                                     gt.layers.Dense(10)])
        model.build((None, 784))
        model.set_weights(params)
        opt = gt.optimizers.Adam(LR)
        loss_fn = gt.losses.SparseCategoricalCrossentropy(from_logits=True)
        xt, yt = gt.constant(x), gt.constant(y)

    def step():
        with gt.GradientTape() as tape:
            loss = loss_fn(yt, model(xt, training=True))
        variables = model.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    return step


def gt_mlp_ops(x, y, params, device):
    with gt.device(device):
        variables = [gt.Variable(p) for p in params]
        opt = gt.optimizers.Adam(LR)
        xt, yt = gt.constant(x), gt.constant(y)
    w1, b1, w2, b2, w3, b3 = variables
    relu = gt.nn.relu
    xent = gt.nn.sparse_softmax_cross_entropy_with_logits

    def step():
        with gt.GradientTape() as tape:
            h = relu(gt.matmul(xt, w1) + b1)
            h = relu(gt.matmul(h, w2) + b2)
            loss = gt.reduce_mean(xent(yt, gt.matmul(h, w3) + b3))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    return step


def gt_cnn_layers(x, y, params, device):
    with gt.device(device):
        model = gt.keras.Sequential([
            gt.layers.Conv2D(16, 3, padding="same", activation="relu"), gt.layers.MaxPool2D(),
            gt.layers.Conv2D(32, 3, padding="same", activation="relu"), gt.layers.MaxPool2D(),
            gt.layers.Flatten(), gt.layers.Dense(10)])
        model.build((None, 28, 28, 1))
        model.set_weights(params)
        opt = gt.optimizers.Adam(LR)
        loss_fn = gt.losses.SparseCategoricalCrossentropy(from_logits=True)
        xt, yt = gt.constant(x), gt.constant(y)

    def step():
        with gt.GradientTape() as tape:
            loss = loss_fn(yt, model(xt, training=True))
        variables = model.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    return step


# --- optional frameworks --------------------------------------------------------------------------

def torch_steps(mlp, cnn):
    try:
        import torch
    except ImportError:
        return {}
    torch.manual_seed(0)

    def make(problem, build):
        x, y, params = problem
        model = build()
        with torch.no_grad():
            tensors = [torch.from_numpy(p.copy()) for p in params]
            for p, t in zip(model.parameters(), _torch_layout(tensors, model)):
                p.copy_(t)
        opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(B1, B2), eps=EPS)
        xt = torch.from_numpy(x if x.ndim == 2 else x.transpose(0, 3, 1, 2).copy())
        yt = torch.from_numpy(y)
        lossf = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = lossf(model(xt), yt)
            loss.backward()
            opt.step()
            return loss
        return step

    nn = torch.nn

    class ChannelsLast(nn.Module):
        """NCHW -> NHWC, so flattening orders features as the NHWC implementations do."""

        def forward(self, t):
            return t.permute(0, 2, 3, 1)

    return {
        "mlp": make(mlp, lambda: nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                                               nn.ReLU(), nn.Linear(512, 10))),
        "cnn": make(cnn, lambda: nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                               nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                               nn.ReLU(), nn.MaxPool2d(2), ChannelsLast(), nn.Flatten(),
                                               nn.Linear(1568, 10))),
    }


def _torch_layout(tensors, model):
    """HWIO kernels and (in, out) matrices as PyTorch's OIHW and (out, in)."""
    out = []
    for t, p in zip(tensors, model.parameters()):
        if t.dim() == 4:
            t = t.permute(3, 2, 0, 1)
        elif t.dim() == 2:
            t = t.t()
        out.append(t.reshape(p.shape).contiguous())
    return out


def jax_steps(mlp):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    x, y, params = mlp

    def loss_fn(ps, xb, yb):
        w1, b1, w2, b2, w3, b3 = ps
        h = jax.nn.relu(xb @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        logits = h @ w3 + b3
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(len(yb)), yb])

    @jax.jit
    def update(ps, m, v, t, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(ps, xb, yb)
        alpha = LR * jnp.sqrt(1 - B2 ** t) / (1 - B1 ** t)
        m = [mi + (1 - B1) * (g - mi) for mi, g in zip(m, grads)]
        v = [vi + (1 - B2) * (g * g - vi) for vi, g in zip(v, grads)]
        ps = [p - alpha * mi / (jnp.sqrt(vi) + EPS) for p, mi, vi in zip(ps, m, v)]
        return loss, ps, m, v

    state = {"p": [jnp.asarray(p) for p in params], "t": 0}
    state["m"] = [jnp.zeros_like(p) for p in state["p"]]
    state["v"] = [jnp.zeros_like(p) for p in state["p"]]
    xb, yb = jnp.asarray(x), jnp.asarray(y)

    def step():
        state["t"] += 1
        loss, state["p"], state["m"], state["v"] = update(state["p"], state["m"], state["v"],
                                                          state["t"], xb, yb)
        loss.block_until_ready()
        return loss
    return {"mlp": step}


# --- measuring ------------------------------------------------------------------------------------

def _sync(device):
    if device is not None:
        device.synchronize()


def time_steps(steps: dict, repeats: int, warmup: int, device=None) -> dict:
    """``{name: (median wall seconds, median process CPU seconds)}`` per step of each
    callable, runs interleaved round-robin. CPU time (all threads of this process) is the
    steadier measure on a machine shared with other work."""
    for fn in steps.values():
        for _ in range(warmup):
            fn()
    _sync(device)
    wall = {name: [] for name in steps}
    cpu = {name: [] for name in steps}
    for _ in range(repeats):
        for name, fn in steps.items():
            c0 = time.process_time()
            t0 = time.perf_counter()
            fn()
            _sync(device)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name]))
            for name in steps}


def peak_bytes(fn) -> int:
    """Peak host allocation of one call of ``fn`` above what was allocated before it."""
    fn()
    gc.collect()
    tracemalloc.start()
    try:
        fn()                                   # one traced step to settle allocator state
        gc.collect()
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


def check_same_step(name, a, b, rtol=1e-3):
    """The implementations start from the same weights: their first losses must agree."""
    la, lb = float(np.asarray(a)), float(np.asarray(b))
    if not math.isclose(la, lb, rel_tol=rtol):
        raise SystemExit(f"{name}: the first losses differ ({la} vs {lb}); the steps do not "
                         "compute the same thing")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="one training step: gradtape vs NumPy")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="device for gradtape (cpu, gpu)")
    parser.add_argument("--quick", action="store_true", help="few repeats (a smoke run)")
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else args.repeats
    warmup = 2 if args.quick else args.warmup
    device = gt.get_device(args.device)
    sync_dev = device if device.kind == "gpu" else None

    mlp = mlp_problem()
    cnn = cnn_problem()
    rows = []
    problems = (
        ("MLP 784-512-512-10, batch 128", "mlp", mlp,
         {"gradtape (layers)": gt_mlp_layers, "gradtape (ops)": gt_mlp_ops}, numpy_mlp_step),
        ("CNN 28x28 conv16-pool-conv32-pool-dense10, batch 64", "cnn", cnn,
         {"gradtape (layers)": gt_cnn_layers}, numpy_cnn_step))
    baselines = {}
    # Phase 1: gradtape and NumPy, interleaved, before any other framework starts threads.
    for label, key, (x, y, params), gt_impls, np_step in problems:
        np_params = [p.copy() for p in params]
        np_opt = NumpyAdam(np_params)
        steps = {"hand-written NumPy": lambda: np_step(x, y, np_params, np_opt)}
        for name, make in gt_impls.items():
            steps[name] = make(x, y, [p.copy() for p in params], device)
        first = {name: fn() for name, fn in steps.items()}
        for name, value in first.items():
            if name != "hand-written NumPy":
                check_same_step(f"{label} / {name}", value.numpy(), first["hand-written NumPy"])
        times = time_steps(steps, repeats, warmup, sync_dev)
        peaks = {name: peak_bytes(fn) for name, fn in steps.items()
                 if device.kind == "cpu" or name == "hand-written NumPy"}
        baselines[key] = (times["hand-written NumPy"], peaks["hand-written NumPy"], first)
        for name in steps:
            rows.append((label, name, times[name], peaks.get(name)))
    # Phase 2: other frameworks when installed, each timed on its own.
    for label, key, problem, _, _ in problems:
        found = {}
        for fw, make in (("PyTorch", lambda: torch_steps(mlp, cnn)),
                         ("JAX (jit)", lambda: jax_steps(mlp))):
            step = make().get(key)
            if step is None:
                continue
            value = step()
            value = value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)
            check_same_step(f"{label} / {fw}", value, baselines[key][2]["hand-written NumPy"])
            found[fw] = step
        for fw, step in found.items():
            rows.append((label, fw, time_steps({fw: step}, repeats, warmup)[fw], None))

    table = []
    for label, name, (wall, cpu), peak in rows:
        key = "mlp" if label.startswith("MLP") else "cnn"
        (base_wall, base_cpu), base_m, _ = baselines[key]
        table.append((label, name, wall * 1e3, wall / base_wall, cpu * 1e3, cpu / base_cpu,
                      None if peak is None else peak / 2 ** 20,
                      None if peak is None else peak / base_m))
    rows = sorted(table, key=lambda r: not r[0].startswith("MLP"))

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"gradtape {gt.__version__}, NumPy {np.__version__}, Python "
          f"{platform.python_version()}, {cores} CPU cores, gradtape device {device.name}, "
          f"median of {repeats} steps")
    print()
    print("| model | implementation | wall (ms) | wall vs NumPy | CPU (ms) | CPU vs NumPy "
          "| peak (MiB) | peak vs NumPy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, name, ms, ratio, cpu_ms, cpu_ratio, mib, mratio in rows:
        mem = "n/a" if mib is None else f"{mib:.2f}"
        mr = "n/a" if mratio is None else f"{mratio:.2f}x"
        print(f"| {label} | {name} | {ms:.2f} | {ratio:.2f}x | {cpu_ms:.2f} | {cpu_ratio:.2f}x "
              f"| {mem} | {mr} |")
    missing = [fw for fw, mod in (("PyTorch", "torch"), ("JAX", "jax"))
               if not _importable(mod)]
    if missing:
        print()
        print(f"not installed, skipped: {', '.join(missing)}")
    return 0


def _importable(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    raise SystemExit(main())
