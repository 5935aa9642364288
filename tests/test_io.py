"""``gt.io``, ``gt.train``'s example messages, the file datasets of ``gt.data`` and Keras'
image utilities, against TensorFlow 2.21: reference bytes and values were produced by TF and
are hard-coded here, or stored in ``tests/data/tfrecord`` (TFRecord files written by TF: three
``Example`` protos, uncompressed and GZIP; two ``SequenceExample`` protos, ZLIB; seven
``serialize_tensor`` outputs; ``jpeg.npz``: a JPEG TF encoded, another one 4:2:2, and TF's
decodings of them)."""
from __future__ import annotations

import os
import struct
import zlib

import numpy as np
import pytest

import gradtape as gt
from gradtape import _proto
from gradtape.io import crc32c

T = gt.train
DATA = os.path.join(os.path.dirname(__file__), "data", "tfrecord")
E = gt.errors


def _hex(t):
    return bytes(t.numpy()).hex()


# --- tf.train messages ---------------------------------------------------------------------------

def _five_features():
    return T.Example(features=T.Features(feature={
        "i": T.Feature(int64_list=T.Int64List(value=[1, 2, 3])),
        "f": T.Feature(float_list=T.FloatList(value=[0.5, 1.5])),
        "b": T.Feature(bytes_list=T.BytesList(value=[b"ab", b"c"])),
        "e": T.Feature(int64_list=T.Int64List()),
        "n": T.Feature()}))


# TF: SerializeToString(deterministic=True) of _five_features(), and TF's default order
TF_FIVE = ("0a410a0e0a016212090a070a0261620a01630a070a016512021a000a110a0166120c120a0a0800"
           "00003f0000c03f0a0c0a016912071a050a030102030a050a016e1200")
TF_FIVE_HASH_ORDER = ("0a410a0c0a016912071a050a030102030a070a016512021a000a110a0166120c120a0a"
                      "080000003f0000c03f0a050a016e12000a0e0a016212090a070a0261620a0163")


def test_example_bytes_equal_tf_and_parse_tf_bytes():
    ex = _five_features()
    assert ex.SerializeToString().hex() == TF_FIVE
    assert ex.SerializeToString(deterministic=True).hex() == TF_FIVE
    back = T.Example.FromString(bytes.fromhex(TF_FIVE_HASH_ORDER))
    assert back == ex and back.SerializeToString().hex() == TF_FIVE
    assert back.features.feature["i"].int64_list.value == [1, 2, 3]
    assert back.features.feature["f"].float_list.value == [0.5, 1.5]
    assert list(back.features.feature["b"].bytes_list.value) == [b"ab", b"c"]
    assert back.features.feature["e"].WhichOneof("kind") == "int64_list"
    assert back.features.feature["n"].WhichOneof("kind") is None
    # one more TF-written example (negative and large int64s, float32 rounding)
    tf_bytes = bytes.fromhex(
        "0a650a1d0a05657874726112141a120a10fdffffffffffffffff018080808080200a0e0a046e616d65"
        "12060a040a0200ff0a0e0a056c6162656c12051a030a01070a150a0573636f7265120c120a0a08cdcc"
        "cc3df90215500a0d0a047461677312050a030a017a")
    ex3 = T.Example.FromString(tf_bytes)
    assert ex3.features.feature["extra"].int64_list.value == [-3, 2 ** 40]
    assert ex3.features.feature["score"].float_list.value == [0.10000000149011612, 1e10]
    assert ex3.features.feature["name"].bytes_list.value == [b"\x00\xff"]


def test_unpacked_repeated_fields_parse():
    assert T.Int64List.FromString(b"\x08\x01\x08\x02").value == [1, 2]
    assert T.Int64List.FromString(b"\x0a\x02\x01\x02").value == [1, 2]
    assert T.FloatList.FromString(b"\x0d\x00\x00\xc0\x3f").value == [1.5]
    assert T.Int64List(value=[-1]).SerializeToString().hex() == "0a0affffffffffffffffff01"
    with pytest.raises(_proto.DecodeError, match="tensorflow.Int64List"):
        T.Int64List.FromString(b"\x0a\x05\x01")


def test_text_format_as_tf():
    ex = T.Example(features=T.Features(feature={"a": T.Feature(
        float_list=T.FloatList(value=[0.1, 1.0, 1e20, -2.5e-8, float("inf"), float("nan"),
                                      123456789.0, -0.0, 3.4028234663852886e38]))}))
    assert str(ex) == (
        'features {\n  feature {\n    key: "a"\n    value {\n      float_list {\n'
        "        value: 0.1\n        value: 1\n        value: 1e+20\n        value: -2.5e-08\n"
        "        value: inf\n        value: nan\n        value: 123456792\n        value: -0\n"
        "        value: 3.40282347e+38\n      }\n    }\n  }\n}\n")
    assert str(T.BytesList(value=[b"a\"b'c\\d\n\t\r\x00\x7f\xff\xc3\xa9 ok"])) == \
        'value: "a\\"b\\\'c\\\\d\\n\\t\\r\\000\\177\\377\\303\\251 ok"\n'
    assert repr(T.Int64List(value=[-1, 2 ** 62])) == "value: -1\nvalue: 4611686018427387904\n"
    assert str(T.Example()) == ""
    seq = T.SequenceExample(feature_lists=T.FeatureLists(feature_list={"s": T.FeatureList(
        feature=[T.Feature(int64_list=T.Int64List(value=[9]))])}))
    assert str(seq) == ('feature_lists {\n  feature_list {\n    key: "s"\n    value {\n'
                        "      feature {\n        int64_list {\n          value: 9\n        }\n"
                        "      }\n    }\n  }\n}\n")


def test_message_semantics_as_protobuf():
    # constructor: dicts for messages, the last oneof member wins, values checked
    f = T.Feature(int64_list={"value": [1]})
    assert f.int64_list.value == [1]
    f = T.Feature(int64_list=T.Int64List(value=[1]), float_list=T.FloatList(value=[1]))
    assert f.WhichOneof("kind") == "float_list" and not f.HasField("int64_list")
    f.float_list  # reading does not switch
    f.int64_list.value.append(5)
    assert f.WhichOneof("kind") == "int64_list" and f.float_list.value == []
    assert T.FloatList(value=[0.1]).value[0] == 0.10000000149011612
    assert T.FloatList(value=[1e40]).value[0] == float("inf")
    with pytest.raises(ValueError, match='has no "foo" field'):
        T.Example(foo=1)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        T.Int64List(value=[1.5])
    with pytest.raises(TypeError, match="got a boolean"):
        T.Int64List(value=[True])
    with pytest.raises(ValueError, match="out of range"):
        T.Int64List(value=[2 ** 63])
    with pytest.raises(TypeError, match="expected bytes, str found"):
        T.BytesList(value=["abc"])
    with pytest.raises(TypeError, match="must be real number, not str"):
        T.FloatList(value=["a"])
    with pytest.raises(TypeError, match="No positional arguments"):
        T.Example(T.Features())
    with pytest.raises(TypeError, match="dict or instance of same class"):
        T.Example(features=T.Feature())
    with pytest.raises(AttributeError, match="Assignment not allowed to message field"):
        T.Example().features = T.Features()
    with pytest.raises(AttributeError, match="repeated field"):
        T.Int64List().value = [1]
    with pytest.raises(ValueError, match="may not be assigned"):
        T.Features().feature["a"] = T.Feature()
    with pytest.raises(ValueError, match="does not have presence"):
        T.Int64List().HasField("value")
    # presence follows writes: reading leaves the message empty, indexing a map adds
    e = T.Example()
    _ = e.features.feature
    assert not e.HasField("features") and e.SerializeToString() == b""
    e.features.feature["a"]
    assert e.HasField("features") and e.SerializeToString() == b"\n\x07\n\x05\n\x01a\x12\x00"
    fl = T.FeatureList()
    fl.feature.add().int64_list.value.append(3)
    assert fl.SerializeToString() == b"\n\x05\x1a\x03\n\x01\x03"
    m = T.Int64List(value=[5])
    assert m.ParseFromString(b"\x0a\x01\x07") == 3 and m.value == [7]
    m.MergeFromString(b"\x0a\x01\x08")
    assert m.value == [7, 8] and m.ByteSize() == 4
    assert T.Int64List(value=[1]) != T.FloatList(value=[1])
    assert T.FloatList(value=[float("nan")]) == T.FloatList(value=[float("nan")])
    c = T.Example()
    c.CopyFrom(_five_features())
    assert c == _five_features() and list(c.features.feature) == ["i", "f", "b", "e", "n"]
    with pytest.raises(TypeError):
        hash(c)


