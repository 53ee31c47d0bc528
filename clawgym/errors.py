"""Errors that are the user's input, not a bug: the CLI prints them on one line and exits with code 2."""


class UsageError(ValueError):
    """Bad input (an unknown id, a missing file, an invalid config value); the message says what to change."""
