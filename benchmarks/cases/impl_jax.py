"""JAX, op by op (eager) and compiled whole with ``jax.jit``.

Both run the same pure functions: ``jax.value_and_grad`` for the training steps (with
Adam written in ``jax.numpy``, Keras's form, as JAX itself ships no optimizer), ``jax.vjp``
for the op chain, ``jax.jacrev`` for the Jacobian, ``jax.jvp`` of ``jax.grad`` for the
Hessian-vector product (forward over reverse) and ``jax.grad`` of ``jax.grad`` for the
second-order case. The jit variant compiles each function once per shape during the warm-up.
"""
from __future__ import annotations

import os

import numpy as np

from .base import Implementation, Runner, Unsupported
from .spec import (BETA_1, BETA_2, CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS, CNN_PARAMS, EPSILON,
                   LEARNING_RATE, MLP_PARAMS)


def _functions(jax):
    """The pure functions of every case, written once for both variants."""
    jnp = jax.numpy
    lax = jax.lax

    def chain(x):
        def f(x):
            y = x
            for _ in range(CHAIN_STEPS):
                y = jnp.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
            return y
        y, vjp = jax.vjp(f, x)
        return y, vjp(jnp.ones_like(y))[0]

    def cross_entropy(logits, labels):
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def mlp_loss(params, x, labels):
        w1, b1, w2, b2, w3, b3 = params
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return cross_entropy(h @ w3 + b3, labels)

    def cnn_loss(params, x, labels):
        k1, c1, k2, c2, w, b = params
        dims = ("NHWC", "HWIO", "NHWC")

        def block(h, k, c):
            h = jax.nn.relu(lax.conv_general_dilated(h, k, (1, 1), "SAME",
                                                     dimension_numbers=dims) + c)
            return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

        h = block(block(x, k1, c1), k2, c2)
        return cross_entropy(h.reshape(h.shape[0], -1) @ w + b, labels)

    def train_step(loss_fn):
        def step(params, m, v, t, x, labels):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
            t = t + 1.0
            alpha = LEARNING_RATE * jnp.sqrt(1.0 - BETA_2 ** t) / (1.0 - BETA_1 ** t)
            m = [mi + (g - mi) * (1.0 - BETA_1) for mi, g in zip(m, grads)]
            v = [vi + (g * g - vi) * (1.0 - BETA_2) for vi, g in zip(v, grads)]
            params = [p - alpha * mi / (jnp.sqrt(vi) + EPSILON)
                      for p, mi, vi in zip(params, m, v)]
            return params, m, v, t, loss, grads
        return step

    def jacobian(w, x):
        return jax.jacrev(lambda x: jnp.tanh(w @ x))(x)

    def hvp(w, x, v):
        def f(x):
            return 0.5 * jnp.sum(jnp.tanh(w @ x) ** 2)
        return jax.jvp(jax.grad(f), (x,), (v,))[1]

    def grad_of_grad_norm(params, x, labels):
        def norm2(params):
            grads = jax.grad(mlp_loss)(params, x, labels)
            return sum(jnp.sum(g * g) for g in grads)
        return jax.grad(norm2)(params)

    return {"tanh": jnp.tanh, "chain": chain, "mlp_step": train_step(mlp_loss), "cnn_step": train_step(cnn_loss),
            "jacobian": jacobian, "hvp": hvp, "secondorder": grad_of_grad_norm}


class _Call(Runner):
    """Calls ``fn(*args)``; ``sync`` blocks on the last result."""

    def __init__(self, jax, fn, args, outputs):
        self.jax = jax
        self.fn = fn
        self.args = args
        self.outputs = outputs
        self.last = None

    def step(self):
        self.last = self.fn(*self.args)

    def sync(self):
        self.jax.block_until_ready(self.last)

    def check(self):
        self.step()
        return self.outputs(self.last)


