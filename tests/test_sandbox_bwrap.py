"""The bubblewrap sandbox, for real: isolation, limits, timeouts, adversarial commands, cleanup."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from clawgym.sandbox import SandboxConfig, SandboxUnavailable, make_sandbox, procs
from tests.sandbox_checks import assert_memory_bomb_is_killed
from tests.threads import run_in_threads

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap needs Linux"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed: apt-get install bubblewrap"),
    pytest.mark.timeout(120),
]


@pytest.fixture
def sandbox():
    sb = make_sandbox("bwrap", SandboxConfig(timeout_s=20))
    yield sb
    sb.close()


def ns_processes(sb) -> list[int]:
    return procs.namespace_members(sb._namespace) if sb._namespace else []


@pytest.fixture
def limited():
    """Factory for bwrap sandboxes with cgroup limits (skips where cgroups are not writable); closed after the test."""
    made = []

    def make(**limits):
        made.append(make_sandbox("bwrap", SandboxConfig(**limits)))
        if not made[-1].limits_enforced:
            pytest.skip(f"cgroups not writable here: {made[-1].cgroup_error}")
        return made[-1]

    yield make
    for sb in made:
        sb.close()


def test_auto_is_bwrap_and_basic_run(sandbox):
    assert sandbox.kind == "bwrap"
    auto = make_sandbox("auto")
    try:
        assert auto.kind == "bwrap"
    finally:
        auto.close()
    r = sandbox.run("echo out; echo err >&2; exit_status=5; (exit 42)")
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out, r.truncated) == (42, "out\n", "err\n", False, False)
    assert sandbox.run("false").exit_code == 1
    assert sandbox.run("printf 'no newline'").stdout == "no newline"


def test_cwd_and_env_persist(sandbox):
    assert sandbox.run("pwd").stdout == "/work\n"
    assert sandbox.run("mkdir -p a/b && cd a/b && export GREETING='hi there' && LOCALVAR=7").exit_code == 0
    r = sandbox.run('pwd; echo "$GREETING"; echo "$LOCALVAR"; bash -c \'echo "child:$GREETING"\'')
    assert r.stdout == "/work/a/b\nhi there\n7\nchild:hi there\n"


def test_files_round_trip_and_config_files():
    sb = make_sandbox("bwrap", SandboxConfig(files={"task/input.txt": "seed", "bin.dat": bytes(range(256))}))
    try:
        assert sb.run("cat task/input.txt; wc -c < bin.dat").stdout == "seed256\n"
        sb.write_file("out/new.txt", "from host")
        sb.write_file("/tmp/scratch/x.bin", b"\x00\xff")
        assert sb.run("cat /work/out/new.txt; od -An -tx1 /tmp/scratch/x.bin").stdout == "from host 00 ff\n"
        sb.run("echo -n made-inside > made.txt")
        assert sb.read_file("made.txt") == b"made-inside"
        assert sb.read_file("/work/made.txt") == b"made-inside"
        assert sb.read_file("/etc/hostname") == Path("/etc/hostname").read_bytes()  # read-only host root
        with pytest.raises(FileNotFoundError):
            sb.read_file("missing.txt")
        with pytest.raises(OSError):
            sb.write_file("/etc/clawgym-should-not-exist", "x")
        assert not os.path.exists("/etc/clawgym-should-not-exist")
    finally:
        sb.close()


def test_symlink_in_workdir_cannot_redirect_host_file_io(sandbox, tmp_path):
    outside = Path("/var/tmp") / f"clawgym-victim-{os.getpid()}"
    outside.write_text("original")
    try:
        sandbox.run(f"ln -s {outside} evil && ln -s /var/tmp evildir")
        with pytest.raises(OSError):
            sandbox.write_file("evil", "pwned")  # resolved inside the sandbox, where /var/tmp is read-only
        with pytest.raises(OSError):
            sandbox.write_file("evildir/x", "pwned")
        assert outside.read_text() == "original"
        assert sandbox.read_file("evil") == b"original"  # the sandbox's own view of the link
    finally:
        outside.unlink()


def test_writing_outside_workdir_fails_and_sandbox_keeps_working(sandbox):
    marker = f"clawgym-escape-{os.getpid()}"
    r = sandbox.run(f"touch /etc/{marker}; echo x > /usr/{marker}; mkdir /{marker}; echo x > /root/{marker}; "
                    f"echo x > /sys/fs/cgroup/{marker}; echo 1 > /proc/sys/vm/drop_caches")
    assert r.exit_code != 0
    assert r.stderr.count("Read-only file system") >= 4
    for path in (f"/etc/{marker}", f"/usr/{marker}", f"/{marker}", f"/root/{marker}"):
        assert not os.path.exists(path)
    r = sandbox.run("grep CapEff /proc/self/status; mount -t tmpfs none /mnt 2>&1; echo ok > ok.txt; cat ok.txt")
    assert "CapEff:\t0000000000000000" in r.stdout and "ok" in r.stdout
    assert "permission denied" in r.stdout.lower() or "must be superuser" in r.stdout.lower()


def test_cannot_read_another_sandboxes_files():
    a = make_sandbox("bwrap")
    b = make_sandbox("bwrap")
    try:
        a.write_file("secret.txt", "A-SECRET")
        a.run("echo A-TMP-SECRET > /tmp/secret-tmp")
        r = b.run(f"cat {a.host_work}/secret.txt {a.host_tmp}/secret-tmp /work/secret.txt /tmp/secret-tmp; "
                  f"ls {a.host_dir.parent}; grep -rs A-SECRET /tmp /work /var/tmp | head -1")
        assert "SECRET" not in r.stdout
        assert r.stdout.strip() == ""  # the sandboxes' parent dir is an empty tmpfs inside
        assert "SECRET" not in b.run("ps -ef").stdout
        assert len(b.run("ps -e --no-headers").stdout.splitlines()) <= 3  # only its own processes
    finally:
        a.close()
        b.close()


def test_network_off_by_default_on_when_asked(tcp_server):
    off = make_sandbox("bwrap")
    try:
        r = off.run(tcp_server.probe, timeout=10)
        assert r.exit_code != 0 and "connected" not in r.stdout
        assert "Connection refused" in r.stderr  # its own loopback, nothing listening
        assert "lo" in off.run("ls /sys/class/net").stdout
    finally:
        off.close()
    assert tcp_server.received == []
    on = make_sandbox("bwrap", SandboxConfig(network=True))
    try:
        r = on.run(tcp_server.probe, timeout=10)
        assert r.exit_code == 0 and r.stdout == "connected\n"
    finally:
        on.close()
    assert tcp_server.wait_received() == [b"hello\n"]


def test_timeout_kills_command_keeps_shell_state(sandbox):
    sandbox.run("mkdir -p deep && cd deep && export KEEP=me")
    t0 = time.monotonic()
    r = sandbox.run("echo before; sleep 30; echo after", timeout=0.5)
    assert time.monotonic() - t0 < 5
    assert r.timed_out and r.exit_code == 124
    assert r.stdout == "before\n" and "timed out after 0.5s" in r.stderr
    r = sandbox.run("pwd; echo $KEEP; pgrep -c sleep || true")
    assert r.stdout == "/work/deep\nme\n0\n"
    assert sandbox.restarts == 0


def test_timeout_of_a_builtin_loop_interrupts_the_shell(sandbox):
    sandbox.run("export KEEP=loop; cd /tmp")
    r = sandbox.run("while :; do :; done", timeout=0.5)
    assert r.timed_out and r.exit_code == 124
    assert sandbox.run("echo $KEEP; pwd").stdout == "loop\n/tmp\n"
    assert sandbox.restarts == 0  # SIGUSR1's trap returned from the command; no new shell


def test_timeout_keeps_earlier_background_jobs(sandbox):
    sandbox.run("sleep 300 >/dev/null 2>&1 &")
    time.sleep(0.05)
    sandbox.run("sleep 30", timeout=0.3)
    assert sandbox.run("pgrep -c sleep").stdout == "1\n"


def test_exit_restarts_shell_with_state(sandbox):
    sandbox.run("cd /tmp && export KEEP=after-exit")
    r = sandbox.run("exit 3")
    assert r.exit_code == 3 and "new shell" in r.stderr
    assert sandbox.run("echo $KEEP; pwd").stdout == "after-exit\n/tmp\n"
    assert sandbox.restarts == 1


def test_stdin_is_not_inherited(sandbox):
    t0 = time.monotonic()
    r = sandbox.run("cat; read -r line; echo rc=$?", timeout=5)
    assert r.stdout == "rc=1\n" and not r.timed_out and time.monotonic() - t0 < 2
    assert os.readlink(f"/proc/{sandbox._shell_host_pid}/fd/0").startswith("pipe:")


def test_fork_bomb_is_contained(limited):
    sb = limited(pids_max=64)
    bomb = sb.run(":(){ :|:& };:", timeout=5)
    time.sleep(0.3)
    r = sb.run("ls / | wc -l", timeout=20)
    assert r.exit_code == 0 and int(r.stdout) > 5
    assert "process limit (64)" in bomb.stderr + r.stderr  # caught after the bomb's command or before the next
    alive = [p for p in ns_processes(sb) if not procs._is_zombie(p)]
    assert alive == [sb._shell_host_pid]  # only the shell is left
    assert sb.run("echo fine").stdout == "fine\n"


def test_memory_bomb_is_killed_and_sandbox_survives(limited):
    assert_memory_bomb_is_killed(limited(memory_mb=128), timeout=30)


def test_endless_output_is_capped_with_marker():
    sb = make_sandbox("bwrap", SandboxConfig(output_limit=1000))
    try:
        r = sb.run("seq 1 200000", timeout=20)
        assert r.exit_code == 0 and r.truncated
        assert r.stdout.startswith("1\n2\n3\n") and r.stdout.endswith("199999\n200000\n")
        assert "bytes of output truncated" in r.stdout and len(r.stdout) < 1100
        r = sb.run("yes", timeout=1)
        assert r.timed_out and r.truncated and len(r.stdout) < 1100
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


def test_kill_all_processes_from_inside(sandbox):
    sandbox.run("export KEEP=survivor")
    r = sandbox.run("sleep 100 & kill -9 -1; echo after-kill")
    assert "after-kill" in r.stdout
    assert sandbox.run("echo $KEEP; pgrep -c sleep || true").stdout == "survivor\n0\n"


def test_deleting_its_own_workdir(sandbox):
    sandbox.write_file("keep/me.txt", "x")
    r = sandbox.run("cd /work/keep && rm -rf /work/* /work/.[!.]* /work; ls -A /work | wc -l")
    assert r.stdout.strip() == "0"
    sandbox.write_file("again.txt", "back")
    assert sandbox.run("cd /work && cat again.txt").stdout == "back"


def test_spawn_runs_a_persistent_process_in_the_same_workdir(sandbox):
    sandbox.write_file("shared.txt", "visible")
    proc = sandbox.spawn(["python3", "-u", "-c",
                          "import sys, os\n"
                          "for line in sys.stdin:\n"
                          "    sys.stdout.write(f'{os.getcwd()} {open(line.strip()).read()}\\n')\n"])
    proc.stdin.write(b"shared.txt\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"/work visible\n"
    sandbox.run("echo -n later > later.txt")
    proc.stdin.write(b"later.txt\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"/work later\n"
    net = sandbox.spawn(["cat", "/proc/net/dev"]).communicate()[0].decode()
    assert "eth" not in net and "lo:" in net  # its own network namespace too
    sandbox.close()
    assert proc.wait(timeout=5) is not None


def test_close_is_idempotent_and_leaves_nothing(sandbox):
    sandbox.run("sleep 300 >/dev/null 2>&1 & cd /tmp")
    helper = sandbox.spawn(["sleep", "300"])
    shell = sandbox._shell_host_pid
    cgroups = list(sandbox._res.cgroup.dirs) if sandbox._res.cgroup else []
    host_dir = sandbox.host_dir
    assert os.path.exists(f"/proc/{shell}") and host_dir.exists()
    sandbox.close()
    sandbox.close()
    assert helper.poll() is not None
    assert not os.path.exists(f"/proc/{shell}")
    assert procs.namespace_members(sandbox._namespace) == []
    assert not host_dir.exists()
    assert all(not os.path.exists(d) for d in cgroups)
    with pytest.raises(RuntimeError):
        sandbox.run("true")


def test_abandoned_sandbox_is_cleaned_by_the_garbage_collector():
    import gc

    sb = make_sandbox("bwrap")
    shell, host_dir = sb._shell_host_pid, sb.host_dir
    del sb
    gc.collect()
    assert not os.path.exists(f"/proc/{shell}") and not host_dir.exists()


def test_bad_input_gives_clear_errors(sandbox, monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="NUL"):
        sandbox.run("echo a\0b")
    with pytest.raises(ValueError, match="timeout"):
        sandbox.run("true", timeout=0)
    with pytest.raises(ValueError, match="unknown sandbox kind"):
        make_sandbox("firecracker")
    with pytest.raises(ValueError, match="workdir"):
        make_sandbox("bwrap", SandboxConfig(workdir="relative"))
    assert sandbox.run("echo still fine").stdout == "still fine\n"
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without bubblewrap
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        make_sandbox("bwrap")


def test_workdir_that_does_not_exist_on_the_host():
    sb = make_sandbox("bwrap", SandboxConfig(workdir="/testbed/repo", files={"a.py": "print(1)"}))
    try:
        assert sb.run("pwd; python3 a.py").stdout == "/testbed/repo\n1\n"
        assert not os.path.exists("/testbed")
    finally:
        sb.close()


def test_concurrent_sandboxes_do_not_interfere():
    results: dict[int, list[str]] = {}

    def worker(i: int) -> None:
        with make_sandbox("bwrap") as sb:
            sb.write_file("id.txt", f"sandbox-{i}")
            sb.run(f"export ME={i}; cd /tmp; echo {i} > mine")
            results[i] = [sb.run("echo $ME $(cat /tmp/mine) $(cat /work/id.txt); "
                                 "find /tmp -maxdepth 1 -type f | wc -l").stdout
                          for _ in range(5)]

    run_in_threads(worker, 16, join_s=120)
    for i in range(16):
        assert results[i] == [f"{i} {i} sandbox-{i}\n1\n"] * 5


def test_without_writable_cgroups_it_degrades_and_says_so(tmp_path):
    """Run a sandbox where /sys/fs/cgroup is shadowed by a tmpfs (a private mount namespace)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to hide the cgroup fs")
    script = tmp_path / "degraded.py"
    script.write_text(
        "from clawgym.sandbox import make_sandbox\n"
        "sb = make_sandbox('bwrap')\n"
        "print(sb.limits_enforced, bool(sb.cgroup_error), sb.run('echo works').stdout.strip())\n"
        "sb.close()\n")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f"mount -t tmpfs none /sys/fs/cgroup && exec {sys.executable} {script}"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False True works"
    assert "without memory/pids limits" in done.stderr


