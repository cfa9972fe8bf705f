"""cntkio.ImageDeserializer, cntkio.Base64ImageDeserializer and cntkio.transforms (cntk.io's image readers):
pixels against images written here with a fixed seed (lossless PNGs, so every expected value is computed from
the generated pixels), every transform argument, and the arrays against `cntkio dump` of the same config."""

import base64
import struct
import zlib

import numpy as np
import pytest

import cntkio
import cntkio.io
from cntkio import transforms as T
from conftest import requires_images
from readerdump import assert_equals_cli_dump

pytestmark = requires_images

H, W = 5, 7
CLASSES = 4


def png_bytes(bgr):
    """A PNG (8-bit RGB) of an H x W x 3 BGR uint8 array, written without any imaging library."""
    rgb = np.ascontiguousarray(bgr[..., ::-1])
    height, width = rgb.shape[:2]
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image_streams(transforms, label=True):
    streams = cntkio.StreamDefs(features=cntkio.StreamDef(field="image", transforms=transforms))
    if label:
        streams["labels"] = cntkio.StreamDef(field="label", shape=CLASSES)
    return streams


class Images:
    """``count`` random BGR images of H x W (sizes[i] when given) with labels i % CLASSES, a map file and a
    base64 map file of them."""

    def __init__(self, root, count=6, seed=3, sizes=None, label_of=lambda i: i % CLASSES):
        rng = np.random.default_rng(seed)
        self.root = root
        self.pixels, self.labels, lines, b64 = [], [], [], []
        for i in range(count):
            h, w = sizes[i] if sizes else (H, W)
            bgr = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            data = png_bytes(bgr)
            path = root / ("img%d.png" % i)
            path.write_bytes(data)
            self.pixels.append(bgr)
            self.labels.append(label_of(i))
            lines.append("%s\t%d" % (path, self.labels[-1]))
            b64.append("%d\t%s" % (self.labels[-1], base64.b64encode(data).decode()))
        self.map = root / "map.txt"
        self.map.write_text("\n".join(lines) + "\n")
        self.base64_map = root / "base64.txt"
        self.base64_map.write_text("\n".join(b64) + "\n")

    def chw(self, i):
        return self.pixels[i].transpose(2, 0, 1).astype(np.float32)

    def source(self, transforms=(), base64_map=False, label=True, **kwargs):
        kwargs.setdefault("randomize", False)
        kwargs.setdefault("max_sweeps", 1)
        kind = cntkio.Base64ImageDeserializer if base64_map else cntkio.ImageDeserializer
        path = self.base64_map if base64_map else self.map
        return cntkio.MinibatchSource(kind(str(path), image_streams(list(transforms), label)), **kwargs)


@pytest.fixture
def images(tmp_path):
    return Images(tmp_path)


def read_all(source, minibatch_size=100, stream="features"):
    """Every sample of a stream, one array per image, in reading order."""
    out = []
    while True:
        mb = source.next_minibatch(minibatch_size)
        if not mb:
            return out
        for seq in mb[stream].as_sequences():
            assert seq.shape[0] == 1
            out.append(seq[0].toarray()[0] if mb[stream].is_sparse else seq[0])


# --------------------------------------------------------------------------------------------------------
# Deserializers


def test_pixels_are_bgr_chw_and_labels_one_hot(images):
    source = images.source()
    assert [i.name for i in source.stream_infos()] == ["features", "labels"]
    mb = source.next_minibatch(100)
    features = mb["features"].asarray()
    assert features.shape == (6, 1, 3, H, W)  # sequence mode without randomization: one-sample sequences
    for i in range(6):
        assert np.array_equal(features[i, 0], images.chw(i))
    labels = mb["labels"].asarray().toarray()
    assert np.array_equal(labels, np.eye(CLASSES, dtype=np.float32)[images.labels])


def test_randomized_images_are_read_in_frame_mode_and_reproducibly(images):
    def read(seed):
        source = images.source(randomize=True, randomization_seed=seed)
        arrays = []
        while True:
            mb = source.next_minibatch(4)
            if not mb:
                return arrays
            assert mb["features"].asarray().ndim == 5  # [samples, 1, 3, H, W], as CNTK's Value in frame mode
            arrays.extend(mb["features"].asarray()[:, 0])

    def order(arrays):
        return [next(i for i in range(6) if np.array_equal(a, images.chw(i))) for a in arrays]

    assert sorted(order(read(1))) == list(range(6))
    assert order(read(1)) == order(read(1))
    assert order(read(1)) != order(read(2))


