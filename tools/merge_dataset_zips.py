#!/usr/bin/env python3
"""Merges the per-shard dataset archives of a sharded `sg2 generate --outdir NAME.zip` run
(NAME-shard0of4.zip, NAME-shard1of4.zip, ...; the index zero-padded to the count's width) into one
archive that stylegan2-ada-pytorch's training code reads: every image entry copied stored (no
recompression), in position order, and one dataset.json whose labels are the shards' labels together
({"labels": null} when the run was unconditional).

    python3 tools/merge_dataset_zips.py [--allow-partial] OUT.zip PART.zip [PART.zip ...]

The parts are treated as untrusted input and checked completely before anything is written:
  * each part is a zip archive (zip64 included) of regular-file entries only, named exactly
    NNNNN/imgNNNNNNNN.png (dataset_tool.py's layout, f'{i:08d}'[:5]/img{i:08d}.png for the image's
    position i in the whole seed list) or dataset.json; no absolute, '..', '.', backslash, NUL or other
    names, no folders, symbolic links, encrypted entries, duplicates or overlapping entries; entries
    stored or deflated (a deflated one may declare at most 100x its compressed size, and a part at
    most 100x its file size), every byte counted against the declared size and its CRC checked;
  * exactly one dataset.json per part (at most 64 MiB plus 64 bytes per image), JSON
    {"labels": null} or {"labels": [[name, class], ...]} with one integer class >= 0 for every image
    of that part and nothing else; the parts all conditional or all unconditional;
  * the shard set: every part named NAME-shardIofN.zip with one NAME and one N, each index 0..N-1
    exactly once (--allow-partial merges an incomplete set, saying which shards are missing), no
    position in two parts, each part one block of positions, and the blocks in shard order, without
    gaps, of the sizes sg2's sharding gives (shard I of a T-image run of N: positions
    [I*q + min(I, r), (I+1)*q + min(I+1, r)), q, r = divmod(T, N));
  * OUT ends in .zip, is not one of the parts, and is not a symbolic link, folder or other
    non-regular file (a regular file there is replaced).
A refusal is one line on stderr, `merge_dataset_zips: error: FILE: problem` (names escaped for the
terminal), exit status 1 (2 for a usage error); nothing is written. (The images' bytes are checked as
they are copied: a damaged one stops the merge there and its temporary file is removed.) The merged
archive is written to a new private temporary file in OUT's folder (mkstemp: a random name, created
exclusively, never through a link), fsync'd and renamed onto OUT; it is removed on any failure,
Ctrl-C, SIGTERM and SIGHUP. A merge holds an exclusive lock (OUT.lock beside OUT, removed afterwards)
while it writes, so a second merge into the same OUT at the same time stops with "another merge is
writing OUT" (on a file system without locks it warns and goes on: each merge still writes a whole
archive of its own and renames it atomically). On success it prints
`merge_dataset_zips: N images from K archives in OUT`. Standard library only.
"""
import argparse
import errno
import fcntl
import json
import os
import re
import signal
import stat
import struct
import sys
import tempfile
import zipfile
import zlib

PROG = 'merge_dataset_zips'
MAX_RATIO = 100  # a deflated entry may declare at most this many times its compressed size (+ RATIO_SLACK)
RATIO_SLACK = 1024
JSON_LIMIT = 64 << 20  # dataset.json: at most this many bytes plus JSON_PER_IMAGE per image entry
JSON_PER_IMAGE = 64
MAX_SHARDS = 1 << 20  # sg2's limit on N (kMaxShards in shard.cpp)
CHUNK = 1 << 20
LIST_AT_MOST = 10  # missing shards named in a message

EOCD = struct.Struct('<4s4H2LH')  # end of central directory: 22 bytes
ZIP64_LOCATOR = struct.Struct('<4sLQL')  # 20 bytes
ZIP64_EOCD = struct.Struct('<4sQ2H2L4Q')  # 56 bytes
CENTRAL = struct.Struct('<4s6H3L5H2L')  # central directory file header: 46 bytes
LOCAL = struct.Struct('<4s5H3L2H')  # local file header: 30 bytes
IMAGE_NAME = re.compile(rb'([0-9]{5})/img([0-9]{8,20})\.png')
SHARD_NAME = re.compile(r'(.+)-shard([0-9]{1,7})of([0-9]{1,7})\.zip')


class Refused(Exception):
    """A refusal: `where` (a file, shown escaped) and the problem, one line."""

    def __init__(self, where, problem):
        super().__init__(f'{where}: {problem}')
        self.where = where
        self.problem = problem

    def line(self):
        return f'{PROG}: error: {esc(self.where)}: {self.problem}'


