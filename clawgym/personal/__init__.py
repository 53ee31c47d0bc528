"""Learning from a person's conversation: everything that turns what someone says into training.

The server (:mod:`clawgym.serve`) records and judges each turn; this package makes it a learning signal:

- :mod:`.wishes` turns a correction into wishes ("use bullet points") and says when two are the same or
  contradict; :mod:`.wish_memory` keeps each person's wishes, durably, visibly and forgettably;
- :mod:`.rubric` (with :mod:`.rubric_cues` and :mod:`.request_facts`) is the wish judge: it scores any
  reply against a person's remembered wishes;
- :mod:`.hindsight` replays a judged turn as a GRPO group of replies scored by that judge;
  :mod:`.teacher_hint` puts the wishes into the OPD teacher's context;
- :mod:`.trainer` (one set of weights for everyone) and :mod:`.user_adapters` (one LoRA adapter per
  person) train in the background and publish to the served policy;
- :mod:`.learner` is the one :class:`~clawgym.personal.learner.Learner` protocol the server drives and
  the one place the learner is built, every dependency passed in.

It imports ``core``, ``inference`` and ``rl`` (the losses, the trainer, the shared judge), never ``serve``
or a setting.
"""
