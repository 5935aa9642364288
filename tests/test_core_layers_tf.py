"""Core Keras layers (Dense, convolutions, Embedding, normalization, Flatten, Dropout,
InputLayer, Model/Layer bookkeeping) and ``tf.nn`` ops against values TensorFlow 2.21 /
Keras 3.15 gives for the same inputs and weights (recorded in ``REF``)."""
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import InvalidArgumentError
from gradtape.ops import nn as onn

keras = gt.keras
L = keras.layers


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def C(a):
    return gt.constant(np.asarray(a, np.float32))


def wts(n):
    return gt.constant(np.linspace(-1.0, 1.0, n, dtype=np.float32))


def close(got, ref, rtol=1e-4, atol=1e-5):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    np.testing.assert_allclose(got, np.asarray(ref, np.float64), rtol=rtol, atol=atol)


# TensorFlow 2.21 / Keras 3.15's results (rounded to 6 decimals), see each test
REF = {
    'grouped_conv2d0':
        [[[[-2.149727, -8.346365, -1.407785, 0.389559], [3.369025, -5.672997, 0.998908, -8.717136],
           [7.460653, 1.556569, -2.131597, 1.008488], [0.685949, 0.497905, 3.722395, -1.50549],
           [-3.039003, -4.293622, 2.144831, -0.386663]],
          [[0.229709, 1.481696, 0.022567, 0.816423], [-1.22287, -3.707174, -4.714748, -1.640454],
           [-1.832167, -2.255692, 1.161828, -0.623318], [3.543858, -3.522492, 1.741943, -3.420314],
           [-1.102478, -4.75007, 0.377695, -2.699966]]]],
    'grouped_conv2d1':
        [[[[0.482648, -1.200979, 1.236485, -0.595096], [0.389037, -1.846907, 1.428944, -1.074159],
           [0.251969, -1.261799, 0.823207, -0.757191], [0.114902, -0.676691, 0.217471, -0.440223],
           [0.013198, -0.225742, 0.102903, -0.220423]],
          [[-1.542668, 1.839474, -0.802902, 0.705747], [-3.171941, 0.963084, 0.983462, -0.323214],
           [-2.429878, 0.526252, 0.792558, -0.219021], [-1.687815, 0.089419, 0.601655, -0.114828],
           [-0.98008, -0.187313, 0.441151, -0.141617]],
          [[-2.124714, -0.818861, 0.089884, -0.222555],
           [-1.529293, -1.304101, 2.635263, -1.124354], [-1.36106, -0.084503, 0.922042, -0.334612],
           [-1.192826, 1.135096, -0.791179, 0.455131], [-0.685773, -0.89628, 1.03645, 0.49712]],
          [[0.070867, -0.761083, 0.133375, 0.109439], [0.538374, -1.221078, 0.028945, 0.197752],
           [1.280437, -1.657911, -0.161959, 0.301945], [2.0225, -2.094743, -0.352862, 0.406138],
           [2.963647, 0.945697, -0.942351, -0.615702]]]],
    'grouped_conv2d2':
        [[[[-0.143032, -0.097963, 1.1297, 1.155513], [-0.969297, -0.907697, -1.793977, -1.943594]],
          [[0.443345, 0.537346, -0.098112, -0.176436],
           [-1.180181, -1.134608, -1.473525, -1.652429]],
          [[0.263519, 0.402739, 0.57397, 0.482395], [-0.494949, -0.456473, -2.267395, -2.331022]]],
         [[[-0.065482, -0.32563, -0.507332, -0.270653], [1.541946, 1.588518, 0.439912, 0.459711]],
          [[0.775264, 0.471053, -1.571299, -1.331674], [0.397621, 0.283685, -0.070635, -0.068108]],
          [[2.011633, 1.704229, -1.178567, -0.954935], [0.570188, 0.456397, 0.944055, 0.951743]]],
         [[[0.673855, 0.673843, -0.125584, -0.065915], [0.234013, 0.223858, 1.213942, 1.042605]],
          [[0.509765, 0.556649, -0.268204, -0.272573], [0.278233, 0.267049, 1.923434, 1.736]],
          [[-1.156889, -1.047064, -0.33016, -0.330834],
           [-0.500409, -0.476555, 1.63152, 1.492535]]]],
    'grouped_conv1d':
        [[[-0.602308, -0.466022, -4.302669, -2.024261, -1.325885, -1.033473, 0.700286, -0.606869],
          [1.686458, -0.130099, 0.423476, 5.093694, 3.387094, 0.125785, 0.67112, -0.828854],
          [1.016301, 0.08316, 5.371309, 1.137756, -0.704714, -0.539878, 0.803364, -0.932781],
          [-0.591718, 0.165667, -1.167596, -0.816213, 2.035191, 0.494471, 0.541978, -0.508185],
          [-0.353142, -0.078339, -0.033031, 2.278394, -1.399458, 0.273318, 0.878935, -1.16784]],
         [[0.510861, -0.026941, 1.13521, 1.935557, -3.456941, -0.462648, 0.603671, -0.697241],
          [-1.260539, 0.255927, 1.804177, 1.575087, 1.484011, 0.051336, -0.818667, 1.466205],
          [3.972985, -0.837965, 1.205938, 1.991734, -0.454082, -0.49042, 2.073658, -3.65935],
          [1.398794, 0.560966, 1.864068, 1.776989, 1.434325, -0.222081, 2.647524, -2.67286],
          [-0.222199, -0.041984, 1.153098, 0.378653, 1.175116, 0.719938, -0.444867, 1.52372]]],
    'conv2d_groups':
        [[[[0.990234, 1.061457, 1.681089, -0.368946, -0.066046, 0.521748],
           [0.879666, 1.654486, 0.605758, -0.8474, 0.75826, 0.299487],
           [0.589881, 1.033852, 0.463686, 0.514753, -0.200668, -0.090547]],
          [[0.615125, 0.966205, 0.460105, 0.101386, -0.664526, 2.047996],
           [0.383986, 0.559433, 1.475461, -0.650769, -1.166363, 0.945463],
           [1.021539, 1.389509, -0.67617, -1.598213, 0.086067, -0.92768]],
          [[-0.478579, 0.343513, 0.604577, -0.447289, 0.076096, -0.140498],
           [-0.240875, 0.454897, 0.584457, -0.223647, -0.316195, -0.323912],
           [-0.039738, 0.642527, 0.950481, -0.370617, -0.260322, -0.207041]]],
         [[[1.261811, 1.298657, 1.250299, -0.071517, 0.375817, 0.463024],
           [0.210531, 0.453156, 0.820125, -0.086298, 0.560549, 0.418554],
           [0.167428, 0.792645, 0.799907, -0.040303, -0.078281, -0.384849]],
          [[-0.596358, 0.620869, 1.620038, 1.008833, 0.831766, -0.55064],
           [-0.752519, 0.091275, -0.197306, -0.676892, -0.284723, 0.266054],
           [-0.721885, 0.270098, 0.515123, -0.560268, -0.126696, -0.688895]],
          [[-0.691345, 0.32224, 0.150385, 0.035188, -0.037605, -0.117921],
           [-0.416085, 0.396814, 0.018347, 0.158635, -1.076451, -0.959093],
           [-0.585819, 0.283687, 1.026224, -0.396482, -0.319986, -0.176683]]]],
    'conv1d_groups':
        [[[-0.772947, 1.858197, -0.226119, 1.145857], [-0.481905, 1.596714, -1.95304, 0.796813],
          [-1.221353, 0.620261, -0.126079, 0.693453], [-1.283872, 0.716642, -2.45216, 0.351636],
          [-0.85986, 1.907962, -2.808708, 0.996187], [0.889465, -0.076006, -2.058391, -0.30299],
          [-0.223233, -0.662749, -0.66506, 0.71042]],
         [[0.259809, 1.00926, -1.090099, 0.810973], [0.556876, 0.669419, -0.821243, 0.702278],
          [-0.131843, 0.68133, -1.185403, 0.704557], [-1.90567, 2.478511, -0.453858, 1.175285],
          [-0.755304, 2.730632, -1.206069, 0.854083], [0.850803, -1.057542, -0.616056, 1.204749],
          [-0.737935, 0.007354, 0.35859, 0.76389]]],
    'conv3d_groups':
        [[[[[1.05321, 2.270483, 0.733978, -1.381763], [0.540232, 2.386339, 1.169078, -1.158898],
            [-0.832526, -0.001048, 0.773708, -0.198879]],
           [[-1.629858, -0.618928, -0.033016, -0.872627],
            [-2.050929, -0.08638, 0.488331, -0.223902],
            [-0.593254, -0.831415, 0.118513, -0.549305]]],
          [[[-0.211952, 2.944737, 0.558517, -0.105371],
            [-1.891581, -4.421572, 0.630081, -0.997677],
            [-1.800463, -1.89646, 0.61079, -0.600782]],
           [[-2.574607, -3.32196, 0.936252, -0.254369], [-1.851297, -3.813155, 0.200924, 0.012831],
            [-0.541589, 0.619678, 0.207681, -0.439237]]],
          [[[-0.047966, -3.617988, 0.385552, -1.072051],
            [-1.971927, -1.302512, 0.249529, -0.651045],
            [-0.170496, 0.655974, 0.249737, -0.656679]],
           [[-1.262073, -1.592541, 0.916706, -0.991834],
            [-1.120155, 1.021443, 1.076649, -0.955842],
            [0.637617, 0.526232, 0.695174, -0.400479]]]]],
    'embedding_negative':
        [[[6.0, 7.0], [4.0, 5.0]], [[0.0, 1.0], [0.0, 1.0]]],
    'renorm_y':
        [[-2.053236, -1.200051, -1.954209], [-0.142168, -3.387795, -1.019299],
         [-0.976818, 3.799444, -0.105496], [2.261226, 3.516701, -0.910936],
         [1.527388, 5.171086, -1.389924], [1.183608, 1.700616, 0.279862]],
    'renorm_g0':
        [[-0.090152, -0.579781, -0.138822], [-0.267508, 0.135524, -0.178455],
         [0.159382, -0.519219, -0.214016], [-0.309999, -0.082309, 0.08213],
         [0.094706, 0.071512, 0.315291], [0.413571, 0.974273, 0.133872]],
    'renorm_g1':
        [4.099577, 3.520344, 3.477544],
    'renorm_g2':
        [-0.705882, 0.0, 0.705882],
    'renorm_w10':
        [1.0, 2.0, 0.5],
    'renorm_w11':
        [0.0, 1.0, -1.0],
    'renorm_w12':
        [0.187686, 0.164977, 0.209349],
    'renorm_w13':
        [1.525097, 1.782059, 1.382319],
    'renorm_w14':
        [1.235353, 1.335312, 1.176146],
    'renorm_w15':
        [0.469215, 0.412442, 0.523373],
    'renorm_w16':
        [1.588383, 1.838281, 1.440365],
    'renorm_y2':
        [[-1.554662, -1.093048, -1.738662], [-0.535748, -2.259601, -1.240254],
         [-0.980754, 1.572791, -0.753099], [0.745656, 1.422026, -1.182485],
         [0.3544, 2.304181, -1.437837], [0.171109, 0.45365, -0.547662]],
    'renorm_w20':
        [1.0, 2.0, 0.5],
    'renorm_w21':
        [0.0, 1.0, -1.0],
    'renorm_w22':
        [0.043992, 0.01447, 0.072154],
    'renorm_w23':
        [1.453503, 1.783795, 1.273798],
    'renorm_w24':
        [1.206028, 1.335962, 1.12907],
    'renorm_w25':
        [-0.030785, -0.087558, 0.023373],
    'renorm_w26':
        [1.338555, 1.588421, 1.190564],
    'renorm_infer':
        [[-2.089939, -1.526652, -1.794622], [0.209592, -4.448707, -0.756414],
         [-0.794716, 5.150912, 0.258355], [3.101524, 4.773266, -0.636078],
         [2.218519, 6.982943, -1.167989], [1.804859, 2.347617, 0.686291]],
    'masked_bn_y':
        [[[0.868022, 1.01375, -0.740027], [0.531162, 0.346585, -0.672708],
          [-1.310247, 0.340543, -2.130958]],
         [[-1.399184, -1.360336, 1.412735], [-1.310247, 0.340543, -2.130958],
          [-1.310247, 0.340543, -2.130958]]],
    'masked_bn_w0':
        [1.0, 1.0, 1.0],
    'masked_bn_w1':
        [0.0, 0.0, 0.0],
    'masked_bn_w2':
        [0.037364, -0.106361, 0.09391],
    'masked_bn_w3':
        [0.723797, 1.394328, 0.873973],
    'frozen_fit_w0':
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
    'frozen_fit_w1':
        [0.0, 0.0, 0.0],
    'frozen_fit_w2':
        [1.0, 1.0, 1.0],
    'frozen_fit_w3':
        [0.0, 0.0, 0.0],
    'frozen_fit_w4':
        [0.0, 0.0, 0.0],
    'frozen_fit_w5':
        [1.0, 1.0, 1.0],
    'frozen_fit_w6':
        [[-22.688152], [-22.688152], [-22.688152]],
    'frozen_fit_w7':
        [-3.670548],
    'ln_rms_y':
        [[[1.567778, 1.623285, -2.456845, -2.494852], [-0.652991, 1.378515, 0.074563, 0.421111],
          [0.394733, -1.111776, 3.028884, -0.449739]],
         [[0.494662, -1.591329, -2.533926, -1.398647], [-0.211035, -0.951082, 0.083725, 0.37516],
          [2.259783, -1.181497, 7.377896, -2.102196]]],
    'ln_rms_g0':
        [[[-0.555922, 0.715986, 1.035952, 1.724155], [0.18283, -0.562396, -0.013915, -0.159494],
          [-0.24765, 0.152676, -0.275988, 0.03095]],
         [[0.22707, -0.204198, -0.402281, -0.570713], [0.103014, 1.217162, -0.345762, 0.507198],
          [0.450932, -0.683969, 1.847539, -1.150557]]],
    'ln_rms_g1':
        [[-2.223188, 1.725103, -0.939767, -0.484909], [-0.97184, -0.989115, 0.35263, 0.156077],
         [1.514934, 0.832435, 2.390868, 2.374983]],
    'flatten_cf':
        [[0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0]],
    'pool_avg2d0':
        [[[[-0.24659, -0.575766], [-0.191758, 0.092744], [0.237735, 0.002165]],
          [[0.534034, -0.295642], [0.544951, 0.769666], [0.45074, -0.189577]],
          [[-0.597185, -0.493639], [0.093821, 0.259298], [0.306045, -0.533444]],
          [[0.785946, -0.15251], [0.307174, 0.129093], [0.415926, -0.385738]]]],
    'pool_avg2d1':
        [[[[-0.25, -0.228261], [-0.206522, -0.184783], [-0.413043, -0.369565],
           [-0.206522, -0.184783], [-0.163043, -0.141304]],
          [[-0.119565, -0.097826], [-0.076087, -0.054348], [-0.152174, -0.108696],
           [-0.076087, -0.054348], [-0.032609, -0.01087]],
          [[-0.23913, -0.195652], [-0.152174, -0.108696], [-0.304348, -0.217391],
           [-0.152174, -0.108696], [-0.065217, -0.021739]],
          [[0.021739, 0.065217], [0.108696, 0.152174], [0.217391, 0.304348], [0.108696, 0.152174],
           [0.195652, 0.23913]],
          [[0.01087, 0.032609], [0.054348, 0.076087], [0.108696, 0.152174], [0.054348, 0.076087],
           [0.097826, 0.119565]],
          [[0.141304, 0.163043], [0.184783, 0.206522], [0.369565, 0.413043], [0.184783, 0.206522],
           [0.228261, 0.25]]]],
    'pool_max2d0':
        [[[[0.532844], [1.660637], [0.807324], [0.500135], [1.518168]],
          [[1.443306], [2.094085], [1.829445], [0.738842], [1.39326]],
          [[0.906569], [1.660637], [0.99388], [1.071975], [1.518168]]]],
    'pool_max2d1':
        [[[[0.0], [0.0], [0.0], [0.0], [0.0], [-0.714286], [0.0], [0.0]],
          [[0.0], [-0.142857], [0.0], [0.0], [0.0], [0.0], [0.0], [0.285714]],
          [[-1.0], [-0.285714], [0.0], [0.0], [0.0], [0.0], [0.0], [0.0]],
          [[-0.285714], [0.0], [0.0], [0.0], [0.0], [0.0], [0.142857], [0.0]],
          [[0.0], [0.0], [0.0], [0.0], [0.571429], [0.0], [-0.571429], [0.0]],
          [[0.0], [0.0], [0.0], [0.0], [0.0], [0.0], [0.0], [0.0]],
          [[0.428571], [0.0], [0.714286], [0.0], [0.0], [0.0], [0.857143], [0.0]]]],
    'pool_max1d0':
        [[[-0.524087], [1.017064], [0.807324]], [[2.094085], [0.728689], [1.660637]]],
    'pool_max1d1':
        [[[0.0], [0.0], [0.0], [-1.0], [0.0], [-0.2], [0.0], [-0.6], [0.0]],
         [[0.2], [0.6], [0.0], [0.0], [0.0], [0.0], [0.0], [0.0], [1.0]]],
    'pool_same_s2':
        [[[[0.630783], [1.039354], [1.817846]], [[0.572344], [1.12025], [1.12025]],
          [[0.572344], [0.345122], [0.991459]]]],
    'conv_transpose_1d':
        [[[-0.85858, 0.36716, 2.530598, -0.202562], [2.733886, -0.656303, 0.47556, 1.374305],
          [2.664889, 1.163181, -2.224866, -1.328454], [-4.441699, -0.843714, 0.072737, -1.228414],
          [0.879678, -1.793728, -3.829853, 0.946955], [-3.00053, 1.769088, -0.986133, -2.059856]]],
    'suff0':
        4.0,
    'suff1':
        [-1.955613, 2.337141, -3.87437],
    'suff2':
        [2.019683, 3.68143, 6.702228],
    'suff_keep0':
        12.0,
    'suff_keep1':
        [[0.507158]],
    'suff_keep2':
        [[6.361846]],
    'scale_reg':
        3.5,
    'zero_fraction':
        0.5,
    'maxnorm_1d0':
        [-2.0, 2.0, 1.0],
    'maxnorm_1d1':
        [3.0, 0.0, 0.0],
    'sce_cast':
        [2.60527, 1.990233, 1.47777],
    'sce_half':
        [2.605469, 1.990234, 1.477539],
}


