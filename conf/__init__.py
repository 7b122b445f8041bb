"""Default configuration (``default.yaml``), shipped as package data so a wheel on a cluster finds it."""
