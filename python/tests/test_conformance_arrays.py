"""Arrays read through Python equal `cntkio dump` (the C++ path the conformance runner checks against CNTK's
controls) for CTF and CBF cases of ../shared/conformance: the same minibatches, values and layouts."""

import json
import subprocess

import pytest

import cntkio
from conftest import conformance_dir

CTF_CASES = [
    "CNTKTextFormatReader_Simple_dense",
    "CNTKTextFormatReader_1x10_MI_1_dense",
    "CNTKTextFormatReader_10x10_dense",
    "CNTKTextFormatReader_50x20_jagged_sequences_dense",
    "CNTKTextFormatReader_50x20_jagged_sequences_dense__defMBSize",
    "CNTKTextFormatReader_10x10_sparse",
    "CNTKTextFormatReader_3x5_MI_sparse",
    "CNTKTextFormatReader_100x100_jagged_sparse",
    "CNTKTextFormatReader_ref_data_with_escape_sequences",
]
CBF_CASES = [
    "CNTKBinaryReader_Simple_dense",
    "CNTKBinaryReader_10x10_dense",
    "CNTKBinaryReader_50x20_jagged_sequences_dense",
    "CNTKBinaryReader_10x10_sparse",
]


def load_case(name):
    cases = {c["name"]: c for c in json.loads((conformance_dir() / "cases.json").read_text())}
    return cases[name]


def cbf_available():
    return "CNTKBinaryFormatDeserializer" in cntkio._core.known_deserializer_types()


def python_dump(case):
    """The dump text written from the arrays of cntkio.MinibatchSource.from_config (v1 epochs, at most 10
    minibatches each, features then labels, time-major over the layout's parallel rows, padding skipped)."""
    source = cntkio.MinibatchSource.from_config(str(conformance_dir() / case["config"]), case["section"],
                                                case["overrides"])
    lines = []
    for epoch in range(case["epochs"]):
        written = 0
        for mb in source.epoch_minibatches(case["mbSize"], epoch, case["epochSize"], case["subsetNum"],
                                           case["numSubsets"]):
            if written == 10:
                break
            for name in case["featureStreams"] + case["labelStreams"]:
                lines.extend(stream_lines(mb[name]))
            written += 1
    return "".join(lines)


def stream_lines(data):
    parallel, steps, entries = data.layout
    sequences = data.as_sequences()
    cell = {}  # (row, time step) -> (sequence, step within it)
    for k, (_, row, t_begin, t_end) in enumerate(entries.tolist()):
        for t in range(max(t_begin, 0), min(t_end, steps)):
            cell[(row, t)] = (k, t - max(t_begin, 0))
    lines = []
    for t in range(steps):
        for s in range(parallel):
            if (s, t) not in cell:
                continue
            k, i = cell[(s, t)]
            sample = sequences[k][i]
            values = sample.toarray().ravel() if data.is_sparse else sample.ravel()
            lines.append(" ".join("%.6g" % v for v in values) + "\n")
    return lines


def cli_dump(cli, case):
    args = [cli, "dump", "--config", str(conformance_dir() / case["config"]), "--section", case["section"],
            "--epoch-size", str(case["epochSize"]), "--mb-size", str(case["mbSize"]), "--epochs",
            str(case["epochs"]), "--features", ",".join(case["featureStreams"]), "--labels",
            ",".join(case["labelStreams"]), "--subset", str(case["subsetNum"]), "--subsets", str(case["numSubsets"])]
    if not case["sharedLayout"]:
        args.append("--separate-layouts")
    for o in case["overrides"]:
        args += ["--set", o]
    result = subprocess.run(args, cwd=conformance_dir() / case["cwd"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def check_case(cli, name, monkeypatch):
    case = load_case(name)
    monkeypatch.chdir(conformance_dir() / case["cwd"])
    expected = cli_dump(cli, case)
    assert expected, "the C++ dump of %s is empty" % name
    assert python_dump(case) == expected


@pytest.mark.parametrize("name", CTF_CASES)
def test_ctf_arrays_equal_cpp_dump(cli, name, monkeypatch):
    check_case(cli, name, monkeypatch)


@pytest.mark.parametrize("name", CBF_CASES)
def test_cbf_arrays_equal_cpp_dump(cli, name, monkeypatch):
    if not cbf_available():
        pytest.skip("the C++ CBF deserializer (CNTKBinaryFormatDeserializer, issue: CBF reader) is not built in")
    check_case(cli, name, monkeypatch)


def test_cbf_deserializer_object_reads_like_the_config(monkeypatch):
    """cntkio.CBFDeserializer (cntk.io style, with a renamed stream) reads the same data as the conformance
    config of the file."""
    if not cbf_available():
        pytest.skip("the C++ CBF deserializer (CNTKBinaryFormatDeserializer, issue: CBF reader) is not built in")
    case = load_case("CNTKBinaryReader_10x10_dense")
    monkeypatch.chdir(conformance_dir() / case["cwd"])
    by_config = cntkio.MinibatchSource.from_config(str(conformance_dir() / case["config"]), case["section"],
                                                   ["randomize=false"], max_sweeps=1)
    names = [i.name for i in by_config.stream_infos()]
    renamed = {n: cntkio.StreamDef(field=n) for n in names}
    renamed["renamed"] = renamed.pop(names[0])
    by_object = cntkio.MinibatchSource(cntkio.CBFDeserializer("10x10_dense.bin", renamed), randomize=False,
                                       max_sweeps=1)
    assert [i.name for i in by_object.stream_infos()] == ["renamed"] + names[1:]
    assert [i.name for i in cntkio.MinibatchSource(cntkio.CBFDeserializer("10x10_dense.bin")).stream_infos()] \
        == names
    a = by_config.next_minibatch(100)
    b = by_object.next_minibatch(100)
    assert by_object.next_minibatch(100) == {}
    for i, name in enumerate(names):
        x, y = a[name], b["renamed" if i == 0 else name]
        assert x.num_sequences == y.num_sequences == 10 and x.num_samples == y.num_samples
        assert (x.asarray() == y.asarray()).all() and (x.mask == y.mask).all()


def test_cbf_double_file_needs_double_precision_as_in_cntk(monkeypatch):
    """cntk.io reads float only; a CBF file of doubles is refused with CNTK's text, naming the file and input."""
    if not cbf_available():
        pytest.skip("the C++ CBF deserializer (CNTKBinaryFormatDeserializer, issue: CBF reader) is not built in")
    monkeypatch.chdir(conformance_dir() / "data/CNTKBinaryReader")
    with pytest.raises(cntkio.FormatError) as e:
        cntkio.MinibatchSource(cntkio.CBFDeserializer("10x10_sparse.bin"))
    assert str(e.value).startswith("Unsupported combination of the input data type 1 and precision 1. "
                                   "At the moment, both have to match. (the input stores double values")
    assert "[file '10x10_sparse.bin', byte offset " in str(e.value)
    assert isinstance(e.value, ValueError)
