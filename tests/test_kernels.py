"""The CUDA kernels of kernels/*.cu.

* Every kernel file compiles with NVRTC for compute capabilities 8.0 and 9.0 with the
  options the CuPy device uses, with no error and no warning. NVRTC needs no GPU: this runs
  on CPU-only CI through CuPy's internal NVRTC binding (skipped only when CuPy is missing).
* The NumPy references agree with the math they document.
* On a GPU (tests marked ``gpu``), each kernel agrees with its NumPy reference on random
  inputs, in float32 and float64.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import math
import os
import re
import types

import numpy as np
import pytest

import gradtape as gt
from gradtape.backend import kernels as K

import _host_cuda
from conftest import gpu_or_skip

ARCHES = ("sm_80", "sm_90")      # cubins, as CuPy's RawModule builds them for such GPUs


def _preload_pip_nvrtc():
    """Load the NVRTC library of the ``nvidia-cuda-nvrtc`` wheel, if installed, so CuPy's
    binding finds it even where no CUDA toolkit is on the library path."""
    roots = []
    for pkg in ("nvidia.cuda_nvrtc", "nvidia.cu13", "nvidia"):
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            roots.extend(spec.submodule_search_locations)
    for root in roots:
        for lib in sorted(glob.glob(os.path.join(root, "**", "libnvrtc.so*"), recursive=True)):
            if "builtins" in os.path.basename(lib) or ".alt." in os.path.basename(lib):
                continue
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                return lib
            except OSError:
                continue
    return None


def _nvrtc():
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # not installed, or a broken install
        pytest.skip(f"CuPy is not importable ({type(exc).__name__}: {exc}); install the "
                    "`kernels` extra to compile-check the CUDA kernels")
    from cupy_backends.cuda.libs import nvrtc
    try:
        nvrtc.getVersion()
    except Exception:
        found = _preload_pip_nvrtc()
        try:
            nvrtc.getVersion()
        except Exception as exc:
            pytest.fail(f"CuPy imports but NVRTC cannot be loaded ({exc}); preloaded: {found}. "
                        "Install nvidia-cuda-nvrtc-cu12 (the `kernels` extra)")
    return nvrtc


def nvrtc_compile(nvrtc, source, name, arch):
    """``(ok, log, code)`` of compiling ``source`` for ``arch`` with the loader's options:
    the cubin (bytes) for ``sm_XX``, the PTX (text) for ``compute_XX``."""
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(K.compile_options(arch)))
            ok = True
        except Exception:
            ok = False
        log = nvrtc.getProgramLog(prog).strip().strip("\x00")
        code = b""
        if ok:
            code = nvrtc.getCUBIN(prog) if arch.startswith("sm_") else nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    if isinstance(code, str):
        code = code.encode()
    return ok, log, code


def _entry_points(source):
    return re.findall(r"__global__\s+void\s+(\w+)\s*\(", source)


FILES = K.kernel_files()


def test_kernel_sources_are_found_and_complete():
    assert set(FILES) >= {"activation.cu", "softmax.cu", "layer_norm.cu", "optimizers.cu",
                          "embedding.cu", "random.cu", "window.cu"}
    for f in FILES:
        src = K.kernel_source(f)
        assert '#include "' not in src, f"{f}: a local include was not inlined"
        assert _entry_points(src), f"{f} declares no kernel"


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", FILES)
def test_kernel_compiles_without_errors_or_warnings(name, arch):
    nvrtc = _nvrtc()
    source = K.kernel_source(name)
    ok, log, cubin = nvrtc_compile(nvrtc, source, name, arch)
    assert ok, f"{name} failed to compile for {arch}:\n{log}"
    assert log == "", f"{name} compiled for {arch} with warnings:\n{log}"
    assert cubin[:4] == b"\x7fELF", f"{name}: NVRTC gave no cubin for {arch}"
    for entry in _entry_points(source):     # extern "C": the symbol is the plain name
        assert b"\x00" + entry.encode() + b"\x00" in cubin, f"{name}: no kernel {entry} in the cubin"


def test_kernels_also_compile_to_ptx_for_newer_gpus():
    """CuPy builds PTX instead of a cubin for a GPU newer than its NVRTC knows."""
    nvrtc = _nvrtc()
    for name in FILES:
        source = K.kernel_source(name)
        ok, log, ptx = nvrtc_compile(nvrtc, source, name, "compute_90")
        assert ok and log == "", f"{name}:\n{log}"
        assert b".target sm_90" in ptx
        for entry in _entry_points(source):
            assert re.search(rb"\.entry\s+" + entry.encode() + rb"\s*\(", ptx), (name, entry)


def test_compile_check_reports_errors_and_warnings():
    nvrtc = _nvrtc()
    ok, log, _ = nvrtc_compile(nvrtc, 'extern "C" __global__ void k(float* x) { x[0] = y; }',
                               "broken.cu", "compute_80")
    assert not ok and "identifier \"y\" is undefined" in log
    ok, log, _ = nvrtc_compile(
        nvrtc, 'extern "C" __global__ void k(float* x) { int unused = 3; x[0] = 1.f; }',
        "warn.cu", "compute_80")
    assert ok and "warning" in log and "unused" in log


def test_compile_failure_names_the_kernel_file_and_shows_the_nvrtc_log(tmp_path, monkeypatch):
    try:
        from cupy.cuda.compiler import CompileException
    except Exception as exc:
        pytest.skip(f"CuPy is not importable ({type(exc).__name__}: {exc})")
    (tmp_path / "broken_kernel.cu").write_text('extern "C" __global__ void k() { oops; }\n')
    monkeypatch.setenv("GRADTAPE_KERNEL_DIR", str(tmp_path))

    class FailingModule:
        def __init__(self, code, options):
            assert "oops" in code and options == K.NVRTC_OPTIONS

        def compile(self):
            raise CompileException('broken_kernel.cu(1): error: identifier "oops" is undefined',
                                   "", "broken_kernel.cu", K.NVRTC_OPTIONS, "nvrtc")

    fake = types.SimpleNamespace(
        RawModule=FailingModule,
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=99),
                                   compiler=types.SimpleNamespace(
                                       CompileException=CompileException)))
    with pytest.raises(K.KernelCompileError) as info:
        K._load_module(fake, "broken_kernel.cu")
    msg = str(info.value)
    assert str(tmp_path / "broken_kernel.cu") in msg
    assert 'identifier "oops" is undefined' in msg and "--std=c++17" in msg


def test_missing_kernel_directory_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADTAPE_KERNEL_DIR", str(tmp_path / "nowhere"))
    assert K.kernel_dir().name == "kernels"          # falls back to the package / checkout
    with pytest.raises(K.KernelNotFoundError, match="no_such.cu does not exist"):
        K.kernel_source("no_such.cu")


# --- NumPy references ------------------------------------------------------------------------

def test_reference_activations_match_their_formulas():
    z = np.linspace(-3, 3, 13)
    erf = np.vectorize(math.erf)   # (the standard library's: SciPy is not a dependency)
    expect = {
        "linear": z, "relu": np.maximum(z, 0), "tanh": np.tanh(z),
        "sigmoid": 1 / (1 + np.exp(-z)), "silu": z / (1 + np.exp(-z)),
        "gelu": 0.5 * z * (1 + erf(z / np.sqrt(2))),
        "gelu_tanh": 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3))),
    }
    for act, want in expect.items():
        np.testing.assert_allclose(K.reference_bias_act_forward(np, z, None, act), want,
                                   rtol=1e-12, atol=1e-12)
        h = 1e-6
        fd = (expect_fn(act, z + h) - expect_fn(act, z - h)) / (2 * h)
        got = K.reference_bias_act_backward(np, np.ones_like(z), z, None, act)
        if act == "relu":
            fd = (z > 0).astype(float)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def expect_fn(act, z):
    return K.reference_bias_act_forward(np, z, None, act)


def test_reference_cross_entropies():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7))
    labels = rng.integers(0, 7, 5)
    p = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    loss, grad = K.reference_softmax_xent_sparse(np, x, labels, scale=np.arange(5.0),
                                                 want_grad=True)
    np.testing.assert_allclose(loss, -np.log(p[np.arange(5), labels]), rtol=1e-12)
    onehot = np.eye(7)[labels]
    np.testing.assert_allclose(grad, (p - onehot) * np.arange(5.0)[:, None], atol=1e-12)
    bad, _ = K.reference_softmax_xent_sparse(np, x[:2], np.array([7, -1]))
    assert np.isnan(bad).all()
    dist = rng.uniform(0, 1, (5, 7))
    loss, grad = K.reference_softmax_xent_dense(np, x, dist, want_grad=True)
    np.testing.assert_allclose(loss, -(dist * np.log(p)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(grad, dist.sum(-1, keepdims=True) * p - dist, atol=1e-12)
    np.testing.assert_allclose(K.reference_log_softmax(np, x), np.log(p), atol=1e-12)


def test_reference_layer_norm_backward_matches_finite_differences():
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    gamma, beta = rng.uniform(0.5, 1.5, 6), rng.standard_normal(6)
    dx, dgamma, dbeta = K.reference_layer_norm_backward(np, g, x, gamma, 1e-3)

    def f(x, gamma, beta):
        return np.sum(g * K.reference_layer_norm_forward(np, x, gamma, beta, 1e-3))
    h = 1e-6
    for arr, grad in ((x, dx), (gamma, dgamma), (beta, dbeta)):
        fd = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            arr[idx] += h
            up = f(x, gamma, beta)
            arr[idx] -= 2 * h
            down = f(x, gamma, beta)
            arr[idx] += h
            fd[idx] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_reference_optimizer_updates_follow_keras():
    rng = np.random.default_rng(2)
    p0, g = rng.standard_normal(5), rng.standard_normal(5)
    p, v = p0.copy(), np.full(5, 0.5)
    K.sgd_momentum_update(np, p, g, v, 0.1, 0.9)
    np.testing.assert_allclose(v, 0.9 * 0.5 - 0.1 * g)
    np.testing.assert_allclose(p, p0 + v)
    p, v = p0.copy(), np.full(5, 0.5)
    K.sgd_momentum_update(np, p, g, v, 0.1, 0.9, nesterov=True)
    np.testing.assert_allclose(p, p0 + 0.9 * v - 0.1 * g)
    p = p0.copy()
    K.sgd_momentum_update(np, p, g, None, 0.1)
    np.testing.assert_allclose(p, p0 - 0.1 * g)
    # Adam, two steps, against the textbook loop
    p, m, v = p0.copy(), np.zeros(5), np.zeros(5)
    pe, me, ve = p0.copy(), np.zeros(5), np.zeros(5)
    for t in (1, 2):
        K.adam_update(np, p, g, m, v, 0.01, t)
        me = 0.9 * me + 0.1 * g
        ve = 0.999 * ve + 0.001 * g * g
        pe = pe - 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * me / (np.sqrt(ve) + 1e-7)
    np.testing.assert_allclose(p, pe, rtol=1e-12)
    np.testing.assert_allclose(m, me)
    np.testing.assert_allclose(v, ve)
    # AdamW: decoupled decay first; step and lr as 0-d arrays behave as numbers
    p, m, v = p0.copy(), np.zeros(5), np.zeros(5)
    K.adamw_update(np, p, g, m, v, np.array(0.01), np.array(1, dtype=np.int64), 0.1)
    pd = p0 - 0.01 * 0.1 * p0
    np.testing.assert_allclose(p, pd - 0.01 * (0.1 * g) / 0.1 * np.sqrt(0.001) /
                               (np.sqrt(0.001 * g * g) + 1e-7), rtol=1e-9)


def test_reference_embedding_backward_sums_repeated_ids():
    ids = np.array([[1, 3], [1, 9]])
    grad = np.arange(8.0).reshape(2, 2, 2)
    out = K.embedding_backward(np, ids, grad, 5)
    want = np.zeros((5, 2))
    want[1] = grad[0, 0] + grad[1, 0]
    want[3] = grad[0, 1]
    np.testing.assert_allclose(out, want)


def test_kernel_functions_check_optimizer_state_shapes():
    with pytest.raises(ValueError, match=r"adam_update: m has shape \(4,\)"):
        K.adam_update(np, np.zeros(5), np.zeros(5), np.zeros(4), np.zeros(5), 0.1, 1)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        K.bias_act_forward(np, np.zeros(3), None, "swish")


@pytest.mark.parametrize("counter, key, want", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_reference_philox_matches_the_known_answers(counter, key, want):
    """The known-answer vectors of Philox4x32-10 (Random123)."""
    got = K.reference_philox(np, *(np.array([c], np.uint64) for c in counter), key)
    assert tuple(int(w[0]) for w in got) == want


def test_kernel_functions_refuse_shapes_a_kernel_would_read_past():
    with pytest.raises(ValueError, match=r"embedding_backward: grad of shape \(4, 3\) does not "
                                         r"match ids of shape \(5,\)"):
        K.embedding_backward(np, np.zeros(5, np.int64), np.zeros((4, 3)), 10)
    for fn, labels in ((K.softmax_xent_sparse, np.zeros(2, np.int64)),
                       (K.softmax_xent_dense, np.zeros((2, 0)))):
        with pytest.raises(ValueError, match="2 rows of 0 classes"):
            fn(np, np.zeros((2, 0)), labels)


def test_fused_optimizer_updates_need_c_contiguous_device_parameters():
    """Off the host an update writes in place: a strided parameter or state is refused
    before anything is written (the optimizers hand the kernels C-ordered copies)."""
    dev = gt.get_device("strict:0")
    p = dev.asarray(np.asfortranarray(np.ones((3, 4))))
    g = dev.asarray(np.ones((3, 4)))
    m, v = dev.asarray(np.zeros((3, 4))), dev.asarray(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"adam_update: the parameter \(shape \(3, 4\)\) must "
                                         "be C-contiguous"):
        K.adam_update(dev.xp, p, g, m, v, 0.1, 1)
    with pytest.raises(ValueError, match="velocity must be C-contiguous"):
        K.sgd_momentum_update(dev.xp, g, g, dev.asarray(np.asfortranarray(np.ones((3, 4)))),
                              0.1, 0.9)
    assert float(dev.to_host(m).sum()) == 0.0


# --- every kernel against its NumPy reference: on a GPU, and built for the host -----------------

DTYPES = [pytest.param(np.float32, id="f32"), pytest.param(np.float64, id="f64")]
# the host build runs a thread per CUDA thread and the row kernels synchronise their block
# many times a row: cases with more rows are left to the GPU
_HOST_MAX_ROWS = 40


class _KernelDevice:
    """Where the kernels run: ``gpu`` (CuPy) or ``host`` (tests/_host_cuda.py)."""

    def __init__(self, kind, xp):
        self.kind = kind
        self.xp = xp

    def put(self, a):
        a = np.asarray(a)
        return self.xp.asarray(a) if self.kind == "gpu" else a.copy().view(_host_cuda.HostArray)

    def get(self, a):
        return a.get() if self.kind == "gpu" else np.asarray(a)

    def ptr(self, a):
        return a.data.ptr if self.kind == "gpu" else a.ctypes.data

    def full(self, shape, value, dtype):
        return self.put(np.full(shape, value, dtype))

    def fits(self, shape):
        rows = int(np.prod(shape[:-1]))
        if self.kind == "host" and rows > _HOST_MAX_ROWS:
            pytest.skip(f"{rows} rows: too many for the host build (checked on a GPU)")


@pytest.fixture(params=[pytest.param("gpu", marks=pytest.mark.gpu), "host"])
def kd(request, monkeypatch):
    if request.param == "gpu":
        dev = gpu_or_skip()
        with gt.device(dev):
            yield _KernelDevice("gpu", dev.xp)
        return
    if _host_cuda.compiler() is None:
        pytest.skip("no C++ compiler to build the kernels for the host")
    _host_cuda.on_host_kernels(monkeypatch)
    yield _KernelDevice("host", np)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", list(K.ACTIVATIONS))
def test_bias_act_kernels_match_reference(kd, activation, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 129)).astype(dtype) * 3
    b = rng.standard_normal(129).astype(dtype)
    g = rng.standard_normal((37, 129)).astype(dtype)
    for bias in (b, None):
        db = kd.put(bias) if bias is not None else None
        y = K.bias_act_forward(kd.xp, kd.put(x), db, activation)
        np.testing.assert_allclose(kd.get(y), K.reference_bias_act_forward(np, x, bias, activation),
                                   **_tol(dtype))
        dz = K.bias_act_backward(kd.xp, kd.put(g), kd.put(x), db, activation)
        np.testing.assert_allclose(kd.get(dz),
                                   K.reference_bias_act_backward(np, g, x, bias, activation),
                                   **_tol(dtype))


def test_exact_gelu_keeps_its_float32_digits_in_the_negative_tail(kd):
    """0.5 z erfc(-z / sqrt 2), not 0.5 z (1 + erf(z / sqrt 2)): the latter cancels to 0 (or
    to noise) for z below about -5 in float32; the kernel, its reference and gt.nn.gelu
    keep their relative accuracy there, value and derivative."""
    z = -np.linspace(3.0, 12.0, 64)
    cdf = 0.5 * np.vectorize(math.erfc)(-z / math.sqrt(2))
    want_y = z * cdf
    want_d = cdf + z * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    z32 = z.astype(np.float32)
    one = np.ones_like(z32)
    for y, d in ((kd.get(K.bias_act_forward(kd.xp, kd.put(z32), None, "gelu")),
                  kd.get(K.bias_act_backward(kd.xp, kd.put(one), kd.put(z32), None, "gelu"))),
                 (K.reference_bias_act_forward(np, z32, None, "gelu"),
                  K.reference_bias_act_backward(np, one, z32, None, "gelu"))):
        assert y.dtype == np.float32 and d.dtype == np.float32
        live = np.abs(want_y) > 1e-37                 # normal float32 results
        assert live.sum() > 40
        np.testing.assert_allclose(y[live], want_y[live], rtol=1e-4)
        live = np.abs(want_d) > 1e-37
        np.testing.assert_allclose(d[live], want_d[live], rtol=1e-4)
    zt = gt.constant(z32)
    with gt.GradientTape() as tape:
        tape.watch(zt)
        y = gt.nn.gelu(zt)
    d = tape.gradient(y, zt).numpy()
    live = np.abs(want_y) > 1e-37
    np.testing.assert_allclose(y.numpy()[live], want_y[live], rtol=1e-4)
    live = np.abs(want_d) > 1e-37
    np.testing.assert_allclose(d[live], want_d[live], rtol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", K.FROM_OUTPUT)
def test_activation_backward_from_the_output_matches_reference_and_input_form(kd, activation,
                                                                              dtype):
    rng = np.random.default_rng(4)
    z = rng.standard_normal((37, 129)).astype(dtype) * 3
    z[0, :3] = 0                                    # relu's kink: no gradient, as from z
    g = rng.standard_normal((37, 129)).astype(dtype)
    y = K.reference_bias_act_forward(np, z, None, activation)
    got = kd.get(K.act_backward_from_output(kd.xp, kd.put(g), kd.put(y), activation))
    np.testing.assert_allclose(got, K.reference_act_backward_from_output(np, g, y, activation),
                               **_tol(dtype))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else _tol(dtype)
    np.testing.assert_allclose(got, K.reference_bias_act_backward(np, g, z, None, activation),
                               **tol)


def test_activation_backward_from_the_output_names_the_activations_it_has():
    with pytest.raises(ValueError, match="'gelu' has no derivative in terms of its output"):
        K.reference_act_backward_from_output(np, np.ones(2), np.ones(2), "gelu")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (64, 1000), (3, 5000)])
def test_softmax_kernels_match_reference(kd, shape, dtype):
    kd.fits(shape)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    labels = rng.integers(0, shape[1], shape[0])
    scale = rng.standard_normal(shape[0]).astype(dtype)
    dist = rng.uniform(0, 1, shape).astype(dtype)
    tol = _tol(dtype) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(kd.get(K.log_softmax(kd.xp, kd.put(x))),
                               K.reference_log_softmax(np, x), **tol)
    for fn, ref, lab in ((K.softmax_xent_sparse, K.reference_softmax_xent_sparse, labels),
                         (K.softmax_xent_dense, K.reference_softmax_xent_dense, dist)):
        loss, grad = fn(kd.xp, kd.put(x), kd.put(lab), scale=kd.put(scale),
                        want_loss=True, want_grad=True)
        rl, rg = ref(np, x, lab, scale=scale, want_loss=True, want_grad=True)
        np.testing.assert_allclose(kd.get(loss), rl, **tol)
        np.testing.assert_allclose(kd.get(grad), rg, **tol)
        only_loss, none = fn(kd.xp, kd.put(x), kd.put(lab))
        assert none is None
        np.testing.assert_allclose(kd.get(only_loss), rl, **tol)


def test_sparse_cross_entropy_kernel_out_of_range_labels_give_nan(kd):
    loss, grad = K.softmax_xent_sparse(kd.xp, kd.put(np.zeros((2, 3), np.float32)),
                                       kd.put(np.array([3, -1])), want_grad=True)
    assert np.isnan(kd.get(loss)).all() and np.isnan(kd.get(grad)).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 1), (33, 96), (256, 1024), (2, 3, 300)])
def test_layer_norm_kernels_match_reference(kd, shape, dtype):
    kd.fits(shape)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    gamma = rng.uniform(0.5, 1.5, shape[-1]).astype(dtype)
    beta = rng.standard_normal(shape[-1]).astype(dtype)
    tol = _tol(dtype) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    y = K.layer_norm_forward(kd.xp, kd.put(x), kd.put(gamma), kd.put(beta), 1e-3)
    np.testing.assert_allclose(kd.get(y),
                               K.reference_layer_norm_forward(np, x, gamma, beta, 1e-3), **tol)
    got = K.layer_norm_backward(kd.xp, kd.put(g), kd.put(x), kd.put(gamma), 1e-3)
    want = K.reference_layer_norm_backward(np, g, x, gamma, 1e-3)
    for a, b in zip(got, want):
        np.testing.assert_allclose(kd.get(a), b, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_optimizer_kernels_update_in_place_like_the_reference(kd, dtype):
    rng = np.random.default_rng(6)
    shape = (300, 7)
    p0, g = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    tol = _tol(dtype) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    for nesterov in (False, True):
        p, v = kd.put(p0), kd.full(shape, 0.25, dtype)
        ptr_p, ptr_v = kd.ptr(p), kd.ptr(v)
        K.sgd_momentum_update(kd.xp, p, kd.put(g), v, 0.1, 0.9, nesterov)
        rp, rv = p0.copy(), np.full(shape, 0.25, dtype)
        K.reference_sgd_momentum_update(np, rp, g, rv, 0.1, 0.9, nesterov)
        assert (kd.ptr(p), kd.ptr(v)) == (ptr_p, ptr_v)
        np.testing.assert_allclose(kd.get(p), rp, **tol)
        np.testing.assert_allclose(kd.get(v), rv, **tol)
    for wd, lr, step in ((0.0, 0.01, 3), (0.05, kd.put(np.asarray(0.01, dtype)),
                                          kd.put(np.asarray(3)))):
        p, m = kd.put(p0), kd.full(shape, 0.1, dtype)
        v = kd.full(shape, 0.2, dtype)
        K.adam_update(kd.xp, p, kd.put(g), m, v, lr, step, weight_decay=wd)
        rp, rm, rv = p0.copy(), np.full(shape, 0.1, dtype), np.full(shape, 0.2, dtype)
        K.reference_adam_update(np, rp, g, rm, rv, 0.01, 3, weight_decay=wd)
        for a, b in ((p, rp), (m, rm), (v, rv)):
            np.testing.assert_allclose(kd.get(a), b, **tol)


# shapes of a multi-tensor update: more than one launch (MULTI a launch), an empty one, a
# scalar, one longer than a block's stride
_MULTI_SHAPES = [(300, 7), (7,), (0, 3), (), (2, 2, 2), (1,), (513,), (4, 5), (3,), (9, 1),
                 (70,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "to-outs"])
def test_multi_tensor_optimizer_kernels_match_the_reference(kd, dtype, in_place):
    """One launch updates up to MULTI parameters: each written where asked (in place, or to
    its own output with the input left as it was), its state in place, as the per-parameter
    reference computes it; SGD without momentum, with momentum and Nesterov, Adam and AdamW
    with a device learning rate and step."""
    rng = np.random.default_rng(16)
    assert len(_MULTI_SHAPES) > K.MULTI
    p0 = [rng.standard_normal(s).astype(dtype) for s in _MULTI_SHAPES]
    g = [rng.standard_normal(s).astype(dtype) for s in _MULTI_SHAPES]
    tol = _tol(dtype) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)

    def run(update, n_state, fill, **kw):
        params = [kd.put(a) for a in p0]
        ptrs = [kd.ptr(a) for a in params]
        state = [[kd.full(s, fill, dtype) for s in _MULTI_SHAPES] for _ in range(n_state)]
        outs = None if in_place else [kd.put(np.zeros_like(a)) for a in p0]
        update(kd.xp, params, [kd.put(a) for a in g], *state, outs=outs, **kw)
        if in_place:
            assert [kd.ptr(a) for a in params] == ptrs
            return [kd.get(a) for a in params], [[kd.get(a) for a in s] for s in state]
        for a, want in zip(params, p0):
            np.testing.assert_array_equal(kd.get(a), want)     # the inputs are only read
        return [kd.get(a) for a in outs], [[kd.get(a) for a in s] for s in state]

    def check(got, ref_update, n_state, fill):
        params, state = got
        for i, shape in enumerate(_MULTI_SHAPES):
            rp = p0[i].copy()
            rs = [np.full(shape, fill, dtype) for _ in range(n_state)]
            ref_update(rp, g[i], *rs)
            np.testing.assert_allclose(params[i], rp, **tol)
            for a, b in zip(state, rs):
                np.testing.assert_allclose(a[i], b, **tol)

    for momentum, nesterov in ((0.0, False), (0.9, False), (0.9, True)):
        if momentum:
            got = run(K.sgd_momentum_update_multi, 1, 0.25, lr=0.1, momentum=momentum,
                      nesterov=nesterov)
            check(got, lambda p, gi, v: K.reference_sgd_momentum_update(
                np, p, gi, v, 0.1, momentum, nesterov), 1, 0.25)
        else:
            got = run(lambda xp, ps, gs, outs: K.sgd_momentum_update_multi(
                xp, ps, gs, None, 0.1, outs=outs), 0, 0)
            check(got, lambda p, gi: K.reference_sgd_momentum_update(np, p, gi, None, 0.1),
                  0, 0)
    for wd, lr, step in ((0.0, 0.01, 3), (0.05, kd.put(np.asarray(0.01, dtype)),
                                          kd.put(np.asarray(3)))):
        got = run(K.adam_update_multi, 2, 0.2, lr=lr, step=step, weight_decay=wd)
        check(got, lambda p, gi, m, v: K.reference_adam_update(np, p, gi, m, v, 0.01, 3,
                                                                weight_decay=wd), 2, 0.2)


def test_multi_tensor_updates_refuse_mismatched_lists_before_writing():
    p = [np.ones(3), np.ones((2, 2))]
    g = [np.ones(3), np.ones((2, 2))]
    v = [np.zeros(3), np.zeros((2, 2))]
    with pytest.raises(ValueError, match=r"sgd_momentum_update_multi: 2 parameters but 1 grads"):
        K.sgd_momentum_update_multi(np, p, g[:1], v, 0.1, 0.9)
    with pytest.raises(ValueError, match=r"adam_update_multi: v 1 has shape \(3,\)"):
        K.adam_update_multi(np, p, g, v, [np.zeros(3), np.zeros(3)], 0.1, 1)
    with pytest.raises(ValueError, match=r"one dtype, got \['float32', 'float64'\]"):
        K.sgd_momentum_update_multi(np, [p[0], np.ones(2, np.float32)], g, None, 0.1)
    with pytest.raises(ValueError, match=r"out 0 has shape \(2,\)"):
        K.sgd_momentum_update_multi(np, p, g, v, 0.1, 0.9, outs=[np.ones(2), np.ones((2, 2))])
    assert (p[0] == 1).all() and (v[0] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_max", [True, False], ids=["max", "min"])
def test_segment_extreme_kernel_matches_reference(kd, dtype, is_max):
    """Exact in both precisions (1e300 and 1 + 1e-10 survive in float64), ties, dropped ids
    (negative, past the end), empty segments (the dtype's lowest/highest) and NaN."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((70, 3, 2)).astype(dtype)
    ids = rng.integers(-2, 9, 70)
    x[5] = x[6]
    ids[5] = ids[6] = 3                                  # a tie
    if dtype == np.float64:
        x[10, 0, 0], x[11, 0, 0] = 1e300, -1e300
        x[12, 0, 1] = 1.0 + 1e-10
        ids[10:13] = 1
    x[20, 1, 1] = np.nan
    ids[20] = 2
    ids[ids == 7] = 6                                    # segment 7 stays empty
    got = kd.get(K.segment_extreme(kd.xp, kd.put(x), kd.put(ids), 8, is_max))
    want = K.reference_segment_extreme(np, x, ids, 8, is_max)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[2, 1, 1]) and (got[7] == want[7]).all()


