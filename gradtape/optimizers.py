"""Optimizers with Keras semantics and defaults (``tf.keras.optimizers``).

    opt = gt.optimizers.Adam(1e-3)
    with gt.GradientTape() as tape:
        loss = loss_fn(model(x, training=True), y)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))

An update runs on the raw device arrays of each variable through its device's array
namespace (NumPy or CuPy): nothing is recorded on a tape, nothing is copied to the host, and
no device value is read back inside a step. Optimizer state (slots such as Adam's ``m`` and
``v``) is created lazily on each variable's device, keyed per variable, so one optimizer can
serve several sets of variables over its life. A variable's new value is installed as a new
buffer (:meth:`Variable._assign_array`), so values a tape saved earlier are never changed;
slot buffers, which only the optimizer reads, are updated in place.

The learning rate may be a Python float, a schedule from :mod:`gt.optimizers.schedules`
(called with the step count), a schedule written for Keras (a ``LearningRateSchedule``
subclass defining ``__call__(self, step)``, called with ``iterations``) or a scalar
:class:`~gradtape.Variable`. For a float, ``optimizer.learning_rate`` reads as a float32
Variable, as in Keras 3 (``opt.learning_rate.assign(0.5)`` sets the next steps' rate).
"""
from __future__ import annotations

import collections.abc
import contextlib
import math
import operator
import re
import sys
import types
import warnings
import weakref

import numpy as np

from . import _config
from . import capture as _capture
from .backend import kernels as _kernels
from .backend import DeviceError
from .dtypes import as_dtype
from .tensor import Tensor, Variable, _speedups, convert_to_tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "Nadam",
           "Adadelta", "Ftrl", "Lion", "Adafactor", "Lamb", "Muon", "ScheduleFreeAdamW",
           "schedules", "get", "serialize", "deserialize",
           "LearningRateSchedule", "ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "PolynomialDecay", "CosineDecayRestarts"]


# --- learning-rate schedules ------------------------------------------------------------------

class LearningRateSchedule(_config.Configurable):
    """A learning rate that depends on the optimizer's step count (``iterations``).

    ``schedule(step)`` returns a float32 scalar tensor as Keras does. A subclass written for
    Keras defines ``__call__(self, step)`` (and ``get_config``): optimizers call it with their
    ``iterations`` Variable (an int64 scalar, the count before the step) and use the tensor it
    returns, on the device it computed it on. The built-in schedules instead implement
    :meth:`value_at` (a Python int step, computed on the host) and :meth:`value_on` (the step
    as a device array, computed on the device: what a captured step uses).
    """

    _keras_module = "keras.optimizers.schedules"

    def value_at(self, step: int) -> float:
        """The learning rate at ``step`` (a Python int; a float for a fractional step) as a
        Python float."""
        if _own_call(self):
            from .tensor import constant
            return float(self(constant(step, dtype="int64")))
        raise NotImplementedError(f"Learning rate schedule {type(self).__name__!r} must "
                                  "override `__call__(self, step)`")

    def value_on(self, xp, step):
        """The learning rate at ``step``, a 0-d integer device array, as a 0-d float64 device
        array computed on the device (no host round trip; what a captured step must use).
        ``None`` when the schedule only has :meth:`value_at`."""
        return None

    def __call__(self, step):
        """The rate at ``step`` (a number or a scalar tensor; a fractional step is computed
        as such, as Keras casts the step to float) as a float32 scalar tensor."""
        if isinstance(step, Tensor):
            step = step.numpy()
        step = np.asarray(step).item()
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        from .tensor import constant
        return constant(self.value_at(step), dtype="float32")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule {type(self).__name__!r} must "
                                  "override `get_config()` in order to be serializable")

    def __repr__(self):
        try:
            return super().__repr__()
        except NotImplementedError:     # (a user schedule without get_config)
            return f"<{type(self).__name__}>"


def _own_call(schedule) -> bool:
    """Whether ``schedule``'s class defines its own ``__call__`` (a schedule written for
    Keras): that call, not :meth:`~LearningRateSchedule.value_at`, gives its values."""
    return type(schedule).__call__ is not LearningRateSchedule.__call__


class _StepRatioDecay(LearningRateSchedule):
    """A schedule of ``p = step / decay_steps`` (floored if ``staircase``): ``_rate(p)``."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        cls = type(self).__name__
        if decay_steps <= 0:
            raise ValueError(f"{cls}: decay_steps must be > 0, got {decay_steps}")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self.name = cls if name is None else name

    def value_at(self, step: int) -> float:
        p = step / self.decay_steps
        return self._rate(math.floor(p) if self.staircase else p)

    def value_on(self, xp, step):
        p = step.astype(xp.float64) / self.decay_steps
        return self._rate(xp.floor(p) if self.staircase else p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_StepRatioDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (floored if ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def _rate(self, p):
        return self.initial_learning_rate * self.decay_rate ** p


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` to ``alpha * initial`` over ``decay_steps``,
    after an optional linear warm-up to ``warmup_target`` over ``warmup_steps`` (Keras)."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        if decay_steps <= 0:
            raise ValueError(f"CosineDecay: decay_steps must be > 0, got {decay_steps}")
        if warmup_steps < 0:
            raise ValueError(f"CosineDecay: warmup_steps must be >= 0, got {warmup_steps}")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.alpha = float(alpha)
        self.name = name
        self.warmup_target = None if warmup_target is None else float(warmup_target)
        self.warmup_steps = warmup_steps

    def _decay(self, step, decay_from, cos=math.cos):
        fraction = step / self.decay_steps
        cosine = 0.5 * (1.0 + cos(math.pi * fraction))
        return ((1.0 - self.alpha) * cosine + self.alpha) * decay_from

    def value_on(self, xp, step):
        s = step.astype(xp.float64)
        if self.warmup_target is None:
            return self._decay(xp.minimum(s, self.decay_steps), self.initial_learning_rate,
                               xp.cos)
        s = xp.minimum(s, self.decay_steps + self.warmup_steps)
        delta = self.warmup_target - self.initial_learning_rate
        warm = delta * (s / max(self.warmup_steps, 1)) + self.initial_learning_rate
        decayed = self._decay(s - self.warmup_steps, self.warmup_target, xp.cos)
        return xp.where(s < self.warmup_steps, warm, decayed)

    def value_at(self, step: int) -> float:
        if self.warmup_target is None:
            return self._decay(min(step, self.decay_steps), self.initial_learning_rate)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            delta = self.warmup_target - self.initial_learning_rate
            return delta * (step / self.warmup_steps) + self.initial_learning_rate
        return self._decay(step - self.warmup_steps, self.warmup_target)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` for ``step <= boundaries[0]``, ``values[i]`` for
    ``boundaries[i-1] < step <= boundaries[i]``, ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        boundaries = list(boundaries)
        values = [float(v) for v in values]
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: values must have one more element than "
                             f"boundaries, got {len(values)} values for {len(boundaries)} "
                             f"boundaries")
        if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase strictly, got "
                             f"{boundaries}")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def value_at(self, step: int) -> float:
        for b, v in zip(self.boundaries, self.values):
            if step <= b:
                return v
        return self.values[-1]

    def value_on(self, xp, step):
        out = xp.full((), self.values[-1], dtype=xp.float64)
        for b, v in zip(reversed(self.boundaries), reversed(self.values[:-1])):
            out = xp.where(step <= b, v, out)
        return out

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class InverseTimeDecay(_StepRatioDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the ratio floored
    if ``staircase``), as ``keras.optimizers.schedules.InverseTimeDecay``."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def _rate(self, p):
        return self.initial_learning_rate / (1.0 + self.decay_rate * p)


class PolynomialDecay(LearningRateSchedule):
    """``(initial - end) * (1 - step / decay_steps) ** power + end``, as
    ``keras.optimizers.schedules.PolynomialDecay``: ``end_learning_rate`` after
    ``decay_steps``, or with ``cycle`` the decay restarts over ``decay_steps`` times
    ``ceil(step / decay_steps)`` steps."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name="PolynomialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"PolynomialDecay: decay_steps must be > 0, got {decay_steps}")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.cycle = bool(cycle)
        self.name = name

    def value_at(self, step: int) -> float:
        steps = float(self.decay_steps)
        if self.cycle:
            steps *= 1.0 if step == 0 else math.ceil(step / self.decay_steps)
        else:
            step = min(step, steps)
        frac = 1.0 - step / steps
        return ((self.initial_learning_rate - self.end_learning_rate) * frac ** self.power
                + self.end_learning_rate)

    def value_on(self, xp, step):
        s = step.astype(xp.float64)
        steps = float(self.decay_steps)
        if self.cycle:
            steps = steps * xp.where(s == 0, 1.0, xp.ceil(s / steps))
        else:
            s = xp.minimum(s, steps)
        frac = 1.0 - s / steps
        return ((self.initial_learning_rate - self.end_learning_rate) * frac ** self.power
                + self.end_learning_rate)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR), as
    ``keras.optimizers.schedules.CosineDecayRestarts``: the first period lasts
    ``first_decay_steps``, each next one ``t_mul`` times longer and starting from ``m_mul``
    times the previous peak; within a period the rate decays as in :class:`CosineDecay` to
    ``alpha`` times the period's peak.

    The period a step falls in is exact at the restarts (Keras' ``floor(log(.) / log(t_mul))``
    can land just below an integer there; it is corrected by one comparison each way).
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name="SGDRDecay"):
        if first_decay_steps <= 0:
            raise ValueError(f"CosineDecayRestarts: first_decay_steps must be > 0, got "
                             f"{first_decay_steps}")
        if t_mul <= 0:
            raise ValueError(f"CosineDecayRestarts: t_mul must be > 0, got {t_mul}")
        self.initial_learning_rate = float(initial_learning_rate)
        self.first_decay_steps = first_decay_steps
        self.t_mul = float(t_mul)
        self.m_mul = float(m_mul)
        self.alpha = float(alpha)
        self.name = name

    def _restart_start(self, i):
        """The fraction of ``first_decay_steps`` at which period ``i`` starts."""
        t = self.t_mul
        return (1.0 - t ** i) / (1.0 - t)

    def value_at(self, step: int) -> float:
        frac = step / self.first_decay_steps
        t = self.t_mul
        if t == 1.0:
            i = math.floor(frac)
            frac -= i
        else:
            arg = 1.0 - frac * (1.0 - t)
            if arg <= 0.0:      # (t_mul < 1: the periods sum to less than this step)
                return math.nan
            i = math.floor(math.log(arg) / math.log(t))
            if self._restart_start(i + 1) <= frac:
                i += 1
            elif i > 0 and self._restart_start(i) > frac:
                i -= 1
            frac = (frac - self._restart_start(i)) / t ** i
        cosine = 0.5 * self.m_mul ** i * (1.0 + math.cos(math.pi * frac))
        return self.initial_learning_rate * ((1.0 - self.alpha) * cosine + self.alpha)

    def value_on(self, xp, step):
        frac = step.astype(xp.float64) / self.first_decay_steps
        t = self.t_mul
        if t == 1.0:
            i = xp.floor(frac)
            frac = frac - i
        else:
            i = xp.floor(xp.log(1.0 - frac * (1.0 - t)) / math.log(t))
            i = xp.where(self._restart_start(i + 1.0) <= frac, i + 1.0, i)
            i = xp.where((i > 0) & (self._restart_start(i) > frac), i - 1.0, i)
            frac = (frac - self._restart_start(i)) / t ** i
        cosine = 0.5 * self.m_mul ** i * (1.0 + xp.cos(math.pi * frac))
        return self.initial_learning_rate * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self.t_mul,
                "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


def _serialize_schedule(schedule) -> dict:
    """``{"class_name": ..., "config": schedule.get_config()}``."""
    if not isinstance(schedule, LearningRateSchedule):
        raise ValueError(f"serialize: expected a LearningRateSchedule, got {schedule!r}")
    return _config.serialize(schedule)


def _deserialize_schedule(config, custom_objects=None, where="deserialize"):
    """The schedule a ``{"class_name", "config"}`` dict describes (a Keras 3 dict with
    ``module`` and ``registered_name`` too): a built-in one, or a class of
    ``custom_objects``."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"{where}: expected a dict with 'class_name' and 'config', got "
                         f"{config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _SCHEDULES.get(name)
    if cls is None:
        raise ValueError(f"{where}: unknown learning-rate schedule {name!r}; known: "
                         f"{sorted(_SCHEDULES)} (pass a class of your own in custom_objects)")
    return cls.from_config(dict(config.get("config", {})))


def _schedules_module():
    mod = types.ModuleType(__name__ + ".schedules",
                           "Learning-rate schedules (``tf.keras.optimizers.schedules``).")
    classes = (LearningRateSchedule, ExponentialDecay, CosineDecay, PiecewiseConstantDecay,
               InverseTimeDecay, PolynomialDecay, CosineDecayRestarts)
    for cls in classes:
        setattr(mod, cls.__name__, cls)
        if cls is not LearningRateSchedule:
            _SCHEDULES[cls.__name__] = cls

    def serialize(learning_rate_schedule):
        """``{"class_name": ..., "config": ...}`` of a learning-rate schedule."""
        return _serialize_schedule(learning_rate_schedule)

    def deserialize(config, custom_objects=None):
        """The schedule a :func:`serialize` dict describes; ``custom_objects`` maps the names
        of schedules of your own to their classes."""
        return _deserialize_schedule(config, custom_objects)

    for fn in (serialize, deserialize):
        fn.__module__, fn.__qualname__ = mod.__name__, fn.__name__
    mod.serialize, mod.deserialize = serialize, deserialize
    mod.__all__ = [cls.__name__ for cls in classes] + ["serialize", "deserialize"]
    sys.modules[mod.__name__] = mod
    return mod


_SCHEDULES = {}    # class name -> built-in schedule class
schedules = _schedules_module()


# --- the optimizer base ---------------------------------------------------------------------

def _var_label(var) -> str:
    return getattr(var, "path", None) or getattr(var, "name", None) or repr(var)


def _zip_lengths(grads_and_vars):
    """The lengths of a ``zip``'s two inputs when they are known before consuming it."""
    if type(grads_and_vars) is not zip:
        return None
    try:
        parts = grads_and_vars.__reduce__()[1]
    except Exception:  # noqa: BLE001 - a zip that cannot tell is consumed normally
        return None
    if len(parts) != 2:
        return None
    lengths = [operator.length_hint(p, -1) for p in parts]
    return None if min(lengths) < 0 else lengths


def _grad_var_pairs(grads_and_vars, who):
    """``grads_and_vars`` as a list of ``(gradient, variable)`` pairs; an item that is not
    a pair is a ``TypeError`` naming ``who``'s ``apply_gradients``."""
    pairs = []
    for k, item in enumerate(grads_and_vars):
        try:
            g, v = item
        except (TypeError, ValueError):
            raise TypeError(f"{who}.apply_gradients: expected (gradient, variable) pairs such "
                            f"as zip(grads, variables), item {k} is "
                            f"{type(item).__name__}") from None
        pairs.append((g, v))
    return pairs


