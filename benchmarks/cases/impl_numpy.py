"""The floor: every case written by hand, forward and backward, on raw arrays.

Runs on NumPy for ``cpu`` and on CuPy for ``gpu`` (the code only uses the array namespace
``xp``). The hand-written versions use what a careful NumPy programmer would: in-place
updates, no recomputation, BLAS through ``@``.
"""
from __future__ import annotations

import numpy as np

from .base import BareCall, HandAdam, Implementation, Runner, Unsupported, to_host, training_outputs
from .spec import CHAIN_SCALE, CHAIN_SHIFT, CHAIN_STEPS, CNN_PARAMS, MLP_PARAMS


# --- shared pieces ------------------------------------------------------------------------------

def softmax_cross_entropy(xp, logits, labels, rows):
    """Mean sparse softmax cross-entropy and its gradient with respect to ``logits``.

    Returns ``(loss, probabilities, dlogits)``; the loss stays on the device.
    """
    batch = logits.shape[0]
    top = logits.max(axis=1, keepdims=True)
    shifted = logits - top
    e = xp.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    loss = xp.log(total[:, 0]).mean() - shifted[rows, labels].mean()
    e /= total
    probs = e
    dlogits = probs.copy()
    dlogits[rows, labels] -= 1.0
    dlogits *= 1.0 / batch
    return loss, probs, dlogits


def chain(xp, x):
    """The op chain forward and the gradient of ``sum(y)`` with respect to ``x``."""
    outputs = []
    y = x
    for _ in range(CHAIN_STEPS):
        y = xp.tanh(y * CHAIN_SCALE + CHAIN_SHIFT)
        outputs.append(y)
    g = xp.ones_like(y)
    for t in reversed(outputs):
        g = g * (1.0 - t * t) * CHAIN_SCALE
    return y, g


def mlp_forward(xp, params, x):
    """Logits and the activations the backward pass needs."""
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1
    z1 += b1
    h1 = xp.maximum(z1, 0.0)
    z2 = h1 @ w2
    z2 += b2
    h2 = xp.maximum(z2, 0.0)
    z3 = h2 @ w3
    z3 += b3
    return z3, h1, h2


def mlp_loss_and_grads(xp, params, x, labels, rows):
    """Mean cross-entropy of the MLP and its gradients (w1, b1, w2, b2, w3, b3)."""
    w1, b1, w2, b2, w3, b3 = params
    z3, h1, h2 = mlp_forward(xp, params, x)
    loss, _, dz3 = softmax_cross_entropy(xp, z3, labels, rows)
    gw3 = h2.T @ dz3
    gb3 = dz3.sum(axis=0)
    dz2 = dz3 @ w3.T
    dz2 *= h2 > 0
    gw2 = h1.T @ dz2
    gb2 = dz2.sum(axis=0)
    dz1 = dz2 @ w2.T
    dz1 *= h1 > 0
    gw1 = x.T @ dz1
    gb1 = dz1.sum(axis=0)
    return loss, [gw1, gb1, gw2, gb2, gw3, gb3]


def mlp_grad_of_grad_norm(xp, params, x, labels, rows):
    """Gradient of ``sum ||dL/dtheta||^2`` with respect to the MLP parameters.

    That is ``2 H g`` with ``g`` the gradient and ``H`` the Hessian of the loss, computed
    with Pearlmutter's R-operator: the forward and backward passes differentiated along the
    direction ``g``.
    """
    w1, b1, w2, b2, w3, b3 = params
    batch = x.shape[0]
    z3, h1, h2 = mlp_forward(xp, params, x)
    m1 = (h1 > 0).astype(x.dtype)
    m2 = (h2 > 0).astype(x.dtype)
    _, probs, dz3 = softmax_cross_entropy(xp, z3, labels, rows)
    gw3 = h2.T @ dz3
    gb3 = dz3.sum(axis=0)
    dz2 = dz3 @ w3.T
    dz2 *= m2
    gw2 = h1.T @ dz2
    gb2 = dz2.sum(axis=0)
    dz1 = dz2 @ w2.T
    dz1 *= m1
    gw1 = x.T @ dz1
    gb1 = dz1.sum(axis=0)
    # forward pass along the direction (gw1, gb1, gw2, gb2, gw3, gb3)
    rz1 = x @ gw1
    rz1 += gb1
    rz1 *= m1
    rz2 = rz1 @ w2
    rz2 += h1 @ gw2
    rz2 += gb2
    rz2 *= m2
    rz3 = rz2 @ w3
    rz3 += h2 @ gw3
    rz3 += gb3
    rdz3 = rz3 - (probs * rz3).sum(axis=1, keepdims=True)
    rdz3 *= probs
    rdz3 *= 1.0 / batch
    # backward pass along the same direction
    rgw3 = rz2.T @ dz3
    rgw3 += h2.T @ rdz3
    rgb3 = rdz3.sum(axis=0)
    rdz2 = rdz3 @ w3.T
    rdz2 += dz3 @ gw3.T
    rdz2 *= m2
    rgw2 = rz1.T @ dz2
    rgw2 += h1.T @ rdz2
    rgb2 = rdz2.sum(axis=0)
    rdz1 = rdz2 @ w2.T
    rdz1 += dz2 @ gw2.T
    rdz1 *= m1
    rgw1 = x.T @ rdz1
    rgb1 = rdz1.sum(axis=0)
    out = [rgw1, rgb1, rgw2, rgb2, rgw3, rgb3]
    for r in out:
        r *= 2.0
    return out


