"""gt.summary (tf.summary) and gt.keras.callbacks.TensorBoard: the event files.

The expected bytes and values were obtained by writing the same summaries with TensorFlow 2.21
(tensorboard 2.21 summary ops) and reading its files; gradtape's files were also read back
with ``tf.compat.v1.train.summary_iterator`` and TensorBoard's ``EventAccumulator``. The
reader below decodes the TFRecord framing (checking both CRCs) and the protobuf fields by
hand, so these tests need neither TensorFlow nor TensorBoard.
"""
from __future__ import annotations

import glob
import os
import re
import socket
import struct
import zlib

import numpy as np
import pytest

import gradtape as gt
from gradtape import summary as S
from gradtape.callbacks import TensorBoard


# --- an independent reader ---------------------------------------------------------------------

def _crc32c_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = _crc32c_bitwise(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf, pos):
    out = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, pos


def _fields(buf):
    """``[(field number, value)]`` of a serialized message (ints, bytes)."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((field, value))
    return out


_NP = {1: "<f4", 2: "<f8", 3: "<i4", 4: "u1", 9: "<i8", 10: "?"}


def _tensor(buf):
    dtype, dims, content, strings = None, [], b"", []
    for f, v in _fields(buf):
        if f == 1:
            dtype = v
        elif f == 2:
            for g, d in _fields(v):
                assert g == 2
                dims.append(dict(_fields(d)).get(1, 0))
        elif f == 4:
            content = v
        elif f == 8:
            strings.append(v)
        else:
            raise AssertionError(f"unexpected TensorProto field {f}")
    if dtype == 7:
        return np.array(strings, dtype=object).reshape(dims)
    return np.frombuffer(content, dtype=_NP[dtype]).reshape(dims)


def _value(buf):
    out = {"description": None, "content": b""}
    for f, v in _fields(buf):
        if f == 1:
            out["tag"] = v.decode()
        elif f == 8:
            out["tensor"] = _tensor(v)
        elif f == 9:
            for g, w in _fields(v):
                if g == 1:
                    plugin = dict(_fields(w))
                    out["plugin"] = plugin[1].decode()
                    out["content"] = plugin.get(2, b"")
                elif g == 3:
                    out["description"] = w.decode()
    return out


def _event(payload):
    ev = {"step": 0}
    for f, v in _fields(payload):
        if f == 1:
            ev["wall_time"] = struct.unpack("<d", v)[0]
        elif f == 2:
            ev["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif f == 3:
            ev["file_version"] = v.decode()
        elif f == 5:
            (vals,) = [_value(w) for g, w in _fields(v) if g == 1]
            ev.update(vals)
    return ev


def read_records(path):
    raw = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(raw):
        header = raw[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", raw[pos + 8:pos + 12])[0] == _masked(header)
        payload = raw[pos + 12:pos + 12 + n]
        assert len(payload) == n
        assert struct.unpack("<I", raw[pos + 12 + n:pos + 16 + n])[0] == _masked(payload)
        out.append(payload)
        pos += 16 + n
    return out


def read_events(path):
    return [_event(p) for p in read_records(path)]


def only_file(folder):
    files = glob.glob(os.path.join(str(folder), "events.out.tfevents.*"))
    assert len(files) == 1, files
    return files[0]


def summaries(folder):
    evs = read_events(only_file(folder))
    assert evs[0]["file_version"] == "brain.Event:2" and "tag" not in evs[0]
    return evs[1:]


def decode_png(data: bytes) -> np.ndarray:
    """A PNG written without filtering (what gradtape writes) as ``[h, w, c]`` uint8."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = ihdr[:4]
    assert depth == 8
    c = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, c)


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    S._state.writer = None
    S._state.step = None
    S._state.is_recording = None


# --- framing and encoding (bytes as TF writes them) ------------------------------------------

TF_LOSS_PAYLOAD = bytes.fromhex(     # tf.summary.scalar("loss", 0.5, step=1), TF 2.21
    "09f27bbd5e61c4da4110012a210a1f0a046c6f7373420a0801120022040000003f4a0b0a090a07"
    "7363616c617273")


