"""Muon, ScheduleFreeAdamW, MultiOptimizer and OptimizerMap compared with TensorFlow 2.21
(Keras 3.15): the expected numbers are what Keras gives for the same variables and gradients
(an Embedding, 2-D kernels, 1-D biases and a scalar, paths as Keras layers name them), with
``optimizer.variables`` in Keras' order (without Keras' ``learning_rate`` Variable, which
gradtape does not list), configs, errors, checkpoints and ``fit``."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers
from gradtape.capture import capture
from gradtape.optimizers import schedules

from conftest import resolve_device

SHAPES = [("embedding/embeddings", (6, 2)), ("dense/kernel", (4, 3)), ("dense/bias", (3,)),
          ("wide/kernel", (3, 5)), ("wide/bias", (5,)), ("out/kernel", (5, 2)),
          ("out/bias", (2,)), ("scale", ())]


def make_variables():
    out = []
    for i, (path, shape) in enumerate(SHAPES):
        n = int(np.prod(shape))
        value = (np.sin(np.arange(n) * 0.9 + i) * 0.5).reshape(shape).astype(np.float32)
        out.append(gt.Variable(value, name=path))
    return out


def gradients(k, variables):
    return [gt.constant((np.cos(np.arange(int(np.prod(v.shape))) * 1.3 + k * 0.7 + i)
                         * (0.5 + 0.2 * i)).reshape(tuple(v.shape)).astype(np.float32))
            for i, v in enumerate(variables)]


def schedule():
    return schedules.ExponentialDecay(0.05, 2, 0.5)


def muon_opts():
    opt = optimizers.Muon(schedule(), nesterov=False, exclude_layers=["out"], weight_decay=0.1,
                          adam_weight_decay=0.2, adam_lr_ratio=0.5, momentum=0.9, ns_steps=3,
                          rms_rate=None, exclude_embeddings=False, epsilon=1e-6,
                          adam_beta_1=0.8, adam_beta_2=0.95)
    opt.exclude_from_weight_decay(var_names=["bias"])
    return opt


def schedule_free_opts():
    opt = optimizers.ScheduleFreeAdamW(schedule(), beta_1=0.8, beta_2=0.95, epsilon=1e-6,
                                       warmup_steps=3, weight_decay=0.1)
    opt.exclude_from_weight_decay(var_names=["bias"])
    return opt


def multi():
    mapping = optimizers.OptimizerMap(
        optimizers.Adam(0.05), {"dense/.*": optimizers.SGD(0.1, momentum=0.9, nesterov=True),
                                "out/kernel": optimizers.Muon(0.05),
                                "out/.*": optimizers.RMSprop(0.05)})
    return optimizers.MultiOptimizer(mapping, loss_scale_factor=4.0)


# name: (the optimizer, the number of steps)
CASES = {
    "muon": (lambda: optimizers.Muon(0.05), 4),
    "muon_opts": (muon_opts, 5),
    "muon_gas_ema": (lambda: optimizers.Muon(0.05, weight_decay=None, adam_weight_decay=0.1,
                                             exclude_layers=["^wi"],
                                             gradient_accumulation_steps=2, use_ema=True,
                                             ema_momentum=0.5), 6),
    "muon_clip_no_nesterov": (lambda: optimizers.Muon(0.1, nesterov=False, global_clipnorm=1.0,
                                                      exclude_embeddings=False, ns_steps=0), 3),
    "sf": (lambda: optimizers.ScheduleFreeAdamW(0.05), 4),
    "sf_opts": (schedule_free_opts, 5),
    "multi": (multi, 4),
}


def run(name):
    make, steps = CASES[name]
    opt = make()
    variables = make_variables()
    for k in range(steps):
        opt.apply_gradients(zip(gradients(k, variables), variables))
    return opt, variables


# From TensorFlow: the variables after the steps, ``optimizer.variables`` after ``iterations``
# (slot name, shape, values; a MultiOptimizer's inner optimizers' ``iteration`` too) and,
# where they differ, the variables after ``finalize_variable_values``.
EXPECTED = {
    'muon': {
        'iterations': 4,
        'variables': [
            [-0.1623449, 0.42702565, 0.67572826, 0.28859705, -0.41630971, -0.63285726, -0.3166081,
             0.18952879, 0.43178383, 0.28924677, 0.084499523, -0.042328086],
            [0.42461336, 0.50895828, 0.18250559, -0.29506803, -0.5273428, -0.33865488, 0.098094806,
             0.43354654, 0.43475965, 0.13190202, -0.25348341, -0.46000502],
            [0.64881283, 0.26929903, -0.36801651],
            [0.11020102, -0.32029399, -0.52490824, -0.31300151, 0.16260518, 0.48318648, 0.41701505,
             0.042296167, -0.35035124, -0.47736844, -0.2793273, 0.12087227, 0.45986348, 0.45905954,
             0.084981106],
            [-0.32039893, -0.68655789, -0.36665848, 0.38103697, 0.65983021],
            [-0.5168649, -0.22625028, 0.26485613, 0.54400873, 0.37384823, -0.08432091, -0.44347844,
             -0.44678527, -0.13467906, 0.24975862],
            [-0.31879142, 0.26231992],
            [0.24637431],
        ],
        'optimizer_variables': [
            ('momentum', (6, 2), [0.049832322, -0.096126772, -0.10125992, 0.041952949, 0.12370465,
             0.024228752, -0.11074233, -0.083475634, 0.066083059, 0.11882992, -0.0025093295,
             -0.1201724]),
            ('velocity', (6, 2), [0.0004661367, 0.00049885031, 0.00053305028, 0.00044172551,
             0.00056403584, 0.00044574792, 0.0005261568, 0.00050664181, 0.00045967725, 0.000559679,
             0.0004352628, 0.0005484827]),
            ('momentum', (4, 3), [-0.94688976, -1.8044213, -0.018471301, 1.7945391, 0.97854555,
             -1.2710195, -1.658538, 0.3837055, 1.8638195, 0.6134336, -1.535634, -1.4349941]),
            ('momentum', (3,), [-0.22325507, -0.056320287, 0.19312383]),
            ('velocity', (3,), [0.0018245724, 0.0014592783, 0.0016818505]),
            ('momentum', (3, 5), [-1.6810129, 1.8683852, 2.6805947, -0.43427342, -2.9129298,
             -1.1241372, 2.3115191, 2.3607945, -1.0484996, -2.9217393, -0.51462424, 2.6464167,
             1.9304509, -1.6136298, -2.7937393]),
            ('momentum', (5,), [0.13883364, 0.31763798, 0.031101942, -0.30099851, -0.19213545]),
            ('velocity', (5,), [0.0030341784, 0.0038093922, 0.0029711232, 0.0036325159,
             0.0033373053]),
            ('momentum', (5, 2), [3.9369082, 1.7461007, -3.0027485, -3.3525641, 1.2091346,
             3.9994483, 0.93056083, -3.5016003, -2.8039091, 2.0015159]),
            ('momentum', (2,), [0.27059969, -0.23932934]),
            ('velocity', (2,), [0.0057945498, 0.0053648623]),
            ('momentum', (), [-0.14083822]),
            ('velocity', (), [0.0063453298]),
        ],
    },
    'muon_opts': {
        'iterations': 5,
        'variables': [
            [-0.060277373, 0.40090707, 0.54926187, 0.23288505, -0.27638865, -0.53466678,
             -0.35034731, 0.076481745, 0.39700854, 0.41403359, 0.16273881, -0.18385379],
            [0.40843275, 0.53070486, 0.20590422, -0.3048403, -0.55288738, -0.33791128, 0.12721965,
             0.44655412, 0.40862513, 0.099662736, -0.24482775, -0.42059606],
            [0.52219719, 0.17004366, -0.31622142],
            [0.12398427, -0.2975705, -0.52332491, -0.33022895, 0.15437526, 0.48878732, 0.41189891,
             0.029970206, -0.35241023, -0.46287781, -0.26749328, 0.10152958, 0.43615264,
             0.46131283, 0.10595042],
            [-0.35352612, -0.5583728, -0.27839148, 0.26704049, 0.54250598],
            [-0.53267306, -0.23480183, 0.24414313, 0.54269242, 0.38534722, -0.10323296,
             -0.45016319, -0.45082742, -0.11490968, 0.26421779],
            [-0.19925196, 0.27327991],
            [0.28836784],
        ],
        'optimizer_variables': [
            ('momentum', (6, 2), [-0.022620291, -1.152553, -0.59399289, 0.83476818, 1.0405918,
             -0.27805394, -1.1893501, -0.35824555, 0.99768949, 0.89200711, -0.52046782,
             -1.1704562]),
            ('momentum', (4, 3), [-1.4188395, -1.2211018, 0.76555294, 1.6306708, 0.10685217,
             -1.5735052, -0.94867378, 1.0659668, 1.5189633, -0.25332505, -1.6544918, -0.63182408]),
            ('momentum', (3,), [-0.29240096, 0.13391222, 0.36404368]),
            ('velocity', (3,), [0.081281491, 0.10166312, 0.084742092]),
            ('momentum', (3, 5), [-0.32014298, 2.4181914, 1.6138698, -1.554775, -2.4456708,
             0.24634683, 2.5774658, 1.1325912, -1.9715319, -2.1873562, 0.80130142, 2.616051,
             0.59827948, -2.2959723, -1.8266193]),
            ('momentum', (5,), [0.4649165, 0.36690623, -0.26862252, -0.51061869, -0.0045572519]),
            ('velocity', (5,), [0.20161836, 0.1721568, 0.21325073, 0.17228641, 0.2013962]),
            ('momentum', (5, 2), [0.53423762, -0.14083596, -0.60958457, -0.18529034, 0.51045465,
             0.45838237, -0.26522118, -0.6002751, -0.055924624, 0.57035553]),
            ('velocity', (5, 2), [0.22513911, 0.27868107, 0.24240676, 0.25103092, 0.27252534,
             0.22706451, 0.28347981, 0.23225732, 0.26362595, 0.26108962]),
            ('momentum', (2,), [0.046305269, -0.65228021]),
            ('velocity', (2,), [0.34037778, 0.33352059]),
            ('momentum', (), [-0.62077653]),
            ('velocity', (), [0.44140148]),
        ],
    },
    'muon_gas_ema': {
        'iterations': 3,
        'variables': [
            [-0.066118479, 0.51262236, 0.57906401, 0.21411036, -0.33979654, -0.53071815,
             -0.24993049, 0.095857762, 0.37880179, 0.3636899, 0.17204523, -0.095690683],
            [0.4367184, 0.49137047, 0.16125916, -0.28770685, -0.50247955, -0.33299503, 0.075378619,
             0.41517743, 0.44789001, 0.15750603, -0.2517989, -0.48486146],
            [0.57150859, 0.17180979, -0.43152845],
            [0.14556223, -0.36109763, -0.59685141, -0.2864683, 0.27939913, 0.52247876, 0.29215682,
             -0.034210853, -0.3425194, -0.37054124, -0.2212728, 0.030465793, 0.38178125,
             0.43327042, 0.16401099],
            [-0.37678713, -0.60233039, -0.26975626, 0.33015588, 0.55820751],
            [-0.50554806, -0.19420348, 0.26970136, 0.51458734, 0.35447642, -0.065448411,
             -0.41475508, -0.44974503, -0.16494979, 0.23547809],
            [-0.22271222, 0.2996189],
            [0.31664595],
        ],
        'optimizer_variables': [
            ('average', (6, 2), [-0.067705765, 0.49024013, 0.57233095, 0.23174414, -0.32323799,
             -0.53813392, -0.27463555, 0.091439188, 0.4007324, 0.37892115, 0.1622934,
             -0.11814789]),
            ('average', (4, 3), [0.43030125, 0.49029285, 0.1670998, -0.28338885, -0.50603694,
             -0.33921629, 0.075526506, 0.42141992, 0.45108169, 0.15297315, -0.25730467,
             -0.48327428]),
            ('average', (3,), [0.55476904, 0.17689833, -0.40876207]),
            ('average', (3, 5), [0.14467712, -0.33920503, -0.58773613, -0.30149907, 0.2605004,
             0.5269897, 0.31725752, -0.027078792, -0.36196494, -0.38812846, -0.21465737,
             0.054035798, 0.38633269, 0.41282901, 0.15170193]),
            ('average', (5,), [-0.35915893, -0.58820486, -0.27843449, 0.30790794, 0.55706739]),
            ('average', (5, 2), [-0.50147313, -0.19831082, 0.26287436, 0.51500678, 0.3621015,
             -0.062059857, -0.42099577, -0.45597166, -0.16187975, 0.24276063]),
            ('average', (2,), [-0.21944639, 0.27921343]),
            ('average', (), [0.30149174]),
            ('gradient_accumulator', (6, 2), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ('gradient_accumulator', (4, 3), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ('gradient_accumulator', (3,), [0, 0, 0]),
            ('gradient_accumulator', (3, 5), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ('gradient_accumulator', (5,), [0, 0, 0, 0, 0]),
            ('gradient_accumulator', (5, 2), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ('gradient_accumulator', (2,), [0, 0]),
            ('gradient_accumulator', (), [0]),
            ('momentum', (6, 2), [-0.018763695, -0.057287831, -0.011885151, 0.050929304,
             0.039132204, -0.029993659, -0.055178747, 0.00047315657, 0.05543188, 0.029182773,
             -0.039819174, -0.050485939]),
            ('velocity', (6, 2), [0.00042186931, 0.0002347621, 0.00040349062, 0.00030143469,
             0.00030760732, 0.00039908473, 0.00023614017, 0.00042391344, 0.00026505635,
             0.0003495288, 0.00036361895, 0.00025499915]),
            ('momentum', (4, 3), [-0.79804385, -0.46513119, 0.5491997, 0.75895178, -0.14316231,
             -0.83554327, -0.30385143, 0.67298353, 0.66389596, -0.31780076, -0.83391863,
             -0.12834382]),
            ('momentum', (3,), [-0.074730098, 0.048754349, 0.10081355]),
            ('velocity', (3,), [0.00096138928, 0.0013176976, 0.00075808552]),
            ('momentum', (3, 5), [0.02402579, 0.12588009, 0.043319754, -0.10270412, -0.098266244,
             0.050131913, 0.12508669, 0.016789176, -0.11610453, -0.078904815, 0.073890641,
             0.11843614, -0.010527588, -0.12406836, -0.055848703]),
            ('velocity', (3, 5), [0.0020703888, 0.0011788268, 0.0018513838, 0.0015903322,
             0.0013651595, 0.0020121071, 0.0011285556, 0.0019958189, 0.0013930743, 0.001558781,
             0.0018775411, 0.0011655508, 0.0020669838, 0.0012341182, 0.0017600313]),
            ('momentum', (5,), [0.13862626, 0.090335794, -0.090296835, -0.13864438, 0.016122416]),
            ('velocity', (5,), [0.0019167258, 0.0022097216, 0.0025954866, 0.0016413755,
             0.0028907445]),
            ('momentum', (5, 2), [1.5413415, -0.48224825, -1.7993431, -0.48039615, 1.5423324,
             1.3055403, -0.84387136, -1.7570095, -0.09612453, 1.7055831]),
            ('momentum', (2,), [-0.0097218007, -0.19041157]),
            ('velocity', (2,), [0.0049236482, 0.0029973718]),
            ('momentum', (), [-0.18918097]),
            ('velocity', (), [0.0044657541]),
        ],
        'finalized': [
            [-0.067705765, 0.49024013, 0.57233095, 0.23174414, -0.32323799, -0.53813392,
             -0.27463555, 0.091439188, 0.4007324, 0.37892115, 0.1622934, -0.11814789],
            [0.43030125, 0.49029285, 0.1670998, -0.28338885, -0.50603694, -0.33921629, 0.075526506,
             0.42141992, 0.45108169, 0.15297315, -0.25730467, -0.48327428],
            [0.55476904, 0.17689833, -0.40876207],
            [0.14467712, -0.33920503, -0.58773613, -0.30149907, 0.2605004, 0.5269897, 0.31725752,
             -0.027078792, -0.36196494, -0.38812846, -0.21465737, 0.054035798, 0.38633269,
             0.41282901, 0.15170193],
            [-0.35915893, -0.58820486, -0.27843449, 0.30790794, 0.55706739],
            [-0.50147313, -0.19831082, 0.26287436, 0.51500678, 0.3621015, -0.062059857,
             -0.42099577, -0.45597166, -0.16187975, 0.24276063],
            [-0.21944639, 0.27921343],
            [0.30149174],
        ],
    },
    'muon_clip_no_nesterov': {
        'iterations': 3,
        'variables': [
            [-0.05368796, 0.39668521, 0.54296571, 0.2382368, -0.2643511, -0.53617752, -0.3682417,
             0.065852769, 0.4094196, 0.43389529, 0.16575016, -0.19945864],
            [0.41066498, 0.51422077, 0.19913539, -0.28920305, -0.5412541, -0.3518216, 0.10349046,
             0.44841063, 0.43719605, 0.11821181, -0.26109225, -0.45030841],
            [0.74647677, 0.39265251, -0.34455562],
            [0.11535924, -0.34130245, -0.54120886, -0.30057278, 0.18563309, 0.51007396, 0.41901311,
             0.01635702, -0.36624432, -0.45983306, -0.23152499, 0.14618918, 0.42555907, 0.41525623,
             0.095731176],
            [-0.21710677, -0.78696483, -0.49135876, 0.46779689, 0.77511263],
            [-0.51426065, -0.24082991, 0.25318214, 0.55104291, 0.39112622, -0.082045078,
             -0.46160001, -0.45770082, -0.12069242, 0.26642981],
            [-0.43286765, 0.17737451],
            [0.13207324],
        ],
        'optimizer_variables': [
            ('momentum', (6, 2), [0.15393524, -0.091969833, -0.20313889, -0.016708996, 0.19419961,
             0.12060534, -0.12967604, -0.18998173, 0.028036263, 0.20498106, 0.081628121,
             -0.1613102]),
            ('momentum', (4, 3), [-0.04634754, -0.28784999, -0.10765153, 0.23025666, 0.2308383,
             -0.10675871, -0.28795397, -0.04729598, 0.26265073, 0.18781349, -0.16217095,
             -0.27457458]),
            ('momentum', (3,), [-0.032854889, -0.021541519, 0.021330226]),
            ('velocity', (3,), [4.6519031e-05, 3.2841795e-05, 2.9972307e-05]),
            ('momentum', (3, 5), [-0.3781693, 0.14278309, 0.4545579, 0.10040432, -0.40084183,
             -0.31485373, 0.2323958, 0.43918496, 0.0025671124, -0.43781158, -0.23679528,
             0.31112665, 0.40324733, -0.095390275, -0.45428085]),
            ('momentum', (5,), [0.0023656171, 0.04987859, 0.024319313, -0.03686782, -0.044043511]),
            ('velocity', (5,), [4.0563544e-05, 0.00010390419, 5.8391906e-05, 7.3049196e-05,
             9.3442148e-05]),
            ('momentum', (5, 2), [0.52851784, 0.4547703, -0.28521681, -0.60736066, -0.039719701,
             0.58611065, 0.35328755, -0.39710265, -0.56573653, 0.094434962]),
            ('momentum', (2,), [0.059484541, -0.013597528]),
            ('velocity', (2,), [0.00016521927, 7.2417824e-05]),
            ('momentum', (), [0.0071183592]),
            ('velocity', (), [8.9368521e-05]),
        ],
    },
    'sf': {
        'iterations': 4,
        'variables': [
            [-0.07877963, 0.44134051, 0.59655386, 0.22765568, -0.35655546, -0.5523802, -0.33147418,
             0.10659704, 0.38482067, 0.35957313, 0.16005224, -0.07974349],
            [0.43597674, 0.5973627, 0.21130762, -0.41299999, -0.58092183, -0.31031397, 0.17206679,
             0.44809744, 0.33137146, 0.089860164, -0.21710448, -0.3950246],
            [0.59254843, 0.18754011, -0.3610447],
            [0.15820958, -0.37972656, -0.61473686, -0.30417776, 0.29731169, 0.54275727, 0.37375501,
             -0.043539785, -0.35536751, -0.36538053, -0.21047285, 0.010194213, 0.37787366,
             0.44477946, 0.17571169],
            [-0.37589067, -0.62199211, -0.28813481, 0.35532203, 0.5765124],
            [-0.6234929, -0.26461539, 0.29782048, 0.60285938, 0.37929741, -0.17211506, -0.4762581,
             -0.42231464, -0.081854463, 0.2401313],
            [-0.23558469, 0.30667263],
            [0.31000546],
        ],
        'optimizer_variables': [
            ('momentum', (6, 2), [-0.067606851, 0.54547495, 0.62990546, 0.15013218, -0.42779687,
             -0.52190423, -0.2311483, 0.12289363, 0.29250312, 0.30270481, 0.21007593,
             0.010683376]),
            ('velocity', (6, 2), [0.00046613067, 0.00049884384, 0.00053304341, 0.00044171984,
             0.00056402851, 0.00044574219, 0.00052614999, 0.00050663529, 0.00045967131,
             0.00055967184, 0.00043525721, 0.00054847565]),
            ('momentum', (4, 3), [0.52972531, 0.65252095, 0.15906933, -0.50209743, -0.57698053,
             -0.20737469, 0.21167159, 0.3771736, 0.25491115, 0.11286874, -0.11430126,
             -0.37205553]),
            ('velocity', (4, 3), [0.00090604543, 0.0010945123, 0.00085220375, 0.0010789998,
             0.00093263021, 0.000956679, 0.0010618344, 0.00085757277, 0.0011024763, 0.00088702759,
             0.0010113552, 0.0010137341]),
            ('momentum', (3,), [0.66747272, 0.16231343, -0.4632197]),
            ('velocity', (3,), [0.0018245488, 0.0014592595, 0.0016818289]),
            ('momentum', (3, 5), [0.15927097, -0.48092797, -0.65863669, -0.23811731, 0.37732649,
             0.5249508, 0.26990962, -0.071098126, -0.27228141, -0.2990039, -0.24773732,
             -0.087137528, 0.36774561, 0.54124731, 0.22734602]),
            ('velocity', (3, 5), [0.002337944, 0.0023267115, 0.0026483443, 0.0021083697,
             0.0027121329, 0.0022173913, 0.0024615051, 0.0025378903, 0.0021628696, 0.0027291868,
             0.0021336658, 0.0025879391, 0.0024049371, 0.0022642887, 0.0026883304]),
            ('momentum', (5,), [-0.46071404, -0.68673754, -0.24863178, 0.45154807, 0.58458138]),
            ('velocity', (5,), [0.0030341393, 0.0038093429, 0.002971085, 0.0036324689,
             0.003337262]),
            ('momentum', (5, 2), [-0.70696026, -0.25196695, 0.40200138, 0.63492739, 0.30049449,
             -0.24228065, -0.44426656, -0.32260466, -0.066925794, 0.14683616]),
            ('velocity', (5, 2), [0.0050165574, 0.0041784537, 0.0045092362, 0.0047804527,
             0.0039848653, 0.0050771078, 0.0040008342, 0.0047530858, 0.0045401682, 0.0041528102]),
            ('momentum', (2,), [-0.24848606, 0.40135768]),
            ('velocity', (2,), [0.0057944749, 0.0053647924]),
            ('momentum', (), [0.38428247]),
            ('velocity', (), [0.0063452488]),
        ],
    },
    'sf_opts': {
        'iterations': 5,
        'variables': [
            [-0.027837519, 0.42975739, 0.5312559, 0.20466101, -0.28235134, -0.5060252, -0.34378022,
             0.047651887, 0.37379771, 0.42732495, 0.19613041, -0.15748866],
            [0.44231147, 0.52645391, 0.17479673, -0.33375272, -0.52590704, -0.31512168, 0.10674971,
             0.42012066, 0.40438962, 0.13637055, -0.22945221, -0.45387241],
            [0.51833063, 0.14127925, -0.34748974],
            [0.10332237, -0.37580815, -0.54665208, -0.27401525, 0.22096543, 0.49216163, 0.38455704,
             0.01816785, -0.33594963, -0.43558371, -0.2514815, 0.089790449, 0.43330768, 0.44774392,
             0.10729389],
            [-0.39254573, -0.55049628, -0.24706072, 0.27548271, 0.51999807],
            [-0.54497814, -0.21343207, 0.28615725, 0.53787118, 0.35661346, -0.098890565,
             -0.43072987, -0.43425053, -0.13971962, 0.23073655],
            [-0.17772295, 0.31346866],
            [0.33309683],
        ],
        'optimizer_variables': [
            ('momentum', (6, 2), [-0.013625842, 0.47429964, 0.53714323, 0.16841149, -0.30606258,
             -0.48658109, -0.3057138, 0.044337951, 0.33402017, 0.41381413, 0.22500204,
             -0.12471871]),
            ('velocity', (6, 2), [0.030900478, 0.027035041, 0.027783409, 0.030366309, 0.025191423,
             0.031477127, 0.025879717, 0.029186731, 0.029116653, 0.025929734, 0.031461481,
             0.025168218]),
            ('momentum', (4, 3), [0.48552641, 0.54270142, 0.14657727, -0.36760849, -0.51631916,
             -0.27307576, 0.11389539, 0.38672221, 0.38042673, 0.15556155, -0.18918918,
             -0.45626274]),
            ('velocity', (4, 3), [0.056759913, 0.051048737, 0.061585136, 0.04923927, 0.05986093,
             0.054003626, 0.053420089, 0.060277455, 0.04910899, 0.061391883, 0.051510207,
             0.056162316]),
            ('momentum', (3,), [0.54306662, 0.1217885, -0.38825598]),
            ('velocity', (3,), [0.081281506, 0.10166313, 0.084742114]),
            ('momentum', (3, 5), [0.094078578, -0.42031798, -0.55747539, -0.24161358, 0.24925546,
             0.47724, 0.34391534, 0.016926225, -0.29855004, -0.41718042, -0.27617431, 0.052665006,
             0.4409683, 0.49162149, 0.12020458]),
            ('velocity', (3, 5), [0.1464152, 0.13517776, 0.13019729, 0.14997016, 0.12106432,
             0.15082963, 0.12872437, 0.13684256, 0.14503503, 0.12287677, 0.15265864, 0.1237774,
             0.14349154, 0.13858712, 0.12727806]),
            ('momentum', (5,), [-0.43179548, -0.56976205, -0.22250822, 0.31238565, 0.51316226]),
            ('velocity', (5,), [0.2016184, 0.17215683, 0.2132508, 0.17228645, 0.20139624]),
            ('momentum', (5, 2), [-0.57642508, -0.19936869, 0.33001646, 0.54320717, 0.32055223,
             -0.12133037, -0.41046456, -0.39692834, -0.14430784, 0.19017348]),
            ('velocity', (5, 2), [0.22513916, 0.27868113, 0.2424068, 0.25103095, 0.2725254,
             0.22706456, 0.28347987, 0.23225737, 0.26362604, 0.26108968]),
            ('momentum', (2,), [-0.17285278, 0.35534251]),
            ('velocity', (2,), [0.34037787, 0.33352065]),
            ('momentum', (), [0.37038341]),
            ('velocity', (), [0.44140154]),
        ],
    },
    'multi': {
        'iterations': 4,
        'variables': [
            [-0.16240036, 0.42732263, 0.67617446, 0.28881219, -0.41654164, -0.63330203,
             -0.31691003, 0.18959214, 0.43213722, 0.28957835, 0.084612988, -0.04246274],
            [0.45796144, 0.63091838, 0.21467382, -0.39744538, -0.61492705, -0.28341621, 0.21346036,
             0.43888834, 0.32249299, 0.066767804, -0.17377609, -0.35238156],
            [0.64647144, 0.2348104, -0.4361276],
            [0.24222434, -0.34853607, -0.69086981, -0.3725076, 0.3487612, 0.62573886, 0.37762216,
             -0.12459951, -0.41213366, -0.30154032, -0.13111712, -0.013034936, 0.294254,
             0.40335998, 0.24846178],
            [-0.32065931, -0.6870088, -0.36689866, 0.38124451, 0.66027528],
            [-0.5168649, -0.22625028, 0.26485613, 0.54400873, 0.37384823, -0.084320918,
             -0.44347844, -0.44678524, -0.13467906, 0.24975862],
            [-0.43253326, 0.42782718],
            [0.2465899],
        ],
        'optimizer_variables': [
            ('iteration', (), [4]),
            ('momentum', (4, 3), [0.02403228, 0.04126906, -0.0019534314, -0.042314138,
             -0.020684533, 0.031247962, 0.037402123, -0.011237914, -0.043414377, -0.011988675,
             0.03700047, 0.031783838]),
            ('momentum', (3,), [0.055813767, 0.014080071, -0.048280962]),
            ('iteration', (), [4]),
            ('momentum', (5, 2), [0.98422706, 0.43652517, -0.75068712, -0.83814102, 0.30228364,
             0.99986207, 0.23264021, -0.87540007, -0.70097727, 0.50037897]),
            ('iteration', (), [4]),
            ('velocity', (2,), [0.028569963, 0.031116541]),
            ('iteration', (), [4]),
            ('momentum', (6, 2), [0.01245808, -0.024031693, -0.025314981, 0.010488237, 0.030926162,
             0.0060571879, -0.027685583, -0.020868909, 0.016520765, 0.02970748, -0.00062733237,
             -0.030043101]),
            ('velocity', (6, 2), [2.9133544e-05, 3.1178144e-05, 3.3315642e-05, 2.7607844e-05,
             3.525224e-05, 2.7859245e-05, 3.28848e-05, 3.1665113e-05, 2.8729828e-05, 3.4979937e-05,
             2.7203925e-05, 3.4280169e-05]),
            ('momentum', (3, 5), [-0.035950404, 0.046255283, 0.06069687, -0.013782598,
             -0.068070523, -0.022634976, 0.055960871, 0.052573912, -0.027833952, -0.067465007,
             -0.0082596727, 0.063046105, 0.041989192, -0.040581986, -0.063700452]),
            ('velocity', (3, 5), [0.00014612338, 0.00014542136, 0.00016552364, 0.00013177481,
             0.00016951052, 0.00013858876, 0.00015384608, 0.00015862018, 0.00013518109,
             0.00017057639, 0.00013335585, 0.00016174828, 0.0001503105, 0.00014151986,
             0.00016802282]),
            ('momentum', (5,), [0.034708411, 0.079409495, 0.0077754855, -0.075249627,
             -0.048033863]),
            ('velocity', (5,), [0.00018963615, 0.00023808701, 0.0001856952, 0.00022703224,
             0.00020858158]),
            ('momentum', (), [-0.035209555]),
            ('velocity', (), [0.00039658311]),
        ],
    },
}

FIT = {
    'muon': {
        'weights': [
            [0.059842668, 0.37252328, 0.44332787, 0.24760099, -0.27032664, -0.48916119,
             -0.39349744, -0.048395514, 0.43786585, 0.43860278, 0.16826908, -0.16401742],
            [0.41368097, 0.39906129, 0.26643658],
            [0.4118273, 0.25400966, -0.32429007, -0.35387149, -0.26419708, 0.27199984],
            [0.039157193, -0.20941254],
        ],
        'loss': [0.65756249, 0.56008565, 0.51882422], 'evaluate': 0.49856278,
    },
    'sf': {
        'weights': [
            [0.11211225, 0.27687848, 0.37360635, 0.33363548, -0.33694318, -0.47103646, -0.34448746,
             -0.073966593, 0.53617245, 0.46025008, 0.17110468, -0.099706545],
            [0.40005028, 0.45925176, 0.22855976],
            [0.41935596, 0.17000596, -0.33720565, -0.45097098, -0.33090371, 0.17507772],
            [0.037095353, -0.29587641],
        ],
        'loss': [0.60961717, 0.54648286, 0.51868695], 'evaluate': 0.49756235,
    },
    'multi': {
        'weights': [
            [0.18651856, 0.20768216, 0.29418987, 0.38821355, -0.41879517, -0.43867975, -0.32452071,
             -0.15209106, 0.64190125, 0.4562459, 0.10017031, 0.0090292506],
            [0.42789465, 0.39877665, 0.22787873],
            [0.35651386, 0.19219981, -0.36049014, -0.4247148, -0.32998097, 0.13449264],
            [-0.099280827, -0.1921141],
        ],
        'loss': [0.63876688, 0.5358597, 0.50496644], 'evaluate': 0.47590122,
    },
}


def assert_values(got, want, atol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64).ravel(), w, rtol=1e-6, atol=atol)


# Keras' slot names as gradtape's Adam names them
ALIASES = {"momentum": ("momentum", "m"), "velocity": ("velocity", "v")}
# the Adam of "multi" keeps its betas in float64 (Keras casts them to float32): 1.5e-6 apart
ATOL = {"multi": 3e-6}


@pytest.mark.parametrize("kind", ["cpu", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_optimizers_follow_keras(name, kind):
    """Every variable and every optimizer variable, in Keras' order, as TensorFlow gives."""
    with gt.device(resolve_device(kind)):
        opt, variables = run(name)
        want = EXPECTED[name]
        atol = ATOL.get(name, 1e-6)
        assert int(opt.iterations.numpy()) == want["iterations"]
        assert_values([v.numpy() for v in variables], want["variables"], atol)
        own = opt.variables
        assert own[0] is opt._iterations
        listed = want["optimizer_variables"]
        assert [(tuple(v.shape)) for v in own[1:]] == [shape for _, shape, _ in listed]
        for v, (slot, _, _) in zip(own[1:], listed):
            names = ALIASES.get(slot, (slot,))
            assert (v.name.split(":")[0].endswith("/iteration") if slot == "iteration"
                    else any(f"/{n}/" in v.name for n in names)), (v.name, slot)
        assert_values([v.numpy() for v in own[1:]], [w for _, _, w in listed], atol)
        if name != "multi":
            opt.finalize_variable_values(variables)
            assert_values([v.numpy() for v in variables],
                          want.get("finalized", want["variables"]), atol)


