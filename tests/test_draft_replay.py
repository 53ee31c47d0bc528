"""The gate's greedy replay from a draft (the serving weights' reply): the same reply as plain greedy decoding,
with the draft's agreeing prefix taken without decoding steps and the rest decoded on the policy's engine."""

import asyncio

import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference import draft_replay
from clawgym.inference.draft_replay import replay_greedy, replay_many
from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import load_model

GREEDY = SamplingParams(temperature=0.0, max_tokens=20)


@pytest.fixture(scope="module")
def policy():
    torch.manual_seed(0)
    model, tokenizer = load_model("tiny-random")
    return HFPolicy(model, tokenizer, name="tiny")


def plain(policy, prompt, sampling=GREEDY):
    async def run():
        return await policy.generate_ids(prompt, sampling)
    return asyncio.run(run())


def replay(policy, prompt, draft, sampling=GREEDY):
    async def run():
        return await replay_greedy(policy, prompt, draft, sampling)
    return asyncio.run(run())


PROMPTS = [[5, 17, 99, 3, 250, 41], [7, 7, 8, 1000, 12], list(range(30, 50))]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_the_whole_draft_agrees_and_no_token_is_decoded(policy, prompt):
    expected = plain(policy, prompt)
    passes = policy.stats["forward_passes"]
    got = replay(policy, prompt, expected.response_ids)
    assert got.generation.response_ids == expected.response_ids and got.generation.text == expected.text
    assert got.accepted == len(expected.response_ids)
    assert policy.stats["forward_passes"] == passes  # the engine ran nothing: one check pass did it all


@pytest.mark.parametrize("prompt", PROMPTS)
def test_a_draft_that_parts_from_the_reply_is_kept_up_to_there_and_the_rest_is_decoded(policy, prompt):
    expected = plain(policy, prompt).response_ids
    wrong = list(expected)
    wrong[5] = (wrong[5] + 1) % 1000
    got = replay(policy, prompt, wrong + [1, 2, 3])
    assert got.generation.response_ids == expected and got.accepted == 5
    unrelated = replay(policy, prompt, [(t + 3) % 1000 for t in expected])
    assert unrelated.generation.response_ids == expected and unrelated.accepted == 0


def test_a_long_prompt_is_checked_in_chunks_and_the_engine_starts_from_the_checked_keys(policy, monkeypatch):
    monkeypatch.setattr(draft_replay, "PREFILL_CHUNK", 64)
    prompt = [(i * 37) % 900 + 10 for i in range(300)]  # over the prefix cache's 256-token minimum
    expected = plain(policy, prompt).response_ids
    reused = policy.stats["prefix_reused_tokens"]
    got = replay(policy, prompt, expected[:4] + [(expected[4] + 1) % 1000])
    assert got.generation.response_ids == expected and got.accepted == 4
    assert policy.stats["prefix_reused_tokens"] - reused == len(prompt) + 4 - 1  # only the last kept token ran again


def test_many_replays_agree_with_one_at_a_time_and_a_shorter_limit_cuts_the_draft(policy):
    drafts = [plain(policy, p).response_ids for p in PROMPTS]
    drafts[1] = drafts[1][:3] + [0]  # parts at token 3

    async def run():
        return await replay_many(policy, [(p, d, GREEDY) for p, d in zip(PROMPTS, drafts)])
    together = asyncio.run(run())
    assert [r.generation.response_ids for r in together] == [plain(policy, p).response_ids for p in PROMPTS]
    assert [r.accepted for r in together] == [len(drafts[0]), 3, len(drafts[2])]
    short = SamplingParams(temperature=0.0, max_tokens=6)
    got = replay(policy, PROMPTS[0], drafts[0], short)
    assert got.generation.response_ids == plain(policy, PROMPTS[0], short).response_ids and got.accepted == 6
    assert got.generation.finish_reason == "length"


def test_an_empty_draft_decodes_plainly_and_sampling_is_refused(policy):
    assert replay(policy, PROMPTS[0], []).generation.response_ids == plain(policy, PROMPTS[0]).response_ids
    with pytest.raises(ValueError, match="greedily"):
        replay(policy, PROMPTS[0], [1, 2], SamplingParams(temperature=0.7, max_tokens=4))


def test_the_gate_replays_the_candidate_from_the_serving_replies_and_gets_the_same_verdict(policy):
    """Weights one step apart: the candidate (a copy of the served model) starts from the serving weights' reply;
    equal weights take every token from it, other weights part somewhere, and either way the replies are what
    plain greedy decoding gives (``draft: false``)."""
    import copy

    from clawgym.personal.gate import PublishGate
    from clawgym.personal.rubric import RubricJudge
    from clawgym.rl.launch.serve_section import GateSection
    from tests.test_publish_gate import WISH, turn

    def gate(draft):
        candidate = HFPolicy(copy.deepcopy(policy.model), policy.tokenizer, name="candidate")
        g = PublishGate(GateSection(enabled=True, every=1, requests=3, max_tokens=16, draft=draft),
                        RubricJudge(None, cues=True), lambda user: [WISH], candidate, policy)
        for i, prompt in enumerate(PROMPTS):
            g.held.hold(turn(i, prompt=prompt))
        return g

    same = {k: v.clone() for k, v in policy.model.state_dict().items()}
    moved = {k: v + 0.02 * torch.randn_like(v) if v.is_floating_point() else v for k, v in same.items()}
    for weights in (same, moved):
        drafted, plain_gate = gate(True), gate(False)
        a = asyncio.run(drafted.judge(weights, 0, 1))
        b = asyncio.run(plain_gate.judge(weights, 0, 1))
        assert [r.ids for r in drafted._pending.values()] == [r.ids for r in plain_gate._pending.values()]
        assert (a.candidate, a.serving, a.candidate_tokens, a.publish) == (b.candidate, b.serving, b.candidate_tokens,
                                                                         b.publish)
        assert b.drafted == 0.0 and (a.drafted == 1.0 if weights is same else a.drafted < 1.0)
