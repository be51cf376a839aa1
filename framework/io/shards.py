"""Sharded records: a dataset written as tar shards in the WebDataset layout, and read back streaming.

**Layout.** A shard is a plain (uncompressed) tar file. Sample ``k`` is the run
of consecutive members named ``NNNNNN.<ext>`` (``k`` zero-padded to six digits
or more): its fields that are bytes go to a member of their own named after
the field (``000042.mp4``, ``000042.jpg``), NumPy arrays to ``000042.<field>.npy``
(read back with ``allow_pickle=False``), a string field named ``txt`` to
``000042.txt``, and every other field (numbers, strings, lists) to one
``000042.json``. This is the layout ``webdataset`` and ``tar tf`` read too.
:func:`write_shards` also writes an index, ``<prefix>index.json``
(``{"shards": [{"url": name, "samples": n, "sha256": h}], "samples": N}``), so
a reader knows the size of an epoch without opening the shards, and checks each
shard it reads against it.

**Reading.** :class:`ShardDataset` streams the shards through fsspec (a local
path, ``file://``, ``http(s)://``, ``s3://``, ``gs://``, ``memory://``: see
:mod:`framework.io.remote`) and the standard library's ``tarfile`` in stream
mode, so a shard is never held whole in memory and nothing is downloaded
first. It splits the shards, never the samples, so each sample is read once
per epoch:

- over the ranks of distributed training: rank ``r`` of ``w`` reads the shards
  ``i`` with ``i % w == r`` (from ``framework.distributed`` when not given);
- over its ``num_workers`` reader threads, as PyTorch's DataLoader workers split
  an ``IterableDataset``: worker ``j`` of ``n`` reads every ``n``-th of its rank's
  shards, and the streams are merged one sample from each worker in turn (so
  the order is fixed by the seed, the epoch and the number of workers).
  oar's DataLoader reads an iterable dataset in the main process, so the
  parallel reading lives here; :meth:`ShardDataset.iter_worker` gives one
  worker's part for a loader that runs its own workers;
- shuffled per epoch: the order of each rank's shards is drawn from
  ``(seed, epoch)``, and samples pass through a buffer of ``shuffle_buffer``
  from which a random one is taken as each new one comes in (0: in order).

**Resuming.** :meth:`ShardDataset.state_dict` names the epoch and the shards
whose every sample has been yielded; after a crash, ``set_state_dict`` makes
the next pass of that epoch skip them (the shards that were being read are
read again from their start: the resume point is a shard boundary).

**Errors.** A shard cut short is one :class:`ShardFormatError` naming the shard
and the member (``shard …/train-000003.tar: member 000311.json is cut short``);
every shard an index lists is checked against it once read to its end (its
sample count, and its sha256 where the index records one, as
:func:`write_shards` does), so a shard cut at a member boundary or changed is
one line naming it, never a short epoch; an index that lists no shard, or a
glob that matches none, is one line too;
a URL that cannot be reached is one :class:`~framework.io.remote.RemoteFileError`
line.
"""
import glob
import hashlib
import io
import json
import os
import queue
import re
import tarfile
import threading

import numpy

from ..errors import FileFormatError, MissingFileError, UserError
from ..npyfile import load_npy
from ..registry import DATASETS
from .dataset import IterableDataset
from .remote import is_url, open_file, read_bytes, safe_url, storage_options

__all__ = ["ShardFormatError", "write_shards", "expand_urls", "read_shard", "ShardDataset"]

_MEMBER = re.compile(r"^(?P<key>[^/.]+)\.(?P<ext>.+)$")


class ShardFormatError(FileFormatError):
    """A shard that is not a readable tar of samples (cut short, garbage, a member of another layout); the
    message names the shard and the member."""


# ---------------------------------------------------------------------------------------------- writing

def _members(key, sample):
    """``[(member name, bytes)]`` of one sample (a dict) in the layout of the module docstring."""
    if not isinstance(sample, dict):
        raise TypeError(f"write_shards: a sample must be a dict of fields, got {type(sample).__name__}")
    members, fields = [], {}
    for field, value in sample.items():
        if not isinstance(field, str) or not field or "/" in field or field.startswith("."):
            raise ValueError(f"write_shards: field name {field!r} cannot be a member name")
        if isinstance(value, (bytes, bytearray, memoryview)):
            members.append((f"{key}.{field}", bytes(value)))
        elif isinstance(value, numpy.ndarray) and value.dtype != object:
            buffer = io.BytesIO()
            numpy.save(buffer, value, allow_pickle=False)
            members.append((f"{key}.{field}.npy", buffer.getvalue()))
        elif field == "txt" and isinstance(value, str):
            members.append((f"{key}.txt", value.encode("utf-8")))
        else:
            fields[field] = value.item() if isinstance(value, numpy.generic) else value
    if fields:
        members.append((f"{key}.json", json.dumps(fields, ensure_ascii=False).encode("utf-8")))
    return members


