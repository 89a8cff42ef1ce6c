"""The heavy libraries, imported once, in one order, by the first session that starts.

Streamlit runs each browser session's script in a thread of its own. When the first sessions of a
just-started server import pandas, pyarrow, polars, … at the same time, from different modules
and so in different orders, Python's import locks can hand one thread a module the other has only
half initialised ("partially initialized module 'pandas' has no attribute 'Timestamp'"). Every
page imports `ui` before anything heavy, and `ui` imports this module first: the first session
imports everything here, in this order, while the module lock makes every other session wait.
"""

import numpy  # noqa: F401  (first: everything below imports it)
import pyarrow  # noqa: F401
import pandas  # noqa: F401  (imports pyarrow's pandas shims; before anything that may import it lazily)
import pyarrow.compute  # noqa: F401
import polars  # noqa: F401
import duckdb  # noqa: F401
import scipy.stats  # noqa: F401
import altair  # noqa: F401
import orjson  # noqa: F401
import pydantic  # noqa: F401
