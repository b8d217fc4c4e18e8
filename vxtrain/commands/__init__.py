"""One module per subcommand, and the command table.

Each module exposes a function named like the module that takes plain typed
values and returns an exit code, plus ``register(app)`` that adds its typer
command (a thin wrapper). Commands share helpers through ``_common`` only.

:data:`COMMANDS` is the command table (pip's ``commands_dict``): every command's
name, the module that registers it and its one-line help. ``vxtrain --help``,
``vxtrain`` alone and shell completion of command names answer from it alone;
a command's module is imported only when a command line names that command
(vxtrain.cli), so a module imports at its top what it needs. Nothing here may
import google.cloud.aiplatform at module level.
"""
from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    """A row of the command table."""

    #: The module of vxtrain.commands whose ``register`` adds the command.
    module: str
    #: The command's help: the one home of the line ``vxtrain --help`` lists, shell
    #: completion shows and ``vxtrain NAME --help`` prints (the module reads it here).
    help: str


#: Every command, in the order ``vxtrain --help`` lists them.
COMMANDS: dict[str, Entry] = {
    "init": Entry("init", "Write a commented starter spec for a job shape."),
    "validate": Entry("validate", "Check specs: schema, Vertex rules, catalog, bandwidth; all problems at once."),
    "plan": Entry("plan", "Show the exact CustomJob that would be sent, the Reduction Server bandwidth plan "
                          "and the cost."),
    "diff": Entry("diff", "Show what changes in the compiled CustomJob and the bandwidth plan between two specs."),
    "submit": Entry("submit", "Create the CustomJob (exactly once, even across retries); --wait follows it, "
                              "its log lines on stderr."),
    "quota": Entry("quota", "The job's quota needs per metric against the project's limits in its region "
                            "(exit 5: a need above a limit)."),
    "status": Entry("jobs", "Show a job's state, console URL and error."),
    "wait": Entry("jobs", "Follow a job to its end, its log lines on stderr: exit 0 on SUCCEEDED, 3 on "
                          "FAILED/CANCELLED/EXPIRED."),
    "cancel": Entry("jobs", "Ask for a job to be cancelled."),
    "list": Entry("jobs", "List jobs (filters: --filter, --label, --state)."),
    "reconcile": Entry("reconcile", "Carry every unfinished job life kept in a bucket one step on (recovery, "
                                    "duplicates, the end); --loop repeats it."),
    "jobs": Entry("ledger", "The jobs vxtrain made, by key, attempt and rung: state, times, queue wait, run time "
                            "and estimated cost (--stats: the queue wait's p50/p90)."),
    "cost": Entry("ledger", "Estimated spend (list prices × run time) by key, label:NAME, machine, region or day; "
                            "text, JSON or CSV."),
    "ui": Entry("ui", "A local web page on 127.0.0.1 behind a token: the jobs table (live), one job's timeline, "
                      "cost and live logs, a spec's plan report."),
    "logs": Entry("logs", "A job's log lines, each after its replica (workerpoolK-I), oldest first "
                          "(Cloud Logging, or the emulator's)."),
    "env": Entry("env", "Print the environment Vertex AI sets for one replica (CLUSTER_SPEC, TF_CONFIG, AIP_*)."),
    "local-run": Entry("local_run", "Run every replica (chief, workers, parameter servers, evaluators) as a "
                                    "local process, each with its own share of this host's GPUs."),
    "emulator": Entry("emulator", "Serve the emulated Vertex AI JobService, its jobs' logs and quotas on "
                                  "127.0.0.1 (gRPC; REST too with --http-port), each call with its bearer "
                                  "token, until Ctrl-C or SIGTERM."),
    "schema": Entry("schema", "Print the JSON Schema of the native spec format (use with yaml-language-server)."),
    "convert": Entry("convert", "Convert between formats: legacy/gcloud → native, native → gcloud config "
                                "or command."),
}
