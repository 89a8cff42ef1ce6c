"""A command of the project run in a child process, as the hardening tests need it: with its peak
memory measured, or without the file-permission override a root user has."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

from conftest import ROOT


def _drop_file_permission_override() -> None:
    """preexec_fn: this child (root in CI) obeys file modes, as any other user does."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, out of the bounding set
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")


def run_unprivileged(*args) -> subprocess.CompletedProcess:
    preexec = _drop_file_permission_override if os.geteuid() == 0 else None
    return subprocess.run([sys.executable, "-m", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec)


# VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across fork + exec, so a child of a
# large pytest process would report the parent's peak, not its own
PEAK_RSS = (
    "import sys\nfrom ingest.cli import main\ncode = main(sys.argv[1:])\n"
    "hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
    "print('peak_rss_kb', hwm, file=sys.stderr)\nsys.exit(code)\n"
)


def run_measured(*args) -> tuple[subprocess.CompletedProcess, int]:
    result = subprocess.run([sys.executable, "-c", PEAK_RSS, *map(str, args)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    peak = int(result.stderr.rsplit("peak_rss_kb", 1)[1].split()[0])
    return result, peak * 1024