# --- TFRecord files ------------------------------------------------------------------------------

def test_crc32c():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    data = np.random.default_rng(0).integers(0, 256, 100_003).astype(np.uint8).tobytes()
    # the lane-parallel path against the byte loop
    from gradtape.io import _crc_update
    assert crc32c(data) == _crc_update(0xFFFFFFFF, data) ^ 0xFFFFFFFF


def _records(path, compression=None):
    return [bytes(r.numpy()) for r in gt.data.TFRecordDataset(path, compression)]


def test_tf_written_tfrecords_read_and_rewritten_byte_for_byte(tmp_path):
    plain = _records(os.path.join(DATA, "examples.tfrecord"))
    gz = _records(os.path.join(DATA, "examples.tfrecord.gz"), "GZIP")
    assert len(plain) == 3 and len(gz) == 3
    for a, b in zip(plain, gz):
        assert T.Example.FromString(a) == T.Example.FromString(b)
    for name, ct in (("examples.tfrecord", ""), ("examples.tfrecord.gz", "GZIP")):
        recs = _records(os.path.join(DATA, name), ct)
        out = str(tmp_path / name)
        with gt.io.TFRecordWriter(out, gt.io.TFRecordOptions(ct)) as w:
            for r in recs:
                w.write(r)
        with open(out, "rb") as f1, open(os.path.join(DATA, name), "rb") as f2:
            assert f1.read() == f2.read()


def test_tfrecord_writer_zlib_bytes_and_options(tmp_path):
    p = str(tmp_path / "z.tfrecord")
    with gt.io.TFRecordWriter(p, "ZLIB") as w:
        for r in (b"hello", b"", b"x" * 300):
            w.write(r)
    data = open(p, "rb").read()
    # TF's file: one zlib stream (header 789c), 53 bytes
    assert len(data) == 53 and data[:12].hex() == "789c63658080579b58ec3252"
    raw = zlib.decompress(data)
    assert raw[:16].hex() == "0500000000000000eab2043e68656c6c"
    assert _records(p, "ZLIB") == [b"hello", b"", b"x" * 300]
    assert gt.io.TFRecordOptions.get_compression_type_string("GZIP") == "GZIP"
    assert gt.io.TFRecordOptions.get_compression_type_string(None) == ""
    with pytest.raises(ValueError, match='Not a valid compression_type: "LZ4"'):
        gt.io.TFRecordOptions("LZ4")
    with pytest.raises(ValueError, match='Not a valid compression_type: "3"'):
        gt.io.TFRecordWriter(str(tmp_path / "x"), 3)
    w = gt.io.TFRecordWriter(str(tmp_path / "y"))
    w.write("text")
    w.close()
    with pytest.raises(E.FailedPreconditionError, match="Writer is closed"):
        w.write(b"b")
    with pytest.raises(E.NotFoundError, match="No such file or directory"):
        gt.io.TFRecordWriter(str(tmp_path / "no" / "dir"))


def test_tfrecord_corruption(tmp_path):
    good = str(tmp_path / "g")
    with gt.io.TFRecordWriter(good) as w:
        for r in (b"hello", b"", b"x" * 300):
            w.write(r)
    data = open(good, "rb").read()
    cases = {14: "corrupted record at 12", 9: r"corrupted record at 0 \(Is this even"}
    for byte, msg in cases.items():
        bad = bytearray(data)
        bad[byte] ^= 1
        open(tmp_path / "b", "wb").write(bytes(bad))
        with pytest.raises(E.DataLossError, match=msg):
            _records(str(tmp_path / "b"))
    open(tmp_path / "t", "wb").write(data[:-3])
    with pytest.raises(E.DataLossError, match="truncated record at 37"):
        _records(str(tmp_path / "t"))
    open(tmp_path / "h", "wb").write(data[:5])
    assert _records(str(tmp_path / "h")) == []
    with pytest.raises(E.DataLossError, match="incorrect header check"):
        _records(good, "GZIP")
    with pytest.raises(E.NotFoundError, match="nope; No such file"):
        _records(str(tmp_path / "nope"))


def test_datasets_of_files(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    with gt.io.TFRecordWriter(a) as w:
        for r in (b"a0", b"a1", b"a2"):
            w.write(r)
    with gt.io.TFRecordWriter(b) as w:
        w.write(b"b0")
    ds = gt.data.TFRecordDataset([a, b])
    assert ds.element_spec == gt.TensorSpec((), gt.string)
    assert int(ds.cardinality()) == gt.data.UNKNOWN_CARDINALITY
    assert [bytes(x.numpy()) for x in ds] == [b"a0", b"a1", b"a2", b"b0"]
    # TF: num_parallel_reads interleaves the files, one record per turn
    par = gt.data.TFRecordDataset([a, b], num_parallel_reads=2)
    assert [bytes(x.numpy()) for x in par] == [b"a0", b"b0", b"a1", b"a2"]
    names = gt.data.Dataset.from_tensor_slices([b, a])
    assert [bytes(x.numpy()) for x in gt.data.TFRecordDataset(names)] == \
        [b"b0", b"a0", b"a1", b"a2"]
    assert list(gt.data.TFRecordDataset([])) == []
    with pytest.raises(TypeError, match="string"):
        gt.data.TFRecordDataset(gt.constant([1, 2]))
    with pytest.raises(E.InvalidArgumentError, match="Unsupported compression_type"):
        list(gt.data.TFRecordDataset(a, "LZ4"))
    # text lines: \n and \r\n end lines, a last line without one counts
    t = tmp_path / "t.txt"
    t.write_bytes(b"a\nb\r\n\nc\r\nlast")
    assert [bytes(x.numpy()) for x in gt.data.TextLineDataset(str(t))] == \
        [b"a", b"b", b"", b"c", b"last"]
    t2 = tmp_path / "t2.txt"
    t2.write_bytes(b"a\n\n")
    assert [bytes(x.numpy()) for x in gt.data.TextLineDataset(str(t2))] == [b"a", b""]
    import gzip
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(b"x\ny\n"))
    assert [bytes(x.numpy()) for x in gt.data.TextLineDataset(str(gz), "GZIP")] == [b"x", b"y"]
    # fixed-length records between a header and a footer
    fb = tmp_path / "f.bin"
    fb.write_bytes(b"HHabcdefFF")
    ds = gt.data.FixedLengthRecordDataset(str(fb), 3, header_bytes=2, footer_bytes=2)
    assert [bytes(x.numpy()) for x in ds] == [b"abc", b"def"]
    assert [bytes(x.numpy()) for x in gt.data.FixedLengthRecordDataset(str(fb), 4, 2)] == \
        [b"abcd", b"efFF"]
    with pytest.raises(E.InvalidArgumentError, match=r"Excluding the header \(0 bytes\) and "
                       r"footer \(0 bytes\), input file .* has body length 10 bytes, which is "
                       r"not an exact multiple of the record length \(4 bytes\)"):
        list(gt.data.FixedLengthRecordDataset(str(fb), 4))


def test_tfrecord_pipeline_parse_batch(tmp_path):
    feats = {"label": gt.io.FixedLenFeature([], gt.int64),
             "score": gt.io.FixedLenFeature([2], gt.float32),
             "tags": gt.io.VarLenFeature(gt.string)}

    def parse(s):
        d = gt.io.parse_single_example(s, feats)
        return d["label"], d["score"], gt.sparse.to_dense(d["tags"], default_value=b"-")

    ds = gt.data.TFRecordDataset(os.path.join(DATA, "examples.tfrecord.gz"), "GZIP").map(parse)
    got = [(int(a.numpy()), b.numpy().tolist(), [bytes(v) for v in c.numpy()]) for a, b, c in ds]
    assert got == [(1, [0.5, -1.25], [b"x", b"y"]), (0, [2.0, 3.5], []),
                   (7, [np.float32(0.1).item(), 1e10], [b"z"])]
    batches = list(gt.data.TFRecordDataset(os.path.join(DATA, "examples.tfrecord"))
                   .map(lambda s: gt.io.parse_single_example(s, {"label": feats["label"]})
                        ["label"]).batch(2))
    assert [b.numpy().tolist() for b in batches] == [[1, 0], [7]]


# --- parsing examples ---------------------------------------------------------------------------

