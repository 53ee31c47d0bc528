"""The call guard: a reply that calls a tool the request does not offer is answered again in words, and
OpenClaw's trailing internal-context block is read before the person's message."""

from __future__ import annotations

import asyncio
import copy

import openai
import torch

from clawgym.core.chat_protocol import INTERNAL_CONTEXT_MARKER, person_last
from clawgym.core.messages import CALL_OPENINGS
from clawgym.core.policy import Generation, SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.inference.streaming import TextDelta
from clawgym.serve.app import build_gateway_app
from clawgym.serve.call_guard import could_open_a_call, guarded, unoffered_call
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}]
GHOST = '```json\n{"name": "water_cactus", "arguments": {"sessionId": "abc"}}\n```'
INTERNAL = {"role": "user",
            "content": [{"type": "text", "text": INTERNAL_CONTEXT_MARKER + "\nActive exec sessions: none"}]}


def test_a_call_to_a_tool_the_request_does_not_offer_is_named_and_prose_or_an_offered_call_is_not():
    offered = {"read"}
    assert "'water_cactus', which the request does not offer" in unoffered_call(GHOST, offered)
    assert "'ghost'" in unoffered_call('<tool_call>{"name": "ghost", "arguments": {}}</tool_call>', offered)
    assert "cannot be read" in unoffered_call('<tool_call>{"name": "read", "arguments": </tool_call>', offered)
    assert unoffered_call('{"name": "read", "arguments": {"path": "a"}}', offered) is None
    assert unoffered_call("Water it every two weeks.", offered) is None
    assert unoffered_call('Here is JSON: {"name": "ghost"}', offered) is None  # prose first: not a call
    wrapped = '<json>\n{\n  "name": "draft_note",\n  "arguments": {"data": "a note"}\n}'  # the default model's
    assert "'draft_note'" in unoffered_call(wrapped, offered)  # escape from a masked "{" under OpenClaw's prompt
    assert unoffered_call("<b>Water</b> it weekly.", offered) is None
    assert could_open_a_call("  ") and could_open_a_call("``") and could_open_a_call("<tool_")
    assert could_open_a_call("<json>")
    assert not could_open_a_call("Water") and not could_open_a_call("Sure")


def attempts(first: str, second: str = "Water it every two weeks."):
    """An answer function that writes ``first`` (in two deltas), and ``second`` when asked for prose."""
    asked: list[SamplingParams] = []

    async def answer(sampling):
        asked.append(sampling)
        text = second if sampling.prose_only else first
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            yield TextDelta(piece, [1], [-0.5])
        yield Generation(text=text, message={"role": "assistant", "content": text}, response_ids=[1, 1],
                         response_logprobs=[-0.5, -0.5])

    return answer, asked


def collect(answer, tools=TOOLS, sampling=None, enabled=True):
    async def run():
        return [item async for item in guarded(answer, tools, sampling or SamplingParams(), enabled)]

    return asyncio.run(run())


def test_an_unoffered_call_is_answered_again_in_words_and_the_client_sees_only_the_second_reply():
    answer, asked = attempts(GHOST)
    items = collect(answer)
    assert [a.prose_only for a in asked] == [False, True]
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert text == "Water it every two weeks."  # the rejected draft never reaches the client
    generation = items[-1]
    assert generation.text == text and generation.metadata["call_guard"]["rejected"] == GHOST
    assert "water_cactus" in generation.metadata["call_guard"]["reason"]


def test_an_offered_call_prose_no_tools_or_the_guard_off_pass_untouched_in_one_attempt():
    for first, tools, enabled in (('{"name": "read", "arguments": {}}', TOOLS, True),
                                  ("Sure, here it is.", TOOLS, True), (GHOST, None, True), (GHOST, TOOLS, False)):
        answer, asked = attempts(first)
        items = collect(answer, tools, enabled=enabled)
        assert len(asked) == 1 and "".join(i.text for i in items if isinstance(i, TextDelta)) == first
        assert "call_guard" not in items[-1].metadata


