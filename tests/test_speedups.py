"""The optional C hot paths (gradtape._speedups) against the Python ones they replace.

The C module only moves the per-op bookkeeping out of the interpreter; every value, gradient,
error and recorded entry must be the same as with ``GRADTAPE_PURE_PYTHON=1``.
"""
from __future__ import annotations

import inspect
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape.tensor import _speedups

from _run import ROOT

needs_c = pytest.mark.skipif(_speedups is None, reason="gradtape._speedups is not built "
                             "(no C compiler at install time, or GRADTAPE_PURE_PYTHON=1)")

# Runs in a fresh interpreter, with or without the C module, and prints values and gradients.
PROGRAM = r"""
import json, numpy as np, gradtape as gt
from gradtape.tensor import _speedups
rng = np.random.default_rng(0)
x = gt.constant(rng.standard_normal((3, 4)).astype(np.float32))
b = gt.constant(rng.standard_normal((4,)).astype(np.float32))
v = gt.Variable(rng.standard_normal((3, 4)).astype(np.float32))
out = {"c": _speedups is not None}
with gt.GradientTape(persistent=True) as tape:
    tape.watch([x, b])
    y = x
    for _ in range(5):
        y = gt.tanh(y * 1.01 + b)          # tensor-scalar and broadcasting tensor-tensor
        y = 1.0 - y * y + 0.5 * y - 2 / (y + 3.0)   # reflected operators
        y = y * v - v                      # Variables go through the full path
        y = gt.nn.relu(y) - gt.nn.relu(-y) * 0.5 + gt.tanh(-y)   # shared cotangents
    s = gt.reduce_sum(y)
    with gt.GradientTape() as inner:       # nested: the inner sweep is recorded
        inner.watch(x)
        z = gt.reduce_sum(gt.tanh(x * x))
    gz = inner.gradient(z, x)
gx, gb, gv = tape.gradient(s, [x, b, v])
ggx = tape.gradient(gz, x)
for k, t in dict(y=y, gx=gx, gb=gb, gv=gv, ggx=ggx).items():
    out[k] = np.asarray(t).astype(float).ravel().tolist()
print(json.dumps(out))
"""


def _run(pure: bool) -> dict:
    env = dict(os.environ, GRADTAPE_DEVICE="cpu", PYTHONPATH=str(ROOT))
    env.pop("GRADTAPE_PURE_PYTHON", None)
    if pure:
        env["GRADTAPE_PURE_PYTHON"] = "1"
    p = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                       env=env, cwd=str(ROOT), timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@needs_c
def test_c_and_python_paths_give_identical_values_and_gradients():
    c, py = _run(pure=False), _run(pure=True)
    assert c.pop("c") is True and py.pop("c") is False
    for k in py:
        np.testing.assert_array_equal(np.array(c[k]), np.array(py[k]), err_msg=k)


