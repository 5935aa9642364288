"""Keras' structured-data preprocessing (Keras 3 semantics, as ``tf.keras`` in TF 2.21):

- ``HashedCrossing`` (``keras.layers.HashedCrossing``): feature crosses by the hashing trick,
  exactly as TensorFlow's ``tf.sparse.cross_hashed`` (which Keras calls): each value's
  64-bit feature hash (an integer's own bits, a string's FarmHash ``Fingerprint64``) is
  folded into the key ``0xDECAFCAFFE`` with ``FingerprintCat64``, column by column, and the
  result taken modulo ``num_bins``; so the bins equal Keras'.
- ``FeatureSpace`` (``keras.utils.FeatureSpace``): a dict of raw features to one encoded
  vector (``output_mode="concat"``) or a dict of encoded features (``"dict"``), built on
  gradtape's preprocessing layers (``IntegerLookup``, ``StringLookup``, ``Hashing``,
  ``Discretization``, ``Normalization``, ``Rescaling``, ``CategoryEncoding``) and
  ``HashedCrossing`` for the crosses, with ``adapt``, calls on batched or single examples,
  ``get_inputs``/``get_encoded_features`` for the functional API, and ``save``/``get_config``.

Hashing reads the values on the host (Keras hashes on the CPU too); the bins land on the
inputs' device (for strings, which live on the host, the current device, as ``Hashing``).
"""
from __future__ import annotations

import numpy as np

from .layers import Layer, _unique_name
from .tensor import Tensor

__all__ = ["HashedCrossing", "FeatureSpace"]

# --- HashedCrossing ---------------------------------------------------------------------------

_K_MUL = np.uint64(0xC6A4A7935BD1E995)
_HASH_KEY = 0xDECAFCAFFE                  # tf.sparse.cross_hashed's default hash_key
_SHIFT = np.uint64(47)


def _shift_mix(v):
    return v ^ (v >> _SHIFT)


def _fingerprint_cat64(fp1, fp2):
    """TensorFlow's ``FingerprintCat64`` of two uint64 arrays (wrapping arithmetic)."""
    r = fp1 ^ _K_MUL
    r = r ^ (_shift_mix(fp2 * _K_MUL) * _K_MUL)
    r = r * _K_MUL
    r = _shift_mix(r) * _K_MUL
    return _shift_mix(r)


def _feature_hashes(values):
    """The uint64 feature hash of each value of the host array ``values`` (1-D): an
    integer's two's-complement bits, a string's FarmHash Fingerprint64."""
    from .strings import _fingerprint64
    if values.dtype.kind == "O":
        return _fingerprint64([v if isinstance(v, bytes) else str(v).encode("utf-8")
                               for v in values.tolist()])
    return values.astype(np.int64).view(np.uint64)


def _cross_hashed(columns, num_bins):
    """``tf.sparse.cross_hashed`` of dense columns of one value per row (host arrays of
    equal length), as int64: the hash modulo ``num_bins`` (``2**63 - 1`` when 0)."""
    h = np.full(len(columns[0]), _HASH_KEY, np.uint64)
    with np.errstate(over="ignore"):
        for col in columns:
            h = _fingerprint_cat64(h, _feature_hashes(col))
    return (h % np.uint64(num_bins if num_bins > 0 else 2 ** 63 - 1)).astype(np.int64)