def test_crc32c_and_record_framing_match_tensorflow():
    assert S.crc32c(b"123456789") == 0xE3069283              # the CRC-32C check value
    assert S.crc32c(b"") == 0
    rec = S._record(TF_LOSS_PAYLOAD)
    assert rec == (struct.pack("<Q", 46) + bytes.fromhex("c5cb57fa") + TF_LOSS_PAYLOAD
                   + bytes.fromhex("5b5c2e6c"))                # TF's record, byte for byte
    big = bytes(range(256)) * 9
    assert S.masked_crc32c(big) == _masked(big)


def test_scalar_events_are_byte_identical_to_tensorflow(tmp_path):
    w = gt.summary.create_file_writer(tmp_path)
    with w.as_default():
        assert gt.summary.scalar("loss", 0.5, step=1) is True
        gt.summary.scalar("int", 3, step=2, description="an int")
        gt.summary.scalar("neg", -1.25, step=-3)
        gt.summary.scalar("f64", np.float64(1.0) / 3, step=17)
    w.close()
    recs = read_records(only_file(tmp_path))
    # after the 9 bytes of wall_time, TF's events (step, Summary.Value: tag, tensor, metadata)
    assert recs[1][9:] == TF_LOSS_PAYLOAD[9:]
    assert recs[2][9:] == bytes.fromhex(
        "10022a280a260a03696e74420a080112002204000040404a130a090a077363616c6172731a06616e2069"
        "6e74")
    assert recs[3][9:] == bytes.fromhex(
        "10fdffffffffffffffff012a200a1e0a036e6567420a0801120022040000a0bf4a0b0a090a0773636"
        "16c617273")
    evs = [_event(r) for r in recs]
    assert evs[0]["file_version"] == "brain.Event:2"
    assert [e["step"] for e in evs[1:]] == [1, 2, -3, 17]
    assert evs[2]["description"] == "an int" and evs[2]["plugin"] == "scalars"
    assert evs[4]["tensor"].dtype == np.float32 and evs[4]["tensor"] == np.float32(1 / 3)


def test_text_events_are_byte_identical_to_tensorflow(tmp_path):
    with gt.summary.create_file_writer(tmp_path).as_default():
        gt.summary.text("t", "hello", step=10)
        gt.summary.text("tl", ["a", "bc"], step=11)
        gt.summary.text("t2", [["a", "b"], ["c", "d"]], step=11)
    recs = read_records(only_file(tmp_path))
    assert recs[1][9:] == bytes.fromhex(
        "100a2a1c0a1a0a0174420b08071200420568656c6c6f4a080a060a0474657874")
    assert recs[2][9:] == bytes.fromhex(
        "100b2a210a1f0a02746c420f0807120412020802420161420262634a080a060a0474657874")
    t2 = _event(recs[3])
    assert t2["tensor"].tolist() == [[b"a", b"b"], [b"c", b"d"]] and t2["plugin"] == "text"
    with pytest.raises(TypeError, match="text: data must be a string"):
        gt.summary.text("bad", 3.0, step=0)


# --- histograms ---------------------------------------------------------------------------

