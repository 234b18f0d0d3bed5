"""Bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS) against a real kvcg-server.

Expected values are Redis 7.0's: the examples of the redis.io command pages,
and edge cases whose answers were taken from redis-server 7.0.15 (the same
calls, run once by hand; the tests assert the fixed values)."""
import threading

from conftest import err

ERR_BIT_OFFSET = "bit offset is not an integer or out of range"
ERR_BIT = "bit is not an integer or out of range"
ERR_INT = "value is not an integer or out of range"


# --- SETBIT / GETBIT

def test_setbit_docs_example(b):
    assert b.setbit("mykey", 7, 1) == 0
    assert b.setbit("mykey", 7, 0) == 1
    assert b.get("mykey") == b"\x00"


def test_setbit_creates_and_grows(b):
    assert b.setbit("k", 1, 1) == 0
    assert b.get("k") == b"\x40"
    assert b.setbit("zero", 0, 0) == 0  # a missing key is created even when clearing
    assert b.get("zero") == b"\x00"
    b.set("s", "a")  # 0x61
    assert b.setbit("s", 100, 0) == 0  # clearing past the end still grows the string
    assert b.strlen("s") == 13
    assert b.get("s") == b"a" + b"\x00" * 12
    assert b.setbit("s", 1, 0) == 1  # 0x61 -> 0x21
    assert b.get("s")[:1] == b"!"
    assert b.setbit("s", 2, 1) == 1  # already set: unchanged
    assert b.get("s")[:1] == b"!"


def test_setbit_integer_value(b):
    # From Redis's unit/type/string: SETBIT against an integer-encoded key.
    b.set("mykey", 1)  # "1" = 0x31
    assert b.setbit("mykey", 6, 1) == 0
    assert b.get("mykey") == b"3"  # 0x33


def test_setbit_errors(b):
    assert err(b, "SETBIT", "k", 4294967296, 1).endswith(ERR_BIT_OFFSET)
    assert err(b, "SETBIT", "k", -1, 1).endswith(ERR_BIT_OFFSET)
    assert err(b, "SETBIT", "k", "a", 1).endswith(ERR_BIT_OFFSET)
    assert err(b, "SETBIT", "k", "#1", 1).endswith(ERR_BIT_OFFSET)  # "#" is BITFIELD's form only
    assert err(b, "SETBIT", "k", " 1", 1).endswith(ERR_BIT_OFFSET)
    for bad in (2, -1, "a", "", "1.0"):
        assert err(b, "SETBIT", "k", 1, bad) == ERR_BIT
    assert b.exists("k") == 0
    assert err(b, "SETBIT", "k", 1) == "wrong number of arguments for 'setbit' command"


def test_setbit_offset_limit_follows_proto_max_bulk_len(b, small_bulk_len):
    last = small_bulk_len * 8 - 1
    assert b.setbit("x", last, 1) == 0
    assert b.strlen("x") == small_bulk_len
    assert b.getbit("x", last) == 1
    assert err(b, "SETBIT", "x", last + 1, 1).endswith(ERR_BIT_OFFSET)
    assert err(b, "GETBIT", "x", last + 1).endswith(ERR_BIT_OFFSET)


def test_setbit_far_offset_reads_first(b):
    # Over 64 KiB the handler reads the key before building the value.
    assert b.setbit("big", 1000000, 1) == 0
    assert b.strlen("big") == 125001
    assert b.setbit("big", 1000000, 1) == 1
    assert b.setbit("big", 1000000, 0) == 1
    assert b.getbit("big", 1000000) == 0
    assert b.bitcount("big") == 0
    assert b.setbit("big", 4000000, 0) == 0
    assert b.strlen("big") == 500001


