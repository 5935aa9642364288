"""The example programs run with small sizes and give the expected numbers."""
import importlib.util
import os
import sys

import numpy as np
import pytest

import gradtape as gt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(relpath):
    path = os.path.join(ROOT, "examples", relpath)
    name = "example_" + os.path.basename(relpath)[:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def linear_regression_reference(train_X, train_Y, steps, lr=0.1):
    """TensorFlow's float32 arithmetic for SGD(lr) on MSE, written out in NumPy.

    loss = mean((w x + b - y)^2); dloss/dw = mean(2 (w x + b - y) x), dloss/db = mean(2 (...)).
    """
    f32 = np.float32
    x = train_X.astype(f32)
    y = train_Y.astype(f32)
    w, b = f32(1.0), f32(1.0)
    out = []
    for _ in range(steps):
        r = w * x + b - y
        loss = np.mean(r * r)
        gw = np.sum(f32(2.0) * r / f32(len(x)) * x)
        gb = np.sum(f32(2.0) * r / f32(len(x)))
        w = f32(w - f32(lr) * gw)
        b = f32(b - f32(lr) * gb)
        out.append((float(loss), float(w), float(b)))
    return out


def test_seed_004_linear_regression_matches_the_closed_form_recomputation(capsys):
    ex = load("seeds/seed_004_linear_regression.py")
    train_X, train_Y = ex.make_data()
    history = ex.train(train_X, train_Y, steps=20, verbose=True)
    want = linear_regression_reference(train_X, train_Y, 20)
    np.testing.assert_allclose(np.array(history), np.array(want), rtol=2e-6)
    # the seed's printout
    out = capsys.readouterr().out
    assert out.startswith("Initial w: 1.0\nInitial b: 1.0\nEpoch: 0\n")
    assert out.count("Current w:") == 20
    # and it converges toward y = 2x + 10
    assert abs(history[-1][2] - 10.0) < 0.2 and history[-1][0] < history[0][0] / 100
    # the data are the seed's: fixed NumPy seed, 100 points in [-1, 1]
    np.random.seed(ex.SEED)
    np.testing.assert_array_equal(train_Y, 2 * train_X + np.random.randn(100) * 0.33 + 10)


def test_cyclegan_step_four_optimizers_one_persistent_tape():
    ex = load("cyclegan_step.py")
    gan, history = ex.train(steps=30, batch=16, dim=3, hidden=8, seed=0, learning_rate=5e-3,
                            verbose=False)
    models = [gan.generator_g, gan.generator_f, gan.discriminator_x, gan.discriminator_y]
    optimizers = [gan.generator_g_optimizer, gan.generator_f_optimizer,
                  gan.discriminator_x_optimizer, gan.discriminator_y_optimizer]
    for model, opt in zip(models, optimizers):
        assert int(opt.iterations.numpy()) == 30
        # each optimizer holds state for exactly its own model's variables
        assert len(opt.variables) == 1 + 2 * len(model.trainable_variables)
        for v in model.trainable_variables:
            assert opt.get_slot(v, "m").shape == v.shape
    for losses in history:
        assert all(np.isfinite(v) for v in losses.values())
    cycle = [h["cycle"] for h in history]
    assert np.mean(cycle[-5:]) < 0.85 * np.mean(cycle[:5])
    # same seed, same numbers
    _, again = ex.train(steps=5, batch=16, dim=3, hidden=8, seed=0, learning_rate=5e-3,
                        verbose=False)
    assert again == history[:5]


def test_cyclegan_persistent_tape_gives_the_same_gradients_as_separate_tapes():
    ex = load("cyclegan_step.py")
    gt.random.set_seed(1)
    gan = ex.CycleGAN(dim=3, hidden=8)
    gan.build(3)
    x, y = ex.make_data(16, 3, 1)
    x, y = gt.constant(x), gt.constant(y)
    g, dy = gan.generator_g, gan.discriminator_y

    def losses():
        fake_y = g(x, training=True)
        return ex.generator_loss(dy(fake_y)), ex.discriminator_loss(dy(y), dy(fake_y))

    with gt.GradientTape(persistent=True) as tape:
        gen_loss, disc_loss = losses()
    shared_g = tape.gradient(gen_loss, g.trainable_variables)
    shared_d = tape.gradient(disc_loss, dy.trainable_variables)
    with gt.GradientTape() as t1:
        gen_loss, _ = losses()
    with gt.GradientTape() as t2:
        _, disc_loss = losses()
    for a, b in zip(shared_g, t1.gradient(gen_loss, g.trainable_variables)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    for a, b in zip(shared_d, t2.gradient(disc_loss, dy.trainable_variables)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_mlp_example_learns_the_spirals():
    ex = load("mlp.py")
    result = ex.train(epochs=25, hidden=32, points=100, batch=32, learning_rate=0.02,
                      verbose=False)
    assert result["losses"][-1] < 0.25 * result["losses"][0]
    assert result["train_accuracy"] > 0.9
    assert result["test_accuracy"] > 0.8


def test_cnn_example_learns_bar_orientations():
    ex = load("cnn.py")
    result = ex.train(data="bars", epochs=5, filters=4, n=400, verbose=False)
    assert result["losses"][-1] < 0.75 * result["losses"][0]
    assert result["test_accuracy"] > 0.6                 # chance is 0.25


def test_cnn_example_on_digits():
    pytest.importorskip("sklearn")
    ex = load("cnn.py")
    result = ex.train(data="digits", epochs=2, filters=8, verbose=False)
    assert result["test_accuracy"] > 0.8