def test_parse_example_tf_files():
    recs = _records(os.path.join(DATA, "examples.tfrecord"))
    feats = {"label": gt.io.FixedLenFeature([], gt.int64),
             "score": gt.io.FixedLenFeature([2], gt.float32),
             "name": gt.io.FixedLenFeature([], gt.string),
             "tags": gt.io.VarLenFeature(gt.string), "extra": gt.io.VarLenFeature(gt.int64),
             "missing": gt.io.FixedLenFeature([2], gt.int64, default_value=[4, 5]),
             "scoreseq": gt.io.FixedLenSequenceFeature([], gt.float32, allow_missing=True,
                                                       default_value=-1.0)}
    r = gt.io.parse_example(recs, feats)
    # TF's output order: sparse features by key, then dense ones by key
    assert list(r) == ["extra", "tags", "label", "missing", "name", "score", "scoreseq"]
    assert r["extra"].indices.numpy().tolist() == [[2, 0], [2, 1]]
    assert r["extra"].values.numpy().tolist() == [-3, 1099511627776]
    assert r["extra"].dense_shape.numpy().tolist() == [3, 2]
    assert r["tags"].indices.numpy().tolist() == [[0, 0], [0, 1], [2, 0]]
    assert r["tags"].values.numpy().tolist() == [b"x", b"y", b"z"]
    assert r["label"].dtype == gt.int64 and r["label"].numpy().tolist() == [1, 0, 7]
    assert r["missing"].numpy().tolist() == [[4, 5]] * 3
    assert r["name"].numpy().tolist() == [b"alpha", "β".encode(), b"\x00\xff"]
    assert r["score"].dtype == gt.float32
    np.testing.assert_array_equal(r["score"].numpy(),
                                  np.float32([[0.5, -1.25], [2.0, 3.5], [0.1, 1e10]]))
    assert r["scoreseq"].shape == (3, 0)
    single = gt.io.parse_single_example(recs[0], {"tags": gt.io.VarLenFeature(gt.string),
                                                  "score": feats["score"]})
    assert single["tags"].indices.numpy().tolist() == [[0], [1]]
    assert single["tags"].dense_shape.numpy().tolist() == [2]
    assert single["score"].shape == (2,)


def test_parse_example_shapes_and_padding():
    ex = _five_features().SerializeToString()
    ex2 = T.Example(features=T.Features(feature={"i": T.Feature(
        int64_list=T.Int64List(value=[9]))})).SerializeToString()
    P = gt.io.parse_single_example
    assert P(ex, {"i": gt.io.FixedLenFeature([1, 3], gt.int64)})["i"].shape == (1, 3)
    assert P(ex, {"z": gt.io.FixedLenFeature([2], gt.int64, default_value=[7, 8])})[
        "z"].numpy().tolist() == [7, 8]
    assert P(ex, {"n": gt.io.FixedLenFeature([], gt.int64, default_value=5)})["n"].numpy() == 5
    assert P(ex, {"z": gt.io.FixedLenSequenceFeature([2], gt.int64, allow_missing=True)})[
        "z"].shape == (0, 2)
    sp = P(ex, {"zz": gt.io.VarLenFeature(gt.float32)})["zz"]
    assert sp.values.dtype == gt.float32 and sp.indices.shape == (0, 1)
    seq = gt.io.parse_example([ex, ex2], {"i": gt.io.FixedLenSequenceFeature(
        [], gt.int64, allow_missing=True, default_value=-1)})["i"]
    assert seq.numpy().tolist() == [[1, 2, 3], [9, -1, -1]]
    sp = gt.io.parse_example([ex, ex2], {"i": gt.io.VarLenFeature(gt.int64)})["i"]
    assert sp.indices.numpy().tolist() == [[0, 0], [0, 1], [0, 2], [1, 0]]
    assert sp.dense_shape.numpy().tolist() == [2, 3]
    assert gt.io.parse_example(ex, {"i": gt.io.FixedLenFeature([3], gt.int64)})["i"].shape == (3,)


def test_parse_example_errors_as_tf():
    ex = _five_features().SerializeToString()
    P, PE = gt.io.parse_single_example, gt.io.parse_example
    Fx = gt.io.FixedLenFeature
    cases = [
        (lambda: P(ex, {"i": Fx([2], gt.int64)}),
         "Key: i.  Can't parse serialized Example: Some int64_list slice was not parsed."),
        (lambda: PE([ex, ex], {"i": Fx([], gt.int64, default_value=0)}),
         "Name: <unknown>, Key: i, Index: 0.  Number of int64 values != expected.  Values "
         "size: 3 but output shape: []"),
        (lambda: P(ex, {"b": Fx([], gt.string)}),
         "Key: b.  Can't parse serialized Example: Parsing bytes_list failed."),
        (lambda: P(ex, {"z": Fx([], gt.int64)}),
         "Feature: z (data type: int64) is required but could not be found."),
        (lambda: P(ex, {"n": Fx([], gt.int64)}),
         "Feature: n (data type: int64) is required but could not be found."),
        (lambda: P(ex, {"i": Fx([3], gt.float32)}),
         "Key: i.  Data types don't match. Data type: int64 but expected type: float"),
        (lambda: P(ex, {"b": gt.io.VarLenFeature(gt.int64)}),
         "Key: b.  Data types don't match. Expected type: int64, Actual type: string"),
        (lambda: P(ex, {"i": gt.io.FixedLenSequenceFeature([2], gt.int64, allow_missing=True)}),
         "Error while parsing feature with key i: number of elements should be divisible by "
         "2, found 3 instead"),
        (lambda: P(ex, {"z": Fx([2], gt.float32, default_value=3)}),
         "Input to reshape is a tensor with 1 values, but the requested shape has 2"),
        (lambda: PE([[ex]], {"i": gt.io.VarLenFeature(gt.int64)}),
         "Expected serialized to be a scalar or vector, got shape: [1,1]"),
        (lambda: P(b"\x0a\x05abc", {"i": Fx([3], gt.int64)}),
         "Could not parse example input"),
    ]
    for fn, msg in cases:
        with pytest.raises(E.InvalidArgumentError) as info:
            fn()
        assert msg in str(info.value)
    for fn, msg in [
            (lambda: P(ex, {"i": gt.io.FixedLenSequenceFeature([], gt.int64)}),
             "FixedLenSequenceFeature requires allow_missing to be True"),
            (lambda: P([ex], {"i": Fx([3], gt.int64)}), "Input serialized must be a scalar"),
            (lambda: P(ex, {}), "features cannot be empty"),
            (lambda: P(ex, {"i": 3}), "Unsupported int 3 for key 'i'"),
            (lambda: P(ex, {"f": Fx([None], gt.float32)}), "First dimension of shape for "
             "feature f unknown. Consider using FixedLenSequenceFeature."),
            (lambda: P(ex, {"f": Fx([-1], gt.float32)}), "Dimension -1 must be >= 0")]:
        with pytest.raises(ValueError, match=msg):
            fn()
    with pytest.raises(E.InvalidArgumentError, match="allowed values: float, int64, string"):
        P(ex, {"i": Fx([3], gt.int32)})


