"""`mem0bench import FILE`: another system's published answers (and its judge's labels) as a run directory.

`imported` reads LOCOMO-shaped files and matches their records to the dataset's questions,
`imported_suites` the other suites' published shapes, `match_file` picks the reader, matcher and dataset
for a file, `import_run` writes the matched answers as a run.
"""
