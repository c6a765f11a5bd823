"""Command-line entry points, one module per command; each parses its arguments, calls the packages
below and turns their errors into one line and an exit code."""
