"""Stage 1, load: YAML text → a document with the position of every key.

Reading (size limits), the event-stream YAML builder, ``${VAR}``, overlays and
``--set`` live here; nothing here knows about job formats.
"""
