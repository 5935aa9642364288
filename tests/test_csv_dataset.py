"""gt.data.experimental.CsvDataset and make_csv_dataset against TensorFlow 2.21.

Every expected value, dtype and order below was produced by TF 2.21 on the same files
(``tf.data.experimental`` with shuffle=False where an order is checked)."""
import collections
import gzip
import zlib

import numpy as np
import pytest

import gradtape as gt
from gradtape import data as gt_data
from gradtape.errors import InvalidArgumentError, NotFoundError

CsvDataset = gt.data.experimental.CsvDataset
make_csv_dataset = gt.data.experimental.make_csv_dataset

TITANIC = """survived,sex,age,n_siblings_spouses,parch,fare,class,deck,embark_town,alone
0,male,22.0,1,0,7.25,Third,unknown,Southampton,n
1,female,38.0,1,0,71.2833,First,C,Cherbourg,n
1,female,26.0,0,0,7.925,Third,unknown,Southampton,y
1,female,35.0,1,0,53.1,First,C,Southampton,n
0,male,28.0,0,0,8.4583,Third,unknown,Queenstown,y
0,male,2.0,3,1,21.075,Third,unknown,Southampton,n
1,female,27.0,0,2,11.1333,Third,unknown,Southampton,n
1,female,14.0,1,0,30.0708,Second,unknown,Cherbourg,n
1,female,4.0,1,1,16.7,Third,G,Southampton,n
0,male,20.0,0,0,8.05,Third,unknown,Southampton,y
0,male,39.0,1,5,31.275,Third,unknown,Southampton,n
0,female,14.0,0,0,7.8542,Third,unknown,Southampton,y
"""
TITANIC_FEATURES = ["sex", "age", "n_siblings_spouses", "parch", "fare", "class", "deck",
                    "embark_town", "alone"]
TITANIC_DTYPES = ["string", "float32", "int32", "int32", "float32", "string", "string",
                  "string", "string"]
SURVIVED = [0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0]
AGE = [22.0, 38.0, 26.0, 35.0, 28.0, 2.0, 27.0, 14.0, 4.0, 20.0, 39.0, 14.0]
FARE = [7.25, 71.2833, 7.925, 53.1, 8.4583, 21.075, 11.1333, 30.0708, 16.7, 8.05, 31.275,
        7.8542]
SEX = [b"male", b"female", b"female", b"female", b"male", b"male", b"female", b"female",
       b"female", b"male", b"male", b"female"]


def write(tmp_path, name, content, compression=None):
    data = content.encode("utf-8") if isinstance(content, str) else content
    if compression == "GZIP":
        data = gzip.compress(data)
    elif compression == "ZLIB":
        data = zlib.compress(data)
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def rows(ds):
    return [tuple(t.numpy() for t in e) for e in ds]


def columns(batches):
    """A list of batches (dicts of tensors) as {name: [values...]} (numpy lists)."""
    out = collections.OrderedDict()
    for b in batches:
        for k, v in b.items():
            out.setdefault(k, []).extend(v.numpy().tolist())
    return out


def read_error(ds):
    with pytest.raises(InvalidArgumentError) as info:
        for _ in ds:
            pass
    return str(info.value)


# --- CsvDataset -----------------------------------------------------------------------------

def test_exposed_only_under_experimental():
    assert not hasattr(gt.data, "CsvDataset") and not hasattr(gt.data, "make_csv_dataset")
    assert CsvDataset.__name__ == "CsvDataset"


def test_docstring_example_select_cols(tmp_path):
    p = write(tmp_path, "f.csv", "abcdefg,4.28E10,5.55E6,12\nhijklmn,-5.3E14,,2\n")
    ds = CsvDataset(p, [gt.float32, gt.constant([0.0], dtype=gt.float32), gt.int32],
                    select_cols=[1, 2, 3])
    assert isinstance(ds, gt.data.Dataset)
    assert ds.element_spec == (gt.TensorSpec((), gt.float32), gt.TensorSpec((), gt.float32),
                               gt.TensorSpec((), gt.int32))
    out = rows(ds)
    assert [[v.dtype for v in r] for r in out] == [[np.float32, np.float32, np.int32]] * 2
    np.testing.assert_array_equal(np.array(out, dtype=np.float64),
                                  np.array([[np.float32(4.28e10), 5.55e6, 12],
                                            [np.float32(-5.3e14), 0.0, 2]]))


