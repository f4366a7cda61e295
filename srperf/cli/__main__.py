"""``python -m srperf.cli``: the same as the ``srperf`` command."""

import sys

from srperf.cli.entry import main

sys.exit(main())