def test_arrays_have_the_same_rank_with_and_without_randomization(images):
    """A lone randomized image deserializer is read in frame mode, an unrandomized one in sequence mode: CNTK's
    Value has the sequence axis either way, so the same code gets [samples, 1, 3, H, W] from both."""
    for randomize in (False, True):
        mb = images.source(randomize=randomize).next_minibatch(4)
        assert mb["features"].asarray().shape == (4, 1, 3, H, W) and mb["features"].mask.shape == (4, 1)
        assert mb["labels"].shape == (4, 1, CLASSES)


def test_base64_map_reads_the_same_pixels(images):
    plain = read_all(images.source([T.scale(4, 3, 3)]))
    encoded = read_all(images.source([T.scale(4, 3, 3)], base64_map=True))
    assert len(encoded) == 6 and all(np.array_equal(a, b) for a, b in zip(plain, encoded))
    labels = read_all(images.source(base64_map=True), stream="labels")
    assert [int(np.argmax(y)) for y in labels] == images.labels


def test_without_a_label_stream_a_hidden_two_class_one_is_added(tmp_path):
    images = Images(tmp_path, label_of=lambda i: i % 2)
    source = images.source(label=False)
    names = [i.name for i in source.stream_infos()]
    assert names[0] == "features" and len(names) == 2 and names[1].startswith("_ignore_labels_")
    assert source.stream_info(names[1]).shape == (2,)
    got = read_all(source)
    assert all(np.array_equal(g, images.chw(i)) for i, g in enumerate(got))


def test_stream_definitions_are_checked():
    with pytest.raises(ValueError, match="invalid field name 'x'"):
        cntkio.ImageDeserializer("map.txt", cntkio.StreamDefs(f=cntkio.StreamDef(field="x")))
    with pytest.raises(ValueError, match=r"stream name \('image' or 'label'\) must be specified"):
        cntkio.ImageDeserializer("map.txt", cntkio.StreamDefs(l=cntkio.StreamDef(field="label", shape=3)))
    with pytest.raises(ValueError, match="Base64ImageDeserializer: invalid field name"):
        cntkio.Base64ImageDeserializer("map.txt", cntkio.StreamDefs(f=cntkio.StreamDef(field="img")))
    with pytest.raises(ValueError, match="shape"):
        cntkio.ImageDeserializer("map.txt", cntkio.StreamDefs(f=cntkio.StreamDef(field="image", transforms=[]),
                                                              l=cntkio.StreamDef(field="label")))
    with pytest.raises(TypeError, match="not an image transform"):
        cntkio.ImageDeserializer("map.txt", cntkio.StreamDefs(f=cntkio.StreamDef(field="image", transforms=[3])))


def test_missing_map_file_names_it(tmp_path):
    d = cntkio.ImageDeserializer(str(tmp_path / "nowhere.txt"), image_streams([]))
    with pytest.raises((OSError, cntkio.FormatError), match="nowhere.txt"):
        read_all(cntkio.MinibatchSource(d, randomize=False, max_sweeps=1))
    d = cntkio.Base64ImageDeserializer(str(tmp_path / "nowhere64.txt"), image_streams([]))
    with pytest.raises((OSError, cntkio.FormatError), match="nowhere64.txt"):
        read_all(cntkio.MinibatchSource(d, randomize=False, max_sweeps=1))


def test_missing_image_file_names_it(images):
    (images.root / "img3.png").unlink()
    with pytest.raises((OSError, cntkio.FormatError), match="img3.png"):
        read_all(images.source())


def test_mean_file_that_is_missing_names_it(images):
    with pytest.raises((OSError, cntkio.FormatError), match="nomean.xml"):
        read_all(images.source([T.mean(str(images.root / "nomean.xml"))]))


# --------------------------------------------------------------------------------------------------------
# Transforms


def test_transform_records_and_module_names():
    assert cntkio.io.transforms is cntkio.transforms
    assert T.crop() == {"type": "Crop", "cropType": "center", "cropSize": (0, 0), "sideRatio": (0.0, 0.0),
                        "areaRatio": (0.0, 0.0), "aspectRatio": (1.0, 1.0), "jitterType": "none"}
    assert T.scale(224, 224, 3) == {"type": "Scale", "width": 224, "height": 224, "channels": 3,
                                    "interpolations": "linear", "scaleMode": "fill", "padValue": -1}
    assert T.color() == {"type": "Color", "brightnessRadius": 0.0, "contrastRadius": 0.0, "saturationRadius": 0.0}
    assert T.mean("m.xml") == {"type": "Mean", "meanFile": "m.xml"}
    assert T.crop(side_ratio=(0.5, 0.75))["sideRatio"] == (0.5, 0.75)
    assert T.crop(crop_size=(256, 224))["cropSize"] == (256, 224)


