"""A faithful, version-aware model of Kafka's classic group coordinator, driven by recorded requests."""
