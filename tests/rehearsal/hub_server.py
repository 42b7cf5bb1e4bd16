"""A Hub-compatible server on 127.0.0.1 for the rehearsal: olah serving the repos of ``hub_repos.py``.

olah (PyPI, MIT) is a self-hosted Hugging Face mirror. In its local-mirror mode it answers the
Hub's API and file routes from git repositories in a folder. It runs from its own virtual
environment (``.venv-hub``, made by ``make hub-venv`` from ``requirements-hub.txt``): its
dependencies pin psutil below the course's version, so it cannot share the course's.

    with HubServer(mirrors, work_dir) as hub:
        env["HF_ENDPOINT"] = hub.endpoint          # huggingface_hub and datasets now talk to it

What olah 0.5.4 needs, found by trying it against huggingface_hub 2.4 and transformers 5.23:
- ``offline = true``, and an upstream (``hf-netloc``) on a dead loopback port, so it never tries
  the real Hub.
- Offline it resolves a branch name (``main``), and answers ``/api/<type>/<repo>`` without a
  revision, only from its own cache. ``seed_revision_cache`` writes those entries from each git
  repo; without them AutoTokenizer's tree listing fails with 401 RepositoryNotFound.
- It streams a file 4 KiB at a time, each chunk through a worker thread (25 MB/s): ``olah_server.py`` runs
  its command line with 8 MiB chunks.
- It ignores Range requests, answers HTTP 500 for non-LFS binary files of 121-149 bytes, and
  for a GET of a missing file (a HEAD gives 404). None of the rehearsal's files or requests hit these.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OLAH = ROOT / ".venv-hub" / "bin" / "olah-cli"
OLAH_PYTHON = OLAH.with_name("python")
SERVER = Path(__file__).with_name("olah_server.py")  # olah-cli, streaming in large chunks
CONFIG = """[basic]
host = "127.0.0.1"
port = {port}
repos-path = "{repos}"
mirrors-path = ["{mirrors}"]
mirror-netloc = "127.0.0.1:{port}"
mirror-lfs-netloc = "127.0.0.1:{port}"
hf-scheme = "http"
hf-netloc = "127.0.0.1:9"
hf-lfs-netloc = "127.0.0.1:9"

[accessibility]
offline = true
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout.strip()


def seed_revision_cache(mirrors: Path, repos: Path) -> int:
    """Write olah's revision entries for ``main`` of every repo under ``mirrors``; return how many."""
    count = 0
    for kind in ("models", "datasets"):
        for head in sorted((mirrors / kind).rglob("HEAD")):
            folder = head.parent.parent  # <repo>/.git/HEAD
            if head.parent.name != ".git":
                continue
            repo_id = str(folder.relative_to(mirrors / kind))
            sha, when = _git(folder, "rev-parse", "main"), _git(folder, "log", "-1", "--format=%cI", "main")
            revision = repos / "api" / kind / repo_id / "revision" / "main"
            revision.mkdir(parents=True, exist_ok=True)
            # meta_head.json: a plain {"sha", "lastModified"} document (the latest commit, offline).
            (revision / "meta_head.json").write_text(json.dumps({"sha": sha, "lastModified": when}))
            # meta_get.json: a cached response envelope, its body beside it (branch -> commit, offline).
            (revision / "meta_get.json").write_text(
                json.dumps(
                    {"status_code": 200, "headers": {"content-type": "application/json"}, "cached_at": time.time()}
                )
            )
            (revision / "meta_get.json.body").write_text(json.dumps({"id": repo_id, "sha": sha, "lastModified": when}))
            count += 1
    return count


class HubServer:
    """olah on a free loopback port for the lifetime of a ``with`` block; its log in ``work_dir``."""

    def __init__(self, mirrors: Path, work_dir: Path, port: int | None = None):
        self.mirrors, self.work_dir = Path(mirrors).resolve(), Path(work_dir).resolve()
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = self.work_dir / "olah.log"
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> HubServer:
        if not OLAH.exists():
            raise FileNotFoundError(f"{OLAH} is missing: run `make hub-venv` (olah's own virtual environment).")
        repos = self.work_dir / "olah-cache"
        repos.mkdir(parents=True, exist_ok=True)
        seed_revision_cache(self.mirrors, repos)
        config = self.work_dir / "olah.toml"
        config.write_text(CONFIG.format(port=self.port, repos=repos, mirrors=self.mirrors))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HF_ENDPOINT")}
        self._log = open(self.log_path, "w")
        self._process = subprocess.Popen(
            [str(OLAH_PYTHON), str(SERVER), "-c", str(config)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.work_dir,
        )
        try:
            self._wait_until_ready()
        except BaseException:  # a `with` whose __enter__ fails never calls __exit__: stop the server here
            self.__exit__()
            raise
        return self

    def _wait_until_ready(self, timeout: float = 90.0) -> None:
        probe = f"{self.endpoint}/api/models/t5-small/revision/main"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"olah exited with status {self._process.returncode}; see {self.log_path}.")
            try:
                with urllib.request.urlopen(probe, timeout=5) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"olah did not answer {probe} within {timeout:.0f} s; see {self.log_path}.")

    def __exit__(self, *exc) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