class Optimizer:
    """Base class: gradient clipping, weight decay, slots, the step counter and the API.

    Keras 3's options work as there: ``loss_scale_factor`` (gradients are divided by it;
    :meth:`scale_loss` multiplies a loss by it), ``gradient_accumulation_steps`` (the
    variables are updated every that many calls, with the mean of the gradients since the
    last update; ``iterations`` counts updates, schedules read the calls), ``use_ema``
    (a moving average of each variable, ``ema_momentum``, copied into the variables every
    ``ema_overwrite_frequency`` updates or by :meth:`finalize_variable_values`).

    Subclasses name their slots in :meth:`_slot_specs` and implement :meth:`_update` on raw
    device arrays.
    """

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, **kwargs):
        cls = type(self).__name__
        if "lr" in kwargs:
            learning_rate = kwargs.pop("lr")
        kwargs.pop("jit_compile", None)
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored.",
                          stacklevel=3)
        for key in kwargs:
            raise TypeError(f"{cls}: unexpected keyword argument {key!r}")
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(f"{cls}: only one of clipnorm, clipvalue and "
                             f"global_clipnorm can be set, got clipnorm={clipnorm}, "
                             f"clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        for label, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                             ("global_clipnorm", global_clipnorm),
                             ("weight_decay", weight_decay)):
            if value is not None and not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"{cls}: {label} must be a number >= 0, got {value!r}")
        if gradient_accumulation_steps and not (
                isinstance(gradient_accumulation_steps, (int, np.integer))
                and not isinstance(gradient_accumulation_steps, bool)
                and gradient_accumulation_steps >= 2):
            raise ValueError(f"{cls}: gradient_accumulation_steps must be an integer >= 2, got "
                             f"{gradient_accumulation_steps!r}")
        if use_ema:
            if not (isinstance(ema_momentum, (int, float)) and 0 <= ema_momentum <= 1):
                raise ValueError(f"{cls}: ema_momentum must be in the range [0, 1], got "
                                 f"{ema_momentum!r}")
            if ema_overwrite_frequency and (
                    not isinstance(ema_overwrite_frequency, (int, np.integer))
                    or isinstance(ema_overwrite_frequency, bool) or ema_overwrite_frequency < 1):
                raise ValueError(f"{cls}: ema_overwrite_frequency must be an integer >= 1 or "
                                 f"None, got {ema_overwrite_frequency!r}")
        if loss_scale_factor is not None and not (
                isinstance(loss_scale_factor, (int, float)) and loss_scale_factor != 0):
            raise ValueError(f"{cls}: loss_scale_factor must be a nonzero number or None, got "
                             f"{loss_scale_factor!r}")
        self.name = name or cls
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self.clipnorm = None if clipnorm is None else float(clipnorm)
        self.clipvalue = None if clipvalue is None else float(clipvalue)
        self.global_clipnorm = None if global_clipnorm is None else float(global_clipnorm)
        self.use_ema = bool(use_ema)
        self.ema_momentum = float(ema_momentum)
        self.ema_overwrite_frequency = (int(ema_overwrite_frequency) if ema_overwrite_frequency
                                        else None)
        self.loss_scale_factor = (None if loss_scale_factor is None
                                  else float(loss_scale_factor))
        self.gradient_accumulation_steps = (int(gradient_accumulation_steps)
                                            if gradient_accumulation_steps else None)
        self._lr_var = None     # the Variable ``learning_rate`` shows for a float rate
        self._lr_f32 = None     # the float32 value it was last known to hold
        self._learning_rate = None
        self.learning_rate = learning_rate
        self._wd_exclude_ids = None      # exclude_from_weight_decay(var_list=...)
        self._wd_exclude_pattern = None  # exclude_from_weight_decay(var_names=...)
        self._wd_cache = {}              # variable id -> whether it is decayed
        self._iterations = Variable(np.int64(0), trainable=False, name=f"{self.name}/iteration")
        self._step_host = 0
        self._step_array = self._iterations._value
        self._slots = {}        # variable id -> {slot name: Variable}
        self._slot_owners = {}  # variable id -> weakref to the variable
        self._slot_order = {}   # variable id -> None, in the order slots were first made
        self._built_vars = None  # the variables of the last build(), for apply(grads)
        self.built = False

    # --- hyper-parameters -------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The learning rate, as Keras 3 shows it for a float: a float32 scalar Variable
        (``opt.learning_rate.numpy()``, ``float(opt.learning_rate)``,
        ``opt.learning_rate.assign(0.5)``; the next step uses the assigned value). A Variable
        given as the learning rate is returned as it is; with a schedule the rate of the
        current step, as a float32 scalar tensor (Keras 3: ``float(opt.learning_rate)`` works,
        the schedule itself is ``opt._learning_rate``); with a callable what it returns.

        The Variable is made on first access, on the device of ``iterations``. Until then, and
        on the host while its value stays the one set, steps use the Python float (exact for
        float64 variables); off the host, once it exists, steps read it on the device (no
        host round trip; a captured step reads its buffer at every replay)."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return lr
        if isinstance(lr, LearningRateSchedule):
            value = self._lr_for(self._current_step())
            if isinstance(value, Tensor):
                return value
            dev = self._iterations._device
            with dev.activate():
                return Tensor(dev.asarray(np.asarray(value, dtype=np.float32)), dev)
        if type(lr) is not float:
            return lr()
        var = self._lr_var
        if var is None:
            dev = self._iterations._device
            with dev.activate():
                var = Variable(Tensor(dev.asarray(np.asarray(lr, dtype=np.float32)), dev),
                               trainable=False, name="learning_rate")
            self._lr_var = var
            self._lr_f32 = float(np.float32(lr))
        return var

    @learning_rate.setter
    def learning_rate(self, value):
        """A float (or a scalar tensor: its value) sets the rate of the next steps (and the
        Variable ``learning_rate`` shows); a schedule, a callable or a Variable replaces it.
        As Keras, a float cannot replace a schedule (``TypeError``)."""
        cls = type(self).__name__
        if isinstance(value, Variable):
            if value._value.ndim != 0 or value._value.dtype.kind != "f":
                raise ValueError(f"{cls}: a learning-rate Variable must be a float scalar, got "
                                 f"shape {tuple(value.shape)} dtype {value.dtype.name}")
        elif isinstance(value, LearningRateSchedule):
            pass
        elif callable(value) and not isinstance(value, Tensor):
            pass
        else:
            if self._learning_rate is None and isinstance(value, Tensor):
                raise ValueError(f"{cls}: learning_rate must be a float, a schedule, a callable "
                                 "or a Variable, got a Tensor; use float(t) or gt.Variable(t)")
            if isinstance(self._learning_rate, LearningRateSchedule):
                raise TypeError(f"{cls}: this optimizer was created with a "
                                f"LearningRateSchedule ({type(self._learning_rate).__name__}) "
                                "as its learning rate, hence its learning rate is not settable "
                                "to a number; give it a new schedule, or create the optimizer "
                                "with a float learning rate")
            try:
                if isinstance(value, Tensor) and value._value.ndim != 0:
                    raise ValueError
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{cls}: learning_rate must be a float, a schedule, a "
                                 f"callable or a Variable, got {value!r}") from None
            if value < 0:
                raise ValueError(f"{cls}: learning_rate must be >= 0, got {value}")
            var = self._lr_var
            if var is not None:         # (what `learning_rate` has shown follows)
                with var._device.activate():
                    var.assign(value)
                self._lr_f32 = float(np.float32(value))
        self._learning_rate = value

    lr = learning_rate

    @property
    def iterations(self):
        """The number of steps taken (an int64 Variable, saved in checkpoints). With
        ``gradient_accumulation_steps`` the number of updates made, as Keras 3: the count of
        calls floor-divided by it (a tensor; learning-rate schedules read the calls)."""
        gas = self.gradient_accumulation_steps
        if gas:
            it = self._iterations
            with it._device.activate():
                return Tensor(it._value // gas, it._device)
        return self._iterations

    def _current_step(self) -> int:
        it = self._iterations
        if it._value is not self._step_array:
            if _capture.capturing() and not it._device.host_visible:
                # Inside a captured step the count is read on the device (a host read would
                # break the capture: another captured step's replay, an assign or a restore
                # moved it); the host copy is re-read at the next eager step.
                return self._step_host
            # Changed from outside (assign or a checkpoint restore): read it once.
            self._step_host = int(it.numpy())
            self._step_array = it._value
        return self._step_host

    def _float_lr(self) -> float:
        """The float learning rate, read back from the Variable ``learning_rate`` showed if
        that was assigned since (a host read: off the host, a sync)."""
        var = self._lr_var
        if var is not None:
            value = float(var.numpy())
            if value != self._lr_f32:
                self._learning_rate = self._lr_f32 = value
        return self._learning_rate

    def _lr_for(self, step: int):
        """The learning rate for this step: a Python float, or a Tensor (0-d, read on its
        device)."""
        lr = self._learning_rate
        if type(lr) is float:
            var = self._lr_var
            if var is None:
                return lr
            if not var._device.host_visible:
                return var      # (read on the device: no host round trip)
            return self._float_lr()
        if isinstance(lr, LearningRateSchedule):
            if _own_call(lr):
                return self._scheduled(lr)
            return float(lr.value_at(step))
        if isinstance(lr, Variable):
            return lr
        if callable(lr):
            value = lr()
            return value if isinstance(value, Tensor) else float(value)
        return lr

    def _scheduled(self, schedule):
        """``schedule(iterations)`` for a schedule written for Keras (its own ``__call__``),
        as a float (on the host) or a 0-d Tensor on its device."""
        value = schedule(self._iterations)
        if isinstance(value, Tensor):
            if value._value.ndim != 0 or value._value.dtype.kind not in "fiu":
                raise ValueError(f"{type(self).__name__}: the learning-rate schedule "
                                 f"{type(schedule).__name__} returned a tensor of shape "
                                 f"{tuple(value.shape)} and dtype {value.dtype.name}; it must "
                                 "return a numeric scalar")
            if value._device.host_visible:
                return float(value._value)
            if value._value.dtype.kind != "f":
                value = Tensor(value._value.astype(np.float32), value._device)
            return value
        try:
            return float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{type(self).__name__}: the learning-rate schedule "
                            f"{type(schedule).__name__} returned {value!r}; it must return a "
                            "scalar tensor or a number") from None

    @staticmethod
    def _lr_on(lr, var):
        """``lr`` ready to combine with ``var``'s raw array."""
        if isinstance(lr, float):
            return lr
        arr = lr._value
        if lr._device is not var._device:
            arr = var._device.from_other(arr, lr._device)
        if arr.dtype != var._value.dtype:
            arr = arr.astype(var._value.dtype)
        return arr

    @property
    def variables(self) -> list:
        """The optimizer's own Variables: ``iterations``, then the slots of live variables in
        Keras' order: slot by slot within each of :meth:`_slot_groups` (the moving averages
        of ``use_ema`` first, then the gradient accumulators), variables in the order they
        were built."""
        out = [self._iterations]
        order = [vid for vid in self._slot_order
                 if vid in self._slots and self._slot_owners[vid]() is not None]
        for group in self._all_slot_groups():
            for vid in order:
                slots = self._slots[vid]
                out.extend(slots[name] for name in group if name in slots)
        return out

    # --- slots --------------------------------------------------------------------------------
    def _slot_specs(self):
        """``(slot name, initial fill value)`` pairs this optimizer keeps per variable."""
        return ()

    def _slot_groups(self):
        """The slot names grouped as Keras creates them: the slots of one group are made
        variable by variable, interleaved (Adam's ``m`` and ``v``), the groups one after the
        other (RMSprop's ``velocity`` of every variable, then its ``momentum``);
        :attr:`variables` lists them in that order."""
        return (tuple(n for n, _ in self._slot_specs()),)

    def _base_slot_specs(self):
        """The slots of the base class's options: ``average`` (``use_ema``: the moving
        average of the variable) and ``gradient_accumulator``."""
        specs = ()
        if self.use_ema:
            specs += (("average", 0),)
        if self.gradient_accumulation_steps:
            specs += (("gradient_accumulator", 0),)
        return specs

    def _all_slot_specs(self):
        return self._base_slot_specs() + tuple(self._slot_specs())

    def _all_slot_groups(self):
        return tuple((n,) for n, _ in self._base_slot_specs()) + tuple(self._slot_groups())

    def _slot_specs_for(self, var):
        """The ``(slot name, initial fill value)`` pairs ``var`` gets: every slot of the
        optimizer, unless it keeps some slots only for some variables (Muon's ``velocity``).
        A fill of ``None`` starts the slot as a copy of the variable's value
        (ScheduleFreeAdamW's ``momentum``)."""
        return self._all_slot_specs()

    def _slot_layout(self, var, slot_name):
        """``(shape, dtype)`` of the slot ``slot_name`` of ``var``: the variable's own, unless
        the optimizer keeps a slot of another shape (Adafactor's factored moments)."""
        return tuple(var._value.shape), var._value.dtype

    def _weight_decay_for(self, var):
        """The weight-decay rate of ``var`` (``None`` or 0: no decay), for an optimizer whose
        rate depends on the variable (Muon); only called when a subclass overrides it, so
        the others read ``weight_decay`` once per step."""
        return self.weight_decay

    def slot_names(self) -> list:
        return [n for n, _ in self._all_slot_specs()]

    def _prune_slots(self):
        dead = [vid for vid, ref in self._slot_owners.items() if ref() is None]
        for vid in dead:
            del self._slots[vid]
            del self._slot_owners[vid]
        for vid in [vid for vid in self._slot_order if vid not in self._slots]:
            del self._slot_order[vid]

    def _make_slot_variable(self, var, slot_name, array):
        return Variable(_wrap(array, var), trainable=False,
                        name=f"{self.name}/{slot_name}/{_var_label(var).split(':')[0]}")

    def _slots_for(self, var) -> dict:
        slots = self._slots.get(var._id)
        if slots is None:
            specs = self._slot_specs_for(var)
            slots = {}
            dev = var._device
            xp = dev.xp
            with dev.activate():
                for slot_name, fill in specs:
                    shape, dtype = self._slot_layout(var, slot_name)
                    arr = xp.full(shape, 0 if fill is None else fill, dtype=dtype)
                    if fill is None:
                        arr[...] = var._value
                    slots[slot_name] = self._make_slot_variable(var, slot_name, arr)
            if len(self._slot_owners) > 64:
                self._prune_slots()
            self._slots[var._id] = slots
            self._slot_owners[var._id] = weakref.ref(var)
            self._slot_order.setdefault(var._id, None)
        return slots

    def get_slot(self, var, slot_name) -> Variable:
        """The slot Variable ``slot_name`` of ``var`` (created if needed)."""
        names = self.slot_names()
        if slot_name not in names:
            raise KeyError(f"{type(self).__name__}: no slot named {slot_name!r}; its slots are "
                           f"{names}")
        slots = self._slots_for(var)
        if slot_name not in slots:
            raise KeyError(f"{type(self).__name__}: the variable {_var_label(var)} has no slot "
                           f"{slot_name!r}; its slots are {list(slots)}")
        return slots[slot_name]

    def build(self, var_list):
        """Create the slots of every variable in ``var_list`` now (they are otherwise made on
        the first update); :meth:`apply` may then be given the gradients alone, in the order
        of ``var_list``."""
        var_list = [_check_variable(v, type(self).__name__) for v in var_list]
        for v in var_list:
            self._slots_for(v)
        self._built_vars = var_list
        self.built = True

    def set_weights(self, weights):
        """Set the values of :attr:`variables` (the optimizer must be built), in its order;
        shapes must match."""
        if not self.built:
            raise ValueError(f"{type(self).__name__}.set_weights: the optimizer is not built "
                             "yet; call optimizer.build(trainable_variables) first")
        variables = self.variables
        weights = list(weights)
        if len(weights) != len(variables):
            raise ValueError(f"{type(self).__name__}.set_weights: {len(weights)} values for "
                             f"{len(variables)} optimizer variables")
        for var, w in zip(variables, weights):
            shape = tuple(np.shape(w))
            if shape != tuple(var.shape):
                raise ValueError(f"{type(self).__name__}.set_weights: optimizer variable "
                                 f"{var.name} has shape {tuple(var.shape)}, the value "
                                 f"{shape}")
        for var, w in zip(variables, weights):
            if isinstance(w, Tensor):
                w = w.numpy()
            var.assign(np.asarray(w, dtype=var._value.dtype))

    # --- checkpoint support --------------------------------------------------------------------
    def _slot_state(self, var) -> dict:
        """The slot Variables of ``var`` if it has any (no creation)."""
        return dict(self._slots.get(var._id, {}))

    def _check_slot_restore(self, var, slot_name, shape, dtype):
        """A message saying why a saved slot cannot be restored into ``var``, or None."""
        names = self.slot_names()
        if slot_name not in names:
            return (f"slot {slot_name!r} is not a slot of {type(self).__name__} "
                    f"(its slots are {names})")
        own = [n for n, _ in self._slot_specs_for(var)]
        if slot_name not in own:
            return (f"slot {slot_name!r} is not kept for the variable {_var_label(var)} (its "
                    f"slots are {own})")
        want_shape, want_dtype = self._slot_layout(var, slot_name)
        if tuple(shape) != tuple(want_shape):
            return (f"slot {slot_name!r} has shape {tuple(shape)}, for the variable "
                    f"{_var_label(var)} of shape {tuple(var._value.shape)} it is "
                    f"{tuple(want_shape)}")
        if np.dtype(dtype) != np.dtype(want_dtype):
            return (f"slot {slot_name!r} has dtype {np.dtype(dtype).name}, for the variable "
                    f"{_var_label(var)} it is {np.dtype(want_dtype).name}")
        return None

    def _restore_slot(self, var, slot_name, host_array):
        slot = self._slots_for(var)[slot_name]
        slot._assign_array(slot._device.asarray(host_array).copy()
                           if slot._device.host_visible else slot._device.asarray(host_array))

    # --- the step -----------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False,
                        **kwargs):
        """Apply ``(gradient, variable)`` pairs; returns the ``iterations`` Variable.

        ``None`` gradients are skipped with one warning naming their variables. All checks
        (pair structure, shapes, dtypes, devices, lengths) run before anything is updated.
        """
        lengths = _zip_lengths(grads_and_vars)
        if lengths is not None and lengths[0] != lengths[1]:
            raise ValueError(f"{type(self).__name__}.apply_gradients: {lengths[0]} gradients "
                             f"for {lengths[1]} variables; the lists must have the same length "
                             "(nothing was updated)")
        return self._apply(_grad_var_pairs(grads_and_vars, type(self).__name__))

    def apply(self, grads, trainable_variables=None):
        """Apply ``grads`` to ``trainable_variables`` (two lists of the same length); without
        ``trainable_variables``, to the variables of the last :meth:`build`, as Keras 3. An
        empty ``grads`` does nothing."""
        grads = list(grads)
        cls = type(self).__name__
        if not grads:
            return None
        if trainable_variables is None:
            if self._built_vars is None:
                raise ValueError(f"{cls}.apply: when passing grads without variables, the "
                                 "optimizer must already be built on a list of variables; "
                                 "call optimizer.build(trainable_variables) first")
            variables = self._built_vars
        else:
            variables = list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"{cls}.apply: {len(grads)} gradients for {len(variables)} "
                             "variables; the lists must have the same length (nothing was "
                             "updated)")
        return self._apply(list(zip(grads, variables)))

    def minimize(self, loss, var_list, tape=None):
        """Compute gradients of ``loss`` for ``var_list`` and apply them.

        ``loss`` is a zero-argument callable (run under a new tape) or a tensor recorded on
        ``tape``; ``var_list`` is a list of Variables or a callable returning one.
        """
        from .tape import GradientTape
        if not callable(loss) and tape is None:
            raise ValueError(f"{type(self).__name__}.minimize: a tape is required when loss is "
                             "a tensor; pass tape=, or pass loss as a callable")
        if callable(loss):
            with GradientTape() as tape:
                if callable(var_list):
                    var_list = var_list()
                var_list = list(var_list)
                tape.watch(var_list)
                loss_value = loss()
        else:
            loss_value = loss
            if callable(var_list):
                var_list = var_list()
            var_list = list(var_list)
        grads = tape.gradient(loss_value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def _apply(self, pairs):
        cls = type(self).__name__
        missing = []
        live = []
        seen = set()
        variables = []
        for g, v in pairs:
            v = _check_variable(v, cls)
            if v._id in seen:
                raise ValueError(f"{cls}.apply_gradients: variable {_var_label(v)} appears more "
                                 "than once (nothing was updated)")
            seen.add(v._id)
            variables.append(v)
            if g is None:
                missing.append(v)
                continue
            live.append((_check_gradient(g, v, cls), v))
        if not live:
            if not pairs:
                raise ValueError(f"{cls}.apply_gradients: no (gradient, variable) pairs given")
            raise ValueError(f"{cls}.apply_gradients: no gradients provided for any variable: "
                             f"{[_var_label(v) for v in missing]}")
        if missing:
            warnings.warn(f"Gradients do not exist for variables "
                          f"{[_var_label(v) for v in missing]} when minimizing the loss; they "
                          "were not updated", UserWarning, stacklevel=3)
        if _capture.capturing():
            self._check_capturable(variables)
        # every variable of the step gets its slots, a gradient or not (Keras builds them all)
        for v in variables:
            self._slots_for(v)
        if not self.built:
            self.built = True
        grads = [g for g, _ in live]
        if self.loss_scale_factor is not None:
            grads = _unscale_grads(grads, self.loss_scale_factor)
        step = self._current_step()
        it = self._iterations
        with it._device.activate():
            next_it = it._value + 1     # the count of calls after this one
        gas = self.gradient_accumulation_steps
        if gas and (step + 1) % gas:
            # not an update: the gradients are added to the accumulators
            for (g, dev), (_, v) in zip(grads, live):
                acc = self._slots[v._id]["gradient_accumulator"]._value
                with dev.activate() if dev.needs_switch else _NO_SWITCH:
                    acc += g
        else:
            if gas:
                # the mean of the accumulated gradients and this one; every accumulator of
                # the step restarts from zero (one without a gradient now too, as Keras')
                summed = []
                for (g, dev), (_, v) in zip(grads, live):
                    acc = self._slots[v._id]["gradient_accumulator"]._value
                    with dev.activate() if dev.needs_switch else _NO_SWITCH:
                        total = g + acc
                        total /= gas
                    summed.append((total, dev))
                grads = summed
                for v in variables:
                    acc = self._slots[v._id]["gradient_accumulator"]._value
                    with v._device.activate() if v._device.needs_switch else _NO_SWITCH:
                        acc[...] = 0
            self._update_variables(self._clip(grads), [v for _, v in live], step)
        if self.use_ema:
            self._update_averages(variables, step)
        it._assign_array(next_it)
        self._step_host = step + 1
        self._step_array = it._value
        return it

    def _update_count(self, count):
        """The count of updates made before this one, from the count of calls ``count`` (an
        int, or a device array): floor-divided by ``gradient_accumulation_steps``."""
        gas = self.gradient_accumulation_steps
        return count // gas if gas else count

    def _update_variables(self, grads, variables, step):
        """One update of ``variables`` from their (clipped) ``grads`` ((raw array, device)
        pairs); ``step`` is the host count of calls before this one."""
        lr = self._lr_for(step)
        it = self._iterations
        t_host = self._update_count(step)
        with it._device.activate():
            t_dev = self._update_count(it._value)
            next_t = t_dev + 1      # the update's number from 1 (fused kernels read it)
        schedule = isinstance(self._learning_rate, LearningRateSchedule) and \
            not _own_call(self._learning_rate)
        decay_some = self._wd_exclude_ids is not None or self._wd_exclude_pattern is not None
        uniform_decay = type(self)._weight_decay_for is Optimizer._weight_decay_for
        wd = self.weight_decay
        fusable = self._fusable()
        # NumPy variables: one C pass per variable where the optimizer has one
        host_pass = fusable and _speedups is not None and type(lr) is float
        fused = {}      # (device, dtype char) -> (lr, step from 1, [variable items])
        for g, v in zip(grads, variables):
            dev = v._device
            # On a device, the count comes from the iterations Variable's buffer (no host
            # round trip; what a captured step must read); on the host, the Python int.
            on_device = not dev.host_visible and it._device is dev
            v_step = t_dev if on_device else t_host
            v_lr = lr
            if type(lr) is not float or (on_device and schedule):
                # (with several GPUs, arrays for v's device are made while it is current)
                with dev.activate() if dev.needs_switch else _NO_SWITCH:
                    if on_device and schedule:
                        lr_dev = self._learning_rate.value_on(dev.xp, it._value)
                        if lr_dev is not None:
                            v_lr = Tensor(lr_dev, dev)
                    lr_v = v_lr if type(v_lr) is float else self._lr_on(v_lr, v)
            else:
                lr_v = v_lr
            slots = self._slots_for(v)
            p = v._value
            # a variable excluded from weight decay takes the plain path, without the decay
            if not uniform_decay:
                wd = self._weight_decay_for(v)
            decays = bool(wd) and (not decay_some or self._use_weight_decay(v))
            plain = bool(wd) and not decays
            if host_pass and not plain and dev.xp is np and p.dtype.char in "fd" \
                    and p.flags.c_contiguous and g.flags.c_contiguous:
                new = self._host_update(p, g, {k: s._value for k, s in slots.items()}, lr,
                                        t_host)
                if new is not None:
                    v._assign_array(new)
                    continue
            slot_arrays = {k: s._value for k, s in slots.items()}
            scalar = p.ndim == 0
            if fusable and not plain and dev.fused_updates and not scalar and p.dtype.char in "fd":
                # the kernels: one launch per group of variables of a device and dtype (below)
                group = fused.get((dev, p.dtype.char))
                if group is None:
                    group = fused[(dev, p.dtype.char)] = (lr_v, next_t if on_device
                                                          else t_host + 1, [])
                sole = _sole_buffer(p, dev)     # (before p is on the stack of a tuple)
                group[2].append((v, p, g, slot_arrays, sole))
                continue
            with dev.activate() if dev.needs_switch else _NO_SWITCH:
                if scalar:
                    # NumPy turns 0-d results into scalars; work on 1-element views.
                    p, g = p.reshape(1), g.reshape(1)
                    slot_arrays = {k: a.reshape(1) for k, a in slot_arrays.items()}
                if decays:
                    decay = p * wd
                    decay *= lr_v
                    p = p - decay
                with dev.errstate():    # (1/0 and 0/0 follow IEEE, as TF's, silently)
                    new = self._update(dev.xp, p, g, slot_arrays, lr_v, v_step)
                if scalar:
                    new = new.reshape(())
            v._assign_array(new)
        for (dev, _), (lr_v, t, items) in fused.items():
            self._apply_fused(dev, lr_v, t, items)

    def _update_averages(self, variables, step):
        """``use_ema``: each variable's moving average ``average = m * average + (1 - m) *
        value`` (``m`` is 0 at the first update, so the average starts at the value, then
        ``ema_momentum``); every ``ema_overwrite_frequency`` updates the variables take their
        averages. As Keras, this runs at every call, counted in updates."""
        it = self._iterations
        t_host = self._update_count(step)
        freq = self.ema_overwrite_frequency
        overwrite = bool(freq) and (t_host + 1) % freq == 0
        for v in variables:
            avg = self._slots[v._id]["average"]
            dev = v._device
            a, p = avg._value, v._value
            with dev.activate() if dev.needs_switch else _NO_SWITCH:
                xp = dev.xp
                if not dev.host_visible and it._device is dev:
                    # the first update read on the device (no host round trip)
                    m = xp.where(self._update_count(it._value) != 0, self.ema_momentum,
                                 0.0).astype(a.dtype)
                else:
                    m = self.ema_momentum if t_host != 0 else 0.0
                a *= m
                a += p * (1 - m)
                if overwrite:
                    v._assign_array(xp.copy(a))

    def finalize_variable_values(self, var_list):
        """Set the variables of ``var_list`` to their final values: with ``use_ema``, their
        moving averages (Keras' ``fit`` calls it after the last epoch); otherwise nothing."""
        if not self.use_ema:
            return
        var_list = list(var_list)
        unknown = [_var_label(v) for v in var_list
                   if not isinstance(v, Variable) or v._id not in self._slots]
        if unknown:
            raise ValueError(f"{type(self).__name__}.finalize_variable_values: the optimizer "
                             f"has no moving average of {unknown}; it keeps them for the "
                             "variables it has updated")
        for v in var_list:
            avg = self._slots[v._id]["average"]
            with v._device.activate():
                v._assign_array(v._device.xp.copy(avg._value))

    def scale_loss(self, loss):
        """``loss * loss_scale_factor`` (``loss`` itself without one), to take gradients of
        before :meth:`apply`, which divides them by the factor."""
        if self.loss_scale_factor is not None:
            return loss * self.loss_scale_factor
        return loss

    def _check_capturable(self, variables):
        """Inside a captured step: refuse a learning rate computed on the host, and variables
        on another device than the step count (the count and the learning rate would then
        be host values, frozen at their captured values in the graph)."""
        lr = self._learning_rate
        cls = type(self).__name__
        it_dev = self._iterations._device
        for v in variables:
            if v._device is not it_dev and not v._device.host_visible:
                raise _capture.CaptureError(
                    f"{cls}: variable {_var_label(v)} is on {v._device} but the optimizer's "
                    f"step count is on {it_dev}, so a captured step would keep the captured "
                    f"count; create the optimizer inside `with gt.device('{v._device}')`")
        if isinstance(lr, LearningRateSchedule):
            # (a schedule with its own __call__ computes on the iterations Variable's device,
            # where a captured step records it; a host read there fails the capture)
            if not _own_call(lr) and type(lr).value_on is LearningRateSchedule.value_on:
                raise _capture.CaptureError(
                    f"{cls}: the learning-rate schedule {type(lr).__name__} has only value_at "
                    "(computed on the host), so a captured step would keep its captured value; "
                    "give it value_on(xp, step) (see gt.optimizers.schedules) or use a Variable")
        elif callable(lr) and not isinstance(lr, Tensor):
            raise _capture.CaptureError(
                f"{cls}: the learning rate is a Python callable ({lr!r}), evaluated on the "
                "host, so a captured step would keep its captured value; use a schedule from "
                "gt.optimizers.schedules or a Variable (assign it between steps)")
        for label in ("gradient_accumulation_steps", "ema_overwrite_frequency"):
            if getattr(self, label):
                raise _capture.CaptureError(
                    f"{cls}: with {label} a step decides on the host whether it updates (or "
                    "overwrites) the variables, so a captured step would keep the captured "
                    f"decision; run the step eagerly or set {label}=None")

    def _update(self, xp, p, g, slots, lr, step):
        """The new value of a variable from its array ``p``, gradient ``g`` and slot arrays
        (updated in place); ``lr`` is a float or a 0-d array, ``step`` the count before it."""
        raise NotImplementedError(f"{type(self).__name__} must implement _update")

    def _fusable(self) -> bool:
        """Whether :meth:`_fused_update` does this optimizer's whole update (weight decay
        included) with one fused kernel."""
        return False

    def _apply_fused(self, dev, lr, t, items):
        """Update the variables of ``items`` ((variable, buffer, gradient, slot arrays,
        whether nothing else holds the buffer) of one device and dtype) with the
        multi-tensor kernels: one launch per ``backend.kernels.MULTI`` variables. A buffer
        that nothing else holds (no tape saved it, no tensor or view shares it) and is
        C-contiguous is updated in place, as PyTorch's optimizers do; any other variable gets
        a new (C-ordered) buffer, so the
        values a tape or a tensor holds stay as they were. The slots are updated in place."""
        xp = dev.xp
        params = [p for _, p, _, _, _ in items]
        with dev.activate() if dev.needs_switch else _NO_SWITCH:   # (new buffers there too)
            outs = [p if sole and p.flags.c_contiguous else xp.empty(p.shape, p.dtype)
                    for _, p, _, _, sole in items]
            self._fused_update(xp, params, outs, [g for _, _, g, _, _ in items],
                               [slots for _, _, _, slots, _ in items], lr, t)
        for (v, _, _, _, _), out in zip(items, outs):
            v._assign_array(out)

    def _fused_update(self, xp, params, outs, grads, slots, lr, t):
        """Update variables of one dtype with the multi-tensor kernels of backend.kernels:
        each of ``params`` written to the same entry of ``outs`` (the parameter itself for an
        update in place), ``slots`` (a dict of slot arrays per variable) in place; ``t`` is
        the step number from 1 (an int or a device 0-d array)."""
        raise NotImplementedError(f"{type(self).__name__} has no fused update")

    def _host_update(self, p, g, slots, lr, step):
        """The new value of a NumPy variable (C-contiguous float32 or float64, as its gradient)
        computed in one pass by the C module, weight decay included, bit-identical to
        :meth:`_update`; None where the optimizer has no such pass for these arguments. Called
        only when :meth:`_fusable`; ``lr`` is a float, ``step`` the count before the update."""
        return None

    # --- weight decay -------------------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exclude variables from weight decay (Keras 3): those of ``var_list``, and those
        whose name contains a match of one of the regular expressions ``var_names`` (``re.
        search``, e.g. ``["bias", "LayerNorm"]``). Each call replaces the previous choice."""
        if var_list is not None and isinstance(var_list, Variable):
            var_list = [var_list]
        if var_names is not None and isinstance(var_names, str):
            var_names = [var_names]
        ids = set()
        for v in var_list or ():
            if not isinstance(v, Variable):
                raise TypeError(f"{type(self).__name__}.exclude_from_weight_decay: var_list "
                                f"must hold gt.Variables, got {type(v).__name__}")
            ids.add(v._id)
        self._wd_exclude_ids = ids if ids else None
        self._wd_exclude_pattern = (re.compile("|".join(sorted(set(var_names))))
                                    if var_names else None)
        self._wd_cache = {}

    def _use_weight_decay(self, var) -> bool:
        """Whether ``var`` is decayed (not excluded by :meth:`exclude_from_weight_decay`)."""
        found = self._wd_cache.get(var._id)
        if found is None:
            ids, pattern = self._wd_exclude_ids, self._wd_exclude_pattern
            found = not ((ids is not None and var._id in ids) or
                         (pattern is not None and pattern.search(var.name) is not None))
            if len(self._wd_cache) > 4096:
                self._wd_cache.clear()
            self._wd_cache[var._id] = found
        return found

    # --- clipping -----------------------------------------------------------------------------
    def _clip(self, grads):
        if self.clipnorm:
            return [_clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return _clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue:
            c = self.clipvalue
            out = []
            for g, dev in grads:
                with dev.activate():
                    out.append(dev.xp.clip(g, -c, c))
            return out
        return [g for g, _ in grads]

    # --- config -------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """Keras 3's keys: the learning rate (a float, or a schedule's ``{"class_name",
        "config"}``), weight decay, clipping, EMA, loss scale and gradient accumulation,
        then the optimizer's own hyper-parameters."""
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            lr = _serialize_schedule(lr)
        elif isinstance(lr, Variable):
            lr = float(lr.numpy())
        elif type(lr) is float:
            lr = self._float_lr()
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
                "clipvalue": self.clipvalue, "use_ema": self.use_ema,
                "ema_momentum": self.ema_momentum,
                "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "loss_scale_factor": self.loss_scale_factor,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            config["learning_rate"] = _deserialize_schedule(
                lr, custom_objects, f"{cls.__name__}.from_config")
        return cls(**config)

    def __repr__(self):
        return f"<gt.optimizers.{type(self).__name__} step={self._step_host}>"