def test_strict_device_refuses_scatters_cupy_lacks():
    """CuPy's ufunc.at exists for add, subtract, maximum and minimum, with 32- and 64-bit
    atomics (maximum/minimum of float64 round through float32 there): the strict device
    refuses the rest, so CI catches them."""
    dev = gt.get_device("strict:0")
    with dev.activate():
        xp = dev.xp
        idx = dev.asarray(np.array([0, 0]))
        for name, dtype in [("maximum", np.float64), ("add", np.int8), ("add", np.bool_),
                            ("minimum", np.float16), ("multiply", np.float32)]:
            a = xp.zeros(3, dtype=dtype)
            with pytest.raises(TypeError, match=rf"xp.{name}.at"):
                getattr(xp, name).at(a, idx, xp.ones(2, dtype=dtype))
        ok = xp.zeros(3, dtype=np.float32)
        xp.maximum.at(ok, idx, xp.ones(2, dtype=np.float32))
        xp.add.at(xp.zeros(3, dtype=np.int64), idx, xp.ones(2, dtype=np.int64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_backward_kernel_matches_reference(kd, dtype):
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 50, (64, 9))
    grad = rng.standard_normal((64, 9, 16)).astype(dtype)
    out = K.embedding_backward(kd.xp, kd.put(ids), kd.put(grad), 50)
    np.testing.assert_allclose(kd.get(out), K.reference_embedding_backward(np, ids, grad, 50),
                               **(_tol(dtype) if dtype == np.float64
                                  else dict(rtol=1e-4, atol=1e-4)))


@pytest.mark.parametrize("n", [1, 5, 4099])
def test_philox_kernels_match_the_reference_bit_for_bit(kd, n):
    key = (0x12345678, 0x9ABCDEF0)
    start = (1 << 32) - 3                       # the block counter carries into its high word
    for dtype in (np.float32, np.float64):
        state = kd.put(K.philox_state(np, key, start))
        ref = K.philox_uniform(np, K.philox_state(np, key, start), n, dtype)
        np.testing.assert_array_equal(kd.get(K.philox_uniform(kd.xp, state, n, dtype)), ref)
        K.philox_advance(kd.xp, state, n, dtype)
        per = 4 if dtype == np.float32 else 2
        assert kd.get(state).tolist() == [start + (n + per - 1) // per, key[0], key[1]]
    state = kd.put(K.philox_state(np, key, 2))
    np.testing.assert_array_equal(kd.get(K.philox_bits(kd.xp, state, n)),
                                  K.philox_bits(np, K.philox_state(np, key, 2), n))


def test_gpu_kernel_compile_error_names_the_file(gpu_device, tmp_path, monkeypatch):
    (tmp_path / "gpu_broken.cu").write_text('extern "C" __global__ void k() { nope; }\n')
    monkeypatch.setenv("GRADTAPE_KERNEL_DIR", str(tmp_path))
    with pytest.raises(K.KernelCompileError) as info:
        K.get_kernel("gpu_broken.cu", "k")
    assert "gpu_broken.cu" in str(info.value) and "nope" in str(info.value)


# --- a whole training step through the kernels ------------------------------------------------

def _strict_kernels(monkeypatch, launches):
    """Route the strict device's kernel calls to the host-built kernels: strict arrays stand
    for CuPy arrays, so every launcher takes its GPU branch (launch geometry, contiguity,
    dtypes, state buffers) on data the host cannot otherwise read."""
    from gradtape.backend.strict import StrictArray
    _host_cuda.on_host_kernels(monkeypatch)

    def get_kernel(file, name):
        kernel = _host_cuda.host_kernel(file, name)

        def launch(grid, block, args):
            launches.append(name)
            kernel(grid, block, tuple(a._a if type(a) is StrictArray else a for a in args))
        return launch
    monkeypatch.setattr(K, "get_kernel", get_kernel)
    monkeypatch.setattr(K, "is_cupy_array", lambda a: type(a) is StrictArray)


def _kernel_step_model(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(20, 6), (6, 10), (10,), (10,), (10,), (10, 5), (5,), (3, 3, 2, 3), (12, 5)]
    return [gt.Variable((rng.standard_normal(s) * 0.5).astype(np.float32)) for s in shapes]


def _kernel_steps(n_steps, captured=False):
    """An embedding, gelu and relu layers, layer norm, dropout, a convolution with max and
    average pooling, sparse and dense cross-entropy and log-softmax, trained with Adam, AdamW
    and SGD with momentum: every kernel file."""
    from gradtape.ops import fused
    params = _kernel_step_model()
    emb, w1, b1, gamma, beta, w2, b2, filters, w3 = params
    opts = [gt.optimizers.Adam(0.01), gt.optimizers.AdamW(0.01, weight_decay=0.1),
            gt.optimizers.SGD(0.05, momentum=0.9)]
    groups = [[emb, w1, b1], [gamma, beta], [w2, b2, filters, w3]]
    images = gt.constant(np.random.default_rng(7).standard_normal((4, 6, 5, 2))
                         .astype(np.float32))
    rng = gt.random.Generator.from_seed(4)
    ids = gt.constant(np.array([[1, 3], [3, 19], [0, 7], [7, 7]], np.int32))
    labels = gt.constant(np.array([0, 4, 2, 1], np.int32))
    soft = gt.constant(np.full((4, 5), 0.2, np.float32))

    def step(ids, labels, soft):
        with gt.GradientTape() as tape:
            h = gt.reduce_sum(gt.nn.embedding_lookup(emb, ids), axis=1)
            h = fused.fused_bias_act(gt.matmul(h, w1), b1, "gelu")
            h = fused.fused_layer_norm(h, gamma, beta)
            h = gt.nn.dropout(fused.fused_bias_act(h, None, "relu"), 0.3, rng=rng)
            c = gt.nn.relu(gt.nn.conv2d(images, filters, 1, "SAME"))
            c = gt.nn.avg_pool2d(gt.nn.max_pool2d(c, 2, 1, "SAME"), [3, 2], 2, "VALID")
            logits = gt.matmul(h, w2) + b2 + gt.matmul(gt.reshape(c, (4, 12)), w3)
            loss = (gt.reduce_mean(fused.fused_sparse_softmax_cross_entropy(labels, logits))
                    + gt.reduce_mean(fused.fused_softmax_cross_entropy(soft, logits))
                    - 0.1 * gt.reduce_mean(fused.fused_log_softmax(logits)))
        grads = tape.gradient(loss, params)
        k = 0
        for opt, group in zip(opts, groups):
            opt.apply_gradients(zip(grads[k:k + len(group)], group))
            k += len(group)
        return loss
    fn = gt.capture(step) if captured else step
    losses = [float(fn(ids, labels, soft)) for _ in range(n_steps)]
    return losses, [p.numpy() for p in params]


@pytest.mark.skipif(_host_cuda.compiler() is None, reason="no C++ compiler for the host build")
def test_training_steps_through_the_kernels_match_the_references(monkeypatch):
    """The same steps on the strict device with the references, then with every launcher
    taking its GPU branch into the host-built kernels, eagerly and captured: the same
    losses and weights (dropout included: the Philox kernel and reference agree bit for
    bit), and every kernel file is used."""
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        want_losses, want = _kernel_steps(3)
    launches = []
    _strict_kernels(monkeypatch, launches)
    for captured in (False, True):
        launches.clear()
        with gt.device(dev):
            dev.reset_counters()
            losses, got = _kernel_steps(3, captured=captured)
        np.testing.assert_allclose(losses, want_losses, rtol=2e-5)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
        names = set(launches)
        for prefix in ("bias_act_forward", "bias_act_backward", "act_backward_from_output",
                       "layer_norm_forward", "layer_norm_backward", "softmax_xent_sparse",
                       "softmax_xent_dense", "log_softmax", "adam", "sgd_momentum",
                       "embedding_backward", "philox", "im2col", "max_pool_grad",
                       "avg_pool_grad"):
            assert any(n.startswith(prefix) for n in names), (prefix, sorted(names))


@pytest.mark.skipif(_host_cuda.compiler() is None, reason="no C++ compiler for the host build")
def test_row_gathers_differentiate_through_the_embedding_kernel(monkeypatch):
    """gather on axis 0, embedding_lookup and x[ids] take their gradient from the
    scatter-add kernel on a device: negative ids count from the end, repeated ids sum, and
    ids out of range (zeros on a device) get no gradient."""
    rng = np.random.default_rng(2)
    table = rng.standard_normal((6, 3, 2)).astype(np.float32)
    ids = np.array([[0, 5, 5], [2, 4, 0]], np.int32)
    negative = np.array([[0, -1, 5], [2, -6, -6]], np.int32)      # (x[ids] counts from the end)
    out_of_range = np.array([1, 9, -7, 3], np.int64)

    def grads(oob):
        t = gt.Variable(table)
        with gt.GradientTape(persistent=True) as tape:
            w = gt.constant(np.arange(36, dtype=np.float32).reshape(2, 3, 3, 2))
            a = gt.reduce_sum(gt.nn.embedding_lookup(t, gt.constant(ids)) * w)
            b = gt.reduce_sum(t[gt.constant(negative)] ** 2)
            if oob:      # (the CPU raises; a device reads zeros and trains nothing)
                c = gt.reduce_sum(gt.gather(t, gt.constant(out_of_range)) * 3.0)
        return ([tape.gradient(v, t).numpy() for v in (a, b)],
                tape.gradient(c, t).numpy() if oob else None)
    with gt.device("cpu"):
        want, _ = grads(False)
    launches = []
    _strict_kernels(monkeypatch, launches)
    with gt.device("strict:0"):
        got, got_oob = grads(True)
    assert sum(n.startswith("embedding_backward") for n in launches) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    expect = np.zeros_like(table)
    expect[1] = expect[3] = 3.0
    np.testing.assert_array_equal(got_oob, expect)


@pytest.mark.skipif(_host_cuda.compiler() is None, reason="no C++ compiler for the host build")
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8])
def test_narrow_ids_of_a_long_table_take_the_embedding_kernel(monkeypatch, dtype):
    """ids whose dtype cannot hold the table's row count: the ids are widened before
    negative ones are counted from the end (x[ids] counts them so; gather does not)."""
    ids = np.array([1, 3, -1, 3] if np.dtype(dtype).kind == "i" else [1, 3, 255, 3], dtype)
    table = np.ones((40000, 2), np.float32)

    def grad():
        t = gt.Variable(table)
        with gt.GradientTape() as tape:
            loss = gt.reduce_sum(t[gt.constant(ids)] * 2.0)
        return tape.gradient(loss, t).numpy()
    want = np.zeros_like(table)
    np.add.at(want, ids.astype(np.int64), 2.0)
    launches = []
    _strict_kernels(monkeypatch, launches)
    with gt.device("strict:0"):
        got = grad()
    assert "embedding_backward_f32" in launches
    np.testing.assert_array_equal(got, want)


