"""Recurrent, attention and other Keras layers against values TensorFlow 2.21 (Keras 3)
gives for the same inputs and weights: custom RNN cells, stacked and bidirectional cells,
MultiHeadAttention's masks, attention axes, gate and sliding window, masked and multi-axis
Softmax, the normalizations, channels-first and 1-D depthwise/separable convolutions, and
the resizing layers; plus the structures, configs and masks Keras 3 gives."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import layers_extra as LX

L = gt.keras.layers


def arr(shape, k=0.0, scale=0.5):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.37 + k) * scale).reshape(shape).astype("float32")


def setw(layer, k=1.0):
    layer.set_weights([arr(w.shape, k + i) for i, w in enumerate(layer.get_weights())])


def _leaves(out):
    todo, leaves = [out], []
    while todo:
        o = todo.pop(0)
        if isinstance(o, (list, tuple)):
            todo = list(o) + todo
        else:
            leaves.append(o)
    return leaves


def loss_grads(fn, inputs, weights, k=3.0):
    """``fn``'s output and the gradients of ``sum(out_i * arr_i)`` with respect to the
    inputs and ``weights``."""
    xs = [gt.constant(x) for x in inputs]
    with gt.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        out = fn(*xs)
        loss = 0.0
        for i, o in enumerate(_leaves(out)):
            loss = loss + gt.reduce_sum(o * arr(tuple(o.shape), k + i))
    return out, [g.numpy() for g in tape.gradient(loss, xs + list(weights))]


def fingerprint(g):
    """Two numbers that change with any entry of ``g``: its sum and a weighted sum."""
    g = np.asarray(g, np.float64)
    w = np.sin(np.arange(g.size) * 0.37 + 0.5).reshape(g.shape) * 0.5
    return [g.sum(), (g * w).sum()]


def close(got, want, rtol=2e-4, atol=2e-5):
    """Each of the tensors ``got`` against each of the arrays ``want``."""
    assert len(got) == len(want)
    for a, b in zip(got, want):
        a = np.asarray(a.numpy() if hasattr(a, "numpy") else a, np.float64)
        b = np.asarray(b, np.float64)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def close_grads(grads, want, rtol=5e-4, atol=5e-5):
    assert len(grads) == len(want)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(fingerprint(g), w, rtol=rtol, atol=atol)


# values TensorFlow gives (inputs and weights from arr(); gradients as fingerprints)
TF = {
    'custom_out': [[[[0.2014463, 0.261079], [-0.1763701, -0.2781454], [-0.1248453, -0.1986213]],
        [[0.01287354, 0.07282592], [0.2268989, 0.3373934], [-0.09762488, -0.1527659]]],
        [[0.2395875, 0.2171668, 0.1656173], [0.1768891, 0.1649182, 0.1308262]], [[0.4257277,
        0.2822093, 0.103421], [-0.4011086, -0.307623, -0.172237]]],
    'custom_grads': [[-1.572808, -0.7996833], [-3.250393, -0.8481866], [-0.2236656, -0.04485226],
        [-0.5178373, -0.2181647]],
    'stack_out': [[[-0.2223547, -0.2807543], [-0.251653, -0.2969348]], [[-0.1183643, -0.03824793,
        0.05347201], [-0.01602735, 0.06236128, 0.1321704]], [[0.07567634, 0.07824314], [0.01552218,
        0.04764174]], [[0.07295097, 0.1189358], [-0.004890746, 0.1117294]], [[-0.2223547,
        -0.2807543], [-0.251653, -0.2969348]]],
    'stack_lens': [[1, 2, 1]],
    'stack_grads': [[0.03170236, 0.02417996], [-0.6269326, 0.01393122], [-0.1459207, 0.008848257],
        [-2.872402, -0.1499139], [0.4588711, 0.1821591], [0.001116359, 0.003814167], [0.0862805,
        0.03417374], [0.1042122, 0.04068088], [-0.4445393, -0.1665744], [0.933976, 0.2541929]],
    'bi_cell_out': [[[0.1482161, 0.1846441, 0.2076189], [0.225451, 0.2201933, 0.2011418],
        [0.1311582, 0.1117575, 0.07919975]], [[0.285506, 0.289216, 0.2485392], [0.1862445,
        0.2358992, 0.2532205], [0.09959246, 0.126734, 0.1492717]]],
    'bi_cell_grads': [[-0.02465807, 0.03948555], [0.303137, -0.08406158], [0.6251546, 0.1649669],
        [-0.08633748, -0.02262212], [0.1408826, -0.1671775], [0.6671609, 0.2055124], [-0.1149393,
        -0.0227899]],
    'masked_lstm': [[[[0, 0], [0.1121321, 0.09710772], [0.1704051, 0.1308099], [0.2112332,
        0.133167]], [[0, 0], [0, 0], [0, 0], [0.1222449, 0.09704298]]], [[0.2112332, 0.133167],
        [0.1222449, 0.09704298]], [[0.4513112, 0.3085069], [0.2257357, 0.1928439]]],
    'mha_plain': [[[0.06611133, 0.1724073, 0.2553688, 0.3037673], [0.108835, 0.2176398, 0.2969881,
        0.3361404], [0.1210554, 0.2229519, 0.2946729, 0.3265112]]],
    'mha_scores': [[[[0.06611133, 0.1724073, 0.2553688, 0.3037673], [0.2100835, 0.35994, 0.4610803,
        0.4998155], [0.1210554, 0.2229519, 0.2946729, 0.3265112]]], [[[[0.4854896, 0.5145104, 0,
        0], [0, 0, 0, 0], [0.3506115, 0, 0.3340728, 0.3153157]], [[0.4735828, 0.5264173, 0, 0], [0,
        0, 0, 0], [0.3134305, 0, 0.3603412, 0.3262284]]]]],
    'mha_dropout_inference': [[[0.06611133, 0.1724073, 0.2553688, 0.3037673], [0.2100835, 0.35994,
        0.4610803, 0.4998155], [0.1210554, 0.2229519, 0.2946729, 0.3265112]]],
    'mha_ax2': [[[[[0.1077723, -0.0355359, -0.1740345, -0.2889783], [0.1081195, -0.03498562,
        -0.1733555, -0.2882626], [0.1095243, -0.03400899, -0.1729394, -0.2884632]], [[0.1837272,
        0.02716234, -0.1330789, -0.2753084], [0.1814186, 0.0252201, -0.1343919, -0.2758145],
        [0.1785454, 0.02374235, -0.1342741, -0.2741171]]]], [[[[[0.3317334, 0.3340393, 0.3342273],
        [0.3488804, 0.3176297, 0.33349], [0.3523484, 0.3147565, 0.3328952]], [[0.3047513,
        0.3495886, 0.34566], [0.3058285, 0.3484567, 0.3457147], [0.3189083, 0.3409215,
        0.3401703]]], [[[0.3367121, 0.334672, 0.3286159], [0.330225, 0.3310705, 0.3387046],
        [0.3474799, 0.3394002, 0.31312]], [[0.3279248, 0.3256985, 0.3463768], [0.3218973, 0.317965,
        0.3601376], [0.3210351, 0.3157992, 0.3631658]]]]]],
    'mha_ax12': [[[[[0.1428711, -0.006342232, -0.1546971, -0.2821145], [0.1420473, -0.006331444,
        -0.1538533, -0.2805517], [0.1446801, -0.004361048, -0.152812, -0.2805805]], [[0.1459838,
        -0.004012808, -0.1534663, -0.2821487], [0.1435819, -0.005923808, -0.1546278, -0.2824035],
        [0.1418509, -0.006612882, -0.1541817, -0.2808827]]]], [[[[[[0.1661302, 0.167285,
        0.1673791], [0.1662407, 0.1659416, 0.1670235]], [[0.1701871, 0.1549427, 0.1626795],
        [0.180271, 0.1749245, 0.1569953]], [[0.1710158, 0.1527702, 0.1615741], [0.1827182,
        0.1766585, 0.1552631]]], [[[0.1672058, 0.1646353, 0.1661551], [0.1690308, 0.1680066,
        0.1649664]], [[0.165544, 0.1690801, 0.1679666], [0.1642569, 0.1646775, 0.1684748]],
        [[0.1692364, 0.1578659, 0.1638766], [0.1768746, 0.1727619, 0.1593847]]]], [[[[0.1573108,
        0.1804556, 0.1784276], [0.1552245, 0.1530724, 0.1755089]], [[0.1576118, 0.1795806,
        0.1781675], [0.1561476, 0.1536656, 0.1748268]], [[0.1619491, 0.1731279, 0.1727465],
        [0.1615277, 0.159925, 0.1707236]]], [[[0.1624423, 0.1728258, 0.172037], [0.1615669,
        0.16047, 0.1706581]], [[0.1581921, 0.1792253, 0.1773181], [0.1562054, 0.1542972,
        0.174762]], [[0.1569252, 0.1806917, 0.1789939], [0.1551849, 0.1526539, 0.1755504]]]]]]],
    'mha_gate_window': [[[[0.006884284, 0.1454475, 0.264325, 0.3474274], [0.01723091, 0.1719757,
        0.3034444, 0.3938433], [0.04891925, 0.2095504, 0.3418199, 0.4278256], [0.0596035,
        0.2068459, 0.3260927, 0.4012043], [0.03283734, 0.1649029, 0.2746497, 0.3472239]]],
        [0.01581317, 0.01578572], [-0.01357149, -0.001211283], [0.000157216, -3.822855e-05],
        [0.001896936, -0.0008802089], [-1.909211e-08, -4.918238e-09], [-0.1756502, 0.0144177],
        [0.03306124, 0.002532846], [0.227885, -0.1074979], [-0.09286099, -0.01497125], [1.936376,
        -0.03034883], [-0.3308752, -0.19133]],
    'mha_gate_shapes': [[4, 2, 2], [2, 2], [4, 2, 2], [2, 2], [4, 2, 2], [2, 2], [4, 2, 2], [2, 2],
        [2, 2, 4], [4]],
    'softmax_mask': [[[[0.466984, 0, 0.533016], [0, 0, 0]], [[0.2995945, 0.338795, 0.3616105], [0,
        0.5312326, 0.4687675]]], [[[0.08767197, 0, -0.08767197], [0, 0, 0]], [[-0.04205708,
        -0.007765569, 0.04982264], [0, -0.03775932, 0.03775931]]]],
    'softmax_axes': [[[[0.1253959, 0.1298152, 0.143127], [0.1658567, 0.1980143, 0.2377909]],
        [[0.1500813, 0.1697187, 0.181148], [0.1808872, 0.1690196, 0.1491453]]], [[[0.05005445,
        0.02796196, 0.006719504], [-0.01382924, -0.03127597, -0.03963067]], [[-0.05697652,
        -0.04449665, -0.01838252], [0.01460035, 0.04390137, 0.06135396]]]],
    'norm_axis1': [[[-1.268286, -1.097556, -0.9136208, -0.7413772], [-0.8020685, -0.7602375,
        -0.7508572, -0.7751972], [-0.8866422, -0.9384953, -0.9986728, -1.05903]], [[-1.334193,
        -1.446065, -1.497564, -1.48172], [-1.200339, -1.132702, -1.047106, -0.9551334],
        [-0.9128224, -0.8673549, -0.8398404, -0.8340027]]],
    'gn_axis1': [[[[0.2187329, 0.3982214, 0.5915909, 0.7726696], [0.05486369, 0.6571686, 0.7922311,
        0.4417708], [1.004155, 0.6388308, 0.2148587, -0.2103788]], [[0.8070975, 0.4770743,
        0.3251517, 0.3718916], [0.0373466, 0.2980738, 0.6280366, 0.9825762], [-0.2799165,
        0.3578639, 0.7438158, 0.8257023]]], [-1.788139e-07, -0.4029866], [-2.269738, -0.8445088],
        [-2.162203, -1.107876]],
    'dw_cf': [[[[[-0.2710729, -0.2173009, -0.2220731, -0.2162719, 0.05076215], [-0.3189794,
        -0.1167583, -0.09009279, -0.07071681, -0.01072586], [-0.01484336, -0.0756695, -0.09759896,
        -0.1258021, -0.2978805], [0.01350343, -0.1241708, -0.1285369, -0.1349892, -0.3470796]],
        [[-0.3661011, -0.4219287, -0.4309482, -0.423241, -0.139613], [-0.4989838, -0.3010777,
        -0.2751026, -0.2534936, -0.1477112], [-0.2297624, -0.2389145, -0.2530068, -0.274456,
        -0.4080718], [-0.1452668, -0.2318421, -0.2427053, -0.2623196, -0.5556216]], [[-0.6283712,
        -0.5442213, -0.5002932, -0.4467393, -0.1479559], [-0.5415023, -0.3844599, -0.3733691,
        -0.3698311, -0.3463259], [-0.2559369, -0.4039694, -0.4251082, -0.446797, -0.5890613],
        [-0.2593184, -0.3952262, -0.4402357, -0.4837479, -0.6310686]], [[-0.678339, -0.6154957,
        -0.5696829, -0.5134774, -0.2412272], [-0.6414948, -0.4778907, -0.462119, -0.450513,
        -0.3554103], [-0.3630583, -0.4524075, -0.4649902, -0.48135, -0.6235561], [-0.2629167,
        -0.4484207, -0.5040083, -0.558092, -0.7340631]], [[-0.7715865, -0.455677, -0.4062611,
        -0.3681667, -0.3046472], [-0.5402259, -0.4545364, -0.443956, -0.4395951, -0.4474015],
        [-0.3234211, -0.465169, -0.482715, -0.5012348, -0.667283], [-0.3191613, -0.6059291,
        -0.6382612, -0.6505146, -0.5266846]], [[-0.6916502, -0.3962554, -0.3577364, -0.3277277,
        -0.2434725], [-0.5323717, -0.402958, -0.3824455, -0.3670992, -0.3149156], [-0.2725848,
        -0.3677775, -0.3834735, -0.4041964, -0.599182], [-0.1960423, -0.5257873, -0.5560862,
        -0.5680498, -0.5138218]]]], [-0.1391555, -0.2734988], [-10.86115, 0.1516913], [0.06620324,
        0.1559133]],
    'mp1_cf': [[[-0.0975555, 0.2586228], [0.4795251, 0.4982857], [0.3400736, 0.003981592]],
        [[-0.334193, -0.4817196], [-0.2654049, 0.08973323], [0.3979353, 0.4979922]]],
    'ap1_cf': [[[-0.09315427, 0.172501], [0.4578912, 0.4739456], [0.1761898, -0.08655412]],
        [[-0.4259404, -0.4896416], [-0.2534312, -0.002239082], [0.3799824, 0.4892356]]],
    'dw1d': [[[[-0.4786328, -0.3057675, -0.1803055, 0.009720512, 0.06643179, 0.2234386],
        [-0.4042091, -0.3761345, -0.3093959, -0.2148243, -0.0954555, 0.02720436], [-0.2286944,
        -0.2132861, -0.01794482, 0.04581127, 0.2535604, 0.268094], [-0.09672862, 0.09267806,
        0.3330218, 0.4809716, 0.5964063, 0.6077429], [-0.1434894, 0.08451302, 0.209975, 0.4023154,
        0.4590267, 0.5652121]]], [-0.6482685, 0.2027037], [1.490765, 0.04325198], [-1.586718,
        -0.6359504]],
    'sep1d': [[[[0.248701, 0.3312959], [0.6620772, 0.7213469]]], [-0.1580247, 0.1536543],
        [0.08143843, 0.04497153], [-0.4795953, -0.1486008], [-0.7363091, -0.2513191]],
    'sep1d_shapes': [[2, 3, 2], [1, 6, 2], [2]],
    'resize_crop': [[[[-0.008424804, 0.1414047], [0.368433, 0.4108583], [0.3338813, 0.2234783],
        [-0.07436059, -0.2161772]], [[-0.4526924, -0.4738973], [-0.3251916, -0.1780577],
        [0.1594834, 0.3104289], [0.4722252, 0.4582941]], [[0.230704, 0.09128658], [-0.2087586,
        -0.3234291], [-0.4121902, -0.375904], [-0.1575096, -0.008852601]]]],
    'resize_pad': [[[[0.2849177], [0.4699669], [0.2884046]], [[0.2682719], [0.2938345],
        [0.2463396]], [[0.1993734], [-0.1384545], [0.1711419]]]],
    'resize_bicubic': [[[[-0.09783679, 0.07222138], [0.4758299, 0.4484631], [-0.07230812,
        -0.2325806]], [[-0.07875403, -0.2382045], [-0.4461319, -0.3559094], [0.2382797,
        0.3654688]]]],
    'ccrop_up': [[[[0.3886756, 0.476113], [0.4659802, 0.4610233], [0.4237952, 0.3248971],
        [0.2486073, 0.08680601], [0.01557177, -0.166202]], [[0.01799136, 0.1777575], [0.224823,
        0.3380499], [0.3792209, 0.4148641], [0.4146051, 0.3614783], [0.3437378, 0.2179706]],
        [[-0.3262322, -0.2039257], [-0.1356828, 0.01106176], [0.09621546, 0.2297719], [0.2979177,
        0.3763709], [0.4180096, 0.4230992]], [[-0.4200047, -0.4215055], [-0.3821717, -0.309067],
        [-0.2432246, -0.1123377], [-0.02794448, 0.1196474], [0.187999, 0.3143495]], [[-0.2015211,
        -0.3315763], [-0.3521843, -0.4113414], [-0.4153765, -0.3859823], [-0.3482078, -0.2394874],
        [-0.1946958, -0.03660228]], [[0.1857873, 0.005352146], [-0.067329, -0.231615], [-0.3106256,
        -0.4152994], [-0.4564362, -0.4686473], [-0.482085, -0.4014956]]]],
    'resize_uint8': [[[[15], [80], [144], [209]], [[20], [85], [149], [214]], [[25], [90], [154],
        [219]]]],
    'up2_bicubic': [[[[0.4713314], [0.440805], [0.3762214], [0.2915635], [0.1979544], [0.1537334]],
        [[0.3315103], [0.296879], [0.223598], [0.1367818], [0.04783676], [0.005814904]],
        [[0.0542549], [0.01148376], [-0.07904346], [-0.1701397], [-0.2498362], [-0.2874971]],
        [[-0.08556615], [-0.1324423], [-0.2316668], [-0.3249215], [-0.3999538], [-0.4354156]]]],
}



# --- recurrent layers ------------------------------------------------------------------------

class PairCell(L.Layer):
    """A custom cell with two states and an output size of its own (Keras' cell API)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [units, units]
        self.output_size = 2

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones",
                                      name="kernel")
        self.rk = self.add_weight(shape=(self.units, self.units), initializer="ones", name="rk")
        self.ok = self.add_weight(shape=(self.units, 2), initializer="ones", name="ok")

    def call(self, inputs, states):
        h, c = states
        h2 = gt.tanh(gt.matmul(inputs, self.kernel) + gt.matmul(h, self.rk))
        return gt.matmul(h2, self.ok), [h2, c + h2]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