class _Training(Runner):
    def __init__(self, jax, fn, names, params, x, labels):
        self.jax = jax
        self.fn = fn
        self.names = names
        jnp = jax.numpy
        self.state = (params, [jnp.zeros_like(p) for p in params],
                      [jnp.zeros_like(p) for p in params], jnp.zeros((), jnp.float32))
        self.x = x
        self.labels = labels
        self.last = None

    def step(self):
        params, m, v, t, loss, grads = self.fn(*self.state, self.x, self.labels)
        self.state = (params, m, v, t)
        self.last = loss

    def sync(self):
        self.jax.block_until_ready(self.state)

    def check(self):
        before = [np.asarray(p) for p in self.state[0]]
        params, m, v, t, loss, grads = self.fn(*self.state, self.x, self.labels)
        self.state = (params, m, v, t)
        out = {"loss": np.asarray(loss).reshape(())}
        for name, g, b, a in zip(self.names, grads, before, params):
            out["grad/" + name] = np.asarray(g)
            out["update/" + name] = np.asarray(a) - b
        return out


class JaxEager(Implementation):
    """JAX without ``jit``: each primitive dispatched on its own."""

    name = "jax"
    jit = False

    def __init__(self, device: str):
        super().__init__(device)
        if device == "cpu":
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
        try:
            import jax
        except ImportError as exc:
            raise Unsupported(f"JAX is not installed: {exc}") from exc
        self.jax = jax
        try:
            kind = "cpu" if device == "cpu" else "gpu"
            self.dev = jax.devices(kind)[int(device.partition(":")[2] or 0)]
        except (RuntimeError, IndexError) as exc:
            raise Unsupported(f"JAX has no {device} device: {exc}") from exc
        functions = _functions(jax)
        self.fns = {k: jax.jit(f) for k, f in functions.items()} if self.jit else functions

    @property
    def label(self) -> str:
        return f"JAX {self.jax.__version__}" + (" jit" if self.jit else " eager")

    @property
    def version(self) -> str:
        return self.jax.__version__

    def _a(self, array):
        return self.jax.device_put(np.ascontiguousarray(array), self.dev)

    def case_notape(self, p, data):
        return _Call(self.jax, self.fns["tanh"], (self._a(data["x"]),),
                     lambda r: {"y": np.asarray(r)})

    def case_opchain(self, p, data):
        return _Call(self.jax, self.fns["chain"], (self._a(data["x"]),),
                     lambda r: {"y": np.asarray(r[0]), "grad/x": np.asarray(r[1])})

    def case_mlp(self, p, data):
        params = [self._a(data[k]) for k in MLP_PARAMS]
        return _Training(self.jax, self.fns["mlp_step"], MLP_PARAMS, params,
                         self._a(data["x"]), self._a(data["labels"]))

    def case_cnn(self, p, data):
        params = [self._a(data[k]) for k in CNN_PARAMS]
        return _Training(self.jax, self.fns["cnn_step"], CNN_PARAMS, params,
                         self._a(data["x"]), self._a(data["labels"]))

    def case_jacobian(self, p, data):
        return _Call(self.jax, self.fns["jacobian"], (self._a(data["w"]), self._a(data["x"])),
                     lambda r: {"jacobian": np.asarray(r)})

    def case_hvp(self, p, data):
        args = (self._a(data["w"]), self._a(data["x"]), self._a(data["v"]))
        return _Call(self.jax, self.fns["hvp"], args, lambda r: {"hvp": np.asarray(r)})

    def case_secondorder(self, p, data):
        params = [self._a(data[k]) for k in MLP_PARAMS]
        return _Call(self.jax, self.fns["secondorder"],
                     (params, self._a(data["x"]), self._a(data["labels"])),
                     lambda r: {"grad/" + k: np.asarray(g) for k, g in zip(MLP_PARAMS, r)})


class JaxJit(JaxEager):
    """JAX with every case compiled whole by ``jax.jit``."""

    name = "jax-jit"
    jit = True
