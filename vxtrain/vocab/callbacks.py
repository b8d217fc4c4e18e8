"""The callbacks a library layer reports through, without printing anything itself.

The command line passes its reporters in (vxtrain.render.progress implements them);
a Python caller that passes none gets submission's default (``vxtrain`` logger).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: One line of vxtrain's own, reported as it happens, worded without the ``vxtrain:``
#: prefix the reporter adds (a retry and its wait, an image build step). What it returns
#: is ignored: ``object`` lets any line sink (``print``, ``list.append``) be passed.
Say = Callable[[str], object]
#: A followed job's view (its REST JSON, ``backends.base.JobDict``) after each poll, and the
#: seconds since following began.
ProgressFn = Callable[[dict[str, Any], float], None]
