#!/usr/bin/env python3
"""Coverage-guided fuzz target (atheris, libFuzzer's engine for Python) for tools/merge_dataset_zips.py's
parser of its input: one part's bytes through read_part (the zip container, the names, dataset.json and
its labels), the data of every image (read_entry: CRC, inflation, counted sizes), the checks of the
part as a shard set of its own (plan), and the merged archive it writes (write_archive).

An input ends in a clean refusal (merge_dataset_zips.Refused, whose line must be one printable line)
or in a valid parse, whose merged archive must read back, with Python's zipfile and with the tool's own
reader, as the same images and labels. Anything else is a finding: another exception (a traceback the
user would see), an assertion, a hang (-timeout) or too much memory (-rss_limit_mb).

The first byte picks the mode; the rest is the input:
  0  a part, every check;          1  a part, CRCs not checked (so mutations reach dataset.json);
  2  dataset.json's bytes alone;   3  a part, every check, as a partial shard set.

    python3 tests/fuzz/fuzz_merge_zips.py --make-seeds DIR     # writes the seeds (valid and hostile parts)
    python3 tests/fuzz/fuzz_merge_zips.py [libFuzzer flags] CORPUS_DIR [SEED_DIR]

scripts/fuzz.sh runs it for a bounded time after the C++ targets.
"""
import io
import json
import os
import sys
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tools'))


def img(i):
    s = f'{i:08d}'
    return f'{s[:5]}/img{s}.png'


def make_seeds(folder):
    """Valid parts in each layout the tool reads, a few hostile ones, and dataset.json texts; each
    prefixed by its mode byte. Also the archives sg2 wrote (tests/data/merge)."""
    os.makedirs(folder, exist_ok=True)
    seeds = {}

    def part(name, n, first=0, label=2, compression=zipfile.ZIP_STORED, zip64=False, extra=(), order=None,
             json_text=None):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, 'w', compression=compression) as z:
            idx = list(range(first, first + n)) if order is None else order
            for i in idx:
                with z.open(img(i), 'w', force_zip64=zip64) as f:
                    f.write(bytes((i * 31 + k) & 0xff for k in range(20 + i)))
            for ename, data in extra:
                z.writestr(ename, data)
            labels = None if label is None else [[img(i), label] for i in sorted(idx)]
            if json_text != '':
                z.writestr('dataset.json', json_text or json.dumps({'labels': labels}))
        seeds[name] = buf.getvalue()

    part('cond', 3)
    part('uncond', 2, label=None)
    part('empty', 0)
    part('deflated', 3, compression=zipfile.ZIP_DEFLATED)
    part('zip64', 2, zip64=True)
    part('unordered', 3, order=[2, 0, 1])
    part('block', 2, first=998)
    part('traversal', 1, extra=[('../evil.png', b'x')])
    part('folder', 1, extra=[('00000/', b'')])
    link = zipfile.ZipInfo(img(5))
    link.external_attr = 0o120777 << 16
    part('symlink', 1, extra=[(link, b'target')])
    part('bomb', 1, compression=zipfile.ZIP_DEFLATED, extra=[(img(1), bytes(200000))])
    part('gap', 3, order=[0, 1, 3])
    part('nojson', 2, json_text='')
    part('deep', 1, json_text='[' * 3000 + ']' * 3000)
    # zip64 end records and zip64 extra fields in the central directory (as past 65,535 entries or
    # 4 GiB), by lowering zipfile's limits while the seed is written.
    limits = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    try:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
        part('zip64-records', 2, zip64=True)
        part('zip64-records-deflated', 2, compression=zipfile.ZIP_DEFLATED, label=None, zip64=True)
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limits
    # A stream (data descriptors, as libarchive writes).
    raw = io.BytesIO()

    class Stream:
        def write(self, b):
            return raw.write(b)

        def flush(self):
            pass
    with zipfile.ZipFile(Stream(), 'w') as z:
        z.writestr(img(0), b'\x89PNG\r\n\x1a\n')
        z.writestr('dataset.json', '{"labels": null}')
    seeds['stream'] = raw.getvalue()
    for name, data in seeds.items():
        for mode in (0, 1):
            with open(os.path.join(folder, f'{name}-{mode}'), 'wb') as f:
                f.write(bytes([mode]) + data)
    texts = ['{"labels": null}', '{"labels": []}', json.dumps({'labels': [[img(i), i] for i in range(4)]}),
             '{"labels": [["00000/img00000000.png", 1], ["00000/img00000000.png", 2]]}', '[[[[]]]]',
             '{"labels": [["\\u001b", -1]], "x": NaN}']
    for k, text in enumerate(texts):
        with open(os.path.join(folder, f'json{k}-2'), 'wb') as f:
            f.write(b'\x02' + text.encode())
    fixtures = os.path.join(ROOT, 'tests', 'data', 'merge')
    for name in sorted(os.listdir(fixtures)) if os.path.isdir(fixtures) else []:
        with open(os.path.join(fixtures, name), 'rb') as f:
            data = f.read()
        for mode in (0, 3):
            with open(os.path.join(folder, f'sg2-{name}-{mode}'), 'wb') as f:
                f.write(bytes([mode]) + data)


def check_line(err):
    line = err.line()
    assert line.startswith('merge_dataset_zips: error: '), line
    assert line.isprintable() and len(line) < 2000, repr(line)  # one line, nothing for a terminal to act on


def one_input(data):
    if not data:
        return
    mode, body = data[0] % 4, data[1:]
    where = 'fuzz-shard0of1.zip'
    try:
        if mode == 2:
            names = {m.image_name(i) for i in range(4)}
            labels = m.parse_labels(body, names, where)
            assert labels is None or (set(labels) == names and all(type(v) is int and v >= 0 for v in labels.values()))
            return
        f = io.BytesIO(body)
        part = m.read_part(f, len(body), where, check_crc=mode != 1)
        for e in part.images:
            n = [0]

            def count(b):
                n[0] += len(b)
            m.read_entry(f, e, where, count, check_crc=mode != 1)
            assert n[0] == e.usize
        part.shard = ('fuzz', 0, 1)
        ordered, missing = m.plan([part], allow_partial=mode == 3)
        assert not missing
        out = io.BytesIO()
        images = m.write_archive(out, ordered, lambda p: io.BytesIO(body))
    except m.Refused as err:
        check_line(err)
        return
    # Accepted: the merged archive holds the same images and labels, for zipfile and for the tool.
    assert images == len(part.images)
    names = [e.name.decode('ascii') for e in part.images]
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as z:
        assert z.namelist() == names + ['dataset.json'], z.namelist()
        assert z.testzip() is None
        labels = json.loads(z.read('dataset.json'))['labels']
    assert labels == (None if part.labels is None else [[n, v] for n, v in zip(names, part.labels)])
    again = m.read_part(io.BytesIO(out.getvalue()), len(out.getvalue()), 'merged.zip')
    assert [e.name for e in again.images] == [e.name for e in part.images] and again.labels == part.labels


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--make-seeds':
        make_seeds(sys.argv[2])
        return
    import atheris  # pip install atheris (scripts/setup.sh installs it)
    global m
    with atheris.instrument_imports():
        import merge_dataset_zips as m
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == '__main__':
    main()