def test_tutorial_python_value_defaults(tmp_path):
    p = write(tmp_path, "titanic.csv", TITANIC)
    titanic_types = [int(), str(), float(), int(), int(), float(), str(), str(), str(), str()]
    ds = CsvDataset(p, record_defaults=titanic_types, header=True)
    assert [s.dtype.name for s in ds.element_spec] == [
        "int32", "string", "float32", "int32", "int32", "float32"] + ["string"] * 4
    first = [x.numpy() for x in next(iter(ds))]
    assert first[:2] == [0, b"male"] and first[6:] == [b"Third", b"unknown", b"Southampton",
                                                       b"n"]
    assert first[2].dtype == np.float32 and first[2] == 22.0 and first[5] == np.float32(7.25)
    out = rows(ds)
    assert len(out) == 12 and [r[0] for r in out] == SURVIVED
    sel = rows(CsvDataset(p, [gt.float64, gt.string], header=True, select_cols=[2, 6]))
    assert [r[0] for r in sel] == AGE and sel[0][0].dtype == np.float64
    assert [r[1] for r in sel][:8] == [b"Third", b"First", b"Third", b"First", b"Third",
                                       b"Third", b"Third", b"Second"]


def test_quotes_line_breaks_and_delimiters(tmp_path):
    p = write(tmp_path, "q.csv", b'1,"a\r\nb"\r\n2,"x""y"\r3,z')
    assert rows(CsvDataset(p, [gt.int32, gt.string])) == [(1, b"a\r\nb"), (2, b'x"y'),
                                                         (3, b"z")]
    p = write(tmp_path, "nq.csv", b'1,a"b\n2,"c"\n')
    assert rows(CsvDataset(p, [gt.int32, gt.string], use_quote_delim=False)) == [
        (1, b'a"b'), (2, b'"c"')]
    p = write(tmp_path, "semi.csv", "1;2\n")
    assert rows(CsvDataset(p, [gt.int32, gt.int32], field_delim=";")) == [(1, 2)]
    p = write(tmp_path, "u.csv", 'é,"ü,x"\n')
    assert rows(CsvDataset(p, [gt.string, gt.string])) == [("é".encode(), "ü,x".encode())]
    p = write(tmp_path, "sp.csv", " 1 , 2.5 ,  x \n")
    out = rows(CsvDataset(p, [gt.int32, gt.float32, gt.string]))
    assert out == [(1, 2.5, b"  x ")]


def test_defaults_na_value_and_empty_fields(tmp_path):
    p = write(tmp_path, "a.csv", "1\n2\n\n3")
    assert rows(CsvDataset(p, [gt.constant(7)])) == [(1,), (2,), (7,), (3,)]
    p = write(tmp_path, "b.csv", "1,\n2,")
    assert rows(CsvDataset(p, [gt.int32, gt.constant(9)])) == [(1, 9), (2, 9)]
    p = write(tmp_path, "c.csv", "1,NA\nNA,2")
    assert rows(CsvDataset(p, [gt.constant(-1), gt.constant(9)], na_value="NA")) == [
        (1, 9), (-1, 2)]
    p = write(tmp_path, "d.csv", ",,,\n")
    out = rows(CsvDataset(p, [0, 0.5, "x", [3]]))
    assert out == [(0, 0.5, b"x", 3)]
    assert [v.dtype for v in out[0][:2]] == [np.int32, np.float32]
    p = write(tmp_path, "e.csv", "1,2\n")
    out = rows(CsvDataset(p, ["int32", "float64"]))
    assert out == [(1, 2.0)] and out[0][1].dtype == np.float64
    assert rows(CsvDataset(write(tmp_path, "empty.csv", ""), [gt.int32])) == []


def test_exclude_cols(tmp_path):
    p = write(tmp_path, "a.csv", "1,2,3,4\n5,6,7,8\n")
    assert rows(CsvDataset(p, [gt.int32, gt.int32], exclude_cols=[0, 2])) == [(2, 4), (6, 8)]


