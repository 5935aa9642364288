"""Optimizers against closed-form NumPy recomputations of Keras' update formulas."""
import math
import warnings
import weakref

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers
from gradtape.optimizers import schedules

from conftest import resolve_device

STEPS = 4


def _grads(shape=(3, 2), steps=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(steps)]


def _run(opt, p0, grads):
    v = gt.Variable(p0.copy(), dtype=gt.float64)
    out = []
    for g in grads:
        opt.apply_gradients([(gt.constant(g, dtype=gt.float64), v)])
        out.append(v.numpy().copy())
    return out


# --- NumPy references of Keras' formulas ---------------------------------------------------

def ref_sgd(p, grads, lr, momentum=0.0, nesterov=False, weight_decay=None):
    m = np.zeros_like(p)
    out = []
    for g in grads:
        if weight_decay:
            p = p - p * weight_decay * lr
        if momentum:
            m = -g * lr + m * momentum
            p = p + (-g * lr + m * momentum) if nesterov else p + m
        else:
            p = p - g * lr
        out.append(p)
    return out


def ref_adam(p, grads, lr, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False, weight_decay=None):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vhat = np.zeros_like(p)
    out = []
    for t, g in enumerate(grads, start=1):
        if weight_decay:
            p = p - p * weight_decay * lr
        alpha = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        vv = v
        if amsgrad:
            vhat = np.maximum(vhat, v)
            vv = vhat
        p = p - m * alpha / (np.sqrt(vv) + eps)
        out.append(p)
    return out


def ref_rmsprop(p, grads, lr, rho=0.9, momentum=0.0, eps=1e-7, centered=False):
    vel = np.zeros_like(p)
    avg = np.zeros_like(p)
    mom = np.zeros_like(p)
    out = []
    for g in grads:
        vel = rho * vel + (1 - rho) * g * g
        if centered:
            avg = rho * avg + (1 - rho) * g
            den = vel - avg * avg + eps
        else:
            den = vel + eps
        inc = lr * g / np.sqrt(den)
        if momentum > 0:
            mom = momentum * mom + inc
            p = p - mom
        else:
            p = p - inc
        out.append(p)
    return out


def ref_adagrad(p, grads, lr, init=0.1, eps=1e-7):
    acc = np.full_like(p, init)
    out = []
    for g in grads:
        acc = acc + g * g
        p = p - lr * g / np.sqrt(acc + eps)
        out.append(p)
    return out


CASES = [
    ("sgd", lambda: optimizers.SGD(0.1), lambda p, g: ref_sgd(p, g, 0.1)),
    ("sgd_momentum", lambda: optimizers.SGD(0.05, momentum=0.9),
     lambda p, g: ref_sgd(p, g, 0.05, momentum=0.9)),
    ("sgd_nesterov", lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True),
     lambda p, g: ref_sgd(p, g, 0.05, momentum=0.8, nesterov=True)),
    ("sgd_weight_decay", lambda: optimizers.SGD(0.1, weight_decay=0.01),
     lambda p, g: ref_sgd(p, g, 0.1, weight_decay=0.01)),
    ("adam", lambda: optimizers.Adam(0.01), lambda p, g: ref_adam(p, g, 0.01)),
    ("adam_betas", lambda: optimizers.Adam(0.02, beta_1=0.5, beta_2=0.9, epsilon=1e-3),
     lambda p, g: ref_adam(p, g, 0.02, b1=0.5, b2=0.9, eps=1e-3)),
    ("adam_amsgrad", lambda: optimizers.Adam(0.01, amsgrad=True),
     lambda p, g: ref_adam(p, g, 0.01, amsgrad=True)),
    ("adamw", lambda: optimizers.AdamW(0.01), lambda p, g: ref_adam(p, g, 0.01,
                                                                      weight_decay=0.004)),
    ("adamw_amsgrad", lambda: optimizers.AdamW(0.01, weight_decay=0.1, amsgrad=True),
     lambda p, g: ref_adam(p, g, 0.01, amsgrad=True, weight_decay=0.1)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01), lambda p, g: ref_rmsprop(p, g, 0.01)),
    ("rmsprop_momentum", lambda: optimizers.RMSprop(0.01, momentum=0.9),
     lambda p, g: ref_rmsprop(p, g, 0.01, momentum=0.9)),
    ("rmsprop_centered", lambda: optimizers.RMSprop(0.01, rho=0.8, centered=True),
     lambda p, g: ref_rmsprop(p, g, 0.01, rho=0.8, centered=True)),
    ("adagrad", lambda: optimizers.Adagrad(0.1), lambda p, g: ref_adagrad(p, g, 0.1)),
    ("adagrad_init", lambda: optimizers.Adagrad(0.1, initial_accumulator_value=0.5),
     lambda p, g: ref_adagrad(p, g, 0.1, init=0.5)),
]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_update_matches_keras_formula(name, make, ref):
    p0 = np.random.default_rng(1).standard_normal((3, 2))
    grads = _grads()
    got = _run(make(), p0, grads)
    want = ref(p0, grads)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"step {k + 1}")


