"""Wishes compiled into checks: the code read out of a model's answer, the allow-list and its reasons, the
sandbox (a good check, an infinite loop, a memory hog, one process a batch), a draft that fails its meet/miss
test refused, the check kept with its wish through a restart and gone with the wish, taken back over HTTP (with
the usual 401/403/404), and the rubric deciding by the compiled check first (source "compiled")."""

from __future__ import annotations

import shutil
import sys
import time

import httpx
import pytest

from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.personal import wish_checks
from clawgym.personal.check_runner import CheckRunner, SandboxFailed, refusal
from clawgym.personal.rubric import RubricJudge
from clawgym.personal.wish_checks import (
    EXAMPLES_EACH,
    BackgroundCompiler,
    Examples,
    WishCompiler,
    choose,
    examples_of,
    parse_code,
)
from clawgym.personal.wish_memory import WishMemory
from clawgym.serve.app import build_gateway_app
from clawgym.serve.dashboard import Dashboard
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog
from clawgym.serve.users import UserDirectory
from tests.waiting import wait_for

SHORT = "import re\n\ndef met(request: str, reply: str) -> bool:\n    return len(re.findall(r'\\w+', reply)) <= 5\n"
EXAMPLES = Examples("How do I boil an egg?", ["Boil it ten minutes.", "Eight minutes in boiling water."],
                    ["Put the egg in a pot of cold water, bring it to the boil, then wait about nine minutes.",
                     "First fill a pan with water and heat it until it bubbles, then lower the egg in gently."])


@pytest.fixture(scope="module")
def runner():
    if not sys.platform.startswith("linux") or shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    made = CheckRunner(time_s=0.5)
    try:
        made.run([(SHORT, "q", "r")])
    except SandboxFailed as exc:  # bwrap without user namespaces (an unprivileged container)
        pytest.skip(str(exc))
    return made


# ---- reading the model's answer -------------------------------------------------------------------------


def test_the_check_is_read_out_of_a_fenced_answer_without_its_example_calls():
    answer = ("Here is the function:\n```python\nimport re\n\ndef met(request: str, reply: str) -> bool:\n"
              "    return '!' not in reply\n\nprint(met('a', 'b'))\nif __name__ == \"__main__\":\n    print(1)\n```\n"
              "It returns True when ...")
    code = parse_code(answer)
    assert code == "import re\n\ndef met(request: str, reply: str) -> bool:\n    return '!' not in reply\n"
    assert refusal(code) is None
    bare = parse_code("def met(request, reply):\n    return reply.isupper()\nmet('x', 'Y')")
    assert bare == "def met(request, reply):\n    return reply.isupper()\n"
    assert parse_code(wish_checks.CANNOT) is None and wish_checks.says_cannot("CANNOT CHECK.")
    assert parse_code("```python\nprint('no function here')\n```") is None


def test_the_examples_are_distinct_replies_on_one_side_each_and_too_few_are_none():
    examples = examples_of("Tell me about Paris.", ["Paris is big.", "Paris is big.", " Paris is old. "],
                           ["Paris is big.", "Paris, the capital of France, has 2 million people.", "Paris is a city."])
    assert examples == Examples("Tell me about Paris.", ["Paris is big.", "Paris is old."],
                                ["Paris, the capital of France, has 2 million people.", "Paris is a city."])
    assert examples_of("hi", ["a", "b"], ["a", "c"]) is None  # one miss left cannot tell a check from a guess
    assert examples_of("", ["a", "b"], ["c", "d"]) is None


def test_the_prompts_are_general():
    text = (str(wish_checks.code_prompt("keep it under 50 words")) + str(wish_checks.request_prompt("x"))
            + str(wish_checks.reply_prompt("a request", "x", True)) + str(wish_checks.reply_prompt("a", "x", False)))
    assert "keep it under 50 words" in text and "def met(request: str, reply: str) -> bool" in text
    for persona_word in ("teacher", "student", "grade", "pencil"):
        assert persona_word not in text.lower()


# ---- the allow-list -------------------------------------------------------------------------------------


