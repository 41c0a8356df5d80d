"""How kgqa builds llama.cpp for the local LM: the flags live here, and nowhere else.

Why: llama-cpp-python compiles llama.cpp from source with `-march=native` by default. On Intel
hosts whose CPU reports AMX (`amx_tile amx_int8 amx_bf16`: Sapphire Rapids and later, common in
clouds) that build compiles llama.cpp's AMX kernels in, and on VMs that advertise AMX without
granting its tile state the first `ldtilecfg` faults: SIGSEGV in libggml-cpu.so on the first
decode. So kgqa builds one of:

- `native` (the default): `-march=native` minus AMX on x86-64 (`-mno-amx-tile -mno-amx-int8
  -mno-amx-bf16` in the C and C++ flags; GCC keeps explicit `-mno-*` over what `-march` implies),
  plain native elsewhere (aarch64 has no AMX). The fastest build that is safe.
- `portable`: no `-march=native`; AVX2, FMA, F16C and BMI2 (x86-64-v3) on x86-64, so the wheel
  runs on any AVX2 CPU; the Arm baseline on aarch64. Slower prompt processing where the host has
  AVX-512. The build to fall back to when a native one crashes.

Measured tokens/s of each (prompt / generated, 2 threads) are in the README's "Local LM" section.

A native wheel runs only on CPUs like the one that built it, and pip's wheel cache is keyed by
the source archive, not the CPU: a cached wheel from one machine would crash on another. So kgqa
builds with pip's cache off and keeps its wheels under `$KGQA_CACHE/wheels/KEY/`, KEY naming the
llama-cpp-python version, the mode, the machine and a digest of the flags and of the host's CPU
features. Setup (`python -m kgqa.lm.build`) installs that wheel and records what it was built for
in the environment (`kgqa-llama-build.json` under `sys.prefix`), which `kgqa doctor` reports.

Standard library only: setup runs this before kgqa's dependencies are installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"
MODES = ("native", "portable")
# Instruction sets that must not be compiled in: their kernels fault on hosts that report but do not grant them.
UNSAFE_X86 = ("amx-tile", "amx-int8", "amx-bf16")
# Every build: no multimodal (llava/mtmd) library, which kgqa never loads and which doubles the build time.
COMMON_CMAKE = ("-DLLAVA_BUILD=OFF",)
PORTABLE_X86_CMAKE = ("-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON")
RECORD_NAME = "kgqa-llama-build.json"
MODE_VARIABLE = "KGQA_LLAMA_BUILD"
REBUILD_HINT = f"{MODE_VARIABLE}=portable make setup"


@dataclass(frozen=True)
class BuildPlan:
    """One way of building llama-cpp-python: its flags and the CPU it is for."""

    mode: str
    version: str
    machine: str
    cmake_args: tuple[str, ...]
    c_flags: tuple[str, ...]
    host_features: tuple[str, ...]  # the host's SIMD features when the plan was made (what a native build assumed)

    @property
    def key(self) -> str:
        digest = hashlib.sha256(json.dumps([self.cmake_args, self.c_flags, self.host_features if self.mode == "native" else []]).encode())
        return f"llama-cpp-python-{self.version}-{self.mode}-{self.machine}-{digest.hexdigest()[:12]}"

    def environment(self) -> dict[str, str]:
        """What the build sees: CMake arguments, and C/C++ flags (CMake reads CFLAGS/CXXFLAGS on first configure)."""
        env = {"CMAKE_ARGS": " ".join(self.cmake_args), "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1)}
        if self.c_flags:
            env["CFLAGS"] = env["CXXFLAGS"] = " ".join(self.c_flags)
        return env

    def describe(self) -> str:
        flags = " ".join(self.cmake_args + self.c_flags)
        return f"{self.mode} ({flags})"


# The features worth naming when a build is described or compared (a CPU lists ~100 flags).
SIMD_FEATURES = (
    "sse4_2", "avx", "f16c", "fma", "bmi2", "avx2", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512vbmi", "amx_tile", "amx_int8", "amx_bf16",
    "asimd", "asimddp", "fphp", "asimdhp", "sve", "sve2", "i8mm", "sme",
)


def host_features(cpuinfo: str | None = None) -> tuple[str, ...]:
    """The SIMD features this CPU reports (/proc/cpuinfo `flags`, or `Features` on Arm), sorted."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return ()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in {"flags", "Features"}:
            return tuple(sorted(set(value.split()) & set(SIMD_FEATURES)))
    return ()


def machine() -> str:
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