def _wrap(array, like):
    return Tensor(array, like._device)


_NO_SWITCH = contextlib.nullcontext()   # (reusable: it keeps no state)


def _buffer_refs(p) -> int:
    return sys.getrefcount(p)


def _sole_buffer(p, dev) -> bool:
    """Whether ``p``, a Variable's buffer bound to one local of the caller, is referenced by
    nothing else: no tape saved it, no tensor, view (a view references its base) or exported
    capsule shares it, so writing it in place changes no value anyone else can see. A buffer
    that is itself a view is never written in place (its base may have other views)."""
    return _buffer_refs(p) <= _SOLE_REFS and dev.owns_memory(p)


def _probe(p) -> int:           # the calls of _sole_buffer
    return _buffer_refs(p)


def _calibrate(holder) -> int:  # a buffer bound as Optimizer._apply binds it
    p = holder.value
    return _probe(p)


# what _sole_buffer counts for a buffer held by its Variable and the caller's local only
_SOLE_REFS = _calibrate(types.SimpleNamespace(value=object()))


def _check_variable(v, cls):
    if not isinstance(v, Variable):
        raise TypeError(f"{cls}.apply_gradients: expected a gt.Variable to update, got "
                        f"{type(v).__name__}")
    if v._value.dtype.kind != "f":
        raise TypeError(f"{cls}.apply_gradients: variable {_var_label(v)} has dtype "
                        f"{v.dtype.name}; only floating variables can be optimized")
    return v


