"""cntk.io's deserializer definitions (CTFDeserializer, ..., StreamDef) as typed reader specs.

Each definition builds the DeserializerSpec(s) of ``cntkio._core`` (include/cntkio/reader_spec.hpp) that CNTK's
translation of the same cntk.io objects into a reader config (spec pipeline.md §1.3) compiles to: the same
options, stream order and defaults, so that Python and that config read the same sequences in the same order.
The reader is built from these specs. ``config_text()`` renders the equivalent CNTK config from them, for
reading and debugging only; it refuses values CNTK's config language cannot express, which the specs carry.
"""

import functools
import math
import numbers
import os
import warnings

import numpy as np

from . import _core


class Record(dict):
    """A dict whose items are also attributes (cntk.variables.Record); ``StreamDefs`` is this class. As CNTK's,
    its attributes cannot be assigned (``updated_with`` makes a changed copy); items can."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("record is immutable: use updated_with(%s=...) for a changed copy" % name)

    def updated_with(self, **kwargs):
        """A copy of this record with the given items added or replaced."""
        changed = dict(self)
        changed.update(kwargs)
        return type(self)(**changed)


StreamDefs = Record

DEFAULT_MAX_SEQUENCE_LENGTH = 65535
"""StreamDef's default ``max_sequence_length``: no limit (CNTK's HTK reader never applied the value)."""


class IgnoredArgumentWarning(UserWarning):
    """A cntk.io argument that the deserializer it was given to does not use (cntk.io ignored it silently);
    the message names it and the deserializer."""


def StreamDef(field=None, shape=None, is_sparse=False, transforms=None, context=None, scp=None, mlf=None,
              broadcast=None, defines_mb_size=False, max_sequence_length=DEFAULT_MAX_SEQUENCE_LENGTH):
    """One stream of a deserializer: ``field`` is its name in the file (CTF alias), ``shape`` its dimension
    (an int, or a tuple whose product is the dimension; dense arrays get that sample shape).

    ``transforms`` (image streams), ``context``, ``scp``, ``broadcast``, ``max_sequence_length`` (HTK feature
    streams: utterances of more frames are left out) and ``mlf`` (HTK label streams) belong to one deserializer
    each; given to another, they raise an IgnoredArgumentWarning naming them."""
    config = Record(stream_alias=field, is_sparse=bool(is_sparse))
    if shape is not None:
        config["dim"] = shape
    if transforms is not None:
        config["transforms"] = transforms
    if context is not None:
        config["context"] = context
    if scp is not None:
        config["scp"] = scp
    if mlf is not None:
        config["mlf"] = mlf
        config["is_sparse"] = True
    if broadcast is not None:
        config["broadcast"] = broadcast
    config["defines_mb_size"] = bool(defines_mb_size)
    config["max_sequence_length"] = _count(max_sequence_length, "StreamDef: max_sequence_length", allow_zero=False)
    return config


class StreamConfiguration:
    """One stream of a CTF or CBF deserializer as cntk.io's lower-level API described it:
    ``CTFDeserializer(file, [StreamConfiguration(name, dim, is_sparse, stream_alias, defines_mb_size), ...])``.
    An empty ``stream_alias`` means the stream's name in the file is ``name``. For CBF, ``dim`` and ``is_sparse``
    must match the file's stream (ValueError when the source is made)."""

    def __init__(self, name, dim, is_sparse=False, stream_alias="", defines_mb_size=False):
        self.m_stream_name = str(name)
        self.m_dim = _count(dim, "StreamConfiguration: dim", allow_zero=False)
        self.m_is_sparse = bool(is_sparse)
        self.m_stream_alias = "" if stream_alias is None else str(stream_alias)
        self.m_defines_mb_size = bool(defines_mb_size)

    name = property(lambda self: self.m_stream_name)
    dim = property(lambda self: self.m_dim)
    is_sparse = property(lambda self: self.m_is_sparse)
    stream_alias = property(lambda self: self.m_stream_alias)
    defines_mb_size = property(lambda self: self.m_defines_mb_size)

    def __repr__(self):
        return "StreamConfiguration(%r, %d, is_sparse=%s, stream_alias=%r, defines_mb_size=%s)" % (
            self.m_stream_name, self.m_dim, self.m_is_sparse, self.m_stream_alias, self.m_defines_mb_size)


def _stream_defs(streams, what):
    """StreamDefs from ``streams``: StreamDefs, or a list of StreamConfiguration (as cntk.io's lower API)."""
    if isinstance(streams, (list, tuple)):
        defs = Record()
        for c in streams:
            if not isinstance(c, StreamConfiguration):
                raise TypeError("%s: streams must be StreamDefs or a list of StreamConfiguration, got %r" % (what, c))
            if c.name in defs:
                raise ValueError("%s: two StreamConfigurations are named '%s'" % (what, c.name))
            defs[c.name] = StreamDef(field=c.stream_alias or c.name, shape=c.dim, is_sparse=c.is_sparse,
                                     defines_mb_size=c.defines_mb_size)
        return defs
    return streams


# StreamDef fields, the value each has when not given, and the deserializers that use them.
_STREAMDEF_FIELDS = (("dim", None), ("is_sparse", False), ("transforms", None), ("context", None), ("scp", None),
                     ("mlf", None), ("broadcast", None), ("defines_mb_size", False),
                     ("max_sequence_length", DEFAULT_MAX_SEQUENCE_LENGTH))
_STREAMDEF_ARGUMENT = {"dim": "shape"}


