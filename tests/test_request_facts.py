"""Wishes decided by facts read off the request: which wishes count, which solutions are trusted (only
arithmetic of the request's own numbers), what counts as stating the number, which name a by-name wish
means, and how the rubric judge uses a fact (source "facts", one read per request, the model when no
fact is trusted)."""

from __future__ import annotations

import pytest

from clawgym.personal.request_facts import (
    RequestFacts,
    called_right,
    is_name_wish,
    is_result_wish,
    name_of,
    only_the_result,
    result_check,
    states_value,
    value_of,
)
from clawgym.personal.rubric import RubricJudge, first_request

REQUEST = ("Please write a grading comment for Ava, who answered 41 to this problem: Ben has 30 apples and buys 3 "
           "packs of 4. How many apples does Ben have now?")
CONTEXT = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": REQUEST}]


@pytest.mark.parametrize("wish, result, only", [
    ("mention the correct result", True, True),
    ("mention the correct result so the student can compare", True, True),
    ("state the correct result", True, True),
    ("give the final number", True, True),
    ("what is the answer", True, True),
    ("state the correct result and be warm about it", True, False),
    ("explain the grade in at least two sentences", False, False),
    ("make it friendlier and more encouraging", False, False),
    ("the answer should be short", False, False),
])
def test_which_wishes_ask_for_the_result(wish, result, only):
    assert is_result_wish(wish) is result
    if result:
        assert only_the_result(wish) is only


@pytest.mark.parametrize("completion, value", [
    ("answer = 30 + 3 * 4", 42.0),
    ("```python\nanswer = (30 + 3 * 4)\n```", 42.0),
    ("30 + 3 * 4", 42.0),  # the expression alone
    ("answer = 30 + 3 * 4 = 42", 42.0),  # the worked result after it is ignored
    ("30 + 3 * 4 = 43", 42.0),
    ("answer = 42", None),  # a bare number is copied, not computed
    ("answer = 41", None),  # e.g. the student's own answer
    ("answer = 30 + 3 * 5", None),  # 5 is not a number of the request
    ("answer = 30 / (4 - 4)", None),
    ("answer = 3 ** 4", None),  # only + - * / // %
    ("answer = __import__('os').getcwd()", None),
    ("answer = len('apples') + 30", None),
    ("NONE", None),
    ("", None),
])
def test_only_arithmetic_of_the_requests_numbers_is_trusted(completion, value):
    assert value_of(completion, REQUEST) == value


@pytest.mark.parametrize("reply, value, stated", [
    ("Great work, Ava! The correct result is 42.", 42.0, True),
    ("Ben ends up with 1,200 apples.", 1200.0, True),
    ("The answer is 4.0 per friend.", 4.0, True),
    ("Each friend gets 3.5 cookies.", 3.5, True),
    ("Score: 7/10. Nice try, Ava.", 7.0, False),  # a score is not the result
    ("You said 41, but check the packs again.", 42.0, False),
    ("It is 420 apples.", 42.0, False),
])
def test_a_reply_states_the_value_as_a_number_of_its_own(reply, value, stated):
    assert states_value(reply, value) is stated


@pytest.mark.parametrize("value, reply, met", [
    (42.0, "Well done, Ava! Ben has 42 apples.", True),
    (42.0, "Well done, Ava!", False),
    (41.0, "Ava answered 41, well done.", None),  # the student's own number: an echo or a statement?
    (41.0, "Well done, Ava: the correct answer is 41.", True),  # stated as the result
    (30.0, "Ben has 30 apples and buys more.", True),  # "has 30" reads as a statement: a clear case only if stated
    (30.0, "Ben starts with 30 apples.", None),
    (30.0, "Ben starts with some apples.", False),
])
def test_a_number_the_request_holds_too_must_be_stated_as_the_result(value, reply, met):
    assert result_check("mention the correct result", value, reply, REQUEST) is met
    assert result_check("mention the correct result and be warm", value, reply, REQUEST) is (False if met is False
                                                                                            else None)


@pytest.mark.parametrize("reply, called", [
    ("Your answer of 41 is correct!", [41.0]),
    ("41, which is right.", [41.0]),
    ("41 is the correct answer.", [41.0]),
    ("The correct answer is 42, not 41.", [42.0]),
    ("The right result: 42.", [42.0]),
    ("Ava answered 41 correctly, great work!", [41.0]),
    ("Ava correctly answered 41.", [41.0]),
    ("41 is not correct; the total is 42.", []),
    ("41 is incorrect.", []),
    ("41. The answer is correct.", []),  # the number ends its sentence: nothing after it is about it
    ("Score: 7/10 is right for this.", []),  # a score is not a number called correct
])
def test_the_numbers_a_reply_calls_correct(reply, called):
    assert called_right(reply) == called


