"""Block every network connection that leaves this machine, and log the attempt.

Put this folder on PYTHONPATH and set COURSE_NETGUARD_LOG to a file: every Python process
started that way (pytest, papermill, each Jupyter kernel) refuses connections and name
look-ups for anything but loopback, and appends one line per attempt to the log. The tests
then assert the log is empty: the smoke profile never touched the network.
"""

import ipaddress
import os
import socket
import sys
import traceback

_LOG = os.environ.get("COURSE_NETGUARD_LOG")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def _is_local(host) -> bool:
    if host is None:
        return True
    host = host.decode() if isinstance(host, bytes) else str(host)
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(kind: str, target) -> None:
    if _LOG:
        # Who tried: the process's command line and the last frames of the call, so the log names the culprit.
        plumbing = ("httpx", "httpcore", "urllib3", "requests", "socket.py", "ssl.py", "sitecustomize")
        callers = [f for f in traceback.format_stack(limit=60)[:-2] if not any(p in f.split(",")[0] for p in plumbing)]
        frames = "".join(callers[-8:])
        with open(_LOG, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {kind} {target!r} in {' '.join(sys.argv)[:200]}\n{frames}")
    raise OSError(f"network blocked by the course's test guard: {kind} {target!r}")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
        _refuse("connect", address)
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
        _refuse("connect", address)
    return _connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _is_local(host):
        _refuse("resolve", host)
    return _getaddrinfo(host, *args, **kwargs)


if _LOG:
    socket.socket.connect = _guarded_connect
    socket.socket.connect_ex = _guarded_connect_ex
    socket.getaddrinfo = _guarded_getaddrinfo
