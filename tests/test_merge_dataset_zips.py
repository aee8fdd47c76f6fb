#!/usr/bin/env python3
"""Tests of tools/merge_dataset_zips.py on hostile input (issue 23): every refusal is one line
`merge_dataset_zips: error: FILE: problem`, exit 1, and nothing is left behind (no OUT, no temporary,
no lock file); a link planted at a predictable name is never followed; interrupts and a second merge
into the same OUT at the same time leave no half archive. Standard library only (unittest).

    python3 tests/test_merge_dataset_zips.py [-v] [HostileParts|ShardSet|Output|Interrupts|ValidMerges]

ctest runs each class as MergeDatasetZips.<class> (tests/CMakeLists.txt).
"""
import json
import os
import resource
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, 'tools')
TOOL = os.path.join(TOOLS, 'merge_dataset_zips.py')
FIXTURES = os.path.join(ROOT, 'tests', 'data', 'merge')
sys.path.insert(0, TOOLS)
import merge_dataset_zips as mdz  # noqa: E402

ERR = 'merge_dataset_zips: error: '
LOCAL = struct.Struct('<4s5H3L2H')
CENTRAL = struct.Struct('<4s6H3L5H2L')
EOCD = struct.Struct('<4s4H2LH')
DOS_DATE = (2024 - 1980) << 9 | 1 << 5 | 1  # 2024-01-01
DOS_TIME = 12 << 11

# A merge that stops when it starts writing (the temporary made, the lock held) until a file appears.
PAUSED_DRIVER = r'''
import os, sys, time
sys.path.insert(0, sys.argv[1])
import merge_dataset_zips as m
started, go = sys.argv[2], sys.argv[3]
write_archive = m.write_archive
def paused(*args):
    open(started, 'w').close()
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    return write_archive(*args)
m.write_archive = paused
sys.exit(m.main(sys.argv[4:]))
'''


def img(i):
    s = f'{i:08d}'
    return f'{s[:5]}/img{s}.png'


def data(i):
    return bytes((i * 7 + k) & 0xff for k in range(40 + i))


def labels_json(first, count, label):
    if label is None:
        return '{"labels": null}'
    return json.dumps({'labels': [[img(i), label] for i in range(first, first + count)]})


def too_many_digits():
    """Python's message for an integer of 5000 digits ('' before 3.11, which has no limit)."""
    try:
        int('9' * 5000)
    except ValueError as err:
        return str(err)
    return ''


def member(name, plain, method=0, **kw):
    """An entry for raw_zip: `plain` stored, or deflated when method is 8."""
    name = name.encode() if isinstance(name, str) else name
    plain = plain.encode() if isinstance(plain, str) else plain
    if method == 8:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        stored = c.compress(plain) + c.flush()
    else:
        stored = plain
    m = dict(name=name, data=stored, method=method, crc=zlib.crc32(plain), usize=len(plain), flags=0,
             attr=(stat.S_IFREG | 0o644) << 16, made_by=3 << 8 | 20)
    m.update(kw)
    return m


def members(first, count, label=2):
    """The entries sg2 writes for images first..first+count-1 (and dataset.json)."""
    ms = [member(img(i), data(i)) for i in range(first, first + count)]
    ms.append(member('dataset.json', labels_json(first, count, label)))
    return ms


def raw_zip(ms, prefix=b'', suffix=b'', central_only=(), zip64=False):
    """A zip archive of the entries `ms` (dicts from member), each field as given, so that any of them
    can lie; `central_only`: extra central directory entries (with an explicit offset). zip64: every
    central size and offset in a zip64 extra field (m['extra'] replaces it), and zip64 end records."""
    out = bytearray(prefix)
    central = bytearray()
    for m in list(ms) + list(central_only):
        m = dict(m)
        if 'offset' not in m:
            m['offset'] = len(out)
            lname = m.get('local_name', m['name'])
            out += LOCAL.pack(b'PK\x03\x04', 20, m['flags'], m.get('local_method', m['method']), DOS_TIME, DOS_DATE,
                              m['crc'], len(m['data']), m['usize'], len(lname), 0) + lname + m['data']
        sizes = (m.get('csize', len(m['data'])), m['usize'], m['offset'])
        extra = b''
        if zip64:
            extra = m.get('extra', struct.pack('<2H3Q', 1, 24, sizes[1], sizes[0], sizes[2]))
            sizes = (0xffffffff,) * 3
        central += CENTRAL.pack(b'PK\x01\x02', m['made_by'], 20, m['flags'], m['method'], DOS_TIME, DOS_DATE, m['crc'],
                                sizes[0], sizes[1], len(m['name']), len(extra), 0, 0, 0, m['attr'],
                                sizes[2]) + m['name'] + extra
    n = len(ms) + len(central_only)
    if not zip64:
        return bytes(out + central + EOCD.pack(b'PK\x05\x06', 0, 0, n, n, len(central), len(out), 0) + suffix)
    z_at = len(out) + len(central)
    records = (struct.pack('<4sQ2H2L4Q', b'PK\x06\x06', 44, 45, 45, 0, 0, n, n, len(central), len(out)) +
               struct.pack('<4sLQL', b'PK\x06\x07', 0, z_at, 1) +
               EOCD.pack(b'PK\x05\x06', 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0))
    return bytes(out + central + records + suffix)


class MergeTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix='sg2-merge-')
        self.dir = self._tmp.name
        self.out = os.path.join(self.dir, 'out.zip')

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, content):
        p = self.path(name)
        with open(p, 'wb') as f:
            f.write(content)
        return p

    def shard(self, index, count, first, n, label=2, run='fakes'):
        """A valid shard archive (written with raw_zip, as sg2 lays it out)."""
        width = len(str(count))
        return self.write(f'{run}-shard{index:0{width}d}of{count}.zip', raw_zip(members(first, n, label)))

    @staticmethod
    def read(path):
        with open(path, 'rb') as f:
            return f.read()

    def run_tool(self, *args, env=None):
        r = subprocess.run([sys.executable, TOOL] + [str(a) for a in args], capture_output=True, timeout=120, env=env)
        return r.returncode, r.stdout.decode('utf-8', 'replace'), r.stderr.decode('utf-8', 'replace')

    def assert_nothing_written(self, before):
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(before), 'the merge left files behind')

    def assert_refused(self, parts, problem, out=None, args=()):
        """The merge of `parts` into OUT exits 1 with exactly `problem` (a full line after the prefix, or
        a (file, problem) pair) and leaves the folder as it was."""
        out = out or self.out
        before = os.listdir(self.dir)
        rc, so, se = self.run_tool(*args, out, *parts)
        if isinstance(problem, tuple):
            problem = f'{problem[0]}: {problem[1]}'
        self.assertEqual((rc, so, se), (1, '', ERR + problem + '\n'))
        self.assert_nothing_written(before)

    def refuse_part(self, ms, problem, **zip_kw):
        """Shard 0 of 2 built from the entries `ms`, with a valid shard 1 (positions 3-4): refused with
        `problem`, naming shard 0."""
        bad = self.write('fakes-shard0of2.zip', raw_zip(ms, **zip_kw))
        good = self.shard(1, 2, 3, 2)
        self.assert_refused([bad, good], (bad, problem))

    def merged(self, path=None):
        """(names, {name: bytes}, labels) of a merged archive, checked with zipfile."""
        with zipfile.ZipFile(path or self.out) as z:
            self.assertIsNone(z.testzip())
            infos = z.infolist()
            for i in infos:
                self.assertEqual(i.compress_type, zipfile.ZIP_STORED)
            names = [i.filename for i in infos]
            content = {n: z.read(n) for n in names}
        self.assertEqual(names[-1], 'dataset.json')
        return names, content, json.loads(content['dataset.json'])['labels']


