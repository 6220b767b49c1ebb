"""orchrm's version, in a module of its own so that recording it (model cards, `--version`) imports nothing else."""

__version__ = "0.1.0"
