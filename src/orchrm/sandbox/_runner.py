"""The child side of the sandbox: run as `python -I -S _runner.py SPEC_JSON STATUS_FD`.

Stdlib only, and never imported by orchrm itself. It is a fresh single-threaded process, so it can
unshare namespaces, build a minimal root, drop privileges and set resource limits before it runs the
untrusted script. Every isolation layer it manages (or fails) to set up is reported as one JSON object on
STATUS_FD, so the caller can record what the script was actually confined by.

Layers, each tried independently:
- pid namespace: the script runs as pid 1 of a new namespace; when it exits or is killed, the kernel kills
  every process it left behind (a fork bomb cannot outlive it).
- net namespace: no network interfaces but a loopback that is down.
- mount namespace + chroot: a tmpfs root holding only read-only binds of the interpreter's directories,
  a few /dev nodes and the scratch directory; nothing else of the host filesystem is visible.
- an unprivileged uid/gid of its own (when started as root), so RLIMIT_NPROC applies and host files owned
  by root stay out of reach even where they would be visible.
- rlimits: CPU seconds, address space, file size (stdout/stderr are files, so this caps output too),
  process count, open files, no core dumps.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            src.encode(), target.encode(), fstype.encode() if fstype else None, flags, data.encode() if data else None
        ),
        f"mount {src} on {target}",
    )


def _bind(src: str, root: str, target: str, readonly: bool) -> None:
    dest = root + target
    if os.path.isdir(src):
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        open(dest, "a").close()
    _mount(src, dest, None, MS_BIND | MS_REC)
    if readonly:
        _mount("none", dest, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_REC)


def _build_root(spec: dict) -> None:
    """A tmpfs root with read-only binds of what the interpreter needs, then chroot into it."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    root = spec["root_dir"]
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755")
    for path in spec["readonly_paths"]:
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), root + path)  # /lib -> usr/lib on merged-/usr systems
        elif os.path.exists(path):
            _bind(path, root, path, readonly=True)
    for dev in ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"):
        if os.path.exists(dev):
            _bind(dev, root, dev, readonly=False)
    _bind(spec["scratch"], root, "/scratch", readonly=False)
    os.makedirs(root + "/tmp", mode=0o1777, exist_ok=True)
    os.chmod(root + "/tmp", 0o1777)
    os.chroot(root)
    os.chdir("/scratch")


def _world_reachable(path: str) -> bool:
    """Whether an unprivileged uid can traverse to and execute `path` on the host filesystem."""
    real = os.path.realpath(path)
    parts = real.split("/")[1:-1]
    for i in range(len(parts)):
        if not os.stat("/" + "/".join(parts[: i + 1])).st_mode & 0o001:
            return False
    return bool(os.stat(real).st_mode & 0o001)


def _limits(spec: dict) -> None:
    lim = spec["limits"]
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["memory_bytes"], lim["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"], lim["open_files"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # RLIMIT_NPROC counts every process of the real uid: without a uid of its own, leave room for the
    # caller's existing processes (as root with its own uid this adds nothing).
    nproc = lim["processes"] + (spec["caller_processes"] if os.getuid() != spec.get("uid") else 0)
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


class _Status:
    """Which layers are in place and why any is missing: sent to the caller as one JSON object."""

    def __init__(self) -> None:
        self.layers: dict[str, bool] = {}
        self.notes: list[str] = []

    def layer(self, name: str, ok: bool, note: str | None = None) -> None:
        self.layers[name] = ok
        if note:
            self.notes.append(f"{name}: {note}")

    def send(self, fd: int) -> None:
        os.write(fd, json.dumps({"layers": self.layers, "notes": self.notes}).encode())
        os.close(fd)


def _unshare(want: list[str], is_root: bool, status: _Status) -> bool:
    """New pid/net/mount namespaces as asked (inside a user namespace when not root); True when done."""
    flags = 0
    if "pid" in want:
        flags |= CLONE_NEWPID
    if "net" in want:
        flags |= CLONE_NEWNET
    if "fs" in want:
        flags |= CLONE_NEWNS
    if not flags:
        return False
    if not is_root:
        flags |= CLONE_NEWUSER  # an unprivileged user may still create namespaces inside its own user namespace
    try:
        _check(_libc.unshare(flags), "unshare")
    except OSError as exc:
        for name in ("pid", "net", "fs"):
            if name in want:
                status.layer(name, False, f"namespaces unavailable ({exc.strerror}); not isolated")
        return False
    if not is_root:
        _map_ids(status)
    status.layer("net", "net" in want)
    if "pid" in want:
        status.layer("pid", True)
    return True


def _map_ids(status: _Status) -> None:
    """In a new user namespace: the caller's uid and gid are root inside it, and nothing else is mapped."""
    uid, gid = os.getuid(), os.getgid()
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"0 {gid} 1")
    except OSError as exc:
        status.notes.append(f"user namespace id maps failed: {exc.strerror}")


def _enter_root(spec: dict, build: bool, status: _Status) -> str:
    """Chroot into the minimal root when `build` (a mount namespace exists and fs was asked for), else stay
    on the host filesystem; either way cd into the scratch directory. Returns its path as the script sees it."""
    if build:
        try:
            _build_root(spec)
            status.layer("fs", True)
            return "/scratch"
        except OSError as exc:
            status.layer("fs", False, f"could not build the minimal root ({exc}); host files stay visible")
    os.chdir(spec["scratch"])
    return spec["scratch"]


def _drop_privileges(spec: dict, is_root: bool, status: _Status) -> None:
    """Become the run's own unprivileged uid (started as root), unless the interpreter would be out of its reach."""
    reachable = status.layers.get("fs") or _world_reachable(spec["python"])
    if is_root and spec.get("uid") is not None and not reachable:
        status.layer(
            "uid", False, "the interpreter sits under a private directory and no fs layer hides it; runs as root"
        )
    elif is_root and spec.get("uid") is not None:
        os.setgroups([])
        os.setgid(spec["gid"])
        os.setuid(spec["uid"])
        status.layer("uid", True)
    else:
        status.layer("uid", False, "not started as root: the script runs as the caller's user")


def _exec_script(spec: dict, scratch: str, pid_namespace: bool) -> None:
    """Exec the script; in a new pid namespace, as pid 1's child, ending the way the script ended."""
    env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    argv = [spec["python"], "-I", "-B", spec["script"].replace(spec["scratch"], scratch, 1)]
    if not pid_namespace:
        os.execve(argv[0], argv, env)
    # In a new pid namespace the first child is its pid 1; when it ends, the kernel kills the rest.
    pid = os.fork()
    if pid == 0:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        os.execve(argv[0], argv, env)
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)  # end the same way, so the caller sees the signal
    sys.exit(os.WEXITSTATUS(wait_status))


def main() -> None:
    spec = json.loads(sys.argv[1])
    status_fd = int(sys.argv[2])
    spec["caller_processes"] = _processes_of(os.getuid())  # counted now: /proc is gone after the chroot
    status = _Status()
    want = spec["isolation"]
    is_root = os.geteuid() == 0
    ns_ok = _unshare(want, is_root, status)
    scratch_in_child = _enter_root(spec, ns_ok and "fs" in want, status)
    _drop_privileges(spec, is_root, status)
    try:
        _limits(spec)  # after the uid change: RLIMIT_NPROC counts the uid the script runs as
        status.layer("rlimits", True)
    except (ValueError, OSError) as exc:
        status.layer("rlimits", False, str(exc))
    status.send(status_fd)
    _exec_script(spec, scratch_in_child, ns_ok and "pid" in want)


if __name__ == "__main__":
    main()
