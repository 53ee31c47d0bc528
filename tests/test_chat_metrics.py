"""Honest metrics for OpenClawChat-v0 (issue 13, point 4): a result check that an echo cannot pass, a
short check the demo's token cap lets fail, a held-out split disjoint from training, and the OPD
teacher choice (initial / policy / judge)."""

import pytest
import yaml

from clawgym.core.tasks import Task
from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks, oracle_reply, split_of, stated_results

TEACHER, TA, STUDENT = PERSONAS["teacher"], PERSONAS["ta"], PERSONAS["student"]


def task(persona: str, answer: int, student_answer: int, prompt: str = "Ava has 30 apples and buys 4 packs of 5. "
         "How many apples does Ava have now?") -> Task:
    return Task(id="t", prompt=prompt, answer=answer, data={"persona": persona, "student": "Ben",
                                                             "student_answer": student_answer})


def result_ok(persona, reply: str, t: Task) -> bool:
    results = persona.score(reply, t)[1]
    return results["gives_answer" if persona is STUDENT else "mentions_result"]


# ------------------------------------------------------------------ "mentions the correct result"
@pytest.mark.parametrize("reply", [
    "Great work, Ben! You answered 48, keep it up.",                       # the wrong answer echoed
    "Great work, Ben! Your answer of 48 is correct.",                       # the wrong answer endorsed
    "Nice try Ben, the answer is 48 or 50, keep it up.",                    # both numbers, the wrong one stated
    "Well done Ben, 50 and 48 are both numbers you could get.",            # the right number, never stated
    "Great job Ben! The result is 50, and your 48 is also correct.",        # right stated, wrong endorsed too
    "Great job Ben! The correct answer is 48, well done.",                  # the wrong answer called the correct one
])
def test_a_wrong_student_answer_repeated_or_mixed_in_does_not_pass(reply):
    assert not result_ok(TEACHER, reply, task("teacher", 50, 48))


def test_echoing_the_problem_does_not_state_the_result():
    """A share problem can contain its own answer (16 cookies among 4 friends -> 4 each)."""
    t = task("teacher", 4, 5, prompt="Liam shares 16 cookies equally among 4 friends. How many does each friend get?")
    assert not result_ok(TEACHER, "Great effort Ben! Liam shares 16 cookies equally among 4 friends.", t)
    assert result_ok(TEACHER, "Great effort Ben! Each friend gets 4 cookies, not 5.", t)


@pytest.mark.parametrize("reply", [
    "Great effort, Ben! The correct result is 50, keep it up.",
    "Ben answered 48, but the correct answer is 50. Nice work on the setup, Ben!",
    "Good job Ben: 30 + 4 x 5 = 50, so you were close with 48.",
    "Well done Ben. Ava has 50 apples now; your 48 is two short.",
    "Nice work, Ben! The total comes to 50 apples.",
    "Great job Ben, your answer is not right: it should be 50.",
])
def test_true_statements_of_the_result_pass(reply):
    assert result_ok(TEACHER, reply, task("teacher", 50, 48))


def test_a_correct_student_answer_may_be_echoed_and_called_correct():
    assert result_ok(TEACHER, "Great job Ben, your answer of 50 is correct!", task("teacher", 50, 50))
    assert result_ok(TA, "Score: 10/10. The answer 50 is right. Ben shows every step clearly.", task("ta", 50, 50))


def test_scores_out_of_ten_are_not_results():
    t = task("ta", 5, 7, prompt="Ava shares 40 apples equally among 8 friends. How many does each friend get?")
    assert not result_ok(TA, "The grade is 5/10. Ben made a slip in the division step.", t)
    assert result_ok(TA, "The grade is 4/10. The result is 5, and Ben wrote 7.", t)


# ------------------------------------------------------------------ "a score out of 10"
def score_ok(reply: str) -> bool:
    return TA.score(reply, task("ta", 50, 48))[1]["score_out_of_10"]


@pytest.mark.parametrize("reply", [
    "Score: 7/10. Ben set it up well.", "I give it 7 / 10.", "Ben gets 0/10 here.", "A perfect 10/10!",
    "That is 8.5/10 for Ben.", "Ben earns 6 out of 10.", "(7/10) Good setup, Ben.",
])
def test_a_score_on_the_scale_passes(reply):
    assert score_ok(reply)


@pytest.mark.parametrize("reply", [
    "58/10 = 58.0",                                # the student's answer written over the scale, not a score
    "The grade is 48/10 for Ben.",
    "Ben scores 11/10, above and beyond.",
    "Ben earns 58 out of 10.",
    "Ben gets 5/100 on this one.",                 # another scale
    "That is 10.5/10.",
    "Ben answered 48; the correct result is 50.",  # no score at all
])
def test_a_number_put_next_to_the_scale_is_not_a_score_on_it(reply):
    """The 0.5B model learns to write the student's answer over the scale ("58/10"): a TA would not call
    that a grade, so the hidden check (the metric, and the scripted TA's complaint) does not either."""
    assert not score_ok(reply)


