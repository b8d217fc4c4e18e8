"""How submission reports what happens while it happens, without printing anything itself.

Submission is a library layer: it prints nothing. The command line decides how
its reports look (vxtrain.render.progress implements them; the commands pass
them in); a Python caller that passes none gets them on the ``vxtrain`` logger. Three
channels, each a plain callable (the types: :mod:`vxtrain.vocab.callbacks`):

* ``Say``: one line of vxtrain's own as it happens (a retry and its wait, a
  notice such as "listing again for 2.0 s before creating another"), worded
  without the ``vxtrain:`` prefix the reporter adds;
* ``ProgressFn``: a followed job's view after every poll, with the seconds since
  following began;
* ``LogSink`` (vxtrain.joblogs): a followed job's new log lines.
"""
from __future__ import annotations

import logging

#: Where a Python API call given no ``Say`` reports.
LOGGER = logging.getLogger("vxtrain")


def log_say(line: str) -> None:
    """The ``Say`` of a Python API call given none: the line goes to the ``vxtrain`` logger
    at WARNING, so a retry never looks like a hang (Python prints it on stderr where
    logging is not configured) and an application routes it like its other logs. The
    command line passes vxtrain.render.progress's reporter instead."""
    LOGGER.warning("%s", line)