X = arr((2, 3, 4))


def test_rnn_runs_a_custom_cell():
    """TensorFlow runs any cell with call(inputs, states) and state_size; the outputs, final
    states and gradients as TensorFlow gives them."""
    rnn = L.RNN(PairCell(3), return_sequences=True, return_state=True)
    rnn(X)
    setw(rnn)
    out, grads = loss_grads(rnn, [X], rnn.trainable_weights)
    assert isinstance(out, tuple) and len(out) == 3
    close(out, TF["custom_out"])
    close_grads(grads, TF["custom_grads"])
    assert rnn.compute_output_shape((None, 3, 4)) == ((None, 3, 2), (None, 3), (None, 3))
    assert rnn.state_size == [3, 3]


def test_stacked_cells_mix_built_in_and_custom_cells():
    """TensorFlow: RNN([GRUCell, custom cell, SimpleRNNCell], return_state=True) returns the
    output then a list of states per cell."""
    stack = L.RNN([L.GRUCell(3), PairCell(2), L.SimpleRNNCell(2)], return_state=True)
    stack(X)
    setw(stack, 2.0)
    out, grads = loss_grads(stack, [X], stack.trainable_weights)
    assert [len(o) for o in out[1:]] == TF["stack_lens"][0]
    close([out[0], out[1][0], out[2][0], out[2][1], out[3][0]], TF["stack_out"])
    close_grads(grads, TF["stack_grads"])


