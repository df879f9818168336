import sys

from arela_index.cli import main

sys.exit(main())