# --- grouped convolutions ----------------------------------------------------------------------

def test_conv2d_grouped_matches_tensorflow():
    """tf.nn.conv2d with filters of in-depth C / groups is a grouped convolution; TensorFlow
    (XLA) gives these values and gradients."""
    x, w = C(rand(1, 1, 4, 5, 4)), C(rand(2, 3, 3, 2, 4))
    with gt.GradientTape() as tape:
        tape.watch([x, w])
        y = gt.nn.conv2d(x, w, [1, 2, 1, 1], "SAME")
        s = gt.reduce_sum(y * gt.reshape(wts(40), y.shape))
    gx, gw = tape.gradient(s, [x, w])
    close(y, REF["grouped_conv2d0"])
    close(gx, REF["grouped_conv2d1"])
    close(gw, REF["grouped_conv2d2"])
    close(gt.nn.conv1d(C(rand(3, 2, 6, 4)), C(rand(4, 2, 1, 8)), 1, "VALID"),
          REF["grouped_conv1d"])


def test_conv2d_depth_errors_are_invalid_argument():
    x = gt.ones((1, 5, 5, 4))
    with pytest.raises(InvalidArgumentError, match="input has 4 channels but filters"):
        gt.nn.conv2d(x, gt.ones((3, 3, 3, 6)), 1, "SAME")
    with pytest.raises(InvalidArgumentError, match="output depth must be evenly divisible by "
                                                   "number of groups: 5 vs 2"):
        gt.nn.conv2d(x, gt.ones((3, 3, 2, 5)), 1, "SAME")
    with pytest.raises(InvalidArgumentError, match="conv3d: input has 4 channels"):
        gt.nn.conv3d(gt.ones((1, 2, 2, 2, 4)), gt.ones((1, 1, 1, 2, 4)), [1] * 5, "SAME")


