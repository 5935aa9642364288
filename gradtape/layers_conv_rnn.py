"""Keras 3's convolutional LSTMs (``ConvLSTM1D``, ``ConvLSTM2D``, ``ConvLSTM3D``) and
``GroupQueryAttention``.

    conv = gt.keras.layers.ConvLSTM2D(16, 3, padding="same", return_sequences=True)
    y = conv(x)          # x: [batch, time, rows, cols, channels] -> [batch, time, rows, cols, 16]

A ConvLSTM is an LSTM whose input and recurrent products are convolutions: it runs on the
recurrent layers' machinery (:class:`gradtape.recurrent.RNN`: masking, ``go_backwards``,
``return_state``, ``stateful``, ``initial_state``), with the input convolution of every time
step made at once before the loop. Its cell holds Keras' weights under Keras' names and in
its order: ``kernel`` ``kernel_size + (channels, 4 * filters)``, ``recurrent_kernel``
``kernel_size + (filters, 4 * filters)``, ``bias`` ``(4 * filters,)`` (gates i, f, c, o;
``unit_forget_bias`` starts the forget gate's at 1), so Keras' weight files load as they
are. ``GroupQueryAttention`` holds its projections in ``EinsumDense`` sub-layers, as Keras.
"""
from __future__ import annotations

import math

import numpy as np

from . import initializers as _init
from .layers import InputSpec, Layer, _activation_name, _data_format, _positive_int, \
    _unique_name
from .ops import core as _core
from .ops import math as _m
from .ops import shape as _sh
from .recurrent import RNN, LSTMCell, _Cell

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "GroupQueryAttention"]


def _ntuple(value, n, what, who):
    """Keras' ``standardize_tuple``: an int, or ``n`` ints, each positive."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        out = (int(value),) * n
    else:
        try:
            out = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"{who}: {what} must be an int or a tuple of {n} ints, got "
                             f"{value!r}") from None
        if len(out) != n:
            raise ValueError(f"{who}: {what} must be an int or a tuple of {n} ints, got "
                             f"{value!r}")
    if min(out) <= 0:
        raise ValueError(f"{who}: every value of {what} must be positive, got {value!r}")
    return out


def _clamped_rate(value, what, who):
    """A dropout rate as Keras' ConvLSTM keeps it: clipped to [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{who}: {what} must be a float, got {value!r}")
    return min(1.0, max(0.0, float(value)))


