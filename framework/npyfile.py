"""Reading ``.npy`` data safely from any thread.

``numpy.load`` parses an ``.npy`` header with ``ast.literal_eval``, and Python
3.11's parser keeps its recursion count per interpreter, not per thread: two
threads parsing at once can fail with ``SystemError: AST constructor recursion
depth mismatch``. Loader threads (shard readers, thread workers) read ``.npy``
members concurrently, so every such read goes through :func:`load_npy`, which
parses one header at a time. Pickled arrays are always refused.
"""
import threading

import numpy

__all__ = ["load_npy"]

_HEADER_LOCK = threading.Lock()


def load_npy(file):
    """The array in ``file`` (a path or a binary file object holding one ``.npy``); shape and dtype as stored.

    Raises ``ValueError`` for a file that is not ``.npy`` or holds pickled objects.
    """
    with _HEADER_LOCK:
        return numpy.load(file, allow_pickle=False)