def test_bidirectional_of_an_rnn_made_from_a_cell():
    """TensorFlow copies RNN(SimpleRNNCell) for the backward direction from its config."""
    bi = L.Bidirectional(L.RNN(L.SimpleRNNCell(3), return_sequences=True), merge_mode="ave")
    bi(X)
    setw(bi, 3.0)
    out, grads = loss_grads(bi, [X], bi.trainable_weights)
    close([out], [TF["bi_cell_out"]])
    close_grads(grads, TF["bi_cell_grads"])
    assert bi.forward_layer.name.startswith("forward_") and \
        bi.backward_layer.name.startswith("backward_")


def test_bidirectional_of_a_custom_cell_runs_the_copy_backwards():
    bi = L.Bidirectional(L.RNN(PairCell(3), return_sequences=True), merge_mode=None)
    fwd, bwd = bi(X)
    assert bi.backward_layer.go_backwards and bi.backward_layer.cell is not bi.forward_layer.cell
    bi.backward_layer.set_weights(bi.forward_layer.get_weights())
    fwd, bwd = bi(X)
    again = L.RNN(bi.forward_layer.cell, return_sequences=True)(X[:, ::-1])
    np.testing.assert_allclose(bwd.numpy(), again.numpy()[:, ::-1], rtol=1e-5, atol=1e-6)


