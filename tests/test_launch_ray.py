"""``ray.address``: the Ray rollout executor joins an existing cluster (``ray start --head`` style).

The config path and its errors are checked without Ray; one slow test starts a real head on 127.0.0.1
(``ray start --head --block``, its own process, stopped by its id) and runs episodes through it with the
options the builder derives from the config, from two pools at once as the training loop does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from clawgym.rl.launch import ConfigError, check_config, load_config, plan
from clawgym.rl.launch.build import executor_options

REPO = Path(__file__).resolve().parents[1]
CHAT = REPO / "clawgym" / "launchers" / "chat.yaml"


def test_ray_address_reaches_the_executor_and_the_plan():
    config = load_config(CHAT, ["rollout.executor=ray", "ray.address=127.0.0.1:6379"])
    assert executor_options(config) == {"address": "127.0.0.1:6379", "num_cpus": None}
    assert "Ray cluster at 127.0.0.1:6379" in check_config(CHAT, ["rollout.executor=ray", "ray.address=127.0.0.1:6379"])
    private = load_config(CHAT, ["rollout.executor=ray", "ray.num_cpus=2"])
    assert executor_options(private) == {"address": None, "num_cpus": 2}
    assert "private Ray instance on this machine (2 CPUs)" in "\n".join(plan(private).notes)
    assert executor_options(load_config(CHAT)) is None  # in-process executors take no options


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["ray.address=auto"], "rollout.executor is 'local': set rollout.executor=ray"),
        (["rollout.executor=ray", "ray.address=auto", "ray.num_cpus=4"], "remove ray.num_cpus"),
        (["rollout.executor=ray", "ray.address= "], "ray.address is empty"),
        (["rollout.executor=ray", "ray.nope=1"], "valid keys under ray: address, num_cpus"),
    ],
)
def test_ray_section_errors_say_what_to_change(overrides, message):
    with pytest.raises(ConfigError, match=message):
        check_config(CHAT, overrides)


def test_multi_node_partition_needs_the_cluster_address():
    gpu = ["gpu.enabled=true", "judge.type=prm,hint", "gpu.backend=megatron+sglang", "gpu.nodes=2",
           "gpu.gpus_per_node=1", "rollout.executor=ray"]
    with pytest.raises(ConfigError, match="ray start --head --port 6379 .* set ray.address=NODE0:6379"):
        check_config(CHAT, gpu)
    text = check_config(CHAT, [*gpu, "ray.address=node0:6379"])
    assert "placement: multi-node" in text and "node1:gpu0" in text and "Ray cluster at node0:6379" in text
    # and LoRA on the megatron trainer is no longer refused
    assert "megatron-core trainer, TP=1 PP=1 DP=1, LoRA r=16" in text


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.mark.slow
def test_rollouts_run_on_an_existing_ray_head():
    pytest.importorskip("ray")
    import ray

    from clawgym.inference.scripted import ScriptedPolicy
    from clawgym.rl.rollout import RolloutPool, make_groups
    from tests.test_rollout import ENV_ID, AdderEnv, adder_responder

    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.skip("the ray CLI is not installed next to this python")
    port, client, agent, metrics = _free_ports(4)
    temp = tempfile.mkdtemp(prefix="rh", dir="/tmp")  # short: Ray's socket paths must stay under 107 bytes
    head = subprocess.Popen(
        [str(ray_bin), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
         "--ray-client-server-port", str(client), "--dashboard-agent-listen-port", str(agent),
         "--metrics-export-port", str(metrics), "--num-cpus", "1", "--include-dashboard", "false",
         "--disable-usage-stats", "--temp-dir", temp],
        env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        config = load_config(CHAT, ["rollout.executor=ray", f"ray.address=127.0.0.1:{port}"])
        options = executor_options(config)

        async def play():
            # two pools, as the training loop makes (one per producer): the head's one CPU is taken by the first
            def make_pool():
                return RolloutPool(AdderEnv, ScriptedPolicy(adder_responder), num_workers=2, executor="ray",
                                   env_name=ENV_ID, executor_options=options)

            first, second = make_pool(), make_pool()
            deadline = time.monotonic() + 120
            while True:  # the head takes a few seconds to accept drivers
                try:
                    await first.start()
                    break
                except (ConnectionError, RuntimeError):
                    if time.monotonic() > deadline or head.poll() is not None:
                        raise
                    ray.shutdown()
                    await asyncio.sleep(2)
            await asyncio.wait_for(second.start(), 120)  # placed although no CPU is free (shares them)
            try:
                joined = ray.get_runtime_context().gcs_address, sum(n["Alive"] for n in ray.nodes())
                both = await asyncio.gather(first.run(make_groups(["add-1"], group_size=2, seed=3)),
                                            second.run(make_groups(["add-2"], group_size=2, seed=4)))
                await first.close()  # the first pool out must not disconnect the second
                after = await second.run(make_groups(["add-1"], group_size=2, seed=5))
                return both[0] + both[1] + after, joined
            finally:
                await first.close()
                await second.close()

        trajectories, (gcs, alive) = asyncio.run(play())
        assert gcs.endswith(f":{port}") and alive == 1  # the head we started, not a private instance
        assert len(trajectories) == 6 and all(t.success for t in trajectories), [t.error for t in trajectories]
        assert not ray.is_initialized()  # the executor disconnects; the cluster stays up
        assert head.poll() is None, "closing the executor must not stop the cluster"
    finally:
        os.killpg(head.pid, signal.SIGTERM)  # the session of the head we started, by its id
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)