@pytest.mark.parametrize("code, reason", [
    ("import os\ndef met(request, reply):\n    return True\n", "imports os; a check may import only re"),
    ("import subprocess\ndef met(request, reply):\n    return True\n", "imports subprocess"),
    ("from os import path\ndef met(request, reply):\n    return True\n", "imports os"),
    ("def met(request, reply):\n    return 'x' in open('/etc/passwd').read()\n", "open is not allowed"),
    ("def met(request, reply):\n    return eval(reply)\n", "eval is not allowed"),
    ("def met(request, reply):\n    return exec(reply)\n", "exec is not allowed"),
    ("def met(request, reply):\n    return __import__('os') is None\n", "__import__ is not allowed"),
    ("def met(request, reply):\n    return reply.__class__ is str\n", ".__class__ starts with an underscore"),
    ("def met(request, reply):\n    return ().__class__.__bases__[0].__subclasses__() == []\n", "underscore"),
    ("def met(request, reply):\n    return '{0.__class__}' == reply\n", "'__'"),
    ("def met(request, reply):\n    return '{0}'.format(reply) == ''\n", ".format is not allowed"),
    ("def met(request, reply):\n    return getattr(reply, 'upper')() == reply\n", "getattr is not allowed"),
    ("def met(request, reply):\n    try:\n        return True\n    except:\n        return False\n", "bare except"),
    ("def check(request, reply):\n    return True\n", "defines no function met"),
    ("def met(reply):\n    return True\n", "exactly two arguments"),
    ("def met(request, reply):\n    return True\nprint(met(1, 2))\n", "top level"),
    ("def met(request, reply)\n    return True\n", "not valid Python"),
])
def test_the_allow_list_refuses_with_a_clear_reason(code, reason):
    why = refusal(code)
    assert why is not None and reason in why


def test_refused_code_never_runs_and_says_why(runner):
    [result] = runner.run([("import os\ndef met(request, reply):\n    return True\n", "q", "r")])
    assert result.met is None and result.error.startswith("refused: line 1: imports os")


# ---- the sandbox ----------------------------------------------------------------------------------------


def test_the_sandbox_runs_a_good_check_on_a_batch_in_one_process(runner):
    starts = runner.starts
    results = runner.run([(SHORT, "q", "two words"), (SHORT, "q", "one two three four five six seven")] * 20)
    assert [r.met for r in results] == [True, False] * 20 and not any(r.error for r in results)
    assert runner.starts == starts + 1  # one bwrap start for the batch, not one a pair


def test_the_sandbox_has_no_files_or_network_to_reach(runner):
    # even code past the allow-list (run here through a guarded __import__ the check cannot reach) sees nothing
    results = runner.run([("import json\ndef met(request, reply):\n    return json.loads(reply) == 1\n", "q", "1"),
                          ("def met(request, reply):\n    return 1\n", "q", "x"),
                          ("def met(request, reply):\n    return 1 / 0 == 1\n", "q", "x")])
    assert results[0].met is True
    assert results[1].error == "met returned int, not a bool"
    assert results[2].met is None and "ZeroDivisionError" in results[2].error


def test_an_infinite_loop_and_a_memory_hog_cost_only_their_own_pair(runner):
    loop = "def met(request, reply):\n    while True:\n        pass\n"
    hog = "def met(request, reply):\n    data = 'x' * (10 ** 10)\n    return len(data) > 0\n"
    growing = "def met(request, reply):\n    data = []\n    while True:\n        data.append('x' * 1000000)\n"
    start = time.monotonic()
    results = runner.run([(SHORT, "q", "hi"), (loop, "q", "x"), (hog, "q", "x"), (growing, "q", "x"),
                          (SHORT, "q", "one two three four five six")])
    assert time.monotonic() - start < 15
    assert [r.met for r in results] == [True, None, None, None, False]
    assert results[1].error == "timeout" and results[2].error == "memory"
    assert results[3].error in ("memory", "timeout")


# ---- testing drafts before use --------------------------------------------------------------------------


def test_a_draft_that_does_not_separate_the_meet_and_miss_replies_is_refused(runner):
    always = "def met(request, reply):\n    return True\n"
    crashes = "def met(request, reply):\n    return reply[1000] == 'x'\n"
    backwards = "def met(request, reply):\n    return len(reply.split()) > 5\n"
    code, tests = choose([always, crashes, backwards], EXAMPLES, runner)
    assert code is None
    assert tests[0].meet_hits == 2 and tests[0].miss_hits == 0
    assert "IndexError" in tests[1].error
    assert tests[2].score == 0
    compiler = WishCompiler(None, runner, accept="majority")
    refused = compiler.test("keep it short", [always, backwards], EXAMPLES)
    assert refused.code is None and "no draft passed its test" in refused.note
    kept = compiler.test("keep it short", [always, SHORT, backwards], EXAMPLES)
    assert kept.code == SHORT and "right on 4" in kept.note


