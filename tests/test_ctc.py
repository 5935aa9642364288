"""CTC (gt.nn.ctc_loss, the decoders, the label utilities, the Keras ops and losses, the
legacy backend functions) against TensorFlow 2.21 / Keras 3.15: the reference numbers below
were computed with TF on the same inputs (the seeded generators below)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import ctc


def logits(seed, shape, scale=1.0):
    return (np.random.RandomState(seed).standard_normal(shape) * scale).astype(np.float32)


# name: (logits args, labels, label_length, logit_length, kwargs)
DENSE = {
    "basic": ((0, (6, 3, 5)), [[1, 2, 2, 4], [3, 1, 0, 0], [4, 4, 4, 0]], [4, 2, 3], [6, 4, 6],
              {}),
    "blank2_batch_major": ((1, (3, 6, 5)), [[1, 3, 4, 0], [0, 0, 1, 0], [4, 4, 3, 3]],
                           [3, 3, 4], [6, 5, 6], {"blank_index": 2, "logits_time_major": False}),
    "blank_last_padded": ((2, (5, 2, 4)), [[1, 2, -1], [0, -1, -1]], [2, 1], [5, 3],
                          {"blank_index": -1}),
    "edges": ((3, (5, 4, 4)), [[1, 2, 3], [2, 0, 0], [3, 3, 0], [1, 1, 1]], [3, 0, 2, 2],
              [2, 0, 7, 3], {}),
    "no_labels": ((4, (4, 2, 3)), np.zeros((2, 0), np.int32), [0, 0], [4, 2], {}),
}

# name: (logits args, dense labels, lengths (mask), logit_length, blank_index)
SPARSE = {
    "sp_blank0": ((5, (6, 3, 5)), [[1, 2, 3], [4, 4, 0], [2, 0, 0]], [3, 2, 1], [6, 5, 3], 0),
    "sp_blank_last": ((6, (6, 2, 5)), [[1, 2, 3], [0, 0, 2]], [3, 3], [6, 6], -1),
    "sp_blank2": ((7, (5, 2, 5)), [[1, 3, 4], [0, 1, 1]], [3, 3], [5, 5], 2),
    "sp_repeats_too_long": ((8, (4, 3, 4)), [[1, 1, 1], [2, 3, 0], [3, 0, 0]], [3, 2, 1],
                            [4, 2, 1], 0),
}

# beam search: (seed, T, B, C, scale, seq_len, beam_width, top_paths)
BEAM = [
    (10, 9, 3, 6, 1.0, [9, 6, 3], 2, 2),
    (11, 8, 2, 5, 1.0, [8, 5], 3, 3),
    (12, 12, 2, 7, 2.0, [12, 10], 5, 2),
    (13, 6, 3, 4, 0.5, [6, 0, 4], 100, 1),
    (14, 10, 2, 6, 3.0, [10, 9], 4, 4),
    (15, 15, 1, 8, 1.5, [15], 10, 5),
]


# TF 2.21's outputs for the cases above (gradients of sum(loss * linspace(0.5, 1.5)))
_REF = {'CTC': [[8.1281252, 11.903073, 18.185909],
                [-5.1676093, 37.638933, -0.010516225, -0.22162712, 0.02074573, 0.087672718,
                 0.049518909, 0.07420595]],
        'CTC_mean': 12.739037,
        'CTC_w': 16.81716,
        'basic': [[7.8281794, 5.164681, 10.007814],
                  [-0.0046834424, -0.35364723, 0.051445235, 0.18175739, 0.12512805, -0.031550568,
                   0.41498101, 0.13793562, -0.76331884, 0.24195282, -0.26261842, 0.62563235,
                   0.31278846, 0.16503611, -0.84083867, 0.073105648, 0.11578879, -0.29489142,
                   0.080836661, 0.0251603, -0.027789548, -0.52769428, 0.1633957, -0.2740477,
                   0.66613567, -0.4548071, 0.14162648, 0.11219642, 0.62654084, -0.42555648,
                   -0.18719155, 0.18795314, -0.10945923, 0.017765066, 0.090932548, 0.015298955,
                   -0.48847315, 0.35641646, 0.037602063, 0.079155751, -0.98236352, 0.043118604,
                   0.032385223, 1.2548206, -0.3479611, -0.099622741, 0.034719598, -0.057527959,
                   0.024196355, 0.098234698, -0.12262436, -0.37717324, 0.15957187, 0.081668422,
                   0.25855732, 0.042678997, 0.30932871, 0.39164633, 0.15347922, -0.89713311,
                   0.023917794, 0.1154087, -0.15725964, 0.029422229, -0.011489019, 0.0, 0.0, 0.0,
                   0.0, 0.0, -0.83389997, 0.2101099, 0.57711905, 0.053721972, -0.0070512816,
                   0.0095699728, 0.063941792, 0.085620143, 0.1118566, -0.27098855, 0.0, 0.0, 0.0,
                   0.0, 0.0, 0.51768613, 0.34932169, 0.089773417, 0.036835458, -0.99361664]],
        'batch_cost': [[7.8700023, 9.9361, 6.5655122],
                       [-4.6886209, 22.671241, 0.015471479, -0.1310437, 0.020745723, 0.087672696,
                        0.049518891, -0.042365089]],
        'beam': [[[[[0, 2, 3, 0, 4, 2, 1, 1, 2, 1, 4], [0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2], [3, 7]],
                   [[0, 2, 3, 4, 2, 1, 3, 2, 1, 4, 0], [0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 2], [3, 6]]],
                  [-6.1898222, -6.2071247, -5.1458197, -5.3263178, -2.8154182, -3.2107916],
                  [[0, 2, 3, 0, 4, 2, 1, 1, 2, 1, 4], [0, 2, 3, 4, 2, 1, 3, 2, 1, 4, 0]],
                  [-6.1898222, -6.2071247, -5.1458197, -5.3263178, -2.8154182, -3.2107916]],
                 [[[[0, 2, 3, 2, 3, 2, 1, 2], [0, 0, 0, 0, 1, 1, 1, 1], [2, 4]],
                   [[0, 2, 3, 2, 1, 2], [0, 0, 0, 1, 1, 1], [2, 3]],
                   [[0, 3, 2, 3, 2, 1, 2, 1], [0, 0, 0, 1, 1, 1, 1, 1], [2, 5]]],
                  [-5.2767324, -5.7357764, -5.8860631, -3.5752885, -4.3587313, -4.4592991],
                  [[0, 2, 3, 2, 3, 2, 1, 2], [0, 2, 3, 2, 1, 2], [0, 3, 2, 3, 2, 1, 2, 1]],
                  [-5.2767324, -5.7357764, -5.8860631, -3.5752885, -4.3587313, -4.4592991]],
                 [[[[4, 0, 4, 5, 4, 0, 1, 0, 3, 5, 2, 0, 4, 5, 3, 1, 3],
                    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1], [2, 10]],
                   [[4, 0, 4, 5, 4, 5, 0, 1, 0, 3, 5, 2, 0, 4, 5, 3, 2, 3],
                    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1], [2, 11]]],
                  [-8.9879169, -9.0351839, -5.6491957, -5.7711143],
                  [[4, 0, 4, 5, 4, 0, 1, 0, 3, 5, 2, 0, 4, 5, 3, 1, 3],
                   [4, 0, 4, 5, 4, 5, 0, 1, 0, 3, 5, 2, 0, 4, 5, 3, 2, 3]],
                  [-8.9879169, -9.0351839, -5.6491957, -5.7711143]],
                 [[[[1, 0, 1, 0, 2, 0], [0, 0, 0, 2, 2, 2], [3, 3]]],
                  [-3.3763478, 0.0, -2.2733698], [[1, 0, 1, 0, 2, 0]],
                  [-3.3763478, 0.0, -2.2733698]],
                 [[[[0, 3, 0, 0, 3, 0, 3, 2, 3, 4], [0, 0, 0, 0, 0, 0, 1, 1, 1, 1], [2, 6]],
                   [[0, 3, 4, 0, 3, 0, 3, 2, 4, 3, 4], [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1], [2, 6]],
                   [[0, 3, 0, 3, 0, 3, 2, 0, 3, 4], [0, 0, 0, 0, 0, 1, 1, 1, 1, 1], [2, 5]],
                   [[0, 4, 2, 0, 3, 0, 3, 2, 3, 1], [0, 0, 0, 0, 0, 0, 1, 1, 1, 1], [2, 6]]],
                  [-3.2873552, -3.9177921, -4.1245508, -4.3650222, -2.7542303, -3.294893,
                   -3.4690733, -3.8620889],
                  [[0, 3, 0, 3, 0, 3, 2, 3, 4], [0, 3, 4, 0, 3, 0, 3, 2, 4, 3, 4],
                   [0, 3, 0, 3, 0, 3, 2, 0, 3, 4], [0, 4, 2, 0, 3, 0, 3, 2, 3, 1]],
                  [-3.2873552, -3.9177921, -4.1245508, -4.3650222, -2.7542303, -3.294893,
                   -3.4690733, -3.8620889]],
                 [[[[4, 1, 4, 2, 3, 5, 0, 5, 4, 4, 5], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1, 11]],
                   [[4, 1, 4, 5, 2, 3, 5, 0, 5, 4, 4, 5], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                    [1, 12]],
                   [[4, 1, 4, 2, 4, 5, 0, 5, 4, 4, 5], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1, 11]],
                   [[4, 1, 4, 5, 4, 3, 5, 0, 5, 4, 4, 5], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                    [1, 12]],
                   [[4, 1, 3, 2, 3, 5, 0, 5, 4, 4, 5], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                    [1, 11]]],
                  [-11.141191, -11.142161, -11.198659, -11.26734, -11.271935],
                  [[4, 1, 4, 2, 3, 5, 0, 5, 4, 5], [4, 1, 4, 5, 2, 3, 5, 0, 5, 4, 5],
                   [4, 1, 4, 2, 4, 5, 0, 5, 4, 5], [4, 1, 4, 5, 4, 3, 5, 0, 5, 4, 5],
                   [4, 1, 3, 2, 3, 5, 0, 5, 4, 5]],
                  [-11.141191, -11.142161, -11.198659, -11.26734, -11.271935]]],
        'blank2_batch_major': [[6.2090902, 7.8585844, 9.4352551],
                               [0.28431457, -0.26469159, -0.17188765, 0.019158898, 0.1331057,
                                0.0059253685, -0.050655901, 0.011412658, -0.012809753, 0.046127591,
                                0.2409208, -0.020086464, -0.1077413, -0.23523657, 0.12214352,
                                0.037621826, 0.090221934, -0.010558698, -0.14978266, 0.032497525,
                                0.016546706, 0.15626132, -0.017527536, 0.0023467764, -0.15762725,
                                0.059437484, 0.10414276, -0.034992155, 0.090085998, -0.21867411,
                                -0.78744602, 0.25699517, 0.17102428, 0.1641212, 0.19530544,
                                0.057069566, 0.032922484, -0.83048904, 0.52914804, 0.21134889,
                                -0.82997346, 0.050225165, -0.011510056, 0.66288382, 0.12837462,
                                -0.075348958, -0.062698781, -0.093268573, 0.087492011, 0.1438242,
                                0.34717, -0.77032125, 0.033155013, 0.18132691, 0.20866916, 0.0,
                                0.0, 0.0, 0.0, 0.0, 0.088037327, 0.65525669, 0.31265137, 0.1389433,
                                -1.1948886, 0.078389011, 0.26214164, -1.113523, 0.75207126,
                                0.020921126, 0.06116895, 0.15653625, 0.30423206, 0.62261134,
                                -1.1445487, 0.03027267, 0.16838324, 0.52343929, -1.2121208,
                                0.49002558, 0.2163893, 0.22110751, -1.1743027, 0.40726286,
                                0.32954299, 0.23081276, 0.10478765, 0.29891577, -1.2685372,
                                0.63402098]],
        'blank_last_padded': [[2.123117, 4.0477467],
                              [0.047911569, 0.034350302, 0.0085841622, -0.090846062, -0.44310871,
                               0.25463429, 0.97697115, -0.78849667, 0.014018266, -0.010653133,
                               0.06723097, -0.070596129, -0.75262195, 0.13493216, 0.70751286,
                               -0.089822978, 0.08603242, -0.14554587, 0.027143266, 0.032370199,
                               -0.62075734, 0.43702239, 0.66049469, -0.47675985, 0.15254575,
                               0.024508744, -0.19098935, 0.013934907, 0.0, 0.0, 0.0, 0.0,
                               0.006688315, 0.085443541, -0.16238967, 0.070257783, 0.0, 0.0, 0.0,
                               0.0]],
        'collapse': [[[1, 2, 1], [1, 2, 3], [2, 0, 0]], [3, 3, 1]],
        'ctc_fn': [8.1281252, 11.903073, 18.185909],
        'd2s': [[[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0]], [1, 2, 3, 5, 5, 2], [3, 4]],
        'edges': [[708.08801, -0.0, 5.4128079, 5.2120275],
                  [-0.0068762302, -0.030833244, 0.038304932, -0.00058930926, 0.0, 0.0, 0.0, 0.0,
                   -0.042611677, 0.16959769, 0.073463045, -0.20044906, 0.37488893, -0.6417591,
                   0.16326022, 0.10361005, -0.18030955, -0.0075240172, 0.26010275, -0.072273925,
                   0.0, 0.0, 0.0, 0.0, -0.14606503, 0.16019602, 0.61071873, -0.62484956,
                   -1.4342743, 0.11265108, 0.29868278, 1.0229405, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                   0.0, 0.0, -0.57154346, 0.74702042, 0.274005, -0.44948214, 0.32350174,
                   -1.1738818, 0.24517491, 0.60520536, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                   -0.24675408, 0.057059966, 0.2007594, -0.011065236, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.023788676, 0.66382462, 0.18349347, -0.87110662,
                   0.0, 0.0, 0.0, 0.0]],
        'greedy': [[[[0, 0], [0, 1], [0, 2], [1, 0]], [0, 1, 1, 2], [2, 3],
                    [-6.5706472, -2.5179627]],
                   [[[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]], [1, 3, 2, 3, 3], [2, 3],
                    [-4.5108089, -3.173811]]],
        'k_beam': {'0,1,100': [[[[1, 2, 1, 2, 4, 3, -1, -1, -1], [1, 2, 4, 3, -1, -1, -1, -1, -1],
                                 [2, 4, -1, -1, -1, -1, -1, -1, -1]]],
                               [-5.9068956, -4.1482019, -2.6148124]],
                   '0,2,2': [[[[1, 2, 5, 1, 2, 4, -1, -1, -1], [1, 2, 4, -1, -1, -1, -1, -1, -1],
                               [2, 4, -1, -1, -1, -1, -1, -1, -1]],
                              [[1, 2, 5, 1, 2, 4, 3, -1, -1], [1, 2, 4, 3, -1, -1, -1, -1, -1],
                               [1, 4, -1, -1, -1, -1, -1, -1, -1]]],
                             [-7.7901793, -7.8889565, -5.0522027, -5.1455674, -2.6764197,
                              -2.7430038]],
                   '0,3,5': [[[[1, 2, 5, 1, 2, 4, -1, -1, -1], [1, 4, -1, -1, -1, -1, -1, -1, -1],
                               [2, 4, -1, -1, -1, -1, -1, -1, -1]],
                              [[1, 4, 2, 5, 1, 2, 4, -1, -1], [1, 4, 3, -1, -1, -1, -1, -1, -1],
                               [1, 4, -1, -1, -1, -1, -1, -1, -1]],
                              [[1, 2, 5, 2, 4, -1, -1, -1, -1], [1, 2, 4, -1, -1, -1, -1, -1, -1],
                               [2, 4, 2, -1, -1, -1, -1, -1, -1]]],
                             [-7.7901793, -7.8328772, -7.8617706, -4.9606504, -5.0128512,
                              -5.0522027, -2.6764197, -2.7430038, -2.8251276]],
                   '2,1,100': [[[[1, 5, 1, 4, 3, -1, -1, -1, -1], [1, 0, 4, 3, -1, -1, -1, -1, -1],
                                 [4, -1, -1, -1, -1, -1, -1, -1, -1]]],
                               [-5.6662793, -4.5623145, -1.9900185]],
                   '2,2,2': [[[[1, 4, 5, 1, 0, 4, -1, -1, -1], [1, 0, 4, 0, -1, -1, -1, -1, -1],
                               [4, -1, -1, -1, -1, -1, -1, -1, -1]],
                              [[1, 5, 1, 0, 4, -1, -1, -1, -1], [1, 0, 4, 3, -1, -1, -1, -1, -1],
                               [1, 4, -1, -1, -1, -1, -1, -1, -1]]],
                             [-7.2051954, -7.2507229, -5.2859211, -5.597167, -2.2096791,
                              -2.2762632]],
                   '2,3,5': [[[[1, 4, 1, 0, 4, -1, -1, -1, -1], [1, 4, 0, -1, -1, -1, -1, -1, -1],
                               [4, -1, -1, -1, -1, -1, -1, -1, -1]],
                              [[1, 4, 1, 4, -1, -1, -1, -1, -1], [1, 0, 4, 0, -1, -1, -1, -1, -1],
                               [1, 4, -1, -1, -1, -1, -1, -1, -1]],
                              [[1, 5, 1, 0, 4, -1, -1, -1, -1], [1, 0, 4, 3, -1, -1, -1, -1, -1],
                               [3, 4, -1, -1, -1, -1, -1, -1, -1]]],
                             [-6.4192071, -6.4384561, -6.6743617, -4.9653063, -5.0435038,
                              -5.2248507, -1.9941499, -2.1962876, -2.4922476]],
                   'None,1,100': [[[[1, 2, 1, 2, 4, 3, -1, -1, -1],
                                    [1, 2, 4, 3, -1, -1, -1, -1, -1],
                                    [2, 4, -1, -1, -1, -1, -1, -1, -1]]],
                                  [-5.611886, -5.0729561, -2.2295678]],
                   'None,2,2': [[[[1, 2, 1, 2, 4, 3, -1, -1, -1], [1, 2, 4, 0, 3, -1, -1, -1, -1],
                                  [2, 4, -1, -1, -1, -1, -1, -1, -1]],
                                 [[1, 2, 1, 2, 0, 4, 3, -1, -1], [1, 2, 0, 4, 0, 3, -1, -1, -1],
                                  [1, 4, -1, -1, -1, -1, -1, -1, -1]]],
                                [-7.5382028, -7.5752821, -6.2180271, -6.2369833, -2.2549925,
                                 -2.3215761]],
                   'None,3,5': [[[[1, 2, 1, 2, 4, 3, -1, -1, -1], [1, 2, 0, 4, 0, -1, -1, -1, -1],
                                  [1, 4, -1, -1, -1, -1, -1, -1, -1]],
                                 [[1, 2, 1, 2, 0, 4, 3, -1, -1], [1, 2, 4, 0, -1, -1, -1, -1, -1],
                                  [2, 4, -1, -1, -1, -1, -1, -1, -1]],
                                 [[1, 2, 1, 2, 0, 4, -1, -1, -1], [1, 2, 0, 4, 3, -1, -1, -1, -1],
                                  [4, -1, -1, -1, -1, -1, -1, -1, -1]]],
                                [-6.7277675, -6.7648468, -6.8631043, -5.6199565, -5.8001413,
                                 -5.8717194, -2.2413464, -2.2549925, -2.3772054]]},
        'k_greedy_none': [[[[1, 2, 1, 2, 0, 4, 3, -1, -1], [1, 2, 0, 4, 0, 3, -1, -1, -1],
                            [2, 4, 2, -1, -1, -1, -1, -1, -1]]],
                          [-11.955431, -4.445528, -4.6414413]],
        'k_loss': {'0': [[8.1281252, 10.425079, 7.2224121],
                         [1.9266594, 23.556859, -0.010516225, -0.22162712, 0.02074573, 0.087672718,
                          0.049518909, 0.07420595]],
                   '3': [[8.3469582, 10.765585, 7.4261913],
                         [1.5908403, 23.855216, 0.015471487, -0.13096735, 0.02074573, -0.028974749,
                          0.049518909, 0.07420595]],
                   'None': [[8.1281252, 10.425079, 7.2224121],
                            [1.9266594, 23.556859, -0.010516225, -0.22162712, 0.02074573,
                             0.087672718, 0.049518909, 0.07420595]]},
        'k_loss64': [8.1281252, 10.425079, 7.2224121],
        'legacy_decode': {'False': [[[[1, 2, 1, 2, 4, 3, -1, -1, -1],
                                      [1, 2, 0, 4, 0, -1, -1, -1, -1],
                                      [2, 4, -1, -1, -1, -1, -1, -1, -1]],
                                     [[1, 2, 1, 2, 0, 4, 3, -1, -1],
                                      [1, 2, 4, 0, -1, -1, -1, -1, -1],
                                      [1, 4, -1, -1, -1, -1, -1, -1, -1]]],
                                    [-6.8049026, -6.8419814, -5.619957, -5.8001418, -2.254993,
                                     -2.3215766]],
                          'True': [[[[1, 2, 1, 2, 0, 4, 3, -1, -1], [1, 2, 0, 4, 0, 3, -1, -1, -1],
                                     [2, 4, 2, -1, -1, -1, -1, -1, -1]]],
                                   [8.0756636, 6.2369814, 2.8251266]]},
        'no_labels': [[3.6183329, 1.9410487],
                      [-0.3286809, 0.26851791, 0.060162984, -0.4520781, 0.34469646, 0.10738158,
                       -0.42998895, 0.24345568, 0.18653329, -1.3458879, 0.90128994, 0.44459787,
                       -0.26381058, 0.2152532, 0.048557356, 0.0, 0.0, 0.0, -0.2040658, 0.15034477,
                       0.053721007, 0.0, 0.0, 0.0]],
        'sp_blank0': [[7.5288601, 3.1065907, 3.6284156],
                      [-0.17608136, -0.25075728, 0.36590564, 0.025015917, 0.035917126, -0.24335986,
                       0.0519876, 0.071421638, 0.15568595, -0.035735331, -0.41477013, 0.31873327,
                       -0.69329166, 0.7153005, 0.074027956, -0.0049340725, -0.18270893, 0.10044082,
                       0.0090489127, 0.07815326, -0.012699433, 0.092648946, 0.091267198,
                       0.14304551, -0.31426209, -0.32498878, 0.27928954, -0.4552086, 0.26411739,
                       0.23679018, -0.062965885, -0.011501126, -0.079834163, 0.069393113,
                       0.084907904, -0.11786519, 0.10168211, 0.31704375, 0.076501913, -0.37736258,
                       -0.56419545, 0.17893729, -0.40421015, 0.41166312, 0.37780541, -0.08776398,
                       0.132504, -0.097472034, 0.0076210704, 0.045110848, -0.34586233, 0.18648677,
                       0.040299255, 0.075003967, 0.044072408, 0.0, 0.0, 0.0, 0.0, 0.0, -0.10431974,
                       0.21048011, -0.12476749, -0.12191242, 0.14051926, 0.11715449, 0.4387334,
                       0.12411863, 0.0076533463, -0.68765986, 0.0, 0.0, 0.0, 0.0, 0.0,
                       -0.038711406, 0.24975386, 0.085259803, -0.37811258, 0.081810176, 0.0, 0.0,
                       0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]],
        'sp_blank2': [[7.1651111, 7.2698402],
                      [0.29988593, -0.29918367, -0.10895839, 0.083128929, 0.025127264, -1.26072,
                       0.22156927, 0.021300973, 0.61356342, 0.40428659, 0.058290616, -0.14238352,
                       -0.0015254617, 0.00015237927, 0.085466206, -0.040280774, -0.34289694,
                       -0.11243793, 0.42537171, 0.070244297, 0.16680236, 0.0002458021,
                       0.0017583519, -0.19046949, 0.021663133, 0.077826291, -1.1086783,
                       -0.13625258, 0.94818974, 0.21891508, 0.043858219, 0.26934305, -0.013374543,
                       -0.12379764, -0.17602873, 0.066132262, -0.019533027, -0.88876784,
                       0.74992788, 0.092240788, 0.20807053, 0.0749752, -0.016996637, 0.042279683,
                       -0.30832851, 0.019017495, -1.2805047, 1.0421023, 0.15108904, 0.068296134]],
        'sp_blank_last': [[6.1655469, 8.9207859],
                          [0.080656387, -0.25160953, 0.13697554, 0.044830557, -0.010853129,
                           -1.0787376, 0.39908904, 0.028446576, 0.66608143, -0.014879644,
                           0.33079776, -0.32190174, -0.043767959, 0.082102172, -0.047230221,
                           -0.22548127, 0.22455651, 0.17819378, 0.39237779, -0.569646, 0.066507772,
                           0.029866695, -0.033370011, 0.020938979, -0.083943352, -0.2860018,
                           0.74161029, 0.31641015, 0.12945427, -0.90147203, 0.0407224, 0.01448109,
                           -0.23082377, 0.13337003, 0.042250119, -0.73843986, 0.052229639,
                           0.12093367, 0.27514175, 0.2901361, 0.2341917, 0.034864798, -0.028662976,
                           -0.21170351, -0.028690197, -0.14872086, 1.0172894, -0.96286511,
                           0.17156214, -0.07726422, 0.10003755, 0.20447712, 0.048003308,
                           -0.28315479, -0.069363058, 0.7898885, 0.34311637, -0.53239167,
                           0.12949279, -0.73010492]],
        'sp_repeats_too_long': [[np.inf, 3.3261805, 0.56615889],
                                [0.12264054, 0.33339757, 0.01597592, 0.027985971, 0.0038804947,
                                 0.42935696, -0.7829147, 0.34967723, 0.27741805, 0.33265936,
                                 0.038369812, -0.64844716, 0.082200661, 0.13011965, 0.17314535,
                                 0.11453435, 0.48165298, 0.16188511, 0.19095062, -0.83448869, 0.0,
                                 0.0, 0.0, 0.0, 0.016833706, 0.053830076, 0.14913343, 0.28020281,
                                 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25192833, 0.0489126,
                                 0.0949848, 0.10417428, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]],
        'unique': [[[3, 4, 0, 0, 0], [1, 0, 0, 0, 0], [5, 2, 7, 0, 0]],
                   [[0, 1, 1, 0, 2], [0, 0, 1, 1, 1], [0, 1, 0, 1, 2]]]}


def _digest(g):
    g = np.asarray(g, np.float64)
    w = np.cos(np.arange(g.size)).reshape(g.shape)
    return [(g * w).sum(), np.abs(g).sum()] + list(g.ravel()[:6])


def _loss_grad(f, x, device=None):
    with gt.device(device or "cpu:0"):
        xt = gt.constant(x)
        with gt.GradientTape() as tape:
            tape.watch(xt)
            loss = f(xt)
            w = gt.constant(np.linspace(0.5, 1.5, loss.shape[0]).astype(np.float32))
            total = gt.reduce_sum(loss * w)
        grad = tape.gradient(total, xt)
    return loss, grad


def _sparse(labels, lengths):
    labels = np.array(labels)
    mask = np.arange(labels.shape[1])[None] < np.array(lengths)[:, None]
    return gt.sparse.SparseTensor(np.argwhere(mask), labels[mask].astype(np.int32),
                                  labels.shape)


# --- ctc_loss ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(DENSE))
def test_dense_loss_and_gradient_match_tf(name):
    la, lab, ll, lg, kw = DENSE[name]
    loss, grad = _loss_grad(lambda x: gt.nn.ctc_loss(lab, x, ll, lg, **kw), logits(*la))
    ref_loss, ref_grad = _REF[name]
    assert loss.dtype == gt.float32 and grad.shape == logits(*la).shape
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-5)
    # (an alignment that cannot fit: TF's own float32 sums near log(1e-307) are that coarse)
    tol = 1e-3 if name == "edges" else 1e-5
    np.testing.assert_allclose(grad.numpy().ravel(), ref_grad, rtol=tol, atol=tol)


def test_dense_edge_cases_are_tfs():
    la, lab, ll, lg, kw = DENSE["edges"]
    loss = gt.nn.ctc_loss(lab, logits(*la), ll, lg).numpy()
    # 3 labels in 2 frames: TF's finite stand-in for log(0), not inf; no frames: 0 or 706.89
    assert 700 < loss[0] < 720 and loss[1] == 0.0
    assert gt.nn.ctc_loss(lab, logits(*la), ll, [0, 0, 0, 0]).numpy()[0] == pytest.approx(
        -float(np.float32(np.log(1e-307))))


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_sparse_loss_and_gradient_match_tf(name):
    la, lab, ll, lg, blank = SPARSE[name]
    sp = _sparse(lab, ll)
    loss, grad = _loss_grad(lambda x: gt.nn.ctc_loss(sp, x, None, lg, blank_index=blank),
                            logits(*la))
    ref_loss, ref_grad = _REF[name]
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-5)
    np.testing.assert_allclose(grad.numpy().ravel(), ref_grad, rtol=1e-5, atol=1e-5)


def test_sparse_repeats_that_cannot_fit_give_inf_and_the_softmax():
    la, lab, ll, lg, blank = SPARSE["sp_repeats_too_long"]
    x = logits(*la)
    loss, grad = _loss_grad(lambda t: gt.nn.ctc_loss(_sparse(lab, ll), t, None, lg,
                                                     blank_index=0), x)
    assert np.isinf(loss.numpy()[0])
    e = np.exp(x[:, 0] - x[:, 0].max(-1, keepdims=True))
    np.testing.assert_allclose(grad.numpy()[:, 0], 0.5 * e / e.sum(-1, keepdims=True),
                               rtol=1e-6)


def test_sparse_label_errors_as_tfs_kernel():
    x = logits(5, (4, 2, 5))
    with pytest.raises(ValueError, match="blank_index"):
        gt.nn.ctc_loss(_sparse([[1, 2], [3, 0]], [2, 1]), x, None, [4, 4])
    with pytest.raises(gt.errors.InvalidArgumentError, match="Labels length is zero in batch 1"):
        gt.nn.ctc_loss(_sparse([[1, 2], [3, 0]], [2, 0]), x, None, [4, 4], blank_index=0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="Not enough time"):
        gt.nn.ctc_loss(_sparse([[1, 2], [3, 0]], [2, 1]), x, None, [1, 4], blank_index=0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="nonnegative"):
        gt.nn.ctc_loss(_sparse([[1, 0], [3, 0]], [2, 1]), x, None, [4, 4], blank_index=0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="sequence_length"):
        gt.nn.ctc_loss(_sparse([[1, 2], [3, 0]], [2, 1]), x, None, [5, 4], blank_index=0)


def test_dense_argument_errors():
    x = logits(0, (4, 2, 5))
    with pytest.raises(gt.errors.InvalidArgumentError, match="blank_index"):
        gt.nn.ctc_loss([[1], [2]], x, [1, 1], [4, 4], blank_index=5)
    with pytest.raises(ValueError, match="label_length"):
        gt.nn.ctc_loss([[1], [2]], x, [1, 1, 1], [4, 4])
    with pytest.raises(ValueError, match="labels"):
        gt.nn.ctc_loss([[1], [2], [3]], x, [1, 1], [4, 4])
    with pytest.raises(TypeError, match="integers"):
        gt.nn.ctc_loss([[1.0], [2.0]], x, [1, 1], [4, 4])
    with pytest.raises(ValueError, match="rank 3"):
        gt.nn.ctc_loss([[1], [2]], x[0], [1, 1], [4, 4])


def test_dtypes_and_unique():
    la, lab, ll, lg, kw = DENSE["basic"]
    x = logits(*la)
    ref = np.array(_REF["basic"][0])
    l64 = gt.nn.ctc_loss(lab, x.astype(np.float64), ll, lg)
    assert l64.dtype == gt.float64
    np.testing.assert_allclose(l64.numpy(), ref, rtol=1e-5)
    x16 = gt.constant(x.astype(np.float16))
    with gt.GradientTape() as tape:
        tape.watch(x16)
        l16 = gt.nn.ctc_loss(lab, x16, ll, lg)
    assert l16.dtype == gt.float16 and tape.gradient(l16, x16).dtype == gt.float16
    np.testing.assert_allclose(l16.numpy().astype(np.float32), ref, rtol=2e-3)
    uniq = gt.nn.ctc_unique_labels(lab)
    np.testing.assert_allclose(gt.nn.ctc_loss(lab, x, ll, lg, unique=uniq).numpy(), ref,
                               rtol=1e-6)


def test_no_second_derivative_as_tf():
    la, lab, ll, lg, kw = DENSE["basic"]
    x = gt.constant(logits(*la))
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            loss = gt.nn.ctc_loss(lab, x, ll, lg)
        g = inner.gradient(loss, x)
        gsum = gt.reduce_sum(g * g)
    assert g is not None and outer.gradient(gsum, x) is None


def test_on_the_strict_device_without_host_reads():
    la, lab, ll, lg, kw = DENSE["blank2_batch_major"]
    dev = gt.get_device("strict:0")
    with gt.device(dev):
        lab_t, ll_t, lg_t = gt.constant(lab), gt.constant(ll), gt.constant(lg)
    before = gt.config.sync_count(dev)
    loss, grad = _loss_grad(lambda x: gt.nn.ctc_loss(lab_t, x, ll_t, lg_t, **kw), logits(*la),
                            device=dev)
    assert gt.config.sync_count(dev) == before
    assert loss.device is dev and grad.device is dev
    np.testing.assert_allclose(loss.numpy(), _REF["blank2_batch_major"][0], rtol=1e-5)
    np.testing.assert_allclose(grad.numpy().ravel(), _REF["blank2_batch_major"][1], rtol=1e-5,
                               atol=1e-5)


# --- decoders ---------------------------------------------------------------------------------

def test_greedy_decoder_matches_tf():
    x = logits(20, (5, 2, 4))
    for (dec, score), (ind, vals, shape, ref_score) in zip(
            [gt.nn.ctc_greedy_decoder(x, [5, 3]),
             gt.nn.ctc_greedy_decoder(x, [4, 5], merge_repeated=False, blank_index=0)],
            _REF["greedy"]):
        assert len(dec) == 1
        assert dec[0].indices.numpy().tolist() == ind
        assert dec[0].values.numpy().tolist() == vals and dec[0].values.dtype == gt.int64
        assert list(dec[0].shape) == shape
        np.testing.assert_allclose(score.numpy().ravel(), ref_score, rtol=1e-6)


@pytest.mark.parametrize("case", range(len(BEAM)))
def test_beam_search_decoder_matches_tf(case):
    seed, t, b, c, scale, seq, width, top = BEAM[case]
    x = logits(seed, (t, b, c), scale)
    paths, logp, merged, logp_merged = _REF["beam"][case]
    dec, lp = gt.nn.ctc_beam_search_decoder(x, seq, beam_width=width, top_paths=top)
    assert len(dec) == top and tuple(lp.shape) == (b, top)
    for st, (vals, rows, shape) in zip(dec, paths):
        assert st.values.numpy().tolist() == vals
        assert st.indices.numpy()[:, 0].tolist() == rows
        assert list(st.shape) == shape
    np.testing.assert_allclose(lp.numpy().ravel(), logp, rtol=2e-6, atol=2e-6)
    # tf.compat.v1's decoder merges repeated labels (the legacy Keras backend uses it)
    dec, lp = ctc._beam_search(x, seq, width, top, True, "ctc_beam_search_decoder")
    assert [st.values.numpy().tolist() for st in dec] == merged
    np.testing.assert_allclose(lp.numpy().ravel(), logp_merged, rtol=2e-6, atol=2e-6)


def test_decoder_errors_as_tf():
    x = logits(20, (4, 2, 3))
    with pytest.raises(gt.errors.FailedPreconditionError, match="sequence_length"):
        gt.nn.ctc_greedy_decoder(x, [5, 2])
    with pytest.raises(gt.errors.FailedPreconditionError, match="len"):
        gt.nn.ctc_beam_search_decoder(x, [4, 2, 1])
    with pytest.raises(gt.errors.InvalidArgumentError, match="blank_index"):
        gt.nn.ctc_greedy_decoder(x, [4, 2], blank_index=3)
    with pytest.raises(gt.errors.InvalidArgumentError, match="more paths than the beam width"):
        gt.nn.ctc_beam_search_decoder(x, [4, 2], beam_width=3, top_paths=4)
    with pytest.raises(gt.errors.InvalidArgumentError, match="Less leaves"):
        gt.nn.ctc_beam_search_decoder(x, [0, 2], beam_width=3, top_paths=2)
    with pytest.raises(gt.errors.InvalidArgumentError, match="beam_width"):
        gt.nn.ctc_beam_search_decoder(x, [4, 2], beam_width=0)
    with pytest.raises(gt.errors.InvalidArgumentError, match="float32 or float64"):
        gt.nn.ctc_greedy_decoder(x.astype(np.float16), [4, 2])


def test_decoders_keep_the_device_and_are_not_differentiable():
    with gt.device("strict:0"):
        x = gt.constant(logits(20, (4, 2, 3)))
        with gt.GradientTape() as tape:
            tape.watch(x)
            dec, lp = gt.nn.ctc_beam_search_decoder(x, [4, 3], beam_width=3)
        assert dec[0].values.device is x.device and lp.device is x.device
        assert tape.gradient(lp, x) is None


def test_collapse_repeated_and_unique_labels():
    c, n = gt.nn.collapse_repeated(np.array([[1, 1, 2, 2, 1], [1, 2, 3, 4, 5], [2, 2, 0, 0, 0]],
                                            np.int32), np.array([5, 3, 2], np.int32))
    assert [c.numpy().tolist(), n.numpy().tolist()] == _REF["collapse"]
    assert c.dtype == gt.int32 and n.dtype == gt.int32
    u = gt.nn.ctc_unique_labels(np.array([[3, 4, 4, 3, 0], [1, 1, 0, 0, 0], [5, 2, 5, 2, 7]]))
    assert [u[0].numpy().tolist(), u[1].numpy().tolist()] == _REF["unique"]
    assert u[0].dtype == gt.int64 and u[1].dtype == gt.int32


# --- Keras ------------------------------------------------------------------------------------

K_X = logits(30, (3, 9, 6))
K_TGT = np.array([[1, 2, 3, 0], [5, 5, 0, 0], [2, 0, 0, 0]])


@pytest.mark.parametrize("mask_index", [0, 3, None])
def test_keras_ctc_loss_matches_tf(mask_index):
    loss, grad = _loss_grad(lambda x: gt.keras.ops.ctc_loss(
        K_TGT, x, np.array([3, 2, 1]), np.array([9, 7, 4]), mask_index=mask_index), K_X)
    ref_loss, ref_grad = _REF["k_loss"][str(mask_index)]
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-5)
    np.testing.assert_allclose(_digest(grad.numpy()), ref_grad, rtol=1e-5, atol=1e-6)
    l64 = gt.keras.ops.ctc_loss(K_TGT, K_X.astype(np.float64), np.array([3, 2, 1]),
                                np.array([9, 7, 4]))
    assert l64.dtype == gt.float64
    np.testing.assert_allclose(l64.numpy(), _REF["k_loss64"], rtol=1e-6)


@pytest.mark.parametrize("mask_index", [0, 2, None])
@pytest.mark.parametrize("top_paths,beam_width", [(1, 100), (3, 5), (2, 2)])
def test_keras_ctc_decode_beam_search_matches_tf(mask_index, top_paths, beam_width):
    dec, scores = gt.keras.ops.ctc_decode(K_X, np.array([9, 6, 3]), strategy="beam_search",
                                          beam_width=beam_width, top_paths=top_paths,
                                          mask_index=mask_index)
    ref_dec, ref_scores = _REF["k_beam"][f"{mask_index},{top_paths},{beam_width}"]
    assert dec.dtype == gt.int32 and dec.numpy().tolist() == ref_dec
    np.testing.assert_allclose(scores.numpy().ravel(), ref_scores, rtol=2e-6, atol=2e-6)


def test_keras_ctc_decode_greedy_without_mask_index():
    dec, scores = gt.keras.ops.ctc_decode(K_X, np.array([9, 6, 3]), mask_index=None)
    assert dec.numpy().tolist() == _REF["k_greedy_none"][0]
    np.testing.assert_allclose(scores.numpy().ravel(), _REF["k_greedy_none"][1], rtol=1e-6)


def test_keras_ctc_losses_match_tf():
    y_true = K_TGT.astype(np.float32)
    loss, grad = _loss_grad(lambda x: gt.keras.losses.CTC(reduction=None)(y_true, x), K_X)
    np.testing.assert_allclose(loss.numpy(), _REF["CTC"][0], rtol=1e-5)
    np.testing.assert_allclose(_digest(grad.numpy()), _REF["CTC"][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gt.keras.losses.CTC()(y_true, K_X).numpy(), _REF["CTC_mean"],
                               rtol=1e-6)
    np.testing.assert_allclose(gt.keras.losses.CTC()(y_true, K_X,
                                                     sample_weight=np.array([1.0, 0.5, 2.0])
                                                     ).numpy(), _REF["CTC_w"], rtol=1e-6)
    np.testing.assert_allclose(gt.keras.losses.ctc(K_TGT.astype(np.int32), K_X).numpy(),
                               _REF["ctc_fn"], rtol=1e-6)
    with pytest.raises(ValueError, match="y_true"):
        gt.keras.losses.ctc(K_TGT[0], K_X)


def test_keras_ctc_loss_config():
    loss = gt.keras.losses.CTC(name="my_ctc", reduction="sum")
    assert loss.get_config() == {"name": "my_ctc", "reduction": "sum"}
    again = gt.keras.losses.deserialize(gt.keras.losses.serialize(loss))
    assert isinstance(again, gt.keras.losses.CTC) and again.get_config() == loss.get_config()
    assert gt.keras.losses.CTC().name == "ctc"
    assert gt.keras.losses.get("ctc") is gt.keras.losses.ctc
    assert isinstance(gt.keras.losses.get("CTC"), gt.keras.losses.CTC)


# --- legacy tf.keras.backend functions ----------------------------------------------------------

def test_legacy_ctc_batch_cost_matches_tf():
    tgt = np.array([[1, 2, 3, 0], [4, 4, 0, 0], [2, 0, 0, 0]])
    loss, grad = _loss_grad(lambda x: ctc.ctc_batch_cost(
        tgt, gt.nn.softmax(x, axis=-1), np.array([[9], [7], [4]]),
        np.array([[3], [2], [1]]))[:, 0], K_X)
    np.testing.assert_allclose(loss.numpy(), _REF["batch_cost"][0], rtol=1e-5)
    np.testing.assert_allclose(_digest(grad.numpy()), _REF["batch_cost"][1], rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("greedy", [True, False])
def test_legacy_ctc_decode_matches_tf(greedy):
    probs = gt.nn.softmax(gt.constant(K_X), axis=-1)
    dense, logp = ctc.ctc_decode(probs, np.array([9, 6, 3]), greedy=greedy, beam_width=4,
                                 top_paths=1 if greedy else 2)
    ref_dense, ref_logp = _REF["legacy_decode"][str(greedy)]
    assert [d.numpy().tolist() for d in dense] == ref_dense
    assert all(d.dtype == gt.int64 for d in dense)
    np.testing.assert_allclose(logp.numpy().ravel(), ref_logp, rtol=2e-6, atol=2e-6)


def test_legacy_ctc_label_dense_to_sparse():
    sp = ctc.ctc_label_dense_to_sparse(gt.constant(K_TGT), gt.constant([3, 2, 1]))
    ind, vals, shape = _REF["d2s"]
    assert sp.indices.numpy().tolist() == ind and sp.values.numpy().tolist() == vals
    assert list(sp.shape) == shape
