"""Cache mode (docs/EVICTION.md): maxmemory + maxmemory-policy from the
command line and CONFIG SET/GET, eviction keeping used memory at or under
maxmemory under sustained writes, INFO's evicted_keys and maxmemory_policy,
noeviction's and a keyless volatile policy's OOM error, and OBJECT
FREQ/IDLETIME with Redis's replies and errors under each kind of policy."""
import time

import pytest
import redis

OOM = "command not allowed when used memory > 'maxmemory'."  # redis-py strips the "OOM " code
NOT_LFU = ("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when "
           "switching between policies at runtime LRU and LFU data will take some time to adjust.")
IS_LFU = ("An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between "
          "policies at runtime LRU and LFU data will take some time to adjust.")
POLICIES = ["noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu",
            "volatile-random", "volatile-ttl"]


def error_text(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def is_oom(reply):
    return isinstance(reply, redis.exceptions.OutOfMemoryError) and str(reply) == OOM


def need_set_ex(c):
    """Volatile keys need SET ... EX, which lands with the expiry commands (issue 13)."""
    try:
        c.set("__probe_ex", "1", ex=100)
        c.delete("__probe_ex")
    except redis.ResponseError as e:
        pytest.skip(f"this server has no SET EX yet: {e}")


def fill(c, n, prefix="k", value=b"v" * 100, ex=None):
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}{i}", value, ex=ex)
    return p.execute(raise_on_error=False)


def test_policy_config_get_set_and_info(start_server):
    c = start_server().client(decode_responses=True)
    assert c.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    assert c.info("memory")["maxmemory_policy"] == "noeviction"
    assert c.info("stats")["evicted_keys"] == 0
    for p in POLICIES:
        assert c.config_set("maxmemory-policy", p.upper() if p.startswith("all") else p)
        assert c.config_get("maxmemory-policy") == {"maxmemory-policy": p}
        assert c.info("memory")["maxmemory_policy"] == p
    assert error_text(c.config_set, "maxmemory-policy", "lru") == (
        "CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the "
        "following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, "
        "allkeys-random, noeviction")
    assert c.config_get("maxmemory-policy") == {"maxmemory-policy": "volatile-ttl"}  # unchanged
    assert c.config_set("maxmemory", "1mb")
    assert c.config_get("maxmemory") == {"maxmemory": str(1 << 20)}
    assert c.info("memory")["maxmemory"] == 1 << 20


@pytest.mark.parametrize("policy", [p for p in POLICIES if p != "noeviction"])
def test_sustained_writes_stay_under_maxmemory(start_server, policy):
    srv = start_server("--maxmemory", "256kb", "--maxmemory-policy", policy)
    c = srv.client()
    ex = 3600 if policy.startswith("volatile") else None
    if ex:
        need_set_ex(c)
    for round in range(4):
        replies = fill(c, 1000, prefix=f"r{round}:", ex=ex)
        assert all(r is True for r in replies), [r for r in replies if r is not True][:3]
        mem = c.info("memory")
        assert mem["used_memory"] <= 256 * 1024
    assert c.info("memory")["maxmemory_policy"] == policy
    evicted = c.info("stats")["evicted_keys"]
    keys = c.dbsize()
    assert evicted > 0 and keys + evicted == 4000
    assert c.get("r3:999") == b"v" * 100  # the last write is there


def test_noeviction_refuses_writes_over_the_limit(start_server):
    c = start_server("--maxmemory", "64kb").client()
    replies = fill(c, 1000)
    errors = [r for r in replies if isinstance(r, redis.ResponseError)]
    assert errors and all(is_oom(e) for e in errors)
    assert c.dbsize() == len(replies) - len(errors)
    assert c.info("stats")["evicted_keys"] == 0
    assert c.get("k0") == b"v" * 100  # what was stored stays


def test_volatile_policy_without_volatile_keys_is_oom(start_server):
    c = start_server("--maxmemory", "64kb", "--maxmemory-policy", "volatile-lru").client()
    persistent = fill(c, 1000)
    stored = sum(1 for r in persistent if r is True)
    assert stored < 1000 and all(r is True or is_oom(r) for r in persistent)
    assert c.info("stats")["evicted_keys"] == 0
    # Volatile keys evict each other; the persistent ones stay.
    c.flushall()
    need_set_ex(c)
    fill(c, 200, prefix="p")
    volatile = fill(c, 1000, prefix="v", ex=100)
    assert all(r is True for r in volatile)
    assert all(c.exists(f"p{i}") for i in range(200))
    assert c.info("stats")["evicted_keys"] > 0


def test_config_set_lower_maxmemory_evicts_at_once(start_server):
    c = start_server().client()
    fill(c, 2000)
    assert c.dbsize() == 2000
    assert c.config_set("maxmemory-policy", "allkeys-random")
    assert c.config_set("maxmemory", "100kb")
    assert c.info("memory")["used_memory"] <= 100 * 1024
    assert c.dbsize() < 2000
    assert c.info("stats")["evicted_keys"] == 2000 - c.dbsize()
    # Back to noeviction at that limit: a new key is refused.
    assert c.config_set("maxmemory-policy", "noeviction")
    with pytest.raises(redis.ResponseError, match="used memory > 'maxmemory'"):
        c.set("new", "x" * 1000)
    assert c.config_set("maxmemory", "0")
    assert c.set("new", "x" * 1000)


def test_object_freq_and_idletime(start_server):
    c = start_server().client(decode_responses=True)
    c.set("k", "v")
    # noeviction: the LRU clock is kept (IDLETIME), not the LFU counter.
    assert error_text(c.execute_command, "OBJECT", "FREQ", "k") == NOT_LFU
    assert c.execute_command("OBJECT", "FREQ", "nokey") is None  # looked up first
    time.sleep(1.2)
    assert c.execute_command("OBJECT", "IDLETIME", "k") >= 1
    assert c.execute_command("OBJECT", "IDLETIME", "k") >= 1  # OBJECT does not touch the key
    c.get("k")
    assert c.execute_command("OBJECT", "IDLETIME", "k") == 0
    # In a pipeline, OBJECT sees the commands before it.
    p = c.pipeline(transaction=False)
    p.set("fresh", "1").execute_command("OBJECT", "IDLETIME", "fresh")
    assert p.execute() == [True, 0]
    # LFU: FREQ answers the log counter (5 for a new key), IDLETIME errs.
    assert c.config_set("maxmemory-policy", "allkeys-lfu")
    c.set("f", "v")
    assert c.execute_command("OBJECT", "FREQ", "f") == 5
    for _ in range(200):
        c.get("f")
    assert 5 < c.execute_command("OBJECT", "FREQ", "f") < 20
    assert error_text(c.execute_command, "OBJECT", "IDLETIME", "f") == IS_LFU
    assert c.execute_command("OBJECT", "IDLETIME", "nokey") is None
    assert c.config_set("maxmemory-policy", "volatile-lfu")
    assert isinstance(c.execute_command("OBJECT", "FREQ", "f"), int)


def test_lfu_keeps_hot_keys_under_a_scan(start_server):
    c = start_server("--maxmemory", "256kb", "--maxmemory-policy", "allkeys-lfu").client()
    fill(c, 100, prefix="hot")
    p = c.pipeline(transaction=False)
    for _ in range(30):
        for i in range(100):
            p.get(f"hot{i}")
    p.execute()
    fill(c, 5000, prefix="scan")  # far more than fits
    assert c.info("stats")["evicted_keys"] > 3000
    assert sum(c.exists(f"hot{i}") for i in range(100)) >= 95
