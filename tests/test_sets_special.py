"""gt.sets and gt.math.special / gt.math.sobol_sample against TensorFlow 2.21 (the reference
values below come from it): set sizes, intersections, unions and differences of dense and
sparse inputs (TF's sorted sparse results, its errors); the special functions' values and
gradients in float64 and float32 (with TF's values where SciPy's differ: Y and K at x <= 0,
expint and spence below 0); Sobol points."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

INF, NAN = math.inf, math.nan

SETS = {  # (indices, values, dense_shape) of TF's results
    'dd_int': ([[0, 0], [1, 0]], [2, 3], [2, 1]),
    'dd_uni': ([[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1]], [0, 1, 2, 5, 3, 4], [2, 4]),
    'dd_amb': ([[0, 0], [0, 1]], [0, 1], [2, 2]),
    'dd_bma': ([[0, 0], [1, 0]], [5, 4], [2, 1]),
    'ss_int': ([[0, 0], [1, 0]], [1, 7], [3, 1]),
    'ss_uni': ([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0]], [1, 5, 7, 8, 7], [3, 2]),
    'ss_amb': ([[0, 0], [2, 0]], [5, 7], [3, 1]),
    'ds_uni': ([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [2, 0]], [1, 4, 7, 8, 9, 0], [3, 3]),
    'sd_amb': ([[1, 0], [1, 1]], [7, 8], [3, 2]),
    'ds_amb': ([[0, 0], [1, 0], [2, 0]], [4, 9, 0], [3, 1]),
    'empty': ([], [], [1, 0]),
    'str_uni': ([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]], ['a', 'b', 'a', 'c', 'z'], [2, 3]),
    'd3_uni': ([[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3], [0, 1, 0], [0, 1, 1], [0, 1, 2], [0, 1,
        3], [0, 1, 4], [0, 2, 0], [0, 2, 1], [0, 2, 2], [0, 2, 3], [0, 2, 4], [1, 0, 0], [1, 0, 1],
        [1, 0, 2], [1, 0, 3], [1, 0, 4], [1, 1, 0], [1, 1, 1], [1, 1, 2], [1, 1, 3], [1, 2, 0], [1,
        2, 1], [1, 2, 2], [1, 2, 3], [1, 2, 4], [1, 2, 5]], [0, 1, 2, 3, 0, 1, 2, 3, 4, 0, 1, 3, 4,
        5, 0, 1, 2, 3, 4, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5], [2, 3, 6]),
    'd3_int': ([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 2, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]], [0,
        1, 2, 4, 0, 2, 3], [2, 3, 2]),
    's3_amb': ([[0, 1, 0], [0, 2, 0], [1, 2, 0]], [2, 1, 2], [2, 3, 1]),
    's3_int': ([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 2, 0], [1, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1,
        1], [1, 2, 0]], [1, 2, 1, 2, 1, 2, 1, 2, 1], [2, 3, 2]),
    'size_sa': [2, 1, 1],
    'size_3': [[2, 2, 2], [2, 2, 2]],
    'size_unordered_novalidate': [2, 0],
}

SPECIAL = {  # name: (values, gradients) at X, float64
    "bessel_j0": ([-0.04838377646819804, 0.7651976865579665, 1.0, 0.9776262465382962,
        0.7651976865579665, 0.39798485944610945, -0.3765570543675676, -0.19392874768742224,
        0.05120814530454214, 0.09490872648301352], [0.497094102464274, 0.44005058574493355, -0.0,
        -0.148318816273104, -0.44005058574493355, -0.5777652315290233, 0.1386469421260462,
        -0.16126443075752983, 0.13302431666631417, -0.009987788784837935]),
    "bessel_j1": ([-0.497094102464274, -0.44005058574493355, 0.0, 0.148318816273104,
        0.44005058574493355, 0.5777652315290233, -0.1386469421260462, 0.16126443075752983,
        -0.13302431666631417, 0.009987788784837935], [-0.24722141745390763, 0.32514710081303294,
        0.5, 0.48323019229461617, 0.32514710081303294, 0.05812295854668398, -0.34354587767088995,
        -0.21090395092505695, 0.05549925229377808, 0.09476604378608726]),
    "bessel_y0": ([-INF, -INF, -INF, -0.8072735778045196, 0.08825696421567697, 0.45202700018163466,
        -0.09375120131443421, 0.17121062620272404, -0.13383266050364437, 0.009309666458941232],
        [INF, INF, INF, 2.2931051383885293, 0.7812128213002888, 0.2847262450640684,
        -0.3680128078541756, -0.20317989938720774, 0.053372826957321734, 0.09484465262571631]),
    "bessel_y1": ([-INF, -INF, -INF, -2.2931051383885293, -0.7812128213002888, -0.2847262450640684,
        0.3680128078541756, 0.20317989938720774, -0.053372826957321734, -0.09484465262571631],
        [-INF, -INF, NAN, 6.836410216823912, 0.8694697855159658, 0.6195130266899103,
        -0.18137329842257127, 0.14982326837249166, -0.13211095640824688, 0.010664590067880036]),
    "bessel_k0": ([INF, INF, INF, 1.3724600605442978, 0.42102443824070823, 0.16549631805699652,
        0.00892745154154237, 3.005788495793434e-05, 7.718382655527616e-15, 5.944661337292501e-32],
        [-INF, -INF, -INF, -3.055992033457325, -0.6019072301972348, -0.2093624882040826,
        -0.009938204735917083, -3.160203411042675e-05, -7.841899600834064e-15,
        -5.986973673913856e-32]),
    "bessel_k0e": ([INF, INF, INF, 1.8526273007720149, 1.1444630798068947, 0.9059181385685512,
        0.595338988851112, 0.4015651321154054, 0.2242101374192749, 0.14953431013343607], [NAN, NAN,
        NAN, -2.272530461472455, -0.4916904064563641, -0.24012110766170347, -0.0674034221207448,
        -0.02062941086155251, -0.0035880251753175885, -0.0010643408779430485]),
    "bessel_k1": ([INF, INF, INF, 3.055992033457325, 0.6019072301972348, 0.2093624882040826,
        0.009938204735917083, 3.160203411042675e-05, 7.841899600834064e-15, 5.986973673913856e-32],
        [NAN, NAN, -INF, -11.559100172068714, -1.022931668437943, -0.2886507228829275,
        -0.01129369076437977, -3.338441486429505e-05, -7.971347158780328e-15,
        -6.030189532634128e-32]),
    "bessel_k1e": ([INF, INF, INF, 4.12515776224447, 1.6361534862632587, 1.1460392462302547,
        0.6627424109718568, 0.4221945429769579, 0.22779816259459248, 0.15059865101137912], [NAN,
        NAN, -INF, -11.47799541267578, -1.1444630798068947, -0.43401962541491695,
        -0.09039239001541166, -0.023812119978127266, -0.0037603026503144343,
        -0.001087068422219506]),
    "dawsn": ([-0.22308372216743552, -0.5380795069127684, 0.0, 0.28263166502131193,
        0.5380795069127684, 0.37255934897407883, 0.12276081600652292, 0.05292815270562564,
        0.016137437186981757, 0.007143586229066141], [-0.11541861083717753, -0.0761590138255368,
        1.0, 0.8304210009872128, -0.0761590138255368, -0.26670178651186793, -0.031190854454792527,
        -0.005634901406887272, -0.0005211055928688868, -0.00010207206925971768]),
    "expint": ([NAN, NAN, -INF, -0.30266853926582604, 1.895117816355937, 3.9209632013549047,
        22.57740064778209, 1605.0284066323388, 969455575968.3939, 3.6463527595797357e+28],
        [-0.03283399944955952, -0.3678794411714423, INF, 4.499529358586678, 2.7182818284590455,
        3.2199690539571764, 15.87769786688694, 1406.2870347012497, 937059666620.8846,
        3.5934838155988096e+28]),
    "fresnel_cos": ([-0.45741300964177706, -0.779893400376823, 0.0, 0.2994009760520472,
        0.779893400376823, 0.32382687600390025, 0.5417192031634154, 0.4872873310265677,
        0.510268057465068, 0.49999970460298065], [-0.9238795325112867, 6.123233995736766e-17, 1.0,
        0.9900236577165575, 6.123233995736766e-17, -0.1719291002794105, -0.8443279255020143,
        -0.9238795325112935, 7.329930356423057e-15, 1.0]),
    "fresnel_sin": ([-0.6191817558195929, -0.4382591473903547, 0.0, 0.014116998006576587,
        0.4382591473903547, 0.5491959403215687, 0.5631988883966113, 0.5309998491513985,
        0.49999659893870957, 0.4954527159692282], [-0.38268343236508984, 1.0, 0.0,
        0.14090123193758267, 1.0, -0.9851093261547738, 0.5358267949789979, -0.3826834323650736,
        1.0, -2.645113290030965e-13]),
    "spence": ([NAN, NAN, 1.6449340668482264, 0.8893776242860388, 0.0, -0.6051584023377057,
        -2.030415099021474, -3.820519021167801, -7.395946286130682, -10.594322433841809], [NAN,
        NAN, -INF, -1.7199611490370514, -1.0, -0.7580403586602434, -0.44846391415291326,
        -0.2648578586595876, -0.11446624014950488, -0.061572394812309555]),
    "bessel_i0": ([3.289839144050123, 1.2660658777520082, 1.0, 1.0226268793515971,
        1.2660658777520082, 1.8639649620738397, 13.44245616329765, 1753.480990527323,
        2089962966491.9038, 1.201588957912546e+29], [-2.5167162452886984, -0.565159103992485, 0.0,
        0.15169384000359282, 0.565159103992485, 1.1963465656344818, 11.705620143051611,
        1658.4530777821342, 2055972795294.5647, 1.1929750788892311e+29]),
    "bessel_i0e": ([0.27004644161220276, 0.46575960759364043, 1.0, 0.7575806251825479,
        0.46575960759364043, 0.3405156879824709, 0.20157738405263387, 0.1312512608142679,
        0.07194649669698383, 0.04776856505404178], [0.06346179208093622, 0.257849192243932, 0.0,
        -0.645203064542709, -0.257849192243932, -0.12196288138397754, -0.02604485796617223,
        -0.007113013159386131, -0.0011701038625981514, -0.0003424404308838627]),
    "bessel_i1e": ([-0.20658464953126654, -0.20791041534970844, 0.0, 0.11237756063983881,
        0.20791041534970844, 0.21855280659849335, 0.17553252608646164, 0.12413824765488178,
        0.07077639283438568, 0.047426124623157914], [-0.019172067731570375, 0.04993877689422355,
        0.5, 0.2706111957432463, 0.04993877689422355, -0.00659759308572444, -0.015748600625842463,
        -0.005954170804285619, -0.0011130055836723468, -0.00033507563516124717]),
}

SPECIAL_F32 = {  # name: values at X, float32
    "bessel_j0": [-0.048383795, 0.7651977, 1, 0.9776262, 0.7651977, 0.39798486, -0.3765571,
        -0.1939287, 0.051208086, 0.094908744],
    "bessel_j1": [-0.49709406, -0.4400506, 0, 0.14831883, 0.4400506, 0.5777652, -0.13864684,
        0.16126446, -0.1330243, 0.0099878],
    "bessel_y0": [-INF, -INF, -INF, -0.8072735, 0.08825697, 0.45202705, -0.09375117, 0.17121068,
        -0.1338327, 0.009309478],
    "bessel_y1": [-INF, -INF, NAN, -2.2931051, -0.7812128, -0.2847262, 0.36801285, 0.20317987,
        -0.053372875, -0.094844654],
    "bessel_k0": [INF, INF, INF, 1.3724607, 0.42102444, 0.16549627, 0.008927453, 0.000030057883,
        0.000000000000007718382, 0.00000000000000000000000000000005944662],
    "bessel_k0e": [INF, INF, INF, 1.8526281, 1.1444631, 0.90591794, 0.595339, 0.40156513,
        0.22421011, 0.14953431],
    "bessel_k1": [INF, INF, INF, 3.0559921, 0.6019073, 0.20936261, 0.009938207, 0.000031602034,
        0.0000000000000078419005, 0.00000000000000000000000000000005986974],
    "bessel_k1e": [INF, INF, INF, 4.125158, 1.6361537, 1.14604, 0.6627425, 0.42219454, 0.22779818,
        0.15059865],
    "dawsn": [-0.22308369, -0.5380795, 0, 0.28263167, 0.5380795, 0.37255934, 0.12276082,
        0.052928153, 0.016137436, 0.0071435864],
    "expint": [NAN, NAN, -INF, -0.30266857, 1.8951179, 3.920963, 22.577398, 1605.0283,
        969455500000, 36463528000000000000000000000],
    "fresnel_cos": [-0.457413, -0.7798934, 0, 0.29940102, 0.7798934, 0.32382685, 0.54171944,
        0.48728716, 0.51026803, 0.50000125],
    "fresnel_sin": [-0.61918175, -0.43825912, 0, 0.014116999, 0.43825912, 0.5491959, 0.56319875,
        0.5309998, 0.4999967, 0.4954527],
    "spence": [NAN, NAN, 1.644934, 0.8893776, 0, -0.6051583, -2.0304148, -3.820519, -7.395946,
        -10.594322],
    "bessel_i0": [3.2898395, 1.266066, 1, 1.0226272, 1.266066, 1.8639649, 13.442452, 1753.481,
        2089963000000, 120158890000000000000000000000],
    "bessel_i0e": [0.27004647, 0.46575963, 1, 0.75758094, 0.46575963, 0.34051567, 0.20157737,
        0.13125126, 0.071946494, 0.04776856],
    "bessel_i1e": [-0.20658465, -0.20791042, 0, 0.11237757, 0.20791042, 0.21855272, 0.17553253,
        0.12413825, 0.070776395, 0.047426123],
}


SOBOL_1111_CHECKSUMS = [18333.669921875, 10169504.89453125, 17.068359375]

X = [-2.5, -1.0, 0.0, 0.3, 1.0, 1.7, 4.2, 9.5, 31.0, 70.0]
SCIPY_FREE = {"dawsn", "expint", "fresnel_cos", "fresnel_sin", "spence"}

SOBOL_3_5_SKIP_2 = [[0.25, 0.75, 0.75], [0.375, 0.375, 0.625], [0.875, 0.875, 0.125],
                    [0.625, 0.125, 0.875], [0.125, 0.625, 0.375]]
SOBOL_2_4_F64 = [[0.5, 0.5], [0.75, 0.25], [0.25, 0.75], [0.375, 0.375]]


def _sp(indices, values, shape):
    return gt.sparse.SparseTensor(indices, gt.constant(values), shape)


def _check(result, key):
    ind, vals, shape = SETS[key]
    assert isinstance(result, gt.sparse.SparseTensor)
    got_ind = result.indices.numpy()
    assert result.indices.dtype == gt.int64
    np.testing.assert_array_equal(got_ind.reshape(-1, len(shape)),
                                  np.asarray(ind, np.int64).reshape(-1, len(shape)))
    got = result.values.numpy().tolist()
    got = [v.decode() if isinstance(v, bytes) else v for v in got]
    assert got == vals
    assert result.dense_shape.numpy().tolist() == shape


# --- gt.sets ------------------------------------------------------------------------------------

A = [[1, 2, 2, 0], [3, 3, 3, 3]]
B = [[2, 5], [4, 3]]


def _sa():
    return _sp([[0, 0], [0, 2], [1, 1], [2, 0]], [5, 1, 7, 7], [3, 4])


def _sb():
    return _sp([[0, 0], [1, 0], [1, 3]], [1, 7, 8], [3, 6])


def test_sets_dense_dense(device):
    a, b = gt.constant(A), gt.constant(B)
    _check(gt.sets.intersection(a, b), "dd_int")
    _check(gt.sets.union(a, b), "dd_uni")
    _check(gt.sets.difference(a, b), "dd_amb")
    _check(gt.sets.difference(a, b, aminusb=False), "dd_bma")
    r = gt.sets.union(a, b)
    assert r.values.dtype == gt.int32 and r.values.device == device
    _check(gt.sets.intersection(gt.constant([[1, 2]]), gt.constant([[3, 4]])), "empty")


def test_sets_sparse_and_mixed(device):
    _check(gt.sets.intersection(_sa(), _sb()), "ss_int")
    _check(gt.sets.union(_sa(), _sb()), "ss_uni")
    _check(gt.sets.difference(_sa(), _sb()), "ss_amb")
    x = gt.constant([[4, 1], [9, 9], [0, 0]])
    _check(gt.sets.union(x, _sb()), "ds_uni")
    _check(gt.sets.difference(_sb(), x), "sd_amb")            # sparse, dense: flipped
    _check(gt.sets.difference(x, _sb()), "ds_amb")
    np.testing.assert_array_equal(gt.sets.size(_sa()).numpy(), SETS["size_sa"])
    assert gt.sets.size(_sa()).dtype == gt.int32


def test_sets_rank3_and_dtypes():
    a3 = gt.constant(np.arange(24).reshape(2, 3, 4) % 5, gt.int64)
    b3 = gt.constant((np.arange(12).reshape(2, 3, 2) * 7) % 6, gt.int64)
    _check(gt.sets.union(a3, b3), "d3_uni")
    _check(gt.sets.intersection(a3, b3), "d3_int")
    sa3 = gt.sparse.from_dense(gt.constant(np.arange(24).reshape(2, 3, 4) % 3, gt.int16))
    sb3 = gt.sparse.from_dense(gt.constant((np.arange(18).reshape(2, 3, 3) * 5) % 4, gt.int16))
    r = gt.sets.difference(sa3, sb3)
    _check(r, "s3_amb")
    assert r.values.dtype == gt.int16
    _check(gt.sets.intersection(sa3, sb3), "s3_int")
    np.testing.assert_array_equal(gt.sets.size(sa3).numpy(), SETS["size_3"])
    _check(gt.sets.union(gt.constant([["a", "b"], ["c", "a"]]), gt.constant([["b"], ["z"]])),
           "str_uni")
    u8 = gt.sets.union(gt.constant(np.array([[200, 3]], np.uint8)),
                       gt.constant(np.array([[3, 255]], np.uint8)))
    assert u8.values.dtype == gt.uint8 and u8.values.numpy().tolist() == [3, 200, 255]


def test_sets_validation():
    unordered = _sp([[0, 1], [0, 0]], [1, 2], [2, 2])
    with pytest.raises(gt.errors.InvalidArgumentError, match="out of order"):
        gt.sets.size(unordered)
    with pytest.raises(gt.errors.InvalidArgumentError, match="repeated"):
        gt.sets.size(_sp([[0, 1], [0, 1]], [1, 2], [2, 2]))
    with pytest.raises(gt.errors.InvalidArgumentError, match="out of bounds"):
        gt.sets.size(_sp([[0, 1], [0, 2]], [1, 2], [2, 2]))
    np.testing.assert_array_equal(gt.sets.size(unordered, validate_indices=False).numpy(),
                                  SETS["size_unordered_novalidate"])
    with pytest.raises(gt.errors.InvalidArgumentError, match="out of order"):
        gt.sets.intersection(unordered, _sa())
    r = gt.sets.intersection(unordered, _sp([[0, 1]], [1], [2, 2]), validate_indices=False)
    assert r.values.numpy().tolist() == [1] and r.dense_shape.numpy().tolist() == [2, 1]


def test_sets_errors():
    with pytest.raises(TypeError, match="invalid dtype"):
        gt.sets.intersection(gt.constant([[1.0]]), gt.constant([[1.0]]))
    with pytest.raises(TypeError, match="Types don't match"):
        gt.sets.union(gt.constant([[1]]), gt.constant([[1]], gt.int64))
    with pytest.raises(TypeError, match="Expected `SparseTensor`"):
        gt.sets.size(gt.constant([[1]]))
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"Mismatched shapes \[2\] vs \[1\]"):
        gt.sets.intersection(gt.constant([[1], [2]]), gt.constant([[1]]))
    with pytest.raises(gt.errors.InvalidArgumentError, match=r"Mismatched shapes \[1\] vs \[3\]"):
        gt.sets.intersection(_sa(), gt.constant([[1]]))
    with pytest.raises(gt.errors.InvalidArgumentError, match="rank 1 < 2"):
        gt.sets.union(gt.constant([1, 2]), gt.constant([1]))
    with pytest.raises(gt.errors.InvalidArgumentError, match="Invalid rank 1"):
        gt.sets.size(_sp([[1]], [1], [2]))


# --- gt.math.special ----------------------------------------------------------------------------

def _needs_scipy(name):
    if name not in SCIPY_FREE:
        pytest.importorskip("scipy")


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_values_and_gradients_float64(name, device):
    _needs_scipy(name)
    x = gt.constant(np.asarray(X, np.float64))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = getattr(gt.math.special, name)(x)
    g = tape.gradient(y, x)
    values, grads = SPECIAL[name]
    np.testing.assert_allclose(y.numpy(), values, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(g.numpy(), grads, rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("name", sorted(SPECIAL_F32))
def test_special_values_float32(name):
    _needs_scipy(name)
    y = getattr(gt.math.special, name)(gt.constant(np.asarray(X, np.float32)))
    assert y.dtype == gt.float32
    want = np.asarray(SPECIAL_F32[name], np.float64)
    if name == "bessel_y1":
        want[2] = -INF      # TF's float32 kernel gives NaN at 0, its float64 one (and ours) -inf
    # TF's float32 kernels are float approximations; ours round the float64 value
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=2e-7)


def test_special_gradients_second_order():
    pytest.importorskip("scipy")
    sp = gt.math.special
    x = np.array([0.4, 1.3, 2.9, 6.5])
    for fn in (sp.bessel_j0, sp.bessel_j1, sp.bessel_y0, sp.bessel_y1, sp.bessel_k0,
               sp.bessel_k0e, sp.bessel_k1, sp.bessel_k1e, sp.dawsn, sp.expint,
               sp.fresnel_cos, sp.fresnel_sin, sp.spence):
        check_grads(fn, [x], order=2, rtol=1e-5, atol=1e-6)
    # the imputed values of TF's rules: J1'(0) = 1/2, spence'(1) = -1
    for fn, at, want in ((sp.bessel_j1, 0.0, 0.5), (sp.spence, 1.0, -1.0)):
        t = gt.constant(at, gt.float64)
        with gt.GradientTape() as tape:
            tape.watch(t)
            y = fn(t)
        assert float(tape.gradient(y, t)) == want


def test_special_namespace_is_tfs():
    want = {"bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "bessel_j0", "bessel_j1",
            "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e", "bessel_y0", "bessel_y1",
            "dawsn", "expint", "fresnel_cos", "fresnel_sin", "spence"}
    assert set(gt.math.special.__all__) == want
    with pytest.raises(TypeError, match="floating"):
        gt.math.special.dawsn(gt.constant([1, 2]))


# --- sobol_sample ------------------------------------------------------------------------------

def test_sobol_sample_matches_tf(device):
    pytest.importorskip("scipy")
    got = gt.math.sobol_sample(3, 5, skip=2)
    assert got.dtype == gt.float32 and got.device == device
    np.testing.assert_array_equal(got.numpy(), SOBOL_3_5_SKIP_2)
    got = gt.math.sobol_sample(gt.constant(2), 4, dtype=gt.float64)
    assert got.dtype == gt.float64
    np.testing.assert_array_equal(got.numpy(), SOBOL_2_4_F64)
    # TF's points at large dimension and skip: checksums of tf.math.sobol_sample's output
    big = gt.math.sobol_sample(1111, 33, skip=1000, dtype=gt.float64).numpy()
    assert big.shape == (33, 1111)
    np.testing.assert_allclose([big.sum(), (big * np.arange(1111)).sum(), big[:, -1].sum()],
                               SOBOL_1111_CHECKSUMS, rtol=1e-15)


def test_sobol_sample_errors():
    with pytest.raises(gt.errors.InvalidArgumentError, match="dim must be at least one"):
        gt.math.sobol_sample(0, 3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="at most 21200"):
        gt.math.sobol_sample(21201, 3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="num_results"):
        gt.math.sobol_sample(2, 0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="skip"):
        gt.math.sobol_sample(2, 3, skip=-1)
    with pytest.raises(TypeError, match="int32 scalar"):
        gt.math.sobol_sample(2, 3.5)
    with pytest.raises(gt.errors.InvalidArgumentError, match="float32 or float64"):
        gt.math.sobol_sample(2, 3, dtype=gt.float16)