def test_parse_sequence_examples_tf_file():
    seq = _records(os.path.join(DATA, "sequences.tfrecord"), "ZLIB")
    ctx, lists, lengths = gt.io.parse_sequence_example(
        seq, context_features={"length": gt.io.FixedLenFeature([], gt.int64),
                               "id": gt.io.FixedLenFeature([], gt.string)},
        sequence_features={"tokens": gt.io.FixedLenSequenceFeature([], gt.int64),
                           "vecs": gt.io.FixedLenSequenceFeature([2], gt.float32),
                           "words": gt.io.VarLenFeature(gt.string)})
    assert ctx["id"].numpy().tolist() == [b"s0", b"s1"]
    assert ctx["length"].numpy().tolist() == [3, 1]
    assert list(lists) == ["words", "tokens", "vecs"]
    assert lists["words"].indices.numpy().tolist() == [[0, 0, 0], [0, 0, 1], [0, 2, 0],
                                                       [1, 0, 0]]
    assert lists["words"].values.numpy().tolist() == [b"a", b"b", b"c", b"zz"]
    assert lists["words"].dense_shape.numpy().tolist() == [2, 3, 2]
    assert lists["tokens"].numpy().tolist() == [[1, 2, 3], [9, 0, 0]]
    assert lists["vecs"].numpy().tolist() == [[[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]],
                                              [[-1.0, -2.0], [0.0, 0.0], [0.0, 0.0]]]
    assert {k: v.numpy().tolist() for k, v in lengths.items()} == {"tokens": [3, 1],
                                                                   "vecs": [3, 1]}
    c, f = gt.io.parse_single_sequence_example(
        seq[0], context_features={"id": gt.io.FixedLenFeature([], gt.string)},
        sequence_features={"vecs": gt.io.FixedLenSequenceFeature([2], gt.float32),
                           "words": gt.io.VarLenFeature(gt.string),
                           "none": gt.io.FixedLenSequenceFeature([], gt.int64,
                                                                 allow_missing=True)})
    assert c["id"].numpy() == b"s0" and list(f) == ["words", "none", "vecs"]
    assert f["words"].indices.numpy().tolist() == [[0, 0], [0, 1], [2, 0]]
    assert f["words"].dense_shape.numpy().tolist() == [3, 2]
    assert f["none"].shape == (0,) and f["vecs"].shape == (3, 2)
    one = lambda spec: gt.io.parse_single_sequence_example(  # noqa: E731
        seq[0], sequence_features=spec)
    for spec, msg in [
            ({"tokens": gt.io.FixedLenSequenceFeature([2], gt.int64)},
             "Feature list 'tokens' has an unexpected number of values.  Total values size: 3 "
             "is not consistent with output shape: [?,2]"),
            ({"nope": gt.io.FixedLenSequenceFeature([], gt.int64)},
             "Name: <unknown>, Feature list 'nope' is required but could not be found."),
            ({"tokens": gt.io.FixedLenSequenceFeature([], gt.float32)},
             "Name: <unknown>, Feature list: tokens, Index: 0.  Data types don't match. "
             "Expected type: float")]:
        with pytest.raises(E.InvalidArgumentError) as info:
            one(spec)
        assert msg in str(info.value)


# --- TensorProto -------------------------------------------------------------------------------

# TF's serialize_tensor outputs
SERIALIZED = [
    (lambda: gt.constant(1.5), "0801120022040000c03f"),
    (lambda: gt.constant([[1, 2, 3]], gt.int32),
     "080312081202080112020803220c010000000200000003000000"),
    (lambda: gt.constant([], gt.float32), "080112021200"),
    (lambda: gt.constant(["a", "bc"]), "080712041202080242016142026263"),
    (lambda: gt.constant(True), "080a1200220101"),
    (lambda: gt.constant([1, -2], gt.int64),
     "080912041202080222100100000000000000feffffffffffffff"),
    (lambda: gt.constant([1.5], gt.float16), "08131204120208012202003e"),
    (lambda: gt.constant([1 + 2j], gt.complex64), "080812041202080122080000803f00000040"),
    (lambda: gt.constant("x"), "08071200420178"),
    (lambda: gt.constant(np.uint64([2 ** 63 + 5])), "081712041202080122080500000000000080"),
    (lambda: gt.constant([b"\x00\xff", b""]), "0807120412020802420200ff4200"),
    (lambda: gt.constant(np.zeros((2, 0))), "08021206120208021200"),
]


def test_serialize_tensor_bytes_equal_tf(device):
    for make, ref in SERIALIZED:
        t = make()
        s = gt.io.serialize_tensor(t)
        assert s.dtype == gt.string and s.shape == () and _hex(s) == ref
        back = gt.io.parse_tensor(bytes.fromhex(ref), t.dtype)
        assert back.dtype == t.dtype and back.shape == t.shape
        np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_parse_tensor_typed_value_fields():
    # TensorProtos with float_val, int_val ... (fewer values than elements repeat the last)
    for hexs, dt, shape, vals in [
            ("08011204120208032a0400008040", gt.float32, [3], [4.0, 4.0, 4.0]),
            ("08011204120208022a0c0000803f0000004000004040", gt.float32, [2], [1.0, 2.0]),
            ("08131204120208026a058078808001", gt.float16, [2], [1.0, 2.0]),
            ("080912081202080212020802520cf9ffffffffffffffff010809", gt.int64, [2, 2],
             [[-7, 8], [9, 9]]),
            ("08081204120208024a100000803f000000400000404000008040", gt.complex64, [2],
             [1 + 2j, 3 + 4j]),
            ("0807120412020803420161420162", gt.string, [3], [b"a", b"b", b"b"]),
            ("08061204120208023a0bfdffffffffffffffff0104", gt.int8, [2], [-3, 4]),
            ("080312081202080212020802", gt.int32, [2, 2], [[0, 0], [0, 0]])]:
        t = gt.io.parse_tensor(bytes.fromhex(hexs), dt)
        assert t.shape == tuple(shape) and t.numpy().tolist() == vals
    recs = _records(os.path.join(DATA, "tensors.tfrecord"))
    t = gt.io.parse_tensor(recs[0], gt.float32)
    np.testing.assert_array_equal(t.numpy(), np.float32([[1.5, -2.0, 3.25], [0.0, 1e-3, -7.0]]))
    assert gt.io.parse_tensor(recs[2], gt.string).numpy().tolist() == [b"ab", b"", "çd".encode()]
    assert gt.io.parse_tensor(recs[5], gt.float64).numpy() == 2.5
    for rec, dt in zip(recs, [gt.float32, gt.int64, gt.string, gt.bool, gt.uint8, gt.float64,
                              gt.float16]):
        assert bytes(gt.io.serialize_tensor(gt.io.parse_tensor(rec, dt)).numpy()) == rec
    with pytest.raises(E.InvalidArgumentError, match=r"Type mismatch between parsed tensor "
                       r"\(float\) and dtype \(double\)"):
        gt.io.parse_tensor(recs[0], gt.float64)
    with pytest.raises(E.InvalidArgumentError, match="Could not parse `serialized`"):
        gt.io.parse_tensor(b"\xff\xff", gt.float64)
    with pytest.raises(E.InvalidArgumentError, match=r"Expected `serialized` to be a scalar, "
                       r"got shape: \[1\]"):
        gt.io.parse_tensor([b""], gt.float32)


# --- decode_raw, decode_csv -------------------------------------------------------------------

def test_decode_raw(device):
    D = gt.io.decode_raw
    assert D(np.float32([1.5, -2]).astype(">f4").tobytes(), gt.float32,
             little_endian=False).numpy().tolist() == [1.5, -2.0]
    assert D([b"\x01\x02", b"\x03\x04"], gt.int16).numpy().tolist() == [[513], [1027]]
    assert D([[b"ab"], [b"cd"]], gt.uint8).shape == (2, 1, 2)
    assert D([b"\x01\x02\x03", b"\x04"], gt.int16, fixed_length=4).numpy().tolist() == \
        [[513, 3], [4, 0]]
    assert D(b"\x00\x01\x02", gt.bool).numpy().tolist() == [False, True, True]
    assert D([], gt.uint8).shape == (0, 0)
    assert D(np.complex64([1 + 2j]).tobytes(), gt.complex64).numpy().tolist() == [1 + 2j]
    for args, msg in [
            (([b"\x01\x02", b"\x03"], gt.uint8), "DecodeRaw requires input strings to all be "
             "the same size, but element 1 has size 2 != 1"),
            ((b"\x01\x02\x03", gt.int16), "Input to DecodeRaw has length 3 that is not a "
             "multiple of 2, the size of int16"),
            ((b"\x00", gt.uint32), "Value for attr 'out_type' of uint32 is not in the list")]:
        with pytest.raises(E.InvalidArgumentError) as info:
            D(*args)
        assert msg in str(info.value)
    with pytest.raises(E.InvalidArgumentError, match=r"fixed_length \(3\) must be a multiple"):
        D([b"ab"], gt.int16, fixed_length=3)


