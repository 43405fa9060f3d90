"""The `lagnet` subcommands: each module registers its parsers with `register(subparsers)`."""