def test_trivial_command_latency(sandbox):
    times = []
    for _ in range(100):
        t0 = time.perf_counter()
        sandbox.run("true")
        times.append(time.perf_counter() - t0)
    times.sort()
    assert times[50] < 0.05  # generous: a pipe round trip, no process start (well under 2 ms when idle)


def _child_script(tmp_path: Path, tail: str) -> Path:
    script = tmp_path / "child.py"
    script.write_text(
        "import os, sys, time\n"
        "from clawgym.sandbox import make_sandbox\n"
        "sb = make_sandbox('bwrap')\n"
        "sb.run('sleep 300 >/dev/null 2>&1 &')\n"
        "print(sb._shell_host_pid, sb.host_dir, flush=True)\n" + tail)
    return script


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}") or procs._is_zombie(pid):
            return True
        time.sleep(0.05)
    return False


def test_interpreter_exit_without_close_cleans_up(tmp_path):
    script = _child_script(tmp_path, "")  # never closes: atexit (weakref.finalize) must
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    pid, host_dir = done.stdout.split()
    assert _gone(int(pid)) and not Path(host_dir).exists()


def test_killed_interpreter_leaves_no_running_sandbox(tmp_path):
    script = _child_script(tmp_path, "time.sleep(300)\n")
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).parents[1])
    pid, host_dir = child.stdout.readline().split()
    child.kill()  # no finalizer runs: the shell sees EOF on its stdin and its namespace ends
    child.wait()
    assert _gone(int(pid))
    cgroups = [p for p in Path("/sys/fs/cgroup").glob(f"*/clawgym/{Path(host_dir).name}")]
    assert Path(host_dir).exists()  # left behind by the killed process...
    make_sandbox("bwrap").close()  # ...until the next sandbox sweeps what dead owners left
    assert not Path(host_dir).exists()
    assert all(not c.exists() for c in cgroups)