def _window_case(x, w, conv, pool):
    """conv2d then max_pool2d, the loss's gradients, and a second-order term through both."""
    xv, wv = gt.Variable(x), gt.Variable(w)
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = gt.nn.conv2d(xv, wv, **conv)
            z = gt.nn.max_pool2d(y, **pool)
            a = gt.nn.avg_pool2d(y, **pool)
            loss = gt.reduce_sum(z * z) + gt.reduce_sum(a * a * a)
        gx, gw = inner.gradient(loss, [xv, wv])
        penalty = gt.reduce_sum(gx * gx) + gt.reduce_sum(gw * gw)
    hx, hw = outer.gradient(penalty, [xv, wv])
    return [t.numpy() for t in (y, z, a, gx, gw, hx, hw)]


@pytest.fixture(params=[pytest.param("gpu", marks=pytest.mark.gpu), "host"])
def window_device(request, monkeypatch):
    """(device, kernel names launched): gpu:0 with its kernels, or the strict device with
    each launcher's GPU branch routed to the host-built kernels."""
    launches = []
    if request.param == "gpu":
        dev = gpu_or_skip()
        real = K.get_kernel

        def recording(file, name):
            launches.append(name)
            return real(file, name)
        monkeypatch.setattr(K, "get_kernel", recording)
        return dev, launches
    if _host_cuda.compiler() is None:
        pytest.skip("no C++ compiler for the host build")
    _strict_kernels(monkeypatch, launches)
    return gt.get_device("strict:0"), launches


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", [
    # (x shape, filter shape, conv arguments, pool arguments)
    ((2, 7, 6, 3), (3, 3, 3, 4), {"strides": 1, "padding": "SAME"},
     {"ksize": 2, "strides": 2, "padding": "VALID"}),
    ((2, 9, 8, 2), (3, 2, 2, 3), {"strides": [1, 2], "padding": "VALID", "dilations": 1},
     {"ksize": 3, "strides": 1, "padding": "SAME"}),
    ((1, 10, 9, 2), (2, 3, 2, 2), {"strides": 1, "padding": [[0, 0], [2, 1], [1, 2], [0, 0]],
                                   "dilations": [2, 2]},
     {"ksize": [1, 3, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}),
    # one image whose patches exceed the block budget: row bands of one image
    ((1, 48, 40, 8), (3, 3, 8, 1), {"strides": 1, "padding": "SAME"},
     {"ksize": 3, "strides": 2, "padding": "SAME"}),
], ids=["same-s1", "valid-s12-overlapping-pool", "explicit-pad-dilated", "row-bands"])
def test_convolution_and_pooling_through_the_window_kernels_match_the_cpu(window_device, case,
                                                                         dtype):
    """conv2d (forward, input and filter gradients), max_pool2d and avg_pool2d (forward,
    gradient, and its derivative) with window.cu's kernels give the CPU's numbers:
    strides, dilations, explicit and SAME padding, overlapping pooling windows with tied
    maxima (the first tap of a window takes its gradient), and row bands of one image."""
    xs, ws, conv, pool = case
    rng = np.random.default_rng(5)
    if xs[1] == 9:        # small integers: many windows with tied maxima
        x = rng.integers(-2, 3, xs).astype(dtype)
        w = rng.integers(-1, 2, ws).astype(dtype)
    else:
        x = rng.standard_normal(xs).astype(dtype)
        w = (rng.standard_normal(ws) * 0.5).astype(dtype)
    with gt.device("cpu"):
        want = _window_case(x, w, conv, pool)
    dev, launches = window_device
    with gt.device(dev):
        got = _window_case(x, w, conv, pool)
    suffix = "f32" if dtype == np.float32 else "f64"
    for name in ("im2col", "col2im_add", "max_pool", "max_pool_grad", "max_pool_gather",
                 "avg_pool", "avg_pool_grad"):
        assert f"{name}_{suffix}" in launches, (name, sorted(set(launches)))
    # (the same patches and sums as the CPU; on a GPU cuBLAS orders the products' sums
    # its own way)
    rel = (2e-5 if dev.kind != "gpu" else 2e-4) if dtype == np.float32 else 1e-11
    for label, g, wnt in zip(("conv", "max pool", "avg pool", "dx", "dw", "d2x", "d2w"), got,
                             want):
        np.testing.assert_allclose(g, wnt, rtol=rel, atol=rel * float(np.abs(wnt).max()),
                                   err_msg=label)


