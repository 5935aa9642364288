"""The benchmark cases, their sizes, their inputs and the agreement check.

Every implementation builds the same computation from the same host arrays
(:func:`make_data`, seeded), so its outputs can be compared with the hand-written NumPy
floor before anything is timed (:func:`compare`).

Cases (each at four sizes, ``tiny`` to ``large``; ``standard`` marks the headline size):

- ``notape``: one ``tanh`` with no tape or trace active: the cost of an op outside autodiff.
- ``opchain``: ``y = tanh(y * 1.01 + 0.1)`` 100 times (300 ops) on a float32 vector, then the
  gradient of ``sum(y)``: per-op overhead.
- ``mlp``: one training step of a 784-H-H-10 ReLU MLP with sparse softmax cross-entropy,
  forward, backward and an Adam update (Keras semantics).
- ``cnn``: one training step of conv3x3-relu-maxpool2-conv3x3-relu-maxpool2-dense on
  single-channel NHWC images (``SAME`` convolutions, stride 1), with Adam.
- ``jacobian``: the full Jacobian of ``tanh(W @ x)`` with respect to ``x`` (``W`` is n x n).
- ``hvp``: the Hessian-vector product of ``0.5 * sum(tanh(W @ x) ** 2)`` along ``v``.
- ``secondorder``: the gradient, with respect to the MLP weights, of the squared norm of the
  gradient of the MLP loss (double backward).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SIZES = ("tiny", "small", "medium", "large")

#: Adam hyperparameters of the training cases (Keras defaults).
LEARNING_RATE = 1e-3
BETA_1 = 0.9
BETA_2 = 0.999
EPSILON = 1e-7

#: Op-chain constants.
CHAIN_STEPS = 100
CHAIN_SCALE = 1.01
CHAIN_SHIFT = 0.1

MLP_INPUTS = 784
N_CLASSES = 10

MLP_PARAMS = ("w1", "b1", "w2", "b2", "w3", "b3")
CNN_PARAMS = ("k1", "c1", "k2", "c2", "w", "b")


@dataclass(frozen=True)
class Case:
    """One benchmark: its name, a one-line title, the parameters of each size."""

    name: str
    title: str
    sizes: dict
    standard: str
    training: bool = False
    #: True when the peak traced memory of one call is reported for the standard size.
    memory: bool = False
    params: tuple = field(default=())

    def describe(self, size: str) -> str:
        """A short description of the problem at ``size`` for tables and plots."""
        p = self.sizes[size]
        if self.name in ("notape", "opchain"):
            return f"{p['n']} floats"
        if self.name in ("mlp", "secondorder"):
            h = p["hidden"]
            return f"{MLP_INPUTS}-{h}-{h}-{N_CLASSES}, batch {p['batch']}"
        if self.name == "cnn":
            s = p["image"]
            return f"{s}x{s}x1, {p['c1']}/{p['c2']} ch, batch {p['batch']}"
        return f"n={p['n']}"


CASES = {
    "notape": Case(
        "notape", "one op, no tape (tanh)",
        {"tiny": {"n": 16}, "small": {"n": 1024}, "medium": {"n": 65536},
         "large": {"n": 1048576}},
        standard="tiny"),
    "opchain": Case(
        "opchain", "op chain (300 ops)",
        {"tiny": {"n": 16}, "small": {"n": 1024}, "medium": {"n": 16384},
         "large": {"n": 262144}},
        standard="tiny"),
    "mlp": Case(
        "mlp", "MLP train step (Adam)",
        {"tiny": {"batch": 16, "hidden": 32}, "small": {"batch": 64, "hidden": 128},
         "medium": {"batch": 128, "hidden": 512}, "large": {"batch": 256, "hidden": 1024}},
        standard="medium", training=True, memory=True, params=MLP_PARAMS),
    "cnn": Case(
        "cnn", "CNN train step (Adam)",
        {"tiny": {"batch": 8, "image": 8, "c1": 4, "c2": 8},
         "small": {"batch": 32, "image": 8, "c1": 8, "c2": 16},
         "medium": {"batch": 32, "image": 28, "c1": 8, "c2": 16},
         "large": {"batch": 64, "image": 28, "c1": 16, "c2": 32}},
        standard="medium", training=True, memory=True, params=CNN_PARAMS),
    "jacobian": Case(
        "jacobian", "Jacobian of tanh(W@x)",
        {"tiny": {"n": 16}, "small": {"n": 64}, "medium": {"n": 256}, "large": {"n": 1024}},
        standard="medium"),
    "hvp": Case(
        "hvp", "Hessian-vector product",
        {"tiny": {"n": 16}, "small": {"n": 64}, "medium": {"n": 256}, "large": {"n": 2048}},
        standard="medium"),
    "secondorder": Case(
        "secondorder", "2nd order: grad of grad norm (MLP)",
        {"tiny": {"batch": 16, "hidden": 32}, "small": {"batch": 64, "hidden": 128},
         "medium": {"batch": 128, "hidden": 512}, "large": {"batch": 256, "hidden": 1024}},
        standard="medium", memory=True, params=MLP_PARAMS),
}


def _glorot(rng, shape, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def make_data(case: str, size: str, seed: int = 0) -> dict:
    """The host inputs of ``case`` at ``size``: float32 arrays and int32 labels.

    Training cases get Glorot-uniform weights and small random biases (so every gradient
    path is exercised), images or features from a standard normal and labels in ``[0, 10)``.
    """
    p = CASES[case].sizes[size]
    rng = np.random.default_rng(seed)
    if case in ("notape", "opchain"):
        return {"x": np.linspace(-1.0, 1.0, p["n"], dtype=np.float32)}
    if case in ("mlp", "secondorder"):
        b, h = p["batch"], p["hidden"]
        dims = [(MLP_INPUTS, h), (h, h), (h, N_CLASSES)]
        data = {"x": rng.standard_normal((b, MLP_INPUTS), dtype=np.float32),
                "labels": rng.integers(0, N_CLASSES, size=b).astype(np.int32)}
        for i, (fi, fo) in enumerate(dims, 1):
            data[f"w{i}"] = _glorot(rng, (fi, fo), fi, fo)
            data[f"b{i}"] = (0.01 * rng.standard_normal(fo)).astype(np.float32)
        return data
    if case == "cnn":
        b, s, c1, c2 = p["batch"], p["image"], p["c1"], p["c2"]
        flat = (s // 4) * (s // 4) * c2
        return {
            "x": rng.standard_normal((b, s, s, 1), dtype=np.float32),
            "labels": rng.integers(0, N_CLASSES, size=b).astype(np.int32),
            "k1": _glorot(rng, (3, 3, 1, c1), 9, 9 * c1),
            "c1": (0.01 * rng.standard_normal(c1)).astype(np.float32),
            "k2": _glorot(rng, (3, 3, c1, c2), 9 * c1, 9 * c2),
            "c2": (0.01 * rng.standard_normal(c2)).astype(np.float32),
            "w": _glorot(rng, (flat, N_CLASSES), flat, N_CLASSES),
            "b": (0.01 * rng.standard_normal(N_CLASSES)).astype(np.float32),
        }
    if case in ("jacobian", "hvp"):
        n = p["n"]
        data = {"w": (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32),
                "x": rng.standard_normal(n, dtype=np.float32)}
        if case == "hvp":
            data["v"] = rng.standard_normal(n, dtype=np.float32)
        return data
    raise KeyError(f"unknown case {case!r}; known: {', '.join(CASES)}")


#: Agreement tolerance: max |got - ref| <= RTOL * max |ref| for each output array.
RTOL = 2e-3
#: Adam updates are compared only where |grad| >= UPDATE_GRAD_FLOOR (there epsilon's place in
#: the formula, which differs between Keras and PyTorch, changes the step by < 0.5%), to
#: UPDATE_TOL * learning rate.
UPDATE_GRAD_FLOOR = 1e-3
UPDATE_TOL = 0.02


def compare(ref: dict, got: dict) -> list[str]:
    """Problems found comparing an implementation's outputs ``got`` with the floor's ``ref``.

    Outputs are named arrays: ``loss``, ``grad/<param>``, ``update/<param>`` (the change of
    the parameter after one Adam step), ``y``, ``jacobian``, ``hvp``. An empty list means the
    two agree.
    """
    problems = []
    missing = sorted(set(ref) - set(got))
    if missing:
        problems.append(f"missing outputs: {', '.join(missing)}")
    for name in sorted(set(ref) & set(got)):
        r = np.asarray(ref[name], dtype=np.float64)
        g = np.asarray(got[name], dtype=np.float64)
        if r.shape != g.shape:
            problems.append(f"{name}: shape {g.shape}, expected {r.shape}")
            continue
        if not np.all(np.isfinite(g)):
            problems.append(f"{name}: {int(np.sum(~np.isfinite(g)))} non-finite values")
            continue
        if name.startswith("update/"):
            grad = np.abs(np.asarray(ref.get("grad/" + name[7:], r), dtype=np.float64))
            mask = grad >= UPDATE_GRAD_FLOOR
            if not mask.any():
                continue
            err = float(np.max(np.abs(g - r)[mask]))
            tol = UPDATE_TOL * LEARNING_RATE
        else:
            err = float(np.max(np.abs(g - r))) if r.size else 0.0
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            tol = RTOL * scale if scale > 0 else 1e-6
        if err > tol:
            problems.append(f"{name}: max abs error {err:.3g} > tolerance {tol:.3g}")
    return problems
