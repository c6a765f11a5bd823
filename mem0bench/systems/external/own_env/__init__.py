"""Systems whose pins cannot share the harness's environment: each runs in a venv of its own (`venv`), as a
service the adapter starts (`process`, `adapter`) and reaches over the HTTP system protocol. The service side
is a script run by the venv's interpreter; `service_kit` is its server (standard library only)."""
