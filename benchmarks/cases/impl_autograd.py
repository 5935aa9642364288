"""HIPS autograd: NumPy functions differentiated by tracing (the original tape on NumPy).

Training steps use ``autograd.value_and_grad`` with Adam written by hand in NumPy (autograd's
own ``adam`` runs a whole optimisation loop, not one step); the CNN uses an im2col convolution
written with ``autograd.numpy`` (autograd has no fast convolution); the Jacobian uses
``autograd.jacobian`` (one backward pass per output), the Hessian-vector product
``autograd.hessian_vector_product`` (reverse over reverse) and the second-order case ``grad``
of ``grad``.
"""
from __future__ import annotations

import numpy as np

from .base import BareCall, HandAdam, Implementation, Runner, Unsupported, training_outputs
from .spec import CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS, CNN_PARAMS, MLP_PARAMS


class _Call(Runner):
    def __init__(self, fn, outputs):
        self.fn = fn
        self.outputs = outputs

    def step(self):
        return self.fn()

    def check(self):
        return self.outputs(self.fn())


class _Training(Runner):
    def __init__(self, value_and_grad, loss, names, data):
        self.names = names
        self.vg = value_and_grad(loss)
        self.params = [np.array(data[k], copy=True) for k in names]
        self.x = data["x"]
        self.labels = data["labels"].astype(np.int64)
        self.adam = HandAdam(np, self.params)

    def step(self):
        _, grads = self.vg(self.params, self.x, self.labels)
        self.adam.update(self.params, grads)

    def check(self):
        before = [p.copy() for p in self.params]
        loss, grads = self.vg(self.params, self.x, self.labels)
        self.adam.update(self.params, grads)
        return training_outputs(self.names, loss, grads, before, self.params)


class Autograd(Implementation):
    """HIPS autograd on NumPy (CPU only)."""

    name = "autograd"
    traced_memory = True

    def __init__(self, device: str):
        super().__init__(device)
        if device != "cpu":
            raise Unsupported("autograd runs on NumPy only")
        try:
            import autograd
            import autograd.numpy as anp
            from autograd.scipy.special import logsumexp
        except ImportError as exc:
            raise Unsupported(f"autograd is not installed: {exc}") from exc
        self.ag = autograd
        self.anp = anp
        self.logsumexp = logsumexp

    @property
    def label(self) -> str:
        from importlib.metadata import version
        return f"autograd {version('autograd')}"

    @property
    def version(self) -> str:
        from importlib.metadata import version
        return version("autograd")

    def _cross_entropy(self, logits, labels):
        rows = np.arange(logits.shape[0])
        return self.anp.mean(self.logsumexp(logits, axis=1) - logits[rows, labels])

    def _mlp_loss(self, params, x, labels):
        anp = self.anp
        w1, b1, w2, b2, w3, b3 = params
        h = anp.maximum(anp.dot(x, w1) + b1, 0.0)
        h = anp.maximum(anp.dot(h, w2) + b2, 0.0)
        return self._cross_entropy(anp.dot(h, w3) + b3, labels)

    def _cnn_loss(self, params, x, labels):
        anp = self.anp
        k1, c1, k2, c2, w, b = params

        def conv(x, k):
            n, h, wd, c = x.shape
            padded = anp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="constant")
            cols = anp.concatenate([padded[:, i:i + h, j:j + wd, :]
                                    for i in range(3) for j in range(3)], axis=3)
            y = anp.dot(anp.reshape(cols, (n * h * wd, 9 * c)), anp.reshape(k, (9 * c, -1)))
            return anp.reshape(y, (n, h, wd, -1))

        def pool(x):
            n, h, wd, c = x.shape
            windows = anp.reshape(x, (n, h // 2, 2, wd // 2, 2, c))
            return anp.max(anp.max(windows, axis=4), axis=2)

        h = pool(anp.maximum(conv(x, k1) + c1, 0.0))
        h = pool(anp.maximum(conv(h, k2) + c2, 0.0))
        return self._cross_entropy(anp.dot(anp.reshape(h, (h.shape[0], -1)), w) + b, labels)

    def case_notape(self, p, data):
        return BareCall(self.anp.tanh, data["x"])

    def case_opchain(self, p, data):
        anp = self.anp
        x = data["x"]

        def f(x):
            y = x
            for _ in range(CHAIN_STEPS):
                y = anp.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
            return y

        def run():
            vjp, y = self.ag.make_vjp(f)(x)
            return y, vjp(np.ones_like(y))

        return _Call(run, lambda r: {"y": r[0], "grad/x": r[1]})

    def case_mlp(self, p, data):
        return _Training(self.ag.value_and_grad, self._mlp_loss, MLP_PARAMS, data)

    def case_cnn(self, p, data):
        return _Training(self.ag.value_and_grad, self._cnn_loss, CNN_PARAMS, data)

    def case_jacobian(self, p, data):
        anp = self.anp
        w, x = data["w"], data["x"]
        jac = self.ag.jacobian(lambda x: anp.tanh(anp.dot(w, x)))
        return _Call(lambda: jac(x), lambda r: {"jacobian": r})

    def case_hvp(self, p, data):
        anp = self.anp
        w, x, v = data["w"], data["x"], data["v"]
        hvp = self.ag.hessian_vector_product(
            lambda x: 0.5 * anp.sum(anp.tanh(anp.dot(w, x)) ** 2))
        return _Call(lambda: hvp(x, v), lambda r: {"hvp": r})

    def case_secondorder(self, p, data):
        anp = self.anp
        params = [data[k] for k in MLP_PARAMS]
        x, labels = data["x"], data["labels"].astype(np.int64)
        loss_grad = self.ag.grad(self._mlp_loss)

        def norm2(params):
            return sum(anp.sum(g * g) for g in loss_grad(params, x, labels))

        grad_norm2 = self.ag.grad(norm2)
        return _Call(lambda: grad_norm2(params),
                     lambda r: {"grad/" + k: g for k, g in zip(MLP_PARAMS, r)})
