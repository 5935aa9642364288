"""A multi-layer perceptron trained with a hand-written GradientTape loop.

Data: three interleaved spirals in the plane (synthetic, no download). The network is a
``gt.keras.Sequential`` of Dense layers; the loop computes the loss under a tape, takes the
gradients of the trainable variables and applies them with Adam.

    python examples/mlp.py [--epochs 60] [--hidden 64] [--points 300] [--device cpu]
"""
import argparse

import numpy as np

import gradtape as gt


def spirals(points_per_class=300, classes=3, noise=0.2, seed=0):
    """``(x, y)``: float32 points of shape ``(n, 2)`` and int64 class ids."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, points_per_class)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, points_per_class) + \
            rng.standard_normal(points_per_class) * noise
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(points_per_class, c))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys).astype(np.int64)
    order = rng.permutation(len(x))
    return x[order], y[order]


def build_mlp(hidden=64, classes=3):
    return gt.keras.Sequential([gt.layers.Dense(hidden, activation="relu"),
                                gt.layers.Dense(hidden, activation="relu"),
                                gt.layers.Dense(classes)], name="mlp")


def train(epochs=60, hidden=64, points=300, batch=64, learning_rate=0.01, seed=0,
          verbose=True):
    """Train on spirals; returns ``{"losses": [...], "train_accuracy": ..., "test_accuracy":
    ...}`` (held-out: every fifth point)."""
    gt.random.set_seed(seed)
    x, y = spirals(points, seed=seed)
    test = np.arange(len(x)) % 5 == 0
    x_tr, y_tr, x_te, y_te = x[~test], y[~test], x[test], y[test]
    model = build_mlp(hidden)
    optimizer = gt.optimizers.Adam(learning_rate)
    loss_fn = gt.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(seed)
    losses = []
    for epoch in range(epochs):
        order = rng.permutation(len(x_tr))
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            with gt.GradientTape() as tape:
                logits = model(x_tr[idx], training=True)
                loss = loss_fn(y_tr[idx], logits)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            total += float(loss.numpy()) * len(idx)
        losses.append(total / len(order))
        if verbose and (epoch % max(1, epochs // 10) == 0 or epoch == epochs - 1):
            print(f"epoch {epoch:3d}  loss {losses[-1]:.4f}")

    def accuracy(xs, ys):
        return float((gt.argmax(model(xs), axis=-1).numpy() == ys).mean())

    result = {"losses": losses, "train_accuracy": accuracy(x_tr, y_tr),
              "test_accuracy": accuracy(x_te, y_te), "model": model}
    if verbose:
        print(f"train accuracy {result['train_accuracy']:.3f}  "
              f"test accuracy {result['test_accuracy']:.3f}")
    return result


def run_from_command_line(train_fn, doc, argv=None):
    """Parse ``--epochs --hidden --points --seed --device`` and call ``train_fn`` on the
    chosen device (shared by the spiral examples)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--points", type=int, default=300, help="points per class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    with gt.device(args.device or gt.backend.default_device()):
        train_fn(args.epochs, args.hidden, args.points, seed=args.seed)
    return 0


def main(argv=None):
    return run_from_command_line(train, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