def test_histogram_buckets_as_tensorflow(tmp_path):
    x = np.random.RandomState(1).randn(200).astype(np.float32)
    with gt.summary.create_file_writer(tmp_path).as_default():
        gt.summary.histogram("h", [0.0, 1.0, 2.0, 2.5, 10.0], step=4, buckets=4)
        gt.summary.histogram("h30", x, step=5)
        gt.summary.histogram("hconst", [2.0, 2.0, 2.0], step=6, buckets=3)
        gt.summary.histogram("hempty", np.zeros((0,), np.float32), step=7, buckets=3)
        gt.summary.histogram("hint", np.array([[1, 5], [3, 9]], np.int32), step=8)
        gt.summary.histogram("hb0", [1.0, 2.0], step=9, buckets=0)
    h, h30, hconst, hempty, hint, hb0 = summaries(tmp_path)
    for e in (h, h30, hconst, hempty, hint, hb0):
        assert e["plugin"] == "histograms" and e["tensor"].dtype == np.float64
    assert h["tensor"].tolist() == [[0.0, 2.5, 3.0], [2.5, 5.0, 1.0], [5.0, 7.5, 0.0],
                                    [7.5, 10.0, 1.0]]
    t = h30["tensor"]
    assert t.shape == (30, 3) and h30["step"] == 5
    assert t[:, 2].astype(int).tolist() == [2, 0, 2, 2, 2, 1, 3, 7, 6, 5, 15, 5, 14, 16, 14,
                                            13, 17, 14, 12, 13, 8, 9, 6, 2, 4, 1, 2, 4, 0, 1]
    assert t[0, :2].tolist() == [-2.434837818145752, -2.2693990310033163]
    assert t[1, :2].tolist() == [-2.2693990310033163, -2.1039602438608807]
    assert t[29, :2].tolist() == [2.3628870089848837, 2.5283257961273193]
    assert (t[1:, 0] == t[:-1, 1]).all()
    assert hconst["tensor"].tolist() == [[2.0, 2.0, 0.0], [2.0, 2.0, 0.0], [2.0, 2.0, 3.0]]
    assert hempty["tensor"].tolist() == [[0.0] * 3] * 3
    ti = hint["tensor"]
    assert ti.shape == (30, 3) and ti[[0, 7, 15, 29], 2].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert ti[:, 2].sum() == 4 and ti[1, :2].tolist() == [1.2666666666666666,
                                                          1.5333333333333332]
    assert hb0["tensor"].shape == (0, 3)
    # the whole record of the 4-bucket histogram, as TF wrote it
    rec = read_records(only_file(tmp_path))[1]
    assert rec[9:] == bytes.fromhex(
        "10042a86010a83010a0168426e080212081202080412020803226000000000000000000000000000"
        "000440000000000000084000000000000004400000000000001440000000000000f03f0000000000"
        "0014400000000000001e4000000000000000000000000000001e400000000000002440000000000000"
        "f03f4a0e0a0c0a0a686973746f6772616d73")


# --- images --------------------------------------------------------------------------------

def test_images_decode_to_tensorflows_pixels(tmp_path):
    img = np.arange(2 * 2 * 3 * 3, dtype=np.uint8).reshape(2, 2, 3, 3) * 7
    fimg = np.array([0.0, 0.001, 0.5, 0.999, 1.0, 1.5, -0.2, 0.25, 0.75],
                    np.float32).reshape(1, 3, 3, 1)
    gimg = np.linspace(0, 1, 16, dtype=np.float32).reshape(2, 2, 2, 2)
    rgba = np.arange(8, dtype=np.uint8).reshape(1, 1, 2, 4) * 30
    with gt.summary.create_file_writer(tmp_path).as_default():
        gt.summary.image("img", img, step=12, max_outputs=1)
        gt.summary.image("fimg", fimg, step=13)
        gt.summary.image("ga", gimg, step=14)
        gt.summary.image("rgba", rgba, step=15, description="four channels")
    e_img, e_f, e_ga, e_rgba = summaries(tmp_path)
    for e in (e_img, e_f, e_ga, e_rgba):
        assert e["plugin"] == "images" and e["tensor"].dtype == object
    # [width, height, png...]: max_outputs=1 keeps one of the two
    assert e_img["tensor"][:2].tolist() == [b"3", b"2"] and len(e_img["tensor"]) == 3
    assert decode_png(e_img["tensor"][2]).tolist() == [
        [[0, 7, 14], [21, 28, 35], [42, 49, 56]], [[63, 70, 77], [84, 91, 98], [105, 112, 119]]]
    # floats: x * 255.5, clipped, truncated (tf.image.convert_image_dtype)
    assert decode_png(e_f["tensor"][2])[..., 0].tolist() == [[0, 0, 127], [255, 255, 255],
                                                             [0, 63, 191]]
    assert len(e_ga["tensor"]) == 4
    assert decode_png(e_ga["tensor"][2]).tolist() == [[[0, 17], [34, 51]], [[68, 85],
                                                                            [102, 119]]]
    assert decode_png(e_ga["tensor"][3]).tolist() == [[[136, 153], [170, 187]],
                                                      [[204, 221], [238, 255]]]
    assert e_rgba["tensor"][:2].tolist() == [b"2", b"1"]
    assert decode_png(e_rgba["tensor"][2]).tolist() == [[[0, 30, 60, 90],
                                                         [120, 150, 180, 210]]]
    assert e_rgba["description"] == "four channels"


