"""The podman world of the container tests (test_containers.py), made once per test session and
held until the session ends. Run by containers.py, as root, in a mount namespace of its own:

    unshare -m --propagation private python3 container_host.py SESSION CACHE

- /etc is covered, in this namespace only, by an overlay whose upper layer is in SESSION: the CDI
  specs the tests write land in its /etc/cdi (podman 4.3 reads specs from /etc/cdi and
  /var/run/cdi only), and the machine's /etc is never written; so are /var/lib and /var/tmp,
  where podman writes whatever its options say.
- The base images are made from Debian packages and kept in CACHE between sessions: Debian 12
  and 11 roots with libc6, dash and coreutils (mmdebstrap --variant=extract: no maintainer
  script runs, a few seconds each), and a musl root: the files of Debian's musl package and a
  program built with musl-gcc. They are imported into a podman storage in SESSION.
- SESSION/ready says "ok", or "skip: WHY" when something here cannot run.
- When its standard input closes, it removes every container it holds and exits: the mounts of
  the namespace (the overlay, the containers' roots) go with it.

Every podman command of the tests runs in this namespace (nsenter)."""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

SUITES = ("bookworm", "bullseye")
PACKAGES = "libc6,dash,coreutils"
# What no test reads: fewer files to unpack and import.
EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*")

# The musl image's program: with an argument, prints a line and exits with that status; with
# none, says what LD_PRELOAD names and whether that file is there (the device's work).
MUSL_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    const char *preload = getenv("LD_PRELOAD");
    if (argc == 1) {
        printf("LD_PRELOAD=%s (%s)\n", preload ? preload : "",
               preload && access(preload, R_OK) == 0 ? "readable" : "absent");
        return 0;
    }
    char *p = malloc(1000);
    printf("musl program: %d argument(s), malloc %s\n", argc - 1, p ? "works" : "failed");
    free(p);
    return atoi(argv[1]);
}
"""


def podman_argv(session):
    """podman with the tests' own storage and runc state (nothing in /var/lib/containers or
    /run), the runtime that works here (crun refuses hybrid cgroups), and no event log."""
    session = Path(session)
    return ["podman", "--root", str(session / "storage"), "--runroot", str(session / "run"),
            "--tmpdir", str(session / "tmp"), "--runtime", "runc",
            "--runtime-flag", f"root={session / 'runc'}", "--cgroup-manager", "cgroupfs",
            "--events-backend", "none", "--storage-driver", "overlay"]


# What `podman run` needs here: no network of its own, limits under the machine's hard limits
# (podman's defaults exceed them).
RUN_FLAGS = ("--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")


def image_name(name):
    return f"localhost/roundtrim-test-{name}"


def recipe_key(*parts):
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def part_tar(tar):
    """Where TAR is made, renamed to TAR once whole (mmdebstrap reads the format from the
    extension)."""
    return tar.with_name(tar.stem + ".part.tar")


def debian_root(suite, cache):
    """SUITE's root as a tar in CACHE (made when missing); a Popen when it is being made."""
    key = recipe_key(suite, PACKAGES, *EXCLUDES)
    tar = cache / f"{suite}-{key}.tar"
    if tar.exists():
        return tar, None
    part_tar(tar).unlink(missing_ok=True)  # left by a session ended meanwhile
    argv = ["mmdebstrap", "--quiet", "--variant=extract", f"--include={PACKAGES}"]
    argv += [f"--dpkgopt=path-exclude={x}" for x in EXCLUDES]
    argv += [suite, str(part_tar(tar))]
    log = open(cache / f"{suite}.log", "w")
    return tar, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)


