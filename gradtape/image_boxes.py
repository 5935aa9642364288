"""Bounding-box helpers of ``tf.image``: the detection NMS variants, box drawing, random
crops that keep objects in view, glimpses and region proposals, with TensorFlow's
semantics.

* ``combined_non_max_suppression``, ``non_max_suppression_padded``,
  ``non_max_suppression_overlaps`` and ``generate_bounding_box_proposals`` choose how many
  boxes to keep from their values: like TF's kernels they run on the host (the boxes are
  read there once) in float32, TF's arithmetic step for step, and their results land on the
  inputs' device.
* ``draw_bounding_boxes`` and ``extract_glimpse`` run on the images' device with its array
  namespace (no value crosses to the host); glimpse noise comes from ``gt.random``.
* ``sample_distorted_bounding_box`` and ``stateless_sample_distorted_bounding_box`` run
  TF's rejection sampler on the host with TF's Philox4x32-10 stream. The stateless one,
  given TF's seed, returns TF's box exactly; the stateful one draws its Philox key from
  gt.random (the op seed's generator, or the global one for ``seed=0``), so it follows
  ``gt.random.set_seed`` rather than TF's kernel cache.

None of these is differentiable in TensorFlow, nor here.
"""
from __future__ import annotations

import numpy as np

from .backend import current_device, device_scope
from .image import _int
from .registry import InvalidArgumentError
from .tensor import Tensor, convert_to_tensor

__all__ = ["combined_non_max_suppression", "non_max_suppression_padded",
           "non_max_suppression_overlaps", "draw_bounding_boxes",
           "sample_distorted_bounding_box", "stateless_sample_distorted_bounding_box",
           "extract_glimpse", "generate_bounding_box_proposals"]

_F32 = np.float32


# --- host helpers ---------------------------------------------------------------------------

def _shape_error(opname, what, x):
    """TF's InvalidArgumentError for ``x`` of a wrong shape: ``opname: what, got shape``."""
    return InvalidArgumentError(f"{opname}: {what}, got shape {list(x.shape)}")


def _host(x, opname, what, dtype=_F32):
    """``(host array in dtype, device)`` of a tensor or array-like input."""
    if isinstance(x, Tensor):
        if x._value.dtype.kind not in "fiu":
            raise TypeError(f"{opname}: {what} must be a number tensor, got {x.dtype.name}")
        return x.numpy().astype(dtype), x._device
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub" and arr.size:
        raise TypeError(f"{opname}: {what} must hold numbers, got {x!r}")
    return arr.astype(dtype), current_device()


def _scalar(x, opname, what, dtype=_F32):
    arr, _ = _host(x, opname, what, dtype)
    if arr.ndim != 0:
        raise _shape_error(opname, f"{what} must be 0-D", arr)
    return arr[()]


def _on(dev, arr):
    with device_scope(dev):
        return convert_to_tensor(np.array(arr, order="C"))


class _Corners:
    """TF's IoU of axis-aligned boxes ``(y1, x1, y2, x2)`` (corners in any order), in float32
    with the kernel's operations in the kernel's order."""

    def __init__(self, boxes):
        b = boxes.astype(_F32)
        self.ymin, self.ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
        self.xmin, self.xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
        self.area = (self.ymax - self.ymin) * (self.xmax - self.xmin)

    def iou(self, js, i):
        """IoU of the boxes ``js`` (an int array) with box ``i`` (the same both ways)."""
        ih = np.maximum(np.minimum(self.ymax[i], self.ymax[js])
                        - np.maximum(self.ymin[i], self.ymin[js]), _F32(0))
        iw = np.maximum(np.minimum(self.xmax[i], self.xmax[js])
                        - np.maximum(self.xmin[i], self.xmin[js]), _F32(0))
        inter = ih * iw
        with np.errstate(all="ignore"):
            out = inter / (self.area[i] + self.area[js] - inter)
        return np.where((self.area[i] <= 0) | (self.area[js] <= 0), _F32(0), out)


def _greedy(scores, limit, threshold, score_threshold, similarity):
    """TF's hard NMS: candidates scoring above ``score_threshold`` by descending score (ties
    by lower index); each is kept unless its similarity with a kept one exceeds
    ``threshold``; at most ``limit``. ``similarity(candidates, kept)``: an array."""
    cand = np.nonzero(scores > score_threshold)[0]
    cand = cand[np.argsort(-scores[cand], kind="stable")]
    out = np.zeros(len(cand), bool)
    sel = []
    for k, i in enumerate(cand):
        if len(sel) >= limit:
            break
        if out[k]:
            continue
        sel.append(int(i))
        out[k + 1:] |= similarity(cand[k + 1:], i) > threshold
    return np.asarray(sel, np.int64)


# --- NMS variants ---------------------------------------------------------------------------

