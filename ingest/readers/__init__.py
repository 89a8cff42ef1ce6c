"""One module per log format: each reads its files into `ParsedRun`s (ingest/records.py).

The readers are registered, in the order `--format auto` tries them, in ingest/registry.py.
"""
