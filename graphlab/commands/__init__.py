"""One module per CLI sub-command: ``add_parser(subparsers)`` registers it with ``run``."""
