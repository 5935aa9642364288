"""What ``Model.fit`` costs on top of a hand-written GradientTape loop.

A small MLP (8-8-8-4, so that framework overhead dominates) and the 784-512-512-10 MLP of
the train-step case, Adam, sparse softmax cross-entropy with an accuracy metric, batch 64:
one epoch of ``model.fit`` (verbose 0, no shuffling) against the same steps written by hand
(forward under a tape, gradient, ``apply_gradients``, the accuracy metric updated), and
``tf.keras``'s ``fit`` when TensorFlow is installed. Prints a markdown table of the time per
step and the ratio to the hand-written loop (median over interleaved rounds).

    python benchmarks/fit_overhead.py [--rounds 5] [--steps 100]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

SIZES = {"small MLP 8-8-8-4": (8, 8, 4), "MLP 784-512-512-10": (784, 512, 10)}
BATCH = 64


def _data(d_in, classes, steps):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH * steps, d_in)).astype(np.float32)
    return x, rng.integers(0, classes, BATCH * steps)


def _model(keras, d_in, hidden, classes):
    L = keras.layers
    return keras.Sequential([keras.Input(shape=(d_in,)), L.Dense(hidden, activation="relu"),
                             L.Dense(hidden, activation="relu"), L.Dense(classes)])


def keras_fit(keras, x, y, sizes):
    """One epoch of ``model.fit`` with ``keras`` (gradtape's or tf.keras)."""
    model = _model(keras, *sizes)
    model.compile(keras.optimizers.Adam(1e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x[:BATCH * 4], y[:BATCH * 4], batch_size=BATCH, verbose=0)       # warm-up

    def run():
        model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    return run


def gradtape_loop(gt, x, y, sizes):
    keras = gt.keras
    model = _model(keras, *sizes)
    opt = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    acc = keras.metrics.SparseCategoricalAccuracy()

    def step(xb, yb):
        with gt.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        variables = model.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        acc.update_state(yb, logits)
    for s in range(0, BATCH * 4, BATCH):
        step(x[s:s + BATCH], y[s:s + BATCH])

    def run():
        acc.reset_state()
        for s in range(0, len(x), BATCH):
            step(x[s:s + BATCH], y[s:s + BATCH])
        float(acc.result())
    return run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=100, help="steps per timed epoch")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import gradtape as gt
    try:
        import tensorflow as tf
    except ImportError:
        tf = None
    print(f"## Model.fit against a hand-written GradientTape loop (batch {BATCH}, "
          f"{os.cpu_count()} cores, {args.rounds} interleaved rounds)\n")
    print("| model | hand-written loop (us/step) | gradtape fit (us/step) | fit / loop |"
          + (" tf.keras fit (us/step) | tf fit / loop |" if tf is not None else ""))
    print("| --- | ---: | ---: | ---: |" + (" ---: | ---: |" if tf is not None else ""))
    for label, sizes in SIZES.items():
        x, y = _data(sizes[0], sizes[2], args.steps)
        impls = {"loop": gradtape_loop(gt, x, y, sizes), "fit": keras_fit(gt.keras, x, y, sizes)}
        if tf is not None:
            impls["tf"] = keras_fit(tf.keras, x, y, sizes)
        times = {k: [] for k in impls}
        for _ in range(args.rounds):
            for k, fn in impls.items():
                t0 = time.perf_counter()
                fn()
                times[k].append((time.perf_counter() - t0) / args.steps)
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = statistics.median(a / b for a, b in zip(times["fit"], times["loop"]))
        row = (f"| {label} | {med['loop'] * 1e6:.0f} | {med['fit'] * 1e6:.0f} | "
               f"{ratio:.2f}x |")
        if tf is not None:
            tr = statistics.median(a / b for a, b in zip(times["tf"], times["loop"]))
            row += f" {med['tf'] * 1e6:.0f} | {tr:.2f}x |"
        print(row)


if __name__ == "__main__":
    main()
