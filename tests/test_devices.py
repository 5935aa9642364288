"""Devices: scopes, the default device and its override, mixing errors, the strict test
device catching host leaks, sync counting, memory info, step capture, and one training
step that must give the same numbers on every device without a host sync."""
from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest

import gradtape as gt
from gradtape import backend
from gradtape.backend import DeviceError
from gradtape.backend import kernels as K
from gradtape.backend.strict import HostLeakError, StrictArray, StrictDevice
from gradtape.capture import CaptureError, capture
from gradtape.ops import fused
from gradtape.registry import Op, apply

from conftest import resolve_device

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_python(code, **env):
    full = dict(os.environ)
    full.pop("GRADTAPE_DEVICE", None)
    full.update(env)
    full["PYTHONPATH"] = ROOT + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=120, cwd=ROOT)


# --- scopes and defaults ------------------------------------------------------------------------

def test_device_scope_places_new_tensors_and_nests():
    default = gt.config.default_device()
    with gt.device("strict:0") as dev:
        assert dev.name == "strict:0"
        a = gt.constant([1.0, 2.0])
        assert a.device.name == "strict:0"
        with gt.device("cpu"):
            b = gt.constant(1.0)
            assert b.device.name == "cpu:0"
        assert gt.constant(0.0).device.name == "strict:0"
        c = a * 2.0 + 1.0
        assert c.device is dev
        np.testing.assert_allclose(c.numpy(), [3.0, 5.0])
    assert gt.constant(0.0).device is default


def test_device_names_are_parsed_like_tensorflow():
    assert gt.get_device("/device:CPU:0") is gt.get_device("cpu")
    assert gt.get_device("STRICT:0") is gt.get_device("strict:0")
    assert gt.get_device("strict:1") is not gt.get_device("strict:0")
    with pytest.raises(DeviceError, match="unknown device 'tpu:0'"):
        gt.get_device("tpu:0")
    with pytest.raises(DeviceError, match="cpu:1 does not exist"):
        gt.get_device("cpu:1")


def test_environment_variable_overrides_the_default_device():
    code = ("import gradtape as gt; x = gt.constant([1.0]); "
            "print(gt.config.default_device().name, x.device.name, (x * 3.0).numpy()[0])")
    out = _run_python(code, GRADTAPE_DEVICE="cpu")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cpu:0", "cpu:0", "3.0"]
    out = _run_python(code, GRADTAPE_DEVICE="strict:0")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["strict:0", "strict:0", "3.0"]


def test_list_devices_has_the_cpu_and_each_usable_gpu():
    devs = gt.config.list_devices()
    assert devs[0] is gt.get_device("cpu")
    gpus = [d for d in devs if d.kind == "gpu"]
    if backend.gpu_unavailable_reason() is None:
        assert [d.name for d in gpus][:1] == ["gpu:0"]
    else:
        assert gpus == []
    assert gt.config.list_physical_devices("CPU") == [devs[0]]


def test_gpu_on_a_machine_without_one_says_what_is_missing_and_how_to_install():
    if backend.gpu_unavailable_reason() is None:
        pytest.skip("a GPU is usable here")
    with pytest.raises(DeviceError) as info:
        gt.device("gpu:0")
    msg = str(info.value)
    assert "gpu:0" in msg and "CuPy" in msg
    assert "gradtape[cuda12]" in msg
    out = _run_python("import gradtape as gt; gt.constant(1.0)", GRADTAPE_DEVICE="gpu")
    assert out.returncode != 0
    assert "gradtape[cuda12]" in out.stderr and "DeviceError" in out.stderr


def test_second_gpu_that_does_not_exist_is_named():
    if backend.gpu_unavailable_reason() is not None:
        pytest.skip("no GPU: the missing-GPU message is tested instead")
    n = len([d for d in gt.config.list_devices() if d.kind == "gpu"])
    with pytest.raises(DeviceError, match=f"gpu:{n} was asked for but only {n} GPU"):
        gt.device(f"gpu:{n}")


def test_info_command_reports_versions_devices_and_the_choice():
    out = _run_python("import sys; from gradtape.__main__ import main; sys.exit(main(['info']))")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"gradtape {gt.__version__}"
    assert any(line.startswith("numpy    ") for line in lines)
    assert "devices:" in lines and "  cpu:0" in lines
    if backend.gpu_unavailable_reason() is None:
        assert "default device: gpu:0" in lines
    else:
        assert "default device: cpu:0" in lines
        assert any(line.startswith("no GPU used: ") for line in lines)


# --- mixing devices and host values -----------------------------------------------------------------

def test_mixed_devices_error_names_the_op_and_both_devices():
    a = gt.constant([1.0, 2.0])
    with gt.device("strict:0"):
        b = gt.constant([3.0, 4.0])
    with pytest.raises(DeviceError) as info:
        a + b
    msg = str(info.value)
    assert msg.startswith("add:") and "cpu:0" in msg and "strict:0" in msg
    with pytest.raises(DeviceError, match=r"^matmul: .*(cpu:0.*strict:0|strict:0.*cpu:0)"):
        gt.matmul(gt.reshape(a, (1, 2)), gt.reshape(b, (2, 1)))
    with gt.device("strict:1"):
        c = gt.constant([1.0, 1.0])
    with pytest.raises(DeviceError, match="strict:0 and strict:1"):
        gt.multiply(b, c)


def test_copy_between_devices_keeps_gradients_flowing_back(device):
    x = gt.constant([1.0, 2.0, 3.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        on_cpu = x.to("cpu")
        y = gt.reduce_sum(on_cpu * on_cpu)
    g = tape.gradient(y, x)
    assert on_cpu.device.name == "cpu:0"
    assert g.device is device
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])


def test_numpy_operand_is_placed_on_the_tensor_device(device):
    x = gt.constant([1.0, 2.0, 3.0])
    host = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    for y in (x + host, host + x, gt.maximum(x, host), x * [2.0, 2.0, 2.0]):
        assert y.device is device
    np.testing.assert_allclose((host - x).numpy(), [9.0, 18.0, 27.0])
    z = x + np.float32(1.0) + np.array(2.0, dtype=np.float32) + 3
    np.testing.assert_allclose(z.numpy(), [7.0, 8.0, 9.0])


def test_scalars_and_zero_d_host_values_mix_with_device_arrays():
    dev = gt.get_device("strict:0")
    a = dev.xp.ones(3, dtype=np.float32)
    for other in (2, 2.0, np.float32(2.0), np.array(2.0, dtype=np.float32)):
        out = a * other
        assert isinstance(out, StrictArray)
        np.testing.assert_allclose(dev.to_host(out), [2.0, 2.0, 2.0])


# --- the strict device ------------------------------------------------------------------------------

def test_strict_arrays_refuse_host_arrays_naming_both_sides():
    dev = gt.get_device("strict:0")
    a = dev.xp.arange(4.0)
    host = np.ones(4)
    for bad in (lambda: a + host, lambda: host + a, lambda: dev.xp.add(a, host),
                lambda: dev.xp.where(a > 1, host, a), lambda: np.add(a, host, out=host)):
        with pytest.raises(TypeError) as info:
            bad()
        msg = str(info.value)
        assert "strict:0" in msg and "host numpy.ndarray of shape (4,)" in msg
    with pytest.raises(TypeError, match="indexed by a host numpy.ndarray"):
        a[np.array([0, 1])]
    with pytest.raises(TypeError, match="indexed by a host list"):
        a[[0, 1]]
    with pytest.raises(HostLeakError, match="strict:0 and strict:1"):
        a + gt.get_device("strict:1").xp.ones(4)


