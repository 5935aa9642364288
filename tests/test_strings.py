"""String tensors, ``gt.strings``, ``gt.RaggedTensor`` and the text layers (``StringLookup``,
``TextVectorization``, string ``Hashing``), against values TensorFlow 2.21 / Keras 3 gives
for the same inputs."""
import io
import re
import string as pystring

import numpy as np
import pytest

import gradtape as gt
from gradtape import ragged, strings
from gradtape.dtypes import as_dtype, string as gt_string
from gradtape.layers_preprocessing import Hashing, StringLookup, TextVectorization
from gradtape.printing import print_
from gradtape.registry import InvalidArgumentError
from gradtape.tensor import Variable


def _b(*items):
    return [s.encode() if isinstance(s, str) else s for s in items]


def _vals(t):
    return t.numpy().tolist()


# --- string tensors ---------------------------------------------------------------------------

def test_string_dtype_as_tensorflow():
    assert gt_string.name == "string" and str(gt_string) == "<dtype: 'string'>"
    assert gt_string.as_numpy_dtype is np.object_
    assert gt_string.size == 0
    assert not gt_string.is_floating and not gt_string.is_integer and not gt_string.is_numeric
    for spec in ("string", np.object_, np.str_, np.bytes_, np.dtype("U3"), np.dtype("S3")):
        assert as_dtype(spec) is gt_string
    for spec in (str, bytes, "str", "object"):     # TensorFlow refuses these
        with pytest.raises(TypeError):
            as_dtype(spec)
    with pytest.raises(TypeError, match="minimum"):
        gt_string.min
    assert gt_string == "string" and gt.float32 != gt_string


def test_constant_numpy_and_printing():
    """TensorFlow gives ``tf.Tensor([b'a' b'bc'], shape=(2,), dtype=string)`` and the
    numpy value as an object array of bytes (bytes for a scalar)."""
    a, b = gt.constant("a"), gt.constant(["a", "bc"])
    assert a.dtype is gt_string and a.numpy() == b"a" and type(a.numpy()) is bytes
    assert b.numpy().dtype == object and _vals(b) == [b"a", b"bc"]
    assert str(a) == "gt.Tensor(b'a', shape=(), dtype=string, device=cpu:0)"
    assert repr(a) == "<gt.Tensor: shape=(), dtype=string, device=cpu:0, numpy=b'a'>"
    assert str(b) == "gt.Tensor([b'a' b'bc'], shape=(2,), dtype=string, device=cpu:0)"
    assert repr(b) == ("<gt.Tensor: shape=(2,), dtype=string, device=cpu:0, "
                       "numpy=array([b'a', b'bc'], dtype=object)>")
    c = gt.constant([["héllo", "x"], ["y", "z"]])
    assert str(c) == ("gt.Tensor(\n[[b'h\\xc3\\xa9llo' b'x']\n [b'y' b'z']], shape=(2, 2), "
                      "dtype=string, device=cpu:0)")
    assert f"{a}" == "b'a'"


def test_conversion_of_text_values():
    assert gt.convert_to_tensor(b"x\x00").numpy() == b"x\x00"
    assert _vals(gt.convert_to_tensor(np.array(["ab", "c"]))) == [b"ab", b"c"]
    assert _vals(gt.constant(np.array([b"ab", "c"], dtype=object))) == [b"ab", b"c"]
    assert _vals(gt.constant(np.array([b"a", b"bc"]))) == [b"a", b"bc"]
    assert gt.constant(np.str_("x")).numpy() == b"x"
    assert _vals(gt.constant(["a"], dtype=gt_string)) == [b"a"]
    assert gt.constant([], dtype=gt_string).shape == (0,)
    assert _vals(gt.constant([gt.constant("a"), gt.constant("b")])) == [b"a", b"b"]
    with pytest.raises(ValueError, match="mixed types"):
        gt.constant(["a", 1])
    with pytest.raises(TypeError):
        gt.constant(1, dtype=gt_string)
    with pytest.raises(TypeError):
        gt.constant("1", dtype=gt.float32)
    with pytest.raises(ValueError):
        gt.constant([["a"], ["b", "c"]])


def test_equality_is_elementwise():
    b = gt.constant(["a", "bc"])
    assert _vals(b == "a") == [True, False]
    assert _vals(b != "a") == [False, True]
    assert _vals(b == gt.constant(["a", "x"])) == [True, False]
    assert _vals(b == ["a", "c"]) == [True, False]
    assert _vals(b == np.array(["a", "bc"])) == [True, True]
    assert _vals(gt.constant("a") == b"a") is True
    assert (b == gt.constant(["a", "x", "y"])).numpy() is np.False_   # shapes never meet
    assert _vals(gt.constant([["a"], ["b"]]) == gt.constant(["a", "b"])) == [[True, False],
                                                                           [False, True]]
    with pytest.raises(TypeError):
        gt.constant(["a"]) == gt.constant([1])


def test_shape_ops_on_strings():
    b = gt.constant(["a", "bc"])
    c = gt.constant([["h", "x"], ["y", "z"]])
    assert _vals(gt.reshape(c, [4])) == _b("h", "x", "y", "z")
    assert _vals(gt.concat([b, b], 0)) == _b("a", "bc", "a", "bc")
    assert _vals(gt.stack([b, b])) == [_b("a", "bc")] * 2
    assert _vals(gt.gather(b, [1, 0, 1])) == _b("bc", "a", "bc")
    assert _vals(gt.boolean_mask(b, [True, False])) == [b"a"]
    assert gt.expand_dims(b, -1).shape == (2, 1)
    assert _vals(gt.transpose(c)) == [_b("h", "y"), _b("x", "z")]
    assert _vals(c[:, 0]) == _b("h", "y")
    assert c[1, 1].numpy() == b"z" and c[1, 1].shape == ()
    assert [t.numpy() for t in b] == _b("a", "bc")
    assert b[gt.constant(1)].numpy() == b"bc"
    assert _vals(gt.where([True, False], b, gt.constant(["p", "q"]))) == _b("a", "q")
    y, idx = gt.unique(gt.constant(["b", "a", "b", "c"]))
    assert _vals(y) == _b("b", "a", "c") and _vals(idx) == [0, 1, 0, 2]
    assert int(gt.size(b)) == 2 and _vals(gt.shape(c)) == [2, 2]
    assert _vals(gt.tile(b, [2])) == _b("a", "bc", "a", "bc")
    assert _vals(gt.reverse(b, [0])) == _b("bc", "a")
    assert _vals(gt.fill([2], "q")) == _b("q", "q")
    assert len(b) == 2 and bool(gt.constant("a"))


def test_strings_live_on_the_host_and_are_never_differentiated():
    with gt.device("strict:0"):
        s = gt.constant(["a"])
        assert s.device == "cpu:0" and gt.constant(1.0).device == "strict:0"
        assert gt.concat([s, s], 0).device == "cpu:0"
        assert gt.convert_to_tensor(np.array(["x"])).device == "cpu:0"
        assert s.to("strict:0") is s
        v = Variable("hi")
        assert v.device == "cpu:0"
    assert v.assign("yo").numpy() == b"yo"
    with gt.GradientTape() as tape:
        with pytest.warns(RuntimeWarning):
            tape.watch(s)
        out = gt.concat([s, s], 0)
    assert tape.gradient(out, s) is None