def test_transform_config_text_prints_floats_as_cntk_does():
    d = cntkio.ImageDeserializer("map.txt", cntkio.StreamDefs(f=cntkio.StreamDef(field="image", transforms=[
        T.crop(crop_type="randomside", side_ratio=(1 / 3, 0.5), jitter_type="uniratio"), T.color(0.1, 0.25)])))
    text = d.config_text()
    assert 'cropType = "randomside"' in text and "sideRatio = 0.333333:0.5" in text
    assert "brightnessRadius = 0.1" in text and "contrastRadius = 0.25" in text
    assert text.index('type = "Crop"') < text.index('type = "Color"') < text.index("type = Transpose")


def test_transform_arguments_are_checked():
    with pytest.raises(ValueError, match="crop_type"):
        T.crop(crop_type="corner")
    with pytest.raises(ValueError, match="jitter_type"):
        T.crop(jitter_type="gauss")
    with pytest.raises(ValueError, match="For sideRatio values: the first number must be smaller"):
        T.crop(side_ratio=(0.8, 0.5))
    with pytest.raises(ValueError, match="For aspectRatio values"):
        T.crop(aspect_ratio=(1.0, 0.5))
    with pytest.raises(ValueError, match="interpolations"):
        T.scale(4, 4, 3, interpolations="area")
    with pytest.raises(ValueError, match="scale_mode"):
        T.scale(4, 4, 3, scale_mode="Fill")  # case-sensitive in CNTK
    with pytest.raises(TypeError, match="width"):
        T.scale(4.5, 4, 3)


def test_crop_ratio_out_of_range_is_a_config_error(images):
    with pytest.raises(cntkio.ConfigError, match="sideRatio"):
        images.source([T.crop(side_ratio=1.5)])


def test_center_crop_of_a_fixed_size(images):
    got = read_all(images.source([T.crop(crop_size=(4, 3))]))  # width 4, height 3
    x, y = (W - 4) // 2, (H - 3) // 2
    for i, g in enumerate(got):
        assert np.array_equal(g, images.chw(i)[:, y:y + 3, x:x + 4])


def test_center_crop_by_side_ratio(images):
    got = read_all(images.source([T.crop(side_ratio=0.6)]))  # round(min(5, 7) * 0.6) = 3
    for i, g in enumerate(got):
        assert np.array_equal(g, images.chw(i)[:, 1:4, 2:5])


def test_center_crop_by_area_ratio(images):
    got = read_all(images.source([T.crop(area_ratio=0.45)]))  # round(sqrt(35 * 0.45)) = 4
    for i, g in enumerate(got):
        assert np.array_equal(g, images.chw(i)[:, 0:4, 1:5])


def test_random_crops_are_reproducible_windows_of_the_image(images):
    transforms = [T.crop(crop_type="randomside", side_ratio=0.6)]
    first = read_all(images.source(transforms))
    assert len(first) == 6 and all(g.shape == (3, 3, 3) for g in first)
    again = read_all(images.source(transforms))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    for i, g in enumerate(first):
        img = images.chw(i)
        windows = [img[:, y:y + 3, x:x + 3] for y in range(H - 2) for x in range(W - 2)]
        assert any(np.array_equal(g, w) or np.array_equal(g, w[:, :, ::-1]) for w in windows)
    centred = [np.array_equal(g, images.chw(i)[:, 1:4, 2:5]) for i, g in enumerate(first)]
    assert not all(centred)


def test_scale_nearest_doubles_pixels(images):
    source = images.source([T.scale(width=2 * W, height=2 * H, channels=3, interpolations="nearest")])
    assert source.streams.features.shape == (3, 2 * H, 2 * W)
    for i, g in enumerate(read_all(source)):
        assert np.array_equal(g, images.chw(i).repeat(2, axis=1).repeat(2, axis=2))


def test_scale_fill_to_a_new_shape(images):
    source = images.source([T.scale(width=3, height=8, channels=3)])
    assert source.streams.features.shape == (3, 8, 3)
    assert all(g.shape == (3, 8, 3) for g in read_all(source))


