"""bubblewrap sandbox: one persistent bash per episode in fresh namespaces (the default on Linux).

Isolation: the host's top-level directories read-only (``/run``, the other sandboxes' directories and
clawgym's own install, see :func:`install_paths`, hidden), a private writable work dir at
``config.workdir`` and a private ``/tmp`` (both host temp dirs, removed on close), new ``/proc`` and
``/dev``, pid/ipc/uts namespaces and a network namespace with loopback only unless ``config.network``.
The shell runs as root with every capability dropped.
Limits: one cgroup per sandbox (memory + pids) that the shell and every spawned helper share. Where
cgroups are not writable the sandbox still runs, with a logged warning, ``limits_enforced = False``
and the reason in ``cgroup_error``.

Everything is released by ``close()``, by the garbage collector and at interpreter exit
(``weakref.finalize``); if the Python process is killed, the shell sees EOF on its stdin and exits,
which ends its pid namespace.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from pathlib import Path

from clawgym.sandbox import procs
from clawgym.sandbox.base import SandboxConfig, SandboxUnavailable
from clawgym.sandbox.shell import SHELL_ENV, PipeTransport, ShellSandbox, ShellSession, shell_argv

log = logging.getLogger(__name__)

INSTALL_HINT = ("bubblewrap is not installed: run `apt-get install bubblewrap` (Debian/Ubuntu) or "
                "`dnf install bubblewrap`")
PROC_READ_ONLY = ("/proc/sys",)  # bwrap's --proc already covers sysrq-trigger, irq and bus
PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # clawgym itself: see install_paths()
HIDDEN_TOP = {"proc", "dev", "tmp", "run", "sys"}  # replaced by fresh mounts (sys: read-only bind below)
DEFAULT_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "USER": "root",
}


def install_paths() -> list[str]:
    """What of clawgym's install the agent must not see: the package (bundled tasks carry checks and
    oracles), its install records (``*.dist-info``: METADATA, RECORD), and for a source checkout the
    whole checkout (the scripts that generate the tasks, the tests and their fixtures)."""
    paths = [PACKAGE_DIR]
    parent = os.path.dirname(PACKAGE_DIR)
    if os.path.isfile(os.path.join(parent, "pyproject.toml")):
        paths.insert(0, parent)
    for entry in sys.path:
        if os.path.isabs(entry):
            for pattern in ("clawgym-*.dist-info", "clawgym-*.egg-info", "clawgym.egg-info"):
                paths += sorted(glob.glob(os.path.join(entry, pattern)))
    return paths


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def bwrap_path() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(INSTALL_HINT)
    return path


def sandboxes_root() -> Path:
    """Host directory holding every sandbox's private dirs (hidden inside each sandbox)."""
    root = Path(tempfile.gettempdir()) / "clawgym-sandboxes"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def _sweep_stale_dirs(root: Path) -> None:
    for entry in root.iterdir():
        owner = entry.name.split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            shutil.rmtree(entry, ignore_errors=True)


