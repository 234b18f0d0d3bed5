"""pytest suite of the kvcg Python package (python/kvcg, module _kvcg).

Registered in CTest as python_pytest (label `python`), run on the CMake-built
module with PYTHONPATH = <build>/python : <source>/python. The backend comes
from KVCG_TEST_BACKEND ("cpu" in CI, so the suite means the same on machines
with and without a GPU); run it as `KVCG_TEST_BACKEND=auto` on the GPU
machine to cover the GPU backend with the same assertions.
"""

import os
import threading

import numpy as np
import pytest

import kvcg

BACKEND = os.environ.get("KVCG_TEST_BACKEND", "cpu")


@pytest.fixture
def store():
    with kvcg.open(backend=BACKEND) as s:
        yield s


@pytest.fixture
def fixed8():
    with kvcg.open(backend=BACKEND, layout="fixed8") as s:
        yield s


# --- opening


def test_open_info_and_close():
    s = kvcg.open(backend=BACKEND)
    info = s.info()
    assert set(info) == {"backend", "layout", "device", "detail", "mode"}
    assert info["layout"] == "general" and info["mode"] == "canonical"
    if BACKEND == "cpu":
        assert info["backend"] == "cpu"
    s.close()
    s.close()  # idempotent
    assert s.closed
    with pytest.raises(kvcg.Error, match="closed"):
        s.get(b"k")


def test_open_bad_arguments():
    with pytest.raises(ValueError, match="backend"):
        kvcg.open(backend="tpu")
    with pytest.raises(ValueError, match="layout"):
        kvcg.open(backend=BACKEND, layout="fixed16")
    with pytest.raises(ValueError, match="mode"):
        kvcg.open(backend=BACKEND, mode="fast")
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_keyz'"):
        kvcg.open(backend=BACKEND, max_keyz=3)
    with pytest.raises(ValueError, match=">= 0"):
        kvcg.open(backend=BACKEND, max_keys=-1)
    # A contradiction found by Store::Open: kvcg.Error with the Status text.
    with pytest.raises(kvcg.Error, match="invalid_argument: max_key_bytes must be > 0") as e:
        kvcg.open(backend=BACKEND, max_key_bytes=0)
    assert e.value.code == "invalid_argument"
    with pytest.raises(ValueError, match=">= 0"):
        kvcg.open(backend=BACKEND, gpu_idle_spin_us=-1)


def test_open_gpu_settings_are_accepted_on_any_backend():
    # GPU settings are part of every Config (the CPU backend ignores them).
    with kvcg.open(backend=BACKEND, gpu_idle_spin_us=0, gpu_batch_timeout_us=5) as s:
        s.put(b"k", b"v")
        assert s.get(b"k") == b"v"


def test_gpu_backend_unavailable_is_an_error():
    with kvcg.open(backend="auto") as s:
        if s.info()["backend"] == "gpu":
            pytest.skip("a GPU is present")
    with pytest.raises(kvcg.Error) as e:
        kvcg.open(backend="gpu")
    assert e.value.code == "unavailable"


# --- single operations and the dict protocol


def test_single_ops(store):
    assert store.get(b"user:1") is None
    assert store.put(b"user:1", b"alice") is None
    assert store.get(b"user:1") == b"alice"
    assert store.put(b"user:1", b"bob") == b"alice"
    assert store.get("user:1") == b"bob"  # str keys are UTF-8
    assert store.delete(b"user:1") == b"bob"
    assert store.delete(b"user:1") is None
    assert store.get(b"user:1", b"dflt") == b"dflt"
    # Binary-safe, empty values are values.
    store.put(b"\x00\xff", b"")
    assert store.get(b"\x00\xff") == b""
    with pytest.raises(TypeError, match="key must be bytes or str"):
        store.get(17)


def test_dict_protocol(store):
    store[b"a"] = b"1"
    store["b"] = bytearray(b"2")
    assert store[b"a"] == b"1" and store[b"b"] == b"2"
    assert b"a" in store and b"zz" not in store
    assert len(store) == 2
    with pytest.raises(KeyError):
        store[b"zz"]
    del store[b"a"]
    with pytest.raises(KeyError):
        del store[b"a"]
    assert len(store) == 1
    with pytest.raises(TypeError):
        iter(store)
    store.clear()
    assert len(store) == 0


def test_huge_key_single_op(store):
    big = b"k" * (64 * 1024 + 1)  # > the default max_key_bytes
    with pytest.raises(kvcg.Error, match="key_too_large") as e:
        store.put(big, b"v")
    assert e.value.code == "key_too_large"
    assert "op 0" in str(e.value)
    assert len(store) == 0  # nothing changed


# --- bytes batches


