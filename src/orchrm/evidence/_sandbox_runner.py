"""The child side of the sandbox: run as `python -I -S _sandbox_runner.py SPEC_JSON STATUS_FD`.

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


def main() -> None:
    spec = json.loads(sys.argv[1])
    status_fd = int(sys.argv[2])
    spec["caller_processes"] = _processes_of(os.getuid())  # counted now: /proc is gone after the chroot
    status: dict = {"layers": {}, "notes": []}

    def layer(name: str, ok: bool, note: str | None = None) -> None:
        status["layers"][name] = ok
        if note:
            status["notes"].append(f"{name}: {note}")

    want = spec["isolation"]
    is_root = os.geteuid() == 0
    flags = 0
    if "pid" in want:
        flags |= CLONE_NEWPID
    if "net" in want:
        flags |= CLONE_NEWNET
    if "fs" in want:
        flags |= CLONE_NEWNS
    if flags and not is_root:
        flags |= CLONE_NEWUSER  # an unprivileged user may still create namespaces inside its own user namespace
    ns_ok = False
    if flags:
        try:
            _check(_libc.unshare(flags), "unshare")
            ns_ok = True
        except OSError as exc:
            for name in ("pid", "net", "fs"):
                if name in want:
                    layer(name, False, f"namespaces unavailable ({exc.strerror}); not isolated")
    if ns_ok and not is_root:
        uid, gid = os.getuid(), os.getgid()
        try:
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"0 {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"0 {gid} 1")
        except OSError as exc:
            status["notes"].append(f"user namespace id maps failed: {exc.strerror}")
    if ns_ok:
        layer("net", "net" in want)
        if "pid" in want:
            layer("pid", True)
    if ns_ok and "fs" in want:
        try:
            _build_root(spec)
            layer("fs", True)
        except OSError as exc:
            layer("fs", False, f"could not build the minimal root ({exc}); host files stay visible")
            os.chdir(spec["scratch"])
    else:
        os.chdir(spec["scratch"])
    scratch_in_child = "/scratch" if status["layers"].get("fs") else spec["scratch"]

    reachable = status["layers"].get("fs") or _world_reachable(spec["python"])
    if is_root and spec.get("uid") is not None and not reachable:
        layer("uid", False, "the interpreter sits under a private directory and no fs layer hides it; runs as root")
    elif is_root and spec.get("uid") is not None:
        os.setgroups([])
        os.setgid(spec["gid"])
        os.setuid(spec["uid"])
        layer("uid", True)
    else:
        layer("uid", False, "not started as root: the script runs as the caller's user")
    try:
        _limits(spec)
        layer("rlimits", True)
    except (ValueError, OSError) as exc:
        layer("rlimits", False, str(exc))

    os.write(status_fd, json.dumps(status).encode())
    os.close(status_fd)

    env = {"PATH": "/usr/bin:/bin", "HOME": scratch_in_child, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    argv = [spec["python"], "-I", "-B", spec["script"].replace(spec["scratch"], scratch_in_child, 1)]
    if not (ns_ok and "pid" in want):
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


if __name__ == "__main__":
    main()