def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold=0.5, score_threshold=float("-inf"),
                                 pad_per_class=False, clip_boxes=True, name=None):
    """Per image and class NMS, then the best boxes over all classes
    (``tf.image.combined_non_max_suppression``).

    ``boxes`` ``[batch, num_boxes, q, 4]`` (``q`` 1: shared by all classes, or
    ``num_classes``), ``scores`` ``[batch, num_boxes, num_classes]``. Each class keeps at
    most ``max_output_size_per_class`` boxes scoring above ``score_threshold``, greedily by
    score, dropping those whose IoU with a kept one exceeds ``iou_threshold``; the kept
    boxes of all classes are sorted by descending score and the first ``max_total_size``
    returned. Returns ``(nmsed_boxes [batch, d, 4], nmsed_scores [batch, d], nmsed_classes
    [batch, d], valid_detections [batch])``, float32 (the count int32), zero-padded after the
    valid entries; ``d`` is ``max_total_size``, or with ``pad_per_class``
    ``min(max_output_size_per_class * num_classes, max_total_size)``. ``clip_boxes`` clips
    the returned coordinates to [0, 1]."""
    opname = "image.combined_non_max_suppression"
    b, dev = _host(boxes, opname, "boxes")
    s, _ = _host(scores, opname, "scores")
    if b.ndim != 4:
        raise _shape_error(opname, "boxes must be 4-D [batch, num_boxes, q, 4]", b)
    if s.ndim != 3:
        raise _shape_error(opname, "scores must be 3-D [batch, num_boxes, num_classes]", s)
    batch, n, q, _ = b.shape
    classes = s.shape[2]
    if q not in (1, classes):
        raise InvalidArgumentError(f"{opname}: third dimension of boxes must be either 1 or "
                                   f"num classes, got {q} for {classes} classes")
    if b.shape[3] != 4:
        raise InvalidArgumentError(f"{opname}: boxes must have 4 columns, got {b.shape[3]}")
    if s.shape[1] != n:
        raise InvalidArgumentError(f"{opname}: scores has incompatible shape {list(s.shape)} "
                                   f"for boxes of shape {list(b.shape)}")
    if s.shape[0] != batch:
        raise InvalidArgumentError(f"{opname}: boxes and scores must have same batch size, "
                                   f"got {batch} and {s.shape[0]}")
    per_class = _int(max_output_size_per_class, "max_output_size_per_class", opname)
    total = _int(max_total_size, "max_total_size", opname)
    if per_class <= 0:
        raise InvalidArgumentError(f"{opname}: max_size_per_class must be positive, got "
                                   f"{per_class}")
    if total <= 0:
        raise InvalidArgumentError(f"{opname}: max_total_size must be > 0, got {total}")
    iou_t = _scalar(iou_threshold, opname, "iou_threshold")
    score_t = _scalar(score_threshold, opname, "score_threshold")
    if not 0 <= iou_t <= 1:
        raise InvalidArgumentError(f"{opname}: iou_threshold must be in [0, 1], got {iou_t}")
    size_per_class = min(per_class, n)
    width = min(total, min(2 ** 31 - 1, per_class * classes)) if pad_per_class else total
    out_boxes = np.zeros((batch, width, 4), _F32)
    out_scores = np.zeros((batch, width), _F32)
    out_classes = np.zeros((batch, width), _F32)
    valid = np.zeros((batch,), np.int32)
    for i in range(batch):
        found = []                      # (score, class, box index), class by class
        for c in range(classes):
            corners = _Corners(b[i, :, c if q > 1 else 0])
            sel = _greedy(s[i, :, c], size_per_class, iou_t, score_t, corners.iou)
            found.extend((s[i, j, c], c, j) for j in sel)
        order = sorted(range(len(found)), key=lambda k: -found[k][0])
        count = min(len(found), width)
        valid[i] = count
        for slot, k in enumerate(order[:count]):
            score, c, j = found[k]
            box = b[i, j, c if q > 1 else 0]
            out_boxes[i, slot] = np.clip(box, 0, 1) if clip_boxes else box
            out_scores[i, slot] = score
            out_classes[i, slot] = c
    return (_on(dev, out_boxes), _on(dev, out_scores), _on(dev, out_classes),
            _on(dev, valid))


def _overlap(a, b):
    """TF's ``_bbox_overlap``: IoU ``[batch, N, M]`` of canonical boxes (float32, with the
    1e-8 added to the union)."""
    ay0, ax0, ay1, ax1 = (a[:, :, k:k + 1] for k in range(4))
    by0, bx0, by1, bx1 = (b[:, :, k:k + 1].transpose(0, 2, 1) for k in range(4))
    i_area = (np.maximum(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), _F32(0))
              * np.maximum(np.minimum(ay1, by1) - np.maximum(ay0, by0), _F32(0)))
    a_area = (ay1 - ay0) * (ax1 - ax0)
    b_area = (by1 - by0) * (bx1 - bx0)
    return i_area / (a_area + b_area - i_area + _F32(1e-8))


