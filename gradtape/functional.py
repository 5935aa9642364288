"""Functional autodiff on top of the tape.

- TensorFlow eager's function transforms: :func:`gradients_function`,
  :func:`value_and_gradients_function`, :func:`implicit_gradients`,
  :func:`implicit_value_and_gradients`.
- JAX-style transforms: :func:`grad`, :func:`value_and_grad`, :func:`jacobian`,
  :func:`hessian`, :func:`jvp`, :func:`vjp`, :func:`hvp`. Arguments may be tensors, Python
  floats, NumPy arrays, Variables or nested lists/tuples/dicts of them; with an int
  ``argnums`` one gradient comes back, with a tuple a tuple of them.
- :func:`custom_gradient`, with TensorFlow's contract.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from . import nest
from .forward import ForwardAccumulator, check_tangent
from .registry import STATE, Op, _slow_path
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, Variable, convert_to_tensor

__all__ = ["gradients_function", "value_and_gradients_function", "implicit_gradients",
           "implicit_value_and_gradients", "grad", "value_and_grad", "jacobian", "hessian",
           "jvp", "vjp", "hvp", "custom_gradient"]

_ZERO = UnconnectedGradients.ZERO


# --- helpers ------------------------------------------------------------------------------

def _fname(f) -> str:
    name = getattr(f, "__name__", None)
    if name is None:
        name = type(f).__name__
    return name


def _positional_names(f):
    """Names of ``f``'s positional parameters, and whether it takes ``*args``; (None, True)
    when the signature cannot be inspected."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return None, True
    names = []
    varargs = False
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            varargs = True
    return names, varargs


def _label(names, i) -> str:
    if names and i < len(names):
        return f"argument '{names[i]}' (position {i})"
    return f"argument {i}"


def _as_source(x, where: str, label: str) -> Tensor:
    """A tensor to differentiate with respect to, standing for argument value ``x``.

    Variables are used as they are; a tensor is passed through ``identity`` so that each
    argument position is its own source (and outer tapes still see the connection); Python
    numbers and arrays are converted. Non-floating values are an error.
    """
    if isinstance(x, Variable):
        t = x
    elif isinstance(x, Tensor):
        from .ops.core import identity
        t = identity(x)
    else:
        if x is None or isinstance(x, (str, bytes)):
            raise TypeError(f"{where}: {label} is {type(x).__name__} {x!r}; gradients need "
                            "floating-point tensors")
        try:
            t = convert_to_tensor(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: {label} of type {type(x).__name__} cannot be converted "
                            f"to a tensor ({exc})") from None
    if t._value.dtype.kind != "f":
        hint = " (write 5.0, not 5)" if isinstance(x, (int, np.integer)) and \
            not isinstance(x, bool) else " (cast it with gt.cast)"
        raise TypeError(f"{where}: {label} has dtype {t.dtype.name}; gradients are only "
                        f"defined for floating-point arguments{hint}")
    return t


def _split_aux(out, has_aux: bool, where: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{where}: with has_aux=True the function must return a pair "
                        f"(output, auxiliary_data), got {type(out).__name__}")
    return out[0], out[1]


def _check_scalar(value, where: str, hint: str):
    if not isinstance(value, Tensor):
        raise TypeError(f"{where}: the function must return a scalar tensor, got "
                        f"{type(value).__name__}: {value!r}")
    if tuple(value._value.shape) != ():
        raise TypeError(f"{where}: the function must return a scalar (shape ()), but it "
                        f"returned a tensor of shape {tuple(value._value.shape)}; {hint}")
    if value._value.dtype.kind != "f":
        raise TypeError(f"{where}: the function must return a floating-point scalar, got "
                        f"dtype {value.dtype.name}")


def _check_outputs(value, where: str):
    leaves = nest.flatten(value)
    for o in leaves:
        if not isinstance(o, Tensor):
            raise TypeError(f"{where}: the function must return tensors (or nested "
                            f"lists/tuples/dicts of them), got {type(o).__name__}: {o!r}")
    return leaves