def test_image_errors(tmp_path):
    with gt.summary.create_file_writer(tmp_path).as_default():
        with pytest.raises(ValueError, match=r"image: data must have rank 4.*\(2, 2, 3\)"):
            gt.summary.image("bad", np.zeros((2, 2, 3), np.uint8), step=0)
        with pytest.raises(ValueError, match="1, 2, 3 or 4 channels, got 5"):
            gt.summary.image("bad", np.zeros((1, 2, 2, 5), np.uint8), step=0)
    # without a writer nothing is checked or written (as TF's lazy image summary)
    assert gt.summary.image("bad", np.zeros((2, 2, 3), np.uint8), step=0) is False


# --- writers, steps, recording -------------------------------------------------------------

def test_writer_file_name_and_default_state(tmp_path):
    logdir = tmp_path / "a" / "b"
    assert gt.summary.scalar("x", 1.0, step=0) is False          # no default writer
    w = gt.summary.create_file_writer(logdir)
    name = os.path.basename(only_file(logdir))                     # made with the writer
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)\.v2", name)
    assert m and m.group(2) == socket.gethostname() and int(m.group(3)) == os.getpid()
    w2 = gt.summary.create_file_writer(tmp_path / "c", filename_suffix=".mine")
    name2 = os.path.basename(only_file(tmp_path / "c"))
    assert name2.endswith(".mine") and int(name2.split(".")[-2]) == int(m.group(4)) + 1
    with w.as_default():
        with pytest.raises(ValueError, match="No step set"):
            gt.summary.scalar("x", 1.0)
        with gt.summary.record_if(False):
            assert gt.summary.should_record_summaries() is False
            assert gt.summary.scalar("off", 1.0) is False         # no step needed then
        cond = {"on": False}
        with gt.summary.record_if(lambda: cond["on"]):
            assert gt.summary.scalar("lazy", 1.0, step=0) is False
            cond["on"] = True
            assert gt.summary.scalar("lazy", 2.0, step=1) is True
        assert gt.summary.should_record_summaries() is True
        gt.summary.experimental.set_step(20)
        gt.summary.scalar("default_step", 1.0)
        with w.as_default(step=30):
            assert gt.summary.experimental.get_step() == 30
            gt.summary.scalar("ctx_step", 1.0)
            with w2.as_default(step=5):
                gt.summary.scalar("other", 1.0)
            gt.summary.scalar("ctx_step", 2.0)
        assert gt.summary.experimental.get_step() == 20
        with gt.name_scope("outer"):
            gt.summary.scalar("s", 1.0, step=3)
        step_var = gt.Variable(np.int64(7))
        gt.summary.experimental.set_step(step_var)
        step_var.assign(9)
        gt.summary.scalar("var_step", 1.0)
        with pytest.raises(ValueError, match="step must be a scalar"):
            gt.summary.scalar("x", 1.0, step=[1, 2])
        with pytest.raises(ValueError, match=r"scalar: data must be a scalar, got shape \(2,\)"):
            gt.summary.scalar("x", [1.0, 2.0], step=0)
    assert gt.summary.experimental.get_step() is step_var
    w.close()
    w2.close()
    got = [(e["tag"], e["step"], float(e["tensor"])) for e in summaries(logdir)]
    assert got == [("lazy", 1, 2.0), ("default_step", 20, 1.0), ("ctx_step", 30, 1.0),
                   ("ctx_step", 30, 2.0), ("outer/s", 3, 1.0), ("var_step", 9, 1.0)]
    assert [(e["tag"], e["step"]) for e in summaries(tmp_path / "c")] == [("other", 5)]


