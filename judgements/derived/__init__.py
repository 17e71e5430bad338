"""The derived tables as one subsystem: what they should hold (``oracles``), and how a
bulk load skips their triggers and rebuilds them once (``rebuild``)."""