def test_getbit(b):
    assert b.getbit("missing", 0) == 0
    assert b.getbit("missing", 4294967295) == 0
    b.set("k", "foobar")  # f = 0x66 = 01100110
    assert [b.getbit("k", i) for i in range(8)] == [0, 1, 1, 0, 0, 1, 1, 0]
    assert b.getbit("k", 48) == 0  # past the end
    assert b.getbit("k", 10**9) == 0
    assert err(b, "GETBIT", "k", -1).endswith(ERR_BIT_OFFSET)
    assert err(b, "GETBIT", "k", "a").endswith(ERR_BIT_OFFSET)
    assert err(b, "GETBIT", "missing", 4294967296).endswith(ERR_BIT_OFFSET)


def test_setbit_concurrent_clients_lose_no_bit(server):
    """SETBIT is a compare-and-swap loop: bits set by racing clients on one key all survive."""
    c = server.client()
    c.delete("shared")
    threads, per = 4, 150

    def work(t):
        cl = server.client()
        pipe = cl.pipeline(transaction=False)
        for i in range(per):
            pipe.setbit("shared", i * threads + t, 1)
        assert all(x == 0 for x in pipe.execute())
        cl.close()

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert c.bitcount("shared") == threads * per
    assert c.strlen("shared") == threads * per // 8
    c.delete("shared")


# --- BITCOUNT

def test_bitcount_docs_example(b):
    b.set("mykey", "foobar")
    assert b.bitcount("mykey") == 26
    assert b.bitcount("mykey", 0, 0) == 4
    assert b.bitcount("mykey", 1, 1) == 6
    assert b.bitcount("mykey", 1, 1, "BYTE") == 6
    assert b.bitcount("mykey", 5, 30, "BIT") == 17


def test_bitcount_ranges(b):
    b.set("k", "foobar")
    assert b.bitcount("k", 0, -1) == 26
    assert b.bitcount("k", 0, -1, "bit") == 26
    assert b.bitcount("k", -1, -2) == 0
    assert b.bitcount("k", -1, -1) == 4  # "r" = 0x72
    assert b.bitcount("k", -100, 100) == 26
    assert b.bitcount("k", 6, 10) == 0
    assert b.bitcount("k", 3, 2) == 0
    assert b.bitcount("k", 0, 0, "BIT") == 0
    assert b.bitcount("k", 1, 1, "BIT") == 1
    assert b.bitcount("k", -3, -1, "BIT") == 1  # last three bits of 0x72: 010
    b.set("ones", b"\xff" * 100)
    assert b.bitcount("ones") == 800
    assert b.bitcount("ones", 3, 796, "BIT") == 794
    assert b.bitcount("ones", 10, 89) == 640
    b.set("empty", "")
    assert b.bitcount("empty") == 0
    assert b.bitcount("empty", 0, -1) == 0


def test_bitcount_missing_key_ignores_arguments(b):
    # Redis 7.0 looks the key up before parsing the range.
    assert b.bitcount("missing") == 0
    assert b.execute_command("BITCOUNT", "missing", "a", "b") == 0
    assert b.execute_command("BITCOUNT", "missing", "1") == 0
    assert b.execute_command("BITCOUNT", "missing", 0, 1, "foo") == 0


def test_bitcount_errors(b):
    b.set("k", "foobar")
    assert err(b, "BITCOUNT", "k", 1) == "syntax error"
    assert err(b, "BITCOUNT", "k", "a", "b") == ERR_INT
    assert err(b, "BITCOUNT", "k", 0, 1, "foo") == "syntax error"
    assert err(b, "BITCOUNT", "k", 0, -1, "bit", "x") == "syntax error"
    # As Redis: an empty negative range answers before the unit is checked.
    assert b.execute_command("BITCOUNT", "k", -1, -2, "foo") == 0
    assert err(b, "BITCOUNT") == "wrong number of arguments for 'bitcount' command"


# --- BITPOS

def test_bitpos_docs_example(b):
    b.set("mykey", b"\xff\xf0\x00")
    assert b.bitpos("mykey", 0) == 12
    b.set("mykey", b"\x00\xff\xf0")
    assert b.bitpos("mykey", 1, 0) == 8
    assert b.bitpos("mykey", 1, 2) == 16
    assert b.bitpos("mykey", 1, 2, -1, "BYTE") == 16
    assert b.bitpos("mykey", 1, 7, 15, "BIT") == 8
    b.set("mykey", b"\x00\x00\x00")
    assert b.bitpos("mykey", 1) == -1
    assert b.bitpos("mykey", 1, 7, -3, "BIT") == -1


