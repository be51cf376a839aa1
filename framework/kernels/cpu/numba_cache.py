"""Numba's on-disk kernel cache, read as data that may be damaged: a broken entry is compiled again.

Numba keeps each kernel's compiled code as an index file (``.nbi``) and data
files (``.nbc``), both pickles. An emptied, cut or garbled one makes Numba's own
reader raise (``EOFError``, ``UnpicklingError``, …) out of the first call of
the kernel, and out of ``oar warmup``. :func:`install` wraps Numba's cache file
reader once per process so that such an entry counts as absent: one warning
(:class:`KernelCacheWarning`), the kernel compiles, and the new entry replaces
the broken one. It also makes what Numba writes owner-only (files ``0o600``,
folders ``0o700``), so the cache folder keeps passing
:func:`framework.private.untrusted_reason`, which :mod:`.compiler` checks before
Numba reads anything.

Unpickling is what Numba's cache is; what keeps a planted pickle from running is
that check (the folder and every file in it owned by this user and writable by
no one else), not this module.
"""
import contextlib
import os
import pickle
import warnings

from numba.core import caching, config

__all__ = ["KernelCacheWarning", "READ_ERRORS", "install"]

# What unpickling a damaged file, or rebuilding code from a garbled record, raises.
READ_ERRORS = (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError, IndexError,
               KeyError, OverflowError)


class KernelCacheWarning(RuntimeWarning):
    """A compiled-kernel cache entry that could not be read back; the kernel is compiled again."""


_state = {"installed": False, "warned": False}


def _warn(path, err):
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(f"the kernel cache entry {path} could not be read ({type(err).__name__}); compiling the "
                      f"kernel again", KernelCacheWarning, stacklevel=4)


def install():
    """Wrap Numba's cache reader and writer as the module docstring says (once per process)."""
    if _state["installed"]:
        return
    _state["installed"] = True
    files, locator = caching.IndexDataCacheFile, caching._CacheLocator
    load_index, load_data, open_for_write = files._load_index, files._load_data, files._open_for_write
    load_overload, ensure_cache_path = caching.Cache.load_overload, locator.ensure_cache_path

    def _load_index(self):
        try:
            return load_index(self)
        except READ_ERRORS as err:
            _warn(self._index_path, err)
            with contextlib.suppress(OSError):
                os.unlink(self._index_path)
            return {}

    def _load_data(self, name):
        try:
            return load_data(self, name)
        except READ_ERRORS as err:
            _warn(self._data_path(name), err)
            raise OSError(f"unreadable cache entry {name}") from None      # Numba's load() takes it as absent

    def load(self, sig, target_context):
        try:
            return load_overload(self, sig, target_context)
        except READ_ERRORS as err:
            _warn(self._cache_path, err)
            return None

    @contextlib.contextmanager
    def _open_private(self, filepath):
        with open_for_write(self, filepath) as f:
            os.fchmod(f.fileno(), 0o600)
            yield f

    def _ensure_private(self):
        ensure_cache_path(self)
        top, path = os.path.abspath(config.CACHE_DIR or os.sep), os.path.abspath(self.get_cache_path())
        while path.startswith(top + os.sep):          # every folder Numba made below the cache folder
            os.chmod(path, 0o700)
            path = os.path.dirname(path)

    files._load_index, files._load_data, files._open_for_write = _load_index, _load_data, _open_private
    caching.Cache.load_overload, locator.ensure_cache_path = load, _ensure_private
