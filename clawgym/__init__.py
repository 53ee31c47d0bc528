"""clawgym: every agent setting as a Gymnasium environment.

``import clawgym`` registers the ids below, so ``gym.make("clawgym/ToolCall-v0")`` works. Entry points
are strings, so importing clawgym never imports a browser driver or a Docker client.
"""

import gymnasium

__version__ = "0.1.0"

# id -> (entry point, default kwargs). Every id here is walked by tests/test_registry.py.
ENVS: dict[str, tuple[str, dict]] = {
    "clawgym/GUI-v0": ("clawgym.envs.gui.env:GUIEnv", {}),
    "clawgym/MiniWoB-v0": ("clawgym.envs.gui.miniwob:MiniWoBEnv", {}),
    "clawgym/OpenClawChat-v0": ("clawgym.envs.openclaw_chat.live:make_chat_env", {}),
    "clawgym/ToolCall-v0": ("clawgym.envs.toolcall.env:ToolCallEnv", {}),
    "clawgym/BFCL-v0": ("clawgym.envs.toolcall.bfcl_env:BFCLEnv", {}),
    "clawgym/Terminal-v0": ("clawgym.envs.terminal.env:TerminalEnv", {}),
    "clawgym/SWE-v0": ("clawgym.envs.swe.env:SWEEnv", {}),
}


def _register() -> None:
    for env_id, (entry_point, kwargs) in ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))


_register()