class ImageCell(L.Layer):
    """A custom cell stepping over [batch, 2, 5] images (Keras runs such cells on inputs of
    rank above 3)."""

    state_size = 4

    def build(self, shape):
        self.k = self.add_weight(shape=(shape[-1] * shape[-2], 4), initializer="ones",
                                 name="k")

    def call(self, x, states):
        flat = gt.reshape(x, (-1, x.shape[1] * x.shape[2]))
        h = gt.tanh(gt.matmul(flat, self.k) * 0.1 + states[0])
        return h, [h]


def test_custom_cell_over_image_steps_with_a_mask():
    """TensorFlow: masked steps keep the state and repeat the last output."""
    x = (np.sin(np.arange(2 * 3 * 2 * 5)) * 0.5).reshape(2, 3, 2, 5).astype("float32")
    mask = np.array([[1, 1, 0], [1, 0, 1]], bool)
    out = L.RNN(ImageCell(), return_sequences=True)(x, mask=mask).numpy()
    want = np.array([[0.09745, 0.00395, 0.00395], [-0.00575, -0.00575, 0.08286]])
    np.testing.assert_allclose(out, np.repeat(want[..., None], 4, -1), atol=1e-5)


def test_masked_lstm_backwards_with_states():
    """TensorFlow: an LSTM over an Embedding(mask_zero=True), go_backwards, return_state."""
    ids = np.array([[1, 2, 3, 0], [4, 0, 0, 0]], "int32")
    emb = L.Embedding(5, 3, mask_zero=True)
    lstm = L.LSTM(2, return_sequences=True, return_state=True, go_backwards=True)
    lstm(emb(ids))
    setw(emb, 4.0)
    setw(lstm, 5.0)
    out = lstm(emb(ids))
    close(out, TF["masked_lstm"])
    np.testing.assert_array_equal(out[0]._keras_mask.numpy(), ids != 0)
    assert out[1]._keras_mask is None