class _HashingWriter:
    """A binary file being written whose bytes are also hashed (sha256), for the index."""

    def __init__(self, raw):
        self.raw, self.digest = raw, hashlib.sha256()

    def write(self, data):
        self.digest.update(data)
        return self.raw.write(data)

    def close(self):
        self.raw.close()


def _open_for_writing(url):
    if is_url(url):
        import fsspec
        return fsspec.open(url, "wb").open()
    os.makedirs(os.path.dirname(os.path.abspath(url)), exist_ok=True)
    return open(url, "wb")


def write_shards(samples, prefix, max_count=1000, max_bytes=None, digits=6):
    """Write ``samples`` (an iterable of dicts) as tar shards ``<prefix>000000.tar``, ``<prefix>000001.tar`` …

    ``prefix`` is a path or URL prefix (``out/train-``, ``s3://bucket/train-``).
    A shard closes after ``max_count`` samples, or once it holds ``max_bytes``
    (when given). Members are written with a fixed mode and time, so the same
    samples give the same bytes. Returns the index (also written to
    ``<prefix>index.json``): ``{"shards": [{"url": file name, "samples": n}],
    "samples": total}``, the names relative to the index.
    """
    if max_count < 1:
        raise ValueError(f"write_shards: max_count must be at least 1, got {max_count}")
    shards, writer, raw, count, size, total = [], None, None, 0, 0, 0

    def close():
        if writer is not None:
            writer.close()
            raw.close()
            shards.append({"url": os.path.basename(name) if not is_url(name) else name.rsplit("/", 1)[-1],
                           "samples": count, "sha256": raw.digest.hexdigest()})

    for number, sample in enumerate(samples):
        if writer is None or count >= max_count or (max_bytes and size >= max_bytes):
            close()
            name = f"{prefix}{len(shards):0{digits}d}.tar"
            raw = _HashingWriter(_open_for_writing(name))
            writer, count, size = tarfile.open(fileobj=raw, mode="w|", format=tarfile.USTAR_FORMAT), 0, 0
        for member, data in _members(f"{number:0{digits}d}", sample):
            info = tarfile.TarInfo(member)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            writer.addfile(info, io.BytesIO(data))
            size += len(data) + 512
        count, total = count + 1, total + 1
    close()
    index = {"shards": shards, "samples": total}
    with _open_for_writing(f"{prefix}index.json") as f:
        f.write(json.dumps(index, indent=1).encode("utf-8"))
    return index


# ---------------------------------------------------------------------------------------------- reading

def expand_urls(urls):
    """A list of shard URLs from ``urls``: a list, one URL, a brace range (``train-{000000..000009}.tar``,
    the WebDataset spelling; widths kept), a glob (``shards/train-*.tar``, sorted; ``*`` and ``[…]``, a
    ``?`` being a URL's query), or a space-separated string of these. A glob that matches nothing is a
    :class:`~framework.errors.MissingFileError`."""
    if isinstance(urls, (list, tuple)):
        return [u for item in urls for u in expand_urls(item)]
    if not isinstance(urls, str) or not urls.strip():
        raise ValueError(f"ShardDataset: urls must be a URL, a list of URLs or a brace range, got {urls!r}")
    words = urls.split()
    if len(words) > 1:
        return expand_urls(words)
    match = re.search(r"\{(\d+)\.\.(\d+)\}", urls)
    if not match:
        return _globbed(urls) if re.search(r"[*\[]", urls) else [urls]
    first, last = match.group(1), match.group(2)
    width = len(first) if first.startswith("0") or len(first) == len(last) else 0
    return [u for i in range(int(first), int(last) + 1)
            for u in expand_urls(urls[:match.start()] + f"{i:0{width}d}" + urls[match.end():])]


def _globbed(pattern):
    """The files matching the glob ``pattern`` (a path or URL), sorted; none is one error line."""
    if is_url(pattern):
        import fsspec
        try:
            fs, root = fsspec.core.url_to_fs(pattern, **storage_options(pattern))
            protocol = pattern.split("://", 1)[0]
            found = sorted(f"{protocol}://{name}" if "://" not in name else name for name in fs.glob(root))
        except Exception as exc:  # noqa: BLE001 - a listing the store cannot give is one line below
            raise MissingFileError(f"shards {safe_url(pattern)}: cannot list them ({type(exc).__name__})") from None
    else:
        found = sorted(glob.glob(pattern))
    if not found:
        raise MissingFileError(f"shards {safe_url(pattern)}: the pattern matches no file")
    return found