def test_bitpos_clear_bit_past_the_end(b):
    b.set("ones", b"\xff\xff\xff")
    assert b.bitpos("ones", 0) == 24  # no end given: the string goes on with zeros
    assert b.bitpos("ones", 0, 1) == 24
    assert b.bitpos("ones", 0, 0, -1) == -1  # an explicit end: none in the range
    assert b.bitpos("ones", 0, 3, 20, "BIT") == -1
    assert b.bitpos("ones", 1, 3, 20, "BIT") == 3
    b.set("k", b"\xff\xf0\x00")
    assert b.bitpos("k", 0, 0, -1) == 12
    assert b.bitpos("k", 0, 2, -1) == 16
    assert b.bitpos("k", 0, 2) == 16
    assert b.bitpos("k", 1, 3) == -1  # start past the end
    assert b.bitpos("k", 0, 3) == -1
    assert b.bitpos("k", 1, 5, 3, "BIT") == -1  # start after end
    assert b.bitpos("k", 1, 3, 5, "BIT") == 3
    assert b.bitpos("k", 0, 9, 13, "BIT") == 12
    assert b.bitpos("k", 1, -1, -1) == -1
    assert b.bitpos("k", 0, -2, -2, "BIT") == 22


def test_bitpos_long_runs(b):
    # Word-at-a-time scanning: the answer sits after long runs.
    b.set("z", b"\x00" * 1000 + b"\x01")
    assert b.bitpos("z", 1) == 8007
    assert b.bitpos("z", 1, 500) == 8007
    assert b.bitpos("z", 1, 0, 999) == -1
    assert b.bitpos("z", 1, 8000, 8007, "BIT") == 8007
    b.set("f", b"\xff" * 1000 + b"\xfe")
    assert b.bitpos("f", 0) == 8007
    assert b.bitpos("f", 0, 3, 8006, "BIT") == -1


def test_bitpos_missing_key(b):
    assert b.bitpos("missing", 1) == -1
    assert b.bitpos("missing", 0) == 0
    # Redis 7.0 answers a missing key before looking at the range.
    assert b.execute_command("BITPOS", "missing", 1, "a", "b", "c", "d") == -1
    assert b.execute_command("BITPOS", "missing", 0, 1, 2, 3, 4) == 0


def test_bitpos_errors(b):
    assert err(b, "BITPOS", "missing", 2) == "The bit argument must be 1 or 0."
    assert err(b, "BITPOS", "missing", "x") == ERR_INT
    b.set("k", "foobar")
    assert err(b, "BITPOS", "k", 1, "a") == ERR_INT
    assert err(b, "BITPOS", "k", 1, 0, "a") == ERR_INT
    assert err(b, "BITPOS", "k", 1, 0, 1, "foo") == "syntax error"
    assert err(b, "BITPOS", "k", 1, 0, "x", "foo") == "syntax error"  # the unit is checked before the end
    assert err(b, "BITPOS", "k", 1, 0, 1, "bit", 5) == "syntax error"
    assert err(b, "BITPOS", "k") == "wrong number of arguments for 'bitpos' command"


def test_bit_commands_in_command_table(b):
    info = b.execute_command("COMMAND", "INFO", "setbit", "getbit", "bitcount", "bitpos")  # redis-py makes it {name: {arity, ...}}
    shapes = {name: (x["arity"], x["first_key_pos"], x["last_key_pos"], x["step_count"]) for name, x in info.items()}
    assert shapes == {"setbit": (4, 1, 1, 1), "getbit": (3, 1, 1, 1), "bitcount": (-2, 1, 1, 1), "bitpos": (-3, 1, 1, 1)}
