"""``gt.bitwise``: bitwise operations on integer tensors (``tf.bitwise``); ``& | ^ ~`` on
integer tensors are these."""
from __future__ import annotations

from .ops.math import (bitwise_and, bitwise_or, bitwise_xor, bitwise_invert as invert,
                       left_shift, right_shift)

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