def plan(mode: str = "native", *, arch: str | None = None, features: tuple[str, ...] | None = None) -> BuildPlan:
    """The build for MODE on this host (or on ARCH with FEATURES, for tests)."""
    if mode not in MODES:
        raise ValueError(f"unknown llama.cpp build mode {mode!r}: one of {', '.join(MODES)}")
    arch = arch or machine()
    features = host_features() if features is None else features
    x86 = arch == "x86_64"
    if mode == "native":
        cmake = ("-DGGML_NATIVE=ON", *COMMON_CMAKE)
        c_flags = tuple(f"-mno-{name}" for name in UNSAFE_X86) if x86 else ()
    else:
        cmake = ((*PORTABLE_X86_CMAKE,) if x86 else ("-DGGML_NATIVE=OFF",)) + COMMON_CMAKE
        c_flags = ()
    return BuildPlan(mode=mode, version=LLAMA_CPP_PYTHON, machine=arch, cmake_args=cmake, c_flags=c_flags, host_features=features)


def wheel_cache() -> Path:
    return Path(os.environ.get("KGQA_CACHE", Path.home() / ".cache" / "kgqa")) / "wheels"


def record_path(prefix: str | Path | None = None) -> Path:
    return Path(prefix or sys.prefix) / RECORD_NAME


def installed_build(prefix: str | Path | None = None) -> dict | None:
    """What setup recorded for the llama-cpp-python in this environment, if it is still the one installed."""
    try:
        record = json.loads(record_path(prefix).read_text())
        installed = metadata.version("llama-cpp-python")
    except (OSError, ValueError, metadata.PackageNotFoundError):
        return None
    return record if record.get("version") == installed else None


def build_wheel(build: BuildPlan, *, python: str = sys.executable, log=print) -> Path:
    """The wheel for BUILD, from kgqa's keyed cache or compiled now (minutes), never from pip's cache."""
    folder = wheel_cache() / build.key
    wheels = sorted(folder.glob("llama_cpp_python-*.whl"))
    if wheels:
        return wheels[-1]
    log(f"building llama-cpp-python {build.version}, {build.describe()}: a few minutes ...")
    with tempfile.TemporaryDirectory(prefix="kgqa-llama-") as scratch:
        command = [python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-cache-dir",
                   "--no-binary", "llama-cpp-python", f"llama-cpp-python=={build.version}", "--wheel-dir", scratch]
        subprocess.run(command, check=True, env={**os.environ, **build.environment()})
        built = sorted(Path(scratch).glob("llama_cpp_python-*.whl"))
        if not built:
            raise RuntimeError(f"pip wheel made no llama-cpp-python wheel in {scratch}")
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / built[-1].name
        shutil.move(str(built[-1]), target.with_suffix(".partial"))
        target.with_suffix(".partial").replace(target)
    (folder / "build.json").write_text(json.dumps(asdict(build) | {"key": build.key}, indent=2))
    return target


def install(build: BuildPlan, *, python: str = sys.executable, force: bool = False, log=print) -> dict:
    """Install BUILD's wheel into this environment (unless it is there already) and record it."""
    current = installed_build()
    if current and current.get("key") == build.key and not force:
        log(f"llama-cpp-python {build.version} ({build.mode} build) is installed")
        return current
    wheel = build_wheel(build, python=python, log=log)
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "uninstall", "--quiet", "--yes", "llama-cpp-python"], check=False, capture_output=True)
    subprocess.run([*pip, "install", "--quiet", str(wheel)], check=True)
    record = asdict(build) | {"key": build.key, "wheel": str(wheel)}
    record_path().write_text(json.dumps(record, indent=2))
    log(f"installed llama-cpp-python {build.version}, {build.describe()}")
    return record


def chosen_mode(requested: str | None = None) -> str:
    """The mode asked for (flag, then $KGQA_LLAMA_BUILD), else the one installed before, else native."""
    mode = requested or os.environ.get(MODE_VARIABLE) or (installed_build() or {}).get("mode") or "native"
    if mode not in MODES:
        raise SystemExit(f"kgqa: {MODE_VARIABLE}={mode!r} is not a build mode: use one of {', '.join(MODES)}")
    return mode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgqa.lm.build", description="Build and install llama-cpp-python for this CPU.")
    parser.add_argument("--mode", choices=MODES, help=f"default: ${MODE_VARIABLE}, else the installed build's mode, else native")
    parser.add_argument("--force", action="store_true", help="install again even if this build is installed")
    parser.add_argument("--show", action="store_true", help="print the plan as JSON and build nothing")
    args = parser.parse_args(argv)
    build = plan(chosen_mode(args.mode))
    if args.show:
        print(json.dumps(asdict(build) | {"key": build.key}, indent=2))
        return 0
    install(build, force=args.force, log=lambda line: print(f"kgqa: {line}", flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
