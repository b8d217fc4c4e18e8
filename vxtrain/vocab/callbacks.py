"""The callbacks a library layer reports through, without printing anything itself.

The command line passes its reporters in (vxtrain.render.progress implements them).
Submission reports through the ``vxtrain.submission`` logger and a session's hooks
instead (vxtrain.submission.events: ``ProgressFn`` is a followed job's typed view).
"""
from __future__ import annotations

from collections.abc import Callable

#: One line of vxtrain's own, reported as it happens, worded without the ``vxtrain:``
#: prefix the reporter adds (a retry and its wait, an image build step). What it returns
#: is ignored: ``object`` lets any line sink (``print``, ``list.append``) be passed.
Say = Callable[[str], object]