def _padded_v2(boxes, scores, max_out, iou_t, score_t, sorted_input, canonical, tile):
    """TF's tiled ``non_max_suppression_padded_v2`` on host arrays: ``(idx [batch, max_out],
    num_valid [batch])``."""
    batch, n = scores.shape
    if score_t != -np.inf:
        mask = (scores > score_t).astype(scores.dtype)
        scores = scores * mask
        boxes = boxes * mask[:, :, None]
    if not canonical:
        y1, x1, y2, x2 = (boxes[:, :, k:k + 1] for k in range(4))
        if not boxes.size or y1[0, 0, 0] <= y2[0, 0, 0]:
            ymin, ymax = y1, y2
        else:
            ymin, ymax = y2, y1
        if not boxes.size or x1[0, 0, 0] <= x2[0, 0, 0]:
            xmin, xmax = x1, x2
        else:
            xmin, xmax = x2, x1
        boxes = np.concatenate([ymin, xmin, ymax, xmax], axis=2)
    if not sorted_input:
        order = np.argsort(-scores, axis=1, kind="stable")
        boxes = np.take_along_axis(boxes, order[:, :, None], axis=1)
    pad = -(-max(n, max_out) // tile) * tile - n
    boxes = np.pad(boxes.astype(_F32), [[0, 0], [0, pad], [0, 0]])
    total = n + pad
    tiles = total // tile
    out_size = np.zeros((batch,), np.int32)
    upper = np.arange(tile)[None, :] > np.arange(tile)[:, None]
    t = 0
    with np.errstate(all="ignore"):
        while out_size.min(initial=max_out) < max_out and t < tiles:
            piece = boxes[:, t * tile:(t + 1) * tile].copy()
            for inner in range(t):
                iou = _overlap(boxes[:, inner * tile:(inner + 1) * tile], piece)
                piece *= (iou < iou_t).all(axis=1).astype(_F32)[:, :, None]
            iou = _overlap(piece, piece)
            iou *= (upper[None] & (iou >= iou_t)).astype(_F32)
            total_iou = iou.sum(axis=(1, 2))
            go = True
            while go:
                free = (iou.max(axis=1) < iou_t).astype(_F32)[:, :, None]
                keep = ((free * iou).max(axis=1) < iou_t).astype(_F32)[:, :, None]
                iou = keep * iou
                new_total = iou.sum(axis=(1, 2))
                go = bool((total_iou - new_total > iou_t).any())
                total_iou = new_total
            gone = iou.sum(axis=1) > 0
            piece *= (1.0 - gone.astype(_F32))[:, :, None]
            boxes[:, t * tile:(t + 1) * tile] = piece
            out_size += (piece > 0).any(axis=2).sum(axis=1).astype(np.int32)
            t += 1
    num_valid = np.minimum(out_size, max_out)
    flags = (boxes > 0).any(axis=2)
    # the first max_out flagged positions, in order (TF's top_k of flag * (total - pos))
    rank = flags * np.arange(total, 0, -1)[None, :]
    top = -np.sort(-rank, axis=1, kind="stable")[:, :max_out]
    idx = np.minimum(total - top, n - 1)
    if not sorted_input:
        idx = np.take_along_axis(order, idx, axis=1)
    idx = np.where(np.arange(max_out)[None, :] < num_valid[:, None], idx, 0)
    return idx.astype(np.int32), num_valid.astype(np.int32)


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None, sorted_input=False, canonicalized_coordinates=False,
                               tile_size=512):
    """``(selected_indices, num_valid)``: TensorFlow 2's tiled NMS
    (``tf.image.non_max_suppression_padded``) over ``boxes`` ``[..., num_boxes, 4]`` and
    ``scores`` ``[..., num_boxes]``, leading axes a batch.

    As TF: boxes scoring at most ``score_threshold`` are zeroed; unless
    ``canonicalized_coordinates``, each coordinate pair is ordered as the first box's is;
    unless ``sorted_input`` the boxes are sorted by descending score; tiles of ``tile_size``
    boxes are suppressed by the tiles before them and then within themselves (IoU at least
    ``iou_threshold``); a kept box must have a positive coordinate. With
    ``pad_to_max_output_size`` the indices are ``[..., max_output_size]`` int32 (zeros after
    the ``num_valid`` valid ones), else (one image only) the ``num_valid`` indices."""
    opname = "image.non_max_suppression_padded"
    b, dev = _host(boxes, opname, "boxes")
    s, _ = _host(scores, opname, "scores")
    if b.ndim < 2 or b.shape[-1] != 4:
        raise ValueError(f"{opname}: boxes must be [..., num_boxes, 4], got shape "
                         f"{list(b.shape)}")
    if not pad_to_max_output_size and b.ndim > 2:
        raise ValueError(f"'pad_to_max_output_size' (value {pad_to_max_output_size}) must be "
                         f"True for batched input")
    if s.shape != b.shape[:-1]:
        raise ValueError(f"{opname}: scores must have shape {list(b.shape[:-1])}, got "
                         f"{list(s.shape)}")
    max_out = _int(max_output_size, "max_output_size", opname)
    tile = _int(tile_size, "tile_size", opname)
    if max_out < 0:
        raise InvalidArgumentError(f"{opname}: max_output_size must be >= 0, got {max_out}")
    if tile <= 0:
        raise ValueError(f"{opname}: tile_size must be positive, got {tile}")
    lead, n = b.shape[:-2], b.shape[-2]
    idx, num_valid = _padded_v2(b.reshape(-1, n, 4), s.reshape(-1, n), max_out,
                                _scalar(iou_threshold, opname, "iou_threshold"),
                                _scalar(score_threshold, opname, "score_threshold"),
                                bool(sorted_input), bool(canonicalized_coordinates), tile)
    if not pad_to_max_output_size:
        return _on(dev, idx[0, :int(num_valid[0])]), _on(dev, num_valid.reshape(lead))
    return _on(dev, idx.reshape(lead + (max_out,))), _on(dev, num_valid.reshape(lead))


def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """Indices (int32) of at most ``max_output_size`` boxes chosen greedily by descending
    score among those scoring above ``score_threshold``, dropping each box whose
    ``overlaps[box, kept]`` exceeds ``overlap_threshold`` for a kept one
    (``tf.image.non_max_suppression_overlaps``; ``overlaps`` ``[num_boxes, num_boxes]``)."""
    opname = "image.non_max_suppression_overlaps"
    o, dev = _host(overlaps, opname, "overlaps")
    s, _ = _host(scores, opname, "scores")
    if o.ndim != 2:
        raise _shape_error(opname, "overlaps must be 2-D", o)
    if o.shape[1] != o.shape[0]:
        raise _shape_error(opname, "overlaps must be square", o)
    if s.ndim != 1:
        raise _shape_error(opname, "scores must be 1-D", s)
    if s.shape[0] != o.shape[0]:
        raise InvalidArgumentError(f"{opname}: scores has incompatible shape (Dimensions "
                                   f"must be equal, but are {o.shape[0]} and {s.shape[0]})")
    limit = _int(max_output_size, "max_output_size", opname)
    if limit < 0:
        raise InvalidArgumentError(f"{opname}: output size must be non-negative, got {limit}")
    sel = _greedy(s, limit, _scalar(overlap_threshold, opname, "overlap_threshold"),
                  _scalar(score_threshold, opname, "score_threshold"),
                  lambda js, i: o[js, i])
    return _on(dev, sel.astype(np.int32))


