"""The model section of a config as a tagged union on `model.type`: each type's own keys, and errors for others."""

import dataclasses

import pytest
import yaml
from helpers import model_section

from lagnet.config import (
    MODEL_SECTIONS,
    ConfigError,
    KnownModelConfig,
    ModelConfig,
    PinodeModelConfig,
    PotentialModelConfig,
    PureOdeModelConfig,
    apply_override,
    describe,
    key_paths,
    model_types_reading,
    validate,
)
from lagnet.run import MODELS


def test_every_model_type_has_its_own_frozen_section():
    assert tuple(MODEL_SECTIONS) == tuple(MODELS)  # one section per buildable type
    for kind, cls in MODEL_SECTIONS.items():
        assert issubclass(cls, ModelConfig) and cls.__dataclass_params__.frozen
        section = validate({"model": {"type": kind}}).model
        assert type(section) is cls and section.type == kind
        with pytest.raises(dataclasses.FrozenInstanceError):
            section.type = "pinode"


def test_each_type_reads_only_its_keys():
    names = {
        kind: {f.name for f in dataclasses.fields(cls)} for kind, cls in MODEL_SECTIONS.items()
    }
    assert names["known"] == {"type", "friction", "input_limit"}
    assert model_types_reading("input_limit") == ("pinode", "pure_ode", "blackbox", "known")
    assert {"width", "gate", "zero_init", "identification", "start_from"} <= names["pinode"]
    assert "width" not in names["pure_ode"] and "learn_parameters" in names["pure_ode"]
    assert {"learn_mass", "dissipation"} <= names["potential"] and "friction" not in names[
        "potential"
    ]
    assert "friction" not in names["blackbox"] and "output_scale" in names["blackbox"]
    assert model_types_reading("width") == ("pinode", "blackbox", "potential")
    assert model_types_reading("no_such_key") == ()


@pytest.mark.parametrize(
    "model, message",
    [
        (
            {"type": "known", "width": 8},
            r"^model\.width: read only by model types pinode, blackbox, potential; this model is 'known'$",
        ),
        (
            {"type": "pinode", "learn_mass": True},
            r"^model\.learn_mass: read only by model types potential; this model is 'pinode'$",
        ),
        (
            {"learn_mass": True},  # the default type is pinode
            r"^model\.learn_mass: read only by model types potential; this model is 'pinode'$",
        ),
        (
            {"type": "blackbox", "friction": {"viscous": ["theta"]}},
            r"^model\.friction: read only by model types pinode, pure_ode, known; this model is 'blackbox'$",
        ),
        (
            {"type": "potential", "input_history": 2},
            r"^model\.input_history: read only by model types pinode, pure_ode, blackbox; "
            r"this model is 'potential'$",
        ),
        ({"type": "pure_ode", "widht": 8}, r"unknown key 'model\.widht'"),
        ({"type": "neural"}, r"model\.type must be one of \['pinode', 'pure_ode'"),
        ({"type": 3}, r"model\.type must be a string"),
    ],
)
def test_a_key_of_another_type_names_the_types_that_read_it(model, message):
    with pytest.raises(ConfigError, match=message):
        validate({"model": model})


def test_the_error_names_the_config_file():
    with pytest.raises(
        ConfigError, match=r"^cfg\.yaml: model\.gate: read only by model types pinode;"
    ):
        validate({"model": {"type": "pure_ode", "gate": "none"}}, source="cfg.yaml")


def test_sections_round_trip_through_config_yaml():
    for kind in MODEL_SECTIONS:
        config = validate({"model": model_section(kind)})
        saved = yaml.safe_load(yaml.safe_dump(config.to_dict()))
        assert set(saved["model"]) == {f.name for f in dataclasses.fields(MODEL_SECTIONS[kind])}
        assert validate(saved) == config