def _warn_unused_fields(what, name, stream, used, why=None, stacklevel=3):
    """IgnoredArgumentWarning for each StreamDef field of stream ``name`` given but not in ``used``; ``why``:
    field -> the reason, added to its message."""
    for key, unset in _STREAMDEF_FIELDS:
        value = stream.get(key, unset)
        # unset is None, False or a number: `==` (not `is`: a pickled int is another object)
        if key in used or value is None or (unset is not None and value == unset):
            continue
        warnings.warn("cntkio: %s: stream '%s': StreamDef(%s=...) is ignored, %s does not use it%s"
                      % (what, name, _STREAMDEF_ARGUMENT.get(key, key), what, (why or {}).get(key, "")),
                      IgnoredArgumentWarning, stacklevel=stacklevel + 1)


# ----------------------------------------------------------------------------------------------------------
# Arguments


def _count(value, what, allow_zero=True):
    if (isinstance(value, bool) or int(value) != value or value < 0 or (value == 0 and not allow_zero)
            or value >= 2 ** 64):
        raise ValueError("%s must be a %s integer below 2**64, got %r"
                         % (what, "non-negative" if allow_zero else "positive", value))
    return int(value)


def _text(value, what):
    """A file name (str or os.PathLike) or a stream field as given, any characters included (a NUL byte in a
    path is refused when the file is opened); only an empty one is refused."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if text == "":
        raise ValueError("%s must not be empty" % what)
    return text


def _stream_name(name, what):
    """A stream name: letters, digits, '_' and '.', as CNTK's config keys (the names cntk.io writes there)."""
    text = str(name)
    if not text or not all(c.isalnum() or c in "_." for c in text):
        raise ValueError("%s %r must consist of letters, digits, '_' and '.'" % (what, text))
    return text


def _config_key_order(name):
    """Sort key of CNTK's config dictionaries: bytes compared with ASCII letters lower-cased."""
    return str(name).encode("utf-8").lower()


def _dimension(shape, stream):
    if shape is None:
        raise ValueError("stream '%s': shape (dimension) must be given" % stream)
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not dims or any(int(d) != d or d <= 0 for d in dims) or math.prod(int(d) for d in dims) >= 2 ** 64:
        raise ValueError("stream '%s': shape must be positive integers (of a product below 2**64), got %r"
                         % (stream, shape))
    return int(math.prod(int(d) for d in dims)), tuple(int(d) for d in dims)


def _distinct_names(streams, what):
    """ValueError if two stream names differ only in case: CNTK's config language matches keys ignoring case,
    so the config cntk.io writes would silently replace one stream's definition with the other's."""
    seen = {}
    for name in streams:
        other = seen.setdefault(str(name).lower(), name)
        if other != name:
            raise ValueError("%s: stream names %r and %r differ only in case, which CNTK's config language "
                             "does not tell apart; rename one" % (what, other, name))


def _new(cls, **fields):
    """An instance of a _core spec class with the given fields set."""
    obj = cls()
    for key, value in fields.items():
        setattr(obj, key, value)
    return obj


def _spec(type_name, module, options, transforms=()):
    return _new(_core.DeserializerSpec, type=type_name, module=module, options=options,
                transforms=list(transforms))


# ----------------------------------------------------------------------------------------------------------
# Deserializers


class _Deserializer:
    """A deserializer definition: the DeserializerSpec(s) it adds to a reader and the sample shapes of its dense
    streams. cntk.io's HTKFeatureDeserializer with several streams is one spec per stream, joined one after
    another."""

    def __init__(self, specs, shapes, made_by):
        self._specs = list(specs)
        self.type = self._specs[0].type
        self.module = self._specs[0].module
        self.sample_shapes = shapes
        self._made_by = made_by  # (function, args, kwargs) that made it: pickles as that call

    def specs(self):
        """Copies of its DeserializerSpecs (cntkio._core), in reader order."""
        return [_core.DeserializerSpec(s) for s in self._specs]

    def config_text(self):
        """The deserializer section(s) in CNTK's config language (several joined by ':' for a group), rendered
        from the specs for reading and debugging; the reader is built from the specs, not from this text.
        ValueError where a value holds what the config language cannot express (a double quote, '$', a line
        break, '#' after a space or tab)."""
        return "\n:\n".join(_section_text(s) for s in self._specs)

    def __reduce__(self):
        function, args, kwargs = self._made_by
        return functools.partial(function, *args, **kwargs), ()

    def __repr__(self):
        try:
            text = self.config_text().replace("\n", " ")
        except ValueError:
            text = "(values that CNTK's config language cannot express)"
        return "<cntkio %s %s>" % (self.type, text)


def _data_files(filename, what):
    """(first file, further files) of a deserializer's ``filename``: a path, a glob pattern, or a list of them
    read as one corpus (cntkio extension)."""
    if isinstance(filename, (list, tuple)):
        if not filename:
            raise ValueError("%s: the list of data files is empty" % what)
        files = [_text(f, "%s: filename" % what) for f in filename]
        return files[0], files[1:]
    return _text(filename, "%s: filename" % what), []


