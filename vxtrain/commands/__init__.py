"""One module per subcommand.

Each module exposes a function named like the module that takes plain typed
values and returns an exit code, plus ``register(app)`` that adds its typer
command (a thin wrapper). Commands share helpers through ``_common`` only.

Modules must stay import-light: running a command imports its own module
only, but ``vxtrain --help`` (and any command line not naming a command)
imports them all, so a command imports what it alone needs (submission, runtime,
backends, pipeline stages, yaml, rich) inside its function. That keeps
``vxtrain validate`` fast (scripts/bench.py); nothing here may import
google.cloud.aiplatform at module level.
"""
from __future__ import annotations

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "init",
    "validate",
    "plan",
    "diff",
    "submit",
    "quota",
    "jobs",
    "logs",
    "env",
    "local_run",
    "emulator",
    "schema",
    "convert",
)
