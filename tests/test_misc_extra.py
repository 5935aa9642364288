"""TensorFlow 2's small top-level names: matrix_square_root, eig/eigvals, the raw n-D FFT
ops, bitcast, fingerprint, timestamp, edit_distance, extract_volume_patches,
random_index_shuffle, random.Algorithm, approx_max_k/approx_min_k, summary.audio,
train.get_checkpoint_state and CheckpointOptions. Reference values are TensorFlow 2.21's
(approx_min_k and reduction_dimension != -1 from its compiled kernel, the only one TF has;
the n-D FFTs, which TF only runs on GPUs, against NumPy's FFT)."""
from __future__ import annotations

import struct
import time

import numpy as np
import pytest

import gradtape as gt
from gradtape.errors import UnimplementedError

IAE = gt.errors.InvalidArgumentError


# --- aliases ---------------------------------------------------------------------------------

def test_linalg_aliases():
    r = gt.matrix_square_root(gt.constant([[4.0, 1.0], [0.0, 9.0]]))
    np.testing.assert_allclose(r.numpy(), [[2.0, 0.2], [0.0, 3.0]], rtol=1e-6)
    e = gt.eigvals(gt.constant([[2.0, 0.0], [0.0, 3.0]]))
    assert e.dtype == gt.complex64
    np.testing.assert_allclose(sorted(e.numpy().real), [2.0, 3.0])
    e, v = gt.eig(gt.constant([[2.0, 0.0], [0.0, 3.0]], gt.float64))
    assert e.dtype == gt.complex128 and v.shape == (2, 2)


def test_raw_fftnd_ops():
    re = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    a = gt.complex(gt.constant(re), gt.constant(re * 0.5))
    an = re + 0.5j * re
    r = gt.fftnd(a, [3, 4], [-2, -1])
    assert r.dtype == gt.complex64
    np.testing.assert_allclose(r.numpy(), np.fft.fftn(an, axes=(1, 2)), atol=1e-3)
    np.testing.assert_allclose(gt.fftnd(a, [2, 5], [0, 2]).numpy(),
                               np.fft.fftn(an, s=(2, 5), axes=(0, 2)), atol=1e-3)
    np.testing.assert_allclose(gt.ifftnd(a, [3, 4], [1, 2]).numpy(),
                               np.fft.ifftn(an, axes=(1, 2)), atol=1e-4)
    r = gt.rfftnd(gt.constant(re), [3, 4], [1, 2])
    assert r.dtype == gt.complex64 and r.shape == (2, 3, 3)
    np.testing.assert_allclose(r.numpy(), np.fft.rfftn(re, axes=(1, 2)), atol=1e-3)
    r64 = gt.rfftnd(gt.constant(re, gt.float64), [3, 4], [1, 2], Tcomplex=gt.complex128)
    assert r64.dtype == gt.complex128
    back = gt.irfftnd(r, [3, 4], [1, 2])
    assert back.dtype == gt.float32 and back.shape == (2, 3, 4)
    np.testing.assert_allclose(back.numpy(), re, atol=1e-4)
    np.testing.assert_allclose(gt.irfftnd(a, [3, 6], [1, 2]).numpy(),
                               np.fft.irfftn(an, s=(3, 6), axes=(1, 2)), atol=1e-4)
    with pytest.raises(IAE):
        gt.fftnd(gt.constant(re), [3, 4], [1, 2])          # real input
    with pytest.raises(IAE):
        gt.fftnd(a, [3], [1, 2])
    with pytest.raises(IAE):
        gt.rfftnd(gt.constant(re), [3, 4], [1, 2], Tcomplex=gt.complex128)
    with pytest.raises(TypeError):
        gt.fftnd(a)                                          # fft_length, axes required


# --- bitcast, fingerprint, timestamp ---------------------------------------------------------

def test_bitcast_values_shapes_errors():
    r = gt.bitcast(gt.constant([1.0, -2.0]), gt.int32)
    assert r.dtype == gt.int32 and r.numpy().tolist() == [1065353216, -1073741824]
    assert gt.bitcast(gt.constant([1, 2], gt.int32), gt.uint8).shape == (2, 4)
    assert gt.bitcast(gt.constant([[1, 2, 3, 4]], gt.uint8), gt.int32).numpy().tolist() \
        == [67305985]
    assert gt.bitcast(gt.constant([[1, 2], [3, 4]], gt.int16), gt.int32).numpy().tolist() \
        == [131073, 262147]
    with pytest.raises(IAE, match="Cannot bitcast from 5 to 3"):
        gt.bitcast(gt.constant([1, 2, 3], gt.int16), gt.int32)
    with pytest.raises(IAE, match="Cannot bitcast from 5 to 3"):
        gt.bitcast(gt.constant(1, gt.int16), gt.int32)
    with pytest.raises(IAE):
        gt.bitcast(gt.constant(["a"]), gt.int32)


