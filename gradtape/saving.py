"""Whole-model saving, as Keras: ``model.save(path)`` writes the architecture, the compile
arguments and the weights to one file; ``gt.keras.models.load_model(path)`` rebuilds the
model from it.

    model.save("digits.keras")
    same = gt.keras.models.load_model("digits.keras")

The file is a zip archive holding ``config.json`` (the model's layers and, for a functional
model, the graph of their calls), ``metadata.json``, ``model.weights.safetensors`` (the
variables, as ``save_weights`` writes them; never pickle) and, once the compiled optimizer has
taken a step, ``optimizer.safetensors``: its step count, learning rate and every slot of
every model variable (Adam's moments, SGD's momentum...), so that training resumes after
``load_model`` exactly where it stopped, as in Keras (``save(..., include_optimizer=False)``
leaves it out). State a layer keeps outside its weights goes through Keras' protocol: the
files of its ``save_assets(dir_path)`` under ``assets/<the layer's path>/`` (an adapted
lookup or text layer's ``vocabulary.txt``) and the arrays of its
``save_own_variables(store)`` in ``own_variables.safetensors`` (``"tf_idf"`` weights),
read back by ``load_own_variables`` and ``load_assets``; layers of your own classes that
define them get the same service. It is written to a temporary file and renamed, so a crash
never leaves half a model. Sequential and functional models of gradtape's layers save; a
subclassed model, a ``Lambda`` layer or an operator on symbolic tensors has no architecture
to write (save the weights instead, and build the model in code).
Layers of your own classes load when given in ``custom_objects`` or registered with
:func:`register_keras_serializable`.

Models TensorFlow saved load too (their weights are HDF5: ``pip install 'gradtape[io]'``
brings h5py): ``load_model`` reads Keras 3's ``.keras`` files (the architecture, the weights,
the compile arguments, the optimizer's state and the layers' assets and own variables: the
vocabularies and idf weights of lookup and text layers) and tf.keras 2's ``.h5`` models,
built of the layers gradtape has, and ``model.load_weights`` reads Keras' ``.weights.h5``
files into a model built the same way in gradtape::

    model = gt.keras.models.load_model("trained_with_tf.keras")

The same configs give ``model.get_config()`` / ``Model.from_config``, ``model.to_json()`` /
``keras.models.model_from_json`` (the architecture only) and ``keras.models.clone_model``
(new layers with fresh weights; ``clone.set_weights(model.get_weights())`` copies them).
"""
from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import re
import tempfile
import threading
import zipfile

import numpy as np

from . import nest as _nest

__all__ = ["save_model", "load_model", "serialize_layer", "deserialize_layer",
           "register_keras_serializable", "get_registered_name", "get_registered_object",
           "SavingError", "clone_model", "model_to_json", "model_from_json",
           "model_get_config", "model_from_config", "write_training_state",
           "read_training_state"]

FORMAT = "gradtape.keras/1"
_REGISTERED: dict = {}            # Keras' global custom objects: {"package>Name": object, ...}
_REGISTERED_NAMES: dict = {}      # the name each registered object was registered under
_SCOPE = threading.local()        # custom_objects of the load in progress; layers seen by a save


def custom_object(name):
    """The object called ``name`` among the ``custom_objects`` of the load in progress or
    the global custom objects (None if none). A name without its package finds the object
    registered as ``"package>name"`` too, as files that name a registered class by its
    class name (gradtape's earlier files, and Keras' ``class_name``) need."""
    for table in reversed(getattr(_SCOPE, "custom", [])):
        if name in table:
            return table[name]
    found = _REGISTERED.get(name)
    if found is None and isinstance(name, str) and ">" not in name:
        for key, value in _REGISTERED.items():
            if key.rpartition(">")[2] == name:
                return value
    return found


@contextlib.contextmanager
def _custom_scope(custom_objects):
    stack = getattr(_SCOPE, "custom", None)
    if stack is None:
        stack = _SCOPE.custom = []
    stack.append(dict(custom_objects or {}))
    try:
        yield
    finally:
        stack.pop()


class SavingError(ValueError):
    """A model that cannot be saved, or a file that is not a saved gradtape model."""


def register_keras_serializable(package="Custom", name=None):
    """Decorator: register a class (or function) as ``"package>name"`` (``name`` defaults to
    its ``__name__``) among the global custom objects, as Keras 3: saved configs name it so
    (``registered_name``) and loading finds it. A class must define ``get_config``."""
    def decorate(arg):
        class_name = name if name is not None else arg.__name__
        registered_name = f"{package}>{class_name}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        _REGISTERED[registered_name] = arg
        _REGISTERED_NAMES[arg] = registered_name
        return arg
    return decorate


def get_registered_name(obj) -> str:
    """The name ``obj`` was registered under (``"package>Name"``), else its ``__name__``."""
    try:
        found = _REGISTERED_NAMES.get(obj)
    except TypeError:                     # (an unhashable object is never registered)
        found = None
    return found if found is not None else obj.__name__