def test_local_backend_is_opt_in_and_loudly_unsandboxed(caplog):
    """The debugging backend shares the protocol (state, timeouts) but says it isolates nothing."""
    with caplog.at_level("WARNING", logger="clawgym.sandbox.local"):
        sb = make_sandbox("local", SandboxConfig(files={"in.txt": "x"}))
    try:
        assert "NOT a sandbox" in caplog.text and sb.sandboxed is False and sb.limits_enforced is False
        sb.run("export KEEP=local; cd /")
        r = sb.run("sleep 30", timeout=0.3)
        assert r.timed_out and sb.run("echo $KEEP; pwd").stdout == "local\n/\n"
        assert sb.read_file("in.txt") == b"x"
        host_dir = sb.host_dir
    finally:
        sb.close()
    assert not os.path.exists(host_dir)


def test_clawgym_package_and_extra_paths_are_hidden(tmp_path):
    """Bundled task data (check scripts, oracle solutions, hidden tests) is unreadable from inside."""
    import clawgym
    from clawgym.sandbox import SandboxConfig, make_sandbox

    package = Path(clawgym.__file__).resolve().parent
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "answer.txt").write_text("42")
    box = make_sandbox("bwrap", SandboxConfig(hidden_paths=[str(secret)]))
    try:
        listing = box.run(f"ls -A {package} | wc -l; cat {package}/envs/terminal/tasks/*.jsonl 2>&1 | head -c 100")
        assert listing.stdout.split("\n")[0].strip() == "0", listing.output
        assert box.run(f"cat {secret}/answer.txt").exit_code != 0
        assert box.run("python3 -c 'print(7)'").stdout.strip() == "7"  # the host's python still works
    finally:
        box.close()


