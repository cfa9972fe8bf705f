"""Comparing the arrays of a cntkio.MinibatchSource built from deserializer objects with what the C++ CLI
`cntkio dump` prints for the same reader configuration (the source's ``config_text``)."""

import subprocess

from test_conformance_arrays import stream_lines


def python_dump(source, streams, minibatch_size, epochs=1, epoch_size=None, max_minibatches=None):
    """The dump text of v1 epochs read through Python: every minibatch (or the first ``max_minibatches`` of
    each epoch), the streams in order, one sample per line (the format of `cntkio dump`)."""
    lines = []
    for epoch in range(epochs):
        for k, mb in enumerate(source.epoch_minibatches(minibatch_size, epoch, epoch_size)):
            if k == max_minibatches:
                break
            for name in streams:
                lines.extend(stream_lines(mb[name]))
    return "".join(lines)


def cli_dump(cli, source, streams, minibatch_size, tmp_path, epochs=1, epoch_size=None, cwd=None):
    """`cntkio dump` of the source's configuration (written to a file in tmp_path)."""
    config = tmp_path / "python_reader.cntk"
    config.write_text("Test = [\n%s]\n" % source.config_text)
    args = [cli, "dump", "--config", str(config), "--section", "Test", "--mb-size", str(minibatch_size),
            "--epochs", str(epochs), "--epoch-size", "sweep" if epoch_size is None else str(epoch_size),
            "--features", ",".join(streams), "--separate-layouts", "--max-minibatches", "1000000000"]
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_equals_cli_dump(cli, make_source, streams, minibatch_size, tmp_path, epochs=1, epoch_size=None,
                           cwd=None):
    """Python's arrays print exactly as `cntkio dump` of the same config, and the dump is not empty."""
    source = make_source()
    expected = cli_dump(cli, source, streams, minibatch_size, tmp_path, epochs, epoch_size, cwd)
    assert expected.strip(), "the C++ dump is empty"
    assert python_dump(make_source(), streams, minibatch_size, epochs, epoch_size) == expected
