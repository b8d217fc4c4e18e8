"""A tiny trainer run from a local folder: `vxtrain local-run` runs it in place,
`vxtrain submit --staging-bucket gs://...` builds it into an sdist, uploads it
once and runs it in a prebuilt training image."""
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
for epoch in range(1, args.epochs + 1):
    print(f"epoch {epoch}/{args.epochs}: loss={1.0 / epoch:.3f}", flush=True)
