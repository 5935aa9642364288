"""``gt.keras``: the training stack under the names ``tf.keras`` uses.

    model = gt.keras.Sequential([gt.keras.layers.Dense(10)])
    opt = gt.keras.optimizers.Adam()
    loss = gt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

The import forms of Keras work too: ``from gradtape.keras.layers import Dense``,
``import gradtape.keras.backend as K``, ``from gradtape.keras.utils import to_categorical``,
``from gradtape.keras.optimizers.schedules import ExponentialDecay``.
"""
from __future__ import annotations

import importlib.machinery
import sys
import types

from . import (callbacks, constraints, initializers, layers, losses, metrics, optimizers,
               regularizers)
from . import keras_ops as ops
from .keras_graph import Input, KerasTensor
from .keras_training import Sequence
from .layers import InputLayer, Layer, Model, Sequential

__all__ = ["layers", "optimizers", "losses", "metrics", "initializers", "regularizers",
           "constraints", "callbacks", "activations", "utils", "backend", "models", "saving",
           "preprocessing", "mixed_precision", "random", "config", "Sequential", "Model",
           "Layer", "Input", "InputLayer", "KerasTensor", "Loss", "Metric", "Optimizer",
           "Initializer", "Regularizer", "InputSpec", "Variable", "name_scope", "DTypePolicy",
           "ops", "datasets", "applications", "tree", "dtype_policies", "FloatDTypePolicy",
           "RematScope", "remat", "device", "version", "wrappers", "distillation"]

# ``import gradtape.keras.layers`` and ``from gradtape.keras.utils import to_categorical``
# work as they do for ``keras``: this module stands as a package (an empty ``__path__``, so
# an unknown submodule is "No module named ...") whose submodules are the objects below,
# registered in ``sys.modules`` at the end of this file.
__path__: list = []


def _namespace(name, doc, **attrs):
    """A module object ``gradtape.keras.<name>`` holding ``attrs`` (importable once
    registered in ``sys.modules``)."""
    mod = types.ModuleType(f"{__name__}.{name}", doc)
    mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, None)
    mod.__package__ = __name__
    for key, value in attrs.items():
        setattr(mod, key, value)
    mod.__all__ = sorted(k for k in attrs if not k.startswith("_"))
    return mod


def _activation_get(identifier):
    """The activation for a name (``"relu"``, ``"hard_sigmoid"``), ``None`` (linear), a
    serialized form (``{"class_name": "function", "config": "relu"}``) or a callable."""
    if isinstance(identifier, str) and hasattr(activations, identifier.lower()) and \
            identifier.lower() in layers.activation_names():
        return getattr(activations, identifier.lower())
    if isinstance(identifier, dict):
        name = identifier.get("config")
        if not isinstance(name, str):
            name = identifier.get("class_name")
        if not isinstance(name, str):
            raise ValueError(f"Could not interpret activation function identifier: "
                             f"{identifier!r}")
        return _activation_get(name)
    try:
        return layers.get_activation(identifier)
    except (TypeError, ValueError):
        raise ValueError(f"Could not interpret activation function identifier: "
                         f"{identifier!r} (known activations: "
                         f"{layers.activation_names()})") from None


def _activation_serialize(activation):
    """The name an activation is saved under (``"relu"``; a function of yours: its name,
    which ``load_model`` finds in ``custom_objects``)."""
    if not callable(activation):
        raise TypeError(f"activations.serialize: expected an activation function, got "
                        f"{activation!r}")
    return layers._activation_name(activation)


def _activation_deserialize(config, custom_objects=None):
    """The activation :func:`serialize` named (looked up in ``custom_objects`` first)."""
    if isinstance(config, str) and custom_objects and config in custom_objects:
        return custom_objects[config]
    return _activation_get(config)


def _activations():
    ns = _namespace("activations", "Activations by name, as tf.keras.activations: "
                    "gt.keras.activations.relu(x), gt.keras.activations.get('relu'), "
                    "serialize, deserialize.",
                    get=_activation_get, serialize=_activation_serialize,
                    deserialize=_activation_deserialize, names=layers.activation_names)
    for name in layers.activation_names():          # keras.activations.relu(x) ...
        setattr(ns, name, layers.get_activation(name))
    for name, fn in layers.KERAS_ACTIVATIONS.items():   # Keras' signatures
        setattr(ns, name, fn)
    ns.linear = layers.get_activation(None)
    ns.__all__ = sorted(k for k in vars(ns) if not k.startswith("_"))
    return ns


activations = _activations()


def _unpack(data):
    from .keras_training import unpack_x_y_sample_weight
    return unpack_x_y_sample_weight(data)


def _pack(x, y=None, sample_weight=None):
    from .keras_training import pack_x_y_sample_weight
    return pack_x_y_sample_weight(x, y, sample_weight)


