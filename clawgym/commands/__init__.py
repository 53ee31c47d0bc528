"""The bodies of ``clawgym`` subcommands that compose the library (policies, rollouts, evals, launchers).

``clawgym.cli`` parses arguments and maps :class:`clawgym.errors.UsageError` to a one-line message and
exit code 2; the commands here never import ``clawgym.cli``.
"""
