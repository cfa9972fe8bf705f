"""A script written for cntk.io in CNTK's documented style (the tutorials' create_reader, input_map, a
next_minibatch loop, checkpointing) runs unchanged after `import cntkio as io`."""

import subprocess
import sys
import textwrap

from conftest import REPO

SCRIPT = textwrap.dedent('''
    import cntkio as io  # was: import cntk.io as io
    from cntkio import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs, INFINITELY_REPEAT

    input_dim, num_label_classes = 3, 20

    def create_reader(path, is_training, input_dim, num_label_classes):
        labelStream = StreamDef(field='label', shape=num_label_classes, is_sparse=True)
        featureStream = StreamDef(field='features', shape=input_dim, is_sparse=False)
        deserializer = CTFDeserializer(path, StreamDefs(labels=labelStream, features=featureStream))
        return MinibatchSource(deserializer, randomize=is_training,
                               max_sweeps=INFINITELY_REPEAT if is_training else 1)

    class Variable:  # stands in for cntk.input_variable: any hashable key works in input_map
        def __init__(self, name):
            self.name = name

    x, y = Variable('x'), Variable('y')
    reader_test = create_reader(PATH, False, input_dim, num_label_classes)
    test_input_map = {y: reader_test.streams.labels, x: reader_test.streams.features}
    sequences = samples = labels = minibatches = 0
    label_sum = 0.0
    while True:
        mb = reader_test.next_minibatch(64, input_map=test_input_map)
        if not mb:
            break
        minibatches += 1
        sequences += mb[x].num_sequences
        samples += mb[x].num_samples
        labels += mb[y].num_samples
        label_sum += mb[y].asarray().sum()
        assert mb[x].asarray().shape[0] == mb[x].num_sequences and mb[x].is_sparse is False
    print(minibatches, sequences, samples, labels, int(label_sum))

    reader_train = create_reader(PATH, True, input_dim, num_label_classes)
    features_si = reader_train['features']
    for i in range(3):
        mb = reader_train.next_minibatch(50)
    checkpoint = reader_train.get_checkpoint_state()
    after = [reader_train.next_minibatch(50)[features_si].asarray().sum() for _ in range(4)]
    reader_train.restore_from_checkpoint(checkpoint)
    again = [reader_train.next_minibatch(50)[features_si].asarray().sum() for _ in range(4)]
    print(after == again, mb[features_si].end_of_sweep in (True, False), io.FULL_DATA_SWEEP > 0)
''')


def test_cntk_style_script_runs_after_import_cntkio_as_io(tmp_path):
    data = REPO / "examples" / "sequences.ctf"
    script = tmp_path / "cntk_script.py"
    script.write_text("PATH = %r\n" % str(data) + SCRIPT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    minibatches, sequences, samples, labels, label_sum = (int(v) for v in lines[0].split())
    # examples/sequences.ctf: 300 sequences, one line per step, one one-hot label on each sequence's first step
    steps = sum(1 for line in data.read_text().splitlines() if line.strip() and not line.startswith("#"))
    assert (sequences, samples, labels, label_sum) == (300, steps, 300, 300)
    assert minibatches >= steps // 64
    assert lines[1] == "True True True"
