"""More optimizers (Adamax, Nadam, Adadelta, Ftrl, Lion), more schedules (InverseTimeDecay,
PolynomialDecay, CosineDecayRestarts), schedules written for Keras (only ``__call__``), the
learning rate shown as a Variable, and ``exclude_from_weight_decay``.

The reference numbers come from TensorFlow 2.21 (Keras 3.15): float32 variables, five steps
on ``loss = sum(0.5 * A * (x - C)^2) + 0.3 * sum(x)`` from ``X0``; schedules evaluated at an
int64 step tensor.
"""
import math

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers
from gradtape.capture import capture
from gradtape.optimizers import schedules

from conftest import resolve_device

A = np.array([1.0, 2.0, 0.5], np.float32)
C = np.array([0.5, -1.0, 2.0], np.float32)
X0 = np.array([1.0, -2.0, 3.5], np.float32)

TF_TRAJECTORIES = {
    "adamax": [
        [0.900000036, -1.89999998, 3.4000001],
        [0.806485474, -1.8060981, 3.3024087],
        [0.719388664, -1.71824729, 3.20727205],
        [0.638620853, -1.63638163, 3.11463165],
        [0.564072669, -1.56041598, 3.0245254],
    ],
    "adamax_wd": [
        [0.945062399, -1.94002938, 3.43254757],
        [0.888767719, -1.87867498, 3.36469722],
        [0.830943525, -1.81575441, 3.29645681],
        [0.771350563, -1.7510134, 3.22783327],
        [0.709644198, -1.68408406, 3.15883231],
    ],
    "nadam": [
        [0.893721223, -1.89372122, 3.3937211],
        [0.821321547, -1.82100034, 3.31813049],
        [0.757334173, -1.75653875, 3.24949718],
        [0.696495175, -1.69506371, 3.18252015],
        [0.637269139, -1.63501191, 3.11544013],
    ],
    "nadam_b": [
        [0.939812064, -1.93477559, 3.42729568],
        [0.893127084, -1.88311541, 3.36741662],
        [0.849011958, -1.83409679, 3.30978274],
        [0.805374801, -1.78562951, 3.25227666],
        [0.76176554, -1.73726761, 3.19438386],
    ],
    "adadelta": [
        [0.998585761, -1.99858582, 3.4985857],
        [0.997154772, -1.99715471, 3.497154],
        [0.995713294, -1.995713, 3.49571061],
        [0.994264424, -1.99426389, 3.49425864],
        [0.992810071, -1.99280906, 3.4928],
    ],
    "adadelta_b": [
        [0.98882401, -1.98882067, 3.48882222],
        [0.977117777, -1.97710633, 3.47706795],
        [0.965093255, -1.96506703, 3.46492767],
        [0.952856302, -1.95280743, 3.45249438],
        [0.940470695, -1.94039047, 3.43982291],
    ],
    "ftrl": [
        [0.539394557, -1.53592789, 2.39493608],
        [0.502693892, -1.4951669, 2.35362315],
        [0.47158587, -1.46091592, 2.31680703],
        [0.444702387, -1.43143499, 2.28344059],
        [0.421160787, -1.40565157, 2.2528317],
    ],
    "ftrl_reg": [
        [0.31260556, -1.33369648, 1.83305502],
        [0.292335659, -1.30145204, 1.79621077],
        [0.275566041, -1.27470994, 1.76243246],
        [0.261654735, -1.25233328, 1.73134005],
        [0.250093549, -1.23349929, 1.7026273],
    ],
    "lion": [
        [0.899999976, -1.89999998, 3.4000001],
        [0.799999952, -1.79999995, 3.30000019],
        [0.699999928, -1.69999993, 3.20000029],
        [0.599999905, -1.5999999, 3.10000038],
        [0.499999911, -1.49999988, 3.00000048],
    ],
    "lion_b": [
        [0.939999998, -1.93000007, 3.41499996],
        [0.880599976, -1.86070013, 3.33085012],
        [0.821793973, -1.79209316, 3.24754167],
        [0.763576031, -1.72417223, 3.16506624],
        [0.705940247, -1.65693057, 3.08341575],
    ],
}
TF_CUSTOM_SCHEDULE = {
    "adam": [
        [1.0, -2.0, 3.5],
        [0.96875, -1.96875, 3.46875],
        [0.906332552, -1.90632701, 3.40627861],
        [0.813113928, -1.81306934, 3.31269884],
        [0.690079093, -1.6898762, 3.18827724],
    ],
    "sgd": [
        [1.0, -2.0, 3.5],
        [0.975000024, -1.94687498, 3.4671874],
        [0.90406251, -1.79945314, 3.37305665],
        [0.774212897, -1.54500103, 3.1958518],
        [0.585571647, -1.21724391, 2.92412663],
    ],
    "rmsprop": [
        [1.0, -2.0, 3.5],
        [0.928307593, -1.92830753, 3.42830753],
        [0.815382481, -1.81494319, 3.310884],
        [0.68092525, -1.6788857, 3.16023588],
        [0.54258132, -1.53693533, 2.98533058],
    ],
    "adagrad": [
        [1.0, -2.0, 3.5],
        [0.978718579, -1.9780916, 3.47838759],
        [0.944186151, -1.94284153, 3.44308543],
        [0.900412023, -1.89829671, 3.39757609],
        [0.850121558, -1.8471483, 3.34397888],
    ],
    "adamw": [
        [1.0, -2.0, 3.5],
        [0.968625426, -1.96850038, 3.46831298],
        [0.905982375, -1.90560126, 3.40498137],
        [0.812517524, -1.81171954, 3.31016254],
        [0.689377308, -1.68791437, 3.18420696],
    ],
    "nadam": [
        [1.0, -2.0, 3.5],
        [0.975825369, -1.97582543, 3.47582531],
        [0.932096124, -1.93205261, 3.43164182],
        [0.869191706, -1.86897373, 3.36693192],
        [0.787715733, -1.78704786, 3.28084278],
    ],
    "adamax": [
        [1.0, -2.0, 3.5],
        [0.96875, -1.96875, 3.46875],
        [0.907089233, -1.90703619, 3.4065311],
        [0.817284167, -1.81698978, 3.31417489],
        [0.703069866, -1.70213127, 3.19310379],
    ],
    "adadelta": [
        [1.0, -2.0, 3.5],
        [0.999955237, -1.9999553, 3.49995518],
        [0.999864936, -1.99986506, 3.49986482],
        [0.99972868, -1.9997288, 3.49972844],
        [0.999546051, -1.99954617, 3.49954581],
    ],
    "lion": [
        [1.0, -2.0, 3.5],
        [0.96875, -1.96875, 3.46875],
        [0.90625, -1.90625, 3.40625],
        [0.8125, -1.8125, 3.3125],
        [0.6875, -1.6875, 3.1875],
    ],
}
TF_SCHEDULE_VALUES = {
    "inv": [
        (0, 0.100000001), (1, 0.0952381045), (5, 0.0799999982), (10, 0.0666666701),
        (15, 0.0571428575), (25, 0.0444444455), (100, 0.0166666675),
    ],
    "inv_stair": [
        (0, 0.100000001), (1, 0.100000001), (9, 0.100000001), (10, 0.0666666701),
        (15, 0.0666666701), (25, 0.0500000007), (100, 0.0166666675),
    ],
    "poly": [
        (0, 0.100000001), (1, 0.0953814983), (5, 0.0736396089), (9, 0.0384605005),
        (10, 0.00999999978), (15, 0.00999999978), (100, 0.00999999978),
    ],
    "poly_default": [
        (0, 0.100000001), (3, 0.0700300038), (10, 9.99999975e-05), (11, 9.99999975e-05),
    ],
    "poly_cycle": [
        (0, 0.100000001), (1, 0.0828999951), (5, 0.0324999988), (10, 0.00999999978),
        (11, 0.0282249991), (15, 0.015625), (20, 0.00999999978), (21, 0.0181000009),
        (35, 0.0114062503),
    ],
    "cdr": [
        (0, 0.100000001), (1, 0.0977975428), (5, 0.054999996), (9, 0.0122024585),
        (10, 0.0909999982), (11, 0.0905013755), (20, 0.0504999943), (29, 0.0104986215),
        (30, 0.0828999951), (31, 0.0827876329), (50, 0.0464499928), (69, 0.0101123629),
        (70, 0.0756099969), (71, 0.0755847022), (150, 0.0690489933),
    ],
    "cdr_t1": [
        (0, 0.100000001), (5, 0.049999997), (9, 0.00244717603), (10, 0.0500000007),
        (15, 0.0249999985), (20, 0.0250000004), (25, 0.0124999993), (30, 0.0125000002),
    ],
    "cdr_default": [
        (0, 1.0), (1, 0.853553414), (2, 0.49999997), (3, 0.146446615), (4, 1.0),
        (5, 0.961939752), (8, 0.49999997), (11, 0.0380601883), (12, 1.0), (13, 0.990392625),
        (27, 0.00960734487), (28, 1.0), (29, 0.99759233),
    ],
    "cdr_t3": [
        (0, 0.5), (2, 0.143749982), (3, 0.405000001), (7, 0.247993171), (11, 0.0364583917),
        (12, 0.329000026), (13, 0.327972263), (38, 0.0260277651), (39, 0.26820001),
        (40, 0.268108547),
    ],
}