def _none_result(value, fname, where):
    if value is None:
        raise ValueError(f"{where}: Cannot differentiate a function that returns None; did "
                         f"you forget to return a value from {fname}?")


# --- TensorFlow eager's gradients_function family ----------------------------------------

def _resolve_params(f, params, where):
    """Positions named by ``params`` (None: every positional argument passed)."""
    if params is None:
        return None
    if isinstance(params, (str, int)) and not isinstance(params, bool):
        params = [params]
    params = list(params)
    if all(isinstance(p, str) for p in params):
        names, _ = _positional_names(f)
        if names is None:
            raise ValueError(f"{where}: cannot inspect the argument names of {f!r}; give "
                             "params as integer positions")
        out = []
        for p in params:
            if p not in names:
                raise ValueError(f"{where}: params names {p!r}, which is not a positional "
                                 f"parameter of {_fname(f)}({', '.join(names)})")
            out.append(names.index(p))
        return out
    if all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in params):
        return [int(p) for p in params]
    raise ValueError(f"{where}: params must be all strings or all integers; got {params!r}")


def _seed_value_and_grads(f, positions, names, where, args, kwds):
    dy = kwds.pop("dy", None)
    fname = _fname(f)
    if kwds:
        raise ValueError(f"{where}: functions to be differentiated cannot receive keyword "
                         f"arguments; got {sorted(kwds)}")
    n = len(args)
    if positions is None:
        positions = list(range(n))
    else:
        norm = []
        for p in positions:
            if not -n <= p < n:
                raise ValueError(f"{where}: params refers to "
                                 f"{_label(names, p) if p >= 0 else f'argument {p}'}, but "
                                 f"{fname} was called with {n} positional argument(s)")
            norm.append(p % n)
        positions = norm
    args = list(args)
    sources = []
    for i in positions:
        s = _as_source(args[i], where, _label(names, i))
        args[i] = s
        sources.append(s)
    with GradientTape() as tape:
        tape.watch(sources)
        result = f(*args)
    _none_result(result, fname, where)
    targets = _check_outputs(result, where)
    og = None
    if dy is not None:
        og = nest.flatten(dy)
        if len(og) != len(targets):
            raise ValueError(f"{where}: dy has {len(og)} entries for the {len(targets)} "
                             f"output(s) of {fname}")
    grads = tape.gradient(targets, sources, output_gradients=og)
    return result, list(grads)


def value_and_gradients_function(f, params=None):
    """A function ``fg(*args, dy=None)`` returning ``(f(*args), [gradients])``: the gradients
    of ``f``'s output (summed, or weighted by ``dy``) with respect to its arguments, or only
    those named or indexed by ``params`` (``["w1", "w2"]`` or ``[0, 2]``)."""
    where = f"value_and_gradients_function({_fname(f)})"
    positions = _resolve_params(f, params, where)
    names, _ = _positional_names(f)

    @functools.wraps(f)
    def decorated(*args, **kwds):
        return _seed_value_and_grads(f, positions, names, where, args, kwds)
    return decorated


def gradients_function(f, params=None):
    """A function ``fg(*args, dy=None)`` returning the list of gradients of ``f``'s output
    with respect to its arguments (or the ``params`` subset, by name or position); Python
    floats and Variables both work as arguments. Unconnected arguments give ``None``."""
    where = f"gradients_function({_fname(f)})"
    positions = _resolve_params(f, params, where)
    names, _ = _positional_names(f)

    @functools.wraps(f)
    def decorated(*args, **kwds):
        return _seed_value_and_grads(f, positions, names, where, args, kwds)[1]
    return decorated


