"""Seed 004: linear regression with GradientTape, SGD(0.1) and MeanSquaredError.

The TensorFlow program of the seed, ported by changing the import: ``tf.Variable`` becomes
``gt.Variable``, ``tf.keras.optimizers.SGD`` becomes ``gt.optimizers.SGD`` and
``tf.keras.losses.MeanSquaredError`` becomes ``gt.losses.MeanSquaredError``. The NumPy data
are float64; as in TensorFlow they are converted to the float32 of the variables, so every
number printed is the float32 value TensorFlow computes for the same data.

    python examples/seeds/seed_004_linear_regression.py [--steps 20] [--seed 4]
"""
import argparse

import numpy as np

import gradtape as gt

TRAIN_STEPS = 20
SEED = 4


def make_data(seed=SEED, n=100):
    """The seed's data: ``y = 2x + 10`` plus Gaussian noise (std 0.33), fixed NumPy seed."""
    np.random.seed(seed)
    train_X = np.linspace(-1, 1, n)
    train_Y = 2 * train_X + np.random.randn(*train_X.shape) * 0.33 + 10
    return train_X, train_Y


def train(train_X, train_Y, steps=TRAIN_STEPS, verbose=True):
    """Run the seed's loop; returns ``[(loss, w, b)]`` after each step."""
    w = gt.Variable(initial_value=1.0)
    b = gt.Variable(initial_value=1.0)
    optimizer = gt.optimizers.SGD(0.1)
    mse = gt.losses.MeanSquaredError()
    if verbose:
        print("Initial w:", w.numpy())
        print("Initial b:", b.numpy())
    history = []
    for i in range(steps):
        if verbose:
            print("Epoch:", i)
        with gt.GradientTape() as tape:
            logit = w * train_X + b
            loss = mse(train_Y, logit)
        gradients = tape.gradient(target=loss, sources=[w, b])
        optimizer.apply_gradients(zip(gradients, [w, b]))
        history.append((loss.numpy().item(), w.numpy().item(), b.numpy().item()))
        if verbose:
            print("Current w:", w.numpy())
            print("Current b:", b.numpy())
    return history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=TRAIN_STEPS)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    train_X, train_Y = make_data(args.seed)
    history = train(train_X, train_Y, args.steps)
    print(f"final loss {history[-1][0]:.6f}  (w, b) = ({history[-1][1]:.6f}, "
          f"{history[-1][2]:.6f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
