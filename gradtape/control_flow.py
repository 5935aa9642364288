"""TensorFlow's control flow functions, run eagerly: ``cond``, ``switch_case``,
``while_loop``, ``map_fn``, ``vectorized_map``, ``py_function``, ``numpy_function``.

gradtape is eager, so these call their Python functions directly, and a tape records what
the taken branch or each iteration did, as TF's eager mode does. A predicate or index held
in a device tensor is read on the host (one synchronisation), so a step using them cannot
be captured into a CUDA graph."""
from __future__ import annotations

import numpy as np

from . import nest
from .ops.shape import stack, unstack
from .tensor import Tensor, convert_to_tensor

__all__ = ["cond", "switch_case", "while_loop", "map_fn", "vectorized_map", "py_function",
           "numpy_function"]


def _host_bool(pred, opname) -> bool:
    if isinstance(pred, Tensor):
        if pred._value.size != 1:
            raise ValueError(f"{opname}: the predicate must be a single boolean, got shape "
                             f"{tuple(pred._value.shape)}")
        return bool(pred.numpy().reshape(()))
    if isinstance(pred, (bool, np.bool_, int, np.integer)):
        return bool(pred)
    raise TypeError(f"{opname}: the predicate must be a bool or a boolean tensor, got "
                    f"{type(pred).__name__}")


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` else ``false_fn()``."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must both be callables")
    return true_fn() if _host_bool(pred, "cond") else false_fn()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """``branch_fns[branch_index]()`` (a list, or a dict of int keys); an index with no
    branch runs ``default``, or the last branch when there is no default."""
    if isinstance(branch_index, Tensor):
        index = int(branch_index.numpy().reshape(()))
    elif isinstance(branch_index, (int, np.integer)) and not isinstance(branch_index, bool):
        index = int(branch_index)
    else:
        raise TypeError(f"switch_case: branch_index must be an int, got {branch_index!r}")
    fns = dict(branch_fns) if isinstance(branch_fns, dict) else dict(enumerate(branch_fns))
    if not fns or not all(callable(f) for f in fns.values()):
        raise TypeError("switch_case: branch_fns must be a non-empty list or dict of callables")
    if index in fns:
        return fns[index]()
    if default is not None:
        return default()
    return fns[max(fns)]()


def _loop_value(v):
    return v if isinstance(v, Tensor) else convert_to_tensor(v)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Run ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (at most
    ``maximum_iterations`` times), as TF 2's eager ``tf.while_loop``: ``loop_vars`` is a list
    or tuple (possibly nested) whose Python numbers and arrays become tensors, ``body``
    returns the same structure, and the result is what the last ``body`` call returned (the
    converted ``loop_vars`` when ``cond`` is false at once)."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError(f"while_loop: loop_vars must be a list or tuple of loop variables, "
                        f"got {type(loop_vars).__name__}; wrap a single one as [x]")
    if not loop_vars:
        raise ValueError("while_loop: 'loop_vars' must be provided")
    current = nest.map_structure(_loop_value, loop_vars)
    limit = None if maximum_iterations is None else int(
        maximum_iterations.numpy() if isinstance(maximum_iterations, Tensor)
        else maximum_iterations)
    steps = 0
    while (limit is None or steps < limit) and _host_bool(cond(*current), "while_loop"):
        out = body(*current)
        if not isinstance(out, (list, tuple)):
            raise ValueError(f"while_loop: body must return the structure of loop_vars "
                             f"(a list or tuple of {len(current)} loop variables), got one "
                             f"{type(out).__name__}")
        try:
            nest.assert_same_structure(list(current), list(out), check_types=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"while_loop: body must return the structure of loop_vars: "
                             f"{exc}") from None
        current = nest.map_structure(_loop_value, out)
        steps += 1
    return current


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """``fn`` applied to each slice of ``elems`` along axis 0 (a tensor or a structure of
    tensors of one length), the results stacked in ``fn``'s output structure."""
    flat = [e if isinstance(e, Tensor) else convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("map_fn: elems holds no tensor")
    n = flat[0]._value.shape[0] if flat[0].ndim else None
    if n is None or any(not e.ndim or e._value.shape[0] != n for e in flat):
        raise ValueError(f"map_fn: every tensor of elems needs the same first axis, got "
                         f"shapes {[tuple(e._value.shape) for e in flat]}")
    if n == 0:
        raise ValueError("map_fn: elems is empty along axis 0 (the output shape is unknown)")
    slices = [unstack(e, num=n) for e in flat]
    results = [fn(nest.pack_sequence_as(elems, [s[i] for s in slices])) for i in range(n)]
    first = nest.flatten(results[0])
    columns = [[convert_to_tensor(nest.flatten(r)[j]) for r in results]
               for j in range(len(first))]
    return nest.pack_sequence_as(results[0], [stack(c) for c in columns])


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """As :func:`map_fn` (eagerly, one slice at a time)."""
    return map_fn(fn, elems)


def _as_outputs(values, Tout, opname):
    if Tout is None:
        return None
    many = isinstance(Tout, (list, tuple))
    outs = list(values) if many and isinstance(values, (list, tuple)) else [values]
    types = list(Tout) if many else [Tout]
    if len(outs) != len(types):
        raise ValueError(f"{opname}: the function returned {len(outs)} value(s) for "
                         f"{len(types)} output type(s)")
    tensors = [convert_to_tensor(v, dtype=t) for v, t in zip(outs, types)]
    return tensors if many else tensors[0]


def py_function(func, inp, Tout, name=None):
    """``func(*inp)`` with the tensors as they are (differentiable through what ``func``
    does with them), converted to ``Tout``."""
    return _as_outputs(func(*inp), Tout, "py_function")


def numpy_function(func, inp, Tout, stateful=True, name=None):
    """``func`` on the inputs as NumPy arrays (read to the host), its results as tensors of
    ``Tout`` (not differentiable, as in TF)."""
    args = [v.numpy() if isinstance(v, Tensor) else v for v in inp]
    return _as_outputs(func(*args), Tout, "numpy_function")