def test_return_state_and_merge_mode_none_give_tuples():
    """Keras 3 returns tuples: (output, *states), and (forward, backward) from Bidirectional
    with merge_mode=None."""
    assert type(L.LSTM(2, return_state=True)(X)) is tuple
    assert type(L.RNN([L.LSTMCell(2)], return_state=True)(X)) is tuple
    out = L.Bidirectional(L.GRU(2, return_state=True), merge_mode=None)(X)
    assert type(out) is tuple and len(out) == 4
    assert type(L.Bidirectional(L.GRU(2), merge_mode=None)(X)) is tuple
    inp = gt.keras.Input((3, 4))
    out, h, c = L.LSTM(2, return_state=True)(inp)
    assert tuple(h.shape) == (None, 2)


def test_bidirectional_copies_the_layer_as_keras_3():
    lstm = L.LSTM(2, name="enc")
    bi = L.Bidirectional(lstm)
    assert bi.forward_layer is not lstm
    assert (bi.forward_layer.name, bi.backward_layer.name) == ("forward_enc", "backward_enc")
    again = L.Bidirectional.from_config(bi.get_config())
    assert (again.forward_layer.name, again.backward_layer.name) == ("forward_enc",
                                                                       "backward_enc")
    with pytest.raises(ValueError, match="same return_sequences"):
        L.Bidirectional(L.LSTM(2), backward_layer=L.LSTM(2, return_sequences=True,
                                                          go_backwards=True))


def test_cells_initial_states_and_direct_calls_as_keras_3():
    states = L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)]).get_initial_state(batch_size=2)
    assert [len(s) for s in states] == [2, 1] and tuple(states[1][0].shape) == (2, 2)
    assert len(L.LSTM(3).get_initial_state(4)) == 2
    cell = L.GRUCell(2)
    h = gt.zeros((1, 2))
    out, new = cell(gt.ones((1, 3)), h)                  # a bare state in, a bare state out
    assert isinstance(new, gt.Tensor) and tuple(new.shape) == (1, 2)
    stack = L.StackedRNNCells([L.SimpleRNNCell(2), L.LSTMCell(2)])
    out, new = stack(gt.ones((1, 3)), [gt.zeros((1, 2)), [gt.zeros((1, 2))] * 2])
    assert isinstance(new[0], gt.Tensor) and len(new[1]) == 2


