"""gt.keras.backend's legacy functions (tf.keras.backend's K.*) against TF 2.21.

Every expected value below was computed with TensorFlow 2.21 (tf.keras.backend, Keras 3.15)
on the same inputs and hard-coded: small results in full, results of more than 40 elements
as their shape, two weighted sums, the sum of magnitudes and their first values. The tables
run on every device (cpu, strict, gpu).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt

K = gt.keras.backend
NAN, INF = float("nan"), float("inf")


def _f(a):
    return np.asarray(a, dtype=np.float32)


A = _f([[0.1, -0.4, 0.7], [1.2, 0.3, -0.9]])
A2 = _f([[0.5, 0.2, -0.3], [-0.6, 0.8, 0.4]])
P = _f([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
T = _f([[0., 0., 1.], [1., 0., 0.]])
R = _f([-1., -0.2, 0.1, 0.3, 0.7, 2.])
X3 = _f(np.arange(24).reshape(2, 3, 4) / 10. - 1.)
W43 = _f(np.arange(12).reshape(4, 3) / 7. - 0.8)
Y343 = _f(np.sin(np.arange(36)).reshape(3, 4, 3))
BY = _f(np.cos(np.arange(8 * 5)).reshape(2, 4, 5))
BZ = _f(np.cos(np.arange(2 * 5 * 3)).reshape(2, 5, 3))
X4 = _f(np.sin(np.arange(2 * 3 * 4 * 2)).reshape(2, 3, 4, 2))
Y4 = _f(np.cos(np.arange(2 * 5 * 2 * 4)).reshape(2, 5, 2, 4))
IMG = _f(np.sin(np.arange(2 * 4 * 5 * 2) * 0.7).reshape(2, 4, 5, 2))
VOL = _f(np.cos(np.arange(2 * 3 * 4 * 3 * 2) * 0.3).reshape(2, 3, 4, 3, 2))
SEQ = _f(np.sin(np.arange(2 * 6 * 4) * 0.5).reshape(2, 6, 4))
K1 = _f(np.cos(np.arange(3 * 4 * 2)).reshape(3, 4, 2))
K2 = _f(np.sin(np.arange(2 * 3 * 2 * 3) + 1.).reshape(2, 3, 2, 3))
K3 = _f(np.sin(np.arange(2 * 2 * 2 * 2 * 3) + 2.).reshape(2, 2, 2, 2, 3))
KT = _f(np.cos(np.arange(2 * 2 * 3 * 2) + 1.).reshape(2, 2, 3, 2))
KD = _f(np.sin(np.arange(3 * 2 * 2 * 2) * 0.9).reshape(3, 2, 2, 2))
KP = _f(np.cos(np.arange(4 * 3) * 0.4).reshape(1, 1, 4, 3))
XR = _f(np.sin(np.arange(2 * 4 * 3) * 0.6).reshape(2, 4, 3))
WR = _f([[0.5, -0.3], [0.2, 0.4], [-0.1, 0.6]])
UR = _f([[0.3, -0.2], [0.1, 0.5]])


def c(v, dtype="float32"):
    return gt.constant(np.asarray(v), dtype=dtype)


def ci(v):
    return c(v, "int32")


def cb(v):
    return c(v, "bool")


def cd(v):
    return c(v, "float64")


def SP():
    return gt.sparse.from_dense(gt.constant([[1., 0., 2.], [0., 3., 0.]]))


def RG():
    return gt.ragged.constant([[1., 2.], [3.]])


def grad(f, *arrays):
    """Gradients of ``sum(f(*xs))`` with respect to each input."""
    xs = [gt.constant(np.asarray(a, np.float32)) for a in arrays]
    with gt.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = gt.reduce_sum(f(*xs))
    return tape.gradient(y, xs)


def step(inp, states):
    h = K.tanh(K.dot(inp, c(WR)) + K.dot(states[0], c(UR)))
    return h, [h]


def rnnc(**kw):
    return K.rnn(step, c(XR), [c(np.zeros((2, 2), "float32"))], **kw)


def step_c(inp, states):
    return inp * states[2], [states[0] + 1., states[1] * 2.]


def step_nested(inp, states):
    a, b = inp
    h = K.tanh(K.dot(a, c(WR)) + b + states[0])
    return (h, h * 2.), [h]


def rnn_loss(x, w, **kw):
    def stepw(inp, states):
        h = K.tanh(K.dot(inp, w) + K.dot(states[0], c(UR)))
        return h, [h]
    last, outs, st = K.rnn(stepw, x, [c(np.zeros((2, 2), "float32"))], **kw)
    return K.sum(outs * c(XR[:, :, :2] + 1.)) + K.sum(last * 3.) + K.sum(st[0])


# --- expected values -----------------------------------------------------------------------------

class E:
    """A tensor of ``dtype`` and ``shape`` holding ``values``."""
    kind = "tensor"

    def __init__(self, dtype, shape, values):
        self.dtype, self.shape = dtype, tuple(shape)
        self.values = np.asarray(values)
        if self.values.size == 0:
            self.values = self.values.reshape(self.shape)


class N(E):
    """A NumPy array of ``dtype`` and ``shape`` holding ``values``."""
    kind = "numpy"


class NS:
    """A NumPy scalar."""

    def __init__(self, dtype, value):
        self.dtype, self.value = dtype, value


class Big:
    """A large result: shape, two weighted sums, the sum of magnitudes, the first values."""

    def __init__(self, kind, dtype, shape, w1, w2, total, head):
        self.kind = "tensor" if kind == "E" else "numpy"
        self.dtype, self.shape = dtype, tuple(shape)
        self.w1, self.w2, self.total, self.head = w1, w2, total, np.asarray(head)


def _close(got, want):
    return np.allclose(got, want, rtol=2e-5, atol=2e-6, equal_nan=True)


def check(got, want, where):
    """Assert ``got`` (a result of gt.keras.backend) matches the TF value ``want``."""
    if isinstance(want, (E, Big)):
        if want.kind == "tensor":
            assert isinstance(got, gt.Tensor), f"{where}: expected a tensor, got {type(got)}"
            arr = got.numpy()
            assert got.dtype.name == want.dtype, f"{where}: dtype {got.dtype.name}"
        else:
            assert isinstance(got, np.ndarray), f"{where}: expected ndarray, got {type(got)}"
            arr = got
            assert arr.dtype.name == want.dtype, f"{where}: dtype {arr.dtype.name}"
        assert tuple(arr.shape) == want.shape, f"{where}: shape {arr.shape} != {want.shape}"
        if isinstance(want, Big):
            a = arr.astype(np.float64).ravel()
            n = a.size
            w1, w2 = np.cos(np.arange(n) * 1.3), np.sin(np.arange(n) * 0.7 + 0.3)
            tol = 2e-5 * (want.total + 1)
            assert abs(np.sum(a * w1) - want.w1) <= tol, f"{where}: weighted sum 1"
            assert abs(np.sum(a * w2) - want.w2) <= tol, f"{where}: weighted sum 2"
            assert abs(np.sum(np.abs(a)) - want.total) <= tol, f"{where}: total"
            assert _close(a[:want.head.size], want.head), f"{where}: head {a[:6]}"
        elif arr.dtype.kind in "fc":
            assert _close(arr, want.values), f"{where}: {arr} != {want.values}"
        else:
            assert np.array_equal(arr, want.values), f"{where}: {arr} != {want.values}"
    elif isinstance(want, NS):
        assert isinstance(got, np.generic) and got.dtype.name == want.dtype, \
            f"{where}: {got!r}"
        assert _close(got, want.value), f"{where}: {got} != {want.value}"
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want), \
            f"{where}: {type(got).__name__} != {type(want).__name__}"
        assert len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            check(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert _close(got, want), f"{where}: {got} != {want}"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"


# --- the tables -----------------------------------------------------------------------------------

CASES = {
    'elementwise': [
        ('abs', lambda: K.abs(c(A)),
         E('float32', (2, 3), [[0.1, 0.40000001, 0.69999999], [1.2, 0.30000001, 0.89999998]])),
        ('all', lambda: K.all(c([[1., 0.], [2., 3.]]), axis=1),
         E('bool', (2,), [False, True])),
        ('any', lambda: K.any(c([[0., 0.], [2., 0.]]), axis=0, keepdims=True),
         E('bool', (1, 2), [[True, False]])),
        ('argmax', lambda: K.argmax(c(A)),
         E('int64', (2,), [2, 0])),
        ('argmin', lambda: K.argmin(c(A), axis=0),
         E('int64', (3,), [0, 0, 1])),
        ('cast', lambda: K.cast(c(A), 'int32'),
         E('int32', (2, 3), [[0, 0, 0], [1, 0, 0]])),
        ('cos', lambda: K.cos(c(A)),
         E('float32', (2, 3), [[0.99500418, 0.92106098, 0.76484221], [0.36235771, 0.95533651,
             0.62160999]])),
        ('sin', lambda: K.sin(c(A)),
         E('float32', (2, 3), [[0.099833421, -0.38941833, 0.64421767], [0.93203908, 0.29552022,
             -0.78332692]])),
        ('exp', lambda: K.exp(c(A)),
         E('float32', (2, 3), [[1.105171, 0.67032003, 2.0137527], [3.320117, 1.3498589,
             0.40656966]])),
        ('log', lambda: K.log(c(P)),
         E('float32', (2, 3), [[-1.6094379, -1.2039728, -0.69314718], [-0.51082557, -2.3025851,
             -1.2039728]])),
        ('round', lambda: K.round(c([0.5, 1.5, 2.5, -0.5, 1.2])),
         E('float32', (5,), [0, 2, 2, -0, 1])),
        ('sign', lambda: K.sign(c([-2., 0., 3.])),
         E('float32', (3,), [-1, 0, 1])),
        ('square', lambda: K.square(c(A)),
         E('float32', (2, 3), [[0.010000001, 0.16000001, 0.48999998], [1.4400001, 0.090000004,
             0.80999994]])),
        ('sqrt', lambda: K.sqrt(c([-1., 0., 4., 2.])),
         E('float32', (4,), [0, 0, 2, 1.4142135])),
        ('pow', lambda: K.pow(c([2., 3.]), 3),
         E('float32', (2,), [8, 27])),
        ('equal', lambda: K.equal(c([1., 2.]), c([1., 3.])),
         E('bool', (2,), [True, False])),
        ('not_equal', lambda: K.not_equal(c([1., 2.]), c([1., 3.])),
         E('bool', (2,), [False, True])),
        ('greater', lambda: K.greater(c(A), 0.3),
         E('bool', (2, 3), [[False, False, True], [True, False, False]])),
        ('greater_equal', lambda: K.greater_equal(c(A), 0.3),
         E('bool', (2, 3), [[False, False, True], [True, True, False]])),
        ('less', lambda: K.less(c(A), 0.3),
         E('bool', (2, 3), [[True, True, False], [False, False, True]])),
        ('less_equal', lambda: K.less_equal(c(A), 0.3),
         E('bool', (2, 3), [[True, True, False], [False, True, True]])),
        ('maximum', lambda: K.maximum(c(A), c(A2)),
         E('float32', (2, 3), [[0.5, 0.2, 0.69999999], [1.2, 0.80000001, 0.40000001]])),
        ('minimum', lambda: K.minimum(c(A), c(A2)),
         E('float32', (2, 3), [[0.1, -0.40000001, -0.30000001], [-0.60000002, 0.30000001,
             -0.89999998]])),
        ('clip', lambda: K.clip(c(A), -0.5, 0.5),
         E('float32', (2, 3), [[0.1, -0.40000001, 0.5], [0.5, 0.30000001, -0.5]])),
        ('clip_swapped', lambda: K.clip(c([1., 5.]), 3, 2),
         E('float32', (2,), [3, 3])),
        ('clip_none', lambda: K.clip(c([1., 5.]), None, 2),
         E('float32', (2,), [1, 2])),
        ('max', lambda: K.max(c(A), axis=1),
         E('float32', (2,), [0.69999999, 1.2])),
        ('min', lambda: K.min(c(A), axis=0, keepdims=True),
         E('float32', (1, 3), [[0.1, -0.40000001, -0.89999998]])),
        ('sum', lambda: K.sum(c(A)),
         E('float32', (), 1.0000001)),
        ('prod', lambda: K.prod(ci([[1, 2], [3, 4]]), axis=0),
         E('int32', (2,), [3, 8])),
        ('mean', lambda: K.mean(c(A), axis=-1),
         E('float32', (2,), [0.13333333, 0.2])),
        ('mean_bool', lambda: K.mean(cb([True, False, True])),
         E('float32', (), 0.66666669)),
        ('mean_int', lambda: K.mean(ci([1, 2])),
         E('int32', (), 1)),
        ('std', lambda: K.std(c(A), axis=0),
         E('float32', (3,), [0.55000001, 0.35000002, 0.79999995])),
        ('std_bool', lambda: K.std(cb([True, False, False, False])),
         E('float32', (), 0.43301269)),
        ('var', lambda: K.var(c(A), keepdims=True),
         E('float32', (1, 1), [[0.47222221]])),
        ('var_bool', lambda: K.var(cb([True, False])),
         E('float32', (), 0.25)),
        ('cumsum', lambda: K.cumsum(c(A)),
         E('float32', (2, 3), [[0.1, -0.40000001, 0.69999999], [1.3000001, -0.099999994,
             -0.19999999]])),
        ('cumprod', lambda: K.cumprod(c(A), axis=1),
         E('float32', (2, 3), [[0.1, -0.040000003, -0.028000001], [1.2, 0.36000001, -0.324]])),
    ],
    'activations': [
        ('sigmoid', lambda: K.sigmoid(c(A)),
         E('float32', (2, 3), [[0.52497917, 0.40131232, 0.6681878], [0.76852477, 0.57444257,
             0.28905049]])),
        ('tanh', lambda: K.tanh(c(A)),
         E('float32', (2, 3), [[0.099668004, -0.37994897, 0.60436773], [0.8336547, 0.29131263,
             -0.71629786]])),
        ('softplus', lambda: K.softplus(c(A)),
         E('float32', (2, 3), [[0.74439669, 0.51301527, 1.103186], [1.4632825, 0.85435528,
             0.34115386]])),
        ('softsign', lambda: K.softsign(c(A)),
         E('float32', (2, 3), [[0.090909094, -0.2857143, 0.41176468], [0.54545456, 0.23076925,
             -0.47368419]])),
        ('hard_sigmoid', lambda: K.hard_sigmoid(c([-3., -1., 0., 1., 3.])),
         E('float32', (5,), [0, 0.30000001, 0.5, 0.69999999, 1])),
        ('elu', lambda: K.elu(c(A)),
         E('float32', (2, 3), [[0.1, -0.32967997, 0.69999999], [1.2, 0.30000001, -0.59343034]])),
        ('elu_alpha', lambda: K.elu(c(A), 0.5),
         E('float32', (2, 3), [[0.1, -0.16483998, 0.69999999], [1.2, 0.30000001, -0.29671517]])),
        ('relu', lambda: K.relu(c(R)),
         E('float32', (6,), [0, 0, 0.1, 0.30000001, 0.69999999, 2])),
        ('relu_alpha', lambda: K.relu(c(R), alpha=0.1),
         E('float32', (6,), [-0.1, -0.020000001, 0.1, 0.30000001, 0.69999999, 2])),
        ('relu_max6', lambda: K.relu(c(R) * 4, max_value=6),
         E('float32', (6,), [0, 0, 0.40000001, 1.2, 2.8, 6])),
        ('relu_all', lambda: K.relu(c(R), alpha=0.1, max_value=0.5, threshold=0.2),
         E('float32', (6,), [-0.12, -0.040000003, -0.010000001, 0.30000001, 0.5, 0.5])),
        ('relu_thresh', lambda: K.relu(c(R), threshold=0.3),
         E('float32', (6,), [-0, -0, 0, 0, 0.69999999, 2])),
        ('relu_max', lambda: K.relu(c(R), alpha=0.2, max_value=0.6),
         E('float32', (6,), [-0.2, -0.040000003, 0.1, 0.30000001, 0.60000002, 0.60000002])),
        ('softmax', lambda: K.softmax(c(A)),
         E('float32', (2, 3), [[0.29166004, 0.17690073, 0.53143919], [0.65401107, 0.26590106,
             0.08008787]])),
        ('softmax_axis0', lambda: K.softmax(c(A), axis=0),
         E('float32', (2, 3), [[0.2497399, 0.33181223, 0.83201838], [0.75026011, 0.6681878,
             0.16798162]])),
        ('softmax_tuple', lambda: K.softmax(c(X3), axis=(1, 2)),
         E('float32', (2, 3, 4), [[[0.045330007, 0.050097406, 0.055366196, 0.061189111],
             [0.06762442, 0.074736543, 0.08259666, 0.091283426], [0.10088378, 0.11149383,
             0.12321973, 0.13617887]], [[0.045330007, 0.050097406, 0.055366192, 0.061189111],
             [0.067624427, 0.07473655, 0.082596652, 0.091283426], [0.10088379, 0.11149383,
             0.12321974, 0.13617887]]])),
        ('l2_normalize', lambda: K.l2_normalize(c(A), axis=1),
         E('float32', (2, 3), [[0.1230915, -0.49236599, 0.86164045], [0.78446454, 0.19611613,
             -0.58834839]])),
        ('l2_normalize_all', lambda: K.l2_normalize(c(A)),
         E('float32', (2, 3), [[0.057735026, -0.2309401, 0.40414518], [0.69282031, 0.17320508,
             -0.51961523]])),
        ('in_top_k', lambda: K.in_top_k(c(P), ci([2, 1]), 2),
         E('bool', (2,), [True, False])),
    ],
    'losses': [
        ('bce', lambda: K.binary_crossentropy(c(T), c(P)),
         E('float32', (2, 3), [[0.22314338, 0.35667479, 0.69314694], [0.5108254, 0.10536041,
             0.35667479]])),
        ('bce_logits', lambda: K.binary_crossentropy(c(T), c(A), from_logits=True),
         E('float32', (2, 3), [[0.74439669, 0.51301527, 0.40318605], [0.26328245, 0.85435528,
             0.34115386]])),
        ('bfce', lambda: K.binary_focal_crossentropy(c(T), c(P)),
         E('float32', (2, 3), [[0.0089257341, 0.032100733, 0.17328674], [0.081732057, 0.0010536045,
             0.032100733]])),
        ('bfce_bal', lambda: K.binary_focal_crossentropy(c(T), c(A), apply_class_balancing=True,
            alpha=0.3, gamma=1.5, from_logits=True),
         E('float32', (2, 3), [[0.19820544, 0.091296077, 0.023118801], [0.0087962989, 0.26037931,
             0.037111524]])),
        ('cce', lambda: K.categorical_crossentropy(c(T), c(P)),
         E('float32', (2,), [0.69314718, 0.51082557])),
        ('cce_unnorm', lambda: K.categorical_crossentropy(c(T), c(P) * 2.),
         E('float32', (2,), [0.69314718, 0.51082557])),
        ('cce_logits', lambda: K.categorical_crossentropy(c(T), c(A), from_logits=True),
         E('float32', (2,), [0.63216645, 0.42463103])),
        ('cce_axis0', lambda: K.categorical_crossentropy(c(T), c(P), axis=0),
         E('float32', (3,), [0.28768209, -0, 0.47000363])),
        ('cfce', lambda: K.categorical_focal_crossentropy(c(T), c(P)),
         E('float32', (2,), [0.043321699, 0.02043302])),
        ('cfce_logits', lambda: K.categorical_focal_crossentropy(c(T), c(A), alpha=0.5, gamma=1.,
            from_logits=True),
         E('float32', (2,), [0.14810418, 0.073458813])),
        ('scce', lambda: K.sparse_categorical_crossentropy(ci([2, 0]), c(P)),
         E('float32', (2,), [0.69314718, 0.51082557])),
        ('scce_logits', lambda: K.sparse_categorical_crossentropy(ci([2, 0]), c(A),
            from_logits=True),
         E('float32', (2,), [0.63216645, 0.42463103])),
        ('scce_col', lambda: K.sparse_categorical_crossentropy(ci([[2], [0]]), c(P)),
         E('float32', (2,), [0.69314718, 0.51082557])),
        ('scce_axis0', lambda: K.sparse_categorical_crossentropy(ci([1, 0, 1]), c(P), axis=0),
         E('float32', (3,), [0.28768203, 0.28768203, 0.98082924])),
        ('scce_3d', lambda: K.sparse_categorical_crossentropy(ci([[[1], [0], [3]], [[2], [2],
            [0]]]), c(X3), from_logits=True),
         E('float32', (2, 3), [[1.4425356, 1.5425355, 1.2425356], [1.3425356, 1.3425355,
             1.5425355]])),
        ('scce_ignore', lambda: K.sparse_categorical_crossentropy(ci([[1, -1, 3], [-1, 2, 0]]),
            c(X3), from_logits=True, ignore_class=-1),
         E('float32', (2, 3), [[1.4425356, 0, 1.2425356], [0, 1.3425355, 1.5425355]])),
    ],
    'shapes': [
        ('ndim', lambda: K.ndim(c(X3)),
         3),
        ('shape', lambda: K.shape(c(X3)),
         E('int32', (3,), [2, 3, 4])),
        ('dtype', lambda: K.dtype(cd([1.])),
         'float64'),
        ('count_params', lambda: K.count_params(c(X3)),
         24),
        ('reshape', lambda: K.reshape(c(A), (3, 2)),
         E('float32', (3, 2), [[0.1, -0.40000001], [0.69999999, 1.2], [0.30000001, -0.89999998]])),
        ('permute', lambda: K.permute_dimensions(c(X3), (2, 0, 1)),
         E('float32', (4, 2, 3), [[[-1, -0.60000002, -0.2], [0.2, 0.60000002, 1]], [[-0.89999998,
             -0.5, -0.1], [0.30000001, 0.69999999, 1.1]], [[-0.80000001, -0.40000001, 0],
             [0.40000001, 0.80000001, 1.2]], [[-0.69999999, -0.30000001, 0.1], [0.5, 0.89999998,
             1.3]]])),
        ('transpose', lambda: K.transpose(c(X3)),
         E('float32', (4, 3, 2), [[[-1, 0.2], [-0.60000002, 0.60000002], [-0.2, 1]], [[-0.89999998,
             0.30000001], [-0.5, 0.69999999], [-0.1, 1.1]], [[-0.80000001, 0.40000001],
             [-0.40000001, 0.80000001], [0, 1.2]], [[-0.69999999, 0.5], [-0.30000001, 0.89999998],
             [0.1, 1.3]]])),
        ('expand_dims', lambda: K.expand_dims(c(A)),
         E('float32', (2, 3, 1), [[[0.1], [-0.40000001], [0.69999999]], [[1.2], [0.30000001],
             [-0.89999998]]])),
        ('expand_dims0', lambda: K.expand_dims(c(A), 0),
         E('float32', (1, 2, 3), [[[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001,
             -0.89999998]]])),
        ('squeeze', lambda: K.squeeze(c([[1.], [2.]]), 1),
         E('float32', (2,), [1, 2])),
        ('flatten', lambda: K.flatten(c(A)),
         E('float32', (6,), [0.1, -0.40000001, 0.69999999, 1.2, 0.30000001, -0.89999998])),
        ('batch_flatten', lambda: K.batch_flatten(c(X3)),
         E('float32', (2, 12), [[-1, -0.89999998, -0.80000001, -0.69999999, -0.60000002, -0.5,
             -0.40000001, -0.30000001, -0.2, -0.1, 0, 0.1], [0.2, 0.30000001, 0.40000001, 0.5,
             0.60000002, 0.69999999, 0.80000001, 0.89999998, 1, 1.1, 1.2, 1.3]])),
        ('batch_flatten_1d', lambda: K.batch_flatten(c([1., 2.])),
         E('float32', (2, 1), [[1], [2]])),
        ('stack', lambda: K.stack([c(A), c(A2)], axis=1),
         E('float32', (2, 2, 3), [[[0.1, -0.40000001, 0.69999999], [0.5, 0.2, -0.30000001]], [[1.2,
             0.30000001, -0.89999998], [-0.60000002, 0.80000001, 0.40000001]]])),
        ('tile', lambda: K.tile(c(A), (2, 1)),
         E('float32', (4, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998],
             [0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998]])),
        ('tile_int', lambda: K.tile(c([1., 2.]), 2),
         E('float32', (4,), [1, 2, 1, 2])),
        ('reverse', lambda: K.reverse(c(A), 1),
         E('float32', (2, 3), [[0.69999999, -0.40000001, 0.1], [-0.89999998, 0.30000001, 1.2]])),
        ('reverse_list', lambda: K.reverse(c(A), [0, 1]),
         E('float32', (2, 3), [[-0.89999998, 0.30000001, 1.2], [0.69999999, -0.40000001, 0.1]])),
        ('gather', lambda: K.gather(c(A), ci([1, 0, 1])),
         E('float32', (3, 3), [[1.2, 0.30000001, -0.89999998], [0.1, -0.40000001, 0.69999999],
             [1.2, 0.30000001, -0.89999998]])),
        ('one_hot', lambda: K.one_hot(ci([0, 2, 1]), 3),
         E('float32', (3, 3), [[1, 0, 0], [0, 0, 1], [0, 1, 0]])),
        ('repeat', lambda: K.repeat(c(A), 2),
         E('float32', (2, 2, 3), [[[0.1, -0.40000001, 0.69999999], [0.1, -0.40000001, 0.69999999]],
             [[1.2, 0.30000001, -0.89999998], [1.2, 0.30000001, -0.89999998]]])),
        ('repeat_elements', lambda: K.repeat_elements(c(A), 2, 1),
         E('float32', (2, 6), [[0.1, 0.1, -0.40000001, -0.40000001, 0.69999999, 0.69999999], [1.2,
             1.2, 0.30000001, 0.30000001, -0.89999998, -0.89999998]])),
        ('repeat_elements0', lambda: K.repeat_elements(c(X3), 3, 0),
         Big('E', 'float32', (6, 3, 4), -1.6561898, -0.034833806, 43.8, [-1, -0.89999998,
             -0.80000001, -0.69999999, -0.60000002, -0.5])),
        ('concatenate', lambda: K.concatenate([c(A), c(A2)]),
         E('float32', (2, 6), [[0.1, -0.40000001, 0.69999999, 0.5, 0.2, -0.30000001], [1.2,
             0.30000001, -0.89999998, -0.60000002, 0.80000001, 0.40000001]])),
        ('concatenate0', lambda: K.concatenate([c(A), c(A2)], axis=0),
         E('float32', (4, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998],
             [0.5, 0.2, -0.30000001], [-0.60000002, 0.80000001, 0.40000001]])),
        ('temporal_padding', lambda: K.temporal_padding(c(X3), (1, 2)),
         Big('E', 'float32', (2, 6, 4), 0.43333297, 3.0759644, 14.6, [0, 0, 0, 0, -1,
             -0.89999998])),
        ('spatial_2d_padding', lambda: K.spatial_2d_padding(c(IMG), ((1, 0), (0, 2))),
         Big('E', 'float32', (2, 5, 7, 2), -2.3506988, 2.8863542, 50.866287, [0, 0, 0, 0, 0, 0])),
        ('spatial_2d_padding_cf', lambda: K.spatial_2d_padding(c(IMG),
            data_format='channels_first'),
         Big('E', 'float32', (2, 4, 7, 4), -1.073266, -4.2611512, 50.866287, [0, 0, 0, 0, 0, 0])),
        ('spatial_3d_padding', lambda: K.spatial_3d_padding(c(VOL), ((1, 0), (0, 1), (1, 1))),
         Big('E', 'float32', (2, 4, 5, 5, 2), 0.89351456, -2.775289, 91.135075, [0, 0, 0, 0, 0,
             0])),
        ('spatial_3d_padding_cf', lambda: K.spatial_3d_padding(c(VOL), ((0, 1), (0, 0), (1, 0)),
            data_format='channels_first'),
         Big('E', 'float32', (2, 3, 5, 3, 3), -0.59029203, 0.77687251, 91.135075, [0, 1,
             0.95533651, 0, 0.82533562, 0.62160999])),
    ],
    'products': [
        ('dot2', lambda: K.dot(c(A), c(A2.T)),
         E('float32', (2, 2), [[-0.24000001, -0.10000002], [0.93000007, -0.84000003]])),
        ('dot3', lambda: K.dot(c(X3), c(W43)),
         E('float32', (2, 3, 3), [[[0.74857146, 0.26285714, -0.22285713], [0.49714288, 0.23999999,
             -0.017142847], [0.24571431, 0.21714288, 0.18857144]], [[-0.0057142973, 0.19428571,
             0.39428574], [-0.25714287, 0.17142858, 0.59999996], [-0.50857145, 0.14857143,
             0.80571425]]])),
        ('dot33', lambda: K.dot(c(X3[:, :2]), c(Y343)),
         E('float32', (2, 2, 3, 3), [[[[-0.19195853, -0.30512321, -0.13775901], [-0.033555284,
             -0.27475992, -0.26335162], [0.13532706, -0.15859123, -0.30670148]], [[-0.082429357,
             -0.22606963, -0.16186257], [0.046198025, -0.16544408, -0.2249777], [0.16039817,
             -0.053151593, -0.21783403]]], [[[0.13662905, -0.067962497, -0.21006963], [0.20570469,
             0.053187639, -0.1482299], [0.21054038, 0.15772769, -0.040099114]], [[0.24615824,
             0.011091126, -0.23417309], [0.28545797, 0.16250351, -0.10985591], [0.23561144,
             0.26316729, 0.048768371]]]])),
        ('batch_dot_default', lambda: K.batch_dot(c(X3), c(BY)),
         E('float32', (2, 3, 5), [[[-0.052257299, -0.7376343, -0.74483407, -0.067236543,
             0.67217779], [-0.17829615, -0.51873893, -0.38225558, 0.10567179, 0.49644503],
             [-0.30433503, -0.29984343, -0.019677192, 0.27858019, 0.32071221]], [[-0.011168212,
             0.38644505, 0.42876258, 0.076877743, -0.34568813], [0.24876946, 0.74083251,
             0.55177766, -0.14457911, -0.70801049], [0.50870717, 1.0952201, 0.67479283,
             -0.36603594, -1.070333]]])),
        ('batch_dot_22', lambda: K.batch_dot(c(A), c(A2), axes=1),
         E('float32', (2, 1), [[-0.24000001], [-0.84000003]])),
        ('batch_dot_axes', lambda: K.batch_dot(c(X3), c(BZ), axes=(1, 2)),
         E('float32', (2, 4, 5), [[[-1.2409519, 1.3254462, -1.3834115, 1.4136881, -1.4156696],
             [-1.1285365, 1.1894488, -1.2265544, 1.2391104, -1.2268656], [-1.0161209, 1.0534515,
             -1.0696971, 1.0645328, -1.0380619], [-0.90370542, 0.917454, -0.91283995, 0.88995522,
             -0.84925812]], [[-1.0016966, 1.1333683, -1.2423553, 1.3264768, -1.3840489],
             [-1.2009476, 1.3390785, -1.4504077, 1.532707, -1.5843291], [-1.4001988, 1.544789,
             -1.65846, 1.7389371, -1.7846093], [-1.5994499, 1.7504992, -1.8665123, 1.9451671,
             -1.9848895]]])),
        ('batch_dot_32', lambda: K.batch_dot(c(X3), c(A2), axes=(1, 1)),
         E('float32', (2, 4), [[-0.56, -0.51999998, -0.48000002, -0.44], [0.75999999, 0.82000005,
             0.88000005, 0.93999994]])),
        ('batch_dot_23', lambda: K.batch_dot(c(A2), c(X3), axes=(1, 1)),
         E('float32', (2, 4), [[-0.56, -0.51999998, -0.48000002, -0.44], [0.75999999, 0.82000005,
             0.88000005, 0.93999994]])),
        ('batch_dot_4d', lambda: K.batch_dot(c(X4), c(Y4), axes=(2, 3)),
         Big('E', 'float32', (2, 3, 2, 5, 2), -5.7571415, -0.48760869, 74.801279, [1.0828556,
             -0.67937791, -0.19471352, 0.93392456, -1.0261941, 0.40760589])),
        ('batch_dot_neg', lambda: K.batch_dot(c(X3), c(BZ), axes=(-2, -1)),
         E('float32', (2, 4, 5), [[[-1.2409519, 1.3254462, -1.3834115, 1.4136881, -1.4156696],
             [-1.1285365, 1.1894488, -1.2265544, 1.2391104, -1.2268656], [-1.0161209, 1.0534515,
             -1.0696971, 1.0645328, -1.0380619], [-0.90370542, 0.917454, -0.91283995, 0.88995522,
             -0.84925812]], [[-1.0016966, 1.1333683, -1.2423553, 1.3264768, -1.3840489],
             [-1.2009476, 1.3390785, -1.4504077, 1.532707, -1.5843291], [-1.4001988, 1.544789,
             -1.65846, 1.7389371, -1.7846093], [-1.5994499, 1.7504992, -1.8665123, 1.9451671,
             -1.9848895]]])),
    ],
    'creation': [
        ('backend', lambda: K.backend(),
         'tensorflow'),
        ('arange', lambda: K.arange(5),
         E('int32', (5,), [0, 1, 2, 3, 4])),
        ('arange_neg', lambda: K.arange(-3),
         E('int32', (0,), [])),
        ('arange_step', lambda: K.arange(1, 8, 3),
         E('int32', (3,), [1, 4, 7])),
        ('arange_float', lambda: K.arange(2.5),
         E('float32', (3,), [0, 1, 2])),
        ('arange_dtype', lambda: K.arange(1, 6, 2, dtype='float32'),
         E('float32', (3,), [1, 3, 5])),
        ('constant', lambda: K.constant(3, shape=(2,)),
         E('float32', (2,), [3, 3])),
        ('constant_dtype', lambda: K.constant([1, 2], dtype='int32'),
         E('int32', (2,), [1, 2])),
        ('cast_to_floatx', lambda: K.cast_to_floatx([1, 2]),
         N('float32', (2,), [1, 2])),
        ('cast_to_floatx_t', lambda: K.cast_to_floatx(ci([1, 2])),
         E('float32', (2,), [1, 2])),
        ('variable', lambda: K.variable([1, 2]),
         E('float32', (2,), [1, 2])),
        ('variable_dtype', lambda: K.variable(np.array([1.5, 2.5]), dtype='float64'),
         E('float64', (2,), [1.5, 2.5])),
        ('zeros', lambda: K.zeros((2, 3)),
         E('float32', (2, 3), [[0, 0, 0], [0, 0, 0]])),
        ('zeros_int', lambda: K.zeros((2,), dtype='int32'),
         E('int32', (2,), [0, 0])),
        ('zeros_empty', lambda: K.zeros((0, 3)),
         E('float32', (0, 3), [])),
        ('ones', lambda: K.ones((3,)),
         E('float32', (3,), [1, 1, 1])),
        ('ones_empty', lambda: K.ones((2, 0)),
         E('float32', (2, 0), [[], []])),
        ('eye', lambda: K.eye(3),
         E('float32', (3, 3), [[1, 0, 0], [0, 1, 0], [0, 0, 1]])),
        ('eye_dtype', lambda: K.eye(2, dtype='float64'),
         E('float64', (2, 2), [[1, 0], [0, 1]])),
        ('zeros_like', lambda: K.zeros_like(c(A)),
         E('float32', (2, 3), [[0, 0, 0], [0, 0, 0]])),
        ('zeros_like_dtype', lambda: K.zeros_like(c(A), dtype='int32'),
         E('int32', (2, 3), [[0, 0, 0], [0, 0, 0]])),
        ('ones_like', lambda: K.ones_like(ci([1, 2])),
         E('int32', (2,), [1, 1])),
        ('ones_like_dtype', lambda: K.ones_like(c(A), dtype='float64'),
         E('float64', (2, 3), [[1, 1, 1], [1, 1, 1]])),
        ('eval', lambda: K.eval(c(A)),
         N('float32', (2, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998]])),
        ('eval_var', lambda: K.eval(K.variable([[1, 2]])),
         N('float32', (1, 2), [[1, 2]])),
        ('eval_list', lambda: K.eval([1, 2]),
         [1, 2]),
        ('batch_get_value', lambda: K.batch_get_value([K.variable([1.5]), ci([2, 3])]),
         [N('float32', (1,), [1.5]), N('int32', (2,), [2, 3])]),
        ('is_float_dtype', lambda: [K.is_float_dtype(d) for d in ('float16', 'bfloat16', 'int8',
            float, 'bool')],
         [True, True, False, True, False]),
        ('is_int_dtype', lambda: [K.is_int_dtype(d) for d in ('int64', 'uint8', 'float32', int,
            'bool')],
         [True, True, False, True, False]),
        ('result_type', lambda: [K.result_type('int32', 'float16'), K.result_type('int8', int),
            K.result_type('int32', float), K.result_type(), K.result_type('uint8', 'int8'),
            K.result_type('bool', 'bool'), K.result_type(None, 'int64')],
         ['float16', 'int8', 'float32', 'float32', 'int16', 'bool', 'float32']),
        ('is_sparse', lambda: [K.is_sparse(c(A)), K.is_sparse(SP())],
         [False, True]),
        ('to_dense', lambda: K.to_dense(SP()),
         E('float32', (2, 3), [[1, 0, 2], [0, 3, 0]])),
        ('to_dense_dense', lambda: K.to_dense(c(A)),
         E('float32', (2, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998]])),
        ('concatenate_sparse', lambda: K.to_dense(K.concatenate([SP(), SP()], axis=0)),
         E('float32', (4, 3), [[1, 0, 2], [0, 3, 0], [1, 0, 2], [0, 3, 0]])),
        ('concatenate_mixed', lambda: K.concatenate([SP(), c(A)], axis=-1),
         E('float32', (2, 6), [[1, 0, 2, 0.1, -0.40000001, 0.69999999], [0, 3, 0, 1.2, 0.30000001,
             -0.89999998]])),
        ('concatenate_ragged0', lambda: K.concatenate([RG(), RG()], axis=0).to_list(),
         [[1., 2.], [3.], [1., 2.], [3.]]),
        ('concatenate_ragged1', lambda: K.concatenate([RG(), RG()], axis=-1).to_list(),
         [[1., 2., 1., 2.], [3., 3.]]),
        ('dot_sparse', lambda: K.dot(SP(), c(A2.T)),
         E('float32', (2, 2), [[-0.10000002, 0.19999999], [0.60000002, 2.4000001]])),
    ],
    'control_flow': [
        ('map_fn', lambda: K.map_fn(lambda r: r * 2., c(A)),
         E('float32', (2, 3), [[0.2, -0.80000001, 1.4], [2.4000001, 0.60000002, -1.8]])),
        ('map_fn_dtype', lambda: K.map_fn(lambda r: K.cast(r, 'int32'), c(A) * 10., dtype='int32'),
         E('int32', (2, 3), [[1, -4, 7], [12, 3, -9]])),
        ('foldl', lambda: K.foldl(lambda a, b: a * 2. + b, c(A)),
         E('float32', (3,), [1.4000001, -0.5, 0.5])),
        ('foldl_init', lambda: K.foldl(lambda a, b: a + K.sum(b), c(A), initializer=c(1.)),
         E('float32', (), 2)),
        ('foldr', lambda: K.foldr(lambda a, b: a * 2. + b, c(A)),
         E('float32', (3,), [2.5, 0.20000002, -1.0999999])),
        ('foldr_init', lambda: K.foldr(lambda a, b: a * 2. + b, c(A), initializer=c([1., 1., 1.])),
         E('float32', (3,), [6.5, 4.1999998, 2.9000001])),
        ('switch_scalar_fn', lambda: K.switch(cb(False), lambda: c(A), lambda: c(A2)),
         E('float32', (2, 3), [[0.5, 0.2, -0.30000001], [-0.60000002, 0.80000001, 0.40000001]])),
        ('switch_scalar_val', lambda: K.switch(c(1.), c(A), c(A2)),
         E('float32', (2, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998]])),
        ('switch_1d', lambda: K.switch(cb([True, False, True]), c(A), c(A2)),
         E('float32', (2, 3), [[0.1, 0.2, 0.69999999], [1.2, 0.80000001, -0.89999998]])),
        ('switch_int', lambda: K.switch(ci([[1, 0, 2], [0, 0, 3]]), c(A), c(A2)),
         E('float32', (2, 3), [[0.1, 0.2, 0.69999999], [-0.60000002, 0.80000001, -0.89999998]])),
        ('switch_2d_3d', lambda: K.switch(cb([[True], [False]]), c(X3[:, :, :2]), -c(X3[:, :,
            :2])),
         E('float32', (2, 3, 2), [[[-1, -0.89999998], [-0.60000002, -0.5], [-0.2, -0.1]], [[-0.2,
             -0.30000001], [-0.60000002, -0.69999999], [-1, -1.1]]])),
        ('switch_3d_bcast', lambda: K.switch(cb([[True, False, True]]), c(X3[:, :, :2]), -c(X3[:,
            :, :2])),
         E('float32', (2, 3, 2), [[[-1, -0.89999998], [0.60000002, 0.5], [-0.2, -0.1]], [[0.2,
             0.30000001], [-0.60000002, -0.69999999], [1, 1.1]]])),
    ],
    'conv_pool_resize': [
        ('conv1d', lambda: K.conv1d(c(X3), c(K1)),
         E('float32', (2, 1, 2), [[[-0.62089491, -0.091698498]], [[-0.62428141, -0.73740941]]])),
        ('conv1d_same_s2', lambda: K.conv1d(c(X3), c(K1), strides=2, padding='same'),
         E('float32', (2, 2, 2), [[[0.51105791, 0.76265854], [-0.29183936, -0.063005999]],
             [[-0.5607844, -0.58850145], [0.77183998, -0.26829153]]])),
        ('conv1d_causal_dil', lambda: K.conv1d(c(SEQ), c(K1), padding='causal', dilation_rate=2),
         E('float32', (2, 6, 2), [[[-0.33749402, -0.5183863], [-0.06725812, 0.45112023],
             [0.83767354, 0.15084898], [-0.82357073, -1.001368], [0.056010485, 1.198663],
             [1.1814544, 0.10764515]], [[-0.1622296, -0.57634825], [-0.27242631, 0.18556184],
             [0.98715544, 0.68115443], [-0.40290701, -1.0018958], [-0.66366112, 0.65362382],
             [1.3201525, 0.82459712]]])),
        ('conv2d', lambda: K.conv2d(c(IMG), c(K2)),
         Big('E', 'float32', (2, 3, 3, 3), 7.5124557, 2.9051432, 37.951725, [-0.32228166,
             0.54117572, 0.90707844, 0.50753742, 1.3708951, 0.97385824])),
        ('conv2d_same_s2', lambda: K.conv2d(c(IMG), c(K2), strides=(2, 2), padding='same'),
         E('float32', (2, 2, 3, 3), [[[[-0.18064888, -0.31808007, -0.16306949], [0.50753742,
             1.3708951, 0.97385824], [-0.3781088, -1.2813514, -1.0065256]], [[0.082102299,
             1.4135027, 1.4453351], [0.48008376, -0.12232924, -0.6122731], [-0.54274058,
             -1.2330019, -0.78964686]]], [[[0.20310175, 0.70463681, 0.55833197], [-0.37624669,
             -1.4043489, -1.141299], [0.22968316, 0.94415712, 0.79057741]], [[-0.026559055,
             -1.2208023, -1.2926457], [-0.58297765, -0.26172471, 0.30015707], [0.60555303,
             1.4912047, 1.0058496]]]])),
        ('conv2d_dil', lambda: K.conv2d(c(IMG), c(K2), dilation_rate=(2, 1)),
         E('float32', (2, 2, 3, 3), [[[[-0.22819626, 0.76479089, 1.0546327], [0.67654216,
             1.0472283, 0.45509756], [0.4581762, -0.40880227, -0.89992929]], [[0.30486226,
             1.1880889, 0.9789921], [0.73884451, 0.39829826, -0.3084414], [-0.053703666,
             -1.0526937, -1.083842]]], [[[0.41631067, -0.48403776, -0.93936443], [-0.55689949,
             -1.1693819, -0.7067399], [-0.60562009, 0.086524844, 0.69911909]], [[-0.10459423,
             -1.0896801, -1.0729191], [-0.76050186, -0.69140625, 0.01336503], [-0.15392625,
             0.85464752, 1.0774626]]]])),
        ('conv3d', lambda: K.conv3d(c(VOL), c(K3), padding='same'),
         Big('E', 'float32', (2, 3, 4, 3, 3), 1.7309753, 0.15479145, 54.478888, [0.66823089,
             0.72525322, 0.1154809, 0.52746952, 0.45851612, -0.031995058])),
        ('conv2d_transpose', lambda: K.conv2d_transpose(c(IMG), c(KT), (2, 8, 10, 3), strides=(2,
            2), padding='same'),
         Big('E', 'float32', (2, 8, 10, 3), 3.1126856, -1.0115101, 317.2103, [-0.26808915,
             -0.42108876, 0.61855865, -0.093733691, -0.54054469, 0.54362565])),
        ('conv2d_transpose_valid', lambda: K.conv2d_transpose(c(IMG), c(KT), (None, 5, 6, 3),
            padding='valid'),
         Big('E', 'float32', (2, 5, 6, 3), -3.9136636, 0.98234973, 270.13634, [-0.26808915,
             -0.42108876, 0.61855865, 0.079485171, -2.0803638, 1.6519885])),
        ('conv2d_transpose_dil', lambda: K.conv2d_transpose(c(IMG), c(KT), (2, 6, 7, 3),
            padding='valid', dilation_rate=(2, 2)),
         Big('E', 'float32', (2, 6, 7, 3), 0.14798902, -0.34088675, 170.35792, [-0.26808915,
             -0.42108876, 0.61855865, 0.17321886, -1.5398191, 1.1083628])),
        ('conv2d_transpose_dil_same', lambda: K.conv2d_transpose(c(IMG), c(KT), (2, 4, 5, 3),
            padding='same', dilation_rate=(2, 2)),
         Big('E', 'float32', (2, 4, 5, 3), 1.624466, 1.4426164, 78.941439, [0.32894993, -1.0546231,
             0.54880613, 0.51959831, -0.48992503, -0.11183673])),
        ('depthwise_conv2d', lambda: K.depthwise_conv2d(c(IMG), c(KD)),
         Big('E', 'float32', (2, 2, 4, 4), -3.1939621, -10.635279, 59.466807, [-0.024009824,
             -0.56899428, -0.33214712, -1.1052954, 1.8487813, 1.6280921])),
        ('depthwise_conv2d_s', lambda: K.depthwise_conv2d(c(IMG), c(KD), strides=(2, 2),
            padding='same'),
         Big('E', 'float32', (2, 2, 3, 4), 0.66959034, -12.439102, 36.841509, [-0.024009824,
             -0.56899428, -0.33214712, -1.1052954, 0.65247399, 1.1224385])),
        ('separable_conv2d', lambda: K.separable_conv2d(c(IMG), c(KD), c(KP), padding='same'),
         Big('E', 'float32', (2, 4, 5, 3), -18.834612, -18.923893, 153.32478, [-0.96134579,
             -0.79208171, -0.49776548, 3.9561839, 3.09427, 1.7438391])),
        ('pool2d_max', lambda: K.pool2d(c(IMG), (2, 2), strides=(2, 2)),
         E('float32', (2, 2, 2, 2), [[[[0.98544973, 0.98816824], [0.33498815, -0.35078323]],
             [[0.99060738, 0.84574682], [0.067208074, 0.69416469]]], [[[0.27090579, -0.41292754],
             [0.9975574, 0.99624193]], [[0.13411222, 0.74097264], [0.99934202, 0.99859089]]]])),
        ('pool2d_avg_same', lambda: K.pool2d(c(IMG), (3, 2), strides=(2, 1), padding='same',
            pool_mode='avg'),
         E('float32', (2, 2, 5, 2), [[[[0.63179344, 0.54639477], [0.20401819, -0.23431145],
             [-0.56244075, -0.62604535], [-0.39521107, 0.02149716], [0.028106669, 0.5597167]],
             [[0.43320641, -0.036114827], [-0.48845071, -0.71106058], [-0.59924757, -0.20559902],
             [0.2847459, 0.64117044], [0.83830416, 0.91004717]]], [[[-0.58160287, -0.61590677],
             [-0.36054, 0.064394318], [0.459043, 0.63779658], [0.51658446, 0.15241458],
             [0.19927587, -0.37058389]], [[-0.57152647, -0.15902284], [0.32827175, 0.66117501],
             [0.68311733, 0.38377887], [-0.096056759, -0.53071535], [-0.69388878,
             -0.93584049]]]])),
        ('pool3d_max', lambda: K.pool3d(c(VOL), (2, 2, 2), strides=(1, 1, 1)),
         Big('E', 'float32', (2, 2, 3, 2, 2), -0.4203674, 2.0146421, 40.217983, [1, 0.95533651,
             0.82533562, 0.62160999, 0.39349088, 0.64759636])),
        ('pool3d_avg', lambda: K.pool3d(c(VOL), (1, 2, 3), strides=(1, 2, 1), padding='same',
            pool_mode='avg'),
         Big('E', 'float32', (2, 3, 2, 3, 2), -0.042937237, 0.76548602, 27.338083, [0.21518496,
             0.042007059, 0.038850844, -0.12478571, -0.13492322, -0.29980117])),
        ('bias_add', lambda: K.bias_add(c(IMG), c([1., 2.])),
         Big('E', 'float32', (2, 4, 5, 2), -0.6603171, 38.690339, 120.46183, [1, 2.6442177,
             1.9854498, 2.8632092, 1.3349881, 1.6492168])),
        ('bias_add_3d', lambda: K.bias_add(c(IMG), c(IMG[0, :, :, :])),
         Big('E', 'float32', (2, 4, 5, 2), -0.78063726, 37.604383, 57.604936, [0, 1.2884353,
             1.9708995, 1.7264187, 0.66997629, -0.70156646])),
        ('bias_add_2d', lambda: K.bias_add(c(A), c([1., 2., 3.])),
         E('float32', (2, 3), [[1.1, 1.6, 3.7], [2.2, 2.3, 2.0999999]])),
        ('batch_normalization', lambda: K.batch_normalization(c(A), c([0.1, 0.2, 0.3]), c([1., 2.,
            0.5]), c([0., 1., -1.]), c([1., 0.5, 2.])),
         E('float32', (2, 3), [[0, 0.78792095, 0.13024116], [1.0994505, 1.0353465, -4.3907237]])),
        ('resize_nearest', lambda: K.resize_images(c(IMG), 2, 3, 'channels_last'),
         Big('E', 'float32', (2, 8, 15, 2), -5.24111, -3.5285089, 305.19772, [0, 0.64421767, 0,
             0.64421767, 0, 0.64421767])),
        ('resize_bilinear', lambda: K.resize_images(c(IMG), 2, 1, 'channels_last',
            interpolation='bilinear'),
         Big('E', 'float32', (2, 8, 5, 2), 1.0139762, -6.535036, 98.279376, [0, 0.64421767,
             0.98544973, 0.86320937, 0.33498815, -0.35078323])),
        ('resize_cf', lambda: K.resize_images(c(IMG.transpose(0, 3, 1, 2)), 1, 2,
            'channels_first'),
         Big('E', 'float32', (2, 2, 4, 10), 1.4795617, -4.7790117, 101.73257, [0, 0, 0.98544973,
             0.98544973, 0.33498815, 0.33498815])),
        ('resize_volumes', lambda: K.resize_volumes(c(VOL), 2, 1, 2, 'channels_last'),
         Big('E', 'float32', (2, 6, 4, 6, 2), 4.2229876, 0.61737608, 364.5403, [1, 0.95533651, 1,
             0.95533651, 0.82533562, 0.62160999])),
        ('resize_volumes_cf', lambda: K.resize_volumes(c(VOL), 1, 2, 1, 'channels_first'),
         Big('E', 'float32', (2, 3, 4, 6, 2), 1.1453732, 0.76305192, 182.27015, [1, 0.95533651, 1,
             0.95533651, 0.82533562, 0.62160999])),
    ],
    'variables': [
        ('update', lambda: K.update(K.variable([1., 2.]), [3., 4.]),
         E('float32', (2,), [3, 4])),
        ('update_add', lambda: K.update_add(K.variable([1., 2.]), [3., 4.]),
         E('float32', (2,), [4, 6])),
        ('update_sub', lambda: K.update_sub(K.variable([1., 2.]), [3., 4.]),
         E('float32', (2,), [-2, -2])),
        ('moving_average_update', lambda: K.moving_average_update(K.variable([1., 2.]), [3., 6.],
            0.9),
         E('float32', (2,), [1.2, 2.4000001])),
        ('variable_name', lambda: K.variable([1.], name='foo').name,
         'foo:0'),
        ('zeros_name', lambda: K.zeros((2,), name='zz').name,
         'zz:0'),
        ('stop_gradient', lambda: K.stop_gradient(c(A)),
         E('float32', (2, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998]])),
        ('stop_gradient_list', lambda: list(K.stop_gradient([c(A), c(A2)])),
         [E('float32', (2, 3), [[0.1, -0.40000001, 0.69999999], [1.2, 0.30000001, -0.89999998]]),
             E('float32', (2, 3), [[0.5, 0.2, -0.30000001], [-0.60000002, 0.80000001,
             0.40000001]])]),
    ],
    'gradients': [
        ('g_dot2', lambda: grad(lambda a, b: K.dot(a, b), A, A2.T),
         [E('float32', (2, 3), [[-0.10000002, 1, 0.099999994], [-0.10000002, 1, 0.099999994]]),
             E('float32', (3, 2), [[1.3000001, 1.3000001], [-0.099999994, -0.099999994],
             [-0.19999999, -0.19999999]])]),
        ('g_dot3', lambda: grad(lambda a, b: K.dot(a, b) ** 2, X3, W43),
         [E('float32', (2, 3, 4), [[[-1.3139592, -0.63804084, 0.03787756, 0.71379596], [-1.0932246,
             -0.47608164, 0.14106123, 0.7582041], [-0.87248987, -0.31412247, 0.24424492,
             0.8026123]], [[-0.65175509, -0.15216325, 0.34742859, 0.84702045], [-0.43102038,
             0.0097959368, 0.45061225, 0.89142853], [-0.21028574, 0.17175514, 0.55379593,
             0.93583667]]]), E('float32', (4, 3), [[-3.5200002, -0.31999999, 2.8799999],
             [-3.3760002, -0.073142812, 3.2297142], [-3.2320004, 0.17371432, 3.5794287],
             [-3.0880001, 0.42057142, 3.9291427]])]),
        ('g_batch_dot', lambda: grad(lambda a, b: K.batch_dot(a, b, axes=(1, 2)) ** 2, X3, BZ),
         [E('float32', (2, 3, 4), [[[-12.728233, -11.296139, -9.8640442, -8.4319496], [-10.101292,
             -8.9298916, -7.7584929, -6.5870934], [1.8127309, 1.646456, 1.480181, 1.3139058]],
             [[6.3136625, 7.4079566, 8.5022507, 9.5965443], [11.938517, 13.937422, 15.936327,
             17.935232], [6.5871544, 7.6528864, 8.7186174, 9.7843494]]]), E('float32', (2, 5, 3),
             [[[7.4042506, 3.9727986, 0.54134703], [-7.7618589, -4.1732183, -0.58457744],
             [7.9641123, 4.2901096, 0.61610752], [-8.0069637, -4.3211355, -0.63530624], [7.8895578,
             4.2656736, 0.64178932]], [[-3.8408563, -8.0026903, -12.164525], [4.243125, 8.8573132,
             13.4715], [-4.5604672, -9.5346556, -14.508844], [4.7865314, 10.021162, 15.255793],
             [-4.9167943, -10.307096, -15.697397]]])]),
        ('g_batch_dot_22', lambda: grad(lambda a, b: K.batch_dot(a, b) ** 2, A, A2),
         [E('float32', (2, 3), [[-0.24000001, -0.096000008, 0.14400001], [1.0080001, -1.3440001,
             -0.67200005]]), E('float32', (2, 3), [[-0.048000004, 0.19200002, -0.336], [-2.0160003,
             -0.50400007, 1.512]])]),
        ('g_bce', lambda: grad(lambda o: K.binary_crossentropy(c(T), o), P),
         [E('float32', (2, 3), [[1.2499998, 1.4285712, -1.9999995], [-1.6666663, 1.111111,
             1.4285712]])]),
        ('g_bce_logits', lambda: grad(lambda o: K.binary_crossentropy(c(T), o, from_logits=True),
            A),
         [E('float32', (2, 3), [[0.52497923, 0.40131232, -0.3318122], [-0.23147522, 0.57444251,
             0.28905049]])]),
        ('g_cce', lambda: grad(lambda o: K.categorical_crossentropy(c(T), o), P),
         [E('float32', (2, 3), [[1, 1, -1], [-0.66666663, 1, 1]])]),
        ('g_cce_logits', lambda: grad(lambda o: K.categorical_crossentropy(c(T), o,
            from_logits=True), A),
         [E('float32', (2, 3), [[0.29166004, 0.17690074, -0.46856081], [-0.34598893, 0.26590106,
             0.080087863]])]),
        ('g_scce', lambda: grad(lambda o: K.sparse_categorical_crossentropy(ci([2, 0]), o), P),
         [E('float32', (2, 3), [[0.99999994, 0.99999994, -1], [-0.66666663, 0.99999994,
             0.99999994]])]),
        ('g_scce_ignore', lambda: grad(lambda o: K.sparse_categorical_crossentropy(ci([[1, -1, 3],
            [-1, 2, 0]]), o, from_logits=True, ignore_class=-1), X3),
         [E('float32', (2, 3, 4), [[[0.2138382, -0.76367223, 0.26118258, 0.28865141], [0, 0, 0, 0],
             [0.2138382, 0.23632778, 0.26118258, -0.71134859]], [[0, 0, 0, 0], [0.21383823,
             0.23632778, -0.73881745, 0.28865141], [-0.78616178, 0.2363278, 0.26118261,
             0.28865141]]])]),
        ('g_l2', lambda: grad(lambda x: K.l2_normalize(x, axis=1) * c(A2), A),
         [E('float32', (2, 3), [[0.660218, 0.067140788, -0.055950671], [-0.11062962, 0.59337699,
             0.050286189]])]),
        ('g_std', lambda: grad(lambda x: K.std(x, axis=1) * c([1., 2.]), A),
         [E('float32', (2, 3), [[-0.024708314, -0.39533296, 0.42004129], [0.7749843, 0.077498436,
             -0.85248274]])]),
        ('g_var', lambda: grad(lambda x: K.var(x) * 3., A),
         [E('float32', (2, 3), [[-0.066666685, -0.56666672, 0.5333333], [1.0333333, 0.13333333,
             -1.0666666]])]),
        ('g_sqrt', lambda: grad(lambda x: K.sqrt(x), [-1., 0.25, 4.]),
         [E('float32', (3,), [0, 1, 0.25])]),
        ('g_relu_all', lambda: grad(lambda x: K.relu(x, alpha=0.1, max_value=0.5, threshold=0.2),
            R),
         [E('float32', (6,), [0.1, 0.1, 0.1, 1, 0, 0])]),
        ('g_hard_sigmoid', lambda: grad(lambda x: K.hard_sigmoid(x), [-3., 0., 1.]),
         [E('float32', (3,), [0, 0.2, 0.2])]),
        ('g_softmax_tuple', lambda: grad(lambda x: K.softmax(x, axis=(1, 2)) * c(X3), X3),
         [E('float32', (2, 3, 4), [[[-0.030207107, -0.028374275, -0.025821805, -0.022418598],
             [-0.018013941, -0.012434825, -0.0054829433, 0.0030687512], [0.013479875, 0.02604695,
             0.041108303, 0.059049621]], [[-0.030207109, -0.028374275, -0.025821805, -0.022418598],
             [-0.018013939, -0.012434831, -0.0054829456, 0.0030687465], [0.013479875, 0.026046952,
             0.04110831, 0.059049621]]])]),
        ('g_conv2d', lambda: grad(lambda x, k: K.conv2d(x, k, padding='same') ** 2, IMG, K2),
         [Big('E', 'float32', (2, 4, 5, 2), 42.281155, 144.39638, 748.10089, [-0.30335408,
             -0.049284697, 4.0230575, -4.6861672, 6.6967502, -6.8393812]), E('float32', (2, 3, 2,
             3), [[[[17.924135, 42.373905, 27.865299], [8.1700296, 38.07571, 32.974758]],
             [[-3.5424676, 26.106857, 31.753658], [-16.218529, -6.3647938, 9.3407011]],
             [[-15.685457, -21.237431, -7.2638092], [-12.442911, -36.561859, -27.066006]]],
             [[[6.1865072, 34.517197, 31.112934], [-4.2489433, 16.402542, 21.973606]],
             [[-13.253414, -3.6870775, 9.2691412], [-16.142689, -28.727682, -14.900574]],
             [[-7.2653809, -27.893066, -22.875996], [0.036788844, -27.655117, -29.921034]]]])]),
        ('g_pool2d', lambda: grad(lambda x: K.pool2d(x, (2, 2), strides=(1, 1)) * c(np.arange(2 * 3
            * 4 * 2, dtype='float32').reshape(2, 3, 4, 2)), IMG),
         [Big('E', 'float32', (2, 4, 5, 2), -240.57238, 707.57724, 1128, [0, 0, 2, 3, 4, 5])]),
        ('g_switch', lambda: grad(lambda a, b: K.switch(cb([[True], [False]]), a, b) * c(X3), X3,
            X3 * 2),
         [E('float32', (2, 3, 4), [[[-1, -0.89999998, -0.80000001, -0.69999999], [-0.60000002,
             -0.5, -0.40000001, -0.30000001], [-0.2, -0.1, 0, 0.1]], [[0, 0, 0, 0], [0, 0, 0, 0],
             [0, 0, 0, 0]]]), E('float32', (2, 3, 4), [[[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
             [[0.2, 0.30000001, 0.40000001, 0.5], [0.60000002, 0.69999999, 0.80000001, 0.89999998],
             [1, 1.1, 1.2, 1.3]]])]),
        ('g_repeat_elements', lambda: grad(lambda x: K.repeat_elements(x, 2, 1) * c(np.arange(12,
            dtype='float32').reshape(2, 6)), A),
         [E('float32', (2, 3), [[1, 5, 9], [13, 17, 21]])]),
        ('g_foldl', lambda: grad(lambda x: K.foldl(lambda a, b: a * b, x), A + 2),
         [E('float32', (2, 3), [[3.2, 2.3, 1.1], [2.0999999, 1.6, 2.7]])]),
        ('g_map_fn', lambda: grad(lambda x: K.map_fn(lambda r: K.sum(r * r), x), A),
         [E('float32', (2, 3), [[0.2, -0.80000001, 1.4], [2.4000001, 0.60000002, -1.8]])]),
        ('g_batch_normalization', lambda: grad(lambda x, m, v: K.batch_normalization(x, m, v,
            c([0., 1., -1.]), c([1., 0.5, 2.])) * c(A2), A, [0.1, 0.2, 0.3], [1., 2., 0.5]),
         [E('float32', (2, 3), [[0.4997502, 0.070693009, -0.84768093], [-0.59970027, 0.28277203,
             1.1302413]]), E('float32', (3,), [0.09995006, -0.35346505, -0.28256029]), E('float32',
             (3,), [0.32950565, 0.0035328849, 1.6919779])]),
        ('g_rnn', lambda: grad(rnn_loss, XR, WR),
         [E('float32', (2, 4, 3), [[[-0.02378422, 0.81829065, 0.86439985], [-0.079423487,
             1.1226904, 1.2147468], [-0.22827777, 0.78054595, 0.95104563], [0.15007448, 2.5146317,
             2.5189948]], [[0.14864612, 1.0222189, 0.97006053], [0.07430476, 0.78624421,
             0.77075839], [-0.24153879, 0.77708352, 0.95561057], [1.2521409, 2.5766273,
             1.9051802]]]), E('float32', (3, 2), [[-0.33287776, -1.6725693], [3.5969887,
             2.0321803], [6.2703238, 5.0270309]])]),
        ('g_rnn_mask', lambda: grad(lambda x, w: rnn_loss(x, w, mask=ci([[1, 1, 0, 1], [1, 0, 1,
            0]]), go_backwards=True), XR, WR),
         [E('float32', (2, 4, 3), [[[1.2872531, 1.8198037, 1.0976404], [0.0088564754, 0.85602963,
             0.88350368], [0, 0, 0], [0.049351096, 1.9912049, 2.0374198]], [[1.0940008, 2.5147891,
             1.9382803], [0, 0, 0], [-0.1676234, 1.4340823, 1.5923922], [0, 0, 0]]]), E('float32',
             (3, 2), [[1.4096071, -0.99461818], [5.610961, 2.7998064], [7.8522449, 5.6161776]])]),
        ('g_rnn_unroll', lambda: grad(lambda x, w: rnn_loss(x, w, unroll=True, mask=ci([[1, 1, 0,
            0], [0, 1, 1, 1]]), zero_output_for_mask=True), XR, WR),
         [E('float32', (2, 4, 3), [[[0.060260594, 0.88816154, 0.88523811], [0.27365398, 1.3118901,
             1.1939451], [0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0.2313309, 0.70303261, 0.58771485],
             [-0.23969229, 0.73622257, 0.91204178], [1.2329955, 2.5761647, 1.9164815]]]),
             E('float32', (3, 2), [[2.0572641, 1.3007302], [4.1754775, 3.1960568], [4.8350763,
             3.9749084]])]),
    ],
    'rnn': [
        ('rnn', lambda: rnnc(),
         (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),
             E('float32', (2, 4, 2), [[[0.019722035, 0.65561312], [0.59111768, 0.36839533],
             [-0.081602223, -0.63371432], [-0.50892037, 0.0064511597]], [[0.47078839, 0.58765489],
             [0.4146249, -0.39154315], [-0.48953101, -0.58766437], [-0.163294, 0.53493565]]]),
             (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),))),
        ('rnn_unroll', lambda: rnnc(unroll=True),
         (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),
             E('float32', (2, 4, 2), [[[0.019722035, 0.65561312], [0.59111768, 0.36839533],
             [-0.081602223, -0.63371432], [-0.50892037, 0.0064511597]], [[0.47078839, 0.58765489],
             [0.4146249, -0.39154315], [-0.48953101, -0.58766437], [-0.163294, 0.53493565]]]),
             [E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]])])),
        ('rnn_backwards', lambda: rnnc(go_backwards=True),
         (E('float32', (2, 2), [[0.13151799, 0.56588602], [0.4514432, 0.38540784]]), E('float32',
             (2, 4, 2), [[[-0.44095805, 0.29769447], [-0.378645, -0.52014184], [0.41554639,
             -0.12104253], [0.13151799, 0.56588602]], [[0.040833935, 0.66008258], [-0.49481618,
             -0.073387615], [0.085190758, -0.50128549], [0.4514432, 0.38540784]]]), (E('float32',
             (2, 2), [[0.13151799, 0.56588602], [0.4514432, 0.38540784]]),))),
        ('rnn_backwards_unroll', lambda: rnnc(go_backwards=True, unroll=True),
         (E('float32', (2, 2), [[0.13151799, 0.56588602], [0.4514432, 0.38540784]]), E('float32',
             (2, 4, 2), [[[-0.44095805, 0.29769447], [-0.378645, -0.52014184], [0.41554639,
             -0.12104253], [0.13151799, 0.56588602]], [[0.040833935, 0.66008258], [-0.49481618,
             -0.073387615], [0.085190758, -0.50128549], [0.4514432, 0.38540784]]]), [E('float32',
             (2, 2), [[0.13151799, 0.56588602], [0.4514432, 0.38540784]])])),
        ('rnn_mask', lambda: rnnc(mask=ci([[1, 1, 0, 1], [1, 0, 1, 0]])),
         (E('float32', (2, 2), [[-0.25358889, 0.35657987], [-0.39749852, -0.19326298]]),
             E('float32', (2, 4, 2), [[[0.019722035, 0.65561312], [0.59111768, 0.36839533],
             [0.59111768, 0.36839533], [-0.25358889, 0.35657987]], [[0.47078839, 0.58765489],
             [0.47078839, 0.58765489], [-0.39749852, -0.19326298], [-0.39749852, -0.19326298]]]),
             (E('float32', (2, 2), [[-0.25358889, 0.35657987], [-0.39749852, -0.19326298]]),))),
        ('rnn_mask_unroll', lambda: rnnc(mask=ci([[1, 1, 0, 1], [1, 0, 1, 0]]), unroll=True),
         (E('float32', (2, 2), [[-0.25358889, 0.35657987], [-0.39749852, -0.19326298]]),
             E('float32', (2, 4, 2), [[[0.019722035, 0.65561312], [0.59111768, 0.36839533],
             [0.59111768, 0.36839533], [-0.25358889, 0.35657987]], [[0.47078839, 0.58765489],
             [0.47078839, 0.58765489], [-0.39749852, -0.19326298], [-0.39749852, -0.19326298]]]),
             (E('float32', (2, 2), [[-0.25358889, 0.35657987], [-0.39749852, -0.19326298]]),))),
        ('rnn_mask_zero', lambda: rnnc(mask=ci([[1, 1, 0, 0], [0, 0, 1, 1]]),
            zero_output_for_mask=True),
         (E('float32', (2, 2), [[0, 0], [-0.16081494, 0.61397654]]), E('float32', (2, 4, 2),
             [[[0.019722035, 0.65561312], [0.59111768, 0.36839533], [0, 0], [0, 0]], [[0, 0], [0,
             0], [-0.55159891, -0.37600124], [-0.16081494, 0.61397654]]]), (E('float32', (2, 2),
             [[0.59111768, 0.36839533], [-0.16081494, 0.61397654]]),))),
        ('rnn_mask_zero_unroll', lambda: rnnc(mask=ci([[1, 1, 0, 0], [0, 0, 1, 1]]),
            zero_output_for_mask=True, unroll=True),
         (E('float32', (2, 2), [[0, 0], [-0.16081494, 0.61397654]]), E('float32', (2, 4, 2),
             [[[0.019722035, 0.65561312], [0.59111768, 0.36839533], [0, 0], [0, 0]], [[0, 0], [0,
             0], [-0.55159891, -0.37600124], [-0.16081494, 0.61397654]]]), (E('float32', (2, 2),
             [[0.59111768, 0.36839533], [-0.16081494, 0.61397654]]),))),
        ('rnn_mask_back', lambda: rnnc(mask=cb([[True, True, False, True], [False, True, True,
            False]]), go_backwards=True),
         (E('float32', (2, 2), [[0.18652557, 0.68440294], [0.03808314, -0.59860605]]), E('float32',
             (2, 4, 2), [[[-0.44095805, 0.29769447], [-0.44095805, 0.29769447], [0.46634281,
             0.29107633], [0.18652557, 0.68440294]], [[0, 0], [-0.55159891, -0.37600124],
             [0.03808314, -0.59860605], [0.03808314, -0.59860605]]]), (E('float32', (2, 2),
             [[0.18652557, 0.68440294], [0.03808314, -0.59860605]]),))),
        ('rnn_last_only', lambda: rnnc(return_all_outputs=False),
         (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),
             E('float32', (2, 1, 2), [[[-0.50892037, 0.0064511597]], [[-0.163294, 0.53493565]]]),
             (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),))),
        ('rnn_last_only_unroll', lambda: rnnc(return_all_outputs=False, unroll=True),
         (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),
             E('float32', (2, 1, 2), [[[-0.50892037, 0.0064511597]], [[-0.163294, 0.53493565]]]),
             [E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]])])),
        ('rnn_input_length_int', lambda: rnnc(input_length=2),
         (E('float32', (2, 2), [[0, 0], [0, 0]]), E('float32', (2, 4, 2), [[[0.019722035,
             0.65561312], [0.59111768, 0.36839533], [0, 0], [0, 0]], [[0.47078839, 0.58765489],
             [0.4146249, -0.39154315], [0, 0], [0, 0]]]), (E('float32', (2, 2), [[0.59111768,
             0.36839533], [0.4146249, -0.39154315]]),))),
        ('rnn_input_length_t', lambda: rnnc(input_length=ci([1, 4])),
         (E('float32', (2, 2), [[0.019722035, 0.65561312], [-0.163294, 0.53493565]]), E('float32',
             (2, 4, 2), [[[0.019722035, 0.65561312], [0.019722035, 0.65561312], [0.019722035,
             0.65561312], [0.019722035, 0.65561312]], [[0.47078839, 0.58765489], [0.4146249,
             -0.39154315], [-0.48953101, -0.58766437], [-0.163294, 0.53493565]]]), (E('float32',
             (2, 2), [[0.019722035, 0.65561312], [-0.163294, 0.53493565]]),))),
        ('rnn_input_length_t_short', lambda: rnnc(input_length=ci([1, 3])),
         (E('float32', (2, 2), [[0, 0], [0, 0]]), E('float32', (2, 4, 2), [[[0.019722035,
             0.65561312], [0.019722035, 0.65561312], [0.019722035, 0.65561312], [0, 0]],
             [[0.47078839, 0.58765489], [0.4146249, -0.39154315], [-0.48953101, -0.58766437], [0,
             0]]]), (E('float32', (2, 2), [[0.019722035, 0.65561312], [-0.48953101,
             -0.58766437]]),))),
        ('rnn_input_length_back', lambda: rnnc(input_length=ci([2, 3]), go_backwards=True),
         (E('float32', (2, 2), [[0, 0], [0, 0]]), E('float32', (2, 4, 2), [[[0, 0], [-0.28761011,
             -0.67155659], [0.42556295, -0.21227574], [0, 0]], [[0.040833935, 0.66008258],
             [-0.49481618, -0.073387615], [0.085190758, -0.50128549], [0, 0]]]), (E('float32', (2,
             2), [[0.42556295, -0.21227574], [0.085190758, -0.50128549]]),))),
        ('rnn_input_length_unroll', lambda: rnnc(input_length=2, unroll=True),
         (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),
             E('float32', (2, 4, 2), [[[0.019722035, 0.65561312], [0.59111768, 0.36839533],
             [-0.081602223, -0.63371432], [-0.50892037, 0.0064511597]], [[0.47078839, 0.58765489],
             [0.4146249, -0.39154315], [-0.48953101, -0.58766437], [-0.163294, 0.53493565]]]),
             [E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]])])),
        ('rnn_time_major', lambda: K.rnn(step, K.permute_dimensions(c(XR), (1, 0, 2)),
            [c(np.zeros((2, 2), 'float32'))], time_major=True),
         (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),
             E('float32', (4, 2, 2), [[[0.019722035, 0.65561312], [0.47078839, 0.58765489]],
             [[0.59111768, 0.36839533], [0.4146249, -0.39154315]], [[-0.081602223, -0.63371432],
             [-0.48953101, -0.58766437]], [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]]),
             (E('float32', (2, 2), [[-0.50892037, 0.0064511597], [-0.163294, 0.53493565]]),))),
        ('rnn_constants', lambda: K.rnn(step_c, c(XR), [c(np.zeros((2, 1), 'float32')),
            c(np.ones((2, 1), 'float32'))], constants=[c(2.)]),
         (E('float32', (2, 3), [[-1.545529, -0.55883098, 0.6230827], [0.067246094, 1.184147,
             1.8873913]]), E('float32', (2, 4, 3), [[[0, 1.129285, 1.8640782], [1.9476953,
             1.3509264, 0.28224], [-0.88504088, -1.7431515, -1.9923292], [-1.545529, -0.55883098,
             0.6230827]], [[1.5873357, 1.9970866, 1.7091978], [0.82423699, -0.34865355,
             -1.3997494], [-1.9618725, -1.838657, -1.0731459], [0.067246094, 1.184147,
             1.8873913]]]), (E('float32', (2, 1), [[4], [4]]), E('float32', (2, 1), [[16],
             [16]])))),
        ('rnn_constants_unroll', lambda: K.rnn(step_c, c(XR), [c(np.zeros((2, 1), 'float32')),
            c(np.ones((2, 1), 'float32'))], constants=[c(2.)], unroll=True),
         (E('float32', (2, 3), [[-1.545529, -0.55883098, 0.6230827], [0.067246094, 1.184147,
             1.8873913]]), E('float32', (2, 4, 3), [[[0, 1.129285, 1.8640782], [1.9476953,
             1.3509264, 0.28224], [-0.88504088, -1.7431515, -1.9923292], [-1.545529, -0.55883098,
             0.6230827]], [[1.5873357, 1.9970866, 1.7091978], [0.82423699, -0.34865355,
             -1.3997494], [-1.9618725, -1.838657, -1.0731459], [0.067246094, 1.184147,
             1.8873913]]]), [E('float32', (2, 1), [[4], [4]]), E('float32', (2, 1), [[16],
             [16]])])),
        ('rnn_nested', lambda: K.rnn(step_nested, (c(XR), c(XR[:, :, :2])), [c(np.zeros((2, 2),
            'float32'))]),
         ((E('float32', (2, 2), [[-0.78749508, -0.54727846], [-0.48215827, 0.50820088]]),
             E('float32', (2, 2), [[-1.5749902, -1.0945569], [-0.96431655, 1.0164018]])),
             (E('float32', (2, 4, 2), [[[0.019722035, 0.87398785], [0.92189008, 0.92347765],
             [0.18138139, -0.64206022], [-0.78749508, -0.54727846]], [[0.86294115, 0.93189716],
             [0.9080404, 0.14328642], [-0.60027212, -0.82473212], [-0.48215827, 0.50820088]]]),
             E('float32', (2, 4, 2), [[[0.03944407, 1.7479757], [1.8437802, 1.8469553],
             [0.36276278, -1.2841204], [-1.5749902, -1.0945569]], [[1.7258823, 1.8637943],
             [1.8160808, 0.28657284], [-1.2005442, -1.6494642], [-0.96431655, 1.0164018]]])),
             (E('float32', (2, 2), [[-0.78749508, -0.54727846], [-0.48215827, 0.50820088]]),))),
    ],
}


ERRORS = [
    ('softmax_1d', lambda: K.softmax(c([1., 2.])),
     ValueError, 'Cannot apply softmax to a tensor that is 1D. Received input:'),
    ('gradients', lambda: K.gradients(K.sum(c(A)), [c(A)]),
     RuntimeError, 'tf.gradients is not supported when eager execution is enable'),
    ('batch_dot_rank1', lambda: K.batch_dot(c([1., 2.]), c(A)),
     ValueError, 'Cannot do batch_dot on inputs with rank < 2. Received inputs'),
    ('batch_dot_axis0', lambda: K.batch_dot(c(A), c(A), axes=0),
     ValueError, 'Cannot perform batch_dot over axis 0. If your inputs are not'),
    ('batch_dot_batch', lambda: K.batch_dot(c(A), c(X3[0])),
     ValueError, 'Cannot do batch_dot on inputs with different batch sizes. Re'),
    ('batch_dot_dims', lambda: K.batch_dot(c(A), c(np.ones((2, 4), 'float32'))),
     ValueError, 'Cannot do batch_dot on inputs with tf.shapes (2, 3) and (2, '),
    ('batch_dot_multi', lambda: K.batch_dot(c(A), c(A), axes=[[1], [1]]),
     ValueError, 'Multiple target dimensions are not supported. Expected: None'),
    ('switch_rank', lambda: K.switch(cb([[[True]]]), c(A), c(A)),
     ValueError, 'Rank of `condition` should be less than or equal to rank of '),
    ('switch_bcast', lambda: K.switch(cb([True, False]), c(A), c(A)),
     gt.errors.InvalidArgumentError, None),
    ('repeat_rank', lambda: K.repeat(c(X3), 2),
     ValueError, 'Expected input `x` to have rank 2. Received: rank(x)=3'),
    ('cce_shapes', lambda: K.categorical_crossentropy(c(T), c(np.ones((2, 4), 'float32'))),
     ValueError, 'Shapes (2, 3) and (2, 4) are incompatible'),
    ('bias_rank', lambda: K.bias_add(c(X3), c(np.ones((2, 2, 2), 'float32'))),
     ValueError, 'Unexpected bias dimensions 3. Expected it to be 1 or 2 dimen'),
    ('bias_format', lambda: K.bias_add(c(A), c([1., 2., 3.]), data_format='nchw'),
     ValueError, 'Unknown data_format: nchw'),
    ('conv_padding', lambda: K.conv2d(c(IMG), c(K2), padding='full'),
     ValueError, 'Invalid padding: full'),
    ('conv_format', lambda: K.conv2d(c(IMG), c(K2), data_format='NHWC'),
     ValueError, 'Unknown data_format: NHWC'),
    ('pool_mode', lambda: K.pool2d(c(IMG), (2, 2), pool_mode='sum'),
     ValueError, 'Invalid pooling mode: sum'),
    ('pool_size', lambda: K.pool2d(c(IMG), (2, 2, 2)),
     ValueError, '`pool_size` must be a tuple of 2 integers.'),
    ('pool_strides', lambda: K.pool2d(c(IMG), (2, 2), strides=(1,)),
     ValueError, '`strides` must be a tuple of 2 integers.'),
    ('pool3d_mode', lambda: K.pool3d(c(VOL), (1, 1, 1), pool_mode='min'),
     ValueError, 'Invalid pooling mode: min'),
    ('temporal_padding', lambda: K.temporal_padding(c(X3), (1, 1, 1)),
     ValueError, 'Expected `padding` to be a tuple of 2 integers. Received: pa'),
    ('spatial_2d_padding', lambda: K.spatial_2d_padding(c(IMG), ((1, 1),)),
     ValueError, 'Expected `padding` to be a tuple of 2 tuples of 2 integers. '),
    ('spatial_3d_padding', lambda: K.spatial_3d_padding(c(VOL), ((1, 1), (1, 1))),
     ValueError, 'Expected `padding` to be a tuple of 3 tuples of 2 integers. '),
    ('resize_interp', lambda: K.resize_images(c(IMG), 2, 2, 'channels_last', interpolation='foo'),
     ValueError, '`interpolation` argument should be one of: "area", "bicubic"'),
    ('resize_format', lambda: K.resize_images(c(IMG), 2, 2, 'nhwc'),
     ValueError, 'Invalid `data_format` argument: nhwc'),
    ('resize_volumes_format', lambda: K.resize_volumes(c(VOL), 2, 2, 2, 'x'),
     ValueError, 'Invalid data_format: x'),
    ('separable_strides', lambda: K.separable_conv2d(c(IMG), c(KD), c(KP), strides=(1, 1, 1)),
     ValueError, '`strides` must be a tuple of 2 integers.'),
    ('transpose_dilation', lambda: K.conv2d_transpose(c(IMG), c(KT), (2, 6, 7, 3),
        dilation_rate=(2, 1)),
     ValueError, 'Expected the 2 dimensions of the `dilation_rate` argument to'),
    ('eye_tuple', lambda: K.eye((2, 3)),
     TypeError, 'Arguments `num_rows` and `num_columns` must be positive inte'),
    ('variable_dtype', lambda: K.variable(ci([1, 2])),
     ValueError, 'initial_value: Tensor conversion requested dtype float32 for'),
    ('std_int', lambda: K.std(ci([1, 2])),
     TypeError, None),
    ('rnn_rank2', lambda: K.rnn(step, c(A), [c(np.zeros((2, 2), 'float32'))]),
     ValueError, 'Shape (3, 2) must have rank at least 3'),
    ('result_type_f8', lambda: K.result_type('float8_e4m3fn', 'float32'),
     ValueError, 'There is no implicit conversions from float8 dtypes to other'),
]


@pytest.mark.parametrize("group", sorted(CASES))
def test_matches_tf(group, device):
    """Each row: the function's value (dtype, shape, numbers, container types) as in TF."""
    for name, fn, want in CASES[group]:
        got = fn()
        check(got, want, f"{group}/{name}")
        for t in (got if isinstance(got, (list, tuple)) else [got]):
            if isinstance(t, gt.Tensor):
                assert t.device == device, f"{group}/{name}: on {t.device}"


