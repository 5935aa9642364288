"""Recurrent layers, as Keras': ``SimpleRNN``, ``LSTM``, ``GRU``, their cells and ``RNN``.

    lstm = gt.layers.LSTM(64, return_sequences=True)
    y = lstm(x)                 # x: [batch, time, features] -> y: [batch, time, 64]

Weights follow Keras' layout and gate order, so Keras weights load as they are: ``kernel``
``[features, k * units]``, ``recurrent_kernel`` ``[units, k * units]`` and ``bias`` (LSTM:
gates i, f, c, o; GRU: z, r, h, with ``reset_after=True`` a ``[2, 3 * units]`` bias, as
TensorFlow 2's default). The input projection of every time step is one matrix product
before the loop; each step then adds the recurrent product. ``dropout`` and
``recurrent_dropout`` use one mask per sequence (the same at every step), as Keras does,
shared by all gates (Keras draws one per gate when ``recurrent_dropout`` is set).
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

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
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

    def project(self, inputs):
        """``inputs @ kernel (+ the input bias)`` over the last axis, every step at once."""
        x = inputs
        shape = tuple(x._value.shape)
        flat = _sh.reshape(x, (-1, shape[-1]))
        y = _la.matmul(flat, self.kernel)
        b = self._input_bias()
        if b is not None:
            y = y + b
        return _sh.reshape(y, shape[:-1] + (self.gates * self.units,))

    def zero_states(self, batch, like):
        return [_core.zeros((batch, self.units), dtype=like.dtype) for _ in self._state_sizes]

    def call(self, inputs, states, training=False):
        """One step on raw inputs ``[batch, features]`` (Keras' cell call)."""
        return self.step(self.project(inputs), list(states))

    def step(self, xw, states):
        raise NotImplementedError

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": _activation_name(self.activation),
                "recurrent_activation": _activation_name(self.recurrent_activation),
                "use_bias": self.use_bias, "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout}


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + h @ recurrent_kernel + bias)``."""

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, name=None,
                 **kwargs):
        super().__init__(units, activation, None, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         name=name, **kwargs)

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
                 recurrent_dropout=0.0, name=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         name=name, **kwargs)
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
        z = xw + _la.matmul(h if h_in is None else h_in, self.recurrent_kernel)
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
                 reset_after=True, name=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         name=name, **kwargs)
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
        r_in = h if h_in is None else h_in
        u = self.units
        x_z, x_r, x_h = _sh.split(xw, 3, axis=-1)
        gate, act = self.recurrent_activation, self.activation
        if self.reset_after:
            inner = _la.matmul(r_in, self.recurrent_kernel)
            if self.bias is not None:
                inner = inner + self.bias[1]
            r_z, r_r, r_h = _sh.split(inner, 3, axis=-1)
            z = gate(x_z + r_z)
            r = gate(x_r + r_r)
            hh = act(x_h + r * r_h)
        else:
            uk = self.recurrent_kernel
            zr = _la.matmul(r_in, uk[:, :2 * u])
            r_z, r_r = _sh.split(zr, 2, axis=-1)
            z = gate(x_z + r_z)
            r = gate(x_r + r_r)
            hh = act(x_h + _la.matmul(r * r_in, uk[:, 2 * u:]))
        out = z * h + (1.0 - z) * hh
        return out, [out]

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Several cells run as one, each fed the previous one's output (Keras'
    ``StackedRNNCells``; ``RNN([cell1, cell2])`` makes one). The states are the cells'
    states in order; ``RNN(..., return_state=True)`` returns them as a list per cell."""

    def __init__(self, cells, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        cells = list(cells) if isinstance(cells, (list, tuple)) else [cells]
        if not cells:
            raise ValueError("StackedRNNCells: give at least one cell")
        for c in cells:
            if not isinstance(c, _Cell):
                raise TypeError(f"StackedRNNCells: every cell must be a SimpleRNNCell, "
                                f"LSTMCell or GRUCell, got {type(c).__name__}")
        self.cells = cells

    @property
    def state_size(self):
        """One entry per cell: that cell's ``state_size``."""
        return [c.state_size for c in self.cells]

    @property
    def _state_sizes(self):
        return [n for c in self.cells for n in c._state_sizes]

    @property
    def output_size(self):
        return self.cells[-1].units

    @property
    def units(self):
        return self.cells[-1].units

    def build(self, input_shape):
        shape = tuple(input_shape)
        for c in self.cells:
            if not c.built:
                c.build(shape)
                c.built = True
            shape = shape[:-1] + (c.units,)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: int(input_shape[-1])})

    def zero_states(self, batch, like):
        return [z for c in self.cells for z in c.zero_states(batch, like)]

    def call(self, inputs, states, training=False):
        """One step on raw inputs ``[batch, features]``: ``(output, [states of each
        cell])`` (``states`` a flat list or a list per cell)."""
        flat = _flat_states(states)
        out, new, at = inputs, [], 0
        for c in self.cells:
            k = len(c._state_sizes)
            out, s = c.call(out, flat[at:at + k], training=training)
            new.append(list(s))
            at += k
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

    ``return_sequences``: every step's output ``[batch, time, units]`` (else the last one);
    ``return_state``: also the final states (``[output, h]``, LSTM ``[output, h, c]``);
    ``go_backwards``: from the last step to the first (the sequence returned reversed, as
    Keras). Call with ``initial_state=[...]`` to start from given states (zeros otherwise).
    ``cell`` may be a list of cells (run as :class:`StackedRNNCells`).
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
        if not isinstance(cell, (_Cell, StackedRNNCells)):
            raise TypeError(f"RNN: cell must be a SimpleRNNCell, LSTMCell or GRUCell, a list "
                            f"of them or StackedRNNCells, got {type(cell).__name__}")
        if time_major:
            raise ValueError(f"{type(self).__name__}: time_major=True is not supported; "
                             "transpose the inputs to [batch, time, features]")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.stateful = bool(stateful)
        self._states = None             # stateful: the states carried from batch to batch
        self.input_spec = InputSpec(ndim=3)

    _UNTRACKED = Layer._UNTRACKED | {"_states"}

    @property
    def states(self):
        """A stateful layer's current states (None before its first call)."""
        return None if self._states is None else list(self._states)

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
        states = list(states) if isinstance(states, (list, tuple)) else [states]
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

    @property
    def units(self):
        return self.cell.units

    def reversed_copy(self):
        raise TypeError(f"{type(self).__name__}: a layer made from a cell cannot copy itself; "
                        "give Bidirectional a backward_layer")

    def build(self, input_shape):
        self.cell.build(tuple(input_shape[:1]) + tuple(input_shape[2:]))
        self.cell.built = True
        self.input_spec = InputSpec(ndim=3, axes={-1: int(input_shape[-1])})
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
        """Dropout masks (scaled), one per sequence and cell: ``[(on the cell's inputs, on
        its state)]``."""
        from . import nn
        batch = x._value.shape[0]
        dim = x._value.shape[-1]
        out = []
        for cell in self._cells():
            drop_in = drop_h = None
            if training and cell.dropout:
                drop_in = nn.dropout(_core.ones((batch, dim), dtype=x.dtype),
                                     rate=cell.dropout)
            if training and cell.recurrent_dropout:
                drop_h = nn.dropout(_core.ones((batch, cell.units), dtype=x.dtype),
                                    rate=cell.recurrent_dropout)
            out.append((drop_in, drop_h))
            dim = cell.units
        return out

    def call(self, inputs, initial_state=None, training=None, mask=None):
        cell = self.cell
        cells = self._cells()
        sizes = [c.units for c in cells for _ in c._state_sizes]      # each state's width
        x = inputs
        batch, steps = x._value.shape[0], x._value.shape[1]
        drops = self._masks(x, training)
        if drops[0][0] is not None:
            x = x * _sh.expand_dims(drops[0][0], 1)
        if initial_state is None and self.stateful and not _kg_probing():
            states = self._stateful_states(batch, x)
        elif initial_state is None:
            states = cell.zero_states(batch, x)
        else:
            states = _flat_states(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            if len(states) != len(sizes):
                raise ValueError(f"{type(self).__name__} layer '{self.name}': expected "
                                 f"{len(sizes)} initial state(s), got {len(states)}")
            for i, s in enumerate(states):
                want = (batch, sizes[i])
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
            keep = _sh.unstack(_sh.expand_dims(_core.cast(mask, x.dtype), -1), axis=1)
            if self.go_backwards:
                keep = keep[::-1]
        outputs = []
        if steps:
            xw = cells[0].project(x)                     # [batch, time, gates * units]
            per_step = _sh.unstack(xw, axis=1)
            if self.go_backwards:
                per_step = per_step[::-1]
            prev = None
            for t, xw_t in enumerate(per_step):
                out, new_states, at = None, [], 0
                for i, (c, (drop_in, drop_h)) in enumerate(zip(cells, drops)):
                    own = states[at:at + len(c._state_sizes)]
                    at += len(own)
                    if i:                                # a stacked cell: the one below's
                        below = out * drop_in if drop_in is not None else out
                        xw_t = c.project(below)
                    h_in = own[0] * drop_h if drop_h is not None else None
                    out, own = c.step(xw_t, own, h_in=h_in)
                    new_states.extend(own)
                if keep is not None:
                    # a masked step keeps the states and repeats the last output, as Keras
                    k = keep[t]
                    new_states = [k * n + (1.0 - k) * o for n, o in zip(new_states, states)]
                    if prev is None or self.zero_output_for_mask:
                        prev = _core.zeros_like(out)
                    out = k * out + (1.0 - k) * prev
                    prev = out
                states = new_states
                outputs.append(out)
        if self.stateful and not _kg_probing():
            # the next call starts where this one ended (no gradient flows across calls)
            for var, st in zip(self._stateful_states(batch, x), states):
                var.assign(_core.stop_gradient(st))
        if self.return_sequences:
            output = _sh.stack(outputs, axis=1) if outputs else \
                _core.zeros((batch, 0, cell.units), dtype=x.dtype)
        else:
            output = outputs[-1] if outputs else states[len(states) -
                                                         len(cells[-1]._state_sizes)]
        if self.return_state:
            if isinstance(cell, StackedRNNCells):       # a list of states per cell, as Keras
                per_cell, at = [], 0
                for c in cells:
                    per_cell.append(list(states[at:at + len(c._state_sizes)]))
                    at += len(c._state_sizes)
                return [output] + per_cell
            return [output] + list(states)
        return output

    def compute_mask(self, inputs, mask=None):
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(self.cell._state_sizes)
        return out

    def _stateful_states(self, batch, like):
        from .tensor import Variable
        if self._states is None:
            self._states = [Variable(z, trainable=False, name=f"{self.name}/state_{i}")
                            for i, z in enumerate(self.cell.zero_states(batch, like))]
        have = self._states[0]._value.shape[0]
        if have != batch:
            raise ValueError(f"{type(self).__name__} layer '{self.name}': stateful, built for "
                             f"batches of {have}, called on a batch of {batch} (a stateful "
                             "layer needs one batch size: give batch_size to the Input)")
        return list(self._states)

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "cell": _serialize(self.cell)}

    @classmethod
    def from_config(cls, config):
        from .saving import deserialize_layer
        config = dict(config)
        cell = config.pop("cell")
        if isinstance(cell, dict) and "class_name" not in cell:
            raise ValueError("RNN.from_config: the cell must be a serialized layer "
                             "({'class_name': ..., 'config': ...})")
        return cls(deserialize_layer(cell), **config)


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
              "recurrent_constraint", "bias_constraint"}