def test_recurrent_configs_have_keras_3_keys():
    cfg = L.LSTM(3, seed=2, unroll=True).get_config()
    for key in ("kernel_initializer", "recurrent_initializer", "bias_initializer", "unroll",
                "zero_output_for_mask", "seed"):
        assert key in cfg, key
    assert cfg["seed"] == 2 and cfg["unroll"] is True
    assert "seed" not in L.SimpleRNN(2).get_config()
    assert L.RNN(L.GRUCell(2)).get_config()["zero_output_for_mask"] is False
    assert L.LSTM.from_config(cfg).get_config() == {**cfg, "name": cfg["name"]}
    L.LSTM(2, use_cudnn=False)                            # accepted, as Keras


def test_recurrent_dropout_draws_a_mask_per_gate():
    """Keras 3's LSTM/GRU cells draw one dropout mask per gate when recurrent_dropout is
    set (one shared mask otherwise): with every gate reading the same input, the outputs
    then take more than the two values a shared mask allows."""
    x = np.ones((400, 1, 1), np.float32)
    for kwargs, many in ((dict(dropout=0.5), False),
                         (dict(dropout=0.5, recurrent_dropout=0.5), True)):
        lstm = L.LSTM(1, seed=3, **kwargs)
        lstm(x)
        lstm.set_weights([np.ones((1, 4), np.float32), np.zeros((1, 4), np.float32),
                          np.zeros(4, np.float32)])
        values = np.unique(np.round(lstm(x, training=True).numpy(), 5))
        assert (len(values) > 2) == many, values


# --- attention ---------------------------------------------------------------------------------

Q = arr((1, 3, 4), 1.0)
V = arr((1, 4, 4), 2.0)
AM = np.array([[[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 1]]], bool)


def test_mha_fully_masked_query_as_keras_3():
    """TensorFlow: a query that may attend nowhere gets the mean of the values on the fused
    path, but zero probabilities (and output bias only) when the scores are returned or the
    layer has dropout."""
    mha = L.MultiHeadAttention(2, 2)
    mha(Q, V)
    setw(mha, 6.0)
    close([mha(Q, V, attention_mask=AM)], [TF["mha_plain"]])
    close(mha(Q, V, attention_mask=AM, return_attention_scores=True), TF["mha_scores"])
    drop = L.MultiHeadAttention(2, 2, dropout=0.2)
    drop(Q, V)
    setw(drop, 6.0)
    close([drop(Q, V, attention_mask=AM)], [TF["mha_dropout_inference"]])


@pytest.mark.parametrize("tag,axes", [("ax2", (2,)), ("ax12", (1, 2))])
def test_mha_attention_axes_over_4d_inputs(tag, axes):
    """TensorFlow: attention over axis 2, and over axes 1 and 2 at once (one softmax over
    both), of [batch, a, b, features] inputs."""
    q = arr((1, 2, 3, 4), 7.0)
    mha = L.MultiHeadAttention(2, 2, attention_axes=axes)
    mha(q, q)
    setw(mha, 8.0)
    close(mha(q, q, return_attention_scores=True), TF["mha_" + tag])
    assert mha.get_config()["attention_axes"] == axes


def test_mha_gate_and_sliding_window():
    """TensorFlow: use_gate adds a sigmoid gate (weights after the key's), sliding_window
    bands the attention, and-ed with the causal mask."""
    mha = L.MultiHeadAttention(2, 2, use_gate=True, sliding_window=2)
    q = arr((1, 5, 4), 9.0)
    mha(q, q)
    setw(mha, 10.0)
    assert [list(w.shape) for w in mha.get_weights()] == TF["mha_gate_shapes"]
    assert [w.name.split("/")[1] for w in mha.weights[4:6]] == ["gate", "gate"]
    out, grads = loss_grads(lambda t: mha(t, t, use_causal_mask=True), [q],
                            mha.trainable_weights)
    close([out], [TF["mha_gate_window"][0]])
    close_grads(grads, TF["mha_gate_window"][1:])


def test_mha_shapes_and_config_as_keras_3():
    mha = L.MultiHeadAttention(2, 3, output_shape=7)
    assert mha.compute_output_shape((None, 4, 6), (None, 5, 6)) == (None, 4, 7)
    assert L.MultiHeadAttention(2, 3).compute_output_shape((None, 4, 6), (None, 5, 6)) == \
        (None, 4, 6)
    cfg = mha.get_config()
    assert cfg["output_shape"] == (7,) and cfg["attention_axes"] is None
    for key in ("use_gate", "sliding_window", "kernel_regularizer", "bias_constraint",
                "activity_regularizer"):
        assert key in cfg, key
    reg = L.MultiHeadAttention(2, 2, kernel_regularizer="l2")
    reg(Q, V)
    assert len(reg.losses) == 4                    # the query, key, value and output kernels
    with pytest.raises(ValueError, match="sliding_window"):
        L.MultiHeadAttention(2, 2, sliding_window=0)


