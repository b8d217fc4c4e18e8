"""A PersistentResource's ID: what the native spec's ``persistent_resource`` key,
submit's placement check and the emulator's PersistentResourceService all accept.

CreatePersistentResourceRequest.persistent_resource_id: "The maximum length is 63
characters, and valid characters are `/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/`"
(https://github.com/googleapis/python-aiplatform/blob/main/google/cloud/aiplatform_v1/types/persistent_resource_service.py).
The JSON Schema's pattern for ``persistent_resource`` (vxtrain/validation/schema.json)
is this pattern's text; tests/validation/test_reservation_rules.py keeps the two equal.
"""
from __future__ import annotations

import re

#: The ID, anchored as the API quotes it. ``fullmatch`` is the strict test (``$`` alone
#: also matches before a trailing newline, as the JSON Schema's ``pattern`` does).
PERSISTENT_RESOURCE_ID = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