def _set_random_seed(seed):
    """Seed Python's ``random``, NumPy's global generator and gradtape's
    (``gt.random.set_seed``) at once, as ``keras.utils.set_random_seed``."""
    import random as _py_random
    import numpy as np
    from . import random as _gt_random
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"set_random_seed: expected an int seed, got {seed!r}")
    _py_random.seed(int(seed))
    np.random.seed(int(seed))
    _gt_random.set_seed(int(seed))
    _GLOBAL_SEED_GENERATOR[0] = None        # (keras.random's, drawn again from the seed)


from . import keras_utils as _ku  # noqa: E402
from . import audio as _audio  # noqa: E402
from . import feature_space as _feature_space  # noqa: E402
from . import saving as _saving  # noqa: E402

utils = _namespace(
    "utils", "Keras' data utilities: to_categorical, pad_sequences, "
    "timeseries_dataset_from_array, normalize, split_dataset, Progbar, Sequence, "
    "set_random_seed, custom objects.",
    to_categorical=_ku.to_categorical, normalize=_ku.normalize,
    pad_sequences=_ku.pad_sequences,
    timeseries_dataset_from_array=_ku.timeseries_dataset_from_array,
    text_dataset_from_directory=_ku.text_dataset_from_directory,
    image_dataset_from_directory=_ku.image_dataset_from_directory,
    load_img=_ku.load_img, save_img=_ku.save_img,
    audio_dataset_from_directory=_audio.audio_dataset_from_directory,
    FeatureSpace=_feature_space.FeatureSpace,
    split_dataset=_ku.split_dataset, Progbar=_ku.Progbar, Sequence=Sequence,
    PyDataset=Sequence, unpack_x_y_sample_weight=_unpack, pack_x_y_sample_weight=_pack,
    set_random_seed=_set_random_seed, get_custom_objects=_ku.get_custom_objects,
    custom_object_scope=_ku.custom_object_scope, CustomObjectScope=_ku.CustomObjectScope,
    register_keras_serializable=_saving.register_keras_serializable,
    serialize_keras_object=_saving.serialize_layer,
    deserialize_keras_object=_saving.deserialize_layer,
    enable_interactive_logging=_ku.enable_interactive_logging,
    disable_interactive_logging=_ku.disable_interactive_logging,
    is_interactive_logging_enabled=_ku.is_interactive_logging_enabled, Config=_ku.Config)
from . import keras_datasets as _kd  # noqa: E402

utils.get_file = _kd.get_file
from . import model_plot as _model_plot  # noqa: E402

utils.model_to_dot = _model_plot.model_to_dot
utils.plot_model = _model_plot.plot_model
datasets = _kd.datasets

models = _namespace(
    "models", "Keras' model classes and files: Sequential, Model, load_model, save_model, "
    "clone_model, model_from_json.",
    Sequential=Sequential, Model=Model, load_model=_saving.load_model,
    save_model=_saving.save_model, clone_model=_saving.clone_model,
    model_from_json=_saving.model_from_json)
saving = _namespace(
    "saving", "Keras' saving API: load_model, save_model, register_keras_serializable, "
    "custom objects.",
    load_model=_saving.load_model, save_model=_saving.save_model,
    register_keras_serializable=_saving.register_keras_serializable,
    serialize_keras_object=_saving.serialize_layer,
    deserialize_keras_object=_saving.deserialize_layer,
    get_custom_objects=_ku.get_custom_objects, custom_object_scope=_ku.custom_object_scope,
    CustomObjectScope=_ku.CustomObjectScope)
_sequence = _namespace("preprocessing.sequence", "keras.preprocessing.sequence: pad_sequences.",
                       pad_sequences=_ku.pad_sequences)
preprocessing = _namespace(
    "preprocessing", "keras.preprocessing: sequence.pad_sequences, "
    "timeseries_dataset_from_array.",
    sequence=_sequence, timeseries_dataset_from_array=_ku.timeseries_dataset_from_array,
    text_dataset_from_directory=_ku.text_dataset_from_directory,
    image_dataset_from_directory=_ku.image_dataset_from_directory)
preprocessing.__path__ = []
from . import mixed_precision as _mp  # noqa: E402

mixed_precision = _namespace(
    "mixed_precision", "Keras' mixed precision: DTypePolicy (Policy), set_global_policy, "
    "global_policy (dtype_policy, set_dtype_policy), LossScaleOptimizer.",
    DTypePolicy=_mp.DTypePolicy, Policy=_mp.Policy, global_policy=_mp.global_policy,
    set_global_policy=_mp.set_global_policy, dtype_policy=_mp.dtype_policy,
    set_dtype_policy=_mp.set_dtype_policy, LossScaleOptimizer=optimizers.LossScaleOptimizer)
layers.serialize = _saving.serialize_layer
layers.deserialize = _saving.deserialize_layer


def _clear_session(free_memory=True):
    """Reset Keras' generated names (the next ``Dense()`` is ``dense`` again) and the global
    seed generator of ``keras.random``, as ``keras.backend.clear_session``; gradtape keeps no
    graph or session to free."""
    with layers._name_lock:
        layers._name_counters.clear()
    _clear_all()


