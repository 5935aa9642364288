"""Keras' functional API: ``keras.Input`` makes a symbolic tensor, a layer called on symbolic
tensors records a node of a graph, and ``keras.Model(inputs, outputs)`` runs that graph.

    inputs = gt.keras.Input(shape=(784,))
    h = gt.keras.layers.Dense(64, activation="relu")(inputs)
    outputs = gt.keras.layers.Dense(10)(h)
    model = gt.keras.Model(inputs, outputs)

A layer called on symbolic tensors builds its weights, and learns the shape of what it
returns, by running on zeros of the symbolic shapes (under no tape). A ``None`` size is taken
as 2 in one run and 3 in a second: an output size that differs between the two is ``None``.
Arithmetic on symbolic tensors (``+ - * / ** @``, unary ``-``, ``[...]``) records an op
node; any other gradtape function of a symbolic tensor needs a ``keras.layers.Lambda``.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from . import nest as _nest
from .dtypes import as_dtype

__all__ = ["KerasTensor", "Input", "is_keras_tensor"]

_SYMBOLIC = ("is a symbolic keras.Input (or a layer's output in a functional model): it has no "
             "value. Call layers on it, use + - * / ** @ [] on it (with it on the left of a "
             "tensor: kt + t, not t + kt), or wrap other gradtape functions in "
             "gt.keras.layers.Lambda")


class KerasTensor:
    """A symbolic tensor of a functional model: a shape (``None`` for an unknown size), a
    dtype, and the node (layer call) that makes it."""

    __slots__ = ("shape", "_np_dtype", "name", "_node", "_index", "_input_layer", "__weakref__")
    __array_priority__ = 1000       # NumPy's binary operators defer to ours

    def __init__(self, shape, dtype, name=None, node=None, index=0, input_layer=None):
        from .tensor import TensorShape
        self.shape = TensorShape(shape)
        self._np_dtype = np.dtype(dtype)
        self.name = name
        self._node = node
        self._index = index
        self._input_layer = input_layer

    @property
    def dtype(self):
        return as_dtype(self._np_dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    rank = ndim

    @property
    def node(self):
        return self._node

    def __repr__(self):
        dims = ", ".join("None" if d is None else str(d) for d in self.shape)
        trail = "," if len(self.shape) == 1 else ""
        return (f"<KerasTensor shape=({dims}{trail}), dtype={self._np_dtype.name}, "
                f"name={self.name}>")

    # --- what a symbolic tensor cannot do -----------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise TypeError(f"{self.name} {_SYMBOLIC}")

    def __bool__(self):
        raise TypeError(f"{self.name} {_SYMBOLIC}")

    def __float__(self):
        raise TypeError(f"{self.name} {_SYMBOLIC}")

    def __len__(self):
        if not self.shape or self.shape[0] is None:
            raise TypeError(f"{self.name}: len() of a symbolic tensor of shape "
                            f"{tuple(self.shape)} is unknown")
        return int(self.shape[0])

    def __iter__(self):
        raise TypeError(f"{self.name}: a symbolic tensor cannot be iterated; index it "
                        "(x[:, 0]) or use gt.keras.layers.Lambda")

    def numpy(self):
        raise TypeError(f"{self.name} {_SYMBOLIC}")

    # --- operators record op nodes --------------------------------------------------------------
    def __add__(self, other):
        return _op("add", lambda a, b: a + b, self, other)

    def __radd__(self, other):
        return _op("add", lambda a, b: a + b, other, self)

    def __sub__(self, other):
        return _op("subtract", lambda a, b: a - b, self, other)

    def __rsub__(self, other):
        return _op("subtract", lambda a, b: a - b, other, self)

    def __mul__(self, other):
        return _op("multiply", lambda a, b: a * b, self, other)

    def __rmul__(self, other):
        return _op("multiply", lambda a, b: a * b, other, self)

    def __truediv__(self, other):
        return _op("truediv", lambda a, b: a / b, self, other)

    def __rtruediv__(self, other):
        return _op("truediv", lambda a, b: a / b, other, self)

    def __pow__(self, other):
        return _op("pow", lambda a, b: a ** b, self, other)

    def __rpow__(self, other):
        return _op("pow", lambda a, b: a ** b, other, self)

    def __matmul__(self, other):
        return _op("matmul", lambda a, b: a @ b, self, other)

    def __rmatmul__(self, other):
        return _op("matmul", lambda a, b: a @ b, other, self)

    def __neg__(self):
        return _op("negative", lambda a: -a, self)

    def __abs__(self):
        return _op("abs", abs, self)

    def __getitem__(self, key):
        return _op("getitem", lambda a: a[key], self)


def is_keras_tensor(x) -> bool:
    """True for a symbolic tensor of the functional API (``keras.Input`` and what layers
    return when called on one)."""
    return isinstance(x, KerasTensor)


def _op(name, fn, *operands):
    """Record ``fn(*operands)`` as a node of an op layer: its symbolic operands are the
    layer's inputs, the others constants it holds."""
    slots = [i for i, v in enumerate(operands) if isinstance(v, KerasTensor)]
    symbols = [operands[i] for i in slots]

    def call(inputs):
        vals = list(operands)
        for i, v in zip(slots, inputs):
            vals[i] = v
        return fn(*vals)
    from .layers import TFOpLambda
    layer = TFOpLambda(call, name=_unique(f"tf.{name}"))
    return layer(symbols)