def _check_gradient(g, v, cls):
    """``(raw gradient array, device)`` for variable ``v``, or a clear error."""
    if not isinstance(g, Tensor):
        try:
            g = convert_to_tensor(g, dtype=v.dtype)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{cls}.apply_gradients: the gradient for {_var_label(v)} is a "
                            f"{type(g).__name__} that cannot be converted ({exc})") from None
        if g._device is not v._device:
            g = g.to(v._device)
    if g._device is not v._device:
        raise DeviceError(f"{cls}.apply_gradients: the gradient for {_var_label(v)} is on "
                          f"{g._device}, the variable on {v._device}")
    if g._value.dtype != v._value.dtype:
        raise TypeError(f"{cls}.apply_gradients: the gradient for {_var_label(v)} has dtype "
                        f"{as_dtype(g._value.dtype).name}, the variable {v.dtype.name}")
    if tuple(g._value.shape) != tuple(v._value.shape):
        raise ValueError(f"{cls}.apply_gradients: the gradient for {_var_label(v)} has shape "
                         f"{tuple(g._value.shape)}, the variable {tuple(v._value.shape)}")
    return g._value, v._device


def _unscale_grads(grads, factor):
    """``(g / factor, device)`` for each ``(g, device)``."""
    out = []
    for g, dev in grads:
        with dev.activate() if dev.needs_switch else _NO_SWITCH:
            out.append((g / factor, dev))
    return out


def _sum_squares(g, xp):
    flat = g.reshape(-1)
    return xp.dot(flat, flat) if flat.size else xp.zeros((), dtype=g.dtype)


def _clip_by_norm(item, clip):
    g, dev = item
    xp = dev.xp
    with dev.activate():
        norm = xp.sqrt(_sum_squares(g, xp))
        return g * (clip / xp.maximum(norm, clip))


def _clip_by_global_norm(grads, clip):
    first_dev = grads[0][1]
    total = None
    for g, dev in grads:
        with dev.activate():
            part = _sum_squares(g, dev.xp).astype(np.float64)
        if dev is not first_dev:
            part = first_dev.from_other(part, dev)
        total = part if total is None else total + part
    with first_dev.activate(), first_dev.errstate():
        norm = first_dev.xp.sqrt(total)
        # (norm - norm) is 0 for a finite norm: an inf or NaN one makes every gradient NaN
        scale = clip / first_dev.xp.maximum(norm, clip) + (norm - norm)
    out = []
    for g, dev in grads:
        s = scale if dev is first_dev else dev.from_other(scale, first_dev)
        with dev.activate():
            out.append(g * s.astype(g.dtype))
    return out


# --- the optimizers ---------------------------------------------------------------------------

class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum, as ``keras.optimizers.SGD``.

    ``m = momentum * m - lr * g``; ``p += m`` (Nesterov: ``p += momentum * m - lr * g``);
    without momentum ``p -= lr * g``.
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="SGD", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"SGD: momentum must be a float in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _slot_specs(self):
        return (("momentum", 0),) if self.momentum else ()

    def _fusable(self):
        return not self.weight_decay and type(self)._update is SGD._update

    def _fused_update(self, xp, params, outs, grads, slots, lr, t):
        _kernels.sgd_momentum_update_multi(
            xp, params, grads, [s["momentum"] for s in slots] if self.momentum else None, lr,
            self.momentum, self.nesterov, outs=outs)

    def _host_update(self, p, g, slots, lr, step):
        mom = slots.get("momentum")
        if mom is None or not mom.flags.c_contiguous:
            return None   # (without momentum: two NumPy passes already)
        out = np.empty_like(p)
        try:
            _speedups.sgd(p, g, mom, out, lr, self.momentum, self.nesterov)
        except (TypeError, ValueError):
            return None   # (refused before writing: a byte-swapped array, say)
        return out

    def _update(self, xp, p, g, slots, lr, step):
        step_size = g * lr
        if not self.momentum:
            return xp.subtract(p, step_size, out=step_size)
        m = slots["momentum"]
        m *= self.momentum
        m -= step_size
        if self.nesterov:
            step_size *= -1
            step_size += m * self.momentum
            return xp.add(p, step_size, out=step_size)
        return xp.add(p, m, out=step_size)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam (Kingma & Ba), as ``keras.optimizers.Adam``.

    ``m += (g - m)(1 - b1)``, ``v += (g^2 - v)(1 - b2)``,
    ``p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)`` with ``t`` the step
    number from 1; with ``amsgrad`` the running maximum of ``v`` replaces ``v``.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="Adam", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        for label, b in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not isinstance(b, (int, float)) or not 0 <= b < 1:
                raise ValueError(f"{type(self).__name__}: {label} must be in [0, 1), got {b!r}")
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _slot_specs(self):
        specs = (("m", 0), ("v", 0))
        return specs + (("vhat", 0),) if self.amsgrad else specs

    def _slot_groups(self):
        return (("m", "v"), ("vhat",)) if self.amsgrad else (("m", "v"),)

    def _fusable(self):
        # the kernel decays the weights as the base class does (p -= p * weight_decay * lr)
        # (a subclass with its own _update is not what the kernel computes)
        return not self.amsgrad and type(self)._update is Adam._update

    def _fused_update(self, xp, params, outs, grads, slots, lr, t):
        _kernels.adam_update_multi(xp, params, grads, [s["m"] for s in slots],
                                   [s["v"] for s in slots], lr, t, self.beta_1, self.beta_2,
                                   self.epsilon, float(self.weight_decay or 0.0), outs=outs)

    def _host_update(self, p, g, slots, lr, step):
        m, v = slots["m"], slots["v"]
        if not (m.flags.c_contiguous and v.flags.c_contiguous):
            return None
        out = np.empty_like(p)
        try:
            _speedups.adam(p, g, m, v, out, 1.0 - self.beta_1, 1.0 - self.beta_2, self.epsilon,
                           self._step_size(lr, step + 1), float(self.weight_decay or 0.0), lr)
        except (TypeError, ValueError):
            return None   # (refused before writing: a byte-swapped array, say)
        return out

    def _step_size(self, lr, t):
        """The bias-corrected step ``lr * sqrt(1 - b2^t) / (1 - b1^t)`` for a host count."""
        return lr * (math.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t))

    def _update(self, xp, p, g, slots, lr, step):
        t = step + 1
        b1, b2 = self.beta_1, self.beta_2
        if isinstance(t, int):
            alpha = self._step_size(lr, t)
        else:
            # the step count as a 0-d device array: the bias correction is computed on the
            # device, so a captured step reads the count anew on every replay
            tf = t.astype(xp.float64)
            alpha = (xp.sqrt(1.0 - b2 ** tf) / (1.0 - b1 ** tf)).astype(p.dtype) * lr
        m, v = slots["m"], slots["v"]
        tmp = xp.subtract(g, m)
        tmp *= 1.0 - b1
        m += tmp
        xp.multiply(g, g, out=tmp)
        tmp -= v
        tmp *= 1.0 - b2
        v += tmp
        if self.amsgrad:
            vhat = slots["vhat"]
            xp.maximum(vhat, v, out=vhat)
            v = vhat
        xp.sqrt(v, out=tmp)
        tmp += self.epsilon
        xp.divide(m, tmp, out=tmp)
        tmp *= alpha
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class AdamW(Adam):
    """Adam with decoupled weight decay (``p -= p * weight_decay * lr`` before the Adam step),
    as ``keras.optimizers.AdamW``."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a number, got None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay,
                         clipnorm, clipvalue, global_clipnorm, name, **kwargs)


class RMSprop(Optimizer):
    """RMSprop, as ``keras.optimizers.RMSprop``.

    ``v = rho v + (1 - rho) g^2``; centered: ``a = rho a + (1 - rho) g`` and the denominator
    is ``v - a^2 + eps``, else ``v + eps``; ``inc = lr g / sqrt(denominator)``; with momentum
    ``mom = momentum * mom + inc`` and ``p -= mom``, else ``p -= inc``.
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="RMSprop", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        if not 0 <= rho <= 1:
            raise ValueError(f"RMSprop: rho must be in [0, 1], got {rho!r}")
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)

    def _slot_specs(self):
        specs = (("velocity", 0),)
        if self.momentum > 0:
            specs += (("momentum", 0),)
        if self.centered:
            specs += (("average_gradient", 0),)
        return specs

    def _slot_groups(self):
        return tuple((n,) for n, _ in self._slot_specs())

    def _update(self, xp, p, g, slots, lr, step):
        rho = self.rho
        v = slots["velocity"]
        tmp = xp.multiply(g, g)
        tmp *= 1.0 - rho
        v *= rho
        v += tmp
        if self.centered:
            a = slots["average_gradient"]
            a *= rho
            a += g * (1.0 - rho)
            xp.multiply(a, a, out=tmp)
            xp.subtract(v, tmp, out=tmp)
            tmp += self.epsilon
        else:
            xp.add(v, self.epsilon, out=tmp)
        xp.sqrt(tmp, out=tmp)
        xp.divide(g, tmp, out=tmp)
        tmp *= lr
        if self.momentum > 0:
            mom = slots["momentum"]
            mom *= self.momentum
            mom += tmp
            return xp.subtract(p, mom, out=tmp)
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}