def _epsilon():
    """Keras' fuzz factor (1e-7): the losses' probability clip and the constraints' norm
    guard."""
    return constraints._EPSILON[0]


def _set_epsilon(value):
    """Set the fuzz factor :func:`epsilon` returns (the losses and constraints read it)."""
    value = float(value)
    constraints._EPSILON[0] = value
    losses.EPSILON = value


def _floatx():
    """The dtype of layers and Inputs made without one (``"float32"``)."""
    return layers._FLOATX[0]


def _set_floatx(value):
    """Set the default dtype of new layers and Inputs: ``"float16"``, ``"float32"`` or
    ``"float64"`` (gradtape has no bfloat16)."""
    accepted = ("float16", "float32", "float64")
    name = getattr(value, "name", value)
    if name not in accepted:
        raise ValueError(f"set_floatx: unknown floatx {value!r}; expected one of {accepted}")
    layers._FLOATX[0] = name


def _image_data_format():
    """``"channels_last"``: the layout gradtape's image layers default to."""
    return "channels_last"


def _int_shape(x):
    """The shape of a tensor, symbolic tensor or array as a tuple (``None`` for unknown
    sizes)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError(f"int_shape: expected a tensor, got {type(x).__name__}")
    return tuple(None if d is None else int(d) for d in shape)


def _get_value(x):
    """The value of a Variable or tensor as a NumPy array."""
    import numpy as np
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _set_value(x, value):
    """Assign ``value`` (an array of its shape) to the Variable ``x``."""
    from .tensor import Variable
    if not isinstance(x, Variable):
        raise TypeError(f"set_value: expected a Variable, got {type(x).__name__}")
    import numpy as np
    from .tensor import Tensor
    x.assign(value if isinstance(value, Tensor) else np.asarray(value, dtype=x._value.dtype))


backend = _namespace(
    "backend", "Keras' backend calls that scripts make: gt.keras.backend.clear_session(), "
    "epsilon, floatx, image_data_format, int_shape, get_value, set_value.",
    clear_session=_clear_session, epsilon=_epsilon, set_epsilon=_set_epsilon, floatx=_floatx,
    set_floatx=_set_floatx, image_data_format=_image_data_format, int_shape=_int_shape,
    get_value=_get_value, set_value=_set_value)


# --- Keras' model methods that live in gradtape.saving --------------------------------------
# (installed on Model unless gradtape/layers.py defines them itself)

def _model_get_config(self):
    return _saving.model_get_config(self)


def _model_from_config(cls, config, custom_objects=None):
    return _saving.model_from_config(cls, config, custom_objects)


def _model_to_json(self, **kwargs):
    return _saving.model_to_json(self, **kwargs)


_model_get_config.__doc__ = _saving.model_get_config.__doc__
_model_from_config.__doc__ = _saving.model_from_config.__doc__
_model_to_json.__doc__ = _saving.model_to_json.__doc__
for _name, _method in (("get_config", _model_get_config),
                       ("from_config", classmethod(_model_from_config)),
                       ("to_json", _model_to_json)):
    if _name not in Model.__dict__:
        setattr(Model, _name, _method)
del _name, _method


# --- Keras 3's activations beyond gt.nn's ---------------------------------------------------

def _as_tensor(x):
    from .tensor import convert_to_tensor
    return convert_to_tensor(x)


def _celu(x, alpha=1.0):
    """``x`` for ``x >= 0``, ``alpha * (exp(x / alpha) - 1)`` below."""
    from .ops.math import maximum, minimum
    from .math import expm1
    x = _as_tensor(x)
    return maximum(x, 0.0) + alpha * expm1(minimum(x, 0.0) / alpha)


def _glu(x, axis=-1):
    """``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``x`` along ``axis``."""
    from .ops.math import sigmoid
    from .ops.shape import split
    x = _as_tensor(x)
    if x.shape[axis] % 2 != 0:
        raise ValueError(f"axis size must be divisible by 2. Received: x.shape={x.shape} with "
                         f"axis={axis}")
    a, b = split(x, 2, axis=axis)
    return a * sigmoid(b)


def _hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    from .ops.math import clip_by_value
    return clip_by_value(_as_tensor(x), -1.0, 1.0)


def _log_sigmoid(x):
    """``log(sigmoid(x))``, computed stably."""
    from .math import log_sigmoid as _log_sigmoid
    return _log_sigmoid(_as_tensor(x))


def _soft_shrink(x, threshold=0.5):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0."""
    from .ops.core import zeros_like
    from .ops.math import where
    x = _as_tensor(x)
    return where(x > threshold, x - threshold,
                 where(x < -threshold, x + threshold, zeros_like(x)))


def _hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    from .ops.core import zeros_like
    from .ops.math import abs as _abs, where
    x = _as_tensor(x)
    return where(_abs(x) > threshold, x, zeros_like(x))


def _tanh_shrink(x):
    """``x - tanh(x)``."""
    from .ops.math import tanh
    x = _as_tensor(x)
    return x - tanh(x)