def test_print_quotes_strings_as_tensorflow():
    """tf.print: ``["a\\nb" "it\\'s" "\\001\\177" "é\\\\" ""]`` and ``"scalar" py str``."""
    buf = io.StringIO()
    print_(gt.constant(["a\nb", "it's", "\x01\x7f", "é\\", ""]), output_stream=buf)
    print_(gt.constant("scalar"), "py str", output_stream=buf)
    print_(gt.constant([str(i) for i in range(10)]), output_stream=buf)
    print_({"k": gt.constant("v")}, output_stream=buf)
    print_(gt.constant([["héllo", "x"], ["y", "z"]]), output_stream=buf)
    assert buf.getvalue() == ('["a\\nb" "it\\\'s" "\\001\\177" "é\\\\" ""]\n"scalar" py str\n'
                              '["0" "1" "2" ... "7" "8" "9"]\n{\'k\': "v"}\n'
                              '[["héllo" "x"]\n ["y" "z"]]\n')


# --- gt.strings -------------------------------------------------------------------------------

_S = ["The Movie was GREAT!<br />Loved it.", "  Terrible... film; 10/10 NOT  ",
      "Ünïcode ÉTÉ straße", ""]


def test_case_strip_length():
    S = gt.constant(_S)
    assert _vals(strings.lower(S))[2] == b"\xc3\x9cn\xc3\xafcode \xc3\x89t\xc3\x89 stra\xc3\x9fe"
    assert _vals(strings.lower(S))[0] == b"the movie was great!<br />loved it."
    assert _vals(strings.lower(S, encoding="utf-8"))[2] == \
        b"\xc3\xbcn\xc3\xafcode \xc3\xa9t\xc3\xa9 stra\xc3\x9fe"
    assert _vals(strings.upper(S))[1] == b"  TERRIBLE... FILM; 10/10 NOT  "
    assert _vals(strings.upper(S, encoding="utf-8"))[2] == \
        b"\xc3\x9cN\xc3\x8fCODE \xc3\x89T\xc3\x89 STRASSE"
    assert _vals(strings.lower([b"A\xffB"], encoding="utf-8")) == [b"a\xef\xbf\xbdb"]
    assert _vals(strings.strip(gt.constant([" \t a b \n", "\x0bx\x0c", "  "]))) == \
        _b("a b", "x", "")
    n = strings.length(S)
    assert n.dtype == gt.int32 and _vals(n) == [35, 31, 23, 0]
    assert _vals(strings.length(S, unit="UTF8_CHAR")) == [35, 31, 18, 0]
    assert _vals(strings.length(gt.constant([["ab"], ["é"]]), unit="UTF8_CHAR")) == [[2], [1]]
    assert _vals(strings.length([b"a\xffb\xe2\x82"], unit="UTF8_CHAR")) == [4]
    assert strings.lower("ABC").numpy() == b"abc"
    with pytest.raises(InvalidArgumentError):
        strings.lower(gt.constant([1]))


def test_substr():
    hw = gt.constant(["Hello", "World"])
    assert _vals(strings.substr(hw, 1, 3)) == _b("ell", "orl")
    assert _vals(strings.substr(hw, -3, 2)) == _b("ll", "rl")
    assert _vals(strings.substr(hw, [0, 2], [2, 10])) == _b("He", "rld")
    assert _vals(strings.substr(gt.constant(["héllo"]), 1, 2, unit="UTF8_CHAR")) == \
        [b"\xc3\xa9l"]
    assert _vals(strings.substr(gt.constant(["héllo"]), 1, 2)) == [b"\xc3\xa9"]
    with pytest.raises(InvalidArgumentError, match="pos 7 out of range for string b'Hello' "
                                                   "at index 0"):
        strings.substr(gt.constant(["Hello"]), 7, 2)


def test_join_and_reduce_join():
    assert _vals(strings.join([gt.constant(["a", "b"]), gt.constant(["c", "d"])],
                              separator="-")) == _b("a-c", "b-d")
    assert _vals(strings.join(["x", gt.constant(["a", "b"])])) == _b("xa", "xb")
    assert strings.join(["a", "b"]).numpy() == b"ab"
    m = gt.constant([["a", "b"], ["c", "d"]])
    assert strings.reduce_join(m).numpy() == b"abcd"
    assert _vals(strings.reduce_join(m, axis=0)) == _b("ac", "bd")
    assert _vals(strings.reduce_join(m, axis=-1, separator=", ")) == _b("a, b", "c, d")
    assert _vals(strings.reduce_join(m, axis=1, keepdims=True)) == [[b"ab"], [b"cd"]]
    assert _vals(strings.reduce_join(m, keepdims=True)) == [[b"abcd"]]
    rt = ragged.constant([["a", "b", "c"], ["x"]])
    assert _vals(strings.reduce_join(rt, axis=-1)) == _b("abc", "x")
    assert _vals(strings.reduce_join(rt, axis=0)) == _b("ax", "b", "c")
    assert strings.reduce_join(rt).numpy() == b"abcx"
    assert strings.reduce_join(gt.constant([], dtype=gt_string), axis=0).numpy() == b""


def test_regex_replace_follows_re2():
    S = gt.constant(_S)
    assert _vals(strings.regex_replace(S, "<br />", " "))[0] == b"The Movie was GREAT! Loved it."
    punct = "[%s]" % re.escape(pystring.punctuation)
    assert _vals(strings.regex_replace(strings.lower(S), punct, ""))[:2] == \
        _b("the movie was greatbr loved it", "  terrible film 1010 not  ")
    keras = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'
    assert _vals(strings.regex_replace(S, keras, ""))[:2] == \
        _b("The Movie was GREATbr Loved it", "  Terrible film 1010 NOT  ")
    one = (lambda text, pat, rw, **kw:
           strings.regex_replace(gt.constant([text]), pat, rw, **kw).numpy()[0])
    assert one("abc abd", r"a(b)(.)", r"\2\1X") == b"cbX dbX"
    assert one("abc abd", "ab", r"<\0>") == b"<ab>c <ab>d"
    assert one("aaa", "a", "b", replace_global=False) == b"baa"
    assert one("Hi, you! ¿Qué? «x» — y…", r"\p{P}", "") == b"Hi you Qu\xc3\xa9 x  y"
    assert one("Hé, l'o! 42_x", r"[^\w\s]", "") == b"H lo 42_x"      # RE2's ASCII \w
    assert one("a  b\t\nc", r"\s+", " ") == b"a b c"
    assert one("aé1 Z", r"\pL", "_") == b"__1 _"
    assert one("¿todavía está en casa?", "[^ a-z.?!,¿]", "") == b"\xc2\xbftodava est en casa?"
    assert one("¿todavía está en casa?", "[.?!,¿]", r" \0 ") == \
        b" \xc2\xbf todav\xc3\xada est\xc3\xa1 en casa ? "
    assert one("abc", "x*", "-") == b"-a-b-c-"
    assert one("ab1 c", "[[:alpha:]]+", "w") == b"w1 w"
    assert strings.regex_replace([b"a\xffb"], "b", "c").numpy()[0] == b"a\xffc"
    assert _vals(strings.regex_full_match(gt.constant(["abc", "ab", "xabc"]), "ab.")) == \
        [True, False, False]
    with pytest.raises(InvalidArgumentError):
        strings.regex_replace(gt.constant(["a"]), "(", "")