def test_muon_keeps_a_velocity_only_for_adamw_variables():
    """2-D variables not excluded take the Muon step and have a momentum only; embeddings (by
    path, any case), non-2-D variables and ``exclude_layers`` matches (re.search) take
    AdamW with a velocity; ``get_slot`` and checkpoints say so."""
    opt, variables = run("muon_opts")
    adamw = [opt._should_use_adamw(v) for v in variables]
    assert adamw == [False, False, True, False, True, True, True, True]
    opt, variables = run("muon")
    assert [opt._should_use_adamw(v) for v in variables] == \
        [True, False, True, False, True, False, True, True]
    kernel = variables[1]
    assert opt.get_slot(kernel, "momentum").shape == (4, 3)
    with pytest.raises(KeyError, match=r"variable dense/kernel has no slot 'velocity'; its "
                                       r"slots are \['momentum'\]"):
        opt.get_slot(kernel, "velocity")
    assert "not kept for the variable dense/kernel" in \
        opt._check_slot_restore(kernel, "velocity", (4, 3), np.float32)
    assert opt._check_slot_restore(variables[0], "velocity", (6, 2), np.float32) is None
    emb = gt.Variable(np.ones((3, 2), np.float32), name="my_Embedding_table")
    assert opt._should_use_adamw(emb)
    assert optimizers.Muon(exclude_embeddings=False)._should_use_adamw(emb) is False