def musl_root(cache, session):
    """The musl root: Debian's musl package's files (as installed here) and a program linked
    with musl. None when musl-gcc is missing."""
    if not shutil.which("musl-gcc"):
        return None
    files = subprocess.run(["dpkg", "-L", "musl"], capture_output=True, text=True)
    if files.returncode != 0:
        return None
    listed = sorted(p for p in files.stdout.split() if os.path.isfile(p) or os.path.islink(p))
    key = recipe_key("musl merged-usr", MUSL_PROGRAM, *listed)
    tar = cache / f"musl-{key}.tar"
    if tar.exists():
        return tar
    src = session / "musl_program.c"
    src.write_text(MUSL_PROGRAM)
    prog = session / "musl_program"
    subprocess.run(["musl-gcc", "-O1", str(src), "-o", str(prog)], check=True)
    with tarfile.open(part_tar(tar), "w") as out:
        # A merged /usr, as Debian's: /lib is usr/lib (the package's loader link is relative).
        for folder in ("bin", "usr", "usr/lib", "usr/lib/x86_64-linux-musl", "tmp"):
            entry = tarfile.TarInfo(folder)
            entry.type, entry.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            out.addfile(entry)
        entry = tarfile.TarInfo("lib")
        entry.type, entry.linkname = tarfile.SYMTYPE, "usr/lib"
        out.addfile(entry)
        for path in listed:
            name = path.lstrip("/")
            if name.startswith("lib/"):
                name = "usr/" + name
            if name.startswith("usr/lib/"):
                out.add(path, arcname=name, recursive=False)
        out.add(str(prog), arcname="bin/musl_program")
    os.rename(part_tar(tar), tar)
    return tar


def cover(session, folder):
    """FOLDER, in this namespace, with what is written there going to SESSION."""
    name = folder.strip("/").replace("/", "-")
    upper, work = session / "cover" / name / "upper", session / "cover" / name / "work"
    upper.mkdir(parents=True)
    work.mkdir(parents=True)
    subprocess.run(["mount", "-t", "overlay", "roundtrim-tests", "-o",
                    f"lowerdir={folder},upperdir={upper},workdir={work}", folder],
                   check=True, capture_output=True, text=True)


def cover_system_folders(session):
    """/etc for the CDI specs (/etc/cdi); /var/lib and /var/tmp, where podman keeps its blob
    cache and copies images whatever its storage options say."""
    for folder in ("/etc", "/var/lib", "/var/tmp"):
        cover(session, folder)
    os.makedirs("/etc/cdi", exist_ok=True)


def build(session, cache):
    cache.mkdir(parents=True, exist_ok=True)
    try:
        cover_system_folders(session)
    except subprocess.CalledProcessError as e:
        return ("skip: cannot cover a folder with an overlay in a mount namespace: "
                + e.stderr.strip())
    made = {suite: debian_root(suite, cache) for suite in SUITES}
    musl = musl_root(cache, session)
    podman = podman_argv(session)
    tars = {}
    for suite, (tar, proc) in made.items():
        if proc is not None:
            if proc.wait() != 0:
                log = (cache / f"{suite}.log").read_text()[-1500:]
                return f"skip: mmdebstrap could not make the {suite} root: {log}"
            os.rename(part_tar(tar), tar)
        tars[suite] = tar
    if musl is not None:
        tars["musl"] = musl
    for name, tar in tars.items():
        res = subprocess.run(podman + ["import", "-q", str(tar), image_name(name)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            return f"skip: podman cannot import an image here: {res.stderr.strip()[-1500:]}"
    # A machine where no container can start (no privileges for namespaces, cgroups runc
    # refuses) is no failure of roundtrim's.
    res = subprocess.run(podman + ["run", "--rm", *RUN_FLAGS, image_name("bookworm"), "true"],
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        return f"skip: podman cannot run a container here: {res.stderr.strip()[-1500:]}"
    return "ok"


def main():
    session, cache = Path(sys.argv[1]), Path(sys.argv[2])
    try:
        state = build(session, cache)
    except Exception as e:  # the tests say why they skip
        state = f"skip: the images could not be made: {e!r}"
    (session / "ready.part").write_text(state)
    os.rename(session / "ready.part", session / "ready")
    sys.stdin.read()  # until the session ends
    subprocess.run(podman_argv(session) + ["rm", "--all", "--force", "--time", "0"],
                   capture_output=True, timeout=120)


if __name__ == "__main__":
    main()
