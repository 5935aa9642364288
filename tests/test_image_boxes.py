"""gt.image's detection helpers against tf.image (TF 2.21; the reference values below come
from it): combined_non_max_suppression, non_max_suppression_padded,
non_max_suppression_overlaps, draw_bounding_boxes, extract_glimpse,
stateless_sample_distorted_bounding_box (TF's Philox stream: the same boxes), the stateful
sampler's constraints, and generate_bounding_box_proposals (TF has only a GPU kernel for it:
checked on cases worked by hand from the kernel's formulas)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradtape as gt


def boxes_in(seed, shape, lo=-0.1, hi=1.1):
    rng = np.random.default_rng(seed)
    c = rng.uniform(lo + 0.1, hi - 0.1, shape + (2,))
    s = rng.uniform(0.1, 0.6, shape + (2,))
    return np.round(np.concatenate([c - s / 2, c + s / 2], -1), 2).astype(np.float32)


def scores_in(seed, shape):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) / n).astype(np.float32)


def f32(x):
    return np.asarray(x, np.float32)


# --- TF 2.21's outputs ------------------------------------------------------------------------

COMBINED_A_0 = (
    [[[0, 0, 0.34, 0.31], [0.63, 0, 1, 0.13], [0.63, 0, 1, 0.13], [0.59, 0.7, 1, 1], [0.38,
    0.58, 0.83, 0.88]], [[0.45, 0.04, 1, 0.32], [0.69, 0, 1, 0.31], [0.56, 0.44, 0.78, 0.85],
    [0.69, 0, 1, 0.31], [0.69, 0, 1, 0.31]]])
COMBINED_A_1 = (
    [[0.9722222, 0.8611111, 0.8055556, 0.6666667, 0.6388889], [0.9444444, 0.9166667, 0.8888889,
    0.8333333, 0.7222222]])
COMBINED_A_2 = [[1, 1, 2, 0, 0], [2, 1, 0, 2, 0]]
COMBINED_A_3 = [5, 5]
COMBINED_B_0 = (
    [[[0.21, 0.53, 0.34, 0.78], [0.4, 0.56, 0.96, 1.14], [0.58, 0.3, 0.71, 0.51], [0.38, 0.55,
    0.49, 0.79], [0.1, 0.03, 0.69, 0.35], [-0.05, -0.02, 0.27, 0.23]], [[0.23, 0.01, 0.82,
    0.42], [0.8, 0.34, 0.93, 0.53], [-0.09, 0.33, 0.29, 0.57], [0.73, 0.4, 1.06, 0.83], [0.33,
    0.35, 0.71, 0.84], [0.44, 0.28, 0.94, 0.4]]])
COMBINED_B_1 = (
    [[0.9722222, 0.8611111, 0.8055556, 0.6666667, 0.6388889, 0.6111111], [0.9444444, 0.9166667,
    0.8888889, 0.8333333, 0.7222222, 0.5833333]])
COMBINED_B_2 = [[1, 1, 2, 0, 0, 2], [2, 1, 0, 2, 0, 1]]
COMBINED_B_3 = [6, 6]
COMBINED_C_0 = (
    [[[0, 0, 0.34, 0.31], [0.63, 0, 1, 0.13], [0.63, 0, 1, 0.13]], [[0.45, 0.04, 1, 0.32],
    [0.69, 0, 1, 0.31], [0.56, 0.44, 0.78, 0.85]]])
COMBINED_C_1 = [[0.9722222, 0.8611111, 0.8055556], [0.9444444, 0.9166667, 0.8888889]]
COMBINED_C_2 = [[1, 1, 2], [2, 1, 0]]
COMBINED_C_3 = [3, 3]
P1 = [[3, 5, 8, 7, 2], 5]
P2 = [[[5, 1, 2, 10, 6, 9], [10, 8, 2, 4, 7, 0]], [6, 6]]
P3 = [[[0, 2, 4, 6, 7, 8, 10, 0], [0, 1, 3, 6, 0, 0, 0, 0]], [7, 4]]
OVERLAPS = [1, 4]
DRAW_1 = (
    [[[[1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0]], [[0, 0.5, 1], [0, 0.5,
    1], [0, 0.5, 1], [0.25, 0.25, 0.25], [0.25, 0.25, 0.25], [1, 0, 0]], [[1, 0, 0], [0.25,
    0.25, 0.25], [0, 0.5, 1], [0, 0.5, 1], [0, 0.5, 1], [0, 0.5, 1]], [[0, 0.5, 1], [0, 0.5, 1],
    [0, 0.5, 1], [0.25, 0.25, 0.25], [0.25, 0.25, 0.25], [1, 0, 0]], [[1, 0, 0], [1, 0, 0], [0,
    0.5, 1], [1, 0, 0], [1, 0, 0], [1, 0, 0]]]])
DRAW_2 = (
    [[[[1], [1], [0], [0]], [[1], [1], [1], [1]], [[0], [1], [0], [1]], [[0], [1], [1], [1]]],
    [[[1], [1], [1], [1]], [[1], [1], [0], [0]], [[0], [0], [0], [0]], [[0], [0], [0], [0]]]])
DRAW_3 = (
    [[[[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]], [[0, 0, 1, 1], [1, 1, 0, 1], [0, 0, 1, 1]],
    [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]]]])
GLIMPSE_FF = (
    [[[[0, 0], [0, 0], [0, 0], [0, 0]], [[6, 7], [8, 9], [10, 11], [0, 0]], [[18, 19], [20, 21],
    [22, 23], [0, 0]]], [[[84, 85], [86, 87], [88, 89], [90, 91]], [[96, 97], [98, 99], [100,
    101], [102, 103]], [[108, 109], [110, 111], [112, 113], [114, 115]]]])
GLIMPSE_FT = (
    [[[[18, 19], [20, 21], [22, 23], [0, 0]], [[30, 31], [32, 33], [34, 35], [0, 0]], [[42, 43],
    [44, 45], [46, 47], [0, 0]]], [[[96, 97], [98, 99], [100, 101], [102, 103]], [[108, 109],
    [110, 111], [112, 113], [114, 115]], [[0, 0], [0, 0], [0, 0], [0, 0]]]])
GLIMPSE_TF = (
    [[[[0, 0], [0, 0], [0, 0], [0, 0]], [[0, 0], [0, 0], [0, 0], [0, 0]], [[0, 0], [0, 0], [0,
    0], [0, 0]]], [[[112, 113], [114, 115], [116, 117], [118, 119]], [[0, 0], [0, 0], [0, 0],
    [0, 0]], [[0, 0], [0, 0], [0, 0], [0, 0]]]])
GLIMPSE_TT = (
    [[[[0, 0], [0, 0], [0, 0], [0, 0]], [[4, 5], [6, 7], [8, 9], [10, 11]], [[16, 17], [18, 19],
    [20, 21], [22, 23]]], [[[0, 0], [0, 0], [84, 85], [86, 87]], [[0, 0], [0, 0], [96, 97], [98,
    99]], [[0, 0], [0, 0], [108, 109], [110, 111]]]])
SAMPLED_0 = [[3, 52, 0], [428, 389, -1], [[[0.00625, 0.08125, 0.8979167, 0.6890625]]]]
SAMPLED_1 = [[21, 30, 0], [61, 32, -1], [[[0.21, 0.375, 0.82, 0.775]]]]
SAMPLED_2 = [[2, 16, 0], [42, 37, 255], [[[0.04, 0.26666668, 0.88, 0.8833333]]]]
SAMPLED_3 = [[0, 0, 0], [29, 30, -1], [[[0, 0, 0.96666664, 1]]]]


def _same(got, want, dtype=None):
    got = got.numpy() if isinstance(got, gt.Tensor) else got
    want = np.asarray(want, got.dtype if dtype is None else dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype is not None:
        assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


# --- combined_non_max_suppression -------------------------------------------------------------

@pytest.mark.parametrize("case", ["A", "B", "C"])
def test_combined_nms_matches_tf(case, device):
    b1, s1 = boxes_in(0, (2, 6, 1)), scores_in(1, (2, 6, 3))
    boxes, kw = {
        "A": (b1, dict(max_output_size_per_class=2, max_total_size=5, iou_threshold=0.5,
                       score_threshold=0.1)),
        "B": (boxes_in(2, (2, 6, 3)), dict(max_output_size_per_class=2, max_total_size=10,
                                           iou_threshold=0.3, pad_per_class=True,
                                           clip_boxes=False)),
        "C": (b1, dict(max_output_size_per_class=4, max_total_size=3, iou_threshold=0.0)),
    }[case]
    out = gt.image.combined_non_max_suppression(gt.constant(boxes), gt.constant(s1), **kw)
    want = [globals()[f"COMBINED_{case}_{i}"] for i in range(4)]
    for got, w, dt in zip(out, want, [np.float32, np.float32, np.float32, np.int32]):
        assert got.device == device
        _same(got, w, dt)


def test_combined_nms_errors():
    f = gt.image.combined_non_max_suppression
    b, s = np.zeros((1, 3, 1, 4), np.float32), np.zeros((1, 3, 2), np.float32)
    with pytest.raises(gt.errors.InvalidArgumentError, match="4-D"):
        f(b[0], s, 2, 3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="either 1 or num classes"):
        f(np.zeros((1, 3, 3, 4), np.float32), s, 2, 3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="max_size_per_class"):
        f(b, s, 0, 3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="max_total_size"):
        f(b, s, 2, 0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="iou_threshold"):
        f(b, s, 2, 3, iou_threshold=1.5)
    with pytest.raises(gt.errors.InvalidArgumentError, match="same batch size"):
        f(np.zeros((2, 3, 1, 4), np.float32), s, 2, 3)


# --- non_max_suppression_padded and _overlaps -------------------------------------------------

def test_padded_nms_matches_tf(device):
    pb, ps = boxes_in(3, (9,)) * 10, scores_in(4, (9,))
    idx, num = gt.image.non_max_suppression_padded(gt.constant(pb), gt.constant(ps), 5,
                                                   iou_threshold=0.2, tile_size=4)
    _same(idx, P1[0], np.int32)
    _same(num, P1[1], np.int32)
    pb2 = boxes_in(5, (2, 11))[..., [2, 3, 0, 1]] * 10
    ps2 = scores_in(6, (2, 11))
    idx, num = gt.image.non_max_suppression_padded(
        gt.constant(pb2), gt.constant(ps2), 6, iou_threshold=0.3, score_threshold=0.2,
        pad_to_max_output_size=True, tile_size=3)
    _same(idx, P2[0], np.int32)
    _same(num, P2[1], np.int32)
    order = np.argsort(-ps2, axis=1, kind="stable")
    ps3 = np.take_along_axis(ps2, order, 1)
    pb3 = np.take_along_axis(boxes_in(5, (2, 11)) * 10, order[..., None], 1)
    idx, num = gt.image.non_max_suppression_padded(
        gt.constant(pb3), gt.constant(ps3), 8, iou_threshold=0.1, pad_to_max_output_size=True,
        canonicalized_coordinates=True, sorted_input=True, tile_size=5)
    _same(idx, P3[0], np.int32)
    _same(num, P3[1], np.int32)
    # a [2, 2, N] batch: the leading axes kept
    idx, num = gt.image.non_max_suppression_padded(
        gt.constant(np.stack([pb2, pb2])), gt.constant(np.stack([ps2, ps2])), 6,
        iou_threshold=0.3, score_threshold=0.2, pad_to_max_output_size=True, tile_size=3)
    _same(idx, [P2[0], P2[0]], np.int32)
    _same(num, [P2[1], P2[1]], np.int32)


def test_padded_nms_batched_needs_padding():
    with pytest.raises(ValueError, match="must be True for batched input"):
        gt.image.non_max_suppression_padded(np.zeros((2, 3, 4), np.float32),
                                            np.zeros((2, 3), np.float32), 2)


def test_padded_nms_agrees_with_greedy_nms():
    # TF's tiled algorithm keeps what greedy NMS keeps (strict and non-strict IoU aside)
    boxes, scores = boxes_in(11, (40,)), scores_in(12, (40,))
    greedy = gt.image.non_max_suppression(boxes, scores, 10, iou_threshold=0.35).numpy()
    for tile in (3, 8, 512):
        idx, num = gt.image.non_max_suppression_padded(boxes, scores, 10, iou_threshold=0.35,
                                                       tile_size=tile)
        _same(idx, greedy)
        assert int(num) == len(greedy)


def test_nms_overlaps_matches_tf(device):
    ov = np.round(np.random.default_rng(7).uniform(0, 1, (8, 8)), 2).astype(np.float32)
    got = gt.image.non_max_suppression_overlaps(gt.constant(ov), gt.constant(scores_in(8, (8,))),
                                                5, overlap_threshold=0.6, score_threshold=0.2)
    _same(got, OVERLAPS, np.int32)
    with pytest.raises(gt.errors.InvalidArgumentError, match="square"):
        gt.image.non_max_suppression_overlaps(ov[:3], scores_in(8, (8,)), 5)


# --- draw_bounding_boxes ----------------------------------------------------------------------

def test_draw_bounding_boxes_matches_tf(device):
    img = gt.constant(np.zeros((1, 5, 6, 3), np.float32) + 0.25)
    boxes = gt.constant([[[0.0, 0.0, 1.0, 1.0], [0.3, -0.2, 0.8, 0.5], [0.9, 0.9, 0.2, 0.2],
                          [0.5, 0.55, 1.4, 1.3]]])
    got = gt.image.draw_bounding_boxes(img, boxes, [[1.0, 0.0, 0.0], [0.0, 0.5, 1.0]])
    assert got.device == device
    _same(got, DRAW_1, np.float32)
    # the default colours (grey images: channel 0 set to 1), float16 images
    b1 = [[[0.0, 0.0, 0.6, 0.6], [0.4, 0.4, 1.0, 1.0]], [[-0.5, -0.5, 0.5, 0.5],
                                                         [0.0, 0.0, 0.0, 1.0]]]
    got = gt.image.draw_bounding_boxes(gt.constant(np.zeros((2, 4, 4, 1), np.float16)), b1, None)
    _same(got, DRAW_2, np.float16)
    # empty colours: the default table too
    got = gt.image.draw_bounding_boxes(gt.constant(np.zeros((1, 3, 3, 4), np.float32)), b1[:1],
                                       np.zeros((0, 4), np.float32))
    _same(got, DRAW_3, np.float32)


def test_draw_bounding_boxes_errors():
    f = gt.image.draw_bounding_boxes
    img = np.zeros((1, 3, 3, 3), np.float32)
    with pytest.raises(gt.errors.InvalidArgumentError, match="rank of the images"):
        f(img[0], np.zeros((1, 1, 4), np.float32), None)
    with pytest.raises(gt.errors.InvalidArgumentError, match="Channel depth"):
        f(np.zeros((1, 3, 3, 2), np.float32), np.zeros((1, 1, 4), np.float32), None)
    with pytest.raises(gt.errors.InvalidArgumentError, match="equal or more channels"):
        f(img, np.zeros((1, 1, 4), np.float32), [[1.0, 0.0]])
    with pytest.raises(gt.errors.InvalidArgumentError, match="batch sizes"):
        f(img, np.zeros((2, 1, 4), np.float32), None)
    with pytest.raises(TypeError, match="float16 or float32"):
        f(img.astype(np.float64), np.zeros((1, 1, 4), np.float32), None)


# --- extract_glimpse --------------------------------------------------------------------------

@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("normalized", [False, True])
def test_extract_glimpse_matches_tf(centered, normalized, device):
    x = gt.constant(np.arange(120, dtype=np.float32).reshape(2, 5, 6, 2))
    if not normalized:
        off = [[-1.5, 3.7], [2.2, -0.6]]
    else:
        off = [[-0.9, 0.35], [0.4, -1.3]] if centered else [[0.3, 0.55], [0.62, -0.1]]
    got = gt.image.extract_glimpse(x, [3, 4], off, centered=centered, normalized=normalized,
                                   noise="zero")
    assert got.device == device
    _same(got, globals()[f"GLIMPSE_{str(centered)[0]}{str(normalized)[0]}"], np.float32)


def test_extract_glimpse_noise(device):
    rng = np.random.default_rng(0)
    img = rng.uniform(2.0, 5.0, (2, 6, 6, 3)).astype(np.float32)
    img[1, ..., 1] = 7.0                              # a constant channel: sigma 0
    x = gt.constant(img)
    off = [[-20.0, -20.0], [-20.0, -20.0]]            # nothing of the image in view
    uni = gt.image.extract_glimpse(x, [30, 30], off, centered=False, normalized=False).numpy()
    for b in range(2):
        lo, hi = img[b].min(), img[b].max()
        assert lo <= uni[b].min() and uni[b].max() <= hi
        assert abs(uni[b].mean() - (lo + hi) / 2) < 0.05 * (hi - lo)
    gau = gt.image.extract_glimpse(x, [30, 30], off, centered=False, normalized=False,
                                   noise="gaussian").numpy()
    for b in range(2):
        for c in range(3):
            ch = img[b, ..., c]
            g = gau[b, ..., c]
            assert ch.min() <= g.min() and g.max() <= ch.max()
            if ch.std() > 0:
                assert abs(g.mean() - ch.mean()) < 0.1 * ch.std()
    np.testing.assert_array_equal(gau[1, ..., 1], 7.0)
    # partly inside: the covered pixels are the image's
    part = gt.image.extract_glimpse(x, [4, 4], [[-2.0, 0.0], [4.0, 4.0]], centered=False,
                                    normalized=False).numpy()
    np.testing.assert_array_equal(part[0, 2:], img[0, :2, :4])
    np.testing.assert_array_equal(part[1, :2, :2], img[1, 4:, 4:])


def test_extract_glimpse_errors():
    x = np.zeros((1, 4, 4, 1), np.float32)
    with pytest.raises(gt.errors.InvalidArgumentError, match="4-dimensional"):
        gt.image.extract_glimpse(x[0], [2, 2], [[0.0, 0.0]])
    with pytest.raises(gt.errors.InvalidArgumentError, match="batch"):
        gt.image.extract_glimpse(x, [2, 2], [[0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(gt.errors.InvalidArgumentError, match="noise"):
        gt.image.extract_glimpse(x, [2, 2], [[0.0, 0.0]], noise="pink")


# --- sample_distorted_bounding_box ------------------------------------------------------------

SAMPLED_CASES = [
    ([480, 640, 3], np.int32, [[[0.1, 0.2, 0.5, 0.7]]], [1, 2], {}),
    ([100, 80, 1], np.int64, [[[0.0, 0.0, 1.0, 1.0], [0.4, 0.4, 0.6, 0.6]]],
     [-7, 12345678901], dict(min_object_covered=0.6, aspect_ratio_range=[0.5, 2.0],
                             area_range=[0.2, 0.9])),
    ([50, 60, 3], np.uint8, np.zeros((1, 0, 4), np.float32), [3, 4],
     dict(use_image_if_no_bounding_boxes=True, max_attempts=3)),
    ([30, 30, 3], np.int32, [[[0.2, 0.2, 0.3, 0.3]]], [5, 6],
     dict(min_object_covered=1.0, area_range=[0.9, 1.0], max_attempts=2)),
]


@pytest.mark.parametrize("k", range(len(SAMPLED_CASES)))
def test_stateless_sample_distorted_bounding_box_is_tfs(k, device):
    size, dt, boxes, seed, kw = SAMPLED_CASES[k]
    seed = gt.constant(np.asarray(seed, np.int64))
    begin, extent, box = gt.image.stateless_sample_distorted_bounding_box(
        gt.constant(np.asarray(size, dt)), gt.constant(np.asarray(boxes, np.float32)), seed,
        **kw)
    want = globals()[f"SAMPLED_{k}"]
    _same(begin, want[0], dt)
    _same(extent, want[1], dt)
    _same(box, want[2], np.float32)


def _check_crop(begin, extent, box, height, width, ratio, area):
    y, x, _ = begin.numpy().tolist()
    h, w, c = extent.numpy().tolist()
    assert c == -1 and 0 <= y and 0 <= x and y + h <= height and x + w <= width
    np.testing.assert_allclose(box.numpy(), [[[y / height, x / width, (y + h) / height,
                                               (x + w) / width]]], rtol=1e-6)
    if (h, w) != (height, width):
        assert area[0] * height * width <= h * w <= area[1] * height * width
        assert ratio[0] - 1.0 / h <= w / h <= ratio[1] + 1.0 / h
    return y, x, h, w


def test_sample_distorted_bounding_box_constraints(device):
    height, width = 120, 200
    obj = [0.25, 0.3, 0.75, 0.6]                      # y0, x0, y1, x1
    oy0, ox0, oy1, ox1 = (int(obj[0] * height), int(obj[1] * width), int(obj[2] * height),
                          int(obj[3] * width))
    crops = set()
    for seed in range(40):
        out = gt.image.stateless_sample_distorted_bounding_box(
            [height, width, 3], [[obj]], [seed, 1], min_object_covered=0.5,
            aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.8])
        y, x, h, w = _check_crop(*out, height, width, (0.5, 2.0), (0.1, 0.8))
        iy = max(0, min(y + h, oy1) - max(y, oy0))
        ix = max(0, min(x + w, ox1) - max(x, ox0))
        assert (h, w) == (height, width) or iy * ix >= 0.5 * (oy1 - oy0) * (ox1 - ox0)
        crops.add((y, x, h, w))
    assert len(crops) > 30                           # the seeds pick different crops
    # the stateful sampler: the same constraints, fresh crops per call, replayed by set_seed
    gt.random.set_seed(11)
    first = [tuple(t.numpy().tolist()) for _ in range(5) for t in
             gt.image.sample_distorted_bounding_box([height, width, 3], [[obj]], seed=3,
                                                    min_object_covered=0.5)[:2]]
    gt.random.set_seed(11)
    again = [tuple(t.numpy().tolist()) for _ in range(5) for t in
             gt.image.sample_distorted_bounding_box([height, width, 3], [[obj]], seed=3,
                                                    min_object_covered=0.5)[:2]]
    assert first == again and len(set(first[::2])) > 1
    out = gt.image.sample_distorted_bounding_box(gt.constant([height, width, 3], gt.int64),
                                                 [[obj]])
    assert out[0].dtype == gt.int64 and out[2].dtype == gt.float32
    _check_crop(*out, height, width, (0.75, 1.33), (0.05, 1.0))


def test_sample_distorted_bounding_box_aspect_distribution():
    # ratio uniform in the range, height uniform between its bounds: wide spread of shapes
    ratios = []
    for seed in range(200):
        _, extent, _ = gt.image.stateless_sample_distorted_bounding_box(
            [400, 400, 3], np.zeros((1, 0, 4), np.float32), [seed, seed],
            min_object_covered=0.0, aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 1.0],
            use_image_if_no_bounding_boxes=True)
        h, w, _ = extent.numpy().tolist()
        ratios.append(w / h)
    ratios = np.asarray(ratios)
    assert ratios.min() >= 0.49 and ratios.max() <= 2.01
    assert abs(np.mean(ratios) - 1.25) < 0.12        # uniform on [0.5, 2]: mean 1.25


def test_sample_distorted_bounding_box_errors():
    f = gt.image.stateless_sample_distorted_bounding_box
    with pytest.raises(gt.errors.InvalidArgumentError, match="No bounding boxes"):
        f([10, 10, 3], np.zeros((1, 0, 4), np.float32), [1, 2])
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"\[0.0, 1.0\]"):
        f([10, 10, 3], [[[0.0, 0.0, 1.5, 1.0]]], [1, 2])
    with pytest.raises(gt.errors.InvalidArgumentError, match="Area range"):
        f([10, 10, 3], [[[0.0, 0.0, 1.0, 1.0]]], [1, 2], area_range=[0.5, 1.5])
    with pytest.raises(gt.errors.InvalidArgumentError, match="shape \\[2\\]"):
        f([10, 10, 3], [[[0.0, 0.0, 1.0, 1.0]]], [1, 2, 3])
    with pytest.raises(gt.errors.InvalidArgumentError, match="3-dimensional"):
        f([10, 10, 3], [[0.0, 0.0, 1.0, 1.0]], [1, 2])


# --- generate_bounding_box_proposals ----------------------------------------------------------

def test_generate_bounding_box_proposals_by_hand(device):
    # one position, two anchors: (0, 0, 10, 10) and (0, 0, 20, 20); image 15 x 15
    anchors = gt.constant([[[0.0, 0.0, 10.0, 10.0, 0.0, 0.0, 20.0, 20.0]]])
    info = gt.constant([[15.0, 15.0, 1.0, 0.0, 0.0]])
    deltas = np.zeros((1, 1, 1, 8), np.float32)
    deltas[0, 0, 0, :4] = [0.1, 0.0, 0.0, math.log(2.0)]     # dy, dx, dh, dw of anchor 0
    scores = gt.constant([[[[0.9, 0.8]]]])
    rois, probs = gt.image.generate_bounding_box_proposals(scores, gt.constant(deltas), info,
                                                           anchors, min_size=1, post_nms_topn=3)
    assert rois.device == device
    # anchor 0: centre y 5 + 10 * 0.1 = 6, height 10: y 1..11; width 20 about x 5: -5..15,
    # clipped to 0..15; anchor 1 clipped to the image: IoU 150 / 225 < 0.7, both kept
    np.testing.assert_allclose(rois.numpy(), [[[1, 0, 11, 15], [0, 0, 15, 15], [0, 0, 0, 0]]],
                               rtol=1e-6)
    np.testing.assert_allclose(probs.numpy(), [[0.9, 0.8, 0.0]], rtol=1e-6)
    # a lower NMS threshold suppresses anchor 1; min_size 12 drops anchor 0 (height 10 < 12)
    rois, probs = gt.image.generate_bounding_box_proposals(
        scores, gt.constant(deltas), info, anchors, nms_threshold=0.5, min_size=1,
        post_nms_topn=2)
    np.testing.assert_allclose(rois.numpy(), [[[1, 0, 11, 15], [0, 0, 0, 0]]], rtol=1e-6)
    rois, probs = gt.image.generate_bounding_box_proposals(
        scores, gt.constant(np.zeros((1, 1, 1, 8), np.float32)), info, anchors, min_size=12,
        post_nms_topn=2)
    np.testing.assert_allclose(rois.numpy(), [[[0, 0, 15, 15], [0, 0, 0, 0]]], rtol=1e-6)
    np.testing.assert_allclose(probs.numpy(), [[0.8, 0.0]], rtol=1e-6)
    # pre_nms_topn 1 keeps only the best-scoring anchor; min_size is scaled by image_info[2]
    rois, probs = gt.image.generate_bounding_box_proposals(
        scores, gt.constant(deltas), info, anchors, min_size=6, pre_nms_topn=1,
        post_nms_topn=2)
    np.testing.assert_allclose(probs.numpy(), [[0.9, 0.0]], rtol=1e-6)
    rois, probs = gt.image.generate_bounding_box_proposals(
        scores, gt.constant(deltas), gt.constant([[15.0, 15.0, 2.0, 0.0, 0.0]]), anchors,
        min_size=6, post_nms_topn=2)
    np.testing.assert_allclose(probs.numpy(), [[0.8, 0.0]], rtol=1e-6)
    # NMS keeps a box unless the overlap exceeds the threshold: equal boxes pass at 1
    same = gt.constant([[[0.0, 0.0, 10.0, 10.0, 0.0, 0.0, 10.0, 10.0]]])
    zero = gt.constant(np.zeros((1, 1, 1, 8), np.float32))
    _, probs = gt.image.generate_bounding_box_proposals(scores, zero, info, same,
                                                        nms_threshold=1.0, min_size=1)
    np.testing.assert_allclose(probs.numpy()[0, :3], [0.9, 0.8, 0.0], rtol=1e-6)
    _, probs = gt.image.generate_bounding_box_proposals(scores, zero, info, same,
                                                        nms_threshold=0.99, min_size=1)
    np.testing.assert_allclose(probs.numpy()[0, :3], [0.9, 0.0, 0.0], rtol=1e-6)


def test_generate_bounding_box_proposals_errors():
    f = gt.image.generate_bounding_box_proposals
    s = np.zeros((1, 2, 2, 1), np.float32)
    with pytest.raises(gt.errors.InvalidArgumentError, match="rank 4"):
        f(s[0], np.zeros((1, 2, 2, 4), np.float32), np.zeros((1, 5), np.float32),
          np.zeros((2, 2, 4), np.float32))
    with pytest.raises(gt.errors.InvalidArgumentError, match="Box dimensions"):
        f(s, np.zeros((1, 2, 2, 4), np.float32), np.zeros((1, 5), np.float32),
          np.zeros((2, 2, 3), np.float32))
    with pytest.raises(gt.errors.InvalidArgumentError, match="nms_threshold"):
        f(s, np.zeros((1, 2, 2, 4), np.float32), np.zeros((1, 5), np.float32),
          np.zeros((2, 2, 4), np.float32), nms_threshold=2.0)
