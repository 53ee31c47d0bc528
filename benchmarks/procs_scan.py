"""The sandbox's /proc reads, hand-written vs psutil, on the paths a timeout or a fork bomb takes.

A per-command timeout or a fork bomb is stopped from the host by scanning every process: which belong
to the sandbox's pid namespace, which are zombies, which started since the command began, who is whose
parent. psutil has no API for pid namespaces, sessions or clock-tick start times (``create_time`` is a
float of seconds), so only the generic queries can move; this measures whether they should.

    .venv/bin/python benchmarks/procs_scan.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import psutil

from clawgym.sandbox import procs


def timed(fn, repeat: int = 30) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


def main() -> int:
    children = [subprocess.Popen(["sleep", "30"]) for _ in range(50)]
    me = os.getpid()
    try:
        rows = [
            ("children of a pid (50 children)", lambda: procs.children_of(me), lambda: psutil.Process(me).children()),
            ("parent + zombie check, every process",
             lambda: [(procs.parent_pid(int(p)), procs._is_zombie(int(p))) for p in os.listdir("/proc") if p.isdigit()],
             lambda: [(p.info["ppid"], p.info["status"] == psutil.STATUS_ZOMBIE)
                      for p in psutil.process_iter(["ppid", "status"])]),
            ("scan: pids whose parent is X", lambda: procs._pids_where(procs.PPID, me),
             lambda: [p.pid for p in psutil.process_iter(["ppid"]) if p.info["ppid"] == me]),
        ]
        print(f"{len(psutil.pids())} processes on this machine; load {os.getloadavg()[0]:.1f}\n")
        print("| query | hand-written ms | psutil ms | psutil / hand-written |")
        print("|---|---:|---:|---:|")
        for name, ours, theirs in rows:
            a, b = timed(ours), timed(theirs)
            print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.1f}x |")
    finally:
        for child in children:
            child.kill()
            child.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
