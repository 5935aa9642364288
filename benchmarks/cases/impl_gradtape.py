"""gradtape, written the way a TensorFlow 2 user would write each case.

Training steps use ``gt.GradientTape``, ``gt.nn`` and ``gt.optimizers.Adam``; the Jacobian
uses ``tape.jacobian``; the Hessian-vector product uses ``gt.hvp`` (forward over reverse)
when the library has it, else two nested tapes; the second-order case uses nested tapes.
A case whose API is missing is skipped with the name of what is missing.
"""
from __future__ import annotations

import os

from .base import BareCall, Implementation, Runner, Unsupported, to_host, training_outputs
from .spec import (BETA_1, BETA_2, CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS, CNN_PARAMS, EPSILON,
                   LEARNING_RATE, MLP_PARAMS)


def _need(obj, path: str):
    """``obj.<path>`` or :class:`Unsupported` naming the missing API."""
    value = obj
    for part in path.split(".")[1:]:
        value = getattr(value, part, None)
        if value is None:
            raise Unsupported(f"{path} is missing")
    return value


class _Adam:
    """``gt.optimizers.Adam`` when present, else the same update written with gradtape ops."""

    def __init__(self, gt, params):
        self.gt = gt
        optimizers = getattr(gt, "optimizers", None)
        adam = getattr(optimizers, "Adam", None)
        if adam is not None:
            self.opt = adam(learning_rate=LEARNING_RATE, beta_1=BETA_1, beta_2=BETA_2,
                            epsilon=EPSILON)
            self.note = ""
        else:
            self.opt = None
            self.t = 0
            self.m = [gt.zeros_like(p) for p in params]
            self.v = [gt.zeros_like(p) for p in params]
            self.note = "Adam written with gradtape ops (gt.optimizers.Adam is missing)"

    def apply(self, grads, params):
        if self.opt is not None:
            self.opt.apply_gradients(zip(grads, params))
            return
        gt = self.gt
        self.t += 1
        alpha = LEARNING_RATE * (1.0 - BETA_2 ** self.t) ** 0.5 / (1.0 - BETA_1 ** self.t)
        for i, (g, p) in enumerate(zip(grads, params)):
            self.m[i] = self.m[i] + (g - self.m[i]) * (1.0 - BETA_1)
            self.v[i] = self.v[i] + (g * g - self.v[i]) * (1.0 - BETA_2)
            p.assign_sub(self.m[i] / (gt.sqrt(self.v[i]) + EPSILON) * alpha)


class _Runner(Runner):
    def __init__(self, device):
        self.device = device

    def sync(self):
        self.device.synchronize()


class _Training(_Runner):
    def __init__(self, gt, device, names, data, model):
        super().__init__(device)
        self.gt = gt
        self.names = names
        self.model = model
        self.params = [gt.Variable(data[k], name=k) for k in names]
        self.x = gt.constant(data["x"])
        self.labels = gt.constant(data["labels"])
        self.sparse_ce = _need(gt, "gt.nn.sparse_softmax_cross_entropy_with_logits")
        self.adam = _Adam(gt, self.params)
        self.note = self.adam.note

    def loss_and_grads(self):
        gt = self.gt
        with gt.GradientTape() as tape:
            logits = self.model(self.x, *self.params)
            loss = gt.reduce_mean(self.sparse_ce(labels=self.labels, logits=logits))
        return loss, tape.gradient(loss, self.params)

    def step(self):
        _, grads = self.loss_and_grads()
        self.adam.apply(grads, self.params)

    def check(self):
        before = [p.numpy().copy() for p in self.params]
        loss, grads = self.loss_and_grads()
        host_grads = [to_host(g) for g in grads]
        self.adam.apply(grads, self.params)
        return training_outputs(self.names, loss, host_grads, before,
                                [p.numpy() for p in self.params])