def test_files_header_and_compression(tmp_path):
    a, b = write(tmp_path, "a.csv", "1\n2\n"), write(tmp_path, "b.csv", "3\n")
    assert rows(CsvDataset([a, b], [gt.int32])) == [(1,), (2,), (3,)]
    assert rows(CsvDataset(gt.constant([a, b]), [gt.int32])) == [(1,), (2,), (3,)]
    a, b = write(tmp_path, "ha.csv", "h\n1\n2\n"), write(tmp_path, "hb.csv", "h\n3\n")
    assert rows(CsvDataset([a, b], [gt.int32], header=True)) == [(1,), (2,), (3,)]
    p = write(tmp_path, "m.csv", 'x,"y\nz"\n1,2\n')      # a header record spanning lines
    assert rows(CsvDataset(p, [gt.int32, gt.int32], header=True)) == [(1, 2)]
    for comp in ("GZIP", "ZLIB"):
        p = write(tmp_path, "c" + comp, "h,s\n1,a\n2,b\n", comp)
        assert rows(CsvDataset(p, [gt.int32, gt.string], compression_type=comp,
                               header=True)) == [(1, b"a"), (2, b"b")]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8])
def test_records_across_read_chunks(tmp_path, monkeypatch, chunk):
    content = b'id,text\r\n1,"line1\nline2"\r\n2,"say ""hi"""\r\n3,plain\r\n4,\r\n'
    p = write(tmp_path, "ml.csv", content)
    monkeypatch.setattr(gt_data, "_CSV_CHUNK", chunk)
    out = rows(CsvDataset(p, [gt.int32, gt.constant("-")], header=True))
    assert out == [(1, b"line1\nline2"), (2, b'say "hi"'), (3, b"plain"), (4, b"-")]


# value parsing: (text, float32, float64, int32, int64) as TF 2.21 parses them; None: error
NUMBERS = [
    ("1e40", np.inf, 1e40, None, None), ("-1e40", -np.inf, -1e40, None, None),
    ("1e-50", 0.0, 1e-50, None, None), ("nan", np.nan, np.nan, None, None),
    ("-INF", -np.inf, -np.inf, None, None), ("Infinity", np.inf, np.inf, None, None),
    ("0x10", 16.0, 16.0, None, None), ("0X1p3", 8.0, 8.0, None, None),
    ("0x1.8p1", 3.0, 3.0, None, None), ("0x", None, None, None, None),
    (" 1.5 ", 1.5, 1.5, None, None), ("\t2", 2.0, 2.0, 2, 2), ("1_000", None, None, None, None),
    ("+3", 3.0, 3.0, 3, 3), ("1.", 1.0, 1.0, None, None), (".5", 0.5, 0.5, None, None),
    ("1e", None, None, None, None), ("00012", 12.0, 12.0, 12, 12),
    ("\u0661\u0662", None, None, None, None), ("3.4028236e38", np.inf, 3.4028236e38, None, None),
    ("2147483648", 2147483648.0, 2147483648.0, None, 2147483648),
    ("-2147483648", -2147483648.0, -2147483648.0, -2147483648, -2147483648),
    ("9223372036854775808", 9.223372036854776e18, 9.223372036854776e18, None, None),
    ("+-1", None, None, None, None), ("0b1", None, None, None, None),
]


@pytest.mark.parametrize("text,f32,f64,i32,i64", NUMBERS)
def test_number_parsing(tmp_path, text, f32, f64, i32, i64):
    p = write(tmp_path, "n.csv", text + "\n")
    for dtype, want in (("float32", f32), ("float64", f64), ("int32", i32), ("int64", i64)):
        ds = CsvDataset(p, [gt.as_dtype(dtype)])
        if want is None:
            assert "Field 0 in record is not a valid " in read_error(ds)
        else:
            (got,), = rows(ds)
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(got, np.asarray(want, dtype=dtype))


