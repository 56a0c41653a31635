"""Sessions: many checks over a pool of targets and a store of references (see session.py)."""

from hil.paths import default_cache_dir, default_results_dir
from hil.session.session import Session

__all__ = ["Session", "default_cache_dir", "default_results_dir"]
