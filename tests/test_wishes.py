"""The wish memory: corrections become short wishes in the person's words, deduplicated, the later of two
contradicting wishes wins, nothing is made from thanks or noise, durable in the turn log, visible and
removable over HTTP (with the usual 401/403/404), shown on the dashboard, erased by forget-me."""

from __future__ import annotations

import httpx
import pytest

from clawgym.envs.openclaw_chat.personas import PERSONAS
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.personal.wish_memory import WishMemory
from clawgym.personal.wishes import aspects, relation, wish_from_correction, wishes_from_correction
from clawgym.rl.judge import JudgeStage, RuleJudge
from clawgym.rl.types import JudgeResult, Turn
from clawgym.serve.app import build_gateway_app
from clawgym.serve.dashboard import Dashboard
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog
from clawgym.serve.users import UserDirectory
from tests.waiting import wait_for


@pytest.mark.parametrize("said, wish", [
    ("Please address the student by name.", "address the student by name"),
    ("Mention the correct result so the student can compare.", "mention the correct result"),
    ("Give a score out of 10, like 7/10.", "give a score out of 10"),
    ("No numbered or bulleted lists please, my teacher will know it's AI. Write it as normal sentences.",
     "no numbered or bulleted lists; write it as normal sentences"),
    ("Please rewrite it without bold text or headings, it looks AI-written.",
     "rewrite it without bold text or headings"),
    ("That's too long for a comment; keep it under 80 words.", "make it shorter; keep it under 80 words"),
    ("That doesn't give me the final number. What is the answer?", "give the final number"),
    ("You didn't include the final answer.", "include the final answer"),
    ("I literally just said call me Sam", "call me Sam"),
    ("ok but what's the actual answer??", "give the actual answer"),
    ("Not quite, I wanted it casual.", "make it casual"),
    ("Less formal please, it's for a kid.", "less formal"),
    ("Write it as prose, not a list.", "write it as prose, not a list"),
])
def test_a_correction_becomes_a_short_wish_in_the_persons_words(said, wish):
    assert wish_from_correction(said) == wish


def test_every_persona_correction_gives_a_wish_and_no_thanks_does():
    for persona in PERSONAS.values():
        for preference in persona.preferences:
            assert wish_from_correction(preference.feedback), preference.feedback
        assert wish_from_correction(f"{persona.thanks} {persona.done_token}") is None


@pytest.mark.parametrize("said", ["Thanks!", "ok", "Perfect, that's exactly it.", "That's incorrect, the sum is 17.",
                                  "Hmm, the number is wrong. 12 times 4 is 48.", "", "   ", "?!",
                                  "Write a story about a dragon who lives in a castle by the sea and collects old "
                                  "clocks, and make it rhyme in every line"])
def test_thanks_statements_and_new_tasks_give_no_wish(said):
    assert wish_from_correction(said) is None


@pytest.mark.parametrize("said, wishes", [
    # what the 1.5B model playing the teacher persona said, in the assistant's voice: no wish
    ("You're welcome! Don't hesitate to ask if you need anything else. I'm here to help!", []),
    ("You're welcome! Let me know if you have any other questions.", []),
    ("If you have any more questions, feel free to ask.", []),
    # an offer next to a request keeps the request; a permission is not an offer
    ("Let me know if you need anything. Use his name.", ["use his name"]),
    ("Feel free to use a list. Keep it short.", ["keep it short"]),
])
def test_an_offer_of_help_in_the_assistants_voice_is_no_wish(said, wishes):
    assert wishes_from_correction(said) == wishes