def conv3x3(xp, x, k):
    """``SAME`` 3x3 convolution, stride 1, NHWC/HWIO, as one matmul over im2col columns."""
    n, h, w, c = x.shape
    padded = xp.zeros((n, h + 2, w + 2, c), dtype=x.dtype)
    padded[:, 1:-1, 1:-1, :] = x
    cols = xp.concatenate([padded[:, i:i + h, j:j + w, :] for i in range(3) for j in range(3)],
                          axis=3).reshape(n * h * w, 9 * c)
    y = cols @ k.reshape(9 * c, -1)
    return y.reshape(n, h, w, -1), cols


def conv3x3_backward(xp, gy, cols, k, x_shape, need_dx):
    """Gradients of :func:`conv3x3` with respect to the filter and (if asked) the input."""
    n, h, w, c = x_shape
    gy2 = gy.reshape(n * h * w, -1)
    gk = (cols.T @ gy2).reshape(k.shape)
    if not need_dx:
        return gk, None
    dcols = (gy2 @ k.reshape(9 * c, -1).T).reshape(n, h, w, 9 * c)
    dpadded = xp.zeros((n, h + 2, w + 2, c), dtype=gy.dtype)
    for tap, (i, j) in enumerate((i, j) for i in range(3) for j in range(3)):
        dpadded[:, i:i + h, j:j + w, :] += dcols[..., tap * c:(tap + 1) * c]
    return gk, dpadded[:, 1:-1, 1:-1, :]


