"""The one kind of error every layer may raise for input that cannot be used (a plan, a name,
a store, a file): the command line ends on it with its message and exit code 2."""


class InputError(Exception):
    """Input that cannot be used: the message names what, where and the fix."""
