"""The words every layer shares, on the floor everyone may import: job kinds and end
states (:mod:`~vxtrain.vocab.kinds`), a study's parameters and trials
(:mod:`~vxtrain.vocab.studies`), the callbacks a layer reports through
(:mod:`~vxtrain.vocab.callbacks`), the persistent-resource ID
(:mod:`~vxtrain.vocab.resources`), RFC 3339 times (:mod:`~vxtrain.vocab.timestamps`) and
the REST JSON of a CustomJob and a HyperparameterTuningJob as TypedDicts
(:mod:`~vxtrain.vocab.jobjson`, imported for annotations only).

Each word has one home here, so the compiler, planning, the backends, submission,
the local runtime and the renderers agree by construction. This floor imports
nothing of vxtrain's and nothing outside the standard library (import-linter's
``layers`` contract puts it at the bottom): importing it costs nothing on the
validate/plan path. Import each module by name; this package re-exports nothing.
"""