def test_split_family():
    sp = strings.split(gt.constant(["  hello  world ", "a b\tc\nd", ""]))
    assert isinstance(sp, ragged.RaggedTensor)
    assert sp.to_list() == [_b("hello", "world"), _b("a", "b", "c", "d"), []]
    assert strings.split(gt.constant(["a,,b", "c,"]), sep=",").to_list() == \
        [_b("a", "", "b"), _b("c", "")]
    s0 = strings.split(gt.constant("a b c"))
    assert isinstance(s0, gt.Tensor) and _vals(s0) == _b("a", "b", "c")
    assert strings.split(gt.constant(["a b c d"]), maxsplit=1).to_list() == [_b("a", "b c d")]
    two = strings.split(gt.constant([["a b"], ["c"]]))
    assert two.ragged_rank == 2 and two.to_list() == [[_b("a", "b")], [[b"c"]]]
    assert two.shape.as_list() == [2, 1, None]
    assert strings.split(gt.constant(["a<>b<>c"]), sep="<>").to_list() == [_b("a", "b", "c")]
    assert strings.split(gt.constant(["abc"]), sep="").to_list() == [[b"abc"]]
    assert strings.split(gt.constant(["a\u00a0b c\u2003d"])).to_list() == \
        [[b"a\xc2\xa0b", b"c\xe2\x80\x83d"]]
    assert strings.split(ragged.constant([["a b", "c"], ["d e f"]])).to_list() == \
        [[_b("a", "b"), [b"c"]], [_b("d", "e", "f")]]
    us = strings.unicode_split(["abcdefg", "xyz"], input_encoding="UTF-8")
    assert us.to_list() == [list(_b(*"abcdefg")), list(_b(*"xyz"))]
    assert _vals(strings.unicode_split("héllo", "UTF-8")) == _b("h", "é", "l", "l", "o")
    assert strings.unicode_split([b"a\xffb"], "UTF-8").to_list() == [_b("a", "\ufffd", "b")]
    assert strings.bytes_split(gt.constant(["hé", "ab"])).to_list() == \
        [[b"h", b"\xc3", b"\xa9"], [b"a", b"b"]]
    assert _vals(strings.bytes_split("ab")) == _b("a", "b")


def test_unicode_decode_encode_transcode():
    assert strings.unicode_decode(["héllo", "ab"], "UTF-8").to_list() == \
        [[104, 233, 108, 108, 111], [97, 98]]
    d = strings.unicode_decode("hé", "UTF-8")
    assert d.dtype == gt.int32 and _vals(d) == [104, 233]
    assert strings.unicode_decode([b"a\xffb\xe2\x82"], "UTF-8").to_list() == \
        [[97, 65533, 98, 65533]]
    assert strings.unicode_decode([b"a\xffb\xe2\x82"], "UTF-8", errors="ignore").to_list() == \
        [[97, 98]]
    assert strings.unicode_decode([b"a\xffb"], "UTF-8", replacement_char=63).to_list() == \
        [[97, 63, 98]]
    assert strings.unicode_decode(["a\x01b"], "UTF-8",
                                  replace_control_characters=True).to_list() == [[97, 65533, 98]]
    assert strings.unicode_encode([104, 233], "UTF-8").numpy() == b"h\xc3\xa9"
    assert _vals(strings.unicode_encode(ragged.constant([[104, 233], [97]]), "UTF-8")) == \
        [b"h\xc3\xa9", b"a"]
    assert _vals(strings.unicode_encode(gt.constant([[104, 233], [97, 98]]), "UTF-8")) == \
        [b"h\xc3\xa9", b"ab"]
    assert _vals(strings.unicode_transcode(["héllo", "a€"], "UTF-8", "UTF-16-BE")) == \
        [b"\x00h\x00\xe9\x00l\x00l\x00o", b"\x00a \xac"]
    assert _vals(strings.unicode_transcode(["a€"], "UTF-8", "UTF-32-BE")) == \
        [b"\x00\x00\x00a\x00\x00 \xac"]


def test_numbers_and_text():
    f = strings.to_number(gt.constant(["1.5", "-2", "3e2", " 4"]))
    assert f.dtype == gt.float32 and _vals(f) == [1.5, -2.0, 300.0, 4.0]
    i = strings.to_number(gt.constant(["1", "-2"]), out_type=gt.int32)
    assert i.dtype == gt.int32 and _vals(i) == [1, -2]
    assert strings.to_number(gt.constant(["1", "-2"]), out_type=gt.int64).dtype == gt.int64
    assert strings.to_number(gt.constant(["0.1"]), out_type=gt.float64).numpy()[0] == 0.1
    nan, inf, ninf = _vals(strings.to_number(gt.constant(["nan", "inf", "-Inf"])))
    assert np.isnan(nan) and inf == np.inf and ninf == -np.inf
    for bad, out in (("x", gt.float32), ("1.5", gt.int32), ("1_0", gt.float32)):
        with pytest.raises(InvalidArgumentError, match="could not correctly convert string"):
            strings.to_number(gt.constant([bad]), out_type=out)
    fl = gt.constant([1.5, 2.0, 1e-7, 123456789.0])
    assert _vals(strings.as_string(fl)) == _b("1.500000", "2.000000", "0.000000",
                                              "123456792.000000")
    assert _vals(strings.as_string(gt.constant([1, -20]))) == _b("1", "-20")
    assert _vals(strings.as_string(gt.constant([True, False]))) == _b("true", "false")
    pi = gt.constant([3.14159])
    assert _vals(strings.as_string(pi, precision=2)) == [b"3.14"]
    assert _vals(strings.as_string(pi, scientific=True)) == [b"3.141590e+00"]
    assert _vals(strings.as_string(gt.constant([3.14159, 1e20]), shortest=True)) == \
        _b("3.14159", "1e+20")
    assert _vals(strings.as_string(gt.constant([7]), width=4, fill="0")) == [b"0007"]
    assert _vals(strings.as_string(gt.constant([7]), width=4)) == [b"   7"]
    assert _vals(strings.as_string(gt.constant([0.1], gt.float64))) == [b"0.100000"]
    assert strings.as_string(ragged.constant([[1, 2], [3]])).to_list() == \
        [_b("1", "2"), [b"3"]]


def test_format():
    assert strings.format("x={} y={}", (gt.constant([1, 2]), gt.constant(3.5))).numpy() == \
        b"x=[1 2] y=3.5"
    assert strings.format("{}", gt.constant(["a", "b"])).numpy() == b'["a" "b"]'
    assert strings.format("{}", gt.range(10)).numpy() == b"[0 1 2 ... 7 8 9]"
    assert strings.format("{}", gt.range(10), summarize=2).numpy() == b"[0 1 ... 8 9]"
    assert strings.format("t: {}", gt.constant([[1.5, 2.0], [3.0, 4.25]])).numpy() == \
        b"t: [[1.5 2]\n [3 4.25]]"
    assert strings.format("hi {}", gt.constant("there")).numpy() == b'hi "there"'


def test_ngrams():
    abcd = gt.constant(["a", "b", "c", "d"])
    assert _vals(strings.ngrams(abcd, 2)) == _b("a b", "b c", "c d")
    assert strings.ngrams(ragged.constant([["a", "b", "c"], ["x"]]), (1, 2),
                          separator=" ").to_list() == [_b("a", "b", "c", "a b", "b c"), [b"x"]]
    assert _vals(strings.ngrams(gt.constant(["a", "b"]), 3, pad_values=("<s>", "</s>"))) == \
        _b("<s> <s> a", "<s> a b", "a b </s>", "b </s> </s>")
    assert _vals(strings.ngrams(gt.constant(["a", "b", "c"]), 3, pad_values="#",
                                padding_width=1)) == _b("# a b", "a b c", "b c #")
    assert _vals(strings.ngrams(gt.constant(["a", "b"]), 3,
                                preserve_short_sequences=True)) == [b"a b"]
    assert _vals(strings.ngrams(gt.constant([["a", "b", "c"], ["d", "e", "f"]]), 2)) == \
        [_b("a b", "b c"), _b("d e", "e f")]
    with pytest.raises(ValueError):
        strings.ngrams(abcd, 2, padding_width=1)


