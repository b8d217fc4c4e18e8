"""``python -m vxtrain`` runs the CLI."""
from vxtrain.cli import run

run()