def test_muon_weight_decay_uses_each_kind_of_variable_its_rate():
    """TensorFlow: with zero gradients only the decay moves the variables: a Muon variable by
    ``weight_decay * lr``, an AdamW one by ``adam_weight_decay * lr`` (not scaled by
    adam_lr_ratio), an excluded one not at all; ``weight_decay=None`` still decays the AdamW
    ones."""
    k = gt.Variable(np.ones((2, 3), np.float32), name="k")
    b = gt.Variable(np.ones((3,), np.float32), name="b")
    e = gt.Variable(np.ones((2, 3), np.float32), name="skip/k")
    opt = optimizers.Muon(0.5, weight_decay=0.1, adam_weight_decay=0.3, adam_lr_ratio=0.1,
                          exclude_layers=["xyz"])
    opt.exclude_from_weight_decay(var_names=["skip"])
    zeros = [gt.zeros_like(v) for v in (k, b, e)]
    opt.apply_gradients(zip(zeros, [k, b, e]))
    np.testing.assert_allclose(k.numpy(), np.full((2, 3), 0.95), rtol=1e-7)
    np.testing.assert_allclose(b.numpy(), np.full((3,), 0.85), rtol=1e-7)
    np.testing.assert_array_equal(e.numpy(), np.ones((2, 3)))
    opt = optimizers.Muon(0.5, weight_decay=None, adam_weight_decay=0.3)
    opt.apply_gradients(zip(zeros[:2], [k, b]))
    np.testing.assert_allclose(k.numpy(), np.full((2, 3), 0.95), rtol=1e-7)
    np.testing.assert_allclose(b.numpy(), np.full((3,), 0.85 * 0.85), rtol=1e-7)


