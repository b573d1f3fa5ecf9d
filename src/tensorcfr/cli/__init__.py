"""The ``tensorcfr`` command line (thin layer over the library)."""
