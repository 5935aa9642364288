"""The benchmark suite behind ``python -m gradtape bench`` and ``benchmarks/run_all.py``.

Modules:

- :mod:`.spec`: the cases, their four sizes, the deterministic inputs every implementation
  starts from, and the agreement check against the hand-written NumPy floor.
- :mod:`.impl_numpy`: the floor, forward and backward written by hand (NumPy, or CuPy on a GPU).
- :mod:`.impl_gradtape`, :mod:`.impl_torch`, :mod:`.impl_jax`, :mod:`.impl_tensorflow`,
  :mod:`.impl_autograd`: the same computations in each framework.
- :mod:`.worker`: the long-lived subprocess that runs one implementation and answers the
  driver (:mod:`gradtape.bench`) over stdin/stdout, one JSON object a line.
"""
from __future__ import annotations

#: Implementation name -> "module:Class". The driver starts one worker per entry; a name of
#: the form "package.module:Class" outside this table names a plug-in implementation.
IMPLEMENTATIONS = {
    "numpy": "benchmarks.cases.impl_numpy:NumpyByHand",
    "gradtape": "benchmarks.cases.impl_gradtape:Gradtape",
    "torch": "benchmarks.cases.impl_torch:Torch",
    "jax": "benchmarks.cases.impl_jax:JaxEager",
    "jax-jit": "benchmarks.cases.impl_jax:JaxJit",
    "tensorflow": "benchmarks.cases.impl_tensorflow:TensorflowEager",
    "autograd": "benchmarks.cases.impl_autograd:Autograd",
}

#: The implementation every ratio is taken against.
FLOOR = "numpy"