@needs_c
def test_op_functions_look_like_the_python_functions():
    assert isinstance(gt.tanh, _speedups.OpFunction)
    assert gt.tanh.__name__ == "tanh" and gt.multiply.__name__ == "multiply"
    assert "x" in inspect.signature(gt.tanh).parameters
    assert pickle.loads(pickle.dumps(gt.tanh)) is gt.tanh
    assert pickle.loads(pickle.dumps(gt.add)) is gt.add
    # bound like a method on the class
    x = gt.constant([1.0, 2.0])
    np.testing.assert_array_equal(x.__add__(1.0).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(x.__rsub__(1.0).numpy(), [0.0, -1.0])
    np.testing.assert_array_equal(gt.Tensor.__mul__(x, x).numpy(), [1.0, 4.0])


@needs_c
def test_ids_come_from_one_counter():
    from gradtape.tensor import _next_id
    a = gt.constant([1.0])
    b = a * 2.0                 # C path
    c = gt.reduce_sum(b)        # Python path
    d = gt.tanh(c)              # C path
    n = _next_id()
    assert a._id < b._id < c._id < d._id < n


@pytest.mark.parametrize("fn, args, exc, words", [
    (lambda a, b: gt.tanh(a), ([1, 2], None), TypeError, ["tanh", "int32"]),
    (lambda a, b: a + b, ([1.0, 2.0], np.array([1.0, 2.0])), None, None),
    (lambda a, b: a + b, ([1.0, 2.0], [1.0, 2.0, 3.0]), gt.InvalidArgumentError,
     ["add", "(2,)", "(3,)"]),
    (lambda a, b: a * b, ([1.0, 2.0], np.float64), TypeError, ["multiply"]),
    (lambda a, b: a - b, ([1, 2], 0.5), TypeError, ["subtract"]),
])
def test_bad_input_raises_the_python_paths_named_errors(fn, args, exc, words):
    a = gt.constant(args[0])
    b = args[1]
    if isinstance(b, list):
        b = gt.constant(b)
    elif b is np.float64:
        b = gt.constant([1.0, 2.0], dtype=gt.float64)
    if exc is None:
        np.testing.assert_array_equal(fn(a, b).numpy(), [2.0, 4.0])
        return
    with pytest.raises(exc) as info:
        fn(a, b)
    for w in words:
        assert w in str(info.value)


def test_mixed_devices_are_refused_on_the_fast_path():
    a = gt.constant([1.0, 2.0])
    with gt.device("strict:0"):
        b = gt.constant([1.0, 2.0])
    with pytest.raises(gt.DeviceError, match="add.*different devices"):
        a + b
    with pytest.raises(gt.DeviceError, match="multiply.*different devices"):
        b * a


def test_recording_entries_match_the_python_recorder():
    """The C recorder writes the same tape entries as tape.record_unary/record_binary."""
    from gradtape import tape as tape_mod
    from gradtape.registry import REGISTRY
    x = gt.constant([0.5, -1.0])
    with gt.GradientTape() as t:
        t.watch(x)
        y = gt.tanh(x)
        z = y * 2.0
        w = 3.0 - z
    ops = [e[0].name for e in t._entries]
    assert ops == ["tanh", "multiply", "subtract"]
    e_tanh, e_mul, e_sub = t._entries
    assert e_tanh[2] == (x._id,) and e_tanh[5] == (y._id,) and e_tanh[6][0] is y
    assert e_tanh[3] is None and e_tanh[8] is None   # tanh saves only its output
    assert e_mul[2] == (y._id, 0) and e_mul[3] == (y, 2.0) and e_mul[8][1] == 2.0
    assert e_sub[2] == (0, z._id) and e_sub[3] is None and e_sub[4] == (None, (2,))
    # what the Python recorder writes for the same op
    entries = []

    class _T:
        _tracked = {y._id}
        _entries = entries
    st = tape_mod.thread_state()
    saved, st.tapes = st.tapes, [_T()]
    try:
        out = gt.Tensor(y._value * 2.0, y._device)
        tape_mod.record_binary(REGISTRY["multiply"], y, 2.0, out, None, y._value, 2.0)
    finally:
        st.tapes = saved
    assert entries[0][1:6] == (None, (y._id, 0), (y, 2.0), None, (out._id,))


def test_gradients_with_no_tape_and_inside_stop_recording():
    x = gt.constant([0.3, 0.7])
    with gt.GradientTape() as t:
        t.watch(x)
        with t.stop_recording():
            c = gt.tanh(x) * 2.0
        y = gt.tanh(x) * c
    g = t.gradient(y, x).numpy()
    np.testing.assert_allclose(g, (1 - np.tanh([0.3, 0.7]) ** 2) * 2 * np.tanh([0.3, 0.7]),
                               rtol=1e-6)


# The core test modules once more in a fresh interpreter with the C module turned off, so
# the Python path that a machine without a compiler runs stays tested where the C one is
# built.
CORE = ["test_tape.py", "test_ops.py", "test_gradcheck.py", "test_functional.py",
        "test_jacobian.py", "test_forward.py", "test_devices.py"]


@needs_c
def test_core_suite_passes_without_the_c_module():
    env = dict(os.environ, GRADTAPE_PURE_PYTHON="1", PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *[str(ROOT / "tests" / f) for f in CORE]],
                       capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert " passed" in p.stdout.splitlines()[-1]


@pytest.mark.parametrize("pure", [False, True])
def test_info_says_whether_the_c_hot_paths_are_on(pure):
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRADTAPE_DEVICE="cpu")
    env.pop("GRADTAPE_PURE_PYTHON", None)
    if pure:
        env["GRADTAPE_PURE_PYTHON"] = "1"
    p = subprocess.run([sys.executable, "-m", "gradtape", "info"], capture_output=True,
                       text=True, env=env, cwd=str(ROOT), timeout=120)
    assert p.returncode == 0, p.stderr
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("C hot paths:")]
    assert len(line) == 1
    if pure:
        assert line[0] == "C hot paths: off (GRADTAPE_PURE_PYTHON is set)"
    elif _speedups is not None:
        assert line[0] == "C hot paths: on (gradtape._speedups)"
    else:
        assert "was not built" in line[0]