def get_registered_object(name, custom_objects=None, module_objects=None):
    """Keras 3's lookup: ``name`` in the active ``custom_object_scope``, the global custom
    objects (a registered class under its full ``"package>Name"`` only), ``custom_objects``,
    then ``module_objects``; None when none has it."""
    for table in reversed(getattr(_SCOPE, "custom", [])):
        if name in table:
            return table[name]
    if name in _REGISTERED:
        return _REGISTERED[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def _classes(custom_objects=None):
    from . import layers
    from .layers import Layer
    found = {name: obj for name, obj in vars(layers).items()
             if isinstance(obj, type) and issubclass(obj, Layer)}
    # a registered class is found by its registered name, and by its name alone (older
    # files name it so)
    found.update({key.rpartition(">")[2]: obj for key, obj in _REGISTERED.items()})
    found.update(_REGISTERED)
    for table in getattr(_SCOPE, "custom", []):
        found.update(table)
    found.update(custom_objects or {})
    return found


def _is_builtin(cls) -> bool:
    return getattr(cls, "__module__", "").startswith("gradtape.")


def _entry(obj, class_name, config) -> dict:
    """Keras 3's layout of a serialized object: ``module``, ``class_name``, ``config`` and
    ``registered_name`` (None for a built-in class, else the name it is registered under,
    or its class name)."""
    from .layers import Sequential
    cls = type(obj)
    if _is_builtin(cls):
        return {"module": "keras" if cls is Sequential else "keras.layers",
                "class_name": class_name, "config": config, "registered_name": None}
    module = cls.__module__
    return {"module": None if module == "__main__" else module, "class_name": class_name,
            "config": config, "registered_name": get_registered_name(cls)}


# --- layers ------------------------------------------------------------------------------------

def serialize_layer(layer) -> dict:
    """``{"class_name": ..., "config": ...}`` of a layer (a Sequential or functional model
    with its layers and graph)."""
    from .layers import Model, Sequential, TFOpLambda
    from .layers_extra import Lambda
    if isinstance(layer, (Lambda, TFOpLambda)):
        raise SavingError(f"{type(layer).__name__} layer '{layer.name}' holds a Python "
                          "function, which cannot be saved; save the weights and build the "
                          "model in code, or write the computation as a layer class")
    if isinstance(layer, Sequential):
        return _entry(layer, type(layer).__name__, _sequential_config(layer))
    if isinstance(layer, Model):
        if layer.__dict__.get("_graph") is None or type(layer) is not Model:
            raise SavingError(f"{type(layer).__name__} '{layer.name}' is a subclassed model: "
                              "its architecture is Python code, which cannot be saved; use "
                              "save_weights, or build it as a functional or Sequential model")
        return {"module": "keras.src.models.functional", "class_name": "Functional",
                "config": _functional_config(layer), "registered_name": "Functional"}
    config = layer.get_config()
    who = f"{type(layer).__name__} layer '{layer.name}'"
    _check_json(config, who)
    if "<lambda>" in json.dumps(config):
        raise SavingError(f"{who}: an argument is a lambda, which cannot be saved; use a "
                          "named function (given to load_model in custom_objects)")
    missing = [name for name, p in inspect.signature(type(layer).__init__).parameters.items()
               if p.default is inspect.Parameter.empty and name != "self"
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name not in config]
    if missing:
        raise SavingError(f"{who}: get_config() lacks the constructor argument(s) {missing}; "
                          "define get_config to return them, so the layer can be rebuilt")
    return _entry(layer, type(layer).__name__, config)


def _claim(layer, who):
    """Note that ``layer`` is saved under ``who``; a layer that two saved containers hold
    (a nested model and the graph around it) cannot be written once and shared on load."""
    seen = getattr(_SCOPE, "saving", None)
    if seen is None:
        return
    owner = seen.get(id(layer))
    if owner is not None and owner != who:
        raise SavingError(f"layer '{layer.name}' is used both in {owner} and in {who}; a "
                          "layer shared across nested models cannot be saved (save the "
                          "weights instead)")
    seen[id(layer)] = who


def deserialize_layer(data, custom_objects=None):
    """The layer (or model) :func:`serialize_layer` described."""
    from .layers import InputLayer
    if not isinstance(data, dict) or "class_name" not in data:
        raise SavingError(f"not a serialized layer: {data!r:.200}")
    name, config = data["class_name"], dict(data.get("config") or {})
    if name == "Functional":
        return _functional_from_config(config, custom_objects)
    classes = _classes(custom_objects)
    registered = data.get("registered_name")
    cls = classes.get(registered) if registered else None
    if cls is None:
        cls = classes.get(name)
    if cls is None:
        raise SavingError(f"unknown layer class {name!r}: pass it in custom_objects or "
                          "register it with gt.keras.saving.register_keras_serializable")
    if cls is InputLayer:
        shape = config.get("batch_shape")
        if shape is None:
            shape = config.get("batch_input_shape")      # (tf.keras 2's name)
        return InputLayer(batch_shape=shape, dtype=_saved_dtype(config.get("dtype")),
                          name=config.get("name"))
    from .layers import Sequential
    if issubclass(cls, Sequential):
        return _sequential_from_config(cls, config, custom_objects)
    try:
        return cls.from_config(config)
    except TypeError as exc:
        raise SavingError(f"{name}.from_config could not rebuild the layer from {config}: "
                          f"{exc}") from exc


def _check_json(value, who):
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise SavingError(f"{who}: its configuration cannot be written as JSON ({exc})") \
            from None


def _input_dtype_name(dtype) -> str:
    """The name an input's dtype is saved under: Keras' ``"string"`` for strings (whose
    host arrays hold Python objects), else NumPy's name (``"float32"``)."""
    dtype = np.dtype(dtype if dtype is not None else np.float32)
    return "string" if dtype.kind == "O" else dtype.name


def _saved_dtype(name):
    """A saved input dtype as ``keras.Input`` takes it (gradtape's earlier files wrote
    strings as ``"object"``)."""
    return "string" if name == "object" else name


# --- Sequential ----------------------------------------------------------------------------------

def _sequential_config(model) -> dict:
    """Keras 3's Sequential config: ``name``, ``trainable``, ``dtype``, ``layers`` (led by
    the ``InputLayer`` when the input shape is known) and ``build_input_shape``."""
    from .layers import Layer
    shape = model.__dict__.get("_input_batch_shape") or model.__dict__.get("_seen_input_shape")
    dtype = model.__dict__.get("_input_dtype")
    nodes = model.__dict__.get("_inbound_nodes") or []
    if shape is None and nodes and hasattr(nodes[0].input, "shape"):
        shape = tuple(nodes[0].input.shape)            # first called in a functional model
        dtype = nodes[0].input._np_dtype
    for layer in model.layers:
        _claim(layer, f"Sequential '{model.name}'")
    base = Layer.get_config(model)
    config = {"name": model.name, "trainable": model.trainable}
    if "dtype" in base:
        config["dtype"] = base["dtype"]
    layers = [serialize_layer(layer) for layer in model.layers]
    if shape is not None:
        shape = tuple(shape)
        inputs = model.__dict__.get("inputs") or [None]
        source = getattr(inputs[0], "_input_layer", None)
        layers.insert(0, {"module": "keras.layers", "class_name": "InputLayer", "config": {
            "batch_shape": shape,
            "dtype": _input_dtype_name(dtype),
            "sparse": False, "ragged": False,
            "name": source.name if source is not None else "input_layer",
            "optional": False}, "registered_name": None})
    config["layers"] = layers
    if shape is not None:
        config["build_input_shape"] = shape
    return config


def _sequential_from_config(cls, config, custom_objects):
    """The Sequential of :func:`_sequential_config` (also of gradtape's earlier layout: no
    InputLayer entry, the input's shape and dtype in ``build_input_shape`` and
    ``input_dtype``)."""
    from .keras_graph import Input
    from .layers import InputLayer
    layers = [deserialize_layer(d, custom_objects) for d in config.get("layers", [])]
    shape = config.get("build_input_shape")
    first = []
    if shape is not None and not (layers and isinstance(layers[0], InputLayer)):
        first = [Input(batch_shape=tuple(shape),
                       dtype=_saved_dtype(config.get("input_dtype")) or None)]
    model = cls(first + layers, name=config.get("name"))
    model.trainable = bool(config.get("trainable", True))
    return model


# --- functional models ---------------------------------------------------------------------------

def _functional_config(model) -> dict:
    graph = model._graph
    who = f"Model '{model.name}'"
    names = {}
    for layer in graph.layers:
        other = names.get(layer.name)
        if other is not None and other is not layer:
            raise SavingError(f"{who}: two layers are named {layer.name!r}; give them "
                              "distinct names to save the model")
        names[layer.name] = layer
    calls, index, counts = [], {}, {}
    for node in graph.nodes:
        k = counts.get(node.layer.name, 0)
        counts[node.layer.name] = k + 1
        index[id(node)] = (node.layer.name, k)

    cut = {id(old): new for old, new in graph._cut}     # (a model cut at inner tensors)

    def ref(kt):
        kt = cut.get(id(kt), kt)
        if kt._node is None:
            return {"__keras_tensor__": [kt._input_layer.name, 0, 0]}
        name, k = index[id(kt._node)]
        return {"__keras_tensor__": [name, k, kt._index]}

    def encode(value, where):
        from .keras_graph import KerasTensor
        if isinstance(value, KerasTensor):
            return ref(value)
        if isinstance(value, dict):
            return {"__dict__": [[str(k), encode(v, where)] for k, v in value.items()]}
        if isinstance(value, tuple):
            return {"__tuple__": [encode(v, where) for v in value]}
        if isinstance(value, list):
            return [encode(v, where) for v in value]
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return value.item()
        raise SavingError(f"{who}: {where} is called with a {type(value).__name__}, which "
                          "cannot be saved (only symbolic tensors, numbers and strings)")
    for node in graph.nodes:
        calls.append({"layer": node.layer.name,
                      "args": encode(node.structure, f"layer '{node.layer.name}'")})
    layers = []
    for layer in graph.layers:
        _claim(layer, f"Model '{model.name}'")
        if layer in graph.input_layers:
            entry = {"class_name": "InputLayer", "config": {
                "batch_shape": list(layer.batch_shape),
                "dtype": _input_dtype_name(layer._input_dtype),
                "name": layer.name}}
        else:
            entry = serialize_layer(layer)
        entry["name"] = layer.name
        layers.append(entry)
    return {"name": model.name, "trainable": model.trainable, "layers": layers, "calls": calls,
            "inputs": encode(graph.inputs, "the inputs"),
            "outputs": encode(graph.outputs, "the outputs")}


def _functional_from_config(config, custom_objects):
    if "calls" not in config and "input_layers" in config:
        return _keras_functional_from_config(config, custom_objects)
    from .keras_graph import KerasTensor
    from .layers import InputLayer, Model
    layers, tensors = {}, {}
    for data in config.get("layers", []):
        if isinstance(data, dict) and "name" in data and isinstance(data.get("config"), dict):
            data = {**data, "config": {"name": data["name"], **data["config"]}}
        layer = deserialize_layer(data, custom_objects)
        layers[data.get("name", layer.name) if isinstance(data, dict) else layer.name] = layer
        if isinstance(layer, InputLayer):
            tensors[(layer.name, 0, 0)] = layer.output

    def decode(value):
        if isinstance(value, dict):
            if "__keras_tensor__" in value:
                key = tuple(value["__keras_tensor__"])
                if key not in tensors:
                    raise SavingError(f"saved model: the graph refers to {key}, which no "
                                      "earlier call makes")
                return tensors[key]
            if "__dict__" in value:
                return {k: decode(v) for k, v in value["__dict__"]}
            if "__tuple__" in value:
                return tuple(decode(v) for v in value["__tuple__"])
            raise SavingError(f"saved model: unexpected entry {value!r:.200}")
        if isinstance(value, list):
            return [decode(v) for v in value]
        return value
    counts = {}
    for call in config.get("calls", []):
        name = call["layer"]
        layer = layers.get(name)
        if layer is None:
            raise SavingError(f"saved model: a call of layer {name!r}, which is not saved")
        inputs, args, kwargs = decode(call["args"])
        out = layer(inputs, *args, **kwargs)
        k = counts.get(name, 0)
        counts[name] = k + 1
        for i, t in enumerate(_nest.flatten(out)):
            if isinstance(t, KerasTensor):
                tensors[(name, k, i)] = t
    model = Model(decode(config["inputs"]), decode(config["outputs"]), name=config.get("name"))
    # (weights are named by position in model.layers: keep the order the file was saved in,
    # which older files wrote before model.layers followed Keras' depth order)
    model._graph.keep_layer_order(layers.values())
    model.trainable = bool(config.get("trainable", True))
    return model


# --- whole models ----------------------------------------------------------------------------------

class _Unsaveable(Exception):
    pass


def _encode_spec(spec, kind):
    """A loss or metric argument of compile as JSON: names as they are, objects by class
    and config, a named function by its name; anything else cannot be saved."""
    from . import losses, metrics
    if spec is None or isinstance(spec, (str, bool, int, float)):
        return spec
    if isinstance(spec, dict) and kind != "leaf":
        return {"__dict__": [[k, _encode_spec(v, kind)] for k, v in spec.items()]}
    if isinstance(spec, (list, tuple)):
        return [_encode_spec(v, kind) for v in spec]
    base = losses.Loss if kind == "loss" else metrics.Metric
    if isinstance(spec, base) and type(spec).__name__ in _known_classes(kind):
        config = spec.get_config()
        try:
            json.dumps(config)
        except (TypeError, ValueError):
            raise _Unsaveable(f"{spec!r}") from None
        return {"__object__": type(spec).__name__, "config": config}
    name = getattr(spec, "__name__", None)
    if name and name != "<lambda>" and callable(spec):
        return {"__function__": name}
    raise _Unsaveable(f"{spec!r}")


def _known_classes(kind):
    from . import losses, metrics
    return losses._CLASSES if kind == "loss" else metrics._CLASSES


def _decode_spec(value, kind):
    from . import losses, metrics
    if isinstance(value, list):
        return [_decode_spec(v, kind) for v in value]
    if isinstance(value, dict):
        if "__dict__" in value:
            return {k: _decode_spec(v, kind) for k, v in value["__dict__"]}
        if "__object__" in value:
            cls = _known_classes(kind).get(value["__object__"]) or custom_object(
                value["__object__"])
            if cls is None:
                raise SavingError(f"unknown {kind} class {value['__object__']!r}")
            return cls.from_config(value.get("config") or {})
        if "__function__" in value:
            name = value["__function__"]
            found = custom_object(name)
            if found is not None:
                return found
            table = losses if kind == "loss" else metrics
            try:
                return table.get(name)
            except (TypeError, ValueError):
                raise SavingError(f"the {kind} function {name!r} is unknown: pass it to "
                                  "load_model in custom_objects") from None
        raise SavingError(f"unexpected {kind} entry {value!r:.200}")
    if isinstance(value, str):
        found = custom_object(value)
        if found is not None:
            return found
    return value


def _compile_config(model):
    """compile's arguments as JSON, or None (with a warning) when one cannot be saved."""
    if not model.__dict__.get("_is_compiled"):
        return None
    import warnings
    from . import optimizers
    try:
        config = {"optimizer": optimizers.serialize(model.optimizer),
                  "loss": _encode_spec(model.loss, "loss"),
                  "metrics": _encode_spec(model.compiled_metrics._spec, "metric"),
                  "loss_weights": model.compiled_loss._weights_spec,
                  "weighted_metrics": _encode_spec(model.compiled_metrics._weighted_spec,
                                                   "metric")}
        json.dumps(config)
    except (_Unsaveable, TypeError, ValueError) as exc:
        warnings.warn(f"save: the compile arguments cannot be saved ({exc}); the file holds "
                      "the model uncompiled", UserWarning, stacklevel=3)
        return None
    return config


def check_saveable(model):
    """Raise :class:`SavingError` now if ``model.save`` would (its architecture)."""
    _SCOPE.saving = {}
    try:
        serialize_layer(model)
    finally:
        _SCOPE.saving = None


def save_model(model, filepath, overwrite=True, *, include_optimizer=True) -> str:
    """Write ``model`` (architecture, compile arguments, weights and, once it has taken a
    step, the compiled optimizer's state) to ``filepath``. ``include_optimizer=False`` leaves
    the optimizer's state out (as tf_keras; Keras 3's ``.keras`` files always hold it)."""
    from .checkpoint import write_arrays
    from . import __version__
    path = os.fspath(filepath)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"save: {path} exists and overwrite=False")
    _SCOPE.saving = {}
    try:
        arch = serialize_layer(model)       # first: an architecture that cannot be saved
    finally:
        _SCOPE.saving = None
    if not model.built:
        raise SavingError(f"save: {type(model).__name__} '{model.name}' is not built yet; "
                          "call it on a batch (or build it) first")
    config = {"format": FORMAT, "model": arch, "compile": _compile_config(model)}
    opt_state = _optimizer_arrays(model) if include_optimizer and config["compile"] else None
    _, _, objects = _keras3_walk(model)
    own_state = _own_state_arrays(objects)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        staged = os.path.join(tmp, "model.zip")
        assets = _write_assets(objects, os.path.join(tmp, ASSETS_DIR))
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("config.json", json.dumps(config, indent=1))
            zf.writestr("metadata.json", json.dumps({"gradtape_version": __version__,
                                                     "format": FORMAT}))
            if model.variables:
                weights = os.path.join(tmp, "model.weights.safetensors")
                save_own_weights(model, weights)
                zf.write(weights, "model.weights.safetensors")
            if opt_state is not None:
                state = os.path.join(tmp, OPTIMIZER_MEMBER)
                write_arrays(state, opt_state, "optimizer")
                zf.write(state, OPTIMIZER_MEMBER)
            if own_state:
                state = os.path.join(tmp, OWN_STATE_MEMBER)
                write_arrays(state, own_state, "own_variables")
                zf.write(state, OWN_STATE_MEMBER)
            for file, name in assets:
                zf.write(file, name)
        os.replace(staged, path)
    return path