def test_float32_variables_follow_the_same_formula():
    p0 = np.random.default_rng(2).standard_normal((5,)).astype(np.float32)
    grads = [g.astype(np.float32) for g in _grads((5,))]
    v = gt.Variable(p0)
    opt = optimizers.Adam(0.01)
    for g in grads:
        opt.apply_gradients([(gt.constant(g), v)])
    assert v.dtype == gt.float32
    want = ref_adam(p0.astype(np.float64), [g.astype(np.float64) for g in grads], 0.01)[-1]
    np.testing.assert_allclose(v.numpy(), want, rtol=2e-5)


def test_documented_keras_examples():
    # Keras docstring examples: loss = var**2 / 2, so the gradient is var.
    def one_step(opt, start=10.0):
        var = gt.Variable(start)
        opt.minimize(lambda: (var ** 2) / 2.0, [var])
        return float(var.numpy())

    assert one_step(optimizers.SGD(0.1), 1.0) == pytest.approx(0.9)
    assert one_step(optimizers.Adam(0.1)) == pytest.approx(9.9, rel=1e-6)
    assert one_step(optimizers.RMSprop(0.1)) == pytest.approx(9.683772, rel=1e-6)
    opt = optimizers.SGD(0.1, momentum=0.9)
    var = gt.Variable(1.0)
    opt.minimize(lambda: (var ** 2) / 2.0, [var])
    opt.minimize(lambda: (var ** 2) / 2.0, [var])
    assert float(var.numpy()) == pytest.approx(1.0 - 0.1 - 0.18)  # Keras: steps 0.1, 0.18


def test_keras_defaults():
    assert optimizers.SGD().learning_rate == 0.01
    adam = optimizers.Adam()
    assert (adam.learning_rate, adam.beta_1, adam.beta_2, adam.epsilon, adam.amsgrad) == \
        (0.001, 0.9, 0.999, 1e-7, False)
    assert optimizers.AdamW().weight_decay == 0.004
    rms = optimizers.RMSprop()
    assert (rms.learning_rate, rms.rho, rms.momentum, rms.epsilon, rms.centered) == \
        (0.001, 0.9, 0.0, 1e-7, False)
    ada = optimizers.Adagrad()
    assert (ada.learning_rate, ada.initial_accumulator_value, ada.epsilon) == (0.001, 0.1, 1e-7)


# --- schedules and learning rates ------------------------------------------------------------

