"""``gt.audio``: WAV files, as TensorFlow's ``tf.audio``, and Keras'
``audio_dataset_from_directory``.

- ``decode_wav``: TF's ``DecodeWav`` reader: a RIFF/WAVE file of 16-bit PCM samples to
  float32 ``[samples, channels]`` (each sample ``/ 32768``, so in ``[-1, 1)``) and the sample
  rate (int32 scalar); ``desired_channels`` keeps the first channels or repeats the last one,
  ``desired_samples`` cuts or pads with zeros. TF's header checks and error messages.
- ``encode_wav``: TF's ``EncodeWav``: float32 ``[samples, channels]`` to the bytes of a
  44-byte-header 16-bit PCM file (``round(x * 32768)`` clamped to the int16 range, NaN to 0),
  byte for byte TF's.
- ``audio_dataset_from_directory`` (``keras.utils``): Keras 3's dataset of ``.wav`` files
  in class folders.

Everything runs on the host (TF runs these kernels on the CPU); the audio lands on the
current device, the encoded bytes are a CPU string tensor. Nothing here is differentiable.
"""
from __future__ import annotations

import collections
import struct

import numpy as np

from .registry import InvalidArgumentError
from .tensor import Tensor

__all__ = ["decode_wav", "encode_wav", "audio_dataset_from_directory"]

DecodeWav = collections.namedtuple("DecodeWav", ["audio", "sample_rate"])

_TOO_SHORT = "Data too short when trying to read string"
_UINT32_MAX = 2 ** 32 - 1


class _Reader:
    """TF's ``wav_io`` cursor: reads that run past the end fail with its message."""

    def __init__(self, data: bytes):
        self.data = data
        self.offset = 0

    def skip(self, n):
        if self.offset + n > len(self.data):
            raise InvalidArgumentError(_TOO_SHORT)
        self.offset += n

    def take(self, n) -> bytes:
        start = self.offset
        self.skip(n)
        return self.data[start:self.offset]

    def value(self, fmt):
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def expect(self, text: bytes):
        found = self.take(len(text))
        if found != text:
            raise InvalidArgumentError(f"Header mismatch: Expected {text.decode()} but found "
                                       f"{found.decode('latin-1')}")


def _parse_wav(data: bytes):
    """TF's ``DecodeLin16WaveAsFloatVector``: (int16 samples ``[frames, channels]``, sample
    rate)."""
    r = _Reader(data)
    r.expect(b"RIFF")
    r.value("I")                                   # (the file size, not checked)
    r.expect(b"WAVE")
    r.take(4)                                      # (the format chunk's id, not checked)
    fmt_size = r.value("I")
    if fmt_size not in (16, 18):
        raise InvalidArgumentError(f"Bad format chunk size for WAV: Expected 16 or 18, but "
                                   f"got{fmt_size}")
    audio_format = r.value("H")
    if audio_format != 1:
        raise InvalidArgumentError(f"Bad audio format for WAV: Expected 1 (PCM), but got"
                                   f"{audio_format}")
    channels = r.value("H")
    if channels < 1:
        raise InvalidArgumentError(f"Bad number of channels for WAV file: {channels}")
    rate = r.value("I")
    bytes_per_second = r.value("I")
    bytes_per_sample = r.value("H")
    bits = r.value("H")
    if bits != 16:
        raise InvalidArgumentError(f"Can only read 16-bit WAV files, but received {bits}")
    expected = (bits * channels + 7) // 8
    if bytes_per_sample != expected:
        raise InvalidArgumentError(f"Bad bytes per sample in WAV header: Expected {expected} "
                                   f"but got {bytes_per_sample}")
    if bytes_per_second != bytes_per_sample * rate:
        raise InvalidArgumentError(f"Bad bytes per second in WAV header: Expected "
                                   f"{bytes_per_sample * rate} but got {bytes_per_second} "
                                   f"(sample_rate={rate}, bytes_per_sample={bytes_per_sample})")
    if fmt_size == 18:
        r.offset += 2                              # (the unused extension size)
    samples = None
    while r.offset < len(data):
        chunk = r.take(4)
        size = r.value("I")
        if size > 2 ** 31 - 1:
            raise InvalidArgumentError(f"WAV data chunk '{chunk.decode('latin-1')}' is too "
                                       f"large: {size} bytes, but the limit is {2 ** 31 - 1}")
        if chunk != b"data":
            r.offset += size                       # (unchecked, as TF: past the end stops)
            continue
        if samples is not None:
            raise InvalidArgumentError("More than one data chunk found in WAV")
        frames = size // bytes_per_sample
        raw = r.take(2 * frames * channels)
        samples = np.frombuffer(raw, "<i2").reshape(frames, channels)
    if samples is None:
        raise InvalidArgumentError("No data chunk found in WAV")
    return samples, rate


