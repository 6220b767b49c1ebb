"""Building llama.cpp's `llama-server` once, from the sources vendored in the pinned llama-cpp-python sdist.

PyPI has no prebuilt server for this machine, so the first local run compiles one (a long step on a small
CPU) into the user cache, keyed by version. The build directory survives an interrupted build, so a
second attempt resumes where the first stopped; a failed step is reported by name with its log's tail.

The same sdist carries llama.cpp's `convert_lora_to_gguf.py` (with the `conversion/` package and `gguf-py/`
it imports), which turns a peft LoRA adapter into a GGUF adapter for `llama-server --lora`. The build keeps
a copy beside the binary; `ensure_lora_converter` extracts one from the sdist where an older build did not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from ..atomic import copy_file_atomic, swap_in
from ..errors import ServerError
from ..paths import cache_dir

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
# The build is native (-march=native) but never uses AMX: CPUs that advertise AMX inside a VM whose kernel does
# not hand out the tile state (Firecracker here) built a server that segfaulted in ggml_backend_amx_mul_mat at
# its first decode. The recipe names the cache folder, so a machine holding such a build builds anew.
_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
BUILD_RECIPE = "noamx"
_VENDOR = "vendor/llama.cpp"
# What convert_lora_to_gguf.py needs from the vendored tree: itself, the model classes and its own gguf-py.
CONVERTER_PARTS = ("convert_lora_to_gguf.py", "conversion", "gguf-py")

Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def server_home() -> Path:
    return cache_dir() / "llama-server" / f"{LLAMA_CPP_PYTHON_VERSION}-{BUILD_RECIPE}"


def server_binary() -> Path:
    return server_home() / "bin" / "llama-server"


def find_llama_server() -> Path | None:
    """`$ORCHRM_LLAMA_SERVER` if set, else the cached build, else None."""
    override = os.environ.get("ORCHRM_LLAMA_SERVER")
    if override:
        path = Path(override).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ServerError(f"ORCHRM_LLAMA_SERVER={override} is not an executable file")
        return path
    path = server_binary()
    return path if path.is_file() and os.access(path, os.X_OK) else None


def converter_home() -> Path:
    return server_home() / "convert"


def lora_converter() -> Path | None:
    """The vendored `convert_lora_to_gguf.py`, or None where it has not been extracted yet."""
    home = converter_home()
    script = home / CONVERTER_PARTS[0]
    return script if all((home / part).exists() for part in CONVERTER_PARTS) else None


def ensure_lora_converter(log: Log = _stderr) -> Path:
    """The LoRA-to-GGUF converter script, extracted from the pinned sdist (downloaded through pip) if needed."""
    found = lora_converter()
    if found is not None:
        return found
    home = server_home()
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home / "convert.lock")):
        if (found := lora_converter()) is not None:
            return found
        work = home / "convert-work"
        work.mkdir(exist_ok=True)
        sdist = _sdist(work, work / "download.log", log)
        log("  extract: llama.cpp's convert_lora_to_gguf.py")
        prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}/{_VENDOR}/"
        wanted = tuple(prefix + part for part in CONVERTER_PARTS)
        staging = _extract(sdist, work / "extract", lambda name: name.startswith(wanted))
        _keep_converter(staging / prefix.rstrip("/"))
        shutil.rmtree(work, ignore_errors=True)
    found = lora_converter()
    assert found is not None
    return found


def _keep_converter(src: Path) -> None:
    """Copy the converter's parts out of an extracted llama.cpp tree into `converter_home()`, swapped in whole."""
    from ..atomic import replacing_dir

    missing = [part for part in CONVERTER_PARTS if not (src / part).exists()]
    if missing:
        raise ServerError(f"the llama.cpp sources have no {missing[0]}: not the expected source package")
    with replacing_dir(converter_home()) as tmp:
        for part in CONVERTER_PARTS:
            if (src / part).is_dir():
                shutil.copytree(src / part, tmp / part)
            else:
                shutil.copy2(src / part, tmp / part)