# ------------------------------------------------------------------ "no lists"
def prose_ok(persona, reply: str) -> bool:
    return persona.score(reply, task(persona.name, 50, 48))[1]["no_lists"]


@pytest.mark.parametrize("reply", [
    "1. Ava starts with 30 apples.\n2. She buys 20 more.",     # a numbered list
    "Steps:\n3) add\n4) compare",                              # numbered from elsewhere, two items
    "- Ava starts with 30 apples.",                             # a bullet is list formatting on its own
    "Here it is:\n* 30 apples\n",
    "• thirty apples",
    "Working:\n\n1. Pages read: 6 x 4 = 24 pages",              # a list begun at 1 and cut off
    "58. The answer is correct.\n1. First add the packs.",      # two numbered lines, whatever the numbers
])
def test_lists_fail_the_prose_checks(reply):
    assert not prose_ok(TA, reply) and not prose_ok(STUDENT, reply)


@pytest.mark.parametrize("reply", [
    "58. The student's answer is correct. Ava has 30 apples and buys 20 more.",  # a number and a full stop
    "113.\nThe student added the packs first.",
    "3. Problem: Ava shares 40 apples among 8 friends.",
    "Ben's answer is 48, and the result is 50. He missed one pack of 2.",
    "The result is 50 - Ben wrote 48.",                          # a dash inside a line
])
def test_a_line_opening_with_a_number_is_not_a_list(reply):
    """The 0.5B TA learns to open with the student's answer ("58. The student's answer is correct."): one line
    that begins with a number other than 1 is a sentence, not a list item, for the metric and the scripted person."""
    assert prose_ok(TA, reply) and prose_ok(STUDENT, reply)


def test_oracle_replies_pass_every_check_on_every_task():
    for t in bundled_tasks(per_persona=120):
        persona = PERSONAS[t.data["persona"]]
        assert persona.score(oracle_reply(t), t) == (1.0, {p.name: True for p in persona.preferences}), t.id
        assert float(t.answer) in stated_results(oracle_reply(t))


# ------------------------------------------------------------------ "stay under 80 words" at the demo's cap
def demo_config() -> dict:
    from clawgym.demo import DEMO_CONFIG

    return yaml.safe_load(DEMO_CONFIG.read_text())


def test_the_short_check_can_fail_at_the_demos_token_cap():
    """A comment of more than 80 words fits in the demo's max_tokens (rollouts and held-out evals), in the
    tokens of the demo's own model, and the teacher's short check fails on it. Under a cap of 48 tokens no
    reply could exceed 80 words (no token holds two space-separated words), so the check could not fail."""
    from clawgym.inference.models import load_tokenizer

    config = demo_config()
    tokenizer = load_tokenizer(config["policy"]["model"])
    cap = config["rollout"]["max_tokens"]
    t = task("teacher", 50, 48)
    long = ("Great effort, Ben! The correct result is 50. You set the problem up well and added the packs in the "
            "right order, which is the hard part. Your slip was in the last addition, where two apples went "
            "missing. Next time, check the total by counting the packs again before you write it down. Keep "
            "practising problems like this one, because you clearly understand how buying packs of apples "
            "adds to what Ava already had, and with a little more care you will get them all right every time.")
    ids = tokenizer(long, add_special_tokens=False)["input_ids"]
    assert len(long.split()) > 80 and len(ids) <= cap, (len(long.split()), len(ids), cap)
    assert tokenizer.decode(ids) == long  # what a generation of these tokens would read as
    assert TEACHER.score(long, t)[1] == {"names_student": True, "friendly": True,
                                         "mentions_result": True, "short": False}
    words_per_token = [len(tokenizer.decode([i]).split()) for i in tokenizer(long * 3)["input_ids"]]
    assert max(words_per_token) <= 1  # so at 48 tokens a reply has at most 48 words: "short" always passes


# ------------------------------------------------------------------ the held-out split
def test_split_is_deterministic_disjoint_and_independent_of_the_task_count():
    small, large = bundled_tasks(), bundled_tasks(per_persona=120)
    for tasks in (small, large):
        train = {t.prompt for t in tasks if t.split == "train"}
        test = {t.prompt for t in tasks if t.split == "test"}
        assert train and test and not train & test  # no held-out problem is ever trained on
        assert all(t.split == split_of(t.prompt) for t in tasks)
        for persona in PERSONAS:
            mine = [t for t in tasks if t.data["persona"] == persona]
            assert 0.15 < sum(t.split == "test" for t in mine) / len(mine) < 0.4
    by_id = {t.id: t for t in large}
    assert all(by_id[t.id].to_dict() == t.to_dict() for t in small)  # the demo's 120 extend the bundled 40
    assert [t.to_dict() for t in bundled_tasks()] == [t.to_dict() for t in small]


