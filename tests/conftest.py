import gc
import json
import os
import shutil
import tempfile
import time

# The suite checks lagnet's mathematics, not XLA's optimiser, and nine tenths of its time went to compiling
# programs that then run for milliseconds. So XLA compiles them with most optimisations off, the CPU backend's
# older loop emitters and one codegen module per program: the same IEEE arithmetic (no fast math), compiled in
# about half the time (tests/test_held_rollout.py: 52 s of CPU with XLA's defaults, 28 s so). Set here, before
# JAX's CPU backend starts, and inherited by the lagnet processes tests start. `LAGNET_TEST_XLA=default` runs
# the suite with XLA's defaults, as users' programs are compiled (the benchmarks always are).
FAST_COMPILE = os.environ.get("LAGNET_TEST_XLA", "fast") != "default"
FAST_COMPILE_FLAGS = "--xla_cpu_use_fusion_emitters=false --xla_cpu_parallel_codegen_split_count=1"
if FAST_COMPILE:
    os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "true"
    if FAST_COMPILE_FLAGS not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAGS}".strip()

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

if FAST_COMPILE:
    # JAX may have read its environment already (a plugin imported it); the flag itself is read per compile.
    jax.config.update("jax_disable_most_optimizations", True)

from lagnet.compilation_cache import use_compilation_cache  # noqa: E402

# Property-based tests draw the same examples on every run, so CI cannot turn red by chance; explore new ones
# with `make fuzz` (`pytest --hypothesis-profile=explore`): random, not derandomised, and ten times as many
# (tests scale their max_examples by the profile's: see `examples` in tests/test_bad_input*.py).
settings.register_profile("lagnet", derandomize=True, database=None)
settings.register_profile(
    "explore", derandomize=False, max_examples=1000, database=None, deadline=None, print_blob=True
)
settings.load_profile("lagnet")

# Compiled programs are kept in a private temporary folder for the session (JAX's persistent compilation cache,
# as `lagnet train` keeps them in ~/.cache): a test that builds a program an earlier test compiled (the same
# config trained again, resumed, killed and resumed, in this process or a `lagnet` child process, which
# inherits the variable) loads it instead of compiling it again. Every session starts from an empty folder,
# so each program is still compiled cold once per run, and nothing lands in ~/.cache. Each pytest-xdist
# worker makes its own, so that none waits on another's file lock. A LAGNET_COMPILATION_CACHE set before
# pytest starts is used as it is (`off` turns the cache off).
if "LAGNET_COMPILATION_CACHE" not in os.environ or os.environ.get(
    "LAGNET_TESTS_CACHE_OWNER", str(os.getpid())
) != str(os.getpid()):
    os.environ["LAGNET_COMPILATION_CACHE"] = tempfile.mkdtemp(prefix="lagnet-tests-xla-")
    os.environ["LAGNET_TESTS_CACHE_OWNER"] = str(os.getpid())
use_compilation_cache()
# Programs that compile in 0.1 s or more, not only lagnet's 0.5 s: with the settings above most compile faster
# than that, and a test that trains the same config again (resumed, killed and resumed) compiled them all again.
# (Keeping every program cost more in writes than it saved: tests/test_docs.py 41 → 49 s of CPU.)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)


def pytest_unconfigure(config):
    """Remove the session's compilation cache (in each pytest-xdist worker too, before it exits)."""
    if os.environ.get("LAGNET_TESTS_CACHE_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["LAGNET_COMPILATION_CACHE"], ignore_errors=True)


# Accuracy is asserted throughout the suite: run it in float64.
jax.config.update("jax_enable_x64", True)


def memory_mappings() -> int | None:
    """How many memory mappings this process holds (Linux), or None where /proc does not say."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return None


def mapping_budget() -> int:
    """A third of the kernel's per-process limit on mappings (vm.max_map_count, 65,530 by default)."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read()) // 3
    except (OSError, ValueError):
        return 65_530 // 3


MAPPING_BUDGET = mapping_budget()


def pytest_collection_modifyitems(config, items):
    """Test files longest first (tests/file_order.json, from `make test-profile`; files it does not list after
    them, in their order). pytest-xdist hands files to the workers in this order (`--no-loadscope-reorder`):
    by its default order, most tests first, a file of a few long tests (processes started, runs trained)
    came last and kept one worker busy while the other had finished."""
    path = os.path.join(os.path.dirname(__file__), "file_order.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        seconds = json.load(f)
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], 0))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Free the compiled programs when a module ends, if the process holds many memory mappings. Each XLA CPU
    executable holds a few; the whole suite's in one process grew towards Linux's default vm.max_map_count
    (65,530: 31,700 at 58 % of the suite, still rising), and XLA crashed compiling a program in the last test
    file. Clearing after every module kept it bounded but made each module compile again what the modules
    before it had compiled (eager operations, the same rollouts and losses): clearing only once a third of
    the limit is used keeps the bound and lets later modules reuse them until then. Where the count cannot
    be read, every module clears."""
    yield
    count = memory_mappings()
    if count is None or count > MAPPING_BUDGET:
        jax.clear_caches()
        gc.collect()


@pytest.fixture(autouse=True)
def _xla_defaults(request):
    """A test marked `xla_defaults` compiles with XLA's optimisations on, as users' programs are: its bits are
    compared with files or eager operations compiled so (optimisation changes rounding in the last place). The
    compiled programs are dropped before and after, so that none compiled the other way is reused."""
    if not FAST_COMPILE or request.node.get_closest_marker("xla_defaults") is None:
        yield
        return
    jax.clear_caches()
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.clear_caches()
        jax.config.update("jax_disable_most_optimizations", True)


@pytest.fixture
def key():
    return jax.random.key(0)


@pytest.fixture
def trusted_code():
    """Lets the test's configs and runs run the Python system sources they name (the user's opt-in,
    `lagnet.config.sources.trust_code`); requested only by tests that mean to run such code."""
    from lagnet.config.sources import trust_code

    with trust_code():
        yield


# `make test-profile` (tools/test_profile.py) sets LAGNET_TEST_PROFILE to a folder: every test's wall and CPU
# time (setup, call and teardown; CPU time, of all threads and of the child processes it ran, says what the
# test costs even on a busy machine) and the seconds JAX spent tracing, lowering and compiling in it are
# written there, one JSON line per test and one file per process (pytest-xdist workers included).
PROFILE_DIR = os.environ.get("LAGNET_TEST_PROFILE")
if PROFILE_DIR:
    from jax import monitoring

    COMPILE_EVENTS = {
        "/jax/core/compile/jaxpr_trace_duration": "trace_s",
        "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
        "/jax/core/compile/backend_compile_duration": "compile_s",
    }
    compile_seconds = dict.fromkeys(COMPILE_EVENTS.values(), 0.0)

    def record_compile(event, duration, **_):
        if event in COMPILE_EVENTS:
            compile_seconds[COMPILE_EVENTS[event]] += duration

    monitoring.register_event_duration_secs_listener(record_compile)

    def cpu_seconds() -> float:
        """User + system CPU time of this process's threads and of its child processes that have ended."""
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        compile_seconds.update(dict.fromkeys(compile_seconds, 0.0))
        start, cpu = time.perf_counter(), cpu_seconds()
        try:
            return (yield)
        finally:
            line = {
                "test": item.nodeid,
                "wall_s": time.perf_counter() - start,
                "cpu_s": cpu_seconds() - cpu,
                **compile_seconds,
            }
            path = os.path.join(PROFILE_DIR, f"{os.getpid()}.jsonl")
            with open(path, "a") as f:
                f.write(json.dumps(line) + "\n")