@pytest.mark.parametrize("pad_value", [0, 200, -1])
def test_scale_pad_centres_the_image(images, pad_value):
    got = read_all(images.source([T.scale(width=W, height=W, channels=3, scale_mode="pad", pad_value=pad_value)]))
    top = (W - H) // 2
    for i, g in enumerate(got):
        img = images.chw(i)
        assert g.shape == (3, W, W)
        assert np.array_equal(g[:, top:top + H], img)
        if pad_value >= 0:  # as CNTK: the value in the first channel (blue), zeros in the others
            assert (g[0, :top] == pad_value).all() and (g[0, top + H:] == pad_value).all()
            assert (g[1:, :top] == 0).all() and (g[1:, top + H:] == 0).all()
        else:  # the border replicated
            assert (g[:, :top] == img[:, :1]).all() and (g[:, top + H:] == img[:, -1:]).all()


def test_scale_crop_fits_the_short_side_and_crops_the_rest(images):
    got = read_all(images.source([T.scale(width=H, height=H, channels=3, scale_mode="crop")]))
    left = (W - H) // 2
    for i, g in enumerate(got):
        assert np.array_equal(g, images.chw(i)[:, :, left:left + H])


def write_mean(path, mean_hwc):
    """An OpenCV XML mean file (Channel, Row, Col, MeanImg as one row of floats, HWC-BGR order)."""
    h, w, c = mean_hwc.shape
    values = " ".join("%.9g" % v for v in mean_hwc.astype(np.float32).ravel())
    path.write_text('<?xml version="1.0"?>\n<opencv_storage>\n<Channel>%d</Channel>\n<Row>%d</Row>\n<Col>%d</Col>\n'
                    '<MeanImg type_id="opencv-matrix">\n  <rows>1</rows>\n  <cols>%d</cols>\n  <dt>f</dt>\n'
                    '  <data>%s</data></MeanImg>\n</opencv_storage>\n' % (c, h, w, h * w * c, values))
    return path


def test_mean_file_is_subtracted(images):
    mean = np.random.default_rng(5).uniform(0, 255, size=(H, W, 3)).astype(np.float32)
    path = write_mean(images.root / "mean.xml", mean)
    got = read_all(images.source([T.mean(str(path))]))
    for i, g in enumerate(got):
        assert np.array_equal(g, images.chw(i) - mean.transpose(2, 0, 1))


def test_color_jitter_is_random_and_reproducible(images):
    transforms = [T.color(brightness_radius=0.4, contrast_radius=0.4, saturation_radius=0.4)]
    first = read_all(images.source(transforms))
    again = read_all(images.source(transforms))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    changed = [not np.array_equal(g, images.chw(i)) for i, g in enumerate(first)]
    assert all(changed)
    assert all(g.min() >= 0 and g.max() <= 255 for g in first)


def test_zero_color_radii_leave_pixels_unchanged(images):
    got = read_all(images.source([T.color()]))
    assert all(np.array_equal(g, images.chw(i)) for i, g in enumerate(got))


# --------------------------------------------------------------------------------------------------------
# Python arrays equal the C++ dump of the same configuration


@pytest.mark.parametrize("base64_map", [False, True], ids=["map", "base64"])
@pytest.mark.parametrize("randomize", [False, True], ids=["ordered", "random"])
def test_arrays_equal_cpp_dump(cli, tmp_path, base64_map, randomize):
    images = Images(tmp_path, count=9, sizes=[(H + i % 3, W + i % 2) for i in range(9)])
    mean = write_mean(tmp_path / "mean.xml", np.full((4, 6, 3), 17.5, np.float32))
    transforms = [T.crop(crop_type="randomarea", area_ratio=(0.5, 1.0), aspect_ratio=(0.75, 1.0),
                         jitter_type="uniratio"),
                  T.scale(width=6, height=4, channels=3, interpolations="cubic"),
                  T.color(brightness_radius=0.2, contrast_radius=0.3, saturation_radius=0.1),
                  T.mean(str(mean))]

    def make():
        return images.source(transforms, base64_map=base64_map, randomize=randomize, randomization_seed=4)

    assert_equals_cli_dump(cli, make, ["features", "labels"], 4, tmp_path, epochs=2)


