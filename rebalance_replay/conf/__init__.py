"""Default configuration (``default.yaml``, generated from ``rebalance_replay/jobs/config.py``), shipped as
package data:
the template of a ``--conf`` file."""
