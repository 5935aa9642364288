"""Forward mode: gt.ForwardAccumulator on every differentiable primitive (against the
reverse-mode Jacobian times the tangent), its own forward rules against the transposed
reverse rules, nesting with tapes and other accumulators, and bad input."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import gradtape as gt
from gradtape import nest
from gradtape.registry import REGISTRY, STATE, Op, apply, diff_ops, thread_state

from specs import all_specs

SPECS = all_specs()
CASES = [pytest.param(spec, case, id=f"{spec.name}-{'x'.join(map(str, case))}")
         for spec in SPECS for case in spec.shapes]

# Primitives that only the engine calls; covered by the tests named here.
ENGINE_ONLY = {"sum_to_batched": "test_engine_primitives_forward",
               "copy_to_device": "test_engine_primitives_forward"}
# Primitives that, as their TF counterparts, have no derivative at all: asking for one raises
# LookupError (checked by the test named here).
NO_DERIVATIVE = {"igamma_grad_a": "tests/test_ops_more.py (igamma's second derivative in a)"}


def _wrt(spec, args):
    return list(spec.wrt) if spec.wrt is not None else list(range(len(args)))


def _forward_vs_reverse(spec, case, seed=0):
    """(forward tangents, reverse J @ t) for every float output of the spec's function."""
    arrays = spec.inputs(case, seed=seed)
    wrt = _wrt(spec, arrays)
    rng = np.random.default_rng(100 + seed)
    args = [gt.constant(a) if i in wrt else a for i, a in enumerate(arrays)]
    tangents = {i: rng.standard_normal(arrays[i].shape) for i in wrt}
    primals = [args[i] for i in wrt]
    with gt.ForwardAccumulator(primals, [gt.constant(tangents[i]) for i in wrt]) as acc:
        out = spec.fn(*args)
    outs = [o for o in nest.flatten(out) if o.dtype.is_floating]
    forward = [acc.jvp(o, unconnected_gradients="zero").numpy() for o in outs]
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(primals)
        out2 = spec.fn(*args)
    outs2 = [o for o in nest.flatten(out2) if o.dtype.is_floating]
    reverse = []
    for o in outs2:
        js = tape.jacobian(o, primals, unconnected_gradients="zero")
        total = np.zeros(o.shape)
        for i, j in zip(wrt, js):
            jn = j.numpy().reshape(o.shape.num_elements(), -1)
            total = total + (jn @ tangents[i].reshape(-1)).reshape(o.shape)
        reverse.append(total)
    return forward, reverse


@pytest.mark.parametrize("spec,case", CASES)
def test_forward_mode_matches_reverse_jacobian(spec, case):
    forward, reverse = _forward_vs_reverse(spec, case)
    assert len(forward) == len(reverse) and forward
    for f, r in zip(forward, reverse):
        np.testing.assert_allclose(f, r, rtol=1e-7, atol=1e-9)


RULED = [pytest.param(spec, spec.shapes[0], id=spec.name) for spec in SPECS
         if any(REGISTRY[o].jvp is not None for o in spec.covered() if o in REGISTRY)]


@pytest.mark.parametrize("spec,case", RULED)
def test_forward_rules_match_transposed_reverse_rules(spec, case, monkeypatch):
    with_rules, _ = _forward_vs_reverse(spec, case, seed=3)
    for name, op in REGISTRY.items():
        if op.jvp is not None:
            monkeypatch.setattr(op, "jvp", None)
    transposed, _ = _forward_vs_reverse(spec, case, seed=3)
    for a, b in zip(with_rules, transposed):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_every_differentiable_op_supports_forward_mode():
    covered = {op for spec in SPECS for op in spec.covered()}
    missing = sorted(name for name, op in REGISTRY.items()
                     if not op.nondiff and name not in covered and name not in ENGINE_ONLY
                     and name not in NO_DERIVATIVE)
    assert not missing, f"differentiable primitives without a spec for forward mode: {missing}"
    no_rule = sorted(name for name, op in REGISTRY.items() if not op.nondiff and op.vjp is None
                     and op.jvp is None and name not in NO_DERIVATIVE)
    assert not no_rule, f"primitives with neither a reverse nor a forward rule: {no_rule}"


