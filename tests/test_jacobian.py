"""GradientTape.jacobian / batch_jacobian and gt.jacobian: the vectorised sweep against the
row-by-row loop on every spec, closed forms, the partial row loop for rules without batch
support, chunking, second order, and TensorFlow's argument rules."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import jacobians, nest
from gradtape.registry import REGISTRY

from specs import all_specs

SPECS = all_specs()
CASES = [pytest.param(spec, case, id=f"{spec.name}-{'x'.join(map(str, case))}")
         for spec in SPECS for case in spec.shapes]


def _spec_jacobians(spec, case, use_pfor):
    arrays = spec.inputs(case)
    wrt = list(spec.wrt) if spec.wrt is not None else list(range(len(arrays)))
    args = [gt.constant(a) if i in wrt else a for i, a in enumerate(arrays)]
    sources = [args[i] for i in wrt]
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(sources)
        out = spec.fn(*args)
    result = []
    for o in nest.flatten(out):
        if not o.dtype.is_floating:
            continue
        js = tape.jacobian(o, sources, unconnected_gradients="zero",
                           experimental_use_pfor=use_pfor)
        result.append([j.numpy() for j in js])
    return result


@pytest.mark.parametrize("spec,case", CASES)
def test_vectorised_jacobian_equals_row_by_row(spec, case):
    with warnings.catch_warnings():
        # a rule that fails on the batch axis must be declared batch_rule=False
        warnings.filterwarnings("error", "GradientTape.*vectorised backward sweep failed",
                                RuntimeWarning)
        vec = _spec_jacobians(spec, case, True)
    loop = _spec_jacobians(spec, case, False)
    assert vec
    for jv, jl in zip(vec, loop):
        for a, b in zip(jv, jl):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


SECOND = [pytest.param(spec, spec.shapes[0], id=spec.name) for spec in SPECS
          if spec.order >= 2 and len(spec.shapes[0]) == 1]


@pytest.mark.parametrize("spec,case", SECOND)
def test_vectorised_second_order_equals_row_by_row(spec, case):
    """Jacobian of a gradient (the recorded backward sweep), both ways."""
    (a,) = spec.inputs(case)
    w = np.random.default_rng(5).standard_normal(
        np.shape(nest.flatten(spec.fn(gt.constant(a)))[0].numpy()))

    def hess(use_pfor):
        x = gt.constant(a)
        with gt.GradientTape(persistent=True) as outer:
            outer.watch(x)
            with gt.GradientTape() as inner:
                inner.watch(x)
                y = gt.reduce_sum(nest.flatten(spec.fn(x))[0] * gt.constant(w))
            g = inner.gradient(y, x)
        return outer.jacobian(g, x, unconnected_gradients="zero",
                              experimental_use_pfor=use_pfor).numpy()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "GradientTape.*vectorised backward sweep failed",
                                RuntimeWarning)
        vec = hess(True)
    np.testing.assert_allclose(vec, hess(False), rtol=1e-9, atol=1e-11)


# --- closed forms -------------------------------------------------------------------------

def test_jacobian_of_tanh_matvec():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 4))
    xv = rng.standard_normal(4)
    x = gt.constant(xv)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.tanh(gt.linalg.matvec(gt.constant(w), x))
    j = tape.jacobian(y, x)
    expected = (1 - np.tanh(w @ xv) ** 2)[:, None] * w
    np.testing.assert_allclose(j.numpy(), expected, rtol=1e-12)


def test_jacobian_with_respect_to_matrix_and_transposed_matmuls():
    rng = np.random.default_rng(1)
    for ta in (False, True):
        for tb in (False, True):
            a = gt.constant(rng.standard_normal((4, 3) if ta else (3, 4)))
            b = gt.constant(rng.standard_normal((5, 4) if tb else (4, 5)))
            with gt.GradientTape(persistent=True) as tape:
                tape.watch([a, b])
                y = gt.matmul(a, b, transpose_a=ta, transpose_b=tb)
            vec = tape.jacobian(y, [a, b])
            loop = tape.jacobian(y, [a, b], experimental_use_pfor=False)
            for u, v in zip(vec, loop):
                np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-12)
            # d y[i, j] / d a[i, k] = op(b)[k, j]
            bb = b.numpy().T if tb else b.numpy()
            ja = vec[0].numpy()
            ja = np.swapaxes(ja, 2, 3) if ta else ja
            np.testing.assert_allclose(ja[1, 2, 1], bb[:, 2], rtol=1e-12)


def test_target_is_a_source_gives_identity():
    x = gt.constant(np.arange(6.0).reshape(2, 3))
    with gt.GradientTape() as tape:
        tape.watch(x)
    j = tape.jacobian(x, x)
    np.testing.assert_allclose(j.numpy().reshape(6, 6), np.eye(6))


def test_sources_structure_and_unconnected():
    x = gt.constant([1.0, 2.0])
    y = gt.constant([3.0])
    n = gt.constant([1, 2])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = x * x
    res = tape.jacobian(z, {"x": x, "y": y, "n": n})
    np.testing.assert_allclose(res["x"].numpy(), np.diag([2.0, 4.0]))
    assert res["y"] is None and res["n"] is None
    res = tape.jacobian(z, [x, y], unconnected_gradients=gt.UnconnectedGradients.ZERO)
    assert res[1].shape == (2, 1) and not res[1].numpy().any()


def test_partial_row_loop_only_for_rules_without_batch_support(monkeypatch):
    """A custom_gradient (batch_rule=False) inside the path runs once per row; the other
    rules run once per sweep."""
    calls = {"custom": 0, "tanh": 0}

    @gt.custom_gradient
    def double(x):
        def grad(dy):
            calls["custom"] += 1
            return dy * 2.0
        return x * 2.0, grad

    tanh_op = REGISTRY["tanh"]
    original = tanh_op.vjp

    def counting(*args, **kwargs):
        calls["tanh"] += 1
        return original(*args, **kwargs)
    monkeypatch.setattr(tanh_op, "vjp", counting)
    xv = np.linspace(-1.0, 1.0, 7)
    x = gt.constant(xv)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.tanh(double(gt.sin(x)))
    j = tape.jacobian(y, x)
    expected = np.diag((1 - np.tanh(2 * np.sin(xv)) ** 2) * 2 * np.cos(xv))
    np.testing.assert_allclose(j.numpy(), expected, rtol=1e-12)
    assert calls == {"custom": 7, "tanh": 1}


def test_getitem_and_einsum_in_a_vectorised_sweep():
    x = gt.constant(np.arange(1.0, 7.0))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.einsum("i,i->i", x[::-1], x) + gt.broadcast_to(x[:1], (6,))
    vec = tape.jacobian(y, x).numpy()
    loop = tape.jacobian(y, x, experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(vec, loop)
    xv = np.arange(1.0, 7.0)
    # y[i] = x[5 - i] * x[i] + x[0]
    expected = np.diag(xv[::-1]) + np.fliplr(np.diag(xv))
    expected[:, 0] += 1.0
    np.testing.assert_allclose(vec, expected)


def test_parallel_iterations_chunks_give_the_same_rows():
    rng = np.random.default_rng(2)
    x = gt.constant(rng.standard_normal(10))
    w = gt.constant(rng.standard_normal((10, 10)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.sigmoid(gt.linalg.matvec(w, x)) * x
    full = tape.jacobian(y, x).numpy()
    for chunk in (1, 3, 10, 50):
        np.testing.assert_allclose(tape.jacobian(y, x, parallel_iterations=chunk).numpy(), full)
    with pytest.raises(ValueError, match="parallel_iterations"):
        tape.jacobian(y, x, parallel_iterations=0)


def test_default_chunk_size_bounds_memory(monkeypatch):
    monkeypatch.setattr(jacobians, "_DEFAULT_BUDGET", 64)
    x = gt.constant(np.linspace(0.1, 1.0, 20))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.exp(x)
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), np.diag(np.exp(x.numpy())))


def test_rule_without_batch_support_falls_back_with_a_warning():
    from gradtape.registry import Op, apply

    def fwd(xp, x):
        return x * 3.0

    def bad_vjp(ops, needs, g, ans, x):
        return (g.reshape(x.shape) * 3.0,)   # ignores the batch axis
    op = Op("triple_no_batch", fwd, bad_vjp)
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = apply(op, (x,))
    with pytest.warns(RuntimeWarning, match="batch_rule=False"):
        j = tape.jacobian(y, x)
    np.testing.assert_allclose(j.numpy(), 3 * np.eye(2))


# --- batch_jacobian ---------------------------------------------------------------------------

def test_batch_jacobian_matches_per_example_jacobians():
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 3))
    w = gt.constant(rng.standard_normal((3, 5)))
    x = gt.constant(xv)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.tanh(gt.matmul(x, w)) * gt.reduce_sum(x * x, axis=1, keepdims=True)
    bj = tape.batch_jacobian(y, x).numpy()
    loop = tape.batch_jacobian(y, x, experimental_use_pfor=False).numpy()
    full = tape.jacobian(y, x).numpy()
    assert bj.shape == (4, 5, 3)
    np.testing.assert_allclose(bj, loop, rtol=1e-12)
    for b in range(4):
        np.testing.assert_allclose(bj[b], full[b, :, b, :], rtol=1e-12)


def test_batch_jacobian_sweeps_once_per_element_of_one_example(monkeypatch):
    calls = []
    original = jacobians.backward

    def counting(*args, **kwargs):
        calls.append(kwargs.get("batch", ()))
        return original(*args, **kwargs)
    monkeypatch.setattr(jacobians, "backward", counting)
    x = gt.constant(np.ones((32, 3)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.concat([x * 2.0, x * x], axis=1)
    tape.batch_jacobian(y, x)
    assert calls == [(6,)]
    calls.clear()
    tape.batch_jacobian(y, x, experimental_use_pfor=False)
    assert len(calls) == 6


def test_batch_jacobian_higher_rank_and_unconnected():
    x = gt.constant(np.arange(24.0).reshape(2, 3, 4))
    c = gt.constant(np.ones((2, 5)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, c])
        y = gt.reshape(x * 3.0, (2, 12))
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (2, 12, 3, 4)
    np.testing.assert_allclose(bj.numpy()[1].reshape(12, 12), 3 * np.eye(12))
    z = tape.batch_jacobian(y, c)
    assert z.shape == (2, 12, 5) and not z.numpy().any()


def test_batch_jacobian_argument_errors():
    x = gt.constant(np.ones((3, 2)))
    v = gt.constant(np.ones(3))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, v])
        y = x * 2.0
        w = v * 2.0
        z = gt.concat([y, y], axis=0)
    with pytest.raises(ValueError, match="rank >= 2"):
        tape.batch_jacobian(w, v)
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(z, x)
    with pytest.raises(TypeError, match="batch_jacobian"):
        tape.batch_jacobian([y], x)


# --- TensorFlow's rules -------------------------------------------------------------------

def test_non_persistent_tape_allows_one_jacobian():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.jacobian(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.jacobian(y, x)


def test_use_pfor_false_needs_a_persistent_tape():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.jacobian(y, x, experimental_use_pfor=False)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.batch_jacobian(gt.reshape(y, (2, 1)), gt.reshape(x, (2, 1)),
                            experimental_use_pfor=False)


def test_bad_arguments():
    x = gt.constant([1.0, 2.0])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="single tensor"):
        tape.jacobian([y], x)
    with pytest.raises(TypeError, match="sources must be tensors"):
        tape.jacobian(y, [1.0])
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.jacobian(y, x, unconnected_gradients="maybe")


def test_second_order_jacobian_inside_an_outer_tape():
    x = gt.constant([0.5, -1.0, 2.0])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sin(x) * x
        j = inner.jacobian(y, x)
        s = gt.reduce_sum(j)
    g = outer.gradient(s, x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(g, 2 * np.cos(xv) - xv * np.sin(xv), rtol=1e-5)


def test_gt_jacobian_agrees_with_the_tape():
    rng = np.random.default_rng(4)
    xv = rng.standard_normal(3)
    f = lambda x: gt.exp(x) * gt.reduce_sum(x)  # noqa: E731
    j = gt.jacobian(f)(gt.constant(xv)).numpy()
    expected = np.diag(np.exp(xv)) * xv.sum() + np.exp(xv)[:, None]
    np.testing.assert_allclose(j, expected, rtol=1e-6)


def test_no_warning_for_the_core_ops():
    x = gt.constant(np.linspace(0.1, 1.0, 6).reshape(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.reduce_logsumexp(gt.concat([x, gt.sqrt(x)], axis=1), axis=1)
        tape.jacobian(y, x)