def _conv_out(size, k, stride, dilation, padding):
    """The output length of a convolution along one axis (Keras'
    ``compute_conv_output_shape``)."""
    if padding == "same":
        return -(-size // stride)
    return (size - (k - 1) * dilation - 1) // stride + 1


class ConvLSTMCell(_Cell):
    """One step of a convolutional LSTM (Keras' ``ConvLSTMCell``, gates i, f, c, o):
    ``z = conv(x, kernel, strides, padding, dilation_rate) + bias + conv(h,
    recurrent_kernel, "same")``; ``c = f * c + i * activation(g)``, ``h = o *
    activation(c)``, the gates through ``recurrent_activation``. ``rank`` is the number of
    spatial axes (1, 2 or 3); the states have the shape of the input convolution's output.
    ``dropout`` and ``recurrent_dropout`` (clipped to [0, 1], as Keras; a rate of 1 drops
    nothing, as Keras) draw four masks per sequence, one per gate, of the step's input and
    state shapes."""

    gates = 4
    _bias_initial = LSTMCell._bias_initial

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 name=None, **kwargs):
        who = type(self).__name__
        if rank not in (1, 2, 3):
            raise ValueError(f"{who}: rank must be 1, 2 or 3, got {rank!r}")
        _positive_int(filters, "filters", who)
        super().__init__(filters, activation, recurrent_activation, use_bias,
                         kernel_initializer, recurrent_initializer, bias_initializer,
                         seed=seed, name=name, **kwargs)
        self.rank = int(rank)
        self.filters = self.units
        self.kernel_size = _ntuple(kernel_size, rank, "kernel_size", who)
        self.strides = _ntuple(strides, rank, "strides", who)
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
            raise ValueError(f"{who}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding.lower()
        self.data_format = _data_format(data_format, who)
        self.dilation_rate = _ntuple(dilation_rate, rank, "dilation_rate", who)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{who}: strides > 1 is not compatible with dilation_rate > 1, "
                             f"got strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.unit_forget_bias = bool(unit_forget_bias)
        self.dropout = _clamped_rate(dropout, "dropout", who)
        self.recurrent_dropout = _clamped_rate(recurrent_dropout, "recurrent_dropout", who)
        self._state_shape = None
        self.input_spec = InputSpec(ndim=rank + 2)

    _UNTRACKED = _Cell._UNTRACKED | {"_state_shape"}

    @property
    def _first(self):
        return self.data_format == "channels_first"

    @property
    def _channel_axis(self):
        """The channel axis, counted from the end (so it holds for steps and sequences)."""
        return -(self.rank + 1) if self._first else -1

    @property
    def state_size(self):
        """The two states' shapes after the batch axis (known once built)."""
        return [self._state_shape, self._state_shape]

    @property
    def _state_sizes(self):
        return [self._state_shape, self._state_shape]

    @property
    def output_size(self):
        return self.filters

    def build(self, input_shape):
        who = f"{type(self).__name__} layer '{self.name}'"
        shape = tuple(input_shape)
        if len(shape) != self.rank + 2:
            raise ValueError(f"{who}: expected a step input of rank {self.rank + 2} (batch, "
                             f"{self.rank} spatial axes and channels), got shape {shape}")
        spatial = shape[2:] if self._first else shape[1:-1]
        channels = shape[1] if self._first else shape[-1]
        if any(d is None for d in spatial):
            raise ValueError(f"{who}: ConvLSTM layers only support static input shapes for "
                             f"the spatial dimensions, got input shape {shape}")
        if channels is None:
            raise ValueError(f"{who}: the channel dimension of the inputs should be defined, "
                             f"got input shape {shape}")
        out = tuple(_conv_out(int(n), k, s, d, self.padding) for n, k, s, d in zip(
            spatial, self.kernel_size, self.strides, self.dilation_rate))
        if min(out) <= 0:
            raise ValueError(f"{who}: the input's spatial shape {tuple(spatial)} is smaller "
                             f"than the kernel {self.kernel_size} (dilation_rate "
                             f"{self.dilation_rate}) with padding 'valid'")
        channels = int(channels)
        self._state_shape = (self.filters,) + out if self._first else out + (self.filters,)
        k = 4 * self.filters
        self.kernel = self.add_weight("kernel", self.kernel_size + (channels, k),
                                      self.kernel_initializer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel",
                                                self.kernel_size + (self.filters, k),
                                                self.recurrent_initializer)
        self.bias = self.add_weight("bias", (k,), self._bias_initial) if self.use_bias \
            else None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={
            i + 1: int(d) for i, d in enumerate(shape[1:])})

    def _conv(self, x, w, recurrent=False):
        from .ops.nn import convolution
        fmt = ("NC" + "DHW"[3 - self.rank:]) if self._first else None
        if recurrent:
            return convolution(x, w, 1, "SAME", data_format=fmt)
        return convolution(x, w, list(self.strides), self.padding.upper(), data_format=fmt,
                           dilations=list(self.dilation_rate))

    def _gate_block(self, w, g):
        """Gate ``g``'s filters of the kernel ``w``."""
        return w[..., g * self.filters:(g + 1) * self.filters]

    def project(self, inputs, drop=None):
        """The input convolution (plus the bias) of one step ``[batch, *step]`` or of every
        step ``[batch, time, *step]`` at once; ``drop``: four dropout masks ``[batch,
        *step]``, one per gate."""
        x = inputs
        if drop is None:
            y = self._conv(x, self.kernel)
        else:
            seq = x._value.ndim == self.rank + 3
            y = _sh.concat([self._conv(x * (_sh.expand_dims(m, 1) if seq else m),
                                       self._gate_block(self.kernel, g))
                            for g, m in enumerate(drop)], axis=self._channel_axis)
        if self.bias is not None:
            b = self.bias
            if self._first:
                b = _sh.reshape(b, (4 * self.filters,) + (1,) * self.rank)
            y = y + b
        return y

    def zero_states(self, batch, like):
        return [_core.zeros((batch,) + self._state_shape, dtype=like.dtype) for _ in range(2)]

    def get_initial_state(self, batch_size=None):
        """Zero states ``[batch_size, *state shape]`` in the compute dtype (a list of two,
        as Keras)."""
        return [_core.zeros((int(batch_size),) + self._state_shape, dtype=self._compute_dtype)
                for _ in range(2)]

    def _recurrent(self, h, h_in, start, stop):
        if isinstance(h_in, (list, tuple)):
            return _sh.concat([self._conv(h_in[g], self._gate_block(self.recurrent_kernel, g),
                                          recurrent=True) for g in range(start, stop)],
                              axis=self._channel_axis)
        return self._conv(h if h_in is None else h_in, self.recurrent_kernel, recurrent=True)

    def step(self, xw, states, h_in=None):
        h, c = states
        z = xw + self._recurrent(h, h_in, 0, 4)
        i, f, g, o = _sh.split(z, 4, axis=self._channel_axis)
        act, gate = self.activation, self.recurrent_activation
        c = gate(f) * c + gate(i) * act(g)
        h = gate(o) * act(c)
        return h, [h, c]

    def get_config(self):
        config = {**Layer.get_config(self), "rank": self.rank}
        config.update(_cell_options(self))
        return config


