"""Import kubernetes_asyncio's kubeconfig loaders without its 1,500 generated models.

``import kubernetes_asyncio.config`` runs the package's ``__init__``, which
imports ``kubernetes_asyncio.client`` and with it every generated model and API
class: about 65 MiB of resident memory and two seconds of start-up, for an
agent that only needs the kubeconfig parsing (our requests go over aiohttp,
see :mod:`ocmkit.kube.client`). Importing this module installs it, and
``ocmkit/kube/__init__.py`` imports it first, so it is in place before any
module of ours imports kubernetes_asyncio (the CEL worker processes import
none of them and pay for neither).

:func:`install` registers both packages as empty shells with their real search
paths, so their submodules import normally while their ``__init__`` code waits
until someone asks for a name it defines; then it runs in full, once. Code that
uses the generated client (tests, other libraries) therefore still gets all of
it. Nothing happens when kubernetes_asyncio is already imported.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from types import ModuleType
from typing import Any

_TOP = "kubernetes_asyncio"
_CLIENT = "kubernetes_asyncio.client"
# The names kubeconfig loading takes from ``kubernetes_asyncio.client`` at import time.
_LIGHT_NAMES = {"Configuration": "kubernetes_asyncio.client.configuration"}


def _shell(name: str) -> tuple[ModuleType, Any]:
    """An empty module for package ``name`` that can still import its submodules."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"{name} is not installed")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    return module, spec


def _is_submodule(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module of its own (imported without the package's
    ``__init__``: ``from package import submodule`` asks the package first)."""
    if name.startswith("_") or f"{package}.{name}" in sys.modules:
        return f"{package}.{name}" in sys.modules
    return importlib.util.find_spec(f"{package}.{name}") is not None


def _full_loader(module: ModuleType, spec: Any) -> Any:
    """A function that runs the package's real ``__init__`` in ``module``, once."""
    done = False

    def load() -> None:
        nonlocal done
        if not done:
            done = True
            spec.loader.exec_module(module)

    return load


def install() -> None:
    """Install the shells unless kubernetes_asyncio is imported already."""
    if _TOP in sys.modules:
        return
    top, top_spec = _shell(_TOP)
    client, client_spec = _shell(_CLIENT)
    top.client = client  # type: ignore[attr-defined]
    # Set by the real ``__init__``; submodules import it (dynamic/discovery.py).
    top.__project__ = _TOP  # type: ignore[attr-defined]
    top.__version__ = importlib.metadata.version(_TOP)  # type: ignore[attr-defined]
    load_top = _full_loader(top, top_spec)
    load_client = _full_loader(client, client_spec)
    light = True  # the placeholder ApiClient serves only the loaders imported below

    def client_attr(name: str) -> Any:
        if name in _LIGHT_NAMES and name not in client.__dict__:
            return getattr(importlib.import_module(_LIGHT_NAMES[name]), name)
        if _is_submodule(_CLIENT, name):
            return importlib.import_module(f"{_CLIENT}.{name}")
        if name == "ApiClient" and light:
            # kube_config imports it for helpers the agent never calls.
            return _LazyApiClient(load_client, client)
        load_client()
        try:
            return client.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {_CLIENT!r} has no attribute {name!r}") from None

    def top_attr(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if _is_submodule(_TOP, name):
            return importlib.import_module(f"{_TOP}.{name}")
        load_top()
        try:
            return top.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {_TOP!r} has no attribute {name!r}") from None

    setattr(client, "__getattr__", client_attr)  # noqa: B010 (module-level __getattr__, PEP 562)
    setattr(top, "__getattr__", top_attr)  # noqa: B010
    importlib.import_module("kubernetes_asyncio.config.kube_config")
    importlib.import_module("kubernetes_asyncio.config.incluster_config")
    light = False


class _LazyApiClient:
    """Stands for ``kubernetes_asyncio.client.ApiClient`` until it is first built."""

    def __init__(self, load: Any, client: ModuleType) -> None:
        self._load = load
        self._client = client

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._load()
        return self._client.__dict__["ApiClient"](*args, **kwargs)


install()