class HostileParts(MergeTest):
    """Every kind of hostile entry, name, size and dataset.json in one part."""

    def test_entry_names(self):
        cases = [
            ('../00000/img00000000.png', "a '..' component (a path outside the archive's folder)"),
            ('00000/../../etc/passwd', "a '..' component (a path outside the archive's folder)"),
            ('/tmp/00000/img00000000.png', 'an absolute path'),
            ('C:/img00000000.png', 'an absolute path'),
            ('./00000/img00000000.png', "an empty or '.' component (an alias of another name)"),
            ('00000//img00000000.png', "an empty or '.' component (an alias of another name)"),
            ('00000/./img00000000.png', "an empty or '.' component (an alias of another name)"),
            ('00000\\img00000000.png', 'the name holds a backslash (an alias of a path separator)'),
            ('00000/img00000000.png\x00.txt', 'the name holds a NUL byte'),
            ('\x1b[31m00000/img00000000.png', 'the name holds a control character'),
            ('00000/', 'a folder entry (sg2 writes none: only images and dataset.json)'),
            ('00000/img00000000.PNG', "not a dataset entry: the names are NNNNN/imgNNNNNNNN.png (dataset_tool.py's "
             'layout) and dataset.json'),
            ('00000/img0000000.png', "not a dataset entry: the names are NNNNN/imgNNNNNNNN.png (dataset_tool.py's "
             'layout) and dataset.json'),
            ('img00000000.png', "not a dataset entry: the names are NNNNN/imgNNNNNNNN.png (dataset_tool.py's "
             'layout) and dataset.json'),
            ('Dataset.json', "not a dataset entry: the names are NNNNN/imgNNNNNNNN.png (dataset_tool.py's "
             'layout) and dataset.json'),
            ('00001/img00000000.png', "not the name of image 0, which is '00000/img00000000.png' (dataset_tool.py's "
             'layout: the folder is the first 5 digits)'),
            ('00000/img000000000.png', "not the name of image 0, which is '00000/img00000000.png' (dataset_tool.py's "
             'layout: the folder is the first 5 digits)'),
        ]
        for name, problem in cases:
            with self.subTest(name=name):
                ms = members(0, 3)
                ms[0] = member(name, data(0))
                self.refuse_part(ms, f"entry '{mdz.esc(name.encode())}': {problem}")
        ms = members(0, 3)
        ms[0] = member(b'', data(0))
        self.refuse_part(ms, 'an entry with an empty name')

    def test_escaped_names_stay_one_printable_line(self):
        ms = members(0, 3)
        ms[0] = member(b'\x1b]0;pwned\x07\r\n\xff\\.png', data(0))
        bad = self.write('fakes-shard0of2.zip', raw_zip(ms))
        rc, _, se = self.run_tool(self.out, bad, self.shard(1, 2, 3, 2))
        self.assertEqual(rc, 1)
        self.assertEqual(se, f"{ERR}{bad}: entry '\\x1b]0;pwned\\x07\\x0d\\x0a\\xff\\x5c.png': the name holds a "
                         'control character\n')
        self.assertTrue(se[:-1].isprintable())
        # A file name with control characters, a backslash and bytes that are not UTF-8.
        name = b'ev\x1bil\\\xff-shard0of1.zip'
        p = os.path.join(os.fsencode(self.dir), name)
        with open(p, 'wb') as f:
            f.write(raw_zip(members(0, 1)[:-1]))
        r = subprocess.run([sys.executable, TOOL, self.out, p], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.decode(), f'{ERR}{self.dir}/ev\\x1bil\\x5c\\xff-shard0of1.zip: no dataset.json '
                         '(every archive sg2 writes has one)\n')

    def test_entry_kinds(self):
        link = (stat.S_IFLNK | 0o777) << 16
        cases = [
            (dict(attr=link), 'a symbolic link entry'),
            (dict(attr=(stat.S_IFDIR | 0o755) << 16), 'a folder entry (sg2 writes none: only images and dataset.json)'),
            (dict(attr=0x10, made_by=20), 'a folder entry (sg2 writes none: only images and dataset.json)'),
            (dict(attr=(stat.S_IFIFO | 0o644) << 16), 'not a regular file (unix mode 0o010644)'),
            (dict(flags=1), 'encrypted'),
            (dict(flags=0x40), 'encrypted'),
            (dict(method=12), 'compression method 12 (only stored and deflated entries are read)'),
            (dict(method=14), 'compression method 14 (only stored and deflated entries are read)'),
        ]
        for kw, problem in cases:
            with self.subTest(kw=kw):
                ms = members(0, 3)
                ms[1] = member(img(1), data(1), **kw)
                self.refuse_part(ms, f"entry '{img(1)}': {problem}")

    def test_sizes_and_data(self):
        name = f"entry '{img(1)}'"
        bomb = member(img(1), bytes(10 << 20), method=8)  # 10 MiB of zeros in about 10 KiB
        self.refuse_part([members(0, 3)[0], bomb] + members(0, 3)[2:],
                         f"{name}: deflated {len(bomb['data'])} bytes declare {10 << 20} bytes of data, more than "
                         '100x (a zip bomb?)')
        noise = bytes((k * 2654435761 >> 13) & 0xff for k in range(5000))
        cases = [
            (member(img(1), noise, method=8, usize=4000), f'{name}: inflates to more than its declared 4000 bytes'),
            (member(img(1), noise, method=8, usize=6000), f'{name}: inflates to 5000 bytes, not its declared 6000'),
            (member(img(1), noise, crc=zlib.crc32(noise) ^ 1), f'{name}: CRC-32 mismatch (damaged data)'),
            (member(img(1), noise, method=8, crc=zlib.crc32(noise) ^ 1), f'{name}: CRC-32 mismatch (damaged data)'),
            (member(img(1), noise, usize=4999), f'{name}: stored, but 5000 bytes in the archive for 4999 bytes of data'),
            (member(img(1), b'', method=8, data=b'\xff' * 100, usize=10), f'{name}: corrupt deflate data (Error -3 '
             'while decompressing data: invalid block type)'),
        ]
        for m, problem in cases:
            with self.subTest(problem=problem):
                ms = members(0, 3)
                ms[1] = m
                self.refuse_part(ms, problem)
        cut = member(img(1), noise, method=8)
        cut['data'] = cut['data'][:-50]
        ms = members(0, 3)
        ms[1] = cut
        self.refuse_part(ms, f'{name}: corrupt deflate data (the stream is cut short)')
        tail = member(img(1), noise, method=8)
        tail['data'] += b'more'
        ms = members(0, 3)
        ms[1] = tail
        self.refuse_part(ms, f'{name}: data after the end of its deflate stream')
        # The central directory lies about the size: the data would run into the central directory.
        ms = members(0, 3)
        ms[-1]['csize'] = ms[-1]['usize'] = len(ms[-1]['data']) + 100
        self.refuse_part(ms, "entry 'dataset.json': its data runs past the entries' area")

    def test_container(self):
        good = raw_zip(members(0, 3))
        cases = [
            (b'', 'not a zip archive (0 bytes)'),
            (b'not a zip archive at all', 'not a zip archive (no end of central directory record)'),
            (good[:-30], 'not a zip archive (no end of central directory record)'),
            (good + b'trailing', 'not a zip archive (no end of central directory record)'),
            (b'MZ' + b'\0' * 98 + good, 'corrupt zip archive: the central directory (%d bytes at %d) does not end where '
             'its end record starts (%d)' % (len(good) - 22 - good.index(b'PK\x01\x02'), good.index(b'PK\x01\x02'),
                                             len(good) - 22 + 100)),
        ]
        for content, problem in cases:
            with self.subTest(problem=problem):
                bad = self.write('fakes-shard0of2.zip', content)
                self.assert_refused([bad, self.shard(1, 2, 3, 2)], (bad, problem))
        # Two entries' bytes overlap: image 1's local header and data lie inside image 0's data (a small
        # file that inflates to many copies of its data).
        inner = member(img(1), data(1))
        inner_local = LOCAL.pack(b'PK\x03\x04', 20, 0, 0, DOS_TIME, DOS_DATE, inner['crc'], len(inner['data']),
                                 inner['usize'], len(inner['name']), 0) + inner['name'] + inner['data']
        outer = member(img(0), inner_local)
        start = LOCAL.size + len(outer['name'])
        inner['offset'] = start
        self.refuse_part([outer] + members(0, 3)[2:], f"entries '{img(0)}' and '{img(1)}' overlap at byte {start}",
                         central_only=[inner])
        # A local header that names another entry than the central directory does.
        ms = members(0, 3)
        ms[1]['local_name'] = b'../../../../tmp/evil.png'
        self.refuse_part(ms, f"entry '{img(1)}': its local header disagrees with the central directory (name "
                         "'../../../../tmp/evil.png', method 0)")
        ms = members(0, 3)
        ms[1]['local_method'] = 8
        self.refuse_part(ms, f"entry '{img(1)}': its local header disagrees with the central directory (name "
                         f"'{img(1)}', method 8)")
        ms = members(0, 3)
        ms[1]['offset'] = 1 << 30
        self.refuse_part(ms, f"entry '{img(1)}': its local header is outside the entries' area", central_only=[])

    def test_duplicates_and_dataset_json(self):
        ms = members(0, 3)
        ms.insert(1, member(img(0), data(0)))
        self.refuse_part(ms, f"entry '{img(0)}' is in the archive twice")
        ms = members(0, 3)
        ms.insert(0, member('dataset.json', '{"labels": null}'))
        self.refuse_part(ms, "entry 'dataset.json' is in the archive twice")
        self.refuse_part(members(0, 3)[:-1], 'no dataset.json (every archive sg2 writes has one)')
        pairs = '[["00000/img00000000.png", 2], ["00000/img00000001.png", 2], ["00000/img00000002.png", 2]]'
        cases = [
            ('', 'dataset.json is not valid JSON (Expecting value: line 1 column 1 (char 0))'),
            ('{"labels": [', 'dataset.json is not valid JSON (Expecting value: line 1 column 13 (char 12))'),
            (b'{"labels": null}\xff', 'dataset.json is not UTF-8 text'),
            ('[' * 100000 + ']' * 100000, 'dataset.json nests too deep'),
            ('{"labels": NaN}', 'dataset.json is not valid JSON (NaN is not JSON)'),
            ('{"labels": null, "labels": %s}' % pairs, "dataset.json is not valid JSON (the key 'labels' appears twice "
             'in one object)'),
            ('[]', 'dataset.json is not an object with "labels" ({"labels": null} or {"labels": [[name, class], ...]})'),
            ('{"label": null}', 'dataset.json is not an object with "labels" ({"labels": null} or {"labels": [[name, '
             'class], ...]})'),
            ('{"labels": null, "extra": 1}', "dataset.json holds more than \"labels\" ('extra'): sg2 writes only "
             'labels, and the merge would drop the rest'),
            ('{"labels": {}}', 'dataset.json: "labels" is a dict, not null or a list of [name, class] pairs'),
            ('{"labels": [["00000/img00000000.png"]]}', 'dataset.json: label 0 is not a [name, class] pair'),
            ('{"labels": [[0, 2]]}', 'dataset.json: label 0 is not a [name, class] pair'),
            ('{"labels": [["00000/img00000000.png", -1]]}', "dataset.json: the class of '00000/img00000000.png' is not "
             'an integer >= 0'),
            ('{"labels": [["00000/img00000000.png", true]]}', "dataset.json: the class of '00000/img00000000.png' is "
             'not an integer >= 0'),
            ('{"labels": [["00000/img00000000.png", 2.0]]}', "dataset.json: the class of '00000/img00000000.png' is "
             'not an integer >= 0'),
            ('{"labels": [["00000/img00000000.png", "2"]]}', "dataset.json: the class of '00000/img00000000.png' is "
             'not an integer >= 0'),
            ('{"labels": [["00000/img00000000.png", %s]]}' % ('9' * 5000), f'dataset.json is not valid JSON '
             f'({mdz.esc(too_many_digits(), 120)})'),
            ('{"labels": [["../x.png", 2]]}', "dataset.json: a label for '../x.png', which is not an image of this "
             'archive'),
            ('{"labels": [["\\u001b[2J", 2]]}', "dataset.json: a label for '\\x1b[2J', which is not an image of this "
             'archive'),
            ('{"labels": [["00000/img00000000.png", 2], ["00000/img00000000.png", 3]]}', "dataset.json: "
             "'00000/img00000000.png' is labelled twice"),
            ('{"labels": [["00000/img00000000.png", 2], ["00000/img00000002.png", 3]]}', 'dataset.json: 1 image has no '
             "label (the first: '00000/img00000001.png')"),
            ('{"labels": []}', "dataset.json: 3 images have no label (the first: '00000/img00000000.png')"),
        ]
        for text, problem in cases:
            with self.subTest(problem=problem):
                if not too_many_digits() and 'digits' in problem:
                    continue  # no limit on integer digits before Python 3.11
                ms = members(0, 3)
                ms[-1] = member('dataset.json', text)
                self.refuse_part(ms, problem)

    def test_dataset_json_size_limit(self):
        # The limit is 64 MiB + 64 bytes per image, checked on the declared size before any byte is read;
        # here with the limit lowered to 10 + 0 per image (a driver sets the module's constants).
        driver = ('import sys; sys.path.insert(0, sys.argv[1]); import merge_dataset_zips as m\n'
                  'm.JSON_LIMIT, m.JSON_PER_IMAGE = 10, 0\n'
                  'sys.exit(m.main(sys.argv[2:]))\n')
        parts = [self.shard(0, 2, 0, 3), self.shard(1, 2, 3, 2)]
        before = os.listdir(self.dir)
        r = subprocess.run([sys.executable, '-c', driver, TOOLS, self.out] + parts, capture_output=True, timeout=60)
        self.assertEqual((r.returncode, r.stderr.decode()), (1, f'{ERR}{parts[0]}: dataset.json is '
                         f'{len(labels_json(0, 3, 2))} bytes, more than the limit of 10\n'))
        self.assert_nothing_written(before)
        # A deflated dataset.json of more than 64 MiB of spaces: refused by the ratio, before inflating.
        limit = mdz.JSON_LIMIT + 3 * mdz.JSON_PER_IMAGE
        big = member('dataset.json', b' ' * (limit + 1), method=8)
        self.refuse_part(members(0, 3)[:-1] + [big], f"entry 'dataset.json': deflated {len(big['data'])} bytes declare "
                         f'{limit + 1} bytes of data, more than 100x (a zip bomb?)')

    def test_ratio_of_a_whole_part(self):
        # Ten central entries that all point at one deflated entry, each within the 100x bound: together
        # more than 100x the file, refused before their local headers are even read.
        first = member(img(0), b'', method=8, data=os.urandom(10000), usize=1000000)
        same = [dict(first, name=img(i).encode(), offset=0) for i in range(1, 10)]
        ms = [first, member('dataset.json', labels_json(0, 10, None))]
        blob = raw_zip(ms, central_only=same)
        total = 10 * 1000000 + len(labels_json(0, 10, None))
        self.refuse_part(ms, f'its entries declare {total} bytes from a file of {len(blob)} bytes, more than 100x '
                         '(a zip bomb?)', central_only=same)

    def test_zip64_fields(self):
        ms = members(0, 3)
        ms[1]['extra'] = struct.pack('<2HQ', 1, 8, ms[1]['usize'])
        self.refuse_part(ms, f"entry '{img(1)}': its zip64 extra field lacks a size or offset", zip64=True)
        ms = members(0, 3)
        ms[1]['extra'] = struct.pack('<2H', 1, 30)
        self.refuse_part(ms, f"entry '{img(1)}': a malformed extra field", zip64=True)
        ms = members(0, 3)
        ms[1]['extra'] = struct.pack('<2H3Q', 1, 24, 1, 1, 0) * 2
        self.refuse_part(ms, f"entry '{img(1)}': two zip64 extra fields", zip64=True)
        blob = bytearray(raw_zip(members(0, 3), zip64=True))
        record = blob.rindex(b'PK\x06\x06')
        blob[record + 4:record + 12] = struct.pack('<Q', 40)  # the record's size
        bad = self.write('fakes-shard0of2.zip', bytes(blob))
        self.assert_refused([bad, self.shard(1, 2, 3, 2)], (bad, 'corrupt zip64 end of central directory record'))

    def test_parts_that_are_not_files(self):
        missing = self.path('fakes-shard0of1.zip')
        self.assert_refused([missing], (missing, 'cannot read: No such file or directory'))
        fifo = self.path('fifo-shard0of1.zip')
        os.mkfifo(fifo)
        self.assert_refused([fifo], (fifo, 'not a regular file'))  # and no hang
        folder = self.path('dir-shard0of1.zip')
        os.mkdir(folder)
        self.assert_refused([folder], (folder, 'not a regular file'))

    def test_conditional_and_unconditional_mixed(self):
        a = self.shard(0, 2, 0, 3, label=2)
        b = self.shard(1, 2, 3, 2, label=None)
        self.assert_refused([a, b], (b, f'unconditional ({{"labels": null}}), but {a} is conditional (a class per '
                                     'image): the parts come from different runs'))