# the person's replies (unlabelled): short ones, long ones, and one with no words at all
PERSON = [("q", "Fine."), ("q", "Yes, tomorrow at noon."), ("q", "Sure."), ("q", "!!"),
          ("q", "I will send the whole report to the team by Friday, with the figures and the notes.")]
SHORT_CHARS = "def met(request, reply):\n    return len(reply) < 40\n"
FEW_WORDS = "def met(request, reply):\n    return len(reply.split()) <= 1\n"  # separates, but not their replies
NO_WORD_CRASH = "import re\n\ndef met(request, reply):\n    return len(re.findall(r'\\w+', reply)[0]) < 9\n"


def test_consensus_keeps_the_separating_draft_the_other_drafts_agree_with_on_the_persons_replies(runner):
    examples = Examples("q", ["Done.", "Ok, noted."], ["Here is a long answer with many words in it, as asked.",
                                                        "Another reply that goes on and on for a while here."])
    always = "def met(request, reply):\n    return True\n"
    code, tests = choose([FEW_WORDS, SHORT_CHARS, SHORT, always], examples, runner, "consensus", PERSON)
    assert code == SHORT_CHARS  # SHORT_CHARS and SHORT agree with the drafts' majority on all five (the first of
    # equals is kept), FEW_WORDS on four of them; `always` gives every reply one verdict
    assert all(not t.error for t in tests)
    # a draft that crashes on one of the person's replies (no word in "!!") is never kept, however it separates
    code, tests = choose([NO_WORD_CRASH, FEW_WORDS], examples, runner, "consensus", PERSON)
    assert code == FEW_WORDS and "IndexError" in tests[0].error
    # none separates the examples: the first draft (the greedy one) is the model's best guess, unless it crashed
    assert choose([always, FEW_WORDS[:-1] + " and False\n"], examples, runner, "consensus", PERSON)[0] == always
    assert choose([NO_WORD_CRASH, always], examples, runner, "consensus", PERSON)[0] is None
    # no replies of the person's yet: the drafts are told apart on the examples alone
    assert choose([always, SHORT], examples, runner, "consensus")[0] == SHORT
    with pytest.raises(ValueError, match="accept"):
        choose([SHORT], examples, runner, "vibes")


def test_the_persons_replies_are_their_own_answered_turns_with_the_request_a_check_sees():
    from clawgym.rl.types import Turn

    def turn(user, request, reply):
        context = [{"role": "user", "content": request}, {"role": "assistant", "content": "earlier"},
                   {"role": "user", "content": "and now?"}]
        return Turn("e", 0, context, {"role": "assistant", "content": reply}, info={"user": user})

    turns = [turn("ann", f"task {k}", f"reply {k}") for k in range(5)] + [turn("bob", "his", "his reply"),
                                                                           turn("ann", "empty", "  ")]
    assert wish_checks.person_replies(turns, "ann") == [(f"task {k}", f"reply {k}") for k in range(5)]
    assert wish_checks.person_replies(turns, "ann", limit=2) == [("task 3", "reply 3"), ("task 4", "reply 4")]
    assert wish_checks.person_replies(turns, "bob") == [("his", "his reply")]
    assert wish_checks.person_replies(turns, "carol") == []


def test_the_background_compiler_reads_the_persons_replies_when_it_compiles_their_wish():
    seen, done = [], []

    class Recording:
        def compile(self, wish, request, replies):
            seen.append((wish, request, list(replies)))
            return wish_checks.Compiled(wish, None, "refused")

    background = BackgroundCompiler(Recording(), on_compiled=lambda user, wish_id, outcome: done.append(user),
                                    replies_of=lambda user: [("q", f"{user}'s reply")])
    background.submit("ann", "w1", "keep it short", "the request")
    wait_for(lambda: done, timeout=10)
    background.close()
    assert seen == [("keep it short", "the request", [("q", "ann's reply")])] and background.stats["refused"] == 1


