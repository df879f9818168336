"""The `arela` command line: index, ask, doctor, eval, and how answers are shown to people."""