def fake_install(base: Path, layout: str) -> tuple[Path, Path, Path]:
    """A clawgym install laid out as ``layout`` under ``base``: (package dir, venv, site-packages). Every
    file of clawgym's carries SECRET; the venv's other files carry VISIBLE."""
    venv = base / ("checkout/.venv" if layout.startswith("editable") else "venv")
    site = venv / "lib" / "python3" / "site-packages"
    (site / "other").mkdir(parents=True)
    (site / "other" / "ok.py").write_text("VISIBLE\n")
    (site / "clawgym-0.1.0.dist-info").mkdir()
    (site / "clawgym-0.1.0.dist-info" / "METADATA").write_text("SECRET readme\n")
    if layout.startswith("editable"):
        package = base / "checkout" / "clawgym"
        (base / "checkout" / "pyproject.toml").write_text("SECRET\n")
        (base / "checkout" / "scripts").mkdir()
        (base / "checkout" / "scripts" / "gen_terminal_tasks.py").write_text("SECRET check\n")
    else:
        package = site / "clawgym"
    (package / "envs").mkdir(parents=True)
    (package / "envs" / "tasks.jsonl").write_text("SECRET task\n")
    return package, venv, site


@pytest.mark.parametrize("layout, where", [("editable", "/tmp"), ("editable", "home"), ("installed", "/tmp"),
                                           ("installed", "home")])