def test_decode_csv(device):
    C = gt.io.decode_csv
    out = C(["1,2.5,a", "3,4,b"], [[0], [0.0], [""]])
    assert [t.dtype for t in out] == [gt.int32, gt.float32, gt.string]
    assert [t.numpy().tolist() for t in out] == [[1, 3], [2.5, 4.0], [b"a", b"b"]]
    assert [t.numpy().tolist() for t in C(["1,,", ",4,b"], [[0], [1.0], ["zz"]])] == \
        [[1, 0], [1.0, 4.0], [b"zz", b"b"]]
    assert [t.numpy().tolist() for t in C(['"a,b",1', '"x""y",2'], [[""], [0]])] == \
        [[b"a,b", b'x"y'], [1, 2]]
    assert [t.numpy().tolist() for t in C(['"a,b",1'], [[""], [""], [0]],
                                          use_quote_delim=False)] == [[b'"a'], [b'b"'], [1]]
    assert [t.numpy().tolist() for t in C(["NA,2"], [[5], [0]], na_value="NA")] == [[5], [2]]
    assert [t.numpy().tolist() for t in C(["1,2,3,4"], [[0], [0]], select_cols=[1, 3])] == \
        [[2], [4]]
    assert [t.numpy().tolist() for t in C(["1|2"], [[0], [0]], field_delim="|")] == [[1], [2]]
    out = C(["1,2,3,4"], [gt.constant([0], gt.int64), gt.constant([0], gt.float64), [0],
                          [0.0]])
    assert [t.dtype for t in out] == [gt.int64, gt.float64, gt.int32, gt.float32]
    assert [t.numpy().tolist() for t in C([["1,2"], ["3,4"]], [[0], [0]])] == \
        [[[1], [3]], [[2], [4]]]
    assert C("1,2", [[0], [0]])[0].shape == ()
    assert [t.numpy().tolist() for t in C([" 1.5e3 ,inf"], [[0.0], [0.0]])] == \
        [[1500.0], [float("inf")]]
    assert C([" 12"], [[0]])[0].numpy().tolist() == [12]
    assert C(["99999999999"], [gt.constant([0], gt.int64)])[0].numpy().tolist() == \
        [99999999999]
    for args, msg in [
            ((["1,,"], [[0], gt.constant([], gt.float32), [""]]),
             "Field 1 is required but missing in record 0!"),
            ((["1,2"], [[0], [0.0], [""]]), "Expect 3 fields but have 2 in record 0"),
            ((["x,2,a"], [[0], [0.0], [""]]), "Field 0 in record 0 is not a valid int32: x"),
            ((["1,x,a"], [[0], [0.0], [""]]), "Field 1 in record 0 is not a valid float: x"),
            ((["99999999999"], [[0]]), "Field 0 in record 0 is not a valid int32: 99999999999"),
            ((["1.0"], [[0]]), "not a valid int32: 1.0"),
            ((['"ab'], [[""]]), "Quoted field has to end with quote followed by delim or end"),
            ((['"a"b,1'], [[""], [0]]), "Quote inside a string has to be escaped by another "
             "quote"),
            (([""], [[0]]), "Expect 1 fields but have 0 in record 0"),
            ((["1,2,"], [[0], [0]]), "Expect 2 fields but have 3 in record 0"),
            ((["1"], [[0, 1]]), "There should only be 1 default per field but field 0 has 2")]:
        with pytest.raises(E.InvalidArgumentError) as info:
            C(*args)
        assert msg in str(info.value)
    with pytest.raises(E.InvalidArgumentError, match="field_delim should be only 1 char"):
        C(["1|2"], [[0], [0]], field_delim="||")
    with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
        C(["1,2,3,4"], [[0], [0]], select_cols=[3, 1])
    with pytest.raises(ValueError, match="Length of select_cols and record_defaults"):
        C(["1,2,3,4"], [[0], [0], [0]], select_cols=[1, 3])


# --- files -------------------------------------------------------------------------------------

def test_read_write_file(tmp_path, device):
    p = str(tmp_path / "w" / "deep.txt")
    assert gt.io.write_file(p, "hey") is None
    t = gt.io.read_file(p)
    assert t.dtype == gt.string and t.device == "cpu:0" and t.numpy() == b"hey"
    with pytest.raises(E.NotFoundError, match="nope; No such file or directory"):
        gt.io.read_file(str(tmp_path / "nope"))
    with pytest.raises(E.FailedPreconditionError, match="Is a directory"):
        gt.io.read_file(str(tmp_path))
    with pytest.raises(E.InvalidArgumentError, match=r"Input filename tensor must be scalar, "
                       r"but had shape: \[1\]"):
        gt.io.read_file([p])
    with pytest.raises(E.InvalidArgumentError, match=r"Contents tensor must be scalar, but "
                       r"had shape: \[2\]"):
        gt.io.write_file(p, ["a", "b"])


def test_gfile(tmp_path):
    G = gt.io.gfile
    d = str(tmp_path)
    a = os.path.join(d, "a.txt")
    with G.GFile(a, "w") as f:
        f.write("line1\nline2\nlast")
        assert f.mode == "w" and f.name == a
    f = G.GFile(a)
    assert f.read(3) == "lin" and f.tell() == 3 and f.readline() == "e1\n"
    assert f.readlines() == ["line2\n", "last"] and f.size() == 16
    f.seek(0)
    assert list(f) == ["line1\n", "line2\n", "last"]
    f.seek(-2, 2)
    assert f.read() == "st"
    f.close()
    assert f.read() == "line1\nline2\nlast"          # TF reopens after close
    with G.GFile(a, "rb") as f:
        f.seek(2)
        assert f.read(2) == b"ne"
        f.seek(position=1)
        assert f.read(1) == b"i"
    with G.GFile(a, "a") as f:
        f.write(b"+app")
    assert open(a).read() == "line1\nline2\nlast+app"
    with pytest.raises(E.InvalidArgumentError, match="mode is not 'r' or 'w'"):
        G.GFile(a, "x")
    g = G.GFile(os.path.join(d, "nope"))               # opening is lazy, as TF
    with pytest.raises(E.NotFoundError, match="No such file or directory"):
        g.read()
    with pytest.raises(E.PermissionDeniedError, match="File isn't open for reading"):
        G.GFile(os.path.join(d, "c.txt"), "w").read()
    with pytest.raises(E.PermissionDeniedError, match="File isn't open for writing"):
        G.GFile(a).write("x")
    assert G.exists(a) and not G.exists(os.path.join(d, "zz")) and G.isdir(d)
    assert not G.isdir(a)
    G.makedirs(os.path.join(d, "x", "y", "z"))
    G.mkdir(os.path.join(d, "m"))
    G.mkdir(os.path.join(d, "m"))                      # no error, as TF
    with pytest.raises(E.NotFoundError):
        G.mkdir(os.path.join(d, "q", "r"))
    with pytest.raises(E.FailedPreconditionError, match="is not a directory"):
        G.makedirs(a)
    assert sorted(G.listdir(d)) == ["a.txt", "m", "x"]
    with pytest.raises(E.NotFoundError, match="Could not find directory"):
        G.listdir(a)
    assert G.glob(os.path.join(d, "*.txt")) == [a]
    assert G.glob([os.path.join(d, "m"), os.path.join(d, "x", "*", "z")]) == \
        [os.path.join(d, "m"), os.path.join(d, "x", "y", "z")]
    st = G.stat(a)
    assert st.length == 20 and not st.is_directory and isinstance(st.mtime_nsec, int)
    assert G.stat(d).is_directory
    b = os.path.join(d, "b.txt")
    G.copy(a, b)
    with pytest.raises(E.AlreadyExistsError, match="file already exists"):
        G.copy(a, b)
    G.copy(a, b, overwrite=True)
    with pytest.raises(E.AlreadyExistsError):
        G.rename(a, b)
    G.rename(b, os.path.join(d, "c.txt"))
    with pytest.raises(E.NotFoundError):
        G.rename(b, a)
    G.GFile(os.path.join(d, "x", "y", "f.txt"), "w").write("q")
    walked = {top: (sorted(dirs), sorted(files)) for top, dirs, files in G.walk(d)}
    assert walked[os.path.join(d, "x", "y")] == (["z"], ["f.txt"])
    assert walked[d] == (["m", "x"], ["a.txt", "c.txt"])
    assert list(G.walk(os.path.join(d, "nope"))) == []
    bottom_up = [top for top, _, _ in G.walk(os.path.join(d, "x"), topdown=False)]
    assert bottom_up[-1] == os.path.join(d, "x")
    with pytest.raises(E.FailedPreconditionError, match="Is a directory"):
        G.remove(os.path.join(d, "m"))
    with pytest.raises(E.NotFoundError, match="not found"):
        G.rmtree(os.path.join(d, "nope"))
    G.rmtree(os.path.join(d, "x"))
    G.remove(os.path.join(d, "c.txt"))
    assert sorted(G.listdir(d)) == ["a.txt", "m"]
    assert G.join("a", "b", "c") == "a/b/c"


# --- images -------------------------------------------------------------------------------------

def _chunk(kind, body):
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def _png(width, height, depth, ctype, rows, plte=None, trns=None):
    """A PNG of unfiltered scanlines ``rows``."""
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth,
                                                            ctype, 0, 0, 0))
    if plte is not None:
        out += _chunk(b"PLTE", plte)
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    data = b"".join(b"\x00" + r for r in rows)
    return out + _chunk(b"IDAT", zlib.compress(data)) + _chunk(b"IEND", b"")


