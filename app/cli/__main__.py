"""`python -m app.cli ...`: the same as the `chat-bff` command."""

import sys

from app.cli import main

sys.exit(main())