def test_compiling_asks_for_drafts_and_examples_and_keeps_the_draft_that_passes(runner, monkeypatch):
    from clawgym.inference import completion

    asked, batches = [], []
    answers = {"code": f"```python\n{SHORT}```", "drafts": ["CANNOT CHECK", "def met(a, b):\n  x"]}

    def completions(policy, jobs):
        batches.append(len(jobs))
        texts, drafts, examples = [], iter(answers["drafts"]), {True: iter(EXAMPLES.meet), False: iter(EXAMPLES.miss)}
        for messages, sampling in jobs:
            asked.append(messages[-1]["content"])
            if "def met" in messages[-1]["content"]:
                texts.append(answers["code"] if sampling.temperature == 0 else next(drafts, "CANNOT CHECK"))
            elif messages[0]["role"] == "system" and messages[0]["content"].startswith("You are a helpful"):
                assert messages[-1]["content"] == EXAMPLES.request  # the replies answer the person's request
                texts.append(next(examples["Do exactly as they asked" in messages[0]["content"]], ""))
            else:
                texts.append("How do I boil an egg?")
        return texts

    monkeypatch.setattr(completion, "completions", completions)
    outcome = WishCompiler(object(), runner, drafts=3).compile("keep it very short", EXAMPLES.request)
    assert outcome.code == SHORT and len(outcome.drafts) == 2  # "CANNOT CHECK" is no draft ...
    assert "NameError" in outcome.drafts[1].error  # ... and one that crashes on the examples is not kept
    assert batches == [3 + 2 * EXAMPLES_EACH]  # the drafts and the example replies: one batch
    batches.clear()
    assert WishCompiler(object(), runner).compile("keep it very short").code == SHORT  # the model wrote the request
    assert any("Write one short message" in a for a in asked) and batches == [6 + 1, 2 * EXAMPLES_EACH]
    answers.update(code="CANNOT CHECK", drafts=["CANNOT CHECK"])
    batches.clear()
    cannot = WishCompiler(object(), runner, drafts=2).compile("be kinder")
    assert cannot.code is None and "cannot check" in cannot.note
    assert batches == [2 + 1]  # no code to test: no example replies written
    assert WishCompiler(object(), runner).compile("answer faster").note == "no reply can show this wish"


def test_a_tiny_model_compiles_in_the_background_without_crashing(runner, tmp_path):
    from clawgym.inference.hf import HFPolicy

    memory = WishMemory(TurnLog(tmp_path / "turns.jsonl"))
    [wish] = memory.add("ann", "Keep it under 20 words.", turn_id="t1", source="reply")
    background = BackgroundCompiler(WishCompiler(HFPolicy.from_pretrained("tiny-random-qwen"), runner, drafts=2,
                                                                 max_code_tokens=16, max_example_tokens=16),
                                    on_compiled=lambda user, wish_id, out: memory.set_check(user, wish_id, out.wish,
                                                                                           out.code, out.note))
    assert background.submit("ann", wish.id, wish.text) and not background.submit("ann", wish.id, wish.text)
    wait_for(lambda: memory.wishes("ann")[0].check_state, timeout=120)
    background.close()
    assert memory.wishes("ann")[0].check_state in ("compiled", "refused")  # random weights: almost surely refused
    assert background.stats["errors"] == 0
    memory.log.close()


# ---- kept with the wish ---------------------------------------------------------------------------------


def test_a_check_is_kept_with_its_wish_survives_a_restart_and_goes_with_the_wish(tmp_path):
    path = tmp_path / "turns.jsonl"
    memory = WishMemory(TurnLog(path))
    [short] = memory.add("ann", "Keep it under 50 words.", turn_id="t1", source="reply")
    [french] = memory.add("ann", "Reply in French.", turn_id="t2", source="reply")
    [bob] = memory.add("bob", "Keep it under 50 words.", turn_id="t3", source="reply")
    assert [w.id for w in memory.uncompiled()] == [short.id, french.id, bob.id]
    assert memory.set_check("ann", short.id, short.text, SHORT, "right on 4") is not None
    assert memory.set_check("ann", french.id, french.text, None, "the judge model wrote no check") is not None
    assert memory.set_check("ann", short.id, "some older words", SHORT) is None  # compiled for words it no longer has
    assert memory.checks("ann") == {short.text: SHORT} and memory.checks("bob") == {}
    assert [w.id for w in memory.uncompiled()] == [bob.id]
    memory.log.close()

    again = WishMemory(TurnLog(path))
    assert again.checks("ann") == {short.text: SHORT}
    assert again.wishes("ann")[1].check_state == "refused" and "no check" in again.wishes("ann")[1].check_note
    assert again.wishes("ann")[0].to_json()["check"] == SHORT
    removed = again.remove("ann", short.id)
    assert removed.id == short.id and again.checks("ann") == {}
    again.log.close()
    third = WishMemory(TurnLog(path))
    assert third.checks("ann") == {} and [w.text for w in third.wishes("ann")] == ["reply in French"]
    third.set_check("bob", bob.id, bob.text, SHORT)
    assert third.log.forget_user("bob") > 0 and third.forget("bob") == 1
    third.log.close()
    assert "bob" not in path.read_text() and WishMemory(TurnLog(path)).checks("bob") == {}


