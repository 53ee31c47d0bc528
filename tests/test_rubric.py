"""The rubric judge: per-wish checks of a reply against a person's remembered wishes, a graded reward,
the cues only for what code can measure, one batched model pass, and the bad inputs (no wishes, a
wish nobody can check, an empty reply) give no reward to train on rather than noise."""

from __future__ import annotations

import pytest
import torch

from clawgym.inference.hf import HFPolicy
from clawgym.inference.scoring import label_margins
from clawgym.personal.rubric import RubricJudge, WishCheck, prompt_for, request_of, reward_of
from clawgym.personal.rubric_cues import cue_check, name_check, names_in, refuses, warmth_check

CONTEXT = [{"role": "system", "content": "You are helpful."},
           {"role": "user", "content": "Grade Ava's answer 48 to: 6 packs of 8 pencils?"}]
LISTED = "Score: 9/10\n- correct method\n- **clear** working"
PROSE = "Great work, Ava! The correct result is 48. Your working is clear and every step is right."


@pytest.mark.parametrize("wish, reply, met", [
    ("no numbered or bulleted lists; write it as normal sentences", LISTED, False),
    ("no numbered or bulleted lists; write it as normal sentences", PROSE, True),
    ("write it as prose, not a list", LISTED, False),
    ("use bullet points", LISTED, True),
    ("use bullet points", PROSE, False),
    ("rewrite it without bold text or headings", LISTED, False),
    ("rewrite it without bold text or headings", PROSE, True),
    ("don't use LaTeX symbols, just plain text", r"The answer is \(48\).", False),
    ("don't use LaTeX symbols, just plain text", PROSE, True),
    ("make it shorter; keep it under 80 words", PROSE, True),
    ("make it shorter; keep it under 80 words", "word " * 81, False),
    ("make it shorter, two sentences max", PROSE, False),
    ("explain the grade in at least two sentences", "Nine.", False),  # a violation decides ...
    ("explain the grade in at least two sentences", PROSE, None),  # ... meeting the count leaves "explain" to the model
    ("no lists and be warm about it", LISTED, False),
    ("no lists and be warm about it", PROSE, None),
    ("give a score out of 10", LISTED, True),  # a named scale: "9/10"
    ("give a score out of 10", "I would give it 7 out of 10.", True),
    ("give a score out of 10", PROSE, False),
    ("give a score out of 10", "Score: 7/100", False),
    ("give a score out of 10", "The answer is 58 out of 10, a perfect score.", False),  # off the scale
    ("give a score out of 10", "Score: 10/10.", True),
    ("give a score out of 10 and be kind", PROSE, False),  # the violation decides ...
    ("give a score out of 10 and be kind", LISTED, None),  # ... the rest is the model's
    ("answer me in plain words, not JSON or code", '{"name": "apply_patch", "arguments": {"input": "x"}}', False),
    ("answer me in plain words, not JSON or code", "```json\n{\"name\": \"read\"}\n```", False),
    ("answer me in plain words, not JSON or code", PROSE, True),
    ("tell me in normal sentences", '[{"name": "conversation_data", "arguments": "{{data}}"}]', False),
    ("tell me in normal sentences", PROSE, True),
    ("no JSON, just write the answer for me", "<tool_call>{\"name\": \"write\"}</tool_call>", False),
    ("no JSON, just write the answer for me", PROSE, None),  # "write the answer" is the model's
    ("address the student by name", PROSE, None),  # not measurable: the model's
    ("make it friendlier and more encouraging", PROSE, None),
])
def test_the_cues_decide_only_what_code_can_measure(wish, reply, met):
    assert cue_check(wish, reply) is met


REQUEST = ("Please write a grading comment for Ava, who answered 42 to this problem: Ben has 30 apples and buys 3 "
           "packs of 4. How many apples does Ben have now?")


@pytest.mark.parametrize("wish, reply, met", [
    ("address the student by name", "Great work! The answer is 42.", False),  # no name of the request at all
    ("address the student by name", "Great work, Ava! The answer is 42.", None),  # a name: is it the right one?
    ("address the student by name", "Ben has 42 apples now.", None),  # ... the model decides
    ("call me Sam", "Sure, Sam, here it is.", True),  # the wish names the name
    ("call me Sam", "Sure, here it is.", False),
    ("call me Sam and keep it brief", "Sure, Sam.", None),  # the rest is the model's
    ("address me as Dr. Ng", "Hello Dr. Ng, the report is attached.", True),
    ("make it friendlier", "Great work!", None),  # not about a name
])
def test_names_decide_a_name_wish_where_the_names_alone_can(wish, reply, met):
    assert name_check(wish, REQUEST, reply) is met