def _keras_layer_run(layer, x, seed):
    layer(C(x))
    layer.set_weights([rand(seed + i, *w.shape) * 0.5 for i, w in enumerate(layer.get_weights())])
    return layer(C(x))


def test_conv_layers_groups_match_keras():
    c2 = L.Conv2D(6, 2, groups=3, strides=2, padding="same")
    close(_keras_layer_run(c2, rand(5, 2, 5, 5, 3), 10), REF["conv2d_groups"])
    assert c2.kernel.shape == (2, 2, 1, 6) and c2.get_config()["groups"] == 3
    c1 = L.Conv1D(4, 3, groups=2, padding="causal", dilation_rate=2)
    close(_keras_layer_run(c1, rand(6, 2, 7, 4), 20), REF["conv1d_groups"])
    assert c1.kernel.shape == (3, 2, 4)
    c3 = L.Conv3D(4, 2, groups=2, padding="same")
    close(_keras_layer_run(c3, rand(7, 1, 3, 2, 3, 2), 30), REF["conv3d_groups"])
    assert c3.kernel.shape == (2, 2, 2, 1, 4)
    again = L.Conv2D.from_config(c2.get_config())
    assert again.groups == 3


def test_conv_layers_group_errors():
    with pytest.raises(ValueError, match="filters must be evenly divisible by the number of "
                                         "groups"):
        L.Conv1D(3, 3, groups=2)
    with pytest.raises(ValueError, match="input channels must be evenly divisible"):
        L.Conv2D(4, 3, groups=2)(gt.ones((1, 5, 5, 3)))


