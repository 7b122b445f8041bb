"""The forensics report's page model and HTML (pure: no Spark). ``rebalance_replay/jobs/report.py`` reads the
tables and
writes the files."""
