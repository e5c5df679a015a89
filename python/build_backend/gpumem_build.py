"""A PEP 517 backend for gpumem that needs nothing from a package index.

It configures the project with CMake, builds only the extension target (gpumem_native), and
writes the wheel with zipfile. Settings (``pip install . --config-settings KEY=VALUE`` or the
environment):

- ``build-dir`` / GPUMEM_WHEEL_BUILD_DIR: the CMake build folder (default
  ``<project>/build-wheel/<python tag>``, kept between builds so rebuilds are incremental);
- ``cmake-args`` / GPUMEM_CMAKE_ARGS: extra configure arguments, space-separated;
- CMAKE_BUILD_PARALLEL_LEVEL: build jobs (default 2).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import io
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = "gpumem"
PACKAGE_FILES = ("*.py", "*.pyi", "py.typed")


def _version() -> str:
    header = (ROOT / "include" / "gpumem" / "version.hpp").read_text()
    return re.search(r'GPUMEM_VERSION_STRING "([^"]+)"', header).group(1)


def _tag() -> str:
    interpreter = "cp" if sys.implementation.name == "cpython" else sys.implementation.name
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{interpreter}{version}-{interpreter}{version}{getattr(sys, 'abiflags', '')}-{platform}"


def _setting(config_settings, key: str, variable: str, default=None):
    if config_settings and config_settings.get(key):
        return config_settings[key]
    return os.environ.get(variable, default)


def _build_extension(config_settings) -> Path:
    """Configures and builds gpumem_native; returns <build>/python/gpumem."""
    build = Path(_setting(config_settings, "build-dir", "GPUMEM_WHEEL_BUILD_DIR",
                          str(ROOT / "build-wheel" / _tag().split("-")[0])))
    configure = [
        "cmake", "-S", str(ROOT), "-B", str(build),
        "-DCMAKE_BUILD_TYPE=RelWithDebInfo",  # the build type the project is tested in
        "-DGPUMEM_BUILD_TESTS=OFF",
        "-DGPUMEM_BUILD_BENCH=OFF",
        "-DGPUMEM_BUILD_PYTHON=ON",
        f"-DPython_EXECUTABLE={sys.executable}",
    ]
    if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
        configure += ["-G", "Ninja"]
    configure += shlex.split(_setting(config_settings, "cmake-args", "GPUMEM_CMAKE_ARGS", ""))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    for command in (configure,
                    ["cmake", "--build", str(build), "--target", "gpumem_native", "-j", jobs]):
        print("gpumem_build:", " ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, check=True, stdout=sys.stderr)
    return build / "python" / NAME


def _stripped(path: Path) -> bytes:
    """The extension without its debug information, where binutils' strip is at hand."""
    strip = shutil.which("strip")
    if strip is None:
        return path.read_bytes()
    copy = path.with_name(path.name + ".stripped")
    subprocess.run([strip, "--strip-debug", "-o", str(copy), str(path)], check=True)
    data = copy.read_bytes()
    copy.unlink()
    return data


def _metadata() -> str:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {_version()}\n"
        "Summary: How much GPU memory code uses, and how high it peaks: a drop-in for "
        "fastai.utils.mem with exact peaks\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.8\n"
    )


def _wheel_info(tag: str) -> str:
    return (
        "Wheel-Version: 1.0\n"
        "Generator: gpumem_build\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )


def _dist_info() -> str:
    return f"{NAME}-{_version()}.dist-info"


def _write_dist_info(directory: Path) -> str:
    info = directory / _dist_info()
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    (info / "WHEEL").write_text(_wheel_info(_tag()))
    (info / "top_level.txt").write_text(f"{NAME}\n")
    return info.name


class _Wheel:
    """A wheel being written: every entry is hashed for RECORD."""

    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append(f"{name},sha256={digest},{len(data)}")

    def close(self, record_name: str) -> None:
        self.records.append(f"{record_name},,")
        self.zip.writestr(record_name, "\n".join(self.records) + "\n")
        self.zip.close()


def _package_files(directory: Path):
    for pattern in PACKAGE_FILES:
        yield from sorted(directory.glob(pattern))


def _finish_wheel(wheel_directory, add_contents) -> str:
    tag = _tag()
    filename = f"{NAME}-{_version()}-{tag}.whl"
    wheel = _Wheel(Path(wheel_directory) / filename)
    add_contents(wheel)
    info = _dist_info()
    wheel.add(f"{info}/METADATA", _metadata().encode())
    wheel.add(f"{info}/WHEEL", _wheel_info(tag).encode())
    wheel.add(f"{info}/top_level.txt", f"{NAME}\n".encode())
    wheel.close(f"{info}/RECORD")
    return filename


# ---- PEP 517 hooks ------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(Path(metadata_directory))


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    built = _build_extension(config_settings)
    sources = ROOT / "python" / NAME

    def contents(wheel: _Wheel) -> None:
        for path in _package_files(sources):
            wheel.add(f"{NAME}/{path.name}", path.read_bytes())
        extensions = sorted(built.glob("_native*.so")) + sorted(built.glob("_native*.pyd"))
        if not extensions:
            raise RuntimeError(f"the build produced no gpumem/_native extension in {built}")
        for path in extensions:
            wheel.add(f"{NAME}/{path.name}", _stripped(path))

    return _finish_wheel(wheel_directory, contents)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The extension is built as for a wheel; a .pth file puts the build's package folder (which
    CMake refreshes from python/gpumem at every build) on sys.path. Edits to python/gpumem take
    effect after ``cmake --build <build-dir> --target gpumem_native``."""
    built = _build_extension(config_settings)

    def contents(wheel: _Wheel) -> None:
        wheel.add(f"_{NAME}_editable.pth", f"{built.parent}\n".encode())

    return _finish_wheel(wheel_directory, contents)


SDIST_PATHS = ("CMakeLists.txt", "cmake", "include", "src", "sim", "tools", "examples",
               "python", "bench", "tests", "docs", "pyproject.toml", "README.md", "LICENSE")


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    filename = f"{base}.tar.gz"

    def keep(info: tarfile.TarInfo):
        parts = Path(info.name).parts
        if "__pycache__" in parts or any(p.startswith("build") for p in parts[1:2]):
            return None
        return info

    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as archive:
        for name in SDIST_PATHS:
            if (ROOT / name).exists():
                archive.add(ROOT / name, arcname=f"{base}/{name}", filter=keep)
        pkg_info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        pkg_info.size = len(data)
        archive.addfile(pkg_info, io.BytesIO(data))
    return filename
