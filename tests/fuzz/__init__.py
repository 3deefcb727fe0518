"""The fuzzer (issue 16): generated model answers and decisions against a real worker.

`test_fuzz.py` runs a short profile with the test suite; `python -m tests.fuzz --cases 2000`
runs the long one. See harness.py for what each case checks.
"""