@pytest.mark.parametrize("content,defaults,kwargs,message", [
    ("a,4,5,12\nb,-5,,2\n", ["string", "float32", "float32", "int32"], {},
     "Field 2 is required but missing in record!"),
    ("1,2\n\n3,4\n", ["int32", "int32"], {}, "Field 0 is required but missing in record!"),
    ("1,NA\n", ["int32", "int32"], {"na_value": "NA"},
     "Field 1 is required but missing in record!"),
    ('"",1\n', ["string", "int32"], {}, "Field 0 is required but missing in record!"),
    ("1,2,3\n", ["int32", "int32"], {}, "Expect 2 fields but have more in record"),
    ("1\n", ["int32", "int32"], {}, "Expect 2 fields but have 1 in record"),
    ("1,2,3,4,9\n", ["int32", "int32"], {"exclude_cols": [0, 2]},
     "Expect 2 fields but have more in record"),
    ("1,2\n", ["int32", "int32"], {"select_cols": [1, 3]},
     "Expect 2 fields but have 1 in record"),
    ('1,"a"x,b\n2,c\n', ["int32", "string"], {},
     "Reached end of file without closing quoted field in record"),
    ('1,"a"x,"b"\n2,c\n', ["int32", "string"], {},
     "Quote inside a string has to be escaped by another quote"),
    ('1,a"b\n2,c\n', ["int32", "string"], {}, "Unquoted fields cannot have quotes inside"),
    ('1,"abc\n2,c\n', ["int32", "string"], {},
     "Reached end of file without closing quoted field in record"),
    ("", ["int32"], {"header": True}, "Can't read header of file"),
    ("9999999999,3000000000\n", ["int64", "int32"], {},
     "Field 1 in record is not a valid int32: 3000000000"),
    ("1e40,abc\n", ["float32", "float64"], {}, "Field 1 in record is not a valid double: abc"),
    ("1.0\n", ["int32"], {}, "Field 0 in record is not a valid int32: 1.0"),
    ("x,,y\n1,2,3\n", ["int32", "int32", "int32"], {},
     "Field 0 in record is not a valid int32: x"),
])
def test_read_errors(tmp_path, content, defaults, kwargs, message):
    p = write(tmp_path, "e.csv", content)
    ds = CsvDataset(p, [gt.as_dtype(d) for d in defaults], **kwargs)
    assert message in read_error(ds)


def test_rows_before_an_error_are_delivered(tmp_path):
    p = write(tmp_path, "e.csv", "1,2\nx,3\n")
    it = iter(CsvDataset(p, [gt.int32, gt.int32]))
    assert [t.numpy() for t in next(it)] == [1, 2]
    with pytest.raises(InvalidArgumentError, match="not a valid int32: x"):
        next(it)


def test_missing_file(tmp_path):
    with pytest.raises(NotFoundError, match="No such file or directory"):
        list(CsvDataset(str(tmp_path / "nope.csv"), [gt.string]))


@pytest.mark.parametrize("defaults,kwargs,error,message", [
    (["int32", "int32"], {"select_cols": [3, 1]}, InvalidArgumentError,
     "select_cols should be strictly increasing indices"),
    (["int32", "int32"], {"select_cols": [-1, 1]}, InvalidArgumentError,
     "select_cols should be non-negative indices"),
    (["int32", "int32"], {"select_cols": [1]}, InvalidArgumentError,
     "select_cols should match output size"),
    (["int32", "int32"], {"select_cols": [0, 1], "exclude_cols": [2]}, InvalidArgumentError,
     "Either select_cols or exclude_cols should be empty"),
    (["int32", "int32"], {"exclude_cols": [2, 1]}, InvalidArgumentError,
     "exclude_cols should be strictly increasing indices"),
    (["int32"], {"field_delim": "ab"}, InvalidArgumentError,
     "field_delim should be only 1 char"),
    (["string"], {"compression_type": "BAD"}, InvalidArgumentError,
     "Unsupported compression_type: BAD."),
    (["string"], {"buffer_size": 0}, InvalidArgumentError, "buffer_size should be positive"),
])
def test_construction_errors(tmp_path, defaults, kwargs, error, message):
    p = write(tmp_path, "a.csv", "1,2,3\n")
    with pytest.raises(error, match=message):
        CsvDataset(p, [gt.as_dtype(d) for d in defaults], **kwargs)


def test_record_default_errors(tmp_path):
    p = write(tmp_path, "a.csv", "1\n")
    with pytest.raises(ValueError, match="bool"):
        CsvDataset(p, [gt.bool])
    with pytest.raises(InvalidArgumentError, match="'output_types' of bool is not in the list"):
        CsvDataset(p, [gt.constant(True)])
    with pytest.raises(InvalidArgumentError, match="only be 1 default per field but field 0 "
                                                   "has 2"):
        CsvDataset(p, [gt.constant([1, 2])])
    with pytest.raises(InvalidArgumentError, match="at most rank 1"):
        CsvDataset(p, [gt.constant([[1]])])
    with pytest.raises(InvalidArgumentError, match="scalar or a vector"):
        CsvDataset([[p]], [gt.int32])
    with pytest.raises(TypeError, match="filenames must be strings"):
        CsvDataset(3, [gt.int32])