def test_fingerprint_matches_tf():
    fp = gt.fingerprint(gt.constant([[1, 2, 3], [4, 5, 6]], gt.int32))
    assert fp.dtype == gt.uint8 and fp.shape == (2, 8)
    assert fp.numpy().tolist() == [[197, 243, 108, 84, 102, 77, 162, 216],
                                   [168, 91, 168, 112, 25, 85, 121, 5]]
    assert gt.fingerprint(gt.constant([b"hello", b"", b"a" * 70])).numpy().tolist() == [
        [232, 12, 56, 49, 169, 229, 139, 180], [79, 64, 144, 47, 59, 106, 225, 154],
        [24, 130, 137, 168, 1, 209, 129, 235]]
    assert gt.fingerprint(gt.constant([[b"ab", b"c"]])).numpy().tolist() == [
        [65, 83, 39, 149, 164, 245, 170, 22]]
    assert gt.fingerprint(gt.constant([1.5, 2.0], gt.float64)).numpy().tolist() == [
        [179, 164, 179, 195, 72, 236, 82, 76], [228, 228, 223, 153, 66, 240, 18, 20]]
    assert gt.fingerprint(gt.zeros([2, 0])).numpy().tolist() == [
        [79, 64, 144, 47, 59, 106, 225, 154]] * 2
    with pytest.raises(IAE, match="at least one dimension"):
        gt.fingerprint(gt.constant(3))
    with pytest.raises(IAE, match="Unsupported fingerprint method: x"):
        gt.fingerprint(gt.constant([1]), method="x")


def test_timestamp():
    before = time.time()
    t = gt.timestamp()
    assert t.dtype == gt.float64 and t.shape == ()
    assert before - 1 <= float(t) <= time.time() + 1


# --- edit_distance ---------------------------------------------------------------------------

def test_edit_distance_matches_tf():
    h = gt.SparseTensor([[0, 0, 0], [1, 0, 0]], ["a", "b"], [2, 1, 1])
    t = gt.SparseTensor([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 0, 2]], ["a", "b", "c", "a"],
                        [2, 2, 3])
    d = gt.edit_distance(h, t)
    assert d.dtype == gt.float32
    np.testing.assert_allclose(d.numpy(), [[np.inf, 1.0], [0.6666666865348816, 0.0]])
    np.testing.assert_allclose(gt.edit_distance(h, t, normalize=False).numpy(),
                               [[1.0, 1.0], [2.0, 0.0]])
    h2 = gt.SparseTensor([[0, 0], [0, 1], [1, 0]], gt.constant([1, 2, 3], gt.int64), [3, 2])
    t2 = gt.SparseTensor([[0, 0], [2, 0]], gt.constant([1, 5], gt.int64), [3, 1])
    np.testing.assert_allclose(gt.edit_distance(h2, t2).numpy(), [1.0, np.inf, 1.0])
    with pytest.raises(IAE):
        gt.edit_distance(h, t2)                     # string vs int64 values
    with pytest.raises(TypeError, match="Hypothesis must be a SparseTensor"):
        gt.edit_distance(gt.constant([1]), t2)
    with pytest.raises(IAE, match="matching ranks"):
        gt.edit_distance(gt.SparseTensor([[0, 0]], [1], [1, 1]),
                         gt.SparseTensor([[0, 0, 0]], [1], [1, 1, 1]))


# --- extract_volume_patches ------------------------------------------------------------------

