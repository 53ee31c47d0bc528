"""The shared judge: strict vote parsing, majority, retries, hints, caching, rules, the async stage."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from clawgym.core.messages import Message
from clawgym.core.policy import SamplingParams
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.judge import (
    AnswerRule,
    CompositeJudge,
    ExitCodeRule,
    HintJudge,
    JudgeStage,
    PRMJudge,
    PromptTemplates,
    TestsRule,
    ToolErrorRule,
    chosen_hint,
    majority,
    make_judges,
    parse_boxed,
    parse_hint,
    parse_verdict,
    select_hints,
    setting_for,
)
from clawgym.rl.types import JudgeResult, Turn


def make_turn(next_state: list[Message] | None = None, *, env_id: str = "clawgym/ToolCall-v0",
              action: str = "calling the tool", **kwargs) -> Turn:
    context = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "What is 6 * 7?"},
    ]
    if next_state is None:
        next_state = [{"role": "tool", "name": "python", "tool_call_id": "call_0", "content": "42"}]
    return Turn(episode_id="e", turn_index=0, context=context, action={"role": "assistant", "content": action},
                next_state=next_state, env_id=env_id, **kwargs)


class Script:
    """A judge 'model' that answers with the given outputs in call order (then repeats the last)."""

    def __init__(self, outputs: list[str | Exception], latency_s: float = 0.0) -> None:
        self.outputs = outputs
        self.prompts: list[list[Message]] = []
        self.policy = ScriptedPolicy(self, latency_s=latency_s, name="script-judge")

    def __call__(self, messages: list[Message]) -> str:
        self.prompts.append(messages)
        out = self.outputs[min(len(self.prompts) - 1, len(self.outputs) - 1)]
        if isinstance(out, Exception):
            raise out
        return out

    @property
    def calls(self) -> int:
        return len(self.prompts)


# ---------------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    "text, expected",
    [
        (r"progress \boxed{1}", 1),
        (r"\boxed{-1}", -1),
        (r"\boxed{0}", 0),
        (r"\boxed{+1}", 1),
        (r"\boxed{ -1 }", -1),
        (r"first \boxed{1} then on reflection \boxed{-1}", -1),  # the last one counts
        (r"\boxed{1} but finally \boxed{yes}", None),  # the last one is not a vote: invalid
        (r"\boxed{2}", None),
        (r"\boxed{1.0}", None),
        (r"\boxed{-0}", 0),
        (r"\boxed{}", None),
        ("boxed{1}", None),
        ("1", None),
        ("", None),
    ],
)
def test_parse_boxed_is_strict_and_takes_the_last_match(text: str, expected: int | None) -> None:
    assert parse_boxed(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        (r"(a) progress \boxed{-1}", -1),  # a box always wins over the label
        (r"\boxed{2}", None),  # a box that is not a vote stays invalid, whatever else the text says
        ("1", 1),  # what Qwen2.5-Coder-0.5B answered on BFCL-v0 calls
        (" -1 ", -1),
        ("0.", 0),
        ("(a) progress: the action worked or moved the task forward", 1),  # the 0.5B model, verbatim
        ("(b) correction or failure: the call is wrong", -1),
        ("(c)", 0),
        ("(A) progress", None),
        ("I think (a)", None),  # a label must open the answer
        ("a) progress", None),
        ("10", None),
        ("the answer is 1", None),
        ("", None),
    ],
)
def test_parse_verdict_reads_a_bare_vote_or_the_leading_class_label(text: str, expected: int | None) -> None:
    assert parse_verdict(text) == expected


def test_majority_ties_and_invalid_votes() -> None:
    assert majority([1, 1, -1]) == 1
    assert majority([-1, -1, 1]) == -1
    assert majority([1, -1]) == 0  # tie
    assert majority([1, -1, 0]) == 0  # three-way tie
    assert majority([0, 0, 1]) == 0
    assert majority([None, None, -1]) == -1  # invalid votes are ignored
    assert majority([None, None]) == 0
    assert majority([]) == 0


def test_parse_hint_and_select_hints() -> None:
    assert parse_hint(
        r"[HINT_START] Use python for big products. [HINT_END] \boxed{1}") == "Use python for big products."
    assert parse_hint("[HINT_START]a[HINT_END] [HINT_START]the second one[HINT_END]") == "the second one"
    assert parse_hint("[HINT_START]   [HINT_END]") is None
    assert parse_hint("no hint") is None
    hints = [
        "exactly10!",  # 10 chars: not informative (must be longer than 10)
        "eleven char",  # 11 chars: kept
        "Check the units before answering.",
        "check the units   before answering",  # duplicate after normalisation
        None,
        "Run the code instead of guessing the product.",
        "Read the task statement again carefully.",
    ]
    assert select_hints(hints, max_hints=10) == [
        "Run the code instead of guessing the product.",
        "Read the task statement again carefully.",
        "Check the units before answering.",
        "eleven char",
    ]
    assert select_hints(hints, max_hints=2) == ["Run the code instead of guessing the product.",
                                                "Read the task statement again carefully."]
    assert select_hints(hints, max_hints=1, order="shortest") == ["eleven char"]
    with pytest.raises(ValueError, match="order"):
        select_hints(hints, order="random")


# ---------------------------------------------------------------------------------------------- PRM votes
async def test_prm_majority_of_m_votes() -> None:
    script = Script([r"(a) progress \boxed{1}", r"\boxed{1}", r"(b) \boxed{-1}"])
    judge = PRMJudge(script.policy, m=3)
    result = await judge.judge(make_turn())
    assert result.score == 1.0
    assert sorted(result.votes) == [-1.0, 1.0, 1.0]
    assert result.source == "prm" and len(result.raw) == 3
    assert script.calls == 3


async def test_prm_reads_the_class_label_a_small_model_answers_with() -> None:
    script = Script(["(b) correction or failure: the arguments are wrong", "1", "I cannot tell"])
    judge = PRMJudge(script.policy, m=3, max_retries=0)
    result = await judge.judge(make_turn())
    assert result.votes == [-1.0, 1.0, None] and result.score == 0.0  # a tie of the two valid votes
    assert judge.stats.invalid == 1


async def test_prm_tie_gives_zero() -> None:
    script = Script([r"\boxed{1}", r"\boxed{-1}"])
    result = await PRMJudge(script.policy, m=2).judge(make_turn())
    assert result.score == 0.0 and sorted(result.votes) == [-1.0, 1.0]


async def test_invalid_votes_are_retried_then_ignored() -> None:
    # vote 0: two invalid answers, then -1 on its last allowed try; vote 1: -1; vote 2: +1
    script = Script(["I think it was fine", r"\boxed{7}", r"\boxed{-1}", r"\boxed{-1}", r"\boxed{1}"])
    judge = PRMJudge(script.policy, m=3, max_retries=2)
    result = await judge.judge(make_turn())
    assert script.calls == 5
    assert judge.stats.invalid == 2
    assert result.votes == [-1.0, -1.0, 1.0] and result.score == -1.0


async def test_retries_are_bounded_and_all_invalid_gives_zero() -> None:
    script = Script(["no verdict here"])
    judge = PRMJudge(script.policy, m=2, max_retries=1)
    result = await judge.judge(make_turn())
    assert script.calls == 4  # (1 + 1 retry) x 2 votes, then it gives up
    assert result.votes == [None, None] and result.score == 0.0
    assert result.raw == ["no verdict here", "no verdict here"]


async def test_judge_backend_errors_are_retried() -> None:
    script = Script([RuntimeError("backend down"), r"\boxed{-1}"])
    judge = PRMJudge(script.policy, m=1, max_retries=1)
    result = await judge.judge(make_turn())
    assert result.score == -1.0 and judge.stats.errors == 1 and script.calls == 2
    down = Script([RuntimeError("backend down")])
    judge = PRMJudge(down.policy, m=1, max_retries=2)
    from clawgym.rl.judge import JudgeUnavailable

    with pytest.raises(JudgeUnavailable, match="backend down"):  # no answer at all is not a 0 verdict
        await judge.judge(make_turn())
    assert down.calls == 3


async def test_votes_get_distinct_reproducible_seeds() -> None:
    seen: list[int | None] = []

    class Recorder(ScriptedPolicy):
        async def generate(self, messages, tools=None, sampling=None):  # noqa: ANN001
            seen.append(sampling.seed)
            return await super().generate(messages, tools, sampling)

    judge = PRMJudge(Recorder([r"\boxed{1}"]), m=3, sampling=SamplingParams(temperature=0.6, seed=100))
    await judge.judge(make_turn())
    assert sorted(seen) == [100, 101, 102]


# ---------------------------------------------------------------------------------------------- hints
async def test_hint_judge_keeps_informative_deduplicated_hints_longest_first() -> None:
    script = Script(
        [
            r"[HINT_START]Multiply with the python tool.[HINT_END] \boxed{1}",
            r"[HINT_START]multiply with the  Python tool[HINT_END]\boxed{1}",  # duplicate
            r"[HINT_START]too short[HINT_END] \boxed{1}",  # not informative
            r"[HINT_START]A hint from a vote that scored -1 is ignored entirely.[HINT_END] \boxed{-1}",
            r"[HINT_START]State the final answer as a bare number, 42.[HINT_END] \boxed{1}",
        ]
    )
    judge = HintJudge(script.policy, m=5, max_hints=3)
    result = await judge.judge(make_turn())
    assert result.hints == ["State the final answer as a bare number, 42.", "Multiply with the python tool."]
    assert chosen_hint(result) == "State the final answer as a bare number, 42."
    assert result.score == 1.0 and result.source == "hint"
    assert chosen_hint(None) is None and chosen_hint(JudgeResult()) is None


async def test_hint_prompt_asks_for_the_hint_format() -> None:
    script = Script([r"\boxed{-1}"])
    result = await HintJudge(script.policy, m=1).judge(make_turn())
    assert result.hints == [] and result.score == -1.0
    system, user = script.prompts[0]
    assert "[HINT_START]" in system["content"] and "[HINT_END]" in system["content"]


# ---------------------------------------------------------------------------------------------- cache
async def test_the_same_turn_is_judged_once() -> None:
    script = Script([r"\boxed{1}"])
    judge = PRMJudge(script.policy, m=3)
    turn = make_turn()
    first = await judge.judge(turn)
    again = await judge.judge(turn)
    copy_of_turn = make_turn()  # same content, another turn id
    third = await judge.judge(copy_of_turn)
    assert script.calls == 3 and judge.stats.cache_hits == 2
    assert first == again == third
    again.votes.append(99.0)  # callers get copies: the cache is not corrupted
    assert (await judge.judge(turn)).votes == [1.0, 1.0, 1.0]
    # different evidence -> judged again
    await judge.judge(make_turn([{"role": "tool", "name": "python", "content": "41"}]))
    assert script.calls == 6


async def test_concurrent_duplicates_share_one_set_of_calls() -> None:
    script = Script([r"\boxed{-1}"], latency_s=0.05)
    judge = PRMJudge(script.policy, m=3)
    results = await asyncio.gather(*(judge.judge(make_turn()) for _ in range(4)))
    assert script.calls == 3
    assert all(r.score == -1.0 for r in results)


def test_cache_key_covers_the_judge_model_name() -> None:
    a = PRMJudge(ScriptedPolicy(name="judge-a"), m=3)
    b = PRMJudge(ScriptedPolicy(name="judge-b"), m=3)
    turn = make_turn()
    assert a.prompt(turn) == b.prompt(turn)
    assert a.cache_key(a.prompt(turn)) != b.cache_key(b.prompt(turn))


# ---------------------------------------------------------------------------------------------- prompts
@pytest.mark.parametrize(
    "env_id, setting, marker",
    [
        ("clawgym/Terminal-v0", "terminal", "exit code"),
        ("clawgym/ToolCall-v0", "toolcall", "tool result"),
        ("clawgym/OpenClawChat-v0", "chat", "user's reply"),
        ("clawgym/SWE-v0", "swe", "test output"),
        ("clawgym/GUI-v0", "gui", "page observation"),
        ("someone/Else-v3", "default", "whatever the environment sent back"),
    ],
)
def test_prompt_template_per_setting(env_id: str, setting: str, marker: str) -> None:
    assert setting_for(env_id) == setting
    judge = PRMJudge(ScriptedPolicy(), m=1)
    turn = make_turn(env_id=env_id, action="I will run $HOME {braces} \\boxed{x}")
    system, user = judge.prompt(turn)
    assert marker in system["content"]
    assert "What is 6 * 7?" in user["content"]
    assert "I will run $HOME {braces} \\boxed{x}" in user["content"]  # user text is never a template
    assert "[tool python] 42" in user["content"]
    assert "$" not in system["content"]


def test_setting_override_and_unknown_setting() -> None:
    turn = make_turn(env_id="clawgym/ToolCall-v0")
    system, _ = PRMJudge(ScriptedPolicy(), m=1, setting="terminal").prompt(turn)
    assert "Linux shell" in system["content"]
    turn.info["setting"] = "chat"
    system, _ = PRMJudge(ScriptedPolicy(), m=1).prompt(turn)
    assert "personal assistant" in system["content"]
    with pytest.raises(ValueError, match="unknown setting"):
        PRMJudge(ScriptedPolicy(), setting="space")


def test_custom_template_directory_errors_are_clear(tmp_path: Path) -> None:
    (tmp_path / "guide.default.txt").write_text("guide")
    (tmp_path / "prm.txt").write_text("### system\nJudge $nonsense\n### user\n$action")
    judge = PRMJudge(ScriptedPolicy(), m=1, templates=PromptTemplates(tmp_path))
    with pytest.raises(ValueError, match="unknown field 'nonsense'"):
        judge.prompt(make_turn())
    (tmp_path / "prm.txt").write_text("no sections")
    with pytest.raises(ValueError, match="### system"):
        PRMJudge(ScriptedPolicy(), m=1, templates=PromptTemplates(tmp_path)).prompt(make_turn())
    with pytest.raises(FileNotFoundError):
        PromptTemplates(tmp_path / "missing")


def test_long_evidence_is_clipped_head_and_tail() -> None:
    output = "START " + "x" * 20_000 + " Traceback: the real error"
    judge = PRMJudge(ScriptedPolicy(), m=1, max_chars=1000)
    _, user = judge.prompt(make_turn([{"role": "tool", "name": "python", "content": output}]))
    assert "START" in user["content"] and "the real error" in user["content"]
    assert len(user["content"]) < 3000


# ---------------------------------------------------------------------------------------------- rules
def rollout_test_env():  # noqa: ANN201
    """The small env (and its scripted agent) that tests/test_rollout.py registers."""
    try:
        from test_rollout import ENV_ID, adder_responder
    except ImportError:  # tests/ imported as a package
        from tests.test_rollout import ENV_ID, adder_responder
    return ENV_ID, adder_responder


def tool(content: str) -> Message:
    return {"role": "tool", "name": "shell", "tool_call_id": "c", "content": content}


async def test_rule_judges() -> None:
    assert (await ToolErrorRule().judge(make_turn([tool("Error: unknown tool 'pyhton'")]))).score == -1.0
    assert await ToolErrorRule().judge(make_turn([tool("42")])) is None
    openclaw_failure = '{\n  "status": "error",\n  "tool": "apply_patch",\n  "error": "The first line of the patch"\n}'
    assert (await ToolErrorRule().judge(make_turn([tool(openclaw_failure)]))).score == -1.0  # OpenClaw's shape
    assert await ToolErrorRule().judge(make_turn([tool('{"status": "ok", "path": "a.txt"}')])) is None
    assert await ToolErrorRule().judge(make_turn([tool('{"status": "error", broken')])) is None  # not JSON: no rule
    assert await ToolErrorRule().judge(
        make_turn([{"role": "user", "content": "Error: that is not what I asked"}])) is None

    assert (await ExitCodeRule().judge(make_turn([tool("exit code: 2\nls: cannot access")]))).score == -1.0
    assert (await ExitCodeRule().judge(make_turn([tool("Exit code: -9 (killed)")]))).score == -1.0
    assert await ExitCodeRule().judge(make_turn([tool("exit code: 0\nok")])) is None
    assert (await ExitCodeRule(zero_is_good=True).judge(make_turn([tool("exit code: 0\nok")]))).score == 1.0
    assert await ExitCodeRule().judge(make_turn([tool("no code here")])) is None

    failing = await TestsRule().judge(make_turn([tool("=== 3 passed, 1 failed in 0.2s ===")]))
    assert failing.score == -1.0 and failing.source == "rule:tests" and "1 test(s) failing" in failing.raw[0]
    assert (await TestsRule().judge(make_turn([tool("==== 5 passed in 0.1s ====")]))).score == 1.0
    assert (await TestsRule().judge(make_turn([tool("=== 4 passed, 2 errors ===")]))).score == -1.0
    assert (await TestsRule().judge(make_turn([tool("Ran 3 tests\nFAILED (failures=1)")]))).score == -1.0
    assert (await TestsRule().judge(make_turn([tool("")], info={"tests_failed": 0, "tests_passed": 7}))).score == 1.0
    assert await TestsRule().judge(make_turn([tool("hello")])) is None

    assert (
        await AnswerRule().judge(make_turn([], terminated=True, env_reward=1.0, info={"success": True}))).score == 1.0
    assert (
        await AnswerRule().judge(make_turn([], terminated=True, env_reward=0.0, info={"success": False}))).score == -1.0
    assert await AnswerRule().judge(make_turn([], truncated=True)) is None
    assert await AnswerRule().judge(make_turn()) is None


async def test_composite_replace_skips_the_llm_when_a_rule_decides() -> None:
    script = Script([r"\boxed{1}"])
    judge = CompositeJudge(llm=PRMJudge(script.policy, m=3))
    error_turn = make_turn([tool("Error: python failed: ZeroDivisionError")])
    result = await judge.judge(error_turn)
    assert result.score == -1.0 and result.source == "rule:tool_error" and script.calls == 0
    result = await judge.judge(make_turn())  # no rule applies: the PRM decides
    assert result.score == 1.0 and result.source == "prm" and script.calls == 3
    # a verifiable failure beats a verifiable success
    mixed = make_turn([tool("exit code: 1"), tool("==== 2 passed ====")])
    result = await judge.judge(mixed)
    assert result.score == -1.0 and set(result.source.split("+")) == {"rule:exit_code", "rule:tests"}


async def test_composite_join_calls_the_llm_and_the_rule_wins() -> None:
    script = Script([r"\boxed{1}"])
    judge = CompositeJudge(llm=PRMJudge(script.policy, m=2), mode="join")
    result = await judge.judge(make_turn([tool("exit code: 127\nfoo: command not found")]))
    assert script.calls == 2
    assert result.score == -1.0 and result.votes == [1.0, 1.0]
    assert result.source == "rule:exit_code+prm"
    rules_only = CompositeJudge(name="rules")
    assert await rules_only.judge(make_turn()) is None
    with pytest.raises(ValueError, match="mode"):
        CompositeJudge(mode="vote")


def test_make_judges_from_cli_strings() -> None:
    policy = ScriptedPolicy()
    judges = make_judges("rules+prm, hint", policy, m=2)
    assert [j.name for j in judges] == ["judge", "hint"]
    assert [j.name for j in make_judges("rules")] == ["rules"]
    with pytest.raises(ValueError, match="needs a judge policy"):
        make_judges("prm")
    with pytest.raises(ValueError, match="unknown judge"):
        make_judges("oracle", policy)


# ---------------------------------------------------------------------------------------------- the stage
async def test_stage_judges_every_turn_and_keeps_failed_ones() -> None:
    class Broken:
        name = "broken"

        async def judge(self, turn: Turn) -> JudgeResult:
            raise RuntimeError("judge bug")

    script = Script([r"\boxed{1}"])
    judged: list[Turn] = []
    stage = JudgeStage([PRMJudge(script.policy, m=1), CompositeJudge(name="rules"), Broken()], workers=2,
                       on_judged=judged.append)
    turns = [make_turn([tool(f"result {i}")]) for i in range(5)] + [make_turn([tool("Error: boom")])]
    with pytest.raises(RuntimeError, match="not running"):
        stage.submit(turns[0])
    async with stage:
        for turn in turns:
            stage.submit(turn)
    assert len(judged) == 6 and {t.turn_id for t in judged} == {t.turn_id for t in turns}
    for turn in turns:
        assert turn.judge["prm"].score == 1.0
        assert turn.judge["broken"].source == "error" and "judge bug" in turn.judge["broken"].raw[0]
        assert turn.timings["judged_at"] >= turn.timings["queued_at"]
    assert "rules" not in turns[0].judge and turns[-1].judge["rules"].score == -1.0
    assert stage.stats.submitted == 6 and stage.stats.judged == 6 and stage.stats.errors == 6
    with pytest.raises(ValueError, match="unique"):
        JudgeStage([PRMJudge(script.policy), PRMJudge(script.policy)])


async def test_rollouts_never_wait_for_a_slow_judge() -> None:
    from clawgym.rl.rollout import RolloutPool, make_groups

    ENV_ID, adder_responder = rollout_test_env()

    slow_judge = Script([r"\boxed{1}"], latency_s=0.8)
    stage = JudgeStage(PRMJudge(slow_judge.policy, m=1, concurrency=4), workers=8)
    await stage.start()
    started = time.perf_counter()
    async with RolloutPool(ENV_ID, ScriptedPolicy(adder_responder), num_workers=4, on_turn=stage.submit) as pool:
        trajectories = await pool.run(make_groups(["add-1", "add-2"], group_size=2))
    rollouts_done = time.time()
    assert stage.stats.judged == 0, "the rollouts waited for a verdict"
    await stage.close()
    judge_s = time.perf_counter() - started
    turns = [t for traj in trajectories for t in traj.turns]
    assert len(turns) == 8 and all(t.judge["prm"].score == 1.0 for t in turns)
    assert min(t.timings["judged_at"] for t in turns) > rollouts_done
    assert judge_s >= 0.8 * 8 / 4 * 0.9  # 8 judge calls, 4 at a time: the semaphore bounds them


# ---------------------------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_end_to_end_toolcall_with_tiny_model_as_policy_and_prm(tmp_path: Path) -> None:
    from clawgym.rl.rollout import run_rollout_cli
    from clawgym.rl.types import read_jsonl

    hf = pytest.importorskip("clawgym.inference.hf")
    env_id = "clawgym/ToolCall-v0"
    started = time.perf_counter()
    policy = hf.HFPolicy.from_pretrained("tiny-random")
    print(f"tiny model load: {time.perf_counter() - started:.1f} s")
    try:
        prm = PRMJudge(policy, m=2, max_retries=0, sampling=SamplingParams(temperature=0.6, max_tokens=8, seed=1))
        out = tmp_path / "judged.jsonl"
        summary = run_rollout_cli(
            env_id,
            policy,
            2,
            out_path=out,
            judge=[prm, CompositeJudge(name="rules")],
            group_size=2,
            num_workers=2,
            seed=0,
            sampling=SamplingParams(temperature=1.0, max_tokens=8),
            env_kwargs={"max_turns": 2},
        )
    finally:
        asyncio.run(policy.close())
    print(f"rollout + judge: {summary['wall_s']:.1f} s for {summary['turns']} turns")
    turns = list(read_jsonl(out, Turn))
    assert summary["episodes"] == 2 and summary["errors"] == 0, summary
    assert len(turns) == summary["turns"] == summary["turns_written"] >= 2
    for turn in turns:
        assert turn.env_id == env_id
        assert turn.prompt_ids and turn.response_ids
        assert len(turn.response_logprobs) == len(turn.response_ids)
        assert all(lp <= 0.0 for lp in turn.response_logprobs)
        assert turn.policy_version == 0
        prm_result = turn.judge["prm"]
        assert len(prm_result.votes) == 2 and len(prm_result.raw) == 2
        assert prm_result.score in (-1.0, 0.0, 1.0)
        assert not any(raw.startswith("<judge call failed") for raw in prm_result.raw)
        if turn.terminated:  # the answer rule sees the env's own check
            assert turn.judge["rules"].score == (1.0 if turn.env_reward > 0 else -1.0)
    assert summary["judge"]["judged"] == len(turns) and summary["judge"]["errors"] == 0


# ---------------------------------------------------------------------------------------------- issue 13
def test_llm_judge_cache_key_includes_the_policy_version() -> None:
    """With ``judge.model: policy`` the weights change under the judge: old verdicts must not be reused."""
    script = Script([r"\boxed{1}", r"\boxed{-1}"])
    judge = PRMJudge(script.policy, m=1)
    turn = make_turn()
    assert asyncio.run(judge.judge(turn)).score == 1.0
    assert asyncio.run(judge.judge(turn)).score == 1.0 and script.calls == 1  # same weights: cached
    script.policy._version = getattr(script.policy, "_version", 0) + 1  # new weights published
    assert asyncio.run(judge.judge(turn)).score == -1.0 and script.calls == 2


def chat_turn(reply: str) -> Turn:
    return make_turn([{"role": "user", "content": reply}], env_id="clawgym/OpenClawChat-v0")


@pytest.mark.parametrize("reply, score", [
    ("Thanks, that's exactly what I needed. HOMEWORK_DONE", 1.0),
    ("Perfect!", 1.0),
    ("Please address the student by name.", -1.0),
    ("That doesn't give me the final number. What is the answer?", -1.0),
])
def test_prob_judge_cues_decide_clear_replies_and_hint_restates_the_correction(reply: str, score: float) -> None:
    from clawgym.rl.judge import ProbJudge

    result = asyncio.run(ProbJudge(None, name="hint", hints=True).judge(chat_turn(reply)))
    assert result.score == score and result.source == "cues"
    if score < 0:
        assert reply.rstrip("?.") .split(".")[0].lower() in result.hints[0].lower()
    else:
        assert result.hints == []
    assert asyncio.run(ProbJudge(None).judge(make_turn([]))) is None  # no user reply: no opinion


def test_prob_judge_reads_label_probabilities_in_batches_keyed_by_version() -> None:
    from clawgym.inference.hf import HFPolicy
    from clawgym.rl.judge import ProbJudge, ProbScorer

    policy = HFPolicy.from_pretrained("tiny-random")
    scorer = ProbScorer(policy, batch_size=8)
    judge = ProbJudge(scorer=scorer, cues=False)
    replies = [f"reply number {i}" for i in range(6)]

    async def judge_all():
        return await asyncio.gather(*(judge.judge(chat_turn(r)) for r in replies))

    results = asyncio.run(judge_all())
    assert all(r.score in (1.0, -1.0) and r.source == "prob" and r.raw[0].startswith("margin") for r in results)
    assert scorer.forward_passes == 1  # six turns, one batched forward pass
    asyncio.run(judge_all())
    assert scorer.forward_passes == 1  # cached
    policy._version += 1
    asyncio.run(judge_all())
    assert scorer.forward_passes == 2  # new weights: judged again
    with pytest.raises(TypeError, match="no HF model"):
        from clawgym.inference.scoring import label_margins

        label_margins(Script(["x"]).policy, [[{"role": "user", "content": "hi"}]])
    with pytest.raises(ValueError, match="cues=True"):
        ProbJudge(None, cues=False)


def test_the_verdict_threshold_is_the_judge_models_own() -> None:
    """Margins do not carry across models (SmolLM2's sit near -1.3, Qwen's near 0): each fitted model has its
    threshold, any other model the neutral 0, and an explicit threshold wins."""
    from types import SimpleNamespace

    from clawgym.rl.judge import ProbJudge, ProbScorer
    from clawgym.rl.judge.prob import THRESHOLD, THRESHOLDS, threshold_for

    assert threshold_for("qwen2.5-coder-0.5b") == THRESHOLDS["qwen2.5-coder-0.5b"]
    # a separate judge model is loaded as "judge:<model>" (clawgym.rl.launch.build)
    assert threshold_for("judge:qwen2.5-coder-1.5b") == THRESHOLDS["qwen2.5-coder-1.5b"]
    assert threshold_for("smollm2-135m") != threshold_for("qwen2.5-coder-0.5b")
    assert threshold_for("/some/checkpoint") == THRESHOLD == 0.0
    qwen = ProbScorer(SimpleNamespace(name="judge:qwen2.5-coder-1.5b"))
    assert ProbJudge(scorer=qwen).threshold == THRESHOLDS["qwen2.5-coder-1.5b"]
    assert ProbJudge(scorer=qwen, threshold=0.5).threshold == 0.5
    assert ProbJudge(None).threshold == THRESHOLD  # cues only: never used


def test_make_judges_prob_and_probhint_share_one_scorer() -> None:
    from clawgym.rl.judge import ProbJudge

    prob, hint = make_judges("prob,probhint", Script(["x"]).policy)
    assert isinstance(prob, ProbJudge) and prob.name == "prob" and hint.name == "hint" and prob.scorer is hint.scorer
    with pytest.raises(ValueError, match="unknown judge"):
        make_judges("vibes")


async def test_judge_down_turns_wait_and_are_judged_later_never_lost() -> None:
    """An endpoint that is down: no 0 verdict, no lost turn, submit never blocks, the log and stats say so."""
    from clawgym.rl.judge import JudgeUnavailable

    down = ConnectionError("connection refused")
    script = Script([down] * 6 + [r"\boxed{-1}"])
    judged: list[Turn] = []
    stage = JudgeStage(PRMJudge(script.policy, m=1, max_retries=1), workers=1, on_judged=judged.append,
                       retry_s=0.05, max_retry_s=0.1)
    turns = [make_turn([tool(f"r{i}")]) for i in range(2)]
    async with stage:
        started = time.perf_counter()
        for turn in turns:
            stage.submit(turn)
        assert time.perf_counter() - started < 0.05  # users are never blocked
    assert sorted(t.turn_id for t in judged) == sorted(t.turn_id for t in turns)  # each judged once, none lost
    assert all(t.judge["prm"].score == -1.0 for t in turns)  # a real verdict, not a 0 from the outage
    assert stage.stats.unavailable >= 2 and stage.stats.waiting == 0 and stage.stats.judged == 2
    with pytest.raises(JudgeUnavailable):
        await PRMJudge(Script([down]).policy, m=2, max_retries=0).judge(make_turn())


async def test_a_slow_judge_counts_as_down_and_close_does_not_hang() -> None:
    script = Script([r"\boxed{1}"], latency_s=5.0)
    stage = JudgeStage(PRMJudge(script.policy, m=1, max_retries=0, call_timeout_s=0.05), retry_s=0.05, max_retry_s=0.05)
    await stage.start()
    stage.submit(make_turn())
    await asyncio.sleep(0.3)
    assert stage.stats.unavailable >= 1 and stage.stats.waiting == 1 and stage.stats.judged == 0
    started = time.perf_counter()
    await stage.close(timeout_s=0.2)
    assert time.perf_counter() - started < 2


def test_judge_backend_openai_config_is_checked_and_built(tmp_path: Path) -> None:
    from clawgym import launchers
    from clawgym.inference.openai import OpenAIPolicy
    from clawgym.rl.launch import ConfigError, build_judges, load_config

    config = load_config(launchers.resolve("chat"), ["judge.type=prm,hint", "judge.backend=openai",
                                                     "judge.model=qwen3-8b", "judge.base_url=http://127.0.0.1:9/v1",
                                                     "judge.timeout_s=5"])
    judges, judge_policy = build_judges(config, policy=None)
    assert isinstance(judge_policy, OpenAIPolicy) and [j.name for j in judges] == ["prm", "hint"]
    assert judges[0].call_timeout_s == 5.0
    with pytest.raises(ConfigError, match="prm,hint"):
        load_config(launchers.resolve("chat"), ["judge.backend=openai", "judge.base_url=http://127.0.0.1:9/v1"])
    with pytest.raises(ConfigError, match="judge.backend"):
        load_config(launchers.resolve("chat"), ["judge.backend=carrier-pigeon"])


@pytest.mark.parametrize("reply, hint", [
    ("No lists in a comment, please. Just sentences.", "No lists in a comment, please. Just sentences."),
    ("No headings. Just text.", "No headings. Just text."),
    ("No numbered or bulleted lists please, plain prose.", "No numbered or bulleted lists please, plain prose."),
    ("no more bold text", "No more bold text"),
    ("No, answer in French.", "Answer in French."),
    ("no - shorter please", "Shorter please"),
    ("No! I asked for the total.", "I asked for the total."),
    ("No, no lists please.", "No lists please."),
    ("Nope, the total is missing.", "The total is missing."),
    ("Hmm, use the student's name.", "Use the student's name."),
])
def test_hint_keeps_a_leading_no_that_is_part_of_the_request(reply: str, hint: str) -> None:
    """Only a refusal "No," / "no -" is dropped; "No lists" is the request itself, not a refusal."""
    from clawgym.rl.judge import hint_from_reply

    assert hint_from_reply(reply) == hint
