#!/usr/bin/env python3
"""Merges the per-shard dataset archives of a sharded `sg2 generate --outdir NAME.zip` run
(NAME-shard0of4.zip, NAME-shard1of4.zip, ...) into one archive that stylegan2-ada-pytorch's training
code reads: every image entry copied as it is (stored, no recompression), and one dataset.json whose
labels are the shards' labels together ({"labels": null} when any shard has none).

    python3 tools/merge_dataset_zips.py OUT.zip PART.zip [PART.zip ...]

The shards' image names are their positions in the whole seed list, so they never collide; a name
found twice is an error. OUT.zip is written to OUT.zip.tmp and renamed when complete. Standard library
only.
"""
import json
import os
import sys
import zipfile


def main():
    if len(sys.argv) < 3:
        sys.exit('usage: merge_dataset_zips.py OUT.zip PART.zip [PART.zip ...]')
    out_path, parts = sys.argv[1], sys.argv[2:]
    tmp = out_path + '.tmp'
    labels = []
    seen = set()
    try:
        with zipfile.ZipFile(tmp, 'w', compression=zipfile.ZIP_STORED, allowZip64=True) as out:
            for part in parts:
                with zipfile.ZipFile(part) as z:
                    for info in z.infolist():
                        if info.filename == 'dataset.json':
                            part_labels = json.loads(z.read(info))['labels']
                            labels = None if labels is None or part_labels is None else labels + part_labels
                            continue
                        if info.filename in seen:
                            raise SystemExit(f'merge_dataset_zips: {info.filename} is in two archives ({part})')
                        seen.add(info.filename)
                        copy = zipfile.ZipInfo(info.filename, info.date_time)
                        copy.compress_type = zipfile.ZIP_STORED
                        copy.external_attr = info.external_attr
                        with z.open(info) as src, out.open(copy, 'w', force_zip64=info.file_size >= 2**31) as dst:
                            while True:
                                block = src.read(1 << 20)
                                if not block:
                                    break
                                dst.write(block)
            out.writestr('dataset.json', json.dumps({'labels': labels}))
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    print(f'merge_dataset_zips: {len(seen)} images from {len(parts)} archives in {out_path}')


if __name__ == '__main__':
    main()
