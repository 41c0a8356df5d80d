"""The defaults every entry point sets before DSPy, LiteLLM or Hugging Face load: nothing may
download from a model hub at run time, LiteLLM reads its model cost map from its package, and
Hugging Face libraries draw no progress bars and print errors only (kgqa's own bar and log lines
are the output)."""

from __future__ import annotations

import os

OFFLINE_DEFAULTS = {"HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}


def stay_offline() -> None:
    """Set the offline defaults where the environment does not say otherwise."""
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)
