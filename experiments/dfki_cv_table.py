"""The DFKI double pendulum's leave-one-run-out table (docs/results/dfki.md) from `lagnet cv`'s record.

    lagnet cv configs/dfki_double_pendulum_known.yaml configs/dfki_double_pendulum_pinode.yaml \\
        configs/dfki_double_pendulum_pure_ode.yaml --horizon 0.5s \\
        --reference configs/dfki_double_pendulum_least_squares.yaml --out runs/cv_dfki
    cp runs/cv_dfki/cv.json experiments/out/dfki_cv.json
    python experiments/dfki_cv_table.py      # writes experiments/out/dfki_cv.md

`--record` tables another record holding these configs: experiments/dfki_cross_validation.py's, for one.

One row per fold (the held-out run), one column per model: the PINODE as shipped, its identified physics (the
network removed) and the pure ODE, each cell the ratios q1 / q2 / q̇1 / q̇2 of the mean |error| at the horizon to
the lab's model's on the same windows.
"""

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLUMNS = (  # (config name, prediction, column heading)
    ("dfki_double_pendulum_pinode", "model", "PINODE (shipped config)"),
    ("dfki_double_pendulum_pinode", "physics", "its identified physics"),
    ("dfki_double_pendulum_pure_ode", "physics", "pure ODE"),
)


def table(report: dict, command: str, record: str) -> str:
    configs = {c["name"]: c for c in report["configs"]}
    lines = [
        f"Measured {report['date']} on {report['machine']}: `{command}` (`{record}`). "
        f"Mean |error| at {report['horizon']} on the held-out run divided by the lab's model's (< 1: better than "
        "the lab's model), per fold (q1 / q2 / q̇1 / q̇2):",
        "",
        "| fold: held-out run | " + " | ".join(c[2] for c in COLUMNS) + " |",
        "| --- |" + " --- |" * len(COLUMNS),
    ]
    folds = configs[COLUMNS[0][0]]["folds"]
    for i, fold in enumerate(folds):
        run = os.path.basename(fold["held_out"]).split("_")[-1].split(".")[0]
        cells = []
        for name, pred, _ in COLUMNS:
            ratios = configs[name]["folds"][i]["ratios"][pred]
            cells.append(" / ".join(f"{r:.2f}" for r in ratios.values()))
        lines.append(f"| {fold['fold']}: run {run} | " + " | ".join(cells) + " |")
    summary = [configs[name]["summary"][pred] for name, pred, _ in COLUMNS]
    lines.append(
        "| mean over folds (worst) | "
        + " | ".join(f"{s['mean']:.3f} ({s['worst']:.2f})" for s in summary)
        + " |"
    )
    return "\n".join(lines) + "\n"


# Against the least-squares refit trained on each fold (`lagnet cv --reference`): (config, prediction, heading).
AGAINST_REFIT = (
    ("dfki_double_pendulum_pinode", "model", "PINODE (shipped config)"),
    ("dfki_double_pendulum_pure_ode", "physics", "pure ODE"),
    ("dfki_double_pendulum_known", "physics", "the lab's published model"),
)


def refit_table(report: dict) -> str:
    """Each fold's ratios to the least-squares refit of that fold (the lab's recipe on the same runs), with the
    mean per coordinate over folds and the worst; empty if the record has no reference."""
    configs = {c["name"]: c for c in report["configs"]}
    reference = next((c for c in report["configs"] if c.get("is_reference")), None)
    if reference is None:
        return ""
    columns = [c for c in AGAINST_REFIT if "vs_reference" in configs.get(c[0], {})]
    lines = [
        "",
        f"The same errors divided by those of the least-squares refit (`{reference['config']}`: the lab's "
        "equation-error recipe, refitted by lagnet on each fold's training and validation runs, so that it saw "
        "the same data as every other column; < 1: better than the refit), q1 / q2 / q̇1 / q̇2:",
        "",
        "| fold: held-out run | " + " | ".join(c[2] for c in columns) + " |",
        "| --- |" + " --- |" * len(columns),
    ]
    for fold in reference["folds"]:
        run = os.path.basename(fold["held_out"]).split("_")[-1].split(".")[0]
        cells = [
            " / ".join(
                f"{r:.2f}"
                for r in configs[name]["vs_reference"]["folds"][str(fold["fold"])][pred].values()
            )
            for name, pred, _ in columns
        ]
        lines.append(f"| {fold['fold']}: run {run} | " + " | ".join(cells) + " |")
    means = [configs[name]["vs_reference"]["summary"][pred] for name, pred, _ in columns]
    lines.append(
        "| mean over folds | "
        + " | ".join(" / ".join(f"{v:.2f}" for v in m["mean_per_variable"].values()) for m in means)
        + " |"
    )
    lines.append("| worst | " + " | ".join(f"{m['worst']:.2f}" for m in means) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", default=os.path.join(HERE, "out", "dfki_cv.json"))
    parser.add_argument("--out", default=os.path.join(HERE, "out", "dfki_cv.md"))
    args = parser.parse_args()
    with open(args.record) as f:
        report = json.load(f)
    command = report.get("command") or (
        "lagnet cv configs/dfki_double_pendulum_known.yaml configs/dfki_double_pendulum_pinode.yaml "
        f"configs/dfki_double_pendulum_pure_ode.yaml --horizon {report['horizon']}"
    )
    with open(args.out, "w") as f:
        record = os.path.relpath(os.path.abspath(args.record), ROOT)
        f.write(table(report, command, record) + refit_table(report))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
