"""The store written out in other projects' formats: Every Eval Ever (`python -m ingest export`)."""

from .eee import ExportSummary, export_eee

__all__ = ["ExportSummary", "export_eee"]
