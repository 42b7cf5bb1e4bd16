"""olah's command line (``olah-cli``), with its local-mirror files streamed in 8 MiB chunks instead of 4 KiB.

olah 0.5.4 reads a mirrored file whole, then yields it 4 KiB at a time to a Starlette StreamingResponse,
which moves every chunk through a worker thread: about 25 MB/s, 40 s for T5 v1.1 base's 990 MB. In chunks
of 8 MiB the same bytes arrive in a second or two. Run by ``hub_server.HubServer`` with olah's own python:

    .venv-hub/bin/python tests/rehearsal/olah_server.py -c olah.toml
"""

import io
import sys
import types

import olah.mirror.repos
from olah.server import cli

CHUNK = 8 << 20


class _LargeChunks(io.BytesIO):
    """A BytesIO whose reads of a few bytes return up to CHUNK bytes (olah reads 4,096 at a time)."""

    def read(self, size=-1):
        return super().read(size if size is None or size < 0 else max(size, CHUNK))


# olah.mirror.repos uses io for this one BytesIO only (in get_file's stream_wrapper).
olah.mirror.repos.io = types.SimpleNamespace(BytesIO=_LargeChunks)

if __name__ == "__main__":
    sys.exit(cli())