class _Resources:
    """What must be released; kept apart from the sandbox so the finalizer holds no reference to it."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen] = []
        self.cgroup: procs.Cgroup | None = None
        self.host_dir: Path | None = None

    def kill_process(self, proc: subprocess.Popen) -> int | None:
        """Kill the sandbox's pid 1 first (its namespace dies with it and bwrap reaps it), then bwrap's group."""
        if proc.poll() is None:
            procs.signal_pids(procs.children_of(proc.pid), signal.SIGKILL)
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        return procs.kill_and_reap(proc, wait_s=10)

    def release(self) -> None:
        for proc in self.processes:
            self.kill_process(proc)
        self.processes = []
        if self.cgroup is not None:
            for path in self.cgroup.procs_files:  # stragglers (a helper's children) in our cgroup
                try:
                    for pid in Path(path).read_text().split():
                        os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            self.cgroup.remove()
            self.cgroup = None
        if self.host_dir is not None:
            shutil.rmtree(self.host_dir, ignore_errors=True)
            self.host_dir = None


class BwrapSandbox(ShellSandbox):
    """A :class:`clawgym.sandbox.base.Sandbox` on bubblewrap. See the module docstring."""

    kind = "bwrap"

    def __init__(self, config: SandboxConfig | None = None):
        self.config = config or SandboxConfig()
        if not self.config.workdir.startswith("/") or self.config.workdir == "/":
            raise ValueError(f"workdir must be an absolute path below /, got {self.config.workdir!r}")
        self.bwrap = bwrap_path()
        self._init_shell_state()
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.release)
        self.limits_enforced = False
        self.cgroup_error: str | None = None
        self._shell_proc: subprocess.Popen | None = None
        self._shell_host_pid: int | None = None
        self._namespace: str | None = None
        try:
            root = sandboxes_root()
            _sweep_stale_dirs(root)
            self.host_dir = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
            self._res.host_dir = self.host_dir
            self.host_work = self.host_dir / "work"
            self.host_tmp = self.host_dir / "tmp"
            self.host_work.mkdir()
            self.host_tmp.mkdir()
            self.host_tmp.chmod(0o1777)
            self._make_cgroup()
        except BaseException:
            self.close()
            raise
        self._write_files_and_open_shell()

    # -- setup -----------------------------------------------------------------------------------
    def _make_cgroup(self) -> None:
        name = self.host_dir.name
        try:
            self._res.cgroup = procs.Cgroup(name, self.config.memory_mb, self.config.pids_max)
            self.limits_enforced = True
        except procs.CgroupError as exc:
            self.cgroup_error = str(exc)
            log.warning("bwrap sandbox without memory/pids limits: %s (run as root on a writable cgroup fs)", exc)

    def _mount_args(self) -> list[str]:
        """Mounts for a sandbox (each bind costs bwrap a mountinfo parse, so the fast path binds / once)."""
        workdir = os.path.normpath(self.config.workdir)
        top = "/" + workdir.split("/")[1]
        args: list[str] = []
        if os.path.isdir(top) or top in ("/tmp", "/run"):
            args += ["--ro-bind", "/", "/"]
        else:  # the work dir's top-level directory is new: build the root from the host's entries instead
            for entry in sorted(os.listdir("/")):
                path = "/" + entry
                if entry in HIDDEN_TOP:
                    continue
                if os.path.islink(path):
                    args += ["--symlink", os.readlink(path), path]
                elif os.path.isdir(path):
                    args += ["--ro-bind", path, path]
            args += ["--ro-bind", "/sys", "/sys"]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/run", "--bind", str(self.host_tmp), "/tmp"]
        for entry in PROC_READ_ONLY:  # root without capabilities may still write host sysctls: cover them
            if os.path.exists(entry):
                args += ["--ro-bind", entry, entry]
        sandboxes = str(self.host_dir.parent)
        if not sandboxes.startswith("/tmp/"):
            args += ["--tmpfs", sandboxes]
        if not os.path.isdir(workdir) and not workdir.startswith("/tmp/"):
            # create the mount point on a tmpfs over its deepest existing host ancestor (hiding that one's content)
            ancestor = os.path.dirname(workdir)
            while ancestor != "/" and not os.path.isdir(ancestor):
                ancestor = os.path.dirname(ancestor)
            if ancestor != "/" and ancestor.split("/")[1] not in HIDDEN_TOP:
                args += ["--tmpfs", ancestor]
        args += self._hiding_args(workdir)
        args += ["--bind", str(self.host_work), workdir]
        if args[:3] != ["--ro-bind", "/", "/"]:
            args += ["--remount-ro", "/"]
        return args

    def _hiding_args(self, workdir: str) -> list[str]:
        """Hide clawgym's install (:func:`install_paths`) and ``config.hidden_paths``; keep the Python that
        runs clawgym usable (bound back read-only where a hidden dir or the private /tmp covers it), and
        hide the install inside that Python too, so no layout shows the agent a task, check or oracle."""
        hidden = [path for path in [*install_paths(), *self.config.hidden_paths]
                  if os.path.isdir(path) and not _inside(workdir, path)]
        covered: list[str] = []  # /tmp needs no cover: the sandbox's own is private
        for path in hidden:
            if not path.startswith("/tmp/") and not any(_inside(path, done) for done in covered):
                covered.append(path)
        environments = [env for env in sorted({sys.prefix, sys.base_prefix}) if os.path.isdir(env)
                        and (env.startswith("/tmp/") or any(_inside(env, done) for done in covered))]
        args: list[str] = []
        for path in covered:
            args += ["--tmpfs", path]
        for env in environments:
            args += ["--ro-bind", env, env]
        for path in hidden:
            if any(_inside(path, env) for env in environments):
                args += ["--tmpfs", path]
        return args

    def _bwrap_argv(self, argv: list[str], *, as_pid_1: bool, info_fd: int | None,
                    extra_env: dict[str, str] | None = None) -> list[str]:
        args = [self.bwrap, "--die-with-parent", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--hostname", "sandbox"]
        if as_pid_1:
            args += ["--as-pid-1", "--new-session"]
        if not self.config.network:
            args.append("--unshare-net")
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        args += self._mount_args()
        args += ["--chdir", os.path.normpath(self.config.workdir), "--clearenv"]
        for key, value in {**DEFAULT_ENV, **self.config.env, **(extra_env or {})}.items():
            args += ["--setenv", key, value]
        return args + ["--", *argv]

    def _popen(self, argv: list[str], *, as_pid_1: bool, stderr=subprocess.PIPE, info: bool = False,
               extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int | None]:
        """Start bwrap inside our cgroup (a tiny sh joins it, then execs bwrap), optionally reading its info."""
        info_r = info_w = None
        if info:
            info_r, info_w = os.pipe()
        full = self._bwrap_argv(argv, as_pid_1=as_pid_1, info_fd=info_w, extra_env=extra_env)
        if self._res.cgroup is not None:
            join = " ".join(f'echo $$ > "{p}" || exit 125;' for p in self._res.cgroup.procs_files)
            full = ["/bin/sh", "-c", f'{join} exec "$@"', "sh", *full]
        try:
            proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                    close_fds=True, pass_fds=(info_w,) if info_w is not None else (),
                                    start_new_session=True, env={"PATH": DEFAULT_ENV["PATH"]})
        finally:
            if info_w is not None:
                os.close(info_w)
        self._res.processes.append(proc)
        child = None
        if info_r is not None:
            with os.fdopen(info_r, "rb") as f:
                data = f.read()  # bwrap closes it once the sandbox is set up (EOF also on failure)
            if data:
                child = int(json.loads(data)["child-pid"])
        return proc, child

    # -- ShellSandbox hooks ----------------------------------------------------------------------
    def _start_shell(self, token: str) -> ShellSession:
        proc, child = self._popen(shell_argv(token), as_pid_1=True, info=True, extra_env=SHELL_ENV)
        if child is None:
            err = proc.stderr.read().decode(errors="replace") if proc.wait(timeout=10) is not None else ""
            raise RuntimeError(f"bwrap failed to start the sandbox: {err.strip()[-800:]}")
        self._shell_proc = proc
        self._shell_host_pid = child
        self._namespace = procs.pid_namespace(child)
        return ShellSession(PipeTransport(proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()), token)

    def _stop_shell(self) -> int | None:
        proc, self._shell_proc = self._shell_proc, None
        if proc is None:
            return None
        status = self._res.kill_process(proc)
        if proc in self._res.processes:
            self._res.processes.remove(proc)
        return status

    def _kill_started_since(self, tick: int | None) -> int:
        if self._namespace is None or self._shell_host_pid is None:
            return 0
        return procs.kill_namespace(self._namespace, keep={self._shell_host_pid}, since_tick=tick,
                                    owner=self._shell_host_pid)

    def _signal_shell(self, sig: int) -> None:
        if self._shell_host_pid is not None:
            procs.signal_pids([self._shell_host_pid], sig)

    def _pids_limit_hits(self) -> int:
        return self._res.cgroup.pids_limit_hits() if self._res.cgroup is not None else 0

    def _oom_kills(self) -> int:
        return self._res.cgroup.oom_kills() if self._res.cgroup is not None else 0

    # -- files -----------------------------------------------------------------------------------
    def _host_path(self, path: str) -> Path | None:
        """The host path behind a sandbox path when it lies in a writable mount and has no symlinks; else None."""
        inside = os.path.normpath(path if path.startswith("/") else os.path.join(self.config.workdir, path))
        workdir = os.path.normpath(self.config.workdir)
        for mount, host in ((workdir, self.host_work), ("/tmp", self.host_tmp)):
            if inside == mount or inside.startswith(mount + "/"):
                rel = os.path.relpath(inside, mount)
                target = host if rel == "." else host / rel
                probe = host
                for part in Path(rel).parts if rel != "." else ():
                    probe = probe / part
                    if probe.is_symlink():
                        return None  # resolve it the way the sandbox does, not the host's way
                return target
        return None

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (parents created). Relative paths are under the work dir; other paths go through the sandbox."""
        data = content.encode() if isinstance(content, str) else bytes(content)
        host = self._host_path(path)
        if host is not None and not host.is_dir():
            host.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return
        self._in_sandbox(["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "sh",
                          path], data, f"write {path}")

    def read_file(self, path: str) -> bytes:
        host = self._host_path(path)
        if host is not None and host.is_file():
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                return f.read()
        return self._in_sandbox(["cat", "--", path], b"", f"read {path}")

    def _in_sandbox(self, argv: list[str], stdin: bytes, what: str) -> bytes:
        proc = self.spawn(argv)
        try:
            out, err = proc.communicate(stdin, timeout=self.config.timeout_s)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{what}: timed out") from None
        finally:
            self._forget(proc)
        if proc.returncode != 0:
            if b"No such file" in err:
                raise FileNotFoundError(f"{what}: {err.decode(errors='replace').strip()}")
            raise OSError(f"{what} failed: {err.decode(errors='replace').strip()}")
        return out

    # -- helpers ---------------------------------------------------------------------------------
    def spawn(self, argv: list[str], *, stderr: int | None = subprocess.PIPE) -> subprocess.Popen:
        """Start ``argv`` in a new bwrap with the same mounts, limits (same cgroup) and network policy.

        It gets its own pid namespace (its bwrap is pid 1, it is pid 2, so signals behave normally),
        the work dir as cwd and the config's environment; stdin/stdout (and stderr) are binary pipes.
        Killing the returned process's group kills it; ``close()`` kills it too.
        """
        self._check_open()
        if not argv:
            raise ValueError("spawn needs a non-empty argv")
        proc, _ = self._popen(list(argv), as_pid_1=False, stderr=stderr)
        self._res.processes = [p for p in self._res.processes if p.poll() is None or p is self._shell_proc]
        if proc not in self._res.processes:
            self._res.processes.append(proc)
        return proc

    def _forget(self, proc: subprocess.Popen) -> None:
        self._res.kill_process(proc)
        if proc in self._res.processes:
            self._res.processes.remove(proc)

    def close(self) -> None:
        """Kill every process (shell, helpers), remove the cgroup and the private dirs. Idempotent."""
        self._shell_proc = None
        super().close()
