"""Traffic generators for tests, samples and benchmarks (not installed with the product).

``simulator.clients``: Java consumers talking to a coordinator, rendered as real request-log lines.
``simulator.sample``: regenerates the bundled sample under ``samples/logs``.
"""
