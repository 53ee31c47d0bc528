"""Every ``clawgym`` subcommand, one module each: its flags (``add_parser(sub)``, which sets ``fn``) and its body.

A body reads the arguments, calls the package that does the work (``clawgym.serve.main`` builds what
``clawgym serve`` serves, ``clawgym.rl.launch`` runs what ``clawgym train`` trains, ``clawgym.demo`` is the
demo's run) and prints. ``clawgym.cli`` builds the parser from these modules, dispatches, and maps a
:class:`clawgym.errors.UsageError` to a one-line message and exit code 2. Only the entry points import this
package (``clawgym.cli`` and ``python -m clawgym.demo``); the commands never import ``clawgym.cli``.
"""