def CTFDeserializer(filename, streams):
    """The CNTK text format deserializer (CNTKTextFormatDeserializer) for ``filename``; ``streams`` maps stream
    names to StreamDef(field=alias in the file, shape=dimension, is_sparse=..., defines_mb_size=...).

    ``filename`` may also be a glob pattern (``"shards/*.ctf"``) or a list of files and patterns: a corpus of
    several files read as one deserializer (chunks never span files; each file has its own index cache)."""
    made_by = (CTFDeserializer, (filename, streams), {})
    streams = _stream_defs(streams, "CTFDeserializer")
    _distinct_names(streams, "CTFDeserializer")
    inputs = []
    shapes = {}
    for name, s in streams.items():
        if s.get("stream_alias") is None:
            raise ValueError("CTFDeserializer: stream name for key %s must be specified" % name)
        _warn_unused_fields("CTFDeserializer", name, s, ("dim", "is_sparse", "defines_mb_size"))
        dim, shape = _dimension(s.get("dim"), name)
        if not s.get("is_sparse") and len(shape) > 1:
            shapes[name] = shape
        inputs.append(_new(_core.CtfStreamOptions, name=_stream_name(name, "CTFDeserializer: stream name"),
                           alias=_text(s["stream_alias"], "CTFDeserializer: stream %s field" % name), dim=dim,
                           storage=_core.StorageFormat.sparse if s.get("is_sparse") else _core.StorageFormat.dense,
                           defines_mb_size=bool(s.get("defines_mb_size"))))
    if not inputs:
        raise ValueError("CTFDeserializer: no streams given")
    first, more = _data_files(filename, "CTFDeserializer")
    options = _new(_core.CtfOptions, file=first, more_files=more,
                   streams=sorted(inputs, key=lambda i: _config_key_order(i.name)))  # CNTK's stream order
    return _Deserializer([_spec("CNTKTextFormatDeserializer", "CNTKTextFormatReader", options)], shapes, made_by)


def CBFDeserializer(filename, streams={}):  # noqa: B006 -- cntk.io's signature; never mutated
    """The CNTK binary format deserializer (CNTKBinaryFormatDeserializer) for ``filename``. Streams and their
    dimensions come from the file; ``streams`` only renames: ``name = StreamDef(field=name in the file)``.
    ``filename`` may be a glob pattern or a list of files read as one corpus, as for CTFDeserializer.
    A StreamDef without ``field`` keeps the file's name (cntk.io would write an invalid config). A ``shape`` or
    ``is_sparse=True`` given must match the file's stream (ValueError when the source is made)."""
    made_by = (CBFDeserializer, (filename, streams), {})
    streams = _stream_defs(streams, "CBFDeserializer")
    _distinct_names(streams, "CBFDeserializer")
    renames = []  # (name in the file, exposed name), in CNTK's order of the exposed names
    declared = {}  # exposed name -> (dimension or None, sparse or None), checked against the file
    for name, s in sorted(streams.items(), key=lambda item: _config_key_order(item[0])):
        _warn_unused_fields("CBFDeserializer", name, s, ("dim", "is_sparse"),
                            {"defines_mb_size": " (the file's streams count as CNTK counts them)"})
        dim = _dimension(s["dim"], name)[0] if s.get("dim") is not None else None
        declared[name] = (dim, True if s.get("is_sparse") else None)
        alias = s.get("stream_alias")
        if alias is not None and alias != name:
            renames.append((_text(alias, "CBFDeserializer: stream %s field" % name),
                            _stream_name(name, "CBFDeserializer: stream name")))
    first, more = _data_files(filename, "CBFDeserializer")
    options = _new(_core.CbfOptions, file=first, more_files=more, renames=renames)
    deserializer = _Deserializer([_spec("CNTKBinaryFormatDeserializer", "CNTKBinaryReader", options)], {}, made_by)
    deserializer.declared_streams = declared
    return deserializer


def HTKFeatureDeserializer(streams):
    """The HTK feature deserializer: speech features listed in SCP files (``logical=physical[start,end]``).

    ``streams`` maps stream names to ``StreamDef(scp=..., shape=..., context=(left, right), broadcast=...,
    defines_mb_size=...)``:

    * ``scp``: the SCP file, or a list of SCP files read one after another as one list (each resolves
      ``...`` against its own folder; a key listed twice, in one file or across files, is dropped as CNTK
      drops duplicates);
    * ``shape``: the dimension. With ``context`` given, each sample holds ``shape * (1 + left + right)``
      values: the frames ``t-left .. t+right`` of its utterance, edge frames repeated. Without it (or with
      ``(0, 0)``) the window is inferred: ``shape`` must be an odd multiple of the files' dimension;
    * ``broadcast``: each utterance of this stream has one frame (an i-vector), repeated to the primary
      stream's length; such a stream cannot come first;
    * ``defines_mb_size``: this stream's frames count for the minibatch size (see
      docs/differences-from-cntk.md: CNTK ignores the flag here);
    * ``max_sequence_length``: utterances of more frames are left out, unread (CNTK's ``maxSequenceSize``;
      cntk.io wrote the value where CNTK's reader never read it, so it had no effect there). The default,
      65535, sets no limit, as in cntk.io.

    ``field`` must be left unset. Several streams become several HTK feature deserializers joined by
    utterance key, the first one primary, as in cntk.io.
    """
    _distinct_names(streams, "HTKFeatureDeserializer")
    specs = []
    for name, s in streams.items():
        if s.get("stream_alias") is not None:
            raise ValueError("HTKFeatureDeserializer does not support stream names")
        if s.get("scp") is None:
            raise ValueError("No scp files specified for HTKFeatureDeserializer")
        _warn_unused_fields("HTKFeatureDeserializer", name, s, ("dim", "context", "scp", "broadcast",
                                                                "defines_mb_size", "max_sequence_length"),
                            {"is_sparse": " (features are dense)"})
        scp = s["scp"]
        more_scp = []
        if isinstance(scp, (list, tuple)):  # several lists: read one after another, as one list
            if not scp:
                raise ValueError("HTKFeatureDeserializer: stream '%s' has an empty list of scp files" % name)
            scp, more_scp = scp[0], list(scp[1:])
        dim, _ = _dimension(s.get("dim"), name)
        context = s.get("context")
        if context is None:
            left, right = 0, 0
        else:
            try:
                left, right = context
            except (TypeError, ValueError):
                raise ValueError("HTKFeatureDeserializer: stream '%s': context must be a pair (left, right), got %r"
                                 % (name, context)) from None
            left = _count(left, "HTKFeatureDeserializer: stream '%s' left context" % name)
            right = _count(right, "HTKFeatureDeserializer: stream '%s' right context" % name)
        options = _new(_core.HtkFeatureOptions, scp_file=_text(scp, "HTKFeatureDeserializer: stream %s scp" % name),
                       more_scp_files=[_text(m, "HTKFeatureDeserializer: stream %s scp" % name) for m in more_scp],
                       dim=dim, left_context=left, right_context=right, expand_to_utterance=bool(s.get("broadcast")),
                       name=_stream_name(name, "HTKFeatureDeserializer: stream name"),
                       defines_mb_size=bool(s.get("defines_mb_size")))
        limit = s.get("max_sequence_length", DEFAULT_MAX_SEQUENCE_LENGTH)
        if limit != DEFAULT_MAX_SEQUENCE_LENGTH:
            options.max_sequence_size = limit
        specs.append(_spec("HTKFeatureDeserializer", "HTKDeserializers", options))
    if not specs:
        raise ValueError("no feature streams found")
    return _Deserializer(specs, {}, (HTKFeatureDeserializer, (streams,), {}))


