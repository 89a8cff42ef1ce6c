import sys

from .cli import main, skip_pyarrow_pandas_probe

skip_pyarrow_pandas_probe()
sys.exit(main())