def test_a_rephrased_wish_drops_its_check_and_a_check_taken_back_is_not_compiled_again(tmp_path):
    memory = WishMemory(TurnLog(tmp_path / "turns.jsonl"))
    [wish] = memory.add("ann", "Keep it under 50 words.", turn_id="t1", source="reply")
    memory.set_check("ann", wish.id, wish.text, SHORT)
    memory.remove_check("ann", wish.id)
    assert memory.checks("ann") == {} and memory.wishes("ann")[0].check_state == "removed"
    assert memory.set_check("ann", wish.id, wish.text, SHORT) is None  # a late compile cannot bring it back
    with pytest.raises(KeyError):
        memory.remove_check("ann", wish.id)
    memory.log.close()
    assert WishMemory(TurnLog(tmp_path / "turns.jsonl")).wishes("ann")[0].check_state == "removed"


# ---- over HTTP and on the dashboard ---------------------------------------------------------------------


def test_a_check_is_taken_back_over_http_with_the_usual_access_rules(tmp_path):
    log = TurnLog(tmp_path / "turns.jsonl")
    dashboard = Dashboard()
    memory = WishMemory(log, on_change=dashboard.observe_wishes)
    gateway = ChatGateway(PolicyResponder(ScriptedPolicy(lambda m: "x", byte_tokens=True)), log)
    users = UserDirectory({"k-alice": "alice", "k-bob": "bob"}, admin_key="k-admin")
    app = build_gateway_app(gateway, users=users, dashboard=dashboard, wishes=memory)
    [wish] = memory.add("alice", "Keep it under 50 words.", turn_id="t1", source="reply")
    memory.set_check("alice", wish.id, wish.text, SHORT, "right on 4")
    alice, bob, admin = ({"Authorization": f"Bearer {k}"} for k in ("k-alice", "k-bob", "k-admin"))
    with BackgroundServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        data = client.get("/dashboard/data", headers=admin).json()
        [shown] = data["users"]["alice"]["wishes"]
        assert shown["check"] == SHORT and shown["check_note"] == "right on 4"
        assert "how I check this" in client.get("/dashboard").text
        assert client.get("/v1/wishes", headers=alice).json()["wishes"][0]["check"] == SHORT
        assert client.delete(f"/v1/wishes/{wish.id}/check").status_code == 401
        eve = {"Authorization": "Bearer k-eve"}
        assert client.delete(f"/v1/wishes/{wish.id}/check", headers=eve).status_code == 401
        denied = client.delete(f"/v1/wishes/{wish.id}/check", headers=bob)
        assert denied.status_code == 403 and "another user" in denied.json()["error"]["message"]
        assert client.delete("/v1/wishes/nope/check", headers=alice).status_code == 404
        assert memory.checks("alice") == {wish.text: SHORT}  # refusals change nothing
        gone = client.delete(f"/v1/wishes/{wish.id}/check", headers=alice)
        assert gone.status_code == 200 and gone.json()["wish"]["check_state"] == "removed"
        again = client.delete(f"/v1/wishes/{wish.id}/check", headers=alice)
        assert again.status_code == 404 and "no compiled check" in again.json()["error"]["message"]
        assert memory.texts("alice") == ["keep it under 50 words"]  # the wish itself stays
        assert client.get("/dashboard/data", headers=admin).json()["users"]["alice"]["wishes"][0]["check"] == ""
    gateway.log.close()
    assert WishMemory(TurnLog(tmp_path / "turns.jsonl")).checks("alice") == {}  # on disk before the answer


# ---- the rubric -----------------------------------------------------------------------------------------


