"""Whole-model saving, as Keras: ``model.save(path)`` writes the architecture, the compile
arguments and the weights to one file; ``gt.keras.models.load_model(path)`` rebuilds the
model from it.

    model.save("digits.keras")
    same = gt.keras.models.load_model("digits.keras")

The file is a zip archive holding ``config.json`` (the model's layers and, for a functional
model, the graph of their calls), ``metadata.json`` and ``model.weights.safetensors`` (the
variables, as ``save_weights`` writes them; never pickle). It is written to a temporary file
and renamed, so a crash never leaves half a model. Sequential and functional models of
gradtape's layers save; a subclassed model, a ``Lambda`` layer or an operator on symbolic
tensors has no architecture to write (save the weights instead, and build the model in code).
Layers of your own classes load when given in ``custom_objects`` or registered with
:func:`register_keras_serializable`. The optimizer's configuration is kept, not its state
(``gt.train.Checkpoint`` saves that).
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from . import nest as _nest

__all__ = ["save_model", "load_model", "serialize_layer", "deserialize_layer",
           "register_keras_serializable", "SavingError"]

FORMAT = "gradtape.keras/1"
_REGISTERED: dict = {}


class SavingError(ValueError):
    """A model that cannot be saved, or a file that is not a saved gradtape model."""


def register_keras_serializable(package="Custom", name=None):
    """Class decorator: make a layer class loadable by name (as Keras' decorator)."""
    def decorate(cls):
        _REGISTERED[name or cls.__name__] = cls
        _REGISTERED[f"{package}>{name or cls.__name__}"] = cls
        return cls
    return decorate


def _classes(custom_objects=None):
    from . import layers
    from .layers import Layer
    found = {name: obj for name, obj in vars(layers).items()
             if isinstance(obj, type) and issubclass(obj, Layer)}
    found.update(_REGISTERED)
    found.update(custom_objects or {})
    return found


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
        return {"class_name": type(layer).__name__, "config": _sequential_config(layer)}
    if isinstance(layer, Model):
        if layer.__dict__.get("_graph") is None or type(layer) is not Model:
            raise SavingError(f"{type(layer).__name__} '{layer.name}' is a subclassed model: "
                              "its architecture is Python code, which cannot be saved; use "
                              "save_weights, or build it as a functional or Sequential model")
        return {"class_name": "Functional", "config": _functional_config(layer)}
    config = layer.get_config()
    _check_json(config, f"{type(layer).__name__} layer '{layer.name}'")
    return {"class_name": type(layer).__name__, "config": config}


def deserialize_layer(data, custom_objects=None):
    """The layer (or model) :func:`serialize_layer` described."""
    from .layers import InputLayer
    if not isinstance(data, dict) or "class_name" not in data:
        raise SavingError(f"not a serialized layer: {data!r:.200}")
    name, config = data["class_name"], dict(data.get("config") or {})
    if name == "Functional":
        return _functional_from_config(config, custom_objects)
    classes = _classes(custom_objects)
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
    shape = model.__dict__.get("_input_batch_shape") or model.__dict__.get("_seen_input_shape")
    dtype = model.__dict__.get("_input_dtype")
    return {"name": model.name,
            "layers": [serialize_layer(layer) for layer in model.layers],
            "build_input_shape": None if shape is None else list(shape),
            "input_dtype": None if dtype is None else np.dtype(dtype).name}


def _sequential_from_config(cls, config, custom_objects):
    from .keras_graph import Input
    layers = [deserialize_layer(d, custom_objects) for d in config.get("layers", [])]
    shape = config.get("build_input_shape")
    first = []
    if shape is not None:
        first = [Input(batch_shape=tuple(shape), dtype=config.get("input_dtype") or None)]
    return cls(first + layers, name=config.get("name"))


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
        if layer in graph.input_layers:
            layers.append({"class_name": "InputLayer", "config": {
                "batch_shape": list(layer.batch_shape), "dtype": layer._input_dtype.name,
                "name": layer.name}})
        else:
            layers.append(serialize_layer(layer))
    return {"name": model.name, "layers": layers, "calls": calls,
            "inputs": encode(graph.inputs, "the inputs"),
            "outputs": encode(graph.outputs, "the outputs")}


def _functional_from_config(config, custom_objects):
    from .keras_graph import KerasTensor
    from .layers import InputLayer, Model
    layers, tensors = {}, {}
    for data in config.get("layers", []):
        layer = deserialize_layer(data, custom_objects)
        layers[layer.name] = layer
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
    return Model(decode(config["inputs"]), decode(config["outputs"]), name=config.get("name"))


# --- whole models ----------------------------------------------------------------------------------

def _compile_config(model):
    if not model.__dict__.get("_is_compiled"):
        return None
    from . import optimizers, losses
    opt = optimizers.serialize(model.optimizer)
    loss = model.loss

    def enc_loss(spec):
        if spec is None or isinstance(spec, str):
            return spec
        if isinstance(spec, losses.Loss):
            return losses.serialize(spec)
        return getattr(spec, "__name__", None)
    if isinstance(loss, dict):
        loss = {k: enc_loss(v) for k, v in loss.items()}
    elif isinstance(loss, (list, tuple)):
        loss = [enc_loss(v) for v in loss]
    else:
        loss = enc_loss(loss)
    metrics = model.compiled_metrics._spec

    def enc_metrics(spec):
        if spec is None or isinstance(spec, str):
            return spec
        if isinstance(spec, (list, tuple)):
            return [enc_metrics(s) for s in spec]
        if isinstance(spec, dict):
            return {k: enc_metrics(v) for k, v in spec.items()}
        return getattr(spec, "name", None) or getattr(spec, "__name__", None)
    config = {"optimizer": opt, "loss": loss, "metrics": enc_metrics(metrics),
              "loss_weights": model.compiled_loss._weights_spec,
              "weighted_metrics": enc_metrics(model.compiled_metrics._weighted_spec)}
    try:
        json.dumps(config)
    except (TypeError, ValueError):
        return None
    return config


def save_model(model, filepath, overwrite=True) -> str:
    """Write ``model`` (architecture, compile arguments, weights) to ``filepath``."""
    from .checkpoint import save_module
    from . import __version__
    path = os.fspath(filepath)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"save: {path} exists and overwrite=False")
    arch = serialize_layer(model)           # first: an architecture that cannot be saved
    if not model.built or not model.variables:
        raise SavingError(f"save: {type(model).__name__} '{model.name}' has no weights yet; "
                          "build it (call it on a batch) first")
    config = {"format": FORMAT, "model": arch, "compile": _compile_config(model)}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        weights = os.path.join(tmp, "model.weights.safetensors")
        save_module(model, weights)
        staged = os.path.join(tmp, "model.zip")
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("config.json", json.dumps(config, indent=1))
            zf.writestr("metadata.json", json.dumps({"gradtape_version": __version__,
                                                     "format": FORMAT}))
            zf.write(weights, "model.weights.safetensors")
        os.replace(staged, path)
    return path


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model that :func:`save_model` wrote to ``filepath``, its weights restored (and
    compiled again with the saved arguments when ``compile``)."""
    from .checkpoint import load_module
    path = os.fspath(filepath)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SavingError(f"load_model: {path} is not a saved gradtape model ({exc})") from None
    with zf, tempfile.TemporaryDirectory() as tmp:
        try:
            config = json.loads(zf.read("config.json"))
            zf.extract("model.weights.safetensors", tmp)
        except (KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise SavingError(f"load_model: {path} is not a complete saved gradtape model "
                              f"({exc})") from None
        if config.get("format") != FORMAT:
            raise SavingError(f"load_model: {path} has format {config.get('format')!r}, "
                              f"expected {FORMAT!r}")
        model = deserialize_layer(config["model"], custom_objects)
        load_module(model, os.path.join(tmp, "model.weights.safetensors"))
    comp = config.get("compile")
    if compile and comp:
        from . import losses, optimizers

        def dec_loss(spec):
            if isinstance(spec, dict) and "class_name" in spec:
                return losses.deserialize(spec)
            if isinstance(spec, dict):
                return {k: dec_loss(v) for k, v in spec.items()}
            if isinstance(spec, list):
                return [dec_loss(v) for v in spec]
            return spec
        try:
            model.compile(optimizer=optimizers.deserialize(comp["optimizer"]),
                          loss=dec_loss(comp["loss"]), metrics=comp["metrics"],
                          loss_weights=comp["loss_weights"],
                          weighted_metrics=comp["weighted_metrics"])
        except (TypeError, ValueError) as exc:
            import warnings
            warnings.warn(f"load_model: the model loaded, but compiling it with the saved "
                          f"arguments failed ({exc}); call compile yourself",
                          UserWarning, stacklevel=2)
    return model
