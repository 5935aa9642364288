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