def test_hot_ops_have_forward_rules():
    for name in ("add", "subtract", "multiply", "divide", "negative", "exp", "log", "tanh",
                 "sigmoid", "sqrt", "square", "matmul", "reduce_sum", "reduce_mean", "reshape",
                 "transpose", "where", "maximum", "minimum", "pow"):
        assert REGISTRY[name].jvp is not None, name


def test_engine_primitives_forward():
    x = gt.constant(np.arange(24.0).reshape(2, 3, 4))
    t = gt.constant(np.ones((2, 3, 4)))
    with gt.ForwardAccumulator(x, t) as acc:
        y = diff_ops.sum_to_batched(x, shape=(1, 4), batch_ndim=1)
        z = gt.copy_to_device(x * 2.0, "cpu")
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.full((2, 1, 4), 3.0))
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.full((2, 3, 4), 2.0))


# --- closed forms -------------------------------------------------------------------------

def test_jvp_of_polynomial():
    x = gt.constant([1.0, 2.0, 3.0], dtype=gt.float64)
    with gt.ForwardAccumulator(x, gt.constant([1.0, 0.5, 0.0], dtype=gt.float64)) as acc:
        y = gt.reduce_sum(x ** 3.0)
        z = x * x
    assert float(acc.jvp(y)) == pytest.approx(3 * 1 + 12 * 0.5)
    np.testing.assert_allclose(acc.jvp(z).numpy(), [2.0, 2.0, 0.0])


def test_primal_and_unconnected_tensors():
    x = gt.constant([1.0, 2.0])
    c = gt.constant([5.0, 6.0])
    with gt.ForwardAccumulator(x, gt.constant([3.0, 4.0])) as acc:
        y = c * 2.0
        s = gt.stop_gradient(x) * 3.0
    np.testing.assert_allclose(acc.jvp(x).numpy(), [3.0, 4.0])
    assert acc.jvp(y) is None
    assert acc.jvp(s) is None
    zero = acc.jvp(y, unconnected_gradients=gt.UnconnectedGradients.ZERO)
    np.testing.assert_allclose(zero.numpy(), [0.0, 0.0])
    assert zero.dtype == gt.float32
    nested = acc.jvp({"a": [x, y]})
    assert nested["a"][1] is None
    with pytest.raises(ValueError, match="unconnected_gradients"):
        acc.jvp(x, unconnected_gradients="sometimes")


def test_nothing_is_recorded_after_exit():
    x = gt.constant(2.0)
    acc = gt.ForwardAccumulator(x, gt.constant(1.0))
    with acc:
        y = x * x
    z = x * x
    assert float(acc.jvp(y)) == 4.0
    assert acc.jvp(z) is None
    assert thread_state().accumulators == []


def test_state_is_restored_after_an_exception():
    before = STATE.active
    x = gt.constant(1.0)
    with pytest.raises(RuntimeError):
        with gt.ForwardAccumulator(x, gt.constant(1.0)):
            raise RuntimeError("boom")
    assert STATE.active == before
    assert thread_state().accumulators == []


def test_variables_as_primals():
    v = gt.Variable([1.0, 2.0])
    with gt.ForwardAccumulator(v, gt.constant([1.0, 1.0])) as acc:
        y = gt.reduce_sum(v * v)
        r = v.read_value() * 3.0
    assert float(acc.jvp(y)) == pytest.approx(6.0)
    np.testing.assert_allclose(acc.jvp(r).numpy(), [3.0, 3.0])


