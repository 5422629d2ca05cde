"""roundtrim report: a per-round table of a roundtrim round log, its diagnosis, and a plot of
it, a page or a JSON object; with --sites, the allocation sites that grow. Run as a module:
`python3 -m roundtrim_report` with this package's folder on sys.path, as `roundtrim report`
does. The command line and what each option does: cli.py."""

import sys

# The package's modules are read, never compiled into a __pycache__ beside them: run by root
# from /usr/libexec/roundtrim, that folder would outlive the package. (`roundtrim report` also
# sets this before the package's own __init__ is read.)
sys.dont_write_bytecode = True

from .cli import main  # noqa: E402 (after the bytecode setting)

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(1)