class Adagrad(Optimizer):
    """Adagrad, as ``keras.optimizers.Adagrad``: ``acc += g^2``;
    ``p -= lr * g / sqrt(acc + eps)``."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Adagrad", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError(f"Adagrad: initial_accumulator_value must be >= 0, got "
                             f"{initial_accumulator_value!r}")
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _slot_specs(self):
        return (("accumulator", self.initial_accumulator_value),)

    def _update(self, xp, p, g, slots, lr, step):
        acc = slots["accumulator"]
        tmp = xp.multiply(g, g)
        acc += tmp
        xp.add(acc, self.epsilon, out=tmp)
        xp.sqrt(tmp, out=tmp)
        xp.divide(g, tmp, out=tmp)
        tmp *= lr
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


def _beta_power(xp, beta, t, dtype):
    """``beta ** t`` for the step number ``t`` (from 1): a Python float for a host count, a
    0-d array of ``dtype`` computed on the device for a device count."""
    if isinstance(t, int):
        return beta ** t
    return (beta ** t.astype(xp.float64)).astype(dtype)


def _check_beta(cls, label, value, high_open=True):
    ok = isinstance(value, (int, float)) and (0 <= value < 1 if high_open else 0 <= value <= 1)
    if not ok:
        interval = "[0, 1)" if high_open else "[0, 1]"
        raise ValueError(f"{cls}: {label} must be in {interval}, got {value!r}")
    return float(value)


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), as ``keras.optimizers.Adamax``.

    ``m += (g - m)(1 - b1)``, ``u = max(b2 u, |g|)``,
    ``p -= lr m / ((1 - b1^t)(u + eps))`` with ``t`` the step number from 1.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Adamax", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        self.beta_1 = _check_beta("Adamax", "beta_1", beta_1)
        self.beta_2 = _check_beta("Adamax", "beta_2", beta_2)
        self.epsilon = float(epsilon)

    def _slot_specs(self):
        return (("momentum", 0), ("norm", 0))

    def _update(self, xp, p, g, slots, lr, step):
        m, u = slots["momentum"], slots["norm"]
        tmp = xp.subtract(g, m)
        tmp *= 1.0 - self.beta_1
        m += tmp
        u *= self.beta_2
        xp.abs(g, out=tmp)
        xp.maximum(u, tmp, out=u)
        xp.add(u, self.epsilon, out=tmp)
        tmp *= 1.0 - _beta_power(xp, self.beta_1, step + 1, p.dtype)
        xp.divide(m, tmp, out=tmp)
        tmp *= lr
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


# prod_{i=1..n} (1 - 0.5 * 0.96^i) for n = 1.._NADAM_TERMS: Nadam's momentum-schedule product
# without its beta_1^n factor; later factors are 1 to float64 precision (0.96^900 < 1e-16)
_NADAM_TERMS = 1024
_nadam_host_table = None


def _nadam_products_host():
    global _nadam_host_table
    if _nadam_host_table is None:
        _nadam_host_table = np.cumprod(
            1.0 - 0.5 * 0.96 ** np.arange(1, _NADAM_TERMS + 1, dtype=np.float64))
    return _nadam_host_table


class Nadam(Optimizer):
    """Adam with Nesterov momentum, as ``keras.optimizers.Nadam``.

    With ``u_t = b1 (1 - 0.5 * 0.96^t)`` and ``U_t = u_1 ... u_t``: ``m += (g - m)(1 - b1)``,
    ``v += (g^2 - v)(1 - b2)``, ``m_hat = u_{t+1} m / (1 - U_{t+1}) + (1 - u_t) g / (1 - U_t)``,
    ``p -= lr m_hat / (sqrt(v / (1 - b2^t)) + eps)``. Keras keeps ``U_t`` in a variable
    updated every step; here it is a function of the step count (so a checkpoint's
    ``iterations`` restores it, and a captured step reads it on the device).
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Nadam", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        self.beta_1 = _check_beta("Nadam", "beta_1", beta_1)
        self.beta_2 = _check_beta("Nadam", "beta_2", beta_2)
        self.epsilon = float(epsilon)
        self._tables = {}       # (namespace, device) -> the products table there

    def _slot_specs(self):
        return (("momentum", 0), ("velocity", 0))

    def _coefficients(self, xp, t, dtype):
        """``(u_{t+1} / (1 - U_{t+1}), (1 - u_t) / (1 - U_t), 1 - b2^t)``."""
        b1, b2 = self.beta_1, self.beta_2
        if isinstance(t, int):
            table = _nadam_products_host()
            prod_t = b1 ** t * float(table[min(t, _NADAM_TERMS) - 1])
            u_t = b1 * (1.0 - 0.5 * 0.96 ** t)
            u_next = b1 * (1.0 - 0.5 * 0.96 ** (t + 1))
            return (u_next / (1.0 - prod_t * u_next), (1.0 - u_t) / (1.0 - prod_t),
                    1.0 - b2 ** t)
        key = (id(xp), str(getattr(t, "device", "")))   # (one table per GPU)
        table = self._tables.get(key)
        if table is None:       # (made on the device: no upload)
            table = xp.cumprod(1.0 - 0.5 * 0.96 ** xp.arange(1, _NADAM_TERMS + 1,
                                                             dtype=xp.float64))
            self._tables[key] = table
        tf = t.astype(xp.float64)
        prod_t = b1 ** tf * xp.take(table, xp.minimum(t, _NADAM_TERMS) - 1)
        u_t = b1 * (1.0 - 0.5 * 0.96 ** tf)
        u_next = b1 * (1.0 - 0.5 * 0.96 ** (tf + 1.0))
        return ((u_next / (1.0 - prod_t * u_next)).astype(dtype),
                ((1.0 - u_t) / (1.0 - prod_t)).astype(dtype), (1.0 - b2 ** tf).astype(dtype))

    def _update(self, xp, p, g, slots, lr, step):
        c_m, c_g, bias_2 = self._coefficients(xp, step + 1, p.dtype)
        m, v = slots["momentum"], slots["velocity"]
        tmp = xp.subtract(g, m)
        tmp *= 1.0 - self.beta_1
        m += tmp
        xp.multiply(g, g, out=tmp)
        tmp -= v
        tmp *= 1.0 - self.beta_2
        v += tmp
        xp.divide(v, bias_2, out=tmp)
        xp.sqrt(tmp, out=tmp)
        tmp += self.epsilon
        m_hat = m * c_m
        m_hat += g * c_g
        m_hat *= lr
        xp.divide(m_hat, tmp, out=tmp)
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


class Adadelta(Optimizer):
    """Adadelta, as ``keras.optimizers.Adadelta``.

    ``ag = rho ag + (1 - rho) g^2``, ``d = -sqrt(ad + eps) g / sqrt(ag + eps)``,
    ``ad = rho ad + (1 - rho) d^2``, ``p += lr d``.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="Adadelta",
                 **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        self.rho = _check_beta("Adadelta", "rho", rho, high_open=False)
        self.epsilon = float(epsilon)

    def _slot_specs(self):
        return (("accumulated_grad", 0), ("accumulated_delta_var", 0))

    def _update(self, xp, p, g, slots, lr, step):
        rho = self.rho
        acc_g, acc_d = slots["accumulated_grad"], slots["accumulated_delta_var"]
        tmp = xp.multiply(g, g)
        tmp *= 1.0 - rho
        acc_g *= rho
        acc_g += tmp
        delta = xp.add(acc_d, self.epsilon)
        xp.sqrt(delta, out=delta)
        delta *= g
        xp.add(acc_g, self.epsilon, out=tmp)
        xp.sqrt(tmp, out=tmp)
        xp.divide(delta, tmp, out=delta)        # -d
        xp.multiply(delta, delta, out=tmp)
        tmp *= 1.0 - rho
        acc_d *= rho
        acc_d += tmp
        delta *= lr
        return xp.subtract(p, delta, out=delta)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


class Ftrl(Optimizer):
    """Follow-the-regularized-leader, as ``keras.optimizers.Ftrl``.

    With ``k = -learning_rate_power``: ``g' = g + 2 l2_shrinkage p``, ``n' = n + g^2``,
    ``z += g' - (n'^k - n^k) / lr * p``, ``p = (clip(z, -l1, l1) - z) / (n'^k / lr + 2 l2')``
    with ``l2' = l2 + beta / (2 lr)``, ``n = n'``.
    """

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="Ftrl", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        for label, value, ok in (
                ("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
                ("learning_rate_power", learning_rate_power, "negative or zero"),
                ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
                ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
                ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength,
                 "positive or zero")):
            if not isinstance(value, (int, float)) or \
                    (value > 0 if ok == "negative or zero" else value < 0):
                raise ValueError(f"Ftrl: {label} must be {ok}, got {value!r}")
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def _slot_specs(self):
        return (("accumulator", self.initial_accumulator_value), ("linear", 0))

    def _root(self, xp, x):
        k = -self.learning_rate_power
        return xp.sqrt(x) if k == 0.5 else xp.power(x, k)

    def _update(self, xp, p, g, slots, lr, step):
        acc, lin = slots["accumulator"], slots["linear"]
        shrink = self.l2_shrinkage_regularization_strength
        grad = g + p * (2.0 * shrink) if shrink else g
        old_root = self._root(xp, acc)
        acc += g * g                                # n'
        new_root = self._root(xp, acc)
        sigma = xp.subtract(new_root, old_root, out=old_root)
        sigma /= lr
        sigma *= p
        lin += grad
        lin -= sigma
        quadratic = xp.divide(new_root, lr, out=new_root)
        quadratic += 2.0 * self.l2_regularization_strength
        if self.beta:
            quadratic += self.beta / lr
        l1 = self.l1_regularization_strength
        out = xp.clip(lin, -l1, l1)
        out -= lin
        out /= quadratic
        return out

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength,
                "beta": self.beta}


class Lion(Optimizer):
    """Lion (evolved sign momentum), as ``keras.optimizers.Lion``:
    ``p -= lr sign(b1 m + (1 - b1) g)``, then ``m = b2 m + (1 - b2) g``."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="Lion", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        if not isinstance(beta_1, (int, float)) or not 0 < beta_1 <= 1:
            raise ValueError(f"Lion: beta_1 must be in (0, 1] (otherwise the optimizer "
                             f"degenerates to SignSGD), got {beta_1!r}")
        self.beta_1 = float(beta_1)
        self.beta_2 = _check_beta("Lion", "beta_2", beta_2, high_open=False)

    def _slot_specs(self):
        return (("momentum", 0),)

    def _update(self, xp, p, g, slots, lr, step):
        m = slots["momentum"]
        tmp = m * self.beta_1
        tmp += g * (1.0 - self.beta_1)
        xp.sign(tmp, out=tmp)
        tmp *= lr
        m *= self.beta_2
        m += g * (1.0 - self.beta_2)
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}


def _update_number(step, dtype):
    """The update's number from 1 (``step + 1``): a Python int for a host count, a 0-d array
    of ``dtype`` on the device for a device count."""
    if isinstance(step, int):
        return step + 1
    return (step + 1).astype(dtype)


def _rms(xp, x):
    """``sqrt(mean(x^2))`` as a 0-d array."""
    return xp.sqrt(xp.mean(xp.square(x)))


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern), as ``keras.optimizers.Adafactor``.

    With ``t`` the step number from 1, ``rho = min(lr, 1 / sqrt(t))``,
    ``alpha = max(epsilon_2, rms(p)) * rho``, ``b = 1 - t^beta_2_decay`` and
    ``s = g^2 + epsilon_1``: a variable of rank >= 2 keeps the row and column means of ``s``
    over its last two axes (``r = b r + (1 - b) mean(s, -1)``, ``c = b c + (1 - b)
    mean(s, -2)``) and ``v = (r / mean(r, -1))[..., None] * c[..., None, :]``; a smaller one
    ``v = b v + (1 - b) s`` (its ``r`` and ``c`` are int32 zeros, as Keras keeps them).
    ``u = g / sqrt(v)``, ``p -= alpha * u / max(1, rms(u) / clip_threshold)``.
    ``relative_step`` is kept for the config: the rate is ``min(lr, 1 / sqrt(t))`` either
    way, as in Keras.
    """

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                 clip_threshold=1.0, relative_step=True, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="Adafactor", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1 = float(epsilon_1)
        self.epsilon_2 = float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)

    def _slot_specs(self):
        return (("r", 0), ("c", 0), ("velocity", 0))

    def _slot_layout(self, var, slot_name):
        shape = tuple(var._value.shape)
        if slot_name in ("r", "c"):
            if len(shape) < 2:
                return (), np.dtype(np.int32)
            return (shape[:-1] if slot_name == "r" else shape[:-2] + shape[-1:]), \
                var._value.dtype
        return super()._slot_layout(var, slot_name)

    def _update(self, xp, p, g, slots, lr, step):
        t = _update_number(step, p.dtype)
        if isinstance(t, int):
            inv_sqrt_t = 1.0 / math.sqrt(t)
            beta = 1.0 - t ** self.beta_2_decay
            rho = min(lr, inv_sqrt_t) if isinstance(lr, float) else xp.minimum(lr, inv_sqrt_t)
        else:
            inv_sqrt_t = 1.0 / xp.sqrt(t)
            beta = 1.0 - t ** self.beta_2_decay
            rho = xp.minimum(lr, inv_sqrt_t)
        alpha = xp.maximum(self.epsilon_2, _rms(xp, p)) * rho
        sq = xp.square(g)
        sq += self.epsilon_1
        v = slots["velocity"]
        if p.ndim >= 2:
            r, c = slots["r"], slots["c"]
            r *= beta
            r += xp.mean(sq, axis=-1) * (1.0 - beta)
            c *= beta
            c += xp.mean(sq, axis=-2) * (1.0 - beta)
            row = r / xp.mean(r, axis=-1, keepdims=True)
            xp.multiply(row[..., None], c[..., None, :], out=v)
        else:
            v *= beta
            sq *= 1.0 - beta
            v += sq
        u = xp.sqrt(v)
        xp.divide(g, u, out=u)
        u /= xp.maximum(1.0, _rms(xp, u) / self.clip_threshold)
        u *= alpha
        return xp.subtract(p, u, out=u)

    def get_config(self):
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay,
                "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                "clip_threshold": self.clip_threshold, "relative_step": self.relative_step}


class Lamb(Optimizer):
    """LAMB (layer-wise adaptive moments), as ``keras.optimizers.Lamb``: Adam's bias-corrected
    step ``u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`` scaled per variable by the
    trust ratio ``||p|| / ||u||`` (1 where either norm is 0): ``p -= ratio * lr * u``."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Lamb", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        self.beta_1 = _check_beta("Lamb", "beta_1", beta_1)
        self.beta_2 = _check_beta("Lamb", "beta_2", beta_2)
        self.epsilon = float(epsilon)

    def _slot_specs(self):
        return (("m", 0), ("v", 0))

    def _update(self, xp, p, g, slots, lr, step):
        t = _update_number(step, p.dtype)
        b1, b2 = self.beta_1, self.beta_2
        bias_1 = 1.0 - _beta_power(xp, b1, t, p.dtype)
        bias_2 = 1.0 - _beta_power(xp, b2, t, p.dtype)
        m, v = slots["m"], slots["v"]
        tmp = xp.subtract(g, m)
        tmp *= 1.0 - b1
        m += tmp
        xp.multiply(g, g, out=tmp)
        tmp -= v
        tmp *= 1.0 - b2
        v += tmp
        xp.divide(v, bias_2, out=tmp)
        xp.sqrt(tmp, out=tmp)
        tmp += self.epsilon
        xp.divide(m / bias_1, tmp, out=tmp)         # the update u
        w_norm = xp.sqrt(xp.sum(xp.square(p)))
        u_norm = xp.sqrt(xp.sum(xp.square(tmp)))
        ratio = xp.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0).astype(p.dtype)
        tmp *= ratio * lr
        return xp.subtract(p, tmp, out=tmp)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


