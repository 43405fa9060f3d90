"""Random configs, files and arrays: the only outcomes are success or lagnet's own errors, with clear messages."""

import os

import jax.numpy as jnp
import numpy as np
import pytest
from helpers import PENDULUM_MAPPING
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lagnet.config import Config, ConfigError, key_paths, validate
from lagnet.data import load_trajectories
from lagnet.integrators import RK4
from lagnet.rollout import rollout
from lagnet.systems import CartPole

LAGNET_ERRORS = (ConfigError, ValueError, TypeError, FileNotFoundError)


def examples(n: int) -> int:
    """`n` examples in the derandomised suite; ten times as many under `--hypothesis-profile=explore`
    (`make fuzz`), whose max_examples is 1000 instead of 100."""
    return n * settings.default.max_examples // 100


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


PATHS = list(key_paths())


@st.composite
def configs(draw):
    """Mostly-valid shapes: real key paths with random values, plus the odd unknown key."""
    user: dict = {}
    for _ in range(draw(st.integers(0, 6))):
        path = draw(st.sampled_from(PATHS))
        if draw(st.integers(0, 9)) == 0:
            path = (*path[:-1], draw(st.text(min_size=1, max_size=6)))
        node = user
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[path[-1]] = draw(values)
    return user


@pytest.mark.attack("config", "traceback")
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_random_configs_validate_or_raise_config_error(user):
    try:
        config = validate(user)
    except ConfigError as e:
        assert str(e)  # a message naming the key path
        return
    assert isinstance(config, Config)


@pytest.mark.attack("data file", "traceback")
@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=st.integers(0, 6),
    cols=st.lists(
        st.sampled_from(["t", "theta", "theta_dot", "torque", "x"]), min_size=0, max_size=5
    ),
    cells=st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3)),
        min_size=30,
        max_size=30,
    ),
)
def test_random_csv_files_load_or_raise_a_named_error(tmp_path_factory, rows, cols, cells):
    path = os.path.join(tmp_path_factory.mktemp("csv"), "f.csv")
    with open(path, "w") as f:
        f.write(",".join(cols) + "\n")
        for r in range(rows):
            f.write(",".join(str(cells[(r * 5 + c) % 30]) for c in range(len(cols))) + "\n")
    mapping = dict(PENDULUM_MAPPING)
    try:
        load_trajectories(path, mapping)
    except LAGNET_ERRORS as e:
        assert "f.csv" in str(e) or "mapping" in str(e), str(e)


@pytest.mark.attack("Python API", "traceback")
@settings(max_examples=examples(40), deadline=None)
@given(
    q_shape=st.lists(st.integers(0, 3), max_size=2),
    u_shape=st.lists(st.integers(0, 3), max_size=3),
    dt_shape=st.lists(st.integers(0, 3), max_size=2),
)
def test_rollout_shape_errors_are_lagnet_errors(q_shape, u_shape, dt_shape):
    try:
        qs, qds = rollout(
            CartPole(),
            RK4(),
            jnp.zeros(q_shape),
            jnp.zeros(q_shape),
            jnp.zeros(u_shape),
            jnp.full(dt_shape, 0.02),
        )
    except LAGNET_ERRORS as e:
        assert str(e).startswith("rollout:"), str(e)
        return
    assert qs.shape[1:] == (2,)


BAD_FILES = [
    (
        "t,theta,theta_dot\n0,0,0\n",
        r"column 'torque' .*not in the file|missing column 'torque'|torque",
    ),
    ("t,theta,theta_dot,torque\n0,0,0,0\n0.1,nan,0,0\n", r"row"),
    ("t,theta,theta_dot,torque\n0,0,0,0\n0,0.1,0,0\n", r"time must increase strictly"),
    ("t,theta,theta_dot,torque\n0,0,0,0\n0.1,0\r1,0,0\n", r"line 3: not valid CSV"),
]


@pytest.mark.attack("data file", "traceback")
@pytest.mark.parametrize("text, message", BAD_FILES)
def test_bad_files_name_file_column_and_row(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    mapping = dict(PENDULUM_MAPPING)
    with pytest.raises(ValueError, match=message) as info:
        load_trajectories(path, mapping)
    assert "bad.csv" in str(info.value)


@pytest.mark.attack("Python API", "silent")
def test_state_loss_wraps_angles():
    from lagnet.train.loss import StateLoss

    loss = StateLoss((False, True), jnp.ones(2), jnp.ones(2), jnp.ones(2), jnp.ones(2))
    a = loss(
        jnp.array([[0.0, 0.1]]),
        jnp.zeros((1, 2)),
        jnp.array([[0.0, 0.1 + 2 * np.pi]]),
        jnp.zeros((1, 2)),
    )
    assert a < 1e-12
