"""kvcg — an in-process CPU-GPU key-value store, from Python.

    import kvcg, numpy as np
    with kvcg.open(backend="cpu") as store:          # "auto": the GPU if present
        store[b"user:1"] = b"alice"
        store.get_many([b"user:1", b"user:2"])       # [b"alice", None]
    with kvcg.open(layout="fixed8") as ids:          # 8-byte keys and values
        ids.put_many(np.arange(10, dtype=np.uint64), np.arange(10, dtype=np.uint64) * 2)
        values, found = ids.get_many(np.arange(10, dtype=np.uint64))

Design (the why):
 * The native module `_kvcg` (python/src/bindings.cc, pybind11) does one
   C++ call per operation or per batch and releases the GIL while the store
   works, so threads can submit batches concurrently. This layer only
   normalises arguments and turns result codes into Python values or
   exceptions; nothing here runs per element on the NumPy path.
 * Keys and values are bytes. `str` is accepted and encoded as UTF-8 for
   convenience (results are always bytes); bytearray/memoryview are copied
   to bytes first so the store never reads memory another thread may change.
 * Errors: `kvcg.Error` (with `.code`, the kvcg code name) for failed calls
   and for a failed single operation; `ValueError`/`TypeError` for bad
   arguments (unknown option, wrong dtype, non-contiguous array, lengths
   that differ).
 * Per-operation errors in a batch (a key over max_key_bytes, a full store):
   a batch is elementwise — the other operations took effect — so by
   default `*_many` raise `kvcg.BatchError`, which names the first failing
   op and carries `.codes` (uint8 array, `kvcg.Code` values, one per op) and
   `.results` (what the call would have returned), so nothing is lost.
   With `return_codes=True` they never raise for per-op errors and return
   the codes column as an extra last element instead. (Not a
   `store.last_codes` attribute: with several threads on one store, "the
   last batch" is ambiguous.)
"""

from __future__ import annotations

import enum as _enum
from typing import Iterable, List, Optional, Sequence

import numpy as _np

try:  # installed by pip: the module sits inside the package
    from . import _kvcg
except ImportError:  # the CMake build: build/python/_kvcg*.so on PYTHONPATH
    import _kvcg  # type: ignore[no-redef]

__all__ = ["open", "Store", "Error", "BatchError", "Code"]

Error = _kvcg.Error
Error.__module__ = "kvcg"

#: Per-operation result codes (kvcg/status.h), as found in `BatchError.codes`.
Code = _enum.IntEnum("Code", {name.upper(): value for name, value in _kvcg.CODES.items()},
                     module=__name__)
Code.__doc__ = "kvcg::Code: OK and NOT_FOUND are normal outcomes, the rest are errors."

_OK = int(Code.OK)
_NOT_FOUND = int(Code.NOT_FOUND)


class BatchError(Error):
    """Some operations of a batch failed; the others took effect.

    Attributes: ``index`` (first failing op), ``code`` (its code name),
    ``codes`` (uint8 array of `Code` values, one per op) and ``results``
    (what the call returns without errors: failed ops read as absent).
    """

    def __init__(self, op: str, codes: _np.ndarray, results):
        bad = _np.flatnonzero(codes > _NOT_FOUND)
        self.index = int(bad[0])
        self.code = Code(int(codes[self.index])).name.lower()
        self.codes = codes
        self.results = results
        super().__init__(
            f"{op}: {len(bad)} of {len(codes)} ops failed; first: op {self.index}: {self.code}")


def _b(x, what: str = "key") -> bytes:
    """bytes for a key/value: bytes as is, str as UTF-8, buffers copied."""
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"{what} must be bytes or str, not {type(x).__name__}")


def _bl(xs: Iterable, what: str) -> List[bytes]:
    """A list of bytes from an iterable of bytes/str (bytes lists pass through)."""
    if isinstance(xs, (bytes, str)):
        raise TypeError(f"{what} must be a sequence of bytes, not a single {type(xs).__name__}")
    xs = list(xs)
    if all(type(x) is bytes for x in xs):
        return xs
    return [_b(x, what[:-1]) for x in xs]