def test_hash_buckets_are_farmhash():
    """TensorFlow's to_hash_bucket_fast, for strings of 0 to 200 bytes (each FarmHash
    length class)."""
    values = ["", "a", "hello", "the quick brown fox jumps over the lazy dog!!", "x" * 70,
              "y" * 200, "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123"]
    h = strings.to_hash_bucket_fast(gt.constant(values), 1000)
    assert h.dtype == gt.int64 and _vals(h) == [263, 939, 296, 266, 745, 796, 583]
    assert strings.to_hash_bucket_fast(ragged.constant([["a", "b"], ["c"]]), 10).to_list() \
        == [[9, 2], [2]]


def test_ragged_inputs_keep_their_rows():
    rt = ragged.constant([["A", "BB"], ["C"]])
    assert strings.lower(rt).to_list() == [_b("a", "bb"), [b"c"]]
    assert strings.length(rt).to_list() == [[1, 2], [1]]
    assert strings.to_number(ragged.constant([["1", "2"], ["3"]])).to_list() == \
        [[1.0, 2.0], [3.0]]
    assert strings.regex_replace(ragged.constant([["a!", "b"], ["c"]]), "!", "").to_list() \
        == [_b("a", "b"), [b"c"]]


# --- gt.RaggedTensor --------------------------------------------------------------------------

def test_ragged_tensor_basics():
    rt = ragged.constant([[1, 2, 3], [], [4, 5]])
    assert repr(rt) == "<gt.RaggedTensor [[1, 2, 3], [], [4, 5]]>"
    assert rt.shape.as_list() == [3, None] and rt.dtype == gt.int32 and rt.ragged_rank == 1
    assert _vals(rt.values) == [1, 2, 3, 4, 5] and _vals(rt.flat_values) == [1, 2, 3, 4, 5]
    assert rt.row_splits.dtype == gt.int64 and _vals(rt.row_splits) == [0, 3, 3, 5]
    assert _vals(rt.row_lengths()) == [3, 0, 2] and int(rt.nrows()) == 3
    assert rt.nrows(out_type=gt.int32).dtype == gt.int32
    assert _vals(rt.value_rowids()) == [0, 0, 0, 2, 2]
    assert _vals(rt.row_starts()) == [0, 3, 3] and _vals(rt.row_limits()) == [3, 3, 5]
    assert _vals(rt.bounding_shape()) == [3, 3]
    assert _vals(rt.to_tensor()) == [[1, 2, 3], [0, 0, 0], [4, 5, 0]]
    assert _vals(rt.to_tensor(default_value=-1))[1] == [-1, -1, -1]
    assert _vals(rt.to_tensor(shape=[3, 2])) == [[1, 2], [0, 0], [4, 5]]
    assert _vals(rt.to_tensor(default_value=9, shape=[4, 5])) == [
        [1, 2, 3, 9, 9], [9, 9, 9, 9, 9], [4, 5, 9, 9, 9], [9, 9, 9, 9, 9]]
    assert rt.to_tensor(shape=[None, 5]).shape == (3, 5)
    assert rt.to_list() == [[1, 2, 3], [], [4, 5]]
    assert [a.tolist() for a in rt.numpy()] == [[1, 2, 3], [], [4, 5]]
    assert _vals(rt[0]) == [1, 2, 3] and _vals(rt[-1]) == [4, 5] and rt[1].shape == (0,)
    assert rt[1:].to_list() == [[], [4, 5]] and rt[::2].to_list() == [[1, 2, 3], [4, 5]]
    assert int(rt[2, 1]) == 5
    assert rt[:, :2].to_list() == [[1, 2], [], [4, 5]]
    with pytest.raises(ValueError, match="Cannot index into an inner ragged dimension"):
        rt[:, 1]
    with pytest.raises(IndexError, match="Row key 5 out of bounds"):
        rt[5]
    with pytest.raises(TypeError):
        len(rt)
    assert [_vals(r) for r in rt] == [[1, 2, 3], [], [4, 5]]
    assert (rt * 10).to_list() == [[10, 20, 30], [], [40, 50]]
    assert (rt == rt).to_list() == [[True] * 3, [], [True] * 2]
    assert ragged.map_flat_values(gt.multiply, rt, 2).to_list() == [[2, 4, 6], [], [8, 10]]
    assert rt.with_values(rt.values + 1).to_list() == [[2, 3, 4], [], [5, 6]]


def test_ragged_factories():
    RT = ragged.RaggedTensor
    assert RT.from_row_splits([1, 2, 3], [0, 1, 3]).to_list() == [[1], [2, 3]]
    with pytest.raises(ValueError):
        RT.from_row_splits([1, 2, 3], [0, 1, 2])
    assert RT.from_row_lengths([1, 2, 3], [2, 0, 1]).to_list() == [[1, 2], [], [3]]
    assert RT.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=4).to_list() == \
        [[1, 2], [], [3], []]
    assert RT.from_tensor([[1, 0, 0], [2, 3, 0]], padding=0).to_list() == [[1], [2, 3]]
    assert RT.from_tensor([[1, 0, 0], [2, 3, 0]], lengths=[1, 3]).to_list() == \
        [[1], [2, 3, 0]]
    assert repr(RT.from_tensor([[1, 0], [2, 3]])) == "<gt.RaggedTensor [[1, 0],\n [2, 3]]>"
    with pytest.raises(ValueError, match="private"):
        RT(gt.constant([1]), [0, 1])
    assert ragged.stack([gt.constant([1, 2]), gt.constant([3])]).to_list() == [[1, 2], [3]]
    assert ragged.stack([ragged.constant([[1], [2, 3]]), ragged.constant([[4]])]).to_list() \
        == [[[1], [2, 3]], [[4]]]
    assert ragged.boolean_mask(ragged.constant([[1, 2], [3]]),
                               ragged.constant([[True, False], [True]])).to_list() == [[1], [3]]


def test_nested_and_inner_shapes():
    n = ragged.constant([[[1, 2], [3]], [[4]], []])
    assert n.shape.as_list() == [3, None, None] and n.ragged_rank == 2
    assert n.values.to_list() == [[1, 2], [3], [4]] and _vals(n.flat_values) == [1, 2, 3, 4]
    assert [_vals(s) for s in n.nested_row_splits] == [[0, 2, 3, 3], [0, 2, 3, 4]]
    assert _vals(n.to_tensor()) == [[[1, 2], [3, 0]], [[4, 0], [0, 0]], [[0, 0], [0, 0]]]
    assert n[0].to_list() == [[1, 2], [3]]
    assert n.merge_dims(0, 1).to_list() == [[1, 2], [3], [4]]
    assert _vals(n.merge_dims(0, -1)) == [1, 2, 3, 4]
    assert ragged.constant([[[1, 2], [3]], [[4]]]).merge_dims(1, 2).to_list() == [[1, 2, 3],
                                                                                  [4]]
    i = ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1)
    assert i.shape.as_list() == [2, None, 2]
    assert repr(i) == "<gt.RaggedTensor [[[1, 2]], [[3, 4],\n            [5, 6]]]>"
    e = ragged.constant([[], []])
    assert e.dtype == gt.float32 and e.to_list() == [[], []]
    assert repr(ragged.constant([[1.5], [2.0, 3.0]])) == "<gt.RaggedTensor [[1.5], [2.0, 3.0]]>"
    assert repr(ragged.constant([["a", "bc"], ["d"]])) == \
        "<gt.RaggedTensor [[b'a', b'bc'], [b'd']]>"
    assert repr(ragged.constant([list(range(30)), [1]])) == (
        "<gt.RaggedTensor [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, "
        "18, 19, 20,\n  21, 22, 23, 24, 25, 26, 27, 28, 29]                                   "
        "   ,\n [1]]>")
    assert _vals(ragged.constant([["a"], ["b", "c"]]).to_tensor()) == [[b"a", b""],
                                                                       [b"b", b"c"]]


