"""parity's fault benchmark: golden/target pairs that differ by one known cause, scored on whether
`parity compare` gets the verdict, the location and the diagnosis right (README.md)."""