def test_schedules_values():
    e = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    assert e.value_at(0) == pytest.approx(0.1)
    assert e.value_at(5) == pytest.approx(0.1 * 0.5 ** 0.5)
    s = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)
    assert s.value_at(19) == pytest.approx(0.05)
    c = schedules.CosineDecay(1.0, decay_steps=100, alpha=0.1)
    assert c.value_at(0) == pytest.approx(1.0)
    assert c.value_at(50) == pytest.approx(0.9 * 0.5 + 0.1)
    assert c.value_at(100) == pytest.approx(0.1)
    assert c.value_at(500) == pytest.approx(0.1)
    w = schedules.CosineDecay(0.0, decay_steps=10, warmup_target=1.0, warmup_steps=4)
    assert w.value_at(2) == pytest.approx(0.5)
    assert w.value_at(4) == pytest.approx(1.0)
    assert w.value_at(9) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    p = schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    assert [p.value_at(s) for s in (0, 10, 11, 20, 21)] == [1.0, 1.0, 0.5, 0.5, 0.1]
    t = e(gt.constant(5, dtype=gt.int64))
    assert t.dtype == gt.float32 and float(t) == pytest.approx(0.1 * 0.5 ** 0.5, rel=1e-6)
    with pytest.raises(ValueError, match="one more element"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0])


def test_schedule_is_called_with_the_step_count():
    sched = schedules.PiecewiseConstantDecay([1], [0.5, 0.1])
    opt = optimizers.SGD(sched)
    v = gt.Variable(np.zeros(2))
    for _ in range(3):
        opt.apply_gradients([(gt.constant(np.ones(2)), v)])
    # steps 0 and 1 use 0.5, step 2 uses 0.1
    np.testing.assert_allclose(v.numpy(), -(0.5 + 0.5 + 0.1) * np.ones(2))
    assert int(opt.iterations.numpy()) == 3


def test_learning_rate_variable_is_read_each_step():
    lr = gt.Variable(0.5, dtype=gt.float64)
    opt = optimizers.SGD(lr)
    v = gt.Variable(np.zeros(2))
    opt.apply_gradients([(gt.constant(np.ones(2)), v)])
    lr.assign(0.25)
    opt.apply_gradients([(gt.constant(np.ones(2)), v)])
    np.testing.assert_allclose(v.numpy(), [-0.75, -0.75])
    opt.learning_rate = 0.125
    opt.apply_gradients([(gt.constant(np.ones(2)), v)])
    np.testing.assert_allclose(v.numpy(), [-0.875, -0.875])


# --- clipping --------------------------------------------------------------------------------

def test_clipnorm_clips_each_gradient():
    opt = optimizers.SGD(1.0, clipnorm=1.0)
    a, b = gt.Variable(np.zeros(2)), gt.Variable(np.zeros(2))
    opt.apply_gradients([(gt.constant(np.array([3.0, 4.0])), a),
                         (gt.constant(np.array([0.3, 0.4])), b)])
    np.testing.assert_allclose(a.numpy(), [-0.6, -0.8])
    np.testing.assert_allclose(b.numpy(), [-0.3, -0.4])


