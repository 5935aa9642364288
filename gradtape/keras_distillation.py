"""``keras.distillation``: knowledge distillation, as Keras 3.15's.

:class:`Distiller` is a model that trains a ``student`` against a frozen ``teacher``: its
loss is ``student_loss_weight * student_loss + (1 - student_loss_weight) * sum(weight_i *
distillation_loss_i)``, where the student loss is the one given to ``compile`` (on the
labels) and each distillation loss compares teacher and student outputs:
:class:`LogitsDistillation` the final logits divided by a temperature,
:class:`FeatureDistillation` the outputs of named intermediate layers (functional and
Sequential models) or the final outputs. ``fit`` and ``evaluate`` report ``loss``,
``student_loss``, ``distillation_loss`` and ``total_loss``; calling the distiller calls the
student.

As Keras: a loss given by name resolves to its function, so ``LogitsDistillation``'s
default ``"kl_divergence"`` compares the temperature-scaled logits directly; a
``keras.losses.KLDivergence`` object compares their softmaxes and scales by the temperature
squared.
"""
from __future__ import annotations

from . import keras_tree as tree
from . import losses as _losses
from . import metrics as _metrics

__all__ = ["DistillationLoss", "Distiller", "FeatureDistillation", "LogitsDistillation"]


def _loss_fn(item):
    if item is None:
        return None
    if isinstance(item, str):
        return _losses.get(item)
    return item


def _ops():
    from . import keras_ops
    return keras_ops


def _sum(values):
    ops = _ops()
    flat = tree.flatten(values)
    return ops.sum(ops.stack([ops.convert_to_tensor(v, "float32") for v in flat]))


def _serialize_loss(loss):
    return tree.map_structure(lambda f: None if f is None else _losses.serialize(f), loss)


def _deserialize_loss(config):
    def one(c):
        return _losses.deserialize(c) if isinstance(c, dict) else c
    if isinstance(config, dict) and "class_name" in config:
        return one(config)
    return tree.map_structure(one, config)


class DistillationLoss:
    """The base of distillation losses: :meth:`compute_loss` (a scalar from teacher and
    student outputs), with checks of the outputs and of the two models."""

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        raise NotImplementedError("Subclasses must implement compute_loss")

    def validate_outputs(self, teacher_outputs, student_outputs):
        tree.assert_same_structure(teacher_outputs, student_outputs)

    def validate_model_compatibility(self, teacher, student):
        pass


def _symbolic(model):
    return getattr(model, "inputs", None) is not None


class FeatureDistillation(DistillationLoss):
    """``loss`` (default mean squared error; a structure of losses for structured outputs,
    ``None`` to skip one) between the outputs of ``teacher_layer_name`` and
    ``student_layer_name`` (the models' final outputs when not given), averaged."""

    def __init__(self, loss="mse", teacher_layer_name=None, student_layer_name=None):
        self.teacher_layer_name = teacher_layer_name
        self.student_layer_name = student_layer_name
        self.loss = tree.map_structure(_loss_fn, loss)
        if all(f is None for f in tree.flatten(self.loss)):
            raise ValueError("The `loss` argument in `FeatureDistillation` must contain at "
                             "least one non-`None` value.")

    def validate_model_compatibility(self, teacher, student):
        if self.teacher_layer_name is not None or self.student_layer_name is not None:
            bad = [w for w, m in (("teacher", teacher), ("student", student))
                   if not _symbolic(m)]
            if bad:
                raise ValueError(
                    "FeatureDistillation with specific layer names requires Functional or "
                    f"Sequential models. The {' and '.join(bad)} model(s) appear to be "
                    "subclassed (no symbolic inputs/outputs). Either use Functional/Sequential "
                    "models, or use FeatureDistillation without layer names (to distill final "
                    "outputs only), or use LogitsDistillation instead.")
        for who, model, name in (("teacher", teacher, self.teacher_layer_name),
                                 ("student", student, self.student_layer_name)):
            if name is not None:
                try:
                    model.get_layer(name=name)
                except ValueError as e:
                    raise ValueError(f"In {who} model: {e}") from None

    def validate_outputs(self, teacher_outputs, student_outputs):
        super().validate_outputs(teacher_outputs, student_outputs)
        try:
            tree.assert_same_structure(self.loss, teacher_outputs)
        except ValueError as e:
            raise ValueError(f"Loss structure mismatch. Loss structure: {self.loss}, "
                             f"Output structure: {teacher_outputs}. Error: {e}") from None

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        ops = _ops()

        def apply(fn, t, s):
            return 0.0 if fn is None else ops.mean(fn(t, s))
        return _sum(tree.map_structure(apply, self.loss, teacher_outputs, student_outputs))

    def get_config(self):
        return {"loss": _serialize_loss(self.loss), "teacher_layer_name": self.teacher_layer_name,
                "student_layer_name": self.student_layer_name}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["loss"] = _deserialize_loss(config["loss"])
        return cls(**config)