def test_ops_on_a_variable_assigned_by_another_thread_stay_valid():
    """The fast paths hold the arrays they read from a tensor's slots: a Variable assigned
    by another thread while an op on it runs (NumPy releases the GIL on big arrays) and is
    recorded leaves every saved value alive and consistent."""
    import threading
    import time
    v = gt.Variable(np.ones(1 << 19, np.float32))
    stop = threading.Event()

    def assigner():
        while not stop.is_set():
            v.assign(np.full(1 << 19, 0.5, np.float32))
            v.assign(np.ones(1 << 19, np.float32))
    th = threading.Thread(target=assigner)
    th.start()
    try:
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            with gt.GradientTape() as tape:
                a = gt.sin(v)
                b = v * 2.0
            for e in tape._entries:
                for saved in (e[3] or ()) + (e[8] or ()):
                    value = saved._value if isinstance(saved, gt.Tensor) else saved
                    if hasattr(value, "shape"):
                        assert value.shape == (1 << 19,)
                        assert float(value[0]) in (0.5, 1.0)
            assert min(abs(float(a.numpy()[0]) - np.sin(c)) for c in (0.5, 1.0)) < 1e-6
            assert float(b.numpy()[0]) in (1.0, 2.0)
    finally:
        stop.set()
        th.join()


def test_a_tensor_without_its_slots_raises_instead_of_crashing():
    x = gt.constant([1.0, 2.0])
    t = gt.Tensor.__new__(gt.Tensor)
    t._value = x._value
    t._device = x._device            # no _id
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(AttributeError, match="_id"):
            gt.sin(t)
        with pytest.raises(AttributeError, match="_id"):
            t * x


# --- Tensor's own deallocator and free list ---------------------------------------------------