def ensure_llama_server(log: Log = _stderr) -> Path:
    """The llama-server binary, built first if this machine has none."""
    found = find_llama_server()
    if found is not None:
        return found
    return build_llama_server(log=log)


def build_llama_server(log: Log = _stderr, jobs: int | None = None) -> Path:
    home = server_home()
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home / "build.lock")):
        if (found := find_llama_server()) is not None:
            return found  # another process finished the build while we waited for the lock
        for tool in ("cmake", "c++"):
            if shutil.which(tool) is None:
                raise ServerError(
                    f"building llama-server needs `{tool}`, which is not installed",
                    hint="install it (Debian: apt-get install cmake g++)",
                )
        work = home / "work"
        work.mkdir(exist_ok=True)
        logfile = work / "build.log"
        log(f"building llama-server {LLAMA_CPP_PYTHON_VERSION} once (about 10 minutes on 2 cores); log: {logfile}")
        src = _fetch_sources(work, logfile, log)
        build = work / "build"
        jobs = jobs or os.cpu_count() or 2
        _step(
            "configure",
            [
                "cmake",
                "-S",
                str(src),
                "-B",
                str(build),
                "-DCMAKE_BUILD_TYPE=Release",
                "-DLLAMA_CURL=OFF",
                "-DLLAMA_OPENSSL=OFF",
                "-DBUILD_SHARED_LIBS=OFF",
                "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF",
                f"-DCMAKE_C_FLAGS={_NO_AMX}",
                f"-DCMAKE_CXX_FLAGS={_NO_AMX}",
            ],
            logfile,
            log,
        )
        _step("compile", ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)], logfile, log)
        built = build / "bin" / "llama-server"
        if not built.is_file():
            raise ServerError(f"the build finished but {built} is missing", detail=_tail(logfile))
        target = server_binary()
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_file_atomic(built, target, mode=0o755)  # a half-copied binary is never found
        _keep_converter(src)
        shutil.rmtree(work, ignore_errors=True)
        log(f"llama-server ready: {target}")
        return target


def _fetch_sources(work: Path, logfile: Path, log: Log) -> Path:
    src = work / "llama.cpp"
    if (src / "CMakeLists.txt").is_file():
        return src
    sdist = _sdist(work, logfile, log)
    log("  extract: vendored llama.cpp sources")
    prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}/{_VENDOR}/"
    staging = _extract(sdist, work / "extract", lambda name: name.startswith(prefix))
    swap_in(staging / prefix.rstrip("/"), src)  # replaces a partial tree a killed build left at src
    shutil.rmtree(work / "extract", ignore_errors=True)
    return src


def _sdist(work: Path, logfile: Path, log: Log) -> Path:
    """The pinned llama-cpp-python source package in `work/sdist`, downloaded through pip if absent."""
    sdist_dir = work / "sdist"
    name = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
    if not (sdist_dir / name).is_file():
        _step(
            "download",
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                "--quiet",
                "-d",
                str(sdist_dir),
                f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
            ],
            logfile,
            log,
        )
    return sdist_dir / name


def _extract(sdist: Path, staging: Path, keep: Callable[[str], bool]) -> Path:
    """The sdist's members that `keep` selects, extracted under a fresh `staging` folder."""
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if keep(m.name)]
            if not members:
                raise ServerError(f"{sdist.name} has no {_VENDOR}: not the expected source package")
            tar.extractall(staging, members=members, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise ServerError(f"extracting {sdist.name} failed: {exc}", hint="delete " + str(sdist.parent.parent)) from exc
    return staging


def _step(name: str, cmd: list[str], logfile: Path, log: Log) -> None:
    log(f"  {name}: {' '.join([Path(cmd[0]).name, *cmd[1:]])[:160]}")
    with open(logfile, "a") as out:
        out.write(f"\n=== {name}: {' '.join(cmd)}\n")
        out.flush()
        try:
            code = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
        except OSError as exc:
            out.write(f"{exc}\n")
            code = -1
    if code != 0:
        raise ServerError(
            f"building llama-server failed at step '{name}' (exit {code})",
            hint=f"full log: {logfile}",
            detail=_tail(logfile),
        )


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
