"""Optimizers, learning-rate schedules and clipping compared with TensorFlow 2.21 (Keras 3):
the expected values are what TensorFlow gives for the same inputs. Covers Adafactor and Lamb,
the base options (``use_ema``, ``gradient_accumulation_steps``, ``loss_scale_factor``), the
order of ``optimizer.variables``, configs, fractional schedule steps and clipping edge cases."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers
from gradtape.capture import CaptureError, capture
from gradtape.optimizers import schedules

from conftest import resolve_device


def init_values():
    return [(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.3 - 0.7),
            np.array([0.5, -0.25, 1.0], np.float32),
            np.float32(0.7),
            np.array([[0.2, -0.4], [0.6, 0.1]], np.float64)]


def grad_values(k, values):
    out = []
    for i, v in enumerate(values):
        a = np.asarray(v)
        g = np.cos(np.arange(a.size) * 1.3 + k * 0.7 + i) * (1.5 + i)
        out.append(g.reshape(a.shape).astype(a.dtype))
    return out


def run(make, steps=5, none_at=None):
    """``steps`` steps on a (2, 3), a (3,), a scalar float32 and a (2, 2) float64 variable;
    the second variable has no gradient at the steps of ``none_at``."""
    opt = make()
    values = init_values()
    vs = [gt.Variable(v) for v in values]
    for k in range(steps):
        gs = [gt.constant(g) for g in grad_values(k, values)]
        if none_at is not None and k in none_at:
            gs[1] = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            opt.apply_gradients(zip(gs, vs))
    return opt, vs


def slot_variables(opt):
    return [v for v in opt.variables if v is not opt._iterations]


def assert_close(got, want, rtol, atol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=rtol, atol=atol)


# name: (optimizer, steps without a gradient for the second variable, iterations after five
# steps, the variables, optimizer.variables after iterations (Keras' order), the variables
# after finalize_variable_values), from TensorFlow
CASES = {
    'adafactor': (
        lambda: optimizers.Adafactor(0.5),
        None, 5,
        [[[-0.68392766, 0.68298352, 0.42696413], [-0.73329329, -0.85543895, 1.1422615]],
         [2.1949801, 0.8954109, -0.024628043], 3.0570154,
         [[0.21563298, -1.2398959], [0.20932043, 0.54654118]]],
        [[1.1164504, 1.1675282], [1.2445915, 1.053594, 1.1277825],
         [[1.2167581, 1.030032, 1.1025614], [1.2724249, 1.0771561, 1.1530037]], 0.0, 0.0,
         [3.49119, 2.6264181, 3.6132684], 0.0, 0.0, 5.1874242, [10.559526, 10.247393],
         [9.4689997, 11.337919], [[9.611048, 11.508004], [9.3269513, 11.167834]]],
        [[[-0.68392766, 0.68298352, 0.42696413], [-0.73329329, -0.85543895, 1.1422615]],
         [2.1949801, 0.8954109, -0.024628043], 3.0570154,
         [[0.21563298, -1.2398959], [0.20932043, 0.54654118]]]),
    'adafactor_opts': (
        lambda: optimizers.Adafactor(0.3, beta_2_decay=-0.5, epsilon_2=0.01,
                                   clip_threshold=0.5, weight_decay=0.1),
        (1,), 5,
        [[[-0.64902067, -0.1382488, 0.06442894], [0.0041515753, 0.12771548, 0.7245357]],
         [0.6554783, -0.048027776, 0.72271502], 1.002362,
         [[0.20399679, -0.5220116], [0.39510033, 0.14585502]]],
        [[1.0964689, 1.2274544], [1.4078915, 0.96965021, 1.1083436],
         [[1.3285372, 0.91499692, 1.045873], [1.4872458, 1.0243036, 1.1708142]], 0.0, 0.0,
         [4.2286053, 1.6039693, 4.6281028], 0.0, 0.0, 3.8874855, [11.175155, 10.350452],
         [8.2938198, 13.231788], [[8.611578, 13.738733], [7.9760616, 12.724843]]],
        [[[-0.64902067, -0.1382488, 0.06442894], [0.0041515753, 0.12771548, 0.7245357]],
         [0.6554783, -0.048027776, 0.72271502], 1.002362,
         [[0.20399679, -0.5220116], [0.39510033, 0.14585502]]]),
    'lamb': (
        lambda: optimizers.Lamb(0.05),
        (1,), 5,
        [[[-0.79841989, -0.32781357, 0.037577003], [0.21183291, 0.34165144, 0.72217846]],
         [0.5493682, -0.085015848, 1.0169908], 0.89339709,
         [[0.28167593, -0.43740992], [0.49261587, 0.076923966]]],
        [[[-0.0067860633, -0.34576589, -0.17819785], [0.25043043, 0.31217757, -0.083416186]],
         [[0.0061885472, 0.005228614, 0.0056990343], [0.005852771, 0.005118879, 0.0062228702]],
         [-0.47339946, -0.26782453, 0.33011401], [0.015353857, 0.0087353457, 0.016028337],
         -0.75076807, 0.027660033, [[-0.13096761, 0.98926013], [0.66021946, -0.63604426]],
         [[0.054967055, 0.048389564], [0.04973834, 0.054004329]]],
        [[[-0.79841989, -0.32781357, 0.037577003], [0.21183291, 0.34165144, 0.72217846]],
         [0.5493682, -0.085015848, 1.0169908], 0.89339709,
         [[0.28167593, -0.43740992], [0.49261587, 0.076923966]]]),
    'lamb_wd': (
        lambda: optimizers.Lamb(0.05, beta_1=0.8, beta_2=0.9, weight_decay=0.2),
        None, 5,
        [[[-0.7483778, -0.30686677, 0.028378356], [0.19051757, 0.32829982, 0.69855547]],
         [0.52010691, -0.046143696, 1.003436], 0.8496117,
         [[0.26033003, -0.42078052], [0.47337774, 0.081534616]]],
        [[[-0.13083632, -0.60911053, -0.19503635], [0.50476652, 0.46508527, -0.25594696]],
         [[0.5002017, 0.45155174, 0.4368718], [0.5106799, 0.39886913, 0.51667976]],
         [-0.95343417, -0.59522772, 0.63498878], [1.3550913, 1.1351421, 1.4521185], -1.1371148,
         2.1702225, [[0.13633248, 1.7949406], [0.82395656, -1.3541258]],
         [[4.3671494, 4.2217137], [3.7961665, 4.6708954]]],
        [[[-0.7483778, -0.30686677, 0.028378356], [0.19051757, 0.32829982, 0.69855547]],
         [0.52010691, -0.046143696, 1.003436], 0.8496117,
         [[0.26033003, -0.42078052], [0.47337774, 0.081534616]]]),
    'ema': (
        lambda: optimizers.Adam(0.1, use_ema=True, ema_momentum=0.5),
        (1,), 5,
        [[[-1.0233192, -0.24620208, 0.31922644], [0.29378363, 0.034161471, 0.52916038]],
         [0.5360437, 0.068694055, 1.0737742], 1.1670429,
         [[0.55296792, -0.48687845], [0.16335577, -0.047119947]]],
        [[[-0.99681246, -0.3170954, 0.26023656], [0.32516974, 0.11404181, 0.54029739]],
         [0.48775136, 0.012383686, 1.0960207], 1.0859311,
         [[0.51710807, -0.42488727], [0.22918152, -0.067064309]],
         [[-0.0067860633, -0.34576589, -0.17819785], [0.25043043, 0.31217757, -0.083416186]],
         [[0.0061885472, 0.005228614, 0.0056990343], [0.005852771, 0.005118879, 0.0062228702]],
         [-0.47339946, -0.26782453, 0.33011401], [0.015353857, 0.0087353457, 0.016028337],
         -0.75076807, 0.027660033, [[-0.13096761, 0.98926013], [0.66021946, -0.63604426]],
         [[0.054967055, 0.048389564], [0.04973834, 0.054004329]]],
        [[[-0.99681246, -0.3170954, 0.26023656], [0.32516974, 0.11404181, 0.54029739]],
         [0.48775136, 0.012383686, 1.0960207], 1.0859311,
         [[0.51710807, -0.42488727], [0.22918152, -0.067064309]]]),
    'ema_over': (
        lambda: optimizers.SGD(0.1, momentum=0.5, use_ema=True, ema_momentum=0.6,
                             ema_overwrite_frequency=2),
        None, 5,
        [[[-0.84759343, -0.035537824, 0.24257988], [0.018817276, 0.060487904, 0.74604475]],
         [0.95502788, 0.43492126, 0.91140354], 1.7327718,
         [[0.81583033, -1.3747603], [-0.53732482, 0.46629421]]],
        [[[-0.93705779, -0.15429649, 0.26850861], [0.15144777, 0.10551617, 0.63750434]],
         [0.73644483, 0.41195551, 1.1177], 1.6108394,
         [[1.0398731, -0.99669953], [-0.55910598, 0.076580542]],
         [[0.14910726, 0.19793111, -0.043214563], [-0.22105083, -0.075047098, 0.18090078]],
         [0.36430508, 0.038276248, -0.3438274], 0.20322074,
         [[-0.37340467, -0.63010133], [0.036301934, 0.64952277]]],
        [[[-0.93705779, -0.15429649, 0.26850861], [0.15144777, 0.10551617, 0.63750434]],
         [0.73644483, 0.41195551, 1.1177], 1.6108394,
         [[1.0398731, -0.99669953], [-0.55910598, 0.076580542]]]),
    'gas': (
        lambda: optimizers.Adam(0.1, gradient_accumulation_steps=2),
        (1, 2), 2,
        [[[-0.85194933, -0.2205198, 0.08830262], [0.26731169, 0.29989564, 0.67002642]],
         [0.57441276, -0.17558768, 0.9255873], 0.90010226,
         [[0.36409581, -0.36997985], [0.40646599, 0.016589651]]],
        [[[-1.4133335, -0.8622359, 0.9520393], [1.3715748, -0.21825005, -1.488338]],
         [-1.9774193, 0.94494438, 2.4829624], 0.30624643,
         [[3.9848378, 3.08046], [-2.3367989, -4.330642]],
         [[0.094010934, -0.15034902, -0.1744473], [0.05702012, 0.20495293, 0.052629218]],
         [[0.0018133298, 0.0019812544, 0.0021610649], [0.0016849852, 0.0023210691, 0.0017070423]],
         [-0.12489189, -0.038416609, 0.1043391], [0.0015597985, 0.00014758359, 0.0010886649],
         -0.47771838, 0.012610868, [[-0.35631864, 0.38755674], [0.56366059, -0.085999648]],
         [[0.017112244, 0.016984269], [0.020108908, 0.014881946]]],
        [[[-0.85194933, -0.2205198, 0.08830262], [0.26731169, 0.29989564, 0.67002642]],
         [0.57441276, -0.17558768, 0.9255873], 0.90010226,
         [[0.36409581, -0.36997985], [0.40646599, 0.016589651]]]),
    'gas_sched_wd': (
        lambda: optimizers.SGD(schedules.ExponentialDecay(0.2, 1, 0.5), momentum=0.5,
                             weight_decay=0.1, gradient_accumulation_steps=2),
        (3,), 2,
        [[[-0.88320237, -0.34323612, 0.12088129], [0.26323473, 0.30929404, 0.6256001]],
         [0.44356778, -0.040466443, 1.1521947], 1.1046933,
         [[0.81285354, -0.4583614], [-0.056726389, -0.18523872]]],
        [[[-1.4133335, -0.8622359, 0.9520393], [1.3715748, -0.21825005, -1.488338]],
         [-1.9774193, 0.94494438, 2.4829624], 0.30624643,
         [[3.9848378, 3.08046], [-2.3367989, -4.330642]],
         [[-0.059902605, 0.040653121, 0.081651926], [0.0030304678, -0.080030635, -0.045846671]],
         [-0.05143223, 0.20703356, 0.16219471], 0.18296513,
         [[0.20281164, -0.089641336], [-0.25076954, -0.044519782]]],
        [[[-0.88320237, -0.34323612, 0.12088129], [0.26323473, 0.30929404, 0.6256001]],
         [0.44356778, -0.040466443, 1.1521947], 1.1046933,
         [[0.81285354, -0.4583614], [-0.056726389, -0.18523872]]]),
    'lsf': (
        lambda: optimizers.Adam(0.1, loss_scale_factor=8.0, clipnorm=1.0),
        None, 5,
        [[[-1.0233151, -0.24619997, 0.31922144], [0.29378083, 0.034168713, 0.52916414]],
         [0.50986856, 0.20206216, 1.200719], 1.1670395,
         [[0.5529665, -0.48687904], [0.16335757, -0.047118916]]],
        [[[-0.00084825791, -0.043220736, -0.022274731], [0.031303804, 0.039022196, -0.010427023]],
         [[9.6696051e-05, 8.1697093e-05, 8.9047411e-05],
          [9.1449547e-05, 7.9982485e-05, 9.7232347e-05]],
         [-0.063341051, -0.054513469, 0.034176469], [0.00024149191, 0.00023187116, 0.00026600496],
         -0.093846008, 0.00043218801, [[-0.016370952, 0.12365752], [0.082527433, -0.079505533]],
         [[0.00085886024, 0.00075608694], [0.00077716157, 0.00084381764]]],
        [[[-1.0233151, -0.24619997, 0.31922144], [0.29378083, 0.034168713, 0.52916414]],
         [0.50986856, 0.20206216, 1.200719], 1.1670395,
         [[0.5529665, -0.48687904], [0.16335757, -0.047118916]]]),
    'lsf_sgd': (
        lambda: optimizers.SGD(0.1, loss_scale_factor=4.0, clipvalue=0.5),
        (2,), 5,
        [[[-0.71829027, -0.30271211, -0.029660918], [0.14034341, 0.39774486, 0.8049503]],
         [0.57371938, -0.16277307, 0.97504991], 0.8787567,
         [[0.24205245, -0.53682209], [0.48274544, 0.17026316]]],
        [],
        [[[-0.71829027, -0.30271211, -0.029660918], [0.14034341, 0.39774486, 0.8049503]],
         [0.57371938, -0.16277307, 0.97504991], 0.8787567,
         [[0.24205245, -0.53682209], [0.48274544, 0.17026316]]]),
}

# (Keras computes in float32 even for float64 variables, and rounds its float hyper-parameters
# to float32: Adam-based steps agree to about 1e-5)
TOLERANCE = {"ema": 1e-5, "gas": 1e-5, "lsf": 1e-5}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trajectories_slots_and_final_values_follow_tensorflow(name):
    make, none_at, iterations, want_vars, want_slots, want_final = CASES[name]
    tol = TOLERANCE.get(name, 2e-6)
    opt, vs = run(make, none_at=none_at)
    assert_close([v.numpy() for v in vs], want_vars, tol, tol)
    assert int(np.asarray(opt.iterations)) == iterations
    assert_close([s.numpy() for s in slot_variables(opt)], want_slots, tol, tol)
    opt.finalize_variable_values(vs)
    assert_close([v.numpy() for v in vs], want_final, tol, tol)


def test_variables_list_slots_in_keras_order_for_every_variable():
    """Slots of variables without a gradient exist too; Adam's vhat and RMSprop's slots come
    group by group, the EMA averages and gradient accumulators first (TensorFlow's shapes)."""
    want = {
        "adam_ams": (lambda: optimizers.Adam(0.1, amsgrad=True),
                     [(2, 3), (2, 3), (3,), (3,), (), (), (2, 2), (2, 2), (2, 3), (3,), (),
                      (2, 2)]),
        "rms": (lambda: optimizers.RMSprop(0.1, momentum=0.5, centered=True),
                [(2, 3), (3,), (), (2, 2)] * 3),
        "ema_gas_adam": (lambda: optimizers.Adam(0.1, use_ema=True, amsgrad=True,
                                                 gradient_accumulation_steps=2),
                         [(2, 3), (3,), (), (2, 2), (2, 3), (3,), (), (2, 2), (2, 3), (2, 3),
                          (3,), (3,), (), (), (2, 2), (2, 2), (2, 3), (3,), (), (2, 2)]),
        "adafactor": (lambda: optimizers.Adafactor(),
                      [(2,), (3,), (2, 3), (), (), (3,), (), (), (), (2,), (2,), (2, 2)]),
    }
    for name, (make, shapes) in want.items():
        opt, _ = run(make, steps=1, none_at=(0,))
        assert [tuple(v.shape) for v in slot_variables(opt)] == shapes, name
        assert opt.variables[0] is opt._iterations and opt.built
    # Adafactor keeps int32 zeros as the r and c of a variable of rank < 2, as Keras
    opt, vs = run(lambda: optimizers.Adafactor(), steps=1)
    assert opt.get_slot(vs[1], "r").dtype == gt.int32 and opt.get_slot(vs[1], "c").shape == ()
    assert opt.get_slot(vs[3], "r").dtype == gt.float64


def test_gradient_accumulation_counts_updates_and_scale_loss():
    """TensorFlow: iterations [0, 0, 1, 1, 1, 2, 2], the variable 0.8; scale_loss multiplies
    by loss_scale_factor and apply divides the gradients by it (variable [0, 0], loss 80)."""
    opt = optimizers.SGD(0.1, gradient_accumulation_steps=3)
    v = gt.Variable(np.array([1.0], np.float32))
    its = []
    for _ in range(7):
        opt.apply([gt.constant(np.array([1.0], np.float32))], [v])
        its.append(int(np.asarray(opt.iterations)))
    assert its == [0, 0, 1, 1, 1, 2, 2]
    assert int(opt._iterations.numpy()) == 7
    np.testing.assert_allclose(v.numpy(), [0.8], rtol=1e-6)
    opt = optimizers.SGD(0.5, loss_scale_factor=16.0)
    v = gt.Variable(np.array([1.0, -2.0], np.float32))
    with gt.GradientTape() as tape:
        loss = opt.scale_loss(gt.reduce_sum(v * v))
    opt.apply(tape.gradient(loss, [v]), [v])
    assert float(loss) == 80.0
    np.testing.assert_allclose(v.numpy(), [0.0, 0.0], atol=1e-7)
    assert optimizers.Adam().scale_loss(3.0) == 3.0


def test_global_clipnorm_with_an_infinite_norm_makes_every_gradient_nan():
    """TensorFlow: a non-finite global norm makes the update NaN for every variable."""
    opt = optimizers.SGD(1.0, global_clipnorm=1.0)
    v, w = gt.Variable(np.array([1.0, 1.0], np.float32)), gt.Variable(np.array([2.0], np.float32))
    opt.apply_gradients([(gt.constant(np.array([np.inf, 1.0], np.float32)), v),
                         (gt.constant(np.array([1.0], np.float32)), w)])
    assert np.isnan(v.numpy()).all() and np.isnan(w.numpy()).all()
    opt = optimizers.SGD(1.0, global_clipnorm=1.0)
    v = gt.Variable(np.array([1.0, 1.0]))
    opt.apply_gradients([(gt.constant(np.array([np.nan, 1.0])), v)])
    assert np.isnan(v.numpy()).all()


# --- configs and construction -------------------------------------------------------------------

BASE_KEYS = {"name", "learning_rate", "weight_decay", "clipnorm", "global_clipnorm", "clipvalue",
             "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
             "gradient_accumulation_steps"}


def test_configs_have_keras_3_keys_and_round_trip():
    own = {optimizers.SGD: {"momentum", "nesterov"},
           optimizers.Adam: {"beta_1", "beta_2", "epsilon", "amsgrad"},
           optimizers.AdamW: {"beta_1", "beta_2", "epsilon", "amsgrad"},
           optimizers.RMSprop: {"rho", "momentum", "epsilon", "centered"},
           optimizers.Adagrad: {"initial_accumulator_value", "epsilon"},
           optimizers.Adadelta: {"rho", "epsilon"},
           optimizers.Adamax: {"beta_1", "beta_2", "epsilon"},
           optimizers.Nadam: {"beta_1", "beta_2", "epsilon"},
           optimizers.Ftrl: {"learning_rate_power", "initial_accumulator_value",
                             "l1_regularization_strength", "l2_regularization_strength",
                             "l2_shrinkage_regularization_strength", "beta"},
           optimizers.Lion: {"beta_1", "beta_2"},
           optimizers.Adafactor: {"beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold",
                                  "relative_step"},
           optimizers.Lamb: {"beta_1", "beta_2", "epsilon"}}
    for cls, keys in own.items():
        config = cls().get_config()
        assert set(config) == BASE_KEYS | keys, cls
        assert config["use_ema"] is False and config["ema_momentum"] == 0.99
        assert config["gradient_accumulation_steps"] is None
        assert config["loss_scale_factor"] is None
    assert optimizers.Adafactor().get_config()["epsilon_1"] == 1e-30
    opt = optimizers.Adam(schedules.CosineDecay(0.1, 10), use_ema=True, ema_momentum=0.9,
                          ema_overwrite_frequency=3, loss_scale_factor=4.0,
                          gradient_accumulation_steps=2, global_clipnorm=1.0)
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert again.get_config() == opt.get_config()
    assert isinstance(again._learning_rate, schedules.CosineDecay)
    # a Keras 3 config: the schedule carries module and registered_name
    keras3 = {"name": "adam", "learning_rate": {
        "module": "keras.optimizers.schedules", "class_name": "ExponentialDecay",
        "config": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5,
                   "staircase": False, "name": "ExponentialDecay"}, "registered_name": None},
        "weight_decay": None, "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
        "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
        "loss_scale_factor": None, "gradient_accumulation_steps": None, "beta_1": 0.9,
        "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False}
    opt = optimizers.Adam.from_config(keras3)
    assert opt._learning_rate.value_at(10) == pytest.approx(0.05)
    for name in ("adafactor", "lamb"):
        assert type(optimizers.get(name)).__name__.lower() == name
    assert gt.keras.optimizers.Adafactor is optimizers.Adafactor
    assert gt.keras.optimizers.Lamb is optimizers.Lamb


def test_option_arguments_are_checked_as_keras_does():
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be an integer >= 2"):
        optimizers.SGD(gradient_accumulation_steps=1)
    with pytest.raises(ValueError, match=r"ema_momentum must be in the range \[0, 1\]"):
        optimizers.SGD(use_ema=True, ema_momentum=1.5)
    with pytest.raises(ValueError, match="ema_overwrite_frequency must be an integer >= 1"):
        optimizers.SGD(use_ema=True, ema_overwrite_frequency=1.5)
    with pytest.raises(ValueError, match="only one of clipnorm, clipvalue and global_clipnorm"):
        optimizers.Adam(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.warns(UserWarning, match="`decay` is no longer supported"):
        opt = optimizers.SGD(0.1, decay=0.01)
    assert "decay" not in opt.get_config()
    # a Tensor given as the learning rate is refused (ValueError, as Keras)
    with pytest.raises(ValueError, match="learning_rate must be a float"):
        optimizers.SGD(gt.constant(0.1))
    with pytest.raises(ValueError, match="learning_rate must be a float"):
        optimizers.SGD("fast")


def test_learning_rate_setter_and_getter_follow_keras():
    sched = schedules.ExponentialDecay(0.1, 10, 0.5)
    opt = optimizers.Adam(sched)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.5
    opt.learning_rate = schedules.CosineDecay(0.2, 5)        # a new schedule is fine
    assert float(opt.learning_rate) == pytest.approx(0.2)
    opt = optimizers.SGD(0.1)
    opt.learning_rate = gt.constant(0.7)        # a scalar tensor sets the value
    assert float(opt.learning_rate) == pytest.approx(0.7)
    assert isinstance(opt.learning_rate, gt.Variable)
    assert optimizers.Adam(lambda: 0.25).learning_rate == 0.25    # a callable's value as is


def test_apply_after_build_takes_the_built_variables():
    """Keras 3: ``apply(grads)`` after ``build(variables)``; an empty list does nothing."""
    opt = optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="must already be built"):
        opt.apply([gt.constant(1.0)])
    v = gt.Variable(1.0)
    assert not opt.built
    opt.build([v])
    assert opt.built
    opt.apply([gt.constant(2.0)])
    assert float(v.numpy()) == pytest.approx(0.8) and int(opt.iterations.numpy()) == 1
    assert opt.apply([]) is None and int(opt.iterations.numpy()) == 1
    with pytest.raises(ValueError, match="2 gradients for 1 variables"):
        opt.apply([gt.constant(1.0), gt.constant(1.0)])


def test_set_weights_in_the_order_of_variables():
    opt, vs = run(lambda: optimizers.Adam(0.1, amsgrad=True), steps=1)
    fresh = optimizers.Adam(0.1, amsgrad=True)
    with pytest.raises(ValueError, match="not built"):
        fresh.set_weights([])
    fresh.build(vs)
    fresh.set_weights([v.numpy() for v in opt.variables])
    for a, b in zip(fresh.variables, opt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(fresh.iterations.numpy()) == 1
    with pytest.raises(ValueError, match="has shape"):
        fresh.set_weights([np.zeros(3)] * len(opt.variables))


def test_finalize_without_ema_does_nothing_and_names_unknown_variables():
    opt, vs = run(lambda: optimizers.SGD(0.1), steps=1)
    before = [v.numpy() for v in vs]
    opt.finalize_variable_values(vs)
    assert_close([v.numpy() for v in vs], before, 0, 0)
    opt, vs = run(lambda: optimizers.SGD(0.1, use_ema=True), steps=1)
    with pytest.raises(ValueError, match="no moving average"):
        opt.finalize_variable_values([gt.Variable(1.0)])


def test_loss_scale_optimizer_passes_finalize_to_the_inner_optimizer():
    """TensorFlow: [0.8500016, 1.9026324] after the three steps and finalize (one skipped)."""
    opt = gt.keras.mixed_precision.LossScaleOptimizer(
        optimizers.Adam(0.1, use_ema=True, ema_momentum=0.5), initial_scale=4.0)
    v = gt.Variable(np.array([1.0, 2.0], np.float32))
    for g in ([4.0, 8.0], [np.inf, 1.0], [2.0, -4.0]):
        opt.apply_gradients([(gt.constant(np.array(g, np.float32)), v)])
    assert int(opt.iterations.numpy()) == 2
    opt.finalize_variable_values([v])
    np.testing.assert_allclose(v.numpy(), [0.8500016, 1.9026324], rtol=1e-5)


# --- on a device, and captured ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["adafactor_opts", "lamb", "ema", "ema_over", "gas", "lsf"])
def test_options_on_the_strict_device_make_no_host_round_trip(name):
    make, none_at = CASES[name][:2]
    dev = resolve_device("strict")
    with gt.device(dev):
        opt = make()
        values = init_values()
        vs = [gt.Variable(v) for v in values]
        grads = [[gt.constant(g) for g in grad_values(k, values)] for k in range(5)]
        dev.reset_counters()
        for k, gs in enumerate(grads):
            if none_at is not None and k in none_at:
                gs = [gs[0], None] + gs[2:]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                opt.apply_gradients(zip(gs, vs))
        assert (dev.sync_count, dev.transfer_count) == (0, 0)
    _, cpu_vs = run(make, none_at=none_at)
    assert_close([v.numpy() for v in vs], [v.numpy() for v in cpu_vs], 1e-6, 1e-7)


@pytest.mark.parametrize("make", [lambda: optimizers.Adafactor(0.5),
                                  lambda: optimizers.Lamb(0.05, weight_decay=0.1),
                                  lambda: optimizers.Adam(0.1, use_ema=True, ema_momentum=0.5)],
                         ids=["adafactor", "lamb", "ema"])
def test_a_captured_step_matches_the_eager_cpu(make):
    def train(dev, captured):
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
            for k in (1.0, 0.5, 2.0, -1.0, 1.5):
                fn(gt.constant(np.full((2, 3), k, np.float64)))
            return [w.numpy(), s.numpy()] + [v.numpy() for v in slot_variables(opt)]
    assert_close(train("strict:0", True), train("cpu", False), 1e-12, 1e-14)


def test_gradient_accumulation_is_refused_in_a_captured_step():
    with gt.device("strict:0"):
        w = gt.Variable(np.ones(3))
        opt = optimizers.SGD(0.1, gradient_accumulation_steps=2)

        def step(x):
            with gt.GradientTape() as tape:
                loss = gt.reduce_sum(w * x)
            opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            return loss
        fn = capture(step)
        fn(gt.constant(np.ones(3)))
        with pytest.raises(CaptureError, match="gradient_accumulation_steps"):
            fn(gt.constant(np.ones(3)))


# --- schedules ---------------------------------------------------------------------------------

def test_schedules_at_fractional_steps_follow_tensorflow():
    want = {
        "exp": (schedules.ExponentialDecay(0.1, 7, 0.5), [0.1, 0.0780709, 0.0580065, 0.0269273]),
        "poly": (schedules.PolynomialDecay(0.1, 10, end_learning_rate=0.01, power=0.5,
                                           cycle=True), [0.1, 0.0879423, 0.0703738, 0.0622853]),
        "cos_warm": (schedules.CosineDecay(0.0, 20, alpha=0.1, warmup_target=0.2,
                                           warmup_steps=5), [0.0, 0.1, 0.1997226, 0.1344296]),
        "cosr": (schedules.CosineDecayRestarts(0.1, 4, t_mul=0.5),
                 [0.1, 0.0308658, 0.0146447, np.nan]),
        "inv": (schedules.InverseTimeDecay(0.1, 5, 0.5), [0.1, 0.08, 0.0645161, 0.0430108]),
    }
    for name, (sched, values) in want.items():
        got = [float(sched(gt.constant(x))) for x in (0.0, 2.5, 5.5, 13.25)]
        np.testing.assert_allclose(got, values, rtol=2e-6, atol=1e-7, err_msg=name)
        assert float(sched(5.5)) == pytest.approx(got[2], nan_ok=True)
        assert sched(gt.constant(3, gt.int64)).dtype == gt.float32


def test_schedules_serialize_and_deserialize():
    sched = schedules.PolynomialDecay(0.1, 10, end_learning_rate=0.01, power=2.0, cycle=True)
    config = schedules.serialize(sched)
    assert config == {"module": "keras.optimizers.schedules", "class_name": "PolynomialDecay",
                      "config": sched.get_config(), "registered_name": None}
    again = schedules.deserialize(config)
    assert type(again) is schedules.PolynomialDecay and again.get_config() == sched.get_config()
    keras3 = {"module": "keras.optimizers.schedules", "class_name": "ExponentialDecay",
              "config": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5,
                         "staircase": True, "name": "ExponentialDecay"},
              "registered_name": None}
    assert schedules.deserialize(keras3).value_at(25) == pytest.approx(0.025)

    class Mine(schedules.LearningRateSchedule):
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, step):
            return gt.constant(self.rate)

        def get_config(self):
            return {"rate": self.rate}
    got = schedules.deserialize({"class_name": "Mine", "config": {"rate": 0.5}},
                                custom_objects={"Mine": Mine})
    assert isinstance(got, Mine) and got.rate == 0.5
    with pytest.raises(ValueError, match="unknown learning-rate schedule 'Mine'"):
        schedules.deserialize({"class_name": "Mine", "config": {"rate": 0.5}})
    opt = optimizers.SGD.from_config({"learning_rate": {"class_name": "Mine",
                                                        "config": {"rate": 0.5}}},
                                     custom_objects={"Mine": Mine})
    assert isinstance(opt._learning_rate, Mine)