class Interrupted(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so that every cleanup runs."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def esc(text, limit=300):
    """`text` for a terminal, on one line: printable characters as they are, backslash, control and
    other non-printable characters as \\xNN (\\uNNNN above 0xff; bytes that were not UTF-8 in a file
    name as \\xNN of the byte); at most `limit` characters, then '...'."""
    if isinstance(text, bytes):
        out = ''.join(chr(b) if 0x20 <= b < 0x7f and b != 0x5c else f'\\x{b:02x}' for b in text[:limit])
        return out + ('...' if len(text) > limit else '')
    out = []
    for c in str(text)[:limit]:
        o = ord(c)
        if c == '\\' or (o < 0x80 and not 0x20 <= o < 0x7f):
            out.append(f'\\x{o:02x}')
        elif 0xdc80 <= o <= 0xdcff:  # os.fsdecode's surrogate escape of an undecodable byte
            out.append(f'\\x{o - 0xdc00:02x}')
        elif not c.isprintable():
            out.append(f'\\u{o:04x}' if o <= 0xffff else f'\\U{o:08x}')
        else:
            out.append(c)
    return ''.join(out) + ('...' if len(text) > limit else '')


def image_name(index):
    """dataset_tool.py's (and sg2's dataset_image_name) entry name of image `index`."""
    digits = f'{index:08d}'
    return f'{digits[:5]}/img{digits}.png'


def positions(first, last, verb=''):
    """'position 4' / 'positions 4-9', with `verb` ('is'/'are') agreeing when given."""
    one = first == last
    text = f'position {first}' if one else f'positions {first}-{last}'
    return text + (f' {verb.split("/")[0 if one else 1]}' if verb else '')


def number_list(values):
    shown = ', '.join(str(v) for v in values[:LIST_AT_MOST])
    return shown + (f' and {len(values) - LIST_AT_MOST} more' if len(values) > LIST_AT_MOST else '')


# --- one part: the zip container ------------------------------------------------------------------


class Entry:
    """One entry of a part, from its central directory (sizes and offsets checked)."""
    __slots__ = ('name', 'index', 'method', 'crc', 'csize', 'usize', 'header', 'data', 'time', 'date')

    def __init__(self, name, index, method, crc, csize, usize, header, time, date):
        self.name, self.index, self.method, self.crc = name, index, method, crc
        self.csize, self.usize, self.header, self.data = csize, usize, header, None
        self.time, self.date = time, date

    def date_time(self):
        d, t = self.date, self.time
        return ((d >> 9) + 1980, (d >> 5) & 15, d & 31, t >> 11, (t >> 5) & 63, (t & 31) * 2)


def read_bytes(f, offset, n, where):
    """Up to n bytes at offset; a read error is a refusal naming the part."""
    try:
        f.seek(offset)
        return f.read(n)
    except OSError as err:
        raise Refused(where, f'cannot read: {esc(err.strerror or str(err))}') from None


def read_at(f, offset, n, where, what):
    data = read_bytes(f, offset, n, where)
    if len(data) != n:
        raise Refused(where, f'truncated: the file ends inside {what}')
    return data


def check_entry_name(raw, where):
    """The image index of an entry name, None for dataset.json; refuses every other name."""
    if raw == b'dataset.json':
        return None
    m = IMAGE_NAME.fullmatch(raw)
    if m:
        index = int(m.group(2))
        if image_name(index).encode() != raw:
            raise Refused(where, f"entry '{esc(raw)}': not the name of image {index}, which is "
                          f"'{image_name(index)}' (dataset_tool.py's layout: the folder is the first 5 digits)")
        return index
    name = f"entry '{esc(raw)}'"
    if not raw:
        raise Refused(where, 'an entry with an empty name')
    if b'\0' in raw:
        raise Refused(where, f'{name}: the name holds a NUL byte')
    if any(b < 0x20 or b == 0x7f for b in raw):
        raise Refused(where, f'{name}: the name holds a control character')
    if b'\\' in raw:
        raise Refused(where, f'{name}: the name holds a backslash (an alias of a path separator)')
    if raw.startswith(b'/') or re.match(rb'[A-Za-z]:', raw):
        raise Refused(where, f'{name}: an absolute path')
    folder = raw.endswith(b'/')
    components = raw.split(b'/')[:-1] if folder else raw.split(b'/')
    if b'..' in components:
        raise Refused(where, f"{name}: a '..' component (a path outside the archive's folder)")
    if b'.' in components or b'' in components:
        raise Refused(where, f"{name}: an empty or '.' component (an alias of another name)")
    if folder:
        raise Refused(where, f'{name}: a folder entry (sg2 writes none: only images and dataset.json)')
    raise Refused(where, f'{name}: not a dataset entry: the names are NNNNN/imgNNNNNNNN.png '
                  '(dataset_tool.py\'s layout) and dataset.json')


def zip64_fields(extra, need, where, name):
    """The zip64 extended information field's values (uncompressed size, compressed size, local
    header offset, disk, in that order, only those `need` marks) from an entry's extra field."""
    pos = 0
    found = None
    while pos < len(extra):
        if pos + 4 > len(extra):
            raise Refused(where, f"entry '{esc(name)}': a malformed extra field")
        tag, size = struct.unpack_from('<2H', extra, pos)
        if pos + 4 + size > len(extra):
            raise Refused(where, f"entry '{esc(name)}': a malformed extra field")
        if tag == 1:
            if found is not None:
                raise Refused(where, f"entry '{esc(name)}': two zip64 extra fields")
            found = extra[pos + 4:pos + 4 + size]
        pos += 4 + size
    values = []
    off = 0
    for width in (8, 8, 8, 4):
        wanted = need[len(values)]
        if not wanted:
            values.append(None)
            continue
        if found is None or off + width > len(found):
            raise Refused(where, f"entry '{esc(name)}': its zip64 extra field lacks a size or offset")
        values.append(int.from_bytes(found[off:off + width], 'little'))
        off += width
    return values


def read_directory(f, size, where):
    """The entries of a part (a zip archive in `f`, `size` bytes), every structure checked: the end
    records, the central directory, each entry's name, kind, method, sizes and local header, and that
    no two entries' bytes overlap."""
    if size < EOCD.size:
        raise Refused(where, f'not a zip archive ({size} bytes)')
    tail_len = min(size, EOCD.size + 0xffff)
    tail = read_at(f, size - tail_len, tail_len, where, 'the end of central directory record')
    pos = tail.rfind(b'PK\x05\x06')
    while pos >= 0:
        if pos + EOCD.size <= len(tail) and pos + EOCD.size + struct.unpack_from('<H', tail, pos + 20)[0] == len(tail):
            break
        pos = tail.rfind(b'PK\x05\x06', 0, pos)
    if pos < 0:
        raise Refused(where, 'not a zip archive (no end of central directory record)')
    eocd_at = size - tail_len + pos
    _, disk, cd_disk, n_disk, count, cd_size, cd_offset, _ = EOCD.unpack_from(tail, pos)
    cd_end = eocd_at
    if eocd_at >= ZIP64_LOCATOR.size:
        sig, z_disk, z_offset, disks = ZIP64_LOCATOR.unpack(
            read_at(f, eocd_at - ZIP64_LOCATOR.size, ZIP64_LOCATOR.size, where, 'the zip64 locator'))
        if sig == b'PK\x06\x07':
            if z_disk != 0 or disks > 1:
                raise Refused(where, 'a multi-volume zip archive (not supported)')
            if z_offset > eocd_at - ZIP64_LOCATOR.size - ZIP64_EOCD.size:
                raise Refused(where, 'corrupt zip64 end of central directory locator')
            (sig, rec_size, _, _, disk, cd_disk, n_disk, count, cd_size,
             cd_offset) = ZIP64_EOCD.unpack(read_at(f, z_offset, ZIP64_EOCD.size, where, 'the zip64 end record'))
            if sig != b'PK\x06\x06' or rec_size < ZIP64_EOCD.size - 12 or \
                    z_offset + 12 + rec_size != eocd_at - ZIP64_LOCATOR.size:
                raise Refused(where, 'corrupt zip64 end of central directory record')
            cd_end = z_offset
    if disk != 0 or cd_disk != 0 or n_disk != count:
        raise Refused(where, 'a multi-volume zip archive (not supported)')
    if cd_offset + cd_size != cd_end:
        raise Refused(where, f'corrupt zip archive: the central directory ({cd_size} bytes at {cd_offset}) '
                      f'does not end where its end record starts ({cd_end})')
    if count > cd_size // CENTRAL.size:
        raise Refused(where, f'corrupt zip archive: {count} entries cannot fit in a central directory of {cd_size} bytes')
    cd = read_at(f, cd_offset, cd_size, where, 'the central directory')
    entries = []
    pos = 0
    for _ in range(count):
        if pos + CENTRAL.size > len(cd):
            raise Refused(where, 'corrupt zip archive: the central directory ends inside an entry')
        (sig, made_by, _, flags, method, mtime, mdate, crc, csize, usize, name_len, extra_len, comment_len, disk,
         _, ext_attr, offset) = CENTRAL.unpack_from(cd, pos)
        if sig != b'PK\x01\x02':
            raise Refused(where, f'corrupt zip archive: no central directory entry at byte {cd_offset + pos}')
        end = pos + CENTRAL.size + name_len + extra_len + comment_len
        if end > len(cd):
            raise Refused(where, 'corrupt zip archive: the central directory ends inside an entry')
        raw = cd[pos + CENTRAL.size:pos + CENTRAL.size + name_len]
        extra = cd[pos + CENTRAL.size + name_len:pos + CENTRAL.size + name_len + extra_len]
        pos = end
        index = check_entry_name(raw, where)
        name = f"entry '{esc(raw)}'"
        mode = ext_attr >> 16
        if made_by >> 8 == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            if stat.S_ISLNK(mode):
                raise Refused(where, f'{name}: a symbolic link entry')
            if stat.S_ISDIR(mode):
                raise Refused(where, f'{name}: a folder entry (sg2 writes none: only images and dataset.json)')
            raise Refused(where, f'{name}: not a regular file (unix mode 0o{mode:06o})')
        if ext_attr & 0x10:  # the MS-DOS directory attribute
            raise Refused(where, f'{name}: a folder entry (sg2 writes none: only images and dataset.json)')
        if flags & 0x41 or flags & 0x2000:
            raise Refused(where, f'{name}: encrypted')
        if method not in (0, 8):
            raise Refused(where, f'{name}: compression method {method} (only stored and deflated entries are read)')
        need = (usize == 0xffffffff, csize == 0xffffffff, offset == 0xffffffff, disk == 0xffff)
        if any(need):
            z = zip64_fields(extra, need, where, raw)
            usize = usize if z[0] is None else z[0]
            csize = csize if z[1] is None else z[1]
            offset = offset if z[2] is None else z[2]
            disk = disk if z[3] is None else z[3]
        if disk != 0:
            raise Refused(where, f'{name}: on another volume of a multi-volume archive (not supported)')
        if method == 0 and csize != usize:
            raise Refused(where, f'{name}: stored, but {csize} bytes in the archive for {usize} bytes of data')
        if method == 8 and usize > csize * MAX_RATIO + RATIO_SLACK:
            raise Refused(where, f'{name}: deflated {csize} bytes declare {usize} bytes of data, more than '
                          f'{MAX_RATIO}x (a zip bomb?)')
        entries.append(Entry(raw, index, method, crc, csize, usize, offset, mtime, mdate))
    if pos != len(cd):
        raise Refused(where, f'corrupt zip archive: {len(cd) - pos} bytes after the last central directory entry')
    seen = set()
    for e in entries:
        if e.name in seen:
            raise Refused(where, f"entry '{esc(e.name)}' is in the archive twice")
        seen.add(e.name)
    total = sum(e.usize for e in entries)
    if total > size * MAX_RATIO:
        raise Refused(where, f'its entries declare {total} bytes from a file of {size} bytes, more than '
                      f'{MAX_RATIO}x (a zip bomb?)')

    # Each local header: the same name and method, and the data within the file; no two entries share
    # a byte (overlapping entries expand a small file into many copies of its data).
    for e in entries:
        if e.header > cd_offset - LOCAL.size:
            raise Refused(where, f"entry '{esc(e.name)}': its local header is outside the entries' area")
        head = read_at(f, e.header, min(LOCAL.size + len(e.name), cd_offset - e.header), where,
                       f"entry '{esc(e.name)}'")
        (sig, _, flags, method, _, _, _, _, _, name_len, extra_len) = LOCAL.unpack_from(head)
        if sig != b'PK\x03\x04':
            raise Refused(where, f"entry '{esc(e.name)}': no local header at byte {e.header}")
        e.data = e.header + LOCAL.size + name_len + extra_len
        if e.data + e.csize > cd_offset:
            raise Refused(where, f"entry '{esc(e.name)}': its data runs past the entries' area")
        local_name = head[LOCAL.size:LOCAL.size + name_len]
        if name_len != len(e.name) or local_name != e.name or method != e.method or flags & 0x41:
            local_name = read_bytes(f, e.header + LOCAL.size, min(name_len, 400), where)
            raise Refused(where, f"entry '{esc(e.name)}': its local header disagrees with the central directory "
                          f"(name '{esc(local_name)}', method {method})")
    by_place = sorted(entries, key=lambda e: e.header)
    for a, b in zip(by_place, by_place[1:]):
        if b.header < a.data + a.csize:
            raise Refused(where, f"entries '{esc(a.name)}' and '{esc(b.name)}' overlap at byte {b.header}")
    return entries


def read_entry(f, e, where, sink, check_crc=True):
    """Streams entry `e`'s data to `sink(bytes)`: inflated when deflated, never more than its declared
    size, which it must have exactly; its CRC-32 checked (unless `check_crc` is false: the fuzz target
    uses that to reach the checks behind it)."""
    name = f"entry '{esc(e.name)}'"
    at = e.data
    left = e.csize
    crc = 0
    produced = 0
    inflate = zlib.decompressobj(-15) if e.method == 8 else None
    while left > 0:
        block = read_bytes(f, at, min(CHUNK, left), where)
        at += len(block)
        if not block:
            raise Refused(where, f'{name}: truncated: the file ends inside its data')
        left -= len(block)
        while block:
            if inflate is None:
                piece, block = block, b''
            else:
                try:
                    piece = inflate.decompress(block, e.usize - produced + 1)
                except zlib.error as err:
                    raise Refused(where, f'{name}: corrupt deflate data ({esc(str(err))})') from None
                if inflate.unused_data:
                    raise Refused(where, f'{name}: data after the end of its deflate stream')
                if not piece and inflate.unconsumed_tail:  # cannot happen with zlib: guards a hang
                    raise Refused(where, f'{name}: corrupt deflate data')
                block = inflate.unconsumed_tail
            produced += len(piece)
            if produced > e.usize:
                raise Refused(where, f'{name}: inflates to more than its declared {e.usize} bytes')
            crc = zlib.crc32(piece, crc)
            sink(piece)
    if inflate is not None and not inflate.eof:
        raise Refused(where, f'{name}: corrupt deflate data (the stream is cut short)')
    if produced != e.usize:
        raise Refused(where, f'{name}: inflates to {produced} bytes, not its declared {e.usize}')
    if check_crc and crc != e.crc:
        raise Refused(where, f'{name}: CRC-32 mismatch (damaged data)')


# --- one part: dataset.json -----------------------------------------------------------------------


def _no_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"the key '{esc(key, 60)}' appears twice in one object")
        obj[key] = value
    return obj