def _implicit(f, where, args, kwds):
    fname = _fname(f)
    with GradientTape() as tape:
        value = f(*args, **kwds)
    _none_result(value, fname, where)
    targets = _check_outputs(value, where)
    variables = tape.watched_variables()
    if not variables:
        raise ValueError(f"{where}: no trainable Variables were accessed while {fname} was "
                         "being computed")
    grads = tape.gradient(targets, list(variables))
    return value, [(g, v) for g, v in zip(grads, variables) if g is not None]


def implicit_value_and_gradients(f):
    """A function ``fg(*args, **kwargs)`` returning ``(f(...), [(gradient, variable), ...])``
    for every trainable Variable the output depends on, in first-use order, from one
    forward pass. Untrainable and unconnected Variables are left out."""
    where = f"implicit_value_and_gradients({_fname(f)})"

    @functools.wraps(f)
    def decorated(*args, **kwds):
        return _implicit(f, where, args, kwds)
    return decorated


def implicit_gradients(f):
    """A function ``fg(*args, **kwargs)`` returning ``[(gradient, variable), ...]`` for every
    trainable Variable ``f``'s output depends on, in first-use order."""
    where = f"implicit_gradients({_fname(f)})"

    @functools.wraps(f)
    def decorated(*args, **kwds):
        return _implicit(f, where, args, kwds)[1]
    return decorated


# --- JAX-style transforms -----------------------------------------------------------------

def _check_argnums(f, argnums, where):
    """``(single, argnums tuple)``; checks the type now and the range when ``f`` has a fixed
    signature."""
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        single, nums = True, (int(argnums),)
    elif isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums):
        single, nums = False, tuple(int(a) for a in argnums)
    else:
        raise TypeError(f"{where}: argnums must be an int or a non-empty tuple of ints, got "
                        f"{argnums!r}")
    names, varargs = _positional_names(f)
    if names is not None and not varargs:
        for a in nums:
            if not -len(names) <= a < len(names):
                raise ValueError(f"{where}: argnums={argnums!r} refers to positional argument "
                                 f"{a}, but {_fname(f)}({', '.join(names)}) has "
                                 f"{len(names)} positional parameter(s)")
    return single, nums, names


def _call_positions(nums, nargs, argnums, names, where):
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"{where}: argnums={argnums!r} refers to positional argument {a}, "
                             f"but the function was called with {nargs} positional "
                             "argument(s)")
        out.append(a % nargs)
    return out


def _prepare(args, positions, names, where):
    """Replace the differentiated arguments by their source tensors.

    Returns ``(args, groups)`` where ``groups[k]`` lists the source leaves of positions[k].
    """
    args = list(args)
    groups = []
    for i in positions:
        structure = args[i]
        leaves = nest.flatten(structure)
        if not leaves:
            raise ValueError(f"{where}: {_label(names, i)} holds no tensors to differentiate")
        label = _label(names, i)
        conv = []
        for k, leaf in enumerate(leaves):
            what = label if not nest.is_nested(structure) else f"{label}, leaf {k}"
            conv.append(_as_source(leaf, where, what))
        args[i] = nest.pack_sequence_as(structure, conv) if nest.is_nested(structure) \
            else conv[0]
        groups.append(conv)
    return args, groups


def _regroup(args, positions, groups, flat_values, single):
    out = []
    k = 0
    for i, g in zip(positions, groups):
        part = flat_values[k:k + len(g)]
        k += len(g)
        out.append(nest.pack_sequence_as(args[i], part) if nest.is_nested(args[i])
                   else part[0])
    return out[0] if single else tuple(out)


def _value_and_grad(f, argnums, has_aux, what):
    where = f"{what}({_fname(f)})"
    single, nums, names = _check_argnums(f, argnums, where)

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        positions = _call_positions(nums, len(args), argnums, names, where)
        args, groups = _prepare(args, positions, names, where)
        sources = [s for g in groups for s in g]
        with GradientTape() as tape:
            tape.watch(sources)
            out = f(*args, **kwargs)
        value, aux = _split_aux(out, has_aux, where)
        _check_scalar(value, where, "gradients are only defined for scalar outputs; use "
                      "gt.jacobian for the full Jacobian or gt.vjp for vector-Jacobian "
                      "products")
        grads = tape.gradient(value, sources, unconnected_gradients=_ZERO)
        g = _regroup(args, positions, groups, grads, single)
        return ((value, aux), g) if has_aux else (value, g)
    return value_and_grad_f


