#!/usr/bin/env python3
"""Reads an .npz archive with numpy.load (allow_pickle=False), as a user's script would, and prints
one line per array: "NAME DTYPE SHAPE SHA256" (SHAPE as 2x3x4, "" for a scalar; SHA256 of the array's
C-order bytes), and for unicode / bytes arrays a second line "NAME= value,value,..." with the values.
Used by tests/test_npz_writer.cpp and tests/test_cli_latents.cpp on sg2's own archives.

    python3 tests/check_latents_npz.py ARCHIVE.npz

Exits 77 (the tests skip) when numpy is not installed, 1 when numpy cannot read the archive.
"""
import hashlib
import sys

try:
    import numpy as np
except ImportError:
    print('numpy is not installed')
    sys.exit(77)


def main():
    try:
        with np.load(sys.argv[1], allow_pickle=False) as f:
            for name in f.files:
                a = np.ascontiguousarray(f[name])
                shape = 'x'.join(str(d) for d in a.shape)
                print(name, a.dtype.str, shape, hashlib.sha256(a.tobytes()).hexdigest())
                if a.dtype.kind in 'US':
                    vals = [v.decode() if isinstance(v, bytes) else str(v) for v in a.reshape(-1)]
                    print(name + '=', ','.join(vals))
    except Exception as e:  # noqa: BLE001 - any failure to read is the test's failure
        print('numpy cannot read it:', type(e).__name__, e)
        sys.exit(1)


main()
