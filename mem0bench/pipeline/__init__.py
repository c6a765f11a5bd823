"""The run's typed stages: load -> ingest -> answer -> judge -> aggregate, each kept in the run directory."""