def test_noop_writer_flush_close_and_set_as_default(tmp_path):
    with gt.summary.create_noop_writer().as_default():
        assert gt.summary.scalar("x", 1.0, step=0) is False
    gt.summary.create_noop_writer().set_as_default()
    assert gt.summary.scalar("x", 1.0, step=0) is False
    gt.summary.flush()                                   # no default writer: nothing to do
    with pytest.raises(ValueError, match="Invalid argument to flush"):
        gt.summary.flush(writer="logs")
    with pytest.raises(ValueError, match="logdir"):
        gt.summary.create_file_writer(None)

    w = gt.summary.create_file_writer(tmp_path, max_queue=2, flush_millis=10 ** 7)
    w.init()
    w.set_as_default(step=4)
    path = only_file(tmp_path)
    for i in range(2):
        gt.summary.scalar("q", float(i))
    assert len(read_records(path)) == 1                  # queued: max_queue not passed yet
    gt.summary.scalar("q", 2.0)                          # 3 queued > max_queue: written
    assert len(read_records(path)) == 4
    gt.summary.scalar("q", 3.0)
    gt.summary.scalar("q", 4.0)
    assert len(read_records(path)) == 4
    gt.summary.flush()
    assert len(read_records(path)) == 6
    gt.summary.scalar("q", 5.0)
    w.close()
    w.close()                                            # closing twice is fine
    w.flush()
    assert [float(e["tensor"]) for e in summaries(tmp_path)] == [0, 1, 2, 3, 4, 5]
    with pytest.raises(RuntimeError, match="already closed"):
        w.as_default()
    with pytest.raises(RuntimeError, match="closed"):
        gt.summary.scalar("after", 1.0)                  # still the default writer
    with pytest.raises(ValueError, match="max_queue"):
        gt.summary.create_file_writer(tmp_path, max_queue=-1)


def test_write_generic_summary(tmp_path):
    with gt.summary.create_file_writer(tmp_path).as_default(step=2):
        assert gt.summary.write("raw", lambda: np.arange(3, dtype=np.int64),
                                metadata=S._metadata("custom", b"1")) is True
        gt.summary.write("s", "abc")
    raw, s = summaries(tmp_path)
    assert raw["tensor"].dtype == np.int64 and raw["tensor"].tolist() == [0, 1, 2]
    assert raw["plugin"] == "custom" and raw["content"] == b"1" and raw["step"] == 2
    assert s["tensor"].tolist() == b"abc" and "plugin" not in s


def test_device_tensors_are_read_once_per_summary(device, tmp_path):
    x = gt.constant(np.array([[0.5, 1.5], [2.5, 4.0]], np.float32))
    loss = gt.constant(np.float32(0.25))
    step = gt.Variable(np.int64(3))
    counts = []
    with gt.summary.create_file_writer(tmp_path).as_default():
        for call in (lambda: gt.summary.scalar("loss", loss, step=step),
                     lambda: gt.summary.histogram("x", x, step=step, buckets=2),
                     lambda: gt.summary.scalar("host_step", loss, step=4),
                     lambda: gt.summary.image("img", x[None, :, :, None] / 4.0, step=5)):
            before = getattr(device, "sync_count", 0)
            assert call() is True
            counts.append(getattr(device, "sync_count", 0) - before)
    if device.name.startswith("strict"):
        assert counts == [1, 1, 1, 1]
    loss_e, x_e, host_e, img_e = summaries(tmp_path)
    assert (loss_e["step"], float(loss_e["tensor"])) == (3, 0.25)
    assert x_e["step"] == 3 and x_e["tensor"].tolist() == [[0.5, 2.25, 2.0], [2.25, 4.0, 2.0]]
    assert host_e["step"] == 4
    assert decode_png(img_e["tensor"][2])[..., 0].tolist() == [[31, 95], [159, 255]]


# --- the Keras callback ------------------------------------------------------------------------