def _scalar_int(value, who, what):
    if isinstance(value, Tensor):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.ndim:
        raise InvalidArgumentError(f"{who}: Input {what} should be a scalar tensor, got "
                                   f"[{','.join(str(d) for d in arr.shape)}] instead.")
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and float(arr) == int(arr)):
        raise TypeError(f"{who}: {what} must be an int32 scalar, got {value!r}")
    return int(arr)


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """Decode a 16-bit PCM WAV file (``tf.audio.decode_wav``): ``(audio, sample_rate)``,
    ``audio`` float32 ``[samples, channels]`` in ``[-1, 1)``, ``sample_rate`` an int32
    scalar. ``desired_channels`` (-1: the file's) keeps the first channels, or repeats the
    last one; ``desired_samples`` (-1: the file's) cuts the audio or pads it with zeros."""
    from .io import _numeric_out, _scalar_bytes
    who = "decode_wav"
    for what, v in (("desired_channels", desired_channels), ("desired_samples",
                                                                desired_samples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{who}: {what} must be an int, got {v!r}")
        if v < -1:
            raise InvalidArgumentError(f"{what} must be >= -1, got {v}")
    host = np.asarray(contents.numpy() if isinstance(contents, Tensor) else contents,
                      dtype=object)
    if host.ndim:
        raise InvalidArgumentError(f"contents must be scalar, got shape "
                                   f"[{','.join(str(d) for d in host.shape)}]")
    data = _scalar_bytes(contents, who, "`contents`")
    samples, rate = _parse_wav(bytes(data))
    frames, channels = samples.shape
    out_frames = frames if desired_samples == -1 else int(desired_samples)
    out_channels = channels if desired_channels == -1 else int(desired_channels)
    src = np.minimum(np.arange(out_channels), channels - 1)
    audio = np.zeros((out_frames, out_channels), np.float32)
    keep = min(frames, out_frames)
    audio[:keep] = samples[:keep][:, src].astype(np.float32) / np.float32(32768.0)
    return DecodeWav(_numeric_out(audio), _numeric_out(np.asarray(rate, np.uint32)
                                                       .astype(np.int32)))


def encode_wav(audio, sample_rate, name=None):
    """Encode float32 ``audio`` ``[samples, channels]`` as a 16-bit PCM WAV file
    (``tf.audio.encode_wav``): TF's 44-byte header and samples ``round(x * 32768)`` clamped
    to ``[-32768, 32767]`` (NaN to 0); a CPU string scalar of exactly TF's bytes."""
    from .io import _string_out
    who = "encode_wav"
    if isinstance(audio, Tensor):
        if audio._value.dtype != np.float32:
            raise InvalidArgumentError(f"{who}: cannot compute EncodeWav as input #0"
                                       f"(zero-based) was expected to be a float tensor but "
                                       f"is a {audio.dtype.name} tensor")
        x = audio.numpy()
    else:
        x = np.asarray(audio, dtype=np.float32)
    if x.ndim != 2:
        raise InvalidArgumentError(f"audio must be 2-dimensional"
                                   f"[{','.join(str(d) for d in x.shape)}]")
    rate = _scalar_int(sample_rate, who, "sample_rate")
    if not -2 ** 31 <= rate < 2 ** 31:
        raise InvalidArgumentError(f"{who}: sample_rate {rate} is out of the int32 range")
    rate_u = rate % 2 ** 64                           # (TF reads it as a size_t)
    frames, channels = x.shape
    if rate_u == 0 or rate_u > _UINT32_MAX:
        raise InvalidArgumentError(f"sample_rate must be in (0, 2^32), got: {rate_u}")
    if channels == 0 or channels > 2 ** 16 - 1:
        raise InvalidArgumentError(f"num_channels must be in (0, 2^16), got: {channels}")
    data_size = frames * channels * 2
    if 44 + data_size > _UINT32_MAX:
        raise InvalidArgumentError("Provided channels and frames cannot be encoded as a WAV.")
    scaled = x.astype(np.float64) * 32768.0
    rounded = np.trunc(scaled + np.copysign(0.5, scaled))        # C's roundf
    pcm = np.clip(np.nan_to_num(rounded, nan=0.0, posinf=32767.0, neginf=-32768.0),
                  -32768, 32767).astype("<i2")
    header = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data_size, b"WAVE", b"fmt ", 16,
                         1, channels, rate_u, (rate_u * 2 * channels) % 2 ** 32,
                         2 * channels, 16, b"data", data_size)
    return _string_out(header + pcm.tobytes())


# --- audio_dataset_from_directory -------------------------------------------------------------

_AUDIO_FORMATS = (".wav",)


def _ragged_audio(audios):
    """``[batch, (samples), (channels)]`` RaggedTensor of decoded files (Keras' batch of
    ``RaggedTensor.from_tensor`` elements)."""
    from .ops.shape import concat, reshape
    from .ragged import RaggedTensor
    frames = np.array([a.shape[0] for a in audios], np.int64)
    chans = np.concatenate([np.full(a.shape[0], a.shape[1], np.int64) for a in audios])
    flat = concat([reshape(a, [-1]) for a in audios], 0)
    return RaggedTensor.from_nested_row_lengths(flat, [frames, chans])


def _ragged_dataset_class():
    from .data import _Unary
    from .tensor import TensorSpec

    class _RaggedAudio(_Unary):
        """The decoded files of a dataset of paths (or batches of paths) with their labels,
        as RaggedTensors (``gt.data`` transformations hold dense tensors, so this one yields
        its elements as they are)."""

        def __init__(self, parent, load, batched, labelled):
            super().__init__(parent)
            self._load, self._batched, self._labelled = load, batched, labelled

        def _audio(self, paths):
            from .ragged import RaggedTensor
            if self._batched:
                return _ragged_audio([self._load(p) for p in paths.numpy().tolist()])
            return RaggedTensor.from_tensor(self._load(paths))

        def _generate(self):
            for element in self._parent._iter():
                if self._labelled:
                    yield self._audio(element[0]), element[1]
                else:
                    yield self._audio(element)

        def _element_spec(self):
            spec = TensorSpec([None] * (3 if self._batched else 2), "float32")
            if self._labelled:
                return spec, self._parent._element_spec()[1]
            return spec

    return _RaggedAudio


def _audio_dataset(paths, labels, label_mode, num_classes, length, ragged, shuffle, buffer,
                   seed, batch_size):
    """Keras' ``paths_and_labels_to_dataset`` and ``prepare_dataset``: (path, label) pairs,
    shuffled, each file read and decoded as it is reached; padded batches, or batches of
    equal-length audio, or (``ragged``) RaggedTensors ``[batch, (samples), (channels)]``."""
    from .data import AUTOTUNE
    from .io import read_file
    from .keras_utils import _load_paths, _paths_dataset
    ds = _paths_dataset(paths, labels, label_mode, num_classes, shuffle, buffer, seed)

    def load(path):
        return decode_wav(read_file(path), desired_samples=length).audio

    if ragged:
        if batch_size is not None:
            ds = ds.batch(batch_size)
        return _ragged_dataset_class()(ds, load, batch_size is not None,
                                       label_mode is not None)
    ds = _load_paths(ds, load, label_mode)
    if batch_size is not None:
        ds = ds.padded_batch(batch_size) if length == -1 else ds.batch(batch_size)
    return ds.prefetch(AUTOTUNE)


def audio_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, batch_size=32, sampling_rate=None,
                                 output_sequence_length=None, ragged=False, shuffle=True,
                                 seed=None, validation_split=None, subset=None,
                                 follow_links=False, verbose=True):
    """A :class:`gt.data.Dataset` of ``(audio, labels)`` batches from a folder of ``.wav``
    files with one sub-folder per class, as Keras 3's ``audio_dataset_from_directory``: Keras'
    file order (sorted index, its seeded NumPy shuffle) and training/validation split, each
    file decoded with :func:`decode_wav` to float32 ``(samples, channels)``: cut or
    zero-padded to ``output_sequence_length``, else padded to the longest of its batch, or
    (``ragged=True``) a ``gt.RaggedTensor`` ``[batch, (samples), (channels)]``. Labels as
    int32 ids, one-hot float32 (``"categorical"``) or float32 ``(n, 1)`` (``"binary"``);
    ``label_mode=None`` (or ``labels=None``) gives the audio alone. ``class_names`` is set
    on the result. The shuffle of the elements uses gradtape's generator (the file order
    before it is Keras'). ``sampling_rate`` (resampling, which needs ``tensorflow_io`` in
    Keras) is not supported."""
    from .keras_utils import _check_label_args, _index_labeled, _subset_datasets
    labels, label_mode = _check_label_args(labels, label_mode, class_names, "audio",
                                           "audio samples", "The ")
    if ragged and output_sequence_length is not None:
        raise ValueError("Cannot set both `ragged` and `output_sequence_length`")
    if output_sequence_length is not None and (
            isinstance(output_sequence_length, bool) or
            not isinstance(output_sequence_length, (int, np.integer)) or
            output_sequence_length < 0):
        raise ValueError(f"`output_sequence_length` should be a non-negative integer or None. "
                         f"Received: output_sequence_length={output_sequence_length}")
    if sampling_rate is not None:
        if not isinstance(sampling_rate, int):
            raise ValueError(f"`sampling_rate` should have an integer value. Received: "
                             f"sampling_rate={sampling_rate}")
        if sampling_rate <= 0:
            raise ValueError(f"`sampling_rate` should be higher than 0. Received: "
                             f"sampling_rate={sampling_rate}")
        raise ValueError("audio_dataset_from_directory: `sampling_rate` (resampling, done by "
                         "tensorflow_io in Keras) is not supported by gradtape; leave it None "
                         "to keep the files' rate")
    paths, label_array, names, seed = _index_labeled(
        directory, labels, label_mode, _AUDIO_FORMATS, class_names, shuffle, seed,
        validation_split, subset, follow_links, verbose)
    buffer = batch_size * 8 if batch_size is not None else 1024
    n_classes = len(names) if names else 0
    length = -1 if output_sequence_length is None else int(output_sequence_length)

    def make(part, p, lab):
        if not p:
            what = f"{part} " if subset == "both" else ""
            raise ValueError(f"No {what}audio files found in directory {directory}. "
                             f"Allowed format(s): {_AUDIO_FORMATS}")
        return _audio_dataset(p, lab, label_mode, n_classes,
                              length, ragged, shuffle and not (subset == "both" and
                                                               part == "validation"),
                              buffer, seed, batch_size)
    out = _subset_datasets(paths, label_array, names, validation_split, subset, make)
    return tuple(out) if subset == "both" else out