def test_forward_over_reverse_hessian_vector_product():
    # tf.autodiff.ForwardAccumulator's docstring example.
    v = gt.Variable([1.0, 2.0])
    with gt.autodiff.ForwardAccumulator(v, gt.constant([1.0, 0.0])) as acc:
        with gt.GradientTape() as tape:
            y = gt.reduce_sum(v ** 3.0)
        backward = tape.gradient(y, v)
    np.testing.assert_allclose(backward.numpy(), [3.0, 12.0])
    np.testing.assert_allclose(acc.jvp(backward).numpy(), [6.0, 0.0])


def test_reverse_over_forward():
    x = gt.constant(2.0, dtype=gt.float64)
    with gt.GradientTape() as tape:
        tape.watch(x)
        with gt.ForwardAccumulator(x, gt.constant(1.0, dtype=gt.float64)) as acc:
            y = gt.sin(x) * x
        dy = acc.jvp(y)
    assert float(dy) == pytest.approx(np.cos(2.0) * 2.0 + np.sin(2.0))
    assert float(tape.gradient(dy, x)) == pytest.approx(-np.sin(2.0) * 2.0 + 2 * np.cos(2.0))


def test_gradient_with_respect_to_the_tangent():
    x = gt.constant([1.0, 2.0], dtype=gt.float64)
    t = gt.constant([0.5, -1.0], dtype=gt.float64)
    with gt.GradientTape() as tape:
        tape.watch(t)
        with gt.ForwardAccumulator(x, t) as acc:
            y = gt.reduce_sum(gt.exp(x))
        jv = acc.jvp(y)
    np.testing.assert_allclose(tape.gradient(jv, t).numpy(), np.exp([1.0, 2.0]))


def test_nested_accumulators_forward_over_forward():
    # The outer accumulator sees the inner one's tangent computation, not the reverse.
    primal = gt.constant(1.1, dtype=gt.float64)
    with gt.ForwardAccumulator(primal, gt.constant(1.0, dtype=gt.float64)) as outer:
        with gt.ForwardAccumulator(primal, gt.constant(1.0, dtype=gt.float64)) as inner:
            primal_out = primal ** gt.constant(3.5, dtype=gt.float64)
    inner_jvp = inner.jvp(primal_out)
    assert float(inner_jvp) == pytest.approx(3.5 * 1.1 ** 2.5)
    assert float(outer.jvp(inner_jvp)) == pytest.approx(3.5 * 2.5 * 1.1 ** 1.5)
    assert inner.jvp(outer.jvp(primal_out)) is None


def test_tape_inside_accumulator_does_not_record_tangents():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as plain:
        plain.watch(x)
        gt.tanh(x * x)
    with gt.ForwardAccumulator(x, gt.constant([1.0, 1.0])):
        with gt.GradientTape() as inner:
            inner.watch(x)
            gt.tanh(x * x)
    assert len(inner._entries) == len(plain._entries)


def test_tape_outside_accumulator_records_tangents():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.ForwardAccumulator(x, gt.constant([1.0, 1.0])):
            gt.tanh(x * x)
    with gt.GradientTape() as plain:
        plain.watch(x)
        gt.tanh(x * x)
    assert len(outer._entries) > len(plain._entries)


def test_tangents_are_dropped_with_their_tensors():
    x = gt.constant(np.ones(3))
    with gt.ForwardAccumulator(x, gt.constant(np.ones(3))) as acc:
        for _ in range(50):
            y = gt.exp(x) * 2.0
    del y
    gc.collect()
    assert len(acc._tangents) <= 3


def test_multi_output_ops_and_broadcasting():
    x = gt.constant(np.arange(6.0).reshape(2, 3))
    b = gt.constant(np.array([1.0, 2.0, 3.0]))
    with gt.ForwardAccumulator([x, b], [gt.constant(np.ones((2, 3))),
                                        gt.constant(np.array([1.0, 0.0, 0.0]))]) as acc:
        parts = gt.split(x + b, 3, axis=1)
        rows = gt.unstack(x * b)
    np.testing.assert_allclose(acc.jvp(parts[0]).numpy(), [[2.0], [2.0]])
    np.testing.assert_allclose(acc.jvp(parts[1]).numpy(), [[1.0], [1.0]])
    np.testing.assert_allclose(acc.jvp(rows[1]).numpy(), [1.0 + 3.0, 2.0, 3.0])