class ShardSet(MergeTest):
    """The parts' names and positions: one complete shard set of one run."""

    def test_names(self):
        a = self.shard(0, 2, 0, 3)
        b = self.shard(1, 2, 3, 2)
        plain = self.write('fakes.zip', self.read(a))
        self.assert_refused([plain, b], (plain, "not a shard archive's name: NAME-shardIofN.zip, as sg2 generate "
                                         '--outdir NAME.zip names the archives of a sharded run'))
        other = self.write('other-shard1of2.zip', self.read(b))
        self.assert_refused([a, other], (other, f"a shard of the run 'other', but {a} is of 'fakes'"))
        four = self.write('fakes-shard1of4.zip', self.read(b))
        self.assert_refused([a, four], (four, f'a shard of 4, but {a} is a shard of 2'))
        beyond = self.write('fakes-shard2of2.zip', self.read(b))
        self.assert_refused([a, beyond], (beyond, 'shard 2 of 2: the index must be below the count'))
        zero = self.write('fakes-shard0of0.zip', self.read(b))
        self.assert_refused([zero], (zero, 'shard count 0 is outside [1, 1048576]'))

    def test_missing_shards(self):
        parts = [self.shard(i, 8, i, 1) for i in (0, 1, 3, 4, 6, 7)]
        self.assert_refused(parts, ('fakes-shard*of8.zip', 'shards 2, 5 of 8 are missing (merge every part of the '
                                    'run, or pass --allow-partial)'))
        self.assert_refused(parts[:-1], ('fakes-shard*of8.zip', 'shards 2, 5, 7 of 8 are missing (merge every part '
                                         'of the run, or pass --allow-partial)'))
        one = [self.shard(0, 20, 0, 1)]
        self.assert_refused(one, ('fakes-shard*of20.zip', 'shards 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 9 more of 20 are '
                                  'missing (merge every part of the run, or pass --allow-partial)'))
        self.assert_refused([self.shard(1, 2, 3, 2)], ('fakes-shard*of2.zip', 'shard 0 of 2 is missing (merge every '
                                                       'part of the run, or pass --allow-partial)'))

    def test_allow_partial(self):
        parts = [self.shard(i, 4, 2 * i, 2) for i in (0, 1, 3)]
        rc, so, se = self.run_tool('--allow-partial', self.out, *parts)
        self.assertEqual((rc, so, se), (0, f'merge_dataset_zips: 6 images from 3 archives in {self.out}\n',
                                        'merge_dataset_zips: warning: fakes-shard*of4.zip: shard 2 of 4 is missing '
                                        '(--allow-partial): the merged set has gaps\n'))
        names, _, labels = self.merged()
        self.assertEqual(names, [img(i) for i in (0, 1, 2, 3, 6, 7)] + ['dataset.json'])
        self.assertEqual(labels, [[img(i), 2] for i in (0, 1, 2, 3, 6, 7)])
        # Still one block per part, no position twice, blocks in shard order.
        os.remove(self.out)
        swapped = [self.write('fakes-shard0of4.zip', raw_zip(members(6, 2))),
                   self.write('fakes-shard3of4.zip', raw_zip(members(0, 2)))]
        self.assert_refused(swapped, (swapped[1], 'shard 3 of 4 holds positions 0-1, before shard 0 (positions 6-7): '
                                      'the shards are out of order'), args=['--allow-partial'])

    def test_positions(self):
        # A position in two parts (the same archive twice), or a shard index twice.
        a = self.shard(0, 2, 0, 3)
        self.assert_refused([a, a], (a, f'00000/img00000000.png is in two archives (also in {a})'))
        os.mkdir(self.path('copy'))
        empty = self.shard(3, 4, 2, 0)
        again = os.path.join(self.dir, 'copy', 'fakes-shard3of4.zip')
        os.link(empty, again)
        parts = [self.shard(0, 4, 0, 1), self.shard(1, 4, 1, 1), self.shard(2, 4, 2, 0), empty, again]
        self.assert_refused(parts, (again, f'shard 3 of 4 is given twice (also {empty})'))
        for p in parts:
            os.remove(p)
        os.rmdir(self.path('copy'))
        # A gap between two parts, a gap inside one, a first block that does not start at 0.
        cases = [
            ([(0, 3), (4, 2)], 1, 'shard 1 of 2 starts at position 4, so position 3 is in no part'),
            ([(0, 3), (6, 2)], 1, 'shard 1 of 2 starts at position 6, so positions 3-5 are in no part'),
            ([(1, 2), (3, 2)], 0, 'shard 0 of 2 starts at position 1, so position 0 is in no part'),
            ([(3, 2), (0, 3)], 1, 'shard 1 of 2 holds positions 0-2, before shard 0 (positions 3-4): the shards are '
             'out of order'),
            ([(0, 2), (2, 4)], 0, 'shard 0 of 2 holds positions 0-1, but shard 0 of a 6-image run holds positions 0-2: '
             'a part of another run?'),
            ([(0, 3), (3, 0)], 0, 'shard 0 of 2 holds positions 0-2, but shard 0 of a 3-image run holds positions 0-1: '
             'a part of another run?'),
        ]
        for blocks, blamed, problem in cases:
            with self.subTest(problem=problem):
                parts = [self.shard(i, 2, first, n) for i, (first, n) in enumerate(blocks)]
                self.assert_refused(parts, (parts[blamed], problem))
                for p in parts:
                    os.remove(p)
        gap = members(0, 4)
        del gap[1:3]
        gap[-1] = member('dataset.json', json.dumps({'labels': [[img(0), 1], [img(3), 1]]}))
        self.refuse_part(gap, f"positions 1-2 are missing between '{img(0)}' and '{img(3)}': a shard's images are "
                         'one block of the seed list')