# --- clipping functions ------------------------------------------------------------------------

def test_clip_by_norm_takes_a_negative_clip_norm_as_zero():
    """TensorFlow: [0, -0] and a zero gradient for the clip norm."""
    np.testing.assert_array_equal(gt.clip_by_norm(gt.constant([3.0, -4.0]), -2.0).numpy(),
                                  [0.0, 0.0])
    c = gt.Variable(-1.0)
    with gt.GradientTape() as tape:
        y = gt.reduce_sum(gt.clip_by_norm(gt.constant([3.0, 4.0]), c))
    assert float(tape.gradient(y, c)) == 0.0


def test_global_norm_of_no_tensor_is_a_float32_zero():
    """TensorFlow: global_norm([None]) and global_norm([]) are 0.0 (float32);
    clip_by_global_norm([None, None], 1.0) gives ([None, None], 0.0)."""
    for t_list in ([None], [], ()):
        norm = gt.linalg.global_norm(t_list)
        assert norm.dtype == gt.float32 and float(norm) == 0.0
    clipped, norm = gt.clip_by_global_norm([None, None], 1.0)
    assert clipped == [None, None] and float(norm) == 0.0


@pytest.mark.parametrize("name", ["adafactor", "ema_over", "lamb_wd"])
def test_resume_from_a_checkpoint(name, tmp_path):
    """The slots (Adafactor's factored ones, the EMA averages) and the step count are saved:
    two steps, a save, three steps on a fresh optimizer = TensorFlow's five steps."""
    make, none_at, _, want_vars = CASES[name][:4]
    values = init_values()
    vs = [gt.Variable(v, name=f"v{i}") for i, v in enumerate(values)]

    def steps(opt, ks):
        for k in ks:
            gs = [gt.constant(g) for g in grad_values(k, values)]
            opt.apply_gradients(zip(gs, vs))
    opt = make()
    ckpt = gt.train.Checkpoint(optimizer=opt, **{f"v{i}": v for i, v in enumerate(vs)})
    steps(opt, range(2))
    path = ckpt.save(str(tmp_path / "ckpt"))
    steps(opt, range(2, 5))
    uninterrupted = [v.numpy() for v in vs]
    fresh = make()
    gt.train.Checkpoint(optimizer=fresh, **{f"v{i}": v for i, v in enumerate(vs)}).restore(path)
    assert int(fresh.iterations.numpy()) == 2
    steps(fresh, range(2, 5))
    assert_close([v.numpy() for v in vs], uninterrupted, 0, 0)
    assert_close([v.numpy() for v in vs], want_vars, 2e-6, 2e-6)


def test_clipping_indexed_slices_keeps_them_and_reads_their_values():
    """TensorFlow: the values [[3, 4], [0, 12]] at rows [1, 1] have norm 13 (not the norm of
    the summed dense row); clip_by_norm and clip_by_global_norm give IndexedSlices of
    [[3, 4], [0, 12]] / 13."""
    s = gt.IndexedSlices(gt.constant([[3.0, 4.0], [0.0, 12.0]]), gt.constant([1, 1]),
                         gt.constant([3, 2]))
    want = np.array([[3.0, 4.0], [0.0, 12.0]]) / 13
    got = gt.clip_by_norm(s, 1.0)
    assert isinstance(got, gt.IndexedSlices)
    np.testing.assert_allclose(got.values.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(got.indices.numpy(), [1, 1])
    assert float(gt.linalg.global_norm([s])) == pytest.approx(13.0)
    (clipped, none), norm = gt.clip_by_global_norm([s, None], 1.0)
    assert none is None and isinstance(clipped, gt.IndexedSlices)
    np.testing.assert_allclose(clipped.values.numpy(), want, rtol=1e-6)
    assert float(norm) == pytest.approx(13.0)
