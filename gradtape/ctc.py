"""Connectionist Temporal Classification as TensorFlow 2 has it (``tf.nn.ctc_*``).

* :func:`ctc_loss` is ``tf.nn.ctc_loss`` (``ctc_loss_v3``). Dense labels follow TF's
  ``ctc_loss_dense``: its state machine (a start state, label states, blank states), its
  stand-in for ``log(0)`` (``log(1e-307)`` as float32, -706.89...) as the initial weight of
  every state but the start and as the final weight of every state but the two final ones, and
  its label shift for ``blank_index != 0``. So the numbers match TF's also where TF's are odd:
  an alignment that cannot fit gives a finite loss near 706.9 and a finite gradient, a
  ``logit_length`` of 0 gives 0 (``label_length`` 0) or 706.89, padding past
  ``label_length`` only matters through such terms. ``SparseTensor`` labels follow TF's
  ``CTCLoss`` kernel: labels are checked as the kernel checks them (a row without labels, a
  label sequence longer than its ``logit_length``, a negative label raise
  ``InvalidArgumentError``), a sequence whose repeats need more frames than it has gives an
  infinite loss and the softmax as gradient, a ``logit_length`` of 0 gives 0.
  The loss is one primitive: its forward runs the log-space alpha recursion over time,
  vectorised over the batch and the states, and its rule runs alpha and beta and returns
  ``softmax - state occupancy`` times the upstream gradient (TF's gradient). As in TF (whose
  dense path gives NaN and whose sparse path raises for it), there is no second derivative:
  ``softmax - occupancy`` is computed by a primitive that is not recorded, so a tape around
  the first gradient sees a constant times the upstream gradient (forward mode works).
  float16/bfloat16 logits are computed in float32 and the loss is cast back, as TF does;
  float64 logits are computed in float64 (TF's dense path refuses them).
* :func:`ctc_greedy_decoder` and :func:`ctc_beam_search_decoder` are TF's decoders (the
  ``CTCGreedyDecoder`` and ``CTCBeamSearchDecoder`` CPU kernels): TF's prefix beam search with
  its beam bookkeeping, read on the host as TF's kernels run on the CPU; not differentiable.
* :func:`collapse_repeated` and :func:`ctc_unique_labels` are TF's label utilities.
* :func:`ctc_batch_cost`, :func:`ctc_decode` and :func:`ctc_label_dense_to_sparse` are the
  legacy ``tf.keras.backend`` functions (Keras' ``keras/src/legacy/backend.py``).
"""
from __future__ import annotations

import heapq
import math
import numbers

import numpy as np

from .backend import DeviceError
from .errors import FailedPreconditionError
from .registry import InvalidArgumentError, apply, defop
from .sparse import SparseTensor
from .tensor import Tensor
from .ops._util import as_tensor, device_array, dtype_name

__all__ = ["ctc_loss", "ctc_greedy_decoder", "ctc_beam_search_decoder", "collapse_repeated",
           "ctc_unique_labels", "ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse"]

# TF's log(0) in ctc_state_log_probs: log(1e-307) computed in float64, cast to float32
_LOG0 = float(np.float32(np.log(np.float64(1e-307))))
_NEG = -math.inf


# --- the recursion (raw arrays of one namespace) ----------------------------------------------

