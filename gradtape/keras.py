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
from .keras_graph import Input, KerasTensor
from .keras_training import Sequence
from .layers import InputLayer, Layer, Model, Sequential

__all__ = ["layers", "optimizers", "losses", "metrics", "initializers", "regularizers",
           "constraints", "callbacks", "activations", "utils", "backend", "models", "saving",
           "preprocessing", "mixed_precision", "Sequential", "Model", "Layer", "Input",
           "InputLayer", "KerasTensor"]

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


from . import keras_utils as _ku  # noqa: E402
from . import saving as _saving  # noqa: E402

utils = _namespace(
    "utils", "Keras' data utilities: to_categorical, pad_sequences, "
    "timeseries_dataset_from_array, normalize, split_dataset, Progbar, Sequence, "
    "set_random_seed, custom objects.",
    to_categorical=_ku.to_categorical, normalize=_ku.normalize,
    pad_sequences=_ku.pad_sequences,
    timeseries_dataset_from_array=_ku.timeseries_dataset_from_array,
    split_dataset=_ku.split_dataset, Progbar=_ku.Progbar, Sequence=Sequence,
    PyDataset=Sequence, unpack_x_y_sample_weight=_unpack, pack_x_y_sample_weight=_pack,
    set_random_seed=_set_random_seed, get_custom_objects=_ku.get_custom_objects,
    custom_object_scope=_ku.custom_object_scope, CustomObjectScope=_ku.CustomObjectScope,
    register_keras_serializable=_saving.register_keras_serializable,
    serialize_keras_object=_saving.serialize_layer,
    deserialize_keras_object=_saving.deserialize_layer)

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
    sequence=_sequence, timeseries_dataset_from_array=_ku.timeseries_dataset_from_array)
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
    """Reset Keras' generated names (the next ``Dense()`` is ``dense`` again), as
    ``keras.backend.clear_session``; gradtape keeps no graph or session to free."""
    with layers._name_lock:
        layers._name_counters.clear()


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


# --- the submodules' import names ------------------------------------------------------------

def _register_submodules():
    table = {"layers": layers, "optimizers": optimizers, "losses": losses, "metrics": metrics,
             "initializers": initializers, "regularizers": regularizers,
             "constraints": constraints, "callbacks": callbacks, "activations": activations,
             "utils": utils, "backend": backend, "models": models, "saving": saving,
             "preprocessing": preprocessing, "preprocessing.sequence": _sequence,
             "mixed_precision": mixed_precision,
             "optimizers.schedules": optimizers.schedules}
    for name, mod in table.items():
        sys.modules[f"{__name__}.{name}"] = mod


_register_submodules()
