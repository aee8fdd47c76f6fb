#!/usr/bin/env python3
"""Checks a dataset archive written by sg2's DatasetZip (tests/test_dataset_zip.cpp) with Python's
zipfile, and the properties stylegan2-ada-pytorch's training code relies on when it reads one
(training/dataset.py, ImageFolderDataset and Dataset; re-stated here from reading that code, with the
standard library only: no torch, numpy or PIL in CI).

    python3 tests/check_dataset_zip.py ARCHIVE MANIFEST [--zip64] [--images]

MANIFEST: one line per entry in archive order, "NAME SIZE SHA256", the last one dataset.json.
--zip64: the archive must end with zip64 records (more than 65,535 entries).
--images: the entries are PNG images of the training code's dataset (square, same shape, uint8).
Prints "OK <entries>" and exits 0, or prints the first failure and exits 1.
"""
import hashlib
import json
import os
import struct
import sys
import zipfile
import zlib

# PIL.Image.EXTENSION's common image extensions: what ImageFolderDataset counts as an image.
IMAGE_EXTENSIONS = {'.png', '.jpg', '.jpeg', '.bmp', '.gif', '.tif', '.tiff', '.webp', '.ppm', '.pgm'}


def fail(msg):
    print('FAIL ' + msg)
    sys.exit(1)


def file_ext(name):  # ImageFolderDataset._file_ext
    return os.path.splitext(name)[1].lower()


def png_shape(data, name):
    """(height, width, channels) of an 8-bit PNG; its zlib stream must inflate to the filtered rows."""
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        fail(f'{name}: not a PNG')
    pos, idat, ihdr = 8, b'', None
    while pos < len(data):
        (length,) = struct.unpack('>I', data[pos:pos + 4])
        ctype = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(ctype + body) != crc:
            fail(f'{name}: bad CRC in {ctype!r}')
        if ctype == b'IHDR':
            ihdr = struct.unpack('>IIBBBBB', body)
        elif ctype == b'IDAT':
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = ihdr
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    if depth != 8 or interlace != 0:
        fail(f'{name}: depth {depth}, interlace {interlace}')
    raw = zlib.decompress(idat)  # checks adler32
    if len(raw) != (width * channels + 1) * height:
        fail(f'{name}: {len(raw)} filtered bytes for {width}x{height}x{channels}')
    return height, width, channels


def main():
    archive, manifest = sys.argv[1], sys.argv[2]
    want_zip64 = '--zip64' in sys.argv[3:]
    images = '--images' in sys.argv[3:]
    expected = [line.split() for line in open(manifest) if line.strip()]

    # Python's zipfile reads it: names in order, stored entries, every CRC, every byte.
    if file_ext(archive) != '.zip':
        fail('ImageFolderDataset needs a .zip path')
    with zipfile.ZipFile(archive) as z:
        infos = z.infolist()
        if [i.filename for i in infos] != [e[0] for e in expected]:
            fail(f'names differ: {len(infos)} entries, first {[i.filename for i in infos[:3]]}')
        bad = z.testzip()
        if bad is not None:
            fail(f'CRC error in {bad}')
        for info, (name, size, digest) in zip(infos, expected):
            if info.compress_type != zipfile.ZIP_STORED:
                fail(f'{name}: compressed (dataset_tool.py stores entries)')
            if info.file_size != int(size) or info.is_dir():
                fail(f'{name}: size {info.file_size}, expected {size}')
            if info.date_time[0] < 2020:
                fail(f'{name}: date {info.date_time} (no real modification time)')
            if hashlib.sha256(z.read(info)).hexdigest() != digest:
                fail(f'{name}: content differs')

        # ImageFolderDataset.__init__: the image names, sorted; at least one; the raw shape.
        all_fnames = set(z.namelist())
        image_fnames = sorted(f for f in all_fnames if file_ext(f) in IMAGE_EXTENSIONS)
        if not image_fnames:
            fail('no image files (ImageFolderDataset: "No image files found in the specified path")')
        if images:
            shape = png_shape(z.read(image_fnames[0]), image_fnames[0])
            for f in image_fnames:  # Dataset.__getitem__ asserts every image has the raw shape
                if png_shape(z.read(f), f) != shape:
                    fail(f'{f}: shape differs from {image_fnames[0]}')
            if shape[0] != shape[1]:  # Dataset.resolution asserts a square image
                fail(f'images are {shape[1]}x{shape[0]}, not square')

        # ImageFolderDataset._load_raw_labels: dataset.json's "labels", null or [[name, label], ...]
        # with a label for every image; Dataset._get_raw_labels: int labels are >= 0.
        if 'dataset.json' not in all_fnames:
            fail('no dataset.json')
        with z.open('dataset.json', 'r') as f:
            labels = json.load(f)['labels']
        if labels is not None:
            labels = dict(labels)
            try:
                values = [labels[fname.replace('\\', '/')] for fname in image_fnames]
            except KeyError as e:
                fail(f'no label for {e}')
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
                fail('labels must be integers >= 0')

    data = open(archive, 'rb').read()
    has_zip64 = data.rfind(b'PK\x06\x06') != -1 and data.rfind(b'PK\x06\x07') != -1
    if want_zip64 and not has_zip64:
        fail('no zip64 end of central directory record')
    print(f'OK {len(expected)} entries' + (' zip64' if has_zip64 else ''))


if __name__ == '__main__':
    main()