class _Lattice:
    """The CTC lattice of one batch: emissions per state and frame, transitions, weights.

    States are ``s = 0 .. 2L``: even ``s`` the blank before label ``s // 2`` (and after the
    last), odd ``s`` label ``(s - 1) // 2``. TF's dense start state is folded into the first
    frame's weights ``start``."""

    def __init__(self, xp, logits, labels, label_length, logit_length, blank, time_major,
                 kernel):
        self.xp = xp
        x = logits if time_major else xp.swapaxes(logits, 0, 1)      # [T, B, C]
        n_t, n_b, n_c = x.shape
        n_l = labels.shape[1]
        n_s = 2 * n_l + 1
        self.shape = (n_t, n_b, n_c, n_l, n_s)
        self.dt = dt = x.dtype
        self.kernel = kernel
        self.blank = blank
        lab = labels.astype(np.int64)
        self.lab_len = lab_len = label_length.astype(np.int64)
        self.lens = xp.clip(logit_length.astype(np.int64), 0, n_t)
        if kernel:
            # the CTCLoss kernel: softmax, then its log (0 -> -inf)
            e = xp.exp(x - x.max(axis=2, keepdims=True)) if n_t else x
            y = e / e.sum(axis=2, keepdims=True) if n_t else x
            lp = xp.where(y > 0, xp.log(xp.where(y > 0, y, 1)), _NEG).astype(dt)
            pos = xp.arange(n_l)[None, :]
            valid = pos < lab_len[:, None]
            cls = xp.where(valid, lab, 0)
            keep = valid
            key = lab
        else:
            # ctc_loss_dense: log_softmax; labels shifted as TF shifts them (the blank moved to
            # class 0), a label outside the classes emits with log-probability 0 (TF's one_hot)
            z = x - x.max(axis=2, keepdims=True) if n_t else x
            lp = z - xp.log(xp.exp(z).sum(axis=2, keepdims=True)) if n_t else x
            y = xp.exp(lp)
            key = xp.where(lab < blank, lab + 1, lab) if blank != 0 else lab
            valid = (key >= 0) & (key < n_c)
            cls = xp.where(key == 0, blank, xp.where(key <= blank, key - 1, key))
            cls = xp.where(valid, cls, 0)
            keep = valid & (key != 0)
        self.y, self.cls, self.keep = y, cls, keep
        lab_e = xp.take_along_axis(lp, xp.broadcast_to(cls[None], (n_t, n_b, n_l)), axis=2)
        if not kernel:
            lab_e = xp.where(valid[None], lab_e, 0)
        blank_e = lp[:, :, blank:blank + 1]
        inter = xp.stack([xp.broadcast_to(blank_e, (n_t, n_b, n_l)), lab_e], axis=3)
        self.emit = xp.concatenate([inter.reshape(n_t, n_b, 2 * n_l), blank_e], axis=2)
        # skip transitions: label i-1 -> label i when they differ
        diff = key[:, 1:] != key[:, :-1]
        odd = xp.concatenate([xp.zeros((n_b, min(n_l, 1)), dtype=bool), diff], axis=1)
        skip = xp.stack([xp.zeros((n_b, n_l), dtype=bool), odd], axis=2).reshape(n_b, 2 * n_l)
        self.skip = xp.concatenate([skip, xp.zeros((n_b, 1), dtype=bool)], axis=1)
        self.skip_next = xp.concatenate([self.skip, xp.zeros((n_b, 2), dtype=bool)],
                                        axis=1)[:, 2:]
        s_idx = xp.arange(n_s)[None, :]
        # the start state enters blank 0 and label 1 (TF's transition matrix gives the blank
        # weight 2 when there is no label state: two transitions scattered to one place)
        first = math.log(2.0) if (n_l == 0 and not kernel) else 0.0
        self.start = xp.where(s_idx == 0, first, xp.where(s_idx == 1, 0.0, _NEG)).astype(dt)
        two = 2 * lab_len[:, None]
        final = (s_idx == two) | ((s_idx == two - 1) & (lab_len[:, None] >= 1))
        self.final = xp.where(final, 0.0, _NEG if kernel else _LOG0).astype(dt)
        self.ninf = xp.full((n_b, 2), _NEG, dtype=dt)

    def step(self, a):
        """One frame forward (before the emission): stay, advance, skip."""
        xp, n_s = self.xp, self.shape[4]
        a1 = xp.concatenate([self.ninf[:, :1], a], axis=1)[:, :n_s]
        a2 = xp.concatenate([self.ninf, a], axis=1)[:, :n_s]
        a2 = xp.where(self.skip, a2, _NEG)
        return xp.logaddexp(xp.logaddexp(a, a1), a2)

    def back_step(self, v):
        """One frame backward: ``v`` is beta plus the emission of the next frame."""
        xp = self.xp
        v1 = xp.concatenate([v, self.ninf[:, :1]], axis=1)[:, 1:]
        v2 = xp.concatenate([v, self.ninf], axis=1)[:, 2:]
        v2 = xp.where(self.skip_next, v2, _NEG)
        return xp.logaddexp(xp.logaddexp(v, v1), v2)

    def normalize(self, a):
        xp = self.xp
        m = a.max(axis=1)
        m = xp.where(xp.isfinite(m), m, 0).astype(self.dt)
        return a - m[:, None], m

    def lse(self, v, axis):
        xp = self.xp
        m = v.max(axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)
        s = xp.exp(v - m).sum(axis=axis, keepdims=True)
        out = xp.where(s > 0, xp.log(xp.where(s > 0, s, 1)), _NEG) + m
        return out.squeeze(axis)

    def loss(self):
        """The negative log-likelihood per batch entry (alpha from the start state)."""
        xp = self.xp
        n_t = self.shape[0]
        if n_t:
            a, c = self.normalize(self.start + self.emit[0])
            for t in range(1, n_t):
                new, m = self.normalize(self.step(a) + self.emit[t])
                live = t < self.lens
                a = xp.where(live[:, None], new, a)
                c = c + xp.where(live, m, 0)
            ll = self.lse(a + self.final, 1) + c
        else:
            ll = xp.zeros(self.shape[1], dtype=self.dt)
        empty = 0.0 if self.kernel else xp.where(self.lab_len == 0, 0.0, _LOG0)
        return (-xp.where(self.lens > 0, ll, empty)).astype(self.dt)

    def grad(self):
        """``softmax - occupancy`` per frame ``[T, B, C]``, zero past ``logit_length``."""
        xp = self.xp
        n_t, n_b, n_c, n_l, n_s = self.shape
        if n_t == 0:
            return xp.zeros((0, n_b, n_c), dtype=self.dt)
        if self.kernel:
            a = self.start + self.emit[0]
        else:
            # TF's forward pass starts every other state at log(0)'s stand-in
            init = xp.full((n_b, n_s), _LOG0, dtype=self.dt)
            a = xp.logaddexp(self.step(init), self.start) + self.emit[0]
        alphas = [self.normalize(a)[0]]
        for t in range(1, n_t):
            alphas.append(self.normalize(self.step(alphas[-1]) + self.emit[t])[0])
        betas = [None] * n_t
        b = betas[n_t - 1] = self.final
        for t in range(n_t - 2, -1, -1):
            cand = self.normalize(self.back_step(b + self.emit[t + 1]))[0]
            b = betas[t] = xp.where((t + 1 < self.lens)[:, None], cand, self.final)
        gam = xp.stack(alphas) + xp.stack(betas)                        # [T, B, S]
        m = gam.max(axis=2, keepdims=True)
        e = xp.exp(gam - xp.where(xp.isfinite(m), m, 0))
        tot = e.sum(axis=2, keepdims=True)
        occ = e / xp.where(tot > 0, tot, 1)
        base = (xp.arange(n_t)[:, None] * n_b + xp.arange(n_b)[None, :]) * n_c   # [T, B]
        flat = xp.zeros(n_t * n_b * n_c, dtype=self.dt)
        xp.add.at(flat, (base + self.blank).reshape(-1), occ[:, :, 0::2].sum(axis=2).reshape(-1))
        if n_l:
            idx = base[:, :, None] + self.cls[None]
            vals = xp.where(self.keep[None], occ[:, :, 1::2], 0)
            xp.add.at(flat, idx.reshape(-1), vals.reshape(-1))
        live = (xp.arange(n_t)[:, None] < self.lens[None, :])[:, :, None]
        return xp.where(live, self.y - flat.reshape(n_t, n_b, n_c), 0).astype(self.dt)