def HTKMLFDeserializer(label_mapping_file, streams, phoneBoundaries=False):  # noqa: N803 -- cntk.io's name
    """The HTK MLF label deserializer: frame labels from master label files, joined to the features by
    utterance key (it cannot come first in a MinibatchSource).

    ``label_mapping_file`` is the state list (one state name per line; a label's class is its line index);
    None or "" reads 4-column MLFs whose fourth column is the class id. ``streams`` holds one
    ``StreamDef(mlf=file or list of files, shape=number of classes)``; labels are sparse one-hot rows.
    ``phoneBoundaries=True`` (sequence mode only) marks the first frame of every label line with 2 instead
    of 1, for CTC training.
    """
    if len(streams) != 1:
        raise ValueError("HTKMLFDeserializer only accepts a single stream")
    name, s = next(iter(streams.items()))
    if s.get("stream_alias") is not None:
        raise ValueError("HTKMLFDeserializer does not support stream names")
    _warn_unused_fields("HTKMLFDeserializer", name, s, ("dim", "mlf", "is_sparse"))
    dim, _ = _dimension(s.get("dim"), name)
    if s.get("mlf") is None:
        raise ValueError("No master label files specified for HTKMLFDeserializer")
    files = s["mlf"]
    if not isinstance(files, (list, tuple)):
        files = [files]
    if not files:
        raise ValueError("HTKMLFDeserializer: No mlf files were specified")
    mapping = ""
    if label_mapping_file is not None and str(label_mapping_file) != "":
        mapping = _text(label_mapping_file, "HTKMLFDeserializer: label_mapping_file")
    options = _new(_core.MlfOptions, label_mapping_file=mapping, label_dim=dim,
                   mlf_files=[_text(f, "HTKMLFDeserializer: stream %s mlf" % name) for f in files],
                   phone_boundaries=bool(phoneBoundaries),
                   name=_stream_name(name, "HTKMLFDeserializer: stream name"))
    return _Deserializer([_spec("HTKMLFDeserializer", "HTKDeserializers", options)], {},
                         (HTKMLFDeserializer, (label_mapping_file, streams, phoneBoundaries), {}))


def _image_deserializer(type_name, filename, streams, max_image_pixels=None, max_image_bytes=None):
    import uuid  # here, not at the top: it costs `import cntkio` several milliseconds (platform, ...)

    image_stream = None
    label_stream = "_ignore_labels_" + uuid.uuid1().hex  # cntk.io's hidden label stream when none is given
    label_dim = 2
    transforms = []
    for name, s in streams.items():
        alias = s.get("stream_alias")
        if alias == "image":
            if image_stream is not None:
                raise ValueError("%s: streams '%s' and '%s' both have field 'image'" % (type_name, image_stream, name))
            image_stream = name
            transforms = s.get("transforms") or []
            if isinstance(transforms, dict):  # one transform where a list is due: cntk.io refuses it too
                raise TypeError("%s: stream %s: transforms must be a list of transforms, got a single one: %r "
                                "(write [transform])" % (type_name, name, transforms))
            transforms = list(transforms)
            _warn_unused_fields(type_name, name, s, ("transforms",), {"dim": " (the transforms set the image size)"},
                                stacklevel=4)
        elif alias == "label":
            if not label_stream.startswith("_ignore_labels_"):
                raise ValueError("%s: streams '%s' and '%s' both have field 'label'" % (type_name, label_stream, name))
            label_stream = name
            label_dim, _ = _dimension(s.get("dim"), name)
            _warn_unused_fields(type_name, name, s, ("dim", "is_sparse"), stacklevel=4)
        else:
            raise ValueError("%s: invalid field name '%s', allowed are 'image' and 'label'" % (type_name, alias))
    if image_stream is None:
        raise ValueError("%s: stream name ('image' or 'label') must be specified" % type_name)
    what = "%s: stream %s" % (type_name, image_stream)
    # cntk.io appends a Transpose (HWC -> CHW) to the user's transforms.
    chain = [_transform_spec(t, what) for t in transforms]
    chain.append(_new(_core.TransformSpec, type="Transpose", options=_core.ImageTransposeOptions()))
    options = _new(_core.ImageOptions, feature_stream=_stream_name(image_stream, "%s: stream name" % type_name),
                   label_stream=_stream_name(label_stream, "%s: stream name" % type_name), label_dim=label_dim,
                   file=_text(filename, "%s: filename" % type_name), base64=type_name == "Base64ImageDeserializer")
    if max_image_pixels is not None:
        options.max_image_pixels = _count(max_image_pixels, "%s: max_image_pixels" % type_name, False)
    if max_image_bytes is not None:
        options.max_image_bytes = _count(max_image_bytes, "%s: max_image_bytes" % type_name, False)
    stream = _new(_core.StreamTransforms, stream=image_stream, transforms=chain)
    return _Deserializer([_spec(type_name, "ImageReader", options, [stream])], {},
                         (_image_deserializer, (type_name, filename, streams, max_image_pixels, max_image_bytes), {}))


