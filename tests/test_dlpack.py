"""DLPack exchange (``gt.experimental.dlpack``, ``Tensor.__dlpack__``): no copies, the right
device, clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.experimental import dlpack


def _ptr(a):
    return a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data.ptr


def test_numpy_takes_a_tensor_and_gives_one_back_without_copying():
    t = gt.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t._value)
    back = dlpack.from_dlpack(a)
    assert back.device == gt.get_device("cpu") and back.dtype == gt.float32
    assert np.shares_memory(back._value, a)
    np.testing.assert_array_equal(back.numpy(), np.arange(6).reshape(2, 3))


def test_capsules_round_trip_once():
    t = gt.constant(np.linspace(0, 1, 5))
    cap = dlpack.to_dlpack(t)
    got = dlpack.from_dlpack(cap)
    assert got.dtype == gt.float64 and np.shares_memory(got._value, t._value)
    with pytest.raises(ValueError, match="already consumed"):
        dlpack.from_dlpack(cap)


def test_a_tensor_from_dlpack_is_differentiable():
    x = dlpack.from_dlpack(np.array([1.0, 2.0, 3.0]))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.reduce_sum(x * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])


def test_torch_exchanges_tensors_and_capsules_without_copying():
    torch = pytest.importorskip("torch")
    t = gt.Variable(np.arange(4, dtype=np.float32))
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == _ptr(t._value) and tt.dtype == torch.float32
    src = torch.arange(6, dtype=torch.int64).reshape(3, 2)
    got = dlpack.from_dlpack(src)
    assert got.dtype == gt.int64 and _ptr(got._value) == src.data_ptr()
    cap = torch.utils.dlpack.to_dlpack(torch.ones(3, dtype=torch.float64))
    np.testing.assert_array_equal(dlpack.from_dlpack(cap).numpy(), np.ones(3))
    with pytest.raises(TypeError, match="from_dlpack: NumPy cannot take this host array"):
        dlpack.from_dlpack(torch.ones(2, dtype=torch.bfloat16))


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="from_dlpack: expected a DLPack capsule or an object "
                                        "with __dlpack__, got list"):
        dlpack.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="expected a gradtape Tensor, got ndarray"):
        dlpack.to_dlpack(np.ones(2))
    with gt.device("strict:0"):
        s = gt.ones([2])
    with pytest.raises(gt.DeviceError, match="tensors of strict:0 cannot be shared"):
        dlpack.to_dlpack(s)
    with pytest.raises(gt.DeviceError, match="strict:0"):
        np.from_dlpack(s)


def test_scalars_read_only_views_variables_and_versioned_capsules():
    c = gt.constant([1.0, 2.0, 4.0])
    total = gt.reduce_sum(c)               # a NumPy scalar behind the tensor
    assert np.from_dlpack(total).shape == () and float(np.from_dlpack(total)) == 7.0
    assert dlpack.from_dlpack(dlpack.to_dlpack(c[1])).numpy() == 2.0
    # a read-only broadcast view: the legacy capsule cannot say so, so it carries a copy
    view = gt.broadcast_to(c, (2, 3))
    back = dlpack.from_dlpack(dlpack.to_dlpack(view))
    np.testing.assert_array_equal(back.numpy(), [[1, 2, 4], [1, 2, 4]])
    assert not np.shares_memory(back._value, view._value)
    assert np.shares_memory(np.from_dlpack(view), view._value)   # (versioned: shared)
    v = gt.Variable([3.0, 5.0])
    got = dlpack.from_dlpack(v)
    assert type(got) is gt.Tensor and np.shares_memory(got._value, v._value)
    versioned = np.arange(3.0).__dlpack__(max_version=(1, 0))
    np.testing.assert_array_equal(dlpack.from_dlpack(versioned).numpy(), [0, 1, 2])
    with pytest.raises(ValueError, match="already consumed"):
        dlpack.from_dlpack(versioned)


# --- GPU only -----------------------------------------------------------------------------------

def test_cupy_exchanges_gpu_tensors_without_copying(gpu_device):
    import cupy
    t = gt.constant(np.arange(6, dtype=np.float32))
    c = cupy.from_dlpack(t)
    assert c.data.ptr == t._value.data.ptr
    back = dlpack.from_dlpack(cupy.arange(4, dtype=cupy.float64))
    assert back.device == gpu_device and back.dtype == gt.float64
    np.testing.assert_array_equal(back.numpy(), np.arange(4))
    assert dlpack.from_dlpack(dlpack.to_dlpack(t)).device == gpu_device


def test_torch_cuda_exchanges_gpu_tensors_without_copying(gpu_device):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    t = gt.constant(np.arange(6, dtype=np.float32))
    tt = torch.from_dlpack(t)
    assert tt.is_cuda and tt.data_ptr() == t._value.data.ptr
    back = dlpack.from_dlpack(torch.arange(3, device="cuda", dtype=torch.float32))
    assert back.device == gpu_device
    np.testing.assert_array_equal(back.numpy(), [0, 1, 2])