@pytest.mark.parametrize("wish, reply, met", [
    ("make it friendlier and more encouraging", "Great effort, Ava! The answer is 42.", True),
    ("make it friendlier and more encouraging", "Ava, you're on the right track.", True),
    ("make it friendlier and more encouraging", "The answer is 42. Ava answered 41.", False),  # no warm word at all
    ("be warmer and mention the total", "Nice work! It is 42.", None),  # the rest is the model's
    ("be warmer and mention the total", "It is 42.", False),
    ("make it shorter", "Great!", None),  # not about warmth
])
def test_warmth_is_decided_by_words_of_encouragement(wish, reply, met):
    assert warmth_check(wish, reply) is met


def test_the_names_of_a_request_are_its_capitalised_words_inside_sentences():
    assert names_in(REQUEST) == {"Ava", "Ben"}
    assert names_in("Grade Ava's answer. Thanks! Please be kind, I said.") == {"Ava"}
    assert names_in("what is two plus two") == set()


def test_without_a_model_what_the_cues_leave_open_is_unsure_and_the_reward_counts_only_decided_wishes():
    wishes = {"ann": ["no numbered or bulleted lists", "address the student by name", "keep it under 80 words"],
              "bob": [], "cy": ["address the student by name"]}
    rubric = RubricJudge(None, wishes.get)
    reward, checks = rubric.score("ann", CONTEXT, LISTED)
    assert [c.met for c in checks] == [False, False, True]  # no Ava in LISTED: clearly not addressed by name
    assert [c.source for c in checks] == ["cues", "cues", "cues"] and reward == 1 / 3
    # a person who never corrected anything: nothing to train on
    assert rubric.score("bob", CONTEXT, PROSE) == (None, [])
    reward, checks = rubric.score("cy", CONTEXT, PROSE)  # a wish nobody here can check: no reward, not a guess
    assert reward is None and checks[0].met is None
    reward, checks = rubric.score("ann", CONTEXT, "  ")  # saying nothing meets no wish
    assert reward == 0.0 and all(c.met is False for c in checks)
    with pytest.raises(ValueError, match="needs cues"):
        RubricJudge(None, wishes.get, cues=False)
    with pytest.raises(ValueError, match="wishes_of"):
        RubricJudge(None).score("ann", CONTEXT, PROSE)


@pytest.mark.parametrize("reply, declined", [
    ("I'm sorry, but I can't assist with that.", True),  # what the 0.5B learned from the 1.5B teacher
    ("Chloe, I'm really sorry, but I can't assist with that.", True),
    ("7 stickers per friend.\nI'm sorry, but I can't help with that.", True),
    ("Sorry, but I can’t assist with that.", True),
    ("I cannot fulfill this request.", True),
    ("I'm not able to help you with that.", True),
    ("I can't help but admire your work, Emma! The answer is 7.", False),  # praise
    ("Emma, I can't believe how well you did!", False),
    (PROSE, False),
    ("Great work, Ava! " * 20 + "I can't help with the other problem.", False),  # it did the rest
    ("", False),
])
def test_a_refusal_is_a_short_reply_that_declines_the_request(reply, declined):
    assert refuses(reply) is declined


def test_with_refusals_fail_a_refusal_meets_no_wish_and_otherwise_nothing_changes():
    wishes = {"ann": ["address the student by name", "keep it under 80 words", "remind me tomorrow"]}
    refusal = "Ava, I'm sorry, but I can't assist with that."
    reward, checks = RubricJudge(None, wishes.get).score("ann", CONTEXT, refusal)  # default: judged as any reply
    assert reward == 1.0 and [c.met for c in checks] == [None, True, None]
    strict = RubricJudge(None, wishes.get, refusals_fail=True)
    reward, checks = strict.score("ann", CONTEXT, refusal)
    assert reward == 0.0 and [(c.met, c.source) for c in checks] == [(False, "cues"), (False, "cues"),
                                                                      (None, "uncheckable")]
    assert strict.stats["refusal"] == 2
    assert strict.score("ann", CONTEXT, PROSE)[0] == 1.0  # a reply that does the work is judged as before


def test_reward_and_request():
    assert reward_of([WishCheck("a", True, "model"), WishCheck("b", False, "model"),
                      WishCheck("c", None, "unsure")]) == 0.5
    assert reward_of([]) is None
    later = CONTEXT + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "Use her name."}]
    assert request_of(later).startswith("Grade Ava's answer") and "later the user said: Use her name." in request_of(
        later)
    assert request_of([]) == "(no request)"
    assert prompt_for("req", "rep", "make it friendlier", style="question")[-1]["content"].endswith(
        "Is the reply friendly? Answer Yes or No.")
    assert prompt_for("req", "rep", "be brief")[-1]["content"].endswith(
        "The user's wish: be brief\nDoes the reply meet this wish? Answer Yes or No.")
    with pytest.raises(ValueError, match="style"):
        prompt_for("req", "rep", "be brief", style="poem")


