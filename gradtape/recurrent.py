"""Recurrent layers, as Keras': ``SimpleRNN``, ``LSTM``, ``GRU``, their cells and ``RNN``.

    lstm = gt.layers.LSTM(64, return_sequences=True)
    y = lstm(x)                 # x: [batch, time, features] -> y: [batch, time, 64]

Weights follow Keras' layout and gate order, so Keras weights load as they are: ``kernel``
``[features, k * units]``, ``recurrent_kernel`` ``[units, k * units]`` and ``bias`` (LSTM:
gates i, f, c, o; GRU: z, r, h, with ``reset_after=True`` a ``[2, 3 * units]`` bias, as
TensorFlow 2's default). The input projection of every time step is one matrix product
before the loop; each step then adds the recurrent product. ``dropout`` and
``recurrent_dropout`` use one mask per sequence (the same at every step), as Keras 3 does:
one mask shared by all gates, or, for LSTM and GRU with ``recurrent_dropout`` set, one per
gate on the inputs and one per gate on the state. Any cell with ``call(inputs, states)``
and ``state_size`` runs too (Keras' custom cells).
The time loop runs eagerly (``unroll`` changes nothing). With a Keras mask
(``Embedding(mask_zero=True)``, ``Masking``, or ``mask=``) a masked step keeps the states
and repeats the last output (zeros with ``zero_output_for_mask``, as Bidirectional sets with
sequences). ``stateful=True`` carries the final states of one call into the next (one
batch size; ``reset_states()`` starts again from zeros), as Keras.
"""
from __future__ import annotations

import numpy as np

from . import initializers as _init
from .layers import InputSpec, Layer, _activation_name, _positive_int, get_activation
from .ops import core as _core
from .ops import linalg as _la
from .ops import shape as _sh
from .tensor import Tensor, convert_to_tensor

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN",
           "LSTM", "GRU"]


def _rate(value, what, who):
    if not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{who}: {what} must be a float in [0, 1), got {value!r}")
    return float(value)