def _loss_fwd(xp, logits, labels, label_length, logit_length, *, blank, time_major, kernel):
    return _Lattice(xp, logits, labels, label_length, logit_length, blank, time_major,
                    kernel).loss()


def _loss_vjp(ops, needs, g, ans, logits, labels, label_length, logit_length, *, blank,
              time_major, kernel):
    if not needs[0]:
        return None, None, None, None
    grad = ops.ctc_loss_grad(logits, labels, label_length, logit_length, blank=blank,
                             time_major=time_major, kernel=kernel)
    n_b = g.shape[0]
    scale = ops.reshape(g, shape=(1, n_b, 1) if time_major else (n_b, 1, 1), in_shape=(n_b,))
    return grad * scale, None, None, None


def _grad_fwd(xp, logits, labels, label_length, logit_length, *, blank, time_major, kernel):
    grad = _Lattice(xp, logits, labels, label_length, logit_length, blank, time_major,
                    kernel).grad()
    return grad if time_major else xp.ascontiguousarray(xp.swapaxes(grad, 0, 1))


_loss_op = defop("ctc_loss", _loss_fwd, _loss_vjp, save_output=False, batch_rule=False)
# TF has no second derivative of ctc_loss: the gradient ``softmax - occupancy`` is not
# recorded (only its product with the upstream gradient is, so forward mode works)
_grad_op = defop("ctc_loss_grad", _grad_fwd, nondiff=True)


# --- argument handling ------------------------------------------------------------------------

def _int_tensor(value, dev, what, opname) -> Tensor:
    """``value`` as an integer tensor on ``dev`` (tensors keep their integer dtype)."""
    if isinstance(value, Tensor):
        if value._value.dtype.kind not in "iu":
            raise TypeError(f"{opname}: {what} must be integers, got a tensor of dtype "
                            f"{dtype_name(value)}")
        if value._device is not dev:
            raise DeviceError(f"{opname}: {what} is on {value._device}, logits on {dev}")
        return value
    if value is None:
        raise TypeError(f"{opname}: {what} must be an integer tensor, got None")
    if dev.is_native(value) and not isinstance(value, np.ndarray):
        arr = value
    else:
        arr = np.asarray(value)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int32)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be integers, got values of dtype {arr.dtype}")
    return Tensor(device_array(arr, dev), dev)


def _float_input(x, opname):
    """The logits tensor and the dtype the loss is computed in (float16/bfloat16 in float32,
    as TF)."""
    x = as_tensor(x, opname)
    name = dtype_name(x)
    if name in ("float16", "bfloat16"):
        from .ops.core import cast
        return cast(x, "float32"), name
    if name not in ("float32", "float64"):
        raise TypeError(f"{opname}: logits must be float16, bfloat16, float32 or float64, got "
                        f"{name}")
    return x, None