class HashedCrossing(Layer):
    """Crosses of categorical features by the hashing trick, as Keras'
    ``HashedCrossing``: ``hash(concatenation of the features) % num_bins``, TensorFlow's
    ``tf.sparse.cross_hashed`` (so the bins equal Keras'). Called on a list or tuple of at
    least two integer or string tensors of one shape, ``()``, ``(batch,)`` or ``(batch, 1)``.
    ``output_mode``: ``"int"`` (int64 bins of the inputs' shape) or ``"one_hot"`` (float32
    rows of ``num_bins``; a last axis of 1 is replaced, a scalar gives one row).
    ``sparse=True`` is not supported (gradtape has no sparse tensors)."""

    autocast = False

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None,
                 **kwargs):
        from .layers_preprocessing import _no_sparse
        if dtype in ("int64", "int32"):        # Keras' int64 policy of "int": the bins are
            dtype = None                       # int64 whatever the policy
        super().__init__(name=name, dtype=dtype, **kwargs)
        if output_mode not in ("int", "one_hot"):
            raise ValueError(f"HashedCrossing: Unknown value for `output_mode` argument of "
                             f"HashedCrossing. Allowed values are: ('int', 'one_hot'). "
                             f"Received: output_mode={output_mode}")
        if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) or \
                num_bins < (1 if output_mode == "one_hot" else 0):
            raise ValueError(f"HashedCrossing: `num_bins` must be a positive integer (or 0 "
                             f"for unbounded int bins). Received: num_bins={num_bins!r}")
        _no_sparse(sparse, "HashedCrossing")
        self.num_bins = int(num_bins)
        self.output_mode = output_mode
        self.sparse = False

    _UNTRACKED = Layer._UNTRACKED | {"_out_device"}

    def __call__(self, inputs, *args, **kwargs):
        from .keras_graph import KerasTensor
        from .layers_preprocessing import _output_device
        from .tensor import convert_to_tensor
        self.__dict__["_out_device"] = _output_device()
        if isinstance(inputs, (list, tuple)):
            inputs = [x if isinstance(x, (Tensor, KerasTensor)) or not _plain(x)
                      else convert_to_tensor(x) for x in inputs]
        return super().__call__(inputs, *args, **kwargs)

    def compute_output_shape(self, input_shape):
        first = tuple(input_shape[0])
        if self.output_mode == "int":
            return first
        if not first:
            return (1, self.num_bins)
        return (first[:-1] if first[-1] == 1 else first) + (self.num_bins,)

    def call(self, inputs):
        from .layers_preprocessing import _const, _encode
        from .ragged import RaggedTensor
        who = f"HashedCrossing layer '{self.name}'"
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{who}: `HashedCrossing` should be called on a list or tuple of "
                             f"inputs. Received: inputs={inputs}")
        if len(inputs) < 2:
            raise ValueError(f"{who}: `HashedCrossing` should be called on at least two "
                             f"inputs. Received: inputs={inputs}")
        if any(isinstance(x, RaggedTensor) for x in inputs):
            raise ValueError(f"{who}: All `HashedCrossing` inputs should be dense tensors. "
                             f"Received: inputs={inputs}")
        shape = tuple(inputs[0].shape)
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise ValueError(f"{who}: All `HashedCrossing` inputs should have shape `()`, "
                             f"`(batch_size)` or `(batch_size, 1)`. Received shapes "
                             f"{[tuple(x.shape) for x in inputs]}")
        if any(tuple(x.shape) != shape for x in inputs[1:]):
            raise ValueError(f"{who}: All `HashedCrossing` inputs should have equal shape. "
                             f"Received shapes {[tuple(x.shape) for x in inputs]}")
        kinds = [x._value.dtype.kind for x in inputs]
        if any(k not in "iuO" for k in kinds):
            raise ValueError(f"{who}: All `HashedCrossing` inputs should have an integer or "
                             f"string dtype. Received dtypes "
                             f"{[x.dtype.name for x in inputs]}")
        columns = [np.asarray(x.numpy(), dtype=object if k == "O" else None).reshape(-1)
                   for x, k in zip(inputs, kinds)]      # hashing: on the host
        ids = _cross_hashed(columns, self.num_bins).reshape(shape)
        numeric = [x for x, k in zip(inputs, kinds) if k != "O"]
        dev = numeric[0]._device if numeric else (self.__dict__.get("_out_device") or
                                                  inputs[0]._device)
        ids = _const(dev, ids)
        if self.output_mode == "int":
            return ids
        return _encode(ids, "one_hot", self.num_bins, self._compute_dtype)

    def get_config(self):
        return {"num_bins": self.num_bins, "output_mode": self.output_mode,
                "sparse": self.sparse, "name": self.name,
                "dtype": "int64" if self.output_mode == "int" else self._dtype_policy.name}


def _plain(x) -> bool:
    """Whether ``x`` is a value to convert to a tensor (a number, string, list or array)."""
    return isinstance(x, (list, tuple, np.ndarray, np.generic, int, float, str, bytes))


# --- FeatureSpace -----------------------------------------------------------------------------

_MODULE = "keras.src.layers.preprocessing.feature_space"


def _kind(t) -> str:
    """The dtype kind of a tensor or symbolic tensor (``"O"`` for strings)."""
    return t._np_dtype.kind if hasattr(t, "_np_dtype") else t._value.dtype.kind