# --- StringLookup -----------------------------------------------------------------------------

_VOCAB = ["a", "b", "c", "d"]


def test_string_lookup_int_mode():
    layer = StringLookup(vocabulary=_VOCAB)
    out = layer(gt.constant([["a", "c", "d"], ["d", "z", "b"]]))
    assert out.dtype == gt.int64 and _vals(out) == [[1, 3, 4], [4, 0, 2]]
    assert layer.get_vocabulary() == ["[UNK]", "a", "b", "c", "d"]
    assert isinstance(layer.get_vocabulary()[1], np.str_)
    assert layer.get_vocabulary(include_special_tokens=False) == _VOCAB
    assert layer.vocabulary_size() == 5
    assert _vals(layer(np.array(["a", "q"]))) == [1, 0]
    assert _vals(layer(["a", "q"])) == [1, 0]
    assert int(layer(gt.constant("b"))) == 2
    assert layer(ragged.constant([["a", "b"], ["zz"]])).to_list() == [[1, 2], [0]]
    cfg = layer.get_config()
    assert {k: cfg[k] for k in ("invert", "max_tokens", "num_oov_indices", "oov_token",
                                "mask_token", "output_mode", "sparse", "pad_to_max_tokens",
                                "idf_weights", "vocabulary", "vocabulary_size", "oov_method",
                                "salt", "encoding")} == {
        "invert": False, "max_tokens": None, "num_oov_indices": 1, "oov_token": "[UNK]",
        "mask_token": None, "output_mode": "int", "sparse": False, "pad_to_max_tokens": False,
        "idf_weights": None, "vocabulary": _VOCAB, "vocabulary_size": 5,
        "oov_method": "floormod", "salt": None, "encoding": "utf-8"}
    assert StringLookup.from_config(cfg).get_vocabulary() == ["[UNK]"] + _VOCAB


def test_string_lookup_special_tokens():
    masked = StringLookup(vocabulary=_VOCAB, mask_token="")
    assert _vals(masked(gt.constant(["", "a", "x"]))) == [0, 2, 1]
    assert masked.get_vocabulary() == ["", "[UNK]"] + _VOCAB
    two = StringLookup(vocabulary=_VOCAB, num_oov_indices=2)
    assert _vals(two(gt.constant(["a", "x", "y", "zz", "q"]))) == [2, 0, 1, 0, 1]
    none = StringLookup(vocabulary=_VOCAB, num_oov_indices=0)
    assert _vals(none(gt.constant(["a", "d"]))) == [0, 3]
    with pytest.raises(InvalidArgumentError, match="found OOV values"):
        none(gt.constant(["a", "x"]))
    assert StringLookup(vocabulary=["[UNK]", "a"]).get_vocabulary() == ["[UNK]", "a"]
    assert StringLookup(vocabulary=["a", "[UNK]"]).get_vocabulary() == ["[UNK]", "a", "[UNK]"]
    assert StringLookup(vocabulary=[b"a", b"b"]).get_vocabulary() == ["[UNK]", "a", "b"]
    assert StringLookup(vocabulary=gt.constant(["a", "b"])).get_vocabulary() == \
        ["[UNK]", "a", "b"]
    assert _vals(StringLookup(vocabulary=["é", "ß"])(gt.constant(["ß"]))) == [2]
    with pytest.raises(ValueError, match="repeated term"):
        StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="Cannot set an empty vocabulary"):
        StringLookup(vocabulary=[])
    with pytest.raises(ValueError, match="reserved OOV token"):
        StringLookup(vocabulary=["a", "[UNK]"], invert=True)
    with pytest.raises(ValueError, match="reserved mask token"):
        StringLookup(vocabulary=["a", ""], mask_token="")
    with pytest.raises(ValueError, match="vocabulary size is 4; `max_tokens` is 3"):
        StringLookup(vocabulary=["a", "b", "c"], max_tokens=3)
    with pytest.raises(RuntimeError):
        StringLookup()(gt.constant(["a"]))
    with pytest.raises(RuntimeError, match="set the layer's vocabulary"):
        StringLookup(output_mode="multi_hot")(gt.constant(["a"]))
    with pytest.raises(ValueError, match="Cannot adapt layer"):
        StringLookup(vocabulary=_VOCAB).adapt(["a"])
    with pytest.raises(TypeError):
        StringLookup(vocabulary=_VOCAB)(gt.constant([1]))


def test_string_lookup_encodings():
    data = gt.constant([["a", "c", "d"], ["d", "z", "b"]])
    oh = StringLookup(vocabulary=_VOCAB, output_mode="one_hot")(gt.constant(["a", "b", "z"]))
    assert oh.dtype == gt.int64 and _vals(oh) == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0],
                                                  [1, 0, 0, 0, 0]]
    assert _vals(StringLookup(vocabulary=_VOCAB, output_mode="one_hot")(
        gt.constant([["a"], ["b"]]))) == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]
    assert _vals(StringLookup(vocabulary=_VOCAB, output_mode="multi_hot")(data)) == \
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]]
    assert _vals(StringLookup(vocabulary=_VOCAB, output_mode="count")(
        gt.constant([["a", "a", "z"]]))) == [[1, 2, 0, 0, 0]]
    assert _vals(StringLookup(vocabulary=_VOCAB, output_mode="count", max_tokens=8,
                              pad_to_max_tokens=True)(gt.constant([["a", "a", "z"]]))) == \
        [[1, 2, 0, 0, 0, 0, 0, 0]]
    assert _vals(StringLookup(vocabulary=_VOCAB, output_mode="multi_hot", mask_token="")(
        gt.constant([["a", "", "z"]]))) == [[1, 1, 0, 0, 0]]
    tf_idf = StringLookup(vocabulary=_VOCAB, output_mode="tf_idf",
                          idf_weights=[0.25, 0.75, 0.6, 0.4])(
        gt.constant([["a", "a", "c"], ["b", "z", "z"]]))
    assert tf_idf.dtype == gt.float32
    np.testing.assert_allclose(tf_idf.numpy(), [[0, 0.5, 0, 0.6, 0], [1.0, 0, 0.75, 0, 0]],
                               rtol=1e-6)
    special = StringLookup(vocabulary=["[UNK]"] + _VOCAB, output_mode="tf_idf",
                           idf_weights=[0.9, 0.25, 0.75, 0.6, 0.4])(gt.constant([["a", "a",
                                                                                  "z"]]))
    np.testing.assert_allclose(special.numpy(), [[0.9, 0.5, 0, 0, 0]], rtol=1e-6)


def test_string_lookup_invert():
    inv = StringLookup(vocabulary=_VOCAB, invert=True)
    out = inv(gt.constant([[1, 3, 4], [4, 0, 2]]))
    assert out.dtype == gt_string and _vals(out) == [_b("a", "c", "d"), _b("d", "[UNK]", "b")]
    assert _vals(inv(gt.constant([7, -1, 5]))) == _b("[UNK]", "[UNK]", "[UNK]")
    assert _vals(inv(gt.constant([1, 2], gt.int64))) == _b("a", "b")
    assert inv.get_vocabulary() == ["[UNK]"] + _VOCAB and inv.get_config()["invert"] is True
    assert _vals(StringLookup(vocabulary=_VOCAB, invert=True, mask_token="[M]")(
        gt.constant([0, 1, 2]))) == _b("[M]", "[UNK]", "a")
    assert inv(ragged.constant([[1, 2], [3]])).to_list() == [_b("a", "b"), [b"c"]]
    assert _vals(StringLookup(vocabulary=_VOCAB, invert=True, oov_token="?")(
        gt.constant([9]))) == [b"?"]