def _squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``."""
    from .ops.math import sqrt, square
    x = _as_tensor(x)
    return (x + sqrt(square(x) + b)) / 2


def _sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` for ``-1 < x < 1``, ``x`` for ``x >= 1``."""
    from .ops.core import zeros_like
    from .ops.math import square, where
    x = _as_tensor(x)
    return where(x <= -1, zeros_like(x), where(x < 1, 0.25 * square(x + 1), x))


def _sparse_sigmoid(x):
    """0 for ``x <= -1``, ``(x + 1) / 2`` for ``-1 < x < 1``, 1 for ``x >= 1``."""
    from .ops.core import ones_like, zeros_like
    from .ops.math import where
    x = _as_tensor(x)
    return where(x <= -1, zeros_like(x), where(x >= 1, ones_like(x), 0.5 * (x + 1)))


def _threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value``."""
    from .ops.math import where
    x = _as_tensor(x)
    return where(x > threshold, x, float(default_value))


def _sparsemax(x, axis=-1):
    """The Euclidean projection of ``x`` onto the probability simplex along ``axis``
    (Martins & Astudillo, 2016): ``max(x - tau, 0)``, with ``tau`` such that the outputs sum
    to 1; its gradient is ``s * (g - mean of g over the support)`` (``s`` the support)."""
    from .ops.core import cast, ones_like, stop_gradient
    from .ops.math import maximum, where
    from .ops.reduce import cumsum, reduce_sum
    from .ops.sorting import sort
    x = _as_tensor(x)
    z = stop_gradient(sort(x, axis=axis, direction="DESCENDING"))
    r = cumsum(ones_like(z), axis=axis)                 # 1, 2, ... along the axis
    cs = cumsum(z, axis=axis)
    in_support = z - (cs - 1) / r > 0
    k = reduce_sum(cast(in_support, x.dtype), axis=axis, keepdims=True)
    tau0 = (reduce_sum(where(r == k, cs, 0.0), axis=axis, keepdims=True) - 1) / k
    # the same threshold written on x itself, so that the gradient flows through it
    support = x > tau0
    size = reduce_sum(cast(support, x.dtype), axis=axis, keepdims=True)
    tau = (reduce_sum(where(support, x, 0.0), axis=axis, keepdims=True) - 1) / size
    return maximum(x - tau, 0.0)


_EXTRA_ACTIVATIONS = {f.__name__[1:]: f for f in (
    _celu, _glu, _hard_tanh, _log_sigmoid, _soft_shrink, _hard_shrink, _tanh_shrink,
    _squareplus, _sparse_plus, _sparse_sigmoid, _threshold, _sparsemax)}
# (layers take them by name too: Dense(8, activation="celu"), and save them by name)
for _name, _fn in _EXTRA_ACTIVATIONS.items():
    _fn.__name__ = _fn.__qualname__ = _name
    if _name not in layers._ACTIVATIONS:
        layers.KERAS_ACTIVATIONS[_name] = _fn
        layers._ACTIVATIONS[_name] = ("keras", _name)
    setattr(activations, _name, layers.get_activation(_name))
activations.__all__ = sorted(k for k in vars(activations) if not k.startswith("_"))
del _name, _fn


# --- keras.random ------------------------------------------------------------------------------

class SeedGenerator:
    """The state of Keras' seeded random calls: ``keras.random.normal(shape,
    seed=seed_gen)`` draws from its next seed, so each call differs while the sequence is
    fixed by ``seed`` (an int; None picks one at random). ``state`` is the seed pair, a
    non-trainable int64 Variable."""

    def __init__(self, seed=None, name=None, **kwargs):
        import random as _py_random
        from .tensor import Variable
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
        self.name = name if name is not None else layers._unique_name("seed_generator")
        self._initial_seed = seed
        if seed is None:
            seed = _py_random.randint(1, int(1e9))
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"Argument `seed` must be an integer. Received: seed={seed}")
        import numpy as np
        self.state = Variable(np.asarray([seed, 0], dtype=np.int64), trainable=False,
                              name=f"{self.name}/seed_generator_state")

    def next(self, ordered=True):
        """The current seed pair (an int64 tensor); the state then advances."""
        from .ops.core import identity
        seed = identity(self.state)
        if ordered:
            self.state.assign(seed + _on_device(self.state, [0, 1]))
        else:
            self.state.assign((seed + 1) * 5387 % 933199)
        return seed

    def get_config(self):
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _on_device(like, values):
    import numpy as np
    from .tensor import Tensor
    dev = like.device
    return Tensor(dev.asarray(np.asarray(values, dtype=like.dtype.np)), dev)


_GLOBAL_SEED_GENERATOR = [None]


def _draw_seed(seed):
    """The seed pair of one Keras random call: ``[seed, 0]`` for an int (the same draws at
    every call), the next seed of a :class:`SeedGenerator`, or of the global one for None."""
    import numpy as np
    if isinstance(seed, _SeedGenerator):
        return seed.next()
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.asarray([int(seed), 0], dtype=np.int64)
    if seed is None:
        gen = _GLOBAL_SEED_GENERATOR[0]
        if gen is None:
            gen = _GLOBAL_SEED_GENERATOR[0] = _SeedGenerator()
        return gen.next(ordered=False)
    raise ValueError(f"Argument `seed` must be either an integer or an instance of "
                     f"`SeedGenerator`. Received: seed={seed} (of type {type(seed)})")


def _random_dtype(dtype, kind, who):
    from .dtypes import as_dtype
    dt = as_dtype(_floatx() if dtype is None else _standardize_dtype(dtype))
    if kind == "f" and not dt.is_floating:
        raise ValueError(f"`keras.random.{who}` requires a floating point `dtype`. Received: "
                         f"dtype={dtype} ")
    if kind == "i" and not dt.is_integer:
        raise ValueError(f"`keras.random.{who}` requires an integer `dtype`. Received: "
                         f"dtype={dtype} ")
    return dt


def _random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws (``keras.random.normal``)."""
    from . import random as R
    dt = _random_dtype(dtype, None, "normal")
    return R.stateless_normal(shape, _draw_seed(seed), mean=mean, stddev=stddev, dtype=dt)