def test_grouped_conv3d_channels_first_equals_channels_last():
    x = rand(8, 1, 3, 3, 4, 4)
    last = L.Conv3D(6, 2, groups=2, padding="same")
    first = L.Conv3D(6, 2, groups=2, padding="same", data_format="channels_first")
    y_last = last(C(x))
    first(C(np.moveaxis(x, -1, 1)))
    first.set_weights(last.get_weights())
    y_first = first(C(np.moveaxis(x, -1, 1)))
    np.testing.assert_allclose(np.moveaxis(y_first.numpy(), 1, -1), y_last.numpy(), rtol=1e-5,
                               atol=1e-5)


# --- Conv1D channels_first, conv1d explicit padding ----------------------------------------------

def test_conv1d_channels_first_equals_channels_last():
    x = rand(9, 2, 9, 3)
    for kw in ({"padding": "causal", "dilation_rate": 2}, {"padding": "same", "strides": 2},
               {"padding": "valid", "groups": 3, "filters": 6}):
        kw = {"filters": 4, "kernel_size": 3, **kw}
        last, first = L.Conv1D(**kw), L.Conv1D(data_format="channels_first", **kw)
        y_last = last(C(x))
        xt = C(np.transpose(x, (0, 2, 1)))
        first(xt)
        first.set_weights(last.get_weights())
        np.testing.assert_allclose(np.transpose(first(xt).numpy(), (0, 2, 1)), y_last.numpy(),
                                   rtol=1e-5, atol=1e-5)
        assert first.get_config()["data_format"] == "channels_first"
    assert L.Conv1D(2, 3).get_config()["data_format"] == "channels_last"