def ImageDeserializer(filename, streams, *, max_image_pixels=None, max_image_bytes=None):
    """The image deserializer for the map file ``filename`` (lines ``path<TAB>label`` or
    ``key<TAB>path<TAB>label``; ``archive.zip@/entry`` names a zip entry; a leading ``...`` is the map file's
    folder).

    ``streams``: ``StreamDef(field='image', transforms=[...])`` for the images (transforms from
    cntkio.transforms, applied in order, then a transpose: arrays are ``[..., channels, height, width]``,
    BGR, 0..255) and ``StreamDef(field='label', shape=number of classes)`` for sparse one-hot labels. Without
    a label stream cntk.io adds a hidden one with 2 classes, so every label in the map file must then be 0 or
    1. With randomization and no other deserializer, CNTK reads images in frame mode.

    ``max_image_pixels`` / ``max_image_bytes`` (cntkio extension; None: 2**28 pixels, 2**30 bytes) limit what
    one image may declare in its header (width x height; decoded bytes) and the size of an image file or zip
    entry; an image beyond them is an error naming it, raised before anything is decoded.
    """
    _distinct_names(streams, "ImageDeserializer")
    return _image_deserializer("ImageDeserializer", filename, streams, max_image_pixels, max_image_bytes)


def Base64ImageDeserializer(filename, streams, *, max_image_pixels=None, max_image_bytes=None):
    """The base64 image deserializer: lines ``[key<TAB>]label<TAB>base64 image`` in ``filename``; streams and
    limits as for ImageDeserializer."""
    _distinct_names(streams, "Base64ImageDeserializer")
    return _image_deserializer("Base64ImageDeserializer", filename, streams, max_image_pixels, max_image_bytes)


# ----------------------------------------------------------------------------------------------------------
# Image transforms: a transform dict (cntkio.transforms, or written by hand with CNTK's keys) as a TransformSpec


def _config_number(value, what):
    """The number CNTK reads from the text cntk.io writes for ``value``: integers as they are, other numbers as
    32-bit floats printed with 6 significant digits (C++ streams' default); text is read as a number."""
    if isinstance(value, str):
        try:
            return int(value) if value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            raise ValueError("%s: cannot read %r as a number" % (what, value)) from None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float("%g" % float(np.float32(value)))
    raise TypeError("%s must be a number, got %r" % (what, value))


class _TransformFields:
    """The keys of one transform dict, matched ignoring case as CNTK matches config keys, each read as CNTK
    reads the value cntk.io writes for it. CNTK ignored other keys; ``unused()`` names them."""

    def __init__(self, fields, what):
        self._fields = {str(key).lower(): value for key, value in fields.items()}
        self._given_names = {str(key).lower(): str(key) for key in fields}
        self._what = what

    def given(self, key):
        return key.lower() in self._fields

    def unused(self, known):
        """The keys not among ``known`` (compared ignoring case)."""
        known = {k.lower() for k in known}
        return sorted(self._given_names[k] for k in self._fields if k not in known)

    def _value(self, key):
        return self._fields.get(key.lower())

    def _name(self, key):
        return "%s: %s" % (self._what, key)

    def text(self, key, default=""):
        value = self._value(key)
        if value is None:
            return default
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)

    def choice(self, key, choices, case_sensitive=False):
        """The value of ``choices`` (a dict; key "" is the default) the text names."""
        text = self.text(key)
        found = choices.get(text if case_sensitive else text.lower())
        if found is None:
            raise ValueError("%s must be one of %s, got %r" % (self._name(key), ", ".join(
                "'%s'" % c for c in choices if c), text))
        return found

    def uint(self, key, default=0, below=2 ** 64):
        value = self._value(key)
        if value is None:
            return default
        number = _config_number(value, self._name(key))
        if number != int(number) or not 0 <= number < below:
            raise ValueError("%s must be a whole number in [0, %d), got %r" % (self._name(key), below, value))
        return int(number)

    def real(self, key, default=0.0):
        value = self._value(key)
        return default if value is None else float(_config_number(value, self._name(key)))

    def bool(self, key, default=False):
        value = self._value(key)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if _config_number(value, self._name(key)) not in (0, 1):
            raise ValueError("%s must be a boolean, got %r" % (self._name(key), value))
        return bool(_config_number(value, self._name(key)))

    def _values(self, key):
        value = self._value(key)
        items = value.split(":") if isinstance(value, str) else list(value) if isinstance(value, (tuple, list)) \
            else [value]
        if not 1 <= len(items) <= 2:
            raise ValueError("%s takes one value or two values separated by ':', got %r" % (self._name(key), value))
        return items

    def float_pair(self, key, default):
        """CNTK's ``min[:max]`` of 32-bit floats (one value: min = max)."""
        if self._value(key) is None:
            return default, default
        values = [float(np.float32(_config_number(v, self._name(key)))) for v in self._values(key)]
        return values[0], values[-1]

    def int_pair(self, key):
        """CNTK's ``width[:height]`` (one value: both); (0, 0) when not given."""
        if self._value(key) is None:
            return 0, 0
        values = []
        for v in self._values(key):
            number = _config_number(v, self._name(key))
            if number != int(number) or not 0 <= number < 2 ** 31:
                raise ValueError("%s must be non-negative whole numbers below 2**31, got %r" % (self._name(key), v))
            values.append(int(number))
        return values[0], values[-1]


