# The committed PTX lives in the top-level ptx/ folder and ships inside the wheel as the package
# rawdev._ptx, found at run time with importlib.resources. pyproject.toml cannot map a package to a
# folder outside its parent while also discovering packages, hence these two lines.
from setuptools import find_packages, setup

setup(packages=find_packages(include=["rawdev", "rawdev.*"]) + ["rawdev._ptx"], package_dir={"rawdev._ptx": "ptx"})
