"""History: every event, trigger and action result kept in ClickHouse."""
