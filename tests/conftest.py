import jax
import pytest

# Accuracy is asserted throughout the suite: run it in float64.
jax.config.update("jax_enable_x64", True)


@pytest.fixture
def key():
    return jax.random.key(0)
