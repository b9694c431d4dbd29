"""The side-by-side benchmark harness (``python -m benchmarks.run``); see README.md."""
