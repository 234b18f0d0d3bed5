"""Where a server benchmark's CPU goes: per thread of the server (from
/proc/<pid>/task/*/stat, grouped by thread name: kvcg-server names its
threads kvcg-io-N, kvcg-gpu-pipe, kvcg-gpu-dlvr, ...; redis-server io_thd_N)
and for the client processes this one started (getrusage of children).

Why: on one host the client, the server and the kernel's loopback TCP share
the cores, so a row's rate may be bound by the host's CPU rather than by
the store. Each measured run records the cores each side used, split into
user and system time, and the CPU time per operation, so a missed target
says where the time went. Linux only; elsewhere it records nothing.
Standard library only.
"""
import os
import re
import resource
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _thread_times(pid):
    """{tid: (name, user_s, sys_s)} of the live threads of `pid`."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        # comm is in parentheses and may hold spaces: split after the last ')'.
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[tid] = (name, int(fields[11]) / _TICK, int(fields[12]) / _TICK)  # utime, stime
    return out


def _group(name):
    """kvcg-io-3 -> kvcg-io, io_thd_2 -> io_thd: one entry per kind of thread."""
    return re.sub(r"[-_]?\d+$", "", name) or name


class Window:
    """CPU use of `server_pid` and of this process's children between
    start() and stop(); stop() returns the record (or {} off Linux)."""

    def __init__(self, server_pid):
        self.pid = server_pid

    def start(self):
        self.t0 = time.monotonic()
        self.server0 = _thread_times(self.pid)
        self.children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return self

    def stop(self, ops_per_sec=None):
        wall = time.monotonic() - self.t0
        server1 = _thread_times(self.pid)
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not self.server0 or wall <= 0:
            return {}
        threads = {}
        user = system = 0.0
        for tid, (name, u1, s1) in server1.items():
            _, u0, s0 = self.server0.get(tid, (name, 0.0, 0.0))
            du, ds = u1 - u0, s1 - s0
            user += du
            system += ds
            g = threads.setdefault(_group(name), {"threads": 0, "user_cores": 0.0, "sys_cores": 0.0})
            g["threads"] += 1
            g["user_cores"] += du / wall
            g["sys_cores"] += ds / wall
        client_user = (children1.ru_utime - self.children0.ru_utime) / wall
        client_sys = (children1.ru_stime - self.children0.ru_stime) / wall
        rec = {
            "what": "cores used over the run's wall time (warm-up included): server threads by name, and the "
                    "client processes (kvcg-loadgen); user and system (kernel: mostly loopback TCP) time",
            "wall_s": wall,
            "host_cores": os.cpu_count(),
            "server_user_cores": user / wall,
            "server_sys_cores": system / wall,
            "client_user_cores": client_user,
            "client_sys_cores": client_sys,
            "server_threads": dict(sorted(threads.items())),
        }
        if ops_per_sec:
            rec["server_cpu_ns_per_op"] = (user + system) / wall / ops_per_sec * 1e9
            rec["client_cpu_ns_per_op"] = (client_user + client_sys) / ops_per_sec * 1e9
        return rec


def summary(rec):
    """One log line: 'server 9.8 cores (sys 38%; kvcg-io 8x 8.1, ...), client 4.6 cores (sys 80%)'."""
    if not rec:
        return "cpu: not measured"
    server = rec["server_user_cores"] + rec["server_sys_cores"]
    client = rec["client_user_cores"] + rec["client_sys_cores"]
    parts = ", ".join(f"{k} {v['threads']}x {v['user_cores'] + v['sys_cores']:.1f}"
                      for k, v in rec["server_threads"].items() if v["user_cores"] + v["sys_cores"] >= 0.05)
    share = lambda s, t: f"{100 * s / t:.0f}%" if t > 0 else "-"
    return (f"cpu of {rec['host_cores']} cores: server {server:.1f} (sys {share(rec['server_sys_cores'], server)}; "
            f"{parts}), client {client:.1f} (sys {share(rec['client_sys_cores'], client)})")
