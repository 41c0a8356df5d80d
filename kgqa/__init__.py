"""kgqa: knowledge-graph question answering as a compiled DSPy program (the command line and LM engines)."""

from importlib import metadata

try:
    __version__ = metadata.version("kgqa")
except metadata.PackageNotFoundError:  # running from a checkout that was not installed
    __version__ = "0.0.0"