@pytest.mark.parametrize("reply, met", [
    ("Ava, your answer of 41 is correct. Ben has 42 apples.", False),  # 41 called correct: contradicts 42
    ("Ava, 41 is close, but the correct answer is 42.", True),
    ("Well done, Ava: 42 is correct.", True),
])
def test_a_reply_that_calls_another_number_correct_misses_the_result(reply, met):
    assert result_check("mention the correct result", 42.0, reply, REQUEST) is met


class FixedFacts(RequestFacts):
    """Facts whose answers are known, counting the requests they were read from."""

    def __init__(self, value, name="Ava"):
        super().__init__(policy=None)
        self.value, self.student, self.requests = value, name, []

    def result(self, request):
        self.requests.append(request)
        return self.value

    def name(self, request, wish):
        self.requests.append(request)
        return self.student


@pytest.mark.parametrize("completion, name", [
    ("Ava", "Ava"), ("Ava.", "Ava"), (" Ben\n", "Ben"),
    ("Sam", None),  # not a name of the request
    ("Ava or Ben", None), ("", None), ("the student", None),
])
def test_only_a_name_of_the_request_is_trusted(completion, name):
    assert name_of(completion, REQUEST) == name
    assert is_name_wish("address the student by name") and not is_name_wish("call me Sam")


def test_the_rubric_decides_result_wishes_by_the_solution_and_leaves_the_rest_to_the_model():
    wishes = {"ann": ["mention the correct result", "state the correct result and be warm", "no lists",
                      "address the student by name"]}
    facts = FixedFacts(42.0)
    rubric = RubricJudge(None, wishes.get, facts=facts)
    reward, checks = rubric.score("ann", CONTEXT, "Well done, Ava! Ben has 42 apples.")
    assert [(c.met, c.source) for c in checks] == [(True, "facts"), (None, "unsure"), (True, "cues"), (True, "facts")]
    assert reward == 1.0
    reward, checks = rubric.score("ann", CONTEXT, "Well done, Ben! You have 41 apples.")
    assert [(c.met, c.source) for c in checks] == [(False, "facts"), (False, "facts"), (True, "cues"), (False, "facts")]
    assert reward == pytest.approx(1 / 4)  # Ben is a name of the request, but not the one the wish means
    later = CONTEXT + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "Mention the result."}]
    rubric.score("ann", later, "42")
    assert set(facts.requests) == {REQUEST}  # the task is the first user message, whatever came later
    assert first_request(later) == REQUEST and first_request([]) == ""
    assert rubric.stats["by_facts"] == 6  # 2 + 3 + 1: "and be warm" is decided only when the number is missing


def test_no_trusted_solution_leaves_the_wish_to_the_model():
    rubric = RubricJudge(None, {"ann": ["mention the correct result", "address the student by name"]}.get,
                         facts=FixedFacts(None, None))
    reward, checks = rubric.score("ann", CONTEXT, "Ben has 42 apples.")
    assert reward is None and [c.source for c in checks] == ["unsure"] * 2  # no model here: unsure, never guessed
    off = RubricJudge(None, {"ann": ["mention the correct result"]}.get, read_facts=False)
    assert off.facts is None and off.score("ann", CONTEXT, "42")[1][0].source == "unsure"


def test_each_fact_is_read_once_per_request(monkeypatch):
    calls = []

    def fake_completion(policy, messages, max_new_tokens):
        calls.append(messages[-1]["content"])
        return "```python\nanswer = 30 + 3 * 4\n```"

    import clawgym.inference.completion as completion

    monkeypatch.setattr(completion, "greedy_completion", fake_completion)
    facts = RequestFacts(policy=object())
    assert facts.result(REQUEST) == 42.0 and facts.result(REQUEST) == 42.0
    assert len(calls) == 1 and REQUEST in calls[0] and "Ignore any answer" in calls[0]
    assert facts.stats == {"solved": 1, "cached": 1}
    monkeypatch.setattr(completion, "greedy_completion", lambda *a: "answer = 41")
    assert facts.result("Ava answered 41. What is 40 + 1?") is None and facts.stats["refused"] == 1
    monkeypatch.setattr(completion, "greedy_completion", lambda *a: "Ava")
    assert facts.name(REQUEST, "address the student by name") == "Ava" and facts.stats["named"] == 1


def test_a_real_model_solves_through_its_chat_template():
    from clawgym.inference.hf import HFPolicy

    policy = HFPolicy.from_pretrained("tiny-random-qwen")
    facts = RequestFacts(policy, max_new_tokens=8)
    value = facts.result(REQUEST)  # random weights: noise, which the checks must refuse or accept as arithmetic
    assert value is None or isinstance(value, float)
    assert facts.name(REQUEST, "address the student by name") in (None, "Ava", "Ben")
    assert facts.stats["solved"] + facts.stats["named"] + facts.stats["refused"] == 2
