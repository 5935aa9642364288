"""gt.audio (TF's decode_wav / encode_wav), keras.utils.audio_dataset_from_directory, the
MelSpectrogram and STFTSpectrogram layers and keras.initializers.STFT against TF 2.21 /
Keras 3.15: the expected numbers were computed with TensorFlow (and SciPy, for Keras' STFT
windows) and are written out here."""
import struct

import numpy as np
import pytest

import gradtape as gt
from gradtape import audio
from gradtape.audio import audio_dataset_from_directory
from gradtape.initializers import STFT, STFTInitializer, get_window
from gradtape.layers_spectral import MelSpectrogram, STFTSpectrogram

InvalidArgumentError = gt.errors.InvalidArgumentError

# --- decode_wav / encode_wav ------------------------------------------------------------------

WAV_IN = np.array([[0.0, 0.5], [-1.0, 0.99999], [1.5, -2.0], [0.25, -0.3333], [1e-5, -1e-5]],
                  np.float32)
# tf.audio.encode_wav(WAV_IN, 16000)
WAV_HEX = ("524946463800000057415645666d74201000000001000200803e000000fa000004001000646174"
           "6114000000000000400080ff7fff7f0080002056d500000000")
WAV_OUT = [[0.0, 0.5], [-1.0, 0.999969482421875], [0.999969482421875, -1.0],
           [0.25, -0.33331298828125], [0.0, 0.0]]


def test_encode_wav_bytes_equal_tf():
    data = audio.encode_wav(WAV_IN, 16000)
    assert data.dtype == gt.string and data.shape == ()
    assert data.numpy().hex() == WAV_HEX
    assert audio.encode_wav(gt.constant(WAV_IN), gt.constant(16000)).numpy().hex() == WAV_HEX
    # C's roundf (ties away from zero), clamping, NaN to 0
    ties = np.array([[2.5], [-2.5], [0.5], [-0.5], [32767.5]], np.float32) / 32768
    assert audio.encode_wav(ties, 7).numpy()[44:].hex() == "0300fdff0100ffffff7f"
    special = np.array([[np.nan], [np.inf], [-np.inf]], np.float32)
    assert audio.encode_wav(special, 5).numpy().hex() == (
        "524946462a00000057415645666d74201000000001000100050000000a0000000200100064617461"
        "060000000000ff7f0080")
    empty = audio.encode_wav(np.zeros((0, 2), np.float32), 100).numpy()
    assert empty.hex() == ("524946462400000057415645666d7420100000000100020064000000900100"
                           "00040010006461746100000000")


def test_decode_wav_equals_tf():
    data = bytes.fromhex(WAV_HEX)
    wav, rate = audio.decode_wav(data)
    assert wav.dtype == gt.float32 and rate.dtype == gt.int32 and int(rate.numpy()) == 16000
    np.testing.assert_array_equal(wav.numpy(), WAV_OUT)
    assert audio.decode_wav(gt.constant(data)).audio.shape == (5, 2)
    out = np.array(WAV_OUT)
    for channels, samples, expected in (
            (1, -1, out[:, :1]), (3, -1, out[:, [0, 1, 1]]), (-1, 3, out[:3]),
            (-1, 8, np.concatenate([out, np.zeros((3, 2))])), (1, 7, np.concatenate(
                [out[:, :1], np.zeros((2, 1))])), (2, 2, out[:2]), (0, -1, np.zeros((5, 0))),
            (-1, 0, np.zeros((0, 2)))):
        got = audio.decode_wav(data, desired_channels=channels, desired_samples=samples)
        np.testing.assert_array_equal(got.audio.numpy(), expected)
    mono = audio.encode_wav(np.array([[0.1], [0.2], [-0.3]], np.float32), 8000)
    np.testing.assert_array_equal(
        audio.decode_wav(mono, desired_channels=3).audio.numpy(),
        np.repeat([[0.100006103515625], [0.20001220703125], [-0.29998779296875]], 3, 1))
    tri = audio.encode_wav(np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], np.float32), 8000)
    np.testing.assert_array_equal(
        audio.decode_wav(tri, desired_channels=4).audio.numpy(),
        [[0.100006103515625, 0.20001220703125, 0.29998779296875, 0.29998779296875],
         [0.399993896484375, 0.5, 0.600006103515625, 0.600006103515625]])


def test_decode_wav_skips_other_chunks_as_tf():
    data = bytes.fromhex(WAV_HEX)
    fact = b"fact" + struct.pack("<I", 4) + b"abcd"
    with_fact = bytearray(data[:36] + fact + data[36:])
    struct.pack_into("<I", with_fact, 4, len(with_fact) - 8)
    np.testing.assert_array_equal(audio.decode_wav(bytes(with_fact)).audio.numpy(), WAV_OUT)
    # TF skips exactly the chunk's size (no pad byte after an odd one): the next read is off
    odd = bytearray(data[:36] + b"LIST" + struct.pack("<I", 3) + b"abc\x00" + data[36:])
    with pytest.raises(InvalidArgumentError, match="No data chunk found in WAV"):
        audio.decode_wav(bytes(odd))