def _unique(base):
    from .layers import _unique_name
    return _unique_name(base)


# --- Input ------------------------------------------------------------------------------------

def dims(shape, who):
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{who}: shape must be a tuple of sizes (None for unknown), got "
                        f"{shape!r}") from None
    out = []
    for d in dims:
        if d is None:
            out.append(None)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
            out.append(int(d))
        else:
            raise ValueError(f"{who}: every size must be an int >= 0 or None, got {shape!r}")
    return tuple(out)


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          ragged=None, batch_shape=None, **kwargs):
    """A symbolic input of a functional model: ``shape`` per example (the batch size is
    ``batch_size``, None for any), or the whole ``batch_shape``; float32 unless ``dtype``."""
    if kwargs:
        raise TypeError(f"Input: unexpected keyword argument {next(iter(kwargs))!r}")
    if sparse or ragged:
        raise ValueError("Input: sparse and ragged inputs are not supported")
    if tensor is not None:
        raise ValueError("Input: tensor= is not supported (an Input has no value)")
    if batch_shape is not None:
        full = dims(batch_shape, "Input")
        if not full:
            raise ValueError("Input: batch_shape must include the batch axis")
    else:
        if shape is None:
            raise ValueError("Input: give shape= (per example) or batch_shape=")
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        full = (None if batch_size is None else int(batch_size),) + dims(shape, "Input")
    from .layers import InputLayer
    return InputLayer(batch_shape=full, dtype=dtype, name=name).output


# --- calling a layer on symbolic tensors --------------------------------------------------------

class _Node:
    """One call of a layer in a functional graph: its arguments (``(inputs, args, kwargs)``
    with the symbolic tensors in place) and the symbolic tensors it returned."""

    __slots__ = ("layer", "structure", "flat", "symbols", "outputs", "packed", "fixed_training")

    def __init__(self, layer, structure, flat, outputs, fixed_training):
        self.layer = layer
        self.structure = structure
        self.flat = flat
        self.symbols = [v for v in flat if isinstance(v, KerasTensor)]
        self.outputs = outputs
        self.packed = None               # the outputs in the structure the layer returned
        self.fixed_training = fixed_training

    @property
    def input(self):
        """The symbolic inputs of this call, as the layer got them."""
        return self.structure[0]


def has_symbols(inputs, args, kwargs) -> bool:
    """Whether a layer call's arguments hold a symbolic tensor."""
    if isinstance(inputs, KerasTensor):
        return True
    for part in (inputs, args, kwargs):
        if isinstance(part, (list, tuple, dict)) and part:
            for v in _nest.flatten(part):
                if isinstance(v, KerasTensor):
                    return True
    return False


_PROBING = threading.local()


def probing() -> bool:
    """Whether this thread is running a shape probe of a symbolic call (which is not a real
    call: it sets no layer's latest-call marks)."""
    return getattr(_PROBING, "depth", 0) > 0


@contextlib.contextmanager
def _paused_tapes():
    from .registry import thread_state
    with contextlib.ExitStack() as stack:
        for tape in reversed(list(thread_state().tapes)):
            stack.enter_context(tape.stop_recording())
        yield