def _no_constants(name):
    raise ValueError(f'{name} is not JSON')


def parse_labels(data, image_names, where):
    """dataset.json's labels: None (unconditional), or {entry name: class} with exactly one integer
    class >= 0 for every name in `image_names` and no other name."""
    try:
        doc = json.loads(data.decode('utf-8'), object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)
    except UnicodeDecodeError:
        raise Refused(where, 'dataset.json is not UTF-8 text') from None
    except RecursionError:
        raise Refused(where, 'dataset.json nests too deep') from None
    except ValueError as err:  # json.JSONDecodeError, an integer of too many digits, the hooks above
        raise Refused(where, f'dataset.json is not valid JSON ({esc(str(err), 120)})') from None
    if not isinstance(doc, dict) or 'labels' not in doc:
        raise Refused(where, 'dataset.json is not an object with "labels" ({"labels": null} or '
                      '{"labels": [[name, class], ...]})')
    if len(doc) > 1:
        other = sorted(k for k in doc if k != 'labels')
        raise Refused(where, f"dataset.json holds more than \"labels\" ('{esc(other[0], 60)}'): sg2 writes "
                      'only labels, and the merge would drop the rest')
    labels = doc['labels']
    if labels is None:
        return None
    if not isinstance(labels, list):
        raise Refused(where, f'dataset.json: "labels" is a {type(labels).__name__}, not null or a list of '
                      '[name, class] pairs')
    out = {}
    for k, item in enumerate(labels):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise Refused(where, f'dataset.json: label {k} is not a [name, class] pair')
        name, value = item
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
            raise Refused(where, f"dataset.json: the class of '{esc(name)}' is not an integer >= 0")
        if name not in image_names:
            raise Refused(where, f"dataset.json: a label for '{esc(name)}', which is not an image of this archive")
        if name in out:
            raise Refused(where, f"dataset.json: '{esc(name)}' is labelled twice")
        out[name] = value
    if len(out) != len(image_names):
        missing = min((n for n in image_names if n not in out), key=lambda n: (len(n), n))
        n = len(image_names) - len(out)
        raise Refused(where, f"dataset.json: {n} {'image has' if n == 1 else 'images have'} no label (the first: "
                      f"'{esc(missing)}')")
    return out