def value_and_grad(f, argnums=0, has_aux=False):
    """A function returning ``(f(*args), gradient)`` for a scalar-valued ``f`` (with
    ``has_aux``: ``((value, aux), gradient)``); the gradient is shaped like
    ``args[argnums]`` (a tuple of them for a tuple ``argnums``)."""
    return _value_and_grad(f, argnums, has_aux, "value_and_grad")


def grad(f, argnums=0, has_aux=False):
    """A function returning the gradient of scalar-valued ``f`` with respect to
    ``args[argnums]`` (a tuple of gradients for a tuple ``argnums``; with ``has_aux``:
    ``(gradient, aux)``). Unconnected arguments get zeros."""
    vg = _value_and_grad(f, argnums, has_aux, "grad")

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        out, g = vg(*args, **kwargs)
        return (g, out[1]) if has_aux else g
    return grad_f


def _jacobian(f, argnums, has_aux, what):
    where = f"{what}({_fname(f)})"
    single, nums, names = _check_argnums(f, argnums, where)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        positions = _call_positions(nums, len(args), argnums, names, where)
        args, groups = _prepare(args, positions, names, where)
        sources = [s for g in groups for s in g]
        with GradientTape(persistent=True) as tape:
            tape.watch(sources)
            out = f(*args, **kwargs)
        value, aux = _split_aux(out, has_aux, where)
        _none_result(value, _fname(f), where)
        leaves = _check_outputs(value, where)
        per_output = []
        for o in leaves:
            if o._value.dtype.kind != "f":
                raise TypeError(f"{where}: the function returned a tensor of dtype "
                                f"{o.dtype.name}; Jacobians need floating-point outputs")
            js = tape.jacobian(o, sources, unconnected_gradients=_ZERO)
            per_output.append(_regroup(args, positions, groups, js, single))
        del tape
        result = nest.pack_sequence_as(value, per_output) if nest.is_nested(value) \
            else per_output[0]
        return (result, aux) if has_aux else result
    return jacobian_f


def jacobian(f, argnums=0, has_aux=False):
    """A function returning the Jacobian of ``f`` (reverse mode, one recorded forward pass,
    rows computed in vectorised sweeps): for each output leaf, ``out.shape + arg.shape``
    blocks shaped like ``args[argnums]`` (a tuple of them for a tuple ``argnums``)."""
    return _jacobian(f, argnums, has_aux, "jacobian")


def hessian(f, argnums=0, has_aux=False):
    """A function returning the Hessian of scalar-valued ``f``: the Jacobian of its gradient,
    ``arg.shape + arg.shape`` for one argument, nested ``[i][j]`` blocks for several."""
    inner = _value_and_grad(f, argnums, has_aux, "hessian")

    @functools.wraps(f)
    def gradient_of_f(*args, **kwargs):
        out, g = inner(*args, **kwargs)
        return (g, out[1]) if has_aux else g
    return _jacobian(gradient_of_f, argnums, has_aux, "hessian")


