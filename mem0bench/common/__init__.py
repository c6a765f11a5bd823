"""Small helpers every layer may use (the bottom of the import graph): one of each."""
