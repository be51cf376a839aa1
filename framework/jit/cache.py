"""Traced programs kept on disk, so a new process loads the program its first call needs instead of tracing.

An entry is a saved program directory (:func:`framework.jit.save`) named by
the sha256 of what makes the program what it is: the weights of the layer
(:func:`state_digest`, every parameter and buffer), the call's signature (the
inputs, their dtypes, ranks and fixed sizes), the graph passes and oar's
version. Any change of those names another entry, so an entry is never stale.

Writes are atomic: a program is saved into a temporary folder beside the
entry and renamed into place; when several processes trace the same program
at once, the first rename wins and the others drop their copies, so the
entry is written once. An entry that does not load back (cut, edited, its
weights changed: :func:`framework.jit.load` checks the recorded sha256) is
removed with a warning and the program traced again. A folder that cannot be
written only costs the cache: the program is traced in memory as before.
"""
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import warnings

from .. import backend
from ..errors import UserError
from .files import load, save

__all__ = ["ProgramCacheWarning", "state_digest", "entry_path", "load_entry", "store_entry"]


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


def load_entry(path, device):
    """The program saved at ``path``, or None when there is none; an entry that does not load is removed
    (with a :class:`ProgramCacheWarning`) and None returned, so the caller traces again."""
    if not os.path.isdir(path):
        return None
    try:
        return load(path, device=device)
    except (UserError, OSError, ValueError) as err:
        warnings.warn(f"cached program {path} did not load ({err}); tracing it again", ProgramCacheWarning,
                      stacklevel=2)
        shutil.rmtree(path, ignore_errors=True)
        return None


def store_entry(program, path):
    """Save ``program`` as the entry ``path`` once (atomically; a concurrent writer's copy is kept if it came
    first). A folder that cannot be written gives one :class:`ProgramCacheWarning`, never an error."""
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=".writing-", dir=parent)
    except OSError as err:
        warnings.warn(f"cannot write the program cache in {parent} ({err.strerror or err}); programs are traced "
                      f"in memory", ProgramCacheWarning, stacklevel=2)
        return
    try:
        save(program, scratch)
        os.rename(scratch, path)
    except (OSError, UserError):
        pass                    # another process stored it first, the disk is full, or it cannot be saved
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