class _Cell(Layer):
    """A recurrent cell: ``cell(x_projected, states, training)`` for one time step, where the
    input projection ``x @ kernel (+ bias)`` was made for every step at once by
    :meth:`project`."""

    #: number of gates (column blocks of the kernels)
    gates = 1
    _REGULARIZABLE = {"kernel": "kernel", "recurrent": "recurrent_kernel", "bias": "bias"}
    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "recurrent_initializer": "recurrent_initializer",
                         "bias_initializer": "bias_initializer"}

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, seed=None,
                 name=None, **kwargs):
        kwargs.pop("implementation", None)     # (Keras' choice of kernel: one here)
        super().__init__(name=name, **kwargs)
        self.seed = seed
        who = type(self).__name__
        self.units = _positive_int(units, "units", who)
        self.activation = get_activation(activation)
        self.recurrent_activation = get_activation(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _init.get(kernel_initializer)
        self.recurrent_initializer = _init.get(recurrent_initializer)
        self.bias_initializer = _init.get(bias_initializer)
        self.dropout = _rate(dropout, "dropout", who)
        self.recurrent_dropout = _rate(recurrent_dropout, "recurrent_dropout", who)

    @property
    def state_size(self):
        """The state's width (an int, as Keras' SimpleRNNCell and GRUCell)."""
        return self.units

    @property
    def output_size(self):
        return self.units

    @property
    def _state_sizes(self):
        """The width of each state, as a list."""
        return [self.units]

    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_initial(self, shape, dtype=None):
        return self.bias_initializer(shape, dtype=dtype)

    def build(self, input_shape):
        dim = int(input_shape[-1])
        k = self.gates * self.units
        self.kernel = self.add_weight("kernel", (dim, k), self.kernel_initializer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, k),
                                                self.recurrent_initializer)
        self.bias = self.add_weight("bias", self._bias_shape(), self._bias_initial) \
            if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: dim})

    def _input_bias(self):
        return self.bias

    @property
    def _per_gate_dropout(self):
        """Whether dropout draws a mask per gate (Keras 3's ``implementation=1``, which its
        LSTM and GRU cells use when ``recurrent_dropout`` is set) rather than one."""
        return self.gates > 1 and self.recurrent_dropout > 0

    def project(self, inputs, drop=None):
        """``inputs @ kernel (+ the input bias)`` over the last axis, every step at once;
        ``drop``: a dropout mask ``[batch, features]`` on the inputs, or a list of one per
        gate (each gate's columns of the kernel then see their own masked inputs)."""
        x = inputs
        shape = tuple(x._value.shape)

        def flat(mask):
            xm = x if mask is None else x * (
                _sh.expand_dims(mask, 1) if x._value.ndim == 3 else mask)
            return _sh.reshape(xm, (-1, shape[-1]))
        if isinstance(drop, (list, tuple)):
            u = self.units
            y = _sh.concat([_la.matmul(flat(m), self.kernel[:, g * u:(g + 1) * u])
                            for g, m in enumerate(drop)], axis=-1)
        else:
            y = _la.matmul(flat(drop), self.kernel)
        b = self._input_bias()
        if b is not None:
            y = y + b
        return _sh.reshape(y, shape[:-1] + (self.gates * self.units,))

    def zero_states(self, batch, like):
        return [_core.zeros((batch, self.units), dtype=like.dtype) for _ in self._state_sizes]

    def get_initial_state(self, batch_size=None):
        """Zero states ``[batch_size, units]`` in the compute dtype (a list, as Keras 3)."""
        return [_core.zeros((int(batch_size), self.units), dtype=self._compute_dtype)
                for _ in self._state_sizes]

    def call(self, inputs, states, training=False):
        """One step on raw inputs ``[batch, features]`` (Keras' cell call): ``(output,
        new states)``, the states a list (a bare tensor in, a bare tensor out)."""
        bare = not isinstance(states, (list, tuple))
        states = [states] if bare else _flat_states(states)
        states = [s if isinstance(s, Tensor) else convert_to_tensor(s) for s in states]
        if len(states) != len(self._state_sizes):
            raise ValueError(f"{type(self).__name__} layer '{self.name}': expected "
                             f"{len(self._state_sizes)} state(s), got {len(states)}")
        out, new = self.step(self.project(inputs), states)
        return out, (new[0] if bare else new)

    def step(self, xw, states, h_in=None):
        """One step from the projected inputs ``xw``; ``h_in``: the state as the recurrent
        product sees it (dropped out; a list of one per gate), else the state itself."""
        raise NotImplementedError

    def _recurrent(self, h, h_in, start, stop):
        """``h @ recurrent_kernel`` over the column blocks of gates ``start:stop``: from
        ``h_in`` when given, each gate's block from its own entry when it is a list."""
        u = self.units
        if isinstance(h_in, (list, tuple)):
            return _sh.concat([_la.matmul(h_in[g], self.recurrent_kernel[:, g * u:(g + 1) * u])
                               for g in range(start, stop)], axis=-1)
        r = h if h_in is None else h_in
        if (start, stop) == (0, self.gates):
            return _la.matmul(r, self.recurrent_kernel)
        return _la.matmul(r, self.recurrent_kernel[:, start * u:stop * u])

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": _activation_name(self.activation),
                "recurrent_activation": _activation_name(self.recurrent_activation),
                "use_bias": self.use_bias, "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout, "seed": self.seed}


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + h @ recurrent_kernel + bias)``."""

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, seed=None,
                 name=None, **kwargs):
        super().__init__(units, activation, None, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         seed=seed, name=name, **kwargs)

    def step(self, xw, states, h_in=None):
        h = states[0]
        r = h if h_in is None else h_in
        out = self.activation(xw + _la.matmul(r, self.recurrent_kernel))
        return out, [out]

    def get_config(self):
        config = super().get_config()
        del config["recurrent_activation"]
        return config


class LSTMCell(_Cell):
    """Keras' LSTM step (gates i, f, c, o): ``z = x @ W + h @ U + b``;
    ``c = f * c + i * activation(g)``, ``h = o * activation(c)`` with the gates through
    ``recurrent_activation``. ``unit_forget_bias`` starts the forget gate's bias at 1."""

    gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, name=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         seed=seed, name=name, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    @property
    def _state_sizes(self):
        return [self.units, self.units]

    def _bias_initial(self, shape, dtype=None):
        b = self.bias_initializer(shape, dtype=dtype)
        if not self.unit_forget_bias:
            return b
        u = self.units
        ones = _core.ones((u,), dtype=b.dtype)
        return _sh.concat([b[:u], ones, b[2 * u:]], axis=0)

    def step(self, xw, states, h_in=None):
        h, c = states
        z = xw + self._recurrent(h, h_in, 0, 4)
        i, f, g, o = _sh.split(z, 4, axis=-1)
        act, gate = self.activation, self.recurrent_activation
        c = gate(f) * c + gate(i) * act(g)
        h = gate(o) * act(c)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """Keras' GRU step (gates z, r, h). ``reset_after=True`` (TensorFlow 2's default, the
    cuDNN form): ``hh = activation(x_h + r * (h @ U_h + b_h'))`` with a second, recurrent
    bias; ``reset_after=False``: ``hh = activation(x_h + (r * h) @ U_h)``. Then
    ``h = z * h + (1 - z) * hh``."""

    gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 reset_after=True, seed=None, name=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         seed=seed, name=name, **kwargs)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        k = 3 * self.units
        return (2, k) if self.reset_after else (k,)

    def _input_bias(self):
        if self.bias is None:
            return None
        return self.bias[0] if self.reset_after else self.bias

    def step(self, xw, states, h_in=None):
        h = states[0]
        u = self.units
        x_z, x_r, x_h = _sh.split(xw, 3, axis=-1)
        gate, act = self.recurrent_activation, self.activation
        if self.reset_after:
            inner = self._recurrent(h, h_in, 0, 3)
            if self.bias is not None:
                inner = inner + self.bias[1]
            r_z, r_r, r_h = _sh.split(inner, 3, axis=-1)
            z = gate(x_z + r_z)
            r = gate(x_r + r_r)
            hh = act(x_h + r * r_h)
        else:
            r_z, r_r = _sh.split(self._recurrent(h, h_in, 0, 2), 2, axis=-1)
            z = gate(x_z + r_z)
            r = gate(x_r + r_r)
            h_h = h_in[2] if isinstance(h_in, (list, tuple)) else (h if h_in is None else h_in)
            hh = act(x_h + _la.matmul(r * h_h, self.recurrent_kernel[:, 2 * u:]))
        out = z * h + (1.0 - z) * hh
        return out, [out]

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}