def test_wav_errors_are_tfs():
    data = bytes.fromhex(WAV_HEX)
    cases = [(b"hello", "Header mismatch: Expected RIFF but found hell"),
             (data[:30], "Data too short when trying to read string"),
             (data[:-2], "Data too short when trying to read string")]
    bits = bytearray(data)
    struct.pack_into("<H", bits, 34, 8)
    cases.append((bytes(bits), "Can only read 16-bit WAV files, but received 8"))
    fmt = bytearray(data)
    struct.pack_into("<H", fmt, 20, 3)
    cases.append((bytes(fmt), r"Bad audio format for WAV: Expected 1 \(PCM\), but got3"))
    size = bytearray(data)
    struct.pack_into("<I", size, 16, 40)
    cases.append((bytes(size), "Bad format chunk size for WAV: Expected 16 or 18, but got40"))
    for contents, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            audio.decode_wav(contents)
    with pytest.raises(InvalidArgumentError, match="desired_channels must be >= -1, got -2"):
        audio.decode_wav(data, desired_channels=-2)
    with pytest.raises(InvalidArgumentError, match="desired_samples must be >= -1, got -2"):
        audio.decode_wav(data, desired_samples=-2)
    with pytest.raises(InvalidArgumentError, match=r"contents must be scalar, got shape \[2\]"):
        audio.decode_wav([data, data])
    with pytest.raises(InvalidArgumentError, match=r"audio must be 2-dimensional\[3\]"):
        audio.encode_wav(np.zeros(3, np.float32), 100)
    with pytest.raises(InvalidArgumentError, match=r"num_channels must be in \(0, 2\^16\)"):
        audio.encode_wav(np.zeros((2, 0), np.float32), 100)
    with pytest.raises(InvalidArgumentError,
                       match=r"sample_rate must be in \(0, 2\^32\), got: 18446744073709551611"):
        audio.encode_wav(np.zeros((2, 1), np.float32), -5)
    with pytest.raises(InvalidArgumentError, match="sample_rate should be a scalar"):
        audio.encode_wav(np.zeros((2, 1), np.float32), [5])
    with pytest.raises(InvalidArgumentError, match="expected to be a float tensor"):
        audio.encode_wav(gt.constant(np.zeros((2, 1))), 5)


def test_wav_on_the_strict_device():
    with gt.device("strict:0"):
        data = audio.encode_wav(gt.constant(WAV_IN), 16000)
        wav, rate = audio.decode_wav(data)
    assert data.numpy().hex() == WAV_HEX
    assert wav.device == "strict:0" and rate.device == "strict:0"
    np.testing.assert_array_equal(wav.numpy(), WAV_OUT)


# --- audio_dataset_from_directory -------------------------------------------------------------

@pytest.fixture
def wav_dir(tmp_path):
    """Three class folders of four mono files of 5 + 3 i + class samples (the files TF wrote
    for the references below)."""
    rng = np.random.RandomState(1)
    for c, cls in enumerate(["cat", "dog", "eel"]):
        (tmp_path / cls).mkdir()
        for i in range(4):
            n = 5 + 3 * i + c
            x = (np.round(rng.uniform(-1, 1, (n, 1)) * 1000) / 1000).astype(np.float32)
            (tmp_path / cls / f"f{i}.wav").write_bytes(audio.encode_wav(x, 8000).numpy())
    return str(tmp_path)


def test_audio_dataset_padded_batches(wav_dir):
    ds = audio_dataset_from_directory(wav_dir, batch_size=5, shuffle=False, verbose=False)
    assert ds.class_names == ["cat", "dog", "eel"]
    batches = list(ds)
    assert [tuple(a.shape) for a, _ in batches] == [(5, 14, 1), (5, 15, 1), (2, 16, 1)]
    assert batches[0][1].dtype == gt.int32 and batches[0][0].dtype == gt.float32
    labels = [y.numpy().tolist() for _, y in batches]
    assert labels == [[0, 0, 0, 0, 1], [1, 1, 1, 2, 2], [2, 2]]
    sums = np.concatenate([a.numpy()[:, :, 0].sum(1) for a, _ in batches])
    np.testing.assert_allclose(sums, [-1.826, -2.262, 0.3311, 0.964, 1.151, -2.838, -3.009,
                                      2.099, 1.402, 1.782, 1.913, -2.014], atol=2e-4)


