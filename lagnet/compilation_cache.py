"""A persistent cache of compiled XLA programs, so that a rerun of the same config skips compilation."""

import os
import stat
import warnings

import jax


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lagnet", "xla")


def unsafe_cache_dir(path: str) -> str | None:
    """Why `path` may not hold compiled code that this process loads, or None if it may (made 0700 if new)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"{path} is owned by another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{path} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o}): anyone who can write "
            "it could make lagnet run their code; `chmod go-w` it, or set LAGNET_COMPILATION_CACHE"
        )
    return None


def use_compilation_cache(path: str | None = None) -> str | None:
    """Keep compiled programs in `path` (default: `LAGNET_COMPILATION_CACHE`, else $XDG_CACHE_HOME/lagnet/xla
    or ~/.cache/lagnet/xla); `LAGNET_COMPILATION_CACHE=off` turns it off. Returns the folder used, or None.

    `lagnet train` and `lagnet evaluate` call this: the default config's training step compiles in ~4 s cold
    and loads in ~1 s from the cache (benchmarks/compile_cache.py). Programs that compile in under 0.5 s are
    not stored; the folder is capped at 1 GiB, least recently used entries evicted first.

    The cache holds compiled code that JAX loads and runs: a folder that others could write to would let them
    run code as you. A folder not owned by you, or writable by group or others, is refused with a warning
    (training then compiles afresh); a new one is made private (0700).
    """
    path = path or os.environ.get("LAGNET_COMPILATION_CACHE") or default_cache_dir()
    if path == "off":
        return None
    problem = unsafe_cache_dir(path)
    if problem:
        warnings.warn(f"compilation cache not used: {problem}", stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_compilation_cache_max_size", 2**30)
    return path
