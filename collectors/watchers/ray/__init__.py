"""Ray watcher: the Jobs API (status, driver node, logs) and node deaths, over HTTP."""
