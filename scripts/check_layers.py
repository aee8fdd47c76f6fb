#!/usr/bin/env python3
"""Checks the layering of the tree (docs/design.md §2) at the include level: every quoted #include
of a source file must name a header of its own layer or of a layer below it, by its path from the
repository root ("formats/npy.h", "kernels/ref/parallel.h") or as a public header ("sg2/model.h"),
never with "..". Exits 1 and lists every violation.

    python3 scripts/check_layers.py [ROOT]

The build enforces the same rules by itself (CMakeLists.txt: each layer compiles with include roots
that hold only the layers it may use, and links alone with the layers below it); this check also
covers what the include roots cannot tell apart (kernels/ref beside kernels/) and gives the whole
list at once.

Layers, bottom to top (a layer may include the public headers and the layers listed for it):
    public   include/sg2    the public API
    util     util/          errors, tensors, files, text, RandomState
    formats  formats/       model config + JSON, model file, npy, PNG, dataset zip -> util
    ref      kernels/ref/   CPU reference ops                                       -> util
    kernels  kernels/       CUDA kernels                                            -> util
    readers  readers/       checkpoint readers                                      -> formats, util
    engine   engine/        plan, generator, backends                               -> formats, kernels, ref, util
    api      api/           load facade, C ABI                                      -> readers, engine, formats, util
    apps     apps/          the CLI, examples                                       -> public headers only
    dev      dev/           experiments (kernel runner)                             -> engine, kernels, ref, formats, util
Tests (tests/) may include anything.
"""
import os
import re
import sys

ALLOWED = {
    'public': {'public'},
    'util': {'util', 'public'},
    'formats': {'formats', 'util', 'public'},
    'ref': {'ref', 'util', 'public'},
    'kernels': {'kernels', 'util', 'public'},
    'readers': {'readers', 'formats', 'util', 'public'},
    'engine': {'engine', 'formats', 'kernels', 'ref', 'util', 'public'},
    'api': {'api', 'readers', 'engine', 'formats', 'util', 'public'},
    'apps': {'apps', 'public'},
    'dev': {'dev', 'engine', 'kernels', 'ref', 'formats', 'util', 'public'},
}
PREFIXES = [  # longest first
    ('include/', 'public'), ('kernels/ref/', 'ref'), ('kernels/', 'kernels'), ('formats/', 'formats'),
    ('engine/', 'engine'), ('api/', 'api'), ('readers/', 'readers'), ('util/', 'util'), ('apps/', 'apps'),
    ('dev/', 'dev'),
]
TOPS = ('include', 'util', 'formats', 'kernels', 'readers', 'engine', 'api', 'apps', 'dev')
SOURCE_EXT = ('.h', '.hpp', '.cuh', '.cpp', '.cc', '.cu', '.c')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    for prefix, layer in PREFIXES:
        if rel.startswith(prefix):
            return layer
    return None


def resolve(root, src_rel, inc):
    """The repository-relative path an include names: beside the file, then on the include roots."""
    for c in (os.path.join(os.path.dirname(src_rel), inc), inc, os.path.join('include', inc)):
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None  # generated or system-like header


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    bad, checked = [], 0
    for top in TOPS:
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
                        inc = m.group(1)
                        if '..' in inc.split('/'):
                            bad.append(f'{rel}:{n}: "{inc}" climbs out of its folder: name the header by its layer path')
                            continue
                        target = resolve(root, rel, inc)
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