# Sizes given to None dimensions in the two probe runs: the batch axis is cheap to keep
# small; other axes (time, height, width) get sizes large enough for kernels and pools, and
# far enough apart that strided windows give different output sizes.
_PROBE_BATCH = (2, 3)
_PROBE_OTHER = (40, 67)


def _probe(kt, run):
    from .ops.core import zeros
    shape = tuple((_PROBE_BATCH if axis == 0 else _PROBE_OTHER)[run] if d is None else d
                  for axis, d in enumerate(kt.shape))
    return zeros(shape, dtype=kt._np_dtype)


def symbolic_call(layer, inputs, args, kwargs):
    """Call ``layer`` on arguments holding symbolic tensors: build it, learn its output
    shapes on zeros, and return symbolic outputs made by a new node."""
    from .tensor import Tensor
    structure = (inputs, tuple(args), dict(kwargs))
    flat = _nest.flatten(structure)
    symbols = [v for v in flat if isinstance(v, KerasTensor)]
    unknown = any(d is None for s in symbols for d in s.shape)
    fixed_training = "training" in kwargs
    runs = []
    for run in ((0, 1) if unknown else (0,)):
        concrete = [_probe(v, run) if isinstance(v, KerasTensor) else v for v in flat]
        ci, ca, ck = _nest.pack_sequence_as(structure, concrete)
        ck["training"] = False          # a probe never updates statistics or draws noise
        _PROBING.depth = getattr(_PROBING, "depth", 0) + 1
        try:
            with _paused_tapes():
                out = layer(ci, *ca, **ck)
        except Exception as exc:
            shapes = ", ".join(f"{s.name}: {tuple(s.shape)}" for s in symbols)
            if run == 1:
                raise ValueError(f"{type(layer).__name__} layer '{layer.name}' called on "
                                 f"symbolic inputs ({shapes}): it needs a size that is None "
                                 f"there; give the Input that size ({type(exc).__name__}: "
                                 f"{exc})") from exc
            raise
        finally:
            _PROBING.depth -= 1
        leaves = _nest.flatten(out)
        for leaf in leaves:
            if not isinstance(leaf, Tensor):
                raise TypeError(f"{type(layer).__name__} layer '{layer.name}' returned "
                                f"{type(leaf).__name__}, not tensors: it cannot be used in a "
                                "functional model")
        runs.append((out, leaves))
    out, leaves = runs[0]
    shapes = [tuple(t.shape) for t in leaves]
    if len(runs) == 2:
        merged = []
        for s, o in zip(shapes, (tuple(t.shape) for t in runs[1][1])):
            if len(s) != len(o):
                raise ValueError(f"{type(layer).__name__} layer '{layer.name}': the rank of "
                                 f"its output depends on an unknown input size ({s} against "
                                 f"{o})")
            merged.append(tuple(a if a == b else None for a, b in zip(s, o)))
        shapes = merged
    node = _Node(layer, structure, flat, None, fixed_training)
    names = [layer.name] if len(leaves) == 1 else [f"{layer.name}/{i}"
                                                   for i in range(len(leaves))]
    outs = [KerasTensor(s, t._value.dtype, name=n, node=node, index=i)
            for i, (s, t, n) in enumerate(zip(shapes, leaves, names))]
    node.outputs = outs
    node.packed = _nest.pack_sequence_as(out, outs) if _nest.is_nested(out) else outs[0]
    nodes = layer.__dict__.setdefault("_inbound_nodes", [])
    nodes.append(node)
    return node.packed


def forget_nodes(layer, nodes):
    """Drop ``nodes`` from ``layer``'s record of its symbolic calls."""
    mine = layer.__dict__.get("_inbound_nodes")
    if mine:
        ids = {id(n) for n in nodes}
        mine[:] = [n for n in mine if id(n) not in ids]


# --- the graph of a functional model ----------------------------------------------------------

