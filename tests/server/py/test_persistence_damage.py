"""Damaged files and a full disk: what kvcg-server does when persistence goes wrong.

* A torn log tail (a crash in the middle of a record): the server starts, logs a
  warning, and every earlier write is there.
* A flipped byte in the middle of the snapshot or the log: the server refuses to
  start; stderr names the file and the byte offset; the exit is a clean error
  (an exit status), never a signal.
* A full disk (RLIMIT_FSIZE, so write() fails with EFBIG; the server ignores
  SIGXFSZ): failing writes get a MISCONF reply, reads keep working, and every
  acknowledged write is there after a restart without the limit.

The snapshot is <dir>/<dbfilename>; the log's files are <dir>/<appenddirname>/*
(docs/PERSISTENCE.md describes their format).
"""
import os
import resource
import subprocess

import redis

from conftest import ServerProcess, persistence_info, server_command


def log_files(data_dir):
    d = data_dir / "appendonlydir"
    return sorted((p for p in d.iterdir() if p.is_file() and p.stat().st_size > 0),
                  key=lambda p: (p.stat().st_mtime_ns, p.name))


def start(binary, data_dir, *args, preexec_fn=None):
    srv = ServerProcess(binary, ["--dir", str(data_dir)] + list(args), preexec_fn=preexec_fn)
    c = srv.client()
    assert persistence_info(c)["kvcg_persistence"] == 1, "no kvcg::Durable behind the server"
    return srv, c


def start_fails(binary, data_dir, *args):
    p = subprocess.run(server_command(binary, ["--dir", str(data_dir)] + list(args)), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode > 0, f"expected a clean error exit, got {p.returncode}: {p.stderr}"
    return p


def flip_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


LOG_ARGS = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]


def write_keys(c, n, prefix="k"):
    data = {f"{prefix}:{i}".encode(): f"value-{i}-".encode() * 8 for i in range(n)}
    for k, v in data.items():  # one write per record: the last one is the last record
        assert c.set(k, v)
    return data


def test_torn_log_tail_is_cut_with_a_warning(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, *LOG_ARGS)
    data = write_keys(c, 200)
    srv.kill()
    newest = log_files(tmp_path)[-1]
    size = newest.stat().st_size
    os.truncate(newest, size - 3)
    srv, c = start(server_binary, tmp_path, *LOG_ARGS)
    try:
        warnings = [line for line in srv.stdout_lines if "event=load_warning" in line]
        assert warnings, "".join(srv.stdout_lines)
        assert newest.name in warnings[0]
        keys = list(data)
        got = c.mget(keys)
        assert got[:-1] == [data[k] for k in keys[:-1]]  # everything before the torn record
        assert got[-1] in (None, data[keys[-1]])
        assert persistence_info(c)["kvcg_load_warnings"] >= 1
        # The cut tail is gone for good: new writes append after it and survive.
        more = write_keys(c, 20, prefix="after")
        srv.kill()
        srv, c = start(server_binary, tmp_path, *LOG_ARGS)
        assert c.mget(list(more)) == list(more.values())
        assert c.mget(keys[:-1]) == [data[k] for k in keys[:-1]]
    finally:
        srv.stop()


def test_flipped_byte_in_snapshot_refuses_to_start(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, "--save", "")
    write_keys(c, 500)
    assert c.execute_command("SAVE") in (b"OK", True)
    srv.kill()
    snapshot = tmp_path / "dump.kvcg"
    flip_byte(snapshot, snapshot.stat().st_size // 2)
    p = start_fails(server_binary, tmp_path, "--save", "")
    assert "dump.kvcg" in p.stderr and "offset" in p.stderr, p.stderr
    assert "kvcg-server ready" not in p.stdout


def test_flipped_byte_in_log_refuses_to_start(server_binary, tmp_path):
    srv, c = start(server_binary, tmp_path, *LOG_ARGS)
    write_keys(c, 500)
    srv.kill()
    biggest = max(log_files(tmp_path), key=lambda p: p.stat().st_size)
    flip_byte(biggest, biggest.stat().st_size // 2)
    p = start_fails(server_binary, tmp_path, *LOG_ARGS)
    assert biggest.name in p.stderr and "offset" in p.stderr, p.stderr
    assert "kvcg-server ready" not in p.stdout


def test_full_disk_gives_misconf_and_keeps_acknowledged_writes(server_binary, tmp_path):
    limit = 256 * 1024

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    srv, c = start(server_binary, tmp_path, *LOG_ARGS, preexec_fn=small_files)
    try:
        acked = {}
        errors = []
        value = b"x" * 1000
        for i in range(4 * limit // len(value)):
            key = f"k:{i}".encode()
            try:
                assert c.set(key, value + key)
                acked[key] = value + key
            except redis.ResponseError as e:
                errors.append(str(e))
                if len(errors) >= 3:
                    break
        assert errors, "no write failed although the log outgrew RLIMIT_FSIZE"
        assert acked, "the limit left no room for a single write"
        for e in errors:
            assert e.startswith("MISCONF Errors writing to the AOF file: "), e
            assert "too large" in e.lower(), e  # strerror(EFBIG): "File too large"
        assert persistence_info(c)["aof_last_write_status"] == "err"
        # Reads keep working while writes cannot be logged.
        keys = list(acked)
        assert c.mget(keys) == [acked[k] for k in keys]
        assert srv.proc.poll() is None  # not killed by SIGXFSZ
    finally:
        srv.kill()
    srv, c = start(server_binary, tmp_path, *LOG_ARGS)  # no limit now
    try:
        assert c.mget(keys) == [acked[k] for k in keys]
        assert c.set("after", "1")
    finally:
        srv.stop()
