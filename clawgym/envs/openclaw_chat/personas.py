"""Simulated users: a persona, a goal, and the preferences the person checks every reply against.

Modelled on OpenClaw-RL's evaluation users: the student who does not want homework answers to look
AI-written, the teacher who wants specific, friendly grading comments, and the TA who wants detailed
grading. Each preference is a named check on the assistant's reply; the **preference score** of a
reply is the fraction of checks it passes, and the scripted user's next message is the feedback for
the first check that failed (or its thanks when all pass). The same checks score replies when the
user is simulated by a language model, so the metric never depends on the simulator's mood.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Callable

from clawgym.core.tasks import Task

Check = Callable[[str, Task], bool]
VOICES = ("first", "all")  # what a scripted person voices of their unmet preferences


@dataclass
class Preference:
    name: str
    check: Check
    feedback: str  # what the person says when the check fails


@dataclass
class Persona:
    name: str
    description: str  # for an LLM-driven simulator
    opener: Callable[[Task], str]
    preferences: list[Preference] = field(default_factory=list)
    thanks: str = "Thanks, that's exactly what I needed."
    done_token: str = "DONE"

    def score(self, reply: str, task: Task) -> tuple[float, dict[str, bool]]:
        empty = not reply.strip()  # saying nothing satisfies no preference
        results = {p.name: not empty and bool(p.check(reply, task)) for p in self.preferences}
        return sum(results.values()) / max(len(results), 1), results

    def feedback(self, reply: str, task: Task, voice: str = "first") -> tuple[str, bool]:
        """The scripted person's answer to a reply, and whether they are satisfied: the feedback of the
        first unmet preference (``voice="first"``), or of every unmet one in order (``"all"``)."""
        if voice not in VOICES:
            raise ValueError(f"voice must be one of {VOICES}, got {voice!r}")
        unmet = [p.feedback for p in self.preferences if not reply.strip() or not p.check(reply, task)]
        if not unmet:
            return f"{self.thanks} {self.done_token}", True
        return (unmet[0] if voice == "first" else " ".join(unmet)), False


# ------------------------------------------------------------------ checks
# "States the result": a number counts only where the reply states a result: it is the first number
# after a result cue ("the answer is", "result", "total", "=", "gets", ...), within a few words and the
# same sentence. So an echo of the problem's own numbers, a wrong student answer repeated, or "48 or 50"
# (the first number after the cue is the wrong one) does not pass by merely containing the right number.
_RESULT_CUE = re.compile(r"(?i)\b(?:answers?|results?|totals?|is|are|was|equals?|makes?|gets?|has|have|comes? to"
                         r"|works? out to|should be|would be|correct|right)\b|=")
_NUMBER = re.compile(r"(?<![\d/.])-?\d+(?:\.\d+)?(?![\d.]*\s*/\s*\d)")  # not a score such as 7/10
_MAX_GAP_WORDS = 4


def _plain_numbers(reply: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", reply)  # 1,200 -> 1200, but "48, 50" stays two numbers


def stated_results(reply: str) -> list[float]:
    """The numbers the reply states as a result (see above), in order."""
    text = _plain_numbers(reply)
    stated = []
    for cue in _RESULT_CUE.finditer(text):
        number = _NUMBER.search(text, cue.end())
        if number is None:
            continue
        gap = text[cue.end():number.start()]
        if len(gap.split()) <= _MAX_GAP_WORDS and not re.search(r"[.!?;\n]", gap):
            stated.append(float(number.group()))
    return stated


def _gives_answer(reply: str, task: Task) -> bool:
    return float(task.answer) in stated_results(reply)


def _endorses(reply: str, claim: float) -> bool:
    """The reply calls ``claim`` correct ("48 is correct", "the correct answer is 48", "48 is right")."""
    number = re.escape(f"{claim:g}")
    text = _plain_numbers(reply)
    return bool(re.search(rf"(?i)(?<![\d.]){number}(?![\d.])[^.!?\d]{{0,20}}\b(?:is|was|are)\s+"
                          r"(?:(?:also|exactly|absolutely|totally|perfectly|completely)\s+)?(?:correct|right)\b", text)
                or re.search(rf"(?i)\b(?:correct|right)\s+(?:answer|result|total)\s*(?:is|was|of|:)?\s*"
                             rf"{number}(?![\d.])", text))


def _states_correct_result(reply: str, task: Task) -> bool:
    """The correct result is stated, and a wrong answer from the student is not called correct."""
    claim = task.data.get("student_answer")
    wrong = claim is not None and float(claim) != float(task.answer)
    return _gives_answer(reply, task) and not (wrong and _endorses(reply, float(claim)))


def _no_markdown_emphasis(reply: str, task: Task) -> bool:
    return "**" not in reply and "__" not in reply and not re.search(r"^\s*#+\s", reply, re.MULTILINE)


def _no_lists(reply: str, task: Task) -> bool:
    """No list: no bulleted line, no numbered line that starts a list ("1."), and no two numbered lines. One line
    that opens with another number ("58. The student's answer is correct.") is a sentence, not a list item."""
    markers = re.findall(r"^\s*(\d+[.)]|[-*•])\s+", reply, re.MULTILINE)
    starts_a_list = any(not marker[0].isdigit() or int(marker[:-1]) == 1 for marker in markers)
    return len(markers) < 2 and not starts_a_list


def _no_latex(reply: str, task: Task) -> bool:
    return not re.search(r"\\\(|\\\[|\\frac|\\boxed|\$[^$]+\$", reply)


def _short(limit: int) -> Check:
    return lambda reply, task: 0 < len(reply.split()) <= limit


def _friendly(reply: str, task: Task) -> bool:
    return bool(re.search(r"(?i)\b(great|nice|well done|good job|good work|excellent|keep it up)\b", reply))


def _names_student(reply: str, task: Task) -> bool:
    return task.data["student"].lower() in reply.lower()


def _has_score(reply: str, task: Task) -> bool:
    """A grade between 0 and 10 written on the scale ("7/10", "8.5 / 10", "6 out of 10"). A number put over the
    scale ("58/10", the student's answer) is not a grade, whatever the reply calls it."""
    grades = re.findall(r"(?i)(?<![\d.])(\d+(?:\.\d+)?)\s*(?:/|out of)\s*10(?!\.?\d)", reply)
    return any(0 <= float(grade) <= 10 for grade in grades)


def _several_sentences(reply: str, task: Task) -> bool:
    return len([s for s in re.split(r"[.!?]+", reply) if len(s.split()) >= 3]) >= 2


PERSONAS: dict[str, Persona] = {
    "student": Persona(
        name="student",
        description=("You are a high-school student who wants help with homework. You do not want the answer to "
                     "look AI-written: no bold text, no numbered or bulleted lists, no LaTeX. You want the final "
                     "number in plain sentences."),
        opener=lambda t: f"Can you help me with my homework? {t.prompt}",
        preferences=[
            Preference("gives_answer", _gives_answer, "That doesn't give me the final number. What is the answer?"),
            Preference("no_bold_or_headings", _no_markdown_emphasis,
                       "Please rewrite it without bold text or headings, it looks AI-written."),
            Preference("no_lists", _no_lists,
                       "No numbered or bulleted lists please, my teacher will know it's AI. Write it "
                       "as normal sentences."),
            Preference("no_latex", _no_latex, "Please don't use LaTeX symbols, just plain text."),
        ],
        thanks="Perfect, that looks like something I'd write. Thanks!",
        done_token="HOMEWORK_DONE",
    ),
    "teacher": Persona(
        name="teacher",
        description=("You are a teacher who wants a short grading comment for a student's answer. The comment must "
                     "name the student, be friendly and encouraging, mention the correct result, "
                     "and stay under 80 words."),
        opener=lambda t: (f"Please write a grading comment for {t.data['student']}, who answered "
                          f"{t.data['student_answer']} to this problem: {t.prompt}"),
        preferences=[
            Preference("names_student", _names_student, "Please address the student by name."),
            Preference("friendly", _friendly, "Could you make it friendlier and more encouraging?"),
            Preference("mentions_result", _states_correct_result,
                       "Mention the correct result so the student can compare."),
            Preference("short", _short(80), "That's too long for a comment; keep it under 80 words."),
        ],
        thanks="Lovely, I'll use that.",
        done_token="COMMENT_DONE",
    ),
    "ta": Persona(
        name="ta",
        description=("You are a teaching assistant who wants detailed grading: a score out of 10, the correct result, "
                     "and at least two sentences of explanation, without markdown lists."),
        opener=lambda t: (f"Grade this answer out of 10. Student answer: {t.data['student_answer']}. "
                          f"Problem: {t.prompt}"),
        preferences=[
            Preference("score_out_of_10", _has_score, "Give a score out of 10, like 7/10."),
            Preference("mentions_result", _states_correct_result, "State the correct result."),
            Preference("explains", _several_sentences, "Explain the grade in at least two sentences."),
            Preference("no_lists", _no_lists, "Write it as prose, not a list."),
        ],
        thanks="Thanks, that's detailed enough.",
        done_token="GRADING_DONE",
    ),
}

NAMES = ("Ava", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Liam")
ITEMS = ("apples", "pencils", "stickers", "marbles", "books", "cookies", "cards", "shells")


def _problem(rng: random.Random) -> tuple[str, int]:
    name = rng.choice(NAMES)
    item = rng.choice(ITEMS)
    a, b, c = rng.randint(12, 60), rng.randint(3, 9), rng.randint(2, 11)
    kind = rng.randrange(3)
    if kind == 0:
        return f"{name} has {a} {item} and buys {b} packs of {c}. How many {item} does {name} have now?", a + b * c
    if kind == 1:
        total = b * c * 2
        return f"{name} shares {total} {item} equally among {2 * c} friends. How many does each friend get?", b
    return f"{name} reads {b} pages a day for {c} days and then {a} more pages. How many pages in total?", b * c + a


HELD_OUT_SHARE = 4  # one problem in four is held out


def split_of(prompt: str) -> str:
    """The split of a problem: ``test`` (held out) for about one problem in four, else ``train``.

    Decided by a hash of the problem's text alone, so it is deterministic, independent of how many
    tasks are generated (the demo's 120 per persona and the bundled 40 agree on every shared task),
    and a problem that is generated twice can never sit on both sides: training and held-out tasks
    never share a problem.
    """
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    return "test" if digest[0] % HELD_OUT_SHARE == 0 else "train"


def bundled_tasks(per_persona: int = 40, seed: int = 2603) -> list[Task]:
    """Persona x problem tasks, generated with a fixed seed; each task's split is :func:`split_of` its problem."""
    tasks = []
    for persona in PERSONAS:
        rng = random.Random(f"{seed}:{persona}")
        for index in range(per_persona):
            prompt, answer = _problem(rng)
            student = rng.choice(NAMES)
            student_answer = answer if rng.random() < 0.5 else answer + rng.choice((-2, -1, 1, 3))
            tasks.append(Task(
                id=f"chat-{persona}-{index:03d}", prompt=prompt, answer=answer, split=split_of(prompt),
                data={"persona": persona, "student": student, "student_answer": student_answer},
            ))
    return tasks


def oracle_reply(task: Task) -> str:
    """A reply that satisfies every preference of the task's persona (proves each task is solvable)."""
    persona, answer = task.data["persona"], task.answer
    if persona == "student":
        return f"The answer is {answer}. I worked it out step by step and checked the total twice."
    if persona == "teacher":
        return f"Great effort, {task.data['student']}! The correct result is {answer}, keep it up."
    return (f"Score: {10 if task.data['student_answer'] == answer else 5}/10. The correct result is {answer}. "
            f"The student answered {task.data['student_answer']}, and the working shows the method clearly.")
