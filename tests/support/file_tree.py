"""What "byte for byte" means for a copied directory: a snapshot to compare, shared by the tests that check a
copy (the SSH executor's run, the emulator's backups and restore).

``snapshot(root)`` maps every path below ``root`` (relative) to ``(kind, mode, sha256 or link target)``:
files by their bytes' digest and mode, directories by mode, symlinks by target (not followed);
``mtimes=True`` adds each file's modification time in nanoseconds. ``site_storage(storage)`` is an
emulator site's whole state on disk: its ``files/`` snapshot and its ``db.sql`` digest (None when absent).
"""

import hashlib
import os
import stat


def _digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def snapshot(root, mtimes=False):
    """{relative path: (kind, mode, sha256 / link target[, mtime ns])} for everything below ``root``."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                result[rel] = ("link", None, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                result[rel] = ("dir", stat.S_IMODE(info.st_mode), None)
            else:
                entry = ("file", stat.S_IMODE(info.st_mode), _digest(path))
                result[rel] = entry + (info.st_mtime_ns,) if mtimes else entry
    return result


def site_storage(storage, mtimes=True):
    """An emulator site's files and database as a run writes them (``storage`` of ``emu.site(id)``)."""
    database = os.path.join(storage, "db.sql")
    return {"files": snapshot(os.path.join(storage, "files"), mtimes=mtimes),
            "db": _digest(database) if os.path.exists(database) else None}
