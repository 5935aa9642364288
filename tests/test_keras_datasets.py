"""gt.keras.utils.get_file and gt.keras.datasets, against Keras 3.15 (tf.keras of TF 2.21).

Nothing is downloaded: get_file reads ``file://`` origins made under tmp_path, and each
loader gets small files in Keras' format (its origin and hash pointed at them). The expected
arrays of imdb/reuters/boston_housing/california_housing come from TF's own loaders run on
the same small files, hard-coded here."""
import gzip
import hashlib
import io
import json
import os
import pickle
import tarfile
import zipfile

import numpy as np
import pytest

import gradtape as gt
from gradtape import keras_datasets as kd

HELLO = b"hello world\n"
HELLO_SHA = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"
HELLO_MD5 = "6f5902ac237024bdd0c176cb93063dc4"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty KERAS_HOME; returns its datasets dir."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "datasets"


@pytest.fixture
def src(tmp_path):
    d = tmp_path / "src"
    d.mkdir()
    (d / "plain.txt").write_bytes(HELLO)
    return d


def url(path):
    return "file://" + str(path)


def make_tar(path, members):
    """A tar.gz of ``members``: name -> bytes, or ("link", target) for a symlink."""
    with tarfile.open(path, "w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if isinstance(data, tuple):
                info.type, info.linkname = tarfile.SYMTYPE, data[1]
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))


