"""Default configuration (``default.yaml``, generated from ``jobs/config.py``), shipped as package data:
the template of a ``--conf`` file."""