def _as_dtype_float(value, dtype) -> float:
    """``value`` rounded to ``dtype`` (a float constant as Keras casts it to the variable's
    dtype), as a Python float."""
    return float(np.asarray(value, dtype=dtype))


class Muon(Optimizer):
    """Muon (momentum orthogonalized by Newton-Schulz), as ``keras.optimizers.Muon``.

    A 2-D variable gets the Muon step: ``m = momentum m + g``, ``u = g + momentum m``
    (``nesterov``; else ``u = m``), ``X`` the quintic Newton-Schulz iteration of ``u``
    (``ns_steps`` times ``X = muon_a X + (muon_b A + muon_c A A) X`` with ``A = X X^T``,
    from ``u / (||u||_F + 1e-7)``, on the transpose of a tall matrix) and
    ``p -= lr X sqrt(max(rows, cols)) rms_rate`` (the Moonlight scaling; ``rms_rate=None``
    drops it). Every other variable gets AdamW with ``adam_beta_1``, ``adam_beta_2``,
    ``epsilon`` and the rate ``lr * adam_lr_ratio``: those not 2-D, those whose path holds
    ``"embedding"`` (any case; with ``exclude_embeddings``) and those whose path has a match
    of one of the regular expressions ``exclude_layers`` (``re.search``). As Keras, only the
    AdamW variables get a ``velocity`` slot (every variable a ``momentum``), and weight
    decay (``p -= p * rate * lr`` before the step, ``lr`` the current learning rate) uses
    ``adam_weight_decay`` for the AdamW variables, ``weight_decay`` for the others.
    """

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999,
                 adam_weight_decay=0.004, epsilon=1e-7, weight_decay=0.004, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, exclude_layers=None,
                 exclude_embeddings=True, muon_a=3.4445, muon_b=-4.7750, muon_c=2.0315,
                 adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True, rms_rate=0.2,
                 **kwargs):
        cls = type(self).__name__
        if isinstance(exclude_layers, str) or not (
                exclude_layers is None or isinstance(exclude_layers, (list, tuple))) or \
                not all(isinstance(k, str) for k in exclude_layers or ()):
            raise TypeError(f"{cls}: exclude_layers must be a list of regular expressions "
                            f"(strings) or None, got {exclude_layers!r}")
        try:
            patterns = [re.compile(k) for k in exclude_layers or ()]
        except re.error as exc:
            raise ValueError(f"{cls}: exclude_layers holds an invalid regular expression "
                             f"({exc}): {exclude_layers!r}") from None
        if adam_weight_decay is not None and not (
                isinstance(adam_weight_decay, (int, float)) and adam_weight_decay >= 0):
            raise ValueError(f"{cls}: adam_weight_decay must be a number >= 0 or None, got "
                             f"{adam_weight_decay!r}")
        if isinstance(ns_steps, bool) or not isinstance(ns_steps, (int, np.integer)) or \
                ns_steps < 0:
            raise ValueError(f"{cls}: ns_steps must be an integer >= 0, got {ns_steps!r}")
        for label, value in (("muon_a", muon_a), ("muon_b", muon_b), ("muon_c", muon_c),
                             ("adam_lr_ratio", adam_lr_ratio), ("momentum", momentum),
                             ("epsilon", epsilon), ("rms_rate", rms_rate)):
            if not (isinstance(value, (int, float)) and not isinstance(value, bool)) and \
                    not (label == "rms_rate" and value is None):
                raise ValueError(f"{cls}: {label} must be a number, got {value!r}")
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor,
                         gradient_accumulation_steps=gradient_accumulation_steps, **kwargs)
        self.adam_beta_1 = _check_beta(cls, "adam_beta_1", adam_beta_1)
        self.adam_beta_2 = _check_beta(cls, "adam_beta_2", adam_beta_2)
        self.epsilon = float(epsilon)
        self.muon_a = float(muon_a)
        self.muon_b = float(muon_b)
        self.muon_c = float(muon_c)
        self.adam_lr_ratio = adam_lr_ratio
        self.momentum = float(momentum)
        self.ns_steps = int(ns_steps)
        self.nesterov = bool(nesterov)
        self.exclude_embeddings = bool(exclude_embeddings)
        self.exclude_layers = list(exclude_layers or ())
        self.adam_weight_decay = (None if adam_weight_decay is None
                                  else float(adam_weight_decay))
        self.rms_rate = None if rms_rate is None else float(rms_rate)
        self._exclude_patterns = patterns
        self._adamw_cache = {}      # variable id -> whether it takes the AdamW step

    def _should_use_adamw(self, variable) -> bool:
        """Whether ``variable`` takes the AdamW step (Keras' rule, see the class)."""
        found = self._adamw_cache.get(variable._id)
        if found is None:
            path = _var_label(variable)
            found = (variable._value.ndim != 2
                     or (self.exclude_embeddings and "embedding" in path.lower())
                     or any(p.search(path) is not None for p in self._exclude_patterns))
            if len(self._adamw_cache) > 4096:
                self._adamw_cache.clear()
            self._adamw_cache[variable._id] = found
        return found

    def _slot_specs(self):
        return (("momentum", 0), ("velocity", 0))

    def _slot_specs_for(self, var):
        specs = self._all_slot_specs()
        if self._should_use_adamw(var):
            return specs
        return tuple(s for s in specs if s[0] != "velocity")

    def _weight_decay_for(self, var):
        return self.adam_weight_decay if self._should_use_adamw(var) else self.weight_decay

    def _update(self, xp, p, g, slots, lr, step):
        v = slots.get("velocity")
        if v is not None:     # (as Keras: the velocity slot marks an AdamW variable)
            return self._adamw_step(xp, p, g, slots["momentum"], v, lr * self.adam_lr_ratio,
                                    step)
        return self._muon_step(xp, p, g, slots["momentum"], lr)

    def _adamw_step(self, xp, p, g, m, v, lr, step):
        # (as Keras, the bias corrections use the betas cast to the variable's dtype)
        t = step + 1
        b1, b2 = self.adam_beta_1, self.adam_beta_2
        b1_d, b2_d = _as_dtype_float(b1, p.dtype), _as_dtype_float(b2, p.dtype)
        if isinstance(t, int):
            alpha = lr * (math.sqrt(1.0 - _as_dtype_float(b2_d ** t, p.dtype))
                          / (1.0 - _as_dtype_float(b1_d ** t, p.dtype)))
        else:       # (the count on the device: computed there)
            tf = t.astype(p.dtype)
            alpha = xp.sqrt(1.0 - b2_d ** tf) / (1.0 - b1_d ** tf) * lr
        tmp = xp.subtract(g, m)
        tmp *= 1.0 - b1
        m += tmp
        xp.multiply(g, g, out=tmp)
        tmp -= v
        tmp *= 1.0 - b2
        v += tmp
        xp.sqrt(v, out=tmp)
        tmp += self.epsilon
        step_size = m * alpha
        xp.divide(step_size, tmp, out=tmp)
        return xp.subtract(p, tmp, out=tmp)

    def _muon_step(self, xp, p, g, m, lr):
        m += g + m * (self.momentum - 1.0)
        u = g + m * self.momentum if self.nesterov else m
        x = self._newton_schulz(xp, u)
        x *= lr
        if self.rms_rate is not None:
            # (Keras: sqrt of the int max(rows, cols) as a float32, times rms_rate)
            x *= _as_dtype_float(np.sqrt(np.float32(max(p.shape))), np.float32)
            x *= self.rms_rate
        return xp.subtract(p, x, out=x)

    def _newton_schulz(self, xp, x):
        """The quintic Newton-Schulz iteration of the 2-D ``x`` (a new array)."""
        a, b, c = self.muon_a, self.muon_b, self.muon_c
        tall = x.shape[0] > x.shape[1]
        if tall:
            x = xp.swapaxes(x, 0, 1)
        x = x / (xp.sqrt(xp.sum(xp.square(x))) + 1e-7)
        for _ in range(self.ns_steps):
            gram = xp.matmul(x, xp.swapaxes(x, 0, 1))
            poly = xp.matmul(gram * c, gram)
            poly += gram * b
            x = xp.matmul(poly, x) + x * a
        return xp.ascontiguousarray(xp.swapaxes(x, 0, 1)) if tall else x

    def get_config(self):
        return {**super().get_config(), "adam_beta_1": self.adam_beta_1,
                "adam_beta_2": self.adam_beta_2, "epsilon": self.epsilon,
                "exclude_layers": list(self.exclude_layers), "muon_a": self.muon_a,
                "muon_b": self.muon_b, "muon_c": self.muon_c,
                "adam_lr_ratio": self.adam_lr_ratio, "momentum": self.momentum,
                "ns_steps": self.ns_steps, "nesterov": self.nesterov,
                "exclude_embeddings": self.exclude_embeddings,
                "adam_weight_decay": self.adam_weight_decay, "rms_rate": self.rms_rate}


class ScheduleFreeAdamW(Optimizer):
    """Schedule-Free AdamW (Defazio et al., 2024), as ``keras.optimizers.ScheduleFreeAdamW``.

    The ``momentum`` slot (``z``) starts as a copy of the variable, ``velocity`` at zero.
    With ``t`` the update's number from 1 and ``lr`` scaled by ``min(t / warmup_steps, 1)``
    when ``warmup_steps > 0``: ``v += (g^2 - v)(1 - b2)``,
    ``z -= lr g / (sqrt(v / (1 - b2^t)) + eps)``, ``x = (y - (1 - b1) z) / b1`` (``y`` the
    variable), ``x' = (1 - 1/t) x + z / t`` and the variable becomes
    ``y = (1 - b1) z + b1 x'``. As in Keras 3 on TensorFlow, ``x`` is recovered from the
    ``z`` just updated, and the variables keep ``y`` for evaluation too (Keras has no
    train/eval swap); weight decay and ``use_ema`` work as for every optimizer.
    """

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 warmup_steps=0, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        cls = type(self).__name__
        if not (isinstance(beta_1, (int, float)) and 0 < beta_1 <= 1):
            raise ValueError(f"{cls}: beta_1 must be in (0, 1], got {beta_1!r}")
        beta_2 = _check_beta(cls, "beta_2", beta_2)
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, (int, np.integer)) \
                or warmup_steps < 0:
            raise ValueError(f"{cls}: warmup_steps must be an integer >= 0, got "
                             f"{warmup_steps!r}")
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm,
                         name, use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor,
                         gradient_accumulation_steps=gradient_accumulation_steps, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = beta_2
        self.epsilon = float(epsilon)
        self.warmup_steps = int(warmup_steps)

    def _slot_specs(self):
        return (("momentum", None), ("velocity", 0))

    def _update(self, xp, p, g, slots, lr, step):
        dt = p.dtype
        b1 = _as_dtype_float(self.beta_1, dt)
        b2 = _as_dtype_float(self.beta_2, dt)
        one_b1 = _as_dtype_float(1.0 - b1, dt)
        t = step + 1
        if isinstance(t, int):
            t_f = _as_dtype_float(t, dt)
            bias_2 = _as_dtype_float(1.0 - _as_dtype_float(b2 ** t_f, dt), dt)
            weight = _as_dtype_float(1.0 / t_f, dt)
            if self.warmup_steps > 0:
                lr = lr * min(_as_dtype_float(t_f / self.warmup_steps, dt), 1.0)
        else:       # (the count on the device: computed there)
            t_f = t.astype(dt)
            bias_2 = 1.0 - b2 ** t_f
            weight = 1.0 / t_f
            if self.warmup_steps > 0:
                lr = lr * xp.minimum(t_f / self.warmup_steps, 1.0)
        z, v = slots["momentum"], slots["velocity"]
        tmp = xp.multiply(g, g)
        tmp -= v
        tmp *= _as_dtype_float(1.0 - b2, dt)
        v += tmp
        xp.divide(v, bias_2, out=tmp)
        xp.sqrt(tmp, out=tmp)
        tmp += _as_dtype_float(self.epsilon, dt)
        z -= xp.divide(g * lr, tmp, out=tmp)
        x = p - z * one_b1
        x /= b1
        x *= 1.0 - weight
        x += z * weight
        x *= b1
        x += z * one_b1
        return x

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "warmup_steps": self.warmup_steps}


# --- by name ----------------------------------------------------------------------------------

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad,
            "adamax": Adamax, "nadam": Nadam, "adadelta": Adadelta, "ftrl": Ftrl, "lion": Lion,
            "adafactor": Adafactor, "lamb": Lamb, "muon": Muon,
            "schedulefreeadamw": ScheduleFreeAdamW}


def get(identifier) -> Optimizer:
    """An optimizer from a name (``"adam"``), a config dict, or an Optimizer (returned)."""
    found = _config.lookup(identifier, Optimizer, _BY_NAME, "optimizer", sorted(_BY_NAME))
    if found is not None:
        return found
    raise TypeError(f"cannot interpret {identifier!r} as an optimizer")


