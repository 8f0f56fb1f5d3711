#!/usr/bin/env python
"""Make DEST a fresh copy of the collection's files (tracked + untracked-not-ignored).

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


def main() -> None:
    """Copy."""
    dest = sys.argv[1]
    if os.path.lexists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    count = 0
    for name in list_files():
        if not os.path.lexists(name):  # deleted in the working tree, still in the index
            continue
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target) or '.', exist_ok=True)
        if os.path.islink(name):
            os.symlink(os.readlink(name), target)
        elif os.path.isfile(name):
            shutil.copy2(name, target)
        else:
            continue
        count += 1
    # ansible-test looks for the nearest .git upwards to list the collection's files; without one
    # here it would find the enclosing repository, where .build/ is ignored, and see no files at all.
    # An empty repository makes every copied file "untracked, not ignored" (the copied .gitignore
    # still hides tests/output), which is exactly the set ansible-test should test.
    subprocess.run(['git', 'init', '-q', dest], check=True)
    print(f'sync_tree: {count} files -> {dest}')


if __name__ == '__main__':
    main()
