"""After the run: tools that read (and, for rejudge and import, write) finished run directories.

`status` (where a run stands), `rejudge` (new judge runs over existing answers), `import_run` and
`imported` (other systems' published answers as a run), `compare` (two runs, paired) and `calibration`
(the judge's own error rates). They sit apart from the stages (`runner`, `answer`, `judge`,
`aggregate`, ...) that make a run, and build on them; nothing in the stages imports them.
"""
