#!/usr/bin/env python3
"""Checks the layering of the tree (docs/design.md §2): every quoted #include of a source file must
name a header of its own layer or of a layer below it. Exits 1 and lists every violation.

    python3 scripts/check_layers.py [ROOT]

Layers, bottom to top (a layer may include the public headers and the layers listed for it):
    public   engine/include/sg2   the public API
    util     util/                errors, tensors, files
    kernels  kernels/             CUDA kernels          -> util
    ref      kernels/ref/         CPU reference ops     -> util
    engine   engine/src/          the engine            -> kernels, ref, util
    readers  weights_tools/       checkpoint readers    -> util
    api      engine/api/          load facade, C ABI    -> readers, engine, util
    apps     apps/                the CLI, examples     -> public headers only
    dev      dev/                 experiments           -> kernels, ref, util
Tests (tests/) may include anything.
"""
import os
import re
import sys

ALLOWED = {
    'public': {'public'},
    'util': {'util', 'public'},
    'kernels': {'kernels', 'util', 'public'},
    'ref': {'ref', 'util', 'public'},
    'engine': {'engine', 'kernels', 'ref', 'util', 'public'},
    'readers': {'readers', 'util', 'public'},
    'api': {'api', 'readers', 'engine', 'util', 'public'},
    'apps': {'apps', 'public'},
    'dev': {'dev', 'kernels', 'ref', 'util', 'public'},
}
PREFIXES = [  # longest first
    ('engine/include/', 'public'), ('kernels/ref/', 'ref'), ('kernels/', 'kernels'), ('engine/src/', 'engine'),
    ('engine/api/', 'api'), ('weights_tools/', 'readers'), ('util/', 'util'), ('apps/', 'apps'), ('dev/', 'dev'),
]
SOURCE_EXT = ('.h', '.hpp', '.cuh', '.cpp', '.cc', '.cu')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    for prefix, layer in PREFIXES:
        if rel.startswith(prefix):
            return layer
    return None


def resolve(root, src_rel, inc):
    """The repository-relative path an include names: beside the file, then on the include roots."""
    candidates = [os.path.join(os.path.dirname(src_rel), inc), inc, os.path.join('engine/include', inc),
                  os.path.join('engine/src', inc)]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None  # generated or system-like header


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    bad, checked = [], 0
    for top in ('engine', 'kernels', 'util', 'weights_tools', 'apps', 'dev'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                src_layer = layer_of(rel)
                if src_layer is None:
                    continue
                with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        target = resolve(root, rel, m.group(1))
                        if target is None:
                            continue
                        t_layer = layer_of(target)
                        if t_layer is not None and t_layer not in ALLOWED[src_layer]:
                            bad.append(f'{rel}:{n}: {src_layer} includes {target} ({t_layer})')
    if bad:
        print(f'check_layers: {len(bad)} include(s) point up or sideways (docs/design.md §2):')
        print('\n'.join('  ' + b for b in bad))
        return 1
    print(f'check_layers: {checked} includes checked, all point down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