class Cross:
    """One feature cross of a :class:`FeatureSpace` (``FeatureSpace.cross``): the names of
    the crossed features, the number of hash bins and ``output_mode`` (``"int"`` or
    ``"one_hot"``); named ``"a_X_b"``."""

    def __init__(self, feature_names, crossing_dim, output_mode="one_hot"):
        if output_mode not in {"int", "one_hot"}:
            raise ValueError("Invalid value for argument `output_mode`. Expected one of "
                             f"{{'int', 'one_hot'}}. Received: output_mode={output_mode}")
        self.feature_names = tuple(feature_names)
        self.crossing_dim = crossing_dim
        self.output_mode = output_mode

    @property
    def name(self):
        return "_X_".join(self.feature_names)

    def get_config(self):
        return {"feature_names": self.feature_names, "crossing_dim": self.crossing_dim,
                "output_mode": self.output_mode}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _serialize_preprocessor(layer):
    """The layer's entry (Keras' layout, with ``build_config``). As Keras, an adapted lookup
    layer's vocabulary is not in it: a saved file holds it as the layer's assets
    (``assets/preprocessors/<layer>/vocabulary.txt``)."""
    from .saving import serialize_layer
    entry = serialize_layer(layer)
    entry["build_config"] = {"input_shape": [None, 1]} if layer.built else {}
    return entry


def _deserialize_preprocessor(entry):
    """The preprocessing layer of a serialized :class:`Feature`, built when it was (so a
    Normalization has the weights a saved file fills). (gradtape's earlier files kept an
    adapted vocabulary in the entry's ``"assets"``: set from there.)"""
    from .saving import deserialize_layer
    layer = deserialize_layer(entry)
    assets = entry.get("assets")
    if assets:
        layer.set_vocabulary(assets["vocabulary"], idf_weights=assets.get("idf_weights"))
    shape = (entry.get("build_config") or {}).get("input_shape")
    if shape is not None and not layer.built:
        layer.build(tuple(shape))
        layer.built = True
    return layer


class Feature:
    """One feature of a :class:`FeatureSpace` (``FeatureSpace.feature`` and the typed
    constructors): the dtype of its input, the preprocessing layer, and ``output_mode``
    (``"int"``, ``"one_hot"`` or ``"float"``)."""

    def __init__(self, dtype, preprocessor, output_mode):
        if output_mode not in {"int", "one_hot", "float"}:
            raise ValueError("Invalid value for argument `output_mode`. Expected one of "
                             f"{{'int', 'one_hot', 'float'}}. Received: "
                             f"output_mode={output_mode}")
        self.dtype = dtype
        if isinstance(preprocessor, dict):
            preprocessor = _deserialize_preprocessor(preprocessor)
        if not isinstance(preprocessor, Layer):
            raise TypeError(f"FeatureSpace.feature: preprocessor must be a Keras layer, got "
                            f"{type(preprocessor).__name__}")
        self.preprocessor = preprocessor
        self.output_mode = output_mode

    def get_config(self):
        return {"dtype": self.dtype,
                "preprocessor": _serialize_preprocessor(self.preprocessor),
                "output_mode": self.output_mode}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _serialize(obj):
    return {"module": _MODULE, "class_name": type(obj).__name__, "config": obj.get_config(),
            "registered_name": type(obj).__name__}


def _deserialize(entry, cls, who):
    if not isinstance(entry, dict) or entry.get("class_name") != cls.__name__:
        raise ValueError(f"FeatureSpace: {who} is not a serialized {cls.__name__}: "
                         f"{entry!r:.200}")
    return cls.from_config(entry.get("config") or {})


def _layers():
    from . import layers
    return layers


def _cardinality(pre, layers):
    """The number of ids a standard preprocessing layer makes (None for another layer)."""
    if isinstance(pre, (layers.IntegerLookup, layers.StringLookup)):
        return pre.vocabulary_size()
    if isinstance(pre, layers.CategoryEncoding):
        return pre.num_tokens
    if isinstance(pre, layers.Discretization):
        return pre.num_bins if pre.num_bins is not None else len(pre.bin_boundaries) + 1
    if isinstance(pre, (HashedCrossing, layers.Hashing)):
        return pre.num_bins
    return None