_CROP = _core.ImageCropOptions.Type
_CROP_TYPES = {"": _CROP.center, "center": _CROP.center, "randomside": _CROP.randomside,
               "randomarea": _CROP.randomarea, "multiview10": _CROP.multiview10}
_JITTER_TYPES = {"": False, "none": False, "uniratio": True}
_INTERPOLATION = _core.ImageScaleOptions.Interpolation
_INTERPOLATIONS = {"": _INTERPOLATION.linear, "nearest": _INTERPOLATION.nearest, "linear": _INTERPOLATION.linear,
                   "cubic": _INTERPOLATION.cubic, "lanczos": _INTERPOLATION.lanczos}
_SCALE_MODE = _core.ImageScaleOptions.Mode
_SCALE_MODES = {"": _SCALE_MODE.fill, "fill": _SCALE_MODE.fill, "crop": _SCALE_MODE.crop, "pad": _SCALE_MODE.pad}


def _crop_options(f):
    o = _core.ImageCropOptions()
    o.type = f.choice("cropType", _CROP_TYPES)
    o.crop_width, o.crop_height = f.int_pair("cropSize")
    o.side_ratio_min, o.side_ratio_max = f.float_pair("sideRatio", 0.0)
    o.area_ratio_min, o.area_ratio_max = f.float_pair("areaRatio", 0.0)
    o.aspect_ratio_min, o.aspect_ratio_max = f.float_pair("aspectRatio", 1.0)
    o.jitter_uniratio = f.choice("jitterType", _JITTER_TYPES)
    o.hflip = _crop_flips(o.type, f.bool("hflip", True) if f.given("hflip") else None)
    o.seed = f.uint("seed")
    return o


def _crop_flips(crop_type, hflip):
    """CNTK's hflip: as given, else on for the random crops; never for multiview10."""
    if crop_type == _CROP.multiview10:
        return False
    return crop_type in (_CROP.randomside, _CROP.randomarea) if hflip is None else hflip


def _scale_options(f):
    o = _core.ImageScaleOptions()
    o.width, o.height, o.channels = f.uint("width"), f.uint("height"), f.uint("channels")
    o.interpolation = f.choice("interpolations", _INTERPOLATIONS)
    o.mode = f.choice("scaleMode", _SCALE_MODES, case_sensitive=True)
    o.pad_value = f.real("padValue", -1.0)
    return o


def _color_options(f):
    o = _core.ImageColorOptions()
    o.brightness_radius = f.real("brightnessRadius")
    o.contrast_radius = f.real("contrastRadius")
    o.saturation_radius = f.real("saturationRadius")
    o.seed = f.uint("seed")
    return o


def _intensity_options(f):
    return _new(_core.ImageIntensityOptions, std_dev=f.real("intensityStdDev"), file=f.text("intensityFile"),
                seed=f.uint("seed"))


# The keys each transform reads (spec image.md); others in a transform dict are ignored, with a warning.
_TRANSFORM_KEYS = {
    "Crop": ("cropType", "cropSize", "sideRatio", "areaRatio", "aspectRatio", "jitterType", "hflip", "seed"),
    "Scale": ("width", "height", "channels", "interpolations", "scaleMode", "padValue"),
    "Color": ("brightnessRadius", "contrastRadius", "saturationRadius", "seed"),
    "Intensity": ("intensityStdDev", "intensityFile", "seed"),
    "Mean": ("meanFile",),
    "Transpose": (),
}

_TRANSFORM_OPTIONS = {
    "Crop": _crop_options,
    "Scale": _scale_options,
    "Color": _color_options,
    "Intensity": _intensity_options,
    "Mean": lambda f: _new(_core.ImageMeanOptions, file=f.text("meanFile")),
    "Transpose": lambda f: _core.ImageTransposeOptions(),
    "Cast": lambda f: None,
}


