"""Folders only this user can change: the caches under ``$OAR_HOME`` whose files oar reads back.

:func:`private_folder` makes a folder owner-only (``0o700``) where it creates
it, and says why an existing one cannot be trusted: it, the folder above it or
anything inside it (a file, a folder, a link) is not owned by this user or can
be written by its group or by others, or it is a symbolic link. A cache that
fails the check is not read (its user compiles or traces in memory instead).

What this guarantees: once the check passes, only this user (and root) can
have put what the folder holds, or change it afterwards; another local user
cannot plant a file in it. What it cannot: stop a process of this same user
from writing there, which could as well change the code oar runs.
"""
import os
import stat

__all__ = ["private_folder", "untrusted_reason"]

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def _entry_problem(path, info):
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"{path} is owned by another user"
    if info.st_mode & _OTHERS_WRITE:
        return f"{path} can be written by its group or by others"
    return None


def untrusted_reason(folder):
    """Why ``folder`` cannot be trusted as a private cache (see the module docstring), or None when it can. The
    folder above it must not be writable by others unless it is sticky (as ``/tmp`` is), so that nobody else can
    put another folder in its place."""
    try:
        parent = os.stat(os.path.dirname(os.path.abspath(folder)))
        if parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
            return f"{os.path.dirname(os.path.abspath(folder))} can be written by others"
        problem = _entry_problem(folder, os.lstat(folder))
        if problem:
            return problem
        for root, folders, files in os.walk(folder):
            for name in folders + files:
                path = os.path.join(root, name)
                problem = _entry_problem(path, os.lstat(path))
                if problem:
                    return problem
    except OSError as err:
        return f"{folder} cannot be examined ({err.strerror or err})"
    return None


def private_folder(folder, levels=1):
    """Make ``folder`` (and the ``levels - 1`` folders above it, when missing) owner-only, then return
    :func:`untrusted_reason` of the outermost of them: None when the cache there can be used."""
    chain = [folder]
    for _ in range(levels - 1):
        chain.insert(0, os.path.dirname(chain[0]))
    try:
        os.makedirs(os.path.dirname(chain[0]) or ".", exist_ok=True)
        for path in chain:
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue                        # made before (or by a process beside this one): checked below
            os.chmod(path, 0o700)               # mkdir's mode passes through the umask
    except OSError as err:
        return f"{folder} cannot be made ({err.strerror or err})"
    return untrusted_reason(chain[0])