def test_schedule_free_momentum_starts_at_the_variable_and_the_variables_keep_y():
    """``momentum`` is made as a copy of the variable's value (Keras' build, here before the
    variable is set to [3, 4]); TensorFlow: after a first step (weight 1/t = 1) the variable
    and the momentum are both [0.5, 1.5]. ``finalize_variable_values`` keeps ``y`` (Keras
    3.15 has no train/eval swap)."""
    v = gt.Variable(np.array([1.0, 2.0], np.float32), name="v")
    opt = optimizers.ScheduleFreeAdamW(0.5)
    opt.build([v])
    np.testing.assert_array_equal(opt.get_slot(v, "momentum").numpy(), [1.0, 2.0])
    v.assign([3.0, 4.0])
    opt.apply_gradients([(gt.constant([1.0, 6.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5], rtol=1e-6)
    np.testing.assert_allclose(opt.get_slot(v, "momentum").numpy(), [0.5, 1.5], rtol=1e-6)
    opt.finalize_variable_values([v])
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5], rtol=1e-6)


@pytest.mark.parametrize("make", [lambda: optimizers.Muon(0.05, exclude_layers=["s"]),
                                  lambda: optimizers.ScheduleFreeAdamW(0.05, warmup_steps=2,
                                                                       weight_decay=0.1)],
                         ids=["muon", "schedule_free"])
def test_new_optimizers_in_a_captured_step(make):
    """On the strict device a captured step (step count read on the device) gives the eager
    CPU numbers, float64 and 0-d variables included."""
    def go(dev, captured):
        with gt.device(dev):
            w = gt.Variable(np.linspace(-1, 1, 6).reshape(3, 2), name="w")
            s = gt.Variable(np.float64(0.5), name="s")
            opt = make()

            def step(x):
                with gt.GradientTape() as tape:
                    loss = gt.reduce_sum(gt.tanh(w * x) * w) + s * s * 3.0
                opt.apply_gradients(zip(tape.gradient(loss, [w, s]), [w, s]))
                return loss
            fn = capture(step) if captured else step
            losses = [float(fn(gt.constant(np.full((3, 2), k, np.float64))))
                      for k in (1.0, 0.5, 2.0, -1.0, 1.5)]
            return losses, w.numpy(), float(s.numpy()), int(opt.iterations.numpy())
    got, want = go("strict:0", True), go("cpu", False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
    assert got[2] == pytest.approx(want[2], rel=1e-12) and got[3] == want[3] == 5


@pytest.mark.parametrize("name", ["muon_opts", "sf_opts", "multi"])
def test_resume_from_a_checkpoint(name, tmp_path):
    """Slots (Muon's velocity only where it has one; each optimizer's of a MultiOptimizer,
    with its step count) and the step count are saved: two steps, a save, two steps on a
    fresh optimizer restored from it = four steps."""
    make, _ = CASES[name]
    variables = make_variables()
    opt = make()
    ckpt = gt.train.Checkpoint(optimizer=opt, **{f"v{i}": v for i, v in enumerate(variables)})

    def steps(o, ks):
        for k in ks:
            o.apply_gradients(zip(gradients(k, variables), variables))
    steps(opt, range(2))
    path = ckpt.save(str(tmp_path / "ckpt"))
    steps(opt, range(2, 4))
    uninterrupted = [v.numpy() for v in variables]
    fresh = make()
    gt.train.Checkpoint(optimizer=fresh,
                        **{f"v{i}": v for i, v in enumerate(variables)}).restore(path)
    assert int(fresh.iterations.numpy()) == 2
    steps(fresh, range(2, 4))
    for got, want in zip(variables, uninterrupted):
        np.testing.assert_array_equal(got.numpy(), want)
    if name == "multi":
        assert [int(o.iterations.numpy()) for o in fresh.optimizers] == [4, 4, 4, 4]
        np.testing.assert_allclose(variables[0].numpy().ravel(),
                                   EXPECTED["multi"]["variables"][0], rtol=1e-6, atol=3e-6)


# --- OptimizerMap and MultiOptimizer ------------------------------------------------------------

def test_optimizer_map_exact_key_first_then_one_full_regex_match():
    """Keras: an exact key wins, else the one key that fully matches (re.fullmatch), else the
    default; several matching keys are an error."""
    adam, sgd, rms = optimizers.Adam(), optimizers.SGD(), optimizers.RMSprop()
    mapping = optimizers.OptimizerMap(rms)
    mapping["encoder/layer_0/dense"] = adam
    mapping["encoder/.*"] = sgd
    mapping["decoder"] = adam
    assert mapping["decoder"] is adam and mapping["encoder/layer_0/dense"] is adam
    assert mapping["encoder/layer_0/attention/query"] is sgd
    assert mapping["decoder/layer_0/dense"] is rms and mapping["encoder"] is rms
    assert mapping(gt.Variable(1.0, name="encoder/w")) is sgd
    assert len(mapping) == 3 and list(mapping) == ["encoder/layer_0/dense", "encoder/.*",
                                                   "decoder"]
    assert mapping.default_optimizer is rms
    del mapping["decoder"]
    assert mapping["decoder"] is rms and len(mapping) == 2
    two = optimizers.OptimizerMap(rms, {"d.*": adam, ".*e.*": sgd})
    with pytest.raises(ValueError, match="multiple optimizers assigned to variable dense"):
        two["dense"]
    assert two["ee"] is sgd and two["zz"] is rms


def test_optimizer_map_refuses_bad_keys_and_optimizers():
    """Keras' errors: a key set twice, a key not a string, not an optimizer, a
    LossScaleOptimizer or a MultiOptimizer as a value, a bad default or map."""
    mapping = optimizers.OptimizerMap(optimizers.SGD(), {"a": optimizers.Adam()})
    with pytest.raises(ValueError, match="'a' already exists in the OptimizerMap"):
        mapping["a"] = optimizers.SGD()
    with pytest.raises(ValueError, match="keys must be strings, got 3"):
        mapping[3] = optimizers.SGD()
    with pytest.raises(ValueError, match="expected a gradtape optimizer"):
        mapping["b"] = 3
    with pytest.raises(ValueError, match="a LossScaleOptimizer cannot be used inside"):
        mapping["b"] = optimizers.LossScaleOptimizer(optimizers.SGD())
    with pytest.raises(ValueError, match="a MultiOptimizer cannot be used inside"):
        mapping["b"] = optimizers.MultiOptimizer(mapping)
    assert list(mapping) == ["a"]
    with pytest.raises(TypeError, match="default_optimizer must be a gradtape optimizer"):
        optimizers.OptimizerMap(3)
    with pytest.raises(TypeError, match="optimizer_map must be a dict"):
        optimizers.OptimizerMap(optimizers.SGD(), [1])
    with pytest.raises(TypeError, match="optimizer_map must be an OptimizerMap or a callable"):
        optimizers.MultiOptimizer(3)
    sgd = optimizers.SGD()
    bad = optimizers.MultiOptimizer(lambda v: optimizers.LossScaleOptimizer(sgd))
    with pytest.raises(ValueError, match="the optimizer of w: a LossScaleOptimizer cannot"):
        bad.apply([gt.constant([1.0])], [gt.Variable([1.0], name="w")])
    assert not bad.built


def test_multi_optimizer_learning_rate_iterations_and_loss_scale_factor():
    """Keras: no learning rate (reading or setting it raises), its own step count, the
    optimizers listed map values first then the default, loss_scale_factor set on them."""
    adam, sgd = optimizers.Adam(loss_scale_factor=8.0), optimizers.SGD(0.5)
    opt = optimizers.MultiOptimizer(optimizers.OptimizerMap(sgd, {"w.*": adam}),
                                    loss_scale_factor=2.0)
    assert opt.optimizers == [adam, sgd]
    assert adam.loss_scale_factor == sgd.loss_scale_factor == 2.0
    with pytest.raises(AttributeError, match="Learning rate cannot be accessed on a Multi"):
        opt.learning_rate
    with pytest.raises(AttributeError, match="Learning rate cannot be set on a Multi"):
        opt.learning_rate = 0.1
    opt.loss_scale_factor = None
    assert adam.loss_scale_factor is None and sgd.loss_scale_factor is None
    w, w2, q = (gt.Variable([1.0, 1.0], name=n) for n in ("w", "w2", "q"))
    one = gt.constant([1.0, 1.0])
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['w'\]"):
        opt.apply([None, one, one], [w, w2, q])
    np.testing.assert_array_equal(q.numpy(), [0.5, 0.5])
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])
    assert int(opt.iterations.numpy()) == 1
    opt.apply([one, one, one])     # (the built variables)
    assert [int(o.iterations.numpy()) for o in opt.optimizers] == [2, 2]
    assert int(opt.iterations.numpy()) == 2 and opt.built
    assert [tuple(v.shape) for v in opt.variables] == [(), (), (2,), (2,), (2,), (2,), ()]


