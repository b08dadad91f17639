"""Makes the package and the fakes importable without installing them."""

import pathlib
import sys

HERE = pathlib.Path(__file__).parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
