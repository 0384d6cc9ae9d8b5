"""The version of redactopt (one place: the package, the command line and the HTML page read it)."""

__version__ = "0.4.0"
