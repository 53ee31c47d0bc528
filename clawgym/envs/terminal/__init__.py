"""Terminal-v0: shell tasks in a sandbox, scored by hidden check scripts; terminal-bench and Harbor task dirs."""

from clawgym.envs.terminal.env import BashTool, TerminalEnv
from clawgym.envs.terminal.harbor import load_harbor
from clawgym.envs.terminal.taskset import bundled_tasks, load_terminal_tasks
from clawgym.envs.terminal.tbench import load_terminal_bench

__all__ = ["BashTool", "TerminalEnv", "bundled_tasks", "load_harbor", "load_terminal_bench", "load_terminal_tasks"]
