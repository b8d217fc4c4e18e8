"""How submission reports what happens while it happens, without printing anything itself.

Submission is a library layer: the command line decides how its reports look
(vxtrain.render.progress implements them; the commands pass them in). Three
channels, each a plain callable:

* ``Say``: one line of vxtrain's own as it happens (a retry and its wait, a
  notice such as "listing again for 2.0 s before creating another"), worded
  without the ``vxtrain:`` prefix the reporter adds;
* ``ProgressFn``: a followed job's view after every poll, with the seconds since
  following began;
* ``LogSink`` (vxtrain.joblogs): a followed job's new log lines.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from vxtrain.backends.base import JobDict

#: One line of vxtrain's own, reported as it happens (no ``vxtrain:`` prefix).
Say = Callable[[str], None]
#: A followed job's view after each poll, and the seconds since following began.
ProgressFn = Callable[[JobDict, float], None]


def stderr_say(line: str) -> None:
    """The ``Say`` of a Python API call given none: the line on stderr as the command line
    words it (``vxtrain: LINE``), so a retry never looks like a hang. The command line
    passes vxtrain.render.progress's reporter instead."""
    sys.stderr.write(f"vxtrain: {line}\n")
    sys.stderr.flush()
