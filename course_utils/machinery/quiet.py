"""Library notices that say nothing a student can act on, dropped: a logging filter, and the course's list.

with messages_dropped("transformers.modeling_utils", "both are present"): ...   # inside the block only
quiet_library_notices()    # the course's list, for the whole process (command-line entry points)
quiet_progress_bars(hub=True)   # before datasets and transformers are imported: bars only for real work
"""

from __future__ import annotations

import contextlib
import logging
import os


class DropMessages(logging.Filter):
    """A logging filter that drops records whose message contains one of ``fragments``."""

    def __init__(self, *fragments: str):
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(fragment in record.getMessage() for fragment in self.fragments)


@contextlib.contextmanager
def messages_dropped(logger_name: str, *fragments: str):
    """While active, ``logger_name`` drops the records that contain one of ``fragments``."""
    logger, notice = logging.getLogger(logger_name), DropMessages(*fragments)
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


# Library notices that say nothing a student can act on, by logger. accelerate's: a T5 checkpoint
# stores the embedding that encoder, decoder and `shared` share once, as safetensors requires, and
# says so at every save ("This should be OK"); the tests check the reload.
QUIET = {"accelerate.utils.other": ("Removed shared tensor",)}


def quiet_library_notices() -> dict[str, str]:
    """Silence the notices in ``QUIET``, and DeepSpeed's "Setting accelerator to CPU" where torch sees no
    CUDA GPU (by naming the CPU in DS_ACCELERATOR, unless it is set). Returns the variables it set;
    calling it again adds nothing."""
    import torch

    for name, fragments in QUIET.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, DropMessages) for f in logger.filters):
            logger.addFilter(DropMessages(*fragments))
    if "DS_ACCELERATOR" in os.environ or torch.cuda.is_available():
        return {}
    os.environ["DS_ACCELERATOR"] = "cpu"
    return {"DS_ACCELERATOR": "cpu"}


def quiet_progress_bars(hub: bool) -> dict[str, str]:
    """Switch off the progress bars of the libraries' own bookkeeping, before they are imported; return the
    variables this call set.

    datasets draws a bar for every split it prepares, casts and maps, seconds each on the course's data, and
    they would bury the bars a student waits on: training (the Trainer's) and generation (the course's own).
    With ``hub`` (offline, when nothing can be downloaded) the Hub's and transformers' bars go too: loading
    and saving weights. Online, they stay, since a first download of a model can take minutes.
    """
    wanted = {"HF_DATASETS_DISABLE_PROGRESS_BARS": "1", **({"HF_HUB_DISABLE_PROGRESS_BARS": "1"} if hub else {})}
    changed = {name: value for name, value in wanted.items() if os.environ.get(name) != value}
    os.environ.update(changed)
    return changed