NEW_OPTIMIZERS = {
    "adamax": lambda: optimizers.Adamax(0.1),
    "adamax_wd": lambda: optimizers.Adamax(0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3,
                                           weight_decay=0.1),
    "nadam": lambda: optimizers.Nadam(0.1),
    "nadam_b": lambda: optimizers.Nadam(0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3,
                                        weight_decay=0.1),
    "adadelta": lambda: optimizers.Adadelta(1.0),
    "adadelta_b": lambda: optimizers.Adadelta(0.5, rho=0.8, epsilon=1e-4),
    "ftrl": lambda: optimizers.Ftrl(0.1),
    "ftrl_reg": lambda: optimizers.Ftrl(0.2, learning_rate_power=-0.7,
                                        initial_accumulator_value=0.2,
                                        l1_regularization_strength=0.05,
                                        l2_regularization_strength=0.1,
                                        l2_shrinkage_regularization_strength=0.02, beta=0.3),
    "lion": lambda: optimizers.Lion(0.1),
    "lion_b": lambda: optimizers.Lion(0.05, beta_1=0.5, beta_2=0.8, weight_decay=0.2),
}


def _trajectory(opt, steps=5, dev=None, count_syncs=False):
    """The variable after each of ``steps`` steps (and, with ``count_syncs``, the host syncs
    and uploads the steps made)."""
    dev = dev or gt.get_device("cpu")
    out, leaks = [], 0
    with gt.device(dev):
        x = gt.Variable(X0)
        a, c = gt.constant(A), gt.constant(C)
        for _ in range(steps):
            before = dev.sync_count + dev.transfer_count if count_syncs else 0
            with gt.GradientTape() as tape:
                loss = gt.reduce_sum(0.5 * a * (x - c) ** 2) + 0.3 * gt.reduce_sum(x)
            opt.apply_gradients([(tape.gradient(loss, x), x)])
            if count_syncs:
                leaks += dev.sync_count + dev.transfer_count - before
            out.append(x.numpy())
    return (np.array(out), leaks) if count_syncs else np.array(out)