def test_multi_optimizer_refuses_other_variables_and_changes_nothing():
    """Keras: the gradients must match the variables it was built with one to one (an
    unknown variable, another count, apply(grads) before any build are errors); a step
    where one optimizer would get no gradient at all fails before any update."""
    opt = optimizers.MultiOptimizer(optimizers.OptimizerMap(optimizers.SGD(0.5),
                                                            {"w": optimizers.Adam(0.1)}))
    with pytest.raises(ValueError, match="must already be built"):
        opt.apply([gt.constant([1.0])])
    w, q, u = (gt.Variable([1.0], name=n) for n in "wqu")
    one = gt.constant([1.0])
    opt.apply([one, one], [w, q])
    before = [v.numpy() for v in opt.variables] + [w.numpy(), q.numpy()]
    with pytest.raises(ValueError, match=r"got 1 gradients for 2 variables"):
        opt.apply([one], [w])
    with pytest.raises(ValueError, match=r"unknown variables \['u'\]"):
        opt.apply([one, one], [w, u])
    with pytest.raises(ValueError, match="no gradients provided for any variable of the "
                                         r"optimizer Adam: \['w'\]"):
        opt.apply([None, one], [w, q])
    with pytest.raises(ValueError, match="has shape"):
        opt.apply([one, gt.constant([1.0, 2.0])], [w, q])
    after = [v.numpy() for v in opt.variables] + [w.numpy(), q.numpy()]
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="not built yet"):
        optimizers.MultiOptimizer(lambda v: optimizers.SGD()).finalize_variable_values([w])