# --- one part ---------------------------------------------------------------------------------------


class Part:
    """A checked part: its images in position order, their labels (None: unconditional)."""

    def __init__(self, where, images, labels, json_entry, identity=None):
        self.where = where
        self.images = images
        self.labels = labels  # None, or a list aligned with images
        self.json_entry = json_entry
        self.identity = identity  # (st_dev, st_ino, st_size, st_mtime_ns) of the file
        self.shard = None  # (run name, index, count)

    def first(self):
        return self.images[0].index

    def last(self):
        return self.images[-1].index


def read_part(f, size, where, check_crc=True):
    """Checks one part from its file object: the zip structure and names (read_directory), exactly
    one dataset.json and its labels, and that the images are one block of positions. The images'
    data is read later, when they are copied (read_entry checks each as it goes)."""
    entries = read_directory(f, size, where)
    json_entries = [e for e in entries if e.index is None]
    if not json_entries:
        raise Refused(where, 'no dataset.json (every archive sg2 writes has one)')
    images = sorted((e for e in entries if e.index is not None), key=lambda e: e.index)
    (json_entry,) = json_entries
    limit = JSON_LIMIT + JSON_PER_IMAGE * len(images)
    if json_entry.usize > limit:
        raise Refused(where, f'dataset.json is {json_entry.usize} bytes, more than the limit of {limit}')
    buf = []
    read_entry(f, json_entry, where, buf.append, check_crc)
    labels = parse_labels(b''.join(buf), {e.name.decode('ascii') for e in images}, where)
    if labels is not None:
        labels = [labels[e.name.decode('ascii')] for e in images]
    for a, b in zip(images, images[1:]):
        if b.index != a.index + 1:
            raise Refused(where, f'{positions(a.index + 1, b.index - 1, "is/are")} missing between '
                          f"'{esc(a.name)}' and '{esc(b.name)}': a shard's images are one block of the seed list")
    return Part(where, images, labels, json_entry)


