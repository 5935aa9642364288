"""PyTorch (eager autograd), each case as a PyTorch user would write it.

Training steps use ``torch.optim.Adam`` (epsilon added to ``sqrt(v_hat)`` rather than to
``sqrt(v)`` as in Keras; the agreement check compares updates where that does not matter);
the CNN runs in PyTorch's native NCHW/OIHW layout, with weights mapped from and gradients
mapped back to NHWC/HWIO. The Jacobian uses ``torch.func.jacrev``, the Hessian-vector product
``torch.func.jvp`` of ``torch.func.grad`` (forward over reverse), the second-order case
``torch.autograd.grad(create_graph=True)``.
"""
from __future__ import annotations

import os

import numpy as np

from .base import BareCall, Implementation, Runner, Unsupported, training_outputs
from .spec import (BETA_1, BETA_2, CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS, CNN_PARAMS, EPSILON,
                   LEARNING_RATE, MLP_PARAMS, N_CLASSES)


def _host(t) -> np.ndarray:
    return t.detach().cpu().numpy()


class _Runner(Runner):
    def __init__(self, torch, device):
        self.torch = torch
        self.device = device

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)


class _Training(_Runner):
    """A training step; ``to_canonical`` maps a parameter-shaped array to the NHWC layout."""

    def __init__(self, torch, device, names, params, model, x, labels, to_canonical):
        super().__init__(torch, device)
        self.names = names
        self.params = params
        self.model = model
        self.x = x
        self.labels = labels
        self.to_canonical = to_canonical
        self.opt = torch.optim.Adam(params, lr=LEARNING_RATE, betas=(BETA_1, BETA_2),
                                    eps=EPSILON)

    def _loss(self):
        logits = self.model(self.x, *self.params)
        return self.torch.nn.functional.cross_entropy(logits, self.labels)

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        self._loss().backward()
        self.opt.step()

    def check(self):
        canon = self.to_canonical
        before = [canon(n, _host(p).copy()) for n, p in zip(self.names, self.params)]
        self.opt.zero_grad(set_to_none=True)
        loss = self._loss()
        loss.backward()
        grads = [canon(n, _host(p.grad)) for n, p in zip(self.names, self.params)]
        self.opt.step()
        after = [canon(n, _host(p)) for n, p in zip(self.names, self.params)]
        return training_outputs(self.names, _host(loss), grads, before, after)


