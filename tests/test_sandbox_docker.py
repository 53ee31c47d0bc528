"""The Docker sandbox on a real, private Docker Engine (tests/docker_engine.py starts one)."""

from __future__ import annotations

import os
import time

import pytest

from clawgym.sandbox import SandboxConfig, SandboxUnavailable, make_sandbox, procs
from tests.sandbox_checks import assert_memory_bomb_is_killed
from tests.threads import run_in_threads

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


@pytest.fixture
def new(docker_engine):
    """Factory for sandboxes on the private engine; all are closed after the test."""
    made = []

    def make(**config):
        config.setdefault("image", docker_engine.image)
        sb = make_sandbox("docker", SandboxConfig(**config), base_url=docker_engine.base_url)
        made.append(sb)
        return sb

    yield make
    for sb in made:
        sb.close()


def test_run_persists_cwd_env_and_reports_exit_codes(new):
    sb = new(files={"task/in.txt": "seed"})
    assert sb.kind == "docker" and sb.local
    r = sb.run("cat task/in.txt; echo err >&2; (exit 42)")
    assert (r.exit_code, r.stdout, r.stderr) == (42, "seed", "err\n")
    sb.run("mkdir -p a/b && cd a/b && export GREETING='hi there'")
    assert sb.run(
        'pwd; echo "$GREETING"; bash -c \'echo "child:$GREETING"\'').stdout == "/work/a/b\nhi there\nchild:hi there\n"
    t0 = time.monotonic()
    assert sb.run("cat; read -r x; echo rc=$?").stdout == "rc=1\n"  # stdin is /dev/null, not inherited
    assert time.monotonic() - t0 < 2


def test_files_round_trip(new):
    sb = new()
    sb.write_file("/opt/deep/dir/x.bin", bytes(range(256)))
    sb.write_file("rel.txt", "relative")
    assert sb.run("wc -c < /opt/deep/dir/x.bin; cat /work/rel.txt").stdout == "256\nrelative"
    sb.run("echo -n inside > made.txt")
    assert sb.read_file("made.txt") == b"inside"
    with pytest.raises(FileNotFoundError):
        sb.read_file("missing.txt")
    with pytest.raises(IsADirectoryError):
        sb.read_file("/opt")


def test_writes_outside_workdir_stay_in_the_container(new):
    a, b = new(), new()
    marker = f"clawgym-docker-{os.getpid()}"
    a.run(f"echo A-SECRET > /etc/{marker}; echo A-SECRET > /work/secret; echo A-SECRET > /tmp/secret; "
          "(sleep 4242 >/dev/null 2>&1 &)")
    assert a.run(f"cat /etc/{marker}").stdout == "A-SECRET\n"  # the container's own layer
    assert not os.path.exists(f"/etc/{marker}")  # never the host
    r = b.run(f"cat /etc/{marker} /work/secret /tmp/secret; grep -rs A-SECRET /etc /work /tmp | head -1; ps -ef")
    assert "SECRET" not in r.stdout
    assert "4242" not in r.stdout and "4242" in a.run("ps -ef").stdout  # only its own processes are visible


def test_network_none_by_default_host_when_asked(new, tcp_server):
    off = new()
    r = off.run(tcp_server.probe, timeout=10)
    assert r.exit_code != 0 and "connected" not in r.stdout
    assert off.run("ls /sys/class/net").stdout.split() == ["lo"]
    assert tcp_server.received == []
    on = new(network=True)
    assert on.run(tcp_server.probe, timeout=10).stdout == "connected\n"
    assert tcp_server.wait_received() == [b"hello\n"]


def test_timeout_kills_command_keeps_state(new):
    sb = new()
    sb.run("mkdir -p deep && cd deep && export KEEP=me && (sleep 300 >/dev/null 2>&1 &)")
    t0 = time.monotonic()
    r = sb.run("echo before; sleep 30; echo after", timeout=0.5)
    assert time.monotonic() - t0 < 5
    assert r.timed_out and r.exit_code == 124 and r.stdout == "before\n"
    assert sb.run("pwd; echo $KEEP; pgrep -fc 'sleep 300'").stdout == "/work/deep\nme\n1\n"  # the earlier job lives
    r = sb.run("while :; do :; done", timeout=0.5)
    assert r.timed_out and sb.run("echo $KEEP").stdout == "me\n"