def test_audio_dataset_ragged_and_fixed_length(wav_dir):
    ds = audio_dataset_from_directory(wav_dir, batch_size=5, shuffle=False, ragged=True,
                                      verbose=False)
    batches = list(ds)
    assert all(isinstance(a, gt.RaggedTensor) and a.ragged_rank == 2 for a, _ in batches)
    assert [a.row_lengths().numpy().tolist() for a, _ in batches] == [
        [5, 8, 11, 14, 6], [9, 12, 15, 7, 10], [13, 16]]
    assert [a.flat_values.shape[0] for a, _ in batches] == [44, 53, 29]
    single = audio_dataset_from_directory(wav_dir, batch_size=None, shuffle=False,
                                          output_sequence_length=8, label_mode="categorical",
                                          verbose=False)
    wav, label = next(iter(single))
    np.testing.assert_array_equal(wav.numpy()[:, 0], [
        -0.165985107421875, 0.441009521484375, -1.0, -0.394989013671875, -0.70599365234375,
        0.0, 0.0, 0.0])
    np.testing.assert_array_equal(label.numpy(), [1, 0, 0])
    unlabelled = audio_dataset_from_directory(wav_dir, batch_size=4, shuffle=False,
                                              ragged=True, label_mode=None, verbose=False)
    assert isinstance(next(iter(unlabelled)), gt.RaggedTensor)
    binary = audio_dataset_from_directory(wav_dir, batch_size=3, shuffle=False,
                                          class_names=["eel", "cat"], label_mode="binary",
                                          verbose=False)
    got = [(tuple(a.shape), y.numpy().ravel().tolist()) for a, y in binary]
    assert got == [((3, 13, 1), [0, 0, 0]), ((3, 16, 1), [0, 1, 1]), ((2, 14, 1), [1, 1])]


def test_audio_dataset_validation_split(wav_dir, capsys):
    train, val = audio_dataset_from_directory(
        wav_dir, batch_size=2, shuffle=True, seed=3, validation_split=0.25, subset="both",
        output_sequence_length=6)
    assert capsys.readouterr().out.splitlines() == [
        "Found 12 files belonging to 3 classes.", "Using 9 files for training.",
        "Using 3 files for validation."]
    assert [y.numpy().tolist() for _, y in val] == [[2, 2], [2]]
    wav, _ = next(iter(val))
    np.testing.assert_array_equal(wav.numpy()[:, :, 0], [
        [0.92999267578125, 0.326995849609375, 0.243011474609375, -0.77099609375,
         0.89898681640625, -0.100006103515625],
        [0.766998291015625, 0.24700927734375, 0.50201416015625, -0.302001953125,
         -0.459991455078125, 0.7919921875]])
    assert sorted(sum((y.numpy().tolist() for _, y in train), [])) == [0, 0, 0, 0, 1, 1, 1, 1,
                                                                         2]


def test_audio_dataset_errors(wav_dir, tmp_path):
    with pytest.raises(ValueError, match="Cannot set both `ragged` and"):
        audio_dataset_from_directory(wav_dir, ragged=True, output_sequence_length=4)
    with pytest.raises(ValueError, match="label_mode"):
        audio_dataset_from_directory(wav_dir, label_mode="sparse")
    with pytest.raises(ValueError, match="list/tuple of integer labels"):
        audio_dataset_from_directory(wav_dir, labels="bad")
    with pytest.raises(ValueError, match="exactly 2"):
        audio_dataset_from_directory(wav_dir, label_mode="binary", verbose=False)
    with pytest.raises(ValueError, match="`sampling_rate` should have an integer value"):
        audio_dataset_from_directory(wav_dir, sampling_rate=1.5)
    with pytest.raises(ValueError, match="`sampling_rate`"):
        audio_dataset_from_directory(wav_dir, sampling_rate=8000)
    with pytest.raises(ValueError, match="must provide a `seed`"):
        audio_dataset_from_directory(wav_dir, validation_split=0.2, subset="training")
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    with pytest.raises(ValueError, match="No audio files found"):
        audio_dataset_from_directory(str(empty), verbose=False)


# --- MelSpectrogram, STFTSpectrogram, keras.initializers.STFT --------------------------------

# Keras' outputs for the audio and signals below (float32)
MEL_DB = np.array([
    5.4884696, 3.4770818, 6.3213758, 9.3411589, 14.749849, 6.8564124,
    7.0815468, 9.4466705, 12.841989, 9.6850405, 4.1891685, 8.6710339,
    16.27644, 12.058052, 9.4049435, 10.863892, 11.724298, 13.058734,
    13.597591, 5.0851097, 7.9551702, 7.7581267, -3.3013015, 8.3339653,
    13.840909, 0.57719481, 10.199781, 8.0460567, 12.859781, 14.054731,
    12.987365, 10.528128, 12.447008, 11.389816, 10.759609, 12.928555,
    14.11048, 14.426582, 12.632563, 9.122468,
]).reshape((2, 4, 5))

MEL_HAM = np.array([
    3.2176125, 5.1739149, 6.905921, 6.6776819, 7.1295457, 9.2890368,
    4.2952614, 7.1020546, 9.4939499, 8.3186455, 9.3555508, 7.5204916,
    1.4991274, 8.8204746, 11.49101, 11.011685, 9.7811575, 8.7296715,
    5.8943186, 7.2513509, 1.7471383, 1.9728929, 4.8250837, 9.593442,
    3.2835462, 6.8403468, 6.3966017, 8.0732422, 10.027449, 10.179539,
    10.398677, 8.9505024, 10.767593, 12.170858, 10.1217, 10.170798,
]).reshape((2, 3, 6))

