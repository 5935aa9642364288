"""Keras-style ``serialize``/``deserialize`` shared by initializers, losses and optimizers."""
from __future__ import annotations


class Configurable:
    """Objects rebuilt from ``get_config()`` (Keras' convention), shown by their config."""

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


# the Keras module each family of built-in classes is serialized under
_KERAS_MODULES = {"gradtape.initializers": "keras.initializers",
                  "gradtape.regularizers": "keras.regularizers",
                  "gradtape.constraints": "keras.constraints", "gradtape.losses": "keras.losses",
                  "gradtape.optimizers": "keras.optimizers", "gradtape.metrics": "keras.metrics"}


def serialize(obj) -> dict:
    """Keras 3's layout: ``{"module", "class_name", "config": obj.get_config(),
    "registered_name"}`` (``registered_name`` None for a built-in class, else the name it
    was registered under, or its own)."""
    cls = type(obj)
    module = _KERAS_MODULES.get(cls.__module__)
    if module is not None:
        module = getattr(cls, "_keras_module", module)    # (a family's own submodule)
    registered = None
    if module is None:
        from .saving import get_registered_name
        module = None if cls.__module__ == "__main__" else cls.__module__
        registered = get_registered_name(cls)
    return {"module": module, "class_name": cls.__name__, "config": obj.get_config(),
            "registered_name": registered}


def deserialize(config: dict, classes: dict, kind: str, known, fold_case: bool = True):
    """The object ``config`` describes (Keras' layout: ``class_name``, ``config`` and, for a
    class of the user's, ``registered_name``; ``module`` tells nothing more); ``classes``
    maps (lower-case) names to the built-in classes. A registered class (or one among the
    ``custom_objects`` of the load in progress) is found by its registered name, or by its
    class name when no built-in class has it."""
    from .saving import custom_object
    name = config.get("class_name", "")
    registered = config.get("registered_name")
    cls = custom_object(registered) if isinstance(registered, str) else None
    if cls is None:
        cls = classes.get(name.lower() if fold_case else name)
    if cls is None and isinstance(name, str) and name:
        cls = custom_object(name)
    if cls is None:
        raise ValueError(f"unknown {kind} {name!r}; known {kind}s: {known}")
    return cls.from_config(config.get("config") or {})


def lookup(identifier, base, classes: dict, kind: str, known):
    """``identifier`` resolved the Keras way: an instance of ``base`` as is, a (case-folded)
    name as a new object, a config dict deserialised; ``None`` for anything else."""
    if isinstance(identifier, base):
        return identifier
    if isinstance(identifier, str):
        cls = classes.get(identifier.lower())
        if cls is None:
            raise ValueError(f"unknown {kind} {identifier!r}; known {kind}s: {known}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier, classes, kind, known)
    return None
