"""Jacobian and Hessian-vector-product timings; prints a markdown table.

    python benchmarks/jacobian.py [--n 256] [--repeat 5] [--device cpu|gpu] [--threads N]

Jacobian of ``tanh(W @ x)`` for ``W`` of ``n x n``: gradtape's vectorised sweep
(``gt.jacobian``) versus its row-by-row loop (``experimental_use_pfor=False``), and, when they
are installed, ``torch.autograd.functional.jacobian`` and ``jax.jacrev``. Then
``gt.hvp`` of ``sum(tanh(W @ x))`` (forward-over-reverse) against one gradient
(``gt.grad``) of the same function. ``--threads N`` fixes the BLAS / OpenMP / PyTorch / XLA
thread count (useful on a shared machine, where a multithreaded BLAS waiting for a busy
core makes every large product slow).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time


def _requested_threads(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


# Thread counts must be set before NumPy (and its BLAS) is imported.
_THREADS = _requested_threads(sys.argv[1:])
if _THREADS:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _THREADS
    if _THREADS == "1":
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                           "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import gradtape as gt  # noqa: E402


def best_time(fn, repeat, sync=lambda: None, min_seconds=0.5):
    """Best wall time over at least ``repeat`` runs and ``min_seconds`` of running, after one
    warm-up run (the best run is the one least disturbed by other work on the machine)."""
    fn()
    sync()
    best = float("inf")
    runs = 0
    start = time.perf_counter()
    while runs < repeat or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best


def gradtape_cases(n, repeat, device):
    rng = np.random.default_rng(0)
    w_host = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    x_host = rng.standard_normal(n).astype(np.float32)
    v_host = rng.standard_normal(n).astype(np.float32)
    scope = gt.device(device) if device else contextlib.nullcontext()
    with scope:
        W = gt.constant(w_host)
        x = gt.constant(x_host)
        v = gt.constant(v_host)
    dev = x.device

    def sync():
        if not dev.host_visible:
            dev.xp.cuda.Device().synchronize()

    def f(x):
        return gt.tanh(gt.linalg.matvec(W, x))

    def loss(x):
        return gt.reduce_sum(gt.tanh(gt.linalg.matvec(W, x)))

    jac = gt.jacobian(f)

    def loop():
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
        return tape.jacobian(y, x, experimental_use_pfor=False)

    j_vec = jac(x).numpy()
    j_loop = loop().numpy()
    expected = (1 - np.tanh(w_host @ x_host) ** 2)[:, None] * w_host
    assert np.allclose(j_vec, expected, atol=1e-5), "vectorised Jacobian is wrong"
    assert np.allclose(j_loop, expected, atol=1e-5), "row-by-row Jacobian is wrong"

    gradient = gt.grad(loss)
    hv = gt.hvp(loss, (x,), (v,))[0].numpy()
    t = np.tanh(w_host @ x_host)
    hv_expected = w_host.T @ ((-2 * t * (1 - t ** 2)) * (w_host @ v_host))
    assert np.allclose(hv, hv_expected, atol=1e-4), "hvp is wrong"

    return {
        "jac_vec": best_time(lambda: jac(x), repeat, sync),
        "jac_loop": best_time(loop, repeat, sync),
        "grad": best_time(lambda: gradient(x), repeat, sync),
        "hvp": best_time(lambda: gt.hvp(loss, (x,), (v,)), repeat, sync),
        "device": str(dev),
        "inputs": (w_host, x_host),
    }


def torch_case(w_host, x_host, repeat):
    try:
        import torch
        from torch.autograd.functional import jacobian
    except ImportError:
        return None
    if _THREADS:
        torch.set_num_threads(int(_THREADS))
    W = torch.from_numpy(w_host)
    x = torch.from_numpy(x_host)
    return best_time(lambda: jacobian(lambda x: torch.tanh(W @ x), x, vectorize=True), repeat)


def jax_case(w_host, x_host, repeat):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    W = jnp.asarray(w_host)
    x = jnp.asarray(x_host)
    jac = jax.jit(jax.jacrev(lambda x: jnp.tanh(W @ x)))
    return best_time(lambda: jac(x).block_until_ready(), repeat)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--device", default=None, help="cpu, gpu or gpu:N (default: gt's)")
    parser.add_argument("--threads", default=None,
                        help="BLAS/OpenMP/PyTorch/XLA threads (default: the libraries' own)")
    args = parser.parse_args(argv)
    res = gradtape_cases(args.n, args.repeat, args.device)
    w_host, x_host = res["inputs"]
    torch_t = torch_case(w_host, x_host, args.repeat)
    jax_t = jax_case(w_host, x_host, args.repeat)

    n = args.n
    vec = res["jac_vec"]

    def ms(t):
        return f"{t * 1e3:.2f}"

    threads = args.threads or "library default"
    print(f"Jacobian of tanh(W @ x), W {n}x{n}, float32, device {res['device']}, "
          f"threads: {threads}\n")
    print("| method | time (ms) | vs vectorised |")
    print("|---|---:|---:|")
    print(f"| gradtape vectorised (`gt.jacobian`) | {ms(vec)} | 1.0x |")
    print(f"| gradtape row-by-row (`experimental_use_pfor=False`) | {ms(res['jac_loop'])} | "
          f"{res['jac_loop'] / vec:.1f}x |")
    for name, t in (("torch.autograd.functional.jacobian (vectorize=True)", torch_t),
                    ("jax.jacrev (jit)", jax_t)):
        if t is None:
            print(f"| {name} | not installed | |")
        else:
            print(f"| {name} | {ms(t)} | {t / vec:.2f}x |")
    print()
    print(f"Hessian-vector product of sum(tanh(W @ x)), W {n}x{n}\n")
    print("| method | time (ms) | vs one gradient |")
    print("|---|---:|---:|")
    print(f"| one gradient (`gt.grad`) | {ms(res['grad'])} | 1.0x |")
    print(f"| `gt.hvp` (forward-over-reverse) | {ms(res['hvp'])} | "
          f"{res['hvp'] / res['grad']:.2f}x |")
    print()
    speedup = res["jac_loop"] / vec
    ratio = res["hvp"] / res["grad"]
    print(f"vectorised vs loop: {speedup:.1f}x (target >= 10x: "
          f"{'met' if speedup >= 10 else 'missed'}); hvp vs gradient: {ratio:.2f}x "
          f"(target <= 4x: {'met' if ratio <= 4 else 'missed'})")


if __name__ == "__main__":
    main()
