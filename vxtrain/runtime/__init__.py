"""Running replicas on this machine: the local runner and hyperparameter trials.

Used by ``local-run``, by the emulator backend and by ``submit --target local``.
"""
