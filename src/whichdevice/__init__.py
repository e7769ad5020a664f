"""whichdevice: measure when the GPU pays off against the CPU, and why it does not.

Data flows one way (see README "How it works"):

    measure (one child process per framework x device)
      -> immutable records on disk (records.py, raw samples kept)
      -> pure analysis functions (analysis/)
      -> presenters (present/: terminal, JSON, plots)
"""

__version__ = "0.1.0"