def test_bytes_batches(store):
    keys = [b"k%d" % i for i in range(1000)]
    vals = [b"v%d" % i * (i % 7) for i in range(1000)]
    assert store.put_many(keys, vals) == [None] * 1000
    assert store.get_many(keys) == vals
    assert store.get_many([b"k1", b"missing", "k2"]) == [vals[1], None, vals[2]]
    assert store.put_many(keys[:2], [b"x", b"y"]) == vals[:2]
    assert store.delete_many(keys[:3]) == [b"x", b"y", vals[2]]
    assert store.get_many(keys[:4]) == [None, None, None, vals[3]]
    assert store.get_many([]) == []
    # Same-key order inside a batch.
    assert store.put_many([b"s", b"s", b"s"], [b"1", b"2", b"3"]) == [None, b"1", b"2"]
    assert store[b"s"] == b"3"


def test_bytes_batches_bad_input(store):
    with pytest.raises(ValueError, match="3 keys but 2 values"):
        store.put_many([b"a", b"b", b"c"], [b"1", b"2"])
    with pytest.raises(TypeError, match="bytes or str"):
        store.get_many([b"a", 5])
    with pytest.raises(TypeError, match="sequence of bytes"):
        store.get_many(b"abc")
    with pytest.raises(TypeError, match="layout='fixed8'"):
        store.get_many(np.arange(3, dtype=np.uint64))


def test_bytes_batch_per_op_errors(store):
    big = b"k" * (64 * 1024 + 1)
    keys = [b"a", big, b"c"]
    with pytest.raises(kvcg.BatchError) as e:
        store.put_many(keys, [b"1", b"2", b"3"])
    err = e.value
    assert isinstance(err, kvcg.Error)
    assert err.index == 1 and err.code == "key_too_large"
    assert list(err.codes) == [kvcg.Code.NOT_FOUND, kvcg.Code.KEY_TOO_LARGE, kvcg.Code.NOT_FOUND]
    assert err.results == [None, None, None]
    # The other ops took effect (a batch is elementwise).
    assert store.get_many([b"a", b"c"]) == [b"1", b"3"]
    out, codes = store.get_many(keys, return_codes=True)
    assert out == [b"1", None, b"3"]
    assert codes.dtype == np.uint8 and list(codes) == [0, int(kvcg.Code.KEY_TOO_LARGE), 0]


# --- NumPy, layout fixed8