MEL_LIN = np.array([
    0.7871455, 5.6049461, 4.3684149, 7.5175862, 1.169348, 7.2008343,
    18.479237, 25.861496, 2.4514251, 1.8860133, 4.3768129, 3.6268113,
    18.654007, 36.365623, 10.963027, 14.779733, 9.8422775, 3.2807846,
    8.3872423, 17.765518, 10.240501, 9.9281588, 14.253004, 22.95937,
    13.532012, 4.1192551, 3.4727902, 0.9028694, 7.580009, 5.5565696,
    2.9445062, 6.515801, 6.8332834, 9.5007591, 27.102085, 25.171827,
    10.875395, 13.699655, 8.2912455, 7.5375857, 11.937049, 16.289776,
    11.355295, 7.0561519, 8.0595779, 17.869097, 10.996849, 17.333941,
    24.546885, 17.954109, 20.265741, 11.286976, 3.8768163, 5.9530759,
]).reshape((2, 3, 9))

STFT_LOG = np.array([
    0.039913565, -0.043451864, -0.20773898, -0.86208969, -0.37703606, -1.241961,
    -1.1719787, -0.75315845, -0.28263718, -0.22380395, -2.107265, -0.9711777,
    -0.17509747, -0.34827632, -1.254755, 0.080248825, 0.025316818, -0.27727863,
    -1.1180418, -0.59791601, -0.06833186, -0.11332802, -0.81777489, -0.97066611,
    -0.75404763, -0.50663352, -0.74279255, -1.29695, -0.65766335, -0.22327407,
    -1.1476722, -0.46279764, -1.0347849, -1.1926755, -1.3047378, -0.85345691,
    -0.99212706, -0.6220234, -0.57006383, -0.87766945, -0.47053295, -0.97473598,
    -1.2774941, -0.63310325, -1.6899693, -0.63069528, -0.89827943, -0.32387415,
    -0.24487969, -0.79258072,
]).reshape((1, 5, 10))

STFT_MAGNITUDE_SAME = np.array([
    0.68989253, 0.23904902, 0.62699795, 1.0300831, 1.0584015, 0.36450824,
    0.54306835, 0.59100032, 0.16999003, 0.25013283, 0.22078018, 0.41672081,
    0.83830142, 0.64118761, 0.34915775, 0.79522687, 0.77183682, 0.69678181,
    0.55470324, 0.62910467, 0.84284824, 0.94832176, 0.70708716, 0.084925309,
    0.28762954, 0.16316077, 0.43726847, 0.1546067, 0.65360683, 0.92770541,
    0.52377361, 0.69326472, 0.66675848, 0.61364728, 0.65846378, 0.10687962,
    0.49954581, 0.6163637, 0.51350099, 0.079442248, 0.73802781, 0.69923705,
    0.59124577, 0.51659667, 0.50755906, 0.22114986, 0.2003295, 0.41198528,
    0.70200503, 0.66179883, 0.14396547, 0.36393464, 0.52439833, 0.52779961,
    0.50174147, 0.28487247, 0.57319456, 0.72981977, 0.48986197, 0.27788913,
]).reshape((1, 6, 10))

STFT_PSD = np.array([
    0.29814517, 0.52110767, 0.32527497, 0.095428057, 0.068029828, 0.01478082,
    0.04057803, 0.13025641, 0.28054839, 0.15830056, 0.0098866662, 0.10028704,
    0.31619582, 0.2477468, 0.046270274, 0.33304095, 0.5762552, 0.29933995,
    0.070212416, 0.047801636, 0.23047867, 0.37492356, 0.12866767, 0.082142286,
    0.054278284, 0.091827333, 0.12669443, 0.056464449, 0.14365967, 0.13990851,
    0.031454403, 0.14041969, 0.053928886, 0.017281296, 0.012037423, 0.047923602,
    0.085705683, 0.1416744, 0.16846323, 0.066344686, 0.077219486, 0.050009556,
    0.02386119, 0.091738522, 0.011197372, 0.046789512, 0.076437458, 0.23648997,
    0.2802746, 0.070948131,
]).reshape((1, 5, 10))

STFT_REAL_ED = np.array([
    -2.888824, -0.46094823, 1.0187216, 0.72956276, -1.7290003, 1.7077069,
    0.095395565, -0.71941566, 1.9361871, 1.9902685, 0.061537325, 1.694593,
    -0.19459063, -0.65859163, -0.69629741, -1.8337432, -1.4083097, 0.22989765,
    -0.73914057, -2.0442047, 0.88247377, -0.16368079, 2.2531538, -0.51450026,
    -0.44816518, 0.46164274, 0.92514926, 0.97524011, -1.1314561, 0.86959195,
    1.0377041, 1.1737862, -1.1207714, 0.48708284, -0.54299974, 0.15259072,
    0.59283018, 2.2376864, -1.0604593, -0.65117383,
]).reshape((1, 4, 5, 2))

