"""The forensics report's page model and HTML (pure: no Spark). ``jobs/report.py`` reads the tables and
writes the files."""
