"""Parsing source files into symbols and references: Python through `ast`, other languages through tree-sitter."""