# --- the optimizer's state -------------------------------------------------------------------
#
# ``optimizer.safetensors`` holds ``iterations``, ``learning_rate`` (when the optimizer shows
# its float rate as a Variable, or was given a Variable) and ``slots/{slot}/{path}`` for every
# slot of every model variable, ``path`` being the variable's name in
# ``model.weights.safetensors`` (``layers.0.kernel``). Written only once the optimizer has
# taken a step: before that its state is the fresh one a new optimizer has.

OPTIMIZER_MEMBER = "optimizer.safetensors"


def _optimizer_arrays(model):
    """The host arrays of the compiled optimizer's state, or None if it has taken no step."""
    from .checkpoint import _host
    from .optimizers import Optimizer
    from .tensor import Variable
    opt = model.__dict__.get("optimizer")
    if not isinstance(opt, Optimizer) or int(opt._iterations.numpy()) == 0:
        return None
    arrays = {"iterations": _host(opt._iterations)}
    lr = opt._learning_rate
    if isinstance(lr, Variable):
        arrays["learning_rate"] = _host(lr)
    elif type(lr) is float and opt._lr_var is not None:
        arrays["learning_rate"] = _host(opt._lr_var)
    for var_path, var in model.named_variables():
        for slot_name, slot in opt._slot_state(var).items():
            arrays[f"slots/{slot_name}/{var_path}"] = _host(slot)
    return arrays


def _read_optimizer_state(zf, path):
    """The verified arrays of the file's optimizer state, or None when it has none."""
    from .checkpoint import CheckpointError, read_arrays
    if OPTIMIZER_MEMBER not in zf.namelist():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            zf.extract(OPTIMIZER_MEMBER, tmp)
            inner = os.path.join(tmp, OPTIMIZER_MEMBER)
            arrays, _ = read_arrays(inner, kind="optimizer")
        except (CheckpointError, zipfile.BadZipFile, OSError) as exc:
            message = str(exc).replace(os.path.join(tmp, OPTIMIZER_MEMBER), OPTIMIZER_MEMBER)
            raise SavingError(f"load_model: {path}: its optimizer state ({OPTIMIZER_MEMBER}) "
                              f"cannot be read: {message}") from None
    return arrays


def _restore_optimizer(model, arrays, path, who="load_model", member=OPTIMIZER_MEMBER):
    """Fill the compiled optimizer of ``model`` from ``arrays``: everything is checked first,
    and on any mismatch :class:`SavingError` lists it and the optimizer keeps its fresh
    state."""
    from .checkpoint import _device_arrays, _listing
    opt = model.optimizer
    by_path = dict(model.named_variables())
    problems, slot_plan = [], []
    it = arrays.get("iterations")
    if it is None:
        problems.append("iterations: missing from the file")
    elif it.shape != () or it.dtype != opt._iterations._value.dtype:
        problems.append(f"iterations: the file has shape {tuple(it.shape)} dtype "
                        f"{it.dtype.name}, the optimizer's is a scalar "
                        f"{opt._iterations._value.dtype.name}")
    elif int(it) < 0:
        problems.append(f"iterations: the file has {int(it)}, a step count is >= 0")
    new_lr = None
    lr_saved = arrays.get("learning_rate")
    if lr_saved is not None:
        lr = opt._learning_rate
        if lr_saved.shape != () or lr_saved.dtype.kind != "f":
            problems.append(f"learning_rate: the file has shape {tuple(lr_saved.shape)} dtype "
                            f"{lr_saved.dtype.name}, a learning rate is a float scalar")
        elif not np.isfinite(lr_saved) or lr_saved < 0:
            problems.append(f"learning_rate: the file has {lr_saved.item()!r}, a learning "
                            "rate is a finite number >= 0")
        elif type(lr) is not float:
            problems.append(f"learning_rate: the file has a value, the optimizer's learning "
                            f"rate is a {type(lr).__name__}")
        elif np.asarray(lr, dtype=lr_saved.dtype) != lr_saved:
            new_lr = lr_saved.item()
    unknown = []
    for key in sorted(arrays):
        if key in ("iterations", "learning_rate"):
            continue
        slot_name, _, var_path = key[len("slots/"):].partition("/")
        if not key.startswith("slots/") or not slot_name or not var_path:
            unknown.append(key)
            continue
        var = by_path.get(var_path)
        if var is None:
            problems.append(f"{key}: the model has no variable {var_path!r}")
            continue
        arr = arrays[key]
        why = opt._check_slot_restore(var, slot_name, arr.shape, arr.dtype)
        if why:
            problems.append(f"{key}: {why}")
            continue
        slot_plan.append((var, slot_name, arr))
    if unknown:
        problems.append(f"entries that are no optimizer state: {_listing(unknown)}")
    if problems:
        raise SavingError(f"{who}: {path}: its optimizer state ({member}) does "
                          f"not fit the {type(opt).__name__} optimizer of "
                          f"{type(model).__name__} '{model.name}'; the optimizer was not "
                          f"restored:\n  " + "\n  ".join(problems))
    opt.build(model.trainable_variables)
    (_, staged), = _device_arrays({"iterations": opt._iterations}, {"iterations": it})
    if new_lr is not None:
        opt.learning_rate = new_lr
    for var, slot_name, arr in slot_plan:
        opt._restore_slot(var, slot_name, arr)
    opt._iterations._set(staged)


# --- the training state (BackupAndRestore) -------------------------------------------------------
#
# One safetensors file: ``weights/{path}`` for every model variable (``path`` as in
# ``save_weights``) and ``optimizer/{entry}`` for the compiled optimizer's state as
# ``optimizer.safetensors`` holds it (none before its first step).

def write_training_state(model, filepath) -> str:
    """Write ``model``'s variables and its compiled optimizer's state to ``filepath``
    (atomically)."""
    from .checkpoint import _host, write_arrays
    arrays = {f"weights/{name}": _host(var) for name, var in model.named_variables()}
    for key, value in (_optimizer_arrays(model) or {}).items():
        arrays[f"optimizer/{key}"] = value
    return write_arrays(os.fspath(filepath), arrays, "training_state")


def read_training_state(model, filepath) -> None:
    """Restore what :func:`write_training_state` wrote into ``model`` and its optimizer: the
    weights and the optimizer state are all checked before anything is assigned."""
    from .checkpoint import _check_match, _device_arrays, read_arrays
    path = os.fspath(filepath)
    arrays, _ = read_arrays(path, kind="training_state")
    weights = {k[len("weights/"):]: v for k, v in arrays.items() if k.startswith("weights/")}
    opt_state = {k[len("optimizer/"):]: v for k, v in arrays.items()
                 if k.startswith("optimizer/")}
    targets = dict(model.named_variables())
    _check_match(path, weights, targets, f"{type(model).__name__} '{model.name}'")
    staged = _device_arrays(targets, weights)
    if opt_state:
        if model.__dict__.get("optimizer") is None:
            raise SavingError(f"BackupAndRestore: {path} holds an optimizer state, but "
                              f"{type(model).__name__} '{model.name}' is not compiled")
        _restore_optimizer(model, opt_state, path, who="BackupAndRestore",
                           member="optimizer/*")
    for var, arr in staged:
        var._set(arr)


def is_saved_model(filepath) -> bool:
    """Whether ``filepath`` is a file ``model.save`` wrote."""
    try:
        with zipfile.ZipFile(os.fspath(filepath)) as zf:
            return "config.json" in zf.namelist()
    except (zipfile.BadZipFile, OSError, TypeError, ValueError):
        return False


# --- LoRA layers in gradtape's own files: as Keras' save_own_variables / load_own_variables,
# a LoRA layer's weight is written merged with its adapters (``kernel + (alpha / rank) * A @ B``)
# and the adapters are left out; loading zeroes them. (The training state of BackupAndRestore
# and tf.train.Checkpoint keep every variable as it is.)

def _lora_adapters(module) -> dict:
    """``{id: adapter Variable}`` of every LoRA layer of ``module``."""
    from .layers import lora_parts
    return {id(v): v for _, _, adapters in lora_parts(module) for v in adapters}


def save_own_weights(module, filepath, overwrite=True) -> str:
    """``module.save_weights`` in gradtape's format: every variable under its path, a LoRA
    layer's weight merged with its adapters, which are left out (as Keras)."""
    from .checkpoint import _contiguous, _host, save_module, write_arrays
    from .layers import lora_parts
    parts = lora_parts(module)
    if not parts:
        return save_module(module, filepath, overwrite=overwrite)
    merged = {id(base): layer._lora_merged(base, base._value.dtype)
              for layer, base, _ in parts}
    adapters = _lora_adapters(module)
    arrays = {name: _contiguous(merged[id(var)].numpy()) if id(var) in merged else _host(var)
              for name, var in module.named_variables() if id(var) not in adapters}
    return write_arrays(filepath, arrays, "weights", overwrite=overwrite)


def load_own_weights(module, filepath) -> None:
    """``module.load_weights`` of gradtape's format: all or nothing; a LoRA layer's adapters,
    which the file does not hold, are zeroed (as Keras)."""
    from .checkpoint import _check_match, _device_arrays, load_module, read_arrays
    adapters = _lora_adapters(module)
    if not adapters:
        load_module(module, filepath)
        return
    arrays, _ = read_arrays(filepath)
    named = module.named_variables()
    targets = {name: var for name, var in named if id(var) not in adapters}
    _check_match(os.fspath(filepath), arrays, targets, f"{type(module).__name__} "
                 f"'{module.name}'")
    zeros = {name: np.zeros(var._value.shape, var._value.dtype) for name, var in named
             if id(var) in adapters}
    for var, arr in _device_arrays({name: var for name, var in named}, {**arrays, **zeros}):
        var._set(arr)


