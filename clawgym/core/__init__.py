"""The contract every setting shares. Imports nothing from the rest of clawgym."""

from clawgym.core.env import AgentEnv, EpisodeOptions, EpisodeOver, format_transcript
from clawgym.core.messages import InvalidAction, Message, ToolCall, parse_action, text_of
from clawgym.core.spaces import AssistantMessage, Messages
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import FunctionTool, SubmitTool, Tool, ToolError, ToolResult

__all__ = [
    "AgentEnv", "AssistantMessage", "EpisodeOptions", "EpisodeOver", "FunctionTool",
    "InvalidAction", "Message", "Messages",
    "SubmitTool", "Task", "TaskSet", "Tool", "ToolCall", "ToolError", "ToolResult", "format_transcript",
    "parse_action", "text_of",
]
