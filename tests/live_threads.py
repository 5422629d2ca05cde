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


def group_processes(pgid):
    """[(pid, state letter, live thread names)] of the processes of a process group that still
    have a live thread."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            st = (d / "stat").read_text()
            fields = st[st.rindex(")") + 2:].split()
            if int(fields[2]) != pgid:
                continue
            names = live_threads(d.name)
            if names:
                found.append((int(d.name), fields[0], names))
        except (OSError, ValueError):
            pass
    return found