# --- drawing --------------------------------------------------------------------------------

_DEFAULT_COLORS = ((1, 1, 0, 1), (0, 0, 1, 1), (1, 0, 0, 1), (0, 1, 0, 1), (0.5, 0, 0.5, 1),
                   (0.5, 0.5, 0, 1), (0.5, 0, 0, 1), (0, 0, 0.5, 1), (0, 1, 1, 1), (1, 0, 1, 1))


def draw_bounding_boxes(images, boxes, colors, name=None):
    """``images`` ``[batch, height, width, depth]`` (float16 or float32; depth 1, 3 or 4)
    with the outline of each box of ``boxes`` ``[batch, num_boxes, 4]`` (``y_min, x_min,
    y_max, x_max`` relative to the image) drawn in ``colors[k % len(colors)]`` for box ``k``
    (``tf.image.draw_bounding_boxes``; ``colors`` ``[n, >= depth]``, None or empty: TF's
    default table). As TF's kernel: the edges are rows ``int(y_min * (height - 1))`` and
    ``int(y_max * (height - 1))`` (truncated) and the matching columns, clipped to the image;
    an edge outside the image is not drawn, nor an inverted box; later boxes draw over
    earlier ones. Runs on the images' device."""
    from .ops._util import as_tensor
    opname = "image.draw_bounding_boxes"
    x = as_tensor(images, opname)
    dev = x._device
    if x._value.dtype not in (np.float16, np.float32):
        raise TypeError(f"{opname}: images must be float16 or float32, got {x.dtype.name}")
    with device_scope(dev):
        bt = boxes if isinstance(boxes, Tensor) else convert_to_tensor(boxes, dtype="float32")
    if bt._device is not dev:
        bt = bt.to(dev)
    if x._value.ndim != 4:
        raise _shape_error(opname, "The rank of the images should be 4", x)
    if bt._value.ndim != 3:
        raise _shape_error(opname, "The rank of the boxes tensor should be 3", bt)
    batch, height, width, depth = x._value.shape
    if bt._value.shape[0] != batch:
        raise InvalidArgumentError(f"{opname}: The batch sizes should be the same, got "
                                   f"{batch} and {bt._value.shape[0]}")
    if depth not in (1, 3, 4):
        raise InvalidArgumentError(f"{opname}: Channel depth should be either 1 (GRY), 3 "
                                   f"(RGB), or 4 (RGBA), got {depth}")
    if bt._value.shape[2] != 4:
        raise InvalidArgumentError(f"{opname}: The size of the third dimension of the box "
                                   f"must be 4. Received: {bt._value.shape[2]}")
    table = None
    if colors is not None:
        with device_scope(dev):
            ct = colors if isinstance(colors, Tensor) else convert_to_tensor(colors,
                                                                             dtype="float32")
        if ct._device is not dev:
            ct = ct.to(dev)
        if ct._value.ndim != 2:
            raise _shape_error(opname, "colors must be a 2-D matrix", ct)
        if ct._value.shape[1] < depth:
            raise InvalidArgumentError(f"{opname}: colors must have equal or more channels "
                                       f"than the image provided: {list(ct.shape)}")
        if ct._value.size:
            table = ct._value
    xp = dev.xp
    with dev.activate():
        if table is None:
            host = np.asarray(_DEFAULT_COLORS, _F32)
            if depth == 1:
                host[:, 0] = 1
            table = xp.asarray(host)
        table = table[:, :depth].astype(x._value.dtype)
        bv = bt._value.astype(_F32)
        out = x._value
        rows = xp.arange(height, dtype=np.int64)[None, :, None]
        cols = xp.arange(width, dtype=np.int64)[None, None, :]
        lim = float(2 ** 62)

        def edge(v, size):
            return xp.trunc(xp.clip(v * _F32(size - 1), -lim, lim)).astype(np.int64)
        for k in range(bv.shape[1]):
            r0, c0 = edge(bv[:, k, 0], height), edge(bv[:, k, 1], width)
            r1, c1 = edge(bv[:, k, 2], height), edge(bv[:, k, 3], width)
            ok = ((r0 <= r1) & (c0 <= c1) & (r0 < height) & (r1 >= 0) & (c0 < width)
                  & (c1 >= 0))
            r0c, r1c = xp.maximum(r0, 0), xp.minimum(r1, height - 1)
            c0c, c1c = xp.maximum(c0, 0), xp.minimum(c1, width - 1)
            ok, r0, r1, c0, c1, r0c, r1c, c0c, c1c = (
                v[:, None, None] for v in (ok, r0, r1, c0, c1, r0c, r1c, c0c, c1c))
            in_cols = (cols >= c0c) & (cols <= c1c)
            in_rows = (rows >= r0c) & (rows <= r1c)
            mask = ok & (((((rows == r0) & (r0 >= 0)) | ((rows == r1) & (r1 < height)))
                          & in_cols)
                         | ((((cols == c0) & (c0 >= 0)) | ((cols == c1) & (c1 < width)))
                            & in_rows))
            out = xp.where(mask[..., None], table[k % table.shape[0]], out)
        return Tensor(out, dev)


# --- random crops ---------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


