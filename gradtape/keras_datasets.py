"""``gt.keras.utils.get_file`` and ``gt.keras.datasets``: Keras 3's download cache and its
small NumPy datasets, as ``tf.keras`` (Keras 3.15) has them.

    (x_train, y_train), (x_test, y_test) = gt.keras.datasets.mnist.load_data()
    path = gt.keras.utils.get_file(origin="https://.../flower_photos.tgz", extract=True)

Files go where Keras puts them (``$KERAS_HOME`` or ``~/.keras``, then ``datasets/``; a cache
dir that cannot be written falls back to ``/tmp/.keras``), under Keras' file names, from
Keras' origins, checked against Keras' hashes, so a cache filled by TensorFlow is reused. The
loaders return Keras' arrays: same dtypes, shapes, orders and seeded shuffles.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.machinery
import inspect
import io
import json
import os
import pickle
import shutil
import sys
import tarfile
import tempfile
import types
import urllib.error
import urllib.parse
import warnings
import zipfile
from urllib.request import urlretrieve

import numpy as np

__all__ = ["get_file", "hash_file", "validate_file", "extract_archive", "datasets"]

_TF_DATASETS = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_FASHION = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
            "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")
# Keras' origin of each dataset file (by its file name) and the hash it checks.
_ORIGINS = {name: _TF_DATASETS + name for name in (
    "mnist.npz", "imdb.npz", "imdb_word_index.json", "reuters.npz", "reuters_word_index.json",
    "boston_housing.npz", "california_housing.npz") + _FASHION}
_ORIGINS["cifar-10-python.tar.gz"] = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
_ORIGINS["cifar-100-python.tar.gz"] = \
    "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
_HASHES = {
    "mnist.npz": "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
    "imdb.npz": "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f",
    "imdb_word_index.json": "bfafd718b763782e994055a2d397834f",
    "reuters.npz": "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916",
    "reuters_word_index.json": "4d44cc38712099c9e383dc6e5f11a921",
    "boston_housing.npz": "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5",
    "california_housing.npz":
        "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f",
    "cifar-10-python.tar.gz":
        "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    "cifar-100-python.tar.gz":
        "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
}


# --- the cache directory, hashes ---------------------------------------------------------------

def _keras_home():
    """Keras' home: ``$KERAS_HOME``, else ``~/.keras`` (``/tmp/.keras`` when the home
    directory cannot be written), created if missing as Keras does on import."""
    if "KERAS_HOME" in os.environ:
        home = os.environ["KERAS_HOME"]
    else:
        base = os.path.expanduser("~")
        if not os.access(base, os.W_OK):
            base = "/tmp"
        home = os.path.join(base, ".keras")
    try:
        os.makedirs(os.path.expanduser(home), exist_ok=True)
    except OSError:                 # a read-only place: get_file falls back to /tmp/.keras
        pass
    return home


def _hasher(algorithm, file_hash=None):
    """Keras' choice of hash: sha256 when asked for or when ``"auto"`` meets a 64-character
    hash; md5 otherwise."""
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "auto" and file_hash is not None and len(file_hash) == 64:
        return hashlib.sha256()
    return hashlib.md5()


def hash_file(fpath, algorithm="sha256", chunk_size=65535):
    """The hex digest of a file, as Keras' ``hash_file``: ``algorithm`` ``"sha256"`` or
    ``"md5"`` (``"auto"``, having no hash to measure, is md5 as in Keras) or a hashlib
    object; the file is read ``chunk_size`` bytes at a time."""
    hasher = _hasher(algorithm) if isinstance(algorithm, str) else algorithm
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535):
    """Whether the file's hash equals ``file_hash`` (sha256 or md5; ``"auto"`` picks sha256
    for a 64-character hash), as Keras' ``validate_file``."""
    hasher = _hasher(algorithm, file_hash)
    return str(hash_file(fpath, hasher, chunk_size)) == str(file_hash)


# --- archives ----------------------------------------------------------------------------------

def _sub_path(base_dir, relative):
    """``base_dir/relative`` resolved, or None when it lies outside ``base_dir``."""
    path = os.path.realpath(os.path.join(base_dir, relative))
    try:
        return path if os.path.commonpath([path, base_dir]) == base_dir else None
    except ValueError:
        return None