@pytest.mark.parametrize("case_name,kind,map_file", [
    ("ImageSimpleCompositeAndBase64", cntkio.ImageDeserializer, "ImageReaderSimple_map.txt"),
    ("ImageSimpleCompositeAndBase64__base64", cntkio.Base64ImageDeserializer, "Base64ImageReaderSimple_map.txt"),
])
def test_cntk_image_case_read_through_python_objects(cli, monkeypatch, case_name, kind, map_file):
    """CNTK's composite image test (JPEGs, centre crop with sideRatio 1 and uniratio jitter, 4 x 8 linear
    scale) written with cntk.io's objects reads what `cntkio dump` of CNTK's own config prints (which the
    conformance runner checks against CNTK's control)."""
    from conftest import conformance_dir
    from readerdump import python_dump
    from test_conformance_arrays import cli_dump, load_case

    case = load_case(case_name)
    monkeypatch.chdir(conformance_dir() / case["cwd"])
    source = cntkio.MinibatchSource(kind(map_file, cntkio.StreamDefs(
        features=cntkio.StreamDef(field="image", transforms=[
            T.crop(crop_type="center", side_ratio=1.0, jitter_type="uniratio"),
            T.scale(width=4, height=8, channels=3, interpolations="linear")]),
        labels=cntkio.StreamDef(field="label", shape=4))), randomize=False)
    expected = cli_dump(cli, case)
    assert expected.count("\n") == 8  # 4 images, 4 labels
    assert python_dump(source, ["features", "labels"], case["mbSize"], case["epochs"], case["epochSize"],
                       max_minibatches=10) == expected  # `cntkio dump` writes 10 per epoch by default
    assert source.streams.features.shape == (3, 8, 4)


def test_torch_items_of_transformed_images_hold_their_pixels(images, monkeypatch):
    torch = pytest.importorskip("torch")
    import functools
    import cntkio.torch

    # Deferred values: torch_item copies the transformed pixels, which the transform stage holds, itself.
    assert cntkio.torch._DEFER_VALUES
    source = functools.partial(images.source, [T.scale(width=4, height=3, channels=3)], randomize=True)
    items = list(cntkio.torch.MinibatchDataset(source, 4))
    monkeypatch.setattr(cntkio.torch, "_DEFER_VALUES", False)
    packed = list(cntkio.torch.MinibatchDataset(source, 4))
    assert [item["features"].shape for item in items] == [(4, 3, 3, 4), (2, 3, 3, 4)]  # frame mode
    for got, want in zip(items, packed):
        assert sorted(got) == sorted(want)
        for key in want:
            assert torch.equal(got[key], want[key]), key
    mb = images.source([T.scale(width=4, height=3, channels=3)], randomize=True).next_minibatch(4)
    assert np.array_equal(items[0]["features"].numpy(), mb["features"].asarray()[:, 0])  # torch items: no axis 1


# --------------------------------------------------------------------------------------------------------
# Random transforms and checkpoints (cntkio: CNTK's engines were never recorded)

EIGEN_XML = """<?xml version="1.0"?>
<opencv_storage>
<EigVal type_id="opencv-matrix"><rows>1</rows><cols>3</cols><dt>f</dt>
  <data>0.2175 0.0188 0.0045</data></EigVal>
<EigVec type_id="opencv-matrix"><rows>3</rows><cols>3</cols><dt>f</dt>
  <data>-0.5675 0.7192 0.4009 -0.5808 -0.0045 -0.8140 -0.5836 -0.6948 0.4203</data></EigVec>
</opencv_storage>
"""


def random_transform_source(tmp_path):
    """Random-side crops, colour jitter and intensity noise over 8 images of different sizes, randomized."""
    images = Images(tmp_path, count=8, sizes=[(5 + i % 3, 7 + i % 2) for i in range(8)])
    eigen = tmp_path / "eigen.xml"
    eigen.write_text(EIGEN_XML)
    transforms = [T.crop(crop_type="randomside", side_ratio=(0.5, 0.9), jitter_type="uniratio"),
                  T.scale(width=4, height=3, channels=3), T.color(0.3, 0.3, 0.3),
                  {"type": "Intensity", "intensityStdDev": 0.1, "intensityFile": str(eigen)}]
    return lambda: cntkio.MinibatchSource(cntkio.ImageDeserializer(str(images.map), image_streams(transforms)),
                                          randomize=True)


def features_of(minibatches):
    return [mb["features"].asarray().copy() for mb in minibatches]