def _check_blank(blank_index, n_c, opname):
    if isinstance(blank_index, Tensor):
        blank_index = blank_index.numpy()
    if isinstance(blank_index, (bool, np.bool_)) or not isinstance(
            blank_index, (numbers.Integral, np.integer)):
        raise TypeError(f"{opname}: blank_index must be an integer, got {blank_index!r}")
    b = int(blank_index)
    if not -n_c <= b < n_c:
        raise InvalidArgumentError(f"{opname}: blank_index {b} is outside [{-n_c}, {n_c}) for "
                                   f"{n_c} classes")
    return b + n_c if b < 0 else b


def _lengths(value, dev, n_b, what, opname) -> Tensor:
    t = _int_tensor(value, dev, what, opname)
    if tuple(t._value.shape) != (n_b,):
        raise ValueError(f"{opname}: {what} must have shape [{n_b}] (one per batch entry), got "
                         f"{tuple(t._value.shape)}")
    return t


def _host_ints(t: Tensor) -> np.ndarray:
    return np.asarray(t.numpy()).astype(np.int64)


def _kernel_labels(indices, values, n_b, n_c, seq_len, opname):
    """Labels of the ``CTCLoss`` kernel (blank last, ``values`` already shifted), checked as
    the kernel checks them: a dense ``[B, L]`` array of class ids (blank last) and lengths."""
    if indices.shape[0] and (indices[:, 0].min() < 0 or indices[:, 0].max() >= n_b):
        raise InvalidArgumentError(f"{opname}: label batch indices must be in [0, {n_b})")
    order = np.lexsort((indices[:, 1], indices[:, 0])) if indices.shape[0] else []
    rows = [[] for _ in range(n_b)]
    for k in order:
        rows[int(indices[k, 0])].append(int(values[k]))
    seqs = []
    for b, label in enumerate(rows):
        if not label:
            raise InvalidArgumentError(f"{opname}: Labels length is zero in batch {b}")
        kept, finished = [], False
        for v in label:
            if v >= n_c - 1:
                finished = True
            elif finished:
                raise InvalidArgumentError(
                    f"{opname}: Saw a non-null label (index >= num_classes - 1) following a "
                    f"null label, batch: {b} num_classes: {n_c} labels: "
                    f"{','.join(map(str, label))} labels seen so far: "
                    f"{','.join(map(str, kept))}")
            else:
                kept.append(v)
        if any(v < 0 for v in kept):
            raise InvalidArgumentError(f"{opname}: All labels must be nonnegative integers, "
                                       f"batch: {b} labels: {','.join(map(str, kept))}")
        if len(label) > seq_len[b]:
            raise InvalidArgumentError(
                f"{opname}: Not enough time for target transition sequence (required: "
                f"{len(label)}, available: {int(seq_len[b])}) in batch {b}")
        seqs.append(kept)
    n_l = max([len(s) for s in seqs] + [0])
    dense = np.zeros((n_b, n_l), np.int64)
    for b, s in enumerate(seqs):
        dense[b, :len(s)] = s
    return dense, np.array([len(s) for s in seqs], np.int64)


def _kernel_loss(sp_indices, sp_values, logits, logit_length, blank, time_major, opname):
    """The ``CTCLoss`` kernel's loss: ``sp_values`` are its labels (the blank taken as the last
    class); ``blank`` is the logits' class the kernel sees last."""
    x, back = _float_input(logits, opname)
    if x._value.ndim != 3:
        raise ValueError(f"{opname}: logits must have rank 3, got shape {tuple(x.shape)}")
    shape = tuple(x._value.shape)
    n_t, n_b = (shape[0], shape[1]) if time_major else (shape[1], shape[0])
    n_c = shape[2]
    if n_c == 0:
        raise InvalidArgumentError(f"{opname}: logits have no classes")
    dev = x._device
    seq = _host_ints(_lengths(logit_length, dev, n_b, "logit_length", opname))
    for b in range(n_b):
        if seq[b] < 0:
            raise InvalidArgumentError(f"{opname}: seq_len({b}) < 0")
        if seq[b] > n_t:
            raise InvalidArgumentError(f"{opname}: sequence_length({b}) <= {n_t}")
    dense, lens = _kernel_labels(sp_indices, sp_values, n_b, n_c, seq, opname)
    orig = np.where(dense < blank, dense, dense + 1)        # class ids of the given logits
    args = (x, Tensor(dev.asarray(orig), dev), Tensor(dev.asarray(lens), dev),
            Tensor(dev.asarray(seq), dev))
    loss = apply(_loss_op, args, {"blank": blank, "time_major": bool(time_major),
                                  "kernel": True})
    return _cast_back(loss, back)