def _link_in_dir(info, base_dir):
    """Whether a tar link member and its target both stay inside ``base_dir``."""
    if info.islnk():            # hard links resolve from the archive's root
        return (_sub_path(base_dir, info.name) is not None
                and _sub_path(base_dir, info.linkname) is not None)
    destination = _sub_path(base_dir, info.name)    # symlinks: from the link's directory
    if destination is None:
        return False
    link = os.path.realpath(os.path.join(os.path.dirname(destination), info.linkname))
    try:
        return os.path.commonpath([link, base_dir]) == base_dir
    except ValueError:
        return False


def _safe_members(members, base_dir, is_zip):
    """The archive members that stay inside ``base_dir``; each other one is skipped with
    Keras' warning."""
    base_dir = os.path.realpath(base_dir)
    for info in members:
        name = info.filename if is_zip else info.name
        if not is_zip and (info.issym() or info.islnk()):
            ok = _link_in_dir(info, base_dir)
        else:
            ok = _sub_path(base_dir, name) is not None
        if ok:
            yield info
        else:
            warnings.warn(f"Skipping invalid path during archive extraction: '{name}'.",
                          stacklevel=2)


def _extract_open(archive, path):
    if isinstance(archive, zipfile.ZipFile):
        archive.extractall(path, members=_safe_members(archive.infolist(), path, True))
        return
    kwargs = {}
    if sys.version_info < (3, 14) and "filter" in inspect.signature(
            archive.extractall).parameters:
        kwargs = {"filter": "data"}
    archive.extractall(path, members=_safe_members(archive, path, False), **kwargs)


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extract a tar (``.tar``, ``.tar.gz``, ``.tar.bz``) or zip archive into ``path``, as
    Keras' ``extract_archive``: ``archive_format`` ``"auto"`` (tar, then zip), ``"tar"``,
    ``"zip"``, a list of those, or None (nothing). Members that would land outside ``path``
    (``..``, absolute names, links leaving it) are skipped with a warning. Returns whether
    an archive was recognised and extracted; a broken archive removes ``path`` and raises."""
    if archive_format is None:
        return False
    if archive_format == "auto":
        archive_format = ["tar", "zip"]
    if isinstance(archive_format, str):
        archive_format = [archive_format]
    file_path, path = os.fspath(file_path), os.fspath(path)
    for kind in archive_format:
        if kind == "tar":
            opener, is_match = tarfile.open, tarfile.is_tarfile
        elif kind == "zip":
            opener, is_match = zipfile.ZipFile, zipfile.is_zipfile
        else:
            raise NotImplementedError(f"extract_archive: unknown archive_format {kind!r}; "
                                      f"expected 'tar' or 'zip'")
        if is_match(file_path):
            with opener(file_path) as archive:
                try:
                    _extract_open(archive, path)
                except (tarfile.TarError, RuntimeError, KeyboardInterrupt):
                    if os.path.exists(path):
                        if os.path.isfile(path):
                            os.remove(path)
                        else:
                            shutil.rmtree(path)
                    raise
            return True
    return False


# --- get_file ----------------------------------------------------------------------------------

class _Progress:
    """urlretrieve's report hook: a tqdm bar when tqdm is installed, else a byte count."""

    def __init__(self):
        self.bar = None
        self.line = False

    def __call__(self, block_num, block_size, total_size):
        total = None if total_size is None or total_size < 0 else total_size
        done = block_num * block_size
        if total is not None:
            done = min(done, total)
        if self.bar is None and not self.line:
            try:
                from tqdm import tqdm
            except ImportError:
                self.line = True
            else:
                self.bar = tqdm(total=total, unit="B", unit_scale=True, leave=True)
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
        else:
            of = f"/{total}" if total is not None else ""
            sys.stdout.write(f"\r{done}{of} bytes")
            sys.stdout.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.line:
            sys.stdout.write("\n")
            sys.stdout.flush()


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """Download ``origin`` into Keras' cache unless it is there already; the file's path (or,
    with ``extract``, the extraction directory), as ``keras.utils.get_file``.

    The file lands in ``cache_dir`` (default ``$KERAS_HOME`` or ``~/.keras``; one that is not
    writable, or does not exist, falls back to ``/tmp/.keras`` as in Keras) under
    ``cache_subdir`` (an absolute path is used as is) as ``fname`` (default: the last part of
    the URL's path; a name containing a path separator is refused). ``file_hash`` (sha256 or
    md5, ``hash_algorithm="auto"`` tells them by length; ``md5_hash`` is the old spelling) is
    checked: a cached file that does not match is downloaded again, a download that does not
    match raises ValueError. ``force_download`` always downloads. ``extract`` (``untar``: tar
    only) unpacks a tar/zip archive: with ``fname="name.tar.gz"`` the archive is kept as that
    name and unpacked into ``name_extracted``; otherwise it is saved as ``<fname>_archive``
    and unpacked into ``<fname>``. The archive is unpacked again on each call, as Keras does.
    """
    if origin is None:
        raise ValueError('get_file: Please specify the "origin" argument (URL of the file to '
                         'download).')
    if cache_dir is None:
        cache_dir = _keras_home()
    if md5_hash is not None and file_hash is None:
        file_hash = md5_hash
        hash_algorithm = "md5"
    provided_fname = fname
    fname = os.fspath(fname) if isinstance(fname, os.PathLike) else fname
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"get_file: Can't parse the file name from the origin provided: "
                             f"'{origin}'. Please specify the `fname` argument.")
    elif os.sep in fname:
        raise ValueError(f"get_file: Paths are no longer accepted as the `fname` argument. To "
                         f"specify the file's parent directory, use the `cache_dir` argument. "
                         f"Received: fname={fname}")

    base = os.path.expanduser(cache_dir)
    if not os.access(base, os.W_OK):
        base = os.path.join("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(),
                            ".keras")
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)

    if extract or untar:
        if provided_fname and "." in fname:
            target = os.path.join(datadir, fname)
            stem = fname[:fname.find(".")]
            extraction_dir = os.path.join(datadir, f"{stem}_extracted")
        else:
            extraction_dir = os.path.join(datadir, fname)
            target = os.path.join(datadir, f"{fname}_archive")
    else:
        target = os.path.join(datadir, fname)

    if force_download or not os.path.exists(target):
        download = True
    else:
        download = False
        if file_hash is not None and not validate_file(target, file_hash,
                                                       algorithm=hash_algorithm):
            print(f"A local file was found, but it seems to be incomplete or outdated because "
                  f"the {hash_algorithm} file hash does not match the original value of "
                  f"{file_hash} so we will re-download the data.")
            download = True

    if download:
        print(f"Downloading data from {origin}")
        progress = _Progress()
        error = "URL fetch failure on {}: {} -- {}"
        try:
            try:
                urlretrieve(origin, target, progress)
            except urllib.error.HTTPError as e:
                raise Exception(error.format(origin, e.code, e.msg)) from e
            except urllib.error.URLError as e:
                raise Exception(error.format(origin, e.errno, e.reason)) from e
            finally:
                progress.close()
        except (Exception, KeyboardInterrupt):
            if os.path.exists(target):
                os.remove(target)
            raise
        if os.path.exists(target) and file_hash is not None and \
                not validate_file(target, file_hash, algorithm=hash_algorithm):
            raise ValueError(f"get_file: Incomplete or corrupted file detected. The "
                             f"{hash_algorithm} file hash does not match the provided value "
                             f"of {file_hash}.")

    if extract or untar:
        if untar:
            archive_format = "tar"
        if not extract_archive(target, extraction_dir, archive_format):
            warnings.warn("Could not extract archive.", stacklevel=2)
        return extraction_dir
    return target


