"""memlab's command line (``memlab --help``). Each command lives in its own module of this package."""