def _primals_and_tangents(primals, tangents, fname, what):
    where = f"{what}({fname})"
    for name, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"{where}: {name} must be a tuple or list with one entry per "
                            f"positional argument of the function, got {type(v).__name__}; "
                            f"write gt.{what}(f, (x,), (v,))")
    if len(primals) != len(tangents):
        raise ValueError(f"{where}: got {len(primals)} primal(s) but {len(tangents)} "
                         "tangent(s); give one tangent per primal")
    args = []
    flat_p = []
    flat_t = []
    groups = []
    from .forward import _structure
    for i, (p, t) in enumerate(zip(primals, tangents)):
        label = f"argument {i}"
        if _structure(p) != _structure(t):
            raise ValueError(f"{where}: the tangent for {label} does not have the structure "
                             f"of the primal ({len(nest.flatten(t))} vs "
                             f"{len(nest.flatten(p))} leaves)")
        pl = nest.flatten(p)
        tl = nest.flatten(t)
        conv = []
        for k, (pv, tv) in enumerate(zip(pl, tl)):
            leaf = label if not nest.is_nested(p) else f"{label}, leaf {k}"
            src = _as_source(pv, where, leaf)
            conv.append(src)
            flat_p.append(src)
            flat_t.append(check_tangent(tv, src, where, leaf))
        groups.append(conv)
        args.append(nest.pack_sequence_as(p, conv) if nest.is_nested(p) else conv[0])
    return args, flat_p, flat_t, groups


def jvp(f, primals, tangents, has_aux=False):
    """Forward-mode Jacobian-vector product: ``(f(*primals), J @ tangents)``.

    ``primals`` and ``tangents`` are tuples (or lists) with one entry per positional
    argument of ``f``; each tangent matches its primal's structure, shapes and dtypes. The
    output tangents have the structure of ``f``'s output. With ``has_aux`` ``f`` returns
    ``(output, aux)`` and the result is ``(output, output_tangents, aux)``.
    """
    fname = _fname(f)
    where = f"jvp({fname})"
    args, flat_p, flat_t, _ = _primals_and_tangents(primals, tangents, fname, "jvp")
    with ForwardAccumulator(flat_p, flat_t) as acc:
        out = f(*args)
    value, aux = _split_aux(out, has_aux, where)
    _none_result(value, fname, where)
    _check_outputs(value, where)
    out_t = acc.jvp(value, unconnected_gradients=_ZERO)
    return (value, out_t, aux) if has_aux else (value, out_t)


def vjp(f, *primals, has_aux=False):
    """Reverse-mode vector-Jacobian products: ``(f(*primals), vjp_fn)``.

    ``vjp_fn(cotangents)`` takes cotangents with the structure, shapes and dtypes of ``f``'s
    output and returns a tuple with one gradient per primal (shaped like it). It may be
    called many times. With ``has_aux`` the result is ``(output, vjp_fn, aux)``.
    """
    fname = _fname(f)
    where = f"vjp({fname})"
    positions = list(range(len(primals)))
    args, groups = _prepare(primals, positions, None, where)
    sources = [s for g in groups for s in g]
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(sources)
        out = f(*args)
    value, aux = _split_aux(out, has_aux, where)
    _none_result(value, fname, where)
    leaves = _check_outputs(value, where)
    from .forward import _structure

    def vjp_fn(cotangents):
        if _structure(cotangents) != _structure(value):
            raise ValueError(f"{where}: the cotangents must have the structure of the "
                             f"function's output ({len(leaves)} leaves), got "
                             f"{len(nest.flatten(cotangents))} leaves")
        cts = nest.flatten(cotangents)
        targets = []
        weights = []
        for k, (o, ct) in enumerate(zip(leaves, cts)):
            what = "the output" if len(leaves) == 1 else f"output {k}"
            ct = check_tangent(ct, o, where, what, kind="cotangent")
            if o._value.dtype.kind == "f":
                targets.append(o)
                weights.append(ct)
        if not targets:
            grads = [_zeros_like(s) for s in sources]
        else:
            grads = tape.gradient(targets, sources, output_gradients=weights,
                                  unconnected_gradients=_ZERO)
        return tuple(_regroup(args, positions, groups, grads, False))

    vjp_fn.__name__ = f"vjp_of_{fname}"
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _zeros_like(t: Tensor) -> Tensor:
    dev = t._device
    with dev.activate():
        return Tensor(dev.xp.zeros(t._value.shape, dtype=t._value.dtype), dev)