# --- state kept outside the weights: Keras' own variables and assets ----------------------------
#
# As Keras' ``saving_lib``, each object of the model (at the path :func:`_keras3_walk` gives
# it) that defines ``save_own_variables(store)`` puts extra arrays in ``store`` (a
# ``"tf_idf"`` lookup layer's ``idf_weights``), and each that defines
# ``save_assets(dir_path)`` writes files to its own folder (a lookup layer's adapted
# ``vocabulary.txt``); loading hands them back through ``load_own_variables(store)`` (first)
# and ``load_assets(dir_path)`` (``None`` for an object whose folder the file lacks, as
# Keras). In gradtape's files the arrays are ``own_variables.safetensors`` (``<path>/vars/
# <key>``, as Keras' weights file names them) and the files ``assets/<path>/...``, as in
# Keras' ``.keras`` files.

OWN_STATE_MEMBER = "own_variables.safetensors"
ASSETS_DIR = "assets"


def _join(*parts):
    return "/".join(p for p in parts if p)


def _has_method(obj, name):
    return callable(getattr(obj, name, None))


def _own_state_arrays(objects) -> dict:
    """``{"<path>/vars/<key>": host array}`` of what each object's ``save_own_variables``
    stores."""
    from .tensor import Tensor
    arrays = {}
    for path, obj in objects:
        if not _has_method(obj, "save_own_variables"):
            continue
        store = {}
        obj.save_own_variables(store)
        for key, value in store.items():
            if isinstance(value, Tensor):
                value = value.numpy()
            arrays[_join(path, "vars", str(key))] = np.ascontiguousarray(np.asarray(value))
    return arrays


def _own_state_stores(objects, names, used):
    """``[(path, object, {key: entry name})]``: for each object that defines
    ``load_own_variables``, the entries ``<path>/vars/<key>`` of ``names`` not in ``used``
    (its weights); the entries given out are added to ``used``."""
    stores = []
    for path, obj in objects:
        if not _has_method(obj, "load_own_variables"):
            continue
        prefix = _join(path, "vars") + "/"
        store = {name[len(prefix):]: name for name in names
                 if name.startswith(prefix) and name not in used
                 and "/" not in name[len(prefix):]}
        if store:
            used.update(store.values())
            stores.append((path, obj, store))
    return stores


def _give_own_state(stores, read, who, where):
    """Call ``load_own_variables`` of each object of ``stores`` with its arrays (``read``
    gives the array of an entry name)."""
    for path, obj, store in stores:
        try:
            obj.load_own_variables({key: read(name) for key, name in store.items()})
        except (KeyError, TypeError, ValueError) as exc:
            raise SavingError(f"{who}: {where}: {type(obj).__name__} '{obj.name}' could not "
                              f"read its saved state ({_join(path, 'vars')}: "
                              f"{type(exc).__name__}: {exc})") from exc


def _write_assets(objects, root):
    """Call ``save_assets`` of every object that defines it with its folder under ``root``;
    ``[(file, name in the archive)]`` of the files they wrote, in order."""
    for path, obj in objects:
        if _has_method(obj, "save_assets"):
            folder = os.path.join(root, *path.split("/")) if path else root
            os.makedirs(folder, exist_ok=True)
            obj.save_assets(folder)
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            found.append((full, f"{ASSETS_DIR}/{rel}"))
    return found


