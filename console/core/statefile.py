"""Writing one of the operator's own state files (outside every root): whole or not at all.

The bytes go to a new private file (mode 0600, never through a symlink) beside the target,
are fsynced, renamed over the target, and the directory is fsynced; on any error the temporary
file is removed and the ``OSError`` is raised, the old file left as it was.
"""

from __future__ import annotations

import os
import secrets


def replace_private(path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