def test_a_message_that_asks_for_several_things_leaves_one_wish_per_thing():
    said = ("Please address the student by name. Could you make it friendlier and more encouraging? "
            "That's too long for a comment; keep it under 80 words. What is the answer?")
    assert wishes_from_correction(said) == ["address the student by name", "make it friendlier and more encouraging",
                                            # the last question is not a request
                                            "make it shorter; keep it under 80 words"]
    assert wishes_from_correction("What is the answer?") == ["give the answer"]  # ... unless nothing else is asked
    assert wishes_from_correction("Use bullet points. Please use bullet points!") == ["use bullet points"]  # a repeat
    assert wishes_from_correction("Thanks, that's great.") == [] and wishes_from_correction(None) == []
    for persona in PERSONAS.values():  # the scripted person who voices everything: one wish per preference
        everything, satisfied = persona.feedback("", None, voice="all")
        assert not satisfied and len(wishes_from_correction(everything)) == len(persona.preferences)


def test_a_message_with_several_requests_is_remembered_as_several_wishes_and_replays_the_same(tmp_path):
    path = tmp_path / "turns.jsonl"
    memory = WishMemory(TurnLog(path))
    added = memory.add("ann", "Address me by name. No lists, write prose.", turn_id="t1", source="reply")
    assert [w.text for w in added] == ["address me by name", "no lists, write prose"]
    assert len({w.id for w in added}) == 2
    assert memory.add("ann", "Write it as a bulleted list.", turn_id="t2", source="reply")[0].replaced == [
        "no lists, write prose"]  # the later wish still wins, one wish at a time
    assert memory.add("ann", "Thanks!", turn_id="t3", source="reply") == []
    memory.log.close()
    assert WishMemory(TurnLog(path)).texts("ann") == ["address me by name", "write it as a bulleted list"]


def test_relations_same_contradicts_other():
    assert relation("state the correct result", "mention the correct result") == "same"
    assert relation("Address the student by name.", "address the student by name") == "same"
    assert relation("keep it under 80 words", "keep it under 50 words") == "same"
    assert relation("use bullet points", "no numbered or bulleted lists") == "contradicts"
    assert relation("keep it short", "give more detail") == "contradicts"
    assert relation("reply in French", "reply in English") == "contradicts"
    assert relation("be more formal", "make it casual") == "contradicts"
    assert relation("no bold", "no headings") == "other"  # same aspect, same sign, different things: both kept
    assert relation("address the student by name", "mention the correct result") == "other"
    assert relation("give a score out of 10", "keep it under 10 words") == "other"  # a shared number is no topic
    assert aspects("write it as prose, not a list") == {"list": -1}


@pytest.mark.parametrize("wish, question", [
    ("address the student by name", "Does the reply address the student by name?"),
    ("make it friendlier and more encouraging", "Is the reply friendly and encouraging?"),
    ("make it shorter; keep it under 80 words", "Is the reply short and is the reply under 80 words?"),
    ("be a bit warmer", "Is the reply warm?"),
    ("call me Sam", "Does the reply call the user Sam?"),
])
def test_a_wish_as_a_question_about_one_reply(wish, question):
    from clawgym.personal.wishes import wish_question

    assert wish_question(wish) == question


