"""What the command-line tools share about a usage error: its exception and its exit status.

A usage error is a bad command line or an input file that cannot be used (missing, not UTF-8
text, the wrong kind of file). Every tool exits `EXIT_USAGE` for one, as click and typer do.
"""

EXIT_USAGE = 2


class UsageError(Exception):
    """A problem with the command line or the input files (exit `EXIT_USAGE`)."""