def test_multi_optimizer_set_weights_and_callable_map():
    """A callable map is asked once per variable at build; set_weights fills
    ``variables`` in order."""
    asked = []
    first, second = optimizers.SGD(0.1, momentum=0.5), optimizers.Adam(0.1)

    def choose(variable):
        asked.append(variable.path)
        return first if variable.path.startswith("a") else second
    opt = optimizers.MultiOptimizer(choose)
    a, b = gt.Variable([1.0, 2.0], name="a"), gt.Variable([[3.0]], name="b")
    opt.build([a, b])
    opt.apply([gt.constant([1.0, 1.0]), gt.constant([[1.0]])], [a, b])
    assert asked == ["a", "b"] and opt.optimizers == [first, second]
    shapes = [tuple(v.shape) for v in opt.variables]
    assert shapes == [(), (), (2,), (), (1, 1), (1, 1)]
    opt.set_weights([np.int64(7), np.int64(3), np.full(2, 0.25, np.float32), np.int64(5),
                     np.ones((1, 1), np.float32), np.full((1, 1), 2.0, np.float32)])
    assert int(opt.iterations.numpy()) == 7 and int(first.iterations.numpy()) == 3
    np.testing.assert_array_equal(first.get_slot(a, "momentum").numpy(), [0.25, 0.25])
    np.testing.assert_array_equal(opt.get_slot(b, "v").numpy(), [[2.0]])


