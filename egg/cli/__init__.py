"""The ``egg`` command line: one module per subcommand, rendering in :mod:`egg.cli.render`."""
