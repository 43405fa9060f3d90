"""What a trained run is, beyond its config: the step it was trained at and its precision, in `run.json`."""

import dataclasses
import json
import os

from .files import save_json

SPEC_FILE = "run.json"


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """The facts of a trained run that its config alone does not fix.

    - `dt`: the sample step of the training data in s (the median of the measured steps, or `integrator.dt`
      which is checked against them): the step `lagnet.load(run).step` takes. Its one source.
    - `dtype`: "float32" or "float64", the precision of the saved leaves.
    - `input_history`: k, the past inputs the model reads (its inputs have m (k + 1) entries).
    """

    dt: float
    dtype: str
    input_history: int
    lagnet_version: str

    def save(self, run_dir: str) -> None:
        save_json(os.path.join(run_dir, SPEC_FILE), dataclasses.asdict(self))

    @classmethod
    def read(cls, run_dir: str) -> "RunSpec":
        path = os.path.join(run_dir, SPEC_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
            return cls(**{f.name: raw[f.name] for f in dataclasses.fields(cls)})
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{run_dir}: no {SPEC_FILE} (not a run directory, or one whose training never started)"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a valid run spec ({type(e).__name__}: {e})") from None
