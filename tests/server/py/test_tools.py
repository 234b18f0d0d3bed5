"""Smoke runs of the stock Redis tools against kvcg-server: redis-cli
(interactive-style commands, --pipe) and redis-benchmark."""
import shutil
import subprocess

import pytest


def need(tool):
    path = shutil.which(tool)
    if not path:
        pytest.skip(f"{tool} not installed (Debian package redis-tools)")
    return path


def test_redis_cli(server):
    cli = need("redis-cli")
    run = lambda *a: subprocess.run([cli, "-p", str(server.port), *a], capture_output=True, text=True,
                                    timeout=60).stdout.strip()
    assert run("PING") == "PONG"
    assert run("SET", "cli", "hello") == "OK"
    assert run("GET", "cli") == "hello"
    assert run("INCR", "cli-n") == "1"
    assert run("-3", "GET", "cli") == "hello"  # RESP3
    assert "backend:cpu" in run("INFO", "kvcg")


def test_redis_cli_pipe(server):
    cli = need("redis-cli")
    payload = "".join(f"SET pipe:{i} {i}\r\n" for i in range(1000))
    p = subprocess.run([cli, "-p", str(server.port), "--pipe"], input=payload, capture_output=True, text=True,
                       timeout=120)
    assert "errors: 0, replies: 1000" in p.stdout
    c = server.client(decode_responses=True)
    assert c.get("pipe:999") == "999"


def test_redis_benchmark(server):
    bench = need("redis-benchmark")
    p = subprocess.run([bench, "-p", str(server.port), "-t", "set,get,incr,mset,ping", "-n", "2000", "-c", "8",
                        "-P", "16", "-q", "--csv"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l and not l.startswith('"test"')]
    names = {l.split(",")[0].strip('"') for l in lines}
    assert {"SET", "GET", "INCR", "PING_INLINE", "PING_MBULK"} <= names or len(names) >= 5, p.stdout
    for l in lines:
        rps = float(l.split(",")[1].strip('"'))
        assert rps > 0
    c = server.client()
    assert int(c.get("counter:__rand_int__") or 0) >= 2000 or c.dbsize() > 0
