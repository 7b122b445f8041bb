"""Pure logic: log parsing, the coordinator model, rebalance reconstruction, audit rules. No Spark here."""
