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
leaves it out). It is written to a temporary file and renamed, so a crash never leaves half
a model. Sequential and functional models of gradtape's layers save; a subclassed model, a
``Lambda`` layer or an operator on symbolic tensors has no architecture to write (save the
weights instead, and build the model in code).
Layers of your own classes load when given in ``custom_objects`` or registered with
:func:`register_keras_serializable`.

The same configs give ``model.get_config()`` / ``Model.from_config``, ``model.to_json()`` /
``keras.models.model_from_json`` (the architecture only) and ``keras.models.clone_model``
(new layers with fresh weights; ``clone.set_weights(model.get_weights())`` copies them).
"""
from __future__ import annotations

import contextlib
import inspect
import json
import os
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
        return InputLayer(batch_shape=config.get("batch_shape"), dtype=config.get("dtype"),
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
            "dtype": np.dtype(dtype if dtype is not None else np.float32).name,
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
        first = [Input(batch_shape=tuple(shape), dtype=config.get("input_dtype") or None)]
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

    def ref(kt):
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
                "batch_shape": list(layer.batch_shape), "dtype": layer._input_dtype.name,
                "name": layer.name}}
        else:
            entry = serialize_layer(layer)
        entry["name"] = layer.name
        layers.append(entry)
    return {"name": model.name, "trainable": model.trainable, "layers": layers, "calls": calls,
            "inputs": encode(graph.inputs, "the inputs"),
            "outputs": encode(graph.outputs, "the outputs")}


def _functional_from_config(config, custom_objects):
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
    from .checkpoint import save_module, write_arrays
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
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        staged = os.path.join(tmp, "model.zip")
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("config.json", json.dumps(config, indent=1))
            zf.writestr("metadata.json", json.dumps({"gradtape_version": __version__,
                                                     "format": FORMAT}))
            if model.variables:
                weights = os.path.join(tmp, "model.weights.safetensors")
                save_module(model, weights)
                zf.write(weights, "model.weights.safetensors")
            if opt_state is not None:
                state = os.path.join(tmp, OPTIMIZER_MEMBER)
                write_arrays(state, opt_state, "optimizer")
                zf.write(state, OPTIMIZER_MEMBER)
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


def _read_weights(zf, path, model):
    from .checkpoint import CheckpointError, load_module
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
            load_module(model, inner)
        except CheckpointError as exc:
            raise CheckpointError(str(exc).replace(inner, f"{path} (its weights)")) from None


def load_weights_of_saved_model(model, filepath):
    """``model.load_weights`` of a file that ``model.save`` wrote: its weights only."""
    path = os.fspath(filepath)
    with zipfile.ZipFile(path) as zf:
        _read_weights(zf, path, model)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model that :func:`save_model` wrote to ``filepath``, its weights restored (and
    compiled again with the saved arguments when ``compile``)."""
    from .checkpoint import CheckpointError
    path = os.fspath(filepath)
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
        if not isinstance(config, dict) or config.get("format") != FORMAT:
            found = config.get("format") if isinstance(config, dict) else type(config).__name__
            raise SavingError(f"load_model: {path} has format {found!r}, expected {FORMAT!r}")
        try:
            model = deserialize_layer(config["model"], custom_objects)
            _read_weights(zf, path, model)
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
                               dtype=None if dtype is None else np.dtype(dtype).name)]
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
                lambda kt: Input(batch_shape=tuple(kt.shape), dtype=np.dtype(kt._np_dtype).name,
                                 name=kt.name), graph.inputs) if _nest.is_nested(graph.inputs) \
                else Input(batch_shape=tuple(graph.inputs.shape),
                           dtype=np.dtype(graph.inputs._np_dtype).name, name=graph.inputs.name)
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