class Graph:
    """The nodes between a functional model's inputs and outputs, in an order that runs
    each after the nodes it reads, and the model's layers in Keras' order (see
    :meth:`_order`)."""

    def __init__(self, inputs, outputs, who):
        self.who = who
        if inputs is None or outputs is None:
            raise ValueError(f"{who}: a functional model needs both inputs= and outputs=")
        flat = _nest.flatten(inputs)
        # An intermediate symbolic tensor given as an input cuts the graph there, as Keras'
        # clone_graph_nodes: a new Input of its shape and dtype stands for it (the model
        # then starts from that tensor, e.g. a FeatureSpace's encoded features).
        self._cut = []
        for i, kt in enumerate(flat):
            if isinstance(kt, KerasTensor) and kt._input_layer is None and \
                    kt._node is not None:
                new = Input(batch_shape=tuple(kt.shape), dtype=kt._np_dtype,
                            name=f"{kt.name or 'input'}CLONE")
                self._cut.append((kt, new))
                flat[i] = new
        if self._cut:
            inputs = _nest.pack_sequence_as(inputs, flat) if _nest.is_nested(inputs) \
                else flat[0]
        self.inputs = inputs
        self.outputs = outputs
        self.flat_inputs = flat
        self.flat_outputs = _nest.flatten(outputs)
        for kt in self.flat_inputs:
            if not isinstance(kt, KerasTensor) or kt._input_layer is None:
                raise TypeError(f"{who}: every input must be a keras.Input or a symbolic "
                                f"tensor of a layer called on one, got {kt!r}")
        for kt in self.flat_outputs:
            if not isinstance(kt, KerasTensor):
                raise TypeError(f"{who}: every output must be the symbolic result of a layer "
                                f"called on keras.Input tensors, got {type(kt).__name__}")
        if len({id(k) for k in self.flat_inputs}) != len(self.flat_inputs):
            raise ValueError(f"{who}: an Input is listed twice among the inputs")
        self.nodes, self.layers = self._order()
        self.input_layers = [kt._input_layer for kt in self.flat_inputs]
        if isinstance(outputs, dict):
            self.output_names = list(_nest._sorted_keys(outputs))
        else:
            names = [kt._node.layer.name if kt._node is not None else kt.name
                     for kt in self.flat_outputs]
            self.output_names = names if len(set(names)) == len(names) else [
                f"{n}_{i + 1}" for i, n in enumerate(names)]

    def _order(self):
        """``(nodes, layers)``: the nodes the outputs need in the order that runs them (the
        post-order of a depth-first walk from the outputs, each node's inputs in order), and
        the layers in Keras' order (``map_graph``): deepest first (a layer's depth is the
        most calls between any of its calls and an output), ties in the order the walk first
        reached them; an Input that no output needs comes last among depth 0.
        Iterative: graphs may be deep."""
        allowed = {id(k) for k in self.flat_inputs}
        cut = {id(old): new for old, new in self._cut}
        order, done, active = [], set(), set()
        walk = []             # every call reached, Inputs included: (key, layer, parent keys)
        first_seen = {}       # id(layer) -> [layer, index of the walk that first reached it]
        stack = [(kt, False) for kt in reversed(self.flat_outputs)]
        while stack:
            kt, expanded = stack.pop()
            kt = cut.get(id(kt), kt)
            node = kt._node
            if node is None:
                if id(kt) not in allowed:
                    raise ValueError(
                        f"{self.who}: graph disconnected: an output needs the Input "
                        f"'{kt.name}' of shape {tuple(kt.shape)}, which is not among the "
                        f"model's inputs ({', '.join(k.name for k in self.flat_inputs)})")
                if id(kt) not in done:
                    done.add(id(kt))
                    first_seen.setdefault(id(kt._input_layer),
                                          [kt._input_layer, len(first_seen)])
                    walk.append((id(kt), kt._input_layer, ()))
                continue
            if id(node) in done:
                continue
            if expanded:
                active.discard(id(node))
                done.add(id(node))
                order.append(node)
                walk.append((id(node), node.layer, [
                    id(cut[id(v)]) if id(v) in cut else
                    id(v._node) if v._node is not None else id(v) for v in node.symbols]))
                continue
            if id(node) in active:
                continue
            active.add(id(node))
            first_seen.setdefault(id(node.layer), [node.layer, len(first_seen)])
            stack.append((kt, True))
            for parent in reversed(node.symbols):
                stack.append((parent, False))
        # Depths as Keras' map_graph: from the outputs back, a call is one deeper than the
        # deepest call that reads it, and a layer called more than once takes its deepest.
        node_depth, layer_depth = {}, {}
        for key, layer, parents in reversed(walk):
            depth = max(node_depth.setdefault(key, 0), layer_depth.get(id(layer), 0))
            layer_depth[id(layer)] = depth
            node_depth[key] = depth
            for parent in parents:
                node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
        for kt in self.flat_inputs:                  # Inputs no output needs
            if id(kt._input_layer) not in layer_depth:
                layer_depth[id(kt._input_layer)] = 0
                first_seen[id(kt._input_layer)] = [kt._input_layer, -1]
        ranked = sorted(layer_depth, key=lambda i: (-layer_depth[i], first_seen[i][1]))
        return order, [first_seen[i][0] for i in ranked]

    def keep_layer_order(self, layers):
        """List :attr:`layers` in the order of ``layers`` when it holds exactly the same
        layers (a saved model whose file lists them in another order: its weight paths,
        ``layers.<i>``, follow that order); otherwise leave it."""
        layers = list(layers)
        if len(layers) == len(self.layers) and {id(x) for x in layers} == {
                id(x) for x in self.layers}:
            self.layers[:] = layers

    def match_inputs(self, inputs):
        """The user's inputs, one per Input (in :attr:`flat_inputs` order)."""
        n = len(self.flat_inputs)
        names = [kt.name for kt in self.flat_inputs]
        if isinstance(inputs, dict):
            if isinstance(self.inputs, dict):
                keys = list(_nest._sorted_keys(self.inputs))
            else:
                keys = names
            missing = [k for k in keys if k not in inputs]
            if missing:
                raise ValueError(f"{self.who}: the inputs lack {missing} (the model's inputs "
                                 f"are {keys}; given {sorted(map(str, inputs))})")
            return [inputs[k] for k in keys]
        if n == 1:
            if isinstance(inputs, (list, tuple)) and len(inputs) == 1 and not isinstance(
                    inputs[0], (int, float)):
                return [inputs[0]]
            return [inputs]
        flat = _nest.flatten(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(flat) != n:
            raise ValueError(f"{self.who}: expects {n} inputs ({', '.join(names)}), got "
                             f"{len(flat)}")
        return flat

    def run(self, inputs, training):
        from .layers import get_mask, set_mask
        from .ops.core import cast
        from .ops.shape import expand_dims, squeeze
        from .tensor import Tensor, convert_to_tensor
        values = {}
        for kt, x in zip(self.flat_inputs, self.match_inputs(inputs)):
            if not isinstance(x, Tensor):
                x = convert_to_tensor(x)
            given = x
            shape = tuple(x._value.shape)
            # Keras 3's rank adjustment (Functional._adjust_input_rank): one trailing axis of
            # size 1 too many is squeezed, one too few is added when the Input ends in 1.
            if len(shape) == len(kt.shape) + 1 and shape[-1] == 1:
                x = squeeze(x, axis=-1)
            elif len(shape) == len(kt.shape) - 1 and kt.shape[-1] == 1:
                x = expand_dims(x, axis=-1)
            adjusted = tuple(x._value.shape)
            if len(adjusted) != len(kt.shape) or any(
                    d is not None and d != s for d, s in zip(kt.shape, adjusted)):
                raise ValueError(f"{self.who}: input '{kt.name}' expects shape "
                                 f"{tuple(kt.shape)}, got {shape}")
            if x._value.dtype != kt._np_dtype:
                x = cast(x, kt._np_dtype)
            if x is not given:
                mask = get_mask(given)
                if mask is not None:
                    set_mask(x, mask)
            values[id(kt)] = x
        for old, new in self._cut:
            values[id(old)] = values[id(new)]
        for node in self.nodes:
            concrete = [values[id(v)] if isinstance(v, KerasTensor) else v for v in node.flat]
            ci, ca, ck = _nest.pack_sequence_as(node.structure, concrete)
            if not node.fixed_training:
                ck["training"] = training
            out = node.layer(ci, *ca, **ck)
            for kt, t in zip(node.outputs, _nest.flatten(out)):
                values[id(kt)] = t
        flat = [values[id(kt)] for kt in self.flat_outputs]
        return _nest.pack_sequence_as(self.outputs, flat) if _nest.is_nested(
            self.outputs) else flat[0]
