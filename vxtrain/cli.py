"""The ``vxtrain`` command line: a thin typer layer over ``vxtrain.api``.

One error handler (pre-commit's pattern): known errors print one line (or
their diagnostics) and exit with their code; Ctrl-C exits 130; anything else
prints "unexpected error" and writes the traceback to a log file, never to
the user's terminal.
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from typing import Optional, TypeVar

import typer
from typer._click.exceptions import UsageError  # the click typer 0.28 vendors (pinned <0.29 in pyproject.toml)
from typing_extensions import Annotated

from vxtrain import __version__
from vxtrain.commands import COMMANDS
from vxtrain.commands._common import print_diagnostics
from vxtrain.commands._common import INTERRUPTED, emit_json
from vxtrain.errors import JobFailedError, LocalRunError, SpecError, VxtrainError

def _version(value: bool) -> None:
    if value:
        typer.echo(f"vxtrain {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    """vxtrain: validate, plan, submit and locally run Vertex AI training jobs."""


def _new_app(modules: Sequence[str]) -> typer.Typer:
    """The typer app with the root options and the commands of ``modules`` (of COMMANDS)."""
    new = typer.Typer(
        name="vxtrain",
        help="Readable YAML job specs → Vertex AI CustomJobs: validate, plan, submit, run locally.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    new.callback()(_root)
    for name in modules:
        importlib.import_module(f"vxtrain.commands.{name}").register(new)
    return new


_APP: typer.Typer | None = None


def _full_app() -> typer.Typer:
    """The app with every command (made once, on first use)."""
    global _APP
    if _APP is None:
        _APP = _new_app(COMMANDS)
    return _APP


def __getattr__(name: str) -> typer.Typer:
    """``app``: the whole app, made when first asked for (running one command imports only its module)."""
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The command names a module of COMMANDS registers, where they are not the module's
#: own name ('_' written '-'); tests/test_cli.py checks this against every module.
_NAMES: dict[str, tuple[str, ...]] = {"jobs": ("status", "wait", "cancel", "list")}
#: The variable click's shell completion runs under (``_{PROG_NAME}_COMPLETE``).
_COMPLETE_VAR = "_VXTRAIN_COMPLETE"


def _module_of(command: str) -> str | None:
    """The module of COMMANDS that registers ``command``, or None."""
    for module in COMMANDS:
        if command in _NAMES.get(module, (module.replace("_", "-"),)):
            return module
    return None


def _app_for(args: Sequence[str]) -> typer.Typer:
    """The whole app, or one holding only the command that ``args`` start with.

    Every run, typer builds a click command for each registered command
    (reading signatures and type hints: ~13 ms), and importing every command
    module costs ~8 ms more: together half of vxtrain's own start-up. A
    subcommand's help, errors and run never look at its siblings, and the root
    has no positional arguments, so a first argument that is a command's exact
    name is that command: only its module is imported and only it is built.
    Anything else (no arguments, a root option first, an unknown name, shell
    completion) gets the whole app.
    """
    module = _module_of(args[0]) if args and os.environ.get(_COMPLETE_VAR) is None else None
    if module is None:
        return _full_app()
    only = _new_app((module,))
    named = [info for info in only.registered_commands if _command_name(info) == args[0]]
    if len(named) != 1 or only.registered_groups:
        return _full_app()
    only.registered_commands = named
    return only


def _command_name(info: typer.models.CommandInfo) -> str | None:
    """The name typer gives a registered command (typer.main.get_command_from_info's rule)."""
    callback = info.callback
    return info.name or (typer.main.get_command_name(callback.__name__) if callback is not None else None)


def _log_unexpected() -> str:
    """Write the current traceback to a log file and return its path."""
    log_dir = os.environ.get("VXTRAIN_LOG_DIR") or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="vxtrain-error-", suffix=".log", dir=log_dir)
    with os.fdopen(fd, "w") as fh:
        fh.write(traceback.format_exc())
    return path


E = TypeVar("E", bound=BaseException)


def _in_chain(exc: BaseException, kind: type[E]) -> E | None:
    """The first exception of ``kind`` among ``exc`` and what it was raised from or while
    handling: typer turns Ctrl-C into Exit(130) and a usage error into sys.exit(2), and
    sys.exit raises SystemExit while handling those."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for ``--output json`` (``-o json``, ``--output=json``)."""
    for flag, value in zip(argv, [*argv[1:], ""]):
        if flag in ("--output", "-o") and value == "json" or flag in ("--output=json", "-ojson"):
            return True
    return False


def _error_document(exc: VxtrainError) -> None:
    """With ``--output json`` an error still leaves one JSON document on stdout, so a
    script that parses stdout gets the reason instead of nothing. A job that ended
    FAILED (or a replica that failed) is reported by the command's own document."""
    if isinstance(exc, (JobFailedError, LocalRunError)):
        return
    error: dict[str, object] = {"type": type(exc).__name__.rstrip("_"), "exit_code": exc.exit_code,
                                "message": str(exc)}
    if isinstance(exc, SpecError):
        error["diagnostics"] = [d.to_json() for d in exc.diagnostics]
    document: dict[str, object] = {"error": error}
    attempts = getattr(exc, "attempts", None)  # NoCapacity: what each rung of fallback: did
    if attempts:
        document["attempts"] = attempts
    report = getattr(exc, "report", None)  # NoCapacity from the preflight: which need is above which limit
    if report is not None:
        document["quota"] = report.to_json()
    emit_json(document)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns (and exits with) the exit code."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        _app_for(args)(args=args, prog_name="vxtrain")
        code = 0
    except SystemExit as exc:  # typer/click exit with the command's code (2 for usage)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if _in_chain(exc, KeyboardInterrupt):  # typer turns Ctrl-C into a silent Exit(130)
            typer.echo("vxtrain: interrupted", err=True)
            code = INTERRUPTED
        usage = _in_chain(exc, UsageError)
        if usage is not None and _wants_json(args):
            emit_json({"error": {"type": "UsageError", "exit_code": usage.exit_code,
                                 "message": usage.format_message()}})
    except SpecError as exc:
        print_diagnostics(exc.diagnostics)
        code = exc.exit_code
        if _wants_json(args):
            _error_document(exc)
    except VxtrainError as exc:
        typer.echo(f"vxtrain: error: {exc}", err=True)
        code = exc.exit_code
        if _wants_json(args):
            _error_document(exc)
    except KeyboardInterrupt:
        typer.echo("vxtrain: interrupted", err=True)
        code = INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place that catches everything
        path = _log_unexpected()
        typer.echo(f"vxtrain: unexpected error: {type(exc).__name__}: {exc} "
                   f"(details in {path})", err=True)
        code = 1
    return code


def run() -> None:
    """Console-script shim: exit with main()'s code."""
    code = main()
    if code == INTERRUPTED:
        # Ctrl-C: everything there was to say is said. Leave now, not through the
        # interpreter's shutdown: a KeyboardInterrupt raised inside gRPC's C core while a
        # call was in flight can leave that shutdown waiting on the call
        # (https://github.com/grpc/grpc/issues/19973), and under `python -m vxtrain` it
        # ended the process by SIGINT about one time in four instead of exiting 130.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
