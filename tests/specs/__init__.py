"""The gradient-check spec table: one :class:`Spec` per differentiable function.

Each module in this package exports ``SPECS``; ``tests/test_gradcheck.py`` checks every
spec's first and second derivatives against float64 central differences for every input
shape group, and float32 against float64. ``ops`` names the registry primitives a spec
covers: a primitive that no spec covers fails ``test_every_op_has_a_spec``.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Callable

import numpy as np


def normal(rng, shape):
    return rng.standard_normal(shape)


def positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def unit(rng, shape):
    return rng.uniform(-0.8, 0.8, shape)


def away_from_zero(rng, shape):
    x = rng.uniform(0.3, 2.0, shape)
    return x * rng.choice([-1.0, 1.0], shape)


def distinct(rng, shape):
    """Values far from each other (no ties for max/min/sort-like ops)."""
    n = int(np.prod(shape)) if shape else 1
    vals = rng.permutation(n).astype(np.float64) * 0.5 - n * 0.25
    return vals.reshape(shape)


@dataclasses.dataclass
class Spec:
    name: str
    fn: Callable
    shapes: list                      # list of cases; a case is a tuple of input shapes
    ops: tuple = ()                   # registry primitives covered (default: (name,))
    domain: Callable = normal         # rng, shape -> float64 array (one for all inputs)
    domains: tuple | None = None      # per-input domains, overrides ``domain``
    order: int = 2                    # highest derivative order checked
    rtol: float = 1e-5
    atol: float = 1e-6
    f32_rtol: float = 2e-3            # float32 gradients vs float64 ones
    wrt: tuple | None = None          # argument positions differentiated (default: all)
    eps: float = 1e-6                 # finite-difference step

    def covered(self):
        return self.ops or (self.name,)

    def inputs(self, case, seed=0):
        rng = np.random.default_rng(seed)
        doms = self.domains or (self.domain,) * len(case)
        return [np.asarray(d(rng, s), dtype=np.float64) for d, s in zip(doms, case)]


BROADCAST = [((3, 4), (3, 4)), ((), (3, 4)), ((3, 4), (3, 1)), ((1, 4), (3, 4)),
             ((2, 3, 4), (4,))]
UNARY = [((),), ((5,),), ((3, 4),)]


def all_specs():
    specs = []
    for mod in pkgutil.iter_modules(__path__):
        m = importlib.import_module(f"{__name__}.{mod.name}")
        specs.extend(getattr(m, "SPECS", []))
    return specs