def _cast_back(loss, back):
    if back is None:
        return loss
    from .ops.core import cast
    return cast(loss, back)


# --- the loss ---------------------------------------------------------------------------------

def ctc_loss(labels, logits, label_length, logit_length, logits_time_major=True, unique=None,
             blank_index=None, name=None):
    """The CTC loss (negative log-likelihood) of each batch entry, as ``tf.nn.ctc_loss``.

    ``labels``: ``[batch, max_label_length]`` integers with ``label_length``, or a
    ``gt.sparse.SparseTensor`` (``label_length`` None, ``blank_index`` required). ``logits``:
    ``[frames, batch, classes]`` (``[batch, frames, classes]`` with
    ``logits_time_major=False``); ``logit_length``: ``[batch]``. ``blank_index`` defaults to 0
    for dense labels; a negative one counts from the end. ``unique`` (TF's TPU fast path,
    from :func:`ctc_unique_labels`) gives the same numbers and is accepted as such.
    Returns ``[batch]`` in the logits' dtype. See the module docstring for TF's edge cases
    that are matched."""
    opname = "ctc_loss"
    if unique is not None and (not isinstance(unique, (tuple, list)) or len(unique) != 2):
        raise TypeError(f"{opname}: unique must be the pair (unique_labels, unique_indices) "
                        f"from ctc_unique_labels, got {unique!r}")
    x0 = as_tensor(logits, opname)
    if x0._value.ndim != 3:
        raise ValueError(f"{opname}: logits must have rank 3 ([frames, batch, classes] or "
                         f"[batch, frames, classes]), got shape {tuple(x0._value.shape)}")
    n_c = x0._value.shape[2]
    if isinstance(labels, SparseTensor):
        if blank_index is None:
            raise ValueError("Argument `blank_index` must be provided when `labels` is a "
                             "`SparseTensor`.")
        blank = _check_blank(blank_index, n_c, opname)
        if labels.values._value.dtype.kind not in "iu":
            raise TypeError(f"{opname}: labels must be integers, got a SparseTensor of dtype "
                            f"{labels.dtype.name}")
        if len(labels.shape) != 2:
            raise ValueError(f"{opname}: sparse labels must have rank 2, got shape "
                             f"{labels.shape}")
        ind = np.asarray(labels.indices.numpy()).astype(np.int64).reshape(-1, 2)
        vals = np.asarray(labels.values.numpy()).astype(np.int64)
        vals = np.where(vals < blank, vals, vals - 1)        # TF moves the blank last
        return _kernel_loss(ind, vals, x0, logit_length, blank, logits_time_major, opname)
    x, back = _float_input(x0, opname)
    blank = 0 if blank_index is None else _check_blank(blank_index, n_c, opname)
    dev = x._device
    n_b = x._value.shape[1] if logits_time_major else x._value.shape[0]
    lab = _int_tensor(labels, dev, "labels", opname)
    if lab._value.ndim != 2 or lab._value.shape[0] != n_b:
        raise ValueError(f"{opname}: labels must have shape [batch={n_b}, max_label_length], "
                         f"got {tuple(lab._value.shape)}")
    if label_length is None:
        raise ValueError(f"{opname}: label_length is required with dense labels")
    lab_len = _lengths(label_length, dev, n_b, "label_length", opname)
    logit_len = _lengths(logit_length, dev, n_b, "logit_length", opname)
    loss = apply(_loss_op, (x, lab, lab_len, logit_len),
                 {"blank": blank, "time_major": bool(logits_time_major), "kernel": False})
    return _cast_back(loss, back)


# --- label utilities --------------------------------------------------------------------------

def _place(host, dev) -> Tensor:
    return Tensor(dev.asarray(np.ascontiguousarray(host)), dev)


def collapse_repeated(labels, seq_length, name=None):
    """Repeated labels merged into one, as ``tf.nn.collapse_repeated``: ``(collapsed
    [batch, new_max_length] padded with 0, new lengths)``, in ``labels``' and
    ``seq_length``'s dtypes; only the first ``seq_length`` labels of a row count."""
    opname = "collapse_repeated"
    lab = as_tensor(labels, opname)
    if lab._value.ndim != 2:
        raise ValueError(f"{opname}: labels must have rank 2, got shape {tuple(lab.shape)}")
    dev = lab._device
    sl = _int_tensor(seq_length, dev, "seq_length", opname)
    if tuple(sl._value.shape) != (lab._value.shape[0],):
        raise ValueError(f"{opname}: seq_length must have shape [{lab._value.shape[0]}], got "
                         f"{tuple(sl._value.shape)}")
    host = np.asarray(lab.numpy())
    n = _host_ints(sl)
    n_b, n_l = host.shape
    mask = np.ones((n_b, n_l), bool)
    if n_l:
        mask[:, 1:] = host[:, 1:] != host[:, :-1]
    mask &= np.arange(n_l)[None, :] < n[:, None]
    new_len = mask.sum(axis=1)
    out = np.zeros((n_b, int(new_len.max()) if n_b else 0), host.dtype)
    for b in range(n_b):
        out[b, :new_len[b]] = host[b][mask[b]]
    return _place(out, dev), _place(new_len.astype(sl._value.dtype), dev)