def _random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform draws in ``[minval, maxval)`` (float dtypes; ``keras.random.uniform``)."""
    from . import random as R
    dt = _random_dtype(dtype, "f", "uniform")
    return R.stateless_uniform(shape, _draw_seed(seed), minval=minval, maxval=maxval, dtype=dt)


def _randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform in ``[minval, maxval)`` (``keras.random.randint``)."""
    from . import random as R
    from .ops.core import cast
    dt = _random_dtype(dtype, "i", "randint")
    mid = dt if dt.name in ("int32", "int64") else "int64"
    return cast(R.stateless_uniform(shape, _draw_seed(seed), minval=minval, maxval=maxval,
                                    dtype=mid), dt)


def _random_truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws within two standard deviations (``keras.random.truncated_normal``)."""
    from . import random as R
    dt = _random_dtype(dtype, None, "truncated_normal")
    return R.stateless_truncated_normal(shape, _draw_seed(seed), mean=mean, stddev=stddev,
                                        dtype=dt)


def _random_dropout(inputs, rate, noise_shape=None, seed=None):
    """``inputs`` with each element zeroed with probability ``rate`` and the rest scaled by
    ``1 / (1 - rate)`` (``noise_shape`` shares a draw along its axes of size 1; None entries
    take the input's size), as ``keras.random.dropout``."""
    from . import random as R
    from .ops.core import cast, zeros_like
    x = _as_tensor(inputs)
    rate = float(rate)
    if rate == 1.0:
        return zeros_like(x)
    if rate == 0.0:
        return x
    if noise_shape is None:
        shape = tuple(x.shape)
    else:
        shape = tuple(x.shape[i] if d is None else int(d) for i, d in enumerate(noise_shape))
    u = R.stateless_uniform(shape, _draw_seed(seed), dtype=x.dtype)
    keep = cast(u >= rate, x.dtype)
    return x * (1.0 / (1.0 - rate)) * keep


def _random_shuffle(x, axis=0, seed=None):
    """``x`` permuted at random along ``axis`` (``keras.random.shuffle``)."""
    from . import random as R
    from .ops.shape import gather
    from .ops.sorting import argsort
    x = _as_tensor(x)
    keys = R.stateless_uniform([x.shape[axis]], _draw_seed(seed))
    return gather(x, argsort(keys), axis=axis)


def _random_categorical(logits, num_samples, dtype="int32", seed=None):
    """``num_samples`` class indices per row of the 2-D ``logits``
    (``keras.random.categorical``)."""
    from . import random as R
    from .ops.core import cast
    logits = _as_tensor(logits)
    if logits.ndim != 2:
        raise ValueError(f"`logits` should be a 2-D tensor with shape [batch_size, "
                         f"num_classes]. Received: logits={logits}")
    return cast(R.stateless_categorical(logits, num_samples, _draw_seed(seed)),
                _standardize_dtype(dtype))


def _random_gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(``alpha``, 1) draws (``keras.random.gamma``)."""
    from . import random as R
    dt = _random_dtype(dtype, None, "gamma")
    return R.stateless_gamma(shape, _draw_seed(seed), alpha=alpha, dtype=dt)


def _random_binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial(``counts``, ``probabilities``) draws (``keras.random.binomial``)."""
    from . import random as R
    dt = _random_dtype(dtype, None, "binomial")
    return R.stateless_binomial(shape, _draw_seed(seed), counts, probabilities,
                                output_dtype=dt)


def _random_beta(shape, alpha, beta, dtype=None, seed=None):
    """Beta(``alpha``, ``beta``) draws, as ``X / (X + Y)`` of two Gamma draws
    (``keras.random.beta``)."""
    from . import random as R
    dt = _random_dtype(dtype, None, "beta")
    s1 = _draw_seed(seed)
    s2 = s1 + 12
    a = R.stateless_gamma(shape, s1, alpha=alpha, dtype=dt)
    b = R.stateless_gamma(shape, s2, alpha=beta, dtype=dt)
    return a / (a + b)


random = _namespace(
    "random", "Keras 3's random calls (keras.random): an int seed gives the same draws at "
    "every call, a SeedGenerator a fixed sequence, None the global generator.",
    normal=_random_normal, uniform=_random_uniform, randint=_randint,
    truncated_normal=_random_truncated_normal, dropout=_random_dropout,
    shuffle=_random_shuffle, categorical=_random_categorical, gamma=_random_gamma,
    binomial=_random_binomial, beta=_random_beta, SeedGenerator=SeedGenerator)
_SeedGenerator = SeedGenerator
del SeedGenerator                       # (keras.random.SeedGenerator, not keras.SeedGenerator)
for _name in ("normal", "uniform", "randint", "truncated_normal", "dropout", "shuffle",
              "categorical", "gamma", "binomial", "beta"):
    getattr(random, _name).__name__ = _name
del _name


# --- keras.Variable, keras.name_scope -----------------------------------------------------------

_AGGREGATIONS = ("none", "mean", "sum", "only_first_replica")
_SYNCHRONIZATIONS = ("none", "on_read", "on_write", "auto")


class _VariableType(type):
    def __instancecheck__(cls, obj):
        from .tensor import Variable as _Var
        return isinstance(obj, _Var)

    def __subclasscheck__(cls, sub):
        from .tensor import Variable as _Var
        return isinstance(sub, type) and issubclass(sub, _Var)


class Variable(metaclass=_VariableType):
    """Keras 3's ``keras.Variable(initializer, shape=None, dtype=None, trainable=True,
    autocast=True, aggregation="none", synchronization="auto", name=None)``: a
    ``gt.Variable`` made from a value, or from an initializer (a name or callable) and
    ``shape``. Its ``path`` is the name scope plus ``name`` (``"variable"``, made unique, by
    default). ``isinstance(v, keras.Variable)`` holds for every ``gt.Variable``."""

    def __new__(cls, initializer, shape=None, dtype=None, trainable=True, autocast=True,
                aggregation="none", synchronization="auto", name=None, **kwargs):
        import numpy as np
        from .array_ops import get_current_name_scope
        from .tensor import Tensor, Variable as _Var
        if kwargs:
            raise TypeError(f"Variable: unexpected keyword argument {next(iter(kwargs))!r}")
        if name is None:
            name = layers._unique_name("variable")
        if not isinstance(name, str) or "/" in name:
            raise ValueError(f"Argument `name` must be a string and cannot contain character "
                             f"`/`. Received: name={name}")
        for value, allowed, what in ((aggregation, _AGGREGATIONS, "aggregation"),
                                     (synchronization, _SYNCHRONIZATIONS, "synchronization")):
            value = getattr(value, "name", value)
            if value is not None and (not isinstance(value, str) or
                                      value.lower() not in allowed):
                raise ValueError(f"Invalid value for argument `{what}`. Expected one of "
                                 f"{allowed}. Received: {what}={value}")
        if isinstance(initializer, str):
            initializer = initializers.get(initializer)
        if callable(initializer) and not isinstance(initializer, Tensor):
            if shape is None:
                raise ValueError(f"When creating a Variable from an initializer, the `shape` "
                                 f"argument should be specified. Received: "
                                 f"initializer={initializer} and shape={shape}")
            dt = _standardize_dtype(dtype)
            value = initializer(tuple(shape), dtype=dt)
        else:
            value = initializer
            if dtype is not None:
                dt = _standardize_dtype(dtype)
            elif isinstance(value, (Tensor, np.ndarray, np.generic)):
                dt = None
            else:
                dt = _standardize_dtype(np.asarray(value).dtype) \
                    if np.asarray(value).dtype.kind != "f" else _floatx()
                dt = "int32" if dt == "int64" else dt
        scope = get_current_name_scope()
        path = f"{scope}/{name}" if scope else name
        return _Var(value, trainable=trainable, name=path, dtype=dt)


class name_scope:  # noqa: N801 (Keras' name)
    """``with keras.name_scope("block"):`` as ``gt.name_scope`` (``keras.Variable`` paths
    include it); Keras' ``caller=``, ``deduplicate=`` and ``override_parent=`` are accepted."""

    def __init__(self, name, **kwargs):
        from .array_ops import name_scope as _scope
        unknown = set(kwargs) - {"caller", "deduplicate", "override_parent"}
        if unknown:
            raise TypeError(f"name_scope: unexpected keyword argument {sorted(unknown)[0]!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"`name` must be a non-empty string. Received: name={name!r}")
        self.name = name
        self._scope = _scope(name)

    def __enter__(self):
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        return self._scope.__exit__(*exc)


# --- keras.config and the keras.utils additions -------------------------------------------------

def _standardize_dtype(dtype):
    """Keras' dtype name for ``dtype`` (None: floatx; Python ``int``: ``"int64"``,
    ``float``: ``"float32"``, ``bool``, ``str``: ``"string"``; NumPy and gradtape dtypes by
    name), as ``keras.utils.standardize_dtype``; ValueError for anything else."""
    if dtype is None:
        return _floatx()
    python = {bool: "bool", int: "int64", float: "float32", str: "string", "int": "int64",
              complex: "complex128"}
    try:
        dtype = python.get(dtype, dtype)
    except TypeError:                       # an unhashable value
        raise ValueError(f"Invalid dtype: {dtype}") from None
    if hasattr(dtype, "name") and isinstance(dtype.name, str):
        dtype = dtype.name
    elif hasattr(dtype, "__name__"):
        dtype = dtype.__name__
    if dtype not in _ALLOWED_DTYPES:
        raise ValueError(f"Invalid dtype: {dtype}")
    return dtype


_ALLOWED_DTYPES = ("float16", "float32", "float64", "uint8", "uint16", "uint32", "uint64",
                   "int8", "int16", "int32", "int64", "bfloat16", "bool", "string",
                   "float8_e4m3fn", "float8_e5m2", "complex64", "complex128")


def _set_image_data_format(data_format):
    """Keras' global image layout: gradtape's image layers default to ``"channels_last"``
    (give ``data_format="channels_first"`` to a layer for NCHW), so that is the one value
    accepted here."""
    value = str(data_format).lower()
    if value not in ("channels_first", "channels_last"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', "
                         f"'channels_last'}}. Received: data_format={data_format}")
    if value == "channels_first":
        raise ValueError("set_image_data_format: gradtape's image layers default to "
                         "'channels_last'; pass data_format='channels_first' to each layer "
                         "that should use NCHW")


_UNSAFE_DESERIALIZATION = [False]


def _enable_unsafe_deserialization():
    """Keras' switch allowing Lambda layers to load; gradtape never writes a Lambda's code
    to a file (such models save their weights only), so there is nothing to unlock: the
    setting is recorded."""
    _UNSAFE_DESERIALIZATION[0] = True


def _backend_name():
    """``"tensorflow"``: gradtape serves TensorFlow's API, so code that branches on Keras'
    backend takes its TensorFlow path."""
    return "tensorflow"


config = _namespace(
    "config", "Keras 3's global settings: floatx, epsilon, image_data_format, backend, "
    "dtype_policy.",
    floatx=_floatx, set_floatx=_set_floatx, epsilon=_epsilon, set_epsilon=_set_epsilon,
    image_data_format=_image_data_format, set_image_data_format=_set_image_data_format,
    enable_unsafe_deserialization=_enable_unsafe_deserialization, backend=_backend_name,
    dtype_policy=_mp.dtype_policy, set_dtype_policy=_mp.set_dtype_policy,
    enable_interactive_logging=_ku.enable_interactive_logging,
    disable_interactive_logging=_ku.disable_interactive_logging,
    is_interactive_logging_enabled=_ku.is_interactive_logging_enabled)


def _get_source_inputs(tensor):
    """The ``keras.Input`` tensors a symbolic tensor is computed from, in the order its
    graph reaches them (a tensor that is not symbolic is returned as is)."""
    from .keras_graph import KerasTensor
    if not isinstance(tensor, KerasTensor):
        return tensor
    found, seen = [], set()

    def walk(kt):
        if id(kt) in seen:
            return
        seen.add(id(kt))
        node = kt._node
        if node is None:
            found.append(kt)
            return
        for s in node.symbols:
            walk(s)
    walk(tensor)
    return found


def _img_to_array(img, data_format=None, dtype=None):
    """An image (PIL Image or array) as a 3-D NumPy array of ``dtype`` (floatx), channels
    last unless ``data_format="channels_first"``; a 2-D image gets a channel axis."""
    import numpy as np
    data_format = _image_data_format() if data_format is None else data_format
    x = np.asarray(img, dtype=_floatx() if dtype is None else _standardize_dtype(dtype))
    if x.ndim == 3:
        if data_format == "channels_first":
            x = x.transpose(2, 0, 1)
    elif x.ndim == 2:
        x = x.reshape((1,) + x.shape if data_format == "channels_first" else x.shape + (1,))
    else:
        raise ValueError(f"Unsupported image shape: {x.shape}")
    return x


def _array_to_img(x, data_format=None, scale=True, dtype=None):
    """A 3-D array as a PIL Image (RGB, RGBA or grayscale by its channels); ``scale`` maps
    its values to 0..255 first. Needs Pillow."""
    import numpy as np
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("Could not import PIL.Image. The use of `array_to_img` requires "
                          "PIL.") from None
    data_format = _image_data_format() if data_format is None else data_format
    x = np.asarray(x, dtype=_floatx() if dtype is None else _standardize_dtype(dtype))
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with "
                         f"shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        x_max = np.max(x)
        if x_max != 0:
            x /= x_max
        x *= 255
    if x.shape[2] == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if x.shape[2] == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if x.shape[2] == 1:
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {x.shape[2]}")


def _clear_all():
    """:func:`clear_session`'s reset plus Keras' global seed generator."""
    _GLOBAL_SEED_GENERATOR[0] = None


from .keras_graph import is_keras_tensor as _is_keras_tensor  # noqa: E402

for _name, _fn in (("clear_session", _clear_session), ("is_keras_tensor", _is_keras_tensor),
                   ("get_source_inputs", _get_source_inputs),
                   ("get_registered_object", _saving.get_registered_object),
                   ("get_registered_name", _saving.get_registered_name),
                   ("standardize_dtype", _standardize_dtype), ("img_to_array", _img_to_array),
                   ("array_to_img", _array_to_img)):
    setattr(utils, _name, _fn)
preprocessing.image = _namespace(
    "preprocessing.image", "keras.preprocessing.image: load_img, save_img, img_to_array, "
    "array_to_img.", load_img=_ku.load_img, save_img=_ku.save_img,
    img_to_array=_img_to_array, array_to_img=_array_to_img)
preprocessing.__all__ = sorted(preprocessing.__all__ + ["image"])
for _name, _fn in (("is_keras_tensor", _is_keras_tensor),
                   ("standardize_dtype", _standardize_dtype),
                   ("set_image_data_format", _set_image_data_format)):
    setattr(backend, _name, _fn)
from . import keras_backend as _kb  # noqa: E402  (the legacy K.* functions)
for _name in _kb.__all__:
    setattr(backend, _name, getattr(_kb, _name))
from . import ctc as _ctc  # noqa: E402
for _name in ("ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse"):
    setattr(backend, _name, getattr(_ctc, _name))
utils.__all__ = sorted(k for k in vars(utils) if not k.startswith("_"))
backend.__all__ = sorted(k for k in vars(backend) if not k.startswith("_"))
del _name, _fn

# Keras 3's top-level classes
Loss = losses.Loss
Metric = metrics.Metric
Optimizer = optimizers.Optimizer
Initializer = initializers.Initializer
Regularizer = regularizers.Regularizer
InputSpec = layers.InputSpec
DTypePolicy = _mp.DTypePolicy
FloatDTypePolicy = _mp.FloatDTypePolicy

dtype_policies = _namespace(
    "dtype_policies", "Keras' dtype policies: DTypePolicy, FloatDTypePolicy, DTypePolicyMap, "
    "get, serialize, deserialize (gradtape has no quantized policies).",
    DTypePolicy=_mp.DTypePolicy, FloatDTypePolicy=_mp.FloatDTypePolicy,
    DTypePolicyMap=_mp.DTypePolicyMap, get=_mp.get, serialize=_mp.serialize,
    deserialize=_mp.deserialize)

from . import keras_tree as tree  # noqa: E402
from . import keras_distillation as _distillation  # noqa: E402
distillation = _namespace(
    "distillation", "Knowledge distillation: Distiller, LogitsDistillation, "
    "FeatureDistillation, DistillationLoss.",
    Distiller=_distillation.Distiller, LogitsDistillation=_distillation.LogitsDistillation,
    FeatureDistillation=_distillation.FeatureDistillation,
    DistillationLoss=_distillation.DistillationLoss)
from . import keras_wrappers as _wrappers  # noqa: E402
wrappers = _namespace(
    "wrappers", "scikit-learn estimators around Keras models.",
    SKLearnClassifier=_wrappers.SKLearnClassifier, SKLearnRegressor=_wrappers.SKLearnRegressor,
    SKLearnTransformer=_wrappers.SKLearnTransformer)
from .keras_remat import RematScope, remat  # noqa: E402
from .backend import device_scope as device  # noqa: E402


def version() -> str:
    """The Keras version whose API ``gt.keras`` follows."""
    return "3.15.1"


__version__ = version()
from . import applications  # noqa: E402  (keras.applications: the ImageNet models)


# --- the submodules' import names ------------------------------------------------------------

def _register_submodules():
    table = {"layers": layers, "optimizers": optimizers, "losses": losses, "metrics": metrics,
             "initializers": initializers, "regularizers": regularizers,
             "constraints": constraints, "callbacks": callbacks, "activations": activations,
             "utils": utils, "backend": backend, "models": models, "saving": saving,
             "preprocessing": preprocessing, "preprocessing.sequence": _sequence,
             "mixed_precision": mixed_precision, "random": random, "config": config,
             "optimizers.schedules": optimizers.schedules, "ops": ops, "ops.numpy": ops.numpy,
             "ops.nn": ops.nn, "ops.linalg": ops.linalg, "ops.image": ops.image,
             "tree": tree, "dtype_policies": dtype_policies, "wrappers": wrappers,
             "distillation": distillation}
    table.update(_kd.SUBMODULES)
    table["applications"] = applications
    table.update({f"applications.{k}": v for k, v in applications.SUBMODULES.items()})
    for name, mod in table.items():
        sys.modules[f"{__name__}.{name}"] = mod


_register_submodules()