def test_strict_device(tmp_path):
    p = write(tmp_path, "s.csv", "a,b,c\n1,2.5,x\n3,,y\n5,6,z\n")
    with gt.device("strict:0"):
        defaults = [gt.constant([0]), gt.constant([1.5]), gt.constant([""])]
        out = [[t.numpy() for t in e] for e in CsvDataset(p, defaults, header=True)]
        assert out == [[1, 2.5, b"x"], [3, 1.5, b"y"], [5, 6.0, b"z"]]
        batches = list(make_csv_dataset(p, batch_size=2, label_name="c", num_epochs=1,
                                        shuffle=False))
        assert "strict" in str(batches[0][0]["a"].device)
        assert columns(b[0] for b in batches) == {"a": [1, 3, 5], "b": [2.5, 0.0, 6.0]}
        assert [x for b in batches for x in b[1].numpy().tolist()] == [b"x", b"y", b"z"]


# --- make_csv_dataset -----------------------------------------------------------------------

def check_titanic_batches(batches, sizes):
    assert [len(label.numpy()) for _, label in batches] == sizes
    for features, label in batches:
        assert type(features) is collections.OrderedDict
        assert list(features) == TITANIC_FEATURES
        assert [features[k].dtype.name for k in TITANIC_FEATURES] == TITANIC_DTYPES
        assert label.dtype == gt.int32


def test_tutorial_call_without_shuffle(tmp_path):
    p = write(tmp_path, "train.csv", TITANIC)
    ds = make_csv_dataset(p, batch_size=5, label_name="survived", num_epochs=1,
                          ignore_errors=True, shuffle=False)
    spec = ds.element_spec
    assert type(spec[0]) is collections.OrderedDict and list(spec[0]) == TITANIC_FEATURES
    assert spec[0]["age"] == gt.TensorSpec((None,), gt.float32)
    assert spec[1] == gt.TensorSpec((None,), gt.int32)
    batches = list(ds)
    check_titanic_batches(batches, [5, 5, 2])
    assert [x for _, lab in batches for x in lab.numpy().tolist()] == SURVIVED
    cols = columns(f for f, _ in batches)
    assert cols["sex"] == SEX
    np.testing.assert_array_equal(cols["age"], np.float32(AGE))
    np.testing.assert_array_equal(cols["fare"], np.float32(FARE))
    assert cols["parch"] == [0, 0, 0, 0, 0, 1, 2, 0, 1, 0, 5, 0]
    assert cols["deck"][:5] == [b"unknown", b"C", b"unknown", b"C", b"unknown"]


def test_tutorial_call_unchanged(tmp_path):
    titanic_file_path = write(tmp_path, "train.csv", TITANIC)
    titanic_csv_ds = gt.data.experimental.make_csv_dataset(
        titanic_file_path, batch_size=5, label_name='survived', num_epochs=1,
        ignore_errors=True)
    batches = list(titanic_csv_ds)
    check_titanic_batches(batches, [5, 5, 2])
    got = sorted(zip(columns(f for f, _ in batches)["fare"],
                     [x for _, lab in batches for x in lab.numpy().tolist()]))
    assert got == sorted(zip(np.float32(FARE).tolist(), SURVIVED))
    for batch, label in titanic_csv_ds.take(1):
        for key, value in batch.items():
            assert f"{key:20s}: {value}"


def test_shuffle_seed_is_reproducible(tmp_path):
    p = write(tmp_path, "train.csv", TITANIC)

    def order(seed):
        ds = make_csv_dataset(p, batch_size=4, num_epochs=2, shuffle_seed=seed,
                              select_columns=["fare"])
        return [x for b in ds for x in b["fare"].numpy().tolist()]

    a = order(7)
    assert a == order(7)
    assert sorted(a) == sorted(np.float32(FARE).tolist() * 2)
    assert sorted(a[:12]) == sorted(np.float32(FARE).tolist())      # one epoch, then the next
    assert a != order(8)