PNG_CASES = {
    "rgb8": (3, 2, 8, 2, [bytes([121, 131, 193, 243, 8, 36, 210, 242, 63]),
                          bytes([79, 222, 108, 69, 211, 65, 104, 164, 140])], None, None),
    "gray16": (2, 2, 16, 0, [struct.pack(">HH", 27598, 33821), struct.pack(">HH", 65535, 7)],
               None, None),
    "rgb16_trns": (2, 1, 16, 2, [struct.pack(">6H", 5, 6, 7, 1000, 65000, 3)], None,
                   struct.pack(">HHH", 5, 6, 7)),
    "pal2_trns": (4, 1, 2, 3, [bytes([0b00011011])], bytes([10, 20, 30, 40, 50, 60, 70, 80, 90,
                                                             200, 210, 220]), bytes([0, 128])),
    "gray1": (9, 1, 1, 0, [bytes([0b10110001, 0b10000000])], None, None),
    "gray4_trns": (3, 1, 4, 0, [bytes([0x1F, 0x30])], None, struct.pack(">H", 15)),
    "la8": (2, 1, 8, 4, [bytes([10, 20, 200, 0])], None, None),
    "rgba16": (1, 1, 16, 6, [struct.pack(">4H", 300, 60000, 1, 32768)], None, None),
}

# TF's decode_png(png, channels, dtype): libpng's conversions as TF sets them up (rgb->gray
# with truncated 0.299/0.587 weights at 8 bits, rounded at 16; 16->8 bits drops the low byte;
# 8->16 multiplies by 257; the alpha filler is (1 << file depth) - 1: 1 for a 1-bit image)
PNG_REFS = {
    "rgb8|1|uint8": [[[135], [81], [212]], [[166], [151], [143]]],
    "rgb8|4|uint16": [[[31097, 33667, 49601, 65535], [62451, 2056, 9252, 65535],
                       [53970, 62194, 16191, 65535]], [[20303, 57054, 27756, 65535],
                                                       [17733, 54227, 16705, 65535],
                                                       [26728, 42148, 35980, 65535]]],
    "gray16|0|uint8": [[[107], [132]], [[255], [0]]],
    "gray16|3|uint16": [[[27598, 27598, 27598], [33821, 33821, 33821]],
                        [[65535, 65535, 65535], [7, 7, 7]]],
    "rgb16_trns|4|uint8": [[[0, 0, 0, 0], [3, 253, 0, 255]]],
    "rgb16_trns|1|uint16": [[[6], [38453]]],
    "pal2_trns|0|uint8": [[[10, 20, 30, 0], [40, 50, 60, 128], [70, 80, 90, 255],
                           [200, 210, 220, 255]]],
    "pal2_trns|3|uint16": [[[2570, 5140, 7710], [10280, 12850, 15420], [17990, 20560, 23130],
                            [51400, 53970, 56540]]],
    "pal2_trns|1|uint8": [[[18], [48], [78], [208]]],
    "gray1|4|uint8": [[[255, 255, 255, 1], [0, 0, 0, 1], [255, 255, 255, 1], [255, 255, 255, 1],
                       [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1], [255, 255, 255, 1],
                       [255, 255, 255, 1]]],
    "gray1|0|uint16": [[[65535], [0], [65535], [65535], [0], [0], [0], [65535], [65535]]],
    "gray4_trns|4|uint8": [[[17, 17, 17, 255], [255, 255, 255, 0], [51, 51, 51, 255]]],
    "gray4_trns|0|uint16": [[[4369], [65535], [13107]]],
    "la8|0|uint8": [[[10, 20], [200, 0]]],
    "la8|1|uint8": [[[10], [200]]],
    "la8|3|uint16": [[[2570, 2570, 2570], [51400, 51400, 51400]]],
    "rgba16|1|uint8": [[[137]]],
    "rgba16|0|uint16": [[[300, 60000, 1, 32768]]],
    "rgba16|3|uint8": [[[1, 234, 0]]],
}


def test_decode_png_conversions_as_tf(device):
    for key, ref in PNG_REFS.items():
        name, ch, dt = key.split("|")
        out = gt.io.decode_png(_png(*PNG_CASES[name]), channels=int(ch), dtype=dt)
        assert out.dtype == gt.as_dtype(dt) and out.device == device.name, key
        assert out.numpy().tolist() == ref, key


def test_png_interlaced_and_filters_round_trip():
    rng = np.random.default_rng(4)
    for dt, c in [(np.uint8, 3), (np.uint16, 4), (np.uint8, 1), (np.uint16, 2)]:
        img = rng.integers(0, np.iinfo(dt).max, (13, 17, c), endpoint=True).astype(dt)
        png = gt.io.encode_png(img)
        np.testing.assert_array_equal(gt.io.decode_png(png, dtype=dt).numpy(), img)
    # Adam7 interlacing (every pass geometry) of 16-bit RGB and 2-bit gray, built by hand
    h, w = 7, 11
    img = rng.integers(0, 65536, (h, w, 3)).astype(np.uint16)
    passes = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2),
              (0, 1, 2, 2), (1, 0, 2, 1)]
    data = b""
    for y0, x0, dy, dx in passes:
        sub = img[y0::dy, x0::dx]
        if sub.size:
            data += b"".join(b"\x00" + r.astype(">u2").tobytes() for r in sub)
    png = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 1))
           + _chunk(b"IDAT", zlib.compress(data)) + _chunk(b"IEND", b""))
    np.testing.assert_array_equal(gt.io.decode_png(png, dtype=gt.uint16).numpy(), img)


def test_encode_png_bytes_equal_tf(device):
    img = np.arange(2 * 5 * 3, dtype=np.uint8).reshape(2, 5, 3) * 7
    assert _hex(gt.io.encode_png(gt.constant(img))) == (
        "89504e470d0a1a0a0000000d49484452000000050000000208020000001f08810a0000001449444154"
        "0899636460e71345022c999999c87c0030ae034e61b6dcd80000000049454e44ae426082")
    assert _hex(gt.io.encode_png(img.astype(np.uint16) * 1000)) == (
        "89504e470d0a1a0a0000000d49484452000000050000000210020000004f985d490000002c49444154"
        "0899636460908e30db10c4811db2ccd298a5314b03c67dc3f186e30dc72c8e591cb33882388238009c"
        "a20ebb018cf6680000000049454e44ae426082")
    batch = gt.io.encode_png(np.stack([img, img]))
    assert batch.shape == (2,) and bytes(batch.numpy()[1]) == bytes(gt.io.encode_png(img)
                                                                     .numpy())
    with pytest.raises(E.InvalidArgumentError, match=r"images must be at least rank 3\[3,5\]"):
        gt.io.encode_png(np.zeros((3, 5), np.uint8))
    with pytest.raises(E.InvalidArgumentError, match="1, 2, 3, or 4 channels, got 5"):
        gt.io.encode_png(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(E.InvalidArgumentError, match=r"compression should be in \[-1,9\]"):
        gt.io.encode_png(img, compression=10)
    with pytest.raises(E.InvalidArgumentError, match="allowed values: uint8, uint16"):
        gt.io.encode_png(img.astype(np.float32))


BMP_REFS = {
    "bmp24|0": [[[9, 8, 7], [12, 11, 10]], [[3, 2, 1], [6, 5, 4]]],
    "bmp24|4": [[[9, 8, 7, 255], [12, 11, 10, 255]], [[3, 2, 1, 255], [6, 5, 4, 255]]],
    "bmp32_td|0": [[[3, 2, 1, 4], [7, 6, 5, 8]]],
    "bmp32_td|3": [[[3, 2, 1], [7, 6, 5]]],
    "bmp8|0": [[[9], [200], [3]]],
    "bmp8|4": [[[9, 9, 9, 255], [200, 200, 200, 255], [3, 3, 3, 255]]],
}


def _bmp(rows, width, height, bpp, top_down=False):
    row = (bpp * width + 31) // 32 * 4
    data = b"".join(r.ljust(row, b"\0") for r in rows)
    header = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bpp,
                         0, len(data), 2835, 2835, 0, 0)
    offset = 14 + 40 + (1024 if bpp == 8 else 0)
    palette = bytes(range(256)) * 4 if bpp == 8 else b""
    return (b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + header + palette
            + data)


