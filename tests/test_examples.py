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


def test_keras_fit_example_learns_the_spirals(capsys):
    ex = load("keras_fit.py")
    result = ex.train(epochs=25, hidden=32, points=100, batch=32, learning_rate=0.02,
                      verbose=0)
    losses = result["history"]["loss"]
    assert len(losses) == 25 and losses[-1] < 0.25 * losses[0]
    assert result["history"]["accuracy"][-1] > 0.9
    assert result["test_accuracy"] > 0.8
    assert capsys.readouterr().out == ""


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


def test_examples_train_on_the_strict_device():
    """The examples as a GPU runs them (device arrays, no implicit host reads): they learn."""
    with gt.device("strict:0"):
        mlp = load("mlp.py").train(epochs=25, hidden=32, points=100, batch=32,
                                   learning_rate=0.02, verbose=False)
        cnn = load("cnn.py").train(data="bars", epochs=5, filters=4, n=400, verbose=False)
        _, gan = load("cyclegan_step.py").train(steps=10, batch=16, dim=3, hidden=8, seed=0,
                                                learning_rate=5e-3, verbose=False)
    assert mlp["train_accuracy"] > 0.9 and mlp["test_accuracy"] > 0.8
    assert cnn["losses"][-1] < 0.75 * cnn["losses"][0] and cnn["test_accuracy"] > 0.6
    assert all(np.isfinite(v) for h in gan for v in h.values())
    assert gan[-1]["cycle"] < gan[0]["cycle"]


# --- against TensorFlow itself, when it is installed ---------------------------------------------

TF_SCRIPT = r'''
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

data = np.load(sys.argv[1])
out = {}

# seed 004, verbatim
np.random.seed(4)
train_X = np.linspace(-1, 1, 100)
train_Y = 2 * train_X + np.random.randn(*train_X.shape) * 0.33 + 10
w = tf.Variable(initial_value=1.0)
b = tf.Variable(initial_value=1.0)
optimizer = tf.keras.optimizers.SGD(0.1)
mse = tf.keras.losses.MeanSquaredError()
hist = []
for i in range(20):
    with tf.GradientTape() as tape:
        logit = w * train_X + b
        loss = mse(train_Y, logit)
    gradients = tape.gradient(target=loss, sources=[w, b])
    optimizer.apply_gradients(zip(gradients, [w, b]))
    hist.append([float(loss.numpy()), float(w.numpy()), float(b.numpy())])
out["linear_regression"] = hist

# the CycleGAN step, same weights and batches as gradtape
L = tf.keras.layers
dim, hidden = int(data["dim"]), int(data["hidden"])
def gen():
    return tf.keras.Sequential([L.Dense(hidden, activation="relu"),
                                L.Dense(hidden, activation="relu"), L.Dense(dim)])
def disc():
    return tf.keras.Sequential([L.Dense(hidden, activation="leaky_relu"), L.Dense(1)])
models = [gen(), gen(), disc(), disc()]
for k, m in enumerate(models):
    m(tf.zeros((1, dim)))
    m.set_weights([data[f"m{k}_{i}"] for i in range(len(m.weights))])
g, f, dx, dy = models
opts = [tf.keras.optimizers.Adam(float(data["lr"]), beta_1=0.5) for _ in range(4)]
bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
LAMBDA = 10.0
def gl(x): return bce(tf.ones_like(x), x)
def dl(r, q): return 0.5 * (bce(tf.ones_like(r), r) + bce(tf.zeros_like(q), q))
def cyc(a, c): return LAMBDA * tf.reduce_mean(tf.abs(a - c))
def ide(a, s): return LAMBDA * 0.5 * tf.reduce_mean(tf.abs(a - s))
losses = []
for s in range(int(data["steps"])):
    real_x, real_y = tf.constant(data[f"x{s}"]), tf.constant(data[f"y{s}"])
    with tf.GradientTape(persistent=True) as tape:
        fake_y = g(real_x, training=True); cycled_x = f(fake_y, training=True)
        fake_x = f(real_y, training=True); cycled_y = g(fake_x, training=True)
        same_x = f(real_x, training=True); same_y = g(real_y, training=True)
        drx, dry = dx(real_x, training=True), dy(real_y, training=True)
        dfx, dfy = dx(fake_x, training=True), dy(fake_y, training=True)
        tc = cyc(real_x, cycled_x) + cyc(real_y, cycled_y)
        tg = gl(dfy) + tc + ide(real_y, same_y)
        tf_ = gl(dfx) + tc + ide(real_x, same_x)
        lx, ly = dl(drx, dfx), dl(dry, dfy)
    for loss, m, o in ((tg, g, opts[0]), (tf_, f, opts[1]), (lx, dx, opts[2]), (ly, dy, opts[3])):
        o.apply_gradients(zip(tape.gradient(loss, m.trainable_variables), m.trainable_variables))
    losses.append([float(tg), float(tf_), float(tc), float(lx), float(ly)])
out["cyclegan_losses"] = losses
out["cyclegan_weights"] = [[w.tolist() for w in m.get_weights()] for m in models]
print("RESULT" + json.dumps(out))
'''


def test_examples_give_tensorflows_numbers(tmp_path):
    """Run seed 004 and the CycleGAN steps in TensorFlow (a subprocess) and compare."""
    import importlib.util
    import json
    import subprocess
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    cg = load("cyclegan_step.py")
    dim, hidden, steps, lr = 3, 8, 3, 1e-2
    gt.random.set_seed(5)
    gan = cg.CycleGAN(dim, hidden, lr)
    gan.build(dim)
    models = [gan.generator_g, gan.generator_f, gan.discriminator_x, gan.discriminator_y]
    arrays = {"dim": dim, "hidden": hidden, "steps": steps, "lr": lr}
    for k, m in enumerate(models):
        for i, w in enumerate(m.get_weights()):
            arrays[f"m{k}_{i}"] = w
    x, y = cg.make_data(64, dim, 5)
    for s in range(steps):
        arrays[f"x{s}"] = x[s * 16:(s + 1) * 16]
        arrays[f"y{s}"] = y[s * 16:(s + 1) * 16]
    np.savez(tmp_path / "in.npz", **arrays)
    proc = subprocess.run([sys.executable, "-c", TF_SCRIPT, str(tmp_path / "in.npz")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tf_out = json.loads(proc.stdout.split("RESULT", 1)[1])

    ex = load("seeds/seed_004_linear_regression.py")
    ours = ex.train(*ex.make_data(), steps=20, verbose=False)
    np.testing.assert_allclose(np.array(ours), np.array(tf_out["linear_regression"]),
                               rtol=2e-6)

    losses = [gan.train_step(gt.constant(arrays[f"x{s}"]), gt.constant(arrays[f"y{s}"]))
              for s in range(steps)]
    ours = [[d["gen_g"], d["gen_f"], d["cycle"], d["disc_x"], d["disc_y"]] for d in losses]
    np.testing.assert_allclose(np.array(ours), np.array(tf_out["cyclegan_losses"]), rtol=1e-5)
    for m, tf_weights in zip(models, tf_out["cyclegan_weights"]):
        for a, b in zip(m.get_weights(), tf_weights):
            np.testing.assert_allclose(a, np.array(b, np.float32), rtol=1e-4, atol=1e-6)