def test_softmax_layer_mask_and_axes():
    """TensorFlow: Softmax(mask=...) gives masked positions 0 (a row masked everywhere all
    zeros); Softmax(axis=(1, 2)) normalizes over both axes."""
    s = arr((2, 2, 3), 11.0)
    mask = np.array([[[1, 0, 1], [0, 0, 0]], [[1, 1, 1], [0, 1, 1]]], bool)
    out, grads = loss_grads(lambda t: L.Softmax()(t, mask=mask), [s], [])
    close([out] + grads, TF["softmax_mask"])
    out, grads = loss_grads(lambda t: L.Softmax(axis=(1, 2))(t), [s], [])
    close([out] + grads, TF["softmax_axes"])
    ids = np.array([[1, 0]], "int32")
    e = L.Embedding(3, 2, mask_zero=True)(ids)
    assert L.Softmax(axis=[1])(e, mask=gt.constant(np.ones((1, 2, 1), bool)))._keras_mask \
        is not None
    with pytest.raises(ValueError, match="does not broadcast"):
        L.Softmax()(np.zeros((2, 3, 4), np.float32), mask=np.ones((2, 3), bool))


# --- normalization -------------------------------------------------------------------------

N3 = arr((2, 3, 4), 12.0)


def test_normalization_with_given_statistics_as_keras_3():
    """TensorFlow: given mean and variance line up with the kept axes from the right (here
    axis 1 of [batch, 3, 4] inputs), are constants (no weights), and are in the config."""
    norm = L.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 9.0], axis=1)
    close([norm(N3)], [TF["norm_axis1"]])
    assert norm.get_weights() == [] and norm.weights == []
    cfg = norm.get_config()
    assert cfg["mean"] == [1.0, 2.0, 3.0] and cfg["variance"] == [1.0, 4.0, 9.0]
    assert L.Normalization().get_config()["mean"] is None
    with pytest.raises(ValueError, match="made with mean and variance"):
        norm.adapt(N3)
    ids = np.array([[1, 2, 0]], "int32")
    e = L.Embedding(3, 4, mask_zero=True)(ids)
    for layer in (L.Normalization(mean=0.0, variance=1.0), L.GroupNormalization(2)):
        np.testing.assert_array_equal(layer(e)._keras_mask.numpy(), ids != 0)


def test_group_normalization_over_axis_1():
    """TensorFlow: GroupNormalization(groups=3, axis=1) on [batch, 3, 4] inputs."""
    gn = L.GroupNormalization(groups=3, axis=1)
    gn(N3)
    setw(gn, 13.0)
    out, grads = loss_grads(gn, [N3], gn.trainable_weights)
    close([out], [TF["gn_axis1"][0]])
    close_grads(grads, TF["gn_axis1"][1:])
    assert gn.get_config()["axis"] == 1


# --- convolutions, pooling, dropout --------------------------------------------------------

def test_depthwise_channels_first_and_pooling_1d_channels_first():
    """TensorFlow: DepthwiseConv2D and the 1-D poolings with data_format='channels_first'."""
    x = arr((1, 3, 4, 5), 14.0)
    dw = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", data_format="channels_first")
    dw(x)
    setw(dw, 15.0)
    out, grads = loss_grads(dw, [x], dw.trainable_weights)
    close([out], [TF["dw_cf"][0]])
    close_grads(grads, TF["dw_cf"][1:])
    close([L.MaxPooling1D(2, data_format="channels_first")(N3)], [TF["mp1_cf"]])
    close([L.AveragePooling1D(3, strides=2, padding="same", data_format="channels_first")(N3)],
          [TF["ap1_cf"]])
    assert dw.get_config()["data_format"] == "channels_first"


def test_transposed_convolutions_channels_first():
    """channels_first gives the channels_last result with the axes moved (TensorFlow's CPU
    kernel refuses NCHW here)."""
    x = arr((2, 5, 6, 4), 1.0)
    for make, first, perm in (
            (lambda f: L.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1,
                                         data_format=f), np.transpose(x, (0, 3, 1, 2)),
             (0, 3, 1, 2)),
            (lambda f: L.Conv1DTranspose(3, 3, strides=2, data_format=f),
             np.transpose(x[:, 0], (0, 2, 1)), (0, 2, 1))):
        cl, cf = make("channels_last"), make("channels_first")
        last = x if len(perm) == 4 else x[:, 0]
        cl(last)
        cf(first)
        cf.set_weights(cl.get_weights())
        want = np.transpose(cl(last).numpy(), perm)
        np.testing.assert_allclose(cf(first).numpy(), want, rtol=1e-5, atol=1e-6)
        assert cf.get_config()["data_format"] == "channels_first"
        assert "dilation_rate" in cf.get_config()