class Output(MergeTest):
    """OUT: never a link, a folder, or one of the parts; no predictable name; a failed write leaves nothing."""

    def setUp(self):
        super().setUp()
        self.parts = [self.shard(0, 2, 0, 3), self.shard(1, 2, 3, 2)]

    def test_out_is_not_a_regular_file(self):
        victim = self.write('victim.txt', b'precious')
        os.symlink(victim, self.out)
        self.assert_refused(self.parts, (self.out, 'it exists and is a symbolic link: the merge replaces only a '
                                         'regular file (remove it or choose another name)'))
        self.assertEqual(self.read(victim), b'precious')
        os.remove(self.out)
        os.symlink(self.path('nowhere'), self.out)  # a dangling link: not created through either
        self.assert_refused(self.parts, (self.out, 'it exists and is a symbolic link: the merge replaces only a '
                                         'regular file (remove it or choose another name)'))
        os.remove(self.out)
        os.mkdir(self.out)
        self.assert_refused(self.parts, (self.out, 'it exists and is a folder: the merge replaces only a regular file '
                                         '(remove it or choose another name)'))
        os.rmdir(self.out)
        os.mkfifo(self.out)
        self.assert_refused(self.parts, (self.out, 'it exists and is not a regular file: the merge replaces only a '
                                         'regular file (remove it or choose another name)'))
        os.remove(self.out)

    def test_out_is_a_part(self):
        self.assert_refused(self.parts, (self.parts[1], f'the output is one of the parts ({self.parts[1]})'),
                            out=self.parts[1])
        link = self.path('hard.zip')
        os.link(self.parts[0], link)
        self.assert_refused(self.parts, (link, f'the output is one of the parts ({self.parts[0]})'), out=link)

    def test_usage(self):
        for args in ([], [self.out], ['--bogus', self.out, self.parts[0]]):
            rc, so, se = self.run_tool(*args)
            self.assertEqual((rc, so), (2, ''))
            self.assertTrue(se.startswith('usage: merge_dataset_zips [-h] [--allow-partial]'), se)
            self.assertIn('merge_dataset_zips: error: ', se)
        rc, so, se = self.run_tool(self.path('out.tar'), *self.parts)
        self.assertEqual(rc, 2)
        self.assertTrue(se.endswith(f"merge_dataset_zips: error: {self.path('out.tar')}: a dataset archive's name "
                                    'must end in .zip (the training code requires it)\n'), se)

    def test_planted_links_are_not_followed(self):
        # The old fixed temporary name, the lock's name and a guess at the temporary's prefix, each a link
        # to a file that must not change.
        victim = self.write('victim.txt', b'precious')
        os.symlink(victim, self.out + '.tmp')
        os.symlink(victim, self.path('.out.zip.tmp'))
        rc, so, se = self.run_tool(self.out, *self.parts)
        self.assertEqual((rc, se), (0, ''))
        self.assertEqual(self.read(victim), b'precious')
        self.assertTrue(os.path.islink(self.out + '.tmp'))
        self.assertEqual(len(self.merged()[0]), 6)
        os.remove(self.out)
        os.symlink(victim, self.out + '.lock')
        self.assert_refused(self.parts, (self.out, f'cannot open the lock file {self.out}.lock: it is a symbolic link'))
        self.assertEqual(self.read(victim), b'precious')

    def test_a_regular_out_is_replaced_with_normal_permissions(self):
        self.write('out.zip', b'old')
        rc, so, se = self.run_tool(self.out, *self.parts)
        self.assertEqual((rc, so, se), (0, f'merge_dataset_zips: 5 images from 2 archives in {self.out}\n', ''))
        umask = os.umask(0o022)
        os.umask(umask)
        self.assertEqual(stat.S_IMODE(os.stat(self.out).st_mode), 0o666 & ~umask)
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(['out.zip'] + [os.path.basename(p) for p in self.parts]))

    def test_closed_stdout(self):
        # The summary cannot be printed (stdout closed, or a pipe whose reader is gone): the merge is done,
        # exit 0, and no traceback.
        import shlex
        cmd = ' '.join(shlex.quote(a) for a in [sys.executable, TOOL, self.out] + self.parts)
        for shell in (cmd + ' >&-', cmd + ' | true'):
            r = subprocess.run(['bash', '-c', 'set -o pipefail; ' + shell + '; echo "rc=$?" >&2'], capture_output=True,
                               timeout=60)
            self.assertEqual(r.stderr.decode(), 'rc=0\n', shell)
            self.assertEqual(len(self.merged()[0]), 6)
            os.remove(self.out)

    def test_a_file_system_without_locks(self):
        # flock failing (ENOLCK, as on an NFS mount without a lock daemon): a warning, and the merge goes on.
        driver = ('import errno, sys; sys.path.insert(0, sys.argv[1]); import merge_dataset_zips as m\n'
                  'def no_locks(fd, op):\n'
                  '    raise OSError(errno.ENOLCK, "No locks available")\n'
                  'm.fcntl.flock = no_locks\n'
                  'sys.exit(m.main(sys.argv[2:]))\n')
        r = subprocess.run([sys.executable, '-c', driver, TOOLS, self.out] + self.parts, capture_output=True, timeout=60)
        self.assertEqual((r.returncode, r.stderr.decode()), (0, f'merge_dataset_zips: warning: {self.out}: cannot lock '
                         f'{self.out}.lock (No locks available): a second merge into it at the same time would not be '
                         'stopped (each still writes a whole archive)\n'))
        self.assertEqual(len(self.merged()[0]), 6)
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(['out.zip'] + [os.path.basename(p) for p in self.parts]))

    def test_stale_lock_files(self):
        # An empty lock file left by a killed merge is taken over and removed; a file of that name with
        # content is used as the lock but kept.
        self.write('out.zip.lock', b'')
        rc, _, se = self.run_tool(self.out, *self.parts)
        self.assertEqual((rc, se), (0, ''))
        self.assertFalse(os.path.exists(self.out + '.lock'))
        self.write('out.zip.lock', b'mine')
        rc, _, se = self.run_tool(self.out, *self.parts)
        self.assertEqual((rc, se), (0, ''))
        self.assertEqual(self.read(self.out + '.lock'), b'mine')

    def test_a_write_failure_leaves_nothing(self):
        big = [self.write('big-shard0of1.zip', raw_zip([member(img(i), os.urandom(100000)) for i in range(5)] +
                                                         [member('dataset.json', '{"labels": null}')]))]
        before = os.listdir(self.dir)

        def limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (200000, 200000))

        r = subprocess.run([sys.executable, TOOL, self.out] + big, capture_output=True, timeout=60, preexec_fn=limit)
        se = r.stderr.decode()
        self.assertEqual(r.returncode, 1, se)
        self.assertRegex(se, r'\A' + ERR + self.out + ': cannot write ' + self.dir + r'/\.out\.zip\.[^/]+\.tmp: '
                         'File too large\n\\Z')
        self.assert_nothing_written(before)

    def test_a_part_changed_during_the_merge(self):
        driver = ('import sys; sys.path.insert(0, sys.argv[1]); import merge_dataset_zips as m\n'
                  'plan = m.plan\n'
                  'def changed(parts, *a):\n'
                  '    r = plan(parts, *a)\n'
                  '    open(parts[0].where, "ab").write(b"x")\n'
                  '    return r\n'
                  'm.plan = changed\n'
                  'sys.exit(m.main(sys.argv[2:]))\n')
        before = os.listdir(self.dir)
        r = subprocess.run([sys.executable, '-c', driver, TOOLS, self.out] + self.parts, capture_output=True,
                           timeout=60)
        self.assertEqual((r.returncode, r.stderr.decode()),
                         (1, f'{ERR}{self.parts[0]}: the file changed while the merge was running\n'))
        self.assert_nothing_written(before)