class _PhiloxStream:
    """TF's ``SimplePhilox`` over a ``PhiloxRandom(counter, key)``: 32-bit words in order,
    four per block, the 128-bit counter advancing by one per block."""

    def __init__(self, counter, key):
        self.counter = int(counter)
        self.key = key
        self.words = []

    def _fill(self, blocks=16):
        from .backend import kernels as K
        c = [self.counter + k for k in range(blocks)]
        parts = [np.asarray([(v >> (32 * w)) & _M32 for v in c], np.uint64) for w in range(4)]
        out = K.reference_philox(np, *parts, self.key)
        self.words.extend(int(v) for blk in zip(*out) for v in blk)
        self.counter = (self.counter + blocks) % (1 << 128)

    def rand32(self):
        if not self.words:
            self._fill()
        return self.words.pop(0)

    def rand_float(self):
        """``Uint32ToFloat``: 23 random mantissa bits, in [0, 1)."""
        bits = np.uint32((self.rand32() & 0x7FFFFF) | 0x3F800000)
        return float(bits.view(np.float32)) - 1.0

    def uniform(self, n):
        """``ExactUniformInt``: an integer in [0, n), by rejection."""
        if n == 0:
            self.rand32()
            return 0
        if n & (n - 1) == 0:
            return self.rand32() & (n - 1)
        rem = (_M32 % n) + 1
        while True:
            r = self.rand32()
            if r >= rem:
                return r % n


def _counter(words):
    return sum((int(w) & _M32) << (32 * k) for k, w in enumerate(words))


def _stateless_stream(seed):
    """TF's ``GenerateKey``: the seed pair scrambled into a Philox key and counter."""
    from .backend import kernels as K
    s0, s1 = (int(v) % (1 << 64) for v in seed)
    mix = K.reference_philox(np, *(np.asarray([w], np.uint64) for w in
                                   (s0 & _M32, s0 >> 32, s1 & _M32, s1 >> 32)),
                             (0x3EC8F720, 0x02461E29))
    mix = [int(m[0]) for m in mix]
    return _PhiloxStream(_counter([0, 0, mix[2], mix[3]]), (mix[0], mix[1]))


def _lrintf(v):
    """C's ``lrintf`` of a float32 value (round half to even)."""
    return int(np.rint(_F32(v)))