def _read_assets(zf, path, model, who="load_model"):
    """Hand the files under ``assets/`` of the archive ``zf`` to the ``load_assets`` of the
    objects of ``model`` (each its own folder). Files in no such object's folder are an
    error: the state they hold would be lost."""
    prefix = ASSETS_DIR + "/"
    members = [n for n in zf.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not members:
        return
    _, _, objects = _keras3_walk(model)
    readers = [(p, obj) for p, obj in objects if _has_method(obj, "load_assets")]
    unread = [n for n in members if not any(
        not p or n[len(prefix):].startswith(p + "/") for p, _ in readers)]
    if unread:
        raise SavingError(f"{who}: {path} holds assets ({', '.join(unread[:4])}) that no "
                          f"layer of {type(model).__name__} '{model.name}' reads (no "
                          "load_assets at that place); the state they hold would be lost")
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, ASSETS_DIR)
        for name in members:
            parts = name[len(prefix):].split("/")
            if any(part in ("", ".", "..") or "\\" in part or ":" in part
                   for part in parts):
                raise SavingError(f"{who}: {path}: the asset {name!r} is not a plain path "
                                  "inside the archive")
            target = os.path.join(root, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(zf.read(name))
        for obj_path, obj in readers:
            folder = os.path.join(root, *obj_path.split("/")) if obj_path else root
            try:
                obj.load_assets(folder if os.path.isdir(folder) else None)
            except (OSError, TypeError, ValueError, RuntimeError) as exc:
                raise SavingError(f"{who}: {path}: {type(obj).__name__} '{obj.name}' could "
                                  f"not read its assets ({ASSETS_DIR}/{obj_path}: "
                                  f"{type(exc).__name__}: {exc})") from exc


def _read_own_state(zf, path, model, objects=None, who="load_model"):
    """Hand the arrays of the archive's ``own_variables.safetensors`` to the objects of
    ``model`` (their ``load_own_variables``); an entry no object takes is an error."""
    from .checkpoint import CheckpointError, _listing, read_arrays
    if OWN_STATE_MEMBER not in zf.namelist():
        return
    with tempfile.TemporaryDirectory() as tmp:
        try:
            zf.extract(OWN_STATE_MEMBER, tmp)
            arrays, _ = read_arrays(os.path.join(tmp, OWN_STATE_MEMBER), kind="own_variables")
        except (CheckpointError, zipfile.BadZipFile, OSError) as exc:
            message = str(exc).replace(os.path.join(tmp, OWN_STATE_MEMBER), OWN_STATE_MEMBER)
            raise SavingError(f"{who}: {path}: its {OWN_STATE_MEMBER} cannot be read: "
                              f"{message}") from None
    if objects is None:
        _, _, objects = _keras3_walk(model)
    used = set()
    stores = _own_state_stores(objects, list(arrays), used)
    extra = sorted(set(arrays) - used)
    if extra:
        raise SavingError(f"{who}: {path}: its {OWN_STATE_MEMBER} holds entries with no "
                          f"place in {type(model).__name__} '{model.name}': {_listing(extra)}")
    _give_own_state(stores, arrays.__getitem__, who, path)


def _read_weights(zf, path, model):
    from .checkpoint import CheckpointError
    names = zf.namelist()
    if "model.weights.safetensors" not in names:
        if model.variables:
            raise SavingError(f"{path}: the file has no weights, the model has "
                              f"{len(model.variables)} variables")
        return
    with tempfile.TemporaryDirectory() as tmp:
        zf.extract("model.weights.safetensors", tmp)
        inner = os.path.join(tmp, "model.weights.safetensors")
        try:
            load_own_weights(model, inner)
        except CheckpointError as exc:
            raise CheckpointError(str(exc).replace(inner, f"{path} (its weights)")) from None


def load_weights_of_saved_model(model, filepath):
    """``model.load_weights`` of a file that ``model.save`` (or Keras 3's) wrote: its
    weights only."""
    path = os.fspath(filepath)
    with zipfile.ZipFile(path) as zf:
        if KERAS_WEIGHTS_MEMBER in zf.namelist():
            h5py = _h5py(path)
            with h5py.File(io.BytesIO(zf.read(KERAS_WEIGHTS_MEMBER)), "r") as f:
                _read_keras3_weights(model, f, f"{path} ({KERAS_WEIGHTS_MEMBER})",
                                     "load_weights")
            return
        _read_weights(zf, path, model)
        _read_own_state(zf, path, model, who="load_weights")


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model that :func:`save_model` wrote to ``filepath``, its weights restored (and
    compiled again with the saved arguments when ``compile``, its optimizer's state
    restored when the file has it). Files Keras (TensorFlow) wrote load too: Keras 3's
    ``.keras`` files and tf.keras 2's ``.h5`` models, models of gradtape's built-in layers
    (reading their HDF5 weights needs h5py)."""
    from .checkpoint import CheckpointError
    path = os.fspath(filepath)
    if os.path.isdir(path):
        raise SavingError(f"load_model: {path} is a directory (a TensorFlow SavedModel?): "
                          "gradtape reads the .keras and .h5 files Keras writes "
                          "(model.save('m.keras')), not SavedModel graphs")
    if is_hdf5(path):
        return _load_keras_h5(path, custom_objects, compile)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SavingError(f"load_model: {path} is not a saved gradtape model ({exc})") from None
    with zf, _custom_scope(custom_objects):
        try:
            config = json.loads(zf.read("config.json"))
        except (KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise SavingError(f"load_model: {path} is not a complete saved gradtape model "
                              f"({exc})") from None
        if _is_keras_config(config):
            return _load_keras_zip(zf, path, config, custom_objects, compile)
        if not isinstance(config, dict) or config.get("format") != FORMAT:
            found = config.get("format") if isinstance(config, dict) else type(config).__name__
            raise SavingError(f"load_model: {path} has format {found!r}, expected {FORMAT!r}")
        try:
            model = deserialize_layer(config["model"], custom_objects)
            _read_weights(zf, path, model)
            _read_own_state(zf, path, model)
            _read_assets(zf, path, model)
        except (SavingError, CheckpointError):
            raise
        except Exception as exc:
            raise SavingError(f"load_model: {path}: the saved model does not rebuild "
                              f"({type(exc).__name__}: {exc})") from exc
        comp = config.get("compile")
        if compile and comp:
            opt_state = _read_optimizer_state(zf, path)
            extra = "" if opt_state is None else \
                " (the optimizer state saved in the file is not restored)"
            if _compile_from_config(model, comp, path, extra) and opt_state is not None:
                _restore_optimizer(model, opt_state, path)
    return model


def _compile_from_config(model, comp, path, extra=""):
    """Compile ``model`` with the saved arguments; True when it could be, else a warning and
    False."""
    import warnings
    from . import optimizers
    try:
        model.compile(optimizer=optimizers.deserialize(comp["optimizer"]),
                      loss=_decode_spec(comp.get("loss"), "loss"),
                      metrics=_decode_spec(comp.get("metrics"), "metric"),
                      loss_weights=comp.get("loss_weights"),
                      weighted_metrics=_decode_spec(comp.get("weighted_metrics"), "metric"))
    except Exception as exc:
        warnings.warn(f"load_model: {path} loaded, but compiling it with the saved arguments "
                      f"failed ({type(exc).__name__}: {exc}); call compile yourself{extra}",
                      UserWarning, stacklevel=3)
        return False
    return True


# --- files written by Keras (TensorFlow) ---------------------------------------------------------
#
# Keras 3's ``model.save("m.keras")`` is a zip of ``config.json`` (Keras' layout: ``module``,
# ``class_name``, ``config``, ``registered_name``, ``build_config``, ``compile_config``; a
# functional model's calls are each layer's ``inbound_nodes``), ``metadata.json`` and
# ``model.weights.h5``, the HDF5 file that ``model.save_weights("m.weights.h5")`` writes
# alone. In it the variables an object holds itself are ``<path>/vars/<i>`` (a layer's
# trainable ones first, then the others, each group in the order the layer made them);
# ``<path>`` names an object by the attribute that holds it (``cell``, ``forward_layer``) or,
# in a list (a model's ``layers``), by its class name in snake case, numbered from the second
# one of a class on (``layers/dense``, ``layers/dense_1``); the compiled optimizer's
# variables are ``optimizer/vars/<i>``: ``iterations``, ``learning_rate``, then its slots in
# the order it made them. tf.keras 2's ``model.save("m.h5")`` is one HDF5 file: the
# architecture (Keras 2's layout) in the attribute ``model_config``, the compile arguments
# in ``training_config``, each layer's weights in the group ``model_weights/<layer name>``
# in the order its attribute ``weight_names`` lists, the optimizer's in
# ``optimizer_weights``.

KERAS_WEIGHTS_MEMBER = "model.weights.h5"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _h5py(path):
    """The h5py module, or an ImportError saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise ImportError(f"{path} holds HDF5 data written by Keras (TensorFlow); reading it "
                          "needs the h5py package: pip install 'gradtape[io]' (or pip "
                          "install h5py)") from None
    return h5py


def is_hdf5(filepath) -> bool:
    """Whether ``filepath`` is an HDF5 file (Keras' ``save_weights`` writes one, and
    tf.keras 2's ``model.save("m.h5")``)."""
    try:
        with open(os.fspath(filepath), "rb") as f:
            return f.read(8) == _HDF5_SIGNATURE
    except (OSError, TypeError, ValueError):
        return False


def _is_keras_config(config) -> bool:
    """Whether a ``config.json`` is Keras' own (not gradtape's, which names its format)."""
    return isinstance(config, dict) and "format" not in config and "class_name" in config


def _keras_snake(name: str) -> str:
    """Keras' ``to_snake_case``: ``MaxPooling2D`` -> ``max_pooling2d``, ``SimpleRNN`` ->
    ``simple_rnn``."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


# gradtape's classes that Keras names otherwise
_KERAS_CLASS_NAMES = {"MaxPool2D": "MaxPooling2D",
                      "GroupQueryAttention": "GroupedQueryAttention"}


def _keras_class_name(layer) -> str:
    from .layers import Model, Sequential
    cls = type(layer)
    if not _is_builtin(cls):
        return cls.__name__
    if isinstance(layer, Sequential):
        return "Sequential"
    if isinstance(layer, Model):
        return "Functional"
    return _KERAS_CLASS_NAMES.get(cls.__name__, cls.__name__)


# --- where each variable lies in Keras 3's weights file

# MultiHeadAttention's weights: Keras keeps each projection in a sub-layer of its own
_MHA_PATHS = {"query_kernel": "query_dense/vars/0", "query_bias": "query_dense/vars/1",
              "key_kernel": "key_dense/vars/0", "key_bias": "key_dense/vars/1",
              "value_kernel": "value_dense/vars/0", "value_bias": "value_dense/vars/1",
              "gate_kernel": "_gate_dense/vars/0", "gate_bias": "_gate_dense/vars/1",
              "output_kernel": "output_dense/vars/0", "output_bias": "output_dense/vars/1"}


def _own_and_children(module):
    """The Variables ``module`` holds itself (in its :attr:`variables` order: the trainable
    ones, then the others) and ``[(attribute, in a container, sub-module)]``."""
    from .layers import Module
    from .tensor import Variable
    own, children, attrs = set(), [], {}

    def visit(value, attr, contained):
        if isinstance(value, Variable):
            own.add(id(value))
            attrs.setdefault(id(value), attr)
        elif isinstance(value, Module):
            children.append((attr, contained, value))
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item, attr, True)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item, attr, True)
    for attr, value in module._tracked_items():
        visit(value, attr, False)
    return [(attrs[id(v)], v) for v in module.variables if id(v) in own], children


def _keras_attr_key(name):
    """Keras' order of an object's attributes when it saves them: by name, private ones
    last."""
    return "~" + name if name.startswith("_") else name


def _keras3_paths(model):
    """``([(path in Keras 3's weights file, variable, what it is)], paths to skip)`` for
    every variable of ``model``: the layout Keras 3 writes for the same model (see
    :func:`_keras3_walk`)."""
    entries, skip, _ = _keras3_walk(model)
    return entries, skip


def _keras3_walk(model):
    """``(entries, skip, objects)``: :func:`_keras3_paths`'s entries and paths to skip, and
    ``[(path, object)]`` for ``model`` and every layer in it, each at the path Keras 3's
    ``saving_lib`` (``_save_state``) gives it: the group of its variables in the weights
    file, and the folder of its assets (``assets/<path>/``). As Keras, a Sequential or
    functional model's ``layers`` come first, then every attribute in
    :func:`_keras_attr_key` order (a subclassed model's ``layers`` among them: the layers it
    holds), and an object reachable twice is saved at the first place it is met. A LoRA
    layer's adapters have no place there (Keras writes the merged weight)."""
    from .layers import InputLayer, Layer, Model, Sequential, TFOpLambda, _child_modules
    from .layers_extra import MultiHeadAttention, Normalization
    names = {id(v): p for p, v in model.named_variables()}
    out, skip, seen, objects = [], set(), set(), []
    adapters = _lora_adapters(model)

    def join(*parts):
        return "/".join(p for p in parts if p)

    def visit(obj, path):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        objects.append((path, obj))
        own, children = _own_and_children(obj)
        if adapters:            # (a LoRA layer's adapters are not in the file: Keras merges)
            own = [(attr, var) for attr, var in own if id(var) not in adapters]
        for i, (attr, var) in enumerate(own):
            sub = _MHA_PATHS.get(attr) if isinstance(obj, MultiHeadAttention) else None
            out.append((join(path, sub or f"vars/{i}"), var,
                        f"{type(obj).__name__} '{obj.name}', weight "
                        f"'{names.get(id(var), var.name)}'"))
        if isinstance(obj, Normalization) and own:
            skip.add(join(path, f"vars/{len(own)}"))    # (Keras' count: no meaning here)
        groups = {}
        for attr, contained, child in children:
            if isinstance(child, TFOpLambda) or (isinstance(child, InputLayer)
                                                 and isinstance(obj, Sequential)):
                continue                # (Keras' operations and a Sequential's input)
            groups.setdefault(attr, []).append((contained, child))
        first = []
        if isinstance(obj, Model):
            if isinstance(obj, Sequential) or obj.__dict__.get("_graph") is not None:
                first = ["layers"] if "layers" in groups else []
            elif "layers" not in groups:
                groups["layers"] = [(True, c) for c in _child_modules(obj)
                                    if isinstance(c, Layer)]
        for attr in first + sorted((a for a in groups if a not in first), key=_keras_attr_key):
            counts = {}
            for contained, child in groups[attr]:
                if not contained:
                    visit(child, join(path, attr))
                    continue
                base = _keras_snake(_keras_class_name(child))
                k = counts.get(base, 0)
                counts[base] = k + 1
                visit(child, join(path, attr, base if k == 0 else f"{base}_{k}"))
    visit(model, "")
    known = {id(v) for v in model.variables}
    return [entry for entry in out if id(entry[1]) in known], skip, objects


def _h5_datasets(group) -> dict:
    """``{path: dataset}`` of every dataset under ``group`` (paths relative to it)."""
    found = {}

    def note(name, obj):
        if hasattr(obj, "shape") and hasattr(obj, "dtype"):
            found[name] = obj
    group.visititems(note)
    return found


def _fit_arrays(plan, who, where, model, extra=()):
    """Check ``plan`` (``[(variable, host array, what it is)]``) and assign every array to
    its variable; on any mismatch (or ``extra``, entries of the file with no place in the
    model) raise :class:`SavingError` listing them, with nothing assigned."""
    from .checkpoint import _device_arrays, _listing
    problems, targets, arrays = [], {}, {}
    for i, (var, arr, label) in enumerate(plan):
        if arr is None:
            continue
        want = tuple(var._value.shape)
        if tuple(arr.shape) != want:
            problems.append(f"{label}: shape {want} in the model, {tuple(arr.shape)} in the "
                            "file")
        elif arr.dtype.kind != var._value.dtype.kind and not (
                arr.dtype.kind in "iub" and var._value.dtype.kind in "iub"):
            problems.append(f"{label}: dtype {var._value.dtype.name} in the model, "
                            f"{arr.dtype.name} in the file")
        else:
            targets[i] = var
            arrays[i] = arr.astype(var._value.dtype, copy=False)
    problems = [label for var, arr, label in plan if arr is None] + problems
    if extra:
        problems.append(f"in the file, with no place in the model: {_listing(list(extra))}")
    if problems:
        hint = ""
        if not model.variables:
            hint = (" (it has no weights yet: call it on a batch, or build it, before "
                    "loading)")
        raise SavingError(f"{who}: {where} does not fit {type(model).__name__} "
                          f"'{model.name}'{hint}; nothing was loaded:\n  " +
                          "\n  ".join(problems))
    for var, arr in _device_arrays(targets, arrays):
        var._set(arr)


def _read_keras3_weights(model, h5file, where, who):
    """Load ``model``'s variables from a Keras 3 weights file (an open h5py File), and the
    extra arrays Keras' ``save_own_variables`` wrote (``<path>/vars/<key>``, a ``"tf_idf"``
    lookup's ``idf_weights``) through the ``load_own_variables`` of the layers that define
    it."""
    paths, skip, objects = _keras3_walk(model)
    datasets = _h5_datasets(h5file)
    plan, used = [], set()
    for path, var, label in paths:
        ds = datasets.get(path)
        if ds is None:
            plan.append((var, None, f"{label}: not in the file (no {path})"))
            continue
        used.add(path)
        plan.append((var, np.asarray(ds[()]), f"{label} ({path})"))
    for var in _lora_adapters(model).values():      # (zeroed after loading, as Keras)
        plan.append((var, np.zeros(var._value.shape, var._value.dtype), var.name))
    stores = _own_state_stores(objects, [p for p in datasets if p not in skip], used)
    extra = sorted(p for p in datasets if p not in used and p not in skip
                   and p.split("/", 1)[0] not in ("optimizer", "metrics"))
    _fit_arrays(plan, who, where, model, extra)
    _give_own_state(stores, lambda name: np.asarray(datasets[name][()]), who, where)


def _keras3_optimizer_arrays(h5file):
    """The arrays of ``optimizer/vars`` in a Keras 3 weights file, in order (None if none)."""
    group = h5file.get("optimizer/vars")
    if group is None or not len(group):
        return None
    keys = sorted(group, key=lambda k: int(k) if k.isdigit() else -1)
    return [np.asarray(group[k][()]) for k in keys]


def _restore_keras_optimizer(model, values, path, member, rate_saved=None):
    """Fill the compiled optimizer of ``model`` from the ordered variables of a Keras
    optimizer: ``iterations``, ``learning_rate`` when ``rate_saved`` (None: when the rate is
    a number, as Keras 3 writes it; tf.keras 2 does not), then, once it has taken a step,
    the slots in Keras' order (slot by slot within each group, the model's trainable
    variables in order). A state that does not fit warns, and the optimizer starts
    afresh (as Keras)."""
    import warnings
    from .optimizers import Optimizer
    opt = model.__dict__.get("optimizer")
    if not isinstance(opt, Optimizer) or type(opt).__name__ == "LossScaleOptimizer":
        return
    if rate_saved is None:
        rate_saved = type(opt._learning_rate) is float
    head = ["iterations", "learning_rate"] if rate_saved else ["iterations"]
    by_id = {id(v): p for p, v in model.named_variables()}
    keys = [f"slots/{name}/{by_id[id(var)]}"
            for group in opt._all_slot_groups()
            for var in model.trainable_variables for name in group]
    if len(values) == len(head):
        keys = []                          # (an optimizer that has taken no step: no slots)
    elif len(values) != len(head) + len(keys):
        warnings.warn(f"load_model: {path}: its optimizer state ({member}) holds "
                      f"{len(values)} variables; a {type(opt).__name__} over the "
                      f"{len(model.trainable_variables)} trainable variables of "
                      f"'{model.name}' has {len(head) + len(keys)} ({', '.join(head)} and "
                      f"{len(keys)} slots): the optimizer starts afresh", UserWarning,
                      stacklevel=3)
        return
    arrays = dict(zip(head + keys, values))
    arrays["iterations"] = np.asarray(arrays["iterations"]).astype(
        opt._iterations._value.dtype)
    if "learning_rate" in arrays and type(opt._learning_rate) is not float:
        del arrays["learning_rate"]
    _restore_optimizer(model, arrays, path, member=member)


# --- Keras' configs

def _keras_optimizer(entry):
    """The optimizer a Keras ``compile_config`` (or tf.keras 2's ``optimizer_config``)
    describes."""
    from . import optimizers
    if entry is None or isinstance(entry, str):
        return optimizers.get(entry or "rmsprop")
    name = entry.get("class_name", "")
    if name.startswith("Custom>") and name[7:].lower() in optimizers._BY_NAME:
        name = name[7:]                    # (tf.keras 2 registers its optimizers so)
    found = custom_object(entry.get("registered_name")) or custom_object(name)
    config = dict(entry.get("config") or {})
    for key in ("is_legacy_optimizer", "jit_compile"):     # (no meaning here)
        config.pop(key, None)
    if config.get("decay") == 0:
        del config["decay"]                # (tf.keras 2's legacy optimizers: no decay)
    if found is not None:
        return found.from_config(config)
    if name.lower() not in optimizers._BY_NAME:
        raise SavingError(f"unknown optimizer class {name!r}: pass it in custom_objects")
    return optimizers.deserialize({"class_name": name, "config": config})


def _keras_spec(value, kind):
    """A loss or metric argument of a Keras ``compile_config`` as compile takes it."""
    from . import metrics
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        found = custom_object(value)
        return value if found is None else found
    if isinstance(value, list):
        return [_keras_spec(v, kind) for v in value]
    if not isinstance(value, dict):
        raise SavingError(f"unexpected {kind} entry {value!r:.200}")
    if "class_name" not in value:
        return {k: _keras_spec(v, kind) for k, v in value.items()}
    name, config = value["class_name"], value.get("config")
    if name == "__tuple__":
        return tuple(_keras_spec(v, kind) for v in (config or {}).get("value", []))
    if name == "function":                  # (Keras 3: a function, by its name)
        found = custom_object(value.get("registered_name"))
        return found if found is not None else _keras_spec(config, kind)
    config = dict(config or {})
    if name == "MeanMetricWrapper" and kind == "metric":     # (tf.keras 2's metric names)
        try:
            metrics.get(config.get("name"))
            return config.get("name")
        except (TypeError, ValueError):
            return _keras_spec(config.get("fn"), kind)
    cls = custom_object(value.get("registered_name")) or custom_object(name)
    if cls is None:
        cls = _known_classes(kind).get(name)
        if cls is None:
            raise SavingError(f"unknown {kind} class {name!r}: pass it in custom_objects")
        if kind == "loss":
            # tf.keras 2 names the default reduction "auto" and writes the function that a
            # built-in loss class wraps
            if config.get("reduction") == "auto":
                config["reduction"] = "sum_over_batch_size"
            config.pop("fn", None)
    return cls.from_config(config)


def _output_count(model) -> int:
    try:
        outputs = model.outputs
    except (AttributeError, ValueError):
        return 1
    return 1 if outputs is None else len(_nest.flatten(outputs))


def _compile_from_keras(model, comp, path, optimizer_key="optimizer"):
    """Compile ``model`` as a Keras ``compile_config`` (or tf.keras 2's
    ``training_config``) says; True when it could be, else a warning and False."""
    import warnings
    try:
        metrics = _keras_spec(comp.get("metrics"), "metric")
        weighted = _keras_spec(comp.get("weighted_metrics"), "metric")
        if _output_count(model) == 1:      # (tf.keras 2 lists the metrics of each output)
            if isinstance(metrics, list) and len(metrics) == 1 and \
                    isinstance(metrics[0], list):
                metrics = metrics[0]
            if isinstance(weighted, list) and len(weighted) == 1 and \
                    isinstance(weighted[0], list):
                weighted = weighted[0]
        model.compile(optimizer=_keras_optimizer(comp.get(optimizer_key)),
                      loss=_keras_spec(comp.get("loss"), "loss"), metrics=metrics,
                      loss_weights=comp.get("loss_weights"), weighted_metrics=weighted)
    except Exception as exc:
        warnings.warn(f"load_model: {path} loaded, but compiling it with the saved arguments "
                      f"failed ({type(exc).__name__}: {exc}); call compile yourself",
                      UserWarning, stacklevel=3)
        return False
    return True


# --- Keras' functional models: each layer lists its calls

class _NotMadeYet(Exception):
    """A call whose input tensors no call has made yet."""


def _keras_value(value, tensor):
    """An argument of a call in Keras 3's functional config, its symbolic tensors found by
    ``tensor(layer name, call index, output index)``."""
    if isinstance(value, list):
        return [_keras_value(v, tensor) for v in value]
    if not isinstance(value, dict):
        return value
    name = value.get("class_name")
    config = value.get("config") or {}
    if name == "__keras_tensor__":
        return tensor(*config["keras_history"])
    if name == "__tuple__":
        return tuple(_keras_value(v, tensor) for v in config.get("value", []))
    if name in ("__numpy__", "__tensor__"):
        return np.asarray(config["value"], dtype=config.get("dtype"))
    if name == "__slice__":
        return slice(*(_keras_value(config.get(k), tensor) for k in ("start", "stop", "step")))
    if name == "__ellipsis__":
        return Ellipsis
    if name == "__bytes__":
        return config["value"].encode("utf-8")
    if name is not None and "config" in value:
        raise SavingError(f"saved model: a call takes a {name} object, which gradtape cannot "
                          "rebuild")
    return {k: _keras_value(v, tensor) for k, v in value.items()}


def _keras3_call(node, tensor):
    """``(args, kwargs)`` of one call in Keras 3's layout (``{"args": [...], "kwargs":
    {...}}``)."""
    args = _keras_value(node.get("args", []), tensor)
    kwargs = _keras_value(node.get("kwargs", {}), tensor)
    if "mask" in kwargs and kwargs["mask"] is None:
        del kwargs["mask"]                 # (no mask given: the call's default)
    return args, kwargs


def _is_history(value) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and all(isinstance(i, int) and not isinstance(i, bool) for i in value[1:]))


def _keras2_call(node, tensor):
    """``(args, kwargs)`` of one call in Keras 2's layout: ``[[layer name, call index,
    output index, kwargs], ...]``, one entry per input (one input: called on it alone);
    in the kwargs a symbolic tensor is ``[layer name, call index, output index]``."""
    def kw(value):
        if _is_history(value):
            return tensor(*value)
        if isinstance(value, dict):
            if set(value) <= {"start", "stop", "step"} and value:    # (a slice)
                return slice(value.get("start"), value.get("stop"), value.get("step"))
            if value == {"class_name": "__ellipsis__"}:
                return Ellipsis
            return {k: kw(v) for k, v in value.items()}
        if isinstance(value, list):
            return [kw(v) for v in value]
        return value
    if node and isinstance(node[0], str):
        node = [node]                      # (one input, written without its list)
    inputs, kwargs = [], {}
    for entry in node:
        inputs.append(tensor(*entry[:3]))
        if len(entry) > 3:
            kwargs = kw(entry[3] or {})
    return [inputs[0] if len(inputs) == 1 else inputs], kwargs


def _keras_op(data):
    """For a config entry that is an operation rather than a layer (Keras 3's ``keras.ops``
    on symbolic tensors, tf.keras 2's ``TFOpLambda``), ``call(args, kwargs)`` recording
    it in the graph; None for a layer."""
    module = data.get("module") or ""
    name = data.get("class_name")
    config = dict(data.get("config") or {})
    if module.startswith(("keras.src.ops.", "keras.ops")):
        from . import keras_ops
        fn = getattr(keras_ops, _keras_snake(name), None)
        if fn is None:
            raise SavingError(f"saved model: the operation {name} ({module}) has no "
                              "counterpart in gt.keras.ops")
        config.pop("name", None)
        return lambda args, kwargs: fn(*args, **config, **kwargs)
    if name in ("TFOpLambda", "SlicingOpLambda") and isinstance(config.get("function"), str):
        import operator
        from . import keras_ops
        import gradtape
        path = config["function"]
        if path == "__operators__.getitem":
            def fn(x, slice_spec):
                return x[tuple(slice_spec) if isinstance(slice_spec, list) else slice_spec]
        elif path.startswith("__operators__."):
            op = getattr(operator, path.split(".", 1)[1], None)
            fn = None if op is None else (lambda x, *a, **k: op(x, *a, *k.values()))
        else:
            fn = gradtape
            for part in path.split("."):
                fn = getattr(fn, part, None)
        if not callable(fn):
            raise SavingError(f"saved model: layer '{config.get('name')}' calls the "
                              f"TensorFlow function tf.{path}, which gradtape does not have")

        def call(args, kwargs):
            kwargs = {k: v for k, v in kwargs.items() if k != "name"}
            return keras_ops._symbolic_call(fn, args, kwargs)
        return call
    return None


def _skips_first_call(layer) -> bool:
    """Whether Keras 2 numbered the calls of ``layer`` from 1 (a nested model that has its
    inputs: its first node is its own graph's)."""
    from .layers import Model, Sequential
    if isinstance(layer, Sequential):
        return layer.__dict__.get("_input_batch_shape") is not None
    return isinstance(layer, Model) and layer.__dict__.get("_graph") is not None


def _keras_functional_from_config(config, custom_objects):
    """The functional model of Keras' own config (Keras 3's or tf.keras 2's): its layers,
    each with the calls it makes (``inbound_nodes``), ``input_layers`` and
    ``output_layers``."""
    from .keras_graph import KerasTensor
    from .layers import InputLayer, Model
    layers, ops, calls, order, made = {}, {}, {}, [], {}
    for data in config.get("layers", []):
        if not isinstance(data, dict) or "class_name" not in data:
            raise SavingError(f"saved model: not a layer entry: {data!r:.200}")
        inner = data.get("config") if isinstance(data.get("config"), dict) else {}
        name = data.get("name") or inner.get("name")
        if name in calls:
            raise SavingError(f"saved model: two layers are named {name!r}")
        op = _keras_op(data)
        if op is not None:
            ops[name] = op
        else:
            layer = deserialize_layer({**data, "config": {"name": name, **inner}},
                                      custom_objects)
            layers[name] = layer
            if isinstance(layer, InputLayer):
                made[(name, 0)] = [layer.output]
        order.append(name)
        calls[name] = list(data.get("inbound_nodes") or [])
    keras2 = any(isinstance(node, list) for nodes in calls.values() for node in nodes)
    decode = _keras2_call if keras2 else _keras3_call
    counts = {name: int(keras2 and _skips_first_call(layers.get(name))) for name in order}
    op_layers = {name: [] for name in ops}

    def tensor(name, node, index):
        got = made.get((name, node))
        if got is None:
            if name not in calls:
                raise SavingError(f"saved model: a call takes an output of {name!r}, which "
                                  "is not a layer of the model")
            raise _NotMadeYet
        if not 0 <= index < len(got):
            raise SavingError(f"saved model: a call takes output {index} of {name!r}, which "
                              f"has {len(got)}")
        return got[index]

    while True:
        progress, waiting = False, []
        for name in order:
            nodes = calls[name]
            while nodes:
                try:
                    args, kwargs = decode(nodes[0], tensor)
                except _NotMadeYet:
                    break
                if name in ops:
                    out = ops[name](args, kwargs)
                else:
                    out = layers[name](*args, **kwargs)
                flat = _nest.flatten(out)
                made[(name, counts[name])] = flat
                counts[name] += 1
                nodes.pop(0)
                progress = True
                if name in ops:
                    op_layers[name].extend(t._node.layer for t in flat
                                           if isinstance(t, KerasTensor) and t._node)
            if nodes:
                waiting.append(name)
        if not waiting:
            break
        if not progress:
            raise SavingError(f"saved model: the calls of {waiting} take tensors that no call "
                              "makes")

    def endpoints(spec):
        if _is_history(spec):
            try:
                return tensor(*spec)
            except _NotMadeYet:
                raise SavingError(f"saved model: the model's input or output {spec} is "
                                  "never made") from None
        if isinstance(spec, dict):
            return {k: endpoints(v) for k, v in spec.items()}
        if isinstance(spec, list):
            return [endpoints(v) for v in spec]
        raise SavingError(f"saved model: unexpected input or output entry {spec!r:.200}")
    inputs, outputs = endpoints(config.get("input_layers")), endpoints(
        config.get("output_layers"))
    if keras2:          # (tf.keras 2: one input or output in a list is the tensor itself)
        inputs, outputs = (v[0] if isinstance(v, list) and len(v) == 1 else v
                           for v in (inputs, outputs))
    model = Model(inputs, outputs, name=config.get("name"))
    # model.layers in the file's order (Keras' weight paths count the layers in it)
    model._graph.keep_layer_order([x for name in order for x in (
        op_layers[name] if name in ops else [layers[name]])])
    model.trainable = bool(config.get("trainable", True))
    return model


# --- the loaders

def _keras_model(entry, custom_objects, path):
    """The model of a Keras config entry (Keras 3's ``config.json`` or tf.keras 2's
    ``model_config``), built."""
    try:
        model = deserialize_layer(entry, custom_objects)
        build_from_config = getattr(model, "build_from_config", None)
        if callable(build_from_config) and isinstance(entry.get("build_config"), dict):
            build_from_config(entry["build_config"])      # (a FeatureSpace)
        elif not model.built:
            shape = (entry.get("build_config") or {}).get("input_shape")
            if shape is None:
                shape = (entry.get("config") or {}).get("build_input_shape")
            if shape is not None:
                model.build(tuple(shape))
    except SavingError:
        raise
    except Exception as exc:
        raise SavingError(f"load_model: {path}: the Keras model does not rebuild "
                          f"({type(exc).__name__}: {exc})") from exc
    return model


def _load_keras_zip(zf, path, config, custom_objects, compile):
    """``load_model`` of a ``.keras`` file that Keras 3 wrote."""
    names = zf.namelist()
    model = _keras_model(config, custom_objects, path)
    opt_values = None
    if KERAS_WEIGHTS_MEMBER in names:
        h5py = _h5py(path)
        where = f"{path} ({KERAS_WEIGHTS_MEMBER})"
        with h5py.File(io.BytesIO(zf.read(KERAS_WEIGHTS_MEMBER)), "r") as f:
            _read_keras3_weights(model, f, where, "load_model")
            opt_values = _keras3_optimizer_arrays(f)
    elif model.variables:
        raise SavingError(f"load_model: {path} has no {KERAS_WEIGHTS_MEMBER}; the model has "
                          f"{len(model.variables)} weights")
    _read_assets(zf, path, model)
    comp = config.get("compile_config")
    if compile and comp and _compile_from_keras(model, comp, path) and opt_values:
        _restore_keras_optimizer(model, opt_values, path,
                                 f"optimizer/vars of {KERAS_WEIGHTS_MEMBER}")
    return model


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _legacy_weight_names(group):
    return [_text(n) for n in group.attrs.get("weight_names", [])]


def _read_legacy_weights(model, group, where, who):
    """Load ``model``'s weights from tf.keras 2's HDF5 layout (``layer_names``, each
    layer's ``weight_names``), layer by layer in order as tf.keras 2 does: the layers of
    the file with weights to the layers of the model with weights."""
    from .layers import Normalization
    layer_names = [_text(n) for n in group.attrs["layer_names"]]
    file_layers = [(n, _legacy_weight_names(group[n])) for n in layer_names]
    file_layers = [(n, w) for n, w in file_layers if w]
    model_layers = [layer for layer in model.layers if layer.variables]
    if len(file_layers) != len(model_layers):
        raise SavingError(f"{who}: {where} holds the weights of {len(file_layers)} layers "
                          f"({', '.join(n for n, _ in file_layers)}), {type(model).__name__} "
                          f"'{model.name}' has {len(model_layers)} layers with weights "
                          f"({', '.join(x.name for x in model_layers)}); nothing was loaded")
    plan, problems = [], []
    for (name, weight_names), layer in zip(file_layers, model_layers):
        if isinstance(layer, Normalization):       # (tf.keras 2's count: no meaning here)
            weight_names = [w for w in weight_names
                            if w.rpartition("/")[2].partition(":")[0] != "count"]
        variables = layer.variables
        if len(weight_names) != len(variables):
            problems.append(f"layer '{layer.name}' ({type(layer).__name__}) has "
                            f"{len(variables)} weights, the file's layer '{name}' "
                            f"{len(weight_names)} ({', '.join(weight_names)})")
            continue
        for wname, var in zip(weight_names, variables):
            arr = np.asarray(group[name][wname][()])
            if isinstance(layer, Normalization) and arr.size == var._value.size:
                arr = arr.reshape(var._value.shape)   # Keras' (C,) mean, ours broadcastable
            plan.append((var, arr,
                         f"layer '{layer.name}' weight '{var.name}' (the file's {wname})"))
    if problems:
        raise SavingError(f"{who}: {where} does not fit {type(model).__name__} "
                          f"'{model.name}'; nothing was loaded:\n  " + "\n  ".join(problems))
    _fit_arrays(plan, who, where, model)


def _legacy_optimizer_values(f):
    """The optimizer weights of an HDF5 model file in order, when a Keras 3 or a tf.keras
    2.11+ optimizer wrote them (``iteration`` first); None otherwise (tf.keras 2's legacy
    optimizers)."""
    group = f.get("optimizer_weights")
    if group is None:
        return None
    names = _legacy_weight_names(group)
    if not names or names[0].rpartition("/")[2].partition(":")[0] != "iteration":
        return None
    return [np.asarray(group[n][()]) for n in names]


def _load_keras_h5(path, custom_objects, compile):
    """``load_model`` of tf.keras 2's HDF5 file (``model.save("m.h5")``)."""
    import warnings
    h5py = _h5py(path)
    with h5py.File(path, "r") as f, _custom_scope(custom_objects):
        raw = f.attrs.get("model_config")
        if raw is None:
            raise SavingError(f"load_model: {path} holds weights only (no model_config): "
                              "build the model in code and call model.load_weights")
        try:
            config = json.loads(_text(raw))
        except ValueError as exc:
            raise SavingError(f"load_model: {path}: its model_config is not JSON ({exc})") \
                from None
        model = _keras_model(config, custom_objects, path)
        group = f["model_weights"] if "model_weights" in f else f
        _read_legacy_weights(model, group, path, "load_model")
        raw = f.attrs.get("training_config")
        if not compile or raw is None:
            return model
        comp = json.loads(_text(raw))
        if not _compile_from_keras(model, comp, path, "optimizer_config"):
            return model
        values = _legacy_optimizer_values(f)
        if values is not None:
            names = _legacy_weight_names(f["optimizer_weights"])
            _restore_keras_optimizer(model, values, path, "optimizer_weights", rate_saved=(
                len(names) > 1 and names[1].rpartition("/")[2].startswith("learning_rate")))
        elif "optimizer_weights" in f and len(_legacy_weight_names(f["optimizer_weights"])) > 1:
            warnings.warn(f"load_model: {path}: the state of its optimizer (a tf.keras 2 "
                          "legacy optimizer) is not restored: the optimizer starts afresh",
                          UserWarning, stacklevel=3)
    return model


def load_keras_weights(model, filepath):
    """``model.load_weights`` of an HDF5 file Keras wrote: Keras 3's ``.weights.h5`` (the
    model's weights; its optimizer's, if any, are left) or tf.keras 2's ``.h5`` (weights
    only, or a whole model)."""
    path = os.fspath(filepath)
    h5py = _h5py(path)
    with h5py.File(path, "r") as f:
        if "layer_names" in f.attrs or "model_weights" in f:
            group = f["model_weights"] if "model_weights" in f else f
            _read_legacy_weights(model, group, path, "load_weights")
        else:
            _read_keras3_weights(model, f, path, "load_weights")


# --- configs, JSON and clones of models (keras.models.clone_model, model_from_json) -------------

def model_get_config(model) -> dict:
    """``model.get_config()`` as Keras: a Sequential's layers (and input shape), a functional
    model's layers and graph; a subclassed model's base config (name, trainable, dtype)."""
    from .layers import Layer, Sequential
    if isinstance(model, Sequential):
        return _sequential_config(model)
    if model.__dict__.get("_graph") is not None:
        return _functional_config(model)
    return Layer.get_config(model)


def model_from_config(cls, config, custom_objects=None):
    """``Model.from_config(config)`` / ``Sequential.from_config(config)``: the model a
    :func:`model_get_config` dict describes (new layers, fresh weights)."""
    from .layers import Sequential
    if not isinstance(config, dict):
        raise TypeError(f"{cls.__name__}.from_config: expected a dict, got "
                        f"{type(config).__name__}")
    with _custom_scope(custom_objects):
        if issubclass(cls, Sequential) and "layers" in config:
            return _sequential_from_config(cls, config, custom_objects)
        if "layers" in config and "calls" in config and "outputs" in config:
            if cls.__init__ is not _model_init():
                raise SavingError(f"{cls.__name__}.from_config: a functional config rebuilds "
                                  "a keras.Model, not a subclass with its own __init__; "
                                  "define from_config on the subclass")
            return _functional_from_config(config, custom_objects)
        try:
            return cls(**config)
        except TypeError as exc:
            raise TypeError(f"{cls.__name__}.from_config: unable to revive the model from "
                            f"config {config}: {exc}. When overriding get_config(), return "
                            "every constructor argument, or define from_config") from None


def _model_init():
    from .layers import Model
    return Model.__init__


def model_to_json(model, **kwargs) -> str:
    """``model.to_json()``: the architecture (as ``model.save`` writes it) as a JSON string;
    ``kwargs`` go to ``json.dumps``. :func:`model_from_json` reads it."""
    _SCOPE.saving = {}
    try:
        arch = serialize_layer(model)
    finally:
        _SCOPE.saving = None
    return json.dumps({"format": FORMAT, **arch}, **kwargs)


def model_from_json(json_string, custom_objects=None):
    """The model (new layers, fresh weights, not compiled) that :func:`model_to_json`
    described. A JSON string written by real Keras is refused: its schema differs."""
    try:
        data = json.loads(json_string)
    except (TypeError, ValueError) as exc:
        raise SavingError(f"model_from_json: not a JSON string ({exc})") from None
    if not isinstance(data, dict) or "class_name" not in data:
        raise SavingError(f"model_from_json: not a model description: {json_string!r:.200}")
    if data.get("format") != FORMAT:
        found = data.get("format")
        hint = (" (this looks like real Keras' JSON, which gradtape cannot read; build the "
                "model in code, or save it with gradtape)" if "module" in data else "")
        raise SavingError(f"model_from_json: format {found!r}, expected {FORMAT!r}{hint}")
    with _custom_scope(custom_objects):
        return deserialize_layer({"class_name": data["class_name"],
                                  "config": data.get("config")}, custom_objects)


def _default_clone(layer):
    """Keras' default ``clone_function``: ``layer.__class__.from_config(layer.get_config())``
    (a nested model is cloned whole; a Lambda keeps its function)."""
    from .layers import Layer, Model, TFOpLambda
    from .layers_extra import Lambda
    if not isinstance(layer, Layer):
        return layer                  # a plain function in a Sequential: no state to copy
    if isinstance(layer, Model):
        return clone_model(layer)
    if type(layer) is TFOpLambda:
        return TFOpLambda(layer.function, name=layer.name)
    if type(layer) is Lambda:
        return Lambda(layer.function, arguments=dict(layer.arguments), name=layer.name,
                      trainable=layer.trainable, dtype=layer.dtype_policy.name,
                      output_shape=layer._output_shape, mask=layer.mask)
    try:
        config = layer.get_config()
        return type(layer).from_config(config)
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise ValueError(f"clone_model: {type(layer).__name__} layer '{layer.name}' could not "
                         f"be rebuilt from its get_config() ({type(exc).__name__}: {exc}); "
                         "define get_config to return the constructor arguments, or pass a "
                         "clone_function") from exc


def _copy_compile(source, clone):
    """Compile ``clone`` as ``source`` is compiled (a new optimizer of the same config), as
    Keras 3's clone_model does."""
    if not source.__dict__.get("_is_compiled"):
        return
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = _compile_config(source)
    if config is None:
        warnings.warn(f"clone_model: the compile arguments of '{source.name}' cannot be "
                      "copied; the clone is not compiled", UserWarning, stacklevel=3)
        return
    _compile_from_config(clone, config, f"clone of '{source.name}'")


def clone_model(model, input_tensors=None, clone_function=None, call_function=None,
                recursive=False, **kwargs):
    """A copy of a Sequential or functional ``model`` with new layers and freshly initialized
    weights (``clone.set_weights(model.get_weights())`` copies them), as
    ``keras.models.clone_model``: same layer names, compiled alike when ``model`` is.

    ``clone_function(layer)`` makes each new layer (default:
    ``layer.__class__.from_config(layer.get_config())``); ``call_function(layer, *args,
    **kwargs)`` makes each call of a functional model; ``input_tensors``: ``keras.Input``
    tensors to build on (one for a Sequential, the inputs' structure for a functional
    model); ``recursive``: clone nested Sequential/functional models with the same
    functions. Any other model (subclassed) is rebuilt as
    ``type(model).from_config(model.get_config())`` — it must return the constructor's
    arguments — and is not built until first called.
    """
    from .keras_graph import Input, KerasTensor
    from .layers import Layer, Model, Sequential
    cache = kwargs.pop("cache", None)
    if kwargs:
        raise ValueError(f"clone_model: Unexpected keyword argument(s): {tuple(kwargs)}")
    if cache is None:
        cache = {}
    if clone_function is not None and not callable(clone_function):
        raise ValueError(f"clone_model: Expected `clone_function` argument to be a callable. "
                         f"Received: clone_function={clone_function!r}")

    def clone(layer):
        if id(layer) in cache:
            return cache[id(layer)]
        if recursive and isinstance(layer, Model) and (
                isinstance(layer, Sequential) or layer.__dict__.get("_graph") is not None):
            new = clone_model(layer, clone_function=clone_function,
                              call_function=None if isinstance(layer, Sequential)
                              else call_function, recursive=True, cache=cache)
        else:
            new = (clone_function or _default_clone)(layer)
        cache[id(layer)] = new
        return new

    if isinstance(model, Sequential):
        if call_function is not None:
            raise ValueError("clone_model: `call_function` is not supported with Sequential "
                             "models (their layers are listed, not called, at construction); "
                             "use it with functional models")
        new_layers = [clone(layer) for layer in model.layers]
        first = []
        if input_tensors is not None:
            if isinstance(input_tensors, (list, tuple)):
                if len(input_tensors) != 1:
                    raise ValueError("clone_model: Argument `input_tensors` must contain a "
                                     "single tensor.")
                input_tensors = input_tensors[0]
            if not isinstance(input_tensors, KerasTensor) or \
                    input_tensors._input_layer is None:
                raise ValueError(f"clone_model: Argument `input_tensors` must be a "
                                 f"keras.Input tensor. Received invalid value: "
                                 f"input_tensors={input_tensors!r:.100}")
            first = [input_tensors]
        else:
            shape = model.__dict__.get("_input_batch_shape") or \
                model.__dict__.get("_seen_input_shape")
            if shape is not None:
                dtype = model.__dict__.get("_input_dtype")
                first = [Input(batch_shape=tuple(shape),
                               dtype=None if dtype is None else _input_dtype_name(dtype))]
        new = Sequential(first + new_layers, name=model.name, trainable=model.trainable)
        _copy_compile(model, new)
        return new

    graph = model.__dict__.get("_graph") if isinstance(model, Model) else None
    if graph is not None and (type(model).get_config is Model.get_config
                              or clone_function is not None or input_tensors is not None):
        if input_tensors is not None:
            given = _nest.flatten(input_tensors)
            if not all(isinstance(t, KerasTensor) and t._input_layer is not None
                       for t in given):
                raise ValueError(f"clone_model: All entries in `input_tensors` must be "
                                 f"keras.Input tensors. Received invalid values: "
                                 f"input_tensors={input_tensors!r:.200}")
            try:
                _nest.assert_same_structure(input_tensors, graph.inputs)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"clone_model: `input_tensors` must have the same structure "
                                 f"as model.input ({graph.inputs!r:.200}): {exc}") from None
            new_inputs = input_tensors
        else:
            new_inputs = _nest.map_structure(
                lambda kt: Input(batch_shape=tuple(kt.shape),
                                 dtype=_input_dtype_name(kt._np_dtype), name=kt.name),
                graph.inputs) if _nest.is_nested(graph.inputs) \
                else Input(batch_shape=tuple(graph.inputs.shape),
                           dtype=_input_dtype_name(graph.inputs._np_dtype),
                           name=graph.inputs.name)
        values = {id(old): new for old, new in zip(graph.flat_inputs,
                                                    _nest.flatten(new_inputs))}
        for node in graph.nodes:
            layer = clone(node.layer)
            concrete = [values[id(v)] if isinstance(v, KerasTensor) else v for v in node.flat]
            ci, ca, ck = _nest.pack_sequence_as(node.structure, concrete)
            out = (call_function(layer, ci, *ca, **ck) if call_function is not None
                   else layer(ci, *ca, **ck))
            flat = _nest.flatten(out)
            if len(flat) != len(node.outputs):
                raise ValueError(f"clone_model: the call of layer '{node.layer.name}' gave "
                                 f"{len(flat)} outputs in the clone, {len(node.outputs)} in "
                                 "the model")
            for kt, t in zip(node.outputs, flat):
                values[id(kt)] = t
        outputs = _nest.pack_sequence_as(
            graph.outputs, [values[id(kt)] for kt in graph.flat_outputs]) \
            if _nest.is_nested(graph.outputs) else values[id(graph.flat_outputs[0])]
        cls = type(model) if type(model).__init__ is Model.__init__ else Model
        new = cls(new_inputs, outputs, name=model.name)
        new.trainable = model.trainable
        _copy_compile(model, new)
        return new

    if clone_function is not None or input_tensors is not None:
        raise ValueError(f"clone_model: Arguments `clone_function` and `input_tensors` are "
                         f"only supported for Sequential models or Functional models. "
                         f"Received model of type '{type(model).__name__}'")
    if call_function is not None:
        raise ValueError(f"clone_model: Argument `call_function` is only supported for "
                         f"Functional models. Received model of type "
                         f"'{type(model).__name__}'")
    if not isinstance(model, Layer):
        raise TypeError(f"clone_model: expected a keras Model, got {type(model).__name__}")
    config = model.get_config()
    try:
        new = type(model).from_config(config)
    except TypeError as exc:
        raise NotImplementedError(
            f"clone_model: {type(model).__name__} '{model.name}' cannot be rebuilt from its "
            f"config {config}: a subclassed model must implement get_config() returning its "
            f"constructor's arguments (and from_config, if they are not plain values) to be "
            f"cloned ({exc})") from None
    if isinstance(model, Model):
        _copy_compile(model, new)
    return new