def _transform_spec(transform, what):
    if not isinstance(transform, dict) or "type" not in transform:
        raise TypeError("%s: not an image transform: %r (use cntkio.transforms.crop/scale/mean/color)"
                        % (what, transform))
    fields = _TransformFields({k: v for k, v in transform.items() if k != "type"}, what)
    type_name = str(transform["type"])
    make = _TRANSFORM_OPTIONS.get(type_name)
    if make is None:
        raise ValueError("%s: transform type %r is not one of cntkio's (%s); a plugin's transform can be named in a "
                         "CNTK config read with MinibatchSource.from_config" % (what, type_name, ", ".join(
                             t for t in _TRANSFORM_OPTIONS if t != "Cast")))
    spec = _new(_core.TransformSpec, type=type_name, options=make(fields))
    if fields.given("module"):
        spec.module = fields.text("module")
    if type_name in _TRANSFORM_KEYS:
        for key in fields.unused(_TRANSFORM_KEYS[type_name] + ("module",)):
            warnings.warn("cntkio: %s: transform %s: key %r is ignored, the transform does not use it (its keys: %s)"
                          % (what, type_name, key, ", ".join(_TRANSFORM_KEYS[type_name]) or "none"),
                          IgnoredArgumentWarning, stacklevel=5)
    return spec


# ----------------------------------------------------------------------------------------------------------
# The reader


def reader_spec(deserializers, window_in_chunks, window_in_samples, seed, trace_level, parallel_transforms,
                frame_mode, truncation_length, max_errors):
    """The ReaderSpec of a MinibatchSource over ``deserializers`` (_Deserializer objects), as CNTK translates
    MinibatchSourceConfig into a reader config (spec pipeline.md §1.3); the arguments are checked already."""
    spec = _core.ReaderSpec()
    source = spec.source
    if window_in_samples != 0 or window_in_chunks != 0:
        source.randomize = True
        source.randomization_window = window_in_samples or window_in_chunks
        source.sample_based_window = window_in_samples != 0
        source.seed = seed
    else:
        source.randomize = False
    if truncation_length != 0:
        source.packing = _core.Packing.truncated_sequences
        source.truncation_length = truncation_length
    elif frame_mode:
        source.packing = _core.Packing.frames
    # Neither: sequences, except for an image deserializer alone and randomized (its format's default).
    source.trace_level = trace_level
    if parallel_transforms is not None:
        source.parallel_transforms = bool(parallel_transforms)
    source.max_errors = max_errors
    spec.deserializers = [s for d in deserializers for s in d.specs()]
    return spec


# ----------------------------------------------------------------------------------------------------------
# Config text rendered from a spec (a view for reading and debugging: readers are built from the specs)


def _config_string(value, what):
    """A quoted config value; ValueError for text the config language cannot carry."""
    text = str(value)
    for bad, name in (('"', "a double quote"), ("\n", "a line break"), ("\r", "a carriage return"),
                      ("$", "'$' (CNTK's variable marker)"), (" #", "' #' (CNTK's comment marker)"),
                      ("\t#", "a tab before '#' (CNTK's comment marker)")):
        if bad in text:
            raise ValueError("%s %r contains %s, which CNTK's config language cannot express (the reader reads "
                             "it; only this config text cannot show it)" % (what, text, name))
    return '"%s"' % text


def _number_text(value, single=False):
    """A number as C++ streams print it (6 significant digits) when that reads back as the same value (as a
    32-bit float when ``single``), else with all the digits it needs."""
    text = "%g" % value
    back = float(np.float32(float(text))) if single else float(text)
    return text if back == value else repr(float(value))


def _flag(value):
    return "1" if value else "0"


def _transform_text(t):
    o = t.options
    fields = ["type = %s" % ("Transpose" if t.type == "Transpose" else '"%s"' % t.type)]
    if t.module:
        fields.append("module = %s" % _config_string(t.module, "transform module"))
    if isinstance(o, _core.ImageCropOptions):
        fields += ['cropType = "%s"' % o.type.name, "cropSize = %d:%d" % (o.crop_width, o.crop_height),
                   "sideRatio = %s:%s" % (_number_text(o.side_ratio_min, True), _number_text(o.side_ratio_max, True)),
                   "areaRatio = %s:%s" % (_number_text(o.area_ratio_min, True), _number_text(o.area_ratio_max, True)),
                   "aspectRatio = %s:%s" % (_number_text(o.aspect_ratio_min, True),
                                            _number_text(o.aspect_ratio_max, True)),
                   'jitterType = "%s"' % ("uniratio" if o.jitter_uniratio else "none")]
        if o.hflip != _crop_flips(o.type, None):
            fields.append("hflip = %s" % _flag(o.hflip))
    elif isinstance(o, _core.ImageScaleOptions):
        fields += ["width = %d" % o.width, "height = %d" % o.height, "channels = %d" % o.channels,
                   'interpolations = "%s"' % o.interpolation.name, 'scaleMode = "%s"' % o.mode.name,
                   "padValue = %s" % _number_text(o.pad_value)]
    elif isinstance(o, _core.ImageColorOptions):
        fields += ["brightnessRadius = %s" % _number_text(o.brightness_radius),
                   "contrastRadius = %s" % _number_text(o.contrast_radius),
                   "saturationRadius = %s" % _number_text(o.saturation_radius)]
    elif isinstance(o, _core.ImageIntensityOptions):
        fields.append("intensityStdDev = %s" % _number_text(o.std_dev))
        if o.file:
            fields.append("intensityFile = %s" % _config_string(o.file, "intensityFile"))
    elif isinstance(o, _core.ImageMeanOptions) and o.file:
        fields.append("meanFile = %s" % _config_string(o.file, "meanFile"))
    if getattr(o, "seed", 0):
        fields.append("seed = %d" % o.seed)
    return "[ %s ]" % " ; ".join(fields)


def _files_text(options, what):
    """The [file] value of CTF or CBF options: one quoted path, or an array of them for a corpus."""
    if not options.more_files:
        return _config_string(options.file, what)
    return "(%s)" % ":".join(_config_string(f, what) for f in [options.file] + list(options.more_files))