def test_python_number_and_numpy_tangents_are_converted():
    x = gt.constant(2.0)
    with gt.ForwardAccumulator(x, 1.5) as acc:
        y = x * x
    assert float(acc.jvp(y)) == 6.0
    v = gt.constant([1.0, 2.0])
    with gt.ForwardAccumulator(v, np.array([1.0, 1.0])) as acc:
        y = v * 3.0
    assert acc.jvp(y).dtype == gt.float32


def test_op_without_rule_raises_lookup_error():
    op = Op("opaque_square", lambda xp, x: x * x)
    x = gt.constant(3.0)
    with gt.ForwardAccumulator(x, gt.constant(1.0)):
        with pytest.raises(LookupError, match="opaque_square"):
            apply(op, (x,))


# --- bad input ----------------------------------------------------------------------------

def test_tangent_shape_mismatch():
    x = gt.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"ForwardAccumulator.*primal 0.*shape \(3,\).*\(2,\)"):
        gt.ForwardAccumulator(x, gt.constant([1.0, 2.0, 3.0]))


def test_tangent_dtype_mismatch():
    x = gt.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="ForwardAccumulator.*float64.*float32"):
        gt.ForwardAccumulator(x, gt.constant([1.0, 2.0], dtype=gt.float64))


def test_structure_mismatch_and_bad_primals():
    x = gt.constant(1.0)
    y = gt.constant(2.0)
    with pytest.raises(ValueError, match="same structure"):
        gt.ForwardAccumulator([x, y], [gt.constant(1.0)])
    with pytest.raises(TypeError, match="primal 0 must be a Tensor"):
        gt.ForwardAccumulator(1.0, 1.0)
    with pytest.raises(ValueError, match="multiple times"):
        gt.ForwardAccumulator([x, x], [gt.constant(1.0), gt.constant(1.0)])
    with pytest.raises(TypeError, match="tangent for primal 0"):
        gt.ForwardAccumulator(x, "fast")
    acc = gt.ForwardAccumulator(x, gt.constant(1.0))
    with pytest.raises(TypeError, match="ForwardAccumulator.jvp"):
        acc.jvp(3.0)


def test_reentering_a_recording_accumulator():
    x = gt.constant(1.0)
    acc = gt.ForwardAccumulator(x, gt.constant(1.0))
    with acc:
        with pytest.raises(ValueError, match="already recording"):
            acc.__enter__()
    assert thread_state().accumulators == []


def test_accumulator_around_a_vectorised_jacobian():
    xv = np.array([0.5, -1.0, 2.0])
    x = gt.constant(xv)
    with gt.ForwardAccumulator(x, np.array([1.0, 0.0, 0.0])) as acc:
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.sin(x) * x[::-1]
        jac = tape.jacobian(y, x)

    def jac_np(z):
        return np.diag(np.cos(z) * z[::-1]) + np.fliplr(np.diag(np.sin(z)))
    np.testing.assert_allclose(jac.numpy(), jac_np(xv), rtol=1e-12)
    e = np.array([1e-6, 0.0, 0.0])
    np.testing.assert_allclose(acc.jvp(jac).numpy(),
                               (jac_np(xv + e) - jac_np(xv - e)) / 2e-6, atol=1e-8)


def test_public_names():
    for name in ("ForwardAccumulator", "jvp", "hvp", "custom_gradient", "gradients_function"):
        assert name in gt.__all__
    assert gt.autodiff.ForwardAccumulator is gt.ForwardAccumulator
