import sys

from dlgate.cli import main

sys.exit(main())
