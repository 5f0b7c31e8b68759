"""``python -m edge --config FILE``: run the station agent."""

import sys

from edge.agent import main

sys.exit(main())
