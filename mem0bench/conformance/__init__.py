"""`python -m mem0bench check-system TARGET`: does a system keep the protocol's promises?

A system (a class, or a service at an http URL) runs on a small built-in conversation against an
in-process OpenAI-compatible stand-in; the checks are in `checks`, the fixture in `fixture`, the stand-in
in `standin`.
"""