class FeatureSpace(Layer):
    """One-stop preprocessing of structured data, as Keras' ``keras.utils.FeatureSpace``.

    ``features`` maps each feature name to a :class:`Feature` (``FeatureSpace.float()``,
    ``float_rescaled``, ``float_normalized``, ``float_discretized``,
    ``integer_categorical``, ``string_categorical``, ``integer_hashed``,
    ``string_hashed`` or ``FeatureSpace.feature(dtype, preprocessor, output_mode)``), or to
    the name of a type (its defaults; ``hashing_dim`` and ``num_discretization_bins`` size
    the hashed and discretized ones). ``crosses``: ``FeatureSpace.cross(...)`` objects or
    tuples of feature names (``crossing_dim`` bins), crossed by :class:`HashedCrossing` on
    the preprocessed (indexed) features. ``output_mode="concat"`` returns one float vector
    per example: the features in sorted name order, then the crosses in sorted name order,
    each ``"one_hot"`` one multi-hot encoded; ``"dict"`` returns them by name.

    :meth:`adapt` learns the vocabularies, bins and statistics from a ``gt.data.Dataset`` of
    dicts (batched or not) or a dict of arrays. Calling the space on a dict of values
    (batched, rank 1, or one example of scalars) encodes them; :meth:`get_inputs` and
    :meth:`get_encoded_features` give the ``keras.Input`` dict and the encoded symbolic
    tensor for a functional model. :meth:`save` writes a ``.keras`` file that
    ``keras.models.load_model`` reads back."""

    _UNTRACKED = Layer._UNTRACKED | {"features", "crosses", "crosses_by_name", "_inputs",
                                     "encoded_features", "_is_adapted", "_built_encoders",
                                     "_preprocessed_features_names",
                                     "_crossed_features_names"}

    # --- the feature types ----------------------------------------------------------------
    @classmethod
    def cross(cls, feature_names, crossing_dim, output_mode="one_hot"):
        return Cross(feature_names, crossing_dim, output_mode=output_mode)

    @classmethod
    def feature(cls, dtype, preprocessor, output_mode):
        return Feature(dtype, preprocessor, output_mode)

    @classmethod
    def float(cls, name=None):
        name = name or _unique_name("float")
        return Feature(dtype="float32",
                       preprocessor=_layers().Identity(name=f"{name}_preprocessor"),
                       output_mode="float")

    @classmethod
    def float_rescaled(cls, scale=1.0, offset=0.0, name=None):
        name = name or _unique_name("float_rescaled")
        return Feature(dtype="float32", preprocessor=_layers().Rescaling(
            scale=scale, offset=offset, name=f"{name}_preprocessor"), output_mode="float")

    @classmethod
    def float_normalized(cls, name=None):
        name = name or _unique_name("float_normalized")
        return Feature(dtype="float32", preprocessor=_layers().Normalization(
            axis=-1, name=f"{name}_preprocessor"), output_mode="float")

    @classmethod
    def float_discretized(cls, num_bins, bin_boundaries=None, output_mode="one_hot",
                          name=None):
        name = name or _unique_name("float_discretized")
        return Feature(dtype="float32", preprocessor=_layers().Discretization(
            num_bins=num_bins, bin_boundaries=bin_boundaries, name=f"{name}_preprocessor"),
            output_mode=output_mode)

    @classmethod
    def integer_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot",
                            name=None):
        name = name or _unique_name("integer_categorical")
        return Feature(dtype="int32", preprocessor=_layers().IntegerLookup(
            name=f"{name}_preprocessor", max_tokens=max_tokens,
            num_oov_indices=num_oov_indices), output_mode=output_mode)

    @classmethod
    def string_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot",
                           name=None):
        name = name or _unique_name("string_categorical")
        return Feature(dtype="string", preprocessor=_layers().StringLookup(
            name=f"{name}_preprocessor", max_tokens=max_tokens,
            num_oov_indices=num_oov_indices), output_mode=output_mode)

    @classmethod
    def string_hashed(cls, num_bins, output_mode="one_hot", name=None):
        name = name or _unique_name("string_hashed")
        return Feature(dtype="string", preprocessor=_layers().Hashing(
            name=f"{name}_preprocessor", num_bins=num_bins), output_mode=output_mode)

    @classmethod
    def integer_hashed(cls, num_bins, output_mode="one_hot", name=None):
        name = name or _unique_name("integer_hashed")
        return Feature(dtype="int32", preprocessor=_layers().Hashing(
            name=f"{name}_preprocessor", num_bins=num_bins), output_mode=output_mode)

    # --- construction ---------------------------------------------------------------------
    def __init__(self, features, output_mode="concat", crosses=None, crossing_dim=32,
                 hashing_dim=32, num_discretization_bins=32, name=None):
        if not features:
            raise ValueError("FeatureSpace: The `features` argument cannot be None or empty.")
        if output_mode not in {"dict", "concat"}:
            raise ValueError("FeatureSpace: Invalid value for argument `output_mode`. "
                             "Expected one of {'dict', 'concat'}. Received: "
                             f"output_mode={output_mode}")
        super().__init__(name=name)
        self.crossing_dim = crossing_dim
        self.hashing_dim = hashing_dim
        self.num_discretization_bins = num_discretization_bins
        self.features = {fname: self._standardize_feature(fname, value)
                         for fname, value in features.items()}
        self.crosses = []
        for cross in crosses or ():
            if isinstance(cross, dict):
                cross = _deserialize(cross, Cross, "a cross")
            if not isinstance(cross, Cross):
                if not crossing_dim:
                    raise ValueError("FeatureSpace: When specifying `crosses`, the argument "
                                     "`crossing_dim` (dimensionality of the crossing space) "
                                     "should be specified as well.")
                cross = Cross(cross, crossing_dim=crossing_dim)
            if any(key not in self.features for key in cross.feature_names):
                raise ValueError("FeatureSpace: All features referenced in the `crosses` "
                                 "argument should be present in the `features` dict. "
                                 f"Received unknown features: {cross.feature_names}")
            self.crosses.append(cross)
        self.crosses_by_name = {cross.name: cross for cross in self.crosses}
        self.output_mode = output_mode
        self.preprocessors = {fname: f.preprocessor for fname, f in self.features.items()}
        self.crossers = {cross.name: HashedCrossing(cross.crossing_dim, name=cross.name)
                         for cross in self.crosses}
        self.one_hot_encoders = {}
        self.concat = None
        self._inputs = None
        self.encoded_features = None
        self._is_adapted = False
        self._built_encoders = False
        self._preprocessed_features_names = sorted(self.features)
        self._crossed_features_names = sorted(self.crosses_by_name)
        self._check_specs()

    def _check_specs(self):
        """Keras' errors for encodings that cannot work (raised when Keras first builds;
        here at construction, as they depend on the layer types only)."""
        ints = (_layers().IntegerLookup, _layers().StringLookup, _layers().Hashing,
                HashedCrossing)
        for name in self._preprocessed_features_names + self._crossed_features_names:
            spec = self.features.get(name) or self.crosses_by_name[name]
            pre = self.preprocessors.get(name) or self.crossers.get(name)
            if spec.output_mode == "one_hot" and _cardinality(pre, _layers()) is None:
                raise ValueError(f"FeatureSpace: Feature '{name}' has `output_mode='one_hot'`. "
                                 "However it isn't a standard feature and the dimensionality "
                                 "of its output space is not known, thus it cannot be "
                                 "one-hot encoded. Try using `output_mode='int'`.")
            if self.output_mode == "concat" and spec.output_mode == "int" and \
                    isinstance(pre, ints):
                raise ValueError(f"FeatureSpace: Cannot concatenate features because feature "
                                 f"'{name}' has not been encoded (it has dtype int64). "
                                 "Consider using `output_mode='dict'`.")

    def _standardize_feature(self, name, feature):
        if isinstance(feature, Feature):
            return feature
        if isinstance(feature, dict):
            return _deserialize(feature, Feature, f"feature {name!r}")
        makers = {"float": lambda: self.float(name=name),
                  "float_normalized": lambda: self.float_normalized(name=name),
                  "float_rescaled": lambda: self.float_rescaled(name=name),
                  "float_discretized": lambda: self.float_discretized(
                      name=name, num_bins=self.num_discretization_bins),
                  "integer_categorical": lambda: self.integer_categorical(name=name),
                  "string_categorical": lambda: self.string_categorical(name=name),
                  "integer_hashed": lambda: self.integer_hashed(self.hashing_dim, name=name),
                  "string_hashed": lambda: self.string_hashed(self.hashing_dim, name=name)}
        if not isinstance(feature, str) or feature not in makers:
            raise ValueError(f"FeatureSpace: Invalid feature type: {feature}")
        return makers[feature]()

    @property
    def inputs(self):
        """The ``keras.Input`` of each feature (shape ``(1,)``, the feature's dtype)."""
        if self._inputs is None:
            from .keras_graph import Input
            self._inputs = {fname: Input(shape=(1,), dtype=f.dtype, name=fname)
                            for fname, f in self.features.items()}
        return self._inputs

    # --- adapting -------------------------------------------------------------------------
    def _list_adaptable_preprocessors(self):
        layers = _layers()
        names = []
        for fname in self.features:
            pre = self.preprocessors[fname]
            if isinstance(pre, layers.Normalization) and pre._given is not None:
                continue            # a Normalization made with its mean and variance
            if isinstance(pre, layers.Discretization) and pre.num_bins is None:
                continue            # one made with its bin boundaries
            if isinstance(pre, layers.TextVectorization) and pre._has_input_vocabulary:
                continue            # one made with its vocabulary
            if hasattr(pre, "adapt"):
                names.append(fname)
        return names

    def adapt(self, dataset):
        """Adapt each adaptable preprocessor (the lookups' vocabularies, the discretized
        features' bins, the normalized features' statistics) to its feature in ``dataset``:
        a ``gt.data.Dataset`` of dicts (examples or batches) or a dict of arrays/lists. As
        Keras: unbatched examples are read in batches of 32, each feature as a column."""
        from .data import Dataset
        from .ops.shape import expand_dims
        if not isinstance(dataset, Dataset):
            if not isinstance(dataset, dict):
                raise ValueError("FeatureSpace: `adapt()` can only be called on a "
                                 "tf.data.Dataset or a dict of arrays/lists. Received "
                                 f"instead: {dataset!r:.200} (of type {type(dataset)})")
            dataset = Dataset.from_tensor_slices(dataset)
        for fname in self._list_adaptable_preprocessors():
            column = dataset.map(lambda x, fname=fname: x[fname])
            first = next(iter(column))
            if len(first.shape) == 0:
                column = column.batch(32)
            if len(first.shape) in (0, 1):
                column = column.map(lambda x: expand_dims(x, -1))
            self.preprocessors[fname].adapt(column)
        self._is_adapted = True
        self._reset_encoders()
        self._build_encoders()

    def _reset_encoders(self):
        self.one_hot_encoders = {}
        self.concat = None
        self.encoded_features = None
        self._built_encoders = False

    def _check_if_adapted(self):
        if not self._is_adapted:
            if self._list_adaptable_preprocessors():
                raise ValueError("FeatureSpace: You need to call `.adapt(dataset)` on the "
                                 "FeatureSpace before you can start using it.")
            self._is_adapted = True

    def _build_encoders(self):
        """Make the multi-hot encoder of each ``"one_hot"`` feature and cross (sized by its
        preprocessor) and the concatenation."""
        if self._built_encoders:
            return
        layers = _layers()
        encoders = {}
        for name in self._preprocessed_features_names + self._crossed_features_names:
            spec = self.features.get(name) or self.crosses_by_name[name]
            pre = self.preprocessors.get(name) or self.crossers.get(name)
            if spec.output_mode != "one_hot":
                continue
            size = _cardinality(pre, layers)
            encoders[name] = layers.CategoryEncoding(num_tokens=size, output_mode="multi_hot")
        self.one_hot_encoders = encoders
        self.concat = layers.Concatenate(axis=-1) if self.output_mode == "concat" else None
        self._built_encoders = True
        self.built = True

    def _check_if_built(self):
        self._check_if_adapted()
        self._build_encoders()

    # --- encoding -------------------------------------------------------------------------
    def get_inputs(self):
        """The dict of ``keras.Input`` (one per feature, shape ``(1,)``)."""
        self._check_if_built()
        return self.inputs

    def get_encoded_features(self):
        """The encoded features of :meth:`get_inputs` as symbolic tensors (one tensor in
        ``"concat"`` mode, a dict in ``"dict"`` mode), for a functional model."""
        self._check_if_built()
        if self.encoded_features is None:
            pre = self._preprocess_features(self.inputs)
            self.encoded_features = self._merge_features(pre, self._cross_features(pre))
        return self.encoded_features

    def _preprocess_features(self, features):
        return {name: self.preprocessors[name](features[name]) for name in self.features}

    def _cross_features(self, features):
        return {cross.name: self.crossers[cross.name](
            [features[name] for name in cross.feature_names]) for cross in self.crosses}

    def _merge_features(self, preprocessed, crossed):
        out = {}
        for name in self._preprocessed_features_names + self._crossed_features_names:
            feature = preprocessed[name] if name in preprocessed else crossed[name]
            encoder = self.one_hot_encoders.get(name)
            if encoder is not None:
                if _kind(feature) not in "iu":
                    raise ValueError(f"FeatureSpace: Feature '{name}' has "
                                     "`output_mode='one_hot'`. Thus its preprocessor should "
                                     "return an integer dtype. Instead it returns a "
                                     f"{feature.dtype.name} dtype.")
                feature = encoder(feature)
            if self.output_mode == "concat" and _kind(feature) not in "fc":
                raise ValueError(f"FeatureSpace: Cannot concatenate features because feature "
                                 f"'{name}' has not been encoded (it has dtype "
                                 f"{feature.dtype.name}). Consider using "
                                 "`output_mode='dict'`.")
            out[name] = feature
        if self.output_mode == "dict":
            return out
        return self.concat(list(out.values()))

    def _convert_input(self, name, x):
        from .ops.core import cast
        from .tensor import convert_to_tensor
        if name not in self.features:
            raise ValueError(f"FeatureSpace '{self.name}': got the feature {name!r}, which is "
                             f"not one of its features {list(self.features)}")
        if not isinstance(x, Tensor):
            x = convert_to_tensor(x if _plain(x) else np.asarray(x))
        if self.features[name].dtype == "float32" and x._value.dtype.kind in "iuf" and \
                x._value.dtype != np.float32:
            x = cast(x, np.float32)           # (Keras' float32 preprocessors cast so)
        return x

    def __call__(self, data):
        from .ops.shape import expand_dims, reshape, squeeze
        self._check_if_built()
        if not isinstance(data, dict):
            raise ValueError(f"FeatureSpace: A FeatureSpace can only be called with a dict. "
                             f"Received: data={data!r:.200} (of type {type(data)})")
        missing = [name for name in self.features if name not in data]
        if missing:
            raise ValueError(f"FeatureSpace '{self.name}': the data lacks the features "
                             f"{missing}")
        data = {name: self._convert_input(name, x) for name, x in data.items()}
        rebatched = False
        for name, x in data.items():
            if len(x.shape) == 0:
                data[name] = reshape(x, (1, 1))
                rebatched = True
            elif len(x.shape) == 1:
                data[name] = expand_dims(x, -1)
        preprocessed = self._preprocess_features(data)
        merged = self._merge_features(preprocessed, self._cross_features(preprocessed))
        if rebatched:
            if self.output_mode == "concat":
                return squeeze(merged, 0)
            merged = {name: squeeze(x, 0) if len(x.shape) == 2 and x.shape[0] == 1 else x
                      for name, x in merged.items()}
        return merged

    # --- saving ---------------------------------------------------------------------------
    def get_config(self):
        from .saving import _SCOPE
        config = {"features": {name: _serialize(f) for name, f in self.features.items()},
                  "output_mode": self.output_mode,
                  "crosses": [_serialize(c) for c in self.crosses],
                  "crossing_dim": self.crossing_dim, "hashing_dim": self.hashing_dim,
                  "num_discretization_bins": self.num_discretization_bins}
        if self._is_adapted and getattr(_SCOPE, "saving", None) is not None:
            config["adapted"] = True      # in a saved file (Keras' build config): loading
        return config                     # gives back an adapted space

    @classmethod
    def from_config(cls, config):
        """The space of :meth:`get_config`, to adapt again (as Keras); the one a saved file
        holds is adapted, its statistics filled from the file's weights and its
        vocabularies from the file's assets (read after this; so, as Keras, its encoders
        are made at first use)."""
        config = dict(config)
        adapted = config.pop("adapted", False)
        space = cls(**config)
        if adapted:
            space._is_adapted = True
        return space

    def build_from_config(self, config):
        """Keras' ``build_from_config`` of a saved space (its ``build_config``: each
        feature's preprocessor's, built when it has an input shape): the space is adapted
        (its state is read from the file after this)."""
        for name, cfg in (config or {}).items():
            pre = self.features[name].preprocessor if name in self.features else None
            shape = (cfg or {}).get("input_shape") if isinstance(cfg, dict) else None
            if pre is not None and shape is not None and not pre.built:
                pre.build(tuple(shape))
                pre.built = True
        self._is_adapted = True

    def save(self, filepath):
        """Write the space to a ``.keras`` file, which ``keras.models.load_model`` reads
        back (adapted: bins in its configuration, statistics as weights, vocabularies as
        assets, as Keras)."""
        from .saving import save_model
        self._check_if_built()
        return save_model(self, filepath)