@pytest.mark.parametrize("name,fn,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, exc, message):
    """Bad input raises TF's error type (and TF's message where it is the same)."""
    with pytest.raises(exc) as info:
        fn()
    if message is not None:
        assert str(info.value).startswith(message)


# tf.keras.backend's public names in TF 2.21
TF_BACKEND_NAMES = """
abs all any arange argmax argmin backend batch_dot batch_flatten batch_get_value
batch_normalization batch_set_value bias_add binary_crossentropy binary_focal_crossentropy
cast cast_to_floatx categorical_crossentropy categorical_focal_crossentropy clear_session
ctc_batch_cost ctc_decode ctc_label_dense_to_sparse
clip concatenate constant conv1d conv2d conv2d_transpose conv3d cos count_params cumprod
cumsum depthwise_conv2d dot dropout dtype elu epsilon equal eval exp expand_dims eye flatten
floatx foldl foldr gather get_uid get_value gradients greater greater_equal hard_sigmoid
image_data_format in_top_k int_shape is_float_dtype is_int_dtype is_keras_tensor is_sparse
l2_normalize less less_equal log map_fn max maximum mean min minimum moving_average_update
name_scope ndim not_equal one_hot ones ones_like permute_dimensions pool2d pool3d pow prod
random_bernoulli random_normal random_normal_variable random_uniform random_uniform_variable
relu repeat repeat_elements reshape resize_images resize_volumes result_type reverse rnn
round separable_conv2d set_epsilon set_floatx set_image_data_format set_value shape sigmoid
sign sin softmax softplus softsign sparse_categorical_crossentropy spatial_2d_padding
spatial_3d_padding sqrt square squeeze stack standardize_dtype std stop_gradient sum switch
tanh temporal_padding tile to_dense transpose truncated_normal update update_add update_sub
var variable zeros zeros_like
""".split()


def test_every_tf_name_present():
    missing = [n for n in TF_BACKEND_NAMES if not callable(getattr(K, n, None))]
    assert not missing
    assert set(TF_BACKEND_NAMES) <= set(K.__all__)
    assert len(TF_BACKEND_NAMES) == 137
    import gradtape.keras.backend as imported
    assert imported.rnn is K.rnn


def test_variables_and_state(device):
    z = K.zeros((2, 3), name="zz")
    assert isinstance(z, gt.Variable) and z.name == "zz:0" and z.device == device
    assert isinstance(K.ones((2,), dtype="int32"), gt.Variable)
    assert isinstance(K.eye(2), gt.Variable)
    assert not isinstance(K.zeros((0, 3)), gt.Variable)       # an empty shape: a tensor
    v = K.variable([1., 2.], name="v")
    assert K.update(v, [5., 6.]) is v and v.numpy().tolist() == [5., 6.]
    assert K.update_add(v, [1., 1.]) is v and v.numpy().tolist() == [6., 7.]
    assert K.update_sub(v, [2., 2.]) is v and v.numpy().tolist() == [4., 5.]
    K.moving_average_update(v, [0., 10.], 0.5)
    assert v.numpy().tolist() == [2., 7.5]
    # batch_set_value converts each value to the variable's dtype (TF truncates to int32)
    w = K.variable([1, 2], dtype="int32")
    K.batch_set_value([(w, [3.7, 4.2]), (v, np.array([1., 1.]))])
    assert w.numpy().tolist() == [3, 4] and w.dtype.name == "int32"
    assert v.numpy().tolist() == [1., 1.]
    with pytest.raises(ValueError, match="batch_set_value"):   # nothing assigned
        K.batch_set_value([(v, [9., 9.]), (w, [1, 2, 3])])
    assert v.numpy().tolist() == [1., 1.]
    assert [a.tolist() for a in K.batch_get_value([v, w])] == [[1., 1.], [3, 4]]
    assert K.count_params(K.zeros((3, 4))) == 12
    assert K.eval(K.cast_to_floatx(SP())).tolist() == [[1., 0., 2.], [0., 3., 0.]]
    out = K.cast_to_floatx([1, 2])
    assert isinstance(out, np.ndarray) and out.dtype == np.float32


def test_variable_from_scipy_style_sparse():
    class Coo:
        row, col = np.array([0, 1]), np.array([1, 0])
        data, shape = np.array([2., 3.]), (2, 2)

        def tocoo(self):
            return self
    sp = K.variable(Coo())
    assert K.is_sparse(sp)
    assert K.eval(sp).tolist() == [[0., 2.], [3., 0.]]
    assert K.to_dense(sp).dtype.name == "float64"      # TF keeps the matrix's dtype


def test_get_uid_shares_layer_names():
    K.clear_session()
    assert K.get_uid("dense") == 1 and K.get_uid("dense") == 2
    assert gt.keras.layers.Dense(2).name == "dense_2"
    assert K.get_uid("dense") == 4 and K.get_uid() == 1
    K.clear_session()
    assert K.get_uid("dense") == 1
    K.clear_session()


def test_random(device):
    np.random.seed(0)
    for fn, args in ((K.random_uniform, {"minval": -2., "maxval": 3.}),
                     (K.random_normal, {"mean": 1., "stddev": 2.}),
                     (K.truncated_normal, {"mean": 1., "stddev": 2.})):
        x = fn((400,), **args, seed=3)
        assert x.shape == (400,) and x.dtype.name == "float32" and x.device == device
        a = x.numpy()
        if fn is K.random_uniform:
            assert a.min() >= -2. and a.max() < 3. and abs(a.mean() - 0.5) < 0.3
        else:
            assert abs(a.mean() - 1.) < 0.4 and abs(a.std() - (2. if fn is K.random_normal
                                                              else 1.76)) < 0.3
        if fn is K.truncated_normal:
            assert a.min() >= -3. and a.max() <= 5.
    ints = K.random_uniform((50,), 0, 10, dtype="int32").numpy()
    assert ints.dtype == np.int32 and ints.min() >= 0 and ints.max() < 10
    assert K.random_normal((2,), dtype="float64").dtype.name == "float64"
    b = K.random_bernoulli((200,), p=0.3).numpy()
    assert set(b.tolist()) <= {0., 1.} and 0.15 < b.mean() < 0.45
    assert K.random_bernoulli((5,), p=0.).numpy().tolist() == [0.] * 5
    assert K.random_bernoulli((5,), p=1., dtype="float64").numpy().tolist() == [1.] * 5
    v = K.random_uniform_variable((2, 3), -1., 1., name="ru")
    assert isinstance(v, gt.Variable) and v.name == "ru:0" and v.shape == (2, 3)
    assert -1. <= v.numpy().min() and v.numpy().max() < 1.
    v = K.random_normal_variable((3,), 0., 1., dtype="float64")
    assert isinstance(v, gt.Variable) and v.dtype.name == "float64"
    d = K.dropout(gt.ones((200,)), 0.25, seed=1).numpy()
    assert np.all((d == 0) | np.isclose(d, 4. / 3.)) and 0.1 < (d == 0).mean() < 0.4
    d = K.dropout(gt.ones((4, 6)), 0.5, noise_shape=(4, 1)).numpy()
    assert all(len(set(row.tolist())) == 1 for row in d)       # whole rows kept or dropped


def test_misc_semantics():
    with K.name_scope("block") as scope:
        assert scope == "block/"
    # stop_gradient: no gradient through it (a list gives a list)
    x = gt.constant([1., 2.])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = K.sum(K.stop_gradient(x) * x)
    assert tape.gradient(y, x).numpy().tolist() == [1., 2.]
    assert isinstance(K.stop_gradient([x, x]), list)
    # sparse_categorical_crossentropy's ignore_class mask rides on the result
    res = K.sparse_categorical_crossentropy(ci([[1, -1, 3]]), c(X3[:1]), from_logits=True,
                                            ignore_class=-1)
    assert res._keras_mask.numpy().tolist() == [[True, False, True]]
    # a scalar switch calls only the branch it takes
    called = []
    K.switch(cb(True), lambda: called.append("then") or c(1.),
             lambda: called.append("else") or c(2.))
    assert called == ["then"]
    # K.mean of a bool follows floatx
    K.set_floatx("float64")
    try:
        assert K.mean(cb([True, False])).dtype.name == "float64"
        assert K.constant(1.).dtype.name == "float64"
        assert K.variable([1.]).dtype.name == "float64"
    finally:
        K.set_floatx("float32")
    with pytest.raises(ValueError, match="dot"):
        K.dot(c(X3), c([1., 2., 3., 4.]))
    with pytest.raises(gt.errors.InvalidArgumentError):
        K.dot(c([1., 2.]), c(A))
    with pytest.raises(gt.errors.InvalidArgumentError, match="repeat_elements"):
        K.repeat_elements(c(A), 0, 1)
