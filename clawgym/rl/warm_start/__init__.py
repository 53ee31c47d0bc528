"""The warm start before RL: SFT on the setting's own solutions, played through the env.

- :mod:`.config`: :class:`WarmStartConfig` (the launcher's ``warm_start`` section; light, no torch);
- :mod:`.episodes`: the oracle's episodes as token records, and the policy's own successes;
- :mod:`.samples`: an episode -> SFT samples (the assistant's tokens only);
- :mod:`.stage`: collect, train the SFT steps (:func:`~clawgym.rl.warm_start.stage.run_warm_start`).
"""

from clawgym.rl.warm_start.config import WarmStartConfig

__all__ = ["WarmStartConfig"]