def test_depthwise_and_separable_1d():
    """TensorFlow: DepthwiseConv1D (dilated, 'same') and SeparableConv1D (strided), their
    weights' shapes, outputs and gradients."""
    x = arr((1, 5, 3), 16.0)
    d1 = LX.DepthwiseConv1D(3, depth_multiplier=2, padding="same", dilation_rate=2)
    d1(x)
    setw(d1, 17.0)
    out, grads = loss_grads(d1, [x], d1.trainable_weights)
    close([out], [TF["dw1d"][0]])
    close_grads(grads, TF["dw1d"][1:])
    s1 = LX.SeparableConv1D(2, 2, strides=2, depth_multiplier=2)
    s1(x)
    setw(s1, 18.0)
    assert [list(w.shape) for w in s1.get_weights()] == TF["sep1d_shapes"]
    out, grads = loss_grads(s1, [x], s1.trainable_weights)
    close([out], [TF["sep1d"][0]])
    close_grads(grads, TF["sep1d"][1:])
    cfg = d1.get_config()
    assert cfg["kernel_size"] == (3,) and cfg["dilation_rate"] == (2,)


def test_spatial_dropout_channels_first_and_configs():
    drop = L.SpatialDropout2D(0.5, data_format="channels_first", seed=1)
    y = drop(np.ones((4, 3, 5, 5), np.float32), training=True).numpy()
    assert np.all(y == y[:, :, :1, :1]) and 0 < (y == 0).mean() < 1
    np.testing.assert_array_equal(drop(np.ones((1, 3, 2, 2), np.float32)).numpy(), 1.0)
    y3 = LX.SpatialDropout3D(0.5, seed=2)(np.ones((4, 2, 2, 2, 3), np.float32), training=True)
    assert np.all(y3.numpy() == y3.numpy()[:, :1, :1, :1, :])
    assert sorted(L.SpatialDropout1D(0.2).get_config()) == ["dtype", "name", "rate", "seed"]
    assert L.SpatialDropout2D(0.2).get_config()["data_format"] == "channels_last"
    assert "noise_shape" not in L.AlphaDropout(0.1).get_config()


# --- resizing --------------------------------------------------------------------------------

IM = arr((1, 5, 7, 2), 19.0)


def test_resizing_crop_pad_and_interpolation():
    """TensorFlow: crop_to_aspect_ratio crops int(7 * 3 / 4) = 5 columns (truncated),
    pad_to_aspect_ratio pads both sides with fill_value, bicubic resizing, CenterCrop of an
    image smaller than the crop, UpSampling2D(interpolation="bicubic")."""
    close([L.Resizing(3, 4, crop_to_aspect_ratio=True)(IM)], [TF["resize_crop"]])
    close([L.Resizing(3, 3, pad_to_aspect_ratio=True, fill_value=0.25)(arr((1, 4, 2, 1), 20.0))],
          [TF["resize_pad"]])
    close([L.Resizing(2, 3, interpolation="bicubic")(IM)], [TF["resize_bicubic"]])
    close([L.CenterCrop(6, 5)(IM)], [TF["ccrop_up"]])
    close([L.UpSampling2D(2, interpolation="bicubic")(arr((1, 2, 3, 1), 21.0))],
          [TF["up2_bicubic"]])
    cfg = L.Resizing(3, 4).get_config()
    for key in ("pad_to_aspect_ratio", "fill_mode", "fill_value", "antialias", "data_format"):
        assert key in cfg, key


def test_resizing_keeps_integer_images_and_channels_first():
    """TensorFlow: uint8 images come back uint8, rounded."""
    u8 = ((np.arange(5 * 7) * 37) % 256).reshape(1, 5, 7, 1).astype("uint8")
    out = L.Resizing(3, 4)(u8)
    assert out.dtype == gt.uint8
    np.testing.assert_array_equal(out.numpy(), TF["resize_uint8"])
    cf = L.Resizing(3, 4, data_format="channels_first")(np.transpose(IM, (0, 3, 1, 2)))
    np.testing.assert_allclose(cf.numpy(), np.transpose(L.Resizing(3, 4)(IM).numpy(),
                                                        (0, 3, 1, 2)), rtol=1e-6)
    cc = L.CenterCrop(3, 2, data_format="channels_first")(np.transpose(IM, (0, 3, 1, 2)))
    np.testing.assert_array_equal(cc.numpy(), np.transpose(IM[:, 1:4, 2:4], (0, 3, 1, 2)))


# --- small layers --------------------------------------------------------------------------

def test_leaky_relu_dot_and_lambda_as_keras_3():
    cfg = L.LeakyReLU(0.2).get_config()
    assert cfg["negative_slope"] == 0.2 and "alpha" not in cfg
    assert L.LeakyReLU(alpha=0.1).negative_slope == 0.1
    assert L.Dot(axes=1).get_config()["axes"] == 1
    double = L.Lambda(lambda t, mask=None: t * (3.0 if mask is not None else 2.0),
                      output_shape=(5,))
    assert double.compute_output_shape((None, 3)) == (None, 5)
    ids = np.array([[1, 0]], "int32")
    e = L.Embedding(3, 2, mask_zero=True)(ids)
    np.testing.assert_allclose(double(e).numpy(), e.numpy() * 3.0, rtol=1e-6)
    assert double(e)._keras_mask is None                      # Keras 3: none by default
    keep = L.Lambda(lambda t: t, mask=lambda inputs, mask: mask)
    np.testing.assert_array_equal(keep(e)._keras_mask.numpy(), ids != 0)
    again = L.Lambda.from_config(double.get_config())
    assert again.function is double.function and again.get_config()["output_shape"] == (5,)
