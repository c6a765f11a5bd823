"""`mem0bench judge-check`: the judge's own error rates on items whose right label is known.

`calibration` builds the items and computes the rates, `stress` makes hard known-WRONG answers from each
gold, `suite_calibration` the items of suites other than LOCOMO; `check` runs one check (dry-run price,
judging, second opinion, probe file) and `render` writes judge_check.json and its markdown.
"""