def test_numpy_fixed8_round_trip(fixed8):
    n = 100_000
    rng = np.random.default_rng(1)
    keys = rng.permutation(np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    vals = rng.integers(0, 2**63, n, dtype=np.uint64)
    prev, found = fixed8.put_many(keys, vals)
    assert prev.dtype == np.uint64 and found.dtype == np.bool_
    assert not found.any() and not prev.any()
    assert len(fixed8) == n
    got, found = fixed8.get_many(keys)
    assert found.all()
    np.testing.assert_array_equal(got, vals)
    # Overwrite half: previous values come back.
    prev, found = fixed8.put_many(keys[::2].copy(), vals[::2] + np.uint64(1))
    assert found.all()
    np.testing.assert_array_equal(prev, vals[::2])
    # Missing keys: found False, value 0.
    got, found = fixed8.get_many(np.array([0, 3], dtype=np.uint64))
    assert not found.any() and not got.any()
    prev, found = fixed8.delete_many(keys[:10])
    assert found.all()
    assert len(fixed8) == n - 10
    got, found = fixed8.get_many(keys[:11])
    assert list(found) == [False] * 10 + [True]
    # Empty arrays work.
    got, found = fixed8.get_many(np.empty(0, dtype=np.uint64))
    assert got.shape == (0,)
    # The NumPy and bytes paths agree on the encoding (native uint64 bytes).
    assert fixed8.get(keys[10].tobytes()) == (vals[10] + np.uint64(1)).tobytes()


def test_numpy_bad_input(fixed8):
    k = np.arange(10, dtype=np.uint64)
    with pytest.raises(TypeError, match="uint64 array, not dtype int64"):
        fixed8.get_many(np.arange(10, dtype=np.int64))
    with pytest.raises(TypeError, match="uint64"):
        fixed8.put_many(k, np.arange(10, dtype=np.float64))
    with pytest.raises(TypeError, match="uint64"):
        fixed8.get_many(np.arange(10, dtype=np.uint32))
    with pytest.raises(ValueError, match="C-contiguous"):
        fixed8.get_many(np.arange(20, dtype=np.uint64)[::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        fixed8.put_many(k, np.arange(20, dtype=np.uint64)[::2])
    with pytest.raises(ValueError, match="1-D"):
        fixed8.get_many(k.reshape(2, 5))
    with pytest.raises(ValueError, match="10 keys but 9 values"):
        fixed8.put_many(k, k[:9])
    with pytest.raises(TypeError, match="both be NumPy arrays"):
        fixed8.put_many(k, list(range(10)))
    assert len(fixed8) == 0  # nothing ran


def test_fixed8_wrong_width_single_op(fixed8):
    with pytest.raises(kvcg.Error) as e:
        fixed8.put(b"short", b"12345678")
    assert e.value.code == "invalid_argument"


def test_numpy_capacity_errors_as_codes():
    with kvcg.open(backend=BACKEND, layout="fixed8", max_keys=100) as s:
        k = np.arange(150, dtype=np.uint64)
        with pytest.raises(kvcg.BatchError) as e:
            s.put_many(k, k)
        assert e.value.code == "capacity_exhausted"
        assert (e.value.codes == kvcg.Code.CAPACITY_EXHAUSTED).sum() == 50
        assert len(s) == 100
        v, f, codes = s.get_many(k, return_codes=True)
        assert f.sum() == 100 and (codes <= kvcg.Code.NOT_FOUND).all()


# --- threads


def test_concurrent_batches_from_threads():
    """4 threads submit batches at once (the GIL is released while each
    runs); every thread checks its own results."""
    with kvcg.open(backend=BACKEND, layout="fixed8") as s8, kvcg.open(backend=BACKEND) as sb:
        errors = []
        barrier = threading.Barrier(4)

        def worker(t):
            try:
                barrier.wait()
                base = np.uint64(t << 40)
                for r in range(20):
                    k = base + np.arange(r * 5000, (r + 1) * 5000, dtype=np.uint64)
                    prev, found = s8.put_many(k, k * np.uint64(3))
                    assert not found.any()
                    v, found = s8.get_many(k)
                    assert found.all() and (v == k * np.uint64(3)).all()
                    keys = [b"t%d:%d" % (t, i) for i in range(r * 200, (r + 1) * 200)]
                    assert sb.put_many(keys, keys) == [None] * 200
                    assert sb.get_many(keys) == keys
            except Exception as e:  # reported on the main thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        assert len(s8) == 4 * 20 * 5000
        assert len(sb) == 4 * 20 * 200


# --- engine (mode kvcg)


def test_kvcg_mode_stats_and_switch():
    with kvcg.open(backend=BACKEND, mode="kvcg", router_switch_period_ms=0,
                   router_sample_rate=1.0, router_min_samples=1) as s:
        assert s.info()["mode"] == "kvcg"
        keys = [b"hot%d" % (i % 10) for i in range(2000)]
        s.put_many(keys[:10], keys[:10])
        for _ in range(5):
            assert s.get_many(keys) == keys
        st = s.engine_stats()
        assert st["mode"] == "kvcg"
        assert st["hot_ops"] + st["cold_ops"] >= 10_010
        assert st["samples"] > 0
        rec = s.switch_model()
        assert rec["ok"] and rec["version"] >= 1
        after = s.engine_stats()
        assert after["switches"] == st["switches"] + 1
        assert after["model_version"] == rec["version"]
        assert s.get_many(keys[:10]) == keys[:10]  # nothing lost over the switch
        s.flush()


def test_router_model_choice():
    keys = [b"hot%d" % (i % 4) for i in range(400)] + [b"cold%d" % i for i in range(400)]
    for name, described in [("heavy-hitters", "heavy-hitters(4 keys)"),
                            ("histogram", "histogram(10000 bins")]:
        with kvcg.open(backend=BACKEND, mode="kvcg", router_model=name, router_switch_period_ms=0,
                       router_sample_rate=1.0, router_threshold=0.05) as s:
            s.get_many(keys)
            assert s.engine_stats()["router_model"] == name
            rec = s.switch_model()
            assert described in rec["model"], rec["model"]
            st = s.engine_stats()
            assert st["model_hot_keys"] == (4 if name == "heavy-hitters" else -1)
    with pytest.raises(ValueError, match="heavy-hitters"):
        kvcg.open(backend=BACKEND, mode="kvcg", router_model="bins")
    # The 4 hot keys had half the samples: under a floor of 60 % the
    # shadow model routes nothing and says why.
    with kvcg.open(backend=BACKEND, mode="kvcg", router_switch_period_ms=0,
                   router_sample_rate=1.0, router_min_hot_share=0.6) as s:
        s.get_many(keys)
        rec = s.switch_model()
        assert rec["model"].startswith("all-cold (hot share 50.00% < router.min_hot_share 60.00%)"), \
            rec["model"]
        assert s.engine_stats()["model_hot_keys"] == 0


def test_engine_calls_need_engine_mode(store):
    with pytest.raises(kvcg.Error, match="needs mode 'kvcg'"):
        store.engine_stats()
    with pytest.raises(kvcg.Error, match="needs mode"):
        store.switch_model()
