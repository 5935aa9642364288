"""gt.debugging.enable_check_numerics: the first op that makes NaN or inf, forward or
backward, raises an error naming it; off by default."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.debugging import NumericsError
from gradtape.registry import STATE


@pytest.fixture
def checks():
    gt.debugging.enable_check_numerics()
    try:
        yield
    finally:
        gt.debugging.disable_check_numerics()


def test_off_by_default_and_switch_restores_state():
    assert STATE.check_numerics is False
    active = STATE.active
    gt.debugging.enable_check_numerics()
    gt.debugging.enable_check_numerics()          # idempotent
    assert STATE.check_numerics is True and STATE.active == active + 1
    gt.debugging.disable_check_numerics()
    gt.debugging.disable_check_numerics()
    assert STATE.check_numerics is False and STATE.active == active


def test_no_error_when_off():
    x = gt.constant([0.0, 1.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sqrt(x)
    g = tape.gradient(y, x).numpy()
    assert np.isinf(g[0]) and g[1] == pytest.approx(0.5)
    assert np.isneginf(gt.math.log(gt.constant([0.0])).numpy()[0])


def test_forward_error_names_op_and_inputs(checks):
    with pytest.raises(NumericsError, match=r"op 'log' produced inf.*float32\[3\]"):
        gt.math.log(gt.constant([0.0, 1.0, 2.0]))
    with pytest.raises(NumericsError, match=r"op 'divide' produced NaN"):
        gt.constant([0.0]) / gt.constant([0.0])


def test_backward_error_names_the_rule_that_made_it(checks):
    x = gt.constant([0.0, 4.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sqrt(x)                           # finite forward, infinite gradient at 0
    assert y.numpy().tolist() == [0.0, 2.0]
    with pytest.raises(NumericsError, match=r"gradient rule of op 'sqrt' produced inf.*"
                                            r"backward.*input 0.*gradient shape \(2,\)"):
        tape.gradient(y, x)


def test_backward_error_reports_saved_input_shapes(checks):
    x = gt.constant(np.array([[1e-30, 1.0]], dtype=np.float32))
    w = gt.constant(np.array([[1e30, 1.0]], dtype=np.float32))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.multiply(x, w)                    # 1.0 and 1.0: finite
        z = y * 1e30                             # finite (1e30)
    # d z / d x = 1e30 * w = 1e60 -> inf in float32, made by multiply's rule
    with pytest.raises(NumericsError, match=r"gradient rule of op 'multiply' produced inf.*"
                                            r"float32\[1, 2\], float32\[1, 2\]"):
        tape.gradient(z, x)


def test_backward_clean_gradient_passes(checks):
    x = gt.constant([1.0, 4.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.reduce_sum(gt.sqrt(x) * gt.nn.relu(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.5, 3.0], rtol=1e-6)


def test_nested_tape_backward_is_checked(checks):
    x = gt.constant([0.0, 1.0])
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sqrt(x)
        with pytest.raises(NumericsError, match=r"produced inf"):
            inner.gradient(y, x)


def test_stable_cross_entropy_passes_checks(checks):
    logits = gt.constant([[1e4, -1e4, 0.0]])
    labels = gt.constant([1], dtype=gt.int64)
    with gt.GradientTape() as tape:
        tape.watch(logits)
        loss = gt.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    g = tape.gradient(loss, logits).numpy()
    assert loss.numpy()[0] == pytest.approx(2e4)
    np.testing.assert_allclose(g, [[1.0, -1.0, 0.0]])


def test_value_assertions_raise_invalid_argument_with_the_values():
    d = gt.debugging
    x = gt.constant([1.0, 2.0, 3.0])
    assert d.assert_equal(x, [1.0, 2.0, 3.0]) is None
    d.assert_less(x, 4.0)
    d.assert_greater_equal(x, x)
    d.assert_none_equal(x, 0.0)
    d.assert_positive(x)
    d.assert_non_negative(gt.zeros([0]))           # nothing to check
    d.assert_near(x, x + 1e-7)
    with pytest.raises(gt.InvalidArgumentError, match=r"(?s)^wrong\nassert_less: condition "
                       r"x < y did not hold.*x \(shape=\(3,\)\) = \[1.0 2.0 3.0\]"):
        d.assert_less(x, 3.0, message="wrong")
    with pytest.raises(gt.InvalidArgumentError, match=r"x \(shape=\(5,\)\) = \[0 1 2 \.\.\.\]"):
        d.assert_negative(gt.range(5))
    with pytest.raises(gt.InvalidArgumentError, match="assert_near"):
        d.assert_near(x, x + 1e-3)
    d.assert_near(x, x + 1e-3, atol=1e-2)
    with pytest.raises(ValueError, match="assert_equal"):
        d.assert_equal(x, gt.ones([2]))
    with pytest.raises(gt.InvalidArgumentError, match=r"assertion failed: x is \[1.0 2.0 3.0\]"):
        d.Assert(gt.reduce_all(x > 1.0), ["x is", x])
    d.Assert(gt.constant(True), ["fine"])
    with pytest.raises(gt.InvalidArgumentError, match="check_numerics: step 3"):
        d.assert_all_finite(gt.constant([1.0, np.inf]), "step 3")


def test_static_assertions_on_rank_shape_and_dtype():
    d = gt.debugging
    x, y = gt.ones((4, 3)), gt.ones((4, 2))
    d.assert_rank(x, 2)
    d.assert_rank_at_least(x, 1)
    d.assert_rank_in(x, [1, 2])
    d.assert_type(x, gt.float32)
    d.assert_integer(gt.constant([1]))
    d.assert_scalar(gt.constant(1.0))
    d.assert_shapes([(x, ("N", "Q")), (y, ("N", 2)), (gt.ones((7, 4)), ("*", "N"))])
    with pytest.raises(ValueError, match="dimension 'N' is 4 in tensor 0 but 7 in tensor 1"):
        d.assert_shapes([(x, ("N", "Q")), (gt.ones((7, 3)), ("N", "Q"))])
    with pytest.raises(ValueError, match="rank 2"):
        d.assert_shapes([(x, ("N",))])
    with pytest.raises(ValueError, match="must have rank 3, it has rank 2"):
        d.assert_rank(x, 3)
    with pytest.raises(TypeError, match="float32 does not match int32"):
        d.assert_type(x, gt.int32)
    with pytest.raises(TypeError, match="expected an integer tensor"):
        d.assert_integer(x)
    assert d.is_non_decreasing(gt.constant([1, 1, 2])).numpy()
    assert not d.is_strictly_increasing(gt.constant([1, 1, 2])).numpy()
    assert d.is_numeric_tensor(x) and not d.is_numeric_tensor(gt.constant([True]))


def test_check_numerics_error_is_tfs_invalid_argument():
    with pytest.raises(gt.InvalidArgumentError):
        gt.debugging.check_numerics(gt.constant(np.nan), "loss")