def ctc_unique_labels(labels, name=None):
    """The unique labels of each row, as ``tf.nn.ctc_unique_labels``: ``[unique labels
    (order of first appearance, padded with 0) int64, index of each label in them int32]``,
    both ``[batch, max_label_length]``."""
    opname = "ctc_unique_labels"
    lab = as_tensor(labels, opname)
    if lab._value.ndim != 2 or lab._value.dtype.kind not in "iu":
        raise ValueError(f"{opname}: labels must be integers of rank 2, got "
                         f"{dtype_name(lab)} of shape {tuple(lab.shape)}")
    host = np.asarray(lab.numpy())
    n_b, n_l = host.shape
    uy = np.zeros((n_b, n_l), np.int64)
    ui = np.zeros((n_b, n_l), np.int32)
    for b in range(n_b):
        seen = {}
        for i, v in enumerate(host[b].tolist()):
            ui[b, i] = seen.setdefault(v, len(seen))
        uy[b, :len(seen)] = list(seen)
    return [_place(uy, lab._device), _place(ui, lab._device)]


# --- decoders ---------------------------------------------------------------------------------

def _decoder_inputs(inputs, sequence_length, opname):
    x = as_tensor(inputs, opname)
    if dtype_name(x) not in ("float32", "float64"):
        raise InvalidArgumentError(f"{opname}: inputs must be float32 or float64, got "
                                   f"{dtype_name(x)}")
    if x._value.ndim != 3:
        raise InvalidArgumentError(f"{opname}: inputs is not a 3-Tensor (shape "
                                   f"{tuple(x.shape)})")
    n_t, n_b, n_c = x._value.shape
    sl = _int_tensor(sequence_length, x._device, "sequence_length", opname)
    if sl._value.ndim != 1:
        raise InvalidArgumentError(f"{opname}: sequence_length is not a vector (shape "
                                   f"{tuple(sl.shape)})")
    if sl._value.shape[0] != n_b:
        raise FailedPreconditionError(f"{opname}: len(sequence_length) != batch_size.  "
                                      f"len(sequence_length):  {sl._value.shape[0]} "
                                      f"batch_size: {n_b}")
    seq = _host_ints(sl)
    for b in range(n_b):
        if seq[b] > n_t:
            raise FailedPreconditionError(f"{opname}: sequence_length({b}) <= {n_t}")
    if n_c == 0:
        raise InvalidArgumentError(f"{opname}: inputs must not be empty")
    return x, np.asarray(x.numpy()), seq


def _sparse_paths(paths, n_b, dev):
    """A SparseTensor ``[batch, longest]`` of one decoded path per batch entry."""
    idx = [(b, j) for b, p in enumerate(paths) for j in range(len(p))]
    vals = [v for p in paths for v in p]
    ind = np.array(idx, np.int64).reshape(-1, 2)
    width = max([len(p) for p in paths] + [0])
    return SparseTensor._make(_place(ind, dev), _place(np.array(vals, np.int64), dev),
                              (n_b, width))


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """Best-path decoding, as ``tf.nn.ctc_greedy_decoder``: the highest logit per frame
    (the first on ties), repeats merged with ``merge_repeated`` (a blank between two equal
    labels keeps both), blanks (``blank_index``, default ``classes - 1``) dropped.
    ``inputs``: ``[frames, batch, classes]``. Returns ``([SparseTensor [batch, longest]],
    neg_sum_logits [batch, 1])``."""
    opname = "ctc_greedy_decoder"
    x, host, seq = _decoder_inputs(inputs, sequence_length, opname)
    n_t, n_b, n_c = host.shape
    if blank_index is None:
        blank = n_c - 1
    else:
        blank = int(blank_index)
        if not -n_c <= blank < n_c:
            raise InvalidArgumentError(f"{opname}: blank_index expected to be between "
                                       f"{-n_c} and {n_c - 1} but was {blank}")
        blank = blank + n_c if blank < 0 else blank
    best = host.argmax(axis=2)
    top = host.max(axis=2)
    score = np.zeros(n_b, host.dtype)
    paths = [[] for _ in range(n_b)]
    for b in range(n_b):
        prev = -1
        for t in range(int(seq[b])):
            score[b] = score[b] + (-top[t, b])
            k = int(best[t, b])
            if k != blank and not (merge_repeated and k == prev):
                paths[b].append(k)
            prev = k
    return [_sparse_paths(paths, n_b, x._device)], _place(score.reshape(n_b, 1), x._device)