def _fetch(name, fname=None, **kwargs):
    """get_file of the dataset file ``name`` from its Keras origin, checked by Keras' hash."""
    return get_file(fname if fname is not None else name, origin=_ORIGINS[name],
                    file_hash=_HASHES.get(name), **kwargs)


# --- safe reading of Keras' pickled arrays -------------------------------------------------------

def _reconstruct():
    try:
        from numpy._core.multiarray import _reconstruct as fn
    except ImportError:                                     # NumPy < 2
        from numpy.core.multiarray import _reconstruct as fn
    return fn


_ALLOWED_GLOBALS = {("numpy", "ndarray"): lambda: np.ndarray,
                    ("numpy", "dtype"): lambda: np.dtype,
                    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
                    ("numpy._core.multiarray", "_reconstruct"): _reconstruct}


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that rebuilds NumPy arrays and nothing else (as Keras' loaders): a file
    naming any other global is refused, so a tampered download cannot run code."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS:
            return _ALLOWED_GLOBALS[module, name]()
        raise pickle.UnpicklingError(f"Refusing to deserialize `{module}.{name}` while loading "
                                     f"a Keras dataset. The file may be corrupted or malicious.")


def _load_npz(path):
    """The members of an ``.npz`` file as a dict; object arrays (the ragged IMDB/Reuters
    sequences) are read with :class:`_ArrayUnpickler` instead of ``allow_pickle=True``."""
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                continue
            with archive.open(member) as raw:
                buf = io.BytesIO(raw.read())
            try:
                value = np.lib.format.read_array(buf, allow_pickle=False)
            except ValueError:
                buf.seek(0)
                version = np.lib.format.read_magic(buf)
                if version[0] == 1:
                    np.lib.format.read_array_header_1_0(buf)
                elif version[0] in (2, 3):
                    np.lib.format.read_array_header_2_0(buf)
                else:
                    raise ValueError(f"Unsupported `.npy` file version: {version}.") from None
                value = _ArrayUnpickler(buf).load()
            arrays[member[:-len(".npy")]] = value
    return arrays


# --- the loaders -------------------------------------------------------------------------------

def _check_split(where, test_split):
    if not (0 <= test_split < 1):
        raise ValueError(f"{where}: Invalid `test_split` argument: {test_split}. It must be "
                         f"between 0 and 1 (exclusive of 1).")


def _split_xy(x, y, test_split, seed):
    """Keras' seeded shuffle then train/test cut of the housing datasets."""
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))