def test_a_restored_source_continues_the_random_transforms_exactly(tmp_path):
    make = random_transform_source(tmp_path)
    run = make()
    for _ in range(4):
        run.next_minibatch(3)
    checkpoint = run.get_checkpoint_state()
    assert "transformDraws" in checkpoint
    expected = features_of(run.next_minibatch(3) for _ in range(6))  # on into the next sweep

    restored = make()
    restored.restore_from_checkpoint(checkpoint)
    got = features_of(restored.next_minibatch(3) for _ in range(6))
    assert all(np.array_equal(a, b) for a, b in zip(got, expected))
    fresh = features_of(make().next_minibatch(3) for _ in range(6))  # engines at their seeds: other pixels
    assert not all(np.array_equal(a, b) for a, b in zip(fresh, expected))


def test_epoch_two_of_a_fresh_source_equals_epoch_two_of_an_uninterrupted_one(tmp_path):
    make = random_transform_source(tmp_path)
    run = make()
    epochs = [features_of(run.epoch_minibatches(3, epoch_index=e, epoch_size=8)) for e in range(3)]
    fresh = features_of(make().epoch_minibatches(3, epoch_index=2, epoch_size=8))
    assert len(fresh) == len(epochs[2]) == 3
    assert all(np.array_equal(a, b) for a, b in zip(fresh, epochs[2]))
    assert not all(np.array_equal(a, b) for a, b in zip(epochs[1], epochs[2]))


def test_image_size_limits_are_deserializer_keywords(images):
    d = cntkio.ImageDeserializer(str(images.map), image_streams([]), max_image_pixels=H * W - 1)
    assert "maxImagePixels = %d" % (H * W - 1) in d.config_text()
    with pytest.raises(cntkio.FormatError, match=r"declares 7 x 5 pixels \(PNG\), more than maxImagePixels = 34"):
        read_all(cntkio.MinibatchSource(d, randomize=False, max_sweeps=1))
    d = cntkio.Base64ImageDeserializer(str(images.base64_map), image_streams([]), max_image_bytes=H * W * 3 - 1)
    with pytest.raises(cntkio.FormatError, match="105 bytes decoded, more than maxImageBytes = 104"):
        read_all(cntkio.MinibatchSource(d, randomize=False, max_sweeps=1))
    with pytest.raises(ValueError, match="max_image_bytes"):
        cntkio.ImageDeserializer("map.txt", image_streams([]), max_image_bytes=0)


def test_a_single_transform_where_a_list_is_due_is_named():
    # cntk.io refuses transforms=<one transform> too; the message says what to write
    scale = T.scale(width=4, height=4, channels=3)
    with pytest.raises(TypeError, match=r"list of transforms.*\[transform\]"):
        cntkio.ImageDeserializer("map.txt", cntkio.StreamDefs(f=cntkio.StreamDef(field="image", transforms=scale)))


@requires_images
def test_a_zip_entry_name_held_twice_is_an_error_naming_it(tmp_path):
    # CNTK counts the archive's entries that match the requested names: a name held twice fails the count
    # ("Cannot retrieve image data ..."); which of the two entries is meant is unknown
    import warnings
    import zipfile

    def ppm(value):
        return b"P6\n2 1\n255\n" + bytes([value] * 6)

    archive = tmp_path / "dup.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("x.ppm", ppm(10))
            z.writestr("x.ppm", ppm(200))
            z.writestr("y.ppm", ppm(50))
    mapping = tmp_path / "map.txt"
    mapping.write_text("%s@/y.ppm\t0\n%s@/x.ppm\t1\n" % (archive, archive))
    with pytest.raises(cntkio.FormatError, match=r"Cannot retrieve image data.*line 2.*more than once: x\.ppm"):
        cntkio.MinibatchSource(cntkio.ImageDeserializer(str(mapping), cntkio.StreamDefs(
            f=cntkio.StreamDef(field="image", transforms=[T.scale(width=2, height=1, channels=3)]),
            l=cntkio.StreamDef(field="label", shape=2))), randomize=False)


@requires_images
def test_a_missing_zip_archive_names_the_map_line(tmp_path):
    mapping = tmp_path / "map.txt"
    mapping.write_text("%s@/a.ppm\t0\n" % (tmp_path / "none.zip"))
    with pytest.raises(OSError, match=r"none\.zip.*named at .*map\.txt', line 1"):
        cntkio.MinibatchSource(cntkio.ImageDeserializer(str(mapping), cntkio.StreamDefs(
            f=cntkio.StreamDef(field="image", transforms=[T.scale(width=2, height=1, channels=3)]),
            l=cntkio.StreamDef(field="label", shape=2))), randomize=False)