def test_global_clipnorm_scales_all_gradients_together():
    opt = optimizers.SGD(1.0, global_clipnorm=1.0)
    a, b = gt.Variable(np.zeros(1)), gt.Variable(np.zeros(1))
    opt.apply_gradients([(gt.constant(np.array([3.0])), a), (gt.constant(np.array([4.0])), b)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [-0.6, -0.8])


def test_clipvalue():
    opt = optimizers.SGD(1.0, clipvalue=0.5)
    a = gt.Variable(np.zeros(3))
    opt.apply_gradients([(gt.constant(np.array([-2.0, 0.25, 3.0])), a)])
    np.testing.assert_allclose(a.numpy(), [0.5, -0.25, -0.5])
    with pytest.raises(ValueError, match="only one of"):
        optimizers.SGD(clipnorm=1.0, clipvalue=1.0)


# --- API behaviour and bad input -------------------------------------------------------------

def test_none_gradients_are_skipped_with_one_warning_naming_them():
    a = gt.Variable(np.ones(2), name="a")
    b = gt.Variable(np.ones(2), name="b")
    c = gt.Variable(np.ones(2), name="c")
    opt = optimizers.SGD(0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.apply_gradients(zip([None, gt.constant(np.ones(2)), None], [a, b, c]))
    msgs = [str(w.message) for w in caught]
    # (variables named by their Keras 3 path, as Keras' own warning)
    assert len(msgs) == 1 and "['a', 'c']" in msgs[0] and "'b'" not in msgs[0]
    np.testing.assert_allclose(a.numpy(), [1, 1])
    np.testing.assert_allclose(b.numpy(), [0.5, 0.5])
    with pytest.raises(ValueError, match="no gradients provided"):
        opt.apply_gradients(zip([None], [a]))


def test_length_mismatch_is_an_error_and_nothing_changes():
    a, b = gt.Variable(np.ones(2)), gt.Variable(np.ones(2))
    opt = optimizers.Adam()
    g = [gt.constant(np.ones(2))]
    with pytest.raises(ValueError, match="1 gradients for 2 variables"):
        opt.apply_gradients(zip(g, [a, b]))
    with pytest.raises(ValueError, match="1 gradients for 2 variables"):
        opt.apply(g, [a, b])
    np.testing.assert_array_equal(a.numpy(), [1, 1])
    assert int(opt.iterations.numpy()) == 0


def test_bad_gradient_shape_leaves_every_variable_unchanged():
    a, b = gt.Variable(np.ones(2), name="a"), gt.Variable(np.ones(3), name="b")
    opt = optimizers.SGD(0.1)
    with pytest.raises(ValueError, match=r"gradient for b has shape \(2,\), the variable \(3,\)"):
        opt.apply_gradients([(gt.constant(np.ones(2)), a), (gt.constant(np.ones(2)), b)])
    np.testing.assert_array_equal(a.numpy(), [1, 1])
    with pytest.raises(TypeError, match="dtype"):
        opt.apply_gradients([(gt.constant(np.ones(2, np.float32)), a)])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([gt.constant(1.0)])


def test_minimize_with_a_tape_and_a_callable():
    v = gt.Variable(np.array([2.0]))
    opt = optimizers.SGD(0.25)
    with gt.GradientTape() as tape:
        loss = gt.reduce_sum(v * v)
    opt.minimize(loss, [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [1.0])
    opt.minimize(lambda: gt.reduce_sum(v * v), lambda: [v])
    np.testing.assert_allclose(v.numpy(), [0.5])
    with pytest.raises(ValueError, match="tape is required"):
        opt.minimize(gt.constant(1.0), [v])


def test_one_optimizer_serves_several_variable_sets_with_separate_slots():
    opt = optimizers.Adam(0.1)
    first = [gt.Variable(np.ones(2)), gt.Variable(np.ones(3))]
    second = [gt.Variable(np.ones(4))]
    opt.apply_gradients(zip([gt.constant(np.ones(2)), gt.constant(np.ones(3))], first))
    opt.apply_gradients(zip([gt.constant(np.ones(4))], second))
    assert int(opt.iterations.numpy()) == 2
    m_first = opt.get_slot(first[0], "m").numpy()
    m_second = opt.get_slot(second[0], "m").numpy()
    np.testing.assert_allclose(m_first, 0.1 * np.ones(2))
    np.testing.assert_allclose(m_second, 0.1 * np.ones(4))
    assert len(opt.variables) == 1 + 2 * 3
    for slot in opt.variables[1:]:
        assert not slot.trainable


def test_updates_are_not_recorded_and_saved_values_are_kept():
    v = gt.Variable(np.array([3.0]))
    opt = optimizers.SGD(1.0)
    with gt.GradientTape(persistent=True) as tape:
        y = v * v
        n_before = len(tape._entries)
        opt.apply_gradients([(gt.constant(np.array([1.0])), v)])
        assert len(tape._entries) == n_before
    # the tape saved v = 3 for the product; the update installed a new buffer
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [6.0])
    np.testing.assert_allclose(v.numpy(), [2.0])


def test_slots_live_on_the_variable_device():
    v = gt.Variable(np.ones(2))
    opt = optimizers.RMSprop(momentum=0.5, centered=True)
    opt.apply_gradients([(gt.constant(np.ones(2)), v)])
    assert sorted(opt.slot_names()) == ["average_gradient", "momentum", "velocity"]
    for name in opt.slot_names():
        assert opt.get_slot(v, name).device is v.device


def test_config_round_trip_and_lookup_by_name():
    opt = optimizers.Adam(schedules.ExponentialDecay(0.1, 10, 0.9), beta_1=0.8, clipnorm=2.0)
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again, optimizers.Adam) and again.beta_1 == 0.8 and again.clipnorm == 2.0
    assert again._learning_rate.value_at(10) == pytest.approx(0.09)
    assert isinstance(optimizers.get("rmsprop"), optimizers.RMSprop)
    with pytest.raises(ValueError, match="known optimizers"):
        optimizers.get("lbfgs")
    with pytest.raises(ValueError, match="momentum"):
        optimizers.SGD(momentum=-1)


def test_reachable_through_keras_namespace():
    assert gt.keras.optimizers.Adam is optimizers.Adam
    assert gt.keras.optimizers.schedules.CosineDecay is schedules.CosineDecay
    from gradtape.optimizers.schedules import ExponentialDecay
    assert ExponentialDecay is schedules.ExponentialDecay


@pytest.mark.parametrize("make", [
    lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    lambda: optimizers.Adam(amsgrad=True), lambda: optimizers.AdamW(),
    lambda: optimizers.RMSprop(momentum=0.5, centered=True),
    lambda: optimizers.Adagrad(global_clipnorm=1.0), lambda: optimizers.Adam(clipnorm=1.0),
    lambda: optimizers.SGD(clipvalue=0.1),
    lambda: optimizers.SGD(schedules.CosineDecay(0.1, 10)),
    lambda: optimizers.SGD(gt.Variable(0.1)),
], ids=["sgd", "adam", "adamw", "rmsprop", "adagrad", "clipnorm", "clipvalue", "schedule",
        "lr_variable"])
def test_a_training_step_makes_no_host_round_trip(make):
    """On the strict device any host read or upload is counted: a step makes none."""
    dev = gt.get_device("strict:0")
    rng = np.random.default_rng(0)
    with gt.device(dev):
        x = gt.constant(rng.standard_normal((16, 5)).astype(np.float32))
        y = gt.constant(rng.integers(0, 3, 16))
        model = gt.keras.Sequential([
            gt.layers.Dense(8, activation="relu", kernel_initializer=gt.initializers.Constant(0.1)),
            gt.layers.BatchNormalization(),
            gt.layers.Dense(3, kernel_initializer="ones")])
        loss_fn = gt.losses.SparseCategoricalCrossentropy(from_logits=True)
        opt = make()
        model(x)
        for _ in range(3):
            syncs, transfers = dev.sync_count, dev.transfer_count
            with gt.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            assert (dev.sync_count - syncs, dev.transfer_count - transfers) == (0, 0)
    for slot in opt.variables:
        assert slot.device is dev
    assert int(opt.iterations.numpy()) == 3


def test_unsupported_keras_options_are_refused():
    assert optimizers.Adam(use_ema=True).use_ema
    with pytest.raises(TypeError, match="unexpected keyword argument 'betas'"):
        optimizers.Adam(betas=(0.9, 0.99))


def test_adam_on_a_device_reads_the_step_from_the_device_and_matches_the_cpu():
    """Off the host, Adam's bias correction comes from the iterations Variable's device
    buffer (what a captured step reads on each replay): same numbers, no host syncs."""
    results = {}
    for name in ("cpu", "strict:0"):
        with gt.device(name):
            w = gt.Variable(np.linspace(-1, 1, 6).astype(np.float32))
            opt = gt.optimizers.Adam(0.1)
            for _ in range(5):
                before = gt.config.sync_count(w.device)
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(w * w * w)
                opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
                assert gt.config.sync_count(w.device) == before
            assert int(opt.iterations.numpy()) == 5
            results[name] = w.numpy()
    np.testing.assert_allclose(results["strict:0"], results["cpu"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("schedule", [
    schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5),
    schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5, staircase=True),
    schedules.CosineDecay(0.1, decay_steps=4, alpha=0.1),
    schedules.CosineDecay(0.05, decay_steps=3, warmup_target=0.2, warmup_steps=2),
    schedules.PiecewiseConstantDecay([1, 3], [0.1, 0.05, 0.01]),
])
def test_schedules_on_the_device_equal_the_host(schedule):
    """value_on (computed on the device from the step array) equals value_at, and an
    optimizer off the host uses it with no host syncs."""
    for step in range(8):
        got = float(schedule.value_on(np, np.asarray(step, dtype=np.int64)))
        assert math.isclose(got, schedule.value_at(step), rel_tol=1e-12, abs_tol=1e-15)
    results = {}
    for name in ("cpu", "strict:0"):
        with gt.device(name):
            w = gt.Variable(np.linspace(-1, 1, 4).astype(np.float32))
            opt = gt.optimizers.SGD(schedule)
            for _ in range(6):
                before = gt.config.sync_count(w.device)
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(w * w)
                opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
                assert gt.config.sync_count(w.device) == before
            results[name] = w.numpy()
    np.testing.assert_allclose(results["strict:0"], results["cpu"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda: gt.optimizers.SGD(0.05),
    lambda: gt.optimizers.SGD(0.05, momentum=0.9),
    lambda: gt.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    lambda: gt.optimizers.Adam(0.05),
    lambda: gt.optimizers.Adam(0.05, weight_decay=0.1),
    lambda: gt.optimizers.AdamW(0.05, weight_decay=0.1),
], ids=["sgd", "momentum", "nesterov", "adam", "adam-wd", "adamw"])
def test_fused_updates_off_the_host_match_the_cpu(make, monkeypatch):
    """Off the host (CuPy, and the strict device in CI) SGD, Adam and AdamW update all
    variables with one call of the multi-tensor kernels in backend.kernels (their NumPy
    references where there is no GPU): same numbers as the CPU's update, slots included, and
    the value a tape saved before the step is left as it was."""
    from gradtape.backend import kernels
    calls = []
    for fn in ("sgd_momentum_update_multi", "adam_update_multi"):
        real = getattr(kernels, fn)
        monkeypatch.setattr(kernels, fn, lambda *a, _real=real, _fn=fn, **k:
                            (calls.append(_fn), _real(*a, **k))[1])
    results = {}
    for name in ("cpu", "strict:0"):
        calls.clear()
        with gt.device(name):
            w = gt.Variable(np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3))
            b = gt.Variable(np.array([0.5, -0.25, 2.0], np.float32))
            opt = make()
            for _ in range(4):
                with gt.GradientTape(persistent=True) as tape:
                    loss = gt.reduce_sum(gt.tanh(w * b) * w)
                grads = tape.gradient(loss, [w, b])
                opt.apply_gradients(zip(grads, [w, b]))
                # the tape saved w's value before the update: its gradient is unchanged
                again = tape.gradient(loss, [w, b])
                for g0, g1 in zip(grads, again):
                    np.testing.assert_array_equal(g0.numpy(), g1.numpy())
            results[name] = [w.numpy(), b.numpy()] + [s.numpy() for s in opt.variables[1:]]
        assert len(calls) == (4 if name == "strict:0" else 0), (name, calls)
    for got, want in zip(results["strict:0"], results["cpu"]):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["strict", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("make", [lambda: gt.optimizers.SGD(0.1, momentum=0.9),
                                  lambda: gt.optimizers.AdamW(0.1)], ids=["momentum", "adamw"])
def test_fused_updates_write_in_place_only_what_nothing_else_holds(make, kind):
    """A variable's buffer that nothing else references is updated in place (as PyTorch's
    optimizers do: no new buffer a step); one that a tape saved, a tensor shares, a view of
    it references, or that is itself a view gets a new buffer, so those values stay as they
    were."""
    dev = resolve_device(kind)
    rng = np.random.default_rng(3)
    with gt.device(dev):
        vs = [gt.Variable(rng.standard_normal(s).astype(np.float32))
              for s in ((3, 4), (4,), (2, 2), (5,), (6,))]
        opt = make()

        def step(persistent=False):
            with gt.GradientTape(persistent=persistent) as tape:
                loss = gt.reduce_sum(gt.tanh(gt.matmul(gt.ones((2, 3)), vs[0]) + vs[1]))
                loss += gt.reduce_sum(vs[2] * vs[2]) + gt.reduce_sum(vs[3] * 2.0)
                loss += gt.reduce_sum(vs[4] ** 3)
            grads = tape.gradient(loss, vs)
            return tape, loss, grads

        _, _, grads = step()
        opt.apply_gradients(zip(grads, vs))      # creates the slots
        _, _, grads = step()
        before = [weakref.ref(v._value) for v in vs]     # (a weak reference is no holder)
        opt.apply_gradients(zip(grads, vs))
        assert all(v._value is b() for v, b in zip(vs, before))   # all in place

        tape, loss, grads = step(persistent=True)  # the tape holds vs[0], vs[2], vs[4]
        shared = vs[1].read_value()                 # a tensor shares vs[1]'s buffer
        view = vs[3]._value.reshape((5, 1))         # a view references vs[3]'s buffer
        kept = [v.numpy() for v in vs]
        before = [weakref.ref(v._value) for v in vs]
        opt.apply_gradients(zip(grads, vs))
        assert all(v._value is not b() for v, b in zip(vs, before))   # every one moved
        np.testing.assert_array_equal(shared.numpy(), kept[1])
        np.testing.assert_array_equal(dev.to_host(view).ravel(), kept[3])
        for g0, g1 in zip(grads, tape.gradient(loss, vs)):    # the saved values are intact
            np.testing.assert_array_equal(g0.numpy(), g1.numpy())
        del tape, shared, view

        base = dev.asarray(np.zeros((2, 5), np.float32))   # a Variable on a view of a buffer
        vs[3]._value = base[0]
        assert not dev.owns_memory(vs[3]._value)
        _, _, grads = step()
        old = weakref.ref(vs[3]._value)
        opt.apply_gradients(zip(grads, vs))
        assert vs[3]._value is not old()
        np.testing.assert_array_equal(dev.to_host(base), 0)


def test_fused_updates_never_write_memory_another_library_lent(gpu_device):
    """A Variable whose buffer came from elsewhere (a DLPack import) gets a new buffer from
    the update: the lender's array keeps its values."""
    cupy = gpu_device.xp
    src = cupy.arange(4, dtype=cupy.float32)
    v = gt.Variable(np.zeros(4, np.float32))
    v.assign(cupy.from_dlpack(src))                 # shares src's memory, held by v alone
    assert not gpu_device.owns_memory(v._value)
    assert gpu_device.owns_memory(cupy.zeros(3)) and not gpu_device.owns_memory(src[1:])
    gt.optimizers.SGD(0.5).apply_gradients([(gt.ones([4]), v)])
    np.testing.assert_array_equal(src.get(), [0, 1, 2, 3])
    np.testing.assert_array_equal(v.numpy(), [-0.5, 0.5, 1.5, 2.5])


@pytest.mark.parametrize("make", [lambda: optimizers.Adam(0.1), lambda: optimizers.AdamW(0.1),
                                  lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True)],
                         ids=["adam", "adamw", "nesterov"])
def test_fortran_ordered_variables_update_like_on_the_cpu(device, make):
    """A Variable made from a transposed or Fortran-ordered array (and its strided gradient)
    gets the fused in-place update off the host: the optimizer hands the kernel a C-ordered
    copy, and the numbers are the CPU's."""
    def train(dev):
        with gt.device(dev):
            v = gt.Variable(np.asfortranarray(np.linspace(-1, 1, 12).reshape(3, 4)))
            opt = make()
            for _ in range(3):
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(v * v * v)
                opt.apply_gradients([(tape.gradient(loss, v), v)])
            return v.numpy()
    np.testing.assert_allclose(train(device), train("cpu"), rtol=1e-12, atol=1e-12)
