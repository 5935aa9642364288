"""TensorFlow's control flow functions, run eagerly: ``cond``, ``switch_case``, ``case``,
``while_loop``, ``map_fn``, ``vectorized_map``, ``scan``, ``foldl``, ``foldr``,
``py_function``, ``numpy_function``; the gradient helpers ``recompute_grad`` and
``grad_pass_through``; and the graph-building calls that do nothing eagerly
(``control_dependencies``, ``group``, ``no_op``).

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
           "numpy_function", "scan", "foldl", "foldr", "case", "recompute_grad",
           "grad_pass_through", "control_dependencies", "group", "no_op"]


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
    from .tensor_array import TensorArray
    return v if isinstance(v, (Tensor, TensorArray)) else convert_to_tensor(v)


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


# --- scans and folds ---------------------------------------------------------------------------

def _elems_slices(elems, opname):
    """(flat tensors of ``elems``, their common length along axis 0)."""
    flat = [e if isinstance(e, Tensor) else convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{opname}: elems holds no tensor")
    if any(e.ndim == 0 for e in flat):
        raise ValueError(f"{opname}: every tensor of elems needs an axis 0 to iterate over, got "
                         f"shapes {[tuple(e._value.shape) for e in flat]}")
    n = flat[0]._value.shape[0]
    if any(e._value.shape[0] != n for e in flat):
        raise ValueError(f"{opname}: every tensor of elems needs the same first axis, got "
                         f"shapes {[tuple(e._value.shape) for e in flat]}")
    return flat, n


def _fold_steps(fn, elems, initializer, reverse, opname, keep):
    """Run ``acc = fn(acc, elem_i)`` over axis 0 of ``elems`` (from the end when ``reverse``);
    the accumulator starts at ``initializer`` or, without one, at the first (last) slice.
    Returns ``(final accumulator, [accumulator after each position, in elems' order])``
    (the list only when ``keep``)."""
    if not callable(fn):
        raise TypeError(f"{opname}: fn must be callable, got {type(fn).__name__}")
    flat, n = _elems_slices(elems, opname)
    slices = [unstack(e, num=n) for e in flat] if n else [[] for _ in flat]
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))

    def elem(i):
        return nest.pack_sequence_as(elems, [s[i] for s in slices])

    outputs = {}
    if initializer is None:
        if n == 0:
            from .errors import OutOfRangeError
            raise OutOfRangeError(None, None, f"{opname}: elems is empty along axis 0 and no "
                                              "initializer is given (there is no first value)")
        acc = elem(order[0])
        outputs[order[0]] = acc
        order = order[1:]
    else:
        acc = nest.map_structure(_loop_value, initializer)
    for i in order:
        out = fn(acc, elem(i))
        try:
            nest.assert_same_structure(acc, out, check_types=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{opname}: fn must return the structure of the accumulator: "
                             f"{exc}") from None
        acc = nest.map_structure(_loop_value, out)
        if keep:
            outputs[i] = acc
    return acc, [outputs[i] for i in sorted(outputs)] if keep else None


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Every accumulator of ``acc = fn(acc, x)`` over the slices ``x`` of ``elems`` along axis
    0 (a tensor or a structure of tensors of one length), stacked in the accumulator's
    structure, as ``tf.scan``. Without ``initializer`` the accumulator starts as the first
    slice (the last with ``reverse``), which is also the first output, and ``fn`` must keep
    ``elems``' structure. Differentiable through what ``fn`` does."""
    acc, outs = _fold_steps(fn, elems, initializer, reverse, "scan", keep=True)
    if not outs:     # empty elems with an initializer: no step, empty outputs
        return nest.map_structure(
            lambda a: Tensor(_empty_rows(a), a._device), acc)
    flat = [nest.flatten(o) for o in outs]
    return nest.pack_sequence_as(acc, [stack([f[j] for f in flat])
                                       for j in range(len(flat[0]))])


def _empty_rows(t):
    dev = t._device
    with dev.activate():
        return dev.xp.zeros((0,) + tuple(t._value.shape), dtype=t._value.dtype)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of ``acc = fn(acc, x)`` over the slices of ``elems`` along axis 0,
    first to last, as ``tf.foldl`` (without ``initializer`` it starts as the first slice)."""
    return _fold_steps(fn, elems, initializer, False, "foldl", keep=False)[0]


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """:func:`foldl` from the last slice to the first (``tf.foldr``)."""
    return _fold_steps(fn, elems, initializer, True, "foldr", keep=False)[0]


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The result of the function paired with the first true predicate, as TF 2's eager
    ``tf.case``: ``pred_fn_pairs`` is a list of ``(boolean scalar tensor, callable)`` (or a
    dict); with no true predicate, ``default()``, or without ``default`` an
    InvalidArgumentError. Predicates are read on the host, in order, until one is true
    (``exclusive`` is not checked in eager mode, as in TF)."""
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError(f"case: pred_fn_pairs must be a list of (predicate, callable) pairs, "
                        f"got {type(pred_fn_pairs).__name__}")
    if not pred_fn_pairs:
        raise ValueError("case: pred_fn_pairs must hold at least one (predicate, callable) "
                         "pair")
    pairs = []
    for pair in pred_fn_pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"case: each entry of pred_fn_pairs must be a pair (predicate, "
                            f"callable), got {pair!r}")
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise TypeError(f"case: pred must be a Tensor, got: {pred!r}")
        if not callable(fn):
            raise TypeError(f"case: fn for pred {pred!r} must be callable.")
        pairs.append((pred, fn))
    if default is not None and not callable(default):
        raise TypeError("case: default must be callable.")
    for pred, fn in pairs:
        if _host_bool(pred, "case"):
            return fn()
    if default is not None:
        return default()
    from .registry import InvalidArgumentError
    raise InvalidArgumentError("case: Input error: None of conditions evaluated as True: "
                               f"{[bool(_host_bool(p, 'case')) for p, _ in pairs]}")


# --- gradient helpers ----------------------------------------------------------------------------

def recompute_grad(f):
    """``f`` that keeps none of its intermediate values for the backward pass: the forward
    runs without recording, and the gradient runs ``f`` again under a tape, as
    ``tf.recompute_grad`` (same values and gradients, less memory between the passes).
    Trainable Variables ``f`` reads get their gradients too. ``f`` should be deterministic
    (random ops draw new numbers when it runs again)."""
    from .functional import _VariableWatcher, custom_gradient
    from .registry import thread_state
    from .tape import GradientTape

    @custom_gradient
    def inner(*args, **kwargs):
        # record nothing on the outer tapes (only the variable watcher of custom_gradient
        # keeps listening, to hand the variables read to grad_fn)
        import contextlib
        with contextlib.ExitStack() as stack:
            for t in list(thread_state().tapes):
                if not isinstance(t, _VariableWatcher):
                    stack.enter_context(t.stop_recording())
            result = f(*args, **kwargs)

        def grad_fn(*upstream, variables=None):
            flat = nest.flatten(args)
            pos = [i for i, a in enumerate(flat)
                   if isinstance(a, Tensor) and a._value.dtype.kind == "f"]
            with GradientTape() as tape:
                tape.watch([flat[i] for i in pos])
                if variables:
                    tape.watch(list(variables))
                again = f(*args, **kwargs)
            sources = [flat[i] for i in pos] + list(variables or [])
            grads = tape.gradient(nest.flatten(again), sources,
                                  output_gradients=list(upstream))
            arg_grads = [None] * len(flat)
            for i, g in zip(pos, grads):
                arg_grads[i] = g
            if variables:
                return arg_grads, list(grads[len(pos):])
            return arg_grads
        return result, grad_fn

    import functools

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return inner(*args, **kwargs)
    return wrapper


def grad_pass_through(f):
    """``f`` whose gradient is the identity: ``f(x)`` forward, the upstream gradient passed
    back unchanged to ``x`` (one output per input), as ``tf.grad_pass_through``; Variables
    ``f`` reads get no gradient."""
    from .functional import custom_gradient

    @custom_gradient
    def inner(*args, **kwargs):
        def grad_fn(*upstream, variables=None):
            if variables is not None:
                return list(upstream), [None] * len(variables)
            return list(upstream) if len(upstream) != 1 else upstream[0]
        return f(*args, **kwargs), grad_fn

    import functools

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return inner(*args, **kwargs)
    return wrapper


# --- eager no-ops ---------------------------------------------------------------------------------

class _NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def control_dependencies(control_inputs):
    """A context that does nothing: ops run in program order eagerly, as in TF 2's eager
    ``tf.control_dependencies``."""
    if control_inputs is not None and not isinstance(control_inputs, (list, tuple)) and \
            not callable(control_inputs) and not isinstance(control_inputs, Tensor):
        raise TypeError(f"control_dependencies: control_inputs must be a list of tensors or "
                        f"None, got {type(control_inputs).__name__}")
    return _NullContext()


def group(*inputs, **kwargs):
    """None: eagerly every op has run already (``tf.group`` in eager mode)."""
    unknown = set(kwargs) - {"name"}
    if unknown:
        raise TypeError(f"group: Unknown keyword arguments: {', '.join(sorted(unknown))}")
    return None


def no_op(name=None):
    """None: the operation that does nothing (``tf.no_op`` in eager mode)."""
    return None
