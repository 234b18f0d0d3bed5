"""Embedding-table lookups served from kvcg — a notebook-style walk-through.

A recommender keeps one float32 vector per item id and looks up a batch of
ids per request. Two ways to serve that table from the store:

  1. general layout: key = item id (8 bytes), value = the vector packed as
     bytes (dim * 4 bytes). One get_many per batch returns the vectors.
  2. fixed8 layout: key = item id, value = row index into a NumPy matrix
     kept by the caller. get_many on a uint64 array returns the rows in one
     columnar batch (no Python object per id), then one fancy-index gather.

Run (CPU or GPU; backend "auto" picks the GPU when there is one):
    pip install .  &&  python examples/embedding_lookup.py
or, with the CMake-built module (make build, or target _kvcg):
    PYTHONPATH=build/python:python .venv/bin/python examples/embedding_lookup.py --backend cpu
"""

import argparse
import os
import sys
import time

import numpy as np

try:
    import kvcg
except ImportError:  # not pip-installed: use the repository's build
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:0] = [os.path.join(root, os.environ.get("KVCG_BUILD_DIR", "build"), "python"),
                    os.path.join(root, "python")]
    import kvcg


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="auto", help="auto | gpu | cpu")
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--batches", type=int, default=50)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    # Item ids are sparse 64-bit numbers in real systems, not 0..n-1.
    ids = rng.choice(2**40, size=args.items, replace=False).astype(np.uint64)
    table = rng.standard_normal((args.items, args.dim), dtype=np.float32)
    # Requests: a skewed (Zipf-like) draw of items, as recommender traffic is.
    ranks = np.minimum(rng.zipf(1.2, size=(args.batches, args.batch)) - 1, args.items - 1)
    requests = ids[ranks]

    # --- 1. vectors as bytes in the general layout
    with kvcg.open(backend=args.backend, layout="general") as store:
        print("store:", store.info()["backend"], "-", store.info()["device"])
        id_bytes = [i.tobytes() for i in ids]  # 8-byte keys, the same encoding as fixed8
        store.put_many(id_bytes, [row.tobytes() for row in table])

        batch_keys = [[k.tobytes() for k in req] for req in requests]  # built before timing
        t = time.perf_counter()
        for keys in batch_keys:
            vals = store.get_many(keys)
            emb = np.frombuffer(b"".join(vals), dtype=np.float32).reshape(len(keys), args.dim)
        dt = time.perf_counter() - t
        assert np.array_equal(emb, table[ranks[-1]])
        print(f"general layout, vectors as bytes: {args.batches * args.batch / dt / 1e6:.2f} M lookups/s"
              f" ({args.batch}-id batches, dim {args.dim})")

    # --- 2. id -> row index in the fixed8 layout, vectors in a NumPy matrix
    with kvcg.open(backend=args.backend, layout="fixed8") as index:
        index.put_many(ids, np.arange(args.items, dtype=np.uint64))
        t = time.perf_counter()
        for req in requests:
            rows, found = index.get_many(req)
            emb = table[rows]  # missing ids would need a default row: found says which
        dt = time.perf_counter() - t
        assert found.all() and np.array_equal(emb, table[ranks[-1]])
        print(f"fixed8 layout, id -> row + gather: {args.batches * args.batch / dt / 1e6:.2f} M lookups/s")


if __name__ == "__main__":
    main()