def test_max_pool_kernels_follow_nan_and_ties_as_the_cpu(window_device):
    """A NaN in a window wins the maximum and takes no gradient; of tied maxima the first tap
    (row-major) takes the gradient; bit for bit the CPU's results."""
    x = np.array([[1, 3, 3, 0], [3, 2, np.nan, 1], [0, 0, 5, 5], [0, 0, 5, 5]],
                 np.float32).reshape(1, 4, 4, 1)
    g = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)

    def run():
        xv = gt.constant(x)
        with gt.GradientTape() as tape:
            tape.watch(xv)
            y = gt.nn.max_pool2d(xv, 2, 1, "VALID")
        return y.numpy(), tape.gradient(y, xv, output_gradients=gt.constant(g)).numpy()
    with gt.device("cpu"):
        want = run()
    dev, launches = window_device
    with gt.device(dev):
        got = run()
    assert {"max_pool_f32", "max_pool_grad_f32"} <= set(launches)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert np.isnan(got[0][0, 0, 1, 0]) and got[1][0, 0, 1, 0] == 1.0


@pytest.mark.skipif(_host_cuda.compiler() is None, reason="no C++ compiler for the host build")
def test_window_kernels_with_64_bit_indices_match_the_cpu(monkeypatch):
    """The window kernels index in 32 bits when a launch's arrays are below 2^30 elements,
    else in 64: the 64-bit bodies (forced by a limit of 0) give the same numbers."""
    source = K.kernel_source
    monkeypatch.setattr(K, "kernel_source", lambda name: (
        "#define GT_WINDOW_INT_LIMIT 0\n" if name == "window.cu" else "") + source(name))
    x = np.random.default_rng(1).standard_normal((2, 9, 7, 3)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((3, 2, 3, 4)).astype(np.float32)
    conv = {"strides": [2, 1], "padding": [[0, 0], [1, 2], [2, 0], [0, 0]], "dilations": 1}
    pool = {"ksize": 3, "strides": 1, "padding": "SAME"}
    with gt.device("cpu"):
        want = _window_case(x, w, conv, pool)
    launches = []
    _strict_kernels(monkeypatch, launches)
    with gt.device("strict:0"):
        got = _window_case(x, w, conv, pool)
    assert {"im2col_f32", "col2im_add_f32", "max_pool_grad_f32", "avg_pool_grad_f32"} <= \
        set(launches)
    for g, wnt in zip(got, want):
        np.testing.assert_allclose(g, wnt, rtol=2e-5, atol=2e-5 * float(np.abs(wnt).max()))