def _mnist_load_data(path="mnist.npz"):
    """MNIST as ``keras.datasets.mnist.load_data``: ``(x_train, y_train), (x_test, y_test)``,
    uint8 images (60000, 28, 28) / (10000, 28, 28) and uint8 labels, from ``mnist.npz``
    (``path``: its name in ``~/.keras/datasets``)."""
    path = _fetch("mnist.npz", path)
    with np.load(path, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


def _fashion_mnist_load_data():
    """Fashion-MNIST as ``keras.datasets.fashion_mnist.load_data``: uint8 images
    (60000, 28, 28) / (10000, 28, 28) and uint8 labels, read from the four gzipped IDX files
    in ``~/.keras/datasets/fashion-mnist``."""
    subdir = os.path.join("datasets", "fashion-mnist")
    paths = [_fetch(name, cache_subdir=subdir) for name in _FASHION]

    def read(p, offset):
        with gzip.open(p, "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)
    y_train = read(paths[0], 8)
    x_train = read(paths[1], 16).reshape(len(y_train), 28, 28)
    y_test = read(paths[2], 8)
    x_test = read(paths[3], 16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)


def _cifar_batch(fpath, label_key="labels"):
    """A CIFAR pickle batch (bytes keys): its data as (n, 3, 32, 32) and its label list."""
    with open(fpath, "rb") as f:
        d = _ArrayUnpickler(f, encoding="bytes").load()
    d = {k.decode("utf8"): v for k, v in d.items()}
    data = d["data"]
    return data.reshape(data.shape[0], 3, 32, 32), d[label_key]


def _channels_last():
    from .keras import config
    return config.image_data_format() == "channels_last"


def _cifar10_load_data():
    """CIFAR-10 as ``keras.datasets.cifar10.load_data``: uint8 images (50000, 32, 32, 3) /
    (10000, 32, 32, 3) (channels last, Keras' image_data_format) and uint8 labels of shape
    (n, 1), from ``cifar-10-python.tar.gz`` unpacked into
    ``~/.keras/datasets/cifar-10-batches-py-target``."""
    path = _fetch("cifar-10-python.tar.gz", "cifar-10-batches-py-target", extract=True)
    path = os.path.join(path, "cifar-10-batches-py")
    batches = [_cifar_batch(os.path.join(path, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([b[0] for b in batches]).astype("uint8", copy=False)
    y_train = np.concatenate([np.asarray(b[1]) for b in batches]).astype("uint8")
    x_test, y_test = _cifar_batch(os.path.join(path, "test_batch"))
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if _channels_last():
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test.astype(x_train.dtype), y_test.astype(y_train.dtype))


def _cifar100_load_data(label_mode="fine"):
    """CIFAR-100 as ``keras.datasets.cifar100.load_data``: uint8 images (50000, 32, 32, 3) /
    (10000, 32, 32, 3) (channels last) and int64 labels of shape (n, 1), the 100 ``"fine"``
    classes or the 20 ``"coarse"`` ones."""
    if label_mode not in ["fine", "coarse"]:
        raise ValueError(f'cifar100.load_data: `label_mode` must be one of `"fine"`, '
                         f'`"coarse"`. Received: label_mode={label_mode}.')
    path = _fetch("cifar-100-python.tar.gz", "cifar-100-python-target", extract=True)
    path = os.path.join(path, "cifar-100-python")
    key = f"{label_mode}_labels"
    x_train, y_train = _cifar_batch(os.path.join(path, "train"), label_key=key)
    x_test, y_test = _cifar_batch(os.path.join(path, "test"), label_key=key)
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if _channels_last():
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)


def _drop_long(maxlen, seqs, labels):
    """Keras' ``remove_long_seq``: the sequences shorter than ``maxlen`` and their labels."""
    kept = [(x, y) for x, y in zip(seqs, labels) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def _index_words(xs, num_words, skip_top, oov_char, where):
    """Keras' vocabulary cut: ids outside ``[skip_top, num_words)`` become ``oov_char`` (or
    are dropped when it is None); ``num_words`` None means the largest id seen (which is
    itself outside the cut, as in Keras)."""
    if not num_words:
        if len(xs) == 0:
            raise ValueError(f"{where}: no sequence is left to take num_words from; give "
                             f"num_words or a larger maxlen")
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def _offset(xs, start_char, index_from):
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in xs]
    if index_from:
        return [[w + index_from for w in x] for x in xs]
    return [[w for w in x] for x in xs]


def _imdb_load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
                    start_char=1, oov_char=2, index_from=3, **kwargs):
    """IMDB reviews as ``keras.datasets.imdb.load_data``: object arrays of word-id lists and
    int labels, train and test each shuffled with ``np.random.RandomState(seed)`` (one
    generator, train first); ids are shifted by ``index_from`` behind ``start_char``;
    ``maxlen`` drops reviews of ``maxlen`` words or more (start mark included); ids outside
    ``[skip_top, num_words)`` become ``oov_char``. Extra keyword arguments are ignored, as in
    Keras 3."""
    f = _load_npz(_fetch("imdb.npz", path))
    x_train, labels_train = f["x_train"], f["y_train"]
    x_test, labels_test = f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]
    x_train = _offset(x_train, start_char, index_from)
    x_test = _offset(x_test, start_char, index_from)
    if maxlen:
        x_train, labels_train = _drop_long(maxlen, x_train, labels_train)
        x_test, labels_test = _drop_long(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"imdb.load_data: After filtering for sequences shorter than "
                             f"maxlen={maxlen}, no sequence was kept. Increase maxlen.")
    xs = _index_words(x_train + x_test, num_words, skip_top, oov_char, "imdb.load_data")
    labels = np.concatenate([labels_train, labels_test])
    idx = len(x_train)
    return ((np.array(xs[:idx], dtype="object"), labels[:idx]),
            (np.array(xs[idx:], dtype="object"), labels[idx:]))


def _imdb_get_word_index(path="imdb_word_index.json"):
    """The IMDB word -> id dict (ids before the ``index_from`` shift), as
    ``keras.datasets.imdb.get_word_index``."""
    with open(_fetch("imdb_word_index.json", path)) as f:
        return json.load(f)


def _reuters_load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None,
                       test_split=0.2, seed=113, start_char=1, oov_char=2, index_from=3):
    """Reuters newswires as ``keras.datasets.reuters.load_data``: all wires shuffled with
    ``np.random.RandomState(seed)``, ids shifted and cut as :func:`imdb.load_data`, then the
    first ``int(n * (1 - test_split))`` are the training set; object arrays of id lists and
    int labels."""
    f = _load_npz(_fetch("reuters.npz", path))
    xs, labels = f["x"], f["y"]
    indices = np.arange(len(xs))
    np.random.RandomState(seed).shuffle(indices)
    xs, labels = xs[indices], labels[indices]
    if start_char is not None or index_from:
        xs = _offset(xs, start_char, index_from)
    if maxlen:
        xs, labels = _drop_long(maxlen, xs, labels)
    xs = _index_words(xs, num_words, skip_top, oov_char, "reuters.load_data")
    idx = int(len(xs) * (1 - test_split))
    return ((np.array(xs[:idx], dtype="object"), np.array(labels[:idx])),
            (np.array(xs[idx:], dtype="object"), np.array(labels[idx:])))


