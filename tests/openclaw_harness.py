"""Install and run the real OpenClaw client (npm ``openclaw``) against a local OpenAI-compatible server.

Node >= 24 comes from the npm package ``node@24`` (it ships a binary); both land in a cache
directory (``CLAWGYM_OPENCLAW_CACHE``, default ``~/.cache/clawgym/openclaw``) so a second run
costs nothing. OpenClaw's own gateway is started once per test session and driven over its
``/v1/chat/completions`` HTTP endpoint (the fast route: ~0.4 s a turn instead of ~15 s per CLI call).
Everything it writes (state, logs, locks, compile cache) stays under one temp directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx

OPENCLAW_VERSION = "2026.9.6"
CACHE = Path(os.environ.get("CLAWGYM_OPENCLAW_CACHE", Path.home() / ".cache" / "clawgym" / "openclaw"))
GATEWAY_TOKEN = "clawgym-test-gateway-token"


class OpenClawUnavailable(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_bin_dir() -> Path:
    return CACHE / "nodebin" / "node_modules" / "node" / "bin"


def openclaw_bin() -> Path:
    return CACHE / "oc" / "node_modules" / ".bin" / "openclaw"


def install() -> Path:
    """Install node@24 and openclaw into the cache (idempotent); return the openclaw executable."""
    if openclaw_bin().exists() and (node_bin_dir() / "node").exists():
        return openclaw_bin()
    npm = shutil.which("npm")
    if npm is None:
        raise OpenClawUnavailable("npm is not installed (apt-get install npm)")
    CACHE.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE / "nodebin"), "node@24"],
                   check=True, capture_output=True, env=env, timeout=600)
    env["PATH"] = f"{node_bin_dir()}:{env['PATH']}"
    subprocess.run([str(node_bin_dir() / "npm") if (node_bin_dir() / "npm").exists() else npm,
                    "install", "--no-audit", "--no-fund", "--prefix", str(CACHE / "oc"),
                    f"openclaw@{OPENCLAW_VERSION}"],
                   check=True, capture_output=True, env=env, timeout=900)
    if not openclaw_bin().exists():
        raise OpenClawUnavailable("npm install finished but the openclaw binary is missing")
    return openclaw_bin()


def adapt_config(template: dict, root: Path, base_url: str, api_key: str, port: int) -> dict:
    """A user's openclaw.json (e.g. the README's) pointed at this test's server, port, token and workspace."""
    config = json.loads(json.dumps(template))
    for provider in config["models"]["providers"].values():
        provider["baseUrl"], provider["apiKey"] = base_url, api_key
    config.setdefault("agents", {}).setdefault("defaults", {})["workspace"] = str(root / "work")
    config["gateway"].update({"port": port, "auth": {"mode": "token", "token": GATEWAY_TOKEN}})
    return config


def readme_config(readme: Path = Path(__file__).resolve().parent.parent / "README.md") -> dict:
    """The openclaw.json snippet of the README's "Recipe 3: use it with OpenClaw" (between openclaw-config markers)."""
    text = readme.read_text()
    start = text.index("<!-- openclaw-config -->")
    block = text[start:text.index("<!-- /openclaw-config -->")]
    return json.loads(block[block.index("```json") + 7:block.rindex("```")])


def default_profile_config() -> dict:
    """The README's openclaw.json without its trimming: OpenClaw's default tool profile and bootstrap files
    (~12.5k-token requests, 12 tools), what a user who skips the README's two trimming lines sends."""
    config = readme_config()
    config.pop("tools", None)
    config["agents"]["defaults"].pop("skipBootstrap", None)
    return config


def write_config(root: Path, base_url: str, api_key: str, port: int, prompt_cache_key: bool,
                 template: dict | None = None) -> Path:
    """openclaw.json: ``template`` adapted, or a minimal one (one provider, the HTTP endpoint on)."""
    workspace = root / "work"
    workspace.mkdir(parents=True, exist_ok=True)
    if template is not None:
        path = root / "openclaw.json"
        path.write_text(json.dumps(adapt_config(template, root, base_url, api_key, port), indent=2))
        return path
    config = {
        "models": {"mode": "replace", "providers": {"clawgym": {
            "baseUrl": base_url, "apiKey": api_key, "api": "openai-completions",
            "models": [{"id": "clawgym-policy", "name": "clawgym policy", "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 128000, "maxTokens": 512,
                        "compat": {"supportsPromptCacheKey": prompt_cache_key}}]}}},
        "agents": {"defaults": {"model": {"primary": "clawgym/clawgym-policy"}, "workspace": str(workspace)}},
        "gateway": {"mode": "local", "port": port, "bind": "loopback",
                    "auth": {"mode": "token", "token": GATEWAY_TOKEN},
                    "http": {"endpoints": {"chatCompletions": {"enabled": True}}}},
    }
    path = root / "openclaw.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextmanager
def openclaw_gateway(root: Path, base_url: str, api_key: str, prompt_cache_key: bool = True,
                     start_timeout_s: float = 120.0, template: dict | None = None,
                     timeout_s: float = 180.0) -> Iterator["OpenClawGateway"]:
    """Run ``openclaw gateway run`` in the background until the context exits."""
    binary = install()
    port = free_port()
    config = write_config(root, base_url, api_key, port, prompt_cache_key, template)
    env = dict(os.environ)
    env.update({
        "PATH": f"{node_bin_dir()}:{env['PATH']}",
        "HOME": str(root / "home"),
        "OPENCLAW_STATE_DIR": str(root / "state"),
        "OPENCLAW_CONFIG_PATH": str(config),
        "TMPDIR": str(root / "tmp"),
        "NODE_COMPILE_CACHE": str(CACHE / "compile-cache"),
    })
    for name in ("home", "state", "tmp"):
        (root / name).mkdir(parents=True, exist_ok=True)
    log = (root / "gateway.log").open("wb")
    process = subprocess.Popen([str(binary), "gateway", "run"], cwd=root / "work", env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    gateway = OpenClawGateway(f"http://127.0.0.1:{port}", root / "gateway.log", timeout_s)
    try:
        gateway.wait_ready(process, start_timeout_s)
        yield gateway
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


class OpenClawGateway:
    def __init__(self, url: str, log_path: Path, timeout_s: float = 180.0) -> None:
        self.url = url
        self.log_path = log_path
        self.client = httpx.Client(base_url=url, timeout=timeout_s,
                                   headers={"Authorization": f"Bearer {GATEWAY_TOKEN}"})

    def wait_ready(self, process: subprocess.Popen, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise OpenClawUnavailable(f"openclaw gateway exited: {self.log_path.read_text()[-2000:]}")
            try:
                if self.client.get("/v1/models").status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise OpenClawUnavailable(f"openclaw gateway not ready after {timeout_s}s: {self.log_path.read_text()[-2000:]}")

    def chat(self, session_key: str, text: str) -> str:
        """One user turn in an OpenClaw session; returns OpenClaw's final reply text."""
        response = self.client.post("/v1/chat/completions", headers={"x-openclaw-session-key": session_key},
                                    json={"model": "openclaw", "messages": [{"role": "user", "content": text}]})
        response.raise_for_status()
        return response.json()["choices"][0]["message"]["content"]
