"""What every implementation of the suite provides to the worker."""
from __future__ import annotations

import functools

import numpy as np

from .spec import BETA_1, BETA_2, CASES, EPSILON, LEARNING_RATE


class Unsupported(Exception):
    """This implementation cannot run this case here (a missing API, no GPU build ...).

    The message is shown in the report as the reason the cell is empty.
    """


class Runner:
    """One case at one size, built from the shared inputs.

    ``step()`` is what is timed; ``sync()`` waits for work queued on a device (GPU, or an
    asynchronous runtime) so that a timed batch ends only when its work is done;
    ``check()``, called on a freshly built runner, runs the computation once and returns
    its outputs as host NumPy arrays named as in :func:`benchmarks.cases.spec.compare`.
    """

    #: How the implementation does this case, when it is not the obvious API (shown in notes).
    note = ""

    def step(self):
        raise NotImplementedError

    def sync(self):
        """Wait for queued work; the default is for synchronous libraries."""

    def check(self) -> dict:
        raise NotImplementedError


class BareCall(Runner):
    """Times ``fn(*args)`` with nothing around the call (``step`` is a ``functools.partial``);
    ``check`` returns the result as output ``y``."""

    def __init__(self, fn, *args):
        self.step = functools.partial(fn, *args)

    def check(self) -> dict:
        return {"y": to_host(self.step())}


class Implementation:
    """A framework (or the hand-written floor) able to build :class:`Runner` objects."""

    #: Registry name (set by subclasses).
    name = ""
    #: Whether its arrays are allocated through Python's tracked allocators, so that
    #: tracemalloc sees them (NumPy does; PyTorch, XLA and TensorFlow do not).
    traced_memory = False

    def __init__(self, device: str):
        self.device = device

    @property
    def label(self) -> str:
        """Name and version for tables."""
        return self.name

    def threads(self) -> int | None:
        """Intra-op threads this library uses, when it says."""
        return None

    def build(self, case: str, size: str, data: dict) -> Runner:
        """A runner for ``case`` at ``size``; raises :class:`Unsupported` when it cannot."""
        method = getattr(self, "case_" + case, None)
        if method is None:
            raise Unsupported(f"{self.name} has no {case} case")
        return method(CASES[case].sizes[size], data)


def to_host(value) -> np.ndarray:
    """Any array-like (NumPy, CuPy, a framework tensor with ``.numpy()``) as a NumPy array."""
    if hasattr(value, "get") and not isinstance(value, np.ndarray) and not isinstance(value, dict):
        return np.asarray(value.get())
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    return np.asarray(value)


def training_outputs(names, loss, grads, before, after) -> dict:
    """The check outputs of a training step: loss, gradients, parameter updates."""
    out = {"loss": to_host(loss).reshape(())}
    for name, g, b, a in zip(names, grads, before, after):
        out["grad/" + name] = to_host(g)
        out["update/" + name] = to_host(a) - to_host(b)
    return out


class HandAdam:
    """Adam in Keras's form, written by hand on raw arrays of namespace ``xp`` (in place).

    ``m += (g - m)(1 - b1)``, ``v += (g^2 - v)(1 - b2)``,
    ``p -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps)``. One scratch array lives at a
    time (the size of the parameter being updated), so the update adds little to the peak.
    """

    def __init__(self, xp, params):
        self.xp = xp
        self.t = 0
        self.m = [xp.zeros_like(p) for p in params]
        self.v = [xp.zeros_like(p) for p in params]

    def update(self, params, grads):
        """Update each array of ``params`` in place from ``grads``."""
        xp = self.xp
        self.t += 1
        alpha = LEARNING_RATE * float(np.sqrt(1.0 - BETA_2 ** self.t)) / (1.0 - BETA_1 ** self.t)
        for p, g, m, v in zip(params, grads, self.m, self.v):
            tmp = xp.subtract(g, m)
            tmp *= 1.0 - BETA_1
            m += tmp
            xp.multiply(g, g, out=tmp)
            tmp -= v
            tmp *= 1.0 - BETA_2
            v += tmp
            xp.sqrt(v, out=tmp)
            tmp += EPSILON
            xp.divide(m, tmp, out=tmp)
            tmp *= alpha
            p -= tmp