class _Beam:
    """A prefix of TF's beam search: probabilities (old/new; total, ending in blank, ending in
    its label) and its children by label."""

    __slots__ = ("parent", "label", "children", "ot", "ob", "ol", "nt", "nb", "nl")

    def __init__(self, parent, label):
        self.parent, self.label, self.children = parent, label, {}
        self.ot = self.ob = self.ol = self.nt = self.nb = self.nl = _NEG

    def labels(self, merge_repeated):
        out, prev, e = [], -1, self
        while e.parent is not None:
            if not merge_repeated or e.label != prev:
                out.append(e.label)
            prev = e.label
            e = e.parent
        return out[::-1]


def _lse(a, b):
    if a == _NEG:
        return b
    if b == _NEG:
        return a
    return a + math.log1p(math.exp(b - a)) if a > b else b + math.log1p(math.exp(a - b))


def _beam_one(x, width, top_paths, merge_repeated, opname):
    """TF's ``CTCBeamSearchDecoder`` on one sequence ``x`` ``[frames, classes]`` (the blank
    last): the best ``top_paths`` label sequences and their log-probabilities."""
    n_c = x.shape[1]
    blank = n_c - 1
    root = _Beam(None, -1)
    root.nt = root.nb = 0.0
    leaves = [root]
    for row in x:
        mx = row.max()
        lp = row - (mx + math.log(np.exp(row - mx).sum()))
        lp_list = lp.tolist()
        branches = sorted(leaves, key=lambda e: -e.nt)
        for e in branches:
            e.ot, e.ob, e.ol = e.nt, e.nb, e.nl
        for e in branches:
            if e.parent is not None:
                p = e.parent
                if p.nt != _NEG:
                    e.nl = _lse(e.nl, p.ob if e.label == p.label else p.ot)
                e.nl += lp_list[e.label]
            e.nb = e.ot + lp_list[blank]
            e.nt = _lse(e.nb, e.nl)
        # the beam: a min-heap on the new totals (the bottom is the entry to drop)
        heap = [(e.nt, k, e) for k, e in enumerate(branches)]
        heapq.heapify(heap)
        count = len(heap)
        labels_lp = lp[:blank]
        for e in branches:
            full = len(heap) >= width
            if not (e.ot > _NEG and (not full or e.ot > heap[0][0])):
                continue
            scores = labels_lp + e.ot
            if 0 <= e.label < blank:
                scores[e.label] = lp_list[e.label] + e.ob
            # the labels that can enter the beam (the bottom only rises), and the existing
            # children: an inactive one that does not enter is reset, old probabilities too
            # (which stops a branch dropped earlier in this step from expanding), as TF does
            cut = heap[0][0] if full else _NEG
            visit = set(np.nonzero(scores > cut)[0].tolist())
            visit.update(e.children)
            for lab in sorted(visit):
                c = e.children.get(lab)
                if c is not None and c.nt != _NEG:
                    continue
                s = float(scores[lab])
                if s > _NEG and (len(heap) < width or s > heap[0][0]):
                    if c is None:
                        c = e.children[lab] = _Beam(e, lab)
                    c.nb, c.nl, c.nt = _NEG, s, s
                    if len(heap) >= width:
                        dropped = heapq.heappop(heap)[2]
                        dropped.nt = dropped.nb = dropped.nl = _NEG
                    count += 1
                    heapq.heappush(heap, (s, count, c))
                elif c is not None:
                    c.ot = c.ob = c.ol = c.nt = c.nb = c.nl = _NEG
        leaves = [h[2] for h in heap]
    if top_paths > width:
        raise InvalidArgumentError(f"{opname}: requested more paths than the beam width.")
    if top_paths > len(leaves):
        raise InvalidArgumentError(f"{opname}: Less leaves in the beam search than requested.")
    best = sorted(leaves, key=lambda e: -e.nt)[:top_paths]
    return [e.labels(merge_repeated) for e in best], [e.nt for e in best]


def _beam_search(inputs, sequence_length, beam_width, top_paths, merge_repeated, opname):
    for what, v in (("beam_width", beam_width), ("top_paths", top_paths)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError(f"{opname}: {what} must be an integer, got {v!r}")
        if v < 1:
            raise InvalidArgumentError(f"{opname}: Value for attr '{what}' of {v} must be at "
                                       "least minimum 1")
    x, host, seq = _decoder_inputs(inputs, sequence_length, opname)
    n_t, n_b, n_c = host.shape
    paths = [[None] * n_b for _ in range(top_paths)]
    logp = np.zeros((n_b, top_paths), host.dtype)
    for b in range(n_b):
        ps, ls = _beam_one(host[:max(int(seq[b]), 0), b].astype(np.float64), int(beam_width),
                           int(top_paths), merge_repeated, opname)
        for j in range(top_paths):
            paths[j][b] = ps[j]
            logp[b, j] = ls[j]
    dev = x._device
    return [_sparse_paths(p, n_b, dev) for p in paths], _place(logp, dev)


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1):
    """Beam-search decoding, as ``tf.nn.ctc_beam_search_decoder`` (TF's prefix beam search,
    repeated labels not merged, the blank the last class). ``inputs``: ``[frames, batch,
    classes]`` logits. Returns ``(decoded, log_probabilities)``: a list of ``top_paths``
    SparseTensors ``[batch, longest]`` (the j-th best path of each entry) and
    ``[batch, top_paths]`` log-probabilities."""
    return _beam_search(inputs, sequence_length, beam_width, top_paths, False,
                        "ctc_beam_search_decoder")