STFT_IMAG = np.array([
    0, 0.65985578, -1.3982113e-07, 0, 0.075384632, 5.524247e-08,
    0, 0.65489846, 5.1569831e-08, 0, 0.38683853, -1.1453876e-07,
    0, 0.49462488, -1.2576211e-07, 0, 0.45698309, -1.213288e-07,
    0, -0.13406087, 1.2716481e-07, 0, -0.62210143, -6.7568052e-08,
    0, -0.10646278, -7.6115043e-08, 0, 0.29622287, -6.7706722e-08,
    0, -0.72975218, 4.2574595e-08, 0, 0.58876574, -4.4345217e-08,
    0, -0.22840622, 1.4293762e-07, 0, 0.38721144, -4.5451841e-08,
    0, 0.20293473, -7.0787545e-09, 0, -0.5884999, 7.2782747e-08,
    0, -0.19935825, -1.0353262e-07, 0, -0.040768214, -7.2234116e-08,
    0, 0.0049567497, -2.7705077e-08, 0, 0.43328854, -1.0307284e-07,
    0, -0.3837958, 1.073816e-07, 0, -0.74025601, 8.42182e-08,
]).reshape((1, 11, 6))

STFT_ANGLE = np.array([
    3.1415927, 3.1342418, -9.8385563e-08, 3.1415927, -0.3633503, 8.0160795e-08,
    3.1415927, 2.6201499, -5.8327316e-07, 0, 1.5742828, -1.3975745e-07,
    0, 2.6444914, -3.1415927, 0, -0.56805342, -4.4877154e-08,
    3.1415927, -0.48190814, 3.1415925, 0, 1.6801311, -3.1415925,
    0, -2.8765697, -2.3749514e-07, 3.1415927, -2.4351656, -1.1728126e-07,
    0, -0.7110101, 3.1415925, 0, -1.1244733, 3.1415923,
]).reshape((1, 6, 6))

INIT_IMAG = np.array([
    -0, -0, -0, -0, -0, -0.21850803,
    -0.21850799, 2.2057757e-08, -0, -0.57206136, 0.57206142, -1.1549592e-07,
    -0, 5.7747958e-08, -1.1549592e-07, 1.5754189e-08, -0, 0.21850803,
    -0.21850799, -8.8231026e-08, -0, 0, 0, 0,
]).reshape((6, 1, 4))

INIT_REAL_WIN = np.array([
    0.036363635, 0.036363635, 0.036363635, 0.11818182, -5.1658913e-09, -0.11818182,
    0.2, -0.2, 0.2, 0.28181818, 3.3606482e-09, -0.28181818,
    0.36363637, 0.36363637, 0.36363637,
]).reshape((5, 1, 3))

INIT_REAL_PERIODIC = np.array([
    0.079999998, 0.079999998, 0.079999998, 0.31, -1.355053e-08, -0.31,
    0.76999998, -0.76999998, 0.76999998, 1, 1.1924881e-08, -1,
    0.76999998, 0.76999998, 0.76999998, 0.31, -1.0470753e-07, -0.31,
]).reshape((6, 1, 3))

GRAD_MEL = np.array([
    1.6855458, 2.5013022, -0.77189267, 0.24494384, 0.60359472, -0.24934727,
    -0.35147378, -1.2337686, 1.0627042, 0.59840286, -1.656479, 0.79478312,
    -0.73614222, -0.85821134, 1.3594141, 0.3936311, 0.028488785, 0.38348252,
    0.10709499, -0.19995341, -0.39030623, 0.21218836, 1.0455263, 1.7483046,
    -0.093064897, -0.29594797, 0.84740186, 0.13441622, 0.16458146, -0.5002681,
    -0.55248904, 0.94699466, -0.21922755, 1.226564, 2.0392187, -1.5659404,
    -0.39273313, 0.76566827, -0.3701821, -0.48528576, 1.3958348, 0.14490303,
    -0.10309639, 0.54141402, 0.035721146, 0.020356432, 0.58625031, 0.32006589,
    1.6195177, 1.0057603, -0.4046948, -1.0851579, -0.84032017, 1.1798507,
    -0.4514339, -1.2589375, 1.3067788, -1.5771363, 0.68261206, 1.4621271,
    -0.25449347, 1.3832936, -0.327382, -1.2236069, 0.21876663, -0.24888326,
    0.5648731, 0.069070354, 0.54401439, 0.97256756, 0.98930919, -0.14245954,
    -0.11303817, 1.4102726, 0.54508501, -0.013009176, -1.2021025, -1.2812197,
    0.45435214, -0.79249537, -0.49255905, 1.4118, -1.956538, -0.53513116,
    0.76305938, 0.37494758, 0.53720814, -0.81316578, 0.57278496, 0.47397491,
    -1.4623792, 0.45833519, 0.82888854, 0.77624512, -0.15812157, -0.31744713,
    0.37981978, -0.25945592, 0.10136822, -1.1584008, -1.345328, 0.15289605,
    -0.55421531, -0.12345868, -0.67746884, -0.43830022, -1.2584285, -0.036531851,
    1.4492762, -0.27971956, -1.6311373, 1.2966244, 0.42515379, -0.61525536,
    0.73210746, -0.10288598, -0.39459026, -0.22835079, -0.12234449, -0.80998093,
    -1.6756428, -0.67526448, 1.2395378, -0.74241298, -0.26416352, 1.2737361,
    0.67152733, 1.4103849,
]).reshape((2, 64))