def _decode(ext, data, shard, member):
    """``(field, value)`` of a member with extension ``ext``."""
    try:
        if ext == "json":
            return None, json.loads(data.decode("utf-8"))
        if ext == "txt":
            return "txt", data.decode("utf-8")
        if ext.endswith(".npy"):
            return ext[:-4], load_npy(io.BytesIO(data))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ShardFormatError(f"shard {safe_url(shard)}: member {member} is not valid {ext} ({exc})") from None
    return ext, data


def _sample(key, fields):
    sample = {}
    for field, value in fields:
        if field is None:
            if not isinstance(value, dict):
                raise ShardFormatError(f"member {key}.json holds a {type(value).__name__}, not an object")
            sample.update(value)
        else:
            sample[field] = value
    return sample


class _HashingReader:
    """A shard's binary stream whose bytes are hashed (sha256) as they are read."""

    def __init__(self, raw):
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def read(self, n=-1):
        data = self.raw.read(n)
        self.digest.update(data)
        self.size += len(data)
        return data

    def drain(self):
        """Read (and hash) what is left after the tar's end."""
        while self.read(1 << 20):
            pass


def read_shard(url, with_keys=False, samples=None, sha256=None):
    """Yield the samples of the shard ``url`` (path or URL) in order, streaming (see the module docstring).

    ``with_keys`` adds ``"__key__"`` (the member prefix) and ``"__shard__"``. ``samples`` and ``sha256``
    (from the index, when known) are checked once the shard is read to its end: a shard that holds another
    number of samples (cut short at a member boundary) or other bytes is a :class:`ShardFormatError` naming
    it, raised before the reader moves on, so an epoch is never silently short.
    """
    stream = _HashingReader(open_file(url, "rb", what="shard"))
    count = 0
    try:
        for sample in _samples(stream, url, with_keys):
            count += 1
            yield sample
        stream.drain()
    finally:
        stream.raw.close()
    if samples is not None and count != samples:
        raise ShardFormatError(f"shard {safe_url(url)}: holds {count} samples, its index lists {samples} (cut short "
                               f"or changed since it was written)")
    if sha256 is not None and stream.digest.hexdigest() != sha256:
        raise ShardFormatError(f"shard {safe_url(url)}: its sha256 is {stream.digest.hexdigest()}, its index "
                               f"records {sha256} (damaged or changed since it was written)")


def _samples(stream, url, with_keys):
    """The samples of the tar ``stream`` of the shard ``url``, in order."""
    member = None
    try:
        tar = tarfile.open(fileobj=stream, mode="r|", bufsize=1 << 20)     # few, large reads of the stream
    except tarfile.ReadError as exc:
        raise ShardFormatError(f"shard {safe_url(url)}: is not a tar file (or is cut short before its "
                               f"first member: {exc})") from None
    key, fields = None, []
    while True:
        try:
            info = tar.next()
        except tarfile.ReadError as exc:
            where = (f"is cut short after member {member}" if member else
                     "is not a tar file (or is cut short before its first member)")
            raise ShardFormatError(f"shard {safe_url(url)}: {where} ({exc})") from None
        if info is None:
            break
        member = info.name
        if not info.isfile():
            continue
        match = _MEMBER.match(os.path.basename(info.name))
        if match is None:
            raise ShardFormatError(f"shard {safe_url(url)}: member {info.name} is not named <key>.<ext>")
        try:
            data = tar.extractfile(info).read()
        except (tarfile.ReadError, EOFError, OSError) as exc:
            if isinstance(exc, UserError):
                raise
            raise ShardFormatError(f"shard {safe_url(url)}: member {info.name} is cut short "
                                   f"(the shard is truncated)") from None
        if len(data) != info.size:
            raise ShardFormatError(f"shard {safe_url(url)}: member {info.name} is cut short "
                                   f"({len(data)} of {info.size} bytes; the shard is truncated)")
        if match.group("key") != key and fields:
            yield _finish(key, fields, url, with_keys)
            fields = []
        key = match.group("key")
        fields.append(_decode(match.group("ext"), data, url, info.name))
    if fields:
        yield _finish(key, fields, url, with_keys)


