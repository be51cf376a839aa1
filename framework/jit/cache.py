"""Traced programs kept on disk, so a new process loads the program its first call needs instead of tracing.

An entry is a saved program directory (:func:`framework.jit.save`) named by
the sha256 of what makes the program what it is: the weights of the layer
(:func:`state_digest`, every parameter and buffer), the call's signature (the
inputs, their dtypes, ranks and fixed sizes), the graph passes and oar's
version. Any change of those names another entry, so an entry is never stale.

Writes are atomic: a program is saved into a temporary folder beside the
entry and renamed into place; when several processes trace the same program
at once, the first rename wins and the others drop their copies, so the
entry is written once.

An entry is data, read as any program file is: :func:`framework.jit.load`
checks its layout, its recorded sha256 and every op attribute against the op's
declaration (:mod:`framework.jit.attributes`: kinds, ranges, sizes bounded),
and :func:`load_entry` checks that its inputs are those of the call it is
loaded for (``fits``). An entry that fails (cut, edited, garbage) is removed
with one :class:`ProgramCacheWarning` and the program traced again; so is one
whose first replay fails (:func:`drop_entry`, called by ``StaticLayer``). The
folder must be this user's and writable by no one else
(:func:`framework.private.private_folder`, which makes it owner-only); one that
is not, or cannot be written, only costs the cache: programs are traced in
memory as before, with one warning.
"""
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import warnings

from .. import backend
from ..errors import UserError
from ..private import private_folder
from .files import load, save

__all__ = ["ProgramCacheWarning", "state_digest", "entry_path", "load_entry", "store_entry", "drop_entry"]


class ProgramCacheWarning(UserWarning):
    """A cached program that did not load back (it is traced again), or a cache folder that cannot be written."""


def _oar_version():
    try:
        return importlib.metadata.version("oar")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def state_digest(layer):
    """Hex sha256 of a layer's weights: every parameter and buffer by name, dtype, shape and bytes."""
    digest = hashlib.sha256()
    for kind, named in (("param", layer.named_parameters()), ("buffer", layer.named_buffers())):
        for name, tensor in named:
            array = backend.to_device(tensor.data, "cpu")
            digest.update(f"{kind}:{name}:{array.dtype.str}:{array.shape};".encode())
            digest.update(memoryview(array).cast("B") if array.flags.c_contiguous else array.tobytes())
    return digest.hexdigest()


def entry_path(directory, weights_digest, signature, passes):
    """The folder of the cache entry under ``directory`` for a layer with ``weights_digest`` called with
    ``signature`` (a StaticLayer call key) and traced with ``passes``."""
    key = repr((weights_digest, signature, tuple(passes), _oar_version()))
    return os.path.join(directory, hashlib.sha256(key.encode()).hexdigest()[:40])


_refused = {}           # {cache folder: why it is not used}, warned once per process


def _private(folder):
    """Whether the cache ``folder`` may be used (made owner-only when missing); one warning per folder if not."""
    if folder not in _refused:
        problem = private_folder(folder)
        _refused[folder] = problem
        if problem is not None:
            warnings.warn(f"cannot write the program cache in {folder}: {problem}; programs are traced in memory (a "
                          f"cache folder must be this user's and writable by no one else)", ProgramCacheWarning,
                          stacklevel=3)
    return _refused[folder] is None


def load_entry(path, device, fits=None):
    """The program saved at ``path``, or None when there is none (or the cache folder is not private); an entry
    that does not load, or that ``fits(program)`` (when given) refuses, is removed with one
    :class:`ProgramCacheWarning` and None returned, so the caller traces again."""
    if not _private(os.path.dirname(path)) or not os.path.isdir(path):
        return None
    try:
        program = load(path, device=device)
    except (UserError, OSError, ValueError, RecursionError) as err:
        drop_entry(path, f"did not load ({err})")
        return None
    if fits is not None and not fits(program):
        drop_entry(path, "was traced for other inputs than its name says")
        return None
    return program


def drop_entry(path, reason):
    """Remove the cache entry ``path`` with one :class:`ProgramCacheWarning` saying it ``reason``; the caller
    traces the program again."""
    warnings.warn(f"cached program {path} {reason}; tracing it again", ProgramCacheWarning, stacklevel=3)
    shutil.rmtree(path, ignore_errors=True)


def store_entry(program, path):
    """Save ``program`` as the entry ``path`` once (atomically; a concurrent writer's copy is kept if it came
    first). A folder that cannot be written gives one :class:`ProgramCacheWarning`, never an error."""
    parent = os.path.dirname(path)
    if not _private(parent):
        return
    try:
        scratch = tempfile.mkdtemp(prefix=".writing-", dir=parent)
    except OSError as err:
        warnings.warn(f"cannot write the program cache in {parent} ({err.strerror or err}); programs are traced "
                      f"in memory", ProgramCacheWarning, stacklevel=2)
        return
    try:
        save(program, scratch)
        for name in os.listdir(scratch):            # owner-only whatever the umask, so the folder stays private
            os.chmod(os.path.join(scratch, name), 0o600)
        os.rename(scratch, path)
    except (OSError, UserError):
        pass                    # another process stored it first, the disk is full, or it cannot be saved
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
