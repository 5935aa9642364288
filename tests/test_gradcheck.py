"""Every differentiable primitive, every input-shape group: first and second derivatives
against float64 central differences, and float32 gradients against float64 ones."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.registry import REGISTRY
from gradtape.testing import check_grads

from conftest import resolve_device
from specs import all_specs

SPECS = all_specs()
CASES = [pytest.param(spec, case, id=f"{spec.name}-{'x'.join(map(str, case))}")
         for spec in SPECS for case in spec.shapes]

# Primitives exercised only by the engine and checked by their own tests.
ENGINE_ONLY = {"sum_to_batched": "vectorised Jacobians (tests/test_jacobian.py)",
               "copy_to_device": "device copies (tests/test_devices.py)"}


@pytest.mark.parametrize("spec,case", CASES)
def test_against_finite_differences(spec, case):
    args = spec.inputs(case)
    check_grads(spec.fn, args, order=spec.order, wrt=spec.wrt, rtol=spec.rtol, atol=spec.atol,
                eps=spec.eps)


@pytest.mark.parametrize("spec,case", CASES)
def test_float32_gradient_matches_float64(spec, case):
    args = spec.inputs(case)
    wrt = list(spec.wrt) if spec.wrt is not None else list(range(len(args)))
    results = {}
    for dt in (np.float64, np.float32):
        ts = [gt.constant(a.astype(dt)) for a in args]
        with gt.GradientTape() as tape:
            for i in wrt:
                tape.watch(ts[i])
            out = spec.fn(*ts)
            w = gt.constant(np.random.default_rng(3).standard_normal(out.shape).astype(dt))
            y = gt.reduce_sum(out * w)
        grads = tape.gradient(y, [ts[i] for i in wrt])
        for g, i in zip(grads, wrt):
            if g is not None:
                assert g.dtype == gt.as_dtype(dt), (spec.name, g.dtype, dt)
                assert tuple(g.shape) == tuple(args[i].shape)
        results[dt] = [None if g is None else g.numpy().astype(np.float64) for g in grads]
    for g64, g32 in zip(results[np.float64], results[np.float32]):
        assert (g64 is None) == (g32 is None)
        if g64 is not None:
            scale = max(1.0, float(np.abs(g64).max()))
            np.testing.assert_allclose(g32, g64, rtol=spec.f32_rtol, atol=spec.f32_rtol * scale)


def test_every_op_has_a_spec():
    covered = set()
    for s in SPECS:
        covered.update(s.covered())
    missing = sorted(name for name, op in REGISTRY.items()
                     if not op.nondiff and op.vjp is not None and name not in covered
                     and name not in ENGINE_ONLY)
    assert not missing, f"differentiable primitives without a gradient-check spec: {missing}"


def test_specs_name_registered_ops():
    unknown = sorted({o for s in SPECS for o in s.covered()} - set(REGISTRY)
                     - {s.name for s in SPECS if not s.ops})
    assert not unknown, f"specs name primitives that do not exist: {unknown}"


@pytest.mark.parametrize("devname", [pytest.param("strict", id="strict"),
                                     pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("spec,case", CASES)
def test_on_every_device_like_cpu_without_host_syncs(spec, case, devname):
    """Forward, first and second derivatives on each device equal the CPU's (float32), and
    on a device nothing crosses to the host while they are computed."""
    device = resolve_device(devname)
    args = [a.astype(np.float32) for a in spec.inputs(case)]
    wrt = list(spec.wrt) if spec.wrt is not None else list(range(len(args)))

    def run(dev):
        with gt.device(dev):
            ts = [gt.constant(a) for a in args]
            w = gt.constant(np.random.default_rng(5).standard_normal(
                spec.fn(*ts).shape).astype(np.float32))
            before = gt.config.sync_count(dev)
            with gt.GradientTape() as outer:
                outer.watch([ts[i] for i in wrt])
                with gt.GradientTape() as inner:
                    inner.watch([ts[i] for i in wrt])
                    out = spec.fn(*ts)
                    y = gt.reduce_sum(out * w)
                grads = inner.gradient(y, [ts[i] for i in wrt])
                gsum = gt.add_n([gt.reduce_sum(g * g) for g in grads if g is not None]) \
                    if any(g is not None for g in grads) else None
            second = outer.gradient(gsum, [ts[i] for i in wrt]) if gsum is not None \
                else [None] * len(wrt)
            syncs = gt.config.sync_count(dev) - before
            host = [None if t is None else t.numpy() for t in [out] + list(grads) + list(second)]
        return host, syncs

    ref, _ = run(gt.get_device("cpu"))
    got, syncs = run(device)
    # boolean masks (data-dependent shapes) and the sorted segment ops (whose segment count
    # is the last id, read back as TF's GPU kernels do) are the legitimate waits
    if "mask" not in spec.name and not spec.name.startswith("segment_"):
        assert syncs == 0, f"{spec.name}: {syncs} host synchronisations on {device}"
    if "dropout" in spec.name:
        return  # random streams are per device: same seed, same numbers on the same device
    for r, g in zip(ref, got):
        assert (r is None) == (g is None)
        if r is not None:
            scale = max(1.0, float(np.abs(r).max()))
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * scale)