def test_endless_epochs_drop_the_remainder(tmp_path):
    p = write(tmp_path, "train.csv", TITANIC)
    ds = make_csv_dataset(p, batch_size=5, label_name="survived", shuffle=False)
    assert ds.element_spec[1] == gt.TensorSpec((5,), gt.int32)
    labels = [lab.numpy().tolist() for _, lab in ds.take(4)]
    assert labels == [[0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 0, 0, 1, 1], [1, 0, 0, 1, 1]]


def test_select_columns_and_defaults(tmp_path):
    p = write(tmp_path, "train.csv", TITANIC)
    ds = make_csv_dataset(p, batch_size=4, num_epochs=1, shuffle=False,
                          select_columns=["age", 1, "survived"])
    batches = list(ds)
    assert all(type(b) is collections.OrderedDict for b in batches)
    cols = columns(batches)
    assert list(cols) == ["survived", "sex", "age"]
    assert cols["survived"] == SURVIVED and cols["sex"] == SEX
    ds = make_csv_dataset(p, batch_size=6, num_epochs=1, shuffle=False,
                          select_columns=["fare", "survived"],
                          column_defaults=[gt.int32, gt.float64])
    cols = columns(ds)
    assert cols["fare"] == FARE and ds.element_spec["fare"].dtype == gt.float64
    ds = make_csv_dataset(p, batch_size=6, num_epochs=1, shuffle=False,
                          select_columns=["survived", "fare"], column_defaults=[0, 0.0])
    assert ds.element_spec["fare"].dtype == gt.float32
    assert columns(ds)["fare"] == np.float32(FARE).tolist()
    ds = make_csv_dataset(p, batch_size=20, num_epochs=1, shuffle=False, select_columns=[True])
    assert columns(ds) == {"sex": SEX}


def test_file_globbing_and_interleaving(tmp_path):
    write(tmp_path, "a1.csv", "x,y\n1,a\n2,b\n3,c\n")
    write(tmp_path, "a2.csv", "x,y\n4,d\n")
    write(tmp_path, "a3.csv", "x,y\n5,e\n6,f\n7,g\n8,h\n")
    pattern = str(tmp_path / "a*.csv")

    def xs(pattern, **kw):
        ds = make_csv_dataset(pattern, num_epochs=kw.pop("num_epochs", 1), shuffle=False, **kw)
        return [b["x"].numpy().tolist() for b in ds]

    assert xs(pattern, batch_size=3) == [[1, 2, 3], [4, 5, 6], [7, 8]]
    assert xs(pattern, batch_size=3, num_parallel_reads=2) == [[1, 4, 2], [3, 5, 6], [7, 8]]
    assert xs([str(tmp_path / n) for n in ("a3.csv", "a1.csv", "a2.csv")], batch_size=20,
              num_parallel_reads=3) == [[1, 4, 5, 2, 6, 3, 7, 8]]
    assert xs(pattern, batch_size=10, num_parallel_reads=20) == [[1, 4, 5, 2, 6, 3, 7, 8]]
    assert xs([str(tmp_path / "a3.csv"), str(tmp_path / "a1*")], batch_size=20) == [
        [1, 2, 3, 5, 6, 7, 8]]
    assert xs(pattern, batch_size=5, num_epochs=2) == [[1, 2, 3, 4, 5], [6, 7, 8, 1, 2],
                                                       [3, 4, 5, 6, 7], [8]]
    ds = make_csv_dataset(pattern, batch_size=3, num_epochs=1, shuffle_seed=1)
    assert sorted(x for b in ds for x in b["x"].numpy().tolist()) == list(range(1, 9))


def test_column_type_inference(tmp_path):
    p = write(tmp_path, "t.csv", "i,l,f,d,s,e,n\n1,3000000000,1.5,1e39,a,,NA\n-2,1,2,3,b,,\n")
    ds = make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False, na_value="NA")
    assert [s.dtype.name for s in ds.element_spec.values()] == [
        "int32", "int64", "float32", "float64", "string", "string", "string"]
    assert columns(ds) == {"i": [1, -2], "l": [3000000000, 1], "f": [1.5, 2.0],
                           "d": [1e39, 3.0], "s": [b"a", b"b"], "e": [b"", b""],
                           "n": [b"", b""]}
    p = write(tmp_path, "m.csv", "x,y\n1,\n2,3\n")
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False)) == {
        "x": [1, 2], "y": [0, 3]}
    p = write(tmp_path, "n.csv", "x,y\n,1\n,2\n")
    ds = make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False)
    assert ds.element_spec["x"].dtype == gt.string
    assert columns(ds) == {"x": [b"", b""], "y": [1, 2]}


