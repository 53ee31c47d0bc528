"""The policy interface lives in :mod:`clawgym.core.policy` (settings use it too); re-exported here."""

from clawgym.core.policy import Generation, Policy, SamplingParams

__all__ = ["Generation", "Policy", "SamplingParams"]