def open_part(path):
    """Opens a part for reading, refusing anything but a regular file (a FIFO would block)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise Refused(path, f'cannot read: {err.strerror}') from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Refused(path, 'not a regular file')
    return os.fdopen(fd, 'rb'), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def check_part_file(path):
    f, identity = open_part(path)
    with f:
        part = read_part(f, identity[2], path)
    part.identity = identity
    return part


# --- the shard set ----------------------------------------------------------------------------------


def parse_shard_name(path):
    """(run name, index, count) from a part's file name NAME-shardIofN.zip."""
    m = SHARD_NAME.fullmatch(os.path.basename(path))
    if not m:
        raise Refused(path, "not a shard archive's name: NAME-shardIofN.zip, as sg2 generate --outdir NAME.zip "
                      'names the archives of a sharded run')
    index, count = int(m.group(2)), int(m.group(3))
    if not 1 <= count <= MAX_SHARDS:
        raise Refused(path, f'shard count {count} is outside [1, {MAX_SHARDS}]')
    if index >= count:
        raise Refused(path, f'shard {index} of {count}: the index must be below the count')
    return m.group(1), index, count


def check_names(paths):
    """The parts' shard names: one run name and one count (before any part is read)."""
    shards = [parse_shard_name(p) for p in paths]
    for p, (run, _, count) in zip(paths, shards):
        if run != shards[0][0]:
            raise Refused(p, f"a shard of the run '{esc(run)}', but {esc(paths[0])} is of '{esc(shards[0][0])}'")
        if count != shards[0][2]:
            raise Refused(p, f'a shard of {count}, but {esc(paths[0])} is a shard of {shards[0][2]}')
    return shards


