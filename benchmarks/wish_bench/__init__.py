"""The wish benchmark: does a reply meet what this person asked for? Items to measure any wish judge.

A wish judge (e.g. :class:`clawgym.personal.rubric.RubricJudge`) reads a person's wish ("pls stop starting
every email with 'I hope this finds you well'", "never suggest renting a car, I don't have a licence",
"call me Jo") and decides whether a reply meets it. This benchmark measures such a judge on people written apart
from the project's bundled personas: 14 kinds of person (work emails, code review, customer support,
cooking, travel, summaries of pasted texts, study notes, cover letters, a parent planning activities,
product copy, fitness, an English learner, meeting notes, analyst code snippets), 54 self-contained
requests and 100 wishes in the person's own words (:mod:`benchmarks.wish_bench.people`). Most wishes are
about what format cues do not touch: openings and endings, what to include or leave out, voice and
names, order, units, language, specific content, lengths relative to the request.

**Labels.** Every wish has a hand-written check ``met(request, reply) -> bool``
(:mod:`benchmarks.wish_bench.checks`), unit-tested on a clearly met and a clearly unmet reply
(tests/test_wish_bench.py). A wish stayed in only when such a check could be written honestly; where the
obvious reading was in doubt the wish was reworded until the check is what it says ("don't copy whole
phrases" became "whole sentences"; "no nutrition advice" became "no diet, food or drink advice") or
dropped (below). Conventions: an empty reply meets no wish; a wish that forbids something is met by any
reply without it ("no exclamation marks"; "three bullet points at most" with none); a wish that asks for
something in a unit or form needs at least one instance ("amounts in grams or ml" needs one).

**Split.** Each wish is ``dev`` or ``test`` by a stable hash of its id (:func:`people.split_of`: 50 / 50,
every kind in both). Tune on dev only; the test split reports a judge's figures and nothing is tuned on
it. Items carry their wish's split.

**Items.** :mod:`benchmarks.wish_bench.generate` has a model (qwen2.5-coder-0.5b by default, or 1.5b)
write sampled replies (temperature 0.9) to every request, some with one wish in the system prompt and
some without, labels each (request, reply, wish) with the checks and writes
``benchmarks/results/wish_bench_items.jsonl``::

    .venv/bin/python benchmarks/wish_bench/generate.py [--model qwen2.5-coder-1.5b]

``benchmarks/wish_judge.py`` scores them with the rubric judge as the product builds it
(``--split dev``, the default, or ``--split test`` to report).

**Dropped**, because no honest check exists or it would decide a doubtful case: oven temperatures in
Celsius (most requests need no oven), "if there's a security problem, that goes first" and "label each
issue with a severity" (a check cannot tell what the issues are), "skip style nitpicks" (which words are
style), "no opinions of your own", "use British spelling" (met by default; -ize is British too), "three
paragraphs" and "thank them for their time at the end" in letters (greeting and sign-off blur both),
"say how long each activity takes" and "one line per idea" (ideas cannot be told apart), "start with a
warm-up", "end with a line of encouragement", "show me the pronunciation", "decisions first" (a title may
come before), "bold everyone's name", "write each action as Name - task - deadline".
"""
