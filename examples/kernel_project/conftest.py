# With rawdev installed (pip install 'rawdev[kernels]'), pytest loads rawdev's plugin by itself; this line is for
# running from a source checkout (PYTHONPATH=/path/to/rawdev). Naming it twice is harmless.
pytest_plugins = ["rawdev.pytest_plugin"]
