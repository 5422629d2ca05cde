"""Shared by the comparison runners (tests/cpython/compare.py, tests/realprograms/run.py): the
threads of a process that are still alive, read from /proc."""

from pathlib import Path


def live_threads(pid):
    """Sorted names of the threads of a process that have not ended (a process whose main thread
    ended shows as a zombie while its other threads run)."""
    names = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        st = (t / "stat").read_text()
        if st[st.rindex(")") + 2] != "Z":
            names.append((t / "comm").read_text().strip())
    return sorted(names)