def test_conv1d_explicit_padding_in_the_data_format_order():
    x, w = rand(10, 1, 6, 2), rand(11, 3, 2, 3)
    nwc = gt.nn.conv1d(C(x), C(w), 1, [[0, 0], [2, 1], [0, 0]])
    ncw = gt.nn.conv1d(C(np.transpose(x, (0, 2, 1))), C(w), 1, [[0, 0], [0, 0], [2, 1]],
                       data_format="NCW")
    assert nwc.shape == (1, 7, 3)
    np.testing.assert_allclose(np.transpose(ncw.numpy(), (0, 2, 1)), nwc.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"\[\[0, 0\], \[0, 0\], \[left, right\]\]"):
        gt.nn.conv1d(C(np.transpose(x, (0, 2, 1))), C(w), 1, [[0, 0], [2, 1], [0, 0]],
                     data_format="NCW")


# --- get_config keys as Keras 3 ------------------------------------------------------------------

def test_config_keys_match_keras():
    """Keras 3.15's get_config keys (its quantization_config aside)."""
    conv = {"activation", "activity_regularizer", "bias_constraint", "bias_initializer",
            "bias_regularizer", "data_format", "dilation_rate", "dtype", "filters", "groups",
            "kernel_constraint", "kernel_initializer", "kernel_regularizer", "kernel_size",
            "name", "padding", "strides", "trainable", "use_bias"}
    assert set(L.Conv1D(3, 3).get_config()) == conv
    assert set(L.Conv2D(3, 3).get_config()) == conv
    assert set(L.Conv3D(3, 3).get_config()) == conv
    assert set(L.Conv3DTranspose(3, 3).get_config()) == conv - {"groups"} | {"output_padding"}
    assert set(L.Dense(3).get_config()) == {
        "activation", "bias_constraint", "bias_initializer", "bias_regularizer", "dtype",
        "kernel_constraint", "kernel_initializer", "kernel_regularizer", "name", "trainable",
        "units", "use_bias"}
    assert set(L.Embedding(5, 3).get_config()) == {
        "activity_regularizer", "dtype", "embeddings_constraint", "embeddings_initializer",
        "embeddings_regularizer", "input_dim", "mask_zero", "name", "output_dim", "trainable"}
    assert set(L.BatchNormalization().get_config()) == {
        "axis", "beta_constraint", "beta_initializer", "beta_regularizer", "center", "dtype",
        "epsilon", "gamma_constraint", "gamma_initializer", "gamma_regularizer", "momentum",
        "moving_mean_initializer", "moving_variance_initializer", "name", "renorm",
        "renorm_clipping", "renorm_momentum", "scale", "synchronized", "trainable"}
    assert set(L.LayerNormalization().get_config()) == {
        "axis", "beta_constraint", "beta_initializer", "beta_regularizer", "center", "dtype",
        "epsilon", "gamma_constraint", "gamma_initializer", "gamma_regularizer", "name",
        "rms_scaling", "scale", "trainable"}
    assert set(L.Flatten().get_config()) == {"data_format", "dtype", "name", "trainable"}
    dense = L.Dense(2, kernel_constraint="non_neg", bias_regularizer="l2")
    config = dense.get_config()
    assert config["kernel_regularizer"] is None and config["bias_constraint"] is None
    again = L.Dense.from_config(config)
    assert again.get_config()["kernel_constraint"] == config["kernel_constraint"]
    assert again.get_config()["bias_regularizer"] == config["bias_regularizer"]


def test_inputlayer_config_as_keras():
    config = L.InputLayer(shape=(3,), name="inp").get_config()
    assert config == {"name": "inp", "batch_shape": (None, 3), "dtype": "float32",
                      "sparse": False, "ragged": False, "optional": False}
    again = L.InputLayer(**config)
    assert again.batch_shape == (None, 3)
    with pytest.raises(ValueError, match="sparse"):
        L.InputLayer(shape=(3,), sparse=True)


# --- Embedding ---------------------------------------------------------------------------------

