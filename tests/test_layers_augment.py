"""gt.keras' image augmentation layers (gradtape/layers_augment.py) against Keras 3.15 (the
reference numbers come from tf.keras in TF 2.21): each layer's ``transform_images`` (and
labels / bounding boxes) on a given transformation dict, the same dict given to Keras, so
the deterministic math is compared exactly; then the random parts (per-image draws and
their rates over many images, seeds), configs, errors, dict inputs and ``Pipeline``.

Each ``REF`` entry: (shape, sum, sum of ``x.flat[i] * cos(i)``, first values), or for
small arrays (shape, None, None, all values)."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import layers_augment as A

IMG = np.random.default_rng(0).integers(0, 256, (2, 4, 5, 3)).astype(np.float32)
IMG2 = np.random.default_rng(1).integers(0, 256, (2, 6, 7, 3)).astype(np.float32)
LAB = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
BOX = np.array([[[0.5, 1.0, 3.0, 3.5], [2.0, 0.0, 4.5, 2.0]],
                [[1.0, 1.0, 2.0, 2.0], [0.0, 2.5, 5.0, 4.0]]], np.float32)
BOX_LABELS = np.array([[1, 2], [3, 4]], np.int32)
START = np.tile(np.array([[[0.0, 0.0], [4.0, 0.0], [0.0, 3.0], [4.0, 3.0]]], np.float32),
                (2, 1, 1))
END = START + START * np.array([[[0.1, -0.2], [0.3, 0.05], [-0.25, 0.15], [0.2, -0.1]],
                                [[-0.3, 0.2], [0.1, 0.1], [0.2, -0.3], [-0.15, 0.25]]],
                               np.float32)
REF = {
    "auto_contrast": ((2, 4, 5, 3), 15212.4, -134.1047,
        [251.5068, 164.1498, 130, 79.1781, 76.3968, 10, 20.9589, 0, 44, 241.0274, 167.247, 233]),
    "auto_contrast_01": ((2, 4, 5, 3), 64.00665, -0.8052734,
        [0.9863, 0.6437, 0.5098, 0.3105, 0.2996, 0.0392, 0.0822, 0, 0.1725, 0.9452, 0.6559,
        0.9137]),
    "equalization": ((2, 4, 5, 3), 15326, -125.4607,
        [229, 150, 124, 59, 65, 20, 20, 0, 52, 203, 157, 235]),
    "equalization_01_16": ((2, 4, 5, 3), 59.7451, -0.683624,
        [0.9176, 0.6039, 0.4118, 0.2431, 0.2353, 0, 0.0549, 0, 0.0863, 0.9176, 0.6039, 0.9098]),
    "equalization_cf": ((2, 3, 4, 5), 15326, 1088.22,
        [229, 59, 20, 203, 118, 183, 137, 203, 98, 7, 222, 235]),
    "solarization_01": ((2, 4, 5, 3), 28.98627, 0.2918395,
        [0.049, 0.2608, 0.3902, 0.3706, 0.5941, 0.1392, 0.1745, 0.1157, 0.2725, 0.0843, 0.249, 0]),
    "solarization_default": ((2, 4, 5, 3), 15048, 375.2195,
        [38, 92, 125, 186, 177, 245, 236, 251, 211, 47, 89, 22]),
    "invert": ((2, 4, 5, 3), 12252, 264.9652,
        [-17, 37, 70, 131, 122, 190, 181, 196, 156, -8, 34, -33]),
    "grayscale": ((2, 4, 5, 3), 15789.99, -146.7737,
        [175.3623, 175.3623, 175.3623, 67.5501, 67.5501, 67.5501, 13.0431, 13.0431, 13.0431,
        186.1752, 186.1752, 186.1752]),
    "grayscale_u8": ((2, 4, 5, 3), 15750, -124.9527,
        [175, 175, 175, 67, 67, 67, 13, 13, 13, 186, 186, 186]),
    "grayscale_cf": ((2, 3, 4, 5), 15789.99, 471.9482,
        [175.3623, 67.5501, 13.0431, 186.1752, 157.5162, 165.9484, 191.1297, 162.5482, 174.517,
        138.0602, 92.8984, 84.425]),
    "hue": ((2, 4, 5, 3), 16055, -397.7308,
        [130, 217, 145.6, 10, 78, 73.4, 44, 11, 4, 233, 194.6, 166]),
    "hue_cf": ((2, 3, 4, 5), 60.09569, -0.5513188,
        [0.5098, 0.0392, 0.1608, 0.8278, 0.9725, 0.5451, 0.4573, 0, 0.8588, 0.7647, 0.0863,
        0.0196]),
    "saturation": ((2, 4, 5, 3), 13545, -282.84,
        [217, 190, 173.5, 73.5, 78, 44, 31.5, 24, 44, 220.5, 199.5, 233]),
    "saturation_01": ((2, 4, 5, 3), 66.97366, -1.349652,
        [0.851, 0.491, 0.271, 0.2654, 0.3059, 0, 0.0647, 0, 0.1725, 0.7471, 0.4671, 0.9137]),
    "degeneration": ((2, 4, 5, 3), 15626.61, -167.6083,
        [204.5087, 166.7087, 143.6087, 68.565, 74.865, 27.265, 17.2129, 6.7129, 34.7129, 201.4526,
        172.0526, 218.9526]),
    "sharpness": ((2, 4, 5, 3), 15472.37, -160.5157,
        [155.2462, 124.8769, 92.1538, 79.2, 83.2615, 24.0308, 45.5846, 42.8154, 48.7538, 152.5692,
        139.0462, 175.5385]),
    "sharpness_cf": ((2, 3, 4, 5), 13933.18, 659.2873,
        [124.3692, 84.3, 58.8769, 124.8539, 78.9846, 142.8692, 143.7616, 154.2077, 93.0769, 41.3,
        150.7154, 174.7923]),
    "posterization": ((2, 4, 5, 3), 15024, -259.3932,
        [208, 160, 128, 64, 64, 0, 16, 0, 32, 208, 160, 224]),
    "posterization_01": ((2, 4, 5, 3), 47.96863, -1.470383,
        [0.502, 0.502, 0.502, 0, 0, 0, 0, 0, 0, 0.502, 0.502, 0.502]),
    "shear_reflect_bilinear": ((2, 4, 5, 3), 15489.44, -302.357,
        [217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233]),
    "shear_reflect_nearest": ((2, 4, 5, 3), 15750, -330.3285,
        [217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233]),
    "shear_constant_bilinear": ((2, 4, 5, 3), 13115.79, -143.8592,
        [217, 163, 130, 63, 71.1, 9.9, 17, 5, 37, 148.3, 118.9, 165.8]),
    "shear_constant_nearest": ((2, 4, 5, 3), 13304, -32.92131,
        [217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233]),
    "shear_wrap_bilinear": ((2, 4, 5, 3), 16415.15, -144.3172,
        [217, 163, 130, 65, 157, 195, 98, 117, 255, 206, 251, 97]),
    "shear_wrap_nearest": ((2, 4, 5, 3), 16655, -289.9103,
        [217, 163, 130, 65, 157, 195, 98, 117, 255, 206, 251, 97]),
    "shear_nearest_bilinear": ((2, 4, 5, 3), 15489.44, -302.357,
        [217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233]),
    "shear_nearest_nearest": ((2, 4, 5, 3), 15750, -330.3285,
        [217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233]),
    "perspective_bilinear": ((2, 4, 5, 3), 14673.34, 218.2631,
        [217, 163, 130, 125.8367, 110.6427, 56.0838, 54.3356, 56.2967, 19.9718, 26.8636, 10.7402,
        51.8636]),
    "perspective_nearest": ((2, 4, 5, 3), 14680, 330.3386,
        [217, 163, 130, 69, 78, 10, 69, 78, 10, 19, 4, 44]),
    "perspective_skip": ((2, 4, 5, 3), 14939.41, -127.8778,
        [217, 163, 130, 69, 78, 10, 19, 4, 44, 208, 166, 233]),
    "erasing_mask": ((2, 4, 5), 9, 2.658884, [0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1]),
    "erasing_mask_cf": ((2, 4, 5), 9, 2.658884, [0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1]),
    "blur": ((2, 4, 5, 3), 12876.18, -42.69968,
        [76.332, 62.3958, 43.7353, 60.4222, 55.7296, 32.0239, 79.264, 75.0518, 75.9286, 107.3924,
        115.5106, 108.0873]),
    "blur_cf": ((2, 3, 4, 5), 13996.79, 886.2901,
        [129.275, 92.3599, 76.1749, 143.0062, 115.7419, 131.3952, 168.5277, 166.0081, 103.8142,
        28.4082, 164.9703, 170.9557]),
    "cutmix": ((2, 4, 5, 3), 15521, -393.2635,
        [217, 163, 130, 99, 224, 34, 148, 184, 216, 208, 166, 233]),
    "cutmix_weight": ((2, 1, 1, 1), None, None, [0.78, 0.7225]),
    "cutmix_labels": ((2, 3), None, None, [0.78, 0, 0.22, 0.2775, 0, 0.7225]),
    "mixup": ((2, 4, 5, 3), 15438.6, 136.5146,
        [216.6, 165.6, 140, 75, 107.2, 14.8, 44.8, 40, 78.4, 193.2, 152, 202.2]),
    "mixup_labels": ((2, 3), None, None, [0.8, 0, 0.2, 0.65, 0, 0.35]),
    "jitter": ((2, 4, 5, 3), 14880.14, -9.895151,
        [254.74, 244.5654, 193.462, 58.4808, 86.76, 39.87, 44.2781, 19.764, 49.41, 255, 217.416,
        243.5957]),
    "jitter_01": ((2, 4, 5, 3), 60.69384, -0.249545,
        [0.9205, 0.8536, 0.5187, 0.0989, 0.2607, 0, 0.0547, 0, 0.114, 1, 0.6748, 0.9657]),
    "elastic_reflect_bilinear_rows": ((3, 28), 10700.84, 203.622,
        [159.195, 80.6827, 83.9005, 139.9229, 138.0162, 223.2887, 63.8075, 113.1795, 124.5845,
        78.3553, 202.6638, 60.5334]),
    "elastic_reflect_bilinear_sum": ((2,), None, None, [104517.0234, 105983.875]),
    "elastic_reflect_nearest_rows": ((3, 28), 10708, 211.1788,
        [161, 36, 42, 220, 68, 237, 87, 157, 179, 51, 216, 1]),
    "elastic_reflect_nearest_sum": ((2,), None, None, [103579, 105978]),
    "elastic_constant_bilinear_rows": ((3, 28), 10700.84, 203.622,
        [159.195, 80.6827, 83.9005, 139.9229, 138.0162, 223.2887, 63.8075, 113.1795, 124.5845,
        78.3553, 202.6638, 60.5334]),
    "elastic_constant_bilinear_sum": ((2,), None, None, [100440.4141, 101730.3516]),
    "elastic_constant_nearest_rows": ((3, 28), 10708, 211.1788,
        [161, 36, 42, 220, 68, 237, 87, 157, 179, 51, 216, 1]),
    "elastic_constant_nearest_sum": ((2,), None, None, [100378, 102331]),
    "elastic_wrap_bilinear_rows": ((3, 28), 10700.84, 203.622,
        [159.195, 80.6827, 83.9005, 139.9229, 138.0162, 223.2887, 63.8075, 113.1795, 124.5845,
        78.3553, 202.6638, 60.5334]),
    "elastic_wrap_bilinear_sum": ((2,), None, None, [104539, 105548.8672]),
    "elastic_nearest_bilinear_rows": ((3, 28), 10700.84, 203.622,
        [159.195, 80.6827, 83.9005, 139.9229, 138.0162, 223.2887, 63.8075, 113.1795, 124.5845,
        78.3553, 202.6638, 60.5334]),
    "elastic_nearest_bilinear_sum": ((2,), None, None, [104480.1172, 105820.2109]),
    "augmix": ((2, 6, 7, 3), 31706.89, -47.96521,
        [127.5277, 114.828, 156.2442, 212.5549, 42.0176, 42.1193, 162.647, 205.5482, 85.9542,
        69.0125, 204.3369, 123.7695]),
    "sub_random_shear": ((2, 6, 7, 3), 33086.67, -102.5309,
        [121, 131, 193, 243, 8, 36, 210, 242, 63, 79, 222, 108]),
    "sub_random_posterization": ((2, 6, 7, 3), 30760, -126.2848,
        [120, 128, 192, 240, 8, 32, 208, 240, 56, 72, 216, 104]),
    "sub_random_brightness": ((2, 6, 7, 3), 31849, -169.4422,
        [136, 146, 208, 255, 23, 51, 225, 255, 78, 94, 237, 123]),
    "sub_random_contrast": ((2, 6, 7, 3), 33024.71, -126.4367,
        [121.0952, 132.3333, 196.6, 255, 0, 23.9, 218.9952, 254.4333, 53.6, 74.8952, 232.4333,
        103.1]),
    "sub_random_translation": ((2, 6, 7, 3), 33423.75, 46.83886,
        [156.5, 172.5, 165, 156.5, 172.5, 165, 226, 46, 75.5, 205.5, 136.5, 70]),
    "sub_solarization": ((2, 6, 7, 3), 21271, 457.1337,
        [124, 114, 52, 2, 18, 46, 35, 3, 182, 166, 23, 137]),
    "sub_random_color_degeneration": ((2, 6, 7, 3), 32812.55, -8.235749,
        [123.8132, 131.8132, 181.4132, 210.6865, 22.6865, 45.0865, 210.401, 236.001, 92.801,
        96.4478, 210.8478, 119.6478]),
    "sub_auto_contrast": ((2, 6, 7, 3), 32638.45, -170.3843,
        [126.4463, 130.6098, 190.1316, 255, 3.1098, 14.5395, 220.2273, 245.6707, 44.7368, 82.1901,
        224.939, 95.0658]),
    "sub_random_rotation": ((2, 6, 7, 3), 33516.67, 998.6266,
        [241.8129, 16.4175, 36.9713, 210.8031, 236.3056, 62.343, 90.0882, 223.6928, 104.1911,
        64.8885, 195.7106, 79.2348]),
    "sub_equalization": ((2, 6, 7, 3), 32243, -188.0643,
        [132, 126, 184, 252, 12, 6, 218, 240, 18, 92, 221, 77]),
    "sub_random_sharpness": ((2, 6, 7, 3), 30331.09, -123.1913,
        [101.0615, 85.3385, 115.7077, 180.7846, 47.2615, 54.2769, 153.5692, 151.2308, 68.0462,
        73.6462, 155.6615, 89.1692]),
    "randaugment": ((2, 6, 7, 3), 34753.79, 1114.363,
        [124.0661, 46.1032, 40.0109, 132.0199, 128.6968, 225.9122, 214.0353, 119.5891, 199.9276,
        64.1493, 138.1584, 211.9122]),
    "randaugment_b": ((2, 6, 7, 3), 39521.93, -466.6692,
        [148.7603, 153.6585, 223.6842, 300, 3.6585, 17.1053, 259.0909, 289.0244, 52.6316, 96.6942,
        264.6342, 111.8421]),
    "shear_boxes": ((2, 2, 4), None, None,
        [0, 0.97, 2.75, 3.72, 1.5, 0.12, 4.5, 2.36, 1.375, 0.45, 2.75, 1.725, 0.9375, 1.2, 5,
        3.8125]),
    "shear_box_labels": ((2, 2), None, None, [1, 2, 3, 4]),
    "shear_boxes_cxywh": ((2, 2, 4), None, None,
        [1.2344, 1.81, 2.4688, 3.62, 2.4375, 0.64, 4.875, 1.28, 1.375, 1.66, 2.75, 3.32, 2.0938, 2,
        4.1875, 4]),
    "shear_box_labels_cxywh": ((2, 2), None, None, [1, 2, 3, 4]),
    "perspective_boxes": ((2, 2, 4), None, None,
        [0.7294, 1.0063, 4.0252, 3.8293, 2.7724, 0, 5, 2.0793, 1, 1, 2, 2, 0, 2.5, 5, 4]),
    "perspective_box_labels": ((2, 2), None, None, [1, 2, 3, 4]),
    "maxnum3_boxes": ((2, 3, 4), None, None,
        [0.5, 1, 3, 3.5, 2, 0, 4.5, 2, -2, -2, -2, -2, 1, 1, 2, 2, 0, 2.5, 5, 4, -2, -2, -2, -2]),
    "maxnum3_labels": ((2, 3), None, None, [1, 2, -2, 3, 4, -2]),
    "maxnum1_boxes": ((2, 1, 4), None, None, [0.5, 1, 3, 3.5, 1, 1, 2, 2]),
    "maxnum1_labels": ((2, 1), None, None, [1, 3]),
    "mixup_boxes": ((2, 4, 4), 68, -5.67947, [0.5, 1, 3, 3.5, 2, 0, 4.5, 2, 1, 1, 2, 2]),
}


def c(a, dt=None):
    return gt.constant(np.asarray(a) if dt is None else np.asarray(a, dt))


def check(name, out, atol=1e-3):
    shape, total, weighted, values = REF[name]
    o = np.asarray(out.numpy() if hasattr(out, "numpy") else out, np.float64)
    assert o.shape == shape, name
    flat = o.ravel()
    np.testing.assert_allclose(flat[:len(values)], values, atol=atol, err_msg=name)
    if total is not None:
        scale = np.abs(flat).max() * flat.size
        np.testing.assert_allclose(flat.sum(), total, atol=2e-6 * scale + 1e-3, err_msg=name)
        np.testing.assert_allclose((flat * np.cos(np.arange(flat.size))).sum(), weighted,
                                   atol=2e-6 * scale + 1e-3, err_msg=name)


def test_colour_layers_match_keras(device):
    x = IMG.copy()
    x[1, :, :, 2] = 77.0                                  # a constant channel is kept
    out = A.AutoContrast()(x)
    assert out.device == device.name and out.dtype == gt.float32
    check("auto_contrast", out)
    check("auto_contrast_01", A.AutoContrast(value_range=(0, 1))(IMG / 400.0))
    check("equalization", A.Equalization()(IMG))
    check("equalization_01_16", A.Equalization(value_range=(0, 1), bins=16)(IMG / 255.0))
    check("equalization_cf", A.Equalization(data_format="channels_first")(
        IMG.transpose(0, 3, 1, 2)))
    t = {"additions": c([[[[0.1]]], [[[0.3]]]], np.float32) * 255,
         "thresholds": c([[[[0.4]]], [[[0.7]]]], np.float32) * 255}
    check("solarization_01", A.Solarization(value_range=(0, 1)).transform_images(
        c(IMG / 255.0), t))
    check("solarization_default", A.Solarization()(IMG))
    check("invert", A.RandomInvert(value_range=(0, 200)).transform_images(
        c(IMG), {"apply_inversion": c([True, False])}))
    gray = A.RandomGrayscale()
    check("grayscale", gray.transform_images(c(IMG), c([[[[True]]], [[[False]]]])))
    u8 = gray.transform_images(c(IMG.astype(np.uint8)), c([[[[True]]], [[[True]]]]))
    assert u8.dtype == gt.uint8                           # Keras keeps the images' dtype
    check("grayscale_u8", u8)
    check("grayscale_cf", A.RandomGrayscale(data_format="channels_first").transform_images(
        c(IMG.transpose(0, 3, 1, 2)), c([[[[True]]], [[[False]]]])))
    check("hue", A.RandomHue(0.5).transform_images(c(IMG), {"factor": c([0.3, -0.2],
                                                                          np.float32)}))
    check("hue_cf", A.RandomHue(0.5, value_range=(0, 1), data_format="channels_first")
          .transform_images(c(IMG.transpose(0, 3, 1, 2) / 255.0),
                            {"factor": c([0.45, -0.35], np.float32)}))
    check("saturation", A.RandomSaturation(0.5).transform_images(
        c(IMG), {"factor": c([0.5, 2.0], np.float32)}))
    check("saturation_01", A.RandomSaturation(0.5, value_range=(0, 1)).transform_images(
        c(IMG / 255.0), {"factor": c([1.7, 0.25], np.float32)}))
    check("degeneration", A.RandomColorDegeneration(0.5).transform_images(
        c(IMG), {"factor": c([[[[0.3]]], [[[-0.4]]]], np.float32)}))
    check("sharpness", A.RandomSharpness(0.5).transform_images(
        c(IMG), {"factor": c([0.2, 0.9], np.float32)}))
    check("sharpness_cf", A.RandomSharpness(0.5, value_range=(0, 200),
                                            data_format="channels_first").transform_images(
        c(IMG.transpose(0, 3, 1, 2)), {"factor": c([0.05, 0.7], np.float32)}))
    check("posterization", A.RandomPosterization(4).transform_images(
        c(IMG), {"shift_factor": c([4, 2], np.uint8)}))
    check("posterization_01", A.RandomPosterization(4, value_range=(0, 1)).transform_images(
        c(IMG / 255.0), {"shift_factor": c([7, 1], np.uint8)}))
    blur = A.RandomGaussianBlur(kernel_size=(3, 5), sigma=(0.2, 0.9), value_range=(0, 200))
    check("blur", blur.transform_images(c(IMG), {"should_apply_blur": c([True, False]),
                                                 "blur_factor": c([0.6, 0.9], np.float32)}))
    blur = A.RandomGaussianBlur(kernel_size=3, data_format="channels_first")
    check("blur_cf", blur.transform_images(c(IMG.transpose(0, 3, 1, 2)), {
        "should_apply_blur": c([True, True]), "blur_factor": c([0.8, 0.3], np.float32)}))


def test_color_jitter_matches_keras(device):
    t = {"brightness": {"rgb_delta": c([[[[20.0]]], [[[-35.0]]]], np.float32)},
         "contrast": {"contrast_factor": c([[[[1.2]]], [[[0.8]]]], np.float32)},
         "saturation": {"factor": c([0.6, 1.5], np.float32)},
         "hue": {"factor": c([0.08, -0.05], np.float32)}}
    jitter = A.RandomColorJitter(brightness_factor=0.2, contrast_factor=0.3,
                                 saturation_factor=0.4, hue_factor=0.2)
    check("jitter", jitter.transform_images(c(IMG), t))
    jitter = A.RandomColorJitter(value_range=(0, 1), contrast_factor=0.3, hue_factor=0.2)
    check("jitter_01", jitter.transform_images(c(IMG / 255.0), t))


@pytest.mark.parametrize("fill_mode", ["reflect", "constant", "wrap", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_random_shear_matches_keras(device, fill_mode, interpolation):
    layer = A.RandomShear(0.3, 0.3, fill_mode=fill_mode, interpolation=interpolation,
                          fill_value=9.0)
    out = layer.transform_images(c(IMG), {"shear_factor": c([[0.2, -0.1], [-0.3, 0.25]],
                                                            np.float32)})
    check(f"shear_{fill_mode}_{interpolation}", out)


def test_random_perspective_matches_keras(device):
    for interp in ("bilinear", "nearest"):
        layer = A.RandomPerspective(interpolation=interp, fill_value=5.0)
        check(f"perspective_{interp}", layer.transform_images(c(IMG), {
            "apply_perspective": c([True, True]), "start_points": c(START),
            "end_points": c(END)}))
    check("perspective_skip", A.RandomPerspective().transform_images(c(IMG), {
        "apply_perspective": c([False, True]), "start_points": c(START),
        "end_points": c(END)}))


ELASTIC = np.random.default_rng(3).integers(0, 256, (1, 30, 28, 2)).astype(np.float32)
NOISE = np.random.default_rng(5).standard_normal((1, 30, 28)).astype(np.float32)


@pytest.mark.parametrize("fill_mode,interpolation", [
    ("reflect", "bilinear"), ("constant", "bilinear"), ("wrap", "bilinear"),
    ("nearest", "bilinear"), ("reflect", "nearest"), ("constant", "nearest")])
def test_random_elastic_transform_matches_keras(device, fill_mode, interpolation):
    # Keras draws the noise inside ops.image.elastic_transform; the reference replaced
    # that draw by NOISE (the same field for x and y, as Keras' two draws share a seed)
    layer = A.RandomElasticTransform(fill_mode=fill_mode, interpolation=interpolation,
                                     fill_value=7.0, value_range=(0, 250))
    out = layer.transform_images(c(ELASTIC), {
        "apply_transform": c([True]), "distortion_factor": c(0.8, np.float32),
        "noise": c(NOISE)}).numpy()
    check(f"elastic_{fill_mode}_{interpolation}_rows", out[0, 10:13, :, 0])
    check(f"elastic_{fill_mode}_{interpolation}_sum", out.sum(axis=(0, 1, 2)), atol=0.05)


# keras.ops.image.map_coordinates(IMG5, [cy, cx], order, fill_mode, fill_value=-1): (sum,
# sum of out.flat[i] * cos(i), first values)
MAP_COORDINATES = {
    ("constant", 0): (138.9367, 38.36458, [27.8576, -1.0, -1.0, -1.0, -1.0, -1.0]),
    ("constant", 1): (133.9459, 42.77204, [33.2673, -1.0, -1.0, -1.0, 1.2201, -1.0]),
    ("nearest", 0): (890.1613, -9.358114, [27.8576, 45.3162, 45.3162, 0.0, 6.8986, 45.3162]),
    ("nearest", 1): (884.9792, -10.38979, [33.2673, 45.3162, 45.3162, 0.0, 6.8986, 45.3162]),
    ("wrap", 0): (932.1944, -25.35029, [27.8576, 43.0599, 12.1257, 56.8693, 0.0, 29.9598]),
    ("wrap", 1): (924.8331, -45.52516, [33.2673, 33.6661, 13.4066, 55.1547, 6.7248, 34.2142]),
    ("mirror", 0): (904.6851, 12.14634, [27.8576, 21.7136, 54.5243, 10.3304, 2.2974, 34.2377]),
    ("mirror", 1): (907.8181, 4.470687, [33.2673, 24.974, 52.9916, 11.7085, 3.5548, 30.1824]),
    ("reflect", 0): (821.0684, -7.494903, [27.8576, 10.3304, 40.8232, 10.3304, 6.8986, 21.7136]),
    ("reflect", 1): (814.77, -13.38609, [33.2673, 13.3079, 39.3712, 11.7085, 7.9622, 18.0304]),
}


@pytest.mark.parametrize("mode,order", sorted(MAP_COORDINATES))
def test_map_coordinates_matches_keras(device, mode, order):
    img = np.arange(30, dtype=np.float32).reshape(5, 6) ** 1.2
    rng = np.random.default_rng(7)
    cy = rng.uniform(-4, 9, (5, 6)).astype(np.float32)
    cx = rng.uniform(-4, 10, (5, 6)).astype(np.float32)
    cy[0, 0], cx[0, 0] = 2.5, 3.5                 # a tie: order 0 rounds half to even
    if mode == "mirror":                          # (Keras' mirror reads past the end there)
        cy = np.where((np.abs(cy) >= 4) & (np.abs(cy) < 6), 3.3, cy).astype(np.float32)
        cx = np.where((np.abs(cx) >= 5) & (np.abs(cx) < 7), 2.2, cx).astype(np.float32)
    out = A._map_coordinates(c(img[None, :, :, None]), c(cy[None]), c(cx[None]), order, mode,
                             -1.0).numpy().astype(np.float64).ravel()
    total, weighted, first = MAP_COORDINATES[(mode, order)]
    np.testing.assert_allclose(out[:6], first, atol=1e-3)
    np.testing.assert_allclose(out.sum(), total, atol=2e-3)
    np.testing.assert_allclose((out * np.cos(np.arange(out.size))).sum(), weighted, atol=2e-3)


def test_masks_and_mixing_match_keras(device):
    bounds = [c(np.array(v, np.float32)) for v in ([0.5, 1.2], [2.5, 4.9], [0.0, 1.5],
                                                    [2.2, 3.0])]
    mask = A.RandomErasing()._mask(c(IMG), *bounds)
    check("erasing_mask", gt.cast(mask, gt.float32)[..., 0])
    mask_cf = A.RandomErasing(data_format="channels_first")._mask(
        c(IMG.transpose(0, 3, 1, 2)), *bounds)
    check("erasing_mask_cf", gt.cast(mask_cf, gt.float32)[:, 0])
    fill = A.RandomErasing(fill_value=[10, 300, -5])._fill(c(IMG), None)
    np.testing.assert_array_equal(fill.numpy()[1, 2, 3], [10, 255, 0])   # clipped as Keras
    x0, x1, y0, y1 = bounds
    weight = gt.reshape(1.0 - (x1 - x0) * (y1 - y0) / 20.0, [-1, 1, 1, 1])
    t = {"permutation_order": c([1, 0], np.int32), "mix_weight": weight,
         "batch_masks": A.CutMix()._mask(c(IMG), *bounds)}
    check("cutmix", A.CutMix().transform_images(c(IMG), t))
    check("cutmix_weight", weight)
    check("cutmix_labels", A.CutMix().transform_labels(c(LAB), t))
    t = {"mix_weight": c([0.8, 0.35], np.float32), "permutation_order": c([1, 0], np.int64)}
    check("mixup", A.MixUp().transform_images(c(IMG), t))
    check("mixup_labels", A.MixUp().transform_labels(c(LAB), t))


def _rotation_matrix(deg, h, w):
    a = np.deg2rad(np.float32(deg)).astype(np.float32)
    cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
    a0, a1, b0, b1 = np.cos(a), -np.sin(a), np.sin(a), np.cos(a)
    return [a0, a1, cx - cx * a0 - cy * a1, b0, b1, cy - cx * b0 - cy * b1, 0, 0]


def _policy_transforms():
    return {
        "random_shear": {"shear_factor": c([[0.1, -0.05], [0.2, 0.1]], np.float32)},
        "random_translation": {"translations": c([[1.0, -0.5], [0.3, 0.7]], np.float32)},
        "random_rotation": {"rotation_matrix": c(np.array(
            [_rotation_matrix(20, 6, 7), _rotation_matrix(-35, 6, 7)], np.float32))},
        "random_posterization": {"shift_factor": c([3, 5], np.uint8)},
        "solarization": {"additions": c([[[[10.0]]], [[[0.0]]]], np.float32),
                         "thresholds": c([[[[60.0]]], [[[200.0]]]], np.float32)},
        "auto_contrast": None, "equalization": None,
        "random_brightness": {"rgb_delta": c([[[[15.0]]], [[[-25.0]]]], np.float32)},
        "random_color_degeneration": {"factor": c([[[[0.2]]], [[[0.1]]]], np.float32)},
        "random_contrast": {"contrast_factor": c([[[[1.1]]], [[[0.9]]]], np.float32)},
        "random_sharpness": {"factor": c([0.1, 0.3], np.float32)}}


def test_augmix_and_randaugment_match_keras(device):
    transforms = _policy_transforms()
    chains = [["random_shear", "random_posterization", "random_brightness",
               "random_contrast"],
              ["random_translation", "solarization", "random_color_degeneration",
               "auto_contrast"],
              ["random_rotation", "equalization", "random_sharpness"]]
    augmix = A.AugMix(chain_depth=4)
    for name in transforms:                         # each operation on its own
        check(f"sub_{name}", A._apply_with(getattr(augmix, name), c(IMG2), transforms[name]))
    t = {"chain_mixing_weights": c([0.5, 0.3, 0.2], np.float32),
         "weight_sample": c(0.4, np.float32),
         "chain_transforms": [[{"layer_name": n, "transformation": transforms[n]}
                               for n in chain] for chain in chains]}
    check("augmix", augmix.transform_images(c(IMG2), t))
    ra = A.RandAugment(num_ops=3, interpolation="nearest", value_range=(0, 300))
    check("randaugment", ra.transform_images(c(IMG2), {"transforms": transforms,
                                                       "layer_idxes": c([2, 6, 8])}))
    check("randaugment_b", ra.transform_images(c(IMG2), {"transforms": transforms,
                                                         "layer_idxes": [0, 0, 9]}))


def test_bounding_boxes_match_keras(device):
    boxes = {"boxes": c(BOX), "labels": c(BOX_LABELS)}
    shear = A.RandomShear(0.3, 0.3, bounding_box_format="xyxy")
    out = shear.transform_bounding_boxes(dict(boxes), {
        "shear_factor": c([[0.2, -0.1], [-0.3, 0.25]], np.float32),
        "input_shape": (2, 4, 5, 3)})
    check("shear_boxes", out["boxes"])
    check("shear_box_labels", out["labels"])
    shear = A.RandomShear(0.3, 0.3, bounding_box_format="center_xywh")
    out = shear.transform_bounding_boxes(dict(boxes), {
        "shear_factor": c([[0.5, 0.4], [-0.3, -0.6]], np.float32),
        "input_shape": (2, 4, 5, 3)})
    check("shear_boxes_cxywh", out["boxes"])
    check("shear_box_labels_cxywh", out["labels"])
    persp = A.RandomPerspective(bounding_box_format="xyxy")
    out = persp.transform_bounding_boxes(dict(boxes), {
        "apply_perspective": c([True, False]), "start_points": c(START),
        "end_points": c(END), "input_shape": (2, 4, 5, 3)})
    check("perspective_boxes", out["boxes"])
    check("perspective_box_labels", out["labels"])
    data = {"images": IMG, "bounding_boxes": {"boxes": BOX, "labels": BOX_LABELS}}
    out = A.MaxNumBoundingBoxes(3, fill_value=-2, bounding_box_format="xyxy")(data)
    check("maxnum3_boxes", out["bounding_boxes"]["boxes"])
    check("maxnum3_labels", out["bounding_boxes"]["labels"])
    np.testing.assert_array_equal(out["images"].numpy(), IMG)
    out = A.MaxNumBoundingBoxes(1, bounding_box_format="xyxy")(data)
    check("maxnum1_boxes", out["bounding_boxes"]["boxes"])
    check("maxnum1_labels", out["bounding_boxes"]["labels"])
    mix = A.MixUp(bounding_box_format="xyxy").transform_bounding_boxes(dict(boxes), {
        "mix_weight": c([0.8, 0.35]), "permutation_order": c([1, 0], np.int64)})
    check("mixup_boxes", mix["boxes"])
    np.testing.assert_array_equal(mix["labels"].numpy(), [[1, 2, 3, 4], [3, 4, 1, 2]])
    with pytest.raises(ValueError, match="bounding box format"):
        A.RandomInvert()(data)
    with pytest.raises(NotImplementedError):
        A.CutMix(bounding_box_format="xyxy")(data)


# gradients of sum(out * cos(i)) with respect to IMG, from tf.GradientTape over Keras'
# transform_images: (sum, sum of g.flat[i] * sin(i), first values)
GRADS = {
    "sharpness": (-3.024553, 2.186282, [0.58049, 0.31207, -0.24327, -0.56385, -0.39728,
                                        0.13455, 0.54268, 0.45187]),
    "degeneration": (-2.382722, 0.04861421, [0.8008, 0.57618, -0.25286, -0.81494, -0.69704,
                                             0.15205, 0.81277, 0.80396]),
    "blur": (0.2139233, -0.001427332, [0.27026, 0.15466, -0.10314, -0.22243, -0.18267,
                                       0.02504, 0.12802, 0.06984]),
    "mixup": (0.6243103, 4.075378, [0.18093, 0.26448, 0.10486, -0.15116, -0.26821, -0.13867,
                                    0.11837, 0.26657]),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_tf(device, name):
    fns = {
        "sharpness": lambda x: A.RandomSharpness(0.5).transform_images(
            x, {"factor": c([0.2, 0.9], np.float32)}),
        "degeneration": lambda x: A.RandomColorDegeneration(0.5).transform_images(
            x, {"factor": c([[[[0.3]]], [[[-0.4]]]], np.float32)}),
        "blur": lambda x: A.RandomGaussianBlur(kernel_size=(3, 5), sigma=(0.2, 0.9),
                                               value_range=(0, 300)).transform_images(
            x, {"should_apply_blur": c([True, False]), "blur_factor": c([0.6, 0.9],
                                                                         np.float32)}),
        "mixup": lambda x: A.MixUp().transform_images(
            x, {"mix_weight": c([0.8, 0.35], np.float32),
                "permutation_order": c([1, 0], np.int64)}),
    }
    x = c(IMG)
    w = c(np.cos(np.arange(IMG.size)).reshape(IMG.shape).astype(np.float32))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.reduce_sum(fns[name](x) * w)
    g = tape.gradient(y, x).numpy().astype(np.float64).ravel()
    total, weighted, first = GRADS[name]
    np.testing.assert_allclose(g[:8], first, atol=1e-4)
    np.testing.assert_allclose(g.sum(), total, atol=1e-4)
    np.testing.assert_allclose((g * np.sin(np.arange(g.size))).sum(), weighted, atol=1e-4)


# --- the random parts -------------------------------------------------------------------------

def _rate(layer, x, changed):
    out = layer(x, training=True).numpy()
    return np.mean([changed(out[i], x[i]) for i in range(len(x))])


def test_per_image_rates_over_many_draws(device):
    x = np.random.default_rng(2).uniform(10, 240, (400, 16, 16, 3)).astype(np.float32)
    differs = (lambda a, b: not np.allclose(a, b, atol=1e-3))
    # probability 0.5 for every image; factor f: a probability drawn from [0, f)
    assert abs(_rate(A.RandomInvert((0.5, 0.5), seed=1), x, differs) - 0.5) < 0.08
    assert abs(_rate(A.RandomInvert(0.6, seed=1), x, differs) - 0.3) < 0.08
    assert abs(_rate(A.RandomGrayscale(0.3, seed=1), x, differs) - 0.3) < 0.08
    assert abs(_rate(A.RandomGaussianBlur((0.5, 0.5), sigma=(0.8, 0.8), seed=1), x,
                     differs) - 0.5) < 0.08
    assert abs(_rate(A.RandomPerspective(0.5, seed=1), x, differs) - 0.25) < 0.08
    assert abs(_rate(A.RandomErasing((0.8, 0.8), seed=1), x, differs) - 0.8) < 0.08
    inverted = A.RandomInvert((1.0, 1.0), seed=1)(x, training=True).numpy()
    np.testing.assert_allclose(inverted, 255.0 - x, rtol=1e-6)


def test_draws_per_image_and_their_ranges(device):
    x = c(np.random.default_rng(2).uniform(0, 255, (300, 3, 3, 3)).astype(np.float32))
    hue = A.RandomHue((0.2, 0.4), seed=3).get_random_transformation(x)["factor"].numpy()
    assert ((np.abs(hue) >= 0.1) & (np.abs(hue) < 0.2)).all()
    assert 0.4 < (hue < 0).mean() < 0.6                          # a random sign
    sat = A.RandomSaturation(0.5, seed=3).get_random_transformation(x)["factor"].numpy()
    d = sat / (1 + sat)                                          # back to the draw
    assert d.min() >= -0.5 - 1e-5 and d.max() < 0.5 and d.std() > 0.2
    post = A.RandomPosterization((2, 6), seed=3).get_random_transformation(x)
    bits = 8 - post["shift_factor"].numpy().astype(int)
    assert set(bits) == {2, 3, 4, 5}                             # [2, 6), as Keras' randint
    sol = A.Solarization((0.1, 0.2), (0.5, 0.6), seed=3).get_random_transformation(x)
    add = sol["additions"].numpy()
    assert add.shape == (300, 1, 1, 1) and add.min() >= 0.1 and add.max() < 0.2 * 255
    shear = A.RandomShear((0.1, 0.2), 0.0, seed=3).get_random_transformation(x)
    sx = shear["shear_factor"].numpy()[:, 0]
    assert ((np.abs(sx) >= 0.1) & (np.abs(sx) < 0.2)).all() and 0.4 < (sx < 0).mean() < 0.6
    mix = A.MixUp(alpha=2.0, seed=3).get_random_transformation(x)
    w = mix["mix_weight"].numpy()
    assert ((w > 0) & (w < 1)).all() and abs(w.mean() - 0.5) < 0.05
    assert abs(w.var() - 0.05) < 0.02                            # Beta(2, 2): variance 0.05
    assert sorted(mix["permutation_order"].numpy()) == list(range(300))
    cut = A.CutMix(seed=3).get_random_transformation(x)
    cw = cut["mix_weight"].numpy()
    assert cw.shape == (300, 1, 1, 1) and cw.min() >= 0 and cw.max() <= 1
    aug = A.AugMix(num_chains=4, seed=3).get_random_transformation(x)
    np.testing.assert_allclose(aug["chain_mixing_weights"].numpy().sum(), 1.0, rtol=1e-5)
    assert len(aug["chain_transforms"]) == 4
    ra = A.RandAugment(num_ops=3, seed=3).get_random_transformation(x)
    assert len(ra["layer_idxes"]) == 3 and set(ra["transforms"]) == {
        A.RandAugment._AUGMENT_LAYERS[i] for i in ra["layer_idxes"]}


ALL = [lambda: A.Solarization(0.2, 0.5, seed=4), lambda: A.RandomInvert((0.5, 1.0), seed=4),
       lambda: A.RandomGrayscale(1.0, seed=4), lambda: A.RandomHue(0.3, seed=4),
       lambda: A.RandomSaturation(0.4, seed=4), lambda: A.RandomColorDegeneration(0.5, seed=4),
       lambda: A.RandomColorJitter(brightness_factor=0.2, contrast_factor=0.2,
                                   saturation_factor=0.3, hue_factor=0.1, seed=4),
       lambda: A.RandomSharpness(0.6, seed=4), lambda: A.RandomPosterization(5, seed=4),
       lambda: A.RandomShear(0.3, 0.2, seed=4), lambda: A.RandomPerspective((0.5, 1.0), seed=4),
       lambda: A.RandomErasing((0.5, 1.0), seed=4),
       lambda: A.RandomGaussianBlur((1.0, 1.0), sigma=(0.5, 1.0), seed=4),
       lambda: A.RandomElasticTransform((0.5, 1.0), seed=4), lambda: A.CutMix(seed=4),
       lambda: A.MixUp(seed=4), lambda: A.AugMix(seed=4), lambda: A.RandAugment(seed=4),
       lambda: A.Equalization(), lambda: A.AutoContrast()]


@pytest.mark.parametrize("make", ALL, ids=lambda m: type(m()).__name__)
def test_layers_on_the_device_seeded_and_at_inference(device, make):
    x = c(np.random.default_rng(5).uniform(0, 255, (6, 24, 22, 3)).astype(np.float32))
    layer = make()
    if device.name.startswith("strict"):
        device.reset_counters()
    out = layer(x)                                   # a direct call augments
    assert out.device == device.name and out.shape == x.shape and out.dtype == gt.float32
    if device.name.startswith("strict"):
        assert device.sync_count == 0                # drawn and applied on the device
    assert not np.allclose(out.numpy(), x.numpy())
    again = type(layer).from_config(layer.get_config())(x)
    np.testing.assert_allclose(again.numpy(), out.numpy(), rtol=1e-5, atol=1e-3)  # seeded
    one = layer(x[0])                                # one image
    assert one.shape == x.shape[1:]
    kept = layer(x, training=False)
    if isinstance(layer, A.AutoContrast):            # Keras: also at inference
        np.testing.assert_allclose(kept.numpy(), out.numpy())
    else:
        np.testing.assert_allclose(kept.numpy(), x.numpy())
    model = gt.keras.Sequential([make()])
    pred = model.predict(x.numpy(), verbose=0)
    if not isinstance(layer, A.AutoContrast):        # predict does not augment
        np.testing.assert_allclose(pred, x.numpy())


# --- configs, errors, dict inputs, Pipeline ---------------------------------------------------

# Keras 3.15's get_config of each layer (name and dtype left out)
CONFIGS = [
    (lambda: A.AutoContrast(), {"data_format": "channels_last", "value_range": [0, 255]}),
    (lambda: A.Equalization(), {"bins": 256, "value_range": [0, 255]}),
    (lambda: A.Solarization(0.3, (0.1, 0.2)), {
        "value_range": [0, 255], "addition_factor": (0, 0.3),
        "threshold_factor": (0.1, 0.2), "seed": None}),
    (lambda: A.RandomInvert(), {"factor": (0, 1.0), "value_range": (0, 255), "seed": None}),
    (lambda: A.RandomGrayscale(), {"factor": 0.5}),
    (lambda: A.RandomHue(0.2), {"factor": (0, 0.2), "value_range": (0, 255), "seed": None}),
    (lambda: A.RandomSaturation(0.2), {"factor": (-0.2, 0.2), "value_range": [0, 255]}),
    (lambda: A.RandomColorDegeneration(0.2), {"factor": (-0.2, 0.2),
                                              "value_range": [0, 255]}),
    (lambda: A.RandomColorJitter(), {
        "value_range": (0, 255), "brightness_factor": None, "contrast_factor": None,
        "saturation_factor": None, "hue_factor": None, "seed": None}),
    (lambda: A.RandomSharpness(0.2), {"factor": (0, 0.2), "value_range": [0, 255]}),
    (lambda: A.RandomPosterization(3), {"factor": (1, 3), "value_range": [0, 255]}),
    (lambda: A.RandomShear(0.2), {
        "x_factor": (-0.2, 0.2), "y_factor": (-0.0, 0.0), "fill_mode": "reflect",
        "interpolation": "bilinear", "seed": None, "fill_value": 0.0}),
    (lambda: A.RandomPerspective(), {"factor": (0, 1.0), "scale": 1.0,
                                     "interpolation": "bilinear", "fill_value": 0.0}),
    (lambda: A.RandomErasing(), {"factor": (0, 1.0), "scale": (0.02, 0.33),
                                 "fill_value": None, "value_range": (0, 255)}),
    (lambda: A.RandomGaussianBlur(kernel_size=(3, 5), sigma=(0.2, 0.7)), {
        "factor": (0, 1.0), "kernel_size": (3, 5), "sigma": (0.2, 0.7),
        "value_range": (0, 255)}),
    (lambda: A.RandomElasticTransform(), {
        "factor": (0, 1.0), "scale": (0, 1.0), "interpolation": "bilinear",
        "fill_mode": "reflect", "fill_value": 0.0, "value_range": (0, 255)}),
    (lambda: A.CutMix(), {"factor": (0, 1.0), "seed": None}),
    (lambda: A.MixUp(), {"alpha": 0.2, "seed": None}),
    (lambda: A.AugMix(), {"value_range": (0, 255), "num_chains": 3, "chain_depth": 3,
                          "factor": (0, 0.3), "alpha": 1.0, "all_ops": True,
                          "interpolation": "bilinear"}),
    (lambda: A.RandAugment(), {"value_range": (0, 255), "num_ops": 2, "factor": (0, 0.5),
                               "interpolation": "bilinear"}),
    (lambda: A.MaxNumBoundingBoxes(3), {"max_number": 3}),
]


@pytest.mark.parametrize("make,expected", CONFIGS, ids=lambda v: "" if isinstance(v, dict)
                         else type(v()).__name__)
def test_configs_match_keras(make, expected):
    layer = make()
    config = layer.get_config()
    for key, value in expected.items():
        assert config[key] == value, key
    assert config["data_format"] == "channels_last" and "bounding_box_format" not in config
    again = type(layer).from_config(config).get_config()
    assert {k: v for k, v in again.items() if k != "name"} == {
        k: v for k, v in config.items() if k != "name"}


def test_argument_errors():
    with pytest.raises(ValueError, match=r"`factor` argument .* range \[0, 1\]"):
        A.RandomInvert(2)
    with pytest.raises(ValueError, match=r"range \[1, 8\]"):
        A.RandomPosterization(9)
    with pytest.raises(ValueError, match="value_range"):
        A.Equalization(value_range=3)
    with pytest.raises(ValueError, match="value_range"):
        A.AutoContrast(value_range=(1, 2, 3))
    with pytest.raises(ValueError, match="between 0 and 1"):
        A.RandomGrayscale((0.1, 0.2))
    with pytest.raises(ValueError, match="odd number"):
        A.RandomGaussianBlur(kernel_size=4)
    with pytest.raises(ValueError, match="`sigma` argument"):
        A.RandomGaussianBlur(sigma=2.0)
    with pytest.raises(ValueError, match=r"`scale` argument .* \[0,1\]"):
        A.RandomPerspective(scale=2)
    with pytest.raises(ValueError, match="input_number=1.5"):
        A.RandomShear(1.5)
    with pytest.raises(ValueError, match="input_number=-0.1"):
        A.Solarization((-0.1, 0.5))
    with pytest.raises(ValueError, match="fill_value"):
        A.RandomErasing(fill_value=[1, 2])
    with pytest.raises(NotImplementedError, match="Unknown `fill_mode`"):
        A.RandomShear(0.1, fill_mode="mirror")
    with pytest.raises(NotImplementedError, match="Unknown `interpolation`"):
        A.RandomElasticTransform(interpolation="bicubic")
    with pytest.raises(NotImplementedError, match="Unknown `interpolation`"):
        A.AugMix(interpolation="area")
    with pytest.raises(ValueError, match="data_format"):
        A.RandomHue(0.1, data_format="nchw")
    with pytest.raises(ValueError, match="rank 3 or 4"):
        A.RandomInvert()(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="expected float dtype"):
        A.RandomSaturation(0.3)(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ValueError, match="Invalid channel size"):
        A.RandomColorDegeneration(0.3)(np.zeros((1, 2, 2, 2), np.float32))


def test_dict_inputs(device):
    x = np.random.default_rng(6).uniform(0, 1, (4, 8, 8, 3)).astype(np.float32)
    labels = np.eye(4, dtype=np.float32)
    out = A.CutMix(seed=2)({"images": x, "labels": labels})
    assert out["images"].shape == x.shape and out["images"].device == device.name
    np.testing.assert_allclose(out["labels"].numpy().sum(axis=1), 1.0, rtol=1e-5)
    out = A.MixUp(seed=2)({"images": x, "labels": labels, "segmentation_masks": x[..., :1]})
    w = out["labels"].numpy().max(axis=1)
    assert (w >= 0.5 - 1e-6).all() and out["segmentation_masks"].shape == (4, 8, 8, 1)
    # a colour layer leaves labels, masks and boxes as they are
    boxes = {"boxes": BOX[0], "labels": BOX_LABELS[0]}
    out = A.RandomInvert((1.0, 1.0), value_range=(0, 1), bounding_box_format="xyxy")(
        {"images": x[0], "labels": labels[0], "segmentation_masks": x[0, ..., :1],
         "bounding_boxes": boxes})
    np.testing.assert_allclose(out["images"].numpy(), 1.0 - x[0], rtol=1e-6)
    np.testing.assert_array_equal(out["bounding_boxes"]["boxes"].numpy(), BOX[0])
    np.testing.assert_array_equal(out["segmentation_masks"].numpy(), x[0, ..., :1])
    # geometric layers move segmentation masks with nearest interpolation
    mask = (np.arange(64).reshape(1, 8, 8, 1) % 3).astype(np.float32)
    shear = A.RandomShear(0.3, seed=2, bounding_box_format="xyxy")
    out = shear({"images": x[:1], "segmentation_masks": mask,
                 "bounding_boxes": {"boxes": BOX[:1], "labels": BOX_LABELS[:1]}})
    assert set(np.unique(out["segmentation_masks"].numpy())) <= {0.0, 1.0, 2.0}
    assert out["bounding_boxes"]["boxes"].shape == (1, 2, 4)
    with pytest.raises(ValueError, match="'images'"):
        A.RandomInvert()({"labels": labels})


def test_pipeline():
    L = gt.keras.layers
    pipe = L.Pipeline([L.RandomInvert((1.0, 1.0), value_range=(0, 1)),
                       L.AutoContrast(value_range=(0, 1)), L.Dense(2)])
    x = np.random.default_rng(0).uniform(0.1, 0.5, (2, 3, 3, 1)).astype(np.float32)
    out = pipe(x)
    assert out.shape == (2, 3, 3, 2) and len(pipe.trainable_variables) == 2
    inv = 1.0 - x
    lo, hi = inv.min(axis=(1, 2), keepdims=True), inv.max(axis=(1, 2), keepdims=True)
    dense = pipe.layers[2]
    expected = (inv - lo) / (hi - lo) @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pipe(x, training=False).numpy(),
                               dense((x - x.min(axis=(1, 2), keepdims=True)) / np.ptp(
                                   x, axis=(1, 2), keepdims=True)).numpy(), rtol=1e-5,
                               atol=1e-5)
    config = L.serialize(pipe)
    assert config["class_name"] == "Pipeline" and [
        e["class_name"] for e in config["config"]["layers"]] == ["RandomInvert",
                                                                 "AutoContrast", "Dense"]
    again = L.deserialize(config)
    assert [type(layer).__name__ for layer in again.layers] == ["RandomInvert",
                                                                 "AutoContrast", "Dense"]
    with pytest.raises(ValueError, match="`layers` key"):
        L.Pipeline.from_config({"name": "p"})
