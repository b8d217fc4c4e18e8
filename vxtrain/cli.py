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
from collections.abc import Iterator, Sequence
from typing import Any, Optional, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup
from typing_extensions import Annotated

from vxtrain import __version__
from vxtrain.commands import COMMANDS
from vxtrain.commands._common import INTERRUPTED, emit_json, print_diagnostics
from vxtrain.errors import ApiError, JobFailedError, LocalRunError, NoCapacity, SpecError, VxtrainError


def _version(value: bool) -> None:
    if value:
        typer.echo(f"vxtrain {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    """vxtrain: validate, plan, submit and locally run Vertex AI training jobs."""


class _Listed(TyperCommand):
    """A command as the table lists it: its name and help line, nothing to run."""


class _CommandTable(TyperGroup):
    """The root group, answered from the command table (click's lazy subcommands).

    ``vxtrain --help``, ``vxtrain`` alone and shell completion of command names
    read each command's name and help line from vxtrain.commands.COMMANDS, and no
    command module is imported. A command line that names a command (to run it,
    print its help or complete its options) imports that command's module and
    builds that command alone: typer reads a command's signature and type hints
    to build it, and its siblings are never looked at.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = {name: _Listed(name, help=entry.help) for name, entry in COMMANDS.items()}

    # ctx and the command returned are click's Context and Command, which typer names only
    # in its private vendored copy of click (typer._click): Any keeps this to typer's public API.
    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """The command ``args`` start with, its module imported and the command built first."""
        if args and isinstance(self.commands.get(args[0]), _Listed):
            self.commands[args[0]] = load_command(args[0])
        return super().resolve_command(ctx, args)


#: The command line. Its commands come from the table: see _CommandTable.
app = typer.Typer(
    name="vxtrain",
    help="Readable YAML job specs → Vertex AI CustomJobs: validate, plan, submit, run locally.",
    cls=_CommandTable,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.callback()(_root)


def load_command(name: str) -> TyperCommand:
    """The click command ``name`` of the table, its module imported and it alone built."""
    module = importlib.import_module(f"vxtrain.commands.{COMMANDS[name].module}")
    registered = typer.Typer()
    module.register(registered)
    (info,) = [info for info in registered.registered_commands if info.name == name]
    command = typer.main.get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                               rich_markup_mode=app.rich_markup_mode)
    assert isinstance(command, TyperCommand)  # commands._common.command builds each with cls=Command
    return command


#: plan's options that are not the job's shape: the Action's summary never passes them on.
_PLAN_ONLY = ("output", "endpoint", "check_quota", "html")


def plan_arguments(command: str, argv: Sequence[str]) -> list[str]:
    """Of ``vxtrain COMMAND FILE ARGV``'s options, those ``plan`` takes too, as plan's own
    arguments: what the GitHub Action (action.yml) plans a ``submit`` with, so the step
    summary shows the job those options make (``--var``, ``--set``, ``-f``, ``--project``…)
    and leaves out what plan refuses (``--wait``, ``--idempotency-key``…). click parses
    ``argv`` as COMMAND would; ``--output`` is left out, the Action chooses it, and so are
    plan's own ``--endpoint``/``--check-quota``/``--html`` (submit's ``--endpoint`` is where it
    sends the job; plan takes an endpoint only to read quota with ``--check-quota``)."""
    source, plan = load_command(command), load_command("plan")
    given: Any = source.make_context(command, ["FILE", *argv], resilient_parsing=True)
    out: list[str] = []
    for param in plan.params:
        # click's documented attributes (param_type_name, get_parameter_source), not its classes:
        # typer vendors click privately (docs/decisions.md); an option is read as Any.
        option: Any = param
        if option.param_type_name != "option" or option.name in (None, *_PLAN_ONLY):
            continue
        source_of = given.get_parameter_source(option.name)
        if source_of is None or source_of.name != "COMMANDLINE":
            continue
        value = given.params[option.name]
        if option.is_flag:
            out += [option.opts[0]] if value else []
        else:
            out += [word for v in (value if option.multiple else [value]) for word in (option.opts[0], str(v))]
    return out


def _log_unexpected() -> str:
    """Write the current traceback to a log file; where it is, in words (``details in PATH``).

    When it cannot be written (VXTRAIN_LOG_DIR unwritable, missing, a full disk) the
    words say so and why: the traceback itself is never shown to the user."""
    log_dir = os.environ.get("VXTRAIN_LOG_DIR") or tempfile.gettempdir()
    try:
        fd, path = tempfile.mkstemp(prefix="vxtrain-error-", suffix=".log", dir=log_dir)
        with os.fdopen(fd, "w") as fh:
            fh.write(traceback.format_exc())
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the folder's name
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return (f"the details could not be written to {log_dir!r} ({why}); set VXTRAIN_LOG_DIR to a "
                "writable folder to keep them")
    return f"details in {path}"


E = TypeVar("E", bound=BaseException)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from or while handling: typer turns Ctrl-C into
    Exit(130) and a usage error into sys.exit(2), and sys.exit raises SystemExit while
    handling those."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        yield current
        seen.add(id(current))
        current = current.__cause__ or current.__context__


def _in_chain(exc: BaseException, kind: type[E]) -> E | None:
    """The first exception of ``kind`` in ``exc``'s chain."""
    return next((e for e in _chain(exc) if isinstance(e, kind)), None)


def _usage_error(exc: BaseException) -> str | None:
    """The message of the usage error (a bad flag, a missing argument) that typer exited 2
    for, if one is in ``exc``'s chain. Known by click's documented interface (``exit_code``
    2, ``format_message()``): typer's public API re-exports no UsageError, only its
    subclass BadParameter, which a missing argument or an unknown flag is not."""
    for error in _chain(exc):
        format_message = getattr(error, "format_message", None)
        if getattr(error, "exit_code", None) == 2 and callable(format_message):
            return str(format_message())
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
    if isinstance(exc, (ApiError, NoCapacity)) and exc.attempts:  # what each rung of fallback: did
        document["attempts"] = exc.attempts
    if isinstance(exc, NoCapacity) and exc.report is not None:  # the preflight's: which need is above which limit
        document["quota"] = exc.report.to_json()
    if isinstance(exc, NoCapacity):  # recovery's: how many recoveries, what the attempts cost
        document.update(exc.details)
    emit_json(document)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns (and exits with) the exit code."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        app(args=args, prog_name="vxtrain")
        code = 0
    except SystemExit as exc:  # typer/click exit with the command's code (2 for usage)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if _in_chain(exc, KeyboardInterrupt):  # typer turns Ctrl-C into a silent Exit(130)
            typer.echo("vxtrain: interrupted", err=True)
            code = INTERRUPTED
        usage = _usage_error(exc)
        if usage is not None and _wants_json(args):
            emit_json({"error": {"type": "UsageError", "exit_code": 2, "message": usage}})
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
        elif isinstance(exc, NoCapacity) and exc.details:  # recovery's: what the lost attempts cost
            # lazy: render.recovery brings planning.cost (~12 ms, -X importtime); this error only
            from vxtrain.render.recovery import recovery_lines

            for line in recovery_lines(exc.details):
                typer.echo(f"vxtrain: {line}", err=True)
    except KeyboardInterrupt:
        typer.echo("vxtrain: interrupted", err=True)
        code = INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place that catches everything
        where = _log_unexpected()
        typer.echo(f"vxtrain: unexpected error: {type(exc).__name__}: {exc} ({where})", err=True)
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