def _is_cell(obj):
    """Keras' test of an RNN cell: a ``call`` and a ``state_size``."""
    return callable(getattr(obj, "call", None)) and hasattr(obj, "state_size")


def _state_shapes(cell):
    """The shape after the batch axis of each of a cell's states, as a list of tuples (a
    ``state_size`` int, or a list of ints or shapes, as Keras; a built-in cell's
    ``_state_sizes`` entry is a width, or a whole shape for the convolutional cells)."""
    if isinstance(cell, (_Cell, StackedRNNCells)):
        return [n if isinstance(n, tuple) else (n,) for n in cell._state_sizes]
    size = cell.state_size
    if isinstance(size, (int, np.integer)):
        return [(int(size),)]
    shapes = []
    for s in (size if isinstance(size, (list, tuple)) else [size]):
        if isinstance(s, (int, np.integer)):
            shapes.append((int(s),))
        else:
            shapes.append(tuple(int(d) for d in s))
    return shapes


def _output_size(cell):
    """A cell's output width: its ``output_size``, else its first state's (as Keras)."""
    size = getattr(cell, "output_size", None)
    if size is not None:
        return int(size)
    return _state_shapes(cell)[0][-1]


def _initial_states(cell, batch, like):
    """A cell's starting states as a flat list: its ``get_initial_state(batch_size)`` when it
    has one, else zeros."""
    if isinstance(cell, (_Cell, StackedRNNCells)):
        return cell.zero_states(batch, like)
    make = getattr(cell, "get_initial_state", None)
    if make is not None:
        states = make(batch_size=batch)
        states = _flat_states(states) if isinstance(states, (list, tuple)) else [states]
        return [s if isinstance(s, Tensor) else convert_to_tensor(s, dtype=like.dtype)
                for s in states]
    return [_core.zeros((batch,) + shape, dtype=like.dtype) for shape in _state_shapes(cell)]


