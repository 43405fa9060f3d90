import gc
import os

import jax
import pytest
from hypothesis import settings

# Property-based tests draw the same examples on every run, so CI cannot turn red by chance; explore new ones
# with `make fuzz` (`pytest --hypothesis-profile=explore`): random, not derandomised, and ten times as many
# (tests scale their max_examples by the profile's: see `examples` in tests/test_bad_input*.py).
settings.register_profile("lagnet", derandomize=True, database=None)
settings.register_profile(
    "explore", derandomize=False, max_examples=1000, database=None, deadline=None, print_blob=True
)
settings.load_profile("lagnet")

# The CLI, called in-process by tests, would otherwise store compiled programs in ~/.cache for the whole session.
os.environ.setdefault("LAGNET_COMPILATION_CACHE", "off")

# Accuracy is asserted throughout the suite: run it in float64.
jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Free every module's compiled programs when it ends. Each XLA CPU executable holds a few memory mappings;
    the whole suite's in one process grew towards Linux's default vm.max_map_count (65,530 mappings: 31,700 at
    58 % of the suite, still rising), and XLA crashed compiling a program in the last test file (stop 24)."""
    yield
    jax.clear_caches()
    gc.collect()


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
