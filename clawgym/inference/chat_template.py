"""Messages + tools -> prompt token ids, for every in-process model, in one place.

Chat templates differ in whether they render ``tools``. Qwen2.5/Hermes-style templates do; SmolLM2's
does not (it silently drops them, and crashes on ``content: None``). :func:`supports_tools` checks a
tokenizer once by rendering a marker tool. For templates without tool support,
:func:`fallback_messages` rewrites the conversation into plain messages every template can render:

- the tool schemas go into the system prompt, with the ``<tool_call>{"name", "arguments"}</tool_call>``
  convention that :func:`clawgym.core.messages.parse_text_tool_calls` reads back;
- an assistant message's structured ``tool_calls`` become ``<tool_call>`` blocks in its text;
- ``role: "tool"`` results become one user message of ``<tool_response>`` blocks (consecutive results
  are merged), since many templates accept only system/user/assistant.

Tokenizers without any chat template get plain ChatML.
"""

from __future__ import annotations

import json
from typing import Any

from clawgym.core.messages import Message, text_of

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_MARKER = "clawgym_marker_tool_7f3a"

TOOLS_PREAMBLE = (
    "# Tools\n\nYou can call the functions described below. Their JSON schemas are listed inside <tools></tools>:\n"
    "<tools>\n{tools}\n</tools>\n\n"
    "To call a function, write one JSON object per call inside <tool_call></tool_call> tags, like this:\n"
    '<tool_call>\n{{"name": "<function name>", "arguments": {{<arguments as a JSON object>}}}}\n</tool_call>\n'
    "Function results come back inside <tool_response></tool_response> tags. "
    "Answer without any <tool_call> when you are done."
)


def _plain_arguments(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call whose ``arguments`` is the object the model wrote, not OpenAI's JSON string of it."""
    function = dict(call.get("function", call))
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass  # render exactly what was sent
    return {**call, "function": function} if "function" in call else function


def template_messages(messages: list[Message]) -> list[Message]:
    """Messages as chat templates expect them: string content, tool-call arguments as objects.

    OpenAI clients (OpenClaw among them) send content as a list of parts, or None next to tool calls;
    Qwen's template concatenates ``content`` as a string and renders ``arguments | tojson``, which
    would quote OpenAI's JSON-string arguments a second time.
    """
    out = []
    for message in messages:
        rendered = {**message, "content": text_of(message)}
        if message.get("tool_calls"):
            rendered["tool_calls"] = [_plain_arguments(call) for call in message["tool_calls"]]
        out.append(rendered)
    return out


def _render(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]] | None,
            generation_prompt: bool = True) -> str:
    messages = template_messages(messages)
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": generation_prompt}
    if tools:
        kwargs["tools"] = tools
    if tokenizer.chat_template is None:
        kwargs["chat_template"] = CHATML
    return tokenizer.apply_chat_template(messages, **kwargs)


def supports_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's own template renders ``tools`` (checked once, then remembered)."""
    cached = getattr(tokenizer, "_clawgym_native_tools", None)
    if cached is not None:
        return cached
    tool = {"type": "function",
            "function": {"name": _MARKER, "description": "", "parameters": {"type": "object", "properties": {}}}}
    try:
        native = _MARKER in _render(tokenizer, [{"role": "user", "content": "hi"}], [tool])
    except Exception:  # a template that raises on tools does not support them
        native = False
    tokenizer._clawgym_native_tools = native
    return native


def _tool_call_text(call: dict[str, Any]) -> str:
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass  # keep the string: the model should see exactly what was sent
    return "<tool_call>\n" + json.dumps({"name": function.get("name"), "arguments": arguments}) + "\n</tool_call>"


def fallback_messages(messages: list[Message], tools: list[dict[str, Any]] | None) -> list[Message]:
    """Rewrite tools, tool calls and tool results into plain system/user/assistant text messages."""
    out: list[Message] = []
    if tools:
        schemas = "\n".join(json.dumps(tool.get("function", tool)) for tool in tools)
        preamble = TOOLS_PREAMBLE.format(tools=schemas)
        if messages and messages[0].get("role") == "system":
            out.append({"role": "system", "content": (text_of(messages[0]) + "\n\n" + preamble).strip()})
            messages = messages[1:]
        else:
            out.append({"role": "system", "content": preamble})
    for message in messages:
        role = message.get("role")
        text = text_of(message)
        if role == "assistant":
            blocks = [_tool_call_text(call) for call in message.get("tool_calls") or []]
            out.append({"role": "assistant", "content": "\n".join([text] + blocks if text else blocks)})
        elif role == "tool":
            block = "<tool_response>\n" + text + "\n</tool_response>"
            if out and out[-1].get("_tool_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_results": True})
        else:
            out.append({"role": str(role), "content": text})
    for message in out:
        message.pop("_tool_results", None)
    return out


def render_prompt(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> str:
    """The prompt text, ending with the assistant generation header."""
    if supports_tools(tokenizer):
        return _render(tokenizer, messages, tools)
    return _render(tokenizer, fallback_messages(messages, tools), None)


def encode_prompt(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> list[int]:
    """The prompt token ids the policy conditions on (the template already holds any BOS text)."""
    text = render_prompt(tokenizer, messages, tools)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def stop_token_ids(tokenizer: Any, model_config: Any = None) -> set[int]:
    """Token ids that end a turn: EOS, the chat end-of-turn tokens, and the model's own eos ids."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    for token in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>"):
        if token in vocab:
            ids.add(int(vocab[token]))
    eos = getattr(model_config, "eos_token_id", None) if model_config is not None else None
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, (list, tuple)):
        ids.update(int(i) for i in eos)
    return ids


def reply_ids(tokenizer: Any, messages: list[Message], tools: list[dict[str, Any]] | None,
              reply: Message) -> list[int]:
    """The tokens a model writes to produce ``reply`` after ``messages``, its end-of-turn token last.

    They are read off the template itself: the conversation with the reply, rendered as the next prompt
    will render it, minus :func:`render_prompt` of the conversation without it, up to the end of the
    turn. So a demonstration (a setting's oracle, the warm start) is tokenized exactly as the model's own
    reply would be, and the next turn's prompt begins with this one's prompt + these ids.
    """
    prompt = render_prompt(tokenizer, messages, tools)
    if supports_tools(tokenizer):
        full = _render(tokenizer, messages + [reply], tools, generation_prompt=False)
    else:
        full = _render(tokenizer, fallback_messages(messages + [reply], tools), None, generation_prompt=False)
    if not full.startswith(prompt):
        raise ValueError("the chat template renders the conversation before the reply differently once the reply "
                         "is there; a demonstration cannot be tokenized as the model's own reply")
    ids = list(tokenizer(full[len(prompt):], add_special_tokens=False)["input_ids"])
    stops = stop_token_ids(tokenizer)
    end = next((i for i, token in enumerate(ids) if token in stops), None)
    if end is None:
        raise ValueError("the chat template ends an assistant turn with no end-of-turn token")
    return ids[: end + 1]

