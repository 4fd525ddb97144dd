"""The command line's commands, one module each; cli.py gathers them into the group."""