def _section_text(spec):
    """The config section of a DeserializerSpec this module builds."""
    if spec.type == "PythonUserDeserializer":
        raise ValueError("a UserDeserializer is Python code: CNTK's config language cannot express it")
    o = spec.options
    lines = ["type = %s" % spec.type, "module = %s" % spec.module]
    if isinstance(o, _core.CtfOptions):
        lines.append("file = %s" % _files_text(o, "CTFDeserializer: filename"))
        inputs = ["%s = [ alias = %s ; dim = %d ; format = %s%s ]" % (
            s.name, _config_string(s.alias, "CTFDeserializer: stream %s field" % s.name), s.dim, s.storage.name,
            " ; definesMBSize = 1" if s.defines_mb_size else "") for s in o.streams]
        lines.append("input = [\n%s\n]" % "\n".join(inputs))
        if o.max_errors != 0:
            lines.append("maxErrors = %d" % o.max_errors)
    elif isinstance(o, _core.CbfOptions):
        lines.append("file = %s" % _files_text(o, "CBFDeserializer: filename"))
        if o.renames:
            lines.append("input = [\n%s\n]" % "\n".join(
                "%s = [ alias = %s ]" % (name, _config_string(alias, "CBFDeserializer: stream %s field" % name))
                for alias, name in o.renames))
    elif isinstance(o, _core.HtkFeatureOptions):
        if o.more_scp_files:
            raise ValueError("HTKFeatureDeserializer: stream %s reads %d scp files; CNTK's config language has one "
                             "scpFile per stream" % (o.name, 1 + len(o.more_scp_files)))
        fields = ["scpFile = %s" % _config_string(o.scp_file, "HTKFeatureDeserializer: stream %s scp" % o.name),
                  "dim = %d" % o.dim, "contextWindow = %d:%d" % (o.left_context, o.right_context),
                  "expandToUtterance = %s" % _flag(o.expand_to_utterance)]
        lines.append("input = [\n%s = [ %s ]\n]" % (o.name, " ; ".join(fields)))
        if o.defines_mb_size:
            # Read at the `input` level or above (spec htk.md §2.2): the deserializer section is above it.
            lines.append("definesMBSize = 1")
        if o.max_sequence_size != _core.HtkFeatureOptions().max_sequence_size:
            lines.append("maxSequenceSize = %d" % o.max_sequence_size)
    elif isinstance(o, _core.MlfOptions):
        what = "HTKMLFDeserializer: stream %s mlf" % o.name
        fields = []
        if o.label_mapping_file:
            fields.append("labelMappingFile = %s" % _config_string(o.label_mapping_file,
                                                                   "HTKMLFDeserializer: label_mapping_file"))
        fields.append("dim = %d" % o.label_dim)
        if len(o.mlf_files) == 1:
            fields.append("mlfFile = %s" % _config_string(o.mlf_files[0], what))
        else:
            fields.append("mlfFileList = (%s)" % ":".join(_config_string(f, what) for f in o.mlf_files))
        fields.append("phoneBoundaries = %s" % _flag(o.phone_boundaries))
        lines.append("input = [\n%s = [ %s ]\n]" % (o.name, " ; ".join(fields)))
    elif isinstance(o, _core.ImageOptions):
        chains = {t.stream: t.transforms for t in spec.transforms}
        lines.append("file = %s" % _config_string(o.file, "%s: filename" % spec.type))
        lines.append("input = [\n%s = [\ntransforms = (\n%s\n)\n]\n%s = [ labelDim = %d ]\n]" % (
            o.feature_stream, "\n:\n".join(_transform_text(t) for t in chains.get(o.feature_stream, [])),
            o.label_stream, o.label_dim))
        defaults = _core.ImageOptions()
        if o.max_image_pixels != defaults.max_image_pixels:
            lines.append("maxImagePixels = %d" % o.max_image_pixels)
        if o.max_image_bytes != defaults.max_image_bytes:
            lines.append("maxImageBytes = %d" % o.max_image_bytes)
    return "[\n" + "\n".join(lines) + "\n]"


def reader_text(spec):
    """A ReaderSpec this module builds as CNTK's reader section (``reader = [...]``)."""
    s = spec.source
    lines = []
    if s.randomize:
        lines += ["randomize = 1", "randomizationWindow = %d" % s.randomization_window,
                  "sampleBasedRandomizationWindow = %s" % _flag(s.sample_based_window),
                  "randomizationSeed = %d" % s.seed]
    else:
        lines.append("randomize = 0")
    if s.packing == _core.Packing.truncated_sequences:
        lines += ["truncated = 1", "truncationLength = %d" % s.truncation_length]
    lines.append("frameMode = %s" % _flag(s.packing == _core.Packing.frames))
    if s.trace_level is not None:
        lines.append("traceLevel = %d" % s.trace_level)
    if s.parallel_transforms is not None:
        lines.append("multiThreadedDeserialization = %s" % _flag(s.parallel_transforms))
    if s.max_errors != 0:
        lines.append("maxErrors = %d" % s.max_errors)
    if s.chunk_cache_bytes != 0:
        lines.append("chunkCacheBytes = %d" % s.chunk_cache_bytes)
    sections = [_section_text(d) for d in spec.deserializers]
    lines.append("deserializers = (\n%s\n)" % "\n:\n".join(sections))
    return "reader = [\n" + "\n".join(lines) + "\n]\n"
