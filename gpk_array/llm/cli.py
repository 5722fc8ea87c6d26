"""Command line: ``gpk generate`` and ``gpk serve``, defined in ``gpk_array.cli`` (so that ``gpk`` lists them even
when gpk_array.llm's packages are missing, and says which to install when they run). This module keeps the old
names and ``python -m gpk_array.llm.cli generate --model DIR --prompt "Hello"``.
"""
import sys

from ..cli import DTYPES, cmd_generate, cmd_serve, main, register  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
