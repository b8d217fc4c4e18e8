"""One module per subcommand.

Each module exposes a function named like the module that takes plain typed
values and returns an exit code, plus ``register(app)`` that adds its typer
command (a thin wrapper). Modules must stay import-light: nothing here may
import google.cloud.aiplatform at module level.
"""
from __future__ import annotations

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "init",
    "validate",
    "plan",
    "diff",
    "submit",
    "jobs",
    "env",
    "local_run",
    "emulator",
    "schema",
    "convert",
)