def _finish(key, fields, url, with_keys):
    try:
        sample = _sample(key, fields)
    except ShardFormatError as exc:
        raise ShardFormatError(f"shard {safe_url(url)}: {exc}") from None
    if with_keys:
        sample["__key__"], sample["__shard__"] = key, url
    return sample


class _End:
    """The item after a shard's last sample in a reader's stream: the shard's sample count."""
    __slots__ = ("count",)

    def __init__(self, count):
        self.count = count


@DATASETS.register()
class ShardDataset(IterableDataset):
    """An epoch of samples read from tar shards (see the module docstring), split over ranks and workers.

    Args:
        urls: shard URLs or paths (a list, a brace range ``train-{000000..000009}.tar``);
            or leave it out and give ``index``.
        index: the ``index.json`` :func:`write_shards` wrote (a path or URL); its
            shards are named relative to it, and its sample counts give ``len()``.
        num_workers: reader threads (0: read in the calling thread).
        shuffle_buffer: samples held to shuffle from (0: shard order, then file order).
        shuffle_shards: draw each epoch's shard order from ``(seed, epoch)``.
        seed: the seed of both shuffles.
        rank, world_size: this process's part (default: the distributed job's, else 0 of 1).
        with_keys: add ``"__key__"`` and ``"__shard__"`` to each sample.
        length: samples per epoch of this rank, when known without an index.
        prefetch: samples each reader thread holds ahead.
    """

    def __init__(self, urls=None, index: str = None, num_workers: int = 0, shuffle_buffer: int = 0,
                 shuffle_shards: bool = True, seed: int = 0, rank: int = None, world_size: int = None,
                 with_keys: bool = False, length: int = None, prefetch: int = 64):
        if (urls is None) == (index is None):
            raise ValueError("ShardDataset: give either urls (shard URLs) or index (the index.json of write_shards)")
        if num_workers < 0 or shuffle_buffer < 0 or prefetch < 1:
            raise ValueError("ShardDataset: num_workers and shuffle_buffer must be >= 0 and prefetch >= 1")
        self.counts, self.sha256s = {}, {}
        if index is not None:
            base = index.rsplit("/", 1)[0] if "/" in index else "."
            try:
                listing = json.loads(read_bytes(index, what="shard index").decode("utf-8"))
                shards = listing["shards"]
                self.urls = [_relative(base, s["url"]) for s in shards]
                self.counts = {u: int(s["samples"]) for u, s in zip(self.urls, shards)}
                self.sha256s = {u: str(s["sha256"]) for u, s in zip(self.urls, shards) if s.get("sha256")}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ShardFormatError(f"shard index {safe_url(index)} is not an index of write_shards ({exc})") \
                    from None
            if not self.urls:
                raise ShardFormatError(f"shard index {safe_url(index)} lists no shards")
        else:
            self.urls = expand_urls(urls)
            if not self.urls:
                raise ShardFormatError("ShardDataset: urls names no shards")
        if rank is None or world_size is None:
            from .. import distributed
            rank, world_size = distributed.get_rank(), distributed.get_world_size()
        if not 0 <= rank < world_size:
            raise ValueError(f"ShardDataset: rank must be in [0, world_size), got rank {rank} of {world_size}")
        self.rank, self.world_size = int(rank), int(world_size)
        self.num_workers, self.shuffle_buffer, self.shuffle_shards = num_workers, shuffle_buffer, shuffle_shards
        self.seed, self.with_keys, self.prefetch, self._length = int(seed), with_keys, prefetch, length
        self.epoch, self._done, self._resume, self._counted = 0, set(), None, {}

    # -- the parts of an epoch

    def set_epoch(self, epoch):
        """The DataLoader calls this before each pass: the shard order and the shuffle follow the epoch."""
        if int(epoch) != self.epoch:
            self.epoch, self._done = int(epoch), set()

    def rank_shards(self, epoch=None):
        """The shards this rank reads in ``epoch`` (default the current one), in reading order."""
        mine = [u for i, u in enumerate(self.urls) if i % self.world_size == self.rank]
        if self.shuffle_shards:
            order = numpy.random.default_rng((self.seed, self.epoch if epoch is None else epoch)).permutation(len(mine))
            mine = [mine[i] for i in order]
        return mine

    def worker_shards(self, worker, num_workers, epoch=None):
        """The shards that worker ``worker`` of ``num_workers`` reads: every ``num_workers``-th of the rank's."""
        return self.rank_shards(epoch)[worker::num_workers]

    def iter_worker(self, worker, num_workers):
        """The samples of worker ``worker`` of ``num_workers`` (no shuffle buffer): for a loader with its own
        workers, e.g. ``torch.utils.data.get_worker_info()`` inside a torch ``IterableDataset``."""
        for url in self.worker_shards(worker, num_workers):
            yield from self._read(url)

    def __len__(self):
        """Samples this rank reads per epoch (from the index, or ``length``)."""
        if self._length is not None:
            return self._length
        if not self.counts:
            raise TypeError("len() of a ShardDataset needs its index (index=…) or length=…")
        return sum(self.counts[u] for i, u in enumerate(self.urls) if i % self.world_size == self.rank)

    def rank_lengths(self):
        """Samples per epoch of every rank, ``[n_0, …, n_{w-1}]`` (needs the index)."""
        if not self.counts:
            raise TypeError("ShardDataset.rank_lengths needs its index (index=…)")
        return [sum(self.counts[u] for i, u in enumerate(self.urls) if i % self.world_size == r)
                for r in range(self.world_size)]

    # -- resuming

    def state_dict(self):
        """``{"epoch": e, "done": [urls]}``: the shards of epoch ``e`` whose every sample has been yielded."""
        return {"epoch": self.epoch, "done": sorted(self._done)}

    def set_state_dict(self, state):
        """Resume epoch ``state["epoch"]`` at a shard boundary: its next pass skips the shards in ``done``."""
        self.epoch, self._done = int(state["epoch"]), set(state["done"])
        self._resume = set(self._done)

    # -- the stream

    def __iter__(self):
        skip, self._resume = self._resume or set(), None
        self._done, self._counted = set(skip), {}
        shards = [u for u in self.rank_shards() if u not in skip]
        workers = min(self.num_workers, len(shards))
        streams = ([self._tagged(shards)] if workers == 0 else
                   [self._threaded(shards[w::workers]) for w in range(workers)])
        samples = self._merged(streams)
        if self.shuffle_buffer:
            samples = self._shuffled(samples)
        seen = {}
        for url, sample in samples:
            if isinstance(sample, _End):        # ``url`` has been read to its end: ``sample.count`` samples
                self._counted[url] = sample.count
            else:
                seen[url] = seen.get(url, 0) + 1
            if url in self._counted and seen.get(url, 0) >= self._counted[url]:
                self._done.add(url)
            if not isinstance(sample, _End):
                yield sample

    def _tagged(self, shards):
        """``(url, sample)`` for each sample of ``shards`` in order, and ``(url, _End(n))`` after each shard."""
        for url in shards:
            n = 0
            for sample in self._read(url):
                n += 1
                yield url, sample
            yield url, _End(n)

    def _read(self, url):
        """The samples of the shard ``url``, checked against the index (sample count, sha256) when there is one."""
        return read_shard(url, self.with_keys, self.counts.get(url), self.sha256s.get(url))

    def _threaded(self, shards):
        """:meth:`_tagged` read ahead by a thread into a bounded queue; the thread's errors are raised here."""
        q, stop = queue.Queue(self.prefetch), threading.Event()

        def read():
            try:
                for item in self._tagged(shards):
                    while not stop.is_set():
                        try:
                            q.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(None)
            except BaseException as exc:       # handed to the consumer, raised there with its own message
                q.put(exc)

        thread = threading.Thread(target=read, name="oar-shard-reader", daemon=True)
        thread.start()
        try:
            while True:
                item = q.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            thread.join(timeout=5)

    @staticmethod
    def _merged(streams):
        """One item from each stream in turn (a finished stream drops out), as PyTorch merges its workers.

        Shard end markers do not count as a turn, so the order of samples depends only on the shards."""
        streams = list(streams)
        while streams:
            for stream in list(streams):
                while True:
                    item = next(stream, None)
                    if item is None:
                        streams.remove(stream)
                        break
                    yield item
                    if not isinstance(item[1], _End):
                        break

    def _shuffled(self, items):
        rng = numpy.random.default_rng((self.seed, self.epoch, self.rank, 1))
        buffer = []
        for item in items:
            if isinstance(item[1], _End):
                yield item
                continue
            if len(buffer) < self.shuffle_buffer:
                buffer.append(item)
                continue
            i = int(rng.integers(len(buffer)))
            buffer[i], item = item, buffer[i]
            yield item
        rng.shuffle(buffer)
        yield from buffer


def _relative(base, name):
    if is_url(name) or os.path.isabs(name):
        return name
    return f"{base}/{name}" if is_url(base) else os.path.join(base, name)

