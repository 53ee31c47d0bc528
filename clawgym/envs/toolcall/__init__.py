"""The tool-call setting.

ToolCall-v0: verifiable computation tasks solved with python / calculator tools (ReTool-style).
BFCL-v0 (``bfcl_env``): the Berkeley Function Calling Leaderboard v4 from ``bfcl-eval``; not imported
here, so ToolCall-v0 works without that package.
"""

from clawgym.envs.toolcall.env import ToolCallEnv, toolcall_record

__all__ = ["ToolCallEnv", "toolcall_record"]
