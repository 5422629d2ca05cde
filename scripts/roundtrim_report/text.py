"""Text that a preloaded program or a log's writer controls (an executable's name, Python file
and function names, any field of a log), made safe for where the report shows it: a terminal,
a gnuplot data file, a matplotlib label. JSON and HTML escape on their own."""

import sys


def _escape(ch):
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_text(text):
    """text with every character Unicode does not call printable written as a visible escape
    (\\x1b, \\x9b, \\u202e): C0 and C1 control characters, DEL, the bidirectional overrides and
    isolates, line and paragraph separators, newlines and tabs. Nothing shown from a log then
    sets a terminal's title, moves its cursor, reorders a line or starts a forged one."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def cleaned(value):
    """A parsed JSON value with every text in it (keys too) passed through terminal_text; one
    pass with a stack of its own, whatever the nesting."""
    top = [value]
    stack = [(top, 0)]
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = terminal_text(item)
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            if not all(k.isprintable() for k in item):
                item = holder[key] = {terminal_text(k): v for k, v in item.items()}
            stack.extend((item, k) for k in item)
    return top[0]


def needs_cleaning(line):
    """Whether a log line's values may hold text terminal_text changes: not when the line is
    printable and has no escape (the common case, checked fast)."""
    return "\\" in line or not line.rstrip("\n").isprintable()


class TerminalStream:
    """A text stream that writes every line through terminal_text: the report's own newlines
    pass, nothing else that is not printable does."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        if not text.isprintable():
            text = "\n".join(terminal_text(part) for part in text.split("\n"))
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def guard_terminal():
    """Standard output and standard error through TerminalStream."""
    sys.stdout = TerminalStream(sys.stdout)
    sys.stderr = TerminalStream(sys.stderr)


def plot_text(text, limit=200):
    """One line for a plot's title or legend: terminal_text, cut to limit characters."""
    text = terminal_text(str(text))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def gnuplot_field(text):
    """A field of a gnuplot data file that gnuplot reads back as the same string (strcol): one
    line, no tab (the separator), no double quote (gnuplot's quoting in data files), each
    backslash doubled (gnuplot reads escapes there)."""
    return plot_text(text).replace("\\", "\\\\").replace('"', "'")


def matplotlib_plain(matplotlib):
    """Has matplotlib draw text as it is: a $ in a name would start mathtext ("Unknown symbol"
    fails the whole plot). Returns the function that prepares a label: the identity where
    mathtext can be turned off, else one that escapes each $."""
    if "text.parse_math" in matplotlib.rcParams:
        matplotlib.rcParams["text.parse_math"] = False
        return plot_text
    return lambda text, limit=200: plot_text(text, limit).replace("$", r"\$")