def _cell_options(cell):
    """The cell's options in Keras' ConvLSTM config order."""
    base = Layer.get_config(cell)
    return {"filters": cell.filters, "kernel_size": cell.kernel_size, "strides": cell.strides,
            "padding": cell.padding, "data_format": cell.data_format,
            "dilation_rate": cell.dilation_rate,
            "activation": _activation_name(cell.activation),
            "recurrent_activation": _activation_name(cell.recurrent_activation),
            "use_bias": cell.use_bias, "kernel_initializer": base["kernel_initializer"],
            "recurrent_initializer": base["recurrent_initializer"],
            "bias_initializer": base["bias_initializer"],
            "unit_forget_bias": cell.unit_forget_bias,
            "kernel_regularizer": base["kernel_regularizer"],
            "recurrent_regularizer": base["recurrent_regularizer"],
            "bias_regularizer": base["bias_regularizer"],
            "kernel_constraint": base["kernel_constraint"],
            "recurrent_constraint": base["recurrent_constraint"],
            "bias_constraint": base["bias_constraint"],
            "dropout": cell.dropout, "recurrent_dropout": cell.recurrent_dropout,
            "seed": cell.seed}


_CELL_ARGS = ("strides", "padding", "data_format", "dilation_rate", "activation",
              "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "unit_forget_bias",
              "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
              "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
              "recurrent_dropout", "seed")