def test_extract_volume_patches_values_and_gradient():
    x = gt.reshape(gt.range(240, dtype=gt.float32), [2, 3, 4, 5, 2])
    p = gt.extract_volume_patches(x, [1, 2, 2, 2, 1], [1, 1, 2, 2, 1], "VALID")
    assert p.shape == (2, 2, 2, 2, 16) and float(gt.reduce_sum(p)) == 30336.0
    assert p.numpy()[1, 0, 1, 1].tolist() == [144, 145, 146, 147, 154, 155, 156, 157, 184,
                                              185, 186, 187, 194, 195, 196, 197]
    p = gt.extract_volume_patches(x, [1, 2, 3, 2, 1], [1, 2, 1, 3, 1], "SAME")
    assert p.shape == (2, 2, 4, 2, 24) and float(gt.reduce_sum(p)) == 57360.0
    assert p.numpy()[1, 0, 1, 1].tolist() == [126, 127, 128, 129, 136, 137, 138, 139, 146,
                                              147, 148, 149, 166, 167, 168, 169, 176, 177,
                                              178, 179, 186, 187, 188, 189]
    v = gt.Variable(x)
    with gt.GradientTape() as g:
        p = gt.extract_volume_patches(v, [1, 2, 3, 2, 1], [1, 2, 1, 3, 1], "SAME")
        loss = gt.reduce_sum(p * p)
    gr = g.gradient(loss, v)
    assert gr.numpy().ravel()[:20].tolist() == [0, 4, 8, 12, 0, 0, 24, 28, 32, 36, 60, 66, 72,
                                                78, 0, 0, 96, 102, 108, 114]
    assert float(gt.reduce_sum(gr)) == 114720.0
    with pytest.raises(UnimplementedError, match="Only support ksizes across space"):
        gt.extract_volume_patches(x, [2, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(IAE):
        gt.extract_volume_patches(x, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "FULL")
    with pytest.raises(IAE, match=r"input must be 5-dimensional\[3,4,5,2\]"):
        gt.extract_volume_patches(x[0], [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(IAE, match="Computed output size would be negative: -1"):
        gt.extract_volume_patches(x, [1, 5, 2, 2, 1], [1, 1, 1, 1, 1], "VALID")


# --- random_index_shuffle, random.Algorithm --------------------------------------------------

def test_random_index_shuffle_matches_tf():
    r = gt.random_index_shuffle(gt.range(10), [1, 2, 3], 9)
    assert r.dtype == gt.int32 and r.numpy().tolist() == [2, 0, 6, 4, 8, 1, 7, 9, 5, 3]
    r = gt.random_index_shuffle(gt.constant(5, gt.int64), gt.constant([7, 8, 9], gt.int64),
                                gt.constant(100000, gt.int64))
    assert r.shape == () and r.dtype == gt.int64 and int(r) == 53669
    seeds = gt.constant([[1, 2, 3]] * 6, gt.int64) + gt.range(6, dtype=gt.int64)[:, None]
    r = gt.random_index_shuffle(gt.range(6, dtype=gt.int64), seeds,
                                gt.constant(2 ** 40, gt.int64), rounds=8)
    assert r.numpy().tolist() == [124730561169, 901504860941, 881289321014, 923588442926,
                                  529132873132, 280438942111]
    r = gt.random_index_shuffle(gt.constant([0, 1, 2, 3], gt.uint32),
                                gt.constant([-1, 5, 2 ** 31 - 1], gt.int32),
                                gt.constant([3, 3, 70000, 5], gt.uint32), rounds=6)
    assert r.dtype == gt.uint32 and r.numpy().tolist() == [2, 1, 65202, 4]
    r = gt.random_index_shuffle(gt.constant(3, gt.uint64), gt.constant([1, 2, 3], gt.uint64),
                                gt.constant(2 ** 63 + 5, gt.uint64))
    assert int(r) == 939255659681
    # a permutation: every index of [0, max_index] is hit once
    perm = gt.random_index_shuffle(gt.range(1000), [4, 5, 6], 999).numpy()
    assert sorted(perm.tolist()) == list(range(1000))


def test_random_index_shuffle_errors():
    with pytest.raises(IAE, match=r"Seed must be a vector of size \[3\] or a matrix of size "
                                  r"\[1, 3\] but got \[2\]"):
        gt.random_index_shuffle(1, [1, 2], 5)
    with pytest.raises(IAE, match="max_index must be >= index, but 5 < 6"):
        gt.random_index_shuffle(6, [1, 2, 3], 5)
    with pytest.raises(IAE, match="Index bust be a scalar or vector"):
        gt.random_index_shuffle([1, 2], [1, 2, 3], [5, 6, 7])
    with pytest.raises(IAE, match="attr 'dtype' of float32"):
        gt.random_index_shuffle(gt.constant(1.0), [1, 2, 3], 5.0)
    with pytest.raises(ValueError, match="rounds"):
        gt.random_index_shuffle(1, [1, 2, 3], 5, rounds=3)


def test_random_algorithm_enum():
    A = gt.random.Algorithm
    assert [(a.name, a.value) for a in A] == [("PHILOX", 1), ("THREEFRY", 2),
                                              ("AUTO_SELECT", 3)]
    assert A(2) is A.THREEFRY and gt.random.experimental.Algorithm is A


# --- approx_max_k / approx_min_k -------------------------------------------------------------

X = [[3.0, 1.0, 3.0, 2.0, 5.0, 5.0], [0.0, -1.0, 7.0, 7.0, 7.0, 2.0]]


def test_approx_top_k_values_indices():
    assert gt.nn.approx_max_k is gt.math.approx_max_k
    assert gt.nn.approx_min_k is gt.math.approx_min_k
    x = gt.constant(X)
    v, i = gt.math.approx_max_k(x, 3)
    assert i.dtype == gt.int32
    assert v.numpy().tolist() == [[5, 5, 3], [7, 7, 7]]
    assert i.numpy().tolist() == [[4, 5, 0], [2, 3, 4]]
    v, i = gt.math.approx_max_k(x, 1, reduction_dimension=0)
    assert v.numpy().tolist() == [[3, 1, 7, 7, 7, 5]] and i.numpy().tolist() == [[0, 0, 1, 1,
                                                                                   1, 0]]
    v, i = gt.math.approx_min_k(x, 3)
    assert v.numpy().tolist() == [[1, 2, 3], [-1, 0, 2]]
    assert i.numpy().tolist() == [[1, 3, 0], [1, 0, 5]]
    v, i = gt.math.approx_min_k(x, 1, reduction_dimension=0)
    assert v.numpy().tolist() == [[0, -1, 3, 2, 5, 2]] and i.numpy().tolist() == [[1, 1, 0, 0,
                                                                                   0, 1]]
    v, i = gt.math.approx_max_k(gt.constant([[1.0, np.nan, 3.0]]), 2)
    assert np.isnan(v.numpy()[0, 0]) and v.numpy()[0, 1] == 3 and i.numpy().tolist() == [[1, 2]]
    v, i = gt.math.approx_max_k(x, 0)
    assert v.shape == (2, 0) and i.shape == (2, 0)
    v, i = gt.math.approx_max_k(gt.constant([1.0, 2.0]), 1, aggregate_to_topk=False,
                                recall_target=1.5)
    assert v.numpy().tolist() == [2.0] and i.numpy().tolist() == [1]


def test_approx_top_k_gradients_and_errors():
    v = gt.Variable(gt.constant(X))
    with gt.GradientTape() as g:
        vals, _ = gt.math.approx_max_k(v, 2)
        loss = gt.reduce_sum(vals * gt.constant([[1.0, 2.0], [3.0, 4.0]]))
    assert g.gradient(loss, v).numpy().tolist() == [[0, 0, 0, 0, 1, 2], [0, 0, 3, 4, 0, 0]]
    with gt.GradientTape() as g:
        vals, _ = gt.math.approx_min_k(v, 2, reduction_dimension=0)
        loss = gt.reduce_sum(vals * gt.reshape(gt.range(12.0), [2, 6]))
    assert g.gradient(loss, v).numpy().tolist() == [[6, 7, 2, 3, 4, 11], [0, 1, 8, 9, 10, 5]]
    with pytest.raises(IAE, match="input must have at least k columns. Had 6, needed 7"):
        gt.math.approx_max_k(gt.constant(X), 7)
    with pytest.raises(IAE, match="attr 'T' of int32"):
        gt.math.approx_max_k(gt.constant([[3, 1]]), 1)
    with pytest.raises(IAE, match="attr 'T' of float64"):
        gt.math.approx_max_k(gt.constant([1.0, 2.0], gt.float64), 1)
    with pytest.raises(IAE, match="reduction_dimension"):
        gt.math.approx_max_k(gt.constant(X), 1, reduction_dimension=2)


# --- summary.audio ---------------------------------------------------------------------------

def _records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos, out = 0, []
    while pos < len(data):
        (n,) = struct.unpack("<Q", data[pos:pos + 8])
        out.append(data[pos + 12:pos + 12 + n])
        pos += 16 + n
    return out


def test_summary_audio_event(tmp_path):
    data = np.sin(np.arange(120, dtype=np.float32).reshape(3, 20, 2) * 0.3).astype(np.float32)
    w = gt.summary.create_file_writer(str(tmp_path))
    with w.as_default():
        assert gt.summary.audio("clip", data, 8000, step=4, max_outputs=2, description="hi")
        with pytest.raises(ValueError, match="Unknown encoding"):
            gt.summary.audio("clip", data, 8000, step=4, encoding="mp3")
    w.flush()
    files = list(tmp_path.iterdir())
    blob = _records(str(files[0]))[1]
    wavs = [gt.audio.encode_wav(data[i], 8000).numpy() for i in range(2)]
    # the event carries both WAV files, the audio plugin name and its content (encoding WAV)
    assert all(wav in blob for wav in wavs)
    assert gt.audio.encode_wav(data[2], 8000).numpy() not in blob
    assert b"\n\x05audio\x12\x02\x10\x0b" in blob and b"clip" in blob and b"hi" in blob
    # tensor: DT_STRING (7), shape [2, 2]
    assert b"\x08\x07\x12\x08\x12\x02\x08\x02\x12\x02\x08\x02" in blob
    assert not gt.summary.audio("clip", data, 8000, step=1)     # no default writer


# --- tf.train.get_checkpoint_state / CheckpointOptions -----------------------------------------

def test_get_checkpoint_state(tmp_path):
    d = str(tmp_path)
    assert gt.train.get_checkpoint_state(d) is None
    ck = gt.train.Checkpoint(v=gt.Variable(1.0))
    mgr = gt.train.CheckpointManager(ck, d, max_to_keep=2)
    for _ in range(3):
        mgr.save()
    st = gt.train.get_checkpoint_state(d)
    assert st.model_checkpoint_path == f"{d}/ckpt-3"
    assert st.all_model_checkpoint_paths == [f"{d}/ckpt-2", f"{d}/ckpt-3"]
    assert str(st) == (f'model_checkpoint_path: "{d}/ckpt-3"\n'
                       f'all_model_checkpoint_paths: "{d}/ckpt-2"\n'
                       f'all_model_checkpoint_paths: "{d}/ckpt-3"\n')
    # TF's own state file, timestamps included
    (tmp_path / "state").write_text('model_checkpoint_path: "ckpt-3"\n'
                                    'all_model_checkpoint_paths: "/abs/ckpt-3"\n'
                                    'all_model_checkpoint_timestamps: 1796332643.5\n'
                                    'last_preserved_timestamp: 1796332642.25\n')
    st = gt.train.get_checkpoint_state(d, latest_filename="state")
    assert st.model_checkpoint_path == f"{d}/ckpt-3"
    assert st.all_model_checkpoint_paths == ["/abs/ckpt-3"]
    assert st.all_model_checkpoint_timestamps == [1796332643.5]
    assert st.last_preserved_timestamp == 1796332642.25
    (tmp_path / "bad").write_text('all_model_checkpoint_paths: "x"\n')
    with pytest.raises(ValueError, match="Invalid checkpoint state loaded from"):
        gt.train.get_checkpoint_state(d, latest_filename="bad")


def test_checkpoint_options():
    o = gt.train.CheckpointOptions()
    assert (o.experimental_io_device, o.enable_async, o.experimental_enable_async_checkpoint,
            o.experimental_write_callbacks, o.experimental_skip_slot_variables,
            o.experimental_sharding_callback) == (None, False, False, None, False, None)
    o = gt.train.CheckpointOptions(experimental_io_device="/job:localhost",
                                   experimental_enable_async_checkpoint=True)
    assert o.enable_async is True and o.experimental_io_device == "/job:localhost"
    with pytest.raises(ValueError, match="ShardingCallback"):
        gt.train.CheckpointOptions(experimental_sharding_callback=3)


# --- the strict device ------------------------------------------------------------------------

def test_on_strict_device():
    with gt.device("strict:0"):
        v = gt.Variable(gt.constant(X))
        with gt.GradientTape() as g:
            vals, idx = gt.math.approx_max_k(v, 1, reduction_dimension=0)
            loss = gt.reduce_sum(vals)
        assert vals.device == "strict:0" and idx.numpy().tolist() == [[0, 0, 1, 1, 1, 0]]
        assert g.gradient(loss, v).numpy().tolist() == [[1, 1, 0, 0, 0, 1], [0, 0, 1, 1, 1, 0]]
        b = gt.bitcast(gt.constant([1.0]), gt.uint8)
        assert b.device == "strict:0" and b.numpy().tolist() == [[0, 0, 128, 63]]
        assert gt.fingerprint(gt.constant([[1, 2, 3]])).device == "strict:0"
        assert gt.random_index_shuffle(gt.range(10), [1, 2, 3], 9).numpy().tolist() == \
            [2, 0, 6, 4, 8, 1, 7, 9, 5, 3]
        p = gt.extract_volume_patches(gt.ones([1, 2, 2, 2, 1]), [1, 2, 2, 2, 1],
                                      [1, 1, 1, 1, 1], "SAME")
        assert p.shape == (1, 2, 2, 2, 8) and float(gt.reduce_sum(p)) == 27.0
