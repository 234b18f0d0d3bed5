"""The servers the server benchmarks measure: how each is started and stopped,
and the named configurations (rows) bench/server/compare.py runs side by side.

Every server runs with persistence off and in a throw-away directory unless
the caller's flags say otherwise (bench/server/persistence.py does), on a
free port of 127.0.0.1. Needs only the Python standard library.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")

# name -> (program, flags). kvcg rows set --backend (and --mode where the
# default is not what the row measures); the rest of kvcg-server's flags come
# from compare.py's --kvcg-args, the same for every kvcg row.
ROWS = {
    # The default mode with a GPU (kvcg: hot keys on the CPU, the rest batched to the GPU).
    "kvcg-gpu": ("kvcg", ["--backend", "gpu"]),
    # Every key on the GPU store: what the GPU alone serves.
    "kvcg-gpu-canonical": ("kvcg", ["--backend", "gpu", "--mode", "canonical"]),
    # The same with a launch per batch instead of the resident kernel (the A/B of its ring).
    "kvcg-gpu-canonical-launch": ("kvcg", ["--backend", "gpu", "--mode", "canonical",
                                           "--gpu-resident-blocks", "0"]),
    # The plain CPU store (its default mode, canonical).
    "kvcg-cpu": ("kvcg", ["--backend", "cpu"]),
    "redis": ("redis", []),
    # Redis 6+'s threaded I/O: reads and writes of sockets on 8 threads, commands still on one.
    "redis-io8": ("redis", ["--io-threads", "8", "--io-threads-do-reads", "yes"]),
}
GPU_ROWS = [name for name, (_, flags) in ROWS.items() if "gpu" in flags]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with status {proc.returncode}: "
                               f"{proc.stderr.read().strip() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on port {port}")


def resp_command(port, *args):
    """Sends one command, returns the raw reply bytes (good enough for INFO)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    payload = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
    s.sendall(payload)
    data = b""
    s.settimeout(2)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
            if data.startswith(b"$") and data.endswith(b"\r\n") and data.count(b"\r\n") >= 2:
                header, _, rest = data.partition(b"\r\n")
                if len(rest) >= int(header[1:]) + 2:
                    break
            elif not data.startswith(b"$") and data.endswith(b"\r\n"):
                break
    except socket.timeout:
        pass
    s.close()
    return data.decode(errors="replace")


def parse_info(text):
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#") and not line.startswith("$"):
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def start_kvcg(binary, extra):
    """Returns (process, port, banner); raises RuntimeError with the server's
    own message when it does not start (e.g. --backend gpu without a GPU)."""
    # Persistence off as for redis-server below (no snapshot rules, appendonly
    # no) and a throw-away --dir so nothing is written into the checkout,
    # unless `extra` says otherwise (a flag may be given only once).
    data_dir = None
    defaults = []
    if "--save" not in extra:
        defaults += ["--save", ""]
    if "--appendonly" not in extra:
        defaults += ["--appendonly", "no"]
    if "--dir" not in extra:
        data_dir = tempfile.mkdtemp(prefix="kvcg-bench-")
        defaults += ["--dir", data_dir]
    p = subprocess.Popen([binary, "--port", "0", "--loglevel", "warning"] + defaults + extra, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.data_dir = data_dir
    line = p.stdout.readline()
    if not line.startswith("kvcg-server ready:"):
        # Its reason comes on stderr after the log line just read: let it exit.
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        if data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
        reason = [x for x in err.splitlines() if x.startswith("kvcg-server:")]
        raise RuntimeError(reason[-1] if reason else "kvcg-server did not start: " + line.strip())
    port = int(line.split("listening=")[1].split()[0].rsplit(":", 1)[1])
    wait_port(port, p)
    return p, port, line.strip()


def start_redis(binary, extra):
    port = free_port()
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--loglevel", "warning"] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port, p)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    return p, port, version


def start_sink(binary, threads, value_size):
    """kvcg-resp-sink: answers from constants, the client's ceiling."""
    p = subprocess.Popen([binary, "--port", "0", "--threads", str(threads), "--value-size", str(value_size)],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("kvcg-resp-sink ready:"):
        p.kill()
        raise RuntimeError("kvcg-resp-sink did not start: " + line)
    port = int(line.split("listening=")[1].split()[0].rsplit(":", 1)[1])
    wait_port(port, p)
    return p, port, line.strip()


def start_row(name, kvcg_binary, redis_binary, kvcg_args, redis_args):
    """Starts the row's server; returns (process, port, banner, argv flags)."""
    program, flags = ROWS[name]
    if program == "kvcg":
        extra = flags + kvcg_args
        return start_kvcg(kvcg_binary, extra) + (extra,)
    extra = flags + redis_args
    return start_redis(redis_binary, extra) + (extra,)


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    if getattr(p, "data_dir", None):
        shutil.rmtree(p.data_dir, ignore_errors=True)
