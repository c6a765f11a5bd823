"""Command-line entry points; each command's body lives with the code it drives."""
