"""A convolutional network trained with a hand-written GradientTape loop.

Data: scikit-learn's bundled 8x8 digits (``--data digits``, needs scikit-learn), or synthetic
8x8 images of bars in four orientations with noise (``--data bars``, no dependency). Conv2D
and MaxPool2D layers feed a Dense classifier; the loop is the plain tape-gradient-apply
pattern with Adam.

    python examples/cnn.py [--data digits|bars] [--epochs 10] [--filters 16] [--device gpu]
"""
import argparse

import numpy as np

import gradtape as gt


def bars(n=800, size=8, noise=0.3, seed=0):
    """``(x, y)``: NHWC float32 images of a horizontal, vertical, diagonal or anti-diagonal
    bar at a random offset, plus Gaussian noise; ``y`` the orientation (0-3)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, size, size)).astype(np.float32) * noise
    y = rng.integers(0, 4, n)
    offsets = rng.integers(-2, 3, n)
    idx = np.arange(size)
    for k in range(n):
        o = offsets[k]
        if y[k] == 0:
            x[k, size // 2 + o, :] += 1
        elif y[k] == 1:
            x[k, :, size // 2 + o] += 1
        elif y[k] == 2:
            x[k, idx, np.clip(idx + o, 0, size - 1)] += 1
        else:
            x[k, idx, np.clip(size - 1 - idx + o, 0, size - 1)] += 1
    return x[..., None], y.astype(np.int64)


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    return (d.images.astype(np.float32) / 16.0)[..., None], d.target.astype(np.int64)


def build_cnn(filters=16, classes=10):
    return gt.keras.Sequential([
        gt.layers.Conv2D(filters, 3, padding="same", activation="relu"),
        gt.layers.MaxPool2D(),
        gt.layers.Conv2D(2 * filters, 3, padding="same", activation="relu"),
        gt.layers.MaxPool2D(),
        gt.layers.Flatten(),
        gt.layers.Dense(64, activation="relu"),
        gt.layers.Dense(classes),
    ], name="cnn")


def train(data="digits", epochs=10, filters=16, n=800, batch=32, learning_rate=2e-3, seed=0,
          verbose=True):
    """Train; returns ``{"losses": [...], "test_accuracy": ..., "model": ...}`` (held-out:
    every fifth image)."""
    gt.random.set_seed(seed)
    x, y = digits() if data == "digits" else bars(n, seed=seed)
    classes = int(y.max()) + 1
    test = np.arange(len(x)) % 5 == 0
    x_tr, y_tr, x_te, y_te = x[~test], y[~test], x[test], y[test]
    model = build_cnn(filters, classes)
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
                loss = loss_fn(y_tr[idx], model(x_tr[idx], training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            total += float(loss.numpy()) * len(idx)
        losses.append(total / len(order))
        if verbose:
            print(f"epoch {epoch:3d}  loss {losses[-1]:.4f}")
    pred = gt.argmax(model(x_te), axis=-1).numpy()
    result = {"losses": losses, "test_accuracy": float((pred == y_te).mean()), "model": model}
    if verbose:
        print(f"held-out accuracy {result['test_accuracy']:.3f} on {len(x_te)} images")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["digits", "bars"], default="digits")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--filters", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    with gt.device(args.device or gt.backend.default_device()):
        train(args.data, args.epochs, args.filters, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
