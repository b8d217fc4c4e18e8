"""Stage 3, validate: the JSON Schema of the native format, then the semantic rules.

The rules read facts from :mod:`vxtrain.catalog`; they never import a later stage.
"""
