"""One module per log format (a folder for a format of several parts), each holding everything
about it: how its files are recognised, read into `ParsedRun`s (core/records.py) and judged, and
its quirks. Each declares its `Source` (ingest/source.py); ingest/registry.py puts them in the
order `--format auto` tries them.
"""