# --- configs ---------------------------------------------------------------------------------

BASE_KEYS = {"name", "learning_rate", "weight_decay", "clipnorm", "global_clipnorm", "clipvalue",
             "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
             "gradient_accumulation_steps"}


def test_configs_match_keras_and_round_trip():
    """Keras 3.15's keys and default values (its names aside: gradtape names an optimizer by
    its class), and serialize/deserialize round trips."""
    muon = optimizers.Muon().get_config()
    want = {"learning_rate": 0.001, "weight_decay": 0.004, "clipnorm": None,
            "global_clipnorm": None, "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
            "ema_overwrite_frequency": None, "loss_scale_factor": None,
            "gradient_accumulation_steps": None, "adam_beta_1": 0.9, "adam_beta_2": 0.999,
            "epsilon": 1e-07, "exclude_layers": [], "muon_a": 3.4445, "muon_b": -4.775,
            "muon_c": 2.0315, "adam_lr_ratio": 1, "momentum": 0.95, "ns_steps": 5,
            "nesterov": True, "exclude_embeddings": True, "adam_weight_decay": 0.004,
            "rms_rate": 0.2}
    assert muon.pop("name") == "Muon"
    assert muon["learning_rate"] == pytest.approx(0.001)
    muon["learning_rate"] = 0.001
    assert muon == want and list(muon) == list(want)
    sf = optimizers.ScheduleFreeAdamW().get_config()
    assert set(sf) == BASE_KEYS | {"beta_1", "beta_2", "epsilon", "warmup_steps"}
    assert (sf["learning_rate"], sf["beta_1"], sf["beta_2"], sf["epsilon"], sf["warmup_steps"],
            sf["weight_decay"]) == (pytest.approx(0.0025), 0.9, 0.999, 1e-8, 0, None)
    for opt in (muon_opts(), schedule_free_opts()):
        again = optimizers.deserialize(optimizers.serialize(opt))
        assert type(again) is type(opt) and again.get_config() == opt.get_config()
    assert isinstance(optimizers.get("muon"), optimizers.Muon)
    assert isinstance(optimizers.get("ScheduleFreeAdamW"), optimizers.ScheduleFreeAdamW)
    assert gt.keras.optimizers.Muon is optimizers.Muon
    assert gt.keras.optimizers.OptimizerMap is optimizers.OptimizerMap