def _model(lr=0.1):
    keras = gt.keras
    m = keras.Sequential([
        keras.layers.Input((3,)),
        keras.layers.Dense(4, activation="relu", name="d1",
                           kernel_initializer=keras.initializers.Constant(0.1)),
        keras.layers.Dense(1, name="d2", kernel_initializer=keras.initializers.Constant(0.2))])
    m.compile(optimizer=keras.optimizers.SGD(lr), loss="mse", metrics=["mae"])
    x = np.arange(18, dtype=np.float32).reshape(6, 3) / 10
    return m, x, x.sum(1, keepdims=True)


def _scalars(events):
    out = {}
    for e in events:
        if e["plugin"] == "scalars":
            out.setdefault(e["tag"], []).append((e["step"], float(e["tensor"])))
    return out


def _close(got, want):
    assert [s for s, _ in got] == [s for s, _ in want]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=2e-6)


def test_tensorboard_callback_epoch_summaries(device, tmp_path):
    m, x, y = _model()
    cb = gt.keras.callbacks.TensorBoard(tmp_path, histogram_freq=2, write_images=True)
    assert gt.keras.callbacks.TensorBoard is TensorBoard
    m.fit(x, y, batch_size=2, epochs=2, validation_data=(x[:4], y[:4]), callbacks=[cb],
          verbose=0, shuffle=False)
    events = summaries(tmp_path / "train")
    assert sorted((e["tag"], e["step"]) for e in events if e["plugin"] != "scalars") == [
        ("d1/bias/histogram", 0), ("d1/bias/image", 0), ("d1/kernel/histogram", 0),
        ("d1/kernel/image", 0), ("d2/bias/histogram", 0), ("d2/kernel/histogram", 0),
        ("d2/kernel/image", 0)]                          # histogram_freq=2: epoch 0 only
    train = _scalars(events)
    val = _scalars(summaries(tmp_path / "validation"))
    # TF 2.21 / Keras 3.15, same model, weights and batches
    assert sorted(train) == ["epoch_learning_rate", "epoch_loss", "epoch_mae"]
    _close(train["epoch_loss"], [(0, 3.8523075580596924), (1, 1.953895092010498)])
    _close(train["epoch_mae"], [(0, 1.763912320137024), (1, 0.9414672255516052)])
    _close(train["epoch_learning_rate"], [(0, 0.1), (1, 0.1)])
    assert sorted(val) == ["epoch_loss", "epoch_mae", "evaluation_loss_vs_iterations",
                           "evaluation_mae_vs_iterations"]
    _close(val["epoch_loss"], [(0, 7.964701175689697), (1, 0.16222883760929108)])
    _close(val["evaluation_loss_vs_iterations"], [(3, 7.964701175689697),
                                                  (6, 0.16222883760929108)])
    _close(val["evaluation_mae_vs_iterations"], [(3, 2.7848634719848633),
                                                 (6, 0.3928431272506714)])
    # evaluate alone: a new validation file with the evaluation scalars at the step count
    m.evaluate(x, y, batch_size=3, callbacks=[cb], verbose=0)
    files = sorted(glob.glob(str(tmp_path / "validation" / "events.*")),
                   key=lambda p: int(p.split(".")[-2]))
    assert len(files) == 2
    ev = _scalars(read_events(files[1])[1:])
    _close(ev["evaluation_loss_vs_iterations"], [(6, 0.11661569029092789)])
    _close(ev["evaluation_mae_vs_iterations"], [(6, 0.3133290708065033)])