# --- legacy tf.keras.backend functions --------------------------------------------------------

def ctc_label_dense_to_sparse(labels, label_lengths):
    """``tf.keras.backend.ctc_label_dense_to_sparse``: the first ``label_lengths[b]`` labels
    of each row of ``labels`` as a SparseTensor of ``labels``' shape and dtype."""
    opname = "ctc_label_dense_to_sparse"
    lab = as_tensor(labels, opname)
    if lab._value.ndim != 2:
        raise ValueError(f"{opname}: labels must have rank 2, got shape {tuple(lab.shape)}")
    dev = lab._device
    n = _host_ints(_lengths(label_lengths, dev, lab._value.shape[0], "label_lengths", opname))
    host = np.asarray(lab.numpy())
    mask = np.arange(host.shape[1])[None, :] < n[:, None]
    ind = np.argwhere(mask).astype(np.int64).reshape(-1, 2)
    return SparseTensor._make(_place(ind, dev), _place(host[mask], dev), host.shape)


def _log_probs_time_major(y_pred, opname):
    """``log(transpose(y_pred, [1, 0, 2]) + epsilon())``, as the legacy functions take it."""
    from .constraints import _EPSILON
    from .ops.math import log
    from .ops.shape import transpose
    y = as_tensor(y_pred, opname)
    if y._value.ndim != 3:
        raise ValueError(f"{opname}: y_pred must have shape [batch, time, classes], got "
                         f"{tuple(y.shape)}")
    return log(transpose(y, [1, 0, 2]) + _EPSILON[0])


def _squeezed_lengths(value, opname, what):
    from .ops.core import cast
    from .ops.shape import squeeze
    t = as_tensor(value, opname)
    if t._value.ndim < 1 or t._value.shape[-1] != 1:
        raise ValueError(f"{opname}: {what} must have shape [batch, 1], got {tuple(t.shape)}")
    return cast(squeeze(t, axis=-1), "int32")


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """``tf.keras.backend.ctc_batch_cost``: the CTC loss ``[batch, 1]`` of the labels
    ``y_true`` ``[batch, max_label_length]`` (the first ``label_length`` of each row) under
    the probabilities ``y_pred`` ``[batch, time, classes]`` (``input_length`` frames), the
    blank the last class, through ``tf.compat.v1.nn.ctc_loss`` (TF's ``CTCLoss`` kernel)."""
    opname = "ctc_batch_cost"
    from .ops.shape import expand_dims
    lab_len = _squeezed_lengths(label_length, opname, "label_length")
    in_len = _squeezed_lengths(input_length, opname, "input_length")
    sp = ctc_label_dense_to_sparse(y_true, lab_len)
    logp = _log_probs_time_major(y_pred, opname)
    n_c = logp._value.shape[2]
    ind = np.asarray(sp.indices.numpy()).astype(np.int64).reshape(-1, 2)
    vals = np.asarray(sp.values.numpy()).astype(np.int32).astype(np.int64)
    if logp._device is not in_len._device:
        in_len = in_len.to(logp._device)
    loss = _kernel_loss(ind, vals, logp, in_len, n_c - 1, True, opname)
    return expand_dims(loss, 1)


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """``tf.keras.backend.ctc_decode``: greedy or beam-search decoding of the probabilities
    ``y_pred`` ``[batch, time, classes]`` (the blank the last class; the beam search merges
    repeated labels, as ``tf.compat.v1.nn.ctc_beam_search_decoder``). Returns ``(list of
    [batch, time] int64 paths padded with -1, log-probabilities)``."""
    opname = "ctc_decode"
    from .ops.core import cast
    from .sparse import to_dense
    logp = _log_probs_time_major(y_pred, opname)
    n_t, n_b = logp._value.shape[0], logp._value.shape[1]
    lens = cast(as_tensor(input_length, opname), "int32")
    if greedy:
        decoded, log_prob = ctc_greedy_decoder(logp, lens)
    else:
        decoded, log_prob = _beam_search(logp, lens, beam_width, top_paths, True, opname)
    dense = [to_dense(SparseTensor._make(st.indices, st.values, (n_b, n_t)), default_value=-1)
             for st in decoded]
    return dense, log_prob