class Torch(Implementation):
    """PyTorch eager on the CPU, or on CUDA when asked for a GPU and it has one."""

    name = "torch"

    def __init__(self, device: str):
        super().__init__(device)
        try:
            import torch
        except ImportError as exc:
            raise Unsupported(f"PyTorch is not installed: {exc}") from exc
        self.torch = torch
        threads = os.environ.get("GRADTAPE_BENCH_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
        if device == "cpu":
            self.dev = torch.device("cpu")
        else:
            if not torch.cuda.is_available():
                raise Unsupported("this PyTorch build sees no CUDA device")
            self.dev = torch.device("cuda", int(device.partition(":")[2] or 0))

    @property
    def label(self) -> str:
        return f"PyTorch {self.torch.__version__.split('+')[0]}"

    @property
    def version(self) -> str:
        return self.torch.__version__

    def threads(self):
        return self.torch.get_num_threads()

    def _t(self, array, grad=False):
        t = self.torch.tensor(np.ascontiguousarray(array), device=self.dev)
        return t.requires_grad_() if grad else t

    # --- cases --------------------------------------------------------------------------

    def case_notape(self, p, data):
        runner = BareCall(self.torch.tanh, self._t(data["x"]))
        runner.sync = _Runner(self.torch, self.dev).sync
        return runner

    def case_opchain(self, p, data):
        torch = self.torch
        x = self._t(data["x"])

        def run():
            leaf = x.detach().requires_grad_()
            y = leaf
            for _ in range(CHAIN_STEPS):
                y = torch.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
            (g,) = torch.autograd.grad(y, leaf, torch.ones_like(y))
            return y, g

        runner = _Runner(torch, self.dev)
        runner.step = run
        runner.check = lambda: dict(zip(("y", "grad/x"), (_host(t) for t in run())))
        return runner

    @staticmethod
    def _mlp(torch):
        relu = torch.nn.functional.relu

        def model(x, w1, b1, w2, b2, w3, b3):
            h = relu(torch.addmm(b1, x, w1))
            h = relu(torch.addmm(b2, h, w2))
            return torch.addmm(b3, h, w3)
        return model

    def case_mlp(self, p, data):
        torch = self.torch
        params = [self._t(data[k], grad=True) for k in MLP_PARAMS]
        return _Training(torch, self.dev, MLP_PARAMS, params, self._mlp(torch),
                         self._t(data["x"]), self._t(data["labels"].astype(np.int64)),
                         lambda name, a: a)

    def case_cnn(self, p, data):
        torch = self.torch
        fn = torch.nn.functional
        s4, c2 = p["image"] // 4, p["c2"]

        def from_canonical(name, a):
            if name in ("k1", "k2"):          # HWIO -> OIHW
                return a.transpose(3, 2, 0, 1)
            if name == "w":                   # rows (h, w, c) -> rows (c, h, w)
                return a.reshape(s4, s4, c2, N_CLASSES).transpose(2, 0, 1, 3).reshape(
                    -1, N_CLASSES)
            return a

        def to_canonical(name, a):
            if name in ("k1", "k2"):          # OIHW -> HWIO
                return a.transpose(2, 3, 1, 0)
            if name == "w":
                return a.reshape(c2, s4, s4, N_CLASSES).transpose(1, 2, 0, 3).reshape(
                    -1, N_CLASSES)
            return a

        def model(x, k1, c1, k2, c2_, w, b):
            h = fn.max_pool2d(fn.relu(fn.conv2d(x, k1, c1, padding=1)), 2)
            h = fn.max_pool2d(fn.relu(fn.conv2d(h, k2, c2_, padding=1)), 2)
            return torch.addmm(b, h.flatten(1), w)

        params = [self._t(from_canonical(k, data[k]), grad=True) for k in CNN_PARAMS]
        x = self._t(data["x"].transpose(0, 3, 1, 2))
        return _Training(torch, self.dev, CNN_PARAMS, params, model, x,
                         self._t(data["labels"].astype(np.int64)), to_canonical)

    def case_jacobian(self, p, data):
        torch = self.torch
        w, x = self._t(data["w"]), self._t(data["x"])
        jac = torch.func.jacrev(lambda x: torch.tanh(w @ x))
        runner = _Runner(torch, self.dev)
        runner.step = lambda: jac(x)
        runner.check = lambda: {"jacobian": _host(jac(x))}
        return runner

    def case_hvp(self, p, data):
        torch = self.torch
        w, x, v = self._t(data["w"]), self._t(data["x"]), self._t(data["v"])

        def f(x):
            return 0.5 * torch.sum(torch.tanh(w @ x) ** 2)

        grad_f = torch.func.grad(f)

        def run():
            return torch.func.jvp(grad_f, (x,), (v,))[1]

        runner = _Runner(torch, self.dev)
        runner.step = run
        runner.check = lambda: {"hvp": _host(run())}
        return runner

    def case_secondorder(self, p, data):
        torch = self.torch
        model = self._mlp(torch)
        params = [self._t(data[k], grad=True) for k in MLP_PARAMS]
        x = self._t(data["x"])
        labels = self._t(data["labels"].astype(np.int64))

        def run():
            loss = torch.nn.functional.cross_entropy(model(x, *params), labels)
            grads = torch.autograd.grad(loss, params, create_graph=True)
            norm2 = sum((g * g).sum() for g in grads)
            return torch.autograd.grad(norm2, params)

        runner = _Runner(torch, self.dev)
        runner.step = run
        runner.check = lambda: {"grad/" + k: _host(g) for k, g in zip(MLP_PARAMS, run())}
        return runner