GRAD_STFT_X = np.array([
    0, 0, -1.1276947, -0.66628158, 0.98804891, 1.1016561,
    -0.83874917, 1.2455754, 0.57712829, -0.71054232, -0.53600073, 1.2822614,
    1.2849813, -0.36525121, 1.1976658, 1.1858071, -0.21838157, -0.011434235,
    -1.199477, -0.35605407, -0.19257131, -1.0251962, -0.59055245, -0.77749836,
    -1.1354369, -1.0356522, 0.77030158, -1.0886493, 0.92452794, -0.70468646,
    1.1988331, 1.3134401, 0.82985812, 0.38484186, -0.54445297, 0.25928193,
    -1.3768004, 1.4484715, -0.0038770884, -1.2908106, -1.4704928, 0.59976834,
    -0.76663494, 1.3462892, 1.2437445, -0.56325144, 0, 0,
]).reshape((1, 24, 2))

GRAD_STFT_K = np.array([
    0, 1.1289698, 1.8991598e-06, 0, -2.7374535, -6.0008495e-07,
    0, 0.52691901, -7.0702566e-07, 0, 0.24482843, -1.3444749e-06,
]).reshape((4, 1, 3))

WINDOWS = {
    'hann_5_1': [0, 0.3454915, 0.9045085, 0.9045085, 0.3454915],
    'hann_5_0': [0, 0.5, 1, 0.5, 0],
    'hann_6_1': [0, 0.25, 0.75, 1, 0.75, 0.25],
    'hann_6_0': [0, 0.3454915, 0.9045085, 0.9045085, 0.3454915, 0],
    'blackman_5_1': [-1.3877788e-17, 0.20077014, 0.84922986, 0.84922986, 0.20077014],
    'blackman_5_0': [-1.3877788e-17, 0.34, 1, 0.34, -1.3877788e-17],
    'blackman_6_1': [-1.3877788e-17, 0.13, 0.63, 1, 0.63, 0.13],
    'blackman_6_0': [-1.3877788e-17, 0.20077014, 0.84922986, 0.84922986, 0.20077014,
                     -1.3877788e-17],
    'triang_5_1': [0.16666667, 0.5, 0.83333333, 0.83333333, 0.5],
    'triang_5_0': [0.33333333, 0.66666667, 1, 0.66666667, 0.33333333],
    'triang_6_1': [0.25, 0.5, 0.75, 1, 0.75, 0.5],
    'triang_6_0': [0.16666667, 0.5, 0.83333333, 0.83333333, 0.5, 0.16666667],
    'cosine_5_1': [0.25881905, 0.70710678, 0.96592583, 0.96592583, 0.70710678],
    'cosine_5_0': [0.30901699, 0.80901699, 1, 0.80901699, 0.30901699],
    'cosine_6_1': [0.22252093, 0.6234898, 0.90096887, 1, 0.90096887, 0.6234898],
    'cosine_6_0': [0.25881905, 0.70710678, 0.96592583, 0.96592583, 0.70710678, 0.25881905],
    'nuttall_5_1': [0.0003628, 0.11051525, 0.7982581, 0.7982581, 0.11051525],
    'nuttall_5_0': [0.0003628, 0.2269824, 1, 0.2269824, 0.0003628],
    'nuttall_6_1': [0.0003628, 0.0613345, 0.5292298, 1, 0.5292298, 0.0613345],
    'nuttall_6_0': [0.0003628, 0.11051525, 0.7982581, 0.7982581, 0.11051525, 0.0003628],
}

MEL_CLAMP = np.array([
    11.27644, 11.27644, 11.27644, 11.27644, 14.749849, 11.27644, 11.27644, 11.27644,
    12.841989, 11.27644, 11.27644, 11.27644, 16.27644, 12.058052, 11.27644, 11.27644,
    11.724298, 13.058734, 13.597591, 11.27644] + [11.27644] * 20).reshape((2, 4, 5))

MEL1_CLAMP = np.array([
    -10.573418, -10.573418, -10.573418, -10.573418, -6.1590905, -10.573418, -9.8002186,
    -10.573418, -7.1402187, -5.9452677, -7.0126348, -9.4718723, -7.5529914, -8.6101847,
    -9.2403917, -7.0714445, -5.8895197, -5.5734177, -7.3674374, -10.573418]).reshape((4, 5))


def _audio():
    return np.random.RandomState(5).uniform(-1, 1, (2, 64)).astype(np.float32)