class LogitsDistillation(DistillationLoss):
    """``loss`` (default ``"kl_divergence"``) between teacher and student logits divided by
    ``temperature``; a ``KLDivergence`` object compares their softmaxes, times
    ``temperature ** 2``. A structure of losses matches structured outputs."""

    def __init__(self, temperature=3.0, loss="kl_divergence"):
        self.temperature = temperature
        self.loss = tree.map_structure(_loss_fn, loss)
        if all(f is None for f in tree.flatten(self.loss)):
            raise ValueError("At least one loss must be non-`None`.")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise ValueError(f"temperature must be a number, got {type(temperature)}")
        if temperature <= 0.0:
            raise ValueError("temperature must be positive.")

    def compute_loss(self, teacher_outputs, student_outputs, **kwargs):
        ops = _ops()
        temp = self.temperature
        t_scaled = tree.map_structure(lambda v: ops.divide(v, temp), teacher_outputs)
        s_scaled = tree.map_structure(lambda v: ops.divide(v, temp), student_outputs)

        def apply(fn, t, s):
            if fn is None:
                return 0.0
            if isinstance(fn, _losses.KLDivergence):
                value = ops.mean(fn(ops.softmax(t, axis=-1), ops.softmax(s, axis=-1)))
                return value * (temp ** 2)
            return ops.mean(fn(t, s))
        return _sum(tree.map_structure(apply, self.loss, t_scaled, s_scaled))

    def get_config(self):
        return {"temperature": self.temperature, "loss": _serialize_loss(self.loss)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["loss"] = _deserialize_loss(config["loss"])
        return cls(**config)


_LOSS_CLASSES = {"FeatureDistillation": FeatureDistillation,
                 "LogitsDistillation": LogitsDistillation}


def _build_distiller_class():
    from .layers import Model, Sequential

    class Distiller(Model):
        """A student trained against a frozen teacher (see the module's description)."""

        def __init__(self, teacher, student, distillation_losses,
                     distillation_loss_weights=None, student_loss_weight=0.5,
                     name="distiller", **kwargs):
            super().__init__(name=name, **kwargs)
            for who, m in (("Teacher", teacher), ("Student", student)):
                if not isinstance(m, Model):
                    raise ValueError(f"{who} must be a keras.Model, got {type(m)}")
            self._check_compatible(teacher, student)
            if isinstance(student_loss_weight, bool) or \
                    not isinstance(student_loss_weight, (int, float)):
                raise ValueError(f"student_loss_weight must be a number, got "
                                 f"{type(student_loss_weight)}")
            if not 0.0 <= student_loss_weight <= 1.0:
                raise ValueError(f"student_loss_weight must be between 0.0 and 1.0, got "
                                 f"{student_loss_weight}")
            if distillation_losses is None:
                raise ValueError("'distillation_losses' cannot be `None`. Provide a "
                                 "distillation loss (e.g., LogitsDistillation or "
                                 "FeatureDistillation) or a list of distillation losses.")
            if not isinstance(distillation_losses, (list, tuple)):
                losses, weights = [distillation_losses], [1.0]
            else:
                losses = list(distillation_losses)
                weights = ([1.0] * len(losses) if distillation_loss_weights is None
                           else list(distillation_loss_weights))
                if len(weights) != len(losses):
                    raise ValueError(f"Number of distillation_loss_weights ({len(weights)}) "
                                     f"must match number of distillation_losses "
                                     f"({len(losses)})")
            for loss in losses:
                loss.validate_model_compatibility(teacher, student)
            self.teacher = teacher
            self.student = student
            self.student_loss_weight = student_loss_weight
            self.__dict__["distillation_losses"] = losses
            self.__dict__["distillation_loss_weights"] = weights
            self.__dict__["_teacher_extractor"] = self._extractor(
                teacher, [getattr(v, "teacher_layer_name", None) for v in losses])
            self.__dict__["_student_extractor"] = self._extractor(
                student, [getattr(v, "student_layer_name", None) for v in losses])
            teacher.trainable = False
            self.__dict__["_trackers"] = [
                _metrics.Mean(name="loss"), _metrics.Mean(name="student_loss"),
                _metrics.Mean(name="distillation_loss"), _metrics.Mean(name="total_loss")]

        # --- checks and feature extraction --------------------------------------------------
        @staticmethod
        def _check_compatible(teacher, student):
            def shapes(a, b, what):
                a, b = tuple(a), tuple(b)
                if len(a) != len(b):
                    raise ValueError(f"Teacher and student {what} shapes have different "
                                     f"dimensions. Teacher: {a}, Student: {b}.")
                if any(x is not None and y is not None and x != y for x, y in zip(a, b)):
                    raise ValueError(f"Teacher and student {what} shapes are incompatible. "
                                     f"Teacher: {a}, Student: {b}. All dimensions must "
                                     "match.")

            def dtypes(a, b, what):
                if a != b:
                    raise ValueError(f"Teacher and student {what} dtypes must match. "
                                     f"Teacher: {a}, Student: {b}.")
            for what in ("inputs", "outputs"):
                t, s = getattr(teacher, what, None), getattr(student, what, None)
                if t is None or s is None:
                    continue
                tree.map_structure(lambda a, b: shapes(a.shape, b.shape, what[:-1]), t, s)
                tree.map_structure(lambda a, b: dtypes(a.dtype, b.dtype, what[:-1]), t, s)

        @staticmethod
        def _extractor(model, names):
            names = list(dict.fromkeys(n for n in names if n))
            if not names:
                return None
            if getattr(model, "inputs", None) is None:
                raise ValueError(f"Cannot create feature extractor for {model.name}. The "
                                 "model has no symbolic inputs attribute.")
            final = model.layers[-1].output if isinstance(model, Sequential) else model.output
            outputs = {"final_output": final}
            for n in names:
                outputs[n] = model.get_layer(name=n).output
            return Model(inputs=model.inputs, outputs=outputs,
                         name=f"{model.name}_multi_feature_extractor")

        def _features(self, who, x, y_pred=None):
            if who == "teacher":
                ext = self._teacher_extractor
                return ext(x, training=False) if ext is not None else \
                    {"final_output": self.teacher(x, training=False)}
            ext = self._student_extractor
            return ext(x, training=True) if ext is not None else {"final_output": y_pred}

        # --- the model ----------------------------------------------------------------------
        def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
            """``loss``: the student's loss on the labels (required); ``metrics`` a list."""
            if loss is None:
                raise ValueError("'loss' cannot be `None`.")
            if metrics is not None and not isinstance(metrics, (list, tuple)):
                raise ValueError(f"metrics must be a list or tuple, got {type(metrics)}")
            student_loss = tree.map_structure(_loss_fn, loss)
            super().compile(optimizer=optimizer, loss=None, metrics=metrics, **kwargs)
            self.__dict__["_student_loss"] = student_loss
            self.__dict__["_student_loss_config"] = loss

        def call(self, inputs, training=None, **kwargs):
            return self.student(inputs, training=training, **kwargs)

        @property
        def metrics(self):
            if not self.__dict__.get("_is_compiled"):
                return []
            return list(self._trackers) + list(self.compiled_metrics.metrics)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            """The weighted student and distillation losses (see the module)."""
            ops = _ops()
            if y_pred is None:
                y_pred = self(x, training=training)
            student_loss = 0.0
            if self.student_loss_weight > 0.0 and y is not None:
                values = tree.flatten(tree.map_structure(lambda f, t, p: f(t, p),
                                                         self._student_loss, y, y_pred))
                student_loss = _sum(values) if len(values) > 1 else values[0]
                if len(getattr(student_loss, "shape", ())) > 0:
                    student_loss = ops.mean(student_loss)
            distill = 0.0
            if self.student_loss_weight < 1.0:
                teacher_f = self._features("teacher", x)
                student_f = self._features("student", x, y_pred)
                for loss, weight in zip(self.distillation_losses,
                                        self.distillation_loss_weights):
                    t_name = getattr(loss, "teacher_layer_name", None)
                    if t_name is not None:
                        s_name = loss.student_layer_name or "final_output"
                        t_out, s_out = teacher_f[t_name], student_f[s_name]
                    else:
                        t_out, s_out = teacher_f["final_output"], y_pred
                    loss.validate_outputs(t_out, s_out)
                    value = loss.compute_loss(t_out, s_out)
                    if len(getattr(value, "shape", ())) > 0:
                        raise ValueError(f"Distillation loss {type(loss).__name__} returned a "
                                         f"non-scalar loss with shape {tuple(value.shape)}. "
                                         "The compute_loss method must return a scalar "
                                         "tensor.")
                    distill = ops.add(distill, ops.multiply(weight, value))
            w = self.student_loss_weight
            total = ops.add(ops.multiply(w, student_loss), ops.multiply(1.0 - w, distill))
            loss_t, student_t, distill_t, total_t = self._trackers
            student_t.update_state(student_loss)
            distill_t.update_state(distill)
            total_t.update_state(total)
            loss_t.update_state(total)
            return total

        def reset_metrics(self):
            for m in self.metrics:
                m.reset_state()

        def get_config(self):
            from .saving import serialize_layer
            from .mixed_precision import serialize as _policy
            return {"name": self.name, "trainable": self.trainable,
                    "dtype": _policy(self.dtype_policy),
                    "teacher": serialize_layer(self.teacher),
                    "student": serialize_layer(self.student),
                    "distillation_losses": [
                        {"module": "keras.distillation", "class_name": type(v).__name__,
                         "config": v.get_config(), "registered_name": None}
                        for v in self.distillation_losses],
                    "distillation_loss_weights": list(self.distillation_loss_weights),
                    "student_loss_weight": self.student_loss_weight}

        @classmethod
        def from_config(cls, config, custom_objects=None):
            from .saving import deserialize_layer
            config = dict(config)
            config.pop("trainable", None)
            config.pop("dtype", None)
            teacher = deserialize_layer(config.pop("teacher"), custom_objects)
            student = deserialize_layer(config.pop("student"), custom_objects)
            losses = []
            for c in config.pop("distillation_losses"):
                kind = _LOSS_CLASSES.get(c.get("class_name"))
                if kind is None:
                    raise ValueError(f"Distiller.from_config: unknown distillation loss "
                                     f"{c.get('class_name')!r}")
                losses.append(kind.from_config(c.get("config") or {}))
            return cls(teacher, student, losses, **config)

    return Distiller


Distiller = _build_distiller_class()
Distiller.__qualname__ = "Distiller"
Distiller.__module__ = __name__