def hvp(f, primals, tangents):
    """Hessian-vector product of scalar-valued ``f`` at ``primals`` along ``tangents``,
    computed forward-over-reverse (the Hessian is never formed).

    ``primals`` and ``tangents`` are tuples (or lists) with one entry per positional
    argument; the result is a tuple with one ``H @ v`` block per argument, each shaped like
    its primal: ``sum_j d2f / (dx_i dx_j) v_j``.
    """
    fname = _fname(f)
    where = f"hvp({fname})"
    args, flat_p, flat_t, groups = _primals_and_tangents(primals, tangents, fname, "hvp")
    with ForwardAccumulator(flat_p, flat_t) as acc:
        with GradientTape() as tape:
            tape.watch(flat_p)
            out = f(*args)
        _check_scalar(out, where, "a Hessian-vector product needs a scalar function; use "
                      "gt.jvp of gt.vjp for non-scalar outputs")
        grads = tape.gradient(out, flat_p, unconnected_gradients=_ZERO)
    hv = acc.jvp(grads, unconnected_gradients=_ZERO)
    positions = list(range(len(primals)))
    res = _regroup([p for p in primals], positions, groups, hv, False)
    return type(primals)(res) if isinstance(primals, list) else res


# --- custom_gradient ----------------------------------------------------------------------

class _VariableWatcher(GradientTape):
    """Collects the trainable Variables read while it is active; records nothing."""

    def __init__(self):
        super().__init__(persistent=False, watch_accessed_variables=True)
        self.read = []

    def _watch_variable(self, var) -> bool:
        if not any(v is var for v in self.read):
            self.read.append(var)
        return False


