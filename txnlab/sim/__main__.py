"""``python -m txnlab.sim``: the same command line as ``python -m txnlab.sweep``."""
import sys

from txnlab.sweep.__main__ import main

sys.exit(main())