def _random_crop(width, height, area_lo, area_hi, aspect, rng):
    """TF's ``GenerateRandomCrop``: ``(x, y, w, h)`` or None."""
    f = _F32
    if area_hi <= 0 or aspect <= 0 or width <= 0 or height <= 0 or area_lo > area_hi:
        return None
    min_area = f(f(area_lo) * f(width)) * f(height)
    max_area = f(f(area_hi) * f(width)) * f(height)
    h = _lrintf(np.sqrt(f(min_area / aspect)))
    max_h = _lrintf(np.sqrt(f(max_area / aspect)))
    if _lrintf(f(max_h) * aspect) > width:
        max_h = int((width + 0.5 - float(f(1e-7))) / float(aspect))
        if _lrintf(f(max_h) * aspect) > width:
            max_h -= 1
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += rng.uniform(max_h - h + 1)
    w = _lrintf(f(h) * aspect)
    area = f(w * h)
    if area < min_area:
        h += 1
        w = _lrintf(f(h) * aspect)
        area = f(w * h)
    if area > max_area:
        h -= 1
        w = _lrintf(f(h) * aspect)
        area = f(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = rng.uniform(height - h) if h < height else 0
    x = rng.uniform(width - w) if w < width else 0
    return x, y, w, h


def _covers(crop, covered, rects):
    """TF's ``SatisfiesOverlapConstraints``."""
    x0, y0, x1, y1 = crop
    if (x1 - x0) * (y1 - y0) < 1:
        return False
    for bx0, by0, bx1, by1 in rects:
        area = _F32((bx1 - bx0) * (by1 - by0))
        if area < 1:
            continue
        ix0, iy0, ix1, iy1 = max(x0, bx0), max(y0, by0), min(x1, bx1), min(y1, by1)
        inter = 0 if ix0 > ix1 or iy0 > iy1 else (ix1 - ix0) * (iy1 - iy0)
        if _F32(_F32(inter) / area) >= covered:
            return True
    return False


def _sample_box(image_size, bounding_boxes, min_object_covered, aspect_ratio_range,
                area_range, max_attempts, use_image_if_no_bounding_boxes, opname, stream_for):
    if isinstance(image_size, Tensor):
        size, dev = image_size.numpy(), image_size._device
        if image_size._value.dtype.kind not in "iu":
            raise TypeError(f"{opname}: image_size must be an integer tensor, got "
                            f"{image_size.dtype.name}")
    else:
        size, dev = np.asarray(image_size), current_device()
        if size.dtype.kind not in "iu":
            raise TypeError(f"{opname}: image_size must hold integers, got {image_size!r}")
        size = size.astype(np.int32) if size.dtype == np.int64 and np.all(
            np.abs(size) < 2 ** 31) else size
    if size.ndim != 1 or size.shape[0] != 3:
        raise _shape_error(opname, "image_size must be a vector of 3 elements [height, width, "
                                   "channels]", size)
    aspect = [0.75, 1.33] if aspect_ratio_range is None else [float(v) for v in
                                                               aspect_ratio_range]
    area = [0.05, 1.0] if area_range is None else [float(v) for v in area_range]
    attempts = 100 if max_attempts is None else _int(max_attempts, "max_attempts", opname)
    use_image = bool(use_image_if_no_bounding_boxes)
    if len(aspect) != 2:
        raise InvalidArgumentError(f"{opname}: Aspect ratio range field must specify 2 "
                                   f"dimensions, got {aspect}")
    if not (aspect[0] > 0 and aspect[1] > 0):
        raise InvalidArgumentError(f"{opname}: Aspect ratio range must be non-negative: "
                                   f"{aspect}")
    if len(area) != 2:
        raise InvalidArgumentError(f"{opname}: Area range field must specify 2 dimensions, "
                                   f"got {area}")
    if not (area[0] > 0 and area[1] > 0):
        raise InvalidArgumentError(f"{opname}: Area range must be non-negative: {area}")
    if not (area[0] <= 1 and area[1] <= 1):
        raise InvalidArgumentError(f"{opname}: Area range must be less then or equal to 1.0: "
                                   f"{area}")
    if attempts <= 0:
        raise InvalidArgumentError(f"{opname}: Max attempts must be non-negative: {attempts}")
    height, width = int(size[0]), int(size[1])
    if not (0 <= height < 2 ** 31 - 1 and 0 <= width < 2 ** 31 - 1):
        raise InvalidArgumentError(f"{opname}: image height and width must be in [0, int32 "
                                   f"max), got {height} and {width}")
    boxes, _ = _host(bounding_boxes, opname, "bounding_boxes")
    if boxes.ndim != 3:
        raise InvalidArgumentError(f"{opname}: input boxes must be 3-dimensional [batch, "
                                   f"num_boxes, coords]: {list(boxes.shape)}")
    if boxes.shape[-1] != 4:
        raise InvalidArgumentError(f"{opname}: bounding boxes must have shape [4] or [*, 4], "
                                   f"got {list(boxes.shape)}")
    covered = _scalar(min_object_covered, opname, "min_object_covered")
    if not covered >= 0:
        raise InvalidArgumentError(f"{opname}: Min object covered must be non-negative: "
                                   f"{covered}")
    rects = []
    for row in boxes.reshape(-1, 4):
        bad = [v for v in row if not 0.0 <= v <= 1.0]
        if bad:
            raise InvalidArgumentError(f"{opname}: All bounding box coordinates must be in "
                                       f"[0.0, 1.0]: {bad[0]}")
        rects.append((int(row[1] * _F32(width)), int(row[0] * _F32(height)),
                      int(row[3] * _F32(width)), int(row[2] * _F32(height))))
    image = (0, 0, width, height)
    if not rects:
        if not use_image:
            raise InvalidArgumentError(f"{opname}: No bounding boxes provided as input. One "
                                       f"must enable use_image_if_no_bounding_boxes if you "
                                       f"wish to not provide any bounding boxes.")
        rects.append(image)
    rng = stream_for(attempts)
    lo, hi = _F32(aspect[0]), _F32(aspect[1])
    crop = image
    for _ in range(attempts):
        ratio = _F32(_F32(rng.rand_float()) * _F32(hi - lo) + lo)
        got = _random_crop(width, height, _F32(area[0]), _F32(area[1]), ratio, rng)
        if got is not None:
            x, y, w, h = got
            if _covers((x, y, x + w, y + h), covered, rects):
                crop = (x, y, x + w, y + h)
                break
    x0, y0, x1, y1 = crop
    dt = size.dtype
    begin = np.asarray([y0, x0, 0], np.int64).astype(dt)
    extent = np.asarray([y1 - y0, x1 - x0, -1], np.int64).astype(dt)
    fh, fw = _F32(height), _F32(width)
    box = np.asarray([[[_F32(y0) / fh, _F32(x0) / fw, _F32(y1) / fh, _F32(x1) / fw]]], _F32)
    return _on(dev, begin), _on(dev, extent), _on(dev, box)


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=0, min_object_covered=0.1,
                                  aspect_ratio_range=None, area_range=None, max_attempts=None,
                                  use_image_if_no_bounding_boxes=None, name=None):
    """``(begin, size, bboxes)``: a random crop of an image of shape ``image_size``
    (``[height, width, channels]``) covering at least ``min_object_covered`` of one of the
    ``bounding_boxes`` (``[batch, N, 4]``, relative ``y_min, x_min, y_max, x_max``), with an
    aspect ratio in ``aspect_ratio_range`` (default [0.75, 1.33]) and an area fraction in
    ``area_range`` (default [0.05, 1]) (``tf.image.sample_distorted_bounding_box``).

    TF's sampler: up to ``max_attempts`` (default 100) random crops, the whole image when
    none fits. ``begin`` ``[y, x, 0]`` and ``size`` ``[h, w, -1]`` (for ``gt.slice``) have
    ``image_size``'s dtype, ``bboxes`` the crop ``[1, 1, 4]`` float32. The Philox key comes
    from gt.random: ``seed`` (non-zero) selects the op-seed generator, 0 the global one, so
    calls differ and ``gt.random.set_seed`` restarts the sequence."""
    from . import random as _random
    opname = "image.sample_distorted_bounding_box"

    def stream_for(attempts):
        gen = _random._generator_for(seed if seed else None, device="cpu")
        k0, k1, c0, c1 = (int(v) for v in gen.uniform_full_int([4], dtype=np.uint32).numpy())
        return _PhiloxStream(_counter([0, 0, c0, c1]), (k0, k1))
    return _sample_box(image_size, bounding_boxes, min_object_covered, aspect_ratio_range,
                       area_range, max_attempts, use_image_if_no_bounding_boxes, opname,
                       stream_for)


def stateless_sample_distorted_bounding_box(image_size, bounding_boxes, seed,
                                            min_object_covered=0.1, aspect_ratio_range=None,
                                            area_range=None, max_attempts=None,
                                            use_image_if_no_bounding_boxes=None, name=None):
    """:func:`sample_distorted_bounding_box` as a deterministic function of ``seed`` (a shape
    [2] int32 or int64 pair; ``tf.image.stateless_sample_distorted_bounding_box``): TF's
    seed scrambling and Philox stream, so the same seed gives TF's crop."""
    opname = "image.stateless_sample_distorted_bounding_box"
    sv = seed.numpy() if isinstance(seed, Tensor) else np.asarray(seed)
    if sv.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{opname}: seed must be an int32 or int64 pair, got "
                                   f"{seed!r}")
    if sv.shape != (2,):
        raise InvalidArgumentError(f"{opname}: seed must have shape [2], not "
                                   f"{list(sv.shape)}")
    pair = [int(v) for v in sv.astype(np.int64)]
    return _sample_box(image_size, bounding_boxes, min_object_covered, aspect_ratio_range,
                       area_range, max_attempts, use_image_if_no_bounding_boxes, opname,
                       lambda attempts: _stateless_stream(pair))


