"""TensorFlow 2 eager (no ``tf.function``): the API gradtape copies.

Training steps use ``tf.GradientTape`` and ``tf.keras.optimizers.Adam``; the Jacobian
``tape.jacobian`` (vectorised with pfor); the Hessian-vector product a
``tf.autodiff.ForwardAccumulator`` over a tape (forward over reverse); the second-order case
nested tapes, with the loss written through ``tf.nn.log_softmax`` because TensorFlow's fused
sparse cross-entropy has no second derivative.
"""
from __future__ import annotations

import contextlib
import os


from .base import BareCall, Implementation, Runner, Unsupported, to_host, training_outputs
from .spec import (BETA_1, BETA_2, CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS, CNN_PARAMS, EPSILON,
                   LEARNING_RATE, MLP_PARAMS, N_CLASSES)


class _Runner(Runner):
    def __init__(self, scope):
        self.scope = scope

    def sync(self):
        """Eager TensorFlow returns when the op has run (CPU) or syncs on read (GPU)."""


class _Call(_Runner):
    def __init__(self, scope, fn, outputs):
        super().__init__(scope)
        self.fn = fn
        self.outputs = outputs
        self.last = None

    def step(self):
        with self.scope():
            self.last = self.fn()

    def sync(self):
        if self.last is not None:
            for t in (self.last if isinstance(self.last, (list, tuple)) else [self.last]):
                t.numpy()

    def check(self):
        self.step()
        return self.outputs(self.last)


class _Training(_Runner):
    def __init__(self, tf, scope, names, data, model):
        super().__init__(scope)
        self.tf = tf
        self.names = names
        self.model = model
        with scope():
            self.params = [tf.Variable(data[k], name=k) for k in names]
            self.x = tf.constant(data["x"])
            self.labels = tf.constant(data["labels"])
        self.opt = tf.keras.optimizers.Adam(learning_rate=LEARNING_RATE, beta_1=BETA_1,
                                            beta_2=BETA_2, epsilon=EPSILON)

    def loss_and_grads(self):
        tf = self.tf
        with tf.GradientTape() as tape:
            logits = self.model(self.x, *self.params)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=self.labels, logits=logits))
        return loss, tape.gradient(loss, self.params)

    def step(self):
        with self.scope():
            _, grads = self.loss_and_grads()
            self.opt.apply_gradients(zip(grads, self.params))

    def sync(self):
        self.params[-1].numpy()

    def check(self):
        before = [p.numpy().copy() for p in self.params]
        with self.scope():
            loss, grads = self.loss_and_grads()
            host_grads = [to_host(g) for g in grads]
            self.opt.apply_gradients(zip(grads, self.params))
        return training_outputs(self.names, loss, host_grads, before,
                                [p.numpy() for p in self.params])


class TensorflowEager(Implementation):
    """TensorFlow 2 in eager mode on the CPU, or on a GPU when asked and one is visible."""

    name = "tensorflow"

    def __init__(self, device: str):
        super().__init__(device)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        try:
            import tensorflow as tf
        except ImportError as exc:
            raise Unsupported(f"TensorFlow is not installed: {exc}") from exc
        self.tf = tf
        threads = os.environ.get("GRADTAPE_BENCH_THREADS")
        if threads:
            tf.config.threading.set_intra_op_parallelism_threads(int(threads))
        if device == "cpu":
            self.scope = contextlib.nullcontext
        else:
            index = int(device.partition(":")[2] or 0)
            if len(tf.config.list_physical_devices("GPU")) <= index:
                raise Unsupported("this TensorFlow build sees no GPU")
            self.scope = lambda: tf.device(f"/GPU:{index}")

    @property
    def label(self) -> str:
        return f"TensorFlow {self.tf.__version__} eager"

    @property
    def version(self) -> str:
        return self.tf.__version__

    def _c(self, array):
        with self.scope():
            return self.tf.constant(array)

    def case_notape(self, p, data):
        return BareCall(self.tf.tanh, self._c(data["x"]))

    def case_opchain(self, p, data):
        tf = self.tf
        x = self._c(data["x"])

        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = x
                for _ in range(CHAIN_STEPS):
                    y = tf.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
            return y, tape.gradient(y, x)

        return _Call(self.scope, run, lambda r: {"y": r[0].numpy(), "grad/x": r[1].numpy()})

    def _mlp(self):
        tf = self.tf

        def model(x, w1, b1, w2, b2, w3, b3):
            h = tf.nn.relu(x @ w1 + b1)
            h = tf.nn.relu(h @ w2 + b2)
            return h @ w3 + b3
        return model

    def case_mlp(self, p, data):
        return _Training(self.tf, self.scope, MLP_PARAMS, data, self._mlp())

    def case_cnn(self, p, data):
        tf = self.tf

        def model(x, k1, c1, k2, c2, w, b):
            h = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(x, k1, 1, "SAME") + c1), 2, 2, "VALID")
            h = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(h, k2, 1, "SAME") + c2), 2, 2, "VALID")
            return tf.reshape(h, [h.shape[0], -1]) @ w + b
        return _Training(tf, self.scope, CNN_PARAMS, data, model)

    def case_jacobian(self, p, data):
        tf = self.tf
        w, x = self._c(data["w"]), self._c(data["x"])

        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.tanh(tf.linalg.matvec(w, x))
            return tape.jacobian(y, x)

        return _Call(self.scope, run, lambda r: {"jacobian": r.numpy()})

    def case_hvp(self, p, data):
        tf = self.tf
        w, x, v = self._c(data["w"]), self._c(data["x"]), self._c(data["v"])

        def run():
            with tf.autodiff.ForwardAccumulator(x, v) as acc:
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = 0.5 * tf.reduce_sum(tf.square(tf.tanh(tf.linalg.matvec(w, x))))
                g = tape.gradient(y, x)
            return acc.jvp(g)

        return _Call(self.scope, run, lambda r: {"hvp": r.numpy()})

    def case_secondorder(self, p, data):
        tf = self.tf
        model = self._mlp()
        with self.scope():
            params = [tf.Variable(data[k], name=k) for k in MLP_PARAMS]
            x = tf.constant(data["x"])
            onehot = tf.one_hot(data["labels"], N_CLASSES, dtype=tf.float32)

        def run():
            with tf.GradientTape() as outer:
                with tf.GradientTape() as inner:
                    logp = tf.nn.log_softmax(model(x, *params))
                    loss = -tf.reduce_mean(tf.reduce_sum(onehot * logp, axis=1))
                grads = inner.gradient(loss, params)
                norm2 = tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads])
            return outer.gradient(norm2, params)

        return _Call(self.scope, run,
                     lambda r: {"grad/" + k: g.numpy() for k, g in zip(MLP_PARAMS, r)})