class Store:
    """An open kvcg store (returned by :func:`kvcg.open`).

    A mapping from bytes to bytes with batch operations, safe to share
    between threads. Use it as a context manager, or call :meth:`close`.
    Single ops: ``get``/``put``/``delete`` and ``store[k]``, ``k in store``,
    ``del store[k]``, ``len(store)``. Batches: ``get_many``/``put_many``/
    ``delete_many`` on lists of bytes or (layout ``fixed8``) NumPy uint64
    arrays.
    """

    __iter__ = None  # no key iteration in the store API; avoid iter() via __getitem__

    def __init__(self, handle):
        self._h = handle
        self._fixed8 = handle.info()["layout"] == "fixed8"

    # --- lifecycle
    def close(self) -> None:
        """Waits for batches in flight on other threads, then frees the store. Idempotent."""
        if not self._h.closed:
            self._h.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._h.closed

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<kvcg.Store closed>"
        i = self.info()
        return f"<kvcg.Store backend={i['backend']} layout={i['layout']} mode={i['mode']}>"

    def info(self) -> dict:
        """What the store runs on: dict with backend, layout, device, detail, mode."""
        return self._h.info()

    # --- single operations
    def get(self, key, default=None) -> Optional[bytes]:
        """The value of `key`, or `default` (None) when absent. kvcg.Error on a failed op."""
        v = self._h.get(_b(key))
        return default if v is None else v

    def put(self, key, value) -> Optional[bytes]:
        """Stores `value` under `key`; returns the previous value or None."""
        return self._h.put(_b(key), _b(value, "value"))

    def delete(self, key) -> Optional[bytes]:
        """Removes `key`; returns the previous value or None when it was absent."""
        return self._h.delete(_b(key))

    def __getitem__(self, key) -> bytes:
        """store[key]: the value; KeyError when absent."""
        v = self._h.get(_b(key))
        if v is None:
            raise KeyError(key)
        return v

    def __setitem__(self, key, value) -> None:
        """store[key] = value."""
        self._h.put(_b(key), _b(value, "value"))

    def __delitem__(self, key) -> None:
        """del store[key]; KeyError when absent (nothing changes then)."""
        if self._h.delete(_b(key)) is None:
            raise KeyError(key)

    def __contains__(self, key) -> bool:
        """key in store (reads the value: one GET)."""
        return self._h.get(_b(key)) is not None

    def __len__(self) -> int:
        """Number of keys (exact when no operation is in flight)."""
        return self._h.size()

    def memory_bytes(self) -> int:
        """Bytes charged against max_memory_bytes (keys, values, overhead)."""
        return self._h.memory_bytes()

    def clear(self) -> None:
        """Removes every key (each removal atomic, the whole not)."""
        self._h.clear()

    # --- batches
    def get_many(self, keys, *, return_codes: bool = False):
        """GET a batch.

        keys: a sequence of bytes -> list of bytes|None; or (layout fixed8) a
        1-D C-contiguous NumPy uint64 array -> (values uint64, found bool),
        values 0 where not found. Per-op errors raise BatchError unless
        `return_codes`, which appends the codes array to the result.
        """
        if isinstance(keys, _np.ndarray):
            self._need_fixed8()
            v, f, c = self._h.get_many_u64(keys)
            return self._done("get_many", c, (v, f), return_codes)
        out, c = self._h.get_many(_bl(keys, "keys"))
        return self._done("get_many", c, out, return_codes)

    def put_many(self, keys, values, *, return_codes: bool = False):
        """PUT a batch; same-key ops take effect in order.

        Lists of bytes -> list of previous bytes|None; NumPy uint64 arrays
        (layout fixed8) -> (previous uint64, found bool). Lengths must match
        (ValueError). Do not write to the arrays while the call runs (it reads
        them with the GIL released). Errors as in :meth:`get_many`.
        """
        if isinstance(keys, _np.ndarray) or isinstance(values, _np.ndarray):
            self._need_fixed8()
            if not (isinstance(keys, _np.ndarray) and isinstance(values, _np.ndarray)):
                raise TypeError("put_many: keys and values must both be NumPy arrays (or both lists)")
            v, f, c = self._h.put_many_u64(keys, values)
            return self._done("put_many", c, (v, f), return_codes)
        out, c = self._h.put_many(_bl(keys, "keys"), _bl(values, "values"))
        return self._done("put_many", c, out, return_codes)

    def delete_many(self, keys, *, return_codes: bool = False):
        """DELETE a batch: previous values, as :meth:`get_many` returns values."""
        if isinstance(keys, _np.ndarray):
            self._need_fixed8()
            v, f, c = self._h.delete_many_u64(keys)
            return self._done("delete_many", c, (v, f), return_codes)
        out, c = self._h.delete_many(_bl(keys, "keys"))
        return self._done("delete_many", c, out, return_codes)

    def _need_fixed8(self) -> None:
        if not self._fixed8:
            raise TypeError("NumPy uint64 batches need layout='fixed8'; "
                            "in the general layout pass lists of bytes")

    @staticmethod
    def _done(op: str, codes: _np.ndarray, result, return_codes: bool):
        if return_codes:
            return (*result, codes) if isinstance(result, tuple) else (result, codes)
        if len(codes) and codes.max() > _NOT_FOUND:
            raise BatchError(op, codes, result)
        return result

    # --- engine (modes kvcg and hot-only)
    def engine_stats(self) -> dict:
        """Engine counters: mode, hot_ops/hits/misses, cold_ops, errors,
        hot_cache_entries, model_version, model, model_hot_keys (-1 when the
        model is not a key set), router_model ("heavy-hitters"/"histogram";
        "" in hot-only), samples, switches, p99s.
        kvcg.Error in mode canonical (no engine)."""
        return self._h.engine_stats()

    def switch_model(self) -> dict:
        """Installs the model trained on recent samples (the paper's §7
        switch, blocking until done); returns the switch record as a dict."""
        return self._h.switch_model()

    def flush(self) -> None:
        """Writes logged hot-cache updates to the canonical store (engine modes)."""
        self._h.flush()


def open(backend: str = "auto", layout: str = "general", mode: str = "canonical",
         **config) -> Store:  # noqa: A001 - kvcg.open, as the C++ Store::Open
    """Opens a new, empty store.

    backend: "auto" (the GPU if a usable one exists, else the CPU), "gpu"
    (kvcg.Error when there is none), "cpu". layout: "general" (binary keys
    and values) or "fixed8" (8-byte keys and values; NumPy uint64 batches).
    mode: "canonical" (the canonical store alone), "kvcg" (hot cache + router
    in front of it; engine_stats/switch_model) or "hot-only" (the hot cache
    for every key). The paper's "gpu-only"/"cpu-only" are accepted too.
    config: kvcg::Config fields by name, e.g. max_key_bytes, max_value_bytes,
    max_keys, max_memory_bytes, expected_keys, cpu_shards, gpu_device,
    gpu_memory_bytes, hot_cache_buckets, router_model ("heavy-hitters" or
    "histogram"), router_hot_keys, router_bins, router_threshold,
    router_sample_rate, router_min_hot_share (a trained model whose hot keys
    had less of the sampled accesses routes nothing), router_switch_period_ms,
    router_min_samples (TypeError for unknown names). kvcg.Error with the
    Status text when the store cannot be opened.
    """
    return Store(_kvcg.open(backend, layout, mode, **config))