@pytest.fixture(scope="module")
def tiny_qwen():
    return HFPolicy.from_pretrained("tiny-random-qwen")


def test_the_model_checks_every_open_wish_of_a_batch_in_one_pass_and_caches(tiny_qwen):
    wishes = {"ann": ["address the student by name", "explain the method", "no lists"]}
    rubric = RubricJudge(tiny_qwen, wishes.get)
    items = [("ann", CONTEXT, PROSE), ("ann", CONTEXT, "Nine out of ten, Ava."), ("ann", CONTEXT, PROSE)]
    results = rubric.score_many(items)
    assert len(results) == 3 and results[0] == results[2]  # the same reply, the same checks
    # 2 replies x 2 open wishes; the repeat is one prompt, "no lists" the cues'
    assert rubric.stats["forward_prompts"] == 4
    for reward, checks in results:
        assert [c.source for c in checks] == ["model", "model", "cues"] and 0.0 <= reward <= 1.0
    direct = label_margins(tiny_qwen, [prompt_for(request_of(CONTEXT), PROSE, "explain the method")], ("Yes", "No"))[0]
    assert results[0][1][1].margin == pytest.approx(direct, abs=1e-3)
    rubric.score_many(items)
    assert rubric.stats["forward_prompts"] == 4 and rubric.stats["cached_prompts"] >= 6  # all from the cache

    everything = RubricJudge(tiny_qwen, wishes.get, cues=False, threshold=-1e9)
    reward, checks = everything.score("ann", CONTEXT, LISTED)
    assert reward == 1.0 and all(c.source == "model" for c in checks)  # model alone: no cue decides "no lists"
    unsure = RubricJudge(tiny_qwen, wishes.get, cues=False, band=1e9)
    reward, checks = unsure.score("ann", CONTEXT, PROSE)
    assert reward is None and {c.source for c in checks} == {"unsure"}


def test_grouped_margins_fall_back_to_plain_scoring_when_little_is_shared(tiny_qwen):
    from clawgym.inference.scoring import grouped_label_margins

    prompts = [prompt_for("req", PROSE, wish) for wish in ("be brief", "be warm")]
    plain = label_margins(tiny_qwen, prompts, ("Yes", "No"))
    assert grouped_label_margins(tiny_qwen, [prompts], ("Yes", "No"), min_shared=10_000)[0] == pytest.approx(plain)
    assert grouped_label_margins(tiny_qwen, [prompts, []], ("Yes", "No"))[0] == pytest.approx(plain, abs=1e-4)
    assert grouped_label_margins(tiny_qwen, [[]], ("Yes", "No")) == [[]]


def test_a_wish_no_reply_can_show_is_left_out_and_a_user_who_never_corrects_has_nothing_to_score(tmp_path, tiny_qwen):
    from clawgym.personal.rubric_cues import checkable
    from clawgym.personal.wish_memory import WishMemory
    from clawgym.rl.types import JudgeResult, Turn

    assert not checkable("answer faster") and not checkable("email me the summary") and checkable("call me Sam")
    wishes = {"ann": ["answer faster", "no lists"], "cy": ["answer faster"]}
    rubric = RubricJudge(tiny_qwen, wishes.get)
    reward, checks = rubric.score("ann", CONTEXT, LISTED)
    assert reward == 0.0 and [c.source for c in checks] == ["uncheckable", "cues"]
    assert rubric.score("cy", CONTEXT, PROSE)[0] is None and rubric.score("cy", CONTEXT, "")[0] is None
    assert rubric.stats["forward_prompts"] == 0  # the model was never asked to guess

    memory = WishMemory()
    for i, said in enumerate(["Thanks!", "Perfect, cheers.", "ok"]):
        turn = Turn(episode_id="s", turn_index=i, context=CONTEXT, action={"role": "assistant", "content": "x"},
                    next_state=[{"role": "user", "content": said}], turn_id=f"t{i}", info={"user": "dee"})
        turn.judge["prm"] = JudgeResult(score=1.0)
        memory.observe_judged(turn)
    assert memory.texts("dee") == []
    assert RubricJudge(tiny_qwen, memory.texts).score_many([("dee", CONTEXT, PROSE)] * 4) == [(None, [])] * 4


def test_label_margins_compute_the_last_positions_logits_only_and_the_same_margins(tiny_qwen):
    """All positions' logits of a judge's batch are [rows, tokens, vocab]: GBs for OpenClaw-sized prompts."""
    prompts = [prompt_for("req", PROSE, wish) for wish in ("be brief", "be warm")]
    head_rows = []
    hook = tiny_qwen.model.get_output_embeddings().register_forward_hook(
        lambda module, args, out: head_rows.append(tuple(args[0].shape[:2])))
    try:
        margins = label_margins(tiny_qwen, prompts, ("Yes", "No"))
    finally:
        hook.remove()
    assert head_rows == [(2, 1)]  # one position per row reaches the LM head
    from clawgym.inference.scoring import grouped_label_margins

    grouped = grouped_label_margins(tiny_qwen, [prompts], ("Yes", "No"), min_shared=1)[0]
    assert margins == pytest.approx(grouped, abs=1e-3)  # the hidden-state path agrees