def test_inference_row_limit_and_ignore_errors(tmp_path):
    p = write(tmp_path, "l.csv", "x,y\n1,2\n3,4\n5.5,a\n7,8\n")
    ds = make_csv_dataset(p, batch_size=5, num_rows_for_inference=2, num_epochs=1,
                          shuffle=False)
    assert ds.element_spec["x"].dtype == gt.int32
    assert "Field 0 in record is not a valid int32: 5.5" in read_error(ds)
    ds = make_csv_dataset(p, batch_size=5, num_rows_for_inference=2, num_epochs=1,
                          shuffle=False, ignore_errors=True)
    assert columns(ds) == {"x": [1, 3, 7], "y": [2, 4, 8]}
    ds = make_csv_dataset(p, batch_size=5, num_rows_for_inference=None, num_epochs=1,
                          shuffle=False)
    assert columns(ds) == {"x": [1.0, 3.0, 5.5, 7.0], "y": [b"2", b"4", b"a", b"8"]}
    p = write(tmp_path, "l3.csv", "x,y\n1,2\n3,4\n5,6\n7\n")
    ds = make_csv_dataset(p, batch_size=5, num_rows_for_inference=2, num_epochs=1,
                          shuffle=False)
    assert "Expect 2 fields but have 1 in record" in read_error(ds)


def test_formats(tmp_path):
    p = write(tmp_path, "q.csv", 'a;"b;c"\n"x;y";2\n"p""q";3\n')
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False,
                                    field_delim=";")) == {"a": [b"x;y", b'p"q'],
                                                          "b;c": [2, 3]}
    p = write(tmp_path, "q2.csv", 'a,b\n"x",2\n')
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False,
                                    use_quote_delim=False)) == {"a": [b'"x"'], "b": [2]}
    p = write(tmp_path, "g.csv.gz", "x,y\n1,a\n2,b\n", "GZIP")
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False,
                                    compression_type="GZIP")) == {"x": [1, 2], "y": [b"a", b"b"]}
    p = write(tmp_path, "z.csv.z", "x,y\n1,a\n2,b\n", "ZLIB")
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False,
                                    compression_type="ZLIB", column_names=["x", "y"],
                                    column_defaults=[gt.int32, gt.string])) == {
        "x": [1, 2], "y": [b"a", b"b"]}
    p = write(tmp_path, "lat.csv", "é,b\n1,2\n".encode("latin-1"))
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False,
                                    encoding="latin-1")) == {"é": [1], "b": [2]}
    p = write(tmp_path, "crlf.csv", "x,y\r\n1,2\r\n3,4\r\n")
    assert columns(make_csv_dataset(p, batch_size=5, num_epochs=1, shuffle=False)) == {
        "x": [1, 3], "y": [2, 4]}
    p = write(tmp_path, "nh.csv", "1,a\n2,b\n")
    assert columns(make_csv_dataset(p, batch_size=5, header=False, column_names=["n", "s"],
                                    num_epochs=1, shuffle=False)) == {"n": [1, 2],
                                                                      "s": [b"a", b"b"]}
    p = write(tmp_path, "h.csv", "x,y\n1,a\n2,b\n")
    assert columns(make_csv_dataset(p, batch_size=5, column_names=["p", "q"], num_epochs=1,
                                    shuffle=False, prefetch_buffer_size=0)) == {
        "p": [1, 2], "q": [b"a", b"b"]}
    p = write(tmp_path, "nh3.csv", "1,a,3\n")
    assert columns(make_csv_dataset(p, batch_size=5, header=False, column_names=["n", "s", "t"],
                                    select_columns=["t"], num_epochs=1, shuffle=False)) == {
        "t": [3]}


