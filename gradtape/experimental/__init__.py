"""Experimental APIs, under TensorFlow's names (``tf.experimental``)."""
from __future__ import annotations

from . import dlpack

__all__ = ["dlpack"]