def test_a_reply_in_prose_streams_as_it_comes_and_is_not_held_to_the_end():
    seen: list[str] = []

    async def answer(sampling):
        for piece in ("Water ", "it ", "weekly."):
            seen.append(piece)
            yield TextDelta(piece, [1], [-0.1])
        yield Generation(text="Water it weekly.", message={"role": "assistant", "content": "Water it weekly."})

    async def run():
        stream = guarded(answer, TOOLS, SamplingParams())
        first = await stream.__anext__()
        assert first.text == "Water " and seen == ["Water "]  # released before the reply goes on
        return [first] + [item async for item in stream]

    assert len(asyncio.run(run())) == 4


def opening_ids(tokenizer):
    return [i for i in range(len(tokenizer))
            if tokenizer.decode([i], skip_special_tokens=False).lstrip().startswith(CALL_OPENINGS)]


def test_prose_only_masks_call_openings_until_the_first_visible_character_on_the_real_engine():
    tokenizer = load_tokenizer("tiny-random")
    model = build_tiny_random(len(tokenizer))
    openings = opening_ids(tokenizer)
    boost = torch.zeros(model.config.vocab_size)
    boost[openings] = 50.0  # a model that wants to open every reply with a call or a JSON value
    boost[[i for i in range(len(tokenizer)) if not tokenizer.decode([i]).strip()]] = -50.0  # and never writes blanks
    model.lm_head.register_forward_hook(lambda module, args, out: out + boost.to(out.dtype))
    policy = HFPolicy(model, tokenizer)
    messages = [{"role": "user", "content": "How often should I water a cactus?"}]

    async def run():
        try:
            plain = await policy.generate(messages, None, SamplingParams(temperature=0.0, max_tokens=4))
            prose = await policy.generate(messages, None,
                                          SamplingParams(temperature=0.0, max_tokens=4, prose_only=True))
            sampled = await policy.generate(messages, None,
                                            SamplingParams(temperature=1.0, max_tokens=4, seed=3, prose_only=True))
            return plain, prose, sampled
        finally:
            await policy.close()

    plain, prose, sampled = asyncio.run(run())
    assert plain.response_ids[0] in openings
    for generation in (prose, sampled):
        first_visible = generation.response_ids[0]
        assert tokenizer.decode([first_visible]).strip() and first_visible not in openings
        assert all(lp > float("-inf") for lp in generation.response_logprobs)
        # after the first visible character nothing is masked: the boosted openings come back
        assert any(i in openings for i in generation.response_ids[generation.response_ids.index(first_visible) + 1:])


def test_the_gateway_answers_a_ghost_call_in_words_records_that_reply_and_says_why(tmp_path):
    class ProseOnRequest(ScriptedPolicy):
        supports_prose_only = True

        async def generate(self, messages, tools=None, sampling=None):
            self.respond = (lambda m: "Water it every two weeks.") if sampling.prose_only else (lambda m: GHOST)
            return await super().generate(messages, tools, sampling)

    log = TurnLog(tmp_path / "turns.jsonl")
    gateway = ChatGateway(PolicyResponder(ProseOnRequest(byte_tokens=True)), log, call_guard=True, person_last=True)
    person = {"role": "user", "content": "How often should I water a cactus?"}
    with BackgroundServer(build_gateway_app(gateway, api_key="k")) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        for stream in (False, True):
            reply = api.chat.completions.create(model="m", messages=[person, INTERNAL], tools=TOOLS, stream=stream)
            text = "".join(c.choices[0].delta.content or "" for c in reply if c.choices) if stream \
                else reply.choices[0].message.content
            assert text == "Water it every two weeks."
    turns = list(log.turns())
    assert len(turns) == 2
    for turn in turns:
        assert turn.action["content"] == "Water it every two weeks."
        assert "water_cactus" in turn.info["call_guard"]["reason"] and turn.info["call_guard"]["rejected"] == GHOST
        assert turn.context[-1]["content"] == person["content"]  # the model read the person's words last
        assert turn.context[-2] == INTERNAL
    log.close()


def test_the_internal_block_moves_before_the_persons_message_only():
    system, person = {"role": "system", "content": "s"}, {"role": "user", "content": "hi"}
    assert person_last([system, person, INTERNAL]) == [system, INTERNAL, person]
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c", "content": "ok"}
    after_tool = [system, person, call, result, INTERNAL]
    assert person_last(after_tool) is after_tool  # a tool result must follow its call
    unchanged = [system, person]
    assert person_last(unchanged) is unchanged
    assert person_last([system, INTERNAL, copy.deepcopy(INTERNAL)])[-1] == INTERNAL
