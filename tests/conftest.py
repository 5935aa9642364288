"""Shared fixtures: the ``device`` axis every device-aware test runs along.

A test that takes ``device`` runs once per device: ``cpu`` (NumPy), ``strict`` (the strict
test device: NumPy arrays behind CuPy's rules, catching host leaks and host syncs on a
CPU-only machine) and ``gpu`` (CuPy on ``gpu:0``; marked ``gpu`` and skipped with the
reason when no CUDA GPU is usable). The test body runs inside ``gt.device(device)``, so
tensors it creates land there; the fixture's value is the :class:`gradtape.Device`.
"""
from __future__ import annotations

import pytest

import gradtape as gt
from gradtape import backend

DEVICE_PARAMS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("strict", id="strict"),
    pytest.param("gpu", id="gpu", marks=pytest.mark.gpu),
]


def gpu_or_skip():
    """``gpu:0``, or skip the test with the reason no GPU is usable."""
    reason = backend.gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no usable CUDA GPU: {reason}")
    return gt.get_device("gpu:0")


def resolve_device(kind: str):
    if kind == "gpu":
        return gpu_or_skip()
    if kind == "strict":
        dev = gt.get_device("strict:0")
        dev.reset_counters()
        return dev
    return gt.get_device("cpu")


@pytest.fixture(params=DEVICE_PARAMS)
def device(request):
    """Each device in turn (cpu, strict, gpu); the test runs inside its ``gt.device`` scope."""
    dev = resolve_device(request.param)
    with gt.device(dev):
        yield dev


@pytest.fixture
def gpu_device():
    """``gpu:0`` (the test is skipped, with the reason, when no CUDA GPU is usable)."""
    dev = gpu_or_skip()
    with gt.device(dev):
        yield dev


def pytest_collection_modifyitems(config, items):
    """Tests using ``gpu_device`` are GPU tests too (``pytest -m gpu`` selects them)."""
    for item in items:
        if "gpu_device" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)
