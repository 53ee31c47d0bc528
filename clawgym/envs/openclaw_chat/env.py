"""OpenClawChat-v0: the person is the environment.

Offline (the default, and what ``gym.make("clawgym/OpenClawChat-v0")`` gives): a simulated user
with a persona opens the chat; each assistant reply is answered by the user's next message (the
next state). The episode ends when the person is satisfied (terminated) or after ``max_turns``
(truncated). The reward is the **preference score** of the last reply (the fraction of the
persona's checks it passes); ``success`` means every check passed.

The live mode, where real people reach the env through the gateway, is
:class:`clawgym.envs.openclaw_chat.live.LiveChatEnv`.
"""

from __future__ import annotations

from typing import Any

from clawgym.core.env import AgentEnv
from clawgym.core.messages import Message, user
from clawgym.core.tasks import Task, TaskSet
from clawgym.envs.openclaw_chat import people
from clawgym.envs.openclaw_chat.people import EVERYONE, PEOPLE, people_tasks
from clawgym.envs.openclaw_chat.personas import bundled_tasks, oracle_reply
from clawgym.envs.openclaw_chat.simulator import PolicyUser, ScriptedUser, UserSimulator

SYSTEM_PROMPT = ("You are a personal assistant running inside OpenClaw. Help the user with what they ask, "
                 "and adapt to their preferences when they give feedback.")


class OpenClawChatEnv(AgentEnv):
    default_max_turns = 4

    def __init__(self, tasks: Any = None, *, user_simulator: UserSimulator | Any = "scripted",
                 personas: list[str] | str | None = None, **kwargs: Any) -> None:
        if isinstance(personas, str):  # `--env-arg personas=teacher,ta` from the command line
            personas = [p.strip() for p in personas.split(",") if p.strip()]
        self.personas = personas
        if user_simulator in ("scripted", "scripted-all"):  # "-all": the person voices every unmet preference
            self.simulator: UserSimulator = ScriptedUser("all" if user_simulator == "scripted-all" else "first")
        elif hasattr(user_simulator, "reply"):
            self.simulator = user_simulator
        elif hasattr(user_simulator, "generate"):
            self.simulator = PolicyUser(user_simulator)
        else:
            raise ValueError("user_simulator must be 'scripted', 'scripted-all', a UserSimulator, or a Policy")
        self.last_preferences: dict[str, bool] = {}
        self._last_score = 0.0
        super().__init__(tasks, **kwargs)

    def load_tasks(self, source: Any) -> TaskSet:
        """The homework personas' tasks by default; the six people of :mod:`~clawgym.envs.openclaw_chat.people`
        are chosen by name (``personas=cook,traveller``)."""
        if self.personas:
            unknown = set(self.personas) - set(EVERYONE)
            if unknown:
                raise ValueError(f"unknown personas {sorted(unknown)}; known: {sorted(EVERYONE)}")
        if source is None:
            wants_people = bool(self.personas) and bool(set(self.personas) & set(PEOPLE))
            tasks = TaskSet(bundled_tasks() + (people_tasks() if wants_people else []), name="openclaw_chat")
        else:
            tasks = TaskSet.load(source)
        if self.personas:
            tasks = TaskSet([t for t in tasks if t.data.get("persona") in self.personas], name=tasks.name)
        return tasks

    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT

    def task_prompt(self, task: Task) -> str:
        return EVERYONE[task.data["persona"]].opener(task)

    def setup(self, task: Task) -> list[Message]:
        self._last_score = 0.0
        self.last_preferences = {}
        return []

    def on_message(self, message: Message) -> tuple[list[Message], bool, str | None]:
        assert self.task is not None
        from clawgym.core.messages import text_of

        reply = text_of(message)
        persona = EVERYONE[self.task.data["persona"]]
        self._last_score, self.last_preferences = persona.score(reply, self.task)
        answer, satisfied = self.simulator.reply(persona, self.task, self.messages, reply)
        return [user(answer)], satisfied, reply

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        success = bool(self.last_preferences) and all(self.last_preferences.values())
        return self._last_score, {"success": success, "preferences": dict(self.last_preferences),
                                  "persona": self.task.data["persona"] if self.task else None}

    def oracle_action(self) -> str:
        assert self.task is not None
        if self.task.data["persona"] in PEOPLE:
            return people.oracle_reply(self.task)
        return oracle_reply(self.task)