# --- the new optimizers --------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["cpu", "strict"])
@pytest.mark.parametrize("name", sorted(NEW_OPTIMIZERS))
def test_new_optimizers_follow_tensorflow(name, kind):
    dev = resolve_device(kind)
    with gt.device(dev):
        opt = NEW_OPTIMIZERS[name]()
    got, leaks = _trajectory(opt, dev=dev, count_syncs=True)
    np.testing.assert_allclose(got, TF_TRAJECTORIES[name], rtol=1e-6, atol=1e-6)
    assert leaks == 0
    assert int(opt.iterations.numpy()) == 5
    for slot in opt.variables[1:]:
        assert slot.device is dev and not slot.trainable


def test_new_optimizers_keras_defaults_slots_and_names():
    want = {
        optimizers.Adamax: ({"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
                            ["momentum", "norm"]),
        optimizers.Nadam: ({"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
                           ["momentum", "velocity"]),
        optimizers.Adadelta: ({"rho": 0.95, "epsilon": 1e-7},
                              ["accumulated_grad", "accumulated_delta_var"]),
        optimizers.Ftrl: ({"learning_rate_power": -0.5, "initial_accumulator_value": 0.1,
                           "l1_regularization_strength": 0.0,
                           "l2_regularization_strength": 0.0,
                           "l2_shrinkage_regularization_strength": 0.0, "beta": 0.0},
                          ["accumulator", "linear"]),
        optimizers.Lion: ({"beta_1": 0.9, "beta_2": 0.99}, ["momentum"]),
    }
    for cls, (defaults, slots) in want.items():
        opt = cls()
        config = opt.get_config()
        assert config["learning_rate"] == 0.001 and config["weight_decay"] is None
        assert {k: config[k] for k in defaults} == defaults, cls
        assert opt.slot_names() == slots
        again = optimizers.deserialize(optimizers.serialize(cls(0.02, clipnorm=1.0)))
        assert type(again) is cls and again.get_config()["clipnorm"] == 1.0
        assert again.get_config()["learning_rate"] == 0.02
        assert isinstance(optimizers.get(cls.__name__.lower()), cls)
        assert getattr(gt.keras.optimizers, cls.__name__) is cls
    ftrl = optimizers.Ftrl()
    v = gt.Variable(np.ones(2, np.float32))
    np.testing.assert_allclose(ftrl.get_slot(v, "accumulator").numpy(), [0.1, 0.1])


def test_new_optimizers_refuse_bad_arguments():
    with pytest.raises(ValueError, match=r"Lion: beta_1 must be in \(0, 1\]"):
        optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match=r"Ftrl: learning_rate_power must be negative or zero, "
                                         r"got 0.5"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="Ftrl: l1_regularization_strength must be positive"):
        optimizers.Ftrl(l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match=r"Nadam: beta_2 must be in \[0, 1\), got 1.5"):
        optimizers.Nadam(beta_2=1.5)
    with pytest.raises(ValueError, match=r"Adadelta: rho must be in \[0, 1\]"):
        optimizers.Adadelta(rho=-0.1)


@pytest.mark.parametrize("name", ["adamax", "nadam", "adadelta", "ftrl_reg", "lion_b"])
def test_new_optimizers_resume_from_a_checkpoint(name, tmp_path):
    """Slots and the step count (which gives Nadam's momentum-schedule product) are saved:
    two steps, a save, three steps on a fresh optimizer restored from it = five steps."""
    opt = NEW_OPTIMIZERS[name]()
    x = gt.Variable(X0, name="x")
    ckpt = gt.train.Checkpoint(x=x, optimizer=opt)

    def steps(o, n):
        for _ in range(n):
            with gt.GradientTape() as tape:
                loss = gt.reduce_sum(0.5 * A * (x - C) ** 2) + 0.3 * gt.reduce_sum(x)
            o.apply_gradients([(tape.gradient(loss, x), x)])

    steps(opt, 2)
    path = ckpt.save(str(tmp_path / "ckpt"))
    steps(opt, 3)
    uninterrupted = x.numpy()
    fresh = NEW_OPTIMIZERS[name]()
    gt.train.Checkpoint(x=x, optimizer=fresh).restore(path)
    assert int(fresh.iterations.numpy()) == 2
    steps(fresh, 3)
    np.testing.assert_array_equal(x.numpy(), uninterrupted)
    np.testing.assert_allclose(x.numpy(), TF_TRAJECTORIES[name][-1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make", [lambda: optimizers.Nadam(0.05), lambda: optimizers.Adamax(0.05),
                                  lambda: optimizers.Ftrl(0.1, beta=0.1),
                                  lambda: optimizers.Lion(0.01, weight_decay=0.1),
                                  lambda: optimizers.Adadelta(1.0)],
                         ids=["nadam", "adamax", "ftrl", "lion", "adadelta"])
def test_new_optimizers_in_a_captured_step(make):
    """On the strict device a captured step (step count read on the device, no host round
    trip) gives the eager CPU numbers, float64 and 0-d variables included."""
    def run(dev, captured):
        with gt.device(dev):
            w = gt.Variable(np.linspace(-1, 1, 6).reshape(2, 3))
            s = gt.Variable(np.float64(0.5))
            opt = make()

            def step(x):
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(gt.tanh(w * x) * w) + s * s * 3.0
                opt.apply_gradients(zip(tape.gradient(loss, [w, s]), [w, s]))
                return loss
            fn = capture(step) if captured else step
            losses = [float(fn(gt.constant(np.full((2, 3), k, np.float64)))) for k in
                      (1.0, 0.5, 2.0, -1.0, 1.5)]
            return losses, w.numpy(), float(s.numpy()), int(opt.iterations.numpy())
    got, want = run("strict:0", True), run("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
    assert got[2] == pytest.approx(want[2], rel=1e-12) and got[3] == want[3] == 5


# --- schedules written for Keras: only __call__ -----------------------------------------------

class CustomSchedule(schedules.LearningRateSchedule):
    """The TensorFlow transformer tutorial's schedule, as written there."""

    def __init__(self, d_model, warmup_steps=4):
        super().__init__()
        self.d_model = gt.cast(d_model, gt.float32)
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = gt.cast(step, dtype=gt.float32)
        arg1 = gt.math.rsqrt(step)
        arg2 = step * (self.warmup_steps ** -1.5)
        return gt.math.rsqrt(self.d_model) * gt.math.minimum(arg1, arg2)


WITH_SCHEDULE = {
    "adam": lambda s: optimizers.Adam(s, beta_1=0.9, beta_2=0.98, epsilon=1e-9),
    "sgd": lambda s: optimizers.SGD(s, momentum=0.9),
    "rmsprop": optimizers.RMSprop, "adagrad": optimizers.Adagrad, "adamw": optimizers.AdamW,
    "nadam": optimizers.Nadam, "adamax": optimizers.Adamax, "adadelta": optimizers.Adadelta,
    "lion": optimizers.Lion,
}


@pytest.mark.parametrize("kind", ["cpu", "strict"])
@pytest.mark.parametrize("name", sorted(WITH_SCHEDULE))
def test_a_schedule_with_only_call_works_with_every_optimizer(name, kind):
    """Called with the iterations Variable (the count before the step), as Keras does; off
    the host its tensor stays on the device (no host round trip). AdamW's bias correction is
    computed in float64 here, in float32 by Keras (whose 1 - 0.999 is 1.3e-6 off): a few
    1e-6 apart after five steps."""
    dev = resolve_device(kind)
    with gt.device(dev):
        opt = WITH_SCHEDULE[name](CustomSchedule(16.0))
    got, leaks = _trajectory(opt, dev=dev, count_syncs=True)
    atol = 4e-6 if name == "adamw" else 1e-6
    np.testing.assert_allclose(got, TF_CUSTOM_SCHEDULE[name], rtol=1e-6, atol=atol)
    assert leaks == 0


def test_a_schedule_with_only_call_and_ftrl_gives_nan_at_rate_zero_as_tensorflow():
    # the tutorial's schedule is 0 at step 0, where FTRL divides by the rate: TF gives NaN too
    with np.errstate(all="raise"):      # (and no floating-point warning)
        got = _trajectory(optimizers.Ftrl(CustomSchedule(16.0)), steps=2)
    assert np.isnan(got).all()


def test_a_schedule_with_only_call_sees_the_step_count_and_may_return_numbers():
    seen = []

    class Halving(schedules.LearningRateSchedule):
        def __call__(self, step):
            seen.append((type(step), int(step.numpy()), step.dtype))
            return 0.5 ** (int(step.numpy()) + 1)      # a Python float is fine too

        def get_config(self):
            return {}
    opt = optimizers.SGD(Halving())
    v = gt.Variable(np.zeros(2))
    for _ in range(3):
        opt.apply_gradients([(gt.constant(np.ones(2)), v)])
    assert seen == [(gt.Variable, k, gt.int64) for k in range(3)]
    np.testing.assert_array_equal(v.numpy(), [-0.875, -0.875])
    assert Halving().value_at(1) == 0.25       # (called with an int64 tensor)

    class Vector(schedules.LearningRateSchedule):
        def __call__(self, step):
            return gt.ones([2])
    with pytest.raises(ValueError, match=r"schedule Vector returned a tensor of shape \(2,\)"):
        optimizers.SGD(Vector()).apply_gradients([(gt.constant(np.ones(2)), v)])

    class Nothing(schedules.LearningRateSchedule):
        pass
    with pytest.raises(NotImplementedError, match="must override `__call__"):
        optimizers.SGD(Nothing()).apply_gradients([(gt.constant(np.ones(2)), v)])
    assert repr(Nothing()) == "<Nothing>"


def test_a_subclass_of_a_builtin_schedule_with_its_own_call_uses_that_call():
    class Warm(schedules.ExponentialDecay):
        def __call__(self, step):
            return gt.cast(step + 1, gt.float32) * 0.125

    for dev in ("cpu", "strict:0"):
        with gt.device(dev):
            opt = optimizers.SGD(Warm(1.0, 10, 0.5))
            v = gt.Variable(np.zeros(2, np.float32))
            for _ in range(2):
                opt.apply_gradients([(gt.ones([2]), v)])
            np.testing.assert_array_equal(v.numpy(), [-0.375, -0.375])


def test_a_captured_step_with_a_schedule_written_for_keras():
    """The schedule's ops run on the iterations Variable's device inside the capture, so each
    replay reads the new count: the eager CPU numbers."""
    def run(dev, captured):
        with gt.device(dev):
            w = gt.Variable(np.linspace(-1, 1, 6).astype(np.float32))
            opt = optimizers.Adam(CustomSchedule(16.0), beta_2=0.98, epsilon=1e-9)

            def step(x):
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(gt.tanh(w * x) * w)
                opt.apply_gradients([(tape.gradient(loss, w), w)])
                return loss
            fn = capture(step) if captured else step
            return [float(fn(gt.constant(np.full(6, k, np.float32)))) for k in
                    (1.0, 0.5, 2.0, -1.0, 1.5, 1.0)], w.numpy()
    got, want = run("strict:0", True), run("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)


# --- the new built-in schedules --------------------------------------------------------------

SCHEDULES = {
    "inv": lambda: schedules.InverseTimeDecay(0.1, 10, 0.5),
    "inv_stair": lambda: schedules.InverseTimeDecay(0.1, 10, 0.5, staircase=True),
    "poly": lambda: schedules.PolynomialDecay(0.1, 10, 0.01, power=0.5),
    "poly_default": lambda: schedules.PolynomialDecay(0.1, 10),
    "poly_cycle": lambda: schedules.PolynomialDecay(0.1, 10, 0.01, power=2.0, cycle=True),
    "cdr": lambda: schedules.CosineDecayRestarts(0.1, 10, t_mul=2.0, m_mul=0.9, alpha=0.1),
    "cdr_t1": lambda: schedules.CosineDecayRestarts(0.1, 10, t_mul=1.0, m_mul=0.5),
    "cdr_default": lambda: schedules.CosineDecayRestarts(1.0, 4),
    "cdr_t3": lambda: schedules.CosineDecayRestarts(0.5, 3, t_mul=3.0, m_mul=0.8, alpha=0.05),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_new_schedules_equal_tensorflow(name):
    """value_at (host), value_on (device) and __call__ all give TF's values; TF computes in
    float32, which near a period's minimum (cdr_default at 11 and 27) is 1.5e-6 off."""
    sched = SCHEDULES[name]()
    for step, want in TF_SCHEDULE_VALUES[name]:
        host = sched.value_at(step)
        assert host == pytest.approx(want, rel=2e-6, abs=1e-9), step
        on = float(sched.value_on(np, np.asarray(step, dtype=np.int64)))
        assert math.isclose(on, host, rel_tol=1e-12, abs_tol=1e-15), step
        called = sched(gt.constant(step, dtype=gt.int64))
        assert called.dtype == gt.float32 and float(called) == pytest.approx(host, rel=1e-6)
    again = type(sched).from_config(sched.get_config())
    assert again.get_config() == sched.get_config()


def test_new_schedules_config_matches_keras():
    assert schedules.CosineDecayRestarts(0.1, 10, t_mul=2.0, m_mul=0.9, alpha=0.1) \
        .get_config() == {"initial_learning_rate": 0.1, "first_decay_steps": 10, "t_mul": 2.0,
                          "m_mul": 0.9, "alpha": 0.1, "name": "SGDRDecay"}
    assert schedules.PolynomialDecay(0.1, 10).get_config() == {
        "initial_learning_rate": 0.1, "decay_steps": 10, "end_learning_rate": 0.0001,
        "power": 1.0, "cycle": False, "name": "PolynomialDecay"}
    assert schedules.InverseTimeDecay(0.1, 10, 0.5).get_config() == {
        "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5,
        "staircase": False, "name": "InverseTimeDecay"}
    opt = optimizers.Adam(schedules.CosineDecayRestarts(0.1, 10, m_mul=0.5))
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert again._learning_rate.value_at(10) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="first_decay_steps must be > 0, got 0"):
        schedules.CosineDecayRestarts(0.1, 0)
    with pytest.raises(ValueError, match="PolynomialDecay: decay_steps must be > 0"):
        schedules.PolynomialDecay(0.1, -1)
    with pytest.raises(ValueError, match="InverseTimeDecay: decay_steps must be > 0"):
        schedules.InverseTimeDecay(0.1, 0, 0.5)
    assert gt.keras.optimizers.schedules.PolynomialDecay is schedules.PolynomialDecay


def test_cosine_decay_restarts_restarts_exactly_at_period_starts():
    """Where log(.) / log(t_mul) lands just below an integer in float64 (t_mul=3, period 5
    starts at 121 first periods), the period is still the right one."""
    sched = schedules.CosineDecayRestarts(1.0, 1, t_mul=3.0, m_mul=0.5)
    for i in range(1, 12):
        start = (3 ** i - 1) // 2               # 1 + 3 + ... + 3^(i-1)
        assert sched.value_at(start) == pytest.approx(0.5 ** i, rel=1e-12), i
        assert float(sched.value_on(np, np.asarray(start))) == pytest.approx(0.5 ** i,
                                                                              rel=1e-12)
    # (the uncorrected floor is one period short there)
    assert math.floor(math.log(1 + 2 * 121) / math.log(3.0)) == 4


@pytest.mark.parametrize("name", ["inv_stair", "poly_cycle", "cdr", "cdr_t1"])
def test_new_schedules_on_the_device_make_no_host_round_trip(name):
    results = {}
    for kind in ("cpu", "strict"):
        dev = resolve_device(kind)
        with gt.device(dev):
            opt = optimizers.SGD(SCHEDULES[name]())
        got, leaks = _trajectory(opt, steps=12, dev=dev, count_syncs=True)
        assert leaks == 0
        results[kind] = got
    np.testing.assert_allclose(results["strict"], results["cpu"], rtol=1e-6, atol=1e-7)


# --- optimizer.learning_rate as a Variable -----------------------------------------------------

def test_learning_rate_reads_as_a_float32_variable_the_tensorflow_way():
    opt = optimizers.Adam(0.01)
    lr = opt.learning_rate
    assert isinstance(lr, gt.Variable) and lr.dtype == gt.float32 and not lr.trainable
    assert lr.numpy() == np.float32(0.01) and float(lr) == float(np.float32(0.01))
    assert opt.learning_rate is lr and opt.lr is lr
    lr.assign(0.5)
    assert float(opt.learning_rate) == 0.5 and opt.get_config()["learning_rate"] == 0.5
    opt.learning_rate = 0.25
    assert float(lr) == 0.25 and opt.get_config()["learning_rate"] == 0.25
    # a schedule reads as its current rate (Keras 3), kept as _learning_rate; a Variable
    # given as the learning rate is returned as it is
    sched = schedules.ExponentialDecay(0.1, 2, 0.5)
    opt_s = optimizers.SGD(sched)
    assert opt_s._learning_rate is sched and float(opt_s.learning_rate) == pytest.approx(0.1)
    w = gt.Variable(1.0)
    for _ in range(2):
        opt_s.apply_gradients([(gt.constant(1.0), w)])
    assert float(opt_s.learning_rate) == pytest.approx(0.05)
    mine = gt.Variable(0.3, dtype=gt.float64)
    assert optimizers.SGD(mine).learning_rate is mine


@pytest.mark.parametrize("kind", ["cpu", "strict"])
def test_assigning_the_learning_rate_variable_changes_the_next_step(kind):
    dev = resolve_device(kind)
    with gt.device(dev):
        v = gt.Variable(np.zeros(2, np.float32))
        opt = optimizers.SGD(0.1)
        opt.apply_gradients([(gt.ones([2]), v)])
        opt.learning_rate.assign(0.5)
        syncs = dev.sync_count
        opt.apply_gradients([(gt.ones([2]), v)])
        assert dev.sync_count == syncs
        opt.learning_rate = 0.25
        opt.apply_gradients([(gt.ones([2]), v)])
        opt.learning_rate.assign_add(0.25)
        opt.apply_gradients([(gt.ones([2]), v)])
        np.testing.assert_allclose(v.numpy(), [-1.35, -1.35], rtol=1e-6)
        assert opt.learning_rate.device is dev


def test_a_float_learning_rate_stays_exact_for_float64_variables():
    """Until it is assigned through the Variable, the float given is used as it is (a
    float32 Variable would round 0.1 for float64 variables)."""
    v = gt.Variable(np.zeros(1))
    opt = optimizers.SGD(0.1)
    assert float(opt.learning_rate) == float(np.float32(0.1))
    opt.apply_gradients([(gt.constant(np.ones(1)), v)])
    assert v.numpy()[0] == -0.1


def test_learning_rate_variable_in_a_captured_step_follows_assignments():
    def run(dev, captured):
        with gt.device(dev):
            w = gt.Variable(np.linspace(-1, 1, 4).astype(np.float32))
            opt = optimizers.Adam(0.05)
            lr = opt.learning_rate

            def step():
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(w * w * w)
                opt.apply_gradients([(tape.gradient(loss, w), w)])
                return loss
            fn = capture(step) if captured else step
            out = []
            for k in range(5):
                if k == 3:
                    lr.assign(0.01)
                out.append(float(fn()))
            return out, w.numpy()
    got, want = run("strict:0", True), run("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)


# --- exclude_from_weight_decay -----------------------------------------------------------------

TF_EXCLUDED = [[0.57213372, -1.42950523, 2.71556687], [0.7000035, -1.29999661],
               [0.70000923, -1.70000565, 3.20000458]]


@pytest.mark.parametrize("kind", ["cpu", "strict"])
def test_adamw_exclude_from_weight_decay(kind):
    """By Variable and by name pattern (re.search), as Keras 3. The numbers are TF's to a few
    1e-6 (AdamW's float64 bias correction, see above) and, exactly, those of AdamW for the
    decayed variable and of Adam without decay for the excluded ones."""
    dev = resolve_device(kind)

    def run(make, exclude):
        with gt.device(dev):
            w = gt.Variable(X0, name="kernel")
            b = gt.Variable(np.array([1.0, -1.0], np.float32), name="bias")
            w2 = gt.Variable(X0, name="w2")
            opt = make()
            if exclude:
                opt.exclude_from_weight_decay(var_list=[w2], var_names=["bias"])
            g_w = gt.constant(np.array([0.1, -0.2, 0.3], np.float32))
            g_b = gt.constant(np.array([0.5, 0.5], np.float32))
            for _ in range(3):
                opt.apply_gradients([(g_w, w), (g_b, b), (g_w, w2)])
            return [x.numpy() for x in (w, b, w2)]
    got = run(lambda: optimizers.AdamW(0.1, weight_decay=0.5), True)
    for a, want in zip(got, TF_EXCLUDED):
        np.testing.assert_allclose(a, want, rtol=0, atol=4e-6)
    decayed = run(lambda: optimizers.AdamW(0.1, weight_decay=0.5), False)
    plain = run(lambda: optimizers.Adam(0.1), False)
    np.testing.assert_allclose(got[0], decayed[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], plain[1], rtol=1e-6)
    np.testing.assert_allclose(got[2], plain[2], rtol=1e-6)
    assert not np.allclose(decayed[1], plain[1])


def test_exclude_from_weight_decay_replaces_the_previous_choice():
    opt = optimizers.SGD(1.0, weight_decay=0.5)
    a, b = gt.Variable(np.ones(1), name="a"), gt.Variable(np.ones(1), name="layer_norm/b")
    opt.exclude_from_weight_decay(var_names=["layer_norm"])
    opt.apply_gradients([(gt.constant(np.zeros(1)), a), (gt.constant(np.zeros(1)), b)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [0.5, 1.0])
    opt.exclude_from_weight_decay(var_list=[a])
    opt.apply_gradients([(gt.constant(np.zeros(1)), a), (gt.constant(np.zeros(1)), b)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [0.5, 0.5])
    opt.exclude_from_weight_decay()
    opt.apply_gradients([(gt.constant(np.zeros(1)), a), (gt.constant(np.zeros(1)), b)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [0.25, 0.25])
    with pytest.raises(TypeError, match="var_list must hold gt.Variables"):
        opt.exclude_from_weight_decay(var_list=[np.ones(1)])
