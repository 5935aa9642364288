"""Training utilities under TensorFlow's names (``tf.train``): checkpoints.

    ckpt = gt.train.Checkpoint(model=model, optimizer=optimizer)
    ckpt.save("runs/ckpt")
    ckpt.restore(gt.train.latest_checkpoint("runs"))

    manager = gt.train.CheckpointManager(ckpt, "runs", max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)   # None on a first run restores nothing
    manager.save()
"""
from __future__ import annotations

from .checkpoint import (Checkpoint, CheckpointError, CheckpointLoadStatus, CheckpointManager,
                         latest_checkpoint)

__all__ = ["Checkpoint", "CheckpointError", "CheckpointLoadStatus", "CheckpointManager",
           "latest_checkpoint"]