def test_fork_bomb_is_contained(new):
    sb = new(pids_max=64)
    sb.run("export KEEP=bomb; cd /tmp")
    bomb = sb.run(":(){ :|:& };:", timeout=5)
    time.sleep(0.5)
    r = sb.run("ls / | wc -l", timeout=30)
    assert r.exit_code == 0 and int(r.stdout) > 5
    assert "process limit (64)" in bomb.stderr + r.stderr  # caught after the bomb's command or before the next
    r = sb.run("echo $KEEP; pwd; ps -e --no-headers | wc -l")
    assert r.stdout.split()[:2] == ["bomb", "/tmp"] and int(r.stdout.split()[2]) <= 5


def test_memory_bomb_is_killed_and_sandbox_survives(new):
    assert_memory_bomb_is_killed(new(memory_mb=128), timeout=60)


def test_endless_output_is_capped(new):
    sb = new(output_limit=1000)
    r = sb.run("seq 1 200000")
    assert r.truncated and r.stdout.startswith("1\n2\n") and r.stdout.endswith("200000\n")
    assert "bytes of output truncated" in r.stdout and len(r.stdout) < 1100
    r = sb.run("yes", timeout=1)
    assert r.timed_out and r.truncated
    assert sb.run("echo after").stdout == "after\n"


def test_kill_all_and_deleting_workdir(new):
    sb = new()
    sb.run("export KEEP=survivor")
    assert "after-kill" in sb.run("sleep 100 & kill -9 -1; echo after-kill").stdout
    assert sb.run("echo $KEEP").stdout == "survivor\n"
    sb.run("cd /work && rm -rf /work")
    sb.write_file("again.txt", "back")
    assert sb.run("cd /work && cat again.txt").stdout == "back"


def test_spawn_in_the_same_container(new):
    sb = new()
    sb.write_file("shared.txt", "visible")
    proc = sb.spawn(["python3", "-u", "-c",
                     "import sys, os\nfor line in sys.stdin:\n    print(os.getcwd(), "
                     "open(line.strip()).read(), flush=True)\n"])
    proc.stdin.write(b"shared.txt\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"/work visible\n"
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0


def test_close_removes_container_and_processes(new, docker_engine):
    sb = new()
    sb.run("sleep 300 >/dev/null 2>&1 &")
    cid, init, shell = sb.container.id, sb.init_pid, sb._shell_host_pid
    assert os.path.exists(f"/proc/{shell}")
    sb.close()
    sb.close()
    client = docker_engine.client()
    assert [c for c in client.containers.list(all=True) if c.id == cid] == []
    deadline = time.monotonic() + 5  # containerd reaps the killed processes asynchronously
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") and not procs._is_zombie(p)
                                              for p in (init, shell)):
        time.sleep(0.05)
    for pid in (init, shell):
        assert not os.path.exists(f"/proc/{pid}") or procs._is_zombie(pid)
    with pytest.raises(RuntimeError):
        sb.run("true")


def test_concurrent_sandboxes(new):
    results = {}

    def worker(i: int) -> None:
        sb = new()
        sb.run(f"export ME={i}; echo {i} > /tmp/mine")
        results[i] = [sb.run("echo $ME $(cat /tmp/mine)").stdout for _ in range(5)]

    run_in_threads(worker, 8, join_s=240)
    assert results == {i: [f"{i} {i}\n"] * 5 for i in range(8)}


def test_unavailable_engine_or_image_says_why(docker_engine, tmp_path):
    with pytest.raises(SandboxUnavailable, match="not on the engine"):
        make_sandbox("docker", SandboxConfig(image="clawgym/does-not-exist:1"), base_url=docker_engine.base_url)
    with pytest.raises(SandboxUnavailable, match="no Docker Engine"):
        make_sandbox("docker", SandboxConfig(), base_url=f"unix://{tmp_path}/nothing.sock")


def test_remote_engine_paths(new):
    """Where the engine's processes are not in this host's /proc, timeouts go through one-off execs."""
    sb = new()
    sb.local, sb._shell_host_pid = False, None  # what a remote engine looks like to the sandbox
    sb.run("export KEEP=remote; (sleep 300 >/dev/null 2>&1 &)")
    r = sb.run("echo before; sleep 30; echo after", timeout=0.5)
    assert r.timed_out and r.stdout == "before\n"
    assert sb.run("echo $KEEP; pgrep -fc 'sleep 30' || true").stdout == "remote\n0\n"  # remote kills every job
    assert sb.run("while :; do :; done", timeout=0.5).timed_out
    assert sb.run("echo $KEEP").stdout == "remote\n" and sb.restarts == 0