class Interrupts(MergeTest):
    """Signals and a second merge while one is writing; SIGKILL never leaves a partial OUT."""

    def setUp(self):
        super().setUp()
        self.parts = [self.shard(0, 2, 0, 3), self.shard(1, 2, 3, 2)]
        self.started = self.path('started')
        self.go = self.path('go')

    def start_paused(self):
        p = subprocess.Popen([sys.executable, '-c', PAUSED_DRIVER, TOOLS, self.started, self.go, self.out] + self.parts,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.started):
            self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else '')
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        os.remove(self.started)
        # The temporary exists under a name nobody could guess, and the lock is held.
        temps = [n for n in os.listdir(self.dir) if n.startswith('.out.zip.') and n.endswith('.tmp')]
        self.assertEqual(len(temps), 1)
        self.assertEqual(stat.S_IMODE(os.stat(self.path(temps[0])).st_mode), 0o600)
        self.assertTrue(os.path.exists(self.out + '.lock'))
        return p

    def leftovers(self):
        return sorted(set(os.listdir(self.dir)) - {os.path.basename(p) for p in self.parts})

    def test_signals_remove_the_temporary(self):
        for sig, rc, line in [(signal.SIGTERM, 128 + signal.SIGTERM, 'interrupted by SIGTERM: nothing was written'),
                              (signal.SIGHUP, 128 + signal.SIGHUP, 'interrupted by SIGHUP: nothing was written'),
                              (signal.SIGINT, 130, 'interrupted: nothing was written')]:
            with self.subTest(sig=sig):
                p = self.start_paused()
                p.send_signal(sig)
                so, se = p.communicate(timeout=60)
                self.assertEqual((p.returncode, so, se.decode()), (rc, b'', ERR + line + '\n'))
                self.assertEqual(self.leftovers(), [])

    def test_sigkill_leaves_no_partial_out(self):
        p = self.start_paused()
        p.kill()
        p.communicate(timeout=60)
        self.assertFalse(os.path.exists(self.out))
        # The next merge takes the lock over and writes OUT; the killed merge's temporary stays (named
        # .out.zip.*.tmp: nothing can clean up after SIGKILL).
        rc, so, se = self.run_tool(self.out, *self.parts)
        self.assertEqual((rc, se), (0, ''))
        self.assertEqual(len(self.merged()[0]), 6)
        left = self.leftovers()
        self.assertEqual(len(left), 2, left)
        self.assertEqual(left[1], 'out.zip')
        self.assertRegex(left[0], r'^\.out\.zip\..*\.tmp$')

    def test_a_second_merge_into_the_same_out_stops(self):
        p = self.start_paused()
        rc, so, se = self.run_tool(self.out, *self.parts)
        self.assertEqual((rc, so, se), (1, '', f'{ERR}{self.out}: another merge is writing {self.out} (it holds '
                                        f'{self.out}.lock); wait for it to finish\n'))
        self.assertFalse(os.path.exists(self.out))
        open(self.go, 'w').close()
        so, se = p.communicate(timeout=60)
        self.assertEqual((p.returncode, so.decode(), se),
                         (0, f'merge_dataset_zips: 5 images from 2 archives in {self.out}\n', b''))
        os.remove(self.go)
        self.assertEqual(self.leftovers(), ['out.zip'])
        self.assertEqual(len(self.merged()[0]), 6)

    def test_concurrent_merges_give_one_valid_archive(self):
        # Several merges of different part sets into one OUT at once, again and again: each either
        # writes a complete archive or stops with the lock's message; OUT is always one whole merge.
        other = [self.shard(0, 2, 0, 2, run='other'), self.shard(1, 2, 2, 2, run='other')]
        sets = [self.parts, other]
        wins = stops = 0
        for _ in range(6):
            procs = [subprocess.Popen([sys.executable, TOOL, self.out] + sets[k % 2], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE) for k in range(4)]
            for p in procs:
                so, se = p.communicate(timeout=120)
                if p.returncode == 0:
                    wins += 1
                    self.assertEqual(se, b'')
                else:
                    stops += 1
                    self.assertEqual((p.returncode, so, se.decode()),
                                     (1, b'', f'{ERR}{self.out}: another merge is writing {self.out} (it holds '
                                      f'{self.out}.lock); wait for it to finish\n'))
            names, content, labels = self.merged()
            self.assertIn(len(names), (5, 6))
            for n in names[:-1]:
                self.assertEqual(content[n], data(int(n[9:17])))
            self.assertEqual(len(labels), len(names) - 1)
            self.assertEqual(sorted(set(os.listdir(self.dir)) - {os.path.basename(p) for p in self.parts + other}),
                             ['out.zip'])
        self.assertGreaterEqual(wins, 6)


