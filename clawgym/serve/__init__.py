"""The deployed personal agent: the OpenAI-compatible gateway real clients talk to, session tracking,
the durable turn log, the personal trainer and ``clawgym serve``.

It is the one place that composes a setting (``envs/openclaw_chat``: the env, the simulator, the
personas) with the RL stack (``rl``: policies, the judge, the trainer).
"""
