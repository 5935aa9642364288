"""``gt.autodiff``: the names of ``tf.autodiff``."""
from __future__ import annotations

from .forward import ForwardAccumulator
from .tape import GradientTape

__all__ = ["ForwardAccumulator", "GradientTape"]
