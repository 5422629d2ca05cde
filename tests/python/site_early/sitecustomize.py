"""Imports the hook target while the interpreter starts, before the main program runs."""
import hook_target  # noqa: F401