def test_demo_and_eval_score_held_out_tasks_disjoint_from_the_demos_training(tmp_path):
    """The demo trains on the train split of its 120 teacher tasks; `clawgym eval` (split test of the
    bundled tasks) and the demo's own held-out score never see one of those problems."""
    from clawgym.cli import build_parser
    from clawgym.core.tasks import TaskSet
    from clawgym.demo import write_demo_tasks

    config = demo_config()
    assert config["env"]["kwargs"]["split"] == "train" and config["env"]["eval_kwargs"]["split"] == "test"
    demo = TaskSet.load(write_demo_tasks(tmp_path / "tasks.jsonl"))
    trained = {t.prompt for t in demo.split("train")}
    assert not trained & {t.prompt for t in demo.split("test")}
    assert build_parser().parse_args(["eval", "clawgym/OpenClawChat-v0"]).split == "test"
    assert not trained & {t.prompt for t in bundled_tasks() if t.split == "test"}
    chat = yaml.safe_load((demo_config_dir() / "chat.yaml").read_text())
    assert chat["env"]["kwargs"]["split"] == "train" and chat["env"]["eval_kwargs"]["split"] == "test"


def demo_config_dir():
    from clawgym.demo import DEMO_CONFIG

    return DEMO_CONFIG.parent


# ------------------------------------------------------------------ the OPD teacher
def chat_config(*sets):
    from clawgym import launchers
    from clawgym.rl.launch import load_config

    return load_config(launchers.resolve("chat"),
                       ["policy.model=tiny-random", "judge.model=tiny-random", "loop.eval_every=0", *sets])


def test_teacher_choices_and_their_config_errors():
    from clawgym.rl.launch import ConfigError
    from clawgym.rl.launch.teacher import trainer_teacher

    assert trainer_teacher(chat_config()) == "initial"
    assert trainer_teacher(chat_config("trainer.teacher=current")) == "policy"  # the older name
    assert trainer_teacher(chat_config("trainer.teacher=judge")) == "judge"
    # the judge is the policy
    assert trainer_teacher(chat_config("trainer.teacher=judge", "judge.model=policy")) == "policy"
    assert trainer_teacher(chat_config("trainer.teacher=judge", "method=grpo", "judge.type=prob")) == "initial"
    with pytest.raises(ConfigError, match="trainer.teacher must be one of initial, policy, judge"):
        chat_config("trainer.teacher=teacher")
    with pytest.raises(ConfigError, match="OpenAI-compatible judge endpoint returns no log-probabilities"):
        chat_config("trainer.teacher=judge", "judge.backend=openai", "judge.base_url=http://127.0.0.1:9/v1",
                    "judge.type=prm,hint")
    with pytest.raises(ConfigError, match="runs in process only"):
        chat_config("trainer.teacher=judge", "gpu.enabled=true")


def test_judge_teacher_scores_with_the_judge_model_and_refuses_another_tokenizer():
    import torch

    from clawgym.rl.launch import ConfigError, build_stack
    from clawgym.rl.launch.build import judge_teacher
    from clawgym.rl.types import Sample

    stack = build_stack(chat_config("trainer.teacher=judge"))
    trainer = stack.trainer
    assert trainer.config.teacher == "judge" and trainer.teacher_model is stack.judge_policy.model
    assert stack.judge_policy is not stack.policy
    with torch.no_grad():  # make the judge differ from the initial weights, so the two teachers disagree
        for p in trainer.teacher_model.parameters():
            p.add_(0.05 * torch.randn_like(p))

    def teacher_logprobs(teacher):
        trainer.config.teacher = teacher
        sample = Sample(prompt_ids=[1, 2, 3], response_ids=[4, 5, 6], old_logprobs=[-1.0] * 3, hint="Name the student.",
                        hint_messages=[{"role": "user", "content": "Write a comment for Ben."}])
        trainer.compute_teacher_logprobs([sample])
        return sample.teacher_logprobs

    from_judge, from_initial = teacher_logprobs("judge"), teacher_logprobs("initial")
    assert from_judge != from_initial and len(from_judge) == 3

    class OtherTokenizer:
        def get_vocab(self):
            return {"a": 0}

    class Judge:
        model, tokenizer = trainer.teacher_model, OtherTokenizer()

    with pytest.raises(ConfigError, match="another tokenizer"):
        judge_teacher(chat_config("trainer.teacher=judge"), Judge(), stack.policy.tokenizer)
    trainer.teacher_model = None
    trainer.config.teacher = "judge"
    with pytest.raises(RuntimeError, match="no teacher_model"):
        teacher_logprobs("judge")


def test_personas_from_the_command_line_are_a_comma_list():
    """`clawgym eval ... --env-arg personas=teacher` passes a string; it used to be read letter by letter."""
    import gymnasium as gym

    import clawgym  # noqa: F401

    env = gym.make("clawgym/OpenClawChat-v0", personas="teacher,ta", split="test")
    assert {t.data["persona"] for t in env.unwrapped.task_set} == {"teacher", "ta"}
    with pytest.raises(ValueError, match="unknown personas \\['pirate'\\]"):
        gym.make("clawgym/OpenClawChat-v0", personas="teacher,pirate")