serialize = _config.serialize


def deserialize(config: dict) -> Optimizer:
    return _config.deserialize(config, _BY_NAME, "optimizer",
                               sorted(c.__name__ for c in _BY_NAME.values()))


# --- loss scaling (mixed precision) ------------------------------------------------------------

def _delegated(name):
    def method(self, *args, **kwargs):
        return getattr(self.inner_optimizer, name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"The inner optimizer's ``{name}``."
    return method


class LossScaleOptimizer(Optimizer):
    """Dynamic loss scaling around another optimizer, as Keras 3's
    ``keras.mixed_precision.LossScaleOptimizer(inner_optimizer, initial_scale=2**15,
    dynamic_growth_steps=2000)``.

    ``scale_loss(loss)`` multiplies the loss by the current scale (so that small float16
    gradients do not underflow); ``apply(grads, trainable_variables)`` (and
    ``apply_gradients``) divides the gradients by it and, if they are all finite, lets the
    inner optimizer take the step; otherwise the step is skipped (variables, slots and the
    inner ``iterations`` unchanged) and the scale halved. After ``dynamic_growth_steps``
    finite steps in a row the scale doubles. ``dynamic_scale`` (float32) and
    ``step_counter`` (int64) are Variables made by :meth:`build` (the first step) on the
    device of the first variable; ``iterations`` and ``learning_rate`` are the inner
    optimizer's. ``model.compile`` wraps the optimizer in one under the ``"mixed_float16"``
    policy.

    tf.keras 2's names work too: ``get_scaled_loss(loss)`` (a loss or a zero-argument
    callable) and ``get_unscaled_gradients(grads)``; gradients unscaled by the latter are not
    divided again by ``apply_gradients``. ``loss_scale`` is ``dynamic_scale``,
    ``dynamic_counter`` is ``step_counter``.

    **No host round trip off the host.** On the CPU the finiteness test is read on the host
    (free there) and a non-finite step is simply not taken. On a device the host cannot read
    (a GPU; the strict test device) the test stays on the device: the variables' buffers are
    kept and the slots copied before the inner step runs, and afterwards every variable, slot
    and the inner ``iterations`` is set to ``where(finite, new, old)``, the scale and counter
    likewise, so a step (eager or captured) waits for nothing. That costs one copy of the
    slots and one select per variable and slot each step. The host's mirror of the inner step
    count then counts skipped steps too: it is what a learning-rate schedule computed on the
    host (one with only ``value_at``, or a Python callable) would read, so with such a
    schedule the count is read back from the device after each step instead (a host wait).
    """

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, "
                             "simply set `loss_scale_factor` directly on the "
                             "`inner_optimizer`.")
        defaults = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None,
                    "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                    "ema_overwrite_frequency": None, "loss_scale_factor": None,
                    "gradient_accumulation_steps": None}
        for key, default in defaults.items():
            if key not in kwargs:
                continue
            value = kwargs.pop(key)
            if (default is None and value is not None) or value != default:
                raise ValueError(f"LossScaleOptimizer does not support `{key}`. Instead, set "
                                 f"`{key}` on the `inner_optimizer`.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: "
                             f"`{'`, `'.join(kwargs)}`.")
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"LossScaleOptimizer: inner_optimizer must be a gradtape "
                            f"optimizer (gt.keras.optimizers.SGD(), ...), got "
                            f"{inner_optimizer!r}")
        try:
            initial_scale = float(initial_scale)
        except (TypeError, ValueError):
            initial_scale = -1.0
        if not (initial_scale > 0 and math.isfinite(initial_scale)):
            raise ValueError(f"LossScaleOptimizer: initial_scale must be a finite number > 0, "
                             f"got {initial_scale!r}")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(
                dynamic_growth_steps, (int, np.integer)) or dynamic_growth_steps < 1:
            raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be an int >= 1, "
                             f"got {dynamic_growth_steps!r}")
        d = self.__dict__
        d["inner_optimizer"] = inner_optimizer
        d["name"] = name or "loss_scale_optimizer"
        d["initial_scale"] = initial_scale
        d["dynamic_growth_steps"] = int(dynamic_growth_steps)
        d["built"] = False
        d["_unscaled"] = {}     # id(gradient) -> weakref: what get_unscaled_gradients returned

    def __getattr__(self, name):
        # (the inner optimizer's state for code written against Optimizer: saving, callbacks)
        inner = self.__dict__.get("inner_optimizer")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        if name in ("dynamic_scale", "step_counter"):
            raise AttributeError(f"LossScaleOptimizer: {name} is made by build() (called by "
                                 "the first step); the optimizer is not built yet")
        return getattr(inner, name)

    # --- delegated state ----------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The inner optimizer's learning rate (settable)."""
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    lr = learning_rate

    @property
    def iterations(self) -> Variable:
        """The inner optimizer's step count (skipped steps are not counted)."""
        return self.inner_optimizer.iterations

    @property
    def variables(self) -> list:
        """``step_counter`` and ``dynamic_scale`` (once built), then the inner optimizer's."""
        own = [self.step_counter, self.dynamic_scale] if self.built else []
        return own + self.inner_optimizer.variables

    @property
    def dynamic(self) -> bool:
        """Always True (tf.keras 2's attribute; Keras 3 has only dynamic scaling)."""
        return True

    @property
    def loss_scale(self):
        """The current scale (tf.keras 2's name): ``dynamic_scale`` once built, else
        ``initial_scale``."""
        return self.dynamic_scale if self.built else self.initial_scale

    @property
    def dynamic_counter(self):
        """tf.keras 2's name of ``step_counter``."""
        return self.step_counter

    _slot_specs = _delegated("_slot_specs")
    slot_names = _delegated("slot_names")
    get_slot = _delegated("get_slot")
    _slots_for = _delegated("_slots_for")
    _slot_state = _delegated("_slot_state")
    _check_slot_restore = _delegated("_check_slot_restore")
    _restore_slot = _delegated("_restore_slot")
    _current_step = _delegated("_current_step")
    _lr_for = _delegated("_lr_for")
    _float_lr = _delegated("_float_lr")
    exclude_from_weight_decay = _delegated("exclude_from_weight_decay")
    finalize_variable_values = _delegated("finalize_variable_values")

    def build(self, var_list):
        """Make ``dynamic_scale`` and ``step_counter`` on the first variable's device, and
        build the inner optimizer."""
        var_list = list(var_list)
        if not self.built:
            from .backend import current_device
            dev = var_list[0]._device if var_list and isinstance(var_list[0], Variable) \
                else current_device()
            with dev.activate():
                self.__dict__["dynamic_scale"] = Variable(
                    Tensor(dev.asarray(np.asarray(self.initial_scale, dtype=np.float32)), dev),
                    trainable=False, name=f"{self.name}/dynamic_scale")
                self.__dict__["step_counter"] = Variable(
                    Tensor(dev.asarray(np.asarray(0, dtype=np.int64)), dev),
                    trainable=False, name=f"{self.name}/step_counter")
            self.__dict__["built"] = True
        self.inner_optimizer.build(var_list)

    # --- scaling ------------------------------------------------------------------------------
    def scale_loss(self, loss):
        """``loss`` times the current scale (a float16 loss is computed in float32 first, as
        Keras' type promotion does)."""
        from .ops.core import cast
        if not isinstance(loss, Tensor):
            loss = convert_to_tensor(loss)
        if loss._value.dtype.kind != "f":
            raise TypeError(f"LossScaleOptimizer.scale_loss: expected a floating loss, got "
                            f"dtype {loss.dtype.name}")
        if loss._value.dtype.itemsize < 4:
            loss = cast(loss, np.float32)
        if not self.built:
            return loss * self.initial_scale
        scale = self.dynamic_scale
        if scale._device is not loss._device:
            scale = Tensor(loss._device.from_other(scale._value, scale._device), loss._device)
        if scale._value.dtype != loss._value.dtype:
            scale = cast(scale, loss._value.dtype)
        return loss * scale

    def get_scaled_loss(self, loss):
        """tf.keras 2's name of :meth:`scale_loss`; ``loss`` may be a zero-argument callable
        (then a callable is returned)."""
        if callable(loss) and not isinstance(loss, Tensor):
            return lambda: self.scale_loss(loss())
        return self.scale_loss(loss)

    def _scale_on(self, dev, dtype):
        """The current scale as a raw array on ``dev`` of ``dtype`` (a float before build)."""
        if not self.built:
            return self.initial_scale
        scale = self.dynamic_scale
        arr = scale._value
        if scale._device is not dev:
            arr = dev.from_other(arr, scale._device)
        return arr if arr.dtype == dtype else arr.astype(dtype)

    def _unscale(self, g, dev):
        with dev.activate() if dev.needs_switch else _NO_SWITCH:
            return Tensor(g / self._scale_on(dev, g.dtype), dev)

    def get_unscaled_gradients(self, grads):
        """tf.keras 2's: each gradient divided by the current scale (``None`` kept). Passing
        these to :meth:`apply_gradients` does not divide them again."""
        import weakref
        out = []
        marks = self._unscaled
        if len(marks) > 4096:
            for key in [k for k, ref in marks.items() if ref() is None]:
                del marks[key]
        for g in grads:
            if g is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                g = convert_to_tensor(g)
            t = self._unscale(g._value, g._device)
            marks[id(t)] = weakref.ref(t)
            out.append(t)
        return out

    # --- the step -----------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False,
                        **kwargs):
        """Apply ``(gradient, variable)`` pairs through :meth:`apply`; returns the inner
        optimizer's ``iterations``."""
        return self._apply(_grad_var_pairs(grads_and_vars, "LossScaleOptimizer"))

    def apply(self, grads, trainable_variables=None):
        """Unscale ``grads`` and take the inner optimizer's step if they are all finite; else
        skip it and halve the scale (see the class's doc). Without ``trainable_variables``,
        the variables of the last :meth:`build`."""
        grads = list(grads)
        if not grads:
            return None
        if trainable_variables is None:
            variables = self.inner_optimizer._built_vars
            if variables is None:
                raise ValueError("LossScaleOptimizer.apply: when passing grads without "
                                 "variables, the optimizer must already be built on a list "
                                 "of variables; call optimizer.build(trainable_variables) "
                                 "first")
        else:
            variables = list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"LossScaleOptimizer.apply: {len(grads)} gradients for "
                             f"{len(variables)} variables; the lists must have the same "
                             "length (nothing was updated)")
        return self._apply(list(zip(grads, variables)))

    def _apply(self, pairs):
        cls = "LossScaleOptimizer"
        variables = [_check_variable(v, cls) for _, v in pairs]
        live = []
        for g, v in pairs:
            if g is not None:
                raw, dev = _check_gradient(g, v, cls)
                live.append((g, raw, dev, v))
        inner = self.inner_optimizer
        if not live:                 # (the inner optimizer says what is wrong)
            return inner.apply([g for g, _ in pairs], variables)
        if not self.built:
            self.build(variables)
        # gradients that get_unscaled_gradients returned are not divided again
        marks = self._unscaled
        refs = [marks.pop(id(g), None) for g, _, _, _ in live]
        unscaled = all(ref is not None and ref() is g for ref, (g, _, _, _) in zip(refs, live))
        new_grads = {}
        for g, raw, dev, v in live:
            new_grads[v._id] = Tensor(raw, dev) if unscaled else self._unscale(raw, dev)
        inner_grads = [None if g is None else new_grads[v._id] for g, v in pairs]
        if self.dynamic_scale._device.host_visible and all(
                dev.host_visible for _, _, dev, _ in live):
            return self._host_step(live, inner_grads, variables)
        return self._device_step(live, inner_grads, variables)

    def _host_step(self, live, grads, variables):
        """On the host: read the finiteness test, take the step or skip it."""
        inner = self.inner_optimizer
        finite = all(bool(dev.xp.isfinite(raw).all()) for _, raw, dev, _ in live)
        scale, counter = self.dynamic_scale, self.step_counter
        xp = scale._device.xp
        if finite:
            out = inner.apply(grads, variables)
            if int(counter._value) == self.dynamic_growth_steps - 1:
                counter._assign_array(xp.zeros((), dtype=counter._value.dtype))
                scale._assign_array(scale._value * 2)
            else:
                counter._assign_array(counter._value + 1)
            return out
        counter._assign_array(xp.zeros((), dtype=counter._value.dtype))
        scale._assign_array(scale._value * 0.5)
        return inner._iterations

    def _device_step(self, live, grads, variables):
        """Off the host: the inner step always runs, then a device-side select keeps or
        undoes it (no value is read on the host)."""
        inner = self.inner_optimizer
        scale, counter = self.dynamic_scale, self.step_counter
        sdev = scale._device
        finite = None
        for _, raw, dev, _ in live:
            with dev.activate() if dev.needs_switch else _NO_SWITCH:
                ok = dev.xp.all(dev.xp.isfinite(raw))
            if dev is not sdev:
                ok = sdev.from_other(ok, dev)
            with sdev.activate() if sdev.needs_switch else _NO_SWITCH:
                finite = ok if finite is None else sdev.xp.logical_and(finite, ok)

        def on(dev):
            return finite if dev is sdev else dev.from_other(finite, sdev)
        # what the step may change: the variables' buffers (held here, so no kernel updates
        # them in place), copies of the slots (updated in place), the step count
        kept = []
        for _, _, dev, v in live:
            slots = inner._slots_for(v)
            with dev.activate() if dev.needs_switch else _NO_SWITCH:
                copies = [(s, dev.xp.copy(s._value)) for s in slots.values()]
            kept.append((v, v._value, copies))
        # the step counts the step advances: the inner optimizer's and, for a MultiOptimizer,
        # those of its optimizers
        counted = [(o, o._iterations._value) for o in
                   [inner] + list(getattr(inner, "_inner_optimizers", ()))]
        with sdev.errstate():      # (a non-finite step computes NaNs that are then dropped)
            out = inner.apply(grads, variables)
        for v, old, copies in kept:
            dev = v._device
            keep = on(dev)
            with dev.activate() if dev.needs_switch else _NO_SWITCH:
                xp = dev.xp
                v._assign_array(xp.where(keep, v._value, old))
                for slot, before in copies:
                    xp.copyto(slot._value, before, where=xp.logical_not(keep))
        for opt, old_it in counted:
            it = opt._iterations
            idev = it._device
            with idev.activate() if idev.needs_switch else _NO_SWITCH:
                it._assign_array(idev.xp.where(on(idev), it._value, old_it))
            lr = opt._learning_rate
            host_count = (isinstance(lr, LearningRateSchedule) and not _own_call(lr) and
                          type(lr).value_on is LearningRateSchedule.value_on) or (
                callable(lr) and not isinstance(lr, (Tensor, LearningRateSchedule)))
            # (the host mirror of the count: re-read at the next step where a schedule needs
            # it)
            opt._step_array = None if host_count and idev.host_visible is False and \
                not _capture.capturing() else it._value
        with sdev.activate() if sdev.needs_switch else _NO_SWITCH:
            xp = sdev.xp
            c, s = counter._value, scale._value
            grow = xp.logical_and(finite, c == self.dynamic_growth_steps - 1)
            counter._assign_array(xp.where(finite, xp.where(grow, 0, c + 1), 0).astype(c.dtype))
            scale._assign_array(xp.where(finite, xp.where(grow, s * 2, s), s * 0.5)
                                .astype(s.dtype))
        return out

    # --- config -------------------------------------------------------------------------------
    def get_config(self) -> dict:
        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            inner = deserialize(inner)
        return cls(inner, **config)

    def __repr__(self):
        return f"<gt.optimizers.LossScaleOptimizer inner={self.inner_optimizer!r}>"


