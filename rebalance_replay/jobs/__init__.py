"""The thin shell: Spark session, Delta storage engines, the jobs (ingest, replay, validate) and the CLI."""
