"""Training utilities under TensorFlow's names (``tf.train``): checkpoints.

    ckpt = gt.train.Checkpoint(model=model, optimizer=optimizer)
    ckpt.save("runs/ckpt")
    ckpt.restore(gt.train.latest_checkpoint("runs"))
"""
from __future__ import annotations

from .checkpoint import Checkpoint, CheckpointError, CheckpointLoadStatus, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointError", "CheckpointLoadStatus", "latest_checkpoint"]
