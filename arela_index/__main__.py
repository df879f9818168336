import sys

from arela_index.cli.main import main

sys.exit(main())