# --- glimpses -------------------------------------------------------------------------------

def extract_glimpse(input, size, offsets, centered=True, normalized=True, noise="uniform",
                    name=None):
    """Windows of ``size`` ``[height, width]`` from ``input`` ``[batch, H, W, C]`` (float32)
    at ``offsets`` ``[batch, 2]`` (``y, x``), as ``tf.image.extract_glimpse`` (TF 2's
    ``ExtractGlimpseV2``). Offsets are window corners in pixels; ``centered`` measures them
    from the image centre; ``normalized`` scales them by the image size, and with both they
    are window centres in [-1, 1]. The corner is truncated to whole pixels. Pixels outside
    the image are ``noise``: ``"uniform"`` (between the image's minimum and maximum),
    ``"gaussian"`` (each channel's mean and standard deviation, clipped to its range) or
    ``"zero"``. Runs on the input's device; the noise comes from gt.random."""
    from . import random as _random
    from .ops._util import as_tensor
    opname = "image.extract_glimpse"
    x = as_tensor(input, opname)
    if x._value.dtype != np.float32:
        raise TypeError(f"{opname}: input must be float32, got {x.dtype.name}")
    if x._value.ndim != 4:
        raise _shape_error(opname, "input must be 4-dimensional", x)
    sz = size.numpy() if isinstance(size, Tensor) else np.asarray(size)
    if sz.shape != (2,) or sz.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{opname}: size must be a vector of 2 integers (height, "
                                   f"width), got {size!r}")
    gh, gw = int(sz[0]), int(sz[1])
    if gh < 0 or gw < 0:
        raise InvalidArgumentError(f"{opname}: size must be non-negative, got {[gh, gw]}")
    if noise not in ("uniform", "gaussian", "zero"):
        raise InvalidArgumentError(f"{opname}: noise must be one of 'uniform', 'gaussian' or "
                                   f"'zero', got {noise!r}")
    dev = x._device
    with device_scope(dev):
        off = offsets if isinstance(offsets, Tensor) else convert_to_tensor(offsets,
                                                                            dtype="float32")
    batch, height, width, ch = x._value.shape
    if off._value.ndim != 2:
        raise _shape_error(opname, "offsets must be a matrix", off)
    if off._value.shape[0] != batch:
        raise _shape_error(opname, f"the first dimension of offsets should be batch ({batch})", off)
    if off._value.shape[1] != 2:
        raise _shape_error(opname, "the second dimension of offsets should be of size 2 (y,x)", off)
    if height <= 0 or width <= 0:
        raise _shape_error(opname, "input must have positive height and width", x)
    if off._device is not dev:
        off = off.to(dev)
    draw = None
    if noise != "zero":
        with device_scope(dev):
            draw = (_random.uniform([batch, gh, gw, ch]) if noise == "uniform"
                    else _random.normal([batch, gh, gw, ch]))._value
    xp = dev.xp
    with dev.activate():
        v = x._value
        o = off._value.astype(_F32)
        oy, ox = o[:, 0], o[:, 1]
        if normalized:
            ox = ox * _F32(width)
            oy = oy * _F32(height)
            if centered:
                ox = ox / _F32(2) + _F32(width / 2.0) - _F32(gw / 2.0)
                oy = oy / _F32(2) + _F32(height / 2.0) - _F32(gh / 2.0)
        elif centered:
            ox = ox + _F32(width / 2.0)
            oy = oy + _F32(height / 2.0)
        lim = float(2 ** 40)
        ox = xp.trunc(xp.clip(ox, -lim, lim)).astype(np.int64)
        oy = xp.trunc(xp.clip(oy, -lim, lim)).astype(np.int64)
        rr = xp.arange(gh, dtype=np.int64)[None, :] + oy[:, None]
        cc = xp.arange(gw, dtype=np.int64)[None, :] + ox[:, None]
        inside = (((rr >= 0) & (rr < height))[:, :, None]
                  & ((cc >= 0) & (cc < width))[:, None, :])
        bi = xp.arange(batch, dtype=np.int64)[:, None, None]
        got = v[bi, xp.clip(rr, 0, height - 1)[:, :, None], xp.clip(cc, 0, width - 1)[:, None, :]]
        if noise == "zero":
            fill = xp.zeros((), dtype=_F32)
        elif noise == "uniform":
            lo = v.min(axis=(1, 2, 3))[:, None, None, None]
            span = v.max(axis=(1, 2, 3))[:, None, None, None] - lo
            fill = lo + draw * span
        else:
            mean = v.mean(axis=(1, 2))[:, None, None, :]
            sigma = xp.sqrt(((v - mean) ** 2).mean(axis=(1, 2)))[:, None, None, :]
            fill = xp.maximum(xp.minimum(mean + draw * sigma,
                                         v.max(axis=(1, 2))[:, None, None]),
                              v.min(axis=(1, 2))[:, None, None])
        out = xp.where(inside[..., None], got, fill).astype(_F32)
        return Tensor(out, dev)


# --- region proposals -----------------------------------------------------------------------

def _nms_upright(boxes, threshold, limit):
    """TF's GPU NMS (``NmsGpu``) over score-sorted ``{x1, y1, x2, y2}`` boxes: box ``i``
    suppresses a later ``j`` when their intersection exceeds ``threshold`` times their union
    (neither of zero area); at most ``limit`` kept."""
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    area = (x2 - x1) * (y2 - y1)

    def over(js, i):
        w = np.maximum(np.minimum(x2[i], x2[js]) - np.maximum(x1[i], x1[js]), _F32(0))
        h = np.maximum(np.minimum(y2[i], y2[js]) - np.maximum(y1[i], y1[js]), _F32(0))
        inter = w * h
        bigger = inter > (area[i] + area[js] - inter) * threshold
        return bigger & (area[i] != 0) & (area[js] != 0)
    # (the boxes in their order; ``over`` says True where a kept box suppresses)
    return _greedy(np.arange(boxes.shape[0], 0, -1), limit, False, 0, over)


