"""The achievable peak of this machine: float32 matmul FLOP/s in XLA, large and at the benchmark model's shape.

The large square matmul (n = 2048 by default) is the hardware bound the tables quote; the (batch × 64) @ (64 × 64)
matmul of the benchmark MLP shows what a matmul of that small inner size reaches on its own, in float32 and in
bfloat16 (whether mixed precision could pay on this CPU).

    .venv/bin/python benchmarks/peak.py [--n 2048] [--repeats 5] [--json out.json]
"""

import jax
import jax.numpy as jnp
import numpy as np
from _common import WIDTH, block, load, parser, time_interleaved, write


def main():
    p = parser(__doc__)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--batch", type=int, default=1024)
    args = p.parse_args()
    if args.quick:
        args.n, args.repeats = 1024, 3
    load_before = load()
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.normal(size=(args.n, args.n)), jnp.float32)
    b = jnp.asarray(rng.normal(size=(args.n, args.n)), jnp.float32)
    x = jnp.asarray(rng.normal(size=(args.batch, WIDTH)), jnp.float32)
    w = jnp.asarray(rng.normal(size=(WIDTH, WIDTH)), jnp.float32)
    reps = 100  # the small matmul repeated in one compiled loop, so dispatch does not dominate

    square = jax.jit(lambda a, b: a @ b)

    @jax.jit
    def small(x, w):
        return jax.lax.fori_loop(0, reps, lambda i, y: (y @ w) * 0.125, x)

    xb, wb = x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)
    calls = {
        "square": lambda: block(square(a, b)),
        "mlp-shaped": lambda: block(small(x, w)),
        "mlp-shaped bfloat16": lambda: block(small(xb, wb)),
    }
    for call in calls.values():
        call()
    median, times = time_interleaved(calls, args.repeats)
    mlp = reps * 2 * args.batch * WIDTH * WIDTH
    flops = {"square": 2 * args.n**3, "mlp-shaped": mlp, "mlp-shaped bfloat16": mlp}
    write(
        args.json,
        "peak",
        {
            "n": args.n,
            "load_before": load_before,
            "load_after": load(),
            "results": {
                k: {"seconds": median[k], "gflops": flops[k] / median[k] / 1e9} for k in calls
            },
            "peak_gflops": flops["square"] / median["square"] / 1e9,
            "times": times,
        },
    )


if __name__ == "__main__":
    main()
