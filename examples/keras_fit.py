"""The same spiral classifier as mlp.py, written the Keras way: a functional model,
``compile``, ``fit`` with a validation split and early stopping, ``evaluate``.

    python examples/keras_fit.py [--epochs 60] [--hidden 64] [--points 300] [--device cpu]
"""
import os
import sys

import numpy as np

import gradtape as gt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlp import run_from_command_line, spirals  # noqa: E402

keras = gt.keras


def build(hidden=64, classes=3):
    inputs = keras.Input(shape=(2,), name="point")
    h = keras.layers.Dense(hidden, activation="relu",
                           kernel_regularizer=keras.regularizers.L2(1e-4))(inputs)
    h = keras.layers.Dense(hidden, activation="relu")(h)
    outputs = keras.layers.Dense(classes, name="logits")(h)
    return keras.Model(inputs, outputs, name="spirals")


def train(epochs=60, hidden=64, points=300, batch=64, learning_rate=0.01, seed=0,
          verbose=1):
    """Fit on spirals; returns ``{"history": {...}, "test_loss": ..., "test_accuracy": ...}``
    (held out: every fifth point)."""
    gt.random.set_seed(seed)
    x, y = spirals(points, seed=seed)
    test = np.arange(len(x)) % 5 == 0
    model = build(hidden)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=10,
                                         restore_best_weights=True)
    history = model.fit(x[~test], y[~test], batch_size=batch, epochs=epochs,
                        validation_split=0.2, callbacks=[stop], verbose=verbose)
    test_loss, test_accuracy = model.evaluate(x[test], y[test], verbose=0)
    if verbose:
        print(f"held-out accuracy {test_accuracy:.3f} (loss {test_loss:.4f}) on "
              f"{gt.get_device().name}")
    return {"history": history.history, "test_loss": test_loss,
            "test_accuracy": test_accuracy}


def main(argv=None):
    return run_from_command_line(train, __doc__, argv)


if __name__ == "__main__":
    main()