def _signal():
    rng = np.random.RandomState(5)
    rng.uniform(-1, 1, (2, 64))
    return rng.uniform(-1, 1, (1, 24, 2)).astype(np.float32)


MEL_CONFIGS = {
    "db": dict(fft_length=32, sequence_stride=16, num_mel_bins=4, sampling_rate=8000),
    "ham": dict(fft_length=32, sequence_stride=12, sequence_length=20, window="hamming",
                num_mel_bins=3, sampling_rate=16000, min_freq=300.0, max_freq=5000,
                mag_exp=1.0, top_db=20.0, ref_power=0.5),
    "lin": dict(fft_length=16, sequence_stride=8, num_mel_bins=3, power_to_db=False,
                window=None, sampling_rate=4000),
}


@pytest.mark.parametrize("key,expected", [("db", MEL_DB), ("ham", MEL_HAM),
                                          ("lin", MEL_LIN)])
def test_mel_spectrogram_equals_keras(key, expected):
    layer = MelSpectrogram(**MEL_CONFIGS[key])
    x = _audio()
    out = layer(x)
    assert out.dtype == gt.float32 and out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(layer(x[0]).numpy(), expected[0], rtol=2e-6, atol=2e-6)
    assert list(layer.compute_output_shape((2, 64))) == [2] + list(expected.shape[1:])
    again = MelSpectrogram.from_config(layer.get_config())
    np.testing.assert_array_equal(again(x).numpy(), out.numpy())