def test_code_reading_any_section_gets_what_a_type_without_the_key_amounts_to():
    known = validate({"model": {"type": "known"}}).model
    assert isinstance(known, KnownModelConfig)
    assert known.setting("input_history") == 0 and known.setting("start_from") is None
    assert known.setting("zero_init") is False
    assert known.setting("identification").method == "none"
    assert not KnownModelConfig.reads("input_history") and PureOdeModelConfig.reads("input_history")
    pinode = validate({"model": {"type": "pinode", "input_history": 2}}).model
    assert pinode.setting("zero_init") is True and pinode.setting("input_history") == 2
    # Read as an attribute, a key the type does not read is an error, never a quiet default.
    with pytest.raises(
        AttributeError, match=r"model.type known does not read model.identification: use"
    ):
        known.identification  # noqa: B018
    with pytest.raises(AttributeError, match=r"model.type blackbox does not read model.friction$"):
        validate({"model": {"type": "blackbox"}}).model.friction  # noqa: B018
    with pytest.raises(AttributeError):
        known.no_such_key  # noqa: B018
    with pytest.raises(
        KeyError
    ):  # no key whose absence has one meaning: the caller must know the type
        validate({"model": {"type": "blackbox"}}).model.setting("friction")


def test_a_section_cannot_carry_another_type():
    with pytest.raises(
        ConfigError, match=r"model\.type 'known' is not the type of PinodeModelConfig"
    ):
        PinodeModelConfig(type="known")
    with pytest.raises(ConfigError, match="is not the type of ModelConfig"):
        ModelConfig()


def test_replace_with_another_type_keeps_the_keys_it_reads():
    config = validate(
        {"model": {"width": 12, "friction": {"viscous": ["theta"]}, "input_history": 1}}
    )
    pure = config.replace(model={"type": "pure_ode"})
    assert isinstance(pure.model, PureOdeModelConfig)
    assert pure.model.friction.viscous == ["theta"] and pure.model.input_history == 1
    potential = config.replace(model={"type": "potential", "dissipation": True})
    assert isinstance(potential.model, PotentialModelConfig)
    assert potential.model.width == 12 and potential.model.dissipation
    with pytest.raises(ConfigError, match=r"model\.width: read only by"):
        config.replace(model={"type": "known", "width": 3})


def test_set_model_type_drops_the_keys_of_the_old_type():
    user = {
        "model": {"type": "pinode", "width": 8, "gate": "none", "friction": {"coulomb": ["theta"]}}
    }
    apply_override(user, "model.type=pure_ode")
    assert user["model"] == {"type": "pure_ode", "friction": {"coulomb": ["theta"]}}
    assert isinstance(validate(user).model, PureOdeModelConfig)
    typo = {"model": {"widht": 8}}
    apply_override(typo, "model.type=known")
    with pytest.raises(ConfigError, match=r"unknown key 'model\.widht'"):  # a typo is not dropped
        validate(typo)


def test_template_and_key_paths_cover_every_type():
    text = describe()
    assert validate(yaml.safe_load(text)) == validate({})
    for kind in MODEL_SECTIONS:
        assert f"# type {kind} reads: " in text
    paths = set(key_paths())
    for cls in MODEL_SECTIONS.values():
        for field in dataclasses.fields(cls):
            if field.name not in ("friction", "identification"):
                assert ("model", field.name) in paths
    assert ("model", "learn_mass") in paths and ("model", "friction", "shape") in paths


def test_a_run_saved_with_every_model_key_still_loads(tmp_path):
    """A run folder's config.yaml from before the sections were per type holds every model key: reading the run
    drops those of other types; the same file given as a config drops them too, with a warning that names
    them (a config whose model.type was changed is not refused one key at a time)."""
    from lagnet.config import load_config
    from lagnet.run.load import read_config

    saved = validate({"model": {"type": "pinode", "width": 8}}).to_dict()
    saved["model"].update(learn_mass=False, dissipation=False)  # keys of the potential type
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    config = read_config(str(tmp_path))
    assert type(config.model) is PinodeModelConfig and config.model.width == 8
    with pytest.warns(
        UserWarning,
        match=r"model.type is pinode, which does not read model.dissipation, model.learn_mass: ignored",
    ):
        assert load_config(tmp_path / "config.yaml").model.width == 8
    # A key no model type reads is still refused by name.
    saved["model"]["widht"] = 8
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    with pytest.raises(ConfigError, match="widht"):
        load_config(tmp_path / "config.yaml")
