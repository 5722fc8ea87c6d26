"""``python -m gpk_array._kernels.cutlass.gen``: the generator's command line (cli.main)."""
import sys

from .cli import main
from .emit import force_hash_seed

if __name__ == "__main__":
    force_hash_seed()
    sys.exit(main())
