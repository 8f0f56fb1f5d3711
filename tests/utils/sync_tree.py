#!/usr/bin/env python
"""Make DEST a copy of the collection's files (tracked + untracked-not-ignored), brought up to date in place.

ansible-test needs the collection at a path ending in ansible_collections/<namespace>/<name>.
A copy (not a symlink: ansible-test resolves the real path, which would then not end in
ansible_collections/wpcloud/hosting) keeps ansible-test's tests/output and its view of "the files" separate
from the working tree, and ignored things (.venv*, .build, caches) out of the sanity tests.
Usage: python tests/utils/sync_tree.py DEST   (run from the repository root)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

EXCLUDE_DIRS = {'.git', '.build', '.ansible', 'tests/output', '__pycache__', '.pytest_cache', 'dist'}


def list_files() -> list[str]:
    """Tracked + untracked-not-ignored files; without git, a walk that skips the usual ignores."""
    try:
        out = subprocess.run(['git', 'ls-files', '-z', '-co', '--exclude-standard'],
                             check=True, capture_output=True).stdout
        return sorted({name for name in out.decode('utf-8').split('\0') if name})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk('.'):
            rel_root = os.path.relpath(root, '.')
            dirs[:] = [d for d in dirs
                       if not d.startswith('.venv')
                       and os.path.normpath(os.path.join(rel_root, d)) not in EXCLUDE_DIRS
                       and d not in EXCLUDE_DIRS]
            files.extend(os.path.normpath(os.path.join(rel_root, n)) for n in names if not n.endswith('.pyc'))
        return sorted(files)


MANIFEST_SUFFIX = '.sync-tree-files'   # DEST + this, beside DEST (not in it: sanity would see it): the files the last sync copied


def same(name: str, target: str) -> bool:
    """TARGET already is a copy of NAME (a link to the same place, or a file of the same size and mtime: copy2 keeps it)."""
    if os.path.islink(name) or os.path.islink(target):
        return os.path.islink(name) and os.path.islink(target) and os.readlink(name) == os.readlink(target)
    try:
        src, dst = os.stat(name), os.stat(target)
    except OSError:
        return False
    return src.st_size == dst.st_size and src.st_mtime_ns == dst.st_mtime_ns


def main() -> None:
    """Copy what changed since the last sync and remove what the last sync copied and is gone now.

    A sync with nothing to change writes nothing, so that `make test` can run its suites side by side
    (each `make <suite>` syncs first) while ansible-test runs in DEST. Files the tools write into DEST
    (tests/output, caches, integration_config.yml) are not the sync's and are left alone; a DEST without
    the manifest (first sync, or one of an older version) is made from scratch.
    """
    dest = sys.argv[1]
    dest = dest.rstrip('/')
    manifest = dest + MANIFEST_SUFFIX
    previous = set()
    if os.path.isfile(manifest):
        with open(manifest, encoding='utf-8') as handle:
            previous = set(handle.read().splitlines())
    elif os.path.lexists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest, exist_ok=True)
    copied = []
    changed = 0
    for name in list_files():
        if not os.path.lexists(name):  # deleted in the working tree, still in the index
            continue
        if not (os.path.islink(name) or os.path.isfile(name)):
            continue
        copied.append(name)
        target = os.path.join(dest, name)
        if same(name, target):
            continue
        changed += 1
        os.makedirs(os.path.dirname(target) or '.', exist_ok=True)
        fresh = target + '.sync-tree-new'
        if os.path.lexists(fresh):
            os.remove(fresh)
        if os.path.islink(name):
            os.symlink(os.readlink(name), fresh)
        else:
            shutil.copy2(name, fresh)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(fresh, target)      # a reader sees the old file or the new one, never half of it
    for name in sorted(previous - set(copied)):
        target = os.path.join(dest, name)
        if os.path.lexists(target) and not os.path.isdir(target):
            os.remove(target)
            changed += 1
    if previous != set(copied):
        with open(manifest + '.new', 'w', encoding='utf-8') as handle:
            handle.write('\n'.join(copied) + '\n')
        os.replace(manifest + '.new', manifest)
    # ansible-test looks for the nearest .git upwards to list the collection's files; without one
    # here it would find the enclosing repository, where .build/ is ignored, and see no files at all.
    # An empty repository makes every copied file "untracked, not ignored" (the copied .gitignore
    # still hides tests/output), which is exactly the set ansible-test should test.
    if not os.path.isdir(os.path.join(dest, '.git')):
        subprocess.run(['git', 'init', '-q', dest], check=True)
    print(f'sync_tree: {len(copied)} files -> {dest} ({changed} changed)')


if __name__ == '__main__':
    main()