@needs_c
def test_tensor_deallocator_is_installed_for_the_known_layout():
    # (up to 3.11: later versions keep __slots__ weak references outside the object)
    assert _speedups.fast_dealloc() is (sys.version_info < (3, 12))
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRADTAPE_GENERIC_DEALLOC="1")
    env.pop("GRADTAPE_PURE_PYTHON", None)
    p = subprocess.run([sys.executable, "-c", "import gradtape, gradtape._speedups as s; "
                        "print(s.fast_dealloc())"], capture_output=True, text=True, env=env,
                       cwd=str(ROOT), timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_freed_tensors_release_their_arrays_and_fire_weakref_callbacks():
    import gc
    import weakref
    x = gt.constant(np.arange(4.0, dtype=np.float32))
    fired = []
    for _ in range(3):                      # the second and third come from the free list
        y = gt.tanh(x)
        arr = y._value
        before = sys.getrefcount(arr)
        ref = weakref.ref(y, lambda r: fired.append(r))
        assert gc.is_tracked(y)
        del y
        assert ref() is None
        assert sys.getrefcount(arr) == before - 1   # the tensor's reference is gone
    assert len(fired) == 3


def test_variables_and_subclasses_free_every_slot():
    import gc
    import weakref

    class Marked(gt.Tensor):
        __slots__ = ("mark",)
        deleted = []

        def __del__(self):
            Marked.deleted.append(getattr(self, "mark", None))

    value = np.arange(3.0, dtype=np.float32)
    start = sys.getrefcount(value)
    t = Marked(value, gt.get_device("cpu"))
    t.mark = "m"
    tref = weakref.ref(t)
    assert sys.getrefcount(value) > start
    del t
    assert tref() is None and Marked.deleted == ["m"]
    assert sys.getrefcount(value) == start

    name = "freed_variable_name_%d" % id(value)
    v = gt.Variable(value, name=name)
    vref = weakref.ref(v)
    key = next(k for k, r in gt.tensor._LIVE_VARIABLES.items() if r() is v)
    del v
    gc.collect()
    assert vref() is None
    assert key not in gt.tensor._LIVE_VARIABLES   # its registry weakref's callback ran
    assert sys.getrefcount(value) == start


def test_many_ops_reuse_memory_and_keep_distinct_ids():
    import tracemalloc
    x = gt.constant(np.ones(16, np.float32))
    ids = set()
    kept = [gt.sin(x) for _ in range(200)]          # more than the free list holds
    ids.update(t._id for t in kept)
    del kept
    kept = [gt.cos(x) for _ in range(200)]
    ids.update(t._id for t in kept)
    assert len(ids) == 400
    del kept
    tracemalloc.start()
    try:
        for _ in range(2000):
            gt.tanh(x)
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(20000):
            gt.tanh(x)
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 4096


# --- rules the sweep runs itself, and cotangents updated in place -----------------------------

def _relu_tanh_graph(x):
    a = gt.nn.relu(x)
    b = gt.tanh(x * 2.0)
    return a, b, a * 3.0 + b - gt.nn.relu(-x) + (-a)


def _expected_grad(xv, og):
    """d/dx of sum(og * (3 relu(x) + tanh(2x) - relu(-x) - relu(x)))."""
    d = 2.0 * (xv > 0) + 2.0 * (1 - np.tanh(2 * xv) ** 2) + (xv < 0)
    return og * d


def test_shared_and_caller_owned_cotangents_are_not_overwritten():
    xv = np.array([-1.5, -0.25, 0.0, 0.5, 2.0], np.float32)
    og = np.array([1.0, -2.0, 0.5, 3.0, -1.0], np.float32)
    og_before = og.copy()
    x = gt.constant(xv)
    og_t = gt.constant(og)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a, b, y = _relu_tanh_graph(x)
    (gx,) = tape.gradient(y, [x], output_gradients=og_t)
    np.testing.assert_allclose(gx.numpy(), _expected_grad(xv.astype(float), og), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(og_t.numpy(), og_before)   # the caller's array is untouched
    # intermediate sources: their cotangents are kept, so not overwritten by later rules
    gx2, ga, gb = tape.gradient(y, [x, a, b], output_gradients=og_t)
    np.testing.assert_allclose(ga.numpy(), og * 2.0, rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), og, rtol=1e-6)
    np.testing.assert_allclose(gx2.numpy(), gx.numpy(), rtol=0, atol=0)
    # a second sweep over the persistent tape gives the same again
    np.testing.assert_array_equal(tape.gradient(y, x, output_gradients=og_t).numpy(),
                                  gx.numpy())


@needs_c
def test_a_rule_replaced_at_run_time_is_called():
    from gradtape.ops import math as gmath
    op = gmath._tanh
    original = op.vjp
    calls = []

    def doubled(ops, needs, g, ans, x):
        calls.append(1)
        return (2 * g * (1 - ans * ans),)

    x = gt.constant(np.array([0.1, 0.7], np.float32))
    op.vjp = doubled
    try:
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.tanh(x)
        g = tape.gradient(y, x)
    finally:
        op.vjp = original
    assert calls == [1]
    np.testing.assert_allclose(g.numpy(), 2 * (1 - np.tanh([0.1, 0.7]) ** 2), rtol=1e-6)


@needs_c
def test_cotangents_only_the_sweep_holds_are_updated_in_place():
    w = gt.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    x = gt.constant(np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        h = x @ w
        y = gt.tanh(gt.nn.relu(h) * 0.5)
    before = _speedups.in_place_count()
    g = tape.gradient(y, x)
    # relu's and mul's cotangents are arrays the rules before them made; tanh's is the seed,
    # which the caller's dict of seeds also holds
    assert _speedups.in_place_count() - before == 2
    hv = x.numpy() @ w.numpy()
    t = np.tanh(np.maximum(hv, 0) * 0.5)
    expected = ((1 - t * t) * 0.5 * (hv > 0)) @ w.numpy().T
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5, atol=1e-7)
    # a caller's output_gradients array is never one of them
    og = gt.constant(np.ones((2, 4), np.float32))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.tanh(x @ w)
    before = _speedups.in_place_count()
    tape.gradient(y, x, output_gradients=og)
    assert _speedups.in_place_count() == before
    np.testing.assert_array_equal(og.numpy(), np.ones((2, 4), np.float32))


def test_a_weakly_cached_cotangent_is_never_updated_in_place():
    """A rule may hand out an array that a weak cache keeps: nothing holds a reference to
    it, yet the cache can return it again, so it must not be written to."""
    import weakref
    from gradtape.registry import apply1, defop
    cache = weakref.WeakValueDictionary()

    def vjp(ops, needs, g, ans, x):
        a = cache.get("ones")
        if a is None:
            a = np.ones(3, np.float32)
            cache["ones"] = a
        return (a,)
    op = defop("test_weakly_cached_identity", lambda xp, x: x + 0, vjp, save_output=False)
    x = gt.constant(np.ones(3, np.float32))
    kept = []
    for _ in range(3):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = apply1(op, x * 3.0)
        kept.append(tape.gradient(y, x))
        np.testing.assert_array_equal(kept[-1].numpy(), [3.0, 3.0, 3.0])


def test_scalar_cotangents_keep_the_python_rules_types():
    from gradtape.registry import apply1, defop
    op = defop("test_fresh_0d", lambda xp, x: x + 0,
               lambda ops, needs, g, ans, x: (np.array(np.asarray(g)),), save_output=False)
    x = gt.constant(np.array(2.0, np.float32))
    w = gt.constant(np.array(3.0, np.float32))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = apply1(op, x * w)
    g = tape.gradient(y, x)
    assert type(g._value) is np.float32 and float(g) == 3.0   # as g * w on 0-d arrays


def _fresh(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRADTAPE_DEVICE="cpu")
    env.pop("GRADTAPE_PURE_PYTHON", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(ROOT), timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout.strip()


def test_gradtape_imports_again_after_its_modules_are_dropped():
    out = _fresh(
        "import sys, numpy as np, gradtape\n"
        "for k in [k for k in sys.modules if k == 'gradtape' or (k.startswith('gradtape.') "
        "and k != 'gradtape._speedups')]:\n"
        "    del sys.modules[k]\n"
        "import gradtape as gt\n"
        "x = gt.constant(np.ones(3, np.float32))\n"
        "with gt.GradientTape() as t:\n"
        "    t.watch(x)\n"
        "    y = gt.tanh(x * 2.0)\n"
        "print(' '.join(f'{v:.5f}' for v in t.gradient(y, x).numpy()))")
    assert out == " ".join([f"{2 * (1 - np.tanh(2.0) ** 2):.5f}"] * 3)


def test_a_finalizer_added_to_tensor_runs_for_every_tensor():
    out = _fresh(
        "import numpy as np, gradtape as gt\n"
        "from gradtape.tensor import Tensor\n"
        "x = gt.constant(np.ones(2, np.float32))\n"
        "for _ in range(200):\n"
        "    gt.tanh(x)\n"                      # (fills the free list)
        "calls = []\n"
        "Tensor.__del__ = lambda self: calls.append(1)\n"
        "for _ in range(100):\n"
        "    gt.tanh(x)\n"
        "print(len(calls))")
    assert out == "100"


# --- the optimizers' one-pass updates on NumPy variables -------------------------------------

def _record_calls(monkeypatch, names):
    """Wrap the C functions ``names`` so that each call appends its name to the returned
    list (the test then knows the C path ran)."""
    calls = []
    for name in names:
        fn = getattr(_speedups, name)
        monkeypatch.setattr(_speedups, name, lambda *a, _fn=fn, _n=name: (calls.append(_n),
                                                                            _fn(*a))[1])
    return calls


def _host_optimizers():
    return [
        ("Adam", lambda: gt.optimizers.Adam(0.01)),
        ("Adam, weight decay", lambda: gt.optimizers.Adam(0.01, weight_decay=0.05)),
        ("AdamW", lambda: gt.optimizers.AdamW(0.01, weight_decay=0.1)),
        ("SGD momentum", lambda: gt.optimizers.SGD(0.1, momentum=0.9)),
        ("SGD Nesterov", lambda: gt.optimizers.SGD(0.1, momentum=0.9, nesterov=True)),
        ("Adam, schedule", lambda: gt.optimizers.Adam(
            gt.optimizers.schedules.ExponentialDecay(0.01, 2, 0.5))),
    ]


def _run_steps(make, dtype, use_c, monkeypatch, steps=4):
    """Variables (a matrix, a vector, a 0-d scalar) and slots after ``steps`` updates."""
    rng = np.random.default_rng(3)
    values = [rng.standard_normal((5, 7)), rng.standard_normal(7), np.array(0.3)]
    vs = [gt.Variable(a.astype(dtype)) for a in values]
    opt = make()
    if not use_c:
        monkeypatch.setattr(type(opt), "_host_update", lambda self, *args: None)
    for k in range(steps):
        grads = [gt.constant(rng.standard_normal(a.shape).astype(dtype)) for a in values]
        if k == 1:
            grads[0] = gt.constant(np.full((5, 7), np.nan, dtype))   # NaN propagates alike
        opt.apply_gradients(zip(grads, vs))
    monkeypatch.undo()
    slots = [s.numpy() for v in vs for s in opt._slots_for(v).values()]
    return [v.numpy() for v in vs] + slots


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("label,make", _host_optimizers(), ids=[n for n, _ in _host_optimizers()])
def test_host_update_is_bit_identical_to_numpy(label, make, dtype, monkeypatch):
    calls = _record_calls(monkeypatch, ("adam", "sgd"))
    fast = _run_steps(make, dtype, True, monkeypatch)
    assert len(calls) == 4 * 3                     # every variable, every step, 0-d included
    slow = _run_steps(make, dtype, False, monkeypatch)
    assert len(fast) == len(slow) > 3
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a, b)


@needs_c
def test_host_update_leaves_other_cases_to_numpy(monkeypatch):
    calls = []
    monkeypatch.setattr(_speedups, "adam", lambda *a: calls.append(a))
    monkeypatch.setattr(_speedups, "sgd", lambda *a: calls.append(a))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    ones = gt.ones_like
    cases = [
        (gt.optimizers.Adam(0.01, amsgrad=True), w, ones),           # no one-pass form
        (gt.optimizers.SGD(0.1), w, ones),                           # no momentum
        (gt.optimizers.Adam(gt.Variable(0.01)), w, ones),            # learning rate on device
        (gt.optimizers.Adam(0.01), w.astype(np.float16), ones),      # float16
        (gt.optimizers.Adam(0.01), w,                                # a transposed gradient
         lambda v: gt.transpose(gt.ones((6, 4)))),
    ]
    for opt, value, grad in cases:
        v = gt.Variable(value)
        before = v.numpy().copy()
        opt.apply_gradients([(grad(v), v)])
        assert not np.array_equal(v.numpy(), before)
    assert not gt.transpose(gt.ones((6, 4)))._value.flags.c_contiguous
    assert calls == []


@needs_c
def test_host_kernels_refuse_bad_arrays():
    a = np.zeros(6, np.float32)
    with pytest.raises(TypeError, match=r"adam: p must be float32 or float64, got format"):
        _speedups.adam(np.zeros(6, np.int32), a, a.copy(), a.copy(), a.copy(), .1, .1, 1e-7,
                       1e-3, 0.0, 1e-3)
    with pytest.raises(ValueError, match=r"adam: v must have the dtype and size of p "
                                         r"\(24 bytes of f; got 20 bytes of f\)"):
        _speedups.adam(a, a, a.copy(), np.zeros(5, np.float32), a.copy(), .1, .1, 1e-7, 1e-3,
                       0.0, 1e-3)
    with pytest.raises(ValueError, match=r"sgd: out overlaps momentum"):
        m = np.zeros(6, np.float64)
        _speedups.sgd(np.zeros(6), np.zeros(6), m, m, 0.1, 0.9, False)
    with pytest.raises(TypeError, match=r"sgd: momentum must be a C-contiguous, writeable"):
        ro = np.zeros(6)
        ro.flags.writeable = False
        _speedups.sgd(np.zeros(6), np.zeros(6), ro, np.zeros(6), 0.1, 0.9, False)
    with pytest.raises(TypeError, match=r"adam: g must be a C-contiguous float32"):
        _speedups.adam(a, np.zeros(12, np.float32)[::2], a.copy(), a.copy(), a.copy(), .1, .1,
                       1e-7, 1e-3, 0.0, 1e-3)


@needs_c
def test_host_update_takes_numpy_scalar_gradients(monkeypatch):
    # a 0-d cotangent comes back from the sweep as a NumPy scalar, not an array
    def run(use_c):
        v = gt.Variable(np.float32(2.0))
        w = gt.Variable(np.linspace(-1, 1, 3).astype(np.float32))
        opt = gt.optimizers.Adam(0.1)
        if not use_c:
            monkeypatch.setattr(gt.optimizers.Adam, "_host_update", lambda self, *a: None)
        for _ in range(3):
            with gt.GradientTape() as tape:
                loss = v * v + gt.reduce_sum(w * v)
            grads = tape.gradient(loss, [v, w])
            assert type(grads[0]._value) is np.float32
            opt.apply_gradients(zip(grads, [v, w]))
        monkeypatch.undo()
        return v.numpy(), w.numpy()
    fast, slow = run(True), run(False)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    assert fast[0] != np.float32(2.0)


@needs_c
def test_host_update_refused_arrays_fall_back_to_numpy():
    # the C pass refuses a byte-swapped array before writing anything: None, slots untouched
    opt = gt.optimizers.Adam(0.1)
    p = np.linspace(-1, 1, 6).astype(">f4")
    g = np.ones(6, ">f4")
    slots = {"m": np.full(6, 0.5, np.float32), "v": np.full(6, 0.25, np.float32)}
    assert opt._host_update(p, g, slots, 0.1, 0) is None
    assert (slots["m"] == 0.5).all() and (slots["v"] == 0.25).all()
    sgd = gt.optimizers.SGD(0.1, momentum=0.9)
    mom = np.full(6, 0.5, np.float32)
    assert sgd._host_update(p, g, {"momentum": mom}, 0.1, 0) is None
    assert (mom == 0.5).all()


@pytest.mark.parametrize("device", ["cpu:0", "strict:0"])
def test_byte_swapped_inputs_become_native(device):
    # tensors hold native arrays, so a byte-swapped variable trains like a native one
    value = np.linspace(-1, 1, 6)
    results = []
    for dtype in ("<f4", ">f4"):
        with gt.device(device):
            v = gt.Variable(value.astype(dtype))
            c = gt.constant(value.astype(dtype))
        assert v.device.name == c.device.name == device
        assert v.numpy().dtype.isnative and c.numpy().dtype.isnative
        assert v.dtype == c.dtype == gt.float32
        opt = gt.optimizers.Adam(0.1)
        for _ in range(2):
            with gt.GradientTape() as tape:
                loss = gt.reduce_sum(v * c)
            opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
        with gt.device(device):
            v.assign(v + value.astype(">f4"))
        assert v.numpy().dtype.isnative
        results.append(v.numpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.array_equal(results[0], 2 * value.astype(np.float32))


# --- convolution patches in C ------------------------------------------------------------------

_CONV_CASES = [
    # (input shape NHWC, filter HWIO, strides, padding, dilations)
    ((2, 9, 8, 1), (3, 3, 1, 4), 1, "SAME", 1),
    ((2, 9, 8, 3), (3, 2, 3, 5), 2, "SAME", 1),
    ((3, 10, 11, 2), (3, 3, 2, 2), (1, 3), "VALID", 1),
    ((1, 12, 12, 2), (3, 3, 2, 3), 1, "SAME", 2),
    ((2, 7, 9, 4), (2, 4, 4, 3), 1, [[0, 0], [2, 1], [0, 3], [0, 0]], (2, 1)),
    ((1, 64, 64, 16), (5, 5, 16, 2), 1, "SAME", 1),     # patches in row bands of one image
    ((2, 5, 5, 3), (1, 1, 3, 4), 1, "VALID", 1),          # 1x1: a plain product
]


def _conv_and_grads(shape, fshape, strides, padding, dilations, dtype):
    rng = np.random.default_rng(7)
    x = gt.constant(rng.standard_normal(shape).astype(dtype))
    k = gt.constant(rng.standard_normal(fshape).astype(dtype))
    with gt.GradientTape() as tape:
        tape.watch([x, k])
        y = gt.nn.conv2d(x, k, strides, padding, dilations=dilations)
        loss = gt.reduce_sum(y * y)
    gx, gk = tape.gradient(loss, [x, k])
    return [y.numpy(), gx.numpy(), gk.numpy()]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _CONV_CASES, ids=[str(c[0]) + str(c[2]) + str(c[3])[:6]
                                                    for c in _CONV_CASES])
def test_conv_patches_in_c_are_bit_identical(case, dtype, monkeypatch):
    from gradtape.ops import nn as nn_ops
    calls = _record_calls(monkeypatch, ("im2col", "col2im_add"))
    fast = _conv_and_grads(*case, dtype)
    if case[1][:2] != (1, 1):
        assert "im2col" in calls and "col2im_add" in calls
    monkeypatch.setattr(nn_ops, "_speedups", None)
    slow = _conv_and_grads(*case, dtype)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_window_ops_take_unaligned_arrays():
    # an unaligned array (NumPy exports its format as "=f") is computed like an aligned one
    rng = np.random.default_rng(3)
    value = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    raw = bytearray(value.nbytes + 1)
    unaligned = np.frombuffer(raw, np.float32, offset=1, count=value.size).reshape(value.shape)
    unaligned[...] = value
    assert not unaligned.flags.aligned
    k = gt.constant(rng.standard_normal((3, 3, 3, 2)).astype(np.float32))
    out = []
    for arr in (value, unaligned):
        x = gt.constant(arr)
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.nn.max_pool2d(gt.nn.conv2d(x, k, 1, "SAME"), 2, 2, "VALID")
            loss = gt.reduce_sum(y * y)
        out.append((y.numpy(), tape.gradient(loss, x).numpy()))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


@needs_c
def test_conv_patch_loops_refuse_bad_arrays():
    x = np.zeros((2, 4, 4, 3), np.float32)
    with pytest.raises(ValueError, match=r"im2col: expected a 4-D array and 6-D patches of one "
                                         r"dtype and channel count \(got 4-D f and 6-D d\)"):
        _speedups.im2col(x, np.zeros((2, 4, 4, 3, 3, 3)), 0, 0, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"im2col: the patches ask for images past the input"):
        _speedups.im2col(x, np.zeros((2, 4, 4, 3, 3, 3), np.float32), 1, 0, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="window geometry out of range"):
        _speedups.im2col(x, np.zeros((2, 4, 4, 3, 3, 3), np.float32), 0, 0, 0, 1, 1, 1, 1, 1)
    # hostile values whose index arithmetic would overflow are refused before any access
    p = np.zeros((1, 1, 1, 1, 1, 3), np.float32)
    for args in [(sys.maxsize, 0, 1, 1, 1, 1, 0, 0), (0, 0, 1, 2, 1, 1, 0, sys.maxsize),
                 (0, 0, 1, 1, 1, 1 << 62, 0, 0), (0, 0, 1, 1, 1, 1, 0, -sys.maxsize)]:
        with pytest.raises(ValueError, match="window geometry out of range"):
            _speedups.im2col(x, p, *args)
        with pytest.raises(ValueError, match="window geometry out of range"):
            _speedups.col2im_add(x, p, *args)
    with pytest.raises(ValueError, match="the patches ask for images past the input"):
        _speedups.im2col(x, np.zeros((2, 4, 4, 3, 3, 3), np.float32), 1, 0, 1, 1, 1, 1, 1, 1)
    with pytest.raises(TypeError, match=r"col2im_add: float32 or float64 arrays only, got i"):
        _speedups.col2im_add(np.zeros((2, 4, 4, 3), np.int32),
                             np.zeros((2, 4, 4, 3, 3, 3), np.int32), 0, 0, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="read-only"):   # patches are written
        ro = np.zeros((2, 4, 4, 3, 3, 3), np.float32)
        ro.flags.writeable = False
        _speedups.im2col(x, ro, 0, 0, 1, 1, 1, 1, 1, 1)


# --- max pooling in C ----------------------------------------------------------------------------

_POOL_CASES = [
    # (input shape NHWC, ksize, strides, padding)
    ((2, 8, 8, 3), 2, 2, "VALID"),
    ((2, 9, 7, 2), 2, 2, "SAME"),
    ((1, 9, 9, 4), 3, 1, "SAME"),          # overlapping windows: several adds per input
    ((2, 10, 11, 1), (3, 2), (2, 3), "VALID"),
    ((3, 7, 7, 5), 3, 2, "SAME"),
]


def _pool_and_grads(shape, ksize, strides, padding, dtype, special):
    rng = np.random.default_rng(11)
    # integer values: ties inside windows (the gradient goes to the first maximum)
    xv = rng.integers(-4, 5, size=shape).astype(dtype)
    xv[xv == 0] = 7            # (no signed-zero ties, whose pick NumPy's SIMD max leaves open)
    gv = rng.standard_normal
    if special:
        xv.flat[::17] = np.nan
    x = gt.constant(xv)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.nn.max_pool2d(x, ksize, strides, padding)
        w = gt.constant(gv(y.shape).astype(dtype))
        if special:
            w = gt.constant(np.where(rng.random(y.shape) < 0.1, np.inf, w.numpy()))
        loss = gt.reduce_sum(y * w)
    gx = tape.gradient(loss, x)
    return [y.numpy(), gx.numpy()]


@needs_c
@pytest.mark.filterwarnings("ignore:invalid value encountered")   # (the loss: inf - inf)
@pytest.mark.parametrize("special", [False, True], ids=["finite", "nan-inf"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _POOL_CASES, ids=[str(c) for c in range(len(_POOL_CASES))])
def test_max_pool_in_c_is_bit_identical(case, dtype, special, monkeypatch):
    from gradtape.ops import nn as nn_ops
    calls = _record_calls(monkeypatch, ("max_pool", "max_pool_grad"))
    fast = _pool_and_grads(*case, dtype, special)
    assert calls == ["max_pool", "max_pool_grad"]
    monkeypatch.setattr(nn_ops, "_speedups", None)
    slow = _pool_and_grads(*case, dtype, special)
    assert np.isnan(fast[0]).any() == special
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@needs_c
def test_max_pool_loops_refuse_bad_arrays():
    x = np.zeros((2, 4, 4, 3), np.float32)
    with pytest.raises(ValueError, match=r"max_pool: expected 4-D float32 or float64 arrays of "
                                         r"one dtype"):
        _speedups.max_pool(x, np.zeros((2, 2, 2, 3)), 2, 2, 2, 2, 0, 0)
    with pytest.raises(ValueError, match=r"max_pool: input and output differ in batch"):
        _speedups.max_pool(x, np.zeros((2, 2, 2, 4), np.float32), 2, 2, 2, 2, 0, 0)
    with pytest.raises(ValueError, match="pool geometry out of range"):
        _speedups.max_pool(x, np.zeros((2, 2, 2, 3), np.float32), 2, 0, 2, 2, 0, 0)
    y = np.zeros((2, 2, 2, 3), np.float32)
    with pytest.raises(ValueError, match=r"max_pool_grad: shapes of g, x, y, dx do not match"):
        _speedups.max_pool_grad(y, x, y, np.zeros((2, 4, 4, 2), np.float32), 2, 2, 2, 2, 0, 0)
    with pytest.raises(ValueError, match=r"or dx overlaps an input"):
        _speedups.max_pool_grad(y, x, y, x, 2, 2, 2, 2, 0, 0)
