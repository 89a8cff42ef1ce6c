"""Shared Streamlit helpers: cached data access, URL-bound filters, charts, the share link."""

from . import preload  # noqa: F401  (first: the heavy libraries, once, before any page needs them)
from . import setup
from .data import active_db, is_demo, load, offline_caveat, public_message, read_only, report_html
from .filters import Filters, analyst_picker, sidebar_filters
from .gates import no_analyses, require_data
from .nav import configure_page
from .results import moved_threshold_note, results_caption, rules_caption, sensitivity_strip
from .share import page_url, share_link
from .text import md

__all__ = ["Filters", "active_db", "analyst_picker", "configure_page", "is_demo", "load", "md",
           "moved_threshold_note", "no_analyses", "offline_caveat", "results_caption", "rules_caption",
           "sensitivity_strip",
           "page_url", "public_message", "read_only", "report_html", "require_data", "share_link", "setup",
           "sidebar_filters"]
