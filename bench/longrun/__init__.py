"""Long training runs for issue 30: optimizer states, where runs part, the monitor (README.md)."""
