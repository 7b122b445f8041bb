"""spark-submit entry point (arguments are those of ``rebalance-replay``)::

    spark-submit --master spark://host:7077 rebalance_replay/jobs/submit.py run --input … --warehouse …

spark-submit creates the SparkSession's configuration (master, executor memory, …); the product reuses
the session it finds and overrides none of its settings.
"""

from __future__ import annotations

import sys

from rebalance_replay.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