def plan(parts, allow_partial=False):
    """Checks the parts together (each with .shard set): one kind of labels, no position in two parts,
    every shard once (or, with allow_partial, at most once), and the blocks in shard order, without
    gaps, of the sizes sg2's sharding gives. Returns (parts in shard order, missing shard indices)."""
    kinds = [p for p in parts if p.labels is None], [p for p in parts if p.labels is not None]
    if kinds[0] and kinds[1]:
        raise Refused(kinds[0][0].where, f'unconditional ({{"labels": null}}), but {esc(kinds[1][0].where)} is '
                      'conditional (a class per image): the parts come from different runs')
    owner = {}
    for p in parts:
        for e in p.images:
            other = owner.setdefault(e.index, p)
            if other is not p:
                raise Refused(p.where, f'{e.name.decode("ascii")} is in two archives (also in {esc(other.where)})')
    run, _, count = parts[0].shard
    by_index = {}
    for p in parts:
        other = by_index.setdefault(p.shard[1], p)
        if other is not p:
            raise Refused(p.where, f'shard {p.shard[1]} of {count} is given twice (also {esc(other.where)})')
    missing = [i for i in range(count) if i not in by_index]
    set_name = f'{run}-shard*of{count}.zip'
    if missing and not allow_partial:
        many = 'shards' if len(missing) > 1 else 'shard'
        raise Refused(set_name, f"{many} {number_list(missing)} of {count} {'are' if len(missing) > 1 else 'is'} "
                      'missing (merge every part of the run, or pass --allow-partial)')
    ordered = [by_index[i] for i in sorted(by_index)]
    holding = [p for p in ordered if p.images]
    for prev, p in zip(holding, holding[1:]):
        if p.first() <= prev.last():
            raise Refused(p.where, f'shard {p.shard[1]} of {count} holds {positions(p.first(), p.last())}, before '
                          f'shard {prev.shard[1]} ({positions(prev.first(), prev.last())}): the shards are out of order')
    if not missing:
        end = 0
        for p in holding:
            if p.first() != end:
                raise Refused(p.where, f'shard {p.shard[1]} of {count} starts at position {p.first()}, so '
                              f'{positions(end, p.first() - 1, "is/are")} in no part')
            end = p.last() + 1
    if not missing:
        total = sum(len(p.images) for p in ordered)
        q, r = divmod(total, count)
        for i, p in enumerate(ordered):
            begin, end = i * q + min(i, r), (i + 1) * q + min(i + 1, r)
            have = (p.first(), p.last() + 1) if p.images else (begin, begin)
            if have != (begin, end):
                held = positions(p.first(), p.last()) if p.images else 'no images'
                want = positions(begin, end - 1) if end > begin else 'no images'
                raise Refused(p.where, f'shard {i} of {count} holds {held}, but shard {i} of a {total}-image run '
                              f'holds {want}: a part of another run?')
    return ordered, missing


# --- the output --------------------------------------------------------------------------------------