class _ConvLSTM(RNN):
    """Keras' ``ConvLSTM``: :class:`ConvLSTMCell` over the time axis of ``[batch, time,
    *spatial, channels]`` inputs (``[batch, time, channels, *spatial]`` with
    ``data_format="channels_first"``); the arguments and their defaults are Keras'."""

    _rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, **kwargs):
        args = dict(locals())
        if kwargs.get("name") is None:           # (Keras' name: conv_lstm2d, not conv_lst_m2d)
            kwargs["name"] = _unique_name(f"conv_lstm{self._rank}d")
        cell = ConvLSTMCell(self._rank, filters, kernel_size, name="conv_lstm_cell",
                            dtype=kwargs.get("dtype"), **{k: args[k] for k in _CELL_ARGS})
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.input_spec = InputSpec(ndim=self._rank + 3)

    def build(self, input_shape):
        super().build(input_shape)
        dims = tuple(input_shape)
        self.input_spec = InputSpec(ndim=self._rank + 3, axes={
            i + 2: int(d) for i, d in enumerate(dims[2:]) if d is not None})

    def _masks(self, x, training):
        """Keras' ConvLSTM dropout: four masks per sequence (one per gate) of the step's
        shape on the inputs, four of the state's shape on the state, each drawn when its
        rate is in (0, 1)."""
        from . import nn
        cell = self.cell
        drop_in = drop_h = None
        if training:
            rng = cell._seeded_generator(x._device)
            batch = x._value.shape[0]

            def masks(shape, rate):
                return [nn.dropout(_core.ones((batch,) + shape, dtype=x.dtype), rate=rate,
                                   rng=rng) for _ in range(4)]
            if 0 < cell.dropout < 1:
                drop_in = masks(tuple(x._value.shape[2:]), cell.dropout)
            if 0 < cell.recurrent_dropout < 1:
                drop_h = masks(cell._state_shape, cell.recurrent_dropout)
        return [(drop_in, drop_h)]

    def fresh_copy(self, go_backwards=None, name=None):
        """A new layer of the same configuration (fresh weights), optionally running the
        other way (``go_backwards``) under another ``name`` (what Bidirectional makes)."""
        config = self.get_config()
        config.update(go_backwards=self.go_backwards if go_backwards is None
                      else go_backwards, name=name or self.name)
        return type(self).from_config(config)

    def get_config(self):
        """Keras' flat form: the layer's options, then the cell's (no ``cell`` entry)."""
        config = RNN.get_config(self)
        del config["cell"]
        activity = config.pop("activity_regularizer", None)
        for key, value in _cell_options(self.cell).items():
            config[key] = value
            if key == "bias_regularizer":
                config["activity_regularizer"] = activity
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    _ACTIVITY_IN_CONFIG = True


def _cell_property(name):
    return property(lambda self: getattr(self.cell, name),
                    doc=f"The cell's ``{name}`` (as Keras' ConvLSTM property).")


for _name in ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
              "activation", "recurrent_activation", "use_bias", "kernel_initializer",
              "recurrent_initializer", "bias_initializer", "unit_forget_bias", "dropout",
              "recurrent_dropout"):
    setattr(_ConvLSTM, _name, _cell_property(_name))
del _name


class ConvLSTM1D(_ConvLSTM):
    """1-D convolutional LSTM over ``[batch, time, steps, channels]``, as
    ``keras.layers.ConvLSTM1D``."""

    _rank = 1


class ConvLSTM2D(_ConvLSTM):
    """2-D convolutional LSTM over ``[batch, time, rows, cols, channels]``, as
    ``keras.layers.ConvLSTM2D``."""

    _rank = 2


class ConvLSTM3D(_ConvLSTM):
    """3-D convolutional LSTM over ``[batch, time, depth, rows, cols, channels]``, as
    ``keras.layers.ConvLSTM3D``."""

    _rank = 3


# --- GroupQueryAttention ----------------------------------------------------------------------