def test_mel_spectrogram_top_db_is_over_the_batch():
    x = _audio()
    x[1] *= 0.1
    layer = MelSpectrogram(fft_length=32, sequence_stride=16, num_mel_bins=4,
                           sampling_rate=8000, top_db=5.0)
    np.testing.assert_allclose(layer(x).numpy(), MEL_CLAMP, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(layer(x[1]).numpy(), MEL1_CLAMP, rtol=2e-6, atol=2e-6)


def test_mel_spectrogram_config_and_errors():
    config = MelSpectrogram(fft_length=64, sampling_rate=8000).get_config()
    for key, value in dict(fft_length=64, sequence_stride=512, sequence_length=64,
                           window="hann", sampling_rate=8000, num_mel_bins=128, min_freq=20.0,
                           max_freq=4000, power_to_db=True, top_db=80.0, mag_exp=2.0,
                           min_power=1e-10, ref_power=1.0).items():
        assert config[key] == value
    with pytest.raises(ValueError, match="`fft_length` must be greater than or equal to"):
        MelSpectrogram(fft_length=10, sequence_length=20)
    with pytest.raises(ValueError, match="window"):
        MelSpectrogram(window="blackman")


STFT_CONFIGS = {
    "log": dict(frame_length=8),
    "magnitude_same": dict(mode="magnitude", frame_length=6, frame_step=4, padding="same",
                           window="hamming", periodic=True),
    "psd": dict(mode="psd", frame_length=8, scaling="spectrum", window="blackman"),
    "real_ed": dict(mode="real", frame_length=6, frame_step=5, fft_length=8, expand_dims=True,
                    window=None),
    "imag": dict(mode="imag", frame_length=4, scaling=None),
}


@pytest.mark.parametrize("key,expected", [
    ("log", STFT_LOG), ("magnitude_same", STFT_MAGNITUDE_SAME), ("psd", STFT_PSD),
    ("real_ed", STFT_REAL_ED), ("imag", STFT_IMAG)])
def test_stft_spectrogram_equals_keras(key, expected):
    layer = STFTSpectrogram(**STFT_CONFIGS[key])
    x = _signal()
    out = layer(x)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert tuple(layer.compute_output_shape(x.shape)) == expected.shape
    # channels first: the same numbers, laid out (batch, channels * bins, frames), or
    # (batch, channels, frames, bins) with expand_dims
    first = STFTSpectrogram(**STFT_CONFIGS[key], data_format="channels_first")
    got = first(np.transpose(x, (0, 2, 1))).numpy()
    want = np.transpose(expected, (0, 3, 1, 2) if expected.ndim == 4 else (0, 2, 1))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_stft_spectrogram_angle_and_stft_modes():
    x = _signal()
    angle = STFTSpectrogram(mode="angle", frame_length=4, frame_step=4, window="boxcar")(x)
    # (compared on the circle: a bin whose imaginary part is 0 may be +pi or -pi)
    np.testing.assert_allclose(np.cos(angle.numpy()), np.cos(STFT_ANGLE), atol=2e-6)
    np.testing.assert_allclose(np.sin(angle.numpy()), np.sin(STFT_ANGLE), atol=2e-6)
    config = dict(frame_length=4, window="triang")
    both = STFTSpectrogram(mode="stft", **config)(x).numpy()
    assert both.shape == (1, 11, 12)
    np.testing.assert_allclose([both.sum(), np.square(both).sum()], [4.9796795, 22.313785],
                               rtol=1e-5)
    real = STFTSpectrogram(mode="real", **config)(x).numpy().reshape(1, 11, 2, 3)
    imag = STFTSpectrogram(mode="imag", **config)(x).numpy().reshape(1, 11, 2, 3)
    np.testing.assert_allclose(both.reshape(1, 11, 2, 6),
                               np.concatenate([real, imag], -1), rtol=1e-6, atol=1e-7)


def test_stft_spectrogram_weights_config_and_errors():
    layer = STFTSpectrogram(mode="real", frame_length=6)
    layer(_signal())
    assert [w.name.split("/")[-1].split(":")[0] for w in layer.weights] == ["real_kernel"]
    assert layer.real_kernel.trainable and tuple(layer.real_kernel.shape) == (6, 1, 5)
    config = STFTSpectrogram(frame_length=16).get_config()
    for key, value in dict(mode="log", frame_length=16, frame_step=None, fft_length=None,
                           window="hann", periodic=False, scaling="density", padding="valid",
                           data_format="channels_last", expand_dims=False).items():
        assert config[key] == value
    with pytest.raises(ValueError, match="Invalid window name 'foo'"):
        STFTSpectrogram(window="foo")
    with pytest.raises(ValueError, match="Output mode is invalid"):
        STFTSpectrogram(mode="foo")
    with pytest.raises(ValueError, match="`frame_step` should be a positive integer"):
        STFTSpectrogram(frame_length=8, frame_step=9)
    with pytest.raises(ValueError, match="`fft_length` should be not less than"):
        STFTSpectrogram(frame_length=8, fft_length=4)
    with pytest.raises(ValueError, match="Padding is invalid"):
        STFTSpectrogram(padding="causal")
    with pytest.raises(TypeError, match="Invalid input type"):
        STFTSpectrogram(frame_length=8)(np.zeros((1, 16, 1), np.int32))
    with pytest.raises(ValueError, match="expected input"):
        STFTSpectrogram(frame_length=8)(np.zeros((16, 1), np.float32))
    with pytest.warns(UserWarning, match="power of two"):
        STFTSpectrogram(frame_length=8, fft_length=12)


def test_stft_initializer_equals_keras():
    np.testing.assert_allclose(STFT("imag", "hann", "density", False)((6, 1, 4)).numpy(),
                               INIT_IMAG, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        STFTInitializer("real", np.linspace(0.1, 1, 5), "spectrum")((5, 1, 3)).numpy(),
        INIT_REAL_WIN, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(STFT("real", "hamming", None, True)((6, 1, 3)).numpy(),
                               INIT_REAL_PERIODIC, rtol=1e-6, atol=1e-7)
    init = gt.keras.initializers.get("stft")
    assert isinstance(init, STFT)
    assert init.get_config() == {"side": "real", "window": "hann", "periodic": False,
                                 "scaling": "density"}
    assert gt.keras.initializers.serialize(init)["class_name"] == "STFT"
    with pytest.raises(ValueError, match="side should be 'real' or 'imag', not foo"):
        STFT("foo")
    with pytest.raises(ValueError, match="Scaling is invalid"):
        STFT(scaling="l2")


def test_scipy_windows():
    for key, expected in WINDOWS.items():
        name, length, periodic = key.rsplit("_", 2)
        np.testing.assert_allclose(get_window(name, int(length), bool(int(periodic))),
                                   expected, rtol=1e-7, atol=1e-9)


def test_spectrogram_gradients_equal_tf():
    a = gt.constant(_audio())
    mel = MelSpectrogram(fft_length=16, sequence_stride=8, num_mel_bins=3, sampling_rate=4000,
                         power_to_db=False, mag_exp=1.0)
    with gt.GradientTape() as tape:
        tape.watch(a)
        out = mel(a)
        loss = gt.reduce_sum(out * gt.reshape(gt.cos(gt.range(gt.size(out), dtype=gt.float32)),
                                              out.shape))
    np.testing.assert_allclose(tape.gradient(loss, a).numpy(), GRAD_MEL, rtol=1e-5, atol=2e-6)
    x = gt.constant(_signal())
    stft = STFTSpectrogram(mode="magnitude", frame_length=4, frame_step=2)
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = stft(x)
        loss = gt.reduce_sum(out * gt.reshape(gt.sin(gt.range(gt.size(out), dtype=gt.float32)),
                                              out.shape))
    gx, gk = tape.gradient(loss, [x, stft.imag_kernel])
    np.testing.assert_allclose(gx.numpy(), GRAD_STFT_X, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gk.numpy(), GRAD_STFT_K, rtol=1e-5, atol=1e-6)


def test_spectrograms_on_the_strict_device():
    with gt.device("strict:0"):
        mel = MelSpectrogram(**MEL_CONFIGS["db"])(gt.constant(_audio()))
        stft = STFTSpectrogram(**STFT_CONFIGS["psd"])(gt.constant(_signal()))
    assert mel.device == "strict:0" and stft.device == "strict:0"
    np.testing.assert_allclose(mel.numpy(), MEL_DB, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(stft.numpy(), STFT_PSD, rtol=1e-5, atol=1e-6)