def test_make_csv_dataset_errors(tmp_path):
    t = write(tmp_path, "train.csv", TITANIC)
    a = write(tmp_path, "a.csv", "x,y\n1,a\n")

    def err(match, *args, error=ValueError, **kwargs):
        with pytest.raises(error, match=match):
            make_csv_dataset(*args, **kwargs)

    err("No files match `file_pattern`", str(tmp_path / "zz*.csv"), 5)
    err("Argument `file_pattern` should not be empty", [], 5)
    err("All input CSV files should have the same column names in the header row. File .*b1",
        [a, write(tmp_path, "b1.csv", "x,z\n1,2\n")], 5)
    err(r"duplicate column names: \{'x'\}", write(tmp_path, "dup.csv", "x,x\n1,2\n"), 5)
    err("Expected `column_names` or `header` arguments", a, 5, header=False)
    err("Failed when reading the header line of .*empty.csv. Is it an empty file",
        write(tmp_path, "empty.csv", ""), 5)
    err("Problem inferring types: CSV row 3 has 1 number of fields. Expected: 2",
        write(tmp_path, "bad.csv", "x,y\n1,2\n3\n"), 5)
    err("Problem inferring types: CSV row 3 has 0 number of fields. Expected: 2",
        write(tmp_path, "bad2.csv", "x,y\n1,2\n\n3,4\n"), 5)
    err("Problem inferring types: CSV row 4 has 1 number of fields",       # the row after N
        write(tmp_path, "lim2.csv", "x,y\n1,2\n3,4\n5\n7,8\n"), 5, num_rows_for_inference=2)
    err("Problem inferring types: CSV row 1 has 3 number of fields. Expected: 2",
        write(tmp_path, "nh2.csv", "1,a,3\n"), 5, header=False, column_names=["n", "s"])
    err("`compression_type` ZLIB is not supported for probing columns", a, 5,
        compression_type="ZLIB")
    err("Received unknown `compression_type` BZ2", a, 5, compression_type="BZ2")
    err(r"`label_name` provided must be one of the columns: \['age'\]. Received: survived",
        t, 4, select_columns=["age"], label_name="survived")
    err("`label_name` provided must be one of the columns: .*Received: nope", t, 4,
        label_name="nope")
    err(r"`select_columns` argument contains duplicate columns: \{2\}", t, 4,
        select_columns=["age", 2])
    err("Column agex specified in `select_columns` must be of one of the columns", t, 4,
        select_columns=["agex"])
    err("Column index 10 specified in `select_columns` should be > 0  and <= 10", t, 4,
        select_columns=[10])
    err("Column index -1 specified", t, 4, select_columns=[-1])
    err("Column 1 specified in `select_columns` must be", t, 4, select_columns=[np.int64(1)])
    err("`column_defaults` has length 1, `select_columns` has length 2", t, 4,
        select_columns=["fare", "survived"], column_defaults=[gt.int32])
    err("batch_size", t, 0, error=InvalidArgumentError)


def test_infer_type_table():
    infer = gt_data._csv_infer_type
    texts = ["1", " 3", "1_000", "0x10", "3.0", "nan", "inf", "-inf", "1e39", "-1e39", "1e309",
             "2147483648", "9223372036854775808", "abc", "", "NA", "\u0661\u0662", " ",
             "infinity", "1e", ".5"]
    want = {
        None: ["int32", "int32", "int32", "string", "float32", "string", "string", "float32",
               "float64", "float32", "string", "int64", "float32", "string", None, None,
               "int32", "string", "string", "string", "float32"],
        "int64": ["int64", "int64", "int64", "string", "float32", "string", "string",
                  "float32", "float64", "float32", "string", "int64", "float32", "string",
                  "int64", "int64", "int64", "string", "string", "string", "float32"],
        "float64": ["float64", "float64", "float64", "string", "float64", "string", "string",
                    "float64", "float64", "float64", "string", "float64", "float64", "string",
                    "float64", "float64", "float64", "string", "string", "string", "float64"],
    }
    for prev, expected in want.items():
        assert [infer(t, "NA", prev) for t in texts] == expected


def test_map_keeps_ordered_dicts():
    ds = gt.data.Dataset.range(2).map(lambda x: collections.OrderedDict([("z", x), ("a", x)]))
    element = next(iter(ds))
    assert type(element) is collections.OrderedDict and list(element) == ["z", "a"]
    assert type(ds.element_spec) is collections.OrderedDict
