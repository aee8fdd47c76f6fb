#!/usr/bin/env python3
"""Enlarges 8-bit PNGs by an integer factor, nearest neighbour (every pixel becomes a FACTOR x FACTOR
block), for the pictures of docs/images: a 32x32 digit is too small to see on a page.

    python3 tools/enlarge_png.py IN.png OUT.png [--factor 3]

docs/images/classK.png is `sg2 generate --seeds 0-9 --class K --grid 10x1` enlarged 3x (320x32 -> 960x96),
docs/images/mix.png the grid of `sg2 mix --rows 1,2,3 --cols 4,5,6,7 --class 3` enlarged 3x. Reads
non-interlaced 8-bit gray, gray+alpha, RGB or RGBA PNGs (what sg2 writes); standard library only.
"""
import argparse
import os
import struct
import sys
import zlib

CHANNELS = {0: 1, 4: 2, 2: 3, 6: 4}  # PNG colour type -> samples per pixel


def chunks(data):
    pos = 8
    while pos < len(data):
        (n,) = struct.unpack('>I', data[pos:pos + 4])
        yield data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def read_png(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        sys.exit(f'{path}: not a PNG file')
    idat = b''
    for kind, body in chunks(data):
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if depth != 8 or ctype not in CHANNELS or interlace:
                sys.exit(f'{path}: only non-interlaced 8-bit gray, gray+alpha, RGB or RGBA PNGs')
        elif kind == b'IDAT':
            idat += body
    c = CHANNELS[ctype]
    raw = zlib.decompress(idat)
    stride = w * c
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - c] if i >= c else 0
            b, up_left = prev[i], (prev[i - c] if i >= c else 0)
            pred = (0, a, b, (a + b) // 2, paeth(a, b, up_left))[ftype]
            line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        prev = line
    return w, h, ctype, c, rows


def write_png(path, w, h, ctype, rows):
    def chunk(kind, body):
        return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body) & 0xFFFFFFFF)

    raw = b''.join(b'\x00' + bytes(r) for r in rows)
    png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, ctype, 0, 0, 0)) +
           chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(png)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('input')
    ap.add_argument('output')
    ap.add_argument('--factor', type=int, default=3)
    a = ap.parse_args()
    if a.factor < 1:
        sys.exit('--factor must be >= 1')
    w, h, ctype, c, rows = read_png(a.input)
    big = []
    for r in rows:
        line = bytearray()
        for x in range(w):
            line += bytes(r[x * c:(x + 1) * c]) * a.factor
        big.extend([line] * a.factor)
    write_png(a.output, w * a.factor, h * a.factor, ctype, big)


if __name__ == '__main__':
    main()