def _reuters_get_word_index(path="reuters_word_index.json"):
    """The Reuters word -> id dict (ids before the ``index_from`` shift), as
    ``keras.datasets.reuters.get_word_index``."""
    with open(_fetch("reuters_word_index.json", path)) as f:
        return json.load(f)


_REUTERS_LABELS = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply",
    "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas",
    "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin",
    "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber", "heat", "jobs",
    "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead")


def _reuters_get_label_names():
    """The 46 Reuters topic names by label id, as ``keras.datasets.reuters.get_label_names``
    (a tuple)."""
    return _REUTERS_LABELS


def _boston_housing_load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """Boston housing as ``keras.datasets.boston_housing.load_data``: float64 features
    (n, 13) and prices (n,), shuffled with ``np.random.RandomState(seed)``, the last
    ``test_split`` of them the test set."""
    _check_split("boston_housing.load_data", test_split)
    with np.load(_fetch("boston_housing.npz", path), allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    return _split_xy(x, y, test_split, seed)


def _california_housing_load_data(version="large", path="california_housing.npz",
                                  test_split=0.2, seed=113):
    """California housing as ``keras.datasets.california_housing.load_data``: features
    (n, 8) and values (n,); ``version="small"`` keeps the first 600 rows; shuffled and cut
    as :func:`boston_housing.load_data`."""
    _check_split("california_housing.load_data", test_split)
    if version not in ("small", "large"):
        raise ValueError(f"california_housing.load_data: Argument `version` must be one of "
                         f"'small', 'large'. Received: version={version}")
    with np.load(_fetch("california_housing.npz", path), allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    if version == "small":
        x, y = x[:600], y[:600]
    return _split_xy(x, y, test_split, seed)


# --- the gradtape.keras.datasets modules ---------------------------------------------------------

_PACKAGE = "gradtape.keras.datasets"


def _module(name, doc, **attrs):
    mod = types.ModuleType(name, doc)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    mod.__package__ = name.rpartition(".")[0] or name
    for key, fn in attrs.items():
        if isinstance(fn, types.FunctionType) and fn.__module__ == __name__:
            fn.__name__ = fn.__qualname__ = key
        setattr(mod, key, fn)
    mod.__all__ = sorted(attrs)
    return mod


def _build():
    parts = {
        "boston_housing": ("Boston housing price regression dataset.",
                           {"load_data": _boston_housing_load_data}),
        "california_housing": ("California housing price regression dataset.",
                               {"load_data": _california_housing_load_data}),
        "cifar10": ("CIFAR10 small images classification dataset.",
                    {"load_data": _cifar10_load_data}),
        "cifar100": ("CIFAR100 small images classification dataset.",
                     {"load_data": _cifar100_load_data}),
        "fashion_mnist": ("Fashion-MNIST dataset.", {"load_data": _fashion_mnist_load_data}),
        "imdb": ("IMDB sentiment classification dataset.",
                 {"load_data": _imdb_load_data, "get_word_index": _imdb_get_word_index}),
        "mnist": ("MNIST handwritten digits dataset.", {"load_data": _mnist_load_data}),
        "reuters": ("Reuters topic classification dataset.",
                    {"load_data": _reuters_load_data, "get_word_index": _reuters_get_word_index,
                     "get_label_names": _reuters_get_label_names}),
    }
    subs = {name: _module(f"{_PACKAGE}.{name}", doc, **attrs)
            for name, (doc, attrs) in parts.items()}
    package = _module(_PACKAGE, "Small NumPy datasets, as keras.datasets: "
                      + ", ".join(subs) + ".", **subs)
    package.__path__ = []
    package.__package__ = _PACKAGE
    return package, subs


datasets, _SUBS = _build()
# ``gradtape.keras.<name>`` import names for gradtape.keras' sys.modules table.
SUBMODULES = {"datasets": datasets, **{f"datasets.{k}": v for k, v in _SUBS.items()}}