def check_output(out_path, paths):
    """OUT: a .zip name (usage), not a link or non-regular file, not one of the parts."""
    try:
        st = os.lstat(out_path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise Refused(out_path, f'cannot check the output: {err.strerror}') from None
    if not stat.S_ISREG(st.st_mode):
        kind = ('a symbolic link' if stat.S_ISLNK(st.st_mode) else 'a folder' if stat.S_ISDIR(st.st_mode)
                else 'not a regular file')
        raise Refused(out_path, f'it exists and is {kind}: the merge replaces only a regular file '
                      '(remove it or choose another name)')
    for p in paths:
        try:
            if os.path.samefile(p, out_path):
                raise Refused(out_path, f'the output is one of the parts ({esc(p)})')
        except OSError:
            pass  # an unreadable part is reported when it is read


class OutputLock:
    """An exclusive flock on OUT.lock (created new without following a link, 0600), held while the
    merge writes. It is removed before it is released, so a merge that opened it before that finds
    another file under the name when it gets the lock, and tries again."""

    def __init__(self, out_path):
        self.out_path = out_path
        self.path = out_path + '.lock'
        self.fd = -1
        self.remove = False

    def acquire(self):
        for _ in range(20):
            created = locked = False
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                created = True
            except FileExistsError:
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue  # removed by the merge that held it: create it anew
                except OSError as err:
                    why = 'it is a symbolic link' if err.errno == errno.ELOOP else err.strerror
                    raise Refused(self.out_path, f'cannot open the lock file {esc(self.path)}: {why}') from None
            except OSError as err:
                raise Refused(self.out_path, f'cannot create the lock file {esc(self.path)}: {err.strerror}') from None
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise Refused(self.out_path, f'the lock file {esc(self.path)} is not a regular file')
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise Refused(self.out_path, f'another merge is writing {esc(self.out_path)} (it holds '
                                  f'{esc(self.path)}); wait for it to finish') from None
                except OSError as err:
                    # A file system without locks (ENOLCK, EOPNOTSUPP): the merge goes on unlocked, since
                    # its own temporary and the atomic rename keep OUT whole; only the early stop of a
                    # second merge is lost, and the warning says so.
                    complain(f'{PROG}: warning: {esc(self.out_path)}: cannot lock {esc(self.path)} '
                             f'({esc(err.strerror or str(err))}): a second merge into it at the same time would not '
                             'be stopped (each still writes a whole archive)')
                    if created:
                        try:
                            os.unlink(self.path)
                        except OSError:
                            pass
                    os.close(fd)
                    return
                locked = True
                try:
                    now = os.lstat(self.path)
                except FileNotFoundError:
                    now = None
                if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    os.close(fd)  # the file was removed (its merge finished) after this one opened it
                    continue
            except BaseException:
                if created and locked:
                    try:
                        os.unlink(self.path)
                    except OSError:
                        pass
                os.close(fd)
                raise
            self.fd = fd
            # Removed at the end when this merge made it, or when it is an empty file of this user
            # (left by a merge that was killed); another file of that name is left as it is.
            self.remove = created or (st.st_size == 0 and st.st_uid == os.geteuid())
            return
        raise Refused(self.out_path, f'cannot take the lock {esc(self.path)}: it keeps being replaced')

    def release(self):
        if self.fd < 0:
            return
        if self.remove:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        os.close(self.fd)
        self.fd = -1


def write_archive(raw, ordered, reopen):
    """Writes the merged archive of the checked parts `ordered` to the seekable binary file `raw`:
    each image stored, in position order, then dataset.json. `reopen(part)` opens a part's file.
    Returns the number of images."""
    images = 0
    with zipfile.ZipFile(raw, 'w', compression=zipfile.ZIP_STORED, allowZip64=True) as out:
        labels = None if ordered[0].labels is None else []
        for p in ordered:
            with reopen(p) as f:
                for k, e in enumerate(p.images):
                    info = zipfile.ZipInfo(e.name.decode('ascii'), e.date_time())
                    info.compress_type = zipfile.ZIP_STORED
                    info.external_attr = (stat.S_IFREG | 0o644) << 16
                    info.file_size = e.usize  # zipfile switches to zip64 records by it
                    with out.open(info, 'w') as dst:
                        read_entry(f, e, p.where, dst.write)
                    if labels is not None:
                        labels.append([e.name.decode('ascii'), p.labels[k]])
                    images += 1
        out.writestr('dataset.json', json.dumps({'labels': labels}))
    return images


def write_merged(out_path, ordered, reopen):
    """Writes the merged archive to a new private temporary file in OUT's folder (mkstemp: a unique
    name, O_EXCL and O_NOFOLLOW), fsyncs it and renames it onto OUT; the temporary is removed on any
    failure or interrupt. Returns the number of images."""
    folder = os.path.dirname(out_path) or '.'
    umask = os.umask(0o022)
    os.umask(umask)
    tmp = None
    done = False
    try:
        try:
            fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(out_path) + '.', suffix='.tmp', dir=folder)
        except OSError as err:
            raise Refused(out_path, f'cannot create a temporary file in {esc(folder)}: {err.strerror}') from None
        try:
            with os.fdopen(fd, 'w+b') as raw:
                images = write_archive(raw, ordered, reopen)
                raw.flush()
                os.fchmod(raw.fileno(), 0o666 & ~umask)
                os.fsync(raw.fileno())
        except OSError as err:
            # Closing the half-written archive after another failure can fail too (a full disk):
            # the first failure is the one to report.
            if isinstance(err.__context__, (Refused, Interrupted, KeyboardInterrupt)):
                raise err.__context__ from None
            raise Refused(out_path, f'cannot write {esc(tmp)}: {esc(err.strerror or str(err))}') from None
        check_output(out_path, [])  # a link or folder put there during the merge is not replaced
        try:
            os.replace(tmp, out_path)
        except OSError as err:
            raise Refused(out_path, f'cannot rename the merged archive into place: {err.strerror}') from None
        done = True
        _state['replaced'] = True
        try:
            dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass  # the rename is done; a folder that cannot be synced is no error
    finally:
        if not done and tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return images