_LAYER_KEYS = {"return_sequences", "return_state", "go_backwards", "stateful", "unroll",
               "time_major", "name", "trainable", "input_shape", "input_dim",
               "batch_input_shape", "dtype", "autocast", "activity_regularizer",
               "zero_output_for_mask"}


class _CellLayer(RNN):
    """SimpleRNN, LSTM and GRU: the layer makes its cell from the keyword arguments."""

    _cell_class = None
    _UNTRACKED = RNN._UNTRACKED | {"_init_args"}

    def __init__(self, units, **kwargs):
        who = type(self).__name__
        for key in kwargs:
            if key not in _CELL_KEYS | _LAYER_KEYS:
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
                      go_backwards=self.go_backwards, stateful=self.stateful)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def reversed_copy(self):
        """A new layer of the same configuration running the other way in time (fresh
        weights), named ``backward_<name>`` (what Bidirectional makes)."""
        units, kwargs = self._init_args
        kwargs = {**kwargs, "go_backwards": not self.go_backwards,
                  "name": f"backward_{self.name}"}
        return type(self)(units, **kwargs)


class SimpleRNN(_CellLayer):
    """A fully connected recurrent layer (:class:`SimpleRNNCell` over time)."""

    _cell_class = SimpleRNNCell


class LSTM(_CellLayer):
    """Long short-term memory (:class:`LSTMCell` over time), as ``keras.layers.LSTM``."""

    _cell_class = LSTMCell


class GRU(_CellLayer):
    """Gated recurrent unit (:class:`GRUCell` over time), as ``keras.layers.GRU``."""

    _cell_class = GRUCell