def max_pool2(x):
    """2x2 max pooling, stride 2 (even height and width)."""
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def max_pool2_backward(gy, x, y):
    """Gradient of :func:`max_pool2`: each window's cotangent goes to its maximum."""
    n, h, w, c = x.shape
    windows = x.reshape(n, h // 2, 2, w // 2, 2, c)
    hit = windows == y[:, :, None, :, None, :]
    return (hit * gy[:, :, None, :, None, :]).reshape(x.shape)


def cnn_loss_and_grads(xp, params, x, labels, rows):
    """Mean cross-entropy of the CNN and its gradients (k1, c1, k2, c2, w, b)."""
    k1, c1, k2, c2, w, b = params
    n = x.shape[0]
    z1, cols1 = conv3x3(xp, x, k1)
    z1 += c1
    h1 = xp.maximum(z1, 0.0)
    p1 = max_pool2(h1)
    z2, cols2 = conv3x3(xp, p1, k2)
    z2 += c2
    h2 = xp.maximum(z2, 0.0)
    p2 = max_pool2(h2)
    flat = p2.reshape(n, -1)
    logits = flat @ w
    logits += b
    loss, _, dlogits = softmax_cross_entropy(xp, logits, labels, rows)
    gw = flat.T @ dlogits
    gb = dlogits.sum(axis=0)
    dp2 = (dlogits @ w.T).reshape(p2.shape)
    dz2 = max_pool2_backward(dp2, h2, p2)
    dz2 *= h2 > 0
    gc2 = dz2.sum(axis=(0, 1, 2))
    gk2, dp1 = conv3x3_backward(xp, dz2, cols2, k2, p1.shape, True)
    dz1 = max_pool2_backward(dp1, h1, p1)
    dz1 *= h1 > 0
    gc1 = dz1.sum(axis=(0, 1, 2))
    gk1, _ = conv3x3_backward(xp, dz1, cols1, k1, x.shape, False)
    return loss, [gk1, gc1, gk2, gc2, gw, gb]


# --- runners ------------------------------------------------------------------------------------

class _Sync(Runner):
    def __init__(self, xp):
        self.xp = xp

    def sync(self):
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()


class _Training(_Sync):
    def __init__(self, xp, names, loss_and_grads, data):
        super().__init__(xp)
        self.names = names
        self.loss_and_grads = loss_and_grads
        self.params = [xp.array(data[k], copy=True) for k in names]
        self.x = xp.asarray(data["x"])
        self.labels = xp.asarray(data["labels"]).astype(np.int64)
        self.rows = xp.arange(self.x.shape[0])
        self.adam = HandAdam(xp, self.params)

    def step(self):
        _, grads = self.loss_and_grads(self.xp, self.params, self.x, self.labels, self.rows)
        self.adam.update(self.params, grads)

    def check(self):
        before = [to_host(p).copy() for p in self.params]
        loss, grads = self.loss_and_grads(self.xp, self.params, self.x, self.labels, self.rows)
        grads = [to_host(g) for g in grads]
        self.adam.update(self.params, [self.xp.asarray(g) for g in grads])
        return training_outputs(self.names, loss, grads, before, self.params)


class _Chain(_Sync):
    def __init__(self, xp, data):
        super().__init__(xp)
        self.x = xp.asarray(data["x"])

    def step(self):
        chain(self.xp, self.x)

    def check(self):
        y, g = chain(self.xp, self.x)
        return {"y": to_host(y), "grad/x": to_host(g)}


class _Jacobian(_Sync):
    def __init__(self, xp, data):
        super().__init__(xp)
        self.w = xp.asarray(data["w"])
        self.x = xp.asarray(data["x"])

    def step(self):
        y = self.xp.tanh(self.w @ self.x)
        return (1.0 - y * y)[:, None] * self.w

    def check(self):
        return {"jacobian": to_host(self.step())}


class _Hvp(_Sync):
    def __init__(self, xp, data):
        super().__init__(xp)
        self.w = xp.asarray(data["w"])
        self.x = xp.asarray(data["x"])
        self.v = xp.asarray(data["v"])

    def step(self):
        t = self.xp.tanh(self.w @ self.x)
        t2 = t * t
        curvature = (1.0 - t2) * (1.0 - 3.0 * t2)
        curvature *= self.w @ self.v
        return self.w.T @ curvature

    def check(self):
        return {"hvp": to_host(self.step())}


class _SecondOrder(_Sync):
    def __init__(self, xp, data):
        super().__init__(xp)
        self.params = [xp.asarray(data[k]) for k in MLP_PARAMS]
        self.x = xp.asarray(data["x"])
        self.labels = xp.asarray(data["labels"]).astype(np.int64)
        self.rows = xp.arange(self.x.shape[0])

    def step(self):
        return mlp_grad_of_grad_norm(self.xp, self.params, self.x, self.labels, self.rows)

    def check(self):
        return {"grad/" + k: to_host(g) for k, g in zip(MLP_PARAMS, self.step())}


class NumpyByHand(Implementation):
    """The hand-written floor (NumPy on the CPU, CuPy on a GPU)."""

    name = "numpy"
    traced_memory = True

    def __init__(self, device: str):
        super().__init__(device)
        if device == "cpu":
            self.xp = np
        else:
            try:
                import cupy
            except ImportError as exc:
                raise Unsupported(f"CuPy is not importable: {exc}") from exc
            index = int(device.partition(":")[2] or 0)
            cupy.cuda.Device(index).use()
            self.xp = cupy
            self.traced_memory = False

    @property
    def label(self) -> str:
        if self.xp is np:
            return "NumPy by hand"
        return "CuPy by hand"

    @property
    def version(self) -> str:
        return self.xp.__version__

    def case_notape(self, p, data):
        runner = BareCall(self.xp.tanh, self.xp.asarray(data["x"]))
        runner.sync = _Sync(self.xp).sync
        return runner

    def case_opchain(self, p, data):
        return _Chain(self.xp, data)

    def case_mlp(self, p, data):
        return _Training(self.xp, MLP_PARAMS, mlp_loss_and_grads, data)

    def case_cnn(self, p, data):
        return _Training(self.xp, CNN_PARAMS, cnn_loss_and_grads, data)

    def case_jacobian(self, p, data):
        return _Jacobian(self.xp, data)

    def case_hvp(self, p, data):
        return _Hvp(self.xp, data)

    def case_secondorder(self, p, data):
        return _SecondOrder(self.xp, data)
