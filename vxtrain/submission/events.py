"""How submission reports what happens while it happens, without printing anything itself.

Submission is a library layer: it prints nothing. Its own lines (a retry and its wait, a
notice such as "listing again for 2.0 s before creating another") go to the
``vxtrain.submission`` logger (:data:`LOGGER`), worded without the ``vxtrain:`` prefix the
command line's handler adds (vxtrain.render.progress.reporting); a Python caller routes
them like its other logs (with no handler configured, Python prints WARNING lines on stderr).

A session (vxtrain.submission.session.Session) carries two more channels, each a plain
callable, as an HTTP client carries its event hooks (:class:`Hooks`):

* ``progress`` (``ProgressFn``): a followed job's view after every poll, with the seconds
  since following began;
* ``logs`` (``LogSink``, vxtrain.joblogs): a followed job's new log lines;
* ``upload`` (``UploadProgress``): each large upload of a publication.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from vxtrain.joblogs import LogSink
from vxtrain.packaging.upload import UploadProgress
from vxtrain.submission.views import JobView

#: Where submission's own lines go (WARNING: a retry never looks like a hang).
LOGGER = logging.getLogger("vxtrain.submission")
#: A followed job's view after each poll, and the seconds since following began.
ProgressFn = Callable[[JobView, float], None]


@dataclass(frozen=True)
class Hooks:
    """What a followed job's watcher is told beside the log: each poll's view, the job's
    log lines, the uploads' progress (None: nobody listens)."""

    progress: ProgressFn | None = None
    logs: LogSink | None = None
    upload: UploadProgress | None = None
