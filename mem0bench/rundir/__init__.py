"""The run directory's format: its files, their rows, reading them back, and finding run folders.

Below `pipeline` (which writes runs) and `report` (which reads them): the stages, the after-the-run tools
and the report all go through these modules, so a run folder has one shape wherever it is read.
"""
