"""rebalance-replay: Spark-native batch analytics over recorded Kafka group-coordinator request logs.

Installed import names: ``rebalance_replay`` only (``.conf``, ``.schemas``, ``.transforms``, ``.jobs``).
"""

__version__ = "0.2.0"