def test_string_lookup_adapt():
    layer = StringLookup()
    layer.adapt(["a", "b", "b", "c", "c", "c", "e", "d", "d", "e", "d", "d"])
    assert layer.get_vocabulary() == ["[UNK]", "d", "c", "e", "b", "a"]   # ties: larger first
    small = StringLookup(max_tokens=3)
    small.adapt(gt.constant([["x", "y"], ["y", "z"], ["w", "w"]]))
    assert small.get_vocabulary() == ["[UNK]", "y", "w"]
    tfidf = StringLookup(output_mode="tf_idf")
    tfidf.adapt(gt.constant([["a", "b", "a"], ["b", "c", "c"], ["d", "a", "a"]]))
    assert tfidf.get_vocabulary() == ["[UNK]", "a", "c", "b", "d"]
    np.testing.assert_allclose(tfidf.idf_weights.numpy(),
                               [0.804719, 0.6931472, 0.91629076, 0.6931472, 0.91629076],
                               rtol=1e-6)
    np.testing.assert_allclose(tfidf(gt.constant([["a", "b", "z"], ["c", "c", "c"]])).numpy(),
                               [[0.804719, 0.6931472, 0, 0.6931472, 0],
                                [0, 0, 2.7488723, 0, 0]], rtol=1e-6)
    one_d = StringLookup(output_mode="tf_idf")
    one_d.adapt(["a", "b", "a", "c"])
    np.testing.assert_allclose(one_d(gt.constant(["a", "b"])).numpy(),
                               [0, 0.84729785, 0, 1.0986123], rtol=1e-6)
    ds = gt.data.Dataset.from_tensor_slices(gt.constant(["a", "", "b", "a", "[UNK]"])).batch(2)
    masked = StringLookup(mask_token="", num_oov_indices=2)
    masked.adapt(ds)
    assert masked.get_vocabulary() == ["", "[UNK]", "[UNK]", "a", "b"]
    assert _vals(masked(gt.constant(["a", "", "zz", "b"]))) == [3, 0, 1, 4]
    cfg = masked.get_config()
    assert cfg["vocabulary"] is None and cfg["vocabulary_size"] == 5
    fresh = StringLookup()
    fresh.set_vocabulary(["q", "r"])
    assert fresh.get_vocabulary() == ["[UNK]", "q", "r"]


