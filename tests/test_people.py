"""The six people beyond homework: every task solvable, each check a real check (a reply that breaks only it
fails only it), their own held-out requests, and OpenClawChat-v0 playing them by name."""

import gymnasium as gym
import pytest

import clawgym  # noqa: F401
from clawgym.envs.openclaw_chat.people import EVERYONE, PEOPLE, oracle_reply, people_tasks
from clawgym.envs.openclaw_chat.personas import PERSONAS
from clawgym.serve.rehearsal import persona_tasks

TASKS = people_tasks()


def first(person):
    return next(t for t in TASKS if t.data["persona"] == person)


def failing(person, reply, task=None):
    task = task or first(person)
    return sorted(name for name, met in PEOPLE[person].score(reply, task)[1].items() if not met)


def test_every_task_is_solvable_and_each_person_has_held_out_requests_of_their_own():
    assert set(PEOPLE) == {"office_manager", "cook", "traveller", "support_lead", "reviewer", "researcher"}
    assert set(EVERYONE) == set(PERSONAS) | set(PEOPLE) and len(TASKS) == 6 * 48
    for task in TASKS:
        person = PEOPLE[task.data["persona"]]
        assert len(person.preferences) == 4
        score, results = person.score(oracle_reply(task), task)
        assert score == 1.0, (task.id, results)
        assert person.score("", task)[0] == 0.0 and person.score("ok", task)[0] < 1.0
    for name in PEOPLE:
        train, test = persona_tasks(name, "train"), persona_tasks(name, "test")
        assert len(test) >= 10 and len(train) >= 30
        assert not {t.prompt for t in train} & {t.prompt for t in test}
    reviews = [t for t in TASKS if t.data["persona"] == "reviewer"]  # one function is never on both sides
    assert not ({t.data["code"] for t in reviews if t.split == "train"}
                & {t.data["code"] for t in reviews if t.split == "test"})
    assert people_tasks() == TASKS  # seeded: the same tasks every time


def test_a_reply_that_breaks_one_wish_fails_that_check_alone():
    email = first("office_manager")
    good = oracle_reply(email)
    name = email.data["recipient"].split()[0]
    assert failing("office_manager", good.replace(f"Hi {name},", f"Dear {name},")) == ["greets_by_first_name"]
    assert failing("office_manager", good.replace("\n\nSam", "\n\nBest regards")) == ["signed_sam"]
    assert failing("office_manager", good.replace("unclear.", "unclear!")) == ["no_exclamation"]
    assert failing("office_manager", good.replace("A short note", "A short note " + "really " * 120)) == [
        "under_120_words"]

    recipe = first("cook")
    good = oracle_reply(recipe)
    assert failing("cook", good.replace("200 ml stock", "1 cup stock")) == ["metric_units"]
    assert failing("cook", good.replace(f"for {recipe.data['servings']} people", "")) == ["states_servings"]
    assert failing("cook", good.replace("25 minutes", "a while").replace("30 minutes", "not long")) == [
        "total_minutes"]
    assert failing("cook", "Sure, here is a lovely recipe.\n" + good) == ["starts_with_ingredients"]

    trip = first("traveller")
    good = oracle_reply(trip)
    assert failing("traveller", good.replace("Day 2", "Then")) == ["day_by_day"]
    assert failing("traveller", good.replace(f"your {trip.data['budget']} euros", "your budget")) == [
        "mentions_budget"]
    assert failing("traveller", good.replace("Day 1: a walk", "Day 1: land at the airport, then a walk")) == [
        "no_flights"]
    assert failing("traveller", good.replace("What would you like to change?", "Enjoy the trip.")) == [
        "ends_with_question"]

    ticket = first("support_lead")
    good = oracle_reply(ticket)
    assert failing("support_lead", good.replace(f"Hi {ticket.data['customer'].split()[0]}", "Hello")) == [
        "opens_with_customer"]
    assert failing("support_lead", good.replace(f"ticket {ticket.data['ticket']}", "your ticket")) == [
        "ticket_number"]
    assert failing("support_lead", good + " We will refund you in full.") == ["no_refund"]
    assert failing("support_lead", good + " Sorry again, we apologise.") == ["apologises_once_at_most"]

    review = first("reviewer")
    good = oracle_reply(review)
    assert failing("reviewer", "Looks mostly fine. " + good) == ["verdict_first"]
    assert failing("reviewer", good.replace(f"line {review.data['bug_line']}", "one line")) == ["line_numbers"]
    assert failing("reviewer", good.replace(f"In {review.data['function']}, ", "Here ")) == ["names_function"]
    assert failing("reviewer", good + "\n```python\nreturn x\n```") == ["no_code_blocks"]

    study = first("researcher")
    good = oracle_reply(study)
    assert failing("researcher", good.replace(f"{study.data['year']}: r", "R")) == ["keeps_year", "starts_with_year"]
    assert failing("researcher", good.replace(f"{study.data['year']}: r", "R") + f" ({study.data['year']})") == [
        "starts_with_year"]
    assert failing("researcher", good.replace(f"with {study.data['participants']} participants ", "")) == [
        "sample_size"]
    assert failing("researcher", good + " We think it matters.") == ["third_person"]
    assert failing("researcher", "Summary. " + good) == ["starts_with_year"]
    assert not failing("researcher", f"**{good}**")


def test_numbers_from_the_request_count_as_written_and_not_inside_longer_numbers():
    trip = first("traveller")
    budget = trip.data["budget"]
    assert PEOPLE["traveller"].preferences[1].check(f"It stays within {budget:,} euros.", trip)
    assert PEOPLE["traveller"].preferences[1].check(f"Budget: €{budget}.", trip)
    assert not PEOPLE["traveller"].preferences[1].check(f"It costs {budget}5 euros.", trip)
    assert not PEOPLE["traveller"].preferences[1].check(f"It costs {budget}.5 euros.", trip)


def test_the_env_plays_a_person_by_name_and_their_feedback_is_their_own():
    env = gym.make("clawgym/OpenClawChat-v0", personas=["cook"], user_simulator="scripted-all")
    obs, _ = env.reset(seed=3)
    assert obs[1]["content"].startswith("Can you give me a recipe for")
    obs, reward, terminated, *_ = env.step("Sure! Mix 2 cups of flour with milk and bake it.")
    said = obs[0]["content"]
    assert not terminated and "grams" in said and "how many people" in said and "minutes" in said
    assert "ingredients" in said and reward == 0.0
    obs, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    assert terminated and reward == 1.0 and info["success"] and "RECIPE_DONE" in obs[0]["content"]
    default = gym.make("clawgym/OpenClawChat-v0").unwrapped
    assert {t.data["persona"] for t in default.task_set} == set(PERSONAS)  # the homework three unless named
    with pytest.raises(ValueError, match="unknown personas"):
        gym.make("clawgym/OpenClawChat-v0", personas=["pirate"])
