"""What the API and the web pages share, below both: request dependencies (``deps``)."""
