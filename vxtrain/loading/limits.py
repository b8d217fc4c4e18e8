"""The loader's limits: a hostile file is refused before it can cost time or memory.

Each limit has one home here; the diagnostic code it raises is named with it:

* ``MAX_FILE_BYTES`` — files are ``stat``-ed (and reads are bounded) before
  anything is parsed (``read.py``): ``too-large``.
* ``MAX_DEPTH`` — nesting of mappings and sequences, aliases included
  (``events.py``): ``too-deep``.
* ``MAX_NODES`` — nodes in the built document *after* alias expansion (a
  "billion laughs" bomb stops here): ``alias-limit`` when aliases contributed,
  else ``too-many-nodes``.
* ``MAX_CHARS`` — characters of all keys and string values *after* alias
  expansion and ``${NAME}`` substitution (a big string repeated through
  aliases or variable references stops here, before it is built):
  ``alias-limit`` or ``variable-limit``.
* ``MAX_ERRORS`` — problems reported for one file before reading stops:
  ``too-many-errors``.
* ``MAX_RUNGS`` — entries of a ``fallback:`` ladder (each a whole job to check;
  ``pipeline._check_rungs``): ``fallback-too-long``.
"""
from __future__ import annotations

#: Largest spec file accepted (bytes). Real specs are a few KiB.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Deepest nesting of mappings/sequences (the root mapping is depth 1).
MAX_DEPTH = 64
#: Most nodes (keys, scalars, collections) in one document after alias expansion.
MAX_NODES = 100_000
#: Most characters of keys and string values in one document after alias expansion
#: and ${NAME} substitution (a file within MAX_FILE_BYTES holds at most that many).
MAX_CHARS = MAX_FILE_BYTES
#: Most problems reported for one file before the loader stops reading it.
MAX_ERRORS = 100
#: Most entries of ``fallback:``. Vertex AI has no such list (the ladder is vxtrain's); each entry
#: is a whole job to check and, at submit, a create to try after the one before ran out of
#: capacity. Fifty is more than the regions Vertex AI training is offered in (38 in
#: catalog/regions.csv); 300 entries took 58 s and 1.2 GB to check (docs/decisions.md,
#: "Fallback ladder").
MAX_RUNGS = 50
