"""The pytest path: a runner that grades a submission against the hidden checks with one sandboxed
worker per submission, the pytest plugin that grades a batch, and its Dask cluster."""