class ValidMerges(MergeTest):
    """What sg2 writes (and other valid zip layouts) merges as before: stored, in position order."""

    def check(self, parts, images, label=2, extra_args=()):
        before = os.listdir(self.dir)
        rc, so, se = self.run_tool(*extra_args, self.out, *parts)
        self.assertEqual((rc, so, se), (0, f'merge_dataset_zips: {len(images)} images from {len(parts)} archives in '
                                        f'{self.out}\n', ''))
        names, content, labels = self.merged()
        self.assertEqual(names, [img(i) for i in images] + ['dataset.json'])
        for i in images:
            self.assertEqual(content[img(i)], data(i))
        self.assertEqual(content['dataset.json'].decode(), labels_json(0, len(images), label) if label is None else
                         json.dumps({'labels': [[img(i), label] for i in images]}))
        os.remove(self.out)
        self.assert_nothing_written(before)

    def test_sg2_layouts(self):
        self.check([self.shard(0, 2, 0, 3), self.shard(1, 2, 3, 2)], range(5))
        self.check([self.shard(1, 2, 3, 2, label=None), self.shard(0, 2, 0, 3, label=None)], range(5), label=None)
        # Ten shards (zero-padded names), given in any order; fewer images than shards (empty shards).
        parts = [self.shard(i, 10, i * 3 + min(i, 2), 3 + (i < 2), label=7) for i in range(10)]
        self.check(parts[::-1], range(32), label=7)
        for p in parts:
            os.remove(p)
        self.check([self.shard(i, 4, min(i, 2), int(i < 2)) for i in range(4)], range(2))

    def test_entry_order_inside_a_part(self):
        ms = members(0, 3)
        a = self.write('fakes-shard0of2.zip', raw_zip([ms[-1], ms[2], ms[0], ms[1]]))
        self.check([a, self.shard(1, 2, 3, 2)], range(5))

    def test_zipfile_layouts(self):
        # Python's zipfile: deflated entries, zip64 records, data descriptors (a stream), a comment.
        def write(name, mode, **kw):
            path = self.path(name)
            if mode == 'stream':
                class Stream:
                    def __init__(self, f):
                        self.f = f

                    def write(self, b):
                        return self.f.write(b)

                    def flush(self):
                        self.f.flush()
                with open(path, 'wb') as f, zipfile.ZipFile(Stream(f), 'w') as z:
                    self.fill(z, kw)
            else:
                with zipfile.ZipFile(path, 'w', compression=kw.pop('compression', zipfile.ZIP_STORED)) as z:
                    self.fill(z, kw)
                    z.comment = b'a comment'
            return path
        a = write('fakes-shard0of3.zip', 'file', first=0, n=3, compression=zipfile.ZIP_DEFLATED)
        b = write('fakes-shard1of3.zip', 'file', first=3, n=3, zip64=True)
        c = write('fakes-shard2of3.zip', 'stream', first=6, n=2)
        self.check([a, b, c], range(8))
        # zip64 records and extra fields in every central entry (as past 65,535 entries or 4 GiB): our
        # writer's, and zipfile's with its limits lowered.
        d = self.write('fakes-shard2of3.zip', raw_zip(members(6, 2), zip64=True))
        self.check([a, b, d], range(8))
        limits = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
        try:
            zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
            e = write('fakes-shard2of3.zip', 'file', first=6, n=2, zip64=True)
        finally:
            zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limits
        with open(e, 'rb') as f:
            self.assertIn(b'PK\x06\x06', f.read())
        self.check([a, b, e], range(8))

    def fill(self, z, kw):
        first, n = kw['first'], kw['n']
        for i in range(first, first + n):
            with z.open(img(i), 'w', force_zip64=kw.get('zip64', False)) as f:
                f.write(data(i))
        with z.open('dataset.json', 'w', force_zip64=kw.get('zip64', False)) as f:
            f.write(labels_json(first, n, 2).encode())

    def test_archives_written_by_sg2(self):
        # tests/data/merge: the two shard archives of `sg2 generate --network models/digits32/digits32.pkl
        # --seeds 0-4 --class 3 --outdir digits.zip --shard I/2` (libarchive's zip writer: data descriptors).
        parts = [os.path.join(FIXTURES, f'digits-shard{i}of2.zip') for i in range(2)]
        rc, so, se = self.run_tool(self.out, *parts)
        self.assertEqual((rc, so, se), (0, f'merge_dataset_zips: 5 images from 2 archives in {self.out}\n', ''))
        names, content, labels = self.merged()
        self.assertEqual(names, [img(i) for i in range(5)] + ['dataset.json'])
        self.assertEqual(labels, [[img(i), 3] for i in range(5)])
        for p in parts:
            with zipfile.ZipFile(p) as z:
                for n in z.namelist()[:-1]:
                    self.assertEqual(content[n], z.read(n))
                    self.assertTrue(content[n].startswith(b'\x89PNG\r\n\x1a\n'))


if __name__ == '__main__':
    unittest.main()
