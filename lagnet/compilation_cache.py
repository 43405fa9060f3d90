"""A persistent cache of compiled XLA programs, so that a rerun of the same config skips compilation."""

import os

import jax


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lagnet", "xla")


def use_compilation_cache(path: str | None = None) -> str | None:
    """Keep compiled programs in `path` (default: `LAGNET_COMPILATION_CACHE`, else $XDG_CACHE_HOME/lagnet/xla
    or ~/.cache/lagnet/xla); `LAGNET_COMPILATION_CACHE=off` turns it off. Returns the folder used, or None.

    `lagnet train` and `lagnet evaluate` call this: the default config's training step compiles in ~4 s cold
    and loads in ~1 s from the cache (benchmarks/compile_cache.py). Programs that compile in under 0.5 s are
    not stored; the folder is capped at 1 GiB, least recently used entries evicted first.
    """
    path = path or os.environ.get("LAGNET_COMPILATION_CACHE") or default_cache_dir()
    if path == "off":
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_compilation_cache_max_size", 2**30)
    return path