def _accepts_variables(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return True
        if p.name == "variables" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return True
    return False


def _no_forward(xp, *args):
    raise RuntimeError("a custom_gradient op is recorded, never run through dispatch")


def custom_gradient(f=None):
    """Decorator giving ``f`` its own gradient, as ``tf.custom_gradient``.

    ``f(*args)`` returns ``(outputs, grad_fn)``. ``grad_fn(*upstream)`` (one upstream
    gradient per output) returns one gradient per input (a single tensor for one input,
    ``None`` for none). When ``f`` reads trainable Variables that are not among its inputs,
    ``grad_fn(*upstream, variables=None)`` must return ``(input_grads, variable_grads)``,
    one gradient per variable in ``variables``. Written with gradtape ops, ``grad_fn`` can
    itself be differentiated (second and higher derivatives).
    """
    if f is None:
        return custom_gradient
    return _CustomGradient(f)


class _CustomGradient:
    """A ``custom_gradient`` function; on a class, a method whose ``self`` is bound before
    the call (so ``self`` is not one of the inputs that get gradients, as in TensorFlow)."""

    def __init__(self, f):
        self._f = f
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        return _call_custom(self._f, args, kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        bound = self._f.__get__(obj, objtype)

        @functools.wraps(self._f)
        def method(*args, **kwargs):
            return _call_custom(bound, args, kwargs)
        return method


def _call_custom(f, args, kwargs):
    fname = _fname(f)
    watcher = _VariableWatcher()
    watcher._push()
    try:
        out = f(*args, **kwargs)
    finally:
        watcher._pop()
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"custom_gradient function {fname} must return a pair "
                        f"(outputs, grad_fn), got {type(out).__name__}")
    result, grad_fn = out
    if not callable(grad_fn):
        raise TypeError(f"custom_gradient function {fname} must return (outputs, grad_fn) with "
                        f"a callable grad_fn, got {type(grad_fn).__name__}")
    flat_args = nest.flatten(args)
    all_inputs = flat_args + nest.flatten(kwargs)
    # (in the order they were created, as TensorFlow hands them to grad_fn)
    variables = sorted((v for v in watcher.read if not any(v is i for i in all_inputs)),
                       key=lambda v: v._id)
    if variables and not _accepts_variables(grad_fn):
        raise TypeError(f"@gt.custom_gradient grad_fn of {fname} must accept keyword argument "
                        f"'variables', since function uses variables: "
                        f"{[v.name for v in variables]}")
    flat_result = nest.flatten(result)
    if not flat_result:
        raise ValueError(f"custom_gradient function {fname} returned no outputs")
    for r in flat_result:
        if not isinstance(r, Tensor):
            raise TypeError(f"custom_gradient function {fname} must return tensors as "
                            f"outputs, got {type(r).__name__}: {r!r}")
    outs = tuple(Tensor(r._value, r._device) for r in flat_result)
    inputs = tuple(flat_args) + tuple(variables)
    n_args = len(flat_args)

    def vjp(ops, needs, g, ans, *saved):
        raw = ops.raw
        upstream = [Tensor(x, o._device) if raw else x for x, o in zip(g, outs)]
        if variables:
            res = grad_fn(*upstream, variables=list(variables))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise ValueError(f"custom_gradient function {fname} reads Variables, so its "
                                 "grad_fn must return (input_gradients, variable_gradients), "
                                 f"got {type(res).__name__}")
            input_grads, variable_grads = res
            variable_grads = list(variable_grads) if isinstance(variable_grads, (list, tuple)) \
                else [variable_grads]
            if len(variable_grads) != len(variables):
                raise ValueError(f"custom_gradient function {fname}: grad_fn must return a "
                                 f"gradient for each of the {len(variables)} variable(s) it "
                                 f"was given, but returned {len(variable_grads)}")
        else:
            input_grads = grad_fn(*upstream)
            variable_grads = []
        flat_in = nest.flatten(input_grads)
        if len(flat_in) != n_args:
            raise ValueError(f"custom_gradient function {fname} expected to return {n_args} "
                             f"gradients, but returned {len(flat_in)} instead.")
        grads = []
        for k, (gi, inp) in enumerate(zip(flat_in + variable_grads, inputs)):
            if gi is None or not needs[k] or not isinstance(inp, Tensor):
                grads.append(None)
                continue
            gi = _custom_grad_value(gi, inp, fname, k, n_args, variables)
            grads.append(gi._value if raw else gi)
        return tuple(grads)

    op = Op(fname, _no_forward, vjp, save_inputs=True, save_output=True, multi=True,
            batch_rule=False)
    if STATE.active:
        _slow_path(op, inputs, outs, None)
    return nest.pack_sequence_as(result, list(outs)) if nest.is_nested(result) else outs[0]


def _custom_grad_value(g, inp: Tensor, fname, k, n_args, variables) -> Tensor:
    what = f"input {k}" if k < n_args else f"variable {variables[k - n_args].name}"
    if not isinstance(g, Tensor) and inp._device.is_native(g) and \
            not isinstance(g, np.ndarray):
        # a raw array of the input's device: placed as it is (np.asarray would read it)
        g = Tensor(inp._device.asarray(g, dtype=inp._value.dtype), inp._device)
    if not isinstance(g, Tensor):
        try:
            host = np.asarray(g)
        except Exception:
            host = None
        if host is None or host.dtype.kind not in "fiu":
            raise TypeError(f"custom_gradient function {fname}: the gradient for {what} must "
                            f"be a tensor, got {type(g).__name__}")
        g = Tensor(inp._device.asarray(host, dtype=inp._value.dtype), inp._device)
    if g._value.dtype != inp._value.dtype:
        raise TypeError(f"custom_gradient function {fname}: the gradient for {what} has dtype "
                        f"{g.dtype.name}, but the {what} has dtype {inp.dtype.name}")
    if tuple(g._value.shape) != tuple(inp._value.shape):
        raise ValueError(f"custom_gradient function {fname}: the gradient for {what} has shape "
                         f"{tuple(g._value.shape)}, but the {what} has shape "
                         f"{tuple(inp._value.shape)}")
    return g