def test_tensorboard_callback_batches_histograms_images(tmp_path):
    m, x, y = _model()
    cb = TensorBoard(tmp_path, histogram_freq=1, write_images=True,
                     write_steps_per_second=True, update_freq=2)
    m.fit(x, y, batch_size=2, epochs=2, validation_data=(x[:4], y[:4]), callbacks=[cb],
          verbose=0, shuffle=False)
    events = summaries(tmp_path / "train")
    train = _scalars(events)
    _close(train["batch_loss"], [(2, 2.716116428375244), (4, 5.685943603515625),
                                 (6, 1.953895092010498)])
    _close(train["batch_mae"], [(2, 1.4195225238800049), (4, 2.375730514526367),
                                (6, 0.9414672255516052)])
    assert [s for s, _ in train["batch_steps_per_second"]] == [2, 4, 6]
    assert [s for s, _ in train["epoch_steps_per_second"]] == [0, 1]
    assert all(v > 0 for _, v in train["epoch_steps_per_second"])
    # epoch summaries every epoch (as Keras 2; Keras 3 drops epoch 0 here)
    _close(train["epoch_loss"], [(0, 3.8523075580596924), (1, 1.953895092010498)])
    hists = {(e["tag"], e["step"]): e["tensor"] for e in events if e["plugin"] == "histograms"}
    assert sorted({t for t, _ in hists}) == ["d1/bias/histogram", "d1/kernel/histogram",
                                             "d2/bias/histogram", "d2/kernel/histogram"]
    k1 = hists[("d1/kernel/histogram", 1)]
    assert k1.shape == (30, 3) and k1[:, 2].nonzero()[0].tolist() == [0, 14, 29]
    np.testing.assert_allclose([k1[0, 0], k1[-1, 1]], [0.37877514958381653, 0.389588862657547],
                               rtol=1e-6)
    np.testing.assert_allclose(hists[("d2/bias/histogram", 1)][-1], [0.6694880127906799,
                                                                     0.6694880127906799, 1.0],
                               rtol=1e-6)
    images = {(e["tag"], e["step"]): e["tensor"] for e in events if e["plugin"] == "images"}
    assert sorted({t for t, _ in images}) == ["d1/bias/image", "d1/kernel/image",
                                              "d2/kernel/image"]     # a 0-d bias: none
    kimg = images[("d1/kernel/image", 1)]
    assert kimg[:2].tolist() == [b"4", b"3"]
    assert decode_png(kimg[2])[..., 0].tolist() == [[99] * 4, [98] * 4, [96] * 4]
    assert images[("d2/kernel/image", 1)][:2].tolist() == [b"1", b"4"]
    assert decode_png(images[("d2/kernel/image", 1)][2]).ravel().tolist() == [151] * 4
    val = _scalars(summaries(tmp_path / "validation"))
    _close(val["evaluation_loss_vs_iterations"], [(3, 7.964701175689697),
                                                  (6, 0.16222883760929108)])
    _close(val["epoch_loss"], [(0, 7.964701175689697), (1, 0.16222883760929108)])


def test_tensorboard_callback_schedule_and_custom_summaries(tmp_path):
    keras = gt.keras
    m, x, y = _model(keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5))

    class Custom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            gt.summary.scalar("custom", float(batch))      # lands in the train writer

    cb = TensorBoard(tmp_path, update_freq="batch")
    m.fit(x, y, batch_size=2, epochs=2, validation_data=(x[:4], y[:4]), callbacks=[cb, Custom()],
          verbose=0, shuffle=False)
    train = _scalars(summaries(tmp_path / "train"))
    _close(train["epoch_learning_rate"], [(0, 0.0353553406894207), (1, 0.012500000186264515)])
    _close(train["batch_loss"], [(1, 0.6474961042404175), (2, 2.716116428375244),
                                 (3, 4.640673637390137), (4, 0.8020861148834229),
                                 (5, 0.4163745641708374), (6, 0.4461698532104492)])
    assert train["custom"] == [(1, 0.0), (2, 1.0), (3, 2.0), (4, 0.0), (5, 1.0), (6, 2.0)]
    assert gt.summary.should_record_summaries() is False    # the writer is popped after fit


def test_tensorboard_callback_arguments():
    with pytest.raises(ValueError, match="update_freq"):
        TensorBoard(update_freq="step")
    with pytest.raises(ValueError, match="profile_batch"):
        TensorBoard(profile_batch=(2, 4))
    with pytest.raises(ValueError, match="embeddings_freq"):
        TensorBoard(embeddings_freq=1)
    cb = TensorBoard("somewhere", write_graph=False, update_freq="batch")
    assert cb.update_freq == 1 and cb.log_dir == "somewhere"
