"""Linux process and cgroup helpers shared by the sandbox backends that see the host's /proc.

Why here: a timeout must kill what the *command* started without killing the shell, and a fork bomb
must be stopped without a process inside the sandbox (it may have no pids left). Both are done from
the host, by walking /proc for processes in the sandbox's pid namespace and reading the sandbox's
cgroup counters.

Why not psutil: it has no API for pid namespaces, sessions, clock-tick start times or cgroups (the
substance of this module), and on the generic queries it is 2-100x slower on the timeout path
(``benchmarks/procs_scan.py``; the numbers are in docs/benchmarks.md, "/proc reads").

The GUI setting's browser uses ``process_tree`` and ``cmdline`` to find and kill its own Chromium's
renderers when a page hangs.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterable

log = logging.getLogger(__name__)

CLK_TCK = os.sysconf("SC_CLK_TCK")


def boot_ticks() -> int:
    """Now, in the unit of /proc/<pid>/stat's start time (clock ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLK_TCK)


def pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


# Indexes into the fields of /proc/<pid>/stat after the ")" that ends the command name (field 3 on).
STATE, PPID, SESSION, STARTTIME = 0, 1, 3, 19


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` from the state on, or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()


def _pids_where(index: int, value: int) -> list[int]:
    """Host pids whose stat field ``index`` equals ``value`` (a scan of /proc)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = stat_fields(name)
            if fields is not None and int(fields[index]) == value:
                pids.append(int(name))
    return pids


def start_tick(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[STARTTIME]) if fields is not None else None


def session_members(sid: int) -> list[int]:
    """Host pids of every process in session ``sid`` (the unsandboxed local backend's shell)."""
    return _pids_where(SESSION, sid)


def children_of(pid: int) -> list[int]:
    """Host pids whose parent is ``pid`` (one file read where the kernel has /proc/<pid>/task/*/children)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]  # bwrap is single-threaded: its main task forks
    except FileNotFoundError:
        if not os.path.exists(f"/proc/{pid}"):
            return []
    except OSError:
        pass
    return _pids_where(PPID, pid)


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants, reading the children of each of a process's threads (a
    multi-threaded parent, such as Chromium's browser process, forks from more than its main thread)."""
    stack, found = [root], []
    while stack:
        pid = stack.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                stack += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return found


def cmdline(pid: int) -> str:
    """The command line of ``pid``, its arguments joined by spaces ("" if it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def namespace_members(namespace: str) -> list[int]:
    """Host pids of every process in the given pid namespace."""
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit() and pid_namespace(int(name)) == namespace:
            members.append(int(name))
    return members


def parent_pid(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[PPID]) if fields is not None else None


def descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        parent = parent_pid(pid)
        if parent is None or parent <= 1:
            return False
        if parent == ancestor:
            return True
        pid = parent
    return False


def kill_namespace(namespace: str, keep: set[int], since_tick: int | None = None, rounds: int = 200,
                   members=None, owner: int | None = None) -> int:
    """SIGKILL every process in ``namespace`` (except ``keep``) started at or after ``since_tick``.

    Start times have clock-tick resolution (10 ms), so a process started by an earlier command in the
    same tick as this one would look new: with ``owner`` (the shell), a process from exactly
    ``since_tick`` is killed only if it descends from the owner (the command's own children do; an
    earlier command's orphaned background job, re-parented to pid 1, does not).

    A fork bomb re-forks faster than a scan-and-kill pass, so victims are first stopped (a stopped
    process cannot fork) until a pass finds no running one, then all are killed at once.
    Returns how many were killed.
    """
    killed: set[int] = set()
    quiet = 0
    for _ in range(20):  # a clone in flight during a scan can still add a child: stop after two quiet scans
        stopped: set[int] = set()
        for _ in range(rounds):
            fresh = []
            for pid in (members() if members is not None else namespace_members(namespace)):
                if pid in keep or pid in stopped or pid in killed or _is_zombie(pid):
                    continue
                if since_tick is not None:
                    tick = start_tick(pid)
                    if tick is None or tick < since_tick:
                        continue
                    if tick == since_tick and owner is not None and not descends_from(pid, owner):
                        continue
                fresh.append(pid)
            if not fresh:
                break
            stopped |= signal_pids(fresh, signal.SIGSTOP)
        if not stopped:
            quiet += 1
            if quiet == 2:
                break
            time.sleep(0.005)
            continue
        quiet = 0
        killed |= signal_pids(stopped, signal.SIGKILL)
    return len(killed)


def signal_pids(pids: Iterable[int], sig: int) -> set[int]:
    """Send ``sig`` to each pid, skipping those already gone; returns the pids it reached."""
    reached = set()
    for pid in pids:
        try:
            os.kill(pid, sig)
            reached.add(pid)
        except ProcessLookupError:
            pass
    return reached


def _is_zombie(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is None or fields[STATE] in (b"Z", b"X")


def read_counter(path: str | None, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``pids.events``, ``memory.events``...); 0 if absent."""
    if path is None:
        return 0
    try:
        with open(path) as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def cgroup_file_of(pid: int, controller: str, filename: str) -> str | None:
    """Path of ``filename`` in the cgroup (v1 ``controller`` hierarchy, else v2) that holds ``pid``."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    mounts = _cgroup_mounts()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") and controller in mounts:
            candidate = os.path.join(mounts[controller], path.lstrip("/"), filename)
            return candidate if os.path.exists(candidate) else None
    for line in lines:
        if line.startswith("0::") and "" in mounts:
            candidate = os.path.join(mounts[""], line[3:].lstrip("/"), filename)
            return candidate if os.path.exists(candidate) else None
    return None


def _cgroup_mounts() -> dict[str, str]:
    """controller -> mount point for v1 hierarchies, and "" -> the cgroup2 mount point."""
    mounts: dict[str, str] = {}
    try:
        text = Path("/proc/self/mounts").read_text()
    except OSError:
        return mounts
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        if parts[2] == "cgroup2":
            mounts.setdefault("", parts[1])
        elif parts[2] == "cgroup":
            for option in parts[3].split(","):
                mounts.setdefault(option, parts[1])
    return mounts


class CgroupError(RuntimeError):
    pass


class Cgroup:
    """One sandbox's memory + pids cgroup (v2 when it has both controllers, else v1 hierarchies).

    The limits hold for every process put in it (the shell, its children, spawned helpers); the
    counters tell when the pids limit was hit or the OOM killer ran.
    """

    PARENT = "clawgym"

    def __init__(self, name: str, memory_mb: int, pids_max: int):
        self.dirs: list[str] = []
        self.procs_files: list[str] = []
        mounts = _cgroup_mounts()
        try:
            if self._v2_usable(mounts):
                self.version = 2
                self._setup_v2(mounts[""], name, memory_mb, pids_max)
            elif "memory" in mounts and "pids" in mounts:
                self.version = 1
                self._setup_v1(mounts, name, memory_mb, pids_max)
            else:
                raise CgroupError("no cgroup v2 mount with memory+pids and no v1 memory/pids hierarchies")
        except OSError as exc:
            self.remove()
            raise CgroupError(f"cannot create a cgroup: {exc}") from exc
        except CgroupError:
            self.remove()
            raise

    @staticmethod
    def _v2_usable(mounts: dict[str, str]) -> bool:
        if "" not in mounts:
            return False
        try:
            controllers = Path(mounts[""], "cgroup.controllers").read_text().split()
        except OSError:
            return False
        return "memory" in controllers and "pids" in controllers

    def _setup_v2(self, mount: str, name: str, memory_mb: int, pids_max: int) -> None:
        parent = os.path.join(mount, self.PARENT)
        _write_if_needed(os.path.join(mount, "cgroup.subtree_control"), "+memory +pids", ("memory", "pids"))
        os.makedirs(parent, exist_ok=True)
        _sweep_stale(parent)
        _write_if_needed(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids", ("memory", "pids"))
        path = os.path.join(parent, name)
        os.mkdir(path)
        self.dirs.append(path)
        _require_cgroupfs(path)
        _write(os.path.join(path, "memory.max"), str(memory_mb * 1024 * 1024))
        if os.path.exists(os.path.join(path, "memory.swap.max")):
            _write(os.path.join(path, "memory.swap.max"), "0")
        _write(os.path.join(path, "pids.max"), str(pids_max))
        self.procs_files.append(os.path.join(path, "cgroup.procs"))
        self.pids_events = os.path.join(path, "pids.events")
        self.oom_file, self.oom_key = os.path.join(path, "memory.events"), "oom_kill"

    def _setup_v1(self, mounts: dict[str, str], name: str, memory_mb: int, pids_max: int) -> None:
        paths = {}
        for controller in ("memory", "pids"):
            parent = os.path.join(mounts[controller], self.PARENT)
            os.makedirs(parent, exist_ok=True)
            _sweep_stale(parent)
            path = os.path.join(parent, name)
            os.mkdir(path)
            self.dirs.append(path)
            _require_cgroupfs(path)
            self.procs_files.append(os.path.join(path, "cgroup.procs"))
            paths[controller] = path
        limit = str(memory_mb * 1024 * 1024)
        _write(os.path.join(paths["memory"], "memory.limit_in_bytes"), limit)
        memsw = os.path.join(paths["memory"], "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):
            try:
                _write(memsw, limit)
            except OSError:
                pass  # swap accounting off: nothing to cap
        _write(os.path.join(paths["pids"], "pids.max"), str(pids_max))
        self.pids_events = os.path.join(paths["pids"], "pids.events")
        self.oom_file, self.oom_key = os.path.join(paths["memory"], "memory.oom_control"), "oom_kill"

    def pids_limit_hits(self) -> int:
        return read_counter(self.pids_events, "max")

    def oom_kills(self) -> int:
        return read_counter(self.oom_file, self.oom_key)

    def remove(self, wait_s: float = 2.0) -> None:
        """rmdir every directory, waiting briefly for killed processes to leave."""
        deadline = time.monotonic() + wait_s
        for path in reversed(self.dirs):
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        log.warning("could not remove cgroup %s: %s", path, exc)
                        break
                    time.sleep(0.01)
        self.dirs = []


def _require_cgroupfs(path: str) -> None:
    """A directory made where a cgroup fs is shadowed (e.g. by a tmpfs) is not a cgroup."""
    if not os.path.exists(os.path.join(path, "cgroup.procs")):
        raise CgroupError(f"{path} is not on a cgroup file system")


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _write_if_needed(path: str, value: str, wanted: tuple[str, ...]) -> None:
    try:
        if all(c in Path(path).read_text().split() for c in wanted):
            return
    except OSError:
        pass
    _write(path, value)


def _sweep_stale(parent: str) -> None:
    """Remove cgroups left by dead processes (names start with the owner's pid)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        owner = name.split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass


def kill_and_reap(proc: "subprocess.Popen", wait_s: float = 5.0) -> int | None:
    """SIGKILL a process (its whole group when it leads one), close its pipes, and reap it.

    Returns the exit status, or None if it still has not exited after ``wait_s``.
    """
    if proc.poll() is None:
        try:
            if os.getpgid(proc.pid) == proc.pid:  # its own group: take its children too
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        return proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        logging.getLogger(__name__).warning("process %s did not exit after SIGKILL", proc.pid)
        return None