def reopen_part(part):
    """Opens a checked part again for copying; refuses a file that changed since it was checked."""
    f, identity = open_part(part.where)
    if identity != part.identity:
        f.close()
        raise Refused(part.where, 'the file changed while the merge was running')
    return f


def merge(out_path, paths, allow_partial=False):
    check_output(out_path, paths)
    shards = check_names(paths)
    parts = []
    for path, shard in zip(paths, shards):
        part = check_part_file(path)
        part.shard = shard
        parts.append(part)
    ordered, missing = plan(parts, allow_partial)
    if missing:
        run, _, count = ordered[0].shard
        many = 'shards' if len(missing) > 1 else 'shard'
        complain(f"{PROG}: warning: {esc(run)}-shard*of{count}.zip: {many} {number_list(missing)} of {count} "
                 f"{'are' if len(missing) > 1 else 'is'} missing (--allow-partial): the merged set has gaps")
    lock = OutputLock(out_path)
    try:
        lock.acquire()
        return write_merged(out_path, ordered, reopen_part)
    finally:
        lock.release()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_state = {'replaced': False}  # whether OUT was renamed into place (an interrupt after it keeps it)


def complain(line):
    """One line on stderr (nothing when stderr is closed)."""
    try:
        if sys.stderr is not None:
            print(line, file=sys.stderr)
            sys.stderr.flush()
    except OSError:
        pass


def _on_signal(signum, frame):
    # The first one stops the merge; the ones after it are ignored, so that the cleanup (removing the
    # temporary file and the lock) is not cut short by a second Ctrl-C or SIGTERM.
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG, description='Merges the shard archives of one sharded sg2 generate --outdir NAME.zip run.')
    parser.add_argument('--allow-partial', action='store_true',
                        help='merge an incomplete shard set (the missing shards are named on stderr)')
    parser.add_argument('out', metavar='OUT.zip', help='the merged archive (replaced when it is a regular file)')
    parser.add_argument('parts', metavar='PART.zip', nargs='+', help='the shards, NAME-shardIofN.zip')
    args = parser.parse_args(argv)
    if not args.out.lower().endswith('.zip') or os.path.basename(args.out).lower() == '.zip':
        parser.error(f"{esc(args.out)}: a dataset archive's name must end in .zip (the training code requires it)")
    for s in STOP_SIGNALS:
        signal.signal(s, _on_signal)
    try:
        images = merge(args.out, args.parts, args.allow_partial)
    except Refused as err:
        complain(err.line())
        return 1
    except (Interrupted, KeyboardInterrupt) as err:
        signum = err.signum if isinstance(err, Interrupted) else signal.SIGINT
        by = f' by {signal.Signals(signum).name}' if signum != signal.SIGINT else ''
        what = f'{esc(args.out)} was written, complete' if _state['replaced'] else 'nothing was written'
        complain(f'{PROG}: error: interrupted{by}: {what}')
        return 128 + signum
    except MemoryError:
        complain(f'{PROG}: error: out of memory')
        return 1
    except Exception as err:  # a bug: still one line, never a traceback
        complain(f'{PROG}: error: internal error: {type(err).__name__}: {esc(str(err))}')
        return 1
    for s in STOP_SIGNALS:  # done: a signal now would only cut the summary short
        signal.signal(s, signal.SIG_IGN)
    try:
        if sys.stdout is not None:  # None: started with stdout closed
            print(f'{PROG}: {images} images from {len(args.parts)} archives in {esc(args.out)}', file=sys.stdout)
            sys.stdout.flush()
    except OSError:  # stdout gone (a closed pipe): the merge is done all the same
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
