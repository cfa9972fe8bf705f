"""Image transforms for ImageDeserializer and Base64ImageDeserializer, as ``cntk.io.transforms``.

Each function returns a Record (a dict) of the CNTK config keys of one transform; pass a list of them as
``StreamDef(field='image', transforms=[...])``. They run in list order on each image (decoded as 8-bit BGR,
height x width x channels), followed by the transpose to channels x height x width that cntk.io always adds.
Random draws (random crops, flips, colour jitter) follow CNTK's engines: the same seed and minibatch positions
give the same pixels.
"""

import numbers

import numpy as np

from ._deserializers import Record

__all__ = ["color", "crop", "mean", "scale"]

_CROP_TYPES = ("center", "randomside", "randomarea", "multiview10")
_JITTER_TYPES = ("none", "uniratio")
_INTERPOLATIONS = ("nearest", "linear", "cubic", "lanczos")
_SCALE_MODES = ("fill", "crop", "pad")


def _choice(value, allowed, what, case_sensitive=False):
    text = str(value)
    if (text if case_sensitive else text.lower()) not in allowed:
        raise ValueError("%s must be one of %s, got %r" % (what, ", ".join("'%s'" % a for a in allowed), value))
    return text


def _number(value, what, integral=False):
    kind = numbers.Integral if integral else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError("%s must be %s, got %r" % (what, "an integer" if integral else "a number", value))
    return int(value) if integral else float(np.float32(value))


def _pair(value, what, integral=False, ordered=True):
    """A number (used twice) or a pair ((min, max) when ``ordered``); CNTK's ``a:b`` text is accepted too."""
    if isinstance(value, str):
        parts = value.split(":")
        try:
            values = [int(p) if integral else float(p) for p in parts]
        except ValueError:
            raise ValueError("%s: cannot read %r as one or two numbers separated by ':'" % (what, value)) from None
    elif isinstance(value, (tuple, list)):
        values = list(value)
    else:
        values = [value]
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise ValueError("%s takes a number or a pair (min, max), got %r" % (what, value))
    first, second = (_number(v, what, integral) for v in values)
    if ordered and first > second:
        raise ValueError("For %s values: the first number must be smaller than or equal to the second number."
                         % what)
    return (first, second)


def crop(crop_type='center', crop_size=0, side_ratio=0.0, area_ratio=0.0, aspect_ratio=1.0, jitter_type='none'):
    """Crop transform (CNTK's ``Crop``).

    Args:
        crop_type: 'center', 'randomside', 'randomarea' (random position and, for the random types, a random
            horizontal flip) or 'multiview10'.
        crop_size: crop width and height in pixels (an int, or (width, height)); 0 = not used. When given, the
            ratios below are ignored.
        side_ratio: side of the square crop as a fraction of the image's shorter side, in (0, 1]; a pair
            (min, max) with ``jitter_type='uniratio'`` draws it uniformly. 0 = not used.
        area_ratio: area of the square crop as a fraction of the image's area (exclusive with side_ratio).
        aspect_ratio: width/height (or height/width, chosen at random) of the crop, area kept; a pair draws it.
        jitter_type: 'none' (use the minimum of each range) or 'uniratio' (uniform in the range).
    """
    return Record(type="Crop",
                  cropType=_choice(crop_type, _CROP_TYPES, "crop_type"),
                  cropSize=_pair(crop_size, "crop_size", integral=True, ordered=False),
                  sideRatio=_pair(side_ratio, "sideRatio"),
                  areaRatio=_pair(area_ratio, "areaRatio"),
                  aspectRatio=_pair(aspect_ratio, "aspectRatio"),
                  jitterType=_choice(jitter_type, _JITTER_TYPES, "jitter_type"))


def scale(width, height, channels, interpolations='linear', scale_mode='fill', pad_value=-1):
    """Scale transform (CNTK's ``Scale``): resizes each image to ``width`` x ``height`` with ``channels``
    channels (the decoded image's channel count: 3, or 1 for grayscale).

    Args:
        interpolations: 'nearest', 'linear', 'cubic' or 'lanczos'.
        scale_mode: 'fill' (stretch), 'crop' (fit the shorter side, centre-crop the rest) or 'pad' (fit the
            longer side, centre, pad the rest).
        pad_value: value of the padding in 'pad' mode; -1 replicates the border.
    """
    return Record(type="Scale",
                  width=_number(width, "width", integral=True),
                  height=_number(height, "height", integral=True),
                  channels=_number(channels, "channels", integral=True),
                  interpolations=_choice(interpolations, _INTERPOLATIONS, "interpolations"),
                  scaleMode=_choice(scale_mode, _SCALE_MODES, "scale_mode", case_sensitive=True),
                  padValue=_number(pad_value, "pad_value", integral=True))


def mean(filename):
    """Mean transform (CNTK's ``Mean``): subtracts the per-pixel mean image stored in ``filename``, an OpenCV
    XML file with ``Channel``, ``Row``, ``Col`` and the ``MeanImg`` matrix (height x width x channels, BGR)."""
    import os

    path = os.fspath(filename)
    if not path:
        raise ValueError("mean: filename must not be empty")
    return Record(type="Mean", meanFile=path)


def color(brightness_radius=0.0, contrast_radius=0.0, saturation_radius=0.0):
    """Colour transform (CNTK's ``Color``): random brightness (adds x times the image mean), contrast
    (multiplies by 1 + x) and saturation (colour images only) changes, x drawn uniformly from
    [-radius, radius]; each radius in [0, 1]."""
    return Record(type="Color",
                  brightnessRadius=_number(brightness_radius, "brightness_radius"),
                  contrastRadius=_number(contrast_radius, "contrast_radius"),
                  saturationRadius=_number(saturation_radius, "saturation_radius"))
