"""The wheel's layout; everything else about the distribution is in pyproject.toml.

The design card's folders (app, siltwatch, analytics, ingest, ...) are installed below one
private directory, ``_siltwatch/``, instead of at the top of site-packages, where their
generic names would collide with other distributions'. The boot module
(boot/_siltwatch/__init__.py, the ``siltwatch`` command) puts that directory first on
sys.path. docs/architecture.md, "Installed names", has the evidence.
"""

from setuptools import find_namespace_packages, setup

# The folders the wheel carries: the same list as .importlinter's root_packages.
FOLDERS = (
    "app",
    "siltwatch",
    "hardware",
    "edge",
    "ingest",
    "analytics",
    "alerts",
    "dashboards",
    "console",
)
PRIVATE = "_siltwatch"

found = find_namespace_packages(include=[f"{f}*" for f in FOLDERS] + list(FOLDERS))
setup(
    packages=[PRIVATE] + [f"{PRIVATE}.{p}" for p in found],
    package_dir={PRIVATE: f"boot/{PRIVATE}"} | {f"{PRIVATE}.{f}": f for f in FOLDERS},
)