def test_embedding_negative_ids_and_weights_argument():
    """Keras 3 looks ids up as ``take``: -1 is the last row; ``weights=`` sets the table."""
    e = L.Embedding(4, 2, weights=[np.arange(8, dtype=np.float32).reshape(4, 2)])
    assert e.built
    close(e(gt.constant([[-1, 2], [-4, 0]])), REF["embedding_negative"])
    table = L.Embedding(2, 1, weights=np.array([[3.0], [4.0]], np.float32))
    close(table(gt.constant([1, -2])), [[4.0], [3.0]])
    with pytest.raises(IndexError):
        e(gt.constant([[4]]))


# --- BatchNormalization ------------------------------------------------------------------------

def _renorm_layer():
    bn = L.BatchNormalization(renorm=True, momentum=0.8, renorm_momentum=0.5,
                              renorm_clipping={"rmax": 1.5, "rmin": 0.8, "dmax": 0.3})
    xb = rand(8, 6, 3) * 2 + 1
    bn(C(xb))
    bn.set_weights([np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, 1.0, -1.0], np.float32)]
                   + bn.get_weights()[2:])
    return bn, xb


def test_batch_renormalization_matches_keras():
    bn, xb = _renorm_layer()
    assert [w.name.split("/")[-1][:-2] for w in bn.weights] == [
        "gamma", "beta", "moving_mean", "moving_variance", "moving_stddev", "renorm_mean",
        "renorm_stddev"]
    x = C(xb)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = bn(x, training=True)
        s = gt.reduce_sum(y * gt.reshape(wts(18), (6, 3)))
    close(y, REF["renorm_y"])
    for i, g in enumerate(tape.gradient(s, [x] + bn.trainable_weights)):
        close(g, REF[f"renorm_g{i}"])
    for i, w in enumerate(bn.get_weights()):
        close(w, REF[f"renorm_w1{i}"])
    close(bn(C(xb * 0.5 - 1), training=True), REF["renorm_y2"])
    for i, w in enumerate(bn.get_weights()):
        close(w, REF[f"renorm_w2{i}"])
    close(bn(C(xb), training=False), REF["renorm_infer"])


def test_batch_renormalization_arguments():
    config = L.BatchNormalization(renorm=True, renorm_clipping={"rmax": 2.0}).get_config()
    assert config["renorm"] and config["renorm_clipping"] == {"rmax": 2.0}
    assert config["renorm_momentum"] == 0.99 and config["synchronized"] is False
    again = L.BatchNormalization.from_config(config)
    assert again.renorm and again.renorm_clipping == {"rmax": 2.0}
    with pytest.raises(ValueError, match="unknown keys"):
        L.BatchNormalization(renorm=True, renorm_clipping={"foo": 1.0})
    with pytest.raises(ValueError, match="rmax"):
        L.BatchNormalization(renorm=True, renorm_clipping={"rmax": 0.5, "rmin": 1.0})
    with pytest.raises(ValueError, match="dmax"):
        L.BatchNormalization(renorm=True, renorm_clipping={"dmax": -1.0})


def test_batch_normalization_leaves_masked_steps_out():
    """An Embedding(mask_zero=True) mask reaches BatchNormalization, whose batch statistics
    skip the padded steps (Keras 3's values)."""
    emb = L.Embedding(5, 3, mask_zero=True)
    emb(gt.constant([[1]]))
    emb.set_weights([rand(9, 5, 3)])
    bn = L.BatchNormalization(momentum=0.5)
    ids = gt.constant([[1, 2, 0], [3, 0, 0]])
    close(bn(emb(ids), training=True), REF["masked_bn_y"])
    for i, w in enumerate(bn.get_weights()):
        close(w, REF[f"masked_bn_w{i}"])


def test_frozen_model_freezes_its_layers_and_batch_normalization():
    """Setting ``trainable`` on a model sets it on its layers (Keras 3): a frozen
    BatchNormalization normalizes with its moving statistics and does not update them."""
    base = keras.Sequential([keras.Input((3,)), L.Dense(3, kernel_initializer="ones"),
                             L.BatchNormalization()])
    base.trainable = False
    assert [layer.trainable for layer in base.layers] == [False, False]
    m = keras.Sequential([base, L.Dense(1, kernel_initializer="ones")])
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    m.fit(rand(11, 8, 3) + 2, rand(12, 8, 1), epochs=1, batch_size=8, verbose=0)
    for i, w in enumerate(m.get_weights()):
        close(w, REF[f"frozen_fit_w{i}"], rtol=1e-4, atol=1e-4)
    base.trainable = True
    assert [layer.trainable for layer in base.layers] == [True, True]
    assert len(m.trainable_weights) == 6


# --- LayerNormalization(rms_scaling), Flatten, Dropout -------------------------------------------

