"""State of a library module that tests/python/holder_kinds.py keeps its updates in (mode
"module"): the holder search names it by this module's name, not by the program's."""

STATE = {"rounds": [], "config": {"name": "fl"}}