def test_the_rubric_decides_by_a_compiled_check_first_and_falls_back_when_it_errs(runner):
    context = [{"role": "user", "content": "How do I boil an egg?"}]
    wish = "be brief like a telegram"  # no cue decides it: without a check and a model it stays unsure
    crash = "def met(request, reply):\n    return reply[1000] == 'x'\n"
    checks = {"ann": {wish: SHORT}, "bob": {wish: crash}}
    rubric = RubricJudge(None, lambda user: [wish], checks_of=checks.get, runner=runner)
    results = rubric.score_many([("ann", context, "Boil ten minutes."),
                                 ("ann", context, "Put the egg in cold water and bring it to the boil slowly."),
                                 ("bob", context, "Boil ten minutes."), ("cat", context, "Boil ten minutes.")])
    assert [(r, [(c.met, c.source) for c in cs]) for r, cs in results] == [
        (1.0, [(True, "compiled")]), (0.0, [(False, "compiled")]), (None, [(None, "unsure")]),
        (None, [(None, "unsure")])]
    assert rubric.stats["by_compiled"] == 2 and rubric.stats["compiled_errors"] == 1
    assert runner.starts >= 1
    explicit = rubric.check_many([([wish], context, "Boil ten minutes.")])  # no users: no compiled checks
    assert explicit[0][0].source == "unsure"
    empty = rubric.check_many([([wish], context, "")], users=["ann"])  # an empty reply meets no wish, as before
    assert (empty[0][0].met, empty[0][0].source) == (False, "cues")


# ---- serve.wish_checks ----------------------------------------------------------------------------------


def test_serve_wish_checks_is_off_by_default_and_compiles_a_new_wish_off_the_replys_path(tmp_path, runner):
    from clawgym.rl.judge import RuleJudge
    from clawgym.rl.launch import load_config
    from clawgym.serve.main import build_serving
    from tests.test_chat_serve import config_file

    assert load_config(config_file(tmp_path, train=False)).serve.wish_checks is False
    serving = build_serving(load_config(config_file(tmp_path, train=False, wish_checks=True)), device="cpu")
    assert serving.compiler is not None
    submitted = []
    serving.compiler.submit = lambda *job: submitted.append(job) or True  # the tiny model's compile is not the point

    class CorrectionIsBad(RuleJudge):
        name = "prm"

        def verdict(self, turn):
            return -1.0, "a correction"

    serving.gateway.judge_stage.judges = [CorrectionIsBad()]
    headers = {"Authorization": "Bearer k", "X-Session-Id": "s1"}
    messages = [{"role": "user", "content": "Write a note to my neighbour about the noise."}]
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=30) as client:
        first = client.post("/v1/chat/completions", headers=headers, json={"model": "m", "messages": messages})
        messages += [{"role": "assistant", "content": first.json()["choices"][0]["message"]["content"]},
                     {"role": "user", "content": "Keep it under 30 words."}]
        started = time.monotonic()
        client.post("/v1/chat/completions", headers={**headers, "X-Session-Done": "true"},
                    json={"model": "m", "messages": messages})
        assert time.monotonic() - started < 10
        wait_for(lambda: submitted, timeout=20)
    [(user, wish_id, text, request)] = submitted
    assert text == "keep it under 30 words" and request == "Write a note to my neighbour about the noise."
    assert serving.wishes.owner(wish_id) == user
    serving.compiler.close()
    serving.gateway.log.close()


def test_the_separates_rule_keeps_a_draft_that_tells_the_sides_apart_when_some_examples_took_the_wrong_side():
    from clawgym.personal.wish_checks import Draft, passes

    examples = Examples("q", ["a", "b", "c"], ["d", "e", "f"])
    noisy = Draft("code", meet_hits=1, miss_hits=3)  # two "meet" replies did not meet the wish
    assert not passes(noisy, examples) and passes(noisy, examples, "separates")
    assert not passes(Draft("code", meet_hits=0, miss_hits=3), examples, "separates")  # never met: no evidence
    assert not passes(Draft("code", meet_hits=3, miss_hits=0), examples, "separates")  # always met
    assert not passes(Draft("code", meet_hits=2, miss_hits=1), examples, "separates")  # 2/3 met on both sides
    assert not passes(Draft("code", meet_hits=3, miss_hits=3, error="timeout"), examples, "separates")
    with pytest.raises(ValueError, match="accept"):
        WishCompiler(None, object(), accept="vibes")