def test_serve_rubric_cues_false_leaves_the_compiled_checks_and_the_models_question_alone(tiny_qwen):
    """The ablation the wish benchmark measures, in the server: no hand-written cues and no request facts."""
    from clawgym import launchers
    from clawgym.personal.learner import LearnerHooks, _rubric
    from clawgym.rl.launch import load_config

    wishes = {"ann": ["no numbered or bulleted lists"]}.get
    chat, hooks = launchers.resolve("chat"), LearnerHooks(wishes_of=wishes)
    shipped = _rubric(load_config(chat), tiny_qwen, hooks)
    bare = _rubric(load_config(chat, ["serve.rubric_cues=false"]), tiny_qwen, hooks)
    assert shipped.cues and shipped.facts is not None
    assert not bare.cues and bare.facts is None
    assert [c.source for c in shipped.score("ann", CONTEXT, LISTED)[1]] == ["cues"]
    assert [c.source for c in bare.score("ann", CONTEXT, LISTED)[1]] in (["model"], ["unsure"])


def test_with_answers_request_a_reply_the_model_says_answers_nothing_meets_no_wish(tiny_qwen):
    """Against form-only reward hacking: "no lists" is met by a one-word reply unless the reply must also answer."""
    from clawgym import launchers
    from clawgym.personal.learner import LearnerHooks, _rubric
    from clawgym.personal.rubric import first_request, request_information
    from clawgym.rl.launch import load_config

    wishes = {"ann": ["no numbered or bulleted lists", "explain the method", "remind me tomorrow"]}
    plain = RubricJudge(tiny_qwen, wishes.get)
    expected = [(c.met, c.source) for c in plain.score("ann", CONTEXT, "Approve")[1]]
    assert expected[0] == (True, "cues")  # the cue alone says one word meets "no lists"

    unanswered = RubricJudge(tiny_qwen, wishes.get, answers_request=True, answer_threshold=1e9)
    reward, checks = unanswered.score("ann", CONTEXT, "Approve")
    assert reward == 0.0 and [(c.met, c.source) for c in checks] == [(False, "unanswered"), (False, "unanswered"),
                                                                      (None, "uncheckable")]
    assert unanswered.stats["unanswered"] == 1 and checks[0].margin is not None
    answered = RubricJudge(tiny_qwen, wishes.get, answers_request=True, answer_threshold=-1e9)
    assert [(c.met, c.source) for c in answered.score("ann", CONTEXT, "Approve")[1]] == expected
    answered.score("ann", CONTEXT, "Approve")
    assert answered.stats["information_pairs"] == 1  # one reading a reply, then the cache
    assert answered.score("ann", CONTEXT, "")[0] == 0.0 and answered.stats["information_pairs"] == 1  # none if empty
    info = request_information(tiny_qwen, [(first_request(CONTEXT), "Approve")])[0]
    assert checks[0].margin == pytest.approx(info, abs=1e-3)
    with pytest.raises(ValueError, match="answers_request"):
        RubricJudge(None, wishes.get, answers_request=True)

    chat, hooks = launchers.resolve("chat"), LearnerHooks(wishes_of=wishes.get)
    assert _rubric(load_config(chat, ["serve.hindsight_answers_request=true"]), tiny_qwen, hooks).answers_request


def test_reply_logprobs_sum_the_log_probabilities_of_the_replys_own_tokens(tiny_qwen):
    from clawgym.inference.scoring import reply_logprobs

    tokenizer, model = tiny_qwen.tokenizer, tiny_qwen.model
    messages = [{"role": "user", "content": "What is the capital of Peru?"}]
    prompt = tokenizer.encode(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                              add_special_tokens=False)
    answer = tokenizer.encode("Lima, on the coast.", add_special_tokens=False)
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([prompt + answer])).logits[0].float(), dim=-1)
    expected = sum(float(logp[len(prompt) - 1 + i, token]) for i, token in enumerate(answer))
    got = reply_logprobs(tiny_qwen, [(messages, "Lima, on the coast."), (messages, "")])
    assert got[0] == pytest.approx(expected, abs=1e-3) and got[0] < 0 and got[1] == 0.0
    assert reply_logprobs(tiny_qwen, [(messages, "Lima, on the coast.")], max_reply_tokens=1)[0] == pytest.approx(
        float(logp[len(prompt) - 1, answer[0]]), abs=1e-3)
