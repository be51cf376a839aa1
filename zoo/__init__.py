"""The model zoo: catalog, task API, the `oar` command, benchmarks, fetching."""