def test_decode_bmp_as_tf():
    bmps = {"bmp24": _bmp([bytes([1, 2, 3, 4, 5, 6]), bytes([7, 8, 9, 10, 11, 12])], 2, 2, 24),
            "bmp32_td": _bmp([bytes([1, 2, 3, 4, 5, 6, 7, 8])], 2, 1, 32, top_down=True),
            "bmp8": _bmp([bytes([9, 200, 3])], 3, 1, 8)}
    for key, ref in BMP_REFS.items():
        name, ch = key.split("|")
        assert gt.io.decode_bmp(bmps[name], channels=int(ch)).numpy().tolist() == ref, key
    with pytest.raises(E.InvalidArgumentError, match="must be 0, 3 or 4 for BMP, but got 1"):
        gt.io.decode_image(bmps["bmp24"], channels=1)
    with pytest.raises(E.InvalidArgumentError, match="Trying to decode PNG format using "
                       "DecodeBmp op"):
        gt.io.decode_bmp(_png(*PNG_CASES["rgb8"]))


# an animated GIF (Pillow-made: 3 frames, transparency index 0, disposal 1) and TF's frames
GIF = bytes.fromhex(
    "4749463839610b00070081000085dd9f67a08ea53da727346221f90405010000002c000000000b0007000008"
    "34000300003040c080830200244c785060c300031412041040804188152d0e842820804781160512d4a850e4"
    "0090270b52bc6831200021f90405010000002c000000000b00070081c4c29962ce73866c966b269108340001"
    "0800407080c0000206240ca050a08000001822646870a080810302686c9891e1c5841d2f02303820e3c89310"
    "1fa66c8830200021f90405010000002c000000000b0007008182db919d8a61d53b784b329508320005081820"
    "0000c100060d0e30186040438701220210485161418202221274381080418a11257a6cd8312300841951620c"
    "08003b")


def test_decode_gif_as_tf():
    g = gt.io.decode_gif(GIF)
    assert g.shape == (3, 7, 11, 3) and g.dtype == gt.uint8
    x = g.numpy()
    assert int(x.sum()) == 71601 and x[1, 2, 3].tolist() == [98, 206, 115]
    assert x[2, 6, 10].tolist() == [213, 59, 120]
    assert x[0].reshape(-1)[:12].tolist() == [103, 160, 142, 0, 0, 0, 0, 0, 0, 39, 52, 98]
    assert gt.io.decode_image(GIF, expand_animations=False).shape == (7, 11, 3)
    assert gt.io.decode_image(GIF).shape == (3, 7, 11, 3)
    assert gt.io.decode_gif(_png(*PNG_CASES["rgb8"])).shape == (1, 2, 3, 3)
    with pytest.raises(E.InvalidArgumentError, match="channels must be 0 or 3 for GIF, got 1"):
        gt.io.decode_image(GIF, channels=1)


def test_decode_image_dtypes_and_errors(device):
    png = _png(*PNG_CASES["rgb8"])
    # float32 from PNG: the 16-bit decoding times 1/65535; float16, int32 through
    # convert_image_dtype of the uint16 decoding
    assert gt.io.decode_image(png, dtype=gt.float32).numpy().reshape(-1)[:4].tolist() == \
        [0.4745098054409027, 0.5137255191802979, 0.7568627595901489, 0.9529411792755127]
    assert gt.io.decode_image(png, dtype=gt.float16).numpy().reshape(-1)[:4].tolist() == \
        [0.474609375, 0.513671875, 0.7568359375, 0.953125]
    assert gt.io.decode_image(png, dtype=gt.int32).numpy().reshape(-1)[:4].tolist() == \
        [1018986496, 1103200256, 1625325568, 2046394368]
    with pytest.raises(E.InvalidArgumentError, match="Unknown image file format. One of JPEG"):
        gt.io.decode_image(b"hello world")
    with pytest.raises(E.InvalidArgumentError, match="`channels` must be 0, 1, 3 or 4 but "
                       "got 2"):
        gt.io.decode_png(png, channels=2)
    with pytest.raises(E.InvalidArgumentError, match=r"`contents` must be scalar but got "
                       r"shape\[1\]"):
        gt.io.decode_png([png])
    assert gt.io.is_jpeg(png).numpy() == False  # noqa: E712
    assert gt.io.is_jpeg([png, b"\xff\xd8\xffx"]).numpy().tolist() == [False, True]
    assert gt.image.decode_png is gt.io.decode_png and gt.image.is_jpeg is gt.io.is_jpeg


def _jpeg_refs():
    return np.load(os.path.join(DATA, "jpeg.npz"))


def test_jpeg_decoding_equals_tf(device):
    """TF's default decoding (libjpeg's fast IDCT with fancy upsampling) is rebuilt exactly
    from Pillow's fast-IDCT planes; every other option is libjpeg's own."""
    pytest.importorskip("PIL")
    ref = _jpeg_refs()
    for prefix, key in (("", "jpeg"), ("422_", "jpeg422")):
        data = ref[key].tobytes()
        D = gt.io.decode_jpeg
        np.testing.assert_array_equal(D(data).numpy(), ref[prefix + "default"])
        np.testing.assert_array_equal(D(data, dct_method="INTEGER_ACCURATE").numpy(),
                                      ref[prefix + "accurate"])
        np.testing.assert_array_equal(D(data, fancy_upscaling=False).numpy(),
                                      ref[prefix + "nofancy"])
        np.testing.assert_array_equal(gt.io.decode_and_crop_jpeg(data, [3, 5, 6, 9]).numpy(),
                                      ref[prefix + "crop"])
    data = ref["jpeg"].tobytes()
    np.testing.assert_array_equal(gt.io.decode_jpeg(data, ratio=2).numpy(), ref["ratio2"])
    np.testing.assert_array_equal(gt.io.decode_jpeg(data, channels=1).numpy(), ref["gray"])
    np.testing.assert_array_equal(
        gt.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE", fancy_upscaling=False).numpy(),
        ref["accurate_nofancy"])
    # decode_image's uint16 and float32 of a JPEG: x * 256 and x * float32(1 / 255)
    assert gt.io.decode_image(data, dtype=gt.uint16).numpy().reshape(-1)[:4].tolist() == \
        [1536, 4608, 1024, 1792]
    assert gt.io.decode_image(data, dtype=gt.float32).numpy().reshape(-1)[:4].tolist() == \
        [0.02352941408753395, 0.07058823853731155, 0.01568627543747425, 0.027450982481241226]
    assert gt.io.extract_jpeg_shape(data).numpy().tolist() == [9, 16, 3]
    assert gt.io.extract_jpeg_shape(data, gt.int64).dtype == gt.int64
    for fn, msg in [
            (lambda: gt.io.decode_jpeg(data, channels=4), "JPEG does not support 4 channels"),
            (lambda: gt.io.decode_jpeg(data, ratio=3), "ratio must be 1, 2, 4, or 8, got 3"),
            (lambda: gt.io.decode_jpeg(data, dct_method="FOO"), "dct_method must be one of"),
            (lambda: gt.io.decode_jpeg(b"\xff\xd8\xffhello"), "jpeg::Uncompress failed"),
            (lambda: gt.io.decode_and_crop_jpeg(data, [1, 1, 20, 3]), "jpeg::Uncompress failed"),
            (lambda: gt.io.decode_and_crop_jpeg(data, [1, 1, 2]),
             r"crop_size must have four elements \[3\]"),
            (lambda: gt.io.extract_jpeg_shape(_png(*PNG_CASES["rgb8"])),
             "Invalid JPEG data, size")]:
        with pytest.raises(E.InvalidArgumentError, match=msg):
            fn()


def test_encode_jpeg_bytes_equal_tf():
    pytest.importorskip("PIL")
    ref = _jpeg_refs()
    img = ref["img"]
    assert bytes(gt.io.encode_jpeg(img, quality=85).numpy()) == ref["jpeg"].tobytes()
    assert bytes(gt.io.encode_jpeg(img, quality=50, chroma_downsampling=False).numpy()) == \
        ref["jpeg_q50_444"].tobytes()
    cm = bytes(gt.io.encode_jpeg(img, density_unit="cm", x_density=10, y_density=20).numpy())
    assert cm[13] == 2 and struct.unpack(">HH", cm[14:18]) == (10, 20)
    assert b"http://ns.adobe.com/xap/1.0/\x00<x>hi</x>" in bytes(
        gt.io.encode_jpeg(img, xmp_metadata="<x>hi</x>").numpy())
    for kw, msg in [(dict(format="grayscale"), r"format grayscale expects 1 channels, got "
                     r"\[9,16,3\]"), (dict(quality=101), r"quality must be in \[0,100\]"),
                    (dict(density_unit="mm"), "density_unit")]:
        with pytest.raises(E.InvalidArgumentError, match=msg):
            gt.io.encode_jpeg(img, **kw)
    with pytest.raises(E.InvalidArgumentError, match="image must have 1 or 3 channels"):
        gt.io.encode_jpeg(np.zeros((2, 2, 4), np.uint8))