def test_string_lookup_vocabulary_file(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("x\ny\nz\n")
    layer = StringLookup(vocabulary=str(path))
    assert _vals(layer(gt.constant(["y", "q"]))) == [2, 0]
    assert layer.get_vocabulary() == ["[UNK]", "x", "y", "z"]
    assert layer.get_config()["vocabulary"] is None


# --- TextVectorization ------------------------------------------------------------------------

_REVIEWS = [
    "This movie was GREAT! I loved it.<br /><br />The acting was superb.",
    "Terrible film... the plot was boring, the acting was worse!",
    "An okay movie; not great, not terrible. 7/10",
    "I've seen better. The director's cut is long-winded & dull.",
    "GREAT great great!!! Best movie of the year (2019).",
    "boring boring boring",
]


def custom_standardization(input_data):
    lowercase = strings.lower(input_data)
    stripped_html = strings.regex_replace(lowercase, "<br />", " ")
    return strings.regex_replace(stripped_html, "[%s]" % re.escape(pystring.punctuation), "")


def test_text_vectorization_as_the_text_classification_tutorial():
    layer = TextVectorization(standardize=custom_standardization, max_tokens=20,
                              output_mode="int", output_sequence_length=12)
    layer.adapt(_REVIEWS)
    assert layer.get_vocabulary() == [
        "", "[UNK]", "the", "great", "was", "boring", "movie", "terrible", "not", "acting",
        "year", "worse", "this", "superb", "seen", "plot", "okay", "of", "loved",
        "longwinded"]
    assert layer.vocabulary_size() == 20
    out = layer(gt.constant(_REVIEWS[:3]))
    assert out.dtype == gt.int64 and _vals(out) == [
        [12, 6, 4, 3, 1, 18, 1, 2, 9, 4, 13, 0],
        [7, 1, 2, 15, 4, 5, 2, 9, 4, 11, 0, 0],
        [1, 16, 6, 8, 3, 8, 7, 1, 0, 0, 0, 0]]
    assert _vals(layer(gt.expand_dims(gt.constant(_REVIEWS[:2]), -1))) == _vals(out)[:2]
    assert _vals(layer(gt.constant("great movie"))) == [3, 6] + [0] * 10
    assert _vals(layer(np.array(["great movie", "the the"])))[1] == [2, 2] + [0] * 10
    assert _vals(layer(["great movie"])) == [[3, 6] + [0] * 10]
    cfg = layer.get_config()
    assert cfg["standardize"] is custom_standardization and cfg["vocabulary_size"] == 20
    assert cfg["max_tokens"] == 20 and cfg["output_sequence_length"] == 12


def test_text_vectorization_default_pipeline_and_dataset_adapt():
    layer = TextVectorization()
    layer.adapt(gt.data.Dataset.from_tensor_slices(gt.constant(_REVIEWS)).batch(2))
    vocab = layer.get_vocabulary()
    assert len(vocab) == 34 and vocab[:8] == ["", "[UNK]", "the", "great", "was", "boring",
                                              "movie", "terrible"]
    assert vocab[-6:] == ["br", "better", "best", "an", "710", "2019"]
    assert _vals(layer(gt.constant(["The GREAT movie, was (boring)!", ""]))) == \
        [[2, 3, 6, 4, 5], [0, 0, 0, 0, 0]]
    cfg = layer.get_config()
    assert {k: cfg[k] for k in ("max_tokens", "standardize", "split", "ngrams", "output_mode",
                                "output_sequence_length", "pad_to_max_tokens", "sparse",
                                "ragged", "vocabulary", "idf_weights", "encoding",
                                "vocabulary_size")} == {
        "max_tokens": None, "standardize": "lower_and_strip_punctuation",
        "split": "whitespace", "ngrams": None, "output_mode": "int",
        "output_sequence_length": None, "pad_to_max_tokens": False, "sparse": False,
        "ragged": False, "vocabulary": None, "idf_weights": None, "encoding": "utf-8",
        "vocabulary_size": 34}
    steps = TextVectorization()
    steps.adapt(gt.data.Dataset.from_tensor_slices(gt.constant(["x y", "z", "w"])).batch(1),
                steps=2)
    assert steps.get_vocabulary() == ["", "[UNK]", "z", "y", "x"]
    two_d = TextVectorization()
    two_d.adapt(gt.constant([["x y"], ["y z"]]))
    assert two_d.get_vocabulary() == ["", "[UNK]", "y", "z", "x"]


def test_text_vectorization_encoded_modes():
    top = ["[UNK]", "the", "great", "was", "boring", "movie", "terrible", "not", "acting",
           "year"]
    batch = gt.constant(["great great movie boring xyz", "the the"])
    expected = {"multi_hot": [[1, 0, 1, 0, 1, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]],
                "count": [[1, 0, 2, 0, 1, 1, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0, 0, 0, 0, 0]]}
    for mode, want in expected.items():
        layer = TextVectorization(max_tokens=10, output_mode=mode)
        layer.adapt(_REVIEWS)
        assert layer.get_vocabulary() == top
        out = layer(batch)
        assert out.dtype == gt.int64 and _vals(out) == want
    tfidf = TextVectorization(max_tokens=10, output_mode="tf_idf")
    tfidf.adapt(_REVIEWS)
    np.testing.assert_allclose(tfidf(batch).numpy(), [
        [1.0875641, 0, 1.8325815, 0, 1.0986123, 0.91629076, 0, 0, 0, 0],
        [0, 1.5769147, 0, 0, 0, 0, 0, 0, 0, 0]], rtol=1e-6)
    one_hot = TextVectorization(max_tokens=10, output_mode="one_hot")
    one_hot.adapt(_REVIEWS)
    rows = one_hot(batch)
    assert isinstance(rows, ragged.RaggedTensor)
    assert [np.argmax(r, -1).tolist() for r in rows.to_list()] == [[2, 2, 5, 4, 0], [1, 1]]
    padded = TextVectorization(max_tokens=12, output_mode="multi_hot", pad_to_max_tokens=True)
    padded.adapt(_REVIEWS[:2])
    assert padded.get_vocabulary() == ["[UNK]", "was", "the", "acting", "worse", "this",
                                       "terrible", "superb", "plot", "movie", "loved", "itbr"]
    assert _vals(padded(gt.constant(["the acting was"]))) == [[0, 1, 1, 1] + [0] * 8]
    given = TextVectorization(output_mode="tf_idf", vocabulary=["a", "b"],
                              idf_weights=[0.5, 0.25])
    np.testing.assert_allclose(given(gt.constant(["a a b c"])).numpy(), [[0.375, 1.0, 0.25]])


def test_text_vectorization_ngrams_characters_and_no_split():
    ng = TextVectorization(max_tokens=15, ngrams=2, output_sequence_length=8)
    ng.adapt(_REVIEWS)
    assert ng.get_vocabulary() == ["", "[UNK]", "the", "great", "was", "boring", "movie",
                                   "the acting", "terrible", "not", "great great",
                                   "boring boring", "acting was", "acting", "year 2019"]
    assert _vals(ng(gt.constant(["great movie was great"]))) == [[3, 6, 4, 3, 1, 1, 1, 0]]
    ng13 = TextVectorization(ngrams=(1, 3), standardize="lower", output_mode="count",
                             max_tokens=12)
    ng13.adapt(["a b c a b c", "a b d"])
    assert ng13.get_vocabulary() == ["[UNK]", "b", "a", "c", "a b c", "d", "c a b", "b c a",
                                     "a b d"]
    assert _vals(ng13(gt.constant(["a b c"]))) == [[0, 1, 1, 1, 1, 0, 0, 0, 0]]
    chars = TextVectorization(split="character", standardize=None, output_sequence_length=6)
    chars.adapt(["abc", "aab", "héllo"])
    assert chars.get_vocabulary() == ["", "[UNK]", "a", "l", "b", "é", "o", "h", "c"]
    assert _vals(chars(gt.constant(["hab", "abcdefgh"]))) == [[7, 2, 4, 0, 0, 0],
                                                              [2, 4, 8, 1, 1, 1]]
    whole = TextVectorization(split=None, standardize="strip_punctuation")
    whole.adapt(["a b!", "c", "a b"])
    assert whole.get_vocabulary() == ["", "[UNK]", "a b", "c"]
    assert _vals(whole(gt.constant(["a b", "zz", "c!"]))) == [2, 1, 3]
    assert _vals(whole(gt.constant([["a b"], ["c"]]))) == [[2], [3]]
    ties = TextVectorization(max_tokens=5)
    ties.adapt(["b a c", "c b", "d"])
    assert ties.get_vocabulary() == ["", "[UNK]", "c", "b", "d"]


def test_text_vectorization_given_vocabulary_and_config_round_trip():
    layer = TextVectorization(vocabulary=["earth", "wind", "and", "fire"],
                              output_sequence_length=4)
    assert _vals(layer(gt.constant([["earth wind and fire"], ["fire and earth"]]))) == \
        [[2, 3, 4, 5], [5, 4, 2, 0]]
    assert layer.get_vocabulary() == ["", "[UNK]", "earth", "wind", "and", "fire"]
    cfg = layer.get_config()
    assert cfg["vocabulary"] == ["earth", "wind", "and", "fire"] and \
        cfg["vocabulary_size"] == 6
    again = TextVectorization.from_config(cfg)
    assert _vals(again(gt.constant(["wind fire x"]))) == [[3, 5, 1, 0]]
    assert layer.compute_output_shape((None,)) == (None, 4)
    short = TextVectorization(vocabulary=["a", "b"])
    assert _vals(short(gt.constant(["a b a", "b"]))) == [[2, 3, 2], [3, 0, 0]]
    cut = TextVectorization(vocabulary=["a", "b"], output_sequence_length=2)
    assert _vals(cut(gt.constant(["a b a b", "b"]))) == [[2, 3], [3, 0]]
    rag = TextVectorization(vocabulary=["a", "b"], ragged=True)
    assert rag(gt.constant(["a b a", "b"])).to_list() == [[2, 3, 2], [3]]
    comma = TextVectorization(split=lambda x: strings.split(x, sep=","), vocabulary=["a", "b"])
    assert _vals(comma(gt.constant(["a,b,c"]))) == [[1]]
    with pytest.raises(ValueError, match="the input rank must be 1 or the last shape "
                                         "dimension must be 1"):
        layer(gt.constant([["a", "b"]]))
    with pytest.raises(ValueError, match="Unknown value for `output_mode`"):
        TextVectorization(output_mode="foo")
    with pytest.raises(ValueError, match="must not be set if `output_mode` is not 'int'"):
        TextVectorization(output_mode="count", output_sequence_length=3)


def test_models_fed_raw_strings_train_and_predict():
    """A Sequential model whose first layer is TextVectorization, with constant weights:
    the prediction is the mean of the embedding rows of the token ids, times the dense
    kernel."""
    vec = TextVectorization(vocabulary=["good", "bad"], output_sequence_length=3)
    table = np.arange(8, dtype=np.float32).reshape(4, 2) / 10
    model = gt.keras.Sequential([
        vec, gt.keras.layers.Embedding(4, 2, embeddings_initializer=gt.keras.initializers
                                       .Constant(table)),
        gt.keras.layers.GlobalAveragePooling1D(),
        gt.keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")])
    y = model(gt.constant(["good bad", "bad x bad"]))
    want = [table[[2, 3, 0]].mean(0).sum(), table[[3, 1, 3]].mean(0).sum()]
    np.testing.assert_allclose(y.numpy()[:, 0], want, rtol=1e-6)
    model.compile(optimizer="adam", loss="mse")
    x = np.array(["good good", "bad", "good", "bad bad"] * 4)
    t = np.array([1.0, 0.0, 1.0, 0.0] * 4, np.float32)
    hist = model.fit(x, t, epochs=3, batch_size=4, verbose=0)
    assert len(hist.history["loss"]) == 3 and hist.history["loss"][-1] < hist.history["loss"][0]
    ds = gt.data.Dataset.from_tensor_slices((gt.constant(x), gt.constant(t))).batch(4)
    assert np.isfinite(model.evaluate(ds, verbose=0))
    assert model.predict(gt.constant(["good"]), verbose=0).shape == (1, 1)


def test_text_generation_lookups_round_trip():
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n"
    vocab = sorted(set(text))
    chars = strings.unicode_split(["abcdefg", "xyz"], input_encoding="UTF-8")
    ids_from_chars = StringLookup(vocabulary=list(vocab), mask_token=None)
    ids = ids_from_chars(chars)
    assert isinstance(ids, ragged.RaggedTensor) and ids.dtype == gt.int64
    chars_from_ids = StringLookup(vocabulary=ids_from_chars.get_vocabulary(), invert=True,
                                  mask_token=None)
    back = strings.reduce_join(chars_from_ids(ids), axis=-1)
    known = set(vocab)
    assert _vals(back) == ["".join(c if c in known else "[UNK]" for c in w).encode()
                           for w in ("abcdefg", "xyz")]
    all_ids = ids_from_chars(strings.unicode_split(text, "UTF-8"))
    assert strings.reduce_join(chars_from_ids(all_ids)).numpy().decode() == text
    assert chars_from_ids(all_ids[0]).numpy().decode("utf-8") == "F"
    dense = ids_from_chars(strings.unicode_split(gt.constant(["ROMEO:", "ab"]), "UTF-8"))
    assert dense.to_tensor().shape == (2, 6)
    result = strings.join([gt.constant(["RO"]), gt.constant(["ME"]), gt.constant(["O"])])
    assert result[0].numpy().decode("utf-8") == "ROMEO"


def test_hashing_strings_as_keras():
    out = Hashing(num_bins=7)(gt.constant([["a"], ["bcd"], [""], ["the quick brown fox"]]))
    assert out.dtype == gt.int64 and _vals(out) == [[5], [5], [6], [2]]
    assert _vals(Hashing(num_bins=7, mask_value="")(gt.constant(["a", "", "zz"]))) == [4, 0, 5]
    assert _vals(Hashing(num_bins=5)(["x", "y"])) == [0, 0]
    np.testing.assert_array_equal(Hashing(num_bins=4, output_mode="one_hot")(
        gt.constant(["x", "y"])).numpy(), [[0, 0, 1, 0], [0, 1, 0, 0]])
    assert _vals(Hashing(num_bins=5)(gt.constant([1, 22, 333]))) == [4, 0, 2]


def test_string_layers_put_indices_on_the_model_device():
    with gt.device("strict:0"):
        vec = TextVectorization(vocabulary=["a", "b"], output_sequence_length=4)
        out = vec(gt.constant(["a b", "b q"]))
        assert out.device == "strict:0" and _vals(out) == [[2, 3, 0, 0], [3, 1, 0, 0]]
        assert StringLookup(vocabulary=["a"])(["a", "z"]).device == "strict:0"
        assert strings.length(["ab"]).device == "strict:0"
        inv = StringLookup(vocabulary=["a", "b"], invert=True)(gt.constant([1, 2]))
        assert inv.device == "cpu:0" and _vals(inv) == _b("a", "b")
        model = gt.keras.Sequential([vec, gt.keras.layers.Embedding(5, 2),
                                     gt.keras.layers.GlobalAveragePooling1D(),
                                     gt.keras.layers.Dense(1)])
        assert model(gt.constant(["a b"])).device == "strict:0"
        assert all(w.device == "strict:0" for w in model.weights)
        model.compile(optimizer="adam", loss="mse")
        hist = model.fit(np.array(["a b", "b q", "a", "b"]),
                         np.array([1.0, 0.0, 1.0, 0.0], np.float32), epochs=1, verbose=0)
        assert np.isfinite(hist.history["loss"][0])


def test_string_elements_ops_and_fills_as_tensorflow():
    s = gt.constant(["a", "b", "c"])
    assert gt.gather(s, 1).numpy() == b"b" and s[2].numpy() == b"c"
    assert [t.numpy() for t in gt.unstack(s)] == [b"a", b"b", b"c"]
    np.testing.assert_array_equal(gt.where([True, False, True], s, "z").numpy(),
                                  np.array([b"a", b"z", b"c"], dtype=object))
    np.testing.assert_array_equal(gt.equal(s, "a").numpy(), [True, False, False])
    np.testing.assert_array_equal((s + "x").numpy(), np.array([b"ax", b"bx", b"cx"], object))
    with pytest.raises(TypeError, match="cannot convert 1 to a tensor of dtype string"):
        s + 1
    assert gt.zeros_like(s).numpy().tolist() == [b"", b"", b""]
    assert gt.zeros([2], gt.string).numpy().tolist() == [b"", b""]
    assert gt.pad(s, [[1, 0]]).numpy().tolist() == [b"", b"a", b"b", b"c"]
    assert gt.pad(s, [[0, 1]], constant_values="p").numpy().tolist() == [b"a", b"b", b"c", b"p"]
    with pytest.raises(TypeError, match="ones_like: there is no one of dtype string"):
        gt.ones_like(s)


def test_string_datasets_batch_and_pad():
    ds = gt.data.Dataset.from_tensor_slices((np.array(["hello world", "a b c"]),
                                             np.array([0, 1]))).batch(2)
    (x, y), = list(ds)
    assert x.dtype == gt.string and x.numpy().tolist() == [b"hello world", b"a b c"]
    ragged = gt.data.Dataset.from_generator(
        lambda: iter([np.array(["a"]), np.array(["b", "c"])]),
        output_signature=gt.TensorSpec([None], gt.string)).padded_batch(2)
    assert next(iter(ragged)).numpy().tolist() == [[b"a", b""], [b"b", b"c"]]


def test_text_classification_flow_matches_tensorflow(tmp_path):
    """The basic text-classification tutorial's pipeline: TextVectorization with a custom
    standardization adapted on a dataset, a model trained on the vectorized dataset, then
    exported with the layer in front (TensorFlow's vocabulary, ids and predictions)."""
    keras = gt.keras
    texts = np.array(["This movie was GREAT!", "terrible <br /> acting, bad plot",
                      "great great fun", "bad bad bad movie", "an ok film", "loved it, great"])
    labels = np.array([1, 0, 1, 0, 1, 1])

    def standardize(data):
        lowered = gt.strings.lower(data)
        no_html = gt.strings.regex_replace(lowered, "<br />", " ")
        return gt.strings.regex_replace(no_html, "[%s]" % re.escape(pystring.punctuation), "")

    vl = keras.layers.TextVectorization(standardize=standardize, max_tokens=30,
                                        output_mode="int", output_sequence_length=6)
    ds = gt.data.Dataset.from_tensor_slices((texts, labels)).batch(2)
    vl.adapt(ds.map(lambda x, y: x))
    assert vl.get_vocabulary()[:8] == ["", "[UNK]", "great", "bad", "movie", "was", "this",
                                       "terrible"]
    assert vl(gt.constant(["great movie", "bad"])).numpy().tolist() == [[2, 4, 0, 0, 0, 0],
                                                                        [3, 0, 0, 0, 0, 0]]
    model = keras.Sequential([keras.layers.Embedding(30, 4, embeddings_initializer="ones"),
                              keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(1, kernel_initializer="ones")])
    model.compile(loss=keras.losses.BinaryCrossentropy(from_logits=True), optimizer="adam",
                  metrics=["accuracy"])
    history = model.fit(ds.map(lambda x, y: (vl(x), y)), epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], 1.3503, atol=1e-4)
    export = keras.Sequential([vl, model, keras.layers.Activation("sigmoid")])
    np.testing.assert_allclose(export.predict(gt.constant(["great fun", "bad acting"]),
                                              verbose=0), [[0.9813], [0.9811]], atol=5e-4)
    writer = gt.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert gt.summary.text("t", gt.constant(["hello"]), step=0)