class GroupQueryAttention(Layer):
    """Grouped-query attention, as ``keras.layers.GroupQueryAttention`` (Keras'
    ``GroupedQueryAttention``): ``num_query_heads`` query heads of size ``head_dim`` share
    ``num_key_value_heads`` key/value heads (each repeated ``num_query_heads //
    num_key_value_heads`` times); inputs ``[batch, time, features]``.

    ``gqa(query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
    attention_mask=None, return_attention_scores=False, training=None,
    use_causal_mask=False)``: per head ``softmax(q k^T / sqrt(head_dim)) v``, then the
    output projection back to the query's feature size. ``attention_mask`` ``[batch, T,
    S]`` is true where a query may attend; the inputs' Keras masks, ``use_causal_mask`` and
    ``sliding_window`` (``|t - s| < sliding_window``) are and-ed in. As Keras, with
    ``return_attention_scores`` or ``dropout`` the masked softmax zeroes masked
    probabilities (a query that may attend nowhere gets zeros); otherwise Keras' fused
    ``dot_product_attention`` runs (such a query gets the mean of the values).
    ``dropout`` drops attention probabilities while training (the returned scores are
    those before dropout); ``use_gate`` multiplies the heads' output by
    ``sigmoid(query projection)``. ``flash_attention=True`` is refused as Keras' TensorFlow
    backend refuses it. The projections are EinsumDense sub-layers named ``query``,
    ``key``, (``gate``), ``value`` and ``attention_output``, Keras' weights in Keras'
    order and saving paths."""

    supports_masking = True
    _INITIALIZER_ARGS = {"kernel_initializer": "kernel_initializer",
                         "bias_initializer": "bias_initializer"}
    _ACTIVITY_IN_CONFIG = True

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0,
                 use_bias=True, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 name=None, **kwargs):
        super().__init__(name=name or _unique_name("grouped_query_attention"),
                         activity_regularizer=activity_regularizer, **kwargs)
        who = "GroupQueryAttention"
        self.head_dim = _positive_int(head_dim, "head_dim", who)
        self.num_query_heads = _positive_int(num_query_heads, "num_query_heads", who)
        self.num_key_value_heads = _positive_int(num_key_value_heads, "num_key_value_heads",
                                                 who)
        if num_query_heads % num_key_value_heads:
            raise ValueError(f"{who}: num_query_heads must be divisible by "
                             f"num_key_value_heads, got {num_query_heads} and "
                             f"{num_key_value_heads}")
        self.num_repeats = self.num_query_heads // self.num_key_value_heads
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
                not 0 <= dropout < 1:
            raise ValueError(f"{who}: dropout must be a float in [0, 1), got {dropout!r}")
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        self.use_gate = bool(use_gate)
        if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(
                sliding_window, (int, np.integer)) or sliding_window <= 0):
            raise ValueError(f"{who}: sliding_window must be None or a positive integer, got "
                             f"{sliding_window!r}")
        self.sliding_window = None if sliding_window is None else int(sliding_window)
        self._flash_attention = flash_attention or None
        if self._flash_attention and self.dropout > 0:
            raise ValueError(f"{who}: dropout is not supported when flash attention is "
                             "enabled; set dropout to 0.0 to use flash attention")
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)
        self._sublayer_options = {"kernel_regularizer": kernel_regularizer,
                                  "bias_regularizer": bias_regularizer,
                                  "activity_regularizer": activity_regularizer,
                                  "kernel_constraint": kernel_constraint,
                                  "bias_constraint": bias_constraint}
        self.seed = seed
        self._inverse_sqrt_head_dim = 1.0 / math.sqrt(float(self.head_dim))
        self._query_dense = self._key_dense = self._gate_dense = None
        self._value_dense = self._output_dense = None

    _UNTRACKED = Layer._UNTRACKED | {"_sublayer_options", "_flash_attention"}

    def _convert_input(self, x):
        return x

    def __call__(self, query, value=None, key=None, **kwargs):
        from .layers_extra import _attention_call
        return _attention_call(self, super().__call__, "GroupQueryAttention", "gqa", query,
                               value, key, kwargs)

    def _dense(self, equation, heads, bias_axes, name, **extra):
        from .layers_more import EinsumDense

        def fresh(init):        # (a copy per sub-layer, as Keras)
            return _init.get(_init.serialize(init))
        opts = {k: v for k, v in self._sublayer_options.items() if v is not None}
        return EinsumDense(equation, output_shape=heads,
                           bias_axes=bias_axes if self.use_bias else None, name=name,
                           kernel_initializer=fresh(self.kernel_initializer),
                           bias_initializer=fresh(self.bias_initializer),
                           dtype=self._dtype_policy, **opts, **extra)

    def build(self, query_shape, value_shape=None, key_shape=None):
        from .layers_extra import _attention_shapes
        query_shape, value_shape, key_shape = _attention_shapes(query_shape, value_shape,
                                                                key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        shapes = {"query": tuple(query_shape), "value": tuple(value_shape),
                  "key": tuple(key_shape)}
        for label, shape in shapes.items():
            if len(shape) != 3:
                raise ValueError(f"GroupQueryAttention layer '{self.name}': the {label} must be "
                                 f"[batch, time, features], got shape {shape}")
        if shapes["value"][1:-1] != shapes["key"][1:-1]:
            raise ValueError(f"GroupQueryAttention layer '{self.name}': the value and the key "
                             f"must agree on every axis but the last, got {shapes['value']} "
                             f"and {shapes['key']}")
        self.feature_dim = int(shapes["query"][-1])
        hq, hkv, d = self.num_query_heads, self.num_key_value_heads, self.head_dim
        self._query_dense = self._dense("bqm,muh->bquh", (None, hq, d), "uh", "query")
        self._query_dense.build(shapes["query"])
        self._key_dense = self._dense("bkm,mvh->bkvh", (None, hkv, d), "vh", "key")
        self._key_dense.build(shapes["key"])
        if self.use_gate:
            self._gate_dense = self._dense("bqm,muh->bquh", (None, hq, d), "uh", "gate",
                                           activation="sigmoid")
            self._gate_dense.build(shapes["query"])
        self._value_dense = self._dense("bkm,mvh->bkvh", (None, hkv, d), "vh", "value")
        self._value_dense.build(shapes["value"])
        self._output_dense = self._dense("bquh,uhm->bqm", (None, self.feature_dim), "m",
                                         "attention_output")
        self._output_dense.build((None, None, hq, d))

    def call(self, inputs, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=False,
             use_causal_mask=False, mask=None):
        from . import keras_ops as K
        from . import nn
        from .layers_extra import MultiHeadAttention, _masked_scores
        q_in, v_in, k_in = inputs
        masks = list(mask) if isinstance(mask, (list, tuple)) else [mask, None, None]
        masks = [given if given is not None else auto for given, auto in
                 zip((query_mask, value_mask, key_mask), masks + [None] * (3 - len(masks)))]
        if self._flash_attention and return_attention_scores:
            raise ValueError(f"GroupQueryAttention layer '{self.name}': returning attention "
                             "scores is not supported when flash attention is enabled")
        causal_only = use_causal_mask and attention_mask is None and \
            all(m is None for m in masks) and self.sliding_window is None
        mask = None if causal_only else self._attention_mask(
            q_in, v_in, MultiHeadAttention._keras_attention_mask(masks, attention_mask),
            use_causal_mask)
        gate = self._gate_dense(q_in) if self.use_gate else None
        q = self._query_dense(q_in)
        k = _sh.repeat(self._key_dense(k_in), self.num_repeats, axis=2)
        v = _sh.repeat(self._value_dense(v_in), self.num_repeats, axis=2)
        scores = None
        if not (self.dropout > 0 or return_attention_scores):
            # Keras' fused path
            if mask is not None:
                mask = _sh.expand_dims(mask, 1) if mask._value.ndim == 3 else mask
            out = K.dot_product_attention(q, k, v, mask=mask,
                                          scale=self._inverse_sqrt_head_dim,
                                          is_causal=causal_only,
                                          flash_attention=self._flash_attention)
        else:
            if causal_only:
                mask = self._attention_mask(q_in, v_in, None, True)
            q = q * self._inverse_sqrt_head_dim
            scores = K.einsum("bquh,bkuh->buqk", q, k)
            if mask is not None:
                keep = _sh.expand_dims(mask, 1) if mask._value.ndim == 3 else mask
                scores = _masked_scores(scores, keep)
                scores = nn.softmax(scores, axis=-1)
                scores = _m.where(keep, scores, _core.zeros_like(scores))
            else:
                scores = nn.softmax(scores, axis=-1)
            dropped = scores
            if training and self.dropout > 0:
                dropped = nn.dropout(scores, rate=self.dropout,
                                     rng=self._seeded_generator(scores._device))
            out = K.einsum("buqk,bkuh->bquh", dropped, v)
        out = self._output_dense(out * gate if gate is not None else out)
        return (out, scores) if return_attention_scores else out

    def _attention_mask(self, q_in, v_in, mask, causal):
        """Keras' ``_compute_attention_mask``: ``mask`` (the inputs' masks and the given
        attention mask, boolean) and-ed with the causal and the sliding-window bands, as
        ``[batch or 1, T, S]``; None when there is nothing to mask."""
        from .layers_extra import _all_true, _band_masks
        t, s = q_in._value.shape[1], v_in._value.shape[1]
        batch = q_in._value.shape[0]
        mask = _all_true(([] if mask is None else [mask]) +
                         _band_masks(t, s, causal, self.sliding_window))
        if mask is None:
            return None
        shape = tuple(mask._value.shape)
        full = (batch, t, s)
        if len(shape) > 3 or any(m not in (1, w) for m, w in zip(shape[::-1], full[::-1])):
            raise ValueError(f"GroupQueryAttention layer '{self.name}': attention_mask of "
                             f"shape {shape} does not fit {t} queries and {s} keys (expected "
                             f"[batch, {t}, {s}])")
        return mask

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, (list, tuple)) and mask else None

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        """The output's shape: the query's (Keras' signature ``(query_shape, value_shape,
        key_shape=None)``; a list of the shapes works too)."""
        from .layers_extra import _attention_shapes
        query_shape, value_shape, key_shape = _attention_shapes(query_shape, value_shape,
                                                                key_shape)
        query_shape = tuple(query_shape)
        if value_shape is not None:
            value_shape = tuple(value_shape)
            key_shape = value_shape if key_shape is None else tuple(key_shape)
            if query_shape[-1] != value_shape[-1]:
                raise ValueError(f"GroupQueryAttention layer '{self.name}': the last dimension "
                                 f"of query_shape and value_shape must be equal, got "
                                 f"{query_shape} and {value_shape}")
            if value_shape[1:-1] != key_shape[1:-1]:
                raise ValueError(f"GroupQueryAttention layer '{self.name}': all dimensions of "
                                 f"value and key except the last must be equal, got "
                                 f"{value_shape} and {key_shape}")
        return query_shape

    def get_config(self):
        base = super().get_config()
        config = {k: base[k] for k in ("name", "trainable", "dtype")}
        config.update(head_dim=self.head_dim, num_query_heads=self.num_query_heads,
                      num_key_value_heads=self.num_key_value_heads, use_bias=self.use_bias,
                      use_gate=self.use_gate, sliding_window=self.sliding_window,
                      dropout=self.dropout, kernel_initializer=base["kernel_initializer"],
                      bias_initializer=base["bias_initializer"])
        from .constraints import get as _get_constraint, serialize as _ser_constraint
        from .regularizers import get as _get_regularizer, serialize as _ser_regularizer
        for key in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            value = self._sublayer_options[key]
            config[key] = None if value is None else _ser_regularizer(_get_regularizer(value))
        for key in ("kernel_constraint", "bias_constraint"):
            value = self._sublayer_options[key]
            config[key] = None if value is None else _ser_constraint(_get_constraint(value))
        config["seed"] = self.seed
        return config
