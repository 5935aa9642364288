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


def serialize(obj) -> dict:
    """``{"class_name": ..., "config": obj.get_config()}``."""
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def deserialize(config: dict, classes: dict, kind: str, known, fold_case: bool = True):
    """The object ``config`` describes; ``classes`` maps (lower-case) names to classes."""
    name = config.get("class_name", "")
    cls = classes.get(name.lower() if fold_case else name)
    if cls is None:
        raise ValueError(f"unknown {kind} {name!r}; known {kind}s: {known}")
    return cls.from_config(config.get("config", {}))


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