def make_zip(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def files_under(root):
    """The files (and links) under ``root``, relative to it."""
    out = []
    for d, dirs, fs in os.walk(root):
        links = [x for x in dirs if os.path.islink(os.path.join(d, x))]
        out += [os.path.relpath(os.path.join(d, f), root) for f in fs + links]
    return sorted(out)


# --- get_file -----------------------------------------------------------------------------------

def test_get_file_plain_cache_and_force(home, src, capsys):
    p = kd.get_file(origin=url(src / "plain.txt"))
    assert p == str(home / "plain.txt")
    assert open(p, "rb").read() == HELLO
    assert f"Downloading data from {url(src / 'plain.txt')}" in capsys.readouterr().out
    (src / "plain.txt").write_bytes(b"changed\n")
    assert kd.get_file(origin=url(src / "plain.txt")) == p        # cached: not fetched again
    assert "Downloading" not in capsys.readouterr().out
    assert open(p, "rb").read() == HELLO
    assert kd.get_file(origin=url(src / "plain.txt"), force_download=True) == p
    assert "Downloading" in capsys.readouterr().out
    assert open(p, "rb").read() == b"changed\n"


def test_get_file_keras_api_and_fname_forms(home, src):
    assert gt.keras.utils.get_file is kd.get_file
    from gradtape.keras.utils import get_file
    import pathlib
    p = get_file(pathlib.Path("p.txt"), url(src / "plain.txt"))
    assert p == str(home / "p.txt")
    sub = src / "abs"
    assert get_file("q.txt", url(src / "plain.txt"), cache_subdir=str(sub)) == str(sub / "q.txt")
    cd = src / "cd"
    cd.mkdir()
    assert get_file("r.txt", url(src / "plain.txt"), cache_dir=str(cd), cache_subdir="s") == \
        str(cd / "s" / "r.txt")


def test_get_file_default_home(tmp_path, src, monkeypatch):
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    p = kd.get_file(origin=url(src / "plain.txt"))
    assert p == str(tmp_path / "user" / ".keras" / "datasets" / "plain.txt")


def test_get_file_unwritable_cache_falls_back(tmp_path, src, monkeypatch):
    # A cache dir that cannot be written (or does not exist) goes to <tmp>/.keras, as Keras.
    monkeypatch.setattr(kd.os.path, "isdir", lambda p, _isdir=os.path.isdir:
                        False if p == "/tmp" else _isdir(p))
    monkeypatch.setattr(kd.tempfile, "gettempdir", lambda: str(tmp_path / "t"))
    p = kd.get_file("x.txt", url(src / "plain.txt"), cache_dir=str(tmp_path / "missing"))
    assert p == str(tmp_path / "t" / ".keras" / "datasets" / "x.txt")
    assert not (tmp_path / "missing").exists()


def test_get_file_hashes(home, src, capsys):
    origin = url(src / "plain.txt")
    p = kd.get_file("a.txt", origin, file_hash=HELLO_SHA)
    assert open(p, "rb").read() == HELLO
    assert kd.get_file("b.txt", origin, md5_hash=HELLO_MD5) == str(home / "b.txt")
    capsys.readouterr()
    kd.get_file("b.txt", origin, file_hash=HELLO_MD5)             # "auto": md5 by length
    assert capsys.readouterr().out == ""
    (home / "a.txt").write_bytes(b"corrupt")                      # a stale cached file
    kd.get_file("a.txt", origin, file_hash=HELLO_SHA)
    out = capsys.readouterr().out
    assert ("A local file was found, but it seems to be incomplete or outdated because the "
            f"auto file hash does not match the original value of {HELLO_SHA} so we will "
            "re-download the data.") in out
    assert "Downloading data from" in out
    assert (home / "a.txt").read_bytes() == HELLO
    with pytest.raises(ValueError, match="Incomplete or corrupted file detected. The auto file "
                       "hash does not match the provided value of 0{64}"):
        kd.get_file("c.txt", origin, file_hash="0" * 64)
    assert (home / "c.txt").exists()                              # kept, as Keras
    with pytest.raises(ValueError, match="The md5 file hash"):   # md5 forced on a sha256
        kd.get_file("d.txt", origin, file_hash=HELLO_SHA, hash_algorithm="md5")
    kd.get_file("e.txt", origin, file_hash=HELLO_SHA, hash_algorithm="sha256")


def test_hash_file_validate_file(src):
    p = str(src / "plain.txt")
    assert kd.hash_file(p) == HELLO_SHA
    assert kd.hash_file(p, "sha256", chunk_size=3) == HELLO_SHA
    assert kd.hash_file(p, "md5") == HELLO_MD5
    assert kd.hash_file(p, "auto") == HELLO_MD5                  # no hash to measure: md5
    assert kd.hash_file(p, hashlib.sha256()) == HELLO_SHA
    assert kd.validate_file(p, HELLO_SHA) and kd.validate_file(p, HELLO_MD5)
    assert not kd.validate_file(p, HELLO_MD5, "sha256")
    assert not kd.validate_file(p, HELLO_SHA, "md5")
    assert not kd.validate_file(p, "x")


def test_get_file_extract_names(home, src):
    make_tar(src / "arch.tar.gz", {"top/a.txt": b"A", "top/sub/b.txt": b"BB"})
    make_zip(src / "arch.zip", {"z/c.txt": "CCC", "d.txt": "D"})
    tar, zp = url(src / "arch.tar.gz"), url(src / "arch.zip")
    # a name with a dot: the archive keeps it, the files go to <stem>_extracted
    assert kd.get_file("data.tar.gz", tar, extract=True) == str(home / "data_extracted")
    assert files_under(home) == ["data.tar.gz", "data_extracted/top/a.txt",
                                 "data_extracted/top/sub/b.txt"]
    # a bare name: <name>_archive and <name>/
    assert kd.get_file("data", tar, extract=True) == str(home / "data")
    assert (home / "data_archive").is_file() and (home / "data/top/sub/b.txt").read_bytes() == \
        b"BB"
    # no name: the URL's file name is the directory
    assert kd.get_file(origin=tar, extract=True) == str(home / "arch.tar.gz")
    assert (home / "arch.tar.gz_archive").is_file() and (home / "arch.tar.gz/top/a.txt").is_file()
    assert kd.get_file("ut", tar, untar=True) == str(home / "ut")
    assert (home / "ut/top/a.txt").read_bytes() == b"A"
    assert kd.get_file("zz.zip", zp, extract=True) == str(home / "zz_extracted")
    assert (home / "zz_extracted/z/c.txt").read_bytes() == b"CCC"
    assert kd.get_file("zf", zp, extract=True, archive_format="zip") == str(home / "zf")
    assert (home / "zf/d.txt").read_bytes() == b"D"
    for name, origin, kwargs in (("zt", zp, dict(untar=True)),
                                 ("tz", tar, dict(extract=True, archive_format="zip")),
                                 ("fn", tar, dict(extract=True, archive_format=None))):
        with pytest.warns(UserWarning, match="Could not extract archive."):
            assert kd.get_file(name, origin, **kwargs) == str(home / name)
        assert not (home / name).exists() and (home / f"{name}_archive").is_file()
    with pytest.raises(NotImplementedError, match="rar"):
        kd.get_file("fb", tar, extract=True, archive_format="rar")


def test_get_file_refuses_members_leaving_the_dir(home, src):
    make_tar(src / "evil.tar.gz", {"ok.txt": b"ok", "../escape.txt": b"x", "/abs.txt": b"y",
                                   "link": ("link", "../../outside"),
                                   "goodlink": ("link", "ok.txt")})
    make_zip(src / "evil.zip", {"fine.txt": "f", "../zescape.txt": "e"})
    with pytest.warns(UserWarning) as rec:
        out = kd.get_file("evil", url(src / "evil.tar.gz"), extract=True)
    assert [str(w.message) for w in rec if "Skipping" in str(w.message)] == [
        "Skipping invalid path during archive extraction: '../escape.txt'.",
        "Skipping invalid path during archive extraction: '/abs.txt'.",
        "Skipping invalid path during archive extraction: 'link'."]
    assert files_under(out) == ["goodlink", "ok.txt"]
    assert os.readlink(os.path.join(out, "goodlink")) == "ok.txt"
    with pytest.warns(UserWarning, match="Skipping invalid path during archive extraction: "
                      "'../zescape.txt'."):
        out = kd.get_file("ez", url(src / "evil.zip"), extract=True)
    assert files_under(out) == ["fine.txt"]
    assert sorted(os.listdir(home)) == ["evil", "evil_archive", "ez", "ez_archive"]


def test_extract_archive(tmp_path, src):
    make_tar(src / "a.tar.gz", {"t/a.txt": b"A"})
    make_zip(src / "a.zip", {"b.txt": "B"})
    assert kd.extract_archive(src / "a.zip", tmp_path / "e1") is True
    assert (tmp_path / "e1/b.txt").read_text() == "B"
    assert kd.extract_archive(str(src / "plain.txt"), str(tmp_path / "e2")) is False
    assert kd.extract_archive(str(src / "a.tar.gz"), str(tmp_path / "e3"), "tar") is True
    assert kd.extract_archive(str(src / "a.tar.gz"), str(tmp_path / "e4"), ["zip", "tar"])
    assert kd.extract_archive(str(src / "a.tar.gz"), str(tmp_path / "e5"), "zip") is False
    assert kd.extract_archive(str(src / "a.tar.gz"), str(tmp_path / "e6"), None) is False
    assert not (tmp_path / "e2").exists() and (tmp_path / "e4/t/a.txt").read_bytes() == b"A"


def test_get_file_errors(home, src):
    with pytest.raises(ValueError, match=r'Please specify the "origin" argument'):
        kd.get_file("x.txt")
    with pytest.raises(ValueError, match="Paths are no longer accepted as the `fname` "
                       "argument.*Received: fname=a/b.txt"):
        kd.get_file("a/b.txt", url(src / "plain.txt"))
    with pytest.raises(ValueError, match="Can't parse the file name from the origin provided: "
                       "'file:///tmp/'"):
        kd.get_file(origin="file:///tmp/")
    with pytest.raises(Exception, match="URL fetch failure on file://.*missing.txt: None -- "
                       r"\[Errno 2\] No such file"):
        kd.get_file("m.txt", url(src / "missing.txt"))
    assert not (home / "m.txt").exists()


def test_get_file_progress_without_tqdm(home, src, monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm", None)          # import tqdm -> ImportError
    kd.get_file("p.txt", url(src / "plain.txt"))
    assert "12/12 bytes" in capsys.readouterr().out


# --- the loaders -------------------------------------------------------------------------------

def serve(monkeypatch, tmp_path, name, data=None, hash_=True):
    """Put ``name`` (written from ``data`` unless it exists) under tmp_path/origin and point
    the loader's origin (and hash) at it."""
    d = tmp_path / "origin"
    d.mkdir(exist_ok=True)
    if data is not None:
        (d / name).write_bytes(data)
    monkeypatch.setitem(kd._ORIGINS, name, url(d / name))
    if hash_:
        monkeypatch.setitem(kd._HASHES, name, sha256(d / name))
    return d / name


def npz_bytes(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_origins_and_hashes_are_keras():
    base = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
    assert kd._ORIGINS["mnist.npz"] == base + "mnist.npz"
    assert kd._ORIGINS["train-images-idx3-ubyte.gz"] == base + "train-images-idx3-ubyte.gz"
    assert kd._ORIGINS["cifar-10-python.tar.gz"] == \
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    assert kd._ORIGINS["cifar-100-python.tar.gz"] == \
        "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    assert kd._HASHES == {
        "mnist.npz": "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
        "imdb.npz": "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f",
        "imdb_word_index.json": "bfafd718b763782e994055a2d397834f",
        "reuters.npz": "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916",
        "reuters_word_index.json": "4d44cc38712099c9e383dc6e5f11a921",
        "boston_housing.npz":
            "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5",
        "california_housing.npz":
            "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f",
        "cifar-10-python.tar.gz":
            "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
        "cifar-100-python.tar.gz":
            "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"}


def test_import_forms():
    import gradtape.keras.datasets.mnist as m
    from gradtape.keras.datasets import imdb, reuters
    ds = gt.keras.datasets
    assert m is ds.mnist and imdb is ds.imdb and reuters.get_label_names is \
        ds.reuters.get_label_names
    assert ds.__all__ == ["boston_housing", "california_housing", "cifar10", "cifar100",
                          "fashion_mnist", "imdb", "mnist", "reuters"]
    assert ds.reuters.__all__ == ["get_label_names", "get_word_index", "load_data"]
    assert "datasets" in gt.keras.__all__ and "get_file" in gt.keras.utils.__all__


def test_mnist(home, tmp_path, monkeypatch):
    rng = np.random.RandomState(5)
    x_tr = rng.randint(0, 256, (4, 28, 28)).astype(np.uint8)
    x_te = rng.randint(0, 256, (2, 28, 28)).astype(np.uint8)
    serve(monkeypatch, tmp_path, "mnist.npz", npz_bytes(
        x_train=x_tr, y_train=np.array([3, 1, 4, 1], np.uint8), x_test=x_te,
        y_test=np.array([5, 9], np.uint8)))
    (a, b), (c, d) = gt.keras.datasets.mnist.load_data()
    assert (home / "mnist.npz").is_file()
    assert a.dtype == np.uint8 and a.shape == (4, 28, 28) and np.array_equal(a, x_tr)
    assert b.dtype == np.uint8 and b.tolist() == [3, 1, 4, 1]
    assert np.array_equal(c, x_te) and d.tolist() == [5, 9]
    (a2, _), _ = gt.keras.datasets.mnist.load_data(path="other.npz")
    assert (home / "other.npz").is_file() and np.array_equal(a2, x_tr)


def test_mnist_reads_the_cached_file(home, tmp_path, monkeypatch):
    home.mkdir(parents=True)
    (home / "mnist.npz").write_bytes(npz_bytes(
        x_train=np.ones((1, 28, 28), np.uint8), y_train=np.array([7], np.uint8),
        x_test=np.zeros((1, 28, 28), np.uint8), y_test=np.array([2], np.uint8)))
    monkeypatch.setitem(kd._ORIGINS, "mnist.npz", url(tmp_path / "nowhere.npz"))
    monkeypatch.setitem(kd._HASHES, "mnist.npz", sha256(home / "mnist.npz"))
    (a, b), (c, d) = gt.keras.datasets.mnist.load_data()
    assert a.sum() == 784 and b.tolist() == [7] and d.tolist() == [2]


def test_fashion_mnist(home, tmp_path, monkeypatch):
    rng = np.random.RandomState(5)
    img = rng.randint(0, 256, (5, 28, 28)).astype(np.uint8)

    def idx(header_ints, payload):
        head = b"".join(int(v).to_bytes(4, "big") for v in header_ints)
        return gzip.compress(head + payload.tobytes())
    files = {"train-labels-idx1-ubyte.gz": idx([2049, 3], np.array([7, 0, 2], np.uint8)),
             "train-images-idx3-ubyte.gz": idx([2051, 3, 28, 28], img[:3]),
             "t10k-labels-idx1-ubyte.gz": idx([2049, 2], np.array([9, 4], np.uint8)),
             "t10k-images-idx3-ubyte.gz": idx([2051, 2, 28, 28], img[3:])}
    for name, data in files.items():
        serve(monkeypatch, tmp_path, name, data, hash_=False)
    (a, b), (c, d) = gt.keras.datasets.fashion_mnist.load_data()
    assert sorted(os.listdir(home / "fashion-mnist")) == sorted(files)
    assert a.dtype == np.uint8 and a.shape == (3, 28, 28) and np.array_equal(a, img[:3])
    assert c.shape == (2, 28, 28) and np.array_equal(c, img[3:])
    assert b.tolist() == [7, 0, 2] and d.tolist() == [9, 4] and d.dtype == np.uint8
    assert not a.flags.writeable            # np.frombuffer views, as Keras returns


def cifar_pickle(d):
    return pickle.dumps(d, protocol=4)


def test_cifar10(home, tmp_path, monkeypatch):
    rng = np.random.RandomState(0)
    datas = [rng.randint(0, 256, (2, 3072)).astype(np.uint8) for _ in range(6)]
    labels = [[1, 9], [0, 3], [2, 2], [8, 5], [7, 6], [4, 1]]
    members = {}
    for i, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        members[f"cifar-10-batches-py/{name}"] = cifar_pickle(
            {b"batch_label": name.encode(), b"labels": labels[i], b"data": datas[i]})
    make_tar(tmp_path / "c10.tar.gz", members)
    serve(monkeypatch, tmp_path, "cifar-10-python.tar.gz",
          (tmp_path / "c10.tar.gz").read_bytes())
    (a, b), (c, d) = gt.keras.datasets.cifar10.load_data()
    assert sorted(os.listdir(home)) == ["cifar-10-batches-py-target",
                                        "cifar-10-batches-py-target_archive"]
    assert a.dtype == np.uint8 and a.shape == (10, 32, 32, 3)
    assert c.dtype == np.uint8 and c.shape == (2, 32, 32, 3)
    assert b.dtype == np.uint8 and b.shape == (10, 1) and d.dtype == np.uint8
    assert b.ravel().tolist() == [1, 9, 0, 3, 2, 2, 8, 5, 7, 6] and d.ravel().tolist() == [4, 1]
    # channels last: pixel (h, w) of channel ch is data[ch * 1024 + h * 32 + w]
    assert a[3, 5, 7, 2] == datas[1][1, 2 * 1024 + 5 * 32 + 7]
    assert np.array_equal(a.reshape(10, 1024, 3).transpose(0, 2, 1).reshape(10, 3072),
                          np.concatenate(datas[:5]))
    assert np.array_equal(c.transpose(0, 3, 1, 2).reshape(2, 3072), datas[5])


def test_cifar100(home, tmp_path, monkeypatch):
    rng = np.random.RandomState(1)
    tr = rng.randint(0, 256, (3, 3072)).astype(np.uint8)
    te = rng.randint(0, 256, (2, 3072)).astype(np.uint8)
    members = {"cifar-100-python/train": cifar_pickle(
        {b"fine_labels": [10, 73, 99], b"coarse_labels": [1, 11, 13], b"data": tr}),
        "cifar-100-python/test": cifar_pickle(
        {b"fine_labels": [24, 3], b"coarse_labels": [8, 0], b"data": te})}
    make_tar(tmp_path / "c100.tar.gz", members)
    serve(monkeypatch, tmp_path, "cifar-100-python.tar.gz",
          (tmp_path / "c100.tar.gz").read_bytes())
    (a, b), (c, d) = gt.keras.datasets.cifar100.load_data()
    assert (home / "cifar-100-python-target_archive").is_file()
    assert a.dtype == np.uint8 and a.shape == (3, 32, 32, 3) and c.shape == (2, 32, 32, 3)
    assert b.dtype == np.int64 and b.shape == (3, 1) and b.ravel().tolist() == [10, 73, 99]
    assert d.ravel().tolist() == [24, 3]
    assert np.array_equal(a.transpose(0, 3, 1, 2).reshape(3, 3072), tr)
    (_, b), (_, d) = gt.keras.datasets.cifar100.load_data(label_mode="coarse")
    assert b.ravel().tolist() == [1, 11, 13] and d.ravel().tolist() == [8, 0]
    with pytest.raises(ValueError, match="label_mode=medium"):
        gt.keras.datasets.cifar100.load_data("medium")


def test_cifar_refuses_pickled_code(home, tmp_path, monkeypatch):
    marker = tmp_path / "marker"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    members = {"cifar-100-python/train": pickle.dumps(
        {b"fine_labels": [1], b"data": Exploit()}, protocol=4)}
    make_tar(tmp_path / "bad.tar.gz", members)
    serve(monkeypatch, tmp_path, "cifar-100-python.tar.gz",
          (tmp_path / "bad.tar.gz").read_bytes())
    with pytest.raises(pickle.UnpicklingError, match="Refusing to deserialize"):
        gt.keras.datasets.cifar100.load_data()
    assert not marker.exists()


def ragged(seqs):
    out = np.empty(len(seqs), dtype=object)
    for i, s in enumerate(seqs):
        out[i] = list(s)
    return out


IMDB = dict(
    x_train=ragged([[16, 1, 4, 4, 8, 10], [19, 5, 7, 13, 2], [18, 6], [14, 9, 10],
                    [17, 6, 16, 16, 1, 19], [18, 15, 8, 1, 2], [1, 11, 4]]),
    y_train=np.array([0, 1, 0, 1, 0, 0, 0]),
    x_test=ragged([[5, 6], [18, 16], [10, 11, 2, 2, 8, 10], [4, 7, 12], [1, 15, 4, 13]]),
    y_test=np.array([1, 0, 0, 1, 0]))
REUTERS = dict(
    x=ragged([[12, 13, 9, 10, 12, 6, 16], [17, 2], [8, 14, 7, 19, 21, 6], [21, 12, 11, 15],
              [5, 24, 24, 10], [24, 1, 23], [10, 10, 8, 23, 2, 1, 18], [14, 20], [9, 8, 4, 7]]),
    y=np.array([21, 3, 4, 24, 43, 12, 26, 16, 45]))

# (kwargs, x_train, x_test, y_train, y_test) from tf.keras.datasets.imdb.load_data
IMDB_CASES = [
    ({}, [[1, 2, 8, 10, 16, 5], [1, 17, 12, 13], [1, 19, 4, 7, 7, 11, 13], [1, 4, 14, 7],
          [1, 21, 9], [1, 20, 9, 19, 19, 4, 2], [1, 21, 18, 11, 4, 5]],
     [[1, 13, 14, 5, 5, 11, 13], [1, 7, 10, 15], [1, 4, 18, 7, 16], [1, 21, 19], [1, 8, 9]],
     [1, 1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 1]),
    (dict(num_words=10, skip_top=2, maxlen=6, seed=3),
     [[2, 4, 2, 7], [2, 2, 2, 2], [2, 2, 9]],
     [[2, 4, 2, 7, 2], [2, 7, 2, 2], [2, 2, 2], [2, 8, 9]], [0, 1, 0], [0, 1, 0, 1]),
    (dict(start_char=None, oov_char=None, index_from=0),
     [[5, 7, 13, 2], [14, 9, 10], [16, 1, 4, 4, 8, 10], [1, 11, 4], [18, 6],
      [17, 6, 16, 16, 1], [18, 15, 8, 1, 2]],
     [[10, 11, 2, 2, 8, 10], [4, 7, 12], [1, 15, 4, 13], [18, 16], [5, 6]],
     [1, 1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 1]),
    (dict(start_char=None, index_from=2, num_words=15),
     [[2, 7, 9, 2, 4], [2, 11, 12], [2, 3, 6, 6, 10, 12], [3, 13, 6], [2, 8],
      [2, 8, 2, 2, 3, 2], [2, 2, 10, 3, 4]],
     [[12, 13, 4, 4, 10, 12], [6, 9, 14], [3, 2, 6, 2], [2, 2], [7, 8]],
     [1, 1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 1]),
]

# (kwargs, x_train, x_test, y_train, y_test) from tf.keras.datasets.reuters.load_data
REUTERS_CASES = [
    ({}, [[1, 15, 16, 12, 13, 15, 9, 19], [1, 20, 5], [1, 24, 15, 14, 18], [1, 12, 11, 7, 10],
          [1, 17, 23], [1, 13, 13, 11, 26, 5, 4, 21], [1, 11, 17, 10, 22, 24, 9]],
     [[1, 8, 2, 2, 13], [1, 2, 4, 26]], [21, 3, 24, 45, 16, 26, 4], [43, 12]),
    (dict(test_split=0.3, num_words=12, skip_top=4, maxlen=7, seed=5),
     [[2, 8, 2, 2, 2], [2, 2, 11, 7, 10], [2, 2, 2], [2, 2, 5]],
     [[2, 2, 4, 2], [2, 2, 2, 2, 2]], [43, 45, 16, 3], [12, 24]),
    (dict(start_char=None, oov_char=None, index_from=0),
     [[12, 13, 9, 10, 12, 6, 16], [17, 2], [21, 12, 11, 15], [9, 8, 4, 7], [14, 20],
      [10, 10, 8, 23, 2, 1, 18], [8, 14, 7, 19, 21, 6]],
     [[5, 10], [1, 23]], [21, 3, 24, 45, 16, 26, 4], [43, 12]),
    (dict(maxlen=4, start_char=7, oov_char=0, index_from=5), [[7, 22, 7]], [[7, 19, 0]],
     [3], [16]),
]


def check_seqs(res, x_tr, x_te, y_tr, y_te):
    (a, b), (c, d) = res
    for arr, want in ((a, x_tr), (c, x_te)):
        assert arr.dtype == object and arr.shape[0] == len(want)
        assert [[int(w) for w in s] for s in arr] == want
        if len({len(s) for s in want}) == 1:    # equal lengths: NumPy makes a 2-D array
            assert arr.shape == (len(want), len(want[0]))
        else:
            assert arr.shape == (len(want),) and all(type(s) is list for s in arr)
    assert b.dtype == np.int64 and b.tolist() == y_tr
    assert d.dtype == np.int64 and d.tolist() == y_te


@pytest.mark.parametrize("case", range(len(IMDB_CASES)))
def test_imdb(home, tmp_path, monkeypatch, case):
    serve(monkeypatch, tmp_path, "imdb.npz", npz_bytes(**IMDB))
    kwargs, *want = IMDB_CASES[case]
    check_seqs(gt.keras.datasets.imdb.load_data(**kwargs), *want)
    assert (home / "imdb.npz").is_file()


def test_imdb_errors_and_word_index(home, tmp_path, monkeypatch):
    serve(monkeypatch, tmp_path, "imdb.npz", npz_bytes(**IMDB))
    with pytest.raises(ValueError, match="After filtering for sequences shorter than maxlen=2, "
                       "no sequence was kept. Increase maxlen."):
        gt.keras.datasets.imdb.load_data(maxlen=2)
    index = {"the": 1, "and": 2, "film": 19}
    p = serve(monkeypatch, tmp_path, "imdb_word_index.json", json.dumps(index).encode(),
              hash_=False)
    monkeypatch.setitem(kd._HASHES, "imdb_word_index.json",
                        hashlib.md5(p.read_bytes()).hexdigest())
    assert gt.keras.datasets.imdb.get_word_index() == index
    assert (home / "imdb_word_index.json").is_file()


@pytest.mark.parametrize("case", range(len(REUTERS_CASES)))
def test_reuters(home, tmp_path, monkeypatch, case):
    serve(monkeypatch, tmp_path, "reuters.npz", npz_bytes(**REUTERS))
    kwargs, *want = REUTERS_CASES[case]
    check_seqs(gt.keras.datasets.reuters.load_data(**kwargs), *want)


def test_reuters_word_index_and_labels(home, tmp_path, monkeypatch):
    index = {"said": 1, "mln": 2}
    p = serve(monkeypatch, tmp_path, "reuters_word_index.json", json.dumps(index).encode(),
              hash_=False)
    monkeypatch.setitem(kd._HASHES, "reuters_word_index.json",
                        hashlib.md5(p.read_bytes()).hexdigest())
    assert gt.keras.datasets.reuters.get_word_index() == index
    names = gt.keras.datasets.reuters.get_label_names()
    assert isinstance(names, tuple) and len(names) == 46
    assert names[:5] == ("cocoa", "grain", "veg-oil", "earn", "acq")
    assert names[3] == "earn" and names[19] == "money-fx" and names[-1] == "lead"


def test_npz_object_arrays_refuse_code(home, tmp_path, monkeypatch):
    marker = tmp_path / "marker"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    payload = np.empty(1, dtype=object)
    payload[0] = Exploit()
    serve(monkeypatch, tmp_path, "reuters.npz", npz_bytes(x=payload, y=np.array([1])))
    with pytest.raises(pickle.UnpicklingError, match="Refusing to deserialize"):
        gt.keras.datasets.reuters.load_data()
    assert not marker.exists()


def test_boston_housing(home, tmp_path, monkeypatch):
    x = np.arange(20 * 13, dtype=np.float64).reshape(20, 13)
    serve(monkeypatch, tmp_path, "boston_housing.npz", npz_bytes(x=x, y=np.arange(20) * 1.5))
    (a, b), (c, d) = gt.keras.datasets.boston_housing.load_data()
    assert a.shape == (16, 13) and c.shape == (4, 13) and a.dtype == b.dtype == np.float64
    assert b.tolist() == [21.0, 16.5, 28.5, 25.5, 1.5, 6.0, 12.0, 4.5, 19.5, 22.5, 24.0, 13.5,
                          0.0, 10.5, 9.0, 27.0]
    assert d.tolist() == [18.0, 15.0, 3.0, 7.5]
    assert np.array_equal(a[:, 0] / 13, b / 1.5) and a[0, :3].tolist() == [182.0, 183.0, 184.0]
    (a, b), (c, d) = gt.keras.datasets.boston_housing.load_data(test_split=0.35, seed=7)
    assert a.shape == (13, 13) and c.shape == (7, 13)
    assert d.tolist() == [24.0, 13.5, 18.0, 10.5, 4.5, 6.0, 22.5]
    assert c[-1, :3].tolist() == [195.0, 196.0, 197.0]
    (a, b), (c, d) = gt.keras.datasets.boston_housing.load_data(test_split=0)
    assert a.shape == (20, 13) and c.shape == (0, 13) and d.shape == (0,)
    for bad in (1, -0.1, 1.5):
        with pytest.raises(ValueError, match=f"Invalid `test_split` argument: {bad}"):
            gt.keras.datasets.boston_housing.load_data(test_split=bad)


def test_california_housing(home, tmp_path, monkeypatch):
    x = np.arange(650 * 8, dtype=np.float32).reshape(650, 8)
    serve(monkeypatch, tmp_path, "california_housing.npz",
          npz_bytes(x=x, y=np.arange(650, dtype=np.float32)))
    (a, b), (c, d) = gt.keras.datasets.california_housing.load_data()
    assert a.shape == (520, 8) and c.shape == (130, 8) and a.dtype == b.dtype == np.float32
    assert b[:12].tolist() == [23, 227, 103, 386, 79, 266, 278, 76, 150, 502, 111, 524]
    assert d[:12].tolist() == [594, 351, 224, 113, 225, 623, 104, 301, 462, 13, 558, 234]
    assert np.array_equal(a[:, 0], b * 8)
    (a, b), (c, d) = gt.keras.datasets.california_housing.load_data(
        version="small", test_split=0.1, seed=1)
    assert a.shape == (540, 8) and c.shape == (60, 8) and max(b.max(), d.max()) < 600
    assert b[:12].tolist() == [446, 404, 509, 455, 201, 23, 415, 548, 66, 165, 334, 329]
    assert d[:12].tolist() == [155, 356, 381, 279, 126, 22, 282, 471, 367, 25, 196, 64]
    with pytest.raises(ValueError, match="Argument `version` must be one of 'small', 'large'. "
                       "Received: version=medium"):
        gt.keras.datasets.california_housing.load_data(version="medium")
    with pytest.raises(ValueError, match="Invalid `test_split` argument: 1"):
        gt.keras.datasets.california_housing.load_data(test_split=1)