# --- Keras image utilities ------------------------------------------------------------------------

def _image_tree(root):
    """TF's encode_png bytes of the same random images (gradtape's are identical)."""
    rng = np.random.default_rng(21)
    sizes = {"cat": [(5, 7), (9, 4), (6, 6)], "dog": [(8, 5), (4, 9)], "emu": [(7, 7)]}
    for cls, ss in sizes.items():
        os.makedirs(os.path.join(root, cls))
        for i, (h, w) in enumerate(ss):
            img = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
            with open(os.path.join(root, cls, f"{i}.png"), "wb") as f:
                f.write(bytes(gt.io.encode_png(img).numpy()))
    os.makedirs(os.path.join(root, "dog", "more"))
    with open(os.path.join(root, "dog", "more", "x.png"), "wb") as f:
        f.write(bytes(gt.io.encode_png(rng.integers(0, 256, (3, 8, 1)).astype(np.uint8))
                      .numpy()))
    with open(os.path.join(root, "cat", "readme.txt"), "w") as f:
        f.write("not an image")


def _summary(ds):
    out = []
    for el in ds:
        x, y = el if isinstance(el, tuple) else (el, None)
        x = x.numpy()
        out.append((list(x.shape), round(float(x.sum()), 3),
                    [round(float(v), 4) for v in x.reshape(-1)[:3]],
                    None if y is None else y.numpy().tolist()))
    return out


def test_image_dataset_from_directory_as_keras(tmp_path):
    root = str(tmp_path / "tree")
    _image_tree(root)
    f = gt.keras.utils.image_dataset_from_directory
    assert gt.keras.preprocessing.image_dataset_from_directory is f
    ds = f(root, shuffle=False, image_size=(4, 6), batch_size=4, verbose=False)
    assert ds.class_names == ["cat", "dog", "emu"]
    assert [p[len(root):] for p in ds.file_paths] == [
        "/cat/0.png", "/cat/1.png", "/cat/2.png", "/dog/0.png", "/dog/1.png",
        "/dog/more/x.png", "/emu/0.png"]
    # Keras (TF 2.21) values
    assert _summary(ds) == [([4, 4, 6, 3], 36552.508, [80.1354, 193.0521, 113.7604],
                             [0, 0, 0, 1]),
                            ([3, 4, 6, 3], 26882.553, [102.0, 93.25, 128.0], [1, 1, 2])]
    ds = f(root, shuffle=False, image_size=(3, 3), label_mode="categorical",
           crop_to_aspect_ratio=True, batch_size=None, verbose=False)
    assert _summary(ds)[:3] == [
        ([3, 3, 3], 3694.667, [123.0, 142.1111, 169.3333], [1.0, 0.0, 0.0]),
        ([3, 3, 3], 3528.417, [23.5, 142.4167, 68.5833], [1.0, 0.0, 0.0]),
        ([3, 3, 3], 3410.5, [55.75, 130.25, 78.75], [1.0, 0.0, 0.0])]
    ds = f(root, shuffle=False, image_size=(5, 5), labels=None, pad_to_aspect_ratio=True,
           color_mode="grayscale", batch_size=7, verbose=False)
    assert _summary(ds) == [([7, 5, 5, 1], 13552.204, [152.0, 120.9333, 164.3333], None)]
    ds = f(root, shuffle=False, image_size=(3, 4), data_format="channels_first",
           interpolation="bicubic", label_mode="binary", class_names=["emu", "dog"],
           verbose=False)
    assert _summary(ds) == [([4, 3, 3, 4], 18238.828, [56.8419, 162.0194, 173.7685],
                             [[0.0], [1.0], [1.0], [1.0]])]
    # Keras' seeded shuffle of the file index and its split
    tr, va = f(root, shuffle=True, seed=7, image_size=(2, 2), validation_split=0.25,
               subset="both", verbose=False)
    assert [p[len(root):] for p in tr.file_paths] == [
        "/cat/2.png", "/dog/more/x.png", "/cat/0.png", "/emu/0.png", "/dog/0.png",
        "/cat/1.png"]
    assert [p[len(root):] for p in va.file_paths] == ["/dog/1.png"]
    assert sorted(int(y) for _, ys in tr for y in ys.numpy()) == [0, 0, 0, 1, 1, 2]
    for kw, msg in [(dict(color_mode="cmyk"), "`color_mode` must be one of"),
                    (dict(image_size=(1, 2, 3)), "Invalid `image_size` value"),
                    (dict(interpolation="cubic"), "Argument `interpolation` should be one of"),
                    (dict(validation_split=0.2), "If `subset` is set"),
                    (dict(label_mode="binary"), "there must be exactly 2 class_names"),
                    (dict(crop_to_aspect_ratio=True, pad_to_aspect_ratio=True),
                     "Only one of `pad_to_aspect_ratio`")]:
        with pytest.raises(ValueError, match=msg):
            f(root, verbose=False, **kw)
    empty = tmp_path / "empty" / "a"
    empty.mkdir(parents=True)
    with pytest.raises(ValueError, match="No images found in directory"):
        f(str(tmp_path / "empty"), verbose=False)


def test_load_img_save_img(tmp_path):
    pytest.importorskip("PIL")
    u = gt.keras.utils
    x = np.arange(4 * 6 * 3, dtype=np.float32).reshape(4, 6, 3)
    p = str(tmp_path / "a.png")
    u.save_img(p, x, scale=False)
    img = u.load_img(p)
    assert img.size == (6, 4) and img.mode == "RGB"
    np.testing.assert_array_equal(u.img_to_array(img), x)
    assert u.load_img(p, color_mode="grayscale").mode == "L"
    assert u.load_img(p, target_size=(2, 3)).size == (3, 2)
    assert u.load_img(p, target_size=(2, 2), keep_aspect_ratio=True).size == (2, 2)
    assert gt.keras.preprocessing.image.load_img is u.load_img
    with pytest.raises(ValueError, match="Invalid interpolation method"):
        u.load_img(p, target_size=(2, 2), interpolation="cubic")
    with pytest.warns(UserWarning, match="does not support RGBA"):
        u.save_img(str(tmp_path / "b.jpg"), np.zeros((2, 2, 4)))
    assert u.load_img(str(tmp_path / "b.jpg")).mode == "RGB"


def test_without_pillow(monkeypatch):
    """PNG, GIF and BMP decode without Pillow (PNG through gradtape's own unfiltering);
    JPEG names the extra that installs Pillow."""
    import sys
    monkeypatch.setitem(sys.modules, "PIL", None)
    for key in ("rgb8|1|uint8", "rgb16_trns|4|uint8", "gray1|4|uint8", "pal2_trns|0|uint8"):
        name, ch, dt = key.split("|")
        assert gt.io.decode_png(_png(*PNG_CASES[name]), channels=int(ch),
                                dtype=dt).numpy().tolist() == PNG_REFS[key]
    img = np.random.default_rng(1).integers(0, 256, (6, 9, 3)).astype(np.uint8)
    np.testing.assert_array_equal(gt.io.decode_png(gt.io.encode_png(img)).numpy(), img)
    assert gt.io.decode_gif(GIF).shape == (3, 7, 11, 3)
    with pytest.raises(ImportError, match=r"pip install 'gradtape\[io\]'"):
        gt.io.decode_jpeg(_jpeg_refs()["jpeg"].tobytes())
    with pytest.raises(ImportError, match=r"pip install 'gradtape\[io\]'"):
        gt.io.encode_jpeg(img)


def test_decode_csv_reads_hex_floats_as_tf():
    a, b = gt.io.decode_csv(["0x10,0x1p3", "-0x.8,0X1.8P1"],
                            [gt.constant([0.0]), gt.constant([0.0], gt.float64)])
    np.testing.assert_array_equal(a.numpy(), np.array([16.0, -0.5], np.float32))
    np.testing.assert_array_equal(b.numpy(), [8.0, 3.0])