def generate_bounding_box_proposals(scores, bbox_deltas, image_info, anchors, nms_threshold=0.7,
                                    pre_nms_topn=6000, min_size=16, post_nms_topn=300,
                                    name=None):
    """``(rois [num_images, post_nms_topn, 4], roi_probabilities [num_images,
    post_nms_topn])``: region proposals as TF's ``GenerateBoundingBoxProposals`` kernel
    (``tf.image.generate_bounding_box_proposals``, which TF runs on GPUs only).

    Per image: the ``pre_nms_topn`` best ``scores`` ``[num_images, H, W, A]`` (descending,
    ties in index order); each box is its anchor (``anchors`` ``[H, W, 4 A]``, ``y1, x1, y2,
    x2`` per position and anchor) moved by its ``bbox_deltas`` ``[num_images, H, W, 4 A]``
    (``dy, dx, dh, dw``; ``dh`` and ``dw`` capped at ``log(1000 / 16)``: centre plus size
    times delta, size times ``exp``), clipped to the image (``image_info`` rows ``[height,
    width, scale, ...]``) and dropped when a side is below ``min_size * scale``; then NMS at
    ``nms_threshold``. The kept boxes (``y1, x1, y2, x2``) and scores come first, zeros
    after."""
    opname = "image.generate_bounding_box_proposals"
    s, dev = _host(scores, opname, "scores")
    d, _ = _host(bbox_deltas, opname, "bbox_deltas")
    info, _ = _host(image_info, opname, "image_info")
    anc, _ = _host(anchors, opname, "anchors")
    if s.ndim != 4:
        raise _shape_error(opname, "scores must be rank 4 [num_images, height, width, "
                                   "num_anchors]", s)
    if d.ndim != 4:
        raise _shape_error(opname, "bbox_deltas must be rank 4", d)
    if info.ndim != 2 or info.shape[1] != 5:
        raise _shape_error(opname, "image_info must be [num_images, 5]", info)
    if anc.ndim != 3:
        raise _shape_error(opname, "anchors must be rank 3 [height, width, 4 x num_anchors]", anc)
    images, height, width, na = s.shape
    if na == 0 or anc.shape[2] != 4 * na:
        raise InvalidArgumentError(f"{opname}: Box dimensions need to be 4: anchors of shape "
                                   f"{list(anc.shape)} for {na} anchors")
    count = height * width * na
    if d.shape != (images, height, width, 4 * na) or anc.size != 4 * count:
        raise InvalidArgumentError(f"{opname}: bbox_deltas {list(d.shape)} and anchors "
                                   f"{list(anc.shape)} do not match scores {list(s.shape)}")
    if info.shape[0] != images:
        raise InvalidArgumentError(f"{opname}: image_info has {info.shape[0]} rows for "
                                   f"{images} images")
    nms_t = _scalar(nms_threshold, opname, "nms_threshold")
    if not 0 <= nms_t <= 1:
        raise InvalidArgumentError(f"{opname}: nms_threshold should be between 0 and 1. Got "
                                   f"{nms_t}")
    pre = _int(pre_nms_topn, "pre_nms_topn", opname)
    if pre <= 0:
        raise InvalidArgumentError(f"{opname}: pre_nms_topn should be greater than 0, got "
                                   f"{pre}")
    post = _int(post_nms_topn, "post_nms_topn", opname)
    if post <= 0:
        raise InvalidArgumentError(f"{opname}: post_nms_topn can't be 0 or less, got {post}")
    min_sz = _scalar(min_size, opname, "min_size")
    clip = _F32(np.log(1000.0 / 16.0))
    take = min(count, pre)
    anc = anc.reshape(count, 4)
    rois = np.zeros((images, post, 4), _F32)
    probs = np.zeros((images, post), _F32)
    half = _F32(0.5)
    with np.errstate(all="ignore"):
        for i in range(images):
            flat = s[i].reshape(-1)
            order = np.argsort(-flat, kind="stable")[:take]
            a = anc[order]
            delta = d[i].reshape(count, 4)[order]
            dy, dx, dh, dw = (delta[:, k] for k in range(4))
            dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
            bw = a[:, 3] - a[:, 1]
            cx = a[:, 1] + half * bw
            px = cx + bw * dx
            pw = bw * np.exp(dw)
            x1, x2 = px - half * pw, px + half * pw
            bh = a[:, 2] - a[:, 0]
            cy = a[:, 0] + half * bh
            py = cy + bh * dy
            ph = bh * np.exp(dh)
            y1, y2 = py - half * ph, py + half * ph
            ih, iw, scale = info[i, 0], info[i, 1], info[i, 2]
            x1, x2 = (np.maximum(np.minimum(v, iw), _F32(0)) for v in (x1, x2))
            y1, y2 = (np.maximum(np.minimum(v, ih), _F32(0)) for v in (y1, y2))
            ok = np.minimum(x2 - x1, y2 - y1) >= min_sz * scale
            boxes = np.stack([x1, y1, x2, y2], axis=1)[ok]
            kept_scores = flat[order][ok]
            keep = _nms_upright(boxes, nms_t, post)[:post]
            n = len(keep)
            rois[i, :n] = boxes[keep][:, [1, 0, 3, 2]]
            probs[i, :n] = kept_scores[keep]
    return _on(dev, rois), _on(dev, probs)