def _call_cell(cell, inputs, states, training):
    """One step of a cell that is not one of the built-in ones: ``(output, [new states])``,
    the cell called as Keras calls it (``cell(inputs, [states], training=...)``)."""
    if isinstance(cell, Layer):
        out, new = cell(inputs, list(states), training=training)
    else:
        out, new = cell.call(inputs, list(states))
    new = _flat_states(new) if isinstance(new, (list, tuple)) else [new]
    if len(new) != len(states):
        raise ValueError(f"RNN cell {type(cell).__name__}: returned {len(new)} state(s), "
                         f"its state_size has {len(states)}")
    return out, new


def _fresh_cell(cell):
    """A new cell of the same configuration as ``cell`` (fresh weights)."""
    if isinstance(cell, StackedRNNCells):
        return StackedRNNCells([_fresh_cell(c) for c in cell.cells])
    try:
        config = cell.get_config()
        return type(cell).from_config(config)
    except (TypeError, NotImplementedError, AttributeError) as exc:
        if isinstance(cell, Layer) and cell.built:
            raise TypeError(f"{type(cell).__name__}: a copy of this cell cannot be made from "
                            f"its get_config() ({exc}); give it a get_config() that returns "
                            "its constructor's arguments") from exc
        import copy
        return copy.deepcopy(cell)