@pytest.mark.parametrize("what,convert", [
    ("__array__", np.asarray), ("float()", lambda a: float(a[0])),
    ("int()", lambda a: int(a[0])), ("bool()", lambda a: bool(a[0])),
    (".item()", lambda a: a[0].item()), (".tolist()", lambda a: a.tolist()),
    ("operator.index()", lambda a: [1, 2, 3][a[0].astype(np.int64)]),
])
def test_strict_arrays_refuse_implicit_host_conversion(what, convert):
    a = gt.get_device("strict:0").xp.ones(3)
    with pytest.raises(TypeError) as info:
        convert(a)
    assert what in str(info.value) and "strict:0" in str(info.value)


def test_strict_namespace_runs_numpy_functions_and_counts_transfers():
    dev = StrictDevice(7)
    xp = dev.xp
    a = dev.asarray(np.arange(6.0).reshape(2, 3))
    assert dev.transfer_count == 1 and dev.sync_count == 0
    s = np.sum(a, axis=0)            # NumPy functions dispatch to the device, as for CuPy
    assert isinstance(s, StrictArray) and isinstance(xp.sum(a), StrictArray)
    m = xp.matmul(a, a.T)
    z = xp.zeros_like(m)
    xp.add.at(z, (xp.asarray([0, 0]), xp.asarray([1, 1])), 1.0)
    np.testing.assert_allclose(dev.to_host(z), [[0.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(dev.to_host(m), [[5.0, 14.0], [14.0, 50.0]])
    np.testing.assert_allclose(dev.to_host(s), [3.0, 5.0, 7.0])
    assert dev.sync_count == 3 and dev.transfer_count == 6    # 3 uploads, 3 downloads
    xp.nonzero(a > 2)                # a data-dependent shape makes a GPU wait
    assert dev.sync_count == 4
    info = dev.memory_info()
    assert info["device"] == "strict:7" and info["used_bytes"] >= a.nbytes
    assert info["peak_bytes"] >= info["used_bytes"]


def _leaky_forward_op():
    def fwd(xp, x):
        return x + np.ones(x.shape, dtype=x.dtype)      # a host array inside an op
    return Op("leaky_forward", fwd, lambda ops, needs, g, ans, x: (g,))


def _syncing_rule_op():
    def vjp(ops, needs, g, ans, x):
        scale = float(g.sum())                             # a host sync inside backward
        return (g * scale,)
    return Op("syncing_rule", lambda xp, x: x * 1, vjp, save_output=False)


def test_tf_config_experimental_memory_calls_port():
    """A TF script's set-up (memory growth on each GPU, memory statistics) runs unchanged."""
    for gpu in gt.config.experimental.list_physical_devices("GPU"):
        gt.config.experimental.set_memory_growth(gpu, True)
        assert gt.config.experimental.get_memory_growth(gpu) is True
    assert gt.get_device("/physical_device:CPU:0") is gt.get_device("cpu")
    dev = gt.get_device("strict:0")
    gt.config.experimental.reset_memory_stats(dev)
    base = gt.config.experimental.get_memory_info("strict:0")["current"]
    with gt.device(dev):
        a = gt.ones([1000])
    info = gt.config.experimental.get_memory_info("strict:0")
    assert info["current"] == base + 4000 and info["peak"] >= base + 4000
    del a
    info = gt.config.experimental.get_memory_info("strict:0")
    assert info["current"] == base and info["peak"] >= base + 4000
    gt.config.experimental.reset_memory_stats("strict:0")
    assert gt.config.experimental.get_memory_info("strict:0")["peak"] == base
    with pytest.raises(ValueError, match="get_memory_info: cpu:0 keeps no memory statistics"):
        gt.config.experimental.get_memory_info("CPU:0")
    with pytest.raises(ValueError, match="set_memory_growth: memory growth applies to GPUs"):
        gt.config.experimental.set_memory_growth("CPU:0", True)
    with pytest.raises(TypeError, match="enable must be a bool"):
        gt.config.experimental.set_memory_growth("strict:0", 1)


def test_tf_device_setup_calls_port(monkeypatch):
    """set_visible_devices hides GPUs and numbers the visible ones from 0, as TF (the default
    device moves; a Device handle of a hidden GPU is refused by gt.device),
    list_physical_devices still lists every one; tf.test's queries; the CPU stays."""
    from gradtape import backend
    fake = [backend.Device("gpu", 0), backend.Device("gpu", 1)]
    monkeypatch.setattr(backend, "_gpus", fake)
    monkeypatch.setattr(backend, "_hidden", set())
    monkeypatch.setattr(backend, "_default", None)
    monkeypatch.delenv("GRADTAPE_DEVICE", raising=False)
    assert gt.config.default_device() is fake[0]
    assert gt.test.is_gpu_available() and gt.test.gpu_device_name() == "/device:GPU:0"
    gpus = gt.config.list_physical_devices("GPU")
    assert [d.device_type for d in gpus] == ["GPU", "GPU"]
    gt.config.set_visible_devices(gpus[1], "GPU")
    assert gt.config.get_visible_devices("GPU") == [fake[1]]
    assert gt.config.list_logical_devices() == [gt.get_device("cpu"), fake[1]]
    assert gt.config.list_physical_devices("GPU") == fake
    assert gt.config.default_device() is fake[1] and gt.test.gpu_device_name() == "/device:GPU:0"
    assert gt.get_device("/GPU:0") is fake[1]                   # the first visible GPU
    assert backend.physical_gpu(0) is fake[0]                   # (CUDA's numbering)
    with pytest.raises(gt.DeviceError, match="gpu:1 was asked for but only 1 GPU\\(s\\) are "
                                             "visible .*hid gpu:0"):
        gt.get_device("GPU:1")
    with pytest.raises(gt.DeviceError, match="gpu:0 is hidden by gt.config.set_visible_devices"):
        gt.device(fake[0])
    gt.config.experimental.set_visible_devices([], "GPU")
    assert gt.config.default_device() is gt.get_device("cpu")
    assert not gt.test.is_gpu_available() and gt.test.gpu_device_name() == ""
    gt.config.set_visible_devices(gt.config.list_physical_devices())
    assert gt.config.get_visible_devices("GPU") == fake
    gt.config.set_visible_devices(gpus[0])                      # (the CPU stays visible)
    assert gt.config.get_visible_devices() == [gt.get_device("cpu"), fake[0]]
    with pytest.raises(ValueError, match="the CPU cannot be hidden"):
        gt.config.set_visible_devices([], "CPU")
    with pytest.raises(ValueError, match="gpu:0 is not of device_type 'CPU'"):
        gt.config.set_visible_devices([gt.get_device("cpu"), "GPU:0"], "CPU")
    with pytest.raises(ValueError, match="strict:0 is not a CPU or GPU device"):
        gt.config.set_visible_devices(["strict:0"])
    with pytest.raises(gt.DeviceError, match="no gpu:5"):
        gt.config.set_visible_devices(["gpu:5"], "GPU")


def test_tf_function_runs_the_function_eagerly():
    calls = []

    @gt.function
    def double(x):
        calls.append(1)
        return x * 2.0

    @gt.function(input_signature=[None], jit_compile=True, reduce_retracing=True)
    def inc(x):
        return x + 1.0

    class Model:
        @gt.function
        def __call__(self, x):
            return x - 1.0
    x = gt.Variable(3.0)
    with gt.GradientTape() as tape:
        y = double(x) + inc(x) + Model()(x)
    assert float(y) == 12.0 and float(tape.gradient(y, x)) == 4.0
    assert double(x).numpy() == 6.0 and len(calls) == 2          # (runs on every call)
    assert double.python_function(x).numpy() == 6.0 and double.__name__ == "double"
    assert gt.function(lambda v: v * v)(gt.constant(3.0)).numpy() == 9.0
    with pytest.raises(TypeError, match="input_signature must be a list or tuple"):
        gt.function(lambda v: v, input_signature=3)
    with pytest.raises(TypeError, match="expected a function, got int"):
        gt.function(3)
    gt.config.run_functions_eagerly(True)
    assert gt.config.functions_run_eagerly()
    gt.config.run_functions_eagerly(False)


def test_strict_namespace_serves_only_what_cupy_has():
    """With CuPy installed (no GPU needed), a NumPy function or array method CuPy lacks is
    refused on the strict device, naming it: such an op would fail first on a GPU."""
    pytest.importorskip("cupy")
    dev = gt.get_device("strict:0")
    with pytest.raises(AttributeError, match="xp.busday_count: CuPy has no busday_count"):
        dev.xp.busday_count
    with pytest.raises(AttributeError, match="xp.linalg.multi_dot: CuPy has no multi_dot"):
        dev.xp.linalg.multi_dot
    a = dev.xp.ones(3)
    with pytest.raises(AttributeError, match="ndarray.resize: cupy.ndarray has no method"):
        a.resize
    assert dev.xp.linalg.norm(a).shape == () and dev.xp.errstate is np.errstate


def test_strict_namespace_refuses_keywords_cupy_lacks():
    """A keyword NumPy takes and CuPy's function does not (``sum(initial=)``) is refused on
    the strict device; the keywords CuPy has pass."""
    pytest.importorskip("cupy")
    dev = gt.get_device("strict:0")
    a = dev.xp.ones(3, dtype=np.float32)
    with pytest.raises(TypeError, match="xp.sum: CuPy's sum takes no keyword 'initial'"):
        dev.xp.sum(a, initial=1.0)
    assert dev.xp.sum(a, axis=0, keepdims=True, dtype=np.float64).shape == (1,)


def test_strict_device_catches_an_op_that_takes_a_host_array():
    op = _leaky_forward_op()
    with gt.device("cpu"):
        np.testing.assert_allclose(apply(op, (gt.constant([1.0]),)).numpy(), [2.0])
    with gt.device("strict:0"):
        with pytest.raises(TypeError, match=r"leaky_forward: .*host numpy\.ndarray"):
            apply(op, (gt.constant([1.0]),))


def test_strict_device_catches_a_host_sync_inside_backward():
    op = _syncing_rule_op()
    for dev, ok in (("cpu", True), ("strict:0", False)):
        with gt.device(dev):
            x = gt.constant([1.0, 2.0])
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = gt.reduce_sum(apply(op, (x,)))
            if ok:
                np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 2.0])
            else:
                with pytest.raises(TypeError, match=r"float\(\) of a strict:0 array"):
                    tape.gradient(y, x)


def test_strict_counts_writes_and_scatters_through_a_boolean_mask():
    """CuPy counts a mask's true elements on the host for ``a[mask] = v`` and ``add.at``
    with a mask, as for reading through one: the strict device counts each as a sync."""
    dev = gt.get_device("strict:0")
    a = dev.asarray(np.zeros(4))
    mask = dev.asarray(np.array([True, False, True, False]))
    ints = dev.asarray(np.array([0, 2, 2]))
    dev.reset_counters()
    a[mask] = 1.0
    assert dev.sync_count == 1
    dev.xp.add.at(a, mask, 2.0)
    assert dev.sync_count == 2
    dev.scatter_add(a, mask, 1.0)
    assert dev.sync_count == 3
    dev.xp.add.at(a, ints, 1.0)
    a[ints] = 5.0
    assert dev.sync_count == 3                       # integer indices: no wait
    np.testing.assert_array_equal(dev.to_host(a), [5.0, 0.0, 5.0, 0.0])


def test_boolean_mask_waits_for_the_device_once_in_forward_and_backward(device):
    """The mask's coordinates are found once, in the forward; the gradient scatters with them
    (an integer scatter) instead of the mask, which would make the host wait again."""
    x0 = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    m0 = np.array([[True, False, True, True], [False, False, True, False],
                   [True, True, False, False]])
    x = gt.constant(x0)
    m = gt.constant(m0)
    rows = gt.constant([True, False, True])
    if not device.host_visible:
        device.reset_counters()
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.boolean_mask(x, m)
        z = gt.boolean_mask(x, rows, axis=0)
        s = gt.reduce_sum(y * y) + gt.reduce_sum(z)
    if not device.host_visible:
        assert device.sync_count == 2
    g = tape.gradient(s, x)
    if not device.host_visible:
        assert device.sync_count == 2
    np.testing.assert_array_equal(y.numpy(), x0[m0])
    np.testing.assert_array_equal(g.numpy(), 2 * x0 * m0 + rows.numpy()[:, None])


def test_raw_device_arrays_are_taken_where_host_values_are():
    """A raw array of the device (a CuPy array on a GPU, here a strict array) passes where a
    list or NumPy array does, instead of reaching np.asarray, which CuPy refuses."""
    from gradtape import layers
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        p0 = np.arange(12.0, dtype=np.float32).reshape(4, 3)
        p = gt.constant(p0)
        raw = dev.asarray(np.array([2, 0, 2]))
        np.testing.assert_array_equal(gt.gather(p, raw).numpy(), p0[[2, 0, 2]])
        np.testing.assert_array_equal(gt.nn.embedding_lookup(p, raw).numpy(), p0[[2, 0, 2]])
        np.testing.assert_array_equal(
            gt.gather_nd(p, dev.asarray(np.array([[1, 2], [3, 0]]))).numpy(), [5.0, 9.0])
        np.testing.assert_array_equal(gt.repeat(p, dev.asarray(np.array([1, 0, 2, 0])),
                                                axis=0).numpy(), p0[[0, 2, 2]])
        logits = gt.constant(np.zeros((3, 4), np.float32))
        want = np.full(3, np.log(4.0), np.float32)
        np.testing.assert_allclose(gt.nn.sparse_softmax_cross_entropy_with_logits(
            raw, logits).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(fused.fused_sparse_softmax_cross_entropy(
            raw, logits).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(gt.losses.sparse_categorical_crossentropy(
            raw, logits, from_logits=True).numpy(), want, rtol=1e-6)
        bias = dev.asarray(np.ones(3, np.float32))
        np.testing.assert_array_equal(fused.fused_bias_act(p, bias, "linear").numpy(), p0 + 1)
        emb = layers.Embedding(4, 3)
        out = emb(raw)
        assert out.shape == (3, 3)
        emb.set_weights([dev.asarray(p0)])
        np.testing.assert_array_equal(emb(raw).numpy(), p0[[2, 0, 2]])


def test_arrays_made_by_ops_on_a_switching_device_are_made_while_it_is_current():
    """fill, constant(shape=), fused_layer_norm's default scale and offset, gather with batch
    dims, zero tangents and the forward-mode fallback make their arrays with the device
    current (a switching strict device refuses anything else, as CuPy with several GPUs
    misplaces it)."""
    dev = _switching_device(43)
    x0 = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with gt.device(dev):
        filled = gt.fill([2, 2], gt.constant(3.0))
        shaped = gt.constant(1.5, shape=[2, 3])
        x = gt.constant(x0)
        idx = gt.constant(np.array([[2, 0], [1, 1]]))
    np.testing.assert_array_equal(filled.numpy(), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(shaped.numpy(), np.full((2, 3), 1.5))
    ln = fused.fused_layer_norm(x)
    assert ln.device == dev and ln.shape == (2, 3)
    np.testing.assert_array_equal(gt.gather(x, idx, axis=1, batch_dims=1).numpy(),
                                  [[2.0, 0.0], [4.0, 4.0]])
    with gt.ForwardAccumulator(x, gt.ones_like(x)) as acc:
        y = gt.math.sinh(x)                             # no forward rule: the fallback
        other = x + 0.0
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cosh(x0), rtol=1e-6)
    with gt.ForwardAccumulator(other, gt.ones_like(other)) as acc2:
        pass
    zero = acc2.jvp(x, unconnected_gradients=gt.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(zero.numpy(), np.zeros((2, 3)))
    _, vjp_fn = gt.vjp(lambda t: gt.cast(t > 1.0, gt.int32), x)
    with gt.device(dev):
        ct = gt.constant(np.zeros((2, 3), np.int32))
    np.testing.assert_array_equal(vjp_fn(ct)[0].numpy(), np.zeros((2, 3)))


def test_sync_count_counts_explicit_copies():
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        x = gt.constant([1.0, 2.0])
        before = gt.config.sync_count("strict:0")
        y = gt.reduce_sum(x * x)
        assert gt.config.sync_count("strict:0") == before
        assert float(y) == 5.0
        y.numpy()
        bool(y > 1.0)
        assert gt.config.sync_count("strict:0") == before + 3
        assert gt.config.sync_count() >= before + 3


def test_memory_info_has_used_pool_and_peak(device):
    x = gt.zeros((256, 256))
    info = gt.config.memory_info(device)
    assert info["device"] == device.name
    assert set(info) >= {"used_bytes", "pool_bytes", "peak_bytes"}
    if device.kind == "cpu":
        assert info["used_bytes"] is None
    else:
        assert info["used_bytes"] >= x.size * 4
        assert info["peak_bytes"] >= info["used_bytes"]
        assert info["pool_bytes"] >= info["used_bytes"]


# --- a training step on every device ------------------------------------------------------------------

_RNG = np.random.default_rng(5)
_X = _RNG.standard_normal((16, 8)).astype(np.float32)
_Y = _RNG.integers(0, 3, 16).astype(np.int32)
_W1 = (_RNG.standard_normal((8, 12)) * 0.4).astype(np.float32)
_B1 = (_RNG.standard_normal(12) * 0.1).astype(np.float32)
_G = (1 + 0.1 * _RNG.standard_normal(12)).astype(np.float32)
_W2 = (_RNG.standard_normal((12, 3)) * 0.4).astype(np.float32)
_B2 = np.zeros(3, np.float32)


def _make_model():
    return [gt.Variable(v) for v in (_W1, _B1, _G, _W2, _B2)]


def _train(steps, fused_ops):
    """A few SGD-with-momentum steps of a small MLP on the current device; the losses and
    final weights, and the host syncs made inside the steps."""
    params = _make_model()
    velocity = [gt.zeros(p.shape) for p in params]
    x, y = gt.constant(_X), gt.constant(_Y)
    dev = x.device
    losses = []
    syncs = 0
    for _ in range(steps):
        before = dev.sync_count
        w1, b1, g, w2, b2 = params
        with gt.GradientTape() as tape:
            if fused_ops:
                h = fused.fused_bias_act(gt.matmul(x, w1), b1, "gelu_tanh")
                h = fused.fused_layer_norm(h, g, None, 1e-3)
                logits = gt.matmul(h, w2) + b2
                loss = gt.reduce_mean(fused.fused_sparse_softmax_cross_entropy(y, logits))
            else:
                h = gt.tanh(gt.matmul(x, w1) + b1) * g
                logits = gt.matmul(h, w2) + b2
                loss = gt.reduce_mean(gt.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, params)
        for p, v, gr in zip(params, velocity, grads):
            K.sgd_momentum_update(dev.xp, p._value, gr._value, v._value, 0.1, 0.9)
        syncs += dev.sync_count - before
        losses.append(loss)
    return [l.numpy() for l in losses], [p.numpy() for p in params], syncs


@pytest.mark.parametrize("fused_ops", [False, True], ids=["plain", "fused"])
def test_training_step_gives_the_same_numbers_on_every_device(device, fused_ops):
    losses, weights, syncs = _train(4, fused_ops)
    with gt.device("cpu"):
        ref_losses, ref_weights, _ = _train(4, fused_ops)
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(losses, ref_losses, rtol=2e-5, atol=1e-6)
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r, rtol=1e-4, atol=1e-5)
    if device.kind != "cpu":
        assert syncs == 0, f"{syncs} host syncs inside the training steps on {device}"


# --- step capture ------------------------------------------------------------------------------------

def _capturable_step(params, lr=0.05):
    def step(x, y):
        with gt.GradientTape() as tape:
            logits = gt.matmul(fused.fused_bias_act(gt.matmul(x, params[0]), params[1], "relu"),
                               params[3]) + params[4]
            loss = gt.reduce_mean(fused.fused_sparse_softmax_cross_entropy(y, logits))
        grads = tape.gradient(loss, [params[0], params[1], params[3], params[4]])
        for p, g in zip([params[0], params[1], params[3], params[4]], grads):
            p.assign_sub(lr * g)
        return loss
    return step


def test_capture_replays_the_step_with_new_inputs(device):
    params = _make_model()
    step = capture(_capturable_step(params))
    xs = [gt.constant(_X * s) for s in (1.0, 0.5, -1.0, 2.0)]
    y = gt.constant(_Y)
    losses = [step(x, y).numpy() for x in xs]
    with gt.device("cpu"):
        ref_params = _make_model()
        eager = _capturable_step(ref_params)
        ref = [eager(gt.constant(_X * s), gt.constant(_Y)).numpy() for s in (1.0, 0.5, -1.0, 2.0)]
    np.testing.assert_allclose(losses, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params[0].numpy(), ref_params[0].numpy(), rtol=1e-4, atol=1e-6)
    assert step.calls == 4


def test_capture_names_the_input_whose_shape_changed():
    with gt.device("strict:0"):
        params = _make_model()
        step = capture(_capturable_step(params))
        y = gt.constant(_Y)
        step(gt.constant(_X), y)
        step(gt.constant(_X), y)
        with pytest.raises(CaptureError, match=r"argument 0 \(x\) of step changed from a tensor "
                                               r"of shape \(16, 8\).* to a tensor of shape \(8, 8\)"):
            step(gt.constant(_X[:8]), y)


def test_capture_refuses_a_step_that_syncs_with_the_host():
    with gt.device("strict:0"):
        params = _make_model()
        inner = _capturable_step(params)

        def step(x, y):
            loss = inner(x, y)
            if float(loss) > 100.0:          # a host sync: cannot be captured on a GPU
                raise AssertionError("diverged")
            return loss
        captured = capture(step)
        captured(gt.constant(_X), gt.constant(_Y))        # the warm-up call may sync
        with pytest.raises(CaptureError, match="made the host wait for strict:0 1 time"):
            captured(gt.constant(_X), gt.constant(_Y))


def test_capture_on_the_cpu_simply_calls_the_function():
    calls = []
    step = capture(lambda x: calls.append(x) or x * 2.0)
    with gt.device("cpu"):
        out = step(gt.constant([1.0]))
        step(gt.constant([1.0, 2.0]))                      # new shapes are fine on the CPU
    np.testing.assert_allclose(out.numpy(), [2.0])
    assert len(calls) == 2


def _lr_variable_step(params, lr):
    opt = gt.optimizers.Adam(lr)

    def step(x, y):
        with gt.GradientTape() as tape:
            logits = gt.matmul(gt.nn.relu(gt.matmul(x, params[0]) + params[1]), params[3]) \
                + params[4]
            loss = gt.reduce_mean(gt.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        ps = [params[0], params[1], params[3], params[4]]
        opt.apply_gradients(zip(tape.gradient(loss, ps), ps))
        return loss
    return step


def test_capture_sees_variables_assigned_between_calls(device):
    """A learning-rate Variable changed between calls, and a weight restored from outside,
    reach the replayed step (on a GPU: copied into the buffers the graph was recorded
    with): the same losses and weights as the eager steps."""
    def run(dev, captured):
        with gt.device(dev):
            params = _make_model()
            lr = gt.Variable(0.05)
            step = _lr_variable_step(params, lr)
            if captured:
                step = capture(step)
            losses = []
            for i, s in enumerate((1.0, 0.5, -1.0, 2.0, 1.5)):
                if i == 3:
                    lr.assign(0.01)
                    params[1].assign(np.full(params[1].shape, 0.25, np.float32))
                losses.append(float(step(gt.constant(_X * s), gt.constant(_Y)).numpy()))
            return losses, params[0].numpy(), params[1].numpy()
    got = run(device.name, True)
    want = run("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-6)


def _adam_step(params, opt):
    ps = [params[0], params[1], params[3], params[4]]

    def step(x, y):
        with gt.GradientTape() as tape:
            logits = gt.matmul(gt.nn.relu(gt.matmul(x, params[0]) + params[1]), params[3]) \
                + params[4]
            loss = gt.reduce_mean(gt.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        opt.apply_gradients(zip(tape.gradient(loss, ps), ps))
        return loss
    return step


def test_two_captured_steps_share_an_optimizer(device):
    """One step per batch shape (as a last, shorter batch needs), one Adam: the step count
    moves between the two graphs' buffers and is read on the device inside each capture
    (a host read there would break it), giving the eager numbers."""
    def run(dev, captured):
        with gt.device(dev):
            params = _make_model()
            opt = gt.optimizers.Adam(0.05)
            full, tail = _adam_step(params, opt), _adam_step(params, opt)
            if captured:
                full, tail = capture(full), capture(tail)
            losses = []
            for i in range(3):
                losses.append(float(full(gt.constant(_X * (1 + i)), gt.constant(_Y))))
                losses.append(float(tail(gt.constant(_X[:5]), gt.constant(_Y[:5]))))
            return losses, params[0].numpy(), int(opt.iterations.numpy())
    got, want = run(device.name, True), run("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-6)
    assert got[2] == want[2] == 6


@pytest.mark.parametrize("kind", ["strict", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_capture_refuses_host_uploads_and_keeps_the_variables(kind):
    """gt.constant of a NumPy array inside the step would be replayed from a reused host
    buffer on a GPU: refused after the warm-up (on a GPU the upload is counted, or CUDA
    refuses it first), and the Variables assigned before the failure keep their values."""
    dev = resolve_device(kind)
    with gt.device(dev):
        params = _make_model()
        inner = _capturable_step(params)
        shift = np.linspace(0, 1, 3).astype(np.float32)

        def step(x, y):
            loss = inner(x, y)
            return loss + gt.reduce_sum(gt.constant(shift))
        captured = capture(step)
        captured(gt.constant(_X), gt.constant(_Y))
        before = [p.numpy() for p in params]
        want = rf"copied 1 host array\(s\) to {dev}" + \
            ("" if kind == "strict" else "|synchronised with the host")
        with pytest.raises(CaptureError, match=want):
            captured(gt.constant(_X), gt.constant(_Y))
        for p, b in zip(params, before):
            np.testing.assert_array_equal(p.numpy(), b)


def test_capture_failures_say_what_went_wrong():
    from gradtape.capture import _capture_failure

    def step():
        pass
    dev = gt.get_device("strict:0")
    cases = [(MemoryError("out of memory allocating 4.00 GiB"), "ran out of memory on strict:0"),
             (RuntimeError("cudaErrorMemoryAllocation: out of memory"), "ran out of memory"),
             (RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted when "
                           "stream is capturing"), "synchronised with the host"),
             (RuntimeError("cudaErrorStreamCaptureUnjoined"), "used another GPU or stream"),
             (ValueError("bad shapes"), "failed while being captured on strict:0")]
    for exc, words in cases:
        err = _capture_failure(step, dev, exc)
        assert isinstance(err, CaptureError) and words in str(err), (exc, str(err))
        assert "capture: step" in str(err)


def test_failed_capture_keeps_the_variables_values():
    with gt.device("strict:0"):
        params = _make_model()
        inner = _capturable_step(params)

        def step(x, y):
            loss = inner(x, y)                # assigns every weight, then syncs
            if float(loss) > 1e9:
                raise AssertionError("diverged")
            return loss
        captured = capture(step)
        captured(gt.constant(_X), gt.constant(_Y))
        before = [p.numpy() for p in params]
        with pytest.raises(CaptureError):
            captured(gt.constant(_X), gt.constant(_Y))
        for p, b in zip(params, before):
            np.testing.assert_array_equal(p.numpy(), b)


@pytest.mark.parametrize("warmup", [0, -1, 1.5, True])
def test_capture_needs_a_warm_up_call(warmup):
    with pytest.raises(ValueError, match="warmup must be an int >= 1"):
        capture(lambda x: x, warmup=warmup)


def test_capture_takes_numpy_and_device_array_arguments(device):
    """NumPy arguments become device tensors of their own dtype in every call (warm-up
    included), raw device arrays are inputs like tensors (copied into the graph's buffers),
    and a 0-d array works as well: the numbers are the eager ones."""
    def run(dev, captured):
        with gt.device(dev):
            d = gt.get_device(dev)
            params = _make_model()
            inner = _capturable_step(params)

            def step(x, y, scale):
                return inner(x * scale, y)
            fn = capture(step) if captured else step
            out = []
            for s in (1.0, 0.5, -1.0, 2.0):
                x = d.asarray(_X * s) if captured and dev != "cpu" else _X * s
                out.append(float(fn(x, _Y, np.float32(s) * np.ones((), np.float32))))
            return out, params[0].numpy()
    got, want = run(device.name, True), run("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-6)


def test_capture_gives_numpy_float64_data_its_own_dtype_from_the_first_call():
    with gt.device("strict:0"):
        params = _make_model()
        step = capture(_capturable_step(params))
        with pytest.raises(TypeError, match="float64"):
            step(_X.astype(np.float64), _Y)          # float64 data, a float32 model


def test_captured_step_returns_what_the_eager_step_returns(device):
    """A returned read_value() of a Variable the step updates is its value at that point of
    the step (before the update), on every call, also when the graph writes the update back
    into the Variable's buffer."""
    def run(dev, captured):
        with gt.device(dev):
            w = gt.Variable(np.arange(4.0, dtype=np.float32))

            def step(x):
                before = w.read_value()
                w.assign_sub(x)
                return before, w * 1.0
            fn = capture(step) if captured else step
            return [[t.numpy() for t in fn(gt.constant(np.full(4, s, np.float32)))]
                    for s in (1.0, 2.0, 3.0)]
    np.testing.assert_array_equal(np.array(run(device.name, True)), np.array(run("cpu", False)))


def test_capture_refuses_an_optimizer_whose_count_is_on_another_device():
    with gt.device("strict:1"):
        opt = gt.optimizers.SGD(0.1)
    with gt.device("strict:0"):
        w = gt.Variable(np.ones(3, np.float32))

        def step(x):
            with gt.GradientTape() as tape:
                loss = gt.reduce_sum(w * x)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            return loss
        captured = capture(step)
        captured(gt.constant(np.ones(3, np.float32)))
        with pytest.raises(CaptureError, match="step count is on strict:1"):
            captured(gt.constant(np.ones(3, np.float32)))


def test_captured_dropout_draws_new_masks_as_the_eager_step_does(device):
    """The generator's stream position lives on the device and advances there, so each
    replay of a captured step draws the next numbers: the same masks as eager steps."""
    def run(dev, captured):
        with gt.device(dev):
            g = gt.random.Generator.from_seed(3)
            w = gt.Variable(np.ones(64, np.float32))

            def step(x):
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(gt.nn.dropout(w * x, 0.5, rng=g))
                w.assign_sub(0.01 * tape.gradient(loss, w))
                return loss
            fn = capture(step) if captured else step
            return [float(fn(gt.constant(np.full(64, s, np.float32)))) for s in (1, 2, 3, 4)]
    got, want = run(device.name, True), run(device.name, False)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(set(got)) == 4


def test_refresh_pins_copies_assigned_values_into_the_recorded_buffers():
    from gradtape.capture import _pin_variables, _refresh_pins
    with gt.device("cpu"):
        a = gt.Variable([1.0, 2.0])
        b = gt.Variable([3.0])
        pins = [p for p in _pin_variables(a.device) if p[0]() is a or p[0]() is b]
        buf_a, buf_b = a._value, b._value
        a.assign([5.0, 6.0])
        assert a._value is not buf_a
        assert _refresh_pins(pins, np.copyto) == 1
        assert a._value is buf_a and b._value is buf_b
        np.testing.assert_array_equal(buf_a, [5.0, 6.0])
        del b
        assert _refresh_pins(pins, np.copyto) == 0      # a dead Variable is skipped


@pytest.mark.parametrize("lr, words", [
    (lambda: 0.05, "learning rate is a Python callable"),
    ("host_schedule", "has only value_at"),
])
def test_capture_refuses_a_learning_rate_computed_on_the_host(lr, words):
    class HostSchedule(gt.optimizers.schedules.LearningRateSchedule):
        def value_at(self, step):
            return 0.05 / (1 + step)

        def get_config(self):
            return {}
    if lr == "host_schedule":
        lr = HostSchedule()
    with gt.device("strict:0"):
        params = _make_model()
        step = capture(_lr_variable_step(params, lr))
        step(gt.constant(_X), gt.constant(_Y))          # warm-up: eager, allowed
        with pytest.raises(CaptureError, match=words):
            step(gt.constant(_X), gt.constant(_Y))
        # with a schedule computed on the device the same step is capturable
        ok = capture(_lr_variable_step(params, gt.optimizers.schedules.ExponentialDecay(
            0.05, decay_steps=2, decay_rate=0.5)))
        for _ in range(3):
            ok(gt.constant(_X), gt.constant(_Y))


# --- GPU only ---------------------------------------------------------------------------------------

def test_out_of_memory_names_the_device_request_and_pool(gpu_device):
    from gradtape.backend.cupy_backend import DeviceOutOfMemoryError
    keep = gt.ones((1024,))
    with pytest.raises(DeviceOutOfMemoryError) as info:
        gt.zeros((1 << 46,), dtype=gt.float32)            # 256 TiB
    msg = str(info.value)
    assert msg.startswith("gpu:0: out of memory allocating 262144.00 GiB")
    assert "memory pool had" in msg and "retried once" in msg
    assert float(gt.reduce_sum(keep)) == 1024.0            # the device still works


def test_gpu_capture_fails_loudly_on_a_host_sync(gpu_device):
    params = _make_model()
    inner = _capturable_step(params)

    def step(x, y):
        loss = inner(x, y)
        if float(loss) > 100.0:
            raise AssertionError("diverged")
        return loss
    captured = capture(step)
    captured(gt.constant(_X), gt.constant(_Y))
    with pytest.raises(CaptureError, match="capture: step"):
        captured(gt.constant(_X), gt.constant(_Y))


def test_gpu_capture_reuses_blocks_freed_within_the_step(gpu_device):
    """Sixteen 1 MiB temporaries in a row: the recording holds a few blocks (the input copy,
    two alternating temporaries, the output), not one per temporary."""
    import cupy
    x0 = gt.constant(np.ones((1024, 256), np.float32))
    nbytes = 1024 * 256 * 4

    def step(x):
        for _ in range(16):
            x = x * 1.01
        return x
    fn = capture(step)
    fn(x0)                                             # warm-up, eager
    pool = cupy.get_default_memory_pool()
    before = pool.used_bytes()
    out = fn(x0)                                       # the recording call
    held = pool.used_bytes() - before
    assert held <= 8 * nbytes, held / nbytes
    again = fn(x0)                                     # a replay
    np.testing.assert_allclose(out.numpy(), np.full((1024, 256), 1.01 ** 16), rtol=1e-5)
    np.testing.assert_array_equal(again.numpy(), out.numpy())


def test_gpu_capture_shape_change_names_the_input(gpu_device):
    params = _make_model()
    step = capture(_capturable_step(params))
    y = gt.constant(_Y)
    step(gt.constant(_X), y)
    step(gt.constant(_X), y)
    with pytest.raises(CaptureError, match=r"argument 0 \(x\) of step changed"):
        step(gt.constant(_X[:8]), y)


@pytest.mark.gpu
def test_second_gpu_keeps_tensors_and_backward_there():
    if backend.gpu_unavailable_reason() is not None:
        pytest.skip(f"no usable CUDA GPU: {backend.gpu_unavailable_reason()}")
    gpus = [d for d in gt.config.list_devices() if d.kind == "gpu"]
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    with gt.device("gpu:1"):
        x = gt.constant([1.0, 2.0])
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.reduce_sum(fused.fused_bias_act(x, None, "tanh") * x)
        g = tape.gradient(y, x)
    assert g.device.name == "gpu:1" and g._value.device.id == 1
    t = np.tanh([1.0, 2.0])
    np.testing.assert_allclose(g.numpy(), t + np.array([1.0, 2.0]) * (1 - t * t), rtol=1e-6)
    with gt.device("gpu:0"):
        z = gt.constant([1.0, 1.0])
    with pytest.raises(DeviceError, match="gpu:1 and gpu:0|gpu:0 and gpu:1"):
        x + z


# --- one GPU among several: work only while the device is current -------------------------------

def _switching_device(index):
    """A strict device standing for one of several GPUs (CuPy's current-device rule)."""
    from gradtape.backend import base
    dev = StrictDevice(index, switching=True)
    base.SWITCHING_DEVICES = True   # (what a CuPy device does when it sees several GPUs)
    return dev


def test_a_switching_device_refuses_work_while_another_is_current():
    dev = _switching_device(40)
    with pytest.raises(DeviceError, match="strict:40: work for this device was launched"):
        dev.xp.ones(3)
    with dev.activate():
        a = dev.xp.ones(3)
    with pytest.raises(DeviceError, match="strict:40"):
        a * 2.0
    t = dev.asarray(np.arange(3.0))        # uploads make the device current themselves
    assert t.shape == (3,)


def test_training_step_on_a_switching_device_runs_each_part_while_it_is_current():
    """Tensors made in a gt.device scope, then the forward, backward (C and Python rules,
    broadcast sums, unconnected zeros), the optimizer step, Jacobians and a Hessian-vector
    product outside it: every array operation runs with the device current, and the numbers
    match the CPU's."""
    dev = _switching_device(41)
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 3)).astype(np.float32)
    wv = rng.standard_normal((3, 5)).astype(np.float32)
    bv = rng.standard_normal(5).astype(np.float32)

    def step(device):
        with gt.device(device):
            x = gt.constant(xv)
            w = gt.Variable(wv)
            b = gt.Variable(bv)
            unused = gt.Variable(bv)
        with gt.device(device):     # (the step count, and so the schedule, on the device)
            opt = gt.optimizers.Adam(gt.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9))
        with gt.GradientTape() as tape:
            h = x @ w + b
            y = gt.reduce_mean(gt.tanh(h) * gt.nn.relu(h) - h * 0.5)
        gw, gb, gu = tape.gradient(y, [w, b, unused],
                                   unconnected_gradients=gt.UnconnectedGradients.ZERO)
        held = w.read_value()       # shares w's buffer: the update writes a new one
        opt.apply_gradients([(gw, w), (gb, b)])
        np.testing.assert_array_equal(held.numpy(), wv)
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            z = gt.tanh(x @ w)
        jac = tape.jacobian(z, x)
        bjac = tape.batch_jacobian(z, x)
        hv = gt.hvp(lambda t: gt.reduce_sum(gt.tanh(t @ w)), (x,), (x,))[0]
        return [t.numpy() for t in (y, gw, gb, gu, w, b, jac, bjac, hv)]

    for got, want in zip(step(dev), step("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


# --- the GPU memory allocator, on a stand-in for CuPy's pool ---------------------------------------

class _FakeOOM(Exception):
    pass


class _FakePool:
    def __init__(self, fail=0):
        self.fail = fail                 # allocations to refuse before succeeding
        self.walks = 0                   # used_bytes() calls (a walk over every block in CuPy)
        self.freed = 0
        self.in_use = 0

    def malloc(self, size):
        if self.fail:
            self.fail -= 1
            raise _FakeOOM(size)
        self.in_use += size
        self.next_ptr = getattr(self, "next_ptr", 1 << 20) + max(size, 512)
        return types.SimpleNamespace(size=size, device_id=0, ptr=self.next_ptr)

    def used_bytes(self):
        self.walks += 1
        return self.in_use

    def total_bytes(self):
        return self.in_use + 512

    def free_all_blocks(self):
        self.freed += 1


def _fake_cupy(pool):
    _t = types
    return _t.SimpleNamespace(
        get_default_memory_pool=lambda: pool,
        get_default_pinned_memory_pool=lambda: _t.SimpleNamespace(free_all_blocks=lambda: None),
        cuda=_t.SimpleNamespace(
            memory=_t.SimpleNamespace(OutOfMemoryError=_FakeOOM),
            Device=lambda *a: _t.SimpleNamespace(id=0),
            get_current_stream=lambda: _t.SimpleNamespace(ptr=0),
            runtime=_t.SimpleNamespace(memGetInfo=lambda: (1 << 20, 1 << 30))))


def test_allocator_reads_the_pool_usage_only_when_tracking_the_peak():
    from gradtape.backend.cupy_backend import PoolAllocator
    pool = _FakePool()
    alloc = PoolAllocator(_fake_cupy(pool))
    for _ in range(10):
        alloc(256)
    assert pool.walks == 0 and alloc.peak == {}
    alloc.track_peak = True
    alloc(1024)
    assert pool.walks == 1 and alloc.peak[0] == 10 * 256 + 1024


def test_allocator_frees_cached_blocks_and_retries_once_then_names_the_request():
    from gradtape.backend.cupy_backend import DeviceOutOfMemoryError, PoolAllocator
    pool = _FakePool(fail=1)
    alloc = PoolAllocator(_fake_cupy(pool))
    assert alloc(64).size == 64 and pool.freed == 1
    pool.fail = 2
    with pytest.raises(DeviceOutOfMemoryError, match=r"gpu:0: out of memory allocating 1.00 "
                                                     r"KiB \(1024 bytes\).*retried once"):
        alloc(1024)
    assert pool.freed == 2


def test_allocator_keeps_a_capturing_threads_blocks_and_frees_nothing_then():
    import threading
    from gradtape.backend.cupy_backend import DeviceOutOfMemoryError, PoolAllocator
    pool = _FakePool()
    alloc = PoolAllocator(_fake_cupy(pool))
    keep = []
    alloc.keep = keep
    held = alloc(8)
    other = threading.Thread(target=lambda: alloc(16))     # another thread's blocks are its own
    other.start()
    other.join()
    assert [m.size for m in keep] == [512]        # CuPy's rounding
    pool.fail = 1
    with pytest.raises(DeviceOutOfMemoryError) as info:
        alloc(32)
    assert pool.freed == 0 and "retried" not in str(info.value)
    assert held.mem.size == 8
    alloc.keep = None


def test_allocator_reuses_blocks_freed_within_a_capture_and_keeps_them_all():
    """Within one capture a dead array's block serves the next request of its rounded size
    (the graph runs its kernels in recording order); every block stays kept for the graph,
    and a block freed after the capture ends goes nowhere."""
    pytest.importorskip("cupy")
    from gradtape.backend.cupy_backend import PoolAllocator
    import gc
    import weakref

    class Keep(list):
        pass
    pool = _FakePool()
    alloc = PoolAllocator(_fake_cupy(pool))
    keep = Keep()
    alloc.keep = keep
    a = alloc(1000)
    assert a.mem.size == 1000 and len(keep) == 1 and keep[0].size == 1024
    first = a.ptr
    del a
    b = alloc(1024)                       # same rounded size: the freed block again
    assert b.ptr == first and len(keep) == 1
    c = alloc(700)                        # b is alive: a new block
    d = alloc(3000)
    assert len({b.ptr, c.ptr, d.ptr}) == 3 and len(keep) == 3
    del c
    e = alloc(513)                        # 1024 bytes: c's block
    assert e.ptr == keep[1].ptr and pool.in_use == 1024 + 1024 + 3072
    alloc.keep = None                     # capture over
    old_ptrs = {blk.ptr for blk in keep}
    step_blocks = weakref.ref(keep)
    del keep                              # the step's list of blocks goes with the step,
    gc.collect()                          # even while b and e (escaped arrays) live on
    assert step_blocks() is None and b.mem.size == 1024 and e.mem.size == 513
    del b, e
    later = []
    alloc.keep = later                    # the next capture starts with no spare blocks
    f = alloc(1024)
    assert f.ptr not in old_ptrs and len(later) == 1
    alloc.keep = None
    assert alloc(64).size == 64 and len(later) == 1     # outside a capture: the pool's own


def test_captured_step_follows_a_generator_reseeded_between_replays(device):
    """``reset_from_seed`` rewrites the generator's device state in place, so a step captured
    earlier draws the reseeded stream."""
    def run(captured):
        g = gt.random.Generator.from_seed(3)
        w = gt.Variable(np.ones(32, np.float32))

        def step(x):
            return gt.reduce_sum(gt.nn.dropout(w * x, 0.5, rng=g))
        fn = capture(step) if captured else step
        x = gt.constant(np.ones(32, np.float32))
        out = [float(fn(x)) for _ in range(3)]
        g.reset_from_seed(3)
        return out + [float(fn(x)) for _ in range(2)]
    got, want = run(True), run(False)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[3:] == got[:2]


def test_a_captured_step_called_inside_another_becomes_part_of_it(device):
    params = _make_model()
    inner = capture(_capturable_step(params))

    def outer(x, y):
        return inner(x, y) + inner(x, y)
    step = capture(outer)
    got = [float(step(gt.constant(_X), gt.constant(_Y))) for _ in range(3)]
    params = _make_model()
    eager = _capturable_step(params)
    want = [float(eager(gt.constant(_X), gt.constant(_Y)))
            + float(eager(gt.constant(_X), gt.constant(_Y))) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_captured_step_returning_a_view_of_an_updated_variable(device):
    """A returned view of a Variable the step assigns is copied out before the write-back:
    each call's result keeps its own values."""
    w = gt.Variable(np.arange(4, dtype=np.float32))

    def step(x):
        w.assign_add(x)
        return w.read_value()[1:]
    fn = capture(step)
    outs = [fn(gt.constant(np.ones(4, np.float32))) for _ in range(4)]
    for k, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), np.arange(1, 4) + k + 1)
    np.testing.assert_array_equal(w.numpy(), np.arange(4) + 4)


def test_failed_checked_step_keeps_the_optimizer_slots():
    """A fused Adam update writes its moments in place; a step refused on the strict device
    leaves them, and the weights, as they were."""
    with gt.device("strict:0"):
        params = _make_model()
        opt = gt.optimizers.Adam(0.01)
        ps = [params[0], params[1], params[3], params[4]]

        def step(x, y):
            with gt.GradientTape() as tape:
                logits = gt.matmul(gt.nn.relu(gt.matmul(x, params[0]) + params[1]),
                                   params[3]) + params[4]
                loss = gt.reduce_mean(
                    gt.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
            opt.apply_gradients(zip(tape.gradient(loss, ps), ps))
            if float(loss) > 1e9:
                raise AssertionError("diverged")
            return loss
        captured = capture(step)
        captured(gt.constant(_X), gt.constant(_Y))
        slots = [v.numpy() for v in opt.variables]
        weights = [p.numpy() for p in params]
        with pytest.raises(CaptureError):
            captured(gt.constant(_X), gt.constant(_Y))
        for v, s in zip(opt.variables, slots):
            np.testing.assert_array_equal(v.numpy(), s)
        for p, b in zip(params, weights):
            np.testing.assert_array_equal(p.numpy(), b)


def test_set_seed_restarts_the_global_generators_a_captured_step_draws_from(device):
    """set_seed reseeds the global generators in place: a captured step that draws from
    them (dropout without its own generator) restarts as an eager step does; a generator
    installed with set_global_generator is the caller's and keeps its stream."""
    def run(captured):
        gt.random.set_seed(5)
        x = gt.constant(np.ones(64, np.float32))

        def step(v):
            return gt.reduce_sum(gt.nn.dropout(v, 0.5) * gt.range(64, dtype=gt.float32)) \
                + gt.reduce_sum(gt.random.uniform([3], seed=7))
        fn = capture(step) if captured else step
        first = [float(fn(x)) for _ in range(3)]
        gt.random.set_seed(5)
        return first + [float(fn(x)) for _ in range(2)]
    got, want = run(True), run(False)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[3:] == got[:2] and len(set(got[:3])) == 3
    mine = gt.random.Generator.from_seed(1)
    gt.random.set_global_generator(mine)
    a = mine.normal([4]).numpy()
    gt.random.set_seed(5)
    assert gt.random.get_global_generator() is not mine
    b = mine.normal([4]).numpy()
    fresh = gt.random.Generator.from_seed(1)
    np.testing.assert_array_equal(a, fresh.normal([4]).numpy())
    np.testing.assert_array_equal(b, fresh.normal([4]).numpy())     # its stream went on
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("make", [
    lambda x: gt.constant(0.5), lambda x: gt.constant(2, shape=[2, 3]),
    lambda x: gt.fill([3, 2], 1.5), lambda x: gt.range(10), lambda x: gt.range(1, 4.5, 0.5),
    lambda x: gt.range(10, 1, -3, dtype=gt.float64), lambda x: gt.eye(3, 4),
    lambda x: gt.eye(2, batch_shape=[3]), lambda x: gt.linspace(0.0, 1.0, 7),
    lambda x: gt.one_hot(gt.cast(x[:, 0], gt.int32), 4, on_value=2.0, off_value=-1.0),
    lambda x: gt.pad(x, [[1, 2], [2, 1]], mode="REFLECT"),
    lambda x: gt.pad(x, [[0, 1], [1, 1]], mode="SYMMETRIC"),
    lambda x: x * np.float32(3), lambda x: gt.maximum(x, np.float32(0.5)),
], ids=["constant", "constant_shape", "fill", "range", "range_float", "range_down", "eye",
        "eye_batch", "linspace", "one_hot", "pad_reflect", "pad_symmetric", "np_scalar",
        "np_scalar_operand"])
def test_made_on_the_device_without_copying_from_the_host(make):
    """Numbers and index ranges a step makes are made by kernels on the device (a fill takes
    the number as an argument), so a captured step may make them; the values are the CPU's."""
    rng = np.random.default_rng(0)
    host = rng.uniform(0, 3, (3, 4)).astype(np.float32)
    with gt.device("cpu"):
        want = make(gt.constant(host))
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        x = gt.constant(host)
        dev.reset_counters()
        got = make(x)
        assert (dev.transfer_count, dev.sync_count) == (0, 0)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_tensor_spec_input_signatures_and_module():
    spec = gt.TensorSpec([None, 3], gt.float32, name="x")
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=gt.float32, name='x')"
    assert spec.is_compatible_with(gt.ones([5, 3])) and not spec.is_compatible_with(gt.ones([5]))
    assert not spec.is_compatible_with(gt.ones([2, 3], gt.float64))
    assert spec.is_compatible_with([[1, 2, 3]]) and not spec.is_compatible_with("text")
    assert gt.TensorSpec.from_tensor(gt.ones([2])) == gt.TensorSpec([2])
    with pytest.raises(ValueError, match="TensorSpec: sizes must be non-negative ints or None"):
        gt.TensorSpec([-1])

    @gt.function(input_signature=[gt.TensorSpec([None, 3], gt.float32)])
    def total(x):
        return gt.reduce_sum(x)
    assert total(gt.ones([4, 3])).numpy() == 12.0
    with pytest.raises(ValueError, match="function total: argument 0 \\(shape \\(4, 2\\) and "
                                         "dtype float32\\) does not match input_signature"):
        total(gt.ones([4, 2]))
    with pytest.raises(TypeError, match="input_signature has 1 tensor\\(s\\), the call passed 2"):
        total(gt.ones([1, 3]), gt.ones([1, 3]))

    class Scale(gt.Module):                 # tf.Module with a traced __call__
        def __init__(self):
            super().__init__()
            self.w = gt.Variable(2.0)
            self.extra = [gt.Variable([1.0], trainable=False)]

        @gt.function(input_signature=[gt.TensorSpec([], gt.float32)])
        def __call__(self, x):
            return self.w * x
    m = Scale()
    assert m(gt.constant(3.0)).numpy() == 6.0 and m(1.5).numpy() == 3.0
    assert m.name == "scale" and len(m.variables) == 2 and m.trainable_variables == [m.w]


def test_every_variable_write_goes_through_the_hook_captured_steps_track():
    # (a CUDA-graph capture copies the values a step assigned into the recorded buffers; it
    # finds them through Variable._set, so optimizer updates, slots and step counts, moving
    # statistics, sliced and scattered assignment must all pass there)
    from gradtape.capture import _track_assignments
    v = gt.Variable(np.ones(2, np.float32), constraint=lambda t: t)
    opt = gt.optimizers.Adam(0.1)
    bn = gt.keras.layers.BatchNormalization()
    bn(gt.ones((4, 2)), training=True)
    record = {}
    with _track_assignments(record):
        opt.apply_gradients([(gt.constant([1.0, 1.0]), v)])
        bn(gt.ones((4, 2)), training=True)
        v[0].assign(3.0)
    tracked = {var.name for var, _ in record.values()}
    assert v.name in tracked and opt.iterations.name in tracked
    assert bn.moving_mean.name in tracked and bn.moving_variance.name in tracked