def judged(user, reply, verdict, *, turn_id, feedback=None, internal=False, judge="prm", source="rule"):
    next_state = [{"role": "user", "content": reply}]
    if internal:
        next_state.append({"role": "user", "content": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> use tools"})
    turn = Turn(episode_id="s", turn_index=0, context=[{"role": "user", "content": "hi"}],
                action={"role": "assistant", "content": "a reply"}, next_state=next_state, turn_id=turn_id,
                info={"user": user, **({"feedback": feedback} if feedback else {})})
    if verdict is not None:
        turn.judge[judge] = JudgeResult(score=verdict, source=source)
    return turn


def test_the_memory_dedupes_lets_the_later_wish_win_and_learns_nothing_from_noise(tmp_path):
    memory = WishMemory(TurnLog(tmp_path / "turns.jsonl"))
    assert memory.observe_judged(judged("ann", "Use bullet points please.", -1.0, turn_id="t1"))
    assert memory.observe_judged(judged("ann", "Thanks, great!", +1.0, turn_id="t2")) == []  # acceptance
    assert memory.observe_judged(judged("ann", "Please use bullet points.", -1.0, turn_id="t3"))  # a repeat
    assert memory.observe_judged(judged("ann", "no, the sum is 17", -1.0, turn_id="t4")) == []  # no request in it
    assert memory.observe_judged(judged("ann", "Shorter!", None, turn_id="t5")) == []  # no verdict: not a correction
    assert memory.observe_judged(judged("ann", "Shorter!", -1.0, turn_id="t6", source="error")) == []  # a judge bug
    [wish] = memory.wishes("ann")
    assert wish.text == "use bullet points" and wish.times == 2 and wish.said == "Please use bullet points."
    # the person changes their mind: the later wish replaces the older, and says so
    memory.observe_judged(judged("ann", "No lists, write it as prose.", -1.0, turn_id="t7"))
    [wish] = memory.wishes("ann")
    assert wish.text == "no lists, write it as prose" and wish.replaced == ["use bullet points"]
    memory.observe_judged(judged("ann", "Address me as Dr. Ng.", -1.0, turn_id="t8", internal=True))
    assert memory.texts("ann") == ["no lists, write it as prose", "address me as Dr. Ng"]  # OpenClaw's block left out
    assert memory.texts("bob") == [] and memory.users() == ["ann"]  # per user
    # replaying an event already applied changes nothing (a late feedback re-sends the turn)
    memory.observe_judged(judged("ann", "Address me as Dr. Ng.", -1.0, turn_id="t8"))
    assert [w.times for w in memory.wishes("ann")] == [1, 1]


def test_explicit_corrections_count_even_with_a_thumb_up_and_the_hint_judges_vote_is_a_verdict(tmp_path):
    memory = WishMemory()
    memory.observe_judged(judged("ann", "thanks", +1.0, turn_id="t1",
                                 feedback={"thumb": "up", "correction": "Sign it with my name, Ann."}))
    memory.observe_judged(judged("ann", "Reply in German.", -1.0, turn_id="t2", judge="hint"))
    assert memory.texts("ann") == ["sign it with my name", "reply in German"]
    with pytest.raises(ValueError, match="source"):
        memory.add("ann", "Be brief.", turn_id="t3", source="telepathy")


def test_wishes_are_durable_removable_and_forgotten(tmp_path):
    path = tmp_path / "turns.jsonl"
    log = TurnLog(path)
    memory = WishMemory(log)
    memory.add("ann", "Use bullet points.", turn_id="t1", source="reply")
    memory.add("ann", "No lists please.", turn_id="t2", source="reply")  # replaces the first
    memory.add("ann", "Keep it under 50 words.", turn_id="t3", source="feedback")
    memory.add("bob", "Reply in French.", turn_id="t4", source="reply")
    removed = memory.remove("ann", memory.wishes("ann")[1].id)
    assert removed.text == "keep it under 50 words"
    with pytest.raises(KeyError):
        memory.remove("ann", removed.id)
    with pytest.raises(KeyError):
        memory.remove("ann", memory.wishes("bob")[0].id)  # not hers
    log.close()

    seen = {}
    again = WishMemory(TurnLog(path), on_change=lambda user, wishes: seen.setdefault(user, [w.text for w in wishes]))
    assert again.texts("ann") == ["no lists"] and again.texts("bob") == ["reply in French"]
    assert seen == {"ann": ["no lists"], "bob": ["reply in French"]}  # the dashboard hears the restored lists
    assert again.log.forget_user("ann") > 0 and again.forget("ann") == 1
    again.log.close()
    text = path.read_text()
    assert "bullet" not in text and "no lists" not in text.lower() and "French" in text
    assert WishMemory(TurnLog(path)).texts("ann") == []


def wish_stack(tmp_path):
    dashboard = Dashboard()
    log = TurnLog(tmp_path / "turns.jsonl")
    memory = WishMemory(log, on_change=dashboard.observe_wishes)

    class CorrectionIsBad(RuleJudge):
        name = "prm"

        def verdict(self, turn):
            return (1.0, "thanks") if "thanks" in str(turn.next_state).lower() else (-1.0, "a correction")

    gateway = ChatGateway(PolicyResponder(ScriptedPolicy(lambda m: "an answer", byte_tokens=True)), log,
                          judge_stage=JudgeStage([CorrectionIsBad()]),
                          on_judged=lambda turn: (dashboard.observe_judged(turn), memory.observe_judged(turn)))
    users = UserDirectory({"k-alice": "alice", "k-bob": "bob"}, admin_key="k-admin")
    return gateway, build_gateway_app(gateway, users=users, dashboard=dashboard, wishes=memory), memory


def test_wishes_over_http_from_the_conversation_with_their_access_rules(tmp_path):
    gateway, app, memory = wish_stack(tmp_path)
    alice, bob = {"Authorization": "Bearer k-alice"}, {"Authorization": "Bearer k-bob"}
    with BackgroundServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        messages = [{"role": "user", "content": "Write a comment for Ava."}]
        for said in ("Please address the student by name.", "Thanks!"):
            client.post("/v1/chat/completions", headers={**alice, "X-Session-Id": "s1"},
                        json={"model": "m", "messages": messages})
            messages += [{"role": "assistant", "content": "an answer"}, {"role": "user", "content": said}]
        client.post("/v1/chat/completions", headers={**alice, "X-Session-Id": "s1", "X-Session-Done": "true"},
                    json={"model": "m", "messages": messages})
        wait_for(lambda: memory.texts("alice") == ["address the student by name"], timeout=20.0)

        listed = client.get("/v1/wishes", headers=alice).json()
        assert listed["user"] == "alice" and [w["text"] for w in listed["wishes"]] == ["address the student by name"]
        wish_id = listed["wishes"][0]["id"]
        assert client.get("/v1/wishes", headers=bob).json()["wishes"] == []
        assert client.get("/v1/wishes", headers={"Authorization": "Bearer k-eve"}).status_code == 401
        assert client.get("/v1/wishes").status_code == 401
        data = client.get("/dashboard/data", headers={"Authorization": "Bearer k-admin"}).json()
        assert [w["text"] for w in data["users"]["alice"]["wishes"]] == ["address the student by name"]
        assert client.get("/v1/wishes?user=alice", headers=bob).json()["user"] == "bob"  # only the admin may name

        denied = client.delete(f"/v1/wishes/{wish_id}", headers=bob)
        assert denied.status_code == 403 and "another user" in denied.json()["error"]["message"]
        assert client.delete("/v1/wishes/nope", headers=alice).status_code == 404
        assert memory.texts("alice") == ["address the student by name"]  # refusals change nothing
        gone = client.delete(f"/v1/wishes/{wish_id}", headers=alice)
        assert gone.status_code == 200 and gone.json()["removed"]["text"] == "address the student by name"
        assert client.delete(f"/v1/wishes/{wish_id}", headers=alice).status_code == 404
        data = client.get("/dashboard/data", headers={"Authorization": "Bearer k-admin"}).json()
        assert data["users"]["alice"]["wishes"] == []

        memory.add("alice", "Reply in French.", turn_id="t9", source="feedback")
        admin = client.delete(f"/v1/wishes/{memory.wishes('alice')[0].id}?user=alice",
                              headers={"Authorization": "Bearer k-admin"})  # the dashboard's button
        assert admin.status_code == 200
    gateway.log.close()
    assert WishMemory(TurnLog(tmp_path / "turns.jsonl")).texts("alice") == []  # the removals are on disk


def test_a_gateway_without_a_wish_memory_says_so(tmp_path):
    gateway = ChatGateway(PolicyResponder(ScriptedPolicy(lambda m: "x", byte_tokens=True)),
                          TurnLog(tmp_path / "t.jsonl"))
    with BackgroundServer(build_gateway_app(gateway)) as url, httpx.Client(base_url=url, timeout=30) as client:
        response = client.get("/v1/wishes")
        assert response.status_code == 404 and "no wish memory" in response.json()["error"]["message"]
    gateway.log.close()


# ---- the OPD teacher reads the remembered wishes (serve.teacher_wishes) -------------------------------


def test_the_teachers_hint_holds_every_remembered_wish_and_the_turns_own_hint_once():
    from clawgym.personal.teacher_hint import hint_with_wishes

    wishes = ["address the student by name", "keep it under 80 words"]
    assert hint_with_wishes(None, wishes) == "Address the student by name. Keep it under 80 words."
    assert hint_with_wishes("keep it under 80 words.", wishes) == "Address the student by name. Keep it under 80 words."
    assert hint_with_wishes("Be friendlier.", wishes).endswith("Keep it under 80 words. Be friendlier.")


def test_a_turn_without_its_own_hint_still_teaches_opd_when_the_person_has_wishes():
    from clawgym.personal.trainer import sample_from_turn
    from clawgym.rl.types import JudgeResult, Turn

    turn = Turn(episode_id="s", turn_index=0, context=[{"role": "user", "content": "grade this"}],
                action={"role": "assistant", "content": "7/10"}, prompt_ids=[1], response_ids=[2],
                response_logprobs=[-1.0], judge={"prm": JudgeResult(score=1.0)})
    assert sample_from_turn(turn, "opd") == (None, "no_hint")
    sample, reason = sample_from_turn(turn, "opd", wishes=["address the student by name"])
    assert reason is None and sample.hint == "Address the student by name." and sample.hint_messages == turn.context
    grpo, _ = sample_from_turn(turn, "grpo", wishes=["address the student by name"])
    assert grpo.hint is None  # GRPO has no teacher: the wishes change nothing


def test_teacher_wishes_need_a_method_with_a_teacher(tmp_path):
    import pytest

    from clawgym.rl.launch import ConfigError, load_config
    from tests.test_chat_serve import config_file

    with pytest.raises(ConfigError, match="has no teacher"):
        load_config(config_file(tmp_path, teacher_wishes=True), serving=True)  # method grpo
    config = load_config(config_file(tmp_path, teacher_wishes=True), ["method=opd", "judge.type=probhint"],
                         serving=True)
    assert config.serve.teacher_wishes is True


# ---- a language model plays the person ---------------------------------------------------------------


def test_a_role_played_user_reads_only_the_persona_description_and_decides_when_it_is_done():
    import asyncio

    from clawgym.core.policy import Generation
    from clawgym.envs.openclaw_chat.personas import PERSONAS
    from clawgym.envs.openclaw_chat.simulator import RolePlayedUser
    from clawgym.serve.rehearsal import opening, persona_tasks

    class Says:
        def __init__(self, text):
            self.text, self.seen = text, None

        async def generate(self, messages, tools, sampling):
            self.seen = messages
            return Generation(text=self.text, message={"role": "assistant", "content": self.text})

    persona, task = PERSONAS["teacher"], persona_tasks("teacher", "train")[0]
    messages = opening(persona, task)
    partial = Says("Nice that you used her name, but it's way too long - trim it?")
    text, done = asyncio.run(RolePlayedUser(partial).areply(persona, task, messages, "A long comment."))
    assert (text, done) == ("Nice that you used her name, but it's way too long - trim it?", False)
    system, request, reply = partial.seen[0]["content"], partial.seen[-2], partial.seen[-1]
    assert persona.description in system and persona.done_token in system
    assert request == {"role": "assistant", "content": messages[-1]["content"]}  # the person's words are the model's
    assert reply == {"role": "user", "content": "A long comment."}
    for preference in persona.preferences:  # the hidden checks never reach the role-played person
        assert preference.feedback not in system
    assert RolePlayedUser(Says(f"Perfect, thank you! {persona.done_token}")).reply(
        persona, task, messages, "ok")[1] is True
    assert RolePlayedUser(Says("  ")).reply(persona, task, messages, "ok") == ("Please answer what I asked.", False)