class StackedRNNCells(Layer):
    """Several cells run as one, each fed the previous one's output (Keras'
    ``StackedRNNCells``; ``RNN([cell1, cell2])`` makes one). The cells are the built-in ones
    or any cell with ``call(inputs, states)`` and ``state_size``. The states are the cells'
    states in order; ``RNN(..., return_state=True)`` returns them as a list per cell."""

    def __init__(self, cells, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        cells = list(cells) if isinstance(cells, (list, tuple)) else [cells]
        if not cells:
            raise ValueError("StackedRNNCells: give at least one cell")
        for c in cells:
            if not _is_cell(c) or isinstance(c, StackedRNNCells):
                raise TypeError(f"StackedRNNCells: every cell must be a SimpleRNNCell, "
                                f"LSTMCell or GRUCell, or a layer with a call method and a "
                                f"state_size attribute, got {type(c).__name__}")
        self.cells = cells

    @property
    def state_size(self):
        """One entry per cell: that cell's ``state_size``."""
        return [c.state_size for c in self.cells]

    @property
    def _state_sizes(self):
        return [shape[-1] for c in self.cells for shape in _state_shapes(c)]

    @property
    def _counts(self):
        return [len(_state_shapes(c)) for c in self.cells]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    @property
    def units(self):
        return _output_size(self.cells[-1])

    def build(self, input_shape):
        shape = tuple(input_shape)
        for c in self.cells:
            if isinstance(c, Layer) and not c.built:
                c.build(shape)
                c.built = True
            shape = shape[:1] + (_output_size(c),)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: int(input_shape[-1])})

    def zero_states(self, batch, like):
        return [z for c in self.cells for z in _initial_states(c, batch, like)]

    def get_initial_state(self, batch_size=None):
        """Each cell's initial states, as Keras 3: what its ``get_initial_state`` gives (a
        list for the built-in cells), else zeros (a tensor for a ``state_size`` int)."""
        like = _core.zeros((), dtype=self._compute_dtype)
        out = []
        for c in self.cells:
            make = getattr(c, "get_initial_state", None)
            if make is not None:
                out.append(make(batch_size=int(batch_size)))
                continue
            states = _initial_states(c, int(batch_size), like)
            out.append(states[0] if isinstance(c.state_size, (int, np.integer)) else states)
        return out

    def _split(self, states):
        """``states`` (a list per cell, or one flat list) as a list per cell, and whether
        each cell's entry was a bare tensor (given back the same way)."""
        counts = self._counts
        if isinstance(states, (list, tuple)) and len(states) == len(self.cells) and all(
                (len(_flat_states(s)) == n) if isinstance(s, (list, tuple)) else n == 1
                for s, n in zip(states, counts)):
            bare = [not isinstance(s, (list, tuple)) for s in states]
            return [_flat_states(s) if isinstance(s, (list, tuple)) else [s]
                    for s in states], bare
        flat = _flat_states(states)
        if len(flat) != sum(counts):
            raise ValueError(f"StackedRNNCells layer '{self.name}': expected {sum(counts)} "
                             f"states ({counts} per cell), got {len(flat)}")
        split, at = [], 0
        for n in counts:
            split.append(flat[at:at + n])
            at += n
        return split, [False] * len(counts)

    def call(self, inputs, states, training=False):
        """One step on raw inputs ``[batch, features]``: ``(output, [states of each
        cell])`` (``states`` a list per cell, given back in the same form, or one flat
        list, given back as a list per cell)."""
        per_cell, bare = self._split(states)
        out, new = inputs, []
        for c, own, one in zip(self.cells, per_cell, bare):
            own = [s if isinstance(s, Tensor) else convert_to_tensor(s) for s in own]
            if isinstance(c, _Cell):
                out, s = c.call(out, own, training=training)
            else:
                out, s = _call_cell(c, out, own, training)
            new.append(s[0] if one else list(s))
        return out, new

    def get_config(self):
        return {**super().get_config(), "cells": [_serialize(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config):
        from .saving import deserialize_layer
        config = dict(config)
        cells = [deserialize_layer(c) for c in config.pop("cells")]
        return cls(cells, **config)


def _flat_states(states):
    if isinstance(states, Tensor):
        return [states]
    out = []
    for s in states:
        out.extend(_flat_states(s) if isinstance(s, (list, tuple)) else [s])
    return out


class RNN(Layer):
    """Run a cell over the time axis of ``[batch, time, features]`` inputs.

    ``cell``: a SimpleRNNCell, LSTMCell or GRUCell, any cell with ``call(inputs, states)``
    returning ``(output, new_states)`` and a ``state_size`` (an int, or a list of ints, one
    per state; ``get_initial_state(batch_size)`` if it has one gives the starting states),
    or a list of cells (run as :class:`StackedRNNCells`), as Keras.
    ``return_sequences``: every step's output ``[batch, time, units]`` (else the last one);
    ``return_state``: also the final states (the tuple ``(output, h)``, LSTM
    ``(output, h, c)``); ``go_backwards``: from the last step to the first (the sequence
    returned reversed, as Keras). Call with ``initial_state=[...]`` to start from given
    states (zeros otherwise).
    """

    #: Masked steps output zeros instead of repeating the last output (Bidirectional sets it
    #: with return_sequences, as Keras).
    zero_output_for_mask = False

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, zero_output_for_mask=False,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not _is_cell(cell):
            raise TypeError(f"RNN: cell must be a SimpleRNNCell, LSTMCell or GRUCell, a list "
                            f"of cells, StackedRNNCells, or a layer with a call method and a "
                            f"state_size attribute, got {type(cell).__name__}")
        if time_major:
            raise ValueError(f"{type(self).__name__}: time_major=True is not supported; "
                             "transpose the inputs to [batch, time, features]")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self._states = None             # stateful: the states carried from batch to batch
        self.input_spec = InputSpec(ndim=3) if isinstance(self._cells()[0], _Cell) else \
            InputSpec(min_ndim=3)

    _UNTRACKED = Layer._UNTRACKED | {"_states"}

    @property
    def state_size(self):
        """The cell's ``state_size`` as a list (one entry per state, or per stacked cell),
        as Keras 3's ``RNN.state_size``."""
        size = self.cell.state_size
        return [size] if isinstance(size, (int, np.integer)) else list(size)

    @property
    def states(self):
        """A stateful layer's current states (None before its first call)."""
        return None if self._states is None else list(self._states)

    def get_initial_state(self, batch_size):
        """The states a call starts from without ``initial_state``: the cell's
        ``get_initial_state``, else zeros ``[batch_size, size]`` per state (a list)."""
        return _initial_states(self.cell, int(batch_size),
                               _core.zeros((), dtype=self._compute_dtype))

    def reset_states(self, states=None):
        """Set a stateful layer's states to zeros, or to ``states`` (arrays of shape
        ``[batch, units]``), as Keras' ``reset_states``."""
        if not self.stateful:
            raise AttributeError(f"{type(self).__name__} layer '{self.name}' is not stateful "
                                 "(make it with stateful=True)")
        if self._states is None:
            batch = self._known_batch()
            if batch is not None:         # built from keras.Input(batch_shape=...)
                self._stateful_states(batch, _core.zeros((), dtype=self._compute_dtype))
            elif states is None:
                return                    # not called yet: its first call starts at zeros
            else:
                raise ValueError(f"{type(self).__name__} layer '{self.name}'.reset_states: "
                                 "the batch size is not known yet; call the layer once (or "
                                 "build it from keras.Input(batch_shape=...)) first")
        if states is None:
            for v in self._states:
                v.assign(_core.zeros_like(v))
            return
        states = _flat_states(states) if isinstance(states, (list, tuple)) else [states]
        if len(states) != len(self._states):
            raise ValueError(f"{type(self).__name__} layer '{self.name}'.reset_states: "
                             f"{len(states)} states for {len(self._states)}")
        values = []
        for v, new in zip(self._states, states):
            new = new if isinstance(new, Tensor) else convert_to_tensor(
                np.asarray(new, dtype=v._value.dtype))
            if new._value.dtype != v._value.dtype:
                new = _core.cast(new, v._value.dtype)
            if tuple(new._value.shape) != tuple(v._value.shape):
                raise ValueError(f"{type(self).__name__} layer '{self.name}'.reset_states: a "
                                 f"state of shape {tuple(new._value.shape)}, expected "
                                 f"{tuple(v._value.shape)}")
            values.append(new)
        for v, new in zip(self._states, values):
            v.assign(new)

    reset_state = reset_states

    @property
    def units(self):
        return self.cell.units

    def reversed_copy(self, name=None):
        """A new layer of the same configuration running the other way in time (a fresh
        cell), named ``name`` (``backward_<name>`` by default): what Bidirectional makes."""
        return self.fresh_copy(go_backwards=not self.go_backwards,
                               name=name or f"backward_{_unprefixed(self.name)}")

    def fresh_copy(self, go_backwards=None, name=None):
        """A new layer of the same configuration (a fresh cell, no weights), optionally
        running the other way (``go_backwards``) under another ``name``."""
        return type(self)(_fresh_cell(self.cell), return_sequences=self.return_sequences,
                          return_state=self.return_state,
                          go_backwards=self.go_backwards if go_backwards is None
                          else go_backwards,
                          stateful=self.stateful, unroll=self.unroll,
                          zero_output_for_mask=self.zero_output_for_mask,
                          name=name or self.name, dtype=self._dtype_policy)

    def build(self, input_shape):
        cell = self.cell
        if not isinstance(cell, Layer) or not cell.built:
            if hasattr(cell, "build"):
                cell.build(tuple(input_shape[:1]) + tuple(input_shape[2:]))
            if isinstance(cell, Layer):
                cell.built = True
        dim = {-1: int(input_shape[-1])}
        self.input_spec = InputSpec(ndim=3, axes=dim) if isinstance(self._cells()[0], _Cell) \
            else InputSpec(min_ndim=3, axes=dim)
        if self.stateful and self._states is None and not _kg_probing() and \
                input_shape[0] is not None:
            self._stateful_states(int(input_shape[0]), _core.zeros((), dtype=self._compute_dtype))

    def _known_batch(self):
        """A stateful layer's batch size from the functional input it was called on."""
        nodes = self.__dict__.get("_inbound_nodes") or []
        shape = getattr(nodes[0].input, "shape", None) if nodes else None
        return None if not shape or shape[0] is None else int(shape[0])

    def _cells(self):
        return self.cell.cells if isinstance(self.cell, StackedRNNCells) else [self.cell]

    def _masks(self, x, training):
        """Dropout masks (scaled) of the built-in cells, one per sequence and cell: ``[(on
        the cell's inputs, on its state)]``, each a list of one per gate where the cell
        drops per gate (Nones for other cells: they drop their own)."""
        from . import nn
        batch = x._value.shape[0]
        dim = x._value.shape[-1]
        out = []
        for cell in self._cells():
            drop_in = drop_h = None
            if isinstance(cell, _Cell) and training:
                rng = cell._seeded_generator(x._device)
                count = cell.gates if cell._per_gate_dropout else 1

                def masks(width, rate):
                    drawn = [nn.dropout(_core.ones((batch, width), dtype=x.dtype), rate=rate,
                                        rng=rng) for _ in range(count)]
                    return drawn if cell._per_gate_dropout else drawn[0]
                if cell.dropout:
                    drop_in = masks(dim, cell.dropout)
                if cell.recurrent_dropout:
                    drop_h = masks(cell.units, cell.recurrent_dropout)
            out.append((drop_in, drop_h))
            dim = _output_size(cell)
        return out

    def call(self, inputs, initial_state=None, training=None, mask=None):
        cells = self._cells()
        shapes = [shape for c in cells for shape in _state_shapes(c)]   # each state's
        counts = [len(_state_shapes(c)) for c in cells]
        x = inputs
        batch, steps = x._value.shape[0], x._value.shape[1]
        drops = self._masks(x, training)
        if initial_state is None and self.stateful and not _kg_probing():
            states = self._stateful_states(batch, x)
        elif initial_state is None:
            states = _initial_states(self.cell, batch, x)
        else:
            states = _flat_states(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            if len(states) != len(shapes):
                raise ValueError(f"{type(self).__name__} layer '{self.name}': expected "
                                 f"{len(shapes)} initial state(s), got {len(states)}")
            for i, s in enumerate(states):
                want = (batch,) + shapes[i]
                s = s if isinstance(s, Tensor) else convert_to_tensor(s)
                if tuple(s._value.shape) != want:
                    raise ValueError(f"{type(self).__name__} layer '{self.name}': initial "
                                     f"state {i} has shape {tuple(s._value.shape)}, expected "
                                     f"{want}")
                states[i] = _core.cast(s, x.dtype) if s.dtype != x.dtype else s
        keep = None
        if mask is not None:
            mask = mask if isinstance(mask, Tensor) else convert_to_tensor(mask)
            if tuple(mask._value.shape) != (batch, steps):
                raise ValueError(f"{type(self).__name__} layer '{self.name}': the mask has "
                                 f"shape {tuple(mask._value.shape)}, expected {(batch, steps)}")
            keep = _sh.unstack(_core.cast(mask, x.dtype), axis=1)       # [batch] per step
            if self.go_backwards:
                keep = keep[::-1]
        outputs = []
        if steps:
            first = cells[0]
            # a built-in first cell: the input projection of every step in one product
            per_step = _sh.unstack(first.project(x, drops[0][0]) if isinstance(first, _Cell)
                                   else x, axis=1)
            if self.go_backwards:
                per_step = per_step[::-1]
            prev = None
            for t, x_t in enumerate(per_step):
                out, new_states, at = None, [], 0
                for i, (c, n, (drop_in, drop_h)) in enumerate(zip(cells, counts, drops)):
                    own = states[at:at + n]
                    at += n
                    below = x_t if i == 0 else out
                    if not isinstance(c, _Cell):
                        out, own = _call_cell(c, below, own, training)
                    else:
                        if i:                            # a stacked cell: the one below's
                            below = c.project(below, drop_in)
                        h_in = None if drop_h is None else [own[0] * m for m in drop_h] \
                            if isinstance(drop_h, list) else own[0] * drop_h
                        out, own = c.step(below, own, h_in=h_in)
                    new_states.extend(own)
                if keep is not None:
                    # a masked step keeps the states and repeats the last output, as Keras
                    k = keep[t]
                    new_states = [_keep_where(k, n, o) for n, o in zip(new_states, states)]
                    if prev is None or self.zero_output_for_mask:
                        prev = _core.zeros_like(out)
                    out = _keep_where(k, out, prev)
                    prev = out
                states = new_states
                outputs.append(out)
        if self.stateful and not _kg_probing():
            # the next call starts where this one ended (no gradient flows across calls)
            for var, st in zip(self._stateful_states(batch, x), states):
                var.assign(_core.stop_gradient(st))
        if self.return_sequences:
            output = _sh.stack(outputs, axis=1) if outputs else \
                _core.zeros((batch, 0, _output_size(self.cell)), dtype=x.dtype)
        else:
            output = outputs[-1] if outputs else states[len(states) - counts[-1]]
        if self.return_state:
            if isinstance(self.cell, StackedRNNCells):  # a list of states per cell, as Keras
                per_cell, at = [], 0
                for n in counts:
                    per_cell.append(list(states[at:at + n]))
                    at += n
                return (output, *per_cell)
            return (output, *states)
        return output

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(self.state_size)
        return out

    def _stateful_states(self, batch, like):
        from .tensor import Variable
        if self._states is None:
            self._states = [Variable(z, trainable=False, name=f"{self.name}/state_{i}")
                            for i, z in enumerate(_initial_states(self.cell, batch, like))]
        have = self._states[0]._value.shape[0]
        if have != batch:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': stateful, built for "
                             f"batches of {have}, called on a batch of {batch} (a stateful "
                             "layer needs one batch size: give batch_size to the Input)")
        return list(self._states)

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask,
                "cell": _serialize(self.cell)}

    @classmethod
    def from_config(cls, config):
        from .saving import deserialize_layer
        config = dict(config)
        cell = config.pop("cell")
        if isinstance(cell, dict) and "class_name" not in cell:
            raise ValueError("RNN.from_config: the cell must be a serialized layer "
                             "({'class_name': ..., 'config': ...})")
        return cls(deserialize_layer(cell), **config)


def _keep_where(keep, new, old):
    """``new`` where the step is kept (``keep`` ``[batch]`` of ones and zeros), else
    ``old``, for tensors of any rank."""
    k = _sh.reshape(keep, (-1,) + (1,) * (new._value.ndim - 1))
    return k * new + (1.0 - k) * old


def _unprefixed(name):
    """``name`` without a ``forward_`` or ``backward_`` that Bidirectional put in front."""
    for prefix in ("forward_", "backward_"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _kg_probing():
    from .keras_graph import probing
    return probing()


def _serialize(layer):
    from .saving import serialize_layer
    return serialize_layer(layer)


_CELL_KEYS = {"activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "dropout", "recurrent_dropout",
              "unit_forget_bias", "reset_after", "dtype", "kernel_regularizer",
              "recurrent_regularizer", "bias_regularizer", "kernel_constraint",
              "recurrent_constraint", "bias_constraint", "seed"}
_LAYER_KEYS = {"return_sequences", "return_state", "go_backwards", "stateful", "unroll",
               "time_major", "name", "trainable", "input_shape", "input_dim",
               "batch_input_shape", "dtype", "autocast", "activity_regularizer",
               "zero_output_for_mask"}
#: accepted for Keras scripts and ignored (there is one implementation of each layer)
_IGNORED_KEYS = {"use_cudnn", "implementation"}


class _CellLayer(RNN):
    """SimpleRNN, LSTM and GRU: the layer makes its cell from the keyword arguments."""

    _cell_class = None
    _UNTRACKED = RNN._UNTRACKED | {"_init_args"}

    def __init__(self, units, **kwargs):
        who = type(self).__name__
        for key in kwargs:
            if key not in _CELL_KEYS | _LAYER_KEYS | _IGNORED_KEYS:
                raise TypeError(f"{who}: unexpected keyword argument {key!r}")
        cell = self._cell_class(units, **{k: v for k, v in kwargs.items() if k in _CELL_KEYS})
        super().__init__(cell, **{k: v for k, v in kwargs.items() if k in _LAYER_KEYS})
        self._init_args = (units, dict(kwargs))

    def get_config(self):
        """Keras' flat form: ``units``, the cell's options and the layer's, so that
        ``type(layer)(**config)`` makes the same layer."""
        config = Layer.get_config(self)
        cell = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell.pop(key, None)
        config.update(cell)
        config.update(return_sequences=self.return_sequences, return_state=self.return_state,
                      go_backwards=self.go_backwards, stateful=self.stateful,
                      unroll=self.unroll, zero_output_for_mask=self.zero_output_for_mask)
        config.setdefault("activity_regularizer", None)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def fresh_copy(self, go_backwards=None, name=None):
        """A new layer made with the same arguments (fresh weights), optionally running the
        other way (``go_backwards``) under another ``name``."""
        units, kwargs = self._init_args
        kwargs = {**kwargs, "go_backwards": self.go_backwards if go_backwards is None
                  else go_backwards, "name": name or self.name,
                  "zero_output_for_mask": self.zero_output_for_mask}
        return type(self)(units, **kwargs)


class SimpleRNN(_CellLayer):
    """A fully connected recurrent layer (:class:`SimpleRNNCell` over time)."""

    _cell_class = SimpleRNNCell

    def get_config(self):
        config = super().get_config()
        config.pop("seed", None)             # (Keras' SimpleRNN leaves it out)
        return config


class LSTM(_CellLayer):
    """Long short-term memory (:class:`LSTMCell` over time), as ``keras.layers.LSTM``."""

    _cell_class = LSTMCell


class GRU(_CellLayer):
    """Gated recurrent unit (:class:`GRUCell` over time), as ``keras.layers.GRU``."""

    _cell_class = GRUCell