class Gradtape(Implementation):
    """gradtape on ``cpu:0`` (NumPy) or ``gpu:N`` (CuPy)."""

    name = "gradtape"

    def __init__(self, device: str):
        super().__init__(device)
        os.environ["GRADTAPE_DEVICE"] = device
        import gradtape as gt
        self.gt = gt
        try:
            self.dev = gt.get_device(device)
        except Exception as exc:  # noqa: BLE001 - any device failure means: cannot run here
            raise Unsupported(f"gradtape has no device {device!r}: {exc}") from exc
        self.traced_memory = self.dev.kind == "cpu"

    @property
    def label(self) -> str:
        return "gradtape"

    @property
    def version(self) -> str:
        return self.gt.__version__

    # --- cases --------------------------------------------------------------------------

    def case_notape(self, p, data):
        runner = BareCall(self.gt.tanh, self.gt.constant(data["x"]))
        runner.sync = self.dev.synchronize
        return runner

    def case_opchain(self, p, data):
        gt = self.gt
        x = gt.constant(data["x"])

        def run():
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = x
                for _ in range(CHAIN_STEPS):
                    y = gt.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
            return y, tape.gradient(y, x)

        runner = _Runner(self.dev)
        runner.step = run
        runner.check = lambda: dict(zip(("y", "grad/x"), (to_host(t) for t in run())))
        return runner

    def _mlp_model(self):
        gt = self.gt
        relu = _need(gt, "gt.nn.relu")

        def model(x, w1, b1, w2, b2, w3, b3):
            h = relu(x @ w1 + b1)
            h = relu(h @ w2 + b2)
            return h @ w3 + b3
        return model

    def case_mlp(self, p, data):
        return _Training(self.gt, self.dev, MLP_PARAMS, data, self._mlp_model())

    def case_cnn(self, p, data):
        gt = self.gt
        relu = _need(gt, "gt.nn.relu")
        conv2d = _need(gt, "gt.nn.conv2d")
        max_pool2d = _need(gt, "gt.nn.max_pool2d")

        def model(x, k1, c1, k2, c2, w, b):
            h = max_pool2d(relu(conv2d(x, k1, 1, "SAME") + c1), 2, 2, "VALID")
            h = max_pool2d(relu(conv2d(h, k2, 1, "SAME") + c2), 2, 2, "VALID")
            return gt.reshape(h, [h.shape[0], -1]) @ w + b
        return _Training(gt, self.dev, CNN_PARAMS, data, model)

    def case_jacobian(self, p, data):
        gt = self.gt
        matvec = _need(gt, "gt.linalg.matvec")
        w = gt.constant(data["w"])
        x = gt.constant(data["x"])

        def run():
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = gt.tanh(matvec(w, x))
            return tape.jacobian(y, x)

        runner = _Runner(self.dev)
        runner.step = run
        runner.check = lambda: {"jacobian": to_host(run())}
        return runner

    def case_hvp(self, p, data):
        gt = self.gt
        matvec = _need(gt, "gt.linalg.matvec")
        w = gt.constant(data["w"])
        x = gt.constant(data["x"])
        v = gt.constant(data["v"])

        def f(x):
            return 0.5 * gt.reduce_sum(gt.square(gt.tanh(matvec(w, x))))

        runner = _Runner(self.dev)
        hvp = getattr(gt, "hvp", None)
        if hvp is not None:
            def run():
                return hvp(f, (x,), (v,))[0]
        else:
            runner.note = "nested GradientTape, reverse over reverse (gt.hvp is missing)"

            def run():
                with gt.GradientTape() as outer:
                    outer.watch(x)
                    with gt.GradientTape() as inner:
                        inner.watch(x)
                        y = f(x)
                    directional = gt.reduce_sum(inner.gradient(y, x) * v)
                return outer.gradient(directional, x)

        runner.step = run
        runner.check = lambda: {"hvp": to_host(run())}
        return runner

    def case_secondorder(self, p, data):
        gt = self.gt
        model = self._mlp_model()
        sparse_ce = _need(gt, "gt.nn.sparse_softmax_cross_entropy_with_logits")
        params = [gt.Variable(data[k], name=k) for k in MLP_PARAMS]
        x = gt.constant(data["x"])
        labels = gt.constant(data["labels"])

        def run():
            with gt.GradientTape() as outer:
                with gt.GradientTape() as inner:
                    loss = gt.reduce_mean(sparse_ce(labels=labels, logits=model(x, *params)))
                grads = inner.gradient(loss, params)
                norm2 = gt.add_n([gt.reduce_sum(gt.square(g)) for g in grads])
            return outer.gradient(norm2, params)

        runner = _Runner(self.dev)
        runner.step = run
        runner.check = lambda: {"grad/" + k: to_host(g) for k, g in zip(MLP_PARAMS, run())}
        return runner
