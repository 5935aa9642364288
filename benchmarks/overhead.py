"""Per-op overhead: a chain of 300 small ops recorded and differentiated.

    y = tanh(y * 1.01 + 0.1), 100 times, on a float32 vector of 16 elements

side by side with the same forward and backward written by hand in NumPy and, when
installed, PyTorch's autograd. Also the cost of one op with no tape active against the bare
NumPy call. Prints a markdown table; ratios are to the hand-written NumPy time of the same run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

N_STEPS = 100
SIZE = 16


def numpy_chain(x0):
    ys = []
    y = x0
    for _ in range(N_STEPS):
        y = np.tanh(y * 1.01 + 0.1)    # Python floats keep float32 under NumPy 2
        ys.append(y)
    g = np.ones_like(y)
    for t in reversed(ys):
        g = g * (1.0 - t * t) * 1.01
    return float(y.sum()), g


def gradtape_chain(gt, x0):
    x = gt.constant(x0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(N_STEPS):
            y = gt.tanh(y * 1.01 + 0.1)
    return tape.gradient(y, x)


def torch_chain(torch, x0):
    x = torch.tensor(x0, requires_grad=True)
    y = x
    for _ in range(N_STEPS):
        y = torch.tanh(y * 1.01 + 0.1)
    y.backward(torch.ones_like(y))
    return x.grad


def timeit(fn, repeat, number):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times), (max(times) - min(times)) / 2


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--number", type=int, default=20)
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import gradtape as gt
    x0 = np.linspace(-1, 1, SIZE).astype(np.float32)
    ref = numpy_chain(x0)[1]
    got = gradtape_chain(gt, x0).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    impls = [("NumPy by hand", lambda: numpy_chain(x0)),
             ("gradtape", lambda: gradtape_chain(gt, x0))]
    try:
        import torch
        torch.set_num_threads(1)
        np.testing.assert_allclose(torch_chain(torch, x0).numpy(), ref, rtol=1e-5)
        impls.append((f"PyTorch {torch.__version__}", lambda: torch_chain(torch, x0)))
    except ImportError:
        pass
    try:
        import autograd.numpy as anp
        from autograd import grad as agrad

        def f(x):
            y = x
            for _ in range(N_STEPS):
                y = anp.tanh(y * 1.01 + 0.1)
            return anp.sum(y)
        df = agrad(f)
        impls.append(("HIPS autograd", lambda: df(x0)))
    except ImportError:
        pass
    # Interleaved rounds: each round times every implementation once, so machine noise hits
    # all alike; the ratio is the median over rounds of the per-round ratio to NumPy.
    times = {name: [] for name, _ in impls}
    for _ in range(args.repeat):
        for name, fn in impls:
            times[name].append(timeit(fn, 1, args.number)[0])
    floor = times["NumPy by hand"]
    print(f"## Op chain: tanh(y * 1.01 + 0.1) x {N_STEPS} (300 ops) on {SIZE} float32, "
          f"forward + backward ({os.cpu_count()} cores, {args.repeat} interleaved rounds)\n")
    print("| implementation | median time (us) | ratio to NumPy (median of rounds) |")
    print("| --- | ---: | ---: |")
    for name, _ in impls:
        t = times[name]
        ratio = statistics.median(a / b for a, b in zip(t, floor))
        print(f"| {name} | {statistics.median(t) * 1e6:.0f} | {ratio:.2f}x |")

    # one op, no tape
    a = np.ones(SIZE, np.float32)
    ta = gt.constant(a)
    t_bare = timeit(lambda: np.tanh(a), args.repeat, 2000)
    t_gt = timeit(lambda: gt.tanh(ta), args.repeat, 2000)
    t_bare_mul = timeit(lambda: a * np.float32(1.01), args.repeat, 2000)
    t_gt_mul = timeit(lambda: ta * 1.01, args.repeat, 2000)
    print(f"\n## One op with no tape active, {SIZE} float32\n")
    print("| op | NumPy (us) | gradtape (us) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| tanh | {t_bare[0] * 1e6:.2f} | {t_gt[0] * 1e6:.2f} | {t_gt[0] / t_bare[0]:.2f}x |")
    print(f"| multiply by scalar | {t_bare_mul[0] * 1e6:.2f} | {t_gt_mul[0] * 1e6:.2f} | "
          f"{t_gt_mul[0] / t_bare_mul[0]:.2f}x |")


if __name__ == "__main__":
    main()