def test_multi_optimizer_config_is_keras_and_round_trips():
    """Keras: ``optimizer_map`` serialized as an OptimizerMap (its default and map entries
    serialized optimizers), ``loss_scale_factor`` and ``name``; a function map is named
    (and found again when registered or passed in custom_objects)."""
    opt = multi()
    config = opt.get_config()
    assert list(config) == ["optimizer_map", "loss_scale_factor", "name"]
    assert config["loss_scale_factor"] == 4.0 and config["name"] == "MultiOptimizer"
    mapping = config["optimizer_map"]
    assert (mapping["module"], mapping["class_name"], mapping["registered_name"]) == \
        ("keras.optimizers", "OptimizerMap", None)
    inner = mapping["config"]
    assert inner["default_optimizer"]["class_name"] == "Adam"
    assert list(inner["optimizer_map"]) == ["dense/.*", "out/kernel", "out/.*"]
    assert inner["optimizer_map"]["out/kernel"]["class_name"] == "Muon"
    assert inner["optimizer_map"]["dense/.*"]["config"]["loss_scale_factor"] == 4.0
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again, optimizers.MultiOptimizer) and again.get_config() == config
    assert [type(o).__name__ for o in again.optimizers] == ["SGD", "Muon", "RMSprop", "Adam"]

    def chooser(variable):
        return optimizers.SGD()
    config = optimizers.MultiOptimizer(chooser).get_config()
    assert config["optimizer_map"]["class_name"] == "function"
    assert config["optimizer_map"]["config"] == "chooser"
    with pytest.raises(TypeError, match="could not locate function 'chooser'"):
        optimizers.MultiOptimizer.from_config(config)
    again = optimizers.MultiOptimizer.from_config(config, custom_objects={"chooser": chooser})
    assert again._optimizer_map is chooser


def test_muon_and_schedule_free_refuse_bad_arguments():
    with pytest.raises(TypeError, match="exclude_layers must be a list of regular expressions"):
        optimizers.Muon(exclude_layers="out")
    with pytest.raises(ValueError, match="invalid regular expression"):
        optimizers.Muon(exclude_layers=["("])
    with pytest.raises(ValueError, match="ns_steps must be an integer >= 0"):
        optimizers.Muon(ns_steps=-1)
    with pytest.raises(ValueError, match=r"adam_beta_2 must be in \[0, 1\)"):
        optimizers.Muon(adam_beta_2=1.0)
    with pytest.raises(ValueError, match="adam_weight_decay must be a number >= 0"):
        optimizers.Muon(adam_weight_decay=-1)
    with pytest.raises(ValueError, match=r"beta_1 must be in \(0, 1\]"):
        optimizers.ScheduleFreeAdamW(beta_1=0.0)
    with pytest.raises(ValueError, match="warmup_steps must be an integer >= 0"):
        optimizers.ScheduleFreeAdamW(warmup_steps=1.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta_1'"):
        optimizers.Muon(beta_1=0.9)


# --- fit ---------------------------------------------------------------------------------------

def fit_model(opt):
    keras = gt.keras
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="dense"),
                              keras.layers.Dense(2, name="out")])
    for i, v in enumerate(model.trainable_variables):
        n = int(np.prod(v.shape))
        v.assign((np.sin(np.arange(n) * 0.9 + i) * 0.5).reshape(tuple(v.shape))
                 .astype(np.float32))
    model.compile(opt, "mse")
    x = np.sin(np.arange(32).reshape(8, 4) * 0.7).astype(np.float32)
    y = np.cos(np.arange(16).reshape(8, 2) * 0.3).astype(np.float32)
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    return model, history, model.evaluate(x, y, verbose=0)




@pytest.mark.parametrize("name", sorted(FIT))
def test_fit_follows_keras(name):
    """``model.fit`` then ``evaluate`` (TensorFlow run eagerly: its traced step re-runs
    ScheduleFreeAdamW's build, so only the eager run is the algorithm): weights, the
    epochs' losses and the evaluation loss."""
    make = {"muon": lambda: optimizers.Muon(0.05, exclude_layers=["out"]),
            "sf": lambda: optimizers.ScheduleFreeAdamW(0.05, warmup_steps=2),
            "multi": lambda: optimizers.MultiOptimizer(
                lambda v, c=[optimizers.SGD(0.1, momentum=0.5), optimizers.Adam(0.05)]:
                c[0] if "out" in v.path else c[1])}[name]
    model, history, loss = fit_model(make())
    want = FIT[name]
    atol = 3e-6 if name == "multi" else 1e-6
    assert_values([v.numpy() for v in model.trainable_variables], want["weights"], atol)
    np.testing.assert_allclose(history.history["loss"], want["loss"], rtol=1e-5)
    assert loss == pytest.approx(want["evaluate"], rel=1e-5)


@pytest.mark.parametrize("kind", ["cpu", "strict"])
def test_loss_scale_optimizer_around_a_multi_optimizer_skips_every_count(kind):
    """A non-finite step is skipped whole: on the host it is not taken, on a device it is
    undone, the step counts of the MultiOptimizer's optimizers included."""
    with gt.device(resolve_device(kind)):
        adam, sgd = optimizers.Adam(0.1), optimizers.SGD(0.1, momentum=0.5)
        opt = optimizers.LossScaleOptimizer(
            optimizers.MultiOptimizer(optimizers.OptimizerMap(sgd, {"a": adam})))
        a, b = gt.Variable([1.0, 2.0], name="a"), gt.Variable([1.0], name="b")
        opt.apply([gt.constant([1.0, 1.0]), gt.constant([1.0])], [a, b])
        before = [v.numpy() for v in opt.variables] + [a.numpy(), b.numpy()]
        opt.apply([gt.constant([np.inf, 1.0]), gt.constant([1.0])], [a, b])
        after = [v.numpy() for v in opt.variables] + [a.numpy(), b.numpy()]
        assert [int(o.iterations.numpy()) for o in (opt, adam, sgd)] == [1, 1, 1]
        assert float(opt.dynamic_scale.numpy()) == 2.0 ** 14
        for x, y in zip(before[2:], after[2:]):     # (the scale and its counter changed)
            np.testing.assert_array_equal(x, y)
