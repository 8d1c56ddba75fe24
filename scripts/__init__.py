"""The ``fattree`` command line: one module per subcommand."""
