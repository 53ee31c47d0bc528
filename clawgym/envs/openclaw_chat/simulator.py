"""Who plays the person when no person is there: a script, or any policy backend.

Either way the *preference checks* of the persona decide whether the person is satisfied, so a
language-model user changes the wording of the feedback, never the score.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from clawgym.core.messages import Message, text_of
from clawgym.core.tasks import Task
from clawgym.envs.openclaw_chat.personas import VOICES, Persona


class UserSimulator(Protocol):
    def reply(self, persona: Persona, task: Task, messages: list[Message], assistant_reply: str) -> tuple[str, bool]:
        """The person's next message after ``assistant_reply``, and whether they are satisfied."""
        ...


def swap_roles(instruction: str, messages: list[Message], assistant_reply: str) -> list[Message]:
    """The conversation as the person's model sees it: the person's messages are its own (assistant)
    turns, the assistant's are the user's, the newest reply last; the system prompt is dropped."""
    swapped: list[Message] = [{"role": "system", "content": instruction}]
    for message in messages:
        if message["role"] == "assistant":
            swapped.append({"role": "user", "content": text_of(message)})
        elif message["role"] == "user":
            swapped.append({"role": "assistant", "content": text_of(message)})
    swapped.append({"role": "user", "content": assistant_reply})
    return swapped


class ScriptedUser:
    """Answers with the persona's fixed feedback for the first unmet preference, or with the feedback of
    every unmet one (``voice="all"``: a person who lists all that is wrong at once). Deterministic."""

    def __init__(self, voice: str = "first") -> None:
        if voice not in VOICES:
            raise ValueError(f"voice must be one of {VOICES}, got {voice!r}")
        self.voice = voice

    def reply(self, persona: Persona, task: Task, messages: list[Message], assistant_reply: str) -> tuple[str, bool]:
        return persona.feedback(assistant_reply, task, self.voice)


class PolicyUser:
    """A language model plays the person: it sees the conversation with roles swapped.

    ``policy`` is any :class:`clawgym.core.policy.Policy`. The rule checks still decide
    satisfaction; the model is told which preference is unmet so its feedback stays on topic.
    """

    def __init__(self, policy: Any, max_tokens: int = 96, temperature: float = 0.7) -> None:
        self.policy = policy
        self.max_tokens = max_tokens
        self.temperature = temperature

    def reply(self, persona: Persona, task: Task, messages: list[Message], assistant_reply: str) -> tuple[str, bool]:
        from clawgym.core.policy import SamplingParams

        scripted, satisfied = persona.feedback(assistant_reply, task)
        instruction = (f"{persona.description}\nYou are chatting with an AI assistant. Reply in one or two short "
                       f"sentences, as the person. " + (f"End your message with {persona.done_token}."
                                                      if satisfied else f"Your complaint: {scripted}"))
        sampling = SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens)
        generation = _run(self.policy.generate(swap_roles(instruction, messages, assistant_reply), None, sampling))
        text = generation.text.strip() or scripted
        if satisfied and persona.done_token not in text:
            text = f"{text} {persona.done_token}"
        return text, satisfied


class RolePlayedUser:
    """A language model *is* the person (OpenClaw-RL's simulated user): it reads only the persona's
    description and the conversation, and decides for itself what to thank, what to complain about and
    when it is satisfied (it ends its message with the persona's ``done_token``). It is never told the
    hidden checks, so its phrasing, thanks and partial satisfaction are its own; the checks only score
    the held-out replies. Use :meth:`areply` from async code (the rehearsal), :meth:`reply` from sync code.
    """

    INSTRUCTION = ("{description}\nYou are chatting with an AI assistant about the request below. Read its reply "
                   "and answer as this person, in one or two short sentences, in your own words: say what is good "
                   "about the reply, if anything, and ask for what is still missing or wrong. If the reply already "
                   "does everything you want, thank the assistant and end your message with {done}.")

    def __init__(self, policy: Any, max_tokens: int = 64, temperature: float = 0.7) -> None:
        self.policy = policy
        self.max_tokens = max_tokens
        self.temperature = temperature

    def prompt(self, persona: Persona, messages: list[Message], assistant_reply: str) -> list[Message]:
        instruction = self.INSTRUCTION.format(description=persona.description, done=persona.done_token)
        return swap_roles(instruction, messages, assistant_reply)

    async def areply(self, persona: Persona, task: Task, messages: list[Message],
                     assistant_reply: str) -> tuple[str, bool]:
        from clawgym.core.policy import SamplingParams

        sampling = SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens)
        generation = await self.policy.generate(self.prompt(persona, messages, assistant_reply), None, sampling)
        text = generation.text.strip()
        if not text:  # a model that says nothing: the person repeats what they asked for
            return "Please answer what I asked.", False
        return text, persona.done_token in text

    def reply(self, persona: Persona, task: Task, messages: list[Message], assistant_reply: str) -> tuple[str, bool]:
        return _run(self.areply(persona, task, messages, assistant_reply))


def _run(coroutine: Any) -> Any:
    """Run a coroutine from sync env code, whether or not this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