def test_no_install_layout_shows_the_agent_clawgym(layout, where, tmp_path, monkeypatch):
    """Wherever the checkout or the venv lives, the agent sees none of clawgym's files (tasks, checks,
    the scripts that make them, install records), and the venv that runs clawgym stays usable."""
    from clawgym.sandbox import bwrap

    base = tmp_path if where == "/tmp" else Path(tempfile.mkdtemp(prefix="clawgym-layout-", dir=Path.home()))
    try:
        package, venv, site = fake_install(base, f"{layout}-{where}")
        monkeypatch.setattr(bwrap, "PACKAGE_DIR", str(package))
        monkeypatch.setattr(sys, "prefix", str(venv))
        monkeypatch.setattr(sys, "path", [str(site), *sys.path])
        box = make_sandbox("bwrap")
        try:
            found = box.run(f"grep -rl SECRET {base} 2>&1; cat {site}/other/ok.py").stdout
        finally:
            box.close()
        assert found == "VISIBLE\n"
    finally:
        if where == "home":
            shutil.rmtree(base)


def test_the_real_install_is_hidden_and_its_python_still_runs():
    """This checkout's own install, wherever it lives: no package, no install record, no source checkout."""
    from clawgym.sandbox import bwrap

    paths = bwrap.install_paths()
    assert bwrap.PACKAGE_DIR in paths
    box = make_sandbox("bwrap", SandboxConfig(workdir="/app"))  # a work dir that covers no checkout
    try:
        for path in paths:  # empty, but for the way to the venv where the venv lives in the checkout
            listing = box.run(f"ls -A {path}").stdout.split()
            inner = os.path.relpath(sys.prefix, path).split("/")[0]
            assert listing == ([inner] if sys.prefix.startswith(path + "/") else []), (path, listing)
        assert box.run(f"{sys.executable} -c 'import clawgym'").exit_code != 0
        assert box.run(f"{sys.executable} -c 'import gymnasium; print(7)'").stdout.strip() == "7"
    finally:
        box.close()
