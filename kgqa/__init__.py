"""kgqa: knowledge-graph question answering as a compiled DSPy program (the command line and LM engines)."""

import logging
from importlib import metadata

logging.getLogger("kgqa").addHandler(logging.NullHandler())  # quiet unless the application (or --verbose) configures logging

try:
    __version__ = metadata.version("kgqa")
except metadata.PackageNotFoundError:  # running from a checkout that was not installed
    __version__ = "0.0.0"
