"""`rawdev mem`: the memory tool's command line (info, model, run, show) and its HTML report."""
