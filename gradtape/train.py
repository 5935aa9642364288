"""Training utilities under TensorFlow's names (``tf.train``): checkpoints, and moving
averages of variables.

    ckpt = gt.train.Checkpoint(model=model, optimizer=optimizer)
    ckpt.save("runs/ckpt")
    ckpt.restore(gt.train.latest_checkpoint("runs"))

    manager = gt.train.CheckpointManager(ckpt, "runs", max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)   # None on a first run restores nothing
    manager.save()
"""
from __future__ import annotations

from .checkpoint import (Checkpoint, CheckpointError, CheckpointLoadStatus, CheckpointManager,
                         CheckpointReader, checkpoints_iterator, latest_checkpoint,
                         list_variables, load_checkpoint, load_variable)

__all__ = ["Checkpoint", "CheckpointError", "CheckpointLoadStatus", "CheckpointManager",
           "CheckpointReader", "latest_checkpoint", "load_checkpoint", "list_variables",
           "load_variable", "checkpoints_iterator", "ExponentialMovingAverage",
           "Example", "Features", "Feature", "BytesList", "FloatList", "Int64List",
           "SequenceExample", "FeatureList", "FeatureLists"]

# the tf.train protocol messages of serialized examples (hand-written wire format)
from ._proto import (BytesList, Example, Feature, FeatureList, FeatureLists,  # noqa: E402
                     Features, FloatList, Int64List, SequenceExample)
from .misc_extra import (CheckpointOptions, CheckpointState,  # noqa: E402
                         get_checkpoint_state)
__all__ += ["CheckpointOptions", "CheckpointState", "get_checkpoint_state"]


class ExponentialMovingAverage:
    """Shadow copies of variables that follow them with decay ``decay``
    (``tf.train.ExponentialMovingAverage``): after each :meth:`apply`,
    ``shadow -= (1 - decay) * (shadow - variable)``; with ``num_updates`` (a step count) the
    decay is ``min(decay, (1 + num_updates) / (10 + num_updates))``, as TF. The shadows start
    at the variables' values and live on their devices; :meth:`average` gives a variable's
    shadow."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if zero_debias:
            raise ValueError("ExponentialMovingAverage: zero_debias is not supported (the "
                             "shadows start at the variables' values)")
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages = {}         # variable id -> (variable, shadow)

    @property
    def name(self):
        return self._name

    def _decay_value(self):
        from .tensor import Tensor
        d = self._decay
        d = float(d.numpy()) if isinstance(d, Tensor) else float(d)
        if self._num_updates is not None:
            n = self._num_updates
            n = float(n.numpy()) if hasattr(n, "numpy") else float(n)
            d = min(d, (1.0 + n) / (10.0 + n))
        return d

    def apply(self, var_list=None):
        """Create the shadows of new variables, then move every shadow of ``var_list``
        towards its variable; not differentiable (as TF's)."""
        from .tensor import Tensor, Variable
        var_list = list(var_list or [])
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"ExponentialMovingAverage.apply: expected Variables, got "
                                f"{type(v).__name__}")
            if v._value.dtype.kind != "f":
                raise TypeError(f"ExponentialMovingAverage.apply: {v.name} has dtype "
                                f"{v.dtype.name}; only floating variables have averages")
        fresh = [v for v in var_list if v._id not in self._averages]
        for v in fresh:
            shadow = Variable(Tensor(v._device.copy(v._value), v._device), trainable=False,
                              name=f"{v.name.split(':')[0]}/{self._name}")
            self._averages[v._id] = (v, shadow)
        keep = 1.0 - self._decay_value()
        for v in var_list:
            if any(v is f for f in fresh):
                continue
            _, shadow = self._averages[v._id]
            with v._device.activate():
                shadow._set(shadow._value - keep * (shadow._value - v._value))
        return None

    def average(self, var):
        """The shadow Variable of ``var`` (None if ``apply`` has not seen it)."""
        entry = self._averages.get(var._id)
        return None if entry is None else entry[1]

    def average_name(self, var) -> str:
        return f"{var.name.split(':')[0]}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None):
        """``{name: variable}`` mapping each average's name to its variable."""
        return {self.average_name(v): v for v, _ in self._averages.values()}