_BY_NAME["lossscaleoptimizer"] = LossScaleOptimizer
__all__.append("LossScaleOptimizer")


# --- one optimizer per variable -------------------------------------------------------------------

def _check_inner(optimizer, where):
    """``optimizer`` if it may serve inside a MultiOptimizer, else a clear ``ValueError``."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"{where}: expected a gradtape optimizer (gt.keras.optimizers.SGD(), "
                         f"...), got {optimizer!r}")
    if isinstance(optimizer, LossScaleOptimizer):
        raise ValueError(f"{where}: a LossScaleOptimizer cannot be used inside a "
                         "MultiOptimizer")
    if isinstance(optimizer, MultiOptimizer):
        raise ValueError(f"{where}: a MultiOptimizer cannot be used inside a MultiOptimizer")
    return optimizer


class OptimizerMap(collections.abc.MutableMapping):
    """Which optimizer updates a variable, by its path, as ``keras.optimizers.OptimizerMap``.

    ``optimizer_map[path]`` is the optimizer of the key equal to ``path`` if there is one,
    else of the key that matches all of ``path`` as a regular expression (``re.fullmatch``:
    ``"encoder/.*"`` for everything under ``encoder``), else ``default_optimizer``; a path
    that several keys match is a ``ValueError``. ``optimizer_map(variable)`` looks up
    ``variable.path``. A key is set once (setting it again is a ``ValueError``).
    """

    def __init__(self, default_optimizer, optimizer_map=None):
        if not isinstance(default_optimizer, Optimizer):
            raise TypeError(f"OptimizerMap: default_optimizer must be a gradtape optimizer, "
                            f"got {default_optimizer!r}")
        if optimizer_map is not None and not isinstance(optimizer_map, dict):
            raise TypeError(f"OptimizerMap: optimizer_map must be a dict of path (or regular "
                            f"expression) -> optimizer, got {optimizer_map!r}")
        for key, opt in (optimizer_map or {}).items():
            if not isinstance(key, str):
                raise ValueError(f"OptimizerMap: keys must be strings, got {key!r}")
            _check_inner(opt, f"OptimizerMap: the optimizer of {key!r}")
        self._default_optimizer = default_optimizer
        self._optimizer_map = dict(optimizer_map or {})

    @property
    def default_optimizer(self):
        """The optimizer of the variables no key matches."""
        return self._default_optimizer

    def __getitem__(self, key):
        found = self._optimizer_map.get(key)
        if found is not None:
            return found
        matching = [pattern for pattern in self._optimizer_map
                    if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"OptimizerMap: multiple optimizers assigned to variable {key} "
                             f"(the keys {matching} all match it)")
        if matching:
            return self._optimizer_map[matching[0]]
        return self._default_optimizer

    def __setitem__(self, key, optimizer):
        if key in self._optimizer_map:
            raise ValueError(f"OptimizerMap: {key!r} already exists in the OptimizerMap with "
                             f"value {self._optimizer_map[key]!r}; keys cannot be set twice")
        if not isinstance(key, str):
            raise ValueError(f"OptimizerMap: keys must be strings, got {key!r}")
        self._optimizer_map[key] = _check_inner(optimizer, f"OptimizerMap[{key!r}]")

    def __delitem__(self, key):
        del self._optimizer_map[key]

    def __len__(self):
        return len(self._optimizer_map)

    def __iter__(self):
        return iter(self._optimizer_map)

    def __call__(self, variable):
        return self[variable.path]

    def get_config(self) -> dict:
        return {"default_optimizer": serialize(self._default_optimizer),
                "optimizer_map": {k: serialize(v) for k, v in self._optimizer_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from .saving import _custom_scope
        with _custom_scope(custom_objects):
            default = deserialize(config["default_optimizer"])
            mapping = {k: deserialize(v) for k, v in (config.get("optimizer_map") or {}).items()}
        return cls(default, mapping)

    def __repr__(self):
        return (f"OptimizerMap(default_optimizer={self._default_optimizer!r}, "
                f"{self._optimizer_map!r})")


class MultiOptimizer(Optimizer):
    """Several optimizers, each updating its own variables, as
    ``keras.optimizers.MultiOptimizer``.

    ``optimizer_map`` is an :class:`OptimizerMap` or any callable returning the optimizer of
    a variable; :meth:`build` (the first step) asks it once per variable, and every later
    step must bring the same variables (in any order). ``apply`` hands each optimizer the
    gradients of its variables (all checks run first, so a bad step changes nothing), then
    counts one step in its own ``iterations``. ``variables`` is ``iterations`` followed by
    each optimizer's ``variables``; ``optimizers`` lists the optimizers (those of the map,
    its default, then those the callable returned). ``loss_scale_factor`` overrides the
    optimizers' own (setting it sets theirs). There is no single learning rate: reading or
    setting ``learning_rate`` is an ``AttributeError``. Saved state (``model.save``,
    checkpoints) holds each variable's slots and its optimizer's step count.
    """

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None):
        if not callable(optimizer_map):
            raise TypeError(f"MultiOptimizer: optimizer_map must be an OptimizerMap or a "
                            f"callable returning the optimizer of a variable, got "
                            f"{optimizer_map!r}")
        super().__init__(0.0, loss_scale_factor=loss_scale_factor, name=name)
        self._optimizer_map = optimizer_map
        inner = []
        for opt in list(getattr(optimizer_map, "values", lambda: ())()) + \
                [getattr(optimizer_map, "default_optimizer", None)]:
            if opt is not None and all(opt is not o for o in inner):
                opt.loss_scale_factor = self.loss_scale_factor
                inner.append(opt)
        self._inner_optimizers = inner
        self._owner = {}        # variable id -> the index of its optimizer

    @property
    def learning_rate(self):
        raise AttributeError("Learning rate cannot be accessed on a MultiOptimizer. Access "
                             "the learning rate on the individual sub-optimizers instead "
                             "(MultiOptimizer.optimizers).")

    @learning_rate.setter
    def learning_rate(self, value):
        if "_inner_optimizers" not in self.__dict__:    # (the base class's 0.0, unused)
            Optimizer.learning_rate.fset(self, value)
            return
        raise AttributeError("Learning rate cannot be set on a MultiOptimizer. Set the "
                             "learning rate on the individual sub-optimizers instead "
                             "(MultiOptimizer.optimizers).")

    lr = learning_rate

    @property
    def loss_scale_factor(self):
        return self.__dict__.get("_loss_scale_factor")

    @loss_scale_factor.setter
    def loss_scale_factor(self, value):
        self._loss_scale_factor = None if value is None else float(value)
        for opt in self.__dict__.get("_inner_optimizers", ()):
            opt.loss_scale_factor = self._loss_scale_factor

    @property
    def optimizers(self) -> list:
        """The optimizers, in the order :attr:`variables` lists their state."""
        return self._inner_optimizers

    @property
    def variables(self) -> list:
        out = [self._iterations]
        for opt in self._inner_optimizers:
            out.extend(opt.variables)
        return out

    def build(self, var_list):
        """Ask the map for each variable's optimizer and build every optimizer on its
        variables (once: a built MultiOptimizer ignores later calls, as Keras). A bad
        optimizer for any variable is an error before anything changes."""
        if self.built:
            return
        var_list = [_check_variable(v, "MultiOptimizer") for v in var_list]
        chosen = [(v, self._choose(v)) for v in var_list if v._id not in self._owner]
        for v, opt in chosen:
            self._assign(v, opt)
        groups = {}
        for v in var_list:
            groups.setdefault(self._owner[v._id], []).append(v)
        for idx, variables in sorted(groups.items()):
            self._inner_optimizers[idx].build(variables)
        self._built_vars = var_list
        self.built = True

    def _choose(self, var):
        """The optimizer the map gives ``var`` (checked; nothing recorded)."""
        return _check_inner(self._optimizer_map(var),
                            f"MultiOptimizer: the optimizer of {_var_label(var)}")

    def _assign(self, var, opt):
        """Record ``opt`` as the optimizer of ``var`` (listed in :attr:`optimizers`, with
        this ``loss_scale_factor``, if it is new)."""
        inner = self._inner_optimizers
        idx = next((k for k, o in enumerate(inner) if o is opt), None)
        if idx is None:
            idx = len(inner)
            opt.loss_scale_factor = self.loss_scale_factor
            inner.append(opt)
        self._owner[var._id] = idx

    def _owner_of(self, var):
        idx = self._owner.get(var._id) if isinstance(var, Variable) else None
        return None if idx is None else self._inner_optimizers[idx]

    def _apply(self, pairs):
        cls = "MultiOptimizer"
        if not pairs:
            raise ValueError(f"{cls}.apply_gradients: no (gradient, variable) pairs given")
        variables = [_check_variable(v, cls) for _, v in pairs]
        if not self.built:
            self.build(variables)
        if len(pairs) != len(self._owner):
            raise ValueError(f"{cls}.apply: gradients must match the trainable variables it was "
                             f"built with one-to-one; got {len(pairs)} gradients for "
                             f"{len(self._owner)} variables (nothing was updated)")
        unknown = [_var_label(v) for v in variables if v._id not in self._owner]
        if unknown:
            raise ValueError(f"{cls}.apply: unknown variables {unknown}; it can only update the "
                             "variables it was built with (nothing was updated)")
        groups = {}
        for g, v in pairs:
            if g is not None:
                _check_gradient(g, v, cls)
            groups.setdefault(self._owner[v._id], []).append((g, v))
        for idx, group in groups.items():
            if len({v._id for _, v in group}) != len(group):
                raise ValueError(f"{cls}.apply_gradients: a variable appears more than once "
                                 "(nothing was updated)")
            if all(g is None for g, _ in group):
                raise ValueError(f"{cls}.apply_gradients: no gradients provided for any "
                                 f"variable of the optimizer {self._inner_optimizers[idx].name}: "
                                 f"{[_var_label(v) for _, v in group]} (nothing was updated)")
        for idx in sorted(groups):
            self._inner_optimizers[idx]._apply(groups[idx])
        it = self._iterations
        with it._device.activate() if it._device.needs_switch else _NO_SWITCH:
            it._assign_array(it._value + 1)
        self._step_host += 1
        self._step_array = it._value
        return it

    def finalize_variable_values(self, var_list):
        """Each optimizer's ``finalize_variable_values`` on its variables of ``var_list``."""
        if not self.built:
            raise ValueError("MultiOptimizer.finalize_variable_values: the optimizer is not "
                             "built yet (it is built by its first step or by build())")
        groups = {}
        for v in var_list:
            opt = self._owner_of(v)
            if opt is None:
                raise ValueError(f"MultiOptimizer.finalize_variable_values: the variable "
                                 f"{_var_label(v)} is not one it was built with")
            groups.setdefault(id(opt), (opt, []))[1].append(v)
        for opt, variables in groups.values():
            opt.finalize_variable_values(variables)

    # --- slots: those of each variable's optimizer ----------------------------------------------
    def slot_names(self) -> list:
        names = []
        for opt in self._inner_optimizers:
            names.extend(n for n in opt.slot_names() if n not in names)
        return names

    def _known(self, var, who):
        opt = self._owner_of(var)
        if opt is None:
            raise ValueError(f"MultiOptimizer.{who}: the variable {_var_label(var)} is not one "
                             "it was built with (build it, or take a step, first)")
        return opt

    def get_slot(self, var, slot_name) -> Variable:
        return self._known(var, "get_slot").get_slot(var, slot_name)

    def _slots_for(self, var) -> dict:
        return self._known(var, "_slots_for")._slots_for(var)

    def _slot_state(self, var) -> dict:
        opt = self._owner_of(var)
        if opt is None:
            return {}
        state = opt._slot_state(var)
        if state:       # (the step count of the variable's optimizer goes with its slots)
            state["iterations"] = opt._iterations
        return state

    def _check_slot_restore(self, var, slot_name, shape, dtype):
        opt = self._owner_of(var)
        if opt is None:
            if self.built:
                return (f"the variable {_var_label(var)} is not one the MultiOptimizer was "
                        "built with")
            try:        # (restored before the first step: the map tells)
                opt = self._choose(var)
            except ValueError as exc:
                return str(exc)
        if slot_name == "iterations":
            it = opt._iterations._value
            if tuple(shape) != () or np.dtype(dtype) != it.dtype:
                return (f"'iterations' has shape {tuple(shape)} dtype {np.dtype(dtype).name}, "
                        f"the step count is a scalar {it.dtype.name}")
            return None
        return opt._check_slot_restore(var, slot_name, shape, dtype)

    def _restore_slot(self, var, slot_name, host_array):
        opt = self._owner_of(var)
        if opt is None:
            opt = self._choose(var)
            self._assign(var, opt)
        if slot_name == "iterations":
            it = opt._iterations
            with it._device.activate():
                it._assign_array(it._device.asarray(np.array(host_array, dtype=it._value.dtype)))
            return
        opt._restore_slot(var, slot_name, host_array)

    # --- config -------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """Keras 3's: the map serialized (an OptimizerMap's config, or a function by name),
        ``loss_scale_factor`` and ``name``."""
        mapping = self._optimizer_map
        if isinstance(mapping, OptimizerMap):
            mapping = serialize(mapping)
        else:
            from .saving import get_registered_name
            mapping = {"module": getattr(mapping, "__module__", None), "class_name": "function",
                       "config": get_registered_name(mapping), "registered_name": "function"}
        return {"optimizer_map": mapping, "loss_scale_factor": self.loss_scale_factor,
                "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from .saving import _custom_scope, custom_object
        config = dict(config)
        mapping = config.get("optimizer_map")
        if isinstance(mapping, dict):
            if mapping.get("class_name") == "function":
                with _custom_scope(custom_objects):
                    found = custom_object(mapping.get("config"))
                if found is None:
                    raise TypeError(f"MultiOptimizer.from_config: could not locate function "
                                    f"{mapping.get('config')!r}; register it with "
                                    "@gt.keras.saving.register_keras_serializable() or pass it "
                                    f"in custom_objects (full config: {mapping})")
                config["optimizer_map"] = found
            else:
                config["optimizer_map"] = OptimizerMap.from_config(
                    mapping.get("config", mapping), custom_objects)
        return cls(**config)

    def __repr__(self):
        return (f"<gt.optimizers.MultiOptimizer step={self._step_host} "
                f"optimizers={[o.name for o in self._inner_optimizers]}>")


_BY_NAME["multioptimizer"] = MultiOptimizer
__all__ += ["MultiOptimizer", "OptimizerMap"]