def test_layer_normalization_rms_scaling_matches_keras():
    with pytest.warns(UserWarning, match="rms_scaling"):
        ln = L.LayerNormalization(axis=[1, 2], rms_scaling=True, epsilon=1e-5)
    xl = rand(13, 2, 3, 4) + 1
    ln(C(xl))
    assert [w.name.split("/")[-1][:-2] for w in ln.weights] == ["gamma"]
    ln.set_weights([rand(14, 3, 4)])
    x = C(xl)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = ln(x)
        s = gt.reduce_sum(y * gt.reshape(wts(24), (2, 3, 4)))
    close(y, REF["ln_rms_y"])
    gx, gg = tape.gradient(s, [x] + ln.trainable_weights)
    close(gx, REF["ln_rms_g0"])
    close(gg, REF["ln_rms_g1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert L.LayerNormalization.from_config(ln.get_config()).rms_scaling


def test_flatten_channels_first_moves_channels_last():
    x = C(np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2))
    close(L.Flatten(data_format="channels_first")(x), REF["flatten_cf"])
    close(L.Flatten()(x), np.arange(12).reshape(1, 12))
    close(L.Flatten(data_format="channels_first")(C([[1.0, 2.0]])), [[1.0, 2.0]])


def test_dropout_rate_one_drops_everything():
    """Keras 3 takes rate 1: training gives zeros, connected to nothing (TensorFlow's
    gradient is None)."""
    d = L.Dropout(1.0)
    x = C(np.ones((2, 3)))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = d(x, training=True)
        s = gt.reduce_sum(y * 2.0)
    close(y, np.zeros((2, 3)))
    assert tape.gradient(s, x) is None                         # (TensorFlow: None too)
    close(d(x), np.ones((2, 3)))
    with pytest.raises(ValueError, match="rate"):
        L.Dropout(1.5)


# --- weights, layers, count_params ---------------------------------------------------------------

class _OwnAndInner(L.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = L.Dense(2, name="inner")

    def build(self, shape):
        self.b = self.add_weight(shape=(2,), initializer="zeros", name="b")
        self.a = self.add_weight(shape=(3,), initializer="ones", trainable=False, name="a")
        self.c = self.add_weight(shape=(1,), initializer="ones", name="c")

    def call(self, x):
        return self.inner(x)


def _short(variables):
    return [v.name.split("/")[-1][:-2] for v in variables]


def test_layer_weights_own_trainable_then_non_trainable_then_sublayers():
    """Keras 3's ``layer.weights``: the layer's trainable weights, its non-trainable ones,
    then its sub-layers' (so get_weights / set_weights line up with Keras')."""
    layer = _OwnAndInner()
    layer(C(np.ones((1, 2))))
    assert _short(layer.weights) == ["b", "c", "a", "kernel", "bias"]
    assert _short(layer.trainable_weights) == ["b", "c", "kernel", "bias"]
    assert _short(layer.non_trainable_weights) == ["a"]
    assert [p for p, _ in layer.named_variables()][:3] == ["b", "c", "a"]


class _Blocks(keras.Model):
    def __init__(self):
        super().__init__()
        self.blocks = [L.Dense(2, name="b0"), L.BatchNormalization(name="bn0")]
        self.head = L.Dense(1, name="head")

    def build(self, shape):
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")

    def call(self, x, training=False):
        for block in self.blocks:
            x = block(x, training=training)
        return self.head(x) * self.scale


def test_subclassed_model_layers_weights_and_trainable():
    m = _Blocks()
    m(C(np.ones((2, 3))))
    assert [layer.name for layer in m.layers] == ["b0", "bn0", "head"]
    assert _short(m.weights) == ["scale", "kernel", "bias", "gamma", "beta", "moving_mean",
                                 "moving_variance", "kernel", "bias"]
    assert m.count_params() == 1 + 8 + 8 + 3
    m.trainable = False
    assert not any(layer.trainable for layer in m.layers) and not m.trainable_weights
    m.trainable = True
    m.blocks[1].trainable = False
    assert _short(m.trainable_weights) == ["scale", "kernel", "bias", "kernel", "bias"]
    assert _short(m.non_trainable_weights) == ["gamma", "beta", "moving_mean", "moving_variance"]


def test_count_params_of_an_unbuilt_layer_is_an_error():
    with pytest.raises(ValueError, match="not built"):
        L.Dense(3).count_params()
    dense = L.Dense(3)
    dense.build((None, 4))
    assert dense.count_params() == 15
    flat = L.Flatten()
    flat(C(np.ones((1, 2, 2))))
    assert flat.count_params() == 0


# --- tf.nn: pool, conv_transpose, statistics, losses ---------------------------------------------

@pytest.mark.parametrize("name,shape,window,dilations,kind", [
    ("pool_avg2d", (1, 6, 5, 2), [2, 2], [2, 2], "AVG"),
    ("pool_max2d", (1, 7, 8, 1), [3, 2], [2, 3], "MAX"),
    ("pool_max1d", (2, 9, 1), [3], [3], "MAX")])
def test_pool_with_dilations_matches_tensorflow(name, shape, window, dilations, kind):
    x = C(rand(15, *shape))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = onn.pool(x, window, kind, padding="VALID", dilations=dilations)
        s = gt.reduce_sum(y * gt.reshape(wts(int(np.prod(y.shape))), y.shape))
    close(y, REF[name + "0"])
    close(tape.gradient(s, x), REF[name + "1"])


def test_pool_forms_and_errors():
    close(onn.pool(C(rand(16, 1, 5, 5, 1)), [3, 3], "MAX", strides=[2, 2], padding="SAME"),
          REF["pool_same_s2"])
    x3 = C(rand(17, 1, 4, 4, 4, 2))
    np.testing.assert_allclose(onn.pool(x3, [2, 2, 2], "AVG", strides=[2, 2, 2]).numpy(),
                               gt.nn.avg_pool3d(x3, 2, 2, "VALID").numpy())
    with pytest.raises(ValueError, match="strides > 1 are not supported together"):
        onn.pool(C(np.ones((1, 5, 5, 1))), [2, 2], "MAX", strides=[2, 2], dilations=[2, 2])
    with pytest.raises(ValueError, match="'SAME' padding is not supported"):
        onn.pool(C(np.ones((1, 5, 5, 1))), [2, 2], "AVG", padding="SAME", dilations=[2, 2])
    with pytest.raises(ValueError, match="pooling_type"):
        onn.pool(C(np.ones((1, 5, 5, 1))), [2, 2], "SUM")
    with pytest.raises(ValueError, match="rank 3"):
        onn.pool(C(np.ones((1, 5, 5, 1))), [2], "MAX")


def test_conv_transpose_dispatches_on_rank():
    close(onn.conv_transpose(C(rand(17, 1, 3, 2)), C(rand(18, 3, 4, 2)), [1, 6, 4], 2),
          REF["conv_transpose_1d"])
    x, w = C(rand(19, 1, 2, 2, 3)), C(rand(20, 3, 3, 2, 3))
    np.testing.assert_array_equal(
        onn.conv_transpose(x, w, [1, 4, 4, 2], 2).numpy(),
        gt.nn.conv2d_transpose(x, w, [1, 4, 4, 2], 2).numpy())
    with pytest.raises(ValueError, match="3, 4 or 5 entries"):
        onn.conv_transpose(x, w, [4, 4], 2)


def test_sufficient_statistics_scale_regularization_loss_zero_fraction():
    counts, m_ss, v_ss, shift = onn.sufficient_statistics(C(rand(19, 4, 3)), [0],
                                                          shift=C([0.5, -0.5, 1.0]))
    close(counts, REF["suff0"])
    close(m_ss, REF["suff1"])
    close(v_ss, REF["suff2"])
    close(shift, [0.5, -0.5, 1.0])
    counts, m_ss, v_ss, shift = onn.sufficient_statistics(C(rand(19, 4, 3)), [0, 1],
                                                          keepdims=True)
    assert shift is None and counts.dtype == gt.float32
    close(counts, REF["suff_keep0"])
    close(m_ss, REF["suff_keep1"])
    close(v_ss, REF["suff_keep2"])
    close(gt.nn.scale_regularization_loss([C(1.5), C(2.0)]), REF["scale_reg"])
    close(onn.zero_fraction(C([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])), REF["zero_fraction"])
    close(onn.zero_fraction(gt.constant([0, 3, 0, 0])), 0.75)


def test_embedding_lookup_max_norm_of_scalar_rows():
    """1-D params: each looked-up value is clipped to |v| <= max_norm (TF's clip_by_norm
    over no axes)."""
    x = C([1.0, -5.0, 3.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.nn.embedding_lookup(x, gt.constant([1, 2, 0]), max_norm=2.0)
        s = gt.reduce_sum(y * C([1.0, 2.0, 3.0]))
    close(y, REF["maxnorm_1d0"])
    close(tape.gradient(s, x), REF["maxnorm_1d1"])


def test_softmax_cross_entropy_casts_labels_and_computes_half_in_float32():
    x = rand(20, 3, 4)
    z = np.eye(4)[[0, 2, 3]]
    close(gt.nn.softmax_cross_entropy_with_logits(labels=gt.constant(z.astype(np.int32)),
                                                  logits=C(x)), REF["sce_cast"])
    close(gt.nn.softmax_cross_entropy_with_logits(labels=gt.constant(z), logits=C(x)),
          REF["sce_cast"])
    half = gt.nn.softmax_cross_entropy_with_logits(labels=gt.constant(z.astype(np.float16)),
                                                   logits=gt.constant(x.astype(np.float16)))
    assert half.dtype == gt.float16
    close(gt.cast(half, gt.float32), REF["sce_half"], rtol=0, atol=1e-6)


def test_bias_add_and_dropout_shape_errors_are_invalid_argument():
    with pytest.raises(InvalidArgumentError, match="rank >= 2"):
        gt.nn.bias_add(C([1.0, 2.0]), C([1.0, 2.0]))
    with pytest.raises(InvalidArgumentError, match="does not match"):
        gt.nn.bias_add(C(np.ones((2, 3))), C([1.0, 2.0]))
    with pytest.raises(InvalidArgumentError, match="noise_shape"):
        gt.nn.dropout(C(np.ones((4, 5))), rate=0.5, noise_shape=[3, 1])


def test_layer_losses_in_keras_order():
    """Keras lists the terms a call added (activity regularizers, add_loss) before the
    weight penalties: TensorFlow gives [3.75, 1.2, 0.6]."""
    regs = gt.keras.regularizers
    d = gt.keras.layers.Dense(3, kernel_regularizer=regs.L2(0.1), bias_regularizer=regs.L1(0.2),
                              activity_regularizer=regs.L2(0.05), kernel_initializer="ones",
                              bias_initializer="ones")
    d(gt.ones((2, 4)))
    np.testing.assert_allclose([float(v) for v in d.losses], [3.75, 1.2, 0.6], rtol=1e-6)


def test_a_known_shape_is_true_even_of_rank_0():
    assert bool(gt.TensorShape([])) and bool(gt.constant(1.0).shape)
    assert not bool(gt.TensorShape(None))


def test_integer_sums_over_leading_axes_keep_their_dtype():
    """tf.reduce_sum of int32/int8 over the first axis stays int32/int8 (it widened to
    int64 on that path)."""
    for dt in (gt.int32, gt.int8):
        out = gt.reduce_sum(gt.constant([[1, 2], [3, 4]], dt), axis=0)
        assert out.dtype == dt
        np.testing.assert_array_equal(out.numpy(), [4, 6])


def test_max_and_avg_pool_take_ndhwc_input():
    x = np.arange(2 * 4 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 4, 1)
    np.testing.assert_array_equal(gt.nn.max_pool(x, 2, 2, "VALID").numpy(),
                                  gt.nn.max_pool3d(x, 2, 2, "VALID").numpy())
    np.testing.assert_array_equal(gt.nn.avg_pool(x, 2, 2, "SAME").numpy(),
                                  gt.nn.avg_pool3d(x, 2, 2, "SAME").numpy())
    assert gt.nn.max_pool(x, 2, 2, "VALID").shape == (2, 2, 2, 2, 1)
